"""The CUDA paths of the encoder and the trainer: run when a GPU is there, skipped otherwise.

CPU runs never take these paths (mixed precision, FlashAttention and the GPU's device plan are CUDA-only), so
these tests are the only check that a Colab/GPU run computes what the CPU book does: the same embeddings up
to bf16/fp16 rounding, training that lowers the loss without NaNs on every path the device plan can choose
there, and the packed (padding-free) forward equal to the padded Hugging Face one at BERT-base size and 512
tokens — in training mode, with dropout off (the same numbers, every parameter's gradient) and on (the same
loss distribution over seeds) — in bf16 and fp16, eager and under ``torch.compile``.

Run them with ``pytest -m gpu tests/test_gpu.py`` on a machine with a GPU. The tolerances for bf16/fp16 are
set from the formats' precision (bf16 keeps 8 bits of mantissa, fp16 11); they were written without a GPU
at hand and are to be confirmed on the first run that has one. The hot path is checked for device syncs
under CUDA's sync debug mode, its prepared inputs for page-locked memory, and the data-parallel path with NCCL
in a process group of one GPU.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from sdr.encoders import Encoder, device_plan
from sdr.losses import TripletMarginLoss
from sdr.packed import pack, packed_hidden_states
from sdr.train import TrainConfig, TripletObjective, evaluate_loss, train
from training_toy import TEXTS, TRIPLETS

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU (torch.cuda.is_available() is False): the CUDA paths need one"),
]

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}


def _modern() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)


def _skip_unsupported(precision: str) -> None:
    if precision == "bf16" and not _modern():
        pytest.skip(f"bf16 needs sm80+; this GPU is sm{''.join(map(str, torch.cuda.get_device_capability()))}")


def _encoder(device: str, layers: int = 2, **options) -> Encoder:
    return Encoder.load("minilm", num_layers=layers, max_length=32, device=device, **options)


# ------------------------------------------------------------------------------------------------ basics
def test_cuda_embeddings_match_cpu_within_mixed_precision_tolerance():
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

    def nearest(x):  # the ranking the evaluators use is unchanged: every text's nearest other text
        d = np.linalg.norm(x[:, None] - x[None], axis=2) + np.eye(len(x)) * 1e9
        return d.argmin(1)
    assert (nearest(on_gpu) == nearest(on_cpu)).all()


def test_the_plan_matches_the_device():
    plan = _encoder("cuda").plan
    capability = torch.cuda.get_device_capability()
    assert plan.capability == tuple(capability) and plan.device_name == torch.cuda.get_device_name()
    if _modern():
        assert (plan.packed, plan.precision, plan.grad_scaler) == (True, "bf16", False)
        assert plan.attention == ("flash" if torch.backends.cuda.is_flash_attention_available() else "nested")
    else:
        assert (plan.packed, plan.attention, plan.precision, plan.grad_scaler) == (False, "padded", "fp16", True)


class _AutocastSpy(TripletObjective):
    """The triplet objective, recording the CUDA autocast dtype of each call (None: autocast off)."""

    def __init__(self, texts):
        super().__init__(texts)
        self.dtypes: list = []

    def __call__(self, encoder, triplets):
        enabled = torch.is_autocast_enabled("cuda")
        self.dtypes.append(torch.get_autocast_dtype("cuda") if enabled else None)
        return super().__call__(encoder, triplets)


@pytest.mark.parametrize("mixed", [True, False], ids=["mixed", "float32"])
def test_training_on_cuda_lowers_the_loss_and_stays_finite(mixed, tmp_path):
    encoder = _encoder("cuda")
    expected = encoder.plan.autocast_dtype if mixed else None
    objective = _AutocastSpy(TEXTS)
    before = evaluate_loss(encoder, TRIPLETS, objective)
    objective.dtypes.clear()
    config = TrainConfig(epochs=4, batch_size=2, accumulation_steps=1, learning_rate=1e-3, warmup_steps=1,
                         seed=0, bf16=mixed, progress=False)
    result = train(encoder, TRIPLETS, objective, config, output_dir=tmp_path / "model")
    assert objective.dtypes and all(dtype == expected for dtype in objective.dtypes)
    assert result.steps == 12 and np.isfinite(result.history["loss"]).all()
    assert result.device_plan["precision"] == ("fp32" if not mixed else encoder.plan.precision)
    # master weights stay float32 on the GPU (autocast casts per op, never the parameters)
    assert all(p.is_cuda and p.dtype == torch.float32 for p in encoder.model.parameters())
    after = evaluate_loss(encoder, TRIPLETS, objective)
    assert math.isfinite(after) and after < before - 0.1, (before, after)
    # the saved model loads on the CPU and embeds like the trained GPU model (up to rounding)
    reloaded = Encoder.load(str(result.model_dir), device="cpu")
    texts = list(TEXTS.values())
    cpu_vectors = reloaded.encode_texts(texts, progress=False)
    gpu_vectors = encoder.encode_texts(texts, progress=False)
    cosine = (cpu_vectors * gpu_vectors).sum(1) / (
        np.linalg.norm(cpu_vectors, axis=1) * np.linalg.norm(gpu_vectors, axis=1))
    assert cosine.min() > 0.999, cosine
    assert torch.load(tmp_path / "model" / "checkpoint.pt", weights_only=True)["finished"]


def test_same_seed_mixed_precision_runs_agree_on_cuda():
    """Two runs with one seed end with the same loss curve up to GPU non-determinism (not bit-equal)."""
    histories = []
    for _ in range(2):
        encoder = _encoder("cuda", layers=1)
        config = TrainConfig(epochs=1, batch_size=2, accumulation_steps=1, learning_rate=1e-3, warmup_steps=1,
                             seed=0, progress=False)
        histories.append(train(encoder, TRIPLETS, TripletObjective(TEXTS), config).history["loss"].to_numpy())
    np.testing.assert_allclose(histories[0], histories[1], rtol=0.05, atol=1e-3)


# ------------------------------------------------------------------------------ every path the plan offers
PATHS = {  # name: Encoder overrides
    "auto": {},
    "padded": {"packed": False},
    "packed": {"packed": True},  # FlashAttention on sm80+ in half precision, nested SDPA elsewhere
    "fp16": {"precision": "fp16"},  # with a gradient scaler
    "padded-fp16": {"packed": False, "precision": "fp16"},
    "bf16": {"precision": "bf16"},
    "packed-fp32": {"packed": True, "precision": "fp32"},
}


@pytest.mark.parametrize("path", list(PATHS))
def test_every_device_path_trains(path, tmp_path):
    options = PATHS[path]
    _skip_unsupported(options.get("precision", "auto"))
    encoder = _encoder("cuda", **options)
    plan = encoder.plan
    objective = TripletObjective(TEXTS)
    before = evaluate_loss(encoder, TRIPLETS, objective)
    config = TrainConfig(epochs=4, batch_size=2, accumulation_steps=1, learning_rate=1e-3, warmup_steps=1,
                         seed=0, progress=False, checkpoint_every=5)
    result = train(encoder, TRIPLETS, objective, config, output_dir=tmp_path)
    assert result.device_plan == plan.record()
    assert result.device_plan["grad_scaler"] == (plan.precision == "fp16")
    assert np.isfinite(result.history["loss"]).all()
    after = evaluate_loss(encoder, TRIPLETS, objective)
    assert after < before - 0.1, (path, plan.describe(), before, after)
    vectors = encoder.encode_texts(list(TEXTS.values()), progress=False)
    assert np.isfinite(vectors).all()


def test_fp16_training_resumes_with_its_scaler_state(tmp_path):
    from sdr.train import StopTraining

    config = TrainConfig(epochs=2, batch_size=2, accumulation_steps=1, learning_rate=1e-3, warmup_steps=1,
                         seed=0, progress=False, checkpoint_every=2)

    def kill_at_step_5(row):
        if row["step"] == 5:
            raise StopTraining

    with pytest.raises(StopTraining):
        train(_encoder("cuda", precision="fp16"), TRIPLETS, TripletObjective(TEXTS), config, output_dir=tmp_path,
              callback=kill_at_step_5)
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert checkpoint["scaler"]["scale"] > 0 and checkpoint["step"] == 4
    result = train(_encoder("cuda", precision="fp16"), TRIPLETS, TripletObjective(TEXTS), config,
                   output_dir=tmp_path, resume=True)
    assert result.resumed_from_step == 4 and result.steps == 6 and np.isfinite(result.history["loss"]).all()


# --------------------------------------------------------------- packed vs padded at BERT-base size, 512 tokens
def _bert_base(device: str = "cuda", layers: int = 12) -> Encoder:
    """A BERT-base-sized encoder (12 layers, hidden 768, random initialization) on the GPU, max_length 512;
    ``layers`` fewer for the compiled cases (compilation time grows with the layers it unrolls)."""
    from transformers import BertConfig, BertModel

    tokenizer = Encoder.load("minilm", num_layers=1, device="cpu").tokenizer
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=len(tokenizer), num_hidden_layers=layers))
    return Encoder(model, tokenizer, pooling="cls", max_length=512, device=device)


def _long_texts() -> list[str]:
    """Texts of very different lengths, the longest truncated at 512 tokens."""
    words = " ".join(TEXTS.values()).split()
    return [" ".join((words * 20)[:count]) for count in (700, 333, 150, 61, 9)]


def _without_dropout(encoder: Encoder) -> Encoder:
    for module in encoder.model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return encoder


#: layers of the compiled cases: BERT-base's width and 512 tokens, 4 of its 12 layers (each compilation of 12
#: took about a minute; the fused kernels are the same in every layer)
COMPILED_LAYERS = 4


def _pair(precision: str, compiled: bool, device: str = "cuda") -> tuple[Encoder, Encoder]:
    padded = _bert_base(device, layers=COMPILED_LAYERS if compiled else 12)
    packed = copy.deepcopy(padded)
    padded.packed, packed.packed = False, True
    padded.precision = packed.precision = precision
    packed.compile_packed = compiled
    return padded, packed


def _forward_backward(encoder: Encoder, texts: list[str], scale: float) -> tuple[torch.Tensor, dict]:
    encoder.model.zero_grad(set_to_none=True)
    with encoder.plan.autocast(encoder.device.type):
        out = encoder(texts)
    weights = torch.linspace(-1, 1, out.shape[1], device=out.device)
    (scale * (out.float() * weights).sum()).backward()  # scaled: fp16 gradients would underflow otherwise
    return out.detach().float(), {n: p.grad.float() / scale for n, p in encoder.model.named_parameters()
                                  if p.grad is not None}


#: (embedding tolerance relative to the largest entry, gradient tolerance relative to each tensor's norm)
TOLERANCES = {"fp32": (1e-4, 1e-3), "fp16": (1e-2, 3e-2), "bf16": (4e-2, 8e-2)}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_packed_equals_padded_in_training_mode_without_dropout(precision, compiled):
    """Training mode, dropout off: the packed forward is the padded one (embeddings and every parameter's
    gradient) at BERT-base size, the longest text at 512 tokens."""
    _skip_unsupported(precision)
    padded, packed = _pair(precision, compiled)
    texts = _long_texts()
    assert max(len(row) for row in padded.token_ids(texts)) == 512
    results = []
    for encoder in (padded, packed):
        _without_dropout(encoder).train()
        results.append(_forward_backward(encoder, texts, scale=1.0 if precision == "fp32" else 1024.0))
    assert not padded.plan.packed and packed.plan.packed
    (out_padded, grads_padded), (out_packed, grads_packed) = results
    embedding_tolerance, gradient_tolerance = TOLERANCES[precision]
    torch.testing.assert_close(out_packed, out_padded, rtol=0,
                               atol=embedding_tolerance * out_padded.abs().max().item())
    layers = padded.model.config.num_hidden_layers
    assert grads_packed.keys() == grads_padded.keys() and len(grads_padded) > 16 * layers  # 16 a layer + embeddings
    for name, gradient in grads_padded.items():
        if name.endswith("attention.self.key.bias"):  # zero in exact arithmetic: rounding noise only
            continue
        error = (grads_packed[name] - gradient).norm() / gradient.norm().clamp(min=1e-12)
        assert error < gradient_tolerance, (name, error.item())


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_packed_and_padded_draw_the_same_loss_distribution_with_dropout(precision, compiled):
    """Training mode with BERT's dropout: the two paths draw different masks, so one seed gives different
    numbers, but over seeds the loss has the same mean and spread."""
    _skip_unsupported(precision)
    padded, packed = _pair(precision, compiled)
    texts = _long_texts()
    losses = {"padded": [], "packed": []}
    margin = TripletMarginLoss(margin=1.0)
    for seed in range(24):
        for name, encoder in (("padded", padded), ("packed", packed)):
            encoder.train()
            torch.manual_seed(seed)
            with torch.no_grad(), encoder.plan.autocast(encoder.device.type):
                out = encoder(texts).float()
            losses[name].append(margin(out[[0, 1]], out[[1, 2]], out[[3, 4]]).item()
                                + out.pow(2).mean().item())
    one, two = np.asarray(losses["padded"]), np.asarray(losses["packed"])
    assert one.std() > 0 and two.std() > 0  # dropout really acts
    standard_error = math.sqrt(one.var(ddof=1) / len(one) + two.var(ddof=1) / len(two))
    assert abs(one.mean() - two.mean()) < 4 * standard_error, (one.mean(), two.mean(), standard_error)
    assert 0.5 < two.std(ddof=1) / one.std(ddof=1) < 2.0, (one.std(), two.std())


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_fused_qkv_on_the_gpu_path_is_the_three_projections(precision):
    """The fused Q/K/V product hands strided views to FlashAttention (or nested SDPA on older GPUs): the same
    numbers as three products, forward and gradients, both within the precision's rounding of the float32
    forward. The loss weights each hidden dimension differently (a sum over them of a LayerNorm's output
    has an exactly zero gradient, which left only rounding noise to compare, and 0/0 = NaN in fp16), and is
    scaled for fp16 so no gradient underflows; every compared gradient is checked finite and non-zero."""
    _skip_unsupported(precision)
    encoder = _without_dropout(_bert_base())
    encoder.train()
    ids = encoder.token_ids(_long_texts())
    lengths = [len(row) for row in ids]
    flat, positions, offsets = pack(ids, encoder.device)
    attention = "flash" if encoder.plan.attention == "flash" else "nested"
    weights = torch.linspace(-1, 1, encoder.dimension, device=encoder.device)
    scale = 1024.0 if precision == "fp16" else 1.0
    results = {}
    for name, fuse, dtype in (("fused", True, DTYPES[precision]), ("separate", False, DTYPES[precision]),
                              ("float32", False, None)):
        encoder.model.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            hidden = packed_hidden_states(encoder.model, flat, positions, offsets, (min(lengths), max(lengths)),
                                          attention if dtype is not None else "nested", fuse_qkv=fuse)
        (scale * (hidden.float() * weights).mean(0).sum()).backward()
        results[name] = (hidden.detach().float(),
                         {n: p.grad.float() / scale for n, p in encoder.model.named_parameters() if p.grad is not None})
    (fused, fused_grads), (separate, separate_grads), (exact, exact_grads) = (results[k] for k in results)
    embedding_tolerance, gradient_tolerance = TOLERANCES[precision]
    torch.testing.assert_close(fused, separate, rtol=0, atol=1e-2 * separate.abs().max().item())
    torch.testing.assert_close(fused, exact, rtol=0, atol=embedding_tolerance * exact.abs().max().item())
    compared = [f"encoder.layer.{layer}.attention.self.{projection}.weight"
                for layer in (0, 5, 11) for projection in ("query", "key", "value")] + ["embeddings.word_embeddings.weight"]
    for name in compared:
        for grads in (fused_grads, separate_grads, exact_grads):
            assert torch.isfinite(grads[name]).all(), name
        assert exact_grads[name].norm() > 1e-6, (name, "the loss must reach it")
        error = (fused_grads[name] - separate_grads[name]).norm() / separate_grads[name].norm()
        assert error < 2e-2, (name, error.item())
        error = (fused_grads[name] - exact_grads[name]).norm() / exact_grads[name].norm()
        assert error < gradient_tolerance, (name, "against float32", error.item())


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_compiled_and_eager_packed_training_agree(mode):
    """Compiled (``mode=None``) and replayed as CUDA graphs (the default on sm80+), training follows the eager
    run's losses."""
    histories = []
    for compiled in (False, True):
        encoder = _without_dropout(_encoder("cuda", packed=True))
        encoder.compile_packed, encoder.compile_mode = compiled, mode
        config = TrainConfig(epochs=2, batch_size=2, accumulation_steps=1, learning_rate=1e-3, warmup_steps=1,
                             seed=0, progress=False)
        histories.append(train(encoder, TRIPLETS, TripletObjective(TEXTS), config).history["loss"].to_numpy())
    np.testing.assert_allclose(histories[1], histories[0], rtol=0.05, atol=2e-3)


def test_cuda_graphs_encode_several_chunks_of_one_shape_like_eager():
    """Encoding in several chunks that share a bucketed shape replays one CUDA graph per chunk; each chunk's
    embeddings are pooled before the next replay overwrites the graph's output, so they match eager."""
    texts = [f"{text} {i}" for i in range(12) for text in TEXTS.values()]
    eager, graphs = _encoder("cuda", packed=True), _encoder("cuda", packed=True)
    eager.compile_packed = False
    graphs.compile_packed, graphs.compile_mode = True, "reduce-overhead"
    assert graphs.graph_mode == "reduce-overhead"
    for encoder in (eager, graphs):
        encoder.chunk_tokens = 64  # many chunks a call
        encoder.eval()
    for _ in range(3):  # warm-up, recording, replays
        got = graphs.encode_texts(texts, batch_size=len(texts), progress=False)
    expected = eager.encode_texts(texts, batch_size=len(texts), progress=False)
    cosine = (got * expected).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(expected, axis=1))
    assert cosine.min() > 0.999, cosine  # bf16 both; an overwritten chunk would be another text's vector
    # distinct texts keep distinct vectors (a replay overwriting an earlier chunk would repeat one)
    assert len({tuple(np.round(row, 3)) for row in got}) == len(texts)


def test_device_plan_of_the_first_gpu_is_the_encoders():
    encoder = _encoder("cuda")
    assert device_plan("cuda", encoder.model) == encoder.plan


# ------------------------------------------------------------------------------ the hot path on a real GPU
def test_prepared_inputs_are_page_locked_so_their_copies_do_not_block():
    encoder = _encoder("cuda")
    texts = list(TEXTS.values()) + list(TEXTS.values())[:3]  # repeats: a row index too
    prepared = encoder.prepare(texts)
    tensors = [t for _, chunk, _ in prepared.chunks.chunks for t in chunk]
    assert tensors and all(t.is_pinned() for t in tensors)
    assert prepared.rows is not None and prepared.rows.is_pinned()
    assert prepared.chunks.inverse is None or prepared.chunks.inverse.is_pinned()


def test_training_steps_make_no_device_sync_outside_the_batched_loss_reads():
    """CUDA's sync debug mode turns every synchronizing call (a blocking copy, ``.item()``, a read of a device
    value the host needs) into an error. It is on for every optimizer step after the first (warm-up, lazy
    initialization) in the default plan; the trainer's batched loss reads (:meth:`Trainer.read_losses`), which
    sync on purpose, run outside it."""
    from sdr.train import Trainer

    class Watched(Trainer):
        def step(self, epoch, group):
            if self.global_step >= 1:
                torch.cuda.set_sync_debug_mode("error")
            try:
                return super().step(epoch, group)
            finally:
                torch.cuda.set_sync_debug_mode("default")

    encoder = _encoder("cuda")
    config = TrainConfig(epochs=3, batch_size=2, accumulation_steps=1, learning_rate=1e-3, warmup_steps=1, seed=0,
                         progress=False)
    result = Watched(encoder, TRIPLETS, TripletObjective(TEXTS, per_example_margin=True), config).fit()
    assert result.steps == 9 and np.isfinite(result.history["loss"]).all()


def test_ddp_over_nccl_in_one_process_changes_nothing_and_reduces_on_the_gpu(monkeypatch):
    """The data-parallel path with NCCL, in a process group of one GPU: the step runs inside
    DistributedDataParallel, every all-reduce (gradient buckets, step loss) gets a CUDA tensor (NCCL takes no
    other), and the run matches one without a group up to GPU non-determinism."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    import sdr.train
    from sdr.train import Trainer

    config = TrainConfig(epochs=2, batch_size=2, accumulation_steps=1, learning_rate=1e-3, warmup_steps=1, seed=0,
                         progress=False)
    plain = train(_without_dropout(_encoder("cuda", layers=1)), TRIPLETS, TripletObjective(TEXTS), config)
    devices = []
    real_all_reduce = dist.all_reduce

    def recording(tensor, *args, **kwargs):
        devices.append(tensor.device.type)
        return real_all_reduce(tensor, *args, **kwargs)

    torch.cuda.set_device(0)
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        monkeypatch.setattr(dist, "all_reduce", recording)
        trainer = Trainer(_without_dropout(_encoder("cuda", layers=1)), TRIPLETS, TripletObjective(TEXTS), config)
        result = trainer.fit()
    finally:
        dist.destroy_process_group()
    assert isinstance(trainer.step_module, DistributedDataParallel) and sdr.train.in_process_group() is False
    assert devices and set(devices) == {"cuda"} and len(devices) > result.steps  # buckets and the loss
    np.testing.assert_allclose(result.history["loss"], plain.history["loss"], rtol=1e-3, atol=1e-4)
