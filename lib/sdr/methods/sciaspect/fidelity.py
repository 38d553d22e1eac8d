"""What the SciAspect page may pair with the thesis, and what differs from it (issue 37).

* :func:`pair`: the one rule by which a row of ours is set beside a thesis row as like for like — the same training
  data source, the same model family read the same way, the same training protocol and the same benchmark protocol
  (:class:`Setting`); otherwise the rows are shown apart with the reasons (:func:`our_setting`, :data:`THESIS`).
* :func:`what_differs`: the page's "what differs from the thesis" list, generated from what this run read and did
  (:class:`Facts`); :func:`expect_stated` holds it to the deviations detected independently (:data:`DETECTORS`), so a
  deviation that holds and is not on the page stops the chapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import pandas as pd

from sdr.book.chapter import ChapterCheckFailed

__all__ = ["Setting", "THESIS", "THESIS_SCIREPEVAL_TASKS", "our_setting", "Pairing", "pair", "Facts",
           "unmeasured_sets", "scirepeval_task_counts", "sweep_row_seeds", "facts_of", "DETECTORS", "deviation_lines",
           "expect_stated", "Differs", "what_differs"]

THESIS_MODEL = "allenai/scibert_scivocab_uncased"


@dataclass(frozen=True)
class Setting:
    """What a row was measured with, in the words the pairing rule compares (each field must be equal)."""

    data: str
    model: str
    protocol: str
    benchmark: str


#: The thesis' non-SciDocs SciRepEval tasks (6 in-task, 11 out-of-task): its printed averages give them, (6 × In
#: task Avg + 11 × Out of task Avg) / 17 = Avg without SciDocs for 7 of its 8 models (tests/test_sciaspect.py).
THESIS_SCIREPEVAL_TASKS = {"in_train": 6, "out_of_train": 11}

#: How the thesis measured its rows (§4.3-4.5), per benchmark. The data is named by what it holds, not by the route
#: that fetched it: the thesis crawled the Graph API, the book reads the bulk datasets by default, and either gives
#: today's graph (the deviation list states the snapshot difference).
THESIS = {
    benchmark: Setting(data="Semantic Scholar citations with intents of SciNCL's w/o-leakage anchors",
                       model="SciBERT (12 layers), [CLS], 512 tokens",
                       protocol="every instance, 2 epochs, effective batch 8, lr 2e-05, cosine, 100 warm-up steps",
                       benchmark=protocol)
    for benchmark, protocol in {
        "scidocs": "SciDocs (allenai/scidocs data) with recommendations: all 12 metrics",
        "mdcr": "MDCR (zoranmedic/mdcr) test split",
        "scirepeval": "SciRepEval, non-SciDocs tasks: in-task 6, out-of-task 11",
    }.items()}


def our_setting(run, inputs, benchmark: str, scirepeval_tasks: Mapping[str, int] | None = None) -> Setting:
    """This run's :class:`Setting` for ``benchmark`` (``scidocs``, ``mdcr`` or ``scirepeval``; ``scirepeval_tasks``:
    the tasks its scores counted, ``{"in_train", "out_of_train"}``), worded like :data:`THESIS` where it is the
    same. A replica or a dry-run fixture is never the thesis' data."""
    p = run.p

    def kind(item) -> str:
        if item is None or item.kind != "real":
            return "a replica"
        return "the paper dry run's fixture" if _dry_run() else "real"

    data = THESIS[benchmark].data if kind(getattr(inputs, "citations", None)) == "real" else \
        kind(getattr(inputs, "citations", None))
    family = "SciBERT" if p.model_name == THESIS_MODEL else p.model_name
    layers = "12 layers" if p.model_layers == 0 and p.model_name == THESIS_MODEL else \
        f"{p.model_layers or 'all'} layers"
    pooling = {"cls": "[CLS]", "mean": "mean pooling"}.get(p.pooling, p.pooling)
    model = f"{family} ({layers}), {pooling}, {p.max_length} tokens"
    protocol = (f"{'every instance' if not p.train_examples else f'{p.train_examples} instances'}, {p.epochs} epochs, "
                f"effective batch {p.batch_size * p.accumulation_steps}, lr {p.learning_rate:g}, cosine, "
                f"{p.warmup_steps} warm-up steps")
    read = kind(getattr(inputs, benchmark, None))
    if benchmark == "scidocs":
        shown = THESIS["scidocs"].benchmark if read == "real" and p.recommendations else (
            f"SciDocs ({read}) " + ("with recommendations: all 12 metrics" if p.recommendations
                                    else "without recommendations: 10 metrics"))
    elif benchmark == "mdcr":
        shown = THESIS["mdcr"].benchmark if read == "real" else f"MDCR ({read})"
    else:
        tasks = dict(scirepeval_tasks or {})
        shown = (f"SciRepEval{'' if read == 'real' else f' ({read})'}, non-SciDocs tasks: "
                 f"in-task {tasks.get('in_train', 0)}, out-of-task {tasks.get('out_of_train', 0)}")
    return Setting(data, model, protocol, shown)


def _dry_run() -> bool:
    from sdr import datasets

    return datasets.dry_run()


@dataclass
class Pairing:
    """Whether our rows pair with the thesis' rows, and why not."""

    paired: bool
    reasons: list[str] = field(default_factory=list)

    @property
    def line(self) -> str:
        if self.paired:
            return "paired with the thesis' rows: the same data source, model, training and benchmark protocol"
        return "shown apart from the thesis' rows, not paired: " + "; ".join(self.reasons)


def pair(ours: Setting, theirs: Setting) -> Pairing:
    """The pairing rule: every field of the two settings equal, else not paired, with each differing field as a
    reason (ours, then the thesis')."""
    reasons = [f"{f.name}: ours {getattr(ours, f.name)} / the thesis' {getattr(theirs, f.name)}" for f in fields(Setting)
               if getattr(ours, f.name) != getattr(theirs, f.name)]
    return Pairing(not reasons, reasons)


# ------------------------------------------------------------------------------------------------- deviations
@dataclass
class Facts:
    """What the deviations are read from: this run's parameters, inputs and training, independent of the lines."""

    profile: str
    training_real: bool
    dry_run: bool
    benchmarks_replica: list[str]
    model_name: str
    model_layers: int
    pooling: str
    max_length: int
    train_examples: int
    epochs: int
    effective_batch: int
    learning_rate: float
    warmup_steps: int
    weight_decay: float
    max_grad_norm: float
    seeds: int  # the leaderboard models' seeds (their CSFCube rows; the seeds part trains those after the first)
    sweep_seeds: int  # the fewest training seeds behind a τ or α sweep row's SciDocs score (0: no sweep row trained)
    recommendations: bool
    not_comparable: list[str]  # "CSFCube (ids: S2 corpus id)": the evaluation sets whose ids are another kind
    training_ids: str  # the kind of the training graph's ids
    scirepeval_tasks: dict
    rows_not_trained: int
    thesis_rows: int
    alpha_span: float
    training_dataset: str = "s2ag_bulk_thesis"  # the registry dataset the training graph was read from


def unmeasured_sets(overlap: pd.DataFrame) -> list[str]:
    """The evaluation sets of the leakage table (:func:`sdr.methods.sciaspect.remove_evaluation_papers`) whose
    overlap is not measured ("CSFCube (ids: S2 corpus id)") or measured for part of the graph or of the set only
    ("SciDocs (only through the S2 paper ids of 9 of the graph's 10 papers)"), as the deviation line names them."""
    unmeasured = []
    for name in overlap.index:
        note = str(overlap.loc[name, "note"])
        if name == "all (removed)":
            continue
        if pd.isna(overlap.loc[name, "in the training graph"]):
            unmeasured.append(f"{name} (ids: {overlap.loc[name, 'ids']})")
        elif note.startswith("partly comparable: "):
            what = note.removeprefix("partly comparable: ").split("; removed from")[0]
            unmeasured.append(f"{name} (only {what.replace(' (those the fetch gave one)', '')})")
    return unmeasured


def scirepeval_task_counts(table_6_11: pd.DataFrame) -> dict[str, int]:
    """How many in-task and out-of-task tasks our Table 6.11 averages count, read from the rows
    :data:`sdr.methods.sciaspect.TASKS_COUNTED` of our columns (those named "(this book …)"): ``{}`` when the table
    has no column of ours (no model scored on SciRepEval at this run). A column of ours without those rows, with a
    count that is not a whole number, or columns that counted different tasks stop the chapter: the page's "SciRepEval
    task set" deviation is read from them and would otherwise be dropped without a word."""
    from sdr.methods.sciaspect.data import TASKS_COUNTED

    ours = [c for c in table_6_11.columns if "(this book" in str(c)]
    if not ours:
        return {}
    labels = {group: label for label, group in TASKS_COUNTED.items() if group != "scidocs"}
    missing = [label for label in labels.values() if label not in table_6_11.index]
    if missing:
        raise ChapterCheckFailed(f"Table 6.11: our columns {ours} lack the rows {missing} (TASKS_COUNTED), from which "
                                 "the page states how many tasks our averages count")
    counts = table_6_11.loc[list(labels.values()), ours]
    bad = counts.isna() | (counts != counts.round())
    if bad.any().any():
        raise ChapterCheckFailed(f"Table 6.11: tasks counted must be whole numbers in every column of ours; found\n"
                                 f"{counts}")
    if (counts.nunique(axis=1) > 1).any():
        raise ChapterCheckFailed(f"Table 6.11: our columns counted different tasks (each reads the same SciRepEval "
                                 f"data):\n{counts}")
    return {group: int(counts.loc[label, ours[0]]) for group, label in labels.items()}


def sweep_row_seeds(models) -> dict[tuple[str, str], list[int]]:
    """The training seeds behind each τ and α sweep row (:data:`SWEEPS`) of this run: the SciDocs table scores each
    row's one trained encoder (``models.trained``, trained with ``models.config.seed`` by :func:`train_models`). The
    ``seeds`` part (:func:`sdr.methods.sciaspect.seed_rows`) retrains the leaderboard models only and scores them on
    CSFCube only, so it adds no seed to a sweep row."""
    from sdr.methods.sciaspect.registry import SWEEPS

    return {key: [models.config.seed] for key in models.trained
            if any(key[0] == sweep.table and key[1].startswith(sweep.prefix) for sweep in SWEEPS.values())}


def facts_of(run, inputs, training, models, table_6_11: pd.DataFrame) -> Facts:
    """The :class:`Facts` of this run (``table_6_11``: :func:`sdr.methods.sciaspect.scoring.scirepeval_table`)."""
    from sdr import book, datasets
    from sdr.methods.sciaspect.registry import NAMED_MODELS, PROJECTION_ROWS, THESIS_TABLES

    p = run.p
    overlap = training.overlap
    not_comparable = unmeasured_sets(overlap)
    tasks = scirepeval_task_counts(table_6_11)
    paper = book.read_paper_table("thesis_scidocs_ablations")
    thesis_rows = paper[paper["table"].isin(THESIS_TABLES)]
    alphas = paper[(paper["table"] == "Table 6.6")]["avg"]
    covered = set(models.runs) | {(table, label) for table, (name, base_row, labels) in PROJECTION_ROWS.items()
                                  if NAMED_MODELS[name] in models.trained
                                  for label in [*labels.values(), *([base_row] if base_row else [])]}
    uncovered = [key not in covered for key in zip(thesis_rows["table"], thesis_rows["model"])]
    return Facts(
        profile=run.profile, training_real=inputs.citations.kind == "real", dry_run=datasets.dry_run(),
        benchmarks_replica=[name for name in ("scidocs", "mdcr", "scirepeval", "csfcube")
                            if getattr(inputs, name).kind != "real"],
        model_name=p.model_name, model_layers=p.model_layers, pooling=p.pooling, max_length=p.max_length,
        train_examples=p.train_examples, epochs=p.epochs, effective_batch=p.batch_size * p.accumulation_steps,
        learning_rate=p.learning_rate, warmup_steps=p.warmup_steps, weight_decay=models.config.weight_decay,
        max_grad_norm=models.config.max_grad_norm, seeds=len(models.seeds),
        sweep_seeds=min(map(len, sweep_row_seeds(models).values()), default=0), recommendations=p.recommendations,
        not_comparable=not_comparable, training_ids=str(overlap.loc["all (removed)", "ids"]), scirepeval_tasks=tasks,
        rows_not_trained=sum(uncovered), thesis_rows=len(thesis_rows),
        alpha_span=float(alphas.max() - alphas.min()), training_dataset=inputs.citations.name)


#: Each deviation the page must state when it holds, detected from the facts alone.
DETECTORS = {
    "training data": lambda f: True,  # a replica, a dry-run fixture, or today's API rather than the thesis' snapshot
    "model": lambda f: (f.model_name, f.model_layers, f.pooling, f.max_length) != (THESIS_MODEL, 0, "cls", 512),
    "budget": lambda f: (f.train_examples, f.epochs, f.effective_batch, f.learning_rate, f.warmup_steps)
    != (0, 2, 8, 2e-5, 100),
    "optimizer defaults": lambda f: True,  # weight decay and clipping: the thesis states neither
    "validation anchors": lambda f: True,  # the thesis' 19k validation anchors: not read
    "benchmarks": lambda f: bool(f.benchmarks_replica) or f.dry_run,
    "recommendations": lambda f: not f.recommendations,
    "leakage not measured": lambda f: bool(f.not_comparable),
    "SciRepEval task set": lambda f: bool(f.scirepeval_tasks) and f.scirepeval_tasks != THESIS_SCIREPEVAL_TASKS,
    "SciRepEval baselines": lambda f: True,  # Table 6.11's SciBERT, SPECTER, SciNCL: the SciRepEval paper's
    "one seed": lambda f: f.sweep_seeds < 2,  # the seeds part retrains the leaderboard models, not the sweep rows
    "rows not trained": lambda f: f.rows_not_trained > 0,
    "SciAspectWeighted": lambda f: True,
}


def deviation_lines(facts: Facts) -> dict[str, str]:
    """The page's lines, each under its :data:`DETECTORS` key, for every deviation of this run."""
    f = facts
    lines: dict[str, str] = {}
    if not f.training_real:
        lines["training data"] = ("Training data: a replica (a synthetic corpus served as the Semantic Scholar Graph "
                                  "API and fetched by the real fetcher), not the thesis' citations.")
    elif f.dry_run:
        lines["training data"] = "Training data: the paper dry run's fixture in the fetch's layout, not the thesis'."
    else:
        route = ("the Semantic Scholar bulk datasets of one release (s2ag_bulk_thesis: citations, papers and abstracts "
                 "filtered to the anchors; the links carry intents but not which context has which)"
                 if f.training_dataset == "s2ag_bulk_thesis" else "today's Semantic Scholar Graph API")
        lines["training data"] = (f"Training data: fetched from {route} for the same anchors; the thesis' snapshot is "
                                  "not released, and papers, links and intents have changed since (S2 re-classifies "
                                  "intents), so the graph differs from the thesis' one.")
    if DETECTORS["model"](f):
        lines["model"] = (f"Model: {f.model_name} ({f.model_layers or 'all'} layers), {f.pooling} pooling, "
                          f"{f.max_length} tokens; the thesis: SciBERT, [CLS], 512 tokens.")
    if DETECTORS["budget"](f):
        lines["budget"] = (f"Training: {f.train_examples or 'every'} instance(s) a model, {f.epochs} epoch(s), "
                           f"effective batch {f.effective_batch}, lr {f.learning_rate:g}, {f.warmup_steps} warm-up "
                           "steps; the thesis: every instance, 2 epochs, batch 8, lr 2e-5, 100 warm-up steps.")
    lines["optimizer defaults"] = (f"Weight decay {f.weight_decay:g} and gradient clipping at norm {f.max_grad_norm:g} "
                                   "are the book trainer's defaults: the thesis states neither.")
    lines["validation anchors"] = ("The thesis' 19k validation anchors (§4.3) are not read: no model selection, each "
                                   "model keeps its last weights.")
    if DETECTORS["benchmarks"](f):
        lines["benchmarks"] = ("Benchmarks: " + (", ".join(f.benchmarks_replica) + " are replicas"
                                                 if f.benchmarks_replica else "the paper dry run's fixtures")
                               + ", not the released test sets.")
    if not f.recommendations:
        lines["recommendations"] = ("SciDocs' recommendations task is not run: rows are compared on avg10 (the ten "
                                    "other metrics), not on the thesis' 12-metric average.")
    if f.not_comparable:
        lines["leakage not measured"] = (f"Leakage against {', '.join(f.not_comparable)} is not measured, or for part "
                                         f"of the graph only: the training graph's ids are another kind "
                                         f"({f.training_ids}), and only papers the fetch gave an id of the set's kind "
                                         "are compared (the bulk route's paperSha, the Graph API's corpusId; a Graph "
                                         "API graph fetched before corpusId was requested for linked papers has the "
                                         "anchors' alone: fetch it again), or the set and the graph are not the same "
                                         "data (released beside synthetic); the overlap table's notes say which.")
    if DETECTORS["SciRepEval task set"](f):
        tasks = f.scirepeval_tasks
        lines["SciRepEval task set"] = (f"Table 6.11: our averages count {tasks['in_train']} in-task and "
                                        f"{tasks['out_of_train']} out-of-task tasks, those of the SciRepEval data read "
                                        "(the public registry lacks Feeds); the thesis' count "
                                        f"{THESIS_SCIREPEVAL_TASKS['in_train']} and "
                                        f"{THESIS_SCIREPEVAL_TASKS['out_of_train']} (read from its averages): our "
                                        "columns are shown apart, not paired.")
    lines["SciRepEval baselines"] = ("Table 6.11's SciBERT, SPECTER and SciNCL columns are quoted by the thesis from "
                                     "the SciRepEval paper, not measured by it.")
    if DETECTORS["one seed"](f):
        ours = ("no sweep point is trained at this run" if not f.sweep_seeds else
                "each of our τ and α sweep points is one training run (one seed)")
        retrained = (f"; the `seeds` part retrains only the CSFCube leaderboard models ({f.seeds} seeds at this run) "
                     "and scores them on CSFCube, not on SciDocs" if f.seeds > 1 else "")
        lines["one seed"] = (f"Each thesis row is one training run, and {ours}{retrained}: the thesis' α rows span "
                             f"{f.alpha_span:.2f} points of SciDocs average and no seed spread of a sweep point is "
                             "measured, so neither its curves' nor ours' shapes within that spread are findings.")
    if f.rows_not_trained:
        lines["rows not trained"] = (f"{f.rows_not_trained} of the thesis' {f.thesis_rows} rows of Tables 6.3-6.7 have "
                                     "no row of ours at this run (the parts and row parameters it runs): shown from "
                                     "the thesis only.")
    lines["SciAspectWeighted"] = ("SciAspectWeighted (Exp. 3.5, sentence attention) is not reproduced: its row is the "
                                  "thesis' only.")
    return lines


def expect_stated(facts: Facts, stated: Mapping[str, str]) -> None:
    """Every deviation :data:`DETECTORS` finds in ``facts`` has a line in ``stated``; raises
    :class:`ChapterCheckFailed` naming the missing ones."""
    missing = [key for key, holds in DETECTORS.items() if holds(facts) and key not in stated]
    if missing:
        raise ChapterCheckFailed(f"deviations from the thesis not stated on the page: {missing}")


@dataclass
class Differs:
    """The page's list of what differs from the thesis (shown as Markdown), each line under its deviation's key."""

    lines: dict[str, str]

    def _repr_markdown_(self) -> str:
        return "\n".join(f"* {line}" for line in self.lines.values())

    __repr__ = _repr_markdown_


def what_differs(run, inputs, training, models, table_6_11: pd.DataFrame) -> Differs:
    """The page's "what differs from the thesis" list for this run, every detected deviation stated
    (:func:`expect_stated`). Shown in: notebooks/sciaspect.ipynb, What differs from the thesis."""
    facts = facts_of(run, inputs, training, models, table_6_11)
    lines = deviation_lines(facts)
    expect_stated(facts, lines)
    return Differs(lines)
