"""SciNCL's k-NN bands (Ostendorff et al., §3.3–3.4): positives and hard negatives from bands of a
paper's nearest neighbours in citation-embedding space, filtered random easy negatives.

:func:`knn_bands` searches once, in blocks, for several band settings (main run + k⁻hard sweep) and keeps
only the bands (:class:`KnnBands`); :func:`knn_band_triplets` makes one setting's triplets;
:func:`band_check` is the per-triplet rank table, blocked; :func:`band_recall` measures an approximate
index's bands against exact search on a sample.

It changes with SciNCL's sampling recipe; the search itself is :mod:`sdr.samplers.knn`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdr.outputs import scratch_folder
from sdr.samplers.examples import SamplingReport, Triplet, _finish
from sdr.samplers.knn import METRICS, NeighbourIndex, exact_neighbours


def _random_rows(n_rows: int, count: int, forbidden: np.ndarray, rng: np.random.Generator) -> list[int]:
    """Up to ``count`` distinct row numbers in ``[0, n_rows)`` outside ``forbidden`` (unique rows)."""
    count = min(count, n_rows - len(forbidden))
    if count <= 0:
        return []
    if n_rows - len(forbidden) <= max(4 * count, n_rows // 2):
        allowed = np.setdiff1d(np.arange(n_rows), forbidden, assume_unique=True)
        return [int(i) for i in rng.choice(allowed, size=count, replace=False)]
    chosen: list[int] = []
    while len(chosen) < count:
        draws = rng.integers(0, n_rows, size=2 * count + 4)
        for row in draws[~np.isin(draws, forbidden)].tolist():
            if row not in chosen:
                chosen.append(row)
                if len(chosen) == count:
                    break
    return chosen


@dataclass(frozen=True)
class BandSetting:
    """SciNCL's sampling hyper-parameters (§3.3–3.4) as :func:`knn_bands` keys them; any object with these
    attributes (such as :class:`sdr.methods.scincl.Bands`) is read through :meth:`of`."""

    k_pos: int = 25
    c_pos: int = 5
    k_hard: int = 4000
    c_hard: int = 2
    c_easy: int = 3
    filtered_random: bool = True

    @classmethod
    def of(cls, setting) -> "BandSetting":
        if isinstance(setting, cls):
            return setting
        if isinstance(setting, Mapping):
            return cls(**setting)
        return cls(**{name: getattr(setting, name) for name in cls.__dataclass_fields__})

    def validate(self) -> None:
        if not (1 <= self.c_pos <= self.k_pos and 0 <= self.c_hard <= self.k_hard and self.c_easy >= 0
                and self.c_hard + self.c_easy >= 1):
            raise ValueError(
                "knn_band_triplets: need 1 <= c_pos <= k_pos, 0 <= c_hard <= k_hard, c_easy >= 0 and "
                f"c_hard + c_easy >= 1; got k_pos={self.k_pos}, c_pos={self.c_pos}, k_hard={self.k_hard}, "
                f"c_hard={self.c_hard}, c_easy={self.c_easy}"
            )
        if self.c_pos > self.c_hard + self.c_easy:
            raise ValueError(
                f"knn_band_triplets: c_pos ({self.c_pos}) must be <= c_hard + c_easy ({self.c_hard + self.c_easy}): "
                "each negative makes one triplet, so further positives would never be used"
            )

    def clipped(self, n: int) -> tuple["BandSetting", str | None]:
        """The setting with ``k`` clipped to ``n − 1`` papers, and the warning that says so (or None)."""
        if self.k_pos <= n - 1 and self.k_hard <= n - 1:
            return self, None
        k_pos, k_hard = min(self.k_pos, n - 1), min(self.k_hard, n - 1)
        message = (f"k clipped to the corpus: k_pos {self.k_pos} -> {k_pos}, k_hard {self.k_hard} -> {k_hard} "
                   f"({n} papers).")
        return BandSetting(k_pos, min(self.c_pos, k_pos), k_hard, min(self.c_hard, k_hard), self.c_easy,
                           self.filtered_random), message

    @property
    def depth(self) -> int:
        return max(self.k_pos, self.k_hard)


def _random_rows_marked(n_rows: int, count: int, forbidden: np.ndarray, rng: np.random.Generator,
                        marked: np.ndarray) -> list[int]:
    """:func:`_random_rows` with the same draws, its membership test a lookup in ``marked`` (all False on
    entry and on return) instead of a sort of ``forbidden`` per query."""
    count = min(count, n_rows - len(forbidden))
    if count <= 0:
        return []
    if n_rows - len(forbidden) <= max(4 * count, n_rows // 2):
        allowed = np.setdiff1d(np.arange(n_rows), forbidden, assume_unique=True)
        return [int(i) for i in rng.choice(allowed, size=count, replace=False)]
    marked[forbidden] = True
    try:
        chosen: list[int] = []
        while len(chosen) < count:
            draws = rng.integers(0, n_rows, size=2 * count + 4)
            for row in draws[~marked[draws]].tolist():
                if row not in chosen:
                    chosen.append(row)
                    if len(chosen) == count:
                        break
        return chosen
    finally:
        marked[forbidden] = False


@dataclass
class KnnBands:
    """What SciNCL's sampler keeps of one neighbour search: per query and per :class:`BandSetting`, the rows
    of its positive band, its hard-negative band and its easy negatives (``-1`` where there are fewer).

    Memory ``queries × Σ (c_pos + c_hard + c_easy) × 8`` bytes — not ``queries × max(k)``. Build with
    :func:`knn_bands`; :meth:`triplets` turns one setting into :class:`Triplet` ids and a report.
    """

    ids: Sequence[str]
    query_rows: np.ndarray
    queries_total: int
    missing_queries: int
    settings: dict  # requested BandSetting -> (clipped BandSetting, warning or None)
    positives: dict
    hard: dict
    easy: dict
    search: str = ""
    seconds: float = 0.0
    reused: bool = False  # the neighbour lists came from an earlier search (SearchCache), not a new one

    def triplets(self, setting=None, margin: float = 1.0, verbose: bool = False) -> tuple[list[Triplet], SamplingReport]:
        """The triplets of one setting (the first one searched when None), as :func:`knn_band_triplets`
        makes them: ``c_hard + c_easy`` per query, positive ``i`` paired with negative ``i``."""
        key = next(iter(self.settings)) if setting is None else BandSetting.of(setting)
        if key not in self.settings:
            raise KeyError(f"KnnBands: setting {key} was not searched; searched {list(self.settings)}")
        used, warning = self.settings[key]
        report = SamplingReport(method="knn_band_triplets", queries_total=self.queries_total)
        if warning:
            report.warnings.append(warning)
        if self.missing_queries:
            report.skipped["not in embeddings"] += self.missing_queries
        ids = self.ids
        triplets: list[Triplet] = []
        for query_row, positive_rows, hard_rows, easy_rows in zip(
                self.query_rows.tolist(), self.positives[key].tolist(), self.hard[key].tolist(), self.easy[key].tolist()):
            positives = [ids[i] for i in positive_rows if i >= 0]
            hard = [ids[i] for i in hard_rows if i >= 0]
            easy = [ids[i] for i in easy_rows if i >= 0]
            report.negatives_short += used.c_easy - len(easy)
            negatives = hard + easy
            if not positives or not negatives:
                report.skipped["no neighbours"] += 1
                continue
            kinds = ["hard"] * len(hard) + ["easy"] * len(easy)
            query = ids[query_row]
            triplets.extend(Triplet(query, positives[j % len(positives)], negative, kind, margin)
                            for j, (negative, kind) in enumerate(zip(negatives, kinds)))
            report.queries_used += 1
            report.hard_negatives += len(hard)
            report.easy_negatives += len(easy)
        return _finish(report, triplets, verbose)


# ---------------------------------------------------------------------------------------------- one search, reused
def _digest(array: np.ndarray, block_rows: int = 65536) -> str:
    """blake2b of an array's shape, dtype and bytes, read in blocks (a memory-mapped array stays on disk)."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{array.shape}|{array.dtype}".encode())
    for start in range(0, len(array), block_rows):
        digest.update(np.ascontiguousarray(array[start:start + block_rows]).tobytes())
    return digest.hexdigest()


class SearchCache:
    """The neighbour lists of past searches (``queries × depth`` rows, nearest first, ``-1`` padding) with the query
    rows each was searched for, keyed by what decides a query's answer — the embedding's bytes, the ids, the metric and
    the index — so that every seed, ablation and sweep of a chapter on one embedding reuses one search: the bands and
    the easy negatives are cheap to derive, the search is not (an exact search of SciNCL's 136,820 queries over
    680,967 papers takes hours on a CPU). A kept search serves a later call whose query rows are all among its own
    (the same queries, or a subset such as Table 2's 1 % and 10 % rows and the sweeps' 10 %: their rows are read from
    it) to a depth ``≤`` its own (an exact search's first ``d`` neighbours are a search to depth ``d``, ties aside;
    a query's neighbours do not depend on the other queries searched with it).

    Lists of up to ``memory_bytes`` stay in memory; larger ones are memory-mapped ``.npy`` files in ``folder``
    (``$SDR_BAND_CACHE``; by default a temporary folder removed at exit), where a later process finds them too
    (``<key>-<queries>.npy`` with its query rows ``<key>-<queries>.rows.npy`` and ``<key>-<queries>.json``). At most
    ``max_entries`` searches are kept in memory, the least recently used dropped. ``hits`` and ``misses`` count the
    calls a kept search served and the ones it did not.
    """

    def __init__(self, folder: str | Path | None = None, memory_bytes: int = 1 << 30, max_entries: int = 4):
        self.folder = Path(folder) if folder else None
        self.memory_bytes, self.max_entries = memory_bytes, max_entries
        # entry name (``<key>-<query rows' digest>``) -> (query rows, neighbour lists)
        self._entries: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._temporary: Path | None = None
        self.hits = self.misses = 0

    @staticmethod
    def key(vectors: np.ndarray, ids: Sequence[str], metric: str, index: str) -> str:
        """What a query's neighbours depend on: the vectors, the ids (row order), the metric, the index."""
        parts = [_digest(vectors), hashlib.blake2b("\n".join(ids).encode(), digest_size=20).hexdigest(), metric, index]
        return hashlib.blake2b("|".join(parts).encode(), digest_size=20).hexdigest()

    @staticmethod
    def entry_name(key: str, query_rows: np.ndarray) -> str:
        return f"{key}-{_digest(np.asarray(query_rows, dtype=np.int64))[:16]}"

    def _disk(self) -> Path:
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            return self.folder
        if self._temporary is None:
            self._temporary = scratch_folder("sdr-band-cache-")
        return self._temporary

    def _candidates(self, key: str):
        """(name, query rows, lists) of every kept search under ``key``: in memory, then on disk in ``folder``."""
        yield from ((name, rows, found) for name, (rows, found) in list(self._entries.items())
                    if name.startswith(f"{key}-"))
        folder = self.folder or self._temporary  # the temporary folder too: a large search dropped from memory
        if folder is not None and folder.exists():
            for path in sorted(folder.glob(f"{key}-*.rows.npy")):
                name = path.name[:-len(".rows.npy")]
                lists = folder / f"{name}.npy"
                if name not in self._entries and lists.exists():
                    yield name, np.load(path), np.load(lists, mmap_mode="r")

    def get(self, key: str, query_rows: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray | None] | None:
        """A kept search under ``key`` of depth ≥ ``depth`` whose queries include every one of ``query_rows``, as
        ``(lists, positions)``: row ``positions[i]`` of ``lists`` (row ``i`` when ``positions`` is None: the same
        queries in the same order) holds query ``query_rows[i]``'s neighbours; None when there is none."""
        wanted = np.asarray(query_rows, dtype=np.int64)
        for name, rows, found in self._candidates(key):
            if found.shape[1] < depth:
                continue
            positions = _positions_in(rows, wanted)
            if positions is False:
                continue
            self._entries[name] = (rows, found)
            self._entries.move_to_end(name)
            self._evict()
            self.hits += 1
            return found, positions
        self.misses += 1
        return None

    def allocate(self, key: str, query_rows: np.ndarray, shape: tuple[int, int], dtype) -> np.ndarray:
        """Room for a search's lists: in memory, or a memory-mapped file when larger than ``memory_bytes``."""
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if size <= self.memory_bytes and self.folder is None:
            return np.empty(shape, dtype=dtype)
        path = self._disk() / f"{self.entry_name(key, query_rows)}.partial.npy"
        return np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)

    def put(self, key: str, query_rows: np.ndarray, found: np.ndarray, about: dict | None = None) -> None:
        """Keep the lists ``found`` of a search for ``query_rows`` (row ``i``: query ``query_rows[i]``)."""
        rows = np.array(query_rows, dtype=np.int64)
        name = self.entry_name(key, rows)
        if isinstance(found, np.memmap):
            found.flush()
            partial = Path(found.filename)
            np.save(partial.with_name(f"{name}.rows.npy"), rows)
            final = partial.with_name(f"{name}.npy")
            os.replace(partial, final)  # the lists last: a search is found only when complete
            found = np.load(final, mmap_mode="r")
            if self.folder is not None:
                (self.folder / f"{name}.json").write_text(json.dumps(about or {}, indent=1) + "\n", encoding="utf-8")
        self._entries[name] = (rows, found)
        self._entries.move_to_end(name)
        self._evict()

    def _evict(self) -> None:
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()


def _positions_in(kept_rows: np.ndarray, wanted: np.ndarray) -> np.ndarray | None | bool:
    """Where each of ``wanted`` is in ``kept_rows``: None when they are equal (same rows, same order), False when
    one is missing."""
    if len(kept_rows) == len(wanted) and np.array_equal(kept_rows, wanted):
        return None
    if not len(kept_rows):
        return False
    order = np.argsort(kept_rows, kind="stable")
    ordered = kept_rows[order]
    at = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
    if not np.array_equal(ordered[at], wanted):
        return False
    return order[at]


#: The process's search cache (``$SDR_BAND_CACHE`` keeps large searches across processes).
SEARCH_CACHE = SearchCache(os.environ.get("SDR_BAND_CACHE") or None)


def _index_key(searcher: NeighbourIndex) -> str:
    """What of the index decides a search's answer (an exact search: only that it is exact)."""
    kind = getattr(searcher, "_cpu_kind", None) or searcher.kind
    if kind == "flat":
        return "exact"
    return f"{kind}|nlist={searcher.nlist}|nprobe={searcher.nprobe}|seed={searcher.seed}"


def _positions_of(ids: Sequence[str], wanted: Iterable[str]) -> dict[str, int]:
    """Row of each wanted id, by one scan of ``ids`` (no dictionary over the whole corpus)."""
    wanted = set(wanted)
    found: dict[str, int] = {}
    for row, pid in enumerate(ids):
        if pid in wanted:
            found[pid] = row
            if len(found) == len(wanted):
                break
    return found


def knn_bands(
    embeddings: np.ndarray,
    ids: Sequence[str],
    settings: Sequence,
    *,
    metric: str = "l2",
    query_ids: Iterable[str] | None = None,
    seed: int = 0,
    index: str | NeighbourIndex = "flat",
    nlist: int | None = None,
    nprobe: int | None = None,
    device: str = "auto",
    block_size: int = 1024,
    progress: bool = False,
    cache: SearchCache | bool = True,
) -> KnnBands:
    """One neighbour search for several SciNCL band settings (the main one and, say, a k⁻hard sweep).

    The index (:class:`NeighbourIndex`; ``index`` names its kind or is a built one) is searched once, in
    blocks of ``block_size`` queries, to the deepest ``max(k⁺, k⁻hard)`` of all settings; from each block
    only the band columns and the easy negatives are kept (:class:`KnnBands`). Easy negatives are drawn per
    setting with their own ``numpy`` generator seeded ``seed``, in query order, so every setting gets the
    triplets :func:`knn_band_triplets` alone would give with that seed. Queries not in ``ids`` are counted
    as skipped.

    ``cache``: the search's neighbour lists are kept (:data:`SEARCH_CACHE`, or the :class:`SearchCache` given) and a
    later call on the same embedding, ids, metric and index whose queries are among the kept search's — another seed,
    another band setting of no greater depth, an ablation that changes only the sampling, a share of the queries (Table
    2's 1 % and 10 % rows, the sweeps) — reuses them (its rows of those queries) instead of searching again
    (``KnnBands.search`` says "reused"). ``False`` searches without keeping anything (memory: one block).
    """
    import time

    started = time.perf_counter()
    vectors = embeddings if getattr(embeddings, "dtype", None) == np.float32 else np.asarray(embeddings, np.float32)
    if getattr(vectors, "ndim", 0) != 2:
        raise ValueError(f"knn_band_triplets: embeddings must be a 2-D array [n, d], got shape {np.shape(vectors)}")
    ids = [str(pid) for pid in ids]  # (a str is returned as itself: no copy of the text)
    if len(ids) != vectors.shape[0]:
        raise ValueError(f"knn_band_triplets: {len(ids)} ids for {vectors.shape[0]} embeddings")
    if metric not in METRICS:
        raise ValueError(f"knn_band_triplets: metric must be 'l2', 'ip' or 'cosine', got {metric!r}")
    requested = [BandSetting.of(s) for s in settings]
    if not requested:
        raise ValueError("knn_bands: give at least one band setting")
    for setting in requested:
        setting.validate()
    n = len(ids)
    if n < 2:
        raise ValueError(f"knn_band_triplets: need at least 2 embeddings, got {n}")
    if len(set(ids)) != n:
        duplicates = [pid for pid, count in Counter(ids).items() if count > 1][:5]
        raise ValueError(f"knn_band_triplets: duplicate ids {duplicates}")
    clipped = {s: s.clipped(n) for s in requested}
    depth = max(used.depth for used, _ in clipped.values())

    if query_ids is None:
        query_rows, total, missing = np.arange(n, dtype=np.int64), n, 0
    else:
        queries = [str(q) for q in query_ids]
        position = _positions_of(ids, queries)
        known = [position[q] for q in queries if q in position]
        query_rows, total, missing = np.asarray(known, dtype=np.int64), len(queries), len(queries) - len(known)

    searcher = index if isinstance(index, NeighbourIndex) else NeighbourIndex(
        vectors, metric, index, nlist=nlist, nprobe=nprobe, device=device, seed=seed)
    q = len(query_rows)
    store = SEARCH_CACHE if cache is True else (cache or None)
    key = store.key(vectors, ids, metric, _index_key(searcher)) if store is not None and q else None
    kept = store.get(key, query_rows, depth) if key is not None else None
    reused = kept is not None
    row_type = np.int32 if n < 2 ** 31 else np.int64
    positives = {s: np.full((q, used.c_pos), -1, row_type) for s, (used, _) in clipped.items()}
    hard = {s: np.full((q, used.c_hard), -1, row_type) for s, (used, _) in clipped.items()}
    easy = {s: np.full((q, used.c_easy), -1, row_type) for s, (used, _) in clipped.items()}
    generators = {s: np.random.default_rng(seed) for s in clipped}
    marked = np.zeros(n, dtype=bool)
    done = 0

    def searched_blocks():
        """(rows, neighbours) per block: from the kept search, or searched now (and kept)."""
        if reused:
            lists, positions = kept
            for start in range(0, q, block_size):
                rows = slice(start, start + block_size) if positions is None else positions[start:start + block_size]
                yield query_rows[start:start + block_size], np.asarray(lists[rows, :depth], dtype=np.int64)
            return
        buffer = store.allocate(key, query_rows, (q, depth), row_type) if key is not None else None
        position = 0
        for rows, found in searcher.blocks(query_rows, depth, block_size, progress=progress):
            if buffer is not None:
                buffer[position:position + len(rows)] = found
            position += len(rows)
            yield rows, found
        if buffer is not None:
            store.put(key, query_rows, buffer, {"n": n, "queries": q, "depth": depth, "metric": metric,
                                    "index": searcher.describe()})

    if q:
        for rows, found in searched_blocks():
            block = slice(done, done + len(rows))
            for s, (used, _) in clipped.items():
                positives[s][block] = found[:, used.k_pos - used.c_pos:used.k_pos]
                if used.c_hard:
                    hard[s][block] = found[:, used.k_hard - used.c_hard:used.k_hard]
                rng = generators[s]
                for j, query_row in enumerate(rows.tolist()):
                    if used.filtered_random:  # strategy III: not within the top max(k); never the query itself
                        top = found[j, :used.depth]
                        forbidden = np.append(top[top >= 0], query_row)
                    else:
                        forbidden = np.array([query_row])
                    drawn = _random_rows_marked(n, used.c_easy, forbidden, rng, marked)
                    easy[s][done + j, :len(drawn)] = drawn
            done += len(rows)
    search = (f"reused: the kept search of depth ≥ {depth} ({_index_key(searcher)} index, {metric})"
              + ("" if kept[1] is None else f", its rows of these {q:,} of its {len(kept[0]):,} queries")
              if reused else searcher.describe())
    return KnnBands(ids=ids, query_rows=query_rows, queries_total=total, missing_queries=missing,
                    settings=clipped, positives=positives, hard=hard, easy=easy, search=search,
                    seconds=time.perf_counter() - started, reused=reused)


def knn_band_triplets(
    embeddings: np.ndarray,
    ids: Sequence[str],
    k_pos: int = 25,
    c_pos: int = 5,
    k_hard: int = 4000,
    c_hard: int = 2,
    c_easy: int = 3,
    filtered_random: bool = True,
    seed: int = 0,
    *,
    metric: str = "l2",
    query_ids: Iterable[str] | None = None,
    margin: float = 1.0,
    batch_size: int = 1024,
    progress: bool = True,
    verbose: bool = True,
    index: str | NeighbourIndex = "flat",
    nlist: int | None = None,
    nprobe: int | None = None,
    device: str = "auto",
    neighbours: KnnBands | None = None,
) -> tuple[list[Triplet], SamplingReport]:
    """SciNCL's neighbourhood sampling (Ostendorff et al., §3.3–3.4, strategies I + II/III).

    A FAISS index over the citation embeddings (``metric="l2"``, ``"ip"`` inner product, or ``"cosine"`` =
    inner product of L2-normalised vectors; exact ``IndexFlat`` by default, as SciNCL's "flat index
    (exhaustive search)", A.5) is searched once per query up to ``max(k_pos, k_hard)`` neighbours
    ``n_1, n_2, …`` (the query itself removed). Positives are the ``c_pos`` neighbours of the band
    ``(k_pos − c_pos, k_pos]``, hard negatives the band ``(k_hard − c_hard, k_hard]`` — as
    ``nearest_idxs[k − c : k]`` in malteos/scincl ``gdt/triples_miner/sampling.py``. ``c_easy`` easy
    negatives are random papers; with ``filtered_random`` (strategy III, SciNCL's best) those within the top
    ``max(k)`` neighbours are excluded. The query is never its own easy negative (SciNCL's random pool may
    contain it).

    Each query yields ``c_hard + c_easy`` triplets (5); positive ``i`` is paired with negative ``i``
    (cycling through the positives if ``c_pos`` is smaller; a larger ``c_pos`` is refused). A ``k``
    larger than the corpus allows is clipped to ``len(ids) − 1`` with a counted warning. Defaults are
    SciNCL's best: k⁺ = 25, c⁺ = 5, k⁻_hard = 4000, c⁻_hard = 2, c⁻easy = 3 (§6, Table 2); the
    paper's "filtered random" easy negatives are drawn from all ``ids`` (SciNCL draws from the queries).

    Queries are searched in blocks of ``batch_size`` and only the bands are kept (:func:`knn_bands`), so
    memory stays ``batch_size × max(k)`` during the search and ``queries × 10`` rows after it. ``index``,
    ``nlist``, ``nprobe`` and ``device`` choose the search (:class:`NeighbourIndex`: ``"ivf"`` for corpora
    where exact search is too slow, a GPU when present). ``neighbours``: the result of an earlier
    :func:`knn_bands` that searched this setting (the search is then not repeated).
    """
    setting = BandSetting(k_pos, c_pos, k_hard, c_hard, c_easy, filtered_random)
    if neighbours is None:
        neighbours = knn_bands(embeddings, ids, [setting], metric=metric, query_ids=query_ids, seed=seed,
                               index=index, nlist=nlist, nprobe=nprobe, device=device, block_size=batch_size,
                               progress=progress)
    else:
        setting.validate()
    return neighbours.triplets(setting, margin=margin, verbose=verbose)


def band_check(triplets: Sequence[Triplet], embeddings: np.ndarray, ids: Sequence[str], bands, *,
               metric: str = "l2", block_size: int = 1024, index: str | NeighbourIndex = "flat",
               device: str = "auto"):
    """Per triplet, the neighbour rank (1 = nearest, self excluded) of its positive and negative among the
    query's ``max(k)`` nearest, 0 when outside them, and whether each lies in its band — the table
    :func:`sdr.methods.scincl.band_ranks` makes, computed with a blocked search (memory ``block_size ×
    max(k)``, not ``queries × max(k)`` plus a dictionary per query).

    Columns: ``query, positive, negative, kind, positive_rank, negative_rank, positive_in_band,
    negative_in_band`` — an easy negative is "in band" when it is outside the top ``max(k)`` (filtered
    random) or anywhere (plain random). A query without a vector raises ``KeyError``.
    """
    import pandas as pd

    columns = ["query", "positive", "negative", "kind", "positive_rank", "negative_rank",
               "positive_in_band", "negative_in_band"]
    triplets = list(triplets)
    if not triplets:
        return pd.DataFrame(columns=columns)
    bands = BandSetting.of(bands)
    ids = [str(pid) for pid in ids]
    n = len(ids)
    k_max = min(max(bands.k_pos, bands.k_hard), n - 1)
    position = _positions_of(ids, {pid for t in triplets for pid in (t.query, t.positive, t.negative)})
    queries = sorted({t.query for t in triplets})
    missing = [q for q in queries if q not in position]
    if missing:
        raise KeyError(f"band_check: {len(missing)} query ids have no vector, e.g. {missing[:3]}")
    query_rows = np.array([position[q] for q in queries], dtype=np.int64)
    slot = {q: i for i, q in enumerate(queries)}
    by_query: dict[int, list[int]] = {}
    for number, t in enumerate(triplets):
        by_query.setdefault(slot[t.query], []).append(number)
    positive_rank = np.zeros(len(triplets), dtype=np.int64)
    negative_rank = np.zeros(len(triplets), dtype=np.int64)
    vectors = embeddings if getattr(embeddings, "dtype", None) == np.float32 else np.asarray(embeddings, np.float32)
    searcher = index if isinstance(index, NeighbourIndex) else NeighbourIndex(vectors, metric, index, device=device)
    done = 0
    for rows, found in searcher.blocks(query_rows, k_max, block_size):
        members = [(done + j, number) for j in range(len(rows)) for number in by_query[done + j]]
        done += len(rows)
        block_slots = np.array([s - (done - len(rows)) for s, _ in members], dtype=np.int64)
        numbers = np.array([number for _, number in members], dtype=np.int64)
        for target, out in (("positive", positive_rank), ("negative", negative_rank)):
            target_rows = np.array([position.get(getattr(triplets[i], target), -2) for i in numbers], np.int64)
            hits = found[block_slots] == target_rows[:, None]
            out[numbers] = np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, 0)
    rows = []
    for number, t in enumerate(triplets):
        p_rank, n_rank = int(positive_rank[number]), int(negative_rank[number])
        if t.kind == "hard":
            negative_ok = bands.k_hard - bands.c_hard < n_rank <= bands.k_hard
        else:
            negative_ok = n_rank == 0 or not bands.filtered_random
        rows.append({"query": t.query, "positive": t.positive, "negative": t.negative, "kind": t.kind,
                     "positive_rank": p_rank, "negative_rank": n_rank,
                     "positive_in_band": bands.k_pos - bands.c_pos < p_rank <= bands.k_pos,
                     "negative_in_band": negative_ok and t.negative != t.query})
    return pd.DataFrame(rows, columns=columns)


def band_recall(embeddings: np.ndarray, settings: Sequence, approximate: NeighbourIndex, *, metric: str = "ip",
                sample: int = 1000, seed: int = 0, block_size: int = 256, chunk_rows: int = 262_144,
                nprobes: Sequence[int | None] = (None,)) -> list[dict]:
    """How well an approximate index (IVF) reproduces SciNCL's bands, against exact search on a sample.

    ``sample`` query rows (seeded) are searched on ``approximate`` to the deepest ``max(k)`` of the settings
    (once per value of ``nprobes``; None = the index's own) and exactly (:func:`exact_neighbours`, twice as
    deep, so that displaced neighbours still have an exact rank). Per setting and nprobe:
    ``positive_band_recall`` / ``hard_band_recall`` — the share of the exact band's rows that the approximate
    search also puts in the band (strict: one missed nearer neighbour shifts the band); ``top_k_recall`` —
    the share of the exact top ``max(k)`` found at all; the exact ranks of the rows the approximate search
    puts in the hard band (median and 95th percentile; beyond the exact depth counts as ``2·depth + 1``),
    since a hard negative drawn a few ranks deeper than k⁻hard is still a hard negative; and the seconds
    each search took (``approximate_seconds``, ``exact_seconds``).
    """
    import time

    vectors = embeddings
    n = int(vectors.shape[0])
    requested = [BandSetting.of(s) for s in settings]
    clipped = [s.clipped(n)[0] for s in requested]
    depth = max(s.depth for s in clipped)
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(sample, n), replace=False))
    started = time.perf_counter()
    exact = exact_neighbours(vectors, rows, min(n - 1, 2 * depth), metric, chunk_rows)
    exact_seconds = time.perf_counter() - started
    beyond = 2 * depth + 1
    results = []
    for nprobe in nprobes:
        started = time.perf_counter()
        approx = np.concatenate([found for _, found in approximate.blocks(rows, depth, block_size, nprobe=nprobe)])
        approximate_seconds = time.perf_counter() - started
        for requested_setting, s in zip(requested, clipped):
            def band_overlap(lo: int, hi: int) -> float:
                if hi <= lo:
                    return float("nan")
                shared = [len(set(a[lo:hi].tolist()) & set(e[lo:hi].tolist()) - {-1}) for a, e in zip(approx, exact)]
                return float(np.mean(shared) / (hi - lo))

            top = [len(set(a[:s.depth].tolist()) & set(e[:s.depth].tolist()) - {-1}) / s.depth
                   for a, e in zip(approx, exact)]
            exact_ranks = []
            for a, e in zip(approx, exact):
                rank_of = {row: r for r, row in enumerate(e.tolist(), 1)}
                exact_ranks += [rank_of.get(row, beyond) for row in a[s.k_hard - s.c_hard:s.k_hard].tolist() if row >= 0]
            exact_ranks = np.array(exact_ranks or [beyond])
            results.append({
                "setting": requested_setting, "queries": len(rows), "depth": s.depth,
                "positive_band_recall": band_overlap(s.k_pos - s.c_pos, s.k_pos),
                "hard_band_recall": band_overlap(s.k_hard - s.c_hard, s.k_hard),
                "top_k_recall": float(np.mean(top)),
                "hard_exact_rank_median": float(np.median(exact_ranks)),
                "hard_exact_rank_p95": float(np.percentile(exact_ranks, 95)),
                "index": approximate.describe(), "nprobe": getattr(approximate, "_last_nprobe", None),
                "approximate_seconds": approximate_seconds, "exact_seconds": exact_seconds,
            })
    return results
