"""BM25 and TF-IDF baselines: hand-computed scores, pool ranking, bad input, and real CSFCube."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from sdr import baselines

DOCS = ["cat cat dog", "dog bird", "fish"]  # lengths 3, 2, 1 (avgdl 2); no stop words
REAL = Path(os.environ.get("SDR_DATA", "/nonexistent")) / "csfcube"


def test_bm25_by_hand():
    # bm25s "lucene": idf = ln(1 + (N - df + .5) / (df + .5)); tf / (tf + k1 (1 - b + b dl / avgdl)).
    scores = baselines.bm25_scores(["cat", "dog", "zebra"], DOCS)
    idf_cat, idf_dog = math.log(1 + 2.5 / 1.5), math.log(1 + 1.5 / 2.5)
    norm = {0: 1 - 0.75 + 0.75 * 3 / 2, 1: 1.0, 2: 1 - 0.75 + 0.75 * 1 / 2}
    assert scores[0].tolist() == pytest.approx([idf_cat * 2 / (2 + 1.5 * norm[0]), 0.0, 0.0], rel=1e-6)
    assert scores[1].tolist() == pytest.approx(
        [idf_dog * 1 / (1 + 1.5 * norm[0]), idf_dog * 1 / (1 + 1.5 * norm[1]), 0.0], rel=1e-6)
    assert scores[2].tolist() == [0.0, 0.0, 0.0]  # unknown words score nothing


def test_tfidf_by_hand():
    # scikit-learn: smooth idf = ln((1 + n) / (1 + df)) + 1, sublinear tf = 1 + ln(tf), L2 rows.
    scores = baselines.tfidf_scores(["cat"], DOCS)
    cat = (1 + math.log(2)) * (math.log(4 / 2) + 1)
    dog = 1 * (math.log(4 / 3) + 1)
    assert scores[0, 0] == pytest.approx(cat / math.hypot(cat, dog))
    assert scores[0, 1:].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("method", baselines.METHODS)
def test_rank_pools_orders_by_score_and_keeps_pool_order_on_ties(method):
    texts = {"d0": DOCS[0], "d1": DOCS[1], "d2": DOCS[2], "d3": "fish"}
    ranked = baselines.rank_pools({"q": "dog"}, texts, {"q": ["d2", "d1", "d3", "d0"]}, method=method,
                                  progress=False)
    order = [c for c, _ in ranked["q"]]
    assert order[:2] == ["d1", "d0"]  # the shorter document with "dog" first
    assert order[2:] == ["d2", "d3"]  # zero scores: pool order kept
    scores = [s for _, s in ranked["q"]]
    assert scores == sorted(scores, reverse=True)


def test_bad_input():
    with pytest.raises(ValueError, match="unknown baseline 'bm26'"):
        baselines.rank_pools({"q": "x"}, {"a": "x"}, {"q": ["a"]}, method="bm26")
    with pytest.raises(ValueError, match=r"bm25: 1 pooled candidates have no text, e.g. \['b'\]"):
        baselines.rank_pools({"q": "x"}, {"a": "x"}, {"q": ["a", "b"]}, method="bm25")
    with pytest.raises(ValueError, match=r"tfidf: 1 queries have no text"):
        baselines.rank_pools({}, {"a": "x"}, {"q": ["a"]}, method="tfidf")


@pytest.mark.skipif(not (REAL / "evaluation_splits.json").exists(), reason="needs $SDR_DATA/csfcube")
def test_lexical_baselines_on_real_csfcube_beat_a_random_order():
    from sdr.evaluate import csfcube

    papers = csfcube.read_csfcube_papers(REAL)
    texts = {pid: p.text(sep=" ") for pid, p in papers.items()}
    rng = np.random.default_rng(0)
    results = {}
    for method in ("bm25", "tfidf", "random"):
        ranked = {}
        for facet in csfcube.FACETS:
            pools = csfcube.judged_pools(REAL, facet)
            if method == "random":
                ranked[facet] = {q: [pool[i] for i in rng.permutation(len(pool))] for q, pool in pools.items()}
            else:
                ranked[facet] = baselines.rank_pools({q: texts[q] for q in pools}, texts, pools, method=method,
                                                     progress=False)
        results[method] = csfcube.evaluate(REAL, ranked=ranked)["test"]["all"]
    for method in ("bm25", "tfidf"):
        assert results[method]["map"] > results["random"]["map"] + 0.05
        assert results[method]["ndcg"] > results["random"]["ndcg"]
