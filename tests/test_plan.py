"""sdr.plan: the plan a paper chapter prints before training (steps and estimated GPU time)."""

from __future__ import annotations

import pytest

from sdr import plan
from sdr.datasets import ChapterData


def test_measured_throughput_is_the_median_of_the_committed_runs():
    import re

    raw = (plan.PAPER_TABLES.parents[1] / "benchmarks" / "results" / plan.MEASURED_RUNS).read_text()
    section = raw.split("# bench_variants_1.txt", 1)[1].split("# ----", 1)[0]  # the run of the default's commit
    assert "plan: NVIDIA H200 (sm90): packed chunks, variable-length FlashAttention, torch.compile with CUDA graphs" in raw
    runs = [float(x) for x in re.findall(r"run \d, no repeats, sdr.train \[graphs64k\].*?: ([\d.]+) triplets/s", section)]
    assert sorted(runs) == sorted(plan.MEASURED_RUNS_TRIPLETS_PER_S) and "193 tokens per text (mean)" in section
    assert plan.MEASURED_TRIPLETS_PER_S == pytest.approx(1236.3)  # the median of 801.0, 1236.3, 1250.7
    assert plan.MEASURED_TOKENS_PER_S == pytest.approx(1236.3 / 32 * 96 * 193)


def test_estimate_by_hand():
    # 64,000 triplets, 2 epochs, batch 32: 4,000 steps; 64,000 × 2 × 3 texts × 198 tokens on the H200
    estimate = plan.training_estimate(64_000, 2, 32, 3, 198, "NVIDIA H200")
    assert estimate["steps"] == 4_000
    assert estimate["hours"] == pytest.approx(64_000 * 2 * 3 * 198 / (1236.3 / 32 * 96 * 193) / 3600)
    assert "measured" in estimate["how"] and "not measured" not in estimate["how"]
    t4 = plan.training_estimate(64_000, 2, 32, 3, 198, "Tesla T4")
    assert t4["hours"] == pytest.approx(estimate["hours"] * 989 / 65)
    assert "extrapolated" in t4["how"] and "not measured" in t4["how"]
    assert plan.training_estimate(33, 1, 32, 3, 100, "NVIDIA A100-SXM4-40GB")["steps"] == 2  # a partial last batch
    with pytest.raises(ValueError, match="no peak throughput known for 'Mystery GPU'"):
        plan.training_estimate(10, 1, 2, 3, 100, "Mystery GPU")
    with pytest.raises(ValueError, match="must be positive"):
        plan.training_estimate(0, 1, 2, 3, 100, "Tesla T4")


def test_print_plan_lists_inputs_and_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    data = ChapterData("benchmarks", "real", use_real_data=False, workdir=tmp_path)

    def replica(folder):
        (folder / "test.jsonl").write_text("x" * 2048)
        return folder

    data.input("csabstruct", replica=replica)
    estimates = plan.print_plan(data, [dict(name="toy run", examples=320, epochs=1, effective_batch=32,
                                            texts_per_example=3, tokens_per_text=100)], device_name="CPU")
    out = capsys.readouterr().out
    assert "Plan of benchmarks at profile real:" in out and "csabstruct" in out and "2.0 KB" in out
    assert "toy run" in out and "10 steps of 32" in out and out.count("GPU h on") == 2  # H100 and T4 on a CPU
    assert [e["device"] for e in estimates] == [plan.MEASURED_DEVICE, "Tesla T4"]


def test_readme_table_lists_every_chapter_part_by_part():
    """Every chapter of the book: a chapter with a cost plan has one row per part of its registry and the headline
    parts' and whole chapter's totals; one without says so, with the single run the table listed before."""
    from sdr.book.profiles import chapter_names

    table = plan.readme_table()
    planned = plan.plan_chapters()
    assert "benchmarks" in planned and "summary" in planned
    for chapter in chapter_names():
        assert f"| {chapter} |" in table
        if chapter in planned:
            cost = plan.chapter_cost_plan(chapter, "paper")
            for name in [*cost.parts, "**headline parts**", "**whole chapter**"]:
                assert f"| {chapter} | {name} |" in table, (chapter, name)
        else:
            assert f"| {chapter} | — | no cost plan yet" in table


def test_python_m_sdr_plan_prints_the_readme_block(capsys):
    assert plan.main([]) == 0
    assert capsys.readouterr().out.strip() == plan.readme_block().strip()


def test_write_readme_replaces_only_the_generated_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{plan.README_BEGIN}\nstale\n{plan.README_END}\nafter\n")
    assert plan.write_readme(readme) is True
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "stale" not in text
    assert plan.readme_table() in text and plan.write_readme(readme) is False
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="markers"):
        plan.write_readme(readme)


def _paper_namespace(chapter: str) -> dict:
    """What a chapter's ``globals()`` hold after papermill injected its ``paper`` parameters."""
    import nbformat

    from sdr import book

    notebook = nbformat.read(book.NOTEBOOKS / f"{chapter}.ipynb", as_version=4)
    namespace: dict = {}
    exec(next(c.source for c in notebook.cells if "parameters" in c.metadata.get("tags", [])), namespace)
    return {**namespace, **book.chapter_parameters(chapter, "paper")}


@pytest.mark.parametrize("chapter", plan.plan_chapters())
def test_each_chapters_printed_plan_is_its_chapter_cost_plan(chapter, monkeypatch, tmp_path, capsys):
    """What a chapter prints at paper (``run.show_plan()`` on the run its notebook builds from the injected
    parameters) is what ``python -m sdr.plan`` and the README count (``chapter_cost_plan``), and the notebook prints
    it in its first step, before anything is trained or scored."""
    import json

    from sdr import book
    from sdr.datasets import policy

    monkeypatch.setattr(policy.ChapterData, "_prepare", lambda self: None)  # no data needed to print a plan
    monkeypatch.setattr(policy, "_active_policy", policy._active_policy)  # the paper policy ends with the test
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    run = book.ChapterRun(chapter, _paper_namespace(chapter), loads_model=chapter != "summary")
    run.show_plan()
    printed = capsys.readouterr().out
    plan.chapter_cost_plan(chapter, "paper").show()
    assert printed == capsys.readouterr().out and printed.startswith(f"Cost plan of {chapter} at profile paper")
    if plan.chapter_cost_plan(chapter, "paper").work:
        cells = [c for c in json.loads((book.NOTEBOOKS / f"{chapter}.ipynb").read_text())["cells"]
                 if c["cell_type"] == "code" and not {"parameters", "sdr-setup", "sdr-profile"}
                 & set(c["metadata"].get("tags", []))]
        assert "run.show_plan()" in "".join(cells[0]["source"])


def test_the_plan_reads_the_notebooks_default_values_not_their_source_text():
    cost = plan.chapter_cost_plan("benchmarks", "smoke")
    assert cost.profile == "smoke" and cost.selected == tuple(cost.parts)  # the notebook's parts = "all"


def test_parts_resolve_from_names_lists_and_comma_separated_strings():
    parts = {"released": plan.Part("released", "Table 1", headline=True), "main": plan.Part("main", "Table 2"),
             "sweeps": plan.Part("sweeps", "Fig. 2")}
    assert plan.resolve_parts("all", parts) == ("released", "main", "sweeps")
    assert plan.resolve_parts("headline", parts) == ("released",)
    assert plan.resolve_parts("sweeps, released", parts) == ("released", "sweeps")  # the registry's order
    assert plan.resolve_parts(["main"], parts) == ("main",)
    with pytest.raises(ValueError, match="\\['tables'\\] are not parts"):
        plan.resolve_parts("main,tables", parts)


def test_an_empty_plan_and_the_fetch_bandwidth():
    parts = {"tables": plan.Part("tables", "no table", headline=True)}
    empty = plan.CostPlan("summary", "paper", parts, [], ("tables",))
    assert empty.totals().loc["whole chapter"].sum() == 0 and empty.t4_words() == "under a minute"
    fetch = plan.Work("tables", "fetch x", "fetch", download_bytes=5 * 10 ** 9, requests=360, requests_per_s=1.0,
                      bytes_per_s=50e6)
    assert fetch.other_hours() == pytest.approx((5e9 / 50e6 + 360) / 3600)
    assert plan.Work("tables", "fetch y", "fetch", requests=3600).other_hours() == pytest.approx(1.0)


def test_colab_t4_words_count_sessions_of_twelve_hours():
    assert plan.colab_t4_words(0.0) == "under a minute"
    assert plan.colab_t4_words(0.5) == "≈ 30 min: one session"
    assert plan.colab_t4_words(11.0, 0.5) == "≈ 12 h: one session"
    assert plan.colab_t4_words(17.2).startswith("≈ 17 h: 2 sessions of 12 h")
    assert plan.colab_t4_words(660).endswith("more than Colab is made for (a workstation GPU)")
