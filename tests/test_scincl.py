"""Tests of the SciNCL recipe (sdr.methods.scincl) on embeddings whose neighbour ranks are known:
points on an arc of the unit circle, where the cosine order is the order along the arc."""

from __future__ import annotations

import numpy as np
import pytest

from sdr.graph import GraphEmbedding, GraphEmbeddingConfig
from sdr.methods import scincl


def arc_embedding(n: int = 120, comparator: str = "cos", seed: int = 0) -> GraphEmbedding:
    angles = np.sort(np.random.default_rng(seed).uniform(0, 1.5, n))  # distinct, no ties
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    return GraphEmbedding(ids=[f"p{i:03d}" for i in range(n)], vectors=vectors,
                          config=GraphEmbeddingConfig(dimension=2, comparator=comparator))


def arc_rank(embedding: GraphEmbedding, query: str, other: str) -> int:
    """Rank of `other` among the query's neighbours by angle (1 = nearest), computed without FAISS."""
    angles = np.arctan2(embedding.vectors[:, 1], embedding.vectors[:, 0])
    q = embedding.ids.index(query)
    gaps = np.abs(angles - angles[q])
    gaps[q] = np.inf
    order = np.argsort(gaps, kind="stable")
    return int(np.where(order == embedding.ids.index(other))[0][0]) + 1


def test_every_triplet_lies_in_its_band():
    embedding = arc_embedding()
    bands = scincl.Bands(k_pos=10, c_pos=5, k_hard=40, c_hard=2, c_easy=3)
    triplets, report = scincl.sample_triplets(embedding, bands, seed=1)
    assert len(triplets) == 5 * len(embedding.ids) and report.queries_used == len(embedding.ids)
    ranks = scincl.band_ranks(triplets, embedding, bands)
    assert ranks["positive_in_band"].all() and ranks["negative_in_band"].all()
    assert (ranks["kind"] == "hard").sum() == 2 * len(embedding.ids)
    assert ranks.loc[ranks["kind"] == "easy", "negative_rank"].eq(0).all()  # filtered: beyond max(k)
    # the ranks agree with the geometry, computed independently of FAISS
    for t in triplets[:40]:
        assert 5 < arc_rank(embedding, t.query, t.positive) <= 10
        if t.kind == "hard":
            assert 38 < arc_rank(embedding, t.query, t.negative) <= 40


def test_band_check_catches_a_wrong_triplet():
    embedding = arc_embedding()
    bands = scincl.Bands(k_pos=10, c_pos=5, k_hard=40, c_hard=2, c_easy=3)
    triplets, _ = scincl.sample_triplets(embedding, bands)
    wrong = [triplets[0].__class__(t.query, t.negative, t.positive, t.kind) for t in triplets[:5]]
    ranks = scincl.band_ranks(wrong, embedding, bands)
    assert not ranks["positive_in_band"].any()


def test_metric_follows_the_comparator():
    assert arc_embedding(comparator="dot").metric == "ip"
    assert arc_embedding(comparator="cos").metric == "cosine"


def test_scaled_bands():
    assert scincl.scaled_bands(400) == scincl.Bands(k_pos=10, c_pos=5, k_hard=60, c_hard=2, c_easy=3)
    assert scincl.scaled_bands(1_000_000) == scincl.PAPER_BANDS
    assert scincl.PAPER_BANDS == scincl.Bands(25, 5, 4000, 2, 3, True)
    assert scincl.PAPER_BANDS.margin == 4000 - 2 - 25
    with pytest.raises(ValueError, match="too small"):
        scincl.scaled_bands(12)


def test_collisions_vanish_with_a_wide_margin():
    """SciNCL A.8 / Fig. 5: a small sampling-induced margin collides, a wide one does not."""
    embedding = arc_embedding(n=150)
    sweep = scincl.collision_sweep(embedding, scincl.Bands(k_pos=10, c_pos=5, k_hard=40), [12, 14, 40, 80])
    collisions = dict(zip(sweep["k_hard"], sweep["collisions"]))
    assert collisions[12] > 0 and collisions[40] == 0 and collisions[80] == 0
    assert collisions[12] >= collisions[14]


# ------------------------------------------------------------------ the paper profile's training data


def test_cite_prediction_triplets_come_through_the_registry_download_path(tmp_path, monkeypatch):
    """SPECTER's and SciNCL's `paper` profile trains on SciRepEval's cite_prediction triplets; the
    registry downloads them (here from a file:// copy in the layout of specter_small.json, as JSONL)
    and the SciRepEval triplet reader reads what was downloaded."""
    import dataclasses
    import json

    from sdr import datasets
    from sdr.corpus import read_scirepeval_triplets

    entry = datasets.get("scirepeval_cite_prediction")
    assert entry.files[0].url == ("https://ai2-s2-research-public.s3-us-west-2.amazonaws.com/scirepeval/train/"
                                  "cite_prediction/train.jsonl")
    records = [{"query": {"corpus_id": i, "title": f"Query {i}", "abstract": "a query"},
                "pos": {"corpus_id": 100 + i, "title": f"Cited {i}", "abstract": "a cited paper"},
                "neg": {"corpus_id": 200 + i, "title": f"Other {i}", "abstract": "another paper"}} for i in range(3)]
    upstream = tmp_path / "upstream" / "train.jsonl"
    upstream.parent.mkdir()
    upstream.write_text("".join(json.dumps(r) + "\n" for r in records))
    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    local = dataclasses.replace(entry, files=(dataclasses.replace(entry.files[0], url=upstream.as_uri()),))
    folder = datasets.resolve(local, progress=False)
    assert folder == tmp_path / "cache" / "scirepeval_cite_prediction"
    triplets, report = read_scirepeval_triplets(folder / "train.jsonl")
    assert [(q.title, p.title, n.title) for q, p, n in triplets] == [(f"Query {i}", f"Cited {i}", f"Other {i}")
                                                                     for i in range(3)]


@pytest.mark.notebook
def test_chapter_embeds_and_samples_the_citations_of_real_specter_triplets(shared_data, tmp_path, monkeypatch):
    """The `paper` profile's path, on the real sample: the chapter builds its graph from the (query → positive)
    citations of SciRepEval's SPECTER triplets instead of the synthetic corpus, embeds it with BigGraph, samples
    kNN bands on it and trains on those papers' texts. (Evaluation stays on the replica: real SciDocs is a
    download. Its gain bar is off: 200 triplets check the path, not learning.)"""
    import json

    from sdr import book

    sample = shared_data / "scirepeval" / "sample_data" / "specter_small.json"
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    overrides = {"triplets_file": str(sample), "use_real_data": False, "n_papers": 200, "n_eval_queries": 10,
                 "max_queries": 24, "max_length": 32, "csfcube_max_length": 32, "csfcube_replica_queries": 6,
                 "min_gain": -100.0}
    book.run_chapter("scincl", "smoke", overrides, output_dir=tmp_path / "pages", progress=False, force=True)
    record = json.loads((tmp_path / "results" / "scincl" / "smoke.json").read_text())
    assert record["sources"][0].startswith("specter_small.json: 200 citations (query → positive) of 200 SPECTER")
    sampling = book.from_jsonable(record["tables"]["sampling"])
    # every sampled query is a query or positive of the real triplets (numeric corpus ids, not synthetic p00042)
    assert sampling.loc["SciNCL (kNN bands)", "triplets"] > 0
    assert sampling.loc["SciNCL (kNN bands)", "queries used"] <= 24
    link = book.from_jsonable(record["tables"]["link prediction"])
    assert (link["reported by"] == "this book (smoke)").sum() == 1
