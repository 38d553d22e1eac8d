"""Citation-graph embeddings with PyTorch-BigGraph (PBG), link prediction, FAISS neighbour search.

SciNCL (Ostendorff et al., §3.4 and A.5) embeds the S2ORC citation graph with PBG and samples training
triplets from the k-nearest-neighbour bands of those embeddings; FLeW embeds weighted facet subgraphs
the same way. This module is that first step, for any edge list:

>>> from sdr import graph
>>> result = graph.embed([("a", "b"), ("b", "c"), ("c", "a", 3.0)], graph.GraphEmbeddingConfig(dimension=8))
>>> vectors = result.as_dict()            # {paper_id: np.ndarray[dimension]}
>>> result.link_prediction                # {"MRR": …, "Hits@1": …, "Hits@10": …, "AUC": …} on held-out edges
>>> ids, scores = result.neighbours(k=2)  # FAISS flat search with the comparator's metric

API (stable; other chapters import it):

* :class:`GraphEmbeddingConfig` — PBG settings. Defaults are SciNCL A.5 / malteos/scincl
  ``biggraph_configs/s2orc_768d_dot.py``: dimension 768, ``dot`` comparator, 20 epochs, lr 0.1,
  ranking loss with margin 0.15, ``max_norm`` 1.0, no global embedding, no uniform negatives (batch
  negatives only), a 99 / 1 train / link-prediction split of the edges. Directed by default;
  ``undirected=True`` adds every training edge in both directions (SciNCL A.7.1).
* :func:`embed` — embed a :class:`~sdr.corpus.CitationGraph` or an iterable of ``(citing, cited)`` /
  ``(citing, cited, weight)`` edges; returns a :class:`GraphEmbedding`. A weight is a repetition count,
  as FLeW weights its facet subgraphs: an edge of weight ``w`` is written ``w * weight_scale`` times,
  which must be a whole number (a fractional one is an error, not rounded; an edge of weight 0 is left out
  and counted in ``report``). Held-out edges are chosen among distinct edges before repetition, so no copy
  of a test edge is trained on.
* :func:`embed_edge_files` (also :func:`embed` given a path) — the same for a graph of any size (S2ORC's
  52.5 M nodes / 463.7 M edges): edge files (:class:`EdgeFiles`: TSV, CitationGraph JSONL, S2AG
  ``citations`` shards, S2ORC metadata; ``.gz``; folders) are streamed twice in chunks, node ids kept as
  one sorted array (:class:`NodeIds`), edges spilled into PBG's partition buckets and deduplicated and
  split bucket by bucket (:func:`write_buckets`), and PBG trains in partitioned mode with
  ``num_partitions`` chosen from the node count and a memory budget (:func:`plan_partitions`;
  ``GraphEmbeddingConfig.num_partitions`` / ``memory_budget_gb``). With ``work_dir`` the vectors are a
  memory-mapped ``vectors.npy`` (``ids.txt`` beside it).
* :func:`read_edges_tsv` — ``citing<TAB>cited[<TAB>weight]`` per line, weights whole numbers >= 1; errors
  name file and line.
* :func:`nearest_neighbours` — exact FAISS search in blocks of queries, the metric matching the comparator
  (:data:`COMPARATOR_METRIC`: ``dot`` → inner product, ``cos`` → cosine), self excluded. SciNCL's bands
  over a large corpus: :func:`sdr.samplers.knn_bands` (blocked, keeps only the bands; IVF, GPU).
* ``sdr graph embed EDGES… --dim D [--epochs E] [--comparator dot|cos] [--undirected] [--partitions P]
  [--memory-gb G] [--work-dir DIR] [--out F.jsonl] [--force]`` writes the book's embeddings JSONL
  (``{"paper_id", "embedding"}``), so ``sdr evaluate`` and FAISS read it, and/or ``DIR/vectors.npy``.

Link prediction is PBG's own ranking evaluator (``torchbiggraph.eval.RankingEvaluator``), the one
behind SciNCL Table 5: each held-out edge's score is ranked against the corrupted edges built from
the other held-out edges of its batch (``eval_num_batch_negs``) and uniformly drawn nodes
(``eval_num_uniform_negs``), on both sides; MRR, Hits@1, Hits@10 and AUC are reported in percent.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Union, get_args, get_origin

import numpy as np
import torch

from sdr.corpus import CitationGraph
from sdr.jsonio import InputError, iter_lines

__all__ = [
    "GraphEmbeddingConfig",
    "GraphEmbedding",
    "EmbeddingReport",
    "COMPARATOR_METRIC",
    "LINK_PREDICTION_METRICS",
    "embed",
    "embed_edge_files",
    "write_buckets",
    "Buckets",
    "EdgeFiles",
    "NodeIds",
    "PartitionPlan",
    "plan_partitions",
    "default_memory_budget",
    "training_edges",
    "read_edges_tsv",
    "write_edges_tsv",
    "edges_of",
    "citation_graph_from_triplets",
    "nearest_neighbours",
    "register",
]

#: The FAISS metric that ranks like each PBG comparator (``samplers.knn_band_triplets`` takes these).
COMPARATOR_METRIC = {"dot": "ip", "cos": "cosine"}
#: SciNCL Table 5's columns, in its order.
LINK_PREDICTION_METRICS = ("MRR", "Hits@1", "Hits@10", "AUC")

_ENTITY = "paper"
_RELATION = "cites"

Edge = Union[tuple[str, str], tuple[str, str, float]]


# torchbiggraph 1.0.0 warns on import (pkg_resources, which the pin setuptools<81 keeps working) and
# while training (deprecated torch storage calls): noise for a reader, silenced here and in PBG's
# spawned workers (which read PYTHONWARNINGS).
_PBG_WARNINGS = ("ignore:pkg_resources is deprecated as an API:UserWarning,"
                 "ignore::UserWarning:torchbiggraph.tensorlist,ignore::UserWarning:torchbiggraph.train")


def _patch_torchbiggraph_schema() -> None:
    """torchbiggraph 1.0.0's ``schema.unpack_optional`` tests ``type_ is Optional[arg]``; on Python
    ≥ 3.9 typing builds a new object for each ``Optional[...]``, so ``is`` is False and every config
    fails with ``NotImplementedError: Unknown type: typing.Optional[float]``. Compare by structure."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
        from torchbiggraph import schema

    def unpack_optional(type_):
        args = get_args(type_)
        if get_origin(type_) is not Union or len(args) != 2 or type(None) not in args:
            raise TypeError("Not an optional type")
        return next(arg for arg in args if arg is not type(None))

    schema.unpack_optional = unpack_optional


_patch_torchbiggraph_schema()


@dataclass
class GraphEmbeddingConfig:
    """PyTorch-BigGraph settings; defaults are SciNCL's (A.5, Table 5's best row: 768-d dot).

    ``test_fraction`` of the distinct edges (at least one when there are ≥ 2 edges and it is > 0) is
    held out for link prediction; 0 trains on everything and reports no link prediction.
    """

    dimension: int = 768
    comparator: str = "dot"
    epochs: int = 20
    learning_rate: float = 0.1
    margin: float = 0.15
    test_fraction: float = 0.01
    undirected: bool = False
    weight_scale: float = 1.0
    seed: int = 0
    batch_size: int = 1000
    max_norm: Optional[float] = 1.0
    num_batch_negs: int = 50
    num_uniform_negs: int = 0
    eval_num_batch_negs: int = 1000
    eval_num_uniform_negs: int = 1000
    init_scale: float = 1e-3
    #: PBG's ``num_partitions``: None chooses it from the node count and ``memory_budget_gb``
    #: (:func:`plan_partitions`); 1 keeps every embedding in memory.
    num_partitions: Optional[int] = None
    #: Memory the embedding run may use; None = half of this machine's physical memory.
    memory_budget_gb: Optional[float] = None

    def __post_init__(self):
        if self.comparator not in COMPARATOR_METRIC:
            raise ValueError(f"GraphEmbeddingConfig: comparator must be one of {sorted(COMPARATOR_METRIC)}, "
                             f"got {self.comparator!r}")
        if self.dimension < 1 or self.epochs < 1:
            raise ValueError(f"GraphEmbeddingConfig: dimension and epochs must be >= 1, got "
                             f"{self.dimension}, {self.epochs}")
        if not 0.0 <= self.test_fraction < 1.0:
            raise ValueError(f"GraphEmbeddingConfig: test_fraction must be in [0, 1), got {self.test_fraction}")
        if self.weight_scale <= 0:
            raise ValueError(f"GraphEmbeddingConfig: weight_scale must be > 0, got {self.weight_scale}")
        if self.num_partitions is not None and self.num_partitions < 1:
            raise ValueError(f"GraphEmbeddingConfig: num_partitions must be >= 1 or None, got {self.num_partitions}")
        if self.memory_budget_gb is not None and self.memory_budget_gb <= 0:
            raise ValueError(f"GraphEmbeddingConfig: memory_budget_gb must be > 0, got {self.memory_budget_gb}")


@dataclass
class EmbeddingReport:
    """What went into the PBG run: counts of nodes and edges, and anything left out (nothing silent)."""

    nodes: int = 0
    distinct_edges: int = 0
    train_edges: int = 0  # after repetition by weight and, if undirected, both directions
    test_edges: int = 0
    self_loops: int = 0
    zero_weight_edges: int = 0  # left out: weight * weight_scale == 0
    merged_duplicates: int = 0  # the same (citing, cited) listed twice: weights summed
    unresolved_edges: int = 0  # S2AG citation records without a citing or cited corpus id: no edge, counted
    num_partitions: int = 1  # PBG partitions (1: every embedding in memory)
    seconds: float = 0.0
    phases: dict = field(default_factory=dict)  # seconds per phase (ids, buckets, train, link_prediction, vectors)

    def __str__(self) -> str:
        text = (f"{self.nodes} nodes, {self.distinct_edges} distinct edges -> {self.train_edges} training "
                f"edges (with repeats), {self.test_edges} held out; {self.num_partitions} partition"
                f"{'s' if self.num_partitions != 1 else ''}; {self.seconds:.1f} s")
        if self.unresolved_edges:
            text += f"; {self.unresolved_edges} citation records without both corpus ids (no edge)"
        if self.zero_weight_edges:
            text += f"; {self.zero_weight_edges} edges left out (weight 0)"
        if self.merged_duplicates:
            text += f"; {self.merged_duplicates} duplicate lines merged (weights summed)"
        return text


@dataclass
class GraphEmbedding:
    """Node embeddings from PBG: ``ids[i]`` has ``vectors[i]``; link prediction on the held-out edges."""

    ids: list[str]
    vectors: np.ndarray
    config: GraphEmbeddingConfig
    link_prediction: dict[str, float] = field(default_factory=dict)
    report: EmbeddingReport = field(default_factory=EmbeddingReport)
    test_edges: list[tuple[str, str]] = field(default_factory=list)

    @property
    def metric(self) -> str:
        """FAISS metric matching the comparator (``"ip"`` for dot, ``"cosine"`` for cos)."""
        return COMPARATOR_METRIC[self.config.comparator]

    def as_dict(self) -> dict[str, np.ndarray]:
        return {pid: self.vectors[i] for i, pid in enumerate(self.ids)}

    def neighbours(self, k: int, query_ids: Sequence[str] | None = None) -> tuple[list[list[str]], np.ndarray]:
        """The ``k`` nearest other nodes of each query (all nodes by default), nearest first."""
        return nearest_neighbours(self.vectors, self.ids, k, metric=self.metric, query_ids=query_ids)

    def save_jsonl(self, path: str | Path) -> Path:
        from sdr.evaluate.embeddings import write_embeddings

        return write_embeddings(path, self.as_dict())


# ------------------------------------------------------------------------------------ edges in


def _tsv_edge(path: Path, line_number: int, text: str) -> tuple[str, str, float]:
    """One ``citing<TAB>cited[<TAB>weight]`` line; a weight is a whole number of repeats >= 1 (a fractional weight
    is an error, not rounded). Errors name the file and line."""
    what = "'citing<TAB>cited' or 'citing<TAB>cited<TAB>weight' lines"
    parts = text.split("\t")
    if len(parts) not in (2, 3) or not parts[0].strip() or not parts[1].strip():
        raise InputError(f"{path}:{line_number}: found {text[:80]!r}; expected {what}")
    weight = 1.0
    if len(parts) == 3:
        try:
            weight = float(parts[2])
        except ValueError:
            raise InputError(f"{path}:{line_number}: weight {parts[2][:40]!r}; expected a whole number of "
                             f"repeats >= 1") from None
        if not math.isfinite(weight) or weight < 1 or weight != int(weight):
            raise InputError(f"{path}:{line_number}: weight {parts[2].strip()[:40]!r}; expected a whole number "
                             f"of repeats >= 1 (fractional weights are not rounded: remove the line to leave "
                             f"the edge out)")
    return parts[0].strip(), parts[1].strip(), weight


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


def citation_graph_from_triplets(triplets: Iterable[Sequence]) -> tuple[CitationGraph, dict, dict]:
    """The citation graph that SPECTER's training triplets carry: one edge ``query → positive`` per triplet.

    SPECTER (§3) draws a query's positives from the papers it cites, so every (query, positive) pair of its
    released triplets (SciRepEval's ``cite_prediction`` config, :func:`sdr.corpus.read_scirepeval_triplets`)
    is a real citation. Negatives are not edges: the files do not say which negatives are hard (cited by a
    positive) and which are random. This is the real graph the book can download for SciNCL's ``paper``
    profile; SciNCL itself embeds the whole S2ORC graph (52 M nodes), which no registry entry provides.

    Args:
        triplets: ``(query, positive, negative)`` :class:`~sdr.corpus.Paper` triples.

    Returns:
        ``(graph, papers, report)``: the graph, every paper of the triplets by id (negatives included, so
        they can be embedded and sampled as easy negatives), and counts (``triplets``, ``edges``,
        ``repeated_pairs``: triplets whose citation was already an edge; ``self_citations``: a query
        given as its own positive, kept as the graph keeps self-loops and counted).
    """
    citation_graph, papers = CitationGraph(), {}
    report = {"triplets": 0, "edges": 0, "repeated_pairs": 0, "self_citations": 0}
    for number, triplet in enumerate(triplets, 1):
        if len(triplet) != 3:
            raise ValueError(f"triplet {number}: expected (query, positive, negative) papers, got {len(triplet)} items")
        query, positive, negative = triplet
        for paper in triplet:
            papers.setdefault(paper.paper_id, paper)
        report["triplets"] += 1
        if (query.paper_id, positive.paper_id) in citation_graph:
            report["repeated_pairs"] += 1
            continue
        report["self_citations"] += query.paper_id == positive.paper_id
        citation_graph.add(query.paper_id, positive.paper_id)
    report["edges"] = len(citation_graph)
    report["papers"] = len(papers)
    if not report["edges"]:
        raise ValueError("citation_graph_from_triplets: no triplets, so no citation edges")
    return citation_graph, papers, report


# ------------------------------------------------------------------------------------ edge files at any scale


def _json_edge(path: Path, line_number: int, record: dict) -> list[tuple[str, str, float]] | None:
    """The edges of one JSON record (see :class:`EdgeFiles`); ``None`` for an S2AG record that misses an id."""

    def node_id(value, key: str) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise ValueError(f"{path}:{line_number}: {key!r} must be a paper id (string or integer), got {value!r}")
        return str(value).strip()

    if "citing" in record or "cited" in record:  # CitationGraph.to_jsonl, optional "weight"
        if "citing" not in record or "cited" not in record:
            raise ValueError(f"{path}:{line_number}: a citation record needs both 'citing' and 'cited', got keys "
                             f"{sorted(record)}")
        weight = record.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
            raise ValueError(f"{path}:{line_number}: weight must be a finite number >= 0, got {weight!r}")
        return [(node_id(record["citing"], "citing"), node_id(record["cited"], "cited"), float(weight))]
    if "citingcorpusid" in record or "citedcorpusid" in record:  # S2AG `citations` dataset
        citing, cited = record.get("citingcorpusid"), record.get("citedcorpusid")
        if citing is None or cited is None:
            return None  # a reference S2 could not resolve to a paper: not an edge, counted by the caller
        return [(node_id(citing, "citingcorpusid"), node_id(cited, "citedcorpusid"), 1.0)]
    if "outbound_citations" in record:  # S2ORC 2020 metadata: paper_id -> each outbound citation
        if not isinstance(record["outbound_citations"] or [], list):
            raise ValueError(f"{path}:{line_number}: 'outbound_citations' must be a list of paper ids")
        citing = node_id(record.get("paper_id"), "paper_id")
        return [(citing, node_id(cited, "outbound_citations"), 1.0) for cited in record["outbound_citations"] or []]
    raise ValueError(f"{path}:{line_number}: expected a citation record: {{'citing', 'cited'[, 'weight']}} "
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
        for path in map(Path, paths):
            if path.is_dir():
                files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
                if not files:
                    raise FileNotFoundError(f"{path}: folder without edge files")
                self.paths += files
            elif path.is_file():
                self.paths.append(path)
            else:
                raise FileNotFoundError(f"{path}: no such edges file")
        if not self.paths:
            raise FileNotFoundError("EdgeFiles: no edge files given")
        self.edges = 0
        self.unresolved = 0

    def __str__(self) -> str:
        names = ", ".join(str(p) for p in self.paths[:3]) + (f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else "")
        return names

    def records(self, path: Path) -> Iterator[tuple[str, str, float]]:
        """The edges of one file, in file order."""
        from sdr.jsonio import open_text

        layout = None
        with open_text(path) as handle:
            for line_number, line in enumerate(handle, 1):
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
                    record = json.loads(stripped)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{line_number}: not valid JSON ({error.msg}, column {error.colno}); "
                                     "expected one citation record a line") from None
                if not isinstance(record, dict):
                    raise ValueError(f"{path}:{line_number}: expected a JSON object, got {type(record).__name__}")
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


class NodeIds:
    """The distinct node ids of a graph as one sorted numpy array, with positions found by binary search.

    ``int64`` while every id is a canonical decimal integer (S2 corpus ids: 8 bytes a node, 420 MB for
    S2ORC's 52.5 M), else fixed-width unicode (4 bytes a character). Ids are added chunk by chunk and merged
    as they come, so memory follows the distinct ids, not the edges.
    """

    def __init__(self):
        self.numeric = True
        self._parts: list[np.ndarray] = []
        self.ids: np.ndarray | None = None

    @staticmethod
    def _integers(strings: np.ndarray) -> np.ndarray | None:
        try:
            values = strings.astype(np.int64)
        except (ValueError, OverflowError):
            return None
        # "007", "+5" or " 5" parse but are other ids than 7 and 5: only exact round trips are numeric
        return values if np.array_equal(values.astype(strings.dtype), strings) else None

    def add(self, ids: Sequence[str]) -> None:
        strings = np.asarray(ids, dtype=str)
        if self.numeric:
            values = self._integers(strings)
            if values is None:
                self.numeric = False
                self._parts = [part.astype(str) for part in self._parts]
            else:
                strings = values
        self._parts.append(np.unique(strings))
        if len(self._parts) >= 16:
            self._parts = [np.unique(np.concatenate(self._parts))]

    def finish(self) -> np.ndarray:
        self.ids = np.unique(np.concatenate(self._parts)) if self._parts else np.array([], dtype=np.int64)
        self._parts = []
        return self.ids

    def __len__(self) -> int:
        return 0 if self.ids is None else len(self.ids)

    def positions(self, ids: Sequence[str]) -> np.ndarray:
        """Row of each id in the sorted array (every id must have been added)."""
        strings = np.asarray(ids, dtype=str)
        values = strings.astype(np.int64) if self.numeric else strings
        rows = np.searchsorted(self.ids, values)
        found = rows < len(self.ids)
        found[found] = self.ids[rows[found]] == values[found]
        if not found.all():
            raise ValueError(f"NodeIds: {int((~found).sum())} ids were not seen when the ids were collected "
                             f"(e.g. {strings[~found][:3].tolist()}); did the edge files change while reading?")
        return rows.astype(np.int64)

    def as_strings(self) -> list[str]:
        return self.ids.astype(str).tolist()


@dataclass(frozen=True)
class PartitionPlan:
    """How PBG splits a graph so that training fits a memory budget (:func:`plan_partitions`)."""

    num_partitions: int
    max_edges_per_chunk: int
    embedding_bytes: int  # PBG's resident embeddings + row-Adagrad state: one partition, two when P > 1
    bucket_bytes: int  # our preprocessing of one (lhs, rhs) bucket of edges
    budget_bytes: int

    def __str__(self) -> str:
        gib = 2 ** 30
        return (f"{self.num_partitions} partition{'s' if self.num_partitions > 1 else ''} "
                f"(embeddings in memory {self.embedding_bytes / gib:.2f} GiB, one edge bucket "
                f"{self.bucket_bytes / gib:.2f} GiB, PBG edge chunks <= {self.max_edges_per_chunk:,} edges; "
                f"budget {self.budget_bytes / gib:.2f} GiB)")


#: Bytes a node costs in PBG's memory: the float32 vector and one float of row-wise Adagrad state.
def _node_bytes(dimension: int) -> int:
    return 4 * dimension + 4


#: Bytes an edge costs while a bucket is deduplicated (lhs, rhs, weight, sort key, inverse, repeats).
_BUCKET_EDGE_BYTES = 64
#: Bytes an edge costs in a PBG edge chunk (lhs, rhs, rel as int64, plus the batch permutation).
_PBG_EDGE_BYTES = 48


def default_memory_budget() -> int:
    """Half of this machine's physical memory, in bytes."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (ValueError, OSError, AttributeError):
        return 4 * 2 ** 30


def plan_partitions(n_nodes: int, n_edges: int, dimension: int, memory_budget_bytes: int | None = None,
                    num_partitions: int | None = None) -> PartitionPlan:
    """PBG's ``num_partitions`` for a graph: the fewest partitions whose working set fits the budget.

    Model (bytes): PBG keeps one partition of embeddings in memory when unpartitioned and two (the bucket's
    lhs and rhs) when partitioned, each ``N / P × (4·d + 4)`` (float32 vector + row-Adagrad state); they get
    half of the budget. Preprocessing deduplicates one bucket of ``≈ E / P²`` edges at 64 bytes an edge in a
    quarter of it; PBG's edge chunks get the last quarter at 48 bytes an edge. S2ORC (52.5 M nodes, 463.7 M
    edges, 768-d) in 16 GiB: 38 partitions of 1.4 M nodes.
    """
    if n_nodes < 1:
        raise ValueError(f"plan_partitions: need at least one node, got {n_nodes}")
    budget = int(memory_budget_bytes or default_memory_budget())
    node_bytes = _node_bytes(dimension)
    if num_partitions is None:
        embedding_share = budget / 2
        if n_nodes * node_bytes <= embedding_share:
            num_partitions = 1
        else:
            num_partitions = math.ceil(2 * n_nodes * node_bytes / embedding_share)
        bucket_share = budget / 4
        while (n_edges / num_partitions ** 2) * _BUCKET_EDGE_BYTES > bucket_share:
            num_partitions += 1
        num_partitions = max(1, min(num_partitions, n_nodes))
    resident = 1 if num_partitions == 1 else 2
    return PartitionPlan(
        num_partitions=num_partitions,
        max_edges_per_chunk=max(10_000, int(budget / 4 / _PBG_EDGE_BYTES)),
        embedding_bytes=resident * math.ceil(n_nodes / num_partitions) * node_bytes,
        bucket_bytes=math.ceil(n_edges / num_partitions ** 2) * _BUCKET_EDGE_BYTES,
        budget_bytes=budget,
    )


def _partition_sizes(n_nodes: int, num_partitions: int) -> list[int]:
    """Node ``g`` lives in partition ``g % P`` at offset ``g // P`` (PBG's importer also spreads nodes over
    partitions without regard to their ids; modulo keeps the mapping a formula)."""
    return [(n_nodes - p + num_partitions - 1) // num_partitions for p in range(num_partitions)]


_SPILL = np.dtype([("lhs", "<i8"), ("rhs", "<i8"), ("weight", "<f8")])
_DEDUPED = np.dtype([("lhs", "<i8"), ("rhs", "<i8"), ("repeats", "<i8")])


def _spill(folder: Path, name: str, records: np.ndarray) -> None:
    with (folder / name).open("ab") as handle:
        records.tofile(handle)


def _read_spill(folder: Path, name: str, dtype: np.dtype) -> np.ndarray:
    path = folder / name
    return np.fromfile(path, dtype=dtype) if path.exists() else np.zeros(0, dtype=dtype)


def _bucket_key(lhs: np.ndarray, rhs: np.ndarray, num_partitions: int) -> np.ndarray:
    return (lhs % num_partitions) * num_partitions + rhs % num_partitions


# ------------------------------------------------------------------------------------ training


@contextlib.contextmanager
def _quiet_pbg(verbose: bool):
    """PBG's log at INFO only when asked; its warnings silenced here and in its spawned workers."""
    logger = logging.getLogger("torchbiggraph")
    level, previous = logger.level, os.environ.get("PYTHONWARNINGS")
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [previous, _PBG_WARNINGS]))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UserWarning, module="torchbiggraph")
            yield
    finally:
        logger.setLevel(level)
        if previous is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = previous


def _seed_worker(seed: int) -> None:
    # PBG trains in spawned worker processes; seed them so one config gives one embedding.
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    torch.set_num_threads(1)


def _pbg_config(config: GraphEmbeddingConfig, entity_path: Path, edge_path: Path, checkpoint_path: Path,
                num_partitions: int = 1, max_edges_per_chunk: int | None = None):
    from torchbiggraph.config import parse_config

    settings = {
        "entity_path": str(entity_path),
        "edge_paths": [str(edge_path)],
        "checkpoint_path": str(checkpoint_path),
        "entities": {_ENTITY: {"num_partitions": num_partitions}},
        "relations": [{"name": _RELATION, "lhs": _ENTITY, "rhs": _ENTITY, "operator": "none"}],
        "dimension": config.dimension,
        "init_scale": config.init_scale,
        "max_norm": config.max_norm,
        "global_emb": False,
        "comparator": config.comparator,
        "loss_fn": "ranking",
        "margin": config.margin,
        "lr": config.learning_rate,
        "num_epochs": config.epochs,
        "batch_size": config.batch_size,
        "num_batch_negs": config.num_batch_negs,
        "num_uniform_negs": config.num_uniform_negs,
        "eval_fraction": 0.0,
        "eval_num_batch_negs": config.eval_num_batch_negs,
        "eval_num_uniform_negs": config.eval_num_uniform_negs,
        # one worker: the book shares 2 cores, and one HOGWILD worker keeps a seed's result fixed
        "workers": 1,
        "verbose": 0,
    }
    if max_edges_per_chunk is not None:
        settings["max_edges_per_chunk"] = int(max_edges_per_chunk)
    return parse_config(settings)


def _edge_list(lhs: np.ndarray, rhs: np.ndarray):
    from torchbiggraph.edgelist import EdgeList
    from torchbiggraph.entitylist import EntityList

    return EdgeList(EntityList.from_tensor(torch.from_numpy(np.ascontiguousarray(lhs, dtype=np.int64))),
                    EntityList.from_tensor(torch.from_numpy(np.ascontiguousarray(rhs, dtype=np.int64))),
                    torch.zeros(len(lhs), dtype=torch.long))


def _save_bucket(directory: Path, lhs_partition: int, rhs_partition: int, lhs_rows: np.ndarray,
                 rhs_rows: np.ndarray, num_partitions: int) -> None:
    """Write one bucket of PBG's training edges (rows are global node positions; PBG wants offsets).

    In PBG's edge-file format (``edges_{lhs}_{rhs}.h5``: int64 ``lhs``, ``rhs``, ``rel``, ``format_version``
    1), but with contiguous datasets: PBG's own appender stores 50 MiB chunks, so every bucket file takes at
    least 150 MB on disk — 216 GB of near-empty files for S2ORC's 38² buckets.
    """
    import h5py
    from torchbiggraph.graph_storages import FORMAT_VERSION, FORMAT_VERSION_ATTR

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"edges_{lhs_partition}_{rhs_partition}.h5"
    partial = directory / f"edges_{lhs_partition}_{rhs_partition}.tmp.h5"
    with h5py.File(partial, "w") as handle:
        handle.attrs[FORMAT_VERSION_ATTR] = FORMAT_VERSION
        handle.create_dataset("lhs", data=np.asarray(lhs_rows, dtype=np.int64) // num_partitions)
        handle.create_dataset("rhs", data=np.asarray(rhs_rows, dtype=np.int64) // num_partitions)
        handle.create_dataset("rel", data=np.zeros(len(lhs_rows), dtype=np.int64))
    partial.replace(path)


def _save_edges(directory: Path, rows: np.ndarray, num_partitions: int = 1) -> None:
    """Training rows ``[n, 2]`` (global positions, already shuffled) into PBG's bucket files, every bucket
    written (empty ones too: PBG reads all ``P²``)."""
    keys = _bucket_key(rows[:, 0], rows[:, 1], num_partitions)
    for lhs_partition in range(num_partitions):
        for rhs_partition in range(num_partitions):
            chosen = rows[keys == lhs_partition * num_partitions + rhs_partition]
            _save_bucket(directory, lhs_partition, rhs_partition, chosen[:, 0], chosen[:, 1], num_partitions)


def _link_prediction(pbg_config, test_rows: np.ndarray, num_partitions: int = 1) -> dict[str, float]:
    """PBG's RankingEvaluator on the held-out edges, in-process (no worker pool needed).

    Partitioned: each bucket's test edges are ranked with its lhs and rhs partitions loaded (uniform negatives
    come from the rhs partition, as in PBG's own evaluation); the per-bucket sums are averaged over all edges.
    """
    from torchbiggraph.batching import process_in_batches
    from torchbiggraph.checkpoint_manager import CheckpointManager
    from torchbiggraph.eval import RankingEvaluator
    from torchbiggraph.model import make_model
    from torchbiggraph.stats import Stats
    from torchbiggraph.types import Partition, Side

    manager = CheckpointManager(pbg_config.checkpoint_path)
    model = make_model(pbg_config)
    state_dict, _ = manager.maybe_read_model()
    if state_dict is not None:
        model.load_state_dict(state_dict, strict=False)
    model.eval()
    keys = _bucket_key(test_rows[:, 0], test_rows[:, 1], num_partitions)
    all_stats, loaded = [], {}
    for key in np.unique(keys).tolist():
        lhs_partition, rhs_partition = divmod(key, num_partitions)
        for partition in (lhs_partition, rhs_partition):
            if partition not in loaded:
                if len(loaded) >= 2:  # keep at most two partitions in memory
                    loaded.pop(next(p for p in loaded if p not in (lhs_partition, rhs_partition)))
                loaded[partition] = manager.read(_ENTITY, Partition(partition))[0]
        model.set_embeddings(_ENTITY, torch.nn.Parameter(loaded[lhs_partition]), Side.LHS)
        model.set_embeddings(_ENTITY, torch.nn.Parameter(loaded[rhs_partition]), Side.RHS)
        rows = test_rows[keys == key]
        edges = _edge_list(rows[:, 0] // num_partitions, rows[:, 1] // num_partitions)
        with torch.no_grad():
            all_stats.append(process_in_batches(pbg_config.batch_size, model, RankingEvaluator(), edges))
    manager.close()
    values = Stats.sum(all_stats).average().metrics
    return {"MRR": 100 * values["mrr"], "Hits@1": 100 * values["r1"], "Hits@10": 100 * values["r10"],
            "AUC": 100 * values["auc"]}


def _read_vectors(pbg_config, n_nodes: int, num_partitions: int, path: Path | None) -> np.ndarray:
    """The trained embeddings as one ``[n_nodes, d]`` float32 array in node order: in memory, or a
    ``.npy`` file mapped from disk when ``path`` is given (one partition in memory at a time)."""
    from torchbiggraph.checkpoint_manager import CheckpointManager
    from torchbiggraph.types import Partition

    manager = CheckpointManager(pbg_config.checkpoint_path)
    shape = (n_nodes, pbg_config.dimension)
    vectors = (np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=shape) if path is not None
               else np.empty(shape, dtype=np.float32))
    for partition in range(num_partitions):
        embeddings, _ = manager.read(_ENTITY, Partition(partition))
        vectors[partition::num_partitions] = embeddings.detach().numpy()
        del embeddings
    manager.close()
    if path is not None:
        vectors.flush()
        del vectors
        return np.load(path, mmap_mode="r")
    return vectors


@contextlib.contextmanager
def _seeded_bucket_order(seed: int):
    """PBG 1.0.0 orders the buckets of each epoch with an unseeded ``random.Random()``
    (``bucket_scheduling.SingleMachineBucketScheduler.new_pass``), so a partitioned run differs from run to
    run; give it generators drawn from the seed instead (one per epoch, in order)."""
    import random

    from torchbiggraph import bucket_scheduling

    seeds = random.Random(seed)

    class _Random:
        Random = staticmethod(lambda *args: random.Random(seeds.getrandbits(64)))

    original = bucket_scheduling.random
    bucket_scheduling.random = _Random
    try:
        yield
    finally:
        bucket_scheduling.random = original


def _train_pbg(root: Path, config: GraphEmbeddingConfig, n_nodes: int, plan: PartitionPlan, test_rows: np.ndarray,
               vectors_path: Path | None, phases: dict | None = None) -> tuple[np.ndarray, dict[str, float]]:
    """Train PBG on the buckets already written under ``root/train``; vectors and link prediction."""
    from torchbiggraph.graph_storages import ENTITY_STORAGES
    from torchbiggraph.train import train as pbg_train

    started = time.perf_counter()
    entity_storage = ENTITY_STORAGES.make_instance(str(root / "entities"))
    entity_storage.prepare()
    for partition, size in enumerate(_partition_sizes(n_nodes, plan.num_partitions)):
        entity_storage.save_count(_ENTITY, partition, size)
    pbg_config = _pbg_config(config, root / "entities", root / "train", root / "checkpoints",
                             plan.num_partitions, plan.max_edges_per_chunk)
    torch.manual_seed(config.seed)  # PBG draws the initial embeddings in this process
    with _seeded_bucket_order(config.seed):
        pbg_train(pbg_config, subprocess_init=functools.partial(_seed_worker, config.seed))
    phases = {} if phases is None else phases
    phases["train"] = time.perf_counter() - started
    started = time.perf_counter()
    link = _link_prediction(pbg_config, test_rows, plan.num_partitions) if len(test_rows) else {}
    phases["link_prediction"] = time.perf_counter() - started
    started = time.perf_counter()
    vectors = _read_vectors(pbg_config, n_nodes, plan.num_partitions, vectors_path)
    phases["vectors"] = time.perf_counter() - started
    return vectors, link


def training_edges(
    source: Iterable[Edge] | CitationGraph,
    config: GraphEmbeddingConfig,
    nodes: Iterable[str] | None = None,
) -> tuple[list[str], np.ndarray, list[tuple[str, str]], EmbeddingReport]:
    """What :func:`embed` hands PBG: sorted node ids, the training rows ``[n, 2]`` (node positions,
    repeated by weight, both directions if undirected, shuffled), the held-out ``(citing, cited)``
    edges and the report. The split is over distinct edges, so a test edge has no training copy."""
    report = EmbeddingReport()
    weights: dict[tuple[str, str], float] = {}
    for citing, cited, weight in edges_of(source):
        if (citing, cited) in weights:
            report.merged_duplicates += 1
        weights[(citing, cited)] = weights.get((citing, cited), 0.0) + weight
        report.self_loops += int(citing == cited)
    if not weights:
        raise ValueError("graph.training_edges: the graph has no edges")
    repeats = {edge: w * config.weight_scale for edge, w in weights.items()}
    # a whole number up to float rounding (3 * 0.1 * 10 is 3.0000000000000004)
    fractional = [(edge, weights[edge]) for edge, r in repeats.items() if abs(r - round(r)) > 1e-9 * max(1.0, r)]
    if fractional:
        (citing, cited), weight = fractional[0]
        raise ValueError(f"graph.training_edges: {len(fractional)} edges have a weight that is no whole number of "
                         f"repeats, e.g. {citing}->{cited}: {weight} * weight_scale {config.weight_scale}; expected "
                         f"whole numbers (fractional weights are not rounded)")
    repeats = {edge: int(round(r)) for edge, r in repeats.items()}
    report.zero_weight_edges = sum(1 for r in repeats.values() if r == 0)
    repeats = {edge: r for edge, r in repeats.items() if r > 0}
    if not repeats:
        raise ValueError(f"graph.training_edges: all {len(weights)} edges have weight 0")
    ids = sorted({pid for edge in weights for pid in edge} | {str(n) for n in (nodes or ())})
    position = {pid: i for i, pid in enumerate(ids)}
    distinct = sorted(repeats)
    report.nodes, report.distinct_edges = len(ids), len(distinct)

    rng = np.random.default_rng(config.seed)
    n_test = 0
    if config.test_fraction > 0 and len(distinct) >= 2:
        n_test = max(1, int(round(config.test_fraction * len(distinct))))
    order = rng.permutation(len(distinct))
    test = [distinct[i] for i in sorted(order[:n_test])]
    train = [distinct[i] for i in sorted(order[n_test:])]
    train_rows = [(position[a], position[b]) for a, b in train for _ in range(repeats[(a, b)])]
    if config.undirected:
        train_rows += [(b, a) for a, b in train_rows if a != b]
    train_rows = np.array(train_rows, dtype=np.int64)[rng.permutation(len(train_rows))]
    report.train_edges, report.test_edges = len(train_rows), len(test)
    return ids, train_rows, test, report


def embed(
    source: Iterable[Edge] | CitationGraph | str | Path,
    config: GraphEmbeddingConfig | None = None,
    nodes: Iterable[str] | None = None,
    work_dir: str | Path | None = None,
    verbose: bool = False,
) -> GraphEmbedding:
    """Train PBG embeddings of a citation graph and score link prediction on held-out edges.

    Args:
        source: a :class:`CitationGraph` or ``(citing, cited[, weight])`` edges (weights = repeats); a path
            (file or folder) is streamed by :func:`embed_edge_files` instead, for graphs of any size.
        config: :class:`GraphEmbeddingConfig` (SciNCL's A.5 settings by default).
        nodes: extra node ids to embed even without edges (they keep their random initialisation).
        work_dir: where PBG writes its HDF5 files and checkpoints (kept); a temporary folder by default.
        verbose: show PBG's log.

    PBG trains in a spawned worker process, so a script that calls this needs the usual
    ``if __name__ == "__main__":`` guard (notebooks and ``sdr graph embed`` need nothing). The number of
    partitions comes from ``config`` (:func:`plan_partitions`): 1 for any graph whose embeddings fit half
    the memory budget, as every in-memory graph of the book does.

    Returns:
        :class:`GraphEmbedding` with ``ids``, ``vectors``, ``link_prediction`` (empty when
        ``test_fraction`` is 0) and a :class:`EmbeddingReport`.

    Raises:
        ValueError: an empty graph, or every edge has weight 0.
    """
    config = config or GraphEmbeddingConfig()
    if isinstance(source, (str, os.PathLike)):
        if nodes is not None:
            raise ValueError("graph.embed: extra nodes are not supported for edge files; add them as edges")
        return embed_edge_files(source, config, work_dir=work_dir, verbose=verbose)
    ids, train_rows, test, report = training_edges(source, config, nodes)
    position = {pid: i for i, pid in enumerate(ids)}
    test_rows = np.array([(position[a], position[b]) for a, b in test], dtype=np.int64).reshape(-1, 2)
    plan = plan_partitions(len(ids), len(train_rows), config.dimension, _budget(config), config.num_partitions)
    report.num_partitions = plan.num_partitions
    started = time.perf_counter()
    with _quiet_pbg(verbose), tempfile.TemporaryDirectory(prefix="sdr-pbg-") as temporary:
        root = Path(work_dir) if work_dir is not None else Path(temporary)
        _save_edges(root / "train", train_rows, plan.num_partitions)
        vectors, link = _train_pbg(root, config, len(ids), plan, test_rows, vectors_path=None, phases=report.phases)
    report.seconds = time.perf_counter() - started
    return GraphEmbedding(ids=ids, vectors=vectors, config=config, link_prediction=link, report=report,
                          test_edges=test)


def _budget(config: GraphEmbeddingConfig) -> int:
    return int(config.memory_budget_gb * 2 ** 30) if config.memory_budget_gb else default_memory_budget()


class _IdPairs(Sequence):
    """``(citing, cited)`` id pairs read off an ``[n, 2]`` array of node positions (no tuple kept per edge)."""

    def __init__(self, rows: np.ndarray, ids: Sequence[str]):
        self.rows, self.ids = rows, ids

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        citing, cited = self.rows[index]
        return self.ids[int(citing)], self.ids[int(cited)]

    def __eq__(self, other) -> bool:
        return list(self) == list(other)


@dataclass
class Buckets:
    """PBG's training buckets written from edge files (:func:`write_buckets`): where they are, the node ids
    (``NodeIds``; node ``g`` is offset ``g // P`` of partition ``g % P``), the held-out edges as node
    positions ``[n, 2]``, the partition plan and the report."""

    directory: Path
    node_ids: NodeIds
    test_rows: np.ndarray
    plan: PartitionPlan
    report: EmbeddingReport


def write_buckets(
    paths: str | Path | Iterable[str | Path],
    config: GraphEmbeddingConfig,
    root: str | Path,
    chunk_size: int = 1_000_000,
    say=None,
) -> Buckets:
    """Stream edge files into PBG's partitioned training buckets under ``root/train`` (the part of
    :func:`embed_edge_files` before training; memory: the node ids and one bucket of edges)."""
    say = say or (lambda message: None)
    started = time.perf_counter()
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    files = EdgeFiles(paths)
    report = EmbeddingReport()
    node_ids = NodeIds()
    for citing, cited, _ in files.chunks(chunk_size):
        node_ids.add(citing)
        node_ids.add(cited)
    node_ids.finish()
    n_nodes, n_lines = len(node_ids), files.edges
    report.nodes, report.unresolved_edges = n_nodes, files.unresolved
    plan = plan_partitions(n_nodes, n_lines, config.dimension, _budget(config), config.num_partitions)
    partitions = report.num_partitions = plan.num_partitions
    report.phases["ids"] = time.perf_counter() - started
    started = time.perf_counter()
    say(f"{files}: {n_lines:,} edge lines, {n_nodes:,} nodes ({'integer' if node_ids.numeric else 'string'} ids); "
        f"{plan}")

    spill = Path(tempfile.mkdtemp(prefix="spill-", dir=root))
    try:
        # pass 2: every edge, as node positions, into its bucket's spill file
        for citing, cited, weights in files.chunks(chunk_size):
            records = np.empty(len(citing), dtype=_SPILL)
            records["lhs"], records["rhs"], records["weight"] = (node_ids.positions(citing),
                                                                 node_ids.positions(cited), weights)
            keys = _bucket_key(records["lhs"], records["rhs"], partitions)
            order = np.argsort(keys, kind="stable")
            records, keys = records[order], keys[order]
            bounds = np.searchsorted(keys, np.arange(partitions * partitions + 1))
            for key in range(partitions * partitions):
                if bounds[key + 1] > bounds[key]:
                    _spill(spill, f"raw_{key}", records[bounds[key]:bounds[key + 1]])
        say("edges written to their buckets")

        # per bucket: merge repeated lines (a pair always falls in the same bucket), weights -> repeat counts
        distinct_counts = np.zeros(partitions * partitions, dtype=np.int64)
        for key in range(partitions * partitions):
            records = _read_spill(spill, f"raw_{key}", _SPILL)
            (spill / f"raw_{key}").unlink(missing_ok=True)
            if not len(records):
                continue
            pair = records["lhs"] * n_nodes + records["rhs"]
            unique_pairs, inverse = np.unique(pair, return_inverse=True)
            report.merged_duplicates += len(pair) - len(unique_pairs)
            scaled = np.bincount(inverse, weights=records["weight"]) * config.weight_scale
            if np.any(np.abs(scaled - np.rint(scaled)) > 1e-9 * np.maximum(1.0, scaled)):
                raise InputError(f"{files}: an edge's weight × weight_scale {config.weight_scale} is not a whole number "
                                 f"of repeats; fractional weights are not rounded (that would silently drop or add "
                                 f"edges)")
            repeats = np.rint(scaled).astype(np.int64)
            report.zero_weight_edges += int((repeats == 0).sum())
            kept = unique_pairs[repeats > 0]
            deduped = np.empty(len(kept), dtype=_DEDUPED)
            deduped["lhs"], deduped["rhs"], deduped["repeats"] = kept // n_nodes, kept % n_nodes, repeats[repeats > 0]
            report.self_loops += int((deduped["lhs"] == deduped["rhs"]).sum())
            distinct_counts[key] = len(deduped)
            _spill(spill, f"distinct_{key}", deduped)
        report.distinct_edges = int(distinct_counts.sum())
        if not report.distinct_edges:
            raise ValueError(f"{files}: all {n_lines} edges have weight 0")

        # held-out edges: a uniformly random subset of all distinct edges, split over the buckets
        rng = np.random.default_rng(config.seed)
        n_test = 0
        if config.test_fraction > 0 and report.distinct_edges >= 2:
            n_test = max(1, int(round(config.test_fraction * report.distinct_edges)))
        test_counts = (rng.multivariate_hypergeometric(distinct_counts, n_test) if n_test
                       else np.zeros_like(distinct_counts))
        test_parts = []
        for key in range(partitions * partitions):
            deduped = _read_spill(spill, f"distinct_{key}", _DEDUPED)
            (spill / f"distinct_{key}").unlink(missing_ok=True)
            if not len(deduped):
                continue
            order = rng.permutation(len(deduped))
            test = np.sort(order[:test_counts[key]])
            test_parts.append(np.stack([deduped["lhs"][test], deduped["rhs"][test]], axis=1))
            train = deduped[np.sort(order[test_counts[key]:])]
            rows = np.empty(int(train["repeats"].sum()), dtype=_SPILL)
            rows["lhs"] = np.repeat(train["lhs"], train["repeats"])
            rows["rhs"] = np.repeat(train["rhs"], train["repeats"])
            rows["weight"] = 1.0
            _spill(spill, f"train_{key}", rows)
            if config.undirected:  # the reverse of a training edge, in the mirrored bucket
                not_loop = rows["lhs"] != rows["rhs"]
                reverse = np.empty(int(not_loop.sum()), dtype=_SPILL)
                reverse["lhs"], reverse["rhs"], reverse["weight"] = rows["rhs"][not_loop], rows["lhs"][not_loop], 1.0
                lhs_partition, rhs_partition = divmod(key, partitions)
                _spill(spill, f"train_{rhs_partition * partitions + lhs_partition}", reverse)
        test_rows = np.concatenate(test_parts) if test_parts else np.zeros((0, 2), dtype=np.int64)
        report.test_edges = len(test_rows)

        for key in range(partitions * partitions):  # every bucket, empty ones too: PBG reads all P²
            rows = _read_spill(spill, f"train_{key}", _SPILL)
            (spill / f"train_{key}").unlink(missing_ok=True)
            rows = rows[rng.permutation(len(rows))]
            report.train_edges += len(rows)
            lhs_partition, rhs_partition = divmod(key, partitions)
            _save_bucket(root / "train", lhs_partition, rhs_partition, rows["lhs"], rows["rhs"], partitions)
    finally:
        for leftover in spill.iterdir():
            leftover.unlink()
        spill.rmdir()
    report.phases["buckets"] = time.perf_counter() - started
    say(f"{report.distinct_edges:,} distinct edges, {report.train_edges:,} training rows, "
        f"{report.test_edges:,} held out")
    return Buckets(directory=root / "train", node_ids=node_ids, test_rows=test_rows, plan=plan, report=report)


def embed_edge_files(
    paths: str | Path | Iterable[str | Path],
    config: GraphEmbeddingConfig | None = None,
    work_dir: str | Path | None = None,
    verbose: bool = False,
    chunk_size: int = 1_000_000,
) -> GraphEmbedding:
    """PBG embeddings of a citation graph too large to hold as Python objects, streamed from edge files.

    The files (:class:`EdgeFiles`: TSV, CitationGraph JSONL, S2AG ``citations`` shards, S2ORC metadata) are
    read twice, ``chunk_size`` edges at a time (:func:`write_buckets`): once to collect the sorted distinct
    node ids (:class:`NodeIds`), once to write each edge, as node positions, into the spill file of its PBG
    bucket ``(lhs partition, rhs partition)`` (:func:`plan_partitions` chooses ``P`` from the node count and
    ``config.memory_budget_gb`` unless ``config.num_partitions`` is set). Each bucket is then deduplicated on
    its own (weights of repeated lines summed), a uniformly random ``test_fraction`` of all distinct edges is
    held out (split over buckets by a multivariate hypergeometric draw), the rest repeated by weight (both
    directions when ``undirected``), shuffled and written as PBG's HDF5 bucket. PBG then trains with
    ``num_partitions = P``, holding at most two partitions in memory. For one partition the held-out edges
    and training rows are the ones :func:`embed` chooses for the same graph and seed.

    With ``work_dir`` the vectors are written to ``work_dir/vectors.npy`` (and returned memory-mapped,
    ``[N, d]`` float32) and the ids to ``work_dir/ids.txt``; without, a temporary folder is used and the
    vectors are returned in memory. Link prediction is PBG's ranking evaluation of the held-out edges,
    bucket by bucket (with ``P > 1`` a test edge's uniform negatives come from its rhs partition, so scores
    are not comparable across ``P``). Memory: the node ids (8 bytes a node for integer ids), one bucket of
    edges, PBG's working set (:func:`plan_partitions`) and, in the result, the ids as a Python list.
    """
    config = config or GraphEmbeddingConfig()
    started = time.perf_counter()

    def say(message: str) -> None:
        if verbose:
            print(f"[graph {time.perf_counter() - started:7.1f} s] {message}", flush=True)

    with _quiet_pbg(verbose), tempfile.TemporaryDirectory(prefix="sdr-pbg-") as temporary:
        root = Path(work_dir) if work_dir is not None else Path(temporary)
        root.mkdir(parents=True, exist_ok=True)
        buckets = write_buckets(paths, config, root, chunk_size=chunk_size, say=say)
        node_ids, report = buckets.node_ids, buckets.report
        vectors_path = None
        if work_dir is not None:
            vectors_path = root / "vectors.npy"
            (root / "ids.txt").write_text("".join(f"{pid}\n" for pid in node_ids.ids.astype(str)), encoding="utf-8")
        say("training PBG")
        vectors, link = _train_pbg(root, config, len(node_ids), buckets.plan, buckets.test_rows, vectors_path,
                                   report.phases)
        say(f"trained; link prediction {link}")
    ids = node_ids.as_strings()
    report.seconds = time.perf_counter() - started
    return GraphEmbedding(ids=ids, vectors=vectors, config=config, link_prediction=link, report=report,
                          test_edges=_IdPairs(buckets.test_rows, ids))


# ------------------------------------------------------------------------------------ neighbours


def nearest_neighbours(
    vectors: np.ndarray,
    ids: Sequence[str],
    k: int,
    metric: str = "ip",
    query_ids: Sequence[str] | None = None,
    block_size: int = 4096,
) -> tuple[list[list[str]], np.ndarray]:
    """Exact FAISS search: the ``k`` nearest *other* ids of each query, nearest first, with scores.

    ``metric``: ``"ip"`` (inner product, PBG's ``dot``), ``"cosine"`` (PBG's ``cos``) or ``"l2"``
    (scores are squared distances, smaller is nearer). ``k`` is clipped to ``len(ids) - 1``. Queries are
    searched ``block_size`` at a time (:class:`sdr.samplers.NeighbourIndex`), but the answer itself holds
    ``queries × k`` ids: for SciNCL's bands over a large corpus use :func:`sdr.samplers.knn_bands`, which
    keeps only the bands.
    """
    from sdr.samplers import NeighbourIndex, _rows_of

    matrix = vectors if getattr(vectors, "dtype", None) == np.float32 else np.asarray(vectors, dtype=np.float32)
    ids = [str(pid) for pid in ids]
    if matrix.ndim != 2 or matrix.shape[0] != len(ids):
        raise ValueError(f"nearest_neighbours: {len(ids)} ids for vectors of shape {matrix.shape}")
    if metric not in ("ip", "cosine", "l2"):
        raise ValueError(f"nearest_neighbours: metric must be 'ip', 'cosine' or 'l2', got {metric!r}")
    k = min(k, len(ids) - 1)
    if k < 1:
        raise ValueError(f"nearest_neighbours: need k >= 1 and at least 2 vectors, got k={k}, {len(ids)} ids")
    position = {pid: i for i, pid in enumerate(ids)}
    queries = ids if query_ids is None else [str(q) for q in query_ids]
    missing = [q for q in queries if q not in position]
    if missing:
        raise KeyError(f"nearest_neighbours: {len(missing)} query ids have no vector, e.g. {missing[:3]}")
    rows = np.array([position[q] for q in queries], dtype=np.int64)
    index = NeighbourIndex(matrix, metric, "flat")
    neighbour_ids, neighbour_scores = [], np.zeros((len(rows), k), dtype=np.float32)
    done = 0
    for block_rows, found in index.blocks(rows, k, block_size):
        queries_block = _rows_of(matrix, block_rows, metric)
        for j, hits in enumerate(found):
            hits = hits[hits >= 0]
            neighbour_ids.append([ids[i] for i in hits])
            others = _rows_of(matrix, hits, metric)
            if metric == "l2":
                values = ((others - queries_block[j]) ** 2).sum(axis=1)
            else:
                values = others @ queries_block[j]
            neighbour_scores[done + j, :len(values)] = values
        done += len(block_rows)
    return neighbour_ids, neighbour_scores


# ------------------------------------------------------------------------------------ CLI


def register(subparsers) -> None:
    """``sdr graph embed EDGES… --dim D [--epochs E] [--comparator dot|cos] [--undirected] [--partitions P]
    [--memory-gb G] [--work-dir DIR] --out F [--force]``."""
    parser = subparsers.add_parser("graph", help="citation-graph embeddings with PyTorch-BigGraph")
    commands = parser.add_subparsers(dest="graph_command", required=True)
    embedding = commands.add_parser(
        "embed", help="embed a citation edge list (TSV, CitationGraph JSONL, S2AG citations, S2ORC metadata)",
        description="Train PyTorch-BigGraph embeddings (SciNCL A.5 settings) of edge files streamed from disk "
                    "(partitioned when the graph does not fit the memory budget) and write "
                    "{'paper_id', 'embedding'} JSONL and/or vectors.npy + ids.txt in --work-dir; prints link "
                    "prediction on the held-out edges.")
    defaults = GraphEmbeddingConfig()
    embedding.add_argument("edges", nargs="+",
                           help="edge files or folders: TSV citing<TAB>cited[<TAB>weight (repeats)], "
                                "CitationGraph JSONL, S2AG citations shards, S2ORC metadata (.gz read as is)")
    embedding.add_argument("--dim", type=int, default=defaults.dimension, help="embedding dimension (768)")
    embedding.add_argument("--epochs", type=int, default=defaults.epochs, help="training epochs (20)")
    embedding.add_argument("--comparator", choices=sorted(COMPARATOR_METRIC), default=defaults.comparator)
    embedding.add_argument("--undirected", action="store_true", help="train on both directions of each edge")
    embedding.add_argument("--lr", type=float, default=defaults.learning_rate, help="learning rate (0.1)")
    embedding.add_argument("--margin", type=float, default=defaults.margin, help="ranking-loss margin (0.15)")
    embedding.add_argument("--test-fraction", type=float, default=defaults.test_fraction,
                           help="edges held out for link prediction (0.01)")
    embedding.add_argument("--seed", type=int, default=defaults.seed)
    embedding.add_argument("--partitions", type=int, default=None,
                           help="PBG num_partitions (default: chosen from the node count and --memory-gb)")
    embedding.add_argument("--memory-gb", type=float, default=None,
                           help="memory budget in GiB (default: half of physical memory)")
    embedding.add_argument("--work-dir", default=None,
                           help="keep PBG's files there, with vectors.npy ([N, d] float32) and ids.txt")
    embedding.add_argument("--out", default=None, help="embeddings JSONL to write (required without --work-dir; "
                                                      "never one of the inputs)")
    embedding.add_argument("--force", action="store_true", help="replace --out if it exists")
    embedding.add_argument("--json", action="store_true", help="print the report and link prediction as JSON")
    embedding.set_defaults(func=_cli_embed)


def _cli_embed(args) -> int:
    from sdr.outputs import Outputs

    if args.out is None and args.work_dir is None:
        raise ValueError("sdr graph embed: give --out F.jsonl, --work-dir DIR or both")
    inputs = {("EDGES" if len(args.edges) == 1 else f"EDGES[{i}]"): path for i, path in enumerate(args.edges)}
    outputs = Outputs(inputs=inputs, outputs={"--out": args.out}, force=args.force).check()
    config = GraphEmbeddingConfig(dimension=args.dim, epochs=args.epochs, comparator=args.comparator,
                                  undirected=args.undirected, learning_rate=args.lr, margin=args.margin,
                                  test_fraction=args.test_fraction, seed=args.seed, num_partitions=args.partitions,
                                  memory_budget_gb=args.memory_gb)
    result = embed_edge_files(args.edges, config, work_dir=args.work_dir)
    written = []
    if args.out:
        with outputs.commit() as staged:
            result.save_jsonl(staged["--out"])
        written.append(str(args.out))
    if args.work_dir:
        written += [str(Path(args.work_dir) / "vectors.npy"), str(Path(args.work_dir) / "ids.txt")]
    if args.json:
        print(json.dumps({"out": written[0], "written": written, "report": asdict(result.report),
                          "link_prediction": result.link_prediction}, indent=2))
    else:
        print(f"{', '.join(written)}: {len(result.ids)} embeddings of dimension {config.dimension}; {result.report}")
        if result.link_prediction:
            print("link prediction on held-out edges: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in result.link_prediction.items()))
    return 0
