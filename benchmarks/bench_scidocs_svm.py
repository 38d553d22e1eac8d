"""CPU time of SciDocs' classification grid (``sdr.evaluate.scidocs.classification_f1``: ``GridSearchCV`` cv 3 over
7 C values and a refit, ``LinearSVC`` without intercept, one thread) on synthetic 768-d vectors: class centres
scaled by ``--signal`` plus unit Gaussian noise, so the classes overlap. The Benchmarks chapter's cost plan scales
it to MAG's and MeSH's sizes (``sdr.methods.benchmarks.SCIDOCS_SVM_CPU_HOURS``): an estimate of the plan's SVM
lines, not a measurement of SciDocs itself.

Usage: ``python benchmarks/bench_scidocs_svm.py [--train 1000 2000] [--test 500] [--classes 19] [--signal 0.2]
[--quick]``; one line per size, appended to ``benchmarks/results/scidocs_svm_cpu.txt`` (with the load average at
its start: the machine is shared).
"""

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from sdr.evaluate.scidocs import classification_f1  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "scidocs_svm_cpu.txt"

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--train", type=int, nargs="+", default=[1000, 2000])
parser.add_argument("--test", type=int, default=500)
parser.add_argument("--classes", type=int, default=19)
parser.add_argument("--signal", type=float, default=0.2)
parser.add_argument("--quick", action="store_true", help="300 training vectors only (checks that it runs)")
args = parser.parse_args()
rng = np.random.default_rng(0)
centres = rng.normal(size=(args.classes, 768))


def draw(n):
    y = rng.integers(args.classes, size=n)
    return centres[y] * args.signal + rng.normal(size=(n, 768)), y


for n_train in [300] if args.quick else args.train:
    X_train, y_train = draw(n_train)
    X_test, y_test = draw(args.test)
    load = os.getloadavg()
    start, cpu = time.perf_counter(), time.process_time()
    f1 = classification_f1(X_train, y_train, X_test, y_test)
    line = (f"train {n_train} test {args.test} classes {args.classes} signal {args.signal}: F1 {f1}, "
            f"{time.perf_counter() - start:.1f} s wall, {time.process_time() - cpu:.1f} s CPU (load average at start "
            f"{load[0]:.1f})")
    print(line, flush=True)
    if not args.quick:
        with RESULTS.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
