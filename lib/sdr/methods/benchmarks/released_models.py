"""The Benchmarks chapter's ``released`` part (issue 32): the papers' models on the papers' benchmarks, one table.

At ``paper``, before anything else, the chapter scores SciDocs' shipped SPECTER embeddings with the book's SciDocs
evaluator (no model: the harness on real data against SPECTER's published row) and every released check the
book's chapters register (``RELEASED_CHECKS`` of each ``sdr.methods.<chapter>``, :func:`sdr.released.registered_checks`),
embedded through ``sdr evaluate all``'s cached path, so the chapters that run later read the vectors back. Its own
check is :data:`RELEASED_CHECKS`: the paper profile's SciBERT, mean-pooled, on SciToricsBERT Table 4's sentence
benchmarks.

In the paper dry run the shipped embeddings are a fixture (:func:`write_shipped_embeddings`) whose expected scores
are written beside it, and every check's expected value is the mirror's (:mod:`sdr.released`).

Shown in: notebooks/benchmarks.ipynb, The papers' models on the papers' benchmarks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sdr import released

__all__ = ["GATHERS_RELEASED_CHECKS", "RELEASED_CHECKS", "SHIPPED_PAPER_ROW", "ReleasedScores", "released_models",
           "write_shipped_embeddings", "SHIPPED_FIXTURE_ROUTES"]

GATHERS_RELEASED_CHECKS = True
"""The chapter's released part scores every chapter's checks (:func:`sdr.released.checks_read_by`)."""

_TABLE4_UNASSERTED = ("SciToricsBERT's evaluation drops the last partial batch of the test sentences and states "
                      "neither that batch size nor the input length; the book scores every sentence at "
                      "csabstruct_max_length tokens, so the set-up is close, not exact")

RELEASED_CHECKS = (
    released.ReleasedCheck("allenai/scibert_scivocab_uncased", "csabstruct", "scitoricsbert_table4", "SciBERT avg.",
                           {"p@1": "csabstruct_p@1", "map@r": "csabstruct_map@r"}, pooling="mean", max_length=128,
                           tolerance=None, unasserted_because=_TABLE4_UNASSERTED),
    released.ReleasedCheck("allenai/scibert_scivocab_uncased", "pubmed_rct", "scitoricsbert_table4", "SciBERT avg.",
                           {"p@1": "pubmedrct_p@1", "map@r": "pubmedrct_map@r"}, pooling="mean", max_length=128,
                           tolerance=None, unasserted_because=_TABLE4_UNASSERTED),
)
"""The chapter's own released checks: SciToricsBERT Table 4's "SciBERT avg." row (the mean of SciBERT's last hidden
layer, fractions) on CSAbstruct's and PubMed-RCT's test sentences. 128 tokens is the paper profile's
``csabstruct_max_length`` (SciToricsBERT states none; its sentences are shorter)."""

SHIPPED_PAPER_ROW = "scidocs: SPECTER (SciNCL Table 1, quoted from Cohan et al. 2020)"


@dataclass
class ReleasedScores:
    """The released part's outcome: the one table (shipped embeddings' rows first, then every chapter's checks),
    the shipped embeddings' own scores and the checks' table as :func:`sdr.released.score_released` returns it."""

    table: pd.DataFrame
    shipped: released.ShippedScores
    checks: pd.DataFrame

    @property
    def asserted(self) -> int:
        return int(self.table["holds"].notna().sum())


def _shipped_rows(shipped: released.ShippedScores) -> pd.DataFrame:
    table = shipped.table
    return pd.DataFrame({
        "chapter": "benchmarks", "model": released.SHIPPED_CHECK_MODEL, "benchmark": "scidocs",
        "metric": table["metric"], "ours": table["ours"], "paper": table["paper"], "difference": table["difference"],
        "tolerance": [0.3 if check.startswith("within") else 0.05 for check in table["check"]],
        "holds": table["holds"], "paper row": SHIPPED_PAPER_ROW, "pooling": "— (shipped vectors)",
        "input tokens": None, "adapter or prompt": "—", "cached": False,
        "why unasserted": "", "check": table["check"]})


def released_models(run, batch_size: int | None = None) -> ReleasedScores | None:
    """The released part, the chapter's first output at ``paper``: SciDocs' shipped SPECTER embeddings and every
    chapter's released checks in one table — ours, the paper's number, the difference, the tolerance and whether it
    holds, with each row's pooling, input length and adapter — shown, stored with the chapter's results, then
    asserted (every asserted row within its tolerance; unasserted rows say why). At smoke and real the released
    checkpoints and SciDocs are not read: one line says so and nothing is returned.

    Shown in: notebooks/benchmarks.ipynb, The papers' models on the papers' benchmarks."""
    from IPython.display import display

    from sdr.embed import DATASET_OF
    from sdr.methods.benchmarks.cost import gathered_checks

    if not run.runs_part("released"):
        return None
    if not run.data.policy.real_only:
        print("released models: scored at the paper profile (SciDocs, its shipped embeddings and the released "
              "checkpoints are downloaded there)")
        return None
    scidocs = run.data.input("scidocs")
    shipped = released.shipped_specter_scidocs(scidocs.path, check=False,
                                               embeddings_dir=run.data.input("scidocs_specter_embeddings").path)
    run.branch("shipped SciDocs SPECTER embeddings scored")
    found = gathered_checks()
    frames = [_shipped_rows(shipped)]
    for chapter, checks in found.items():
        data_dirs = {check.benchmark: run.data.input(DATASET_OF[check.benchmark]).path for check in checks}
        table = released.score_released(checks, data_dirs, load_as={c.model: run.data.model(c.model) for c in checks},
                                        device=getattr(run.p, "device", "auto"),
                                        batch_size=batch_size or run.p.batch_size)
        frames.append(table.assign(chapter=chapter, check=[
            "unasserted" if t is None else f"within ±{t:g}" for t in table["tolerance"]]))
    combined = pd.concat(frames, ignore_index=True)[list(_shipped_rows(shipped).columns)]
    checks_table = pd.concat(frames[1:], ignore_index=True) if len(frames) > 1 else pd.DataFrame()
    scores = ReleasedScores(combined, shipped, checks_table)
    print(run.caption(*run.data.model_sources))
    display(combined.round(4))
    print(f"{scores.asserted} rows asserted, {len(combined) - scores.asserted} shown unasserted (each says why); "
          f"{sum(len(c) for c in found.values())} released checks from {len(found)} chapter(s): "
          f"{', '.join(found) or 'none'}")
    released.assert_shipped(shipped)
    if not checks_table.empty:
        released.assert_released(checks_table)
        run.branch("released checks gathered")
        if checks_table["holds"].notna().any():
            run.branch("released checks asserted")
    return scores


# ------------------------------------------------------------------------------------------------ the dry run's fixture
SHIPPED_FIXTURE_ROUTES = {"cls.jsonl": "paper_metadata_mag_mesh.json",
                          "user-citation.jsonl": "paper_metadata_view_cite_read.json",
                          "recomm.jsonl": "paper_metadata_recomm.json"}
"""Each shipped file and the SciDocs metadata file whose papers it embeds (the SciDocs README: ``cls`` for MAG and
MeSH, ``user-citation`` for co-view, co-read, cite and co-cite, ``recomm`` for recommendations)."""


def _fixture_vectors(records: dict, seed: int, dimension: int = 32) -> dict[str, list[float]]:
    """Vectors that carry each paper's words (a hashed bag of words, randomly projected with ``seed``), so the
    evaluator's scores are far from chance and another file's vectors score differently."""
    from sklearn.feature_extraction.text import HashingVectorizer

    ids = sorted(records)
    texts = [f"{records[i].get('title') or ''} {records[i].get('abstract') or ''}" for i in ids]
    counts = HashingVectorizer(n_features=2 ** 12, alternate_sign=False, norm="l2").transform(texts)
    projection = np.random.default_rng(seed).normal(size=(2 ** 12, dimension))
    vectors = counts @ projection
    return {pid: [round(float(x), 6) for x in vector] for pid, vector in zip(ids, np.asarray(vectors))}


def write_shipped_embeddings(folder: Path, fixture) -> None:
    """The dry run's ``scidocs_specter_embeddings``: the three shipped files for the mirror's SciDocs fixture
    (``../scidocs``, written before: it comes first in ``CHAPTER_DATA``), each embedding the papers of its metadata
    file (:data:`SHIPPED_FIXTURE_ROUTES`) with its own projection, and their expected scores written into the
    mirror's ``released_expected.json`` under :data:`sdr.released.SHIPPED_CHECK_MODEL`.

    The expected values are the book's SciDocs evaluator on each file as the SciDocs README routes the tasks (spelled
    out here, not taken from :data:`sdr.released.SHIPPED`): in the dry run the comparison checks that the chapter
    reads the three files, routes each task to its file and compares and asserts each metric, not the evaluator
    itself (its own tests compare it with the official code's numbers)."""
    from sdr import book
    from sdr.evaluate import scidocs

    scidocs_dir = Path(folder).parent / "scidocs"
    if not (scidocs_dir / "paper_metadata_mag_mesh.json").exists():
        raise FileNotFoundError(f"{scidocs_dir}: the mirror's SciDocs fixture must be written before its shipped "
                                "embeddings (scidocs comes first in CHAPTER_DATA)")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for number, (name, metadata) in enumerate(SHIPPED_FIXTURE_ROUTES.items()):
        records = json.loads((scidocs_dir / metadata).read_text(encoding="utf-8"))
        vectors = _fixture_vectors(records, seed=fixture.seed + number)
        lines = [json.dumps({"paper_id": pid, "embedding": vector}) for pid, vector in vectors.items()]
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        files[name] = folder / name
    metrics = {}
    classification = scidocs.evaluate(scidocs_dir, files["cls.jsonl"], recomm=False, progress=False)
    metrics.update({task: classification[task] for task in ("mag", "mesh")})
    proximity = scidocs.evaluate(scidocs_dir, files["user-citation.jsonl"], recomm=False, progress=False)
    metrics.update({task: proximity[task] for task in ("co-view", "co-read", "cite", "co-cite")})
    if scidocs.ScidocsPaths(scidocs_dir).has_recomm():
        metrics["recomm"] = scidocs.evaluate(scidocs_dir, files["user-citation.jsonl"], recomm=True, progress=False,
                                             recomm_embeddings=files["recomm.jsonl"])["recomm"]
    expected_path = folder.parent / released.EXPECTED_FILE
    stored = json.loads(expected_path.read_text(encoding="utf-8")) if expected_path.exists() else {}
    for metric, value in book.scidocs_row(metrics).items():
        if value == value:  # NaN: the metric is not there (no recommendations)
            stored[released.expected_key(released.ReleasedCheck(released.SHIPPED_CHECK_MODEL, "scidocs", "scidocs",
                                                                "SPECTER", {metric: metric}), metric)] = value
    expected_path.write_text(json.dumps(stored, indent=1, sort_keys=True), encoding="utf-8")
