"""A training run's schedule: its optimizer steps (the epochs' batches, a pure function of seed and epoch, so a
resumed run sees the same; the objective calls of a step in each process) and its learning rates.

The learning-rate schedules are the papers': linear decay after warm-up (SPECTER, SciNCL), cosine with warm-up
(the thesis, §4.4), slanted-triangular (SciNCL's code, Howard & Ruder 2018), constant.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import numpy as np
import torch

SCHEDULES = ("linear", "cosine", "slanted_triangular", "constant")


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


def batches(n_examples: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """The epoch's shuffled batches, a pure function of (seed, epoch) so a resumed run sees the same."""
    order = np.random.default_rng([seed, epoch]).permutation(n_examples)
    return [order[i:i + batch_size] for i in range(0, n_examples, batch_size)]


def epoch_batches(n_examples: int, config, batch_sampler: Callable | None,
                   epoch: int) -> list[np.ndarray]:
    """The epoch's micro-batches: the default shuffle (``config.batch_size``, ``config.seed``), or
    ``batch_sampler(n_examples, seed, epoch)``, checked."""
    if batch_sampler is None:
        return batches(n_examples, config.batch_size, config.seed, epoch)
    sampled = [np.asarray(batch, dtype=np.int64).reshape(-1)
               for batch in batch_sampler(n_examples, config.seed, epoch)]
    if not sampled:
        raise ValueError(f"batch_sampler gave no batches for epoch {epoch} of {n_examples} examples")
    for number, batch in enumerate(sampled):
        if batch.size == 0 or batch.min() < 0 or batch.max() >= n_examples:
            raise ValueError(f"batch_sampler: epoch {epoch}, batch {number} is {batch.tolist()[:10]}; "
                             f"expected a non-empty list of example indices in 0..{n_examples - 1}")
    return sampled


def step_calls(group: list[np.ndarray], example_wise: bool, rank: int, world: int) -> list[np.ndarray]:
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
