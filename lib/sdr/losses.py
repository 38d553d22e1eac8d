"""Training objectives of the reproduced methods, one class per loss.

Like ``sentence_transformers.losses``, every class is a ``torch.nn.Module`` whose docstring cites the
paper it implements and states the input shapes it expects:

* :class:`TripletMarginLoss` — SPECTER (Cohan et al. 2020) / SciNCL eq. 3.1 / thesis eq. 2.4, with an
  optional per-example margin for CoSaEmb's margin gradation (inter-doc 1 < global 2 < local 3).
* :class:`GeneralContrastiveLoss` — the thesis' general (SupCon-style) contrastive loss, eq. 2.6 / 5.1,
  used by SPECTERCL, SciAspect, SciAspectHybrid and SciAspectL2.
* :class:`HybridLoss` — SciAspectHybrid, thesis eq. 5.4: ``alpha * global + (1 - alpha) * local``.
* :func:`metric_learning_loss` — SciToricsBERT's five objectives (paper 004 §3.2, Appendix B, Table 6),
  built on pytorch-metric-learning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "TripletMarginLoss",
    "GeneralContrastiveLoss",
    "HybridLoss",
    "SoftmaxCrossEntropyLoss",
    "MetricLearningLoss",
    "metric_learning_loss",
    "METRIC_LEARNING_LOSSES",
    "SCITORICS_SETTINGS",
    "SCITORICS_PK",
]

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(losses: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


class TripletMarginLoss(nn.Module):
    """Triplet margin loss ``max(d(a, p) - d(a, n) + m, 0)``.

    SPECTER (Cohan et al. 2020) trains with ``torch.nn.TripletMarginLoss(margin=1)`` — L2 distance,
    margin 1 (allenai/specter ``specter/model.py``); SciNCL keeps it (§3.1, ξ = 1); the thesis' Exp. 1
    uses it as eq. 2.4. CoSaEmb (Singh & Singh, §3.4) grades the margin by triplet type
    (inter-document 1, global 2, local 3): pass ``margin`` as a tensor ``[B]`` to :meth:`forward`.

    Shapes: ``anchor``, ``positive``, ``negative`` are ``[B, D]``; ``margin`` is a float or ``[B]``.
    Output: a scalar (``reduction="mean"|"sum"``) or ``[B]`` (``"none"``).

    ``distance="l2"`` uses ``F.pairwise_distance`` with the same ``eps`` (1e-6, added to the difference
    inside the norm) as ``torch.nn.TripletMarginLoss``, so values and gradients match SPECTER's loss
    exactly and the gradient stays finite when ``a == p``. ``distance="squared_l2"`` uses
    ``||a - p||²`` (no eps needed).
    """

    def __init__(self, margin: float = 1.0, distance: str = "l2", reduction: str = "mean", eps: float = 1e-6):
        super().__init__()
        if distance not in ("l2", "squared_l2"):
            raise ValueError(f"TripletMarginLoss: distance must be 'l2' or 'squared_l2', got {distance!r}")
        if reduction not in _REDUCTIONS:
            raise ValueError(f"TripletMarginLoss: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        self.margin = float(margin)
        self.distance = distance
        self.reduction = reduction
        self.eps = float(eps)

    def distances(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Row-wise distance ``d(x_i, y_i)`` → ``[B]``."""
        if self.distance == "l2":
            return F.pairwise_distance(x, y, p=2.0, eps=self.eps)
        return (x - y).pow(2).sum(dim=-1)

    def forward(
        self,
        anchor: torch.Tensor,
        positive: torch.Tensor,
        negative: torch.Tensor,
        margin: float | torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Loss over a batch of triplets; ``margin`` overrides the constructor's (float or ``[B]``)."""
        if anchor.dim() != 2 or anchor.shape != positive.shape or anchor.shape != negative.shape:
            raise ValueError(
                "TripletMarginLoss: expected anchor, positive, negative of equal shape [B, D]; got "
                f"{tuple(anchor.shape)}, {tuple(positive.shape)}, {tuple(negative.shape)}"
            )
        if margin is None:
            margin = self.margin
        if isinstance(margin, torch.Tensor):
            margin = margin.to(device=anchor.device, dtype=anchor.dtype, non_blocking=True)  # a host margin: no wait
            if margin.dim() != 0 and margin.shape != (anchor.shape[0],):
                raise ValueError(
                    f"TripletMarginLoss: per-example margin must have shape [B]=({anchor.shape[0]},), "
                    f"got {tuple(margin.shape)}"
                )
        losses = torch.clamp(self.distances(anchor, positive) - self.distances(anchor, negative) + margin, min=0.0)
        return _reduce(losses, self.reduction)


class GeneralContrastiveLoss(nn.Module):
    """General contrastive loss with several positives and negatives (thesis eq. 2.6 / 5.1).

    For one anchor ``a`` with positives ``P(a)`` and negatives ``N(a)`` (Bansal, §2.3 and §5.2, after
    Khosla et al.'s SupCon)::

        L(a) = -1/|P(a)| Σ_{p∈P(a)} log( exp(s(a,p)/τ) /
                                         (Σ_{p'∈P(a)} exp(s(a,p')/τ) + Σ_{n∈N(a)} exp(s(a,n)/τ)) )

    The denominator contains *all* positives, as written in eq. 2.6 (not only the current one);
    with one positive it is the N-pairs / InfoNCE loss of eq. 2.5, i.e. cross-entropy over
    ``[pos, negs]`` with the positive as target. The batch loss is the mean of ``L(a)``.

    Shapes: ``anchor [B, D]``, ``positives [B, P, D]``, ``negatives [B, N, D]`` (N may be 0);
    ``positive_mask [B, P]`` and ``negative_mask [B, N]`` (bool, True = real item) allow variable
    counts per anchor (padding rows are ignored). Every anchor needs at least one positive.
    ``similarity``: ``"cosine"`` (the thesis) or ``"dot"``. τ = 0.05 was the thesis' best (Table 6.2).
    Computed with ``logsumexp`` so τ = 0.01 stays finite.
    """

    def __init__(self, temperature: float = 0.05, similarity: str = "cosine", reduction: str = "mean"):
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"GeneralContrastiveLoss: temperature must be > 0, got {temperature}")
        if similarity not in ("cosine", "dot"):
            raise ValueError(f"GeneralContrastiveLoss: similarity must be 'cosine' or 'dot', got {similarity!r}")
        if reduction not in _REDUCTIONS:
            raise ValueError(f"GeneralContrastiveLoss: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        self.temperature = float(temperature)
        self.similarity = similarity
        self.reduction = reduction

    def scores(self, anchor: torch.Tensor, others: torch.Tensor) -> torch.Tensor:
        """``s(a, x) / τ`` for ``anchor [B, D]`` and ``others [B, M, D]`` → ``[B, M]``."""
        if self.similarity == "cosine":
            sims = F.cosine_similarity(anchor.unsqueeze(1), others, dim=-1, eps=1e-8)
        else:
            sims = torch.einsum("bd,bmd->bm", anchor, others)
        return sims / self.temperature

    def forward(
        self,
        anchor: torch.Tensor,
        positives: torch.Tensor,
        negatives: torch.Tensor | None = None,
        positive_mask: torch.Tensor | None = None,
        negative_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Loss for a batch of (anchor, positives, negatives) groups; see the class docstring."""
        if anchor.dim() != 2:
            raise ValueError(f"GeneralContrastiveLoss: anchor must be [B, D], got {tuple(anchor.shape)}")
        batch, dim = anchor.shape
        if positives.dim() == 2:  # one positive per anchor given as [B, D]
            positives = positives.unsqueeze(1)
        if positives.dim() != 3 or positives.shape[0] != batch or positives.shape[2] != dim:
            raise ValueError(
                f"GeneralContrastiveLoss: positives must be [B={batch}, P, D={dim}], got {tuple(positives.shape)}"
            )
        if negatives is None:
            negatives = anchor.new_zeros((batch, 0, dim))
        if negatives.dim() != 3 or negatives.shape[0] != batch or negatives.shape[2] != dim:
            raise ValueError(
                f"GeneralContrastiveLoss: negatives must be [B={batch}, N, D={dim}], got {tuple(negatives.shape)}"
            )
        pos_mask = self._mask(positive_mask, positives.shape[:2], anchor.device, "positive_mask")
        neg_mask = self._mask(negative_mask, negatives.shape[:2], anchor.device, "negative_mask")
        n_positives = pos_mask.sum(dim=1)
        if bool((n_positives == 0).any()):
            rows = torch.nonzero(n_positives == 0).flatten().tolist()[:5]
            raise ValueError(f"GeneralContrastiveLoss: anchors {rows} have no positive (positive_mask all False)")

        pos_scores, neg_scores = self.scores(anchor, positives), self.scores(anchor, negatives)
        # padding gets the dtype's lowest value (not -inf, which would make 0 * inf = nan in backward)
        pos_scores = pos_scores.masked_fill(~pos_mask, torch.finfo(pos_scores.dtype).min)
        neg_scores = neg_scores.masked_fill(~neg_mask, torch.finfo(neg_scores.dtype).min)
        # log of the eq. 2.6 denominator: all positives and all negatives of the anchor
        log_denominator = torch.logsumexp(torch.cat([pos_scores, neg_scores], dim=1), dim=1, keepdim=True)
        log_probs = (pos_scores - log_denominator).masked_fill(~pos_mask, 0.0)
        losses = -log_probs.sum(dim=1) / n_positives.to(anchor.dtype)
        return _reduce(losses, self.reduction)

    @staticmethod
    def _mask(mask: torch.Tensor | None, shape: torch.Size, device: torch.device, name: str) -> torch.Tensor:
        if mask is None:
            return torch.ones(tuple(shape), dtype=torch.bool, device=device)
        if tuple(mask.shape) != tuple(shape):
            raise ValueError(f"GeneralContrastiveLoss: {name} must have shape {tuple(shape)}, got {tuple(mask.shape)}")
        return mask.to(device=device, dtype=torch.bool, non_blocking=True)  # a host mask: no wait


def _call_loss(loss: nn.Module, inputs: Any) -> torch.Tensor:
    """Evaluate ``loss`` on positional (tuple/list) or keyword (mapping) inputs, or pass a value through."""
    if isinstance(inputs, torch.Tensor):
        if inputs.dim() != 0:
            raise ValueError(
                f"HybridLoss: a precomputed loss must be a scalar tensor, got shape {tuple(inputs.shape)}"
            )
        return inputs
    if isinstance(inputs, Mapping):
        return loss(**inputs)
    if isinstance(inputs, Sequence):
        return loss(*inputs)
    raise TypeError(f"HybridLoss: inputs must be a tuple, a dict or a scalar loss tensor, got {type(inputs).__name__}")


class HybridLoss(nn.Module):
    """SciAspectHybrid's weighted loss, thesis eq. 5.4: ``α · L_global + (1 − α) · L_local``.

    ``global_loss`` is the SPECTERCL-style loss (positives: direct citations, negatives:
    references-of-references) and ``local_loss`` the aspect-space SciAspect loss (negatives: papers
    linked in a different aspect); α = 0.7 in the thesis (§5.4, ablation 0.5–0.9 in Table 6.6).

    :meth:`forward` takes the inputs of each loss as a tuple (positional), a dict (keywords) or an
    already computed scalar loss. The last two components are kept in ``last_components`` for logging.
    """

    def __init__(self, global_loss: nn.Module, local_loss: nn.Module, alpha: float = 0.7):
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"HybridLoss: alpha must be in [0, 1], got {alpha}")
        self.global_loss = global_loss
        self.local_loss = local_loss
        self.alpha = float(alpha)
        self.last_components: dict[str, float] = {}

    def forward(self, global_inputs: Any, local_inputs: Any) -> torch.Tensor:
        """``alpha * global_loss(*global_inputs) + (1 - alpha) * local_loss(*local_inputs)``."""
        global_value = _call_loss(self.global_loss, global_inputs)
        local_value = _call_loss(self.local_loss, local_inputs)
        self.last_components = {"global": float(global_value.detach()), "local": float(local_value.detach())}
        return self.alpha * global_value + (1.0 - self.alpha) * local_value


# --------------------------------------------------------------------------- SciToricsBERT (paper 004)


class SoftmaxCrossEntropyLoss(nn.Module):
    """SciToricsBERT's softmax cross-entropy loss (paper 004, eq. 1): a linear classifier ``W x + b``
    over the communicative-function labels, trained with cross-entropy.

    Shapes: ``embeddings [N, d]``, ``labels [N]`` (integers in ``[0, num_classes)``). The classifier's
    weights are parameters of this module: give them to the optimizer too.
    """

    def __init__(self, num_classes: int, embedding_size: int):
        super().__init__()
        self.classifier = nn.Linear(embedding_size, num_classes)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of the linear classifier's logits."""
        return F.cross_entropy(self.classifier(embeddings), labels)


class MetricLearningLoss(nn.Module):
    """A pytorch-metric-learning loss (and optional miner) behind ``forward(embeddings, labels)``.

    Built by :func:`metric_learning_loss`; ``name`` and ``settings`` record what was built.
    """

    def __init__(self, name: str, loss: nn.Module, miner: nn.Module | None = None, settings: dict | None = None):
        super().__init__()
        self.name = name
        self.loss = loss
        self.miner = miner
        self.settings = dict(settings or {})

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Loss of a labelled batch ``embeddings [N, d]``, ``labels [N]``."""
        if embeddings.dim() != 2 or labels.dim() != 1 or labels.shape[0] != embeddings.shape[0]:
            raise ValueError(
                f"{self.name} loss: expected embeddings [N, d] and labels [N]; got "
                f"{tuple(embeddings.shape)} and {tuple(labels.shape)}"
            )
        if self.miner is None:
            return self.loss(embeddings, labels)
        return self.loss(embeddings, labels, self.miner(embeddings, labels))


#: The settings SciToricsBERT reports (paper 004, Table 6, values marked •).
SCITORICS_SETTINGS: dict[str, dict[str, float]] = {
    "softmax": {},
    "triplet": {"margin": 0.05},
    "arcface": {"margin_radians": 0.5, "scale": 16.0},
    "multi_similarity": {"alpha": 2.0, "beta": 40.0, "base": 0.75},
    "ntxent": {"temperature": 0.1},
}

#: SciToricsBERT's PK batches (paper 004, Appendix B): P classes × K examples per batch.
SCITORICS_PK: dict[str, tuple[int, int]] = {
    "softmax": (64, 1),
    "arcface": (64, 1),
    "triplet": (8, 8),
    "multi_similarity": (8, 8),
    "ntxent": (8, 8),
}

METRIC_LEARNING_LOSSES = tuple(SCITORICS_SETTINGS)


def metric_learning_loss(
    name: str, num_classes: int | None = None, embedding_size: int | None = None, **kw: Any
) -> MetricLearningLoss:
    """Build one of SciToricsBERT's objectives (Sugimoto & Aizawa, paper 004 §3.2, App. B, Table 6).

    ``name`` ∈ ``"softmax" | "triplet" | "arcface" | "multi_similarity" | "ntxent"``; defaults are the
    paper's chosen values, overridable by keyword:

    * ``softmax`` — linear classifier + cross-entropy (eq. 1); needs ``num_classes``, ``embedding_size``.
    * ``triplet`` — ``pml.losses.TripletMarginLoss(margin=0.05)``. The paper uses *all* in-batch
      triplets "without negative sampling" (footnote 5) and averages over the K triplets with positive
      loss (eq. 2): that is PML's default (no miner = all triplets; ``AvgNonZeroReducer``). PML's default
      distance is L2 between unit-normalised embeddings, which the paper's margin grid (0.025–0.4)
      presupposes. Pass ``miner=<a PML miner>`` to mine instead (e.g. ``TripletMarginMiner``).
    * ``arcface`` — ``pml.losses.ArcFaceLoss``, m = 0.5 rad, s = 16 (eq. 3). PML takes the margin in
      *degrees*, so ``margin_radians`` is converted; needs ``num_classes``, ``embedding_size``.
    * ``multi_similarity`` — ``pml.losses.MultiSimilarityLoss(alpha=2, beta=40, base=λ=0.75)`` (eq. 4).
    * ``ntxent`` — ``pml.losses.NTXentLoss(temperature=0.1)`` (eq. 5).

    Returns a module with ``forward(embeddings [N, d], labels [N]) -> loss``. The softmax and ArcFace
    modules own trainable class weights: include ``loss.parameters()`` in the optimizer.
    """
    from pytorch_metric_learning import losses as pml_losses

    if name not in SCITORICS_SETTINGS:
        raise ValueError(f"metric_learning_loss: unknown loss {name!r}; expected one of {METRIC_LEARNING_LOSSES}")
    settings: dict[str, Any] = {**SCITORICS_SETTINGS[name], **kw}
    miner = settings.pop("miner", None)
    if miner is not None and name != "triplet":
        raise ValueError(f"metric_learning_loss: a miner is only used with 'triplet', not {name!r}")

    if name in ("softmax", "arcface"):
        if num_classes is None or embedding_size is None:
            raise ValueError(f"metric_learning_loss({name!r}) needs num_classes and embedding_size")
        if num_classes < 2 or embedding_size < 1:
            raise ValueError(
                f"metric_learning_loss({name!r}): num_classes must be >= 2 and embedding_size >= 1, "
                f"got {num_classes} and {embedding_size}"
            )

    if name == "softmax":
        if settings:
            raise ValueError(f"metric_learning_loss('softmax') takes no options, got {sorted(settings)}")
        loss: nn.Module = SoftmaxCrossEntropyLoss(num_classes, embedding_size)
    elif name == "triplet":
        loss = pml_losses.TripletMarginLoss(**settings)
    elif name == "arcface":
        if "margin" in settings:
            raise ValueError("metric_learning_loss('arcface'): give the margin as margin_radians (PML uses degrees)")
        margin_radians = settings.pop("margin_radians")
        margin_degrees = math.degrees(margin_radians)
        loss = pml_losses.ArcFaceLoss(num_classes, embedding_size, margin=margin_degrees, **settings)
        settings.update(margin_radians=margin_radians, margin_degrees=margin_degrees)
    elif name == "multi_similarity":
        loss = pml_losses.MultiSimilarityLoss(**settings)
    else:  # ntxent
        loss = pml_losses.NTXentLoss(**settings)
    if miner is not None:
        settings["miner"] = type(miner).__name__
    return MetricLearningLoss(name, loss, miner, settings)
