"""SciToricsBERT's page against its paper (issue 37): one rule pairs a row of ours with a paper row (same data, model
and protocol, or shown apart with the reason), and the generated "what differs" list states every deviation."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from sdr.book.chapter import ChapterCheckFailed
from sdr.methods import scitoricsbert as st

ALL_PARTS = ("released", "main", "seeds", "labels", "gold_labels")
UNTRAINED_MEAN, UNTRAINED_CLS = "SciBERT avg. (untrained)", "SciBERT [CLS] (untrained)"


def _paper_run(**changes):
    """A run with the paper profile's parameters (the notebook's paper values), real data and every part."""
    p = SimpleNamespace(**{**st.PAPER_SETTINGS, "precision": "fp32", "seed": 0})
    for key in ("csabstruct test", "pubmed_rct test", "cf_sentences", "parts run"):
        delattr(p, key)
    parts = changes.pop("parts", ALL_PARTS)
    kinds = {key: changes.pop(key) for key in ("csabstruct", "pubmed", "cf", "origin") if key in changes}
    for key, value in changes.items():
        setattr(p, key, value)
    run = SimpleNamespace(p=p, parts=parts)

    def item(kind):
        return SimpleNamespace(kind=kind, real=kind == "real")

    sizes = {"introduction": 773, "methods": 468, "results": 521, "discussion": 781}
    inputs = SimpleNamespace(csabstruct_test=item(kinds.get("csabstruct", "real")),
                             pubmed_test=item(kinds.get("pubmed", "real")), cf_input=item(kinds.get("cf", "real")),
                             cfs3_set=SimpleNamespace(origin=kinds.get("origin", "release")),
                             cf_sections={section: [None] * n for section, n in sizes.items()})
    labelled = [SimpleNamespace(label=f"{i % 77:02d}") for i in range(800)]
    roles = [SimpleNamespace(label=role) for role in ("background", "objective", "method", "result", "other") * 20]
    test = p.max_test or 1349
    sets = SimpleNamespace(test_items=[None] * test, pubmed_items=[None] * (p.max_pubmed_test or 30135),
                           sets={"CFS3": (labelled, []), "CSAbstruct train": (roles, [])})
    return run, inputs, sets


def _table4(seeds: int = 5):
    rows = [UNTRAINED_MEAN, UNTRAINED_CLS, *(b.name for b in st.BASELINES), st.RELEASED.name,
            "SciToricsBERT (Softmax loss) · CFS3", "SciToricsBERT (Softmax loss) · CSAbstruct train"]
    ours = pd.DataFrame(0.5, index=rows, columns=["csabstruct_p@1", "csabstruct_map@r", "pubmedrct_p@1",
                                                  "pubmedrct_map@r"])
    ours.loc["SciToricsBERT (Softmax loss) · CFS3", "csabstruct_map@r"] = 0.23
    runs = pd.DataFrame([{"training set": data, "loss": "softmax", "seed": seed}
                         for data in ("CFS3", "CSAbstruct train") for seed in range(seeds)])
    baselines = SimpleNamespace(untrained_mean=UNTRAINED_MEAN, untrained_cls=UNTRAINED_CLS)
    return ours, baselines, SimpleNamespace(runs=runs)


def test_the_pairing_rule():
    mine = st.Setting("CSAbstruct test, 1,349 of 1,349 sentences", "m", "mean pooling, 128 tokens")
    assert st.pairing(mine, mine) == ""
    other = st.Setting(mine.data, "allenai/scibert_scivocab_uncased", "mean pooling, 512 tokens")
    assert st.pairing(mine, other) == ("model: ours m, the paper's allenai/scibert_scivocab_uncased; protocol: ours "
                                       "mean pooling, 128 tokens, the paper's mean pooling, 512 tokens")
    assert st.pairing(mine, None, "no row") == "no row" and st.pairing(mine, None) == "the paper has no such row"


def test_at_the_papers_setup_the_rows_pair_and_the_others_stand_apart_with_the_reason():
    run, inputs, sets = _paper_run()
    ours, baselines, trained = _table4()
    pairs = st.table4_pairs(run, inputs, sets, ours, baselines, trained)["CSAbstruct"]
    paired = pairs.index[pairs["pairs"]].tolist()
    assert paired == [UNTRAINED_MEAN, "BERT avg.", "RoBERTa avg.", "PubMedBERT avg.", "SRoBERTa",
                      "SciToricsBERT (Softmax loss) · CFS3"]
    softmax = pairs.loc["SciToricsBERT (Softmax loss) · CFS3"]
    assert softmax["paper row"] == "SciToricsBERT (Softmax loss)"
    assert softmax["csabstruct_map@r paper"] == 0.226 and softmax["csabstruct_map@r difference"] == pytest.approx(0.004)
    assert "pooler output" in pairs.loc["SimCSE-RoBERTa [CLS]", "why apart"]
    assert "one released checkpoint" in pairs.loc[st.RELEASED.name, "why apart"]
    assert "mean pooling only" in pairs.loc[UNTRAINED_CLS, "why apart"]
    assert "gold-label comparison" in pairs.loc["SciToricsBERT (Softmax loss) · CSAbstruct train", "why apart"]
    assert pairs.loc[~pairs["pairs"], "csabstruct_map@r paper"].isna().all()  # no number beside a row apart


@pytest.mark.parametrize("planted, reason", [
    ({"seeds": 4}, "mean of 4 seeds, the paper's"),  # a Table 4 row of four seeds
    ({"max_test": 300}, "data: ours CSAbstruct test, 300 of 1,349 sentences"),
    ({"csabstruct": "replica"}, "(a replica)"),
    ({"model_name": "minilm", "model_layers": 2}, "model: ours minilm (first 2 layers)"),
    ({"origin": "book build"}, "trained on CFS3 (book build)"),
])
def test_a_planted_non_matching_row_is_shown_apart(planted, reason):
    seeds = planted.pop("seeds", 5)
    run, inputs, sets = _paper_run(**planted)
    ours, baselines, trained = _table4(seeds)
    pairs = st.table4_pairs(run, inputs, sets, ours, baselines, trained)["CSAbstruct"]
    row = pairs.loc["SciToricsBERT (Softmax loss) · CFS3"]
    assert not row["pairs"] and reason in row["why apart"], row["why apart"]


def test_table3_pairs_read_the_cf_labelled_sections():
    run, inputs, sets = _paper_run()
    ours, baselines, trained = _table4()
    ours3 = ours.rename(columns={"csabstruct_p@1": "avg_p@1", "csabstruct_map@r": "avg_map@r"})
    pairs = st.table3_pairs(run, inputs, sets, ours3, baselines, trained)
    assert pairs.loc["BERT avg.", "paper row"] == "BERTbase avg." and pairs.loc["BERT avg.", "pairs"]
    run, inputs, sets = _paper_run(cf="replica")
    assert not st.table3_pairs(run, inputs, sets, ours3, baselines, trained)["pairs"].any()


def test_what_differs_lists_this_runs_deviations():
    paper = st.what_differs(*_paper_run())
    assert "**GloVe avg.**" in paper and "**SimCSE**" in paper and "**Validation**" in paper
    assert "PK batches with fewer labels than P = 64** (CSAbstruct train)" in paper  # CFS3 has 77 labels here
    for absent in ("**Model**", "**Seeds**", "**Training budget**", "**Replicas", "**Parts run**", "**Precision**"):
        assert absent not in paper
    smoke = st.what_differs(*_paper_run(model_name="minilm", model_layers=2, epochs=2, learning_rate=1e-4,
                                        max_batches_per_epoch=3, max_length=32, leaderboard_seeds=1,
                                        losses=["softmax", "triplet"], max_test=200, csabstruct="replica",
                                        pubmed="replica", cf="replica", origin="replica", paper_baselines=False,
                                        label_counts=[5, 10], label_seeds=1, label_max_steps=3, precision="auto"))
    assert "**Model**: minilm (first 2 layers)" in smoke and "**Training budget**: 2 epochs of at most 3" in smoke
    assert "**Replicas scored**: CSAbstruct test, PubMed-RCT test, the CF-labelled set" in smoke
    assert "**CFS3** is the replica" in smoke and "**Seeds**: 1 a model" in smoke and "**Precision** `auto`" in smoke
    headline = st.what_differs(*_paper_run(parts=("released", "main", "seeds")))
    assert "**Parts run**: main, released, seeds" in headline and "did not run (part `labels` not run)" in headline


def test_a_deviation_without_its_line_stops_the_chapter(monkeypatch):
    monkeypatch.setattr(st.fidelity, "DEVIATIONS", tuple(d for d in st.DEVIATIONS if d.key != "seeds"))
    st.fidelity.what_differs(*_paper_run())  # at the paper's settings nothing is missing
    with pytest.raises(ChapterCheckFailed, match=r"no line saying so: \['leaderboard_seeds'\]"):
        st.fidelity.what_differs(*_paper_run(leaderboard_seeds=3))
