"""How long the seeded synthetic corpus takes to generate: ``sdr.synthetic.make_corpus`` at 400, 2,000
and 10,000 papers (the smoke chapters use a few hundred; the contract is < 2 s for 2,000 papers).

Each size is generated once in a fresh subprocess (so one size's memory does not inflate the next) and
the script records wall time, papers/s, citation edges, co-view/co-read pairs and the peak resident
memory of that subprocess (and, in brackets, its peak after the imports alone). A second call with the same seed is checked to give the same corpus.

Usage: ``python benchmarks/bench_synthetic.py [--sizes 400,2000,10000] [--quick]``; raw output goes to
``benchmarks/results/synthetic.txt``. The numbers are measurements, not asserted by any test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "synthetic.txt"


def machine_line(name: str) -> str:
    """One line naming the machine: CPUs usable (nproc), CPU model, load, python and torch versions."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import torch

        torch_version = f"torch {torch.__version__} ({torch.get_num_threads()} threads)"
    except ImportError:
        torch_version = "torch not installed"
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return (f"# {name} · {datetime.now():%Y-%m-%d %H:%M:%S} · nproc {len(os.sched_getaffinity(0))} · {model} · "
            f"load average {load} · python {platform.python_version()} · {torch_version}")


def peak_rss_mib() -> float:
    """Peak resident memory of this process in MiB.

    ``VmHWM`` of ``/proc/self/status`` where it exists: Linux carries ``resource.getrusage``'s
    ``ru_maxrss`` across fork + exec, so a worker started by a parent that imported torch would report
    the parent's size. Elsewhere ``ru_maxrss`` (KiB on Linux, bytes on macOS).
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)


def worker(n_papers: int) -> dict:
    """Generate one corpus (twice for the determinism check) and measure the first generation."""
    from sdr.synthetic import make_corpus

    baseline_mib = peak_rss_mib()  # after the imports
    start = time.perf_counter()
    corpus = make_corpus(n_papers=n_papers, seed=0)
    seconds = time.perf_counter() - start
    peak_mib = peak_rss_mib()
    again = make_corpus(n_papers=n_papers, seed=0)
    same = ([p.abstract for p in corpus.papers.values()] == [p.abstract for p in again.papers.values()]
            and sorted((c.citing, c.cited) for c in corpus.graph) == sorted((c.citing, c.cited) for c in again.graph))
    return {"papers": len(corpus.papers), "seconds": seconds, "edges": len(corpus.graph),
            "coviews": len(corpus.coviews), "coreads": len(corpus.coreads), "peak_mib": peak_mib,
            "baseline_mib": baseline_mib,
            "deterministic": same}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="400,2000,10000", help="comma-separated corpus sizes")
    parser.add_argument("--quick", action="store_true", help="400 and 2,000 papers only")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.sizes = "400,2000"
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0

    lines = [machine_line("bench_synthetic" + (" --quick" if args.quick else "")),
             f"{'papers':>7} {'seconds':>8} {'papers/s':>9} {'edges':>7} {'co-views':>9} {'co-reads':>9} "
             f"{'peak RSS MiB':>12} {'(imports)':>9}  same corpus again"]
    print("\n".join(lines), flush=True)
    for size in (int(s) for s in args.sizes.split(",")):
        child = subprocess.run([sys.executable, __file__, "--worker", str(size)], capture_output=True, text=True)
        if child.returncode != 0:
            line = f"{size:>7} FAILED: {child.stderr.strip().splitlines()[-1] if child.stderr.strip() else child.returncode}"
        else:
            r = json.loads(child.stdout.strip().splitlines()[-1])
            line = (f"{r['papers']:>7} {r['seconds']:>8.2f} {r['papers'] / r['seconds']:>9.0f} {r['edges']:>7} "
                    f"{r['coviews']:>9} {r['coreads']:>9} {r['peak_mib']:>12.0f} {r['baseline_mib']:>9.0f}  "
                    f"{r['deterministic']}")
        lines.append(line)
        print(line, flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")
    return 0 if all("FAILED" not in line for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
