"""Abstracts JSONL in, facets JSONL out: :func:`read_abstracts` (strict, ``--skip-bad`` counted) and
:func:`split_file` (written atomically, never over its input). It changes with the file formats.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from sdr.facets.splitters import Splitter
from sdr.jsonio import InputError, SkippedLines, check_id, read_jsonl, require_file


ABSTRACTS_EXPECTED = "abstracts JSONL {'paper_id': str, 'title': str, 'abstract': str}"


def read_abstracts(path: str | Path, skipped: SkippedLines | None = None) -> list[dict]:
    """The records of an abstracts JSONL file ``{"paper_id", "title", "abstract"}`` (other fields kept).

    Strict: ``paper_id`` is a non-empty string (an integer is read as its digits; ``null`` is an error),
    ``abstract`` a string, ``title`` a string when present, each ``paper_id`` once, no NaN or infinite
    numbers anywhere. A bad line raises :class:`~sdr.jsonio.InputError` naming file and line, or, with
    ``skipped`` (``--skip-bad``), is handed to it and left out.
    """
    path = require_file(path, ABSTRACTS_EXPECTED)
    records: list[dict] = []
    first_line: dict[str, int] = {}

    def bad(reason: str, message: str) -> None:
        if skipped is None:
            raise InputError(message)
        skipped(reason, message)

    for line_number, record in read_jsonl(path, ABSTRACTS_EXPECTED, allow_empty=True, finite=True,
                                          on_error=skipped):
        where = f"{path}:{line_number}"
        paper_id, title = record.get("paper_id"), record.get("title")
        if isinstance(paper_id, int) and not isinstance(paper_id, bool):
            paper_id = str(paper_id)
        if not isinstance(paper_id, str) or not paper_id.strip() or not isinstance(record.get("abstract"), str) \
                or not (title is None or isinstance(title, str)):
            found = {key: type(record[key]).__name__ if record[key] is not None else "null"
                     for key in ("paper_id", "title", "abstract") if key in record}
            bad("missing_abstract" if not isinstance(record.get("abstract"), str) else "bad_fields",
                f"{where}: found {found or sorted(record)}; expected {{'paper_id': str, 'title': str, "
                f"'abstract': str}}")
            continue
        try:
            check_id(paper_id, "paper_id", where)  # no surrounding whitespace, no path separator
        except InputError as error:
            bad("bad_fields", str(error))
            continue
        if paper_id in first_line:
            bad("duplicate_id", f"{where}: paper_id {paper_id!r} again (first on line {first_line[paper_id]}); "
                                f"expected each paper once")
            continue
        first_line[paper_id] = line_number
        records.append({**record, "paper_id": paper_id})
    return records


def split_file(path: str | Path, out: str | Path, splitter: Splitter, skip_bad: bool = False,
               batch_size: int = 256) -> dict:
    """``{"paper_id", "title", "abstract"}`` lines (:func:`read_abstracts`) → the same lines plus
    ``background``, ``method``, ``result``, written to ``out`` atomically (never over ``path``).

    A bad line raises :class:`~sdr.jsonio.InputError` naming file and line; with ``skip_bad`` it is skipped,
    counted in the report (``skipped_<reason>``, ``skipped_examples``: the first messages) and summarised on
    stderr."""
    from sdr.outputs import Outputs

    outputs = Outputs(inputs={"ABSTRACTS": path}, outputs={"--out": out}, force=True).check()
    skipped = SkippedLines() if skip_bad else None
    records = read_abstracts(path, skipped)
    with outputs.commit() as staged, staged["--out"].open("w", encoding="utf-8") as handle:
        for start in range(0, len(records), batch_size):
            chunk = records[start:start + batch_size]
            for record, facets in zip(chunk, splitter.split_many([r["abstract"] for r in chunk])):
                handle.write(json.dumps({**record, **facets}, ensure_ascii=False) + "\n")
    report = {f"skipped_{reason}": n for reason, n in sorted((skipped.counts if skipped else {}).items())}
    report["written"] = len(records)
    if skipped is not None:
        report["skipped_examples"] = skipped.examples
        if skipped.total:
            print(f"sdr facets split: {path}: {skipped.summary()}", file=sys.stderr)
    return report
