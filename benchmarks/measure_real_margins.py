"""The seed spread behind the `real` profile's margins of FLeW, CoSaEmb, SPECTER, SciNCL and SciAspect (issues 30.5
and 37.6).

Runs each chapter at `real` (profiles.yml, nothing else overridden) with ``seed`` 0..N-1 (the whole run follows the
seed: replica corpus, split, sampling, batch order, training) and prints, per seed, what the chapter's checks with
teeth read:

* FLeW (``gain_margin``): each facet encoder's held-out triplet-loss gain over the untrained encoder ("held-out
  triplets"); the check needs every gain > 0 and the largest above the margin. (``loss_margin``): each training
  run's probe-loss drop ("probe loss (training runs)", "published recipe"); every drop must exceed the margin.
* CoSaEmb (``heldout_gain_margin``): how far the graded (1, 2, 3) run's held-out loss lies below the untrained
  encoder's, in percent ("distance_order"); (``probe_loss_ratio``) each run's probe loss at the end as a share of
  its start ("training").
* SPECTER and SciNCL (``min_loss_drop``), SciAspect (``min_probe_loss_drop``): each training run's probe-loss drop
  (the results store's "loss checks"); and every gain a check with teeth read ("gain checks": SPECTER's and SciNCL's
  ``min_gain`` on the SciDocs replica, SciNCL's ``min_collision_gap``).

The margins in profiles.yml are set from this output (benchmarks/results/real_margins.txt). Run it with
``SDR_DATA`` unset, as ``make book`` runs on the embedded default: CoSaEmb's check applies to the replicas of one
synthetic corpus only. Usage: ``python benchmarks/measure_real_margins.py [--seeds 4] [--chapters flew cosaemb specter scincl sciaspect]
[--set PARAMETER VALUE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_chapter(chapter: str, seed: int, work: Path, overrides: Sequence[Sequence[str]] = ()) -> dict:
    """One `real` run at ``seed``; ``overrides`` are ``(parameter, value)`` pairs passed as ``-p`` (e.g. a margin set to
    a value no seed reaches, so a check still reads and stores its gain without stopping the run)."""
    results = work / f"results-{chapter}-{seed}"
    environment = {**os.environ, "SDR_RESULTS": str(results)}
    started = time.time()
    extra = [item for name, value in overrides for item in ("-p", name, value)]
    subprocess.run([sys.executable, "-m", "sdr.cli", "chapter", chapter, "--profile", "real", "-p", "seed", str(seed),
                    *extra, "--output-dir", str(work / f"pages-{chapter}-{seed}"), "--force"],
                   cwd=ROOT, env=environment, check=True)
    record = json.loads((results / chapter / "real.json").read_text())
    record["wall_s"] = time.time() - started
    return record


def table(record: dict, name: str):
    from sdr.book.results import from_jsonable

    return from_jsonable(record["tables"])[name]


def flew_reading(record: dict) -> dict:
    """Each facet encoder's held-out loss gain (``gain_margin``) and each training run's probe-loss drop, before
    minus after training (``loss_margin``; the book's recipe and the published recipe's encoders)."""
    heldout = table(record, "held-out triplets")  # indexed by encoder
    reading = {f"held-out gain {k}": float(v) for k, v in heldout["loss gain"].items()}
    for name in ("probe loss (training runs)", "published recipe"):
        if name not in record["tables"]:
            continue
        runs = table(record, name)  # indexed by the run's name
        drop = runs["loss before training"] - runs["loss after training"]
        reading.update({f"probe drop {k}": float(v) for k, v in drop.items()})
    return reading


def cosaemb_reading(record: dict) -> dict:
    """How far each run's held-out loss lies below the untrained encoder's, in percent (``heldout_gain_margin``),
    and each run's probe loss at the end as a share of its start (``probe_loss_ratio``)."""
    order = table(record, "distance_order").set_index("model")
    loss = order["held-out loss (1, 2, 3)"]
    reading = {str(k): float(100 * (1 - v / loss.loc["untrained"])) for k, v in loss.items() if k != "untrained"}
    training = table(record, "training").set_index("run")
    ratio = training["loss after"].astype(float) / training["loss before"].astype(float)
    reading.update({f"probe ratio {k}": float(v) for k, v in ratio.items()})
    return reading


def loss_checks_reading(record: dict) -> dict:
    """Each training run's probe-loss drop, before minus after training, as its check read it (the results store's
    "loss checks" table, :meth:`sdr.book.ChapterRun.record_loss_check`): SPECTER's and SciNCL's ``min_loss_drop``,
    SciAspect's ``min_probe_loss_drop`` (its SPECTERCL run; the others shown)."""
    checks = table(record, "loss checks")  # indexed by the run's name
    reading = {f"probe drop {k}": float(v) for k, v in checks["drop"].items()}
    if "gain checks" in record["tables"]:  # SPECTER's and SciNCL's min_gain (their SciDocs gain), SciNCL's Fig. 5 gap
        gains = table(record, "gain checks")  # indexed by the check's name
        reading.update({f"gain check {k}": float(v) for k, v in gains["gain"].items()})
    return reading


READERS = {"flew": flew_reading, "cosaemb": cosaemb_reading, "specter": loss_checks_reading,
           "scincl": loss_checks_reading, "sciaspect": loss_checks_reading}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--chapters", nargs="+", default=list(READERS), choices=list(READERS))
    parser.add_argument("--set", nargs=2, action="append", default=[], metavar=("PARAMETER", "VALUE"),
                        help="a parameter for every run (e.g. --set min_gain -100: the gain is read, never checked)")
    args = parser.parse_args()
    print(f"SDR_DATA={os.environ.get('SDR_DATA', '(unset)')}; seeds 0..{args.seeds - 1}; profile real"
          + "".join(f"; {name} = {value}" for name, value in args.set))
    with tempfile.TemporaryDirectory() as folder:
        for chapter in args.chapters:
            readings = {}
            for seed in range(args.seeds):
                record = run_chapter(chapter, seed, Path(folder), args.set)
                readings[seed] = READERS[chapter](record)
                print(f"{chapter} seed {seed} ({record['wall_s']:.0f} s wall):",
                      {k: round(v, 4) for k, v in readings[seed].items()}, flush=True)
            for name in readings[0]:
                values = [readings[s][name] for s in readings]
                sd = f"{statistics.stdev(values):.4f}" if len(values) > 1 else "n/a (one seed)"
                print(f"{chapter} {name}: min {min(values):.4f} max {max(values):.4f} spread (max - min) "
                      f"{max(values) - min(values):.4f} mean {statistics.mean(values):.4f} sd {sd}")
            gains = [[v for k, v in readings[s].items() if not k.startswith(("probe", "gain check"))]
                     for s in readings]
            if all(gains):
                print(f"{chapter} largest held-out gain per seed: {[round(max(g), 4) for g in gains]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
