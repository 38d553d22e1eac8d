"""Phrase lists of communicative functions: the Academic Phrasebank crawl and plain TSV files.

Paper 004 (SciToricsBERT, §3.1) labels sentences with the 80 functions of the Academic Phrasebank.
The label of a function is its 1-based position across the six Phrasebank pages taken in the order
of the ``Alab-NII/CFS3`` README: introducing-work 1–17, referring-to-sources 18–32,
describing-methods 33–46, reporting-results 47–60, discussing-findings 61–72,
writing-conclusions 73–80.

The crawler layout (``wlsdn2749/academic_phrasebank_crawler``) stores one JSON list per page, one
object per function: ``{"title": …, "p<block>-<i>": phrase, …, "td<column>-<i>": cell, …}``.
Three artefacts of that crawl are handled here and counted in the read report:

* the same ``p`` block is repeated (``p0-*``, ``p1-*``, …) — duplicates are kept once;
* phrases the site shows as tables (pick one cell per column: "To date, | several studies | have
  | shown that …") come as ``td`` columns — consecutive columns are joined into phrases (see
  :func:`combine_table_columns`);
* words the site prints in bold are glued to their neighbours ("werethenshown") — split back
  into dictionary words with spaCy's lexeme probabilities (:func:`repair_glued_words`).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sdr.jsonio import iter_lines, load_json

PHRASEBANK_PAGES: tuple[str, ...] = (
    "introducing-work",
    "referring-to-sources",
    "describing-methods",
    "reporting-results",
    "discussing-findings",
    "writing-conclusions",
)
"""The six Phrasebank pages in CFS3 label order (also the names of our six function groups)."""

FUNCTION_GROUPS: tuple[tuple[str, int, int], ...] = (
    ("introducing-work", 1, 17),
    ("referring-to-sources", 18, 32),
    ("describing-methods", 33, 46),
    ("reporting-results", 47, 60),
    ("discussing-findings", 61, 72),
    ("writing-conclusions", 73, 80),
)
"""Label ranges (inclusive) of the six groups, from the ``Alab-NII/CFS3`` README."""

_PHRASE_KEY = re.compile(r"^p(\d+)-(\d+)$")
_TABLE_KEY = re.compile(r"^td(\d+)-(\d+)$")

# Placeholders of the Phrasebank: X, Y, Z (also plural and possessive). "X-ray" is a word, not one.
_PLACEHOLDER = re.compile(r"(?<![\w-])[XYZ](?:s|'s|’s)?(?![\w-])")
# Bracketed material is citations or examples ("(Smith, 2001)", "[…]"); an unclosed bracket runs
# to the end of the phrase (the crawl cut some phrases inside a citation).
_BRACKETED = re.compile(r"\([^)]*\)?|\[[^\]]*\]?")
_ELLIPSIS = re.compile(r"…|\.{3,}")
# A phrase holding two sentences ("… were published. Smith (2013) presents …") is split between them.
_SENTENCE_BREAK = re.compile(r"(?<=[.;:!?])\s+(?=\S)")


def group_of(label: int) -> str:
    """The function group (Phrasebank page) of a CFS3 label 1–80."""
    for name, low, high in FUNCTION_GROUPS:
        if low <= label <= high:
            return name
    raise ValueError(f"label {label}: expected a CFS3 label between 1 and 80")


@dataclass(frozen=True)
class Phrase:
    """One phrase of a communicative function.

    ``origin`` says where it comes from: ``phrasebank`` (a listed phrase), ``table`` (joined from
    table columns), ``tsv`` (a plain phrase file) or ``ppdb`` (a paraphrase, :mod:`sdr.ppdb`).
    """

    label: int
    text: str
    origin: str = "phrasebank"


@dataclass
class PhraseSet:
    """Phrases with their label names and a report of what reading them did."""

    phrases: list[Phrase]
    label_names: dict[int, str]
    report: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.phrases)

    def by_label(self) -> dict[int, list[Phrase]]:
        """Phrases grouped by label (labels without phrases map to an empty list)."""
        grouped: dict[int, list[Phrase]] = {label: [] for label in self.label_names}
        for phrase in self.phrases:
            grouped.setdefault(phrase.label, []).append(phrase)
        return grouped

    def counts(self) -> Counter:
        """Number of phrases per origin."""
        return Counter(phrase.origin for phrase in self.phrases)

    def extended(self, phrases: Iterable[Phrase], note: str) -> "PhraseSet":
        """A new set with ``phrases`` added (duplicates of existing phrase texts per label dropped)."""
        seen = {(p.label, p.text) for p in self.phrases}
        added = []
        for phrase in phrases:
            if (phrase.label, phrase.text) not in seen:
                seen.add((phrase.label, phrase.text))
                added.append(phrase)
        report = dict(self.report)
        report[note] = len(added)
        return PhraseSet(self.phrases + added, dict(self.label_names), report)


def split_at_placeholders(phrase: str) -> list[str]:
    """Split a phrase into the fixed word sequences between placeholders.

    Placeholders are X/Y/Z (and plurals), ellipses ("…", "..."), and bracketed material; a phrase
    with two sentences is also split between them. Returns the non-empty pieces, stripped of
    surrounding punctuation and spaces (paper 004, §3.1: n-grams are taken inside these pieces).
    """
    marked = _BRACKETED.sub("\x00", phrase)
    marked = _ELLIPSIS.sub("\x00", marked)
    marked = _PLACEHOLDER.sub("\x00", marked)
    marked = _SENTENCE_BREAK.sub("\x00", marked)
    pieces = []
    for piece in marked.split("\x00"):
        piece = re.sub(r"\s+", " ", piece).strip(" \t,;:.‘’'\"“”")
        if re.search(r"\w", piece):
            pieces.append(piece)
    return pieces


def _starts_sentence(cell: str) -> bool:
    """A table cell that begins a sentence: capitalised and not a placeholder ("X may cause …")."""
    cell = cell.strip()
    if not cell or not cell[0].isupper():
        return False
    return not _PLACEHOLDER.match(cell)


def combine_table_columns(columns: list[list[str]], max_phrases: int = 2000) -> tuple[list[str], dict]:
    """Join the columns of a Phrasebank table into phrases (one cell from each column in turn).

    The crawl lost the table boundaries, so a run of columns is taken as one table as long as each
    next column has a cell that continues a sentence (lower-case start or a placeholder); a column
    whose cells all start a sentence opens a new table. A table whose product would exceed
    ``max_phrases`` is kept as separate cells instead (counted). Returns phrases and a report.
    """
    tables: list[list[list[str]]] = []
    for column in columns:
        cells = [c.strip() for c in column if c.strip() and c.strip().lower() != "break"]
        if not cells:
            continue
        if tables and not all(_starts_sentence(c) for c in cells):
            tables[-1].append(cells)
        else:
            tables.append([cells])
    phrases: list[str] = []
    report = {"tables": len(tables), "tables_too_large_kept_as_cells": 0}
    for table in tables:
        size = 1
        for cells in table:
            size *= len(cells)
        if size > max_phrases:
            report["tables_too_large_kept_as_cells"] += 1
            phrases.extend(cell for cells in table for cell in cells)
            continue
        rows = [""]
        for cells in table:
            rows = [f"{row} {cell}".strip() for row in rows for cell in cells]
        phrases.extend(rows)
    return phrases, report


@functools.lru_cache(maxsize=1)
def _lexeme_log_probs() -> dict[str, float]:
    """English unigram log probabilities shipped with ``spacy-lookups-data`` (offline, ~1M words).

    Read as plain JSON (faster than building a spaCy lookup table); cached for the process.
    """
    import gzip

    from spacy.util import registry

    try:
        path = Path(registry.lookups.get("en")["lexeme_prob"])
    except Exception as error:  # catalogue raises its own RegistryError when the package is missing
        raise RuntimeError("repairing glued words needs the 'spacy-lookups-data' package "
                           f"(or pass repair_glued=False): {error}") from None
    if not path.exists() and Path(f"{path}.gz").exists():
        path = Path(f"{path}.gz")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _word_log_prob(word: str, min_log_prob: float) -> float | None:
    log_prob = _lexeme_log_probs().get(word)
    if log_prob is None or log_prob < min_log_prob:
        return None
    return float(log_prob)


_SHORT_PARTS = frozenset({"to", "by", "et", "of", "in", "on", "as", "at", "an", "or"})
"""Two-letter words a glued word may be split into (longer parts must have three letters or more)."""


def _split_glued(word: str, min_log_prob: float, part_penalty: float = 4.0) -> list[str] | None:
    """Best split of ``word`` into ≥ 2 known words (max summed log probability), or None.

    Parts have three letters or more (or are in ``_SHORT_PARTS``) and a log probability of at least
    ``min_log_prob``, so rare real words ("generalisability", "Cronbach") are left alone.
    """
    n = len(word)
    best: list[tuple[float, list[str]] | None] = [None] * (n + 1)
    best[0] = (0.0, [])
    for end in range(1, n + 1):
        for start in range(max(0, end - 20), end):
            if best[start] is None:
                continue
            part = word[start:end]
            if len(part) < 3 and part not in _SHORT_PARTS:
                continue
            log_prob = _word_log_prob(part, min_log_prob)
            if log_prob is None:
                continue
            score = best[start][0] + log_prob - part_penalty  # the penalty prefers fewer parts
            if best[end] is None or score > best[end][0]:
                best[end] = (score, best[start][1] + [part])
    if best[n] is None or len(best[n][1]) < 2:
        return None
    return best[n][1]


_GLUE_WORDS = frozenset({"were", "was", "et", "by", "for", "from", "using", "to", "as", "then", "and", "the"})
"""Words that may follow a capitalised word it was glued to ("Datawere", "Smithet"); a capitalised
word is split only into itself plus such words, so names ("Harbison", "Cronbach") stay whole."""


def repair_glued_words(text: str, min_log_prob: float = -15.5, min_length: int = 6) -> tuple[str, dict[str, str]]:
    """Split words the crawl glued together ("werethenshown" → "were then shown").

    A lower-case letter followed by a capital inside a word is a glue point ("theTheses"). Other
    candidates are alphabetic words of ``min_length`` letters or more, lower-case after their first
    letter, that are *not* in spaCy's English lexeme table (``spacy-lookups-data``); they are split
    only into common words (:func:`_split_glued`). Returns the repaired text and ``{glued: repaired}``.
    """
    repairs: dict[str, str] = {}

    def repair(match: re.Match) -> str:
        word = match.group(0)
        camel = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", word)
        if camel != word:
            repairs[word] = camel
            return camel
        if len(word) < min_length or not word[1:].islower():
            return word
        lower = word.lower()
        if _word_log_prob(lower, -1e9) is not None:
            return word
        parts = _split_glued(lower, min_log_prob)
        if parts is None:
            return word
        if sum(part not in _GLUE_WORDS for part in parts) > 2:
            return word  # "norm ali sed using": three content words means a real word was cut up
        if word[0].isupper():
            if not all(part in _GLUE_WORDS for part in parts[1:]):
                return word
            parts[0] = parts[0].capitalize()
        repairs[word] = " ".join(parts)
        return repairs[word]

    return re.sub(r"[A-Za-z]+", repair, text), repairs


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def read_phrasebank(directory: str | Path, repair_glued: bool = True, table_cells: str = "combine") -> PhraseSet:
    """Read the Academic Phrasebank crawl (``<page>.json`` for the six pages) into labelled phrases.

    ``table_cells``: ``combine`` (join table columns, :func:`combine_table_columns`), ``cells``
    (each cell a phrase of its own) or ``skip``. ``repair_glued`` splits glued bold words.
    Raises ``FileNotFoundError`` naming missing pages and ``ValueError`` naming the file and
    function index of a malformed record.
    """
    if table_cells not in ("combine", "cells", "skip"):
        raise ValueError(f"table_cells={table_cells!r}: expected 'combine', 'cells' or 'skip'")
    directory = Path(directory)
    missing = [f"{page}.json" for page in PHRASEBANK_PAGES if not (directory / f"{page}.json").is_file()]
    if missing:
        raise FileNotFoundError(f"{directory}: Academic Phrasebank pages missing: {', '.join(missing)} "
                                f"(expected the six crawler files {', '.join(PHRASEBANK_PAGES)}.json)")
    phrases: list[Phrase] = []
    label_names: dict[int, str] = {}
    report: Counter = Counter()
    repairs: dict[str, str] = {}
    label = 0
    for page in PHRASEBANK_PAGES:
        path = directory / f"{page}.json"
        sections = load_json(path, "an Academic Phrasebank page (a JSON list of function sections)")
        if not isinstance(sections, list):
            raise ValueError(f"{path}: expected a JSON list of function sections, got {type(sections).__name__}")
        for index, section in enumerate(sections):
            label += 1
            if not isinstance(section, dict) or not isinstance(section.get("title"), str):
                raise ValueError(f"{path}: section {index}: expected an object with a 'title' string")
            label_names[label] = _normalise(section["title"])
            texts: list[tuple[str, str]] = []
            columns: dict[int, list[str]] = {}
            for key, value in section.items():
                if key == "title":
                    continue
                if not isinstance(value, str):
                    raise ValueError(f"{path}: section {index} key {key!r}: expected a string phrase")
                if _PHRASE_KEY.match(key):
                    texts.append((value, "phrasebank"))
                elif (m := _TABLE_KEY.match(key)):
                    columns.setdefault(int(m.group(1)), []).append(value)
                else:
                    raise ValueError(f"{path}: section {index} key {key!r}: expected 'p<i>-<j>' or 'td<i>-<j>'")
            report["raw_phrase_entries"] += len(texts)
            report["raw_table_cells"] += sum(len(c) for c in columns.values())
            if columns and table_cells != "skip":
                ordered = [columns[c] for c in sorted(columns)]
                if table_cells == "combine":
                    joined, table_report = combine_table_columns(ordered)
                    report["tables"] += table_report["tables"]
                    report["tables_too_large_kept_as_cells"] += table_report["tables_too_large_kept_as_cells"]
                else:
                    joined = [c for column in ordered for c in column if c.strip() and c.strip() != "break"]
                texts.extend((text, "table") for text in joined)
            seen: set[str] = set()
            for text, origin in texts:
                text = _normalise(text)
                if not re.search(r"[A-Za-z]{2}", text):
                    report["fragments_without_words"] += 1  # e.g. "., 1995)." cut off a citation
                    continue
                if repair_glued:
                    text, repaired = repair_glued_words(text)
                    repairs.update(repaired)
                if text in seen:
                    report["duplicates"] += 1
                    continue
                seen.add(text)
                phrases.append(Phrase(label, text, origin))
    if label != 80:
        report["labels_not_80"] = label
    result = dict(report)
    result.update({"source": str(directory), "labels": len(label_names), "phrases": len(phrases),
                   "glued_words_repaired": repairs,
                   "labels_without_phrases": sorted(set(label_names) - {p.label for p in phrases})})
    return PhraseSet(phrases, label_names, result)


def read_phrase_tsv(path: str | Path) -> PhraseSet:
    """Read ``label<TAB>name<TAB>phrase`` lines (a header line ``label…`` is allowed).

    A label must keep one name throughout; errors name the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: phrase file not found (expected label<TAB>name<TAB>phrase lines)")
    phrases: list[Phrase] = []
    label_names: dict[int, str] = {}
    seen: set[tuple[int, str]] = set()
    duplicates = 0
    # strict UTF-8 lines (a byte-order mark is not part of the header), a bad byte names its line
    for line_number, line in iter_lines(path, "label<TAB>name<TAB>phrase lines"):
        line = line.rstrip("\n").rstrip("\r")
        if not line.strip():
            continue
        parts = line.split("\t")
        if line_number == 1 and parts[0].strip().lower() == "label":
            continue
        if len(parts) != 3:
            raise ValueError(f"{path}:{line_number}: expected 3 tab-separated fields "
                             f"label<TAB>name<TAB>phrase, got {len(parts)}")
        label_text, name, text = (p.strip() for p in parts)
        if not label_text.isdigit() or int(label_text) < 1:
            raise ValueError(f"{path}:{line_number}: label {label_text!r}: expected a positive integer")
        label = int(label_text)
        if label in label_names and label_names[label] != name:
            raise ValueError(f"{path}:{line_number}: label {label} named {name!r} but earlier "
                             f"{label_names[label]!r}")
        if not text:
            raise ValueError(f"{path}:{line_number}: empty phrase")
        label_names[label] = name
        if (label, text) in seen:
            duplicates += 1
            continue
        seen.add((label, text))
        phrases.append(Phrase(label, _normalise(text), "tsv"))
    report = {"source": str(path), "labels": len(label_names), "phrases": len(phrases), "duplicates": duplicates,
              "labels_without_phrases": []}
    return PhraseSet(phrases, dict(sorted(label_names.items())), report)


def merge_phrase_sets(*sets: PhraseSet) -> PhraseSet:
    """One phrase set from several (e.g. the synthetic corpus' phrases and a small phrase file).

    A label named differently in two sets keeps its first name; the conflicts are reported.
    """
    phrases: list[Phrase] = []
    names: dict[int, str] = {}
    conflicts: dict[int, list[str]] = {}
    seen: set[tuple[int, str]] = set()
    for phrase_set in sets:
        for label, name in phrase_set.label_names.items():
            if label in names and names[label] != name:
                conflicts.setdefault(label, [names[label]]).append(name)
            names.setdefault(label, name)
        for phrase in phrase_set.phrases:
            if (phrase.label, phrase.text) not in seen:
                seen.add((phrase.label, phrase.text))
                phrases.append(phrase)
    report = {"sources": [s.report.get("source", "?") for s in sets], "labels": len(names),
              "phrases": len(phrases), "label_name_conflicts": conflicts,
              "labels_without_phrases": sorted(set(names) - {p.label for p in phrases})}
    return PhraseSet(phrases, dict(sorted(names.items())), report)


def load_phrases(path: str | Path, **options) -> PhraseSet:
    """A phrase list from a Phrasebank crawl directory or a ``.tsv`` file (or a directory holding one)."""
    path = Path(path)
    if path.is_dir():
        if all((path / f"{page}.json").is_file() for page in PHRASEBANK_PAGES):
            return read_phrasebank(path, **options)
        tsvs = sorted(path.glob("*.tsv"))
        if len(tsvs) == 1:
            return read_phrase_tsv(tsvs[0])
        raise FileNotFoundError(f"{path}: expected the six Phrasebank pages ({', '.join(PHRASEBANK_PAGES)}.json) "
                                f"or exactly one .tsv phrase file, found {len(tsvs)} .tsv files")
    if path.is_file():
        return read_phrase_tsv(path)
    raise FileNotFoundError(f"{path}: no phrase list here (a Phrasebank directory or a label<TAB>name<TAB>phrase file)")
