"""sdr.plan: the plan a paper chapter prints before training (steps and estimated GPU time)."""

from __future__ import annotations

import pytest

from sdr import plan
from sdr.datasets import ChapterData


def test_measured_throughput_is_the_median_of_the_committed_runs():
    import re

    raw = (plan.PAPER_TABLES.parents[1] / "benchmarks" / "results" / "train_gpu_nvidia-h200.txt").read_text()
    section = raw.split("# bench_new-compiled_1.txt", 1)[1]
    runs = [float(x) for x in re.findall(r"run \d, no repeats, sdr.train \[compiled64k\].*?: ([\d.]+) triplets/s", raw)]
    assert sorted(runs) == sorted(plan.MEASURED_RUNS_TRIPLETS_PER_S) and "193 tokens per text (mean)" in section
    assert plan.MEASURED_TRIPLETS_PER_S == pytest.approx(952.8)  # the median of 952.6, 952.8, 957.0
    assert plan.MEASURED_TOKENS_PER_S == pytest.approx(952.8 / 32 * 96 * 193)


def test_estimate_by_hand():
    # 64,000 triplets, 2 epochs, batch 32: 4,000 steps; 64,000 × 2 × 3 texts × 198 tokens on the H200
    estimate = plan.training_estimate(64_000, 2, 32, 3, 198, "NVIDIA H200")
    assert estimate["steps"] == 4_000
    assert estimate["hours"] == pytest.approx(64_000 * 2 * 3 * 198 / (952.8 / 32 * 96 * 193) / 3600)
    assert "measured" in estimate["how"] and "not measured" not in estimate["how"]
    t4 = plan.training_estimate(64_000, 2, 32, 3, 198, "Tesla T4")
    assert t4["hours"] == pytest.approx(estimate["hours"] * 989 / 65)
    assert "extrapolated" in t4["how"] and "not measured" in t4["how"]
    assert plan.training_estimate(33, 1, 32, 3, 100, "NVIDIA A100-SXM4-40GB")["steps"] == 2  # a partial last batch
    with pytest.raises(ValueError, match="no peak throughput known for 'Mystery GPU'"):
        plan.training_estimate(10, 1, 2, 3, 100, "Mystery GPU")
    with pytest.raises(ValueError, match="must be positive"):
        plan.training_estimate(0, 1, 2, 3, 100, "Tesla T4")


def test_print_plan_lists_inputs_and_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    data = ChapterData("benchmarks", "real", use_real_data=False, workdir=tmp_path)

    def replica(folder):
        (folder / "test.jsonl").write_text("x" * 2048)
        return folder

    data.input("csabstruct", replica=replica)
    estimates = plan.print_plan(data, [dict(name="toy run", examples=320, epochs=1, effective_batch=32,
                                            texts_per_example=3, tokens_per_text=100)], device_name="CPU")
    out = capsys.readouterr().out
    assert "Plan of benchmarks at profile real:" in out and "csabstruct" in out and "2.0 KB" in out
    assert "toy run" in out and "10 steps of 32" in out and out.count("GPU h on") == 2  # H100 and T4 on a CPU
    assert [e["device"] for e in estimates] == [plan.MEASURED_DEVICE, "Tesla T4"]


def test_readme_table_covers_every_training_chapter():
    table = plan.readme_table()
    for chapter in ("specter", "scincl", "sciaspect", "flew", "cosaemb", "scitoricsbert"):
        assert f"| {chapter} |" in table
    assert "684,100 × 2" in table and "2,282,967 × 2" in table and "80,012 × 5" in table
