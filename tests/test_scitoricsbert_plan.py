"""SciToricsBERT's parts and whole cost (issue 30, parts 2-3): the plan counts what the chapter runs, from the same
parameters, part by part, and its lines and totals are what a hand count of a small parameter set gives."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from sdr import plan
from sdr.book import paths
from sdr.methods import scitoricsbert as st

GPU, T4 = plan.MEASURED_DEVICE, "Tesla T4"  # the plan's reference GPU (its training throughput)
MEASURED = plan._hours_label(plan.MEASURED_DEVICE)
SMALL = dict(profile="smoke", use_real_data="auto", parts="all", losses=["softmax", "triplet"], leaderboard_seeds=2,
             check_loss="triplet", check_seeds=1, seed=0, epochs=2, max_length=32, max_batches_per_epoch=3,
             max_valid=100, max_test=200, max_pubmed_test=300, secondary_test_seeds=1, paper_baselines=False,
             label_counts=[10], label_losses=["softmax"], label_seeds=1, label_max_steps=3)


def _release_labels() -> pd.DataFrame:
    """The CFS3 release's label table, read here without the plan's own reader."""
    table = pd.read_csv(paths.PAPER_TABLES / "cfs3_counts.csv", comment="#", dtype={"label": str})
    table = table[(table["table"] == "Label Distribution") & (table["labelled_sentences"] > 0)]
    return table.set_index(table["label"].str.zfill(2))


def test_a_small_plan_by_hand():
    p = SimpleNamespace(**SMALL)
    cost = st.cost_plan(p)
    train = [w for w in cost.work if w.kind == "train"]
    # at smoke the check trains on the CFS3 replica: triplet seed 0 is the check's model (main); every second seed
    # is part "seeds"; CSAbstruct train's runs are the book's comparison; one label-subset run
    assert [(w.part, w.what, w.runs, w.examples, w.epochs, w.effective_batch) for w in train] == [
        ("main", "train softmax on CFS3", 1, 3 * 64, 2, 64),
        ("seeds", "train softmax on CFS3 (scored on CSAbstruct test only)", 1, 3 * 64, 2, 64),
        ("main", "train triplet on CFS3", 1, 3 * 64, 2, 64),
        ("seeds", "train triplet on CFS3", 1, 3 * 64, 2, 64),  # the check's other seed is scored on everything
        ("gold_labels", "train softmax on CSAbstruct train", 1, 3 * 64, 2, 64),
        ("gold_labels", "train softmax on CSAbstruct train (scored on CSAbstruct test only)", 1, 3 * 64, 2, 64),
        ("gold_labels", "train triplet on CSAbstruct train", 1, 3 * 64, 2, 64),
        ("gold_labels", "train triplet on CSAbstruct train (scored on CSAbstruct test only)", 1, 3 * 64, 2, 64),
        # 10 of 77 labels: 15 epochs by footnote 9 (2 × 77 / 10), cut to 1 batch, then to 3 epochs by the 3-step cap
        ("labels", "train 10 labels, seed 0: softmax", 1, 64, 3, 64),
    ]
    assert all(w.tokens_per_text == 32 and w.texts_per_example == 1 for w in train)  # min(max_length, 40)
    rate = plan.MEASURED_TOKENS_PER_S
    assert sum(w.gpu_hours(GPU) for w in train) == pytest.approx((8 * 192 * 2 + 64 * 3) * 32 / rate / 3600)
    assert [w.steps for w in train] == [6] * 8 + [3]

    # encodings: CF-labelled = 773 + 468 + 521 + 781 sentences (Table 2); tests capped at 200 and 300
    cf, everything = 2543, 200 + 300 + 2543
    encoded: dict[str, int] = {}
    for w in cost.work:
        if w.kind == "encode":
            encoded[w.part] = encoded.get(w.part, 0) + w.texts * w.runs
    assert encoded["main"] == 2 * everything + 2 * (100 * 2 + everything)  # untrained mean/[CLS], two scored models
    assert encoded["seeds"] == (100 * 2 + 200) + (100 * 2 + everything)
    assert encoded["gold_labels"] == 2 * (100 * 2 + everything) + 2 * (100 * 2 + 200)
    labels = _release_labels()
    subset = st.sample_label_subsets(sorted(labels.index), [10], seed=0)[10]  # the chapter's own draw
    n_valid = int(labels.loc[subset, "valid"].sum())
    assert encoded["labels"] == round(100 * n_valid / 20004) * 3 + cf  # validation capped like max_valid, 3 epochs
    assert not [w for w in cost.work if w.kind == "fetch" and w.part == "released"]  # no paper_baselines: nothing

    # exact k-NN: 2 n² d FLOPs at the stated rate
    def knn(*sizes):
        return sum(2 * n * n * 768 for n in sizes) / 50e12 / 3600

    sections = (773, 468, 521, 781)
    searched = {w.part: w.hours * w.runs for w in cost.work if w.kind == "knn" and w.part != "main"}
    assert searched["seeds"] == pytest.approx(2 * knn(100) + knn(200) + 2 * knn(100) + knn(200, 300, *sections))
    assert all(w.hours_on == "GPU" for w in cost.work if w.kind == "knn")

    totals = cost.totals((GPU, T4))
    assert totals.loc["whole chapter", MEASURED] == pytest.approx(cost.total_hours(GPU))
    reference_peak = plan.PEAK_TFLOPS[plan.peak_for(GPU)[0]]
    assert totals.loc["whole chapter", "GPU h T4 (scaled)"] == pytest.approx(cost.total_hours(GPU) * reference_peak / 65)
    assert cost.selected == tuple(st.PARTS)  # "all"


def test_each_part_follows_the_registry_and_the_chapters_rule():
    paper = plan.chapter_cost_plan("scitoricsbert", "paper")
    assert set(paper.parts) == set(st.PARTS) and {w.part for w in paper.work} == set(st.PARTS)
    assert paper.selected == ("released", "main", "seeds") == tuple(n for n, part in st.PARTS.items() if part.headline)
    p = SimpleNamespace(**{**SMALL, "profile": "paper", "use_real_data": True, "leaderboard_seeds": 5, "seed": 0,
                           "losses": list(st.LOSSES)})
    # every training run of the chapter lands where training_part puts it (the rule train_runs gates on)
    runs: dict[str, int] = {}
    for data_name in ("CFS3", "CSAbstruct train"):
        for loss in st.LOSSES:
            for seed in range(5):
                part = st.training_part(data_name, loss, seed, p, st.check_training_set("paper", True))
                runs[part] = runs.get(part, 0) + 1
    counted = {part: sum(w.runs for w in paper.work if w.kind == "train" and w.part == part)
               for part in ("main", "seeds", "gold_labels", "labels")}
    assert counted == {"main": runs["main"], "seeds": runs["seeds"], "gold_labels": runs["gold_labels"],
                       "labels": 3 * 5 * 5}  # 10/20/40 labels × 5 losses × 5 seeds
    assert runs == {"main": 5 + 1, "seeds": 20, "gold_labels": 24}  # the check: triplet on CSAbstruct train
    # the paper's settings: every CFS3 run takes 80,012 // 64 PK batches of 64 sentences, 5 epochs
    cfs3 = [w for w in paper.work if w.kind == "train" and w.what.endswith("on CFS3")]
    assert {(w.examples, w.epochs, w.steps) for w in cfs3} == {(1250 * 64, 5, 1250 * 5)}
    # the T4 line of every part is the plan's own T4 hours in words
    t4 = paper.totals((GPU, T4))["GPU h T4 (scaled)"]
    assert all(part.t4 == st.t4_words(t4[name]) for name, part in paper.parts.items())
    for name in ("labels", "main"):  # the words follow the hours: one 12-hour session or more
        assert ("fits one Colab session" in paper.parts[name].t4) == bool(t4[name] <= 12), (name, t4[name])
    selected = paper.totals((GPU, T4)).loc["selected parts"]
    assert selected[MEASURED] == pytest.approx(paper.total_hours(GPU, selected_only=True))


def test_parts_parameter_names_parts_by_commas_and_refuses_others():
    assert plan.resolve_parts("released,main", st.PARTS) == ("released", "main")
    assert plan.resolve_parts(" labels , released", st.PARTS) == ("released", "labels")  # registry order
    assert plan.resolve_parts("headline", st.PARTS) == ("released", "main", "seeds")
    with pytest.raises(ValueError, match=r"\['sweeps'\] are not parts"):
        plan.resolve_parts("main,sweeps", st.PARTS)
    headline = plan.chapter_cost_plan("scitoricsbert", "paper", {"parts": "released"})
    assert headline.selected == ("released",)
    assert headline.totals().loc["selected parts", MEASURED] == pytest.approx(
        headline.total_hours(GPU, selected_only=True))


def test_t4_words():
    assert st.t4_words(0.001) == "under a minute on a T4 (scaled estimate)"
    assert st.t4_words(0.25) == "≈ 15 T4 min (scaled estimate): fits one Colab session"
    assert st.t4_words(2.0) == "≈ 2.0 T4 h (scaled estimate): fits one Colab session"
    assert st.t4_words(25.2).startswith("≈ 25.2 T4 h (scaled estimate): about 3 Colab sessions")
    assert math.ceil(25.2 / st.parts.COLAB_SESSION_HOURS) == 3
