"""Papers, citation graphs, and readers for the corpora the methods train on.

The types are deliberately plain so real readers (S2ORC, SPECTER, SciRepEval, SciCite) and the
synthetic generator (:mod:`sdr.synthetic`) produce the same objects.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from sdr.jsonio import load_json, open_text, read_jsonl, require_file

INTENTS = ("background", "method", "result")
MISCELLANEOUS = "miscellaneous"
"""The thesis' fourth aspect (Bansal §5.3): a link whose citation intent is unknown (an edge with no intent)."""
ASPECTS = (*INTENTS, MISCELLANEOUS)


@dataclass
class Section:
    """A full-text section: the heading as written, a normalised kind, and its paragraphs."""

    heading: str
    paragraphs: list[str]
    kind: str = "other"  # introduction / related_work / method / results / conclusion / other

    @property
    def text(self) -> str:
        return "\n".join(self.paragraphs)


@dataclass
class Paper:
    paper_id: str
    title: str
    abstract: str = ""
    sections: list[Section] = field(default_factory=list)
    year: int | None = None
    fields: list[str] = field(default_factory=list)  # fields of study (MAG-style labels)
    venue: str | None = None
    authors: list[str] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)

    def text(self, sep: str = " [SEP] ") -> str:
        """SPECTER's input: ``title [SEP] abstract`` (the separator is the tokenizer's)."""
        return f"{self.title}{sep}{self.abstract}" if self.abstract else self.title


@dataclass(frozen=True)
class Citation:
    """A directed edge ``citing → cited`` with its intents and per-intent context counts."""

    citing: str
    cited: str
    intents: tuple[str, ...] = ()
    context_counts: tuple[tuple[str, int], ...] = ()

    def count(self, intent: str) -> int:
        return dict(self.context_counts).get(intent, 0)

    @property
    def aspects(self) -> tuple[str, ...]:
        """The edge's intents, or ``("miscellaneous",)`` when it carries none (thesis §5.3)."""
        return self.intents or (MISCELLANEOUS,)


class CitationGraph:
    """Directed citation graph with intents and citation-context counts per edge.

    Adding the same edge twice merges intents and sums context counts (two records of different contexts,
    as SciCite's); a reader whose sources repeat one citation reads it once (:func:`read_s2_citations`).
    Self-citations are kept in the graph (they are real data) and excluded by the samplers that must
    exclude them.
    """

    def __init__(self, citations: Iterable[Citation] = ()):
        self._edges: dict[tuple[str, str], Citation] = {}
        self._out: dict[str, set[str]] = defaultdict(set)
        self._in: dict[str, set[str]] = defaultdict(set)
        for citation in citations:
            self.add(citation.citing, citation.cited, citation.intents, dict(citation.context_counts))

    def add(
        self,
        citing: str,
        cited: str,
        intents: Iterable[str] = (),
        context_counts: dict[str, int] | None = None,
    ) -> None:
        citing, cited = str(citing), str(cited)
        intents = tuple(intents)
        unknown = set(intents) - set(INTENTS)
        if unknown:
            raise ValueError(f"edge {citing}->{cited}: unknown intents {sorted(unknown)}; expected {INTENTS}")
        counts = dict(context_counts or {})
        for intent in intents:
            counts.setdefault(intent, 1)
        previous = self._edges.get((citing, cited))
        if previous is not None:
            for intent, count in previous.context_counts:
                counts[intent] = counts.get(intent, 0) + count
            intents = tuple(sorted(set(intents) | set(previous.intents), key=INTENTS.index))
        else:
            intents = tuple(sorted(set(intents), key=INTENTS.index))
        self._edges[(citing, cited)] = Citation(citing, cited, intents, tuple(sorted(counts.items())))
        self._out[citing].add(cited)
        self._in[cited].add(citing)

    def __len__(self) -> int:
        return len(self._edges)

    def __iter__(self) -> Iterator[Citation]:
        return iter(self._edges.values())

    def __contains__(self, edge: tuple[str, str]) -> bool:
        return tuple(edge) in self._edges

    def edge(self, citing: str, cited: str) -> Citation | None:
        return self._edges.get((citing, cited))

    @property
    def nodes(self) -> set[str]:
        return set(self._out) | set(self._in)

    def references(self, paper_id: str) -> set[str]:
        """Papers that ``paper_id`` cites (out-edges)."""
        return set(self._out.get(paper_id, ()))

    def citations(self, paper_id: str) -> set[str]:
        """Papers that cite ``paper_id`` (in-edges)."""
        return set(self._in.get(paper_id, ()))

    def neighbours(self, paper_id: str) -> set[str]:
        """Undirected neighbourhood: references and citations."""
        return self.references(paper_id) | self.citations(paper_id)

    def subgraph(self, intent: str, min_count: int = 1) -> "CitationGraph":
        """Edges carrying ``intent`` with at least ``min_count`` contexts (FLeW's facet subgraphs)."""
        if intent not in INTENTS:
            raise ValueError(f"unknown intent {intent!r}; expected one of {INTENTS}")
        return CitationGraph(c for c in self if intent in c.intents and c.count(intent) >= min_count)

    def to_jsonl(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            for c in self:
                record = {"citing": c.citing, "cited": c.cited, "intents": list(c.intents),
                          "context_counts": dict(c.context_counts)}
                handle.write(json.dumps(record) + "\n")
        return path

    @classmethod
    def from_jsonl(cls, path: str | Path) -> "CitationGraph":
        graph = cls()
        expected = "{'citing', 'cited', 'intents', 'context_counts'} per line"
        for line_number, record in read_jsonl(path, expected, allow_empty=True):
            if "citing" not in record or "cited" not in record:
                raise ValueError(f"{path}:{line_number}: expected {expected}, got keys {sorted(record)}")
            graph.add(record["citing"], record["cited"], record.get("intents", ()), record.get("context_counts"))
        return graph


# ---------------------------------------------------------------------------------------------
# Readers: SPECTER, SciRepEval, S2ORC and SciCite layouts; section-heading normalisation;
# leakage audit.
# ---------------------------------------------------------------------------------------------

SECTION_KINDS = ("introduction", "related_work", "method", "results", "conclusion", "other")

_HEADING_NUMBER = re.compile(r"^\s*(?:(?:\d+|[IVXLC]+|[A-Z])(?:\.\d+)*\.?\)?\s+)")
# Keyword rules, checked in order: the first rule with a keyword in the heading wins. The order
# settles mixed headings: "Results and Discussion" is results, "Conclusions and Future Work" is
# conclusion, "Background and Related Work" is related work.
_SECTION_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("other", ("acknowledg", "appendix", "threats to validity", "limitation", "ethic", "preliminar",
               "funding", "supplementa", "author contribution", "conflict of interest")),
    ("introduction", ("introduction", "motivation")),
    ("related_work", ("related work", "prior work", "previous work", "literature", "background",
                      "state of the art")),
    ("conclusion", ("conclu", "summary", "future work", "outlook", "concluding")),
    ("results", ("result", "experiment", "evaluation", "finding", "empirical")),
    ("conclusion", ("discussion",)),
    ("method", ("method", "approach", "model", "material", "framework", "algorithm", "architecture",
                "procedure", "design", "proposed", "participants", "data collection", "system")),
)


def section_kind(heading: str) -> str:
    """Normalise a section heading to one of :data:`SECTION_KINDS`.

    Numbering ("3 Our Approach", "III. RESULTS") is stripped and case ignored; headings no rule
    recognises (e.g. "Preliminaries", "Acknowledgements") are ``other``.
    """
    text = _HEADING_NUMBER.sub("", heading or "").strip().lower()
    for kind, keywords in _SECTION_RULES:
        if any(keyword in text for keyword in keywords):
            return kind
    return "other"


@dataclass
class ReadReport:
    """What a reader counted: records read and kept, and every skip or oddity by reason.

    Readers never drop anything silently: each reason has a count and up to five example ids,
    and :meth:`summary` is the one line the reader prints.
    """

    source: str
    read: int = 0
    kept: int = 0
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, reason: str, example: object | None = None, count: int = 1) -> None:
        """Count ``count`` occurrences of ``reason`` (keeping a few examples)."""
        self.counts[reason] += count
        if example is not None:
            examples = self.examples.setdefault(reason, [])
            if len(examples) < 5:
                examples.append(str(example))

    def __getitem__(self, reason: str) -> int:
        return self.counts.get(reason, 0)

    def summary(self) -> str:
        """One line: source, records read/kept and the counted reasons."""
        details = ", ".join(f"{reason}: {count}" for reason, count in sorted(self.counts.items()))
        return f"{self.source}: read {self.read}, kept {self.kept}" + (f" ({details})" if details else "")

    def to_dict(self) -> dict:
        return {"source": self.source, "read": self.read, "kept": self.kept,
                "counts": dict(self.counts), "examples": dict(self.examples)}


def _text(value) -> str:
    return value.strip() if isinstance(value, str) else ""


# --- SPECTER (allenai/specter data/training and sample-metadata.json) -------------------------

SPECTER_DIRECT = 5  # data.json count for a direct citation (positive)
SPECTER_INDIRECT = 1  # count for a citation of a citation (hard negative candidate)


@dataclass
class SpecterTrainingData:
    """SPECTER's training inputs (``data/training`` of allenai/specter).

    ``graph`` holds the count-5 edges (the query cites the candidate), ``hard_candidates`` the
    count-1 candidates (cited by a paper the query cites), as SPECTER's
    ``create_training_files.py`` reads them.
    """

    papers: dict[str, Paper]
    graph: CitationGraph
    hard_candidates: dict[str, set[str]]
    splits: dict[str, list[str]]
    report: ReadReport
    queries: list[str] = field(default_factory=list)  # data.json keys, in file order

    @property
    def skipped(self) -> Counter:
        """Counted skips and oddities by reason (same as ``report.counts``)."""
        return self.report.counts



def _specter_paper(pid: str, record, path: Path, report: ReadReport) -> Paper:
    if not isinstance(record, dict):
        raise ValueError(f"{path}: record {pid!r}: expected an object with 'title' and 'abstract', "
                         f"got {type(record).__name__}")
    if "paper_id" in record and str(record["paper_id"]) != pid:
        report.note("paper_id_differs_from_key", pid)
    title, abstract = _text(record.get("title")), _text(record.get("abstract"))
    if not title:
        report.note("no_title", pid)
    if not abstract:
        report.note("no_abstract", pid)
    return Paper(paper_id=pid, title=title, abstract=abstract)


def read_specter_metadata(path: str | Path, ids_path: str | Path | None = None) -> tuple[dict[str, Paper], ReadReport]:
    """Read SPECTER metadata ``{pid: {"paper_id", "title", "abstract"}}`` (``sample-metadata.json``).

    With ``ids_path`` (e.g. ``sample.ids``, one id per line) the papers come back in that order;
    ids without metadata and metadata not listed are counted in the report.
    """
    path = Path(path)
    data = load_json(path, "SPECTER metadata {paper_id: {title, abstract}}")
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object {{paper_id: {{title, abstract}}}}, got {type(data).__name__}")
    report = ReadReport(source=str(path))
    papers: dict[str, Paper] = {}
    for pid, record in data.items():
        report.read += 1
        papers[str(pid)] = _specter_paper(str(pid), record, path, report)
    if ids_path is not None:
        ids_path = require_file(ids_path, "one paper id per line")
        ids = [line.strip() for line in ids_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not ids:
            raise ValueError(f"{ids_path}: empty file; expected one paper id per line")
        listed = set(ids)
        for pid in ids:
            if pid not in papers:
                report.note("ids_without_metadata", pid)
        for pid in papers:
            if pid not in listed:
                report.note("metadata_not_in_ids", pid)
        papers = {pid: papers[pid] for pid in dict.fromkeys(ids) if pid in papers}
    report.kept = len(papers)
    print(report.summary())
    return papers, report


def read_specter_training(directory: str | Path, require_metadata: bool = False,
                          progress: bool = True) -> SpecterTrainingData:
    """Read SPECTER's training directory: ``data.json``, ``metadata.json``, ``train/val/test.txt``.

    ``data.json`` is ``{query: {candidate: {"count": 5 | 1}}}``; any other count is an error naming
    the file and the record. Ids without metadata are counted (``ids_without_metadata``); their
    edges are kept unless ``require_metadata`` (then dropped and counted).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: directory not found; expected SPECTER's training layout "
                                "(data.json, metadata.json, train.txt, val.txt, test.txt)")
    data_path, metadata_path = directory / "data.json", directory / "metadata.json"
    data = load_json(data_path, "SPECTER citation data {query_id: {candidate_id: {'count': 5 or 1}}}")
    if not isinstance(data, dict) or not data:
        raise ValueError(f"{data_path}: expected a non-empty object {{query_id: {{candidate_id: {{'count': 5|1}}}}}}")
    metadata = load_json(metadata_path, "SPECTER metadata {paper_id: {title, abstract}}")
    if not isinstance(metadata, dict):
        raise ValueError(f"{metadata_path}: expected a JSON object {{paper_id: {{title, abstract}}}}")
    report = ReadReport(source=str(directory))
    papers = {str(pid): _specter_paper(str(pid), record, metadata_path, report) for pid, record in metadata.items()}

    graph = CitationGraph()
    hard_candidates: dict[str, set[str]] = {}
    missing: set[str] = set()
    for query, candidates in tqdm(data.items(), desc="data.json queries", disable=not progress):
        if not isinstance(candidates, dict):
            raise ValueError(f"{data_path}: record {query!r}: expected {{candidate_id: {{'count': 5|1}}}}, "
                             f"got {type(candidates).__name__}")
        for candidate, value in candidates.items():
            report.read += 1
            count = value.get("count") if isinstance(value, dict) else None
            if count not in (SPECTER_DIRECT, SPECTER_INDIRECT) or isinstance(count, bool):
                raise ValueError(
                    f"{data_path}: record {query!r} -> {candidate!r}: count {count!r}; expected "
                    f"{SPECTER_DIRECT} (direct citation) or {SPECTER_INDIRECT} (citation of a citation)"
                )
            if query == candidate:
                report.note("self_edges", query)
            unknown = [pid for pid in (query, candidate) if pid not in papers]
            for pid in unknown:
                if pid not in missing:
                    missing.add(pid)
                    report.note("ids_without_metadata", pid)
            if unknown and require_metadata:
                report.note("edges_dropped_without_metadata", f"{query}->{candidate}")
                continue
            if count == SPECTER_DIRECT:
                graph.add(query, candidate)
            else:
                hard_candidates.setdefault(query, set()).add(candidate)
            report.kept += 1
    report.counts["direct_edges"] = len(graph)
    report.counts["hard_candidate_edges"] = sum(len(c) for c in hard_candidates.values())

    splits: dict[str, list[str]] = {}
    for split in ("train", "val", "test"):
        split_path = directory / f"{split}.txt"
        if not split_path.is_file():
            report.note("missing_split_files", split_path.name)
            continue
        ids = [line.strip() for line in split_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for pid in ids:
            if pid not in data:
                report.note("split_ids_not_in_data", f"{split}:{pid}")
        splits[split] = ids
    print(report.summary())
    return SpecterTrainingData(papers=papers, graph=graph, hard_candidates=hard_candidates, splits=splits,
                               report=report, queries=[str(q) for q in data])


# --- SciRepEval SPECTER-style triplets (training/sample_data/specter_small.json) ----------------

TRIPLET_ROLES = ("query", "pos", "neg")


def _triplet_paper_id(record: dict, id_field: str) -> str | None:
    for key in (id_field, "corpus_id", "sha", "paper_id", "doc_id"):
        value = record.get(key)
        if value not in (None, ""):
            return str(value)
    return None


def read_scirepeval_triplets(
    path: str | Path, id_field: str = "corpus_id", require_abstract: bool = False, progress: bool = False,
) -> tuple[list[tuple[Paper, Paper, Paper]], ReadReport]:
    """Read SciRepEval/SPECTER triplets ``[{"query", "pos", "neg"}]`` (JSON list or JSONL).

    Each side is ``{sha, corpus_id, title, abstract}``; papers are keyed by ``id_field``
    (``corpus_id``, falling back to ``sha``) and shared between triplets. Missing abstracts
    (``null``) are counted; with ``require_abstract`` their triplets are skipped and counted.
    """
    path = require_file(path, "SciRepEval triplets [{'query', 'pos', 'neg'}]")
    what = "triplet {'query': {...}, 'pos': {...}, 'neg': {...}} with title/abstract/corpus_id or sha"
    with open_text(path) as handle:
        head = handle.read(4096).lstrip()
    if not head:
        raise ValueError(f"{path}: empty file; expected {what}")
    if head.startswith("["):
        data = load_json(path, f"a JSON list of {what}")
        records = ((index, record) for index, record in enumerate(data))
        where = "record"
    else:
        records = read_jsonl(path, what, progress=progress)
        where = "line"
    report = ReadReport(source=str(path))
    papers: dict[str, Paper] = {}
    triplets: list[tuple[Paper, Paper, Paper]] = []
    for position, record in records:
        report.read += 1
        location = f"{path}:{position}" if where == "line" else f"{path}: record {position}"
        if not isinstance(record, dict) or any(not isinstance(record.get(role), dict) for role in TRIPLET_ROLES):
            got = sorted(record) if isinstance(record, dict) else type(record).__name__
            raise ValueError(f"{location}: expected {what}; got {got}")
        sides = []
        for role in TRIPLET_ROLES:
            side = record[role]
            pid = _triplet_paper_id(side, id_field)
            if pid is None:
                raise ValueError(f"{location}: {role!r} has no id ({id_field!r}, 'corpus_id' or 'sha')")
            if pid not in papers:
                title, abstract = _text(side.get("title")), _text(side.get("abstract"))
                if not title:
                    report.note("papers_without_title", pid)
                if not abstract:
                    report.note("papers_without_abstract", pid)
                metadata = {key: side[key] for key in ("sha", "corpus_id") if side.get(key) is not None}
                papers[pid] = Paper(paper_id=pid, title=title, abstract=abstract, metadata=metadata)
            sides.append(papers[pid])
        if require_abstract and any(not paper.abstract for paper in sides):
            report.note("triplets_skipped_without_abstract", position)
            continue
        if sides[0].paper_id == sides[1].paper_id or sides[1].paper_id == sides[2].paper_id:
            report.note("triplets_with_repeated_paper", position)
        triplets.append(tuple(sides))
    if report.read == 0:
        raise ValueError(f"{path}: no triplets; expected {what}")
    report.kept = len(triplets)
    report.counts["distinct_papers"] = len(papers)
    print(report.summary())
    return triplets, report


# --- S2ORC metadata and pdf_parses (allenai/s2orc release layout) -------------------------------

def _s2orc_authors(authors) -> list[str]:
    names = []
    for author in authors or ():
        if isinstance(author, dict):
            parts = [author.get("first") or "", *(author.get("middle") or []), author.get("last") or "",
                     author.get("suffix") or ""]
            name = " ".join(part for part in parts if part)
        else:
            name = str(author)
        if name:
            names.append(name)
    return names


def read_s2orc_metadata(
    path: str | Path,
    require_abstract: bool = False,
    require_venue: bool = False,
    exclude_ids: Iterable[str] | None = None,
    keep_unknown_citations: bool = False,
    progress: bool = True,
) -> tuple[dict[str, Paper], CitationGraph, ReadReport]:
    """Read S2ORC metadata JSONL into papers and the citation graph among them.

    Edges come from ``outbound_citations`` (paper → cited) and ``inbound_citations`` (citing →
    paper). Papers without abstract (or venue/journal) are counted and kept, or skipped when
    ``require_abstract`` (``require_venue``); ``exclude_ids`` removes papers (e.g. evaluation
    papers, SciNCL's leakage filter) and counts them. Citation ids that are not papers of the
    file are counted as ``unknown_citation_ids`` and their edges dropped unless
    ``keep_unknown_citations``; edges to skipped or excluded papers are always dropped and counted.
    """
    what = ("S2ORC metadata {paper_id, title, abstract, year, venue, journal, mag_field_of_study, "
            "outbound_citations, inbound_citations, ...}")
    path = Path(path)
    excluded = {str(pid) for pid in exclude_ids} if exclude_ids is not None else set()
    report = ReadReport(source=str(path))
    papers: dict[str, Paper] = {}
    links: list[tuple[str, list, list]] = []
    dropped: set[str] = set()
    for line_number, record in read_jsonl(path, what, progress=progress):
        report.read += 1
        if record.get("paper_id") in (None, ""):
            raise ValueError(f"{path}:{line_number}: missing 'paper_id'; expected {what}")
        pid = str(record["paper_id"])
        for key in ("outbound_citations", "inbound_citations"):
            if not isinstance(record.get(key) or [], list):
                raise ValueError(f"{path}:{line_number}: {key!r} must be a list of paper ids")
        if pid in papers:
            report.note("duplicate_ids", pid)
            continue
        abstract = _text(record.get("abstract"))
        venue = _text(record.get("venue")) or _text(record.get("journal"))
        # Count every record's gaps first, then decide (so counts do not depend on the options).
        if not abstract:
            report.note("no_abstract", pid)
        if not venue:
            report.note("no_venue", pid)
        skip_reason = ("excluded" if pid in excluded else "skipped_no_abstract" if require_abstract and not abstract
                       else "skipped_no_venue" if require_venue and not venue else None)
        if skip_reason:
            report.note(skip_reason, pid)
            dropped.add(pid)
            continue
        title = _text(record.get("title"))
        if not title:
            report.note("no_title", pid)
        year = record.get("year")
        fields_of_study = record.get("mag_field_of_study") or []
        metadata = {key: record[key] for key in ("mag_id", "doi", "arxiv_id", "acl_id", "pmc_id", "pubmed_id",
                                                 "s2_url", "has_pdf_parse", "journal") if record.get(key) is not None}
        metadata["n_citations"] = len(record.get("inbound_citations") or [])
        papers[pid] = Paper(paper_id=pid, title=title, abstract=abstract, year=int(year) if year else None,
                            fields=[str(f) for f in fields_of_study], venue=venue or None,
                            authors=_s2orc_authors(record.get("authors")), metadata=metadata)
        links.append((pid, record.get("outbound_citations") or [], record.get("inbound_citations") or []))
    report.kept = len(papers)

    graph = CitationGraph()
    unknown_ids: set[str] = set()
    for pid, outbound, inbound in links:
        edges = [(pid, str(other)) for other in outbound] + [(str(other), pid) for other in inbound]
        for citing, cited in edges:
            other = cited if citing == pid else citing
            if other in papers:
                if citing == cited and (citing, cited) not in graph:
                    report.note("self_citations", pid)  # kept: real data has them (see CitationGraph)
                graph.add(citing, cited)
            elif other in dropped:
                report.note("edges_to_skipped_papers", f"{citing}->{cited}")
            else:
                if other not in unknown_ids:
                    unknown_ids.add(other)
                    report.note("unknown_citation_ids", other)
                if keep_unknown_citations:
                    graph.add(citing, cited)
                    report.note("edges_kept_to_unknown_ids")
                else:
                    report.note("edges_dropped_to_unknown_ids", f"{citing}->{cited}")
    report.counts["edges"] = len(graph)
    print(report.summary())
    return papers, graph, report


def read_s2orc_pdf_parses(
    path: str | Path, papers: dict[str, Paper] | None = None, progress: bool = True,
) -> tuple[dict[str, list[Section]], ReadReport]:
    """Read S2ORC ``pdf_parses`` JSONL (``paper_id``, ``body_text: [{section, text, ...}]``) into sections.

    Consecutive paragraphs with the same heading form one :class:`Section` whose kind is
    :func:`section_kind` of the heading. With ``papers``, each parse's sections are attached to
    the paper of the same id; parses without a paper are counted.
    """
    what = "S2ORC pdf_parse {paper_id, body_text: [{section, text}], ...}"
    path = Path(path)
    report = ReadReport(source=str(path))
    sections_by_paper: dict[str, list[Section]] = {}
    for line_number, record in read_jsonl(path, what, progress=progress):
        report.read += 1
        if record.get("paper_id") in (None, ""):
            raise ValueError(f"{path}:{line_number}: missing 'paper_id'; expected {what}")
        pid = str(record["paper_id"])
        body = record.get("body_text") or []
        if not isinstance(body, list):
            raise ValueError(f"{path}:{line_number}: 'body_text' must be a list of {{section, text}} paragraphs")
        sections: list[Section] = []
        for paragraph in body:
            if not isinstance(paragraph, dict) or "text" not in paragraph:
                raise ValueError(f"{path}:{line_number}: body_text paragraph without 'text'; expected {what}")
            text = _text(paragraph.get("text"))
            if not text:
                report.note("empty_paragraphs", pid)
                continue
            heading = _text(paragraph.get("section"))
            if not heading:
                report.note("paragraphs_without_heading", pid)
            if sections and sections[-1].heading == heading:
                sections[-1].paragraphs.append(text)
            else:
                sections.append(Section(heading=heading, paragraphs=[text], kind=section_kind(heading)))
        if not sections:
            report.note("parses_without_body_text", pid)
        sections_by_paper[pid] = sections
        if papers is not None:
            if pid in papers:
                papers[pid].sections = sections
            else:
                report.note("parses_without_paper", pid)
    report.kept = len(sections_by_paper)
    print(report.summary())
    return sections_by_paper, report


# --- SciCite (allenai/scicite JSONL) -------------------------------------------------------------

SCICITE_REQUIRED = ("string", "label", "citingPaperId", "citedPaperId")


def read_scicite(path: str | Path) -> list[dict]:
    """Read SciCite JSONL records (``string``, ``label``, ``sectionName``, ``citingPaperId``, ``citedPaperId`` …).

    Every record must carry the required fields and a label in :data:`INTENTS`; otherwise a
    ``ValueError`` names the file and line.
    """
    path = Path(path)
    what = "SciCite record {string, label, sectionName, citingPaperId, citedPaperId, ...}"
    records = []
    for line_number, record in read_jsonl(path, what):
        missing = [key for key in SCICITE_REQUIRED if record.get(key) in (None, "")]
        if missing:
            raise ValueError(f"{path}:{line_number}: missing {missing}; expected {what}")
        if record["label"] not in INTENTS:
            raise ValueError(f"{path}:{line_number}: label {record['label']!r}; expected one of {INTENTS}")
        records.append(record)
    return records


def scicite_graph(records: Iterable[dict]) -> CitationGraph:
    """Citation graph of SciCite records: intent = ``label``, context count = number of citation strings.

    Each record is one citation string (excerpt) of ``citingPaperId`` citing ``citedPaperId``;
    records of the same pair and label add up.
    """
    graph = CitationGraph()
    for record in records:
        graph.add(record["citingPaperId"], record["citedPaperId"], (record["label"],), {record["label"]: 1})
    if len(graph) == 0:
        raise ValueError("scicite_graph: no records; expected SciCite records with citingPaperId/citedPaperId/label")
    return graph


# --- Semantic Scholar Graph API citations with intents (the thesis' training data, §4.3) ---------

#: Semantic Scholar's intent names → ours; an edge with no intent is the miscellaneous aspect.
S2_INTENTS = {"background": "background", "methodology": "method", "result": "result"}


def _link_intents(link: dict, path: Path, line_number: int, anchor: str) -> list[str]:
    """A link's or a context's S2 intent names → ours; an unknown name raises naming file, line and anchor."""
    names = link.get("intents") or []
    unknown = [i for i in names if i not in S2_INTENTS]
    if unknown:
        raise ValueError(f"{path}:{line_number}: anchor {anchor}: unknown intents {unknown}; "
                         f"expected {sorted(S2_INTENTS)}")
    return list(dict.fromkeys(S2_INTENTS[i] for i in names))


def _context_counts(link: dict, path: Path, line_number: int, anchor: str,
                    report: "ReadReport") -> tuple[tuple[str, ...], dict[str, int]]:
    """The edge's intents and |C_x(e)| (FLeW eq. 3): the number of its citation contexts with intent x.

    ``contextsWithIntent`` gives each context its own intents (a link cited once for its method and twice as
    background has method 1, background 2). Without it (older pages) each intent of the link gets all of the
    link's contexts, as a count can only be guessed then; such links are counted in the report. An intent
    the link names that no context carries keeps one context (counted too)."""
    intents = _link_intents(link, path, line_number, anchor)
    per_context = link.get("contextsWithIntent")
    if not isinstance(per_context, list):
        contexts = max(1, len(link.get("contexts") or []))
        if intents:
            report.note("no contextsWithIntent: every intent given all the link's contexts", anchor)
        return tuple(intents), {intent: contexts for intent in intents}
    counts: dict[str, int] = {}
    for context in per_context:
        if not isinstance(context, dict):
            raise ValueError(f"{path}:{line_number}: anchor {anchor}: contextsWithIntent entries must be "
                             f"{{context, intents}}, got {type(context).__name__}")
        for intent in _link_intents(context, path, line_number, anchor):
            counts[intent] = counts.get(intent, 0) + 1
    for intent in intents:
        if intent not in counts:
            counts[intent] = 1
            report.note("link intent carried by no context (one context counted)", anchor)
    intents = [*intents, *(i for i in counts if i not in intents)]
    return tuple(intents), counts


def read_s2_citations(directory: str | Path) -> tuple[CitationGraph, dict[str, Paper], ReadReport]:
    """Read Semantic Scholar citation pages: the thesis' training data (Bansal §4.3) and FLeW's S2AG graph.

    ``directory`` holds pages of the Graph API as fetched per anchor paper, one JSON object a line:
    ``references.jsonl`` (``GET /paper/{id}/references?fields=contexts,intents,contextsWithIntent,…``)
    and/or ``citations.jsonl`` (``…/citations``), each line ``{"paperId": <anchor>, "data": [{"intents",
    "contexts", "contextsWithIntent", "citedPaper"|"citingPaper": {"paperId", "title", "abstract"}}, …]}``,
    and optionally ``papers.jsonl`` (``/paper/batch`` records ``{"paperId", "title", "abstract"}``) for the
    anchors' texts. Intents ``background``/``methodology``/``result`` become ours; an edge without intents is
    kept with none (the miscellaneous aspect, :data:`MISCELLANEOUS`).

    Context counts are per intent, |C_x(e)| of FLeW's eq. 3 (:func:`_context_counts`): from each context's own
    intents (``contextsWithIntent``); pages without them give every intent of the link all its contexts
    (at least 1), counted in the report. An edge read more than once — in the references of its citing
    anchor and the citations of its cited one, or on a page fetched twice — is one citation: its first
    reading is kept and the repeats are counted, never summed. Links whose other paper has no ``paperId``
    (S2 returns ``null`` for papers outside its corpus) are skipped and counted; an unknown intent or a
    malformed line raises ``ValueError`` naming file and line.
    """
    directory = Path(directory)
    files = {name: directory / f"{name}.jsonl" for name in ("references", "citations")}
    if not any(path.exists() for path in files.values()):
        raise FileNotFoundError(f"{directory}: expected references.jsonl and/or citations.jsonl (Semantic Scholar pages)")
    report = ReadReport(source=f"Semantic Scholar citations ({directory})")
    papers: dict[str, Paper] = {}
    edges: dict[tuple[str, str], tuple[tuple[str, ...], dict[str, int]]] = {}

    def remember(record: dict) -> None:
        pid = str(record["paperId"])
        if pid not in papers or not papers[pid].abstract:
            papers[pid] = Paper(pid, _text(record.get("title")), _text(record.get("abstract")))

    papers_file = directory / "papers.jsonl"
    if papers_file.exists():
        for line_number, record in read_jsonl(papers_file, "a /paper/batch record {paperId, title, abstract}"):
            if not record.get("paperId"):
                raise ValueError(f"{papers_file}:{line_number}: record without paperId")
            remember(record)
    for kind, path in files.items():
        if not path.exists():
            continue
        other_key = "citedPaper" if kind == "references" else "citingPaper"
        what = f"one API page per line {{paperId, data: [{{intents, contexts, {other_key}}}]}}"
        for line_number, page in read_jsonl(path, what):
            anchor, links = page.get("paperId"), page.get("data")
            if not anchor or not isinstance(links, list):
                raise ValueError(f"{path}:{line_number}: expected {what}, got keys {sorted(page)}")
            anchor = str(anchor)
            papers.setdefault(anchor, Paper(anchor, ""))
            for link in links:
                report.read += 1
                other = link.get(other_key) if isinstance(link, dict) else None
                if not isinstance(other, dict):
                    raise ValueError(f"{path}:{line_number}: anchor {anchor}: link without {other_key!r}")
                if not other.get("paperId"):
                    report.note(f"{kind}: other paper has no paperId", anchor)
                    continue
                intents, counts = _context_counts(link, path, line_number, anchor, report)
                remember(other)
                citing, cited = (anchor, str(other["paperId"])) if kind == "references" else (str(other["paperId"]), anchor)
                if (citing, cited) in edges:
                    report.note("edge read again (references and citations, or a repeated page): kept once",
                                f"{citing}->{cited}")
                    continue
                edges[(citing, cited)] = (intents, counts)
                if not intents:
                    report.note(f"{kind}: no intent (miscellaneous)", f"{citing}->{cited}")
                report.kept += 1
    graph = CitationGraph()
    for (citing, cited), (intents, counts) in edges.items():
        graph.add(citing, cited, intents, counts)
    print(report.summary())
    return graph, papers, report


# --- Leakage audit ---------------------------------------------------------------------------------

def leakage_audit(
    train_ids: Iterable[str], eval_sets: dict[str, Iterable[str]], n_examples: int = 5,
) -> "pandas.DataFrame":  # noqa: F821
    """Ids shared by the training data and each evaluation set (SciNCL's leakage check).

    One row per evaluation set: ``eval_set``, ``size`` (distinct ids), ``shared`` (how many of them
    are training ids), ``share`` (shared / size) and a few sorted ``examples``.
    """
    import pandas as pd  # imported here: reading corpora should not pay for pandas

    train = {str(pid) for pid in train_ids}
    rows = []
    for name, ids in eval_sets.items():
        distinct = {str(pid) for pid in ids}
        shared = sorted(distinct & train)
        rows.append({"eval_set": name, "size": len(distinct), "shared": len(shared),
                     "share": len(shared) / len(distinct) if distinct else 0.0,
                     "examples": shared[:n_examples]})
    return pd.DataFrame(rows, columns=["eval_set", "size", "shared", "share", "examples"])
