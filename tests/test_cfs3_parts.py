"""The CFS3 chapter's registries (sdr.methods.cfs3): its parts and whole cost (issue 30) and the generated list of
what differs from the paper (issue 37), which fails the chapter when a deviation has no line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sdr import plan
from sdr.book.chapter import ChapterCheckFailed
from sdr.methods import cfs3 as method

SMALL = dict(profile="smoke", parts="all", n=5, n_sweep=[3, 4, 5, 6], max_sentences=3000, parser="")


def test_cost_plan_by_hand():
    cost = method.cost_plan(SimpleNamespace(**SMALL))
    lines = {(w.part, w.kind, w.what): w for w in cost.work}
    fetches = [w for w in cost.work if w.kind == "fetch"]
    # the registry's files of each data set a paper run reads: 6 Phrasebank pages, CSAbstruct's 3 splits, SciCite's
    # dev and test, CSFCube's 10 files, the S2ORC sample, the CFS3 release's 4 files
    assert [(w.part, w.what, w.requests) for w in fetches] == [
        ("main", "download academic_phrasebank", 6), ("main", "download csabstruct", 3),
        ("main", "download scicite", 2), ("main", "download csfcube", 10), ("main", "download s2orc_sample", 1),
        ("released", "download cfs3", 4)]
    tokenise = lines[("main", "cpu", "tokenise and lemmatise the pool (3,000 sentences)")]
    assert tokenise.other_hours() == pytest.approx(3000 / 5701 / 3600)  # max_sentences caps the pool
    match = lines[("main", "cpu", "match the pool with the 5-gram list")]
    assert match.other_hours() == pytest.approx(3000 / 87000 / 3600)
    sweep = lines[("sweeps", "cpu", "match it with the n-gram lists of n = 3, 4, 6")]
    assert sweep.runs == 3 and sweep.other_hours() == pytest.approx(3 * 3000 / 87000 / 3600)
    assert cost.total_hours(plan.MEASURED_DEVICE) == 0  # nothing on a GPU
    fetch_hours = sum(w.requests for w in fetches) / 1.0 / 3600
    assert cost.totals().loc["whole chapter", "CPU / network h"] == pytest.approx(
        fetch_hours + (3000 / 5701 + 4 * 3000 / 87000 + 100_016 / 87000) / 3600)
    parsed = method.cost_plan(SimpleNamespace(**{**SMALL, "parser": "en_core_web_sm", "max_sentences": 0}))
    assert [w.other_hours() for w in parsed.work if w.what.startswith("tokenise")] == [
        pytest.approx(45_977 / 1000 / 3600)]


def test_parts_follow_the_registry():
    paper = plan.chapter_cost_plan("cfs3", "paper")
    assert paper.selected == ("main", "released") == tuple(n for n, p in method.PARTS.items() if p.headline)
    assert {w.part for w in paper.work} == set(method.PARTS)
    none = method.cost_plan(SimpleNamespace(**{**SMALL, "n_sweep": [5]}))
    assert not [w for w in none.work if w.part == "sweeps"]  # n_sweep holds only n: nothing to sweep


def _state(**changes):
    """What what_differs reads of a run: the parameters, the inputs, phrases, pool and matching."""
    p = SimpleNamespace(n=5, ppdb_path="", multi_label="drop", phrasebank_dir="", max_sentences=0,
                        table_cells="combine", parser="")
    for key, value in changes.items():
        setattr(p, key, value)
    run = SimpleNamespace(p=p)
    inputs = SimpleNamespace(real_phrasebank=True)
    phrases = SimpleNamespace(augmented=1_400)
    pool = SimpleNamespace(synthetic=False, sentences=[None] * 45_670)
    matching = SimpleNamespace(stats=SimpleNamespace(root_check=False, labelled=660))
    return run, inputs, phrases, pool, matching


def test_what_differs_states_each_deviation_of_the_run():
    text = method.what_differs(*_state())
    assert "**No PPDB augmentation**: 1,400 phrases" in text and "**No root check**" in text
    assert "45,670 sentences of CSAbstruct train" in text and "(660 against 100,016)" in text
    assert "n-gram length" not in text and "capped" not in text
    planted = method.what_differs(*_state(n=4, max_sentences=3000, ppdb_path="ppdb.txt"))
    assert "**n-gram length 4**" in planted and "**The pool is capped** at 3,000" in planted
    assert "No PPDB" not in planted


def test_a_deviation_without_its_line_fails_the_chapter(monkeypatch):
    monkeypatch.setattr(method, "DEVIATIONS", tuple(d for d in method.DEVIATIONS if d.key != "root_check"))
    with pytest.raises(ChapterCheckFailed, match=r"no line saying so: \['root_check'\]"):
        method.what_differs(*_state())
    monkeypatch.setattr(method, "PAPER_SETTINGS", {**method.PAPER_SETTINGS, "parser": "en_core_web_sm"})
    with pytest.raises(ChapterCheckFailed, match=r"\['root_check', 'parser'\]"):
        method.what_differs(*_state())
