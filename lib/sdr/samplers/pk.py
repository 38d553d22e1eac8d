"""P classes × K examples batches for metric-learning losses (SciToricsBERT's :class:`PKBatchSampler`).

A batch sampler over class labels, not a source of training examples: it changes with the trainer's batch
interface, independently of the citation and k-NN samplers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from torch.utils.data import Sampler


class PKBatchSampler(Sampler[list[int]]):
    """Batches of ``p`` classes × ``k`` examples (Hermans et al. 2017), for metric-learning losses.

    SciToricsBERT (paper 004, App. B) uses P = 64, K = 1 for softmax/ArcFace and P = 8, K = 8 for the
    others (:data:`sdr.losses.SCITORICS_PK`). Each batch draws ``p`` distinct classes, then ``k``
    distinct examples per class; classes with fewer than ``k`` examples are sampled with replacement
    and counted in ``classes_below_k`` (printed once). With fewer classes than ``p`` every batch holds
    all classes and keeps its ``p·k`` examples, spread as evenly as possible over the classes
    (``fewer_classes_than_p`` is True and the report says so). ``len()`` is ``num_batches`` (default
    ``len(labels) // (p·k)``, at least 1). Deterministic: epoch ``e`` uses the seed ``(seed, e)``; each
    full iteration advances the epoch, or set it with :meth:`set_epoch`. Yields lists of indices, so
    use it as ``DataLoader(dataset, batch_sampler=...)``; calling it as
    ``sampler(n_examples, seed, epoch)`` gives one epoch's batches, the form
    :func:`sdr.train.train`'s ``batch_sampler`` takes (there the trainer's seed is used).
    """

    def __init__(
        self,
        labels: Sequence | np.ndarray,
        p: int,
        k: int,
        seed: int = 0,
        num_batches: int | None = None,
        verbose: bool = True,
    ):
        if hasattr(labels, "tolist"):
            labels = labels.tolist()
        labels = list(labels)
        if p < 1 or k < 1:
            raise ValueError(f"PKBatchSampler: p and k must be >= 1, got p={p}, k={k}")
        self.members: dict = {}
        for index, label in enumerate(labels):
            self.members.setdefault(label, []).append(index)
        self.classes = list(self.members)
        self.fewer_classes_than_p = len(self.classes) < p
        self.member_arrays = [np.asarray(self.members[c], dtype=np.int64) for c in self.classes]
        self.p, self.k, self.seed = p, k, seed
        self.num_batches = num_batches if num_batches is not None else max(1, len(labels) // (p * k))
        if self.num_batches < 1:
            raise ValueError(f"PKBatchSampler: num_batches must be >= 1, got {self.num_batches}")
        self.n_labels = len(labels)
        # examples drawn per class in a batch: k, or p·k spread over all classes when there are fewer than p
        per_class = k if not self.fewer_classes_than_p else -(-p * k // len(self.classes))
        self.classes_below_k = {c: len(self.members[c]) for c in self.classes
                                if len(self.members[c]) < per_class}
        self.epoch = 0
        if verbose and (self.classes_below_k or self.fewer_classes_than_p):
            print(self.report())

    def report(self) -> str:
        """One line: batch shape and the classes sampled with replacement."""
        return (
            f"PKBatchSampler: {self.num_batches} batches of {self.p} classes x {self.k} examples from "
            f"{len(self.classes)} classes; {len(self.classes_below_k)} classes have fewer than {self.k} "
            "examples and are sampled with replacement."
            + (f" Fewer classes than p={self.p}: each batch holds all {len(self.classes)} classes, "
               f"{self.p * self.k} examples spread evenly over them." if self.fewer_classes_than_p else "")
        )

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose batches the next iteration yields."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self.num_batches

    def __iter__(self) -> Iterator[list[int]]:
        batches = self.epoch_batches(self.seed, self.epoch)
        self.epoch += 1
        yield from batches

    def __call__(self, n_examples: int, seed: int, epoch: int) -> list[list[int]]:
        """One epoch's batches for :func:`sdr.train.train` (``batch_sampler=sampler``)."""
        if n_examples != self.n_labels:
            raise ValueError(f"PKBatchSampler: built for {self.n_labels} labels, asked to batch {n_examples} "
                             "examples; give it one label per training example")
        return self.epoch_batches(seed, epoch)

    def epoch_batches(self, seed: int, epoch: int) -> list[list[int]]:
        """The ``num_batches`` batches of one epoch, a pure function of (seed, epoch)."""
        rng = np.random.default_rng([seed, epoch])
        n_classes = len(self.classes)
        batches = []
        for _ in range(self.num_batches):
            batch: list[int] = []
            if self.fewer_classes_than_p:  # all classes, p·k examples split as evenly as possible
                sizes = np.full(n_classes, self.p * self.k // n_classes)
                sizes[rng.permutation(n_classes)[:self.p * self.k % n_classes]] += 1
                classes = rng.permutation(n_classes)
                counts = [int(sizes[c]) for c in classes]
            else:
                classes = rng.choice(n_classes, size=self.p, replace=False)
                counts = [self.k] * self.p
            for class_index, count in zip(classes, counts):
                members = self.member_arrays[int(class_index)]
                picks = rng.choice(members, size=count, replace=len(members) < count)
                batch.extend(int(i) for i in picks)
            batches.append(batch)
        return batches
