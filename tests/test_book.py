"""Tests of :mod:`sdr.book` (profiles, papermill runs, results store, paper tables) and ``sdr chapter``.

Everything runs on temporary files: a profiles file and a tiny notebook with a ``parameters`` cell written
with nbformat; the module-level locations (``NOTEBOOKS``, ``PROFILES_FILE``, ``PAPER_TABLES``, ``ROOT``)
are monkeypatched, which also checks that ``sdr.book`` looks them up when called, not when imported.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdr import book

PARAMETERS_CELL = 'a = 1\nb = 1\nc = 1\nd = None\nlabel = "notebook"\n'
BODY_CELL = (
    "import json\n"
    "from pathlib import Path\n"
    "Path('ran.txt').write_text(label)  # relative: lands in the working directory papermill was given\n"
    "print(json.dumps({'a': a, 'b': b, 'c': c, 'd': d, 'label': label}))\n"
)
PROFILES = """
chapters: [tiny, other]
profiles:
  smoke:
    parameters: {b: 2, c: 2, d: 2}
    chapters:
      tiny: {c: 3, d: 3}
  bare:
    parameters: {label: bare}
"""


@pytest.fixture()
def book_root(tmp_path, tiny_notebook, monkeypatch) -> Path:
    """A temporary book: profiles.yml, notebooks/tiny.ipynb; sdr.book pointed at it."""
    (tmp_path / "profiles.yml").write_text(PROFILES)
    tiny_notebook(PARAMETERS_CELL, BODY_CELL, name="tiny", folder=tmp_path / "notebooks")
    monkeypatch.setattr(book, "ROOT", tmp_path)
    monkeypatch.setattr(book, "NOTEBOOKS", tmp_path / "notebooks")
    monkeypatch.setattr(book, "PROFILES_FILE", tmp_path / "profiles.yml")
    monkeypatch.setattr(book, "CHAPTERS_OUT", tmp_path / "book" / "chapters")
    return tmp_path


# ------------------------------------------------------------------------------------------ parameters
def test_notebook_parameters_reads_the_parameters_cell(book_root):
    defaults = book.notebook_parameters(book_root / "notebooks" / "tiny.ipynb")
    # papermill reports the defaults as source text
    assert defaults == {"a": "1", "b": "1", "c": "1", "d": "None", "label": '"notebook"'}


def test_notebook_without_parameters_cell_is_an_error(tmp_path):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("x = 1")]
    path = tmp_path / "untagged.ipynb"
    nbformat.write(notebook, path)
    with pytest.raises(ValueError, match="untagged.ipynb: no cell tagged 'parameters'"):
        book.notebook_parameters(path)
    with pytest.raises(FileNotFoundError, match="missing.ipynb: chapter notebook not found"):
        book.notebook_parameters(tmp_path / "missing.ipynb")


def test_merge_order_notebook_profile_chapter_overrides(book_root):
    # notebook a=b=c=1, d=None  <  profile b=c=d=2  <  chapter block c=d=3  <  overrides d=4
    assert book.chapter_parameters("tiny", "smoke") == {"b": 2, "c": 3, "d": 3}
    assert book.chapter_parameters("tiny", "smoke", {"d": 4}) == {"b": 2, "c": 3, "d": 4}
    assert book.chapter_parameters("tiny", "smoke", {"b": 9, "a": 0}) == {"a": 0, "b": 9, "c": 3, "d": 3}
    # 'a' is left out: the notebook's own default applies (checked end to end in the papermill test)


def test_explicit_profiles_path_and_notebook(book_root, tmp_path_factory, tiny_notebook):
    other = tmp_path_factory.mktemp("elsewhere")
    profiles = other / "other-profiles.yml"
    profiles.write_text("chapters: [tiny]\nprofiles:\n  smoke:\n    parameters: {b: 5}\n"
                        "    chapters:\n      tiny: {d: 6}\n")
    notebook = tiny_notebook("b = 0\nd = None\nextra = 1\n", name="custom", folder=other)
    assert book.chapter_parameters("tiny", "smoke", profiles_path=profiles, notebook=notebook) == {"b": 5, "d": 6}
    with pytest.raises(ValueError, match=r"custom.ipynb: parameters \['c'\]"):
        # the default profiles file's chapter block sets c, which this notebook does not define
        book.chapter_parameters("tiny", "smoke", notebook=notebook)
    with pytest.raises(ValueError, match="other-profiles.yml"):  # errors name the file actually read
        book.chapter_parameters("tiny", "nope", profiles_path=profiles, notebook=notebook)


def test_unknown_key_names_the_key_and_the_notebook(book_root):
    with pytest.raises(ValueError) as error:
        book.chapter_parameters("tiny", "smoke", {"seeed": 1})
    assert "['seeed']" in str(error.value) and "tiny.ipynb" in str(error.value)
    assert "defines ['a', 'b', 'c', 'd', 'label']" in str(error.value)


def test_missing_required_value_is_an_error(book_root):
    # profile 'bare' sets only label; the notebook's d defaults to None (= required)
    with pytest.raises(ValueError, match=r"tiny.ipynb: parameters \['d'\] have no value"):
        book.chapter_parameters("tiny", "bare")
    assert book.chapter_parameters("tiny", "bare", {"d": 1}) == {"label": "bare", "d": 1}


def test_unknown_profile_or_chapter_is_an_error(book_root):
    with pytest.raises(ValueError, match=r"unknown profile 'gpu'; .*profiles.yml defines \['bare', 'smoke'\]"):
        book.chapter_parameters("tiny", "gpu")
    with pytest.raises(ValueError, match=r"unknown chapter 'nope'; .*lists \['tiny', 'other'\]"):
        book.chapter_parameters("nope", "smoke")
    # listed in profiles.yml but without a notebook
    with pytest.raises(FileNotFoundError, match="other.ipynb: chapter notebook not found"):
        book.chapter_parameters("other", "smoke")
    assert book.chapter_names() == ["tiny", "other"]


def test_bad_profiles_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.yml: profiles file not found"):
        book.load_profiles(tmp_path / "nowhere.yml")
    (tmp_path / "broken.yml").write_text("profiles: [unclosed\n")
    with pytest.raises(ValueError, match=r"broken.yml:\d+: not valid YAML"):
        book.load_profiles(tmp_path / "broken.yml")
    (tmp_path / "flat.yml").write_text("smoke: {}\n")
    with pytest.raises(ValueError, match="expected top-level keys 'chapters' and 'profiles'"):
        book.load_profiles(tmp_path / "flat.yml")


def test_the_repository_profiles_file_is_valid():
    profiles = book.load_profiles(book.PROFILES_FILE)
    assert {"smoke", "real", "paper"} <= set(profiles["profiles"])
    for name, spec in profiles["profiles"].items():
        assert spec["parameters"]["profile"] == name  # a chapter knows which profile it runs at
        assert set(spec.get("chapters") or {}) <= set(profiles["chapters"]), name


@pytest.mark.parametrize("text, value", [("3", 3), ("0.5", 0.5), ("1e-5", 1e-5), ("-2E+3", -2000.0),
                                         ("1.5e-3", 1.5e-3), ("1e", "1e"), ("true", True),
                                         ("false", False), ("null", None), ("minilm", "minilm"),
                                         ("'3'", "3"), ("[1, 2]", [1, 2]), ("allenai/specter", "allenai/specter")])
def test_parse_value_reads_yaml_scalars(text, value):
    parsed = book.parse_value(text)
    assert parsed == value and type(parsed) is type(value)


def test_profiles_read_exponent_floats(tmp_path):
    """PyYAML (YAML 1.1) would read ``2e-5`` as the string '2e-5'; a learning rate must be a float."""
    (tmp_path / "p.yml").write_text("chapters: [x]\nprofiles:\n  s: {parameters: {learning_rate: 2e-5, n: 3}}\n")
    parameters = book.load_profiles(tmp_path / "p.yml")["profiles"]["s"]["parameters"]
    assert parameters == {"learning_rate": 2e-5, "n": 3} and isinstance(parameters["learning_rate"], float)


# ------------------------------------------------------------------------------------------ papermill
def test_run_chapter_executes_the_notebook_with_injected_parameters(book_root):
    import nbformat

    output = book.run_chapter("tiny", "smoke", {"d": 4}, output_dir=book_root / "out", progress=False)
    assert output == book_root / "out" / "tiny.ipynb"
    executed = nbformat.read(output, as_version=4)
    injected = [cell for cell in executed.cells if "injected-parameters" in cell.metadata.get("tags", [])]
    assert len(injected) == 1
    for line in ("b = 2", "c = 3", "d = 4"):
        assert line in injected[0].source
    assert "a = " not in injected[0].source  # the notebook default is not re-injected
    printed = "".join(out.get("text", "") for out in executed.cells[-1].outputs)
    assert json.loads(printed) == {"a": 1, "b": 2, "c": 3, "d": 4, "label": "notebook"}
    assert (book_root / "ran.txt").read_text() == "notebook"  # executed with cwd = book.ROOT


# ------------------------------------------------------------------------------------------ CLI
@pytest.fixture()
def chapter_cli(monkeypatch):
    """``sdr.cli.main`` with only the chapter command registered (isolates it from other sub-commands)."""
    from sdr import cli

    monkeypatch.setattr(cli, "COMMAND_MODULES", ("sdr.book",))
    return cli.main


def test_cli_unknown_chapter_exits_2_with_message(chapter_cli, capsys):
    assert chapter_cli(["chapter", "no-such-chapter", "--profile", "smoke"]) == 2
    captured = capsys.readouterr()
    assert "sdr chapter: error: unknown chapter 'no-such-chapter'" in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_cli_chapter_needs_a_name_or_all(chapter_cli, capsys):
    assert chapter_cli(["chapter"]) == 2
    assert "give a chapter NAME or --all" in capsys.readouterr().err
    assert chapter_cli(["chapter", "specter", "--all"]) == 2


def test_cli_unknown_override_exits_2(chapter_cli, book_root, capsys):
    assert chapter_cli(["chapter", "tiny", "-p", "seeed", "1"]) == 2
    assert "['seeed']" in capsys.readouterr().err


def test_cli_parser_registers_every_command():
    """The real ``sdr`` parser builds: every module of ``COMMAND_MODULES`` imports and registers."""
    from sdr import cli

    parser = cli.build_parser()
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps sub-parsers here
    assert {"chapter", "evaluate", "embed"} <= set(commands)
    assert "all" in commands["evaluate"]._subparsers._group_actions[0].choices  # sdr evaluate all


# ------------------------------------------------------------------------------------------ results store
def test_results_dir_follows_sdr_results_at_call_time(tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "first"))
    assert book.results_dir() == tmp_path / "first"
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "second"))
    assert book.results_dir() == tmp_path / "second"


def test_save_and_load_results_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    scores = pd.DataFrame({"mag_f1": [81.25, np.nan], "queries": [30, 12], "note": ["x", "y"]},
                          index=["ours-minilm", "ours-specter"])
    path = book.save_results("specter", "smoke", {"scidocs": scores}, ["synthetic corpus"],
                             extra={"seconds": np.float32(1.5), "steps": np.int64(7), "tags": ("a", "b")})
    assert path == tmp_path / "results" / "specter" / "smoke.json"
    book.save_results("specter", "real", {"scidocs": scores.iloc[:1]}, ["SciDocs ($SDR_DATA)"])
    book.save_results("cfs3", "smoke", {}, [])

    records = book.load_results("specter", "smoke")
    assert len(records) == 1
    record = records[0]
    assert (record["chapter"], record["profile"], record["sources"]) == ("specter", "smoke", ["synthetic corpus"])
    pd.testing.assert_frame_equal(record["tables"]["scidocs"], scores)
    assert record["extra"] == {"seconds": 1.5, "steps": 7, "tags": ["a", "b"]}
    assert {(r["chapter"], r["profile"]) for r in book.load_results()} == \
        {("cfs3", "smoke"), ("specter", "real"), ("specter", "smoke")}
    assert [r["profile"] for r in book.load_results("specter")] == ["real", "smoke"]
    assert [r["chapter"] for r in book.load_results(profile="smoke")] == ["cfs3", "specter"]
    assert json.loads(path.read_text())["python"]  # the environment is recorded


# ------------------------------------------------------------------------------------------ paper tables
PAPER_CSV = """# a comment line explaining where the numbers come from
source,table,model,mag_f1,avg,note
SciNCL,Table 1,SPECTER,82.0,80.0,quoted
SciNCL,Table 1,SciNCL,81.4,81.8,
"""


def test_read_paper_table_and_its_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(book, "PAPER_TABLES", tmp_path)
    (tmp_path / "good.csv").write_text(PAPER_CSV)
    (tmp_path / "bad.csv").write_text("paper,model,mag_f1\nSciNCL,SPECTER,82.0\n")
    table = book.read_paper_table("good")
    assert table["model"].tolist() == ["SPECTER", "SciNCL"] and table["mag_f1"].tolist() == [82.0, 81.4]
    with pytest.raises(FileNotFoundError, match=r"missing.csv: no such paper table; have \['bad', 'good'\]"):
        book.read_paper_table("missing")
    with pytest.raises(ValueError, match=r"bad.csv: expected columns \['model', 'source', 'table'\]"):
        book.read_paper_table("bad")


def test_paper_vs_ours_stacks_rows_with_their_origin(tmp_path, monkeypatch):
    monkeypatch.setattr(book, "PAPER_TABLES", tmp_path)
    (tmp_path / "good.csv").write_text(PAPER_CSV)
    ours = pd.DataFrame({"mag_f1": [70.5], "avg": [60.25], "extra": [1]}, index=["MiniLM (ours)"])
    table = book.paper_vs_ours(ours, book.read_paper_table("good"), ["mag_f1", "avg"], "this book, smoke")
    assert list(table.columns) == ["reported by", "model", "mag_f1", "avg"]
    assert table["reported by"].tolist() == ["SciNCL, Table 1", "SciNCL, Table 1", "this book, smoke"]
    assert table["model"].tolist() == ["SPECTER", "SciNCL", "MiniLM (ours)"]
    assert table["mag_f1"].tolist() == [82.0, 81.4, 70.5] and table["avg"].tolist() == [80.0, 81.8, 60.25]


def test_caption_names_profile_and_sources():
    assert book.caption("real", ["SciDocs ($SDR_DATA)", "synthetic corpus"]) == \
        "Profile: real · Data: SciDocs ($SDR_DATA); synthetic corpus"
    assert book.caption("smoke", []) == "Profile: smoke · Data: none"


def test_scidocs_row_averages_all_twelve_or_nothing():
    tasks = {"mag": {"f1": 80.0}, "mesh": {"f1": 90.0},
             "co-view": {"map": 70.0, "ndcg": 85.0}, "co-read": {"map": 72.0, "ndcg": 86.0},
             "cite": {"map": 88.0, "ndcg": 94.0}, "co-cite": {"map": 87.0, "ndcg": 93.0},
             "recomm": {"adj-NDCG": 53.0, "adj-P@1": 20.0}}
    row = book.scidocs_row(tasks)
    assert row["mag_f1"] == 80.0 and row["recomm_p1"] == 20.0 and row["cocite_ndcg"] == 93.0
    assert row["avg"] == pytest.approx(918.0 / 12)  # 80+90+70+85+72+86+88+94+87+93+53+20 = 918
    del tasks["recomm"]
    partial = book.scidocs_row(tasks)
    assert math.isnan(partial["recomm_ndcg"]) and math.isnan(partial["avg"])  # never a partial mean


def test_results_store_round_trips_multiindex_tables(tmp_path, monkeypatch):
    """Tables with MultiIndex rows or columns (CoSaEmb's counts, the splitter's scores) come back as stored."""
    import pandas as pd

    monkeypatch.setenv("SDR_RESULTS", str(tmp_path))
    table = pd.DataFrame([[1, 2, 3, 4], [5, 6, 7, 8]],
                         index=pd.MultiIndex.from_tuples([("a", "x"), ("b", "y")]),
                         columns=pd.MultiIndex.from_tuples([("m", "1"), ("m", "2"), ("n", "1"), ("n", "2")]))
    flat = pd.DataFrame({"score": [0.5, 0.25]}, index=["p", "q"])
    book.save_results("roundtrip", "smoke", {"multi": table, "flat": flat}, ["test"])
    restored = book.load_results("roundtrip", "smoke")[0]["tables"]
    pd.testing.assert_frame_equal(restored["multi"], table)
    pd.testing.assert_frame_equal(restored["flat"], flat)


# ------------------------------------------------------------------------------------------ seeds and intervals
def _store(tmp_path, chapter, rows):
    book.save_results(chapter, "real", {}, ["test"], extra={"leaderboard": rows})


def test_headline_table_means_over_seeds_and_paired_intervals(tmp_path, monkeypatch):
    import numpy as np

    monkeypatch.setenv("SDR_RESULTS", str(tmp_path))
    rng = np.random.default_rng(0)
    groups = [[f"q{i}" for i in range(20)], [f"q{i}" for i in range(20, 40)]]
    base = {f"q{i}": float(x) for i, x in enumerate(rng.uniform(20, 40, 40))}

    def row(method, per_query, **kw):
        from sdr.stats import grouped_mean

        return book.leaderboard_row(method, "csfcube", {"map_all": grouped_mean(per_query, groups)}, data="real",
                                    base_model="all-MiniLM-L6-v2", per_query=per_query, query_groups=groups,
                                    input_tokens=48, **kw)

    rows = [row("untrained", base, training="none")]
    for seed in range(3):  # +3 MAP on every query, seed noise ±0.5
        shift = 3.0 + float(rng.normal(0, 0.5))
        rows.append(row("trained", {k: min(100.0, v + shift + float(rng.normal(0, 1))) for k, v in base.items()},
                        seed=seed,
                        reference="untrained", training="1 epoch, 10 steps × 16 triplets"))
    rows.append(row("noise", {k: v + float(rng.normal(0, 3)) for k, v in base.items()}, seed=0, reference="untrained",
                    training="1 epoch"))
    _store(tmp_path, "toy", rows)
    table = book.headline_table("csfcube", "real").set_index("method")
    assert table.loc["trained", "seeds"] == 3 and table.loc["trained", "sd"] > 0
    trained = table.loc["trained"]
    assert trained["excludes_zero"] and 2.0 < trained["low"] < trained["difference"] < trained["high"] < 4.0
    assert not table.loc["noise", "excludes_zero"] and pd.isna(table.loc["untrained", "difference"])
    shown = book.headline_display(book.headline_table("csfcube", "real"), "csfcube")
    assert list(shown.columns) == ["system", "map_all", "Δ vs its untrained encoder [95 % CI]", "p (Holm)",
                                   "Δ vs best untrained [95 % CI]", "training"]
    by_system = shown.set_index("system")
    assert by_system.loc["trained", "map_all"].endswith("(3 seeds)")
    assert by_system.loc["untrained", "p (Holm)"] == "—" and float(by_system.loc["trained", "p (Holm)"]) < 0.05
    assert by_system.loc["trained", "Δ vs best untrained [95 % CI]"].startswith("+")
    detail = book.leaderboard_table("csfcube", "real")
    assert detail.index.is_unique and detail.loc["trained", "seeds"] == 3


def test_leaderboard_row_checks_per_query_values_against_the_headline():
    with pytest.raises(ValueError, match="per-query values average to"):
        book.leaderboard_row("x", "csfcube", {"map_all": 50.0}, data="real", base_model="b", training="none",
                             per_query={"a": 10.0, "b": 20.0})
    with pytest.raises(ValueError, match="seed must be an integer"):
        book.leaderboard_row("x", "csfcube", {"map_all": 15.0}, data="real", base_model="b", training="none", seed="1")


def test_the_caption_under_a_figure_is_wrapped_to_the_figure_width():
    """A caption line wider than its figure widens the saved image and shrinks the plot on the page."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sdr.book.figures import caption_under

    figure, axis = plt.subplots(figsize=(6, 4))
    axis.plot([0, 1], [0, 1])
    text = caption_under("Profile: smoke · Data: " + "a synthetic corpus of 400 papers, seed 0 [replica]; " * 8, -0.04)
    figure.canvas.draw()
    extent = text.get_window_extent()
    assert text.get_text().count("\n") >= 3 and extent.width <= figure.bbox.width
    plt.close(figure)
