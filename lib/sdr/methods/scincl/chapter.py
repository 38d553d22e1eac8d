"""The steps of the SciNCL chapter, one call each. SciNCL shares SPECTER's data, objective, evaluations and
leaderboard rows, so the chapter calls :mod:`sdr.methods.specter.chapter` for those; the steps here are SciNCL's
own: the citation graph inside the training triplets, its BigGraph embedding (or, with ``graph_embedding``, a given
embedding of S2ORC's citation graph read for the training papers), the two training sets sampled on it,
the collision sweep, training, the pairing with the paper's rows (one rule) and the record. Table 2's ablations
and Figs. 2-3's sweeps are in :mod:`.ablations`.

Each step takes the chapter's :class:`sdr.book.ChapterRun` (its parameters are ``run.p``) and returns what the page
shows; the checks of invariants live here and raise :class:`sdr.book.ChapterCheckFailed` with a clear message, and
the page keeps one line per claim. Shown in: notebooks/scincl.ipynb.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed, Fit
from sdr.methods import specter
from sdr.methods.scincl.paper import GRAPH_SOURCES, graph_route
from sdr.methods.scincl.recipe import (PAPER_BANDS, Bands, bands_table, band_searches, clip_bands, collision_grid,
                                       collision_sweep, query_papers, sample_triplets, scaled_bands, share_of_queries,
                                       sweep_points, with_task_averages)
from sdr.samplers import band_check, count_collisions, specter_triplets
from sdr.train import TrainConfig

__all__ = ["TRAINING_PARAMETERS", "TripletGraph", "triplet_graph", "CitationEmbedding", "embed_graph",
           "given_embedding", "given_rows", "given_graph", "paper_inputs", "s2orc_embedding",
           "S2ORC_GRAPH", "MIN_GIVEN_SHARE", "TrainingSets", "training_sets", "BandCheck", "table4_view",
           "graph_statement", "Collisions", "collision_table", "fig5_shape",
           "released_models", "train_main_models", "Gains", "gains", "csfcube_table", "released_paper_models",
           "paper_models", "retrainer", "paper_pairs", "main_queries_words", "bands_words", "WOL_PAPER_ROW",
           "TABLE1_MODELS", "store", "findings"]

#: The parameters that change SciNCL's training (graph, bands, sampling, optimiser, ablation sizes): they key the
#: chapter's run folder (``book.run_dir``), with the training data's source line (:func:`train_main_models`).
TRAINING_PARAMETERS = ("model_name", "model_layers", "seed", "n_papers", "eval_fraction", "graph_dimension",
                       "graph_comparator", "graph_epochs", "graph_test_fraction", "graph_undirected",
                       "index_every_paper", "k_pos", "k_hard",
                       "max_queries", "max_length", "epochs", "batch_size", "accumulation_steps", "learning_rate",
                       "schedule", "table2_k_hard_shares", "data_fractions", "bitfit_learning_rate", "sweep_fraction",
                       "sweep_epochs")
#: SciNCL Table 1's rows set above ours (SciBERT on the released SciDocs; w/ and w/o leakage).
TABLE1_MODELS = ("SciBERT", "SPECTER", "SciNCL", "SPECTER (random S2ORC w/o leakage)",
                 "SciNCL (random S2ORC w/o leakage)")


# ------------------------------------------------------------------------------------------------- data
@dataclass
class TripletGraph:
    """The citations inside the training triplets (SPECTER drew every positive from its query's references, so each
    (query, positive) pair is a citation), SciNCL's query papers on it, and the page's name for it."""

    citations: object
    report: dict
    query_ids: list[str]
    label: str
    query_leakage: pd.DataFrame
    paper_ids: list[str] = field(default_factory=list)  # every paper of the triplets, negatives too
    corpus_ids: dict = field(default_factory=dict)  # paper id → its S2 corpus id (None where the triplets give none)

    def describe(self) -> str:
        return (f"{self.label}: {self.report['edges']:,} citations (query → positive) from "
                f"{self.report['triplets']:,} triplets; {len(self.query_ids):,} query papers (papers with out-edges); "
                f"{self.report['papers']:,} papers.")


def triplet_graph(inputs, training: specter.TrainingSet) -> TripletGraph:
    """The citation graph of the training triplets, its query papers (:func:`sdr.methods.scincl.query_papers`: the
    papers with out-edges, as SciNCL kept SPECTER's queries) and their SciDocs leakage audit; named "SPECTER's
    triplet graph" on the released triplets, "the replica triplets' graph" on the replica.

    Shown in: notebooks/scincl.ipynb, Data."""
    from sdr.graph import citation_graph_from_triplets

    citations, _, report = citation_graph_from_triplets(training.training.paper_triplets)
    query_ids = query_papers(citations)
    label = "SPECTER's triplet graph" if inputs.triplets.real else "the replica triplets' graph"
    query_leakage = specter.scidocs_leakage({q: training.papers[q] for q in query_ids}, inputs.scidocs.path)
    corpus_ids = {pid: paper.metadata.get("corpus_id") for pid, paper in training.papers.items()}
    return TripletGraph(citations, report, query_ids, label, query_leakage, sorted(training.papers), corpus_ids)


# ------------------------------------------------------------------------------------------------- the graph embedding
#: The graph SciNCL's rows were sampled on, in the words of the paper's rows (sdr.methods.specter.PAPER_ROWS).
S2ORC_GRAPH = "S2ORC's citation graph"


@dataclass
class CitationEmbedding:
    """The BigGraph embedding the bands are sampled on, its settings, its link prediction beside Table 5, and the
    graph it embeds: ``graph_label`` for the page, ``source`` in the words of the paper's rows (the pairing rule
    reads it: :data:`S2ORC_GRAPH` only for a given embedding of S2ORC's graph)."""

    embedding: object
    config: object
    link_table: pd.DataFrame
    checks: list[str]
    graph_label: str = ""
    source: str = ""
    given: bool = False
    graph_size: dict = field(default_factory=dict)  # a given embedding's graph: its nodes (and edges, if recorded)

    def describe(self) -> str:
        if self.given:  # nothing was embedded here: what was read and found
            return "\n".join(self.checks)
        return "\n".join([str(self.embedding.report), *self.checks])

    def query_ids(self, graph: TripletGraph) -> list[str]:
        """The graph's query papers that have a vector (all of them, but for a given embedding that lacks some)."""
        if not self.given:
            return graph.query_ids
        have = set(self.embedding.ids)
        return [q for q in graph.query_ids if q in have]


def graph_config(p):
    """SciNCL A.5's BigGraph settings with the profile's dimension, comparator, epochs and held-out share."""
    from sdr.graph import GraphEmbeddingConfig

    return GraphEmbeddingConfig(dimension=p.graph_dimension, comparator=p.graph_comparator, epochs=p.graph_epochs,
                                test_fraction=p.graph_test_fraction, undirected=p.graph_undirected, seed=p.seed)


def embed_graph(run, inputs, graph: TripletGraph) -> CitationEmbedding:
    """Embed the triplet graph with PyTorch-BigGraph (:func:`sdr.graph.embed`) and score link prediction on the
    held-out edges (Table 5's protocol), our row under the paper's. With ``index_every_paper`` (the paper profile)
    every paper of the triplets is a node, so the FAISS index holds every training paper as SciNCL's did (A.4); the
    papers that occur only as negatives have no edge here and keep BigGraph's random initial vectors. On the replica, whose planted communities are
    known, the embedding must be informative: link prediction beats chance (AUC 50) by far (AUC above 70), and a
    paper's 10 nearest neighbours share its community more than three times as often as chance.

    With ``graph_embedding`` set, the embedding is read from that file instead (:func:`given_embedding`).

    Shown in: notebooks/scincl.ipynb, The citation-graph embedding."""
    from sdr.graph import LINK_PREDICTION_METRICS, embed

    p = run.p
    route = graph_route(p)
    if route == "given":
        return given_embedding(run, graph, p.graph_embedding)
    if route == "s2orc":
        return s2orc_embedding(run, graph)
    config = graph_config(p)
    nodes = graph.paper_ids if p.index_every_paper else None
    embedding = embed(graph.citations, config, nodes=nodes)
    if nodes:
        run.branch("every training paper indexed")
    ours = pd.DataFrame([{"model": f"BigGraph {p.graph_dimension} {p.graph_comparator.capitalize()}.",
                          "dimension": p.graph_dimension, "comparator": p.graph_comparator,
                          **embedding.link_prediction}])
    paper = book.read_paper_table("scincl_table5")
    link_table = pd.concat([paper.assign(**{"reported by": "SciNCL Table 5 (S2ORC, 52 M nodes)"}),
                            ours.assign(**{"reported by": f"this book ({run.profile}, {graph.label})"})],
                           ignore_index=True)
    link_table = link_table[["reported by", "model", "dimension", "comparator", *LINK_PREDICTION_METRICS]]
    if not set(paper["model"]) <= set(link_table["model"]):
        raise ChapterCheckFailed(f"Table 5's rows {sorted(paper['model'])} are not all on the page")
    checks = [] if inputs.triplets.real else _planted_community_checks(inputs.synthetic().corpus, embedding)
    return CitationEmbedding(embedding, config, link_table, checks, graph.label, graph.label)


def paper_inputs(graph_source: str, graph_embedding: str = "") -> tuple[str, ...]:
    """The datasets the chapter reads at ``paper`` (``ChapterRun(needs=...)``, checked before anything trains):
    ``sdr.datasets.CHAPTER_DATA["scincl"]``, which holds ``s2orc_citation_graph`` for the default ``graph_source``
    "s2orc"; without it when the graph is the triplets' or a ``graph_embedding`` is given (nothing to embed here)."""
    from sdr.datasets import CHAPTER_DATA
    from sdr.graph import S2ORC_GRAPH_DATASET

    if graph_source not in GRAPH_SOURCES:
        raise ValueError(f"graph_source {graph_source!r}; expected one of {', '.join(sorted(GRAPH_SOURCES))}")
    declared = CHAPTER_DATA["scincl"]
    if graph_source == "s2orc" and not graph_embedding:
        return declared
    return tuple(name for name in declared if name != S2ORC_GRAPH_DATASET)


def s2orc_embedding(run, graph: TripletGraph) -> CitationEmbedding:
    """SciNCL's graph embedded in the chapter (``graph_source`` "s2orc", no ``graph_embedding``: the ``paper``
    profile): the ``s2orc_citation_graph`` fetch's edges (checked before training, :func:`paper_inputs`) embedded
    with the scalable path (:func:`sdr.graph.embed_edge_files`: partitioned by the memory budget, PBG's workers from
    the machine's cores) with the chapter's graph settings, into a folder of the results store keyed by those
    settings and the fetch's completion record (a rerun, or another part, finds it: the S2ORC graph takes hours),
    then read exactly as a given embedding (:func:`given_embedding`), ``embedding.json`` naming the dataset.

    Shown in: notebooks/scincl.ipynb, The citation-graph embedding."""
    import shutil
    from dataclasses import asdict

    from sdr.fetchers.completion import fetch_state
    from sdr.graph import EMBEDDING_INFO, S2ORC_GRAPH_DATASET, embed_edge_files

    fetch = run.data.input(S2ORC_GRAPH_DATASET, role="training").path
    config = graph_config(run.p)
    record = fetch_state(fetch).record
    key = {"graph": asdict(config), "edges": S2ORC_GRAPH_DATASET, "fetched": record.get("completed"),
           "counts": record.get("counts")}
    folder = book.run_dir("scincl-s2orc-graph", run.profile, key) / "embedding"
    if not (folder / EMBEDDING_INFO).is_file():  # embedding.json is written last: a folder without it is unfinished
        partial = folder.with_name("embedding.partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
        result = embed_edge_files([fetch / "edges"], config, work_dir=partial, verbose=True)
        partial.rename(folder)
        print(f"embedded {S2ORC_GRAPH_DATASET} ({fetch}): {result.report}")
    else:
        print(f"{folder}: the {S2ORC_GRAPH_DATASET} embedding of an earlier run with these settings, read again")
    run.branch("S2ORC citation graph embedded in the chapter")
    return given_embedding(run, graph, str(folder), how="embedded in the chapter")


#: The share of the training papers a given graph embedding must hold (fewer: the file is of another graph).
MIN_GIVEN_SHARE = 0.5


def given_embedding(run, graph: TripletGraph, path: str, how: str = "given embedding") -> CitationEmbedding:
    """SciNCL's graph at ``paper`` (§3.4, A.4: the S2ORC citation graph, Table 4's 52.5 M nodes), embedded beforehand
    (``sdr graph embed`` on the ``s2orc_citation_graph`` edges) and given as ``graph_embedding``: read with
    :func:`sdr.graph.read_given_embedding` (keyed by S2 corpus ids), restricted to the training papers through their
    ``corpus_id``, and returned over the chapter's own paper ids, so the kNN bands are searched over the training
    papers as SciNCL's FAISS index was (A.4). Fewer than :data:`MIN_GIVEN_SHARE` of the training papers found is a
    :class:`ChapterCheckFailed` (a file of another graph). Link prediction is the one ``sdr graph embed`` recorded
    beside the vectors (``embedding.json``), else not scored, with the reason on the page.

    The rows are SciNCL's graph (``source`` :data:`S2ORC_GRAPH`, paired with the paper's) only when
    ``embedding.json`` names the ``s2orc_citation_graph`` dataset as the edges' source (:func:`given_graph`); any
    other given embedding (no recorded source, other edge files) is trained on all the same, and its rows stand
    apart with that reason. ``graph_size`` holds the recorded graph (release, node set, nodes, edges) for Table 4.

    Shown in: notebooks/scincl.ipynb, The citation-graph embedding."""
    from sdr.graph import LINK_PREDICTION_METRICS, describe_source

    def described(found: int, total: int, given) -> str:
        return (f"{found:,} of the {total:,} training papers found in the given embedding ({len(given.corpus_ids):,} "
                f"nodes, dimension {given.dimension}); the other {total - found:,} are not in the FAISS index")

    embedding, given, line = given_rows(run, path, {pid: graph.corpus_ids.get(pid) for pid in graph.paper_ids},
                                        described)
    found, config, link = len(embedding.ids), embedding.config, given.link_prediction
    source, problem = given_graph(given)
    if problem is None:
        run.branch("S2ORC graph embedding read")
        label = f"the S2ORC citation graph ({how}: {path})"
    else:
        run.branch("given embedding of another graph read")
        label = f"a given graph embedding ({path}), not the S2ORC citation graph dataset"
    paper = book.read_paper_table("scincl_table5").assign(**{"reported by": "SciNCL Table 5 (S2ORC, 52 M nodes)"})
    if link:
        ours = pd.DataFrame([{"model": f"BigGraph {given.dimension} {config.comparator.capitalize()}.",
                              "dimension": given.dimension, "comparator": config.comparator, **link,
                              "reported by": f"sdr graph embed ({label})"}])
        paper = pd.concat([paper, ours], ignore_index=True)
        reason = "link prediction: the held-out edges' scores recorded by `sdr graph embed` (embedding.json)"
    else:
        reason = (f"link prediction not scored: {path} records no held-out edges (only `sdr graph embed --work-dir` "
                  "writes them, in embedding.json)")
    link_table = paper[["reported by", "model", "dimension", "comparator", *LINK_PREDICTION_METRICS]]
    run.glue("given_found", f"{found:,}")
    recorded = (given.info.get("source") or {}) if isinstance(given.info.get("source"), dict) else {}
    size = {"nodes": len(given.corpus_ids), "edges": (given.info.get("report") or {}).get("distinct_edges"),
            **{key: recorded.get(key) for key in ("dataset", "release", "node_set") if recorded.get(key)}}
    pairing = (f"{describe_source(given.info)}; S2ORC's graph: its SciNCL rows may pair with SciNCL's (the pairing "
               "rule's model and protocol permitting)" if problem is None else
               f"{describe_source(given.info)}; its rows stand apart from SciNCL's: {problem}")
    return CitationEmbedding(embedding, config, link_table, [line, reason, pairing], label, source, given=True,
                             graph_size=size)


def given_graph(given) -> tuple[str, str | None]:
    """The graph a given embedding embeds, in the words of the paper's rows, and why it is not SciNCL's: ``(
    S2ORC_GRAPH, None)`` when its ``embedding.json`` names the ``s2orc_citation_graph`` dataset
    (:func:`sdr.graph.s2orc_graph_problem`), else ``("another graph (given embedding): <reason>", reason)`` — the
    pairing rule then shows the rows apart with that reason. The main and the w/o-leakage parts read it."""
    from sdr.graph import s2orc_graph_problem

    problem = s2orc_graph_problem(given.info)
    if problem is None:
        return S2ORC_GRAPH, None
    return f"another graph (given embedding): {problem}", problem


def given_rows(run, path: str, corpus_id_of: Mapping[str, str | int | None], described):
    """The rows of a given graph embedding (``graph_embedding``, :func:`sdr.graph.read_given_embedding`) for the
    papers ``corpus_id_of`` maps to corpus ids, as a :class:`sdr.graph.GraphEmbedding` over their own ids: the FAISS
    index holds the papers found. A comparator other than ``graph_comparator`` (the bands' metric) and fewer than
    :data:`MIN_GIVEN_SHARE` of the papers found (a file of another graph) are :class:`ChapterCheckFailed`.
    ``described(found, total, given)`` words the count. Returns ``(embedding, given, that line)``; the main part
    (:func:`given_embedding`) and the w/o-leakage part read through it, and name its graph with :func:`given_graph`."""
    from sdr.graph import GraphEmbedding, read_given_embedding
    from sdr.graph.pbg import EmbeddingReport

    p = run.p
    given = read_given_embedding(path, dimension=p.graph_dimension)
    if given.comparator is not None and given.comparator != p.graph_comparator:
        raise ChapterCheckFailed(f"{path}: embedded with the {given.comparator!r} comparator; graph_comparator is "
                                 f"{p.graph_comparator!r} (the bands' metric follows it): set it to "
                                 f"{given.comparator!r}")
    restricted = given.restrict(corpus_id_of)
    found, total = len(restricted.ids), len(corpus_id_of)
    line = described(found, total, given)
    if found < MIN_GIVEN_SHARE * total:
        raise ChapterCheckFailed(f"{path}: {line}: need at least {MIN_GIVEN_SHARE:.0%} of them (is it an embedding of "
                                 "S2ORC's citation graph keyed by corpus ids?)")
    config = replace(graph_config(p), comparator=given.comparator or p.graph_comparator)
    embedding = GraphEmbedding(ids=restricted.ids, vectors=restricted.vectors, config=config,
                               link_prediction=given.link_prediction, report=EmbeddingReport(nodes=found))
    return embedding, given, line


def _planted_community_checks(corpus, embedding) -> list[str]:
    if not embedding.link_prediction["AUC"] > 70:
        raise ChapterCheckFailed(f"link prediction on the replica's graph: {embedding.link_prediction}, need an AUC "
                                 "above 70 (chance: 50)")
    neighbours, _ = embedding.neighbours(k=10)
    same_community = np.mean([[corpus.community_of(n) == corpus.community_of(q) for n in found]
                              for q, found in zip(embedding.ids, neighbours)])
    community_sizes = pd.Series([corpus.community_of(p) for p in embedding.ids]).value_counts()
    chance = float(((community_sizes / community_sizes.sum()) ** 2).sum())
    line = f"10 nearest neighbours in the same planted community: {same_community:.2f} (chance {chance:.2f})"
    if not same_community > 3 * chance:
        raise ChapterCheckFailed(f"{line}: need more than three times chance")
    return [line]


# ------------------------------------------------------------------------------------------------- sampling
@dataclass
class BandCheck:
    """The band invariants checked on the triplets of a seeded sample of query papers: each triplet's neighbour
    ranks (:func:`sdr.samplers.band_check`)."""

    ranks: pd.DataFrame
    checked: list
    queries: set

    def describe(self) -> str:
        return f"band invariants hold on {len(self.checked):,} triplets of {len(self.queries):,} query papers"

    def example(self, papers) -> pd.DataFrame:
        """One query with its positive, a hard and an easy negative, their titles and neighbour ranks."""
        ranks, first = self.ranks, self.checked[0]
        hard = next(t for t in self.checked if t.query == first.query and t.kind == "hard")
        easy = next(t for t in self.checked if t.query == first.query and t.kind == "easy")
        hard_rank = int(ranks.loc[ranks["query"].eq(hard.query) & ranks["negative"].eq(hard.negative),
                                  "negative_rank"].iloc[0])
        return pd.DataFrame({role: {"paper": pid, "title": papers[pid].title, "neighbour rank": rank}
                             for role, pid, rank in (("query", first.query, 0),
                                                     ("positive", first.positive, ranks.loc[0, "positive_rank"]),
                                                     ("hard negative", hard.negative, hard_rank),
                                                     ("easy negative", easy.negative, "beyond max(k)"))}).T


@dataclass
class TrainingSets:
    """SciNCL's triplets and SPECTER's sampling on the same graph for the same query papers (§4.2: the same number
    of triplets), the bands they were sampled with, and the searches the collision sweep shares."""

    bands: Bands
    requested: Bands
    n_nodes: int
    query_ids: list[str]
    main_queries: list[str]
    collision_queries: list[str]
    collision_settings: list[Bands]
    searches: dict
    triplets: list
    report: object
    specter_triplets: list
    specter_report: object
    names: dict[str, str]
    graph_label: str  # the graph SciNCL's bands were searched on
    band_check: BandCheck | None = None
    specter_graph_label: str = ""  # the graph SPECTER's sampling drew from (the triplet graph's citations)
    graph_size: dict = field(default_factory=dict)  # a given embedding's graph (CitationEmbedding.graph_size)

    @property
    def filled(self) -> int:
        """SPECTER's hard negatives filled with easy ones (the query had too few references of references)."""
        return int(self.specter_report.hard_short)

    @property
    def runs(self) -> dict[str, tuple[str, list]]:
        """Page name → (run folder, triplets) of the two main runs."""
        return {self.names["SciNCL"]: ("SciNCL", self.triplets),
                self.names["SPECTER sampling"]: ("SPECTER_sampling", self.specter_triplets)}

    def describe(self) -> str:
        hard_wanted = specter.HARD_PER_QUERY * self.specter_report.queries_used
        lines = [self.bands.describe() + ("" if self.bands == self.requested else
                                          f" (asked for {self.requested.describe()}; the graph has {self.n_nodes:,} "
                                          "papers)"),
                 f"SPECTER sampling on {self.specter_graph_label or self.graph_label}: {self.filled:,} of the "
                 f"{hard_wanted:,} hard negatives it "
                 f"should draw were filled with easy ones ({self.specter_report.hard_short_queries:,} queries had too "
                 "few references of references)."]
        return "\n".join(lines + [f"SciNCL sampling: {warning}" for warning in self.report.warnings])

    def bands_table(self, profile: str) -> pd.DataFrame:
        return bands_table({"paper (SciNCL §5)": PAPER_BANDS, f"this run ({profile})": self.bands})

    def sampling_table(self) -> pd.DataFrame:
        """Both samplers' queries, triplets, hard and easy negatives, filled hard negatives and collisions."""
        def row(name, report, triplets):
            return {"sampler": self.names[name], "queries used": report.queries_used,
                    "queries skipped": report.queries_skipped, "triplets": len(triplets),
                    "hard negatives": report.hard_negatives, "easy negatives": report.easy_negatives,
                    "hard negatives filled with easy ones": report.hard_short, "collisions": count_collisions(triplets)}

        return pd.DataFrame([row("SciNCL", self.report, self.triplets),
                             row("SPECTER sampling", self.specter_report, self.specter_triplets)]).set_index("sampler")

    def describe_training(self, p) -> str:
        return (f"{len(self.main_queries):,} query papers, {len(self.triplets):,} triplets a model; inputs cut at "
                f"{p.max_length} tokens; {p.epochs} epoch(s) of {p.batch_size * p.accumulation_steps}-triplet steps, "
                f"{p.schedule} schedule; base encoder {p.model_name}"
                f"{f' (first {p.model_layers} layers)' if p.model_layers else ''}.")


def training_sets(run, training: specter.TrainingSet, graph: TripletGraph,
                  embedded: CitationEmbedding) -> TrainingSets:
    """SciNCL's kNN bands (the profile's k⁺ and k⁻hard, else :func:`sdr.methods.scincl.scaled_bands`, clipped to the
    graph) and SPECTER's rule sampled on the same graph for the same ``max_queries`` query papers; one blocked
    search serves the main sampling and Fig. 5's k⁻hard sweep when both sample the same queries. Checks that both
    make 5 triplets a query (§4.2) and the band invariants (:func:`_check_bands`), and glues the filled hard
    negatives for the prose (``scincl_hard_filled``, ``scincl_hard_wanted``).

    Shown in: notebooks/scincl.ipynb, Sampling bands and the two training sets."""
    p, embedding = run.p, embedded.embedding
    n_nodes = len(embedding.ids)
    requested = replace(scaled_bands(n_nodes), **{k: v for k, v in (("k_pos", p.k_pos), ("k_hard", p.k_hard)) if v})
    bands = clip_bands(requested, n_nodes)  # what the sampler can take from a graph of n_nodes papers
    if bands == requested and bands.k_hard == PAPER_BANDS.k_hard:
        run.branch("paper bands unclipped (k-hard 4000)")
    query_ids = embedded.query_ids(graph)
    main_queries = specter.take_queries(query_ids, p.max_queries, p.seed)
    collision_queries = share_of_queries(query_ids, p.collision_fraction, p.seed)
    collision_settings = [replace(bands, k_hard=k) for k in collision_grid(bands, n_nodes, p.collision_k_hard)]
    searches = band_searches(embedding, {"main": (main_queries, [bands]),
                                         "collisions": (collision_queries, collision_settings)}, p.seed)
    triplets, report = searches["main"].triplets(bands)
    specter_same_graph, specter_report = specter_triplets(graph.citations, candidates=sorted(training.papers),
                                                          query_ids=main_queries, seed=p.seed, progress=False,
                                                          verbose=False)
    if not len(triplets) == len(specter_same_graph) == specter.TRIPLETS_PER_QUERY * len(main_queries):
        raise ChapterCheckFailed(f"SciNCL §4.2: the same queries make the same number of triplets, "
                                 f"{specter.TRIPLETS_PER_QUERY} a query; SciNCL made {len(triplets)}, SPECTER's "
                                 f"sampling {len(specter_same_graph)}, for {len(main_queries)} query papers")
    names = {"SciNCL": f"SciNCL sampling on {embedded.graph_label or graph.label}{training.leak_label}",
             "SPECTER sampling": f"SPECTER sampling on {graph.label}{training.leak_label}"}
    sets = TrainingSets(bands, requested, n_nodes, query_ids, main_queries, collision_queries,
                        collision_settings, searches, triplets, report, specter_same_graph, specter_report, names,
                        embedded.graph_label or graph.label, specter_graph_label=graph.label,
                        graph_size=embedded.graph_size)
    run.glue("hard_filled", f"{sets.filled:,}")
    run.glue("hard_wanted", f"{specter.HARD_PER_QUERY * specter_report.queries_used:,}")
    sets.band_check = _check_bands(run, sets, embedding)
    return sets


def _check_bands(run, sets: TrainingSets, embedding) -> BandCheck:
    """The band invariants on the triplets of ``band_check_queries`` query papers (a seeded sample; 0: all): the
    positive's neighbour rank in (k⁺ − c⁺, k⁺], a hard negative's in (k⁻hard − c⁻hard, k⁻hard], a filtered-random
    easy negative's outside the top max(k); nothing is the query; c⁻hard + c⁻easy triplets a query used."""
    p, bands, triplets = run.p, sets.bands, sets.triplets
    queries = set(specter.take_queries(sets.main_queries, p.band_check_queries, p.seed))
    checked = [t for t in triplets if t.query in queries]
    # a blocked search: memory block × max(k)
    ranks = band_check(checked, embedding.vectors, embedding.ids, bands, metric=embedding.metric)
    outside = ranks[~(ranks["positive_in_band"] & ranks["negative_in_band"])]
    if len(ranks) != len(checked) or len(outside):
        raise ChapterCheckFailed(f"{len(outside)} of {len(checked)} checked triplets lie outside their bands "
                                 f"({bands.describe()}), e.g.:\n{outside.head(3)}")
    if len(triplets) != (bands.c_hard + bands.c_easy) * sets.report.queries_used:
        raise ChapterCheckFailed(f"{len(triplets)} SciNCL triplets for {sets.report.queries_used} queries, expected "
                                 f"{bands.c_hard + bands.c_easy} a query")
    repeated = [t for t in triplets if len({t.query, t.positive, t.negative}) != 3]
    if repeated:
        raise ChapterCheckFailed(f"{len(repeated)} SciNCL triplets repeat a paper, e.g. {repeated[:2]}")
    return BandCheck(ranks, checked, queries)


def table4_view(run, sets: TrainingSets, graph: TripletGraph) -> pd.DataFrame:
    """Our training set beside SciNCL Table 4's two (the w/o-leakage unique papers come from A.4's text, a row of
    their own in the CSV: ``first()`` merges them). With a given embedding, Nodes and Edges are its graph's (the edges
    as ``sdr graph embed`` recorded them, else empty).

    Shown in: notebooks/scincl.ipynb, Sampling bands and the two training sets."""
    table4 = book.read_paper_table("scincl_table4").groupby("model", sort=False)[
        ["replicated_specter_with_leakage", "random_s2orc_without_leakage"]].first()
    ours = pd.Series({
        "Training triplets": len(sets.triplets),
        "Unique paper IDs": len({p for t in sets.triplets for p in (t.query, t.positive, t.negative)}),
        "Query paper IDs": len(sets.main_queries),
        "Query paper IDs in SciDocs": int(graph.query_leakage.loc["in test or validation", "training papers in it"]),
        "Nodes": sets.graph_size.get("nodes", sets.n_nodes),
        "Edges": sets.graph_size["edges"] if sets.graph_size else graph.report["edges"],
    }, name=f"this book ({run.profile}, {sets.graph_label or graph.label})")
    return table4.join(ours, how="outer").loc[ours.index]


def graph_statement(run, sets: TrainingSets, graph: TripletGraph) -> str:
    """The graph SciNCL's bands were searched on, beside SciNCL Table 4's (52,526,134 nodes, 463,697,639 edges): for
    an embedding of the ``s2orc_citation_graph`` fetch its dataset, S2AG release and node set as ``embedding.json``
    records them (:func:`given_embedding`), then its nodes and edges; for any other graph its name and counts.
    Printed under Table 4 and glued (``scincl_graph_used``) for the prose.

    Shown in: notebooks/scincl.ipynb, Sampling bands and the two training sets."""
    table4 = book.read_paper_table("scincl_table4").groupby("model", sort=False)[
        "replicated_specter_with_leakage"].first()
    size = sets.graph_size
    nodes = size.get("nodes", sets.n_nodes) if size else sets.n_nodes
    edges = size.get("edges") if size else graph.report["edges"]
    if size.get("dataset"):
        what = (f"the {size['dataset']} dataset, S2AG release {size.get('release', '?')}, node set: "
                f"{size.get('node_set', '?')}")
    else:
        what = sets.graph_label or graph.label
    counts = f"{nodes:,} nodes, " + (f"{edges:,} edges" if edges is not None else "edges not recorded")
    line = (f"Graph used: {what}; {counts} (SciNCL Table 4: {int(table4['Nodes']):,} nodes, "
            f"{int(table4['Edges']):,} edges; here {100 * nodes / table4['Nodes']:.3g} % of its nodes).")
    run.glue("graph_used", line)
    return line


# ------------------------------------------------------------------------------------------------- collisions
@dataclass
class Collisions:
    """Fig. 5's sweep: collisions against k⁻hard, and SPECTER's sampling on the same graph and queries."""

    table: pd.DataFrame
    specter: int
    bands: Bands
    queries: int

    def with_specter(self) -> pd.DataFrame:
        return self.table.assign(**{"SPECTER collisions": self.specter})


def collision_table(run, training: specter.TrainingSet, graph: TripletGraph, embedded: CitationEmbedding,
                    sets: TrainingSets) -> Collisions:
    """SciNCL A.8 / Fig. 5 on ``collision_fraction`` of the query papers: collisions of the kNN bands at each k⁻hard
    of the grid (the search :func:`training_sets` made) and of SPECTER's sampling on the same graph. The shape of
    Fig. 5 must hold (:func:`fig5_shape`): the narrowest margin collides more often than the widest, by more than
    ``min_collision_gap``, wherever the grid fits the graph.

    Shown in: notebooks/scincl.ipynb, Collisions against the sampling-induced margin (A.8, Fig. 5)."""
    p = run.p
    grid = [setting.k_hard for setting in sets.collision_settings]  # k-hard beyond the graph is the graph
    table = collision_sweep(embedded.embedding, sets.bands, grid, query_ids=sets.collision_queries, seed=p.seed,
                            searched=sets.searches["collisions"])
    specter_all, _ = specter_triplets(graph.citations, candidates=sorted(training.papers),
                                      query_ids=sets.collision_queries, seed=p.seed, progress=False, verbose=False)
    fig5_shape(run, table, max(collision_grid(sets.bands, 2**62, p.collision_k_hard)), sets.n_nodes, graph.label)
    return Collisions(table, count_collisions(specter_all), sets.bands, len(sets.collision_queries))


def fig5_shape(run, table: pd.DataFrame, widest_asked: int, n_nodes: int, label: str) -> bool:
    """The check with teeth of Fig. 5: collisions at the narrowest margin minus at the widest must exceed
    ``min_collision_gap`` (set above the seed spread measured at smoke, profiles.yml). It applies where the grid's
    widest k-hard fits the graph (a grid clipped to a small graph compares two narrow margins); the paper dry run
    checks it on the w/o-leakage graph, which the paper's grid fits. Returns whether it was applied."""
    gap = int(table["collisions"].iloc[0]) - int(table["collisions"].iloc[-1])
    fits = len(table) > 1 and widest_asked <= n_nodes - 1
    return run.expect_gain(f"Fig. 5 on {label}", gap, getattr(run.p, "min_collision_gap", 0),
                           f"collisions at k-hard {table['k_hard'].iloc[0]} minus at k-hard {table['k_hard'].iloc[-1]}",
                           applies=fits, decimals=0,
                           why_not=f"the grid's widest k-hard, {widest_asked:,}, does not fit this graph of "
                                   f"{n_nodes:,} papers")


# ------------------------------------------------------------------------------------------------- released models
def released_models(run, inputs):
    """The released part, the chapter's first output at ``paper`` (:func:`sdr.methods.specter.released_models` with
    :data:`sdr.methods.scincl.RELEASED_CHECKS`): malteos/scincl on SciDocs and MDCR, held to SciNCL Table 1 and thesis
    Table 6.9 before anything trains. MDCR is read only there.

    A ``graph_embedding`` is checked here first (files, dimension: :func:`sdr.graph.given.check_given_embedding`), so a
    wrong path stops the page before the released models' hours, not after them.

    Shown in: notebooks/scincl.ipynb, The released model first."""
    from sdr.graph.given import check_given_embedding
    from sdr.methods.scincl.paper import RELEASED_CHECKS

    if getattr(run.p, "graph_embedding", ""):
        check_given_embedding(run.p.graph_embedding, dimension=run.p.graph_dimension)

    reads_mdcr = run.data.policy.real_only and "released" in run.parts
    extra = {"mdcr": run.data.input("mdcr").path} if reads_mdcr else {}
    return specter.released_models(run, inputs, RELEASED_CHECKS, shipped=False, extra_dirs=extra)


# ------------------------------------------------------------------------------------------------- training
def train_config(run) -> TrainConfig:
    """The chapter's training settings (SPECTER's objective and optimiser, :func:`sdr.methods.specter.train_config`)."""
    return specter.train_config(run.p, progress=False)


def fit_and_release(run, name: str, examples, papers, config: TrainConfig):
    """Train one run that only its scores outlive (seeds, Table 2's rows, sweep points): its encoder is returned and
    not kept in ``run.fits``, so a paper run does not hold dozens of encoders on the GPU. The run folder is ``name``
    with underscores for spaces."""
    fit = specter.fit_on_triplets(run, name, examples, papers, config, folder=name.replace(" ", "_"), probe=0)
    run.fits.pop(name, None)
    return fit.encoder


def train_main_models(run, inputs, training: specter.TrainingSet, sets: TrainingSets) -> dict[str, Fit]:
    """SciNCL and the SPECTER-sampling baseline, each from a fresh encoder with SPECTER's objective and the chapter's
    settings, with the before/after loss on about 64 of their triplets; the run folder is keyed by
    :data:`TRAINING_PARAMETERS` and the training data's source line. Returns the fits by page name.

    Shown in: notebooks/scincl.ipynb, Training."""
    extra = {"training data": inputs.triplets.source}
    route = graph_route(run.p)
    if route == "given":  # only then, so the run folders of the triplet graph keep their keys
        extra["graph embedding"] = str(run.p.graph_embedding)
    elif route == "s2orc":
        extra["graph embedding"] = (f"{sets.graph_size.get('dataset')} release {sets.graph_size.get('release')}, "
                                    "embedded in the chapter")
    run.key_runs(extra)
    return specter.train_triplet_models(run, sets.runs, training.papers, train_config(run), probe=64)


# ------------------------------------------------------------------------------------------------- SciDocs
@dataclass
class Gains:
    """SciNCL's gain over the untrained encoder (mean of the 8 proximity metrics) and over SPECTER's sampling on the
    same graph (avg w/o REC)."""

    over_untrained: float
    over_specter: float

    def describe(self) -> str:
        return (f"SciNCL - untrained: {self.over_untrained:+.2f} (mean of the 8 USR + CITE metrics); SciNCL - SPECTER "
                f"sampling: {self.over_specter:+.2f} (avg w/o REC)")


def gains(run, ours: pd.DataFrame, names: Mapping[str, str]) -> Gains:
    """SciNCL minus the untrained encoder and minus SPECTER's sampling, printed and glued for the prose
    (``scincl_gain``, ``scincl_over_specter``).

    Shown in: notebooks/scincl.ipynb, Evaluation on SciDocs."""
    scincl_row = ours.loc[names["SciNCL"]]
    result = Gains(specter.proximity_mean(scincl_row) - specter.proximity_mean(ours.loc["untrained encoder"]),
                   scincl_row["avg w/o REC"] - ours.loc[names["SPECTER sampling"], "avg w/o REC"])
    print(result.describe())
    run.glue("gain", f"{result.over_untrained:+.2f}")
    run.glue("over_specter", f"{result.over_specter:+.2f}")
    return result


@dataclass
class SciDocsScorer:
    """One model's SciDocs row with Table 2's task averages, on the papers read once."""

    path: object
    papers: dict

    def __call__(self, encoder, recommendations: bool, split: str = "test") -> dict:
        return with_task_averages(specter.scidocs_scores(encoder, self.papers, self.path, recommendations, split=split))


def scidocs_scorer(inputs) -> SciDocsScorer:
    from sdr.evaluate import scidocs

    return SciDocsScorer(inputs.scidocs.path, scidocs.read_papers(inputs.scidocs.path))


# ------------------------------------------------------------------------------------------------- CSFCube and seeds
def csfcube_table(run, inputs, models: Mapping, names: Mapping[str, str], released: Sequence[str]):
    """:func:`sdr.methods.specter.csfcube_table` (``csfcube_models`` names the runs "SciNCL" and "SPECTER
    sampling"); the scored encoders read ``max_length`` tokens again afterwards (Table 2 scores the main run again).

    Shown in: notebooks/scincl.ipynb, CSFCube (test split, every facet)."""
    csfcube = specter.csfcube_table(run, inputs, models, names, released)
    for name in csfcube.scored:
        models[name].max_length = run.p.max_length
    return csfcube


def released_paper_models(run) -> dict[str, str]:
    """The paper row each released checkpoint is (SciNCL Table 1), for the leaderboard's status map (see
    :func:`paper_models` for the trained rows too)."""
    return {f"{name} (released checkpoint)": specter.RELEASED_CHECKPOINTS[name] for name in run.p.released_checkpoints}


def paper_models(run, inputs, training: specter.TrainingSet, graph: TripletGraph, names: Mapping[str, str],
                 embedded: CitationEmbedding | None = None) -> dict[str, str]:
    """The leaderboard's status map: each released checkpoint's paper row (:func:`released_paper_models`), and by
    the page's one pairing rule (:func:`paper_pairs`) a trained row's (SciNCL Table 1's SciNCL or SPECTER) only where
    its origin matches the paper's — a SciNCL row sampled on a given embedding of S2ORC's citation graph with
    SPECTER's queries; rows on SPECTER's triplet graph map to none.

    Shown in: notebooks/scincl.ipynb, Seeds: the leaderboard models trained again."""
    from sdr.methods.specter.paper import PAPER_ROWS

    origins, candidates = _origins_and_candidates(run, inputs, training, graph, names, embedded)
    trained = {name: candidates[name] for name in (names["SciNCL"], names["SPECTER sampling"])
               if not origins[name].differences(PAPER_ROWS[candidates[name]])}
    return {**released_paper_models(run), **trained}


def retrainer(run, training: specter.TrainingSet, graph: TripletGraph, embedded: CitationEmbedding,
              sets: TrainingSets) -> Callable[[str, int], object]:
    """``retrain(page name, seed) -> encoder`` for :func:`sdr.methods.specter.seed_rows`: the run trained again on the
    same query papers and graph embedding, its triplets sampled again with that seed (SciNCL: the same bands, other
    easy negatives; SPECTER's sampling: other positives and negatives among the same citations); run folder
    ``"<run> seed <seed>"``.

    Shown in: notebooks/scincl.ipynb, Seeds: the leaderboard models trained again."""
    config = train_config(run)
    run_of = {page: name for name, page in sets.names.items()}

    def retrain(page_name: str, seed: int):
        name = run_of[page_name]
        examples = (sample_triplets(embedded.embedding, sets.bands, sets.main_queries, seed)[0] if name == "SciNCL"
                    else specter_triplets(graph.citations, candidates=sorted(training.papers),
                                          query_ids=sets.main_queries, seed=seed, progress=False, verbose=False)[0])
        return fit_and_release(run, f"{name} seed {seed}", examples, training.papers, replace(config, seed=seed))

    return retrain


# ------------------------------------------------------------------------------------------------- ours next to the paper
def paper_pairs(run, inputs, training: specter.TrainingSet, graph: TripletGraph, ours: pd.DataFrame,
                names: Mapping[str, str], embedded: CitationEmbedding | None = None, without_leakage=None):
    """Our SciDocs rows beside SciNCL Table 1's rows where they match (the one rule of
    :func:`sdr.methods.specter.pair_with_paper`: same training data — the graph, the bands (:func:`bands_words`) and
    the queries (:func:`main_queries_words`) —, model family, protocol and training protocol), the others apart with
    the reason: SciNCL ↔ SciNCL, SPECTER sampling ↔ SPECTER (the w/o-leakage rows when our training data do not
    overlap SciDocs), the untrained encoder ↔ SciBERT, malteos/scincl ↔ SciNCL, and the ``without_leakage`` part's
    trained row (:data:`sdr.methods.scincl.WOL_ROW`, SciNCL's released w/o-leakage queries) ↔ SciNCL (random S2ORC
    w/o leakage), never the with-leakage row. The rule reads the graph's source (``embedded.source``; the w/o-leakage
    row: the triples' own graph): only SciNCL rows sampled on a given embedding of S2ORC's citation graph
    (``graph_embedding``) match SciNCL's rows; rows on ``graph.label`` (SPECTER's triplet graph) or on the w/o-leakage
    triples' graph stand apart with the reason.

    Shown in: notebooks/scincl.ipynb, Ours next to the paper."""
    from sdr.methods.specter.paper import pair_with_paper

    origins, candidates = _origins_and_candidates(run, inputs, training, graph, names, embedded, without_leakage)
    if without_leakage is not None and without_leakage.trained:
        ours = pd.concat([ours, without_leakage.scores])
    paper = book.read_paper_table("scidocs").query("source == 'SciNCL'")
    return pair_with_paper(ours, origins, candidates, specter.METRIC_COLUMNS, paper)


def main_queries_words(p, with_leakage: bool) -> str:
    """The main runs' query papers in the words of the paper rows' origins (:data:`sdr.methods.specter.PAPER_ROWS`):
    SPECTER's (or SciNCL's random S2ORC queries w/o leakage), and a ``max_queries`` sample of them said so (another
    training set than the paper's)."""
    words = "SPECTER's queries" if with_leakage else "random S2ORC queries w/o leakage"
    return words + (f" (a sample of at most {p.max_queries:,})" if p.max_queries else "")


def bands_words(p) -> str:
    """SciNCL's bands where they are not the paper's (§5: k+ 25, k-hard 4000; the parameters ``k_pos``, ``k_hard``,
    0: scaled to the graph), as the pairing rule reads them; "" for the paper's."""
    if (p.k_pos, p.k_hard) == (PAPER_BANDS.k_pos, PAPER_BANDS.k_hard):
        return ""
    return f" (k+ {p.k_pos or 'scaled to the graph'}, k-hard {p.k_hard or 'scaled to the graph'})"


#: SciNCL Table 1's row a row of the ``without_leakage`` part would pair with (its queries are that row's).
WOL_PAPER_ROW = "SciNCL (random S2ORC w/o leakage)"


def _origins_and_candidates(run, inputs, training: specter.TrainingSet, graph: TripletGraph, names: Mapping[str, str],
                            embedded: CitationEmbedding | None, without_leakage=None) -> tuple[dict, dict[str, str]]:
    """Each row's origin (:class:`sdr.methods.specter.RowOrigin`) and the SciNCL Table 1 row it would pair with; the
    ``without_leakage`` part's trained rows with the origins it states (:attr:`WithoutLeakage.origins`)."""
    from sdr.methods.specter.paper import RELEASED_PAPER_ROW

    queries = main_queries_words(run.p, training.with_leakage)
    source = embedded.source if embedded is not None and embedded.source else graph.label
    trained = {names["SciNCL"]: f"SciNCL's kNN bands{bands_words(run.p)} on {source}, {queries}",
               names["SPECTER sampling"]: f"SPECTER's sampling on {graph.label}, {queries}"}
    wol = dict(without_leakage.origins) if without_leakage is not None and without_leakage.trained else {}
    trained.update(wol)
    released = list(run.p.released_checkpoints)
    origins = specter.row_origins(run, inputs, trained, released)
    suffix = "" if training.with_leakage else " (random S2ORC w/o leakage)"
    candidates = {"untrained encoder": "SciBERT", names["SciNCL"]: f"SciNCL{suffix}",
                  names["SPECTER sampling"]: f"SPECTER{suffix}",
                  **{f"{name} (released checkpoint)": RELEASED_PAPER_ROW[name] for name in released},
                  **{name: WOL_PAPER_ROW for name in wol}}
    return origins, candidates


# ------------------------------------------------------------------------------------------------- the page's record
def store(run, training: specter.TrainingSet, embedded: CitationEmbedding, sets: TrainingSets, collisions: Collisions,
          ours: pd.DataFrame, comparison: pd.DataFrame, table2, sweeps, csfcube, seeds, rows: list[dict],
          gain: Gains, pairs=None, released=None, without_leakage=None, deviations: Sequence[str] = ()):
    """The SciNCL chapter's record in the results store: its tables, its leaderboard rows (the CSFCube rows of the
    seeds, the released checkpoints', the SciDocs rows with recommendations; Table 2's rows and the sweeps stay on
    the page), and what the Summary and the status page read.

    Shown in: notebooks/scincl.ipynb, Ours next to the paper."""
    p = run.p
    tables = {"link prediction": embedded.link_table.round(2), "sampling": sets.sampling_table(),
              "collisions": collisions.table, "SciDocs (ours)": ours.drop(columns="missing embeddings").round(2),
              "paper vs ours": comparison.round(2), "table 2": table2.table.round(3), "sweeps": sweeps.table.round(3),
              "leakage": training.leakage.drop(columns="examples").round(3),
              "CSFCube test": csfcube.table.round(2).reset_index(), "CSFCube seeds": seeds.table.round(3).reset_index()}
    tables.update(specter.fidelity_tables(pairs, released))
    if without_leakage is not None and len(without_leakage.table):
        tables["w/o leakage (Table 4)"] = without_leakage.table
    if without_leakage is not None and without_leakage.trained:
        tables["w/o leakage SciDocs"] = without_leakage.scores.drop(columns="missing embeddings").round(2)
        if len(without_leakage.csfcube):
            tables["w/o leakage CSFCube"] = without_leakage.csfcube.round(2).reset_index()
    extra = {"bands": sets.bands.describe(), "ablations": list(p.ablations), "sweeps": list(p.sweeps),
             "leaderboard": rows, "leaderboard_seeds": seeds.seeds, "gain": gain.over_untrained,
             "hard negatives filled": sets.filled, "with_leakage": training.with_leakage,
             "missing embeddings": ours["missing embeddings"].to_dict()}
    if deviations:
        extra["deviations"] = list(deviations)
    return run.save(tables, extra, sources=csfcube.sources + run.data.model_sources)


def findings(run, inputs, training: specter.TrainingSet, sets: TrainingSets, ours: pd.DataFrame, gain: Gains,
             pairs, table2, seeds, without_leakage=None) -> str:
    """What to take from this run, each line computed from its numbers (the paper's from the paper tables); with a
    trained ``without_leakage`` part, its row's SciDocs average and what the pairing rule made of it.

    Shown in: notebooks/scincl.ipynb, What to take from this chapter."""
    p = run.p
    paired, apart = pairs
    trained = [sets.names["SciNCL"], sets.names["SPECTER sampling"]]
    matched = [name for name in trained if len(paired) and name in set(paired["ours"])]
    versus = (f"paired with the paper's rows: {', '.join(matched)}" if matched else
              "no paper row matches them (shown apart: "
              + "; ".join(apart.loc[apart["ours"] == trained[0], "shown apart because"]) + ")")
    specter_graph = ("the same graph" if sets.specter_graph_label in ("", sets.graph_label)
                     else sets.specter_graph_label)
    lines = [f"- SciNCL sampling on {sets.graph_label} moved the untrained encoder's proximity mean by "
             f"{gain.over_untrained:+.2f} on the {inputs.scidocs.kind} SciDocs; SciNCL minus SPECTER sampling on "
             f"{specter_graph}: {gain.over_specter:+.2f} (avg w/o REC); {versus}.",
             f"- SPECTER's sampling filled {sets.filled:,} of its hard negatives with easy ones on this graph; "
             f"SciNCL's bands made {count_collisions(sets.triplets):,} collisions, SPECTER's "
             f"{count_collisions(sets.specter_triplets):,}.",
             f"- {training.leakage_line()}"]
    deltas = table2.table.drop(index=table2.table.index[:1])["Δ avg w/o REC"] if len(table2.table) else []
    if len(deltas):
        lines.append(f"- Table 2 ({table2.protocol}): Δ avg w/o REC from {deltas.min():+.2f} to {deltas.max():+.2f}.")
    lines += specter.findings(seeds, inputs, p.csfcube_max_length, p.seed)
    lines += [f"- {name}: SciDocs avg {ours.loc[f'{name} (released checkpoint)', 'avg']:.2f}."
              for name in p.released_checkpoints]
    if without_leakage is not None and without_leakage.trained:
        lines.append(_wol_finding(without_leakage, paired, apart))
    return "\n".join(lines)


def _wol_finding(without_leakage, paired: pd.DataFrame, apart: pd.DataFrame) -> str:
    from sdr.methods.scincl.without_leakage import WOL_ROW

    row = without_leakage.scores.loc[WOL_ROW]
    kept = without_leakage.dropped["triplets"] - without_leakage.dropped["dropped"]
    line = (f"- {WOL_ROW}: SciDocs avg {row['avg']:.2f} (avg w/o REC {row['avg w/o REC']:.2f}), trained on {kept:,} "
            f"triplets ({without_leakage.dropped['dropped']:,} dropped for lacking a text)")
    if len(paired) and WOL_ROW in set(paired["ours"]):
        pair = paired.set_index("ours").loc[WOL_ROW]
        paper_row = pair["the paper's row"]
        return f"{line}; paired with {paper_row}: {pair['avg difference']:+.2f} on the average."
    reason = apart.set_index("ours").loc[WOL_ROW, "shown apart because"]
    return f"{line}; shown apart from {WOL_PAPER_ROW} ({reason})."
