"""The README's generated tables stay true: what each chapter reads at paper, and the paper-scale GPU estimates."""

from __future__ import annotations

from pathlib import Path

from sdr import datasets, plan

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_readme_lists_what_each_chapter_reads_at_paper():
    assert datasets.paper_data_markdown() in README


def test_readme_plan_table_is_what_sdr_plan_prints():
    """The README holds ``python -m sdr.plan``'s output (regenerate it with ``python -m sdr.plan --write-readme``)."""
    assert plan.readme_table() in README
    assert plan.readme_block() in README


def test_readme_starts_with_the_two_commands():
    head = README.split("\n```", 2)[1]
    assert "make book" in head and "make test" in head
