"""Reading JSON and JSONL files with errors that name the file, the line and what was expected.

Every reader in the package goes through these, so a truncated or malformed file fails the same way
everywhere: ``path:line: not valid JSON (reason, column c); expected …``. ``.gz`` files are read
transparently.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

from tqdm.auto import tqdm


def open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def require_file(path: str | Path, what: str) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: file not found; expected {what}")
    return path


def load_json(path: str | Path, what: str = "a JSON document"):
    """Load a whole JSON file; invalid JSON names the file, line, column and character position."""
    path = require_file(path, what)
    with open_text(path) as handle:
        text = handle.read()
    if not text.strip():
        raise ValueError(f"{path}: empty file; expected {what}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}, character "
                         f"{error.pos}: {error.msg}); expected {what}") from None


def read_jsonl(path: str | Path, what: str = "one JSON object per line", progress: bool = False,
               allow_empty: bool = False) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)`` of a JSONL file; blank lines are skipped.

    A line that is not a JSON object raises ``ValueError`` naming the file and line; a file without any
    record raises too unless ``allow_empty``.
    """
    path = require_file(path, what)
    seen_any = False
    with open_text(path) as handle:
        for line_number, line in enumerate(tqdm(handle, desc=path.name, unit=" lines", disable=not progress),
                                           start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{line_number}: not valid JSON ({error.msg}, column {error.colno}); "
                                 f"expected {what}") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{line_number}: expected a JSON object ({what}), "
                                 f"got {type(record).__name__}")
            seen_any = True
            yield line_number, record
    if not seen_any and not allow_empty:
        raise ValueError(f"{path}: empty file; expected {what}")
