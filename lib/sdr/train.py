"""One trainer for every chapter: :class:`Trainer`, and :func:`train`, the call every chapter makes.

SPECTER and SciNCL train SciBERT with AdamW (lr 2e-5), an effective batch of 32 (batch 8 × 4 accumulation
steps), warm-up then linear decay, 2 epochs (Cohan et al. 2020 §4; Ostendorff et al. 2022 §4.3). The
thesis uses a cosine schedule with 100 warm-up steps (§4.4); SciNCL's code also offers the slanted-triangular
schedule (10 % warm-up). All three are options here.

What a method contributes is an *objective* (:mod:`sdr.objectives`): a callable
``objective(encoder, examples) -> loss`` that turns a batch of sampled examples (triplets, contrastive groups,
labelled sentences) into a scalar loss. The trainer owns everything else: seeding, device, mixed precision on
GPUs, gradient accumulation, clipping, the schedule, a progress bar with the loss, a stop on a non-finite loss,
checkpoints every N optimizer steps (:mod:`sdr.checkpoints`), ``resume=True`` that ends with the same weights as
an uninterrupted run, and a saved sentence-transformers folder.

**The steps** (:class:`Trainer`, overridable one by one, as d2l's ``fit → fit_epoch`` and
sentence-transformers' ``compute_loss`` are): :meth:`~Trainer.start` (seeding, batches, optimizer, schedule,
device plan), :meth:`~Trainer.resume` (a checkpoint's state, or a finished run's result),
:meth:`~Trainer.fit_epoch`, :meth:`~Trainer.step` (one optimizer step: :meth:`~Trainer.compute_loss`, forward
and backward of its calls, then :meth:`~Trainer.optimizer_step`), :meth:`~Trainer.after_step` (loss reads,
checkpoints, the callback), :meth:`~Trainer.end_epoch` (validation), :meth:`~Trainer.finish` (the model folder
and the run's record); :meth:`~Trainer.save_checkpoint` and :meth:`~Trainer.read_losses` in between.

**Device.** How the encoder runs is its :class:`~sdr.encoders.DevicePlan` (:func:`device_plan`, chosen from
the GPU's compute capability, overridden by ``Encoder.packed`` / ``Encoder.precision``): bf16 autocast with
packed FlashAttention chunks on sm80+ GPUs, fp16 autocast with a gradient scaler (``torch.amp.GradScaler``)
and padded SDPA chunks on older ones (T4, V100), float32 on CPU. The plan of every run (and of each resumed
part) is recorded in ``TrainResult.device_plans`` and in the checkpoint.

**Several processes** (``torchrun``; :mod:`sdr.distributed`; ``sdr train RUN_FOLDER``, :mod:`sdr.launch`): the
loss of a step (encoder and objective) runs inside PyTorch's ``DistributedDataParallel``: rank 0's weights are
broadcast when it is built, gradients are summed in buckets during the backward pass (only on the last call
of an accumulated step), step losses are summed, and each rank's random state is saved in the checkpoint and
restored on resume.

**No host sync on the hot path.** A step's loss stays on the device; the host reads the losses of several
steps at once (every :data:`READ_LOSSES_EVERY` steps, before each checkpoint and validation, at the end, and
after every step when a ``callback`` wants the row), and only then checks that they are finite. A non-finite
loss therefore stops training a few steps after it occurred, with the error naming the step where it did;
no checkpoint is written after that step (a checkpoint first reads every loss before it). The weights in
memory then hold the later steps' updates. The next step's texts are tokenized and packed, and its index
tensors built, in page-locked memory on a worker thread while the device runs this one; copies to the device
never block the host (``non_blocking``; tests/test_train_device.py watches for blocking ones).

Checkpoints hold tensors and plain Python values only and load with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm.auto import tqdm

from sdr.checkpoints import atomic_save, cpu_copy, load_checkpoint, rank_rng_state, restore_checkpoint  # noqa: F401
from sdr.checkpoints import rng_state as _rng_state
from sdr.checkpoints import set_rng_state as _set_rng_state
from sdr.distributed import StepLoss, data_parallel, gather_rng_states, in_process_group, init_distributed  # noqa: F401
from sdr.distributed import world as _world
from sdr.encoders import DevicePlan, Encoder, device_plan  # noqa: F401  (device_plan: sdr.train's API too)
from sdr.launch import RunSpecWritten, hand_over, read_run_spec, train_run, write_run_spec  # noqa: F401
from sdr.objectives import ContrastiveObjective, TripletObjective, evaluate_loss  # noqa: F401
from sdr.schedule import SCHEDULES, make_schedule, seed_everything  # noqa: F401  (sdr.train's API too)
from sdr.schedule import batches as _batches  # noqa: F401  (the benchmarks use it)
from sdr.schedule import epoch_batches as _epoch_batches
from sdr.schedule import step_calls as _calls

@dataclass
class TrainConfig:
    epochs: int = 2
    batch_size: int = 8
    accumulation_steps: int = 4  # 8 × 4 = SPECTER's effective batch of 32
    learning_rate: float = 2e-5
    weight_decay: float = 0.01
    schedule: str = "linear"
    warmup_steps: int | None = None  # None: warmup_ratio of all optimizer steps
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    seed: int = 0
    # mixed precision on GPUs as the device plan chooses (bf16 on sm80+, fp16 + gradient scaler on older ones;
    # Encoder.precision overrides); False: float32. CPU runs stay float32 (and bit-reproducible) either way.
    bf16: bool = True
    checkpoint_every: int = 0  # optimizer steps; 0 = no intermediate checkpoints
    progress: bool = True
    bitfit: bool = False  # train only the encoder's bias terms (BitFit, Ben Zaken et al. 2022; SciNCL Table 2)
    # Each forward pass runs its distinct texts in length-sorted chunks of at most this many padded tokens,
    # each padded only to its own longest text (0: one chunk per call).
    chunk_tokens: int | None = None  # None: the device plan's (sdr.encoders.DevicePlan.chunk_tokens)
    # Recompute each chunk's activations in the backward pass: memory of one chunk, not of the whole
    # optimizer step, for about a third more compute. Turn on when the effective batch does not fit.
    recompute_chunks: bool = False

    def __post_init__(self):
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        for name in ("epochs", "batch_size", "accumulation_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


@dataclass
class TrainResult:
    history: pd.DataFrame  # one row per optimizer step: epoch, step, loss, learning_rate
    model_dir: Path | None
    steps: int
    resumed_from_step: int
    validation: list[float] = field(default_factory=list)  # validate()'s score after each epoch
    best_epoch: int | None = None  # the epoch whose weights the encoder ends with (None: no validation)
    # Each out-of-memory retry: the step, and the chunking it continued with (see MIN_CHUNK_TOKENS).
    memory_adaptations: list[dict] = field(default_factory=list)
    # How the encoder ran (DevicePlan.record(): device, capability, precision, scaler, attention, description):
    # one entry per part of the run, so a run resumed on another machine lists both.
    device_plans: list[dict] = field(default_factory=list)

    @property
    def device_plan(self) -> dict | None:
        """The plan of the run's last part."""
        return self.device_plans[-1] if self.device_plans else None


#: TrainConfig fields that do not change what a run computes: a resumed run may differ in them.
NOT_IDENTITY = ("progress", "checkpoint_every", "recompute_chunks", "chunk_tokens")


READ_LOSSES_EVERY = 8
"""Optimizer steps whose losses stay on the device before the host reads them (one transfer), and so the
most steps a non-finite loss can be noticed late."""


MIN_CHUNK_TOKENS = 512
"""The smallest chunk the out-of-memory fallback tries: below one 512-token text nothing is gained."""


def _shrink_chunks(encoder: Encoder) -> dict | None:
    """After an out-of-memory error: the next cheaper way to run the same step, applied to ``encoder``.

    First recompute chunk activations in the backward pass (memory of one chunk instead of the whole
    step), then halve the chunk down to :data:`MIN_CHUNK_TOKENS`. Neither changes the step's arithmetic:
    the loss still sees every embedding of the step, so the effective batch stays what the method asks
    for. Returns the new setting, or None when nothing smaller is left.
    """
    if not encoder.recompute_chunks:
        encoder.recompute_chunks = True
    elif encoder.chunk_tokens == 0 or encoder.chunk_tokens > MIN_CHUNK_TOKENS:
        current = encoder.chunk_tokens or encoder.plan.chunk_tokens
        encoder.chunk_tokens = max(MIN_CHUNK_TOKENS, current // 2)
    else:
        return None
    return {"chunk_tokens": encoder.chunk_tokens, "recompute_chunks": encoder.recompute_chunks}


class StopTraining(Exception):
    """Raised by a callback to interrupt training (tests use it to simulate a killed run)."""


def _trainable_parameters(encoder: Encoder, objective_module: nn.Module | None,
                          bitfit: bool) -> list[tuple[str, nn.Parameter]]:
    """(name, parameter) of everything the optimizer updates: the encoder's (only its biases with
    BitFit) and the objective's own parameters (projection heads, class weights), which BitFit keeps
    trainable since they start untrained."""
    named = [(f"encoder.{n}", p) for n, p in encoder.named_parameters()
             if p.requires_grad and (not bitfit or n.endswith("bias"))]
    if objective_module is not None:
        named += [(f"objective.{n}", p) for n, p in objective_module.named_parameters() if p.requires_grad]
    return named


def _cuda_index(device: torch.device) -> int | None:
    """The index of the CUDA device ``device`` names, read in the calling thread (``cuda`` without an index is
    that thread's current device); None for other devices."""
    if device.type != "cuda":
        return None
    return device.index if device.index is not None else torch.cuda.current_device()


def _use_device(index: int | None) -> None:
    """The worker thread's CUDA device (an index: ``torch.cuda.set_device`` refuses a bare ``cuda``): page-locking
    memory there (the next step's inputs) would otherwise open a context on GPU 0 from every process of a
    multi-GPU run."""
    if index is not None:
        torch.cuda.set_device(index)


class Trainer:
    """One training run of ``encoder`` on ``examples`` with ``objective`` (see :func:`train` for the
    arguments and the module docstring for what the trainer owns). ``Trainer(...).fit()`` is ``train(...)``.

    The run is a sequence of small steps a subclass may override (a test overrides :meth:`read_losses` to
    watch device syncs; a method could override :meth:`compute_loss`):

    * :meth:`start`: seed, the epochs' batches, optimizer, schedule, device plan, gradient scaler; then
      :meth:`resume` when asked, which may end the run (a finished run's result);
    * :meth:`prepare_encoder`: the config's chunking and precision, BitFit's frozen weights, the worker
      thread, the data-parallel wrapper (:func:`sdr.distributed.data_parallel`), training mode;
    * :meth:`fit_epoch` → :meth:`step` (→ :meth:`compute_loss`, :meth:`optimizer_step`) → :meth:`after_step`
      per optimizer step, then :meth:`end_epoch` (losses read, validation, its checkpoint);
    * :meth:`restore_encoder` (always), then :meth:`finish`: the final checkpoint, the best epoch's weights,
      the model folder and the run's record.
    """

    def __init__(self, encoder: Encoder, examples: Sequence, objective: Callable, config: TrainConfig,
                 output_dir: str | Path | None = None, resume: bool = False,
                 callback: Callable[[dict], None] | None = None,
                 batch_sampler: Callable[[int, int, int], Sequence[Sequence[int]]] | None = None,
                 validate: Callable[[Encoder], float] | None = None):
        if len(examples) == 0:
            raise ValueError("no training examples: the sampler produced none (see its report)")
        self.encoder, self.examples, self.objective, self.config = encoder, examples, objective, config
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self.checkpoint_path = self.output_dir / "checkpoint.pt" if self.output_dir else None
        self.resume_requested = resume
        self.callback, self.batch_sampler, self.validate = callback, batch_sampler, validate
        self.objective_module = objective if isinstance(objective, nn.Module) else None
        self.example_wise = bool(getattr(objective, "example_wise", False))
        self.encoder_inputs = getattr(objective, "encoder_inputs", None)
        self.prefetcher: ThreadPoolExecutor | None = None
        self.bar = None
        self.frozen: list[nn.Parameter] = []
        self.settings_before = None

    # ------------------------------------------------------------------------------------------ the run
    def fit(self) -> TrainResult:
        finished = self.start()
        if finished is not None:
            return finished
        try:
            self.prepare_encoder()
            for epoch, groups in enumerate(self.epoch_groups):
                self.fit_epoch(epoch, groups)
        finally:
            self.restore_encoder()
        return self.finish()

    def start(self) -> TrainResult | None:
        """Everything before the first step; returns a finished run's result when :meth:`resume` found one."""
        config, encoder = self.config, self.encoder
        self.rank, self.world = _world()
        # in a process group (torchrun), even of one process: the step runs through DDP
        self.distributed = in_process_group()
        seed_everything(config.seed + self.rank)  # each process its own dropout masks
        if self.objective_module is not None:
            self.objective_module.to(encoder.device)
        self.epoch_groups = []
        for epoch in range(config.epochs):
            batches = _epoch_batches(len(self.examples), config, self.batch_sampler, epoch)
            self.epoch_groups.append([batches[i:i + config.accumulation_steps]
                                      for i in range(0, len(batches), config.accumulation_steps)])
        self.flat_groups = [group for groups in self.epoch_groups for group in groups]
        self.total_steps = len(self.flat_groups)
        warmup = (config.warmup_steps if config.warmup_steps is not None
                  else int(config.warmup_ratio * self.total_steps))

        trainable = _trainable_parameters(encoder, self.objective_module, config.bitfit)
        if not trainable:
            raise ValueError("nothing to train: no parameter of the encoder or objective requires a gradient")
        no_decay = ("bias", "LayerNorm.weight", "layer_norm", "norm.weight")
        parameters = [
            {"params": [p for n, p in trainable if not any(k in n for k in no_decay)],
             "weight_decay": config.weight_decay},
            {"params": [p for n, p in trainable if any(k in n for k in no_decay)], "weight_decay": 0.0},
        ]
        parameters = [group for group in parameters if group["params"]]
        self.optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate, eps=1e-8,
                                           fused=encoder.device.type == "cuda" or None)
        self.scheduler = make_schedule(self.optimizer, config.schedule, self.total_steps, warmup)
        self.trained_parameters = [p for _, p in trainable]

        precision_before = encoder.precision
        if not config.bf16:
            encoder.precision = "fp32"
        try:
            self.plan = encoder.plan
        finally:
            encoder.precision = precision_before
        # fp16 needs its loss scaled so small gradients survive; disabled, the scaler passes everything through
        self.scaler = torch.amp.GradScaler(encoder.device.type, enabled=self.plan.grad_scaler)
        self.history: list[dict] = []
        self.validation: list[float] = []
        self.device_plans: list[dict] = []
        self.best: dict | None = None  # {"epoch", "score", "model", "objective"} of the best validated epoch
        self.global_step = 0
        self.memory_adaptations: list[dict] = []
        self.pending: list[tuple[dict, torch.Tensor]] = []  # history rows whose loss is still on the device
        if self.resume_requested and self.checkpoint_path is not None and self.checkpoint_path.exists():
            finished = self.resume()
            if finished is not None:
                return finished
        self.resumed_from = self.global_step
        self.device_plans.append(self.plan.record())
        return None

    def resume(self) -> TrainResult | None:
        """Continue from ``checkpoint.pt``: refuses another TrainConfig; a finished run's record loads its
        model folder and returns its result (nothing is trained again)."""
        path, encoder, objective_module = self.checkpoint_path, self.encoder, self.objective_module
        state = restore_checkpoint(path, encoder.device)
        defaults = asdict(TrainConfig())  # a field added since the checkpoint was written: its default
        saved = {k: v for k, v in {**defaults, **state["config"]}.items() if k not in NOT_IDENTITY}
        current = {k: v for k, v in asdict(self.config).items() if k not in NOT_IDENTITY}
        if saved != current:
            raise ValueError(f"{path}: written with a different TrainConfig {saved}; this run has {current}")
        if state.get("finished"):
            # a finished run: its weights are the model folder's; nothing is trained again
            return _finished_run(state, encoder, objective_module, self.output_dir / "model", path,
                                 self.rank, self.world)
        encoder.load_state_dict(state["model"])
        if objective_module is not None:
            if state.get("objective") is None:
                raise ValueError(f"{path}: has no objective state, but this run's objective "
                                 f"{type(self.objective).__name__} has parameters")
            objective_module.load_state_dict(state["objective"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if state.get("scaler") and self.scaler.is_enabled():
            self.scaler.load_state_dict(state["scaler"])
        _set_rng_state(rank_rng_state(state["rng"], path, self.rank, self.world))
        self.history = list(state["history"])
        self.validation = list(state.get("validation", []))
        self.device_plans = list(state.get("device_plans", []))
        self.best = state.get("best")
        self.global_step = int(state["step"])
        return None

    def prepare_encoder(self) -> None:
        """The config's chunking and precision on the encoder (restored by :meth:`restore_encoder`), BitFit's
        frozen weights, the worker thread, the step's module (data-parallel over several processes), training
        mode and the progress bar."""
        encoder, config = self.encoder, self.config
        self.settings_before = encoder.chunk_tokens, encoder.recompute_chunks, encoder.precision
        encoder.chunk_tokens = config.chunk_tokens if config.chunk_tokens is not None else encoder.plan.chunk_tokens
        encoder.recompute_chunks = config.recompute_chunks
        if not config.bf16:
            encoder.precision = "fp32"
        # BitFit: no gradient for the frozen weights at all (saves their backward work); restored at the end
        self.frozen = [p for n, p in encoder.named_parameters() if config.bitfit and p.requires_grad
                       and not n.endswith("bias")]
        for parameter in self.frozen:
            parameter.requires_grad_(False)
        self.prefetcher = ThreadPoolExecutor(max_workers=1, initializer=_use_device,
                                             initargs=(_cuda_index(encoder.device),)) \
            if callable(self.encoder_inputs) else None
        step_loss = StepLoss(encoder, self.objective)
        # several processes: DDP (built after BitFit froze its weights, as it registers what needs gradients)
        # broadcasts rank 0's weights, resumed ones included, and sums gradients during the backward pass
        self.step_module = data_parallel(step_loss, self._objective_has_parameters()) if self.distributed \
            else step_loss
        self.set_mode(True)
        self.bar = tqdm(total=self.total_steps, initial=self.global_step, desc="training",
                        disable=not config.progress, unit="step")
        self.steps_done = 0  # optimizer steps of the loop so far, including those skipped on resume
        self.expected: list[tuple[str, ...]] = []  # prepared inputs registered for this step

    def _objective_has_parameters(self) -> bool:
        return self.objective_module is not None and any(
            p.requires_grad for p in self.objective_module.parameters())

    def restore_encoder(self) -> None:
        """Undo :meth:`prepare_encoder`'s changes to the encoder (also after an error)."""
        if self.prefetcher is not None:
            self.prefetcher.shutdown(wait=True, cancel_futures=True)
        self.encoder.forget_prepared()
        for parameter in self.frozen:
            parameter.requires_grad_(True)
        if self.settings_before is not None:
            self.encoder.chunk_tokens, self.encoder.recompute_chunks, self.encoder.precision = self.settings_before
        if self.bar is not None:
            self.bar.close()

    def set_mode(self, training: bool) -> None:
        self.encoder.train(training)
        if self.objective_module is not None:
            self.objective_module.train(training)

    # ------------------------------------------------------------------------------------------ epochs
    def fit_epoch(self, epoch: int, groups: list[list[np.ndarray]]) -> None:
        """The epoch's optimizer steps (those done before a resumed checkpoint are skipped), then
        :meth:`end_epoch`."""
        for group in groups:
            self.steps_done += 1
            if self.steps_done <= self.global_step:
                continue  # done before the checkpoint we resumed from
            self.after_step(self.step(epoch, group))
        self.end_epoch(epoch)

    def end_epoch(self, epoch: int) -> None:
        """The epoch's losses, then validation (keeping the best epoch's weights) and its checkpoint."""
        self.read_losses()
        if self.validate is None or len(self.validation) != epoch:
            return
        self.set_mode(False)
        score = float(self.validate(self.encoder))
        self.set_mode(True)
        if not math.isfinite(score):
            raise FloatingPointError(f"validate returned {score} after epoch {epoch}")
        self.validation.append(score)
        if self.best is None or score > self.best["score"]:
            self.best = {"epoch": epoch, "score": score, "model": cpu_copy(self.encoder.state_dict()),
                         "objective": None if self.objective_module is None
                         else cpu_copy(self.objective_module.state_dict())}
        self.save_checkpoint()

    # ------------------------------------------------------------------------------------------ one step
    def step(self, epoch: int, group: list[np.ndarray]) -> dict:
        """One optimizer step over ``group`` (its micro-batches); returns its history row (the loss still
        NaN: it is read later, see :meth:`read_losses`)."""
        if self.prefetcher is not None:
            if not self.expected:  # the first step: nothing prepared it
                self.expected = self.prefetch(group)
            coming = self.prefetch(self.flat_groups[self.steps_done]) \
                if self.steps_done < len(self.flat_groups) else []
        # The step's micro-batch adapts to memory: on an out-of-memory error the same step runs again (same
        # random state) in smaller chunks, never with a smaller effective batch.
        random_state = _rng_state()
        while True:
            try:
                step_loss = self.compute_loss(group)
                break
            except torch.OutOfMemoryError as error:
                self.optimizer.zero_grad(set_to_none=True)
                if self.encoder.device.type == "cuda":
                    torch.cuda.empty_cache()
                if self.distributed:  # the other processes wait in this step's all-reduce: no rerun alone
                    raise torch.OutOfMemoryError(
                        f"{error}\nIn data-parallel training a process cannot rerun a step in smaller chunks "
                        "alone: set TrainConfig(recompute_chunks=True) or a smaller chunk_tokens") from error
                setting = _shrink_chunks(self.encoder)
                if setting is None:
                    raise
                self.memory_adaptations.append({"step": self.global_step + 1, **setting})
                _set_rng_state(random_state)
        if self.prefetcher is not None:  # inputs prepared for this step that its calls did not use
            for key in self.expected:
                self.encoder._prepared.pop(key, None)
            self.expected = coming
        if self.distributed:
            torch.distributed.all_reduce(step_loss)
        learning_rate = self.optimizer_step()
        self.global_step += 1
        row = {"epoch": epoch, "step": self.global_step, "loss": float("nan"), "learning_rate": learning_rate}
        self.history.append(row)
        self.pending.append((row, step_loss))
        self.bar.update(1)
        return row

    def prefetch(self, group: list[np.ndarray]) -> list[tuple[str, ...]]:
        """Tokenize and chunk a step's texts on the worker thread; returns the keys registered."""
        keys = []
        for batch, _ in self.calls(group):
            texts = list(self.encoder_inputs([self.examples[i] for i in batch]))
            self.encoder.expect(texts, self.prefetcher.submit(self.encoder.prepare, texts))
            keys.append(tuple(texts))
        return keys

    def calls(self, group: list[np.ndarray]) -> list[tuple[np.ndarray, bool]]:
        """This process's objective calls of a step (:func:`_calls`), each with whether it counts. In
        data-parallel training a process that has no example of the step (a short last step) still runs one
        call, weighted zero, so it takes part in the step's gradient all-reduce."""
        calls = [(batch, True) for batch in _calls(group, self.example_wise, self.rank, self.world)]
        if not calls and self.distributed:
            calls = [(group[0][:1], False)]
        return calls

    def compute_loss(self, group: list[np.ndarray]) -> torch.Tensor:
        """Forward and backward over one optimizer step's calls; returns the step's loss, a float64 tensor
        on the encoder's device (read by the host later, see :meth:`read_losses`). With several processes,
        gradients are all-reduced during the backward of the step's last call only."""
        self.optimizer.zero_grad(set_to_none=True)
        group_size = sum(len(b) for b in group)
        step_loss = torch.zeros((), dtype=torch.float64, device=self.encoder.device)
        calls = self.calls(group)
        for number, (batch, counts) in enumerate(calls):
            # several processes: gradients are summed across them during the last call's backward only
            accumulate = self.distributed and number < len(calls) - 1
            with self.step_module.no_sync() if accumulate else contextlib.nullcontext():
                with self.plan.autocast(self.encoder.device.type):
                    loss = self.step_module([self.examples[i] for i in batch])
                # Weight by batch size so a short last batch counts as much as its examples.
                weighted = loss * len(batch) / group_size if counts else loss * 0.0
                self.scaler.scale(weighted).backward()
            if counts:
                step_loss = step_loss + loss.detach().double() * len(batch) / group_size
        return step_loss

    def optimizer_step(self) -> float:
        """Unscale (fp16), clip, step the optimizer and the schedule; returns the learning rate used."""
        config, scaler = self.config, self.scaler
        scaler.unscale_(self.optimizer)  # clipping sees the true gradients
        if config.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.trained_parameters, config.max_grad_norm)
        learning_rate = self.scheduler.get_last_lr()[0]
        scaler.step(self.optimizer)  # skips the update when fp16 gradients overflowed
        scaler.update()
        if scaler.is_enabled():
            with warnings.catch_warnings():  # a skipped update makes the scheduler warn; expected
                warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step")
                self.scheduler.step()
        else:
            self.scheduler.step()
        return learning_rate

    def after_step(self, row: dict) -> None:
        """Read the losses when due (every :data:`READ_LOSSES_EVERY` steps, before a checkpoint, or every
        step for a callback), write the checkpoint when due, then call the callback."""
        config = self.config
        checkpoint_due = bool(config.checkpoint_every) and self.global_step % config.checkpoint_every == 0
        if self.callback is not None or checkpoint_due:
            self.read_losses()
        elif len(self.pending) > READ_LOSSES_EVERY:
            self.read_losses(keep_newest=1)
        if checkpoint_due:
            self.save_checkpoint()
        if self.callback is not None:
            self.callback(row)

    def read_losses(self, keep_newest: int = 0) -> None:
        """Copy the pending steps' losses to the host in one transfer (all but the ``keep_newest`` newest,
        which may still be running) and stop at the first non-finite one."""
        taken = self.pending[:len(self.pending) - keep_newest]
        if not taken:
            return
        values = torch.stack([loss for _, loss in taken]).tolist()
        del self.pending[:len(taken)]
        for (row, _), value in zip(taken, values):
            if not math.isfinite(value):
                raise FloatingPointError(
                    f"loss became {value} at epoch {row['epoch']}, optimizer step {row['step'] - 1}: lower the "
                    "learning rate, check the inputs for empty texts, or turn mixed precision off "
                    "(TrainConfig(bf16=False))")
            row["loss"] = value
        self.bar.set_postfix(loss=f"{values[-1]:.4f}", refresh=False)

    # ------------------------------------------------------------------------------------------ saving
    def save_checkpoint(self) -> None:
        """``checkpoint.pt`` (weights, optimizer, schedule, scaler, every rank's random state, history,
        validation, best epoch): written by rank 0, atomically; a collective (every rank calls it)."""
        if self.checkpoint_path is None:
            return
        rng_states = gather_rng_states(self.world)  # a collective: every rank takes part
        if self.rank != 0:  # one writer in data-parallel training
            return
        self.checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
        objective_state = self.objective_module.state_dict() if self.objective_module is not None else None
        atomic_save({"model": self.encoder.state_dict(), "optimizer": self.optimizer.state_dict(),
                     "objective": objective_state, "scheduler": self.scheduler.state_dict(),
                     "scaler": self.scaler.state_dict(), "rng": rng_states, "history": self.history,
                     "validation": self.validation, "best": self.best, "step": self.global_step,
                     "device_plans": self.device_plans, "config": asdict(self.config)}, self.checkpoint_path)

    def finish(self) -> TrainResult:
        """The last epoch's checkpoint, the best epoch's weights, and (``output_dir``) the model folder with
        a small record of the finished run in place of the full checkpoint."""
        self.set_mode(False)
        encoder, objective_module, best = self.encoder, self.objective_module, self.best
        model_dir = None
        if self.output_dir is not None:
            self.save_checkpoint()  # the last epoch's state, whatever epoch is kept below
        if best is not None:
            encoder.load_state_dict(best["model"])
            if objective_module is not None:
                objective_module.load_state_dict(best["objective"])
        if self.output_dir is not None:
            model_dir = self.output_dir / "model"
            final_rng = gather_rng_states(self.world)  # a collective: every rank takes part
        if model_dir is not None and self.rank == 0:
            if model_dir.exists():
                shutil.rmtree(model_dir)
            encoder.save(model_dir)
            if objective_module is not None:
                torch.save(objective_module.state_dict(), model_dir / "objective.pt")
            # The full checkpoint (weights, optimizer moments, the best epoch's copy: about 4× the model) gives
            # way to a small record of the finished run; resuming it loads the model folder. Written last, so
            # a kill before this line leaves the full checkpoint, from which the run finishes again.
            record = {"finished": True, "history": self.history, "validation": self.validation,
                      "step": self.global_step, "rng": final_rng,
                      "best_epoch": best["epoch"] if best is not None else None,
                      "device_plans": self.device_plans, "config": asdict(self.config)}
            atomic_save(record, self.checkpoint_path)
        return TrainResult(pd.DataFrame(self.history), model_dir, self.global_step, self.resumed_from,
                           self.validation, best["epoch"] if best is not None else None,
                           self.memory_adaptations, self.device_plans)


def train(encoder: Encoder, examples: Sequence, objective: Callable, config: TrainConfig,
          output_dir: str | Path | None = None, resume: bool = False,
          callback: Callable[[dict], None] | None = None,
          batch_sampler: Callable[[int, int, int], Sequence[Sequence[int]]] | None = None,
          validate: Callable[[Encoder], float] | None = None) -> TrainResult:
    """Fit ``encoder`` on ``examples`` with ``objective`` (``Trainer(...).fit()``); see the module docstring.

    ``output_dir`` receives ``checkpoint.pt`` (every ``checkpoint_every`` optimizer steps, after each
    validation and at the end) and ``model/`` (a sentence-transformers folder, plus ``objective.pt`` with
    the objective's state when the objective is a ``torch.nn.Module``). With ``resume=True`` training
    continues from ``output_dir/checkpoint.pt`` when it exists. ``callback(row)`` is called after each
    optimizer step (it makes the host read every step's loss: one device sync a step).

    ``objective`` may be a ``torch.nn.Module`` with its own parameters (projection heads, class
    weights): it is moved to the encoder's device, optimized and clipped with the encoder, checkpointed
    and restored on resume. An objective with ``encoder_inputs(examples) -> texts`` (the texts its call
    embeds) gets the next step's texts tokenized and chunked on a worker thread.

    ``batch_sampler(n_examples, seed, epoch)`` returns the epoch's micro-batches (lists of example
    indices; a pure function of seed and epoch so a resumed run sees the same batches), e.g. a
    :class:`sdr.samplers.PKBatchSampler`; ``config.accumulation_steps`` of them make one optimizer step.
    Default: the examples shuffled by (seed, epoch) in batches of ``config.batch_size``.

    ``validate(encoder) -> float`` (higher is better) runs in eval mode after every epoch; training ends
    with the best epoch's weights (encoder and objective), and the result records every epoch's score
    (``validation``) and ``best_epoch``.

    In data-parallel training (``torchrun``, see :mod:`sdr.distributed` and ``sdr train``) every process
    passes the same arguments (``output_dir`` included, on a file system all of them see). With
    ``SDR_WRITE_RUN_SPECS=1`` a run with an ``output_dir`` is written for ``sdr train`` instead
    (:func:`sdr.launch.hand_over`).
    """
    # SDR_WRITE_RUN_SPECS=1: write this run for `torchrun ... sdr train` and stop, instead of training here
    hand_over(encoder, examples, objective, config, output_dir, resume, callback=callback,
              batch_sampler=batch_sampler, validate=validate)
    return Trainer(encoder, examples, objective, config, output_dir=output_dir, resume=resume, callback=callback,
                   batch_sampler=batch_sampler, validate=validate).fit()


def _finished_run(record: dict, encoder: Encoder, objective_module: nn.Module | None,
                  model_dir: Path, checkpoint_path: Path, rank: int = 0, world: int = 1) -> TrainResult:
    """Resume a run that had finished: load the weights it saved and return its recorded result."""
    from safetensors.torch import load_file

    weights = model_dir / "model.safetensors"
    if not weights.exists():
        raise FileNotFoundError(f"{model_dir}: the finished run's model folder has no model.safetensors; "
                                "delete its checkpoint.pt to train the run again")
    encoder.model.load_state_dict(load_file(str(weights), device=str(encoder.device)))
    if objective_module is not None:
        objective_path = model_dir / "objective.pt"
        if not objective_path.exists():
            raise FileNotFoundError(f"{model_dir}: no objective.pt, but this run's objective "
                                    f"{type(objective_module).__name__} has parameters")
        objective_module.load_state_dict(torch.load(objective_path, map_location=encoder.device, weights_only=True))
        objective_module.eval()
    encoder.eval()
    # as after the uninterrupted run, for whatever the caller draws next (a run trained by several processes
    # and loaded by one: rank 0's state)
    _set_rng_state(rank_rng_state(record["rng"], checkpoint_path, rank, world, finished=True))
    step = int(record["step"])
    return TrainResult(pd.DataFrame(record["history"]), model_dir, step, step, list(record["validation"]),
                       record["best_epoch"], device_plans=list(record.get("device_plans", [])))
