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
import signal
import sys

COMMAND_MODULES = (
    "sdr.evaluate.cli", "sdr.embed", "sdr.book", "sdr.datasets.cli", "sdr.cfs3", "sdr.graph.cli", "sdr.facets.cli",
    "sdr.dryrun", "sdr.launch",
)


class Parser(argparse.ArgumentParser):
    """argparse's parser with a usage error in one line (``sdr embed: error: …``), exit status 2, like every
    other input error of ``sdr``; ``--help`` prints the usage. Sub-command parsers are of this class too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def leaf_commands(parser: argparse.ArgumentParser, prefix: tuple = ()):
    """``(command words, parser)`` of every leaf of the ``sdr`` parser tree (the output-layer and fuzz tests
    enumerate the commands with it, so a new command is covered or fails them)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from leaf_commands(sub, prefix + (name,))
            return
    yield " ".join(prefix), parser


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="sdr", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    previous = None
    try:  # SIGTERM (a killed job, a timeout) unwinds like Ctrl-C, so temporary files and folders are removed
        previous = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread
        pass
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError, KeyError) as error:
        # Bad input (and an unusable path: permissions, a full disk) is reported naming what was wrong, with
        # exit status 2; tracebacks are for bugs.
        message = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
        print(f"sdr {args.command}: error: {' '.join(message.split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"sdr {args.command}: interrupted (temporary files removed)", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
