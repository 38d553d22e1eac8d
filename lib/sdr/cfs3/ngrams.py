"""Lemmatised n-grams of the phrases and the labelled n-gram dictionary (paper 004, §3.1).

Every n-gram (n = 5 in the paper) of each placeholder-free piece of a phrase is lemmatised and
lower-cased; an n-gram produced by phrases of more than one label is dropped ("We exclude from the
list the lemmatized n-grams that have more than one label"). The paper reports 68,242 n-gram/label
pairs after PPDB augmentation.

Tokens are spaCy's English tokenizer; lemmas are spaCy's *lookup* lemmatiser table
(``spacy-lookups-data``, offline) applied to the lower-cased token. Punctuation and whitespace
tokens are left out of the n-grams on both sides (phrases and sentences), so "In recent years,
there has been" matches "In recent years there has been" too.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from sdr.cfs3.phrases import PhraseSet, split_at_placeholders

Ngram = tuple[str, ...]


class Lemmatizer:
    """spaCy tokenizer + lookup lemmas of lower-cased tokens, punctuation left out.

    ``nlp`` may be any spaCy pipeline (a parser pipeline for the root check); the lemma table is
    always the lookup table of ``spacy-lookups-data`` so lemmas do not depend on the pipeline.
    """

    def __init__(self, nlp=None):
        import spacy

        lookup_nlp = spacy.blank("en")
        lookup_nlp.add_pipe("lemmatizer", config={"mode": "lookup"})
        try:
            lookup_nlp.initialize()
        except (ValueError, OSError) as error:  # spacy-lookups-data missing
            raise RuntimeError("spaCy's lookup lemmatiser needs the 'spacy-lookups-data' package "
                               f"(pip install spacy-lookups-data): {error}") from None
        self._table = lookup_nlp.get_pipe("lemmatizer").lookups.get_table("lemma_lookup")
        self.nlp = nlp if nlp is not None else lookup_nlp
        # Words repeat a lot: a plain dict in front of the hashed spaCy table makes lookups cheap.
        self._cache: dict[str, str] = {}

    def lemma(self, word: str) -> str:
        """Lookup lemma of a word (lower-cased first)."""
        lower = word.lower()
        lemma = self._cache.get(lower)
        if lemma is None:
            lemma = self._table.get(lower, lower)
            self._cache[lower] = lemma
        return lemma

    def doc_lemmas(self, doc) -> tuple[list[str], list[int]]:
        """Lemmas of the word tokens of a spaCy ``Doc`` and their token indices in the doc."""
        lemmas: list[str] = []
        positions: list[int] = []
        cache, table = self._cache, self._table
        for token in doc:
            if token.is_punct or token.is_space:
                continue
            lower = token.lower_
            lemma = cache.get(lower)
            if lemma is None:
                lemma = table.get(lower, lower)
                cache[lower] = lemma
            lemmas.append(lemma)
            positions.append(token.i)
        return lemmas, positions

    def lemmas(self, text: str) -> list[str]:
        """Lemmas of the word tokens of a text (tokenizer only)."""
        return self.doc_lemmas(self.nlp.tokenizer(text))[0]

    def tokenize(self, texts: Iterable[str], batch_size: int = 1000) -> Iterator:
        """Tokenised ``Doc``s (no pipeline components), batched."""
        return self.nlp.tokenizer.pipe(texts, batch_size=batch_size)


def ngrams(tokens: list[str], n: int) -> list[Ngram]:
    """All contiguous n-grams of a token list (none when it is shorter than n)."""
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def ngram_text(ngram: Ngram) -> str:
    """The space-joined form used in output files (CFS3's ``ngram`` field)."""
    return " ".join(ngram)


@dataclass
class NgramDictionary:
    """Unambiguous lemmatised n-grams → label, with what was dropped and where each came from."""

    n: int
    labels: dict[Ngram, int]
    label_names: dict[int, str]
    ambiguous: dict[Ngram, tuple[int, ...]] = field(default_factory=dict)
    examples: dict[Ngram, str] = field(default_factory=dict)  # one phrase that produced the n-gram
    report: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.labels)

    def __contains__(self, ngram: Ngram) -> bool:
        return tuple(ngram) in self.labels

    def get(self, ngram: Ngram) -> int | None:
        """Label of an n-gram, or None."""
        return self.labels.get(tuple(ngram))

    def per_label(self) -> Counter:
        """Number of n-grams per label."""
        return Counter(self.labels.values())

    def to_json(self, path: str | Path) -> Path:
        """Write ``{"n", "label_names", "ngrams": {"w1 w2 …": label}}``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"n": self.n, "label_names": {str(k): v for k, v in self.label_names.items()},
                   "ngrams": {ngram_text(k): v for k, v in sorted(self.labels.items())}}
        path.write_text(json.dumps(payload, indent=1), encoding="utf-8")
        return path

    @classmethod
    def from_json(cls, path: str | Path) -> "NgramDictionary":
        """Read a dictionary written by :meth:`to_json`."""
        path = Path(path)
        from sdr.jsonio import load_json

        payload = load_json(path, "an n-gram dictionary {'n', 'label_names', 'ngrams'}")  # strict: no repeated key
        try:
            n = int(payload["n"])
            names = {int(k): str(v) for k, v in payload["label_names"].items()}
            labels = {tuple(k.split(" ")): int(v) for k, v in payload["ngrams"].items()}
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}: expected {{'n', 'label_names', 'ngrams'}} as written by "
                             f"NgramDictionary.to_json ({error})") from None
        bad = [k for k in labels if len(k) != n]
        if bad:
            raise ValueError(f"{path}: n-gram {ngram_text(bad[0])!r} has {len(bad[0])} words, expected n={n}")
        return cls(n, labels, names)


def build_ngram_dictionary(
    phrases: PhraseSet,
    n: int = 5,
    lemmatizer: Lemmatizer | None = None,
    progress: bool = True,
) -> NgramDictionary:
    """Lemmatised n-grams of every phrase piece, n-grams with more than one label dropped.

    The report holds phrase and piece counts, the distinct n-gram/label pairs before the drop, the
    number of ambiguous n-grams dropped, and the pairs kept (the paper's 68,242 figure).
    """
    if n < 1:
        raise ValueError(f"n={n}: expected n >= 1")
    lemmatizer = lemmatizer or Lemmatizer()
    labels_of: dict[Ngram, set[int]] = defaultdict(set)
    examples: dict[Ngram, str] = {}
    pieces = 0
    short_pieces = 0
    phrases_without_ngram = 0
    for phrase in tqdm(phrases.phrases, desc=f"{n}-grams of phrases", disable=not progress):
        produced = 0
        for piece in split_at_placeholders(phrase.text):
            pieces += 1
            grams = ngrams(lemmatizer.lemmas(piece), n)
            if not grams:
                short_pieces += 1
            for gram in grams:
                labels_of[gram].add(phrase.label)
                examples.setdefault(gram, phrase.text)
                produced += 1
        if not produced:
            phrases_without_ngram += 1
    unambiguous = {gram: next(iter(ls)) for gram, ls in labels_of.items() if len(ls) == 1}
    ambiguous = {gram: tuple(sorted(ls)) for gram, ls in labels_of.items() if len(ls) > 1}
    report = {
        "n": n,
        "phrases": len(phrases),
        "pieces": pieces,
        "pieces_shorter_than_n": short_pieces,
        "phrases_without_ngram": phrases_without_ngram,
        "ngram_label_pairs_before_drop": sum(len(ls) for ls in labels_of.values()),
        "ambiguous_ngrams_dropped": len(ambiguous),
        "ngram_label_pairs": len(unambiguous),
        "labels_without_ngram": sorted(set(phrases.label_names) - set(unambiguous.values())),
    }
    return NgramDictionary(n, unambiguous, dict(phrases.label_names), ambiguous,
                           {g: examples[g] for g in unambiguous}, report)
