"""Training across processes: a run killed with SIGKILL after a checkpoint and resumed by a new process ends
with the weights of an uninterrupted run; data-parallel training over two gloo processes (torchrun), started
from different initial weights, ends with the weights of one process at the same global batch (rank 0's
weights are broadcast); and a two-process run stopped after a checkpoint and resumed by two new processes
ends exactly where an uninterrupted two-process run does (each rank restores its own random state, so their
different dropout masks continue).

The training processes run this file as a script (``python tests/test_train_processes.py MODE OUT``), on
the tiny setting of ``test_train.py``: a 1-layer all-MiniLM-L6-v2 (max_length 32), CPU, float32.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch

from sdr.losses import TripletMarginLoss
from sdr.samplers import Triplet
from sdr.train import StopTraining, TrainConfig, TripletObjective, train
from training_toy import TEXTS
from training_toy import TRIPLETS as TOY_TRIPLETS

TRIPLETS = [*TOY_TRIPLETS, Triplet("d", "c", "g", "easy"), Triplet("f", "e", "b", "easy")]
#: 8 triplets, batch 2 × accumulation 2 = 4 per optimizer step, 2 epochs: 4 optimizer steps
CONFIG = dict(epochs=2, batch_size=2, accumulation_steps=2, learning_rate=1e-3, warmup_steps=1, seed=0,
              checkpoint_every=1, progress=False)


class DropoutFreeTriplets(TripletObjective):
    """SPECTER's objective with the encoder in eval mode (dropout off, autograd unchanged), so one process
    and two draw no different dropout masks. Still example-wise: one call per optimizer step."""

    def __call__(self, encoder, triplets):
        encoder.eval()
        return super().__call__(encoder, triplets)


class HeadsByKind(torch.nn.Module):
    """Not example-wise (one call per micro-batch) and with parameters of its own: a projection head per
    triplet kind, so a micro-batch of one kind leaves the other head unused in that process. Dropout off."""

    def __init__(self, dimension: int):
        super().__init__()
        torch.manual_seed(3)
        self.heads = torch.nn.ModuleDict({"hard": torch.nn.Linear(dimension, 8), "easy": torch.nn.Linear(dimension, 8)})
        self.triplet = TripletObjective(TEXTS)

    def forward(self, encoder, triplets):
        encoder.eval()
        n = len(triplets)
        projected = self.heads[triplets[0].kind](encoder(self.triplet.encoder_inputs(triplets)))
        return self.triplet.loss(projected[:n], projected[n:2 * n], projected[2 * n:])


#: batch 1 × accumulation 3, 8 triplets: optimizer steps of 3, 3 and 2 micro-batches an epoch; over two
#: processes rank 0 runs 2 calls of a 3-call step and rank 1 one (no_sync on rank 0's first), and in the
#: last step of an epoch each runs one
HEADS_CONFIG = dict(epochs=2, batch_size=1, accumulation_steps=3, learning_rate=1e-3, warmup_steps=1, seed=0,
                    checkpoint_every=0, progress=False)


def _run_worker(mode: str, out: Path) -> None:
    """The training process: ``kill-me`` (slow steps, to be killed), ``resume``; under torchrun ``ddp``
    (rank 1 starts from other weights, no dropout), ``ddp-full`` (dropout on), ``ddp-stop`` (the same,
    stopped after step 3) and ``ddp-resume``."""
    from sdr.encoders import Encoder
    from sdr.train import init_distributed

    distributed = mode.startswith("ddp")
    device = init_distributed() if distributed else torch.device("cpu")
    encoder = Encoder.load("minilm", num_layers=1, max_length=32, device=str(device))
    rank = int(os.environ.get("RANK", 0))
    if mode == "ddp" and rank == 1:  # another initialization: the broadcast of rank 0's must undo it
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for parameter in encoder.parameters():
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))

    def callback(row):
        if mode == "kill-me":  # leave the test time to see the checkpoint and kill the process
            time.sleep(1.0)
        if mode == "ddp-stop" and row["step"] == 3:  # after the step-2 checkpoint, on every rank
            raise StopTraining

    if mode == "ddp":
        objective = DropoutFreeTriplets(TEXTS)
    elif mode == "ddp-heads":
        objective = HeadsByKind(encoder.dimension)
    elif distributed:  # a margin every triplet stays inside: the loss, and so each rank's dropout, always counts
        objective = TripletObjective(TEXTS, loss=TripletMarginLoss(margin=100.0))
    else:
        objective = TripletObjective(TEXTS)
    config = TrainConfig(**{**CONFIG, "checkpoint_every": 2}) if distributed else TrainConfig(**CONFIG)
    if mode == "ddp-heads":
        config = TrainConfig(**HEADS_CONFIG)
    try:
        result = train(encoder, TRIPLETS, objective, config, output_dir=out if mode not in ("ddp", "ddp-heads") else None,
                       resume=mode.endswith("resume"), callback=callback)
    except StopTraining:
        return
    if rank == 0:
        torch.save(encoder.state_dict(), out / "final.pt")
        if mode == "ddp-heads":
            torch.save(objective.state_dict(), out / "heads.pt")
        (out / "result.json").write_text(json.dumps({"resumed_from_step": result.resumed_from_step,
                                                     "loss": result.history["loss"].tolist()}))


def _python(*args: str) -> list[str]:
    return [sys.executable, *args]


def _assert_states(one: dict, two: dict, exact: bool) -> None:
    assert one.keys() == two.keys()
    if exact:
        different = [name for name in one if not torch.equal(one[name], two[name])]
    else:
        different = [name for name in one if not torch.allclose(one[name], two[name], rtol=1e-4, atol=1e-5)]
    assert not different, f"{len(different)} tensors differ: {different[:8]}"


def test_sigkill_after_a_checkpoint_then_resume_in_a_new_process(fresh_tiny_encoder, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    killed = subprocess.Popen(_python(__file__, "kill-me", str(tmp_path)), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    checkpoint = tmp_path / "checkpoint.pt"
    deadline = time.monotonic() + 120
    while not checkpoint.exists() and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert checkpoint.exists(), f"no checkpoint appeared: {killed.communicate()[0].decode()[-2000:]}"
    killed.send_signal(signal.SIGKILL)  # a real kill: no exception handler, no atexit, mid-step
    killed.wait(timeout=30)
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "final.pt").exists()  # it did not finish

    reference = fresh_tiny_encoder()
    reference_result = train(reference, TRIPLETS, TripletObjective(TEXTS), TrainConfig(**CONFIG))

    resumed = subprocess.run(_python(__file__, "resume", str(tmp_path)), env=env, capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert 1 <= result["resumed_from_step"] < 4  # it really resumed from a checkpoint mid-run
    assert result["loss"] == reference_result.history["loss"].tolist()
    _assert_states(torch.load(tmp_path / "final.pt", weights_only=True), reference.state_dict(), exact=True)


def _torchrun(mode: str, out: Path) -> None:
    """Two gloo processes running this file's worker in ``mode``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    launched = subprocess.run(
        _python("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", __file__, mode, str(out)),
        env=env, capture_output=True, text=True, timeout=300)
    assert launched.returncode == 0, launched.stdout[-2000:] + launched.stderr[-2000:]


def test_two_gloo_processes_from_different_weights_match_one_process(fresh_tiny_encoder, tmp_path):
    _torchrun("ddp", tmp_path)

    reference = fresh_tiny_encoder()
    reference_result = train(reference, TRIPLETS, DropoutFreeTriplets(TEXTS), TrainConfig(**CONFIG))
    initial = fresh_tiny_encoder().state_dict()
    two_processes = torch.load(tmp_path / "final.pt", weights_only=True)
    result = json.loads((tmp_path / "result.json").read_text())
    assert len(result["loss"]) == 4
    torch.testing.assert_close(torch.tensor(result["loss"], dtype=torch.float64),
                               torch.tensor(reference_result.history["loss"].tolist(), dtype=torch.float64),
                               rtol=1e-5, atol=1e-6)
    # Adam divides each gradient by its own running magnitude, so an element whose gradient is tiny (float
    # rounding differs between one process and two: other summation orders) can take a full-size step
    # either way. So each tensor is compared relative to how far training moved it: the two runs agree
    # within 2 % of the update. Two tensors whose exact gradient is zero are left out, their updates being
    # pure rounding noise: the attention key bias (softmax is invariant to adding the same score to every
    # key of a query) and the last layer's output LayerNorm bias (it shifts every mean-pooled embedding by
    # the same vector, which leaves the triplet loss's L2 distances unchanged).
    reference_state = reference.state_dict()
    zero_gradient = ("attention.self.key.bias", "layer.0.output.LayerNorm.bias")
    comparable = [n for n in reference_state if not n.endswith(zero_gradient)]
    assert len(comparable) == len(reference_state) - 2
    far = [n for n in comparable if (two_processes[n] - reference_state[n]).norm()
           > 0.02 * (reference_state[n] - initial[n]).norm() + 1e-6]
    assert not far, f"{len(far)} tensors differ by more than 2 % of their update: {far[:8]}"
    moved = [n for n in initial if not torch.equal(initial[n], reference.state_dict()[n])]
    assert len(moved) > 10  # training changed the weights, so the comparison is not trivial


def test_two_processes_stopped_and_resumed_by_two_new_ones_match_an_uninterrupted_pair(tmp_path):
    uninterrupted, interrupted = tmp_path / "uninterrupted", tmp_path / "interrupted"
    uninterrupted.mkdir(), interrupted.mkdir()
    _torchrun("ddp-full", uninterrupted)
    _torchrun("ddp-stop", interrupted)
    checkpoint = torch.load(interrupted / "checkpoint.pt", weights_only=True)
    assert checkpoint["step"] == 2 and not (interrupted / "final.pt").exists()
    # each process's own random state (they drew different dropout masks, so the states differ)
    assert len(checkpoint["rng"]) == 2
    assert not torch.equal(checkpoint["rng"][0]["torch"], checkpoint["rng"][1]["torch"])
    _torchrun("ddp-resume", interrupted)
    resumed = json.loads((interrupted / "result.json").read_text())
    reference = json.loads((uninterrupted / "result.json").read_text())
    assert resumed["resumed_from_step"] == 2 and len(reference["loss"]) == 4 and min(reference["loss"]) > 90
    assert resumed["loss"] == reference["loss"]
    _assert_states(torch.load(interrupted / "final.pt", weights_only=True),
                   torch.load(uninterrupted / "final.pt", weights_only=True), exact=True)


def test_two_processes_with_uneven_calls_and_unused_heads_match_one_process(fresh_tiny_encoder, tmp_path):
    """An objective that is called once per micro-batch (gradients accumulated under no_sync, synced on a
    process's last call, whatever its number of calls) and owns heads that a process's batch may not use
    (find_unused_parameters): two gloo processes end with one process's weights and heads."""
    _torchrun("ddp-heads", tmp_path)
    reference = fresh_tiny_encoder()
    heads = HeadsByKind(reference.dimension)
    initial_heads = {k: v.clone() for k, v in heads.state_dict().items()}
    reference_result = train(reference, TRIPLETS, heads, TrainConfig(**HEADS_CONFIG))
    result = json.loads((tmp_path / "result.json").read_text())
    assert len(result["loss"]) == reference_result.steps == 6
    torch.testing.assert_close(torch.tensor(result["loss"], dtype=torch.float64),
                               torch.tensor(reference_result.history["loss"].tolist(), dtype=torch.float64),
                               rtol=1e-5, atol=1e-6)
    two_processes = torch.load(tmp_path / "heads.pt", weights_only=True)
    # within 2 % of how far training moved each head's weight; a head's bias adds one vector to the anchor,
    # positive and negative alike, which the triplet loss's distances ignore: its exact gradient is zero, so
    # its updates are rounding noise and are left out
    weights = [name for name in heads.state_dict() if name.endswith("weight")]
    assert len(weights) == 2
    for name in weights:
        value = heads.state_dict()[name]
        moved = (value - initial_heads[name]).norm()
        assert moved > 0 and (two_processes[name] - value).norm() <= 0.02 * moved + 1e-6, name
    encoder_state, initial = reference.state_dict(), fresh_tiny_encoder().state_dict()
    final = torch.load(tmp_path / "final.pt", weights_only=True)
    # exact gradient zero, so rounding noise only (as in the test above): the key bias (softmax ignores a shift
    # of every score) and the last LayerNorm's bias (one shift of every embedding, which the head maps to one
    # shift of every projection: the distances ignore it)
    zero_gradient = ("attention.self.key.bias", "layer.0.output.LayerNorm.bias")
    far = [n for n in encoder_state if not n.endswith(zero_gradient)
           and (final[n] - encoder_state[n]).norm() > 0.02 * (encoder_state[n] - initial[n]).norm() + 1e-6]
    assert not far, far[:8]


def test_sdr_train_runs_a_run_spec_on_two_processes_and_a_chapter_rerun_loads_it(tmp_path):
    """``write_run_spec`` then ``torchrun --nproc_per_node 2 -m sdr.cli train RUN_FOLDER`` trains the run
    data-parallel (gloo) into the folder; the chapter's own call with ``resume=True`` then loads the finished
    run (trained by two processes, loaded by one) instead of training, and it ends where one process
    training the same spec ends (dropout off in the saved model's config, so both draw no masks)."""
    from sdr.encoders import Encoder
    from sdr.train import read_run_spec, write_run_spec

    start = tmp_path / "start"
    encoder = Encoder.load("minilm", num_layers=1, max_length=32, device="cpu")
    encoder.model.config.hidden_dropout_prob = encoder.model.config.attention_probs_dropout_prob = 0.0
    encoder.save(start)
    run = tmp_path / "run"
    config = TrainConfig(**{**CONFIG, "checkpoint_every": 2})
    write_run_spec(run, {"name_or_path": str(start)}, TRIPLETS, TripletObjective(TEXTS), config)
    options, examples, objective, read_config = read_run_spec(run)
    assert options == {"name_or_path": str(start)} and examples == TRIPLETS and read_config == config
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    launched = subprocess.run(
        _python("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "sdr.cli", "train",
                str(run)), env=env, capture_output=True, text=True, timeout=300)
    assert launched.returncode == 0, launched.stdout[-2000:] + launched.stderr[-2000:]
    assert "4 optimizer steps on 2 process(es)" in launched.stdout
    record = torch.load(run / "checkpoint.pt", weights_only=True)
    assert record["finished"] and len(record["rng"]) == 2

    reference = Encoder.load(str(start), device="cpu")
    reference_result = train(reference, TRIPLETS, TripletObjective(TEXTS), config)
    chapter = Encoder.load(str(start), device="cpu")
    loaded = train(chapter, TRIPLETS, TripletObjective(TEXTS), config, output_dir=run, resume=True)
    assert loaded.resumed_from_step == loaded.steps == 4  # loaded, not trained
    torch.testing.assert_close(torch.tensor(loaded.history["loss"].tolist(), dtype=torch.float64),
                               torch.tensor(reference_result.history["loss"].tolist(), dtype=torch.float64),
                               rtol=1e-5, atol=1e-6)
    initial = Encoder.load(str(start), device="cpu").state_dict()
    reference_state, loaded_state = reference.state_dict(), chapter.state_dict()
    zero_gradient = ("attention.self.key.bias", "layer.0.output.LayerNorm.bias")  # as in the test above
    far = [n for n in reference_state if not n.endswith(zero_gradient)
           and (loaded_state[n] - reference_state[n]).norm() > 0.02 * (reference_state[n] - initial[n]).norm() + 1e-6]
    assert not far, far[:8]
    assert sum(not torch.equal(initial[n], reference_state[n]) for n in initial) > 10


if __name__ == "__main__":
    _run_worker(sys.argv[1], Path(sys.argv[2]))
