"""Reading and writing embeddings files: JSONL lines ``{"paper_id": …, "embedding": [...]}``.

``doc_id`` and ``id`` are accepted as the key, so files written by SPECTER's, SciRepEval's or
SciNCL's scripts can be scored as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from sdr.jsonio import InputError, read_jsonl, record_id

ID_KEYS = ("paper_id", "doc_id", "id")


EXPECTED = "embeddings JSONL {'paper_id': str, 'embedding': [finite numbers]}"


def read_embeddings(path: str | Path, dtype=np.float32) -> dict[str, np.ndarray]:
    """Read an embeddings JSONL file (``.gz`` too) into ``{id: vector}`` (float32 by default).

    Evaluators that round distances (SciDocs rounds to 5 decimals) read ``dtype=np.float64``, so a
    tie in an outside model's file breaks exactly as in the official script.

    The reader is strict, since a wrong vector changes every score silently: each line needs an id
    (``paper_id``, ``doc_id`` or ``id``: a non-empty string, or an integer, read as its digits) and an
    ``embedding`` that is a non-empty list of finite numbers (not booleans, not nested lists, nothing that
    overflows ``dtype``), of the first line's dimension; an id may appear once. Anything else raises
    :class:`~sdr.jsonio.InputError` naming the file and line, what was found and what was expected.
    """
    path = Path(path)
    embeddings: dict[str, np.ndarray] = {}
    first_line: dict[str, int] = {}
    dimension = None
    for line_number, record in read_jsonl(path, EXPECTED, allow_empty=True, finite=True):
        where = f"{path}:{line_number}"
        key = next((k for k in ID_KEYS if k in record), None)
        if key is None or "embedding" not in record:
            raise InputError(f"{where}: found keys {sorted(record)}; expected 'paper_id' (or 'doc_id'/'id') and "
                             f"'embedding'")
        paper_id = record_id(record[key], key, where)
        vector = _vector(record["embedding"], dtype, where)
        if dimension is None:
            dimension = vector.size
        elif vector.size != dimension:
            raise InputError(f"{where}: the embedding has {vector.size} dimensions; expected {dimension}, the "
                             f"dimension of the first line")
        if paper_id in first_line:
            raise InputError(f"{where}: id {paper_id!r} again (first on line {first_line[paper_id]}); expected "
                             f"each id once")
        first_line[paper_id] = line_number
        embeddings[paper_id] = vector
    if not embeddings:
        raise InputError(f"{path}: no embeddings in file; expected {EXPECTED} lines")
    return embeddings


def _vector(value, dtype, where: str) -> np.ndarray:
    if not isinstance(value, list) or not value:
        found = json.dumps(value)[:60] if not isinstance(value, (list, dict)) else (
            "an empty list" if value == [] else f"a JSON {type(value).__name__}")
        raise InputError(f"{where}: 'embedding' is {found}; expected a non-empty list of numbers")
    kinds = set(map(type, value))
    if not kinds <= {int, float}:
        position = next(i for i, x in enumerate(value) if type(x) not in (int, float))
        raise InputError(f"{where}: 'embedding' value {position} is {json.dumps(value[position])[:40]}; expected "
                         f"numbers only (not booleans, strings, lists or null)")
    try:
        with np.errstate(over="ignore"):  # an overflow becomes inf, reported below
            vector = np.asarray(value, dtype=np.float64).astype(dtype)
    except OverflowError:
        vector = np.full(len(value), np.inf)
    if not np.all(np.isfinite(vector)):
        position = int(np.flatnonzero(~np.isfinite(vector))[0])
        raise InputError(f"{where}: 'embedding' value {position} ({str(value[position])[:40]}) is not a finite "
                         f"{np.dtype(dtype).name}; expected finite numbers")
    return vector


def write_embeddings(path: str | Path, embeddings: Mapping[str, Iterable[float]]) -> Path:
    """Write ``{id: vector}`` as embeddings JSONL (the format every evaluator reads).

    A vector with NaN or an infinity is an error: JSON has no such numbers and the readers refuse them.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for paper_id, vector in embeddings.items():
            values = np.asarray(vector, dtype=np.float32)
            if not np.all(np.isfinite(values)):
                raise ValueError(f"{path}: the embedding of {paper_id!r} has NaN or infinite values; not written")
            handle.write(json.dumps({"paper_id": str(paper_id), "embedding": [float(x) for x in values]},
                                    allow_nan=False) + "\n")
    return path


class MissingEmbeddings:
    """Counts ids a benchmark needs but the embeddings lack, so nothing is dropped silently."""

    def __init__(self, benchmark: str):
        self.benchmark = benchmark
        self.missing: list[str] = []

    def check(self, ids: Iterable[str], embeddings: Mapping[str, np.ndarray]) -> list[str]:
        found = []
        for paper_id in ids:
            if paper_id in embeddings:
                found.append(paper_id)
            else:
                self.missing.append(paper_id)
        return found

    def report(self) -> dict:
        unique = sorted(set(self.missing))
        return {"count": len(unique), "examples": unique[:5]}

    def warn(self, stream=None) -> None:
        import sys

        if self.missing:
            report = self.report()
            print(
                f"{self.benchmark}: {report['count']} ids have no embedding "
                f"(e.g. {', '.join(report['examples'])})",
                file=stream or sys.stderr,
            )
