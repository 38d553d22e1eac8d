"""Citation edges in: ``citing<TAB>cited[<TAB>weight]`` TSV (:func:`read_edges_tsv`, :func:`write_edges_tsv`),
edges from a graph or tuples (:func:`edges_of`), and :class:`EdgeFiles`, which streams TSV, CitationGraph JSONL,
S2AG ``citations`` shards and S2ORC metadata in chunks, from files of any size.

Errors name the file and line. This module changes when an edge layout is added or read differently, not
with PBG.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Union

import numpy as np

from sdr.corpus import CitationGraph
from sdr.jsonio import InputError, check_id, iter_lines


Edge = Union[tuple[str, str], tuple[str, str, float]]


MAX_WEIGHT = 2 ** 53
"""The largest edge weight read: a repeat count beyond it is no exact integer (``1e300`` would wrap round in an
integer cast and the edge would be dropped silently); it is an error instead."""


def _tsv_edge(path: Path, line_number: int, text: str) -> tuple[str, str, float]:
    """One ``citing<TAB>cited[<TAB>weight]`` line; a weight is a whole number of repeats from 1 to
    :data:`MAX_WEIGHT` (a fractional weight is an error, not rounded); ids are checked by
    :func:`~sdr.jsonio.check_id` (no surrounding whitespace, no path separator). Errors name the file and line."""
    what = "'citing<TAB>cited' or 'citing<TAB>cited<TAB>weight' lines"
    parts = text.split("\t")
    if len(parts) not in (2, 3) or not parts[0].strip() or not parts[1].strip():
        raise InputError(f"{path}:{line_number}: found {text[:80]!r}; expected {what}")
    where = f"{path}:{line_number}"
    citing, cited = check_id(parts[0], "citing", where), check_id(parts[1], "cited", where)
    weight = 1.0
    if len(parts) == 3:
        try:
            weight = float(parts[2])
        except ValueError:
            raise InputError(f"{where}: weight {parts[2][:40]!r}; expected a whole number of repeats >= 1") from None
        if math.isfinite(weight) and weight > MAX_WEIGHT:
            raise InputError(f"{where}: weight {parts[2].strip()[:40]!r} overflows a whole number of repeats "
                             f"(at most {MAX_WEIGHT:,}); expected a small whole number >= 1")
        if not math.isfinite(weight) or weight < 1 or weight != int(weight):
            raise InputError(f"{where}: weight {parts[2].strip()[:40]!r}; expected a whole number "
                             f"of repeats >= 1 (fractional weights are not rounded: remove the line to leave "
                             f"the edge out)")
    return citing, cited, weight


def read_edges_tsv(path: str | Path) -> list[tuple[str, str, float]]:
    """Read ``citing<TAB>cited[<TAB>weight]`` lines (UTF-8, ``.gz`` too; blank lines and ``#`` comments skipped).

    A weight is a repetition count (see :func:`embed`), so it must be a whole number >= 1 (``3``, ``3.0`` and
    ``3e0`` are read as 3): a fractional weight is an error, not rounded, since rounding 0.4 to no edge would
    leave both papers with their random initial vectors. Raises :class:`~sdr.jsonio.InputError` naming the file
    and line for a line without two ids, such a weight, or a file without edges.
    """
    path = Path(path)
    what = "'citing<TAB>cited' or 'citing<TAB>cited<TAB>weight' lines"
    edges = []
    for line_number, line in iter_lines(path, what):
        text = line.rstrip("\n").rstrip("\r")
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        edges.append(_tsv_edge(path, line_number, text))
    if not edges:
        raise InputError(f"{path}: no edges; expected {what}")
    return edges


def write_edges_tsv(path: str | Path, edges: Iterable[Edge] | CitationGraph) -> Path:
    """Write edges (or a :class:`CitationGraph`) as ``citing<TAB>cited<TAB>weight`` lines."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for citing, cited, weight in edges_of(edges):
            handle.write(f"{citing}\t{cited}\t{weight:g}\n")
    return path


def edges_of(source: Iterable[Edge] | CitationGraph) -> list[tuple[str, str, float]]:
    """``(citing, cited, weight)`` triples from a graph (weight 1) or from 2- / 3-tuples."""
    if isinstance(source, CitationGraph):
        return [(c.citing, c.cited, 1.0) for c in source]
    edges = []
    for number, edge in enumerate(source, 1):
        if len(edge) not in (2, 3):
            raise ValueError(f"edge {number}: expected (citing, cited) or (citing, cited, weight), got {edge!r}")
        weight = float(edge[2]) if len(edge) == 3 else 1.0
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"edge {number} {edge[0]}->{edge[1]}: weight must be finite and >= 0, got {edge[2]!r}")
        edges.append((str(edge[0]), str(edge[1]), weight))
    return edges


def _json_edge(path: Path, line_number: int, record: dict) -> list[tuple[str, str, float]] | None:
    """The edges of one JSON record (see :class:`EdgeFiles`); ``None`` for an S2AG record that misses an id."""

    where = f"{path}:{line_number}"

    def node_id(value, key: str) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise InputError(f"{where}: {key!r} must be a paper id (string or integer), got {value!r}")
        return check_id(str(value), key, where)

    if "citing" in record or "cited" in record:  # CitationGraph.to_jsonl, optional "weight"
        if "citing" not in record or "cited" not in record:
            raise InputError(f"{where}: a citation record needs both 'citing' and 'cited', got keys "
                             f"{sorted(record)}")
        weight = record.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
            raise InputError(f"{where}: weight must be a finite number >= 0, got {weight!r}")
        if weight > MAX_WEIGHT:
            raise InputError(f"{where}: weight {weight:g} overflows a whole number of repeats (at most "
                             f"{MAX_WEIGHT:,}); expected a small number >= 0")
        return [(node_id(record["citing"], "citing"), node_id(record["cited"], "cited"), float(weight))]
    if "citingcorpusid" in record or "citedcorpusid" in record:  # S2AG `citations` dataset
        citing, cited = record.get("citingcorpusid"), record.get("citedcorpusid")
        if citing is None or cited is None:
            return None  # a reference S2 could not resolve to a paper: not an edge, counted by the caller
        return [(node_id(citing, "citingcorpusid"), node_id(cited, "citedcorpusid"), 1.0)]
    if "outbound_citations" in record:  # S2ORC 2020 metadata: paper_id -> each outbound citation
        if not isinstance(record["outbound_citations"] or [], list):
            raise InputError(f"{where}: 'outbound_citations' must be a list of paper ids")
        citing = node_id(record.get("paper_id"), "paper_id")
        return [(citing, node_id(cited, "outbound_citations"), 1.0) for cited in record["outbound_citations"] or []]
    raise InputError(f"{where}: expected a citation record: {{'citing', 'cited'[, 'weight']}} "
                     f"(CitationGraph JSONL), {{'citingcorpusid', 'citedcorpusid'}} (S2AG citations) or "
                     f"{{'paper_id', 'outbound_citations'}} (S2ORC metadata); got keys {sorted(record)[:8]}")


class EdgeFiles:
    """Citation edges streamed in chunks from files of any size; no edge list is ever held whole.

    Layouts, sniffed per file from its first record (``.gz`` is read transparently; a folder stands for
    every file in it, sorted, as S2AG ships its shards):

    * TSV: ``citing<TAB>cited[<TAB>weight]`` (blank lines and ``#`` comments skipped) — :func:`write_edges_tsv`;
    * JSONL, one record a line, each one of
      ``{"citing", "cited"[, "weight"]}`` (:meth:`CitationGraph.to_jsonl`),
      ``{"citingcorpusid", "citedcorpusid", …}`` (the S2AG ``citations`` dataset; a record with a null id is
      a reference S2 did not resolve to a paper: no edge, counted in ``unresolved``), or
      ``{"paper_id", "outbound_citations", …}`` (S2ORC 2020 metadata: one edge per outbound citation;
      ``inbound_citations`` are the other papers' outbound ones and are not read twice).

    Bad input raises ``ValueError`` naming the file and line. ``edges`` and ``unresolved`` count the last
    complete pass of :meth:`chunks`.
    """

    def __init__(self, paths: str | Path | Iterable[str | Path]):
        paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        self.paths: list[Path] = []
        from sdr.jsonio import file_kind, require_file

        what = "an edges file (TSV or JSONL)"
        for path in map(Path, paths):
            if path.is_dir():
                files = sorted(p for p in path.iterdir() if not p.name.startswith(".") and not p.is_dir())
                if not files:
                    raise FileNotFoundError(f"{path}: folder without edge files")
                self.paths += [require_file(p, what) for p in files]  # a FIFO or device among them: refused
            elif file_kind(path) == "missing":
                raise FileNotFoundError(f"{path}: no such edges file")
            else:
                self.paths.append(require_file(path, what))
        if not self.paths:
            raise FileNotFoundError("EdgeFiles: no edge files given")
        self.edges = 0
        self.unresolved = 0

    def __str__(self) -> str:
        names = ", ".join(str(p) for p in self.paths[:3]) + (f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else "")
        return names

    def records(self, path: Path) -> Iterator[tuple[str, str, float]]:
        """The edges of one file, in file order (strict UTF-8, a byte-order mark dropped, ``.gz`` read whole or
        refused, JSON without repeated keys; errors name the file and line)."""
        from sdr.jsonio import iter_lines, parse_json

        layout = None
        what = "citation edges ('citing<TAB>cited[<TAB>weight]' lines or JSONL citation records)"
        for line_number, line in iter_lines(path, what):
            text = line.rstrip("\n").rstrip("\r")
            stripped = text.strip()
            if not stripped or (layout != "json" and stripped.startswith("#")):
                continue
            if layout is None:
                layout = "json" if stripped.startswith("{") else "tsv"
            if layout == "tsv":
                yield _tsv_edge(path, line_number, text)
                continue
            try:
                record = parse_json(stripped, finite=False)
            except json.JSONDecodeError as error:
                raise InputError(f"{path}:{line_number}: not valid JSON ({error.msg}, column {error.colno}); "
                                 "expected one citation record a line") from None
            except ValueError as error:
                raise InputError(f"{path}:{line_number}: {error}; expected one citation record a line") from None
            if not isinstance(record, dict):
                raise InputError(f"{path}:{line_number}: expected a JSON object, got {type(record).__name__}")
            edges = _json_edge(path, line_number, record)
            if edges is None:
                self.unresolved += 1
                continue
            yield from edges

    def chunks(self, size: int = 1_000_000) -> Iterator[tuple[list[str], list[str], np.ndarray]]:
        """``(citing ids, cited ids, weights)`` of up to ``size`` edges at a time, over every file."""
        self.edges = self.unresolved = 0
        citing: list[str] = []
        cited: list[str] = []
        weights: list[float] = []
        for path in self.paths:
            for source, target, weight in self.records(path):
                citing.append(source)
                cited.append(target)
                weights.append(weight)
                if len(citing) == size:
                    self.edges += size
                    yield citing, cited, np.asarray(weights, dtype=np.float64)
                    citing, cited, weights = [], [], []
        if citing:
            self.edges += len(citing)
            yield citing, cited, np.asarray(weights, dtype=np.float64)
        if not self.edges:
            raise ValueError(f"{self}: no edges (expected 'citing<TAB>cited[<TAB>weight]' lines or JSONL citation "
                             "records)" + (f"; {self.unresolved} records without both corpus ids" if self.unresolved else ""))
