"""PyTorch-BigGraph (PBG) embeddings of a citation graph held in memory, and the PBG machinery every route uses.

* :class:`GraphEmbeddingConfig` — PBG settings; defaults are SciNCL A.5 / malteos/scincl
  ``biggraph_configs/s2orc_768d_dot.py`` (768-d, ``dot``, 20 epochs, lr 0.1, margin 0.15, batch negatives).
* :func:`embed` — embed a :class:`~sdr.corpus.CitationGraph` or ``(citing, cited[, weight])`` edges
  (:func:`training_edges`: weights as repeats, the held-out split over distinct edges, both directions when
  ``undirected``); a path goes to :func:`sdr.graph.scale.embed_edge_files`.
* :func:`plan_partitions` — PBG's ``num_partitions`` from the node count and a memory budget.
* PBG's files and run: the config, the bucket files, seeded training, reading the vectors back, and the
  torchbiggraph 1.0.0 fixes (schema on Python ≥ 3.9, unseeded bucket order, warnings).

It changes with PBG and its settings; reading edge files (:mod:`sdr.graph.edges`), streaming large graphs
(:mod:`sdr.graph.scale`) and link prediction (:mod:`sdr.graph.link_prediction`) change on their own.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union, get_args, get_origin

import numpy as np
import torch

from sdr.corpus import CitationGraph
from sdr.graph.edges import Edge, edges_of
from sdr.graph.neighbours import nearest_neighbours


#: The FAISS metric that ranks like each PBG comparator (``samplers.knn_band_triplets`` takes these).
COMPARATOR_METRIC = {"dot": "ip", "cos": "cosine"}


_ENTITY = "paper"
_RELATION = "cites"


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


def _patch_torchbiggraph_rpc() -> None:
    """PBG's distributed mode passes its messages between the machines of one run (bucket assignments, statistics)
    as ``torch.save`` bytes; torch ≥ 2.6 loads with ``weights_only=True``, which refuses PBG's own classes
    (``torchbiggraph.types.Bucket``), so every trainer but rank 0 dies and rank 0 waits for ever. The messages come
    from the run's own trainers (the trust boundary is the cluster running it): load them as PBG 1.0.0 did."""
    import io

    import torch
    from torchbiggraph import rpc

    def _deserialize(tensor):
        return torch.load(io.BytesIO(tensor.numpy().tobytes()), weights_only=False)

    rpc._deserialize = _deserialize


_patch_torchbiggraph_rpc()


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
    #: PBG's HOGWILD worker processes. None: one per core this process may use (:func:`machine_workers`) for runs of
    #: at least :data:`PARALLEL_MIN_EDGES` training edges, 1 below (the book's small graphs: one worker keeps a
    #: seed's embedding fixed; several workers update shared embeddings in a racy order, as PBG means them to).
    workers: Optional[int] = None

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
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"GraphEmbeddingConfig: workers must be >= 1 or None, got {self.workers}")


#: From this many training edges on, ``workers=None`` uses every core (below it, one worker: seeded and exact).
PARALLEL_MIN_EDGES = 1_000_000


def machine_workers() -> int:
    """The cores this process may run on (its CPU affinity, so a container's or a job's share, not the host's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def workers_for(config: "GraphEmbeddingConfig", train_edges: int) -> int:
    """PBG's ``workers`` for a run: the config's, else every core for large runs, else 1 (see ``workers``)."""
    if config.workers is not None:
        return int(config.workers)
    return machine_workers() if train_edges >= PARALLEL_MIN_EDGES else 1


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
    workers: int = 1  # PBG's HOGWILD worker processes
    seconds: float = 0.0
    phases: dict = field(default_factory=dict)  # seconds per phase (ids, buckets, train, link_prediction, vectors)

    def __str__(self) -> str:
        text = (f"{self.nodes} nodes, {self.distinct_edges} distinct edges -> {self.train_edges} training "
                f"edges (with repeats), {self.test_edges} held out; {self.num_partitions} partition"
                f"{'s' if self.num_partitions != 1 else ''}, {self.workers} worker{'s' if self.workers != 1 else ''}; "
                f"{self.seconds:.1f} s")
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


#: The most times one edge may be repeated (weight × weight_scale): beyond it the repeats overflow exact integers
#: (an int64 cast of 1e300 wraps round and the edge would be dropped) and could not be held anyway.
MAX_REPEATS = 2 ** 53

#: Bytes a training row costs in :func:`training_edges` (a Python tuple of two ints in a list)
_ROW_BYTES = 120

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


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2 ** 30:,.2f} GiB"


def check_dimension(config: GraphEmbeddingConfig) -> None:
    """Refuse a dimension whose single node (vector + row-Adagrad state) cannot fit the embeddings' half of
    the memory budget, before any edge is read (``sdr graph embed --dim 2000000000``)."""
    budget = _budget(config)
    if _node_bytes(config.dimension) > budget / 2:
        raise ValueError(f"--dim {config.dimension:,}: one node's vector and optimizer state take "
                         f"{_gib(_node_bytes(config.dimension))}, more than the embeddings' half of the memory budget "
                         f"({_gib(budget)}; --memory-gb); expected a dimension such as 768 (SciNCL)")


def check_resources(plan: PartitionPlan, n_nodes: int, n_edges: int, config: GraphEmbeddingConfig,
                    folder: Path, vectors_file: bool) -> None:
    """Before PBG's files are written: the plan's embeddings fit the memory budget (even at one node per
    partition they may not), and the disk under ``folder`` holds the checkpoint (written beside the previous
    version while saving), the training buckets and, with ``vectors_file``, ``vectors.npy``."""
    import shutil

    node_bytes = _node_bytes(config.dimension)
    if plan.embedding_bytes > plan.budget_bytes / 2:
        raise ValueError(f"{n_nodes:,} nodes at dimension {config.dimension:,}: the embeddings PBG holds need "
                         f"{_gib(plan.embedding_bytes)} in {plan.num_partitions} partition(s), more than half of the "
                         f"memory budget ({_gib(plan.budget_bytes)}; --memory-gb, --partitions, --dim)")
    needed = 2 * n_nodes * node_bytes + n_edges * (2 if config.undirected else 1) * 16
    if vectors_file:
        needed += n_nodes * 4 * config.dimension
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if needed > free:
        raise ValueError(f"{n_nodes:,} nodes at dimension {config.dimension:,} and {n_edges:,} edge lines need "
                         f"about {_gib(needed)} on disk (checkpoints, buckets{', vectors.npy' if vectors_file else ''})"
                         f" but {probe} has {_gib(free)} free; expected a smaller --dim or another --work-dir")


def _partition_sizes(n_nodes: int, num_partitions: int) -> list[int]:
    """Node ``g`` lives in partition ``g % P`` at offset ``g // P`` (PBG's importer also spreads nodes over
    partitions without regard to their ids; modulo keeps the mapping a formula)."""
    return [(n_nodes - p + num_partitions - 1) // num_partitions for p in range(num_partitions)]


def _bucket_key(lhs: np.ndarray, rhs: np.ndarray, num_partitions: int) -> np.ndarray:
    return (lhs % num_partitions) * num_partitions + rhs % num_partitions


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


def _pbg_settings(config: GraphEmbeddingConfig, entity_path: Path, edge_path: Path, checkpoint_path: Path,
                  num_partitions: int = 1, max_edges_per_chunk: int | None = None, workers: int = 1,
                  num_machines: int = 1, init_method: str | None = None) -> dict:
    """PBG's config as a plain dict (what ``torchbiggraph_train`` reads from a config file)."""
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
        "workers": int(workers),
        "verbose": 0,
    }
    if max_edges_per_chunk is not None:
        settings["max_edges_per_chunk"] = int(max_edges_per_chunk)
    if num_machines > 1:  # PBG's distributed mode: one trainer per machine, partitions served by the trainers
        settings.update({"num_machines": int(num_machines), "distributed_init_method": init_method,
                         "num_partition_servers": -1})
    return settings


def _pbg_config(config: GraphEmbeddingConfig, entity_path: Path, edge_path: Path, checkpoint_path: Path,
                num_partitions: int = 1, max_edges_per_chunk: int | None = None, workers: int = 1):
    from torchbiggraph.config import parse_config

    return parse_config(_pbg_settings(config, entity_path, edge_path, checkpoint_path, num_partitions,
                                      max_edges_per_chunk, workers))


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
               vectors_path: Path | None, phases: dict | None = None,
               workers: int = 1) -> tuple[np.ndarray, dict[str, float]]:
    """Train PBG on the buckets already written under ``root/train`` with ``workers`` HOGWILD processes; vectors and
    link prediction."""
    from torchbiggraph.graph_storages import ENTITY_STORAGES
    from torchbiggraph.train import train as pbg_train

    from sdr.graph.link_prediction import _link_prediction  # here: link_prediction imports this module

    started = time.perf_counter()
    entity_storage = ENTITY_STORAGES.make_instance(str(root / "entities"))
    entity_storage.prepare()
    for partition, size in enumerate(_partition_sizes(n_nodes, plan.num_partitions)):
        entity_storage.save_count(_ENTITY, partition, size)
    pbg_config = _pbg_config(config, root / "entities", root / "train", root / "checkpoints",
                             plan.num_partitions, plan.max_edges_per_chunk, workers)
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
    too_many = [(edge, r) for edge, r in repeats.items() if r > MAX_REPEATS]
    if too_many:
        (citing, cited), r = too_many[0]
        raise ValueError(f"graph.training_edges: edge {citing}->{cited} would be repeated {r:g} times (weight × "
                         f"weight_scale), more than {MAX_REPEATS:,}; expected small whole-number weights")
    repeats = {edge: int(round(r)) for edge, r in repeats.items()}
    report.zero_weight_edges = sum(1 for r in repeats.values() if r == 0)
    repeats = {edge: r for edge, r in repeats.items() if r > 0}
    if not repeats:
        raise ValueError(f"graph.training_edges: all {len(weights)} edges have weight 0")
    rows = sum(repeats.values()) * (2 if config.undirected else 1)
    if rows * _ROW_BYTES > _budget(config) / 4:  # the rows are listed in memory below: bounded first
        raise ValueError(f"graph.training_edges: the weights repeat the edges into {rows:,} training rows "
                         f"(about {_gib(rows * _ROW_BYTES)}), more than a quarter of the memory budget "
                         f"({_gib(_budget(config))}); expected smaller weights, or edge files (embed_edge_files)")
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
        from sdr.graph.scale import embed_edge_files  # here: scale imports this module

        return embed_edge_files(source, config, work_dir=work_dir, verbose=verbose)
    ids, train_rows, test, report = training_edges(source, config, nodes)
    position = {pid: i for i, pid in enumerate(ids)}
    test_rows = np.array([(position[a], position[b]) for a, b in test], dtype=np.int64).reshape(-1, 2)
    plan = plan_partitions(len(ids), len(train_rows), config.dimension, _budget(config), config.num_partitions)
    report.num_partitions = plan.num_partitions
    check_resources(plan, len(ids), len(train_rows), config, Path(work_dir or tempfile.gettempdir()), False)
    report.workers = workers_for(config, len(train_rows))
    started = time.perf_counter()
    with _quiet_pbg(verbose), tempfile.TemporaryDirectory(prefix="sdr-pbg-") as temporary:
        root = Path(work_dir) if work_dir is not None else Path(temporary)
        _save_edges(root / "train", train_rows, plan.num_partitions)
        vectors, link = _train_pbg(root, config, len(ids), plan, test_rows, vectors_path=None, phases=report.phases,
                                   workers=report.workers)
    report.seconds = time.perf_counter() - started
    return GraphEmbedding(ids=ids, vectors=vectors, config=config, link_prediction=link, report=report,
                          test_edges=test)


def _budget(config: GraphEmbeddingConfig) -> int:
    return int(config.memory_budget_gb * 2 ** 30) if config.memory_budget_gb else default_memory_budget()
