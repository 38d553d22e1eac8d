"""Training-example samplers: which papers are positives and negatives of a query.

* :func:`specter_triplets` — SPECTER (Cohan et al. 2020) citation triplets, as SciNCL replicated them.
* :func:`undirected_triplets` — SPECTER(Undirected), thesis (Bansal) Exp. 1, §5.1.
* :func:`contrastive_examples` — SPECTERCL groups (1 positive / 5 negatives), thesis Exp. 2, §5.2.
* :func:`knn_band_triplets` — SciNCL (Ostendorff et al.) §3.3–3.4: k-NN bands over citation embeddings
  with filtered-random easy negatives; :func:`count_collisions` (SciNCL A.7.10 / A.8). At scale:
  :func:`knn_bands` searches once, in blocks, for several band settings (main run + k⁻hard sweep) and keeps
  only the bands (:class:`KnnBands`), its search kept (:class:`SearchCache`) for every seed and ablation on the
  same embedding; :class:`NeighbourIndex` is the search (exact FAISS flat or IVF; FAISS
  GPU or torch on CUDA when present); :func:`band_recall` measures an IVF index's bands against exact search
  (:func:`exact_neighbours`) on a sample; :func:`band_check` is the per-triplet rank table, blocked.
* :class:`PKBatchSampler` — P classes × K examples batches for metric-learning losses (SciToricsBERT).

Every sampler returns ids only (``Triplet`` / ``ContrastiveExample``) plus a :class:`SamplingReport`
that counts whatever was skipped, oversampled or filled in, and prints it. Everything is deterministic
for a seed.

One module per reason to change: :mod:`~sdr.samplers.examples` (the example types, the report, collisions),
:mod:`~sdr.samplers.citation` (the graph samplers), :mod:`~sdr.samplers.knn` (the neighbour search),
:mod:`~sdr.samplers.bands` (SciNCL's bands), :mod:`~sdr.samplers.pk` (PK batches). Every name is
re-exported here, so ``from sdr.samplers import band_check`` reads as before.
"""

from sdr.samplers.examples import ContrastiveExample, SamplingReport, Triplet, count_collisions, given_triplets
from sdr.samplers.citation import (
    GraphPools, HARD_NEGATIVE_MODES, SPECTER_RATIO_HARD_NEGATIVES, _CandidatePool, _draw_distinct,
    _draw_positives, contrastive_examples, graph_pools, specter_triplets, undirected_triplets,
)
from sdr.samplers.knn import (
    EXACT_SEARCH_BUDGET, FAISS_GPU_MAX_K, METRICS, NeighbourIndex, _rows_of, exact_neighbours, flat_index,
)
from sdr.samplers.bands import (
    SEARCH_CACHE, BandSetting, KnnBands, SearchCache, _random_rows, _random_rows_marked, band_check, band_recall,
    knn_band_triplets, knn_bands,
)
from sdr.samplers.pk import PKBatchSampler

__all__ = [
    "Triplet",
    "ContrastiveExample",
    "SamplingReport",
    "specter_triplets",
    "undirected_triplets",
    "contrastive_examples",
    "knn_band_triplets",
    "knn_bands",
    "KnnBands",
    "BandSetting",
    "SearchCache",
    "SEARCH_CACHE",
    "NeighbourIndex",
    "exact_neighbours",
    "band_check",
    "band_recall",
    "count_collisions",
    "graph_pools",
    "GraphPools",
    "PKBatchSampler",
    "HARD_NEGATIVE_MODES",
    "SPECTER_RATIO_HARD_NEGATIVES",
]
