"""Run every ``benchmarks/bench_*.py`` in turn and print a summary (``make bench``).

Each benchmark is a standalone script that prints its measurements and writes them, raw, to
``benchmarks/results/<name>.txt``. This runner starts each one in a subprocess with the same Python,
echoes its output live, and carries on when one fails: the summary lists every script with its exit
status, wall time and the results file it wrote (or the last line of its error output).

Usage: ``python benchmarks/run_all.py [--quick] [--only NAME ...]``. ``--quick`` is passed to the
scripts that accept it (smaller inputs: a check that they run, not numbers to publish). The exit status
is 1 when any script failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


@dataclass
class Outcome:
    """What one benchmark script did."""

    name: str
    returncode: int
    seconds: float
    results_file: Path | None  # written (or rewritten) by this run
    last_error: str


def discover(only: list[str] | None = None) -> list[Path]:
    """The benchmark scripts, sorted by name; ``only`` keeps those named (``train`` or ``bench_train``)."""
    scripts = sorted(HERE.glob("bench_*.py"))
    if only:
        wanted = {name.removeprefix("bench_").removesuffix(".py") for name in only}
        unknown = wanted - {s.stem.removeprefix("bench_") for s in scripts}
        if unknown:
            raise ValueError(f"no benchmark script for {sorted(unknown)} in {HERE}; "
                             f"have {[s.stem for s in scripts]}")
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in wanted]
    return scripts


def run_script(script: Path, quick: bool = False) -> Outcome:
    """Run one script, echoing its output; keep the tail of its output for the summary."""
    name = script.stem.removeprefix("bench_")
    results_file = RESULTS / f"{name}.txt"
    before = results_file.stat().st_mtime if results_file.exists() else None
    command = [sys.executable, str(script)]
    if quick and "--quick" in script.read_text():
        command.append("--quick")
    print(f"\n=== {script.name} ({' '.join(command[1:])})", flush=True)
    start = time.perf_counter()
    tail: deque[str] = deque(maxlen=20)
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          cwd=HERE.parent) as process:
        for line in process.stdout:  # echo live: a slow benchmark shows it is alive
            print(line, end="", flush=True)
            tail.append(line.rstrip())
        returncode = process.wait()
    seconds = time.perf_counter() - start
    written = results_file.exists() and results_file.stat().st_mtime != before
    last_error = ""
    if returncode != 0:
        last_error = next((line for line in reversed(tail) if line.strip()), f"exit status {returncode}")
    return Outcome(name, returncode, seconds, results_file if written else None, last_error)


def summary(outcomes: list[Outcome]) -> str:
    """One line per script: status, wall time, results file or the error."""
    lines = [f"{'benchmark':<16} {'status':<7} {'seconds':>8}  results"]
    for outcome in outcomes:
        status = "ok" if outcome.returncode == 0 else f"FAIL {outcome.returncode}"
        where = (str(outcome.results_file.relative_to(HERE.parent)) if outcome.results_file
                 else "(no results file written)")
        if outcome.returncode != 0:
            where += f"  error: {outcome.last_error}"
        lines.append(f"{outcome.name:<16} {status:<7} {outcome.seconds:>8.1f}  {where}")
    failed = sum(o.returncode != 0 for o in outcomes)
    lines.append(f"{len(outcomes)} benchmarks run: {len(outcomes) - failed} ok, {failed} failed")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to the scripts that accept it")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these (e.g. train synthetic)")
    args = parser.parse_args(argv)
    try:
        scripts = discover(args.only)
    except ValueError as error:
        print(f"run_all: error: {error}", file=sys.stderr)
        return 2
    outcomes = [run_script(script, args.quick) for script in scripts]
    print("\n=== summary\n" + summary(outcomes), flush=True)
    return 1 if any(o.returncode != 0 for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
