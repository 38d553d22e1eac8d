"""The CoSaEmb chapter's steps (sdr.methods.cosaemb.chapter and .scoring): each check of an invariant passes on what
the recipe builds and stops, with its message, on a planted fault (the whole chapter runs in tests/test_chapters.py)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pandas as pd
import pytest

from sdr import book
from sdr.corpus import Paper, Section
from sdr.methods import cosaemb
from sdr.methods.cosaemb import Chunker, cosaemb_triplets

SENTENCES = [f"Sentence number {word} talks about graph neural networks and their training." for word in
             ("one", "two", "three", "four", "five", "six", "seven")]


@pytest.fixture(scope="module")
def section_tokenizer(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    assert encoder.add_special_tokens(cosaemb.SPECIAL_TOKENS) == 7
    return encoder.tokenizer


def _source() -> cosaemb.TrainingSource:
    """SPECTER's triplets of five papers (A cites B and C; B cites D); A has an introduction and a method."""
    paper = {pid: Paper(pid, f"Title {pid}", f"{pid} abstract.") for pid in "BCDE"}
    paper["A"] = Paper("A", "A study of graphs", "We study graphs.",
                       sections=[Section("Introduction", [" ".join(SENTENCES[:6])]), Section("Methods", [SENTENCES[6]])])
    records = [(paper["A"], paper["B"], paper["D"]), (paper["A"], paper["C"], paper["E"]),
               (paper["B"], paper["D"], paper["E"])]
    inter, papers, cites = cosaemb.specter_training_set(records)
    return cosaemb.TrainingSource(inter, papers, cites, cosaemb.FullTextReport())


def _built(source, tokenizer, max_length=48):
    split = cosaemb.HeldOut([], ["A"], list(source.inter_all), [], len(source.inter_all))
    chunker = Chunker(tokenizer, max_length)
    triplets, texts, report = cosaemb_triplets(source.papers, source.cites, chunker, query_ids=["A"], seed=0,
                                               inter_triplets=split.inter_train)
    return cosaemb.CoSaEmbTriplets(triplets, texts, report, chunker, False), split


def test_check_triplets_passes_what_the_recipe_builds_and_catches_each_broken_rule(section_tokenizer):
    source = _source()
    built, split = _built(source, section_tokenizer)
    chunks = sum(cosaemb.parse_chunk_id(i) is not None for i in built.texts)
    assert chunks >= 3
    assert cosaemb.check_triplets(built, source, split) == f"{len(built.triplets)} triplets and {chunks} chunks checked"

    def broken(index, **change):
        triplets = list(built.triplets)
        triplets[index] = dataclasses.replace(triplets[index], **change)
        return dataclasses.replace(built, triplets=triplets)

    local = next(i for i, t in enumerate(built.triplets) if t.kind == "local")
    glob = next(i for i, t in enumerate(built.triplets) if t.kind == "global")
    t = built.triplets[local]
    with pytest.raises(book.ChapterCheckFailed, match="the later one the query"):
        cosaemb.check_triplets(broken(local, query=t.positive, positive=t.query), source, split)
    with pytest.raises(book.ChapterCheckFailed, match="abstract of a paper A cites"):
        cosaemb.check_triplets(broken(glob, negative="D"), source, split)  # A does not cite D
    with pytest.raises(book.ChapterCheckFailed, match="its paper's own abstract"):
        cosaemb.check_triplets(broken(glob, positive="B"), source, split)
    reordered = dataclasses.replace(split, inter_train=split.inter_train[::-1])
    with pytest.raises(book.ChapterCheckFailed, match="SPECTER's, unchanged and in their order"):
        cosaemb.check_triplets(built, source, reordered)
    chunk_id = next(i for i in built.texts if cosaemb.parse_chunk_id(i) and cosaemb.parse_chunk_id(i)[2] == 1)
    without_token = dataclasses.replace(built, texts={**built.texts, chunk_id: built.texts[chunk_id].replace(
        "[INTR] ", "", 1)})
    with pytest.raises(book.ChapterCheckFailed, match=f"chunk {chunk_id} must open with"):
        cosaemb.check_triplets(without_token, source, split)
    built.chunker.max_length = 20  # chunks cut for 48 tokens are over a limit of 20
    with pytest.raises(book.ChapterCheckFailed, match="over the limit of 20"):
        cosaemb.check_triplets(built, source, split)


def test_counts_beside_the_papers_and_a_table_2_that_does_not_sum(section_tokenizer, monkeypatch):
    built, _ = _built(_source(), section_tokenizer)
    counts = cosaemb.counts_vs_paper(SimpleNamespace(profile="smoke"), built.report)
    assert list(counts.versus2.columns) == [("CoSaEmb Table 2 (S2ORC)", "Frequency"),
                                            ("CoSaEmb Table 2 (S2ORC)", "Section Triplets"),
                                            ("this book (smoke)", "Frequency"), ("this book (smoke)", "Section Triplets")]
    assert counts.versus2.loc["Method", ("CoSaEmb Table 2 (S2ORC)", "Frequency")] == 97104
    assert counts.versus3.loc["Global Context (Eq. 3)", ("this book (smoke)", "Frequency")] == 2
    table2, table3 = cosaemb.counts_tables(built.report)
    monkeypatch.setattr("sdr.methods.cosaemb.chapter.counts_tables", lambda report: (table2, table3 + 1))
    with pytest.raises(book.ChapterCheckFailed, match="does not sum to our Table 3"):
        cosaemb.counts_vs_paper(SimpleNamespace(profile="smoke"), built.report)


def test_heading_tables_and_the_methods_only_default(monkeypatch):
    source = _source()
    inputs = SimpleNamespace(full_text=SimpleNamespace(kind="replica"), scicite=None)
    headings = cosaemb.heading_tables(inputs, source)
    assert list(headings.table.columns.get_level_values(0).unique()) == ["training full text (replica)"]
    assert headings.full_text.loc["Method", "occurrences"] == 1 and headings.defaulted == []
    real = cosaemb.aspect_distribution

    def defaulting_results(headings_):
        table = real(headings_)
        table.loc["Results", "of which by default"] = 1
        return table

    monkeypatch.setattr("sdr.methods.cosaemb.chapter.aspect_distribution", defaulting_results)
    with pytest.raises(book.ChapterCheckFailed, match="only Methods may receive headings by default"):
        cosaemb.heading_tables(inputs, source)


def test_the_probe_loss_check(monkeypatch):
    def table(graded, control):
        return pd.DataFrame({"loss before": {cosaemb.GRADED: graded[0], cosaemb.CONTROL: control[0]},
                             "loss after": {cosaemb.GRADED: graded[1], cosaemb.CONTROL: control[1]}})

    assert cosaemb.expect_lower_probe_loss(table((0.6, 0.36), (0.5, 0.52))) is True  # a control a little above
    with pytest.raises(book.ChapterCheckFailed, match=r"graded \(1, 2, 3\): training did not lower the probe loss"):
        cosaemb.expect_lower_probe_loss(table((0.6, 0.55), (0.5, 0.3)))
    with pytest.raises(book.ChapterCheckFailed, match="together"):
        cosaemb.expect_lower_probe_loss(table((0.6, 0.36), (0.5, 0.8)))
    monkeypatch.setenv("SDR_PAPER_DRY_RUN", "1")  # a few steps only: reported, not checked
    assert cosaemb.expect_lower_probe_loss(table((0.6, 0.9), (0.5, 0.8))) is False


def test_heldout_gain_is_the_share_of_the_untrained_loss_removed():
    order = cosaemb.DistanceOrder(pd.DataFrame({"held-out loss (1, 2, 3)": {"untrained": 0.5, cosaemb.GRADED: 0.4,
                                                                           cosaemb.CONTROL: 0.6}}), [])
    assert cosaemb.heldout_gain(order).round(6).to_dict() == {"untrained": 0.0, cosaemb.GRADED: 20.0,
                                                             cosaemb.CONTROL: -20.0}


def test_the_paper_reader_cuts_at_its_length_and_reads_specter_plainly(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    encoder.add_special_tokens(cosaemb.SPECIAL_TOKENS)
    encoder.max_length = 64
    reader = cosaemb.PaperReader(Chunker(encoder.tokenizer, 64), encoder.sep, 8, 4)
    paper = Paper("A", "A study of graphs", " ".join(SENTENCES))
    ours, specter = reader.abstracts("graded (1, 2, 3)", encoder, [paper]), reader.abstracts("SPECTER", encoder, [paper])
    assert encoder.max_length == 64  # restored after reading at 8 tokens
    encoder.max_length = 8
    assert (ours == encoder.encode_texts([reader.chunker.abstract_text(paper)], progress=False)).all()
    assert (specter == encoder.encode_texts([encoder.paper_text(paper)], progress=False)).all()
    assert not (ours == specter).all()
