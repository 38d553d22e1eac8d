"""Verdicts from intervals (issue 33, item 4): each chapter's sentence that ranks two systems is generated from a
paired interval; a planted within-noise difference reads "within noise", a planted clear gain "above". The findings
functions are called as the chapters call them, on small inputs of the shapes they read."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sdr import book
from sdr.methods import cosaemb, flew
from sdr.methods import sciaspect as sa
from sdr.stats import paired_bootstrap, verdict


# ------------------------------------------------------------------------------------------------- stats.verdict
def test_verdict_names_what_it_resamples_and_refuses_too_few_items():
    clear = paired_bootstrap({str(i): 3.0 + 0.1 * (i % 3) for i in range(12)}, {str(i): 0.0 for i in range(12)})
    default = verdict("A", "B", clear)
    assert default.startswith("A is above B") and "(training seeds and queries)" in default  # today's text kept
    said = verdict("A", "B", clear, resampled="the 12 tasks, one trained model")
    assert said.endswith("(the 12 tasks, one trained model).")
    # two positive tasks alone would "exclude 0": below min_items nothing is ranked
    few = paired_bootstrap({"x": 1.0, "y": 2.0}, {"x": 0.0, "y": 0.0})
    assert few["excludes_zero"] and "within noise" in verdict("A", "B", few, min_items=5)
    assert "only 2 items" in verdict("A", "B", few, min_items=5)


# ------------------------------------------------------------------------------------------------- FLeW
def _flew_inputs(differences: dict[str, list[float]], fields_gain: dict[str, list[float]]):
    """SciRepEval's Table 1 columns (tasks) for the tuned sum and each facet encoder, the sum minus the encoder
    planted per task; MDCR's field MAP per system, the system minus the untrained encoder planted per field."""
    columns = list(flew.TABLE1_COLUMNS)
    rng = np.random.default_rng(1)
    base = rng.uniform(40, 60, len(columns))
    rows = {flew.SUM_NAME: base}
    for facet, encoder in flew.FACET_ENCODERS.items():
        rows[encoder] = base - np.array(differences[facet])
    table = pd.DataFrame(rows, index=columns).T
    table["columns averaged"] = len(columns)
    table["avg over the columns present"] = table[columns].mean(axis=1)
    scirepeval = flew.SciRepEvalScores({}, {}, table)
    fields = [f"field {i}" for i in range(19)]
    untrained = rng.uniform(20, 40, len(fields))  # MAP × 100, as the evaluator gives it
    results = {"untrained encoder": untrained}
    results.update({name: untrained + np.array(gain) for name, gain in fields_gain.items()})
    results = {name: {"fields": {f: {"map": float(v)} for f, v in zip(fields, values)},
                      "avg": {"map": float(values.mean())}} for name, values in results.items()}
    mdcr_table = pd.DataFrame({name: {"MAP": r["avg"]["map"], "R@5": 0.0, "fields": len(fields)}
                               for name, r in results.items()}).T
    mdcr = flew.MDCRScores({flew.SUM_NAME: (0.4, 0.3, 0.3)}, {}, results, mdcr_table)
    return scirepeval, mdcr


def _flew_findings(scirepeval, mdcr) -> str:
    run = SimpleNamespace(p=SimpleNamespace(seed=0, csfcube_max_length=48))
    inputs = SimpleNamespace(csabstruct=SimpleNamespace(kind="replica"), csfcube=SimpleNamespace(kind="replica"))
    scores = flew.SplitterScores(pd.DataFrame(), pd.DataFrame(), 0.95, 0.9)
    return flew.findings(run, inputs, scores, pd.DataFrame(), mdcr, scirepeval, flew.CSFCubeRows())


def test_flew_table3_claim_comes_from_an_interval_over_tasks():
    tasks = len(flew.TABLE1_COLUMNS)
    noise = [(-1) ** i * (2.0 + 0.1 * i) for i in range(tasks)]  # signs alternate: mean near 0
    gain = [3.0 + 0.2 * (i % 4) for i in range(tasks)]
    loss = [-g for g in gain]
    within_field = [(-1) ** i * 2.0 for i in range(19)]
    clear_field = [5.0 + 0.2 * (i % 5) for i in range(19)]
    scirepeval, mdcr = _flew_inputs({"background": noise, "method": gain, "result": loss},
                                    {**{n: within_field for n in flew.FACET_ENCODERS.values()},
                                     flew.SUM_NAME: clear_field})
    text = _flew_findings(scirepeval, mdcr)
    claim = next(line for line in text.splitlines() if "Table 3's claim" in line)
    encoders = flew.FACET_ENCODERS
    assert "the tuned sum is not above every facet encoder: above 1, within noise 1, below 1 of 3." in claim
    assert f"The tuned sum ({flew.SUM_NAME}) and {encoders['background']} are within noise of each other" in claim
    assert f"The tuned sum ({flew.SUM_NAME}) is above {encoders['method']}" in claim
    assert f"The tuned sum ({flew.SUM_NAME}) is below {encoders['result']}" in claim
    assert f"paired bootstrap over the {tasks} SciRepEval tasks both rows have, one trained model each" in claim
    assert "beats" not in claim
    mdcr_line = next(line for line in text.splitlines() if "MDCR test MAP" in line)
    assert f"{flew.SUM_NAME} is above the untrained encoder" in mdcr_line
    assert f"{encoders['method']} and the untrained encoder are within noise of each other" in mdcr_line
    assert "paired bootstrap over the 19 MDCR fields" in mdcr_line
    # a clear gain over every facet encoder: the headline says so
    everywhere, _ = _flew_inputs({"background": gain, "method": gain, "result": gain},
                                 {n: within_field for n in (*encoders.values(), flew.SUM_NAME)})
    assert "the tuned sum is above every facet encoder." in _flew_findings(everywhere, mdcr)


def test_flew_claim_on_too_few_tasks_ranks_nothing():
    tasks = len(flew.TABLE1_COLUMNS)
    gain = [3.0 + 0.2 * (i % 4) for i in range(tasks)]
    scirepeval, _ = _flew_inputs(dict.fromkeys(flew.FACET_ENCODERS, gain), {})
    scirepeval.table.iloc[:, 3:tasks] = np.nan  # three tasks ran: every point difference positive, no ranking
    verdicts = flew.scirepeval_verdicts(scirepeval)
    assert all(side == "within noise" and "only 3 items" in sentence for side, sentence in verdicts.values())


# ------------------------------------------------------------------------------------------------- CoSaEmb
def _hits(rate: float, queries: int, rng) -> np.ndarray:
    return (rng.uniform(size=queries) < rate).astype(int)


def _flipped(hits: np.ndarray, lose: int, gain: int) -> np.ndarray:
    """Another system's hits: ``lose`` of the first system's hits missed, ``gain`` of its misses found."""
    other = hits.copy()
    other[np.flatnonzero(hits == 1)[:lose]] = 0
    other[np.flatnonzero(hits == 0)[:gain]] = 1
    return other


def _cosaemb_findings(per_query: dict[str, np.ndarray]) -> str:
    queries = [f"paper{i // 3}#{i % 3}" for i in range(len(next(iter(per_query.values()))))]
    kept = {name: {q: 100 * int(h) for q, h in zip(queries, hits)} for name, hits in per_query.items()}
    ours = pd.DataFrame({name: {"recall@1": float(np.mean(list(v.values()))), "recall@3": 100.0}
                         for name, v in kept.items()}).T
    paper = book.read_paper_table("cosaemb_paragraphs")
    paragraphs = cosaemb.Paragraphs(ours, paper, pd.DataFrame(), {}, "", [], per_query=kept)
    run = SimpleNamespace(p=SimpleNamespace(seed=0, margin_runs=[cosaemb.GRADED], csfcube_max_length=48),
                          profile="smoke")
    inputs = SimpleNamespace(full_text=SimpleNamespace(kind="replica"))
    full_text = pd.DataFrame({"of which by default": [1, 2], "distinct headings": [5, 6], "occurrences": [7, 8]},
                             index=["Method", "Background"])
    headings = SimpleNamespace(full_text=full_text, full_text_headings=list(range(15)))
    built = SimpleNamespace(report=SimpleNamespace(papers_with_triplets=12))
    counts = SimpleNamespace(table2=pd.DataFrame({"Frequency": [10, 4]}, index=["Method", "Result"]))
    order = SimpleNamespace(table=pd.DataFrame({"local": [50.0, 60.0], "held-out loss (1, 2, 3)": [2.0, 1.5]},
                                               index=["untrained", cosaemb.GRADED]))
    runs = SimpleNamespace(table=pd.DataFrame(), leaderboard_models=[], seeds=[0])
    return cosaemb.findings(run, inputs, headings, built, counts, runs, order, paragraphs,
                            SimpleNamespace(ours=pd.DataFrame()), SimpleNamespace(table=pd.DataFrame()),
                            SimpleNamespace(ours=pd.DataFrame()))


def test_cosaemb_ranking_sentences_come_from_a_bootstrap_over_queries():
    rng = np.random.default_rng(3)
    queries = 300
    graded = _hits(0.6, queries, rng)
    flat = _flipped(graded, lose=4, gain=2)  # a few queries flip both ways: under a point, within noise
    control = graded * _hits(0.5, queries, rng)  # loses half of the graded run's hits: a clear gain over it
    text = _cosaemb_findings({cosaemb.GRADED: graded, "flat (1, 1, 1)": flat, cosaemb.CONTROL: control,
                              "SPECTER": flat, "untrained": control})
    lines = {line.split("**")[1]: line for line in text.splitlines() if line.startswith("* **")}
    margin = lines["Margin gradation."]
    assert f"The {cosaemb.GRADED} run and the flat (1, 1, 1) run are within noise of each other" in margin
    assert f"paired bootstrap over the {queries} paragraph queries" in margin and " beat" not in margin
    data = lines["Full text or more data."]
    assert "The graded run is above the control" in data
    assert "This is in line with the paper's argument" in data
    assert "within noise" in lines["Released SPECTER."]


def test_cosaemb_says_in_line_with_the_paper_only_when_the_interval_supports_it():
    rng = np.random.default_rng(4)
    graded = _hits(0.6, 300, rng)
    control = _flipped(graded, lose=5, gain=1)  # the point difference favours the graded run; the interval includes 0
    text = _cosaemb_findings({cosaemb.GRADED: graded, cosaemb.CONTROL: control, "untrained": control})
    data = next(line for line in text.splitlines() if "Full text or more data." in line)
    assert "within noise" in data and "in line with" not in data
    assert "can neither support nor refute the paper's argument" in data


# ------------------------------------------------------------------------------------------------- SciAspect
FACETS = ("background", "method", "result")


def _csfcube_dir(tmp_path, queries: int = 20):
    splits = {facet: {"fold1_dev": [], "fold1_test": [f"q{i}_{facet}" for i in range(0, queries, 2)],
                      "fold2_test": [f"q{i}_{facet}" for i in range(1, queries, 2)]}
              for facet in (*FACETS, "all")}
    (tmp_path / "evaluation_splits.json").write_text(json.dumps(splits))
    return splits


def _csfcube_result(splits, per_facet: dict[str, np.ndarray]) -> dict:
    """The evaluator's output shape: per-query MAP (fractions) and each facet's test MAP (mean of fold means)."""
    per_query, test = {}, {}
    for facet, values in per_facet.items():
        ids = [*splits[facet]["fold1_test"], *splits[facet]["fold2_test"]]
        per_query.update({q: {"map": float(v)} for q, v in zip(ids, values)})
        half = len(splits[facet]["fold1_test"])
        test[facet] = {"map": float((values[:half].mean() + values[half:].mean()) / 2), "ndcg%20": 0.5}
    return {"test": test, "per_query": per_query}


def test_sciaspect_facet_heads_and_scidocs_rows_say_what_the_evidence_supports(tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    csfcube_dir = tmp_path / "csfcube"
    csfcube_dir.mkdir()
    splits = _csfcube_dir(csfcube_dir)
    rng = np.random.default_rng(5)
    untrained = {facet: rng.uniform(0.2, 0.6, 20) for facet in (*FACETS, "all")}
    noise = np.array([(-1) ** i * 0.05 for i in range(20)])
    # background: a clear gain; method: within noise; result: a clear loss
    heads = {"background": untrained["background"] + 0.15 + 0.01 * rng.uniform(size=20),
             "method": untrained["method"] + noise, "result": untrained["result"] - 0.15}
    untrained_result = _csfcube_result(splits, untrained)
    head_results = {aspect: _csfcube_result(splits, {facet: heads[facet]}) for facet, aspect in
                    sa.FACET_TO_ASPECT.items()}
    rows = [{"system": "untrained encoder", "facet": facet, "map": untrained_result["test"][facet]["map"],
             "ndcg%20": 0.5} for facet in (*FACETS, "all")]
    rows += [{"system": "SciAspect: head of the facet", "facet": facet,
              "map": head_results[aspect]["test"][facet]["map"], "ndcg%20": 0.5}
             for facet, aspect in sa.FACET_TO_ASPECT.items()]
    table = pd.DataFrame(rows).pivot(index="system", columns="facet", values=["map", "ndcg%20"]) * 100
    facets = sa.FacetScores(rows, table, {("SciAspect", 0): head_results}, untrained_result, 48)

    ours = pd.DataFrame({"table": ["untrained", "6.1", "6.1"], "model": ["untrained encoder", "SPECTERCL", "SciAspect"],
                         "avg10": [50.0, 50.4, 49.8]}).set_index(["table", "model"])
    mdcr = pd.DataFrame({"reported by": ["this book (smoke)"] * 2, "model": ["untrained encoder", "SciAspect"],
                         "map": [20.0, 21.0]})
    saved = {}
    run = SimpleNamespace(p=SimpleNamespace(seed=0, csfcube_max_length=48), profile="smoke", chapter="sciaspect",
                          data=SimpleNamespace(sources=["replica"], inputs={
                              "csfcube": SimpleNamespace(name="CSFCube", kind="replica")}))
    run.save = lambda tables, extra, sources: saved.setdefault(
        "path", book.save_results(run.chapter, run.profile, tables, sources, extra))
    inputs = SimpleNamespace(csfcube=SimpleNamespace(path=csfcube_dir, source="a replica", kind="replica"))
    sa.store(run, inputs, SimpleNamespace(overlap=pd.DataFrame({"papers": [0]})),
             SimpleNamespace(report=pd.DataFrame({"n": [1]})),
             SimpleNamespace(losses=pd.DataFrame({"loss before": [2.0], "loss after": [1.0]}), budget="2 steps",
                             seeds=[0]),
             ours, SimpleNamespace(tables={}), mdcr, pd.DataFrame({"x": [1.0]}, index=["Avg without SciDocs"]),
             facets, SimpleNamespace(table=pd.DataFrame()), SimpleNamespace(stored=lambda: {"gain": 0.3}), [])
    text = sa.findings(run, inputs).data
    csfcube_line = next(line for line in text.splitlines() if "SciAspect's facet heads" in line)
    assert "above on 1, below on 1, within noise on 1 of 3 facet columns" in csfcube_line
    assert "SciAspect: head of the facet on background is above the untrained encoder" in csfcube_line
    assert "SciAspect: head of the facet on method and the untrained encoder are within noise" in csfcube_line
    assert "SciAspect: head of the facet on result is below the untrained encoder" in csfcube_line
    assert "paired bootstrap over the facet's 20 test queries within their folds" in csfcube_line
    scidocs = next(line for line in text.splitlines() if "SciDocs avg10" in line)
    assert "1 of 2 trained rows score higher" in scidocs
    assert "single runs' point differences" in scidocs and "not a ranking" in scidocs and " above " not in scidocs


def test_the_stored_facet_queries_average_to_the_facet_table(tmp_path):
    splits = _csfcube_dir(tmp_path)
    values = {facet: np.linspace(0.1, 0.9, 20) ** (1 + i) for i, facet in enumerate((*FACETS, "all"))}
    result = _csfcube_result(splits, values)
    facets = sa.FacetScores([], pd.DataFrame(), {("SciAspect", 7): {a: result for a in sa.FACET_TO_ASPECT.values()}},
                            result, 48)
    kept = sa.facet_queries(SimpleNamespace(csfcube=SimpleNamespace(path=tmp_path)), facets, seed=7)
    assert set(kept["systems"]) == {"untrained encoder", "SciAspect: head of the facet"}
    for facet in FACETS:
        groups = kept["groups"][facet]
        mean = np.mean([np.mean([kept["systems"]["untrained encoder"][facet][q] for q in g]) for g in groups])
        assert mean == pytest.approx(100 * result["test"][facet]["map"])
