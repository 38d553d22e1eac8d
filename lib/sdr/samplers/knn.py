"""Nearest-neighbour search over citation embeddings, one block of queries at a time.

:class:`NeighbourIndex` is the search SciNCL's bands need (exact FAISS flat or IVF; FAISS GPU or torch on
CUDA when present), :func:`exact_neighbours` the chunked exact reference that approximate indexes are
measured against, :func:`flat_index` an exact FAISS index for small searches.

It changes with FAISS, torch and the hardware (devices, memory, index kinds), not with SciNCL's recipe.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from tqdm.auto import tqdm


#: FAISS GPU indexes select at most this many neighbours (``GPU_MAX_SELECTION_K`` in faiss/gpu; an error above
#: it), fewer than SciNCL's k⁻hard + 1 = 4001: deeper exact searches on a GPU go through torch instead.
FAISS_GPU_MAX_K = 2048
#: ``index="auto"`` searches exactly while queries × papers × dimension stays below this (≈ minutes of
#: BLAS on two CPU cores) or a GPU is present, and with an IVF index above it.
EXACT_SEARCH_BUDGET = 2e12
METRICS = ("l2", "ip", "cosine")


def flat_index(vectors: np.ndarray, metric: str):
    """An exact FAISS index over float32 ``vectors`` for ``metric`` ("ip", "cosine" or "l2").

    Returns ``(index, vectors)``: for "cosine" the vectors are an L2-normalised copy (search the queries in
    that copy), otherwise the array passed in.
    """
    import faiss

    if metric == "cosine":
        vectors = vectors.copy()
        faiss.normalize_L2(vectors)
    index = faiss.IndexFlatL2(vectors.shape[1]) if metric == "l2" else faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index, vectors


def _rows_of(vectors: np.ndarray, rows: np.ndarray | slice, metric: str) -> np.ndarray:
    """float32 copies of some rows (L2-normalised for cosine); works on a memory-mapped array too."""
    import faiss

    block = np.ascontiguousarray(np.asarray(vectors[rows], dtype=np.float32))
    if metric == "cosine":
        if np.may_share_memory(block, vectors) or not block.flags.writeable:  # never normalise the caller's array
            block = block.copy()
        faiss.normalize_L2(block)
    return block


def _drop_self(rows: np.ndarray, found: np.ndarray, k: int) -> np.ndarray:
    """``found`` (``k + 1`` columns, FAISS's ``-1`` padding last) without each query's own row: removed
    wherever ties put it, or, if it fell outside, the last column dropped. Returns ``k`` columns."""
    found = found[:, :k + 1]
    if found.shape[1] <= k:  # fewer rows than k + 1 exist: pad, the query itself is surely among them
        found = np.pad(found, ((0, 0), (0, k + 1 - found.shape[1])), constant_values=-1)
    keep = found != rows[:, None]
    no_self = keep.all(axis=1)
    keep[no_self, -1] = False
    return found[keep].reshape(len(rows), k)


def _ranked_merge(scores: np.ndarray, rows: np.ndarray, k: int, larger_is_nearer: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the ``k`` best of concatenated candidate lists (ties: smaller row first; -1 rows last)."""
    keyed = np.where(rows < 0, -np.inf if larger_is_nearer else np.inf, scores)
    primary = -keyed if larger_is_nearer else keyed
    order = np.lexsort((np.where(rows < 0, np.iinfo(np.int64).max, rows), primary), axis=1)[:, :k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)


class NeighbourIndex:
    """Nearest-neighbour search over citation embeddings, one block of queries at a time.

    ``kind``: ``"flat"`` (exact, FAISS ``IndexFlat``), ``"ivf"`` (FAISS ``IndexIVFFlat``: ``nlist`` k-means
    cells, ``nprobe`` of them searched; approximate — measure its band recall with :func:`band_recall`) or
    ``"auto"`` (flat while queries × papers × dimension < :data:`EXACT_SEARCH_BUDGET` or a GPU is present,
    IVF above; decided at the first search, when the query count is known).

    ``device``: ``"auto"`` uses a GPU when one is there — FAISS's GPU index (``faiss.get_num_gpus() > 0``)
    for searches of at most :data:`FAISS_GPU_MAX_K` neighbours, torch on CUDA (exact: matrix product +
    ``topk`` over chunks of the papers) for deeper exact searches — and FAISS on the CPU otherwise; ``"cpu"``,
    ``"faiss-gpu"`` and ``"torch"`` (CUDA when available, else the CPU: the same code path) force one.

    Memory: the index holds every vector (``N × d × 4`` bytes, as the embeddings themselves); a search holds
    one block of ``block_size × (k + 1)`` results (12 bytes each), whatever the number of queries. The
    vectors may be a memory-mapped ``.npy`` (:func:`sdr.graph.embed_edge_files`); they are added in blocks.
    """

    def __init__(self, vectors: np.ndarray, metric: str = "ip", kind: str = "flat", *, nlist: int | None = None,
                 nprobe: int | None = None, device: str = "auto", seed: int = 0, add_block: int = 65536):
        if metric not in METRICS:
            raise ValueError(f"NeighbourIndex: metric must be one of {METRICS}, got {metric!r}")
        if kind not in ("flat", "ivf", "auto"):
            raise ValueError(f"NeighbourIndex: kind must be 'flat', 'ivf' or 'auto', got {kind!r}")
        if device not in ("auto", "cpu", "faiss-gpu", "torch"):
            raise ValueError(f"NeighbourIndex: device must be 'auto', 'cpu', 'faiss-gpu' or 'torch', got {device!r}")
        if getattr(vectors, "ndim", 0) != 2 or vectors.shape[0] < 2:
            raise ValueError(f"NeighbourIndex: need a 2-D array of at least 2 vectors, got shape "
                             f"{getattr(vectors, 'shape', None)}")
        self.vectors, self.metric, self.kind, self.device = vectors, metric, kind, device
        self.n, self.dimension = int(vectors.shape[0]), int(vectors.shape[1])
        self.nlist, self.nprobe, self.seed, self.add_block = nlist, nprobe, seed, add_block
        self._cpu_index = None
        self._gpu_index = None
        self._torch_database = None
        self.backend = None  # set at the first search: "faiss-cpu", "faiss-gpu" or "torch-<device>"

    # -- building
    def _faiss_metric(self):
        import faiss

        return faiss.METRIC_L2 if self.metric == "l2" else faiss.METRIC_INNER_PRODUCT

    def _resolve_kind(self, n_queries: int) -> str:
        if self.kind != "auto":
            return self.kind
        if self.device == "torch":
            return "flat"
        exact_cost = float(n_queries) * self.n * self.dimension
        return "flat" if exact_cost <= EXACT_SEARCH_BUDGET or _gpu_available() else "ivf"

    def _build_cpu(self, kind: str):
        import faiss

        if kind == "flat":
            index = faiss.IndexFlatL2(self.dimension) if self.metric == "l2" else faiss.IndexFlatIP(self.dimension)
        else:
            # FAISS wants >= 39 training points a cell; 4·sqrt(N) cells is its usual starting point
            self.nlist = int(self.nlist or max(1, min(int(4 * math.sqrt(self.n)), self.n // 39)))
            quantizer = faiss.IndexFlatL2(self.dimension) if self.metric == "l2" else faiss.IndexFlatIP(self.dimension)
            index = faiss.IndexIVFFlat(quantizer, self.dimension, self.nlist, self._faiss_metric())
            index.cp.seed = self.seed
            sample = np.sort(np.random.default_rng(self.seed).choice(self.n, size=min(self.n, 64 * self.nlist),
                                                                     replace=False))
            index.train(_rows_of(self.vectors, sample, self.metric))
            self._quantizer = quantizer  # keep the SWIG object alive with the index
        for start in range(0, self.n, self.add_block):
            index.add(_rows_of(self.vectors, slice(start, start + self.add_block), self.metric))
        return index

    def _prepare(self, k: int, n_queries: int) -> None:
        kind = self._resolve_kind(n_queries)
        want_gpu = self.device in ("faiss-gpu", "torch") or (self.device == "auto" and _gpu_available())
        if self.device == "torch" or (want_gpu and self.device == "auto" and kind == "flat"
                                      and not (_faiss_gpus() and k + 1 <= FAISS_GPU_MAX_K) and _torch_cuda()):
            if kind != "flat":
                raise ValueError("NeighbourIndex: the torch backend searches exactly; use kind='flat'")
            self._prepare_torch()
            return
        if self._cpu_index is None or getattr(self, "_cpu_kind", None) != kind:
            self._cpu_index, self._cpu_kind = self._build_cpu(kind), kind
        self.backend = "faiss-cpu"
        if want_gpu and self.device != "cpu" and _faiss_gpus() and k + 1 <= FAISS_GPU_MAX_K:
            if self._gpu_index is None:
                import faiss

                self._gpu_resources = faiss.StandardGpuResources()
                self._gpu_index = faiss.index_cpu_to_gpu(self._gpu_resources, 0, self._cpu_index)
            self.backend = "faiss-gpu"
        elif self.device == "faiss-gpu":
            raise ValueError(f"NeighbourIndex: device='faiss-gpu' but "
                             + ("FAISS sees no GPU" if not _faiss_gpus() else
                                f"k + 1 = {k + 1} > {FAISS_GPU_MAX_K}, FAISS's GPU limit"))

    def build(self, k: int = 1, n_queries: int | None = None) -> "NeighbourIndex":
        """Build the index now (otherwise the first search does): for searches of depth ``k`` by
        ``n_queries`` queries (every paper by default), which decide ``"auto"`` and the device."""
        self._prepare(k, self.n if n_queries is None else n_queries)
        return self

    def _prepare_torch(self) -> None:
        if self._torch_database is None:
            device = "cuda" if _torch_cuda() else "cpu"
            import torch

            self._torch_database = torch.cat([
                torch.from_numpy(_rows_of(self.vectors, slice(s, s + self.add_block), self.metric)).to(device)
                for s in range(0, self.n, self.add_block)])
            self._torch_squares = (self._torch_database ** 2).sum(1) if self.metric == "l2" else None
            self.backend = f"torch-{device}"
            self._cpu_kind = "flat"

    def describe(self) -> str:
        kind = getattr(self, "_cpu_kind", self.kind)
        text = f"{kind} index over {self.n:,} × {self.dimension} ({self.metric})"
        if kind == "ivf":
            text += f", nlist {self.nlist}, nprobe {self._last_nprobe if hasattr(self, '_last_nprobe') else self.nprobe}"
        return text + f" on {self.backend or 'not built yet'}"

    def default_nprobe(self, k: int) -> int:
        """Cells to visit so that ≈ 8 (k + 1) candidates are scanned (an IVF cell holds ≈ N / nlist papers)."""
        return int(min(self.nlist, max(1, math.ceil(8 * (k + 1) * self.nlist / self.n))))

    # -- searching
    def _search_block(self, queries: np.ndarray, k1: int) -> np.ndarray:
        if self.backend.startswith("torch"):
            return self._torch_search(queries, k1)
        index = self._gpu_index if self.backend == "faiss-gpu" else self._cpu_index
        return index.search(queries, k1)[1]

    def _torch_search(self, queries: np.ndarray, k1: int) -> np.ndarray:
        import torch

        database = self._torch_database
        q = torch.from_numpy(queries).to(database.device)
        chunk = max(k1, int(2 ** 27 // max(1, len(queries))))  # ≤ 512 MiB of float32 scores at once
        best_scores = best_rows = None
        for start in range(0, self.n, chunk):
            part = database[start:start + chunk]
            scores = q @ part.T
            if self.metric == "l2":  # nearer = smaller |q - x|²; rank by 2 q·x - |x|² (|q|² is constant)
                scores = 2 * scores - self._torch_squares[start:start + chunk]
            top = scores.topk(min(k1, scores.shape[1]), dim=1)
            rows = top.indices + start
            if best_scores is None:
                best_scores, best_rows = top.values, rows
            else:
                merged = torch.cat([best_scores, top.values], 1).topk(min(k1, best_scores.shape[1] + top.values.shape[1]), dim=1)
                best_rows = torch.cat([best_rows, rows], 1).gather(1, merged.indices)
                best_scores = merged.values
        return best_rows.cpu().numpy().astype(np.int64)

    def blocks(self, query_rows: np.ndarray | None, k: int, block_size: int = 1024,
               nprobe: int | None = None, progress: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(rows, neighbours)`` per block of queries: the ``k`` nearest *other* rows of each query row,
        nearest first, ``-1`` where an approximate index found fewer. ``query_rows`` None = every row."""
        if k < 1 or k > self.n - 1:
            raise ValueError(f"NeighbourIndex: k must be in [1, {self.n - 1}], got {k}")
        query_rows = np.arange(self.n, dtype=np.int64) if query_rows is None else np.asarray(query_rows, np.int64)
        self._prepare(k, len(query_rows))
        if getattr(self, "_cpu_kind", None) == "ivf":
            self._last_nprobe = int(nprobe or self.nprobe or self.default_nprobe(k))
            index = self._gpu_index if self.backend == "faiss-gpu" else self._cpu_index
            index.nprobe = self._last_nprobe
        starts = range(0, len(query_rows), block_size)
        for start in tqdm(starts, desc="neighbour search", disable=not progress):
            rows = query_rows[start:start + block_size]
            found = self._search_block(_rows_of(self.vectors, rows, self.metric), min(k + 1, self.n))
            yield rows, _drop_self(rows, found, k)


def _faiss_gpus() -> int:
    import faiss

    return faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0


def _torch_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _gpu_available() -> bool:
    return _faiss_gpus() > 0 or _torch_cuda()


def exact_neighbours(vectors: np.ndarray, query_rows: np.ndarray, k: int, metric: str = "ip",
                     chunk_rows: int = 262_144) -> np.ndarray:
    """Exact ``k`` nearest other rows of some queries, scanning the papers in chunks of ``chunk_rows``
    (memory: one chunk of vectors and ``len(query_rows) × 2(k + 1)`` candidates, whatever ``N``). The
    reference :func:`band_recall` measures approximate indexes against."""
    import faiss

    query_rows = np.asarray(query_rows, dtype=np.int64)
    n = int(vectors.shape[0])
    k = min(k, n - 1)
    queries = _rows_of(vectors, query_rows, metric)
    larger_is_nearer = metric != "l2"
    best_scores = best_rows = None
    for start in range(0, n, chunk_rows):
        part = _rows_of(vectors, slice(start, start + chunk_rows), metric)
        index = faiss.IndexFlatL2(part.shape[1]) if metric == "l2" else faiss.IndexFlatIP(part.shape[1])
        index.add(part)
        scores, rows = index.search(queries, min(k + 1, len(part)))
        rows = np.where(rows >= 0, rows + start, -1)
        if best_scores is not None:
            scores, rows = np.concatenate([best_scores, scores], 1), np.concatenate([best_rows, rows], 1)
        best_scores, best_rows = _ranked_merge(scores, rows, k + 1, larger_is_nearer)
    return _drop_self(query_rows, best_rows, k)
