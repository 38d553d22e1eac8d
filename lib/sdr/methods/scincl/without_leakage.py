"""SciNCL Table 1's w/o-leakage rows (the ``without_leakage`` part): SciNCL's released w/o-leakage triples
(``specter_wol``: query, positive and negative as S2 corpus ids, 684,100 triplets of random S2ORC queries that share
no query paper with SciDocs, Table 4), their citation graph embedded with the chapter's BigGraph settings, and the
paper's bands sampled on it — the graph has 680,967 papers (A.4), so k-hard 4000 is taken as the paper took it.

The triples carry no text: the titles and abstracts of their papers come from Semantic Scholar's bulk ``papers`` and
``abstracts`` datasets filtered to the triples' corpus ids (the registry's ``s2ag_bulk_wol_texts``, issue 36's bulk
route; :func:`read_wol_texts`). SciNCL is then trained on the sampled triplets whose three papers have a text — the
others are dropped and counted (:func:`triplets_with_texts`), never silently — with the main run's training function,
settings and schedule, and scored on SciDocs (and CSFCube where the main run scores SciNCL there). Its row is set
beside SciNCL Table 1's w/o-leakage row only by the chapter's one pairing rule
(:func:`sdr.methods.scincl.paper_pairs`): same queries (SciNCL's random S2ORC queries w/o leakage), but the graph is
the triples' own (query → positive), not S2ORC's citation graph, so the rule shows it apart with that reason — unless
``graph_embedding`` gives an embedding of S2ORC's citation graph: then the bands are sampled on its rows of the
triples' papers (:func:`given_wol_embedding`), SciNCL's graph, and with every query used the row pairs.

Shown in: notebooks/scincl.ipynb, Table 1 without leakage.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from sdr.book.chapter import ChapterCheckFailed
from sdr.methods import specter
from sdr.methods.scincl.chapter import S2ORC_GRAPH
from sdr.methods.scincl.recipe import (PAPER_BANDS, Bands, clip_bands, collision_grid, collision_sweep, query_papers,
                                       sample_triplets, scaled_bands, share_of_queries)

__all__ = ["WOL_FILE", "WOL_TEXTS", "WOL_GRAPH", "WOL_ROW", "read_wol_triples", "texts_by_corpus_id", "WolTexts",
           "read_wol_texts", "wol_origin", "triplets_with_texts", "WithoutLeakage", "without_leakage",
           "given_wol_embedding"]

WOL_FILE = "specter-wol__train_triples.csv"
#: The registry dataset of the triples' texts (the bulk route, :mod:`sdr.fetchers.bulk`).
WOL_TEXTS = "s2ag_bulk_wol_texts"
#: The graph the part samples on, in the words of the paper rows' origins (:data:`sdr.methods.specter.PAPER_ROWS`).
WOL_GRAPH = "the w/o-leakage triples' graph (query → positive)"
#: The page name of the part's trained row.
WOL_ROW = "SciNCL w/o leakage (released triples)"


def read_wol_triples(path: str | Path) -> list[tuple[str, str, str]]:
    """SciNCL's w/o-leakage triples (``query_paper_id,positive_id,negative_id``; a header row is skipped): ids as
    strings. A row without three non-empty ids is an error naming the file and line."""
    path = Path(path)
    triples = []
    with path.open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            if not row:
                continue
            if number == 1 and not row[0].strip().isdigit() and row[0].strip().endswith("_id"):
                continue
            cells = [cell.strip() for cell in row]
            if len(cells) != 3 or not all(cells):
                raise ValueError(f"{path}:{number}: expected query_paper_id,positive_id,negative_id, got {row!r}")
            triples.append((cells[0], cells[1], cells[2]))
    if not triples:
        raise ValueError(f"{path}: no triples (expected query_paper_id,positive_id,negative_id rows)")
    return triples


def texts_by_corpus_id(training: specter.TrainingSet) -> dict[str, object]:
    """The papers of SPECTER's training triplets by S2 corpus id (each side carries its ``corpus_id`` and ``sha``):
    the w/o-leakage queries found there are checked against SciDocs by sha (the bulk texts carry no sha)."""
    return {str(paper.metadata["corpus_id"]): paper for paper in training.papers.values()
            if paper.metadata.get("corpus_id") is not None}


@dataclass
class WolTexts:
    """The texts of the w/o-leakage papers read from the bulk route's folder: papers by corpus id, and the counts
    of ``ids.txt`` (asked for), ``missing.jsonl`` (the release lacks them) and the papers without an abstract."""

    papers: dict
    asked: int
    missing: int
    without_abstract: int
    source: str = ""

    def describe(self) -> str:
        return (f"{len(self.papers):,} of the {self.asked:,} papers of the triples have a text in {self.source} "
                f"({self.without_abstract:,} of them a title only); {self.missing:,} are not in the release's papers "
                "dataset")


def read_wol_texts(folder: str | Path) -> WolTexts:
    """The bulk route's texts (``papers.jsonl``: ``{"paperId": corpus id, "title", "abstract", …}``, the Graph API's
    ``/paper/batch`` layout; ``missing.jsonl``; ``ids.txt``) as :class:`sdr.corpus.Paper` by corpus id (``metadata``
    keeps ``corpus_id``). A paper with an empty title has no text (counted as missing); a record without
    ``paperId`` is an error naming the file and line."""
    from sdr.corpus import Paper
    from sdr.jsonio import read_jsonl

    folder = Path(folder)
    papers, without_abstract, untitled = {}, 0, 0
    for number, record in read_jsonl(folder / "papers.jsonl", "a paper record {paperId, title, abstract}",
                                     allow_empty=True):
        pid = str(record.get("paperId") or "")
        if not pid.isdigit():
            raise ValueError(f"{folder / 'papers.jsonl'}:{number}: expected a corpus id as paperId, got {pid!r}")
        title, abstract = (record.get("title") or "").strip(), (record.get("abstract") or "").strip()
        if not title:
            untitled += 1
            continue
        without_abstract += not abstract
        papers[pid] = Paper(pid, title, abstract, year=record.get("year"), metadata={"corpus_id": int(pid)})
    missing = sum(1 for _ in read_jsonl(folder / "missing.jsonl", "a missing-paper record", allow_empty=True))
    asked = sum(1 for line in (folder / "ids.txt").read_text(encoding="utf-8").splitlines() if line.strip())
    return WolTexts(papers, asked, missing + untitled, without_abstract, folder.name)


def wol_origin(graph: str, queries: int, all_queries: int) -> str:
    """The training data of a w/o-leakage SciNCL row in :data:`sdr.methods.specter.PAPER_ROWS`' words: SciNCL's bands
    on ``graph`` for SciNCL's released w/o-leakage queries (all of them, or ``queries`` of ``all_queries``). Table 1's
    w/o-leakage SciNCL row reads "SciNCL's kNN bands on S2ORC's citation graph, random S2ORC queries w/o leakage"."""
    share = "" if queries == all_queries else f" ({queries:,} of their {all_queries:,} query papers)"
    return f"SciNCL's kNN bands on {graph}, random S2ORC queries w/o leakage{share}"


def triplets_with_texts(triplets, texts) -> tuple[list, dict]:
    """The triplets whose query, positive and negative all have a text in ``texts``, and what was dropped:
    ``{"triplets", "dropped", "papers without text"}`` (the distinct papers of the dropped triplets that lack one)."""
    kept, lacking, dropped = [], set(), 0
    for triplet in triplets:
        absent = [pid for pid in (triplet.query, triplet.positive, triplet.negative) if pid not in texts]
        if absent:
            dropped += 1
            lacking.update(absent)
        else:
            kept.append(triplet)
    return kept, {"triplets": len(triplets), "dropped": dropped, "papers without text": len(lacking)}


@dataclass
class WithoutLeakage:
    """What the part did: its counts beside Table 4's w/o-leakage column, the bands, the link prediction, and why
    nothing trained."""

    ran: bool
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    collisions: pd.DataFrame = field(default_factory=pd.DataFrame)
    bands: Bands | None = None
    link_prediction: dict = field(default_factory=dict)
    note: str = ""
    scores: pd.DataFrame = field(default_factory=pd.DataFrame)  # SciDocs rows of the trained model (page name index)
    csfcube: pd.DataFrame = field(default_factory=pd.DataFrame)
    dropped: dict = field(default_factory=dict)  # triplets_with_texts' counts
    origins: dict = field(default_factory=dict)  # page name → its training data in PAPER_ROWS' words

    @property
    def trained(self) -> bool:
        return len(self.scores) > 0

    def describe(self) -> str:
        return self.note


def without_leakage(run, inputs, training: specter.TrainingSet) -> WithoutLeakage:
    """The ``without_leakage`` part at ``paper``: read SciNCL's w/o-leakage triples, embed their citation graph
    (query → positive; every paper of the triples in the index with ``index_every_paper``) with the chapter's
    BigGraph settings, take the profile's bands (the paper's: k+ 25, k-hard 4000) clipped to the graph, sample SciNCL's
    triplets for ``max_queries`` of its query papers and check every sampled triplet's ranks against its band
    (``band_check_queries`` of them), and sweep the collisions against k-hard on ``collision_fraction`` of its
    queries (Fig. 5, checked by :func:`sdr.methods.scincl.fig5_shape`). Its query papers that SPECTER's triplets map to
    a sha must not be SciDocs test or validation papers (Table 4: none is).

    Then SciNCL is trained on the sampled triplets whose three papers have a text in ``s2ag_bulk_wol_texts``
    (:func:`triplets_with_texts`: the others are dropped and counted on the page), with the main run's training
    function, settings and schedule (:func:`sdr.methods.specter.train_triplet_models`,
    :func:`sdr.methods.scincl.train_config`), its triplet loss checked as the main runs' is, and scored on SciDocs
    with Table 2's task averages (and on CSFCube when ``csfcube_models`` names SciNCL): the rows :data:`WOL_ROW`.
    Elsewhere (smoke, real) the released triples are not read: one line says so."""
    from sdr.corpus import CitationGraph
    from sdr.evaluate import scidocs
    from sdr.graph import embed
    from sdr.methods.scincl.chapter import fig5_shape, graph_config, train_config
    from sdr.methods.scincl.recipe import with_task_averages
    from sdr.samplers import band_check

    p = run.p
    if not run.runs_part("without_leakage"):
        return WithoutLeakage(False, note="not run (parts)")
    if not run.data.policy.real_only:
        note = ("Table 1's w/o-leakage rows read SciNCL's released triples (specter_wol) at the paper profile; no "
                "replica of them is written.")
        print(note)
        return WithoutLeakage(False, note=note)
    path = run.data.input("specter_wol", role="training").file(WOL_FILE)
    triples = read_wol_triples(path)
    graph = CitationGraph()
    for query, positive, _ in triples:
        if query != positive and (query, positive) not in graph:
            graph.add(query, positive)
    papers = sorted({pid for triple in triples for pid in triple})
    given = getattr(p, "graph_embedding", "")
    graph_words = WOL_GRAPH
    if given:  # SciNCL's own graph (S2ORC's, embedded beforehand) when embedding.json says so: its rows of the papers
        embedding, given_line, graph_words = given_wol_embedding(run, papers, given)
        print(given_line)
    else:
        embedding = embed(graph, graph_config(p), nodes=papers if p.index_every_paper else None)
    n_nodes = len(embedding.ids)
    requested = replace(scaled_bands(n_nodes), **{k: v for k, v in (("k_pos", p.k_pos), ("k_hard", p.k_hard)) if v})
    bands = clip_bands(requested, n_nodes)
    if bands == requested and bands.k_hard == PAPER_BANDS.k_hard:
        run.branch("paper bands unclipped (k-hard 4000)")
    have = set(embedding.ids)
    all_queries = [q for q in query_papers(graph) if q in have]  # with a given embedding: those it holds
    queries = specter.take_queries(all_queries, p.max_queries, p.seed)
    triplets, report = sample_triplets(embedding, bands, queries, p.seed)
    checked_queries = set(specter.take_queries(queries, p.band_check_queries, p.seed))
    checked = [t for t in triplets if t.query in checked_queries]
    ranks = band_check(checked, embedding.vectors, embedding.ids, bands, metric=embedding.metric)
    outside = ranks[~(ranks["positive_in_band"] & ranks["negative_in_band"])]
    if len(outside) or len(triplets) != (bands.c_hard + bands.c_easy) * report.queries_used:
        raise ChapterCheckFailed(f"w/o leakage: {len(outside)} of {len(checked)} checked triplets outside their bands "
                                 f"({bands.describe()}), {len(triplets)} triplets for {report.queries_used} queries")
    collisions = collision_sweep(embedding, bands, collision_grid(bands, n_nodes, p.collision_k_hard),
                                 query_ids=share_of_queries(all_queries, p.collision_fraction, p.seed), seed=p.seed)
    fig5_shape(run, collisions, max(collision_grid(bands, 2**62, p.collision_k_hard)), n_nodes,
               ("S2ORC's graph (w/o-leakage papers)" if graph_words == S2ORC_GRAPH else
                "the given embedding's graph (w/o-leakage papers)") if given else "the w/o-leakage triples' graph")
    specter_texts = texts_by_corpus_id(training)
    shas = {specter_texts[q].metadata.get("sha") for q in queries if q in specter_texts} - {None}
    in_scidocs = shas & (scidocs.split_paper_ids(inputs.scidocs.path, "test")
                         | scidocs.split_paper_ids(inputs.scidocs.path, "val"))
    if in_scidocs:
        raise ChapterCheckFailed(f"SciNCL's w/o-leakage triples: {len(in_scidocs)} query papers are SciDocs test or "
                                 f"validation papers (Table 4: none), e.g. {sorted(in_scidocs)[:3]}")
    texts = read_wol_texts(run.data.input(WOL_TEXTS, role="training").path)
    kept, dropped = triplets_with_texts(triplets, texts.papers)
    if not kept:
        raise ChapterCheckFailed(f"w/o leakage: none of the {len(triplets):,} sampled triplets has texts for its three "
                                 f"papers ({texts.describe()})")
    table4 = _table4_without_leakage()
    ours = {"Training triplets": len(triples), "Unique paper IDs": len(papers),
            "Query paper IDs": len(all_queries), "Nodes": n_nodes, "Edges": None if given else len(graph)}
    table = pd.DataFrame({"SciNCL Table 4 / A.4 (w/o leakage)": {k: table4.get(k) for k in ours},
                          f"this book ({run.profile}, SciNCL's released triples"
                          f"{'; nodes: those in the given S2ORC embedding' if given else ''})": ours})
    trained_on = (f"{len(kept):,} triplets" + (f" ({dropped['dropped']:,} of the {len(triplets):,} sampled dropped: "
                                               f"{dropped['papers without text']:,} of their papers have no text)"
                                               if dropped["dropped"] else " (every sampled triplet has its texts)"))
    note = (f"{bands.describe()} on {n_nodes:,} nodes: {len(triplets):,} triplets sampled for {len(queries):,} query "
            f"papers, band invariants hold on {len(checked):,} of them; {len(shas):,} query papers map to a SciDocs "
            f"sha, none is a SciDocs test or validation paper. Texts: {texts.describe()}. {WOL_ROW} is trained on "
            f"{trained_on}.")
    print(note)
    run.show(table, decimals=None)
    fits = specter.train_triplet_models(run, {WOL_ROW: ("SciNCL_without_leakage", kept)}, texts.papers,
                                        train_config(run), probe=64)
    run.branch("w/o-leakage SciNCL trained")
    run.show(specter.expect_lower_loss(run, fits), decimals=4)
    fit = fits[WOL_ROW]
    scores = specter.scidocs_table(run, inputs, {WOL_ROW: fit.encoder}, extend=with_task_averages)
    csfcube = pd.DataFrame()
    if "SciNCL" in (p.csfcube_models or ["SciNCL"]):
        fit.encoder.max_length = p.csfcube_max_length
        csfcube = specter.csfcube_scores({WOL_ROW: fit.encoder}, inputs.csfcube.path, official_specter=False)
        fit.encoder.max_length = p.max_length
    run.fits.pop(WOL_ROW, None)  # scored: at paper a SciBERT on the GPU, not kept
    # the data source in the paper rows' words: the graph and the released queries (the triplets dropped for lacking a
    # text are a stated deviation, sdr.methods.scincl.paper.WOL_DEVIATION, counted above)
    origins = {WOL_ROW: wol_origin(graph_words, len(queries), len(all_queries))}
    run.show(scores)
    if len(csfcube):
        run.show(csfcube)
    return WithoutLeakage(True, table, collisions, bands, dict(embedding.link_prediction), note, scores, csfcube,
                          dropped, origins)


def given_wol_embedding(run, papers, path: str):
    """The rows of the w/o-leakage triples' papers (``papers``: corpus ids) in a given embedding of S2ORC's citation
    graph (``graph_embedding``), read as the main part reads its own (:func:`sdr.methods.scincl.given_rows`: the
    comparator and the share found checked; SciNCL's index held every training paper, A.4). Returns the embedding,
    the line that counts them and its graph in the paper rows' words (:func:`sdr.methods.scincl.given_graph`:
    :data:`S2ORC_GRAPH` only when its embedding.json names the s2orc_citation_graph dataset, else the reason)."""
    from sdr.methods.scincl.chapter import given_graph, given_rows

    def described(found: int, total: int, given) -> str:
        return (f"w/o leakage: {found:,} of the {total:,} papers of SciNCL's released triples found in the given "
                f"S2ORC embedding ({len(given.corpus_ids):,} nodes); the other {total - found:,} are not in the "
                "FAISS index")

    embedding, given, line = given_rows(run, path, {pid: pid for pid in papers}, described)
    return embedding, line, given_graph(given)[0]


def _table4_without_leakage() -> dict:
    from sdr import book

    table = book.read_paper_table("scincl_table4").groupby("model", sort=False)["random_s2orc_without_leakage"].first()
    return {name: (int(value) if pd.notna(value) else None) for name, value in table.items()}
