"""MDCR evaluator and replica: hand-computed metrics, scores file vs embeddings, bad input, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from sdr.evaluate import mdcr
from sdr.synthetic.mdcr import write_mdcr

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "mdcr"

# Art/qa: ranking t1 n1 t2 n2 n3, relevant t1 (also listed under bm25) and t2.
# Art/qb: u1 ranked last of 6.  Biology/qc: v1 first of 2.
ART_NDCG = (1.5 / (1 + 1 / math.log2(3)) + 1 / math.log2(7)) / 2
EXPECTED = {
    "fields": {
        "Art": {"map": 50.0, "ndcg": round(100 * ART_NDCG, 4), "recall_5": 50.0},
        "Biology": {"map": 100.0, "ndcg": 100.0, "recall_5": 100.0},
    },
    "avg": {"map": 75.0, "ndcg": round((round(100 * ART_NDCG, 4) + 100) / 2, 4), "recall_5": 75.0},
}


def test_scores_file_matches_hand_computation():
    result = mdcr.evaluate(FIXTURE, scores=FIXTURE / "scores_test.json")
    assert result["fields"] == EXPECTED["fields"]
    assert result["avg"] == EXPECTED["avg"] == {"map": 75.0, "ndcg": 81.8982, "recall_5": 75.0}
    assert result["missing_scores"] == {"count": 0, "examples": []}


def test_embeddings_give_the_same_ranking_and_count_missing_ids():
    result = mdcr.evaluate(FIXTURE, embeddings=FIXTURE / "embeddings.jsonl")
    # n3 (last-ranked, non-relevant) has no embedding: dropped from the run, metrics unchanged.
    assert result["fields"] == EXPECTED["fields"]
    assert result["missing_embeddings"] == {"count": 1, "examples": ["n3"]}


def test_relevance_is_membership_in_true():
    benchmark = mdcr.read_benchmark(FIXTURE / "mdcr_test.json")
    qrels = mdcr.qrels_by_field(benchmark)
    assert qrels["Art"]["qa"] == {"n1": 0, "t1": 1, "n2": 0, "n3": 0, "t2": 1}
    # The official 19 fields come first, in evaluate.py's order.
    assert mdcr.field_order({"Sociology": {}, "Zoo": {}, "Art": {}}) == ["Art", "Sociology", "Zoo"]


def test_missing_scores_are_counted(capsys):
    scores = json.loads((FIXTURE / "scores_test.json").read_text())
    del scores["qc_w1"]
    result = mdcr.evaluate(FIXTURE, scores=scores)
    assert result["missing_scores"] == {"count": 1, "examples": ["qc_w1"]}
    assert result["fields"]["Biology"]["recall_5"] == 100.0
    assert "1 query-candidate pairs have no score" in capsys.readouterr().err


def test_bad_input_names_file_field_and_query(tmp_path):
    (tmp_path / "mdcr_test.json").write_text(json.dumps({"Art": {"q1": {"bm25": ["a"]}}}))
    with pytest.raises(ValueError, match=r"mdcr_test\.json: field 'Art', query 'q1': expected candidate lists"):
        mdcr.evaluate(tmp_path, scores={"q1_a": 1.0})
    (tmp_path / "mdcr_test.json").write_text(json.dumps({"Art": {"q1": {"true": ["a"], "bm52": []}}}))
    with pytest.raises(ValueError, match="unknown candidate types"):
        mdcr.evaluate(tmp_path, scores={"q1_a": 1.0})
    (tmp_path / "mdcr_test.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"mdcr_test\.json:1: not valid JSON"):
        mdcr.evaluate(tmp_path, scores={})
    (tmp_path / "s.json").write_text(json.dumps({"q1_a": "high"}))
    with pytest.raises(ValueError, match=r"s\.json: score of 'q1_a' is \"high\"; expected a finite number"):
        mdcr.read_scores(tmp_path / "s.json")
    with pytest.raises(FileNotFoundError, match=r"mdcr_val\.json: MDCR split not found"):
        mdcr.evaluate(tmp_path, scores={}, split="val")
    with pytest.raises(ValueError, match="exactly one of embeddings or scores"):
        mdcr.evaluate(tmp_path)


def test_cli_contract(capsys):
    from sdr.cli import main

    assert main(["evaluate", "mdcr", "--data-dir", str(FIXTURE),
                 "--embeddings", str(FIXTURE / "embeddings.jsonl"), "--json"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["fields"] == EXPECTED["fields"] and output["avg"] == EXPECTED["avg"]
    assert main(["evaluate", "mdcr", "--data-dir", str(FIXTURE), "--scores",
                 str(FIXTURE / "scores_test.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["avg"] == EXPECTED["avg"]


def test_replica_layout_and_oracle_scores(tmp_path):
    from test_eval_scidocs import tiny_corpus

    corpus = tiny_corpus()
    out = write_mdcr(corpus, tmp_path / "mdcr", n_queries_per_field=4, progress=False)
    for split in ("val", "test"):
        benchmark = mdcr.read_benchmark(out / f"mdcr_{split}.json")
        texts = {json.loads(line)["paper_id"] for line in (out / f"mdcr_{split}_data.jsonl").open()}
        assert set(benchmark) == set(corpus.fields)
        oracle = {}
        for field, queries in benchmark.items():
            assert len(queries) == 4
            for query, lists in queries.items():
                assert set(lists) == set(mdcr.CANDIDATE_TYPES)
                references = corpus.graph.references(query)
                assert set(lists["true"]) <= references and len(lists["true"]) >= 2
                for name, candidates in lists.items():
                    assert query in texts and set(candidates) <= texts
                    if name != "true":
                        assert not set(candidates) & references, name
                    for candidate in candidates:
                        oracle[f"{query}_{candidate}"] = float(candidate in references)
                    assert all(corpus.papers[c].fields[0] == field for c in candidates)
        # Scoring every cited paper above every other candidate is perfect in every field.
        result = mdcr.evaluate(out, scores=oracle, split=split)
        assert result["avg"]["map"] == 100.0 and result["avg"]["ndcg"] == 100.0
    stats = json.loads((out / "mdcr_stats.json").read_text())
    assert all(f["queries_short"] == 0 for f in stats["fields"].values())


def test_replica_is_deterministic_and_embeddings_rank_better_than_chance(tmp_path):
    from test_eval_scidocs import community_embeddings, tiny_corpus

    corpus = tiny_corpus()
    a = write_mdcr(corpus, tmp_path / "a", seed=2, n_queries_per_field=8, progress=False)
    b = write_mdcr(corpus, tmp_path / "b", seed=2, n_queries_per_field=8, progress=False)
    for name in ("mdcr_test.json", "mdcr_val_data.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    good = mdcr.evaluate(a, embeddings=community_embeddings(corpus, noise=0.3))
    generators = [np.random.default_rng(seed) for seed in range(3)]
    chance = np.mean([
        mdcr.evaluate(a, embeddings={pid: rng.normal(size=16) for pid in corpus.papers})["avg"]["map"]
        for rng in generators
    ])
    # Citations stay inside the community here, so community embeddings rank them above the
    # bm25/most-cited/random candidates (not above the same-community scincl/specter ones).
    assert good["avg"]["map"] > chance + 5


def test_replica_from_the_synthetic_generator(tmp_path):
    from sdr.synthetic import make_corpus

    corpus = make_corpus(n_papers=300, seed=0)
    out = write_mdcr(corpus, tmp_path / "mdcr", n_queries_per_field=5, progress=False)
    benchmark = mdcr.read_benchmark(out / "mdcr_test.json")
    assert set(benchmark) == set(corpus.fields)
    assert all(len(queries) == 5 for queries in benchmark.values())
