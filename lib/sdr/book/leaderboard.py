"""The leaderboard convention: one row per scored system and benchmark, stored by chapters, read by the Summary.

A chapter stores a list of :func:`leaderboard_row` dicts as ``extra["leaderboard"]`` of its results
(:func:`sdr.book.results.save_results`); :func:`leaderboard_rows` collects every stored row, validated again,
and :func:`leaderboard_table` is one benchmark's table for the Summary.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from sdr.book import paths
from sdr.book.results import SCIDOCS_COLUMNS, save_results, stored_record


CSFCUBE_FACETS = ("background", "method", "result", "all")
BENCHMARKS = {
    "csfcube": {"title": "CSFCube test", "headline": "map_all", "scale": 100.0, "decimals": 2,
                "metrics": [f"{m}_{facet}" for facet in CSFCUBE_FACETS for m in ("map", "ndcg%20")],
                "units": "× 100, test split (mean of the two folds), the official script's MAP and NDCG%20",
                "paper_table": None, "paper_columns": {}},
    "csabstruct": {"title": "CSAbstruct sentences", "headline": "map@r", "scale": 1.0, "decimals": 3,
                   "metrics": ["map@r", "p@1"],
                   "units": "fractions, as SciToricsBERT Table 4 prints them (1,349 test sentences)",
                   "paper_table": "scitoricsbert_table4",
                   "paper_columns": {"map@r": "csabstruct_map@r", "p@1": "csabstruct_p@1"}},
    "scidocs": {"title": "SciDocs", "headline": "avg", "scale": 100.0, "decimals": 1,
                "metrics": [*SCIDOCS_COLUMNS.values(), "avg"],
                "units": "× 100, the official evaluator's 12 metrics and their mean",
                "paper_table": "scidocs", "paper_columns": {c: c for c in [*SCIDOCS_COLUMNS.values(), "avg"]}},
}
"""Benchmarks of the leaderboard and the status map: metric names, units (``scale`` = best possible value),
the headline metric of the status map, and the paper table (``data/paper_tables``) its paper numbers come from."""
LEADERBOARD_DATA = ("real", "replica")


def trained_here(training: str) -> bool:
    """Whether a leaderboard row's ``training`` budget says the book trained it (not "none", "external: …")."""
    return not (training.strip() in ("none", "—") or training.startswith("external"))


def leaderboard_row(method: str, benchmark: str, metrics: Mapping[str, float], *, data: str, base_model: str,
                    training: str, paper_model: str | None = None, input_tokens: int | None = None) -> dict:
    """One row of the leaderboard convention; chapters store a list of them as ``extra["leaderboard"]``.

    Args:
        method: what was scored, as the reader should read it ("SPECTER", "BM25 · abstract query",
            "SPECTER (official rankings)"); the status map has one row per method.
        benchmark: a key of :data:`BENCHMARKS` ("csfcube", "csabstruct", "scidocs").
        metrics: metric name → value in the benchmark's units (:data:`BENCHMARKS` ``metrics``; the headline
            metric is required). :func:`csfcube_metrics` and :func:`csabstruct_metrics` convert the
            evaluators' outputs.
        data: "real" (the real benchmark) or "replica" (the synthetic replica).
        base_model: the encoder every trained row starts from ("all-MiniLM-L6-v2"); "—" for lexical rankers.
        training: the training budget the chapter recorded ("2 epochs, 75 optimizer steps of 32 triplets");
            "none" for systems nothing trained (lexical rankers, the untrained encoder), "external: …" for
            systems trained elsewhere ("external: SPECTER release"). The Summary checks that every row the book
            trained on a benchmark shares one ``base_model``.
        paper_model: the ``model`` of this method in the benchmark's paper table, for the status map.
        input_tokens: the tokens per text the encoder read (its ``max_length``), when the row records it
            (``sdr evaluate all`` does); the row holds the key only when it is given.

    Example::

        rows = [book.leaderboard_row("SPECTER", "csfcube", book.csfcube_metrics(result), data="real",
                                     base_model="all-MiniLM-L6-v2", training="2 epochs, 75 steps × 32 triplets")]
        book.save_results("specter", profile, tables, sources, extra={"leaderboard": rows})
    """
    if benchmark not in BENCHMARKS:
        raise ValueError(f"leaderboard row {method!r}: unknown benchmark {benchmark!r}; known: {sorted(BENCHMARKS)}")
    spec = BENCHMARKS[benchmark]
    if data not in LEADERBOARD_DATA:
        raise ValueError(f"leaderboard row {method!r}: data must be one of {LEADERBOARD_DATA}, got {data!r}")
    unknown = sorted(set(metrics) - set(spec["metrics"]))
    if unknown:
        raise ValueError(f"leaderboard row {method!r} ({benchmark}): unknown metrics {unknown}; "
                         f"expected some of {spec['metrics']}")
    if spec["headline"] not in metrics:
        raise ValueError(f"leaderboard row {method!r} ({benchmark}): the headline metric {spec['headline']!r} is missing")
    values = {}
    for name, value in metrics.items():
        if not isinstance(value, (int, float)) and not hasattr(value, "item"):
            raise ValueError(f"leaderboard row {method!r} ({benchmark}): {name} = {value!r} is not a number")
        value = float(value)
        if not 0.0 <= value <= spec["scale"]:  # also refuses NaN
            raise ValueError(f"leaderboard row {method!r} ({benchmark}): {name} = {value} is outside "
                             f"[0, {spec['scale']}] ({spec['units']})")
        values[name] = value
    for name, text in (("method", method), ("base_model", base_model), ("training", training)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"leaderboard row: {name} must be a non-empty string, got {text!r}")
    row = {"method": method, "benchmark": benchmark, "data": data, "base_model": base_model,
           "training": training, "paper_model": paper_model, "metrics": values}
    if input_tokens is not None:
        if isinstance(input_tokens, bool) or not isinstance(input_tokens, int) or input_tokens < 1:
            raise ValueError(f"leaderboard row {method!r} ({benchmark}): input_tokens must be a positive integer, "
                             f"got {input_tokens!r}")
        row["input_tokens"] = input_tokens
    return row


def base_model_label(model_name: str, model_layers: int = 0) -> str:
    """The ``base_model`` of a leaderboard row from a chapter's ``model_name``/``model_layers`` parameters, so
    every chapter names the shared encoder the same way ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2 (2 layers)")."""
    label = "all-MiniLM-L6-v2" if model_name == "minilm" else str(model_name)
    return f"{label} ({model_layers} layers)" if model_layers else label


def csfcube_metrics(result: Mapping, split: str = "test") -> dict:
    """``sdr.evaluate.csfcube.evaluate`` output → leaderboard metrics (MAP and NDCG%20 per facet, × 100)."""
    return {f"{metric}_{facet}": 100.0 * float(result[split][facet][metric])
            for facet in CSFCUBE_FACETS for metric in ("map", "ndcg%20")}


def csabstruct_metrics(result: Mapping) -> dict:
    """``sdr.evaluate.sentences.evaluate`` output → leaderboard metrics (MAP@R, P@1, fractions)."""
    return {"map@r": float(result["map@r"]), "p@1": float(result["p@1"])}


def _records(profile: str | None = None, results: Path | None = None) -> list[dict]:
    root = Path(results or paths.results_dir())
    return [json.loads(path.read_text()) | {"path": str(path)}
            for path in sorted(root.glob(f"*/{profile or '*'}.json"))]


def leaderboard_rows(profile: str | None = "real", data: str | None = "real",
                     results: Path | None = None) -> pd.DataFrame:
    """Every stored leaderboard row (``extra["leaderboard"]`` of each chapter's results), one per line.

    Filtered to ``profile`` and ``data`` (None: all). Columns: chapter, profile, method, benchmark, data,
    base_model, training, paper_model, then every metric. Rows are validated again, so a malformed row
    fails here naming its results file.
    """
    lines = []
    for record in _records(profile, results):
        for index, row in enumerate((record.get("extra") or {}).get("leaderboard") or []):
            try:
                row = leaderboard_row(row["method"], row["benchmark"], row["metrics"], data=row["data"],
                                      base_model=row["base_model"], training=row["training"],
                                      paper_model=row.get("paper_model"), input_tokens=row.get("input_tokens"))
            except (KeyError, TypeError, ValueError) as error:
                raise ValueError(f"{record['path']}: extra.leaderboard[{index}] is not a leaderboard row "
                                 f"(see sdr.book.leaderboard_row): {error}") from None
            if data is None or row["data"] == data:
                metrics = row.pop("metrics")
                lines.append({"chapter": record["chapter"], "profile": record["profile"], **row, **metrics})
    columns = ["chapter", "profile", "method", "benchmark", "data", "base_model", "training", "paper_model"]
    return pd.DataFrame(lines, columns=list(dict.fromkeys(columns + [k for line in lines for k in line])))


def leaderboard_table(benchmark: str, profile: str = "real", results: Path | None = None) -> pd.DataFrame:
    """The Summary's leaderboard of one benchmark: real-data rows at ``profile``, best headline first."""
    spec = BENCHMARKS[benchmark]
    rows = leaderboard_rows(profile, "real", results)
    rows = rows[rows["benchmark"] == benchmark] if len(rows) else rows
    metrics = [m for m in spec["metrics"] if m in rows.columns]
    table = rows.set_index("method")[[*metrics, "base_model", "training", "chapter"]] if len(rows) else \
        pd.DataFrame(columns=[*spec["metrics"], "base_model", "training", "chapter"])
    table = table.rename(columns={"base_model": "base model", "training": "training budget"})
    return table.sort_values(spec["headline"], ascending=False) if len(table) else table


# ------------------------------------------------------------------------------------------ models scored outside
EXTERNAL = "external"
"""The results-store "chapter" of models scored by ``sdr evaluate all`` (``results/external/<profile>.json``);
the Summary's leaderboards show its rows beside the chapters' own."""


def store_external_rows(rows: list[dict], profile: str, sources: list[str], details: Mapping) -> Path:
    """Add one model's :func:`leaderboard_row` rows to ``results/external/<profile>.json``.

    A row replaces the stored row of the same method and benchmark; other models' rows stay. A method name
    that a chapter already uses on that benchmark at ``profile`` is refused, so each leaderboard keeps one row
    per method. ``details`` (the model, input length, data folders, every evaluator's output) is kept under
    ``extra["runs"][method]``; ``sources`` join the record's sources.
    """
    if not rows:
        raise ValueError("store_external_rows: no rows to store")
    methods = {row["method"] for row in rows}
    if len(methods) != 1:
        raise ValueError(f"store_external_rows: the rows of one call name one method, got {sorted(methods)}")
    method = methods.pop()
    taken = leaderboard_rows(profile, data=None)
    if len(taken):
        clash = taken[(taken["chapter"] != EXTERNAL) & (taken["method"] == method)
                      & taken["benchmark"].isin([row["benchmark"] for row in rows])]
        if len(clash):
            raise ValueError(f"method name {method!r} is already a row of chapter {clash['chapter'].iloc[0]!r} on "
                             f"{clash['benchmark'].iloc[0]} at profile {profile!r}; choose another with --name")
    stored = stored_record(EXTERNAL, profile) or {}
    extra = dict(stored.get("extra") or {})
    new = {(row["method"], row["benchmark"]) for row in rows}
    kept = [row for row in extra.get("leaderboard") or [] if (row["method"], row["benchmark"]) not in new]
    extra["leaderboard"] = kept + list(rows)
    extra["runs"] = {**(extra.get("runs") or {}), method: dict(details)}
    return save_results(EXTERNAL, profile, {}, list(dict.fromkeys([*(stored.get("sources") or []), *sources])),
                        extra=extra)
