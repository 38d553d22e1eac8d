"""SciDocs evaluator and replica: hand-computed metrics on the official-layout fixture, bad input, CLI."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sdr.corpus import CitationGraph, Paper
from sdr.evaluate import scidocs
from sdr.evaluate.embeddings import read_embeddings, write_embeddings
from sdr.synthetic.scidocs import write_scidocs

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "scidocs"


def tiny_corpus(seed: int = 0, communities: int = 6, per_community: int = 16) -> SimpleNamespace:
    """A small corpus with the attributes of ``sdr.synthetic.SyntheticCorpus`` the replica reads."""
    rng = np.random.default_rng(seed)
    fields = ["Biology", "Computer Science", "Physics"]
    papers: dict[str, Paper] = {}
    for index in range(communities * per_community):
        community = index % communities
        field = fields[community % len(fields)]
        pid = f"p{index:05d}"
        papers[pid] = Paper(
            pid, f"Paper {index} on topic {community}", f"Abstract {index} of community {community}.",
            year=2000 + index // communities, fields=[field], venue=f"Venue {community}",
            authors=[f"Author {community}-{rng.integers(4)}", f"Author x{rng.integers(30)}"],
            metadata={"community": f"c{community}", "mesh": f"M{community % 2}" if index % 3 == 0 else None},
        )
    ids = sorted(papers)
    graph = CitationGraph()
    for i, pid in enumerate(ids):
        same = [q for q in ids[:i] if papers[q].metadata["community"] == papers[pid].metadata["community"]]
        for cited in rng.permutation(same)[:7]:
            graph.add(pid, str(cited), ["background"], {"background": int(rng.integers(1, 5))})
    coviews, coreads = [], []
    for _ in range(6 * len(ids)):
        a = ids[rng.integers(len(ids))]
        same = [q for q in ids if papers[q].metadata["community"] == papers[a].metadata["community"] and q != a]
        coviews.append((a, same[rng.integers(len(same))]))
        coreads.append((a, same[rng.integers(len(same))]))
    return SimpleNamespace(papers=papers, graph=graph, fields=fields, coviews=coviews, coreads=coreads)


def community_embeddings(corpus, noise: float, seed: int = 0, dim: int = 16) -> dict[str, np.ndarray]:
    """Embeddings that know the community (plus Gaussian noise): a good model when noise is small."""
    rng = np.random.default_rng(seed)
    centres = {}
    vectors = {}
    for pid, paper in corpus.papers.items():
        community = paper.metadata["community"]
        if community not in centres:
            centres[community] = rng.normal(size=dim) * 3
        vectors[pid] = (centres[community] + rng.normal(scale=noise, size=dim)).astype(np.float32)
    return vectors


# ------------------------------------------------------------------------ hand-computed metrics


def test_fixture_metrics_match_hand_computation(capsys):
    metrics = scidocs.evaluate(FIXTURE, FIXTURE / "embeddings.jsonl", progress=False)
    # MAG: predictions [0,1,1,1,2,0] vs truth [0,0,1,1,2,2]; F1 per class 1/2, 4/5, 2/3 -> 65.56.
    # The last test paper has no embedding: zero vector -> all decision values 0 -> first class (0).
    assert metrics["mag"] == {"f1": 65.56}
    # MeSH labels 5 and 10 are integers (as pd.read_csv reads them): the zero vector goes to class 5.
    # predictions [5,10,5] vs [5,10,10]: F1 2/3 and 2/3.
    assert metrics["mesh"] == {"f1": 66.67}
    # co-view: ranking a(1) b(0) c(1): AP (1 + 2/3)/2; nDCG 1.5/(1 + 1/log2 3).
    assert metrics["co-view"] == {"map": 83.33, "ndcg": 91.97}
    # co-read: candidate f (relevant) has no embedding: dropped from the run, still in the qrels.
    assert metrics["co-read"] == {"map": 50.0, "ndcg": 61.31}
    # cite: mean of the two queries above; q3 has no embedding and is not averaged.
    assert metrics["cite"] == {"map": round(100 * (5 / 6 + 0.5) / 2, 2),
                               "ndcg": round(100 * (1.5 / (1 + 1 / np.log2(3)) + 1 / (1 + 1 / np.log2(3))) / 2, 2)}
    # co-cite: distances 1.000001 and 1.000004 both round to 1.0; trec_eval breaks the tie by
    # descending doc id, so the non-relevant "h" is ranked first.
    assert metrics["co-cite"] == {"map": 50.0, "ndcg": 63.09}
    assert metrics["missing_embeddings"] == {"count": 4, "examples": ["f", "mag-te-5", "mesh-te-2", "q3"]}
    assert "recomm" not in metrics
    assert "4 ids have no embedding" in capsys.readouterr().err


def test_rounding_to_five_decimals_decides_ties():
    qrels = {"q": {"g": 1, "h": 0}}
    vectors = {"q": np.zeros(1), "g": np.array([1.000001]), "h": np.array([1.000004])}
    assert scidocs.trec_metrics(qrels, scidocs.l2_run(qrels, vectors))["map"] == 50.0
    assert scidocs.trec_metrics(qrels, scidocs.l2_run(qrels, vectors, decimals=None))["map"] == 100.0


def test_vectorised_run_equals_per_query_loop():
    rng = np.random.default_rng(3)
    vectors = {f"d{i}": rng.normal(size=8) for i in range(60)}
    qrels = {f"d{q}": {f"d{c}": int(rng.integers(2)) for c in rng.choice(60, 12, replace=False) if c != q}
             for q in range(10)}
    run = scidocs.l2_run(qrels, vectors, chunk_pairs=7)
    for query, candidates in qrels.items():
        for candidate in candidates:
            expected = np.round(-np.linalg.norm(vectors[query] - vectors[candidate]), 5)
            assert run[query][candidate] == expected


def test_average_needs_all_twelve_metrics():
    merged: dict = {}
    for i, (task, measure) in enumerate(scidocs.SCIDOCS_METRICS):
        merged.setdefault(task, {})[measure] = 10.0 * i
    assert scidocs.scidocs_average(merged) == pytest.approx(55.0)
    with pytest.raises(KeyError, match="recomm/adj-NDCG"):
        scidocs.scidocs_average({k: v for k, v in merged.items() if k != "recomm"})


# ---------------------------------------------------------------------------------- bad input


def test_bad_qrel_line_names_file_and_line(tmp_path):
    data = tmp_path / "scidocs"
    shutil.copytree(FIXTURE, data)
    (data / "cite" / "test.qrel").write_text("q1 0 a 1\nq1 0 b\n")
    with pytest.raises(ValueError, match=r"cite/test\.qrel:2: expected 'query-id iteration paper-id relevance'"):
        scidocs.evaluate(data, FIXTURE / "embeddings.jsonl", progress=False)
    (data / "cite" / "test.qrel").write_text("q1 0 a yes\n")
    with pytest.raises(ValueError, match=r"test\.qrel:1: relevance must be an integer"):
        scidocs.read_qrels(data / "cite" / "test.qrel")


def test_missing_files_and_bad_csv(tmp_path):
    with pytest.raises(FileNotFoundError, match="SciDocs data directory not found"):
        scidocs.evaluate(tmp_path / "nowhere", FIXTURE / "embeddings.jsonl")
    data = tmp_path / "scidocs"
    shutil.copytree(FIXTURE, data)
    (data / "mesh" / "test.csv").unlink()
    with pytest.raises(FileNotFoundError, match=r"mesh/test\.csv: classification split not found"):
        scidocs.evaluate(data, FIXTURE / "embeddings.jsonl", progress=False)
    (data / "mesh" / "test.csv").write_text("pid,class_label\nx,1,extra\n")
    with pytest.raises(ValueError, match=r"mesh/test\.csv:2: expected 'pid,class_label'"):
        scidocs.read_labels_csv(data / "mesh" / "test.csv")
    with pytest.raises(FileNotFoundError, match="recommendations data not found"):
        scidocs.evaluate(FIXTURE, FIXTURE / "embeddings.jsonl", recomm=True, progress=False)


def test_bad_embeddings_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"paper_id": "a", "embedding": [1, 2]}\n{"paper_id": "b"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2"):
        scidocs.evaluate(FIXTURE, bad, progress=False)


# ---------------------------------------------------------------------------------------- CLI


def test_cli_contract(capsys):
    from sdr.cli import main

    code = main(["evaluate", "scidocs", "--data-dir", str(FIXTURE),
                 "--embeddings", str(FIXTURE / "embeddings.jsonl"), "--json"])
    assert code == 0
    output = json.loads(capsys.readouterr().out)
    assert output["mag"] == {"f1": 65.56} and output["co-cite"] == {"map": 50.0, "ndcg": 63.09}
    assert set(output) == {"mag", "mesh", "co-view", "co-read", "cite", "co-cite", "missing_embeddings"}


# ------------------------------------------------------------------------------------ replica


def _qrels_by_query(path: Path) -> dict[str, dict[str, int]]:
    return scidocs.read_qrels(path)


def test_replica_layout_and_formats(tmp_path):
    corpus = tiny_corpus()
    out = write_scidocs(corpus, tmp_path / "replica", seed=1, n_queries=10, progress=False)
    for name in ("paper_metadata_mag_mesh.json", "paper_metadata_view_cite_read.json",
                 "paper_metadata_recomm.json", "recomm/propensity_scores.json"):
        assert (out / name).exists(), name
    for task in ("mag", "mesh"):
        for split in ("train", "val", "test"):
            rows = scidocs.read_labels_csv(out / task / f"{split}.csv")
            assert rows
    # MAG labels are the index of the paper's sub-field (community), or of its field with mag_level="field".
    communities = sorted({p.metadata["community"] for p in corpus.papers.values()})
    for pid, label in scidocs.read_labels_csv(out / "mag" / "test.csv"):
        assert communities[int(label)] == corpus.papers[pid].metadata["community"]
    fields = write_scidocs(corpus, tmp_path / "fields", seed=1, n_queries=10, mag_level="field", progress=False)
    for pid, label in scidocs.read_labels_csv(fields / "mag" / "test.csv"):
        assert corpus.fields[int(label)] == corpus.papers[pid].fields[0]
    with pytest.raises(ValueError, match="mag_level"):
        write_scidocs(corpus, tmp_path / "bad", mag_level="topic", progress=False)
    view_cite_read = json.loads((out / "paper_metadata_view_cite_read.json").read_text())
    for folder in ("cite", "cocite", "coview", "coread"):
        for split in ("val", "test"):
            qrels = _qrels_by_query(out / folder / f"{split}.qrel")
            assert len(qrels) == 10
            for query, candidates in qrels.items():
                assert Counter(candidates.values()) == Counter({1: 5, 0: 25})
                assert query in view_cite_read and all(c in view_cite_read for c in candidates)
                if folder == "cite":
                    positives = {c for c, rel in candidates.items() if rel == 1}
                    negatives = set(candidates) - positives
                    assert positives <= corpus.graph.references(query)
                    assert not negatives & corpus.graph.references(query)
    stats = json.loads((out / "replica_stats.json").read_text())
    assert stats["cite"]["queries"] == {"test": 10, "val": 10}
    recomm_meta = json.loads((out / "paper_metadata_recomm.json").read_text())
    lines = (out / "recomm" / "train.csv").read_text().splitlines()
    assert len(lines) > 1
    import csv

    for query, clicked, shown in csv.reader(lines[1:]):
        shown_ids = shown.split(",")
        assert len(shown_ids) == 10 and clicked in shown_ids and query not in shown_ids
        assert set(recomm_meta[query]) >= {"authors", "references", "cited_by", "year", "title"}
    scores = json.loads((out / "recomm" / "propensity_scores.json").read_text())["scores"]
    assert len(scores) == 10 and scores == sorted(scores, reverse=True)


def test_replica_is_deterministic(tmp_path):
    corpus = tiny_corpus()
    a = write_scidocs(corpus, tmp_path / "a", seed=3, n_queries=5, progress=False)
    b = write_scidocs(corpus, tmp_path / "b", seed=3, n_queries=5, progress=False)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for name in files:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_replica_separates_good_from_random_embeddings(tmp_path):
    corpus = tiny_corpus()
    out = write_scidocs(corpus, tmp_path / "replica", n_queries=10, include_recomm=False, progress=False)
    good = community_embeddings(corpus, noise=0.3)
    rng = np.random.default_rng(1)
    random = {pid: rng.normal(size=16).astype(np.float32) for pid in corpus.papers}
    path = write_embeddings(tmp_path / "good.jsonl", good)
    good_metrics = scidocs.evaluate(out, path, progress=False)
    random_metrics = scidocs.evaluate(out, random, progress=False)
    assert good_metrics["missing_embeddings"]["count"] == 0
    for task in ("co-view", "co-read", "cite", "co-cite"):
        # Every positive is in the query's community; about 1 negative in 6 is too (random
        # negatives), so community-only embeddings rank most, not all, positives first.
        assert good_metrics[task]["map"] > 60
        assert random_metrics[task]["map"] < 45
    assert good_metrics["mag"]["f1"] == 100.0
    assert random_metrics["mag"]["f1"] < 70
    assert read_embeddings(path).keys() == good.keys()


def test_replica_from_the_synthetic_generator(tmp_path):
    from sdr.synthetic import make_corpus

    corpus = make_corpus(n_papers=300, seed=0)
    out = write_scidocs(corpus, tmp_path / "replica", n_queries=20, progress=False)
    stats = json.loads((out / "replica_stats.json").read_text())
    for folder in ("cite", "cocite", "coview", "coread"):
        assert stats[folder]["queries"] == {"test": 20, "val": 20}, folder
    to_embed = scidocs.papers_to_embed(out)
    assert {"title", "abstract"} <= set(next(iter(to_embed.values())))
    assert stats["mesh"]["rows"] > 0 and stats["recomm"]["queries"]["test"] > 0
    vectors = {pid: v for pid, v in community_embeddings(corpus, noise=0.3).items() if pid in to_embed}
    metrics = scidocs.evaluate(out, vectors, recomm=False, progress=False)
    assert metrics["missing_embeddings"]["count"] == 0  # the metadata files list every needed paper
    # community embeddings know each paper's sub-field, the MAG class of the replica
    assert metrics["mag"]["f1"] > 90
    assert all(metrics[task]["ndcg"] > 70 for task in scidocs.PROXIMITY_TASKS)


def test_read_papers_returns_papers_with_title_and_abstract(tmp_path):
    import json

    from sdr.evaluate.scidocs import read_papers

    (tmp_path / "paper_metadata_mag_mesh.json").write_text(json.dumps(
        {"a": {"paper_id": "a", "title": "Alpha", "abstract": "About alpha."},
         "b": {"paper_id": "b", "title": "Beta", "abstract": None}}))
    papers = read_papers(tmp_path)
    assert papers["a"].text(sep=" | ") == "Alpha | About alpha."
    assert papers["b"].abstract == "" and papers["b"].title == "Beta"
