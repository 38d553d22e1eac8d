"""PPDB 2.0 lexical reader and the phrase augmentation of paper 004 §3.1, on a hand-written PPDB file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdr.cfs3 import Phrase, PhraseSet, build_cfs3
from sdr.ppdb import augment_phrases, paraphrase_variants, parse_ppdb_line, read_ppdb

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "cfs3" / "ppdb-lexical.txt"


def test_parse_ppdb_line():
    rule = parse_ppdb_line("[JJ] ||| important ||| significant ||| PPDB2.0Score=3.51 Equivalence=0.61 ||| 0-0 "
                           "||| Equivalence", "f:1")
    assert (rule.lhs, rule.source, rule.target, rule.alignment, rule.entailment) == (
        "JJ", "important", "significant", "0-0", "Equivalence")
    assert rule.score == pytest.approx(3.51) and rule.features["Equivalence"] == pytest.approx(0.61)
    old = parse_ppdb_line("[RB] ||| increasingly ||| progressively ||| p(e|f)=1.2 ||| 0-0", "f:2")
    assert old.entailment is None and old.score is None and old.features == {"p(e|f)": 1.2}


@pytest.mark.parametrize("line, message", [
    ("[NN] ||| a ||| b", r"f:3: expected 'LHS \|\|\| source"),
    ("NN ||| a ||| b ||| x=1 ||| 0-0 ||| Equivalence", r"f:3: left-hand side 'NN'"),
    ("[NN] ||| a ||| b ||| novalue ||| 0-0 ||| Equivalence", r"f:3: feature 'novalue'"),
    ("[NN] ||| a ||| b ||| x=1 ||| 0-0 ||| Synonym", r"f:3: entailment 'Synonym'"),
])
def test_parse_ppdb_line_errors(line, message):
    with pytest.raises(ValueError, match=message):
        parse_ppdb_line(line, "f:3")


def test_read_ppdb_fixture():
    lexicon = read_ppdb(FIXTURE, progress=False)
    report = lexicon.report
    # 11 rules: [VBN] shown (verb), "data set" (two words) and Important→important (identity) are left out.
    assert (report["rules"], report["kept"], report["skipped_pos"], report["skipped_not_single_word"],
            report["skipped_identity"]) == (11, 8, 1, 1, 1)
    assert len(lexicon) == report["source_words"] == 6
    assert lexicon.get("Important") == ["significant", "major"]  # best PPDB 2.0 score first
    assert lexicon.get("attention") == ["interest"] and lexicon.get("shown") == []

    equivalence = read_ppdb(FIXTURE, relations=("Equivalence",), progress=False)
    assert equivalence.get("important") == ["significant"] and equivalence.get("increasingly") == []
    assert equivalence.report["skipped_relation"] == 5  # major, studies, repeatedly, research, increasingly
    strong = read_ppdb(FIXTURE, min_score=2.5, progress=False)
    assert sorted(strong.paraphrases) == ["attention", "important"] and strong.report["skipped_score"] == 5


def test_read_ppdb_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="PPDB file not found"):
        read_ppdb(tmp_path / "missing.txt", progress=False)
    bad = tmp_path / "bad.txt"
    bad.write_text("[NN] ||| a ||| b ||| x=1 ||| 0-0 ||| Equivalence\n[NN] ||| a\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: expected"):
        read_ppdb(bad, progress=False)


def test_augmentation_replaces_one_word_at_a_time():
    lexicon = read_ppdb(FIXTURE, progress=False)
    assert paraphrase_variants("X is increasingly important for Y.", lexicon) == [
        "X is progressively important for Y.", "X is increasingly significant for Y.",
        "X is increasingly major for Y."]
    assert paraphrase_variants("Important studies of X", lexicon) == [
        "Significant studies of X", "Major studies of X", "Important investigations of X"]
    phrases = PhraseSet([Phrase(1, "X is increasingly important for Y."), Phrase(2, "No match here.")],
                        {1: "one", 2: "two"}, {})
    augmented = augment_phrases(phrases, lexicon, progress=False)
    assert len(augmented) == 5 and augmented.report["ppdb_paraphrases_added"] == 3
    assert [p.origin for p in augmented.phrases] == ["phrasebank", "phrasebank", "ppdb", "ppdb", "ppdb"]
    one = augment_phrases(phrases, lexicon, per_phrase=1, seed=0, progress=False)
    assert len(one) == 3 and one.phrases[2] == augment_phrases(phrases, lexicon, per_phrase=1, seed=0,
                                                               progress=False).phrases[2]


def test_build_reports_phrase_counts_with_and_without_ppdb():
    from sdr.cfs3 import Sentence

    phrases = PhraseSet([Phrase(3, "X has attracted growing attention in recent years.")], {3: "three"}, {})
    sentences = [Sentence("a", "Soil has attracted growing interest in recent years.")]
    without = build_cfs3(phrases, sentences, progress=False)
    assert without.counts()["phrases_augmented"] == 1 and without.counts()["labelled"] == 0
    with_ppdb = build_cfs3(phrases, sentences, ppdb=FIXTURE, progress=False)
    # attention → interest adds one phrase, whose 5-grams now find the sentence.
    assert with_ppdb.counts()["phrases_original"] == 1 and with_ppdb.counts()["phrases_augmented"] == 2
    assert [r.ngram for r in with_ppdb.records] == ["have attract grow interest in"]
    assert with_ppdb.ppdb_report["kept"] == 8
