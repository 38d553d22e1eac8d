"""Distant labelling of sentences with the n-gram dictionary (paper 004, §3.2).

A sentence takes a label when (i) it contains one of that label's n-grams as a contiguous
lemma sequence and (ii) the n-gram includes the sentence's dependency root. Matching hashes each
window of n lemmas and looks it up in the dictionary: linear in the number of tokens.

The root check needs a spaCy pipeline with a dependency parser (the paper used spaCy; e.g.
``en_core_web_sm``). Without one it is skipped, and :class:`MatchStats` and the summary say so.
A sentence whose n-grams (that pass the root check) point to different labels is dropped by
default (``multi_label="drop"``, counted) or keeps the label of its first n-gram (``"first"``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from sdr.cfs3.ngrams import Lemmatizer, Ngram, NgramDictionary, ngram_text
from sdr.cfs3.phrases import group_of
from sdr.cfs3.sentences import Sentence

MULTI_LABEL_POLICIES = ("drop", "first")


@dataclass(frozen=True)
class Hit:
    """An n-gram found in a sentence: its window start (in word tokens), the n-gram and its label."""

    start: int
    ngram: Ngram
    label: int


@dataclass
class LabelledSentence:
    """One CFS3 record. ``label`` is 1–80; files write it as CFS3's two-digit string ("01")."""

    id: str
    text: str
    label: int
    label_name: str
    ngram: str
    source: str
    gold: str | None = None
    meta: dict = field(default_factory=dict)

    @property
    def group(self) -> str:
        """Function group (Phrasebank page) of the label."""
        return group_of(self.label)

    def to_record(self) -> dict:
        """The output JSON object ``{"id","text","label","label_name","ngram","source"}`` (+ extras)."""
        record = {"id": self.id, "text": self.text, "label": f"{self.label:02d}", "label_name": self.label_name,
                  "ngram": self.ngram, "source": self.source}
        if "sentence_index" in self.meta:
            record["sentence_index"] = self.meta["sentence_index"]
        return record


@dataclass
class MatchStats:
    """What matching did: counts of sentences by outcome, n-grams that fired, root-check status."""

    sentences: int = 0
    labelled: int = 0
    no_ngram: int = 0
    root_rejected: int = 0  # had n-grams, none of which contained the root
    multi_label: int = 0  # n-grams of different labels
    multi_label_dropped: int = 0
    root_check: bool = False
    root_check_note: str = ""
    multi_label_policy: str = "drop"
    fired: Counter = field(default_factory=Counter)  # n-gram text → sentences it labelled
    per_label: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        """Plain counts (the most-fired n-grams only) for JSON results."""
        return {"sentences": self.sentences, "labelled": self.labelled, "no_ngram": self.no_ngram,
                "root_rejected": self.root_rejected, "multi_label": self.multi_label,
                "multi_label_dropped": self.multi_label_dropped, "multi_label_policy": self.multi_label_policy,
                "root_check": self.root_check, "root_check_note": self.root_check_note,
                "ngrams_fired": len(self.fired), "labels_used": len(self.per_label),
                "top_ngrams": dict(self.fired.most_common(20))}


NO_PARSER_NOTE = ("root check SKIPPED: no spaCy dependency parser is installed here, so a sentence is "
                  "labelled by the n-gram alone (the paper also requires the n-gram to contain the "
                  "sentence's dependency root); pass a parser pipeline (e.g. en_core_web_sm) to apply it")


def load_parser(name: str):
    """Load a spaCy pipeline with a dependency parser; a clear error when it is not installed."""
    import spacy

    try:
        nlp = spacy.load(name, exclude=["ner", "textcat"])
    except OSError as error:
        raise FileNotFoundError(f"spaCy pipeline {name!r} is not installed ({error}); install it "
                                f"(python -m spacy download {name}) or run without a parser") from None
    if "parser" not in nlp.pipe_names:
        raise ValueError(f"spaCy pipeline {name!r} has no dependency parser (components: {nlp.pipe_names})")
    return nlp


def roots_of(doc) -> set[int]:
    """Token indices of the dependency roots of a parsed ``Doc`` (tokens that head themselves)."""
    if not doc.has_annotation("DEP"):
        raise ValueError("root check: the Doc has no dependency annotation (use a pipeline with a parser)")
    return {token.i for token in doc if token.head.i == token.i}


@dataclass(frozen=True)
class TokenizedSentence:
    """Word-token lemmas of a sentence, their token indices, and the root indices (None: no parser)."""

    lemmas: tuple[str, ...]
    positions: tuple[int, ...]
    roots: frozenset[int] | None = None


def tokenize_doc(doc, lemmatizer: Lemmatizer, check_root: bool = False) -> TokenizedSentence:
    """Lemmas (and, with ``check_root``, dependency roots) of one spaCy ``Doc``."""
    lemmas, positions = lemmatizer.doc_lemmas(doc)
    return TokenizedSentence(tuple(lemmas), tuple(positions), frozenset(roots_of(doc)) if check_root else None)


def tokenize_sentences(sentences: Iterable[Sentence], lemmatizer: Lemmatizer | None = None, parser=None,
                       batch_size: int = 1000, progress: bool = True, total: int | None = None,
                       ) -> Iterable[TokenizedSentence]:
    """Tokenise (and parse, with ``parser``) sentences in batches with ``nlp.pipe``; lazily.

    This is the costly step of matching; keep the result (``list(...)``) to match the same pool
    with several dictionaries.
    """
    lemmatizer = lemmatizer or Lemmatizer()
    if isinstance(parser, str):
        parser = load_parser(parser)
    texts = (s.text for s in sentences)
    docs = (parser.pipe(texts, batch_size=batch_size) if parser is not None
            else lemmatizer.tokenize(texts, batch_size=batch_size))
    for doc in tqdm(docs, total=total, desc="tokenising sentences", disable=not progress):
        yield tokenize_doc(doc, lemmatizer, check_root=parser is not None)


class SentenceMatcher:
    """Label sentences by hashed n-gram windows, with the root check when a parser is given.

    ``parser``: None (root check skipped), a spaCy pipeline name, or a loaded pipeline.
    """

    def __init__(self, dictionary: NgramDictionary, parser=None, multi_label: str = "drop",
                 lemmatizer: Lemmatizer | None = None):
        if multi_label not in MULTI_LABEL_POLICIES:
            raise ValueError(f"multi_label={multi_label!r}: expected one of {MULTI_LABEL_POLICIES}")
        self.dictionary = dictionary
        self.multi_label = multi_label
        if isinstance(parser, str):
            parser = load_parser(parser)
        self.parser = parser
        # With a parser the docs come from parser.pipe; the lemmatizer only supplies lemmas.
        self.lemmatizer = lemmatizer or Lemmatizer()

    @property
    def root_check(self) -> bool:
        """Whether the dependency-root condition is applied."""
        return self.parser is not None

    def find(self, lemmas) -> list[Hit]:
        """Every window of n lemmas that is a dictionary n-gram, left to right (one dict lookup per window)."""
        n, labels = self.dictionary.n, self.dictionary.labels
        hits = []
        for start in range(len(lemmas) - n + 1):
            window = tuple(lemmas[start:start + n])
            label = labels.get(window)
            if label is not None:
                hits.append(Hit(start, window, label))
        return hits

    def hits(self, sentence: TokenizedSentence) -> tuple[list[Hit], list[Hit]]:
        """(all hits, hits whose window contains a dependency root); equal when there are no roots."""
        hits = self.find(sentence.lemmas)
        if sentence.roots is None or not hits:
            return hits, hits
        n = self.dictionary.n
        kept = [h for h in hits if sentence.roots.intersection(sentence.positions[h.start:h.start + n])]
        return hits, kept

    def hits_in_doc(self, doc) -> tuple[list[Hit], list[Hit]]:
        """:meth:`hits` of a spaCy ``Doc``; the root check applies when the matcher has a parser
        or the doc carries dependency annotation (a hand-built ``Doc`` with heads and deps)."""
        check_root = self.root_check or doc.has_annotation("DEP")
        return self.hits(tokenize_doc(doc, self.lemmatizer, check_root=check_root))

    def decide(self, hits: list[Hit]) -> Hit | None | str:
        """The hit that labels the sentence, None (no hit) or ``"multi"`` (dropped, several labels)."""
        if not hits:
            return None
        if len({h.label for h in hits}) > 1 and self.multi_label == "drop":
            return "multi"
        return hits[0]

    def label(self, sentences: Iterable[Sentence], tokenized: Iterable[TokenizedSentence] | None = None,
              batch_size: int = 1000, progress: bool = True) -> tuple[list[LabelledSentence], MatchStats]:
        """Label sentences; returns the labelled ones and the statistics.

        ``tokenized`` (from :func:`tokenize_sentences`, same order) skips tokenising again; with it,
        the root check applies when it carries roots.
        """
        sentences = sentences if isinstance(sentences, list) else list(sentences)
        if tokenized is None:
            tokenized = tokenize_sentences(sentences, self.lemmatizer, self.parser, batch_size, progress=False)
            root_check = self.root_check
            note = (f"root check applied with spaCy pipeline {self.parser.meta.get('name', '?')!r}"
                    if root_check else NO_PARSER_NOTE)
        else:
            tokenized = tokenized if isinstance(tokenized, list) else list(tokenized)
            if len(tokenized) != len(sentences):
                raise ValueError(f"{len(tokenized)} tokenised sentences for {len(sentences)} sentences")
            root_check = bool(tokenized) and tokenized[0].roots is not None
            note = "root check applied (parsed sentences given)" if root_check else NO_PARSER_NOTE
        stats = MatchStats(root_check=root_check, multi_label_policy=self.multi_label, root_check_note=note)
        names = self.dictionary.label_names
        labelled: list[LabelledSentence] = []
        for sentence, tokens in tqdm(zip(sentences, tokenized), total=len(sentences), desc="matching sentences",
                                     disable=not progress):
            stats.sentences += 1
            hits, kept = self.hits(tokens)
            if not hits:
                stats.no_ngram += 1
                continue
            if not kept:
                stats.root_rejected += 1
                continue
            if len({h.label for h in kept}) > 1:
                stats.multi_label += 1
            decision = self.decide(kept)
            if decision == "multi":
                stats.multi_label_dropped += 1
                continue
            text = ngram_text(decision.ngram)
            stats.labelled += 1
            stats.fired[text] += 1
            stats.per_label[decision.label] += 1
            labelled.append(LabelledSentence(sentence.id, sentence.text, decision.label,
                                             names.get(decision.label, str(decision.label)), text,
                                             sentence.source, sentence.gold, dict(sentence.meta)))
        return labelled, stats
