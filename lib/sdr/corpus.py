"""Papers, citation graphs, and readers for the corpora the methods train on.

The types are deliberately plain so real readers (S2ORC, SPECTER, SciRepEval, SciCite) and the
synthetic generator (:mod:`sdr.synthetic`) produce the same objects.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

INTENTS = ("background", "method", "result")


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


class CitationGraph:
    """Directed citation graph with intents and citation-context counts per edge.

    Adding the same edge twice merges intents and sums context counts. Self-citations are kept
    in the graph (they are real data) and excluded by the samplers that must exclude them.
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
        path = Path(path)
        graph = cls()
        with path.open(encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    graph.add(record["citing"], record["cited"], record.get("intents", ()),
                              record.get("context_counts"))
                except (json.JSONDecodeError, KeyError) as error:
                    raise ValueError(
                        f"{path}:{line_number}: expected {{'citing', 'cited', 'intents', "
                        f"'context_counts'}} ({error})"
                    ) from None
        return graph


# ---------------------------------------------------------------------------------------------
# Readers: SPECTER, SciRepEval, S2ORC and SciCite layouts; section-heading normalisation;
# leakage audit.
# ---------------------------------------------------------------------------------------------

import re  # noqa: E402  (kept with the readers that use it)

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
