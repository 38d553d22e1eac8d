"""What the SciNCL chapter does at ``paper``, up front (built on :mod:`sdr.methods.specter.paper`): its parts
(:data:`PARTS`), its whole cost (:func:`cost_plan`: the graph embeddings, kNN searches, trainings, encodings, SciDocs
scoring and fetches of every part), the released model it scores first (:data:`RELEASED_CHECKS`), the branches of the
paper path the dry run must take (:data:`DRY_RUN_BRANCHES`, and the dry-run fixture of SciNCL's w/o-leakage triples,
:func:`write_dry_run_wol`, a graph large enough for the paper's bands, with their texts served by the synthetic
Datasets API, :func:`write_dry_run_wol_texts`), and what differs from the paper
(:data:`PAPER_SETTINGS`, :data:`SCINCL_DEVIATIONS`, :func:`scincl_deviations`).

Shown in: notebooks/scincl.ipynb.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from sdr.methods.specter.paper import (CSFCUBE_PAPERS, SCIDOCS_PAPERS, SPECTER_PAPERS, SPECTER_QUERIES, SPECTER_TRIPLETS,
                                       TOKENS_PER_TEXT, download_work, encode_work, paper_size, query_count,
                                       scidocs_scoring_work)
from sdr.plan import CostPlan, Part, Work, resolve_parts
from sdr.released import ReleasedCheck

__all__ = ["PARTS", "PART_NEEDS", "MDCR_DOCUMENTS", "WOL_PAPERS", "S2ORC_NODES", "S2ORC_EDGES",
           "PBG_SECONDS_PER_EDGE_EPOCH", "PBG_WORKERS", "PBG_PHASE_RATES", "PBG_PEAK_RSS_MIB", "FLAT_SEARCH_SECONDS",
           "SEARCH_REUSE", "GIVEN_EMBEDDING_READ", "GRAPH_SOURCES", "graph_route", "cost_plan", "RELEASED_CHECKS",
           "DRY_RUN_BRANCHES",
           "write_dry_run_wol", "dry_run_wol_triples", "dry_run_wol_texts", "write_dry_run_wol_texts",
           "PAPER_SETTINGS", "SCINCL_DEVIATIONS", "WOL_DEVIATION", "DRY_RUN_GIVEN_GRAPH", "TABLE2_NOT_RUN",
           "scincl_deviations", "SCINCL_FIXED_DEVIATIONS", "expect_scincl_deviations_stated"]

# ================================================================================================ parts
#: The chapter's parts. The headline run is SciNCL Table 1's SciNCL row (one seed) against SPECTER's sampling on the
#: same graph, after the released model; the seeds, Table 2, Figs. 2-3 and the w/o-leakage rows are parts of their own.
PARTS: dict[str, Part] = {
    "released": Part("released", "SciNCL Table 1's SciNCL row (malteos/scincl on SciDocs) and thesis Table 6.9 "
                     "(malteos/scincl on MDCR) by inference", headline=True,
                     t4="all of it in 1 Colab session: inference and CPU scoring, no training"),
    "main": Part("main", "SciNCL Table 1's SciNCL row (one seed) and Table 2's SPECTER row as SPECTER's sampling on the "
                 "same graph; Table 5 (link prediction) and Fig. 5 (collisions) on that graph", headline=True,
                 t4="about 30 Colab sessions of 12 h: S2ORC's graph fetched and embedded by PyTorch-BigGraph on "
                    "Colab's 2 CPU cores (the bulk of it: a machine with more cores, or a given graph_embedding, "
                    "shortens it), the kNN search, then two trainings (resume = True in each new session)"),
    "seeds": Part("seeds", "Table 1's ±σ row: the leaderboard models trained with the next seeds (ten in all)",
                  t4="about 8 Colab sessions of 12 h (nine more seeds of two models, their bands read from the main "
                     "search): a workstation GPU's job"),
    "ablations": Part("ablations", "Table 2's rows (k-hard, plain-random easy negatives, 1 % and 10 % of the data, "
                      "BitFit; the Init. rows are not run), each over ablation_seeds",
                      t4="about 7 Colab sessions of 12 h (each row and seed one main training, the data-share "
                         "rows less; their bands read from the main search): a workstation GPU's job"),
    "sweeps": Part("sweeps", "Figs. 2-3: the k+ and k-hard sweeps on 10 % of the queries, scored on SciDocs' "
                   "validation split", t4="about 4 Colab sessions of 12 h (each point and seed a tenth of a "
                                          "main training; the bands read from Fig. 5's search)"),
    "without_leakage": Part("without_leakage", "Table 1's w/o-leakage SciNCL row: SciNCL's bands on the graph of its "
                            "released w/o-leakage triples (specter_wol), SciNCL trained on the sampled triplets whose "
                            "papers have texts (s2ag_bulk_wol_texts, the bulk route) and scored on SciDocs and CSFCube; "
                            "the w/o-leakage SPECTER row is not trained",
                            t4="about 2 Colab sessions of 12 h: the texts' bulk fetch (≈ 3 h), the graph embedding "
                               "and kNN search on the CPU, then one training"),
}
PART_NEEDS = {"seeds": "main", "ablations": "main", "sweeps": "main"}

# ================================================================================================ sizes and rates
#: MDCR's documents (thesis §2.5.2: 200,033), all embedded for the released check.
MDCR_DOCUMENTS = paper_size("benchmark_sizes", "MDCR documents", "texts")
#: The unique papers of SciNCL's w/o-leakage triples (A.4: 680,967), every one a node of their graph's index.
WOL_PAPERS = paper_size("scincl_table4", "Unique paper IDs", "random_s2orc_without_leakage", ref="A.4")
#: SciNCL's graph (Table 4, the with-leakage column: S2ORC's citation graph): 52,526,134 nodes, 463,697,639 edges.
S2ORC_NODES = paper_size("scincl_table4", "Nodes", "replicated_specter_with_leakage")
S2ORC_EDGES = paper_size("scincl_table4", "Edges", "replicated_specter_with_leakage")
#: PyTorch-BigGraph (:func:`sdr.graph.embed_edge_files`) at 768 d on this book's 2-core CPU with its PBG_WORKERS
#: HOGWILD workers, measured at 1,000,000 nodes (benchmarks/results/graph_scale_1m.txt: 1,980,001 training edges × 1
#: epoch, 3 partitions), phase by phase: training seconds per training edge and epoch (250.5 s), preprocessing (ids
#: and buckets, 13.9 s) per edge line, link prediction (18.6 s) per held-out edge, the vectors (25.1 s) per node and
#: dimension; training scaled ∝ dimension (assumed). Peak RSS of that run: PBG_PEAK_RSS_MIB.
PBG_SECONDS_PER_EDGE_EPOCH = 1.265e-04
PBG_WORKERS = 2
PBG_PHASE_RATES = {"preprocess_s_per_edge_line": 6.945e-06, "link_prediction_s_per_test_edge": 9.357e-04,
                   "vectors_s_per_node_dimension": 3.267e-08}
PBG_PEAK_RSS_MIB = 4371
#: Exact (flat) FAISS search with the bands, seconds per query × indexed paper × dimension: measured on the same
#: machine (benchmarks/results/graph_scale_1m.txt: 512 queries over 700,000 × 768 to depth 4001 in 91.4 s).
FLAT_SEARCH_SECONDS = 3.319e-10
#: A search reused (:class:`sdr.samplers.SearchCache`): hashing the embedding to find it (seconds per node × dimension:
#: 15.6 s for 700,000 × 768) and each query's bands and easy negatives read from it (1.6 ms a query): the same run's
#: second seed, 16.5 s for 512 queries.
SEARCH_REUSE = {"seconds_per_node_dimension": 2.906e-08, "seconds_per_query": 1.635e-03}
#: Reading a given graph embedding (``graph_embedding``; benchmarks/results/given_embedding.txt, the same machine):
#: seconds an id of ``ids.txt`` (:func:`sdr.graph.given.read_given_embedding`, 10 M ids in 6.27 s) and seconds a GiB
#: of the training papers' rows (``restrict``, 312,436 rows of 768 d in 4.90 s, page cache warm: a cold disk adds its
#: read time); the given embedding's size is taken as S2ORC's graph (SciNCL Table 4: 52,526,134 nodes).
GIVEN_EMBEDDING_READ = {"seconds_per_id": 6.27e-07, "seconds_per_gib_of_rows": 5.48}
GIVEN_EMBEDDING_NODES = S2ORC_NODES
#: Where the chapter's citation embedding comes from (``graph_source``; a given ``graph_embedding`` overrides it):
#: BigGraph on the citations inside SPECTER's triplets, or on S2ORC's citation graph (``s2orc_citation_graph``).
GRAPH_SOURCES = {"triplets": "the citations inside SPECTER's triplets",
                 "s2orc": "S2ORC's citation graph (s2orc_citation_graph, the bulk route)"}


def graph_route(p) -> str:
    """``"given"`` (``graph_embedding`` is set: its rows are read), else ``graph_source`` (:data:`GRAPH_SOURCES`;
    ``"triplets"`` when the parameters have none)."""
    if getattr(p, "graph_embedding", ""):
        return "given"
    source = getattr(p, "graph_source", "") or "triplets"
    if source not in GRAPH_SOURCES:
        raise ValueError(f"graph_source must be one of {sorted(GRAPH_SOURCES)}, got {source!r}")
    return source


def _pbg_hours(train_edges: int, edge_lines: int, test_edges: int, nodes: int, epochs: int, dimension: int) -> float:
    """embed_edge_files' phases at the measured rates (:data:`PBG_SECONDS_PER_EDGE_EPOCH`, :data:`PBG_PHASE_RATES`)."""
    seconds = (train_edges * epochs * PBG_SECONDS_PER_EDGE_EPOCH * dimension / 768
               + edge_lines * PBG_PHASE_RATES["preprocess_s_per_edge_line"]
               + test_edges * PBG_PHASE_RATES["link_prediction_s_per_test_edge"]
               + nodes * dimension * PBG_PHASE_RATES["vectors_s_per_node_dimension"])
    return seconds / 3600


_PBG_MEASURED = (f"{PBG_SECONDS_PER_EDGE_EPOCH:.4g} s a training edge-epoch at 768 d with {PBG_WORKERS} HOGWILD "
                 "workers, preprocessing, link prediction and vectors at their rates (measured at 1 M nodes on this "
                 "book's 2-core CPU, benchmarks/results/graph_scale_1m.txt)")


def _graph(part: str, what: str, edges: int, nodes: int, p, how_nodes: str) -> Work:
    test = int(round(edges * p.graph_test_fraction))
    hours = _pbg_hours(edges - test, edges, test, nodes, p.graph_epochs, p.graph_dimension)
    return Work(part, what, "graph", hours=hours, hours_on="CPU",
                how=f"≤ {edges:,} edges ({how_nodes}: {nodes:,} nodes) × {p.graph_epochs} epochs at "
                    f"{p.graph_dimension} d: {_PBG_MEASURED}")


def _s2orc_graph(p) -> Work:
    """BigGraph on S2ORC's citation graph (SciNCL Table 4: 52,526,134 nodes, 463,697,639 edges; A.5's epochs and
    dimension as the parameters set them): the phases at the rates measured at 1 M nodes, on this book's machine."""
    test = int(round(S2ORC_EDGES * p.graph_test_fraction))
    hours = _pbg_hours(S2ORC_EDGES - test, S2ORC_EDGES, test, S2ORC_NODES, p.graph_epochs, p.graph_dimension)
    disk_gib = 2 * S2ORC_NODES * 4 * p.graph_dimension / 2**30
    return Work("main", "BigGraph embedding of S2ORC's citation graph (SciNCL Table 4)", "graph", hours=hours,
                hours_on="CPU",
                how=f"{S2ORC_EDGES:,} edges, {S2ORC_NODES:,} nodes (Table 4) × {p.graph_epochs} epochs at "
                    f"{p.graph_dimension} d: {_PBG_MEASURED}; T = E × epochs × c / W, linear in W (assumed): SciNCL's "
                    f"60 cores take about {PBG_WORKERS}/60 of the training time (it reports ~6 h, A.5), PBG's "
                    f"distributed mode divides it further; memory: partitions from the budget (peak RSS "
                    f"{PBG_PEAK_RSS_MIB:,} MiB at 1 M nodes); disk: checkpoint + vectors ≈ {disk_gib:,.0f} GiB")


def _embedding_read(part: str, what: str, source: str, rows: int, dimension: int) -> Work:
    """Reading an S2ORC graph embedding (given, or made by the main part): every id of an embedding of S2ORC's size,
    then ≤ ``rows`` memory-mapped rows (:data:`GIVEN_EMBEDDING_READ`)."""
    row_gib = rows * dimension * 4 / 2**30
    seconds = (GIVEN_EMBEDDING_NODES * GIVEN_EMBEDDING_READ["seconds_per_id"]
               + row_gib * GIVEN_EMBEDDING_READ["seconds_per_gib_of_rows"])
    return Work(part, what, "graph", hours=seconds / 3600, hours_on="CPU",
                how=f"{GIVEN_EMBEDDING_NODES:,} ids × {GIVEN_EMBEDDING_READ['seconds_per_id'] * 1e6:.3g} µs and ≤ "
                    f"{rows:,} memory-mapped rows of {source} ({row_gib:.2f} GiB at {dimension} d) × "
                    f"{GIVEN_EMBEDDING_READ['seconds_per_gib_of_rows']:.3g} s a GiB (measured on this book's 2-core "
                    "CPU, page cache warm, benchmarks/results/given_embedding.txt)")


def _search(part: str, what: str, queries: int, nodes: int, dimension: int, runs: int = 1) -> Work:
    hours = queries * nodes * dimension * FLAT_SEARCH_SECONDS / 3600
    return Work(part, what, "knn", runs=runs, hours=hours, hours_on="CPU",
                how=f"exact search of {queries:,} queries over {nodes:,} papers × {dimension} d: "
                    f"{FLAT_SEARCH_SECONDS:.4g} s a query·paper·dimension (measured at 700 K papers on this book's "
                    "2-core CPU, benchmarks/results/graph_scale_1m.txt)")


class _Searches:
    """The plan's kNN searches as the chapter's :class:`sdr.samplers.SearchCache` serves them: on one embedding, a
    search whose queries are all among an earlier one's, to no greater depth, reads that search (its lines cost a
    reuse: hashing the embedding and 1.6 ms a query, :data:`SEARCH_REUSE`); any other is searched (and kept)."""

    def __init__(self, dimension: int):
        self.dimension = dimension
        self.kept: list[tuple[str, frozenset, int, str]] = []  # (embedding, queries, depth, the line that searched)

    def line(self, part: str, what: str, embedding: str, queries, depth: int, nodes: int, runs: int = 1) -> Work:
        queries = frozenset(queries)
        if not runs:
            return _search(part, what, len(queries), nodes, self.dimension, runs=0)
        served = next((first for name, kept, kept_depth, first in self.kept
                       if name == embedding and depth <= kept_depth and queries <= kept), None)
        reuse = (f"{SEARCH_REUSE['seconds_per_node_dimension']:.3g} s a node·dimension (hashing the {nodes:,} × "
                 f"{self.dimension} embedding to find the search) + {SEARCH_REUSE['seconds_per_query'] * 1e3:.2g} ms a "
                 "query (its bands read from it; measured, benchmarks/results/graph_scale_1m.txt)")
        if served is None:  # searched now, and kept: its further runs (seeds) reuse it
            self.kept.append((embedding, queries, depth, what))
            searched = _search(part, what, len(queries), nodes, self.dimension)
            if runs == 1:
                return searched
            total = searched.hours + (runs - 1) * self._reuse_hours(len(queries), nodes)
            return replace(searched, runs=runs, hours=total / runs,
                           how=f"{searched.how}; searched once, its {runs - 1} further runs reuse it at {reuse}")
        return Work(part, f"{what} (reused search)", "knn", runs=runs, hours=self._reuse_hours(len(queries), nodes),
                    hours_on="CPU", how=f"no search: {len(queries):,} queries to depth {depth:,} read from the kept "
                                        f"search of '{served}' (sdr.samplers.SearchCache), a reuse at {reuse}")

    def _reuse_hours(self, queries: int, nodes: int) -> float:
        return (nodes * self.dimension * SEARCH_REUSE["seconds_per_node_dimension"]
                + queries * SEARCH_REUSE["seconds_per_query"]) / 3600


def _train(part: str, what: str, examples: int, p, runs: int = 1, epochs: int | None = None) -> Work:
    tokens = min(TOKENS_PER_TEXT, p.max_length)
    return Work(part, what, "train", runs=runs, examples=examples, epochs=epochs or p.epochs,
                effective_batch=p.batch_size * p.accumulation_steps, texts_per_example=3, tokens_per_text=tokens,
                how=f"{examples:,} triplets (5 a query), 3 texts of ≤ {tokens} tokens (assumed mean {TOKENS_PER_TEXT})")


def _table2_row_search(row: str, p, main_queries: list[str], share_of_queries) -> tuple[list[str], str]:
    """A Table 2 row's kNN queries and the embedding it samples on, as the chapter's rows do
    (:data:`sdr.methods.scincl.ablations.TABLE2_ABLATIONS`): the data-share rows a share of the main queries, the
    leakage row the main queries on a graph of its own, every other row the main queries on the main graph."""
    for fraction in p.data_fractions:
        if row == f"{fraction:.0%} of the training set":
            return share_of_queries(main_queries, fraction, p.seed), "graph"
    if row == "graph with the evaluation papers":
        return main_queries, "leakage graph"
    return main_queries, "graph"


def cost_plan(p) -> CostPlan:
    """Everything the SciNCL chapter does with parameters ``p`` (the notebook's), part by part: the citation
    embedding (:func:`graph_route`: BigGraph on the graph of SPECTER's triplets — every paper of them when
    ``index_every_paper``; SciNCL Table 3: 311,860 — or S2ORC's graph fetched through the bulk route and embedded, or
    a given embedding's rows read), the exact kNN searches (the main queries, Fig. 5's share and the band check
    searched; the retrained SciNCL seeds, Table 2's rows and the sweeps served by a kept search whose queries include
    theirs, :class:`_Searches`, as :class:`sdr.samplers.SearchCache` serves them), the trainings (5 triplets a query
    of ``max_queries`` query papers, all 136,820 of Table 4 when 0), the SciDocs/CSFCube encodings and SciDocs scoring
    of every scored model, the released model on SciDocs and MDCR, the w/o-leakage part (its texts' bulk fetch,
    :func:`sdr.fetchers.bulk.bulk_fetch_work`; its graph of 680,967 papers, A.4, or the S2ORC embedding's rows; its
    training, SciDocs and CSFCube) and the fetches."""
    from sdr.fetchers.bulk import bulk_fetch_work
    from sdr.methods.scincl.ablations import table2_plan, table2_seeds
    from sdr.methods.scincl.recipe import clip_bands, collision_grid, scaled_bands, share_of_queries, sweep_points
    from sdr.methods.specter.recipe import take_queries

    selected = resolve_parts(getattr(p, "parts", "all"), PARTS)
    nodes = SPECTER_PAPERS
    node_words = "every paper of SPECTER's triplets" if p.index_every_paper else "at most every paper of the triplets"
    queries = query_count(p.max_queries)
    examples = 5 * queries
    all_queries = [str(i) for i in range(SPECTER_QUERIES)]
    main_queries = take_queries(all_queries, p.max_queries, p.seed)  # as the chapter draws them
    released = list(p.released_checkpoints)
    leaderboard = [m for m in p.csfcube_models if m != "untrained encoder"] if p.csfcube_models else ["SciNCL",
                                                                                                     "SPECTER sampling"]
    scored_csfcube = len(p.csfcube_models) if p.csfcube_models else 3
    d = p.graph_dimension
    work = []
    if released:
        work += [encode_work("released", f"{name} on SciDocs", SCIDOCS_PAPERS, p.released_max_length)
                 for name in released]
        work += [encode_work("released", f"{name} on MDCR", MDCR_DOCUMENTS, p.released_max_length) for name in released]
        work.append(scidocs_scoring_work("released", "SciDocs scoring of the released models", len(released), True))
        work += [download_work("released", name) for name in ("scidocs", "mdcr", "csfcube")]
        work += [download_work("released", name, model=True) for name in released]
    route = graph_route(p)
    given = getattr(p, "graph_embedding", "")
    searches = _Searches(d)
    bands = clip_bands(replace(scaled_bands(nodes), **{k: v for k, v in (("k_pos", p.k_pos), ("k_hard", p.k_hard))
                                                         if v}), nodes)
    depth = max(bands.k_pos, bands.k_hard)
    collision_queries = share_of_queries(all_queries, p.collision_fraction, p.seed)
    collision_depth = max([depth, *collision_grid(bands, nodes, p.collision_k_hard)])
    band_check = queries if not p.band_check_queries else min(p.band_check_queries, queries)
    if route == "given":  # nothing is embedded here: the given embedding's rows of the training papers are read
        graph_work = [_embedding_read("main", "read the given S2ORC graph embedding (graph_embedding): the training "
                                      "papers' rows", given, nodes, d)]
    elif route == "s2orc":  # S2ORC's citation graph through the bulk route, embedded here, then its rows read
        graph_work = [bulk_fetch_work("s2orc_citation_graph", "main"), _s2orc_graph(p),
                      _embedding_read("main", "read the S2ORC graph embedding: the training papers' rows",
                                      "the S2ORC embedding", nodes, d)]
    else:
        graph_work = [_graph("main", "BigGraph embedding of SPECTER's triplet graph", SPECTER_TRIPLETS, nodes, p,
                             node_words)]
    # in the chapter's order: the main search (with Fig. 5's when they share their queries), Fig. 5's, the band check
    # (its own blocked search, not kept), then the seeds, Table 2 and the sweeps, served by the kept searches
    work += [
        *graph_work,
        searches.line("main", "kNN bands of the main queries", "graph", main_queries,
                      collision_depth if collision_queries == main_queries else depth, nodes),
        searches.line("main", "kNN bands of Fig. 5's queries (collision sweep)", "graph", collision_queries,
                      collision_depth, nodes),
        _search("main", "band check (ranks of the checked triplets)", band_check, nodes, d),
        _train("main", "train SciNCL", examples, p),
        _train("main", "train SPECTER sampling (same graph and queries)", examples, p),
        encode_work("main", "SciDocs: untrained, trained and released models", SCIDOCS_PAPERS, p.max_length,
                    runs=3 + len(released)),
        scidocs_scoring_work("main", "SciDocs scoring of those models", 3 + len(released), p.recommendations),
        encode_work("main", "CSFCube: the models csfcube_models names and the released ones", CSFCUBE_PAPERS,
                    p.csfcube_max_length, runs=scored_csfcube + len(released)),
        download_work("main", "scirepeval_cite_prediction"),
        download_work("main", p.model_name, model=True),
    ]
    extra_seeds = max(0, p.leaderboard_seeds - 1)
    work += [_train("seeds", "train the leaderboard models again (each extra seed)", examples, p,
                    runs=extra_seeds * len(leaderboard)),
             searches.line("seeds", "kNN bands sampled again for each extra SciNCL seed", "graph", main_queries, depth,
                           nodes, runs=extra_seeds * ("SciNCL" in leaderboard)),
             encode_work("seeds", "CSFCube: each extra seed's models", CSFCUBE_PAPERS, p.csfcube_max_length,
                         runs=extra_seeds * len(leaderboard))]
    row_seeds = table2_seeds(p)
    rows = table2_plan(p.ablations, p.table2_k_hard_shares, p.data_fractions, main_queries, p.seed)
    if rows:
        work.append(_train("ablations", "Table 2 reference: the main run with the other seeds", examples, p,
                           runs=len(row_seeds) - 1))
        work.append(searches.line("ablations", "Table 2 reference: kNN bands for the other seeds", "graph",
                                  main_queries, depth, nodes, runs=len(row_seeds) - 1))
    for row, count in rows:  # every row samples its own kNN triplets for each seed, from the kept search
        row_queries, row_graph = _table2_row_search(row, p, main_queries, share_of_queries)
        work.append(_train("ablations", f"Table 2: {row}", 5 * count, p, runs=len(row_seeds)))
        work.append(searches.line("ablations", f"Table 2: {row}, kNN bands", row_graph, row_queries, depth, nodes,
                                  runs=len(row_seeds)))
    table2_runs = len(rows) * len(row_seeds) + (len(row_seeds) - 1 if rows else 0)
    if table2_runs:
        work += [encode_work("ablations", "SciDocs: every Table 2 run", SCIDOCS_PAPERS, p.max_length, runs=table2_runs),
                 scidocs_scoring_work("ablations", "SciDocs scoring of every Table 2 run", table2_runs,
                                      p.table2_recommendations)]
    points = sweep_points(bands, nodes, p.sweeps, p.k_pos_sweep, p.k_hard_sweep)
    sweep_queries = share_of_queries(all_queries, p.sweep_fraction, p.seed)
    if points:
        runs = len(points) * len(p.sweep_seeds)
        sweep_depth = max(max(point.k_pos, point.k_hard) for point in points.values())
        work += [searches.line("sweeps", "kNN bands of the sweep queries (one search a seed)", "graph", sweep_queries,
                               sweep_depth, nodes, runs=len(p.sweep_seeds)),
                 _train("sweeps", "Figs. 2-3: every point and seed", 5 * len(sweep_queries), p, runs=runs,
                        epochs=p.sweep_epochs),
                 encode_work("sweeps", "SciDocs (validation): every point and seed", SCIDOCS_PAPERS, p.max_length,
                             runs=runs),
                 scidocs_scoring_work("sweeps", "SciDocs scoring (validation) of every point and seed", runs,
                                      p.sweep_recommendations)]
    wol_queries = query_count(p.max_queries)
    wol_csfcube = "SciNCL" in (p.csfcube_models or ["SciNCL"])
    wol_graph = (_embedding_read("without_leakage", "read the given S2ORC graph embedding (graph_embedding): the "
                                 "w/o-leakage papers' rows", given, WOL_PAPERS, d)
                 if route == "given" else
                 # graph_source s2orc without a given embedding: the part samples on the triples' own graph (the
                 # chapter's S2ORC embedding is not handed to it; the deviation list says so)
                 _graph("without_leakage", "BigGraph embedding of the w/o-leakage triples' graph", SPECTER_TRIPLETS,
                        WOL_PAPERS, p, "every paper of the triples (A.4)"))
    work += [download_work("without_leakage", "specter_wol"),
             bulk_fetch_work("s2ag_bulk_wol_texts", "without_leakage"),
             wol_graph,
             searches.line("without_leakage", "kNN bands of the w/o-leakage queries", "w/o-leakage graph",
                           [str(i) for i in range(wol_queries)], depth, WOL_PAPERS),
             _search("without_leakage", "band check of the w/o-leakage triplets", band_check, WOL_PAPERS, d),
             # at most: the triplets whose papers lack a text are dropped
             _train("without_leakage", "train SciNCL on the w/o-leakage triplets with texts", 5 * wol_queries, p),
             encode_work("without_leakage", "SciDocs: the w/o-leakage SciNCL", SCIDOCS_PAPERS, p.max_length),
             scidocs_scoring_work("without_leakage", "SciDocs scoring of the w/o-leakage SciNCL", 1,
                                  p.recommendations),
             encode_work("without_leakage", "CSFCube: the w/o-leakage SciNCL", CSFCUBE_PAPERS, p.csfcube_max_length,
                         runs=int(wol_csfcube))]
    return CostPlan("scincl", p.profile, PARTS, work, selected)


# ================================================================================================ released models
#: SciNCL's released checkpoint on the benchmarks its numbers are printed for, read as SciNCL reads a paper ([CLS] of
#: ``title [SEP] abstract``, 512 tokens, no adapter). SciNCL Table 1's row is the mean over ten seeds, the released
#: checkpoint one model: the proximity metrics (σ ≤ .162 over the seeds) and the average (σ .064) within ±0.3; MAG
#: and MeSH (σ .449 and .422) within ±1.2 (0.3 + 2σ, rounded); the recommendations unasserted. MDCR: thesis Table 6.9
#: is the MDCR repository's evaluation of this checkpoint, which the thesis reconfirmed on the Hugging Face model
#: (§6.2): the same protocol, ±0.3. No paper reports malteos/scincl on CSFCube: the CSFCube section scores it.
RELEASED_CHECKS = [
    ReleasedCheck("malteos/scincl", "scidocs", "scidocs", "SciNCL",
                  {m: m for m in ("coview_map", "coview_ndcg", "coread_map", "coread_ndcg", "cite_map", "cite_ndcg",
                                  "cocite_map", "cocite_ndcg", "avg")},
                  pooling="cls", max_length=512, tolerance=0.3, table_ref="Table 1"),
    ReleasedCheck("malteos/scincl", "scidocs", "scidocs", "SciNCL", {"mag_f1": "mag_f1", "mesh_f1": "mesh_f1"},
                  pooling="cls", max_length=512, tolerance=1.2, table_ref="Table 1"),
    ReleasedCheck("malteos/scincl", "scidocs", "scidocs", "SciNCL", {"recomm_ndcg": "recomm_ndcg",
                                                                     "recomm_p1": "recomm_p1"},
                  pooling="cls", max_length=512, tolerance=None, table_ref="Table 1",
                  unasserted_because="SciDocs' recommendation ranker trains with PyTorch (not exactly reproducible, its "
                                     "README says), and Table 1's row is the mean of ten seeds (σ .203 and .356)"),
    ReleasedCheck("malteos/scincl", "mdcr", "thesis_mdcr", "SciNCL",
                  {"avg/map": "map", "avg/ndcg": "ndcg", "avg/recall_5": "recall_5"}, pooling="cls", max_length=512,
                  tolerance=0.3, table_ref="Table 6.9"),
]

# ================================================================================================ the dry run
#: The branches of the paper path the dry run must take (issue 30): the released part's assertions, training data
#: that overlap SciDocs (as the released triplets do), a leaderboard model trained with a second seed, the paper's
#: bands unclipped (k-hard 4000 on a graph of more than 4,003 papers: the w/o-leakage fixture's), SciNCL's graph
#: (graph_source s2orc: the mirror's s2orc_citation_graph fetch) embedded in the chapter and read back as S2ORC's by
#: its recorded source, and SciNCL trained on the w/o-leakage triplets with texts from the bulk route. (The triplet
#: graph's path, "every training paper indexed", is no longer the paper profile's and is not required here.)
DRY_RUN_BRANCHES = ("released checks asserted", "training papers overlap SciDocs (with leakage)",
                    "leaderboard model trained with another seed", "paper bands unclipped (k-hard 4000)",
                    "S2ORC citation graph embedded in the chapter", "S2ORC graph embedding read",
                    "w/o-leakage SciNCL trained", "released checkpoint's SciDocs vectors read from the cache")

#: The dry run's second SciNCL execution (issue 36, :func:`sdr.dryrun.run_on_given_graph`): the main part with
#: ``graph_embedding`` set to an embedding of the mirror's ``s2orc_citation_graph`` edges, written as `sdr graph embed
#: --work-dir` writes it (:func:`sdr.graph.embed_edge_files`), in a results store of its own; the branch it must take.
DRY_RUN_GIVEN_GRAPH = {"dataset": "s2orc_citation_graph", "parameter": "graph_embedding", "parts": "main",
                       "branches": ("S2ORC graph embedding read",)}

WOL_FIXTURE_PAPERS = 4_600
"""Papers of the dry-run w/o-leakage triples, every one a query: more than k-hard 4000 + c-easy 3 + 1 nodes, so the
paper's bands fit the graph."""
WOL_FIXTURE_COMMUNITY = 50
WOL_ID_BASE = 990_000_000  # corpus-id-like integers no fixture paper has


def dry_run_wol_triples(fixture) -> list[tuple[int, int, int]]:
    """The dry-run w/o-leakage triples (:func:`write_dry_run_wol`), as corpus-id triples (deterministic)."""
    from sdr.methods.specter.paper import dry_run_leaked_papers

    rng = np.random.default_rng(fixture.seed)
    leaked = set(dry_run_leaked_papers(fixture))
    known = [fixture.corpus_ids[pid] for pid in sorted(fixture.train.papers) if pid not in leaked]
    ids = np.array(known + [WOL_ID_BASE + i for i in range(WOL_FIXTURE_PAPERS - len(known))])
    rng.shuffle(ids)
    communities = ids.reshape(-1, WOL_FIXTURE_COMMUNITY)
    triples = []
    for query_index in range(len(ids)):
        query = ids[query_index]
        members = communities[query_index // WOL_FIXTURE_COMMUNITY]
        positives = rng.choice([m for m in members if m != query], size=5, replace=False)
        for positive in positives:
            negative = ids[int(rng.integers(len(ids)))]
            while negative in members:
                negative = ids[int(rng.integers(len(ids)))]
            triples.append((int(query), int(positive), int(negative)))
    return triples


def write_dry_run_wol(folder: Path, fixture) -> None:
    """The paper dry run's ``specter_wol`` (``sdr.dryrun.WRITERS``): SciNCL's w/o-leakage triples in their released
    layout (``specter-wol__train_triples.csv``: ``query_paper_id,positive_id,negative_id``, S2 corpus ids), large
    enough that the paper's k-hard 4000 is not clipped: :data:`WOL_FIXTURE_PAPERS` papers in communities of
    :data:`WOL_FIXTURE_COMMUNITY`, each a query with 5 positives from its community and a random negative from
    another each. The training part's papers (their corpus ids; none of those the dry-run SciDocs names)
    are among them."""
    lines = ["query_paper_id,positive_id,negative_id"] + [f"{q},{p},{n}" for q, p, n in dry_run_wol_triples(fixture)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "specter-wol__train_triples.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


#: In the dry-run texts of the w/o-leakage papers, every n-th of the papers the fixture corpus does not hold has no
#: record in the papers dataset (a text the release lacks: its triplets are dropped and counted), and every m-th has
#: a title but no abstract.
WOL_FIXTURE_TEXTLESS_EVERY = 97
WOL_FIXTURE_NO_ABSTRACT_EVERY = 89
_WOL_WORDS = ("graph", "citation", "embedding", "neighbour", "contrastive", "retrieval", "transformer", "protein",
              "genome", "lattice", "spectral", "quantum", "parsing", "translation", "theorem", "survey", "corpus",
              "sampling", "margin", "triplet", "cluster", "kernel", "sensor", "policy")


def dry_run_wol_texts(fixture):
    """The papers the dry run's Datasets API holds for the w/o-leakage ids: ``(corpus, {paper id: corpus id})``. The
    fixture corpus' training papers keep their texts (as in SPECTER's triplets); the other ids get a seeded title
    and abstract, but every :data:`WOL_FIXTURE_TEXTLESS_EVERY`-th none at all and every
    :data:`WOL_FIXTURE_NO_ABSTRACT_EVERY`-th no abstract."""
    from types import SimpleNamespace

    from sdr.corpus import CitationGraph, Paper

    rng = np.random.default_rng(fixture.seed + 1)
    by_corpus_id = {cid: pid for pid, cid in fixture.corpus_ids.items()}
    papers, ids = {}, {}
    wol_ids = sorted({cid for triple in dry_run_wol_triples(fixture) for cid in triple})
    for number, cid in enumerate(wol_ids, start=1):
        if cid in by_corpus_id:
            pid = by_corpus_id[cid]
            papers[pid], ids[pid] = fixture.corpus.papers[pid], cid
            continue
        pid = f"wol{cid}"
        ids[pid] = cid
        if number % WOL_FIXTURE_TEXTLESS_EVERY == 0:
            continue
        words = list(rng.choice(_WOL_WORDS, size=40))
        abstract = "" if number % WOL_FIXTURE_NO_ABSTRACT_EVERY == 0 else " ".join(words[6:]).capitalize() + "."
        papers[pid] = Paper(pid, " ".join(words[:6]).capitalize(), abstract)
    return SimpleNamespace(papers=papers, graph=CitationGraph()), ids


def write_dry_run_wol_texts(folder: Path, fixture) -> None:
    """The paper dry run's ``s2ag_bulk_wol_texts`` (``sdr.dryrun.WRITERS``), written by the bulk fetcher from the
    synthetic Datasets API (:func:`dry_run_wol_texts`), filtered to the ids of the mirror's ``specter_wol`` triples
    (read as the real route reads them, :func:`sdr.fetchers.bulk.text_ids_for`'s file)."""
    from sdr import dryrun
    from sdr.methods.scincl.without_leakage import WOL_FILE, read_wol_triples

    triples_file = folder.parent / "specter_wol" / WOL_FILE
    if not triples_file.exists():  # CHAPTER_DATA writes specter_wol first; alone, write it beside
        write_dry_run_wol(triples_file.parent, fixture)
    ids = list(dict.fromkeys(int(pid) for triple in read_wol_triples(triples_file) for pid in triple))
    corpus, corpus_ids = dry_run_wol_texts(fixture)
    dryrun._bulk_fetch("s2ag_bulk_wol_texts", folder, corpus, fixture, anchors=ids, ids=corpus_ids)


# ================================================================================================ fidelity
#: The paper's value of every parameter that changes SciNCL's training or what a row is scored on, with where the paper
#: says so; ``None``: the paper states no such setting (the page's deviation list names ours where it matters).
PAPER_SETTINGS: dict[str, tuple[object, str]] = {
    "model_name": ("allenai/scibert_scivocab_uncased", "SciNCL §4.3: initialised with SciBERT"),
    "model_layers": (0, "SciBERT's 12 layers"),
    "seed": (None, "Table 1 is the mean over seeds 0-9 (the seeds part trains them)"),
    "n_papers": (None, "synthetic corpus size (replicas only)"),
    "eval_fraction": (None, "synthetic corpus split (replicas only)"),
    "graph_dimension": (768, "A.5: BigGraph, 768 dimensions"),
    "graph_comparator": ("dot", "A.5: dot product"),
    "graph_epochs": (20, "A.5: 20 epochs"),
    "graph_test_fraction": (0.01, "A.5: trained on 99 % of the edges, 1 % held out"),
    "graph_undirected": (False, "§3.2: the directed citation graph (A.7.1: undirected scores 81.7)"),
    "index_every_paper": (True, "A.4: the FAISS index holds every training paper"),
    "k_pos": (25, "§5: k+ = 25"),
    "k_hard": (4000, "§5: k-hard = 4000"),
    "max_queries": (0, "every query paper (136,820, Table 4)"),
    "max_length": (512, "SciBERT's input length"),
    "epochs": (2, "§4.3: 2 epochs"),
    "batch_size": (8, "§4.3: batch 8"),
    "accumulation_steps": (4, "§4.3: effective batch 32"),
    "learning_rate": (2e-5, "§4.3"),
    "schedule": (None, "SciNCL states no schedule (it follows SPECTER's setup with Hugging Face Transformers)"),
    "table2_k_hard_shares": ([0.5, 0.75], "Table 2: k-hard 2000 and 3000 of 4000"),
    "data_fractions": ([0.01, 0.1], "Table 2: 1 % and 10 % of the training data"),
    "bitfit_learning_rate": (1e-4, "§4.3: BitFit with lr 1e-4"),
    "sweep_fraction": (0.1, "§6: 10 % of the training data, by query"),
    "sweep_epochs": (None, "§6 does not say how long the sweep runs train"),
    "recommendations": (True, "SciDocs' average includes the recommendation task"),
    "csfcube_max_length": (None, "SciNCL does not report CSFCube"),
}

#: Table 2's rows the book does not run, and why (issue 37: "run or listed as not run").
TABLE2_NOT_RUN = {
    "Init. w/ BERT-Base": "another base model (bert-base-uncased): not run",
    "Init. w/ BERT-Large": "another base model (bert-large-uncased): not run",
    "Init. w/ BioBERT": "another base model (biobert-base-cased-v1.2): not run",
}

#: What the SciNCL chapter does differently from SciNCL at every profile (issue 37); the deviations that depend on the
#: run's parameters and data are generated (:func:`scincl_deviations`).
TRIPLET_GRAPH_DEVIATION = (
    "The citation graph is the one inside SPECTER's training triplets (query → positive, at most 5 out-edges a "
    "query), not S2ORC's (Table 4: 52.5 M nodes); no row trained on it is set beside the paper's SciNCL row "
    "(`graph_source` s2orc, the paper profile's, embeds SciNCL's graph; or give `graph_embedding`).")
#: With ``graph_embedding``: SciNCL's bands are on the given graph, SPECTER's sampling still on the triplets' citations.
GIVEN_GRAPH_DEVIATION = (
    "SciNCL's bands are searched on the given embedding of S2ORC's citation graph (`graph_embedding`: {path}) — "
    "S2ORC's only where its embedding.json names the s2orc_citation_graph dataset (the page states the graph; any "
    "other embedding's rows stand apart) —, restricted to the training papers found in it; the SPECTER-sampling "
    "baseline still draws from the citations inside SPECTER's triplets, and Table 2's leakage row embeds its own "
    "graph.")
#: With ``graph_source`` "s2orc" and no ``graph_embedding`` (the paper profile): the chapter embeds SciNCL's graph.
S2ORC_GRAPH_DEVIATION = (
    "SciNCL's bands are searched on the s2orc_citation_graph dataset embedded in the chapter (one current S2AG "
    "release's citations over its s2orc papers, not the 2020 S2ORC SciNCL embedded: the line under Table 4 states "
    "its release, nodes and edges against Table 4's), restricted to the training papers found in it; the "
    "SPECTER-sampling baseline still draws from the citations inside SPECTER's triplets, Table 2's leakage row embeds "
    "its own graph, and the w/o-leakage part samples on its triples' graph unless `graph_embedding` is given.")
SCINCL_DEVIATIONS = (
    "Table 2's Init. rows (BERT-Base, BERT-Large, BioBERT as the base model) are not run.",
)
#: The w/o-leakage part's deviation: the graph (``{graph}``: the triples' own, or the given S2ORC embedding) and texts.
WOL_DEVIATION = (
    "Table 1's w/o-leakage SciNCL row is trained on SciNCL's bands sampled on {graph}; its texts are the titles and "
    "abstracts of a current S2AG release (bulk papers/abstracts, s2ag_bulk_wol_texts), and sampled triplets whose "
    "papers the release lacks are dropped (counted on the page). Table 1's w/o-leakage SPECTER row is not trained.")
WOL_GRAPHS = {
    False: "the graph of its released w/o-leakage triples (query → positive), not on S2ORC's citation graph, so the "
           "pairing rule shows it apart",
    True: "the given S2ORC embedding's rows of its released triples' papers (those found; the page counts them)",
}


def scincl_deviations(run) -> list[str]:
    """What differs from the paper at this run, one line each: every parameter not at the paper's value
    (:data:`PAPER_SETTINGS`, :func:`sdr.methods.specter.deviations`), the replicas read, the schedule (which SciNCL
    does not state: the one this run uses, stated), how the FAISS index is built, :data:`SCINCL_DEVIATIONS` and the
    w/o-leakage row's graph and texts (:data:`WOL_DEVIATION`)."""
    from sdr.methods.specter.paper import deviations
    from sdr.train import TrainConfig

    p = run.p
    warmup = f"{TrainConfig().warmup_ratio:.0%}".replace("%", " %")  # the trainer's warm-up share (sdr.train)
    schedule = {"slanted_triangular": f"the slanted-triangular schedule of SPECTER's AllenNLP config ({warmup} of "
                                      "the steps rising, then falling to 1/32)",
                "linear": f"a linear warm-up over the first {warmup} of the optimizer steps, then linear decay to 0 "
                          "(SciNCL states neither the schedule nor a warm-up)",
                "cosine": f"a {warmup} linear warm-up, then cosine decay"}.get(p.schedule, f"the {p.schedule!r} schedule")
    index = ("every paper of the triplets is in the FAISS index; those that occur only as negatives have no edge in "
             "the triplet graph, so they keep BigGraph's random initial vectors (in S2ORC they have citations)"
             if p.index_every_paper else
             "the FAISS index holds the graph's nodes only: papers that occur only as negatives are left out "
             "(SciNCL indexes every training paper, A.4)")
    given = getattr(p, "graph_embedding", "")
    in_chapter = graph_route(p) == "s2orc"
    if given or in_chapter:
        index = ("the FAISS index holds the training papers found in the S2ORC graph's embedding (SciNCL indexes "
                 "every training paper, A.4; the page counts those not found)")
    graph = (GIVEN_GRAPH_DEVIATION.format(path=given) if given else S2ORC_GRAPH_DEVIATION if in_chapter
             else TRIPLET_GRAPH_DEVIATION)
    fixed = [f"SciNCL does not state its learning-rate schedule; this run uses {schedule}.", f"Index: {index}.",
             graph, *SCINCL_DEVIATIONS, WOL_DEVIATION.format(graph=WOL_GRAPHS[bool(given)])]
    lines = deviations(run, PAPER_SETTINGS, keys=[*run.method.TRAINING_PARAMETERS, "recommendations",
                                                  "csfcube_max_length"], fixed=fixed)
    expect_scincl_deviations_stated(lines, run)
    return lines


#: The deviations SciNCL's page states at every run, each with the words its line must hold at this run (issue 37:
#: a line dropped from :func:`scincl_deviations` fails :func:`expect_scincl_deviations_stated`).
SCINCL_FIXED_DEVIATIONS = {
    "schedule": lambda p: "SciNCL does not state its learning-rate schedule; this run uses",
    "index": lambda p: "Index: ",
    "graph": lambda p: ("SciNCL's bands are searched on the given embedding of S2ORC's citation graph"
                        if getattr(p, "graph_embedding", "") else
                        "SciNCL's bands are searched on the s2orc_citation_graph dataset embedded in the chapter"
                        if graph_route(p) == "s2orc" else
                        "The citation graph is the one inside SPECTER's training triplets"),
    "Table 2's Init. rows": lambda p: "Table 2's Init. rows",
    "w/o-leakage row": lambda p: "Table 1's w/o-leakage SciNCL row is trained on SciNCL's bands sampled on",
}


def expect_scincl_deviations_stated(lines: list[str], run) -> None:
    """Every deviation of :data:`SCINCL_FIXED_DEVIATIONS` (with the graph this run samples on) and every replica read
    has its line among ``lines``; raises :class:`ChapterCheckFailed` naming the missing ones."""
    from sdr.book.chapter import ChapterCheckFailed

    missing = [key for key, words in SCINCL_FIXED_DEVIATIONS.items()
               if not any(words(run.p) in line for line in lines)]
    missing += [f"replica {item.name}" for item in run.data.inputs.values()
                if not item.real and not any(line.startswith(f"{item.name} is a replica") for line in lines)]
    if missing:
        raise ChapterCheckFailed(f"SciNCL's deviations from the paper not stated on the page: {missing}")
