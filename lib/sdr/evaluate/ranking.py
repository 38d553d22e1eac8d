"""Shared ranking helpers: vectorised L2 ranking, the rank metrics of the official scripts, pytrec_eval.

The per-list metrics reproduce ``rank_metrics.py`` (https://gist.github.com/bwhite/3726239), the module
CSFCube's ``eval_scripts/ranking_eval.py`` imports as ``rm``: relevance lists are in rank order, binary
metrics treat any non-zero value as relevant, and ``ndcg_at_k`` uses ``method=0`` — the first *two*
ranks are undiscounted (weights 1, 1, 1/log2(3), 1/log2(4), …) and the ideal list is the whole list
sorted before the cut at ``k``.

This module is small on purpose and other evaluators import it; keep its signatures stable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

# --------------------------------------------------------------------------- distances and ranking


def l2_distances(queries: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Euclidean distances ``[n_queries, n_candidates]`` in one matrix product (float64 for ties).

    Uses ``|q|² + |c|² − 2 q·c`` and clips tiny negative values from rounding to zero.
    """
    queries = np.atleast_2d(np.asarray(queries, dtype=np.float64))
    candidates = np.atleast_2d(np.asarray(candidates, dtype=np.float64))
    if queries.shape[1] != candidates.shape[1]:
        raise ValueError(
            f"query vectors have {queries.shape[1]} dimensions, candidate vectors {candidates.shape[1]}"
        )
    squared = (
        np.sum(queries**2, axis=1)[:, None]
        + np.sum(candidates**2, axis=1)[None, :]
        - 2.0 * queries @ candidates.T
    )
    return np.sqrt(np.clip(squared, 0.0, None))


def rank_by_l2(query: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order candidate rows by ascending L2 distance to ``query``; ties keep the input order.

    Returns ``(order, distances)`` where ``distances`` are in the returned order. A stable sort is
    what the official scripts get from ``sorted(..., key=distance)``.
    """
    distances = l2_distances(query, candidates)[0]
    order = np.argsort(distances, kind="stable")
    return order, distances[order]


# --------------------------------------------------------------------------- rank_metrics.py


def precision_at_k(relevances: Sequence[float], k: int) -> float:
    """Fraction of the first ``k`` items that are relevant; raises when the list is shorter than ``k``."""
    if k < 1:
        raise ValueError(f"precision_at_k needs k >= 1, got {k}")
    binary = np.asarray(relevances)[:k] != 0
    if binary.size != k:
        raise ValueError(f"relevance list has {len(relevances)} items, fewer than k={k}")
    return float(np.mean(binary))


def recall_at_k(relevances: Sequence[float], k: int, total_relevant: int | None = None) -> float:
    """Relevant items in the first ``k`` over all relevant items of the list (CSFCube's ``recall_at_k``).

    ``total_relevant`` caps the denominator (the official argument ``max_total_relevant``); 0 relevant → 0.
    """
    binary = np.asarray(relevances) != 0
    total = int(binary.sum())
    if total_relevant is not None:
        total = min(total, int(total_relevant))
    if total <= 0:
        return 0.0
    return float(binary[:k].sum()) / total


def r_precision(relevances: Sequence[float]) -> float:
    """Precision up to and including the rank of the *last* relevant item (not standard R-precision)."""
    binary = np.asarray(relevances) != 0
    positions = binary.nonzero()[0]
    if not positions.size:
        return 0.0
    return float(np.mean(binary[: positions[-1] + 1]))


def average_precision(relevances: Sequence[float]) -> float:
    """Mean of precision@k over the ranks k of relevant items (0 when none is relevant)."""
    binary = np.asarray(relevances) != 0
    if not binary.any():
        return 0.0
    hits = np.cumsum(binary)
    ranks = np.arange(1, binary.size + 1)
    return float(np.mean((hits / ranks)[binary]))


def reciprocal_rank(relevances: Sequence[float]) -> float:
    """1 / rank of the first relevant item (0 when none is relevant)."""
    positions = (np.asarray(relevances) != 0).nonzero()[0]
    return 1.0 / float(positions[0] + 1) if positions.size else 0.0


def dcg_at_k(relevances: Sequence[float], k: int, method: int = 0) -> float:
    """Discounted cumulative gain of the first ``k`` graded relevances.

    ``method=0``: weights 1, 1, 1/log2(3), …  (rank_metrics' default inside ``ndcg_at_k``);
    ``method=1``: weights 1/log2(2), 1/log2(3), …
    """
    gains = np.asarray(relevances, dtype=np.float64)[: max(int(k), 0)]
    if not gains.size:
        return 0.0
    if method == 0:
        return float(gains[0] + np.sum(gains[1:] / np.log2(np.arange(2, gains.size + 1))))
    if method == 1:
        return float(np.sum(gains / np.log2(np.arange(2, gains.size + 2))))
    raise ValueError(f"method must be 0 or 1, got {method}")


def ndcg_at_k(relevances: Sequence[float], k: int, method: int = 0) -> float:
    """DCG@k over the DCG@k of the whole list sorted by relevance (0 when the ideal DCG is 0)."""
    ideal = dcg_at_k(sorted(relevances, reverse=True), k, method)
    if not ideal:
        return 0.0
    return dcg_at_k(relevances, k, method) / ideal


# --------------------------------------------------------------------------- pytrec_eval


def pytrec_eval_means(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """One ``pytrec_eval`` call for a whole task: ``(mean over queries, per-query values)``.

    ``measures`` are trec_eval names such as ``("map", "ndcg", "recall_5")``; the mean is taken over
    the queries ``pytrec_eval`` returns (those present in both ``qrels`` and ``run``), as SciDocs,
    SciRepEval and MDCR do.
    """
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: {d: int(r) for d, r in docs.items()} for q, docs in qrels.items()},
        {_trec_base(m) for m in measures},
    )
    per_query = evaluator.evaluate({q: {d: float(s) for d, s in docs.items()} for q, docs in run.items()})
    means = {}
    for measure in measures:
        values = [scores[measure] for scores in per_query.values()]
        means[measure] = float(np.mean(values)) if values else 0.0
    return means, per_query


def _trec_base(measure: str) -> str:
    """``recall_5`` → ``recall`` (pytrec_eval takes the family and reports every cutoff)."""
    family, _, cutoff = measure.rpartition("_")
    return family if family and cutoff.isdigit() else measure
