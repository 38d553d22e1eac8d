"""The book as a reader sees it: cleaned executed chapters, the leaderboard and reproduction-status
conventions, number formatting, the Colab setup cell and the dependency ranges (all without a kernel).

The HTML of a real build is checked in ``tests/test_chapters.py`` (``test_built_pages_read_cleanly``).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from sdr import book

TQDM_STREAM = ("training:   0%|          | 0/5 [00:00<?, ?step/s]\rtraining:  40%|████      | 2/5 [00:01<00:01]"
               "\rtraining:  80%|████████  | 4/5 [00:02<00:00]")


# ------------------------------------------------------------------------------------------ clean outputs
def test_carriage_returns_render_as_a_terminal_shows_them():
    assert book.render._render_carriage_returns(TQDM_STREAM + "\rtraining: 100%|██████████| 5/5 [00:03]\nafter\n") == \
        "training: 100%|██████████| 5/5 [00:03]\nafter\n"
    # leave=False erases the bar with blanks: nothing of it remains
    assert book.render._render_carriage_returns("loss:  50%|█  | 1/2\r          \rdone\n") == "done\n"
    assert book.render._render_carriage_returns("plain\ntext\n") == "plain\ntext\n"


def _executed_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    own = nbformat.v4.new_code_cell('profile = "smoke"')
    own.metadata["tags"] = ["parameters"]
    injected = nbformat.v4.new_code_cell('profile = "real"\nepochs = 2\n')
    injected.metadata["tags"] = ["injected-parameters"]
    training = nbformat.v4.new_code_cell("train()")
    training.outputs = [  # tqdm's redraws arrive as many stream outputs
        nbformat.v4.new_output("stream", name="stderr", text=TQDM_STREAM),
        nbformat.v4.new_output("stream", name="stderr", text="\rtraining: 100%|██████████| 5/5 [00:03]\n"),
        nbformat.v4.new_output("stream", name="stdout", text="trained\n"),
        nbformat.v4.new_output("stream", name="stderr", text="encoding: 100%|██| 3/3\n"),
    ]
    notebook.cells = [nbformat.v4.new_markdown_cell("# Tiny"), own, injected, training]
    return notebook


def test_finish_notebook_leaves_one_box_and_final_progress_bars():
    notebook = _executed_notebook()
    parameters = {"profile": "real", "epochs": 2, "data_file": "$SDR_DATA/x_y.json"}
    for _ in range(2):  # idempotent: finishing twice still leaves one box
        book.finish_notebook(notebook, "tiny", parameters, ["CSFCube ($SDR_DATA)", "synthetic *replica*"], "abc")
    tags = [cell.metadata.get("tags", []) for cell in notebook.cells]
    assert tags[1] == ["parameters", "remove-cell"] and tags[2] == ["injected-parameters", "remove-cell"]
    boxes = [cell for cell in notebook.cells if book.PROFILE_BOX_TAG in cell.metadata.get("tags", [])]
    assert len(boxes) == 1 and notebook.cells[3] is boxes[0]  # right after the parameter cells
    box = boxes[0].source
    assert box.startswith(":::{admonition} This page was built with the real profile\n") and box.endswith("\n:::")
    assert f":class: {book.PROFILE_BOX_CLASS}" in box
    assert r"CSFCube (\$SDR\_DATA); synthetic \*replica\*" in box  # $ would open math, * emphasis
    assert "`epochs = 2`" in box and "`profile = " not in box
    outputs = notebook.cells[4].outputs
    assert [(o["name"], o["text"]) for o in outputs] == [
        ("stderr", "training: 100%|██████████| 5/5 [00:03]\n"), ("stdout", "trained\n"),
        ("stderr", "encoding: 100%|██| 3/3\n")]
    assert notebook.metadata["sdr"]["fingerprint"] == "abc" and notebook.metadata["sdr"]["profile"] == "real"


def test_write_executed_takes_sources_from_the_results_store(tmp_path):
    results = tmp_path / "results"
    (results / "tiny").mkdir(parents=True)
    (results / "tiny" / "real.json").write_text('{"sources": ["SciDocs replica (seed 0)"]}')
    path = book.write_executed(_executed_notebook(), tmp_path / "chapters" / "tiny.ipynb", "tiny",
                               {"profile": "real"}, results=results)
    written = nbformat.read(path, as_version=4)
    assert "**Data:** SciDocs replica (seed 0)" in written.cells[3].source
    assert (tmp_path / "chapters" / book.STATUS_PAGE).exists()


# ------------------------------------------------------------------------------------------ leaderboard
CSFCUBE_RESULT = {"test": {facet: {"map": 0.3423, "ndcg%20": 0.5328, "rp": 0.1} for facet in book.CSFCUBE_FACETS}}


def test_leaderboard_row_validates_and_converts():
    metrics = book.csfcube_metrics(CSFCUBE_RESULT)
    assert metrics["map_all"] == pytest.approx(34.23) and metrics["ndcg%20_method"] == pytest.approx(53.28)
    assert len(metrics) == 8
    row = book.leaderboard_row("SPECTER", "csfcube", metrics, data="real", base_model="all-MiniLM-L6-v2",
                               training="2 epochs, 75 steps")
    assert row["metrics"]["map_all"] == pytest.approx(34.23) and row["data"] == "real"
    assert book.csabstruct_metrics({"p@1": 0.5, "map@r": 0.2, "report": {}}) == {"map@r": 0.2, "p@1": 0.5}
    common = {"data": "real", "base_model": "m", "training": "none"}
    with pytest.raises(ValueError, match="unknown benchmark 'scidoc'"):
        book.leaderboard_row("x", "scidoc", {"avg": 1.0}, **common)
    with pytest.raises(ValueError, match=r"map@r = 34.2 is outside \[0, 1.0\]"):  # × 100 where fractions belong
        book.leaderboard_row("x", "csabstruct", {"map@r": 34.2}, **common)
    with pytest.raises(ValueError, match="avg = None is not a number"):
        book.leaderboard_row("x", "scidocs", {"avg": None}, **common)
    with pytest.raises(ValueError, match="avg = nan is outside"):
        book.leaderboard_row("x", "scidocs", {"avg": float("nan")}, **common)
    with pytest.raises(ValueError, match="headline metric 'map_all' is missing"):
        book.leaderboard_row("x", "csfcube", {"map_method": 3.0}, **common)
    with pytest.raises(ValueError, match=r"unknown metrics \['map'\]"):
        book.leaderboard_row("x", "csfcube", {"map": 3.0, "map_all": 3.0}, **common)
    with pytest.raises(ValueError, match="data must be one of"):
        book.leaderboard_row("x", "csfcube", metrics, data="synthetic", base_model="m", training="none")
    with pytest.raises(ValueError, match="training must be a non-empty string"):
        book.leaderboard_row("x", "csfcube", metrics, data="real", base_model="m", training="")


def test_base_model_label_names_the_shared_encoder_one_way():
    assert book.base_model_label("minilm", 0) == "all-MiniLM-L6-v2"
    assert book.base_model_label("minilm", 2) == "all-MiniLM-L6-v2 (2 layers)"
    assert book.base_model_label("allenai/scibert_scivocab_uncased") == "allenai/scibert_scivocab_uncased"
    assert book.trained_here("2 epochs, 75 steps") and not book.trained_here("none")
    assert not book.trained_here("external: SPECTER release")


def _store(chapter, profile, rows):
    return book.save_results(chapter, profile, {}, [f"{chapter} data"], extra={"leaderboard": rows})


@pytest.fixture()
def results_store(tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(book, "PAPER_TABLES", tmp_path / "paper_tables")
    (tmp_path / "paper_tables").mkdir()
    (tmp_path / "paper_tables" / "scidocs.csv").write_text(
        "source,table,model,mag_f1,avg,note\nSciNCL,Table 1,SPECTER,82.0,80.0,\n")
    return tmp_path / "results"


def _row(method, benchmark, value, data="real", training="1 epoch", paper_model=None):
    metric = book.BENCHMARKS[benchmark]["headline"]
    return book.leaderboard_row(method, benchmark, {metric: value}, data=data, base_model="all-MiniLM-L6-v2",
                                training=training, paper_model=paper_model)


def test_leaderboard_table_collects_real_rows_of_every_chapter(results_store):
    _store("benchmarks", "real", [_row("BM25 · abstract query", "csfcube", 30.5, training="none"),
                                  _row("SPECTER (official rankings)", "csfcube", 34.23, training="none")])
    _store("specter", "real", [_row("SPECTER", "csfcube", 36.0), _row("SPECTER", "scidocs", 60.0, data="replica"),
                               _row("SPECTER", "csabstruct", 0.2)])
    _store("specter", "smoke", [_row("SPECTER", "csfcube", 20.0)])
    table = book.leaderboard_table("csfcube", "real")
    assert table.index.tolist() == ["SPECTER", "SPECTER (official rankings)", "BM25 · abstract query"]
    assert table["map_all"].tolist() == [36.0, 34.23, 30.5]
    assert table.loc["SPECTER", "chapter"] == "specter" and table.loc["SPECTER", "training budget"] == "1 epoch"
    assert book.leaderboard_table("csabstruct", "real").index.tolist() == ["SPECTER"]
    assert book.leaderboard_table("scidocs", "real").empty  # replica rows are not on the real-data leaderboard
    assert book.leaderboard_table("csfcube", "paper").empty


def test_a_malformed_stored_row_names_its_results_file(results_store):
    path = _store("specter", "real", [{"method": "SPECTER", "benchmark": "csfcube", "metrics": {"map_all": 0.5}}])
    with pytest.raises(ValueError, match=re.escape(f"{path}: extra.leaderboard[0] is not a leaderboard row")):
        book.leaderboard_rows("real")


def test_reproduction_status_says_which_run_produced_each_cell(results_store, tmp_path):
    _store("specter", "smoke", [_row("SPECTER", "csfcube", 20.0), _row("SPECTER", "scidocs", 50.0, "replica")])
    _store("specter", "real", [_row("SPECTER", "csfcube", 36.0),
                               _row("SPECTER", "scidocs", 61.25, "replica", paper_model="SPECTER")])
    _store("scincl", "paper", [_row("SciNCL", "scidocs", 81.5, paper_model="SciNCL")])
    status = book.reproduction_status()
    assert status.loc["SPECTER", "CSFCube test (map_all)"] == "36.00 (paper: —) · real data, `real`"
    assert status.loc["SPECTER", "SciDocs (avg)"] == "61.2 (paper 80.0) · replica only, `real`"
    assert status.loc["SciNCL", "SciDocs (avg)"] == "81.5 (paper: —) · `paper` profile only"
    assert status.loc["SciNCL", "CSFCube test (map_all)"] == "not run"
    page = book.write_status_page(tmp_path / "status.md")
    text = page.read_text()
    assert "| SPECTER | " in text and "61.2 (paper 80.0)" in text and "Generated from the results store" in text
    modified = page.stat().st_mtime_ns
    book.write_status_page(page)
    assert page.stat().st_mtime_ns == modified  # unchanged content is not rewritten


def test_status_page_without_results(tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "empty"))
    assert "No chapter has stored leaderboard rows yet" in book.status_markdown()


# ------------------------------------------------------------------------------------------ formatting
def test_paper_vs_ours_tables_use_the_papers_precision(tmp_path, monkeypatch):
    monkeypatch.setattr(book, "PAPER_TABLES", tmp_path)
    (tmp_path / "t.csv").write_text("source,table,model,mag_f1,avg,p1,note\n"
                                    "A,T1,SPECTER,82.0,80.0,0.445,\nA,T1,SciNCL,81.4,81.8,0.553,\n"
                                    "B,T2,Thesis,81.78,80.70,0.5,\n")
    ours = pd.DataFrame({"mag_f1": [70.123456], "avg": [60.25], "p1": [0.401965]}, index=["MiniLM"])
    table = book.paper_vs_ours(ours, book.read_paper_table("t"), ["mag_f1", "avg", "p1"], "this book (smoke)")
    assert book.is_paper_vs_ours(table)
    assert book.column_decimals(table) == {"mag_f1": 1, "avg": 1, "p1": 3}
    html = book.styled(table, "Profile: smoke").to_html()
    assert "70.1<" in html and "0.402<" in html and "0.401965" not in html and "Profile: smoke" in html
    assert ">0<" not in book.styled(table.set_axis(pd.Index([0, 1, 2, 3]))).to_html()  # row numbers hidden


def test_only_paper_vs_ours_metric_tables_get_a_heatmap():
    examples = pd.DataFrame({"reported by": ["SciToricsBERT, Table 1", "this book"],
                             "sentence": ["We propose …", "We propose …"], "label": ["01", "01"]})
    counts = pd.DataFrame({"sentences": [10, 20]}, index=["a", "b"])
    assert not book.is_paper_vs_ours(examples) and book.paper_vs_ours_heatmap(examples, "t", "c") is None
    assert not book.is_paper_vs_ours(counts)
    decimals = book.column_decimals(pd.DataFrame({"n": [3, 4], "score": [0.12345, 0.5], "loss": [1.23456, 2.0]}))
    assert decimals == {"n": 0, "score": 3, "loss": 2}
    table = pd.DataFrame({"reported by": ["P, T1", "this book (smoke)"], "model": ["a", "b"], "x": [1.5, 2.25]})
    figure = book.paper_vs_ours_heatmap(table, "t", "Profile: smoke")
    assert figure is not None and [t.get_text() for t in figure.axes[0].texts] == ["1.5", "2.2"]


# ------------------------------------------------------------------------------------------ Colab setup cell
def test_setup_cell_reads_the_repository_from_config_and_is_idempotent(tmp_path, monkeypatch, tiny_notebook):
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/someone/fork/\n  branch: dev\n")
    monkeypatch.setattr(book, "ROOT", tmp_path)
    path = tiny_notebook("profile = 'smoke'\n", "print(1)\n", name="chapter", folder=tmp_path)
    assert book.add_setup_cell(path) is True
    assert book.add_setup_cell(path) is False
    cells = nbformat.read(path, as_version=4).cells
    assert [c.cell_type for c in cells] == ["markdown", "code", "code", "code", "code"]
    assert cells[1].metadata["tags"] == [book.SETUP_TAG, "remove-cell"]
    assert '"https://github.com/someone/fork", "dev", "chapter"' in cells[1].source
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/other/book\n")
    assert book.add_setup_cell(path) is True  # the URL changed in _config.yml: the cell follows
    cells = nbformat.read(path, as_version=4).cells
    assert len(cells) == 5 and '"https://github.com/other/book", "main", "chapter"' in cells[1].source
    (tmp_path / "_config.yml").write_text("title: x\n")
    with pytest.raises(ValueError, match="_config.yml: repository.url is missing"):
        book.setup_cell_source()


def test_the_book_config_holds_the_one_repository_url():
    assert book.repository()["url"] in book.setup_cell_source()


# The setup cell's behaviour on and off Colab: tests/test_colab.py.


# ------------------------------------------------------------------------------------------ dependency ranges
def _direct_dependencies() -> list[Requirement]:
    pyproject = tomllib.loads((book.ROOT / "pyproject.toml").read_text())
    return [Requirement(text) for text in pyproject["project"]["dependencies"]]


def _locked() -> dict[str, Version]:
    pins = {}
    for line in (book.ROOT / "requirements.lock").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[re.sub(r"[-_.]+", "-", name.split("[")[0].strip().lower())] = Version(version.split(";")[0].strip())
    return pins


def test_direct_dependencies_are_ranges_that_admit_the_lock():
    """pyproject.toml declares compatible ranges (Colab keeps its own CUDA torch); requirements.lock pins."""
    locked = _locked()
    for requirement in _direct_dependencies():
        name = re.sub(r"[-_.]+", "-", requirement.name.lower())
        assert not any(s.operator in ("==", "===") for s in requirement.specifier), \
            f"pyproject.toml: {requirement} is an exact pin; pins belong in requirements.lock"
        assert name in locked, f"requirements.lock does not pin {requirement.name}"
        assert requirement.specifier.contains(locked[name], prereleases=True), \
            f"pyproject.toml: {requirement} excludes the locked {locked[name]}"
    torch = next(r for r in _direct_dependencies() if r.name == "torch")
    for colab_torch in ("2.13.0", "2.6.0+cu124", "2.8.0+cu126"):  # the lock's, and CUDA builds Colab ships
        assert torch.specifier.contains(colab_torch), (torch, colab_torch)


HOSTILE = ['x"; import os; os.system("touch PWNED"); "', "a\nimport os\n", "back\\slash\\", "it's \"both\"",
           "\u2028line separator", "tab\tend"]


@pytest.mark.parametrize("value", HOSTILE)
def test_no_value_from_data_runs_as_code_in_the_generated_cells(value, tmp_path, monkeypatch):
    """Every field that reaches a setup or profile cell (the repository address and branch from _config.yml, the
    chapter's name from its file name) is a literal: the cell parses, and the literals read back as the values."""
    import ast

    (tmp_path / "_config.yml").write_text(yaml.safe_dump({"repository": {"url": f"https://github.com/o/r{value}",
                                                                         "branch": value}}))
    monkeypatch.setattr(book, "ROOT", tmp_path)
    setup = book.setup_cell_source(value)
    tree = ast.parse(setup)
    assignment = next(node for node in tree.body if isinstance(node, ast.Assign)
                      and isinstance(node.targets[0], ast.Tuple))
    assert ast.literal_eval(assignment.value) == (f"https://github.com/o/r{value}".rstrip("/"), value, value)
    imports = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert sorted(alias.name for node in imports for alias in node.names) == ["colab", "device_line", "os",
                                                                                "subprocess", "sys"]
    profile = ast.parse(book.profile_cell_source(value))
    call = next(node for node in ast.walk(profile) if isinstance(node, ast.Call)
                and getattr(node.func, "attr", "") == "interactive_parameters")
    assert ast.literal_eval(call.args[0]) == value


def test_the_status_map_shows_the_seed_mean_with_its_sigma(results_store):
    """Issue 33: a method trained with several seeds shows mean ± σ of that run's seeds, not the first one stored."""
    rows = [_row("SciNCL", "csfcube", value) for value in (30.0, 32.0, 34.0)]
    for seed, row in enumerate(rows):
        row["seed"] = seed
    _store("scincl", "real", rows)
    status = book.reproduction_status()
    assert status.loc["SciNCL", "CSFCube test (map_all)"] == "32.00 ± 2.00 (3 seeds) (paper: —) · real data, `real`"
