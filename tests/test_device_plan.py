"""The device plan: which attention kernel and precision the encoder and the trainer use, chosen from the GPU's
compute capability (:func:`sdr.encoders.device_plan`), checked on CPU with the CUDA queries faked.

The training test runs the real trainer on CPU under the plan a faked T4 (sm75) gets — padded chunks, fp16
autocast, a gradient scaler — so the fp16 + scaler path, its checkpoint and its resume are exercised here,
with the same call a chapter makes.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import sdr.packed
import sdr.train
from sdr.encoders import Encoder, device_plan
from sdr.train import StopTraining, TripletObjective, train
from training_toy import TEXTS, TRIPLETS
from training_toy import toy_config as _config

GPUS = {  # name, compute capability
    "h100": ("NVIDIA H100 80GB HBM3", (9, 0)),
    "a100": ("NVIDIA A100-SXM4-40GB", (8, 0)),
    "t4": ("Tesla T4", (7, 5)),
    "v100": ("Tesla V100-SXM2-16GB", (7, 0)),
}


@pytest.fixture()
def fake_gpu(monkeypatch):
    """``fake_gpu("t4")``: torch answers the device queries the plan makes as that GPU would."""

    def install(kind: str, flash_built: bool = True):
        name, capability = GPUS[kind]
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
        monkeypatch.setattr(torch.backends.cuda, "is_flash_attention_available", lambda: flash_built)
        return name

    return install


@pytest.mark.parametrize("kind", ["h100", "a100"])
def test_sm80_and_newer_get_packed_flash_attention_in_bf16(fake_gpu, tiny_encoder, kind):
    name = fake_gpu(kind)
    plan = device_plan(torch.device("cuda"), tiny_encoder.model)
    assert (plan.packed, plan.attention, plan.precision, plan.grad_scaler) == (True, "flash", "bf16", False)
    assert plan.autocast_dtype == torch.bfloat16 and plan.overridden == ()
    line = plan.describe()
    assert name in line and "FlashAttention" in line and "bf16 autocast" in line and "scaler" not in line


@pytest.mark.parametrize("kind", ["t4", "v100"])
def test_older_gpus_get_padded_sdpa_in_fp16_with_a_gradient_scaler(fake_gpu, tiny_encoder, kind):
    name = fake_gpu(kind)
    plan = device_plan(torch.device("cuda"), tiny_encoder.model)
    assert (plan.packed, plan.attention, plan.precision, plan.grad_scaler) == (False, "padded", "fp16", True)
    assert plan.autocast_dtype == torch.float16
    assert plan.hf_attention == tiny_encoder.model.config._attn_implementation == "sdpa"
    line = plan.describe()
    assert name in line and "FlashAttention" in line.split("(chosen")[1]  # says why it is not used
    assert "padded chunks, Hugging Face 'sdpa' attention, fp16 autocast + gradient scaler" in line
    assert f"sm{GPUS[kind][1][0]}{GPUS[kind][1][1]}" in line


def test_overrides_and_what_they_refuse(fake_gpu, tiny_encoder):
    model = tiny_encoder.model
    fake_gpu("t4")
    forced = device_plan(torch.device("cuda"), model, packed=True)  # packed on a T4: nested SDPA, no flash
    assert (forced.packed, forced.attention, forced.precision) == (True, "nested", "fp16")
    assert forced.overridden == ("packed",) and "set: packed" in forced.describe()
    assert device_plan(torch.device("cuda"), model, precision="fp32").grad_scaler is False
    with pytest.raises(ValueError, match=r"precision='bf16' needs a GPU of compute capability 8.0.*Tesla T4 is 7.5"):
        device_plan(torch.device("cuda"), model, precision="bf16")
    fake_gpu("h100")
    fp32 = device_plan(torch.device("cuda"), model, precision="fp32")  # FlashAttention needs half precision
    assert (fp32.packed, fp32.attention, fp32.precision) == (True, "nested", "fp32")
    padded = device_plan(torch.device("cuda"), model, packed=False)
    assert (padded.packed, padded.attention, padded.precision) == (False, "padded", "bf16")
    fp16 = device_plan(torch.device("cuda"), model, precision="fp16")
    assert (fp16.attention, fp16.grad_scaler) == ("flash", True)
    fake_gpu("h100", flash_built=False)  # a torch build without FlashAttention: packed, through SDPA
    assert device_plan(torch.device("cuda"), model).attention == "nested"
    with pytest.raises(ValueError, match="precision must be one of"):
        device_plan(torch.device("cuda"), model, precision="half")
    with pytest.raises(ValueError, match="packed must be True, False or 'auto'"):
        device_plan(torch.device("cuda"), model, packed="yes")


def test_cpu_plan_and_encoder_overrides(tiny_encoder):
    plan = device_plan("cpu", tiny_encoder.model)
    assert (plan.packed, plan.attention, plan.precision, plan.grad_scaler, plan.capability) == \
        (False, "padded", "fp32", False, None)
    assert plan.describe() == "CPU: padded chunks, Hugging Face 'sdpa' attention, float32 (chosen for the device)"
    assert tiny_encoder.plan == plan and not tiny_encoder.packing
    encoder = Encoder.load("minilm", num_layers=1, max_length=32, device="cpu", packed=True, precision="bf16")
    assert (encoder.plan.attention, encoder.plan.precision, encoder.plan.overridden) == \
        ("nested", "bf16", ("packed", "precision"))
    with pytest.raises(ValueError, match="precision must be one of"):
        Encoder.load("minilm", num_layers=1, max_length=32, device="cpu", precision="float16")
    record = plan.record()  # plain values: a checkpoint keeps it and loads it with weights_only=True
    assert record["description"] == plan.describe() and record["capability"] is None


def test_the_trainer_records_the_plan_and_runs_bf16_encoding_autocast_from_it(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    result = train(encoder, TRIPLETS, TripletObjective(TEXTS), _config(epochs=1))
    assert result.device_plan == encoder.plan.record() and len(result.device_plans) == 1
    assert result.device_plan["precision"] == "fp32"


class _Spy(TripletObjective):
    """The triplet objective, recording the autocast dtype of each call (None: no autocast)."""

    def __init__(self, texts):
        super().__init__(texts)
        self.dtypes: list = []

    def __call__(self, encoder, triplets):
        enabled = torch.is_autocast_enabled("cpu")
        self.dtypes.append(torch.get_autocast_dtype("cpu") if enabled else None)
        return super().__call__(encoder, triplets)


def test_a_faked_t4_trains_padded_in_fp16_with_a_scaler_and_resumes_exactly(fake_gpu, fresh_tiny_encoder,
                                                                          monkeypatch, tmp_path):
    """The plan a T4 gets, run on CPU (CPU autocast has fp16, and GradScaler a CPU implementation): the
    trainer takes the padded path (never sdr.packed), autocasts to fp16, scales the loss, checkpoints the
    scaler and resumes to the uninterrupted run's weights. The chapter-level call is unchanged."""
    fake_gpu("t4")
    t4 = device_plan(torch.device("cuda"), fresh_tiny_encoder().model)
    monkeypatch.undo()  # back to the real (CPU) torch; the encoder runs the T4's plan on the CPU
    plan = dataclasses.replace(t4, device="cpu")
    monkeypatch.setattr(Encoder, "plan", property(lambda self: plan))

    def no_packed_path(*args, **kwargs):
        raise AssertionError("the T4 plan must not run sdr.packed (FlashAttention needs sm80+)")

    monkeypatch.setattr(sdr.packed, "_attention", no_packed_path)
    monkeypatch.setattr("sdr.encoders.pool_packed_stream", no_packed_path)
    scalers = []

    class RecordingScaler(torch.amp.GradScaler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.calls = {"scale": 0, "unscale_": 0, "step": 0, "update": 0}
            scalers.append(self)

        def scale(self, outputs):
            self.calls["scale"] += 1
            return super().scale(outputs)

        def unscale_(self, optimizer):
            self.calls["unscale_"] += 1
            return super().unscale_(optimizer)

        def step(self, optimizer, *args, **kwargs):
            self.calls["step"] += 1
            return super().step(optimizer, *args, **kwargs)

        def update(self, new_scale=None):
            self.calls["update"] += 1
            return super().update(new_scale)

    monkeypatch.setattr(sdr.train.torch.amp, "GradScaler", RecordingScaler)

    reference, objective = fresh_tiny_encoder(), _Spy(TEXTS)
    initial = {n: p.detach().clone() for n, p in reference.named_parameters()}
    reference_result = train(reference, TRIPLETS, objective, _config())
    assert objective.dtypes == [torch.float16] * 6  # every call under fp16 autocast
    scaler = scalers[-1]
    assert scaler.is_enabled() and scaler.calls == {"scale": 6, "unscale_": 6, "step": 6, "update": 6}
    assert reference_result.device_plan["precision"] == "fp16" and reference_result.device_plan["grad_scaler"]
    assert reference_result.device_plan["attention"] == "padded"
    assert "Tesla T4 (sm75): padded chunks" in reference_result.device_plan["description"]
    assert np.isfinite(reference_result.history["loss"]).all()
    # the scaler let updates through (a loss scale that overflowed every step would leave the weights alone)
    assert any(not torch.equal(initial[n], p) for n, p in reference.named_parameters())
    assert all(p.dtype == torch.float32 for p in reference.parameters())  # master weights stay float32

    def kill_at_step_5(row):
        if row["step"] == 5:
            raise StopTraining

    with pytest.raises(StopTraining):
        train(fresh_tiny_encoder(), TRIPLETS, TripletObjective(TEXTS), _config(), output_dir=tmp_path,
              callback=kill_at_step_5)
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert checkpoint["step"] == 4 and checkpoint["scaler"]["scale"] > 0
    resumed = fresh_tiny_encoder()
    resumed_result = train(resumed, TRIPLETS, TripletObjective(TEXTS), _config(), output_dir=tmp_path, resume=True)
    assert resumed_result.resumed_from_step == 4
    assert resumed_result.history["loss"].tolist() == reference_result.history["loss"].tolist()
    different = [n for n, p in resumed.named_parameters() if not torch.equal(p, dict(reference.named_parameters())[n])]
    assert not different, different[:5]
    assert [plan["precision"] for plan in resumed_result.device_plans] == ["fp16", "fp16"]  # both parts


@pytest.mark.parametrize("kind, compiled, chunk", [("h100", True, 65536), ("a100", True, 65536), ("t4", False, 16384)])
def test_the_packed_flash_path_compiles_in_large_chunks_by_default(fake_gpu, tiny_encoder, kind, compiled, chunk):
    """Measured on an H200 (benchmarks/results/train_gpu_nvidia-h200.txt): the packed FlashAttention path ran
    51 % faster compiled in 64K-token chunks than eager in 16K ones, and replayed as CUDA graphs faster again
    (…_graphs.txt), so that is its default; the padded paths and the CPU keep eager 16K chunks (CPU numbers
    unchanged)."""
    fake_gpu(kind)
    plan = device_plan(torch.device("cuda"), tiny_encoder.model)
    assert (plan.compiled, plan.chunk_tokens) == (compiled, chunk)
    assert ("torch.compile" in plan.describe()) is compiled
    assert plan.record()["compiled"] is compiled
    # CUDA graphs on the compiled path (benchmarks/results/train_gpu_nvidia-h200_graphs.txt)
    assert plan.compile_mode == ("reduce-overhead" if compiled else None)
    assert ("CUDA graphs" in plan.describe()) is compiled and plan.record()["compile_mode"] == plan.compile_mode


def test_the_cpu_keeps_eager_chunks_of_16k_tokens(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    assert not encoder.compiling and encoder.plan.chunk_tokens == 16384
    encoder.compile_packed = True
    assert encoder.compiling  # an explicit setting wins over the plan
    seen = []

    def record(row):
        seen.append(encoder.chunk_tokens)

    train(encoder, TRIPLETS[:4], TripletObjective(TEXTS), _config(epochs=1), callback=record)
    assert seen and set(seen) == {16384}  # TrainConfig(chunk_tokens=None): the plan's
