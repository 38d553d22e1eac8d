"""The Summary page's steps (``sdr.book.summary``) on a scratch results store: what each chapter stored, the
leaderboards and their checks, the intervals' sentences, and every stored table with its heatmap."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import pandas as pd
import pytest

from sdr import book
from sdr.book import ChapterCheckFailed, summary

matplotlib.use("Agg")


@pytest.fixture
def results_store(tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


def _run(profile: str = "real"):
    return SimpleNamespace(chapter="summary", profile=profile)


def _row(method, value, *, training="1 epoch", base_model="all-MiniLM-L6-v2", tokens=48, seed=None,
         per_query=None, reference=None):
    return book.leaderboard_row(method, "csabstruct", {"map@r": value, "p@1": value}, data="real",
                                base_model=base_model, training=training, input_tokens=tokens, seed=seed,
                                per_query=per_query, reference=reference)


def _paper_vs_ours() -> pd.DataFrame:
    return pd.DataFrame({"reported by": ["SciToricsBERT Table 4", "this book (real)"], "model": ["BERT avg.", "ours"],
                         "csabstruct_p@1": [0.553, 0.5]})


def _store_every_chapter(rows_of: dict, tables_of: dict | None = None, profile: str = "real") -> None:
    for name in book.chapter_names():
        if name != "summary":
            book.save_results(name, profile, (tables_of or {}).get(name, {}), [f"{name} data", "CSAbstruct"],
                              extra={"leaderboard": rows_of.get(name, [])})


def test_the_stored_table_names_every_chapter_and_what_it_stored(results_store):
    book.save_results("benchmarks", "real", {"t": _paper_vs_ours()}, ["CSAbstruct"],
                      extra={"leaderboard": [_row("BM25", 0.2, training="none")]})
    stored = summary.stored_chapters(_run())
    assert stored.expected == [name for name in book.chapter_names() if name != "summary"]
    assert stored.table.loc["benchmarks", ["stored", "tables", "leaderboard rows"]].tolist() == [True, 1, 1]
    assert stored.missing == stored.expected[1:]
    assert "results store: results/" in stored.show().to_html()
    with pytest.raises(ChapterCheckFailed, match=r"chapters without stored results at real: \['specter'"):
        summary.show_every_table(_run(), stored)


def test_every_paper_vs_ours_table_gets_its_heatmap(results_store):
    _store_every_chapter({}, {"benchmarks": {"sentences": _paper_vs_ours(), "plain": pd.DataFrame({"a": [1.0]})},
                              "scincl": {"table 1": _paper_vs_ours()}})
    counts = summary.show_every_table(_run(), summary.stored_chapters(_run()))
    assert counts == {"paper-vs-ours tables": 2, "heatmaps": 2}
    _store_every_chapter({}, {"benchmarks": {"plain": pd.DataFrame({"a": [1.0]})}}, profile="smoke")
    with pytest.raises(ChapterCheckFailed, match="0 heatmaps drawn for 0 paper-vs-ours tables"):
        summary.show_every_table(_run("smoke"), summary.stored_chapters(_run("smoke")))


def _seeded(method, values, reference, per_query_of):
    return [_row(method, value, seed=seed, per_query=per_query_of(value), reference=reference)
            for seed, value in enumerate(values)]


def test_leaderboards_and_what_their_intervals_say(results_store, monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda item: shown.append(getattr(item, "data", item)))
    queries = [str(i) for i in range(40)]
    untrained = _row("untrained · cls", 0.2, training="none", per_query={q: 0.2 for q in queries})
    better = _seeded("SciNCL", [0.3, 0.31, 0.29], "untrained · cls", lambda v: {q: v for q in queries})
    noisy = _seeded("SPECTER", [0.2, 0.21, 0.19], "untrained · cls",
                    lambda v: {q: (v + 0.15 if int(q) % 2 else v - 0.15) for q in queries})
    _store_every_chapter({"benchmarks": [untrained], "scincl": better, "specter": noisy})
    boards = summary.leaderboards(_run(), summary.stored_chapters(_run()))
    assert list(boards) == ["csabstruct"]  # no CSFCube rows stored
    board = boards["csabstruct"]
    assert board.headline["method"].tolist()[0] == "SciNCL" and board.lengths == [48]
    assert board.caption("real").startswith("CSAbstruct sentences (fractions") and "CSAbstruct" in board.sources
    lines = summary.interval_findings(boards)
    assert len(lines) == 1 and lines[0].startswith("**CSAbstruct sentences.** 2 trained rows compared with their "
                                                   "untrained encoder (one family: Holm's correction over these 2")
    assert "1 above it, 0 below it, 1 within noise." in lines[0]
    assert "- SciNCL is above untrained · cls: +0.10 [" in lines[0]  # generated from the interval
    assert "- SPECTER and untrained · cls are within noise of each other" in lines[0]  # a planted within-noise gain
    assert shown == lines
    summary.show_leaderboard(_run(), boards, "csfcube")
    assert shown[-2:] == ["### CSFCube test", "*No chapter has stored real-data CSFCube test rows at the `real` "
                                              "profile yet.*"]


@pytest.mark.parametrize("rows, profile, message", [
    ([_row("A", 0.3), _row("B", 0.3, base_model="SciBERT")], "smoke", "start from several base models"),
    ([_row("A", 0.3), _row("B", 0.3, tokens=64)], "smoke", "rows read different input lengths"),
    ([_row("A", 0.3, training="none"), _row("B", 0.3, tokens=None, training="none")], "real", "without their input length"),
    ([_row("A", 0.3, seed=0)], "real", "fewer than 3 seeds"),
])
def test_a_leaderboard_that_compares_unlike_rows_fails(results_store, rows, profile, message):
    _store_every_chapter({"scincl": rows}, profile=profile)
    with pytest.raises(ChapterCheckFailed, match=message):
        summary.leaderboards(_run(profile), summary.stored_chapters(_run(profile)))


def test_the_summary_run_loads_no_model(tmp_path):
    """At ``paper`` a chapter's run checks (or downloads) ``model_name`` before anything runs; the Summary loads no
    model, so its run must not ask for one."""
    namespace = {"profile": "smoke", "use_real_data": False, "model_name": "minilm", "model_layers": 2,
                 "device": "auto", "seed": 0}
    assert book.ChapterRun("summary", namespace).data.models == ("minilm",)
    run = book.ChapterRun("summary", namespace, loads_model=False)
    assert run.data.models == () and run.profile == "smoke" and run.caption() == "Profile: smoke · Data: none"


def _planted_seeds(shifts, queries=60, noise=0.02, seed=3):
    import numpy as np

    rng = np.random.default_rng(seed)
    keys = [str(i) for i in range(queries)]
    base = {k: float(rng.uniform(0.3, 0.6)) for k in keys}
    seeds = [{k: float(min(1.0, max(0.0, base[k] + shift + rng.normal(0, noise)))) for k in keys} for shift in shifts]
    return base, seeds


@pytest.mark.parametrize("shifts, excludes", [([0.03, -0.012, 0.0], False), ([0.03, 0.031, 0.029], True)])
def test_the_headline_interval_carries_the_seeds_noise(results_store, shifts, excludes):
    """Issue 33: seeds that disagree (one below the untrained encoder) give an interval that contains 0 — the
    query-only bootstrap of their average excluded it —, and seeds that agree on a gain still exclude 0."""
    from sdr.stats import grouped_mean

    base, seeds = _planted_seeds(shifts)
    untrained = _row("untrained · cls", grouped_mean(base), training="none", per_query=base)
    rows = [_row("SciNCL", grouped_mean(per_query), seed=number, per_query=per_query, reference="untrained · cls")
            for number, per_query in enumerate(seeds)]
    _store_every_chapter({"benchmarks": [untrained], "scincl": rows})
    line = book.headline_table("csabstruct", "real").set_index("method").loc["SciNCL"]
    assert bool(line["excludes_zero"]) is excludes and bool(line["low"] > 0) is excludes
    assert not line["conditional"] and float(line["p_holm"]) == pytest.approx(float(line["p_value"]))  # one comparison
    display = book.headline_display(book.headline_table("csabstruct", "real"), "csabstruct")
    assert "†" not in "".join(display["Δ vs its untrained encoder [95 % CI]"])


def test_trained_rows_are_also_compared_with_the_best_untrained_reading(results_store):
    """The reference is the untrained encoder read the same way ([CLS] for a [CLS] row); the table also compares
    with the stronger untrained pooling, so a [CLS] row above its [CLS] reference can be below the free mean."""
    queries = [str(i) for i in range(40)]
    cls = _row("untrained · cls", 0.10, training="none", per_query={q: 0.10 for q in queries})
    mean = _row("untrained · mean", 0.13, training="none", per_query={q: 0.13 for q in queries})
    trained = [_row("SciToricsBERT", 0.11 + 0.001 * s, seed=s, per_query={q: 0.11 + 0.001 * s for q in queries},
                    reference="untrained · cls") for s in range(3)]
    lone = [_row("SPECTER", 0.12, seed=0, per_query={q: 0.12 for q in queries}, reference="untrained · cls")]
    _store_every_chapter({"benchmarks": [cls, mean], "scitoricsbert": trained, "specter": lone})
    table = book.headline_table("csabstruct", "real").set_index("method")
    line = table.loc["SciToricsBERT"]
    assert line["difference"] > 0 and line["excludes_zero"]
    assert line["best_untrained"] == "untrained · mean" and line["best_high"] < 0  # below the free mean pooling
    assert table.loc["SPECTER", "conditional"]  # one trained seed: conditional on that model
    assert len(table["p_holm"].dropna()) == 2 and (table["p_holm"].dropna() >= table["p_value"].dropna()).all()
    display = book.headline_display(table.reset_index(), "csabstruct").set_index("system")
    assert display.loc["SPECTER", "Δ vs its untrained encoder [95 % CI]"].endswith("†")


def test_every_loss_check_is_stored_with_its_margin(tmp_path, monkeypatch):
    """The probe losses a check read (before, after, the margin it needed) go into the results store's "loss checks"
    table, the failing run included, so the seed spread behind a margin can be read from stored runs
    (benchmarks/measure_real_margins.py)."""
    import numpy as np

    from sdr.book.results import load_results

    monkeypatch.setenv("SDR_RESULTS", str(tmp_path))
    namespace = {"profile": "smoke", "use_real_data": False, "model_name": "minilm", "model_layers": 2,
                 "device": "auto", "seed": 0}
    run = book.ChapterRun("summary", namespace, loads_model=False)

    def fit(name, before, after):
        return SimpleNamespace(name=name, loss_before=before, loss_after=after,
                               losses=lambda: {"loss before": before, "loss after": after})

    run.expect_lower_loss([fit("A", 1.0, 0.9)], margin=0.05)
    with pytest.raises(ChapterCheckFailed, match="B: training did not lower the loss by more than 0.05"):
        run.expect_lower_loss([fit("B", 1.0, 0.98)], margin=0.05)
    run.record_loss_check("C", 0.5, 0.6, None)  # shown, not checked
    run.save({"t": pd.DataFrame({"x": [1]})})
    checks = load_results("summary", "smoke")[0]["tables"]["loss checks"]
    assert list(checks.index) == ["A", "B", "C"]
    assert checks.loc["A", "drop"] == pytest.approx(0.1) and checks.loc["B", "drop"] == pytest.approx(0.02)
    assert checks.loc["A", "margin"] == 0.05 and np.isnan(checks.loc["C", "margin"]) and checks.loc["C", "drop"] < 0
