"""The two cells every chapter gets from ``sdr book-setup-cells``, and the book's repository (``_config.yml``).

* The **setup cell** (first code cell): on Colab it clones the book's repository at the published branch (the
  code at the commit the page was built from, with the executed chapters), installs what the chapters need
  without replacing Colab's torch/CUDA stack or anything the kernel has imported, keeps results and data on Google Drive for ``paper`` runs, fetches the chapter's data
  (:func:`sdr.colab.setup`); elsewhere it only names the device.
* The **profile cell** (right after the ``parameters`` cell): in an interactive session whose setup cell chose a
  profile (``SDR_INTERACTIVE_PROFILE``), it applies that profile's parameters from ``profiles.yml``, the way
  ``sdr chapter`` injects them; under papermill it does nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sdr.book import paths

SETUP_TAG = "sdr-setup"
PROFILE_TAG = "sdr-profile"
CONFIG_FILE = "_config.yml"
PLACEHOLDER_URL = "https://github.com/sdr-book/sdr-book"
"""The address in the repository's own _config.yml; the publish workflow replaces it with the repository it runs in."""
INTERACTIVE_PROFILE = "SDR_INTERACTIVE_PROFILE"


def repository() -> dict:
    """The book's repository (``_config.yml`` ``repository``: url, branch), read by the launch buttons and the
    setup cell alike, so a fork changes it in one place (the publish workflow sets it from ``GITHUB_REPOSITORY``).
    ``branch`` is the *published* branch the launch buttons open: the code plus the executed chapters."""
    from sdr.jsonio import InputError, read_yaml

    path = paths.ROOT / CONFIG_FILE
    config = read_yaml(path, "the book's Jupyter Book configuration (a mapping with repository: url, branch)")
    if config is not None and not isinstance(config, dict):
        raise InputError(f"{path}: found a YAML {type(config).__name__}; expected a mapping")
    spec = (config or {}).get("repository") or {}
    if not isinstance(spec, dict):
        raise InputError(f"{path}: repository is a YAML {type(spec).__name__}; expected a mapping with url, branch")
    if not spec.get("url"):
        raise ValueError(f"{path}: repository.url is missing (the launch buttons and the setup cell need it)")
    return {"url": str(spec["url"]).rstrip("/"), "branch": str(spec.get("branch") or "main")}


def set_repository(url: str, config: Path | None = None) -> Path:
    """Write ``url`` as ``repository.url`` of ``_config.yml`` (the line itself: comments and layout stay)."""
    config = Path(config or paths.ROOT / CONFIG_FILE)
    if not re.fullmatch(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", url.rstrip("/")):
        raise ValueError(f"{url!r}: expected https://github.com/OWNER/REPOSITORY")
    from sdr.outputs import rewritten

    text = config.read_text()
    updated, count = re.subn(r"(?m)^(repository:\n(?:[ \t]+.*\n)*?[ \t]+url:[ \t]*).*$", rf"\g<1>{url.rstrip('/')}", text)
    if count != 1:
        raise ValueError(f"{config}: no `url:` line under `repository:` to set")
    with rewritten(config, "_config.yml") as temporary:  # atomically, never through a link
        temporary.write_text(updated)
    return config


def code_literal(value: str) -> str:
    """``value`` as a Python string literal for generated code: JSON's double-quoted form, which Python reads back
    as the same string (quotes, backslashes, newlines and other characters escaped), so no value taken from a file
    name or ``_config.yml`` can end the string and run as code in the cell."""
    import json

    if not isinstance(value, str):
        raise TypeError(f"code_literal: expected a string, got {type(value).__name__}")
    return json.dumps(value)


def setup_cell_source(chapter: str = "") -> str:
    """The first code cell of a chapter (see the module docstring). Every value taken from data (the repository's
    address and branch from ``_config.yml``, the chapter's name from its file) is placed as a literal
    (:func:`code_literal`)."""
    repo = repository()
    url, branch, name = (code_literal(value) for value in (repo["url"], repo["branch"], chapter))
    return f'''# Setup. On Colab: install this book at the commit this page was built from (Colab's torch is kept), keep the
# results, checkpoints and downloaded data on Google Drive (paper runs), fetch the chapter's data. Elsewhere it
# only names the device. PROFILE is the profile a Colab run uses (smoke, real or paper; profiles.yml).
import os, subprocess, sys
BOOK_REPOSITORY, BOOK_BRANCH, CHAPTER = {url}, {branch}, {name}
PROFILE = "paper"
KEEP_ON_DRIVE = None  # None: on Google Drive for the paper profile only; True or False to choose
if "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ:
    checkout = "/content/" + BOOK_REPOSITORY.rsplit("/", 1)[-1]
    if not os.path.isdir(checkout):
        subprocess.run(["git", "clone", "--depth", "1", "--branch", BOOK_BRANCH, BOOK_REPOSITORY, checkout], check=True)
    sys.path.insert(0, os.path.join(checkout, "lib"))
    os.chdir(checkout)
    from sdr import colab
    colab.setup(CHAPTER, PROFILE, checkout, keep_on_drive=KEEP_ON_DRIVE)
from sdr.book import device_line
print(device_line())
'''


def profile_cell_source(chapter: str) -> str:
    """The cell after the ``parameters`` cell (see the module docstring)."""
    return f'''# In an interactive session (Colab, Jupyter) whose setup cell chose a profile, its parameters from profiles.yml,
# as `sdr chapter` injects them; under papermill (make book, sdr chapter, CI) this changes nothing.
from sdr import book
globals().update(book.interactive_parameters({code_literal(chapter)}))
'''


def interactive_parameters(chapter: str) -> dict:
    """The parameters of the profile named by ``SDR_INTERACTIVE_PROFILE`` (set by the Colab setup), or ``{}``."""
    from sdr.book.profiles import chapter_parameters

    profile = os.environ.get(INTERACTIVE_PROFILE)
    if not profile:
        return {}
    parameters = chapter_parameters(chapter, profile)
    print(f"profile {profile}: " + ", ".join(f"{k} = {v!r}" for k, v in parameters.items() if k != "profile"))
    return parameters


def device_line() -> str:
    """The device this chapter runs on and the attention and precision path the trainer takes there
    (:func:`sdr.encoders.device_plan`)."""
    from sdr.encoders import device_plan

    return f"device: {device_plan('auto').describe()}"


def _tagged(notebook, tag):
    return [c for c in notebook.cells if tag in c.metadata.get("tags", [])]


def add_setup_cell(notebook_path: Path) -> bool:
    """Insert (or refresh) the setup cell before a notebook's first code cell and the profile cell after its
    ``parameters`` cell. Both are tagged ``remove-cell`` (the HTML page shows the profile box instead; the
    notebook that Colab opens keeps them). Returns whether the file changed."""
    import nbformat

    from sdr.jsonio import read_notebook
    from sdr.outputs import rewritten

    notebook_path = Path(notebook_path)
    chapter = notebook_path.stem
    notebook = read_notebook(notebook_path)
    changed = False
    for tag, source, place in ((SETUP_TAG, setup_cell_source(chapter), "first-code"),
                               (PROFILE_TAG, profile_cell_source(chapter), "after-parameters")):
        existing = _tagged(notebook, tag)
        if existing:
            if existing[0].source != source:
                existing[0].source = source
                changed = True
            continue
        if place == "after-parameters":
            index = next((i + 1 for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", [])),
                         None)
            if index is None:
                continue  # no parameters cell: nothing to apply
        else:
            index = next((i for i, c in enumerate(notebook.cells) if c.cell_type == "code"), len(notebook.cells))
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = [tag, "remove-cell"]
        notebook.cells.insert(index, cell)
        changed = True
    if changed:
        with rewritten(notebook_path) as temporary:  # an interrupted rewrite leaves the notebook as it was
            nbformat.write(notebook, temporary)
    return changed


def setup_cells_command(args) -> int:
    """``sdr book-setup-cells [NOTEBOOK …]``: add or refresh the setup and profile cells (default: every chapter).
    Every notebook is checked before any is rewritten: a regular ``.ipynb`` file, not a link."""
    from sdr.outputs import UnsafeOutput, file_kind

    notebooks = args.notebooks or sorted(paths.NOTEBOOKS.glob("*.ipynb"))
    for notebook in notebooks:
        if Path(notebook).is_symlink():
            raise UnsafeOutput(f"NOTEBOOKS {notebook}: is a symbolic link; notebooks are rewritten in place, never "
                               f"through a link")
        if Path(notebook).suffix != ".ipynb" or file_kind(notebook) is not None:
            raise UnsafeOutput(f"NOTEBOOKS {notebook}: is {file_kind(notebook) or 'not an .ipynb file'}; expected "
                               f"a chapter notebook (.ipynb) to update")
    for notebook in notebooks:
        changed = add_setup_cell(notebook)
        print(f"[sdr book-setup-cells] {notebook}: {'updated' if changed else 'already up to date'}")
    return 0
