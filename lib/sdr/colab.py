"""What a chapter's setup cell does on Google Colab (standard library only: it runs before the book's dependencies
are installed).

* **Install without breaking the kernel.** The book's package is installed without its dependencies
  (``pip install --no-deps -e``); then only the requirements Colab lacks, or has at a version outside the book's
  ranges (``pyproject.toml``), are installed at the lock's pins. Colab's own CUDA ``torch`` is never touched. A
  package that must change but is already imported in this kernel is installed too, and the cell then stops and
  says plainly that the session must be restarted (a kernel holding two versions of pandas gives wrong answers).
* **Survive a recycled runtime.** With ``keep_on_drive`` (default: on for the ``paper`` profile) Google Drive is
  mounted and the results store with its checkpoints (``SDR_RESULTS``) and the data cache (``SDR_DATA_CACHE``)
  live there, so rerunning the chapter after a disconnect resumes its training runs (``-p resume true`` is what
  ``sdr chapter`` passes; in the notebook, set ``resume = True``) and finds the downloaded data.
* **What the chapter needs.** At ``paper`` every dataset it reads is fetched (``sdr data fetch --for CHAPTER``)
  before anything runs, and spaCy's parser model where a chapter uses it.
* **Say what will run**: the device, and the attention/precision path the trainer will choose on it.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

DRIVE_ROOT = "/content/drive"
DRIVE_FOLDER = "MyDrive/sdr-book"
CHAPTER_EXTRAS = {"cfs3": ("spacy-model:en_core_web_sm",)}
"""Extra downloads a chapter needs at ``paper`` (the CFS3 chapter's root check uses spaCy's small English parser)."""
NEVER_INSTALL = {"torch"}  # Colab's CUDA build stays


def on_colab() -> bool:
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip().lower())


def read_lock(path: Path) -> dict[str, str]:
    pins = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line and not line.startswith("-"):
            name, version = line.split("==", 1)
            pins[_normal(name.split("[")[0])] = version.split(";")[0].strip()
    return pins


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


def _module_names(distribution: str) -> set[str]:
    try:
        top = importlib.metadata.distribution(distribution).read_text("top_level.txt") or ""
    except importlib.metadata.PackageNotFoundError:
        return set()
    return {line.strip() for line in top.splitlines() if line.strip()} or {distribution.replace("-", "_")}


def install_plan(ranges: dict[str, str], pins: dict[str, str], installed: dict[str, str],
                 imported: set[str], modules_of=_module_names) -> dict:
    """Which requirements to install (at the lock's pins) and which of those are imported in this kernel
    (a restart is needed after installing them). ``installed``: distribution → version."""
    install, restart = [], []
    for name, specifier in sorted(ranges.items()):
        if name in NEVER_INSTALL:
            continue
        version = installed.get(name)
        if version is not None and satisfies(version, specifier):
            continue
        install.append(f"{name}=={pins[name]}" if name in pins else f"{name}{specifier}")
        if version is not None and modules_of(name) & imported:
            restart.append(f"{name} {version} (needs {specifier})")
    return {"install": install, "restart": restart}


def installed_versions() -> dict[str, str]:
    return {_normal(d.metadata["Name"]): d.version for d in importlib.metadata.distributions() if d.metadata["Name"]}


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
    plan = install_plan(read_ranges(checkout / "pyproject.toml"), read_lock(checkout / "requirements.lock"),
                        installed_versions(), set(sys.modules))
    run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(checkout)], check=True)
    if plan["install"]:
        run([sys.executable, "-m", "pip", "install", "--quiet", *plan["install"]], check=True)
    done["installed"] = plan["install"]
    if plan["restart"]:
        raise SystemExit("Installed new versions of packages this session had already imported: "
                         + "; ".join(plan["restart"]) + ". Restart the session (Runtime → Restart session), then "
                         "run this cell again: nothing is installed the second time.")
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
        run([sys.executable, "-m", "sdr.cli", "data", "fetch", "--for", chapter], check=False)
        fetched.append(f"sdr data fetch --for {chapter}")
        for extra in CHAPTER_EXTRAS.get(chapter, ()):
            if extra.startswith("spacy-model:"):
                run([sys.executable, "-m", "spacy", "download", extra.split(":", 1)[1]], check=True)
                fetched.append(extra)
    done["fetched"] = fetched
    return done
