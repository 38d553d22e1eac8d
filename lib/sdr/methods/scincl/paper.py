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

__all__ = ["PARTS", "PART_NEEDS", "MDCR_DOCUMENTS", "WOL_PAPERS", "PBG_SECONDS_PER_EDGE_EPOCH",
           "FLAT_SEARCH_SECONDS", "GIVEN_EMBEDDING_READ", "cost_plan", "RELEASED_CHECKS", "DRY_RUN_BRANCHES",
           "write_dry_run_wol", "dry_run_wol_triples", "dry_run_wol_texts", "write_dry_run_wol_texts",
           "PAPER_SETTINGS", "SCINCL_DEVIATIONS", "WOL_DEVIATION", "DRY_RUN_GIVEN_GRAPH", "TABLE2_NOT_RUN",
           "scincl_deviations"]

# ================================================================================================ parts
#: The chapter's parts. The headline run is SciNCL Table 1's SciNCL row (one seed) against SPECTER's sampling on the
#: same graph, after the released model; the seeds, Table 2, Figs. 2-3 and the w/o-leakage rows are parts of their own.
PARTS: dict[str, Part] = {
    "released": Part("released", "SciNCL Table 1's SciNCL row (malteos/scincl on SciDocs) and thesis Table 6.9 "
                     "(malteos/scincl on MDCR) by inference", headline=True,
                     t4="all of it in 1 Colab session: inference and CPU scoring, no training"),
    "main": Part("main", "SciNCL Table 1's SciNCL row (one seed) and Table 2's SPECTER row as SPECTER's sampling on the "
                 "same graph; Table 5 (link prediction) and Fig. 5 (collisions) on that graph", headline=True,
                 t4="about 2 Colab sessions of 12 h: the graph embedding and kNN search on the CPU, then two "
                    "trainings (resume = True in each new session)"),
    "seeds": Part("seeds", "Table 1's ±σ row: the leaderboard models trained with the next seeds (ten in all)",
                  t4="about 13 Colab sessions of 12 h (nine more seeds of two models): a workstation GPU's job"),
    "ablations": Part("ablations", "Table 2's rows (k-hard, plain-random easy negatives, 1 % and 10 % of the data, "
                      "BitFit; the Init. rows are not run), each over ablation_seeds",
                      t4="about 17 Colab sessions of 12 h (each row and seed one main training, the data-share "
                         "rows less): a workstation GPU's job"),
    "sweeps": Part("sweeps", "Figs. 2-3: the k+ and k-hard sweeps on 10 % of the queries, scored on SciDocs' "
                   "validation split", t4="about 5 Colab sessions of 12 h (each point and seed a tenth of a main "
                                          "training)"),
    "without_leakage": Part("without_leakage", "Table 1's w/o-leakage SciNCL row: SciNCL's bands on the graph of its "
                            "released w/o-leakage triples (specter_wol), SciNCL trained on the sampled triplets whose "
                            "papers have texts (s2ag_bulk_wol_texts, the bulk route) and scored on SciDocs and CSFCube; "
                            "the w/o-leakage SPECTER row is not trained",
                            t4="about 3 Colab sessions of 12 h: the texts' bulk fetch (≈ 3 h), the graph embedding "
                               "and kNN search on the CPU, then one training"),
}
PART_NEEDS = {"seeds": "main", "ablations": "main", "sweeps": "main"}

# ================================================================================================ sizes and rates
#: MDCR's documents (thesis §2.5.2: 200,033), all embedded for the released check.
MDCR_DOCUMENTS = paper_size("benchmark_sizes", "MDCR documents", "texts")
#: The unique papers of SciNCL's w/o-leakage triples (A.4: 680,967), every one a node of their graph's index.
WOL_PAPERS = paper_size("scincl_table4", "Unique paper IDs", "random_s2orc_without_leakage", ref="A.4")
#: PyTorch-BigGraph's training time per edge and epoch at 768 dimensions, one worker: measured on this book's 2-core
#: machine (benchmarks/results/graph_scale.txt: 495,015 edges × 1 epoch in 77.7 s); scaled ∝ dimension (assumed).
PBG_SECONDS_PER_EDGE_EPOCH = 1.570e-04
#: Exact (flat) FAISS search, seconds per query × indexed paper × dimension: measured on the same machine
#: (benchmarks/results/graph_scale.txt: 100 queries over 1,000,000 × 768 in 66.0 s).
FLAT_SEARCH_SECONDS = 8.592e-10
#: Reading a given graph embedding (``graph_embedding``; benchmarks/results/given_embedding.txt, the same machine):
#: seconds an id of ``ids.txt`` (:func:`sdr.graph.given.read_given_embedding`, 10 M ids in 6.27 s) and seconds a GiB
#: of the training papers' rows (``restrict``, 312,436 rows of 768 d in 4.90 s, page cache warm: a cold disk adds its
#: read time); the given embedding's size is taken as S2ORC's graph (SciNCL Table 4: 52,526,134 nodes).
GIVEN_EMBEDDING_READ = {"seconds_per_id": 6.27e-07, "seconds_per_gib_of_rows": 5.48}
GIVEN_EMBEDDING_NODES = 52_526_134


def _graph(part: str, what: str, edges: int, nodes: int, p, how_nodes: str) -> Work:
    hours = edges * p.graph_epochs * PBG_SECONDS_PER_EDGE_EPOCH * p.graph_dimension / 768 / 3600
    return Work(part, what, "graph", hours=hours, hours_on="CPU",
                how=f"≤ {edges:,} edges ({how_nodes}: {nodes:,} nodes) × {p.graph_epochs} epochs at "
                    f"{p.graph_dimension} d: {PBG_SECONDS_PER_EDGE_EPOCH:.3g} s an edge-epoch at 768 d, one worker "
                    "(measured on this book's 2-core CPU, benchmarks/results/graph_scale.txt)")


def _given_embedding_read(given: str, rows: int, dimension: int) -> Work:
    """Reading ``graph_embedding``: every id of an embedding of S2ORC's size, then ≤ ``rows`` memory-mapped rows."""
    row_gib = rows * dimension * 4 / 2**30
    seconds = (GIVEN_EMBEDDING_NODES * GIVEN_EMBEDDING_READ["seconds_per_id"]
               + row_gib * GIVEN_EMBEDDING_READ["seconds_per_gib_of_rows"])
    return Work("main", "read the given S2ORC graph embedding (graph_embedding): the training papers' rows", "graph",
                hours=seconds / 3600, hours_on="CPU",
                how=f"{GIVEN_EMBEDDING_NODES:,} ids × {GIVEN_EMBEDDING_READ['seconds_per_id'] * 1e6:.3g} µs and ≤ "
                    f"{rows:,} memory-mapped rows of {given} ({row_gib:.2f} GiB at {dimension} d) × "
                    f"{GIVEN_EMBEDDING_READ['seconds_per_gib_of_rows']:.3g} s a GiB (measured on this book's 2-core "
                    "CPU, page cache warm, benchmarks/results/given_embedding.txt; the embedding itself is made "
                    "beforehand by `sdr graph embed`, README: The citation graph at scale)")


def _search(part: str, what: str, queries: int, nodes: int, dimension: int, runs: int = 1) -> Work:
    hours = queries * nodes * dimension * FLAT_SEARCH_SECONDS / 3600
    return Work(part, what, "knn", runs=runs, hours=hours, hours_on="CPU",
                how=f"exact search of {queries:,} queries over {nodes:,} papers × {dimension} d: "
                    f"{FLAT_SEARCH_SECONDS:.3g} s a query·paper·dimension (measured on this book's 2-core CPU)")


def _train(part: str, what: str, examples: int, p, runs: int = 1, epochs: int | None = None) -> Work:
    tokens = min(TOKENS_PER_TEXT, p.max_length)
    return Work(part, what, "train", runs=runs, examples=examples, epochs=epochs or p.epochs,
                effective_batch=p.batch_size * p.accumulation_steps, texts_per_example=3, tokens_per_text=tokens,
                how=f"{examples:,} triplets (5 a query), 3 texts of ≤ {tokens} tokens (assumed mean {TOKENS_PER_TEXT})")


def cost_plan(p) -> CostPlan:
    """Everything the SciNCL chapter does with parameters ``p`` (the notebook's), part by part: the graph of SPECTER's
    triplets (every paper of them when ``index_every_paper``; SciNCL Table 3: 311,860) embedded with BigGraph, the
    exact kNN searches (the main queries, Fig. 5's share, the band check, one per retrained SciNCL seed, Table 2 row
    and sweep seed), the trainings (5 triplets a query of ``max_queries`` query papers, all 136,820 of Table 4 when
    0), the SciDocs/CSFCube encodings and SciDocs scoring of every scored model, the released model on SciDocs and
    MDCR, the w/o-leakage part (its texts' bulk fetch, :func:`sdr.fetchers.bulk.bulk_fetch_work`; its graph of
    680,967 papers, A.4; its training, SciDocs and CSFCube) and the fetches."""
    from sdr.fetchers.bulk import bulk_fetch_work
    from sdr.methods.scincl.ablations import table2_plan, table2_seeds
    from sdr.methods.scincl.recipe import clip_bands, scaled_bands, share_of_queries, sweep_points

    selected = resolve_parts(getattr(p, "parts", "all"), PARTS)
    nodes = SPECTER_PAPERS
    node_words = "every paper of SPECTER's triplets" if p.index_every_paper else "at most every paper of the triplets"
    queries = query_count(p.max_queries)
    examples = 5 * queries
    all_queries = [str(i) for i in range(SPECTER_QUERIES)]
    main_queries = all_queries[:queries]
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
    collision_queries = len(share_of_queries(all_queries, p.collision_fraction, p.seed))
    shared = collision_queries == queries and p.collision_fraction == 1.0 and not p.max_queries
    band_check = queries if not p.band_check_queries else min(p.band_check_queries, queries)
    given = getattr(p, "graph_embedding", "")
    # with a given embedding of S2ORC's graph nothing is embedded here: its rows of the training papers are read
    graph_work = (_given_embedding_read(given, nodes, d)
                  if given else
                  _graph("main", "BigGraph embedding of SPECTER's triplet graph", SPECTER_TRIPLETS, nodes, p,
                         node_words))
    work += [
        graph_work,
        _search("main", "kNN bands of the main queries", queries, nodes, d),
        _search("main", "kNN bands of Fig. 5's queries (collision sweep)", collision_queries, nodes, d,
                runs=0 if shared else 1),
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
             _search("seeds", "kNN bands sampled again for each extra SciNCL seed", queries, nodes, d,
                     runs=extra_seeds * ("SciNCL" in leaderboard)),
             encode_work("seeds", "CSFCube: each extra seed's models", CSFCUBE_PAPERS, p.csfcube_max_length,
                         runs=extra_seeds * len(leaderboard))]
    row_seeds = table2_seeds(p)
    rows = table2_plan(p.ablations, p.table2_k_hard_shares, p.data_fractions, main_queries, p.seed)
    if rows:
        work.append(_train("ablations", "Table 2 reference: the main run with the other seeds", examples, p,
                           runs=len(row_seeds) - 1))
        work.append(_search("ablations", "Table 2 reference: kNN bands for the other seeds", queries, nodes, d,
                            runs=len(row_seeds) - 1))
    for row, count in rows:  # every row samples its own kNN triplets for each seed
        work.append(_train("ablations", f"Table 2: {row}", 5 * count, p, runs=len(row_seeds)))
        work.append(_search("ablations", f"Table 2: {row}, kNN bands", count, nodes, d, runs=len(row_seeds)))
    table2_runs = len(rows) * len(row_seeds) + (len(row_seeds) - 1 if rows else 0)
    if table2_runs:
        work += [encode_work("ablations", "SciDocs: every Table 2 run", SCIDOCS_PAPERS, p.max_length, runs=table2_runs),
                 scidocs_scoring_work("ablations", "SciDocs scoring of every Table 2 run", table2_runs,
                                      p.table2_recommendations)]
    bands = clip_bands(replace(scaled_bands(nodes), **{k: v for k, v in (("k_pos", p.k_pos), ("k_hard", p.k_hard))
                                                         if v}), nodes)
    points = sweep_points(bands, nodes, p.sweeps, p.k_pos_sweep, p.k_hard_sweep)
    sweep_queries = len(share_of_queries(all_queries, p.sweep_fraction, p.seed))
    if points:
        runs = len(points) * len(p.sweep_seeds)
        work += [_search("sweeps", "kNN bands of the sweep queries (one search a seed)", sweep_queries, nodes, d,
                         runs=len(p.sweep_seeds)),
                 _train("sweeps", "Figs. 2-3: every point and seed", 5 * sweep_queries, p, runs=runs,
                        epochs=p.sweep_epochs),
                 encode_work("sweeps", "SciDocs (validation): every point and seed", SCIDOCS_PAPERS, p.max_length,
                             runs=runs),
                 scidocs_scoring_work("sweeps", "SciDocs scoring (validation) of every point and seed", runs,
                                      p.sweep_recommendations)]
    wol_queries = query_count(p.max_queries)
    wol_csfcube = "SciNCL" in (p.csfcube_models or ["SciNCL"])
    work += [download_work("without_leakage", "specter_wol"),
             bulk_fetch_work("s2ag_bulk_wol_texts", "without_leakage"),
             (Work("without_leakage", "read the given S2ORC graph embedding (graph_embedding): the w/o-leakage "
                   "papers' rows", "graph", hours=0.0, hours_on="CPU",
                   how=f"ids file and ≤ {WOL_PAPERS:,} memory-mapped rows of {given} (not measured)")
              if given else
              _graph("without_leakage", "BigGraph embedding of the w/o-leakage triples' graph", SPECTER_TRIPLETS,
                     WOL_PAPERS, p, "every paper of the triples (A.4)")),
             _search("without_leakage", "kNN bands of the w/o-leakage queries", wol_queries, WOL_PAPERS, d),
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
#: bands unclipped (k-hard 4000 on a graph of more than 4,003 papers: the w/o-leakage fixture's), every training
#: paper in the FAISS index, and SciNCL trained on the w/o-leakage triplets with texts from the bulk route.
DRY_RUN_BRANCHES = ("released checks asserted", "training papers overlap SciDocs (with leakage)",
                    "leaderboard model trained with another seed", "paper bands unclipped (k-hard 4000)",
                    "every training paper indexed", "w/o-leakage SciNCL trained",
                    "released checkpoint's SciDocs vectors read from the cache")

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
    "query), not S2ORC's (Table 4: 52.5 M nodes); no row trained on it is set beside the paper's SciNCL row (give "
    "`graph_embedding`, an embedding of S2ORC's citation graph, to sample on SciNCL's graph).")
#: With ``graph_embedding``: SciNCL's bands are on S2ORC's graph, SPECTER's sampling still on the triplets' citations.
GIVEN_GRAPH_DEVIATION = (
    "SciNCL's bands are searched on the given embedding of S2ORC's citation graph (`graph_embedding`: {path}), "
    "restricted to the training papers found in it; the SPECTER-sampling baseline still draws from the citations "
    "inside SPECTER's triplets, and Table 2's leakage row embeds its own graph.")
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
    if given:
        index = ("the FAISS index holds the training papers found in the given embedding (SciNCL indexes every "
                 "training paper, A.4; the page counts those not found)")
    graph = GIVEN_GRAPH_DEVIATION.format(path=given) if given else TRIPLET_GRAPH_DEVIATION
    fixed = [f"SciNCL does not state its learning-rate schedule; this run uses {schedule}.", f"Index: {index}.",
             graph, *SCINCL_DEVIATIONS, WOL_DEVIATION.format(graph=WOL_GRAPHS[bool(given)])]
    return deviations(run, PAPER_SETTINGS, keys=[*run.method.TRAINING_PARAMETERS, "recommendations",
                                                 "csfcube_max_length"], fixed=fixed)
