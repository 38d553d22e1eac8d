"""Where the book's files are: the repository root and the folders every other module of ``sdr.book`` reads.

Modules look these names up here when they are called (``paths.ROOT``), not when they are imported, so a test
or a fork points the whole book elsewhere by setting them on this module (``SDR_BOOK_ROOT`` in a subprocess).
"""

from __future__ import annotations

import os
from pathlib import Path

# lib/sdr/book/paths.py → parents: book, sdr, lib, the repository root
ROOT = Path(os.environ.get("SDR_BOOK_ROOT", Path(__file__).resolve().parents[3]))
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS_OUT = ROOT / "book" / "chapters"
PAPER_TABLES = ROOT / "data" / "paper_tables"
PROFILES_FILE = ROOT / "profiles.yml"
LIBRARY = Path(__file__).resolve().parents[1]
"""The ``sdr`` package folder, whose every file is part of a chapter's fingerprint."""


def results_dir() -> Path:
    """The results store: ``$SDR_RESULTS`` (read at call time), else ``<root>/results``."""
    return Path(os.environ.get("SDR_RESULTS", ROOT / "results"))
