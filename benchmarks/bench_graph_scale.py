"""SciNCL's graph path at scale (issues 21 and 36): PyTorch-BigGraph from an edge file in partitioned mode with its
own parallelism, and SciNCL's exact kNN-band search over a FAISS flat index of SciNCL's size, searched once and
reused.

Two parts, each in a fresh subprocess so that its peak resident memory is its own:

* ``pbg`` — a synthetic citation graph (``--pbg-nodes`` papers in communities of ~100, each citing at least once,
  ``--pbg-edges`` citations, 80 % inside the citing paper's community; integer ids like S2 corpus ids) is written as a TSV edge
  list and embedded by :func:`sdr.graph.embed_edge_files` (768-d dot, SciNCL A.5 settings but ``--pbg-epochs``
  epochs) under a memory budget of ``--pbg-memory-gb`` GiB (partitions from :func:`sdr.graph.plan_partitions`) with
  PBG's HOGWILD workers from the machine (:func:`sdr.graph.machine_workers`, or ``--pbg-workers``). Reports the
  phases' wall time, partitions, workers, link prediction on the 1 % held-out edges and the peak RSS of the part
  and of its largest PBG worker.
* ``bands`` — ``--nodes`` vectors of dimension ``--dim`` (topic clusters: ``nodes / 1000`` centres plus noise, norms
  ≤ 1 as PBG's ``max_norm``; not PBG embeddings), written to a memory-mapped ``.npy`` as ``embed_edge_files`` leaves
  them. :func:`sdr.samplers.knn_bands` samples SciNCL's bands (k⁺ 25, c⁺ 5, k⁻hard 4000 and the sweep values 2000
  and 1000; c⁻hard 2, c⁻easy 3) for ``--queries`` random query papers with the exact flat index (FAISS on the CPU
  here, blocks of 1024 queries), then again with another seed (the second seed of a chapter): its search is the
  first one's, reused (:class:`sdr.samplers.SearchCache`). With ``--ivf-recall`` the earlier IVF-recall part
  (issue 21, ``results/graph_scale.txt``) runs as well.

Searching all of SciNCL's 136,820 queries exactly takes hours on two CPU cores; the script says exactly what it
measured, and the extrapolation at the end is arithmetic on these measurements under the stated models.

Usage: ``nice python benchmarks/bench_graph_scale.py [--quick]``; raw output goes to
``benchmarks/results/graph_scale_1m.txt`` (``--quick``: small sizes, written to ``graph_scale_quick.txt``).
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
    citing[:min(n, e)] = rng.permutation(n)[:min(n, e)]  # every paper cites at least once: all n are nodes
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
                                        memory_budget_gb=args.pbg_memory_gb, workers=args.pbg_workers)
    started = time.perf_counter()
    result = graph.embed_edge_files(edges, config, work_dir=folder / "work", verbose=True)
    seconds = time.perf_counter() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"part": "pbg", "nodes": result.report.nodes, "edge_lines": e, "distinct_edges": result.report.distinct_edges,
            "train_edges": result.report.train_edges, "test_edges": result.report.test_edges,
            "partitions": result.report.num_partitions, "workers": result.report.workers,
            "cores": graph.machine_workers(), "dimension": args.dim, "epochs": args.pbg_epochs,
            "memory_budget_gib": args.pbg_memory_gb, "generate_and_write_tsv_s": written, "embed_edge_files_s": seconds,
            "phases": result.report.phases, "link_prediction": result.link_prediction, "vectors_shape": list(result.vectors.shape),
            "peak_rss_mib": peak_rss_mib(), "peak_rss_children_mib": children,
            "disk_mib": _remove(folder)}


# ---------------------------------------------------------------------------------------------- band part


def _vectors(args, folder: Path) -> tuple[Path, float]:
    import numpy as np

    n, d = args.nodes, args.dim
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
    return path, time.perf_counter() - started


def part_bands(args) -> dict:
    """Exact bands over ``--nodes`` vectors for ``--queries`` queries, then a second seed reusing the search."""
    import numpy as np

    from sdr.samplers import BandSetting, SearchCache, knn_bands

    n, d = args.nodes, args.dim
    folder = Path(tempfile.mkdtemp(prefix="bench-bands-", dir=args.tmp))
    path, generated = _vectors(args, folder)
    vectors = np.load(path, mmap_mode="r")
    ids = [str(i) for i in range(n)]
    main = BandSetting(25, 5, 4000, 2, 3)
    settings = [main, BandSetting(25, 5, 2000, 2, 3), BandSetting(25, 5, 1000, 2, 3)]
    queries = np.sort(np.random.default_rng(1).choice(n, size=min(args.queries, n), replace=False))
    query_ids = [ids[i] for i in queries]
    cache = SearchCache(folder / "band-cache")  # on disk, as $SDR_BAND_CACHE keeps it
    started = time.perf_counter()
    first = knn_bands(vectors, ids, settings, metric="ip", query_ids=query_ids, index="flat", seed=0,
                      block_size=1024, cache=cache)
    searched = time.perf_counter() - started
    rss_after_search = status_mib("VmRSS"), status_mib("RssAnon")
    started = time.perf_counter()
    second = knn_bands(vectors, ids, settings, metric="ip", query_ids=query_ids, index="flat", seed=1,
                       block_size=1024, cache=cache)
    reused = time.perf_counter() - started
    started = time.perf_counter()
    SearchCache.key(vectors, ids, "ip", "exact")  # the part of a reuse that grows with N × d
    key_s = time.perf_counter() - started
    started = time.perf_counter()
    triplets, report = second.triplets(main)
    made = time.perf_counter() - started
    return {"part": "bands", "nodes": n, "dimension": d, "generate_vectors_s": generated, "index": first.search,
            "queries": len(queries), "settings": len(settings), "depth": 4001,
            "exact_search_and_bands_s": searched, "search_s_per_query": searched / len(queries),
            "second_seed_s": reused, "second_seed_reused": second.reused, "second_seed_search": second.search,
            "cache_key_s": key_s,
            "triplets_main": len(triplets), "triplets_s": made, "hard_short": report.hard_short,
            "negatives_short": report.negatives_short, "rss_after_search_mib": rss_after_search,
            "kept_search_mib": sum(f.stat().st_size for f in (folder / "band-cache").glob("*.npy")) / 2 ** 20,
            "band_arrays_mib": sum(a.nbytes for table in (first.positives, first.hard, first.easy)
                                   for a in table.values()) / 2 ** 20,
            "peak_rss_mib": peak_rss_mib(), "vectors_file_mib": _remove(folder)}


def part_ivf(args) -> dict:
    """Issue 21's IVF part: an IVF index over the same vectors, bands for ``--queries`` queries, band recall against
    exact search on ``--recall-sample`` queries at three ``nprobe`` (see results/graph_scale.txt)."""
    import numpy as np

    from sdr.samplers import BandSetting, NeighbourIndex, band_recall, knn_bands

    folder = Path(tempfile.mkdtemp(prefix="bench-ivf-", dir=args.tmp))
    path, _ = _vectors(args, folder)
    vectors = np.load(path, mmap_mode="r")
    n = args.nodes
    ids = [str(i) for i in range(n)]
    settings = [BandSetting(25, 5, 4000, 2, 3), BandSetting(25, 5, 2000, 2, 3), BandSetting(25, 5, 1000, 2, 3)]
    queries = np.sort(np.random.default_rng(1).choice(n, size=min(args.queries, n), replace=False))
    index = NeighbourIndex(vectors, "ip", "ivf", nlist=args.nlist, seed=0).build(4000, len(queries))
    default_nprobe = index.default_nprobe(4000)
    started = time.perf_counter()
    knn_bands(vectors, ids, settings, metric="ip", query_ids=[ids[i] for i in queries], index=index, cache=False)
    searched = time.perf_counter() - started
    nprobes = sorted({max(1, default_nprobe // 2), default_nprobe, min(index.nlist, default_nprobe * 2)})
    recall = band_recall(vectors, settings, index, metric="ip", sample=args.recall_sample, seed=2, nprobes=nprobes)
    for row in recall:
        row["setting"] = f"k+ {row['setting'].k_pos}, k-hard {row['setting'].k_hard}"
    return {"part": "ivf", "search_s": searched, "recall": recall, "peak_rss_mib": peak_rss_mib(),
            "vectors_file_mib": _remove(folder)}


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
    d = bands["dimension"]
    log("")
    log("## Extrapolation (arithmetic on the numbers above; not measured at these sizes)")
    per_qnd = bands["search_s_per_query"] / (bands["nodes"] * d)
    per_query_reuse = max(0.0, bands["second_seed_s"] - bands["cache_key_s"]) / bands["queries"]
    log(f"a reuse, model T = digest of the embedding (∝ N × d: {bands['cache_key_s']:.1f} s for {bands['nodes']:,} × "
        f"{d}) + Q × the bands and easy negatives of a query ({per_query_reuse * 1000:.1f} ms); measured: second seed "
        f"{bands['second_seed_s']:.1f} s for {bands['queries']:,} queries")
    log(f"exact band search, model T = Q × N × d × c (the N × d scan dominates; depth 4001 is kept per block): "
        f"c = {per_qnd:.3e} s from {bands['queries']:,} queries over {bands['nodes']:,} × {d} "
        f"({bands['search_s_per_query']:.3f} s a query, FAISS flat on {pbg['cores']} CPU cores)")
    for label, queries, papers in [
            (f"SciNCL's own search: {SCINCL_QUERIES:,} queries over an index of {SCINCL_INDEX:,} papers (A.4)",
             SCINCL_QUERIES, SCINCL_INDEX),
            (f"every paper of that index a query ({SCINCL_INDEX:,} × {SCINCL_INDEX:,})", SCINCL_INDEX, SCINCL_INDEX)]:
        seconds = queries * papers * d * per_qnd
        reuse = bands["cache_key_s"] * papers / bands["nodes"] + per_query_reuse * queries
        log(f"  {label}: {seconds:,.0f} s = {seconds / 3600:,.1f} h on this machine, once; every further seed and "
            f"sampling ablation on the same embedding reuses it: ≈ {reuse / 60:,.1f} min")
    kept = bands["kept_search_mib"] / bands["queries"] * SCINCL_QUERIES / 1024
    log(f"  the kept search: queries × 4001 × 4 bytes on disk = {kept:.1f} GiB for SciNCL's {SCINCL_QUERIES:,} queries")
    per_edge_epoch = pbg["phases"]["train"] / (pbg["train_edges"] * pbg["epochs"])
    worker_s = per_edge_epoch * pbg["workers"]
    log(f"PBG, model T = training edges × epochs × c₁ / W (c₁ = seconds per edge-epoch of one worker; HOGWILD workers "
        f"assumed to scale linearly, as PBG's do up to memory bandwidth — an assumption, not measured here): measured "
        f"{per_edge_epoch:.3e} s per edge-epoch with W = {pbg['workers']} → c₁ = {worker_s:.3e} s "
        f"({pbg['train_edges']:,} edges × {pbg['epochs']} epoch(s), {pbg['partitions']} partitions, {pbg['dimension']}-d)")
    prep = pbg["phases"]["ids"] + pbg["phases"]["buckets"]
    log(f"  edge-file preprocessing (two passes, buckets), model ∝ edge lines: {prep:.1f} s for "
        f"{pbg['edge_lines']:,} lines → S2ORC {prep / pbg['edge_lines'] * S2ORC_EDGES / 3600:.1f} h")
    train_edges = 0.99 * S2ORC_EDGES
    for label, workers in [(f"this machine (W = {pbg['workers']})", pbg["workers"]),
                           ("SciNCL's 60-core Xeon Gold 6230 (W = 60)", 60),
                           ("4 such machines in PBG's distributed mode (W = 240)", 240)]:
        seconds = train_edges * 20 * worker_s / workers
        log(f"  S2ORC, {train_edges / 1e6:.1f} M training edges × 20 epochs on {label}: {seconds:,.0f} s = "
            f"{seconds / 3600:,.1f} h")
    log(f"  (SciNCL reports about 6 h on its 60 cores, A.5)")
    from sdr.graph import plan_partitions

    for budget in (16, 64):
        plan = plan_partitions(S2ORC_NODES, S2ORC_EDGES, d, budget * 2 ** 30)
        log(f"  partitions for S2ORC at {budget} GiB: {plan}")
    log(f"  memory of the PBG run here: peak RSS {pbg['peak_rss_mib']:,.0f} MiB (part), largest worker "
        f"{pbg['peak_rss_children_mib']:,.0f} MiB; model: the plan's resident partitions "
        f"(2 × N / P × (4 d + 4) bytes) + one bucket + PBG's edge chunks")
    log(f"  PBG checkpoint + vectors.npy on disk: 2 × N × 4 d bytes = {2 * S2ORC_NODES * 4 * d / 2 ** 30:.0f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["pbg", "bands", "ivf"])
    parser.add_argument("--nodes", type=int, default=700_000, help="vectors of the band search (SciNCL: 680,967)")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=512)
    parser.add_argument("--ivf-recall", action="store_true", help="also the IVF part of issue 21")
    parser.add_argument("--nlist", type=int, default=256)
    parser.add_argument("--recall-sample", type=int, default=100)
    parser.add_argument("--pbg-nodes", type=int, default=1_000_000)
    parser.add_argument("--pbg-edges", type=int, default=2_000_000)
    parser.add_argument("--pbg-epochs", type=int, default=1)
    parser.add_argument("--pbg-memory-gb", type=float, default=4.0)
    parser.add_argument("--pbg-workers", type=int, default=None, help="default: the machine's cores")
    parser.add_argument("--tmp", default=None, help="folder for the edge file, PBG's files and the vectors")
    parser.add_argument("--only", choices=["pbg", "bands"], help="run one part (its extrapolation needs both)")
    parser.add_argument("--quick", action="store_true", help="small sizes: checks that the script runs")
    args = parser.parse_args()
    if args.quick:
        args.nodes, args.queries, args.nlist, args.recall_sample = 20_000, 128, 64, 50
        args.pbg_nodes, args.pbg_edges, args.pbg_memory_gb = 5_000, 25_000, 0.02
    if args.part:
        os.environ.setdefault("PYTHONWARNINGS", "ignore")
        result = {"pbg": part_pbg, "bands": part_bands, "ivf": part_ivf}[args.part](args)
        print(json.dumps(result, default=float), flush=True)
        return

    output = RESULTS / ("graph_scale_quick.txt" if args.quick else "graph_scale_1m.txt")
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
    pbg = bands = None
    if args.only in (None, "pbg"):
        log("## part pbg")
        pbg = run_part("pbg", argv, log)
        log(f"# uptime after pbg: {uptime()}")
    if args.only in (None, "bands"):
        log("## part bands")
        bands = run_part("bands", argv, log)
        log(f"# uptime after bands: {uptime()}")
    ivf = run_part("ivf", argv, log) if args.ivf_recall else None
    log(f"# uptime at end: {uptime()}; total {time.perf_counter() - started:.0f} s")
    log("")
    log("## Summary (measured)")
    if pbg:
        log(f"PBG: {pbg['nodes']:,} nodes, {pbg['train_edges']:,} training edges, {pbg['dimension']}-d, {pbg['epochs']} "
            f"epoch(s), {pbg['partitions']} partitions (budget {pbg['memory_budget_gib']} GiB), {pbg['workers']} "
            f"HOGWILD workers on {pbg['cores']} cores: embed_edge_files {pbg['embed_edge_files_s']:.0f} s ("
            + ", ".join(f"{k} {v:.1f} s" for k, v in pbg["phases"].items()) + "), link prediction "
            + ", ".join(f"{k} {v:.1f}" for k, v in pbg["link_prediction"].items())
            + f"; peak RSS {pbg['peak_rss_mib']:.0f} MiB (largest worker {pbg['peak_rss_children_mib']:.0f} MiB)")
    if bands:
        log(f"bands: {bands['index']}: {bands['queries']:,} queries × {bands['settings']} settings searched exactly "
            f"to depth {bands['depth']} and banded in {bands['exact_search_and_bands_s']:.0f} s "
            f"({bands['search_s_per_query'] * 1000:.0f} ms a query); the second seed in "
            f"{bands['second_seed_s']:.1f} s ({bands['second_seed_search']}); peak RSS {bands['peak_rss_mib']:.0f} "
            f"MiB (vectors file {bands['vectors_file_mib']:.0f} MiB, memory-mapped; kept search "
            f"{bands['kept_search_mib']:.1f} MiB on disk)")
    if ivf:
        for row in ivf["recall"]:
            log(f"  IVF recall {row['setting']} [nprobe {row['nprobe']}]: positive band {row['positive_band_recall']:.3f}, "
                f"hard band {row['hard_band_recall']:.3f}, top-k {row['top_k_recall']:.4f}")
    if pbg and bands:
        extrapolate(pbg, bands, log)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
