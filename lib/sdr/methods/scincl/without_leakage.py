"""SciNCL Table 1's w/o-leakage rows (the ``without_leakage`` part): SciNCL's released w/o-leakage triples
(``specter_wol``: query, positive and negative as S2 corpus ids, 684,100 triplets of random S2ORC queries that share
no query paper with SciDocs, Table 4), their citation graph embedded with the chapter's BigGraph settings, and the
paper's bands sampled on it — the graph has 680,967 papers (A.4), so k-hard 4000 is taken as the paper took it.

The triples carry no text: training on them needs each paper's title and abstract by corpus id, which only Semantic
Scholar's bulk ``papers`` and ``abstracts`` datasets give at this scale (issue 36's fetch route). Until a registry
dataset provides them, :func:`texts_by_corpus_id` finds the texts SPECTER's training triplets carry (they name a few
of the papers) and the part reports how many are missing instead of training: the hook is that function.

Shown in: notebooks/scincl.ipynb, Table 1 without leakage.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from sdr.book.chapter import ChapterCheckFailed
from sdr.methods import specter
from sdr.methods.scincl.recipe import (PAPER_BANDS, Bands, clip_bands, collision_grid, collision_sweep, query_papers,
                                       sample_triplets, scaled_bands, share_of_queries)

__all__ = ["WOL_FILE", "read_wol_triples", "texts_by_corpus_id", "WithoutLeakage", "without_leakage"]

WOL_FILE = "specter-wol__train_triples.csv"


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
    """The papers whose texts the chapter has, by S2 corpus id: those of SPECTER's training triplets (each side
    carries its ``corpus_id``). Issue 36's bulk ``papers``/``abstracts`` route is to extend this to every paper of
    the w/o-leakage triples."""
    return {str(paper.metadata["corpus_id"]): paper for paper in training.papers.values()
            if paper.metadata.get("corpus_id") is not None}


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

    def describe(self) -> str:
        return self.note


def without_leakage(run, inputs, training: specter.TrainingSet) -> WithoutLeakage:
    """The ``without_leakage`` part at ``paper``: read SciNCL's w/o-leakage triples, embed their citation graph
    (query → positive; every paper of the triples in the index with ``index_every_paper``) with the chapter's
    BigGraph settings, take the profile's bands (the paper's: k+ 25, k-hard 4000) clipped to the graph, sample SciNCL's
    triplets for ``max_queries`` of its query papers and check every sampled triplet's ranks against its band
    (``band_check_queries`` of them), and sweep the collisions against k-hard on ``collision_fraction`` of its
    queries (Fig. 5, checked by :func:`sdr.methods.scincl.fig5_shape`). Its query papers that SPECTER's triplets map to
    a sha must not be SciDocs test or validation papers (Table 4: none is). Training waits for the texts (module docstring): the table counts them.
    Elsewhere (smoke, real) the released triples are not read: one line says so."""
    from sdr.corpus import CitationGraph
    from sdr.evaluate import scidocs
    from sdr.graph import embed
    from sdr.methods.scincl.chapter import fig5_shape, graph_config
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
    embedding = embed(graph, graph_config(p), nodes=papers if p.index_every_paper else None)
    n_nodes = len(embedding.ids)
    requested = replace(scaled_bands(n_nodes), **{k: v for k, v in (("k_pos", p.k_pos), ("k_hard", p.k_hard)) if v})
    bands = clip_bands(requested, n_nodes)
    if bands == requested and bands.k_hard == PAPER_BANDS.k_hard:
        run.branch("paper bands unclipped (k-hard 4000)")
    queries = specter.take_queries(query_papers(graph), p.max_queries, p.seed)
    triplets, report = sample_triplets(embedding, bands, queries, p.seed)
    checked_queries = set(specter.take_queries(queries, p.band_check_queries, p.seed))
    checked = [t for t in triplets if t.query in checked_queries]
    ranks = band_check(checked, embedding.vectors, embedding.ids, bands, metric=embedding.metric)
    outside = ranks[~(ranks["positive_in_band"] & ranks["negative_in_band"])]
    if len(outside) or len(triplets) != (bands.c_hard + bands.c_easy) * report.queries_used:
        raise ChapterCheckFailed(f"w/o leakage: {len(outside)} of {len(checked)} checked triplets outside their bands "
                                 f"({bands.describe()}), {len(triplets)} triplets for {report.queries_used} queries")
    all_queries = query_papers(graph)
    collisions = collision_sweep(embedding, bands, collision_grid(bands, n_nodes, p.collision_k_hard),
                                 query_ids=share_of_queries(all_queries, p.collision_fraction, p.seed), seed=p.seed)
    fig5_shape(run, collisions, max(collision_grid(bands, 2**62, p.collision_k_hard)), n_nodes,
               "the w/o-leakage triples' graph")
    texts = texts_by_corpus_id(training)
    needed = {pid for t in triplets for pid in (t.query, t.positive, t.negative)}
    have = needed & set(texts)
    shas = {texts[q].metadata.get("sha") for q in queries if q in texts} - {None}
    in_scidocs = shas & (scidocs.split_paper_ids(inputs.scidocs.path, "test")
                         | scidocs.split_paper_ids(inputs.scidocs.path, "val"))
    if in_scidocs:
        raise ChapterCheckFailed(f"SciNCL's w/o-leakage triples: {len(in_scidocs)} query papers are SciDocs test or "
                                 f"validation papers (Table 4: none), e.g. {sorted(in_scidocs)[:3]}")
    table4 = _table4_without_leakage()
    ours = {"Training triplets": len(triples), "Unique paper IDs": len(papers),
            "Query paper IDs": len(all_queries), "Nodes": n_nodes, "Edges": len(graph)}
    table = pd.DataFrame({"SciNCL Table 4 / A.4 (w/o leakage)": {k: table4.get(k) for k in ours},
                          f"this book ({run.profile}, SciNCL's released triples)": ours})
    note = (f"{bands.describe()} on {n_nodes:,} nodes: {len(triplets):,} triplets sampled for {len(queries):,} query "
            f"papers, band invariants hold on {len(checked):,} of them; {len(shas):,} query papers map to a SciDocs "
            f"sha, none is a SciDocs test or validation paper. Texts: {len(have):,} of the {len(needed):,} papers of "
            "the sampled triplets have one (SPECTER's triplets name them); the others need Semantic Scholar's bulk "
            "papers and abstracts (issue 36), so the w/o-leakage rows are not trained.")
    print(note)
    run.show(table, decimals=None)
    return WithoutLeakage(True, table, collisions, bands, dict(embedding.link_prediction), note)


def _table4_without_leakage() -> dict:
    from sdr import book

    table = book.read_paper_table("scincl_table4").groupby("model", sort=False)["random_s2orc_without_leakage"].first()
    return {name: (int(value) if pd.notna(value) else None) for name, value in table.items()}
