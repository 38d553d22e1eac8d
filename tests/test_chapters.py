"""Every chapter executed at the ``smoke`` profile with pytest-notebook, then the book built with ``-W``.

The chapters hold ``assert`` statements on what they compute, so a chapter whose numbers are wrong fails
here, not only one that crashes. Executed chapters and their results go to a temporary copy of the book,
so ``make test`` never overwrites what ``make book`` produced.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import papermill
import pytest
from pytest_notebook.nb_regression import NBRegressionFixture

from sdr import book

CHAPTERS = book.chapter_names()
# Outputs differ from run to run (timings, progress bars); the assertions inside the chapters are the test.
IGNORE_OUTPUTS = ("/cells/*/outputs", "/cells/*/execution_count", "/cells/*/metadata", "/metadata")


@pytest.fixture(scope="module")
def book_copy(tmp_path_factory) -> Path:
    """A scratch copy of the book's sources: configuration, prose pages, and a results store."""
    root = tmp_path_factory.mktemp("book")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(book.ROOT / name, root / name)
    (root / "book" / "chapters").mkdir(parents=True)
    for page in (book.ROOT / "book").glob("*.md"):
        shutil.copy(page, root / "book" / page.name)
    (root / "results").mkdir()
    return root


@pytest.mark.notebook
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_at_smoke(chapter: str, book_copy: Path, tmp_path: Path) -> None:
    parameters = book.chapter_parameters(chapter, "smoke")
    prepared = tmp_path / f"{chapter}.ipynb"
    papermill.execute_notebook(str(book.NOTEBOOKS / f"{chapter}.ipynb"), str(prepared),
                               parameters=parameters, prepare_only=True, kernel_name="python3")
    environment = {**book.KERNEL_ENVIRONMENT, "SDR_RESULTS": str(book_copy / "results"), "PYTHONHASHSEED": "0"}
    if os.environ.get("SDR_DATA"):
        environment["SDR_DATA"] = os.environ["SDR_DATA"]
    regression = NBRegressionFixture(exec_timeout=900, exec_cwd=str(book.ROOT), exec_env=environment,
                                     diff_ignore=IGNORE_OUTPUTS, diff_use_color=False)
    result = regression.check(str(prepared), raise_errors=True)
    executed = result.nb_final
    assert any(output.get("output_type") in ("display_data", "execute_result")
               and "image/png" in output.get("data", {})
               for cell in executed.cells if cell.cell_type == "code" for output in cell.get("outputs", [])), \
        f"{chapter}: every chapter shows at least one plot"
    # cleaned as `sdr chapter` cleans it (final progress bars, one profile box), status page refreshed
    book.write_executed(executed, book_copy / "book" / "chapters" / f"{chapter}.ipynb", chapter,
                        parameters, results=book_copy / "results")


@pytest.mark.book
def test_book_builds_without_warnings(book_copy: Path) -> None:
    missing = [c for c in CHAPTERS if not (book_copy / "book" / "chapters" / f"{c}.ipynb").exists()]
    assert not missing, f"chapters that did not execute: {missing}"
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    completed = subprocess.run([str(jupyter_book), "build", str(book_copy), "-W", "-n", "--keep-going"],
                               capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-4000:]
    html = book_copy / "_build" / "html"
    for chapter in CHAPTERS:
        page = (html / "book" / "chapters" / f"{chapter}.html").read_text()
        assert "Profile: smoke" in page, f"{chapter}: tables must state their profile"


@pytest.mark.book
def test_launch_buttons_open_notebooks_that_exist(book_copy: Path) -> None:
    """Every chapter page's Colab and Binder buttons open a file the launch branch holds (issue 25): this commit's
    tracked files plus the executed chapters the publish workflow adds (`sdr book-publish manifest`)."""
    from sdr.book import publish

    html = book_copy / "_build" / "html"
    urls = publish.launch_urls(html)
    for chapter in CHAPTERS:
        assert len(urls.get(f"book/chapters/{chapter}.html", [])) == 2, f"{chapter}: a Colab and a Binder button"
    assert publish.check_launch_urls(html, publish.launch_branch_files()) == []


@pytest.mark.notebook
def test_replica_metrics_separate_untrained_from_trained(book_copy: Path, monkeypatch) -> None:
    """Issue 15: no SciDocs-replica metric may sit at one value (its ceiling, its floor, or anywhere) for the
    untrained and every trained encoder alike; such a column carries no signal."""
    monkeypatch.setenv("SDR_RESULTS", str(book_copy / "results"))
    # SPECTER and SciNCL train for real steps at smoke. SciAspect's smoke trains each model for 2 steps, so its
    # models barely move and their classification scores tie: a property of that budget, not of the replica.
    tables = {(record["chapter"], name): table for record in book.load_results(profile="smoke")
              for name, table in record["tables"].items()
              if name == "SciDocs (ours)" and record["chapter"] in ("specter", "scincl")}
    assert {chapter for chapter, _ in tables} == {"specter", "scincl"}, f"SciDocs tables found: {sorted(tables)}"
    for (chapter, name), table in tables.items():
        assert len(table) >= 2 and any("untrained" in str(system) for system in table.index), (chapter, table.index)
        for column in table.columns:
            values = table[column].dropna()
            if len(values) == len(table):
                assert values.nunique() > 1, f"{chapter}: {column} is {values.iloc[0]} for every system\n{table}"


# The page checks of issue 15, on the pages the previous test built.
PROGRESS_LINE = re.compile(r"\d+%\|")
MAX_PROGRESS_LINES = 10  # final states only: one line per finished bar (a redraw per line was ~50 per model)
PROBLEM_TEXT = re.compile(r"Traceback \(most recent call last\)|\b[A-Z]\w*(Warning|Error):|\bwarnings\.warn\b")


class _VisibleText(HTMLParser):
    """A page's text as a reader sees it, without code inputs (hidden or not), scripts and styles."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[bool] = []  # per open element: inside something skipped
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        skipped = bool(self.stack and self.stack[-1]) or tag in ("script", "style") or "cell_input" in classes
        self.stack.append(skipped)

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if not (self.stack and self.stack[-1]):
            self.parts.append(data)


def _page_text(html: str) -> str:
    parser = _VisibleText()
    parser.feed(html)
    return "".join(parser.parts)


@pytest.mark.book
def test_built_pages_read_cleanly(book_copy: Path) -> None:
    """Every chapter page: one profile box, a table and a figure; no page: progress-bar spam, tracebacks,
    warnings. The intro shows the generated reproduction status."""
    html = book_copy / "_build" / "html"
    if not (html / "index.html").exists():
        pytest.fail("the book was not built (test_book_builds_without_warnings failed or did not run)")
    for chapter in CHAPTERS:
        page = (html / "book" / "chapters" / f"{chapter}.html").read_text()
        assert re.search(rf'class="(?=[^"]*\badmonition\b)[^"]*\b{book.PROFILE_BOX_CLASS}\b', page), \
            f"{chapter}: no rendered 'this page was built with' box"
        assert ":class:" not in page and "{admonition}" not in page, f"{chapter}: a directive shows as text"
        assert "injected-parameters" not in page and 'profile = "smoke"' not in page, \
            f"{chapter}: a parameter cell is shown"
        assert re.search(r"<table\b", page), f"{chapter}: no table"
        assert re.search(r"<img\b[^>]*src=\"[^\"]*\.png\"", page), f"{chapter}: no figure"
    for path in sorted(html.rglob("*.html")):
        if path.name in ("search.html", "genindex.html"):
            continue
        text = _page_text(path.read_text())
        bars = [line for line in text.splitlines() if PROGRESS_LINE.search(line)]
        assert len(bars) <= MAX_PROGRESS_LINES, f"{path.name}: {len(bars)} progress-bar lines, e.g. {bars[:3]}"
        problem = PROBLEM_TEXT.search(text)
        assert problem is None, f"{path.name}: shows {problem.group(0)!r}: …{text[max(0, problem.start() - 200):problem.end() + 200]}…"
    intro = (html / "book" / "intro.html").read_text()
    assert "Reproduction status" in intro and ("not run" in intro or "No chapter has stored leaderboard rows" in intro
                                              or "real data" in intro or "replica only" in intro)
