"""One trainer for every chapter.

SPECTER and SciNCL train SciBERT with AdamW (lr 2e-5), an effective batch of 32 (batch 8 × 4 accumulation
steps), warm-up then linear decay, 2 epochs (Cohan et al. 2020 §4; Ostendorff et al. 2022 §4.3). The
thesis uses a cosine schedule with 100 warm-up steps (§4.4); SciNCL's code also offers the slanted-triangular
schedule (10 % warm-up). All three are options here.

What a method contributes is an *objective*: a callable ``objective(encoder, examples) -> loss`` that turns a
batch of sampled examples (triplets, contrastive groups, labelled sentences) into a scalar loss. The trainer
owns everything else: seeding, device, bf16 autocast on CUDA, gradient accumulation, clipping, the schedule,
a progress bar with the loss, a stop on a non-finite loss, checkpoints every N optimizer steps, ``resume=True``
that ends with the same weights as an uninterrupted run, and a saved sentence-transformers folder.
"""

from __future__ import annotations

import math
import random
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm.auto import tqdm

from sdr.encoders import Encoder
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
    bf16: bool = True  # autocast on CUDA only; CPU runs stay float32 (and bit-reproducible)
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


#: TrainConfig fields that do not change what a run computes: a resumed run may differ in them.
NOT_IDENTITY = ("progress", "checkpoint_every", "recompute_chunks")


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
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: Mapping) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


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
    """Sum every parameter's gradient over the process group in one flat all-reduce. A parameter no rank
    gave a gradient keeps ``grad=None`` (so AdamW skips it, as in one process)."""
    import torch.distributed as dist

    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in parameters]
    present = torch.tensor([float(p.grad is not None) for p in parameters], device=grads[0].device,
                           dtype=grads[0].dtype)
    flat = torch.cat([g.reshape(-1) for g in grads] + [present])
    dist.all_reduce(flat)
    any_rank = flat[-len(parameters):].tolist()
    offset = 0
    for parameter, grad, has_grad in zip(parameters, grads, any_rank):
        reduced = flat[offset:offset + grad.numel()].view_as(grad)
        offset += grad.numel()
        parameter.grad = reduced.clone() if has_grad > 0 else None


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
    optimizer step.

    ``objective`` may be a ``torch.nn.Module`` with its own parameters (projection heads, class
    weights): it is moved to the encoder's device, optimized and clipped with the encoder, checkpointed
    and restored on resume.

    ``batch_sampler(n_examples, seed, epoch)`` returns the epoch's micro-batches (lists of example
    indices; a pure function of seed and epoch so a resumed run sees the same batches), e.g. a
    :class:`sdr.samplers.PKBatchSampler`; ``config.accumulation_steps`` of them make one optimizer step.
    Default: the examples shuffled by (seed, epoch) in batches of ``config.batch_size``.

    ``validate(encoder) -> float`` (higher is better) runs in eval mode after every epoch; training ends
    with the best epoch's weights (encoder and objective), and the result records every epoch's score
    (``validation``) and ``best_epoch``.
    """
    if len(examples) == 0:
        raise ValueError("no training examples: the sampler produced none (see its report)")
    output_dir = Path(output_dir) if output_dir is not None else None
    checkpoint_path = output_dir / "checkpoint.pt" if output_dir else None
    seed_everything(config.seed)
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
    history: list[dict] = []
    validation: list[float] = []
    best: dict | None = None  # {"epoch", "score", "model", "objective"} of the best validated epoch
    step = 0

    if resume and checkpoint_path is not None and checkpoint_path.exists():
        state = torch.load(checkpoint_path, map_location=encoder.device, weights_only=False)
        saved = {k: v for k, v in state["config"].items() if k not in NOT_IDENTITY}
        current = {k: v for k, v in asdict(config).items() if k not in NOT_IDENTITY}
        if saved != current:
            raise ValueError(f"{checkpoint_path}: written with a different TrainConfig {saved}; "
                             f"this run has {current}")
        if state.get("finished"):
            # a finished run: its weights are the model folder's; nothing is trained again
            return _finished_run(state, encoder, objective_module, output_dir / "model")
        encoder.load_state_dict(state["model"])
        if objective_module is not None:
            if state.get("objective") is None:
                raise ValueError(f"{checkpoint_path}: has no objective state, but this run's objective "
                                 f"{type(objective).__name__} has parameters")
            objective_module.load_state_dict(state["objective"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        _set_rng_state(state["rng"])
        history = list(state["history"])
        validation = list(state.get("validation", []))
        best = state.get("best")
        step = int(state["step"])
    resumed_from = step

    def save_checkpoint() -> None:
        if checkpoint_path is None or _world()[0] != 0:  # one writer in data-parallel training
            return
        checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_save({"model": encoder.state_dict(), "optimizer": optimizer.state_dict(),
                      "objective": objective_module.state_dict() if objective_module is not None else None,
                      "scheduler": scheduler.state_dict(), "rng": _rng_state(), "history": history,
                      "validation": validation, "best": best, "step": step, "config": asdict(config)},
                     checkpoint_path)

    def set_mode(training: bool) -> None:
        encoder.train(training)
        if objective_module is not None:
            objective_module.train(training)

    use_autocast = config.bf16 and encoder.device.type == "cuda"
    rank, world = _world()
    example_wise = bool(getattr(objective, "example_wise", False))
    chunking_before = encoder.chunk_tokens, encoder.recompute_chunks
    encoder.chunk_tokens, encoder.recompute_chunks = config.chunk_tokens, config.recompute_chunks
    # BitFit: no gradient for the frozen weights at all (saves their backward work); restored at the end
    frozen = [p for n, p in encoder.named_parameters() if config.bitfit and p.requires_grad
              and not n.endswith("bias")]
    for parameter in frozen:
        parameter.requires_grad_(False)
    memory_adaptations: list[dict] = []

    def run_step(group: list[np.ndarray], epoch: int, step: int) -> torch.Tensor:
        """Forward and backward over one optimizer step's micro-batches; returns the step's loss."""
        optimizer.zero_grad(set_to_none=True)
        group_size = sum(len(b) for b in group)
        step_loss = torch.zeros((), dtype=torch.float64)
        for batch in _calls(group, example_wise, rank, world):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_autocast):
                loss = objective(encoder, [examples[i] for i in batch])
            if not torch.isfinite(loss):
                raise FloatingPointError(
                    f"loss became {loss.item()} at epoch {epoch}, optimizer step {step}: lower the "
                    "learning rate, check the inputs for empty texts, or disable bf16")
            # Weight by batch size so a short last batch counts as much as its examples.
            (loss * len(batch) / group_size).backward()
            step_loss += loss.item() * len(batch) / group_size
        return step_loss

    try:
        set_mode(True)
        bar = tqdm(total=total_steps, initial=step, desc="training", disable=not config.progress, unit="step")
        steps_done = 0  # optimizer steps of the loop so far, including those skipped on resume
        for epoch, groups in enumerate(epoch_groups):
            for group in groups:
                steps_done += 1
                if steps_done <= step:
                    continue  # done before the checkpoint we resumed from
                # The step's micro-batch adapts to memory: on an out-of-memory error the same step runs
                # again (same random state) in smaller chunks, never with a smaller effective batch.
                random_state = _rng_state()
                while True:
                    try:
                        step_loss = run_step(group, epoch, step)
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
                if world > 1:
                    _all_reduce_gradients(trained_parameters)
                    torch.distributed.all_reduce(step_loss)
                step_loss = step_loss.item()
                if config.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(trained_parameters, config.max_grad_norm)
                learning_rate = scheduler.get_last_lr()[0]
                optimizer.step()
                scheduler.step()
                step += 1
                row = {"epoch": epoch, "step": step, "loss": step_loss, "learning_rate": learning_rate}
                history.append(row)
                bar.update(1)
                bar.set_postfix(loss=f"{step_loss:.4f}", refresh=False)
                if config.checkpoint_every and step % config.checkpoint_every == 0:
                    save_checkpoint()
                if callback is not None:
                    callback(row)
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
        for parameter in frozen:
            parameter.requires_grad_(True)
        encoder.chunk_tokens, encoder.recompute_chunks = chunking_before
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
    if model_dir is not None and rank == 0:
        if model_dir.exists():
            shutil.rmtree(model_dir)
        encoder.save(model_dir)
        if objective_module is not None:
            torch.save(objective_module.state_dict(), model_dir / "objective.pt")
        # The full checkpoint (weights, optimizer moments, the best epoch's copy: about 4× the model) gives
        # way to a small record of the finished run; resuming it loads the model folder. Written last, so a
        # kill before this line leaves the full checkpoint, from which the run finishes again.
        record = {"finished": True, "history": history, "validation": validation, "step": step, "rng": _rng_state(),
                  "best_epoch": best["epoch"] if best is not None else None, "config": asdict(config)}
        _atomic_save(record, checkpoint_path)
    return TrainResult(pd.DataFrame(history), model_dir, step, resumed_from, validation,
                       best["epoch"] if best is not None else None, memory_adaptations)


def _finished_run(record: Mapping, encoder: Encoder, objective_module: nn.Module | None,
                  model_dir: Path) -> TrainResult:
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
    _set_rng_state(record["rng"])  # as after the uninterrupted run, for whatever the caller draws next
    step = int(record["step"])
    return TrainResult(pd.DataFrame(record["history"]), model_dir, step, step, list(record["validation"]),
                       record["best_epoch"])


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

    def __call__(self, encoder: Encoder, triplets: Sequence) -> torch.Tensor:
        n = len(triplets)
        ids = [t.query for t in triplets] + [t.positive for t in triplets] + [t.negative for t in triplets]
        embeddings = encoder([self.texts[i] for i in ids])  # one forward pass for the whole batch
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

    def __call__(self, encoder: Encoder, examples: Sequence) -> torch.Tensor:
        n_pos = max(len(e.positives) for e in examples)
        n_neg = max(len(e.negatives) for e in examples)
        ids, pos_mask, neg_mask = [], [], []
        for e in examples:  # pad ragged groups with the anchor and mask the padding out
            ids.append(e.query)
            ids += list(e.positives) + [e.query] * (n_pos - len(e.positives))
            ids += list(e.negatives) + [e.query] * (n_neg - len(e.negatives))
            pos_mask.append([1] * len(e.positives) + [0] * (n_pos - len(e.positives)))
            neg_mask.append([1] * len(e.negatives) + [0] * (n_neg - len(e.negatives)))
        embeddings = encoder([self.texts[i] for i in ids]).view(len(examples), 1 + n_pos + n_neg, -1)
        device = embeddings.device
        return self.loss(embeddings[:, 0], embeddings[:, 1:1 + n_pos], embeddings[:, 1 + n_pos:],
                         positive_mask=torch.tensor(pos_mask, dtype=torch.bool, device=device),
                         negative_mask=torch.tensor(neg_mask, dtype=torch.bool, device=device))
