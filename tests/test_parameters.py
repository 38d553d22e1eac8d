"""sdr.parameters: `-p KEY VALUE` parsed as YAML with errors that name `-p KEY`, and chapter parameter values
checked against the types of the notebook's parameters cell before anything runs."""

from __future__ import annotations

import json
import math

import pytest

from sdr import parameters
from sdr.jsonio import InputError

CELL = """\
n = 5
learning_rate = 2e-5
use_cache = False
name = "smoke"
seeds = [1, 2]
rates = [0.1, 0.5]
names = []
options = {"a": 1}
required = None
folder = Path("x")
mode: Union[bool, str] = False
quoted: "Union[bool, str]" = False  # a string annotation needs no import in the cell
"""


@pytest.fixture()
def specs(tiny_notebook):
    notebook = tiny_notebook("from pathlib import Path\nfrom typing import Union\n" + CELL)
    return notebook, parameters.parameter_specs(notebook, declared={})


@pytest.mark.parametrize("text, value", [
    ("3", 3), ("0.5", 0.5), ("2e-5", 2e-5), ("1.0e-4", 1e-4), ("true", True), ("false", False), ("abc", "abc"),
    ("[1, 2]", [1, 2]), ('"3"', "3"), ("null", None), ("[a, b]", ["a", "b"]),
])
def test_values_are_yaml(text, value):
    assert parameters.parse_value("k", text) == value


@pytest.mark.parametrize("text", ["[1,2", "{a: 1", "'x", "a: b: c", "[1, 2]]"])
def test_invalid_yaml_names_the_parameter_in_one_line(text):
    with pytest.raises(InputError) as caught:
        parameters.parse_value("n", text)
    message = str(caught.value)
    assert message.startswith(f"-p n: {text!r} is not valid YAML (") and "\n" not in message
    assert "at column" in message and "expected a number, true/false, a string or a list" in message


def test_a_key_given_twice_is_an_error():
    assert parameters.parse_overrides([("n", "3"), ("m", "x")]) == {"n": 3, "m": "x"}
    with pytest.raises(InputError, match=r"-p n: given twice"):
        parameters.parse_overrides([("n", "3"), ("n", "4")])


def test_specs_follow_the_defaults_and_annotations(specs):
    _, found = specs
    assert found["n"].types == (int,) and found["learning_rate"].types == (float,)
    assert found["use_cache"].types == (bool,) and found["name"].types == (str,)
    assert found["seeds"].types == (list,) and found["seeds"].element_type is int
    assert found["rates"].element_type is float and found["names"].element_type is None
    assert found["options"].types == (dict,)
    assert found["required"].types is None  # papermill's marker of a value the profile must give
    assert found["folder"].types is None  # an expression: its type is not known before it runs
    assert found["mode"].types == (bool, str)  # the cell's annotation wins over the default
    assert found["quoted"].types == (bool, str)


@pytest.mark.parametrize("key, value", [
    ("n", 7), ("learning_rate", 1e-3), ("learning_rate", 1), ("use_cache", True), ("name", "real"),
    ("seeds", [3]), ("seeds", []), ("rates", [1, 0.5]), ("names", ["x", 2]), ("options", {}),
    ("required", "anything"), ("required", [1]), ("folder", 3), ("mode", "replica"), ("mode", True),
    ("quoted", "replica"),
])
def test_values_that_fit(specs, key, value):
    notebook, found = specs
    parameters.check_values({key: value}, found, notebook, {key: "-p"})


@pytest.mark.parametrize("key, value, reason", [
    ("n", "abc", "'abc' is a str; expected int"),
    ("n", 2.5, "2.5 is a float; expected int"),
    ("n", True, "True is a bool; expected int"),  # a bool is not a number
    ("learning_rate", "fast", "'fast' is a str; expected float"),
    ("learning_rate", math.nan, "nan is a non-finite number; expected float"),
    ("use_cache", 1, "1 is an int; expected bool"),  # 0/1 are not booleans
    ("name", 3, "3 is an int; expected str"),
    ("seeds", 3, "3 is an int; expected list of int"),
    ("seeds", [1, "two"], "[1, 'two'] holds 'two' (a str); expected a list of int"),
    ("options", [1], "[1] is a list; expected dict"),
    ("mode", 3, "3 is an int; expected bool or str"),
])
def test_values_that_do_not_fit_name_the_parameter_and_the_default(specs, key, value, reason):
    notebook, found = specs
    with pytest.raises(InputError) as caught:
        parameters.check_values({key: value}, found, notebook, {key: "-p"})
    message = str(caught.value)
    assert message.startswith(f"-p {key}: {reason} (tiny.ipynb has {key} = ")
    assert message.endswith("; nothing was executed")


def test_every_mismatch_is_listed_with_its_origin(specs):
    notebook, found = specs
    values, origins = parameters.merge_layers([("profile smoke of profiles.yml", {"n": "x", "name": "a"}),
                                               ("-p", {"use_cache": "yes please"})])
    assert origins == {"n": "profile smoke of profiles.yml", "name": "profile smoke of profiles.yml",
                       "use_cache": "-p"}
    with pytest.raises(InputError) as caught:
        parameters.check_values(values | {"unknown": 1}, found, notebook, origins)
    lines = str(caught.value).splitlines()
    assert lines[0] == "2 parameter values do not fit the parameters cell of tiny.ipynb; nothing was executed:"
    assert lines[1].startswith("  n (from profile smoke of profiles.yml): 'x' is a str; expected int")
    assert lines[2].startswith("  -p use_cache: 'yes please' is a str; expected bool")


def test_use_real_data_is_bool_or_auto_in_every_chapter(tiny_notebook):
    notebook = tiny_notebook("use_real_data = False\n")
    found = parameters.parameter_specs(notebook)  # SHARED_TYPES by default
    parameters.check_values({"use_real_data": "auto"}, found, notebook)
    with pytest.raises(InputError, match=r"use_real_data: 3 is an int; expected bool or str"):
        parameters.check_values({"use_real_data": 3}, found, notebook)


def test_a_broken_notebook_is_an_input_error(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text('{"cells": [], "nbformat": 4')
    with pytest.raises(InputError, match=r"broken\.ipynb:1: not valid JSON"):
        parameters.parameter_specs(path)
    path.write_text(json.dumps({"cells": "none", "nbformat": 4, "nbformat_minor": 5, "metadata": {}}))
    with pytest.raises(InputError, match=r"broken\.ipynb: not a valid Jupyter notebook"):
        parameters.parameter_specs(path)
    with pytest.raises(FileNotFoundError, match="chapter notebook not found"):
        parameters.parameter_specs(tmp_path / "absent.ipynb")


def test_every_chapter_and_profile_of_the_book_fits():
    """The real chapters and profiles.yml (and the paper dry run's caps), checked as `chapter_parameters` does."""
    from sdr import book

    profiles = book.load_profiles()
    mismatches = []
    for chapter in profiles["chapters"]:
        notebook = book.NOTEBOOKS / f"{chapter}.ipynb"
        found = parameters.parameter_specs(notebook)
        for profile, spec in profiles["profiles"].items():
            values, origins = parameters.merge_layers([
                (f"profile {profile}", spec.get("parameters")),
                (f"profile {profile}, chapter {chapter}", (spec.get("chapters") or {}).get(chapter))])
            for key, value in values.items():
                if key in found and parameters.mismatch(found[key], value):
                    mismatches.append((chapter, profile, key))
    assert mismatches == []


# ------------------------------------------------------------------------------------ YAML 1.2 and declared rules
@pytest.mark.parametrize("text, value", [
    ("010", 10), ("0o10", 8), ("0x1f", 31), ("5:00", "5:00"), ("yes", "yes"), ("on", "on"), ("2001-12-14", "2001-12-14"),
    ("-3", -3), ("1_000", "1_000"), (".inf", math.inf),
])
def test_values_are_read_with_yaml_1_2_semantics(text, value):
    """YAML 1.1 read `010` as octal 8, `5:00` as the sexagesimal 300 and `yes`/`on` as booleans."""
    assert parameters.parse_value("k", text) == value and type(parameters.parse_value("k", text)) is type(value)


RULES = {"parameter_rules": {"all": {"n": {"min": 1}, "use_real_data": {"choices": [True, False, "auto"]},
                                     "rates": {"above": 0, "below": 1}, "name": {"pattern": "smoke|real"}},
                             "chapter": {"n": {"max": 8}}}}


@pytest.mark.parametrize("values, reason", [
    ({"n": -3}, "-p n: -3 is not at least 1"), ({"n": 9}, "-p n: 9 is not at most 8"),
    ({"use_real_data": "maybe"}, "-p use_real_data: 'maybe' is not one of [True, False, 'auto']"),
    ({"use_real_data": 1}, "is not one of"), ({"rates": [0.5, 1.0]}, "holds 1.0, which is not below 1"),
    ({"name": "smoke; rm"}, "does not match 'smoke|real'"),
])
def test_declared_rules_refuse_values_before_anything_runs(values, reason, tmp_path):
    rules = parameters.parameter_rules("chapter", RULES)
    with pytest.raises(InputError, match="was not executed") as error:
        parameters.check_rules(values, rules, tmp_path / "chapter.ipynb", {key: "-p" for key in values})
    assert reason in str(error.value)
    parameters.check_rules({"n": 8, "use_real_data": "auto", "rates": [0.5], "name": "real"}, rules, "chapter.ipynb")
    with pytest.raises(InputError, match="parameter_rules.all.n: expected a mapping"):
        parameters.parameter_rules("chapter", {"parameter_rules": {"all": {"n": {"minimum": 1}}}})


@pytest.mark.parametrize("key, text, message", [
    ("n", "-3", "-p n: -3 is not at least 1"),
    ("use_real_data", "maybe", "-p use_real_data: 'maybe' is not one of"),
    ("seed", "5:00", "-p seed: '5:00' is a str; expected int"),
])
def test_sdr_chapter_refuses_out_of_range_parameters_without_running_the_notebook(key, text, message, tmp_path):
    """The issue's cases, through the command: exit status 2 with one line, and no .failed notebook."""
    import subprocess
    import sys

    chapter = "cfs3" if key == "n" else "specter"
    completed = subprocess.run([sys.executable, "-m", "sdr.cli", "chapter", chapter, "--profile", "smoke", "-p", key,
                                text, "--output-dir", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2, completed.stderr[-2000:]
    assert message in completed.stderr and "Traceback" not in completed.stderr
    assert not list(tmp_path.glob("*.ipynb"))


def test_every_chapter_and_profile_of_the_book_keeps_the_declared_rules():
    """profiles.yml's values (and the dry run's caps) break no parameter_rules, so every profile still runs."""
    from sdr import book
    from sdr.dryrun import dry_run_overrides

    for chapter in book.chapter_names():
        for profile in ("smoke", "real", "paper"):
            book.chapter_parameters(chapter, profile)
        book.chapter_parameters(chapter, "paper", dry_run_overrides(chapter))
