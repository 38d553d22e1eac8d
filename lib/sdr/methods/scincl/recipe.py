"""SciNCL (Ostendorff et al. 2022, ``papers/001_…``): neighbourhood contrastive learning, the method.

The recipe, built from the shared modules:

1. embed the citation graph with PyTorch-BigGraph (:func:`sdr.graph.embed`, A.5 settings);
2. search the embeddings once with FAISS to ``max(k⁺, k⁻hard)`` neighbours, in the metric of the
   comparator (``dot`` → inner product, ``cos`` → cosine; :data:`sdr.graph.COMPARATOR_METRIC`), in blocks of
   queries that keep only the bands (:func:`sdr.samplers.knn_bands`; :func:`search_bands` serves several band
   settings — the main run and the k⁻hard sweep of Fig. 5 — with one search);
3. positives = the ``c⁺`` neighbours of the band ``(k⁺ − c⁺, k⁺]``, hard negatives = the band
   ``(k⁻hard − c⁻hard, k⁻hard]``, easy negatives = ``c⁻easy`` filtered-random papers (not among the
   ``max(k)`` neighbours) — :func:`sdr.samplers.knn_band_triplets`;
4. train with SPECTER's triplet loss and settings (:mod:`sdr.methods.specter`).

:data:`PAPER_BANDS` are the paper's best settings (§5–6: k⁺ = 25, k⁻hard = 4000, c⁺ = 5, c⁻hard = 2,
c⁻easy = 3, filtered random). They were tuned on a FAISS index of the training papers (A.4: 248,007 unique
papers in the replicated SPECTER data, 680,967 in the w/o-leakage set); on a corpus
of a few hundred papers, k⁻hard = 4000 does not exist and k⁺ = 25 already reaches outside a planted
community. :func:`scaled_bands` is the choice this book makes for small corpora (stated on the chapter
page): keep the c's, put the positive band right after the ``c⁺`` nearest neighbours (k⁺ = 2 c⁺, the
paper skips the 20 nearest) and the hard band at a fixed fraction of the corpus (k⁻hard = 15 % of the
papers, below the paper's 4000 / 248,007 ≈ 1.6 % only in that our corpora are 600× smaller and the
band must stay clear of the positives).

:func:`band_ranks` recomputes, for every triplet, the neighbour rank of its positive and negative, so
a chapter can check the band invariants on every example (:func:`sdr.samplers.band_check`: a blocked search,
memory ``block × max(k)`` whatever the number of queries).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from sdr.corpus import CitationGraph
from sdr.graph import GraphEmbedding
from sdr.methods.specter import take_queries
from sdr.samplers import KnnBands, SamplingReport, Triplet, band_check, count_collisions, knn_band_triplets, knn_bands

__all__ = ["Bands", "PAPER_BANDS", "scaled_bands", "clip_bands", "sample_triplets", "search_bands", "band_searches",
           "band_ranks", "collision_grid", "collision_sweep", "Sweep", "SWEEPS", "sweep_points", "bands_table",
           "query_papers", "take_queries", "share_of_queries", "TASKS", "with_task_averages", "seed_summary"]


@dataclass(frozen=True)
class Bands:
    """SciNCL's sampling hyper-parameters (§3.3–3.4)."""

    k_pos: int = 25
    c_pos: int = 5
    k_hard: int = 4000
    c_hard: int = 2
    c_easy: int = 3
    filtered_random: bool = True

    def __post_init__(self):
        if not (1 <= self.c_pos <= self.k_pos and 0 <= self.c_hard <= self.k_hard and self.c_easy >= 0):
            raise ValueError(f"Bands: need 1 <= c_pos <= k_pos and 0 <= c_hard <= k_hard, got {self}")

    @property
    def margin(self) -> int:
        """The sampling-induced margin in ranks between the positive and the hard-negative band."""
        return (self.k_hard - self.c_hard) - self.k_pos

    def describe(self) -> str:
        return (f"positives ranks ({self.k_pos - self.c_pos}, {self.k_pos}], hard negatives "
                f"({self.k_hard - self.c_hard}, {self.k_hard}], {self.c_easy} "
                f"{'filtered-random' if self.filtered_random else 'random'} easy negatives")


#: The paper's best settings (SciNCL §5, Table 2).
PAPER_BANDS = Bands()


def scaled_bands(n_papers: int, hard_fraction: float = 0.15, bands: Bands = PAPER_BANDS) -> Bands:
    """The paper's bands scaled to a corpus of ``n_papers`` (see the module docstring for why).

    Corpora at least as large as the paper's k⁻hard + 1 keep :data:`PAPER_BANDS` unchanged.
    """
    if n_papers > bands.k_hard:
        return bands
    k_pos = 2 * bands.c_pos
    k_hard = max(k_pos + bands.c_hard + 1, int(round(hard_fraction * n_papers)))
    if k_hard >= n_papers:
        raise ValueError(f"scaled_bands: a corpus of {n_papers} papers is too small for positives at rank "
                         f"{k_pos} and hard negatives after them")
    return replace(bands, k_pos=k_pos, k_hard=k_hard)


def clip_bands(bands: Bands, n_papers: int) -> Bands:
    """The bands a graph of ``n_papers`` can hold, so the sampler takes every band as asked and band checks test
    the bands that were sampled: each k clipped so that ``c_easy`` filtered-random easy negatives remain outside the
    top ``max(k)`` (``n_papers − 1 − c_easy``; ``n_papers − 1`` for plain random ones), each c to its k. Bands that
    fit are returned unchanged (the paper's k⁻hard = 4000 fits any graph of more than 4,003 papers)."""
    k_max = n_papers - 1 - (bands.c_easy if bands.filtered_random else 0)
    if k_max < 1:
        raise ValueError(f"clip_bands: a graph of {n_papers} papers has no room for a positive band and "
                         f"{bands.c_easy} easy negatives")
    if bands.k_pos <= k_max and bands.k_hard <= k_max:
        return bands
    k_pos, k_hard = min(bands.k_pos, k_max), min(bands.k_hard, k_max)
    return replace(bands, k_pos=k_pos, c_pos=min(bands.c_pos, k_pos), k_hard=k_hard, c_hard=min(bands.c_hard, k_hard))


def sample_triplets(
    embedding: GraphEmbedding,
    bands: Bands,
    query_ids: Iterable[str] | None = None,
    seed: int = 0,
    verbose: bool = False,
) -> tuple[list[Triplet], SamplingReport]:
    """SciNCL triplets from citation-graph embeddings: ``c_hard + c_easy`` triplets a query (5),
    searched once with FAISS in the metric of the embedding's comparator."""
    return knn_band_triplets(embedding.vectors, embedding.ids, k_pos=bands.k_pos, c_pos=bands.c_pos,
                             k_hard=bands.k_hard, c_hard=bands.c_hard, c_easy=bands.c_easy,
                             filtered_random=bands.filtered_random, seed=seed, metric=embedding.metric,
                             query_ids=query_ids, progress=False, verbose=verbose)


def search_bands(embedding: GraphEmbedding, settings: Sequence[Bands], query_ids: Iterable[str] | None = None,
                 seed: int = 0) -> KnnBands:
    """One blocked neighbour search of the citation embeddings (:func:`sdr.samplers.knn_bands`, in the metric of the
    comparator) for several band settings; ``.triplets(bands)`` then gives each setting's triplets, the ones
    :func:`sample_triplets` gives for it with the same queries and seed."""
    return knn_bands(embedding.vectors, embedding.ids, list(settings), metric=embedding.metric,
                     query_ids=list(query_ids) if query_ids is not None else None, seed=seed)


def band_searches(embedding: GraphEmbedding, requests: Mapping[str, tuple[Sequence[str], Sequence[Bands]]],
                  seed: int = 0) -> dict[str, KnnBands]:
    """The searches a chapter needs, one per distinct query list: ``requests`` maps a name to ``(query ids, band
    settings)``; requests with the same query ids (in the same order) share one :func:`search_bands` over all their
    settings. Each setting's triplets are the ones a search for it alone gives (the easy negatives of each setting
    are drawn by their own generator seeded ``seed``, in query order), so sharing changes no triplet."""
    grouped: dict[tuple[str, ...], list[Bands]] = {}
    for queries, settings in requests.values():
        grouped.setdefault(tuple(queries), []).extend(settings)
    searched = {queries: search_bands(embedding, list(dict.fromkeys(settings)), queries, seed)
                for queries, settings in grouped.items()}
    return {name: searched[tuple(queries)] for name, (queries, _) in requests.items()}


def band_ranks(triplets: Sequence[Triplet], embedding: GraphEmbedding, bands: Bands) -> pd.DataFrame:
    """Per triplet: the neighbour rank (1 = nearest, self excluded) of its positive and negative among the
    query's ``max(k)`` nearest, 0 when outside them, and whether each lies in its band.

    Columns: ``query, positive, negative, kind, positive_rank, negative_rank, positive_in_band,
    negative_in_band`` — an easy negative is "in band" when it is outside the top ``max(k)`` (filtered
    random) or anywhere (plain random). Computed by :func:`sdr.samplers.band_check`: queries searched in blocks,
    so memory is ``block × max(k)``, never ``queries × max(k)`` plus a dictionary per query."""
    return band_check(triplets, embedding.vectors, embedding.ids, bands, metric=embedding.metric)


def collision_grid(bands: Bands, n_nodes: int, k_hard_values: Sequence[int] = ()) -> list[int]:
    """The k⁻hard values of the collision sweep (Fig. 5): ``k_hard_values``, or by default from just past the
    positive band to twice the main k⁻hard; each clipped to the graph (``n_nodes − 1``), sorted, without repeats."""
    grid = k_hard_values or [bands.k_pos + bands.c_hard + 1, bands.k_pos + 5, 2 * bands.k_pos, 3 * bands.k_pos,
                             bands.k_hard, 2 * bands.k_hard]
    return sorted({min(int(k), n_nodes - 1) for k in grid})


def collision_sweep(embedding: GraphEmbedding, bands: Bands, k_hard_values: Sequence[int],
                    query_ids: Iterable[str] | None = None, seed: int = 0,
                    searched: KnnBands | None = None) -> pd.DataFrame:
    """SciNCL A.8 / Fig. 5: collisions (a pair sampled as positive and as negative) against k⁻hard,
    everything else fixed. Only sampling, no training, so it is cheap at any profile: one blocked search serves
    every k⁻hard (``searched``: a search of ``query_ids`` with ``seed`` that holds these settings, e.g. from
    :func:`band_searches`; else one is made here)."""
    settings = [replace(bands, k_hard=int(k_hard)) for k_hard in k_hard_values]
    if searched is None:
        searched = search_bands(embedding, settings, query_ids, seed)
    rows = []
    for varied in settings:
        triplets, _ = searched.triplets(varied)
        rows.append({"k_hard": varied.k_hard, "margin (ranks)": varied.margin, "triplets": len(triplets),
                     "collisions": count_collisions(triplets)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Sweep:
    """One of SciNCL's band sweeps (§6, Figs. 2-3): the k it varies, everything else as in the main bands."""

    label: str  #: the sweep's name on the page ("k+", "k-hard")
    figure: str  #: the paper's figure
    grid_parameter: str  #: the chapter parameter that holds its grid
    vary: Callable[[Bands, int], Bands]  #: the main bands with this sweep's k set to a value
    sampled: Callable[[Bands], int]  #: the k a setting samples (after clipping to the graph)


#: Figs. 2-3's sweeps by the name the ``sweeps`` parameter uses: k⁺ keeps c⁺ unless larger than k⁺.
SWEEPS = {
    "k_pos": Sweep("k+", "Fig. 2", "k_pos_sweep",
                   lambda bands, k: replace(bands, k_pos=int(k), c_pos=min(bands.c_pos, int(k))),
                   lambda bands: bands.k_pos),
    "k_hard": Sweep("k-hard", "Fig. 3", "k_hard_sweep", lambda bands, k: replace(bands, k_hard=int(k)),
                    lambda bands: bands.k_hard),
}


def sweep_points(bands: Bands, n_nodes: int, sweeps: Sequence[str], k_pos_values: Sequence[int] = (),
                 k_hard_values: Sequence[int] = ()) -> dict[tuple[str, int], Bands]:
    """The points of Figs. 2-3: ``(sweep, k) → bands`` for each sweep of :data:`SWEEPS` named in ``sweeps``
    (``"k_pos"``: k⁺ over ``k_pos_values``; ``"k_hard"``: k⁻hard over ``k_hard_values``), everything else as in
    ``bands``, each clipped to the graph (:func:`clip_bands`) and keyed by the k actually sampled, so two grid points
    beyond the graph are one point."""
    grids = {"k_pos": k_pos_values, "k_hard": k_hard_values}
    unknown = sorted(set(sweeps) - set(SWEEPS))
    if unknown:
        raise ValueError(f"sweep_points: unknown sweeps {unknown}; known: {sorted(SWEEPS)}")
    points: dict[tuple[str, int], Bands] = {}
    for name in sweeps:
        sweep = SWEEPS[name]
        for value in grids[name]:
            varied = clip_bands(sweep.vary(bands, value), n_nodes)
            points.setdefault((name, sweep.sampled(varied)), varied)
    return points


def bands_table(bands_by_name: dict[str, Bands]) -> pd.DataFrame:
    """The sampling settings side by side (for the chapter page)."""
    return pd.DataFrame({name: asdict(b) | {"margin (ranks)": b.margin} for name, b in bands_by_name.items()}).T



# ----------------------------------------------------------------------------------------- queries and data shares
def query_papers(graph: CitationGraph) -> list[str]:
    """SciNCL's query papers: the papers with out-edges (they cite something), sorted.

    SPECTER samples triplets for papers that cite (its positives are their references), and SciNCL keeps "the same
    136,820 query papers" (A.4), so both samplers see the same queries and yield the same number of triplets (§4.2:
    "Both training sets yield 684K triplets (same count as SPECTER)"). A paper that is only ever cited is embedded
    and can be sampled as a positive or negative, but is no query.
    """
    queries = sorted(pid for pid in graph.nodes if graph.references(pid))
    if not queries:
        raise ValueError("query_papers: no paper of the graph cites another, so there is no query")
    return queries


def share_of_queries(query_ids: Sequence[str], fraction: float, seed: int) -> list[str]:
    """A random share of the training set by query (SciNCL §6: "a random sample of 10% of the replicated SPECTER
    training data (sampling based on queries)"; Table 2's 1 % and 10 % rows): ``round(fraction × n)`` queries, at
    least one, drawn with :func:`take_queries`. With 5 triplets a query, the triplets are the same share."""
    if not 0 < fraction <= 1:
        raise ValueError(f"share_of_queries: fraction must be in (0, 1], got {fraction}")
    count = max(1, int(round(fraction * len(query_ids))))
    return take_queries(query_ids, count if count < len(query_ids) else 0, seed)


# ----------------------------------------------------------------------------------------- task averages
#: SciNCL Table 2's task groups of the twelve SciDocs metrics.
TASKS = {"cls": ["mag_f1", "mesh_f1"], "usr": ["coview_map", "coview_ndcg", "coread_map", "coread_ndcg"],
         "cite": ["cite_map", "cite_ndcg", "cocite_map", "cocite_ndcg"], "rec": ["recomm_ndcg", "recomm_p1"]}


def with_task_averages(row: Mapping[str, float]) -> dict:
    """A SciDocs row (:func:`sdr.methods.specter.scidocs_scores`) with Table 2's task averages (``cls``, ``usr``,
    ``cite``, ``rec``; NaN when a metric is missing) and ``avg w/o REC``, the mean of the ten metrics that are not
    recommendations (the comparison of runs scored without the recommendation task)."""
    row = dict(row)
    for task, columns in TASKS.items():
        values = [row.get(c, math.nan) for c in columns]
        row[task] = float(np.mean(values)) if all(v == v for v in values) else math.nan
    row["avg w/o REC"] = float(np.mean([row[c] for c in TASKS["cls"] + TASKS["usr"] + TASKS["cite"]]))
    return row


def seed_summary(rows: Sequence[Mapping[str, float]], columns: Sequence[str]) -> dict:
    """Mean and sample standard deviation over seeds of each of ``columns`` (``<column>`` and ``<column> σ``; σ is
    NaN for a single seed) and ``seeds``: the number of runs."""
    if not rows:
        raise ValueError("seed_summary: no runs")
    frame = pd.DataFrame(list(rows))
    summary = {"seeds": len(frame)}
    for column in columns:
        summary[column] = float(frame[column].mean())
        summary[f"{column} σ"] = float(frame[column].std(ddof=1)) if len(frame) > 1 else math.nan
    return summary
