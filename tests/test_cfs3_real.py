"""CFS3 construction on the real data of ``$SDR_DATA``: the Academic Phrasebank crawl and sentence pools.

The label numbering is checked against the paper itself: Figure 2's n-grams and Table 1's ten
published CFS3 sentences must get the paper's labels.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from sdr.cfs3 import (
    PHRASEBANK_PAGES,
    Lemmatizer,
    Sentence,
    SentenceMatcher,
    build_ngram_dictionary,
    csabstruct_sentences,
    csfcube_sentences,
    gold_agreement,
    read_phrasebank,
    s2orc_sentences,
    scicite_sentences,
)

if not os.environ.get("SDR_DATA"):
    pytest.skip("SDR_DATA is not set: real-data tests need the shared mirror (make test sets it)",
                allow_module_level=True)
DATA = Path(os.environ["SDR_DATA"])

# Paper 004, Table 1 (ten random CFS3 sentences with their labels) and the two Figure 2 sentences.
PAPER_EXAMPLES = [
    ("Optical Flow: The estimation of optical flow is a classic problem in computer vision [18, 24] .", 2),
    ("Initial and final nutrient concentrations, and significance between time points within each treatment "
     "group (t-test, p < 0.05) are shown in Figure 1 .", 48),
    ("It is interesting to note that one obtains Re J = 0 if cos 0̆3b1 e = 0 and U 0 is tri-bimaximal (t a = 1,", 63),
    ("Method: A total of 104 participants (44 SZ patients and 60 age-and gender-matched healthy controls (HC)) "
     "were recruited for this study.", 36),
    ("It has been suggested that dietary Zn is mostly absorbed in the duodenum, ileum, and jejunum by active "
     "transport through ZIP4 [48] .", 22),
    ("It has been suggested that bacteria may use hemolysin to obtain nutrients from the host cells (e.g., irons "
     "released from lysed red blood cells) [35] .", 22),
    ("This finding is consistent with other analyses, indicating that Tu-138 cells are more sensitive to "
     "E2F-1-induced apoptosis than are Tu-167 cells.", 65),
    ("The modified QPM and the Delta method were used to analyse the data for each calendar month.", 47),
    ("It has been argued that the purposeful inclusion of social work values in social work research is one of "
     "its distinguishing features (Shaw et al., 2006) .", 22),
    ("Statistical analysis was performed using unpaired two-tailed Student’s t-test where *P<0.05; **P<0.01.", 45),
    ("Serine hydroxymethyltransferase 2 (SHMT2) plays a vital role in one-carbon metabolism and drives colorectal "
     "carcinogenesis.", 1),
    ("In spite of noticeable progress in the uptake of maternal health care services, inequity has become a "
     "central issue in Bangladesh in the last decade [20, 24, 25].", 1),
]


@pytest.fixture(scope="module")
def lemmatizer() -> Lemmatizer:
    return Lemmatizer()


@pytest.fixture(scope="module")
def phrasebank():
    return read_phrasebank(DATA / "academic_phrasebank")


@pytest.fixture(scope="module")
def dictionary(phrasebank, lemmatizer):
    return build_ngram_dictionary(phrasebank, n=5, lemmatizer=lemmatizer, progress=False)


def test_phrasebank_labels_follow_the_cfs3_page_order(phrasebank):
    assert len(phrasebank.label_names) == 80 and "labels_not_80" not in phrasebank.report
    names = phrasebank.label_names
    assert names[1] == "Establishing the importance of the topic for the world or society"
    assert names[18] == "General comments on the relevant literature"  # first of referring-to-sources (18–32)
    assert names[33] == "Describing previously used research methods"  # describing-methods 33–46
    assert names[47] == "Referring back to the research aims or procedures"  # reporting-results 47–60
    assert names[61] == "Providing background information: reference to the literature"  # discussing 61–72
    assert names[80] == "Setting out recommendations for practice or policy"
    # The paper's Table 1 label names.
    assert names[45] == "Describing the process: statistical procedures"
    assert names[65] == "Comparing the result: supporting previous findings"
    assert PHRASEBANK_PAGES[0] == "introducing-work"
    assert all(phrasebank.by_label()[label] for label in names)  # every function has phrases
    report = phrasebank.report
    assert report["raw_phrase_entries"] + report["raw_table_cells"] == 1943  # SOURCES.md: 1,943 phrases
    assert report["glued_words_repaired"]["werethenshown"] == "were then shown"
    # Label 48 ("Referring to data in a table or chart") exists only as a table on the site.
    assert Counter(p.origin for p in phrasebank.by_label()[48]) == Counter({"table": 90})


def test_ngram_dictionary_matches_figure_2(dictionary):
    assert dictionary.get(("play", "a", "vital", "role", "in")) == 1
    assert dictionary.get(("have", "become", "a", "central", "issue")) == 1
    assert dictionary.report["ngram_label_pairs"] == len(dictionary) > 4000
    assert dictionary.report["labels_without_ngram"] == []


def test_paper_table_1_sentences_get_the_papers_labels(dictionary, lemmatizer):
    sentences = [Sentence(str(i), text) for i, (text, _) in enumerate(PAPER_EXAMPLES)]
    records, stats = SentenceMatcher(dictionary, lemmatizer=lemmatizer).label(sentences, progress=False)
    ours = {int(r.id): r.label for r in records}
    expected = {i: label for i, (_, label) in enumerate(PAPER_EXAMPLES)}
    agree = [i for i in expected if ours.get(i) == expected[i]]
    assert len(agree) == 10 and not set(ours) - set(agree)  # no wrong label, two unlabelled
    # The two misses: "it has been suggested that" is listed under labels 22 and 66 in this crawl
    # (2022), so it is dropped as ambiguous.
    assert sorted(set(expected) - set(agree)) == [4, 5]
    assert dictionary.ambiguous[("it", "have", "be", "suggest", "that")] == (22, 66)


def test_real_sentence_pools_have_the_documented_sizes():
    csab, report = csabstruct_sentences(DATA / "csabstruct", splits=("train", "dev", "test"), progress=False)
    assert report == {"abstracts": 2189, "sentences": 14708}  # 11,333 + 2,026 + 1,349
    train_only, report = csabstruct_sentences(DATA / "csabstruct", progress=False)  # the default: train only
    assert report == {"abstracts": 1668, "sentences": 11333}
    scicite, report = scicite_sentences(DATA / "scicite", progress=False)
    assert len(scicite) == 2777 and report["splits_missing"] == ["train"]
    csfcube, report = csfcube_sentences(DATA / "csfcube", progress=False)
    assert report["papers"] == 4205 and len(csfcube) == report["sentences"] == 29197

    class WholeAbstract:  # pysbd is tested on fixtures; here only the Appendix A filters are checked
        def split(self, text):
            return [text] if text and text.strip() else []

    s2orc, report = s2orc_sentences(DATA / "s2orc" / "metadata" / "sample.jsonl", splitter=WholeAbstract(),
                                    progress=False)
    assert report["papers"] == 1000 and report["skipped_no_venue"] == 262 and report["papers_kept"] == 413
    assert len(s2orc) == report["sentences"] == 413


def test_distant_labels_against_csabstruct_gold(dictionary, lemmatizer):
    sentences, _ = csabstruct_sentences(DATA / "csabstruct", splits=("dev", "test"), progress=False)
    records, stats = SentenceMatcher(dictionary, lemmatizer=lemmatizer).label(sentences, progress=False)
    assert stats.sentences == 3375 and 0 < stats.labelled < 300
    result = gold_agreement(records)
    assert result["n"] == stats.labelled
    assert result["confusion"].values.sum() == stats.labelled
    # Sentences labelled with "introducing work" functions are mostly CSAbstruct background/objective.
    intro = result["confusion"].loc["introducing-work"]
    assert intro["background"] + intro["objective"] > intro["method"] + intro["result"]
    assert 0.0 < result["agreement"] <= result["majority_agreement"] <= 1.0


def test_real_pool_without_csabstruct_dev_and_test():
    """The book's real CFS3 pool holds no CSAbstruct dev/test sentence once filtered (any source)."""
    from sdr.cfs3 import csabstruct_held_out, exclude_held_out, real_sentence_pool

    parts, reports = real_sentence_pool(DATA)
    assert sorted(parts) == ["CSAbstruct train", "CSFCube", "S2ORC", "SciCite"]
    assert len(parts["CSAbstruct train"]) == 11333 and all(s.id.startswith("train:") for s in parts["CSAbstruct train"])
    pool = [s for part in parts.values() for s in part]
    held_out = csabstruct_held_out(DATA / "csabstruct")
    assert [len(v) for v in held_out.values()] == [2026, 1349]
    kept, audit = exclude_held_out(pool, held_out)
    assert (audit["after"] == 0).all()
    assert len(pool) - len(kept) == audit.groupby("pool source")["removed from this source (any set)"].first().sum()
