"""The SciDocs folder layout and the embeddings argument, shared by both SciDocs evaluators.

:mod:`sdr.evaluate.scidocs` (classification, proximity, the suite) and :mod:`sdr.evaluate.recommendations` (the
click ranker) both read this folder; keeping its layout here lets ``scidocs`` import ``recommendations`` without
``recommendations`` importing ``scidocs`` back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdr.evaluate.embeddings import read_embeddings

PROXIMITY_TASKS = {"co-view": "coview", "co-read": "coread", "cite": "cite", "co-cite": "cocite"}
"""Output name → folder of the qrels, in the order of ``get_view_cite_read_metrics``."""


@dataclass(frozen=True)
class ScidocsPaths:
    """The official layout (``scidocs/paths.py`` ``DataPaths``) under ``base``."""

    base: Path

    def qrel(self, task: str, split: str) -> Path:
        return self.base / PROXIMITY_TASKS.get(task, task) / f"{split}.qrel"

    def classification(self, task: str, split: str) -> Path:
        return self.base / task / f"{split}.csv"

    def recomm(self, split: str) -> Path:
        return self.base / "recomm" / f"{split}.csv"

    @property
    def propensity_scores(self) -> Path:
        return self.base / "recomm" / "propensity_scores.json"

    @property
    def metadata_mag_mesh(self) -> Path:
        return self.base / "paper_metadata_mag_mesh.json"

    @property
    def metadata_view_cite_read(self) -> Path:
        return self.base / "paper_metadata_view_cite_read.json"

    @property
    def metadata_recomm(self) -> Path:
        return self.base / "paper_metadata_recomm.json"

    def has_recomm(self) -> bool:
        return all(p.exists() for p in (self.recomm("train"), self.recomm("test"), self.propensity_scores,
                                        self.metadata_recomm))


def load_embeddings(embeddings: Mapping[str, np.ndarray] | str | Path) -> Mapping[str, np.ndarray]:
    """Accept ``{id: vector}`` or an embeddings JSONL path (see :mod:`sdr.evaluate.embeddings`)."""
    if isinstance(embeddings, (str, Path)):
        return read_embeddings(embeddings, dtype=np.float64)
    if not embeddings:
        raise ValueError("embeddings: the mapping is empty")
    return embeddings
