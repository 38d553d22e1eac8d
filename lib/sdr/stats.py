"""Seeds and intervals: the spread of a score over training seeds, a paired bootstrap interval for the
difference between two systems scored on the same queries (queries only, or seeds then queries:
:func:`seed_query_bootstrap`), Student's t over seeds (the papers' view), Holm's correction for a family of
comparisons, and the sentence a page may say about a difference (:func:`verdict`; :func:`direction` for counting
above / below / within noise the same way).

The bootstrap resamples *queries* (with replacement, the same draw for both systems: paired), within each group
when the benchmark's score is a mean of group means (CSFCube's test score is the mean of its two folds' means, so
each fold is resampled on its own), and reports the percentile interval of the difference of the two scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

BOOTSTRAP_SAMPLES = 2000
LEVEL = 0.95


def mean_sd(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean, sample standard deviation (ddof 1; 0 for one value) and count."""
    values = np.asarray(list(values), dtype=float)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"mean_sd: expected finite values, got {values.tolist()}")
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0, int(values.size)


def grouped_mean(scores: Mapping[str, float], groups: Sequence[Sequence[str]] | None = None) -> float:
    """The benchmark's score from per-query values: the mean of the group means (or the plain mean)."""
    groups = groups or [list(scores)]
    return float(np.mean([np.mean([scores[k] for k in group]) for group in groups]))


def paired_bootstrap(a: Mapping[str, float], b: Mapping[str, float], groups: Sequence[Sequence[str]] | None = None,
                     samples: int = BOOTSTRAP_SAMPLES, level: float = LEVEL, seed: int = 0) -> dict:
    """Difference ``score(a) − score(b)`` and its paired bootstrap percentile interval over queries.

    ``a`` and ``b``: per-query values of the two systems on the same queries; ``groups``: the query keys whose
    means are averaged (default: all keys, one group). Returns ``{"difference", "low", "high", "level",
    "excludes_zero", "queries", "samples"}``.
    """
    groups = [list(g) for g in (groups or [sorted(set(a) | set(b))])]
    keys = [k for g in groups for k in g]
    missing = sorted({k for k in keys if k not in a or k not in b})
    if missing:
        raise ValueError(f"paired_bootstrap: {len(missing)} queries lack a score in one of the systems, e.g. "
                         f"{missing[:5]}")
    if not 0 < level < 1 or samples < 100:
        raise ValueError(f"paired_bootstrap: level must be in (0, 1) and samples ≥ 100, got {level}, {samples}")
    rng = np.random.default_rng(seed)
    differences = np.zeros(samples)
    for group in groups:
        delta = np.array([a[k] - b[k] for k in group])
        draws = rng.integers(0, len(group), size=(samples, len(group)))
        differences += delta[draws].mean(axis=1)
    differences /= len(groups)
    observed = grouped_mean(a, groups) - grouped_mean(b, groups)
    low, high = np.quantile(differences, [(1 - level) / 2, 1 - (1 - level) / 2])
    return {"difference": float(observed), "low": float(low), "high": float(high), "level": level,
            "excludes_zero": bool(low > 0 or high < 0), "queries": len(keys), "samples": samples}


# ---------------------------------------------------------------------------------------------- seeds and queries
def seed_query_bootstrap(a_seeds: Sequence[Mapping[str, float]], b_seeds: Sequence[Mapping[str, float]],
                         groups: Sequence[Sequence[str]] | None = None, samples: int = BOOTSTRAP_SAMPLES,
                         level: float = LEVEL, seed: int = 0, b_trained: bool = False) -> dict:
    """Difference ``score(a) − score(b)`` with a two-stage bootstrap interval: each replicate draws the training
    seeds of each system with replacement (a system trained several times varies with its seed), then the queries
    with replacement within each group, the same queries for both systems (paired); a system's score is the mean
    of its drawn seeds' per-query values on the drawn queries, averaged within groups as the benchmark does.

    ``a_seeds`` / ``b_seeds``: one per-query mapping per training seed (one mapping for a system that nothing
    trained, such as the untrained encoder: it has no seed noise; ``b_trained`` says whether b was trained). With
    one seed of a trained system the interval resamples queries only for it: it is conditional on that one
    trained model (``conditional_on_one_model``).

    Returns :func:`paired_bootstrap`'s keys plus ``seeds_a``, ``seeds_b``, ``p_value`` (two-sided, from the
    replicates: twice the smaller share on either side of zero, at least 1 / samples) and
    ``conditional_on_one_model``.
    """
    a_seeds, b_seeds = list(a_seeds), list(b_seeds)
    if not a_seeds or not b_seeds:
        raise ValueError("seed_query_bootstrap: each system needs at least one seed's per-query scores")
    groups = [list(g) for g in (groups or [sorted(set().union(*a_seeds, *b_seeds))])]
    keys = [k for g in groups for k in g]
    for name, runs in (("a", a_seeds), ("b", b_seeds)):
        for number, scores in enumerate(runs):
            missing = [k for k in keys if k not in scores]
            if missing:
                raise ValueError(f"seed_query_bootstrap: system {name}, seed {number} lacks {len(missing)} queries, "
                                 f"e.g. {missing[:5]}")
    if not 0 < level < 1 or samples < 100:
        raise ValueError(f"seed_query_bootstrap: level must be in (0, 1) and samples ≥ 100, got {level}, {samples}")
    a = np.array([[scores[k] for k in keys] for scores in a_seeds])  # seeds × queries
    b = np.array([[scores[k] for k in keys] for scores in b_seeds])
    rng = np.random.default_rng(seed)
    seeds_a = rng.integers(0, len(a), size=(samples, len(a)))
    seeds_b = rng.integers(0, len(b), size=(samples, len(b)))
    a_mean = a[seeds_a].mean(axis=1)  # samples × queries: each replicate's seed-averaged per-query scores
    b_mean = b[seeds_b].mean(axis=1)
    differences = np.zeros(samples)
    start = 0
    for group in groups:
        columns = np.arange(start, start + len(group))
        start += len(group)
        draws = columns[rng.integers(0, len(group), size=(samples, len(group)))]
        rows = np.arange(samples)[:, None]
        differences += (a_mean[rows, draws] - b_mean[rows, draws]).mean(axis=1)
    differences /= len(groups)
    observed = grouped_mean(dict(zip(keys, a.mean(axis=0))), groups) - grouped_mean(dict(zip(keys, b.mean(axis=0))),
                                                                             groups)
    low, high = np.quantile(differences, [(1 - level) / 2, 1 - (1 - level) / 2])
    p_value = max(2 * min(float(np.mean(differences <= 0)), float(np.mean(differences >= 0))), 1 / samples)
    return {"difference": float(observed), "low": float(low), "high": float(high), "level": level,
            "excludes_zero": bool(low > 0 or high < 0), "queries": len(keys), "samples": samples,
            "seeds_a": len(a), "seeds_b": len(b), "p_value": min(p_value, 1.0),
            "conditional_on_one_model": len(a) == 1 or (b_trained and len(b) == 1)}


def seed_t_interval(values: Sequence[float], reference: float, level: float = LEVEL) -> dict:
    """The papers' own view of a trained system: the mean over training seeds of its score minus ``reference``,
    with Student's t interval over the seeds (queries fixed). Needs two seeds or more."""
    from scipy import stats as scipy_stats

    values = np.asarray(list(values), dtype=float)
    if values.size < 2:
        raise ValueError("seed_t_interval: needs at least two seeds")
    mean, sd = float(values.mean()), float(values.std(ddof=1))
    half = float(scipy_stats.t.ppf(1 - (1 - level) / 2, values.size - 1)) * sd / np.sqrt(values.size)
    return {"difference": mean - reference, "low": mean - reference - half, "high": mean - reference + half,
            "level": level, "seeds": int(values.size)}


def holm(p_values: Mapping[str, float]) -> dict[str, float]:
    """Holm's step-down adjustment of a family of p-values (family-wise error controlled at the chosen level):
    sorted ascending, the i-th (from 0) is multiplied by (m − i), made monotone, capped at 1."""
    items = sorted(p_values.items(), key=lambda item: item[1])
    adjusted, running = {}, 0.0
    for rank, (name, value) in enumerate(items):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"holm: p-value of {name!r} is {value}, expected in [0, 1]")
        running = max(running, min(1.0, (len(items) - rank) * value))
        adjusted[name] = running
    return adjusted


def direction(result: Mapping, adjusted_p: float | None = None, alpha: float = 1 - LEVEL, min_items: int = 0) -> str:
    """``"above"``, ``"below"`` or ``"within noise"``: the side of 0 the interval (``result`` as
    :func:`paired_bootstrap` gives it) lies on, "within noise" when it includes 0, when the adjusted p-value is not
    below ``alpha``, or when fewer than ``min_items`` items were resampled (too few for a percentile interval)."""
    low, high, difference = result["low"], result["high"], result["difference"]
    enough = result.get("queries", min_items) >= min_items
    if enough and (low > 0 or high < 0) and (adjusted_p is None or adjusted_p < alpha):
        return "above" if difference > 0 else "below"
    return "within noise"


def verdict(system: str, reference: str, result: Mapping, adjusted_p: float | None = None, alpha: float = 1 - LEVEL,
            unit: str = "", resampled: str | None = None, min_items: int = 0) -> str:
    """One sentence that ranks two systems, generated from the interval (and, within a family of comparisons,
    the Holm-adjusted p-value): "above"/"below" only when the interval excludes 0 and the adjusted p-value is below
    ``alpha`` (:func:`direction`); otherwise the difference is "within noise". It says what the interval resamples:
    ``resampled`` when given (e.g. "SciRepEval's 12 tasks, one trained model"), else the seed-and-query bootstrap's
    reading. With fewer than ``min_items`` resampled items the sentence says so and ranks nothing."""
    low, high, difference = result["low"], result["high"], result["difference"]
    interval = f"{difference:+.2f}{unit} [{low:+.2f}, {high:+.2f}]"
    what = resampled if resampled is not None else (
        "queries only: conditional on one trained model" if result.get("conditional_on_one_model")
        else "training seeds and queries")
    adjusted = f", Holm-adjusted p = {adjusted_p:.3f}" if adjusted_p is not None else ""
    side = direction(result, adjusted_p, alpha, min_items)
    if result.get("queries", min_items) < min_items:
        return (f"{system} and {reference} are within noise of each other as far as this run can tell: {interval} "
                f"({what}{adjusted}; only {result['queries']} items, too few for a percentile interval to rank them).")
    if side != "within noise":
        return f"{system} is {side} {reference}: {interval} ({what}{adjusted})."
    return f"{system} and {reference} are within noise of each other: {interval} ({what}{adjusted})."
