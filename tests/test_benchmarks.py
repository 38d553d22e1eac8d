"""The Benchmarks chapter's steps (``sdr.methods.benchmarks``) on the smoke profile's replicas with a 1-layer encoder: the
registries drive the page's rows and the leaderboard's, the results store gets the chapter's record, and every
check the chapter relies on fails when its number is wrong."""

from __future__ import annotations

import copy
import re
import json
from types import SimpleNamespace

import pandas as pd
import pytest

from sdr import book
from sdr.book import ChapterCheckFailed
from sdr.methods import benchmarks

SMALL = {"use_real_data": False, "model_layers": 1, "max_length": 32, "csfcube_max_length": 32,
         "csabstruct_max_length": 32, "batch_size": 16, "synthetic_papers": 300, "replica_queries": 12,
         "replica_pool": 30, "paragraph_papers": 60}


def notebook_namespace(chapter: str, profile: str = "smoke", **overrides) -> dict:
    """What a chapter's ``globals()`` hold after its parameters cell ran under papermill at ``profile``."""
    import nbformat

    notebook = nbformat.read(book.NOTEBOOKS / f"{chapter}.ipynb", as_version=4)
    namespace: dict = {}
    exec(next(c.source for c in notebook.cells if "parameters" in c.metadata.get("tags", [])), namespace)
    return {**namespace, **book.chapter_parameters(chapter, profile), **overrides}


@pytest.fixture(scope="module")
def chapter(tmp_path_factory):
    """Every step of the chapter once, as the notebook calls them, on replicas; the record stored in a scratch
    results store."""
    results = tmp_path_factory.mktemp("results")
    patch = pytest.MonkeyPatch()
    patch.setenv("SDR_RESULTS", str(results))
    try:
        run = benchmarks.chapter_run(notebook_namespace("benchmarks", **SMALL))
        released = benchmarks.released_models(run)  # at smoke: one line, nothing read
        inputs = benchmarks.chapter_inputs(run)
        encoders = benchmarks.untrained_encoders(run)
        csfcube = benchmarks.csfcube_scores(run, inputs, encoders)
        sentences = benchmarks.sentence_retrieval(run, inputs, encoders)
        paragraphs = benchmarks.paragraph_retrieval(run, inputs, encoders)
        rows = benchmarks.leaderboard(run, inputs, csfcube, sentences)
        path = benchmarks.store(run, csfcube, sentences, paragraphs, rows, released)
    finally:
        patch.undo()
    return SimpleNamespace(run=run, inputs=inputs, encoders=encoders, csfcube=csfcube, sentences=sentences,
                           paragraphs=paragraphs, rows=rows, path=path, released=released)


def test_the_registries_name_the_rows_of_the_page_and_of_the_leaderboard(chapter):
    run, encoders = chapter.run, chapter.encoders
    label = book.base_model_label(run.p.model_name, run.p.model_layers)
    assert list(encoders) == [f"{label} · {pooling}" for pooling in benchmarks.POOLINGS]
    ranked = benchmarks.csfcube_system_names(encoders)
    # a replica ships no official rankings: the random floor and the oracle, then every ranked system, in order
    assert list(chapter.csfcube.results) == ["random order", "oracle (gold grades)", *ranked]
    assert len(ranked) == len(benchmarks.QUERY_KINDS) * (len(benchmarks.LEXICAL_RANKERS) + len(encoders))
    # the trained rows of the other chapters name these untrained references
    for pooling in benchmarks.POOLINGS:
        assert book.untrained_reference(run.p.model_name, run.p.model_layers, pooling) in ranked
    csfcube_rows = [r["method"] for r in chapter.rows if r["benchmark"] == "csfcube"]
    assert csfcube_rows == ranked  # every ranked system, none of the references
    assert not set(csfcube_rows) & set(benchmarks.CSFCUBE_REFERENCES)
    assert [r["method"] for r in chapter.rows if r["benchmark"] == "csabstruct"] == [
        book.untrained_reference(run.p.model_name, run.p.model_layers, pooling, "csabstruct")
        for pooling in benchmarks.POOLINGS]
    assert all(r["data"] == "replica" and r["training"] == "none" for r in chapter.rows)
    assert {r["input_tokens"] for r in chapter.rows} == {32}


def test_the_steps_compute_what_the_page_shows_and_store_it(chapter, capsys):
    csfcube, sentences, paragraphs = chapter.csfcube, chapter.sentences, chapter.paragraphs
    assert set(csfcube.test.index.get_level_values("facet")) == {"background", "method", "result", "all"}
    oracle = csfcube.test.loc[("oracle (gold grades)", "all")]
    assert (oracle[["map", "ndcg%20", "rp"]] == 1.0).all()
    assert 0 < csfcube.test_all["random order"]["map"] < 1
    # the paper's rows of Table 4, untouched, then ours with the columns the replica has (no PubMed-RCT)
    paper = book.read_paper_table("scitoricsbert_table4")
    assert len(sentences.table) == len(paper) + 2 and sentences.pubmed_scores is None
    assert sentences.table.iloc[len(paper):][["pubmedrct_p@1", "pubmedrct_map@r"]].isna().all().all()
    assert 0 < sentences.chance_p1 < 1 and 0 < paragraphs.chance_r1 < 1
    assert list(paragraphs.table.index) == [*chapter.encoders, "TF-IDF vectors"]
    assert paragraphs.what == "synthetic replica" and paragraphs.caption.startswith("Profile: smoke · Data: paragraph")
    benchmarks.check_official_csfcube(chapter.run, chapter.inputs, csfcube)
    assert "official-evaluator check not applied" in capsys.readouterr().out
    record = json.loads(chapter.path.read_text())
    assert record["chapter"] == "benchmarks" and sorted(record["tables"]) == ["csfcube_dev", "csfcube_test",
                                                                               "paragraphs", "sentences"]
    assert record["extra"]["csfcube_facet_queries"]["fallback_to_abstract"] == 0
    assert len(record["extra"]["leaderboard"]) == len(chapter.rows)
    assert record["sources"] == chapter.run.sources
    assert record["extra"]["parts"] == list(benchmarks.PARTS) and chapter.released is None


# ------------------------------------------------------------------------------------------------ the checks' teeth
def test_a_misread_grade_fails_the_oracle_check(chapter):
    scores = copy.deepcopy(chapter.csfcube)
    scores.results["oracle (gold grades)"]["test"]["method"]["map"] = 0.98
    with pytest.raises(ChapterCheckFailed, match="oracle scores .*'map': 0.98.* on method, not 1"):
        benchmarks._check_csfcube(scores)


def test_a_lexical_ranker_at_the_random_floor_fails(chapter):
    scores = copy.deepcopy(chapter.csfcube)
    floor = scores.results["random order"]["test"]["all"]["map"]
    scores.results["TF-IDF · abstract query"]["test"]["all"]["map"] = floor
    with pytest.raises(ChapterCheckFailed, match="TF-IDF · abstract query test MAP .* does not beat the random"):
        benchmarks._check_csfcube(scores)


def _official(scores, map_all=0.3423, ndcg=0.5328):
    """``scores`` with an official SPECTER row scoring ``map_all``/``ndcg`` on "all" (50 queries)."""
    scores = copy.deepcopy(scores)
    official = copy.deepcopy(scores.results["random order"])
    official["test"]["all"].update({"map": map_all, "ndcg%20": ndcg})
    official["report"] = {**official.get("report", {}), "queries": 50}
    scores.results = {"SPECTER (official rankings)": official, **scores.results}
    return scores


def test_the_official_check_holds_the_published_numbers_and_the_released_sizes(chapter, capsys):
    released = SimpleNamespace(csfcube=SimpleNamespace(official=True, source="CSFCube"))
    with pytest.raises(ChapterCheckFailed, match="not the published"):
        benchmarks.check_official_csfcube(chapter.run, released, _official(chapter.csfcube, map_all=0.3424))
    assert "MAP 0.3424, NDCG%20 0.5328 (published: 0.3423, 0.5328)" in capsys.readouterr().out
    # the published numbers, but not the released collection's sizes
    with pytest.raises(ChapterCheckFailed, match="the released CSFCube has .*'papers': 4205"):
        benchmarks.check_official_csfcube(chapter.run, released, _official(chapter.csfcube))


def test_an_encoder_at_chance_fails_the_sentence_claim(chapter):
    result = copy.deepcopy(chapter.sentences)
    name = next(iter(result.scores))
    result.scores[name]["p@1"] = result.chance_p1
    with pytest.raises(ChapterCheckFailed, match=re.escape(f"CSAbstruct, {name}: P@1 ") + ".* is not above chance"):
        benchmarks.expect_above_chance(chapter.run, result)
    # on the real CSAbstruct the bar is chance plus a margin
    result = copy.deepcopy(chapter.sentences)
    result.real = True
    result.scores[name]["p@1"] = result.chance_p1 + benchmarks.REAL_CSABSTRUCT_MARGIN / 2
    with pytest.raises(ChapterCheckFailed, match=f"\\+ {benchmarks.REAL_CSABSTRUCT_MARGIN:g}"):
        benchmarks.expect_above_chance(chapter.run, result)


def test_in_the_dry_run_a_random_stand_in_only_has_to_clear_chance(chapter, monkeypatch, capsys):
    from sdr import datasets

    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")
    result = copy.deepcopy(chapter.sentences)
    result.real = True
    for scored in result.scores.values():
        scored["p@1"] = result.chance_p1 + benchmarks.REAL_CSABSTRUCT_MARGIN / 2
    benchmarks.expect_above_chance(chapter.run, result)
    assert "tiny random stand-in" in capsys.readouterr().out
    next(iter(result.scores.values()))["p@1"] = result.chance_p1
    with pytest.raises(ChapterCheckFailed, match="is not above chance .* \\+ 0$"):
        benchmarks.expect_above_chance(chapter.run, result)


def test_a_changed_paper_row_fails_the_sentence_table_check(chapter):
    result = copy.deepcopy(chapter.sentences)
    paper = book.read_paper_table("scitoricsbert_table4")
    result.table.loc[result.table.index[0], "csabstruct_p@1"] += 0.001
    with pytest.raises(ChapterCheckFailed, match="the paper's rows changed"):
        benchmarks._check_sentences(result, paper, official=False)
    result = copy.deepcopy(chapter.sentences)
    with pytest.raises(ChapterCheckFailed, match="the released CSAbstruct test split has"):
        benchmarks._check_sentences(result, paper, official=True)  # a replica is not the released split


def test_tfidf_near_chance_fails_the_paragraph_claim(chapter, capsys):
    benchmarks.expect_tfidf_above_chance(chapter.run, chapter.paragraphs)  # the replica clears it
    result = copy.deepcopy(chapter.paragraphs)
    result.table.loc["TF-IDF vectors", "recall@1"] = benchmarks.TFIDF_CHANCE_FACTOR * result.chance_r1
    with pytest.raises(ChapterCheckFailed, match="TF-IDF recall@1 .* is not above 5 × chance"):
        benchmarks.expect_tfidf_above_chance(chapter.run, result)


def test_encoders_out_of_pooling_order_are_refused(chapter):
    sentences = copy.deepcopy(chapter.sentences)
    sentences.scores = dict(reversed(list(sentences.scores.items())))
    with pytest.raises(ChapterCheckFailed, match="is not the mean pooling"):
        benchmarks.leaderboard(chapter.run, chapter.inputs, chapter.csfcube, sentences)


def test_the_csfcube_table_keeps_the_evaluators_columns(chapter):
    from sdr.evaluate import csfcube

    assert list(chapter.csfcube.test.columns) == list(csfcube.METRICS)
    assert isinstance(chapter.csfcube.dev, pd.DataFrame) and chapter.csfcube.dev.index.equals(chapter.csfcube.test.index)


# ------------------------------------------------------------------------------------------------ parts and cost
def test_a_part_not_run_reads_and_stores_nothing_of_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    run = benchmarks.chapter_run(notebook_namespace("benchmarks", **SMALL, parts="sentences"))
    assert run.parts == ("sentences",)
    inputs = benchmarks.chapter_inputs(run)
    assert inputs.csfcube is None and inputs.paragraphs is None and inputs.csabstruct is not None
    encoders = benchmarks.untrained_encoders(run)
    assert benchmarks.released_models(run) is None
    assert benchmarks.csfcube_scores(run, inputs, encoders) is None
    assert benchmarks.paragraph_retrieval(run, inputs, encoders) is None
    out = capsys.readouterr().out
    assert "part 'csfcube' not run" in out and "part 'paragraphs' not run" in out and "Table 6" in out
    sentences = benchmarks.sentence_retrieval(run, inputs, encoders)
    rows = benchmarks.leaderboard(run, inputs, None, sentences)
    assert {r["benchmark"] for r in rows} == {"csabstruct"}
    record = json.loads(benchmarks.store(run, None, sentences, None, rows).read_text())
    assert sorted(record["tables"]) == ["sentences"] and record["extra"]["parts"] == ["sentences"]
    only_released = benchmarks.chapter_run(notebook_namespace("benchmarks", **SMALL, parts="released"))
    assert benchmarks.untrained_encoders(only_released) == {}  # no base model loaded for the released part alone


def test_each_part_reads_its_own_data_and_the_registry_holds_them_all():
    from sdr.datasets import CHAPTER_DATA

    assert set(CHAPTER_DATA["benchmarks"]) == {name for names in benchmarks.PART_DATA.values() for name in names}
    assert set(benchmarks.PART_DATA) == set(benchmarks.PARTS)
    headline = [name for name, part in benchmarks.PARTS.items() if part.headline]
    assert headline == ["released", "csfcube", "sentences"]
    assert "s2orc_specter" not in benchmarks.needs(headline)  # a headline run streams no S2ORC
    assert benchmarks.needs(["paragraphs"]) == ("s2orc_specter",)
    paper = book.chapter_parameters("benchmarks", "paper")
    assert paper["parts"] == "headline"
    from sdr.dryrun import dry_run_overrides

    assert dry_run_overrides("benchmarks")["parts"] == "all"  # the dry run runs every part


def test_the_cost_plan_by_hand(monkeypatch):
    """Two planted checks of one model (SciDocs and CSFCube) and the headline parts at small lengths: every line and
    total from the sizes of data/paper_tables/benchmark_sizes.csv, the measured encoding rate and the stated
    assumptions."""
    from sdr import plan
    from sdr.released import ReleasedCheck

    planted = {"planted": [ReleasedCheck("m", "scidocs", "scidocs", "SPECTER", {"avg": "avg"}, max_length=512),
                           ReleasedCheck("m", "csfcube", "scidocs", "SPECTER", {"map_all": "avg"}, max_length=512),
                           ReleasedCheck("m", "scidocs", "scidocs", "SPECTER", {"mag_f1": "mag_f1"}, max_length=512)]}
    monkeypatch.setattr(benchmarks.cost, "gathered_checks", lambda: planted)
    p = SimpleNamespace(profile="paper", parts="headline", max_length=64, csfcube_max_length=0,
                        csabstruct_max_length=32, paragraph_papers=10)
    cost = benchmarks.cost_plan(p)
    assert cost.selected == ("released", "csfcube", "sentences")
    assert {w.part for w in cost.work} == set(benchmarks.PARTS)  # every line in a part of the registry
    for part, names in benchmarks.PART_DATA.items():  # each part fetches what it reads
        fetched = {w.what.split()[1] for w in cost.work if w.part == part and w.kind == "fetch"}
        assert fetched == {n for n in names if n != "scidocs_specter_embeddings"}, part
    # the H100's encoding measurement, read on the plan's reference GPU (the H200: the same dense peak)
    rate = plan.MEASURED_ENCODE_TOKENS_PER_S * plan.PEAK_TFLOPS["H200"] / plan.PEAK_TFLOPS["H100"]
    encode = {w.what: w for w in cost.work if w.kind == "encode"}
    # one encoding of SciDocs' 223,932 papers at 250 tokens (the third check shares it), CSFCube's 4,205 at 250
    assert encode["m on scidocs (cls, 512 tokens; planted)"].gpu_hours(plan.MEASURED_DEVICE) == pytest.approx(
        223_932 * 250 / rate / 3600)
    assert encode["m on csfcube (cls, 512 tokens; planted)"].gpu_hours(plan.MEASURED_DEVICE) == pytest.approx(
        4_205 * 250 / rate / 3600)
    assert len([w for w in cost.work if w.what.startswith("m on scidocs")]) == 1
    # the untrained encoder, both poolings: CSFCube cut at max_length 64, the sentences at 32 (< 40 assumed)
    csfcube = 2 * 4_205 * 64 / rate / 3600
    sentences = 2 * (1_349 + 30_135) * 32 / rate / 3600
    paragraphs = 2 * 10 * benchmarks.SECTIONS_PER_PAPER * 64 / rate / 3600
    totals = cost.totals()
    h100, t4 = plan._hours_label(plan.MEASURED_DEVICE), "GPU h T4 (scaled)"
    assert totals.loc["csfcube", h100] == pytest.approx(csfcube)
    assert totals.loc["sentences", h100] == pytest.approx(sentences)
    assert totals.loc["paragraphs", h100] == pytest.approx(paragraphs)
    released = (223_932 + 4_205) * 250 / rate / 3600
    assert totals.loc["released", h100] == pytest.approx(released)
    assert totals.loc["selected parts", h100] == pytest.approx(released + csfcube + sentences)
    assert totals.loc["whole chapter", t4] == pytest.approx((released + csfcube + sentences + paragraphs) * 989 / 65)
    # CPU and network: the shipped embeddings' and the model's SciDocs SVM grids and rankers, the downloads
    svm = 2 * (benchmarks.SCIDOCS_SVM_CPU_HOURS + benchmarks.SCIDOCS_RECOMM_CPU_HOURS)
    fetches = [w for w in cost.work if w.part == "released" and w.kind == "fetch"]
    network = sum(w.download_bytes / benchmarks.ASSUMED_BYTES_PER_S + w.requests for w in fetches) / 3600
    assert totals.loc["released", "CPU / network h"] == pytest.approx(svm + network)
    assert cost.download_bytes(["paragraphs"]) == 250 * 1024 ** 3
    assert "one session" in cost.t4_words("released")


def test_a_check_on_a_benchmark_of_unknown_size_is_listed_not_counted(monkeypatch):
    from sdr.released import ReleasedCheck

    monkeypatch.setattr(benchmarks.cost, "gathered_checks", lambda: {"planted": [
        ReleasedCheck("m", "scirepeval", "scidocs", "SPECTER", {"avg": "avg"})]})
    p = SimpleNamespace(profile="paper", parts="all", max_length=64, csfcube_max_length=0, csabstruct_max_length=0,
                        paragraph_papers=10)
    line = next(w for w in benchmarks.cost_plan(p).work if w.what.startswith("m on scirepeval"))
    assert line.texts == 0 and "size unknown" in line.how


# ------------------------------------------------------------------------------------------------ fidelity
def test_rows_pair_only_with_a_paper_row_of_the_same_identity():
    identity = benchmarks.TABLE4_IDENTITIES["SciBERT avg."]
    ours = {"SciBERT · mean": identity,
            "SciBERT · mean on a replica": benchmarks.RowIdentity("CSAbstruct replica", identity.model, "mean",
                                                                  identity.protocol),
            "SciBERT · cls": benchmarks.RowIdentity(identity.data, identity.model, "cls", identity.protocol)}
    pairing = benchmarks.pair_rows(ours, benchmarks.TABLE4_IDENTITIES)
    assert pairing.paired == {"SciBERT · mean": "SciBERT avg."}
    assert "data: ours 'CSAbstruct replica'" in pairing.apart["SciBERT · mean on a replica"]
    assert "nearest: 'SciBERT avg.'" in pairing.apart["SciBERT · cls"] and "pooling: ours 'cls'" in \
        pairing.apart["SciBERT · cls"]


def test_the_smoke_rows_stand_apart_from_table_4(chapter, capsys):
    pairing = benchmarks.sentence_pairs(chapter.run, chapter.sentences)
    assert not pairing.paired and set(pairing.apart) == set(chapter.sentences.scores)
    assert all("all-MiniLM-L6-v2 (first 1 layers)" in reason for reason in pairing.apart.values())
    assert "shown apart" in capsys.readouterr().out


def test_what_differs_names_each_difference_of_the_run(chapter, monkeypatch):
    lines = benchmarks.differences_from_the_papers(chapter.run, chapter.inputs, chapter.csfcube, chapter.sentences,
                                                   chapter.paragraphs)
    text = "\n".join(lines)
    assert "cut at 32 tokens" in text and "synthetic replicas" in text and "all-MiniLM-L6-v2" in text
    assert "PubMed-RCT was not found" in text and "last partial batch" in text and "not CoSaEmb's arXiv set" in text
    assert "LinearSVC" not in text  # no SciDocs scored at smoke
    # a difference the run has but the page would not state stops the chapter
    monkeypatch.delitem(benchmarks.DEVIATIONS, "csfcube tokens")
    with pytest.raises(ChapterCheckFailed, match="found but not stated on the page: \\['csfcube tokens'\\]"):
        benchmarks.differences_from_the_papers(chapter.run, chapter.inputs, chapter.csfcube, chapter.sentences,
                                               chapter.paragraphs)
