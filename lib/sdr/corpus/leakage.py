"""The leakage audit (SciNCL's check): ids shared by the training data and each evaluation set
(:func:`leakage_audit`), compared in one id space (:func:`ids_in_space`).
"""
from __future__ import annotations

from collections.abc import Iterable

from sdr.corpus.papers import Paper


def leakage_audit(
    train_ids: Iterable[str], eval_sets: dict[str, Iterable[str]], n_examples: int = 5,
) -> "pandas.DataFrame":  # noqa: F821
    """Ids shared by the training data and each evaluation set (SciNCL's leakage check).

    One row per evaluation set: ``eval_set``, ``size`` (distinct ids), ``shared`` (how many of them
    are training ids), ``share`` (shared / size) and a few sorted ``examples``.
    """
    import pandas as pd  # imported here: reading corpora should not pay for pandas

    train = {str(pid) for pid in train_ids}
    rows = []
    for name, ids in eval_sets.items():
        distinct = {str(pid) for pid in ids}
        shared = sorted(distinct & train)
        rows.append({"eval_set": name, "size": len(distinct), "shared": len(shared),
                     "share": len(shared) / len(distinct) if distinct else 0.0,
                     "examples": shared[:n_examples]})
    return pd.DataFrame(rows, columns=["eval_set", "size", "shared", "share", "examples"])


def ids_in_space(papers: Iterable[Paper], field: str = "sha") -> tuple[set[str], list[str]]:
    """The papers' ids in another id space, so a leakage audit compares like with like.

    SciRepEval's SPECTER triplets carry both ``sha`` (the Semantic Scholar paper id that SciDocs keys its papers
    by) and ``corpus_id``; :func:`read_scirepeval_triplets` keeps both in ``Paper.metadata``, whatever id it keys
    the papers by. Returns ``(ids, unmapped)``: ``metadata[field]`` of every paper that has one, and the
    ``paper_id`` of each paper without one (counted by the caller, never dropped silently).
    """
    ids, unmapped = set(), []
    for paper in papers:
        value = paper.metadata.get(field)
        if value in (None, ""):
            unmapped.append(paper.paper_id)
        else:
            ids.add(str(value))
    return ids, unmapped
