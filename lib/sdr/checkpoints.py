"""The trainer's checkpoints: random states as plain values, atomic writes, reading with
``torch.load(weights_only=True)``, and placing a checkpoint's tensors for resuming on any device.

A checkpoint (:class:`sdr.train.Trainer.save_checkpoint`) holds tensors and plain Python values only; each
process's random state is saved (one entry per rank) so a resumed run continues every process's own draws.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

def atomic_save(state: Mapping, path: Path) -> None:
    """``torch.save`` to a temporary file, then rename: a kill mid-write leaves the previous file intact."""
    temporary = path.with_suffix(".tmp")
    torch.save(state, temporary)
    temporary.replace(path)


def rng_state() -> dict:
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


def set_rng_state(state: Mapping) -> None:
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


def rank_rng_state(saved, checkpoint_path: Path, rank: int, world: int, finished: bool = False) -> Mapping:
    """This rank's random state from a checkpoint's (a list, one per rank; older checkpoints: one dict).

    An unfinished run must be resumed by as many processes as wrote it. A finished run may be loaded by
    another number (a chapter in one process loading what ``torchrun`` trained on several GPUs): a rank the
    run did not have continues with rank 0's final state."""
    states = [saved] if isinstance(saved, Mapping) else list(saved)
    if finished and len(states) != world:
        return states[rank] if rank < len(states) else states[0]
    if len(states) != world:
        raise ValueError(f"{checkpoint_path}: written by {len(states)} training process(es); resume it with "
                         f"as many (this run has {world}), so each process continues its own random state")
    return states[rank]


def cpu_copy(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: value.detach().to("cpu", copy=True) for key, value in state.items()}

