"""Readers of the S2ORC release layout (allenai/s2orc): ``metadata`` (papers, outbound and inbound citations)
and ``pdf_parses`` (full text by section). They change with S2ORC's layout only.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sdr.corpus.papers import CitationGraph, Paper, Section
from sdr.corpus.report import ReadReport, _text
from sdr.corpus.sections import section_kind
from sdr.jsonio import read_jsonl


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
