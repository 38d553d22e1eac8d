"""The leaderboard convention: one row per scored system and benchmark, stored by chapters, read by the Summary.

A chapter stores a list of :func:`leaderboard_row` dicts as ``extra["leaderboard"]`` of its results
(:func:`sdr.book.results.save_results`); :func:`leaderboard_rows` collects every stored row, validated again,
and :func:`leaderboard_table` is one benchmark's table for the Summary.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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
                    training: str, paper_model: str | None = None, input_tokens: int | None = None,
                    seed: int | None = None, per_query: Mapping[str, float] | None = None,
                    query_groups: Sequence[Sequence[str]] | None = None, reference: str | None = None) -> dict:
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
        seed: the training seed of this row; a method stored with several seeds is shown as mean ± σ.
        per_query: the headline metric per query, in the benchmark's units (:func:`csfcube_per_query`,
            :func:`csabstruct_per_query`); their (grouped) mean must be the headline value. Needed for the
            paired interval of a difference.
        query_groups: the query keys whose means are averaged (CSFCube: its two test folds); default one group.
        reference: the method this row is compared with (its untrained encoder, same pooling and input length,
            stored by the same chapter with ``per_query``): the Summary shows the difference and its two-stage
            bootstrap 95 % interval (training seeds, then queries; :func:`sdr.stats.seed_query_bootstrap`).

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
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"leaderboard row {method!r} ({benchmark}): seed must be an integer, got {seed!r}")
        row["seed"] = seed
    if per_query is not None:
        from sdr.stats import grouped_mean

        scores = {str(k): float(v) for k, v in per_query.items()}
        groups = [list(map(str, g)) for g in (query_groups or [list(scores)])]
        if any(k not in scores for g in groups for k in g) or not all(0.0 <= v <= spec["scale"] for v in scores.values()):
            raise ValueError(f"leaderboard row {method!r} ({benchmark}): per_query must hold a value in [0, "
                             f"{spec['scale']}] for every key of query_groups")
        if abs(grouped_mean(scores, groups) - values[spec["headline"]]) > 1e-6 * spec["scale"]:
            raise ValueError(f"leaderboard row {method!r} ({benchmark}): the per-query values average to "
                             f"{grouped_mean(scores, groups)}, not the headline {values[spec['headline']]}")
        row["per_query"], row["query_groups"] = scores, groups
    if reference is not None:
        row["reference"] = str(reference)
    return row


def untrained_reference(model_name: str, model_layers: int = 0, pooling: str = "cls", benchmark: str = "csfcube") -> str:
    """The method name of the untrained encoder's CSFCube/CSAbstruct row that the Benchmarks chapter stores (with
    per-query scores): a trained row names it as its ``reference``, so every trained row of a leaderboard is compared
    with the one untrained encoder it started from, scored the same way."""
    suffix = "abstract query" if benchmark == "csfcube" else "untrained"
    return f"{base_model_label(model_name, model_layers)} · {pooling} · {suffix}"


def csfcube_per_query(result: Mapping, data_dir, facet: str = "all") -> tuple[dict, list[list[str]]]:
    """Per-query MAP × 100 of the test folds and the two folds as groups, from ``csfcube.evaluate(...,
    return_per_query=True)``: their grouped mean is :func:`csfcube_metrics`' ``map_all``."""
    from sdr.evaluate import csfcube

    if "per_query" not in result:
        raise ValueError("csfcube_per_query: evaluate with return_per_query=True")
    splits = csfcube.read_splits(data_dir)[facet]
    groups = [list(splits["fold1_test"]), list(splits["fold2_test"])]
    return {k: 100.0 * result["per_query"][k]["map"] for g in groups for k in g}, groups


def csabstruct_per_query(result: Mapping) -> dict:
    """Per-sentence AP@R (fractions) from ``sdr.evaluate.sentences.evaluate``'s result: the same neighbours its
    MAP@R averages, so their mean is :func:`csabstruct_metrics`' ``map@r``."""
    return {str(k): float(v) for k, v in result["per_query"].items()}


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
                                      paper_model=row.get("paper_model"), input_tokens=row.get("input_tokens"),
                                      seed=row.get("seed"), per_query=row.get("per_query"),
                                      query_groups=row.get("query_groups"), reference=row.get("reference"))
            except (KeyError, TypeError, ValueError) as error:
                raise ValueError(f"{record['path']}: extra.leaderboard[{index}] is not a leaderboard row "
                                 f"(see sdr.book.leaderboard_row): {error}") from None
            if data is None or row["data"] == data:
                metrics = row.pop("metrics")
                lines.append({"chapter": record["chapter"], "profile": record["profile"], **row, **metrics})
    columns = ["chapter", "profile", "method", "benchmark", "data", "base_model", "training", "paper_model"]
    return pd.DataFrame(lines, columns=list(dict.fromkeys(columns + [k for line in lines for k in line])))


def leaderboard_table(benchmark: str, profile: str = "real", results: Path | None = None) -> pd.DataFrame:
    """The Summary's detailed leaderboard of one benchmark: real-data rows at ``profile`` (a method's seeds averaged),
    every metric, best headline first."""
    spec = BENCHMARKS[benchmark]
    summary = seed_summary(benchmark, profile, results)
    columns = [*spec["metrics"], "seeds", "input tokens", "base model", "training budget", "chapter"]
    if summary.empty:
        return pd.DataFrame(columns=columns)
    metrics = [m for m in spec["metrics"] if m in summary.columns]
    table = summary.set_index("method").rename(columns={"base_model": "base model", "training": "training budget",
                                                       "input_tokens": "input tokens"})
    table = table[[*metrics, "seeds", "input tokens", "base model", "training budget", "chapter"]]
    return table.sort_values(spec["headline"], ascending=False)


# ------------------------------------------------------------------------------------------ seeds and intervals
def seed_summary(benchmark: str, profile: str = "real", results: Path | None = None) -> pd.DataFrame:
    """One line per method of a benchmark's real-data rows at ``profile``: every metric averaged over the method's
    seeds, the headline's σ and seed count, and the per-query headline averaged over seeds (for intervals)."""
    spec = BENCHMARKS[benchmark]
    rows = leaderboard_rows(profile, "real", results)
    rows = rows[rows["benchmark"] == benchmark] if len(rows) else rows
    lines = []
    for method, group in (rows.groupby("method", sort=False) if len(rows) else []):
        metrics = [m for m in spec["metrics"] if m in group.columns and group[m].notna().any()]
        from sdr.stats import mean_sd

        mean, sd, seeds = mean_sd(group[spec["headline"]].astype(float))
        per_query, per_query_seeds = None, None
        if "per_query" in group and group["per_query"].notna().all():
            keys = list(group["per_query"].iloc[0])
            per_query_seeds = [dict(p) for p in group["per_query"]]
            per_query = {k: float(sum(p[k] for p in per_query_seeds) / len(group)) for k in keys}
        first = group.iloc[0]
        lines.append({"method": method, **{m: float(group[m].astype(float).mean()) for m in metrics},
                      "sd": sd, "seeds": seeds, "input_tokens": first.get("input_tokens"),
                      "training": first["training"], "base_model": first["base_model"], "chapter": first["chapter"],
                      "reference": first.get("reference") if isinstance(first.get("reference"), str) else None,
                      "per_query": per_query, "per_query_seeds": per_query_seeds,
                      "query_groups": first.get("query_groups") if per_query is not None else None})
    return pd.DataFrame(lines)


HEADLINE_COLUMNS = ["method", "mean", "sd", "seeds", "difference", "low", "high", "excludes_zero", "p_value",
                    "p_holm", "conditional", "reference", "best_untrained", "best_difference", "best_low", "best_high",
                    "input_tokens", "training", "chapter"]


def headline_table(benchmark: str, profile: str = "real", results: Path | None = None, samples: int = 2000,
                   seed: int = 0) -> pd.DataFrame:
    """The Summary's headline table of a benchmark: per system the headline mean ± σ over seeds and, for a row
    with a ``reference`` (its untrained encoder, read the same way), the difference with a two-stage bootstrap 95 %
    interval — training seeds, then queries within folds, paired (:func:`sdr.stats.seed_query_bootstrap`;
    ``conditional``: one trained seed, so the interval is conditional on that one model) —, its p-value and
    Holm's adjustment over the leaderboard's comparisons (``p_holm``: the family is every row compared with its
    reference here). ``best_untrained`` is the strongest untrained reading of the same encoder (another pooling,
    the same input length) and ``best_difference`` … ``best_high`` the row's difference from it: whether training
    beat the best free baseline, not only the one it started from. Best first."""
    from sdr.stats import holm, seed_query_bootstrap

    spec = BENCHMARKS[benchmark]
    summary = seed_summary(benchmark, profile, results)
    if summary.empty:
        return pd.DataFrame(columns=HEADLINE_COLUMNS)
    by_method = summary.set_index("method")
    untrained = summary[~summary["training"].map(trained_here).astype(bool) & summary["per_query"].notna()
                        & summary["reference"].isna()]

    def compare(line, other: str) -> dict:
        if other not in by_method.index or by_method.loc[other, "per_query"] is None or line["per_query"] is None:
            raise ValueError(f"{benchmark}: {line['method']!r} is compared with {other!r}, which has no stored "
                             f"per-query scores at {profile} (store the reference row with per_query)")
        return seed_query_bootstrap(line["per_query_seeds"], by_method.loc[other, "per_query_seeds"],
                                    line["query_groups"], samples=samples, seed=seed,
                                    b_trained=trained_here(by_method.loc[other, "training"]))

    lines = []
    for _, line in summary.iterrows():
        entry = {key: None for key in HEADLINE_COLUMNS}
        entry.update({"method": line["method"], "mean": line[spec["headline"]], "sd": line["sd"],
                      "seeds": line["seeds"], "reference": line["reference"], "input_tokens": line["input_tokens"],
                      "training": line["training"], "chapter": line["chapter"]})
        reference = line["reference"] if isinstance(line["reference"], str) else None
        if reference:
            interval = compare(line, reference)
            entry.update(difference=interval["difference"], low=interval["low"], high=interval["high"],
                         excludes_zero=interval["excludes_zero"], p_value=interval["p_value"],
                         conditional=interval["conditional_on_one_model"])
            base = by_method.loc[reference, "base_model"]
            rivals = untrained[(untrained["base_model"] == base)
                               & (untrained["input_tokens"] == by_method.loc[reference, "input_tokens"])]
            if len(rivals):
                best = rivals.sort_values(spec["headline"], ascending=False).iloc[0]["method"]
                against_best = interval if best == reference else compare(line, best)
                entry.update(best_untrained=best, best_difference=against_best["difference"],
                             best_low=against_best["low"], best_high=against_best["high"])
        lines.append(entry)
    table = pd.DataFrame(lines, columns=HEADLINE_COLUMNS)
    compared = table["p_value"].notna()
    if compared.any():
        adjusted = holm(dict(zip(table.loc[compared, "method"], table.loc[compared, "p_value"].astype(float))))
        table.loc[compared, "p_holm"] = table.loc[compared, "method"].map(adjusted)
    return table.sort_values("mean", ascending=False).reset_index(drop=True)


def headline_display(table: pd.DataFrame, benchmark: str) -> pd.DataFrame:
    """:func:`headline_table` as the page shows it: short columns that fit the page (a † marks an interval
    conditional on one trained model)."""
    spec = BENCHMARKS[benchmark]
    decimals = spec["decimals"]

    def score(line) -> str:
        spread = f" ± {line['sd']:.{decimals}f}" if line["seeds"] > 1 else ""
        return f"{line['mean']:.{decimals}f}{spread}" + (f" ({line['seeds']} seeds)" if line["seeds"] > 1 else "")

    def interval(line, prefix: str = "") -> str:
        value = line[f"{prefix}difference"]
        if not isinstance(value, float) or value != value:
            return "—"
        mark = "†" if line["conditional"] else ""
        return (f"{value:+.{decimals}f} [{line[f'{prefix}low']:+.{decimals}f}, "
                f"{line[f'{prefix}high']:+.{decimals}f}]{mark}")

    def holm_p(line) -> str:
        value = line["p_holm"]
        return "—" if value is None or value != value else f"{value:.3f}"

    def budget(text: str) -> str:
        return text if len(text) <= 32 else text[:31] + "…"

    return pd.DataFrame({"system": table["method"], spec["headline"]: table.apply(score, axis=1),
                         "Δ vs its untrained encoder [95 % CI]": table.apply(interval, axis=1),
                         "p (Holm)": table.apply(holm_p, axis=1),
                         "Δ vs best untrained [95 % CI]": table.apply(lambda line: interval(line, "best_"), axis=1),
                         "training": table["training"].map(budget)})


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
