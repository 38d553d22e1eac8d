"""The results store (``results/<chapter>/<profile>.json``) and the papers' own tables (``data/paper_tables``).

Chapters store what they computed with :func:`save_results`; the Summary and the status page read it back with
:func:`load_results` (tables come back as DataFrames). :func:`paper_vs_ours` stacks a paper's rows over ours.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from sdr.book import paths


def jsonable(value):
    """``value`` as JSON can store it: tables as ``{"__table__": split form}``, numpy scalars as numbers."""
    if isinstance(value, pd.DataFrame):
        return {"__table__": json.loads(value.to_json(orient="split", index=True))}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def _labels(labels: list):
    """Row or column labels as ``to_json(orient="split")`` wrote them: a MultiIndex comes back as lists."""
    if labels and all(isinstance(label, list) for label in labels):
        return pd.MultiIndex.from_tuples([tuple(label) for label in labels])
    return labels


def from_jsonable(value):
    """The inverse of :func:`jsonable`: stored tables back as DataFrames."""
    if isinstance(value, dict) and "__table__" in value:
        split = value["__table__"]
        return pd.DataFrame(split["data"], index=_labels(split["index"]), columns=_labels(split["columns"]))
    if isinstance(value, dict):
        return {k: from_jsonable(v) for k, v in value.items()}
    return value


def save_results(chapter: str, profile: str, tables: Mapping[str, pd.DataFrame], sources: Sequence[str],
                 extra: Mapping | None = None) -> Path:
    """Store a chapter's tables (and any extra JSON-able values) for the summary page.

    ``chapter`` and ``profile`` become a folder and a file name in the results store, so each must be a plain
    name (:func:`sdr.outputs.safe_name`: ``../cfs3/paper`` would write over another chapter's record); the record
    is written through the output layer (inside the store, never through a link, atomically)."""
    from sdr.outputs import safe_name, write_text

    store = paths.results_dir()
    path = store / safe_name(chapter, "chapter") / f"{safe_name(profile, 'profile')}.json"
    record = {
        "chapter": chapter,
        "profile": profile,
        "sources": list(sources),
        "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "tables": jsonable(dict(tables)),
        "extra": jsonable(dict(extra or {})),
    }
    return write_text(path, json.dumps(record, indent=1), f"results store {chapter}/{profile}.json", within=store)


def load_results(chapter: str | None = None, profile: str | None = None) -> list[dict]:
    """Every stored result (optionally of one chapter/profile), tables back as DataFrames."""
    root = paths.results_dir()
    records = []
    for path in sorted(root.glob(f"{chapter or '*'}/{profile or '*'}.json")):
        record = json.loads(path.read_text())
        record["tables"] = from_jsonable(record["tables"])
        record["extra"] = from_jsonable(record.get("extra", {}))
        records.append(record)
    return records


def stored_record(chapter: str, profile: str, results: Path | None = None) -> dict | None:
    """The raw stored record of one chapter at one profile (tables left as JSON), or None when absent."""
    path = Path(results or paths.results_dir()) / chapter / f"{profile}.json"
    return json.loads(path.read_text()) if path.exists() else None


def read_paper_table(name: str) -> pd.DataFrame:
    """Numbers copied from a paper: ``data/paper_tables/<name>.csv`` (columns source, table, model, …)."""
    path = paths.PAPER_TABLES / f"{name}.csv"
    if not path.exists():
        have = sorted(p.stem for p in paths.PAPER_TABLES.glob("*.csv"))
        raise FileNotFoundError(f"{path}: no such paper table; have {have}")
    table = pd.read_csv(path, comment="#")
    required = {"source", "table", "model"}
    if not required <= set(table.columns):
        raise ValueError(f"{path}: expected columns {sorted(required)} before the metrics, got {list(table.columns)}")
    return table


def paper_vs_ours(ours: pd.DataFrame, paper: pd.DataFrame, metrics: Sequence[str], label: str) -> pd.DataFrame:
    """Stack the paper's rows and ours on the same metric columns, with a ``reported by`` column."""
    paper_rows = paper[["model", *metrics]].copy()
    paper_rows.insert(0, "reported by", paper["source"] + ", " + paper["table"])
    our_rows = ours.reset_index().rename(columns={"index": "model"})[["model", *metrics]].copy()
    our_rows.insert(0, "reported by", label)
    return pd.concat([paper_rows, our_rows], ignore_index=True)


SCIDOCS_COLUMNS = {
    ("mag", "f1"): "mag_f1", ("mesh", "f1"): "mesh_f1",
    ("co-view", "map"): "coview_map", ("co-view", "ndcg"): "coview_ndcg",
    ("co-read", "map"): "coread_map", ("co-read", "ndcg"): "coread_ndcg",
    ("cite", "map"): "cite_map", ("cite", "ndcg"): "cite_ndcg",
    ("co-cite", "map"): "cocite_map", ("co-cite", "ndcg"): "cocite_ndcg",
    ("recomm", "adj-NDCG"): "recomm_ndcg", ("recomm", "adj-P@1"): "recomm_p1",
}
"""SciDocs evaluator output → the column names of ``data/paper_tables/scidocs.csv``."""


def scidocs_row(metrics: Mapping) -> dict:
    """One table row of SciDocs metrics; ``avg`` only when all 12 are there (else NaN, never a partial mean)."""
    row = {column: float(metrics[task][measure]) if task in metrics and measure in metrics[task] else float("nan")
           for (task, measure), column in SCIDOCS_COLUMNS.items()}
    values = list(row.values())
    row["avg"] = sum(values) / len(values) if all(v == v for v in values) else float("nan")
    return row


#: Fields of a stored record that differ between two executions of the same chapter by design.
VOLATILE_FIELDS = ("written", "python")


def compare_stores(before: str | Path, after: str | Path, profile: str = "smoke",
                   ignore: Sequence[str] = VOLATILE_FIELDS) -> dict[str, list[str]]:
    """Differences between two results stores, chapter by chapter: ``{chapter: [what differs, …]}``, empty
    lists where a chapter's stored record is equal (every table cell and extra value exactly, the fields in
    ``ignore`` — when it was written, by which Python — left out). A refactoring of a chapter must leave its
    record equal; a chapter stored in only one of the stores is reported as such."""
    before, after = Path(before), Path(after)
    chapters = sorted({p.parent.name for p in before.glob(f"*/{profile}.json")}
                      | {p.parent.name for p in after.glob(f"*/{profile}.json")})
    report = {}
    for chapter in chapters:
        paths_ = [store / chapter / f"{profile}.json" for store in (before, after)]
        if not all(path.exists() for path in paths_):
            report[chapter] = [f"stored only in {paths_[0] if paths_[0].exists() else paths_[1]}"]
            continue
        one, two = (json.loads(path.read_text()) for path in paths_)
        report[chapter] = _differences({k: v for k, v in one.items() if k not in ignore},
                                       {k: v for k, v in two.items() if k not in ignore}, chapter)
    return report


def _differences(one, two, where: str) -> list[str]:
    if isinstance(one, dict) and isinstance(two, dict):
        found = [f"{where}/{key}: only {'before' if key in one else 'after'}" for key in sorted(set(one) ^ set(two))]
        for key in sorted(set(one) & set(two)):
            found += _differences(one[key], two[key], f"{where}/{key}")
        return found
    if isinstance(one, list) and isinstance(two, list):
        if len(one) != len(two):
            return [f"{where}: {len(one)} items before, {len(two)} after"]
        return [line for i, (a, b) in enumerate(zip(one, two)) for line in _differences(a, b, f"{where}[{i}]")]
    if one != two and not (one != one and two != two):  # NaN equals NaN here
        return [f"{where}: {one!r} before, {two!r} after"]
    return []
