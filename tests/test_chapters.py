"""Every chapter executed at the ``smoke`` profile with pytest-notebook, then the book built with ``-W``.

The chapters hold ``assert`` statements on what they compute, so a chapter whose numbers are wrong fails
here, not only one that crashes. Executed chapters and their results go to a temporary copy of the book,
so ``make test`` never overwrites what ``make book`` produced.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
    nbformat.write(executed, book_copy / "book" / "chapters" / f"{chapter}.ipynb")


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
