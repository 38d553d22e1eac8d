"""Sentence templates of the synthetic corpus (all written for this project).

Three kinds of templates:

* abstract sentences per CSAbstruct role (background / objective / method / result / other);
* ordinary full-text sentences per section kind;
* formulaic *rhetorical* sentences, one list per communicative function, numbered in the
  CFS3 scheme (introducing work 1-17, referring to sources 18-32, describing methods 33-46,
  reporting results 47-60, discussing findings 61-72, writing conclusions 73-80; Iwatsuki &
  Aizawa's phrase-based labels). Their placeholders are ``X`` and ``Y`` exactly as a phrase
  list writes them, so a CFS3 implementation can split the phrases at the placeholders and
  find them again in the generated sections. The phrases are plain sentences of our own, not
  Academic Phrasebank text.

Slots in ``{braces}`` are filled by the generator: topic, topic2, method, method2, data,
measure, term (a field term), generic, adj, author, author2, year, n.
"""

from __future__ import annotations

from dataclasses import dataclass

ABSTRACT_TEMPLATES: dict[str, tuple[str, ...]] = {
    "background": (
        "Research on {topic} is active in {term}.",
        "Work on {topic} remains difficult because of {topic2}.",
        "Understanding {topic} matters for {term}.",
        "Many applications rely on {topic} and {topic2}.",
        "Recent advances in {method} have renewed interest in {topic}.",
        "Prior studies of {topic} rarely consider {topic2}.",
    ),
    "objective": (
        "In this work, we study {topic} and its relation to {topic2}.",
        "We address {topic} in settings with limited {data}.",
        "Our goal is a {adj} account of {topic}.",
        "We ask whether {topic} can be explained by {topic2}.",
    ),
    "method": (
        "We introduce a {adj} {method} for {topic}.",
        "Our approach combines {method} with {method2}.",
        "We model {topic} using {method} on {data}.",
        "The proposed {generic} builds on {method} and {topic2}.",
        "We estimate {topic} with a {method} trained on {data}.",
    ),
    "result": (
        "Experiments on {data} show gains in {measure} over strong baselines.",
        "Our {method} narrows the {measure} gap on {topic}.",
        "Results indicate a strong association between {topic} and {topic2}.",
        "The {generic} reaches a {measure} competitive with {method}.",
        "We observe consistent improvements on {data} across all settings.",
    ),
    "other": (
        "Code and data are publicly available.",
        "This paper extends an earlier conference version.",
        "We discuss implications for {term}.",
    ),
}
"""CSAbstruct-style sentence roles of an abstract."""

SECTION_TEMPLATES: dict[str, tuple[str, ...]] = {
    "introduction": ABSTRACT_TEMPLATES["background"] + ABSTRACT_TEMPLATES["objective"] + (
        "This question is relevant to {term} and to {topic2}.",
        "We focus on {topic} because of its links to {term}.",
    ),
    "related_work": (
        "{author} et al. ({year}) studied {topic} with a {method}.",
        "Studies of {topic} have examined {topic2} ({author}, {year}).",
        "A related line of work models {topic} through {method} ({author} and {author2}, {year}).",
        "{author} et al. ({year}) reported results on {data}.",
        "Work on {method} for {topic} is surveyed by {author} ({year}).",
    ),
    "method": ABSTRACT_TEMPLATES["method"] + (
        "Our {method} takes {data} as input and estimates {topic}.",
        "Each {generic} is computed from {data}.",
        "The {method} is tuned on a held-out part of {data}.",
        "We describe the {method} in three steps.",
    ),
    "results": ABSTRACT_TEMPLATES["result"] + (
        "We report {measure} on {data} for all variants.",
        "The {method} is more stable than {method2} on {topic}.",
        "Ablations show that {topic2} contributes most of the gain.",
    ),
    "conclusion": (
        "We presented the {method} for {topic}.",
        "Our findings on {topic} suggest new directions for {term}.",
        "We plan to extend this work to {topic2}.",
        "The {method} could also benefit {topic2}.",
    ),
}
"""Ordinary sentences per normalised section kind (``other`` sections use :data:`OTHER_SECTION_TEMPLATES`)."""

OTHER_SECTION_TEMPLATES: dict[str, tuple[str, ...]] = {
    "Preliminaries": (
        "We first recall basic definitions of {topic}.",
        "Throughout, the {generic} of {topic} is assumed to be known.",
        "We write {method} for the family of models considered.",
    ),
    "Threats to Validity": (
        "Our conclusions about {topic} may not transfer to {topic2}.",
        "The choice of {data} is a possible source of bias.",
        "Measurement of {measure} depends on the {generic}.",
    ),
    "Limitations": (
        "The analysis covers only {data}.",
        "Our treatment of {topic} ignores {topic2}.",
    ),
    "Acknowledgements": (
        "We thank the anonymous reviewers for their comments.",
        "This work was supported by a grant on {term}.",
        "We are grateful to {author} for discussions on {topic}.",
    ),
    "Ethics Statement": (
        "All {data} were collected with informed consent.",
        "We see no direct ethical risks in studying {topic}.",
    ),
    "Appendix A: Additional Details": (
        "Further details of the {method} are listed here.",
        "Additional results on {data} are reported for completeness.",
    ),
}
"""Sentences of the odd sections, keyed by their (unnumbered) heading."""

SECTION_HEADINGS: dict[str, tuple[str, ...]] = {
    "introduction": ("Introduction", "Introduction", "Motivation", "Introduction and Motivation"),
    "related_work": ("Related Work", "Background and Related Work", "Prior Work", "Literature Review"),
    "method": ("Method", "Methods", "Our Approach", "Materials and Methods", "Model", "Proposed Framework"),
    "results": ("Results", "Experiments", "Evaluation", "Experimental Results", "Results and Discussion"),
    "conclusion": ("Conclusion", "Conclusions and Future Work", "Discussion", "Summary and Outlook"),
}
"""Headings per kind; :func:`sdr.corpus.section_kind` maps each back to its kind."""


@dataclass(frozen=True)
class RhetoricalFunction:
    """A communicative function (CFS3 label and name) and its formulaic phrases (placeholders X, Y)."""

    label: int
    name: str
    phrases: tuple[str, ...]

    @property
    def group(self) -> str:
        return rhetorical_group(self.label)


RHETORICAL_GROUPS: tuple[tuple[str, int, int], ...] = (
    ("introducing work", 1, 17),
    ("referring to sources", 18, 32),
    ("describing methods", 33, 46),
    ("reporting results", 47, 60),
    ("discussing findings", 61, 72),
    ("writing conclusions", 73, 80),
)
"""The six CFS3 groups and their label ranges (inclusive)."""


def rhetorical_group(label: int) -> str:
    """Name of the CFS3 group a label (1-80) belongs to."""
    for name, low, high in RHETORICAL_GROUPS:
        if low <= label <= high:
            return name
    raise ValueError(f"rhetorical label {label} outside 1-80")


RHETORICAL_FUNCTIONS: tuple[RhetoricalFunction, ...] = (
    RhetoricalFunction(2, "Importance of the topic for the discipline",
                       ("X is a central problem in Y.", "X plays an important role in Y.")),
    RhetoricalFunction(7, "Inadequacies of previous studies",
                       ("Most existing approaches to X fail to account for Y.",)),
    RhetoricalFunction(9, "Identifying a knowledge gap",
                       ("Little is known about how X relates to Y.",)),
    RhetoricalFunction(11, "Purpose of the current research",
                       ("In this paper we propose a novel X for Y.", "The aim of this work is to examine X in Y.")),
    RhetoricalFunction(16, "Outlining the structure of the paper",
                       ("The remainder of this paper reviews X before presenting Y.",)),
    RhetoricalFunction(19, "Previous research in historical perspective",
                       ("Early work on X dates back to the studies of Y.",)),
    RhetoricalFunction(20, "Methodological approaches of previous research",
                       ("Previous studies have used X to investigate Y.",)),
    RhetoricalFunction(24, "Reference to a previous investigation, researcher prominent",
                       ("Y and colleagues were the first to apply X.",)),
    RhetoricalFunction(30, "Synthesising sources",
                       ("Several authors have argued that X is closely linked to Y.",)),
    RhetoricalFunction(35, "Use of an established method",
                       ("We follow the standard protocol of X to estimate Y.",)),
    RhetoricalFunction(38, "Describing the process with a purpose",
                       ("In order to evaluate X, we used Y.",)),
    RhetoricalFunction(43, "Describing the process with instruments",
                       ("X was measured using Y.",)),
    RhetoricalFunction(45, "Statistical procedures",
                       ("Statistical significance of X was assessed with Y.",)),
    RhetoricalFunction(48, "Referring to data in a table",
                       ("Table 2 shows the X obtained for Y.",)),
    RhetoricalFunction(50, "Stating a positive result",
                       ("Our X significantly outperforms Y.",)),
    RhetoricalFunction(53, "Highlighting a surprising result",
                       ("Surprisingly, X had no measurable effect on Y.",)),
    RhetoricalFunction(65, "Supporting previous findings",
                       ("These results are consistent with earlier findings on X reported for Y.",)),
    RhetoricalFunction(67, "Offering an explanation for the findings",
                       ("A possible explanation for this is that X reduces Y.",)),
    RhetoricalFunction(72, "Suggestions for future work",
                       ("Future work should investigate whether X also holds for Y.",)),
    RhetoricalFunction(74, "Summarising main findings",
                       ("This study has shown that X improves Y.",)),
    RhetoricalFunction(77, "Limitations of the current study",
                       ("A limitation of this study is that X was restricted to Y.",)),
    RhetoricalFunction(79, "Recommendations for further research",
                       ("Further research is needed to determine how X affects Y.",)),
)
"""Communicative functions planted in the sections (labels in the CFS3 ranges)."""

RHETORICAL_BY_SECTION_KIND: dict[str, tuple[RhetoricalFunction, ...]] = {
    "introduction": tuple(f for f in RHETORICAL_FUNCTIONS if 1 <= f.label <= 17),
    "related_work": tuple(f for f in RHETORICAL_FUNCTIONS if 18 <= f.label <= 32),
    "method": tuple(f for f in RHETORICAL_FUNCTIONS if 33 <= f.label <= 46),
    "results": tuple(f for f in RHETORICAL_FUNCTIONS if 47 <= f.label <= 72),
    "conclusion": tuple(f for f in RHETORICAL_FUNCTIONS if 61 <= f.label <= 80),
}
"""Where each function is planted: the section kind its group belongs to (discussion → results/conclusion)."""
