"""Training-example samplers: which papers are positives and negatives of a query.

* :func:`specter_triplets` — SPECTER (Cohan et al. 2020) citation triplets, as SciNCL replicated them.
* :func:`undirected_triplets` — SPECTER(Undirected), thesis (Bansal) Exp. 1, §5.1.
* :func:`contrastive_examples` — SPECTERCL groups (1 positive / 5 negatives), thesis Exp. 2, §5.2.
* :func:`knn_band_triplets` — SciNCL (Ostendorff et al.) §3.3–3.4: k-NN bands over citation embeddings
  with filtered-random easy negatives; :func:`count_collisions` (SciNCL A.7.10 / A.8). At scale:
  :func:`knn_bands` searches once, in blocks, for several band settings (main run + k⁻hard sweep) and keeps
  only the bands (:class:`KnnBands`); :class:`NeighbourIndex` is the search (exact FAISS flat or IVF; FAISS
  GPU or torch on CUDA when present); :func:`band_recall` measures an IVF index's bands against exact search
  (:func:`exact_neighbours`) on a sample; :func:`band_check` is the per-triplet rank table, blocked.
* :class:`PKBatchSampler` — P classes × K examples batches for metric-learning losses (SciToricsBERT).

Every sampler returns ids only (``Triplet`` / ``ContrastiveExample``) plus a :class:`SamplingReport`
that counts whatever was skipped, oversampled or filled in, and prints it. Everything is deterministic
for a seed: pools are sorted before drawing (set order of strings changes between processes) and one
``numpy.random.Generator`` is consumed in query order (sorted node ids by default). Pools are built
from per-query sets, and easy negatives are drawn by rejection sampling, so the cost grows with the
edges, not with queries × corpus.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from torch.utils.data import Sampler
from tqdm.auto import tqdm

from sdr.corpus import CitationGraph, Paper

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

#: SPECTER's own ``--ratio_hard_negatives`` default (allenai/specter
#: ``specter/data_utils/create_training_files.py``): ``ceil(0.3 * 5) = 2`` hard of 5 triplets per query.
SPECTER_RATIO_HARD_NEGATIVES = 0.3

#: How hard negatives are reached from the query (see :func:`graph_pools`).
HARD_NEGATIVE_MODES = ("references_of_references", "two_hop")


@dataclass(frozen=True)
class Triplet:
    """One (query, positive, negative) training triplet of paper ids.

    ``kind`` says how the negative was drawn (``"hard"`` or ``"easy"``); ``margin`` is the triplet
    loss margin for this triplet (CoSaEmb's margin gradation uses 1/2/3).
    """

    query: str
    positive: str
    negative: str
    kind: str
    margin: float = 1.0


@dataclass
class ContrastiveExample:
    """One general-contrastive-loss instance: a query with its positives and negatives (ids).

    The first ``n_hard`` negatives are hard negatives, the rest easy ones.
    """

    query: str
    positives: list[str]
    negatives: list[str]
    n_hard: int = 0


@dataclass
class SamplingReport:
    """What a sampler did: queries used and skipped (by reason), and every shortfall it filled in."""

    method: str
    queries_total: int = 0
    queries_used: int = 0
    skipped: Counter = field(default_factory=Counter)  # reason -> number of queries
    examples: int = 0  # triplets or contrastive instances produced
    hard_negatives: int = 0
    easy_negatives: int = 0
    oversampled_queries: int = 0  # queries with fewer positive candidates than needed
    oversampled_positives: int = 0  # positive draws that repeat a candidate
    hard_short: int = 0  # hard negatives missing from the pool, replaced by easy negatives
    hard_short_queries: int = 0
    negatives_short: int = 0  # negatives that could not be drawn at all (fewer examples made)
    self_citations_excluded: int = 0  # direct links not used as positives (self-loop or shared author)
    collisions: int = 0  # see count_collisions
    warnings: list[str] = field(default_factory=list)

    @property
    def queries_skipped(self) -> int:
        """Number of queries that produced no example."""
        return sum(self.skipped.values())

    def __str__(self) -> str:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in sorted(self.skipped.items())) or "none"
        text = (
            f"{self.method}: {self.queries_used} of {self.queries_total} queries used, "
            f"{self.queries_skipped} skipped ({reasons}); {self.examples} examples with "
            f"{self.hard_negatives} hard and {self.easy_negatives} easy negatives; "
            f"positives oversampled for {self.oversampled_queries} queries "
            f"({self.oversampled_positives} repeated draws); "
            f"{self.hard_short} hard negatives short in {self.hard_short_queries} queries, filled with easy; "
            f"{self.negatives_short} negatives could not be drawn; "
            f"{self.self_citations_excluded} self-citations excluded; {self.collisions} collisions."
        )
        if self.warnings:
            text += " Warnings: " + " ".join(self.warnings)
        return text


# ----------------------------------------------------------------------------------------- helpers


class _CandidatePool:
    """Sorted candidate ids with fast random draws that avoid a (small) excluded set."""

    def __init__(self, ids: Iterable[str]):
        self.ids: list[str] = sorted({str(pid) for pid in ids})
        self.index: dict[str, int] = {pid: i for i, pid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def sample(self, n: int, excluded: set[str], rng: np.random.Generator) -> list[str]:
        """Up to ``n`` distinct ids not in ``excluded`` (fewer only when fewer exist)."""
        size = len(self.ids)
        if n <= 0 or size == 0:
            return []
        if len(excluded) + 4 * n < size // 2:  # surely more than half allowed: skip the exact count
            available = size - len(excluded)
        else:
            available = size - sum(1 for pid in excluded if pid in self.index)
        if available <= 0:
            return []
        if available <= max(4 * n, size // 2):
            # small corpus or most of it excluded: enumerate what is allowed (O(corpus), rare)
            allowed = [i for i, pid in enumerate(self.ids) if pid not in excluded]
            picks = rng.choice(len(allowed), size=min(n, len(allowed)), replace=False)
            return [self.ids[allowed[j]] for j in picks]
        # rejection sampling: at least half of the corpus is allowed, so this ends quickly
        chosen: list[str] = []
        seen: set[str] = set()
        while len(chosen) < n:
            for i in rng.integers(0, size, size=2 * n + 4):
                pid = self.ids[int(i)]
                if pid in excluded or pid in seen:
                    continue
                seen.add(pid)
                chosen.append(pid)
                if len(chosen) == n:
                    break
        return chosen


def _random_rows(n_rows: int, count: int, forbidden: np.ndarray, rng: np.random.Generator) -> list[int]:
    """Up to ``count`` distinct row numbers in ``[0, n_rows)`` outside ``forbidden`` (unique rows)."""
    count = min(count, n_rows - len(forbidden))
    if count <= 0:
        return []
    if n_rows - len(forbidden) <= max(4 * count, n_rows // 2):
        allowed = np.setdiff1d(np.arange(n_rows), forbidden, assume_unique=True)
        return [int(i) for i in rng.choice(allowed, size=count, replace=False)]
    chosen: list[int] = []
    while len(chosen) < count:
        draws = rng.integers(0, n_rows, size=2 * count + 4)
        for row in draws[~np.isin(draws, forbidden)].tolist():
            if row not in chosen:
                chosen.append(row)
                if len(chosen) == count:
                    break
    return chosen


def _draw_distinct(pool: Sequence[str], n: int, rng: np.random.Generator) -> list[str]:
    """``min(n, len(pool))`` distinct items of the (sorted) pool in random order."""
    if n <= 0 or not pool:
        return []
    picks = rng.choice(len(pool), size=min(n, len(pool)), replace=False)
    return [pool[int(i)] for i in picks]


def _draw_positives(pool: Sequence[str], n: int, rng: np.random.Generator) -> tuple[list[str], int]:
    """``n`` positives: distinct while the pool allows, then oversampled. Returns (draws, repeats)."""
    if n <= len(pool):
        return _draw_distinct(pool, n, rng), 0
    first = [pool[int(i)] for i in rng.permutation(len(pool))]
    extra = [pool[int(i)] for i in rng.integers(0, len(pool), size=n - len(pool))]
    return first + extra, n - len(pool)


def _normalise_author(name: str) -> str:
    return " ".join(str(name).lower().split())


def _author_sets(papers: Mapping[str, Paper] | None) -> dict[str, frozenset[str]] | None:
    if papers is None:
        return None
    return {
        str(pid): frozenset(_normalise_author(a) for a in paper.authors if str(a).strip())
        for pid, paper in papers.items()
    }


@dataclass
class GraphPools:
    """Candidate pools of one query (sorted lists) and what its easy negatives must avoid."""

    positives: list[str]
    hard: list[str]
    linked: set[str]  # the query, its direct links (incl. excluded self-citations) and the hard pool
    self_citations: list[str]  # direct links not used as positives


def graph_pools(
    graph: CitationGraph,
    query: str,
    *,
    undirected: bool,
    hard_negatives: str = "references_of_references",
    authors: Mapping[str, frozenset[str]] | None = None,
) -> GraphPools:
    """Positive and hard-negative candidate pools of ``query`` in a citation graph.

    * Positives: the papers ``query`` cites (SPECTER), plus the papers citing it when ``undirected``
      (SPECTER(Undirected), thesis §5.1). Self-citations are excluded: the query itself, and, when
      ``authors`` (paper id → normalised author names) is given, direct links sharing an author with
      the query. The thesis says only "excluded self references and citations"; we read "self" in the
      bibliometric sense (shared author) — the only sense in which a *paper* cites itself, besides
      self-loops in the data. Papers without author information are never excluded.
    * Hard negatives, ``hard_negatives="references_of_references"`` (default): papers cited by the
      query's references — SPECTER's "citation of citation" and the thesis' data layout
      ("Citation → Anchor paper → Reference → Reference", §4.3; §5.1 "references of the anchors'
      referenced papers"). ``"two_hop"`` uses neighbours of neighbours (both directions, if
      ``undirected``). Either way, papers directly connected to the query (in the sampler's sense of
      "connected": references, plus citations when ``undirected``) and the query are removed
      (§5.1 "excluded papers that can also be directly connected to the anchor paper").
    * ``linked``: everything an easy negative must avoid (query, direct links, hard pool).
    """
    if hard_negatives not in HARD_NEGATIVE_MODES:
        raise ValueError(f"hard_negatives must be one of {HARD_NEGATIVE_MODES}, got {hard_negatives!r}")
    references = graph.references(query)
    direct = references | graph.citations(query) if undirected else set(references)
    self_citations = {query} & direct
    direct.discard(query)
    if authors is not None and authors.get(query):
        query_authors = authors[query]
        self_citations |= {pid for pid in direct if authors.get(pid, frozenset()) & query_authors}
    positives = sorted(direct - self_citations)

    if hard_negatives == "references_of_references":
        second_hop: set[str] = set()
        for reference in references:
            second_hop |= graph.references(reference)
    else:
        second_hop = set()
        for neighbour in direct:
            second_hop |= graph.neighbours(neighbour) if undirected else graph.references(neighbour)
    hard = second_hop - direct - {query}
    return GraphPools(
        positives=positives,
        hard=sorted(hard),
        linked=direct | hard | {query},
        self_citations=sorted(self_citations),
    )


def _finish(report: SamplingReport, examples: list, verbose: bool) -> tuple[list, SamplingReport]:
    """Count the examples and their collisions, print the report when asked, return both."""
    report.examples = len(examples)
    report.collisions = count_collisions(examples)
    if verbose:
        print(report)
    return examples, report


def _require_edges(graph: CitationGraph, method: str) -> None:
    if len(graph) == 0:
        raise ValueError(f"{method}: the citation graph has no edges, so there is nothing to sample "
                         "positives from; check the reader's report for skipped records")


def _query_order(graph: CitationGraph, query_ids: Iterable[str] | None) -> list[str]:
    if query_ids is None:
        return sorted(graph.nodes)
    return [str(q) for q in query_ids]


def _split_counts(
    triplets_per_query: int, hard_per_query: int, easy_per_query: int, hard_ratio: float | None
) -> tuple[int, int]:
    if triplets_per_query < 1:
        raise ValueError(f"triplets_per_query must be >= 1, got {triplets_per_query}")
    if hard_ratio is not None:
        if not 0.0 <= hard_ratio <= 1.0:
            raise ValueError(f"hard_ratio must be in [0, 1], got {hard_ratio}")
        # SPECTER: n_hard = math.ceil(ratio_hard_negatives * samples_per_query); the rest are easy
        n_hard = math.ceil(hard_ratio * triplets_per_query)
        return n_hard, triplets_per_query - n_hard
    if hard_per_query < 0 or easy_per_query < 0 or hard_per_query + easy_per_query != triplets_per_query:
        raise ValueError(
            f"hard_per_query ({hard_per_query}) + easy_per_query ({easy_per_query}) must equal "
            f"triplets_per_query ({triplets_per_query})"
        )
    return hard_per_query, easy_per_query


def _graph_triplets(
    method: str,
    graph: CitationGraph,
    *,
    undirected: bool,
    candidates: Iterable[str] | None,
    hard_candidates: Mapping[str, Iterable[str]] | None,
    papers: Mapping[str, Paper] | None,
    hard_negatives: str,
    n_hard: int,
    n_easy: int,
    query_ids: Iterable[str] | None,
    seed: int,
    require_hard: bool,
    margin: float,
    progress: bool,
    verbose: bool,
) -> tuple[list[Triplet], SamplingReport]:
    _require_edges(graph, method)
    rng = np.random.default_rng(seed)
    pool = _CandidatePool(graph.nodes if candidates is None else candidates)
    authors = _author_sets(papers)
    nodes = graph.nodes
    queries = _query_order(graph, query_ids)
    report = SamplingReport(method=method, queries_total=len(queries))
    triplets: list[Triplet] = []
    for query in tqdm(queries, desc=method, disable=not progress):
        if query not in nodes:
            report.skipped["not in graph"] += 1
            continue
        pools = graph_pools(graph, query, undirected=undirected, hard_negatives=hard_negatives, authors=authors)
        report.self_citations_excluded += len(pools.self_citations)
        hard_pool, linked = pools.hard, pools.linked
        if hard_candidates is not None:  # e.g. SPECTER data.json entries with count 1
            direct = linked - set(pools.hard)
            hard_pool = sorted({str(pid) for pid in hard_candidates.get(query, ())} - direct)
            linked = direct | set(hard_pool)
        if not pools.positives:
            report.skipped["no positives"] += 1
            continue
        # SPECTER's code makes triplets only when `len(candidates) > 2` and some candidate is hard
        if require_hard and (not hard_pool or len(pools.positives) + len(hard_pool) < 3):
            report.skipped["no hard negatives"] += 1
            continue
        hard = _draw_distinct(hard_pool, n_hard, rng)
        missing_hard = n_hard - len(hard)
        easy = pool.sample(n_easy + missing_hard, linked, rng)
        negatives = hard + easy
        report.negatives_short += n_hard + n_easy - len(negatives)
        if not negatives:
            report.skipped["no negatives"] += 1
            continue
        if missing_hard:
            report.hard_short += missing_hard
            report.hard_short_queries += 1
        positives, repeats = _draw_positives(pools.positives, len(negatives), rng)
        if repeats:
            report.oversampled_queries += 1
            report.oversampled_positives += repeats
        kinds = ["hard"] * len(hard) + ["easy"] * len(easy)
        triplets.extend(
            Triplet(query, pos, neg, kind, margin) for pos, neg, kind in zip(positives, negatives, kinds)
        )
        report.queries_used += 1
        report.hard_negatives += len(hard)
        report.easy_negatives += len(easy)
    return _finish(report, triplets, verbose)


# ---------------------------------------------------------------------------------- graph samplers


def specter_triplets(
    graph: CitationGraph,
    candidates: Iterable[str] | None = None,
    hard_candidates: Mapping[str, Iterable[str]] | None = None,
    triplets_per_query: int = 5,
    hard_per_query: int = 2,
    easy_per_query: int = 3,
    query_ids: Iterable[str] | None = None,
    seed: int = 0,
    hard_ratio: float | None = None,
    *,
    require_hard: bool = False,
    margin: float = 1.0,
    progress: bool = True,
    verbose: bool = True,
) -> tuple[list[Triplet], SamplingReport]:
    """SPECTER's citation triplets (Cohan et al. 2020), as SciNCL replicated them (§3.4, §4.2).

    * positives: papers the query cites;
    * hard negatives: papers cited by a positive but not by the query (SPECTER's "citation of
      citation"), or, when ``hard_candidates`` (query → ids) is given, exactly those ids (e.g. the
      ``count: 1`` entries of SPECTER's ``data.json``; queries missing from it have none);
    * easy negatives: random ``candidates`` (default: all graph nodes) that are neither the query,
      cited by it, nor hard candidates — as SPECTER's ``paper_ids_set - candidates - {query}``.
      Papers *citing* the query may be drawn: that is SPECTER's directional flaw that SciNCL
      A.7.10 points out, visible in ``report.collisions``.

    ``triplets_per_query`` = 5 triplets, ``hard_per_query`` = 2 + ``easy_per_query`` = 3 (SciNCL §3.4).
    ``hard_ratio`` uses SPECTER's own rule instead: ``ceil(hard_ratio · 5)`` hard, the rest easy
    (``create_training_files.py`` default ratio 0.3 → also 2 + 3; :data:`SPECTER_RATIO_HARD_NEGATIVES`).
    Missing hard negatives are filled with easy ones (as SPECTER: ``n_easy = 5 - len(hard)``) and
    counted. Differences from ``triplet_sampling_parallel.py``, on purpose: negatives of a query are
    distinct and positives distinct while enough exist (SPECTER draws both with replacement); SPECTER's
    code also returns nothing for queries without any hard candidate or with fewer than 3 candidates
    (cited + hard) — ``require_hard=True`` reproduces that (counted as skipped). Queries without
    positives are skipped and counted.

    Returns ``(triplets, report)``; triplets of one query are hard first, then easy.
    """
    n_hard, n_easy = _split_counts(triplets_per_query, hard_per_query, easy_per_query, hard_ratio)
    return _graph_triplets(
        "specter_triplets", graph, undirected=False, candidates=candidates, hard_candidates=hard_candidates,
        papers=None, hard_negatives="references_of_references", n_hard=n_hard, n_easy=n_easy,
        query_ids=query_ids, seed=seed, require_hard=require_hard, margin=margin, progress=progress,
        verbose=verbose,
    )


def undirected_triplets(
    graph: CitationGraph,
    papers: Mapping[str, Paper] | None = None,
    candidates: Iterable[str] | None = None,
    triplets_per_query: int = 5,
    hard_per_query: int = 2,
    easy_per_query: int = 3,
    query_ids: Iterable[str] | None = None,
    seed: int = 0,
    *,
    hard_negatives: str = "references_of_references",
    margin: float = 1.0,
    progress: bool = True,
    verbose: bool = True,
) -> tuple[list[Triplet], SamplingReport]:
    """SPECTER(Undirected) triplets, thesis Exp. 1 (§5.1, Fig. 5.1).

    Per query: 5 positives (direct connections: references *and* citations, self-citations excluded),
    2 hard negatives (references of the references, minus anything directly connected to the query)
    and 3 easy negatives (any other candidate: not the query, not connected, not a hard candidate),
    paired into 5 triplets. Positives are oversampled when fewer than 5 exist; missing hard negatives
    are filled with easy ones; queries without positives are skipped — all counted in the report.
    ``papers`` (id → Paper with ``authors``) turns on the shared-author self-citation exclusion and
    ``hard_negatives="two_hop"`` the undirected neighbours-of-neighbours reading; see
    :func:`graph_pools` for both readings of the thesis.
    """
    n_hard, n_easy = _split_counts(triplets_per_query, hard_per_query, easy_per_query, None)
    return _graph_triplets(
        "undirected_triplets", graph, undirected=True, candidates=candidates, hard_candidates=None,
        papers=papers, hard_negatives=hard_negatives, n_hard=n_hard, n_easy=n_easy, query_ids=query_ids,
        seed=seed, require_hard=False, margin=margin, progress=progress, verbose=verbose,
    )


def contrastive_examples(
    graph: CitationGraph,
    n_positives: int = 1,
    n_negatives: int = 5,
    n_hard: int = 2,
    undirected: bool = True,
    papers: Mapping[str, Paper] | None = None,
    candidates: Iterable[str] | None = None,
    query_ids: Iterable[str] | None = None,
    seed: int = 0,
    *,
    examples_per_query: int = 1,
    hard_negatives: str = "references_of_references",
    progress: bool = True,
    verbose: bool = True,
) -> tuple[list[ContrastiveExample], SamplingReport]:
    """SPECTERCL instances for :class:`sdr.losses.GeneralContrastiveLoss` (thesis Exp. 2, §5.2).

    "We follow the same procedure as Experiment 1 but instead of a triplet, we combine the positives and
    negatives for each anchor as one training instance": pools as in :func:`undirected_triplets`
    (``undirected=False`` gives SPECTER's directed pools), ``n_positives`` positives (1 in the best
    model; oversampled when fewer exist) and ``n_negatives`` negatives, of which ``n_hard`` hard
    (2 of 5 as in Exp. 1; missing ones filled with easy), the rest easy. Exp. 2.1.2 "1 positive,
    3 easy negatives" is ``n_negatives=3, n_hard=0``. ``examples_per_query`` instances per query.
    """
    _require_edges(graph, "contrastive_examples")
    if n_positives < 1 or n_negatives < 0 or not 0 <= n_hard <= n_negatives or examples_per_query < 1:
        raise ValueError(
            "contrastive_examples: need n_positives >= 1, 0 <= n_hard <= n_negatives, examples_per_query >= 1; "
            f"got n_positives={n_positives}, n_negatives={n_negatives}, n_hard={n_hard}, "
            f"examples_per_query={examples_per_query}"
        )
    method = "contrastive_examples"
    rng = np.random.default_rng(seed)
    pool = _CandidatePool(graph.nodes if candidates is None else candidates)
    authors = _author_sets(papers) if undirected else None
    nodes = graph.nodes
    queries = _query_order(graph, query_ids)
    report = SamplingReport(method=method, queries_total=len(queries))
    examples: list[ContrastiveExample] = []
    for query in tqdm(queries, desc=method, disable=not progress):
        if query not in nodes:
            report.skipped["not in graph"] += 1
            continue
        pools = graph_pools(graph, query, undirected=undirected, hard_negatives=hard_negatives, authors=authors)
        report.self_citations_excluded += len(pools.self_citations)
        if not pools.positives:
            report.skipped["no positives"] += 1
            continue
        made = 0
        oversampled = short_hard = False
        for _ in range(examples_per_query):
            positives, repeats = _draw_positives(pools.positives, n_positives, rng)
            hard = _draw_distinct(pools.hard, n_hard, rng)
            missing_hard = n_hard - len(hard)
            easy = pool.sample(n_negatives - len(hard), pools.linked, rng)
            report.negatives_short += n_negatives - len(hard) - len(easy)
            if n_negatives and not hard and not easy:
                continue
            oversampled |= repeats > 0
            report.oversampled_positives += repeats
            if missing_hard:
                short_hard = True
                report.hard_short += missing_hard
            examples.append(ContrastiveExample(query, positives, hard + easy, n_hard=len(hard)))
            report.hard_negatives += len(hard)
            report.easy_negatives += len(easy)
            made += 1
        if not made:
            report.skipped["no negatives"] += 1
            continue
        report.queries_used += 1
        report.oversampled_queries += int(oversampled)
        report.hard_short_queries += int(short_hard)
    return _finish(report, examples, verbose)


# ------------------------------------------------------------------------------- SciNCL kNN bands

#: FAISS GPU indexes select at most this many neighbours (``GPU_MAX_SELECTION_K`` in faiss/gpu; an error above
#: it), fewer than SciNCL's k⁻hard + 1 = 4001: deeper exact searches on a GPU go through torch instead.
FAISS_GPU_MAX_K = 2048
#: ``index="auto"`` searches exactly while queries × papers × dimension stays below this (≈ minutes of
#: BLAS on two CPU cores) or a GPU is present, and with an IVF index above it.
EXACT_SEARCH_BUDGET = 2e12
METRICS = ("l2", "ip", "cosine")


def flat_index(vectors: np.ndarray, metric: str):
    """An exact FAISS index over float32 ``vectors`` for ``metric`` ("ip", "cosine" or "l2").

    Returns ``(index, vectors)``: for "cosine" the vectors are an L2-normalised copy (search the queries in
    that copy), otherwise the array passed in.
    """
    import faiss

    if metric == "cosine":
        vectors = vectors.copy()
        faiss.normalize_L2(vectors)
    index = faiss.IndexFlatL2(vectors.shape[1]) if metric == "l2" else faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index, vectors


def _rows_of(vectors: np.ndarray, rows: np.ndarray | slice, metric: str) -> np.ndarray:
    """float32 copies of some rows (L2-normalised for cosine); works on a memory-mapped array too."""
    import faiss

    block = np.ascontiguousarray(np.asarray(vectors[rows], dtype=np.float32))
    if metric == "cosine":
        if np.may_share_memory(block, vectors) or not block.flags.writeable:  # never normalise the caller's array
            block = block.copy()
        faiss.normalize_L2(block)
    return block


def _drop_self(rows: np.ndarray, found: np.ndarray, k: int) -> np.ndarray:
    """``found`` (``k + 1`` columns, FAISS's ``-1`` padding last) without each query's own row: removed
    wherever ties put it, or, if it fell outside, the last column dropped. Returns ``k`` columns."""
    found = found[:, :k + 1]
    if found.shape[1] <= k:  # fewer rows than k + 1 exist: pad, the query itself is surely among them
        found = np.pad(found, ((0, 0), (0, k + 1 - found.shape[1])), constant_values=-1)
    keep = found != rows[:, None]
    no_self = keep.all(axis=1)
    keep[no_self, -1] = False
    return found[keep].reshape(len(rows), k)


def _ranked_merge(scores: np.ndarray, rows: np.ndarray, k: int, larger_is_nearer: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the ``k`` best of concatenated candidate lists (ties: smaller row first; -1 rows last)."""
    keyed = np.where(rows < 0, -np.inf if larger_is_nearer else np.inf, scores)
    primary = -keyed if larger_is_nearer else keyed
    order = np.lexsort((np.where(rows < 0, np.iinfo(np.int64).max, rows), primary), axis=1)[:, :k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)


class NeighbourIndex:
    """Nearest-neighbour search over citation embeddings, one block of queries at a time.

    ``kind``: ``"flat"`` (exact, FAISS ``IndexFlat``), ``"ivf"`` (FAISS ``IndexIVFFlat``: ``nlist`` k-means
    cells, ``nprobe`` of them searched; approximate — measure its band recall with :func:`band_recall`) or
    ``"auto"`` (flat while queries × papers × dimension < :data:`EXACT_SEARCH_BUDGET` or a GPU is present,
    IVF above; decided at the first search, when the query count is known).

    ``device``: ``"auto"`` uses a GPU when one is there — FAISS's GPU index (``faiss.get_num_gpus() > 0``)
    for searches of at most :data:`FAISS_GPU_MAX_K` neighbours, torch on CUDA (exact: matrix product +
    ``topk`` over chunks of the papers) for deeper exact searches — and FAISS on the CPU otherwise; ``"cpu"``,
    ``"faiss-gpu"`` and ``"torch"`` (CUDA when available, else the CPU: the same code path) force one.

    Memory: the index holds every vector (``N × d × 4`` bytes, as the embeddings themselves); a search holds
    one block of ``block_size × (k + 1)`` results (12 bytes each), whatever the number of queries. The
    vectors may be a memory-mapped ``.npy`` (:func:`sdr.graph.embed_edge_files`); they are added in blocks.
    """

    def __init__(self, vectors: np.ndarray, metric: str = "ip", kind: str = "flat", *, nlist: int | None = None,
                 nprobe: int | None = None, device: str = "auto", seed: int = 0, add_block: int = 65536):
        if metric not in METRICS:
            raise ValueError(f"NeighbourIndex: metric must be one of {METRICS}, got {metric!r}")
        if kind not in ("flat", "ivf", "auto"):
            raise ValueError(f"NeighbourIndex: kind must be 'flat', 'ivf' or 'auto', got {kind!r}")
        if device not in ("auto", "cpu", "faiss-gpu", "torch"):
            raise ValueError(f"NeighbourIndex: device must be 'auto', 'cpu', 'faiss-gpu' or 'torch', got {device!r}")
        if getattr(vectors, "ndim", 0) != 2 or vectors.shape[0] < 2:
            raise ValueError(f"NeighbourIndex: need a 2-D array of at least 2 vectors, got shape "
                             f"{getattr(vectors, 'shape', None)}")
        self.vectors, self.metric, self.kind, self.device = vectors, metric, kind, device
        self.n, self.dimension = int(vectors.shape[0]), int(vectors.shape[1])
        self.nlist, self.nprobe, self.seed, self.add_block = nlist, nprobe, seed, add_block
        self._cpu_index = None
        self._gpu_index = None
        self._torch_database = None
        self.backend = None  # set at the first search: "faiss-cpu", "faiss-gpu" or "torch-<device>"

    # -- building
    def _faiss_metric(self):
        import faiss

        return faiss.METRIC_L2 if self.metric == "l2" else faiss.METRIC_INNER_PRODUCT

    def _resolve_kind(self, n_queries: int) -> str:
        if self.kind != "auto":
            return self.kind
        if self.device == "torch":
            return "flat"
        exact_cost = float(n_queries) * self.n * self.dimension
        return "flat" if exact_cost <= EXACT_SEARCH_BUDGET or _gpu_available() else "ivf"

    def _build_cpu(self, kind: str):
        import faiss

        if kind == "flat":
            index = faiss.IndexFlatL2(self.dimension) if self.metric == "l2" else faiss.IndexFlatIP(self.dimension)
        else:
            # FAISS wants >= 39 training points a cell; 4·sqrt(N) cells is its usual starting point
            self.nlist = int(self.nlist or max(1, min(int(4 * math.sqrt(self.n)), self.n // 39)))
            quantizer = faiss.IndexFlatL2(self.dimension) if self.metric == "l2" else faiss.IndexFlatIP(self.dimension)
            index = faiss.IndexIVFFlat(quantizer, self.dimension, self.nlist, self._faiss_metric())
            index.cp.seed = self.seed
            sample = np.sort(np.random.default_rng(self.seed).choice(self.n, size=min(self.n, 64 * self.nlist),
                                                                     replace=False))
            index.train(_rows_of(self.vectors, sample, self.metric))
            self._quantizer = quantizer  # keep the SWIG object alive with the index
        for start in range(0, self.n, self.add_block):
            index.add(_rows_of(self.vectors, slice(start, start + self.add_block), self.metric))
        return index

    def _prepare(self, k: int, n_queries: int) -> None:
        kind = self._resolve_kind(n_queries)
        want_gpu = self.device in ("faiss-gpu", "torch") or (self.device == "auto" and _gpu_available())
        if self.device == "torch" or (want_gpu and self.device == "auto" and kind == "flat"
                                      and not (_faiss_gpus() and k + 1 <= FAISS_GPU_MAX_K) and _torch_cuda()):
            if kind != "flat":
                raise ValueError("NeighbourIndex: the torch backend searches exactly; use kind='flat'")
            self._prepare_torch()
            return
        if self._cpu_index is None or getattr(self, "_cpu_kind", None) != kind:
            self._cpu_index, self._cpu_kind = self._build_cpu(kind), kind
        self.backend = "faiss-cpu"
        if want_gpu and self.device != "cpu" and _faiss_gpus() and k + 1 <= FAISS_GPU_MAX_K:
            if self._gpu_index is None:
                import faiss

                self._gpu_resources = faiss.StandardGpuResources()
                self._gpu_index = faiss.index_cpu_to_gpu(self._gpu_resources, 0, self._cpu_index)
            self.backend = "faiss-gpu"
        elif self.device == "faiss-gpu":
            raise ValueError(f"NeighbourIndex: device='faiss-gpu' but "
                             + ("FAISS sees no GPU" if not _faiss_gpus() else
                                f"k + 1 = {k + 1} > {FAISS_GPU_MAX_K}, FAISS's GPU limit"))

    def build(self, k: int = 1, n_queries: int | None = None) -> "NeighbourIndex":
        """Build the index now (otherwise the first search does): for searches of depth ``k`` by
        ``n_queries`` queries (every paper by default), which decide ``"auto"`` and the device."""
        self._prepare(k, self.n if n_queries is None else n_queries)
        return self

    def _prepare_torch(self) -> None:
        if self._torch_database is None:
            device = "cuda" if _torch_cuda() else "cpu"
            import torch

            self._torch_database = torch.cat([
                torch.from_numpy(_rows_of(self.vectors, slice(s, s + self.add_block), self.metric)).to(device)
                for s in range(0, self.n, self.add_block)])
            self._torch_squares = (self._torch_database ** 2).sum(1) if self.metric == "l2" else None
            self.backend = f"torch-{device}"
            self._cpu_kind = "flat"

    def describe(self) -> str:
        kind = getattr(self, "_cpu_kind", self.kind)
        text = f"{kind} index over {self.n:,} × {self.dimension} ({self.metric})"
        if kind == "ivf":
            text += f", nlist {self.nlist}, nprobe {self._last_nprobe if hasattr(self, '_last_nprobe') else self.nprobe}"
        return text + f" on {self.backend or 'not built yet'}"

    def default_nprobe(self, k: int) -> int:
        """Cells to visit so that ≈ 8 (k + 1) candidates are scanned (an IVF cell holds ≈ N / nlist papers)."""
        return int(min(self.nlist, max(1, math.ceil(8 * (k + 1) * self.nlist / self.n))))

    # -- searching
    def _search_block(self, queries: np.ndarray, k1: int) -> np.ndarray:
        if self.backend.startswith("torch"):
            return self._torch_search(queries, k1)
        index = self._gpu_index if self.backend == "faiss-gpu" else self._cpu_index
        return index.search(queries, k1)[1]

    def _torch_search(self, queries: np.ndarray, k1: int) -> np.ndarray:
        import torch

        database = self._torch_database
        q = torch.from_numpy(queries).to(database.device)
        chunk = max(k1, int(2 ** 27 // max(1, len(queries))))  # ≤ 512 MiB of float32 scores at once
        best_scores = best_rows = None
        for start in range(0, self.n, chunk):
            part = database[start:start + chunk]
            scores = q @ part.T
            if self.metric == "l2":  # nearer = smaller |q - x|²; rank by 2 q·x - |x|² (|q|² is constant)
                scores = 2 * scores - self._torch_squares[start:start + chunk]
            top = scores.topk(min(k1, scores.shape[1]), dim=1)
            rows = top.indices + start
            if best_scores is None:
                best_scores, best_rows = top.values, rows
            else:
                merged = torch.cat([best_scores, top.values], 1).topk(min(k1, best_scores.shape[1] + top.values.shape[1]), dim=1)
                best_rows = torch.cat([best_rows, rows], 1).gather(1, merged.indices)
                best_scores = merged.values
        return best_rows.cpu().numpy().astype(np.int64)

    def blocks(self, query_rows: np.ndarray | None, k: int, block_size: int = 1024,
               nprobe: int | None = None, progress: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(rows, neighbours)`` per block of queries: the ``k`` nearest *other* rows of each query row,
        nearest first, ``-1`` where an approximate index found fewer. ``query_rows`` None = every row."""
        if k < 1 or k > self.n - 1:
            raise ValueError(f"NeighbourIndex: k must be in [1, {self.n - 1}], got {k}")
        query_rows = np.arange(self.n, dtype=np.int64) if query_rows is None else np.asarray(query_rows, np.int64)
        self._prepare(k, len(query_rows))
        if getattr(self, "_cpu_kind", None) == "ivf":
            self._last_nprobe = int(nprobe or self.nprobe or self.default_nprobe(k))
            index = self._gpu_index if self.backend == "faiss-gpu" else self._cpu_index
            index.nprobe = self._last_nprobe
        starts = range(0, len(query_rows), block_size)
        for start in tqdm(starts, desc="neighbour search", disable=not progress):
            rows = query_rows[start:start + block_size]
            found = self._search_block(_rows_of(self.vectors, rows, self.metric), min(k + 1, self.n))
            yield rows, _drop_self(rows, found, k)


def _faiss_gpus() -> int:
    import faiss

    return faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0


def _torch_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _gpu_available() -> bool:
    return _faiss_gpus() > 0 or _torch_cuda()


def exact_neighbours(vectors: np.ndarray, query_rows: np.ndarray, k: int, metric: str = "ip",
                     chunk_rows: int = 262_144) -> np.ndarray:
    """Exact ``k`` nearest other rows of some queries, scanning the papers in chunks of ``chunk_rows``
    (memory: one chunk of vectors and ``len(query_rows) × 2(k + 1)`` candidates, whatever ``N``). The
    reference :func:`band_recall` measures approximate indexes against."""
    import faiss

    query_rows = np.asarray(query_rows, dtype=np.int64)
    n = int(vectors.shape[0])
    k = min(k, n - 1)
    queries = _rows_of(vectors, query_rows, metric)
    larger_is_nearer = metric != "l2"
    best_scores = best_rows = None
    for start in range(0, n, chunk_rows):
        part = _rows_of(vectors, slice(start, start + chunk_rows), metric)
        index = faiss.IndexFlatL2(part.shape[1]) if metric == "l2" else faiss.IndexFlatIP(part.shape[1])
        index.add(part)
        scores, rows = index.search(queries, min(k + 1, len(part)))
        rows = np.where(rows >= 0, rows + start, -1)
        if best_scores is not None:
            scores, rows = np.concatenate([best_scores, scores], 1), np.concatenate([best_rows, rows], 1)
        best_scores, best_rows = _ranked_merge(scores, rows, k + 1, larger_is_nearer)
    return _drop_self(query_rows, best_rows, k)


@dataclass(frozen=True)
class BandSetting:
    """SciNCL's sampling hyper-parameters (§3.3–3.4) as :func:`knn_bands` keys them; any object with these
    attributes (such as :class:`sdr.methods.scincl.Bands`) is read through :meth:`of`."""

    k_pos: int = 25
    c_pos: int = 5
    k_hard: int = 4000
    c_hard: int = 2
    c_easy: int = 3
    filtered_random: bool = True

    @classmethod
    def of(cls, setting) -> "BandSetting":
        if isinstance(setting, cls):
            return setting
        if isinstance(setting, Mapping):
            return cls(**setting)
        return cls(**{name: getattr(setting, name) for name in cls.__dataclass_fields__})

    def validate(self) -> None:
        if not (1 <= self.c_pos <= self.k_pos and 0 <= self.c_hard <= self.k_hard and self.c_easy >= 0
                and self.c_hard + self.c_easy >= 1):
            raise ValueError(
                "knn_band_triplets: need 1 <= c_pos <= k_pos, 0 <= c_hard <= k_hard, c_easy >= 0 and "
                f"c_hard + c_easy >= 1; got k_pos={self.k_pos}, c_pos={self.c_pos}, k_hard={self.k_hard}, "
                f"c_hard={self.c_hard}, c_easy={self.c_easy}"
            )
        if self.c_pos > self.c_hard + self.c_easy:
            raise ValueError(
                f"knn_band_triplets: c_pos ({self.c_pos}) must be <= c_hard + c_easy ({self.c_hard + self.c_easy}): "
                "each negative makes one triplet, so further positives would never be used"
            )

    def clipped(self, n: int) -> tuple["BandSetting", str | None]:
        """The setting with ``k`` clipped to ``n − 1`` papers, and the warning that says so (or None)."""
        if self.k_pos <= n - 1 and self.k_hard <= n - 1:
            return self, None
        k_pos, k_hard = min(self.k_pos, n - 1), min(self.k_hard, n - 1)
        message = (f"k clipped to the corpus: k_pos {self.k_pos} -> {k_pos}, k_hard {self.k_hard} -> {k_hard} "
                   f"({n} papers).")
        return BandSetting(k_pos, min(self.c_pos, k_pos), k_hard, min(self.c_hard, k_hard), self.c_easy,
                           self.filtered_random), message

    @property
    def depth(self) -> int:
        return max(self.k_pos, self.k_hard)


def _random_rows_marked(n_rows: int, count: int, forbidden: np.ndarray, rng: np.random.Generator,
                        marked: np.ndarray) -> list[int]:
    """:func:`_random_rows` with the same draws, its membership test a lookup in ``marked`` (all False on
    entry and on return) instead of a sort of ``forbidden`` per query."""
    count = min(count, n_rows - len(forbidden))
    if count <= 0:
        return []
    if n_rows - len(forbidden) <= max(4 * count, n_rows // 2):
        allowed = np.setdiff1d(np.arange(n_rows), forbidden, assume_unique=True)
        return [int(i) for i in rng.choice(allowed, size=count, replace=False)]
    marked[forbidden] = True
    try:
        chosen: list[int] = []
        while len(chosen) < count:
            draws = rng.integers(0, n_rows, size=2 * count + 4)
            for row in draws[~marked[draws]].tolist():
                if row not in chosen:
                    chosen.append(row)
                    if len(chosen) == count:
                        break
        return chosen
    finally:
        marked[forbidden] = False


@dataclass
class KnnBands:
    """What SciNCL's sampler keeps of one neighbour search: per query and per :class:`BandSetting`, the rows
    of its positive band, its hard-negative band and its easy negatives (``-1`` where there are fewer).

    Memory ``queries × Σ (c_pos + c_hard + c_easy) × 8`` bytes — not ``queries × max(k)``. Build with
    :func:`knn_bands`; :meth:`triplets` turns one setting into :class:`Triplet` ids and a report.
    """

    ids: Sequence[str]
    query_rows: np.ndarray
    queries_total: int
    missing_queries: int
    settings: dict  # requested BandSetting -> (clipped BandSetting, warning or None)
    positives: dict
    hard: dict
    easy: dict
    search: str = ""
    seconds: float = 0.0

    def triplets(self, setting=None, margin: float = 1.0, verbose: bool = False) -> tuple[list[Triplet], SamplingReport]:
        """The triplets of one setting (the first one searched when None), as :func:`knn_band_triplets`
        makes them: ``c_hard + c_easy`` per query, positive ``i`` paired with negative ``i``."""
        key = next(iter(self.settings)) if setting is None else BandSetting.of(setting)
        if key not in self.settings:
            raise KeyError(f"KnnBands: setting {key} was not searched; searched {list(self.settings)}")
        used, warning = self.settings[key]
        report = SamplingReport(method="knn_band_triplets", queries_total=self.queries_total)
        if warning:
            report.warnings.append(warning)
        if self.missing_queries:
            report.skipped["not in embeddings"] += self.missing_queries
        ids = self.ids
        triplets: list[Triplet] = []
        for query_row, positive_rows, hard_rows, easy_rows in zip(
                self.query_rows.tolist(), self.positives[key].tolist(), self.hard[key].tolist(), self.easy[key].tolist()):
            positives = [ids[i] for i in positive_rows if i >= 0]
            hard = [ids[i] for i in hard_rows if i >= 0]
            easy = [ids[i] for i in easy_rows if i >= 0]
            report.negatives_short += used.c_easy - len(easy)
            negatives = hard + easy
            if not positives or not negatives:
                report.skipped["no neighbours"] += 1
                continue
            kinds = ["hard"] * len(hard) + ["easy"] * len(easy)
            query = ids[query_row]
            triplets.extend(Triplet(query, positives[j % len(positives)], negative, kind, margin)
                            for j, (negative, kind) in enumerate(zip(negatives, kinds)))
            report.queries_used += 1
            report.hard_negatives += len(hard)
            report.easy_negatives += len(easy)
        return _finish(report, triplets, verbose)


def _positions_of(ids: Sequence[str], wanted: Iterable[str]) -> dict[str, int]:
    """Row of each wanted id, by one scan of ``ids`` (no dictionary over the whole corpus)."""
    wanted = set(wanted)
    found: dict[str, int] = {}
    for row, pid in enumerate(ids):
        if pid in wanted:
            found[pid] = row
            if len(found) == len(wanted):
                break
    return found


def knn_bands(
    embeddings: np.ndarray,
    ids: Sequence[str],
    settings: Sequence,
    *,
    metric: str = "l2",
    query_ids: Iterable[str] | None = None,
    seed: int = 0,
    index: str | NeighbourIndex = "flat",
    nlist: int | None = None,
    nprobe: int | None = None,
    device: str = "auto",
    block_size: int = 1024,
    progress: bool = False,
) -> KnnBands:
    """One neighbour search for several SciNCL band settings (the main one and, say, a k⁻hard sweep).

    The index (:class:`NeighbourIndex`; ``index`` names its kind or is a built one) is searched once, in
    blocks of ``block_size`` queries, to the deepest ``max(k⁺, k⁻hard)`` of all settings; from each block
    only the band columns and the easy negatives are kept (:class:`KnnBands`). Easy negatives are drawn per
    setting with their own ``numpy`` generator seeded ``seed``, in query order, so every setting gets the
    triplets :func:`knn_band_triplets` alone would give with that seed. Queries not in ``ids`` are counted
    as skipped.
    """
    import time

    started = time.perf_counter()
    vectors = embeddings if getattr(embeddings, "dtype", None) == np.float32 else np.asarray(embeddings, np.float32)
    if getattr(vectors, "ndim", 0) != 2:
        raise ValueError(f"knn_band_triplets: embeddings must be a 2-D array [n, d], got shape {np.shape(vectors)}")
    ids = [str(pid) for pid in ids]  # (a str is returned as itself: no copy of the text)
    if len(ids) != vectors.shape[0]:
        raise ValueError(f"knn_band_triplets: {len(ids)} ids for {vectors.shape[0]} embeddings")
    if metric not in METRICS:
        raise ValueError(f"knn_band_triplets: metric must be 'l2', 'ip' or 'cosine', got {metric!r}")
    requested = [BandSetting.of(s) for s in settings]
    if not requested:
        raise ValueError("knn_bands: give at least one band setting")
    for setting in requested:
        setting.validate()
    n = len(ids)
    if n < 2:
        raise ValueError(f"knn_band_triplets: need at least 2 embeddings, got {n}")
    if len(set(ids)) != n:
        duplicates = [pid for pid, count in Counter(ids).items() if count > 1][:5]
        raise ValueError(f"knn_band_triplets: duplicate ids {duplicates}")
    clipped = {s: s.clipped(n) for s in requested}
    depth = max(used.depth for used, _ in clipped.values())

    if query_ids is None:
        query_rows, total, missing = np.arange(n, dtype=np.int64), n, 0
    else:
        queries = [str(q) for q in query_ids]
        position = _positions_of(ids, queries)
        known = [position[q] for q in queries if q in position]
        query_rows, total, missing = np.asarray(known, dtype=np.int64), len(queries), len(queries) - len(known)

    searcher = index if isinstance(index, NeighbourIndex) else NeighbourIndex(
        vectors, metric, index, nlist=nlist, nprobe=nprobe, device=device, seed=seed)
    q = len(query_rows)
    row_type = np.int32 if n < 2 ** 31 else np.int64
    positives = {s: np.full((q, used.c_pos), -1, row_type) for s, (used, _) in clipped.items()}
    hard = {s: np.full((q, used.c_hard), -1, row_type) for s, (used, _) in clipped.items()}
    easy = {s: np.full((q, used.c_easy), -1, row_type) for s, (used, _) in clipped.items()}
    generators = {s: np.random.default_rng(seed) for s in clipped}
    marked = np.zeros(n, dtype=bool)
    done = 0
    if q:
        for rows, found in searcher.blocks(query_rows, depth, block_size, progress=progress):
            block = slice(done, done + len(rows))
            for s, (used, _) in clipped.items():
                positives[s][block] = found[:, used.k_pos - used.c_pos:used.k_pos]
                if used.c_hard:
                    hard[s][block] = found[:, used.k_hard - used.c_hard:used.k_hard]
                rng = generators[s]
                for j, query_row in enumerate(rows.tolist()):
                    if used.filtered_random:  # strategy III: not within the top max(k); never the query itself
                        top = found[j, :used.depth]
                        forbidden = np.append(top[top >= 0], query_row)
                    else:
                        forbidden = np.array([query_row])
                    drawn = _random_rows_marked(n, used.c_easy, forbidden, rng, marked)
                    easy[s][done + j, :len(drawn)] = drawn
            done += len(rows)
    return KnnBands(ids=ids, query_rows=query_rows, queries_total=total, missing_queries=missing,
                    settings=clipped, positives=positives, hard=hard, easy=easy, search=searcher.describe(),
                    seconds=time.perf_counter() - started)


def knn_band_triplets(
    embeddings: np.ndarray,
    ids: Sequence[str],
    k_pos: int = 25,
    c_pos: int = 5,
    k_hard: int = 4000,
    c_hard: int = 2,
    c_easy: int = 3,
    filtered_random: bool = True,
    seed: int = 0,
    *,
    metric: str = "l2",
    query_ids: Iterable[str] | None = None,
    margin: float = 1.0,
    batch_size: int = 1024,
    progress: bool = True,
    verbose: bool = True,
    index: str | NeighbourIndex = "flat",
    nlist: int | None = None,
    nprobe: int | None = None,
    device: str = "auto",
    neighbours: KnnBands | None = None,
) -> tuple[list[Triplet], SamplingReport]:
    """SciNCL's neighbourhood sampling (Ostendorff et al., §3.3–3.4, strategies I + II/III).

    A FAISS index over the citation embeddings (``metric="l2"``, ``"ip"`` inner product, or ``"cosine"`` =
    inner product of L2-normalised vectors; exact ``IndexFlat`` by default, as SciNCL's "flat index
    (exhaustive search)", A.5) is searched once per query up to ``max(k_pos, k_hard)`` neighbours
    ``n_1, n_2, …`` (the query itself removed). Positives are the ``c_pos`` neighbours of the band
    ``(k_pos − c_pos, k_pos]``, hard negatives the band ``(k_hard − c_hard, k_hard]`` — as
    ``nearest_idxs[k − c : k]`` in malteos/scincl ``gdt/triples_miner/sampling.py``. ``c_easy`` easy
    negatives are random papers; with ``filtered_random`` (strategy III, SciNCL's best) those within the top
    ``max(k)`` neighbours are excluded. The query is never its own easy negative (SciNCL's random pool may
    contain it).

    Each query yields ``c_hard + c_easy`` triplets (5); positive ``i`` is paired with negative ``i``
    (cycling through the positives if ``c_pos`` is smaller; a larger ``c_pos`` is refused). A ``k``
    larger than the corpus allows is clipped to ``len(ids) − 1`` with a counted warning. Defaults are
    SciNCL's best: k⁺ = 25, c⁺ = 5, k⁻_hard = 4000, c⁻_hard = 2, c⁻easy = 3 (§6, Table 2); the
    paper's "filtered random" easy negatives are drawn from all ``ids`` (SciNCL draws from the queries).

    Queries are searched in blocks of ``batch_size`` and only the bands are kept (:func:`knn_bands`), so
    memory stays ``batch_size × max(k)`` during the search and ``queries × 10`` rows after it. ``index``,
    ``nlist``, ``nprobe`` and ``device`` choose the search (:class:`NeighbourIndex`: ``"ivf"`` for corpora
    where exact search is too slow, a GPU when present). ``neighbours``: the result of an earlier
    :func:`knn_bands` that searched this setting (the search is then not repeated).
    """
    setting = BandSetting(k_pos, c_pos, k_hard, c_hard, c_easy, filtered_random)
    if neighbours is None:
        neighbours = knn_bands(embeddings, ids, [setting], metric=metric, query_ids=query_ids, seed=seed,
                               index=index, nlist=nlist, nprobe=nprobe, device=device, block_size=batch_size,
                               progress=progress)
    else:
        setting.validate()
    return neighbours.triplets(setting, margin=margin, verbose=verbose)


def band_check(triplets: Sequence[Triplet], embeddings: np.ndarray, ids: Sequence[str], bands, *,
               metric: str = "l2", block_size: int = 1024, index: str | NeighbourIndex = "flat",
               device: str = "auto"):
    """Per triplet, the neighbour rank (1 = nearest, self excluded) of its positive and negative among the
    query's ``max(k)`` nearest, 0 when outside them, and whether each lies in its band — the table
    :func:`sdr.methods.scincl.band_ranks` makes, computed with a blocked search (memory ``block_size ×
    max(k)``, not ``queries × max(k)`` plus a dictionary per query).

    Columns: ``query, positive, negative, kind, positive_rank, negative_rank, positive_in_band,
    negative_in_band`` — an easy negative is "in band" when it is outside the top ``max(k)`` (filtered
    random) or anywhere (plain random). A query without a vector raises ``KeyError``.
    """
    import pandas as pd

    columns = ["query", "positive", "negative", "kind", "positive_rank", "negative_rank",
               "positive_in_band", "negative_in_band"]
    triplets = list(triplets)
    if not triplets:
        return pd.DataFrame(columns=columns)
    bands = BandSetting.of(bands)
    ids = [str(pid) for pid in ids]
    n = len(ids)
    k_max = min(max(bands.k_pos, bands.k_hard), n - 1)
    position = _positions_of(ids, {pid for t in triplets for pid in (t.query, t.positive, t.negative)})
    queries = sorted({t.query for t in triplets})
    missing = [q for q in queries if q not in position]
    if missing:
        raise KeyError(f"band_check: {len(missing)} query ids have no vector, e.g. {missing[:3]}")
    query_rows = np.array([position[q] for q in queries], dtype=np.int64)
    slot = {q: i for i, q in enumerate(queries)}
    by_query: dict[int, list[int]] = {}
    for number, t in enumerate(triplets):
        by_query.setdefault(slot[t.query], []).append(number)
    positive_rank = np.zeros(len(triplets), dtype=np.int64)
    negative_rank = np.zeros(len(triplets), dtype=np.int64)
    vectors = embeddings if getattr(embeddings, "dtype", None) == np.float32 else np.asarray(embeddings, np.float32)
    searcher = index if isinstance(index, NeighbourIndex) else NeighbourIndex(vectors, metric, index, device=device)
    done = 0
    for rows, found in searcher.blocks(query_rows, k_max, block_size):
        members = [(done + j, number) for j in range(len(rows)) for number in by_query[done + j]]
        done += len(rows)
        block_slots = np.array([s - (done - len(rows)) for s, _ in members], dtype=np.int64)
        numbers = np.array([number for _, number in members], dtype=np.int64)
        for target, out in (("positive", positive_rank), ("negative", negative_rank)):
            target_rows = np.array([position.get(getattr(triplets[i], target), -2) for i in numbers], np.int64)
            hits = found[block_slots] == target_rows[:, None]
            out[numbers] = np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, 0)
    rows = []
    for number, t in enumerate(triplets):
        p_rank, n_rank = int(positive_rank[number]), int(negative_rank[number])
        if t.kind == "hard":
            negative_ok = bands.k_hard - bands.c_hard < n_rank <= bands.k_hard
        else:
            negative_ok = n_rank == 0 or not bands.filtered_random
        rows.append({"query": t.query, "positive": t.positive, "negative": t.negative, "kind": t.kind,
                     "positive_rank": p_rank, "negative_rank": n_rank,
                     "positive_in_band": bands.k_pos - bands.c_pos < p_rank <= bands.k_pos,
                     "negative_in_band": negative_ok and t.negative != t.query})
    return pd.DataFrame(rows, columns=columns)


def band_recall(embeddings: np.ndarray, settings: Sequence, approximate: NeighbourIndex, *, metric: str = "ip",
                sample: int = 1000, seed: int = 0, block_size: int = 256, chunk_rows: int = 262_144,
                nprobes: Sequence[int | None] = (None,)) -> list[dict]:
    """How well an approximate index (IVF) reproduces SciNCL's bands, against exact search on a sample.

    ``sample`` query rows (seeded) are searched on ``approximate`` to the deepest ``max(k)`` of the settings
    (once per value of ``nprobes``; None = the index's own) and exactly (:func:`exact_neighbours`, twice as
    deep, so that displaced neighbours still have an exact rank). Per setting and nprobe:
    ``positive_band_recall`` / ``hard_band_recall`` — the share of the exact band's rows that the approximate
    search also puts in the band (strict: one missed nearer neighbour shifts the band); ``top_k_recall`` —
    the share of the exact top ``max(k)`` found at all; the exact ranks of the rows the approximate search
    puts in the hard band (median and 95th percentile; beyond the exact depth counts as ``2·depth + 1``),
    since a hard negative drawn a few ranks deeper than k⁻hard is still a hard negative; and the seconds
    each search took (``approximate_seconds``, ``exact_seconds``).
    """
    import time

    vectors = embeddings
    n = int(vectors.shape[0])
    requested = [BandSetting.of(s) for s in settings]
    clipped = [s.clipped(n)[0] for s in requested]
    depth = max(s.depth for s in clipped)
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(sample, n), replace=False))
    started = time.perf_counter()
    exact = exact_neighbours(vectors, rows, min(n - 1, 2 * depth), metric, chunk_rows)
    exact_seconds = time.perf_counter() - started
    beyond = 2 * depth + 1
    results = []
    for nprobe in nprobes:
        started = time.perf_counter()
        approx = np.concatenate([found for _, found in approximate.blocks(rows, depth, block_size, nprobe=nprobe)])
        approximate_seconds = time.perf_counter() - started
        for requested_setting, s in zip(requested, clipped):
            def band_overlap(lo: int, hi: int) -> float:
                if hi <= lo:
                    return float("nan")
                shared = [len(set(a[lo:hi].tolist()) & set(e[lo:hi].tolist()) - {-1}) for a, e in zip(approx, exact)]
                return float(np.mean(shared) / (hi - lo))

            top = [len(set(a[:s.depth].tolist()) & set(e[:s.depth].tolist()) - {-1}) / s.depth
                   for a, e in zip(approx, exact)]
            exact_ranks = []
            for a, e in zip(approx, exact):
                rank_of = {row: r for r, row in enumerate(e.tolist(), 1)}
                exact_ranks += [rank_of.get(row, beyond) for row in a[s.k_hard - s.c_hard:s.k_hard].tolist() if row >= 0]
            exact_ranks = np.array(exact_ranks or [beyond])
            results.append({
                "setting": requested_setting, "queries": len(rows), "depth": s.depth,
                "positive_band_recall": band_overlap(s.k_pos - s.c_pos, s.k_pos),
                "hard_band_recall": band_overlap(s.k_hard - s.c_hard, s.k_hard),
                "top_k_recall": float(np.mean(top)),
                "hard_exact_rank_median": float(np.median(exact_ranks)),
                "hard_exact_rank_p95": float(np.percentile(exact_ranks, 95)),
                "index": approximate.describe(), "nprobe": getattr(approximate, "_last_nprobe", None),
                "approximate_seconds": approximate_seconds, "exact_seconds": exact_seconds,
            })
    return results


def given_triplets(paper_triplets: Iterable[tuple[Paper, Paper, Paper]], kind: str = "given",
                   margin: float = 1.0) -> tuple[list[Triplet], dict[str, Paper]]:
    """Triplets that come ready-made (SciRepEval's SPECTER-style ``query/pos/neg`` records), as
    :class:`Triplet` ids plus the papers they name, so they train beside sampled ones."""
    triplets, papers = [], {}
    for query, positive, negative in paper_triplets:
        papers.update({paper.paper_id: paper for paper in (query, positive, negative)})
        triplets.append(Triplet(query.paper_id, positive.paper_id, negative.paper_id, kind, margin))
    return triplets, papers


def count_collisions(examples: Iterable[Triplet | ContrastiveExample], symmetric: bool = True) -> int:
    """Number of paper pairs used both as a positive and as a negative pair (SciNCL A.8).

    "A collision occurs when the paper pair (d_q, d_s) is contained in the training data as positive and
    as negative sample at the same time." With ``symmetric=True`` (default) the pair is unordered, so
    SPECTER's case in SciNCL A.7.10 counts: ``a`` cites ``b`` (positive pair for query ``a``) while
    ``a`` is drawn as a negative of query ``b``. ``symmetric=False`` counts ordered (query, sample) pairs.
    Each distinct pair counts once.
    """
    positive_pairs: set[tuple[str, str]] = set()
    negative_pairs: set[tuple[str, str]] = set()

    def key(a: str, b: str) -> tuple[str, str]:
        return (a, b) if not symmetric or a <= b else (b, a)

    for example in examples:
        if isinstance(example, Triplet):
            positive_pairs.add(key(example.query, example.positive))
            negative_pairs.add(key(example.query, example.negative))
        elif isinstance(example, ContrastiveExample):
            positive_pairs.update(key(example.query, p) for p in example.positives)
            negative_pairs.update(key(example.query, n) for n in example.negatives)
        else:
            raise TypeError(f"count_collisions: expected Triplet or ContrastiveExample, got {type(example).__name__}")
    return len(positive_pairs & negative_pairs)


# ------------------------------------------------------------------------------------- PK batches


class PKBatchSampler(Sampler[list[int]]):
    """Batches of ``p`` classes × ``k`` examples (Hermans et al. 2017), for metric-learning losses.

    SciToricsBERT (paper 004, App. B) uses P = 64, K = 1 for softmax/ArcFace and P = 8, K = 8 for the
    others (:data:`sdr.losses.SCITORICS_PK`). Each batch draws ``p`` distinct classes, then ``k``
    distinct examples per class; classes with fewer than ``k`` examples are sampled with replacement
    and counted in ``classes_below_k`` (printed once). With fewer classes than ``p`` every batch holds
    all classes and keeps its ``p·k`` examples, spread as evenly as possible over the classes
    (``fewer_classes_than_p`` is True and the report says so). ``len()`` is ``num_batches`` (default
    ``len(labels) // (p·k)``, at least 1). Deterministic: epoch ``e`` uses the seed ``(seed, e)``; each
    full iteration advances the epoch, or set it with :meth:`set_epoch`. Yields lists of indices, so
    use it as ``DataLoader(dataset, batch_sampler=...)``; calling it as
    ``sampler(n_examples, seed, epoch)`` gives one epoch's batches, the form
    :func:`sdr.train.train`'s ``batch_sampler`` takes (there the trainer's seed is used).
    """

    def __init__(
        self,
        labels: Sequence | np.ndarray,
        p: int,
        k: int,
        seed: int = 0,
        num_batches: int | None = None,
        verbose: bool = True,
    ):
        if hasattr(labels, "tolist"):
            labels = labels.tolist()
        labels = list(labels)
        if p < 1 or k < 1:
            raise ValueError(f"PKBatchSampler: p and k must be >= 1, got p={p}, k={k}")
        self.members: dict = {}
        for index, label in enumerate(labels):
            self.members.setdefault(label, []).append(index)
        self.classes = list(self.members)
        self.fewer_classes_than_p = len(self.classes) < p
        self.member_arrays = [np.asarray(self.members[c], dtype=np.int64) for c in self.classes]
        self.p, self.k, self.seed = p, k, seed
        self.num_batches = num_batches if num_batches is not None else max(1, len(labels) // (p * k))
        if self.num_batches < 1:
            raise ValueError(f"PKBatchSampler: num_batches must be >= 1, got {self.num_batches}")
        self.n_labels = len(labels)
        # examples drawn per class in a batch: k, or p·k spread over all classes when there are fewer than p
        per_class = k if not self.fewer_classes_than_p else -(-p * k // len(self.classes))
        self.classes_below_k = {c: len(self.members[c]) for c in self.classes
                                if len(self.members[c]) < per_class}
        self.epoch = 0
        if verbose and (self.classes_below_k or self.fewer_classes_than_p):
            print(self.report())

    def report(self) -> str:
        """One line: batch shape and the classes sampled with replacement."""
        return (
            f"PKBatchSampler: {self.num_batches} batches of {self.p} classes x {self.k} examples from "
            f"{len(self.classes)} classes; {len(self.classes_below_k)} classes have fewer than {self.k} "
            "examples and are sampled with replacement."
            + (f" Fewer classes than p={self.p}: each batch holds all {len(self.classes)} classes, "
               f"{self.p * self.k} examples spread evenly over them." if self.fewer_classes_than_p else "")
        )

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose batches the next iteration yields."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self.num_batches

    def __iter__(self) -> Iterator[list[int]]:
        batches = self.epoch_batches(self.seed, self.epoch)
        self.epoch += 1
        yield from batches

    def __call__(self, n_examples: int, seed: int, epoch: int) -> list[list[int]]:
        """One epoch's batches for :func:`sdr.train.train` (``batch_sampler=sampler``)."""
        if n_examples != self.n_labels:
            raise ValueError(f"PKBatchSampler: built for {self.n_labels} labels, asked to batch {n_examples} "
                             "examples; give it one label per training example")
        return self.epoch_batches(seed, epoch)

    def epoch_batches(self, seed: int, epoch: int) -> list[list[int]]:
        """The ``num_batches`` batches of one epoch, a pure function of (seed, epoch)."""
        rng = np.random.default_rng([seed, epoch])
        n_classes = len(self.classes)
        batches = []
        for _ in range(self.num_batches):
            batch: list[int] = []
            if self.fewer_classes_than_p:  # all classes, p·k examples split as evenly as possible
                sizes = np.full(n_classes, self.p * self.k // n_classes)
                sizes[rng.permutation(n_classes)[:self.p * self.k % n_classes]] += 1
                classes = rng.permutation(n_classes)
                counts = [int(sizes[c]) for c in classes]
            else:
                classes = rng.choice(n_classes, size=self.p, replace=False)
                counts = [self.k] * self.p
            for class_index, count in zip(classes, counts):
                members = self.member_arrays[int(class_index)]
                picks = rng.choice(members, size=count, replace=len(members) < count)
                batch.extend(int(i) for i in picks)
            batches.append(batch)
        return batches
