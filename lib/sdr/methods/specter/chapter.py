"""The steps of the SPECTER chapter, one call each; the SciNCL chapter takes the same data, scores its models the
same way and stores the same kind of leaderboard rows, so it calls these too.

Each step takes the chapter's :class:`sdr.book.ChapterRun` (its parameters are ``run.p``) and returns what the
page shows; the checks of invariants live here and raise with a clear message, and the page keeps one line per
claim. Shown in: notebooks/specter.ipynb and notebooks/scincl.ipynb.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import numpy as np
import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed, Fit, replicas_of_one_corpus
from sdr.methods.specter.recipe import (TrainingTriplets, csfcube_leaderboard_row, csfcube_scores,
                                        leaderboard_seeds, proximity_mean, read_training_triplets, scidocs_leakage,
                                        scidocs_scores, seed_spread, take_queries, training_budget,
                                        triplet_statistics, write_training_triplets)
from sdr.train import TrainConfig, TripletObjective

__all__ = ["TRAINING_PARAMETERS", "chapter_inputs", "TrainingSet", "training_set", "UndirectedSet",
           "undirected_set", "train_config", "fit_on_triplets", "expect_lower_loss", "page_names", "specter_runs",
           "retrainer",
           "triplet_encoder", "train_triplet_models", "released_encoders", "store", "specter_findings", "scidocs_table",
           "gains_over_untrained", "papers_next_to_ours", "model_family", "training_data", "row_origins", "paper_pairs",
           "show_pairs",
           "SPECTER_DEVIATIONS", "specter_deviations", "fidelity_tables", "CSFCubeScores", "csfcube_table", "SeedRows", "seed_rows",
           "leaderboard", "findings", "METRIC_COLUMNS"]

#: The parameters that change SPECTER's training (they key the chapter's run folder, ``book.run_dir``).
TRAINING_PARAMETERS = ("model_name", "model_layers", "seed", "n_papers", "eval_fraction", "max_queries",
                       "max_length", "epochs", "batch_size", "accumulation_steps", "learning_rate", "schedule")
#: The twelve SciDocs metrics and their average, as the paper tables name them.
METRIC_COLUMNS = [*book.SCIDOCS_COLUMNS.values(), "avg"]


# ------------------------------------------------------------------------------------------------- data
def chapter_inputs(run) -> SimpleNamespace:
    """SPECTER's training triplets (SciRepEval ``cite_prediction``), SciDocs and CSFCube under the data policy:
    the released data where the profile reads it, else replicas in the official layouts written from one
    synthetic corpus (its training part gives the triplets, its evaluation part the benchmarks; built only if a
    replica is written). The ``parts`` chosen are checked first (:func:`sdr.methods.specter.check_parts`, against the
    chapter's own ``PARTS``)."""
    from sdr.methods.specter.paper import PART_NEEDS, PARTS, check_parts
    from sdr.synthetic import make_corpus
    from sdr.synthetic.csfcube import write_csfcube
    from sdr.synthetic.scidocs import write_scidocs
    from sdr.synthetic.split import split_corpus

    p, data = run.p, run.data
    check_parts(run, getattr(run.method, "PARTS", PARTS), getattr(run.method, "PART_NEEDS", PART_NEEDS))

    def split_synthetic():
        corpus = make_corpus(n_papers=p.n_papers, seed=p.seed)
        train_part, eval_part = split_corpus(corpus, p.eval_fraction, seed=p.seed)
        return SimpleNamespace(corpus=corpus, train=train_part, eval=eval_part)

    synthetic = data.lazy("the synthetic corpus behind the replicas", split_synthetic)
    replica_of = f"the synthetic corpus ({p.n_papers} papers, seed {p.seed})"
    triplets = data.input(
        "scirepeval_cite_prediction", role="training", real=lambda folder: folder / "train.jsonl",
        replica=lambda folder: write_training_triplets(synthetic().train, folder / "train.jsonl", p.seed)[0],
        replica_source=f"SPECTER's sampling on the training part of {replica_of}, in the cite_prediction layout")
    scidocs = data.input("scidocs", replica=lambda folder: write_scidocs(
        synthetic().eval, folder, seed=p.seed, n_queries=p.n_eval_queries, include_recomm=p.recommendations,
        progress=False), replica_source=f"SciDocs replica of the evaluation part of {replica_of}")
    csfcube = data.input("csfcube", replica=lambda folder: write_csfcube(
        synthetic().eval, folder, n_queries=p.csfcube_replica_queries, pool_size=p.csfcube_replica_pool,
        seed=p.seed), replica_source=f"CSFCube replica of the evaluation part of {replica_of}")
    return SimpleNamespace(triplets=triplets, scidocs=scidocs, csfcube=csfcube, synthetic=synthetic)


@dataclass
class TrainingSet:
    """The training triplets read, the query papers kept and their triplets, and SciNCL A.3's leakage audit."""

    training: TrainingTriplets
    queries: list[str]
    examples: list
    leakage: pd.DataFrame

    @property
    def papers(self):
        return self.training.papers

    @property
    def overlap(self) -> pd.Series:
        return self.leakage.loc["in test or validation"]

    @property
    def with_leakage(self) -> bool:
        return bool(self.overlap["training papers in it"] > 0)

    @property
    def leak_label(self) -> str:
        return " (with leakage)" if self.with_leakage else ""

    def describe(self) -> str:
        all_queries = len({t.query for t in self.training.triplets})
        return (f"{self.leakage.attrs['training papers']:,} training papers, {self.leakage.attrs['unmapped']:,} "
                f"without a sha (left out of the comparison); {len(self.queries):,} of {all_queries:,} query "
                f"papers used, {len(self.examples):,} triplets.")

    def leakage_line(self) -> str:
        return (f"Leakage: {self.overlap['training papers in it']:,} of {self.leakage.attrs['training papers']:,} "
                f"training papers ({self.overlap['% of the training papers']:.1f} %) are SciDocs test or "
                "validation papers.")


def training_set(run, inputs, max_queries: int | None = None) -> TrainingSet:
    """Read the training triplets, keep a seeded sample of ``max_queries`` query papers (0: all) with their
    triplets, and audit them against SciDocs' test and validation papers (glued for the prose as
    ``<chapter>_leakage_label`` and ``<chapter>_leakage_share``). Replicas are written from disjoint parts of
    one corpus, so leakage between them is a bug and raises."""
    p = run.p
    training = read_training_triplets(inputs.triplets.path)
    count = p.max_queries if max_queries is None else max_queries
    queries = take_queries([t.query for t in training.triplets], count, p.seed)
    kept = set(queries)
    examples = [t for t in training.triplets if t.query in kept]
    leakage = scidocs_leakage(training.papers, inputs.scidocs.path)
    result = TrainingSet(training, queries, examples, leakage)
    if replicas_of_one_corpus(inputs.triplets, inputs.scidocs) and result.with_leakage:
        raise ChapterCheckFailed("the replicas are built from disjoint parts of the synthetic corpus, yet "
                                 f"{result.overlap['training papers in it']} training papers are SciDocs papers")
    if result.with_leakage:  # the released triplets share 40.5 % of their papers with SciDocs (SciNCL A.3)
        run.branch("training papers overlap SciDocs (with leakage)")
    run.glue("leakage_share", f"{result.overlap['% of the training papers']:.1f}")
    run.glue("leakage_label", "with leakage" if result.with_leakage else "without leakage")
    return result


# ------------------------------------------------------------------------------------------------- SPECTER(Undirected)
@dataclass
class UndirectedSet:
    """SPECTER(Undirected)'s triplets, sampled on the citations inside the training triplets (thesis §3)."""

    citations: object
    graph_report: dict
    triplets: list
    report: object

    def sampling_table(self, specter_examples: Sequence) -> pd.DataFrame:
        """Counts of both triplet sets: triplets, queries, papers, collisions, filled hard negatives."""
        return pd.DataFrame({
            "SPECTER (the training triplets)": {**triplet_statistics(specter_examples),
                                                "hard negatives filled with easy ones": np.nan,
                                                "oversampled queries": np.nan},
            "SPECTER(Undirected) (sampled on their citations)": {
                **triplet_statistics(self.triplets), "hard negatives filled with easy ones": self.report.hard_short,
                "oversampled queries": self.report.oversampled_queries},
        }).T

    def example(self, papers) -> pd.DataFrame:
        """One hard triplet with its titles."""
        example = next(t for t in self.triplets if t.kind == "hard")
        return pd.DataFrame({role: {"paper": pid, "title": papers[pid].title}
                             for role, pid in (("query", example.query), ("positive (neighbour)", example.positive),
                                               ("hard negative", example.negative))}).T

    def describe(self) -> str:
        return (f"the triplets' citation graph: {self.graph_report['edges']:,} citations between "
                f"{len(self.citations.nodes):,} papers; the training triplets do not say which of their negatives "
                f"were hard. {self.report}")


def undirected_set(training: TrainingSet, seed: int) -> UndirectedSet:
    """Sample SPECTER(Undirected) for the same query papers on the citations of the training triplets, and check
    the rule: every positive is a neighbour of its query, no negative is one (nor the query), every hard negative
    is cited by one of the query's references, and every (query, positive) of SPECTER's file is a citation."""
    from sdr.graph import citation_graph_from_triplets
    from sdr.samplers import undirected_triplets

    citations, _, graph_report = citation_graph_from_triplets(training.training.paper_triplets)
    triplets, report = undirected_triplets(citations, candidates=sorted(training.papers),
                                           query_ids=training.queries, seed=seed, progress=False, verbose=False)
    if not triplets:
        raise ChapterCheckFailed(f"SPECTER(Undirected): no triplets sampled ({report})")
    broken = [t for t in triplets if t.positive not in citations.neighbours(t.query)
              or t.negative in citations.neighbours(t.query) or t.negative == t.query]
    broken += [t for t in triplets if t.kind == "hard" and not any(
        t.negative in citations.references(r) for r in citations.references(t.query))]
    broken += [t for t in training.examples if (t.query, t.positive) not in citations]
    if broken:
        raise ChapterCheckFailed(f"{len(broken)} triplets break the sampling rule, e.g. {broken[:2]}")
    return UndirectedSet(citations, graph_report, triplets, report)


# ------------------------------------------------------------------------------------------------- training
def train_config(p, **overrides) -> TrainConfig:
    """The chapter's training settings from its parameters (SPECTER's own at ``paper``)."""
    return TrainConfig(epochs=p.epochs, batch_size=p.batch_size, accumulation_steps=p.accumulation_steps,
                       learning_rate=p.learning_rate, seed=p.seed, checkpoint_every=p.checkpoint_every,
                       schedule=p.schedule, **overrides)


def triplet_encoder(run, max_length: int | None = None):
    """A fresh encoder as SPECTER reads a paper: [CLS] pooling of ``title [SEP] abstract``."""
    return run.encoder(pooling="cls", max_length=max_length or run.p.max_length)


def fit_on_triplets(run, name: str, examples, papers, config, folder: str, probe: int) -> Fit:
    """Train a fresh :func:`triplet_encoder` on ``examples`` with SPECTER's objective (triplet loss, L2, margin 1)
    and ``config``, checkpointed in the run folder ``folder`` (:meth:`sdr.book.ChapterRun.fit`; ``probe``: triplets
    of the before/after loss, 0 for none). Every text the triplets name must be in ``papers``."""
    encoder = triplet_encoder(run)
    needed = {pid for t in examples for pid in (t.query, t.positive, t.negative)}
    missing = sorted(needed - set(papers))
    if missing:
        raise KeyError(f"{name}: {len(missing)} papers of the triplets have no text, e.g. {missing[:3]}")
    objective = TripletObjective({pid: encoder.paper_text(papers[pid]) for pid in needed})
    return run.fit(name, examples, objective, config, encoder=encoder, folder=folder, probe=probe)


def train_triplet_models(run, runs: Mapping[str, tuple[str, Sequence]], papers, config: TrainConfig | None = None,
                         probe: int = 128) -> dict[str, Fit]:
    """Train one fresh encoder per entry of ``runs`` (``{page name: (run folder, triplets)}``) with SPECTER's
    objective (triplet loss, L2, margin 1) and the chapter's settings; each run checkpoints in its folder and
    continues there when the chapter is rerun with ``resume = True`` (the chapter's whole cost was printed first,
    :meth:`sdr.book.ChapterRun.show_plan`). Returns the fits by page name."""
    config = config or train_config(run.p)
    fits = {name: fit_on_triplets(run, name, examples, papers, config, folder, probe)
            for name, (folder, examples) in runs.items()}
    if run.p.resume:
        print("resumed from optimizer step:", {folder: fits[name].result.resumed_from_step
                                                for name, (folder, _) in runs.items()})
    return fits


def expect_lower_loss(run, fits: Mapping[str, Fit]) -> pd.DataFrame:
    """The check with teeth that training lowered every run's triplet loss on its probe triplets (dropout off) by more
    than ``min_loss_drop`` (set from the seed spread measured at smoke and real, profiles.yml; 0 at paper: a strict
    drop);
    returns the losses. Not applied in the paper dry run, whose tiny random stand-ins train a few steps at the paper's
    learning rate and leave the probe loss where it was (measured: 1.0000 before and after, 4 decimals); a line says
    so. Shown in: notebooks/specter.ipynb and notebooks/scincl.ipynb, Training."""
    from sdr import datasets

    if datasets.dry_run():
        print("check not applied: the paper dry run's stand-ins (tiny random models) train a few steps at the paper's "
              "learning rate, which leaves their probe loss where it was; at paper the loss must fall")
        return pd.DataFrame({fit.name: fit.losses() for fit in fits.values()}).T
    return run.expect_lower_loss(fits.values(), run.p.min_loss_drop)


def page_names(training: TrainingSet) -> dict[str, str]:
    """SPECTER's two runs → their names on the page (labelled when the training data overlap SciDocs)."""
    return {"SPECTER": f"SPECTER{training.leak_label}",
            "SPECTER(Undirected)": f"SPECTER(Undirected) on the triplets' citations{training.leak_label}"}


def specter_runs(training: TrainingSet, undirected: UndirectedSet) -> dict[str, tuple[str, list]]:
    """Page name → (run folder, triplets) of the chapter's two models, trained on the same query papers."""
    names = page_names(training)
    return {names["SPECTER"]: ("SPECTER", training.examples),
            names["SPECTER(Undirected)"]: ("SPECTER(Undirected)", undirected.triplets)}


def retrainer(run, training: TrainingSet, undirected: UndirectedSet, runs: Mapping[str, tuple[str, Sequence]]):
    """``retrain(name, seed) -> encoder`` for :func:`seed_rows`: SPECTER on the same triplets with another training
    seed, SPECTER(Undirected) on triplets sampled again with that seed (the run folder ``"<run> seed <seed>"``)."""
    from sdr.samplers import undirected_triplets

    config = train_config(run.p)

    def retrain(name: str, seed: int):
        folder, examples = runs[name]
        if folder == "SPECTER(Undirected)":
            examples = undirected_triplets(undirected.citations, candidates=sorted(training.papers),
                                           query_ids=training.queries, seed=seed, progress=False, verbose=False)[0]
        fit = fit_on_triplets(run, f"{name} seed {seed}", examples, training.papers, replace(config, seed=seed),
                               f"{folder} seed {seed}", probe=0)
        run.fits.pop(fit.name, None)  # the caller scores it and lets it go: at paper each is a SciBERT on the GPU
        return fit.encoder

    return retrain


#: How the chapters label a released checkpoint's row (``allenai/specter (released checkpoint)``).
RELEASED_LABEL = "{} (released checkpoint)"


def released_encoders(run) -> dict:
    """The released checkpoints the profile scores (``released_checkpoints``), loaded as their papers read them."""
    p = run.p
    return {RELEASED_LABEL.format(name): run.encoder(name=name, pooling="cls", max_length=p.released_max_length,
                                                         num_layers=p.released_layers)
            for name in p.released_checkpoints}


# ------------------------------------------------------------------------------------------------- SciDocs
def scidocs_table(run, inputs, models: Mapping, extend: Callable[[dict], dict] | None = None) -> pd.DataFrame:
    """Every model (encoder) scored on SciDocs (the book's evaluator, official metrics × 100) with the ids that
    had no embedding; a replica names every paper its tasks use, so a missing embedding there raises. ``extend``
    adds columns to each model's row (SciNCL: Table 2's task averages, :func:`sdr.methods.scincl.with_task_averages`)."""
    from sdr.evaluate import scidocs

    papers = scidocs.read_papers(inputs.scidocs.path)
    extend = extend or dict
    # a released checkpoint's vectors through the embeddings cache (the released part embedded them before training)
    # (where the run loaded it from: the Hub name, or the dry run's stand-in folder, as the released part read it)
    released = {RELEASED_LABEL.format(name): (run.data.model(name), run.p.released_layers)
                for name in getattr(run.p, "released_checkpoints", ())}
    rows, read_back = {}, []
    for name, encoder in models.items():
        cached: list[str] = []
        rows[name] = extend(scidocs_scores(encoder, papers, inputs.scidocs.path, run.p.recommendations,
                                           released=released.get(name), read_back=cached))
        read_back += [name] * bool(cached)
    ours = pd.DataFrame(rows).T
    if read_back:
        print(f"SciDocs vectors read back from the embeddings cache (the released part embedded them): "
              f"{', '.join(read_back)}")
        run.branch("released checkpoint's SciDocs vectors read from the cache")
    if not inputs.scidocs.real and (ours["missing embeddings"] != 0).any():
        raise ChapterCheckFailed(f"the SciDocs replica's metadata must name every paper: {ours['missing embeddings']}")
    scores = ours[METRIC_COLUMNS[:-1]].fillna(0)
    if not ((scores >= 0) & (scores <= 100)).all().all():
        raise ChapterCheckFailed(f"SciDocs scores outside [0, 100]:\n{scores}")
    return ours


def gains_over_untrained(run, ours: pd.DataFrame, names: Sequence[str]) -> dict[str, float]:
    """Each trained model's mean of the 8 proximity metrics minus the untrained encoder's (× 100), glued for the
    prose as ``<chapter>_gain_<i>``."""
    untrained = proximity_mean(ours.loc["untrained encoder"])
    gains = {name: proximity_mean(ours.loc[name]) - untrained for name in names}
    for number, gain in enumerate(gains.values()):
        run.glue(f"gain_{number}", f"{gain:+.2f}")
    return gains


def papers_next_to_ours(run, ours: pd.DataFrame, paper_models: Sequence[str], source: str | None = None) -> pd.DataFrame:
    """The paper rows of ``data/paper_tables/scidocs.csv`` named ``paper_models`` (those of the paper ``source``
    only, when given: SciNCL's Table 1 quotes SciBERT too) above our rows, on the twelve SciDocs metrics and their
    average (every paper row must be found)."""
    paper = book.read_paper_table("scidocs")
    if source is not None:
        paper = paper[paper["source"] == source]
    paper = paper[paper["model"].isin(paper_models)]
    ours_label = f"this book ({run.profile})"
    comparison = book.paper_vs_ours(ours, paper, METRIC_COLUMNS, label=ours_label)
    if not set(paper["model"]) <= set(comparison.loc[comparison["reported by"] != ours_label, "model"]):
        raise ChapterCheckFailed(f"paper rows missing from the comparison: {sorted(paper['model'])}")
    return comparison


# ------------------------------------------------------------------------------------------------- ours and the paper
def model_family(p) -> str:
    """The model our rows start from, in :data:`sdr.methods.specter.PAPER_ROWS`' words ("SciBERT" at ``paper``)."""
    if "scibert" in str(p.model_name).lower() and not p.model_layers:
        return "SciBERT"
    return book.base_model_label(p.model_name, p.model_layers)


def training_data(inputs, training: TrainingSet) -> str:
    """Our training data in :data:`sdr.methods.specter.PAPER_ROWS`' words: SPECTER's training triplets (all of them,
    or the sample the run took), or their replica."""
    if not inputs.triplets.real:
        return "a replica of SPECTER's training triplets (synthetic corpus)"
    every = len({t.query for t in training.training.triplets})
    if len(training.queries) == every:
        return "SPECTER's training triplets"
    return f"SPECTER's training triplets of {len(training.queries):,} of their {every:,} query papers"


def row_origins(run, inputs, trained: Mapping[str, str], released: Sequence[str]) -> dict:
    """Where each SciDocs row of ours comes from (:class:`sdr.methods.specter.RowOrigin`): the untrained encoder,
    each trained row (``trained``: page name → its training data in words; trained with the run's epochs, effective
    batch, learning rate and input length, :class:`sdr.methods.specter.TrainingProtocol`) and each released
    checkpoint (the paper's own model, read with the page's protocol)."""
    from sdr.methods.specter.paper import (PAPER_ROWS, RELEASED_PAPER_ROW, RowOrigin, TrainingProtocol,
                                           scidocs_protocol)

    protocol = scidocs_protocol(inputs.scidocs.real, run.p.recommendations)
    family = model_family(run.p)
    training = TrainingProtocol.of_run(run.p)
    origins = {"untrained encoder": RowOrigin("none (untrained)", family, protocol)}
    origins.update({name: RowOrigin(words, family, protocol, training) for name, words in trained.items()})
    for name in released:
        paper_row = PAPER_ROWS[RELEASED_PAPER_ROW[name]]
        origins[f"{name} (released checkpoint)"] = replace(paper_row, protocol=protocol)
    return origins


def paper_pairs(run, inputs, training: TrainingSet, ours: pd.DataFrame):
    """Our SciDocs rows beside the paper rows they match (the one rule, :func:`sdr.methods.specter.pair_with_paper`:
    same training data, model family, protocol and training protocol), the others apart with the reason. SPECTER's rows: the
    untrained encoder ↔ SciBERT, SPECTER ↔ SciNCL Table 1's SPECTER, SPECTER(Undirected) ↔ the thesis' (trained on
    other data: always apart), the released checkpoint ↔ SPECTER."""
    from sdr.methods.specter.paper import RELEASED_PAPER_ROW, pair_with_paper

    names = page_names(training)
    data = training_data(inputs, training)
    trained = {names["SPECTER"]: data,
               names["SPECTER(Undirected)"]: f"the undirected sampling on the citations of {data}"}
    released = list(run.p.released_checkpoints)
    origins = row_origins(run, inputs, trained, released)
    candidates = {"untrained encoder": "SciBERT", names["SPECTER"]: "SPECTER",
                  names["SPECTER(Undirected)"]: "SPECTER(Undirected)",
                  **{f"{name} (released checkpoint)": RELEASED_PAPER_ROW[name] for name in released}}
    paper = book.read_paper_table("scidocs")
    paper = paper[(paper["source"] == "SciNCL") | (paper["model"] == "SPECTER(Undirected)")]
    return pair_with_paper(ours, origins, candidates, METRIC_COLUMNS, paper)


def show_pairs(run, pairs: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    """Show the rows paired with the paper's (each metric: ours, the paper's, the difference), or say that none is,
    then the rows shown apart with what differs. Shown in: notebooks/specter.ipynb and notebooks/scincl.ipynb."""
    from IPython.display import display

    from sdr.methods.specter.paper import NOT_COMPARED

    paired, apart = pairs
    print(run.caption())
    if len(paired):
        display(paired.round(2))
    else:
        print("No row of ours comes from the paper's training data, model family, protocol and training protocol "
              "together: none is paired with a paper's row.")
    if len(apart):
        print("Shown apart from the paper's rows:")
        display(apart)
    print(NOT_COMPARED)


#: What the SPECTER chapter does differently from SPECTER (and the thesis) at every profile; the deviations that
#: depend on the run's parameters and data are generated (:func:`specter_deviations`).
SPECTER_DEVIATIONS = (
    "SPECTER trained with AllenNLP; this book's trainer (sdr.train) runs the same objective and optimiser in "
    "PyTorch, and its slanted-triangular warm-up starts from lr / warm-up steps instead of lr / 32 (the schedule "
    "note under the training).",
    "SPECTER(Undirected) is sampled on the citations inside SPECTER's training triplets (query → positive), not on "
    "the Semantic Scholar citations of SciNCL's w/o-leakage queries that the thesis fetched: its training papers "
    "overlap SciDocs as SPECTER's do, where the thesis' had no test-set overlap.",
)


def specter_deviations(run) -> list[str]:
    """What differs from the paper at this run, one line each (:func:`sdr.methods.specter.deviations`)."""
    from sdr.methods.specter.paper import deviations

    return deviations(run, fixed=SPECTER_DEVIATIONS)


# ------------------------------------------------------------------------------------------------- CSFCube
@dataclass
class CSFCubeScores:
    """A CSFCube table (system, facet) × metric and the evaluator's per-system output with per-query scores."""

    table: pd.DataFrame
    results: dict
    sources: list[str]
    scored: list[str]


def csfcube_table(run, inputs, models: Mapping, names: Mapping[str, str], released: Sequence[str]) -> CSFCubeScores:
    """Score ``models`` on CSFCube's test split (every facet; L2 ranking, the official SPECTER protocol) at the
    Benchmarks chapter's input length (``csfcube_max_length``; released checkpoints at most theirs). On real
    CSFCube only the models ``csfcube_models`` names are scored (thousands of papers per model) and the official
    SPECTER rankings come first, which must score the published MAP 34.23 and NDCG%20 53.28 on the released bytes;
    on a replica every model is. ``names`` maps the run names ``csfcube_models`` lists to the page's names."""
    p = run.p
    chosen = [names.get(n, n) for n in p.csfcube_models] or [n for n in models if n not in released]
    scored = {name: models[name] for name in chosen} if inputs.csfcube.real else \
        {name: model for name, model in models.items() if name not in released}
    scored.update({name: models[name] for name in released})
    for name, encoder in scored.items():
        encoder.max_length = min(p.csfcube_max_length, p.released_max_length) if name in released \
            else p.csfcube_max_length
    table, results = csfcube_scores(scored, inputs.csfcube.path, official_specter=inputs.csfcube.real,
                                    return_results=True)
    if set(table.index.get_level_values("facet")) != {"background", "method", "result", "all"}:
        raise ChapterCheckFailed(f"CSFCube facets: {sorted(set(table.index.get_level_values('facet')))}")
    if not ((table >= 0) & (table <= 100)).all().all():
        raise ChapterCheckFailed(f"CSFCube scores outside [0, 100]:\n{table}")
    if inputs.csfcube.official:  # the released bytes (the registry's digests): the published SPECTER numbers
        official = table.loc[("SPECTER (official rankings)", "all")]
        if not (round(official["MAP"], 2) == 34.23 and round(official["NDCG%20"], 2) == 53.28):
            raise ChapterCheckFailed(f"the official SPECTER rankings score {official.to_dict()}, not the published "
                                     "MAP 34.23 / NDCG%20 53.28")
    sources = [*run.data.sources, f"CSFCube inputs cut at {p.csfcube_max_length} tokens"]
    return CSFCubeScores(table, results, sources, list(scored))


# ------------------------------------------------------------------------------------------------- seeds
@dataclass
class SeedRows:
    """The leaderboard models' CSFCube rows (one per model and seed) and the page's mean ± σ view of them."""

    rows: list[dict]
    table: pd.DataFrame
    models: list[str]
    seeds: list[int]
    budget: dict = field(default_factory=dict)


def seed_rows(run, inputs, csfcube: CSFCubeScores, fits: Mapping[str, Fit], retrain, paper_model: Mapping,
              pooling: str = "cls") -> SeedRows:
    """The leaderboard models (the trained models scored on CSFCube) trained again with the next seeds
    (``leaderboard_seeds`` in all; the ``seeds`` part, else the first seed only) and scored on CSFCube at the same
    length; one leaderboard row per model and
    seed, each compared with the Benchmarks chapter's untrained encoder read the same way.

    ``retrain(name, seed) -> encoder`` trains one more seed of a leaderboard model (its own sampling with that
    seed where the method samples)."""
    p = run.p
    # the extra seeds are the `seeds` part (a headline run trains each leaderboard model once)
    seeds = leaderboard_seeds(p.seed, p.leaderboard_seeds)
    if len(seeds) > 1 and not run.runs_part("seeds"):
        seeds = seeds[:1]
    models = [name for name in csfcube.scored if name in fits]
    runs = {(name, p.seed): csfcube.results[name] for name in models}
    for run_seed in seeds[1:]:
        for name in models:
            encoder = retrain(name, run_seed)
            run.branch("leaderboard model trained with another seed")
            encoder.max_length = p.csfcube_max_length
            _, results = csfcube_scores({name: encoder}, inputs.csfcube.path, official_specter=False,
                                        return_results=True)
            runs[(name, run_seed)] = results[name]
            del encoder
    base_model = book.base_model_label(p.model_name, p.model_layers)
    reference = book.untrained_reference(p.model_name, p.model_layers, pooling)
    budget = {name: training_budget(p.epochs, fits[name].steps, p.batch_size * p.accumulation_steps)
              for name in models}
    rows = [csfcube_leaderboard_row(name, result, inputs.csfcube.path, data=inputs.csfcube.kind,
                                    base_model=base_model, training=budget[name], input_tokens=p.csfcube_max_length,
                                    seed=run_seed, reference=reference, paper_model=paper_model.get(name))
            for (name, run_seed), result in runs.items()]
    untrained = (book.csfcube_per_query(csfcube.results["untrained encoder"], inputs.csfcube.path)[0]
                 if "untrained encoder" in csfcube.results else None)
    table = seed_spread(rows, untrained)
    if not (table["seeds"].str.count(",") + 1 == len(seeds)).all():
        raise ChapterCheckFailed(f"a leaderboard model lacks a seed of {seeds}:\n{table}")
    not_ranked = [name for name in fits if name not in models]
    if not_ranked:
        from IPython.display import Markdown, display

        display(Markdown(f"**Not on CSFCube at `{run.profile}`** (`csfcube_models`; profiles.yml says why): "
                         f"{', '.join(not_ranked)} trained with seed {p.seed} only and scored on SciDocs only, not "
                         f"on CSFCube nor on the leaderboard; {', '.join(models)} trained with {len(seeds)} seed(s)."))
    print(f"seeds {seeds}; CSFCube test, MAP over all facets (× 100), inputs cut at {p.csfcube_max_length} tokens")
    return SeedRows(rows, table, models, seeds, budget)


def leaderboard(run, inputs, ours: pd.DataFrame, csfcube: CSFCubeScores, seeds: SeedRows, fits: Mapping[str, Fit],
                released: Sequence[str], paper_model: Mapping) -> list[dict]:
    """The Summary page's rows of this chapter: the CSFCube rows of the seeds (one per leaderboard model and seed),
    the released checkpoints' CSFCube rows, and the SciDocs rows of the trained models and released checkpoints
    (SciDocs' average needs all 12 metrics, so only with ``recommendations``). The untrained encoder's rows are
    the Benchmarks chapter's."""
    p = run.p
    base_model = book.base_model_label(p.model_name, p.model_layers)

    def budget(name):
        if name in released:
            return "external: released checkpoint"
        return training_budget(p.epochs, fits[name].steps, p.batch_size * p.accumulation_steps)

    rows = seeds.rows + [csfcube_leaderboard_row(
        name, csfcube.results[name], inputs.csfcube.path, data=inputs.csfcube.kind, base_model="SciBERT",
        training=budget(name), input_tokens=min(p.csfcube_max_length, p.released_max_length),
        paper_model=paper_model.get(name)) for name in released]
    scidocs_models = [name for name in ours.index if name != "untrained encoder" and not math.isnan(ours.loc[name, "avg"])]
    rows += [book.leaderboard_row(
        name, "scidocs", ours.loc[name, METRIC_COLUMNS].dropna().to_dict(), data=inputs.scidocs.kind,
        base_model="SciBERT" if name in released else base_model, training=budget(name),
        paper_model=paper_model.get(name), input_tokens=p.released_max_length if name in released else p.max_length,
        seed=None if name in released else p.seed) for name in scidocs_models]
    expected = len(seeds.models) * len(seeds.seeds) + len(released) + len(scidocs_models)
    if len(rows) != expected:
        raise ChapterCheckFailed(f"{len(rows)} leaderboard rows, expected {expected}")
    return rows


def findings(seeds: SeedRows, inputs, csfcube_max_length: int, seed: int) -> list[str]:
    """One line per leaderboard model: its CSFCube MAP (mean ± σ over seeds) and its difference from the untrained
    encoder with the paired interval, when the untrained encoder was scored on the page."""
    lines = []
    for name, line in seeds.table.iterrows():
        spread = (f" ± {line['MAP σ']:.2f} over seeds {line['seeds']}" if len(seeds.seeds) > 1
                  else f" (seed {seed})")
        versus = (f"; {line['Δ vs untrained (this page)']:+.2f} [{line['95 % low']:+.2f}, {line['95 % high']:+.2f}] "
                  "from the untrained encoder scored here" if "95 % low" in line else "")
        lines.append(f"- {name}: CSFCube MAP (all facets, × 100, {inputs.csfcube.kind}, {csfcube_max_length} "
                     f"tokens) {line['MAP mean']:.2f}{spread}{versus}.")
    return lines



# ------------------------------------------------------------------------------------------------- the page's record
def store(run, inputs, training: TrainingSet, undirected: UndirectedSet, runs: Mapping, fits: Mapping[str, Fit],
          ours: pd.DataFrame, comparison: pd.DataFrame, csfcube: CSFCubeScores, seeds: SeedRows, rows: list[dict],
          gains: Mapping[str, float], pairs: tuple[pd.DataFrame, pd.DataFrame] | None = None,
          released=None, deviations: Sequence[str] = ()):
    """The SPECTER chapter's record in the results store: its tables, its leaderboard rows, and what the Summary
    and the status page read (steps, seeds, gains, where training resumed, leakage, missing embeddings); with the
    pairing with the paper's rows (``pairs``), the released models' tables where they ran (``released``:
    :class:`sdr.methods.specter.ReleasedModels`) and the deviations from the paper."""
    tables = {"SciDocs (ours)": ours.drop(columns="missing embeddings").round(2), "paper vs ours": comparison.round(2),
              "sampling": undirected.sampling_table(training.examples),
              "leakage": training.leakage.drop(columns="examples").round(3),
              "CSFCube test": csfcube.table.round(2).reset_index(), "CSFCube seeds": seeds.table.round(3).reset_index()}
    tables.update(fidelity_tables(pairs, released))
    extra = {"steps": min(fits[name].steps for name in runs), "leaderboard": rows, "leaderboard_seeds": seeds.seeds,
             "resumed_from_step": {folder: int(fits[name].result.resumed_from_step)
                                   for name, (folder, _) in runs.items()},
             "gains": dict(gains), "with_leakage": training.with_leakage,
             "missing embeddings": ours["missing embeddings"].to_dict()}
    if deviations:
        extra["deviations"] = list(deviations)
    return run.save(tables, extra, sources=csfcube.sources + run.data.model_sources)


def fidelity_tables(pairs, released) -> dict:
    """The tables the pairing and the released part add to a chapter's record (those that have rows)."""
    tables = {}
    if pairs is not None:
        paired, apart = pairs
        if len(paired):
            tables["paired with the paper"] = paired.round(2)
        if len(apart):
            tables["shown apart from the paper"] = apart
    if released is not None:
        if len(released.shipped):
            tables["released: SciDocs' shipped SPECTER embeddings"] = released.shipped.round(3)
        if len(released.checkpoints):
            tables["released checkpoints"] = released.checkpoints.round(4)
    return tables


def specter_findings(run, inputs, training: TrainingSet, ours: pd.DataFrame, gains: Mapping[str, float],
                     seeds: SeedRows) -> str:
    """What to take from this run, each line computed from its numbers (the papers' from the paper tables)."""
    names = page_names(training)
    paper = book.read_paper_table("scidocs").set_index("model")["avg"]
    lines = [f"- Training on citations moved the proximity mean by "
             f"{', '.join(f'{g:+.2f} ({n})' for n, g in gains.items())} over the untrained encoder on the "
             f"{inputs.scidocs.kind} SciDocs.",
             f"- The undirected variant minus SPECTER: "
             f"{gains[names['SPECTER(Undirected)']] - gains[names['SPECTER']]:+.2f} (the thesis: SPECTER(Undirected) "
             f"{paper['SPECTER(Undirected)']:.2f} vs SPECTER w/o leakage {paper['SPECTER (random S2ORC w/o leakage)']:.1f}, "
             "both averages).",
             f"- {training.leakage_line()}"]
    lines += findings(seeds, inputs, run.p.csfcube_max_length, run.p.seed)
    lines += [f"- {name}: SciDocs avg {ours.loc[f'{name} (released checkpoint)', 'avg']:.2f}."
              for name in run.p.released_checkpoints]
    return "\n".join(lines)
