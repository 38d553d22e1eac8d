"""``sdr evaluate <benchmark> … [--json]``: score any model's embeddings with one command."""

from __future__ import annotations

import importlib
import json

from sdr.evaluate import BENCHMARKS


def register(subparsers) -> None:
    parser = subparsers.add_parser("evaluate", help="score embeddings or rankings on a benchmark")
    benchmarks = parser.add_subparsers(dest="benchmark", required=True)
    for name, module_name in BENCHMARKS.items():
        module = importlib.import_module(module_name)
        sub = benchmarks.add_parser(name, help=(module.__doc__ or name).strip().splitlines()[0])
        module.add_arguments(sub)
        sub.add_argument("--json", action="store_true", help="print one JSON object (the contract)")
        sub.set_defaults(func=_run(module))
    from sdr.evaluate import suite

    every = benchmarks.add_parser("all", help=suite.__doc__.strip().splitlines()[0].split(": ", 1)[1])
    suite.add_arguments(every)
    every.add_argument("--json", action="store_true", help="print one JSON object")
    every.set_defaults(func=_run(suite))


def _run(module):
    def run(args) -> int:
        metrics = module.run(args)
        if args.json:
            print(json.dumps(metrics))
        else:
            print(json.dumps(metrics, indent=2))
        return 0

    return run
