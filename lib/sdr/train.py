"""One trainer for every chapter.

SPECTER and SciNCL train SciBERT with AdamW (lr 2e-5), an effective batch of 32 (batch 8 × 4 accumulation
steps), warm-up then linear decay, 2 epochs (Cohan et al. 2020 §4; Ostendorff et al. 2022 §4.3). The
thesis uses a cosine schedule with 100 warm-up steps (§4.4); SciNCL's code also offers the slanted-triangular
schedule (10 % warm-up). All three are options here.

What a method contributes is an *objective*: a callable ``objective(encoder, examples) -> loss`` that turns a
batch of sampled examples (triplets, contrastive groups, labelled sentences) into a scalar loss. The trainer
owns everything else: seeding, device, mixed precision on GPUs, gradient accumulation, clipping, the schedule,
a progress bar with the loss, a stop on a non-finite loss, checkpoints every N optimizer steps, ``resume=True``
that ends with the same weights as an uninterrupted run, and a saved sentence-transformers folder.

**Device.** How the encoder runs is its :class:`~sdr.encoders.DevicePlan` (:func:`device_plan`, chosen from
the GPU's compute capability, overridden by ``Encoder.packed`` / ``Encoder.precision``): bf16 autocast with
packed FlashAttention chunks on sm80+ GPUs, fp16 autocast with a gradient scaler (``torch.amp.GradScaler``)
and padded SDPA chunks on older ones (T4, V100), float32 on CPU. The plan of every run (and of each resumed
part) is recorded in ``TrainResult.device_plans`` and in the checkpoint.

**Several processes** (``torchrun``, :func:`init_distributed`): rank 0's weights are broadcast to every
process at the start, gradients and losses are summed on the parameters' device (NCCL accepts no CPU
tensor), and each rank's random state is saved in the checkpoint and restored on resume.

**No host sync on the hot path.** A step's loss stays on the device; the host reads the losses of several
steps at once (every :data:`READ_LOSSES_EVERY` steps, before each checkpoint and validation, at the end, and
after every step when a ``callback`` wants the row), and only then checks that they are finite. A non-finite
loss therefore stops training a few steps after it occurred, with the error naming the step where it did;
no checkpoint is written after that step (a checkpoint first reads every loss before it). The weights in
memory then hold the later steps' updates. The next step's texts are tokenized and packed on a worker thread
while the device runs this one. (These changes are exercised on CPU; their GPU speed is not yet measured.)

Checkpoints hold tensors and plain Python values only and load with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import math
import random
import shutil
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm.auto import tqdm

from sdr.encoders import DevicePlan, Encoder, device_plan  # noqa: F401  (device_plan: sdr.train's API too)
from sdr.losses import GeneralContrastiveLoss, TripletMarginLoss

SCHEDULES = ("linear", "cosine", "slanted_triangular", "constant")


@dataclass
class TrainConfig:
    epochs: int = 2
    batch_size: int = 8
    accumulation_steps: int = 4  # 8 × 4 = SPECTER's effective batch of 32
    learning_rate: float = 2e-5
    weight_decay: float = 0.01
    schedule: str = "linear"
    warmup_steps: int | None = None  # None: warmup_ratio of all optimizer steps
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    seed: int = 0
    # mixed precision on GPUs as the device plan chooses (bf16 on sm80+, fp16 + gradient scaler on older ones;
    # Encoder.precision overrides); False: float32. CPU runs stay float32 (and bit-reproducible) either way.
    bf16: bool = True
    checkpoint_every: int = 0  # optimizer steps; 0 = no intermediate checkpoints
    progress: bool = True
    bitfit: bool = False  # train only the encoder's bias terms (BitFit, Ben Zaken et al. 2022; SciNCL Table 2)
    # Each forward pass runs its distinct texts in length-sorted chunks of at most this many padded tokens,
    # each padded only to its own longest text (0: one chunk per call).
    chunk_tokens: int = 16384
    # Recompute each chunk's activations in the backward pass: memory of one chunk, not of the whole
    # optimizer step, for about a third more compute. Turn on when the effective batch does not fit.
    recompute_chunks: bool = False

    def __post_init__(self):
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        for name in ("epochs", "batch_size", "accumulation_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


@dataclass
class TrainResult:
    history: pd.DataFrame  # one row per optimizer step: epoch, step, loss, learning_rate
    model_dir: Path | None
    steps: int
    resumed_from_step: int
    validation: list[float] = field(default_factory=list)  # validate()'s score after each epoch
    best_epoch: int | None = None  # the epoch whose weights the encoder ends with (None: no validation)
    # Each out-of-memory retry: the step, and the chunking it continued with (see MIN_CHUNK_TOKENS).
    memory_adaptations: list[dict] = field(default_factory=list)
    # How the encoder ran (DevicePlan.record(): device, capability, precision, scaler, attention, description):
    # one entry per part of the run, so a run resumed on another machine lists both.
    device_plans: list[dict] = field(default_factory=list)

    @property
    def device_plan(self) -> dict | None:
        """The plan of the run's last part."""
        return self.device_plans[-1] if self.device_plans else None


#: TrainConfig fields that do not change what a run computes: a resumed run may differ in them.
NOT_IDENTITY = ("progress", "checkpoint_every", "recompute_chunks")


READ_LOSSES_EVERY = 8
"""Optimizer steps whose losses stay on the device before the host reads them (one transfer), and so the
most steps a non-finite loss can be noticed late."""


MIN_CHUNK_TOKENS = 512
"""The smallest chunk the out-of-memory fallback tries: below one 512-token text nothing is gained."""


def _shrink_chunks(encoder: Encoder) -> dict | None:
    """After an out-of-memory error: the next cheaper way to run the same step, applied to ``encoder``.

    First recompute chunk activations in the backward pass (memory of one chunk instead of the whole
    step), then halve the chunk down to :data:`MIN_CHUNK_TOKENS`. Neither changes the step's arithmetic:
    the loss still sees every embedding of the step, so the effective batch stays what the method asks
    for. Returns the new setting, or None when nothing smaller is left.
    """
    if not encoder.recompute_chunks:
        encoder.recompute_chunks = True
    elif encoder.chunk_tokens == 0 or encoder.chunk_tokens > MIN_CHUNK_TOKENS:
        current = encoder.chunk_tokens or TrainConfig.chunk_tokens
        encoder.chunk_tokens = max(MIN_CHUNK_TOKENS, current // 2)
    else:
        return None
    return {"chunk_tokens": encoder.chunk_tokens, "recompute_chunks": encoder.recompute_chunks}


def _atomic_save(state: Mapping, path: Path) -> None:
    """``torch.save`` to a temporary file, then rename: a kill mid-write leaves the previous file intact."""
    temporary = path.with_suffix(".tmp")
    torch.save(state, temporary)
    temporary.replace(path)


class StopTraining(Exception):
    """Raised by a callback to interrupt training (tests use it to simulate a killed run)."""


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def make_schedule(optimizer, schedule: str, total_steps: int, warmup_steps: int):
    """Learning-rate multiplier per optimizer step."""
    total_steps = max(total_steps, 1)

    def factor(step: int) -> float:
        if schedule == "constant":
            return 1.0
        if step < warmup_steps:
            return (step + 1) / max(warmup_steps, 1)
        progress = (step - warmup_steps) / max(total_steps - warmup_steps, 1)
        if schedule == "cosine":
            return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
        if schedule == "slanted_triangular":  # Howard & Ruder 2018: ratio 32 between peak and floor
            return max(1.0 - progress, 0.0) * (1 - 1 / 32) + 1 / 32
        return max(1.0 - progress, 0.0)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _batches(n_examples: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """The epoch's shuffled batches, a pure function of (seed, epoch) so a resumed run sees the same."""
    order = np.random.default_rng([seed, epoch]).permutation(n_examples)
    return [order[i:i + batch_size] for i in range(0, n_examples, batch_size)]


def _rng_state() -> dict:
    """This process's random state as tensors, lists and numbers (``torch.load(weights_only=True)`` reads
    them; NumPy's state as an array would need unpickling NumPy)."""
    version, python_state, gauss = random.getstate()
    name, keys, position, has_gauss, cached_gaussian = np.random.get_state()
    state = {"python": {"version": version, "state": list(python_state), "gauss": gauss},
             "numpy": {"name": name, "keys": keys.tolist(), "position": int(position),
                       "has_gauss": int(has_gauss), "cached_gaussian": float(cached_gaussian)},
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: Mapping) -> None:
    python, numpy = state["python"], state["numpy"]
    if isinstance(python, Mapping):
        random.setstate((python["version"], tuple(python["state"]), python["gauss"]))
        np.random.set_state((numpy["name"], np.asarray(numpy["keys"], dtype=np.uint32), numpy["position"],
                             numpy["has_gauss"], numpy["cached_gaussian"]))
    else:  # a checkpoint written before random states were stored as lists
        random.setstate(python)
        np.random.set_state(numpy)
    # torch's generators take their state as a CPU ByteTensor, whichever device the checkpoint was mapped to
    torch.set_rng_state(_cpu_bytes(state["torch"]))
    if "cuda" in state and torch.cuda.is_available():
        # each CUDA generator its own saved state; a machine with fewer GPUs than the one that saved restores
        # the generators it has (a process trains on one of them)
        saved = [_cpu_bytes(cuda_state) for cuda_state in state["cuda"]]
        for index, cuda_state in enumerate(saved[:torch.cuda.device_count()]):
            torch.cuda.set_rng_state(cuda_state, index)


def _cpu_bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().to(device="cpu", dtype=torch.uint8)


#: what NumPy arrays need to unpickle: checkpoints written before the random states became lists held one
_LEGACY_NUMPY_GLOBALS = [np.dtype, np.ndarray, *[getattr(np.dtypes, name) for name in ("UInt32DType",)
                                                 if hasattr(np, "dtypes")]]
try:
    from numpy._core.multiarray import _reconstruct
except ImportError:  # NumPy 1
    from numpy.core.multiarray import _reconstruct
_LEGACY_NUMPY_GLOBALS.append(_reconstruct)


def load_checkpoint(path: str | Path, map_location="cpu") -> dict:
    """A checkpoint or finished-run record, read with ``torch.load(weights_only=True)`` (no arbitrary
    unpickling); the NumPy-array reconstruction of older checkpoints is the one extra allowed. Read onto the
    CPU unless ``map_location`` says otherwise (:func:`restore_checkpoint` places a state for training)."""
    with torch.serialization.safe_globals(_LEGACY_NUMPY_GLOBALS):
        return torch.load(path, map_location=map_location, weights_only=True)


def restore_checkpoint(path: str | Path, device: str | torch.device) -> dict:
    """A training checkpoint placed for resuming on ``device``: the random states stay on the CPU, where
    ``torch.set_rng_state`` and ``torch.cuda.set_rng_state`` take them (a CUDA generator's state is a CPU
    ByteTensor too), the best epoch's copy stays on the CPU (where training keeps it), and every other tensor
    (weights, optimizer moments, the objective's parameters) goes to ``device``.

    Loading the whole file with ``map_location=device`` would move the saved random states onto the GPU,
    which ``torch.set_rng_state`` rejects ("RNG state must be a torch.ByteTensor"): every resume on CUDA
    failed that way."""
    state = load_checkpoint(path)
    device = torch.device(device)

    def place(value):
        if isinstance(value, torch.Tensor):
            return value.to(device)
        if isinstance(value, Mapping):
            return {key: place(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(place(item) for item in value)
        return value

    return {key: value if key in ("rng", "best") else place(value) for key, value in state.items()}


def _epoch_batches(n_examples: int, config: TrainConfig, batch_sampler: Callable | None,
                   epoch: int) -> list[np.ndarray]:
    """The epoch's micro-batches: the default shuffle, or ``batch_sampler(n_examples, seed, epoch)``."""
    if batch_sampler is None:
        return _batches(n_examples, config.batch_size, config.seed, epoch)
    batches = [np.asarray(batch, dtype=np.int64).reshape(-1)
               for batch in batch_sampler(n_examples, config.seed, epoch)]
    if not batches:
        raise ValueError(f"batch_sampler gave no batches for epoch {epoch} of {n_examples} examples")
    for number, batch in enumerate(batches):
        if batch.size == 0 or batch.min() < 0 or batch.max() >= n_examples:
            raise ValueError(f"batch_sampler: epoch {epoch}, batch {number} is {batch.tolist()[:10]}; "
                             f"expected a non-empty list of example indices in 0..{n_examples - 1}")
    return batches


def _trainable_parameters(encoder: Encoder, objective_module: nn.Module | None,
                          bitfit: bool) -> list[tuple[str, nn.Parameter]]:
    """(name, parameter) of everything the optimizer updates: the encoder's (only its biases with
    BitFit) and the objective's own parameters (projection heads, class weights), which BitFit keeps
    trainable since they start untrained."""
    named = [(f"encoder.{n}", p) for n, p in encoder.named_parameters()
             if p.requires_grad and (not bitfit or n.endswith("bias"))]
    if objective_module is not None:
        named += [(f"objective.{n}", p) for n, p in objective_module.named_parameters() if p.requires_grad]
    return named


def init_distributed() -> torch.device:
    """Join the process group ``torchrun`` describes in the environment (gloo on CPU, NCCL on CUDA) and
    return this process's device; :func:`train` then trains data-parallel over the group. A no-op
    returning the default device when the script was not started by torchrun."""
    import os

    import torch.distributed as dist

    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}") if cuda else torch.device("cpu")
    if "WORLD_SIZE" in os.environ and not dist.is_initialized():
        if cuda:
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if cuda else "gloo")
    return device


def _world() -> tuple[int, int]:
    """(rank, world size) of the process group, (0, 1) without one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _all_reduce_gradients(parameters: Sequence[nn.Parameter]) -> None:
    """Sum every parameter's gradient over the process group in one flat all-reduce, on the parameters'
    device. A parameter no rank gave a gradient keeps ``grad=None`` (so AdamW skips it, as in one process):
    which did is read back to the host, a small read skipped when this rank gave every parameter one."""
    import torch.distributed as dist

    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in parameters]
    local = [p.grad is not None for p in parameters]
    present = torch.tensor([float(flag) for flag in local], dtype=grads[0].dtype).to(grads[0].device)
    flat = torch.cat([g.reshape(-1) for g in grads] + [present])
    dist.all_reduce(flat)
    any_rank = local if all(local) else [value > 0 for value in flat[-len(parameters):].tolist()]
    offset = 0
    for parameter, grad, has_grad in zip(parameters, grads, any_rank):
        reduced = flat[offset:offset + grad.numel()].view_as(grad)
        offset += grad.numel()
        parameter.grad = reduced.clone() if has_grad else None


def _broadcast_from_rank0(modules: Sequence[nn.Module]) -> None:
    """Give every process rank 0's parameters and buffers (processes that built or loaded their weights
    differently, e.g. a randomly initialized head, would otherwise train different models)."""
    import torch.distributed as dist

    with torch.no_grad():
        for module in modules:
            for tensor in module.state_dict(keep_vars=True).values():
                dist.broadcast(tensor.detach(), src=0)


def _gather_rng_states(world: int) -> list[dict]:
    """Every rank's random state (rank order), so a checkpoint restores each process's own."""
    state = _rng_state()
    if world == 1:
        return [state]
    import torch.distributed as dist

    states: list = [None] * world
    dist.all_gather_object(states, state)
    return states


def _calls(group: list[np.ndarray], example_wise: bool, rank: int, world: int) -> list[np.ndarray]:
    """The objective calls of one optimizer step in this process.

    An example-wise objective (its loss is the mean of per-example terms, like the triplet loss) is called
    once on the whole step, so each distinct paper is encoded once per step and the encoder's
    length-sorted chunks span the step; the gradient is the same as over the micro-batches. Other
    objectives (in-batch negatives, PK losses) see exactly the sampled micro-batches. In data-parallel
    training each process takes every ``world``-th example (example-wise) or micro-batch (otherwise).
    """
    if example_wise:
        step = np.concatenate(group)
        calls = [step[rank::world]] if world > 1 else [step]
    else:
        calls = group[rank::world] if world > 1 else group
    return [batch for batch in calls if len(batch)]


def _cpu_copy(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: value.detach().to("cpu", copy=True) for key, value in state.items()}


def train(encoder: Encoder, examples: Sequence, objective: Callable, config: TrainConfig,
          output_dir: str | Path | None = None, resume: bool = False,
          callback: Callable[[dict], None] | None = None,
          batch_sampler: Callable[[int, int, int], Sequence[Sequence[int]]] | None = None,
          validate: Callable[[Encoder], float] | None = None) -> TrainResult:
    """Fit ``encoder`` on ``examples`` with ``objective``; see the module docstring.

    ``output_dir`` receives ``checkpoint.pt`` (every ``checkpoint_every`` optimizer steps, after each
    validation and at the end) and ``model/`` (a sentence-transformers folder, plus ``objective.pt`` with
    the objective's state when the objective is a ``torch.nn.Module``). With ``resume=True`` training
    continues from ``output_dir/checkpoint.pt`` when it exists. ``callback(row)`` is called after each
    optimizer step (it makes the host read every step's loss: one device sync a step).

    ``objective`` may be a ``torch.nn.Module`` with its own parameters (projection heads, class
    weights): it is moved to the encoder's device, optimized and clipped with the encoder, checkpointed
    and restored on resume. An objective with ``encoder_inputs(examples) -> texts`` (the texts its call
    embeds) gets the next step's texts tokenized and chunked on a worker thread.

    ``batch_sampler(n_examples, seed, epoch)`` returns the epoch's micro-batches (lists of example
    indices; a pure function of seed and epoch so a resumed run sees the same batches), e.g. a
    :class:`sdr.samplers.PKBatchSampler`; ``config.accumulation_steps`` of them make one optimizer step.
    Default: the examples shuffled by (seed, epoch) in batches of ``config.batch_size``.

    ``validate(encoder) -> float`` (higher is better) runs in eval mode after every epoch; training ends
    with the best epoch's weights (encoder and objective), and the result records every epoch's score
    (``validation``) and ``best_epoch``.

    In data-parallel training (``torchrun``) every process passes the same arguments (``output_dir``
    included, on a file system all of them see).
    """
    if len(examples) == 0:
        raise ValueError("no training examples: the sampler produced none (see its report)")
    output_dir = Path(output_dir) if output_dir is not None else None
    checkpoint_path = output_dir / "checkpoint.pt" if output_dir else None
    rank, world = _world()
    seed_everything(config.seed + rank)  # each process its own dropout masks; rank 0 draws one process's
    objective_module = objective if isinstance(objective, nn.Module) else None
    if objective_module is not None:
        objective_module.to(encoder.device)

    epoch_groups = []
    for epoch in range(config.epochs):
        batches = _epoch_batches(len(examples), config, batch_sampler, epoch)
        epoch_groups.append([batches[i:i + config.accumulation_steps]
                             for i in range(0, len(batches), config.accumulation_steps)])
    total_steps = sum(len(groups) for groups in epoch_groups)
    warmup = config.warmup_steps if config.warmup_steps is not None else int(config.warmup_ratio * total_steps)

    trainable = _trainable_parameters(encoder, objective_module, config.bitfit)
    if not trainable:
        raise ValueError("nothing to train: no parameter of the encoder or objective requires a gradient")
    no_decay = ("bias", "LayerNorm.weight", "layer_norm", "norm.weight")
    parameters = [
        {"params": [p for n, p in trainable if not any(k in n for k in no_decay)],
         "weight_decay": config.weight_decay},
        {"params": [p for n, p in trainable if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    parameters = [group for group in parameters if group["params"]]
    optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate, eps=1e-8,
                                  fused=encoder.device.type == "cuda" or None)
    scheduler = make_schedule(optimizer, config.schedule, total_steps, warmup)
    trained_parameters = [p for _, p in trainable]

    precision_before = encoder.precision
    if not config.bf16:
        encoder.precision = "fp32"
    try:
        plan = encoder.plan
    finally:
        encoder.precision = precision_before
    # fp16 needs its loss scaled so small gradients survive; disabled, the scaler passes everything through
    scaler = torch.amp.GradScaler(encoder.device.type, enabled=plan.grad_scaler)
    history: list[dict] = []
    validation: list[float] = []
    device_plans: list[dict] = []
    best: dict | None = None  # {"epoch", "score", "model", "objective"} of the best validated epoch
    step = 0

    if resume and checkpoint_path is not None and checkpoint_path.exists():
        state = restore_checkpoint(checkpoint_path, encoder.device)
        defaults = asdict(TrainConfig())  # a field added since the checkpoint was written: its default
        saved = {k: v for k, v in {**defaults, **state["config"]}.items() if k not in NOT_IDENTITY}
        current = {k: v for k, v in asdict(config).items() if k not in NOT_IDENTITY}
        if saved != current:
            raise ValueError(f"{checkpoint_path}: written with a different TrainConfig {saved}; "
                             f"this run has {current}")
        if state.get("finished"):
            # a finished run: its weights are the model folder's; nothing is trained again
            return _finished_run(state, encoder, objective_module, output_dir / "model", checkpoint_path,
                                 rank, world)
        encoder.load_state_dict(state["model"])
        if objective_module is not None:
            if state.get("objective") is None:
                raise ValueError(f"{checkpoint_path}: has no objective state, but this run's objective "
                                 f"{type(objective).__name__} has parameters")
            objective_module.load_state_dict(state["objective"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        if state.get("scaler") and scaler.is_enabled():
            scaler.load_state_dict(state["scaler"])
        _set_rng_state(_rank_rng_state(state["rng"], checkpoint_path, rank, world))
        history = list(state["history"])
        validation = list(state.get("validation", []))
        device_plans = list(state.get("device_plans", []))
        best = state.get("best")
        step = int(state["step"])
    resumed_from = step
    device_plans.append(plan.record())
    if world > 1:  # every process starts from rank 0's weights (and its resumed state, already equal)
        _broadcast_from_rank0([encoder] + ([objective_module] if objective_module is not None else []))

    def save_checkpoint() -> None:
        if checkpoint_path is None:
            return
        rng_states = _gather_rng_states(world)  # a collective: every rank takes part
        if rank != 0:  # one writer in data-parallel training
            return
        checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_save({"model": encoder.state_dict(), "optimizer": optimizer.state_dict(),
                      "objective": objective_module.state_dict() if objective_module is not None else None,
                      "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(), "rng": rng_states,
                      "history": history, "validation": validation, "best": best, "step": step,
                      "device_plans": device_plans, "config": asdict(config)}, checkpoint_path)

    def set_mode(training: bool) -> None:
        encoder.train(training)
        if objective_module is not None:
            objective_module.train(training)

    example_wise = bool(getattr(objective, "example_wise", False))
    encoder_inputs = getattr(objective, "encoder_inputs", None)
    settings_before = encoder.chunk_tokens, encoder.recompute_chunks, encoder.precision
    encoder.chunk_tokens, encoder.recompute_chunks = config.chunk_tokens, config.recompute_chunks
    if not config.bf16:
        encoder.precision = "fp32"
    # BitFit: no gradient for the frozen weights at all (saves their backward work); restored at the end
    frozen = [p for n, p in encoder.named_parameters() if config.bitfit and p.requires_grad
              and not n.endswith("bias")]
    for parameter in frozen:
        parameter.requires_grad_(False)
    memory_adaptations: list[dict] = []
    pending: list[tuple[dict, torch.Tensor]] = []  # history rows whose loss is still on the device
    prefetcher = ThreadPoolExecutor(max_workers=1) if callable(encoder_inputs) else None

    def prefetch(group: list[np.ndarray]) -> list[tuple[str, ...]]:
        """Tokenize and chunk a step's texts on the worker thread; returns the keys registered."""
        keys = []
        for batch in _calls(group, example_wise, rank, world):
            texts = list(encoder_inputs([examples[i] for i in batch]))
            encoder.expect(texts, prefetcher.submit(encoder.prepare, texts))
            keys.append(tuple(texts))
        return keys

    def run_step(group: list[np.ndarray]) -> torch.Tensor:
        """Forward and backward over one optimizer step's micro-batches; returns the step's loss, a float64
        tensor on the encoder's device (read by the host later, see read_losses)."""
        optimizer.zero_grad(set_to_none=True)
        group_size = sum(len(b) for b in group)
        step_loss = torch.zeros((), dtype=torch.float64, device=encoder.device)
        for batch in _calls(group, example_wise, rank, world):
            with plan.autocast(encoder.device.type):
                loss = objective(encoder, [examples[i] for i in batch])
            # Weight by batch size so a short last batch counts as much as its examples.
            weighted = loss * len(batch) / group_size
            scaler.scale(weighted).backward()
            step_loss = step_loss + (loss.detach().double() * len(batch) / group_size).to(encoder.device)
        return step_loss

    def read_losses(keep_newest: int = 0) -> None:
        """Copy the pending steps' losses to the host in one transfer (all but the ``keep_newest`` newest,
        which may still be running) and stop at the first non-finite one."""
        taken = pending[:len(pending) - keep_newest]
        if not taken:
            return
        values = torch.stack([loss for _, loss in taken]).tolist()
        del pending[:len(taken)]
        for (row, _), value in zip(taken, values):
            if not math.isfinite(value):
                raise FloatingPointError(
                    f"loss became {value} at epoch {row['epoch']}, optimizer step {row['step'] - 1}: lower the "
                    "learning rate, check the inputs for empty texts, or turn mixed precision off "
                    "(TrainConfig(bf16=False))")
            row["loss"] = value
        bar.set_postfix(loss=f"{values[-1]:.4f}", refresh=False)

    flat_groups = [group for groups in epoch_groups for group in groups]
    try:
        set_mode(True)
        bar = tqdm(total=total_steps, initial=step, desc="training", disable=not config.progress, unit="step")
        steps_done = 0  # optimizer steps of the loop so far, including those skipped on resume
        expected: list[tuple[str, ...]] = []  # prepared inputs registered for this step
        for epoch, groups in enumerate(epoch_groups):
            for group in groups:
                steps_done += 1
                if steps_done <= step:
                    continue  # done before the checkpoint we resumed from
                if prefetcher is not None:
                    if not expected:  # the first step: nothing prepared it
                        expected = prefetch(group)
                    coming = prefetch(flat_groups[steps_done]) if steps_done < len(flat_groups) else []
                # The step's micro-batch adapts to memory: on an out-of-memory error the same step runs
                # again (same random state) in smaller chunks, never with a smaller effective batch.
                random_state = _rng_state()
                while True:
                    try:
                        step_loss = run_step(group)
                        break
                    except torch.OutOfMemoryError:
                        optimizer.zero_grad(set_to_none=True)
                        if encoder.device.type == "cuda":
                            torch.cuda.empty_cache()
                        setting = _shrink_chunks(encoder)
                        if setting is None:
                            raise
                        memory_adaptations.append({"step": step + 1, **setting})
                        _set_rng_state(random_state)
                if prefetcher is not None:  # inputs prepared for this step that its calls did not use
                    for key in expected:
                        encoder._prepared.pop(key, None)
                    expected = coming
                if world > 1:
                    _all_reduce_gradients(trained_parameters)
                    torch.distributed.all_reduce(step_loss)
                scaler.unscale_(optimizer)  # clipping sees the true gradients
                if config.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(trained_parameters, config.max_grad_norm)
                learning_rate = scheduler.get_last_lr()[0]
                scaler.step(optimizer)  # skips the update when fp16 gradients overflowed
                scaler.update()
                if scaler.is_enabled():
                    with warnings.catch_warnings():  # a skipped update makes the scheduler warn; expected
                        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step")
                        scheduler.step()
                else:
                    scheduler.step()
                step += 1
                row = {"epoch": epoch, "step": step, "loss": float("nan"), "learning_rate": learning_rate}
                history.append(row)
                pending.append((row, step_loss))
                bar.update(1)
                checkpoint_due = bool(config.checkpoint_every) and step % config.checkpoint_every == 0
                if callback is not None or checkpoint_due:
                    read_losses()
                elif len(pending) > READ_LOSSES_EVERY:
                    read_losses(keep_newest=1)
                if checkpoint_due:
                    save_checkpoint()
                if callback is not None:
                    callback(row)
            read_losses()  # the epoch's losses, before validation and its checkpoint
            if validate is not None and len(validation) == epoch:
                set_mode(False)
                score = float(validate(encoder))
                set_mode(True)
                if not math.isfinite(score):
                    raise FloatingPointError(f"validate returned {score} after epoch {epoch}")
                validation.append(score)
                if best is None or score > best["score"]:
                    best = {"epoch": epoch, "score": score, "model": _cpu_copy(encoder.state_dict()),
                            "objective": None if objective_module is None
                            else _cpu_copy(objective_module.state_dict())}
                save_checkpoint()
    finally:
        if prefetcher is not None:
            prefetcher.shutdown(wait=True, cancel_futures=True)
        encoder.forget_prepared()
        for parameter in frozen:
            parameter.requires_grad_(True)
        encoder.chunk_tokens, encoder.recompute_chunks, encoder.precision = settings_before
    bar.close()
    set_mode(False)

    model_dir = None
    if output_dir is not None:
        save_checkpoint()  # the last epoch's state, whatever epoch is kept below
    if best is not None:
        encoder.load_state_dict(best["model"])
        if objective_module is not None:
            objective_module.load_state_dict(best["objective"])
    if output_dir is not None:
        model_dir = output_dir / "model"
        final_rng = _gather_rng_states(world)  # a collective: every rank takes part
    if model_dir is not None and rank == 0:
        if model_dir.exists():
            shutil.rmtree(model_dir)
        encoder.save(model_dir)
        if objective_module is not None:
            torch.save(objective_module.state_dict(), model_dir / "objective.pt")
        # The full checkpoint (weights, optimizer moments, the best epoch's copy: about 4× the model) gives
        # way to a small record of the finished run; resuming it loads the model folder. Written last, so a
        # kill before this line leaves the full checkpoint, from which the run finishes again.
        record = {"finished": True, "history": history, "validation": validation, "step": step,
                  "rng": final_rng, "best_epoch": best["epoch"] if best is not None else None,
                  "device_plans": device_plans, "config": asdict(config)}
        _atomic_save(record, checkpoint_path)
    return TrainResult(pd.DataFrame(history), model_dir, step, resumed_from, validation,
                       best["epoch"] if best is not None else None, memory_adaptations, device_plans)


def _rank_rng_state(saved, checkpoint_path: Path, rank: int, world: int) -> Mapping:
    """This rank's random state from a checkpoint's (a list, one per rank; older checkpoints: one dict)."""
    states = [saved] if isinstance(saved, Mapping) else list(saved)
    if len(states) != world:
        raise ValueError(f"{checkpoint_path}: written by {len(states)} training process(es); resume it with "
                         f"as many (this run has {world}), so each process continues its own random state")
    return states[rank]


def _finished_run(record: Mapping, encoder: Encoder, objective_module: nn.Module | None,
                  model_dir: Path, checkpoint_path: Path, rank: int = 0, world: int = 1) -> TrainResult:
    """Resume a run that had finished: load the weights it saved and return its recorded result."""
    from safetensors.torch import load_file

    weights = model_dir / "model.safetensors"
    if not weights.exists():
        raise FileNotFoundError(f"{model_dir}: the finished run's model folder has no model.safetensors; "
                                "delete its checkpoint.pt to train the run again")
    encoder.model.load_state_dict(load_file(str(weights), device=str(encoder.device)))
    if objective_module is not None:
        objective_path = model_dir / "objective.pt"
        if not objective_path.exists():
            raise FileNotFoundError(f"{model_dir}: no objective.pt, but this run's objective "
                                    f"{type(objective_module).__name__} has parameters")
        objective_module.load_state_dict(torch.load(objective_path, map_location=encoder.device, weights_only=True))
        objective_module.eval()
    encoder.eval()
    # as after the uninterrupted run, for whatever the caller draws next
    _set_rng_state(_rank_rng_state(record["rng"], checkpoint_path, rank, world))
    step = int(record["step"])
    return TrainResult(pd.DataFrame(record["history"]), model_dir, step, step, list(record["validation"]),
                       record["best_epoch"], device_plans=list(record.get("device_plans", [])))


@torch.no_grad()
def evaluate_loss(encoder: Encoder, examples: Sequence, objective: Callable, batch_size: int = 32,
                  progress: bool = False) -> float:
    """Mean objective over ``examples`` in eval mode (no dropout): a deterministic before/after measure."""
    if len(examples) == 0:
        raise ValueError("evaluate_loss: no examples")
    was_training = encoder.training
    encoder.eval()
    total = 0.0
    for start in tqdm(range(0, len(examples), batch_size), desc="loss", disable=not progress):
        batch = examples[start:start + batch_size]
        total += objective(encoder, batch).item() * len(batch)
    encoder.train(was_training)
    return total / len(examples)


# ---------------------------------------------------------------------------------------------- objectives
class TripletObjective:
    """SPECTER's objective: embed (query, positive, negative) texts, triplet loss (L2, margin 1).

    ``examples`` are :class:`sdr.samplers.Triplet`; ``texts`` maps a paper id to its input text. A
    triplet's own ``margin`` (CoSaEmb's margin gradation) is used when the loss is built with
    ``per_example_margin=True``.

    ``example_wise = True`` tells the trainer the loss is a mean of per-triplet terms, so it may call the
    objective once per optimizer step (each distinct paper encoded once per step) with the same gradient.
    """

    example_wise = True

    def __init__(self, texts: Mapping[str, str], loss: TripletMarginLoss | None = None,
                 per_example_margin: bool = False):
        self.texts = texts
        self.loss = loss or TripletMarginLoss(margin=1.0, distance="l2")
        self.per_example_margin = per_example_margin

    def encoder_inputs(self, triplets: Sequence) -> list[str]:
        """The texts a call embeds, in order (the trainer prepares the next step's on a worker thread)."""
        ids = [t.query for t in triplets] + [t.positive for t in triplets] + [t.negative for t in triplets]
        return [self.texts[i] for i in ids]

    def __call__(self, encoder: Encoder, triplets: Sequence) -> torch.Tensor:
        n = len(triplets)
        embeddings = encoder(self.encoder_inputs(triplets))  # one forward pass for the whole batch
        anchor, positive, negative = embeddings[:n], embeddings[n:2 * n], embeddings[2 * n:]
        margin = None
        if self.per_example_margin:
            margin = torch.tensor([t.margin for t in triplets], dtype=anchor.dtype, device=anchor.device)
        return self.loss(anchor, positive, negative, margin=margin)


class ContrastiveObjective:
    """SPECTERCL's objective: one anchor, P positives and N negatives per example, general contrastive
    loss with temperature (thesis eq. 2.6). ``examples`` are :class:`sdr.samplers.ContrastiveExample`.
    Each example brings its own negatives (no in-batch negatives), so the loss is example-wise."""

    example_wise = True

    def __init__(self, texts: Mapping[str, str], loss: GeneralContrastiveLoss | None = None):
        self.texts = texts
        self.loss = loss or GeneralContrastiveLoss(temperature=0.05)

    @staticmethod
    def _layout(examples: Sequence) -> tuple[list[str], list[list[int]], list[list[int]], int, int]:
        """Paper ids in embedding order (ragged groups padded with the anchor) and the masks of real ones."""
        n_pos = max(len(e.positives) for e in examples)
        n_neg = max(len(e.negatives) for e in examples)
        ids, pos_mask, neg_mask = [], [], []
        for e in examples:  # pad ragged groups with the anchor and mask the padding out
            ids.append(e.query)
            ids += list(e.positives) + [e.query] * (n_pos - len(e.positives))
            ids += list(e.negatives) + [e.query] * (n_neg - len(e.negatives))
            pos_mask.append([1] * len(e.positives) + [0] * (n_pos - len(e.positives)))
            neg_mask.append([1] * len(e.negatives) + [0] * (n_neg - len(e.negatives)))
        return ids, pos_mask, neg_mask, n_pos, n_neg

    def encoder_inputs(self, examples: Sequence) -> list[str]:
        """The texts a call embeds, in order (the trainer prepares the next step's on a worker thread)."""
        return [self.texts[i] for i in self._layout(examples)[0]]

    def __call__(self, encoder: Encoder, examples: Sequence) -> torch.Tensor:
        ids, pos_mask, neg_mask, n_pos, n_neg = self._layout(examples)
        embeddings = encoder([self.texts[i] for i in ids]).view(len(examples), 1 + n_pos + n_neg, -1)
        device = embeddings.device
        return self.loss(embeddings[:, 0], embeddings[:, 1:1 + n_pos], embeddings[:, 1 + n_pos:],
                         positive_mask=torch.tensor(pos_mask, dtype=torch.bool, device=device),
                         negative_mask=torch.tensor(neg_mask, dtype=torch.bool, device=device))
