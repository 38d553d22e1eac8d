"""Data-parallel training over several processes with PyTorch's ``DistributedDataParallel`` (DDP).

``torchrun --nproc_per_node N`` starts N processes; :func:`init_distributed` joins them into one process
group (NCCL on GPUs, gloo on CPU) and gives each its device. The trainer (:class:`sdr.train.Trainer`) then
wraps *the loss of a step* — the encoder's forward (padded or packed chunks) and the objective with its own
parameters — in :class:`StepLoss`, which DDP wraps (:func:`data_parallel`):

* rank 0's parameters and buffers are broadcast to every process when DDP is built;
* gradients are all-reduced in buckets *during* the backward pass, overlapping communication with the
  backward of the layers below; an accumulated step syncs only on its last call (``no_sync`` before);
* the all-reduce **sums** (:func:`sum_gradients`): each process's loss is already weighted by its share of
  the step's examples, so the sum over processes is the gradient of the whole step, as in one process;
* each process draws its own dropout masks (seeded ``seed + rank``) and its random state is checkpointed
  per rank (:func:`gather_rng_states`).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Sequence

import torch
import torch.distributed as dist
from torch import nn

from sdr.checkpoints import rng_state


def init_distributed() -> torch.device:
    """Join the process group ``torchrun`` describes in the environment (NCCL on CUDA, gloo on CPU) and
    return this process's device (``cuda:LOCAL_RANK``); :func:`sdr.train.train` then trains data-parallel
    over the group. Without torchrun's environment (no ``WORLD_SIZE``) nothing is joined and the default
    device is returned. ``sdr train RUN_FOLDER`` (:mod:`sdr.launch`) calls it."""
    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}") if cuda else torch.device("cpu")
    if "WORLD_SIZE" in os.environ and not dist.is_initialized():
        if cuda:
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if cuda else "gloo")
    return device


def in_process_group() -> bool:
    """Whether this process belongs to a process group (``torchrun``, or one made in-process)."""
    return dist.is_available() and dist.is_initialized()


def world() -> tuple[int, int]:
    """(rank, world size) of the process group, (0, 1) without one."""
    if in_process_group():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def gather_rng_states(world_size: int) -> list[dict]:
    """Every rank's random state (rank order), so a checkpoint restores each process's own; a collective
    when ``world_size`` > 1 (every rank must call it)."""
    state = rng_state()
    if world_size == 1:
        return [state]
    states: list = [None] * world_size
    dist.all_gather_object(states, state)
    return states


class StepLoss(nn.Module):
    """The loss of one objective call as a module: ``StepLoss(encoder, objective)(examples)`` is
    ``objective(encoder, examples)``. Its parameters are the encoder's and, when the objective is an
    ``nn.Module`` (projection heads, classifier weights), the objective's: what DDP synchronizes."""

    def __init__(self, encoder: nn.Module, objective: Callable):
        super().__init__()
        self.encoder = encoder
        if isinstance(objective, nn.Module):
            self.objective = objective  # registered: its parameters are synchronized too
        else:
            self.__dict__["objective"] = objective  # a plain callable, not a submodule

    def forward(self, examples: Sequence) -> torch.Tensor:
        return self.objective(self.encoder, examples)


def sum_gradients(process_group, bucket):
    """DDP communication hook: all-reduce a bucket of gradients as a **sum**. (DDP's default divides by the
    number of processes; here each process's loss is already its share of the step's, weighted by its
    examples, so the step's gradient is the sum, as the summed step loss is.)"""
    group = process_group if process_group is not None else dist.group.WORLD
    return dist.all_reduce(bucket.buffer(), group=group, async_op=True).get_future().then(lambda fut: fut.value()[0])


def never_used(step_loss: StepLoss) -> list[str]:
    """Names (in ``step_loss``) of parameters no forward of the encoder reaches: the Hugging Face model's
    pooler (the encoder pools [CLS] or the mean itself). DDP is told to ignore them, so it neither waits for
    their gradients nor needs ``find_unused_parameters`` for them; they stay as loaded, as in one process
    (no gradient, so AdamW leaves them alone)."""
    return [name for name, _ in step_loss.named_parameters() if name.startswith("encoder.model.pooler.")]


def data_parallel(step_loss: StepLoss, objective_has_parameters: bool) -> nn.Module:
    """``step_loss`` wrapped in ``DistributedDataParallel`` over the current process group.

    * ``device_ids=None``: the module lives on one device (the encoder's); DDP leaves the inputs (a list of
      examples, not tensors) alone.
    * ``broadcast_buffers=False``: BERT's buffers (position and token-type ids) are constants, so there is
      nothing to re-broadcast before every forward; DDP still broadcasts rank 0's parameters and buffers
      once, when it is built.
    * ``find_unused_parameters`` only when the objective has parameters of its own: heads that a batch may
      not use (SciAspect has one head per aspect and a batch need not hold every aspect), which DDP must
      then find in each step's graph (an extra traversal) instead of waiting for their gradients forever.
      The encoder's own unused parameters (the pooler, :func:`never_used`) are ignored instead, at no cost.
    """
    from torch.nn.parallel import DistributedDataParallel

    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(step_loss, never_used(step_loss))
    # torch 2.12+ names the per-forward buffer sync forward_sync_buffers (broadcast_buffers is deprecated)
    no_buffer_sync = ({"forward_sync_buffers": False}
                      if "forward_sync_buffers" in inspect.signature(DistributedDataParallel).parameters
                      else {"broadcast_buffers": False})
    wrapped = DistributedDataParallel(step_loss, device_ids=None, find_unused_parameters=objective_has_parameters,
                                      **no_buffer_sync)
    wrapped.register_comm_hook(None, sum_gradients)
    return wrapped
