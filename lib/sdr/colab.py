"""What a chapter's setup cell does on Google Colab (standard library only: it runs before the book's dependencies
are installed).

* **Install without breaking the runtime.** The book's package is installed without its dependencies
  (``pip install --no-deps -e``); then only the requirements the chapters need (``pyproject.toml``'s direct
  dependencies, less the book-building tools: Colab's kernel is its own) that Colab lacks or has outside the
  book's range are installed, **as ranges** (not the lock's pins, which a current Colab does not have), under a
  constraints file that holds Colab's torch/CUDA stack (torch, torchvision, torchaudio, triton, nvidia-*) and
  every package this kernel has imported at their installed versions: pip may add packages around them but
  never replaces them, not even as another package's dependency. A package the chapter needs at another version
  but that this kernel has already imported is not upgraded under the running kernel (it would hold two
  versions): the cell stops before installing anything and says to restart the session and run this cell first.
* **Survive a recycled runtime.** With ``keep_on_drive`` (default: on for the ``paper`` profile) Google Drive is
  mounted and the results store with its checkpoints (``SDR_RESULTS``) and the data cache (``SDR_DATA_CACHE``)
  live there, so rerunning the chapter after a disconnect resumes its training runs (``-p resume true`` is what
  ``sdr chapter`` passes; in the notebook, set ``resume = True``) and finds the downloaded data.
* **What the chapter needs.** At ``paper`` every dataset it reads is fetched (``sdr data fetch --for CHAPTER``)
  before anything runs, and spaCy's parser model where a chapter uses it; a failed fetch stops the cell with its
  error.
* **Say what will run**: the device, and the attention/precision path the trainer will choose on it.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

DRIVE_ROOT = "/content/drive"
DRIVE_FOLDER = "MyDrive/sdr-book"
CHAPTER_EXTRAS = {"cfs3": ("spacy-model:en_core_web_sm",)}
"""Extra downloads a chapter needs at ``paper`` (the CFS3 chapter's root check uses spaCy's small English parser)."""
RUNTIME_STACK = ("torch", "torchvision", "torchaudio", "triton")
"""Colab's CUDA build of torch and what is built with it (with every ``nvidia-*`` package): pinned, never installed."""
BOOK_BUILD_ONLY = {"ipykernel", "jupyter-book"}
"""Direct dependencies that build the book (a kernel for papermill, the HTML build), not run a chapter in a
notebook: Colab's kernel is its own, so they are never installed there (``ipykernel`` would replace the running
kernel's package)."""


def on_colab() -> bool:
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip().lower())


def read_ranges(pyproject: Path) -> dict[str, str]:
    """``name → specifier`` of ``[project] dependencies`` (a tiny reader: ``tomllib`` is 3.11+, Colab has it)."""
    import tomllib

    dependencies = tomllib.loads(Path(pyproject).read_text())["project"]["dependencies"]
    ranges = {}
    for text in dependencies:
        match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)$", text)
        ranges[_normal(match.group(1))] = match.group(2).split(";")[0].strip()
    return ranges


def _version_tuple(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.+]", version.split("+")[0])[:3])


def satisfies(version: str, specifier: str) -> bool:
    """Whether ``version`` meets a comma-separated specifier of >=, <, <=, >, ==, != (what pyproject uses)."""
    ours = _version_tuple(version)
    for clause in filter(None, (c.strip() for c in specifier.split(","))):
        operator, bound = re.match(r"^(>=|<=|==|!=|>|<)\s*(.+)$", clause).groups()
        other = _version_tuple(bound)
        if not {">=": ours >= other, "<=": ours <= other, ">": ours > other, "<": ours < other,
                "==": ours == other, "!=": ours != other}[operator]:
            return False
    return True


def runtime_stack(name: str) -> bool:
    """Whether a distribution belongs to the runtime's torch/CUDA stack (:data:`RUNTIME_STACK`, ``nvidia-*``)."""
    return name in RUNTIME_STACK or name.startswith("nvidia-")


def chapter_requirements(ranges: dict[str, str]) -> dict[str, str]:
    """What a chapter needs installed in a notebook: the direct dependencies, less :data:`BOOK_BUILD_ONLY`."""
    return {name: specifier for name, specifier in ranges.items() if name not in BOOK_BUILD_ONLY}


def install_plan(ranges: dict[str, str], installed: dict[str, str], imported: set[str]) -> dict:
    """Which requirements to install (``name`` + its range) and which cannot be (``blocked``: a version outside
    the range that is imported in this kernel, or part of the runtime's torch stack). ``installed``: distribution
    → version; ``imported``: distributions whose modules this kernel has imported (:func:`imported_distributions`)."""
    install, blocked = [], []
    for name, specifier in sorted(ranges.items()):
        version = installed.get(name)
        if version is not None and satisfies(version, specifier):
            continue
        if runtime_stack(name):
            blocked.append(f"{name} {version or '(missing)'} (the chapter needs {specifier}; the runtime's own "
                           "CUDA build is never replaced)")
        elif version is not None and name in imported:
            blocked.append(f"{name} {version} (the chapter needs {specifier}; imported in this session)")
        else:
            install.append(f"{name}{specifier}")
    return {"install": install, "blocked": blocked}


def constraints(installed: dict[str, str], imported: set[str]) -> list[str]:
    """pip constraints that keep the runtime as it is: the torch/CUDA stack and every imported distribution at
    its installed version."""
    return [f"{name}=={version}" for name, version in sorted(installed.items())
            if runtime_stack(name) or name in imported]


def installed_versions() -> dict[str, str]:
    return {_normal(d.metadata["Name"]): d.version for d in importlib.metadata.distributions() if d.metadata["Name"]}


def imported_distributions(modules=None) -> set[str]:
    """Distributions (normalized names) that provide a module this kernel has imported."""
    modules = sys.modules if modules is None else modules
    providers = importlib.metadata.packages_distributions()
    tops = {name.split(".")[0] for name in modules}
    return {_normal(distribution) for top in tops for distribution in providers.get(top, ())}


def install_requirements(checkout: str | Path, run=subprocess.run, installed: dict[str, str] | None = None,
                         imported: set[str] | None = None) -> dict:
    """The setup cell's install of the chapters' requirements (see the module docstring): stops (``SystemExit``)
    before installing anything when a needed package cannot be installed in this session; returns what it
    installed and the constraints it installed under."""
    checkout = Path(checkout)
    installed = installed_versions() if installed is None else installed
    imported = imported_distributions() if imported is None else imported
    plan = install_plan(chapter_requirements(read_ranges(checkout / "pyproject.toml")), installed, imported)
    if plan["blocked"]:
        raise SystemExit("Not installed: " + "; ".join(plan["blocked"]) + ". A package this session has imported "
                         "is never upgraded under the running kernel (it would hold two versions). Restart the "
                         "session (Runtime → Restart session) and run this cell first; if the runtime itself "
                         "imports it, or it is the runtime's torch, this runtime cannot run the chapter (the "
                         "ranges are pyproject.toml's).")
    pins = constraints(installed, imported)
    handle, constraints_file = tempfile.mkstemp(prefix="sdr-colab-constraints-", suffix=".txt")
    with os.fdopen(handle, "w") as file:
        file.write("\n".join(pins) + "\n")
    if plan["install"]:
        run([sys.executable, "-m", "pip", "install", "--quiet", "-c", constraints_file, *plan["install"]], check=True)
    return {"installed": plan["install"], "constraints": constraints_file, "pinned": pins}


def mount_drive(folder: str = DRIVE_FOLDER) -> Path:
    from google.colab import drive  # noqa: PLC0415 - only exists on Colab

    drive.mount(DRIVE_ROOT)
    root = Path(DRIVE_ROOT) / folder
    root.mkdir(parents=True, exist_ok=True)
    return root


def setup(chapter: str, profile: str, checkout: str | Path, keep_on_drive: bool | None = None,
          run=subprocess.run) -> dict:
    """Everything the setup cell does on Colab; returns what it did (for the test and the page)."""
    checkout = Path(checkout)
    done = {"chapter": chapter, "profile": profile}
    done.update(install_requirements(checkout, run=run))  # stops first when something cannot be installed
    run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(checkout)], check=True)
    keep = (profile == "paper") if keep_on_drive is None else bool(keep_on_drive)
    if keep:
        root = mount_drive()
        os.environ["SDR_RESULTS"] = str(root / "results")
        os.environ["SDR_DATA_CACHE"] = str(root / "data")
        print(f"results and checkpoints: {root / 'results'}; data cache: {root / 'data'} (Google Drive: they survive "
              f"a recycled runtime; rerun with resume = True to continue a training run)")
    else:
        print("results and data stay in this runtime (/content): a recycled runtime loses them; set KEEP_ON_DRIVE = "
              "True to keep them on Google Drive")
    done["results"] = os.environ.get("SDR_RESULTS", str(checkout / "results"))
    done["data_cache"] = os.environ.get("SDR_DATA_CACHE", str(Path.home() / ".cache" / "sdr"))
    os.environ["SDR_INTERACTIVE_PROFILE"] = profile
    fetched = []
    if profile == "paper":
        fetch = run([sys.executable, "-m", "sdr.cli", "data", "fetch", "--for", chapter], check=False)
        if getattr(fetch, "returncode", 0) != 0:  # its own message is printed above: stop here, before the chapter
            raise SystemExit(f"sdr data fetch --for {chapter} failed (exit status {fetch.returncode}); its error is "
                             "above. Fix it (an S2_API_KEY, the network, disk space) and run this cell again.")
        fetched.append(f"sdr data fetch --for {chapter}")
        for extra in CHAPTER_EXTRAS.get(chapter, ()):
            if extra.startswith("spacy-model:"):
                run([sys.executable, "-m", "spacy", "download", extra.split(":", 1)[1]], check=True)
                fetched.append(extra)
    done["fetched"] = fetched
    return done
