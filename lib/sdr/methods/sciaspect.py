"""SPECTERCL and the SciAspect family: Bansal's thesis, Experiments 2–5 (``papers/003_…``).

* **SPECTERCL** (Exp. 2, §5.2): SPECTER(Undirected)'s pools (direct references *and* citations as
  positives, references-of-references as hard negatives) with the general contrastive loss of eq. 2.6
  (:class:`sdr.losses.GeneralContrastiveLoss`, τ = 0.05) instead of the triplet loss. Sampling is
  :func:`sdr.samplers.contrastive_examples`; :data:`SPECTERCL_VARIANTS` are the rows of Table 6.3.
* **SciAspect** (Exp. 3, §5.3): one instance is (aspect *i*, anchor, positives linked to the anchor in
  aspect *i*, hard negatives linked to it in another aspect, easy negatives); each aspect has a linear
  projection head ``z = W_i d + b_i`` and eq. 5.1 is eq. 2.6 in that aspect's space
  (:class:`AspectContrastiveObjective`, a ``torch.nn.Module`` whose heads the trainer optimizes and saves).
  At inference the encoder alone gives the embedding; eq. 5.2 projects it with one head, eq. 5.3
  concatenates the three projections (:func:`embedding_variants`).
* **SciAspectHybrid** (Exp. 4, §5.4): ``α · L_global + (1 − α) · L_local`` (eq. 5.4, α = 0.7).
* **SciAspectL2** (Exp. 5, §5.5): negatives are references-of-references reached in another aspect,
  configurations 5.1/5.2/5.3 (:data:`L2_CONFIGS`, Table 6.7).

Where the thesis is silent we chose, and each choice is named where it is made (search "Choice:").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from sdr.corpus import INTENTS, MISCELLANEOUS, CitationGraph, Paper
from sdr.losses import GeneralContrastiveLoss, HybridLoss
from sdr.samplers import (
    ContrastiveExample,
    SamplingReport,
    contrastive_examples,
    count_collisions,
    graph_pools,
)
# Private helpers of the shared sampler module, reused rather than copied: the sorted candidate pool
# with rejection sampling for easy negatives, and the seeded distinct draw.
from sdr.samplers import _CandidatePool, _draw_distinct
from sdr.train import TrainConfig

__all__ = [
    "TEMPERATURE", "HYBRID_ALPHA", "TEMPERATURES", "ALPHAS", "ASPECT_SPACES", "FACET_TO_ASPECT",
    "SPECTERCL_VARIANTS", "SCIASPECT_VARIANTS", "L2_CONFIGS", "paper_train_config",
    "specter_cl_examples", "AspectExample", "AspectPools", "aspect_neighbours", "aspect_pools",
    "aspect_examples", "sciaspect_examples", "sciaspect_hybrid_examples", "sciaspect_l2_examples",
    "AspectContrastiveObjective", "embedding_variants", "violations", "SCIDOCS_WITHOUT_RECOMM",
    "average_without_recomm",
]

#: τ of every contrastive run after Exp. 2.2 (Table 6.3: 0.05 was best).
TEMPERATURE = 0.05
#: SciAspectHybrid's loss weight (§5.4: "we chose α as 0.7").
HYBRID_ALPHA = 0.7
#: Exp. 2.2 temperature sweep (Table 6.3) and Exp. 4.2 α sweep (Table 6.6).
TEMPERATURES = (0.01, 0.05, 0.1, 0.5)
ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)
#: The three aspect spaces evaluated in Exp. 3.4 (thesis: methodology, background, result).
ASPECT_SPACES = INTENTS
#: CSFCube facet → the aspect head that embeds it (the thesis never evaluated this; issue 11).
FACET_TO_ASPECT = {"background": "background", "method": "method", "result": "result"}

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


def paper_train_config(**overrides) -> TrainConfig:
    """The thesis' training setup (§4.4) as a :class:`TrainConfig`: AdamW (ε 1e-8), lr 2e-5, cosine schedule
    with 100 warm-up steps, 2 epochs, effective batch 8 for the contrastive runs (8 × 1 here; on a small
    GPU 2 × 4 is the same). ``overrides`` replace any field (the chapter's CPU budgets)."""
    settings = dict(epochs=2, batch_size=8, accumulation_steps=1, learning_rate=2e-5, schedule="cosine",
                    warmup_steps=100)
    settings.update(overrides)
    return TrainConfig(**settings)


# ------------------------------------------------------------------------------------------ SPECTERCL


def specter_cl_examples(graph: CitationGraph, variant: str = "1 positive, 5 negatives",
                        **kwargs) -> tuple[list[ContrastiveExample], SamplingReport]:
    """SPECTERCL instances of one Table 6.3 variant (:data:`SPECTERCL_VARIANTS`) from the undirected pools.

    ``kwargs`` go to :func:`sdr.samplers.contrastive_examples` (papers, candidates, query_ids, seed, …).
    """
    if variant not in SPECTERCL_VARIANTS:
        raise ValueError(f"unknown SPECTERCL variant {variant!r}; expected one of {list(SPECTERCL_VARIANTS)}")
    return contrastive_examples(graph, undirected=True, **SPECTERCL_VARIANTS[variant], **kwargs)


# ------------------------------------------------------------------------------------- SciAspect sampling


@dataclass
class AspectExample:
    """One SciAspect instance: an aspect, the anchor, its positives and negatives in that aspect (ids).

    The first ``n_hard`` negatives are hard (linked to the anchor in another aspect, or for L2 reached as
    a reference-of-reference in another aspect), the rest easy. ``global_negatives`` (SciAspectHybrid
    only) are SPECTERCL's negatives for the global loss.
    """

    aspect: str
    query: str
    positives: list[str]
    negatives: list[str]
    n_hard: int = 0
    global_negatives: list[str] = field(default_factory=list)


@dataclass
class AspectPools:
    """Candidate pools of one anchor, per aspect (sorted lists)."""

    positives: dict[str, list[str]]
    hard: dict[str, list[str]]
    global_hard: list[str]  # references of references (SPECTERCL's hard pool), for the hybrid's global loss
    linked: set[str]  # everything an easy negative must avoid
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
    * ``linked``: the query, every direct link, and the references-of-references (what easy negatives
      must avoid: "not connected with the anchor paper directly or through reference-of-references").
    """
    if level not in ("l1", "l2"):
        raise ValueError(f"aspect_pools: level must be 'l1' or 'l2', got {level!r}")
    anchors = set(anchors)
    neighbours = aspect_neighbours(graph, query)
    self_citations = {query} & set(neighbours)
    neighbours.pop(query, None)
    if authors is not None and authors.get(query):
        self_citations |= {pid for pid in neighbours if authors.get(pid, frozenset()) & authors[query]}
    spaces = (*INTENTS, MISCELLANEOUS)
    positives = {a: sorted(p for p, linked_in in neighbours.items() if a in linked_in and p not in self_citations)
                 for a in spaces}
    second_hop = _second_hop_aspects(graph, query)
    global_hard = sorted(set(second_hop) - set(neighbours) - self_citations - {query})
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
    linked = {query} | set(neighbours) | set(second_hop)
    return AspectPools(positives, hard, global_hard, linked, sorted(self_citations))


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
) -> tuple[list[AspectExample], SamplingReport]:
    """SciAspect-family instances: one per anchor and aspect (see :func:`aspect_pools` for the pools).

    * an anchor is kept only with ≥ 1 positive candidate in each of background, method and result
      (§4.3, §5.3); the miscellaneous aspect gets an instance only when ``include_miscellaneous`` and the
      anchor has a link without intent, and its negatives are easy ones only;
    * ``n_positives`` distinct positives at most ("at most 5 documents", §5.3; 1 in the best models);
    * ``n_hard`` hard negatives at most (10 for SciAspect), then ``n_easy`` easy ones (random corpus
      papers not in ``linked``); with ``fill_hard_with_easy`` a shortfall of hard negatives is made up
      with easy ones and counted (the L2 configurations name exact counts);
    * ``n_global`` > 0 adds SPECTERCL's negatives (references-of-references, filled with easy ones) for
      SciAspectHybrid's global loss;
    * ``exclude_anchors``: hard-negative candidates exclude every anchor of this run ("excluding all anchor
      papers", §5.3), i.e. every id in ``query_ids`` (all graph nodes when ``query_ids`` is None).

    Deterministic for a seed: one generator consumed in query order, aspects in :data:`ASPECT_SPACES` order.
    The report's ``collisions`` counts pairs that are positive and negative *within the same aspect*;
    across aspects the same pair is meant to be both.
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
    anchors = set(queries) if exclude_anchors else set()
    aspects = (*ASPECT_SPACES, MISCELLANEOUS) if include_miscellaneous else ASPECT_SPACES
    report = SamplingReport(method=method, queries_total=len(queries))
    per_aspect: Counter = Counter()
    examples: list[AspectExample] = []
    for query in tqdm(queries, desc=method, disable=not progress):
        if query not in nodes:
            report.skipped["not in graph"] += 1
            continue
        pools = aspect_pools(graph, query, anchors=anchors - {query}, authors=authors, level=level)
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
            if not hard and not easy:
                per_aspect[f"{aspect}: no negative"] += 1
                continue
            global_negatives: list[str] = []
            if n_global:
                global_negatives = _draw_distinct(pools.global_hard, n_global, rng)
                global_negatives += pool.sample(n_global - len(global_negatives), pools.linked, rng)
            examples.append(AspectExample(aspect, query, positives, hard + easy, len(hard), global_negatives))
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
    report.warnings.append("instances per aspect: " + ", ".join(f"{k}: {v}" for k, v in sorted(per_aspect.items())))
    if verbose:
        print(report)
    return examples, report


def sciaspect_examples(graph: CitationGraph, variant: str = "1 positive, n negatives (w/o misc aspect)",
                       **kwargs) -> tuple[list[AspectExample], SamplingReport]:
    """SciAspect (L1 negatives) instances of one Table 6.4 variant (:data:`SCIASPECT_VARIANTS`)."""
    if variant not in SCIASPECT_VARIANTS:
        raise ValueError(f"unknown SciAspect variant {variant!r}; expected one of {list(SCIASPECT_VARIANTS)}")
    settings = dict(level="l1", n_hard=10, n_easy=3, **SCIASPECT_VARIANTS[variant])
    settings.update(kwargs)
    return aspect_examples(graph, **settings)


def sciaspect_hybrid_examples(graph: CitationGraph, n_local: int = 5, n_global: int = 5,
                              **kwargs) -> tuple[list[AspectExample], SamplingReport]:
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
                          **kwargs) -> tuple[list[AspectExample], SamplingReport]:
    """SciAspectL2 instances of one Table 6.7 configuration (:data:`L2_CONFIGS`); a shortfall of L2 hard
    negatives is filled with easy ones (counted in the report)."""
    if config not in L2_CONFIGS:
        raise ValueError(f"unknown SciAspectL2 configuration {config!r}; expected one of {list(L2_CONFIGS)}")
    settings = dict(level="l2", n_positives=1, fill_hard_with_easy=True, include_miscellaneous=False,
                    **L2_CONFIGS[config])
    settings.update(kwargs)
    return aspect_examples(graph, **settings)


# ------------------------------------------------------------------------------------------ objective


class AspectContrastiveObjective(nn.Module):
    """SciAspect's objective: per-aspect linear projection heads and the aspect-space contrastive loss.

    For an instance of aspect *i*, the anchor, positives and negatives are embedded by the encoder, projected
    by head *i* (``z = W_i d + b_i``, §5.3) and scored with eq. 5.1 — the general contrastive loss of eq.
    2.6 (:class:`sdr.losses.GeneralContrastiveLoss`, cosine similarity, τ = 0.05) in that aspect's space.
    With ``alpha`` set it is SciAspectHybrid (eq. 5.4): ``α · L_global + (1 − α) · L_local`` through
    :class:`sdr.losses.HybridLoss`, ``L_global`` being eq. 2.6 on the encoder's own embeddings of the
    anchor, the same positive(s) and the instance's ``global_negatives``.

    The heads are this module's parameters: :func:`sdr.train.train` optimizes, clips, checkpoints and
    restores them and writes them to ``model_dir/objective.pt``.

    Args:
        texts: paper id → encoder input text (``encoder.paper_text(paper)``).
        dimension: the encoder's embedding size (heads are ``dimension × dimension``).
        aspects: the aspect spaces that get a head (add ``"miscellaneous"`` for the w/ misc variants).
        temperature: τ of eq. 5.1.
        alpha: None for SciAspect; the hybrid weight for SciAspectHybrid.
        similarity: ``"cosine"`` (our reading: the thesis never defines ``sim``) or ``"dot"``.

    Choice: the thesis does not say how the heads start; each starts at the identity (``W_i = I``,
    ``b_i = 0``), so every aspect space starts as the encoder's space and only training separates them.

    References:
        Bansal, *Scientific Document Representation Learning*, §5.3 (eq. 5.1), §5.4 (eq. 5.4).

    Inputs:
        +------------------------------------+--------+
        | examples                           | labels |
        +====================================+========+
        | :class:`AspectExample` (aspect,    | none   |
        | anchor, positives, negatives)      |        |
        +------------------------------------+--------+

    Example:
        ::

            encoder = Encoder.load("minilm", num_layers=2)
            texts = {pid: encoder.paper_text(p) for pid, p in corpus.papers.items()}
            examples, _ = sciaspect_examples(corpus.graph)
            objective = AspectContrastiveObjective(texts, encoder.dimension)
            train(encoder, examples, objective, paper_train_config(epochs=1))
    """

    def __init__(self, texts: Mapping[str, str], dimension: int, aspects: Sequence[str] = ASPECT_SPACES,
                 temperature: float = TEMPERATURE, alpha: float | None = None, similarity: str = "cosine"):
        super().__init__()
        unknown = set(aspects) - {*INTENTS, MISCELLANEOUS}
        if unknown or not aspects:
            raise ValueError(f"AspectContrastiveObjective: aspects must be among {(*INTENTS, MISCELLANEOUS)}, "
                             f"got {list(aspects)}")
        self.texts = texts
        self.aspects = tuple(aspects)
        self.heads = nn.ModuleDict({aspect: nn.Linear(dimension, dimension) for aspect in self.aspects})
        with torch.no_grad():
            for head in self.heads.values():
                head.weight.copy_(torch.eye(dimension))
                head.bias.zero_()
        self.loss = GeneralContrastiveLoss(temperature=temperature, similarity=similarity)
        self.hybrid = HybridLoss(self.loss, self.loss, alpha) if alpha is not None else None
        self.last_components: dict[str, float] = {}

    def project(self, embeddings: torch.Tensor, aspect: str) -> torch.Tensor:
        """Eq. 5.2: ``W_i d + b_i`` for embeddings ``[..., D]``."""
        if aspect not in self.heads:
            raise KeyError(f"no head for aspect {aspect!r}; this objective has {list(self.heads)}")
        return self.heads[aspect](embeddings)

    def forward(self, encoder, examples: Sequence[AspectExample]) -> torch.Tensor:
        """Mean over the instances of the aspect-space loss (plus the global loss for the hybrid)."""
        n_pos = max(len(e.positives) for e in examples)
        n_neg = max(len(e.negatives) for e in examples)
        n_glo = max(len(e.global_negatives) for e in examples) if self.hybrid is not None else 0
        ids, masks = [], {"pos": [], "neg": [], "glo": []}
        for e in examples:  # pad ragged groups with the anchor and mask the padding out
            if e.aspect not in self.heads:
                raise KeyError(f"instance of aspect {e.aspect!r} (anchor {e.query}) but heads are {list(self.heads)}")
            ids.append(e.query)
            for key, items, width in (("pos", e.positives, n_pos), ("neg", e.negatives, n_neg),
                                      ("glo", e.global_negatives if n_glo else [], n_glo)):
                ids += list(items) + [e.query] * (width - len(items))
                masks[key].append([True] * len(items) + [False] * (width - len(items)))
        embeddings = encoder([self.texts[i] for i in ids]).view(len(examples), 1 + n_pos + n_neg + n_glo, -1)
        device = embeddings.device
        pos_mask, neg_mask, glo_mask = (torch.tensor(masks[k], dtype=torch.bool, device=device).reshape(len(examples), width)
                                        for k, width in (("pos", n_pos), ("neg", n_neg), ("glo", n_glo)))
        local = embeddings.new_zeros(())
        for aspect in self.aspects:
            rows = [i for i, e in enumerate(examples) if e.aspect == aspect]
            if not rows:
                continue
            index = torch.tensor(rows, device=device)
            z = self.project(embeddings[index, :1 + n_pos + n_neg], aspect)
            value = self.loss(z[:, 0], z[:, 1:1 + n_pos], z[:, 1 + n_pos:],
                              positive_mask=pos_mask[index], negative_mask=neg_mask[index])
            local = local + value * len(rows) / len(examples)
        if self.hybrid is None:
            return local
        global_value = self.loss(embeddings[:, 0], embeddings[:, 1:1 + n_pos], embeddings[:, 1 + n_pos + n_neg:],
                                 positive_mask=pos_mask, negative_mask=glo_mask)
        total = self.hybrid(global_value, local)
        self.last_components = dict(self.hybrid.last_components)
        return total


@torch.no_grad()
def embedding_variants(objective: AspectContrastiveObjective, ids: Sequence[str],
                       embeddings: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """The embeddings one trained SciAspect model offers (Exp. 3.4 / 4.1), each ``{paper id: vector}``:

    ``"encoder"`` (the encoder alone, the thesis' inference embedding), one per aspect head in
    :data:`ASPECT_SPACES` (eq. 5.2), and ``"concat"`` (the three projections concatenated, eq. 5.3).
    """
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if embeddings.shape[0] != len(ids):
        raise ValueError(f"embedding_variants: {len(ids)} ids for {embeddings.shape[0]} embeddings")
    device = next(objective.parameters()).device
    tensor = torch.from_numpy(embeddings).to(device)
    projected = {a: objective.project(tensor, a).float().cpu().numpy() for a in ASPECT_SPACES}
    variants = {"encoder": dict(zip(ids, embeddings))}
    variants.update({a: dict(zip(ids, projected[a])) for a in ASPECT_SPACES})
    variants["concat"] = dict(zip(ids, np.concatenate([projected[a] for a in ASPECT_SPACES], axis=1)))
    return variants


def violations(graph: CitationGraph, examples: Sequence[AspectExample], anchors: Iterable[str] = (),
               level: str = "l1") -> list[str]:
    """Every instance that breaks the thesis' rules, as messages (an empty list when all hold).

    Checked per instance, from the graph alone: each positive is linked to the anchor in the instance's
    aspect; each hard negative is linked (L1) or reached as a reference-of-reference (L2) in another
    aspect (L2: never in this one, and not a direct link), is not a positive candidate of the aspect and not
    one of ``anchors`` (pass the other anchors); the miscellaneous aspect has no hard negative; each easy
    negative is neither linked to the anchor nor a reference-of-reference of it; a global negative (hybrid)
    is not a direct link.
    """
    anchors = set(anchors)
    problems = []
    for e in examples:
        neighbours = aspect_neighbours(graph, e.query)
        second_hop = _second_hop_aspects(graph, e.query)
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
                     if n == e.query or n in neighbours or n in second_hop]
        problems += [f"{where}: global negative {n} is a direct link" for n in e.global_negatives
                     if n == e.query or n in neighbours]
    return problems


SCIDOCS_WITHOUT_RECOMM = ("mag_f1", "mesh_f1", "coview_map", "coview_ndcg", "coread_map", "coread_ndcg",
                          "cite_map", "cite_ndcg", "cocite_map", "cocite_ndcg")
"""The ten SciDocs metrics the chapter computes (the recommendations ranker is not trained on CPU)."""


def average_without_recomm(table):
    """``avg10``: the mean of the ten SciDocs metrics other than recommendations, per row of a DataFrame."""
    return table[list(SCIDOCS_WITHOUT_RECOMM)].mean(axis=1, skipna=False)
