"""The bulk route's filter (issue 36): DuckDB over one gzipped JSONL shard of the S2AG ``citations`` dataset.

A synthetic shard in the dataset's schema (``citingcorpusid``/``citedcorpusid`` as strings, a null
``citedcorpusid`` in one record of 8, contexts and link-level intents on one record of 3 — the shares of
Semantic Scholar's public sample — ``isinfluential``, ``updated``) of ``--records`` records is written gzipped;
then :func:`sdr.fetchers.bulk.filter_sql` keeps the links of ``--anchors`` random anchor papers (FLeW has 216 K) as
:class:`sdr.fetchers.bulk.BulkFetch` does (``COPY … TO parquet``, DuckDB with the machine's threads and a memory
limit). Reports gzipped MB/s and records/s of the filter, the rows kept, and the peak RSS of the process; the
throughput is the rate :data:`sdr.fetchers.bulk.FILTER_MB_PER_S` states for the bulk plans.

Usage: ``nice python benchmarks/bench_bulk_filter.py [--quick]``; raw output goes to
``benchmarks/results/bulk_filter.txt`` (``--quick``: ``bulk_filter_quick.txt``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
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


def write_shard(path: Path, records: int, seed: int = 0) -> float:
    import numpy as np

    rng = np.random.default_rng(seed)
    citing = rng.integers(1, 260_000_000, records)
    cited = rng.integers(1, 260_000_000, records)
    # context words drawn from a 20,000-word vocabulary (Zipf-like), so the shard compresses about as the real one
    vocabulary = [f"{w:x}{'ing' if w % 3 else 'ed'}" for w in rng.integers(4096, 2 ** 24, 20_000)]
    ranks = np.minimum(rng.zipf(1.3, size=records * 40), len(vocabulary)) - 1
    started = time.perf_counter()
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as handle:
        for i in range(records):
            with_context = i % 3 == 0
            words = ranks[i * 40:i * 40 + 20 + i % 20]
            handle.write(json.dumps({
                "citingcorpusid": str(citing[i]), "citedcorpusid": None if i % 8 == 0 else str(cited[i]),
                "isinfluential": bool(i % 11 == 0),
                "contexts": [" ".join(vocabulary[w] for w in words)] if with_context else None,
                "intents": (["methodology"] if i % 2 else ["background"]) if with_context else None,
                "updated": f"2020-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}."
                           f"{i % 1000:03d}Z"}) + "\n")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--anchors", type=int, default=216_000)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.records, args.anchors = 50_000, 5_000
    import numpy as np

    from sdr.fetchers import bulk

    lines: list[str] = []

    def log(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    log(machine_line("bench_bulk_filter"))
    log(f"# argv: {' '.join(sys.argv[1:]) or '(defaults)'}; niceness {os.nice(0)}; duckdb threads = this process's "
        f"cores ({len(os.sched_getaffinity(0))}); memory_limit {args.memory_limit}")
    work = Path(tempfile.mkdtemp(prefix="bench-bulk-"))
    try:
        shard = work / "part-00000.jsonl.gz"
        written = write_shard(shard, args.records)
        size = shard.stat().st_size
        log(f"shard: {args.records:,} citations records, {size / 1e6:.1f} MB gzipped ({size / args.records:.0f} bytes a "
            f"record; S2's public sample: 104), written in {written:.1f} s")
        connection = bulk.connect(work, args.memory_limit)
        anchors = np.random.default_rng(1).integers(1, 260_000_000, args.anchors)
        bulk._id_table(connection, "anchors", anchors.tolist())
        started = time.perf_counter()
        kept = connection.execute(f"COPY ({bulk.filter_sql('links', 'citations', shard)}) TO "
                                  f"'{(work / 'kept.parquet').as_posix()}' (FORMAT parquet)").fetchone()[0]
        seconds = time.perf_counter() - started
        log(f"filter (anchors' references and citations, {args.anchors:,} anchors): {seconds:.1f} s, "
            f"{size / 1e6 / seconds:.1f} MB/s gzipped, {args.records / seconds:,.0f} records/s, {kept:,} rows kept")
        log(f"at the public sample's 104 gzipped bytes a record: {args.records / seconds * 104 / 1e6:.1f} MB/s "
            f"(the rate sdr.fetchers.bulk.FILTER_MB_PER_S states)")
        log(f"peak RSS {peak_rss_mib():.0f} MiB")
        log(f"RESULT {json.dumps({'records': args.records, 'gz_bytes': size, 'seconds': seconds, 'mb_per_s': size / 1e6 / seconds, 'kept': kept, 'peak_rss_mib': peak_rss_mib()})}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    output = RESULTS / ("bulk_filter_quick.txt" if args.quick else "bulk_filter.txt")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
