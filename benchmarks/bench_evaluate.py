"""Speed of the evaluation harness against the same metrics computed naively on the same inputs.

For each benchmark the harness and a plain-Python reference run on identical inputs; the script
records the largest absolute difference between their numbers and the wall time of each:

* CSFCube from embeddings: vectorised L2 ranking (one matrix product per query) + the metrics,
  vs a per-candidate ``scipy.spatial.distance.euclidean`` loop and ``sorted`` (the official
  pipelines' way), both scored by the official per-query metrics;
* sentence retrieval (CSAbstruct-sized, 1,349 × 384): pytorch-metric-learning's AccuracyCalculator
  (faiss k-NN) vs a double loop;
* paragraph retrieval (2,000 chunks): blocked distance matrices vs a double loop;
* pytrec_eval: one call for a whole task (1,000 queries × 30 candidates) vs one call per query.

Usage: ``python benchmarks/bench_evaluate.py [--quick]``; raw output goes to
``benchmarks/results/evaluate.txt``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "evaluate.txt"


def timed(function, *args, repeat: int = 1, **kwargs):
    """Best wall time over ``repeat`` runs and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best, result


def csfcube_inputs():
    """Real CSFCube when $SDR_DATA has it, else the synthetic replica; random 768-d embeddings."""
    from sdr.evaluate import csfcube

    data = Path(os.environ.get("SDR_DATA", "/nonexistent")) / "csfcube"
    source = "real CSFCube ($SDR_DATA)"
    if not (data / "evaluation_splits.json").exists():
        from sdr.synthetic import make_corpus
        from sdr.synthetic.csfcube import write_csfcube

        data = write_csfcube(make_corpus(n_papers=2000, seed=0), Path(tempfile.mkdtemp()) / "csfcube",
                             n_queries=34, pool_size=120)
        source = "synthetic CSFCube replica"
    ids = {c for f in csfcube.FACETS for pool in csfcube.read_annotations(data, f).values() for c in pool}
    ids |= {q for f in csfcube.FACETS for q in csfcube.read_annotations(data, f)}
    rng = np.random.default_rng(0)
    return data, {pid: rng.normal(size=768).astype(np.float32) for pid in sorted(ids)}, source


def csfcube_naive(data, embeddings):
    """Per-candidate scipy distances and sorted(), then the same per-query metrics and fold means."""
    from scipy.spatial.distance import euclidean

    from sdr.evaluate import csfcube

    annotations = {f: csfcube.read_annotations(data, f) for f in csfcube.FACETS}
    splits = csfcube.read_splits(data)
    per_query = {}
    for facet in csfcube.FACETS:
        for query, judged in annotations[facet].items():
            scored = [(c, euclidean(embeddings[query], embeddings[c])) for c in judged if c != query]
            ranked = [c for c, _ in sorted(scored, key=lambda pair: pair[1])]
            per_query[f"{query}_{facet}"] = csfcube.query_metrics([judged[c] for c in ranked])
    return {split: {facet: csfcube.aggregate(per_query, splits, facet, split)
                    for facet in (*csfcube.FACETS, csfcube.AGGREGATE)} for split in csfcube.SPLITS}


def paragraphs_naive(vectors, paper_ids, ks=(1, 3)):
    hits, queries = {k: 0 for k in ks}, 0
    for q in range(len(paper_ids)):
        if sum(1 for p in paper_ids if p == paper_ids[q]) < 2:
            continue
        queries += 1
        order = sorted((float(np.linalg.norm(vectors[q] - vectors[j])), j) for j in range(len(paper_ids)) if j != q)
        for k in ks:
            hits[k] += any(paper_ids[j] == paper_ids[q] for _, j in order[:k])
    return {f"recall@{k}": hits[k] / queries for k in ks}


def naive_map_ndcg(qrels, run):
    """trec_eval's map and ndcg (full list) computed in Python, query by query."""
    maps, ndcgs = [], []
    for query, docs in run.items():
        # trec_eval's order: score descending, ties by document id descending
        ranked = sorted(docs, key=lambda d: (docs[d], d), reverse=True)
        rels = [qrels[query].get(d, 0) for d in ranked]
        relevant = sum(1 for r in qrels[query].values() if r > 0)
        hits, precision_sum = 0, 0.0
        for i, r in enumerate(rels, start=1):
            if r > 0:
                hits += 1
                precision_sum += hits / i
        maps.append(precision_sum / relevant if relevant else 0.0)
        dcg = sum(r / np.log2(i + 1) for i, r in enumerate(rels, start=1))
        ideal = sorted(qrels[query].values(), reverse=True)
        idcg = sum(r / np.log2(i + 1) for i, r in enumerate(ideal, start=1))
        ndcgs.append(dcg / idcg if idcg else 0.0)
    return {"map": float(np.mean(maps)), "ndcg": float(np.mean(ndcgs))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs (a smoke run)")
    args = parser.parse_args()
    lines = [f"# bench_evaluate · {time.strftime('%Y-%m-%d %H:%M:%S')} · python {platform.python_version()} · "
             f"{platform.machine()} · {os.cpu_count()} CPUs{' · --quick' if args.quick else ''}",
             f"{'benchmark':<36}{'input':<44}{'harness s':>10}{'naive s':>10}{'speed-up':>10}  max |diff|"]

    def record(name, size, fast, slow, diff):
        lines.append(f"{name:<36}{size:<44}{fast:>10.3f}{slow:>10.3f}{slow / fast:>9.1f}x  {diff:.1e}")
        print(lines[-1], flush=True)

    print("\n".join(lines), flush=True)

    # --- CSFCube
    from sdr.evaluate import csfcube

    data, embeddings, source = csfcube_inputs()
    fast, harness = timed(csfcube.evaluate, data, embeddings=embeddings, repeat=3)
    slow, naive = timed(csfcube_naive, data, embeddings)
    same = max(abs(harness[s][f][m] - naive[s][f][m]) for s in naive for f in naive[s] for m in naive[s][f])
    record("csfcube from embeddings", f"{source}, 768-d", fast, slow, same)

    # --- sentences
    from sdr.evaluate import sentences

    rng = np.random.default_rng(1)
    n = 400 if args.quick else 1349
    labels = rng.choice(["background", "method", "result", "objective", "other"], size=n,
                        p=[0.37, 0.31, 0.16, 0.11, 0.05])
    centres = rng.normal(size=(5, 384))
    vectors = rng.normal(size=(n, 384)) + 0.3 * centres[np.unique(labels, return_inverse=True)[1]]
    sentences.evaluate(vectors[:50], labels[:50])  # warm-up: faiss / torch first-call costs
    fast, harness = timed(sentences.evaluate, vectors, labels, repeat=3)
    slow, naive = timed(sentences.naive_scores, vectors, labels)
    # faiss ranks in float32, the loop in float64: near-ties may swap (differences ~1e-7)
    same = max(abs(harness[m] - naive[m]) for m in ("p@1", "map@r"))
    record("sentences P@1 + MAP@R", f"{n} sentences x 384-d, 5 classes", fast, slow, same)

    # --- paragraphs
    from sdr.evaluate import paragraphs

    n_chunks = 500 if args.quick else 2000
    paper_ids = [f"p{i // 5}" for i in range(n_chunks)]
    vectors = rng.normal(size=(n_chunks, 384))
    fast, harness = timed(paragraphs.evaluate, vectors, paper_ids, repeat=3)
    slow, naive = timed(paragraphs_naive, vectors, paper_ids)
    same = max(abs(harness[k] - naive[k]) for k in naive)
    record("paragraphs Recall@1/@3", f"{n_chunks} chunks x 384-d, 5 per paper", fast, slow, same)

    # --- pytrec_eval: one call per task vs one per query
    from sdr.evaluate.ranking import pytrec_eval_means

    n_queries = 200 if args.quick else 1000
    qrels, run = {}, {}
    for q in range(n_queries):
        docs = [f"d{q}_{i}" for i in range(30)]
        qrels[f"q{q}"] = {d: int(i < 5) for i, d in enumerate(docs)}
        run[f"q{q}"] = {d: round(-float(rng.random()), 5) for d in docs}
    fast, (one_call, _) = timed(pytrec_eval_means, qrels, run, ("map", "ndcg"), repeat=3)

    def per_query_calls():
        values = [pytrec_eval_means({q: qrels[q]}, {q: run[q]}, ("map", "ndcg"))[0] for q in run]
        return {m: float(np.mean([v[m] for v in values])) for m in ("map", "ndcg")}

    slow, many = timed(per_query_calls)
    python_time, python_values = timed(naive_map_ndcg, qrels, run)
    record("pytrec_eval map+ndcg (1 call/task)", f"{n_queries} queries x 30 cands vs 1 call/query", fast, slow,
           max(abs(one_call[m] - many[m]) for m in many))
    record("pytrec_eval map+ndcg vs Python", f"{n_queries} queries x 30 cands vs a Python loop", fast,
           python_time, max(abs(one_call[m] - python_values[m]) for m in many))

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
