"""Papermill runs of chapters: ``sdr chapter``, the rebuild fingerprint, executed pages, resumable run folders.

A chapter is a notebook in ``notebooks/`` with one cell tagged ``parameters``. :func:`run_chapter` takes its
parameters at a profile (:mod:`sdr.book.profiles`), executes it with papermill into ``book/chapters/`` when
:func:`chapter_fingerprint` changed, cleans the executed page (:mod:`sdr.book.render`) and regenerates the
reproduction-status page (:mod:`sdr.book.status`).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from sdr.book import paths
from sdr.book.profiles import chapter_names, chapter_parameters, parse_value
from sdr.book.render import finish_notebook
from sdr.book.results import jsonable, stored_record
from sdr.book.setup_cell import setup_cells_command
from sdr.book.status import STATUS_PAGE, write_status_page
from sdr.outputs import output_file, output_folder


# Fewer redraws while a chapter runs; the executed notebook keeps only each bar's final state anyway
# (``clean_outputs``), so bars stay live in a terminal and in Jupyter.
KERNEL_ENVIRONMENT = {"TQDM_MININTERVAL": "30"}


def run_chapter(chapter: str, profile: str = "smoke", overrides: Mapping | None = None,
                output_dir: Path | None = None, progress: bool = True, force: bool = False) -> Path:
    """Execute ``notebooks/<chapter>.ipynb`` with papermill at ``profile`` into ``book/chapters/``.

    The chapter is executed only when :func:`chapter_fingerprint` (its notebook, parameters, the library
    code, the book's data files and the real-data mirror) differs from the one stored in the executed
    notebook's metadata, or ``force``. The executed notebook is cleaned for reading
    (:func:`~sdr.book.render.finish_notebook`) and the intro's reproduction-status table is regenerated
    (:func:`~sdr.book.status.write_status_page`).
    """
    import nbformat
    import papermill

    notebook = paths.NOTEBOOKS / f"{chapter}.ipynb"
    parameters = chapter_parameters(chapter, profile, overrides, notebook=notebook)
    output_dir = Path(output_dir or paths.CHAPTERS_OUT)
    output = output_dir / f"{chapter}.ipynb"
    chapter_outputs(chapter, notebook, output_dir).check()  # before papermill runs: never over notebooks/
    output_dir.mkdir(parents=True, exist_ok=True)
    fingerprint = chapter_fingerprint(chapter, profile, parameters, notebook)
    if not force and stored_fingerprint(output) == fingerprint:
        print(f"[sdr chapter] {chapter}: unchanged since its last execution (notebook, parameters, library, "
              f"data), not re-executed; --force re-executes it", file=sys.stderr, flush=True)
    else:
        os.environ.update(KERNEL_ENVIRONMENT)  # the kernel inherits it
        os.environ.pop("SDR_INTERACTIVE_PROFILE", None)  # papermill's parameters, not an interactive profile
        # a failed run keeps the previous page; a fresh name of its own (no link planted there is followed)
        handle, executing = tempfile.mkstemp(dir=output_dir, prefix=f".{chapter}.", suffix=".executing.ipynb")
        os.close(handle)
        executing = Path(executing)
        try:
            papermill.execute_notebook(str(notebook), str(executing), parameters=parameters, cwd=str(paths.ROOT),
                                       kernel_name="python3", progress_bar=progress, log_output=False)
        except BaseException:
            if executing.exists() and executing.stat().st_size:
                executing.replace(output.with_name(f"{chapter}.failed.ipynb"))
            executing.unlink(missing_ok=True)
            raise
        write_executed(nbformat.read(executing, as_version=4), output, chapter, parameters,
                       fingerprint=fingerprint)
        executing.unlink()
    write_status_page(output_dir / STATUS_PAGE)
    return output


def chapter_outputs(chapter: str, notebook: Path, output_dir: Path):
    """What ``sdr chapter`` writes, for the output layer (:class:`sdr.outputs.Outputs`): the executed page, the
    failed page and the status page, inside ``--output-dir``, which may not be ``notebooks/`` (nor hold or lie in
    it, nor hold any tracked source file); the pages are regenerated on every execution (``maintained``)."""
    from sdr.outputs import Outputs, safe_name

    safe_name(chapter, "chapter")
    files = {"--output-dir page": output_dir / f"{chapter}.ipynb",
             "--output-dir failed page": output_dir / f"{chapter}.failed.ipynb",
             "--output-dir status page": output_dir / STATUS_PAGE}
    return Outputs(inputs={"notebook": notebook, "notebooks/": paths.NOTEBOOKS}, outputs=files,
                   stores={"--output-dir": output_dir}, within={label: output_dir for label in files},
                   maintained=files)


def register(subparsers) -> None:
    parser = subparsers.add_parser("chapter", help="execute a chapter notebook with papermill at a profile")
    parser.add_argument("name", nargs="?", help="chapter name (notebooks/<name>.ipynb)")
    parser.add_argument("--all", action="store_true", help="every chapter of profiles.yml, in book order")
    parser.add_argument("--profile", default="smoke", help="smoke, real or paper (profiles.yml)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                        help="override one parameter (repeatable)")
    parser.add_argument("--output-dir", type=output_folder, default=None,
                        help="default: book/chapters/ (never notebooks/ nor a folder of source files)")
    parser.add_argument("--force", action="store_true",
                        help="execute even when nothing changed since the stored execution")
    parser.set_defaults(func=_chapter_command)

    setup = subparsers.add_parser("book-setup-cells",
                                  help="insert (or refresh) the Colab setup cell at the top of chapter notebooks")
    setup.add_argument("notebooks", nargs="*", type=output_file,
                       help="notebooks to update (default: every notebooks/*.ipynb)")
    setup.set_defaults(func=setup_cells_command)

    from sdr.book import publish

    publish.register(subparsers)


def _chapter_command(args) -> int:
    if bool(args.all) == bool(args.name):
        raise ValueError("give a chapter NAME or --all")
    names = chapter_names() if args.all else [args.name]
    from sdr import parameters as checks

    overrides = checks.parse_overrides(args.parameter)
    for name in names:
        print(f"[sdr chapter] {name} at profile {args.profile}", file=sys.stderr, flush=True)
        try:
            output = run_chapter(name, args.profile, overrides, args.output_dir, force=args.force)
        except Exception as error:
            if getattr(error, "ename", None) in DATA_STOPS:
                # the chapter stopped on purpose before training: its message is the whole story, no traceback
                print(f"[sdr chapter] {name} stopped: {error.ename}:\n{error.evalue}", file=sys.stderr, flush=True)
                return 3
            raise
        print(f"[sdr chapter] {output}", file=sys.stderr, flush=True)
    return 0


DATA_STOPS = ("PaperDataMissing", "ReplicaForbidden")
"""Exceptions a chapter raises on purpose (sdr.datasets): ``sdr chapter`` prints their message alone, exit status 3."""


def write_executed(notebook, path: Path, chapter: str, parameters: Mapping, results: Path | None = None,
                   fingerprint: str | None = None) -> Path:
    """Clean an executed chapter (:func:`~sdr.book.render.finish_notebook`), write it to ``path``, refresh the
    status page.

    ``results`` is the results store the chapter wrote to (default :func:`~sdr.book.paths.results_dir`); the box
    takes the chapter's data sources from it.
    """
    import nbformat

    from sdr.outputs import write_text

    path = Path(path)
    record = stored_record(chapter, str(parameters.get("profile", "")), results)
    finish_notebook(notebook, chapter, parameters, record["sources"] if record else None, fingerprint)
    text = nbformat.writes(notebook)
    write_text(path, text if text.endswith("\n") else text + "\n", "executed page")  # atomic; never over a source
    write_status_page(path.parent / STATUS_PAGE, results)
    return path


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

    notebook = Path(notebook or paths.NOTEBOOKS / f"{chapter}.ipynb")
    cells = json.loads(notebook.read_text())["cells"]
    feed("notebook", json.dumps([[c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list)
                                  else c["source"], c.get("metadata", {}).get("tags", [])] for c in cells]))
    feed("parameters", json.dumps({"profile": profile, **jsonable(dict(parameters))}, sort_keys=True, default=str))
    library = paths.LIBRARY
    for path in sorted(library.rglob("*.py")):
        feed(f"lib:{path.relative_to(library)}", path.read_bytes())
    for path in sorted((paths.ROOT / "data").rglob("*")):
        if path.is_file():
            feed(f"data:{path.relative_to(paths.ROOT)}", path.read_bytes())
    root = datasets.data_root()
    feed("data-root", str(root))
    if root is not None:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                info = path.stat()
                feed(f"mirror:{path.relative_to(root)}", f"{info.st_size}:{info.st_mtime_ns}")
    if chapter in READS_RESULTS:
        store = Path(results or paths.results_dir())
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

    canonical = json.dumps(jsonable(dict(parameters)), sort_keys=True, default=str)
    from sdr.outputs import safe_name, write_text

    key = hashlib.sha256(canonical.encode()).hexdigest()[:12]
    store = paths.results_dir()
    folder = store / "runs" / safe_name(chapter, "chapter") / safe_name(profile, "profile") / key
    write_text(folder / "parameters.json", json.dumps(json.loads(canonical), indent=1, sort_keys=True),
               "run folder parameters.json", within=store)
    return folder
