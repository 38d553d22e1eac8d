"""Speed of the SciDocs / MDCR harness against the same metrics computed naively on the same inputs.

* SciDocs proximity tasks (co-view, co-read, cite, co-cite) at the real size — 1,000 test queries
  × 30 candidates each, 768-dimensional embeddings: the harness (all query–candidate distances
  in one vectorised pass, one ``pytrec_eval`` call per task) against a naive reference written the
  way the official script works (a Python loop over queries and candidates with one
  ``np.linalg.norm`` per pair, a TREC run file written to disk and parsed back, then scored).
  The largest absolute difference between the two sets of metrics is recorded (it must be 0).
* MDCR at a realistic size (19 fields × 100 queries × 60 candidates): one ``pytrec_eval`` call
  for all fields against one call per field (the official loop), same −L2 run.

Usage: ``python benchmarks/bench_scidocs.py [--quick]``; raw output goes to
``benchmarks/results/scidocs.txt``.  The machine is shared: the load average is recorded.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "scidocs.txt"


def timed(function, *args, **kwargs):
    """Wall time and result of one call."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def make_task(rng: np.random.Generator, n_queries: int, n_papers: int, dim: int):
    """A SciDocs-shaped task: 5 positives + 25 negatives per query, and embeddings for every paper."""
    embeddings = {f"p{i:06d}": rng.normal(size=dim) for i in range(n_papers)}
    ids = list(embeddings)
    qrels = {}
    for q in range(n_queries):
        chosen = rng.choice(n_papers, size=31, replace=False)
        query, candidates = ids[chosen[0]], [ids[i] for i in chosen[1:]]
        qrels[query] = {c: int(k < 5) for k, c in enumerate(candidates)}
    return qrels, embeddings


def naive_scidocs(qrels, embeddings, workdir: Path) -> dict[str, float]:
    """Per-query, per-candidate loop, run file on disk, parsed back (the official pipeline's shape)."""
    import pytrec_eval

    run_path = workdir / "naive.run"
    with run_path.open("w") as handle:
        for query, candidates in qrels.items():
            q = np.array(embeddings[query])
            scored = []
            for candidate in candidates:
                scored.append((candidate, -np.linalg.norm(q - np.array(embeddings[candidate]))))
            scored.sort(key=lambda item: item[1])
            for rank, (candidate, score) in enumerate(scored):
                handle.write(f"{query} 0 {candidate} {rank} {np.round(score, 5)} n/a\n")
    with run_path.open() as handle:
        run = pytrec_eval.parse_run(handle)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(run)
    return {m: float(np.round(100 * np.mean([r[m] for r in per_query.values()]), 2)) for m in ("map", "ndcg")}


def harness_scidocs(qrels, embeddings) -> dict[str, float]:
    from sdr.evaluate.scidocs import l2_run, trec_metrics

    return trec_metrics(qrels, l2_run(qrels, embeddings))


def mdcr_inputs(rng: np.random.Generator, n_fields: int, n_queries: int, n_candidates: int, dim: int):
    benchmark, embeddings = {}, {}
    for f in range(n_fields):
        field = {}
        for q in range(n_queries):
            query = f"f{f}q{q}"
            embeddings[query] = rng.normal(size=dim)
            lists = {name: [] for name in ("bm25", "graph", "most_cited", "random", "scincl", "specter", "true")}
            for c in range(n_candidates):
                cid = f"f{f}q{q}c{c}"
                embeddings[cid] = rng.normal(size=dim)
                lists["true" if c < 5 else ("bm25", "graph", "most_cited", "random", "scincl", "specter")[c % 6]].append(cid)
            field[query] = lists
        benchmark[f"Field {f:02d}"] = field
    return benchmark, embeddings


def mdcr_per_field(benchmark, embeddings) -> dict:
    """The official loop: one evaluator per field."""
    import pytrec_eval

    from sdr.evaluate.mdcr import qrels_by_field
    from sdr.evaluate.scidocs import l2_run

    out = {}
    for field, qrels in qrels_by_field(benchmark).items():
        run = l2_run(qrels, embeddings, decimals=None)
        results = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg", "recall"}).evaluate(run)
        out[field] = {m: float(np.round(100 * np.mean([r[m] for r in results.values()]), 4))
                      for m in ("map", "ndcg", "recall_5")}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs (a smoke run)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    lines = [
        f"# bench_scidocs.py  {time.strftime('%Y-%m-%d %H:%M:%S')}  {platform.processor() or platform.machine()}",
        f"# cpus {os.cpu_count()}  load average at start {os.getloadavg()}  quick={args.quick}",
    ]
    n_queries, n_papers, dim = (200, 5000, 128) if args.quick else (1000, 10000, 768)
    tasks = [make_task(rng, n_queries, n_papers, dim) for _ in range(4)]
    with tempfile.TemporaryDirectory() as tmp:
        naive_total = harness_total = 0.0
        worst = 0.0
        for number, (qrels, embeddings) in enumerate(tasks):
            naive_seconds, naive = timed(naive_scidocs, qrels, embeddings, Path(tmp))
            harness_seconds, harness = timed(harness_scidocs, qrels, embeddings)
            worst = max(worst, *(abs(naive[m] - harness[m]) for m in naive))
            naive_total += naive_seconds
            harness_total += harness_seconds
            lines.append(f"scidocs task {number}: {n_queries} queries x 30 candidates, dim {dim}: "
                         f"naive {naive_seconds:.3f} s, harness {harness_seconds:.3f} s, "
                         f"map {harness['map']} ndcg {harness['ndcg']}")
    lines.append(f"scidocs 4 proximity tasks: naive {naive_total:.2f} s, harness {harness_total:.2f} s, "
                 f"speed-up {naive_total / harness_total:.1f}x, max |difference| {worst}")

    from sdr.evaluate.mdcr import evaluate as mdcr_evaluate

    fields, per_field_queries, candidates = (19, 20, 40) if args.quick else (19, 100, 60)
    benchmark, embeddings = mdcr_inputs(rng, fields, per_field_queries, candidates, 64)
    with tempfile.TemporaryDirectory() as tmp:
        import json

        path = Path(tmp) / "mdcr_test.json"
        path.write_text(json.dumps(benchmark))
        loop_seconds, loop = timed(mdcr_per_field, benchmark, embeddings)
        one_seconds, one = timed(mdcr_evaluate, benchmark_file=path, embeddings=embeddings)
    difference = max(abs(loop[f][m] - one["fields"][f][m]) for f in loop for m in loop[f])
    lines.append(f"mdcr {fields} fields x {per_field_queries} queries x {candidates} candidates: "
                 f"per-field pytrec_eval {loop_seconds:.2f} s, harness (one call, incl. reading the file) "
                 f"{one_seconds:.2f} s, max |difference| {difference}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
