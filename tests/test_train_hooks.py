"""The trainer's hooks the method chapters use: objectives with their own parameters, batch samplers
(PK batches), per-epoch validation keeping the best epoch, BitFit, and zero warm-up / weight decay.

Same tiny setting as ``test_train.py``: a 1-layer all-MiniLM-L6-v2 (max_length 32) on CPU, 6 triplets of
hand-written texts, float32 (bit-reproducible, so weights are compared with ``torch.equal``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from torch import nn

from sdr.samplers import PKBatchSampler
from sdr.train import StopTraining, TripletObjective, train
from training_toy import TEXTS, TRIPLETS
from training_toy import toy_config as _config





def _state(module: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in module.state_dict().items()}


def _assert_equal_states(one: dict, two: dict) -> None:
    assert one.keys() == two.keys()
    different = [name for name in one if not torch.equal(one[name], two[name])]
    assert not different, f"tensors differ: {different[:5]}"


class ProjectedTripletObjective(nn.Module):
    """A triplet loss on a trainable linear projection of the embeddings (like SciAspect's heads)."""

    def __init__(self, dimension: int, seed: int):
        super().__init__()
        torch.manual_seed(seed)
        self.head = nn.Linear(dimension, 16)
        self.triplet = TripletObjective(TEXTS)

    def forward(self, encoder, triplets):
        n = len(triplets)
        ids = [t.query for t in triplets] + [t.positive for t in triplets] + [t.negative for t in triplets]
        projected = self.head(encoder([TEXTS[i] for i in ids]))
        return self.triplet.loss(projected[:n], projected[n:2 * n], projected[2 * n:])


# ------------------------------------------------------------------------------------ objective parameters
def test_objective_parameters_are_trained_checkpointed_and_restored(fresh_tiny_encoder, tmp_path):
    reference_encoder = fresh_tiny_encoder()
    reference_objective = ProjectedTripletObjective(reference_encoder.dimension, seed=1)
    initial_head = _state(reference_objective)
    reference = train(reference_encoder, TRIPLETS, reference_objective, _config())
    # the head trained (the optimizer has its parameters)
    assert not torch.equal(initial_head["head.weight"], reference_objective.head.weight)

    def kill_at_step_5(row):
        if row["step"] == 5:  # after the step-4 checkpoint
            raise StopTraining

    with pytest.raises(StopTraining):
        train(fresh_tiny_encoder(), TRIPLETS, ProjectedTripletObjective(reference_encoder.dimension, seed=1),
              _config(), output_dir=tmp_path, callback=kill_at_step_5)
    # a new process would build the head afresh, here with other initial weights: resume restores them
    encoder = fresh_tiny_encoder()
    objective = ProjectedTripletObjective(encoder.dimension, seed=7)
    assert not torch.equal(objective.head.weight, initial_head["head.weight"])
    resumed = train(encoder, TRIPLETS, objective, _config(), output_dir=tmp_path, resume=True)

    assert resumed.resumed_from_step == 4 and resumed.steps == 6
    assert resumed.history["loss"].tolist() == reference.history["loss"].tolist()
    _assert_equal_states(_state(objective), _state(reference_objective))
    _assert_equal_states(_state(encoder), _state(reference_encoder))
    saved = torch.load(resumed.model_dir / "objective.pt", weights_only=True)
    _assert_equal_states(saved, _state(reference_objective))


# ------------------------------------------------------------------------------------ batch sampler
def test_pk_batch_sampler_with_fewer_classes_than_p_drives_training(fresh_tiny_encoder, capsys):
    labels = ["bio", "econ", "econ", "bio", "cs", "bio"]  # 3 classes, P = 4
    sampler = PKBatchSampler(labels, p=4, k=2, num_batches=2)
    assert "Fewer classes than p=4" in capsys.readouterr().out
    epoch_0 = sampler(len(labels), 0, 0)
    assert len(epoch_0) == 2
    for batch in epoch_0:
        counts = Counter(labels[i] for i in batch)
        # all 3 classes, 8 examples split as evenly as possible: 3, 3, 2
        assert len(batch) == 8 and sorted(counts.values()) == [2, 3, 3] and set(counts) == {"bio", "econ", "cs"}
    assert sampler(len(labels), 0, 0) == epoch_0 and sampler(len(labels), 0, 1) != epoch_0
    with pytest.raises(ValueError, match="built for 6 labels"):
        sampler(5, 0, 0)

    seen = []
    objective = TripletObjective(TEXTS)

    def recording(encoder, batch):
        seen.append([TRIPLETS.index(t) for t in batch])
        return objective(encoder, batch)

    result = train(fresh_tiny_encoder(), TRIPLETS, recording, _config(accumulation_steps=2, seed=3),
                   batch_sampler=sampler)
    # 2 batches per epoch, accumulated into 1 optimizer step; the trainer's seed picks the batches
    assert result.steps == 2
    assert seen == sampler(6, 3, 0) + sampler(6, 3, 1)


def test_bad_batch_sampler_output_is_an_error(fresh_tiny_encoder):
    with pytest.raises(ValueError, match="epoch 0, batch 1 is \\[6\\]"):
        train(fresh_tiny_encoder(), TRIPLETS, TripletObjective(TEXTS), _config(),
              batch_sampler=lambda n, seed, epoch: [[0, 1], [n]])


# ------------------------------------------------------------------------------------ validation
def test_validation_keeps_the_best_epoch_and_survives_resume(fresh_tiny_encoder, tmp_path):
    scores = [0.2, 0.9, 0.5]  # epoch 1 is the best
    after_epoch = []

    def validate(encoder):
        assert not encoder.training  # eval mode during validation
        after_epoch.append(_state(encoder))
        return scores[len(after_epoch) - 1]

    encoder = fresh_tiny_encoder()
    objective = ProjectedTripletObjective(encoder.dimension, seed=1)
    result = train(encoder, TRIPLETS, objective, _config(epochs=3), validate=validate)
    assert result.validation == scores and result.best_epoch == 1 and result.steps == 9
    _assert_equal_states(_state(encoder), after_epoch[1])
    assert not torch.equal(after_epoch[1]["model.encoder.layer.0.output.dense.weight"],
                           after_epoch[2]["model.encoder.layer.0.output.dense.weight"])
    best_objective = _state(objective)

    # killed in epoch 2 (after the best epoch was validated), resumed by a new process: same outcome
    calls = []

    def validate_again(encoder):
        calls.append(1)
        return scores[len(calls) - 1]

    def kill_at_step_8(row):
        if row["step"] == 8:
            raise StopTraining

    killed_encoder = fresh_tiny_encoder()
    with pytest.raises(StopTraining):
        train(killed_encoder, TRIPLETS, ProjectedTripletObjective(encoder.dimension, seed=1),
              _config(epochs=3, checkpoint_every=0), output_dir=tmp_path, validate=validate_again,
              callback=kill_at_step_8)
    assert len(calls) == 2
    resumed_encoder = fresh_tiny_encoder()
    resumed_objective = ProjectedTripletObjective(encoder.dimension, seed=5)
    resumed = train(resumed_encoder, TRIPLETS, resumed_objective, _config(epochs=3, checkpoint_every=0),
                    output_dir=tmp_path, resume=True, validate=validate_again)
    # no step checkpoints: the run resumes from the one written after epoch 1's validation
    assert resumed.resumed_from_step == 6 and len(calls) == 3  # only epoch 2 validated again
    assert resumed.validation == scores and resumed.best_epoch == 1
    _assert_equal_states(_state(resumed_encoder), after_epoch[1])
    _assert_equal_states(_state(resumed_objective), best_objective)


# ------------------------------------------------------------------------------------ BitFit
def test_bitfit_changes_only_bias_terms(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    before = {n: p.detach().clone() for n, p in encoder.named_parameters()}
    train(encoder, TRIPLETS, TripletObjective(TEXTS), _config(bitfit=True))
    changed = {n for n, p in encoder.named_parameters() if not torch.equal(before[n], p)}
    biases = {n for n in before if n.endswith("bias")}
    assert changed and changed <= biases
    assert len(changed) >= len(biases) - 2  # (the pooler, unused by mean pooling, gets no gradient)
    assert all(p.requires_grad for p in encoder.parameters())  # frozen weights are given back


# ------------------------------------------------------------------------------------ no warm-up, no decay
def test_zero_warmup_and_zero_weight_decay(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    embeddings_before = encoder.model.embeddings.word_embeddings.weight.detach().clone()
    result = train(encoder, TRIPLETS, TripletObjective(TEXTS), _config(warmup_steps=0, weight_decay=0.0))
    # no warm-up: linear decay from the first step over all 6 steps
    np.testing.assert_allclose(result.history["learning_rate"], [1e-3 * (6 - s) / 6 for s in range(6)],
                               rtol=1e-12)
    # rows of tokens no text uses get no gradient: without weight decay AdamW leaves them exactly as they
    # were; with the default decay 0.01 they shrink
    used = {i for ids in encoder.tokenizer(list(TEXTS.values()))["input_ids"] for i in ids}
    unused = torch.tensor(sorted(set(range(embeddings_before.shape[0])) - used))
    after = encoder.model.embeddings.word_embeddings.weight.detach()
    assert torch.equal(after[unused], embeddings_before[unused])
    assert not torch.equal(after, embeddings_before)

    decayed = fresh_tiny_encoder()
    train(decayed, TRIPLETS, TripletObjective(TEXTS), _config(warmup_steps=0))
    rows = decayed.model.embeddings.word_embeddings.weight.detach()[unused]
    assert (rows.abs() < embeddings_before[unused].abs()).float().mean() > 0.99
