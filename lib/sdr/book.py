"""The book's machinery: profiles, papermill runs of chapters, the results store, paper-vs-ours tables.

A chapter is a notebook in ``notebooks/`` with one cell tagged ``parameters``. ``run_chapter`` merges
the parameters of ``profiles.yml`` (see the comment at its top), refuses keys the notebook does not
define, and executes the notebook with papermill into ``book/chapters/``. Chapters store what they
computed with :func:`save_results` (``results/<chapter>/<profile>.json``); the summary page reads them.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(os.environ.get("SDR_BOOK_ROOT", Path(__file__).resolve().parents[2]))
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS_OUT = ROOT / "book" / "chapters"
PAPER_TABLES = ROOT / "data" / "paper_tables"
PROFILES_FILE = ROOT / "profiles.yml"


class _YamlLoader(yaml.SafeLoader):
    """PyYAML reads YAML 1.1, where ``2e-5`` (no dot) is a *string*; learning rates are written that way,
    so this loader also resolves the YAML 1.2 float form ``[-+]?digits[.digits]e[-+]?digits``."""


_YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def results_dir() -> Path:
    return Path(os.environ.get("SDR_RESULTS", ROOT / "results"))


# ------------------------------------------------------------------------------------------ profiles
def load_profiles(path: Path | None = None) -> dict:
    path = Path(path or PROFILES_FILE)
    try:
        profiles = yaml.load(path.read_text(), Loader=_YamlLoader)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: profiles file not found") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML ({error})") from None
    if not isinstance(profiles, dict) or "profiles" not in profiles or "chapters" not in profiles:
        raise ValueError(f"{path}: expected top-level keys 'chapters' and 'profiles'")
    return profiles


def chapter_names(path: Path | None = None) -> list[str]:
    return list(load_profiles(path)["chapters"])


def notebook_parameters(notebook: Path) -> dict:
    """The names and default values of a notebook's ``parameters`` cell."""
    import papermill

    if not notebook.exists():
        raise FileNotFoundError(f"{notebook}: chapter notebook not found")
    inferred = papermill.inspect_notebook(str(notebook))
    if not inferred:
        raise ValueError(f"{notebook}: no cell tagged 'parameters' (every chapter needs one)")
    return {name: spec["default"] for name, spec in inferred.items()}


def chapter_parameters(chapter: str, profile: str, overrides: Mapping | None = None,
                       profiles_path: Path | None = None, notebook: Path | None = None) -> dict:
    """Parameters for ``chapter`` at ``profile``; unknown keys and missing required values are errors."""
    source = Path(profiles_path or PROFILES_FILE)  # the file actually read, named in the errors
    profiles = load_profiles(source)
    if profile not in profiles["profiles"]:
        raise ValueError(f"unknown profile {profile!r}; {source} defines "
                         f"{sorted(profiles['profiles'])}")
    if chapter not in profiles["chapters"]:
        raise ValueError(f"unknown chapter {chapter!r}; {source} lists {profiles['chapters']}")
    spec = profiles["profiles"][profile]
    merged = dict(spec.get("parameters") or {})
    merged.update((spec.get("chapters") or {}).get(chapter) or {})
    merged.update(overrides or {})
    notebook = notebook or NOTEBOOKS / f"{chapter}.ipynb"
    defaults = notebook_parameters(notebook)
    unknown = sorted(set(merged) - set(defaults))
    if unknown:
        raise ValueError(f"{notebook.name}: parameters {unknown} (from profile {profile!r} or -p) are not "
                         f"defined in its parameters cell; it defines {sorted(defaults)}")
    missing = sorted(k for k, v in defaults.items() if v == "None" and k not in merged)
    if missing:
        raise ValueError(f"{notebook.name}: parameters {missing} have no value: give them in profile "
                         f"{profile!r} of {source} or with -p NAME VALUE")
    return merged


# Executed chapters keep a progress bar's final state, not hundreds of intermediate redraws.
KERNEL_ENVIRONMENT = {"TQDM_MININTERVAL": "30"}


def run_chapter(chapter: str, profile: str = "smoke", overrides: Mapping | None = None,
                output_dir: Path | None = None, progress: bool = True) -> Path:
    """Execute ``notebooks/<chapter>.ipynb`` with papermill at ``profile`` into ``book/chapters/``."""
    import papermill

    notebook = NOTEBOOKS / f"{chapter}.ipynb"
    parameters = chapter_parameters(chapter, profile, overrides, notebook=notebook)
    output_dir = Path(output_dir or CHAPTERS_OUT)
    output_dir.mkdir(parents=True, exist_ok=True)
    output = output_dir / f"{chapter}.ipynb"
    os.environ.update(KERNEL_ENVIRONMENT)  # the kernel inherits it
    papermill.execute_notebook(str(notebook), str(output), parameters=parameters, cwd=str(ROOT),
                               kernel_name="python3", progress_bar=progress, log_output=False)
    return output


def _parse_value(text: str):
    """``-p key value`` values are YAML scalars: 3 → int, 0.5 and 2e-5 → float, true → bool, else str."""
    return yaml.load(text, Loader=_YamlLoader)


def register(subparsers) -> None:
    parser = subparsers.add_parser("chapter", help="execute a chapter notebook with papermill at a profile")
    parser.add_argument("name", nargs="?", help="chapter name (notebooks/<name>.ipynb)")
    parser.add_argument("--all", action="store_true", help="every chapter of profiles.yml, in book order")
    parser.add_argument("--profile", default="smoke", help="smoke, real or paper (profiles.yml)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                        help="override one parameter (repeatable)")
    parser.add_argument("--output-dir", type=Path, default=None, help="default: book/chapters/")
    parser.set_defaults(func=_chapter_command)


def _chapter_command(args) -> int:
    if bool(args.all) == bool(args.name):
        raise ValueError("give a chapter NAME or --all")
    names = chapter_names() if args.all else [args.name]
    overrides = {key: _parse_value(value) for key, value in args.parameter}
    for name in names:
        print(f"[sdr chapter] {name} at profile {args.profile}", file=sys.stderr, flush=True)
        output = run_chapter(name, args.profile, overrides, args.output_dir)
        print(f"[sdr chapter] wrote {output}", file=sys.stderr, flush=True)
    return 0


# ------------------------------------------------------------------------------------------ data sources
def shared_data_dir() -> Path | None:
    """Where real data is: ``$SDR_DATA`` when set and present, else the download cache if it has data."""
    from sdr import datasets

    return datasets.data_root()


def real_data_enabled(setting) -> bool:
    """A chapter's ``use_real_data`` parameter as a bool.

    ``True``/``False`` are taken as they are; ``"auto"`` (the ``smoke`` profile's value) means "use the real
    data when a data root exists" (``$SDR_DATA`` or the download cache), so CI, which has the mirror, runs the
    chapters' real-data cells at smoke size while a fresh clone without data runs on the replicas.
    """
    if isinstance(setting, bool):
        return setting
    if isinstance(setting, str) and setting.strip().lower() in ("auto", "true", "false"):
        value = setting.strip().lower()
        return shared_data_dir() is not None if value == "auto" else value == "true"
    raise ValueError(f"use_real_data must be true, false or 'auto', got {setting!r}")


def real_data_file(relative: str, use_real_data: bool = True) -> Path | None:
    """``<data root>/relative`` when real data is on and the file is there, else None."""
    root = shared_data_dir() if use_real_data else None
    path = root / relative if root is not None else None
    return path if path is not None and path.exists() else None


def caption(profile: str, sources: Sequence[str]) -> str:
    """The line printed under every table and plot: which profile and which data produced it."""
    return f"Profile: {profile} · Data: {'; '.join(sources) if sources else 'none'}"


# ------------------------------------------------------------------------------------------ results store
def _jsonable(value):
    if isinstance(value, pd.DataFrame):
        return {"__table__": json.loads(value.to_json(orient="split", index=True))}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def _from_jsonable(value):
    if isinstance(value, dict) and "__table__" in value:
        split = value["__table__"]
        return pd.DataFrame(split["data"], index=split["index"], columns=split["columns"])
    if isinstance(value, dict):
        return {k: _from_jsonable(v) for k, v in value.items()}
    return value


def save_results(chapter: str, profile: str, tables: Mapping[str, pd.DataFrame], sources: Sequence[str],
                 extra: Mapping | None = None) -> Path:
    """Store a chapter's tables (and any extra JSON-able values) for the summary page."""
    path = results_dir() / chapter / f"{profile}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "chapter": chapter,
        "profile": profile,
        "sources": list(sources),
        "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "tables": _jsonable(dict(tables)),
        "extra": _jsonable(dict(extra or {})),
    }
    path.write_text(json.dumps(record, indent=1))
    return path


def load_results(chapter: str | None = None, profile: str | None = None) -> list[dict]:
    """Every stored result (optionally of one chapter/profile), tables back as DataFrames."""
    root = results_dir()
    records = []
    for path in sorted(root.glob(f"{chapter or '*'}/{profile or '*'}.json")):
        record = json.loads(path.read_text())
        record["tables"] = _from_jsonable(record["tables"])
        record["extra"] = _from_jsonable(record.get("extra", {}))
        records.append(record)
    return records


# ------------------------------------------------------------------------------------------ paper tables
def read_paper_table(name: str) -> pd.DataFrame:
    """Numbers copied from a paper: ``data/paper_tables/<name>.csv`` (columns source, table, model, …)."""
    path = PAPER_TABLES / f"{name}.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such paper table; have {sorted(p.stem for p in PAPER_TABLES.glob('*.csv'))}")
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


def environment_line() -> str:
    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    return f"python {platform.python_version()}, torch {torch.__version__}, device {device}"
