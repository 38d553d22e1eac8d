"""``sdr evaluate <benchmark> … [--json]``: score any model's embeddings with one command.

The output is strict JSON: a metric that is undefined (NaN, e.g. a field with no scored query) is printed as
``null`` and named on stderr.
"""

from __future__ import annotations

import importlib
import json
import sys

from sdr.evaluate import BENCHMARKS
from sdr.jsonio import finite_or_null


def register(subparsers) -> None:
    parser = subparsers.add_parser("evaluate", help="score embeddings or rankings on a benchmark")
    benchmarks = parser.add_subparsers(dest="benchmark", required=True)
    for name, module_name in BENCHMARKS.items():
        module = importlib.import_module(module_name)
        sub = benchmarks.add_parser(name, help=(module.__doc__ or name).strip().splitlines()[0])
        module.add_arguments(sub)
        sub.add_argument("--json", action="store_true", help="print one JSON object on one line (the contract; an undefined metric is null)")
        sub.set_defaults(func=_run(module))
    from sdr.evaluate import suite

    every = benchmarks.add_parser("all", help=suite.__doc__.strip().splitlines()[0].split(": ", 1)[1])
    suite.add_arguments(every)
    every.add_argument("--json", action="store_true", help="print one JSON object")
    every.set_defaults(func=_run(suite))


def _run(module):
    def run(args) -> int:
        metrics, undefined = finite_or_null(module.run(args))
        if undefined:
            print(f"sdr evaluate {args.benchmark}: {len(undefined)} values are undefined (no query to average) "
                  f"and printed as null: {', '.join(undefined[:5])}", file=sys.stderr)
        print(json.dumps(metrics, allow_nan=False, indent=None if args.json else 2))
        return 0

    return run
