"""Section headings normalised to a few kinds (:func:`section_kind`, :data:`SECTION_KINDS`): introduction,
related work, method, results, conclusion, other. The keyword rules change on their own, whatever reads the
full text.
"""
from __future__ import annotations

import re


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
