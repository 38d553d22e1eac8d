"""The device check's benchmark table: pools ``bench_train_gpu.py``'s runs over its processes.

``benchmarks/device_check.sh`` runs ``bench_train_gpu.py`` once per process, alternating the baseline library and
this one (each run one measurement per setting and variant); each process ends with a ``BENCH_JSON`` line. This
script reads those lines from the raw outputs given, and prints per setting and (library, variant): triplets/s as
the median over the runs with min–max, the number of runs, MFU at the median (FLOPs of the timed steps, counted by
the benchmark — 6 × matrix-product parameters × the tokens computed + attention — over the device's dense peak)
and peak memory, then the new library's speed over the baseline's for each variant both ran.

Usage: ``python benchmarks/device_check_summary.py OUT/bench_*.txt``.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def read_records(paths: list[Path]) -> list[dict]:
    records = []
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("BENCH_JSON "):
                records.append(json.loads(line[len("BENCH_JSON "):]))
    return records


def summary(records: list[dict]) -> str:
    if not records:
        return "no benchmark output (no BENCH_JSON line in the files given)"
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    memory: dict[tuple[str, str, str], float] = {}
    flops: dict[str, dict] = {}
    first = records[0]
    for record in records:
        label = record["label"] or "?"
        flops.update(record["settings"])
        for joined, speeds in record["measured"].items():
            setting, name = joined.split(" / ", 1)
            key = record["trainers"][name]["key"]
            values[(setting, label, key)].extend(speeds)
            memory[(setting, label, key)] = max(memory.get((setting, label, key), 0.0),
                                                record["memory_gib"].get(joined) or 0.0)
    peak = first.get("peak")
    lines = [first["device"], f"texts: {first['source']}; {first['timed_triplets']} triplets timed a run "
                              f"({first['steps']} optimizer steps)"]
    for record in records:
        lines.append(f"  process: {record['library']}")
    for setting in dict.fromkeys(setting for setting, _, _ in values):
        stats = flops[setting]
        lines.append(f"setting '{setting}': {stats['repeated']:.1%} of a step's texts repeat an earlier one")
        lines.append(f"  {'library':<24}{'variant':<14}{'triplets/s median (min–max)':>30}{'runs':>6}{'MFU':>8}"
                     f"{'peak memory':>13}")
        medians = {}
        for (setting_, label, key), speeds in sorted(values.items()):
            if setting_ != setting:
                continue
            median = statistics.median(speeds)
            medians[(label, key)] = median
            work = stats["flops_all"] if key.startswith("st") else stats["flops_ours"]
            seconds = first["timed_triplets"] / median
            mfu = f"{work / seconds / (peak[0] * 1e12):.1%}" if peak else "n/a"
            spread = f"{median:.1f} ({min(speeds):.1f}–{max(speeds):.1f})"
            memory_text = f"{memory[(setting, label, key)]:.1f} GiB" if memory[(setting, label, key)] else ""
            lines.append(f"  {label:<24}{key:<14}{spread:>30}{len(speeds):>6}{mfu:>8}{memory_text:>13}")
        for (label, key), median in medians.items():
            if label == "new" and ("baseline", key) in medians:
                lines.append(f"  new / baseline, {key}: {median / medians[('baseline', key)]:.2f}x")
    return "\n".join(lines)


def main() -> int:
    paths = [Path(argument) for argument in sys.argv[1:]]
    print(summary(read_records([path for path in paths if path.exists()])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
