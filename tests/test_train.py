"""Tests of :mod:`sdr.train`: reproducibility, checkpoint + resume, schedules, accumulation, objectives.

All runs use a 1-layer cut of the offline all-MiniLM-L6-v2 (max_length 32) on CPU and a handful of
hand-written papers, so every run is a few optimizer steps. CPU float32 training is bit-reproducible for
a seed (the trainer seeds Python, NumPy and torch; batches are a pure function of seed and epoch), which
is what lets these tests use exact equality (``torch.equal``) on the weights.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from sdr.encoders import Encoder
from sdr.losses import GeneralContrastiveLoss, TripletMarginLoss
from sdr.samplers import ContrastiveExample, Triplet
from sdr.train import (
    ContrastiveObjective,
    StopTraining,
    TrainConfig,
    TripletObjective,
    evaluate_loss,
    make_schedule,
    train,
)
from training_toy import TEXTS, TRIPLETS
from training_toy import toy_config as _config





def _weights(encoder: Encoder) -> dict[str, torch.Tensor]:
    return {name: parameter.detach().clone() for name, parameter in encoder.named_parameters()}


def _assert_same_weights(first: Encoder, second: Encoder) -> None:
    one, two = _weights(first), _weights(second)
    assert one.keys() == two.keys()
    different = [name for name in one if not torch.equal(one[name], two[name])]
    assert not different, f"parameters differ: {different[:5]}"


def _triplet_accuracy(embeddings: np.ndarray, order: list[str]) -> float:
    """Share of triplets whose positive is closer (L2) to the query than the negative."""
    index = {pid: i for i, pid in enumerate(order)}
    hits = [np.linalg.norm(embeddings[index[t.query]] - embeddings[index[t.positive]])
            < np.linalg.norm(embeddings[index[t.query]] - embeddings[index[t.negative]]) for t in TRIPLETS]
    return float(np.mean(hits))


# --------------------------------------------------------------------------------------- reproducibility
def test_same_seed_twice_gives_identical_history_and_weights(fresh_tiny_encoder):
    initial = _weights(fresh_tiny_encoder())
    first, second, other = fresh_tiny_encoder(), fresh_tiny_encoder(), fresh_tiny_encoder()
    objective = TripletObjective(TEXTS)
    result_1 = train(first, TRIPLETS, objective, _config())
    result_2 = train(second, TRIPLETS, objective, _config())

    assert result_1.steps == 6 and result_1.resumed_from_step == 0 and result_1.model_dir is None
    pd.testing.assert_frame_equal(result_1.history, result_2.history, check_exact=True)
    _assert_same_weights(first, second)
    # training really moved the weights (so equality above is not trivial)
    assert any(not torch.equal(initial[n], p) for n, p in first.named_parameters())

    history = result_1.history
    assert list(history.columns) == ["epoch", "step", "loss", "learning_rate"]
    assert history["step"].tolist() == [1, 2, 3, 4, 5, 6] and history["epoch"].tolist() == [0, 0, 0, 1, 1, 1]
    # warm-up of 1 step, then linear decay over the remaining 5: 1, 1, 0.8, 0.6, 0.4, 0.2 (× 1e-3)
    np.testing.assert_allclose(history["learning_rate"], [1e-3, 1e-3, 8e-4, 6e-4, 4e-4, 2e-4], rtol=1e-12)
    assert np.isfinite(history["loss"]).all()

    # another seed shuffles differently (and draws other dropout masks): another history
    result_3 = train(other, TRIPLETS, objective, _config(seed=1))
    assert not np.array_equal(result_3.history["loss"].to_numpy(), history["loss"].to_numpy())


# --------------------------------------------------------------------------------------- checkpoint + resume
@pytest.fixture(scope="module")
def interrupted_and_resumed(fresh_tiny_encoder, load_tiny_encoder, tmp_path_factory):
    """An uninterrupted reference run and a run killed at step 5 then resumed (from step 4) by a new encoder."""
    objective = TripletObjective(TEXTS)
    reference = fresh_tiny_encoder()
    reference_result = train(reference, TRIPLETS, objective, _config())

    output_dir = tmp_path_factory.mktemp("resume")
    seen_steps = []

    def kill_at_step_5(row: dict) -> None:
        seen_steps.append(row["step"])
        if row["step"] == 5:  # after the step-4 checkpoint: step 5 is lost and must be redone
            raise StopTraining

    with pytest.raises(StopTraining):
        train(load_tiny_encoder(), TRIPLETS, objective, _config(), output_dir=output_dir,
              callback=kill_at_step_5)
    assert seen_steps == [1, 2, 3, 4, 5]
    assert (output_dir / "checkpoint.pt").exists() and not (output_dir / "model").exists()

    resumed = load_tiny_encoder()  # a FRESH encoder, loaded the same way as the first one
    resumed_steps = []
    resumed_result = train(resumed, TRIPLETS, objective, _config(), output_dir=output_dir, resume=True,
                           callback=lambda row: resumed_steps.append(row["step"]))
    return {"reference": reference, "reference_result": reference_result, "resumed": resumed,
            "resumed_result": resumed_result, "resumed_steps": resumed_steps, "output_dir": output_dir}


def test_resume_after_interruption_matches_an_uninterrupted_run(interrupted_and_resumed):
    run = interrupted_and_resumed
    assert run["resumed_result"].resumed_from_step == 4 and run["resumed_result"].steps == 6
    assert run["resumed_steps"] == [5, 6]  # only the steps after the checkpoint were run again
    pd.testing.assert_frame_equal(run["resumed_result"].history, run["reference_result"].history,
                                  check_exact=True)
    _assert_same_weights(run["resumed"], run["reference"])

    order = sorted(TEXTS)
    texts = [TEXTS[pid] for pid in order]
    resumed = run["resumed"].encode_texts(texts, progress=False)
    reference = run["reference"].encode_texts(texts, progress=False)
    assert np.array_equal(resumed, reference)
    assert _triplet_accuracy(resumed, order) == _triplet_accuracy(reference, order)
    objective = TripletObjective(TEXTS)
    assert evaluate_loss(run["resumed"], TRIPLETS, objective) == evaluate_loss(run["reference"], TRIPLETS, objective)


def test_saved_model_folder_reloads_with_encoder_load(interrupted_and_resumed):
    model_dir = interrupted_and_resumed["resumed_result"].model_dir
    assert model_dir == interrupted_and_resumed["output_dir"] / "model"
    reloaded = Encoder.load(str(model_dir), max_length=32, device="cpu")
    assert reloaded.pooling == "mean" and len(reloaded.model.encoder.layer) == 1
    texts = list(TEXTS.values())
    np.testing.assert_allclose(reloaded.encode_texts(texts, progress=False),
                               interrupted_and_resumed["resumed"].encode_texts(texts, progress=False),
                               atol=1e-6, rtol=0)


def test_resume_with_a_different_config_is_refused(interrupted_and_resumed, fresh_tiny_encoder):
    output_dir = interrupted_and_resumed["output_dir"]
    with pytest.raises(ValueError, match="different TrainConfig"):
        train(fresh_tiny_encoder(), TRIPLETS, TripletObjective(TEXTS), _config(learning_rate=5e-4),
              output_dir=output_dir, resume=True)
    # progress bar and checkpoint frequency are not part of the run's identity: resuming the finished
    # run with other values of those is accepted and does no further step
    encoder = fresh_tiny_encoder()
    result = train(encoder, TRIPLETS, TripletObjective(TEXTS), _config(checkpoint_every=3),
                   output_dir=output_dir, resume=True)
    assert result.resumed_from_step == 6 and result.steps == 6
    _assert_same_weights(encoder, interrupted_and_resumed["reference"])
    pd.testing.assert_frame_equal(result.history, interrupted_and_resumed["reference_result"].history)


def test_a_finished_run_keeps_a_small_record_not_the_full_checkpoint(interrupted_and_resumed):
    """The optimizer moments and weight copies of a finished run are dropped (they were ~4× the model on
    disk, gigabytes per chapter); the record left says the run finished, and the model folder has the weights."""
    output_dir = interrupted_and_resumed["output_dir"]
    record = torch.load(output_dir / "checkpoint.pt", weights_only=True)
    assert record["finished"] and record["step"] == 6 and "optimizer" not in record and "model" not in record
    model_bytes = (output_dir / "model" / "model.safetensors").stat().st_size
    assert (output_dir / "checkpoint.pt").stat().st_size < model_bytes / 10


# --------------------------------------------------------------------------------------- failures
def test_nan_loss_stops_with_the_step_named(fresh_tiny_encoder):
    objective = TripletObjective(TEXTS)
    calls = []

    def nan_on_second_batch(encoder, batch):
        calls.append(len(batch))
        loss = objective(encoder, batch)
        return loss * float("nan") if len(calls) == 2 else loss

    with pytest.raises(FloatingPointError, match=r"loss became nan at epoch 0, optimizer step 1"):
        train(fresh_tiny_encoder(), TRIPLETS, nan_on_second_batch, _config(batch_size=1))


def test_empty_examples_and_bad_config_are_errors(fresh_tiny_encoder):
    with pytest.raises(ValueError, match="no training examples"):
        train(fresh_tiny_encoder(), [], TripletObjective(TEXTS), _config())
    with pytest.raises(ValueError, match="schedule must be one of"):
        TrainConfig(schedule="exponential")
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        TrainConfig(batch_size=0)


def test_evaluate_loss_is_the_dropout_free_mean_over_batches(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    encoder.train()
    objective = TripletObjective(TEXTS)
    in_pairs = evaluate_loss(encoder, TRIPLETS, objective, batch_size=4)  # batches of 4 and 2: weighted
    assert encoder.training  # the mode it found is restored
    encoder.eval()
    with torch.no_grad():
        whole = objective(encoder, TRIPLETS).item()
        by_hand = sum(objective(encoder, [t]).item() for t in TRIPLETS) / len(TRIPLETS)
    assert in_pairs == pytest.approx(whole, rel=1e-6) == pytest.approx(by_hand, rel=1e-6)
    assert evaluate_loss(encoder, TRIPLETS, objective, batch_size=4) == in_pairs  # no dropout: repeatable
    with pytest.raises(ValueError, match="no examples"):
        evaluate_loss(encoder, [], objective)


# --------------------------------------------------------------------------------------- schedules
def _multipliers(schedule: str, total_steps: int = 10, warmup_steps: int = 2, steps: int = 12) -> list[float]:
    """The learning rate LambdaLR gives at optimizer steps 0..steps-1 (base lr 1)."""
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=1.0)
    scheduler = make_schedule(optimizer, schedule, total_steps, warmup_steps)
    values = []
    for _ in range(steps):
        values.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return values


def test_schedules_give_hand_computed_multipliers():
    # 10 steps, 2 warm-up: step s < 2 → (s+1)/2; after it progress = (s-2)/8.
    linear = _multipliers("linear")
    np.testing.assert_allclose(linear, [0.5, 1, 1, 0.875, 0.75, 0.625, 0.5, 0.375, 0.25, 0.125, 0, 0],
                               atol=1e-12)
    cosine = _multipliers("cosine")
    # step 4: progress 1/4 → (1 + cos(π/4)) / 2 = 0.853553…; step 6: progress 1/2 → 0.5; step 10 → 0
    assert cosine[:3] == pytest.approx([0.5, 1.0, 1.0])
    assert cosine[4] == pytest.approx((1 + math.sqrt(0.5)) / 2) == pytest.approx(0.8535533906)
    assert cosine[6] == pytest.approx(0.5) and cosine[10] == pytest.approx(0.0, abs=1e-12)
    assert cosine[11] == pytest.approx(0.0, abs=1e-12)  # past the end it stays at 0
    slanted = _multipliers("slanted_triangular")
    # linear decay to a floor of 1/32 of the peak (Howard & Ruder 2018, ratio 32)
    assert slanted[:3] == pytest.approx([0.5, 1.0, 1.0])
    assert slanted[6] == pytest.approx(0.5 * 31 / 32 + 1 / 32) == pytest.approx(0.515625)
    assert slanted[10] == pytest.approx(1 / 32) and slanted[11] == pytest.approx(1 / 32)
    assert _multipliers("constant") == [1.0] * 12  # no warm-up either


# --------------------------------------------------------------------------------------- accumulation
def test_gradient_accumulation_matches_a_bigger_batch(fresh_tiny_encoder):
    """Batch 4 × accumulation 1 and batch 2 × accumulation 2 give the same first-step gradient.

    Dropout would draw different masks for one batch of 4 and two batches of 2, so the objective puts the
    encoder in eval mode before each forward pass (``train`` calls ``encoder.train()`` once, before the
    loop): dropout is off while autograd still records everything. Clipping is off so the raw gradients
    are compared; after ``train`` returns, ``.grad`` still holds the (only) optimizer step's gradient.
    The margin is large so every triplet is active (no hinge at exactly zero).
    """
    examples = TRIPLETS[:4]
    inner = TripletObjective(TEXTS, loss=TripletMarginLoss(margin=100.0))
    gradients, batch_sizes, losses = [], [], []
    for batch_size, accumulation in ((4, 1), (2, 2)):
        sizes = []

        def dropout_free(encoder, batch):
            encoder.eval()
            sizes.append(len(batch))
            return inner(encoder, batch)

        encoder = fresh_tiny_encoder()
        result = train(encoder, examples, dropout_free,
                       _config(epochs=1, batch_size=batch_size, accumulation_steps=accumulation,
                               max_grad_norm=0.0))
        assert result.steps == 1
        batch_sizes.append(sizes)
        losses.append(result.history["loss"].iloc[0])
        gradients.append({n: p.grad.clone() for n, p in encoder.named_parameters() if p.grad is not None})

    assert batch_sizes == [[4], [2, 2]]
    assert losses[0] == pytest.approx(losses[1], rel=1e-6) and losses[0] > 90  # every hinge active
    assert gradients[0].keys() == gradients[1].keys() and len(gradients[0]) > 10
    for name, gradient in gradients[0].items():
        # equal up to float rounding (different padding lengths change the summation order); the absolute
        # tolerance scales with the tensor, since a gradient summed over every token (the token-type
        # embedding's) differs by ~3e-7 where its entries reach 0.6
        atol = 1e-6 * gradient.abs().max().item() + 1e-7
        torch.testing.assert_close(gradients[1][name], gradient, rtol=1e-4, atol=atol, msg=name)
    total = torch.sqrt(sum((g ** 2).sum() for g in gradients[0].values()))
    assert total > 1e-3  # the gradient is not trivially zero


# --------------------------------------------------------------------------------------- objectives
class FakeEncoder:
    """Stands in for an Encoder: maps each text to a fixed vector and records the texts it was given."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = vectors
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return torch.tensor([self.vectors[t] for t in texts], dtype=torch.float64)


def test_triplet_objective_with_per_example_margins():
    # texts are the ids themselves; 2-d vectors make the L2 distances easy: d(q1,p1)=5, d(q1,n1)=1,
    # d(q2,p2)=1, d(q2,n2)=3.
    vectors = {"q1": [0, 0], "p1": [3, 4], "n1": [1, 0], "q2": [0, 0], "p2": [1, 0], "n2": [0, 3]}
    texts = {key: key for key in vectors}
    triplets = [Triplet("q1", "p1", "n1", "hard", margin=2.0), Triplet("q2", "p2", "n2", "easy", margin=3.0)]
    encoder = FakeEncoder(vectors)

    graded = TripletObjective(texts, per_example_margin=True)(encoder, triplets)
    # max(5 - 1 + 2, 0) = 6 and max(1 - 3 + 3, 0) = 1 → mean 3.5 (eps 1e-6 in the distance: tolerance)
    assert graded.item() == pytest.approx(3.5, abs=1e-5)
    assert encoder.calls == [["q1", "q2", "p1", "p2", "n1", "n2"]]  # one forward pass for the batch

    fixed = TripletObjective(texts)(encoder, triplets)  # margin 1 for both: max(5,0)=5, max(-1,0)=0
    assert fixed.item() == pytest.approx(2.5, abs=1e-5)


def test_contrastive_objective_with_ragged_groups():
    # dot similarity, temperature 1: scores are plain dot products
    vectors = {"a": [1, 0], "p1": [1, 0], "n1": [0, 1], "n2": [-1, 0],
               "b": [0, 1], "p2": [0, 1], "p3": [1, 1], "n3": [0, -1]}
    texts = {key: key for key in vectors}
    examples = [ContrastiveExample("a", ["p1"], ["n1", "n2"]), ContrastiveExample("b", ["p2", "p3"], ["n3"])]
    encoder = FakeEncoder(vectors)
    loss = ContrastiveObjective(texts, GeneralContrastiveLoss(temperature=1.0, similarity="dot"))(encoder, examples)

    # padding repeats the anchor (score 1 here), so a missing mask would change both values:
    # L(a) = -log(e^1 / (e^1 + e^0 + e^-1));  L(b) = -1/2 · 2 · log(e^1 / (e^1 + e^1 + e^-1))
    e = math.e
    expected_a = math.log(e + 1 + 1 / e) - 1
    expected_b = math.log(2 * e + 1 / e) - 1
    assert loss.item() == pytest.approx((expected_a + expected_b) / 2, rel=1e-12)
    assert encoder.calls == [["a", "p1", "a", "n1", "n2", "b", "p2", "p3", "n3", "b"]]
