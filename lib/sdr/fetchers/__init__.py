"""Fetchers for data that comes from an API rather than a file URL.

``sdr.datasets`` entries with a ``fetcher`` (``semantic_scholar``, ``s2orc``, ``huggingface``, ``bulk``) are built
by the module of that name: it calls the API (through :class:`http.Client`: an API key from ``S2_API_KEY``, a
request rate, retries with back-off, rate limits waited out), writes the layout that :mod:`sdr.corpus` reads, and
resumes where an interrupted fetch stopped. Every fetcher states what it will download (requests, bytes, time)
before it starts, and writes its completion record last (:mod:`sdr.fetchers.completion`): a folder without it is a
partial fetch, never data. ``semantic_scholar`` is the Graph API (small crawls, single papers); ``bulk`` the
Datasets API's shards filtered with DuckDB (FLeW's and the thesis' graphs, SciNCL's S2ORC citation graph).
"""

from __future__ import annotations

import importlib
from pathlib import Path


def fetch_dataset(dataset, folder: Path, progress: bool = True, **options) -> Path:
    """Build ``folder`` for a registry ``dataset`` whose ``fetcher`` names a module of this package."""
    if not dataset.fetcher:
        raise ValueError(f"{dataset.name}: no fetcher (it has file URLs: use sdr.datasets.fetch)")
    module = importlib.import_module(f"sdr.fetchers.{dataset.fetcher}")
    return module.fetch_dataset(dataset, Path(folder), progress=progress, **options)
