"""The ``sdr`` command line.

Sub-commands are contributed by the modules that own them, so this file only dispatches:
``sdr evaluate …`` (:mod:`sdr.evaluate.cli`), ``sdr embed …`` (:mod:`sdr.embed`), ``sdr train …``
(:mod:`sdr.launch`), ``sdr chapter …`` (:mod:`sdr.book`), ``sdr data …`` (:mod:`sdr.datasets.cli`), ``sdr cfs3 …``
(:mod:`sdr.cfs3`) and ``sdr graph …`` (:mod:`sdr.graph.cli`).
Each owner exposes ``register(subparsers)``, which adds its parser and sets ``func``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = (
    "sdr.evaluate.cli", "sdr.embed", "sdr.book", "sdr.datasets.cli", "sdr.cfs3", "sdr.graph.cli", "sdr.facets.cli",
    "sdr.dryrun", "sdr.launch",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sdr", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError, KeyError) as error:
        # Bad input (and an unusable path: permissions, a full disk) is reported naming what was wrong, with
        # exit status 2; tracebacks are for bugs.
        print(f"sdr {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
