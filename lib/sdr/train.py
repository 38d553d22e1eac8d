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
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
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


def train(encoder: Encoder, examples: Sequence, objective: Callable, config: TrainConfig,
          output_dir: str | Path | None = None, resume: bool = False,
          callback: Callable[[dict], None] | None = None) -> TrainResult:
    """Fit ``encoder`` on ``examples`` with ``objective``; see the module docstring.

    ``output_dir`` receives ``checkpoint.pt`` (every ``checkpoint_every`` optimizer steps and at the end)
    and ``model/`` (a sentence-transformers folder). With ``resume=True`` training continues from
    ``output_dir/checkpoint.pt`` when it exists. ``callback(row)`` is called after each optimizer step.
    """
    if len(examples) == 0:
        raise ValueError("no training examples: the sampler produced none (see its report)")
    output_dir = Path(output_dir) if output_dir is not None else None
    checkpoint_path = output_dir / "checkpoint.pt" if output_dir else None
    seed_everything(config.seed)

    batches_per_epoch = math.ceil(len(examples) / config.batch_size)
    steps_per_epoch = math.ceil(batches_per_epoch / config.accumulation_steps)
    total_steps = steps_per_epoch * config.epochs
    warmup = config.warmup_steps if config.warmup_steps is not None else int(config.warmup_ratio * total_steps)

    no_decay = ("bias", "LayerNorm.weight", "layer_norm", "norm.weight")
    parameters = [
        {"params": [p for n, p in encoder.named_parameters() if not any(k in n for k in no_decay)],
         "weight_decay": config.weight_decay},
        {"params": [p for n, p in encoder.named_parameters() if any(k in n for k in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate, eps=1e-8)
    scheduler = make_schedule(optimizer, config.schedule, total_steps, warmup)
    history: list[dict] = []
    step = 0

    if resume and checkpoint_path is not None and checkpoint_path.exists():
        state = torch.load(checkpoint_path, map_location=encoder.device, weights_only=False)
        saved = {k: v for k, v in state["config"].items() if k not in ("progress", "checkpoint_every")}
        current = {k: v for k, v in asdict(config).items() if k not in ("progress", "checkpoint_every")}
        if saved != current:
            raise ValueError(f"{checkpoint_path}: written with a different TrainConfig {saved}; "
                             f"this run has {current}")
        encoder.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        _set_rng_state(state["rng"])
        history = list(state["history"])
        step = int(state["step"])
    resumed_from = step

    def save_checkpoint() -> None:
        if checkpoint_path is None:
            return
        checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = checkpoint_path.with_suffix(".tmp")
        torch.save({"model": encoder.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "rng": _rng_state(), "history": history,
                    "step": step, "config": asdict(config)}, temporary)
        temporary.replace(checkpoint_path)  # atomic: a kill mid-write leaves the previous checkpoint

    use_autocast = config.bf16 and encoder.device.type == "cuda"
    encoder.train()
    bar = tqdm(total=total_steps, initial=step, desc="training", disable=not config.progress, unit="step")
    for epoch in range(config.epochs):
        batches = _batches(len(examples), config.batch_size, config.seed, epoch)
        groups = [batches[i:i + config.accumulation_steps]
                  for i in range(0, len(batches), config.accumulation_steps)]
        for group_index, group in enumerate(groups):
            if epoch * steps_per_epoch + group_index < step:
                continue  # done before the checkpoint we resumed from
            optimizer.zero_grad(set_to_none=True)
            group_size = sum(len(b) for b in group)
            step_loss = 0.0
            for batch in group:
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_autocast):
                    loss = objective(encoder, [examples[i] for i in batch])
                if not torch.isfinite(loss):
                    raise FloatingPointError(
                        f"loss became {loss.item()} at epoch {epoch}, optimizer step {step}: lower the "
                        "learning rate, check the inputs for empty texts, or disable bf16")
                # Weight by batch size so a short last batch counts as much as its examples.
                (loss * len(batch) / group_size).backward()
                step_loss += loss.item() * len(batch) / group_size
            if config.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(encoder.parameters(), config.max_grad_norm)
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
    bar.close()
    encoder.eval()

    model_dir = None
    if output_dir is not None:
        save_checkpoint()
        model_dir = output_dir / "model"
        if model_dir.exists():
            shutil.rmtree(model_dir)
        encoder.save(model_dir)
    return TrainResult(pd.DataFrame(history), model_dir, step, resumed_from)


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
    """

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
    loss with temperature (thesis eq. 2.6). ``examples`` are :class:`sdr.samplers.ContrastiveExample`."""

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
