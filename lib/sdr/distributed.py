"""Data-parallel training over several processes (``torchrun``): joining the process group, and the
collectives the trainer makes (rank 0's weights broadcast at the start, gradients summed after the backward
pass, every rank's random state gathered for the checkpoint)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
import torch.distributed as dist
from torch import nn

from sdr.checkpoints import rng_state


def init_distributed() -> torch.device:
    """Join the process group ``torchrun`` describes in the environment (gloo on CPU, NCCL on CUDA) and
    return this process's device; :func:`sdr.train.train` then trains data-parallel over the group. A no-op
    returning the default device when the script was not started by torchrun."""
    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}") if cuda else torch.device("cpu")
    if "WORLD_SIZE" in os.environ and not dist.is_initialized():
        if cuda:
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if cuda else "gloo")
    return device


def world() -> tuple[int, int]:
    """(rank, world size) of the process group, (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def all_reduce_gradients(parameters: Sequence[nn.Parameter]) -> None:
    """Sum every parameter's gradient over the process group in one flat all-reduce, on the parameters'
    device. A parameter no rank gave a gradient keeps ``grad=None`` (so AdamW skips it, as in one process):
    which did is read back to the host, a small read skipped when this rank gave every parameter one."""
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


def broadcast_from_rank0(modules: Sequence[nn.Module]) -> None:
    """Give every process rank 0's parameters and buffers (processes that built or loaded their weights
    differently, e.g. a randomly initialized head, would otherwise train different models)."""
    with torch.no_grad():
        for module in modules:
            for tensor in module.state_dict(keep_vars=True).values():
                dist.broadcast(tensor.detach(), src=0)


def gather_rng_states(world: int) -> list[dict]:
    """Every rank's random state (rank order), so a checkpoint restores each process's own."""
    state = rng_state()
    if world == 1:
        return [state]
    states: list = [None] * world
    dist.all_gather_object(states, state)
    return states
