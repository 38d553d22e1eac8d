"""Fixtures shared by the whole test suite.

* ``shared_data`` — the real-data mirror (``$SDR_DATA``, which ``make test`` sets); skips when unset.
* ``real_data`` — a factory ``real_data("csfcube")`` → ``$SDR_DATA/csfcube``; skips (naming SDR_DATA) when absent.
* ``tiny_encoder`` — a 1-layer cut of the offline all-MiniLM-L6-v2 (max_length 32) on CPU, loaded once per
  session. It is SHARED: tests must not train it, add tokens to it or change its pooling; use
  ``fresh_tiny_encoder()`` for a private copy.
* ``fresh_tiny_encoder`` — a factory returning an independent copy of the tiny encoder (same weights).
* ``load_tiny_encoder`` — a factory that loads the tiny encoder from scratch, as a new process would.
* ``synthetic_corpus`` — a small seeded :func:`sdr.synthetic.make_corpus` corpus (60 papers).
* ``tiny_notebook`` — writes a notebook with a ``parameters`` cell (for book/papermill tests).

Test files may define fixtures of the same names locally; pytest then uses the local ones.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# One intra-op thread unless the caller says otherwise. On a small shared machine (2 cores, other jobs
# running) torch's OpenMP threads spin-wait against each other: measured 13.7 s vs 0.8 s for the same
# 6-step training run of test_train.py. Set before torch is imported; inherited by papermill kernels.
os.environ.setdefault("OMP_NUM_THREADS", "1")
if "torch" in sys.modules:  # imported early by a plugin: the variable came too late, set it directly
    sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _private_data_lock(tmp_path_factory, monkeypatch):
    """Every test pins downloads in its own lock file, never in the checkout's data/datasets.lock.json."""
    monkeypatch.setenv("SDR_DATA_LOCK", str(tmp_path_factory.mktemp("lock") / "datasets.lock.json"))

#: How the tiny encoder is loaded everywhere (keep in one place so "loaded the same way" stays true).
TINY_ENCODER_OPTIONS = {"num_layers": 1, "max_length": 32, "device": "cpu"}


def require_shared_data(relative: str | None = None) -> Path:
    """``$SDR_DATA`` (or ``$SDR_DATA/relative``) — or skip the calling test with a reason naming SDR_DATA.

    The one place that decides whether real data is there: unset, empty, a missing folder or a missing
    file inside it all skip (``make test`` passes ``SDR_DATA=`` when ``../shared/data`` is absent).
    """
    value = os.environ.get("SDR_DATA")
    if not value:
        pytest.skip("SDR_DATA is not set: real-data tests need the shared mirror (make test sets it)")
    root = Path(value)
    if not root.is_dir():
        pytest.skip(f"SDR_DATA={value} is not a directory: real-data tests need the shared mirror")
    if relative is None:
        return root
    path = root / relative
    if not path.exists():
        pytest.skip(f"SDR_DATA={value} has no {relative}: this real-data test needs it from the shared mirror")
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data mirror named by ``$SDR_DATA``; the test is skipped when it is unset or missing."""
    return require_shared_data()


@pytest.fixture()
def real_data() -> Callable[..., Path]:
    """Factory ``real_data("csfcube/evaluation_splits.json")`` → ``$SDR_DATA/<relative>``, or skip naming SDR_DATA."""
    return require_shared_data


def _load_tiny_encoder():
    from sdr.encoders import Encoder

    return Encoder.load("minilm", **TINY_ENCODER_OPTIONS)


@pytest.fixture(scope="session")
def tiny_encoder():
    """A 1-layer all-MiniLM-L6-v2 (mean pooling, max_length 32, CPU), shared read-only by the session."""
    encoder = _load_tiny_encoder()
    encoder.eval()
    return encoder


@pytest.fixture(scope="session")
def fresh_tiny_encoder(tiny_encoder) -> Callable:
    """Factory: an independent deep copy of the pristine tiny encoder (cheap; safe to train or modify)."""
    pristine = copy.deepcopy(tiny_encoder)  # a copy taken before any test could touch the shared one

    def make():
        return copy.deepcopy(pristine)

    return make


@pytest.fixture(scope="session")
def load_tiny_encoder() -> Callable:
    """Factory: load the tiny encoder from the offline package again (a 'fresh process' load)."""
    return _load_tiny_encoder


@pytest.fixture(scope="session")
def synthetic_corpus():
    """A 60-paper seeded synthetic corpus (:func:`sdr.synthetic.make_corpus`, seed 0)."""
    from sdr import synthetic

    return synthetic.make_corpus(n_papers=60, seed=0)


@pytest.fixture()
def tiny_notebook(tmp_path) -> Callable[..., Path]:
    """Factory ``tiny_notebook(parameters_source, body_source, name="tiny")`` → path of a written .ipynb.

    The first code cell is tagged ``parameters`` (papermill's convention); the second is ``body_source``.
    """
    import nbformat

    def write(parameters_source: str, body_source: str = "", name: str = "tiny",
              folder: Path | None = None) -> Path:
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        parameters = nbformat.v4.new_code_cell(parameters_source)
        parameters.metadata["tags"] = ["parameters"]
        notebook.cells = [nbformat.v4.new_markdown_cell(f"# {name}"), parameters]
        if body_source:
            notebook.cells.append(nbformat.v4.new_code_cell(body_source))
        path = Path(folder or tmp_path) / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, path)
        return path

    return write
