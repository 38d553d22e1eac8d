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
        self.data = SimpleNamespace(policy=SimpleNamespace(real_only=getattr(self.p, "profile", "") == "paper"))
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


# ------------------------------------------------------------------------------------------------ the cost plan
SMALL = dict(profile="smoke", parts="all", margin_runs=["graded (1, 2, 3)", "graded (2, 4, 6)"], inter_only_control=True,
             max_triplets=320, both_directions=False, epochs=1, batch_size=16, accumulation_steps=2, max_length=64,
             leaderboard_seeds=3, csfcube_models=["graded (1, 2, 3)"], scirepeval_models=["untrained", "graded (1, 2, 3)"],
             paragraph_papers=40, heldout_triplets=100, csfcube_max_length=32, specter_model="",
             sentence_splitter="regex")


def test_the_plan_of_a_small_parameter_set_by_hand():
    cost = cosaemb.cost_plan(SimpleNamespace(**SMALL))
    lines = {w.what: w for w in cost.work}
    graded = lines["train graded (1, 2, 3)"]
    # 320 triplets (max_triplets), 1 epoch of batches of 16 × 2: 10 steps; a text: Tables 2-3's kinds with chunks of
    # 0.85 × 64 tokens and abstracts cut at 64: (1255714 × 172.8 + 343153 × 182.4 + 684100 × 192) / (3 × 2282967)
    assert (graded.part, graded.examples, graded.steps, graded.runs) == ("main", 320, 10, 1)
    assert graded.tokens_per_text == pytest.approx(59.9988, abs=1e-4)
    h100 = plan.MEASURED_DEVICE
    assert graded.gpu_hours(h100) == pytest.approx(320 * 3 * 59.9988 / plan.MEASURED_TOKENS_PER_S / 3600, rel=1e-5)
    assert lines["train graded (2, 4, 6)"].part == "ablations"
    control = lines["train inter-document only"]
    assert (control.part, control.examples, control.tokens_per_text) == ("control", 320, 64)
    seeds = lines["train further seeds (graded (1, 2, 3))"]
    assert (seeds.part, seeds.runs, seeds.examples) == ("seeds", 2, 320)  # leaderboard_seeds 3: two more runs
    assert seeds.gpu_hours(h100) == pytest.approx(2 * graded.gpu_hours(h100))
    # the paragraph set: 40 papers × Table 2's 343153 aspect texts over 97402 papers = 141 texts at 64 tokens, and the
    # 300 texts of the 100 held-out triplets at the training mean
    untrained = lines["encode held-out triplets and paragraph set (untrained)"]
    assert (untrained.part, untrained.texts) == ("prepare", 141 + 300)
    assert untrained.tokens_per_text == pytest.approx((141 * 64 + 300 * 59.9988) / 441, abs=1e-3)
    assert lines["paragraph distances (untrained)"].other_hours() == pytest.approx(2 * 141 ** 2 * 768 / 1e10 / 3600)
    scirepeval = lines["encode SciRepEval (graded (1, 2, 3))"]
    assert (scirepeval.texts, scirepeval.tokens_per_text) == (1_140_000, 32)  # cut at csfcube_max_length
    assert "encode SciRepEval (graded (2, 4, 6))" not in lines and "encode CSFCube (untrained)" not in lines
    # the fetches: S2ORC's ~ 250 GB at 50 MB/s plus 31 requests at 1 a second
    s2orc = lines["fetch s2orc_specter (S2ORC streamed, SPECTER's papers kept)"]
    assert s2orc.other_hours() == pytest.approx(250e9 / 50e6 / 3600 + 31 / 3600)
    split = lines["split the full text into sentences (regex) and chunk it"]
    assert split.other_hours() == pytest.approx((1255714 + 343153) * 0.85 * 64 * 5.18 / 19_600_000 / 3600)
    # totals: the parts' sums, everything selected at parts = "all"
    totals = cost.totals()
    assert totals.loc["seeds", plan._hours_label(plan.MEASURED_DEVICE)] == pytest.approx(sum(w.gpu_hours(h100) for w in cost.work
                                                                  if w.part == "seeds"))
    assert totals.loc["selected parts", plan._hours_label(plan.MEASURED_DEVICE)] == pytest.approx(totals.loc["whole chapter", plan._hours_label(plan.MEASURED_DEVICE)])
    headline = cosaemb.cost_plan(SimpleNamespace(**{**SMALL, "parts": "headline"}))
    assert headline.selected == ("released", "prepare", "main")
    assert headline.total_hours(selected_only=True) == pytest.approx(
        sum(w.gpu_hours(h100) for w in cost.work if w.part in ("released", "prepare", "main")))
    ablations = cosaemb.cost_plan(SimpleNamespace(**{**SMALL, "parts": ["ablations"]}))
    assert ablations.selected == ("prepare", "ablations")  # prepare runs whatever parts say (ALWAYS_RUN)


def test_each_parts_lines_follow_the_registry():
    cost = plan.chapter_cost_plan("cosaemb", "paper", {"parts": "all", "leaderboard_seeds": 2})
    parts = {w.part for w in cost.work}
    assert parts == set(cosaemb.PARTS)
    trained = {w.what.removeprefix("train "): w.part for w in cost.work if w.kind == "train" and "further" not in w.what}
    assert trained == {**cosaemb.MARGIN_RUN_PART, cosaemb.CONTROL: "control"}
    released = [w for w in cost.work if w.part == "released"]
    assert {w.what for w in released} == {f"encode CSFCube with {c.model} (released, {c.max_length} tokens)"
                                          for c in cosaemb.RELEASED_CHECKS}
    assert all(w.kind in ("encode",) for w in released) and all(w.part == "prepare" for w in cost.work
                                                                if w.kind in ("fetch", "prepare"))
    # at the paper's sizes: every triplet of Tables 2-3 (2,282,967), 2 epochs of 32: 142,686 steps a run
    graded = next(w for w in cost.work if w.what == "train graded (1, 2, 3)")
    assert (graded.examples, graded.steps) == (2_282_967, 142_686)


def test_the_t4_notes_hold_against_the_plan():
    """PARTS' words for a Colab T4 user agree with the plan's T4 hours at paper (12-hour sessions)."""
    cost = plan.chapter_cost_plan("cosaemb", "paper", {"parts": "all"})
    t4 = "Tesla T4"
    hours = {name: sum(w.gpu_hours(t4) for w in cost.work if w.part == name) for name in cosaemb.PARTS}
    session = cosaemb.COLAB_SESSION_HOURS
    assert hours["released"] < 0.5 and "minutes" in cosaemb.PARTS["released"].t4
    assert hours["prepare"] < session and "one session" in cosaemb.PARTS["prepare"].t4
    for name, words in (("main", "several"), ("ablations", "several"), ("control", "two")):
        runs = [w for w in cost.work if w.part == name and w.kind == "train"]
        sessions = {math.ceil(w.gpu_hours(t4) / session) for w in runs}
        assert runs and (sessions == {2} if words == "two" else min(sessions) > 2), (name, sessions)
        assert f"{words} 12-hour sessions" in cosaemb.PARTS[name].t4
    assert hours["seeds"] == 0 and "nothing at the paper profile" in cosaemb.PARTS["seeds"].t4


def test_the_chapter_prints_its_plan_before_training():
    source = (book.NOTEBOOKS / "cosaemb.ipynb").read_text()
    assert source.index("run.show_plan()") < source.index("cosaemb.train_margin_runs(")


# ------------------------------------------------------------------------------------------------ released models
def test_the_released_checks_read_the_papers_rows():
    values = __import__("sdr.released", fromlist=["x"]).expected_values(cosaemb.RELEASED_CHECKS)
    assert values[("allenai/specter", "csfcube", "ndcg%20_all")] == 53.31  # Table 4, SPECTER, aggregated NDCG%20
    assert values[("allenai/specter", "csfcube", "rp_background")] == 26.48
    assert values[("allenai/scibert_scivocab_uncased", "csfcube", "rp_all")] == 12.32
    asserted = [(c.model, m) for c in cosaemb.RELEASED_CHECKS if c.tolerance is not None for m in c.metrics]
    assert asserted == [("allenai/specter", "ndcg%20_all")]  # the one cell that is SPECTER's published value
    assert all(c.unasserted_because for c in cosaemb.RELEASED_CHECKS if c.tolerance is None)
    for check in cosaemb.RELEASED_CHECKS:  # each model the chapter reads at paper, so the dry run has its stand-in
        assert check.model in {*__import__("sdr.datasets", fromlist=["x"]).CHAPTER_MODELS["cosaemb"],
                               "allenai/scibert_scivocab_uncased"}


class _ReleasedRun(_Run):
    def __init__(self, mirror):
        super().__init__(parts="all", device="cpu")
        folders = {c.model: str(mirror / "models" / __import__("sdr.synthetic.models", fromlist=["x"]).folder_name(
            c.model)) for c in cosaemb.RELEASED_CHECKS}
        self.data = SimpleNamespace(policy=SimpleNamespace(real_only=True), model=folders.__getitem__,
                                    model_sources=[])

    def caption(self, *extra):
        return "caption"


@pytest.fixture(scope="module")
def released_mirror(tmp_path_factory, synthetic_corpus):
    """Stand-ins of SPECTER and SciBERT, a CSFCube replica, and the expected values the dry run computes for them."""
    from sdr import dryrun
    from sdr.synthetic.csfcube import write_csfcube
    from sdr.synthetic.models import folder_name, write_stand_in

    mirror = tmp_path_factory.mktemp("mirror")
    texts = [f"{p.title} {p.abstract}" for p in synthetic_corpus.papers.values()]
    for number, check in enumerate(dict.fromkeys(c.model for c in cosaemb.RELEASED_CHECKS)):
        write_stand_in(mirror / "models" / folder_name(check), check, texts, layers=1, hidden=16, seed=number)
    csfcube = write_csfcube(synthetic_corpus, mirror / "csfcube", n_queries=6, pool_size=30, seed=0)
    dryrun.write_released_expected(mirror, cosaemb.RELEASED_CHECKS, {"csfcube": csfcube})
    return mirror, csfcube


def test_the_released_part_runs_first_and_a_planted_mismatch_stops_it(released_mirror, tmp_path, monkeypatch, capsys):
    import json

    from sdr import datasets, released

    mirror, csfcube = released_mirror
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")
    monkeypatch.setenv("SDR_DATA", str(mirror))
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    run = _ReleasedRun(mirror)
    table = released.released_part(run, cosaemb.RELEASED_CHECKS, {"csfcube": csfcube})
    assert len(table) == 2 * 16 and table["holds"].tolist().count(True) == 1  # one asserted cell, 31 shown
    assert (table["difference"].abs() < 1e-3).all() and run.branches == ["released checks asserted"]
    assert set(table.loc[table["holds"].isna(), "why unasserted"].str[:20]) == {
        "the paper does not s"}
    _specter_key = released.expected_key(next(c for c in cosaemb.RELEASED_CHECKS if c.model == "allenai/specter"
                                              and "ndcg%20_all" in c.metrics), "ndcg%20_all")
    planted = tmp_path / "planted"
    (planted / "models").mkdir(parents=True)
    for folder in (mirror / "models").iterdir():
        (planted / "models" / folder.name).symlink_to(folder)
    expected = json.loads((mirror / released.EXPECTED_FILE).read_text())
    expected[_specter_key] += 0.4
    (planted / released.EXPECTED_FILE).write_text(json.dumps(expected))
    monkeypatch.setenv("SDR_DATA", str(planted))
    with pytest.raises(book.ChapterCheckFailed, match=r"allenai/specter on csfcube, ndcg%20_all: .*tolerance ±0.3"):
        released.released_part(_ReleasedRun(planted), cosaemb.RELEASED_CHECKS, {"csfcube": csfcube})
    expected[_specter_key] -= 0.4
    expected[released.expected_key(next(c for c in cosaemb.RELEASED_CHECKS if c.model == "allenai/specter"
                                        and "rp_all" in c.metrics), "rp_all")] += 5  # an unasserted cell: shown, never a failure
    (planted / released.EXPECTED_FILE).write_text(json.dumps(expected))
    table = released.released_part(_ReleasedRun(planted), cosaemb.RELEASED_CHECKS, {"csfcube": csfcube})
    assert table["cached"].all()  # the second pass read its vectors back


def test_the_released_part_is_the_chapters_first_output():
    import json

    cells = [("".join(c["source"])) for c in json.loads((book.NOTEBOOKS / "cosaemb.ipynb").read_text())["cells"]
             if c["cell_type"] == "code" and not {"parameters", "sdr-setup", "sdr-profile"}
             & set(c["metadata"].get("tags", []))]
    assert "released_part(run, cosaemb.RELEASED_CHECKS" in cells[1] and "run = book.ChapterRun(" in cells[0]


# ------------------------------------------------------------------------------------------------ fidelity
def _leakage_setting():
    from sdr.corpus import Paper
    from sdr.samplers import Triplet

    papers = {pid: Paper(pid, f"Title {pid}", "An abstract.", metadata={"corpus_id": pid, "sha": f"sha-{pid}"})
              for pid in ("1", "2", "3", "4", "5")}
    source = SimpleNamespace(papers=papers)
    built = SimpleNamespace(triplets=[Triplet("1#method.1", "1#method.0", "2", "local"),
                                      Triplet("3", "4", "5", "inter")])
    split = SimpleNamespace(papers=["9"])
    csfcube = SimpleNamespace(papers={"4": None, "77": None})
    scirepeval = SimpleNamespace(task_ids={"SciDocs Cite": ("scidocs", {"sha-2", "sha-3", "x"}),
                                           "SciDocs MAG": ("scidocs", {"y"}), "Search": ("out_of_train", {"5", "z"})})
    return source, split, built, csfcube, scirepeval


def test_the_leakage_audit_counts_trained_papers_in_each_set_by_either_id():
    source, split, built, csfcube, scirepeval = _leakage_setting()
    run = _Run()
    leakage = cosaemb.leakage_audit(run, source, split, built, csfcube, scirepeval)
    table = leakage.table.set_index("eval_set")
    assert table.loc["SciRepEval: SciDocs tasks", ["size", "shared", "shared by sha", "shared by corpus id"]].tolist() \
        == [4, 2, 2, 0]  # papers 2 and 3 by their SciDocs sha
    assert table.loc["SciRepEval: the other tasks", "shared"] == 1 and table.loc["CSFCube", "shared"] == 1
    assert leakage.trained_papers == 5 and run.branches == ["leakage audited"]
    split.papers = ["1"]  # a held-out paragraph paper whose sections are trained on
    with pytest.raises(book.ChapterCheckFailed, match="held-out paragraph papers whose sections are trained on"):
        cosaemb.leakage_audit(run, source, split, built, csfcube, scirepeval)


def _fidelity_run(**changes):
    values = {**book.chapter_parameters("cosaemb", "paper"), **changes}
    defaults = {name: spec.default for name, spec in __import__("sdr.parameters", fromlist=["x"]).parameter_specs(
        book.NOTEBOOKS / "cosaemb.ipynb").items()}
    return _Run(**{**defaults, **values})


def _fidelity_inputs(official=True):
    def item(kind, source):
        return SimpleNamespace(kind=kind, source=source, official=official)

    return SimpleNamespace(triplets=item("real", "SPECTER's triplets"), full_text=item("real", "S2ORC full text"),
                           csfcube=item("real", "CSFCube"), scirepeval=item("real", "SciRepEval"))


def _what_differs(run):
    source, split, built, csfcube, scirepeval = _leakage_setting()
    split = SimpleNamespace(papers=["9", "10"], inter_heldout=[1, 2, 3])
    built = SimpleNamespace(report=SimpleNamespace(papers_with_triplets=90_000), triplets=built.triplets)
    leakage = cosaemb.leakage_audit(run, source, SimpleNamespace(papers=["9"]), built, csfcube, scirepeval)
    runs = SimpleNamespace(fits={cosaemb.GRADED: None})
    return cosaemb.what_differs(run, _fidelity_inputs(), split, built, runs, SimpleNamespace(counted={}), leakage)


def test_what_differs_states_every_setting_that_differs_and_a_planted_missing_line_fails():
    paper = _what_differs(_fidelity_run())
    assert not set(paper) & set(cosaemb.SETTINGS)  # at paper every setting is the paper's
    assert set(cosaemb.ALWAYS) <= set(paper) and "90,000 papers" in paper["training data"]
    assert "50.0 %" in paper["leakage"]  # 2 of the 4 papers of the SciDocs tasks are training papers
    assert paper["parts"].startswith("Parts not run: ablations")  # the paper profile runs the headline
    smoke = _what_differs(_fidelity_run(model_name="minilm", model_layers=2, max_length=64, learning_rate=2e-4,
                                        max_triplets=192, epochs=1, batch_size=16, accumulation_steps=1))
    assert {"model", "max_length", "learning_rate", "max_triplets", "epochs", "batch"} <= set(smoke)
    assert smoke["learning_rate"] == "A learning rate of 0.0002, not 2e-05."
    lines = dict(smoke)
    lines.pop("learning_rate")  # planted: a setting that differs, left off the page
    with pytest.raises(book.ChapterCheckFailed, match=r"no line for \['learning_rate'\]"):
        cosaemb.check_deviations(lines, _fidelity_run(learning_rate=2e-4).p)
    lines = dict(paper)
    lines.pop("paragraph set")
    with pytest.raises(book.ChapterCheckFailed, match=r"no line for \['paragraph set'\]"):
        cosaemb.check_deviations(lines, _fidelity_run().p)



def test_the_pairing_rule_pairs_only_like_with_like():
    paper_rows = cosaemb.PAPER_ROWS["cosaemb_csfcube"]
    for table, rows in cosaemb.PAPER_ROWS.items():
        assert set(rows) == set(book.read_paper_table(table)["model"]), table
    names = ["untrained", "SPECTER", "CoSaEmb recipe: graded (1, 2, 3)"]
    at_paper = cosaemb.pair_rows(cosaemb.our_setups(_fidelity_run(), _fidelity_inputs(), "cosaemb_csfcube", names),
                                 paper_rows).set_index("our row")
    assert at_paper.loc["CoSaEmb recipe: graded (1, 2, 3)", "paper row"] == "CoSaEmb"  # same data, model, protocol
    assert at_paper.loc["SPECTER", "paper row"] == "" and "not stated" in at_paper.loc["SPECTER", "why apart"]
    assert at_paper.loc["untrained", "why apart"].startswith("protocol:")
    # planted: the same row on a CSFCube that is not the released collection, and one trained with other settings
    other_data = cosaemb.pair_rows(cosaemb.our_setups(_fidelity_run(), _fidelity_inputs(official=False),
                                                      "cosaemb_csfcube", names[2:]), paper_rows)
    assert other_data["paper row"].tolist() == [""] and other_data["why apart"][0].startswith("data: ours CSFCube (")
    other_settings = cosaemb.pair_rows(cosaemb.our_setups(_fidelity_run(learning_rate=3e-5), _fidelity_inputs(),
                                                          "cosaemb_csfcube", names[2:]), paper_rows)
    assert other_settings["paper row"].tolist() == [""] and "learning rate of 3e-05" in other_settings["why apart"][0]
    smoke = cosaemb.pair_rows(cosaemb.our_setups(_fidelity_run(model_name="minilm", model_layers=2),
                                                 _fidelity_inputs(), "cosaemb_csfcube", names[2:]), paper_rows)
    assert smoke["why apart"][0].startswith("no row of this model (all-MiniLM-L6-v2 (2 layers) + CoSaEmb (1, 2, 3))")
    # Table 6's set is not released and Table 5's rows use adapters: nothing of ours pairs there
    for table in ("cosaemb_paragraphs", "cosaemb_scirepeval"):
        pairs = cosaemb.pair_rows(cosaemb.our_setups(_fidelity_run(), _fidelity_inputs(), table,
                                                     ["untrained", "graded (1, 2, 3)", "flat (1, 1, 1)"]),
                                  cosaemb.PAPER_ROWS[table])
        assert (pairs["paper row"] == "").all(), pairs


# ------------------------------------------------------------------------------------------------ checks with margins
def test_the_probe_loss_ratio_comes_from_the_profile():
    import pandas as pd

    table = pd.DataFrame({"loss before": {cosaemb.GRADED: 0.6, cosaemb.CONTROL: 0.5},
                          "loss after": {cosaemb.GRADED: 0.48, cosaemb.CONTROL: 0.3}})  # graded ends at 0.8 of its start
    assert cosaemb.expect_lower_probe_loss(table, 0.83) is True
    with pytest.raises(book.ChapterCheckFailed, match=r"graded \(1, 2, 3\): training did not lower the probe loss "
                                                      r"below 0.75"):
        cosaemb.expect_lower_probe_loss(table, 0.75)
    table.loc[cosaemb.GRADED, "loss after"] = 0.3
    table.loc[cosaemb.CONTROL, "loss after"] = 0.6  # together: 0.9 of 1.1, above 0.75 of it
    with pytest.raises(book.ChapterCheckFailed, match="together below 0.75"):
        cosaemb.expect_lower_probe_loss(table, 0.75)
    smoke = book.chapter_parameters("cosaemb", "smoke")
    assert smoke["probe_loss_ratio"] == 0.75 and smoke["heldout_gain_margin"] == 5.5


class _GainRun(_Run):
    expect_gain = book.ChapterRun.expect_gain

    def __init__(self, **parameters):
        super().__init__(**parameters)
        self.gain_checks = {}  # the ChapterRun attribute expect_gain records each gain in


@pytest.mark.parametrize("margin, trained, replicas, applies", [
    (5.5, True, True, True), (0.0, True, True, False), (5.5, False, True, False), (5.5, True, False, False)])
def test_the_heldout_gain_check_applies_where_its_margin_was_measured(margin, trained, replicas, applies, capsys):
    import pandas as pd

    losses = {"untrained": 0.5, **({cosaemb.GRADED: 0.45} if trained else {}), cosaemb.CONTROL: 0.52}
    order = cosaemb.DistanceOrder(pd.DataFrame({"held-out loss (1, 2, 3)": losses}), [])
    item = SimpleNamespace(real=not replicas)
    inputs = SimpleNamespace(triplets=item, full_text=item)
    assert cosaemb.expect_heldout_gain(_GainRun(heldout_gain_margin=margin), inputs, order) is applies
    assert ("check passed" if applies else "check not applied") in capsys.readouterr().out
    if applies:  # the graded run removed 10 % of the untrained loss: below a margin of 12 it fails
        with pytest.raises(book.ChapterCheckFailed, match=r"\+10.00 % held-out loss below"):
            cosaemb.expect_heldout_gain(_GainRun(heldout_gain_margin=12.0), inputs, order)
