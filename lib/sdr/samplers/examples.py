"""What every sampler returns: :class:`Triplet` and :class:`ContrastiveExample` (paper ids only), the
:class:`SamplingReport` that counts whatever was skipped, oversampled or filled in, and
:func:`count_collisions` (SciNCL A.8), which every report includes.

These types are the contract between the samplers, the losses and the trainer, so they change on their own:
when the training examples change shape, not when a sampling strategy does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from sdr.corpus import Paper


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


def _finish(report: SamplingReport, examples: list, verbose: bool) -> tuple[list, SamplingReport]:
    """Count the examples and their collisions, print the report when asked, return both."""
    report.examples = len(examples)
    report.collisions = count_collisions(examples)
    if verbose:
        print(report)
    return examples, report


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
