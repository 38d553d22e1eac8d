"""Paragraph retrieval (CoSaEmb Table 6): hand-computed Recall@k, chunk files, replica, bad input, CLI."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from sdr.corpus import Paper, Section
from sdr.evaluate import paragraphs
from sdr.evaluate.embeddings import write_embeddings

# 1-D positions: paper a = {0, 1}, b = {1.4, 5}, c = {2.2} (c has one chunk: never a query).
CHUNKS = [paragraphs.Chunk("a1", "a"), paragraphs.Chunk("a2", "a"), paragraphs.Chunk("b1", "b"),
          paragraphs.Chunk("b2", "b"), paragraphs.Chunk("c1", "c")]
POSITIONS = {"a1": 0.0, "a2": 1.0, "b1": 1.4, "b2": 5.0, "c1": 2.2}


def test_hand_computed_recall():
    # a1: a2 (1), b1 (1.4), c1 (2.2)   -> hit@1, hit@3
    # a2: b1 (.4), a1 (1), c1 (1.2)    -> miss@1, hit@3
    # b1: a2 (.4), c1 (.8), a1 (1.4)   -> miss@1, miss@3 (b2 is 4th)
    # b2: c1 (2.8), b1 (3.6), a2 (4)   -> miss@1, hit@3
    vectors = np.array([[POSITIONS[c.id]] for c in CHUNKS])
    result = paragraphs.evaluate(vectors, CHUNKS, ks=(1, 3))
    assert result["recall@1"] == pytest.approx(1 / 4)
    assert result["recall@3"] == pytest.approx(3 / 4)
    assert result["report"]["queries"] == 4 and result["report"]["excluded_single_chunk_papers"] == 1
    # Paper ids alone work as well, and so do small query blocks.
    same = paragraphs.evaluate(vectors, [c.paper_id for c in CHUNKS], ks=(1, 3), block_size=1)
    assert same["recall@1"] == result["recall@1"] and same["recall@3"] == result["recall@3"]


def test_per_query_hits_are_the_recall_query_by_query():
    vectors = np.array([[POSITIONS[c.id]] for c in CHUNKS])
    plain = paragraphs.evaluate(vectors, CHUNKS, ks=(1, 3))
    result = paragraphs.evaluate(vectors, CHUNKS, ks=(1, 3), block_size=3, per_query=True)
    # the hand-computed hits of test_hand_computed_recall; the scores and report are unchanged by the option
    assert result["per_query"] == {"recall@1": {"a1": 1, "a2": 0, "b1": 0, "b2": 0},
                                   "recall@3": {"a1": 1, "a2": 1, "b1": 0, "b2": 1}}
    assert {k: v for k, v in result.items() if k != "per_query"} == plain and "per_query" not in plain
    by_position = paragraphs.evaluate(vectors, [c.paper_id for c in CHUNKS], ks=(1,), per_query=True)
    assert by_position["per_query"] == {"recall@1": {"0": 1, "1": 0, "2": 0, "3": 0}}
    with pytest.raises(ValueError, match=r"distinct chunk ids; repeated: \['a1'\]"):
        paragraphs.evaluate(vectors, [*CHUNKS[:4], paragraphs.Chunk("a1", "c")], per_query=True)


def test_embeddings_by_id_report_missing(capsys):
    vectors = {cid: np.array([p]) for cid, p in POSITIONS.items() if cid != "b2"}
    result = paragraphs.evaluate(vectors, CHUNKS, ks=(1,))
    # Without b2, b1 is a single-chunk paper: queries a1 (hit), a2 (miss: b1 is nearer).
    assert result["recall@1"] == pytest.approx(1 / 2)
    assert result["report"]["missing_embeddings"] == {"count": 1, "examples": ["b2"]}
    assert "1 ids have no embedding" in capsys.readouterr().err


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="3 embeddings for 2 chunks"):
        paragraphs.evaluate(np.zeros((3, 2)), ["a", "b"])
    with pytest.raises(ValueError, match="no paper has two chunks"):
        paragraphs.evaluate(np.eye(2), ["a", "b"])
    with pytest.raises(ValueError, match="ks must be positive"):
        paragraphs.evaluate(np.eye(2), ["a", "a"], ks=(0,))
    path = tmp_path / "chunks.jsonl"
    path.write_text('{"id": "x", "paper_id": "p"}\n{"id": "x", "paper_id": "q"}\n')
    with pytest.raises(ValueError, match=r"chunks.jsonl:2: duplicate chunk id 'x'"):
        paragraphs.read_chunks(path)
    path.write_text('{"id": "x"}\n')
    with pytest.raises(ValueError, match=r"chunks.jsonl:1: found keys \['id'\]; expected keys 'id' and 'paper_id'"):
        paragraphs.read_chunks(path)


def test_chunks_from_papers_and_round_trip(tmp_path):
    paper = Paper("p1", "T", sections=[Section("1 Intro", ["First.", "Second."]), Section("Empty", [""]),
                                       Section("2 Method", ["Third."])])
    chunks = paragraphs.chunks_from_papers([paper])
    assert [(c.id, c.section, c.text) for c in chunks] == [("p1#0", "1 Intro", "First.\nSecond."),
                                                           ("p1#2", "2 Method", "Third.")]
    path = paragraphs.write_chunks(tmp_path / "c.jsonl", chunks)
    assert paragraphs.read_chunks(path) == chunks


def test_synthetic_replica_and_cli(tmp_path, capsys):
    from sdr.evaluate.cli import _run
    from sdr.synthetic import make_corpus
    from sdr.synthetic.paragraphs import write_paragraphs

    corpus = make_corpus(n_papers=40, seed=4)
    path = write_paragraphs(corpus, tmp_path / "chunks.jsonl", n_papers=10)
    chunks = paragraphs.read_chunks(path)
    assert len({c.paper_id for c in chunks}) == 10
    # An oracle embedding (one coordinate per paper) retrieves same-paper chunks perfectly.
    papers = sorted({c.paper_id for c in chunks})
    oracle = {c.id: np.eye(len(papers))[papers.index(c.paper_id)] for c in chunks}
    write_embeddings(tmp_path / "e.jsonl", oracle)
    parser = argparse.ArgumentParser()
    paragraphs.add_arguments(parser)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(["--chunks", str(path), "--embeddings", str(tmp_path / "e.jsonl"), "--json"])
    capsys.readouterr()  # the replica's summary line
    assert _run(paragraphs)(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["recall@1"] == 1.0 and printed["recall@3"] == 1.0
