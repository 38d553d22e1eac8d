"""SPECTER (Cohan et al. 2020) as SciNCL replicated it: the recipe's defaults, training an encoder on
triplets, and the two evaluations every document-level chapter reports (the SciDocs evaluator on a
folder in the official layout, and real CSFCube next to the official SPECTER rankings).

* :data:`PAPER_TRAINING` — SPECTER's optimiser settings (SciNCL §4.3: AdamW, lr 2e-5, 2 epochs, batch
  8 × 4 accumulation = 32); :data:`TRIPLETS_PER_QUERY`, :data:`HARD_PER_QUERY` — 5 triplets a query, 2
  with a hard negative (``ceil(0.3 × 5)``); the loss is the triplet margin loss on L2, margin 1.
* :func:`train_on_triplets` — a fresh encoder trained on triplets with the triplet objective; returns the
  trainer's result and the loss on a fixed probe subset before and after (the chapter's sanity check).
* :func:`scidocs_scores` — embed the evaluation papers and run the SciDocs evaluator: one table row.
* :func:`csfcube_scores` — rank CSFCube's judged pools (test split, every facet) by L2 distance of the
  encoder's embeddings, beside the official SPECTER rankings; MAP, NDCG%20 and CoSaEmb Table 4's
  RP / P@20 / R@20 (× 100).
* :func:`csfcube_leaderboard_metrics` — one system of that table as ``book.leaderboard_row`` metrics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from sdr import book
from sdr.corpus import Paper
from sdr.encoders import Encoder
from sdr.evaluate import csfcube, scidocs
from sdr.samplers import SPECTER_RATIO_HARD_NEGATIVES, Triplet
from sdr.train import TrainConfig, TrainResult, TripletObjective, evaluate_loss, train

__all__ = ["PAPER_TRAINING", "TRIPLETS_PER_QUERY", "HARD_PER_QUERY", "CSFCUBE_COLUMNS",
           "train_on_triplets", "scidocs_scores", "csfcube_scores", "csfcube_leaderboard_metrics"]

#: SPECTER's (and SciNCL's) fine-tuning: AdamW, lr 2e-5, 2 epochs, 8 × 4 = 32 triplets a step.
PAPER_TRAINING = TrainConfig(epochs=2, batch_size=8, accumulation_steps=4, learning_rate=2e-5)
#: SciNCL §3.4: "5 triplets per query paper", 2 hard and 3 easy negatives.
TRIPLETS_PER_QUERY = 5
HARD_PER_QUERY = math.ceil(SPECTER_RATIO_HARD_NEGATIVES * TRIPLETS_PER_QUERY)

#: CSFCube metric keys of :mod:`sdr.evaluate.csfcube` → the column names shown (CoSaEmb Table 4 + MAP).
CSFCUBE_COLUMNS = {"map": "MAP", "ndcg%20": "NDCG%20", "rp": "RP", "p@20": "P@20", "r@20": "R@20"}


def train_on_triplets(
    encoder: Encoder,
    triplets: Sequence[Triplet],
    papers: Mapping[str, Paper],
    config: TrainConfig,
    output_dir: str | Path | None = None,
    probe_size: int = 256,
    resume: bool = False,
) -> tuple[TrainResult, dict]:
    """Train ``encoder`` in place with SPECTER's objective (triplet loss, L2, margin 1).

    ``output_dir`` and ``resume`` go to :func:`sdr.train.train` (a chapter passes ``book.run_dir(...) / name``,
    so a rerun with ``resume=True`` continues from the run's last checkpoint).

    Returns the :class:`TrainResult` and ``{"triplets", "optimizer steps", "loss before training",
    "loss after training"}`` measured on a fixed, evenly spaced subset of about ``probe_size`` triplets
    (dropout off), so a chapter can check that training lowered the loss; ``probe_size=0`` skips that
    measurement (both losses NaN), for runs whose loss nobody reads.
    """
    if not triplets:
        raise ValueError("train_on_triplets: no triplets")
    needed = {pid for t in triplets for pid in (t.query, t.positive, t.negative)}
    missing = sorted(needed - set(papers))
    if missing:
        raise KeyError(f"train_on_triplets: {len(missing)} papers of the triplets have no text, e.g. {missing[:3]}")
    objective = TripletObjective({pid: encoder.paper_text(papers[pid]) for pid in needed})
    probe = list(triplets[::max(1, len(triplets) // probe_size)]) if probe_size > 0 else []
    before = evaluate_loss(encoder, probe, objective) if probe else math.nan
    result = train(encoder, list(triplets), objective, config, output_dir=output_dir, resume=resume)
    return result, {"triplets": len(triplets), "optimizer steps": result.steps, "loss before training": before,
                    "loss after training": evaluate_loss(encoder, probe, objective) if probe else math.nan}


def scidocs_scores(encoder: Encoder, eval_papers: Mapping[str, Paper], scidocs_dir: str | Path,
                   recommendations: bool = False) -> dict:
    """The 12 SciDocs metrics (+ ``avg``) of ``encoder`` on a folder in the official layout (× 100)."""
    ids = sorted(eval_papers)
    vectors = encoder.encode_papers([eval_papers[pid] for pid in ids], progress=False)
    metrics = scidocs.evaluate(scidocs_dir, dict(zip(ids, vectors)), recomm=recommendations, progress=False)
    missing = metrics["missing_embeddings"]["count"]
    if missing:
        raise ValueError(f"scidocs_scores: {missing} SciDocs papers have no embedding")
    return book.scidocs_row(metrics)


def csfcube_scores(encoders: Mapping[str, Encoder | Callable[[], Encoder]], csfcube_dir: str | Path,
                   official_specter: bool = True, batch_size: int = 32) -> pd.DataFrame:
    """CSFCube test split, every facet and ``all``: one row per (system, facet), :data:`CSFCUBE_COLUMNS`
    × 100. Papers are ``title [SEP] abstract`` embedded by each encoder and pools ranked by L2 distance
    (the official SPECTER protocol); ``official_specter`` adds the rankings shipped with CSFCube
    (``eval_scripts/sample_ranked_pools``, name ``specter``), which the harness scores to the
    published MAP 34.23 / NDCG%20 53.28."""
    csfcube_dir = Path(csfcube_dir)
    papers = csfcube.read_csfcube_papers(csfcube_dir)
    ids = sorted(papers)
    results = {}
    if official_specter:
        results["SPECTER (official rankings)"] = csfcube.evaluate(
            csfcube_dir, rankings_dir=csfcube_dir / "eval_scripts" / "sample_ranked_pools", name="specter")
    for name, encoder in encoders.items():
        encoder = encoder() if callable(encoder) and not isinstance(encoder, Encoder) else encoder
        vectors = encoder.encode_papers([papers[pid] for pid in ids], batch_size=batch_size, progress=False)
        results[name] = csfcube.evaluate(csfcube_dir, embeddings=dict(zip(ids, vectors)))
    table = csfcube.results_table(results, "test")[list(CSFCUBE_COLUMNS)].rename(columns=CSFCUBE_COLUMNS)
    return 100 * table


def csfcube_leaderboard_metrics(table: pd.DataFrame, system: str) -> dict:
    """One system of a :func:`csfcube_scores` table → the metrics of ``book.leaderboard_row(..., "csfcube", ...)``
    (``map_<facet>`` and ``ndcg%20_<facet>`` for every facet and ``all``, × 100, as the table holds them)."""
    return {f"{metric}_{facet}": float(table.loc[(system, facet), CSFCUBE_COLUMNS[metric]])
            for facet in book.CSFCUBE_FACETS for metric in ("map", "ndcg%20")}
