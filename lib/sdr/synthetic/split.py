"""Leakage-free splits of a synthetic corpus.

SPECTER's training data overlapped SciDocs' test papers (SciNCL §4.2 "w/ leakage"); the thesis removed the
overlap. The book does as the thesis: a chapter trains on one part of a corpus and builds its benchmark
replica from the other, so no evaluation paper is ever seen in training (the leakage audit shows 0).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from sdr.corpus import CitationGraph


def subset(corpus, paper_ids: Iterable[str]):
    """The corpus restricted to ``paper_ids``: the induced citation graph and activity pairs."""
    from sdr.synthetic.corpus import SyntheticCorpus

    keep = set(paper_ids)
    unknown = keep - set(corpus.papers)
    if unknown:
        raise ValueError(f"subset: {len(unknown)} ids are not in the corpus (e.g. {sorted(unknown)[:3]})")
    graph = CitationGraph(c for c in corpus.graph if c.citing in keep and c.cited in keep)
    return SyntheticCorpus(
        papers={pid: paper for pid, paper in corpus.papers.items() if pid in keep},
        graph=graph,
        fields=list(corpus.fields),
        coviews=[(a, b) for a, b in corpus.coviews if a in keep and b in keep],
        coreads=[(a, b) for a, b in corpus.coreads if a in keep and b in keep],
        communities=dict(corpus.communities),
        config=corpus.config,
        stats={"subset_of": len(corpus.papers), "edges_kept": len(graph), "edges_of": len(corpus.graph)},
    )


def split_corpus(corpus, eval_fraction: float = 0.4, seed: int = 0):
    """Split papers at random into (train, eval) sub-corpora; edges across the split are dropped."""
    if not 0 < eval_fraction < 1:
        raise ValueError(f"eval_fraction must be in (0, 1), got {eval_fraction}")
    ids = sorted(corpus.papers)
    order = np.random.default_rng(seed).permutation(len(ids))
    n_eval = int(round(eval_fraction * len(ids)))
    eval_ids = {ids[i] for i in order[:n_eval]}
    return subset(corpus, set(ids) - eval_ids), subset(corpus, eval_ids)
