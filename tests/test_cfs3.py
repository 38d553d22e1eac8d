"""CFS3 construction (paper 004, §3.1–3.2) on hand-written fixtures: every step, hand-checked."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from spacy.language import Language
from spacy.tokens import Doc

from sdr.cfs3 import (
    LabelledSentence,
    Lemmatizer,
    NgramDictionary,
    PhraseSet,
    Phrase,
    S2ORCFilter,
    Sentence,
    SentenceMatcher,
    build_cfs3,
    build_ngram_dictionary,
    combine_table_columns,
    compare_labelled,
    compare_ngram_dictionaries,
    csabstruct_sentences,
    csfcube_sentences,
    empty_labels,
    gold_agreement,
    group_of,
    label_table,
    load_phrases,
    merge_phrase_sets,
    planted_recovery,
    read_labelled,
    read_ngram_dict,
    read_phrase_tsv,
    read_phrasebank,
    read_released_cfs3,
    read_sentences_jsonl,
    register,
    repair_glued_words,
    roots_of,
    s2orc_sentences,
    scicite_sentences,
    split_at_placeholders,
    stratified_split,
    synthetic_sentences,
    tokenize_sentences,
    write_labelled,
)
from sdr.cfs3 import phrases as phrases_module

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "data" / "fixtures" / "cfs3"

# A small stand-in for spaCy's lexeme probabilities, so the glue repair is tested without loading 1M words.
SMALL_LEXICON = {"were": -6.7, "was": -6.5, "then": -6.6, "collected": -11.0, "shown": -10.2, "data": -9.0,
                 "using": -8.5, "performed": -11.0, "smith": -11.0, "et": -10.9, "the": -3.0, "theses": -14.0,
                 "har": -11.4, "bison": -13.9, "general": -9.0, "is": -4.5, "ability": -10.0, "in": -4.0,
                 "formally": -12.0, "informally": -13.0, "conducted": -11.0, "to": -3.5, "defining": -12.0}


@pytest.fixture()
def small_lexicon(monkeypatch):
    monkeypatch.setattr(phrases_module, "_lexeme_log_probs", lambda: SMALL_LEXICON)


@pytest.fixture(scope="module")
def lemmatizer() -> Lemmatizer:
    return Lemmatizer()


@pytest.fixture(scope="module")
def fixture_phrasebank() -> PhraseSet:
    # The module-level lexicon patch is not available in module scope: patch by hand for this read.
    original = phrases_module._lexeme_log_probs
    phrases_module._lexeme_log_probs = lambda: SMALL_LEXICON
    try:
        return read_phrasebank(FIXTURES / "phrasebank")
    finally:
        phrases_module._lexeme_log_probs = original


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="sdr")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


# --- phrases ----------------------------------------------------------------------------------

@pytest.mark.parametrize("phrase, pieces", [
    ("X plays a vital role in the metabolism of …", ["plays a vital role in the metabolism of"]),
    ("In the new global economy, X has become a central issue for …",
     ["In the new global economy", "has become a central issue for"]),
    ("Traditionally, it has been argued that … (e.g. Smith, 1960; Jones, 1972).",
     ["Traditionally, it has been argued that"]),
    ("Several biographies of Brown have been published. Smith (2013) presents …",
     ["Several biographies of Brown have been published", "Smith", "presents"]),
    ("Using the X-ray, Xs and Y's were compared with Z ...", ["Using the X-ray", "and", "were compared with"]),
    ("It has been suggested that levels of X are independent of Y (Smith et al",
     ["It has been suggested that levels of", "are independent of"]),
    ("[…] as shown", ["as shown"]),
])
def test_split_at_placeholders(phrase, pieces):
    assert split_at_placeholders(phrase) == pieces


def test_combine_table_columns_joins_runs_and_restarts_at_capitalised_columns():
    columns = [["To date,", "Thus far,"], ["several studies"], ["have"], ["shown that …", "found …", "break"],
               ["Smith (2013)"], ["argues", "claims"], [""]]
    phrases, report = combine_table_columns(columns)
    assert phrases == ["To date, several studies have shown that …", "To date, several studies have found …",
                       "Thus far, several studies have shown that …", "Thus far, several studies have found …",
                       "Smith (2013) argues", "Smith (2013) claims"]
    assert report == {"tables": 2, "tables_too_large_kept_as_cells": 0}
    # A placeholder start ("X may cause …") continues the table; an oversized table stays as cells.
    assert combine_table_columns([["However,"], ["X may cause …", "X is limited by …"]])[0] == [
        "However, X may cause …", "However, X is limited by …"]
    cells, report = combine_table_columns([["a", "b", "c"], ["d", "e", "f"]], max_phrases=8)
    assert cells == ["a", "b", "c", "d", "e", "f"] and report["tables_too_large_kept_as_cells"] == 1


def test_repair_glued_words(small_lexicon):
    text, repairs = repair_glued_words("The samples werethencollected and Datawere performedusing Harbison's theTheses")
    assert text == "The samples were then collected and Data were performed using Harbison's the Theses"
    assert repairs == {"werethencollected": "were then collected", "Datawere": "Data were",
                       "performedusing": "performed using", "theTheses": "the Theses"}
    # Real words missing from the lexicon are not cut into pieces ("general is ability").
    assert repair_glued_words("generalisability") == ("generalisability", {})
    assert repair_glued_words("conductedinformally")[0] == "conducted informally"


def test_read_phrasebank_fixture(fixture_phrasebank):
    phrases = fixture_phrasebank
    assert phrases.label_names == {1: "Showing why the topic matters", 2: "Stating the aim of the study",
                                   3: "What earlier work has shown", 4: "Process verbs in the passive",
                                   5: "Pointing to a table", 6: "An unexpected finding",
                                   7: "Agreement with earlier findings", 8: "Further research"}
    report = phrases.report
    assert report["raw_phrase_entries"] == 15 and report["raw_table_cells"] == 15
    assert report["duplicates"] == 2  # the repeated p1-* block of label 1
    assert report["fragments_without_words"] == 1  # "., 2001)."
    assert report["tables"] == 3 and report["labels_not_80"] == 8
    assert report["glued_words_repaired"] == {"werethencollected": "were then collected"}
    assert len(phrases) == 22 and phrases.counts() == Counter({"phrasebank": 12, "table": 10})
    by_label = phrases.by_label()
    assert [p.text for p in by_label[5]] == [
        "Table 2 summarises the main results for X.", "Table 2 presents the main results for X.",
        "Figure 3 summarises the main results for X.", "Figure 3 presents the main results for X."]
    assert "This article describes the design of …" in [p.text for p in by_label[2]]


def test_read_phrasebank_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="writing-conclusions.json"):
        read_phrasebank(tmp_path)
    for page in phrases_module.PHRASEBANK_PAGES:
        (tmp_path / f"{page}.json").write_text('[{"title": "T", "p0-0": "a phrase here"}]')
    (tmp_path / "reporting-results.json").write_text('[{"title": "T", "q0": "odd key"}]')
    with pytest.raises(ValueError, match=r"reporting-results.json: section 0 key 'q0'"):
        read_phrasebank(tmp_path, repair_glued=False)


def test_read_phrase_tsv_and_errors(tmp_path):
    phrases = read_phrase_tsv(FIXTURES / "phrases.tsv")
    assert len(phrases) == 16 and len(phrases.label_names) == 15
    assert phrases.label_names[11] == "The aim of this research"
    bad = tmp_path / "bad.tsv"
    bad.write_text("1\tName\tfirst phrase\n2\tonly two fields\n")
    with pytest.raises(ValueError, match=r"bad.tsv:2: expected 3 tab-separated fields"):
        read_phrase_tsv(bad)
    bad.write_text("1\tName\tfirst phrase\n1\tOther name\tsecond phrase\n")
    with pytest.raises(ValueError, match=r"bad.tsv:2: label 1 named 'Other name'"):
        read_phrase_tsv(bad)
    bad.write_text("one\tName\tphrase\n")
    with pytest.raises(ValueError, match=r"bad.tsv:1: label 'one'"):
        read_phrase_tsv(bad)
    with pytest.raises(FileNotFoundError):
        load_phrases(tmp_path / "missing.tsv")


def test_merge_phrase_sets_keeps_first_name():
    first = PhraseSet([Phrase(1, "a b c d e")], {1: "One"}, {"source": "first"})
    second = PhraseSet([Phrase(1, "a b c d e"), Phrase(2, "f g h i j")], {1: "Uno", 2: "Two"}, {"source": "second"})
    merged = merge_phrase_sets(first, second)
    assert merged.label_names == {1: "One", 2: "Two"} and len(merged) == 2
    assert merged.report["label_name_conflicts"] == {1: ["One", "Uno"]}


def test_group_of():
    assert [group_of(label) for label in (1, 17, 18, 33, 47, 61, 73, 80)] == [
        "introducing-work", "introducing-work", "referring-to-sources", "describing-methods",
        "reporting-results", "discussing-findings", "writing-conclusions", "writing-conclusions"]
    with pytest.raises(ValueError):
        group_of(81)


# --- n-grams ----------------------------------------------------------------------------------

def test_lemmatizer_lower_cases_and_drops_punctuation(lemmatizer):
    assert lemmatizer.lemmas("In recent years, there has been an increasing interest in …") == [
        "in", "recent", "year", "there", "have", "be", "a", "increase", "interest", "in"]


def test_ngram_dictionary_of_fixture(fixture_phrasebank, lemmatizer):
    dictionary = build_ngram_dictionary(fixture_phrasebank, n=5, lemmatizer=lemmatizer, progress=False)
    label_one = sorted(g for g, label in dictionary.labels.items() if label == 1)
    # "X is increasingly important for …" is too short; "X has attracted growing attention in recent years."
    # gives 7 lemmas, so three 5-grams.
    assert label_one == [("attract", "grow", "attention", "in", "recent"),
                         ("grow", "attention", "in", "recent", "year"),
                         ("have", "attract", "grow", "attention", "in")]
    # "agree well with earlier work on" occurs under labels 7 and 8: its two 5-grams are dropped.
    assert dictionary.ambiguous == {("agree", "good", "with", "early", "work"): (7, 8),
                                    ("good", "with", "early", "work", "on"): (7, 8)}
    assert dictionary.report["ngram_label_pairs_before_drop"] == 54
    assert dictionary.report["ambiguous_ngrams_dropped"] == 2
    assert dictionary.report["ngram_label_pairs"] == len(dictionary) == 50
    assert dictionary.report["phrases_without_ngram"] == 1
    assert dictionary.get(("the", "sample", "be", "then", "collect")) == 4  # after the glue repair


def test_ngram_dictionary_json_roundtrip(tmp_path):
    dictionary = NgramDictionary(3, {("a", "b", "c"): 2, ("b", "c", "d"): 5}, {2: "two", 5: "five"})
    path = dictionary.to_json(tmp_path / "dict.json")
    again = NgramDictionary.from_json(path)
    assert again.labels == dictionary.labels and again.label_names == dictionary.label_names and again.n == 3
    assert read_ngram_dict(path) == dictionary.labels
    path.write_text(json.dumps({"n": 2, "label_names": {}, "ngrams": {"a b c": 1}}))
    with pytest.raises(ValueError, match="has 3 words, expected n=2"):
        NgramDictionary.from_json(path)


# --- matching ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_dictionary() -> NgramDictionary:
    labels = {("have", "attract", "grow", "attention", "in"): 2,
              ("early", "study", "have", "repeatedly", "show"): 22,
              ("much", "research", "be", "need", "to"): 79}
    return NgramDictionary(5, labels, {2: "two", 22: "twenty-two", 79: "seventy-nine"})


def test_matching_and_multi_label_policy(small_dictionary, lemmatizer):
    sentences = [
        Sentence("a", "Coastal erosion has attracted growing attention in recent years.", "t"),
        Sentence("b", "We measured leaf area.", "t"),
        Sentence("c", "More research is needed to see why earlier studies have repeatedly shown this.", "t"),
        Sentence("d", "Earlier studies have repeatedly shown it; earlier studies have repeatedly shown it again.", "t"),
    ]
    matcher = SentenceMatcher(small_dictionary, lemmatizer=lemmatizer)
    hits = matcher.find(lemmatizer.lemmas(sentences[2].text))
    assert [(h.start, h.label) for h in hits] == [(0, 79), (7, 22)]  # "earlier" is word 7
    records, stats = matcher.label(sentences, progress=False)
    assert [(r.id, r.label, r.ngram) for r in records] == [
        ("a", 2, "have attract grow attention in"), ("d", 22, "early study have repeatedly show")]
    assert (stats.sentences, stats.labelled, stats.no_ngram, stats.multi_label, stats.multi_label_dropped) == (
        4, 2, 1, 1, 1)
    assert stats.fired == Counter({"have attract grow attention in": 1, "early study have repeatedly show": 1})
    assert stats.root_check is False and "SKIPPED" in stats.root_check_note
    first, stats_first = SentenceMatcher(small_dictionary, multi_label="first", lemmatizer=lemmatizer).label(
        sentences, progress=False)
    assert [(r.id, r.label) for r in first] == [("a", 2), ("c", 79), ("d", 22)]
    assert stats_first.multi_label == 1 and stats_first.multi_label_dropped == 0
    with pytest.raises(ValueError, match="multi_label='any'"):
        SentenceMatcher(small_dictionary, multi_label="any", lemmatizer=lemmatizer)


def test_pretokenised_pool_gives_the_same_labels(small_dictionary, lemmatizer):
    sentences = [Sentence(str(i), text) for i, text in enumerate(
        ["It has attracted growing attention in the field.", "Nothing here.", "More research is needed to act."])]
    tokenized = list(tokenize_sentences(sentences, lemmatizer, progress=False))
    matcher = SentenceMatcher(small_dictionary, lemmatizer=lemmatizer)
    direct, _ = matcher.label(sentences, progress=False)
    reused, _ = matcher.label(sentences, tokenized=tokenized, progress=False)
    assert [(r.id, r.label) for r in direct] == [(r.id, r.label) for r in reused] == [("0", 2), ("2", 79)]
    with pytest.raises(ValueError, match="2 tokenised sentences for 3"):
        matcher.label(sentences, tokenized=tokenized[:2], progress=False)


def _parsed(lemmatizer, words, heads, deps):
    return Doc(lemmatizer.nlp.vocab, words=words, heads=heads, deps=deps)


def test_root_check_on_hand_built_parse(small_dictionary, lemmatizer):
    matcher = SentenceMatcher(small_dictionary, lemmatizer=lemmatizer)
    # "Erosion has attracted growing attention in recent years ." — root "attracted" (3rd word) is in the n-gram.
    inside = _parsed(lemmatizer,
                     ["Erosion", "has", "attracted", "growing", "attention", "in", "recent", "years", "."],
                     [2, 2, 2, 4, 2, 2, 7, 5, 2],
                     ["nsubj", "aux", "ROOT", "amod", "dobj", "prep", "amod", "pobj", "punct"])
    assert roots_of(inside) == {2}
    hits, kept = matcher.hits_in_doc(inside)
    assert [h.label for h in hits] == [2] and kept == hits
    # "We know that erosion has attracted growing attention in …" — root "know" lies outside the n-gram.
    outside = _parsed(lemmatizer,
                      ["We", "know", "that", "erosion", "has", "attracted", "growing", "attention", "in", "Asia"],
                      [1, 1, 5, 5, 5, 1, 7, 5, 5, 8],
                      ["nsubj", "ROOT", "mark", "nsubj", "aux", "ccomp", "amod", "dobj", "prep", "pobj"])
    hits, kept = matcher.hits_in_doc(outside)
    assert [h.label for h in hits] == [2] and kept == []
    # Through label(): the parsed pool marks one sentence rejected by the root check.
    from sdr.cfs3.matching import tokenize_doc

    tokenized = [tokenize_doc(doc, lemmatizer, check_root=True) for doc in (inside, outside)]
    records, stats = matcher.label([Sentence("in", inside.text), Sentence("out", outside.text)],
                                   tokenized=tokenized, progress=False)
    assert [r.id for r in records] == ["in"] and stats.root_rejected == 1 and stats.root_check is True
    with pytest.raises(ValueError, match="no dependency annotation"):
        roots_of(lemmatizer.nlp.tokenizer("no parse here"))


@Language.component("cfs3_test_last_word_root")
def _last_word_root(doc):
    """A stand-in for a dependency parser: the last word heads every other token."""
    words = [t for t in doc if not t.is_punct]
    root = words[-1] if words else doc[-1]
    for token in doc:
        token.head = root
        token.dep_ = "ROOT" if token.i == root.i else "dep"
    return doc


def test_root_check_through_a_pipeline(small_dictionary, lemmatizer):
    import spacy

    pipeline = spacy.blank("en")
    pipeline.add_pipe("cfs3_test_last_word_root")
    sentences = [Sentence("kept", "Dune erosion has attracted growing attention in"),
                 Sentence("rejected", "More research is needed to understand how roots sense water."),
                 Sentence("none", "We measured leaf area.")]
    matcher = SentenceMatcher(small_dictionary, parser=pipeline, lemmatizer=lemmatizer)
    records, stats = matcher.label(sentences, progress=False)
    assert [r.id for r in records] == ["kept"]  # "in", the root, is the n-gram's last word
    assert (stats.root_check, stats.root_rejected, stats.no_ngram) == (True, 1, 1)
    assert "root check applied" in stats.root_check_note


def test_missing_parser_is_a_clear_error(small_dictionary, lemmatizer):
    with pytest.raises(FileNotFoundError, match="'no_such_pipeline' is not installed"):
        SentenceMatcher(small_dictionary, parser="no_such_pipeline", lemmatizer=lemmatizer)


# --- dataset, split, statistics ---------------------------------------------------------------

def _records(labels: list[int], gold: list[str] | None = None) -> list[LabelledSentence]:
    gold = gold or [None] * len(labels)
    return [LabelledSentence(f"s{i}", f"text {i}", label, f"name {label}", "a b c d e", "t", g)
            for i, (label, g) in enumerate(zip(labels, gold))]


def test_split_reproduces_the_released_cfs3_split_sizes():
    """Fed with the released per-label counts, the split gives the release's train/valid counts exactly."""
    table = pd.read_csv(ROOT / "data" / "paper_tables" / "cfs3_counts.csv", comment="#")
    table = table[table["table"] == "Label Distribution"]
    labels = [int(label) for label, count in zip(table["label"], table["labelled_sentences"])
              for _ in range(int(count))]
    assert len(labels) == 100016
    train, valid, report = stratified_split(_records(labels), valid_fraction=0.2, seed=0)
    assert report["method"] == "sklearn.train_test_split(stratify)"
    train_counts, valid_counts = Counter(r.label for r in train), Counter(r.label for r in valid)
    for label, expected_train, expected_valid in zip(table["label"], table["train"], table["valid"]):
        assert (train_counts.get(int(label), 0), valid_counts.get(int(label), 0)) == (expected_train, expected_valid)
    assert (len(train), len(valid)) == (80012, 20004)


def test_split_of_small_sets():
    train, valid, report = stratified_split(_records([1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3]), seed=1)
    assert report["singleton_labels_to_train"] == 1
    assert Counter(r.label for r in valid) == Counter({1: 1, 2: 1})
    assert {r.id for r in train} | {r.id for r in valid} == {f"s{i}" for i in range(11)}
    assert not {r.id for r in train} & {r.id for r in valid}
    train, valid, report = stratified_split(_records([1, 1, 2, 2, 3, 3]), seed=0)
    assert report["method"].startswith("per-label") and len(valid) == 0  # round(2 × 0.2) = 0 per label


def test_write_and_read_labelled(tmp_path):
    records = _records([1, 22])
    path = write_labelled(tmp_path / "out.jsonl", records)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {"id": "s0", "text": "text 0", "label": "01", "label_name": "name 1",
                        "ngram": "a b c d e", "source": "t"}
    again = read_labelled(path)
    assert [(r.id, r.label, r.label_name) for r in again] == [("s0", 1, "name 1"), ("s1", 22, "name 22")]
    path.write_text('{"text": "x", "label": "01"}\n{"text": "y", "label": "one"}\n')
    with pytest.raises(ValueError, match=r"out.jsonl:2: label 'one'"):
        read_labelled(path)
    path.write_text('{"text": "x"}\n')
    with pytest.raises(ValueError, match=r"out.jsonl:1: expected an object with 'text'"):
        read_labelled(path)


def test_label_table_and_empty_labels():
    records = _records([1, 1, 3])
    names = {1: "one", 2: "two", 3: "three"}
    table = label_table(records, names, train=records[:2], valid=records[2:], ngrams_per_label={1: 4})
    assert table[["label", "sentences", "train", "valid", "ngrams"]].values.tolist() == [
        [1, 2, 2, 0, 4], [2, 0, 0, 0, 0], [3, 1, 0, 1, 0]]
    assert empty_labels(records, names) == [2]


def test_gold_agreement_hand_case():
    # labels 1 (introducing-work), 11 (introducing-work, refined → objective), 34 (describing-methods), 50, 65
    records = _records([1, 11, 34, 34, 50, 65, 65], ["background", "objective", "method", "result", "result",
                                                     "result", "background"])
    result = gold_agreement(records)
    assert result["n"] == 7
    confusion = result["confusion"]
    assert confusion.loc["introducing-work"].tolist() == [1, 1, 0, 0, 0]
    assert confusion.loc["describing-methods", "method"] == 1 and confusion.loc["describing-methods", "result"] == 1
    # group mapping: 1→background ✓, 11→background ✗, 34→method ✓/✗, 50→result ✓, 65→result ✓/✗ → 4/7
    assert result["agreement"] == pytest.approx(4 / 7)
    from sdr.cfs3 import LABEL_TO_CSABSTRUCT_REFINED

    assert gold_agreement(records, label_overrides=LABEL_TO_CSABSTRUCT_REFINED)["agreement"] == pytest.approx(5 / 7)
    # majority per group: introducing 1, methods 1, results 1, discussing 1 → 4/7
    assert result["majority_agreement"] == pytest.approx(4 / 7)
    # majority per function label: 1 ✓, 11 ✓, 34 one of two, 50 ✓, 65 one of two → 5/7
    assert result["label_majority_agreement"] == pytest.approx(5 / 7)


def test_planted_recovery_hand_case():
    sentences = [Sentence("a", "x", meta={"planted_label": 2}), Sentence("b", "y", meta={"planted_label": 11}),
                 Sentence("c", "z", meta={"planted_label": 50}), Sentence("d", "w")]
    records = [LabelledSentence("a", "x", 2, "", "", ""), LabelledSentence("b", "y", 9, "", "", ""),
               LabelledSentence("d", "w", 4, "", "", "")]
    assert planted_recovery(records, sentences) == {"planted": 3, "labelled_planted": 2, "correct": 1,
                                                    "precision": 0.5, "recall": pytest.approx(1 / 3),
                                                    "labelled_unplanted": 1}


# --- released CFS3 ----------------------------------------------------------------------------

def test_read_released_cfs3_fixture_and_compare(lemmatizer):
    released = read_released_cfs3(FIXTURES / "released")
    assert {name: len(records) for name, records in released.splits.items()} == {"all": 5, "train": 4, "valid": 1}
    assert released.splits["all"][2].label == 48 and released.splits["all"][2].ngram == "table 2 summarise the main"
    assert released.label_counts()["valid"] == Counter({79: 1})
    assert len(released.ngrams) == 5 and released.ngrams[("in", "a", "wide", "range", "of")] == 1
    ours = {("attract", "grow", "attention", "in", "recent"): 2, ("early", "study", "have", "repeatedly", "show"): 3,
            ("table", "2", "summarise", "the", "main"): 48, ("much", "research", "be", "need", "to"): 79}
    comparison = compare_ngram_dictionaries(ours, released.ngrams)
    assert comparison == {"ours": 4, "theirs": 5, "shared": 3, "only_ours": 1, "only_theirs": 2,
                          "same_label_of_shared": pytest.approx(2 / 3), "jaccard": pytest.approx(3 / 6)}
    mine = [LabelledSentence("x", "Table 2  summarises the main results for each site.", 48, "", "", ""),
            LabelledSentence("y", "Earlier studies have repeatedly shown that sleep affects memory.", 3, "", "", ""),
            LabelledSentence("z", "Not in the release.", 5, "", "", "")]
    assert compare_labelled(mine, released.splits["all"]) == {"ours": 3, "theirs": 5, "shared_sentences": 2,
                                                              "same_label": 1, "agreement": 0.5}


@pytest.mark.parametrize("payload", [
    {"a b c": "01", "b c d": 2},
    {"01": ["a b c"], "02": [["b", "c", "d"]]},
    [["a b c", 1], [["b", "c", "d"], "02"]],
    [{"ngram": "a b c", "label": "01"}, {"ngram": ["b", "c", "d"], "label": 2}],
])
def test_read_ngram_dict_layouts(tmp_path, payload):
    path = tmp_path / "5gram_dict.json"
    path.write_text(json.dumps(payload))
    assert read_ngram_dict(path) == {("a", "b", "c"): 1, ("b", "c", "d"): 2}


def test_read_ngram_dict_errors(tmp_path):
    path = tmp_path / "5gram_dict.json"
    path.write_text(json.dumps([["a b c", 1], ["a b c", 2]]))
    with pytest.raises(ValueError, match="listed with labels 1 and 2"):
        read_ngram_dict(path)
    path.write_text(json.dumps([{"gram": "a"}]))
    with pytest.raises(ValueError, match=r"item 0: expected \[ngram, label\]"):
        read_ngram_dict(path)
    with pytest.raises(FileNotFoundError, match="none of the released CFS3 files"):
        read_released_cfs3(tmp_path / "empty")


# --- sentence sources -------------------------------------------------------------------------

def test_read_sentences_jsonl_documents_split_with_pysbd(tmp_path):
    sentences, report = read_sentences_jsonl(FIXTURES / "documents.jsonl", documents=True, progress=False)
    assert [(s.id, s.meta["sentence_index"]) for s in sentences] == [("d1", 0), ("d1", 1), ("d1", 2),
                                                                     ("d2", 0), ("d2", 1)]
    assert sentences[1].text == "Smith et al. (2001) measured it in Fig. 3 of their report."
    assert report == {"lines": 2, "sentences": 5}
    sentences, report = read_sentences_jsonl(FIXTURES / "sentences.jsonl", progress=False)
    assert report == {"lines": 7, "empty_texts_skipped": 1, "sentences": 6}
    assert sentences[-1].id == "7" and sentences[3].source == "fixture-tables" and sentences[0].source == "sentences"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: found \{'id': '\"b\"'\}; expected \{'id': str, 'text': str\}"):
        read_sentences_jsonl(bad, progress=False)
    bad.write_text('{"id": "a", "text": "fine"}\nnot json\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not valid JSON"):
        read_sentences_jsonl(bad, progress=False)


def test_s2orc_reader_applies_appendix_a_filters(tmp_path):
    metadata = tmp_path / "metadata.jsonl"
    rows = [
        {"paper_id": "1", "abstract": "First sentence here. Second one follows.", "venue": "Nature", "journal": None},
        {"paper_id": "2", "abstract": "No venue at all.", "venue": "", "journal": None},
        {"paper_id": "3", "abstract": "An ACL paper.", "venue": "ACL", "journal": None, "acl_id": "P19-1001"},
        {"paper_id": "4", "abstract": "A Molecules paper.", "venue": None, "journal": "Molecules"},
        {"paper_id": "5", "abstract": None, "venue": None, "journal": "Cell"},
    ]
    metadata.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parses = tmp_path / "pdf_parses.jsonl"
    parses.write_text(json.dumps({"paper_id": "5", "body_text": [{"text": "Body text one. Body text two."}]}) + "\n")
    sentences, report = s2orc_sentences(metadata, parses, progress=False)
    assert [s.id for s in sentences] == ["1:abstract:0", "1:abstract:1", "5:body:0", "5:body:1"]
    assert (report["skipped_no_venue"], report["skipped_leakage_acl_anthology"],
            report["skipped_leakage_molecules"], report["papers_kept"]) == (1, 1, 1, 2)
    sentences, report = s2orc_sentences(metadata, parses, S2ORCFilter(require_body_text=True), progress=False)
    assert [s.id for s in sentences] == ["5:body:0", "5:body:1"] and report["skipped_no_body_text"] == 3
    sentences, _ = s2orc_sentences(metadata, options=S2ORCFilter(require_venue=False, exclude_leakage=False),
                                   progress=False)
    assert len(sentences) == 5


def test_benchmark_sentence_readers(tmp_path):
    (tmp_path / "csab").mkdir()
    (tmp_path / "csab" / "dev.jsonl").write_text(json.dumps(
        {"abstract_id": 7, "sentences": ["We study X.", "It works."], "labels": ["objective", "result"],
         "confs": [1, 1]}) + "\n")
    sentences, report = csabstruct_sentences(tmp_path / "csab", splits=("dev",), progress=False)
    assert [(s.id, s.gold) for s in sentences] == [("dev:7:0", "objective"), ("dev:7:1", "result")]
    (tmp_path / "csab" / "dev.jsonl").write_text('{"abstract_id": 1, "sentences": ["a"], "labels": []}\n')
    with pytest.raises(ValueError, match=r"dev.jsonl:1: expected 'sentences' and 'labels'"):
        csabstruct_sentences(tmp_path / "csab", splits=("dev",), progress=False)

    (tmp_path / "scicite").mkdir()
    (tmp_path / "scicite" / "dev.jsonl").write_text(json.dumps(
        {"string": " As shown by Smith (2001). ", "label": "background", "unique_id": "u1"}) + "\n")
    sentences, report = scicite_sentences(tmp_path / "scicite", progress=False)
    assert [(s.id, s.text, s.gold) for s in sentences] == [("u1", "As shown by Smith (2001).", "background")]
    assert report["splits_missing"] == ["train", "test"]

    folder = tmp_path / "csfcube" / "readable_annotations"
    folder.mkdir(parents=True)
    block = ("paper_id: {pid}; YEAR: 2017\nTITLE: A title\nABSTRACT: background_label: First sentence.\n"
             "method_label: Second sentence.\n")
    (folder / "1-method-adju.txt").write_text("=====\n" + block.format(pid="11") + "===\n" + block.format(pid="12"))
    (folder / "2-result-adju.txt").write_text("=====\n" + block.format(pid="11"))
    sentences, report = csfcube_sentences(tmp_path / "csfcube", progress=False)
    assert [(s.id, s.gold) for s in sentences] == [("11:0", "background"), ("11:1", "method"),
                                                   ("12:0", "background"), ("12:1", "method")]
    assert report == {"papers": 2, "sentences": 4}


def test_synthetic_sentences_carry_gold_and_planted_labels():
    from sdr.synthetic import make_corpus

    corpus = make_corpus(n_papers=12, seed=3)
    sentences, report = synthetic_sentences(corpus, progress=False)
    planted = sum(len(p.metadata["rhetorical"]) for p in corpus.papers.values())
    assert report["planted_sentences"] == planted == report["planted_sentences_found_after_split"]
    abstracts = [s for s in sentences if ":abstract:" in s.id]
    assert len(abstracts) == sum(len(p.metadata["abstract_sentences"]) for p in corpus.papers.values())
    assert {s.gold for s in abstracts} <= {"background", "objective", "method", "result", "other"}


# --- the whole construction and the command line ----------------------------------------------

def test_build_cfs3_on_fixtures(lemmatizer):
    sentences, _ = read_sentences_jsonl(FIXTURES / "sentences.jsonl", progress=False)
    build = build_cfs3(FIXTURES / "phrases.tsv", sentences, n=5, lemmatizer=lemmatizer, progress=False)
    counts = build.counts()
    assert (counts["phrases_original"], counts["ngram_label_pairs"], counts["sentence_pool"],
            counts["labelled"], counts["multi_label_dropped"]) == (16, 47, 6, 4, 1)
    assert [r.label for r in build.records] == [2, 22, 48, 40]
    assert counts["root_check"] is False


def test_cli_build(tmp_path, capsys):
    out = tmp_path / "cfs3.jsonl"
    code = cli(["cfs3", "build", "--phrasebank", str(FIXTURES / "phrases.tsv"),
                "--sentences", str(FIXTURES / "sentences.jsonl"), "--out", str(out), "--split",
                "--stats", str(tmp_path / "stats.json"), "--ngram-dict", str(tmp_path / "dict.json"), "--no-progress"])
    assert code == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["label"], r["ngram"]) for r in records] == [
        ("s1", "02", "have attract grow attention in"), ("s2", "22", "early study have repeatedly show"),
        ("s4", "48", "table 2 summarise the main"), ("7", "40", "the sample be then collect")]
    assert set(records[0]) == {"id", "text", "label", "label_name", "ngram", "source"}
    assert records[2]["source"] == "fixture-tables" and records[0]["label_name"] == "Why the topic matters to the field"
    err = capsys.readouterr().err
    assert "root check SKIPPED" in err and "1 matched several labels (1 dropped" in err
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["counts"]["labelled"] == 4 and len(stats["labels"]) == 15
    assert (tmp_path / "cfs3_train.jsonl").exists() and (tmp_path / "cfs3_valid.jsonl").exists()
    assert len(NgramDictionary.from_json(tmp_path / "dict.json")) == 47

    code = cli(["cfs3", "build", "--phrasebank", str(FIXTURES / "phrases.tsv"), "--sentences",
                str(FIXTURES / "sentences.jsonl"), "--out", str(out), "--multi-label", "first", "--no-progress",
                "--force"])
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["s1", "s2", "s4", "s5", "7"]


def test_cli_build_documents_and_errors(tmp_path, capsys):
    out = tmp_path / "docs.jsonl"
    cli(["cfs3", "build", "--phrasebank", str(FIXTURES / "phrases.tsv"), "--sentences",
         str(FIXTURES / "documents.jsonl"), "--out", str(out), "--documents", "--no-progress"])
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["sentence_index"], r["label"]) for r in records] == [
        ("d1", 0, "02"), ("d1", 2, "79"), ("d2", 1, "48")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "ok"}\n{"text": "no id"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: found \{'text': '\"no id\"'\}; expected"):
        cli(["cfs3", "build", "--phrasebank", str(FIXTURES / "phrases.tsv"), "--sentences", str(bad),
             "--out", str(out), "--no-progress", "--force"])


def _write_csabstruct(folder: Path, splits: dict[str, list[tuple[str, str]]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        (folder / f"{split}.jsonl").write_text(json.dumps(
            {"abstract_id": 0, "sentences": [t for t, _ in rows], "labels": [g for _, g in rows]}) + "\n")
    return folder


def test_csabstruct_pool_is_the_train_split_unless_asked(tmp_path):
    folder = _write_csabstruct(tmp_path / "csab", {
        "train": [("We train a model.", "method")], "dev": [("Dev sentence.", "result")],
        "test": [("Test sentence one.", "background"), ("Test sentence two.", "result")]})
    sentences, report = csabstruct_sentences(folder, progress=False)
    assert [s.id for s in sentences] == ["train:0:0"] and report == {"abstracts": 1, "sentences": 1}
    sentences, _ = csabstruct_sentences(folder, splits=("train", "dev", "test"), progress=False)
    assert len(sentences) == 4


def test_cfs3_pool_excludes_the_evaluation_sentences(tmp_path):
    """CSAbstruct dev/test sentences leave the pool by text, from every source, and the audit says so."""
    from sdr.cfs3 import csabstruct_held_out, exclude_held_out, leakage_audit

    folder = _write_csabstruct(tmp_path / "csab", {
        "train": [("We train a model.", "method")], "dev": [("In this paper we propose X.", "objective")],
        "test": [("Results are shown in Table 2.", "result"), ("Little is known about Y.", "background")]})
    held_out = csabstruct_held_out(folder)
    assert sorted(held_out) == ["CSAbstruct dev", "CSAbstruct test"] and len(held_out["CSAbstruct test"]) == 2
    pool = [Sentence("a", "We train a model.", "csabstruct"),
            Sentence("b", "results are  shown in table 2.", "csfcube"),     # case and spacing differ: still out
            Sentence("c", "In this paper we propose X.", "s2orc"),
            Sentence("d", "In this paper we propose Z.", "s2orc"),          # different text: kept
            Sentence("e", "Little is known about Y.", "csfcube")]
    kept, audit = exclude_held_out(pool, held_out)
    assert [s.id for s in kept] == ["a", "d"]
    by = audit.set_index(["held-out set", "pool source"])
    assert by.loc[("CSAbstruct test", "csfcube"), "before"] == 2
    assert by.loc[("CSAbstruct dev", "s2orc"), "before"] == 1
    assert by.loc[("CSAbstruct test", "s2orc"), "before"] == 0
    assert (audit["after"] == 0).all()
    assert by.loc[("CSAbstruct test", "csfcube"), "removed from this source (any set)"] == 2
    assert leakage_audit(kept, held_out)["pool sentences equal to a held-out one"].sum() == 0


# --- the data policy (issue 20): the chapter's pool and phrases through ChapterData inputs -------------------------

def test_replica_phrases_and_synthetic_pool_without_data(tmp_path):
    from types import SimpleNamespace

    from sdr import cfs3
    from sdr.synthetic import make_corpus

    phrases = cfs3.load_phrases(cfs3.write_replica_phrases(tmp_path / "phrases"))
    assert len(phrases) > 0 and not phrases.report["labels_without_phrases"]
    # no real sentence source: the synthetic corpus' sentences, with the planted labels to check recovery against
    corpus = make_corpus(n_papers=12, seed=0)
    parts, reports = cfs3.chapter_sentence_pool({name: None for name in cfs3.POOL_SOURCES}, lambda: corpus)
    assert list(parts) == ["synthetic"] and reports["synthetic"]["papers"] == 12
    assert any("planted_label" in s.meta for s in parts["synthetic"])
    # a real source found: only the real sentences (a replica input is never read as a pool source)
    replica = SimpleNamespace(real=False, path=tmp_path / "nothing")
    with pytest.raises(ValueError, match="no real sentence source"):
        cfs3.chapter_sentence_pool({"scicite": replica})
    with pytest.raises(ValueError, match="unknown sources"):
        cfs3.sentence_pool({"pubmed_rct": tmp_path})


def test_sentence_pool_of_real_folders_equals_the_mirror_pool(real_data):
    from sdr import cfs3

    parts, _ = cfs3.sentence_pool({"csabstruct": real_data("csabstruct"), "scicite": real_data("scicite")})
    assert list(parts) == ["CSAbstruct train", "SciCite"]
    whole, _ = cfs3.real_sentence_pool(real_data("scicite").parent)
    assert [s.text for s in whole["SciCite"]] == [s.text for s in parts["SciCite"]]
    assert len(whole) == 4


def test_paper_table_states_no_phrase_count():
    """The paper prints no count of the Phrasebank's phrases: the table leaves it empty and says why."""
    from sdr import book, cfs3

    table = book.read_paper_table("cfs3_counts")
    row = table[(table["table"] == "§3.1") & (table["model"] == "Academic Phrasebank")].iloc[0]
    assert pd.isna(row["phrases"]) and row["labels_used"] == 80 and "no phrase count" in row["note"]
    assert cfs3.PAPER_COUNTS["phrases_original"] is None


def test_chapter_phrases_checks_what_the_data_policy_reads():
    """The CFS3 chapter's Step 1: the real Academic Phrasebank must give all 80 functions; a phrase replica (the
    policy's stand-in, here the book's small phrase file) is read as it is."""
    from types import SimpleNamespace

    from sdr import book, cfs3

    fixture = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "cfs3" / "phrases.tsv"
    run = SimpleNamespace(p=SimpleNamespace(phrasebank_dir="", table_cells="combine"), add_source=lambda line: None)

    def inputs(real):
        return cfs3.ChapterInputs(SimpleNamespace(path=fixture, real=real, official=False), {}, None, None, None)

    phrases = cfs3.chapter_phrases(run, inputs(real=False))
    assert phrases.read == len(phrases.phrases) > 0 and len(phrases.phrases.label_names) < 80
    with pytest.raises(book.ChapterCheckFailed, match="the Academic Phrasebank has 80 functions"):
        cfs3.chapter_phrases(run, inputs(real=True))
