"""The CUDA paths of the encoder and the trainer (bf16 autocast): run when a GPU is there, skipped otherwise.

CPU runs never take these paths (the trainer's autocast and the encoder's bf16 inference are CUDA-only), so
these tests are the only check that a Colab/GPU run of the ``paper`` profile computes what the CPU book does:
the same embeddings up to bf16 rounding, and a training run that lowers the loss in bf16 without NaNs.
Run them with ``pytest -m gpu`` on a machine with a GPU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sdr.encoders import Encoder
from sdr.train import TrainConfig, TripletObjective, evaluate_loss, train
from training_toy import TEXTS, TRIPLETS

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU (torch.cuda.is_available() is False): the bf16/CUDA paths need one"),
]



def _encoder(device: str, layers: int = 2) -> Encoder:
    return Encoder.load("minilm", num_layers=layers, max_length=32, device=device)


def test_cuda_embeddings_match_cpu_within_bf16_tolerance():
    texts = list(TEXTS.values())
    on_cpu = _encoder("cpu").encode_texts(texts, batch_size=4, progress=False)
    gpu = _encoder("cuda")
    assert gpu.device.type == "cuda" and next(gpu.model.parameters()).is_cuda
    on_gpu = gpu.encode_texts(texts, batch_size=4, progress=False)
    assert on_gpu.shape == on_cpu.shape and np.isfinite(on_gpu).all()
    cosine = (on_cpu * on_gpu).sum(1) / (np.linalg.norm(on_cpu, axis=1) * np.linalg.norm(on_gpu, axis=1))
    # bf16 keeps 8 bits of mantissa (relative error ~ 0.4 %): the same vectors, not bit-identical ones
    assert cosine.min() > 0.999, cosine
    assert np.abs(on_gpu - on_cpu).max() <= 0.02 * np.abs(on_cpu).max()
    # the ranking the evaluators use is unchanged: every text's nearest other text is the same
    def nearest(x):
        d = np.linalg.norm(x[:, None] - x[None], axis=2) + np.eye(len(x)) * 1e9
        return d.argmin(1)
    assert (nearest(on_gpu) == nearest(on_cpu)).all()


class _AutocastSpy(TripletObjective):
    """The triplet objective, recording whether each call ran under CUDA bf16 autocast."""

    def __init__(self, texts):
        super().__init__(texts)
        self.autocast: list[bool] = []

    def __call__(self, encoder, triplets):
        self.autocast.append(torch.is_autocast_enabled("cuda") and
                             torch.get_autocast_dtype("cuda") == torch.bfloat16)
        return super().__call__(encoder, triplets)


@pytest.mark.parametrize("bf16", [True, False], ids=["bf16", "float32"])
def test_training_on_cuda_lowers_the_loss_and_stays_finite(bf16, tmp_path):
    encoder = _encoder("cuda")
    objective = _AutocastSpy(TEXTS)
    before = evaluate_loss(encoder, TRIPLETS, objective)
    objective.autocast.clear()
    config = TrainConfig(epochs=4, batch_size=2, accumulation_steps=1, learning_rate=1e-3, warmup_steps=1,
                         seed=0, bf16=bf16, progress=False)
    result = train(encoder, TRIPLETS, objective, config, output_dir=tmp_path / "model")
    assert objective.autocast and all(flag == bf16 for flag in objective.autocast)  # bf16 only when asked
    assert result.steps == 12 and np.isfinite(result.history["loss"]).all()
    # master weights stay float32 on the GPU (autocast casts per op, never the parameters)
    assert all(p.is_cuda and p.dtype == torch.float32 for p in encoder.model.parameters())
    after = evaluate_loss(encoder, TRIPLETS, objective)
    assert math.isfinite(after) and after < before - 0.1, (before, after)
    # the saved model loads on the CPU and embeds like the trained GPU model (up to bf16 rounding)
    reloaded = Encoder.load(str(result.model_dir), device="cpu")
    texts = list(TEXTS.values())
    cpu_vectors = reloaded.encode_texts(texts, progress=False)
    gpu_vectors = encoder.encode_texts(texts, progress=False)
    cosine = (cpu_vectors * gpu_vectors).sum(1) / (
        np.linalg.norm(cpu_vectors, axis=1) * np.linalg.norm(gpu_vectors, axis=1))
    assert cosine.min() > 0.999, cosine


def test_same_seed_bf16_runs_agree_on_cuda(tmp_path):
    """Two bf16 runs with one seed end with the same loss curve up to GPU non-determinism (not bit-equal)."""
    histories = []
    for run in range(2):
        encoder = _encoder("cuda", layers=1)
        config = TrainConfig(epochs=1, batch_size=2, accumulation_steps=1, learning_rate=1e-3, warmup_steps=1,
                             seed=0, bf16=True, progress=False)
        histories.append(train(encoder, TRIPLETS, TripletObjective(TEXTS), config).history["loss"].to_numpy())
    np.testing.assert_allclose(histories[0], histories[1], rtol=0.05, atol=1e-3)


@pytest.mark.parametrize("bf16", [True, False], ids=["bf16", "float32"])
def test_packed_cuda_forward_matches_the_padded_one(bf16):
    """The padding-free path (variable-length attention on a jagged tensor) is on by default on CUDA; it
    gives the padded forward's embeddings and gradients up to bf16 rounding (float32: summation order)."""
    texts = list(TEXTS.values())
    padded, packed = _encoder("cuda"), _encoder("cuda")
    padded.packed = False
    assert packed.packing and not padded.packing
    padded.eval(), packed.eval()
    outputs = []
    for encoder in (padded, packed):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            out = encoder(texts)
        out.float().pow(2).sum().backward()
        outputs.append(out.float())
    tolerance = 3e-2 if bf16 else 1e-4
    torch.testing.assert_close(outputs[1], outputs[0], atol=tolerance * outputs[0].abs().max().item(), rtol=0)
    grad_padded = padded.model.encoder.layer[0].attention.self.query.weight.grad
    grad_packed = packed.model.encoder.layer[0].attention.self.query.weight.grad
    cosine = torch.nn.functional.cosine_similarity(grad_packed.flatten(), grad_padded.flatten(), dim=0)
    assert cosine > (0.99 if bf16 else 0.99999), cosine
