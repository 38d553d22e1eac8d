"""PBG embeddings of a citation graph of any size (S2ORC's 52.5 M nodes / 463.7 M edges), streamed from edge files.

:func:`embed_edge_files` reads the files (:class:`~sdr.graph.edges.EdgeFiles`) twice in chunks: once for the
sorted distinct node ids (:class:`NodeIds`), once to spill each edge into its PBG partition bucket;
:func:`write_buckets` deduplicates and splits bucket by bucket, and PBG trains in partitioned mode with the
partitions :func:`~sdr.graph.pbg.plan_partitions` chooses.

It changes with the memory model of large graphs (spills, buckets, id arrays), not with PBG's settings.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from sdr.graph.edges import EdgeFiles
from sdr.graph.provenance import edge_source, source_with_counts
from sdr.graph.pbg import (MAX_REPEATS, EmbeddingReport, GraphEmbedding, GraphEmbeddingConfig, PartitionPlan,
                           _bucket_key, _budget, _quiet_pbg, _save_bucket, _train_pbg, check_resources,
                           plan_partitions, workers_for)
from sdr.jsonio import InputError


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


_SPILL = np.dtype([("lhs", "<i8"), ("rhs", "<i8"), ("weight", "<f8")])
_DEDUPED = np.dtype([("lhs", "<i8"), ("rhs", "<i8"), ("repeats", "<i8")])


def _spill(folder: Path, name: str, records: np.ndarray) -> None:
    with (folder / name).open("ab") as handle:
        records.tofile(handle)


def _read_spill(folder: Path, name: str, dtype: np.dtype) -> np.ndarray:
    path = folder / name
    return np.fromfile(path, dtype=dtype) if path.exists() else np.zeros(0, dtype=dtype)


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
    vectors_file: bool = False,
    min_partitions: int = 1,
) -> Buckets:
    """Stream edge files into PBG's partitioned training buckets under ``root/train`` (the part of
    :func:`embed_edge_files` before training; memory: the node ids and one bucket of edges). ``min_partitions``:
    at least this many partitions (PBG's distributed mode needs two per machine)."""
    say = say or (lambda message: None)
    started = time.perf_counter()
    root = Path(root)
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
    if plan.num_partitions < min_partitions:
        plan = plan_partitions(n_nodes, n_lines, config.dimension, _budget(config), min(min_partitions, n_nodes))
    # memory and disk checked before any bucket or checkpoint is written (pass 1 wrote nothing)
    check_resources(plan, n_nodes, n_lines, config, root, vectors_file)
    root.mkdir(parents=True, exist_ok=True)
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
            if np.any(scaled > MAX_REPEATS):  # an int64 cast would wrap round and drop the edge: refused
                raise InputError(f"{files}: an edge's summed weight × weight_scale {config.weight_scale} is "
                                 f"{scaled.max():g} repeats, more than {MAX_REPEATS:,}; expected small whole numbers")
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
            n_rows = int(train["repeats"].sum())
            if n_rows * _SPILL.itemsize > plan.budget_bytes / 4:  # bounded before the rows are allocated
                raise InputError(f"{files}: the edge weights repeat one bucket's edges into {n_rows:,} training rows "
                                 f"({n_rows * _SPILL.itemsize / 2 ** 30:,.2f} GiB), more than a quarter of the memory "
                                 f"budget ({plan.budget_bytes / 2 ** 30:,.2f} GiB); expected smaller weights or more "
                                 f"--partitions")
            rows = np.empty(n_rows, dtype=_SPILL)
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
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    source = edge_source(paths)  # recorded in embedding.json: which graph these vectors embed

    def say(message: str) -> None:
        if verbose:
            print(f"[graph {time.perf_counter() - started:7.1f} s] {message}", flush=True)

    with _quiet_pbg(verbose), tempfile.TemporaryDirectory(prefix="sdr-pbg-") as temporary:
        root = Path(work_dir) if work_dir is not None else Path(temporary)
        buckets = write_buckets(paths, config, root, chunk_size=chunk_size, say=say,
                                vectors_file=work_dir is not None)
        node_ids, report = buckets.node_ids, buckets.report
        vectors_path = None
        if work_dir is not None:
            vectors_path = root / "vectors.npy"
            (root / "ids.txt").write_text("".join(f"{pid}\n" for pid in node_ids.ids.astype(str)), encoding="utf-8")
        report.workers = workers_for(config, report.train_edges)
        say(f"training PBG ({report.workers} worker{'s' if report.workers != 1 else ''})")
        vectors, link = _train_pbg(root, config, len(node_ids), buckets.plan, buckets.test_rows, vectors_path,
                                   report.phases, workers=report.workers)
        say(f"trained; link prediction {link}")
    ids = node_ids.as_strings()
    report.seconds = time.perf_counter() - started
    if work_dir is not None:  # read back with the vectors as a given embedding (sdr.graph.given)
        _write_info(Path(work_dir), config, report, link, source_with_counts(source, report))
    return GraphEmbedding(ids=ids, vectors=vectors, config=config, link_prediction=link, report=report,
                          test_edges=_IdPairs(buckets.test_rows, ids))


# ---------------------------------------------------------------------------------------------- several machines
_DISTRIBUTED_FILE = "distributed.json"


def prepare_distributed(
    paths: str | Path | Iterable[str | Path],
    config: GraphEmbeddingConfig,
    work_dir: str | Path,
    machines: int,
    init_method: str,
    chunk_size: int = 1_000_000,
    verbose: bool = False,
) -> list[str]:
    """Everything ``machines`` machines need to train PyTorch-BigGraph's distributed mode on one graph, written to
    ``work_dir`` (a folder every machine sees at the same path: NFS, a cluster file system): PBG's partitioned
    buckets (at least two partitions a machine), the entity counts, ``ids.txt``, the held-out edges, and
    ``config.py`` for PBG's trainer (``num_machines``, ``distributed_init_method``, the trainers serving
    the partitions, ``workers`` = :attr:`GraphEmbeddingConfig.workers` or each machine's cores). Returns the command
    to start on each machine (rank 0 first); :func:`collect_distributed` then reads the trained vectors.
    See book/reproducing.md, "The citation graph on several machines"."""
    from torchbiggraph.graph_storages import ENTITY_STORAGES

    from sdr.graph.pbg import _ENTITY, _partition_sizes, _pbg_settings

    if machines < 2:
        raise ValueError(f"prepare_distributed: needs at least 2 machines, got {machines} (one machine: embed_edge_files)")
    if not init_method or "://" not in init_method:
        raise ValueError(f"prepare_distributed: init_method must be a URI every machine reaches, e.g. "
                         f"tcp://HOST-OF-RANK-0:29500 or file:///shared/pbg-rendezvous; got {init_method!r}")
    root = Path(work_dir).resolve()
    say = (lambda message: print(f"[graph] {message}", flush=True)) if verbose else None
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    source = edge_source(paths)
    buckets = write_buckets(paths, config, root, chunk_size=chunk_size, say=say, min_partitions=2 * machines)
    n_nodes, plan = len(buckets.node_ids), buckets.plan
    storage = ENTITY_STORAGES.make_instance(str(root / "entities"))
    storage.prepare()
    for partition, size in enumerate(_partition_sizes(n_nodes, plan.num_partitions)):
        storage.save_count(_ENTITY, partition, size)
    (root / "ids.txt").write_text("".join(f"{pid}\n" for pid in buckets.node_ids.ids.astype(str)), encoding="utf-8")
    np.save(root / "test_rows.npy", buckets.test_rows)
    settings = _pbg_settings(config, root / "entities", root / "train", root / "checkpoints", plan.num_partitions,
                             plan.max_edges_per_chunk, config.workers or 0, machines, init_method)
    if not config.workers:
        settings.pop("workers")  # PBG then uses each machine's CPU count
    (root / "config.py").write_text(
        '"""PyTorch-BigGraph config written by sdr.graph.prepare_distributed (run: python -m sdr.graph.pbg_train '
        'config.py --rank R on each machine)."""\nimport json\n\n\ndef get_torchbiggraph_config():\n'
        f"    return json.loads({json.dumps(json.dumps(settings, indent=1))})\n", encoding="utf-8")
    about = {"nodes": n_nodes, "num_partitions": plan.num_partitions, "machines": machines,
             "init_method": init_method, "config": asdict(config), "report": asdict(buckets.report),
             "source": source_with_counts(source, buckets.report)}
    (root / _DISTRIBUTED_FILE).write_text(json.dumps(about, indent=1, default=str) + "\n", encoding="utf-8")
    return [f"python -m sdr.graph.pbg_train {root / 'config.py'} --rank {rank}" for rank in range(machines)]


def collect_distributed(work_dir: str | Path, link_prediction: bool = True) -> GraphEmbedding:
    """The vectors of a distributed run prepared by :func:`prepare_distributed` once every machine finished:
    ``work_dir/vectors.npy`` (memory-mapped) in the order of ``ids.txt``, and link prediction on the held-out
    edges."""
    from torchbiggraph.config import ConfigFileLoader

    from sdr.graph.link_prediction import _link_prediction
    from sdr.graph.pbg import _read_vectors

    from sdr.jsonio import parse_json, require_file

    root = Path(work_dir).resolve()
    what = "a distributed run prepared by `sdr graph embed --machines M --work-dir DIR`"
    files = {name: require_file(root / name, what) for name in (_DISTRIBUTED_FILE, "config.py", "test_rows.npy",
                                                                 "ids.txt")}
    try:
        about = parse_json(files[_DISTRIBUTED_FILE].read_text(encoding="utf-8"))
        n_nodes, partitions = int(about["nodes"]), int(about["num_partitions"])
        test_rows = np.load(files["test_rows.npy"], allow_pickle=False)
        ids = files["ids.txt"].read_text(encoding="utf-8").split()
    except (ValueError, KeyError, TypeError, OSError, EOFError) as error:
        raise InputError(f"{root}: unreadable run files ({type(error).__name__}: {str(error)[:120]}); expected "
                         f"{what}") from None
    if len(ids) != n_nodes or test_rows.ndim != 2 or (len(test_rows) and test_rows.shape[1] != 2):
        raise InputError(f"{root}: ids.txt has {len(ids):,} ids for {n_nodes:,} nodes, test_rows.npy the shape "
                         f"{test_rows.shape}; expected {what}")
    pbg_config = ConfigFileLoader().load_config(str(files["config.py"]))
    checkpoint = Path(pbg_config.checkpoint_path)
    if not (checkpoint / "checkpoint_version.txt").is_file():
        raise InputError(f"{root}: no finished checkpoint in {checkpoint} (checkpoint_version.txt missing): run every "
                         "machine's `python -m sdr.graph.pbg_train` command and wait until all of them finish")
    try:
        link = _link_prediction(pbg_config, test_rows, partitions) if link_prediction and len(test_rows) else {}
        vectors = _read_vectors(pbg_config, n_nodes, partitions, root / "vectors.npy")
    except Exception as error:  # torchbiggraph's CouldNotLoadData and friends: a checkpoint cut short
        if type(error).__module__.startswith("torchbiggraph") or isinstance(error, (OSError, EOFError)):
            raise InputError(f"{checkpoint}: the checkpoint cannot be read ({type(error).__name__}: "
                             f"{str(error)[:120]}); did every machine finish?") from None
        raise
    config = GraphEmbeddingConfig(**{k: v for k, v in about["config"].items()
                                     if k in GraphEmbeddingConfig.__dataclass_fields__})
    report = EmbeddingReport(**{k: v for k, v in about["report"].items() if k in EmbeddingReport.__dataclass_fields__})
    _write_info(root, config, report, link, about.get("source"))
    return GraphEmbedding(ids=ids, vectors=vectors, config=config, link_prediction=link, report=report,
                          test_edges=_IdPairs(test_rows, ids))


def _write_info(folder: Path, config: GraphEmbeddingConfig, report: EmbeddingReport, link: dict,
                source: dict | None) -> None:
    """``folder/embedding.json`` beside vectors.npy and ids.txt: what a given embedding is read back with
    (:mod:`sdr.graph.given`: its comparator, dimension and link prediction) and the graph it embeds (``source``,
    :func:`sdr.graph.provenance.edge_source` with the embedded counts: the SciNCL chapter pairs its rows with the
    paper's only for the S2ORC citation graph dataset)."""
    from sdr.graph.given import EMBEDDING_INFO

    about = {"config": asdict(config), "report": asdict(report), "link_prediction": link, "source": source}
    (Path(folder) / EMBEDDING_INFO).write_text(json.dumps(about, indent=1, default=str) + "\n", encoding="utf-8")
