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
        run = book.ChapterRun("benchmarks", notebook_namespace("benchmarks", **SMALL))
        inputs = benchmarks.chapter_inputs(run)
        encoders = benchmarks.untrained_encoders(run)
        csfcube = benchmarks.csfcube_scores(run, inputs, encoders)
        sentences = benchmarks.sentence_retrieval(run, inputs, encoders)
        paragraphs = benchmarks.paragraph_retrieval(run, inputs, encoders)
        rows = benchmarks.leaderboard(run, inputs, csfcube, sentences)
        path = benchmarks.store(run, csfcube, sentences, paragraphs, rows)
    finally:
        patch.undo()
    return SimpleNamespace(run=run, inputs=inputs, encoders=encoders, csfcube=csfcube, sentences=sentences,
                           paragraphs=paragraphs, rows=rows, path=path)


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
