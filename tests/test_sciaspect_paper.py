"""The SciAspect chapter at ``paper`` (issues 30 and 32; :mod:`sdr.methods.sciaspect.paper`): its parts, its whole
cost counted by hand for a small parameter set, the released checkpoints checked first (a planted mismatch stops the
chapter's released part), and the dry run's citation fixture that makes the paper path take its branches."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from sdr import book, datasets, plan, released
from sdr.book.chapter import ChapterCheckFailed
from sdr.methods import sciaspect as sa

LIB = Path(__file__).resolve().parents[1] / "lib" / "sdr"


def parameters(**changes) -> SimpleNamespace:
    """A small parameter set of the chapter (the smoke profile's shape), every value named."""
    values = dict(profile="smoke", seed=0, max_length=64, train_examples=16, epochs=1, batch_size=8,
                  accumulation_steps=1, specter_cl_variants=["1 positive, 5 negatives"], temperatures=[0.05, 0.5],
                  sciaspect_variants=["1 positive, n negatives (w/o misc aspect)"], alphas=[0.7],
                  l2_configs=["SciAspect L2 negatives (3 hard negatives, 3 easy negatives)"], leaderboard_seeds=2,
                  csfcube_models=["untrained", "SciAspect"], csfcube_max_length=32,
                  scirepeval_models=["untrained", "SciAspect"], parts="all")
    values.update(changes)
    return SimpleNamespace(**values)


# ------------------------------------------------------------------------------------------------- parts
def test_every_trained_row_belongs_to_a_part_and_the_headline_is_table_6_2():
    every = {"specter_cl_variants": list(sa.SPECTERCL_VARIANTS), "temperatures": list(sa.TEMPERATURES),
             "sciaspect_variants": list(sa.SCIASPECT_VARIANTS), "alphas": list(sa.ALPHAS),
             "l2_configs": list(sa.L2_CONFIGS)}
    rows = sa.all_trained_rows(SimpleNamespace(**every))
    parts = {key: sa.row_part(key) for key in rows}
    assert set(parts.values()) == {"main", "ablations", "sweeps"} and set(parts.values()) <= set(sa.PARTS)
    assert {key for key, part in parts.items() if part == "main"} == set(sa.NAMED_MODELS.values())
    assert parts[("Table 6.3", "tau = 0.5")] == parts[("Table 6.6", "alpha = 0.9")] == "sweeps"
    assert parts[("Table 6.4", "1 positive, n negatives (w/ misc aspect)")] == "ablations"
    assert plan.resolve_parts("headline", sa.PARTS) == ("released", "main")
    assert book.chapter_parameters("sciaspect", "paper")["parts"] == "headline"
    assert "parts" not in book.chapter_parameters("sciaspect", "smoke")  # smoke and real run every part
    from sdr.dryrun import dry_run_overrides

    assert dry_run_overrides("sciaspect")["parts"] == "all"


def test_a_part_not_run_drops_its_rows_and_main_is_always_there():
    p = parameters()
    every = sa.trained_rows(SimpleNamespace(p=p, parts=tuple(sa.PARTS)))
    main_only = sa.trained_rows(SimpleNamespace(p=p, parts=("released", "main")))
    assert ("Table 6.3", "tau = 0.5") in every and ("Table 6.3", "tau = 0.5") not in main_only
    assert set(main_only) == set(sa.NAMED_MODELS.values())
    with pytest.raises(ValueError, match="every run of the SciAspect chapter includes 'main'"):
        sa.trained_rows(SimpleNamespace(p=p, parts=("released", "sweeps")))


# ------------------------------------------------------------------------------------------------- the cost plan
def hours(examples, epochs, texts, tokens):
    return examples * epochs * texts * tokens / plan.MEASURED_TOKENS_PER_S / 3600


def test_the_cost_plan_by_hand():
    cost = sa.cost_plan(parameters())
    trains = {w.what: w for w in cost.work if w.kind == "train"}
    # main: the four named models, 16 instances each (train_examples), 64 tokens (below a paper's mean)
    assert [w.part for w in trains.values()] == ["main"] * 4 + ["sweeps", "seeds"]
    spectercl = trains["train Table 6.3 / 1 positive, 5 negatives"]
    assert (spectercl.examples, spectercl.texts_per_example, spectercl.tokens_per_text, spectercl.steps) == (16, 7, 64, 2)
    assert spectercl.gpu_hours(plan.MEASURED_DEVICE) == pytest.approx(hours(16, 1, 7, 64))
    texts = {"Table 6.4 / 1 positive, n negatives (w/o misc aspect)": 15, "Table 6.6 / alpha = 0.7 (base)": 12,
             "Table 6.7 / SciAspect L2 negatives (3 hard negatives, 3 easy negatives)": 8}
    for what, count in texts.items():
        assert trains[f"train {what}"].texts_per_example == count, what
    # tau = 0.05 is the 1p 5n model: only tau = 0.5 trains in the sweeps part; one more seed of SciAspect
    assert "train Table 6.3 / tau = 0.05" not in trains and trains["train Table 6.3 / tau = 0.5"].part == "sweeps"
    assert trains["train SciAspect again (seeds after 0)"].runs == 1
    main_training = hours(16, 1, 7 + 15 + 12 + 8, 64)
    assert sum(w.gpu_hours(plan.MEASURED_DEVICE) for w in cost.work if w.kind == "train" and w.part == "main") == \
        pytest.approx(main_training)
    # encodings: SciDocs' 223,932 documents for the untrained encoder and the 4 main models, then 1 sweep model
    scidocs = {w.part: w for w in cost.work if w.what.startswith("SciDocs: embed")}
    assert (scidocs["main"].runs, scidocs["main"].texts, scidocs["sweeps"].runs) == (5, 223_932, 1)
    # SciDocs rows scored in main: untrained + 4 models + 4 heads and concats of SciAspect and of the hybrid
    assert next(w.runs for w in cost.work if w.what.startswith("SciDocs: classifiers") and w.part == "main") == 13
    assert next(w.runs for w in cost.work if w.what.startswith("SciDocs: classifiers") and w.part == "sweeps") == 2
    csfcube = {w.part: w for w in cost.work if w.what.startswith("CSFCube")}
    assert (csfcube["main"].runs, csfcube["seeds"].runs, csfcube["main"].tokens_per_text) == (2, 1, 32)
    # the released part: 3 models on MDCR, SciBERT on SciDocs, the two downloads
    released_lines = [w for w in cost.work if w.part == "released"]
    assert sum(w.kind == "encode" for w in released_lines) == 4 and sum(w.kind == "fetch" for w in released_lines) == 2
    # the totals: every GPU hour of every line, the selected parts all of them here
    totals = cost.totals()
    label = [c for c in totals.columns if c.startswith("GPU h") and "scaled" not in c][0]  # the measured GPU
    assert totals.loc["whole chapter", label] == pytest.approx(sum(w.gpu_hours(plan.MEASURED_DEVICE) for w in cost.work))
    assert totals.loc["selected parts", label] == pytest.approx(totals.loc["whole chapter", label])
    # the training graph through the bulk route (issue 36): the anchors' corpus ids in 274 /paper/batch requests,
    # then the shards' download and DuckDB filtering (sdr.fetchers.bulk.bulk_plan), no Graph API crawl
    from sdr.fetchers.bulk import bulk_plan

    batch = next(w for w in cost.work if w.what.startswith("s2ag_bulk_thesis: the anchors' corpus ids"))
    assert batch.requests == 274 and batch.other_hours() == pytest.approx(274 / 3600)
    shards = next(w for w in cost.work if w.what == "s2ag_bulk_thesis: Semantic Scholar bulk datasets, filtered with "
                                                    "DuckDB")
    assert (shards.part, shards.download_bytes) == ("main", bulk_plan("s2ag_bulk_thesis")["bytes"])
    assert shards.other_hours() == pytest.approx(bulk_plan("s2ag_bulk_thesis")["hours"])
    assert not [w for w in cost.work if "s2_citations_thesis" in w.what]


def test_each_part_of_the_plan_follows_the_registry_and_the_parameters():
    cost = sa.cost_plan(parameters(parts=["main"], alphas=[0.5, 0.7, 0.9], leaderboard_seeds=1))
    assert cost.selected == ("main",) and {w.part for w in cost.work} <= set(sa.PARTS)
    sweeps = [w.what for w in cost.work if w.part == "sweeps" and w.kind == "train"]
    assert sweeps == ["train Table 6.3 / tau = 0.5", "train Table 6.6 / alpha = 0.5", "train Table 6.6 / alpha = 0.9"]
    assert not [w for w in cost.work if w.part == "seeds"]  # one seed: nothing to train again
    totals = cost.totals()
    label = [c for c in totals.columns if c.startswith("GPU h") and "scaled" not in c][0]
    assert totals.loc["selected parts", label] == pytest.approx(totals.loc["main", label])
    # at paper: every instance of the thesis' 132k anchors (minus the 8 of the probe), 2 epochs, the measured mean
    # tokens of a title and abstract
    paper = plan.chapter_cost_plan("sciaspect", "paper")
    assert paper.selected == ("released", "main")
    spectercl = next(w for w in paper.work if w.what == "train Table 6.3 / 1 positive, 5 negatives")
    assert (spectercl.examples, spectercl.epochs, spectercl.tokens_per_text) == \
        (132_000 * 5 - 8, 2, plan.MEASURED_TOKENS_PER_TEXT)
    assert [w.runs for w in paper.work if w.part == "seeds" and w.kind == "train"] == [2, 2]  # leaderboard_seeds 3


def test_the_t4_words_of_each_part_are_the_plans():
    paper = plan.chapter_cost_plan("sciaspect", "paper", {"parts": "all"})
    for name, part in sa.PARTS.items():
        assert part.t4 == sa.t4_words(paper, name), name
    released_t4 = sum(w.gpu_hours("Tesla T4") for w in paper.work if w.part == "released")
    assert released_t4 < 1  # issue 32: the released table in under an hour on a T4


# ------------------------------------------------------------------------------------------------- released
def test_the_released_checks_read_the_thesis_rows():
    values = released.expected_values(sa.RELEASED_CHECKS)
    assert values[("malteos/scincl", "mdcr", "avg/map")] == 32.5704  # Table 6.9, not Table 6.8's rounded 32.6
    assert values[("allenai/specter", "mdcr", "avg/recall_5")] == 25.5
    assert values[("allenai/scibert_scivocab_uncased", "scidocs", "avg")] == 63.295
    asserted = [c for c in sa.RELEASED_CHECKS if c.tolerance is not None]
    assert [(c.model, c.benchmark, c.tolerance) for c in asserted] == [("malteos/scincl", "mdcr", 0.3)]
    assert all(c.pooling == "cls" and c.max_length == 512 for c in sa.RELEASED_CHECKS)
    assert set(datasets.CHAPTER_MODELS["sciaspect"]) | {"allenai/scibert_scivocab_uncased"} == \
        {c.model for c in sa.RELEASED_CHECKS}


class FakeRun:
    """What the released part reads of a chapter's run, at ``paper`` in the dry run."""

    def __init__(self, mirror: Path, data_dirs: dict):
        from sdr.synthetic.models import folder_name

        self.p = SimpleNamespace(device="cpu")
        self.branches = []
        self.data = SimpleNamespace(policy=SimpleNamespace(real_only=True), model_sources=[],
                                    model=lambda name: str(mirror / "models" / folder_name(name)),
                                    input=lambda name, files=(): SimpleNamespace(path=data_dirs[name]))

    def runs_part(self, name):
        return True

    def caption(self, *lines):
        return "caption"

    def branch(self, name):
        self.branches.append(name)


@pytest.fixture(scope="module")
def released_mirror(tmp_path_factory, synthetic_corpus):
    """Stand-ins of the three released models, MDCR and SciDocs replicas (with recommendations), and the expected
    values a dry-run mirror holds for them (a plain transformers forward, :func:`sdr.dryrun.write_released_expected`)."""
    from sdr import dryrun
    from sdr.synthetic.mdcr import write_mdcr
    from sdr.synthetic.models import folder_name, write_stand_in
    from sdr.synthetic.scidocs import write_scidocs

    mirror = tmp_path_factory.mktemp("released-mirror")
    texts = [f"{p.title} {p.abstract}" for p in synthetic_corpus.papers.values()]
    for number, model in enumerate(dict.fromkeys(c.model for c in sa.RELEASED_CHECKS)):
        write_stand_in(mirror / "models" / folder_name(model), model, texts, layers=1, hidden=16, seed=number)
    data_dirs = {"mdcr": write_mdcr(synthetic_corpus, mirror / "mdcr", seed=0, n_queries_per_field=3, progress=False),
                 "scidocs": write_scidocs(synthetic_corpus, mirror / "scidocs", seed=0, n_queries=10,
                                          include_recomm=True, progress=False)}
    dryrun.write_released_expected(mirror, sa.RELEASED_CHECKS, data_dirs)
    return mirror, data_dirs


def test_the_released_part_runs_first_and_a_planted_mismatch_stops_it(released_mirror, tmp_path, monkeypatch):
    mirror, data_dirs = released_mirror
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SDR_DATA", str(mirror))
    run = FakeRun(mirror, data_dirs)
    table = sa.released_models(run)
    assert run.branches == ["released checks asserted"]
    scincl = table[table["model"] == "malteos/scincl"]
    assert len(scincl) == 3 and scincl["holds"].all() and (scincl["difference"].abs() < 1e-3).all()
    assert table.loc[table["tolerance"].isna(), "holds"].isna().all()
    assert (table.loc[table["tolerance"].isna(), "why unasserted"] != "").all()
    assert set(table["pooling"]) == {"cls"} and set(table["input tokens"]) == {512}
    assert not table["cached"].any() and sa.released_models(FakeRun(mirror, data_dirs))["cached"].all()
    planted = tmp_path / "planted"
    planted.mkdir()
    stored = json.loads((mirror / released.EXPECTED_FILE).read_text())
    scincl_check = next(c for c in sa.RELEASED_CHECKS if c.model == "malteos/scincl")
    stored[released.expected_key(scincl_check, "avg/ndcg")] += 0.5
    (planted / released.EXPECTED_FILE).write_text(json.dumps(stored))
    monkeypatch.setenv("SDR_DATA", str(planted))
    with pytest.raises(ChapterCheckFailed, match=r"malteos/scincl on mdcr, avg/ndcg: .*tolerance ±0.3"):
        sa.released_models(FakeRun(mirror, data_dirs))
    stored = json.loads((mirror / released.EXPECTED_FILE).read_text())
    specter_check = next(c for c in sa.RELEASED_CHECKS if c.model == "allenai/specter")
    stored[released.expected_key(specter_check, "avg/map")] += 5  # an unasserted row: shown, never failing
    (planted / released.EXPECTED_FILE).write_text(json.dumps(stored))
    assert len(sa.released_models(FakeRun(mirror, data_dirs))) == len(table)


# ------------------------------------------------------------------------------------------------- the dry run
def test_the_dry_run_citations_reach_evaluation_papers_and_the_misc_aspect(tmp_path):
    from sdr.dryrun import WRITERS, FixtureCorpus

    fixture = FixtureCorpus()
    folder = tmp_path / "s2_citations_thesis"
    WRITERS["s2_citations_thesis"](folder, fixture)
    thesis = sa.read_thesis_citations(folder)
    evaluation = set(fixture.eval.papers)
    assert thesis.anchors and set(thesis.anchors) <= set(fixture.train.papers)
    assert any(not c.intents for c in thesis.graph)  # edges without intent: the miscellaneous aspect
    kept, overlap = sa.remove_evaluation_papers(thesis, {"SciDocs": evaluation})
    assert overlap.loc["all (removed)", "in the training graph"] > 0  # the leakage branch
    assert not kept.graph.nodes & evaluation and kept.anchors


def test_every_branch_the_dry_run_requires_is_recorded_in_the_chapters_code():
    code = "\n".join(p.read_text() for p in [*(LIB / "methods" / "sciaspect").glob("*.py"), LIB / "released.py"])
    recorded = set(re.findall(r'\.branch\("([^"]+)"\)', code))
    assert set(sa.DRY_RUN_BRANCHES) <= recorded, set(sa.DRY_RUN_BRANCHES) - recorded


# ------------------------------------------------------------------------------------------------- fidelity
PAPER_MODEL = dict(model_name="allenai/scibert_scivocab_uncased", model_layers=0, pooling="cls", max_length=512,
                   train_examples=0, epochs=2, batch_size=8, accumulation_steps=1, learning_rate=2e-5,
                   warmup_steps=100, recommendations=True)


def paper_inputs(kind="real"):
    def item(name):
        return datasets.DataInput(name, kind, Path("/nowhere"), f"{name} ({kind})")

    return SimpleNamespace(citations=item("s2_citations_thesis"), scidocs=item("scidocs"), mdcr=item("mdcr"),
                           scirepeval=item("scirepeval_full"), csfcube=item("csfcube"))


def test_the_pairing_rule_pairs_only_like_for_like(monkeypatch):
    monkeypatch.delenv(datasets.DRY_RUN_ENV, raising=False)
    run = SimpleNamespace(profile="paper", p=SimpleNamespace(**PAPER_MODEL))
    assert sa.pair(sa.our_setting(run, paper_inputs(), "scidocs"), sa.THESIS["scidocs"]).paired
    assert sa.pair(sa.our_setting(run, paper_inputs(), "mdcr"), sa.THESIS["mdcr"]).paired
    # a planted non-matching row: the same run on 6 layers of SciBERT, or mean pooling, is shown apart, with why
    for change, word in (({"model_layers": 6}, "6 layers"), ({"pooling": "mean"}, "mean pooling"),
                         ({"train_examples": 1000}, "1000 instances")):
        planted = SimpleNamespace(profile="paper", p=SimpleNamespace(**{**PAPER_MODEL, **change}))
        pairing = sa.pair(sa.our_setting(planted, paper_inputs(), "scidocs"), sa.THESIS["scidocs"])
        assert not pairing.paired and word in pairing.line, pairing.line
    replica = sa.pair(sa.our_setting(run, paper_inputs("replica"), "mdcr"), sa.THESIS["mdcr"])
    assert not replica.paired and "data: ours a replica" in replica.line and "benchmark: ours MDCR (a replica)" in \
        replica.line
    # SciRepEval: the public registry's 7 + 9 tasks against the thesis' 6 + 11: never paired
    scirepeval = sa.pair(sa.our_setting(run, paper_inputs(), "scirepeval", {"in_train": 7, "out_of_train": 9}),
                         sa.THESIS["scirepeval"])
    assert not scirepeval.paired and "in-task 7, out-of-task 9" in scirepeval.line
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")  # the dry run's fixtures are never the thesis' data
    assert not sa.pair(sa.our_setting(run, paper_inputs(), "mdcr"), sa.THESIS["mdcr"]).paired


def paper_facts(**changes) -> sa.Facts:
    values = dict(profile="paper", training_real=True, dry_run=False, benchmarks_replica=[],
                  model_name="allenai/scibert_scivocab_uncased", model_layers=0, pooling="cls", max_length=512,
                  train_examples=0, epochs=2, effective_batch=8, learning_rate=2e-5, warmup_steps=100,
                  weight_decay=0.01, max_grad_norm=1.0, seeds=1, sweep_seeds=1, recommendations=True,
                  not_comparable=["CSFCube (ids: S2 corpus id)", "SciRepEval (ids: mixed)"], training_ids="S2 paper id",
                  scirepeval_tasks={"in_train": 7, "out_of_train": 9},
                  rows_not_trained=26, thesis_rows=31, alpha_span=0.18)
    values.update(changes)
    return sa.Facts(**values)


def test_what_differs_states_every_detected_deviation_and_a_planted_missing_one_stops_it():
    facts = paper_facts()
    lines = sa.deviation_lines(facts)
    sa.expect_stated(facts, lines)
    assert {"model", "budget", "benchmarks", "recommendations"}.isdisjoint(lines)  # the paper profile's own setup
    assert "the Semantic Scholar bulk datasets of one release (s2ag_bulk_thesis" in lines["training data"]
    assert "the graph differs from the thesis' one" in lines["training data"]
    graph_api = sa.deviation_lines(paper_facts(training_dataset="s2_citations_thesis"))["training data"]
    assert "today's Semantic Scholar Graph API" in graph_api and "the graph differs from the thesis' one" in graph_api
    assert "Weight decay 0.01 and gradient clipping at norm 1" in lines["optimizer defaults"]
    assert "19k validation anchors" in lines["validation anchors"]
    assert ("CSFCube (ids: S2 corpus id), SciRepEval (ids: mixed) is not measured, or for part of the graph only: "
            "the training graph's ids are another kind (S2 paper id)") in lines["leakage not measured"]
    assert "count 7 in-task and 9 out-of-task" in lines["SciRepEval task set"] and "6 and 11" in lines["SciRepEval task set"]
    assert "span 0.18 points" in lines["one seed"] and "each of our τ and α sweep points is one training run" in \
        lines["one seed"]
    # a planted missing deviation: the page without its weight-decay line stops the chapter, naming it
    planted = {key: line for key, line in lines.items() if key != "optimizer defaults"}
    with pytest.raises(ChapterCheckFailed, match=r"not stated on the page: \['optimizer defaults'\]"):
        sa.expect_stated(facts, planted)
    # a smoke run: MiniLM on replicas, a few instances, no recommendations; the seeds part's 3 leaderboard seeds leave
    # each sweep point one run, so the one-seed line stays and says what the seeds part retrains
    smoke = paper_facts(training_real=False, benchmarks_replica=["scidocs", "mdcr"], model_name="minilm",
                        model_layers=2, pooling="mean", max_length=64, train_examples=16, epochs=1,
                        learning_rate=2e-4, warmup_steps=0, recommendations=False, seeds=3, not_comparable=[])
    smoke_lines = sa.deviation_lines(smoke)
    assert {"model", "budget", "benchmarks", "recommendations"} <= set(smoke_lines)
    assert "leakage not measured" not in smoke_lines
    assert "the `seeds` part retrains only the CSFCube leaderboard models (3 seeds at this run)" in \
        smoke_lines["one seed"]
    with pytest.raises(ChapterCheckFailed, match=r"\['one seed'\]"):
        sa.expect_stated(smoke, {key: line for key, line in smoke_lines.items() if key != "one seed"})
    assert "no sweep point is trained at this run" in sa.deviation_lines(paper_facts(sweep_seeds=0))["one seed"]
    # only sweep points trained over several seeds would make the line go
    assert "one seed" not in sa.deviation_lines(paper_facts(seeds=3, sweep_seeds=3))
    assert "a replica" in smoke_lines["training data"] and "minilm (2 layers), mean pooling" in smoke_lines["model"]
    with pytest.raises(ChapterCheckFailed, match=r"\['model'\]"):
        sa.expect_stated(smoke, {key: line for key, line in smoke_lines.items() if key != "model"})


def test_the_seeds_behind_the_sweep_rows_are_the_one_run_each_the_scidocs_table_scores():
    """The seeds part retrains the leaderboard models only (for CSFCube): each τ and α sweep row's SciDocs score is
    its one trained encoder, trained with the config's seed, whatever leaderboard_seeds is."""
    trained = {("Table 6.3", "tau = 0.05"): None, ("Table 6.6", "alpha = 0.7 (base)"): None,
               ("Table 6.6", "alpha = 0.3"): None, ("Table 6.4", "base model"): None}
    models = SimpleNamespace(trained=trained, config=SimpleNamespace(seed=4), seeds=[4, 5, 6])
    assert sa.sweep_row_seeds(models) == {("Table 6.3", "tau = 0.05"): [4], ("Table 6.6", "alpha = 0.7 (base)"): [4],
                                          ("Table 6.6", "alpha = 0.3"): [4]}
    assert sa.sweep_row_seeds(SimpleNamespace(trained={("Table 6.4", "base model"): None},
                                              config=SimpleNamespace(seed=0))) == {}


def test_table_6_11s_tasks_counted_rows_and_the_task_set_deviation_read_from_them():
    """table_6_11_rows writes the evaluator's tasks_counted into our column; the task-set deviation is read from
    those rows, and a column of ours without them (or with counts that disagree) stops the chapter instead of
    dropping the deviation without a word."""
    from sdr.methods.sciaspect.data import TASKS_COUNTED

    tasks = {"Search": {"group": "in_train", "metrics": {"ndcg": 80.0}},
             "Biomimicry": {"group": "out_of_train", "metrics": {"f1": 60.0}},
             "Peer Review Score": {"group": "out_of_train", "metrics": {"kendalltau": 20.0}},
             "SciDocs Cite": {"group": "scidocs", "metrics": {"map": 90.0, "ndcg": 94.0}}}
    result = {"tasks": tasks, "aggregates": {"formats": {"QRY": 80.0, "CLF": 60.0, "RGN": 20.0}, "in_train": 80.0,
                                             "out_of_train": 40.0, "scidocs": 92.0, "all": 68.8,
                                             "tasks_counted": {"in_train": 1, "out_of_train": 2, "scidocs": 1}}}
    column = sa.table_6_11_rows(result)
    assert {label: column[label] for label in TASKS_COUNTED} == {
        "tasks counted: in-task": 1.0, "tasks counted: out-of-task": 2.0, "tasks counted: SciDocs": 1.0}
    assert column["Review Score [RGN]"] == 20.0 and column["Avg without SciDocs"] == pytest.approx((80 + 60 + 20) / 3)
    paper = pd.DataFrame({"SPECTER": [54.3, float("nan"), float("nan"), float("nan")]},
                         index=["In task Avg", *TASKS_COUNTED])
    table = pd.concat([paper, pd.DataFrame({"SPECTERCL (this book, paper)": column,
                                            "untrained encoder (this book, paper)": column})], axis=1)
    counts = sa.scirepeval_task_counts(table)
    assert counts == {"in_train": 1, "out_of_train": 2}
    facts = paper_facts(scirepeval_tasks=counts)
    assert "count 1 in-task and 2 out-of-task" in sa.deviation_lines(facts)["SciRepEval task set"]
    assert sa.scirepeval_task_counts(paper) == {}  # no column of ours: no SciRepEval averages of ours to count
    # planted: the rows gone from the table, a count missing, two columns that counted different tasks
    with pytest.raises(ChapterCheckFailed, match=r"lack the rows \['tasks counted: in-task', 'tasks counted: "
                                                 r"out-of-task'\] \(TASKS_COUNTED\)"):
        sa.scirepeval_task_counts(table.drop(index=list(TASKS_COUNTED)))
    gap = table.copy()
    gap.loc["tasks counted: out-of-task", "untrained encoder (this book, paper)"] = float("nan")
    with pytest.raises(ChapterCheckFailed, match="whole numbers"):
        sa.scirepeval_task_counts(gap)
    other = table.copy()
    other.loc["tasks counted: in-task", "untrained encoder (this book, paper)"] = 7.0
    with pytest.raises(ChapterCheckFailed, match="counted different tasks"):
        sa.scirepeval_task_counts(other)


def test_table_6_11s_recovered_rows_give_the_printed_averages():
    table = book.read_paper_table("thesis_scirepeval").set_index("model")
    models = [c for c in table.columns if c not in ("source", "table", "note")]
    regression = table.loc[list(sa.TABLE_6_11_REGRESSION), models].astype(float)
    search = table.loc[table.index.str.startswith("search task of line"), models].astype(float)
    assert len(search) == 3
    reg, qry = table.loc["REG Avg (excluding SciDocs)", models], table.loc["QRY Avg (excluding SciDocs)", models]
    for model in models:
        assert abs(search[model].mean() - qry[model]) <= 0.005, model  # the printed rounding
        if regression[model].notna().all():
            assert abs(regression[model].mean() - reg[model]) <= (0.04 if model == "SciBERT" else 0.005), model
    # SciAspect(L2)'s review score is not printed; its REG Avg gives it
    missing = 5 * reg["SciAspect(L2)"] - regression["SciAspect(L2)"].drop("Review Score [RGN]").sum()
    assert missing == pytest.approx(21.40) and "21.40" in table.loc["Review Score [RGN]", "note"]


def test_corpus_ids_measure_leakage_against_corpus_id_sets_for_the_papers_that_have_one(tmp_path):
    """Issue 37: CSFCube and SciRepEval are keyed by S2 corpus ids, the fetched graph by paper ids: the corpus ids the
    fetch gives (the anchors' externalIds; a linked paper's corpusId once requested) compare them."""
    from sdr.corpus import CitationGraph

    folder = tmp_path / "s2"
    folder.mkdir()
    anchor, cited, other = "a" * 40, "b" * 40, "c" * 40
    (folder / "papers.jsonl").write_text(json.dumps({"paperId": anchor, "externalIds": {"CorpusId": 11}}) + "\n")
    (folder / "references.jsonl").write_text(json.dumps({"paperId": anchor, "offset": 0, "data": [
        {"citedPaper": {"paperId": cited, "corpusId": 22}}, {"citedPaper": {"paperId": other}}]}) + "\n")
    aliases = sa.id_aliases(folder)
    assert aliases == {anchor: "11", cited: "22"}
    graph = CitationGraph()
    graph.add(anchor, cited, ["method"])
    graph.add(anchor, other, ["result"])
    graph.add(other, cited, ["background"])
    thesis = sa.ThesisData(graph, {}, [anchor], None, 1, 0)
    kept, overlap = sa.remove_evaluation_papers(thesis, {"CSFCube": {"22", "99"}, "none": {"33"}}, aliases)
    assert overlap.loc["CSFCube", "in the training graph"] == 1 and cited not in kept.graph.nodes
    assert overlap.loc["CSFCube", "note"].startswith("partly comparable: through the corpus ids of 2 of the graph's 3")
    assert overlap.loc["none", "in the training graph"] == 0
    _, without = sa.remove_evaluation_papers(thesis, {"CSFCube": {"22"}})  # no alias: not comparable, nothing removed
    assert pd_isna(without.loc["CSFCube", "in the training graph"])


def test_the_fetch_gives_every_resolved_linked_paper_its_corpus_id(synthetic_corpus, tmp_path):
    """The leakage audit against CSFCube and SciRepEval (corpus ids) reaches the linked papers, not the anchors alone:
    the fetch requests ``corpusId`` for them (LINK_FIELDS), as the service's 40-hex ids would otherwise hide them."""
    from sdr.synthetic import s2_api

    ids = s2_api.corpus_ids(synthetic_corpus)
    anchors = sorted(synthetic_corpus.papers)[:5]
    folder = s2_api.write_citation_pages(synthetic_corpus, tmp_path / "s2", anchors=anchors, sha_ids=True,
                                         null_paper_every=2)
    graph = synthetic_corpus.graph
    linked = {other for a in anchors for other in graph.references(a) | graph.citations(a)}
    aliases = sa.id_aliases(folder)
    assert len(linked - set(anchors)) > 5
    assert {s2_api.sha_id(p): str(ids[p]) for p in linked | set(anchors)}.items() <= aliases.items()
    assert None not in aliases and "None" not in aliases.values()  # the unresolved references carry no corpus id


def test_the_thesis_graph_is_read_through_the_bulk_route_and_the_dry_run_must_take_it():
    """Issue 36: CHAPTER_DATA names the bulk dataset (read in the Graph API dataset's layout and name), and the dry run
    requires the branch the chapter records when it reads it."""
    assert "s2ag_bulk_thesis" in datasets.CHAPTER_DATA["sciaspect"]
    assert "s2_citations_thesis" not in datasets.CHAPTER_DATA["sciaspect"]
    assert datasets.BULK_ROUTE["sciaspect"] == ("s2_citations_thesis", "s2ag_bulk_thesis")
    assert datasets.SAME_LAYOUT_AS["s2ag_bulk_thesis"] == "s2_citations_thesis"
    assert "citation graph read from the bulk route (s2ag_bulk_thesis)" in sa.DRY_RUN_BRANCHES


def test_the_page_names_the_route_and_does_not_claim_the_thesis_graph():
    """Issue 37: today's Semantic Scholar graph is not the thesis' snapshot; the page says which route builds it."""
    cells = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "sciaspect.ipynb").read_text())["cells"]
    data = next("".join(c["source"]) for c in cells
                if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("## Data: a citation graph"))
    assert "sdr data fetch s2ag_bulk_thesis" in data and "not the thesis' snapshot" in data
    assert "exactly" not in data.lower()


def bulk_thesis_folder(corpus, folder):
    """The bulk route's thesis folder of ``corpus`` from the synthetic Datasets API (every fifth paper an anchor)."""
    from sdr.fetchers import bulk
    from sdr.fetchers.http import Client
    from sdr.synthetic.s2_api import corpus_ids
    from sdr.synthetic.s2_datasets import SyntheticDatasetsApi

    ids = corpus_ids(corpus)
    api = SyntheticDatasetsApi(corpus, ids)
    client = Client(rate=1e6, api_key="test-key", transport=api, sleep=lambda s: None, say=lambda m: None)
    bulk.fetch_dataset(datasets.get("s2ag_bulk_thesis"), folder, progress=False, client=client, opener=api.open,
                       anchors=[str(c) for c in sorted(ids.values())[::5]], sleep=lambda s: None, memory_limit="512MB")
    return ids


def test_the_bulk_graph_finds_scidocs_papers_through_their_sha_and_corpus_id_sets_directly(synthetic_corpus, tmp_path):
    """On the bulk layout (corpus ids) SciDocs' 40-hex ids are compared through each paper's paperSha (from the
    papers dataset's url), CSFCube's corpus ids as they are; without the shas SciDocs is not comparable."""
    from sdr.synthetic.s2_api import sha_id

    folder = tmp_path / "s2ag_bulk_thesis"
    ids = bulk_thesis_folder(synthetic_corpus, folder)
    thesis = sa.read_thesis_citations(folder)
    aliases = sa.id_aliases(folder)
    pid_of = {str(c): p for p, c in ids.items()}
    nodes = thesis.graph.nodes
    assert sa.id_form(nodes) == "S2 corpus id" and {n: sha_id(pid_of[n]) for n in nodes}.items() == {
        n: a for n, a in aliases.items() if n in nodes}.items()  # every paper of the graph has its sha
    planted = sorted(nodes - set(thesis.anchors))[:3]
    scidocs = {sha_id(pid_of[n]) for n in planted} | {"c" * 40}  # one SciDocs paper not in the graph
    csfcube = {planted[0], "99"}
    kept, overlap = sa.remove_evaluation_papers(thesis, {"SciDocs": scidocs, "CSFCube": csfcube}, aliases)
    assert overlap.loc["SciDocs", "in the training graph"] == 3 and not set(planted) & kept.graph.nodes
    assert overlap.loc["SciDocs", "note"] == ("compared through the S2 paper ids the fetch gave every paper of the "
                                              "graph; removed from the training data")
    assert overlap.loc["CSFCube", "in the training graph"] == 1 and overlap.loc["CSFCube", "ids"] == "S2 corpus id"
    # a paper whose url gave no sha: SciDocs is then compared for the others, and the row says so
    partial = {n: a for n, a in aliases.items() if n != planted[1]}
    _, some = sa.remove_evaluation_papers(thesis, {"SciDocs": scidocs}, partial)
    assert some.loc["SciDocs", "in the training graph"] == 2
    assert some.loc["SciDocs", "note"].startswith(f"partly comparable: through the S2 paper ids of {len(nodes) - 1} of "
                                                  f"the graph's {len(nodes)} papers")
    assert sa.unmeasured_sets(some) == [f"SciDocs (only through the S2 paper ids of {len(nodes) - 1} of the graph's "
                                        f"{len(nodes)} papers)"]  # named on the page's list of what differs
    assert sa.unmeasured_sets(overlap) == []  # every paper has its sha: measured in full
    _, without = sa.remove_evaluation_papers(thesis, {"SciDocs": scidocs})
    assert sa.unmeasured_sets(without) == ["SciDocs (ids: S2 paper id)"]
    assert pd_isna(without.loc["SciDocs", "in the training graph"])
    assert without.loc["SciDocs", "note"] == "not comparable: the training graph's ids are of another kind (S2 corpus id)"


def test_sets_of_another_provenance_than_the_graph_are_not_compared(synthetic_corpus, tmp_path, monkeypatch):
    """A synthetic graph's corpus ids (900000 + i) name other papers than the released CSFCube's: such a set is not
    compared (NaN, the reason in its note), even where the ids collide."""
    folder = tmp_path / "s2ag_bulk_thesis"
    bulk_thesis_folder(synthetic_corpus, folder)
    thesis = sa.read_thesis_citations(folder)
    colliding = {sorted(thesis.graph.nodes)[0]}
    _, overlap = sa.remove_evaluation_papers(thesis, {"CSFCube": colliding}, sa.id_aliases(folder),
                                             {"CSFCube": "the released data beside a synthetic training graph"})
    assert pd_isna(overlap.loc["CSFCube", "in the training graph"]) and overlap.loc["all (removed)", "papers"] == 0
    assert overlap.loc["CSFCube", "note"] == "not comparable: the released data beside a synthetic training graph"
    monkeypatch.delenv(datasets.DRY_RUN_ENV, raising=False)
    replica, real = (datasets.DataInput("csfcube", kind, tmp_path, "") for kind in ("replica", "real"))
    assert sa.synthetic_data(replica) and not sa.synthetic_data(real)
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")  # a dry-run fixture is real-shaped, not the released bytes
    assert sa.synthetic_data(datasets.DataInput("csfcube", "real", tmp_path / "fixture", ""))


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))

