"""SciToricsBERT's released models first (issue 32): Table 4's checkpoints scored by inference before any training,
beside Table 4's rows; in the paper dry run beside the stand-ins' expected values, where a planted mismatch fails
the chapter's released part."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from sdr import datasets, dryrun, released
from sdr.book.chapter import ChapterCheckFailed
from sdr.methods import scitoricsbert as st
from sdr.synthetic.models import folder_name, write_stand_in


def test_the_registry_reads_table_4_as_the_authors_read_it():
    checks = st.RELEASED_CHECKS
    models = list(dict.fromkeys(c.model for c in checks))
    assert models == ["allenai/scibert_scivocab_uncased", *(b.model for b in st.BASELINES), st.RELEASED.model]
    assert {c.benchmark for c in checks} == {"csabstruct", "pubmed_rct"} and len(checks) == 2 * len(models)
    assert all(c.max_length == 128 and c.paper_table == "scitoricsbert_table4" for c in checks)
    asserted = [c for c in checks if c.tolerance is not None]
    assert {c.paper_model for c in asserted} == {"SciBERT avg.", "BERT avg.", "RoBERTa avg.", "PubMedBERT avg.",
                                                 "SRoBERTa"}
    assert {c.tolerance for c in asserted} == {0.003} and {c.pooling for c in asserted} == {"mean"}  # 0.3 points
    unasserted = {c.model: c.unasserted_because for c in checks if c.tolerance is None}
    assert "pooler output" in unasserted["princeton-nlp/sup-simcse-roberta-base"]
    assert "mean of five seeds" in unasserted["kaisugi/scitoricsbert"]
    values = released.expected_values(checks)  # every row is Table 4's
    assert values[("kaisugi/scitoricsbert", "csabstruct", "map@r")] == 0.226
    assert values[("roberta-base", "pubmed_rct", "p@1")] == 0.681
    assert released.registered_checks(["scitoricsbert"])["scitoricsbert"] == list(checks)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory, synthetic_corpus):
    """Stand-ins of every released model the checks read, replicas of CSAbstruct and PubMed-RCT test, and their
    expected values written as the dry run writes them (a plain transformers forward)."""
    from sdr.synthetic.sentences import write_csabstruct, write_pubmed_rct

    root = tmp_path_factory.mktemp("st-released")
    texts = [f"{p.title} {p.abstract}" for p in synthetic_corpus.papers.values()]
    for number, model in enumerate(dict.fromkeys(c.model for c in st.RELEASED_CHECKS)):
        write_stand_in(root / dryrun.MODELS_FOLDER / folder_name(model), model, texts, layers=1, hidden=16,
                       seed=number)
    data = {"csabstruct": write_csabstruct(synthetic_corpus, root / "csabstruct", seed=0),
            "pubmed_rct": write_pubmed_rct(synthetic_corpus, root / "pubmed_rct", seed=0)}
    data = {name: folder if folder.is_dir() else folder.parent for name, folder in data.items()}
    dryrun.write_released_expected(root, st.RELEASED_CHECKS, data)
    return root, data


def _run(root):
    branches = []
    data = SimpleNamespace(policy=SimpleNamespace(real_only=True), model_sources=[],
                           model=lambda name: root / dryrun.MODELS_FOLDER / folder_name(name))
    return SimpleNamespace(p=SimpleNamespace(device="cpu"), data=data, runs_part=lambda name: True,
                           caption=lambda *lines: "caption", branch=branches.append, branches=branches)


def _inputs(data):
    return SimpleNamespace(csabstruct_test=SimpleNamespace(path=data["csabstruct"]),
                           pubmed_test=SimpleNamespace(path=data["pubmed_rct"]))


def test_the_released_part_runs_first_and_a_planted_mismatch_fails_it(mirror, tmp_path, monkeypatch):
    root, data = mirror
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")
    monkeypatch.setenv("SDR_DATA", str(root))
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    run = _run(root)
    table = st.released_models(run, _inputs(data))
    assert len(table) == 2 * len(st.RELEASED_CHECKS)  # P@1 and MAP@R of every check
    asserted = table[table["holds"].notna()]
    assert len(asserted) == 20 and asserted["holds"].all() and (asserted["difference"].abs() < 1e-4).all()
    assert set(table.loc[table["holds"].isna(), "model"]) == {"princeton-nlp/sup-simcse-roberta-base",
                                                              "kaisugi/scitoricsbert"}
    assert run.branches == ["released checks asserted"] and not table["cached"].any()
    again = st.released_models(_run(root), _inputs(data))  # a rerun reads the embeddings back
    assert again["cached"].all() and again["ours"].tolist() == table["ours"].tolist()

    planted = tmp_path / "planted"
    planted.mkdir()
    expected = json.loads((root / released.EXPECTED_FILE).read_text())
    roberta = next(c for c in st.RELEASED_CHECKS if c.model == "roberta-base" and c.benchmark == "csabstruct")
    expected[released.expected_key(roberta, "map@r")] += 0.004  # beyond the 0.003 (0.3 points) tolerance
    (planted / released.EXPECTED_FILE).write_text(json.dumps(expected))
    monkeypatch.setenv("SDR_DATA", str(planted))
    run = _run(root)
    with pytest.raises(ChapterCheckFailed, match=r"roberta-base on csabstruct, map@r: .*tolerance ±0.003"):
        st.released_models(run, _inputs(data))
    assert run.branches == []


def test_below_paper_the_released_part_is_empty(capsys):
    run = SimpleNamespace(data=SimpleNamespace(policy=SimpleNamespace(real_only=False)), runs_part=lambda name: True)
    assert st.released_models(run, _inputs({"csabstruct": "unread", "pubmed_rct": "unread"})).empty
    assert "scored at the paper profile" in capsys.readouterr().out
