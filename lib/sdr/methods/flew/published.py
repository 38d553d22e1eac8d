"""FLeW's published recipe beside the book's (issue 37): the released triplets compared with the ones re-sampled here,
and three facet encoders trained on the released triplets with the released split abstracts.

At ``paper`` the book's own recipe changes four things at once — the graph (the run's citation input: at ``paper``
S2AG's bulk datasets of a current release, s2ag_bulk_flew; the page's line names it, flew.fidelity.graph_source), the
bands (FLeW gives no k), the splitter (a CSAbstruct classifier for FLeW's LLM) and the weight tuning — so a gap
to Tables 1-3 could not be traced. The ``published`` part trains on exactly what FLeW released
(``flew_triplets`` and ``flew_split_metadata``, Miracle-dz/FLeW-data): only the weight tuning differs from the
paper, and its rows stand beside the book's recipe's. :func:`compare_triplet_sets` (part ``main``) measures how the
re-sampled triplets differ from the released ones: shared queries and (query, positive) pairs, and where the
released positives and negatives fall in this book's facet embeddings (its bands).

Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs (the comparison) and 3. Three facet encoders (the
published recipe).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sdr.book.chapter import ChapterCheckFailed
from sdr.corpus import Paper
from sdr.facets import FACETS
from sdr.jsonio import InputError, read_jsonl

__all__ = ["PUBLISHED", "PUBLISHED_SUM", "read_split_metadata", "TripletComparison", "compare_triplet_sets",
           "PublishedRecipe", "published_recipe"]

#: The published recipe's encoders and their tuned sum, by facet (page names).
PUBLISHED = {"background": "FLeW-bg (published recipe)", "method": "FLeW-mt (published recipe)",
             "result": "FLeW-rs (published recipe)"}
PUBLISHED_SUM = "FLeW (published recipe)"
_ID_KEYS = ("corpus_id", "corpusid", "corpusId", "CorpusId", "paper_id", "id")


def read_split_metadata(path: str | Path, facet: str, ids: Iterable[str] | None = None) -> dict[str, Paper]:
    """``{corpus id: Paper}`` from a released ``<facet>_split_triplets_metadata.jsonl``: one paper a line with its S2
    corpus id (``corpus_id``, ``corpusid``, ``corpusId``, ``paper_id`` or ``id``), ``title`` and the abstract cut to
    the facet (``abstract``, or a key named after the facet). The release does not document its layout: any other
    line stops the chapter with the file, the line and the keys it found. ``ids`` keeps only those papers (the
    triplets'); an empty abstract is kept (the paper's input is then its title, as in the book's own recipe)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: FLeW's split-abstract file not found (sdr data fetch flew_split_metadata)")
    wanted = None if ids is None else set(map(str, ids))
    papers: dict[str, Paper] = {}
    for number, record in read_jsonl(path, "one paper a line: its corpus id, 'title' and the facet's text"):
        key = next((k for k in _ID_KEYS if record.get(k) is not None), None)
        text_key = "abstract" if "abstract" in record else facet if facet in record else None
        if key is None or "title" not in record or text_key is None:
            raise InputError(f"{path}:{number}: expected a corpus id ({', '.join(_ID_KEYS)}), 'title' and the "
                             f"{facet} text ('abstract' or {facet!r}); found keys {sorted(record)}")
        pid = str(record[key])
        if not pid.isdigit():
            raise InputError(f"{path}:{number}: {key} {record[key]!r} is not an S2 corpus id (digits)")
        if wanted is not None and pid not in wanted:
            continue
        text = record[text_key]
        if isinstance(text, list):  # a list of sentences
            text = " ".join(map(str, text))
        papers[pid] = Paper(pid, str(record.get("title") or ""), str(text or ""))
    return papers


# ------------------------------------------------------------------------------------------------- the comparison
@dataclass
class TripletComparison:
    """Per facet, the released triplets of the trained queries beside the re-sampled ones."""

    table: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def empty(self) -> bool:
        return self.table.empty


def _rank_shares(released, embedding, bands) -> dict:
    """Where the released triplets' positives and negatives fall in one of this book's facet embeddings."""
    from sdr.samplers import Triplet
    from sdr.samplers.bands import band_check

    known = set(embedding.ids)
    inside = [Triplet(q, p, n, "released") for q, p, n in released if q in known and p in known and n in known]
    if not inside:
        return {"released triplets inside our graph": 0}
    ranks = band_check(inside, embedding.vectors, embedding.ids, bands, metric=embedding.metric)
    positive, negative = ranks["positive_rank"], ranks["negative_rank"]
    return {
        "released triplets inside our graph": len(inside),
        f"released positives in our top k⁺ = {bands.k_pos}": float(((positive > 0)
                                                                   & (positive <= bands.k_pos)).mean()),
        "released positives in our positive band": float(ranks["positive_in_band"].mean()),
        f"released negatives in our top k⁻hard = {bands.k_hard}": float((negative > 0).mean()),
        "released negatives in our hard band": float(((negative > bands.k_hard - bands.c_hard)
                                                      & (negative <= bands.k_hard)).mean()),
    }


def compare_triplet_sets(run, inputs, queries, sampling, graph) -> TripletComparison:
    """The released triplets of the queries trained here (corpus ids mapped to the fetched papers) beside the
    re-sampled ones, per facet: the queries in both, the (query, positive) pairs they share, the released positives
    that are edges of our facet subgraph, the released papers our graph lacks, distinct positives per query in each
    set, and where the released positives and negatives rank in our facet embedding (top k⁺, our positive band,
    top k⁻hard, our hard band).

    Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs from the citation graph."""
    from sdr.methods.flew.recipe import corpus_id_map, facet_edges, read_released_triplets

    paper_of = corpus_id_map(inputs.citations.path)
    trained = set(queries.train)
    rows = []
    for facet in FACETS:
        released = [tuple(paper_of.get(pid, f"corpus:{pid}") for pid in triplet)
                    for triplet in read_released_triplets(inputs.triplets.file(f"{facet}_training_triplet.csv"))]
        released = [t for t in released if t[0] in trained]
        ours = sampling.triplets[facet]
        ours_pairs = {(t.query, t.positive) for t in ours}
        released_pairs = {(q, p) for q, p, _ in released}
        edges = {(a, b) for a, b, _ in facet_edges(graph.graph, facet)}
        papers = {pid for t in released for pid in t}
        positives = pd.DataFrame(released, columns=["query", "positive", "negative"]) if released else None
        ours_positives = pd.DataFrame([(t.query, t.positive) for t in ours], columns=["query", "positive"]) \
            if ours else None
        rows.append({
            "facet": facet, "released triplets (trained queries)": len(released), "re-sampled triplets": len(ours),
            "queries in both": len({q for q, _, _ in released} & {t.query for t in ours}),
            "(query, positive) pairs shared": len(released_pairs & ours_pairs),
            "share of released pairs re-sampled": len(released_pairs & ours_pairs) / max(len(released_pairs), 1),
            "released positives cited in our facet subgraph": sum((q, p) in edges or (p, q) in edges
                                                                  for q, p in released_pairs)
            / max(len(released_pairs), 1),
            "released papers not in our graph": sum(pid.startswith("corpus:") or pid not in graph.graph.nodes
                                                    for pid in papers),
            "distinct positives a query (released, median)": float(positives.groupby("query")["positive"].nunique()
                                                                   .median()) if positives is not None else np.nan,
            "distinct positives a query (re-sampled, median)": float(ours_positives.groupby("query")["positive"]
                                                                     .nunique().median())
            if ours_positives is not None else np.nan,
            **_rank_shares(released, sampling.embeddings[facet], sampling.bands)})
    run.branch("released triplets compared with the re-sampled ones")
    return TripletComparison(pd.DataFrame(rows).set_index("facet"))


# ------------------------------------------------------------------------------------------------- the recipe
@dataclass
class PublishedRecipe:
    """The published recipe's training: per facet the released triplets trained on and the papers' split texts,
    the triplets left out because the release holds no text for one of their papers, and the table the page
    shows. Empty when the ``published`` part does not run."""

    triplets: dict = field(default_factory=dict)
    papers: dict = field(default_factory=dict)
    left_out: dict = field(default_factory=dict)
    table: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def empty(self) -> bool:
        return not self.triplets


def published_recipe(run, inputs, queries, training) -> PublishedRecipe:
    """The ``published`` part: per facet, the released triplets (at ``paper`` all of them; with ``max_queries``,
    those of the queries the book's recipe trains on, so both recipes see the same queries) with the released
    split abstracts of their papers, trained from the base model with the book's training settings (triplet loss,
    L2, margin 1) into :data:`PUBLISHED` encoders, added to ``training`` (their runs, fits and the tuned sum
    :data:`PUBLISHED_SUM`, which section 4 scores like every other system). A triplet whose paper the release holds
    no text for is left out and counted (more than 1 % of a facet's stops the chapter).

    Shown in: notebooks/flew.ipynb, 3. Three facet encoders (the published recipe)."""
    from sdr.methods.flew.recipe import corpus_id_map, read_released_triplets
    from sdr.samplers import Triplet

    if not run.runs_part("published"):
        return PublishedRecipe()
    p = run.p
    corpus_of = {paper: corpus for corpus, paper in corpus_id_map(inputs.citations.path).items()}
    subset = {corpus_of[q] for q in queries.train if q in corpus_of} if p.max_queries else None
    recipe, rows = PublishedRecipe(), []
    for facet in FACETS:
        released = read_released_triplets(inputs.triplets.file(f"{facet}_training_triplet.csv"))
        if subset is not None:
            released = [t for t in released if t[0] in subset]
        needed = {pid for t in released for pid in t}
        path = inputs.split_metadata.file(f"{facet}_split_triplets_metadata.jsonl")
        papers = read_split_metadata(path, facet, needed)
        kept = [Triplet(q, pos, neg, "released") for q, pos, neg in released
                if q in papers and pos in papers and neg in papers]
        left_out = len(released) - len(kept)
        if not kept or left_out > 0.01 * len(released):
            raise ChapterCheckFailed(f"{path}: no text for a paper of {left_out:,} of the {len(released):,} released "
                                     f"{facet} triplets (more than 1 %)")
        name = PUBLISHED[facet]
        recipe.triplets[facet], recipe.papers[facet], recipe.left_out[facet] = kept, papers, left_out
        training.runs[name] = (kept, papers)
        training.fits[name] = training.fit(name, p.seed, data=[inputs.triplets.source, inputs.split_metadata.source])
        fit = training.fits[name]
        rows.append({"encoder": name, "released triplets": len(released), "left out (no text)": left_out,
                     "papers": len(papers), "papers with an empty facet (title only)": sum(
                         not paper.abstract for paper in papers.values()),
                     "optimizer steps": fit.steps, "loss before training": fit.loss_before,
                     "loss after training": fit.loss_after})
    training.sums[PUBLISHED_SUM] = dict(PUBLISHED)
    recipe.table = pd.DataFrame(rows).set_index("encoder")
    run.branch("published recipe trained on the released triplets and split abstracts")
    # the same check as the book's recipe: every run lowered its loss by more than the measured noise
    from sdr.methods.flew.chapter import expect_trained

    expect_trained(run, training, list(PUBLISHED.values()))
    return recipe
