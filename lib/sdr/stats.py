"""Seeds and intervals: the spread of a score over training seeds, and a paired bootstrap interval for the
difference between two systems scored on the same queries.

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
