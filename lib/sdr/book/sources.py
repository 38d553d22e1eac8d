"""What produced a page: the real-data root a chapter reads, the caption under its tables, the machine."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from pathlib import Path


def shared_data_dir() -> Path | None:
    """Where real data is: ``$SDR_DATA`` when set and present, else the download cache if it has data."""
    from sdr import datasets

    return datasets.data_root()


def real_data_enabled(setting) -> bool:
    """A chapter's ``use_real_data`` parameter as a bool.

    ``True``/``False`` are taken as they are; ``"auto"`` (the ``smoke`` profile's value) means "use the real
    data when a data root exists" (``$SDR_DATA`` or the download cache), so CI, which has the mirror, runs the
    chapters' real-data cells at smoke size while a fresh clone without data runs on the replicas.
    """
    if isinstance(setting, bool):
        return setting
    if isinstance(setting, str) and setting.strip().lower() in ("auto", "true", "false"):
        value = setting.strip().lower()
        return shared_data_dir() is not None if value == "auto" else value == "true"
    raise ValueError(f"use_real_data must be true, false or 'auto', got {setting!r}")


def real_data_file(relative: str, use_real_data: bool = True) -> Path | None:
    """``<data root>/relative`` when real data is on and the file is there, else None."""
    root = shared_data_dir() if use_real_data else None
    path = root / relative if root is not None else None
    return path if path is not None and path.exists() else None


def caption(profile: str, sources: Sequence[str]) -> str:
    """The line printed under every table and plot: which profile and which data produced it."""
    return f"Profile: {profile} · Data: {'; '.join(sources) if sources else 'none'}"


def environment_line() -> str:
    """Python, torch and the device that ran the chapter, for its closing line."""
    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    return f"python {platform.python_version()}, torch {torch.__version__}, device {device}"
