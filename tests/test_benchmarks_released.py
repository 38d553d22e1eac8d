"""The Benchmarks chapter's ``released`` part (issue 32): SciDocs' shipped SPECTER embeddings and every chapter's
released checks in one table, asserted before anything else runs; a planted mismatch fails the part, a rerun reads
the cached embeddings, and the shipped files are routed to their tasks as the SciDocs README says.

Here the part runs as in the paper dry run: a SciBERT stand-in, SciDocs and CSAbstruct replicas, the shipped
embeddings' fixture (:func:`sdr.methods.benchmarks.write_shipped_embeddings`) and the expected values a dry-run
mirror holds (:func:`sdr.dryrun.write_released_expected`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from sdr import datasets, dryrun, released
from sdr.book.chapter import ChapterCheckFailed
from sdr.methods import benchmarks

SCIBERT = "allenai/scibert_scivocab_uncased"
#: A planted asserted check (a SciDocs metric of the stand-in, ±0.3), beside the chapter's own unasserted rows.
ASSERTED = released.ReleasedCheck(SCIBERT, "scidocs", "scidocs", "SciBERT", {"cite_map": "cite_map"},
                                  pooling="mean", max_length=64)
OWN = [released.ReleasedCheck(c.model, c.benchmark, c.paper_table, c.paper_model, c.metrics, pooling=c.pooling,
                              max_length=64, tolerance=None, unasserted_because=c.unasserted_because)
       for c in benchmarks.RELEASED_CHECKS if c.benchmark == "csabstruct"]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory, synthetic_corpus):
    """A dry-run mirror of what the released part reads: SciDocs, its shipped embeddings, CSAbstruct, a SciBERT
    stand-in in ``models/``, and ``released_expected.json``."""
    from sdr.synthetic.models import folder_name, write_stand_in
    from sdr.synthetic.scidocs import write_scidocs
    from sdr.synthetic.sentences import write_csabstruct

    root = tmp_path_factory.mktemp("released-mirror")
    write_scidocs(synthetic_corpus, root / "scidocs", seed=0, n_queries=10, progress=False)
    write_csabstruct(synthetic_corpus, root / "csabstruct", seed=0)
    benchmarks.write_shipped_embeddings(root / "scidocs_specter_embeddings", SimpleNamespace(seed=7))
    texts = [f"{p.title} {p.abstract}" for p in synthetic_corpus.papers.values()]
    write_stand_in(root / dryrun.MODELS_FOLDER / folder_name(SCIBERT), SCIBERT, texts, layers=1, hidden=16)
    dryrun.write_released_expected(root, [ASSERTED, *OWN], {"scidocs": root / "scidocs",
                                                            "csabstruct": root / "csabstruct"})
    return root


class FakeRun:
    """What :func:`benchmarks.released_models` reads of a ``ChapterRun`` at ``paper`` in the dry run."""

    def __init__(self, root: Path, profile: str = "paper"):
        from sdr.synthetic.models import folder_name

        self.p = SimpleNamespace(device="cpu", batch_size=16, parts="all")
        self.branches = []
        self.data = SimpleNamespace(
            policy=SimpleNamespace(real_only=profile == "paper"), model_sources=[],
            input=lambda name: SimpleNamespace(path=root / name),
            model=lambda name: str(root / dryrun.MODELS_FOLDER / folder_name(name)))

    def runs_part(self, name):
        return True

    def branch(self, name):
        self.branches.append(name)

    def caption(self, *extra):
        return "Profile: paper [test]"


@pytest.fixture()
def setting(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_DATA", str(mirror))
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))  # the embeddings cache of this test
    monkeypatch.setattr(benchmarks.cost, "gathered_checks", lambda: {"planted": [ASSERTED], "benchmarks": OWN})
    return mirror


def test_the_part_scores_the_shipped_embeddings_and_every_check_in_one_table(setting, capsys):
    run = FakeRun(setting)
    scores = benchmarks.released_models(run)
    table = scores.table
    shipped = table[table["model"] == released.SHIPPED_CHECK_MODEL]
    assert len(shipped) == 13 and shipped["holds"].all()  # SciDocs' 12 metrics and their average
    assert (shipped["difference"].abs() < 1e-9).all()  # the fixture's expected values, exactly
    rows = table[table["model"] == SCIBERT]
    assert list(rows["chapter"]) == ["planted", "benchmarks", "benchmarks"]
    assert rows.iloc[0]["holds"] and abs(rows.iloc[0]["difference"]) < 1e-3  # a plain forward's value
    assert rows.iloc[1:]["holds"].isna().all() and (rows.iloc[1:]["why unasserted"] != "").all()
    assert set(rows["pooling"]) == {"mean"} and set(rows["input tokens"]) == {64}
    assert scores.asserted == 14 and run.branches == ["shipped SciDocs SPECTER embeddings scored",
                                                      "released checks gathered", "released checks asserted"]
    assert "14 rows asserted, 2 shown unasserted (each says why); 2 released checks from 2 chapter(s): planted, " \
           "benchmarks" in capsys.readouterr().out
    again = benchmarks.released_models(FakeRun(setting))
    assert again.table[again.table["model"] == SCIBERT]["cached"].all()  # read back, not re-embedded
    assert again.table["ours"].tolist() == table["ours"].tolist()


def _planted(mirror: Path, tmp_path: Path, key: str, shift: float) -> Path:
    planted = tmp_path / "planted"
    shutil.copytree(mirror, planted, symlinks=True)
    stored = json.loads((planted / released.EXPECTED_FILE).read_text())
    stored[key] += shift
    (planted / released.EXPECTED_FILE).write_text(json.dumps(stored))
    return planted


def test_a_planted_mismatch_in_the_shipped_row_fails_the_part(setting, tmp_path, monkeypatch):
    planted = _planted(setting, tmp_path, released.expected_key(released.ReleasedCheck(
        released.SHIPPED_CHECK_MODEL, "scidocs", "scidocs", "SPECTER", {"mag_f1": "mag_f1"}), "mag_f1"), 0.06)
    monkeypatch.setenv("SDR_DATA", str(planted))
    with pytest.raises(ChapterCheckFailed, match="shipped SPECTER embeddings do not score .*mag_f1"):
        benchmarks.released_models(FakeRun(planted))


def test_a_planted_mismatch_in_a_released_check_fails_the_part(setting, tmp_path, monkeypatch):
    planted = _planted(setting, tmp_path, released.expected_key(ASSERTED, "cite_map"), 0.5)
    monkeypatch.setenv("SDR_DATA", str(planted))
    with pytest.raises(ChapterCheckFailed, match="scidocs, cite_map: .*tolerance ±0.3"):
        benchmarks.released_models(FakeRun(planted))


def test_shipped_files_read_for_the_wrong_tasks_fail(setting, tmp_path, monkeypatch):
    """cls.jsonl holds MAG's and MeSH's papers, user-citation.jsonl the proximity tasks': read the other way round,
    the scores move off the expected values and the part stops."""
    planted = tmp_path / "swapped"
    shutil.copytree(setting, planted, symlinks=True)
    shipped = planted / "scidocs_specter_embeddings"
    (shipped / "cls.jsonl").rename(shipped / "tmp.jsonl")
    (shipped / "user-citation.jsonl").rename(shipped / "cls.jsonl")
    (shipped / "tmp.jsonl").rename(shipped / "user-citation.jsonl")
    monkeypatch.setenv("SDR_DATA", str(planted))
    with pytest.raises(ChapterCheckFailed, match="shipped SPECTER embeddings do not score"):
        benchmarks.released_models(FakeRun(planted))


def test_at_smoke_the_part_reads_nothing(capsys):
    assert benchmarks.released_models(FakeRun(Path("/nonexistent"), profile="smoke")) is None
    assert "scored at the paper profile" in capsys.readouterr().out


def test_every_registered_check_reads_data_the_part_fetches():
    """The released part's data sets (checked and fetched at paper before anything runs) hold every benchmark a
    chapter's released check scores; the dry run writes stand-ins and expected values for all of them."""
    from sdr.embed import DATASET_OF

    checks = released.checks_read_by(["benchmarks"])
    assert {c.model for c in benchmarks.RELEASED_CHECKS} <= {c.model for c in checks}
    assert {DATASET_OF[c.benchmark] for c in checks} <= set(benchmarks.RELEASED_DATA)
    assert {c.model for c in checks} <= set(dryrun.needed_models(["benchmarks"]))
    every = [c for found in released.registered_checks().values() for c in found]
    assert len(checks) == len(every)  # the Benchmarks chapter gathers every chapter's checks
