"""Exact nearest neighbours of graph embeddings (:func:`nearest_neighbours`), by the comparator's metric.

A thin use of :class:`sdr.samplers.knn.NeighbourIndex`; SciNCL's bands over a large corpus are
:func:`sdr.samplers.knn_bands`. It changes with what a caller wants back (ids and scores), not with PBG.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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
