"""The steps of the CFS3 chapter, one call each: phrases, n-grams, the sentence pool, matching, the counts next to the
paper's, the label distribution, the paper's own examples, the check against human labels, the released CFS3, and
the record in the results store.

Each step takes the chapter's :class:`sdr.book.ChapterRun` (its parameters are ``run.p``) and returns what the page
shows. The data policy decides what a step says and which checks apply (the chapter never tests where an input came
from); the checks of invariants live here and raise :class:`sdr.book.ChapterCheckFailed` with a clear message.
Shown in: notebooks/cfs3.ipynb.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from sdr.book.chapter import ChapterCheckFailed
from sdr.cfs3.build import POOL_SOURCES, chapter_sentence_pool, write_replica_phrases
from sdr.cfs3.dataset import (LABEL_TO_CSABSTRUCT_REFINED, empty_labels, gold_agreement, label_table,
                              planted_recovery, stratified_split, write_labelled)
from sdr.cfs3.leakage import csabstruct_held_out, exclude_held_out
from sdr.cfs3.matching import LabelledSentence, MatchStats, SentenceMatcher, tokenize_sentences
from sdr.cfs3.ngrams import Lemmatizer, NgramDictionary, build_ngram_dictionary
from sdr.cfs3.phrases import PhraseSet, group_of, load_phrases
from sdr.cfs3.sentences import Sentence
from sdr.methods.cfs3 import what_differs

__all__ = ["ChapterInputs", "chapter_inputs", "ChapterPhrases", "chapter_phrases", "augment_with_ppdb",
           "chapter_dictionary", "dictionary_report", "dictionary_examples", "show_ambiguous", "ChapterPool",
           "chapter_pool", "MIRROR_COUNTS", "Matching", "match_pool", "counts_next_to_paper", "LabelDistribution",
           "label_distribution", "label_bars", "sample_records", "PAPER_EXAMPLES", "paper_examples", "GoldCheck",
           "gold_check", "gold_heatmap", "planted_check", "released_comparison", "what_differs", "store"]


# ------------------------------------------------------------------------------------------------- inputs
@dataclass
class ChapterInputs:
    """The chapter's inputs under the data policy: the Academic Phrasebank (None when ``phrasebank_dir`` names a
    phrase list instead), the sentence sources of :data:`sdr.cfs3.POOL_SOURCES` (None where not found), the
    released CFS3 (None where not found, or when ``released_dir`` names a clone), and the synthetic corpus behind
    the replicas (built only if a replica is written)."""

    phrasebank: object
    pools: dict
    released: object
    synthetic: Callable
    lemmatizer: Lemmatizer

    @property
    def real_phrasebank(self) -> bool:
        """The Academic Phrasebank itself (the data mirror's crawl, or the one fetched at ``paper``)."""
        return self.phrasebank is not None and self.phrasebank.real

    @property
    def official_phrasebank(self) -> bool:
        """The 2022 crawl's bytes (the registry's digests): where the paper's own examples must get its labels."""
        return self.phrasebank is not None and self.phrasebank.official


def chapter_inputs(run) -> ChapterInputs:
    """Every input through the book's one data policy (:class:`sdr.datasets.ChapterData`): real when found
    (``smoke``, ``real``), real only at ``paper`` (fetched, or one stop naming what is missing); the phrase replica
    is the synthetic corpus' formulaic phrases plus ``data/fixtures/cfs3/phrases.tsv``, and the sentence pool falls
    back to the synthetic corpus when no source is found. Shown in: notebooks/cfs3.ipynb, first code cell."""
    from sdr.synthetic import make_corpus

    p, data = run.p, run.data
    synthetic = data.lazy("the synthetic corpus behind the replicas",
                          lambda: make_corpus(n_papers=p.n_papers, seed=p.seed))
    phrasebank = None if p.phrasebank_dir else data.input(
        "academic_phrasebank", replica=write_replica_phrases,
        replica_source="phrase replica: the synthetic corpus' phrases + data/fixtures/cfs3/phrases.tsv (written for "
                       "this book)")
    pools = {name: data.input(name, optional=True) for name in POOL_SOURCES}
    released = None if p.released_dir else data.input("cfs3", optional=True)
    return ChapterInputs(phrasebank, pools, released, synthetic, Lemmatizer())


# ------------------------------------------------------------------------------------------------- Step 1: phrases
@dataclass
class ChapterPhrases:
    """The phrases matched (after PPDB, when a PPDB file was given) and how many were read before augmentation."""

    phrases: PhraseSet
    read: int
    ppdb_line: str = ""

    @property
    def augmented(self) -> int:
        return len(self.phrases)

    def group_table(self) -> pd.DataFrame:
        """Phrases per function group (Phrasebank page) and origin (list or table), and the functions of each."""
        table = pd.DataFrame([{"group": group_of(p.label) if p.label <= 80 else "other", "origin": p.origin}
                              for p in self.phrases.phrases]).value_counts().unstack(fill_value=0)
        table["labels"] = pd.Series(Counter(group_of(label) for label in self.phrases.label_names))
        return table

    def describe(self) -> str:
        report = self.phrases.report
        repaired = report.get("glued_words_repaired", {})
        return (f"{self.read:,} phrases of {len(self.phrases.label_names)} functions; "
                f"{report.get('duplicates', 0)} repeated phrases kept once, "
                f"{report.get('fragments_without_words', 0)} crawl fragments without words left out, "
                f"{len(repaired)} glued words split again, e.g. {dict(list(repaired.items())[:3])}")


def chapter_phrases(run, inputs: ChapterInputs) -> ChapterPhrases:
    """Step 1: the phrases of the Academic Phrasebank's 80 functions (a crawl of its pages; the phrase replica
    without it; ``phrasebank_dir`` instead when given), checked: every phrase's label is a function of the set,
    every function has a phrase, and the real Phrasebank has all 80.
    Shown in: notebooks/cfs3.ipynb, Step 1: phrases of 80 communicative functions."""
    p = run.p
    phrases = load_phrases(p.phrasebank_dir or inputs.phrasebank.path, table_cells=p.table_cells)
    if p.phrasebank_dir:
        run.add_source(f"phrase list {p.phrasebank_dir}")
    strays = [phrase for phrase in phrases.phrases if phrase.label not in phrases.label_names]
    if strays:
        raise ChapterCheckFailed(f"{len(strays)} phrases carry a label with no function name, e.g. {strays[:2]}")
    if phrases.report["labels_without_phrases"]:
        raise ChapterCheckFailed(f"functions without any phrase: {phrases.report['labels_without_phrases']}")
    if inputs.real_phrasebank and len(phrases.label_names) != 80:
        raise ChapterCheckFailed(f"the Academic Phrasebank has 80 functions, the crawl read "
                                 f"{len(phrases.label_names)}")
    return ChapterPhrases(phrases, len(phrases))


def augment_with_ppdb(run, phrases: ChapterPhrases) -> ChapterPhrases:
    """PPDB 2.0 paraphrases of one noun, adjective or adverb at a time (:mod:`sdr.ppdb`) when ``ppdb_path`` names
    a lexical file; else the phrases as read, said so. Shown in: notebooks/cfs3.ipynb, PPDB augmentation."""
    p = run.p
    if not p.ppdb_path:
        return replace(phrases, ppdb_line=f"No PPDB file given: {phrases.read:,} phrases, no augmentation (the "
                                          f"paper: ~1.5k → 30,505).")
    from sdr.ppdb import augment_phrases, read_ppdb

    lexicon = read_ppdb(p.ppdb_path, progress=False)
    augmented = augment_phrases(phrases.phrases, lexicon, per_phrase=p.ppdb_per_phrase or None, seed=p.seed,
                                progress=False)
    run.add_source(f"PPDB {Path(p.ppdb_path).name}")
    return replace(phrases, phrases=augmented,
                   ppdb_line=f"PPDB: {lexicon.report['source_words']:,} words with noun/adjective/adverb "
                             f"paraphrases; {phrases.read:,} phrases → {len(augmented):,}")


# ------------------------------------------------------------------------------------------------- Step 2: n-grams
def chapter_dictionary(run, inputs: ChapterInputs, phrases: ChapterPhrases) -> NgramDictionary:
    """Step 2: the lemmatised n-grams (n = ``n``) of the phrases, cut at placeholders, those of two labels dropped;
    checked: no kept n-gram is ambiguous, every one has n words, and the report counts them.
    Shown in: notebooks/cfs3.ipynb, Step 2: lemmatised n-grams, ambiguous ones dropped."""
    n = run.p.n
    dictionary = build_ngram_dictionary(phrases.phrases, n=n, lemmatizer=inputs.lemmatizer, progress=False)
    if not set(dictionary.labels).isdisjoint(dictionary.ambiguous):
        raise ChapterCheckFailed("an ambiguous n-gram was kept in the dictionary")
    wrong = [gram for gram in dictionary.labels if len(gram) != n]
    if wrong:
        raise ChapterCheckFailed(f"{len(wrong)} n-grams do not have {n} words, e.g. {wrong[:2]}")
    if dictionary.report["ngram_label_pairs"] != len(dictionary):
        raise ChapterCheckFailed(f"the report counts {dictionary.report['ngram_label_pairs']} n-gram/label pairs, "
                                 f"the dictionary holds {len(dictionary)}")
    return dictionary


def dictionary_report(dictionary: NgramDictionary) -> str:
    """The dictionary's counts, then the functions that have no n-gram."""
    counts = {k: v for k, v in dictionary.report.items() if k != "labels_without_ngram"}
    return f"{counts}\nfunctions without any {dictionary.n}-gram: {dictionary.report['labels_without_ngram']}"


def dictionary_examples(dictionary: NgramDictionary, seed: int, count: int = 8) -> pd.DataFrame:
    """``count`` n-grams drawn at random (seeded), each with its label, function and a phrase it came from."""
    n = dictionary.n
    examples = sorted(dictionary.labels.items(), key=lambda kv: (kv[1], kv[0]))
    return pd.DataFrame([{"label": label, "function": dictionary.label_names[label], f"{n}-gram": " ".join(gram),
                          "from phrase": dictionary.examples[gram]}
                         for gram, label in random.Random(seed).sample(examples, count)])


def show_ambiguous(dictionary: NgramDictionary, count: int = 5) -> None:
    """Up to ``count`` dropped n-grams with the labels whose phrases gave them, or a line saying there were none."""
    from IPython.display import display

    n = dictionary.n
    if dictionary.ambiguous:
        display(pd.DataFrame([{f"ambiguous {n}-gram": " ".join(gram), "labels": labels}
                              for gram, labels in list(dictionary.ambiguous.items())[:count]]))
    else:
        print(f"no {n}-gram comes from phrases of two labels")


# ------------------------------------------------------------------------------------------------- Step 3: the pool
@dataclass
class ChapterPool:
    """The sentence pool by source, the sentences kept (CSAbstruct dev/test removed, capped at ``max_sentences``)
    and the leakage filter's audit."""

    parts: dict[str, list[Sentence]]
    reports: dict
    sentences: list[Sentence]
    before_filter: int
    leakage: pd.DataFrame
    held_out: bool

    @property
    def synthetic(self) -> bool:
        """No real sentence source was found: the pool is the synthetic corpus."""
        return "synthetic" in self.parts

    def table(self) -> pd.DataFrame:
        """Sentences per source, with the counts each reader reports."""
        return pd.DataFrame({name: {"sentences": len(part), **{k: v for k, v in self.reports[name].items()
                                                               if isinstance(v, (int, float)) and k != "sentences"}}
                             for name, part in self.parts.items()}).T.fillna("")

    def show_leakage(self) -> None:
        """The leakage filter's audit (what matched a CSAbstruct dev/test sentence, before and after), where
        CSAbstruct's held-out splits were read."""
        from IPython.display import display

        if not self.held_out:
            return
        display(self.leakage.set_index(["held-out set", "pool source"]))
        print(f"leakage filter: {self.before_filter - len(self.sentences):,} pool sentences equal to a CSAbstruct "
              f"dev/test sentence removed; none is left")

    def describe(self) -> str:
        return f"pool: {len(self.sentences):,} sentences"


def chapter_pool(run, inputs: ChapterInputs) -> ChapterPool:
    """Step 3: the sentences of every source found (:func:`sdr.cfs3.chapter_sentence_pool`; the synthetic corpus'
    when none is), with every sentence equal to a CSAbstruct dev or test sentence removed (SciToricsBERT's
    evaluation data), then capped at ``max_sentences``. Checked: nothing held out is left, no CSAbstruct dev/test
    sentence is in the pool, and the pool has the size the filter and the cap leave.
    Shown in: notebooks/cfs3.ipynb, Step 3: the sentence pool."""
    p = run.p
    parts, reports = chapter_sentence_pool(inputs.pools, inputs.synthetic)
    if "synthetic" in parts:
        run.add_source(f"synthetic corpus sentences ({p.n_papers} papers, seed {p.seed}) in place of the sentence "
                       f"sources not found [replica]")
    else:
        run.branch("pool from the sentence sources")
    pool = [s for part in parts.values() for s in part]
    before_filter = len(pool)
    csabstruct = inputs.pools["csabstruct"]
    held_out = csabstruct_held_out(csabstruct.path) if csabstruct is not None else {}
    pool, leakage = exclude_held_out(pool, held_out)
    if not (leakage["after"] == 0).all():
        raise ChapterCheckFailed(f"CSAbstruct dev/test sentences left in the pool after the filter:\n{leakage}")
    leaked = [s.id for s in pool if s.source == "csabstruct" and s.id.startswith(("dev:", "test:"))]
    if leaked:
        raise ChapterCheckFailed(f"CSAbstruct dev/test sentences in the pool: {leaked[:3]}")
    if p.max_sentences:
        pool = pool[:p.max_sentences]
    filtered = before_filter - int(leakage.groupby("pool source")["removed from this source (any set)"].first().sum())
    expected = min(p.max_sentences, filtered) if p.max_sentences else filtered
    if len(pool) != expected:
        raise ChapterCheckFailed(f"the pool has {len(pool)} sentences, the filter and the cap leave {expected}")
    return ChapterPool(parts, reports, pool, before_filter, leakage, bool(held_out))


# ------------------------------------------------------------------------------------------------- Step 4: matching
#: The counts of the book's default build on the data mirror (its files pinned by sha256 in ``sdr.datasets``),
#: measured when the pipeline was written: a change anywhere in it shows up as a failed check.
MIRROR_COUNTS = {"ngram_label_pairs": 5334, "pool_before_filter": 45977, "pool": 45670, "labelled": 660,
                 "labels_used": 60}


@dataclass
class Matching:
    """The labelled sentences at ``n``, their statistics, and the sweep over ``n_sweep``."""

    records: list[LabelledSentence]
    stats: MatchStats
    sweep: pd.DataFrame
    n: int
    tokenizing: str

    def describe(self) -> str:
        s = self.stats
        return (f"{self.tokenizing}\n{s.root_check_note}\n"
                f"n = {self.n}: {s.labelled:,} labelled, {s.no_ngram:,} without an n-gram, {s.root_rejected:,} "
                f"rejected by the root check, {s.multi_label:,} with n-grams of several labels "
                f"({s.multi_label_dropped:,} dropped, policy {s.multi_label_policy!r})")


def _parser(name: str):
    from sdr.cfs3.matching import load_parser

    if not name:
        return None
    try:
        return load_parser(name)
    except (FileNotFoundError, ValueError) as error:
        print(f"parser {name!r} not usable ({error}); the root check is skipped")
        return None


def match_pool(run, inputs: ChapterInputs, phrases: ChapterPhrases, dictionary: NgramDictionary,
               pool: ChapterPool) -> Matching:
    """Step 4: tokenise the pool once (with ``parser``'s dependency roots when it names an installed pipeline),
    then label it with the dictionary of every n in ``n_sweep`` (the paper's footnote 4; part ``sweeps``) and ``n``;
    the records at ``n`` are the dataset. Checked: every sentence has one outcome; every label was given by an n-gram that
    occurs, as a lemma sequence, in its sentence; and, with the book's defaults on the data mirror's bytes, the
    counts are :data:`MIRROR_COUNTS`. Shown in: notebooks/cfs3.ipynb, Step 4: matching."""
    p = run.p
    parser = _parser(p.parser)
    start = time.perf_counter()
    tokens = list(tokenize_sentences(pool.sentences, inputs.lemmatizer, parser=parser, progress=False))
    seconds = time.perf_counter() - start
    tokenizing = (f"tokenised {len(pool.sentences):,} sentences in {seconds:.1f} s ({len(pool.sentences) / seconds:,.0f} "
                  f"sentences/s{', with the parser' if parser else ''})")
    rows, records, stats = [], None, None
    lengths = sorted(set(p.n_sweep) | {p.n}) if run.runs_part("sweeps") else [p.n]
    for length in lengths:
        swept = dictionary if length == p.n else build_ngram_dictionary(
            phrases.phrases, n=length, lemmatizer=inputs.lemmatizer, progress=False)
        matcher = SentenceMatcher(swept, multi_label=p.multi_label, lemmatizer=inputs.lemmatizer)
        swept_records, swept_stats = matcher.label(pool.sentences, tokenized=tokens, progress=False)
        rows.append({"n": length, "n-gram/label pairs": len(swept),
                     "ambiguous dropped": swept.report["ambiguous_ngrams_dropped"],
                     "labelled sentences": swept_stats.labelled, "labels used": len(swept_stats.per_label),
                     "several labels": swept_stats.multi_label, "n-grams fired": len(swept_stats.fired)})
        if length == p.n:
            records, stats = swept_records, swept_stats
    sweep = pd.DataFrame(rows).set_index("n")
    outcomes = stats.labelled + stats.no_ngram + stats.root_rejected + stats.multi_label_dropped
    if not stats.sentences == len(pool.sentences) == outcomes:
        raise ChapterCheckFailed(f"{stats.sentences} sentences matched, {len(pool.sentences)} in the pool, "
                                 f"{outcomes} outcomes counted")
    if sweep.loc[p.n, "labelled sentences"] != len(records):
        raise ChapterCheckFailed(f"the sweep's row n = {p.n} counts {sweep.loc[p.n, 'labelled sentences']} labelled "
                                 f"sentences, the dataset has {len(records)}")
    defaults = (p.n == 5 and p.table_cells == "combine" and p.multi_label == "drop"
                and not (p.phrasebank_dir or p.ppdb_path or parser or p.max_sentences))
    mirror = inputs.official_phrasebank and all(item is not None and item.official for item in inputs.pools.values())
    if mirror and defaults:
        measured = {"ngram_label_pairs": len(dictionary), "pool_before_filter": pool.before_filter,
                    "pool": len(pool.sentences), "labelled": stats.labelled, "labels_used": len(stats.per_label)}
        if measured != MIRROR_COUNTS:
            raise ChapterCheckFailed(f"the default build on the data mirror counts {measured}, not {MIRROR_COUNTS}")
    for record in records[:300]:
        if f" {record.ngram} " not in " " + " ".join(inputs.lemmatizer.lemmas(record.text)) + " ":
            raise ChapterCheckFailed(f"{record.id}: its n-gram {record.ngram!r} is not in its lemmas")
    return Matching(records, stats, sweep, p.n, tokenizing)


# ------------------------------------------------------------------------------------------------- the paper's counts
def counts_next_to_paper(run, phrases: ChapterPhrases, dictionary: NgramDictionary, pool: ChapterPool,
                         matching: Matching) -> pd.DataFrame:
    """Each step's count next to the paper's (§3.1–3.2 and the CFS3 README, ``data/paper_tables/cfs3_counts.csv``)
    with why they differ. Shown in: notebooks/cfs3.ipynb, Counts next to the paper's."""
    from sdr.book import read_paper_table

    p, stats = run.p, matching.stats
    paper = read_paper_table("cfs3_counts")
    paper_rows = paper[paper["source"] == "SciToricsBERT"]

    def paper_value(column, model=None):
        rows = paper_rows if model is None else paper_rows[paper_rows["model"] == model]
        return int(rows[column].dropna().iloc[0])

    counts = pd.DataFrame([
        {"step": "phrases (before augmentation)", "paper": "not stated", "ours": phrases.read,
         "why they differ": f"the paper prints no count: {paper_value('labels_used', 'Academic Phrasebank')} functions "
                            "with 'approximately 20 phrases for each', and 30,505 is 'approximately 20 times larger "
                            "than the original'; our crawl: 2022"},
        {"step": "phrases (after PPDB)", "paper": paper_value("phrases", "Academic Phrasebank + PPDB 2.0"),
         "ours": phrases.augmented,
         "why they differ": "PPDB applied" if p.ppdb_path else "no PPDB file offline: no augmentation"},
        {"step": f"{p.n}-gram/label pairs", "paper": paper_value("ngram_label_pairs", "labelled 5-gram list"),
         "ours": len(dictionary), "why they differ": "fewer phrases without PPDB"},
        {"step": "sentence pool", "paper": paper_value("sentence_pool", "S2ORC sample"), "ours": len(pool.sentences),
         "why they differ": "~1M S2ORC papers vs the few real sentence sets available offline"},
        {"step": "labelled sentences", "paper": paper_value("labelled_sentences", "CFS3"), "ours": stats.labelled,
         "why they differ": "pool size; no root check" if not stats.root_check else "pool size"},
        {"step": "labels used", "paper": paper_value("labels_used", "CFS3"), "ours": len(stats.per_label),
         "why they differ": "a small pool leaves rare functions without a sentence"},
    ]).set_index("step")
    if counts.loc["labelled sentences", "ours"] != len(matching.records):
        raise ChapterCheckFailed(f"{counts.loc['labelled sentences', 'ours']} labelled sentences counted, "
                                 f"{len(matching.records)} records")
    return counts


# ------------------------------------------------------------------------------------------------- labels
@dataclass
class LabelDistribution:
    """The 4:1 split and one row per label: sentences, train, valid, n-grams and the release's count."""

    table: pd.DataFrame
    train: list[LabelledSentence]
    valid: list[LabelledSentence]
    split_report: dict
    empty: list[int]
    labelled: int
    spearman: float | None = None

    def describe(self) -> str:
        empty = self.empty
        lines = [f"labels with no sentence: {len(empty)} {empty[:30]}{' …' if len(empty) > 30 else ''} "
                 f"(CFS3: 15, 29, 39{'; all three are empty here too' if {15, 29, 39} <= set(empty) else ''})"]
        if self.spearman is not None:
            lines.append(f"Spearman correlation of per-label counts, ours vs the CFS3 release: {self.spearman:.2f}")
        lines.append(f"split 4:1 ({self.split_report['method']}): {len(self.train):,} train, {len(self.valid):,} "
                     "valid")
        return "\n".join(lines)

    def top(self, count: int = 10) -> pd.DataFrame:
        """The ``count`` labels with most sentences."""
        top = self.table.sort_values("sentences", ascending=False).head(count)
        return top[["label", "label_name", "group", "sentences", "train", "valid", "ngrams", "CFS3 release"]]


def label_distribution(run, inputs: ChapterInputs, pool: ChapterPool, matching: Matching,
                       dictionary: NgramDictionary) -> LabelDistribution:
    """The 4:1 stratified split (§4.1) and every label's count next to the released CFS3's (its README's table in
    ``data/paper_tables/cfs3_counts.csv``); where the real Phrasebank was matched against real sentences, their
    rank correlation over the 80 labels. Checked: the table counts every record, and train + valid every label's.
    Shown in: notebooks/cfs3.ipynb, The distribution of labels."""
    from scipy.stats import spearmanr

    from sdr.book import read_paper_table

    records = matching.records
    train, valid, report = stratified_split(records, valid_fraction=0.2, seed=run.p.seed)
    table = label_table(records, dictionary.label_names, train, valid, dict(dictionary.per_label()))
    paper = read_paper_table("cfs3_counts")
    released = paper[paper["table"] == "Label Distribution"].set_index("label")["labelled_sentences"]
    table["CFS3 release"] = table["label"].map(released).fillna(0).astype(int)
    if table["sentences"].sum() != len(records):
        raise ChapterCheckFailed(f"the label table counts {table['sentences'].sum()} sentences, not {len(records)}")
    if len(train) + len(valid) != len(records):
        raise ChapterCheckFailed(f"the split has {len(train)} + {len(valid)} sentences, not {len(records)}")
    if not (table["train"] + table["valid"] == table["sentences"]).all():
        raise ChapterCheckFailed("a label's train and valid counts do not add up to its sentences")
    spearman = None
    if inputs.real_phrasebank and not pool.synthetic and matching.stats.labelled:
        shares = table[table["label"] <= 80]
        spearman = float(spearmanr(shares["sentences"], shares["CFS3 release"])[0])
    return LabelDistribution(table, train, valid, report, empty_labels(records, dictionary.label_names),
                             matching.stats.labelled, spearman)


def label_bars(run, labels: LabelDistribution, n: int) -> None:
    """Sentences per function label (log scale), coloured by function group.
    Shown in: notebooks/cfs3.ipynb, The distribution of labels."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    figure, axis = plt.subplots(figsize=(12, 3.5))
    plotted = labels.table[labels.table["sentences"] > 0]
    sns.barplot(data=plotted, x="label", y="sentences", hue="group", dodge=False, ax=axis)
    axis.set_yscale("log")
    axis.set_title(f"Sentences per function label (n = {n}, {labels.labelled:,} labelled)")
    axis.tick_params(axis="x", labelrotation=90, labelsize=7)
    axis.legend(fontsize=7, ncols=3)
    plt.tight_layout()
    plt.show()
    print(run.caption())


def sample_records(records: Sequence[LabelledSentence], seed: int, count: int = 10) -> pd.DataFrame:
    """``count`` labelled sentences drawn at random (seeded), with the n-gram that labelled each (the paper's
    Table 1). Shown in: notebooks/cfs3.ipynb, Ten labelled sentences."""
    sample = random.Random(seed).sample(records, min(count, len(records)))
    if len(sample) != min(count, len(records)):
        raise ChapterCheckFailed(f"{len(sample)} sentences drawn, expected {min(count, len(records))}")
    return pd.DataFrame([{"label": f"{r.label:02d}: {r.label_name}", "n-gram": r.ngram, "sentence": r.text,
                          "source": r.source} for r in sample])


# ------------------------------------------------------------------------------------------------- the paper's examples
#: The ten sentences of the paper's Table 1 and the two of its Figure 2, with the labels the paper prints.
PAPER_EXAMPLES: tuple[tuple[str, int], ...] = (
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
    ("Serine hydroxymethyltransferase 2 (SHMT2) plays a vital role in one-carbon metabolism and drives "
     "colorectal carcinogenesis.", 1),
    ("In spite of noticeable progress in the uptake of maternal health care services, inequity has become a "
     "central issue in Bangladesh in the last decade [20, 24, 25].", 1),
)
#: Of :data:`PAPER_EXAMPLES`, those the 2022 crawl labels as the paper does; the other two ("It has been suggested
#: that …") match n-grams the crawl lists under labels 22 and 66, dropped as ambiguous, so they get no label.
PAPER_EXAMPLES_AGREEING = 10


def paper_examples(run, inputs: ChapterInputs, dictionary: NgramDictionary) -> pd.DataFrame:
    """The paper's own examples (:data:`PAPER_EXAMPLES`) labelled again with our dictionary, next to the paper's
    labels. With the 2022 crawl's bytes (the registry's digests) the table is shown and checked: exactly
    :data:`PAPER_EXAMPLES_AGREEING` get the paper's label and the others none; otherwise the page says where the
    check runs. Shown in: notebooks/cfs3.ipynb, The paper's own examples."""
    from IPython.display import display

    p = run.p
    sentences = [Sentence(f"paper-{i}", text, "paper 004") for i, (text, _) in enumerate(PAPER_EXAMPLES)]
    records, _ = SentenceMatcher(dictionary, multi_label=p.multi_label, lemmatizer=inputs.lemmatizer).label(
        sentences, progress=False)
    ours = {r.id: r for r in records}
    table = pd.DataFrame([
        {"paper's label": label, "our label": ours[f"paper-{i}"].label if f"paper-{i}" in ours else None,
         "our n-gram": ours[f"paper-{i}"].ngram if f"paper-{i}" in ours else "", "sentence": text[:90]}
        for i, (text, label) in enumerate(PAPER_EXAMPLES)])
    if not inputs.official_phrasebank:  # a phrase list of one's own (phrasebank_dir) is not the crawl either
        print("(the paper's examples are checked at the real profile, with the real Phrasebank)")
        return table
    agree = int((table["paper's label"] == table["our label"]).sum())
    display(table)
    print(f"{agree} of {len(PAPER_EXAMPLES)} paper examples get the paper's label; the others get none (no wrong "
          "label)")
    unlabelled = int(table["our label"].isna().sum())
    if agree != PAPER_EXAMPLES_AGREEING or unlabelled != len(PAPER_EXAMPLES) - PAPER_EXAMPLES_AGREEING:
        raise ChapterCheckFailed(f"{agree} paper examples get the paper's label and {unlabelled} none; expected "
                                 f"{PAPER_EXAMPLES_AGREEING} and {len(PAPER_EXAMPLES) - PAPER_EXAMPLES_AGREEING}")
    return table


# ------------------------------------------------------------------------------------------------- human labels
@dataclass
class GoldCheck:
    """Four readings of the distant labels as CSAbstruct roles, the confusion of groups × gold labels, and whose
    gold labels they are."""

    table: pd.DataFrame
    confusion: pd.DataFrame
    n: int
    gold_name: str

    def styled(self):
        return self.table.style.format({"agreement": "{:.3f}"})


def gold_check(run, pool: ChapterPool, matching: Matching) -> GoldCheck:
    """The labelled sentences that carry a gold role (CSAbstruct train's human labels; the synthetic abstracts'
    generator roles when the pool is synthetic) read through the page → label mapping, the refined one, and the
    best group-level and function-level readings. Checked: the confusion counts every sentence, and neither
    mapping beats the best reading that bounds it. Shown in: notebooks/cfs3.ipynb, How good are distant labels?"""
    gold_records = [r for r in matching.records if r.gold is not None and r.source in ("csabstruct", "synthetic")]
    agreement = gold_agreement(gold_records)
    refined = gold_agreement(gold_records, label_overrides=LABEL_TO_CSABSTRUCT_REFINED)
    table = pd.DataFrame([
        {"reading": "page → label", "sentences": agreement["n"], "agreement": agreement["agreement"]},
        {"reading": "page → label, aim/method functions refined", "sentences": refined["n"],
         "agreement": refined["agreement"]},
        {"reading": "best page-level reading (majority label per group)", "sentences": agreement["n"],
         "agreement": agreement["majority_agreement"]},
        {"reading": "best function-level reading (majority label per function)", "sentences": agreement["n"],
         "agreement": agreement["label_majority_agreement"]},
    ]).set_index("reading")
    confusion = agreement["confusion"]
    if not int(confusion.values.sum()) == agreement["n"] == refined["n"]:
        raise ChapterCheckFailed(f"the confusion counts {int(confusion.values.sum())} sentences, the readings "
                                 f"{agreement['n']} and {refined['n']}")
    if agreement["n"]:
        bounds = [("page → label", agreement["agreement"], "best page-level", agreement["majority_agreement"]),
                  ("refined", refined["agreement"], "best function-level", agreement["label_majority_agreement"]),
                  ("best page-level", agreement["majority_agreement"], "best function-level",
                   agreement["label_majority_agreement"])]
        for name, value, bound_name, bound in bounds:
            if value > bound + 1e-12:
                raise ChapterCheckFailed(f"the {name} reading agrees {value:.4f}, above the {bound_name} reading's "
                                         f"{bound:.4f} that bounds it")
    gold_name = "synthetic abstracts (generator roles)" if pool.synthetic else "CSAbstruct (human labels)"
    return GoldCheck(table, confusion, agreement["n"], gold_name)


def gold_heatmap(run, gold: GoldCheck) -> None:
    """Our function groups × the gold labels, counts (nothing when no labelled sentence has a gold label).
    Shown in: notebooks/cfs3.ipynb, How good are distant labels?"""
    import matplotlib.pyplot as plt
    import seaborn as sns

    if not gold.n:
        print("no labelled sentence carries a gold label: no confusion to plot")
        return
    figure, axis = plt.subplots(figsize=(8, 3.4))
    sns.heatmap(gold.confusion, annot=True, fmt="d", cmap="Blues", cbar=False, ax=axis)
    axis.set_title(f"Our function groups vs {gold.gold_name}")
    plt.tight_layout()
    plt.show()
    print(run.caption())


def planted_check(run, inputs: ChapterInputs, pool: ChapterPool, matching: Matching) -> dict | None:
    """Where the phrases and the pool are both the synthetic corpus' (no data): how many of its planted formulaic
    sentences got their planted label; the precision must be at least 0.9. None (and nothing printed) otherwise.
    Shown in: notebooks/cfs3.ipynb, How good are distant labels?"""
    if not pool.synthetic or inputs.real_phrasebank:
        return None
    planted = planted_recovery(matching.records, pool.sentences)
    print(f"synthetic sections: {planted['planted']:,} planted formulaic sentences; "
          f"{planted['labelled_planted']:,} labelled, {planted['correct']:,} with the planted label "
          f"(precision {planted['precision']:.3f}, recall {planted['recall']:.3f}); "
          f"{planted['labelled_unplanted']:,} other sentences labelled")
    if not planted["precision"] >= 0.9:
        raise ChapterCheckFailed(f"planted sentences labelled with precision {planted['precision']:.3f}, need 0.9")
    return planted


# ------------------------------------------------------------------------------------------------- the release
def released_comparison(run, inputs: ChapterInputs, dictionary: NgramDictionary, matching: Matching) -> dict:
    """Our n-gram dictionary and labelled sentences next to the released CFS3's (``5gram_dict.json``,
    ``CFS3.jsonl``), where the data policy finds the release (always at ``paper``) or ``released_dir`` names a
    clone; else a line saying it was not found. Part ``released`` (nothing when the run's ``parts`` leave it out).
    Shown in: notebooks/cfs3.ipynb, The released CFS3."""
    from IPython.display import display

    from sdr.cfs3.released import compare_labelled, compare_ngram_dictionaries, read_released_cfs3

    p = run.p
    if not run.runs_part("released"):
        return {}
    path = Path(p.released_dir) if p.released_dir else (inputs.released.path if inputs.released is not None else None)
    if path is None:
        print("The released CFS3 was not found (`sdr data fetch cfs3`; fetched at paper): no comparison with its "
              "files.")
        return {}
    released = read_released_cfs3(path)
    comparison = {}
    if released.ngrams is not None:
        comparison["n-gram dictionary"] = compare_ngram_dictionaries(dictionary, released.ngrams)
    if "all" in released.splits:
        comparison["labelled sentences"] = compare_labelled(matching.records, released.splits["all"])
    if p.released_dir:
        run.add_source(f"released CFS3 ({p.released_dir})")
    run.show(pd.DataFrame(comparison).T, decimals=None)
    if comparison:
        run.branch("released CFS3 compared")
    return comparison


# ------------------------------------------------------------------------------------------------- the record
def store(run, phrases: ChapterPhrases, dictionary: NgramDictionary, matching: Matching, counts: pd.DataFrame,
          labels: LabelDistribution, gold: GoldCheck, examples: pd.DataFrame, planted: dict | None,
          released: Mapping) -> Path:
    """The built dataset (``CFS3.jsonl``, its 4:1 split and the n-gram dictionary, in the results store beside the
    record) and the chapter's record: its tables and what the build reported."""
    from sdr import book

    p = run.p
    out_dir = book.results_dir() / "cfs3" / f"{run.profile}-data"
    write_labelled(out_dir / "CFS3.jsonl", matching.records)
    write_labelled(out_dir / "CFS3_train.jsonl", labels.train)
    write_labelled(out_dir / "CFS3_valid.jsonl", labels.valid)
    dictionary.to_json(out_dir / f"{p.n}gram_dict.json")
    stats = matching.stats
    saved = run.save(
        {"counts": counts, "n_sweep": matching.sweep, "labels": labels.table, "agreement": gold.table,
         "confusion": gold.confusion, "paper_examples": examples},
        extra={"n": p.n, "root_check": stats.root_check, "root_check_note": stats.root_check_note,
               "multi_label": p.multi_label, "phrase_report": {k: v for k, v in phrases.phrases.report.items()
                                                               if isinstance(v, (int, float, str))},
               "ngram_report": dictionary.report, "match": stats.as_dict(), "planted": planted,
               "released_comparison": dict(released), "data_files": str(out_dir)})
    if not (saved.exists() and (out_dir / "CFS3.jsonl").exists()):
        raise ChapterCheckFailed(f"the record {saved} or the dataset {out_dir / 'CFS3.jsonl'} was not written")
    print(f"labelled data in {out_dir}; results in {saved}")
    return saved
