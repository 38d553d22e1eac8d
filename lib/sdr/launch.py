"""One training run from a run spec on disk: ``sdr train RUN_FOLDER``, so ``torchrun`` can train it on N GPUs.

A chapter trains in its own (notebook) process; to train one of its runs data-parallel on several GPUs, the
run is written to its run folder as a *run spec* (:func:`write_run_spec`: the model to load with its options,
the examples, the texts they embed, the objective's kind and settings, the :class:`~sdr.train.TrainConfig`),
then::

    torchrun --standalone --nproc_per_node 4 -m sdr.cli train RUN_FOLDER

trains it (every process reads the spec, :func:`~sdr.distributed.init_distributed` joins them, the trainer runs
data-parallel, rank 0 writes ``checkpoint.pt`` and ``model/`` into RUN_FOLDER), and a rerun of the chapter with
``resume=True`` — the same ``train(..., output_dir=RUN_FOLDER, resume=True)`` call — loads the finished run from
that folder instead of training. Interrupted, the same torchrun command (same N) resumes from its last
checkpoint. ``book/reproducing.md`` says how to do it for a chapter's run.

Files of a run folder: ``run_spec.json`` (encoder options, objective, config), ``examples.jsonl`` (one example
a line), ``texts.json`` (paper id → text, only the ids the examples use).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path

from sdr.jsonio import InputError, load_json, read_jsonl
from sdr.outputs import output_folder, safe_name

SPEC_FILE, EXAMPLES_FILE, TEXTS_FILE = "run_spec.json", "examples.jsonl", "texts.json"
SPEC_FORMAT = 1
#: what :meth:`sdr.encoders.Encoder.load` takes from a spec (the device is the process's own)
ENCODER_OPTIONS = ("name_or_path", "pooling", "max_length", "num_layers", "special_tokens", "normalize", "packed",
                   "precision")
OBJECTIVES = ("triplet", "contrastive")


# ------------------------------------------------------------------------------------------ writing
def _objective_spec(objective) -> tuple[dict, str]:
    """The objective's kind and settings, and the kind of its examples; other objectives are refused."""
    from sdr.losses import GeneralContrastiveLoss, TripletMarginLoss
    from sdr.objectives import ContrastiveObjective, TripletObjective

    # exact types: a subclass may compute something else, which the spec could not reproduce
    if type(objective) is TripletObjective and type(objective.loss) is TripletMarginLoss:
        loss = objective.loss
        return ({"kind": "triplet", "margin": loss.margin, "distance": loss.distance, "reduction": loss.reduction,
                 "eps": loss.eps, "per_example_margin": bool(objective.per_example_margin)}, "triplet")
    if type(objective) is ContrastiveObjective and type(objective.loss) is GeneralContrastiveLoss:
        loss = objective.loss
        return ({"kind": "contrastive", "temperature": loss.temperature, "similarity": loss.similarity,
                 "reduction": loss.reduction}, "contrastive")
    raise ValueError(f"write_run_spec: cannot write a {type(objective).__name__} objective (loss "
                     f"{type(getattr(objective, 'loss', None)).__name__}); a run spec holds TripletObjective with "
                     "TripletMarginLoss or ContrastiveObjective with GeneralContrastiveLoss. Train other objectives "
                     "in the chapter's process")


def _example_record(example, kind: str, number: int) -> dict:
    from sdr.samplers import ContrastiveExample, Triplet

    expected = Triplet if kind == "triplet" else ContrastiveExample
    if not isinstance(example, expected):
        raise ValueError(f"write_run_spec: example {number} is a {type(example).__name__}; the {kind} objective "
                         f"trains on {expected.__name__} examples")
    return asdict(example)


def _paper_ids(record: dict, kind: str) -> list[str]:
    if kind == "triplet":
        return [record["query"], record["positive"], record["negative"]]
    return [record["query"], *record["positives"], *record["negatives"]]


def write_run_spec(folder: str | Path, encoder_options: Mapping, examples: Sequence, objective, config) -> Path:
    """Write a training run to ``folder`` for ``sdr train`` (see the module docstring); returns the folder.

    ``encoder_options``: what :meth:`sdr.encoders.Encoder.load` is called with (``name_or_path`` — a model name
    or folder every process can read, e.g. a chapter's encoder saved with ``encoder.save`` just before
    training — and ``pooling``, ``max_length``, ``num_layers``, ``special_tokens``, ``normalize``, ``packed``,
    ``precision``). ``objective``: a :class:`~sdr.objectives.TripletObjective` or
    :class:`~sdr.objectives.ContrastiveObjective` (others are refused); its texts are written for the ids the
    examples use (a missing one is an error naming the example). ``config``: the run's TrainConfig.
    """
    from sdr.train import TrainConfig

    folder = Path(folder)
    unknown = sorted(set(encoder_options) - set(ENCODER_OPTIONS))
    if unknown or "name_or_path" not in encoder_options:
        raise ValueError(f"write_run_spec: encoder_options need 'name_or_path' and may hold {ENCODER_OPTIONS}; "
                         f"got unknown {unknown}" if unknown else "write_run_spec: encoder_options need 'name_or_path'")
    if not isinstance(config, TrainConfig):
        raise ValueError(f"write_run_spec: config must be a TrainConfig, got {type(config).__name__}")
    if len(examples) == 0:
        raise ValueError("write_run_spec: no examples")
    objective_spec, kind = _objective_spec(objective)
    records = [_example_record(example, kind, number) for number, example in enumerate(examples)]
    texts = {}
    for number, record in enumerate(records):
        for paper in _paper_ids(record, kind):
            if paper not in objective.texts:
                raise KeyError(f"write_run_spec: example {number} uses paper {paper!r}, which has no text in the "
                               "objective's texts")
            texts[paper] = objective.texts[paper]
    options = {key: list(value) if key == "special_tokens" else value for key, value in encoder_options.items()}
    options["name_or_path"] = str(options["name_or_path"])
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / EXAMPLES_FILE, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    (folder / TEXTS_FILE).write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
    spec = {"format": SPEC_FORMAT, "encoder": options, "objective": objective_spec, "config": asdict(config),
            "examples": EXAMPLES_FILE, "texts": TEXTS_FILE}
    (folder / SPEC_FILE).write_text(json.dumps(spec, indent=1), encoding="utf-8")  # last: a spec is complete
    return folder


# ------------------------------------------------------------------------------------------ reading
def read_run_spec(folder: str | Path):
    """``(encoder_options, examples, objective, config)`` of a run folder, every field checked (errors name
    the file, the line or key, and what was expected)."""
    from sdr.losses import GeneralContrastiveLoss, TripletMarginLoss
    from sdr.objectives import ContrastiveObjective, TripletObjective
    from sdr.samplers import ContrastiveExample, Triplet
    from sdr.train import TrainConfig

    folder = Path(folder)
    spec_path = folder / SPEC_FILE
    spec = load_json(spec_path, "a run spec written by sdr.train.write_run_spec")
    if not isinstance(spec, dict) or spec.get("format") != SPEC_FORMAT:
        raise InputError(f"{spec_path}: expected a run spec of format {SPEC_FORMAT} (write_run_spec writes one)")
    for key in ("encoder", "objective", "config"):
        if not isinstance(spec.get(key), dict):
            raise InputError(f"{spec_path}: '{key}' must be an object")
    encoder_options = spec["encoder"]
    unknown = sorted(set(encoder_options) - set(ENCODER_OPTIONS))
    if unknown or not isinstance(encoder_options.get("name_or_path"), str):
        raise InputError(f"{spec_path}: 'encoder' needs 'name_or_path' (a string) and may hold {ENCODER_OPTIONS}; "
                         f"unknown: {unknown}")
    for key, default in (("examples", EXAMPLES_FILE), ("texts", TEXTS_FILE)):  # names from data: inside the folder
        try:
            safe_name(spec.get(key, default), f"{spec_path}: {key!r}")
        except ValueError as error:
            raise InputError(str(error)) from None
    config_fields = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(spec["config"]) - config_fields)
    if unknown:
        raise InputError(f"{spec_path}: 'config' has fields TrainConfig does not: {unknown}")
    try:
        config = TrainConfig(**spec["config"])
    except (TypeError, ValueError) as error:
        raise InputError(f"{spec_path}: 'config': {error}") from None

    settings = dict(spec["objective"])
    kind = settings.pop("kind", None)
    if kind not in OBJECTIVES:
        raise InputError(f"{spec_path}: 'objective.kind' must be one of {OBJECTIVES}, got {kind!r}")
    texts = load_json(folder / spec.get("texts", TEXTS_FILE), "paper id → text (a JSON object)")
    if not isinstance(texts, dict) or not all(isinstance(v, str) for v in texts.values()):
        raise InputError(f"{folder / TEXTS_FILE}: expected a JSON object of paper id → text")
    try:
        if kind == "triplet":
            per_example_margin = settings.pop("per_example_margin", False)
            objective = TripletObjective(texts, TripletMarginLoss(**settings), per_example_margin=per_example_margin)
        else:
            objective = ContrastiveObjective(texts, GeneralContrastiveLoss(**settings))
    except (TypeError, ValueError) as error:
        raise InputError(f"{spec_path}: 'objective' ({kind}): {error}") from None

    example_type = Triplet if kind == "triplet" else ContrastiveExample
    names = {f.name for f in fields(example_type)}
    examples_path = folder / spec.get("examples", EXAMPLES_FILE)
    examples = []
    for line, record in read_jsonl(examples_path, f"{example_type.__name__} records"):
        unknown = sorted(set(record) - names)
        if unknown:
            raise InputError(f"{examples_path}:{line}: unknown field(s) {unknown}; expected the fields {sorted(names)}")
        try:
            example = example_type(**record)
        except TypeError as error:
            raise InputError(f"{examples_path}:{line}: {error}; expected the fields {sorted(names)}") from None
        missing = [paper for paper in _paper_ids(record, kind) if paper not in texts]
        if missing:
            raise InputError(f"{examples_path}:{line}: paper(s) {missing[:3]} have no text in {TEXTS_FILE}")
        examples.append(example)
    return encoder_options, examples, objective, config


# ------------------------------------------------------------------------------------------ a chapter's runs
WRITE_SPECS_VARIABLE = "SDR_WRITE_RUN_SPECS"


class RunSpecWritten(RuntimeError):
    """A chapter's training call wrote its run spec instead of training (``SDR_WRITE_RUN_SPECS=1``)."""


def hand_over(encoder, examples, objective, config, output_dir, resume: bool, **hooks) -> None:
    """With ``SDR_WRITE_RUN_SPECS=1`` in the environment, a chapter's ``train(..., output_dir=RUN)`` call that
    would train writes RUN's spec (the encoder as it is now saved to ``RUN/start_model``) and stops with
    :class:`RunSpecWritten`, naming the torchrun command; the chapter rerun with ``resume`` on loads the
    finished run and stops at its next run. Runs a spec cannot hold (other objectives, a batch sampler, a
    validation or a callback: ``hooks``) train in this process, saying why. Does nothing without the
    variable, without ``output_dir``, inside a process group, or for a finished run that ``resume`` loads."""
    import os

    from sdr.checkpoints import load_checkpoint
    from sdr.distributed import in_process_group

    if not os.environ.get(WRITE_SPECS_VARIABLE) or output_dir is None or in_process_group():
        return
    folder = Path(output_dir)
    checkpoint = folder / "checkpoint.pt"
    if resume and checkpoint.exists() and load_checkpoint(checkpoint).get("finished"):
        return  # the finished run: train() loads it
    given = sorted(name for name, hook in hooks.items() if hook is not None)
    try:
        if given:
            raise ValueError(f"a run spec holds no {', '.join(given)}")
        _objective_spec(objective)
    except ValueError as why:
        print(f"{WRITE_SPECS_VARIABLE}: {folder} trains in this process: {why}", flush=True)
        return
    start = encoder.save(folder / "start_model")
    options = {"name_or_path": str(start), "normalize": encoder.normalize, "packed": encoder.packed,
               "precision": encoder.precision}
    write_run_spec(folder, options, examples, objective, config)
    raise RunSpecWritten(
        f"{folder}: run spec written ({len(examples)} examples, {config.epochs} epoch(s)) instead of training "
        f"here ({WRITE_SPECS_VARIABLE} is set). Train it on N GPUs with\n  torchrun --standalone "
        f"--nproc_per_node N -m sdr.cli train {folder}\nthen rerun this chapter with resume on (-p resume true): "
        "it loads the finished run and stops at its next run")


# ------------------------------------------------------------------------------------------ running
def train_run(folder: str | Path, progress: bool | None = None):
    """Train the run of ``folder`` in this process (one of torchrun's, or alone): join the process group,
    load the encoder on this process's device, train with ``resume=True`` into ``folder``."""
    import dataclasses

    from sdr.distributed import init_distributed
    from sdr.encoders import Encoder
    from sdr.train import Trainer

    encoder_options, examples, objective, config = read_run_spec(folder)
    run_outputs(folder, encoder_options).check()  # before the model loads: what training writes, checked
    device = init_distributed()
    options = dict(encoder_options)
    encoder = Encoder.load(options.pop("name_or_path"), device=str(device), **options)
    if progress is not None:
        config = dataclasses.replace(config, progress=progress)
    # the Trainer itself, not train(): this is the run a chapter handed over (never hand it over again)
    return Trainer(encoder, examples, objective, config, output_dir=folder, resume=True).fit()


def run_outputs(folder: str | Path, encoder_options: Mapping):
    """What a run writes in its folder, for the output layer (:class:`sdr.outputs.Outputs`): ``checkpoint.pt``
    (rewritten at every checkpoint) and ``model/``, never over the spec's files or the model it starts from,
    never through a link, writable before the model is loaded."""
    from sdr.outputs import Outputs

    folder = Path(folder)
    spec = load_json(folder / SPEC_FILE, "a run spec written by sdr.train.write_run_spec")
    start = Path(str(encoder_options.get("name_or_path", "")))
    inputs = {SPEC_FILE: folder / SPEC_FILE, "examples": folder / spec.get("examples", EXAMPLES_FILE),
              "texts": folder / spec.get("texts", TEXTS_FILE), "the start model": start if start.exists() else None}
    return Outputs(inputs=inputs, outputs={"RUN_FOLDER checkpoint.pt": folder / "checkpoint.pt"},
                   stores={"RUN_FOLDER model/": folder / "model"}, maintained=["RUN_FOLDER checkpoint.pt"])


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train", help="train one run from its run spec (sdr.train.write_run_spec); under torchrun on N GPUs")
    parser.add_argument("run_folder", type=output_folder,
                        help="the run folder holding run_spec.json (checkpoint.pt and model/ are written there)")
    parser.set_defaults(func=_train_command)


def _train_command(args) -> int:
    import torch.distributed as dist

    from sdr.distributed import world

    result = train_run(args.run_folder)
    rank, size = world()
    if rank == 0:
        print(f"sdr train: {args.run_folder}: {result.steps} optimizer steps on {size} process(es) "
              f"(resumed from step {result.resumed_from_step}); model in {result.model_dir}")
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    return 0
