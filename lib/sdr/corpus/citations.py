"""Readers of citations with intents: SciCite (allenai/scicite JSONL) and the Semantic Scholar Graph API's
references and citations with intents and contexts (the thesis' training data, §4.3). They change with those
layouts only.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sdr.corpus.papers import INTENTS, CitationGraph, Paper
from sdr.corpus.report import ReadReport, _text
from sdr.jsonio import read_jsonl


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
