"""Sentence retrieval (SciToricsBERT): hand-computed P@1 / MAP@R, readers of the four formats, real
CSAbstruct, the synthetic replica, bad input and the CLI."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from sdr.evaluate import sentences
from sdr.evaluate.embeddings import read_embeddings

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "sentences"


def test_hand_computed_p_at_1_and_map_at_r(capsys):
    # Rays at 0°, 10°, 18° (A), 25°, 45° (B), 205° (C). k = 3 - 1 = 2; C is a singleton: excluded.
    # Neighbours (self excluded) and R = class size - 1:
    #   s1: s2 A, s3 A        R=2  P@1 1  AP@R (1/1 + 2/2)/2 = 1
    #   s2: s3 A, s1 A        R=2  P@1 1  AP@R 1
    #   s3: s4 B, s2 A        R=2  P@1 0  AP@R (0 + 1/2)/2 = 0.25
    #   s4: s3 A              R=1  P@1 0  AP@R 0
    #   s5: s4 B              R=1  P@1 1  AP@R 1
    result = sentences.evaluate(read_embeddings(FIXTURE / "embeddings.jsonl"),
                                sentences.read_labels(FIXTURE / "labels.jsonl"))
    assert result["p@1"] == pytest.approx(3 / 5)
    assert result["map@r"] == pytest.approx((1 + 1 + 0.25 + 0 + 1) / 5)
    report = result["report"]
    assert report["k"] == 2 and report["queries"] == 5 and report["excluded_singleton_queries"] == 1
    assert report["missing_embeddings"] == {"count": 1, "examples": ["s7"]}
    assert "1 ids have no embedding (e.g. s7)" in capsys.readouterr().err


def test_library_and_naive_loop_agree_and_scale_does_not_matter():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(120, 8))
    labels = rng.integers(0, 4, size=120).astype(str)
    labels[7] = "lonely"
    fast = sentences.evaluate(vectors, labels)
    slow = sentences.naive_scores(vectors, labels)
    assert fast["p@1"] == pytest.approx(slow["p@1"], abs=1e-9)
    assert fast["map@r"] == pytest.approx(slow["map@r"], abs=1e-9)
    scaled = sentences.evaluate(vectors * rng.uniform(0.1, 10, size=(120, 1)), labels)
    assert scaled["p@1"] == pytest.approx(fast["p@1"]) and scaled["map@r"] == pytest.approx(fast["map@r"])
    assert fast["report"]["excluded_singleton_queries"] == 1


def test_bad_input():
    with pytest.raises(ValueError, match="3 embeddings for 2 labels"):
        sentences.evaluate(np.ones((3, 2)), ["a", "b"])
    with pytest.raises(ValueError, match="every class has a single sentence"):
        sentences.evaluate(np.eye(3), ["a", "b", "c"])
    # A zero vector stays zero (torch's F.normalize): counted, and still a candidate at distance 1
    # from every unit vector. s1 (1,0) a -> s2 hit; s2 (.8,.6) a -> s1 hit; s3 (0,1) b -> s2 (0.89) miss;
    # s4 (-1,0) b -> the zero vector (1 < 1.41 to s3) miss. The zero vector's class is a singleton.
    zero = sentences.evaluate(np.array([[0.0, 0.0], [1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]]),
                              ["c", "a", "a", "b", "b"])
    assert zero["report"]["zero_vectors"] == 1 and zero["report"]["queries"] == 4
    assert zero["p@1"] == pytest.approx(2 / 4)
    with pytest.raises(ValueError, match=r"need labels given by id"):
        sentences.evaluate({"a": np.ones(2)}, ["x"])


def test_bad_files_name_file_and_line(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"id": "a", "label": "x"}\n{"id": "a", "label": "y"}\n')
    with pytest.raises(ValueError, match=r"labels.jsonl:2: duplicate id 'a'"):
        sentences.read_labels(path)
    path.write_text('{"id": "a"}\n')
    with pytest.raises(ValueError, match=r"labels.jsonl:1: found keys \['id'\]; expected keys 'id' and 'label'"):
        sentences.read_labels(path)
    rct = tmp_path / "rct.txt"
    rct.write_text("###1\nBACKGROUND no tab here\n")
    with pytest.raises(ValueError, match=r"rct.txt:2: expected '###<PMID>' then 'LABEL<TAB>sentence'"):
        sentences.read_pubmed_rct(rct)
    cs = tmp_path / "cs.jsonl"
    cs.write_text('{"abstract_id": 1, "sentences": ["a", "b"], "labels": ["x"]}\n')
    with pytest.raises(ValueError, match=r"cs.jsonl:1: 2 sentences but 1 labels"):
        sentences.read_csabstruct(cs)
    cf = tmp_path / "eval.CL.introduction"
    cf.write_text("x\tnot a number label\n")
    with pytest.raises(ValueError, match=r"eval.CL.introduction:1: expected 'integer label<TAB>sentence'"):
        sentences.read_cf_sentences(tmp_path, sections=("introduction",), disciplines=("CL",))
    with pytest.raises(FileNotFoundError, match="eval.Chem.introduction"):
        sentences.read_cf_sentences(tmp_path, sections=("introduction",))


def test_readers_of_the_four_formats():
    cs = sentences.read_csabstruct(FIXTURE / "csabstruct.jsonl")
    assert [(s.id, s.label) for s in cs] == [("1_0", "background"), ("1_1", "method"), ("1_2", "result"),
                                            ("2_0", "objective"), ("2_1", "other")]
    rct = sentences.read_pubmed_rct(FIXTURE / "pubmed_rct.txt")
    assert [(s.id, s.label) for s in rct] == [("24491034_0", "BACKGROUND"), ("24491034_1", "METHODS"),
                                             ("24491034_2", "RESULTS"), ("24854809_0", "OBJECTIVE"),
                                             ("24854809_1", "CONCLUSIONS")]
    assert rct[1].text == "We randomised @ patients ."
    cf = sentences.read_cf_sentences(FIXTURE / "cf-sentence-dataset", disciplines=("CL",))
    # +0 introduction, +11 methods, +17 results, +23 discussion (SciToricsBERT's convert.py)
    assert [s.label for s in cf] == ["1", "3", "12", "19", "27", "27"]
    assert cf[2].id == "CL.methods:1" and cf[2].text == "Data were collected from Y ."
    cfs3 = sentences.read_cfs3(FIXTURE / "cfs3.jsonl")
    assert [(s.id, s.label) for s in cfs3] == [("c0", "05"), ("c1", "12"), ("c2", "47")]


def test_labels_file_round_trip(tmp_path):
    items = sentences.read_csabstruct(FIXTURE / "csabstruct.jsonl")
    path = sentences.write_labels(tmp_path / "labels.jsonl", items)
    assert sentences.read_labels(path) == {s.id: s.label for s in items}
    assert json.loads(path.read_text().splitlines()[0])["text"] == "Parsing is hard."


def test_real_csabstruct_test_split(real_data):
    items = sentences.read_csabstruct(real_data("csabstruct/test.jsonl"))
    assert len(items) == 1349  # SciToricsBERT Table 2: CSAbstruct 1,349 sentences, 5 labels
    assert len({s.label for s in items}) == 5
    assert len({s.id for s in items}) == 1349  # ids by line: every abstract_id in the file is 0
    # Label-only "embeddings" (one-hot of the class) retrieve perfectly.
    classes = sorted({s.label for s in items})
    onehot = np.eye(len(classes))[[classes.index(s.label) for s in items]]
    jitter = np.random.default_rng(0).normal(scale=1e-3, size=onehot.shape)
    perfect = sentences.evaluate(onehot + jitter, [s.label for s in items])
    assert perfect["p@1"] == 1.0 and perfect["map@r"] == pytest.approx(1.0)
    assert perfect["report"]["k"] == 492  # largest class (background, 493) - 1


def test_synthetic_replicas(tmp_path):
    from sdr.synthetic import make_corpus
    from sdr.synthetic.sentences import write_cfs3, write_csabstruct

    corpus = make_corpus(n_papers=60, seed=2)
    out = write_csabstruct(corpus, tmp_path / "csabstruct", fractions=(0.5, 0.25, 0.25))
    total = sum(len(sentences.read_csabstruct(out / f"{s}.jsonl")) for s in ("train", "dev", "test"))
    assert total == sum(len(p.metadata["abstract_sentences"]) for p in corpus.papers.values())
    cfs3 = sentences.read_cfs3(write_cfs3(corpus, tmp_path / "cfs3" / "CFS3.jsonl"))
    planted = [r for p in corpus.papers.values() for r in p.metadata["rhetorical"]]
    assert len(cfs3) == len(planted)
    assert all(len(s.label) == 2 and s.label.isdigit() for s in cfs3)


def test_cli_contract(capsys):
    from sdr.evaluate.cli import _run

    parser = argparse.ArgumentParser()
    sentences.add_arguments(parser)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(["--labels", str(FIXTURE / "labels.jsonl"),
                              "--embeddings", str(FIXTURE / "embeddings.jsonl"), "--json"])
    assert _run(sentences)(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["p@1"] == pytest.approx(0.6) and printed["map@r"] == pytest.approx(0.65)


def test_per_query_ap_at_r_averages_to_the_evaluators_map_at_r_even_with_ties():
    """The per-query values a paired interval uses are the evaluator's own (same neighbours, same tie order)."""
    rng = np.random.default_rng(0)
    labels = list(rng.choice(list("abcde"), 300)) + ["z"]  # "z": a singleton, not a query
    vectors = rng.normal(size=(301, 8))
    vectors[:50] = vectors[0]  # 50 identical sentences: ties the order of neighbours must break the same way
    result = sentences.evaluate(vectors, labels)
    assert len(result["per_query"]) == 300 and 300 not in result["per_query"]
    assert np.mean(list(result["per_query"].values())) == pytest.approx(result["map@r"], abs=1e-12)
