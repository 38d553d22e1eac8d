"""Tests of sdr.losses: hand-computed values, agreement with torch / pytorch-metric-learning, and
the SciToricsBERT objectives against the paper's own equations (paper 004, eqs. 2, 4, 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from pytorch_metric_learning import distances as pml_distances
from pytorch_metric_learning import losses as pml_losses
from pytorch_metric_learning import reducers as pml_reducers

from sdr.losses import (
    SCITORICS_PK,
    GeneralContrastiveLoss,
    HybridLoss,
    TripletMarginLoss,
    metric_learning_loss,
)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny tensors: one thread avoids oversubscribing the shared 2-core machine (5x faster here)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ------------------------------------------------------------------------------ TripletMarginLoss


def _hand_triplets():
    anchor = torch.tensor([[0.0, 0.0], [0.0, 0.0]])
    positive = torch.tensor([[3.0, 4.0], [1.0, 0.0]])  # d(a,p) = 5 and 1
    negative = torch.tensor([[0.0, 1.0], [0.0, 3.0]])  # d(a,n) = 1 and 3
    return anchor, positive, negative


def test_triplet_hand_computed_l2():
    a, p, n = _hand_triplets()
    loss = TripletMarginLoss(margin=1.0, reduction="none")(a, p, n)
    # max(5 - 1 + 1, 0) = 5 ; max(1 - 3 + 1, 0) = 0
    assert torch.allclose(loss, torch.tensor([5.0, 0.0]), atol=1e-5)
    assert TripletMarginLoss()(a, p, n).item() == pytest.approx(2.5, abs=1e-5)
    assert TripletMarginLoss(reduction="sum")(a, p, n).item() == pytest.approx(5.0, abs=1e-5)


def test_triplet_hand_computed_squared_l2():
    a, p, n = _hand_triplets()
    loss = TripletMarginLoss(distance="squared_l2", reduction="none")(a, p, n)
    # 25 - 1 + 1 = 25 ; 1 - 9 + 1 < 0 -> 0
    assert torch.allclose(loss, torch.tensor([25.0, 0.0]))


def test_triplet_per_example_margin_gradation():
    a, p, n = _hand_triplets()
    loss = TripletMarginLoss(reduction="none")(a, p, n, margin=torch.tensor([1.0, 3.0]))
    # second triplet: 1 - 3 + 3 = 1 (CoSaEmb's larger margin makes it active)
    assert torch.allclose(loss, torch.tensor([5.0, 1.0]), atol=1e-5)
    with pytest.raises(ValueError, match="per-example margin"):
        TripletMarginLoss()(a, p, n, margin=torch.tensor([1.0, 2.0, 3.0]))


def test_triplet_matches_torch_loss_values_and_gradients():
    torch.manual_seed(0)
    a, p, n = (torch.randn(16, 8, requires_grad=True) for _ in range(3))
    ours = TripletMarginLoss(margin=1.0)(a, p, n)
    ours.backward()
    ours_grads = [t.grad.clone() for t in (a, p, n)]
    for t in (a, p, n):
        t.grad = None
    reference = torch.nn.TripletMarginLoss(margin=1.0, p=2)(a, p, n)  # SPECTER's loss (eps = 1e-6)
    reference.backward()
    assert ours.item() == pytest.approx(reference.item(), abs=1e-6)
    for mine, theirs in zip(ours_grads, (a.grad, p.grad, n.grad)):
        assert torch.allclose(mine, theirs, atol=1e-6)


def test_triplet_finite_gradient_when_anchor_equals_positive():
    a = torch.ones(2, 4, requires_grad=True)
    loss = TripletMarginLoss()(a, a.detach().clone(), torch.zeros(2, 4))
    loss.backward()
    assert torch.isfinite(a.grad).all()


@pytest.mark.parametrize("distance, power", [("l2", 1), ("squared_l2", 2)])
def test_triplet_matches_pytorch_metric_learning(distance, power):
    torch.manual_seed(1)
    a, p, n = (torch.randn(10, 6) for _ in range(3))
    ours = TripletMarginLoss(margin=0.7, distance=distance, eps=0.0)(a, p, n)
    pml = pml_losses.TripletMarginLoss(
        margin=0.7,
        distance=pml_distances.LpDistance(normalize_embeddings=False, p=2, power=power),
        reducer=pml_reducers.MeanReducer(),
    )
    embeddings = torch.cat([a, p, n])
    rows = torch.arange(10)
    theirs = pml(embeddings, indices_tuple=(rows, rows + 10, rows + 20))
    assert ours.item() == pytest.approx(theirs.item(), abs=1e-4)


def test_triplet_rejects_bad_shapes_and_options():
    with pytest.raises(ValueError, match=r"\[B, D\]"):
        TripletMarginLoss()(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="distance"):
        TripletMarginLoss(distance="cosine")


# ------------------------------------------------------------------------- GeneralContrastiveLoss


def test_general_contrastive_hand_computed():
    anchor = torch.tensor([[1.0, 0.0]])
    positives = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # cosine 1 and 0
    negatives = torch.tensor([[[-1.0, 0.0]]])  # cosine -1
    loss = GeneralContrastiveLoss(temperature=1.0)(anchor, positives, negatives)
    denominator = math.e + 1.0 + math.exp(-1.0)  # eq. 2.6: ALL positives + negatives
    expected = -0.5 * ((1.0 - math.log(denominator)) + (0.0 - math.log(denominator)))
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    # temperature 0.5 doubles every score
    loss_half = GeneralContrastiveLoss(temperature=0.5)(anchor, positives, negatives)
    denominator = math.exp(2) + 1.0 + math.exp(-2)
    assert loss_half.item() == pytest.approx(-0.5 * (2 - 2 * math.log(denominator)), abs=1e-6)


def test_general_contrastive_one_positive_is_infonce_cross_entropy():
    torch.manual_seed(2)
    anchor, positive, negatives = torch.randn(6, 8), torch.randn(6, 1, 8), torch.randn(6, 5, 8)
    ours = GeneralContrastiveLoss(temperature=0.05)(anchor, positive, negatives)
    logits = F.cosine_similarity(anchor.unsqueeze(1), torch.cat([positive, negatives], 1), dim=-1) / 0.05
    reference = F.cross_entropy(logits, torch.zeros(6, dtype=torch.long))
    assert ours.item() == pytest.approx(reference.item(), rel=1e-5)
    # a positive given as [B, D] is the same single positive
    assert GeneralContrastiveLoss(0.05)(anchor, positive[:, 0], negatives).item() == pytest.approx(ours.item())


def test_general_contrastive_masks_equal_unpadded_groups():
    torch.manual_seed(3)
    loss = GeneralContrastiveLoss(temperature=0.1, reduction="none")
    anchor = torch.randn(2, 4)
    positives, negatives = torch.randn(2, 3, 4), torch.randn(2, 4, 4)
    positive_mask = torch.tensor([[True, True, False], [True, True, True]])
    negative_mask = torch.tensor([[True, False, True, False], [True, True, True, True]])
    padded = loss(anchor, positives, negatives, positive_mask, negative_mask)
    first = loss(anchor[:1], positives[:1, :2], negatives[:1, [0, 2]])
    second = loss(anchor[1:], positives[1:], negatives[1:])
    assert torch.allclose(padded, torch.cat([first, second]), atol=1e-6)
    with pytest.raises(ValueError, match="no positive"):
        loss(anchor, positives, negatives, torch.zeros(2, 3, dtype=torch.bool))


def test_general_contrastive_stable_at_low_temperature():
    torch.manual_seed(4)
    anchor = (torch.randn(4, 16) * 50).requires_grad_()
    positives, negatives = torch.randn(4, 2, 16) * 50, torch.randn(4, 5, 16) * 50
    for similarity in ("cosine", "dot"):  # dot products / 0.01 overflow a naive exp
        loss = GeneralContrastiveLoss(temperature=0.01, similarity=similarity)(anchor, positives, negatives)
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(anchor.grad).all()
        anchor.grad = None


def test_general_contrastive_without_negatives():
    anchor = torch.tensor([[1.0, 0.0]])
    positives = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    loss = GeneralContrastiveLoss(temperature=1.0)(anchor, positives)
    denominator = math.e + 1.0
    assert loss.item() == pytest.approx(-0.5 * (1 - 2 * math.log(denominator)), abs=1e-6)


# ------------------------------------------------------------------------------------ HybridLoss


def test_hybrid_loss_weights_global_and_local():
    a, p, n = _hand_triplets()  # triplet loss 2.5 (mean)
    anchor = torch.tensor([[1.0, 0.0]])
    positives = torch.tensor([[[1.0, 0.0]]])
    negatives = torch.tensor([[[-1.0, 0.0]]])
    local_value = -math.log(math.e / (math.e + math.exp(-1)))
    hybrid = HybridLoss(TripletMarginLoss(), GeneralContrastiveLoss(temperature=1.0), alpha=0.7)
    value = hybrid((a, p, n), {"anchor": anchor, "positives": positives, "negatives": negatives})
    assert value.item() == pytest.approx(0.7 * 2.5 + 0.3 * local_value, abs=1e-5)
    assert hybrid.last_components["global"] == pytest.approx(2.5, abs=1e-5)
    # precomputed scalar losses pass straight through
    assert hybrid(torch.tensor(1.0), torch.tensor(3.0)).item() == pytest.approx(0.7 + 0.9)
    with pytest.raises(ValueError, match="alpha"):
        HybridLoss(TripletMarginLoss(), TripletMarginLoss(), alpha=1.5)


# --------------------------------------------------------------------- SciToricsBERT's objectives


def _toy_batch(seed: int = 0, classes: int = 4, per_class: int = 8, dim: int = 8):
    generator = torch.Generator().manual_seed(seed)
    centres = torch.eye(dim)[:classes] * 3.0
    labels = torch.arange(classes).repeat_interleave(per_class)
    points = centres[labels] + 0.3 * torch.randn(len(labels), dim, generator=generator)
    return points, labels


@pytest.mark.parametrize("name", ["softmax", "triplet", "arcface", "multi_similarity", "ntxent"])
def test_metric_learning_losses_decrease_on_separable_data(name):
    torch.manual_seed(0)
    points, labels = _toy_batch()
    model = torch.nn.Linear(8, 16)
    loss_fn = metric_learning_loss(name, num_classes=4, embedding_size=16)
    parameters = list(model.parameters()) + list(loss_fn.parameters())  # softmax/ArcFace own class weights
    values = []
    for _ in range(12):  # plain SGD steps (torch.optim would import torch._dynamo: seconds, no value here)
        loss = loss_fn(model(points), labels)
        gradients = torch.autograd.grad(loss, parameters, allow_unused=True)
        with torch.no_grad():
            for parameter, gradient in zip(parameters, gradients):
                if gradient is not None:
                    parameter -= 0.5 * gradient
        values.append(loss.item())
    assert all(math.isfinite(v) for v in values)
    # MS loss has a floor near 0.83 here (positives' term at cosine 1), so ask for a clear drop only
    assert values[-1] < values[0] - 0.02, values


def test_metric_learning_settings_follow_the_paper():
    arcface = metric_learning_loss("arcface", num_classes=5, embedding_size=8)
    assert arcface.loss.margin == pytest.approx(0.5)  # PML stores radians after converting degrees
    assert arcface.loss.scale == 16
    ms = metric_learning_loss("multi_similarity")
    assert (ms.loss.alpha, ms.loss.beta, ms.loss.base) == (2.0, 40.0, 0.75)
    assert metric_learning_loss("ntxent").loss.temperature == 0.1
    assert metric_learning_loss("triplet").loss.margin == 0.05
    assert SCITORICS_PK["softmax"] == (64, 1) and SCITORICS_PK["ntxent"] == (8, 8)
    from pytorch_metric_learning.miners import TripletMarginMiner

    points, labels = _toy_batch()
    mined = metric_learning_loss("triplet", miner=TripletMarginMiner(margin=0.05, type_of_triplets="all"))
    assert mined.settings["miner"] == "TripletMarginMiner"
    # the miner keeps the violating triplets: the same value as all triplets with the non-zero average
    all_triplets = metric_learning_loss("triplet")(points * 0.1, labels)
    assert mined(points * 0.1, labels).item() == pytest.approx(all_triplets.item())
    with pytest.raises(ValueError, match="miner"):
        metric_learning_loss("ntxent", miner=TripletMarginMiner())
    with pytest.raises(ValueError, match="unknown loss"):
        metric_learning_loss("contrastive")
    with pytest.raises(ValueError, match="num_classes"):
        metric_learning_loss("softmax")


def _pairs(labels):
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(labels), dtype=torch.bool)
    return same & ~eye, ~same


def test_triplet_matches_paper_eq2_all_triplets_nonzero_average():
    labels = torch.arange(3).repeat_interleave(3)
    points = torch.randn(9, 4, generator=torch.Generator().manual_seed(5))  # unclustered: active triplets
    x = F.normalize(points, dim=1)
    dist = torch.cdist(x, x)
    positive, negative = _pairs(labels)
    terms = []
    for a in range(len(labels)):
        for p in torch.nonzero(positive[a]).flatten():
            for n in torch.nonzero(negative[a]).flatten():
                terms.append(torch.clamp(dist[a, p] - dist[a, n] + 0.05, min=0))
    terms = torch.stack(terms)
    assert (terms > 0).any() and (terms == 0).any()  # both kinds, so the averaging rule matters
    expected = terms[terms > 0].mean()  # eq. 2: averaged over the K triplets with positive loss
    value = metric_learning_loss("triplet")(points, labels)
    assert value.item() == pytest.approx(expected.item(), abs=1e-5)


def test_multi_similarity_matches_paper_eq4():
    points, labels = _toy_batch(seed=6, classes=3, per_class=3, dim=4)
    points = points + torch.randn_like(points)
    s = F.normalize(points, dim=1) @ F.normalize(points, dim=1).T
    positive, negative = _pairs(labels)
    alpha, beta, lam = 2.0, 40.0, 0.75
    per_anchor = [
        (1 / alpha) * torch.log(1 + torch.exp(-alpha * (s[i][positive[i]] - lam)).sum())
        + (1 / beta) * torch.log(1 + torch.exp(beta * (s[i][negative[i]] - lam)).sum())
        for i in range(len(labels))
    ]
    expected = torch.stack(per_anchor).mean()
    assert metric_learning_loss("multi_similarity")(points, labels).item() == pytest.approx(expected.item(), rel=1e-4)


def test_ntxent_matches_paper_eq5():
    points, labels = _toy_batch(seed=7, classes=3, per_class=3, dim=4)
    points = points + torch.randn_like(points)
    s = F.normalize(points, dim=1) @ F.normalize(points, dim=1).T
    positive, negative = _pairs(labels)
    t = 0.1
    terms = []
    for i, j in torch.nonzero(positive).tolist():
        numerator = torch.exp(s[i, j] / t)
        terms.append(-torch.log(numerator / (numerator + torch.exp(s[i][negative[i]] / t).sum())))
    expected = torch.stack(terms).mean()
    assert metric_learning_loss("ntxent")(points, labels).item() == pytest.approx(expected.item(), rel=1e-4)


# ------------------------------------------- the four SciToricsBERT losses on one 4-example batch, by hand
# Two classes, two examples each, in 2-D so every cosine is simple; the expected values are the papers'
# formulas written out in numpy here, never computed by the library under test.

FOUR = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 2.0], [-0.8, 0.6]])
FOUR_LABELS = np.array([0, 0, 1, 1])


def _cosines(x: np.ndarray) -> np.ndarray:
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    return unit @ unit.T


def _cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_softmax[np.arange(len(labels)), labels].mean())


def test_four_example_cosines_are_the_hand_values():
    # cos(x0, x1) = 0.6, cos(x0, x2) = 0, cos(x1, x2) = 0.8, cos(x2, x3) = 0.6, cos(x0, x3) = -0.8, cos(x1, x3) = 0
    expected = np.array([[1, 0.6, 0, -0.8], [0.6, 1, 0.8, 0], [0, 0.8, 1, 0.6], [-0.8, 0, 0.6, 1]])
    np.testing.assert_allclose(_cosines(FOUR), expected, atol=1e-12)


def test_softmax_cross_entropy_four_examples_by_hand():
    loss = metric_learning_loss("softmax", num_classes=2, embedding_size=2).double()
    weight, bias = np.array([[2.0, -1.0], [-0.5, 1.5]]), np.array([0.1, -0.2])
    with torch.no_grad():
        loss.loss.classifier.weight.copy_(torch.tensor(weight))
        loss.loss.classifier.bias.copy_(torch.tensor(bias))
    logits = FOUR @ weight.T + bias  # eq. 1: W x + b, then cross-entropy on the label
    # row 0: logits (2.1, -0.7) -> -log softmax_0 = log(1 + e^-2.8)
    assert _cross_entropy(logits[:1], FOUR_LABELS[:1]) == pytest.approx(math.log(1 + math.exp(-2.8)))
    value = loss(torch.tensor(FOUR, dtype=torch.float64), torch.tensor(FOUR_LABELS))
    assert value.item() == pytest.approx(_cross_entropy(logits, FOUR_LABELS), rel=1e-12)


def test_arcface_four_examples_by_hand():
    margin, scale = 0.5, 16.0  # paper 004, Table 6: m = 0.5 rad, s = 16
    loss = metric_learning_loss("arcface", num_classes=2, embedding_size=2)
    class_weights = np.array([[1.0, 1.0], [0.0, 1.0]])  # PML stores W as [embedding_size, num_classes]
    with torch.no_grad():
        loss.loss.W.copy_(torch.tensor(class_weights, dtype=loss.loss.W.dtype))
    unit = FOUR / np.linalg.norm(FOUR, axis=1, keepdims=True)
    centres = class_weights / np.linalg.norm(class_weights, axis=0, keepdims=True)
    cosine = unit @ centres  # cos θ_j between each example and each class centre
    target = np.zeros_like(cosine, dtype=bool)
    target[np.arange(4), FOUR_LABELS] = True
    # eq. 3: the target logit is s·cos(θ_y + m), the others s·cos θ_j
    logits = scale * np.where(target, np.cos(np.arccos(np.clip(cosine, -1, 1)) + margin), cosine)
    expected = _cross_entropy(logits, FOUR_LABELS)
    value = loss(torch.tensor(FOUR, dtype=torch.float32), torch.tensor(FOUR_LABELS))
    assert value.item() == pytest.approx(expected, rel=1e-4)
    assert expected > _cross_entropy(scale * cosine, FOUR_LABELS)  # the margin makes the target harder


def test_multi_similarity_four_examples_by_hand():
    alpha, beta, lam = 2.0, 40.0, 0.75  # paper 004, Table 6
    s = _cosines(FOUR)
    # each anchor has one positive (its class mate) and two negatives
    positives = {0: [1], 1: [0], 2: [3], 3: [2]}
    negatives = {0: [2, 3], 1: [2, 3], 2: [0, 1], 3: [0, 1]}
    per_anchor = [
        np.log1p(sum(np.exp(-alpha * (s[i, p] - lam)) for p in positives[i])) / alpha
        + np.log1p(sum(np.exp(beta * (s[i, n] - lam)) for n in negatives[i])) / beta
        for i in range(4)
    ]
    # anchor 0: positive cos 0.6, negatives cos 0 and -0.8
    assert per_anchor[0] == pytest.approx(math.log(1 + math.exp(-2 * (0.6 - 0.75))) / 2
                                          + math.log(1 + math.exp(40 * -0.75) + math.exp(40 * -1.55)) / 40)
    value = metric_learning_loss("multi_similarity")(torch.tensor(FOUR, dtype=torch.float64), torch.tensor(FOUR_LABELS))
    assert value.item() == pytest.approx(float(np.mean(per_anchor)), rel=1e-6)


def test_ntxent_four_examples_by_hand():
    t = 0.1  # paper 004, Table 6
    s = _cosines(FOUR)
    pairs = [(0, 1), (1, 0), (2, 3), (3, 2)]  # the positive pairs; the other class gives the negatives
    negatives = {0: [2, 3], 1: [2, 3], 2: [0, 1], 3: [0, 1]}
    terms = [-np.log(np.exp(s[i, j] / t) / (np.exp(s[i, j] / t) + sum(np.exp(s[i, n] / t) for n in negatives[i])))
             for i, j in pairs]
    # pair (0, 1): cos 0.6 against negatives cos 0 and -0.8
    assert terms[0] == pytest.approx(-math.log(math.exp(6) / (math.exp(6) + 1 + math.exp(-8))))
    value = metric_learning_loss("ntxent")(torch.tensor(FOUR, dtype=torch.float64), torch.tensor(FOUR_LABELS))
    assert value.item() == pytest.approx(float(np.mean(terms)), rel=1e-6)
