"""The Colab setup cell at the top of every chapter (``sdr book-setup-cells``) and the book's repository.

On Colab the cell installs ``sdr`` from the repository named in ``_config.yml`` when it is missing; elsewhere it
only names the device.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from sdr.book import paths


SETUP_TAG = "sdr-setup"
CONFIG_FILE = "_config.yml"


def repository() -> dict:
    """The book's repository (``_config.yml`` ``repository``: url, branch), read by the launch buttons and the
    setup cell alike, so a fork changes it in one place."""
    path = paths.ROOT / CONFIG_FILE
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


def setup_cells_command(args) -> int:
    """``sdr book-setup-cells [NOTEBOOK …]``: add or refresh the setup cell (default: every chapter notebook)."""
    notebooks = args.notebooks or sorted(paths.NOTEBOOKS.glob("*.ipynb"))
    for notebook in notebooks:
        changed = add_setup_cell(notebook)
        print(f"[sdr book-setup-cells] {notebook}: {'updated' if changed else 'already up to date'}")
    return 0
