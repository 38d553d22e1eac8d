"""What the SPECTER chapter does at ``paper``, up front: its parts (:data:`PARTS`, the ``parts`` parameter), its whole
cost (:func:`cost_plan`), the released models it scores first (:data:`RELEASED_CHECKS`, :func:`released_models`),
the branches of the paper path the dry run must take (:data:`DRY_RUN_BRANCHES`, and the dry-run fixture that makes
them reachable, :func:`write_dry_run_scidocs`), and what the page pairs with the papers' rows and says differs from
them (:func:`pair_with_paper`, :func:`deviations`). The SciNCL chapter builds its own on the helpers here
(:mod:`sdr.methods.scincl.paper`).

Sizes at ``paper`` come from ``data/paper_tables`` (each row with its table reference); sizes no paper gives are
estimates, and the plan's ``how`` says so. Shown in: notebooks/specter.ipynb (and notebooks/scincl.ipynb through
the shared helpers).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from sdr import plan
from sdr.book.chapter import ChapterCheckFailed
from sdr.plan import CostPlan, Part, Work, resolve_parts
from sdr.released import ReleasedCheck

__all__ = ["PARTS", "PART_NEEDS", "COLAB_SESSION_HOURS", "check_parts", "paper_size", "SCIDOCS_PAPERS", "SPECTER_TRIPLETS", "SPECTER_QUERIES",
           "SPECTER_PAPERS", "CSFCUBE_PAPERS", "TOKENS_PER_TEXT", "SCIDOCS_SCORING_CPU_HOURS", "DOWNLOADS", "DOWNLOAD_BYTES_PER_S",
           "download_work", "encode_work", "scidocs_scoring_work", "query_count", "cost_plan", "RELEASED_CHECKS",
           "SCIDOCS_METRICS_ASSERTED", "ReleasedModels", "released_models", "DRY_RUN_BRANCHES",
           "LEAKED_PAPERS", "write_dry_run_scidocs", "dry_run_leaked_papers", "TRAINING_COMPARED", "TrainingProtocol",
           "RowOrigin", "PAPER_ROWS", "THESIS_TRAINING", "NOT_COMPARED", "RELEASED_PAPER_ROW",
           "OFFICIAL_SCIDOCS", "pair_with_paper",
           "PAPER_SETTINGS", "deviations", "scidocs_protocol"]


# ================================================================================================ parts
#: The chapter's parts (``parts`` parameter: "all", "headline" or a list of names). The headline run is SciNCL
#: Table 1's SPECTER row and the thesis' SPECTER(Undirected) row: the released models, then one trained run each.
PARTS: dict[str, Part] = {
    "released": Part("released", "SciNCL Table 1's SPECTER row by inference (SciDocs' shipped SPECTER embeddings and "
                     "the released allenai/specter on SciDocs), allenai/specter on CSFCube beside CoSaEmb Table 4",
                     headline=True,
                     t4="all of it in 1 Colab session: inference and CPU scoring, no training"),
    "main": Part("main", "SciNCL Table 1's SPECTER row and thesis Table 6.2's SPECTER(Undirected) row, trained once "
                 "each on SPECTER's triplets, scored on SciDocs and CSFCube", headline=True,
                 t4="about 2 Colab sessions of 12 h for the two trainings and their scoring: set resume = True "
                    "and rerun the chapter in each new session"),
    "seeds": Part("seeds", "the leaderboard models trained again with the next seeds (SPECTER reports one trained "
                  "model; the paper profile trains none)",
                  t4="nothing at the paper profile's one seed; each extra seed costs two main trainings"),
}
#: Colab sessions: a part's T4 GPU hours and CPU hours (a Colab machine has 2 cores, like the one the CPU rates were
#: measured on), in sessions of 12 h; tests/test_specter_paper.py checks each ``t4`` against the paper profile's plan.
COLAB_SESSION_HOURS = 12
#: Parts that only make sense after another (their steps compare with its runs).
PART_NEEDS = {"seeds": "main"}


def check_parts(run, registry: Mapping[str, Part] | None = None, needs: Mapping[str, str] | None = None) -> None:
    """The ``parts`` chosen must include the parts the others build on (:data:`PART_NEEDS`), and ``main``: the page's
    later steps (SciDocs, CSFCube, the leaderboard) compare with its runs. A released-only look at the papers' models
    is ``sdr evaluate all --model <name>`` (the same scores, cached)."""
    registry = registry if registry is not None else PARTS
    needs = needs if needs is not None else PART_NEEDS
    chosen = resolve_parts(getattr(run.p, "parts", "all"), registry)
    problems = [f"{part!r} needs {needed!r}" for part, needed in needs.items() if part in chosen and needed not in chosen]
    if "main" not in chosen:
        problems.append("every run of the chapter includes 'main' (its later steps compare with the main runs; for "
                        "the released models alone use `sdr evaluate all --model NAME`)")
    if problems:
        raise ValueError(f"{run.chapter}: parts = {getattr(run.p, 'parts', 'all')!r}: " + "; ".join(problems))


# ================================================================================================ sizes
def paper_size(table: str, model: str, column: str, ref: str = "") -> int:
    """An integer count from ``data/paper_tables/<table>.csv`` (row ``model``, of the paper's table ``ref`` when
    given; ``column``), as printed there."""
    from sdr.book import read_paper_table

    frame = read_paper_table(table)
    row = frame[(frame["model"] == model) & ((frame["table"] == ref) if ref else True)]
    if len(row) != 1 or pd.isna(row[column].iloc[0]):
        raise ValueError(f"data/paper_tables/{table}.csv: no single row {model!r} with a value in {column!r}")
    return int(round(float(row[column].iloc[0])))


#: SciDocs' papers (SciNCL Table 3, A.2: 223,932), all embedded for every scored model.
SCIDOCS_PAPERS = paper_size("scincl_table3", "SciDocs papers with S2ORC IDs", "total")
#: SPECTER's training triplets (684,100: CoSaEmb §4.1, SciNCL §4.2) and query papers (136,820: SciNCL Table 4).
SPECTER_TRIPLETS = paper_size("training_sizes", "SPECTER training triplets", "examples")
SPECTER_QUERIES = paper_size("scincl_table4", "Query paper IDs", "replicated_specter_with_leakage")
#: SPECTER's unique training papers (SciNCL Table 3 / A.3: 311,860).
SPECTER_PAPERS = paper_size("scincl_table3", "SPECTER papers with S2ORC IDs", "total")
#: CSFCube's papers: no paper gives the count; 4,205 distinct ids are counted in the released files
#: (readable_annotations of iesl/CSFCube @ 7ffe012, /work/shared/data/SOURCES.md): an estimate from the data.
CSFCUBE_PAPERS = 4_205
#: Tokens a text (title [SEP] abstract): the mean of the trainer's GPU benchmark texts (sdr.plan), assumed for every
#: paper text, cut at the run's input length.
TOKENS_PER_TEXT = plan.MEASURED_TOKENS_PER_TEXT
#: CPU hours to score one model on SciDocs: MAG/MeSH linear SVMs with their grid search and, with recommendations,
#: the ranker. An estimate (not measured at SciDocs' size; benchmarks/results/scidocs.txt measures the proximity
#: tasks only, 2.4 s for 4 tasks of 1,000 queries).
SCIDOCS_SCORING_CPU_HOURS = {True: 0.5, False: 0.3}

#: What each download is, in bytes and files: the registry's sizes where it states one (README "What each chapter
#: reads"), else an estimate (stated so); models at BERT-base size (≈ 440 MB of weights and a vocabulary).
DOWNLOADS = {
    "scirepeval_cite_prediction": (3.0e9, "the registry's size (~ 3 GB)"),
    "scidocs": (4.6 * 2**30, "the registry's size (4.6 GiB with SPECTER's shipped embeddings)"),
    "csfcube": (12e6, "estimate (~ 12 MB: 9.2 MB of readable annotations and the pools)"),
    "mdcr": (500e6, "the registry's size (~ 500 MB)"),
    "specter_wol": (18.5e6, "the registry's size (18.5 MB)"),
    "model": (440e6, "estimate (BERT-base weights, ≈ 440 MB)"),
}
DOWNLOAD_BYTES_PER_S = 50e6
"""An assumed download rate (50 MB/s) for the fetch lines' time; a slower link scales it."""


def download_work(part: str, name: str, model: bool = False) -> Work:
    """One fetch line: a registry dataset (its files) or a Hugging Face model (``model``), its size and time."""
    from sdr import datasets

    size, how = DOWNLOADS["model" if model else name]
    files = 4 if model else max(1, len(datasets.get(name).files))  # a model: config, weights, vocabulary, tokenizer
    seconds = size / DOWNLOAD_BYTES_PER_S
    return Work(part, f"fetch {name}", "fetch", download_bytes=int(size), requests=files,
                requests_per_s=files / seconds,
                how=f"{files} file(s), {plan.human_bytes(size)}: {how}; at an assumed {DOWNLOAD_BYTES_PER_S / 1e6:g} MB/s")


def encode_work(part: str, what: str, texts: int, max_length: int, runs: int = 1) -> Work:
    """Embedding ``texts`` papers ``runs`` times at ``max_length`` tokens (the measured encoding throughput)."""
    tokens = min(TOKENS_PER_TEXT, max_length)
    return Work(part, what, "encode", runs=runs, texts=texts, tokens_per_text=tokens,
                how=f"{texts:,} papers × ≤ {tokens} tokens (assumed mean {TOKENS_PER_TEXT}, cut at {max_length})")


def scidocs_scoring_work(part: str, what: str, runs: int, recommendations: bool) -> Work:
    hours = SCIDOCS_SCORING_CPU_HOURS[bool(recommendations)]
    return Work(part, what, "svm", runs=runs, hours=hours, hours_on="CPU",
                how=f"MAG/MeSH SVM grids{' and the recommendation ranker' if recommendations else ''}: "
                    f"≈ {hours:g} CPU h a model, an estimate (not measured at SciDocs' size)")


def query_count(max_queries: int, available: int = SPECTER_QUERIES) -> int:
    """Query papers a run trains on: all of them (``max_queries`` 0) or the seeded sample's size."""
    return available if max_queries <= 0 else min(int(max_queries), available)


def _train(part: str, what: str, examples: int, p, runs: int = 1, epochs: int | None = None) -> Work:
    tokens = min(TOKENS_PER_TEXT, p.max_length)
    return Work(part, what, "train", runs=runs, examples=examples, epochs=epochs or p.epochs,
                effective_batch=p.batch_size * p.accumulation_steps, texts_per_example=3, tokens_per_text=tokens,
                how=f"{examples:,} triplets (5 a query), 3 texts of ≤ {tokens} tokens (assumed mean {TOKENS_PER_TEXT})")


def cost_plan(p) -> CostPlan:
    """Everything the SPECTER chapter does with parameters ``p`` (the notebook's), part by part: the released models'
    encodings and SciDocs scoring, the two trainings (SPECTER and SPECTER(Undirected): 5 triplets a query of
    ``max_queries`` query papers, all of SciNCL Table 4's 136,820 when 0), their SciDocs and CSFCube encodings and
    scoring, the leaderboard seeds' retrainings, and the data and model fetches."""
    queries = query_count(p.max_queries)
    examples = 5 * queries
    released = list(p.released_checkpoints)
    trained = 2
    csfcube_models = len(p.csfcube_models) if p.csfcube_models else trained + 1  # untrained + trained by default
    leaderboard = len([m for m in p.csfcube_models if m != "untrained encoder"]) if p.csfcube_models else trained
    selected = resolve_parts(getattr(p, "parts", "all"), PARTS)
    work = []
    if released:
        work += [encode_work("released", f"{name} on SciDocs", SCIDOCS_PAPERS, p.released_max_length)
                 for name in released]
        work += [encode_work("released", f"{name} on CSFCube", CSFCUBE_PAPERS, p.released_max_length)
                 for name in released]
        work.append(scidocs_scoring_work("released", "SciDocs scoring: released models and SciDocs' shipped "
                                         "SPECTER embeddings", len(released) + 1, True))
        work += [download_work("released", "scidocs"), download_work("released", "csfcube")]
        work += [download_work("released", name, model=True) for name in released]
    work += [
        _train("main", "train SPECTER", examples, p),
        _train("main", "train SPECTER(Undirected)", examples, p),
        encode_work("main", "SciDocs: untrained, trained and released models", SCIDOCS_PAPERS, p.max_length,
                    runs=1 + trained + len(released)),
        scidocs_scoring_work("main", "SciDocs scoring of those models", 1 + trained + len(released),
                             p.recommendations),
        encode_work("main", "CSFCube: the models csfcube_models names and the released ones", CSFCUBE_PAPERS,
                    p.csfcube_max_length, runs=csfcube_models + len(released)),
        download_work("main", "scirepeval_cite_prediction"),
        download_work("main", p.model_name, model=True),
    ]
    extra_seeds = max(0, p.leaderboard_seeds - 1)
    work += [_train("seeds", "train the leaderboard models again (each extra seed)", examples, p,
                    runs=extra_seeds * leaderboard),
             encode_work("seeds", "CSFCube: each extra seed's models", CSFCUBE_PAPERS, p.csfcube_max_length,
                         runs=extra_seeds * leaderboard)]
    return CostPlan("specter", p.profile, PARTS, work, selected)


# ================================================================================================ released models
#: The SciDocs metrics whose published value SciDocs' shipped embeddings and the released checkpoint must give:
#: every one but the recommendations (their ranker trains with PyTorch; the SciDocs README says it does not
#: reproduce exactly), and the average.
SCIDOCS_METRICS_ASSERTED = ["mag_f1", "mesh_f1", "coview_map", "coview_ndcg", "coread_map", "coread_ndcg", "cite_map",
                            "cite_ndcg", "cocite_map", "cocite_ndcg"]

#: The released checkpoint SPECTER's papers report, on the benchmarks they report it on, read as SPECTER reads a paper
#: ([CLS] of ``title [SEP] abstract``, 512 tokens, no adapter). SciNCL Table 1's SPECTER row is quoted from Cohan et
#: al. 2020, one decimal: ±0.3 is a harness error, not rounding (± 0.05).
RELEASED_CHECKS = [
    ReleasedCheck("allenai/specter", "scidocs", "scidocs", "SPECTER",
                  {**{m: m for m in SCIDOCS_METRICS_ASSERTED}, "avg": "avg"}, pooling="cls", max_length=512,
                  tolerance=0.3, table_ref="Table 1"),
    ReleasedCheck("allenai/specter", "scidocs", "scidocs", "SPECTER", {"recomm_ndcg": "recomm_ndcg",
                                                                       "recomm_p1": "recomm_p1"},
                  pooling="cls", max_length=512, tolerance=None, table_ref="Table 1",
                  unasserted_because="SciDocs' recommendation ranker trains with PyTorch, which its README says does "
                                     "not reproduce exactly (the average, asserted above, includes them)"),
    ReleasedCheck("allenai/specter", "csfcube", "cosaemb_csfcube", "SPECTER",
                  {"ndcg%20_all": "all_ndcg%20", "ndcg%20_background": "background_ndcg%20",
                   "ndcg%20_method": "method_ndcg%20", "ndcg%20_result": "result_ndcg%20"},
                  pooling="cls", max_length=512, tolerance=None,
                  unasserted_because="CoSaEmb Table 4 scored SPECTER with its own pipeline (its NDCG%20 53.31 is not "
                                     "the CSFCube paper's 53.28 for the official SPECTER rankings, which the CSFCube "
                                     "section asserts)"),
]


@dataclass
class ReleasedModels:
    """The released part's tables: SciDocs' shipped SPECTER embeddings (empty where not scored) and the released
    checkpoints beside the papers' numbers (empty at smoke and real)."""

    shipped: pd.DataFrame
    checkpoints: pd.DataFrame


def released_models(run, inputs, checks: Sequence[ReleasedCheck] | None = None, shipped: bool = True,
                    extra_dirs: Mapping[str, object] | None = None) -> ReleasedModels:
    """The chapter's first output at ``paper``, before anything trains (issue 32): SciDocs' shipped SPECTER embeddings
    scored by the book's SciDocs evaluator beside SPECTER's published row (``shipped``), then each released
    checkpoint of ``checks`` (default :data:`RELEASED_CHECKS`) embedded through ``sdr evaluate all``'s cached path
    and held to its tolerance (:func:`sdr.released.released_part`). At smoke and real the papers' models are not
    read: one line says so. ``extra_dirs``: benchmark folders beyond SciDocs and CSFCube (SciNCL: MDCR)."""
    from IPython.display import display

    from sdr import released

    checks = list(RELEASED_CHECKS if checks is None else checks)
    if not run.runs_part("released"):
        return ReleasedModels(pd.DataFrame(), pd.DataFrame())
    shipped_table = pd.DataFrame()
    if shipped and run.data.policy.real_only:
        scores = released.shipped_specter_scidocs(
            inputs.scidocs.path, embeddings_dir=run.data.input("scidocs_specter_embeddings").path)
        shipped_table = scores.table
        print(run.caption("SciDocs' shipped SPECTER embeddings (specter-embeddings/)"))
        display(shipped_table.round(3))
        run.branch("SciDocs' shipped SPECTER embeddings checked")
    data_dirs = {"scidocs": inputs.scidocs.path, "csfcube": inputs.csfcube.path, **dict(extra_dirs or {})}
    table = released.released_part(run, checks, {k: Path(v) for k, v in data_dirs.items()})
    return ReleasedModels(shipped_table, table)


# ================================================================================================ the dry run
#: The branches of the paper path the dry run must take (issue 30): the released part's assertions and the shipped
#: embeddings, training data that overlap SciDocs (the released triplets overlap it by 40.5 %, SciNCL A.3), and a
#: leaderboard model trained again with a second seed.
DRY_RUN_BRANCHES = ("released checks asserted", "SciDocs' shipped SPECTER embeddings checked",
                    "training papers overlap SciDocs (with leakage)", "leaderboard model trained with another seed",
                    "released checkpoint's SciDocs vectors read from the cache")

LEAKED_PAPERS = 8
"""Training papers the dry-run SciDocs names as test candidates (the released triplets share 40.5 % of theirs)."""


def write_dry_run_scidocs(folder: Path, fixture) -> None:
    """The paper dry run's SciDocs (``sdr.dryrun.WRITERS["scidocs"]``): the SciDocs fixture of the evaluation papers
    (:func:`sdr.dryrun.write_scidocs`), plus what the released data has and that fixture lacks, in the released
    layout:

    :data:`LEAKED_PAPERS` papers of the training triplets as extra candidates (relevance 0) of the cite task's test
    queries, with their metadata, so the chapters' leakage branch runs as on the released data. SciDocs' shipped
    SPECTER embeddings, a dataset of their own (``scidocs_specter_embeddings``), are written after it by the
    Benchmarks chapter's fixture (:func:`sdr.methods.benchmarks.write_shipped_embeddings`), which covers these
    papers too."""
    from sdr import dryrun
    from sdr.evaluate import scidocs

    dryrun.write_scidocs(folder, fixture)
    leaked = dry_run_leaked_papers(fixture)
    qrel = folder / "cite" / "test.qrel"
    queries = sorted(scidocs.read_qrels(qrel))
    with qrel.open("a", encoding="utf-8") as handle:
        for number, pid in enumerate(leaked):
            handle.write(f"{queries[number % len(queries)]} 0 {pid} 0\n")
    metadata_path = folder / "paper_metadata_view_cite_read.json"
    metadata = json.loads(metadata_path.read_text(encoding="utf-8"))
    for pid in leaked:
        paper = fixture.corpus.papers[pid]
        metadata[pid] = {"paper_id": pid, "title": paper.title, "abstract": paper.abstract}
    metadata_path.write_text(json.dumps(metadata), encoding="utf-8")


def dry_run_leaked_papers(fixture) -> list[str]:
    """The training papers the dry-run SciDocs names (:data:`LEAKED_PAPERS` of the fixture triplets' papers)."""
    return sorted({pid for triplet in fixture.triplets() for pid in triplet})[:LEAKED_PAPERS]


# ================================================================================================ fidelity
#: The training settings the pairing rule compares (:class:`TrainingProtocol`), in the page's words. The schedule is
#: not among them: SciNCL states none (§4.3; the deviation list names the one a run uses).
TRAINING_COMPARED = {"epochs": "epochs", "effective_batch": "effective batch", "learning_rate": "learning rate",
                     "max_length": "input length (tokens)"}


@dataclass(frozen=True)
class TrainingProtocol:
    """How a row's encoder was trained, in the settings the pairing rule compares (:data:`TRAINING_COMPARED`). On a
    paper's side a setting the paper does not state is ``None`` and is not compared; ``where`` (not compared) says
    where the paper states each setting it does, or that it states none."""

    epochs: int | None = None
    effective_batch: int | None = None
    learning_rate: float | None = None
    max_length: int | None = None
    where: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @classmethod
    def of_run(cls, p, **changes) -> "TrainingProtocol":
        """A run's protocol from its parameters (``changes``: a row's own, e.g. BitFit's learning rate)."""
        values = {"epochs": p.epochs, "effective_batch": p.batch_size * p.accumulation_steps,
                  "learning_rate": p.learning_rate, "max_length": p.max_length}
        values.update(changes)
        return cls(**values)

    @classmethod
    def of_paper(cls, settings: Mapping[str, tuple[object, str]], **changes) -> "TrainingProtocol":
        """A paper's protocol from its settings (a ``PAPER_SETTINGS`` mapping: name → (value, where the paper says
        so)); the effective batch is ``batch_size × accumulation_steps``; a setting whose value is ``None`` (not
        stated) or that the mapping lacks is not compared. ``changes``: ``(value, where)`` of a row's own."""
        def stated(key):
            return changes.get(key, settings.get(key, (None, "not stated")))

        batch, batch_where = stated("batch_size")
        steps, steps_where = stated("accumulation_steps")
        values = {"epochs": stated("epochs"), "learning_rate": stated("learning_rate"),
                  "max_length": stated("max_length"),
                  "effective_batch": changes.get("effective_batch") or (
                      (batch * steps, f"{batch_where}; {steps_where}") if batch is not None and steps is not None
                      else (None, f"{batch_where}; {steps_where}"))}
        return cls(**{key: value for key, (value, _) in values.items()},
                   where=tuple((key, where) for key, (_, where) in values.items()))

    def unstated(self) -> list[str]:
        """The compared settings this (paper) protocol does not state, so the rule does not compare them."""
        return [TRAINING_COMPARED[key] for key in TRAINING_COMPARED if getattr(self, key) is None]

    def differences(self, paper: "TrainingProtocol") -> list[str]:
        """Each stated setting of ``paper`` that ours does not share, with where the paper states it."""
        where = dict(paper.where)
        lines = []
        for key, label in TRAINING_COMPARED.items():
            theirs, mine = getattr(paper, key), getattr(self, key)
            if theirs is not None and mine != theirs:
                lines.append(f"training {label}: ours {mine!r}, the paper's {theirs!r}"
                             + (f" ({where[key]})" if where.get(key) else ""))
        return lines


@dataclass(frozen=True)
class RowOrigin:
    """Where a SciDocs row comes from: the training data (or "none (untrained)", or the released checkpoint), the
    model family it starts from, the evaluation protocol, and the training protocol (:class:`TrainingProtocol`;
    ``None``: not trained). A row of ours is set beside a paper's row only when all four are the same
    (:func:`pair_with_paper`): the training settings a paper does not state are not compared."""

    data: str
    family: str
    protocol: str
    training: TrainingProtocol | None = None

    def differences(self, other: "RowOrigin") -> list[str]:
        lines = [f"{what}: ours {mine!r}, the paper's {theirs!r}"
                 for what, mine, theirs in (("data", self.data, other.data), ("model", self.family, other.family),
                                            ("protocol", self.protocol, other.protocol)) if mine != theirs]
        if self.training is None or other.training is None:
            if (self.training is None) != (other.training is None):
                lines.append("training: ours " + ("none (untrained)" if self.training is None else "trained")
                             + ", the paper's " + ("none (untrained)" if other.training is None else "trained"))
            return lines
        return lines + self.training.differences(other.training)


OFFICIAL_SCIDOCS = "SciDocs test, the official evaluator, all 12 metrics"
#: The paper rows the SPECTER and SciNCL chapters set beside theirs (``data/paper_tables/scidocs.csv``), by name, and
#: where each comes from: SPECTER's and SciNCL's rows trained with SciNCL §4.3's protocol (SPECTER's setup,
#: :data:`PAPER_SETTINGS`), the thesis' SPECTER(Undirected) with its §4.2/§4.4 protocol (:data:`THESIS_TRAINING`).
PAPER_ROWS: dict[str, RowOrigin] = {}  # filled below, once PAPER_SETTINGS is defined
#: A released checkpoint is the paper's model itself: its row pairs with this paper row (same origin, same protocol).
RELEASED_PAPER_ROW = {"allenai/specter": "SPECTER", "malteos/scincl": "SciNCL"}


def scidocs_protocol(real: bool, recommendations: bool) -> str:
    """The protocol our SciDocs rows were scored with, in :data:`PAPER_ROWS`' words."""
    if real and recommendations:
        return OFFICIAL_SCIDOCS
    return (f"{'SciDocs test' if real else 'a SciDocs replica'}, the official evaluator, "
            f"{'all 12 metrics' if recommendations else 'without the recommendation task'}")


def pair_with_paper(ours: pd.DataFrame, origins: Mapping[str, RowOrigin], candidates: Mapping[str, str],
                    columns: Sequence[str], paper: pd.DataFrame | None = None,
                    paper_origins: Mapping[str, RowOrigin] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The one pairing rule of the SPECTER and SciNCL pages (issue 37): our row ``name`` (of ``ours``, with its
    origin ``origins[name]``) is set beside the paper row ``candidates[name]`` only when the data source, the model
    family, the protocol and the training protocol (epochs, effective batch, learning rate, input length, as far as
    the paper states them: :class:`TrainingProtocol`) are the same (:class:`RowOrigin`); otherwise it is shown apart
    with the reason.

    Returns ``(paired, apart)``: ``paired`` one line per matching pair with both values of each of ``columns`` and
    their difference; ``apart`` one line per row of ours with no matching paper row, naming the paper row it would
    have been compared with and every difference."""
    from sdr.book import read_paper_table

    paper = read_paper_table("scidocs") if paper is None else paper
    paper_origins = PAPER_ROWS if paper_origins is None else paper_origins
    paired, apart = [], []
    for name, paper_name in candidates.items():
        if name not in ours.index:
            raise KeyError(f"pair_with_paper: no row {name!r} of ours; rows: {list(ours.index)}")
        if paper_name not in paper_origins:
            raise KeyError(f"pair_with_paper: no origin for the paper row {paper_name!r} (add it to PAPER_ROWS)")
        differences = origins[name].differences(paper_origins[paper_name])
        if differences:
            apart.append({"ours": name, "the paper's row": paper_name, "shown apart because": "; ".join(differences)})
            continue
        row = paper[paper["model"] == paper_name]
        if len(row) != 1:
            raise ValueError(f"data/paper_tables/scidocs.csv: {len(row)} rows named {paper_name!r}")
        line = {"ours": name, "the paper's row": f"{paper_name} ({row['source'].iloc[0]}, {row['table'].iloc[0]})"}
        for column in columns:
            line[f"{column} (ours)"] = float(ours.loc[name, column])
            line[f"{column} (paper)"] = float(row[column].iloc[0])
            line[f"{column} difference"] = line[f"{column} (ours)"] - line[f"{column} (paper)"]
        paired.append(line)
    return (pd.DataFrame(paired), pd.DataFrame(apart, columns=["ours", "the paper's row", "shown apart because"]))


#: The paper's value of every parameter that changes SPECTER's training (TRAINING_PARAMETERS) or what a row is
#: scored on, with where the paper says so; ``None``: the paper has no such setting (the row states ours).
PAPER_SETTINGS: dict[str, tuple[object, str]] = {
    "model_name": ("allenai/scibert_scivocab_uncased", "SPECTER §3: initialised with SciBERT"),
    "model_layers": (0, "SciBERT's 12 layers"),
    "seed": (None, "SPECTER reports one trained model, no seed"),
    "n_papers": (None, "synthetic corpus size (replicas only)"),
    "eval_fraction": (None, "synthetic corpus split (replicas only)"),
    "max_queries": (0, "every query paper of SPECTER's triplets (136,820, SciNCL Table 4)"),
    "max_length": (512, "SciNCL §3: the title and abstract, whole; no paper states a cut, so as much as SciBERT reads"),
    "epochs": (2, "SciNCL §4.3: 2 epochs, SPECTER's setup"),
    "batch_size": (8, "SciNCL §4.3: batch 8"),
    "accumulation_steps": (4, "SciNCL §4.3: effective batch 32, same as SPECTER"),
    "learning_rate": (2e-5, "SciNCL §4.3 (SPECTER's AllenNLP config reads 3e-5)"),
    "schedule": ("slanted_triangular", "SPECTER's AllenNLP config (simple.jsonnet: cut_frac 0.1, ratio 32)"),
    "recommendations": (True, "SciDocs' average includes the recommendation task"),
    "csfcube_max_length": (512, "SPECTER reads 512 tokens"),
}
#: The thesis' protocol for SPECTER(Undirected) (Experiment 1): 2 epochs, lr 2e-5 and the effective batch of 32 of
#: §4.4, title [SEP] abstract of under 512 tokens (§4.2; data/paper_tables/sciaspect_settings.csv holds the numbers).
THESIS_TRAINING = TrainingProtocol(2, 32, 2e-5, 512, where=(
    ("epochs", "thesis §4.4: 2 epochs"), ("effective_batch", "thesis §4.4: 32 for Experiment 1, same as SPECTER"),
    ("learning_rate", "thesis §4.4: 2e-5"), ("max_length", "thesis §4.2: title [SEP] abstract, < 512 tokens")))
_SCINCL_TRAINING = TrainingProtocol.of_paper(PAPER_SETTINGS)
PAPER_ROWS.update({
    "SciBERT": RowOrigin("none (untrained)", "SciBERT", OFFICIAL_SCIDOCS),
    "SPECTER": RowOrigin("SPECTER's training triplets", "SciBERT", OFFICIAL_SCIDOCS, _SCINCL_TRAINING),
    "SPECTER (random S2ORC w/o leakage)": RowOrigin("SPECTER's sampling on a random S2ORC subset w/o leakage",
                                                    "SciBERT", OFFICIAL_SCIDOCS, _SCINCL_TRAINING),
    "SPECTER(Undirected)": RowOrigin("the thesis' undirected sampling on Semantic Scholar citations of SciNCL's w/o "
                                     "leakage queries", "SciBERT", OFFICIAL_SCIDOCS, THESIS_TRAINING),
    "SciNCL": RowOrigin("SciNCL's kNN bands on S2ORC's citation graph, SPECTER's queries", "SciBERT",
                        OFFICIAL_SCIDOCS, _SCINCL_TRAINING),
    "SciNCL (random S2ORC w/o leakage)": RowOrigin("SciNCL's kNN bands on S2ORC's citation graph, random S2ORC "
                                                   "queries w/o leakage", "SciBERT", OFFICIAL_SCIDOCS,
                                                   _SCINCL_TRAINING),
})
#: What the pairing rule does not compare, printed under the pairs (:func:`sdr.methods.specter.show_pairs`).
NOT_COMPARED = ("The rule compares the training data, the model family, the SciDocs protocol and the training "
                "protocol (" + ", ".join(TRAINING_COMPARED.values()) + "). Not compared: the learning-rate schedule "
                "(SciNCL §4.3 states none; the deviation list names this run's) and the seed (Table 1 reports no "
                "single seed). The input length is compared at 512 tokens: SciNCL §3 feeds the title and abstract "
                "whole ([SEP] between) and no paper states a cut, so the paper's input is as much as SciBERT reads.")


def deviations(run, settings: Mapping[str, tuple[object, str]] | None = None, keys: Sequence[str] | None = None,
               fixed: Iterable[str] = ()) -> list[str]:
    """What differs from the paper at this run, one line each (issue 37): every parameter of ``keys`` (default: the
    method's ``TRAINING_PARAMETERS``, ``recommendations`` and ``csfcube_max_length``) whose value is not the paper's
    (``settings``, default :data:`PAPER_SETTINGS`), then the data inputs that are replicas, then ``fixed``: the
    deviations of the method's own (stated at every profile).

    A parameter with no entry in ``settings`` raises: a new setting that changes training must say what the paper
    did, so no deviation goes unstated."""
    settings = PAPER_SETTINGS if settings is None else settings
    p = run.p
    if keys is None:
        keys = [*run.method.TRAINING_PARAMETERS, "recommendations", "csfcube_max_length"]
    unstated = [key for key in keys if key not in settings]
    if unstated:
        raise ValueError(f"{run.chapter}: parameters {unstated} change what the page reports but have no paper value "
                         "in PAPER_SETTINGS: add what the paper did (or None where it has no such setting)")
    lines = []
    for key in keys:
        paper_value, where = settings[key]
        if paper_value is None or not hasattr(p, key):
            continue
        value = getattr(p, key)
        if value != paper_value:
            lines.append(f"`{key}` = {value!r}; the paper: {paper_value!r} ({where}).")
    for item in run.data.inputs.values():
        if not item.real:
            lines.append(f"{item.name} is a replica ({item.source}), not the released data.")
    lines += list(fixed)
    return lines
