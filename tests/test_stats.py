"""sdr.stats: mean ± σ over seeds and the paired bootstrap interval over queries."""

from __future__ import annotations

import numpy as np
import pytest

from sdr import stats
from sdr.stats import holm, paired_bootstrap, seed_query_bootstrap, seed_t_interval, verdict


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


# ------------------------------------------------------------------------------------ seeds and queries (issue 33)
def _planted(shifts, noise=0.02, queries=60, seed=3):
    """A reference system's per-query scores and one trained system's per seed, each seed shifted by its value."""
    rng = np.random.default_rng(seed)
    keys = [f"q{i}" for i in range(queries)]
    reference = {k: float(rng.uniform(0.2, 0.6)) for k in keys}
    seeds = [{k: reference[k] + shift + float(rng.normal(0, noise)) for k in keys} for shift in shifts]
    return reference, seeds, [keys[:queries // 2], keys[queries // 2:]]


def test_seeds_that_disagree_give_an_interval_containing_zero_where_the_query_bootstrap_did_not():
    """The issue's case: one seed below the reference, the others above. Averaging the seeds before resampling
    queries (the old interval) hides the seeds' spread and excludes 0; the two-stage bootstrap does not."""
    reference, seeds, groups = _planted([0.03, -0.012, 0.0])
    averaged = {k: float(np.mean([s[k] for s in seeds])) for k in reference}
    assert paired_bootstrap(averaged, reference, groups)["excludes_zero"]
    result = seed_query_bootstrap(seeds, [reference], groups)
    assert result["low"] < 0 < result["high"] and not result["excludes_zero"]
    assert result["seeds_a"] == 3 and not result["conditional_on_one_model"] and result["p_value"] > 0.05


def test_seeds_that_agree_on_a_gain_still_exclude_zero():
    reference, seeds, groups = _planted([0.03, 0.031, 0.029])
    result = seed_query_bootstrap(seeds, [reference], groups)
    assert result["excludes_zero"] and result["low"] > 0 and result["p_value"] < 0.01
    assert abs(result["difference"] - 0.03) < 0.01


def test_one_seed_is_conditional_on_one_model_and_equals_the_query_bootstrap():
    reference, seeds, groups = _planted([0.02])
    two_stage = seed_query_bootstrap(seeds, [reference], groups, seed=5)
    assert two_stage["conditional_on_one_model"]
    assert two_stage["difference"] == pytest.approx(paired_bootstrap(seeds[0], reference, groups)["difference"])
    assert seed_query_bootstrap(seeds, [reference, reference], groups, b_trained=True)["conditional_on_one_model"]


def test_holm_adjusts_by_rank_and_stays_monotone():
    assert holm({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx({"a": 0.03, "c": 0.06, "b": 0.06})
    assert holm({"x": 0.5, "y": 0.6}) == pytest.approx({"x": 1.0, "y": 1.0})
    with pytest.raises(ValueError, match="p-value of 'z'"):
        holm({"z": 1.5})


def test_seed_t_interval_is_students_over_the_seeds():
    result = seed_t_interval([46.78, 43.84, 42.89], 43.99)
    assert result["difference"] == pytest.approx(44.503333 - 43.99, abs=1e-5)
    half = 4.302653 * np.std([46.78, 43.84, 42.89], ddof=1) / np.sqrt(3)
    assert (result["low"], result["high"]) == pytest.approx((result["difference"] - half, result["difference"] + half))


def test_a_verdict_says_within_noise_unless_the_interval_and_holm_support_it():
    reference, seeds, groups = _planted([0.03, -0.012, 0.0])
    noisy = seed_query_bootstrap(seeds, [reference], groups)
    assert "within noise" in verdict("SciNCL", "the untrained encoder", noisy)
    _, agreeing, _ = _planted([0.03, 0.031, 0.029])
    clear = seed_query_bootstrap(agreeing, [reference], groups)
    assert verdict("SciNCL", "the untrained encoder", clear).startswith("SciNCL is above the untrained encoder")
    # an interval that excludes 0 but does not survive Holm's correction is within noise too
    assert "within noise" in verdict("SciNCL", "the untrained encoder", clear, adjusted_p=0.2)
