"""The whole CFS3 construction in one call, and its human-readable summary."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sdr.cfs3.matching import LabelledSentence, MatchStats, SentenceMatcher, TokenizedSentence
from sdr.cfs3.ngrams import Lemmatizer, NgramDictionary, build_ngram_dictionary
from sdr.cfs3.phrases import PhraseSet, load_phrases
from sdr.cfs3.sentences import Sentence

PAPER_COUNTS = {"phrases_original": None, "functions": 80, "phrases_per_function": 20, "phrases_augmented": 30505,
                "ngram_label_pairs": 68242, "sentence_pool": 19_000_000, "labelled": 100016, "labels_used": 77,
                "empty_labels": [15, 29, 39]}
"""Paper 004 (§3.1–3.2) and the ``Alab-NII/CFS3`` README; ``data/paper_tables/cfs3_counts.csv`` cites each. The paper
prints no count of the Phrasebank's phrases (``None``): 80 functions with "approximately 20 phrases for each", and
30,505 augmented phrases "approximately 20 times larger than the original" (so roughly 1,500 to 1,600)."""


@dataclass
class CFS3Build:
    """Everything one construction produced."""

    phrases: PhraseSet
    dictionary: NgramDictionary
    records: list[LabelledSentence]
    stats: MatchStats
    phrases_before_augmentation: int
    ppdb_report: dict | None = None
    sentence_report: dict = field(default_factory=dict)

    @property
    def label_names(self) -> dict[int, str]:
        return self.dictionary.label_names

    def counts(self) -> dict:
        """Counts at each step (the chapter puts them next to :data:`PAPER_COUNTS`)."""
        return {"phrases_original": self.phrases_before_augmentation, "phrases_augmented": len(self.phrases),
                "ngram_label_pairs": len(self.dictionary),
                "ambiguous_ngrams_dropped": self.dictionary.report.get("ambiguous_ngrams_dropped", 0),
                "sentence_pool": self.stats.sentences, "labelled": self.stats.labelled,
                "labels_used": len(self.stats.per_label),
                "empty_labels": sorted(set(self.label_names) - set(self.stats.per_label)),
                "multi_label": self.stats.multi_label, "multi_label_dropped": self.stats.multi_label_dropped,
                "root_check": self.stats.root_check, "ngrams_fired": len(self.stats.fired)}


def build_cfs3(
    phrases: PhraseSet | str | Path,
    sentences: Iterable[Sentence],
    n: int = 5,
    ppdb: str | Path | None = None,
    ppdb_per_phrase: int | None = None,
    parser=None,
    multi_label: str = "drop",
    seed: int = 0,
    lemmatizer: Lemmatizer | None = None,
    tokenized: list[TokenizedSentence] | None = None,
    progress: bool = True,
) -> CFS3Build:
    """Phrases → (PPDB paraphrases) → lemmatised n-grams without ambiguous ones → labelled sentences.

    ``phrases`` is a :class:`PhraseSet` or a path for :func:`~sdr.cfs3.phrases.load_phrases`;
    ``parser`` a spaCy pipeline (name or object) for the root check, None to skip it;
    ``tokenized`` the pool already tokenised by :func:`~sdr.cfs3.matching.tokenize_sentences`
    (to build with several settings from one tokenisation).
    """
    if not isinstance(phrases, PhraseSet):
        phrases = load_phrases(phrases)
    before = len(phrases)
    ppdb_report = None
    if ppdb is not None:
        from sdr.ppdb import augment_phrases, read_ppdb

        lexicon = read_ppdb(ppdb, progress=progress)
        ppdb_report = lexicon.report
        phrases = augment_phrases(phrases, lexicon, per_phrase=ppdb_per_phrase, seed=seed, progress=progress)
    lemmatizer = lemmatizer or Lemmatizer()
    dictionary = build_ngram_dictionary(phrases, n=n, lemmatizer=lemmatizer, progress=progress)
    matcher = SentenceMatcher(dictionary, parser=parser, multi_label=multi_label, lemmatizer=lemmatizer)
    records, stats = matcher.label(sentences, tokenized=tokenized, progress=progress)
    return CFS3Build(phrases, dictionary, records, stats, before, ppdb_report)


def summary_lines(build: CFS3Build) -> list[str]:
    """A short report: counts at each step next to the paper's, and the root-check status."""
    c = build.counts()
    stats = build.stats
    lines = [
        f"phrases: {c['phrases_original']} read"
        + (f", {c['phrases_augmented']} after PPDB augmentation" if build.ppdb_report else
           " (no PPDB augmentation)") + f"  [paper: no count printed, ~{PAPER_COUNTS['phrases_per_function']} per "
                                          f"function × {PAPER_COUNTS['functions']} → {PAPER_COUNTS['phrases_augmented']:,}]",
        f"{build.dictionary.n}-gram/label pairs: {c['ngram_label_pairs']:,} "
        f"({c['ambiguous_ngrams_dropped']:,} ambiguous n-grams dropped)  [paper: {PAPER_COUNTS['ngram_label_pairs']:,}]",
        f"sentences: {c['sentence_pool']:,} matched against the dictionary  [paper: ~19M]",
        f"labelled: {c['labelled']:,} sentences, {c['labels_used']} labels used, {c['ngrams_fired']:,} n-grams fired"
        f"  [paper: {PAPER_COUNTS['labelled']:,} sentences, {PAPER_COUNTS['labels_used']} labels]",
        f"unlabelled: {stats.no_ngram:,} without n-gram, {stats.root_rejected:,} failed the root check, "
        f"{stats.multi_label:,} matched several labels ({stats.multi_label_dropped:,} dropped, policy "
        f"{stats.multi_label_policy!r})",
        f"labels with no sentence: {c['empty_labels']}  [paper: {PAPER_COUNTS['empty_labels']}]",
        stats.root_check_note,
    ]
    return lines


POOL_SOURCES = {"csabstruct": "CSAbstruct train", "scicite": "SciCite", "csfcube": "CSFCube",
                "s2orc_sample": "S2ORC"}
"""Registry dataset → its part of the book's offline sentence pool (:func:`sentence_pool`)."""


def sentence_pool(folders: dict[str, str | Path], progress: bool = False) -> tuple[dict[str, list[Sentence]], dict]:
    """The real sentences of the given dataset folders, by source: what the book's CFS3 is matched against.

    ``folders`` maps registry names of :data:`POOL_SOURCES` to their folders (a name left out is not in the pool):
    CSAbstruct *train* (its dev and test are evaluation data, see :mod:`sdr.cfs3.leakage`), SciCite's citation
    sentences (dev and test: its train split is not in the mirror), the CSFCube abstracts and the abstracts of the
    S2ORC metadata sample with Appendix A's filters. Returns ``({source: sentences}, {source: reader report})``;
    filter the union with :func:`sdr.cfs3.leakage.exclude_held_out` before use.
    """
    from sdr.cfs3.sentences import (S2ORCFilter, csabstruct_sentences, csfcube_sentences, s2orc_sentences,
                                    scicite_sentences)

    unknown = set(folders) - set(POOL_SOURCES)
    if unknown:
        raise ValueError(f"sentence_pool: unknown sources {sorted(unknown)}; expected some of {list(POOL_SOURCES)}")
    readers = {
        "csabstruct": lambda folder: csabstruct_sentences(folder, splits=("train",), progress=progress),
        "scicite": lambda folder: scicite_sentences(folder, progress=progress),
        "csfcube": lambda folder: csfcube_sentences(folder, progress=progress),
        "s2orc_sample": lambda folder: s2orc_sentences(Path(folder) / "metadata" / "sample.jsonl",
                                                       options=S2ORCFilter(), progress=progress),
    }
    parts: dict[str, list[Sentence]] = {}
    reports: dict[str, dict] = {}
    for name, source in POOL_SOURCES.items():
        if name in folders:
            parts[source], reports[source] = readers[name](Path(folders[name]))
    return parts, reports


def real_sentence_pool(data_root: str | Path, progress: bool = False) -> tuple[dict[str, list[Sentence]], dict]:
    """:func:`sentence_pool` of the four sources under one data root (``<root>/csabstruct``, ``scicite``,
    ``csfcube`` and ``s2orc``, the mirror's layout)."""
    from sdr import datasets

    data_root = Path(data_root)
    return sentence_pool({name: data_root / datasets.get(name).folder for name in POOL_SOURCES}, progress=progress)


BOOK_PHRASES = Path(__file__).resolve().parents[3] / "data" / "fixtures" / "cfs3" / "phrases.tsv"
"""A small phrase file written for this book (the Phrasebank itself may not be redistributed)."""


def write_replica_phrases(folder: str | Path) -> Path:
    """The phrase replica: the synthetic corpus' formulaic phrases and :data:`BOOK_PHRASES`, merged into one
    ``label<TAB>name<TAB>phrase`` file ``folder/phrases.tsv`` (refused under the ``paper`` policy, like every replica).
    Returns the folder, which :func:`sdr.cfs3.load_phrases` reads."""
    import tempfile

    from sdr.cfs3.phrases import merge_phrase_sets, read_phrase_tsv
    from sdr.synthetic import write_phrase_tsv

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        synthetic = read_phrase_tsv(write_phrase_tsv(Path(scratch) / "synthetic_phrases.tsv"))
    merged = merge_phrase_sets(synthetic, read_phrase_tsv(BOOK_PHRASES))
    lines = ["label\tname\tphrase"] + [f"{p.label}\t{merged.label_names[p.label]}\t{p.text}" for p in merged.phrases]
    (folder / "phrases.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def chapter_sentence_pool(inputs: dict, synthetic=None, progress: bool = False
                          ) -> tuple[dict[str, list[Sentence]], dict]:
    """The CFS3 chapter's pool: :func:`sentence_pool` of the real inputs found (``{registry name: DataInput or
    None}``, :data:`POOL_SOURCES`), or, when none is real, the sentences of the synthetic corpus ``synthetic()``
    (abstracts with their roles and full-text sections with planted formulaic sentences)."""
    from sdr.cfs3.sentences import synthetic_sentences

    found = {name: item.path for name, item in inputs.items() if item is not None and item.real}
    parts, reports = sentence_pool(found, progress=progress)
    if not parts:
        if synthetic is None:
            raise ValueError("chapter_sentence_pool: no real sentence source was found and no synthetic corpus given")
        parts["synthetic"], reports["synthetic"] = synthetic_sentences(synthetic(), progress=progress)
    return parts, reports
