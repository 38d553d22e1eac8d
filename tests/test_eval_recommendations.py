"""SciDocs recommendations: features, the position bug, the click metrics, training on a replica."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from sdr.evaluate import recommendations as rec
from sdr.evaluate import scidocs
from sdr.evaluate.embeddings import MissingEmbeddings

PAPERS = {
    "A": {"title": "Deep learning for graphs", "authors": ["x", "y"], "references": ["r1", "r2"],
          "cited_by": ["c1"], "year": 2010},
    "B": {"title": "Graphs for deep networks", "authors": ["y", "z"], "references": ["r2", "r3", "A"],
          "cited_by": ["c1", "c2"], "year": 2015},
    "C": {"title": "", "authors": [], "references": [], "cited_by": [], "year": None},
}
VECTORS = {"A": np.array([1.0, 0.0], dtype=np.float32), "B": np.array([1.0, 1.0], dtype=np.float32)}


def test_features_match_hand_computation():
    missing = MissingEmbeddings("recomm")
    features = rec.PairFeatures(PAPERS, VECTORS, missing)
    row = features.matrix([("A", "B")], np.array([3]), position_bug=False)[0]
    expected = [
        1 / 3,            # authors {x,y} vs {y,z}
        0.3,              # position 3 / 10
        1 / 7,            # tokens are case-sensitive: only "for" is shared among 7 distinct tokens
        1 / math.sqrt(2),  # cosine of (1,0) and (1,1)
        1 / 2,            # cited_by {c1} vs {c1,c2}
        1 / 4,            # references {r1,r2} vs {r2,r3,A}
        1.0,              # B cites A (B's references hold A)
        0.0,              # A does not cite B
        0.25,             # (2020 - 2015) / 20
        -0.25,            # (2010 - 2015) / 20
        math.log(3) / 10,  # B has two citations
    ]
    np.testing.assert_allclose(row, expected, rtol=1e-6)
    # The official reader overwrites the position with 0 (the bug reproduced by default).
    assert features.matrix([("A", "B")], np.array([3]), position_bug=True)[0][1] == 0.0
    # Unknown candidate: every metadata feature 0, zero vector -> cosine 0; the missing id is counted.
    ghost = features.matrix([("A", "ghost")], np.array([1]), position_bug=True)[0]
    assert np.all(ghost == 0.0)
    # Missing year and empty lists: 0, not an error.
    np.testing.assert_allclose(features.matrix([("A", "C")], np.array([1]), True)[0][8:], [0.0, 0.0, 0.0])
    assert missing.report() == {"count": 2, "examples": ["C", "ghost"]}


def test_oldness_is_clipped():
    papers = {"old": {**PAPERS["A"], "year": 1950}, "new": {**PAPERS["A"], "year": 2019}}
    features = rec.PairFeatures(papers, VECTORS)
    row = features.static("new", "old")
    assert row[8] == 1.0 and row[9] == 1.0  # (2020-1950)/20 and (2019-1950)/20 clipped at 1


def test_click_metrics_match_hand_computation():
    propensity = np.array([2.0, 1.0, 1.0]) * 3 / 4  # normalised to mean 1 -> [1.5, .75, .75]
    rows = [("q1", "a", ["a", "b", "c"]), ("q2", "f", ["d", "e", "f"]), ("q3", "h", ["g", "h"])]
    scores = [np.array([0.9, 0.5, 0.1]), np.array([0.8, 0.2, 0.5]), np.array([0.4, 0.4])]
    metrics = rec.ranking_metrics(rows, scores, propensity)
    # clicked ranked above 0, 1 and 0.5 (a tie counts half) papers; weights 1/1.5, 1/.75, 1/.75.
    ndcgs = [1.0, 1 / math.log2(3), 1 / math.log2(2.5)]
    weights = [2 / 3, 4 / 3, 4 / 3]
    assert metrics["ndcg"] == pytest.approx(sum(ndcgs) / 3)
    assert metrics["Adj-ndcg"] == pytest.approx(sum(w * n for w, n in zip(weights, ndcgs)) / sum(weights))
    assert metrics["Adj-Rprec/P@1"] == pytest.approx((2 / 3) / (10 / 3))  # only line 1 ranks the click first
    assert metrics["Rprec/P@1"] == pytest.approx(1 / 3)
    assert metrics["accuracy"] == pytest.approx(3.5 / 5)
    assert metrics["mrr"] == pytest.approx((1 + 0.5 + 1 / 1.5) / 3)


def test_triplets_and_the_position_bug_in_the_loss_weights():
    propensity = np.array([4.0, 2.0, 1.0, 1.0])
    features = rec.PairFeatures(PAPERS, VECTORS)
    rows = [("A", "B", ["C", "B", "A"])]
    buggy = rec.make_triplets(rows, features, propensity, position_bug=True)
    fixed = rec.make_triplets(rows, features, propensity, position_bug=False)
    assert buggy.positive.shape == (2, 11)  # clicked B against C and against A
    # Bug: position index round(0*10-1) = -1 -> the last propensity for every example.
    assert buggy.propensity.tolist() == [1.0, 1.0]
    assert fixed.propensity.tolist() == [2.0, 2.0]  # B was clicked at position 2
    assert fixed.negative[:, 1].tolist() == pytest.approx([0.1, 0.3])
    assert buggy.negative[:, 1].tolist() == [0.0, 0.0]


def test_readers_name_file_and_line(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text('query_id,clicked_id,result_ids\nq,b,"a,b,c"\nq,z,"a,b"\n')
    with pytest.raises(ValueError, match=r"train\.csv:3: clicked paper 'z' is not among the shown papers"):
        rec.read_clicks(path)
    path.write_text("header\nq,b\n")
    with pytest.raises(ValueError, match=r"train\.csv:2: expected"):
        rec.read_clicks(path)
    (tmp_path / "p.json").write_text('{"scores": [1, 0]}')
    with pytest.raises(ValueError, match=r"p\.json: 'scores' must be"):
        rec.read_propensity(tmp_path / "p.json")
    (tmp_path / "meta.json").write_text('{"A": {"title": "t"}}')
    with pytest.raises(ValueError, match=r"meta\.json: paper 'A' lacks"):
        rec.read_paper_features(tmp_path / "meta.json")
    with pytest.raises(FileNotFoundError, match="not found"):
        rec.read_clicks(tmp_path / "absent.csv")


def test_trains_on_a_replica_and_reports_adjusted_metrics(tmp_path):
    from test_eval_scidocs import community_embeddings, tiny_corpus

    from sdr.synthetic.scidocs import write_scidocs

    corpus = tiny_corpus(communities=8, per_community=24)
    out = write_scidocs(corpus, tmp_path / "replica", n_queries=5, progress=False)
    vectors = community_embeddings(corpus, noise=0.5)
    result = rec.evaluate(out, vectors, progress=False)
    details = result["details"]
    assert len(details["history"]) == 5 and details["train_triplets"] > 500
    assert details["history"][-1]["train_loss"] < details["history"][0]["train_loss"]
    # Ranking the clicked paper among 10: a random order gives adj-P@1 ≈ 10% and adj-NDCG ≈ 44
    # on this replica; the trained ranker learns the click signals and must do clearly better.
    assert result["recomm"]["adj-NDCG"] > 60 and result["recomm"]["adj-P@1"] > 25
    assert result["recomm"]["adj-NDCG"] == round(100 * details["Adj-ndcg"], 2)
    fixed = rec.evaluate(out, vectors, position_bug=False, progress=False)
    assert fixed["details"]["position_bug"] is False and 0 < fixed["recomm"]["adj-NDCG"] <= 100
    # The SciDocs evaluator runs the task when recomm/ is present, with the same numbers.
    metrics = scidocs.evaluate(out, vectors, progress=False)
    assert metrics["recomm"] == result["recomm"]
    assert scidocs.scidocs_average(metrics) == pytest.approx(
        np.mean([metrics[t][m] for t, m in scidocs.SCIDOCS_METRICS]))
    # Without the click data the default skips the task.
    shutil.rmtree(out / "recomm")
    assert "recomm" not in scidocs.evaluate(out, vectors, progress=False)
    json.dumps(result["details"])  # the details are JSON-serialisable for the results store
