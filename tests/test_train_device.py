"""The trainer's device-side behaviour, checked on CPU: losses stay on the device and are read in batches (a
non-finite one still stops training, naming its step, and never reaches a checkpoint); the next step is
prepared on a worker thread without changing a single number; checkpoints load with
``torch.load(weights_only=True)`` (older ones too); and in a process group the step runs through PyTorch's
DistributedDataParallel without changing a number, every all-reduce on the parameters' device, as NCCL
requires.

Same tiny setting as ``test_train.py``: a 1-layer all-MiniLM-L6-v2 (max_length 32), CPU, float32.
"""

from __future__ import annotations

import random
import sys
import threading

import numpy as np
import pytest
import torch

import sdr.distributed
import sdr.encoders
import sdr.train
from sdr.encoders import Encoder
from sdr.train import StopTraining, TripletObjective, load_checkpoint, train
from training_toy import TEXTS, TRIPLETS
from training_toy import toy_config as _config


def _same_weights(one: Encoder, two: Encoder) -> list[str]:
    other = dict(two.named_parameters())
    return [name for name, value in one.named_parameters() if not torch.equal(value, other[name])]


class _NanAt:
    """The triplet objective, returning NaN at the given (1-based) call; without ``encoder_inputs``."""

    def __init__(self, call: int):
        self.inner, self.call, self.calls = TripletObjective(TEXTS), call, 0

    def __call__(self, encoder, batch):
        self.calls += 1
        loss = self.inner(encoder, batch)
        return loss * float("nan") if self.calls == self.call else loss


# ---------------------------------------------------------------------------------------- losses and syncs
def test_losses_are_read_in_batches_not_every_step(fresh_tiny_encoder, monkeypatch):
    """The only device-to-host reads the trainer's own code makes are its batched loss reads: every
    READ_LOSSES_EVERY steps (leaving the newest step queued) and at each epoch's end."""
    monkeypatch.setattr(sdr.train, "READ_LOSSES_EVERY", 2)
    reads = []
    originals = {name: getattr(torch.Tensor, name) for name in ("item", "tolist", "__bool__", "__float__", "__int__")}

    def spy(name):
        def method(self, *args, **kwargs):
            caller = sys._getframe(1).f_code.co_filename
            if "/sdr/" in caller:
                reads.append((name, caller.rsplit("/", 1)[-1], self.numel()))
            return originals[name](self, *args, **kwargs)
        return method

    for name in originals:
        monkeypatch.setattr(torch.Tensor, name, spy(name))
    result = train(fresh_tiny_encoder(), TRIPLETS, TripletObjective(TEXTS),
                   _config(batch_size=1, checkpoint_every=0))  # 6 steps an epoch, 2 epochs
    # per epoch: after step 3 (steps 1-2), after step 5 (3-4), at the epoch's end (5-6)
    assert reads == [("tolist", "train.py", 2)] * 6
    assert result.steps == 12 and np.isfinite(result.history["loss"]).all()


class _BlockingCopies:
    """Records every call that sdr code makes to copy data onto ``device`` without ``non_blocking=True``:
    ``Tensor.to``/``Tensor.cuda``/``Tensor.copy_`` and ``torch.tensor``/``torch.as_tensor``/``torch.asarray``
    with that device as target, called from a file under ``lib/sdr/``.

    What it can see: on CPU the encoder's device *is* the host, so any call there that names the device is what
    a GPU run would make as a host-to-device copy; from pageable memory, or without ``non_blocking``, that
    copy makes the host wait until it is done. What it cannot see: copies inside torch or Hugging Face code,
    implicit ones (a GPU tensor indexed by a CPU index), and whether the source is page-locked (pinning needs
    CUDA: tests/test_gpu.py checks the prepared inputs there, and runs training under CUDA's sync debug mode)."""

    def __init__(self, device: torch.device, monkeypatch):
        self.device, self.calls = torch.device(device), []
        for owner, name in ((torch.Tensor, "to"), (torch.Tensor, "cuda"), (torch.Tensor, "copy_"),
                            (torch, "tensor"), (torch, "as_tensor"), (torch, "asarray")):
            monkeypatch.setattr(owner, name, self._spy(name, getattr(owner, name)))

    def _target(self, name, args, kwargs):
        if name == "cuda":
            return torch.device("cuda"), kwargs.get("non_blocking", len(args) > 1 and args[1])
        if name == "copy_":
            return args[0].device if args and isinstance(args[0], torch.Tensor) else None, \
                kwargs.get("non_blocking", len(args) > 1 and args[1])
        if name == "to":
            first = args[0] if args else None
            target = kwargs.get("device", first if isinstance(first, (str, torch.device)) else None)
            positional = len(args) > 2 and isinstance(first, (str, torch.device)) and args[2]
            return target, kwargs.get("non_blocking", positional)
        return kwargs.get("device"), False  # torch.tensor / as_tensor / asarray copy synchronously

    def _spy(self, name, original):
        def spy(*args, **kwargs):
            caller = sys._getframe(1)
            if "/sdr/" in caller.f_code.co_filename:
                target, non_blocking = self._target(name, args[1:] if name in ("to", "cuda", "copy_") else args,
                                                    kwargs)
                if target is not None and torch.device(target).type == self.device.type and not non_blocking:
                    where = f"{caller.f_code.co_filename.rsplit('/sdr/', 1)[-1]}:{caller.f_lineno}"
                    self.calls.append((name, where))
            return original(*args, **kwargs)
        return spy


@pytest.mark.parametrize("path", ["padded", "packed", "contrastive"])
def test_the_training_hot_path_makes_no_blocking_copy_to_the_device(path, fresh_tiny_encoder, monkeypatch):
    """Every copy of the trainer's hot path to the encoder's device is ``non_blocking`` from host memory the
    worker thread prepared (inputs, the index that restores the input order, a repeated text's row) or the
    objective built (per-triplet margins, contrastive masks): the host keeps queueing work on the GPU. The
    previous code failed this (``torch.as_tensor(..., device=...)`` twice a forward, the step loss's
    ``.to(device)``, the objectives' ``torch.tensor(..., device=...)``)."""
    from sdr.samplers import ContrastiveExample

    encoder = fresh_tiny_encoder()
    encoder.packed = path == "packed"
    if path == "contrastive":
        examples = [ContrastiveExample("a", ["b"], ["c", "d"]), ContrastiveExample("c", ["d", "a"], ["e"]),
                    ContrastiveExample("e", ["f"], ["h", "a"]), ContrastiveExample("g", ["a"], ["b"])]
        objective = sdr.train.ContrastiveObjective(TEXTS)
    else:  # per-triplet margins: a tensor built from the examples every call
        examples, objective = TRIPLETS, TripletObjective(TEXTS, per_example_margin=True)
    watch = _BlockingCopies(encoder.device, monkeypatch)
    result = train(encoder, examples, objective, _config(checkpoint_every=0, batch_size=3))
    assert np.isfinite(result.history["loss"]).all() and result.steps >= 4
    assert watch.calls == [], watch.calls


def test_the_blocking_copy_watch_sees_what_it_should(fresh_tiny_encoder, monkeypatch):
    """The watch itself: it records a copy to the device that blocks, from sdr code, and ignores one that
    does not block, one to another device, and calls from outside sdr."""
    watch = _BlockingCopies(torch.device("cpu"), monkeypatch)
    host = torch.arange(3)
    sdr.encoders.copy_to_device(host, "cpu")  # non_blocking: not recorded
    code = compile("import torch\ndef f(x):\n    x.to('cpu')\n    torch.as_tensor([1], device='cpu')\n"
                   "    x.to(torch.float64)\n", "/somewhere/lib/sdr/fake.py", "exec")
    namespace: dict = {}
    exec(code, namespace)
    namespace["f"](host)
    host.to("cpu")  # this test file is not sdr code
    assert [name for name, _ in watch.calls] == ["to", "as_tensor"]


def test_a_callback_sees_each_step_loss_when_the_step_ends(fresh_tiny_encoder):
    seen = []
    result = train(fresh_tiny_encoder(), TRIPLETS, TripletObjective(TEXTS), _config(checkpoint_every=0),
                   callback=lambda row: seen.append(dict(row)))
    assert [row["step"] for row in seen] == list(range(1, 7))
    assert [row["loss"] for row in seen] == result.history["loss"].tolist()


def test_a_nan_loss_stops_a_few_steps_later_naming_its_step_and_never_reaches_a_checkpoint(
        fresh_tiny_encoder, tmp_path, monkeypatch):
    # batch 1: one call per optimizer step; the 3rd call (optimizer step 2, 0-based) returns NaN
    objective = _NanAt(3)
    with pytest.raises(FloatingPointError, match=r"loss became nan at epoch 0, optimizer step 2: lower the"):
        train(fresh_tiny_encoder(), TRIPLETS, objective, _config(batch_size=1, checkpoint_every=2),
              output_dir=tmp_path)
    # the checkpoint due after step 4 read steps 3-4 first and stopped: step 2's is the last on disk
    assert objective.calls == 4
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert checkpoint["step"] == 2 and all(torch.isfinite(v).all() for v in checkpoint["model"].values())
    assert np.isfinite([row["loss"] for row in checkpoint["history"]]).all()

    # without checkpoints it is noticed at the next batched read: at most READ_LOSSES_EVERY steps late
    monkeypatch.setattr(sdr.train, "READ_LOSSES_EVERY", 2)
    objective = _NanAt(2)
    with pytest.raises(FloatingPointError, match=r"loss became nan at epoch 0, optimizer step 1"):
        train(fresh_tiny_encoder(), TRIPLETS, objective, _config(batch_size=1, checkpoint_every=0))
    assert objective.calls == 3  # read after step 3 (steps 1-2)
    objective = _NanAt(12)  # the last step: the final read catches it
    with pytest.raises(FloatingPointError, match=r"loss became nan at epoch 1, optimizer step 11"):
        train(fresh_tiny_encoder(), TRIPLETS, objective, _config(batch_size=1, checkpoint_every=0))


# ---------------------------------------------------------------------------------------- worker thread
def test_the_next_step_prepared_on_a_worker_thread_changes_nothing(fresh_tiny_encoder, monkeypatch):
    """TripletObjective declares its texts (encoder_inputs), so the trainer prepares each next step on a
    thread; a wrapper without that method gets no preparation. Both runs end bit-identical."""
    threads, used = [], []
    prepare, take = Encoder.prepare, Encoder._take_prepared

    def recording_prepare(self, texts):
        threads.append(threading.current_thread() is threading.main_thread())
        return prepare(self, texts)

    def recording_take(self, texts):
        prepared = take(self, texts)
        used.append(prepared is not None)
        return prepared

    monkeypatch.setattr(Encoder, "prepare", recording_prepare)
    monkeypatch.setattr(Encoder, "_take_prepared", recording_take)
    prefetched, plain = fresh_tiny_encoder(), fresh_tiny_encoder()
    first = train(prefetched, TRIPLETS, TripletObjective(TEXTS), _config())
    assert threads.count(False) == 6 and used == [True] * 6  # all six steps came from the worker thread
    threads.clear(), used.clear()
    objective = TripletObjective(TEXTS)
    second = train(plain, TRIPLETS, lambda encoder, batch: objective(encoder, batch), _config())
    assert threads == [True] * 6 and used == [False] * 6  # prepared by forward itself
    assert first.history["loss"].tolist() == second.history["loss"].tolist()
    assert not _same_weights(prefetched, plain)
    assert prefetched._prepared == {}  # nothing left behind


def test_prepared_inputs_are_dropped_when_the_chunking_changed(fresh_tiny_encoder):
    """The out-of-memory fallback changes the chunking between preparation and use: stale chunks are
    recomputed, not run."""
    encoder = fresh_tiny_encoder()
    encoder.eval()
    texts = list(TEXTS.values())
    encoder.expect(texts, encoder.prepare(texts))
    encoder.chunk_tokens = 40
    assert encoder._take_prepared(texts) is None
    with torch.no_grad():
        chunked = encoder(texts)
        encoder.chunk_tokens = 0
        whole = encoder(texts)
    torch.testing.assert_close(chunked, whole, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------------------------------- checkpoints
def test_checkpoints_and_records_load_with_weights_only(fresh_tiny_encoder, tmp_path):
    def kill_at_step_3(row):
        if row["step"] == 3:
            raise StopTraining

    with pytest.raises(StopTraining):
        train(fresh_tiny_encoder(), TRIPLETS, TripletObjective(TEXTS), _config(), output_dir=tmp_path,
              callback=kill_at_step_3)
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=True)  # no arbitrary unpickling
    assert checkpoint["step"] == 2 and len(checkpoint["rng"]) == 1  # one random state per process
    assert isinstance(checkpoint["rng"][0]["numpy"]["keys"], list)
    train(fresh_tiny_encoder(), TRIPLETS, TripletObjective(TEXTS), _config(), output_dir=tmp_path, resume=True)
    record = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert record["finished"] and record["device_plans"][0]["precision"] == "fp32"
    assert len(record["device_plans"]) == 2  # the first part and the resumed one


def _killed_at_step_3(encoder: Encoder, output_dir) -> None:
    def kill_at_step_3(row):
        if row["step"] == 3:
            raise StopTraining

    with pytest.raises(StopTraining):
        train(encoder, TRIPLETS, TripletObjective(TEXTS), _config(), output_dir=output_dir, callback=kill_at_step_3)


def test_a_checkpoint_is_restored_with_random_states_on_the_cpu_and_the_rest_on_the_device(fresh_tiny_encoder,
                                                                                          tmp_path):
    """The 'meta' device stands in for a GPU (no CUDA here): a state placed for it keeps every random state a
    CPU ByteTensor, which torch's generators require, and moves weights and optimizer moments to it. Loading
    the whole file onto the device, as resuming did before, gives states that ``torch.set_rng_state`` rejects."""
    _killed_at_step_3(fresh_tiny_encoder(), tmp_path)
    path = tmp_path / "checkpoint.pt"
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        torch.set_rng_state(load_checkpoint(path, map_location="meta")["rng"][0]["torch"])
    state = sdr.train.restore_checkpoint(path, torch.device("meta"))
    rng = state["rng"][0]["torch"]
    assert rng.device.type == "cpu" and rng.dtype == torch.uint8
    assert torch.equal(rng, load_checkpoint(path)["rng"][0]["torch"])
    assert {t.device.type for t in state["model"].values()} == {"meta"}
    moments = [v for s in state["optimizer"]["state"].values() for v in s.values() if isinstance(v, torch.Tensor)]
    assert moments and {t.device.type for t in moments} == {"meta"}
    torch.manual_seed(99)
    sdr.train._set_rng_state(state["rng"][0])
    assert torch.equal(torch.get_rng_state(), rng)


def test_resuming_never_maps_the_checkpoint_to_the_models_device(fresh_tiny_encoder, tmp_path, monkeypatch):
    """A GPU run, emulated: when the trainer asks ``torch.load`` for the model's own device, the random states
    come back off the CPU, as ``map_location=cuda`` moves them onto the GPU (then resuming raised
    ``TypeError: RNG state must be a torch.ByteTensor`` on every GPU). Resuming must not depend on that."""
    reference = fresh_tiny_encoder()
    reference_result = train(reference, TRIPLETS, TripletObjective(TEXTS), _config())
    _killed_at_step_3(fresh_tiny_encoder(), tmp_path)
    resumed = fresh_tiny_encoder()
    real_load = torch.load

    def load_as_on_a_gpu(path, map_location=None, **kwargs):
        state = real_load(path, map_location=map_location, **kwargs)
        if map_location is resumed.device and isinstance(state, dict) and "rng" in state:
            for rank_state in state["rng"]:  # where the model's device is a GPU, its tensors land there
                rank_state["torch"] = rank_state["torch"].to("meta")
        return state

    monkeypatch.setattr(torch, "load", load_as_on_a_gpu)
    result = train(resumed, TRIPLETS, TripletObjective(TEXTS), _config(), output_dir=tmp_path, resume=True)
    assert result.resumed_from_step == 2
    assert result.history["loss"].tolist() == reference_result.history["loss"].tolist()
    assert not _same_weights(resumed, reference)


def _as_legacy(state: dict) -> dict:
    """A checkpoint as the trainer wrote it before: one random-state dict, NumPy's as an array, Python's
    as a tuple (torch.load needs to unpickle NumPy for it)."""
    rng = state["rng"][0]
    numpy = rng["numpy"]
    legacy = {"python": (rng["python"]["version"], tuple(rng["python"]["state"]), rng["python"]["gauss"]),
              "numpy": (numpy["name"], np.asarray(numpy["keys"], dtype=np.uint32), numpy["position"],
                        numpy["has_gauss"], numpy["cached_gaussian"]),
              "torch": rng["torch"]}
    old = {key: value for key, value in state.items() if key not in ("scaler", "device_plans")}  # new keys
    return {**old, "rng": legacy}


def test_a_checkpoint_of_the_previous_format_still_resumes_exactly(fresh_tiny_encoder, tmp_path):
    reference = fresh_tiny_encoder()
    reference_result = train(reference, TRIPLETS, TripletObjective(TEXTS), _config())

    def kill_at_step_5(row):
        if row["step"] == 5:
            raise StopTraining

    with pytest.raises(StopTraining):
        train(fresh_tiny_encoder(), TRIPLETS, TripletObjective(TEXTS), _config(), output_dir=tmp_path,
              callback=kill_at_step_5)
    path = tmp_path / "checkpoint.pt"
    torch.save(_as_legacy(torch.load(path, weights_only=True)), path)
    with pytest.raises(Exception, match="Weights only load failed"):
        torch.load(path, weights_only=True)  # really the old format: NumPy inside
    assert load_checkpoint(path)["step"] == 4  # still weights_only, NumPy arrays allowed
    random.seed(123)
    np.random.seed(123)  # the resume must restore both from the checkpoint
    resumed = fresh_tiny_encoder()
    result = train(resumed, TRIPLETS, TripletObjective(TEXTS), _config(), output_dir=tmp_path, resume=True)
    assert result.resumed_from_step == 4
    assert result.history["loss"].tolist() == reference_result.history["loss"].tolist()
    assert not _same_weights(resumed, reference)
    # a finished run's record of the previous format: resuming it loads the model folder and its history
    torch.save(_as_legacy(torch.load(path, weights_only=True)), path)
    finished = train(fresh_tiny_encoder(), TRIPLETS, TripletObjective(TEXTS), _config(), output_dir=tmp_path,
                     resume=True)
    assert finished.resumed_from_step == 6 and finished.device_plans == []  # the old record has none
    assert finished.history["loss"].tolist() == reference_result.history["loss"].tolist()


def test_random_states_round_trip_through_plain_values():
    random.seed(5), np.random.seed(6), torch.manual_seed(7)
    state = sdr.train._rng_state()
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    random.seed(0), np.random.seed(0), torch.manual_seed(0)
    sdr.train._set_rng_state(state)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


# ---------------------------------------------------------------------------------------- data parallelism
@pytest.fixture
def one_process_group():
    """A real gloo process group of one process, made in this process (torchrun's rank 0 of 1)."""
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


class _HeadsByKind(torch.nn.Module):
    """Not example-wise (one call per micro-batch), with parameters of its own: a projection head per triplet
    kind, so a micro-batch of one kind leaves the other head unused (DDP must find it: find_unused_parameters)."""

    def __init__(self, dimension: int):
        super().__init__()
        torch.manual_seed(3)
        self.heads = torch.nn.ModuleDict({"hard": torch.nn.Linear(dimension, 8), "easy": torch.nn.Linear(dimension, 8)})
        self.triplet = TripletObjective(TEXTS)

    def forward(self, encoder, triplets):
        n = len(triplets)
        embedded = encoder(self.triplet.encoder_inputs(triplets))
        projected = self.heads[triplets[0].kind](embedded)
        return self.triplet.loss(projected[:n], projected[n:2 * n], projected[2 * n:])


@pytest.mark.parametrize("objective_kind", ["triplets", "heads"])
def test_in_a_process_group_the_step_runs_through_ddp_and_changes_no_number(
        objective_kind, fresh_tiny_encoder, tmp_path, one_process_group, monkeypatch):
    """In a process group (here a real gloo group of one process) the loss of a step runs inside PyTorch's
    DistributedDataParallel: gradients all-reduced in buckets during the backward pass through the summing
    hook, ``no_sync`` on all but the last call of an accumulated step, unused heads found. With one process
    that must change no number: the history, the weights and the objective's are those of a run without a
    group, bit for bit. Every all-reduce (DDP's gradient buckets and the step loss) gets a tensor on the
    parameters' device, which NCCL requires (CPU here; tests/test_gpu.py runs this with NCCL on a GPU)."""
    from torch.nn.parallel import DistributedDataParallel

    reduced = []
    real_all_reduce = torch.distributed.all_reduce

    def recording_all_reduce(tensor, *args, **kwargs):
        reduced.append((tensor.device, tensor.dtype, tensor.numel()))
        return real_all_reduce(tensor, *args, **kwargs)

    def objective_for(encoder):
        return TripletObjective(TEXTS) if objective_kind == "triplets" else _HeadsByKind(encoder.dimension)

    # heads: 2 micro-batches an optimizer step, each a call of its own
    config = _config(checkpoint_every=2) if objective_kind == "triplets" else _config(batch_size=1,
                                                                                       accumulation_steps=2)
    monkeypatch.setattr(torch.distributed, "all_reduce", recording_all_reduce)
    encoder = fresh_tiny_encoder()
    objective = objective_for(encoder)
    trainer = sdr.train.Trainer(encoder, TRIPLETS, objective, config, output_dir=tmp_path)
    result = trainer.fit()
    assert isinstance(trainer.step_module, DistributedDataParallel)
    assert trainer.step_module.find_unused_parameters == (objective_kind == "heads")

    monkeypatch.setattr(sdr.train, "in_process_group", lambda: False)  # the same run without a group
    plain_encoder = fresh_tiny_encoder()
    plain_objective = objective_for(plain_encoder)
    plain = sdr.train.Trainer(plain_encoder, TRIPLETS, plain_objective, config)
    plain_result = plain.fit()
    assert not isinstance(plain.step_module, DistributedDataParallel)
    assert result.history["loss"].tolist() == plain_result.history["loss"].tolist()
    assert not _same_weights(encoder, plain_encoder)
    if objective_kind == "heads":
        assert all(torch.equal(a, b) for a, b in zip(objective.parameters(), plain_objective.parameters()))

    assert {device for device, _, _ in reduced} == {encoder.device}
    losses = [entry for entry in reduced if entry[1] == torch.float64 and entry[2] == 1]
    assert len(losses) == result.steps == 6
    # the gradient buckets hold every trained parameter once a step, the pooler (never used) left out
    trained = sum(p.numel() for n, p in encoder.named_parameters() if not n.startswith("model.pooler."))
    if objective_kind == "heads":
        trained += sum(p.numel() for p in objective.parameters())
    assert sum(numel for _, dtype, numel in reduced if dtype == torch.float32) == result.steps * trained
    assert len(torch.load(tmp_path / "checkpoint.pt", weights_only=True)["rng"]) == 1


def test_out_of_memory_in_a_process_group_is_raised_with_what_to_set(fresh_tiny_encoder, one_process_group):
    """One process cannot rerun a step in smaller chunks while the others wait in its all-reduce: in a process
    group an out-of-memory error ends training, saying which settings make the step fit."""
    encoder = fresh_tiny_encoder()

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    encoder._pool = out_of_memory
    with pytest.raises(torch.OutOfMemoryError, match=r"recompute_chunks=True\) or a smaller chunk_tokens"):
        train(encoder, TRIPLETS, TripletObjective(TEXTS), _config(checkpoint_every=0))
    assert encoder.chunk_tokens == 0 and not encoder.recompute_chunks  # nothing shrunk, settings restored


def test_the_ddp_wrapper_ignores_the_pooler_and_sums(fresh_tiny_encoder, one_process_group):
    """What DDP is told: the encoder's pooler (no forward reaches it) is ignored rather than searched for each
    step, buffers are not re-broadcast before every forward, and the hook sums (DDP's default averages over
    processes, while each process's loss is already its share of the step)."""
    step_loss = sdr.distributed.StepLoss(fresh_tiny_encoder(), TripletObjective(TEXTS))
    assert sdr.distributed.never_used(step_loss) == ["encoder.model.pooler.dense.weight",
                                                     "encoder.model.pooler.dense.bias"]
    wrapped = sdr.distributed.data_parallel(step_loss, objective_has_parameters=False)
    assert not wrapped.find_unused_parameters
    assert not getattr(wrapped, "forward_sync_buffers", getattr(wrapped, "broadcast_buffers", True))
    assert set(wrapped.parameters_to_ignore) == set(sdr.distributed.never_used(step_loss))
    bucket = torch.arange(4.0)

    class _Bucket:
        def buffer(self):
            return bucket

    # one process: the sum is the tensor itself (an average over 1 would be too: see the two-process tests,
    # where a mean would halve every update and fail the comparison with one process)
    assert torch.equal(sdr.distributed.sum_gradients(None, _Bucket()).wait(), torch.arange(4.0))


def test_the_worker_thread_gets_the_cuda_device_as_an_index(monkeypatch):
    """torch.cuda.set_device refuses a bare ``cuda`` ("Expected a torch.device with a specified index"): every
    training run on a GPU failed in the prefetch thread's initializer. The index is read in the calling thread."""
    calls = []
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    monkeypatch.setattr(torch.cuda, "set_device", lambda index: calls.append(index))
    assert sdr.train._cuda_index(torch.device("cuda")) == 3
    assert sdr.train._cuda_index(torch.device("cuda:1")) == 1
    assert sdr.train._cuda_index(torch.device("cpu")) is None
    sdr.train._use_device(sdr.train._cuda_index(torch.device("cuda")))
    sdr.train._use_device(None)
    assert calls == [3]
