"""FLeW's three facets and CSAbstruct's five sentence labels: the mapping between them (``objective`` →
method or background, ``other`` → a neighbour's facet), the sentence segmenter, and joining sentences back into
facets. It changes with the reading of FLeW's facet definitions, not with any classifier.
"""
from __future__ import annotations

from collections.abc import Sequence


FACETS = ("background", "method", "result")
CSABSTRUCT_LABELS = ("background", "objective", "method", "result", "other")
OBJECTIVE_TARGETS = ("method", "background")


def label_mapping(objective_to: str = "method") -> dict[str, str | None]:
    """CSAbstruct label → FLeW facet (``other`` → None: it takes a neighbour's facet)."""
    if objective_to not in OBJECTIVE_TARGETS:
        raise ValueError(f"objective_to must be one of {OBJECTIVE_TARGETS}, got {objective_to!r}")
    return {"background": "background", "objective": objective_to, "method": "method", "result": "result",
            "other": None}


def to_facets(labels: Sequence[str], objective_to: str = "method") -> list[str]:
    """One abstract's sentence labels (CSAbstruct's or already facets) → one facet per sentence.

    ``other`` joins the facet of the previous sentence (of the next one when it leads the abstract;
    background when the whole abstract is ``other``).
    """
    mapping = label_mapping(objective_to)
    unknown = sorted(set(labels) - set(mapping))
    if unknown:
        raise ValueError(f"unknown sentence labels {unknown}; expected {CSABSTRUCT_LABELS}")
    facets = [mapping[label] for label in labels]
    known = [f for f in facets if f is not None]
    previous = known[0] if known else "background"
    for i, facet in enumerate(facets):
        if facet is None:
            facets[i] = previous
        previous = facets[i]
    return facets


class SentenceSegmenter:
    """pysbd (rule-based, offline) sentences as exact substrings of the text, in order."""

    def __init__(self):
        import pysbd

        self._segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)

    def split(self, text: str) -> list[str]:
        if not text or not text.strip():
            return []
        return [span.sent.strip() for span in self._segmenter.segment(text) if span.sent.strip()]


def join_facets(sentences: Sequence[str], facets: Sequence[str]) -> dict[str, str]:
    """``{facet: its sentences joined by one space}`` (every facet key present, possibly empty)."""
    if len(sentences) != len(facets):
        raise ValueError(f"{len(sentences)} sentences but {len(facets)} facet labels")
    return {facet: " ".join(s for s, f in zip(sentences, facets) if f == facet) for facet in FACETS}
