"""The CoSaEmb chapter's parts, its cost plan, its released checks and its fidelity (issues 30, 32 and 37): the
registry, the plan's lines computed by hand for a small parameter set, and the checks failing on planted faults."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from sdr import book, plan
from sdr.methods import cosaemb


class _Run:
    """The parts of a ChapterRun the steps read: the parameters, ``runs_part`` and the branches taken."""

    def __init__(self, **parameters):
        self.p = SimpleNamespace(**parameters)
        self.branches = []
        self.parts = plan.resolve_parts(getattr(self.p, "parts", "all"), cosaemb.PARTS)

    def runs_part(self, name):
        assert name in cosaemb.PARTS, name
        return name in self.parts

    def branch(self, name):
        self.branches.append(name)


def test_every_margin_setting_belongs_to_a_part_and_the_headline_is_table_6():
    assert set(cosaemb.MARGIN_RUN_PART) == set(cosaemb.MARGIN_RUNS)
    assert set(cosaemb.MARGIN_RUN_PART.values()) <= set(cosaemb.PARTS)
    assert plan.resolve_parts("headline", cosaemb.PARTS) == ("released", "prepare", "main")
    assert [n for n, part in cosaemb.MARGIN_RUN_PART.items() if part == "main"] == ["graded (1, 2, 3)", "flat (1, 1, 1)"]
    # the paper profile runs the headline (one parameter), smoke and real every part, the dry run every part too
    assert book.chapter_parameters("cosaemb", "paper")["parts"] == "headline"
    assert book.chapter_parameters("cosaemb", "smoke").get("parts", "all") == "all"
    from sdr import dryrun
    assert book.chapter_parameters("cosaemb", "paper", dryrun.dry_run_overrides("cosaemb"))["parts"] == "all"


@pytest.mark.parametrize("parts, trained, control", [
    ("all", ["graded (1, 2, 3)", "flat (1, 1, 1)", "graded (2, 4, 6)"], True),
    ("headline", ["graded (1, 2, 3)", "flat (1, 1, 1)"], False),
    (["ablations", "control"], ["graded (2, 4, 6)"], True),
    (["released"], [], False),
])
def test_the_runs_trained_follow_the_parts(parts, trained, control, capsys):
    run = _Run(parts=parts, margin_runs=["graded (1, 2, 3)", "flat (1, 1, 1)", "graded (2, 4, 6)"],
               inter_only_control=True)
    assert cosaemb.trained_margin_runs(run) == trained
    assert cosaemb.trains_control(run) is control
    run.p.inter_only_control = False
    assert cosaemb.trains_control(run) is False
