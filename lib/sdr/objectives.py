"""What a method contributes to training: an *objective*, ``objective(encoder, examples) -> loss``.

SPECTER's triplet objective and SPECTERCL's contrastive one live here (the method modules define their own:
SciAspect's aspect heads, SciToricsBERT's metric-learning losses), with :func:`evaluate_loss`, the
dropout-free mean of an objective that chapters report before and after training.

An objective may declare ``example_wise = True`` (its loss is a mean of per-example terms: the trainer may
call it once per optimizer step) and ``encoder_inputs(examples) -> texts`` (the texts a call embeds: the
trainer prepares the next step's on a worker thread). Tensors an objective builds from its examples on the
host go to the device with :func:`sdr.encoders.copy_to_device` (page-locked, non-blocking on CUDA).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
from tqdm.auto import tqdm

from sdr.encoders import Encoder, copy_to_device
from sdr.losses import GeneralContrastiveLoss, TripletMarginLoss


@torch.no_grad()
def evaluate_loss(encoder: Encoder, examples: Sequence, objective: Callable, batch_size: int = 32,
                  progress: bool = False) -> float:
    """Mean objective over ``examples`` in eval mode (no dropout): a deterministic before/after measure."""
    if len(examples) == 0:
        raise ValueError("evaluate_loss: no examples")
    was_training = encoder.training
    encoder.eval()
    total = 0.0
    for start in tqdm(range(0, len(examples), batch_size), desc="loss", disable=not progress):
        batch = examples[start:start + batch_size]
        total += objective(encoder, batch).item() * len(batch)
    encoder.train(was_training)
    return total / len(examples)


class TripletObjective:
    """SPECTER's objective: embed (query, positive, negative) texts, triplet loss (L2, margin 1).

    ``examples`` are :class:`sdr.samplers.Triplet`; ``texts`` maps a paper id to its input text. A
    triplet's own ``margin`` (CoSaEmb's margin gradation) is used when the loss is built with
    ``per_example_margin=True``.

    ``example_wise = True`` tells the trainer the loss is a mean of per-triplet terms, so it may call the
    objective once per optimizer step (each distinct paper encoded once per step) with the same gradient.
    """

    example_wise = True

    def __init__(self, texts: Mapping[str, str], loss: TripletMarginLoss | None = None,
                 per_example_margin: bool = False):
        self.texts = texts
        self.loss = loss or TripletMarginLoss(margin=1.0, distance="l2")
        self.per_example_margin = per_example_margin

    def encoder_inputs(self, triplets: Sequence) -> list[str]:
        """The texts a call embeds, in order (the trainer prepares the next step's on a worker thread)."""
        ids = [t.query for t in triplets] + [t.positive for t in triplets] + [t.negative for t in triplets]
        return [self.texts[i] for i in ids]

    def __call__(self, encoder: Encoder, triplets: Sequence) -> torch.Tensor:
        n = len(triplets)
        embeddings = encoder(self.encoder_inputs(triplets))  # one forward pass for the whole batch
        anchor, positive, negative = embeddings[:n], embeddings[n:2 * n], embeddings[2 * n:]
        margin = None
        if self.per_example_margin:
            margin = copy_to_device(torch.tensor([t.margin for t in triplets], dtype=anchor.dtype), anchor.device)
        return self.loss(anchor, positive, negative, margin=margin)


class ContrastiveObjective:
    """SPECTERCL's objective: one anchor, P positives and N negatives per example, general contrastive
    loss with temperature (thesis eq. 2.6). ``examples`` are :class:`sdr.samplers.ContrastiveExample`.
    Each example brings its own negatives (no in-batch negatives), so the loss is example-wise."""

    example_wise = True

    def __init__(self, texts: Mapping[str, str], loss: GeneralContrastiveLoss | None = None):
        self.texts = texts
        self.loss = loss or GeneralContrastiveLoss(temperature=0.05)

    @staticmethod
    def _layout(examples: Sequence) -> tuple[list[str], list[list[int]], list[list[int]], int, int]:
        """Paper ids in embedding order (ragged groups padded with the anchor) and the masks of real ones."""
        n_pos = max(len(e.positives) for e in examples)
        n_neg = max(len(e.negatives) for e in examples)
        ids, pos_mask, neg_mask = [], [], []
        for e in examples:  # pad ragged groups with the anchor and mask the padding out
            ids.append(e.query)
            ids += list(e.positives) + [e.query] * (n_pos - len(e.positives))
            ids += list(e.negatives) + [e.query] * (n_neg - len(e.negatives))
            pos_mask.append([1] * len(e.positives) + [0] * (n_pos - len(e.positives)))
            neg_mask.append([1] * len(e.negatives) + [0] * (n_neg - len(e.negatives)))
        return ids, pos_mask, neg_mask, n_pos, n_neg

    def encoder_inputs(self, examples: Sequence) -> list[str]:
        """The texts a call embeds, in order (the trainer prepares the next step's on a worker thread)."""
        return [self.texts[i] for i in self._layout(examples)[0]]

    def __call__(self, encoder: Encoder, examples: Sequence) -> torch.Tensor:
        ids, pos_mask, neg_mask, n_pos, n_neg = self._layout(examples)
        embeddings = encoder([self.texts[i] for i in ids]).view(len(examples), 1 + n_pos + n_neg, -1)
        device = embeddings.device
        return self.loss(embeddings[:, 0], embeddings[:, 1:1 + n_pos], embeddings[:, 1 + n_pos:],
                         positive_mask=copy_to_device(torch.tensor(pos_mask, dtype=torch.bool), device),
                         negative_mask=copy_to_device(torch.tensor(neg_mask, dtype=torch.bool), device))
