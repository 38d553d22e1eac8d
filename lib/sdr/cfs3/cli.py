"""``sdr cfs3 build``: the CFS3 construction from the command line.

``sdr cfs3 build --phrasebank DIR --sentences FILE.jsonl --out FILE.jsonl [--n 5] [--ppdb FILE]
[--parser MODEL] [--documents]``: input lines ``{"id","text"}`` (sentences, or documents split
with pysbd under ``--documents``); one output line per labelled sentence with the ``id`` of its
input line; a summary on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_build_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``sdr cfs3 build``."""
    parser.add_argument("--phrasebank", required=True, type=Path,
                        help="Academic Phrasebank crawl directory (six <page>.json) or a label<TAB>name<TAB>phrase file")
    parser.add_argument("--sentences", required=True, type=Path, help='input JSONL, one {"id","text"} per line')
    parser.add_argument("--out", required=True, type=Path, help="output JSONL of labelled sentences")
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
    parser.add_argument("--stats", type=Path, default=None, help="write counts and per-label statistics as JSON")
    parser.add_argument("--ngram-dict", type=Path, default=None, help="write the n-gram dictionary as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def run_build(args: argparse.Namespace) -> int:
    """Run ``sdr cfs3 build``; the summary goes to stderr."""
    from sdr.cfs3.build import build_cfs3, summary_lines
    from sdr.cfs3.dataset import label_table, stratified_split, write_labelled
    from sdr.cfs3.phrases import load_phrases
    from sdr.cfs3.sentences import read_sentences_jsonl

    progress = not args.no_progress
    if args.n < 1:
        raise ValueError(f"--n {args.n}: expected a positive n-gram length")
    options = {"table_cells": args.table_cells} if args.phrasebank.is_dir() else {}
    phrases = load_phrases(args.phrasebank, **options)
    sentences, sentence_report = read_sentences_jsonl(args.sentences, documents=args.documents, progress=progress)
    build = build_cfs3(phrases, sentences, n=args.n, ppdb=args.ppdb, ppdb_per_phrase=args.ppdb_per_phrase,
                       parser=args.parser, multi_label=args.multi_label, seed=args.seed, progress=progress)
    write_labelled(args.out, build.records)
    lines = [f"input: {sentence_report.get('lines', 0):,} lines → {len(sentences):,} sentences "
             f"({sentence_report.get('empty_texts_skipped', 0)} empty texts skipped)"]
    lines += summary_lines(build)
    lines.append(f"wrote {len(build.records):,} labelled sentences to {args.out}")
    train = valid = None
    if args.split:
        train, valid, _ = stratified_split(build.records, seed=args.seed)
        stem = args.out.with_suffix("")
        write_labelled(f"{stem}_train.jsonl", train)
        write_labelled(f"{stem}_valid.jsonl", valid)
        lines.append(f"split 4:1: {len(train):,} train → {stem}_train.jsonl, {len(valid):,} valid → {stem}_valid.jsonl")
    if args.ngram_dict is not None:
        build.dictionary.to_json(args.ngram_dict)
        lines.append(f"wrote the n-gram dictionary to {args.ngram_dict}")
    if args.stats is not None:
        table = label_table(build.records, build.label_names, train, valid, dict(build.dictionary.per_label()))
        payload = {"counts": build.counts(), "match": build.stats.as_dict(), "phrases": _jsonable(build.phrases.report),
                   "ngrams": build.dictionary.report, "input": sentence_report, "ppdb": build.ppdb_report,
                   "labels": table.to_dict(orient="records")}
        args.stats.parent.mkdir(parents=True, exist_ok=True)
        args.stats.write_text(json.dumps(payload, indent=1), encoding="utf-8")
        lines.append(f"wrote statistics to {args.stats}")
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
