"""The plain types every corpus reader and the synthetic generator produce: :class:`Paper`, :class:`Section`,
:class:`Citation` and :class:`CitationGraph` (directed edges with intents and context counts), and the citation
intents (:data:`INTENTS`, :data:`ASPECTS`).

They change when what the book knows about a paper or a citation changes, not when a reader does.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sdr.jsonio import read_jsonl


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
