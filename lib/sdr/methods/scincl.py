"""SciNCL (Ostendorff et al. 2022, ``papers/001_…``): neighbourhood contrastive learning.

The recipe, built from the shared modules:

1. embed the citation graph with PyTorch-BigGraph (:func:`sdr.graph.embed`, A.5 settings);
2. search the embeddings once with FAISS to ``max(k⁺, k⁻hard)`` neighbours, in the metric of the
   comparator (``dot`` → inner product, ``cos`` → cosine; :data:`sdr.graph.COMPARATOR_METRIC`);
3. positives = the ``c⁺`` neighbours of the band ``(k⁺ − c⁺, k⁺]``, hard negatives = the band
   ``(k⁻hard − c⁻hard, k⁻hard]``, easy negatives = ``c⁻easy`` filtered-random papers (not among the
   ``max(k)`` neighbours) — :func:`sdr.samplers.knn_band_triplets`;
4. train with SPECTER's triplet loss and settings (:mod:`sdr.methods.specter`).

:data:`PAPER_BANDS` are the paper's best settings (§5–6: k⁺ = 25, k⁻hard = 4000, c⁺ = 5, c⁻hard = 2,
c⁻easy = 3, filtered random). They were tuned on a FAISS index of ~250 K–680 K papers (A.4); on a corpus
of a few hundred papers, k⁻hard = 4000 does not exist and k⁺ = 25 already reaches outside a planted
community. :func:`scaled_bands` is the choice this book makes for small corpora (stated on the chapter
page): keep the c's, put the positive band right after the ``c⁺`` nearest neighbours (k⁺ = 2 c⁺, the
paper skips the 20 nearest) and the hard band at a fixed fraction of the corpus (k⁻hard = 15 % of the
papers, below the paper's 4000 / 248,007 ≈ 1.6 % only in that our corpora are 600× smaller and the
band must stay clear of the positives).

:func:`band_ranks` recomputes, for every triplet, the neighbour rank of its positive and negative, so
a chapter can check the band invariants on every example.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace

import pandas as pd

from sdr.graph import GraphEmbedding, nearest_neighbours
from sdr.samplers import SamplingReport, Triplet, count_collisions, knn_band_triplets

__all__ = ["Bands", "PAPER_BANDS", "scaled_bands", "sample_triplets", "band_ranks", "collision_sweep", "bands_table"]


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


def band_ranks(triplets: Sequence[Triplet], embedding: GraphEmbedding, bands: Bands) -> pd.DataFrame:
    """Per triplet: the neighbour rank (1 = nearest, self excluded) of its positive and negative among the
    query's ``max(k)`` nearest, 0 when outside them, and whether each lies in its band.

    Columns: ``query, positive, negative, kind, positive_rank, negative_rank, positive_in_band,
    negative_in_band`` — an easy negative is "in band" when it is outside the top ``max(k)`` (filtered
    random) or anywhere (plain random)."""
    k_max = max(bands.k_pos, bands.k_hard)
    queries = sorted({t.query for t in triplets})
    if not queries:
        return pd.DataFrame(columns=["query", "positive", "negative", "kind", "positive_rank", "negative_rank",
                                     "positive_in_band", "negative_in_band"])
    found, _ = nearest_neighbours(embedding.vectors, embedding.ids, k_max, metric=embedding.metric,
                                  query_ids=queries)
    rank = {q: {pid: r for r, pid in enumerate(neighbours, 1)} for q, neighbours in zip(queries, found)}
    rows = []
    for t in triplets:
        positive_rank = rank[t.query].get(t.positive, 0)
        negative_rank = rank[t.query].get(t.negative, 0)
        if t.kind == "hard":
            negative_ok = bands.k_hard - bands.c_hard < negative_rank <= bands.k_hard
        else:
            negative_ok = negative_rank == 0 or not bands.filtered_random
        rows.append({"query": t.query, "positive": t.positive, "negative": t.negative, "kind": t.kind,
                     "positive_rank": positive_rank, "negative_rank": negative_rank,
                     "positive_in_band": bands.k_pos - bands.c_pos < positive_rank <= bands.k_pos,
                     "negative_in_band": negative_ok and t.negative != t.query})
    return pd.DataFrame(rows)


def collision_sweep(embedding: GraphEmbedding, bands: Bands, k_hard_values: Sequence[int],
                    query_ids: Iterable[str] | None = None, seed: int = 0) -> pd.DataFrame:
    """SciNCL A.8 / Fig. 5: collisions (a pair sampled as positive and as negative) against k⁻hard,
    everything else fixed. Only sampling, no training, so it is cheap at any profile."""
    query_ids = list(query_ids) if query_ids is not None else None
    rows = []
    for k_hard in k_hard_values:
        varied = replace(bands, k_hard=int(k_hard))
        triplets, report = sample_triplets(embedding, varied, query_ids=query_ids, seed=seed)
        rows.append({"k_hard": int(k_hard), "margin (ranks)": varied.margin, "triplets": len(triplets),
                     "collisions": count_collisions(triplets)})
    return pd.DataFrame(rows)


def bands_table(bands_by_name: dict[str, Bands]) -> pd.DataFrame:
    """The sampling settings side by side (for the chapter page)."""
    return pd.DataFrame({name: asdict(b) | {"margin (ranks)": b.margin} for name, b in bands_by_name.items()}).T

