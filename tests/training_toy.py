"""The toy training set the trainer tests share: eight short texts on four topics and six triplets over them.

Imported by test modules (and by the process tests' worker, which runs a test file as a script), so it is a
plain module beside them rather than a fixture.
"""

from __future__ import annotations

from sdr.samplers import Triplet
from sdr.train import TrainConfig

TEXTS = {
    "a": "Graph neural networks for citation recommendation.",
    "b": "Citation-informed transformers embed scientific documents.",
    "c": "Protein structure prediction with attention.",
    "d": "Folding proteins using deep learning and evolutionary data.",
    "e": "Monetary policy and inflation expectations in small economies.",
    "f": "Central bank communication moves interest rates.",
    "g": "Contrastive learning of document representations from citations.",
    "h": "Dark matter halos in cosmological simulations.",
}
TRIPLETS = [
    Triplet("a", "b", "c", "hard"),
    Triplet("c", "d", "e", "easy"),
    Triplet("e", "f", "h", "easy"),
    Triplet("g", "a", "d", "hard"),
    Triplet("b", "g", "f", "easy"),
    Triplet("h", "c", "a", "easy"),
]


def toy_config(**changes) -> TrainConfig:
    """6 triplets, batch 2, no accumulation, 2 epochs → 3 optimizer steps per epoch, 6 in all."""
    settings = dict(epochs=2, batch_size=2, accumulation_steps=1, learning_rate=1e-3, warmup_steps=1,
                    schedule="linear", seed=0, checkpoint_every=2, progress=False)
    settings.update(changes)
    return TrainConfig(**settings)
