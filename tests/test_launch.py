"""Run specs (``sdr.train.write_run_spec`` / ``sdr train RUN_FOLDER``): what they hold, what they refuse, and
how a bad one is reported. Training a spec under torchrun: tests/test_train_processes.py."""

from __future__ import annotations

import json

import pytest
import torch

from sdr.jsonio import InputError
from sdr.losses import GeneralContrastiveLoss, TripletMarginLoss
from sdr.samplers import ContrastiveExample, Triplet
from sdr.train import ContrastiveObjective, TripletObjective, read_run_spec, write_run_spec
from training_toy import TEXTS, TRIPLETS, toy_config

OPTIONS = {"name_or_path": "minilm", "num_layers": 1, "max_length": 32}


def test_a_triplet_and_a_contrastive_spec_round_trip(tmp_path):
    objective = TripletObjective(TEXTS, TripletMarginLoss(margin=0.5, distance="squared_l2"), per_example_margin=True)
    write_run_spec(tmp_path / "t", OPTIONS, TRIPLETS, objective, toy_config())
    options, examples, read, config = read_run_spec(tmp_path / "t")
    assert options == OPTIONS and examples == TRIPLETS and config == toy_config()
    assert (read.loss.margin, read.loss.distance, read.per_example_margin) == (0.5, "squared_l2", True)
    used = {p for t in TRIPLETS for p in (t.query, t.positive, t.negative)}
    assert read.texts == {p: TEXTS[p] for p in used}  # only the texts the examples use

    groups = [ContrastiveExample("a", ["b"], ["c", "d"], n_hard=1), ContrastiveExample("e", ["f", "g"], ["h"])]
    contrastive = ContrastiveObjective(TEXTS, GeneralContrastiveLoss(temperature=0.1, similarity="dot"))
    write_run_spec(tmp_path / "c", OPTIONS, groups, contrastive, toy_config())
    _, examples, read, _ = read_run_spec(tmp_path / "c")
    assert examples == groups and (read.loss.temperature, read.loss.similarity) == (0.1, "dot")


class _Subclass(TripletObjective):
    pass


@pytest.mark.parametrize("objective, message", [
    (_Subclass(TEXTS), "cannot write a _Subclass objective"),
    (lambda encoder, batch: None, "cannot write a function objective"),
    (TripletObjective(TEXTS, loss=GeneralContrastiveLoss()), r"loss GeneralContrastiveLoss"),
])
def test_objectives_a_spec_cannot_reproduce_are_refused(objective, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        write_run_spec(tmp_path, OPTIONS, TRIPLETS, objective, toy_config())
    assert not (tmp_path / "run_spec.json").exists()


def test_bad_inputs_to_write_run_spec_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"unknown \['device'\]"):
        write_run_spec(tmp_path, {**OPTIONS, "device": "cuda"}, TRIPLETS, TripletObjective(TEXTS), toy_config())
    with pytest.raises(KeyError, match="example 1 uses paper 'zz'"):
        write_run_spec(tmp_path, OPTIONS, [TRIPLETS[0], Triplet("a", "zz", "b", "easy")], TripletObjective(TEXTS),
                       toy_config())
    with pytest.raises(ValueError, match="example 0 is a ContrastiveExample"):
        write_run_spec(tmp_path, OPTIONS, [ContrastiveExample("a", ["b"], [])], TripletObjective(TEXTS), toy_config())


def test_a_bad_run_folder_is_reported_naming_the_file_and_what_was_expected(tmp_path):
    write_run_spec(tmp_path, OPTIONS, TRIPLETS, TripletObjective(TEXTS), toy_config())
    spec = json.loads((tmp_path / "run_spec.json").read_text())
    (tmp_path / "run_spec.json").write_text(json.dumps({**spec, "config": {**spec["config"], "epochs": 0}}))
    with pytest.raises(InputError, match=r"run_spec.json: 'config': epochs must be >= 1"):
        read_run_spec(tmp_path)
    (tmp_path / "run_spec.json").write_text(json.dumps({**spec, "objective": {"kind": "pk"}}))
    with pytest.raises(InputError, match=r"'objective.kind' must be one of \('triplet', 'contrastive'\), got 'pk'"):
        read_run_spec(tmp_path)
    (tmp_path / "run_spec.json").write_text(json.dumps(spec))
    with open(tmp_path / "examples.jsonl", "a") as handle:
        handle.write(json.dumps({"query": "a", "positive": "b", "negative": "q", "kind": "easy"}) + "\n")
    with pytest.raises(InputError, match=r"examples.jsonl:7: paper\(s\) \['q'\] have no text in texts.json"):
        read_run_spec(tmp_path)


def test_a_chapter_call_hands_its_run_over_and_a_rerun_loads_what_sdr_train_trained(fresh_tiny_encoder, tmp_path,
                                                                                    monkeypatch):
    """SDR_WRITE_RUN_SPECS=1: the chapter's train(..., output_dir=RUN) writes RUN's spec (the encoder as it is,
    saved to RUN/start_model) and stops naming the command; `sdr train RUN` (here in this process, as rank 0
    of 1) trains it; the chapter's call again, with resume, loads it, equal to training in the chapter."""
    from sdr.launch import RunSpecWritten, train_run
    from sdr.train import train

    run = tmp_path / "run"
    encoder = fresh_tiny_encoder()
    with torch.no_grad():  # the chapter's encoder is not the loaded one: the spec must start from it
        encoder.model.embeddings.word_embeddings.weight.mul_(1.01)
    reference = fresh_tiny_encoder()
    reference.load_state_dict(encoder.state_dict())
    monkeypatch.setenv("SDR_WRITE_RUN_SPECS", "1")
    with pytest.raises(RunSpecWritten, match=r"torchrun --standalone --nproc_per_node N -m sdr.cli train .*run"):
        train(encoder, TRIPLETS, TripletObjective(TEXTS), toy_config(), output_dir=run, resume=True)
    assert (run / "run_spec.json").exists() and not (run / "checkpoint.pt").exists()
    result = train_run(run, progress=False)
    assert result.steps == 6 and result.resumed_from_step == 0
    loaded = train(encoder, TRIPLETS, TripletObjective(TEXTS), toy_config(), output_dir=run, resume=True)
    assert loaded.resumed_from_step == 6  # loaded, not trained
    monkeypatch.delenv("SDR_WRITE_RUN_SPECS")
    expected = train(reference, TRIPLETS, TripletObjective(TEXTS), toy_config())
    assert loaded.history["loss"].tolist() == expected.history["loss"].tolist()
    assert all(torch.equal(a, b) for a, b in zip(encoder.parameters(), reference.parameters()))
    # a run a spec cannot hold trains in the chapter's process, saying why
    monkeypatch.setenv("SDR_WRITE_RUN_SPECS", "1")
    other = train(fresh_tiny_encoder(), TRIPLETS, TripletObjective(TEXTS), toy_config(), output_dir=tmp_path / "v",
                  validate=lambda encoder: 0.0)
    assert other.steps == 6 and not (tmp_path / "v" / "run_spec.json").exists()
