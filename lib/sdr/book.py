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


# Fewer redraws while a chapter runs; the executed notebook keeps only each bar's final state anyway
# (``clean_outputs``), so bars stay live in a terminal and in Jupyter.
KERNEL_ENVIRONMENT = {"TQDM_MININTERVAL": "30"}


def run_chapter(chapter: str, profile: str = "smoke", overrides: Mapping | None = None,
                output_dir: Path | None = None, progress: bool = True, force: bool = False) -> Path:
    """Execute ``notebooks/<chapter>.ipynb`` with papermill at ``profile`` into ``book/chapters/``.

    The chapter is executed only when :func:`chapter_fingerprint` (its notebook, parameters, the library
    code, the book's data files and the real-data mirror) differs from the one stored in the executed
    notebook's metadata, or ``force``. The executed notebook is cleaned for reading (:func:`finish_notebook`)
    and the intro's reproduction-status table is regenerated (:func:`write_status_page`).
    """
    import nbformat
    import papermill

    notebook = NOTEBOOKS / f"{chapter}.ipynb"
    parameters = chapter_parameters(chapter, profile, overrides, notebook=notebook)
    output_dir = Path(output_dir or CHAPTERS_OUT)
    output_dir.mkdir(parents=True, exist_ok=True)
    output = output_dir / f"{chapter}.ipynb"
    fingerprint = chapter_fingerprint(chapter, profile, parameters, notebook)
    if not force and stored_fingerprint(output) == fingerprint:
        print(f"[sdr chapter] {chapter}: unchanged since its last execution (notebook, parameters, library, "
              f"data), not re-executed; --force re-executes it", file=sys.stderr, flush=True)
    else:
        os.environ.update(KERNEL_ENVIRONMENT)  # the kernel inherits it
        executing = output.with_name(f".{chapter}.executing.ipynb")  # a failed run keeps the previous page
        try:
            papermill.execute_notebook(str(notebook), str(executing), parameters=parameters, cwd=str(ROOT),
                                       kernel_name="python3", progress_bar=progress, log_output=False)
        except BaseException:
            if executing.exists():
                executing.replace(output.with_name(f"{chapter}.failed.ipynb"))
            raise
        write_executed(nbformat.read(executing, as_version=4), output, chapter, parameters,
                       fingerprint=fingerprint)
        executing.unlink()
    write_status_page(output_dir / STATUS_PAGE)
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
    parser.add_argument("--force", action="store_true",
                        help="execute even when nothing changed since the stored execution")
    parser.set_defaults(func=_chapter_command)

    setup = subparsers.add_parser("book-setup-cells",
                                  help="insert (or refresh) the Colab setup cell at the top of chapter notebooks")
    setup.add_argument("notebooks", nargs="*", type=Path,
                       help="notebooks to update (default: every notebooks/*.ipynb)")
    setup.set_defaults(func=_setup_cells_command)


def _chapter_command(args) -> int:
    if bool(args.all) == bool(args.name):
        raise ValueError("give a chapter NAME or --all")
    names = chapter_names() if args.all else [args.name]
    overrides = {key: _parse_value(value) for key, value in args.parameter}
    for name in names:
        print(f"[sdr chapter] {name} at profile {args.profile}", file=sys.stderr, flush=True)
        output = run_chapter(name, args.profile, overrides, args.output_dir, force=args.force)
        print(f"[sdr chapter] {output}", file=sys.stderr, flush=True)
    return 0


def _setup_cells_command(args) -> int:
    notebooks = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    for notebook in notebooks:
        changed = add_setup_cell(notebook)
        print(f"[sdr book-setup-cells] {notebook}: {'updated' if changed else 'already up to date'}")
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


def _labels(labels: list):
    """Row or column labels as ``to_json(orient="split")`` wrote them: a MultiIndex comes back as lists."""
    if labels and all(isinstance(label, list) for label in labels):
        return pd.MultiIndex.from_tuples([tuple(label) for label in labels])
    return labels


def _from_jsonable(value):
    if isinstance(value, dict) and "__table__" in value:
        split = value["__table__"]
        return pd.DataFrame(split["data"], index=_labels(split["index"]), columns=_labels(split["columns"]))
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


# ------------------------------------------------------------------------------------------ clean pages
PROFILE_BOX_CLASS = "sdr-profile-box"
"""CSS class of the "this page was built with" box (the HTML test looks for it)."""
PROFILE_BOX_TAG = "sdr-profile-box"
STATUS_PAGE = "status.md"
"""The reproduction-status table, generated beside the executed chapters; ``book/intro.md`` includes it."""


def _render_carriage_returns(text: str) -> str:
    """What a terminal shows for ``text``: on each line only what the last carriage return left.

    tqdm redraws a bar with ``\\r``; Jupyter and terminals overwrite the line, but a stored notebook keeps
    every redraw, which a static page prints one per line. A line whose last segment is blank was erased
    (``leave=False``) and is dropped.
    """
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            segments = [segment for segment in line.split("\r") if segment]
            line = segments[-1] if segments else ""
            if not line.strip():
                continue
        lines.append(line)
    return "\n".join(lines)


def clean_outputs(notebook) -> None:
    """Merge each cell's consecutive stream outputs of one name and keep progress bars' final state."""
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        merged = []
        for output in cell.get("outputs", []):
            if (output.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                    and merged[-1].get("name") == output.get("name")):
                merged[-1]["text"] += output.get("text", "")
            else:
                merged.append(output)
        for output in merged:
            if output.get("output_type") == "stream":
                output["text"] = _render_carriage_returns(output.get("text", ""))
        cell["outputs"] = [o for o in merged if o.get("output_type") != "stream" or o["text"].strip()]


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>$|#{}])")


def _markdown_text(text: str) -> str:
    """Plain text safe inside MyST markdown (``$`` would open math, ``*`` emphasis, ``|`` a table)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text))


def profile_box(chapter: str, profile: str, parameters: Mapping, sources: Sequence[str] | None) -> str:
    """The markdown of the "this page was built with" box that replaces the two parameter cells."""
    values = " · ".join(f"`{key} = {value!r}`" for key, value in parameters.items() if key != "profile")
    data = "; ".join(_markdown_text(s) for s in sources) if sources else \
        "named in the caption under each table and figure"
    # A colon fence: a backtick fence's info string may not hold backticks (CommonMark), and the title is
    # kept free of them too.
    return "\n".join([
        f":::{{admonition}} This page was built with the {_markdown_text(profile)} profile",
        f":class: {PROFILE_BOX_CLASS}",
        "",
        f"**Data:** {data}",
        "",
        f"**Parameters** (`profiles.yml`, profile `{profile}`): {values or 'the notebook defaults'}",
        "",
        f"**Rebuild it:** `sdr chapter {chapter} --profile {profile}` (see *How to reproduce*)",
        ":::",
    ])


def finish_notebook(notebook, chapter: str, parameters: Mapping, sources: Sequence[str] | None = None,
                    fingerprint: str | None = None):
    """Make an executed chapter read as prose, tables and figures (in place; also returned).

    * progress bars keep their final state (:func:`clean_outputs`);
    * the notebook's own ``parameters`` cell and papermill's ``injected-parameters`` cell are removed from
      the page (tag ``remove-cell``; they stay in the .ipynb that Colab opens) and one box names the
      profile, the data sources (those the chapter stored with :func:`save_results`) and the parameters;
    * ``metadata["sdr"]`` records chapter, profile, parameters and the fingerprint (see :func:`run_chapter`).
    """
    import nbformat

    clean_outputs(notebook)
    notebook.cells = [c for c in notebook.cells if PROFILE_BOX_TAG not in c.metadata.get("tags", [])]
    profile = str(parameters.get("profile", "?"))
    position = None
    for index, cell in enumerate(notebook.cells):
        tags = cell.metadata.get("tags", [])
        if {"parameters", "injected-parameters"} & set(tags):
            if "remove-cell" not in tags:
                cell.metadata["tags"] = [*tags, "remove-cell"]
            position = index + 1
    box = nbformat.v4.new_markdown_cell(profile_box(chapter, profile, parameters, sources))
    box.metadata["tags"] = [PROFILE_BOX_TAG]
    notebook.cells.insert(position if position is not None else min(1, len(notebook.cells)), box)
    notebook.metadata["sdr"] = {"chapter": chapter, "profile": profile, "parameters": _jsonable(dict(parameters)),
                                "fingerprint": fingerprint,
                                "executed": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return notebook


def write_executed(notebook, path: Path, chapter: str, parameters: Mapping, results: Path | None = None,
                   fingerprint: str | None = None) -> Path:
    """Clean an executed chapter (:func:`finish_notebook`), write it to ``path``, refresh the status page.

    ``results`` is the results store the chapter wrote to (default :func:`results_dir`); the box takes the
    chapter's data sources from it.
    """
    import nbformat

    path = Path(path)
    record = _stored_record(chapter, str(parameters.get("profile", "")), results)
    finish_notebook(notebook, chapter, parameters, record["sources"] if record else None, fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    write_status_page(path.parent / STATUS_PAGE, results)
    return path


def _stored_record(chapter: str, profile: str, results: Path | None = None) -> dict | None:
    path = Path(results or results_dir()) / chapter / f"{profile}.json"
    return json.loads(path.read_text()) if path.exists() else None


# ------------------------------------------------------------------------------------------ rebuild cache
READS_RESULTS = frozenset({"summary"})
"""Chapters whose input is the results store itself: they re-execute when another chapter's results change."""


def chapter_fingerprint(chapter: str, profile: str, parameters: Mapping, notebook: Path | None = None,
                        results: Path | None = None) -> str:
    """A hash of everything an executed chapter depends on; ``run_chapter`` skips a chapter whose is unchanged.

    It covers the notebook's cells (not their outputs), the merged parameters, every file of the ``sdr``
    library, the book's own data files (``data/``: paper tables, fixtures), the real-data root
    (``$SDR_DATA`` or the cache: every file's path, size and modification time, not its bytes) and, for
    :data:`READS_RESULTS` chapters, the other chapters' stored results at ``profile``.
    """
    import hashlib

    from sdr import datasets

    digest = hashlib.sha256()

    def feed(label: str, payload: bytes | str) -> None:
        payload = payload.encode() if isinstance(payload, str) else payload
        digest.update(f"{label}\0{len(payload)}\0".encode())
        digest.update(payload)

    notebook = Path(notebook or NOTEBOOKS / f"{chapter}.ipynb")
    cells = json.loads(notebook.read_text())["cells"]
    feed("notebook", json.dumps([[c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list)
                                  else c["source"], c.get("metadata", {}).get("tags", [])] for c in cells]))
    feed("parameters", json.dumps({"profile": profile, **_jsonable(dict(parameters))}, sort_keys=True, default=str))
    library = Path(__file__).resolve().parent
    for path in sorted(library.rglob("*.py")):
        feed(f"lib:{path.relative_to(library)}", path.read_bytes())
    for path in sorted((ROOT / "data").rglob("*")):
        if path.is_file():
            feed(f"data:{path.relative_to(ROOT)}", path.read_bytes())
    root = datasets.data_root()
    feed("data-root", str(root))
    if root is not None:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                info = path.stat()
                feed(f"mirror:{path.relative_to(root)}", f"{info.st_size}:{info.st_mtime_ns}")
    if chapter in READS_RESULTS:
        store = Path(results or results_dir())
        for path in sorted(store.glob(f"*/{profile}.json")):
            if path.parent.name != chapter:
                feed(f"results:{path.parent.name}", path.read_bytes())
    return digest.hexdigest()


def stored_fingerprint(executed: Path) -> str | None:
    """The fingerprint recorded in an executed chapter (None when it is missing or has none)."""
    try:
        return json.loads(Path(executed).read_text())["metadata"]["sdr"]["fingerprint"]
    except (FileNotFoundError, KeyError, TypeError, ValueError):
        return None


# ------------------------------------------------------------------------------------------ resumable runs
def run_dir(chapter: str, profile: str, parameters: Mapping) -> Path:
    """A stable folder for a chapter's training runs: ``<results store>/runs/<chapter>/<profile>/<key>``.

    ``key`` hashes ``parameters``: pass exactly the parameters that change training (model, data sizes,
    seed, epochs, batch, learning rate …), not ``resume`` or presentation switches, so a rerun with the same
    training finds its checkpoints. The parameters are written to ``parameters.json`` inside, for people.

    The ``resume`` convention of chapters: a parameter ``resume = False``; each training call is
    ``train(..., output_dir=book.run_dir(chapter, profile, training) / name, resume=resume)`` with
    ``checkpoint_every`` > 0 at profiles long enough to be interrupted. After a disconnect, rerun the chapter
    with ``-p resume true``: every finished run loads its final checkpoint, the interrupted one continues
    from its last checkpoint, and the stored results equal an uninterrupted run's.
    """
    import hashlib

    canonical = json.dumps(_jsonable(dict(parameters)), sort_keys=True, default=str)
    key = hashlib.sha256(canonical.encode()).hexdigest()[:12]
    folder = results_dir() / "runs" / chapter / profile / key
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "parameters.json").write_text(json.dumps(json.loads(canonical), indent=1, sort_keys=True))
    return folder


# ------------------------------------------------------------------------------------------ leaderboard
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
                    training: str, paper_model: str | None = None) -> dict:
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
    return {"method": method, "benchmark": benchmark, "data": data, "base_model": base_model,
            "training": training, "paper_model": paper_model, "metrics": values}


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
    root = Path(results or results_dir())
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
                                      paper_model=row.get("paper_model"))
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


# ------------------------------------------------------------------------------------------ status map
def _paper_value(benchmark: str, paper_model: str | None, metric: str) -> float | None:
    spec = BENCHMARKS[benchmark]
    column = spec["paper_columns"].get(metric)
    if not paper_model or not spec["paper_table"] or column is None:
        return None
    if not (PAPER_TABLES / f"{spec['paper_table']}.csv").exists():
        return None
    table = read_paper_table(spec["paper_table"])
    match = table[table["model"] == paper_model]
    if match.empty or column not in match or pd.isna(match[column].iloc[0]):
        return None
    return float(match[column].iloc[0])


def reproduction_status(results: Path | None = None) -> pd.DataFrame:
    """One row per method, one column per benchmark: our headline number, the paper's, and which run.

    A cell prefers a real-data run here (profile ``real``, then any other non-``paper`` profile), then a
    replica run ("replica only": the real benchmark is evaluated at the ``paper`` profile, not run here),
    then a stored ``paper``-profile run. The paper's number comes from ``data/paper_tables`` through the
    row's ``paper_model``.
    """
    rows = leaderboard_rows(profile=None, data=None, results=results)
    if rows.empty:
        return pd.DataFrame()

    def rank(row) -> tuple:
        if row["profile"] == "paper":
            return (2, 0)
        return (0 if row["data"] == "real" else 1, 0 if row["profile"] == "real" else 1)

    cells: dict[str, dict[str, str]] = {}
    for (method, benchmark), group in rows.groupby(["method", "benchmark"], sort=False):
        spec = BENCHMARKS[benchmark]
        best = min((row for _, row in group.iterrows()), key=rank)
        headline, decimals = spec["headline"], spec["decimals"]
        text = f"{best[headline]:.{decimals}f}"
        paper = _paper_value(benchmark, best["paper_model"], headline)
        text += f" (paper {paper:.{decimals}f})" if paper is not None else " (paper: —)"
        where = {0: f"real data, `{best['profile']}`", 1: f"replica only, `{best['profile']}`",
                 2: "`paper` profile only"}[rank(best)[0]]
        cells.setdefault(method, {})[f"{spec['title']} ({headline})"] = f"{text} · {where}"
    table = pd.DataFrame(cells).T
    return table.fillna("not run")


def status_markdown(results: Path | None = None) -> str:
    """The generated part of the intro page: :func:`reproduction_status` as a MyST table with a legend."""
    table = reproduction_status(results)
    if table.empty:
        return ("*No chapter has stored leaderboard rows yet (`extra[\"leaderboard\"]` of its results, see "
                "`sdr.book.leaderboard_row`): this table is generated from them when `make book` runs.*\n")
    header = "| method | " + " | ".join(_markdown_text(c) for c in table.columns) + " |"
    lines = [header, "|" + "---|" * (len(table.columns) + 1)]
    for method, row in table.iterrows():
        cells = [str(v).replace("|", "\\|") for v in row]
        lines.append(f"| {_markdown_text(method)} | " + " | ".join(cells) + " |")
    legend = ("Each cell: our headline number, the paper's in parentheses (from `data/paper_tables`), and the run "
              "that produced ours: *real data* (the real benchmark, at the profile named), *replica only* (the "
              "synthetic replica; the real benchmark is run at the `paper` profile, not here), or *`paper` profile "
              "only*. Units: " + "; ".join(f"{s['title']}: {_markdown_text(s['units'])}" for s in BENCHMARKS.values())
              + ". Generated from the results store by `sdr.book.status_markdown`.")
    return "\n".join(lines) + "\n\n" + legend + "\n"


def write_status_page(path: Path, results: Path | None = None) -> Path:
    """Write :func:`status_markdown` to ``path`` (only when it changed, so an unchanged book rebuilds fast)."""
    path = Path(path)
    text = status_markdown(results)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


# ------------------------------------------------------------------------------------------ tables, figures
def _decimals(value: float) -> int:
    text = repr(round(float(value), 6))
    return 0 if "." not in text or "e" in text else len(text.split(".")[1].rstrip("0") or "0")


def is_paper_vs_ours(table: pd.DataFrame) -> bool:
    """A paper-vs-ours metric table: a ``reported by`` column, paper rows and ours, and numeric metrics."""
    if "reported by" not in table.columns or table.select_dtypes("number").dropna(how="all", axis=1).empty:
        return False
    ours = table["reported by"].astype(str).str.startswith("this book")
    return bool(ours.any() and (~ours).any())


def column_decimals(table: pd.DataFrame) -> dict[str, int]:
    """Decimals per numeric column: the papers' (most common among paper rows) in a paper-vs-ours table,
    else 3 for fractions and 2 for other floats; integers keep none."""
    decimals = {}
    paper_rows = ~table["reported by"].astype(str).str.startswith("this book") if is_paper_vs_ours(table) else None
    for column in table.select_dtypes("number").columns:
        values = table[column].dropna()
        if values.empty:
            continue
        if paper_rows is not None and values[paper_rows.reindex(values.index, fill_value=False)].size:
            printed = values[paper_rows.reindex(values.index, fill_value=False)].map(_decimals)
            decimals[column] = int(printed.mode().max())
        elif pd.api.types.is_integer_dtype(values) or (values == values.round()).all() and values.abs().max() > 1:
            decimals[column] = 0
        else:
            decimals[column] = 3 if values.abs().max() <= 1 else 2
    return decimals


def styled(table: pd.DataFrame, caption: str | None = None):
    """``table`` for display: numbers to the papers' precision (:func:`column_decimals`), NaN as "—"."""
    formats = {column: f"{{:,.{d}f}}" for column, d in column_decimals(table).items()}
    style = table.style.format(formats, na_rep="—")
    if isinstance(table.index, pd.RangeIndex) or list(table.index) == list(range(len(table))):
        style = style.hide(axis="index")  # a row number is not information (tables stored as JSON lose RangeIndex)
    if caption:
        style = style.set_caption(caption).set_table_styles(
            [{"selector": "caption", "props": [("caption-side", "bottom"), ("font-size", "85%")]}])
    return style


def paper_vs_ours_heatmap(table: pd.DataFrame, title: str, caption_text: str):
    """A heatmap of a paper-vs-ours table (papers' rows above ours), annotated to the papers' precision.

    Returns the figure, or None when ``table`` is not a paper-vs-ours metric table (:func:`is_paper_vs_ours`).
    """
    if not is_paper_vs_ours(table):
        return None
    import matplotlib.pyplot as plt
    import seaborn as sns

    numeric = table.select_dtypes("number").dropna(how="all", axis=1)
    labels = table["reported by"].astype(str)
    if "model" in table:
        labels = labels + " · " + table["model"].astype(str)
    numeric = numeric.set_axis(labels, axis=0)
    decimals = max(column_decimals(table).get(c, 1) for c in numeric.columns)
    figure, axes = plt.subplots(figsize=(min(1.0 * numeric.shape[1] + 4, 16), 0.45 * len(numeric) + 1.5))
    sns.heatmap(numeric, annot=True, fmt=f".{decimals}f", cmap="viridis", cbar=False, ax=axes)
    axes.set(title=title, ylabel="")
    figure.text(0.01, -0.02, caption_text, fontsize=8)
    return figure


# ------------------------------------------------------------------------------------------ Colab setup cell
SETUP_TAG = "sdr-setup"
CONFIG_FILE = "_config.yml"


def repository() -> dict:
    """The book's repository (``_config.yml`` ``repository``: url, branch), read by the launch buttons and the
    setup cell alike, so a fork changes it in one place."""
    path = ROOT / CONFIG_FILE
    config = yaml.safe_load(path.read_text())
    spec = (config or {}).get("repository") or {}
    if not spec.get("url"):
        raise ValueError(f"{path}: repository.url is missing (the launch buttons and the setup cell need it)")
    return {"url": str(spec["url"]).rstrip("/"), "branch": str(spec.get("branch") or "main")}


def setup_cell_source() -> str:
    """The first code cell of every chapter: on Colab, install ``sdr`` when missing; say which device."""
    repo = repository()
    return f'''# Setup (Colab): install this book's package when it is missing; elsewhere this only names the device.
# Colab's own CUDA torch is kept: the package's dependencies are ranges (exact pins: requirements.lock).
import importlib.util, os, subprocess, sys
BOOK_REPOSITORY, BOOK_BRANCH = "{repo['url']}", "{repo['branch']}"
if ("google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ) and importlib.util.find_spec("sdr") is None:
    checkout = "/content/" + BOOK_REPOSITORY.rsplit("/", 1)[-1]
    if not os.path.isdir(checkout):
        subprocess.run(["git", "clone", "--depth", "1", "--branch", BOOK_BRANCH, BOOK_REPOSITORY, checkout], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "-e", checkout], check=True)
    sys.path.insert(0, os.path.join(checkout, "lib"))
    os.chdir(checkout)
import torch
print("device:", f"GPU ({{torch.cuda.get_device_name(0)}})" if torch.cuda.is_available() else "CPU (no GPU found)")
'''


def add_setup_cell(notebook_path: Path) -> bool:
    """Insert the setup cell (:func:`setup_cell_source`) before a notebook's first code cell, or refresh it.

    The cell is tagged ``sdr-setup`` (found again on the next call) and ``remove-cell`` (the HTML page shows
    the profile box instead; the notebook that Colab opens keeps it). Returns whether the file changed.
    """
    import nbformat

    notebook_path = Path(notebook_path)
    notebook = nbformat.read(notebook_path, as_version=4)
    source = setup_cell_source()
    existing = [c for c in notebook.cells if SETUP_TAG in c.metadata.get("tags", [])]
    if existing:
        if existing[0].source == source:
            return False
        existing[0].source = source
    else:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = [SETUP_TAG, "remove-cell"]
        first_code = next((i for i, c in enumerate(notebook.cells) if c.cell_type == "code"), len(notebook.cells))
        notebook.cells.insert(first_code, cell)
    nbformat.write(notebook, notebook_path)
    return True
