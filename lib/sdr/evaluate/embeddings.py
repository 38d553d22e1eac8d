"""Reading and writing embeddings files: JSONL lines ``{"paper_id": …, "embedding": [...]}``.

``doc_id`` and ``id`` are accepted as the key, so files written by SPECTER's, SciRepEval's or
SciNCL's scripts can be scored as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from sdr.jsonio import read_jsonl

ID_KEYS = ("paper_id", "doc_id", "id")


def read_embeddings(path: str | Path, dtype=np.float32) -> dict[str, np.ndarray]:
    """Read an embeddings JSONL file into ``{id: vector}`` (float32 by default).

    Evaluators that round distances (SciDocs rounds to 5 decimals) read ``dtype=np.float64``, so a
    tie in an outside model's file breaks exactly as in the official script.

    Raises ``ValueError`` naming the file and line for malformed JSON, a missing id or embedding,
    or a vector whose dimension differs from the first line's.
    """
    path = Path(path)
    embeddings: dict[str, np.ndarray] = {}
    dimension = None
    for line_number, record in read_jsonl(path, "embeddings JSONL {'paper_id', 'embedding'}", allow_empty=True):
        key = next((k for k in ID_KEYS if k in record), None)
        if key is None or "embedding" not in record:
            raise ValueError(
                f"{path}:{line_number}: expected keys 'paper_id' (or 'doc_id'/'id') and "
                f"'embedding', got {sorted(record)}"
            )
        vector = np.asarray(record["embedding"], dtype=dtype)
        if vector.ndim != 1 or vector.size == 0:
            raise ValueError(f"{path}:{line_number}: 'embedding' must be a non-empty list of numbers")
        if dimension is None:
            dimension = vector.size
        elif vector.size != dimension:
            raise ValueError(
                f"{path}:{line_number}: embedding has {vector.size} dimensions, "
                f"the first line had {dimension}"
            )
        embeddings[str(record[key])] = vector
    if not embeddings:
        raise ValueError(f"{path}: no embeddings in file")
    return embeddings


def write_embeddings(path: str | Path, embeddings: Mapping[str, Iterable[float]]) -> Path:
    """Write ``{id: vector}`` as embeddings JSONL (the format every evaluator reads)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for paper_id, vector in embeddings.items():
            values = [float(x) for x in np.asarray(vector, dtype=np.float32)]
            handle.write(json.dumps({"paper_id": str(paper_id), "embedding": values}) + "\n")
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
