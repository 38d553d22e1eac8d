"""The Colab route (issue 25): the setup cell's code run with a faked Colab — what it installs, what it leaves
alone, where results and data go, what it fetches — and the profile cell an interactive session uses."""

from __future__ import annotations

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


def _installed(**overrides):
    versions = {name: pin for name, pin in colab.read_lock(ROOT / "requirements.lock").items()}
    versions.update(overrides)
    return {k: v for k, v in versions.items() if v is not None}


def test_paper_on_colab_keeps_torch_uses_drive_and_fetches_the_chapters_data(fake_colab, monkeypatch):
    # Colab: its own CUDA torch, an older numpy that is already imported, no pytrec-eval at all
    installed = _installed(torch="2.8.0+cu126", numpy="2.4.1", **{"pytrec-eval-terrier": None})
    monkeypatch.setattr(colab, "installed_versions", lambda: installed)
    done = colab.setup("cfs3", "paper", ROOT, run=fake_colab.run)
    pip = [c for c in fake_colab.commands if c[1:3] == ["-m", "pip"]]
    assert pip[0][3:] == ["install", "--quiet", "--no-deps", "-e", str(ROOT)]  # the package alone
    assert pip[1][3:5] == ["install", "--quiet"] and pip[1][5:] == done["installed"]
    assert done["installed"] == [f"pytrec-eval-terrier=={colab.read_lock(ROOT / 'requirements.lock')['pytrec-eval-terrier']}"]
    assert not any("torch" in c for command in pip for c in command[5:] if c.startswith("torch"))  # torch untouched
    assert fake_colab.mounted == [str(fake_colab.drive)]
    assert done["results"] == os.environ["SDR_RESULTS"] == str(fake_colab.drive / "MyDrive/sdr-book/results")
    assert done["data_cache"] == os.environ["SDR_DATA_CACHE"] == str(fake_colab.drive / "MyDrive/sdr-book/data")
    assert [sys.executable, "-m", "sdr.cli", "data", "fetch", "--for", "cfs3"] in fake_colab.commands
    assert [sys.executable, "-m", "spacy", "download", "en_core_web_sm"] in fake_colab.commands
    assert os.environ["SDR_INTERACTIVE_PROFILE"] == "paper"


def test_smoke_on_colab_stays_in_the_runtime_and_fetches_nothing(fake_colab, monkeypatch):
    monkeypatch.setattr(colab, "installed_versions", lambda: _installed(torch="2.8.0+cu126"))
    done = colab.setup("specter", "smoke", ROOT, run=fake_colab.run)
    assert done["installed"] == [] and fake_colab.mounted == [] and done["fetched"] == []
    assert "SDR_RESULTS" not in os.environ  # results/ of the checkout: lost with the runtime, and the cell says so
    assert len(fake_colab.commands) == 1  # only `pip install --no-deps -e`


def test_an_imported_package_that_must_change_needs_a_restart(fake_colab, monkeypatch):
    installed = _installed(pandas="2.2.2")  # outside the book's range, and pandas is imported in this kernel
    monkeypatch.setattr(colab, "installed_versions", lambda: installed)
    import pandas  # noqa: F401

    with pytest.raises(SystemExit, match=r"pandas 2.2.2 \(needs >=3.1,<4\).*Restart the session"):
        colab.setup("specter", "real", ROOT, run=fake_colab.run)
    assert any(c[-1].startswith("pandas==") for c in fake_colab.commands)  # installed, then the restart notice


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
