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
* :func:`read_edges_tsv` — ``citing<TAB>cited[<TAB>weight]`` per line, weights whole numbers >= 1; errors
  name file and line.
* :func:`nearest_neighbours` — FAISS flat (exhaustive) search, the metric matching the comparator
  (:data:`COMPARATOR_METRIC`: ``dot`` → inner product, ``cos`` → cosine), self excluded.
* ``sdr graph embed EDGES.tsv --dim D [--epochs E] [--comparator dot|cos] [--undirected] --out F.jsonl``
  writes the book's embeddings JSONL (``{"paper_id", "embedding"}``), so ``sdr evaluate`` and FAISS
  read it.

Link prediction is PBG's own ranking evaluator (``torchbiggraph.eval.RankingEvaluator``), the one
behind SciNCL Table 5: each held-out edge's score is ranked against the corrupted edges built from
the other held-out edges of its batch (``eval_num_batch_negs``) and uniformly drawn nodes
(``eval_num_uniform_negs``), on both sides; MRR, Hits@1, Hits@10 and AUC are reported in percent.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import tempfile
import time
import warnings
from collections.abc import Iterable, Sequence
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
    seconds: float = 0.0

    def __str__(self) -> str:
        text = (f"{self.nodes} nodes, {self.distinct_edges} distinct edges -> {self.train_edges} training "
                f"edges (with repeats), {self.test_edges} held out; {self.seconds:.1f} s")
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
        edges.append((parts[0].strip(), parts[1].strip(), weight))
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


def _pbg_config(config: GraphEmbeddingConfig, entity_path: Path, edge_path: Path, checkpoint_path: Path):
    from torchbiggraph.config import parse_config

    return parse_config({
        "entity_path": str(entity_path),
        "edge_paths": [str(edge_path)],
        "checkpoint_path": str(checkpoint_path),
        "entities": {_ENTITY: {"num_partitions": 1}},
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
    })


def _save_edges(directory: Path, rows: np.ndarray) -> None:
    from torchbiggraph.edgelist import EdgeList
    from torchbiggraph.entitylist import EntityList
    from torchbiggraph.graph_storages import EDGE_STORAGES

    storage = EDGE_STORAGES.make_instance(str(directory))
    storage.prepare()
    lhs = torch.from_numpy(np.ascontiguousarray(rows[:, 0], dtype=np.int64))
    rhs = torch.from_numpy(np.ascontiguousarray(rows[:, 1], dtype=np.int64))
    storage.save_edges(0, 0, EdgeList(EntityList.from_tensor(lhs), EntityList.from_tensor(rhs),
                                      torch.zeros(len(rows), dtype=torch.long)))


def _link_prediction(pbg_config, test_rows: np.ndarray) -> dict[str, float]:
    """PBG's RankingEvaluator on the held-out edges, in-process (no worker pool needed)."""
    from torchbiggraph.batching import process_in_batches
    from torchbiggraph.checkpoint_manager import CheckpointManager
    from torchbiggraph.edgelist import EdgeList
    from torchbiggraph.entitylist import EntityList
    from torchbiggraph.eval import RankingEvaluator
    from torchbiggraph.model import make_model
    from torchbiggraph.types import Partition, Side

    manager = CheckpointManager(pbg_config.checkpoint_path)
    model = make_model(pbg_config)
    state_dict, _ = manager.maybe_read_model()
    if state_dict is not None:
        model.load_state_dict(state_dict, strict=False)
    embeddings, _ = manager.read(_ENTITY, Partition(0))
    model.set_embeddings(_ENTITY, torch.nn.Parameter(embeddings), Side.LHS)
    model.set_embeddings(_ENTITY, torch.nn.Parameter(embeddings), Side.RHS)
    model.eval()
    edges = EdgeList(EntityList.from_tensor(torch.from_numpy(test_rows[:, 0].copy())),
                     EntityList.from_tensor(torch.from_numpy(test_rows[:, 1].copy())),
                     torch.zeros(len(test_rows), dtype=torch.long))
    stats = process_in_batches(pbg_config.batch_size, model, RankingEvaluator(), edges).average()
    values = stats.metrics
    manager.close()
    return {"MRR": 100 * values["mrr"], "Hits@1": 100 * values["r1"], "Hits@10": 100 * values["r10"],
            "AUC": 100 * values["auc"]}


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
    source: Iterable[Edge] | CitationGraph,
    config: GraphEmbeddingConfig | None = None,
    nodes: Iterable[str] | None = None,
    work_dir: str | Path | None = None,
    verbose: bool = False,
) -> GraphEmbedding:
    """Train PBG embeddings of a citation graph and score link prediction on held-out edges.

    Args:
        source: a :class:`CitationGraph` or ``(citing, cited[, weight])`` edges (weights = repeats).
        config: :class:`GraphEmbeddingConfig` (SciNCL's A.5 settings by default).
        nodes: extra node ids to embed even without edges (they keep their random initialisation).
        work_dir: where PBG writes its HDF5 files and checkpoints (kept); a temporary folder by default.
        verbose: show PBG's log.

    PBG trains in a spawned worker process, so a script that calls this needs the usual
    ``if __name__ == "__main__":`` guard (notebooks and ``sdr graph embed`` need nothing).

    Returns:
        :class:`GraphEmbedding` with ``ids``, ``vectors``, ``link_prediction`` (empty when
        ``test_fraction`` is 0) and a :class:`EmbeddingReport`.

    Raises:
        ValueError: an empty graph, or every edge has weight 0.
    """
    config = config or GraphEmbeddingConfig()
    ids, train_rows, test, report = training_edges(source, config, nodes)
    position = {pid: i for i, pid in enumerate(ids)}
    test_rows = np.array([(position[a], position[b]) for a, b in test], dtype=np.int64).reshape(-1, 2)
    started = time.perf_counter()
    with _quiet_pbg(verbose), tempfile.TemporaryDirectory(prefix="sdr-pbg-") as temporary:
        from torchbiggraph.checkpoint_manager import CheckpointManager
        from torchbiggraph.graph_storages import ENTITY_STORAGES
        from torchbiggraph.train import train as pbg_train
        from torchbiggraph.types import Partition

        root = Path(work_dir) if work_dir is not None else Path(temporary)
        entity_storage = ENTITY_STORAGES.make_instance(str(root / "entities"))
        entity_storage.prepare()
        entity_storage.save_count(_ENTITY, 0, len(ids))
        _save_edges(root / "train", train_rows)
        pbg_config = _pbg_config(config, root / "entities", root / "train", root / "checkpoints")
        torch.manual_seed(config.seed)  # PBG draws the initial embeddings in this process
        pbg_train(pbg_config, subprocess_init=functools.partial(_seed_worker, config.seed))
        manager = CheckpointManager(pbg_config.checkpoint_path)
        vectors, _ = manager.read(_ENTITY, Partition(0))
        vectors = vectors.detach().numpy().astype(np.float32).copy()
        manager.close()
        link = _link_prediction(pbg_config, test_rows) if len(test_rows) else {}
    report.seconds = time.perf_counter() - started
    return GraphEmbedding(ids=ids, vectors=vectors, config=config, link_prediction=link, report=report,
                          test_edges=test)


# ------------------------------------------------------------------------------------ neighbours


def nearest_neighbours(
    vectors: np.ndarray,
    ids: Sequence[str],
    k: int,
    metric: str = "ip",
    query_ids: Sequence[str] | None = None,
) -> tuple[list[list[str]], np.ndarray]:
    """FAISS flat search: the ``k`` nearest *other* ids of each query, nearest first, with scores.

    ``metric``: ``"ip"`` (inner product, PBG's ``dot``), ``"cosine"`` (PBG's ``cos``) or ``"l2"``
    (scores are squared distances, smaller is nearer). ``k`` is clipped to ``len(ids) - 1``.
    """
    from sdr.samplers import flat_index

    matrix = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
    ids = [str(pid) for pid in ids]
    if matrix.ndim != 2 or matrix.shape[0] != len(ids):
        raise ValueError(f"nearest_neighbours: {len(ids)} ids for vectors of shape {matrix.shape}")
    if metric not in ("ip", "cosine", "l2"):
        raise ValueError(f"nearest_neighbours: metric must be 'ip', 'cosine' or 'l2', got {metric!r}")
    k = min(k, len(ids) - 1)
    if k < 1:
        raise ValueError(f"nearest_neighbours: need k >= 1 and at least 2 vectors, got k={k}, {len(ids)} ids")
    index, matrix = flat_index(matrix, metric)
    position = {pid: i for i, pid in enumerate(ids)}
    queries = ids if query_ids is None else [str(q) for q in query_ids]
    missing = [q for q in queries if q not in position]
    if missing:
        raise KeyError(f"nearest_neighbours: {len(missing)} query ids have no vector, e.g. {missing[:3]}")
    rows = np.array([position[q] for q in queries], dtype=np.int64)
    scores, found = index.search(matrix[rows], k + 1)
    neighbour_ids, neighbour_scores = [], np.zeros((len(rows), k), dtype=np.float32)
    for n, (row, hits, values) in enumerate(zip(rows, found, scores)):
        keep = (hits >= 0) & (hits != row)
        hits, values = hits[keep][:k], values[keep][:k]
        neighbour_ids.append([ids[i] for i in hits])
        neighbour_scores[n, :len(values)] = values
    return neighbour_ids, neighbour_scores


# ------------------------------------------------------------------------------------ CLI


def register(subparsers) -> None:
    """``sdr graph embed EDGES.tsv --dim D [--epochs E] [--comparator dot|cos] [--undirected] --out F [--force]``."""
    parser = subparsers.add_parser("graph", help="citation-graph embeddings with PyTorch-BigGraph")
    commands = parser.add_subparsers(dest="graph_command", required=True)
    embedding = commands.add_parser(
        "embed", help="embed a citing<TAB>cited[<TAB>weight] edge list; write embeddings JSONL",
        description="Train PyTorch-BigGraph embeddings (SciNCL A.5 settings) and write "
                    "{'paper_id', 'embedding'} JSONL; prints link prediction on the held-out edges.")
    defaults = GraphEmbeddingConfig()
    embedding.add_argument("edges", help="TSV: citing<TAB>cited, optional third column = weight (repeats)")
    embedding.add_argument("--dim", type=int, default=defaults.dimension, help="embedding dimension (768)")
    embedding.add_argument("--epochs", type=int, default=defaults.epochs, help="training epochs (20)")
    embedding.add_argument("--comparator", choices=sorted(COMPARATOR_METRIC), default=defaults.comparator)
    embedding.add_argument("--undirected", action="store_true", help="train on both directions of each edge")
    embedding.add_argument("--lr", type=float, default=defaults.learning_rate, help="learning rate (0.1)")
    embedding.add_argument("--margin", type=float, default=defaults.margin, help="ranking-loss margin (0.15)")
    embedding.add_argument("--test-fraction", type=float, default=defaults.test_fraction,
                           help="edges held out for link prediction (0.01)")
    embedding.add_argument("--seed", type=int, default=defaults.seed)
    embedding.add_argument("--out", required=True, help="embeddings JSONL to write (never one of the inputs)")
    embedding.add_argument("--force", action="store_true", help="replace --out if it exists")
    embedding.add_argument("--json", action="store_true", help="print the report and link prediction as JSON")
    embedding.set_defaults(func=_cli_embed)


def _cli_embed(args) -> int:
    import json

    from sdr.outputs import Outputs

    outputs = Outputs(inputs={"EDGES": args.edges}, outputs={"--out": args.out}, force=args.force).check()
    edges = read_edges_tsv(args.edges)
    config = GraphEmbeddingConfig(dimension=args.dim, epochs=args.epochs, comparator=args.comparator,
                                  undirected=args.undirected, learning_rate=args.lr, margin=args.margin,
                                  test_fraction=args.test_fraction, seed=args.seed)
    result = embed(edges, config)
    with outputs.commit() as staged:
        result.save_jsonl(staged["--out"])
    path = Path(args.out)
    if args.json:
        print(json.dumps({"out": str(path), "report": asdict(result.report),
                          "link_prediction": result.link_prediction}, indent=2))
    else:
        print(f"{path}: {len(result.ids)} embeddings of dimension {config.dimension}; {result.report}")
        if result.link_prediction:
            print("link prediction on held-out edges: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in result.link_prediction.items()))
    return 0
