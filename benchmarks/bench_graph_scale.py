"""SciNCL's graph path at scale (issue 21): PyTorch-BigGraph from an edge file in partitioned mode, and the
kNN-band search over 1 M vectors of SciNCL's dimension, with band recall against exact search.

Two parts, each in a fresh subprocess so that its peak resident memory is its own:

* ``pbg`` — a synthetic citation graph (``--pbg-nodes`` papers in communities of ~100, ``--pbg-edges``
  citations, 80 % inside the citing paper's community; integer ids like S2 corpus ids) is written as a TSV edge
  list and embedded by :func:`sdr.graph.embed_edge_files` (768-d dot, SciNCL A.5 settings but ``--pbg-epochs``
  epochs) under a memory budget of ``--pbg-memory-gb`` GiB, so that :func:`sdr.graph.plan_partitions` splits
  it into several partitions. Reports the phases' wall time, the partitions, link prediction on the 1 %
  held-out edges and peak RSS.
* ``bands`` — ``--nodes`` vectors of dimension ``--dim`` (topic clusters: ``nodes / 1000`` centres plus
  noise, norms ≤ 1 as PBG's ``max_norm``), written to a memory-mapped ``.npy`` as ``embed_edge_files`` leaves
  them. (In 768 dimensions random centres are almost equidistant, so past a paper's own cluster its neighbour
  ranks are decided by the noise: a hard case for IVF, not a model of S2ORC's embeddings.) An IVF index (``--nlist`` cells; ``nprobe`` for ≈ 8 (k + 1) candidates) is built over all of them and
  :func:`sdr.samplers.knn_bands` samples SciNCL's bands (k⁺ 25, c⁺ 5, k⁻hard 4000 and the sweep values 1000,
  2000; c⁻hard 2, c⁻easy 3) for ``--queries`` random query papers, in blocks of 1024. Band recall
  (:func:`sdr.samplers.band_recall`) is measured on ``--recall-sample`` queries against exact search
  (chunked flat search to depth 8000), also at a lower and a higher ``nprobe``.

A PBG run on the 1 M-node graph itself does not fit this machine's time (see the README), and searching all
1 M queries with k⁻hard 4000 takes hours on two CPU cores; the script says exactly what it measured, and the
extrapolation at the end is arithmetic on these measurements under the stated models.

Usage: ``nice python benchmarks/bench_graph_scale.py [--quick]``; raw output goes to
``benchmarks/results/graph_scale.txt`` (``--quick``: small sizes, written to ``graph_scale_quick.txt``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_synthetic import machine_line, peak_rss_mib  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
S2ORC_NODES, S2ORC_EDGES = 52_526_134, 463_697_639  # SciNCL A.4, w/ leakage graph
SCINCL_INDEX, SCINCL_QUERIES = 680_967, 136_820  # SciNCL A.4: papers in the FAISS index, query papers


def status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())


def _remove(folder: Path) -> float:
    """Delete a part's scratch folder; returns the MiB it held."""
    import shutil

    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2 ** 20
    shutil.rmtree(folder)
    return size


# ---------------------------------------------------------------------------------------------- PBG part


def part_pbg(args) -> dict:
    import numpy as np

    from sdr import graph

    rng = np.random.default_rng(0)
    n, e = args.pbg_nodes, args.pbg_edges
    started = time.perf_counter()
    community = rng.integers(0, max(1, n // 100), n)
    order = np.argsort(community, kind="stable")
    starts = np.searchsorted(community[order], np.arange(community.max() + 2))
    citing = rng.integers(0, n, e)
    cited = rng.integers(0, n, e)
    local = rng.random(e) < 0.8
    c = community[citing[local]]
    sizes = starts[c + 1] - starts[c]
    cited[local] = order[starts[c] + (rng.random(local.sum()) * sizes).astype(np.int64)]
    corpus_ids = rng.choice(300_000_000, size=n, replace=False)
    folder = Path(tempfile.mkdtemp(prefix="bench-graph-", dir=args.tmp))
    edges = folder / "edges.tsv"
    with edges.open("w") as handle:
        for s in range(0, e, 1_000_000):
            handle.write("".join(f"{a}\t{b}\n" for a, b in zip(corpus_ids[citing[s:s + 1_000_000]].tolist(),
                                                                 corpus_ids[cited[s:s + 1_000_000]].tolist())))
    written = time.perf_counter() - started
    config = graph.GraphEmbeddingConfig(dimension=args.dim, epochs=args.pbg_epochs, test_fraction=0.01,
                                        memory_budget_gb=args.pbg_memory_gb)
    started = time.perf_counter()
    result = graph.embed_edge_files(edges, config, work_dir=folder / "work", verbose=True)
    seconds = time.perf_counter() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"part": "pbg", "nodes": result.report.nodes, "edge_lines": e, "distinct_edges": result.report.distinct_edges,
            "train_edges": result.report.train_edges, "test_edges": result.report.test_edges,
            "partitions": result.report.num_partitions, "dimension": args.dim, "epochs": args.pbg_epochs,
            "memory_budget_gib": args.pbg_memory_gb, "generate_and_write_tsv_s": written, "embed_edge_files_s": seconds,
            "phases": result.report.phases, "link_prediction": result.link_prediction, "vectors_shape": list(result.vectors.shape),
            "peak_rss_mib": peak_rss_mib(), "peak_rss_children_mib": children,
            "disk_mib": _remove(folder)}


# ---------------------------------------------------------------------------------------------- band part


def part_bands(args) -> dict:
    import numpy as np

    from sdr.samplers import BandSetting, NeighbourIndex, band_recall, knn_bands

    n, d = args.nodes, args.dim
    folder = Path(tempfile.mkdtemp(prefix="bench-bands-", dir=args.tmp))
    path = folder / "vectors.npy"
    started = time.perf_counter()
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((max(1, n // 1000), d), dtype=np.float32)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    scale = 1.0 / (1.1 * math.sqrt(d) * math.sqrt(1 + 0.7 ** 2))  # norms ≤ ~1, as PBG's max_norm keeps them
    for s in range(0, n, 50_000):
        m = min(n, s + 50_000) - s
        out[s:s + m] = (centres[rng.integers(0, len(centres), m)] + 0.7 * rng.standard_normal((m, d), dtype=np.float32)) * scale
    out.flush()
    del out
    generated = time.perf_counter() - started
    vectors = np.load(path, mmap_mode="r")
    ids = [str(i) for i in range(n)]

    main = BandSetting(25, 5, 4000, 2, 3)
    settings = [main, BandSetting(25, 5, 2000, 2, 3), BandSetting(25, 5, 1000, 2, 3)]
    k = min(n - 1, 4000)
    queries = np.sort(np.random.default_rng(1).choice(n, size=min(args.queries, n), replace=False))
    started = time.perf_counter()
    index = NeighbourIndex(vectors, "ip", "ivf", nlist=args.nlist, seed=0).build(k, len(queries))
    built = time.perf_counter() - started
    rss_after_build = status_mib("VmRSS"), status_mib("RssAnon")
    default_nprobe = index.default_nprobe(k)

    started = time.perf_counter()
    bands = knn_bands(vectors, ids, settings, metric="ip", query_ids=[ids[i] for i in queries], index=index,
                      block_size=1024)
    searched = time.perf_counter() - started
    described = index.describe()  # now: band_recall below changes nprobe
    started = time.perf_counter()
    triplets, report = bands.triplets(main)
    made = time.perf_counter() - started
    rss_after_search = status_mib("VmRSS"), status_mib("RssAnon")

    nprobes = sorted({max(1, default_nprobe // 2), default_nprobe, min(index.nlist, default_nprobe * 2)})
    recall = band_recall(vectors, settings, index, metric="ip", sample=args.recall_sample, seed=2, nprobes=nprobes)
    for row in recall:
        row["setting"] = f"k+ {row['setting'].k_pos}, k-hard {row['setting'].k_hard}"
    return {"part": "bands", "nodes": n, "dimension": d, "generate_vectors_s": generated, "index": described,
            "nlist": index.nlist, "default_nprobe": default_nprobe, "build_index_s": built,
            "queries": len(queries), "settings": len(settings), "search_and_bands_s": searched,
            "search_s_per_query": searched / len(queries), "triplets_main": len(triplets),
            "triplets_s": made, "hard_short": report.hard_short, "negatives_short": report.negatives_short,
            "rss_after_build_mib": rss_after_build, "rss_after_search_mib": rss_after_search,
            "band_arrays_mib": sum(a.nbytes for table in (bands.positives, bands.hard, bands.easy)
                                   for a in table.values()) / 2 ** 20,
            "recall": recall, "peak_rss_mib": peak_rss_mib(), "vectors_file_mib": _remove(folder)}


# ---------------------------------------------------------------------------------------------- driver


def run_part(name: str, argv: list[str], log) -> dict:
    """Run one part in a subprocess (its output echoed and logged); its JSON result is the last line."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, __file__, "--part", name] + argv, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    lines = []
    for line in process.stdout:
        lines.append(line)
        if not line.startswith("{"):
            log(line.rstrip("\n"))
    process.wait()
    if process.returncode:
        raise SystemExit(f"part {name} failed (exit {process.returncode})")
    result = json.loads(lines[-1])
    result["wall_s"] = time.perf_counter() - started
    log(f"RESULT {name}: " + json.dumps(result))
    return result


def extrapolate(pbg: dict, bands: dict, log) -> None:
    """Arithmetic on the measurements under the stated models (no new measurement)."""
    n, d = bands["nodes"], bands["dimension"]
    log("")
    log("## Extrapolation (arithmetic on the numbers above; not measured at these sizes)")
    main = next(r for r in bands["recall"] if r["setting"].endswith(" 4000") and r["nprobe"] == bands["default_nprobe"])
    exact_per_query = main["exact_seconds"] / main["queries"]
    # exact search to depth 8000 here; depth hardly matters next to the N x d scan, so: time ∝ Q × N × d
    per_qnd = exact_per_query / (n * d)
    log(f"exact (flat) search, model time = Q × N × d × c: c = {per_qnd:.3e} s from {main['queries']} queries "
        f"over {n:,} × {d} ({exact_per_query:.3f} s a query)")
    for label, queries, papers in [
            (f"every paper of this {n:,}-vector corpus a query", n, n),
            (f"SciNCL's own search: {SCINCL_QUERIES:,} queries over an index of {SCINCL_INDEX:,} papers (A.4)",
             SCINCL_QUERIES, SCINCL_INDEX),
            (f"every S2ORC node a query over all {S2ORC_NODES:,}", S2ORC_NODES, S2ORC_NODES)]:
        seconds = queries * papers * d * per_qnd
        log(f"  {label}: {seconds:,.0f} s = {seconds / 3600:,.1f} h = {seconds / 86400:,.1f} days on this machine")
    per_query = bands["search_and_bands_s"] / bands["queries"]
    candidates = bands["default_nprobe"] * n / bands["nlist"]
    unit = per_query / (candidates + bands["nlist"])
    log(f"IVF search, model time a query = c' × (candidates + nlist), candidates ≈ nprobe × N / nlist held at "
        f"≈ 8 (k + 1) so band recall stays as measured (an assumption at other N), nlist = 4 √N: measured "
        f"{per_query:.4f} s a query with {candidates:,.0f} candidates and nlist {bands['nlist']} -> c' = {unit:.3e} s")
    log(f"  all {n:,} papers of this corpus as queries, same index (time ∝ queries): {per_query * n:,.0f} s = "
        f"{per_query * n / 3600:,.1f} h")
    for label, queries, papers in [("SciNCL's own search (A.4)", SCINCL_QUERIES, SCINCL_INDEX),
                                   ("every S2ORC node a query", S2ORC_NODES, S2ORC_NODES)]:
        nlist = 4 * math.sqrt(papers)
        seconds = queries * unit * (8 * 4001 + nlist)
        log(f"  {label}: {seconds:,.0f} s = {seconds / 3600:,.1f} h (nlist {nlist:,.0f})")
    index_bytes = S2ORC_NODES * (4 * d + 8)
    log(f"IVF-Flat index memory = N × (4 d + 8) bytes: {n:,} -> {n * (4 * d + 8) / 2 ** 30:.1f} GiB; "
        f"S2ORC {index_bytes / 2 ** 30:.0f} GiB (does not fit this 23 GiB machine: needs a large-memory host, a "
        f"sharded index or product quantisation, none measured here); SciNCL's 680,967-paper index "
        f"{SCINCL_INDEX * (4 * d + 8) / 2 ** 30:.1f} GiB")
    per_band = bands["band_arrays_mib"] / bands["queries"] / bands["settings"]
    log(f"kept bands = queries × (c+ + c-hard + c-easy) × 4 bytes a setting: {per_band * 2 ** 20:.0f} bytes a query; "
        f"S2ORC, every node a query: {S2ORC_NODES * per_band / 1024:.1f} GiB a setting (the one-shot search it "
        f"replaces held queries × 4001 × 12 bytes = {S2ORC_NODES * 4001 * 12 / 2 ** 40:.1f} TiB)")
    train_s = pbg["phases"]["train"]
    per_edge_epoch = train_s / (pbg["train_edges"] * pbg["epochs"])
    log(f"PBG, model time = training edges × epochs × c'' (d = {pbg['dimension']}; PBG's training phase only, its "
        f"process start-up included): {per_edge_epoch:.3e} s per edge-epoch from {pbg['train_edges']:,} edges × "
        f"{pbg['epochs']} epoch(s) in {pbg['partitions']} partitions")
    prep = pbg["phases"]["ids"] + pbg["phases"]["buckets"]
    log(f"  edge-file preprocessing (two passes, buckets), model time ∝ edge lines: {prep:.1f} s for "
        f"{pbg['edge_lines']:,} lines -> S2ORC {prep / pbg['edge_lines'] * S2ORC_EDGES / 3600:.1f} h")
    seconds = 0.99 * S2ORC_EDGES * 20 * per_edge_epoch
    log(f"  S2ORC, 463.7 M edges × 20 epochs: {seconds:,.0f} s = {seconds / 3600:,.0f} h = {seconds / 86400:,.1f} days "
        f"on this machine (one HOGWILD worker); SciNCL reports ~6 h on a 60-core Xeon Gold 6230 (A.5)")
    from sdr.graph import plan_partitions

    for budget in (16, 64):
        plan = plan_partitions(S2ORC_NODES, S2ORC_EDGES, d, budget * 2 ** 30)
        log(f"  partitions for S2ORC at {budget} GiB: {plan}")
    log(f"  PBG checkpoint + vectors.npy on disk: 2 × N × 4 d bytes = {2 * S2ORC_NODES * 4 * d / 2 ** 30:.0f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["pbg", "bands"])
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=4096)
    parser.add_argument("--nlist", type=int, default=256)
    parser.add_argument("--recall-sample", type=int, default=100)
    parser.add_argument("--pbg-nodes", type=int, default=100_000)
    parser.add_argument("--pbg-edges", type=int, default=500_000)
    parser.add_argument("--pbg-epochs", type=int, default=1)
    parser.add_argument("--pbg-memory-gb", type=float, default=0.25)
    parser.add_argument("--tmp", default=None, help="folder for the edge file, PBG's files and the vectors")
    parser.add_argument("--quick", action="store_true", help="small sizes: checks that the script runs")
    args = parser.parse_args()
    if args.quick:
        args.nodes, args.queries, args.nlist, args.recall_sample = 20_000, 512, 64, 50
        args.pbg_nodes, args.pbg_edges, args.pbg_memory_gb = 5_000, 25_000, 0.02
    if args.part:
        os.environ.setdefault("PYTHONWARNINGS", "ignore")
        result = part_pbg(args) if args.part == "pbg" else part_bands(args)
        print(json.dumps(result, default=float), flush=True)
        return

    output = RESULTS / ("graph_scale_quick.txt" if args.quick else "graph_scale.txt")
    lines: list[str] = []

    def log(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    log(machine_line("bench_graph_scale"))
    log(f"# uptime at start: {uptime()}")
    log(f"# argv: {' '.join(sys.argv[1:]) or '(defaults)'}; niceness {os.nice(0)}; FAISS/torch threads from "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    argv = [a for a in sys.argv[1:] if a != "--quick"] + (["--quick"] if args.quick else [])
    started = time.perf_counter()
    log("## part pbg")
    pbg = run_part("pbg", argv, log)
    log(f"# uptime after pbg: {uptime()}")
    log("## part bands")
    bands = run_part("bands", argv, log)
    log(f"# uptime at end: {uptime()}; total {time.perf_counter() - started:.0f} s")
    log("")
    log("## Summary (measured)")
    log(f"PBG: {pbg['nodes']:,} nodes, {pbg['train_edges']:,} training edges, {pbg['dimension']}-d, {pbg['epochs']} "
        f"epoch(s), {pbg['partitions']} partitions (budget {pbg['memory_budget_gib']} GiB): embed_edge_files "
        f"{pbg['embed_edge_files_s']:.0f} s ("
        + ", ".join(f"{k} {v:.1f} s" for k, v in pbg["phases"].items()) + "), link prediction "
        + ", ".join(f"{k} {v:.1f}" for k, v in pbg["link_prediction"].items())
        + f"; peak RSS {pbg['peak_rss_mib']:.0f} MiB (children {pbg['peak_rss_children_mib']:.0f} MiB)")
    log(f"bands: {bands['index']}: build {bands['build_index_s']:.0f} s; {bands['queries']:,} queries × "
        f"{bands['settings']} settings searched and banded in {bands['search_and_bands_s']:.0f} s "
        f"({bands['search_s_per_query'] * 1000:.1f} ms a query); peak RSS {bands['peak_rss_mib']:.0f} MiB "
        f"(vectors file {bands['vectors_file_mib']:.0f} MiB, memory-mapped)")
    for row in bands["recall"]:
        log(f"  recall {row['setting']} [nprobe {row['nprobe']}]: positive band {row['positive_band_recall']:.3f}, "
            f"hard band {row['hard_band_recall']:.3f}, top-k {row['top_k_recall']:.4f}, hard negatives' exact rank "
            f"median {row['hard_exact_rank_median']:.0f} / p95 {row['hard_exact_rank_p95']:.0f}; "
            f"{row['queries']} queries, approximate {row['approximate_seconds']:.1f} s, exact {row['exact_seconds']:.1f} s")
    extrapolate(pbg, bands, log)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
