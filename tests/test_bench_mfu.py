"""The GPU benchmark's MFU formula and inputs (benchmarks/bench_train_gpu.py), against hand-computed values."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_train_gpu import (device_peak, matmul_parameters, mfu, no_repeat_triplets,  # noqa: E402
                             step_texts, training_flops)


def _bert(**sizes):
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig(**sizes))


def test_matmul_parameters_leave_out_embeddings_and_the_pooler():
    # per layer: Q, K, V, O 4 × 8 × 8 = 256, feed-forward 8 × 16 + 16 × 8 = 256 → 512; 2 layers → 1024
    tiny = _bert(vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16)
    assert matmul_parameters(tiny) == 1024
    assert sum(p.numel() for p in tiny.parameters()) > 1024 + 50 * 8  # embeddings, pooler, biases excluded
    # BERT-base: 12 × (4 × 768² + 2 × 768 × 3072) = 84,934,656 of its 109.5 M parameters
    base = _bert(vocab_size=30522)
    assert matmul_parameters(base) == 84_934_656
    assert sum(p.numel() for p in base.parameters()) == 109_482_240


def test_training_flops_and_mfu_by_hand():
    # texts of 3 and 5 tokens: 6 × 1024 × 8 = 49,152; attention 12 × 2 layers × 8 hidden × (9 + 25) = 6,528
    flops = training_flops(1024, [3, 5], layers=2, hidden=8)
    assert flops == 55_680
    assert mfu(flops, seconds=2.0, peak_tflops=1e-6) == pytest.approx(0.02784)  # 27,840 of 1,000,000 FLOP/s
    # attention grows with the square of the length: one 512-token text costs more than two of 256
    assert training_flops(1024, [512], 2, 8) - training_flops(1024, [256, 256], 2, 8) == 12 * 2 * 8 * (512**2 - 2 * 256**2)


def test_device_peaks_match_the_most_specific_name():
    assert device_peak("NVIDIA H100 80GB HBM3") == (989.0, "bf16")
    assert device_peak("NVIDIA H100 PCIe") == (756.0, "bf16")
    assert device_peak("NVIDIA A100-SXM4-40GB") == (312.0, "bf16")  # not the A10's
    assert device_peak("NVIDIA L40S") == (362.0, "bf16") and device_peak("NVIDIA L4") == (121.0, "bf16")
    assert device_peak("Tesla T4") == (65.0, "fp16")  # no bf16 tensor cores: the fp16 peak
    assert device_peak("Some Future GPU") is None


def test_the_no_repeat_setting_has_no_repeated_text_within_a_step():
    pool = [f"text {i}" for i in range(200)]
    triplets, texts = no_repeat_triplets(64, pool, batch_size=32)  # 2 steps of 96 texts
    steps = step_texts(triplets, texts, batch_size=32)
    assert [len(step) for step in steps] == [96, 96]
    assert all(len(set(step)) == 96 for step in steps)


def test_the_device_check_script_parses_and_its_summary_pools_runs_over_processes(tmp_path):
    """benchmarks/device_check.sh is run once, on a GPU machine: a syntax error there costs the run. Its
    summary pools one-run processes per (library, variant): median, min–max and MFU at the median."""
    import json
    import subprocess

    from device_check_summary import read_records, summary

    root = Path(__file__).resolve().parents[1]
    assert subprocess.run(["bash", "-n", str(root / "benchmarks" / "device_check.sh")]).returncode == 0

    def record(label, speeds):
        name = "sdr.train [packed16k], packed, 16K-token chunks"
        return {"label": label, "library": f"sdr ({label})", "device": "device: H200", "peak": [989.0, "bf16"],
                "timed_triplets": 640, "steps": 20, "source": "CSAbstruct",
                "settings": {"no repeats": {"repeated": 0.0, "flops_ours": 989e12 * 0.25, "flops_all": 989e12 * 0.25}},
                "trainers": {name: {"kind": "ours", "key": "packed16k"}},
                "measured": {f"no repeats / {name}": speeds}, "memory_gib": {f"no repeats / {name}": 7.5}}

    for number, (label, speed) in enumerate([("baseline", 600.0), ("new", 800.0), ("baseline", 640.0),
                                             ("new", 700.0), ("baseline", 620.0), ("new", 900.0)]):
        (tmp_path / f"bench_{number}.txt").write_text("table\nBENCH_JSON " + json.dumps(record(label, [speed])) + "\n")
    text = summary(read_records(sorted(tmp_path.glob("bench_*.txt"))))
    # 640 triplets in 640 / 800 = 0.8 s at the new median: a quarter of a second of peak FLOPs → 31.2 % MFU
    assert "800.0 (700.0–900.0)     3   31.2%" in text and "620.0 (600.0–640.0)     3   24.2%" in text
    assert "new / baseline, packed16k: 1.29x" in text
