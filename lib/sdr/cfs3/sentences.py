"""Sentence pools for CFS3 matching: splitting and the readers of every source used here.

Paper 004 (§3.2) splits ~1M S2ORC papers (abstract and body text) into ~19M sentences with NLTK;
we split with pysbd (offline, rule-based; handles "et al." and "Fig. 3"). Sources:

* ``{"id", "text"}`` JSONL (sentences, or documents split here) — the CLI contract;
* S2ORC metadata JSONL (abstracts) and, when given, ``pdf_parses`` JSONL (body text), with the
  preprocessing of the paper's Appendix A as options (:class:`S2ORCFilter`);
* CSFCube abstracts from ``readable_annotations`` (sentence-split, with facet labels);
* CSAbstruct (sentence-split, with background/objective/method/result/other labels);
* SciCite citation strings;
* the synthetic corpus (:mod:`sdr.synthetic`).

Each reader returns :class:`Sentence` objects and a report of what it read and skipped.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from sdr.jsonio import InputError, check_id, read_jsonl, require_file


@dataclass
class Sentence:
    """A sentence to label: its id, text, source name and, where the source has one, a gold label."""

    id: str
    text: str
    source: str = ""
    gold: str | None = None
    meta: dict = field(default_factory=dict)


class SentenceSplitter:
    """pysbd English segmenter (``clean=False`` keeps the text as written)."""

    def __init__(self):
        import pysbd

        self._segmenter = pysbd.Segmenter(language="en", clean=False)

    def split(self, text: str) -> list[str]:
        """Sentences of a text, stripped, empty ones left out."""
        if not text or not text.strip():
            return []
        return [s.strip() for s in self._segmenter.segment(text) if s.strip()]


def _json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSONL file; a malformed line raises naming file and line."""
    return read_jsonl(path, "one JSON object per line", allow_empty=True)


def read_sentences_jsonl(
    path: str | Path,
    documents: bool = False,
    splitter: SentenceSplitter | None = None,
    progress: bool = True,
) -> tuple[list[Sentence], dict]:
    """Read ``{"id", "text"}`` lines (the CLI contract); with ``documents`` split each text with pysbd.

    An optional ``source`` field (a string) is kept (default: the file's stem). Sentences of a document keep
    the document id and get ``meta["sentence_index"]``. Strict: ``id`` is a non-empty string (an integer is
    read as its digits; ``null`` and booleans are errors), ``text`` a string, each ``id`` once, no NaN or
    infinite numbers; anything else raises :class:`~sdr.jsonio.InputError` naming the file and line. Empty
    texts are counted, not kept.
    """
    path = require_file(path, "sentence file ({'id', 'text'} JSONL)")
    splitter = splitter or (SentenceSplitter() if documents else None)
    sentences: list[Sentence] = []
    report = Counter()
    first_line: dict[str, int] = {}
    records = read_jsonl(path, "{'id': str, 'text': str} JSONL", allow_empty=True, finite=True)
    for line_number, record in tqdm(records, desc=f"reading {path.name}", disable=not progress):
        identifier, text, source = record.get("id"), record.get("text"), record.get("source")
        if isinstance(identifier, int) and not isinstance(identifier, bool):
            identifier = str(identifier)
        if not isinstance(identifier, str) or not identifier.strip() or not isinstance(text, str) \
                or not (source is None or isinstance(source, str)):
            found = {key: json.dumps(record[key])[:40] for key in ("id", "text", "source") if key in record}
            raise InputError(f"{path}:{line_number}: found {found or sorted(record)}; expected {{'id': str, "
                             f"'text': str}} (and an optional 'source': str)")
        check_id(identifier, "id", f"{path}:{line_number}")  # no surrounding whitespace, no path separator
        if identifier in first_line:
            raise InputError(f"{path}:{line_number}: id {identifier!r} again (first on line "
                             f"{first_line[identifier]}); expected each id once")
        first_line[identifier] = line_number
        source = source or path.stem
        report["lines"] += 1
        if not text.strip():
            report["empty_texts_skipped"] += 1
            continue
        if documents:
            parts = splitter.split(text)
            for index, part in enumerate(parts):
                sentences.append(Sentence(identifier, part, source, meta={"sentence_index": index}))
        else:
            sentences.append(Sentence(identifier, text.strip(), source))
    report["sentences"] = len(sentences)
    return sentences, dict(report)


# --- S2ORC -------------------------------------------------------------------------------------

LEAKAGE_VENUES: tuple[str, ...] = ("molecules", "oncotarget", "frontiers in psychology", "front psychol")
"""Venues of the CF-labelled sentence dataset (Iwatsuki & Aizawa 2021) that paper 004 (Appendix A)
removes from S2ORC to avoid leakage, besides the ACL Anthology (S2ORC's ``acl_id``)."""


@dataclass
class S2ORCFilter:
    """Paper 004, Appendix A: papers without venue/journal, without body text, or from the
    leakage corpora (ACL Anthology, Molecules, Oncotarget, Frontiers in Psychology) are left out."""

    require_venue: bool = True
    require_body_text: bool = False  # only meaningful when pdf_parses are given
    exclude_leakage: bool = True
    include_abstract: bool = True
    include_body_text: bool = True


def _venue_key(text: str | None) -> str:
    return re.sub(r"[^a-z ]", "", (text or "").lower()).strip()


def _leakage_reason(record: dict) -> str | None:
    if record.get("acl_id"):
        return "acl_anthology"
    for key in ("venue", "journal"):
        if _venue_key(record.get(key)) in LEAKAGE_VENUES:
            return _venue_key(record.get(key)).replace(" ", "_")
    return None


def s2orc_sentences(
    metadata_path: str | Path,
    pdf_parses_path: str | Path | None = None,
    options: S2ORCFilter | None = None,
    splitter: SentenceSplitter | None = None,
    progress: bool = True,
) -> tuple[list[Sentence], dict]:
    """Sentences of S2ORC abstracts (metadata JSONL) and body texts (``pdf_parses`` JSONL).

    Sentence ids are ``<paper_id>:abstract:<k>`` and ``<paper_id>:body:<k>``. The report counts
    papers read, kept and skipped per reason.
    """
    options = options or S2ORCFilter()
    metadata_path = require_file(metadata_path, "S2ORC metadata JSONL")
    splitter = splitter or SentenceSplitter()
    body: dict[str, list[str]] = {}
    if pdf_parses_path is not None:
        pdf_parses_path = require_file(pdf_parses_path, "S2ORC pdf_parses JSONL")
        for line_number, record in _json_lines(pdf_parses_path):
            if "paper_id" not in record or not isinstance(record.get("body_text", []), list):
                raise ValueError(f"{pdf_parses_path}:{line_number}: expected {{'paper_id', 'body_text': [...]}}")
            body[str(record["paper_id"])] = [p.get("text", "") for p in record.get("body_text") or []
                                             if isinstance(p, dict)]
    report = Counter()
    sentences: list[Sentence] = []
    for line_number, record in tqdm(_json_lines(metadata_path), desc="S2ORC papers", disable=not progress):
        if "paper_id" not in record:
            raise ValueError(f"{metadata_path}:{line_number}: expected an S2ORC metadata record with 'paper_id'")
        paper_id = str(record["paper_id"])
        report["papers"] += 1
        if options.require_venue and not (record.get("venue") or record.get("journal")):
            report["skipped_no_venue"] += 1
            continue
        paragraphs = body.get(paper_id, [])
        if options.require_body_text and not any(p.strip() for p in paragraphs):
            report["skipped_no_body_text"] += 1
            continue
        if options.exclude_leakage and (reason := _leakage_reason(record)):
            report[f"skipped_leakage_{reason}"] += 1
            continue
        kept_any = False
        if options.include_abstract and isinstance(record.get("abstract"), str):
            for k, text in enumerate(splitter.split(record["abstract"])):
                sentences.append(Sentence(f"{paper_id}:abstract:{k}", text, "s2orc"))
                kept_any = True
        if options.include_body_text:
            k = 0
            for paragraph in paragraphs:
                for text in splitter.split(paragraph):
                    sentences.append(Sentence(f"{paper_id}:body:{k}", text, "s2orc"))
                    k += 1
                    kept_any = True
        report["papers_kept" if kept_any else "papers_without_text"] += 1
    report["sentences"] = len(sentences)
    report["pdf_parses_given"] = pdf_parses_path is not None
    return sentences, dict(report)


# --- sentence-labelled benchmarks ----------------------------------------------------------------

def csabstruct_sentences(
    directory: str | Path, splits: Iterable[str] = ("train",), progress: bool = True,
) -> tuple[list[Sentence], dict]:
    """CSAbstruct sentences (``{split}.jsonl``: ``abstract_id, sentences, labels``) with gold labels.

    Only the ``train`` split by default: CSAbstruct's dev and test sentences are what SciToricsBERT is
    validated and scored on (paper 004, Table 4), so a CFS3 pool must not hold them; ask for them
    explicitly (e.g. to measure label agreement) and keep them out of any training pool
    (:func:`sdr.cfs3.leakage.exclude_held_out`). Ids are ``<split>:<abstract_id>:<k>`` (abstract ids
    restart per split).
    """
    directory = Path(directory)
    sentences: list[Sentence] = []
    report = Counter()
    for split in splits:
        path = require_file(directory / f"{split}.jsonl", f"CSAbstruct {split} split")
        for line_number, record in tqdm(_json_lines(path), desc=f"CSAbstruct {split}", disable=not progress):
            texts, labels = record.get("sentences"), record.get("labels")
            if not isinstance(texts, list) or not isinstance(labels, list) or len(texts) != len(labels):
                raise ValueError(f"{path}:{line_number}: expected 'sentences' and 'labels' lists of equal length")
            report["abstracts"] += 1
            for k, (text, label) in enumerate(zip(texts, labels)):
                sentences.append(Sentence(f"{split}:{record.get('abstract_id')}:{k}", text, "csabstruct",
                                          gold=str(label)))
    report["sentences"] = len(sentences)
    return sentences, dict(report)


def scicite_sentences(
    directory: str | Path, splits: Iterable[str] = ("train", "dev", "test"), progress: bool = True,
) -> tuple[list[Sentence], dict]:
    """SciCite citation strings (``string`` field) with their intent as gold; missing splits are reported."""
    directory = Path(directory)
    splits = tuple(splits)
    sentences: list[Sentence] = []
    report: Counter = Counter()
    missing = []
    for split in splits:
        path = directory / f"{split}.jsonl"
        if not path.is_file():
            missing.append(split)
            continue
        for line_number, record in tqdm(_json_lines(path), desc=f"SciCite {split}", disable=not progress):
            text = record.get("string")
            if not isinstance(text, str):
                raise ValueError(f"{path}:{line_number}: expected a SciCite record with a 'string' field")
            identifier = str(record.get("unique_id") or record.get("id") or f"{split}:{line_number}")
            sentences.append(Sentence(identifier, text.strip(), "scicite", gold=record.get("label")))
    if len(missing) == len(splits):
        raise FileNotFoundError(f"{directory}: no SciCite split found (expected {', '.join(splits)}.jsonl)")
    result = dict(report)
    result.update({"sentences": len(sentences), "splits_missing": missing})
    return sentences, result


def csfcube_sentences(directory: str | Path, progress: bool = True) -> tuple[list[Sentence], dict]:
    """Abstract sentences of every CSFCube paper with their facet labels as gold.

    Papers come from :func:`sdr.evaluate.csfcube.read_csfcube_papers` (``abstracts-csfcube-preds.jsonl``
    when present, else ``readable_annotations/*.txt``). Ids are ``<paper_id>:<k>``.
    """
    from sdr.evaluate.csfcube import read_csfcube_papers

    papers = read_csfcube_papers(directory, progress=progress)
    sentences = [Sentence(f"{pid}:{k}", text, "csfcube", gold=label)
                 for pid, paper in papers.items()
                 for k, (text, label) in enumerate(zip(paper.metadata.get("abstract_sentences") or [],
                                                       paper.metadata.get("abstract_labels") or []))
                 if text and text.strip()]
    return sentences, {"papers": len(papers), "sentences": len(sentences)}


def synthetic_sentences(corpus, include_sections: bool = True, splitter: SentenceSplitter | None = None,
                        progress: bool = True) -> tuple[list[Sentence], dict]:
    """Sentences of a synthetic corpus (:func:`sdr.synthetic.make_corpus`).

    Abstract sentences carry their CSAbstruct-style label as ``gold``; section sentences are split
    with pysbd, and a sentence planted from a rhetorical phrase carries its function label in
    ``meta["planted_label"]`` (so the chapter can check recovery). Ids: ``<paper>:abstract:<k>``,
    ``<paper>:section<s>:<k>``.
    """
    splitter = splitter or SentenceSplitter()
    sentences: list[Sentence] = []
    planted_total = 0
    for paper in tqdm(corpus.papers.values(), desc="synthetic papers", disable=not progress):
        texts = paper.metadata.get("abstract_sentences") or splitter.split(paper.abstract)
        labels = paper.metadata.get("abstract_labels") or [None] * len(texts)
        for k, (text, label) in enumerate(zip(texts, labels)):
            sentences.append(Sentence(f"{paper.paper_id}:abstract:{k}", text, "synthetic", gold=label))
        if not include_sections:
            continue
        planted = {r["text"]: int(r["label"]) for r in paper.metadata.get("rhetorical", [])}
        planted_total += len(planted)
        for s, section in enumerate(paper.sections):
            k = 0
            for paragraph in section.paragraphs:
                for text in splitter.split(paragraph):
                    meta = {"section_kind": section.kind}
                    if text in planted:
                        meta["planted_label"] = planted[text]
                    sentences.append(Sentence(f"{paper.paper_id}:section{s}:{k}", text, "synthetic", meta=meta))
                    k += 1
    found = sum("planted_label" in s.meta for s in sentences)
    return sentences, {"papers": len(corpus.papers), "sentences": len(sentences),
                       "planted_sentences": planted_total, "planted_sentences_found_after_split": found}
