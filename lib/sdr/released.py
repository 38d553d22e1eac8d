"""The papers' released models on the papers' benchmarks, scored by inference before any training (issue 32).

A chapter at ``paper`` first checks that the book's evaluators and data give the papers' numbers for the papers'
own models. Each check is a :class:`ReleasedCheck` — a released model, how the paper read it (pooling, input length,
adapter or prompt), one benchmark, the paper table and row it is compared with, which metrics, and the tolerance
(±0.3 where the paper's setup is reproduced exactly; ``None`` with the reason where it cannot be). The models are
embedded through the same path as ``sdr evaluate all`` (:func:`sdr.evaluate.suite.evaluate_model`), with the
embeddings cached on disk (:mod:`sdr.evaluate.cache`), so a rerun reads them back.

:func:`shipped_specter_scidocs` scores SciDocs' shipped SPECTER embeddings (``specter-embeddings/cls.jsonl`` for
MAG and MeSH, ``user-citation.jsonl`` for the proximity tasks, ``recomm.jsonl`` for recommendations: no model, no
GPU) with the book's evaluator, against SPECTER's published SciDocs row.

In the paper dry run the models are tiny random stand-ins and the benchmarks fixtures: the paper's numbers mean
nothing there, so the expected values come from the mirror's ``released_expected.json``, computed when the mirror
was written by an independent path (plain ``transformers`` forward and pooling, not :mod:`sdr.encoders`); the
comparison and its assertion run exactly as at ``paper``, and a planted mismatch fails them.

Shown in: every chapter at ``paper`` (its "Released models first" section) and the Benchmarks chapter's gathered
table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sdr.book.chapter import ChapterCheckFailed

EXPECTED_FILE = "released_expected.json"
"""The dry-run mirror's expected values: ``{expected_key(check, metric): value}``."""


def expected_key(check, metric: str) -> str:
    """A check's expected value in the dry-run mirror: model, benchmark, how the model reads a text (pooling, input
    length, query form) and metric, so two chapters scoring one model differently never share a value."""
    return "|".join(map(str, (check.label, check.benchmark, check.pooling, check.max_length, check.csfcube_queries,
                              metric)))


@dataclass(frozen=True)
class ReleasedCheck:
    """A released model on one benchmark beside a paper's number.

    Args:
        model: the Hugging Face name of the released checkpoint.
        benchmark: a benchmark of :data:`sdr.embed.BENCHMARKS` (``scidocs``, ``mdcr``, ``scirepeval``, ``csfcube``,
            ``csabstruct`` …).
        paper_table: ``data/paper_tables/<paper_table>.csv``; ``paper_model``: its row.
        metrics: our metric name (:func:`flat_metrics`) → the paper table's column.
        pooling, max_length: how the paper read a text with the model ([CLS] or mean, tokens).
        tolerance: the largest difference from the paper that passes (the paper's own units); ``None`` keeps the
            row unasserted, and ``unasserted_because`` says why (another data version, a setup the book cannot
            reproduce exactly).
        adapter: any adapter or prompt the paper used with the model (recorded on the row).
        table_ref: the paper table's ``table`` value of the row, where ``paper_model`` names rows of several of
            its tables (thesis_mdcr.csv has SciNCL in Tables 6.8 and 6.9); empty: the name alone is unique.
        subfolder: where the scored model lies inside the released checkpoint, for a release of several encoders
            (FLeW's three facet encoders); its rows and expected values are named ``model/subfolder``
            (:attr:`label`).
        paper_where: more ``(column, value)`` conditions that pick the one paper row (a table with one row per
            model and field, e.g. FLeW's Table 2: ``(("field", "Avg"),)``).
        columns: a function of the evaluator's result giving more metrics than :func:`flat_metrics` (a paper's
            own columns, e.g. FLeW Table 1's from a SciRepEval result); :func:`check_metrics` adds them.
    """

    model: str
    benchmark: str
    paper_table: str
    paper_model: str
    metrics: Mapping[str, str]
    pooling: str = "cls"
    max_length: int = 512
    tolerance: float | None = 0.3
    unasserted_because: str = ""
    adapter: str = ""
    csfcube_queries: str = "abstract"
    table_ref: str = ""
    subfolder: str = ""
    paper_where: tuple[tuple[str, str], ...] = ()
    columns: Callable[[Mapping], Mapping[str, float]] | None = None

    def __post_init__(self):
        if self.tolerance is None and not self.unasserted_because:
            raise ValueError(f"{self.label} on {self.benchmark}: an unasserted row says why (unasserted_because)")
        if not self.metrics:
            raise ValueError(f"{self.label} on {self.benchmark}: no metric to compare")
        if self.subfolder and (self.subfolder.startswith(("/", ".")) or ".." in self.subfolder):
            raise ValueError(f"{self.model}: subfolder {self.subfolder!r} must be a relative folder inside the release")

    @property
    def label(self) -> str:
        """The scored model's name: ``model``, or ``model/subfolder`` for one encoder of a multi-encoder release."""
        return f"{self.model}/{self.subfolder}" if self.subfolder else self.model


def flat_metrics(benchmark: str, result: Mapping) -> dict[str, float]:
    """An evaluator's output as ``{metric: value}`` in the paper tables' units: SciDocs' 12 metrics and ``avg``
    (× 100), CSFCube's ``map_<facet>``/``ndcg%20_<facet>``/``rp_<facet>``/``p@20_<facet>``/``r@20_<facet>`` (test,
    × 100), MDCR's per-field and average MAP/Recall,
    SciRepEval's aggregates, the sentence benchmarks' ``map@r`` and ``p@1`` (fractions)."""
    from sdr import book

    if benchmark == "scidocs":
        return {k: v for k, v in book.scidocs_row(result).items() if not (isinstance(v, float) and math.isnan(v))}
    if benchmark == "csfcube":  # MAP and NDCG%20 (the leaderboard's), and RP, P@20, R@20 (CoSaEmb Table 4's)
        return {**book.csfcube_metrics(result),
                **{f"{metric}_{facet}": 100.0 * float(result["test"][facet][metric])
                   for facet in result["test"] for metric in ("rp", "p@20", "r@20") if metric in result["test"][facet]}}
    if benchmark in ("csabstruct", "pubmed_rct"):
        return book.csabstruct_metrics(result)
    flat: dict[str, float] = {}

    def walk(prefix: str, value) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                walk(f"{prefix}{key}/" if prefix or not isinstance(item, Mapping) else f"{key}/", item)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            flat[prefix.rstrip("/")] = float(value)

    walk("", result)
    return flat


def check_metrics(check: ReleasedCheck, result: Mapping) -> dict[str, float]:
    """The metrics a check can compare: :func:`flat_metrics` of its benchmark's result, and the check's own
    ``columns`` of it (a paper's columns) where it has them."""
    metrics = flat_metrics(check.benchmark, result)
    if check.columns is not None:
        metrics.update({k: float(v) for k, v in check.columns(result).items()
                        if not (isinstance(v, float) and math.isnan(v))})
    return metrics


def expected_values(checks: Iterable[ReleasedCheck], mirror: str | Path | None = None) -> dict[tuple, float]:
    """``{(model label, benchmark, metric): value}`` the checks compare with: the papers' (their tables), or, in
    the paper dry run, the mirror's :data:`EXPECTED_FILE` (see the module docstring). The label is the model's
    name, or ``model/subfolder`` (:attr:`ReleasedCheck.label`)."""
    from sdr import book, datasets

    checks = list(checks)
    if datasets.dry_run():
        root = Path(mirror) if mirror else datasets.data_root()
        path = root / EXPECTED_FILE if root else None
        if path is None or not path.exists():
            raise FileNotFoundError(f"paper dry run: {path} (the stand-ins' expected values) is missing")
        stored = json.loads(path.read_text(encoding="utf-8"))
        values = {}
        for check in checks:
            for metric in check.metrics:
                key = expected_key(check, metric)
                if key not in stored:
                    raise KeyError(f"{path}: no expected value {key!r}")
                values[(check.label, check.benchmark, metric)] = float(stored[key])
        return values
    values = {}
    for check in checks:
        table = book.read_paper_table(check.paper_table)
        row = table[table["model"] == check.paper_model]
        if check.table_ref:
            row = row[row["table"] == check.table_ref]
        for column, value in check.paper_where:
            row = row[row[column].astype(str) == str(value)]
        if len(row) != 1:
            where = "".join(f", {column} {value!r}" for column, value in check.paper_where)
            raise ValueError(f"data/paper_tables/{check.paper_table}.csv: {len(row)} rows named {check.paper_model!r}"
                             + (f" in {check.table_ref}" if check.table_ref else "") + where)
        for metric, column in check.metrics.items():
            values[(check.label, check.benchmark, metric)] = float(row[column].iloc[0])
    return values


def checkpoint_folder(location: str | Path, subfolder: str = "") -> str:
    """Where a released model loads from: ``location`` (a Hub name or a folder), or its ``subfolder`` (a folder's
    own, or inside the Hub snapshot in the local cache, which a ``paper`` run fetched before starting); a missing
    sub-folder is an error naming the release and what it holds."""
    if not subfolder:
        return str(location)
    folder = Path(location)
    if not folder.is_dir():
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(str(location), local_files_only=True))
    target = folder / subfolder
    if not (target / "config.json").exists():
        held = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("config.json"))[:12]
        raise FileNotFoundError(f"{location}: no model in {subfolder!r} ({target / 'config.json'} missing); the "
                                f"release holds config.json in {held}")
    return str(target)


def score_released(checks: Sequence[ReleasedCheck], data_dirs: Mapping[str, str | Path], *, device: str = "auto",
                   batch_size: int = 32, cache: bool | str | Path = True, load_as: Mapping[str, str] | None = None
                   ) -> pd.DataFrame:
    """Embed each released model once per (pooling, input length) on the benchmarks its checks name, score them
    (``sdr evaluate all``'s path, cached) and return one row per (model, benchmark, metric): ours, the paper's (or
    the dry run's expected value), the difference, the tolerance and whether it holds, with the reading settings.

    ``load_as`` maps a model name to the folder it loads from (``ChapterData.model``: a stand-in in the dry run),
    or a check's :attr:`~ReleasedCheck.label` to its own folder (one encoder of a multi-encoder release, located by
    the chapter); otherwise a check's ``subfolder`` is looked up in the model's folder."""
    from sdr.evaluate import suite

    load_as = dict(load_as or {})
    expected = expected_values(checks)
    groups: dict[tuple, list[ReleasedCheck]] = {}
    for check in checks:
        groups.setdefault((check.model, check.subfolder, check.pooling, check.max_length, check.csfcube_queries),
                          []).append(check)
    rows = []
    for (model, subfolder, pooling, max_length, queries), group in groups.items():
        label = group[0].label
        location = load_as.get(label) if subfolder and label in load_as else \
            checkpoint_folder(load_as.get(model, model), subfolder)
        benchmarks = list(dict.fromkeys(check.benchmark for check in group))
        outcome = suite.evaluate_model(str(location), benchmarks,
                                       {b: data_dirs[b] for b in benchmarks if b in data_dirs},
                                       max_length=max_length, pooling=pooling, device=device, batch_size=batch_size,
                                       csfcube_queries=queries, cache=cache)
        for check in group:
            ours = check_metrics(check, outcome["benchmarks"][check.benchmark]["result"])
            for metric, column in check.metrics.items():
                if metric not in ours:
                    raise KeyError(f"{label} on {check.benchmark}: the evaluator gave no {metric!r}; it has "
                                   f"{sorted(ours)[:12]}")
                paper = expected[(label, check.benchmark, metric)]
                difference = ours[metric] - paper
                rows.append({"model": label, "benchmark": check.benchmark, "metric": metric, "ours": ours[metric],
                             "paper": paper, "difference": difference, "tolerance": check.tolerance,
                             "holds": None if check.tolerance is None else bool(abs(difference) <= check.tolerance),
                             "paper row": f"{check.paper_table}: "
                                          + (f"{check.table_ref}, " if check.table_ref else "")
                                          + f"{check.paper_model} ({column})",
                             "pooling": pooling, "input tokens": max_length, "adapter or prompt": check.adapter or "—",
                             "cached": check.benchmark in outcome.get("cached", []),
                             "why unasserted": check.unasserted_because})
    return pd.DataFrame(rows)


def assert_released(table: pd.DataFrame) -> None:
    """Raise :class:`ChapterCheckFailed` naming every asserted row outside its tolerance."""
    failed = table[table["holds"] == False]  # noqa: E712 - None (unasserted) is not a failure
    if len(failed):
        lines = [f"{r.model} on {r.benchmark}, {r.metric}: ours {r.ours:.2f}, paper {r.paper:.2f} "
                 f"({r.difference:+.2f}, tolerance ±{r.tolerance})" for r in failed.itertuples()]
        raise ChapterCheckFailed("released models off the papers' numbers:\n  " + "\n  ".join(lines))


# ------------------------------------------------------------------------------------ SciDocs' shipped embeddings
SHIPPED = {"classification": "specter-embeddings/cls.jsonl", "proximity": "specter-embeddings/user-citation.jsonl",
           "recommendations": "specter-embeddings/recomm.jsonl"}
"""SciDocs' shipped SPECTER embeddings, one file per group of tasks (the SciDocs README's three paths)."""


@dataclass
class ShippedScores:
    table: pd.DataFrame
    metrics: dict = field(default_factory=dict)


SHIPPED_CHECK_MODEL = "SciDocs' shipped SPECTER embeddings"
"""The name the shipped embeddings' row carries (and their expected values' key in the dry run's mirror)."""
ROUNDING_TOLERANCE = 0.05 + 1e-9
"""|ours − paper| that still rounds to the paper's one-decimal value (the float's own error allowed)."""


def shipped_specter_scidocs(scidocs_dir: str | Path, recomm_tolerance: float = 0.3,
                            embeddings_dir: str | Path | None = None, check: bool = True) -> ShippedScores:
    """SciDocs' shipped SPECTER embeddings scored by the book's SciDocs evaluator beside SPECTER's published row
    (SciNCL Table 1, quoted from Cohan et al. 2020; in the dry run the mirror's expected values): the ten
    classification and proximity metrics must be equal at the paper's rounding (one decimal: within 0.05), recommendations
    within ``recomm_tolerance`` (its ranker trains with PyTorch, which the SciDocs README says does not reproduce
    exactly).

    ``embeddings_dir``: the folder holding the three files (default: ``specter-embeddings/`` inside
    ``scidocs_dir``, SciDocs' own layout; the registry's ``scidocs_specter_embeddings`` fetches them into a folder
    of their own). ``check=False`` returns the table without raising, so a page can show it before it asserts
    (:func:`assert_shipped`)."""
    from sdr import book
    from sdr.evaluate import scidocs

    folder = Path(scidocs_dir)
    files = ({task: folder / path for task, path in SHIPPED.items()} if embeddings_dir is None
             else {task: Path(embeddings_dir) / Path(path).name for task, path in SHIPPED.items()})
    missing = [str(path) for path in files.values() if not path.exists()]
    if missing:
        raise FileNotFoundError(f"{folder}: SciDocs' shipped embeddings {missing} are missing "
                                "(sdr data fetch scidocs_specter_embeddings fetches them)")
    classification = scidocs.evaluate(folder, files["classification"], recomm=False, progress=False)
    proximity = scidocs.evaluate(folder, files["proximity"], recomm=False, progress=False)
    metrics = {task: classification[task] for task in scidocs.CLASSIFICATION_TASKS}
    metrics.update({task: proximity[task] for task in scidocs.PROXIMITY_TASKS})
    if scidocs.ScidocsPaths(folder).has_recomm():
        metrics["recomm"] = scidocs.evaluate(folder, files["proximity"], recomm=True, progress=False,
                                             recomm_embeddings=files["recommendations"])["recomm"]
    ours = book.scidocs_row(metrics)
    expected = expected_values([ReleasedCheck(SHIPPED_CHECK_MODEL, "scidocs", "scidocs", "SPECTER",
                                              {k: k for k in ours}, tolerance=0.05)])
    rows = []
    for metric, value in ours.items():
        if isinstance(value, float) and math.isnan(value):
            continue
        paper = expected[(SHIPPED_CHECK_MODEL, "scidocs", metric)]
        recomm = metric.startswith("recomm") or metric == "avg"
        holds = (abs(value - paper) <= recomm_tolerance) if recomm else abs(value - paper) <= ROUNDING_TOLERANCE
        rows.append({"metric": metric, "ours": value, "ours, paper's rounding": round(value, 1), "paper": paper,
                     "difference": value - paper, "check": f"within ±{recomm_tolerance}" if recomm
                     else "equal at one decimal", "holds": bool(holds)})
    scores = ShippedScores(pd.DataFrame(rows), metrics)
    if check:
        assert_shipped(scores)
    return scores


def assert_shipped(scores: ShippedScores) -> None:
    """Raise :class:`ChapterCheckFailed` naming every metric of the shipped embeddings off SPECTER's row."""
    failed = scores.table[~scores.table["holds"]]
    if len(failed):
        raise ChapterCheckFailed("SciDocs' shipped SPECTER embeddings do not score SPECTER's published row: "
                                 + ", ".join(f"{r.metric} {r.ours:.2f} vs {r.paper}" for r in failed.itertuples()))


# ------------------------------------------------------------------------------------ the dry run's expected values
def plain_embeddings(folder: str | Path, texts: Mapping[str, str], pooling: str, max_length: int,
                     batch_size: int = 16) -> dict:
    """Vectors of ``texts`` by a plain ``transformers`` forward (``AutoTokenizer`` + ``AutoModel``, float32, CPU),
    pooled by hand ([CLS]: the first token's hidden state; mean: the attention-masked mean): the independent
    computation the dry run's expected values come from, so the released-model checks compare the book's encoding
    path (:mod:`sdr.encoders`: chunking, packing, truncation, special tokens) with a plain one."""
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).eval()
    ids = list(texts)
    vectors = {}
    with torch.no_grad():
        for start in range(0, len(ids), batch_size):
            chunk = ids[start:start + batch_size]
            batch = tokenizer([texts[i] for i in chunk], padding=True, truncation=True, max_length=max_length,
                              return_tensors="pt")
            hidden = model(**batch).last_hidden_state
            if pooling == "cls":
                pooled = hidden[:, 0]
            elif pooling == "mean":
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
            else:
                raise ValueError(f"plain_embeddings: pooling must be 'cls' or 'mean', got {pooling!r}")
            vectors.update(zip(chunk, pooled.float().numpy().astype(np.float32)))
    return vectors


# ------------------------------------------------------------------------------------ a chapter's released part
def released_part(run, checks: Sequence[ReleasedCheck], data_dirs: Mapping[str, str | Path],
                  batch_size: int = 32, load_as: Mapping[str, str | Path] | None = None) -> pd.DataFrame:
    """A chapter's ``released`` part, its first output at ``paper``: the checks' models scored (cached), shown
    beside the papers' numbers, and the asserted rows held to their tolerance before anything trains. At smoke and
    real the released checkpoints are not read (they are the papers' models, downloaded at ``paper``): an empty
    table and one line saying so. ``load_as``: folders the chapter located itself (by model name or check label,
    :func:`score_released`), beside ``ChapterData.model`` of every check's model."""
    from IPython.display import display

    if not checks or not run.runs_part("released"):
        return pd.DataFrame()
    if not run.data.policy.real_only:
        print("released models: scored at the paper profile (their checkpoints and the papers' benchmarks are "
              "downloaded there)")
        return pd.DataFrame()
    load_as = {**{check.model: run.data.model(check.model) for check in checks}, **dict(load_as or {})}
    table = score_released(checks, data_dirs, load_as=load_as, device=getattr(run.p, "device", "auto"),
                           batch_size=batch_size)
    print(run.caption(*run.data.model_sources))
    display(table.round(4))
    assert_released(table)
    run.branch("released checks asserted")
    return table


def registered_checks(chapters: Iterable[str] | None = None) -> dict[str, list[ReleasedCheck]]:
    """Every chapter's released checks (``RELEASED_CHECKS`` of ``sdr.methods.<chapter>``), by chapter: what the
    Benchmarks chapter gathers and the dry run computes expected values for."""
    import importlib

    from sdr.book.profiles import chapter_names

    found = {}
    for chapter in chapters or chapter_names():
        try:
            method = importlib.import_module(f"sdr.methods.{chapter}")
        except ModuleNotFoundError:
            continue
        if getattr(method, "RELEASED_CHECKS", None):
            found[chapter] = list(method.RELEASED_CHECKS)
    return found


def checks_read_by(chapters: Iterable[str] | None = None) -> list[ReleasedCheck]:
    """The released checks the chapters score at ``paper``: each chapter's own (``RELEASED_CHECKS``) and, where a
    chapter's method sets ``GATHERS_RELEASED_CHECKS`` (the Benchmarks chapter's table of every chapter's checks),
    every chapter's. What the paper dry run writes stand-ins and expected values for."""
    import importlib

    from sdr.book.profiles import chapter_names

    chapters = list(chapters or chapter_names())
    gathers = False
    for chapter in chapters:
        try:
            gathers = gathers or bool(getattr(importlib.import_module(f"sdr.methods.{chapter}"),
                                              "GATHERS_RELEASED_CHECKS", False))
        except ModuleNotFoundError:
            continue
    found = registered_checks(None if gathers else chapters)
    return [check for checks in found.values() for check in checks]
