"""The launch path (issue 25): launch buttons that resolve, one repository address set where the book is
published, GitHub workflows that lint clean and call only what exists, Binder's generated CPU lock."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from sdr import book
from sdr.book import publish

ROOT = book.ROOT
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
TOOLS = Path(sys.executable).parent


def test_workflows_exist():
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "publish.yml"}


@pytest.mark.parametrize("tool, arguments", [("actionlint", []), ("zizmor", ["--offline"])])
def test_workflows_lint_clean(tool, arguments):
    completed = subprocess.run([str(TOOLS / tool), *arguments, *map(str, WORKFLOWS)], capture_output=True, text=True,
                               timeout=120, cwd=ROOT)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]


def _make_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*):", (ROOT / "Makefile").read_text(), flags=re.M))


def _sdr_commands() -> set[str]:
    from sdr.cli import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return set(subparsers.choices)


def test_every_run_step_calls_a_make_target_or_sdr_command_that_exists():
    targets, commands = _make_targets(), _sdr_commands()
    checked = 0
    for workflow in WORKFLOWS:
        for job, spec in yaml.safe_load(workflow.read_text())["jobs"].items():
            for step in spec.get("steps", []):
                if "run" not in step:
                    continue
                for line in filter(None, (l.strip() for l in step["run"].splitlines())):
                    words = line.split()
                    if words[0] == "make":
                        assert words[1] in targets, f"{workflow.name} {job}: `{line}`: no Makefile target {words[1]}"
                    elif words[0] in ("sdr", ".venv/bin/sdr"):
                        assert words[1] in commands, f"{workflow.name} {job}: `{line}`: no sdr command {words[1]}"
                    else:
                        pytest.fail(f"{workflow.name} {job}: `{line}` is neither a make target nor an sdr command")
                    checked += 1
    assert checked >= 6


def test_publish_workflow_sets_the_address_and_pushes_the_launch_branch():
    steps = [s.get("run", "") for s in yaml.safe_load((ROOT / ".github/workflows/publish.yml").read_text())
             ["jobs"]["build"]["steps"]]
    order = [next(i for i, s in enumerate(steps) if target in s)
             for target in ("make publish-config", "make book", "make publish-notebooks")]
    assert order == sorted(order)  # the address is set before the book is built and published
    makefile = (ROOT / "Makefile").read_text()
    assert "HEAD:refs/heads/notebooks" in makefile and book.repository()["branch"] == "notebooks"


def test_binder_lock_is_generated_and_current():
    completed = subprocess.run([str(TOOLS / "sdr"), "book-publish", "binder-lock", "--check"], capture_output=True,
                               text=True, cwd=ROOT, timeout=120)
    assert completed.returncode == 0, completed.stderr
    lock = (ROOT / "requirements-cpu.lock").read_text()
    assert "torch==2.13.0+cpu" in lock and "--extra-index-url https://download.pytorch.org/whl/cpu" in lock
    assert not re.search(r"^(nvidia-|triton)", lock, flags=re.M)
    generated = publish.binder_requirements("torch==2.13.0\nnvidia-cublas-cu12==1\nnumpy==2.4.0\n")
    assert generated.splitlines()[2:] == ["torch==2.13.0+cpu", "numpy==2.4.0"]
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "-r requirements-cpu.lock" in environment["dependencies"][-1]["pip"]


def test_configure_sets_the_address_everywhere_and_the_placeholder_cannot_be_published(tmp_path, monkeypatch,
                                                                                        tiny_notebook):
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "notebooks").mkdir()
    monkeypatch.setattr(book, "ROOT", tmp_path)
    monkeypatch.setattr(book, "NOTEBOOKS", tmp_path / "notebooks")
    with pytest.raises(ValueError, match="still the placeholder"):
        publish.check_publishable()
    notebook = tiny_notebook("profile = 'smoke'\n", "print(1)\n", name="specter", folder=tmp_path / "notebooks")
    changed = publish.configure("https://github.com/someone/fork")
    assert tmp_path / "_config.yml" in changed and notebook in changed
    config = (tmp_path / "_config.yml").read_text()
    assert "url: https://github.com/someone/fork\n" in config and "# The one place" in config  # comments kept
    assert book.repository() == {"url": "https://github.com/someone/fork", "branch": "notebooks"}
    setup = next(c for c in nbformat.read(notebook, as_version=4).cells if book.SETUP_TAG in c.metadata.get("tags", []))
    assert '"https://github.com/someone/fork", "notebooks", "specter"' in setup.source
    publish.check_publishable()
    with pytest.raises(ValueError, match="expected https://github.com/OWNER/REPOSITORY"):
        publish.configure("git@github.com:someone/fork.git")


def test_launch_urls_of_built_pages_resolve_and_a_missing_notebook_is_caught(tmp_path):
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                       "  - file: book/chapters/specter\n  - file: book/chapters/unpublished\n")
    (tmp_path / "book" / "chapters").mkdir(parents=True)
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    for name in ("specter", "unpublished"):
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
        notebook.cells = [nbformat.v4.new_markdown_cell(f"# {name}"), nbformat.v4.new_code_cell("1 + 1")]
        nbformat.write(notebook, tmp_path / "book" / "chapters" / f"{name}.ipynb")
    completed = subprocess.run([str(TOOLS / "jupyter-book"), "build", str(tmp_path), "-W", "-n", "--keep-going"],
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stdout[-3000:]
    html = tmp_path / "_build" / "html"
    urls = publish.launch_urls(html)
    assert len(urls["book/chapters/specter.html"]) == 2  # Colab and Binder
    problems = publish.check_launch_urls(html, publish.launch_branch_files())
    assert problems and all("unpublished.ipynb" in p for p in problems)  # only the page not on the branch
    assert publish.launch_target(urls["book/chapters/specter.html"][0])[1:] == ("notebooks", "book/chapters/specter.ipynb")
