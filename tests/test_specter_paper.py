"""What the SPECTER and SciNCL chapters do at ``paper``, up front (issues 30, 32, 37): their parts and the parameter
that picks them, the whole cost counted from their parameters (checked by hand on a small set), the released models
first (a planted mismatch stops the chapter's released part), the dry-run fixtures that make the paper's branches
reachable, the one pairing rule (a planted non-matching row is shown apart) and the generated deviation lists (a
planted missing deviation is caught)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from sdr import book, datasets, plan, released
from sdr.book.chapter import ChapterCheckFailed
from sdr.methods import benchmarks, scincl, specter
from sdr.plan import chapter_cost_plan

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = {"specter": specter, "scincl": scincl}


# ------------------------------------------------------------------------------------------------- parts
@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_parts_are_one_parameter_and_the_paper_profile_runs_the_headline(chapter):
    method = CHAPTERS[chapter]
    assert "parts" in book.notebook_parameters(book.NOTEBOOKS / f"{chapter}.ipynb")
    rules = book.load_profiles()["parameter_rules"][chapter]["parts"]["choices"]
    assert rules == ["all", "headline", *method.PARTS]
    assert book.chapter_parameters(chapter, "paper")["parts"] == "headline"
    assert book.chapter_parameters(chapter, "smoke").get("parts", "all") == "all"
    headline = plan.resolve_parts("headline", method.PARTS)
    assert headline == ("released", "main")  # the paper's headline table: the released models, then the main runs
    assert chapter_cost_plan(chapter, "paper").selected == headline


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_a_part_that_builds_on_main_needs_main(chapter):
    method = CHAPTERS[chapter]
    run = SimpleNamespace(chapter=chapter, p=SimpleNamespace(parts=["seeds"]))
    with pytest.raises(ValueError, match="'seeds' needs 'main'"):
        specter.check_parts(run, method.PARTS, method.PART_NEEDS)
    run.p.parts = ["released"]
    with pytest.raises(ValueError, match="includes 'main'"):
        specter.check_parts(run, method.PARTS, method.PART_NEEDS)
    run.p.parts = ["main", "seeds"]
    specter.check_parts(run, method.PARTS, method.PART_NEEDS)


# ------------------------------------------------------------------------------------------------- the whole cost
def _specter_parameters(**changes):
    values = dict(profile="paper", parts="headline", max_queries=10, epochs=1, batch_size=2, accumulation_steps=2,
                  max_length=64, released_checkpoints=["allenai/specter"], released_max_length=128, csfcube_models=[],
                  csfcube_max_length=32, recommendations=True, leaderboard_seeds=3,
                  model_name="allenai/scibert_scivocab_uncased")
    values.update(changes)
    return SimpleNamespace(**values)


def _line(cost, what):
    found = [w for w in cost.work if w.what == what]
    assert len(found) == 1, (what, [w.what for w in cost.work])
    return found[0]


def test_specter_cost_plan_by_hand():
    cost = specter.cost_plan(_specter_parameters())
    h100 = plan.MEASURED_DEVICE
    encode_rate = plan.MEASURED_ENCODE_TOKENS_PER_S
    # 10 query papers × 5 triplets = 50 a model; 1 epoch of 2 × 2 = 4 triplets: 13 steps; texts cut at 64 tokens
    train = _line(cost, "train SPECTER")
    assert (train.examples, train.steps, train.tokens_per_text, train.runs) == (50, 13, 64, 1)
    assert train.gpu_hours(h100) == pytest.approx(50 * 1 * 3 * 64 / plan.MEASURED_TOKENS_PER_S / 3600)
    # the leaderboard models (both trained models, csfcube_models empty) again with seeds 1 and 2
    assert _line(cost, "train the leaderboard models again (each extra seed)").runs == 2 * 2
    # SciDocs (223,932 papers, SciNCL Table 3) for the untrained, 2 trained and 1 released model at 64 tokens
    scidocs = _line(cost, "SciDocs: untrained, trained and released models")
    assert (scidocs.runs, scidocs.texts) == (4, 223_932)
    assert scidocs.gpu_hours(h100) == pytest.approx(4 * 223_932 * 64 / encode_rate / 3600)
    released_scidocs = _line(cost, "allenai/specter on SciDocs")
    assert released_scidocs.tokens_per_text == min(plan.MEASURED_TOKENS_PER_TEXT, 128)
    assert _line(cost, "CSFCube: the models csfcube_models names and the released ones").runs == 3 + 1
    scoring = _line(cost, "SciDocs scoring: released models and SciDocs' shipped SPECTER embeddings")
    assert scoring.other_hours() == pytest.approx(2 * specter.SCIDOCS_SCORING_CPU_HOURS[True])
    by_hand = (2 * train.gpu_hours(h100) + scidocs.gpu_hours(h100) + released_scidocs.gpu_hours(h100)
               + _line(cost, "allenai/specter on CSFCube").gpu_hours(h100)
               + _line(cost, "CSFCube: the models csfcube_models names and the released ones").gpu_hours(h100))
    assert cost.total_hours(h100, selected_only=True) == pytest.approx(by_hand)
    seeds = 4 * train.gpu_hours(h100) + _line(cost, "CSFCube: each extra seed's models").gpu_hours(h100)
    assert cost.total_hours(h100) == pytest.approx(by_hand + seeds)
    fetch = _line(cost, "fetch scidocs")
    assert fetch.download_bytes == int(4.6 * 2**30)
    assert fetch.other_hours() == pytest.approx(4.6 * 2**30 / specter.DOWNLOAD_BYTES_PER_S / 3600)


def test_scincl_cost_plan_by_hand():
    p = SimpleNamespace(profile="paper", parts="all", index_every_paper=True, max_queries=10, epochs=1, batch_size=2,
                        accumulation_steps=2, max_length=64, graph_dimension=64, graph_epochs=2, k_pos=25, k_hard=4000,
                        graph_test_fraction=0.01,
                        collision_fraction=1.0, collision_k_hard=[], band_check_queries=0, leaderboard_seeds=2,
                        csfcube_models=["SciNCL"], csfcube_max_length=32, released_checkpoints=[], released_max_length=512,
                        recommendations=False, ablations=["easy_random"], ablation_seeds=[0, 1], seed=0,
                        table2_k_hard_shares=[0.5], data_fractions=[0.1], table2_recommendations=False, sweeps=[],
                        k_pos_sweep=[], k_hard_sweep=[], sweep_fraction=0.1, sweep_epochs=1, sweep_seeds=[0],
                        sweep_recommendations=False, model_name="allenai/scibert_scivocab_uncased")
    cost = scincl.cost_plan(p)
    graph = _line(cost, "BigGraph embedding of SPECTER's triplet graph")
    # 684,100 edges at most (one a triplet; 1 % held out) × 2 epochs at 64 of 768 dimensions, at the measured PBG rates
    rates = scincl.PBG_PHASE_RATES
    assert graph.other_hours() == pytest.approx((
        677_259 * 2 * scincl.PBG_SECONDS_PER_EDGE_EPOCH * 64 / 768 + 684_100 * rates["preprocess_s_per_edge_line"]
        + 6_841 * rates["link_prediction_s_per_test_edge"] + 311_860 * 64 * rates["vectors_s_per_node_dimension"])
        / 3600)
    search = _line(cost, "kNN bands of the main queries")
    assert search.runs == 1 and search.other_hours() == pytest.approx(
        10 * 311_860 * 64 * scincl.FLAT_SEARCH_SECONDS / 3600)
    # Fig. 5 samples every one of the 136,820 queries here (max_queries samples 10 for training): its own search
    collisions = _line(cost, "kNN bands of Fig. 5's queries (collision sweep)")
    assert collisions.runs == 1 and collisions.other_hours() == pytest.approx(
        136_820 * 311_860 * 64 * scincl.FLAT_SEARCH_SECONDS / 3600)
    assert _line(cost, "train the leaderboard models again (each extra seed)").runs == 1  # SciNCL, seed 1
    # every further sampling on the main graph reads the main search (SearchCache): a reuse's cost, no search
    reuse = (311_860 * 64 * scincl.SEARCH_REUSE["seconds_per_node_dimension"]
             + 10 * scincl.SEARCH_REUSE["seconds_per_query"]) / 3600
    seeds = _line(cost, "kNN bands sampled again for each extra SciNCL seed (reused search)")
    assert seeds.runs == 1 and seeds.other_hours() == pytest.approx(reuse)
    assert "kNN bands of the main queries" in seeds.how and "no search" in seeds.how
    # Table 2: the plain-random row for seeds 0 and 1, the reference for seed 1 (seed 0 is the main run)
    assert _line(cost, "Table 2: easy negatives plain random").runs == 2
    row = _line(cost, "Table 2: easy negatives plain random, kNN bands (reused search)")
    assert row.runs == 2 and row.other_hours() == pytest.approx(2 * reuse)
    assert _line(cost, "Table 2 reference: the main run with the other seeds").runs == 1
    assert _line(cost, "SciDocs: every Table 2 run").runs == 3
    assert not [w for w in cost.work if w.part == "sweeps"]  # no sweep named: no line
    # the only searches: the main queries, Fig. 5's, the band checks and the w/o-leakage queries
    searched = sorted(w.what for w in cost.work if w.kind == "knn" and "(reused search)" not in w.what)
    assert searched == sorted(["kNN bands of the main queries", "kNN bands of Fig. 5's queries (collision sweep)",
                               "band check (ranks of the checked triplets)", "kNN bands of the w/o-leakage queries",
                               "band check of the w/o-leakage triplets"])
    wol = _line(cost, "kNN bands of the w/o-leakage queries")
    assert wol.other_hours() == pytest.approx(10 * 680_967 * 64 * scincl.FLAT_SEARCH_SECONDS / 3600)
    # Table 2's leakage row samples on a graph of its own: searched for its first seed, reused for the second
    leaky = _line(scincl.cost_plan(SimpleNamespace(**{**vars(p), "ablations": ["leakage"]})),
                  "Table 2: graph with the evaluation papers, kNN bands")
    assert leaky.runs == 2 and leaky.other_hours() == pytest.approx(search.other_hours() + reuse)
    # with a given embedding of S2ORC's graph the plan embeds nothing for the main part: it reads the given rows
    given = scincl.cost_plan(SimpleNamespace(**{**vars(p), "graph_embedding": "/data/s2orc_graph"}))
    assert not [w for w in given.work if w.kind == "graph" and "BigGraph" in w.what]
    assert not [w for w in given.work if w.what.startswith("s2orc_citation_graph")]
    read = _line(given, "read the given S2ORC graph embedding (graph_embedding): the training papers' rows")
    assert read.part == "main" and "/data/s2orc_graph" in read.how and "not measured" not in read.how
    # every id of S2ORC's 52.5 M-node embedding, then the training papers' rows at 64 d (the parameters' dimension)
    assert read.other_hours() == pytest.approx((52_526_134 * 6.27e-07 + 311_860 * 64 * 4 / 2**30 * 5.48) / 3600)
    assert _line(given, "kNN bands of the main queries").other_hours() == search.other_hours()
    wol_read = _line(given, "read the given S2ORC graph embedding (graph_embedding): the w/o-leakage papers' rows")
    # measured like the main part's read (GIVEN_EMBEDDING_READ), not a line of 0 h
    assert wol_read.part == "without_leakage" and "not measured" not in wol_read.how
    assert wol_read.other_hours() == pytest.approx((52_526_134 * 6.27e-07 + 680_967 * 64 * 4 / 2**30 * 5.48) / 3600)
    # the w/o-leakage part: the texts' bulk fetch, one training of 5 triplets a query, SciDocs and CSFCube
    from sdr.fetchers.bulk import bulk_plan

    fetch = _line(cost, "s2ag_bulk_wol_texts: Semantic Scholar bulk datasets, filtered with DuckDB")
    assert fetch.part == "without_leakage" and fetch.download_bytes == bulk_plan("s2ag_bulk_wol_texts")["bytes"]
    assert fetch.other_hours() == pytest.approx(bulk_plan("s2ag_bulk_wol_texts")["hours"])
    train = _line(cost, "train SciNCL on the w/o-leakage triplets with texts")
    assert train.examples == 50 and train.runs == 1 and train.part == "without_leakage"
    assert _line(cost, "SciDocs: the w/o-leakage SciNCL").runs == 1
    assert _line(cost, "CSFCube: the w/o-leakage SciNCL").runs == 1  # csfcube_models names SciNCL


def test_the_given_embeddings_read_rates_are_the_committed_measurement():
    raw = (Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "given_embedding.txt").read_text()
    ids_s, ids = re.search(r"of ([\d,]+) ids ([\d.]+) s \(", raw).group(2, 1)
    per_gib = re.search(r"\(([\d.]+) s a GiB of rows\)", raw).group(1)
    assert scincl.GIVEN_EMBEDDING_READ["seconds_per_id"] == pytest.approx(float(ids_s) / int(ids.replace(",", "")))
    assert scincl.GIVEN_EMBEDDING_READ["seconds_per_gib_of_rows"] == float(per_gib)


def test_scincls_graph_and_search_rates_are_the_committed_1m_node_measurement():
    """PBG's rates from the run at 1,000,000 nodes and the exact band search's from 700,000 papers
    (benchmarks/results/graph_scale_1m.txt), not issue 21's 100 K-node run."""
    raw = (Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "graph_scale_1m.txt").read_text()
    pbg = json.loads(re.search(r"^RESULT pbg: (\{.*\})$", raw, re.M).group(1))
    bands = json.loads(re.search(r"^RESULT bands: (\{.*\})$", raw, re.M).group(1))
    assert pbg["nodes"] >= 1_000_000 and bands["nodes"] >= 700_000
    assert (pbg["workers"], pbg["dimension"], pbg["epochs"]) == (scincl.PBG_WORKERS, 768, 1)
    phases = pbg["phases"]
    assert scincl.PBG_SECONDS_PER_EDGE_EPOCH == pytest.approx(phases["train"] / pbg["train_edges"], rel=1e-3)
    rates = scincl.PBG_PHASE_RATES
    assert rates["preprocess_s_per_edge_line"] == pytest.approx((phases["ids"] + phases["buckets"])
                                                                / pbg["edge_lines"], rel=1e-3)
    assert rates["link_prediction_s_per_test_edge"] == pytest.approx(phases["link_prediction"] / pbg["test_edges"],
                                                                     rel=1e-3)
    assert rates["vectors_s_per_node_dimension"] == pytest.approx(phases["vectors"] / (pbg["nodes"] * 768), rel=1e-3)
    assert scincl.PBG_PEAK_RSS_MIB == round(pbg["peak_rss_mib"])
    assert scincl.FLAT_SEARCH_SECONDS == pytest.approx(
        bands["exact_search_and_bands_s"] / (bands["queries"] * bands["nodes"] * bands["dimension"]), rel=1e-3)
    assert scincl.SEARCH_REUSE["seconds_per_node_dimension"] == pytest.approx(
        bands["cache_key_s"] / (bands["nodes"] * bands["dimension"]), rel=1e-3)
    assert scincl.SEARCH_REUSE["seconds_per_query"] == pytest.approx(
        (bands["second_seed_s"] - bands["cache_key_s"]) / bands["queries"], rel=1e-3)


def test_scincls_plan_on_s2orcs_graph_fetches_and_embeds_it():
    """graph_source s2orc (no graph_embedding): the bulk fetch of s2orc_citation_graph and BigGraph on SciNCL Table 4's
    graph at the parameters' epochs and dimension; the triplet graph is not embedded."""
    from sdr.fetchers.bulk import bulk_plan

    values = plan.chapter_values("scincl", "paper", {"parts": "all"})
    cost = scincl.cost_plan(SimpleNamespace(**{**values, "graph_source": "s2orc"}))
    assert not [w for w in cost.work if w.what == "BigGraph embedding of SPECTER's triplet graph"]
    fetch = _line(cost, "s2orc_citation_graph: Semantic Scholar bulk datasets, filtered with DuckDB")
    assert fetch.part == "main" and fetch.download_bytes == bulk_plan("s2orc_citation_graph")["bytes"]
    assert fetch.other_hours() == pytest.approx(bulk_plan("s2orc_citation_graph")["hours"])
    graph = _line(cost, "BigGraph embedding of S2ORC's citation graph (SciNCL Table 4)")
    edges, nodes, epochs, d = 463_697_639, 52_526_134, values["graph_epochs"], values["graph_dimension"]
    assert (epochs, d) == (20, 768)  # A.5
    test = round(edges * values["graph_test_fraction"])
    rates = scincl.PBG_PHASE_RATES
    assert graph.other_hours() == pytest.approx(
        ((edges - test) * epochs * scincl.PBG_SECONDS_PER_EDGE_EPOCH + edges * rates["preprocess_s_per_edge_line"]
         + test * rates["link_prediction_s_per_test_edge"] + nodes * d * rates["vectors_s_per_node_dimension"])
        / 3600)
    assert graph.other_hours() > 300  # on this book's 2 cores: weeks, as the page's extrapolation says
    # the w/o-leakage part samples on its triples' own graph (the chapter's S2ORC embedding is not handed to it)
    assert _line(cost, "BigGraph embedding of the w/o-leakage triples' graph").part == "without_leakage"
    with pytest.raises(ValueError, match="graph_source"):
        scincl.cost_plan(SimpleNamespace(**{**values, "graph_source": "s2ag"}))


def test_scincls_paper_plan_searches_once_per_embedding_and_query_set():
    """At ``paper`` every seed, Table 2 row and sweep reads a kept search (SearchCache): the main search serves the
    seeds and Table 2 (its 1 % and 10 % rows are shares of its queries), Fig. 5's search (10 % of the queries to
    k-hard 8000) serves the sweeps (the same 10 %, no deeper)."""
    cost = plan.chapter_cost_plan("scincl", "paper", {"parts": "all"})
    searched = [w for w in cost.work if w.kind == "knn" and "(reused search)" not in w.what and w.runs]
    assert sorted(w.what for w in searched) == sorted([
        "kNN bands of the main queries", "kNN bands of Fig. 5's queries (collision sweep)",
        "band check (ranks of the checked triplets)", "kNN bands of the w/o-leakage queries",
        "band check of the w/o-leakage triplets"])
    assert all(w.runs == 1 for w in searched)
    reused = [w for w in cost.work if w.what.endswith("(reused search)")]
    assert {w.part for w in reused} == {"seeds", "ablations", "sweeps"}
    assert _line(cost, "kNN bands sampled again for each extra SciNCL seed (reused search)").runs == 9
    for share in ("1%", "10%"):
        row = _line(cost, f"Table 2: {share} of the training set, kNN bands (reused search)")
        assert row.runs == 3 and "'kNN bands of the main queries'" in row.how
    sweep = _line(cost, "kNN bands of the sweep queries (one search a seed) (reused search)")
    assert "'kNN bands of Fig. 5's queries (collision sweep)'" in sweep.how
    # a reuse costs minutes, a search hours
    assert max(w.hours for w in reused) < 0.1 < _line(cost, "kNN bands of the main queries").hours


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_part_of_the_paper_plan_follows_the_registry(chapter):
    method = CHAPTERS[chapter]
    cost = chapter_cost_plan(chapter, "paper")
    assert {w.part for w in cost.work} == set(method.PARTS)  # every part is counted, nothing outside the registry
    assert cost.selected == plan.resolve_parts("headline", method.PARTS)
    every = chapter_cost_plan(chapter, "paper", {"parts": "all"})
    assert every.selected == tuple(method.PARTS)
    assert every.total_hours(selected_only=True) == pytest.approx(every.total_hours())
    assert cost.total_hours(selected_only=True) < cost.total_hours() or chapter == "specter"
    one = chapter_cost_plan(chapter, "paper", {"parts": ["main"]})
    assert one.selected == ("main",) and one.total_hours(selected_only=True) == pytest.approx(
        sum(w.gpu_hours(plan.MEASURED_DEVICE) for w in one.work if w.part == "main"))


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_what_a_t4_user_can_finish_is_the_plans_t4_hours(chapter):
    """Each part's words name the Colab sessions of 12 h its T4 GPU hours and CPU hours take at the paper profile
    (a Colab machine's 2 cores are what the CPU rates were measured on); a part with no work says "nothing"."""
    method = CHAPTERS[chapter]
    cost = chapter_cost_plan(chapter, "paper", {"parts": "all"})
    totals = cost.totals()
    t4 = [c for c in totals.columns if c.startswith("GPU h T4")][0]
    for name, part in method.PARTS.items():
        hours = totals.loc[name, t4] + totals.loc[name, "CPU / network h"]
        sessions = math.ceil(hours / specter.COLAB_SESSION_HOURS)
        said = re.search(r"(\d+) Colab session", part.t4)
        if sessions == 0:
            assert "nothing" in part.t4, (name, part.t4)
        else:
            assert said and int(said.group(1)) == sessions, (name, part.t4, hours)


# ------------------------------------------------------------------------------------------------- released models
@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_released_checks_name_the_papers_rows(chapter):
    checks = CHAPTERS[chapter].RELEASED_CHECKS
    values = released.expected_values(checks)
    for check in checks:
        assert check.pooling == "cls" and check.max_length == 512 and check.adapter == ""
        assert check.tolerance is not None or check.unasserted_because
    if chapter == "specter":
        assert values[("allenai/specter", "scidocs", "avg")] == 80.0 and values[("allenai/specter", "scidocs",
                                                                                 "mag_f1")] == 82.0
    else:  # SciNCL Table 1 and the MDCR repository's evaluation quoted by thesis Table 6.9
        assert values[("malteos/scincl", "scidocs", "avg")] == 81.8
        assert values[("malteos/scincl", "mdcr", "avg/map")] == 32.5704
    assert released.registered_checks([chapter])[chapter] == list(checks)


class _StubData:
    def __init__(self, models):
        self.policy = SimpleNamespace(real_only=True)
        self.models = models
        self.model_sources = []
        self.inputs = {}

    def input(self, name):  # the setting's folders: the models' stand-ins lie in <root>/models
        return SimpleNamespace(path=Path(next(iter(self.models.values()))).parents[1] / name)

    def model(self, name):
        return str(self.models[name])


class _StubRun:
    """What a chapter's released part reads of its ChapterRun, at ``paper`` in the dry run."""

    def __init__(self, chapter, models):
        self.chapter, self.p, self.data, self.branches = chapter, SimpleNamespace(device="cpu"), _StubData(models), []
        self.parts = ("released", "main")

    def runs_part(self, name):
        return name in self.parts

    def caption(self, *extra):
        return "caption"

    def branch(self, name):
        self.branches.append(name)


@pytest.fixture(scope="module")
def released_setting(tmp_path_factory, synthetic_corpus):
    """Both released models' stand-ins, SciDocs (with shipped embeddings), CSFCube and MDCR replicas, and the expected
    values a dry-run mirror holds, computed as sdr.dryrun computes them (a plain transformers forward)."""
    from sdr import dryrun
    from sdr.synthetic.csfcube import write_csfcube
    from sdr.synthetic.mdcr import write_mdcr
    from sdr.synthetic.models import write_stand_in
    from sdr.synthetic.scidocs import write_scidocs

    root = tmp_path_factory.mktemp("released-chapters")
    texts = [f"{p.title} {p.abstract}" for p in synthetic_corpus.papers.values()]
    models = {name: write_stand_in(root / "models" / name.replace("/", "__"), name, texts, layers=1, hidden=16)
              for name in ("allenai/specter", "malteos/scincl")}
    data = {"scidocs": write_scidocs(synthetic_corpus, root / "scidocs", seed=0, n_queries=10, progress=False),
            "csfcube": write_csfcube(synthetic_corpus, root / "csfcube", n_queries=6, pool_size=30, seed=0),
            "mdcr": write_mdcr(synthetic_corpus, root / "mdcr", seed=0, n_queries_per_field=2, progress=False)}
    benchmarks.write_shipped_embeddings(root / "scidocs_specter_embeddings", SimpleNamespace(seed=7))
    dryrun.write_released_expected(root, [*specter.RELEASED_CHECKS, *scincl.RELEASED_CHECKS], data)
    return root, models, data


def _key(checks, model: str, benchmark: str, metric: str) -> str:
    check = next(c for c in checks if c.model == model and c.benchmark == benchmark and metric in c.metrics)
    return released.expected_key(check, metric)


def _plant(root: Path, key: str, delta: float, into: Path) -> Path:
    stored = json.loads((root / released.EXPECTED_FILE).read_text())
    stored[key] += delta
    into.mkdir(parents=True, exist_ok=True)
    (into / released.EXPECTED_FILE).write_text(json.dumps(stored))
    return into


def test_the_chapters_released_parts_hold_on_the_fixture_and_a_planted_mismatch_stops_them(released_setting, monkeypatch,
                                                                                          tmp_path):
    root, models, data = released_setting
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SDR_DATA", str(root))
    inputs = SimpleNamespace(scidocs=SimpleNamespace(path=data["scidocs"]), csfcube=SimpleNamespace(path=data["csfcube"]))
    run = _StubRun("specter", models)
    tables = specter.released_models(run, inputs)
    assert tables.shipped["holds"].all() and len(tables.shipped) == 13
    asserted = tables.checkpoints[tables.checkpoints["holds"].notna()]
    assert len(asserted) == 11 and asserted["holds"].all() and (asserted["difference"].abs() < 1e-3).all()
    assert set(tables.checkpoints.loc[tables.checkpoints["holds"].isna(), "metric"]) == {
        "recomm_ndcg", "recomm_p1", "ndcg%20_all", "ndcg%20_background", "ndcg%20_method", "ndcg%20_result"}
    assert run.branches == ["SciDocs' shipped SPECTER embeddings checked", "released checks asserted"]
    scincl_run = _StubRun("scincl", models)
    table = specter.released_models(scincl_run, inputs, scincl.RELEASED_CHECKS, shipped=False,
                                    extra_dirs={"mdcr": data["mdcr"]}).checkpoints
    assert set(table["benchmark"]) == {"scidocs", "mdcr"} and table.loc[table["holds"].notna(), "holds"].all()
    # a planted mismatch in each: the chapter's released part stops
    monkeypatch.setenv("SDR_DATA", str(_plant(root, _key(specter.RELEASED_CHECKS, "allenai/specter", "scidocs", "cite_map"), 0.5,
                                              tmp_path / "a")))
    with pytest.raises(ChapterCheckFailed, match="allenai/specter on scidocs, cite_map"):
        specter.released_models(_StubRun("specter", models), inputs, shipped=False)
    monkeypatch.setenv("SDR_DATA", str(_plant(root, released.expected_key(released.ReleasedCheck(
        released.SHIPPED_CHECK_MODEL, "scidocs", "scidocs", "SPECTER", {"mag_f1": "mag_f1"}), "mag_f1"), 0.2,
                                              tmp_path / "b")))
    with pytest.raises(ChapterCheckFailed, match="shipped SPECTER embeddings do not score .*mag_f1"):
        specter.released_models(_StubRun("specter", models), inputs)
    monkeypatch.setenv("SDR_DATA", str(_plant(root, _key(scincl.RELEASED_CHECKS, "malteos/scincl", "mdcr", "avg/map"), -0.4,
                                              tmp_path / "c")))
    with pytest.raises(ChapterCheckFailed, match="malteos/scincl on mdcr, avg/map"):
        specter.released_models(_StubRun("scincl", models), inputs, scincl.RELEASED_CHECKS, shipped=False,
                                extra_dirs={"mdcr": data["mdcr"]})


# ------------------------------------------------------------------------------------------------- the dry run
@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_branch_the_dry_run_requires_is_recorded_by_the_library(chapter):
    """A typo in DRY_RUN_BRANCHES (or a branch no code records) would fail only the dry run: each name is a literal of
    a run.branch call (or of released_part's, sdr.released) in the library."""
    source = "\n".join(path.read_text() for path in (ROOT / "lib" / "sdr").rglob("*.py"))
    for name in CHAPTERS[chapter].DRY_RUN_BRANCHES:
        assert f'branch("{name}")' in source, name


def specter_data() -> list[str]:
    from sdr.datasets.registry import CHAPTER_DATA

    return list(CHAPTER_DATA["specter"])


def test_the_dry_run_fixtures_reach_the_papers_branches(tmp_path):
    """The w/o-leakage triples are a graph the paper's bands fit unclipped (every paper a query); SciDocs names
    training papers (leakage, as the released data) and ships SPECTER embeddings of every paper, with their
    expected scores in the mirror."""
    from sdr import dryrun
    from sdr.evaluate import scidocs

    fixture = dryrun.FixtureCorpus()
    scincl.write_dry_run_wol(tmp_path / "specter_wol", fixture)
    triples = scincl.read_wol_triples(tmp_path / "specter_wol" / scincl.WOL_FILE)
    from sdr.corpus import CitationGraph

    graph = CitationGraph()
    for query, positive, _ in triples:
        if (query, positive) not in graph:
            graph.add(query, positive)
    assert len(graph.nodes) > scincl.PAPER_BANDS.k_hard + scincl.PAPER_BANDS.c_easy + 1
    assert scincl.clip_bands(scincl.PAPER_BANDS, len(graph.nodes)) == scincl.PAPER_BANDS
    known = {str(fixture.corpus_ids[pid]) for pid in fixture.train.papers}
    leaked = set(specter.dry_run_leaked_papers(fixture))
    ids = {pid for triple in triples for pid in triple}
    assert known & ids and not {str(fixture.corpus_ids[pid]) for pid in leaked} & ids
    specter.write_dry_run_scidocs(tmp_path / "scidocs", fixture)
    assert leaked <= scidocs.split_paper_ids(tmp_path / "scidocs", "test")
    # the shipped embeddings, written after SciDocs (CHAPTER_DATA's order), cover each file's papers, leaked included
    assert specter_data().index("scidocs") < specter_data().index("scidocs_specter_embeddings")
    benchmarks.write_shipped_embeddings(tmp_path / "scidocs_specter_embeddings", fixture)
    for name, metadata in benchmarks.SHIPPED_FIXTURE_ROUTES.items():
        lines = (tmp_path / "scidocs_specter_embeddings" / name).read_text().splitlines()
        assert {json.loads(line)["paper_id"] for line in lines} == set(
            json.loads((tmp_path / "scidocs" / metadata).read_text()))
    assert leaked <= {json.loads(line)["paper_id"] for line in
                      (tmp_path / "scidocs_specter_embeddings" / "user-citation.jsonl").read_text().splitlines()}
    expected = json.loads((tmp_path / released.EXPECTED_FILE).read_text())
    assert {k.split("|")[-1] for k in expected} == {*specter.METRIC_COLUMNS}


def test_wol_triples_reader_names_a_bad_line(tmp_path):
    path = tmp_path / scincl.WOL_FILE
    path.write_text("query_paper_id,positive_id,negative_id\n1,2,3\n4,5\n")
    with pytest.raises(ValueError, match=r"specter-wol__train_triples.csv:3: expected query_paper_id"):
        scincl.read_wol_triples(path)
    path.write_text("1,2,3\n4,5,6\n")
    assert scincl.read_wol_triples(path) == [("1", "2", "3"), ("4", "5", "6")]


# ------------------------------------------------------------------------------------------------- pairing
def _ours():
    return pd.DataFrame({column: [70.0, 80.0, 81.0] for column in specter.METRIC_COLUMNS},
                        index=["untrained encoder", "SPECTER", "SciNCL"])


def test_rows_are_paired_only_when_data_model_and_protocol_match():
    rows = specter.PAPER_ROWS
    origins = {"untrained encoder": rows["SciBERT"], "SPECTER": rows["SPECTER"],
               # planted: SciNCL's own row, but on another model family
               "SciNCL": specter.RowOrigin(rows["SciNCL"].data, "MiniLM (first 2 layers)", rows["SciNCL"].protocol)}
    paper = book.read_paper_table("scidocs").query("source == 'SciNCL'")
    paired, apart = specter.pair_with_paper(_ours(), origins, {"untrained encoder": "SciBERT", "SPECTER": "SPECTER",
                                                               "SciNCL": "SciNCL"}, specter.METRIC_COLUMNS, paper)
    assert list(paired["ours"]) == ["untrained encoder", "SPECTER"]
    spec = paired.set_index("ours").loc["SPECTER"]
    assert spec["avg (paper)"] == 80.0 and spec["avg difference"] == pytest.approx(0.0)
    assert spec["mag_f1 difference"] == pytest.approx(80.0 - 82.0)
    assert list(apart["ours"]) == ["SciNCL"] and "model: ours 'MiniLM (first 2 layers)'" in apart["shown apart because"][0]
    # the protocol alone differs (no recommendation task): apart too
    origins["SPECTER"] = specter.RowOrigin(rows["SPECTER"].data, "SciBERT", specter.scidocs_protocol(True, False))
    paired, apart = specter.pair_with_paper(_ours(), origins, {"SPECTER": "SPECTER"}, ["avg"], paper)
    assert paired.empty and "protocol" in apart["shown apart because"][0]


def _paper_p(chapter: str, **changes) -> SimpleNamespace:
    """The paper profile's parameters of ``chapter`` (profiles.yml), with ``changes``."""
    return SimpleNamespace(**{**book.chapter_parameters(chapter, "paper"), **changes})


#: SciNCL §4.3 as printed (the paper text), the settings the pairing rule and PAPER_SETTINGS take from it.
SCINCL_TRAINING_TEXT = {"epochs": (2, "for 2 epochs"), "batch_size": (8, "with batch size 8"),
                        "effective_batch": (32, "effective batch size of 32 (same as SPECTER)"),
                        "learning_rate": (2e-5, "learning rate $\\lambda = 2^{-5}$")}


def test_the_paper_settings_are_scincls_and_the_paper_profile_trains_with_them():
    """PAPER_SETTINGS' training values (SPECTER's and SciNCL's) are what SciNCL §4.3 prints, the paper rows' training
    protocol is built from them, and profiles.yml's paper values are the same: the paper profile's rows differ from
    the papers' in no training setting."""
    text = (ROOT.parent / "shared" / "papers" / "001_a9b5f58ad3ba2ccb.txt")
    if text.is_file():  # the settings against the printed text (the papers live beside the checkout)
        printed = text.read_text(encoding="utf-8")
        assert all(phrase in printed for _, phrase in SCINCL_TRAINING_TEXT.values())
    for settings in (specter.PAPER_SETTINGS, scincl.PAPER_SETTINGS):
        assert settings["epochs"][0] == SCINCL_TRAINING_TEXT["epochs"][0] and "§4.3" in settings["epochs"][1]
        assert settings["batch_size"][0] == SCINCL_TRAINING_TEXT["batch_size"][0]
        assert settings["batch_size"][0] * settings["accumulation_steps"][0] == SCINCL_TRAINING_TEXT["effective_batch"][0]
        assert settings["learning_rate"][0] == SCINCL_TRAINING_TEXT["learning_rate"][0]
        assert settings["max_length"][0] == 512
        assert specter.TrainingProtocol.of_paper(settings) == specter.PAPER_ROWS["SciNCL"].training
    for row in ("SPECTER", "SciNCL", "SPECTER (random S2ORC w/o leakage)", "SciNCL (random S2ORC w/o leakage)"):
        assert specter.PAPER_ROWS[row].training == specter.TrainingProtocol(2, 32, 2e-5, 512)
    assert specter.PAPER_ROWS["SciBERT"].training is None
    for chapter in ("specter", "scincl"):
        ours = specter.TrainingProtocol.of_run(_paper_p(chapter))
        assert ours == specter.PAPER_ROWS["SciNCL"].training and not ours.differences(specter.PAPER_ROWS["SciNCL"].training)


def _specter_pairs(p, ours_training="SPECTER's training triplets"):
    run, inputs = SimpleNamespace(p=p), SimpleNamespace(scidocs=SimpleNamespace(real=True))
    origins = specter.row_origins(run, inputs, {"SPECTER": ours_training}, [])
    paper = book.read_paper_table("scidocs").query("source == 'SciNCL'")
    return specter.pair_with_paper(_ours(), origins, {"untrained encoder": "SciBERT", "SPECTER": "SPECTER"},
                                   ["avg"], paper)


def test_a_row_trained_otherwise_than_the_paper_is_shown_apart_with_the_setting():
    """The paper profile's SPECTER row pairs with SciNCL Table 1's SPECTER row; planted: the same row with one epoch,
    or with 128 tokens, or with another effective batch or learning rate, is shown apart, the reason naming the
    setting, ours, the paper's and where the paper says so — and the deviation list names the same setting."""
    from sdr.methods.specter import chapter as specter_chapter

    paired, apart = _specter_pairs(_paper_p("specter"))
    assert list(paired["ours"]) == ["untrained encoder", "SPECTER"] and apart.empty
    planted = {"epochs": (dict(epochs=1), "training epochs: ours 1, the paper's 2 (SciNCL §4.3: 2 epochs"),
               "max_length": (dict(max_length=128), "training input length (tokens): ours 128, the paper's 512 "
                                                    "(SciNCL §3"),
               "accumulation_steps": (dict(accumulation_steps=1), "training effective batch: ours 8, the paper's 32"),
               "learning_rate": (dict(learning_rate=5e-5), "training learning rate: ours 5e-05, the paper's 2e-05")}
    for key, (changes, reason) in planted.items():
        paired, apart = _specter_pairs(_paper_p("specter", **changes))
        assert list(paired["ours"]) == ["untrained encoder"], key  # the untrained row is not trained: still paired
        why = apart.set_index("ours").loc["SPECTER", "shown apart because"]
        assert why.startswith(reason) and "data:" not in why, (key, why)
        lines = specter.specter_deviations(_deviation_run(specter_chapter, **changes))
        assert any(line.startswith(f"`{key}` = {changes[key]!r}; the paper:") for line in lines), key
    # both at once: both reasons, in the rule's order
    _, apart = _specter_pairs(_paper_p("specter", epochs=1, max_length=128))
    why = apart.set_index("ours").loc["SPECTER", "shown apart because"]
    assert why.index("training epochs") < why.index("training input length")
    # a setting the paper does not state is not compared: a paper row without an input length pairs at 128 tokens
    unstated = specter.TrainingProtocol(2, 32, 2e-5, None)
    assert unstated.unstated() == ["input length (tokens)"]
    assert not specter.TrainingProtocol(2, 32, 2e-5, 128).differences(unstated)
    assert "input length" in specter.NOT_COMPARED and "schedule" in specter.NOT_COMPARED


def test_scincl_rows_on_the_triplet_graph_are_never_paired_with_the_papers_scincl(monkeypatch):
    p = _paper_p("scincl", released_checkpoints=["malteos/scincl"])
    run = SimpleNamespace(p=p)
    inputs = SimpleNamespace(scidocs=SimpleNamespace(real=True))
    names = {"SciNCL": "SciNCL sampling on SPECTER's triplet graph (with leakage)",
             "SPECTER sampling": "SPECTER sampling on SPECTER's triplet graph (with leakage)"}
    ours = pd.DataFrame({c: [60.0, 81.0, 79.0, 81.7] for c in specter.METRIC_COLUMNS},
                        index=["untrained encoder", *names.values(), "malteos/scincl (released checkpoint)"])
    training = SimpleNamespace(with_leakage=True)
    graph = SimpleNamespace(label="SPECTER's triplet graph")
    paired, apart = scincl.paper_pairs(run, inputs, training, graph, ours, names)
    assert set(paired["ours"]) == {"untrained encoder", "malteos/scincl (released checkpoint)"}
    assert set(apart["ours"]) == set(names.values())
    why = apart.set_index("ours")["shown apart because"]
    assert "S2ORC's citation graph" in why[names["SciNCL"]] and why[names["SPECTER sampling"]].startswith("data: ")
    assert "SPECTER's triplet graph" in why[names["SciNCL"]]
    # the rule reads the graph's source, not its label: the triplet graph's embedding stands apart ...
    on_triplets = SimpleNamespace(source="SPECTER's triplet graph")
    paired, apart = scincl.paper_pairs(run, inputs, training, graph, ours, names, on_triplets)
    assert names["SciNCL"] in set(apart["ours"]) and names["SciNCL"] not in set(paired["ours"])
    # ... and SciNCL sampled on a given embedding of S2ORC's citation graph pairs with its Table 1 row (81.8), while
    # SPECTER's sampling, still on the triplets' citations, stays apart
    on_s2orc = SimpleNamespace(source=scincl.S2ORC_GRAPH)
    paired, apart = scincl.paper_pairs(run, inputs, training, graph, ours, names, on_s2orc)
    pair = paired.set_index("ours").loc[names["SciNCL"]]
    assert pair["avg (paper)"] == 81.8 and pair["avg difference"] == pytest.approx(81.0 - 81.8)
    assert set(apart["ours"]) == {names["SPECTER sampling"]}
    # the leaderboard's status map follows the same rule: the released checkpoint always, the SciNCL row only on
    # S2ORC's graph, SPECTER's sampling never (its triplet-graph citations)
    released = {"malteos/scincl (released checkpoint)": specter.RELEASED_CHECKPOINTS["malteos/scincl"]}
    assert scincl.released_paper_models(run) == released
    assert scincl.paper_models(run, inputs, training, graph, names) == released
    assert scincl.paper_models(run, inputs, training, graph, names, on_triplets) == released
    assert scincl.paper_models(run, inputs, training, graph, names, on_s2orc) == {**released, names["SciNCL"]: "SciNCL"}
    # planted: on S2ORC's graph but trained for one epoch on 128 tokens: apart, with both settings as the reason,
    # and not on the leaderboard as SciNCL's row
    short = SimpleNamespace(p=_paper_p("scincl", released_checkpoints=["malteos/scincl"], epochs=1, max_length=128))
    paired, apart = scincl.paper_pairs(short, inputs, training, graph, ours, names, on_s2orc)
    assert names["SciNCL"] not in set(paired["ours"]) and "malteos/scincl (released checkpoint)" in set(paired["ours"])
    why = apart.set_index("ours").loc[names["SciNCL"], "shown apart because"]
    assert why.startswith("training epochs: ours 1, the paper's 2") and "input length (tokens): ours 128" in why
    assert scincl.paper_models(short, inputs, training, graph, names, on_s2orc) == released
    # planted: other bands, or a sample of the queries, is other training data: apart, the data as the reason
    for changes, words in ((dict(k_hard=1000), "SciNCL's kNN bands (k+ 25, k-hard 1000) on S2ORC's citation graph"),
                           (dict(max_queries=80), "SPECTER's queries (a sample of at most 80)")):
        other = SimpleNamespace(p=_paper_p("scincl", released_checkpoints=["malteos/scincl"], **changes))
        paired, apart = scincl.paper_pairs(other, inputs, training, graph, ours, names, on_s2orc)
        why = apart.set_index("ours").loc[names["SciNCL"], "shown apart because"]
        assert names["SciNCL"] not in set(paired["ours"]) and why.startswith("data: ") and words in why, changes


def test_the_wol_row_is_set_beside_table_1s_wol_row_only_and_only_by_the_rule():
    """The without_leakage part's trained row: its candidate is SciNCL Table 1's w/o-leakage row (81.1), never the
    with-leakage row (81.8); on the released triples' own graph it stands apart with the graph as the reason, on
    S2ORC's graph with every query it pairs; planted: the with-leakage queries on S2ORC's graph stay apart."""
    p = _paper_p("scincl", released_checkpoints=[])
    run, inputs = SimpleNamespace(p=p), SimpleNamespace(scidocs=SimpleNamespace(real=True))
    names = {"SciNCL": "SciNCL sampling on SPECTER's triplet graph (with leakage)",
             "SPECTER sampling": "SPECTER sampling on SPECTER's triplet graph (with leakage)"}
    ours = pd.DataFrame({c: [60.0, 81.0, 79.0] for c in specter.METRIC_COLUMNS},
                        index=["untrained encoder", *names.values()])
    training, graph = SimpleNamespace(with_leakage=True), SimpleNamespace(label="SPECTER's triplet graph")

    def part(origin):
        scores = pd.DataFrame({c: [80.5] for c in specter.METRIC_COLUMNS}, index=[scincl.WOL_ROW])
        return scincl.WithoutLeakage(True, scores=scores, origins={scincl.WOL_ROW: origin})

    paired, apart = scincl.paper_pairs(run, inputs, training, graph, ours, names, None,
                                       part(scincl.wol_origin(scincl.WOL_GRAPH, 100, 100)))
    assert scincl.WOL_ROW not in set(paired["ours"])
    row = apart.set_index("ours").loc[scincl.WOL_ROW]
    assert row["the paper's row"] == "SciNCL (random S2ORC w/o leakage)"
    assert scincl.WOL_GRAPH in row["shown apart because"] and "S2ORC's citation graph" in row["shown apart because"]
    paired, apart = scincl.paper_pairs(run, inputs, training, graph, ours, names, None,
                                       part(scincl.wol_origin(scincl.S2ORC_GRAPH, 100, 100)))
    pair = paired.set_index("ours").loc[scincl.WOL_ROW]
    assert pair["the paper's row"].startswith("SciNCL (random S2ORC w/o leakage) (SciNCL, Table 1")
    assert pair["avg (paper)"] == 81.1 and pair["avg difference"] == pytest.approx(80.5 - 81.1)
    assert scincl.WOL_ROW not in set(apart["ours"])
    # a share of the queries is other data: apart; and the with-leakage queries never reach the w/o-leakage row
    _, apart = scincl.paper_pairs(run, inputs, training, graph, ours, names, None,
                                  part(scincl.wol_origin(scincl.S2ORC_GRAPH, 10, 100)))
    assert "10 of their 100 query papers" in apart.set_index("ours").loc[scincl.WOL_ROW, "shown apart because"]
    planted = part(f"SciNCL's kNN bands on {scincl.S2ORC_GRAPH}, SPECTER's queries")
    paired, apart = scincl.paper_pairs(run, inputs, training, graph, ours, names, None, planted)
    assert scincl.WOL_ROW in set(apart["ours"]) and not paired["the paper's row"].str.startswith("SciNCL (").any()
    # a part that did not train adds no row
    paired, apart = scincl.paper_pairs(run, inputs, training, graph, ours, names, None,
                                       scincl.WithoutLeakage(False, note="not run (parts)"))
    assert scincl.WOL_ROW not in {*paired.get("ours", []), *apart["ours"]}


def test_wol_triplets_lacking_a_text_are_dropped_and_counted():
    from sdr.samplers.examples import Triplet

    texts = {pid: object() for pid in ("1", "2", "3", "4")}
    triplets = [Triplet(q, p, n, "hard") for q, p, n in (("1", "2", "3"), ("1", "2", "9"), ("4", "8", "9"), ("4", "1", "2"))]
    kept, dropped = scincl.triplets_with_texts(triplets, texts)
    assert kept == [triplets[0], triplets[3]]
    assert dropped == {"triplets": 4, "dropped": 2, "papers without text": 2}  # 8 and 9
    assert scincl.triplets_with_texts(triplets[:1], texts)[1]["dropped"] == 0


def test_the_dry_run_wol_texts_cover_the_triples_but_a_few(tmp_path):
    """The dry run's Datasets API holds texts for the w/o-leakage fixture's ids, the fixture corpus' papers with
    their own texts, and lacks a few (every WOL_FIXTURE_TEXTLESS_EVERY-th new id): the part's drop count runs."""
    from sdr import dryrun

    fixture = dryrun.FixtureCorpus()
    scincl.write_dry_run_wol(tmp_path / "specter_wol", fixture)
    scincl.write_dry_run_wol_texts(tmp_path / "s2ag_bulk_wol_texts", fixture)
    texts = scincl.read_wol_texts(tmp_path / "s2ag_bulk_wol_texts")
    ids = {pid for triple in scincl.read_wol_triples(tmp_path / "specter_wol" / scincl.WOL_FILE) for pid in triple}
    assert texts.asked == len(ids) == scincl.paper.WOL_FIXTURE_PAPERS
    assert set(texts.papers) < ids and texts.missing == len(ids) - len(texts.papers) > 0
    assert texts.without_abstract > 0
    known = {str(cid): pid for pid, cid in fixture.corpus_ids.items()}
    shared = set(texts.papers) & set(known)
    assert shared and all(texts.papers[c].title == fixture.corpus.papers[known[c]].title for c in shared)


# ------------------------------------------------------------------------------------------------- deviations
def _deviation_run(method, settings=specter.PAPER_SETTINGS, **changes):
    values = {key: value for key, (value, _) in settings.items() if value is not None}
    values.update(seed=0, n_papers=400, eval_fraction=0.4, schedule="slanted_triangular", index_every_paper=True)
    values.update(changes)
    real = SimpleNamespace(name="scidocs", real=True, source="SciDocs")
    return SimpleNamespace(chapter="x", p=SimpleNamespace(**values), method=method,
                           data=SimpleNamespace(inputs={"scidocs": real}))


def test_deviations_name_every_setting_off_the_papers_and_a_planted_missing_one_is_caught():
    from sdr.methods.specter import chapter as specter_chapter

    run = _deviation_run(specter_chapter)
    assert specter.specter_deviations(run) == list(specter.SPECTER_DEVIATIONS)  # the paper's settings: only the fixed
    run = _deviation_run(specter_chapter, epochs=1, max_length=32)
    run.data.inputs["scirepeval_cite_prediction"] = SimpleNamespace(name="scirepeval_cite_prediction", real=False,
                                                                      source="SPECTER's sampling on a replica")
    lines = specter.specter_deviations(run)
    assert any(line.startswith("`epochs` = 1; the paper: 2") for line in lines)
    assert any(line.startswith("`max_length` = 32; the paper: 512") for line in lines)
    assert any("scirepeval_cite_prediction is a replica" in line for line in lines)
    # planted: a parameter that changes training with no stated paper value
    planted = SimpleNamespace(TRAINING_PARAMETERS=(*specter_chapter.TRAINING_PARAMETERS, "warmup_ratio"))
    with pytest.raises(ValueError, match=r"\['warmup_ratio'\] change what the page reports but have no paper value"):
        specter.specter_deviations(_deviation_run(planted, warmup_ratio=0.1))


def test_scincl_deviations_state_the_schedule_the_index_and_what_is_not_run(monkeypatch):
    from sdr.methods.scincl import chapter as scincl_chapter

    run = _deviation_run(scincl_chapter, scincl.PAPER_SETTINGS, schedule="linear", index_every_paper=False)
    lines = scincl.scincl_deviations(run)
    assert any("does not state its learning-rate schedule; this run uses a linear warm-up over the first 10 % of the "
               "optimizer steps, then linear decay to 0 (SciNCL states neither the schedule nor a warm-up)." in line
               for line in lines)
    # the warm-up stated is the trainer's (sdr.train.TrainConfig, which the chapter's train_config leaves at its
    # default share): a planted other share shows in the line
    import dataclasses

    from sdr import train

    assert train.TrainConfig().warmup_ratio == 0.1 and train.TrainConfig().warmup_steps is None
    config = scincl_chapter.train_config(SimpleNamespace(p=SimpleNamespace(**vars(run.p), checkpoint_every=0)))
    assert config.warmup_ratio == 0.1 and config.warmup_steps is None and config.schedule == "linear"
    monkeypatch.setattr(train, "TrainConfig", dataclasses.make_dataclass(
        "TrainConfig", [("warmup_ratio", float, 0.25)], bases=(train.TrainConfig,)))
    assert any("a linear warm-up over the first 25 % of the optimizer steps" in line
               for line in scincl.scincl_deviations(run))
    assert any("papers that occur only as negatives are left out" in line for line in lines)
    assert any(line.startswith("`index_every_paper` = False; the paper: True") for line in lines)
    assert any("Init. rows" in line for line in lines) and any("w/o-leakage SPECTER row is not trained" in line
                                                               for line in lines)
    assert any("not on S2ORC's citation graph, so the pairing rule shows it apart" in line for line in lines)
    assert set(scincl.TABLE2_NOT_RUN) == {row for row in book.read_paper_table("scincl_table2")["model"]
                                          if row.startswith("Init.")}
    assert any("the one inside SPECTER's training triplets" in line for line in lines)
    # with a given embedding of S2ORC's graph the page says so, and no longer that the graph is the triplets'
    given = scincl.scincl_deviations(_deviation_run(scincl_chapter, scincl.PAPER_SETTINGS,
                                                    graph_embedding="/data/s2orc_graph"))
    assert any("given embedding of S2ORC's citation graph (`graph_embedding`: /data/s2orc_graph)" in line
               for line in given)
    assert not any("the one inside SPECTER's training triplets" in line for line in given)
    assert any("w/o-leakage SciNCL row is trained on SciNCL's bands sampled on the given S2ORC embedding's rows" in line
               for line in given)
    assert not any("so the pairing rule shows it apart" in line for line in given)


def test_a_planted_missing_scincl_deviation_is_caught():
    """Each deviation SciNCL's page states at every run (schedule, index, graph, Table 2's Init. rows, the
    w/o-leakage row) and each replica has a detector: the list without any one of them fails, naming it."""
    from sdr.methods.scincl import chapter as scincl_chapter

    run = _deviation_run(scincl_chapter, scincl.PAPER_SETTINGS)
    run.data.inputs["mdcr"] = SimpleNamespace(name="mdcr", real=False, source="a replica of MDCR")
    lines = scincl.scincl_deviations(run)
    scincl.expect_scincl_deviations_stated(lines, run)
    for key, words in scincl.SCINCL_FIXED_DEVIATIONS.items():
        planted = [line for line in lines if words(run.p) not in line]
        assert len(planted) == len(lines) - 1, key
        with pytest.raises(ChapterCheckFailed, match=re.escape(f"not stated on the page: [{key!r}]")):
            scincl.expect_scincl_deviations_stated(planted, run)
    planted = [line for line in lines if not line.startswith("mdcr is a replica")]
    with pytest.raises(ChapterCheckFailed, match=re.escape("['replica mdcr']")):
        scincl.expect_scincl_deviations_stated(planted, run)
    # with a given S2ORC embedding, the triplet-graph line is no longer the graph's line
    given = _deviation_run(scincl_chapter, scincl.PAPER_SETTINGS, graph_embedding="/data/s2orc_graph")
    with pytest.raises(ChapterCheckFailed, match=re.escape("['graph']")):
        scincl.expect_scincl_deviations_stated(lines, given)
    # nor with S2ORC's graph embedded in the chapter (graph_source s2orc, the paper profile's), whose line is its own
    in_chapter = _deviation_run(scincl_chapter, scincl.PAPER_SETTINGS, graph_source="s2orc")
    with pytest.raises(ChapterCheckFailed, match=re.escape("['graph']")):
        scincl.expect_scincl_deviations_stated(lines, in_chapter)
    assert any("embedded in the chapter" in line for line in scincl.scincl_deviations(in_chapter))


def test_the_findings_say_what_the_rule_made_of_the_wol_row():
    from sdr.methods.scincl.chapter import _wol_finding

    scores = pd.DataFrame({"avg": [80.5], "avg w/o REC": [84.0]}, index=[scincl.WOL_ROW])
    part = scincl.WithoutLeakage(True, scores=scores, dropped={"triplets": 150, "dropped": 2, "papers without text": 2})
    apart = pd.DataFrame([{"ours": scincl.WOL_ROW, "the paper's row": scincl.WOL_PAPER_ROW,
                           "shown apart because": "data: ours 'x', the paper's 'y'"}])
    line = _wol_finding(part, pd.DataFrame(), apart)
    assert line == (f"- {scincl.WOL_ROW}: SciDocs avg 80.50 (avg w/o REC 84.00), trained on 148 triplets (2 dropped "
                    "for lacking a text); shown apart from SciNCL (random S2ORC w/o leakage) (data: ours 'x', the "
                    "paper's 'y').")
    paired = pd.DataFrame([{"ours": scincl.WOL_ROW, "the paper's row": "SciNCL (random S2ORC w/o leakage) (SciNCL, "
                            "Table 1)", "avg difference": 80.5 - 81.1}])
    assert _wol_finding(part, paired, apart.iloc[:0]).endswith("paired with SciNCL (random S2ORC w/o leakage) "
                                                               "(SciNCL, Table 1): -0.60 on the average.")
