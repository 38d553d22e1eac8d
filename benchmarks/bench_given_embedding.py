"""Reading a given graph embedding (issue 36): what SciNCL's chapter spends on ``graph_embedding`` at ``paper``.

SciNCL's chapter, given a precomputed embedding of S2ORC's citation graph (``sdr graph embed --work-dir``: ``ids.txt``
and a memory-mapped ``vectors.npy``), reads every id once (:func:`sdr.graph.given.read_given_embedding`: digits, each
once) and then only the rows of its training papers (:meth:`sdr.graph.given.GivenEmbedding.restrict`). The two parts
scale differently, so they are measured apart:

* **ids**: a folder of ``--ids`` random distinct corpus ids (up to 260 M, as S2's are) with 1-d vectors (the ids'
  pass does not touch the vectors), read with :func:`read_given_embedding` in a process of its own: seconds and the
  peak RSS above the process's start (the memory the read needs, scaled to 52.5 M ids).
* **rows**: a folder of ``--rows-nodes`` ids with ``--dimension``-d float32 vectors (768: SciNCL's A.5), restricted
  to ``--wanted`` of its ids (SPECTER's 312,436 training papers with S2ORC ids, SciNCL Table 3): seconds. The file is
  written just before it is read, so the rows come from the page cache; a cold disk adds its random-read time.

Then the cost of the chapter's read at S2ORC's 52,526,134 nodes (SciNCL Table 4) under the model the cost plan uses
(:data:`sdr.methods.scincl.paper.GIVEN_EMBEDDING_READ`): ids linear in the nodes, rows linear in rows × dimension;
and the ids' memory, linear in the nodes.

Usage: ``nice python benchmarks/bench_given_embedding.py [--quick]``; raw output goes to
``benchmarks/results/given_embedding.txt`` (``--quick``: ``given_embedding_quick.txt``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_synthetic import machine_line, peak_rss_mib  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
S2ORC_NODES = 52_526_134  # SciNCL Table 4
SPECTER_PAPERS_WITH_S2ORC_IDS = 312_436  # SciNCL Table 3


def write_folder(folder: Path, nodes: int, dimension: int, seed: int):
    """``ids.txt`` (random distinct corpus ids below 260 M, one a line) and ``vectors.npy`` (``[nodes, dimension]``
    float32, random, written in blocks): the layout ``sdr graph embed --work-dir`` writes. Returns the ids."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.choice(260_000_000, size=nodes, replace=False)
    folder.mkdir(parents=True)
    np.savetxt(folder / "ids.txt", ids, fmt="%d")
    vectors = np.lib.format.open_memmap(folder / "vectors.npy", mode="w+", dtype=np.float32, shape=(nodes, dimension))
    block = max(1, (1 << 26) // (4 * dimension))
    for start in range(0, nodes, block):
        stop = min(nodes, start + block)
        vectors[start:stop] = rng.standard_normal((stop - start, dimension), dtype=np.float32)
    vectors.flush()
    del vectors
    return ids


def read_ids_in_a_process(folder: Path) -> tuple[float, float, float, int]:
    """Seconds of :func:`read_given_embedding` over ``folder`` in a fresh process (so the writer's memory is not
    counted), that process's peak RSS in MiB, its RSS before the read, and the ids read."""
    import json
    import subprocess

    code = ("import json, sys, time; sys.path[:0] = sys.argv[2:]; from bench_synthetic import peak_rss_mib; "
            "from sdr.graph.given import read_given_embedding; before = peak_rss_mib(); t = time.perf_counter(); "
            "g = read_given_embedding(sys.argv[1]); s = time.perf_counter() - t; "
            "print(json.dumps([s, peak_rss_mib(), before, len(g.corpus_ids)]))")
    out = subprocess.run([sys.executable, "-c", code, str(folder), str(ROOT / "lib"), str(Path(__file__).parent)],
                         check=True, capture_output=True, text=True).stdout
    seconds, peak, before, count = json.loads(out.strip().splitlines()[-1])
    return seconds, peak, before, count


def main() -> None:
    import numpy as np

    from sdr.graph.given import read_given_embedding

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", type=int, default=10_000_000)
    parser.add_argument("--rows-nodes", type=int, default=1_000_000)
    parser.add_argument("--wanted", type=int, default=SPECTER_PAPERS_WITH_S2ORC_IDS)
    parser.add_argument("--dimension", type=int, default=768)
    parser.add_argument("--quick", action="store_true", help="100 K ids, 50 K rows of 64 dimensions, 10 K wanted")
    args = parser.parse_args()
    if args.quick:
        args.ids, args.rows_nodes, args.wanted, args.dimension = 100_000, 50_000, 10_000, 64
    lines = [machine_line("bench_given_embedding"),
             f"ids part: {args.ids:,} ids; rows part: {args.rows_nodes:,} nodes x {args.dimension} dimensions, "
             f"{args.wanted:,} rows wanted"]
    work = Path(tempfile.mkdtemp(prefix="given-embedding-"))
    try:
        write_folder(work / "ids", args.ids, 1, seed=0)
        ids_s, peak, before, count = read_ids_in_a_process(work / "ids")
        assert count == args.ids
        per_id_mib = (peak - before) / args.ids
        lines.append(f"ids: read_given_embedding of {args.ids:,} ids {ids_s:.2f} s ({ids_s / args.ids * 1e6:.3f} us "
                     f"an id), in a process of its own: RSS {before:,.0f} MiB before, peak {peak:,.0f} MiB "
                     f"({per_id_mib * 2**20:,.0f} bytes an id)")
        shutil.rmtree(work / "ids")

        ids = write_folder(work / "rows", args.rows_nodes, args.dimension, seed=1)
        wanted = np.random.default_rng(2).choice(ids, size=min(args.wanted, len(ids)), replace=False)
        corpus_id_of = {f"p{i}": int(c) for i, c in enumerate(wanted)}
        started = time.perf_counter()
        given = read_given_embedding(work / "rows", dimension=args.dimension)
        read_s = time.perf_counter() - started
        started = time.perf_counter()
        restricted = given.restrict(corpus_id_of)
        restrict_s = time.perf_counter() - started
        assert len(restricted.ids) == len(wanted) and not restricted.missing
        row = given.corpus_ids.tolist().index(int(wanted[0]))
        assert np.array_equal(restricted.vectors[0], np.asarray(given.vectors[row]))
        row_bytes = len(wanted) * args.dimension * 4
        lines.append(f"rows: read_given_embedding of {args.rows_nodes:,} ids {read_s:.2f} s; restrict to "
                     f"{len(wanted):,} rows ({row_bytes / 2**20:,.0f} MiB, page cache warm) {restrict_s:.2f} s "
                     f"({restrict_s / row_bytes * 2**30:.2f} s a GiB of rows); peak RSS of this process, the writing of the "
                     f"vectors included, {peak_rss_mib():,.0f} MiB")
        per_id = ids_s / args.ids
        per_gib = restrict_s / row_bytes * 2**30
        full_rows = SPECTER_PAPERS_WITH_S2ORC_IDS * 768 * 4
        total = per_id * S2ORC_NODES + per_gib * full_rows / 2**30
        lines.append(f"extrapolation to S2ORC's graph (SciNCL Table 4: {S2ORC_NODES:,} nodes) and SPECTER's "
                     f"{SPECTER_PAPERS_WITH_S2ORC_IDS:,} training papers at 768 dimensions: ids {per_id * 1e6:.3f} us "
                     f"x {S2ORC_NODES:,} = {per_id * S2ORC_NODES:,.0f} s; rows {per_gib:.2f} s/GiB x "
                     f"{full_rows / 2**30:.2f} GiB = {per_gib * full_rows / 2**30:,.1f} s (warm; a cold disk adds "
                     f"its read time); total {total:,.0f} s = {total / 3600:.3f} h; the ids' read needs about "
                     f"{per_id_mib * S2ORC_NODES / 1024:,.1f} GiB at its peak ({per_id_mib * 2**20:,.0f} bytes an id)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    name = "given_embedding_quick.txt" if args.quick else "given_embedding.txt"
    (RESULTS / name).write_text(text + "\n")


if __name__ == "__main__":
    main()
