"""The `real` profile's gain margins of SPECTER and SciNCL (issue 30.5) follow from the seed spread committed in
benchmarks/results/real_margins.txt by the rule profiles.yml states, and every gain a check reads is stored."""

import math
import re
import statistics
from pathlib import Path

import pandas as pd
import pytest

from sdr import book
from sdr.book.chapter import ChapterCheckFailed
from sdr.book.profiles import chapter_parameters

RAW = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "real_margins.txt"


def _gains(chapter: str, check: str) -> list[float]:
    section = RAW.read_text().split("## invocation 6", 1)[1].split("## invocation 7", 1)[0]
    return [float(v) for v in re.findall(rf"^{chapter} seed \d .*'gain check {check}': (-?[\d.]+)", section, re.M)]


@pytest.mark.parametrize("chapter, check", [("specter", "SPECTER"), ("scincl", "SciNCL")])
def test_the_real_gain_margin_is_the_stated_rule_over_the_measured_seeds(chapter, check):
    gains = _gains(chapter, check)
    assert len(gains) == 3
    rule = min(min(gains) / 2, statistics.mean(gains) - 2 * statistics.stdev(gains))
    margin = chapter_parameters(chapter, "real")["min_gain"]
    assert margin == pytest.approx(math.floor(rule / 0.05) * 0.05)
    assert 0 < margin < min(gains)


def test_every_gain_a_check_reads_is_stored_applied_or_not(tmp_path, monkeypatch):
    from sdr.book.results import load_results

    monkeypatch.setenv("SDR_RESULTS", str(tmp_path))
    namespace = {"profile": "smoke", "use_real_data": False, "model_name": "minilm", "model_layers": 2,
                 "device": "auto", "seed": 0}
    run = book.ChapterRun("summary", namespace, loads_model=False)
    assert run.expect_gain("A", 1.5, 1.0)
    assert not run.expect_gain("B", 0.2, 1.0, applies=False, why_not="real data")
    with pytest.raises(ChapterCheckFailed, match="C: \\+0.50 over the untrained encoder, need more than 1"):
        run.expect_gain("C", 0.5, 1.0)
    run.save({"t": pd.DataFrame({"x": [1]})})
    checks = load_results("summary", "smoke")[0]["tables"]["gain checks"]
    assert list(checks.index) == ["A", "B", "C"]
    assert checks.loc["C", "gain"] == pytest.approx(0.5) and checks.loc["C", "margin"] == 1.0
    assert bool(checks.loc["A", "applied"]) and not bool(checks.loc["B", "applied"])
