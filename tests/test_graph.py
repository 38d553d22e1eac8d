"""Tests of sdr.graph: edge reading and its errors, weights as repeated edges, the held-out split,
FAISS neighbours on points whose order is known, and one PyTorch-BigGraph run (through the CLI) whose
embeddings must recover the planted communities of a synthetic corpus."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from sdr import cli, graph
from sdr.corpus import CitationGraph
from sdr.evaluate.embeddings import read_embeddings
from sdr.synthetic import make_corpus


@pytest.fixture(scope="module")
def community_corpus():
    return make_corpus(n_papers=300, seed=3, with_sections=False)


@pytest.fixture(scope="module")
def cli_run(community_corpus, tmp_path_factory):
    """One `sdr graph embed` run on the corpus's citation graph (the only PBG training in this file)."""
    folder = tmp_path_factory.mktemp("graph")
    edges = graph.write_edges_tsv(folder / "edges.tsv", community_corpus.graph)
    out = folder / "embeddings.jsonl"
    code = cli.main(["graph", "embed", str(edges), "--dim", "32", "--test-fraction", "0.05",
                     "--out", str(out), "--json"])
    return code, out


def test_cli_writes_embeddings_for_every_node(cli_run, community_corpus, capsys):
    code, out = cli_run
    assert code == 0
    embeddings = read_embeddings(out)
    assert set(embeddings) == community_corpus.graph.nodes
    assert {vector.shape for vector in embeddings.values()} == {(32,)}


def test_neighbours_recover_planted_communities(cli_run, community_corpus):
    embeddings = read_embeddings(cli_run[1])
    ids = sorted(embeddings)
    neighbours, scores = graph.nearest_neighbours(np.stack([embeddings[i] for i in ids]), ids, k=10, metric="ip")
    same = np.mean([[community_corpus.community_of(n) == community_corpus.community_of(q) for n in found]
                    for q, found in zip(ids, neighbours)])
    sizes = Counter(community_corpus.community_of(pid) for pid in ids)
    chance = sum(size * (size - 1) for size in sizes.values()) / (len(ids) * (len(ids) - 1))
    # measured 0.65 vs chance 0.06 (400 papers, 32-d dot); a random embedding sits at chance
    assert same > 5 * chance, (same, chance)
    assert np.all(np.diff(scores, axis=1) <= 1e-6)  # nearest first


def test_link_prediction_is_reported_and_beats_chance(community_corpus):
    result = graph.embed(community_corpus.graph, graph.GraphEmbeddingConfig(dimension=16, epochs=10,
                                                                           test_fraction=0.05))
    assert list(result.link_prediction) == list(graph.LINK_PREDICTION_METRICS)
    assert all(0 <= value <= 100 for value in result.link_prediction.values())
    # AUC 50 is chance; measured ~80 on this graph
    assert result.link_prediction["AUC"] > 65, result.link_prediction
    assert result.report.test_edges == len(result.test_edges) == round(0.05 * result.report.distinct_edges)
    assert result.metric == "ip"
    for citing, cited in result.test_edges:
        assert (citing, cited) in community_corpus.graph


def test_weights_are_repeated_edges_and_test_edges_are_never_trained():
    edges = [("a", "b", 3), ("b", "c", 1), ("c", "a", 0), ("a", "c", 2.0), ("c", "d", 1), ("d", "a", 1)]
    config = graph.GraphEmbeddingConfig(test_fraction=0.0)
    ids, rows, test, report = graph.training_edges(edges, config)
    assert ids == ["a", "b", "c", "d"]
    pairs = Counter((ids[i], ids[j]) for i, j in rows.tolist())
    assert pairs == {("a", "b"): 3, ("b", "c"): 1, ("a", "c"): 2, ("c", "d"): 1, ("d", "a"): 1}
    assert report.zero_weight_edges == 1 and test == []
    undirected = graph.training_edges(edges, graph.GraphEmbeddingConfig(test_fraction=0.0, undirected=True))
    both = Counter((ids[i], ids[j]) for i, j in undirected[1].tolist())
    assert both[("b", "a")] == 3 and both[("a", "b")] == 3 and sum(both.values()) == 2 * sum(pairs.values())
    _, rows, test, report = graph.training_edges(edges, graph.GraphEmbeddingConfig(test_fraction=0.4))
    trained = {(ids[i], ids[j]) for i, j in rows.tolist()}
    assert len(test) == 2 and not set(test) & trained and report.test_edges == 2


def test_fractional_weights_are_an_error_not_rounded():
    # 0.4 used to round to no edge, leaving both papers with their random initial vectors
    with pytest.raises(ValueError, match=r"1 edges have a weight that is no whole number of repeats, e.g. a->c: 0.4"):
        graph.training_edges([("a", "b", 1), ("a", "c", 0.4)], graph.GraphEmbeddingConfig(test_fraction=0.0))
    # a scale that makes them whole is fine, up to float rounding (0.3 * 10 is 3.0000000000000004)
    _, rows, _, _ = graph.training_edges([("a", "b", 0.3)], graph.GraphEmbeddingConfig(weight_scale=10))
    assert len(rows) == 3


def test_graph_and_tuples_give_the_same_edges():
    citation_graph = CitationGraph()
    citation_graph.add("p", "q")
    citation_graph.add("q", "r")
    assert graph.edges_of(citation_graph) == graph.edges_of([("p", "q"), ("q", "r")])
    with pytest.raises(ValueError, match="no edges"):
        graph.training_edges(CitationGraph(), graph.GraphEmbeddingConfig())
    with pytest.raises(ValueError, match="weight"):
        graph.edges_of([("p", "q", -1)])


def test_nearest_neighbours_order_on_a_line():
    ids = ["a", "b", "c", "d"]
    points = np.array([[0.0], [1.0], [3.0], [7.0]], dtype=np.float32)
    found, distances = graph.nearest_neighbours(points, ids, k=2, metric="l2")
    assert found == [["b", "c"], ["a", "c"], ["b", "a"], ["c", "b"]]
    assert distances[0].tolist() == [1.0, 9.0]
    found, _ = graph.nearest_neighbours(np.array([[1, 0], [0.9, 0.1], [0, 1]], dtype=np.float32),
                                        ["x", "y", "z"], k=1, metric="cosine", query_ids=["z"])
    assert found == [["y"]]


@pytest.mark.parametrize("content, expected", [
    ("a\tb\nc\n", r"edges\.tsv:2: found 'c'; expected 'citing<TAB>cited'"),
    ("a\tb\t1\nc\td\theavy\n", r"edges\.tsv:2: weight 'heavy'; expected a whole number of repeats >= 1"),
    ("a\tb\t-2\n", r"edges\.tsv:1: weight '-2'; expected a whole number of repeats >= 1"),
    ("a\tb\t0.5\n", r"edges\.tsv:1: weight '0.5'; expected a whole number of repeats >= 1 \(fractional"),
    ("a\tb\tnan\n", r"edges\.tsv:1: weight 'nan'; expected a whole number"),
    ("# only a comment\n\n", r"edges\.tsv: no edges"),
])
def test_bad_edges_file_names_file_and_line(tmp_path, content, expected):
    path = tmp_path / "edges.tsv"
    path.write_text(content)
    with pytest.raises(ValueError, match=expected):
        graph.read_edges_tsv(path)


def test_cli_reports_bad_input_in_one_line(tmp_path, capsys):
    path = tmp_path / "edges.tsv"
    path.write_text("a\tb\nlonely\n")
    code = cli.main(["graph", "embed", str(path), "--dim", "4", "--out", str(tmp_path / "out.jsonl")])
    assert code == 2
    assert f"{path}:2: found 'lonely'; expected" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


def test_defaults_are_scincl_appendix_a5():
    defaults = graph.GraphEmbeddingConfig()
    assert (defaults.dimension, defaults.comparator, defaults.epochs, defaults.learning_rate, defaults.margin,
            defaults.test_fraction, defaults.undirected) == (768, "dot", 20, 0.1, 0.15, 0.01, False)
    with pytest.raises(ValueError, match="comparator"):
        graph.GraphEmbeddingConfig(comparator="l2")


def _paper(pid: str):
    from sdr.corpus import Paper

    return Paper(pid, f"title {pid}", f"abstract {pid}")


def test_citation_graph_from_triplets_keeps_query_to_positive_edges():
    a, b, c, d = (_paper(p) for p in "abcd")
    triplets = [(a, b, c), (a, b, d), (b, c, a), (d, d, a)]
    citations, papers, report = graph.citation_graph_from_triplets(triplets)
    assert sorted((e.citing, e.cited) for e in citations) == [("a", "b"), ("b", "c"), ("d", "d")]
    assert set(papers) == {"a", "b", "c", "d"}  # negatives too: they are embedded and sampled
    assert report == {"triplets": 4, "edges": 3, "repeated_pairs": 1, "self_citations": 1, "papers": 4}
    with pytest.raises(ValueError, match="no triplets"):
        graph.citation_graph_from_triplets([])
    with pytest.raises(ValueError, match="triplet 1: expected"):
        graph.citation_graph_from_triplets([(a, b)])


def test_citation_graph_from_the_released_triplet_sample(shared_data):
    """SciRepEval's sample of SPECTER's cite_prediction triplets (the layout the `paper` profile downloads)."""
    from sdr.corpus import read_scirepeval_triplets

    triplets, _ = read_scirepeval_triplets(shared_data / "scirepeval" / "sample_data" / "specter_small.json")
    citations, papers, report = graph.citation_graph_from_triplets(triplets)
    assert report["triplets"] == len(triplets) > 0
    assert report["edges"] + report["repeated_pairs"] == len(triplets)
    assert {q.paper_id for q, _, _ in triplets} <= {e.citing for e in citations}
    assert all(papers[e.citing].title and papers[e.cited].title for e in citations)
