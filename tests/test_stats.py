"""sdr.stats: mean ± σ over seeds and the paired bootstrap interval over queries."""

from __future__ import annotations

import numpy as np
import pytest

from sdr import stats


def test_mean_sd():
    assert stats.mean_sd([1.0, 2.0, 3.0]) == (2.0, 1.0, 3)
    assert stats.mean_sd([4.0]) == (4.0, 0.0, 1)
    with pytest.raises(ValueError, match="finite"):
        stats.mean_sd([1.0, float("nan")])


def test_grouped_mean_is_the_mean_of_group_means():
    scores = {"a": 1.0, "b": 0.0, "c": 0.0, "d": 0.0}
    assert stats.grouped_mean(scores) == 0.25
    assert stats.grouped_mean(scores, [["a"], ["b", "c", "d"]]) == 0.5


def test_paired_bootstrap_sees_a_consistent_gain_and_not_noise():
    rng = np.random.default_rng(1)
    base = {f"q{i}": float(x) for i, x in enumerate(rng.uniform(0.2, 0.6, 60))}
    better = {k: v + 0.05 + float(rng.normal(0, 0.01)) for k, v in base.items()}  # +0.05 on every query
    result = stats.paired_bootstrap(better, base, seed=0)
    assert result["difference"] == pytest.approx(stats.grouped_mean(better) - stats.grouped_mean(base))
    assert result["excludes_zero"] and 0.04 < result["low"] < result["difference"] < result["high"] < 0.06
    noise = {k: v + float(rng.normal(0, 0.05)) for k, v in base.items()}  # no systematic difference
    assert not stats.paired_bootstrap(noise, base, seed=0)["excludes_zero"]
    # pairing matters: the same gain with unpaired-looking spread is still detected because deltas are paired
    assert stats.paired_bootstrap(better, base, groups=[list(base)[:30], list(base)[30:]])["excludes_zero"]


def test_paired_bootstrap_refuses_unpaired_queries():
    with pytest.raises(ValueError, match="1 queries lack a score"):
        stats.paired_bootstrap({"a": 1.0, "b": 0.0}, {"a": 1.0})
