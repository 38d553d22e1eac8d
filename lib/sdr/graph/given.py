"""A precomputed graph embedding read back, keyed by Semantic Scholar corpus ids (SciNCL §3.4 / A.4: the S2ORC
citation graph, 52.5 M nodes, embedded once and given to the chapter as a parameter).

Two layouts are read: the folder ``sdr graph embed EDGES --work-dir DIR`` writes (``vectors.npy``, ``[N, d]``,
with ``ids.txt`` beside it, one id a line in the same order, and :data:`EMBEDDING_INFO` with the settings and link
prediction when that command wrote it), or the embeddings JSONL of ``--out`` (``{"paper_id", "embedding"}``). Every id
must be a corpus id (digits only) and appear once; the errors name the file, the line or record, and what was
expected. The vectors stay memory-mapped: only the rows of the papers a chapter asks for are read
(:meth:`GivenEmbedding.restrict`), and their values are checked to be finite there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sdr.jsonio import InputError

__all__ = ["EMBEDDING_INFO", "GivenEmbedding", "Restricted", "check_given_embedding", "read_given_embedding"]

#: Written by :func:`sdr.graph.embed_edge_files` into ``--work-dir``: the PBG settings, the run's report and link
#: prediction on the held-out edges (read back as the given embedding's).
EMBEDDING_INFO = "embedding.json"

_CORPUS_ID = re.compile(r"[0-9]{1,18}")  # digits that fit an int64
_EXPECTED = ("a folder written by `sdr graph embed EDGES --work-dir DIR` (vectors.npy + ids.txt) or an embeddings "
             "JSONL ({\"paper_id\": corpus id, \"embedding\": [...]} a line)")


@dataclass
class Restricted:
    """The given embedding restricted to a chapter's papers: ``ids`` (the chapter's own paper ids, found ones only)
    and their ``vectors``; ``missing``: the chapter's papers whose corpus id is not in the embedding (or who have
    none)."""

    ids: list[str]
    vectors: np.ndarray
    missing: list[str]


@dataclass
class GivenEmbedding:
    """A graph embedding read from ``path``: ``corpus_ids[i]`` has ``vectors[i]`` (memory-mapped for a folder)."""

    path: Path
    corpus_ids: np.ndarray  # int64
    vectors: np.ndarray
    info: dict = field(default_factory=dict)  # embedding.json's config, report and link_prediction, when written

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def link_prediction(self) -> dict[str, float]:
        return dict(self.info.get("link_prediction") or {})

    @property
    def comparator(self) -> str | None:
        return (self.info.get("config") or {}).get("comparator")

    def restrict(self, corpus_id_of: Mapping[str, str | int | None]) -> Restricted:
        """The rows of the papers ``corpus_id_of`` names (chapter paper id → its S2 corpus id, ``None`` when it has
        none), in the mapping's order, keyed by the chapter's ids. Two chapter papers with the same corpus id both
        get its row. A non-finite value in a row read is an :class:`InputError` naming the corpus id and row."""
        import pandas as pd

        wanted, numbers = [], []
        for paper_id, corpus_id in corpus_id_of.items():
            text = "" if corpus_id is None else str(corpus_id).strip()
            if _CORPUS_ID.fullmatch(text):
                wanted.append(paper_id)
                numbers.append(int(text))
        wanted_ids = np.array(numbers, dtype=np.int64)
        rows = pd.Index(self.corpus_ids).get_indexer(wanted_ids) if numbers else np.array([], int)
        found = rows >= 0
        ids = [pid for pid, hit in zip(wanted, found) if hit]
        found_ids = set(ids)
        missing = [pid for pid in corpus_id_of if pid not in found_ids]
        taken = rows[found]
        # read the memory-mapped rows in file order (sequential on disk), then put them back in the chapter's order
        order = np.argsort(taken, kind="stable")
        vectors = np.empty((len(taken), self.dimension), dtype=np.float32)
        vectors[order] = np.asarray(self.vectors[taken[order]], dtype=np.float32)
        bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
        if len(bad):
            row = int(taken[bad[0]])
            raise InputError(f"{self.path}: the vector of corpus id {int(self.corpus_ids[row])} (row {row + 1}) has "
                             f"NaN or infinite values ({len(bad)} such rows among the papers asked for); expected "
                             "finite numbers")
        return Restricted(ids, vectors, missing)


def read_given_embedding(path: str | Path, dimension: int | None = None) -> GivenEmbedding:
    """Read a precomputed graph embedding keyed by S2 corpus ids (see the module's text for the layouts), its
    dimension checked against ``dimension`` when given. Raises :class:`InputError` naming the file and line or
    record for: ``ids.txt`` and ``vectors.npy`` of different lengths, an id that is not all digits, an id twice, an
    empty file, vectors that are not a 2-d array of floats, a dimension other than ``dimension`` or than the one
    :data:`EMBEDDING_INFO` records."""
    path = Path(path)
    if path.is_dir():
        given = _read_folder(path)
    elif path.is_file():
        given = _read_jsonl(path)
    else:
        raise FileNotFoundError(f"{path}: not found; expected {_EXPECTED}")
    _check_dimension(path, given.dimension, dimension)
    return given


def check_given_embedding(path: str | Path, dimension: int | None = None) -> None:
    """The checks of :func:`read_given_embedding` that need no pass over the ids: the files are there, the vectors
    are an ``[N, d]`` float array of the expected dimension (a JSONL's first record only). For a chapter to stop on a
    wrong path or dimension before hours of other work; the full read checks the rest."""
    path = Path(path)
    if path.is_dir():
        found = _load_vectors(path).shape[1]
    elif path.is_file():
        with open(path, encoding="utf-8") as handle:
            first = handle.readline()
        try:
            found = len(json.loads(first)["embedding"])
        except (ValueError, KeyError, TypeError):
            raise InputError(f"{path}:1: not an embedding record; expected {_EXPECTED}") from None
    else:
        raise FileNotFoundError(f"{path}: not found; expected {_EXPECTED}")
    _check_dimension(path, found, dimension)


def _check_dimension(path: Path, found: int, dimension: int | None) -> None:
    if dimension is not None and found != int(dimension):
        raise InputError(f"{path}: the vectors have {found} dimensions; expected {dimension} (graph_dimension): set "
                         "graph_dimension to the given embedding's dimension")


def _load_vectors(folder: Path) -> np.ndarray:
    """``vectors.npy`` of a ``--work-dir`` folder, memory-mapped, once both its files are there: an ``[N, d]`` float
    array or an :class:`InputError` naming the file."""
    ids_path, vectors_path = folder / "ids.txt", folder / "vectors.npy"
    for needed in (ids_path, vectors_path):
        if not needed.is_file():
            raise InputError(f"{needed}: missing; expected {_EXPECTED}")
    try:
        vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise InputError(f"{vectors_path}: not a .npy array ({type(error).__name__}: {str(error)[:120]}); expected "
                         "the [N, d] float32 vectors `sdr graph embed --work-dir` writes") from None
    if vectors.ndim != 2 or vectors.shape[1] < 1 or not np.issubdtype(vectors.dtype, np.floating):
        raise InputError(f"{vectors_path}: an array of shape {vectors.shape} and dtype {vectors.dtype}; expected "
                         "[N, d] floats, one row per line of ids.txt")
    return vectors


def _read_folder(folder: Path) -> GivenEmbedding:
    ids_path, vectors_path = folder / "ids.txt", folder / "vectors.npy"
    vectors = _load_vectors(folder)
    corpus_ids = _read_ids(ids_path)
    if len(vectors) != len(corpus_ids):
        raise InputError(f"{vectors_path}: {len(vectors):,} rows, but {ids_path} has {len(corpus_ids):,} ids; "
                         "expected one row per id, in the same order")
    info = {}
    info_path = folder / EMBEDDING_INFO
    if info_path.is_file():
        try:
            info = json.loads(info_path.read_text(encoding="utf-8"))
        except ValueError as error:
            raise InputError(f"{info_path}: not JSON ({error}); expected the settings `sdr graph embed` "
                             "writes") from None
        recorded = (info.get("config") or {}).get("dimension") if isinstance(info, dict) else None
        if not isinstance(info, dict) or (recorded is not None and str(recorded) != str(vectors.shape[1])):
            raise InputError(f"{info_path}: records dimension {recorded!r} for vectors of dimension "
                             f"{vectors.shape[1]}; "
                             "expected the settings of the run that wrote vectors.npy")
    return GivenEmbedding(folder, corpus_ids, vectors, info)


def _read_ids(ids_path: Path) -> np.ndarray:
    """``ids.txt``: one corpus id a line (digits), each once; the errors name the line."""
    import pandas as pd

    with open(ids_path, encoding="utf-8", newline="") as handle:
        lines = handle.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise InputError(f"{ids_path}: no ids; expected one S2 corpus id a line")
    ids = pd.Series(lines, dtype=object).str.strip()
    digits = ids.str.fullmatch(_CORPUS_ID.pattern).fillna(False).to_numpy(bool)
    if not digits.all():
        line = int(np.flatnonzero(~digits)[0])
        raise InputError(f"{ids_path}:{line + 1}: id {lines[line][:40]!r}; expected an S2 corpus id (digits only), "
                         "one a line")
    numbers = ids.astype(np.int64).to_numpy()
    repeated = pd.Series(numbers).duplicated(keep=False).to_numpy()
    if repeated.any():
        first = int(np.flatnonzero(repeated)[0])
        again = int(np.flatnonzero(numbers == numbers[first])[1])
        raise InputError(f"{ids_path}:{again + 1}: corpus id {numbers[first]} again (first on line {first + 1}); "
                         "expected each id once")
    return numbers


def _read_jsonl(path: Path) -> GivenEmbedding:
    from sdr.evaluate.embeddings import read_embeddings  # dimensions, duplicates and values checked with their line

    embeddings = read_embeddings(path)
    for record, paper_id in enumerate(embeddings, start=1):
        if not _CORPUS_ID.fullmatch(str(paper_id).strip()):
            raise InputError(f"{path}: record {record} has paper_id {str(paper_id)[:40]!r}; expected an S2 corpus id "
                             "(digits only)")
    corpus_ids = np.array([int(pid) for pid in embeddings], dtype=np.int64)
    if len(np.unique(corpus_ids)) != len(corpus_ids):  # "007" and "7" are one corpus id
        seen: dict[int, int] = {}
        for record, number in enumerate(corpus_ids, start=1):
            if int(number) in seen:
                raise InputError(f"{path}: record {record} is corpus id {number} again (first: record "
                                 f"{seen[int(number)]}); expected each id once")
            seen[int(number)] = record
    return GivenEmbedding(path, corpus_ids, np.stack(list(embeddings.values())).astype(np.float32))
