"""The samplers of the thesis' Experiments 2–5 (Bansal, *Scientific Document Representation Learning*, §5.1–5.5).

* SPECTERCL (§5.2): SPECTER(Undirected)'s pools grouped into the instances of a Table 6.3 variant
  (:func:`specter_cl_examples`, :data:`SPECTERCL_VARIANTS`).
* The SciAspect family: one instance per anchor and aspect (:func:`aspect_examples`; :func:`sciaspect_examples`
  for Table 6.4, :func:`sciaspect_hybrid_examples` for §5.4, :func:`sciaspect_l2_examples` for Table 6.7), from
  the candidate pools of :func:`aspect_pools`; :func:`violations` checks instances against the thesis' rules.

Where the thesis is silent we chose, and each choice is named where it is made (search "Choice:").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from sdr.corpus import INTENTS, MISCELLANEOUS, CitationGraph, Paper
from sdr.samplers import (
    ContrastiveExample,
    SamplingReport,
    count_collisions,
    graph_pools,
)
# Private helpers of the shared sampler module, reused rather than copied: the sorted candidate pool
# with rejection sampling for easy negatives, the seeded distinct draw and the oversampling positive draw.
from sdr.samplers import _CandidatePool, _draw_distinct, _draw_positives

__all__ = ["ASPECT_SPACES", "SPECTERCL_VARIANTS", "SCIASPECT_VARIANTS", "L2_CONFIGS", "POSITIVES_PER_QUERY",
           "specter_cl_examples", "AspectExample", "AspectPools", "aspect_neighbours", "aspect_pools",
           "AspectSamplingReport", "aspect_examples", "sciaspect_examples", "sciaspect_hybrid_examples",
           "sciaspect_l2_examples", "violations"]

#: The three aspect spaces evaluated in Exp. 3.4 (thesis: methodology, background, result).
ASPECT_SPACES = INTENTS

#: Table 6.3, Exp. 2.1: positives / negatives / hard negatives per instance. Choice: the thesis does not
#: say how many of the negatives are hard; we keep Exp. 1's share (2 of 5, SPECTER's ratio 0.3), and
#: the single negative of "1p1n" is a hard one (falling back to an easy one) so that it is a triplet.
SPECTERCL_VARIANTS = {
    "1 positive, 1 negative": dict(n_positives=1, n_negatives=1, n_hard=1),
    "1 positive, 5 negatives": dict(n_positives=1, n_negatives=5, n_hard=2),
    "1 positive, 3 easy negatives": dict(n_positives=1, n_negatives=3, n_hard=0),
    "2 positive, 5 negatives": dict(n_positives=2, n_negatives=5, n_hard=2),
    "4 positives, 5 negatives": dict(n_positives=4, n_negatives=5, n_hard=2),
    "5 positives, 5 negatives": dict(n_positives=5, n_negatives=5, n_hard=2),
}

#: Table 6.4, Exp. 3.1–3.3: "at most 5 positives, at most 10 hard negatives, 3 easy negatives" (§5.3).
SCIASPECT_VARIANTS = {
    "1 positive, n negatives (w/ misc aspect)": dict(n_positives=1, include_miscellaneous=True),
    "m positives, n negatives": dict(n_positives=5, include_miscellaneous=True),
    "1 positive, n negatives (w/o misc aspect)": dict(n_positives=1, include_miscellaneous=False),
}

#: Table 6.7, Exp. 5.1–5.3: hard (L2, other aspect) and easy negatives per instance, one positive.
L2_CONFIGS = {
    "SciAspect 1 positive 3 easy negatives": dict(n_hard=0, n_easy=3),
    "SciAspect L2 negatives (5 hard negatives)": dict(n_hard=5, n_easy=0),
    "SciAspect L2 negatives (3 hard negatives, 3 easy negatives)": dict(n_hard=3, n_easy=3),
}



# ------------------------------------------------------------------------------------------ SPECTERCL

#: §5.1: "For each query paper a total of 5 positives … are randomly sampled"; SPECTERCL (§5.2) follows the
#: same procedure, so every query contributes 5 positives per epoch, grouped into instances of the variant's size.
POSITIVES_PER_QUERY = 5


def specter_cl_examples(
    graph: CitationGraph,
    variant: str = "1 positive, 5 negatives",
    *,
    papers: Mapping[str, Paper] | None = None,
    candidates: Iterable[str] | None = None,
    query_ids: Iterable[str] | None = None,
    positives_per_query: int = POSITIVES_PER_QUERY,
    seed: int = 0,
    progress: bool = True,
    verbose: bool = True,
) -> tuple[list[ContrastiveExample], SamplingReport]:
    """SPECTERCL instances of one Table 6.3 variant (:data:`SPECTERCL_VARIANTS`), sampled as in §5.1.

    Per query: ``positives_per_query`` (5) positives from its direct references and citations (self-citations
    excluded; "oversampled if the required number of candidates is not found"), split into
    ``positives_per_query // n_positives`` instances of ``n_positives`` each (1 positive: 5 instances; 2: 2;
    4 and 5: 1). Each instance draws its own ``n_negatives`` negatives: ``n_hard`` hard ones from the
    references of the query's references that are not directly linked to it, the rest easy ones, i.e. corpus
    papers other than the query, its direct links and its references-of-references ("all papers in the corpus
    excluding the anchor paper and papers connected to the anchor paper (i.e., positive candidates and hard
    negative candidates)"). A shortfall of hard negatives is filled with easy ones and counted in the report
    (``hard_short``).

    Choice: with 2 positives an instance, the fifth positive is left out (2 instances of 2), so that every
    instance of a variant has the same shape.

    Shown in: notebooks/sciaspect.ipynb, Sampling.
    """
    if variant not in SPECTERCL_VARIANTS:
        raise ValueError(f"unknown SPECTERCL variant {variant!r}; expected one of {list(SPECTERCL_VARIANTS)}")
    settings = SPECTERCL_VARIANTS[variant]
    n_positives, n_negatives, n_hard = settings["n_positives"], settings["n_negatives"], settings["n_hard"]
    if positives_per_query < n_positives:
        raise ValueError(f"specter_cl_examples: positives_per_query ({positives_per_query}) is smaller than the "
                         f"variant's {n_positives} positives an instance")
    if len(graph) == 0:
        raise ValueError("specter_cl_examples: the citation graph has no edges, so there is nothing to sample")
    rng = np.random.default_rng(seed)
    pool = _CandidatePool(graph.nodes if candidates is None else candidates)
    authors = _authors(papers)
    nodes = graph.nodes
    queries = sorted(nodes) if query_ids is None else [str(q) for q in query_ids]
    report = SamplingReport(method="specter_cl_examples", queries_total=len(queries))
    examples: list[ContrastiveExample] = []
    per_query = positives_per_query // n_positives
    for query in tqdm(queries, desc="specter_cl_examples", disable=not progress):
        if query not in nodes:
            report.skipped["not in graph"] += 1
            continue
        pools = graph_pools(graph, query, undirected=True, authors=authors)
        report.self_citations_excluded += len(pools.self_citations)
        if not pools.positives:
            report.skipped["no positives"] += 1
            continue
        drawn, repeats = _draw_positives(pools.positives, positives_per_query, rng)
        made, short_hard = 0, False
        for k in range(per_query):
            hard = _draw_distinct(pools.hard, n_hard, rng)
            easy = pool.sample(n_negatives - len(hard), pools.linked, rng)
            report.negatives_short += n_negatives - len(hard) - len(easy)
            if n_negatives and not hard and not easy:
                continue
            if len(hard) < n_hard:
                report.hard_short += n_hard - len(hard)
                short_hard = True
            examples.append(ContrastiveExample(query, drawn[k * n_positives:(k + 1) * n_positives], hard + easy,
                                               n_hard=len(hard)))
            report.hard_negatives += len(hard)
            report.easy_negatives += len(easy)
            made += 1
        if not made:
            report.skipped["no negatives"] += 1
            continue
        report.queries_used += 1
        report.oversampled_queries += int(repeats > 0)
        report.oversampled_positives += repeats
        report.hard_short_queries += int(short_hard)
    report.examples = len(examples)
    report.collisions = count_collisions(examples)
    if verbose:
        print(report)
    return examples, report


# ------------------------------------------------------------------------------------- SciAspect sampling


@dataclass
class AspectExample:
    """One SciAspect instance: an aspect, the anchor, its positives and negatives in that aspect (ids).

    The first ``n_hard`` negatives are hard (linked to the anchor in another aspect, or for L2 reached as
    a reference-of-reference in another aspect), the rest easy. ``global_negatives`` (SciAspectHybrid
    only) are SPECTERCL's negatives for the global loss, the first ``n_global_hard`` of them references of
    references, the rest easy ones filling a shortfall.
    """

    aspect: str
    query: str
    positives: list[str]
    negatives: list[str]
    n_hard: int = 0
    global_negatives: list[str] = field(default_factory=list)
    n_global_hard: int = 0


@dataclass
class AspectSamplingReport(SamplingReport):
    """:class:`sdr.samplers.SamplingReport` of the SciAspect family, with what its instances hold beyond it.

    ``hard_negatives``/``easy_negatives`` count the aspect-space (local) negatives; ``hard_short`` the hard ones
    missing and filled with easy ones (SciAspectL2's exact counts), ``hard_unfilled`` those missing and left out
    (§5.3's "at most 10"), in ``hard_unfilled_instances`` instances; ``global_hard_negatives`` and
    ``global_easy_negatives`` the hybrid's global negatives (references of references, and easy ones filling a
    shortfall); ``instances_per_aspect`` the instances of each aspect, and why an aspect of a kept anchor made none.
    """

    hard_unfilled: int = 0
    hard_unfilled_instances: int = 0
    global_hard_negatives: int = 0
    global_easy_negatives: int = 0
    instances_per_aspect: Counter = field(default_factory=Counter)

    def __str__(self) -> str:
        lines = [super().__str__(),
                 "instances per aspect: " + ", ".join(f"{k}: {v}" for k, v in sorted(self.instances_per_aspect.items()))]
        if self.hard_unfilled:
            lines.append(f"{self.hard_unfilled} hard negatives short in {self.hard_unfilled_instances} instances, "
                         f"not filled (at most n_hard).")
        if self.global_hard_negatives or self.global_easy_negatives:
            lines.append(f"global negatives: {self.global_hard_negatives} references of references, "
                         f"{self.global_easy_negatives} easy ones filling a shortfall.")
        return " ".join(lines)


@dataclass
class AspectPools:
    """Candidate pools of one anchor, per aspect (sorted lists)."""

    positives: dict[str, list[str]]
    hard: dict[str, list[str]]
    global_hard: list[str] | None  # references of references (SPECTERCL's hard pool), for the hybrid's global loss
    linked: set[str]  # what an easy negative avoids at this level (§5.3: the anchor and its direct links; §5.5: also L2)
    global_linked: set[str] | None  # what an easy global negative avoids (§5.1: the anchor, direct links and L2 papers)
    self_citations: list[str]


def aspect_neighbours(graph: CitationGraph, query: str) -> dict[str, set[str]]:
    """``{neighbour: aspects}``: every paper the query cites or is cited by, with the aspects of the link(s).

    Both directions count (the thesis' positives are "direct references and citations", Table 5.1); an
    edge without intent is the miscellaneous aspect; two edges between the same papers add up.
    """
    linked: dict[str, set[str]] = defaultdict(set)
    for other in graph.references(query):
        linked[other].update(graph.edge(query, other).aspects)
    for other in graph.citations(query):
        linked[other].update(graph.edge(other, query).aspects)
    return dict(linked)


def _second_hop_aspects(graph: CitationGraph, query: str) -> dict[str, set[str]]:
    """``{reference of a reference: aspects of the second edge}``.

    Choice: the thesis does not say how a two-hop paper gets an aspect; we take the aspect of the edge
    that reaches it (reference → reference-of-reference), i.e. why the middle paper cites it.
    """
    reached: dict[str, set[str]] = defaultdict(set)
    for reference in graph.references(query):
        for second in graph.references(reference):
            reached[second].update(graph.edge(reference, second).aspects)
    return dict(reached)


def aspect_pools(
    graph: CitationGraph,
    query: str,
    *,
    anchors: Iterable[str] = (),
    authors: Mapping[str, frozenset[str]] | None = None,
    level: str = "l1",
    with_global: bool = True,
) -> AspectPools:
    """The thesis' candidate pools of one anchor (§5.3 for ``level="l1"``, §5.5 for ``"l2"``).

    * positives of aspect *i*: papers directly linked (cited or citing) in aspect *i*, self-citations
      excluded (the query itself; with ``authors``, links sharing an author, as in
      :func:`sdr.samplers.graph_pools`);
    * hard negatives of aspect *i* (L1): papers directly linked in an aspect other than *i* and other than
      miscellaneous, excluding the ``anchors`` and the positive candidates of *i* ("as papers can be
      related in multiple aspects"); the miscellaneous aspect has none ("the only certain negative
      documents here are the easy negatives");
    * hard negatives of aspect *i* (L2): references-of-references reached through an edge of another
      (non-miscellaneous) aspect and never through an edge of *i*, minus direct links, the query and the
      ``anchors``;
    * ``linked``, what an easy negative must avoid: at L1 the query and every paper directly linked to it, in any
      aspect or none (§5.3: "all papers in the corpus excluding the anchor paper and the papers connected to the
      anchor paper (i.e., positive candidates and the negative candidates chosen above)"); at L2 also the
      references-of-references (§5.5: "not connected with the anchor paper directly or through
      reference-of-references");
    * ``global_linked``: the §5.1 rule for SPECTERCL-style negatives (the query, direct links and references of
      references), used by SciAspectHybrid's global negatives.

    ``anchors`` is best a set (a sampler passes the same one for every anchor; any other iterable is copied once
    per call). ``with_global=False`` leaves ``global_hard`` and ``global_linked`` None at L1, where nothing else
    needs the references of references (they are the largest part of an anchor's local graph).
    """
    if level not in ("l1", "l2"):
        raise ValueError(f"aspect_pools: level must be 'l1' or 'l2', got {level!r}")
    if not isinstance(anchors, (set, frozenset)):
        anchors = set(anchors)
    neighbours = aspect_neighbours(graph, query)
    self_citations = {query} & set(neighbours)
    neighbours.pop(query, None)
    if authors is not None and authors.get(query):
        self_citations |= {pid for pid in neighbours if authors.get(pid, frozenset()) & authors[query]}
    spaces = (*INTENTS, MISCELLANEOUS)
    positives = {a: sorted(p for p, linked_in in neighbours.items() if a in linked_in and p not in self_citations)
                 for a in spaces}
    second_hop = _second_hop_aspects(graph, query) if with_global or level == "l2" else None
    hard: dict[str, list[str]] = {MISCELLANEOUS: []}
    for aspect in INTENTS:
        others = set(INTENTS) - {aspect}
        if level == "l1":
            pool = {p for p, linked_in in neighbours.items() if linked_in & others}
            pool -= set(positives[aspect])
        else:
            pool = {p for p, reached in second_hop.items() if reached & others and aspect not in reached}
            pool -= set(neighbours)
        hard[aspect] = sorted(pool - anchors - self_citations - {query})
    direct = {query} | neighbours.keys()
    global_hard = global_linked = None
    if second_hop is not None:
        global_hard = sorted(second_hop.keys() - direct - self_citations)
        global_linked = direct | second_hop.keys()
    linked = direct if level == "l1" else global_linked
    return AspectPools(positives, hard, global_hard, linked, global_linked, sorted(self_citations))


def _authors(papers: Mapping[str, Paper] | None) -> dict[str, frozenset[str]] | None:
    if papers is None:
        return None
    return {str(pid): frozenset(" ".join(str(a).lower().split()) for a in paper.authors if str(a).strip())
            for pid, paper in papers.items()}


def aspect_examples(
    graph: CitationGraph,
    *,
    level: str = "l1",
    n_positives: int = 1,
    n_hard: int = 10,
    n_easy: int = 3,
    n_global: int = 0,
    fill_hard_with_easy: bool = False,
    include_miscellaneous: bool = False,
    papers: Mapping[str, Paper] | None = None,
    candidates: Iterable[str] | None = None,
    query_ids: Iterable[str] | None = None,
    exclude_anchors: bool = True,
    seed: int = 0,
    progress: bool = True,
    verbose: bool = True,
) -> tuple[list[AspectExample], AspectSamplingReport]:
    """SciAspect-family instances: one per anchor and aspect (see :func:`aspect_pools` for the pools).

    * an anchor is kept only with ≥ 1 positive candidate in each of background, method and result
      (§4.3, §5.3); the miscellaneous aspect gets an instance only when ``include_miscellaneous`` and the
      anchor has a link without intent, and its negatives are easy ones only;
    * ``n_positives`` distinct positives at most ("at most 5 documents", §5.3; 1 in the best models);
    * ``n_hard`` hard negatives at most (10 for SciAspect), then ``n_easy`` easy ones (random corpus
      papers not in the level's ``linked`` set, see :func:`aspect_pools`); with ``fill_hard_with_easy`` a
      shortfall of hard negatives is made up with easy ones and counted in ``hard_short`` (the L2
      configurations name exact counts); without it the shortfall is only counted (``hard_unfilled``: §5.3's
      10 is "at most");
    * ``n_global`` > 0 adds SPECTERCL's negatives (references-of-references, filled with easy ones under the
      §5.1 rule; ``global_hard_negatives``, ``global_easy_negatives``) for SciAspectHybrid's global loss;
    * ``exclude_anchors``: hard-negative candidates exclude every anchor of this run ("excluding all anchor
      papers", §5.3), i.e. every id in ``query_ids`` (all graph nodes when ``query_ids`` is None).

    Deterministic for a seed: one generator consumed in query order, aspects in :data:`ASPECT_SPACES` order.
    The report's ``collisions`` counts pairs that are positive and negative *within the same aspect*;
    across aspects the same pair is meant to be both.

    Shown in: notebooks/sciaspect.ipynb, Sampling.
    """
    method = {"l1": "sciaspect_examples", "l2": "sciaspect_l2_examples"}.get(level)
    if method is None:
        raise ValueError(f"aspect_examples: level must be 'l1' or 'l2', got {level!r}")
    if len(graph) == 0:
        raise ValueError(f"{method}: the citation graph has no edges, so there is nothing to sample")
    if n_positives < 1 or n_hard < 0 or n_easy < 0 or n_global < 0 or n_hard + n_easy < 1:
        raise ValueError(f"{method}: need n_positives >= 1, n_hard, n_easy, n_global >= 0 and n_hard + n_easy >= 1; "
                         f"got {n_positives}, {n_hard}, {n_easy}, {n_global}")
    rng = np.random.default_rng(seed)
    pool = _CandidatePool(graph.nodes if candidates is None else candidates)
    authors = _authors(papers)
    nodes = graph.nodes
    queries = sorted(nodes) if query_ids is None else [str(q) for q in query_ids]
    # one frozen set for every query, never copied per query (the pools drop the query itself): 132k anchors at paper
    anchors = frozenset(queries) if exclude_anchors else frozenset()
    aspects = (*ASPECT_SPACES, MISCELLANEOUS) if include_miscellaneous else ASPECT_SPACES
    report = AspectSamplingReport(method=method, queries_total=len(queries))
    per_aspect = report.instances_per_aspect
    examples: list[AspectExample] = []
    for query in tqdm(queries, desc=method, disable=not progress):
        if query not in nodes:
            report.skipped["not in graph"] += 1
            continue
        pools = aspect_pools(graph, query, anchors=anchors, authors=authors, level=level, with_global=n_global > 0)
        report.self_citations_excluded += len(pools.self_citations)
        if any(not pools.positives[a] for a in ASPECT_SPACES):
            report.skipped["no positive in every aspect"] += 1
            continue
        made = 0
        short_hard = False
        for aspect in aspects:
            if not pools.positives[aspect]:
                per_aspect[f"{aspect}: no positive"] += 1
                continue
            positives = _draw_distinct(pools.positives[aspect], n_positives, rng)
            hard = _draw_distinct(pools.hard[aspect], n_hard, rng) if aspect != MISCELLANEOUS else []
            missing_hard = n_hard - len(hard) if aspect != MISCELLANEOUS else 0
            wanted_easy = n_easy + (missing_hard if fill_hard_with_easy else 0)
            easy = pool.sample(wanted_easy, pools.linked, rng)
            report.negatives_short += wanted_easy - len(easy)
            if missing_hard and fill_hard_with_easy:
                report.hard_short += missing_hard
                short_hard = True
            elif missing_hard:
                report.hard_unfilled += missing_hard
                report.hard_unfilled_instances += 1
            if not hard and not easy:
                per_aspect[f"{aspect}: no negative"] += 1
                continue
            global_negatives: list[str] = []
            if n_global:
                global_negatives = _draw_distinct(pools.global_hard, n_global, rng)
                global_easy = pool.sample(n_global - len(global_negatives), pools.global_linked, rng)
                report.global_hard_negatives += len(global_negatives)
                report.global_easy_negatives += len(global_easy)
                examples.append(AspectExample(aspect, query, positives, hard + easy, len(hard),
                                              global_negatives + global_easy, len(global_negatives)))
            else:
                examples.append(AspectExample(aspect, query, positives, hard + easy, len(hard)))
            report.hard_negatives += len(hard)
            report.easy_negatives += len(easy)
            per_aspect[aspect] += 1
            made += 1
        if not made:
            report.skipped["no negatives"] += 1
            continue
        report.queries_used += 1
        report.hard_short_queries += int(short_hard)
    report.examples = len(examples)
    report.collisions = sum(
        count_collisions([ContrastiveExample(e.query, e.positives, e.negatives) for e in examples if e.aspect == a])
        for a in aspects)
    if verbose:
        print(report)
    return examples, report


def sciaspect_examples(graph: CitationGraph, variant: str = "1 positive, n negatives (w/o misc aspect)",
                       **kwargs) -> tuple[list[AspectExample], AspectSamplingReport]:
    """SciAspect (L1 negatives) instances of one Table 6.4 variant (:data:`SCIASPECT_VARIANTS`)."""
    if variant not in SCIASPECT_VARIANTS:
        raise ValueError(f"unknown SciAspect variant {variant!r}; expected one of {list(SCIASPECT_VARIANTS)}")
    settings = dict(level="l1", n_hard=10, n_easy=3, **SCIASPECT_VARIANTS[variant])
    settings.update(kwargs)
    return aspect_examples(graph, **settings)


def sciaspect_hybrid_examples(graph: CitationGraph, n_local: int = 5, n_global: int = 5,
                              **kwargs) -> tuple[list[AspectExample], AspectSamplingReport]:
    """SciAspectHybrid instances (Table 5.1: "1, 10 (5 local, 5 global)"): one aspect positive, up to
    ``n_local`` papers linked in another aspect (local negatives) and ``n_global`` references-of-references
    (global negatives, filled with easy ones when short).

    Choice: the global loss reuses the aspect positive (a paper linked in aspect *i* is also a direct link,
    i.e. a SPECTERCL positive); the thesis does not say whether L_global draws its own positive.
    """
    settings = dict(level="l1", n_positives=1, n_hard=n_local, n_easy=0, n_global=n_global,
                    include_miscellaneous=False)
    settings.update(kwargs)
    return aspect_examples(graph, **settings)


def sciaspect_l2_examples(graph: CitationGraph, config: str = "SciAspect L2 negatives (3 hard negatives, 3 easy negatives)",
                          **kwargs) -> tuple[list[AspectExample], AspectSamplingReport]:
    """SciAspectL2 instances of one Table 6.7 configuration (:data:`L2_CONFIGS`); a shortfall of L2 hard
    negatives is filled with easy ones (counted in the report)."""
    if config not in L2_CONFIGS:
        raise ValueError(f"unknown SciAspectL2 configuration {config!r}; expected one of {list(L2_CONFIGS)}")
    settings = dict(level="l2", n_positives=1, fill_hard_with_easy=True, include_miscellaneous=False,
                    **L2_CONFIGS[config])
    settings.update(kwargs)
    return aspect_examples(graph, **settings)


def violations(graph: CitationGraph, examples: Sequence[AspectExample], anchors: Iterable[str] = (),
               level: str = "l1") -> list[str]:
    """Every instance that breaks the thesis' rules, as messages (an empty list when all hold).

    Checked per instance, from the graph alone: each positive is linked to the anchor in the instance's
    aspect; each hard negative is linked (L1) or reached as a reference-of-reference (L2) in another
    aspect (L2: never in this one, and not a direct link), is not a positive candidate of the aspect and not
    one of ``anchors`` (pass the other anchors); the miscellaneous aspect has no hard negative; each easy
    negative is not linked to the anchor (L1, §5.3) and, at L2, not a reference-of-reference of it either
    (§5.5); a global negative (hybrid) is a reference-of-reference that is not a direct link, or an easy one
    that is neither (§5.1).

    Shown in: notebooks/sciaspect.ipynb, Sampling.
    """
    anchors = anchors if isinstance(anchors, (set, frozenset)) else set(anchors)
    problems = []
    local: dict[str, tuple] = {}  # an anchor's links, computed once for its instances of every aspect
    for e in examples:
        if e.query not in local:
            local = {e.query: (aspect_neighbours(graph, e.query), _second_hop_aspects(graph, e.query))}
        neighbours, second_hop = local[e.query]
        positive_candidates = {p for p, linked_in in neighbours.items() if e.aspect in linked_in}
        hard, easy = e.negatives[:e.n_hard], e.negatives[e.n_hard:]
        others = set(INTENTS) - {e.aspect}
        where = f"{e.aspect} instance of {e.query}"
        problems += [f"{where}: positive {p} not linked in {e.aspect}" for p in e.positives if p not in positive_candidates]
        if e.aspect == MISCELLANEOUS and hard:
            problems.append(f"{where}: hard negatives {hard} in the miscellaneous aspect")
        for n in hard:
            reached = neighbours.get(n, set()) if level == "l1" else second_hop.get(n, set())
            broken = not reached & others or n in positive_candidates or n in anchors or n == e.query
            if level == "l2":
                broken |= e.aspect in reached or n in neighbours
            if broken:
                problems.append(f"{where}: hard negative {n} breaks the {level} rule")
        problems += [f"{where}: easy negative {n} is linked to the anchor" for n in easy
                     if n == e.query or n in neighbours or (level == "l2" and n in second_hop)]
        problems += [f"{where}: global negative {n} is a direct link" for n in e.global_negatives
                     if n == e.query or n in neighbours]
        problems += [f"{where}: global hard negative {n} is no reference of a reference"
                     for n in e.global_negatives[:e.n_global_hard] if n not in second_hop]
        problems += [f"{where}: global easy negative {n} is a reference of a reference"
                     for n in e.global_negatives[e.n_global_hard:] if n in second_hop]
    return problems
