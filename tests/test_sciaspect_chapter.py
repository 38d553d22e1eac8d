"""Tests of the SciAspect chapter's registries and steps (:mod:`sdr.methods.sciaspect.registry`, ``.chapter``,
``.scoring``) that run without a model: every registered row is a row of the thesis' tables, bad parameters are
refused by name, and the checks the chapter relies on stop a broken run with their messages.

The chapter itself runs end to end in ``tests/test_chapters.py`` (``-k sciaspect``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sdr import book, datasets
from sdr.corpus import CitationGraph
from sdr.methods import sciaspect as sa

PAPER_ROWS = book.read_paper_table("thesis_scidocs_ablations")


def thesis_rows(table: str) -> set[str]:
    return set(PAPER_ROWS.loc[PAPER_ROWS["table"] == table, "model"])


def fake_run(profile: str = "smoke", **parameters) -> SimpleNamespace:
    run = SimpleNamespace(profile=profile, chapter="sciaspect", p=SimpleNamespace(**parameters), loss_checks={})
    run.record_loss_check = lambda name, before, after, margin: run.loss_checks.__setitem__(
        name, {"drop": before - after, "margin": margin})
    return run


#: The model and budget parameters the pairing rule reads, at smoke.
SMOKE_MODEL = dict(model_name="minilm", model_layers=2, pooling="mean", max_length=64, train_examples=16, epochs=1,
                   batch_size=8, accumulation_steps=1, learning_rate=2e-4, warmup_steps=0, recommendations=False)


def every_row_parameters() -> dict:
    """The values of every parameter of TRAINED_ROWS that the code knows: all rows a profile could train."""
    return {"specter_cl_variants": list(sa.SPECTERCL_VARIANTS), "temperatures": list(sa.TEMPERATURES),
            "sciaspect_variants": list(sa.SCIASPECT_VARIANTS), "alphas": list(sa.ALPHAS),
            "l2_configs": list(sa.L2_CONFIGS)}


def test_every_trainable_row_is_a_row_of_the_thesis_tables():
    rows = sa.trained_rows(fake_run(**every_row_parameters()))
    assert {table for table, _ in rows} | {"Table 6.5"} == set(sa.THESIS_TABLES) == set(PAPER_ROWS["table"])
    for table, label in rows:
        assert label in thesis_rows(table), (table, label)
    # τ = 0.05 is the 1p 5n row: one run trains both
    assert rows[("Table 6.3", "tau = 0.05")] == rows[("Table 6.3", "1 positive, 5 negatives")]
    assert len(set(rows.values())) == len(rows) - 1
    for name, key in sa.NAMED_MODELS.items():
        assert key in rows, name
    for table, (name, base_row, labels) in sa.PROJECTION_ROWS.items():
        assert name in sa.NAMED_MODELS and set(labels) == {*sa.FACET_TO_ASPECT.values(), "concat"}
        assert set(labels.values()) | ({base_row} if base_row else set()) <= thesis_rows(table), table
    for sweep in sa.SWEEPS.values():
        values = [sweep.value(label) for label in thesis_rows(sweep.table) if label.startswith(sweep.prefix)]
        assert sorted(values) == sorted(sa.TEMPERATURES if sweep.prefix == "tau" else sa.ALPHAS)


def test_every_profile_trains_rows_the_registry_knows():
    for profile in ("smoke", "real", "paper"):
        parameters = book.chapter_parameters("sciaspect", profile)
        defaults = {name: parameters.get(name, values) for name, values in every_row_parameters().items()}
        rows = sa.trained_rows(fake_run(profile, **defaults))
        assert sa.NAMED_MODELS["SPECTERCL"] in rows, profile  # the gain check reads it
        for name in parameters.get("csfcube_models", []):
            assert name == "untrained" or (name in sa.CSFCUBE_MODELS and sa.NAMED_MODELS[name] in rows), (profile, name)
        assert set(parameters.get("scirepeval_models", [])) <= set(sa.SCIREPEVAL_MODELS), profile


def test_an_unknown_row_is_refused_by_its_parameter():
    parameters = {**every_row_parameters(), "sciaspect_variants": ["7 positives"]}
    with pytest.raises(ValueError, match=r"sciaspect_variants: '7 positives' is not a row this chapter samples"):
        sa.trained_rows(fake_run(**parameters))


def training_of(graph: CitationGraph, anchors: list[str]) -> sa.TrainingData:
    thesis = sa.ThesisData(graph, {}, anchors, None, len(anchors), 0)
    return sa.TrainingData(thesis, thesis, pd.DataFrame(), {})


def test_check_rules_stop_a_broken_instance():
    graph = CitationGraph()
    graph.add("Q", "A", ["method"])
    graph.add("Q", "B", ["background"])
    graph.add("C", "Q", ["result"])
    training = training_of(graph, ["Q"])
    good = sa.AspectExample("method", "Q", ["A"], ["B", "r1"], n_hard=1)
    sa.check_rules(sa.Samples({("SciAspect", "v"): [good]}, {}), training, 0, 0)
    broken = sa.AspectExample("method", "Q", ["B"], ["r1"], n_hard=0)  # B is linked in background only
    with pytest.raises(book.ChapterCheckFailed, match=r"SciAspect / v: .*positive B not linked in method"):
        sa.check_rules(sa.Samples({("SciAspect", "v"): [good, broken]}, {}), training, 0, 0)
    from sdr.samplers import ContrastiveExample

    linked_negative = ContrastiveExample("Q", ["A"], ["C"])  # C cites Q: a direct link is never a negative
    with pytest.raises(book.ChapterCheckFailed, match=r"SPECTERCL / v: .*negatives \['C'\] are direct links"):
        sa.check_rules(sa.Samples({("SPECTERCL", "v"): [linked_negative]}, {}), training, 0, 0)
    with pytest.raises(book.ChapterCheckFailed, match="SciAspectL2 / v: no instances"):
        sa.check_rules(sa.Samples({("SciAspectL2", "v"): []}, {}), training, 0, 0)


def losses(before_after: dict) -> pd.DataFrame:
    return pd.DataFrame({key: {"instances": 16, "optimizer steps": 2, "loss before": before, "loss after": after}
                         for key, (before, after) in before_after.items()}).T


def test_the_probe_loss_check_has_teeth(monkeypatch):
    from sdr.book.profiles import chapter_parameters

    monkeypatch.delenv(datasets.DRY_RUN_ENV, raising=False)
    cl, aspect, hybrid, l2 = (sa.NAMED_MODELS[n] for n in ("SPECTERCL", "SciAspect", "SciAspectHybrid", "SciAspect(L2)"))
    smoke = fake_run(min_probe_loss_drop=0.005, check_every_probe_loss=False)
    # SPECTERCL's drop beyond the margin; the aspect models' drops go either way at smoke: shown, not checked
    learnt = SimpleNamespace(losses=losses({cl: (1.3, 1.1), aspect: (1.9, 2.0), hybrid: (1.5, 1.4), l2: (1.7, 1.8)}))
    assert sa.expect_lower_probe_loss(smoke, learnt) is True
    # every run's drop is kept for the results store, with the margin of the one checked (the others: None, shown)
    assert smoke.loss_checks["Table 6.3: 1 positive, 5 negatives"] == {"drop": pytest.approx(0.2), "margin": 0.005}
    assert smoke.loss_checks[": ".join(aspect)]["margin"] is None and len(smoke.loss_checks) == 4
    within_margin = SimpleNamespace(losses=losses({cl: (1.3, 1.297), aspect: (1.9, 1.8), hybrid: (1.5, 1.4),
                                                   l2: (1.7, 1.6)}))
    with pytest.raises(book.ChapterCheckFailed, match="did not lower the held-out loss of SPECTERCL .* by more than 0.005"):
        sa.expect_lower_probe_loss(smoke, within_margin)
    specter_cl_up = SimpleNamespace(losses=losses({cl: (1.3, 1.4), aspect: (1.9, 1.8), hybrid: (1.5, 1.4),
                                                   l2: (1.7, 1.6)}))
    with pytest.raises(book.ChapterCheckFailed, match="training did not lower the held-out loss of SPECTERCL"):
        sa.expect_lower_probe_loss(smoke, specter_cl_up)
    paper = fake_run("paper", min_probe_loss_drop=0.0, check_every_probe_loss=True)
    with pytest.raises(book.ChapterCheckFailed, match=r"training did not lower the held-out loss for \[\('Table 6.4'"):
        sa.expect_lower_probe_loss(paper, learnt)
    # real: measured to change sign over seeds, so shown and not checked (check_probe_loss false), drops still kept
    real = fake_run("real", min_probe_loss_drop=0.0, check_every_probe_loss=False, check_probe_loss=False)
    assert sa.expect_lower_probe_loss(real, specter_cl_up) is False
    assert real.loss_checks["Table 6.3: 1 positive, 5 negatives"]["drop"] == pytest.approx(-0.1)
    assert chapter_parameters("sciaspect", "real")["check_probe_loss"] is False
    assert chapter_parameters("sciaspect", "smoke").get("check_probe_loss", True) is True  # the default: checked
    assert chapter_parameters("sciaspect", "paper").get("check_probe_loss", True) is True
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")  # a random stand-in, a few steps: reported, not checked
    assert sa.expect_lower_probe_loss(smoke, specter_cl_up) is False


def scidocs_rows(keys) -> pd.DataFrame:
    columns = [*book.SCIDOCS_COLUMNS.values(), "avg"]
    rng = np.random.default_rng(0)
    ours = pd.DataFrame(rng.uniform(10, 90, (len(keys), len(columns))), index=pd.MultiIndex.from_tuples(
        keys, names=["table", "model"]), columns=columns)
    ours["avg10"] = sa.average_without_recomm(ours)
    return ours


def test_paper_vs_ours_shows_every_thesis_row_and_the_sweeps_read_ours():
    keys = [("untrained", "untrained encoder"), ("Table 6.3", "1 positive, 5 negatives"),
            ("Table 6.3", "tau = 0.05"), ("Table 6.3", "tau = 0.5"), ("Table 6.6", "alpha = 0.7 (base)")]
    ours = scidocs_rows(keys)
    comparisons = sa.paper_vs_ours_tables(fake_run(**SMOKE_MODEL), ours)
    assert list(comparisons.tables) == list(sa.THESIS_TABLES)
    label = "this book (smoke), not paired"  # MiniLM on replicas: the pairing rule keeps our rows apart
    assert not comparisons.pairing.paired
    for table, comparison in comparisons.tables.items():
        ours_part = comparison[comparison["reported by"] == label]
        assert set(comparison.loc[comparison["reported by"] != label, "model"]) == thesis_rows(table)
        assert "untrained encoder" in set(ours_part["model"])
    assert comparisons.view("Table 6.5", "Table 6.6").index.get_level_values(0).unique().tolist() == \
        ["Table 6.5", "Table 6.6"]
    curves = sa.sweeps(fake_run(), ours, comparisons)
    tau = curves[sa.SWEEPS["tau"].axis]
    ours_tau = tau[tau["reported by"] == "this book (smoke, avg10)"].set_index("value")["score"]
    assert ours_tau.to_dict() == pytest.approx({0.05: ours.loc[keys[2], "avg10"], 0.5: ours.loc[keys[3], "avg10"]})
    # a profile that trains no row of a swept table still gets the thesis' curve (and no row of ours)
    untrained_only = sa.sweeps(fake_run(), ours.loc[[keys[0]]], comparisons)[sa.SWEEPS["alpha"].axis]
    assert set(untrained_only["reported by"]) == {"thesis (SciDocs, printed avg of 12)"}


def test_the_scidocs_gain_check_applies_on_replicas_only(tmp_path: Path):
    keys = [("untrained", "untrained encoder"), sa.NAMED_MODELS["SPECTERCL"]]
    ours = scidocs_rows(keys)
    replica = datasets.DataInput("scidocs", "replica", tmp_path, "a replica [replica]")
    real = datasets.DataInput("scidocs", "real", tmp_path, "SciDocs")
    run = fake_run(check_scidocs_gain=True, min_scidocs_gain=0.5)
    gain = sa.scidocs_gain(run, SimpleNamespace(citations=replica, scidocs=replica), ours)
    proximity = ours[list(sa.SCIDOCS_PROXIMITY)].mean(axis=1)
    assert gain.gain == pytest.approx(proximity.iloc[1] - proximity.iloc[0]) and gain.applies
    assert gain.stored() == {"untrained_proximity": proximity.iloc[0], "specter_cl_proximity": proximity.iloc[1],
                             "gain": gain.gain, "margin": 0.5}
    on_real = sa.scidocs_gain(run, SimpleNamespace(citations=replica, scidocs=real), ours)
    assert not on_real.applies and "real data" in on_real.why_not
    unset = sa.scidocs_gain(fake_run(check_scidocs_gain=False, min_scidocs_gain=0.5),
                            SimpleNamespace(citations=replica, scidocs=replica), ours)
    assert not unset.applies and "check_scidocs_gain" in unset.why_not
    with pytest.raises(ValueError, match="specter_cl_variants must list"):
        sa.scidocs_gain(run, SimpleNamespace(citations=replica, scidocs=replica), ours.iloc[:1])
