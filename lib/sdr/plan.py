"""What a ``paper`` run will do, printed before it trains: data sets and their sizes, training examples, optimizer
steps, and the estimated GPU time on the detected device.

The time comes from the trainer's GPU measurements (``benchmarks/results/train_gpu_nvidia-h100-80gb-hbm3*.txt``:
BERT-base size, bf16, packed, eager, effective batch 32, 198 tokens a text, 70 of the 96 texts of a step computed:
the median of four runs' triplets/s, never the best), turned into *computed tokens per second* and scaled (1) to the run's texts per example
and tokens per text, and (2) to another GPU by the ratio of its dense tensor-core peak to the H100's. Only the H100
figure is measured; every other device's is an extrapolation and is labelled so. Estimates count every text of
every example (no deduplication within a step), so they are upper bounds for triplet objectives.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path

MEASURED_DEVICE = "NVIDIA H100 80GB HBM3"
MEASURED_RUNS_TRIPLETS_PER_S = (595.5, 520.0, 571.4, 649.7)  # the four 198-token runs of the two raw files
MEASURED_TRIPLETS_PER_S = float(sorted(MEASURED_RUNS_TRIPLETS_PER_S)[1] + sorted(MEASURED_RUNS_TRIPLETS_PER_S)[2]) / 2
MEASURED_TEXTS_COMPUTED_PER_STEP = 70
MEASURED_BATCH = 32
MEASURED_TOKENS_PER_TEXT = 198
MEASURED_TOKENS_PER_S = (MEASURED_TRIPLETS_PER_S / MEASURED_BATCH * MEASURED_TEXTS_COMPUTED_PER_STEP
                         * MEASURED_TOKENS_PER_TEXT)
"""Computed tokens per second of BERT-base training (forward + backward) on the measured H100 (≈ 281 K)."""

PEAK_TFLOPS = {  # dense tensor-core peak in the precision the trainer uses there (bf16 on sm80+, fp16 before)
    "H100": 989.0, "H200": 989.0, "A100": 312.0, "L4": 121.0, "A10G": 70.0, "A10": 125.0, "L40S": 362.0,
    "RTX 4090": 165.0, "RTX 3090": 71.0, "V100": 125.0, "T4": 65.0, "P100": 21.0,
}
"""Datasheet peaks (NVIDIA), used only to scale the H100 measurement; the key is matched in the device name."""

BERT_BASE_MATMUL_PARAMETERS = 85e6  # the planner scales other model sizes by their matmul parameters


def peak_for(device_name: str) -> tuple[str, float] | None:
    for key in sorted(PEAK_TFLOPS, key=len, reverse=True):
        if key.lower() in device_name.lower():
            return key, PEAK_TFLOPS[key]
    return None


def tokens_per_second(device_name: str, model_parameters: float = BERT_BASE_MATMUL_PARAMETERS) -> tuple[float, str]:
    """Estimated computed training tokens per second on ``device_name`` and how the figure was obtained."""
    scale = BERT_BASE_MATMUL_PARAMETERS / model_parameters
    if MEASURED_DEVICE.lower() in device_name.lower():
        return MEASURED_TOKENS_PER_S * scale, "measured on this device (H100, benchmarks/results)"
    peak = peak_for(device_name)
    if peak is None:
        raise ValueError(f"no peak throughput known for {device_name!r}; known: {', '.join(PEAK_TFLOPS)}")
    key, tflops = peak
    return (MEASURED_TOKENS_PER_S * tflops / PEAK_TFLOPS["H100"] * scale,
            f"extrapolated from the H100 measurement by peak tensor throughput ({key} {tflops:g} vs H100 989 "
            f"TFLOP/s); not measured")


def training_estimate(examples: int, epochs: int, effective_batch: int, texts_per_example: float,
                      tokens_per_text: float, device_name: str,
                      model_parameters: float = BERT_BASE_MATMUL_PARAMETERS) -> dict:
    """Optimizer steps and GPU hours of one training run."""
    if examples <= 0 or epochs <= 0 or effective_batch <= 0:
        raise ValueError(f"examples, epochs and batch must be positive, got {examples}, {epochs}, {effective_batch}")
    steps = epochs * math.ceil(examples / effective_batch)
    rate, how = tokens_per_second(device_name, model_parameters)
    tokens = examples * epochs * texts_per_example * tokens_per_text
    return {"examples": examples, "epochs": epochs, "steps": steps, "tokens": tokens,
            "hours": tokens / rate / 3600, "device": device_name, "how": how}


def folder_size(path: str | Path) -> int:
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def human_bytes(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError


def detected_device() -> str:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return os.environ.get("SDR_PLAN_DEVICE", "CPU")


def print_plan(data, runs: Iterable[dict], device_name: str | None = None) -> list[dict]:
    """Print a ``paper`` chapter's plan: its inputs with sizes, then one line per training run (``runs``: dicts with
    ``name, examples, epochs, effective_batch, texts_per_example, tokens_per_text``), with steps and estimated
    hours on the detected GPU (or, on a CPU, on an H100 and a T4 for reference). Returns the estimates."""
    device_name = device_name or detected_device()
    print(f"Plan of {data.chapter} at profile {data.profile}:")
    for item in data.inputs.values():
        size = human_bytes(folder_size(item.path)) if Path(item.path).exists() else "?"
        print(f"  data  {item.name:<28} {item.kind:<8} {size:>9}  {item.source}")
    devices = [device_name] if device_name != "CPU" else [MEASURED_DEVICE, "Tesla T4"]
    estimates = []
    for run in runs:
        for device in devices:
            estimate = training_estimate(run["examples"], run["epochs"], run["effective_batch"],
                                         run["texts_per_example"], run["tokens_per_text"], device)
            estimates.append({"run": run["name"], **estimate})
            print(f"  train {run['name']:<28} {run['examples']:,} examples × {run['epochs']} epochs = "
                  f"{estimate['steps']:,} steps of {run['effective_batch']}: ≈ {estimate['hours']:.1f} GPU h on "
                  f"{device} ({estimate['how']})")
    if device_name == "CPU":
        print("  (no GPU detected: the estimates are for an H100 and a T4; a CPU is far slower)")
    return estimates


PAPER_TABLES = Path(__file__).resolve().parents[2] / "data" / "paper_tables"
UNITS = {"one": 1, "thousand": 1_000, "million": 1_000_000}


def _paper_count(table: str, model: str, column: str) -> int:
    import pandas as pd

    rows = pd.read_csv(PAPER_TABLES / f"{table}.csv", comment="#")
    row = rows[rows["model"] == model]
    if row.empty:
        raise ValueError(f"{table}.csv: no row {model!r}")
    value = float(row[column].iloc[0])
    return int(round(value * UNITS.get(str(row["unit"].iloc[0]), 1) if "unit" in row else value))


def paper_runs() -> dict[str, list[dict]]:
    """The paper-scale training run(s) of every chapter: sizes from ``data/paper_tables`` (each with its table
    reference there); epochs and effective batches are the papers' settings (the ``paper`` profile's values);
    texts per example and tokens per text are the book's assumptions (stated in the README)."""
    specter = _paper_count("training_sizes", "SPECTER training triplets", "examples")
    cosaemb = specter + sum(_paper_count("cosaemb_counts", m, "triplets")
                            for m in ("Local Context (Eq. 2)", "Global Context (Eq. 3)"))
    flew = _paper_count("training_sizes", "facet triplets", "examples")
    return {
        # SciNCL §4.2: 684 K triplets, same count as SPECTER; 2 epochs; 8 × 4 = 32
        "specter": [dict(name="SPECTER", examples=specter, epochs=2, effective_batch=32, texts_per_example=3,
                         tokens_per_text=250)],
        "scincl": [dict(name="SciNCL", examples=specter, epochs=2, effective_batch=32, texts_per_example=3,
                        tokens_per_text=250)],
        # thesis §5.3: query + positive + 10 hard + 3 easy negatives; 2 epochs; batch 8
        "sciaspect": [dict(name="SciAspect", examples=_paper_count("training_sizes", "training anchor documents",
                                                                    "examples"),
                           epochs=2, effective_batch=8, texts_per_example=15, tokens_per_text=250)],
        # FLeW §4.1: three facet encoders, batch 10, 2 epochs; facet texts are a third of an abstract
        "flew": [dict(name=f"FLeW {facet} encoder", examples=flew, epochs=2, effective_batch=10, texts_per_example=3,
                      tokens_per_text=120) for facet in ("background", "method", "result")],
        # CoSaEmb Table 3: local + global + inter-document triplets; 2 epochs, batch 32; section texts are long
        "cosaemb": [dict(name="CoSaEmb", examples=cosaemb, epochs=2, effective_batch=32, texts_per_example=3,
                         tokens_per_text=400)],
        # SciToricsBERT §4.1: CFS3 train split, batch 64, 5 epochs, one sentence per example (one loss, one seed)
        "scitoricsbert": [dict(name="SciToricsBERT, one loss and seed",
                               examples=_paper_count("cfs3_counts", "CFS3 split", "train"), epochs=5,
                               effective_batch=64, texts_per_example=1, tokens_per_text=40)],
    }


def readme_table(devices=(MEASURED_DEVICE, "Tesla T4")) -> str:
    """Markdown: per chapter, the paper-scale training runs, their steps, and estimated GPU hours per device."""
    header = "| chapter | run | examples × epochs | steps | " + " | ".join(f"≈ GPU h, {d}" for d in devices) + " |"
    lines = [header, "|" + "---|" * (4 + len(devices))]
    for chapter, runs in paper_runs().items():
        for run in runs:
            cells = [training_estimate(run["examples"], run["epochs"], run["effective_batch"],
                                       run["texts_per_example"], run["tokens_per_text"], d) for d in devices]
            lines.append(f"| {chapter} | {run['name']} | {run['examples']:,} × {run['epochs']} | {cells[0]['steps']:,} | "
                         + " | ".join(f"{c['hours']:.1f}" for c in cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(readme_table())
