"""Samplers that read the citation graph: positives and negatives of a query from its links.

* :func:`specter_triplets` — SPECTER (Cohan et al. 2020) citation triplets, as SciNCL replicated them.
* :func:`undirected_triplets` — SPECTER(Undirected), thesis (Bansal) Exp. 1, §5.1.
* :func:`contrastive_examples` — SPECTERCL groups (1 positive / 5 negatives), thesis Exp. 2, §5.2.
* :func:`graph_pools` — the positive and hard-negative pools of one query, shared by all three.

Deterministic for a seed: pools are sorted before drawing (set order of strings changes between processes)
and one ``numpy.random.Generator`` is consumed in query order (sorted node ids by default). Pools are built
from per-query sets, and easy negatives are drawn by rejection sampling, so the cost grows with the edges,
not with queries × corpus. This module changes with the graph-based recipes only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from sdr.corpus import CitationGraph, Paper
from sdr.samplers.examples import ContrastiveExample, SamplingReport, Triplet, _finish


#: SPECTER's own ``--ratio_hard_negatives`` default (allenai/specter
#: ``specter/data_utils/create_training_files.py``): ``ceil(0.3 * 5) = 2`` hard of 5 triplets per query.
SPECTER_RATIO_HARD_NEGATIVES = 0.3

#: How hard negatives are reached from the query (see :func:`graph_pools`).
HARD_NEGATIVE_MODES = ("references_of_references", "two_hop")


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
