"""The steps of the FLeW chapter, one call each: its data, the splitter (section 1), the facet subgraphs and the
structural sampling (section 2), and training (section 3); :mod:`.evaluation` holds the benchmarks (sections 4-5),
the paper's tables, the findings and the store.

Each step takes the chapter's :class:`sdr.book.ChapterRun` (its parameters are ``run.p``) and what earlier steps
returned, and returns what the page shows. The invariants (band membership, counts, ranges, "every sentence in
one facet") are checked here and raise :class:`sdr.book.ChapterCheckFailed` with a clear message; the data policy
decides which checks apply (the released CSAbstruct's target, a replica's near-perfect split), so the page never
asks where an input came from. The chapter keeps one line per claim (``check_splitter``,
``expect_link_prediction``, ``run.expect_lower_loss``, ``expect_heldout_gain``).

The chapter's variants are registries the notebook, the plan and the tests read: :data:`FACET_ENCODERS` (the
three facet encoders' page names), :data:`ABLATIONS` (FLeW's Table 3 ablations: what each trains, its paper
rows, its weighted sum) and :data:`RELEASED_BASELINES` / :data:`RELEASED_FLEW` (the released encoders scored at
``paper``).

Shown in: notebooks/flew.ipynb.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import pandas as pd

from sdr import book, facets
from sdr.book.chapter import ChapterCheckFailed, Fit
from sdr.facets import FACETS
from sdr.methods.flew.recipe import (FLEW_BANDS, SPLITTER_AGREEMENT_TARGET, SPLITTER_BASELINE_MARGIN,
                                     corpus_id_map, embed_facet_subgraphs,
                                     expect_triplets_per_query, facet_edges, facet_papers, facet_triplets,
                                     heldout_triplet_scores, query_list,
                                     read_released_triplets, released_facet_models, subgraph_table)

__all__ = ["FACET_ENCODERS", "SUM_NAME", "Ablation", "ABLATIONS", "chosen_ablations", "RELEASED_BASELINES",
           "RELEASED_FLEW", "LINK_PREDICTION_MIN_AUC", "TRAINING_PARAMETERS", "show", "chapter_inputs",
           "FacetSplitter", "facet_splitter", "SplitterScores", "OURS_SPLITTER", "BASELINE_SPLITTER", "splitter_scores", "check_splitter",
           "CSFCubeAgreement", "csfcube_agreement", "split_example", "FacetGraph", "facet_subgraphs",
           "QueryList", "shared_query_list", "Sampling", "structural_sampling", "expect_link_prediction",
           "FacetTraining", "train_facet_encoders", "expect_trained", "heldout_scores", "expect_heldout_gain"]

#: The three facet encoders (§3.3) by facet: their names on the page, in the results and on the leaderboard.
FACET_ENCODERS = {"background": "FLeW-bg", "method": "FLeW-mt", "result": "FLeW-rs"}
#: The tuned weighted sum of the three (eq. 8).
SUM_NAME = "FLeW"
#: Link prediction on each facet subgraph's held-out edges must beat chance (AUC 50) by this much: the held-out
#: edges are a share ``graph_test_fraction`` of each subgraph, so the bar is low.
LINK_PREDICTION_MIN_AUC = 55
#: The notebook parameters that change training; with the training data's sources they key the run folder
#: (:func:`sdr.book.run_dir`), so a rerun with ``resume = True`` finds its checkpoints.
TRAINING_PARAMETERS = ("model_name", "model_layers", "pooling", "seed", "n_papers", "eval_fraction",
                       "graph_dimension", "graph_epochs", "graph_test_fraction", "max_queries", "max_length",
                       "epochs", "batch_size", "accumulation_steps", "learning_rate")
#: FLeW's baselines scored at ``paper`` (``sdr.datasets.CHAPTER_MODELS["flew"]``) → their page names; read with
#: [CLS] pooling, as they were trained.
RELEASED_BASELINES = {"allenai/specter": "SPECTER (released)", "malteos/scincl": "SciNCL (released)",
                      "allenai/specter2_base": "SPECTER-2 base (released, no adapter)"}
#: FLeW's released checkpoints (three facet encoders each) → the tag of their encoders and of their tuned sum:
#: ``FLeW-split`` trained on split abstracts (the paper's FLeW), ``FLeW-full`` on full ones (Table 3's w/o textual).
RELEASED_FLEW = {"Miracle-dz/FLeW-split": "released, split", "Miracle-dz/FLeW-full": "released, full: w/o textual"}


# ------------------------------------------------------------------------------------------------- ablations
@dataclass(frozen=True)
class Ablation:
    """One of FLeW's Table 3 ablations the chapter trains when the ``ablations`` parameter names it.

    ``paper_rows`` are its rows of ``data/paper_tables/flew_table3.csv``; ``encoders(graph, queries, sampling,
    seed)`` gives the runs it trains (``{page name: (triplets, papers)}``); ``weighted_sum`` names its tuned sum
    of facet encoders (``members``: facet → encoder page name), if it has one."""

    what: str
    paper_rows: tuple[str, ...]
    encoders: Callable
    weighted_sum: str | None = None
    members: Mapping[str, str] = field(default_factory=dict)


def _without_textual(graph, queries, sampling, seed) -> dict:
    """The same facet triplets, read with full abstracts."""
    return {f"{FACET_ENCODERS[f]} w/o textual": (sampling.triplets[f], graph.papers) for f in FACETS}


def _without_structural(graph, queries, sampling, seed) -> dict:
    """One encoder on SciNCL triplets of the whole, unweighted citation graph for the same queries."""
    from sdr import graph as graph_module
    from sdr.methods import scincl

    whole = graph_module.embed(graph.graph, sampling.config, nodes=sampling.nodes)
    triplets, _ = scincl.sample_triplets(whole, scincl.scaled_bands(len(sampling.nodes)), query_ids=queries.train,
                                         seed=seed)
    return {"FLeW w/o structural (one encoder, whole graph)": (triplets, graph.papers)}


ABLATIONS = {
    "without_textual": Ablation(
        "three facet encoders on the same triplets with full abstracts",
        paper_rows=("FLeW-bg (w/o Textual)", "FLeW-mt (w/o Textual)", "FLeW-rs (w/o Textual)", "FLeW w/o Textual"),
        encoders=_without_textual, weighted_sum="FLeW w/o textual",
        members={f: f"{FACET_ENCODERS[f]} w/o textual" for f in FACETS}),
    "without_structural": Ablation(
        "one encoder on triplets of the whole citation graph, full abstracts (the paper's row is SPECTER-2)",
        paper_rows=("FLeW w/o Structural",), encoders=_without_structural),
}


def chosen_ablations(names: Sequence[str]) -> dict[str, Ablation]:
    """The ablations ``names`` asks for, in :data:`ABLATIONS` order; an unknown name raises."""
    unknown = sorted(set(names) - set(ABLATIONS))
    if unknown:
        raise ValueError(f"ablations: unknown {unknown}; expected names of sdr.methods.flew.ABLATIONS "
                         f"{sorted(ABLATIONS)}")
    return {name: ablation for name, ablation in ABLATIONS.items() if name in names}


# ------------------------------------------------------------------------------------------------- the page
def show(run, table: pd.DataFrame, *sources: str, title: str = "", decimals: int | None = 2) -> None:
    """Print ``title``, then the caption naming the profile and ``sources`` (the data behind ``table``; none: no
    caption), then display ``table`` rounded to ``decimals``. An empty table (nothing held out, CSFCube off) shows
    nothing: the step that made it printed why."""
    from IPython.display import display

    if table.empty:
        return
    if title:
        print(title)
    if sources:
        print(book.caption(run.profile, list(sources)))
    display(table.round(decimals) if decimals is not None else table)


# ------------------------------------------------------------------------------------------------- data
def chapter_inputs(run) -> SimpleNamespace:
    """FLeW's inputs under the data policy: for training its released triplets (the query list), the Semantic
    Scholar citation graph with intents and CSAbstruct for the splitter; for evaluation MDCR (with its papers'
    texts), SciRepEval (registry and data) and CSFCube. Where the profile allows replicas they are written from one
    synthetic corpus (its training part for the training inputs, its evaluation part for the benchmarks).

    The released encoders the profile scores (``score_released_models``) are located here, so a FLeW checkpoint
    whose layout this code does not know stops the chapter before any training.

    Shown in: notebooks/flew.ipynb, first code cell."""
    from sdr.synthetic import make_corpus, s2_api
    from sdr.synthetic.csfcube import write_csfcube
    from sdr.synthetic.mdcr import write_mdcr
    from sdr.synthetic.scirepeval import write_scirepeval
    from sdr.synthetic.sentences import write_csabstruct
    from sdr.synthetic.split import split_corpus

    from sdr.methods.flew.fixtures import write_split_metadata
    from sdr.methods.flew.parts import check_parts

    check_parts(run)
    p, data = run.p, run.data
    parts = data.lazy("the synthetic corpus behind the replicas",
                      lambda: split_corpus(make_corpus(n_papers=p.n_papers, seed=p.seed), p.eval_fraction, seed=p.seed))
    replica_of = f"synthetic corpus (seed {p.seed}, {p.n_papers} papers)"
    triplets = data.input("flew_triplets", role="training",
                          replica=lambda folder: s2_api.write_flew_triplets(parts()[0], folder, seed=p.seed),
                          replica_source=f"FLeW-style triplet files of the training part of the {replica_of} "
                                         "(query list: papers with an edge in every facet subgraph)")
    split_metadata = data.input(
        "flew_split_metadata", role="training",
        replica=lambda folder: write_split_metadata(parts()[0], folder, s2_api.corpus_ids(parts()[0])),
        replica_source=f"split abstracts of the training part of the {replica_of}, cut by its planted facets")
    citations = data.input("s2ag_citations_flew", role="training",
                           replica=lambda folder: s2_api.write_citation_pages(parts()[0], folder),
                           replica_source=f"Semantic Scholar citation pages of the training part of the {replica_of}, "
                                          "written by the real fetcher from a synthetic Graph API")
    if citations.real and citations.name == "s2ag_bulk_flew":  # CHAPTER_DATA's route at paper (sdr.datasets.BULK_ROUTE)
        run.branch("citation graph read from the bulk route (s2ag_bulk_flew)")
    csabstruct = data.input("csabstruct", role="training",
                            replica=lambda folder: write_csabstruct(parts()[0], folder, seed=p.seed),
                            replica_source=f"CSAbstruct replica of the training part of the {replica_of}")
    mdcr = data.input("mdcr", files=("mdcr_val.json", "mdcr_test.json", "mdcr_val_data.jsonl", "mdcr_test_data.jsonl"),
                      replica=lambda folder: write_mdcr(parts()[1], folder, seed=p.seed,
                                                        n_queries_per_field=p.mdcr_queries_per_field, progress=False),
                      replica_source=f"MDCR replica of the evaluation part ({p.mdcr_queries_per_field} queries per "
                                     "field and split)")
    scirepeval = data.input("scirepeval_full",
                            replica=lambda folder: write_scirepeval(parts()[1], folder, seed=p.seed,
                                                                    n_queries=p.scirepeval_queries, progress=False),
                            replica_source=f"SciRepEval replica of the evaluation part ({p.scirepeval_queries} "
                                           "queries per ranking task)")

    def replica_registry(folder):
        shutil.copy(scirepeval.file("scirepeval_tasks.jsonl"), folder)
        return folder

    registry = data.input("scirepeval", replica=replica_registry,
                          replica_source="the SciRepEval replica's task registry")
    csfcube = data.input("csfcube", replica=lambda folder: write_csfcube(parts()[1], folder, n_queries=12,
                                                                         pool_size=24, seed=p.seed),
                         replica_source="CSFCube replica of the evaluation part (12 query papers)")
    return SimpleNamespace(triplets=triplets, citations=citations, csabstruct=csabstruct, mdcr=mdcr,
                           scirepeval=scirepeval, registry=registry, csfcube=csfcube, split_metadata=split_metadata,
                           tasks=registry.file("scirepeval_tasks.jsonl"), released=_released_models(run))


def _released_models(run) -> dict[str, dict | str]:
    """The released encoders to score (part ``released``): a baseline's name → where it loads from; a FLeW
    checkpoint's name → its three facet encoders' folders (in the paper dry run, their stand-ins in the released
    layout; the offline MiniLM where the mirror has none)."""
    from sdr import datasets

    names = datasets.CHAPTER_MODELS["flew"] if run.p.score_released_models and "released" in run.parts else ()
    unknown = [name for name in names if name not in RELEASED_BASELINES and name not in RELEASED_FLEW]
    if unknown:
        raise ValueError(f"sdr.datasets.CHAPTER_MODELS['flew'] names {unknown}, which neither RELEASED_BASELINES nor "
                         "RELEASED_FLEW of sdr.methods.flew labels")
    located = {name: run.data.model(name) for name in names}
    found = {name: (where if name not in RELEASED_FLEW else dict.fromkeys(FACETS, where) if where == "minilm"
                    else {f: str(folder) for f, folder in released_facet_models(where).items()})
             for name, where in located.items()}
    if any(located[name] != "minilm" for name in RELEASED_FLEW if name in located):
        run.branch("released FLeW checkpoints read as three facet encoders")
    return found


def _encoder(run, name: str | None = None, layers: int | None = None, pooling: str | None = None):
    """A fresh encoder with the chapter's settings. MiniLM (the offline model, and every Hub model's stand-in in
    the paper dry run) is read with the mean pooling it was trained with: its [CLS] vectors barely differ between
    papers, which also makes SciRepEval's SVMs ~9x slower."""
    p = run.p
    located = run.data.model(name or p.model_name)
    return run.encoder(name=name, pooling="mean" if located == "minilm" else (pooling or p.pooling),
                       max_length=p.max_length, num_layers=p.model_layers if layers is None else layers)


# ------------------------------------------------------------------------------------------------- 1. the splitter
@dataclass
class FacetSplitter:
    """The sentence classifier standing in for FLeW's LLM, its splitter, and CSAbstruct's train and test splits."""

    classifier: object
    splitter: facets.Splitter
    train: tuple[list, list]
    test: tuple[list, list]


def facet_splitter(run, inputs) -> FacetSplitter:
    """Train (or load) :class:`sdr.facets.SentenceClassifier` on CSAbstruct's train split; cached only when that is
    the released CSAbstruct (a replica's is trained afresh each run). The splitter maps ``objective`` to method.

    Shown in: notebooks/flew.ipynb, 1. The facet splitter, without an LLM."""
    path = facets.default_model_path() if inputs.csabstruct.official else run.workdir / facets.MODEL_FILE
    classifier = facets.load_or_train(inputs.csabstruct.path, path=path)
    split = FacetSplitter(classifier, facets.ClassifierSplitter(classifier, objective_to="method"),
                          facets.read_csabstruct(inputs.csabstruct.file("train.jsonl")),
                          facets.read_csabstruct(inputs.csabstruct.file("test.jsonl")))
    print(inputs.csabstruct.source)
    print("classifier trained on", classifier.trained_on)
    return split


@dataclass
class SplitterScores:
    """Facet agreement on CSAbstruct test: both systems × both readings of ``objective``, ours per facet, and the
    two numbers the check reads (ours with objective → method; the baseline's best reading)."""

    table: pd.DataFrame
    per_facet: pd.DataFrame
    ours: float
    baseline: float


OURS_SPLITTER, BASELINE_SPLITTER = "sequential classifier (sdr.facets)", "TF-IDF + position, LR (baseline)"


def splitter_scores(split: FacetSplitter) -> SplitterScores:
    """The classifier and the lexical baseline (each sentence on its own: TF-IDF + position, one logistic
    regression) scored on CSAbstruct test: the share of background/method/result sentences given their own facet,
    5-label accuracy and F1 per facet, with ``objective`` read as method and as background.

    Shown in: notebooks/flew.ipynb, 1. The facet splitter, without an LLM."""
    (train_abstracts, train_labels), (test_abstracts, test_labels) = split.train, split.test
    predicted = split.classifier.predict(test_abstracts)
    lexical = facets.lexical_baseline(train_abstracts, train_labels, test_abstracts)
    rows, per_facet = [], {}
    for system, labels in ((OURS_SPLITTER, predicted), (BASELINE_SPLITTER, lexical)):
        for objective_to in facets.OBJECTIVE_TARGETS:
            scores = facets.facet_scores(labels, test_labels, objective_to)
            rows.append({"system": system, "objective →": objective_to, "facet agreement": scores["agreement"],
                         "5-label accuracy": scores["accuracy_5"], "sentences scored": scores["sentences_scored"],
                         **{f"F1 {f}": scores["per_facet"][f]["f1"] for f in FACETS}})
            per_facet[(system, objective_to)] = scores["per_facet"]
    table = pd.DataFrame(rows).set_index(["system", "objective →"])
    return SplitterScores(table, pd.DataFrame(per_facet[(OURS_SPLITTER, "method")]).T,
                          table.loc[(OURS_SPLITTER, "method"), "facet agreement"],
                          table.xs(BASELINE_SPLITTER)["facet agreement"].max())


def check_splitter(inputs, scores: SplitterScores) -> None:
    """The splitter's claim. On the released CSAbstruct test (1,133 background/method/result sentences) the
    classifier reaches :data:`SPLITTER_AGREEMENT_TARGET` and beats the baseline by :data:`SPLITTER_BASELINE_MARGIN`
    (tests/test_flew.py trains it and checks the same). On a replica or a dry-run fixture (templated abstracts)
    both are near perfect and ours is no worse than the baseline (by 0.02).

    Shown in: notebooks/flew.ipynb, 1. The facet splitter, without an LLM."""
    ours, baseline = scores.ours, scores.baseline
    print(f"facet agreement: ours {ours:.3f}, lexical baseline (best mapping) {baseline:.3f}")
    if inputs.csabstruct.official:
        scored = scores.table["sentences scored"].iloc[0]
        if scored != 1133:
            raise ChapterCheckFailed(f"the released CSAbstruct test has 1,133 background/method/result sentences; "
                                     f"{scored} were scored")
        target, margin = SPLITTER_AGREEMENT_TARGET, SPLITTER_BASELINE_MARGIN
        if not (ours >= target and ours > baseline + margin):
            raise ChapterCheckFailed(f"splitter agreement {ours:.3f}: need ≥ {target} and > the baseline "
                                     f"{baseline:.3f} + {margin}")
        print(f"check: agreement {ours:.3f} ≥ the target {target} and > the baseline + {margin}")
    elif not (ours >= 0.9 and ours >= baseline - 0.02):
        raise ChapterCheckFailed(f"splitter agreement {ours:.3f} on templated abstracts ({inputs.csabstruct.kind}): "
                                 f"need ≥ 0.9 and no worse than the baseline {baseline:.3f} - 0.02")


@dataclass
class CSFCubeAgreement:
    """The classifier against CSFCube's sentence labels, and CSFCube's papers (read once)."""

    table: pd.DataFrame
    papers: dict

    @property
    def abstracts(self) -> int:
        return len(self.papers)


def csfcube_agreement(inputs, split: FacetSplitter) -> CSFCubeAgreement:
    """Agreement of the classifier with the facet labels of every CSFCube abstract sentence (CSFCube's own
    *predicted* labels, so this is agreement between two classifiers, not accuracy); above 0.6 with either
    reading of ``objective``, else the splitter or the reader is broken.

    Shown in: notebooks/flew.ipynb, 1. The facet splitter, without an LLM."""
    from sdr.evaluate import csfcube

    papers = csfcube.read_csfcube_papers(inputs.csfcube.path)
    abstracts = [p.metadata["abstract_sentences"] for p in papers.values()]
    labels = [p.metadata["abstract_labels"] for p in papers.values()]
    predicted = split.classifier.predict(abstracts)
    table = pd.DataFrame([
        {"objective →": o, **{k: v for k, v in facets.facet_scores(predicted, labels, o).items() if k != "per_facet"}}
        for o in facets.OBJECTIVE_TARGETS]).set_index("objective →")
    if not table["agreement"].min() > 0.6:
        raise ChapterCheckFailed(f"the splitter agrees with CSFCube's sentence labels on at most "
                                 f"{table['agreement'].min():.3f} of them (need > 0.6):\n{table}")
    return CSFCubeAgreement(table, papers)


def split_example(split: FacetSplitter, papers: Mapping) -> pd.DataFrame:
    """The first paper's abstract (by id) cut into its facets; the text is kept verbatim, so every sentence lands
    in exactly one facet, unchanged (checked).

    Shown in: notebooks/flew.ipynb, 1. The facet splitter, without an LLM."""
    example = papers[sorted(papers)[0]]
    parts = split.splitter.split(example.abstract)
    for sentence in split.splitter.segmenter.split(example.abstract):
        found = [f for f in FACETS if sentence in parts[f]]
        if len(found) != 1:
            raise ChapterCheckFailed(f"{example.paper_id}: the sentence {sentence!r} is in facets {found}, "
                                     "expected exactly one")
    return pd.DataFrame({"facet": list(parts), "text": list(parts.values())}).set_index("facet")


# ------------------------------------------------------------------------------------------------- 2. structure
@dataclass
class FacetGraph:
    """The citation graph read from the Semantic Scholar pages, its papers, the reader's report and the table of
    the facet subgraphs."""

    graph: object
    papers: dict
    report: dict
    table: pd.DataFrame

    def edge_weights(self) -> pd.DataFrame:
        """One row per edge of each facet subgraph with its weight |C_x(e)|."""
        return pd.DataFrame([{"facet": f, "weight (contexts)": int(w)} for f in FACETS
                             for _, _, w in facet_edges(self.graph, f)])


def facet_subgraphs(inputs) -> FacetGraph:
    """Read the Semantic Scholar pages (:func:`sdr.corpus.read_s2_citations`) and build G_bg, G_mt, G_rs; eq. 3 is
    checked on every edge (its weight is the number of its contexts with that intent, at least one).

    Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs from the citation graph."""
    from sdr.corpus import read_s2_citations

    graph, papers, report = read_s2_citations(inputs.citations.path)
    for facet in FACETS:
        for citing, cited, weight in facet_edges(graph, facet):
            count = graph.edge(citing, cited).count(facet)
            if not weight == count >= 1:
                raise ChapterCheckFailed(f"{citing} → {cited}: {facet} weight {weight}, but {count} contexts with "
                                         "that intent (eq. 3)")
    return FacetGraph(graph, papers, report, subgraph_table(graph))


@dataclass
class QueryList:
    """FLeW's one query list (§4.1): the released list, its queries found in the fetched graph, and the seeded
    split into the queries trained on and those held out for the quality check."""

    ids: list[str]
    found: list[str]
    train: list[str]
    heldout: list[str]
    released_table: pd.DataFrame

    def describe(self) -> str:
        return (f"{len(self.ids):,} queries in the released list, {len(self.found):,} of them found in the fetched "
                f"graph ({len(self.ids) - len(self.found):,} unknown to Semantic Scholar or not fetched)")


def shared_query_list(run, inputs) -> QueryList:
    """The query list read from the three released triplet files (:func:`query_list`), mapped to the fetched papers
    (``papers.jsonl`` keeps each record's ``CorpusId``), shuffled with the seed: ``max_queries`` of it are trained
    on (0: all), the rest held out.

    Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs from the citation graph."""
    p = run.p
    released = {f: read_released_triplets(inputs.triplets.file(f"{f}_training_triplet.csv")) for f in FACETS}
    ids, table = query_list(released)
    paper_of = corpus_id_map(inputs.citations.path)
    found = [paper_of[q] for q in ids if q in paper_of]
    order = [found[i] for i in np.random.default_rng(p.seed).permutation(len(found))]
    train = order[:p.max_queries] if p.max_queries else order
    if len(train) == len(order):
        run.branch("every query of the list trained (nothing held out)")
    return QueryList(ids, found, train, order[len(train):], table)


@dataclass
class Sampling:
    """Each facet subgraph's PBG embedding, the bands, the facet triplets of the training queries, and the table of
    link prediction and coverage per facet."""

    config: object
    nodes: list[str]
    embeddings: dict
    bands: object
    triplets: dict
    table: pd.DataFrame

    def shared_pairs(self) -> dict[str, int]:
        """(query, positive) pairs two facets share."""
        pairs = {f: {(t.query, t.positive) for t in self.triplets[f]} for f in FACETS}
        return {f"{a}/{b}": len(pairs[a] & pairs[b])
                for a, b in (("background", "method"), ("background", "result"), ("method", "result"))}


def structural_sampling(run, graph: FacetGraph, queries: QueryList) -> Sampling:
    """Embed each facet subgraph with PyTorch-BigGraph (an edge of weight w written w times) and sample SciNCL band
    triplets in each embedding for the training queries (:data:`FLEW_BANDS`, k's scaled to the corpus). Checked:
    every positive and negative lies in its band, and every query that got triplets got :data:`TRIPLETS_PER_QUERY`
    triplets with as many distinct positives (:func:`expect_triplets_per_query`).

    Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs from the citation graph."""
    from sdr import graph as graph_module
    from sdr.methods import scincl

    p = run.p
    config = graph_module.GraphEmbeddingConfig(dimension=p.graph_dimension, epochs=p.graph_epochs,
                                               test_fraction=p.graph_test_fraction, seed=p.seed)
    nodes = sorted(graph.graph.nodes)
    embeddings = embed_facet_subgraphs(graph.graph, config, nodes=nodes)
    bands = scincl.scaled_bands(len(nodes), bands=FLEW_BANDS)
    print("bands:", bands.describe())
    if bands == FLEW_BANDS:
        run.branch("FLeW bands unscaled (k⁻hard 4000)")
    sampled, coverage = facet_triplets(embeddings, graph.graph, bands, queries=queries.train, seed=p.seed)
    triplets, rows = {}, []
    for facet in FACETS:
        triplets[facet] = sampled[facet][0]
        ranks = scincl.band_ranks(triplets[facet], embeddings[facet], bands)
        if not (ranks["positive_in_band"].all() and ranks["negative_in_band"].all()):
            raise ChapterCheckFailed(f"{facet}: {int((~ranks['positive_in_band']).sum())} positives and "
                                     f"{int((~ranks['negative_in_band']).sum())} negatives outside their bands")
        expect_triplets_per_query(triplets[facet], facet)
        rows.append({"facet": facet, **embeddings[facet].link_prediction,
                     "repeated training edges": embeddings[facet].report.train_edges})
    return Sampling(config, nodes, embeddings, bands, triplets, pd.DataFrame(rows).set_index("facet").join(coverage))


def expect_link_prediction(sampling: Sampling, min_auc: float = LINK_PREDICTION_MIN_AUC) -> None:
    """The claim of the subgraph embeddings: link prediction on each subgraph's held-out edges beats chance (AUC
    50) by the margin of ``min_auc``. Also prints the (query, positive) pairs the facets share.

    Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs from the citation graph."""
    auc = sampling.table["AUC"]
    print("link-prediction AUC per subgraph:", auc.round(1).to_dict())
    if not (auc > min_auc).all():
        raise ChapterCheckFailed(f"link prediction on held-out edges: AUC {auc.round(1).to_dict()}, need > {min_auc} "
                                 "for every facet subgraph")
    print("(query, positive) pairs shared between facets:", sampling.shared_pairs())


# ------------------------------------------------------------------------------------------------- 3. training
@dataclass
class FacetTraining:
    """The chapter's training: the papers cut by facet, every run's (triplets, papers), their fits by page name,
    the weighted sums of their facet encoders, and how to train one more (another seed of a facet encoder, the
    published recipe's encoders)."""

    run: object
    key: dict
    config: object
    split_papers: dict
    runs: dict
    fits: dict = field(default_factory=dict)
    sums: dict = field(default_factory=dict)  # a tuned sum's name → {facet: the run it sums}

    def fit(self, name: str, seed: int, data: Sequence[str] = ()) -> Fit:
        """A fresh base encoder trained on the triplets of run ``name`` with the training seed ``seed`` (the data
        stay fixed), checkpointed in ``<run folder of seed>/<name as a slug>``; ``data``: the source lines of inputs
        the run reads beyond the chapter's (they key its folder too)."""
        from sdr.methods.specter import train_on_triplets

        triplets, papers = self.runs[name]
        encoder = _encoder(self.run)
        folder = book.run_dir("flew", self.run.profile, {**self.key, "seed": seed,
                                                         **({"more data": list(data)} if data else {})})
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        result, stats = train_on_triplets(encoder, triplets, papers, dataclasses.replace(self.config, seed=seed),
                                          output_dir=folder / slug, resume=self.run.p.resume)
        return Fit(name, encoder, result, stats["loss before training"], stats["loss after training"],
                   stats["triplets"])

    @property
    def budget(self) -> dict[str, str]:
        """The training budget of each leaderboard row (the facet encoders and their sum)."""
        p = self.run.p
        steps = {name: self.fits[name].steps for name in FACET_ENCODERS.values()}
        per_step = p.batch_size * p.accumulation_steps
        return {**{name: f"{p.epochs} epoch, {steps[name]} steps × {per_step} triplets" for name in steps},
                SUM_NAME: f"3 encoders, {p.epochs} epoch, {sum(steps.values())} steps × {per_step} triplets in all"}


def train_facet_encoders(run, inputs, graph: FacetGraph, queries: QueryList, sampling: Sampling,
                         split: FacetSplitter) -> FacetTraining:
    """Cut the triplets' abstracts by facet (:func:`facet_papers`; a paper without a sentence of the facet keeps its
    title alone), then train one fresh encoder per facet on its own triplets with ``title [SEP] abstract[x]``
    (SPECTER's objective: triplet loss, L2, margin 1), and the runs of the ablations asked for (:data:`ABLATIONS`,
    when the ``ablations`` part runs). Every run is in the cost plan the chapter printed before its first step
    (``run.show_plan()``).

    Shown in: notebooks/flew.ipynb, 3. Three facet encoders."""
    from sdr.train import TrainConfig

    p = run.p
    if p.leaderboard_seeds > 1 and not p.csfcube_eval:
        raise ValueError(f"leaderboard_seeds = {p.leaderboard_seeds} needs csfcube_eval: FLeW's leaderboard rows are "
                         "CSFCube's")
    ablations = chosen_ablations(p.ablations) if p.ablations and run.runs_part("ablations") else {}
    needed = sorted({pid for triplets in sampling.triplets.values() for t in triplets
                     for pid in (t.query, t.positive, t.negative)})
    split_papers, report = facet_papers(graph.papers, split.splitter, ids=needed)
    print(report, "| papers without an abstract:", sum(not graph.papers[pid].abstract for pid in needed))
    config = TrainConfig(epochs=p.epochs, batch_size=p.batch_size, accumulation_steps=p.accumulation_steps,
                         learning_rate=p.learning_rate, seed=p.seed, progress=False,
                         checkpoint_every=p.checkpoint_every)
    key = {**{name: getattr(p, name) for name in TRAINING_PARAMETERS},
           "data": [inputs.citations.source, inputs.triplets.source], "splitter": inputs.csabstruct.source}
    runs = {FACET_ENCODERS[f]: (sampling.triplets[f], split_papers[f]) for f in FACETS}
    for ablation in ablations.values():
        runs.update(ablation.encoders(graph, queries, sampling, p.seed))
    training = FacetTraining(run, key, config, split_papers, runs, sums={SUM_NAME: dict(FACET_ENCODERS)})
    for ablation in ablations.values():
        if ablation.weighted_sum:
            training.sums[ablation.weighted_sum] = dict(ablation.members)
    for name in runs:
        training.fits[name] = training.fit(name, p.seed)
    if set(ablations) == set(ABLATIONS):
        run.branch("ablations trained (w/o textual, w/o structural)")
    print("device plan:", training.fits[FACET_ENCODERS["background"]].encoder.plan.describe())
    return training


def expect_trained(run, training: FacetTraining, names: Sequence[str] | None = None) -> pd.DataFrame:
    """The claim of section 3's training: every run of the book's recipe (the facet encoders, the ablations'; or
    the runs ``names``) lowered its triplet loss on a fixed probe subset by more than ``loss_margin``, a value above
    the spread of that loss drop over training seeds (profiles.yml gives the measurement); returns the losses.

    In the paper dry run the encoders are tiny random stand-ins trained for a few dozen steps at the paper's learning
    rate, which moves their probe loss by about 1e-5 (measured: 0.99943 -> 0.99942 in 24 steps, 0.99951 -> 0.99949
    in 200): a drop cannot be told from noise there, so the check asserts what such a run can show, that training
    changed every encoder's probe loss (its weights moved), and says so.

    Shown in: notebooks/flew.ipynb, 3. Three facet encoders."""
    from sdr import datasets

    fits = [training.fits[name] for name in (names if names is not None else training.fits)]
    if not datasets.dry_run():
        return run.expect_lower_loss(fits, margin=run.p.loss_margin)
    unmoved = [f"{fit.name} ({fit.loss_before:.6f})" for fit in fits if not fit.loss_after != fit.loss_before]
    if unmoved:
        raise ChapterCheckFailed(f"training left the probe loss of {unmoved} unchanged: its weights did not move")
    print("paper dry run: the loss-drop check is exercised on random stand-ins, whose loss barely moves at the paper's "
          "learning rate; checked instead: every run changed its probe loss")
    return pd.DataFrame({fit.name: fit.losses() for fit in fits}).T


def heldout_scores(run, graph: FacetGraph, queries: QueryList, sampling: Sampling,
                   training: FacetTraining) -> pd.DataFrame:
    """The held-out queries' facet triplets, sampled the same way from the same embeddings (seed + 1), ordered by
    each facet encoder and by the untrained encoder reading whole abstracts (as at inference): triplet loss
    (eq. 5, margin 1), its gain, and the share with the positive nearer. Empty when nothing is held out.

    Shown in: notebooks/flew.ipynb, 3. Three facet encoders."""
    p = run.p
    sampled, _ = facet_triplets(sampling.embeddings, graph.graph, sampling.bands, queries=queries.heldout,
                                seed=p.seed + 1)
    heldout = {facet: sampled[facet][0] for facet in FACETS}
    if not all(heldout.values()):
        print("every query of the list is trained on (max_queries = 0 or the whole list): nothing is held out here")
        return pd.DataFrame()
    ids = sorted({pid for triplets in heldout.values() for t in triplets for pid in (t.query, t.positive, t.negative)})

    def vectors(encoder):
        return dict(zip(ids, encoder.encode_papers([graph.papers[pid] for pid in ids], batch_size=64, progress=False)))

    untrained = vectors(_encoder(run))
    rows = []
    for facet, name in FACET_ENCODERS.items():
        before = heldout_triplet_scores(untrained, heldout[facet])
        after = heldout_triplet_scores(vectors(training.fits[name].encoder), heldout[facet])
        rows.append({"encoder": name, "held-out queries": len({t.query for t in heldout[facet]}),
                     "triplets": after["triplets"], "loss, untrained": before["triplet loss"],
                     "loss, trained": after["triplet loss"], "loss gain": before["triplet loss"] - after["triplet loss"],
                     "ordered, untrained": before["ordered correctly"], "ordered, trained": after["ordered correctly"]})
    return pd.DataFrame(rows).set_index("encoder")


def expect_heldout_gain(run, heldout: pd.DataFrame) -> bool:
    """The quality check of section 3 (when ``gain_margin`` is set): every facet encoder lowers the held-out triplet
    loss, and the best one by more than ``gain_margin``, the largest seed spread measured for these settings
    (profiles.yml says how). Returns whether the check ran.

    Shown in: notebooks/flew.ipynb, 3. Three facet encoders."""
    margin = run.p.gain_margin
    if heldout.empty:
        if margin:
            raise ChapterCheckFailed("gain_margin is set but no query of the list is held out (max_queries covers it "
                                     "all)")
        return False
    if not margin:
        print("quality check off (gain_margin = 0)")
        return False
    gains = heldout["loss gain"]
    if not ((gains > 0).all() and gains.max() > margin):
        raise ChapterCheckFailed(f"held-out triplet loss gains {gains.round(4).to_dict()}: need every gain > 0 and "
                                 f"the largest > the margin {margin}")
    print(f"quality check: every loss gain > 0, the largest ({gains.idxmax()}) > the margin {margin}")
    return True
