"""Tests of sdr.samplers on hand-made graphs whose positive / hard / easy pools are known exactly,
on points on a line whose neighbour ranks are known, and on a random graph for invariants."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from sdr.corpus import CitationGraph, Paper
from sdr.synthetic import make_corpus
from sdr.samplers import (
    ContrastiveExample,
    PKBatchSampler,
    Triplet,
    contrastive_examples,
    count_collisions,
    graph_pools,
    knn_band_triplets,
    specter_triplets,
    undirected_triplets,
)

QUIET = {"progress": False, "verbose": False}


def hand_graph() -> CitationGraph:
    """q cites a, b and itself; a cites c and b; b cites d and q; x cites q; y cites a; e cites c.

    Directed (SPECTER) pools of q: positives {a, b}; hard = refs(a) | refs(b) - refs(q) - q = {c, d};
    easy = the rest = {x, y, e}. Undirected pools of q: positives {a, b, x}; hard {c, d}; easy {y, e}.
    """
    graph = CitationGraph()
    for citing, cited in [("q", "a"), ("q", "b"), ("q", "q"), ("a", "c"), ("a", "b"), ("b", "d"),
                          ("b", "q"), ("x", "q"), ("y", "a"), ("e", "c")]:
        graph.add(citing, cited)
    return graph


def random_graph(n_papers: int = 300, n_edges: int = 1500, seed: int = 0) -> CitationGraph:
    rng = np.random.default_rng(seed)
    graph = CitationGraph()
    for citing, cited in rng.integers(0, n_papers, size=(n_edges, 2)):
        if citing != cited:
            graph.add(f"p{citing:04d}", f"p{cited:04d}")
    return graph


def by_kind(triplets: list[Triplet], query: str, kind: str) -> list[str]:
    return [t.negative for t in triplets if t.query == query and t.kind == kind]


# ------------------------------------------------------------------------------------- graph pools


def test_graph_pools_directed_and_undirected():
    graph = hand_graph()
    directed = graph_pools(graph, "q", undirected=False)
    assert directed.positives == ["a", "b"]
    assert directed.hard == ["c", "d"]
    assert directed.linked == {"q", "a", "b", "c", "d"}
    assert directed.self_citations == ["q"]  # the self-loop q -> q
    undirected = graph_pools(graph, "q", undirected=True)
    assert undirected.positives == ["a", "b", "x"]
    assert undirected.hard == ["c", "d"]
    assert undirected.linked == {"q", "a", "b", "x", "c", "d"}
    two_hop = graph_pools(graph, "q", undirected=True, hard_negatives="two_hop")
    # neighbours of a: q, b, c, y; of b: q, a, d; of x: q  -> minus direct links and q
    assert two_hop.hard == ["c", "d", "y"]
    with pytest.raises(ValueError, match="hard_negatives"):
        graph_pools(graph, "q", undirected=True, hard_negatives="three_hop")


# ---------------------------------------------------------------------------------------- SPECTER


def test_specter_triplets_exact_pools():
    triplets, report = specter_triplets(hand_graph(), query_ids=["q"], **QUIET)
    assert len(triplets) == 5
    assert sorted(by_kind(triplets, "q", "hard")) == ["c", "d"]  # the whole hard pool (2 of 2)
    easy = by_kind(triplets, "q", "easy")
    assert sorted(easy) == ["e", "x", "y"]  # the whole easy pool (3 of 3), x cites q: allowed here
    assert {t.positive for t in triplets} == {"a", "b"}
    assert report.queries_used == 1 and report.examples == 5
    assert (report.hard_negatives, report.easy_negatives) == (2, 3)
    assert report.oversampled_queries == 1 and report.oversampled_positives == 3  # 2 positives for 5
    assert report.self_citations_excluded == 1


def test_specter_hard_short_filled_with_easy():
    # b cites d and q; hard = refs(d) | refs(q) - {d, q} - b = {a}; easy = all - {b, d, q, a}
    triplets, report = specter_triplets(hand_graph(), query_ids=["b"], **QUIET)
    assert by_kind(triplets, "b", "hard") == ["a"]
    assert sorted(by_kind(triplets, "b", "easy")) == ["c", "e", "x", "y"]
    assert report.hard_short == 1 and report.hard_short_queries == 1
    assert len(triplets) == 5


def test_specter_skips_are_counted():
    graph = hand_graph()
    triplets, report = specter_triplets(graph, query_ids=sorted(graph.nodes) + ["missing"], **QUIET)
    # c and d cite nothing
    assert report.skipped == Counter({"no positives": 2, "not in graph": 1})
    assert report.queries_skipped == 3 and report.queries_total == 9 and report.queries_used == 6
    assert {t.query for t in triplets} == {"q", "a", "b", "x", "y", "e"}
    # SPECTER's own code returns nothing for queries without hard candidates: e cites only c
    _, strict = specter_triplets(graph, query_ids=["e", "q"], require_hard=True, **QUIET)
    assert strict.skipped == Counter({"no hard negatives": 1}) and strict.queries_used == 1


def test_specter_explicit_hard_candidates():
    # data.json count-1 entries for q: y (a is cited by q, q is q: both dropped)
    triplets, report = specter_triplets(hand_graph(), hard_candidates={"q": ["y", "a", "q"]}, query_ids=["q"], **QUIET)
    assert by_kind(triplets, "q", "hard") == ["y"]
    # c and d are no longer hard candidates, so they may be easy; y may not
    assert sorted(by_kind(triplets, "q", "easy")) == ["c", "d", "e", "x"]
    assert report.hard_short == 1


def test_specter_hard_ratio_option():
    graph = random_graph()
    rich = [q for q in sorted(graph.nodes) if len(graph_pools(graph, q, undirected=False).hard) >= 5][:20]
    triplets, _ = specter_triplets(graph, query_ids=rich, hard_ratio=0.3, **QUIET)  # SPECTER: ceil(1.5) = 2
    assert Counter(t.kind for t in triplets) == Counter({"hard": 40, "easy": 60})
    triplets, _ = specter_triplets(graph, query_ids=rich, hard_ratio=0.5, **QUIET)  # ceil(2.5) = 3
    assert Counter(t.kind for t in triplets) == Counter({"hard": 60, "easy": 40})
    with pytest.raises(ValueError, match="must equal"):
        specter_triplets(graph, hard_per_query=2, easy_per_query=2, **QUIET)


def test_specter_collision_with_citing_paper():
    # x cites q: (x, q) is a positive pair for query x, and x is an easy negative of q (the pool
    # {x, y, e} is drawn whole) -> exactly one unordered collision (SciNCL A.7.10)
    triplets, report = specter_triplets(hand_graph(), query_ids=["q", "x"], **QUIET)
    assert report.collisions == 1
    assert count_collisions(triplets) == 1
    assert count_collisions(triplets, symmetric=False) == 0
    _, undirected = undirected_triplets(hand_graph(), query_ids=["q", "x"], **QUIET)
    assert undirected.collisions == 0


# ------------------------------------------------------------------------------------- undirected


def test_undirected_triplets_exact_pools_and_oversampling():
    triplets, report = undirected_triplets(hand_graph(), query_ids=["q"], **QUIET)
    assert sorted(by_kind(triplets, "q", "hard")) == ["c", "d"]
    # the easy pool {y, e} has only 2 papers: the third easy negative cannot be drawn -> 4 triplets
    assert sorted(by_kind(triplets, "q", "easy")) == ["e", "y"] and report.negatives_short == 1
    assert len(triplets) == 4
    positives = [t.positive for t in triplets]
    assert set(positives) == {"a", "b", "x"}  # every positive candidate used before any repeat
    assert report.oversampled_queries == 1 and report.oversampled_positives == 1  # 3 candidates, 4 triplets


def test_undirected_self_citation_exclusion_by_author():
    papers = {
        "q": Paper("q", "Query", authors=["Ann Lee"]),
        "x": Paper("x", "Citing", authors=["ann  lee", "Bob Ray"]),  # same author, other spacing/case
        "a": Paper("a", "A", authors=["Cy Dow"]),
    }
    triplets, report = undirected_triplets(hand_graph(), papers=papers, query_ids=["q"], **QUIET)
    assert {t.positive for t in triplets} == {"a", "b"}
    assert "x" not in {t.negative for t in triplets}  # still linked: never a negative
    assert report.self_citations_excluded == 2  # the self-loop and x


def test_undirected_two_hop_mode():
    triplets, _ = undirected_triplets(hand_graph(), query_ids=["q"], hard_negatives="two_hop", **QUIET)
    assert set(by_kind(triplets, "q", "hard")) <= {"c", "d", "y"} and len(by_kind(triplets, "q", "hard")) == 2
    assert set(by_kind(triplets, "q", "easy")) <= {"e", "c", "d", "y"}


def test_undirected_invariants_on_random_graph_and_determinism():
    graph = random_graph()
    first, report = undirected_triplets(graph, seed=3, **QUIET)
    again, _ = undirected_triplets(graph, seed=3, **QUIET)
    other, _ = undirected_triplets(graph, seed=4, **QUIET)
    assert first == again and first != other
    assert report.collisions == 0
    for t in first:
        neighbours = graph.neighbours(t.query)
        assert t.positive in neighbours and t.positive != t.query
        assert t.negative not in neighbours and t.negative != t.query
        if t.kind == "hard":
            second_hop = set().union(*(graph.references(r) for r in graph.references(t.query)))
            assert t.negative in second_hop
    per_query = Counter(t.query for t in first)
    assert set(per_query.values()) == {5}
    assert report.queries_used + report.queries_skipped == report.queries_total == len(graph.nodes)


def _triplets_digest() -> str:
    rng = np.random.default_rng(0)
    graph = CitationGraph()
    for a, b in rng.integers(0, 200, size=(800, 2)):
        if a != b:
            graph.add(f"p{a}", f"p{b}")
    triplets = undirected_triplets(graph, **QUIET)[0] + specter_triplets(graph, **QUIET)[0]
    return hashlib.sha256(repr(triplets).encode()).hexdigest()


def test_same_triplets_in_a_process_with_another_hash_seed():
    # set iteration order of strings depends on PYTHONHASHSEED; the samplers must not
    script = "import sys; sys.path.insert(0, sys.argv[1]); import test_samplers as t; print(t._triplets_digest())"
    other = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], capture_output=True,
                           text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"}).stdout.strip()
    assert other == _triplets_digest()


def test_specter_easy_negatives_never_cited_or_hard():
    graph = random_graph(seed=1)
    triplets, report = specter_triplets(graph, seed=0, **QUIET)
    for t in triplets:
        pools = graph_pools(graph, t.query, undirected=False)
        assert t.positive in pools.positives
        if t.kind == "easy":
            assert t.negative not in pools.linked
        else:
            assert t.negative in pools.hard
    assert report.examples == len(triplets) == 5 * report.queries_used


# ----------------------------------------------------------------------------------- SPECTERCL


def test_contrastive_examples_pools_and_counts():
    examples, report = contrastive_examples(hand_graph(), query_ids=["q"], **QUIET)
    (example,) = examples
    assert isinstance(example, ContrastiveExample)
    assert len(example.positives) == 1 and example.positives[0] in {"a", "b", "x"}
    # 2 hard ({c, d}) + 3 easy wanted, but only {y, e} are easy in the undirected sense
    assert example.n_hard == 2 and sorted(example.negatives[:2]) == ["c", "d"]
    assert sorted(example.negatives[2:]) == ["e", "y"] and report.negatives_short == 1

    examples, report = contrastive_examples(hand_graph(), n_positives=5, n_negatives=3, n_hard=0,
                                            undirected=False, query_ids=["q"], examples_per_query=2, **QUIET)
    assert len(examples) == 2
    for example in examples:
        assert set(example.positives) == {"a", "b"} and len(example.positives) == 5
        assert sorted(example.negatives) == ["e", "x", "y"] and example.n_hard == 0
    assert report.oversampled_positives == 6 and report.oversampled_queries == 1


# --------------------------------------------------------------------------------------- kNN bands


def line_points(n: int = 30) -> tuple[np.ndarray, list[str]]:
    return np.arange(n, dtype=np.float32)[:, None], [f"p{i}" for i in range(n)]


def test_knn_bands_on_a_line():
    points, ids = line_points(30)
    triplets, report = knn_band_triplets(points, ids, k_pos=5, c_pos=2, k_hard=20, c_hard=2, c_easy=3,
                                         query_ids=["p0"], **QUIET)
    # from p0 the i-th nearest neighbour is p_i
    assert {t.positive for t in triplets} == {"p4", "p5"}  # ranks (3, 5]
    assert sorted(by_kind(triplets, "p0", "hard")) == ["p19", "p20"]  # ranks (18, 20]
    easy = by_kind(triplets, "p0", "easy")
    assert len(easy) == 3 and all(int(e[1:]) > 20 for e in easy)  # filtered: outside the top 20
    assert len(triplets) == 5 and report.queries_used == 1


def test_knn_bands_middle_query_with_distinct_distances():
    # points 2^i - 1: from 31 (i=5) the order is 15, 7, 3, 1, 0, 63, 127, ...
    points = (2.0 ** np.arange(11) - 1).astype(np.float32)[:, None]
    ids = [f"p{i}" for i in range(11)]
    triplets, _ = knn_band_triplets(points, ids, k_pos=3, c_pos=2, k_hard=6, c_hard=1, c_easy=1,
                                    query_ids=["p5"], **QUIET)
    assert {t.positive for t in triplets} == {"p3", "p2"}  # 2nd and 3rd neighbours
    assert by_kind(triplets, "p5", "hard") == ["p6"]  # 6th neighbour
    assert by_kind(triplets, "p5", "easy")[0] in {"p7", "p8", "p9", "p10"}


def test_knn_inner_product_metric():
    angles = np.radians(np.arange(12) * 7.0)
    points = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    ids = [f"p{i}" for i in range(12)]
    for metric in ("ip", "cosine"):
        triplets, _ = knn_band_triplets(points * 3.0 if metric == "cosine" else points, ids, k_pos=2, c_pos=1,
                                        k_hard=5, c_hard=1, c_easy=1, metric=metric, query_ids=["p0"], **QUIET)
        assert {t.positive for t in triplets} == {"p2"}
        assert by_kind(triplets, "p0", "hard") == ["p5"]


def test_knn_unfiltered_random_and_determinism():
    points, ids = line_points(40)
    kwargs = dict(k_pos=3, c_pos=3, k_hard=10, c_hard=1, c_easy=2, filtered_random=False, **QUIET)
    first, _ = knn_band_triplets(points, ids, seed=1, **kwargs)
    again, _ = knn_band_triplets(points, ids, seed=1, **kwargs)
    assert first == again
    assert all(t.negative != t.query for t in first)
    assert len(first) == 3 * 40


def test_knn_clips_k_and_counts_missing_easy_negatives():
    points, ids = line_points(10)
    triplets, report = knn_band_triplets(points, ids, query_ids=["p0"], **QUIET)  # k_hard 4000 > 9
    assert any("clipped" in w for w in report.warnings)
    assert sorted(by_kind(triplets, "p0", "hard")) == ["p8", "p9"]  # band (7, 9]
    assert by_kind(triplets, "p0", "easy") == []  # every paper is within the top 9
    assert report.negatives_short == 3
    with pytest.raises(ValueError, match="ids for"):
        knn_band_triplets(points, ids[:5], **QUIET)


def test_knn_overlapping_bands_collide():
    points, ids = line_points(12)
    triplets, report = knn_band_triplets(points, ids, k_pos=5, c_pos=2, k_hard=5, c_hard=2, c_easy=0,
                                         query_ids=["p0"], **QUIET)
    # no sampling-induced margin: positives p4, p5 and hard negatives p4, p5 -> both pairs collide
    assert count_collisions(triplets, symmetric=False) == 2 and report.collisions == 2
    with pytest.raises(ValueError, match="c_pos"):  # positives beyond one per negative would be dropped
        knn_band_triplets(points, ids, k_pos=5, c_pos=5, k_hard=5, c_hard=2, c_easy=0, **QUIET)


def test_count_collisions_by_hand():
    triplets = [
        Triplet("q", "a", "b", "hard"),
        Triplet("q", "b", "c", "easy"),  # (q, b) positive here, negative above
        Triplet("c", "q", "d", "easy"),  # {c, q}: positive for c, negative for q (unordered only)
        Triplet("q", "b", "c", "easy"),  # a repeated pair counts once
    ]
    assert count_collisions(triplets, symmetric=False) == 1
    assert count_collisions(triplets) == 2
    example = ContrastiveExample("q", ["a"], ["a", "z"])
    assert count_collisions([example]) == 1


# ------------------------------------------------------------------------------------- PK batches


def test_pk_batches_have_p_classes_of_k(capsys):
    labels = ["a"] * 10 + ["b"] * 10 + ["c"] * 2 + ["d"] * 6
    sampler = PKBatchSampler(labels, p=2, k=4, seed=0)
    assert "1 classes have fewer than 4" in capsys.readouterr().out
    assert sampler.classes_below_k == {"c": 2}
    batches = list(sampler)
    assert len(batches) == len(sampler) == 28 // 8
    for batch in batches:
        assert len(batch) == 8
        counts = Counter(labels[i] for i in batch)
        assert len(counts) == 2 and set(counts.values()) == {4}
        for label in counts:
            members = [i for i in batch if labels[i] == label]
            if label != "c":  # classes with >= K examples are drawn without replacement
                assert len(set(members)) == 4
    sampler.set_epoch(0)
    assert list(sampler) == batches  # deterministic per (seed, epoch)
    assert list(sampler) != batches  # the next iteration is epoch 1: other batches
    assert list(PKBatchSampler(labels, p=2, k=4, seed=0, verbose=False)) == batches


def test_pk_small_class_sampled_with_replacement_and_errors():
    labels = np.array([0, 0, 0, 1])
    sampler = PKBatchSampler(labels, p=2, k=3, seed=1, num_batches=4, verbose=False)
    for batch in sampler:
        ones = [i for i in batch if labels[i] == 1]
        assert ones == [3, 3, 3]
        assert sorted(i for i in batch if labels[i] == 0) == [0, 1, 2]
    # fewer classes than p: every batch holds both classes and still p·k = 3 examples
    for batch in PKBatchSampler(labels, p=3, k=1, num_batches=3, verbose=False):
        assert len(batch) == 3 and {int(labels[i]) for i in batch} == {0, 1}


# ------------------------------------------------------------------------------ synthetic corpus


def test_undirected_triplets_on_the_synthetic_corpus():
    corpus = make_corpus(n_papers=300, seed=0, with_sections=False)
    triplets, report = undirected_triplets(corpus.graph, papers=corpus.papers, **QUIET)
    assert report.queries_used > 0 and report.examples == len(triplets)

    def authors(pid):
        return {" ".join(a.lower().split()) for a in corpus.papers[pid].authors}

    for t in triplets:  # shared-author links are never positives
        assert not authors(t.query) & authors(t.positive)

    def same_community(pairs):
        pairs = list(pairs)
        community = {pid: paper.metadata["community"] for pid, paper in corpus.papers.items()}
        return sum(community[a] == community[b] for a, b in pairs) / len(pairs)

    # citations are mostly within a community, random papers mostly are not
    positives = same_community((t.query, t.positive) for t in triplets)
    easy = same_community((t.query, t.negative) for t in triplets if t.kind == "easy")
    assert positives > easy + 0.2


def test_given_triplets_keep_ids_papers_and_kind():
    from sdr.corpus import Paper
    from sdr.samplers import given_triplets

    q, p, n, n2 = (Paper(i, f"title {i}") for i in ("q", "p", "n", "n2"))
    triplets, papers = given_triplets([(q, p, n), (q, p, n2)], kind="real", margin=2.0)
    assert [(t.query, t.positive, t.negative, t.kind, t.margin) for t in triplets] == \
        [("q", "p", "n", "real", 2.0), ("q", "p", "n2", "real", 2.0)]
    assert sorted(papers) == ["n", "n2", "p", "q"] and papers["n2"].title == "title n2"


@pytest.mark.parametrize("sampler", ["specter_triplets", "undirected_triplets", "contrastive_examples"])
def test_empty_graph_is_a_clear_error(sampler):
    import sdr.samplers

    with pytest.raises(ValueError, match=f"{sampler}: the citation graph has no edges"):
        getattr(sdr.samplers, sampler)(CitationGraph(), progress=False, verbose=False)
