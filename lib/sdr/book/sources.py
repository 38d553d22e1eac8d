"""What produced a page: the real-data root a chapter reads, the caption under its tables, the machine."""

from __future__ import annotations

import platform
from collections.abc import Sequence


def caption(profile: str, sources: Sequence[str]) -> str:
    """The line printed under every table and plot: which profile and which data produced it."""
    return f"Profile: {profile} · Data: {'; '.join(sources) if sources else 'none'}"


def environment_line() -> str:
    """Python, torch and the device that ran the chapter, for its closing line."""
    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    return f"python {platform.python_version()}, torch {torch.__version__}, device {device}"
