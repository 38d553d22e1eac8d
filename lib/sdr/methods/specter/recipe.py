"""SPECTER (Cohan et al. 2020) as SciNCL replicated it: the recipe's defaults, its training data, training an
encoder on triplets, and the evaluations every document-level chapter reports (the SciDocs evaluator on a folder
in the official layout, real CSFCube next to the official SPECTER rankings, the SciDocs leakage audit).

* :data:`PAPER_TRAINING` — SPECTER's optimiser settings: AdamW, lr 2e-5, 2 epochs, batch 8 × 4 accumulation =
  32 (SciNCL §4.3, "the training setup from SPECTER"), and the schedule of SPECTER's released AllenNLP config
  (``experiment_configs/simple.jsonnet``: ``slanted_triangular``, ``cut_frac`` 0.1, ratio 32; see
  :data:`SCHEDULE_NOTE` for the one difference); :data:`TRIPLETS_PER_QUERY`, :data:`HARD_PER_QUERY` — 5
  triplets a query, 2 with a hard negative (``ceil(0.3 × 5)``); the loss is the triplet margin loss on L2,
  margin 1.
* :func:`write_training_triplets` — the replica of SPECTER's training data: SPECTER's sampling on a (synthetic)
  citation graph, written in the layout of the real data (SciRepEval's ``cite_prediction`` JSONL, each side
  with ``sha`` and ``corpus_id``); :func:`read_training_triplets` reads either.
* :func:`train_on_triplets` — a fresh encoder trained on triplets with the triplet objective; returns the
  trainer's result and the loss on a fixed probe subset before and after (the chapter's sanity check).
* :func:`scidocs_scores` — embed the SciDocs papers and run the SciDocs evaluator (test or validation): one
  table row, with the number of ids that had no embedding (handled as the official evaluator does).
* :func:`scidocs_leakage` — SciNCL A.3's audit: training papers found in SciDocs' test and validation sets,
  compared in one id space (SciDocs' ``sha``).
* :func:`csfcube_scores` — rank CSFCube's judged pools (test split, every facet) by L2 distance of the
  encoder's embeddings, beside the official SPECTER rankings; MAP, NDCG%20 and CoSaEmb Table 4's
  RP / P@20 / R@20 (× 100).
* :func:`csfcube_leaderboard_metrics` — one system of that table as ``book.leaderboard_row`` metrics;
  :func:`csfcube_leaderboard_row` — a trained system's leaderboard row with its per-query MAP, seed, input length
  and the untrained encoder it is compared with; :func:`leaderboard_seeds` and :func:`seed_spread` — the seeds a
  leaderboard model trains with and the page's mean ± σ over them.
* :func:`plan_run` — one training run as ``ChapterData.plan`` reads it (its tokens per text measured on a sample).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sdr import book
from sdr.corpus import Paper, ids_in_space, leakage_audit, read_scirepeval_triplets
from sdr.encoders import Encoder
from sdr.evaluate import csfcube, scidocs
from sdr.samplers import SPECTER_RATIO_HARD_NEGATIVES, SamplingReport, Triplet, count_collisions, given_triplets, \
    specter_triplets
from sdr.train import TrainConfig, TrainResult, TripletObjective, evaluate_loss, train

__all__ = ["PAPER_TRAINING", "SCHEDULE_NOTE", "TRIPLETS_PER_QUERY", "HARD_PER_QUERY", "CSFCUBE_COLUMNS",
           "PROXIMITY_METRICS", "RELEASED_CHECKPOINTS", "PUBLISHED_TOLERANCE", "TrainingTriplets", "take_queries", "write_training_triplets", "read_training_triplets",
           "triplet_statistics", "train_on_triplets", "scidocs_scores", "proximity_mean", "scidocs_leakage",
           "published_difference", "csfcube_scores", "csfcube_leaderboard_metrics", "csfcube_leaderboard_row",
           "leaderboard_seeds", "seed_spread", "training_budget", "plan_run"]

#: SPECTER's (and SciNCL's) fine-tuning: AdamW, lr 2e-5, 2 epochs, 8 × 4 = 32 triplets a step, clipping at 1,
#: weight decay 0.01, and the slanted-triangular schedule of SPECTER's AllenNLP config (10 % of the steps rising).
PAPER_TRAINING = TrainConfig(epochs=2, batch_size=8, accumulation_steps=4, learning_rate=2e-5, weight_decay=0.01,
                             schedule="slanted_triangular", warmup_ratio=0.1, max_grad_norm=1.0)
SCHEDULE_NOTE = (
    "SPECTER's released AllenNLP config trains with the slanted-triangular schedule (cut_frac 0.1, ratio 32): the "
    "learning rate rises over the first 10 % of the optimizer steps, then falls linearly to 1/32 of its peak. "
    "sdr.train's slanted_triangular is that schedule except for the rise, which starts from lr / warm-up steps "
    "instead of lr / 32 (at most lr / 32 apart when the rise lasts 16 steps or more). The config's optimizer "
    "entry reads lr 3e-5 while SciNCL (§4.3) reports SPECTER's setup as 2e-5; this book uses 2e-5, as SciNCL did."
)
#: SciNCL §3.4: "5 triplets per query paper", 2 hard and 3 easy negatives.
TRIPLETS_PER_QUERY = 5
HARD_PER_QUERY = math.ceil(SPECTER_RATIO_HARD_NEGATIVES * TRIPLETS_PER_QUERY)

#: CSFCube metric keys of :mod:`sdr.evaluate.csfcube` → the column names shown (CoSaEmb Table 4 + MAP).
CSFCUBE_COLUMNS = {"map": "MAP", "ndcg%20": "NDCG%20", "rp": "RP", "p@20": "P@20", "r@20": "R@20"}
#: The eight SciDocs proximity metrics (co-view, co-read, cite, co-cite): what citation training is about.
PROXIMITY_METRICS = ["coview_map", "coview_ndcg", "coread_map", "coread_ndcg", "cite_map", "cite_ndcg",
                     "cocite_map", "cocite_ndcg"]
#: Synthetic papers get corpus ids from here on (Semantic Scholar corpus ids are integers).
CORPUS_ID_BASE = 1_000_000
#: Released checkpoints the chapters score through the harness at ``paper`` → their row of SciNCL Table 1
#: (``data/paper_tables/scidocs.csv``), which their SciDocs average must match within :data:`PUBLISHED_TOLERANCE`.
RELEASED_CHECKPOINTS = {"allenai/specter": "SPECTER", "malteos/scincl": "SciNCL"}
#: How far (avg × 100) a released checkpoint scored by the harness on the official SciDocs may sit from the paper:
#: the papers print one decimal (± 0.05) and SciNCL's ten seeds spread by σ 0.064 (Table 1), so 0.3 is a harness
#: error, not rounding or seed noise.
PUBLISHED_TOLERANCE = 0.3


# ----------------------------------------------------------------------------------------- training data
@dataclass
class TrainingTriplets:
    """SPECTER-style training triplets as ids, the papers they name, and the reader's report."""

    triplets: list[Triplet]
    papers: dict[str, Paper]
    report: object  # sdr.corpus.ReadReport

    @property
    def paper_triplets(self) -> list[tuple[Paper, Paper, Paper]]:
        return [(self.papers[t.query], self.papers[t.positive], self.papers[t.negative]) for t in self.triplets]


def write_training_triplets(corpus, path: str | Path, seed: int = 0,
                            query_ids: Sequence[str] | None = None) -> tuple[Path, SamplingReport]:
    """SPECTER's sampling on ``corpus.graph`` (5 triplets a query: 2 hard, 3 easy negatives; every paper of the
    corpus a candidate), written as SPECTER's released training data is laid out: SciRepEval's ``cite_prediction``
    JSONL, one ``{"query", "pos", "neg"}`` line per triplet, each side ``{sha, corpus_id, title, abstract}``
    (``sha`` is the corpus' paper id, the id space of its SciDocs replica; ``corpus_id`` an integer from
    :data:`CORPUS_ID_BASE`). Returns the path and the sampler's report (hard negatives filled with easy ones,
    oversampled positives, collisions). A replica writer: refused under the ``paper`` data policy."""
    from sdr.datasets import forbid_replica

    forbid_replica("sdr.methods.specter.write_training_triplets")
    path = Path(path)
    triplets, report = specter_triplets(corpus.graph, candidates=sorted(corpus.papers), query_ids=query_ids,
                                        seed=seed, progress=False, verbose=False)
    if not triplets:
        raise ValueError(f"write_training_triplets: the corpus' graph gave no triplets ({report})")
    print(f"replica of SPECTER's training triplets: {report}")
    corpus_ids = {pid: CORPUS_ID_BASE + i for i, pid in enumerate(sorted(corpus.papers))}

    def side(pid: str) -> dict:
        paper = corpus.papers[pid]
        return {"sha": pid, "corpus_id": corpus_ids[pid], "title": paper.title, "abstract": paper.abstract}

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for t in triplets:
            handle.write(json.dumps({"query": side(t.query), "pos": side(t.positive), "neg": side(t.negative)}) + "\n")
    return path, report


def read_training_triplets(path: str | Path) -> TrainingTriplets:
    """SPECTER's training triplets (SciRepEval ``cite_prediction`` JSONL or a JSON list), keyed by ``sha`` — the id
    SciDocs uses, so the leakage audit and the evaluation share one id space; ``corpus_id`` stays in each paper's
    metadata (a side without a ``sha`` is keyed by its ``corpus_id`` and counted as unmapped by the audit)."""
    paper_triplets, report = read_scirepeval_triplets(path, id_field="sha")
    triplets, papers = given_triplets(paper_triplets, kind="given")
    return TrainingTriplets(triplets, papers, report)


def take_queries(query_ids: Sequence[str], count: int, seed: int) -> list[str]:
    """``count`` of ``query_ids`` drawn without replacement (seeded), sorted; all of them when ``count`` is 0 or at
    least their number."""
    query_ids = sorted(set(query_ids))
    if count <= 0 or count >= len(query_ids):
        return query_ids
    return sorted(np.random.default_rng(seed).choice(query_ids, size=count, replace=False).tolist())


def triplet_statistics(triplets: Sequence[Triplet]) -> dict:
    """Counts of a triplet set for a page: triplets, query papers, distinct papers, triplets per query, collisions
    (a pair used as positive in one triplet and as negative in another, SciNCL A.8)."""
    per_query = pd.Series([t.query for t in triplets]).value_counts()
    return {"triplets": len(triplets), "query papers": int(per_query.size),
            "distinct papers": len({p for t in triplets for p in (t.query, t.positive, t.negative)}),
            "triplets per query (mean)": float(per_query.mean()) if len(per_query) else math.nan,
            "collisions": count_collisions(triplets)}


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


def training_budget(epochs: int, steps: int, effective_batch: int) -> str:
    """The training budget of a leaderboard row: ``"2 epochs, 42,756 steps × 32 triplets"``."""
    return f"{epochs} epoch{'s' if epochs != 1 else ''}, {steps:,} steps × {effective_batch} triplets"


def plan_run(name: str, triplets: Sequence[Triplet], papers: Mapping[str, Paper], encoder: Encoder, epochs: int,
             effective_batch: int, sample: int = 1000, seed: int = 0) -> dict:
    """One training run as :meth:`sdr.datasets.ChapterData.plan` reads it: the triplets, epochs and effective batch
    of the run, 3 texts an example, and the mean tokens of a text as ``encoder`` cuts it (measured on a seeded
    sample of at most ``sample`` of the run's papers, not assumed)."""
    if not triplets:
        raise ValueError(f"plan_run {name!r}: no triplets")
    ids = sorted({pid for t in triplets for pid in (t.query, t.positive, t.negative)})
    if len(ids) > sample:
        ids = sorted(np.random.default_rng(seed).choice(ids, size=sample, replace=False).tolist())
    missing = [pid for pid in ids if pid not in papers]
    if missing:
        raise KeyError(f"plan_run {name!r}: {len(missing)} papers of the triplets have no text, e.g. {missing[:3]}")
    lengths = [len(encoder.tokenizer(encoder.paper_text(papers[pid]), truncation=True,
                                     max_length=encoder.max_length)["input_ids"]) for pid in ids]
    return dict(name=name, examples=len(triplets), epochs=epochs, effective_batch=effective_batch,
                texts_per_example=3, tokens_per_text=float(np.mean(lengths)))


# ----------------------------------------------------------------------------------------- SciDocs
def scidocs_scores(encoder: Encoder, papers: Mapping[str, Paper], scidocs_dir: str | Path,
                   recommendations: bool = False, split: str = "test", batch_size: int = 32,
                   released: tuple[str, int] | None = None, read_back: list | None = None) -> dict:
    """The 12 SciDocs metrics (+ ``avg``, × 100) of ``encoder`` on a folder in the official layout, and
    ``"missing embeddings"``: how many ids the tasks name that have no embedding.

    ``papers`` are the papers to embed (:func:`sdr.evaluate.scidocs.read_papers`: the union of the metadata files,
    as the SciDocs README instructs). An id without an embedding is handled as the official evaluator handles it —
    a zero vector in MAG/MeSH, a query skipped and a candidate dropped in the proximity tasks — and counted here,
    never an error. ``split="val"`` scores every task on its validation files (SciNCL's sweeps, §6); ``"test"`` is
    the official suite (proximity on test whatever the classification split).

    ``released`` (a released model's name or folder and the layers kept) reads the papers' vectors through the
    embeddings cache (:func:`sdr.evaluate.cache.read_or_embed`, benchmark ``scidocs``: the key ``sdr evaluate all``
    and the released part use for the same texts), so the released checkpoint the chapter already scored before
    training is not embedded on SciDocs a second time; ``read_back`` gets ``released[0]`` appended when it was.
    """
    ids = sorted(papers)

    def embedded() -> dict:
        return dict(zip(ids, encoder.encode_papers([papers[pid] for pid in ids], batch_size=batch_size,
                                                   progress=False)))

    if released is None:
        vectors = embedded()
    else:
        from sdr.evaluate.cache import EmbeddingCache, read_or_embed, released_identity

        identity = released_identity(*released)
        vectors, cached = read_or_embed(EmbeddingCache() if identity is not None else None, identity, "scidocs",
                                        # in the papers' own order, as `sdr evaluate all` reads them (the key
                                        # digests the texts in order)
                                        {pid: encoder.paper_text(paper) for pid, paper in papers.items()},
                                        max_length=encoder.max_length, pooling=encoder.pooling,
                                        normalize=encoder.normalize, embed=embedded)
        if cached and read_back is not None:
            read_back.append(released[0])
    metrics = scidocs.evaluate(scidocs_dir, vectors, recomm=recommendations, val_or_test=split,
                               proximity_split=split, progress=False)
    return {**book.scidocs_row(metrics), "missing embeddings": int(metrics["missing_embeddings"]["count"])}


def proximity_mean(row: Mapping[str, float]) -> float:
    """The mean of the eight proximity metrics (co-view, co-read, cite, co-cite; × 100)."""
    return float(np.mean([row[m] for m in PROXIMITY_METRICS]))


def scidocs_leakage(papers: Mapping[str, Paper] | Sequence[Paper], scidocs_dir: str | Path) -> pd.DataFrame:
    """SciNCL A.3's audit: how many training papers are papers of SciDocs' test set, its validation set, and
    either — compared as Semantic Scholar ``sha`` ids, the id SciDocs keys its papers by (the triplets' sides carry
    ``sha`` and ``corpus_id``; comparing corpus ids with SciDocs' shas finds no overlap at all).

    One row per SciDocs set: ``SciDocs papers`` (its size), ``training papers in it`` and the share of the training
    papers in percent (A.3's percentages are shares of SPECTER's 311,860 training papers) and of the set. The
    frame's ``attrs`` hold ``training papers`` and ``unmapped`` (training papers without a ``sha``, left out of
    the comparison and counted).
    """
    values = list(papers.values()) if isinstance(papers, Mapping) else list(papers)
    train_ids, unmapped = ids_in_space(values, "sha")
    test, validation = scidocs.split_paper_ids(scidocs_dir, "test"), scidocs.split_paper_ids(scidocs_dir, "val")
    sets = {"SciDocs test": test, "SciDocs validation": validation, "SciDocs test or validation": test | validation}
    audit = leakage_audit(train_ids, sets)
    table = pd.DataFrame({
        "training papers in SciDocs": ["in " + name.removeprefix("SciDocs ") for name in audit["eval_set"]],
        "SciDocs papers": audit["size"].to_numpy(),
        "training papers in it": audit["shared"].to_numpy(),
        "% of the training papers": 100 * audit["shared"].to_numpy() / max(len(train_ids), 1),
        "% of the SciDocs papers": 100 * audit["share"].to_numpy(),
        "examples": audit["examples"].to_numpy(),
    }).set_index("training papers in SciDocs")
    table.attrs.update({"training papers": len(train_ids) + len(unmapped), "unmapped": len(unmapped),
                        "unmapped examples": sorted(unmapped)[:5]})
    return table


def published_difference(row: Mapping[str, float], paper_table: pd.DataFrame, paper_model: str,
                         metric: str = "avg") -> float:
    """``row[metric]`` minus the paper's value for ``paper_model`` (a released checkpoint's check against Table 1)."""
    match = paper_table[paper_table["model"] == paper_model]
    if len(match) != 1:
        raise ValueError(f"published_difference: {len(match)} rows named {paper_model!r} in the paper table")
    return float(row[metric]) - float(match[metric].iloc[0])


# ----------------------------------------------------------------------------------------- CSFCube
def csfcube_scores(encoders: Mapping[str, Encoder | Callable[[], Encoder]], csfcube_dir: str | Path,
                   official_specter: bool = True, batch_size: int = 32, return_results: bool = False):
    """CSFCube test split, every facet and ``all``: one row per (system, facet), :data:`CSFCUBE_COLUMNS`
    × 100. Papers are ``title [SEP] abstract`` embedded by each encoder and pools ranked by L2 distance
    (the official SPECTER protocol); ``official_specter`` adds the rankings shipped with CSFCube
    (``eval_scripts/sample_ranked_pools``, name ``specter``), which the harness scores to the
    published MAP 34.23 / NDCG%20 53.28.

    ``return_results=True`` returns ``(table, results)``: ``results[system]`` is the evaluator's output with its
    per-query scores (``csfcube.evaluate(..., return_per_query=True)``), what :func:`csfcube_leaderboard_row`
    reads."""
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
        results[name] = csfcube.evaluate(csfcube_dir, embeddings=dict(zip(ids, vectors)),
                                         return_per_query=return_results)
    table = 100 * csfcube.results_table(results, "test")[list(CSFCUBE_COLUMNS)].rename(columns=CSFCUBE_COLUMNS)
    return (table, results) if return_results else table


def csfcube_leaderboard_metrics(table: pd.DataFrame, system: str) -> dict:
    """One system of a :func:`csfcube_scores` table → the metrics of ``book.leaderboard_row(..., "csfcube", ...)``
    (``map_<facet>`` and ``ndcg%20_<facet>`` for every facet and ``all``, × 100, as the table holds them)."""
    return {f"{metric}_{facet}": float(table.loc[(system, facet), CSFCUBE_COLUMNS[metric]])
            for facet in book.CSFCUBE_FACETS for metric in ("map", "ndcg%20")}


def csfcube_leaderboard_row(method: str, result: Mapping, csfcube_dir: str | Path, *, data: str, base_model: str,
                            training: str, input_tokens: int, seed: int | None = None, reference: str | None = None,
                            paper_model: str | None = None) -> dict:
    """A CSFCube leaderboard row (``book.leaderboard_row``) from one system's evaluator output (``result``, with
    per-query scores: :func:`csfcube_scores` with ``return_results=True``): its metrics, its per-query MAP and the
    two test folds as groups (``book.csfcube_per_query``), the tokens its encoder read, its training seed and the
    method it is compared with (``book.untrained_reference``: the Benchmarks chapter's untrained encoder)."""
    per_query, groups = book.csfcube_per_query(result, csfcube_dir)
    return book.leaderboard_row(method, "csfcube", book.csfcube_metrics(result), data=data, base_model=base_model,
                                training=training, paper_model=paper_model, input_tokens=input_tokens, seed=seed,
                                per_query=per_query, query_groups=groups, reference=reference)


def leaderboard_seeds(seed: int, count: int) -> list[int]:
    """The training seeds of a leaderboard model: ``seed, seed + 1, …`` (``count`` of them, at least one)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"leaderboard_seeds: count must be a positive integer, got {count!r}")
    return [seed + i for i in range(count)]


def seed_spread(rows: Sequence[Mapping], untrained: Mapping | None = None, groups: Sequence[Sequence[str]] | None = None,
                seed: int = 0) -> pd.DataFrame:
    """The page's view of a chapter's CSFCube leaderboard rows (:func:`csfcube_leaderboard_row`): one line per
    method with its MAP (all facets, × 100) per seed, their mean and sample σ (:func:`sdr.stats.mean_sd`).

    With ``untrained`` (per-query MAP × 100 of the untrained encoder scored on the same page at the same input
    length; ``groups``: CSFCube's two test folds), the mean of the method's per-query scores over its seeds minus
    the untrained encoder's, and its two-stage bootstrap 95 % interval — seeds, then queries within folds
    (:func:`sdr.stats.seed_query_bootstrap`; with one seed conditional on that model) —, as the Summary computes it
    against the Benchmarks chapter's row."""
    from sdr.stats import mean_sd, seed_query_bootstrap

    by_method: dict[str, list[Mapping]] = {}
    for row in rows:
        by_method.setdefault(row["method"], []).append(row)
    lines = []
    for method, group in by_method.items():
        group = sorted(group, key=lambda row: row.get("seed") or 0)
        mean, sd, count = mean_sd([row["metrics"]["map_all"] for row in group])
        line = {"method": method, "seeds": ", ".join(str(row.get("seed")) for row in group),
                "MAP per seed": ", ".join(f"{row['metrics']['map_all']:.2f}" for row in group),
                "MAP mean": mean, "MAP σ": sd if count > 1 else math.nan}
        if untrained is not None:
            interval = seed_query_bootstrap([row["per_query"] for row in group], [untrained],
                                            groups or group[0].get("query_groups"), seed=seed)
            line.update({"Δ vs untrained (this page)": interval["difference"], "95 % low": interval["low"],
                         "95 % high": interval["high"]})
        lines.append(line)
    return pd.DataFrame(lines).set_index("method")
