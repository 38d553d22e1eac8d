"""FLeW recipe (sdr.methods.flew): facet subgraph weights, the simplex grid, weight tuning on
validation data only (CSFCube dev folds, MDCR val), facet papers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sdr import facets
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

    monkeypatch.setattr(flew, "csfcube_per_query", fake_per_query)
    monkeypatch.setattr(flew, "tune_weights", spying_tune)
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
    monkeypatch.setattr(flew, "csfcube_per_query",
                        lambda data_dir, vectors, ids, facets_to_rank=flew.FACETS:
                        {k: dict.fromkeys(metrics, v) for k, v in value.items()})
    vectors = {facet: np.zeros((2, 2)) for facet in flew.FACETS}
    scores, _ = flew.csfcube_crossval(tmp_path, vectors, ["x", "y"], step=1 / 3)  # one interior grid point
    fold_means = [np.mean([value[k] for k in splits["all"][fold]]) for fold in ("fold1_test", "fold2_test")]
    assert scores.loc["all", "map"] == pytest.approx(np.mean(fold_means))
    assert scores.loc["method", "map"] == pytest.approx(np.mean([value[k] for k in queries["method"]]))


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
