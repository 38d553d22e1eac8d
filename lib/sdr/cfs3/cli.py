"""``sdr cfs3 build``: the CFS3 construction from the command line.

``sdr cfs3 build --phrasebank DIR --sentences FILE.jsonl --out FILE.jsonl [--n 5] [--ppdb FILE]
[--parser MODEL] [--documents] [--force]``: input lines ``{"id","text"}`` (sentences, or documents split
with pysbd under ``--documents``); one output line per labelled sentence with the ``id`` of its
input line; a summary on stderr. No output may be an input (or lie in the Phrasebank folder), and an
existing output is replaced only with ``--force``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sdr.outputs import output_file


def add_build_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``sdr cfs3 build``."""
    parser.add_argument("--phrasebank", required=True, type=Path,
                        help="Academic Phrasebank crawl directory (six <page>.json) or a label<TAB>name<TAB>phrase file")
    parser.add_argument("--sentences", required=True, type=Path, help='input JSONL, one {"id","text"} per line')
    parser.add_argument("--out", required=True, type=output_file, help="output JSONL of labelled sentences")
    parser.add_argument("--n", type=int, default=5, help="n-gram length (paper: 5)")
    parser.add_argument("--ppdb", type=Path, default=None, help="PPDB 2.0 lexical file for phrase augmentation")
    parser.add_argument("--ppdb-per-phrase", type=int, default=None,
                        help="at most this many paraphrases per phrase, drawn at random (default: all)")
    parser.add_argument("--parser", default=None,
                        help="spaCy pipeline with a dependency parser for the root check (e.g. en_core_web_sm); "
                             "without it the check is skipped")
    parser.add_argument("--documents", action="store_true", help="input texts are documents: split them with pysbd")
    parser.add_argument("--multi-label", choices=("drop", "first"), default="drop",
                        help="sentences matching n-grams of several labels: drop them (default) or keep the first")
    parser.add_argument("--table-cells", choices=("combine", "cells", "skip"), default="combine",
                        help="Phrasebank table columns: join them into phrases (default), keep cells, or skip")
    parser.add_argument("--split", action="store_true",
                        help="also write <out>_train.jsonl and <out>_valid.jsonl (stratified 4:1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and of PPDB sampling")
    parser.add_argument("--stats", type=output_file, default=None, help="write counts and per-label statistics as JSON")
    parser.add_argument("--ngram-dict", type=output_file, default=None, help="write the n-gram dictionary as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--force", action="store_true", help="replace output files that exist")


def build_outputs(args: argparse.Namespace):
    """The command's inputs and outputs (:class:`sdr.outputs.Outputs`), checked before any work: no output
    over an input or over another output, none replaced without ``--force``, each one writable."""
    from sdr.outputs import Outputs

    outputs = {"--out": args.out}
    if args.split:
        stem = args.out.with_suffix("")
        outputs["--split (train)"] = Path(f"{stem}_train.jsonl")
        outputs["--split (valid)"] = Path(f"{stem}_valid.jsonl")
    outputs["--ngram-dict"] = args.ngram_dict
    outputs["--stats"] = args.stats
    inputs = {"--phrasebank": args.phrasebank, "--sentences": args.sentences, "--ppdb": args.ppdb}
    return Outputs(inputs=inputs, outputs=outputs, force=args.force).check()


def run_build(args: argparse.Namespace) -> int:
    """Run ``sdr cfs3 build``; the summary goes to stderr. Outputs are checked before the work and written
    together at the end (temporary files renamed into place), so a failure leaves none of them half-written."""
    from sdr.cfs3.build import build_cfs3, summary_lines
    from sdr.cfs3.dataset import label_table, stratified_split, write_labelled
    from sdr.cfs3.phrases import load_phrases
    from sdr.cfs3.sentences import read_sentences_jsonl
    from sdr.jsonio import finite_or_null

    progress = not args.no_progress
    if args.n < 1:
        raise ValueError(f"--n {args.n}: expected a positive n-gram length")
    outputs = build_outputs(args)
    options = {"table_cells": args.table_cells} if args.phrasebank.is_dir() else {}
    phrases = load_phrases(args.phrasebank, **options)
    sentences, sentence_report = read_sentences_jsonl(args.sentences, documents=args.documents, progress=progress)
    build = build_cfs3(phrases, sentences, n=args.n, ppdb=args.ppdb, ppdb_per_phrase=args.ppdb_per_phrase,
                       parser=args.parser, multi_label=args.multi_label, seed=args.seed, progress=progress)
    lines = [f"input: {sentence_report.get('lines', 0):,} lines → {len(sentences):,} sentences "
             f"({sentence_report.get('empty_texts_skipped', 0)} empty texts skipped)"]
    lines += summary_lines(build)
    train = valid = None
    with outputs.commit() as staged:
        write_labelled(staged["--out"], build.records)
        lines.append(f"wrote {len(build.records):,} labelled sentences to {args.out}")
        if args.split:
            train, valid, _ = stratified_split(build.records, seed=args.seed)
            write_labelled(staged["--split (train)"], train)
            write_labelled(staged["--split (valid)"], valid)
            lines.append(f"split 4:1: {len(train):,} train → {outputs.outputs['--split (train)']}, {len(valid):,} "
                         f"valid → {outputs.outputs['--split (valid)']}")
        if args.ngram_dict is not None:
            build.dictionary.to_json(staged["--ngram-dict"])
            lines.append(f"wrote the n-gram dictionary to {args.ngram_dict}")
        if args.stats is not None:
            table = label_table(build.records, build.label_names, train, valid, dict(build.dictionary.per_label()))
            payload = {"counts": build.counts(), "match": build.stats.as_dict(),
                       "phrases": _jsonable(build.phrases.report), "ngrams": build.dictionary.report,
                       "input": sentence_report, "ppdb": build.ppdb_report, "labels": table.to_dict(orient="records")}
            payload, undefined = finite_or_null(payload)  # strict JSON: an undefined value is null
            staged["--stats"].write_text(json.dumps(payload, indent=1, allow_nan=False), encoding="utf-8")
            lines.append(f"wrote statistics to {args.stats}"
                         + (f" ({len(undefined)} undefined values written as null)" if undefined else ""))
    print("\n".join(f"cfs3: {line}" for line in lines), file=sys.stderr)
    return 0


def _jsonable(report: dict) -> dict:
    return {k: (v if isinstance(v, (int, float, str, list, dict, bool)) or v is None else str(v))
            for k, v in report.items()}


def register(subparsers) -> None:
    """Add ``sdr cfs3 …`` to the ``sdr`` command line."""
    parser = subparsers.add_parser("cfs3", help="build the CFS3 dataset by n-gram distant supervision")
    commands = parser.add_subparsers(dest="cfs3_command", required=True)
    build = commands.add_parser("build", help="label sentences with Academic Phrasebank n-grams (paper 004, §3)",
                                description=__doc__.strip().splitlines()[0])
    add_build_arguments(build)
    build.set_defaults(func=run_build)
