"""FLeW recipe (sdr.methods.flew): facet subgraph weights, the simplex grid, weight tuning on
validation data only (CSFCube dev folds, MDCR val), facet papers; the chapter's steps, registries and checks."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sdr import facets
from sdr.book import ChapterCheckFailed
from sdr.corpus import CitationGraph, Paper, read_s2_citations
from sdr.methods import flew


def test_facet_subgraph_weights_are_context_counts():
    graph = CitationGraph()
    graph.add("a", "b", ["background", "method"], {"background": 3, "method": 1})
    graph.add("a", "c", ["result"], {"result": 2})
    graph.add("a", "c", ["result"], {"result": 1})  # a second mention adds its contexts
    graph.add("b", "c", ["background"])  # no count given: one context
    assert sorted(flew.facet_edges(graph, "background")) == [("a", "b", 3.0), ("b", "c", 1.0)]
    assert flew.facet_edges(graph, "method") == [("a", "b", 1.0)]
    assert flew.facet_edges(graph, "result") == [("a", "c", 3.0)]
    table = flew.subgraph_table(graph)
    assert table.loc["background", "total weight (repeated edges)"] == 4
    assert table.loc["result", "edges with weight > 1"] == 1
    with pytest.raises(ValueError, match="unknown facet"):
        flew.facet_edges(graph, "objective")


def test_facet_subgraphs_of_the_synthetic_corpus_carry_its_counts(synthetic_corpus):
    graph = synthetic_corpus.graph
    for facet in flew.FACETS:
        edges = flew.facet_edges(graph, facet)
        assert edges, facet
        for citing, cited, weight in edges:
            assert weight == graph.edge(citing, cited).count(facet) >= 1


def test_simplex_grid():
    interior = flew.simplex_grid(0.1)
    assert len(interior) == 36  # W_x in {0.1..0.8}, sum 1: C(9, 2)
    assert all(abs(sum(w) - 1) < 1e-9 and min(w) > 0 for w in interior)
    assert len(set(interior)) == 36 and (0.8, 0.1, 0.1) in interior
    full = flew.simplex_grid(0.1, interior=False)
    assert len(full) == 66 and (1.0, 0.0, 0.0) in full
    assert flew.simplex_grid(0.5, interior=False) == [(0.0, 0.0, 1.0), (0.0, 0.5, 0.5), (0.0, 1.0, 0.0),
                                                       (0.5, 0.0, 0.5), (0.5, 0.5, 0.0), (1.0, 0.0, 0.0)]
    with pytest.raises(ValueError):
        flew.simplex_grid(0.3)
    np.testing.assert_allclose(flew.combine({"background": [1, 0], "method": [0, 1], "result": [2, 2]},
                                            (0.5, 0.25, 0.25)), [1.0, 0.75])


def test_tune_weights_picks_the_best_point_and_refuses_a_test_split():
    target = (0.2, 0.3, 0.5)
    weights, table = flew.tune_weights(lambda w: -sum((a - b) ** 2 for a, b in zip(w, target)), split="val")
    assert weights == target and len(table) == 36
    with pytest.raises(ValueError, match="validation data only"):
        flew.tune_weights(lambda w: 0.0, split="fold1_test")


def test_csfcube_tuning_reads_only_each_folds_dev_queries(tmp_path, monkeypatch):
    queries = {facet: [f"{i}_{facet}" for i in range(8)] for facet in flew.FACETS}
    splits = {facet: {"fold1_dev": q[:4], "fold2_dev": q[4:], "fold1_test": q[4:], "fold2_test": q[:4]}
              for facet, q in queries.items()}
    splits["all"] = {fold: [k for facet in flew.FACETS for k in splits[facet][fold]] for fold in splits["background"]}
    (tmp_path / "evaluation_splits.json").write_text(json.dumps(splits))
    read_during_tuning: list[set] = []

    class Recording(dict):
        def __getitem__(self, key):
            if read_during_tuning and tuning[0]:
                read_during_tuning[-1].add(key)
            return dict.__getitem__(self, key)

    rng = np.random.default_rng(0)

    def fake_per_query(data_dir, vectors, ids, facets_to_rank=flew.FACETS):
        return Recording({q: {m: float(rng.random()) for m in ("rp", "p@20", "r@20", "ndcg", "ndcg@20",
                                                                "ndcg%20", "map", "mrr")}
                          for facet in flew.FACETS for q in queries[facet]})

    tuning = [False]
    real_tune = flew.tune_weights

    def spying_tune(score, split, grid=None):
        tuning[0] = True
        read_during_tuning.append(set())
        try:
            return real_tune(score, split, grid)
        finally:
            tuning[0] = False

    monkeypatch.setattr(flew.recipe, "csfcube_per_query", fake_per_query)
    monkeypatch.setattr(flew.recipe, "tune_weights", spying_tune)
    vectors = {facet: np.zeros((2, 2)) for facet in flew.FACETS}
    scores, chosen = flew.csfcube_crossval(tmp_path, vectors, ["x", "y"])
    assert len(read_during_tuning) == 6  # 3 facets × 2 folds
    for (_, row), read in zip(chosen.iterrows(), read_during_tuning):
        dev = set(splits[row["facet"]][f"{row['fold']}_dev"])
        assert read and read <= dev, (row["facet"], row["fold"], read - dev)
    assert list(scores.index) == [*flew.FACETS, "all"]


def test_csfcube_tuned_all_row_pools_the_test_queries_of_every_facet(tmp_path, monkeypatch):
    # 2 queries per facet and fold; "all" folds hold the same keys as the facet folds, as in the release
    queries = {facet: [f"{i}_{facet}" for i in range(4)] for facet in flew.FACETS}
    splits = {facet: {"fold1_dev": q[:2], "fold2_dev": q[2:], "fold1_test": q[2:], "fold2_test": q[:2]}
              for facet, q in queries.items()}
    splits["all"] = {fold: [k for facet in flew.FACETS for k in splits[facet][fold]] for fold in splits["background"]}
    (tmp_path / "evaluation_splits.json").write_text(json.dumps(splits))
    value = {key: (n + 1) / 100 for n, key in enumerate(k for facet in flew.FACETS for k in queries[facet])}
    metrics = ("rp", "p@20", "r@20", "ndcg", "ndcg@20", "ndcg%20", "map", "mrr")
    monkeypatch.setattr(flew.recipe, "csfcube_per_query",
                        lambda data_dir, vectors, ids, facets_to_rank=flew.FACETS:
                        {k: dict.fromkeys(metrics, v) for k, v in value.items()})
    vectors = {facet: np.zeros((2, 2)) for facet in flew.FACETS}
    scores, _ = flew.csfcube_crossval(tmp_path, vectors, ["x", "y"], step=1 / 3)  # one interior grid point
    fold_means = [np.mean([value[k] for k in splits["all"][fold]]) for fold in ("fold1_test", "fold2_test")]
    assert scores.loc["all", "map"] == pytest.approx(np.mean(fold_means))
    assert scores.loc["method", "map"] == pytest.approx(np.mean([value[k] for k in queries["method"]]))
    # the per-query scores the leaderboard stores: every test query of the "all" folds, averaging to the "all" row
    again, _, per_query = flew.csfcube_crossval(tmp_path, vectors, ["x", "y"], step=1 / 3, return_per_query=True)
    assert again.equals(scores)
    assert set(per_query) == {k for fold in ("fold1_test", "fold2_test") for k in splits["all"][fold]}
    assert all(per_query[k]["map"] == value[k] for k in per_query)
    assert np.mean([np.mean([per_query[k]["map"] for k in splits["all"][fold]]) for fold in ("fold1_test", "fold2_test")]) \
        == pytest.approx(scores.loc["all", "map"])


def test_csfcube_per_query_of_the_tuned_sum_follow_each_querys_own_weights(tmp_path, monkeypatch):
    """Each test query is scored with the weights its own facet and fold chose on dev: a per-query table read under
    one fixed weight would not average to the tuned "all" row."""
    queries = {facet: [f"{i}_{facet}" for i in range(4)] for facet in flew.FACETS}
    splits = {facet: {"fold1_dev": q[:2], "fold2_dev": q[2:], "fold1_test": q[2:], "fold2_test": q[:2]}
              for facet, q in queries.items()}
    splits["all"] = {fold: [k for facet in flew.FACETS for k in splits[facet][fold]] for fold in splits["background"]}
    (tmp_path / "evaluation_splits.json").write_text(json.dumps(splits))
    metrics = ("rp", "p@20", "r@20", "ndcg", "ndcg@20", "ndcg%20", "map", "mrr")

    def per_query(data_dir, vectors, ids, facets_to_rank=flew.FACETS):
        # a query of facet f scores its facet's weight: the dev search picks the grid point heaviest on f
        weights = {f: float(vectors[0, i]) for i, f in enumerate(flew.FACETS)}
        return {k: dict.fromkeys(metrics, weights[k.rsplit("_", 1)[1]]) for f in flew.FACETS for k in queries[f]}

    monkeypatch.setattr(flew.recipe, "csfcube_per_query", per_query)
    # combine() of these vectors puts the weights themselves in row 0: W_bg, W_mt, W_rs
    vectors = {f: np.eye(3)[[i]] for i, f in enumerate(flew.FACETS)}
    scores, chosen, tested = flew.csfcube_crossval(tmp_path, vectors, ["x"], step=0.25, return_per_query=True)
    assert set(chosen.groupby("facet")[list(flew.FACETS)].max().max(axis=1)) == {0.5}  # each facet's heaviest point
    assert all(tested[k]["map"] == 0.5 for k in tested)
    assert scores.loc["all", "map"] == pytest.approx(0.5)


def test_csfcube_systems_score_encoders_and_the_tuned_sum_in_one_layout(synthetic_corpus, tmp_path):
    """The leaderboard reads every FLeW system the same way: the encoders' results are csfcube.evaluate's, the sum's
    are csfcube_crossval's, and each one's per-query MAP averages (per fold, then over folds) to its headline."""
    from sdr import book
    from sdr.evaluate import csfcube
    from sdr.synthetic.csfcube import write_csfcube

    folder = write_csfcube(synthetic_corpus, tmp_path / "csfcube", n_queries=6, pool_size=24, seed=0)
    ids = sorted(csfcube.read_csfcube_papers(folder))
    rng = np.random.default_rng(0)
    names = {"background": "bg", "method": "mt", "result": "rs"}
    vectors = {name: dict(zip(ids, rng.normal(size=(len(ids), 8)))) for name in names.values()}
    results, chosen = flew.csfcube_systems(folder, vectors, names, sum_name="sum", step=0.25)
    assert list(results) == ["bg", "mt", "rs", "sum"] and len(chosen) == 6
    for name in names.values():
        assert results[name]["test"] == csfcube.evaluate(folder, embeddings=vectors[name])["test"]
    tuned, _ = flew.csfcube_crossval(folder, {f: np.stack([vectors[names[f]][i] for i in ids]) for f in flew.FACETS},
                                     ids, step=0.25)
    assert results["sum"]["test"]["all"]["map"] == pytest.approx(tuned.loc["all", "map"])
    for name, result in results.items():
        metrics = book.csfcube_metrics(result)
        per_query, groups = book.csfcube_per_query(result, folder)
        row = book.leaderboard_row(name, "csfcube", metrics, data="replica", base_model="m", training="t",
                                   per_query=per_query, query_groups=groups)  # checks the grouped mean
        assert row["metrics"]["map_all"] == pytest.approx(100 * result["test"]["all"]["map"])
    with pytest.raises(ValueError, match="every facet"):
        flew.csfcube_systems(folder, vectors, {"background": "bg"})

def test_seed_spread_hand_computed():
    from sdr import book

    def row(method, seed, per_query):
        return book.leaderboard_row(method, "csfcube", {"map_all": float(np.mean(list(per_query.values())))},
                                    data="replica", base_model="m", training="t", seed=seed, per_query=per_query)

    rows = [row("a", 0, {"q1": 10.0, "q2": 30.0}), row("a", 1, {"q1": 20.0, "q2": 40.0}), row("b", 0, {"q1": 5.0, "q2": 5.0})]
    table = flew.seed_spread(rows, {"q1": 10.0, "q2": 20.0})
    assert list(table.index) == ["a", "b"]
    assert table.loc["a", "seed 0"] == 20.0 and table.loc["a", "seed 1"] == 30.0
    assert table.loc["a", "mean"] == 25.0 and table.loc["a", "σ"] == pytest.approx(np.std([20.0, 30.0], ddof=1))
    assert table.loc["a", "Δ vs reference"] == pytest.approx(10.0)  # seeds averaged per query: 15, 35 vs 10, 20
    assert table.loc["b", "σ"] == 0.0 and table.loc["b", "Δ vs reference"] == pytest.approx(-10.0)
    assert table.loc["b", "95 % high"] < 0  # both queries lower: every resample is below the reference
    assert np.isnan(table.loc["b", "seed 1"])

def test_mdcr_tuning_never_opens_the_test_split(synthetic_corpus, tmp_path):
    from sdr.synthetic.mdcr import write_mdcr

    folder = write_mdcr(synthetic_corpus, tmp_path / "mdcr", n_queries_per_field=3, progress=False)
    (folder / "mdcr_test.json").write_text("not json: tuning must not read me")
    ids = sorted(synthetic_corpus.papers)
    rng = np.random.default_rng(0)
    vectors = {facet: rng.normal(size=(len(ids), 8)) for facet in flew.FACETS}
    weights, table = flew.mdcr_tune(folder, vectors, ids)
    assert abs(sum(weights) - 1) < 1e-9 and len(table) == 36
    assert table["score"].max() == pytest.approx(
        flew.mdcr_scores(folder, flew.combine(vectors, weights), ids, "val")["avg"]["map"])


class FirstHalf(facets.Splitter):
    """Sentences 0..n/2 are background, the rest result (a deterministic splitter for the test)."""

    def sentence_facets(self, abstracts):
        return [["background" if i < len(a) / 2 else "result" for i in range(len(a))] for a in abstracts]


def test_facet_papers_cut_abstracts_and_count_empty_facets():
    papers = {"p": Paper("p", "Title", "One thing. Two things. Three things. Four things.")}
    by_facet, report = flew.facet_papers(papers, FirstHalf())
    assert by_facet["background"]["p"].abstract == "One thing. Two things."
    assert by_facet["result"]["p"].abstract == "Three things. Four things."
    assert by_facet["method"]["p"].text() == "Title"
    assert report["empty facet (title only)"] == {"background": 0, "method": 1, "result": 0}
    assert papers["p"].abstract.startswith("One thing")  # the source papers are not modified


FLEW_TASKS = ["relish", "reviewer", "same_author", "highinf_citation", "scidocs_prx", "review_score", "max_hindex",
              "tweet_mentions", "citation_count", "pub_year", "nfcorpus", "trec_covid", "search", "biomimicry", "drsm",
              "mesh", "fos", "scidocs_mag", "scidocs_mesh"]


@pytest.mark.parametrize("name", ["flew_table1", "flew_table3"])
def test_paper_total_avg_is_the_mean_of_the_19_tasks(name):
    """FLeW's "Total AVG" is the unweighted mean of its 19 task columns: a checksum of the transcription."""
    from sdr import book

    table = book.read_paper_table(name)
    assert len(table) == {"flew_table1": 6, "flew_table3": 9}[name]
    mean = table[FLEW_TASKS].astype(float).mean(axis=1)
    assert (mean - table["total_avg"].astype(float)).abs().max() <= 0.005 + 1e-9


def test_paper_mdcr_avg_row_is_the_mean_of_the_19_fields():
    from sdr import book

    table = book.read_paper_table("flew_table2")
    fields = table[table["field"] != "Avg"]
    assert fields["field"].nunique() == 19
    for model, rows in fields.groupby("model"):
        printed = table[(table["field"] == "Avg") & (table["model"] == model)].iloc[0]
        for metric in ("map", "recall_5"):
            assert abs(rows[metric].astype(float).mean() - float(printed[metric])) <= 0.05 + 1e-9, (model, metric)


# ------------------------------------------------------------------------ |C_x(e)| from Semantic Scholar pages
FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"
A1, A2 = "a1000000000000000000000000000000000000a1", "a2000000000000000000000000000000000000a2"
R1, R2 = "r1000000000000000000000000000000000000r1", "r2000000000000000000000000000000000000r2"


def _write_recorded_pages(folder: Path, extra_citation_pages=()) -> Path:
    """The recorded Graph API answers (data/fixtures/s2_api) as the fetcher writes them: one page a line with
    its anchor's paperId; ``extra_citation_pages`` are appended to citations.jsonl."""
    answers = json.loads((FIXTURES / "s2_api" / "recorded_responses.json").read_text())
    lines = {"references": [], "citations": []}
    for key, page in answers.items():
        method, path = key.split(" ", 1)
        if method != "GET" or "status" in page:
            continue
        _, _, anchor, kind = path.split("?")[0].split("/")
        lines[kind].append(json.dumps({"paperId": anchor, **page}))
    lines["citations"] += [json.dumps(page) for page in extra_citation_pages]
    folder.mkdir(parents=True, exist_ok=True)
    for kind, rows in lines.items():
        (folder / f"{kind}.jsonl").write_text("\n".join(rows) + "\n")
    return folder


def test_context_counts_per_intent_come_from_contexts_with_intent(tmp_path):
    """A1 cites R2 in two contexts, one background and one result: |C_bg| = |C_rs| = 1 (eq. 3), where the
    link-level intents × contexts would give each intent both contexts."""
    graph, _, report = read_s2_citations(_write_recorded_pages(tmp_path))
    edge = graph.edge(A1, R2)
    assert edge.intents == ("background", "result")
    assert (edge.count("background"), edge.count("result")) == (1, 1)
    assert graph.edge(A1, R1).count("method") == 2 and graph.edge(A2, R1).count("method") == 1
    assert sorted(flew.facet_edges(graph, "result")) == [(A1, R2, 1.0)]
    assert report["no contextsWithIntent: every intent given all the link's contexts"] == 0


def test_context_counts_fall_back_to_link_intents_when_contexts_carry_none(tmp_path):
    """Pages without contextsWithIntent (data/fixtures/s2_citations): every intent gets all the link's
    contexts, and the reader counts the links read that way."""
    graph, _, report = read_s2_citations(FIXTURES / "s2_citations")
    assert graph.edge(A1, R2).count("background") == graph.edge(A1, R2).count("result") == 1  # one context
    assert graph.edge(A2, R1).count("method") == 3
    with_intents = sum(1 for c in graph if c.intents)
    assert report["no contextsWithIntent: every intent given all the link's contexts"] == with_intents > 0
    # a link that names an intent no context carries keeps one context of it, counted
    page = {"paperId": "x", "data": [{"intents": ["result", "methodology"], "contexts": ["a", "b"],
                                      "contextsWithIntent": [{"context": "a", "intents": ["methodology"]},
                                                             {"context": "b", "intents": ["methodology"]}],
                                      "citedPaper": {"paperId": "y"}}]}
    (tmp_path / "references.jsonl").write_text(json.dumps(page) + "\n")
    graph, _, report = read_s2_citations(tmp_path)
    assert graph.edge("x", "y").count("method") == 2 and graph.edge("x", "y").count("result") == 1
    assert report["link intent carried by no context (one context counted)"] == 1


def test_an_edge_in_both_the_references_and_the_citations_is_read_once(tmp_path):
    """R1's citations page repeats the link A1 → R1 of A1's references: one citation, not twice its contexts
    (CitationGraph.add would sum them)."""
    answers = json.loads((FIXTURES / "s2_api" / "recorded_responses.json").read_text())
    link = dict(answers[f"GET /paper/{A1}/references?offset=0"]["data"][0])
    assert link["citedPaper"]["paperId"] == R1
    repeated = {**{k: v for k, v in link.items() if k != "citedPaper"}, "citingPaper": {"paperId": A1, "title": "t"}}
    graph, _, report = read_s2_citations(_write_recorded_pages(tmp_path, [{"paperId": R1, "data": [repeated]}]))
    assert graph.edge(A1, R1).count("method") == 2
    assert report["edge read again (references and citations, or a repeated page): kept once"] == 1
    single, _, _ = read_s2_citations(_write_recorded_pages(tmp_path / "once"))
    assert {(c.citing, c.cited, c.context_counts) for c in graph} == {(c.citing, c.cited, c.context_counts) for c in single}
    summed = CitationGraph()
    for _ in range(2):
        summed.add(A1, R1, ["method"], {"method": 2})
    assert summed.edge(A1, R1).count("method") == 4  # what reading both files edge by edge used to give


def test_bad_contexts_with_intent_entries_name_file_and_line(tmp_path):
    page = {"paperId": "x", "data": [{"intents": [], "contextsWithIntent": ["not an object"],
                                      "citedPaper": {"paperId": "y"}}]}
    (tmp_path / "references.jsonl").write_text(json.dumps(page) + "\n")
    with pytest.raises(ValueError, match=r"references.jsonl:1: anchor x: contextsWithIntent entries"):
        read_s2_citations(tmp_path)
    page["data"][0]["contextsWithIntent"] = [{"context": "c", "intents": ["motivation"]}]
    (tmp_path / "references.jsonl").write_text(json.dumps(page) + "\n")
    with pytest.raises(ValueError, match=r"references.jsonl:1: anchor x: unknown intents \['motivation'\]"):
        read_s2_citations(tmp_path)


# ------------------------------------------------------------------------ FLeW's released data and one query list
def _triplet_file(path, rows, header="query_paper_id,positive_id,negative_id"):
    path.write_text("\n".join([header, *(",".join(map(str, r)) for r in rows)]) + "\n")
    return path


def test_released_triplets_give_one_query_list_and_ten_triplets_a_query(tmp_path):
    released = {}
    for k, facet in enumerate(flew.FACETS):
        rows = [(q, 100 + 10 * q + i, 900 + i) for q in (1, 2) for i in range(10)]
        if facet == "result":
            rows += [(3, 5, 6)]  # a query only this facet has
        released[facet] = flew.read_released_triplets(_triplet_file(tmp_path / f"{facet}.csv", rows))
    queries, table = flew.query_list(released)
    assert queries == ["1", "2", "3"]
    assert table.loc["background", "triplets per query (median)"] == 10
    assert table.loc["method", "distinct positives per query (median)"] == 10
    assert table.loc["background", "queries of the list missing"] == 1 and table.loc["result", "queries of the list missing"] == 0
    with pytest.raises(ValueError, match=r"bad.csv:1: expected the header"):
        flew.read_released_triplets(_triplet_file(tmp_path / "bad.csv", [(1, 2, 3)], header="q,p,n"))
    with pytest.raises(ValueError, match=r"row.csv:3: expected three S2 corpus ids"):
        flew.read_released_triplets(_triplet_file(tmp_path / "row.csv", [(1, 2, 3), (1, "x", 3)]))


def test_synthetic_s2_pages_and_triplets_round_trip_through_the_readers(synthetic_corpus, tmp_path):
    """The replica writers run the real fetcher against the synthetic Graph API: the reader gets the corpus' graph
    back (every edge in both files, read once), and the released-triplets layout maps back to paper ids."""
    from sdr.synthetic import s2_api

    ids = s2_api.corpus_ids(synthetic_corpus)
    s2_api.write_flew_triplets(synthetic_corpus, tmp_path / "triplets", ids=ids, seed=0)
    # anchors given as corpus ids, as FLeW's fetch gets them: resolved through /paper/batch first
    anchors = [f"CorpusId:{ids[p]}" for p in sorted(synthetic_corpus.papers)]
    s2_api.write_citation_pages(synthetic_corpus, tmp_path / "pages", anchors=anchors, ids=ids)
    graph, papers, report = read_s2_citations(tmp_path / "pages")
    assert {(c.citing, c.cited, c.context_counts) for c in graph} == \
           {(c.citing, c.cited, c.context_counts) for c in synthetic_corpus.graph}
    assert report["edge read again (references and citations, or a repeated page): kept once"] == len(graph)
    released = {f: flew.read_released_triplets(tmp_path / "triplets" / f"{f}_training_triplet.csv") for f in flew.FACETS}
    queries, table = flew.query_list(released)
    paper_of = flew.corpus_id_map(tmp_path / "pages")
    assert [paper_of[q] for q in queries] == s2_api.shared_queries(synthetic_corpus.graph)
    assert (table["triplets per query (median)"] == flew.TRIPLETS_PER_QUERY).all()
    assert (table["queries of the list missing"] == 0).all()
    for facet in flew.FACETS:  # positives are the query's neighbours in that facet's subgraph
        edges = {frozenset(e[:2]) for e in flew.facet_edges(synthetic_corpus.graph, facet)}
        back = {v: k for k, v in paper_of.items()}
        id_to_paper = {str(v): k for k, v in ids.items()}
        assert all(frozenset((id_to_paper[q], id_to_paper[p])) in edges for q, p, _ in released[facet]), facet
        del back


def test_facet_triplets_share_one_query_list_and_skip_queries_without_a_facet_edge(synthetic_corpus):
    from sdr import graph as graph_module
    from sdr.methods import scincl

    graph = synthetic_corpus.graph
    nodes = sorted(graph.nodes)
    config = graph_module.GraphEmbeddingConfig(dimension=8, epochs=2, test_fraction=0.0, seed=0)
    embeddings = flew.embed_facet_subgraphs(graph, config, nodes=nodes)
    bands = scincl.scaled_bands(len(nodes), hard_fraction=0.5, bands=flew.FLEW_BANDS)
    without_result = sorted(set(nodes) - {p for e in flew.facet_edges(graph, "result") for p in e[:2]})
    queries = nodes[:6] + without_result[:2]
    sampled, coverage = flew.facet_triplets(embeddings, graph, bands, queries=queries, seed=0)
    assert coverage.loc["result", "left out (no edge in this subgraph)"] >= len(without_result[:2]) > 0
    for facet in flew.FACETS:
        triplets = sampled[facet][0]
        assert {t.query for t in triplets} <= set(queries)
        counts = {t.query: 0 for t in triplets}
        for t in triplets:
            counts[t.query] += 1
        assert set(counts.values()) == {flew.TRIPLETS_PER_QUERY}, facet
        assert coverage.loc[facet, "triplets"] == len(triplets)
    assert not {t.query for t in sampled["result"][0]} & set(without_result)


def test_heldout_triplet_scores_hand_computed():
    from sdr.samplers import Triplet

    vectors = {"q": [0.0, 0.0], "p": [1.0, 0.0], "n": [3.0, 0.0], "far": [0.5, 0.0]}
    scores = flew.heldout_triplet_scores(vectors, [Triplet("q", "p", "n", "easy"), Triplet("q", "p", "far", "easy")])
    # gaps: 1 - 3 = -2 (loss 0, ordered), 1 - 0.5 = 0.5 (loss 1.5, not ordered)
    assert scores == {"triplet loss": pytest.approx(0.75), "ordered correctly": 0.5, "triplets": 2}
    with pytest.raises(KeyError, match="no vector"):
        flew.heldout_triplet_scores({"q": [0.0]}, [Triplet("q", "p", "n", "easy")])


# ------------------------------------------------------------------------ SciRepEval: per-task weights, no test split
@pytest.fixture(scope="module")
def scirepeval_replica(tmp_path_factory):
    from sdr.synthetic import make_corpus
    from sdr.synthetic.scirepeval import write_scirepeval

    corpus = make_corpus(n_papers=120, seed=3)
    folder = write_scirepeval(corpus, tmp_path_factory.mktemp("scirepeval"), seed=0, n_queries=6, progress=False)
    rng = np.random.default_rng(0)
    documents, _ = flew.scirepeval_documents(folder, folder / "scirepeval_tasks.jsonl")
    vectors = {f: {d: rng.normal(size=6) for d in documents} for f in flew.FACETS}
    return folder, vectors


def test_scirepeval_tuning_never_reads_a_test_split(scirepeval_replica, monkeypatch, tmp_path):
    import shutil

    from sdr.evaluate import scirepeval

    source, vectors = scirepeval_replica
    folder = tmp_path / "copy"
    shutil.copytree(source, folder)
    for test in folder.rglob("test.jsonl"):
        test.write_text("not json: tuning must not read me\n")
    opened = []
    real_read_rows = scirepeval.read_rows
    monkeypatch.setattr(scirepeval, "read_rows", lambda path: opened.append(path.name) or real_read_rows(path))
    table = flew.scirepeval_task_weights(folder, folder / "scirepeval_tasks.jsonl", vectors,
                                         ranking_weights=(0.2, 0.3, 0.5), step=0.25, seed=0)
    assert opened and set(opened) == {"train.jsonl"}
    supervised = table[table["type"].isin(["classification", "regression"])]
    ranking = table[~table["type"].isin(["classification", "regression"])]
    assert len(supervised) >= 5 and len(ranking) >= 5
    assert supervised["rule"].str.startswith("held-out 20% of the train split").all()
    assert (supervised["validation papers"] > 0).all() and supervised["validation score"].notna().all()
    assert {tuple(w) for w in supervised[list(flew.FACETS)].to_numpy()} <= set(flew.simplex_grid(0.25))
    assert (ranking[list(flew.FACETS)].to_numpy() == [0.2, 0.3, 0.5]).all()
    assert ranking["rule"].str.contains("MDCR val").all()
    with pytest.raises(ValueError, match="validation data only"):
        flew.tune_weights(lambda w: 0.0, split="scirepeval Search test")


def test_scirepeval_weighted_scores_each_task_with_its_own_weights(scirepeval_replica):
    from sdr.evaluate import scirepeval

    folder, vectors = scirepeval_replica
    registry = folder / "scirepeval_tasks.jsonl"
    table = flew.scirepeval_task_weights(folder, registry, vectors, ranking_weights=(0.5, 0.25, 0.25), step=0.25)
    table.loc[table["task"] == "Fields of study", list(flew.FACETS)] = [0.25, 0.25, 0.5]
    result = flew.scirepeval_weighted(folder, registry, vectors, table)
    assert set(result["tasks"]) == set(table["task"])
    ids = sorted(vectors["background"])
    stacked = {f: np.stack([vectors[f][i] for i in ids]) for f in flew.FACETS}
    alone = scirepeval.evaluate(folder, dict(zip(ids, flew.combine(stacked, (0.25, 0.25, 0.5)))), tasks_config=registry,
                                tasks=["Fields of study"], few_shot=False, progress=False)
    assert result["tasks"]["Fields of study"]["metrics"] == alone["tasks"]["Fields of study"]["metrics"]
    columns = flew.flew_columns(result)
    assert columns["columns averaged"] < 19 and np.isnan(columns["total_avg"])  # a replica: no "Total AVG"
    scidocs = [result["tasks"][n]["metrics"]["ndcg"] for n in flew.TABLE1_COLUMNS["scidocs_prx"] if n in result["tasks"]]
    assert columns["scidocs_prx"] == pytest.approx(np.mean(scidocs))
    assert columns["fos"] == pytest.approx(scirepeval.task_score(result["tasks"]["Fields of study"]))


def test_flew_columns_total_avg_only_with_all_19_columns():
    tasks = {name: {"metrics": {"ndcg": 10.0 + i, "map": 0.0} if name.startswith("SciDocs C") else {"m": 10.0 + i}}
             for i, names in enumerate(flew.TABLE1_COLUMNS.values()) for name in names}
    columns = flew.flew_columns({"tasks": tasks})
    assert columns["columns averaged"] == 19
    assert columns["total_avg"] == pytest.approx(np.mean([10.0 + i for i in range(19)]))
    assert columns["scidocs_prx"] == 14.0 and columns["prx_avg"] == pytest.approx(np.mean([10, 11, 12, 13, 14]))


def test_mdcr_papers_read_every_query_and_candidate(synthetic_corpus, tmp_path):
    from sdr.synthetic.mdcr import write_mdcr

    folder = write_mdcr(synthetic_corpus, tmp_path / "mdcr", n_queries_per_field=2, progress=False)
    papers = flew.mdcr_papers(folder)
    assert papers and all(isinstance(p, Paper) for p in papers.values())
    lines = (folder / "mdcr_test_data.jsonl").read_text().splitlines()
    (folder / "mdcr_test_data.jsonl").write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(ValueError, match=r"mdcr_test_data.jsonl: 1 papers of mdcr_test.json have no title"):
        flew.mdcr_papers(folder, splits=("test",))


def test_released_facet_models_find_one_folder_per_facet(tmp_path):
    for name in ("FLeW-bg", "FLeW-mt", "FLeW-rs"):
        (tmp_path / name / "1_Pooling").mkdir(parents=True)
        (tmp_path / name / "config.json").write_text("{}")
        (tmp_path / name / "1_Pooling" / "config.json").write_text("{}")
    found = flew.released_facet_models(tmp_path)
    assert found == {"background": tmp_path / "FLeW-bg", "method": tmp_path / "FLeW-mt", "result": tmp_path / "FLeW-rs"}
    (tmp_path / "FLeW-rs" / "config.json").unlink()
    (tmp_path / "FLeW-rs" / "1_Pooling" / "config.json").unlink()
    with pytest.raises(ValueError, match=r"expected one sub-folder per facet encoder .* found \['background', 'method'\]"):
        flew.released_facet_models(tmp_path)


def test_paper_profile_scores_the_chapter_models_and_declares_the_released_data():
    from sdr import book, datasets

    profiles = book.load_profiles()["profiles"]
    assert profiles["paper"]["chapters"]["flew"]["score_released_models"] is True
    # the citation graph through the bulk route (issue 36), read with the Graph API dataset's name and layout
    assert {"flew_triplets", "s2ag_bulk_flew", "mdcr", "scirepeval", "scirepeval_full", "csfcube", "csabstruct",
            "flew_split_metadata"} == set(datasets.CHAPTER_DATA["flew"])
    assert datasets.BULK_ROUTE["flew"] == ("s2ag_citations_flew", "s2ag_bulk_flew")
    split = datasets.get("flew_split_metadata")
    assert [f.path for f in split.files] == [f"{f}_split_triplets_metadata.jsonl" for f in flew.FACETS]
    assert all(f.url.startswith("https://huggingface.co/datasets/Miracle-dz/FLeW-data/") for f in split.files)
    assert datasets.CHAPTER_DATA["flew"].index("flew_triplets") < datasets.CHAPTER_DATA["flew"].index("s2ag_bulk_flew")
    released = datasets.get("flew_triplets")
    assert [f.path for f in released.files] == [f"{f}_training_triplet.csv" for f in flew.FACETS]
    assert all(f.url.startswith("https://huggingface.co/datasets/Miracle-dz/FLeW-data/") for f in released.files)
    assert {"mdcr_val_data.jsonl", "mdcr_test_data.jsonl"} <= set(datasets.paper_files("mdcr"))
    assert {"Miracle-dz/FLeW-split", "Miracle-dz/FLeW-full", "allenai/specter", "malteos/scincl"} <= \
        set(datasets.CHAPTER_MODELS["flew"])


def test_flew_anchors_are_the_released_query_list(tmp_path, monkeypatch):
    from sdr import datasets
    from sdr.fetchers import semantic_scholar

    for facet in flew.FACETS:
        _triplet_file(tmp_path / f"{facet}_training_triplet.csv", [(7, 1, 2), (5, 1, 2), (7, 3, 4)])
    monkeypatch.setattr(datasets, "resolve", lambda name, **kw: tmp_path if name == "flew_triplets" else None)
    assert semantic_scholar.anchors_for(datasets.get("s2ag_citations_flew")) == ["CorpusId:7", "CorpusId:5"]


def test_corpus_ids_are_resolved_once_and_unknown_ones_noted(synthetic_corpus, tmp_path):
    from sdr.fetchers.http import Client
    from sdr.fetchers.semantic_scholar import CitationFetcher
    from sdr.synthetic import s2_api

    ids = s2_api.corpus_ids(synthetic_corpus)
    transport = s2_api.SyntheticGraphApi(synthetic_corpus, ids)
    calls = []

    def counting(*args):
        calls.append(args[1])
        return transport(*args)

    fetcher = CitationFetcher(tmp_path, Client(rate=1e6, transport=counting, sleep=lambda s: None), progress=False)
    first = sorted(synthetic_corpus.papers)[:3]
    resolved = fetcher.resolve_corpus_ids([f"CorpusId:{ids[p]}" for p in first] + ["CorpusId:1"])
    assert resolved == first and len(calls) == 1
    assert fetcher.resolve_corpus_ids([f"CorpusId:{ids[p]}" for p in first] + ["CorpusId:1"]) == first
    assert len(calls) == 1  # known and unknown ids are not asked for again
    assert flew.corpus_id_map(tmp_path) == {str(ids[p]): p for p in first}
    with pytest.raises(ValueError, match="expected ids CorpusId"):
        fetcher.resolve_corpus_ids(["abc"])


# ------------------------------------------------------------------------ the splitter on the real CSAbstruct
def test_real_csabstruct_splitter_trained_here_reaches_the_target(real_data, tmp_path, monkeypatch):
    """The chapter's real-data splitter check, on every machine with the data mirror: the classifier is trained
    from scratch in this test (never a cached model of another version) on CSAbstruct train and must agree with
    SPLITTER_AGREEMENT_TARGET of test's background/method/result sentences and beat the lexical baseline by
    SPLITTER_BASELINE_MARGIN."""
    folder = real_data("csabstruct")
    monkeypatch.setenv("SDR_MODEL_CACHE", str(tmp_path / "cache"))  # no cached classifier can be picked up
    model, path = facets.train_classifier(folder, out=tmp_path / facets.MODEL_FILE)
    assert path.exists() and not (tmp_path / "cache").exists()
    train_abstracts, train_labels = facets.read_csabstruct(folder / "train.jsonl")
    test_abstracts, test_labels = facets.read_csabstruct(folder / "test.jsonl")
    ours = facets.facet_scores(model.predict(test_abstracts), test_labels, objective_to="method")
    lexical = max(facets.facet_scores(facets.lexical_baseline(train_abstracts, train_labels, test_abstracts),
                                      test_labels, objective_to=o)["agreement"] for o in facets.OBJECTIVE_TARGETS)
    assert ours["sentences_scored"] == 1133
    assert ours["agreement"] >= flew.SPLITTER_AGREEMENT_TARGET, ours["agreement"]
    assert ours["agreement"] > lexical + flew.SPLITTER_BASELINE_MARGIN, (ours["agreement"], lexical)


def test_paper_dry_run_mirror_holds_flews_inputs_in_their_official_layouts(tmp_path, monkeypatch):
    """`sdr paper-dry-run flew` fixtures: every dataset of CHAPTER_DATA["flew"] with the files a paper run reads;
    the citation graph was fetched through the bulk route (the synthetic Datasets API's shards filtered to the query
    list; corpus ids are the paper ids) for every paper of a graph large enough that FLeW's bands keep k⁻hard = 4000
    (the paper's branch), the released query list among them, each query with ten distinct positives a facet; the
    split abstracts cover every paper of the triplets."""
    from sdr import datasets, dryrun

    monkeypatch.delenv("SDR_DATA", raising=False)
    made = dryrun.build_mirror(tmp_path, ["flew"], real_data=None)
    assert set(made) == set(datasets.CHAPTER_DATA["flew"]) and set(made.values()) == {"fixture"}
    for name in made:
        folder = tmp_path / datasets.get(name).folder
        assert all((folder / p).exists() for p in datasets.paper_files(name)), name
    released = {f: flew.read_released_triplets(tmp_path / "flew_triplets" / f"{f}_training_triplet.csv")
                for f in flew.FACETS}
    queries, table = flew.query_list(released)
    paper_of = flew.corpus_id_map(tmp_path / "s2ag_bulk_flew")
    assert queries and all(q in paper_of for q in queries)
    assert set((tmp_path / "s2ag_bulk_flew" / "anchors.txt").read_text().split()) >= {paper_of[q] for q in queries}
    graph, _, _ = read_s2_citations(tmp_path / "s2ag_bulk_flew")
    assert all(paper_of[q] in graph.nodes for q in queries)
    from sdr.methods import scincl

    assert len(graph.nodes) > flew.FLEW_BANDS.k_hard + 10
    assert scincl.scaled_bands(len(graph.nodes), bands=flew.FLEW_BANDS) == flew.FLEW_BANDS
    assert set(table["distinct positives per query (median)"]) == {10.0}
    for facet in flew.FACETS:
        papers = flew.read_split_metadata(tmp_path / "flew_split_metadata" / f"{facet}_split_triplets_metadata.jsonl",
                                          facet)
        assert {pid for t in released[facet] for pid in t} <= set(papers)


def test_data_status_for_flew_says_missing_for_absent_folders(tmp_path, monkeypatch):
    from sdr import datasets

    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    rows = {row["dataset"]: row for row in datasets.chapter_status("flew")}
    assert set(rows) == set(datasets.CHAPTER_DATA["flew"])
    assert all(row["state"] == "missing" for row in rows.values()), {k: r["state"] for k, r in rows.items()}
    assert rows["flew_triplets"]["get it"] == "sdr data fetch flew_triplets (170 MB)"


# ------------------------------------------------------------------------ one comparison per benchmark (issue 26)
@pytest.mark.parametrize("profile", ["smoke", "real", "paper", "dry_run"])
def test_flew_reads_csfcube_at_the_benchmarks_chapters_length(profile):
    """FLeW's CSFCube leaderboard rows are compared with the untrained encoder the Benchmarks chapter stores, so the
    chapter reads CSFCube at that chapter's length at every profile (and in the paper dry run, with its caps)."""
    from sdr import book, dryrun

    def resolved(chapter):
        defaults = {name: ast.literal_eval(text) for name, text in
                    book.notebook_parameters(book.paths.NOTEBOOKS / f"{chapter}.ipynb").items()}
        if profile == "dry_run":
            return {**defaults, **book.chapter_parameters(chapter, "paper", dryrun.dry_run_overrides(chapter))}
        return {**defaults, **book.chapter_parameters(chapter, profile)}

    benchmarks, flew_parameters = resolved("benchmarks"), resolved("flew")
    assert flew_parameters["csfcube_max_length"] == (benchmarks["csfcube_max_length"] or benchmarks["max_length"])


def test_real_profile_trains_the_leaderboard_models_with_three_seeds():
    """The Summary asserts at real that every trained row has at least 3 seeds; FLeW's rows are CSFCube's."""
    from sdr import book

    real = book.chapter_parameters("flew", "real")
    assert real["leaderboard_seeds"] >= 3 and real["csfcube_eval"] is True
    assert book.chapter_parameters("flew", "smoke").get("leaderboard_seeds", 1) == 1


# ------------------------------------------------------------------------ the chapter's steps (issue 31)
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "flew.ipynb"


def _chapter_code_cells() -> list[str]:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    kept = {"parameters", "sdr-setup", "sdr-profile"}
    return ["".join(c["source"]) for c in cells
            if c["cell_type"] == "code" and not kept & set(c.get("metadata", {}).get("tags", []))]


def test_the_chapter_reads_as_a_book():
    """One call per step: no top-level branching or loops, no test of where an input came from (the data policy
    decides in the steps), cells that fit a screen; every figure one call in a hide-input cell with a caption."""
    cells = _chapter_code_cells()
    for source in cells:
        lines = [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        assert len(lines) <= 12, source
        assert not [line for line in lines if line.startswith(("if ", "for ", "while "))], source
        assert not re.search(r"\.(real|official|kind|origin)\b", source), source
    figures = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if "flew.figures." in "".join(c["source"])]
    assert len(figures) == 2
    for cell in figures:
        assert "hide-input" in cell["metadata"]["tags"] and cell["metadata"]["mystnb"]["figure"]["caption"]


def test_ablations_registry_names_table3_rows_and_the_profiles_ablations():
    from sdr import book

    table3 = set(book.read_paper_table("flew_table3")["model"])
    for name, ablation in flew.ABLATIONS.items():
        assert set(ablation.paper_rows) <= table3, name
        if ablation.weighted_sum:
            assert set(ablation.members) == set(flew.FACETS), name
    for profile, settings in book.load_profiles()["profiles"].items():
        flew.chosen_ablations(settings["chapters"]["flew"].get("ablations", []))  # every name is a registry key
    assert list(flew.chosen_ablations(["without_structural", "without_textual"])) == list(flew.ABLATIONS)
    with pytest.raises(ValueError, match=r"unknown \['without_graph'\]"):
        flew.chosen_ablations(["without_graph"])


def test_released_registries_label_every_model_the_paper_profile_scores():
    from sdr import datasets

    assert set(flew.RELEASED_BASELINES) | set(flew.RELEASED_FLEW) == set(datasets.CHAPTER_MODELS["flew"])
    assert not set(flew.RELEASED_BASELINES) & set(flew.RELEASED_FLEW)


def _inputs(official: bool):
    return SimpleNamespace(csabstruct=SimpleNamespace(official=official, kind="real" if official else "replica"))


def _scores(ours: float, baseline: float, scored: int = 1133):
    table = pd.DataFrame({"sentences scored": [scored]})
    return flew.SplitterScores(table, pd.DataFrame(), ours, baseline)


def test_splitter_check_follows_the_data_policy():
    target, margin = flew.SPLITTER_AGREEMENT_TARGET, flew.SPLITTER_BASELINE_MARGIN
    flew.check_splitter(_inputs(True), _scores(target, target - 2 * margin))
    with pytest.raises(ChapterCheckFailed, match="need ≥ 0.85"):
        flew.check_splitter(_inputs(True), _scores(target - 0.01, 0.5))
    with pytest.raises(ChapterCheckFailed, match="> the baseline"):
        flew.check_splitter(_inputs(True), _scores(target + 0.01, target + 0.005))
    with pytest.raises(ChapterCheckFailed, match="1,133"):
        flew.check_splitter(_inputs(True), _scores(0.99, 0.5, scored=1000))
    # a replica: templated abstracts, near perfect, ours no worse than the baseline by 0.02; the target is not read
    flew.check_splitter(_inputs(False), _scores(0.95, 0.96))
    with pytest.raises(ChapterCheckFailed, match="templated abstracts"):
        flew.check_splitter(_inputs(False), _scores(0.95, 0.99))


def test_heldout_gain_check_has_teeth():
    run = SimpleNamespace(p=SimpleNamespace(gain_margin=0.016))
    table = pd.DataFrame({"loss gain": [0.02, 0.001, 0.005]}, index=list(flew.FACET_ENCODERS.values()))
    assert flew.expect_heldout_gain(run, table)
    with pytest.raises(ChapterCheckFailed, match="need every gain > 0"):
        flew.expect_heldout_gain(run, table.assign(**{"loss gain": [0.02, -0.001, 0.005]}))
    with pytest.raises(ChapterCheckFailed, match="largest > the margin 0.016"):
        flew.expect_heldout_gain(run, table.assign(**{"loss gain": [0.01, 0.001, 0.005]}))
    with pytest.raises(ChapterCheckFailed, match="no query of the list is held out"):
        flew.expect_heldout_gain(run, pd.DataFrame())
    off = SimpleNamespace(p=SimpleNamespace(gain_margin=0.0))
    assert not flew.expect_heldout_gain(off, table.assign(**{"loss gain": [-1.0, -1.0, -1.0]}))


def test_link_prediction_check_has_teeth(capsys):
    table = pd.DataFrame({"AUC": [80.0, 70.0, 60.0]}, index=list(flew.FACETS))
    sampling = flew.Sampling(None, [], {}, None, {f: [] for f in flew.FACETS}, table)
    flew.expect_link_prediction(sampling)
    assert "AUC per subgraph" in capsys.readouterr().out
    with pytest.raises(ChapterCheckFailed, match="need > 55"):
        flew.expect_link_prediction(flew.Sampling(None, [], {}, None, {}, table.assign(AUC=[80.0, 55.0, 60.0])))


def test_leaderboard_seeds_without_csfcube_stop_before_training():
    run = SimpleNamespace(p=SimpleNamespace(leaderboard_seeds=3, csfcube_eval=False))
    with pytest.raises(ValueError, match="leaderboard_seeds = 3 needs csfcube_eval"):
        flew.train_facet_encoders(run, None, None, None, None, None)


def _paper_like_run(model_name="allenai/scibert_scivocab_uncased", pooling="cls", max_length=512):
    return SimpleNamespace(p=SimpleNamespace(model_name=model_name, pooling=pooling, max_length=max_length))


def _official(official=True, real=True):
    return SimpleNamespace(official=official, real=real)


def test_table2_shows_every_paper_field_and_ours_by_the_pairing_rule():
    result = {"fields": {"Art": {"map": 0.3, "recall_5": 0.4}, "Zoology (made up)": {"map": 0.1, "recall_5": 0.2}},
              "avg": {"map": 0.2, "recall_5": 0.3}}
    mdcr = flew.MDCRScores({}, {}, {"FLeW": result, "my own system": result}, pd.DataFrame())
    table2 = flew.mdcr_table2(_paper_like_run(), SimpleNamespace(mdcr=_official()), mdcr)
    assert set(table2) == {"MAP", "R@5", "apart"}
    column = "FLeW (pairs with FLeW(ours))"
    for label, metric in (("MAP", "map"), ("R@5", "recall_5")):
        table = table2[label]
        assert len(table) == 21 and table.index[19] == "Avg" and table.index[20] == "Zoology (made up)"
        assert table.loc["Art", column] == result["fields"]["Art"][metric]
        assert table.loc["Avg", column] == result["avg"][metric]
        assert table.loc["Zoology (made up)"].drop(column).isna().all()  # not a field of the paper: its columns empty
        assert table.loc["Avg", "paper: FLeW(ours)"] > 0
    assert list(table2["apart"].index) == ["my own system"]  # no paper column stands for it
    assert "no row of this paper table" in table2["apart"].loc["my own system", "why apart"]
    # a replica, or MiniLM: nothing pairs, each with its reason
    minilm = flew.mdcr_table2(_paper_like_run("minilm", "mean", 64), SimpleNamespace(mdcr=_official(False, False)),
                              mdcr)
    assert not any("pairs with" in c for c in minilm["MAP"].columns)
    why = minilm["apart"].loc["FLeW", "why apart"]
    assert "data: a replica" in why and "model: MiniLM" in why and "protocol" in why


def test_systems_embed_each_benchmark_at_its_length_and_restore_it():
    class Recording:
        max_length = 64

        def __init__(self):
            self.lengths = []

        def encode_papers(self, papers, batch_size, progress):
            self.lengths.append(self.max_length)
            return [np.full(2, float(len(p))) for p in papers]

    run = SimpleNamespace(p=SimpleNamespace(max_length=64, csfcube_max_length=32))
    systems = flew.Systems(run, {"MDCR": {"b": "bb", "a": "a"}, "CSFCube": {"c": "ccc"}})
    encoder = Recording()
    vectors = systems.embed(encoder, flew.BENCHMARKS)
    assert set(vectors) == {"MDCR", "CSFCube"} and encoder.lengths == [64, 32] and encoder.max_length == 64
    assert list(vectors["MDCR"]) == ["a", "b"] and vectors["MDCR"]["b"][0] == 2.0


def test_a_released_encoders_vectors_are_read_back_from_the_cache_on_a_rerun(tmp_path, monkeypatch):
    """Issue 32: the released part's encodings in FLeW's own tables are cached by the model's identity (the offline
    MiniLM's weights here), the texts and the reading settings, so a rerun reads them back; another input length is
    another entry."""
    from sdr.corpus import Paper
    from sdr.encoders import Encoder

    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    papers = {f"p{i}": Paper(f"p{i}", f"Title {i}", f"An abstract about topic {i % 3}.") for i in range(5)}
    run = SimpleNamespace(p=SimpleNamespace(max_length=32, csfcube_max_length=32))
    encoder = Encoder.load("minilm", num_layers=1, max_length=32)
    calls = []
    original = encoder.encode_papers
    monkeypatch.setattr(encoder, "encode_papers", lambda *a, **k: calls.append(1) or original(*a, **k))
    first = flew.Systems(run, {"MDCR": papers})
    vectors = first.embed(encoder, released=("minilm", 1))["MDCR"]
    assert len(calls) == 1 and first.cached == []
    rerun = flew.Systems(run, {"MDCR": papers})
    again = rerun.embed(encoder, released=("minilm", 1))["MDCR"]
    assert len(calls) == 1 and rerun.cached == ["minilm on MDCR"]
    assert list(again) == sorted(papers) and all(np.allclose(again[i], vectors[i]) for i in papers)
    longer = flew.Systems(SimpleNamespace(p=SimpleNamespace(max_length=48, csfcube_max_length=48)), {"MDCR": papers})
    longer.embed(encoder, released=("minilm", 1))
    assert len(calls) == 2 and longer.cached == []


def test_csfcube_rows_train_the_extra_seeds_and_store_one_row_per_model_and_seed(synthetic_corpus, tmp_path, capsys):
    """The `real` profile's path (leaderboard_seeds > 1), on CPU: the extra seeds retrain each facet encoder on the
    same triplets (training is replaced by fixed random vectors here), and every model and seed is a leaderboard row
    compared with the untrained encoder."""
    from sdr import book
    from sdr.book import Fit
    from sdr.evaluate import csfcube
    from sdr.synthetic.csfcube import write_csfcube

    folder = write_csfcube(synthetic_corpus, tmp_path / "csfcube", n_queries=6, pool_size=24, seed=0)
    ids = sorted(csfcube.read_csfcube_papers(folder))
    rng = np.random.default_rng(0)

    def vectors():
        return dict(zip(ids, rng.normal(size=(len(ids), 8))))

    p = SimpleNamespace(csfcube_eval=True, seed=0, leaderboard_seeds=2, model_name="minilm", model_layers=2,
                        weight_step=0.25, csfcube_max_length=32, batch_size=8, accumulation_steps=2, epochs=1)
    branches = []
    run = SimpleNamespace(p=p, profile="smoke", runs_part=lambda name: name == "seeds", branch=branches.append)
    names = list(flew.FACET_ENCODERS.values())

    def fit(name, seed):
        trained.append((name, seed))
        return Fit(name, SimpleNamespace(pooling="mean"), SimpleNamespace(steps=3), 1.0, 0.5, 48)

    trained = []
    training = flew.FacetTraining(run, {}, None, {}, {}, fits={name: fit(name, 0) for name in names})
    training.fit, trained[:] = fit, []
    systems = flew.Systems(run, {"CSFCube": {}}, single={name: {"CSFCube": vectors()}
                                                         for name in ["untrained encoder", *names]})
    systems.embed = lambda encoder, benchmarks: {"CSFCube": vectors()}
    inputs = SimpleNamespace(csfcube=SimpleNamespace(path=folder, kind="replica", source="CSFCube replica"))
    cs = flew.csfcube_rows(run, inputs, systems, training)
    assert trained == [(name, 1) for name in names]
    assert sorted((row["method"], row["seed"]) for row in cs.leaderboard) == \
        sorted((name, seed) for name in [*names, flew.SUM_NAME] for seed in (0, 1))
    reference = book.untrained_reference("minilm", 2, "mean", "csfcube")
    assert {row["reference"] for row in cs.leaderboard} == {reference}
    assert {row["training"] for row in cs.leaderboard if row["method"] == flew.SUM_NAME} == \
        {"3 encoders, 1 epoch, 9 steps × 16 triplets in all"}
    assert list(cs.seeds.index) == [*names, flew.SUM_NAME] and {"seed 0", "seed 1", "Δ vs untrained"} <= set(cs.seeds)
    assert list(cs.seed_training) == [f"{name} · seed 1" for name in names]
    assert list(cs.table.index) == [*names, "FLeW (tuned per facet on dev folds)", "untrained encoder"]
    flew.show_csfcube(run, inputs, cs)
    assert "training of the extra seeds" in capsys.readouterr().out
    assert branches == ["extra leaderboard seeds trained"]
    # without the `seeds` part, the first seed alone
    trained[:] = []
    run.runs_part = lambda name: False
    assert {row["seed"] for row in flew.csfcube_rows(run, inputs, systems, training).leaderboard} == {0}
    assert trained == []
    assert not flew.csfcube_rows(SimpleNamespace(p=SimpleNamespace(csfcube_eval=False)), inputs, systems,
                                 training).scored


# ------------------------------------------------------------------------ parts, the whole cost (issue 30)
def _plan_parameters(**changes):
    values = dict(profile="smoke", parts=["main", "ablations", "seeds"], max_queries=20, epochs=1, batch_size=4,
                  accumulation_steps=2, max_length=64, csfcube_max_length=32, weight_step=0.25,
                  ablations=["without_textual"], leaderboard_seeds=2, csfcube_eval=True, graph_dimension=32,
                  graph_epochs=10, score_released_models=False)
    values.update(changes)
    return SimpleNamespace(**values)


def test_parts_registry_headline_and_profiles():
    from sdr import book, dryrun
    from sdr.plan import resolve_parts

    assert list(flew.PARTS) == ["released", "main", "published", "ablations", "seeds"]
    assert resolve_parts("headline", flew.PARTS) == ("released", "main")
    assert book.chapter_parameters("flew", "paper")["parts"] == "headline"
    assert "parts" not in book.chapter_parameters("flew", "smoke")  # the notebook's "all"
    assert book.chapter_parameters("flew", "paper", dryrun.dry_run_overrides("flew"))["parts"] == "all"
    assert all(part.reproduces and part.t4 for part in flew.PARTS.values())

    def run(parts):
        return SimpleNamespace(parts=tuple(parts))

    assert flew.check_parts(run(["released", "main"])) == ("released", "main")
    with pytest.raises(ValueError, match="leave out 'main'"):
        flew.check_parts(run(["released"]))
    flew.REQUIRES["published"] = ("main", "ablations")
    try:
        with pytest.raises(ValueError, match="part 'published' reads the results of \\['ablations'\\]"):
            flew.check_parts(run(["main", "published"]))
    finally:
        flew.REQUIRES["published"] = ("main",)


def test_cost_plan_lines_and_totals_by_hand():
    from sdr import plan

    p = _plan_parameters()
    cost = flew.cost_plan(p)
    table = cost.table()
    assert cost.selected == ("main", "ablations", "seeds")
    assert set(table["part"]) == {"main", "published", "ablations", "seeds"}  # no released line below paper
    rate = plan.MEASURED_TOKENS_PER_S  # computed tokens a second on the measured GPU
    train = table[table["kind"] == "train"].set_index("what")
    # 20 queries × 10 triplets, 1 epoch, batch 4 × 2: 25 steps; facet texts 64 tokens (the 120 assumed, capped)
    assert train.loc["FLeW-bg (split abstracts)", "steps a run"] == 25
    assert train.loc["FLeW-bg (split abstracts)", plan._hours_label(plan.MEASURED_DEVICE)] == pytest.approx(200 * 3 * 64 / rate / 3600)
    assert train.loc["FLeW-mt (published recipe)", plan._hours_label(plan.MEASURED_DEVICE)] == pytest.approx(200 * 3 * 64 / rate / 3600)
    assert train.loc["FLeW-rs w/o textual (full abstracts)", plan._hours_label(plan.MEASURED_DEVICE)] == pytest.approx(200 * 3 * 64 / rate / 3600)
    assert train.loc["FLeW-bg, seeds 2-2", "runs"] == 1
    assert len(train) == 3 + 3 + 3 + 3  # main, published, w/o textual, one extra seed
    lines = table.set_index("what")
    # PBG: 50 repeated edges a query × 20 queries × 10 epochs at 32 of 768 dimensions, 3 subgraphs
    # at SciNCL's measured 1.265e-4 s an edge-epoch (graph_scale_1m.txt)
    pbg = 50 * 20 * 10 * (32 / 768) * 1.265e-04 / 3600
    assert lines.loc["PyTorch-BigGraph per facet subgraph", "CPU / network h"] == pytest.approx(3 * pbg)
    # kNN: 20 queries over the background facet's 2.95 M papers × 20 / 216 K, 32 dimensions, 3.319e-10 s each
    knn = 20 * (2_950_000 * 20 / 216_000) * 32 * 3.319e-10 / 3600
    assert lines.loc["kNN bands in the background subgraph (flat FAISS)", "CPU / network h"] == pytest.approx(knn)
    # the graph through the bulk route: the shards' download and DuckDB filtering (sdr.fetchers.bulk.bulk_plan), not
    # 2 Graph API pages an anchor at 1 request a second
    from sdr.fetchers.bulk import bulk_plan

    bulk = lines.loc["s2ag_bulk_flew: Semantic Scholar bulk datasets, filtered with DuckDB"]
    assert bulk["CPU / network h"] == pytest.approx(bulk_plan("s2ag_bulk_flew")["hours"])
    assert not [w for w in table["what"] if "Graph API" in w]
    # the weight search: 3 interior grid points at step 0.25, 1 CPU h each (estimate)
    assert lines.loc["FLeW's sum: weight search, 3 grid points × the supervised tasks", "CPU / network h"] == 3.0
    totals = cost.totals()
    h100 = plan._hours_label(plan.MEASURED_DEVICE)
    assert totals.loc["selected parts", h100] == pytest.approx(
        table.loc[table["part"].isin(cost.selected), h100].sum())
    assert totals.loc["whole chapter", h100] == pytest.approx(table[h100].sum())
    assert totals.loc["whole chapter", h100] > totals.loc["selected parts", h100]  # published counted, not run


def test_cost_plan_parts_follow_the_registry_and_the_parameters():
    every = flew.cost_plan(_plan_parameters(parts="all", ablations=["without_textual", "without_structural"],
                                            profile="paper", score_released_models=True, max_queries=0))
    assert {w.part for w in every.work} == {"released", "main", "published", "ablations", "seeds"} == set(flew.PARTS)
    released = [w.what for w in every.work if w.part == "released"]
    assert sum("(released check)" in what for what in released) == \
        len({c.label + c.benchmark for c in flew.RELEASED_CHECKS})
    # the paper's sizes: 216 K queries × 10 triplets a facet
    train = [w for w in every.work if w.kind == "train" and w.part == "main"]
    assert [w.examples for w in train] == [2_160_000] * 3
    # one leaderboard seed: no seeds line; no ablation asked: no ablations line
    assert not [w for w in flew.cost_plan(_plan_parameters(leaderboard_seeds=1)).work if w.part == "seeds"]
    assert not [w for w in flew.cost_plan(_plan_parameters(ablations=[], parts=["main"])).work
                if w.part == "ablations"]


def test_each_parts_t4_words_are_the_paper_plans():
    from sdr.plan import chapter_cost_plan

    cost = chapter_cost_plan("flew", "paper", {"parts": "all"})
    totals = cost.totals()
    for name, part in flew.PARTS.items():
        hours = (totals.loc[name, "GPU h T4 (scaled)"], totals.loc[name, "CPU / network h"]) \
            if name in totals.index else (0.0, 0.0)
        assert part.t4 == flew.t4_words(*hours, part=name), name


# ------------------------------------------------------------------------ released models first (issue 32)
def test_released_checks_name_paper_rows_and_say_why_when_unasserted():
    from sdr import released

    values = released.expected_values(flew.RELEASED_CHECKS)
    assert values[("malteos/scincl", "mdcr", "avg/map")] == 32.6  # FLeW Table 2, SciNCL's average
    assert values[("allenai/specter", "scirepeval", "avg over the columns present")] == 58.42  # Table 1 Total AVG
    assert values[("Miracle-dz/FLeW-split/background", "scirepeval", "avg over the columns present")] == 59.57
    assert values[("Miracle-dz/FLeW-full/result", "scirepeval", "avg over the columns present")] == 58.30
    for check in flew.RELEASED_CHECKS:
        assert check.tolerance in (0.3, None) and check.pooling == "cls" and check.max_length == 512
        assert (check.tolerance is None) == check.model.startswith("allenai/specter2")
    assert {c.label for c in flew.RELEASED_CHECKS if c.subfolder} == {
        f"Miracle-dz/FLeW-{kind}/{facet}" for kind in ("split", "full") for facet in flew.FACETS}


def test_the_flew_stand_in_is_three_facet_encoders_the_chapter_finds(tmp_path):
    from sdr.encoders import Encoder
    from sdr.synthetic.models import write_stand_in

    texts = ["Neural citation recommendation.", "We propose a method and report results."] * 10
    folder = write_stand_in(tmp_path / "Miracle-dz__FLeW-split", "Miracle-dz/FLeW-split", texts, layers=1, hidden=16)
    found = flew.released_facet_models(folder)
    assert found == {f: folder / f for f in flew.FACETS} and not (folder / "config.json").exists()
    vectors = [Encoder.load(str(found[f]), device="cpu", pooling="cls").encode_texts(texts[:1], progress=False)
               for f in flew.FACETS]
    assert not np.allclose(vectors[0], vectors[1])  # three encoders, not one copied


@pytest.fixture(scope="module")
def released_setting(tmp_path_factory, synthetic_corpus):
    """Stand-ins of SPECTER and both FLeW releases, MDCR and SciRepEval replicas, and the dry run's expected
    values of two checks (one asserted row each)."""
    from sdr import dryrun, released
    from sdr.synthetic.mdcr import write_mdcr
    from sdr.synthetic.models import folder_name, write_stand_in
    from sdr.synthetic.scirepeval import write_scirepeval

    root = tmp_path_factory.mktemp("flew-released")
    texts = [f"{p.title} {p.abstract}" for p in synthetic_corpus.papers.values()]
    for number, name in enumerate(("allenai/specter", "Miracle-dz/FLeW-split", "Miracle-dz/FLeW-full")):
        write_stand_in(root / "models" / folder_name(name), name, texts, layers=1, hidden=16, seed=number)
    data = {"mdcr": write_mdcr(synthetic_corpus, root / "mdcr", seed=0, n_queries_per_field=2, progress=False),
            "scirepeval": write_scirepeval(synthetic_corpus, root / "scirepeval_full", seed=0, n_queries=6,
                                           progress=False)}
    checks = [c for c in flew.RELEASED_CHECKS if (c.model, c.benchmark) == ("allenai/specter", "mdcr")
              or c.label == "Miracle-dz/FLeW-split/method"]
    dryrun.write_released_expected(root, checks, data)
    assert (root / released.EXPECTED_FILE).exists()
    return root, data, checks


def _released_run(root, branches):
    from sdr.synthetic.models import folder_name

    data = SimpleNamespace(policy=SimpleNamespace(real_only=True), model_sources=[],
                           model=lambda name: str(root / "models" / folder_name(name)))
    return SimpleNamespace(p=SimpleNamespace(device="cpu"), parts=("released", "main"), runs_part=lambda n: True,
                           data=data, caption=lambda *lines: "caption", branch=branches.append)


def test_the_released_part_runs_in_the_dry_run_and_a_planted_mismatch_fails_it(released_setting, monkeypatch,
                                                                                 tmp_path):
    from sdr import datasets, released
    from sdr.methods.flew import released_checks

    root, data, checks = released_setting
    monkeypatch.setattr(released_checks, "RELEASED_CHECKS", tuple(checks))
    monkeypatch.setenv("SDR_DATA", str(root))
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")
    inputs = SimpleNamespace(mdcr=SimpleNamespace(path=data["mdcr"]), scirepeval=SimpleNamespace(path=data["scirepeval"]))
    branches = []
    table = flew.released_models(_released_run(root, branches), inputs)
    assert set(table["model"]) == {"allenai/specter", "Miracle-dz/FLeW-split/method"}
    assert table["holds"].all() and (table["difference"].abs() < 1e-3).all(), table
    assert branches == ["released checks asserted"]
    # a planted mismatch: the expected Total AVG of the FLeW facet encoder off by 0.5
    planted = tmp_path / "planted"
    planted.mkdir()
    stored = json.loads((root / released.EXPECTED_FILE).read_text())
    planted_check = next(c for c in checks if c.label == "Miracle-dz/FLeW-split/method" and c.benchmark == "scirepeval"
                         and "avg over the columns present" in c.metrics)
    stored[released.expected_key(planted_check, "avg over the columns present")] += 0.5
    (planted / released.EXPECTED_FILE).write_text(json.dumps(stored))
    monkeypatch.setenv("SDR_DATA", str(planted))
    with pytest.raises(ChapterCheckFailed, match="Miracle-dz/FLeW-split/method on scirepeval"):
        flew.released_models(_released_run(root, []), inputs)


def test_below_paper_the_released_part_reads_nothing(capsys):
    run = SimpleNamespace(parts=("released", "main"), runs_part=lambda n: True,
                          data=SimpleNamespace(policy=SimpleNamespace(real_only=False)))
    assert flew.released_models(run, None).empty
    assert "scored at the paper profile" in capsys.readouterr().out


# ------------------------------------------------------------------------ the published recipe (issue 37)
def test_split_metadata_reader_takes_the_releases_lines_and_names_bad_ones(tmp_path):
    path = tmp_path / "method_split_triplets_metadata.jsonl"
    path.write_text(json.dumps({"corpus_id": 7, "title": "T", "abstract": "We propose X."}) + "\n"
                    + json.dumps({"corpusid": "8", "title": "U", "method": ["A.", "B."]}) + "\n\n"
                    + json.dumps({"paper_id": "9", "title": "V", "abstract": ""}) + "\n")
    papers = flew.read_split_metadata(path, "method")
    assert papers["7"].abstract == "We propose X." and papers["8"].abstract == "A. B." and papers["9"].abstract == ""
    assert set(flew.read_split_metadata(path, "method", ids=["8"])) == {"8"}
    path.write_text(json.dumps({"corpus_id": 7, "text": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"method_split_triplets_metadata.jsonl:1: expected a corpus id .* "
                                         r"found keys \['corpus_id', 'text'\]"):
        flew.read_split_metadata(path, "method")
    path.write_text(json.dumps({"corpus_id": "abc", "title": "T", "abstract": "x"}) + "\n")
    with pytest.raises(ValueError, match=":1: corpus_id 'abc' is not an S2 corpus id"):
        flew.read_split_metadata(path, "method")
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match=":1: not valid JSON"):
        flew.read_split_metadata(path, "method")


def test_split_metadata_replica_cuts_abstracts_by_the_planted_facets(synthetic_corpus, tmp_path):
    from sdr.synthetic import s2_api

    ids = s2_api.corpus_ids(synthetic_corpus)
    from sdr.methods.flew.fixtures import write_split_metadata

    write_split_metadata(synthetic_corpus, tmp_path, ids)
    pid = sorted(synthetic_corpus.papers)[0]
    paper = synthetic_corpus.papers[pid]
    for facet in flew.FACETS:
        read = flew.read_split_metadata(tmp_path / f"{facet}_split_triplets_metadata.jsonl", facet)
        assert len(read) == len(synthetic_corpus.papers)
        assert read[str(ids[pid])].abstract == " ".join(paper.metadata["facets"][facet])
        assert read[str(ids[pid])].title == paper.title


# ------------------------------------------------------------------------ fidelity (issue 37)
def test_the_pairing_rule_sets_a_planted_non_matching_row_apart():
    from sdr import book

    paper = book.read_paper_table("flew_table1")
    ours = pd.DataFrame({"total_avg": [60.0, 59.0, 58.0]}, index=["FLeW", "SPECTER (released)", "untrained encoder"])
    setups = flew.row_setups(_paper_like_run(), ours.index, _official())
    paired = flew.pair_with_paper(ours, paper, ["total_avg"], setups, "this book (paper)")
    assert list(paired.paired["model"])[-3:] == ["FLeW", "SPECTER (released)", "untrained encoder"]
    assert list(paired.paired["pairs with"])[-3:] == ["FLeW(ours)", "SPECTER", "SciBERT"]
    assert paired.apart.empty
    # planted: the same row read at 256 tokens, and another on a replica
    planted = dict(setups, FLeW=flew.Setup(setups["FLeW"].data, setups["FLeW"].model,
                                           "title [SEP] abstract, [CLS], 256 tokens"),
                   **{"untrained encoder": flew.Setup("a replica of the benchmark", setups["FLeW"].model,
                                                      setups["FLeW"].protocol)})
    paired = flew.pair_with_paper(ours, paper, ["total_avg"], planted, "this book (paper)")
    assert list(paired.apart.index) == ["FLeW", "untrained encoder"]
    assert "protocol: title [SEP] abstract, [CLS], 256 tokens here" in paired.apart.loc["FLeW", "why apart"]
    assert paired.apart.loc["untrained encoder", "why apart"].startswith("data: a replica of the benchmark here")
    assert len(paired.paired) == len(paper) + 1


def test_the_differences_list_states_every_setting_not_the_papers_and_a_planted_gap_fails():
    from sdr.book.profiles import chapter_parameters

    paper = SimpleNamespace(**{**{k: v for k, v in chapter_parameters("flew", "paper").items()},
                               "accumulation_steps": 1})
    assert flew.setting_differences(paper) == {}  # the paper profile's settings are the paper's
    p = SimpleNamespace(**{**vars(paper), "batch_size": 8, "learning_rate": 1e-4, "model_name": "minilm",
                           "pooling": "mean", "weight_step": 0.25})
    item = SimpleNamespace(name="mdcr", real=False)
    run = SimpleNamespace(p=p, data=SimpleNamespace(inputs={"mdcr": item}))
    weights = pd.DataFrame({"task": ["Biomimicry", "RELISH", "SciDocs Cite"],
                            "rule": ["held-out 20% of the train split", "no validation or train split: MDCR val",
                                     "no validation or train split: MDCR val"]})
    citations = SimpleNamespace(name="s2ag_bulk_flew", real=True, source="S2AG bulk", path="/nonexistent")
    inputs = SimpleNamespace(citations=citations)
    lines = flew.differences(run, inputs, weights=weights)
    assert {"effective batch", "learning_rate", "model_name", "pooling"} == set(flew.setting_differences(p))
    assert any(line.startswith("**Tuning:** ") and "Here 1 of Table 1's 19 columns" in line
               and "2 (proximity and search)" in line for line in lines)
    assert any("replicas stand in for mdcr" in line for line in lines)
    flew.expect_differences_stated(lines, run, inputs, weights)
    planted = [line for line in lines if "learning_rate" not in line]  # a planted missing difference
    with pytest.raises(ChapterCheckFailed, match=r"lacks \['learning_rate'\]"):
        flew.expect_differences_stated(planted, run, inputs, weights)
    # planted: each fixed line missing (splitter, graph, bands, grid, trainer, CSFCube), the tuning, the replicas
    for label in [*flew.FIXED_DIFFERENCES, "**Tuning:**", "**Data:**"]:
        planted = [line for line in lines if not line.startswith(label)]
        assert len(planted) == len(lines) - 1
        with pytest.raises(ChapterCheckFailed, match=rf"lacks \['{label.strip('*:')}"):
            flew.expect_differences_stated(planted, run, inputs, weights)


def test_the_graph_line_names_the_route_the_runs_citations_came_by(tmp_path, monkeypatch):
    """The Graph line is generated from the citation input: at ``paper`` the bulk route (s2ag_bulk_flew, with the
    release its fetch fixed), the Graph API's dataset otherwise, a replica at smoke; a typed-in line claiming another
    route than the run's fails the check."""
    monkeypatch.delenv("SDR_PAPER_DRY_RUN", raising=False)
    from sdr import datasets

    monkeypatch.setattr(datasets, "dry_run", lambda: False)
    (tmp_path / "release.json").write_text('{"release_id": "2026-11-10"}', encoding="utf-8")
    bulk = SimpleNamespace(name="s2ag_bulk_flew", real=True, source="S2AG bulk", path=tmp_path)
    line = flew.graph_line(SimpleNamespace(citations=bulk))
    assert line.startswith("**Graph:** read from the Semantic Scholar bulk datasets of release 2026-11-10 "
                           "(s2ag_bulk_flew")
    assert "Graph API" not in line and "not the 2024-04-02 S2AG release FLeW used" in line
    api = SimpleNamespace(name="s2ag_citations_flew", real=True, source="S2 Graph API", path=tmp_path / "none")
    assert "today's Semantic Scholar Graph API (s2ag_citations_flew" in flew.graph_line(SimpleNamespace(citations=api))
    replica = SimpleNamespace(name="s2ag_citations_flew", real=False, source="a synthetic Graph API", path=tmp_path)
    assert "a replica (a synthetic Graph API)" in flew.graph_line(SimpleNamespace(citations=replica))
    monkeypatch.setattr(datasets, "dry_run", lambda: True)
    dry = flew.graph_line(SimpleNamespace(citations=bulk))
    assert "the paper dry run's fixture in the s2ag_bulk_flew layout" in dry
    monkeypatch.setattr(datasets, "dry_run", lambda: False)
    # planted: the page's Graph line says the Graph API while the run read the bulk route
    from sdr.book.profiles import chapter_parameters

    p = SimpleNamespace(**{**chapter_parameters("flew", "paper"), "accumulation_steps": 1})
    run = SimpleNamespace(p=p, data=SimpleNamespace(inputs={"s2ag_citations_flew": bulk}))
    lines = flew.differences(run, SimpleNamespace(citations=bulk))
    flew.expect_differences_stated(lines, run, SimpleNamespace(citations=bulk))
    typed_in = [flew.graph_line(SimpleNamespace(citations=api)) if line.startswith("**Graph:**") else line
                for line in lines]
    with pytest.raises(ChapterCheckFailed, match=r"lacks \['Graph \(read from the Semantic Scholar bulk datasets"):
        flew.expect_differences_stated(typed_in, run, SimpleNamespace(citations=bulk))


def test_the_loss_check_needs_a_drop_above_the_measured_seed_spread():
    """loss_margin (profiles.yml: above the spread of the probe-loss drop over training seeds at smoke): a drop of
    0.05 is within that noise and fails; a rise (a sign-flipped loss) fails; the smoke runs' drops pass."""
    from sdr.book import ChapterRun, Fit
    from sdr.book.profiles import chapter_parameters

    margin = chapter_parameters("flew", "smoke")["loss_margin"]
    assert margin == 0.1

    def training(drop):
        fit = Fit("FLeW-bg", None, SimpleNamespace(steps=20), 0.87, 0.87 - drop, 160)
        return SimpleNamespace(fits={"FLeW-bg": fit})

    run = ChapterRun.__new__(ChapterRun)
    run.p, run.loss_checks = SimpleNamespace(loss_margin=margin), {}
    assert len(flew.expect_trained(run, training(0.23))) == 1
    assert run.loss_checks["FLeW-bg"]["drop"] == pytest.approx(0.23) and run.loss_checks["FLeW-bg"]["margin"] == 0.1
    for drop in (0.05, -0.3):
        with pytest.raises(ChapterCheckFailed, match="training did not lower the loss by more than 0.1"):
            flew.expect_trained(run, training(drop))


def test_the_released_and_resampled_triplet_sets_are_compared_by_hand_counted_overlap_and_bands(tmp_path):
    """compare_triplet_sets on hand-made sets: the released triplets (corpus ids mapped through papers.jsonl; one id
    unmapped, one query not trained) beside ours, with overlap, subgraph edges, distinct positives and the ranks of
    the released positives and negatives in a facet embedding of points on a line, all counted by hand."""
    from sdr.corpus import CitationGraph
    from sdr.datasets import DataInput
    from sdr.samplers import Triplet
    from sdr.samplers.bands import BandSetting

    papers = [{"paperId": f"P{n}", "externalIds": {"CorpusId": 100 + n}} for n in range(1, 9)]
    (tmp_path / "papers.jsonl").write_text("".join(json.dumps(p) + "\n" for p in papers), encoding="utf-8")
    header = "query_paper_id,positive_id,negative_id\n"
    released = {"background": ["101,102,105", "101,103,106", "102,104,107", "103,101,108", "101,109,105"],
                "method": ["101,103,105"], "result": ["102,101,107"]}
    for facet, rows in released.items():
        (tmp_path / f"{facet}_training_triplet.csv").write_text(header + "\n".join(rows) + "\n", encoding="utf-8")
    graph = CitationGraph()
    graph.add("P1", "P2", ["background"])
    graph.add("P4", "P2", ["background"])  # (P2, P4) is cited the other way round: still an edge of the subgraph
    graph.add("P1", "P3", ["method"])
    graph.add("P5", "P1", ["result"])
    graph.add("P7", "P3", ["result"])  # P6 and P8 have no edge: not in our graph
    x = {"P1": 0.0, "P2": 1.0, "P3": 2.1, "P5": 3.3, "P6": 4.6, "P4": 6.0, "P7": 7.6, "P8": 9.3}
    embedding = SimpleNamespace(ids=list(x), vectors=np.array([[v, 0.0] for v in x.values()], np.float32),
                                metric="l2")
    bands = BandSetting(k_pos=2, c_pos=1, k_hard=4, c_hard=1, c_easy=1)
    ours = {"background": [Triplet("P1", "P2", "P7", "hard"), Triplet("P1", "P4", "P8", "hard"),
                           Triplet("P2", "P4", "P5", "easy")],
            "method": [Triplet("P1", "P3", "P5", "hard")], "result": []}
    sampling = SimpleNamespace(triplets=ours, embeddings={f: embedding for f in ours}, bands=bands)
    branches = []
    inputs = SimpleNamespace(citations=SimpleNamespace(path=tmp_path),
                             triplets=DataInput("flew_triplets", "real", tmp_path, "hand-made"))
    table = flew.compare_triplet_sets(SimpleNamespace(branch=branches.append), inputs,
                                      SimpleNamespace(train=["P1", "P2"]), sampling, SimpleNamespace(graph=graph)).table
    assert branches == ["released triplets compared with the re-sampled ones"]
    background = table.loc["background"]
    # P3's triplet is dropped (not a trained query); 109 has no paper: corpus:109
    assert background["released triplets (trained queries)"] == 4 and background["re-sampled triplets"] == 3
    assert background["queries in both"] == 2
    # released pairs (P1,P2) (P1,P3) (P2,P4) (P1,corpus:109); ours (P1,P2) (P1,P4) (P2,P4): 2 shared of 4
    assert background["(query, positive) pairs shared"] == 2 and background["share of released pairs re-sampled"] == 0.5
    assert background["released positives cited in our facet subgraph"] == 0.5  # P1→P2 and P4→P2; P1→P3 is method
    assert background["released papers not in our graph"] == 2  # P6 and corpus:109
    assert background["distinct positives a query (released, median)"] == 2.0  # P1: 3, P2: 1
    assert background["distinct positives a query (re-sampled, median)"] == 1.5  # P1: 2, P2: 1
    # the three released triplets with all papers embedded; ranks from P1: P2 1, P3 2, P5 3, P6 4; from P2: P4 and
    # P7 beyond max(k) = 4 (rank 0)
    assert background["released triplets inside our graph"] == 3
    assert background["released positives in our top k⁺ = 2"] == pytest.approx(2 / 3)  # ranks 1, 2, 0
    assert background["released positives in our positive band"] == pytest.approx(1 / 3)  # (1, 2]: rank 2 only
    assert background["released negatives in our top k⁻hard = 4"] == pytest.approx(2 / 3)  # ranks 3, 4, 0
    assert background["released negatives in our hard band"] == pytest.approx(1 / 3)  # (3, 4]: rank 4 only
    method = table.loc["method"]
    assert (method["(query, positive) pairs shared"], method["share of released pairs re-sampled"],
            method["released positives cited in our facet subgraph"]) == (1, 1.0, 1.0)
    result = table.loc["result"]
    assert result["re-sampled triplets"] == 0 and result["queries in both"] == 0
    assert result["released positives cited in our facet subgraph"] == 0.0  # P5→P1 is not (P2, P1)
    assert np.isnan(result["distinct positives a query (re-sampled, median)"])
    assert result["released positives in our top k⁺ = 2"] == 1.0  # from P2, P1 is rank 1


def test_every_query_has_ten_triplets_with_ten_distinct_positives():
    """§4.1's ten triplets per query and facet, each with its own positive: a query with ten triplets but a repeated
    positive fails, naming it, as does a query with nine triplets; the band sampler's output passes."""
    from sdr.samplers import Triplet

    def query(name, positives, n=10):
        return [Triplet(name, positives[i % len(positives)], f"{name}-n{i}", "hard") for i in range(n)]

    good = query("q1", [f"p{i}" for i in range(10)]) + query("q2", [f"r{i}" for i in range(10)])
    flew.expect_triplets_per_query(good, "background")
    repeated = good + query("q3", [f"s{i}" for i in range(9)])  # ten triplets, nine distinct positives
    with pytest.raises(ChapterCheckFailed, match=r"background: 1 of 3 queries do not have 10 triplets with 10 distinct "
                                                 r"positives: query q3: 10 triplets, 9 distinct positives"):
        flew.expect_triplets_per_query(repeated, "background")
    short = good + query("q4", [f"t{i}" for i in range(9)], n=9)
    with pytest.raises(ChapterCheckFailed, match=r"query q4: 9 triplets, 9 distinct positives"):
        flew.expect_triplets_per_query(short, "method")


def test_the_band_sampler_gives_each_query_ten_distinct_positives_with_flews_bands():
    """FLEW_BANDS (c⁺ = 10, c⁻hard + c⁻easy = 10) on a small graph's embedding: every sampled query passes the
    check."""
    from sdr.methods import scincl
    from sdr.samplers.bands import knn_band_triplets

    rng = np.random.default_rng(0)
    ids = [f"p{i}" for i in range(300)]
    vectors = rng.normal(size=(300, 8)).astype(np.float32)
    bands = scincl.scaled_bands(len(ids), bands=flew.FLEW_BANDS)
    triplets, _ = knn_band_triplets(vectors, ids, query_ids=ids[:20], seed=0, **{
        name: getattr(bands, name) for name in ("k_pos", "c_pos", "k_hard", "c_hard", "c_easy")})
    assert len({t.query for t in triplets}) == 20
    flew.expect_triplets_per_query(triplets, "result")
