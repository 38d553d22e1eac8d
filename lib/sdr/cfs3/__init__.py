"""CFS3: sentences labelled with communicative functions by n-gram distant supervision.

The construction of SciToricsBERT's dataset (Sugimoto & Aizawa, paper 004, §3.1–3.2, Appendix A),
whose code was never published:

1. :mod:`~sdr.cfs3.phrases` — the Academic Phrasebank's 80 functions (label = position across the
   six pages), or a ``label<TAB>name<TAB>phrase`` file; :mod:`sdr.ppdb` — optional PPDB paraphrases;
2. :mod:`~sdr.cfs3.ngrams` — lemmatised n-grams (n = 5) between placeholders, ambiguous ones dropped;
3. :mod:`~sdr.cfs3.sentences` — sentence pools from S2ORC, CSFCube, CSAbstruct (train only), SciCite,
   the synthetic corpus or ``{"id","text"}`` JSONL, split with pysbd (the paper used NLTK);
   :mod:`~sdr.cfs3.leakage` — evaluation sentences (CSAbstruct dev/test) kept out of the pool, by text;
4. :mod:`~sdr.cfs3.matching` — hashed n-gram windows (+ the dependency-root check with a parser);
5. :mod:`~sdr.cfs3.dataset` — JSONL, the 4:1 stratified split, statistics, agreement with gold labels;
   :mod:`~sdr.cfs3.released` — the released CFS3 files and comparisons with them.

``sdr cfs3 build …`` is the command line (:mod:`~sdr.cfs3.cli`); :mod:`~sdr.cfs3.chapter` holds the CFS3
chapter's steps (one call each, re-exported here: ``cfs3.chapter_phrases(run, inputs)``).
"""

from __future__ import annotations

from sdr.cfs3.build import (PAPER_COUNTS, POOL_SOURCES, CFS3Build, build_cfs3, chapter_sentence_pool, real_sentence_pool,
                             sentence_pool, write_replica_phrases,
                             summary_lines)
from sdr.cfs3.chapter import *  # noqa: F401,F403
from sdr.cfs3.chapter import __all__ as _chapter_all
from sdr.cfs3.cli import register
from sdr.cfs3.dataset import (
    CSABSTRUCT_LABELS,
    GROUP_TO_CSABSTRUCT,
    LABEL_TO_CSABSTRUCT_REFINED,
    empty_labels,
    gold_agreement,
    label_table,
    planted_recovery,
    read_labelled,
    stratified_split,
    write_labelled,
)
from sdr.cfs3.leakage import csabstruct_held_out, exclude_held_out, leakage_audit, normalise_text
from sdr.cfs3.matching import (
    NO_PARSER_NOTE,
    Hit,
    LabelledSentence,
    MatchStats,
    SentenceMatcher,
    TokenizedSentence,
    roots_of,
    tokenize_sentences,
)
from sdr.cfs3.ngrams import Lemmatizer, NgramDictionary, build_ngram_dictionary, ngram_text, ngrams
from sdr.cfs3.phrases import (
    FUNCTION_GROUPS,
    PHRASEBANK_PAGES,
    Phrase,
    PhraseSet,
    combine_table_columns,
    group_of,
    load_phrases,
    merge_phrase_sets,
    read_phrase_tsv,
    read_phrasebank,
    repair_glued_words,
    split_at_placeholders,
)
from sdr.cfs3.released import (
    ReleasedCFS3,
    compare_labelled,
    compare_ngram_dictionaries,
    read_ngram_dict,
    read_released_cfs3,
)
from sdr.cfs3.sentences import (
    S2ORCFilter,
    Sentence,
    SentenceSplitter,
    csabstruct_sentences,
    csfcube_sentences,
    read_sentences_jsonl,
    s2orc_sentences,
    scicite_sentences,
    synthetic_sentences,
)

__all__ = [
    "CFS3Build", "CSABSTRUCT_LABELS", "FUNCTION_GROUPS", "GROUP_TO_CSABSTRUCT", "Hit", "LABEL_TO_CSABSTRUCT_REFINED",
    "LabelledSentence", "Lemmatizer", "MatchStats", "NO_PARSER_NOTE", "NgramDictionary", "PAPER_COUNTS",
    "PHRASEBANK_PAGES", "Phrase", "PhraseSet", "ReleasedCFS3", "S2ORCFilter", "Sentence", "SentenceMatcher",
    "SentenceSplitter", "TokenizedSentence", "build_cfs3", "build_ngram_dictionary", "combine_table_columns", "compare_labelled",
    "compare_ngram_dictionaries", "csabstruct_sentences", "csfcube_sentences", "empty_labels", "gold_agreement",
    "group_of", "label_table", "load_phrases", "merge_phrase_sets", "ngram_text", "ngrams", "planted_recovery", "read_labelled",
    "read_ngram_dict", "read_phrase_tsv", "read_phrasebank", "read_released_cfs3", "read_sentences_jsonl",
    "register", "repair_glued_words", "roots_of", "s2orc_sentences", "scicite_sentences", "split_at_placeholders",
    "stratified_split", "summary_lines", "real_sentence_pool", "sentence_pool", "POOL_SOURCES", "chapter_sentence_pool",
    "write_replica_phrases", "csabstruct_held_out", "exclude_held_out",
    "leakage_audit", "normalise_text", "synthetic_sentences", "tokenize_sentences", "write_labelled",
    *_chapter_all,
]
