"""CoSaEmb (Singh & Singh): contrastive section-aware aspect embeddings from full text.

What makes the method *this* method, built from the shared modules:

* :func:`cosaemb_aspect` — the paper's rule (§4 "Training Dataset"): keyword matching puts a section heading
  into Introduction, Related Works, Method, Results or Conclusion, and **every heading that matches nothing
  goes to Methods**. The paper's seed keywords come from the 25,482 headings Chakraborty et al. (2016) sorted
  by hand, which are not public: **the keywords here are this book's own**, only the rule's shape is the
  paper's. It differs from :func:`sdr.corpus.section_kind`, which has an ``other`` class.
* :func:`aspect_texts` — §3.3.1: a paper's sections are merged by kind into (at most) **five aspect texts**,
  ``p^intr, p^rel, p^meth, p^res, p^conc``, so each aspect counts once per paper (Table 2's frequencies are
  all ≤ the 97,402 papers; Method 97,104).
* :class:`~sdr.methods.cosaemb.chunking.Chunker` (module :mod:`.chunking`) — §3.3.1: an aspect text is split at
  sentence boundaries into chunks that fit the encoder (512 tokens in the paper); the first chunk is ``[TTL] title [SEP] [INTR] l1 … li`` (the aspect's own
  token), every later chunk repeats the previous chunk's last sentence: ``[INTR] li [INTR] li+1 … lj``.
  The abstract input is ``[TTL] title [SEP] [ABS] abstract``. :data:`SPECIAL_TOKENS` are the seven tokens
  added to the tokenizer (:meth:`sdr.encoders.Encoder.add_special_tokens`).
* :func:`specter_training_set` — the inter-document triplets are **SPECTER's own training triplets**, "taken
  from the SPECTER training set to ensure a fair comparison" (Table 3), not sampled again; the citations
  they imply (each query cites its positive) give the cited papers whose abstracts are the intra-document
  negatives (§3.3.2).
* :func:`cosaemb_triplets` — the three triplet kinds of §3.3 (eqs. 2-4); the paper counts **one direction**
  (Table 2's section triplets sum to Table 3's local count, its frequencies to the global count), which is
  the default; ``both_directions=True`` adds the reversed pairs of eqs. 8-9:

  ======== ============================== ============================ ============================
  kind     query                          positive                     negative
  ======== ============================== ============================ ============================
  local    chunk i+1 of an aspect (eq. 2) chunk i of the same aspect   abstract of a paper it cites
  global   first chunk of an aspect (3)   the paper's own abstract     abstract of a paper it cites
  inter    abstract (eq. 4, SPECTER's)    abstract of a cited paper    abstract of a paper not cited
  ======== ============================== ============================ ============================

  Triplet texts are not all papers here, so every text gets an id: a paper id stands for its abstract
  input and ``<paper_id>#<aspect>.<chunk>`` for a chunk; the returned ``texts`` maps ids to inputs, which is
  what :class:`sdr.train.TripletObjective` expects.
* :data:`PAPER_MARGINS` — margin gradation (eq. 5, §3.4): squared L2 distance with margin
  inter 1 < global 2 < local 3; :data:`MARGIN_RUNS` are the paper's four settings (§4 and Table 6).
* :data:`PAPER_TRAINING` — SciBERT, 2 epochs, slanted-triangular schedule, lr 2e-5, 10 % warm-up, batch 32.
  The paper does not say how a text becomes one vector; the chapter's ``pooling`` parameter decides.
* :func:`plan_run` — one training run as ``ChapterData.plan`` reads it. SPECTER's ``plan_run`` measures papers'
  ``title [SEP] abstract``; a CoSaEmb triplet names chunks and abstract inputs by id, so the tokens per text are
  measured on ``texts`` (what the objective encodes).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from sdr.corpus import CitationGraph, Paper, Section
from sdr.evaluate.paragraphs import Chunk as ParagraphChunk
from sdr.losses import TripletMarginLoss
from sdr.samplers import Triplet
from sdr.train import TripletObjective

if TYPE_CHECKING:  # the chunker imports this module's tokens
    from sdr.methods.cosaemb.chunking import Chunker

__all__ = [
    "ASPECTS",
    "ASPECT_NAMES",
    "ASPECT_TOKENS",
    "FACET_TOKENS",
    "SPECIAL_TOKENS",
    "TITLE_TOKEN",
    "ABSTRACT_TOKEN",
    "PAPER_MARGINS",
    "MARGIN_RUNS",
    "PAPER_TRAINING",
    "cosaemb_aspect",
    "cosaemb_aspect_matched",
    "aspect_distribution",
    "AspectText",
    "aspect_texts",
    "TripletReport",
    "specter_training_set",
    "FullTextReport",
    "attach_full_text",
    "cosaemb_triplets",
    "repeat_to",
    "aspect_paragraphs",
    "with_margins",
    "cosaemb_objective",
    "counts_tables",
    "check_counts",
    "facet_query_text",
    "triplet_distances",
    "margin_loss",
    "plan_run",
]

# ------------------------------------------------------------------------------------ aspects, tokens
ASPECTS = ("introduction", "related_work", "method", "results", "conclusion")
ASPECT_NAMES = {"introduction": "Introduction", "related_work": "Related Works", "method": "Method",
                "results": "Results", "conclusion": "Conclusion"}
"""The paper's names (Table 2)."""

TITLE_TOKEN, ABSTRACT_TOKEN = "[TTL]", "[ABS]"
ASPECT_TOKENS = {"introduction": "[INTR]", "related_work": "[RW]", "method": "[MET]", "results": "[RES]",
                 "conclusion": "[CONC]"}
SPECIAL_TOKENS = (TITLE_TOKEN, ABSTRACT_TOKEN, *ASPECT_TOKENS.values())
"""The seven tokens added to the tokenizer (§3.3.1-3.3.2)."""

FACET_TOKENS = {"background": ("[INTR]", "[RW]"), "method": ("[MET]",), "result": ("[RES]",)}
"""CSFCube query tokens per facet (§5): background [INTR] and [RW], method [MET], result [RES]."""

PAPER_MARGINS = {"inter": 1.0, "global": 2.0, "local": 3.0}
"""Margin gradation m_ti < m_tg < m_ts, the paper's best setting (§4 Training Details)."""

MARGIN_RUNS = {
    "graded (1, 2, 3)": {"inter": 1.0, "global": 2.0, "local": 3.0},
    "flat (1, 1, 1)": {"inter": 1.0, "global": 1.0, "local": 1.0},
    "graded (0.5, 1, 1.5)": {"inter": 0.5, "global": 1.0, "local": 1.5},
    "graded (2, 4, 6)": {"inter": 2.0, "global": 4.0, "local": 6.0},
}
"""The paper's ablation (§4) plus the flat setting of Table 6 ("w/o margin gradation"): the registry of the chapter's
margin runs (its ``margin_runs`` parameter names entries; the training step, the plan and the tests read it). Shown in:
notebooks/cosaemb.ipynb, "Training: one run per margin setting, and the control"."""

PAPER_TRAINING = {"model": "allenai/scibert_scivocab_uncased", "max_length": 512, "epochs": 2,
                  "batch_size": 32, "learning_rate": 2e-5, "schedule": "slanted_triangular",
                  "warmup_ratio": 0.1}
"""§4 Training Details (three V100s; the split of the batch of 32 over them is not given)."""

_HEADING_NUMBER = re.compile(r"^\s*(?:(?:\d+|[IVXLC]+|[A-Z])(?:\.\s?\d+)*\.?\)?\s+)")
# Seed keywords per aspect. The paper took its keywords from the 25,482 headings Chakraborty et al. (2016)
# sorted into the five classes; that list is not public, so these keywords are this book's own. The keyword that occurs
# EARLIEST in the heading decides ("Results and Discussion" → results, "Discussion and Conclusions" →
# conclusion, "Materials and Methods" → method); a heading without any keyword is a Method section.
_ASPECT_KEYWORDS: dict[str, tuple[str, ...]] = {
    "introduction": ("introduc", "motivation", "preface"),
    "related_work": ("related work", "related research", "related stud", "related literature", "background",
                     "prior work", "previous work", "previous stud", "literature", "state of the art",
                     "state-of-the-art"),
    "method": ("method", "approach", "material", "model", "algorithm", "framework", "architecture",
               "procedure", "design", "implementation", "setup", "set-up", "setting"),
    "results": ("result", "experiment", "evaluation", "finding", "performance", "empirical", "comparison",
                "case stud", "analysis of results"),
    "conclusion": ("conclu", "discussion", "summary", "future work", "closing remark", "outlook",
                   "final remark"),
}
_KEYWORD_PATTERN = re.compile("|".join(
    re.escape(k) for k in sorted({k for ks in _ASPECT_KEYWORDS.values() for k in ks}, key=len, reverse=True)))
_KEYWORD_ASPECT = {k: aspect for aspect, ks in _ASPECT_KEYWORDS.items() for k in ks}


def cosaemb_aspect(heading: str | None) -> str:
    """The paper's heading rule with this book's keywords: one of :data:`ASPECTS`; headings that match no
    keyword are ``"method"``.

    Numbering ("3.2 Results", "III. RELATED WORK") is stripped and case ignored. The earliest keyword
    in the heading wins; "Experimental Setup" is a results heading (its first keyword is "experiment").
    Empty headings, "Acknowledgements", "Appendix" and topical headings ("DNA extraction") all go to
    Methods, as the paper says unmatched headings do.

    Shown in: notebooks/cosaemb.ipynb, "Sections → aspects: the heading rule".
    """
    text = _HEADING_NUMBER.sub("", heading if isinstance(heading, str) else "").strip().lower()
    match = _KEYWORD_PATTERN.search(text)
    return _KEYWORD_ASPECT[match.group(0)] if match else "method"


def cosaemb_aspect_matched(heading: str | None) -> bool:
    """Whether a keyword matched (False: the heading went to Methods by default)."""
    text = _HEADING_NUMBER.sub("", heading if isinstance(heading, str) else "").strip().lower()
    return _KEYWORD_PATTERN.search(text) is not None


def aspect_distribution(headings: Iterable[str | None]) -> pd.DataFrame:
    """How headings distribute over the five aspects: per distinct heading (case-folded) and per occurrence.

    Columns: ``distinct headings``, ``of which by default`` (no keyword matched → Methods),
    ``occurrences``; one row per aspect in :data:`ASPECTS` order, with the paper's names.
    """
    occurrences: Counter = Counter()
    for heading in headings:
        occurrences[(heading if isinstance(heading, str) else "").strip().lower()] += 1
    rows = {aspect: {"distinct headings": 0, "of which by default": 0, "occurrences": 0} for aspect in ASPECTS}
    for heading, count in occurrences.items():
        aspect = cosaemb_aspect(heading)
        rows[aspect]["distinct headings"] += 1
        rows[aspect]["of which by default"] += int(not cosaemb_aspect_matched(heading))
        rows[aspect]["occurrences"] += count
    table = pd.DataFrame(rows).T
    table.index = [ASPECT_NAMES[a] for a in table.index]
    table.index.name = "aspect"
    return table


@dataclass(frozen=True)
class AspectText:
    """One of a paper's (at most) five aspect texts: every section of one kind, merged in reading order."""

    aspect: str
    headings: tuple[str, ...]  # the headings merged here, as written
    paragraphs: tuple[str, ...]


def aspect_texts(paper: Paper) -> list[AspectText]:
    """§3.3.1: the sections of ``paper`` merged by kind (:func:`cosaemb_aspect` of each heading) into one text
    per aspect, in :data:`ASPECTS` order; aspects without a section are absent (so at most five per paper).
    Shown in: notebooks/cosaemb.ipynb, "Training data: SPECTER's triplets, full text, chunks"."""
    headings: dict[str, list[str]] = {aspect: [] for aspect in ASPECTS}
    paragraphs: dict[str, list[str]] = {aspect: [] for aspect in ASPECTS}
    for section in paper.sections:
        aspect = cosaemb_aspect(section.heading)
        headings[aspect].append(section.heading)
        paragraphs[aspect].extend(section.paragraphs)
    return [AspectText(aspect, tuple(headings[aspect]), tuple(paragraphs[aspect]))
            for aspect in ASPECTS if headings[aspect]]


# ------------------------------------------------------------------------------------ triplets
def specter_training_set(
    records: Iterable[tuple[Paper, Paper, Paper]], margin: float = PAPER_MARGINS["inter"],
) -> tuple[list[Triplet], dict[str, Paper], CitationGraph]:
    """SPECTER's training triplets as CoSaEmb's inter-document triplets (eq. 4, Table 3), unchanged.

    ``records`` are ``(query, positive, negative)`` papers as :func:`sdr.corpus.read_scirepeval_triplets`
    returns them (SciRepEval's ``cite_prediction``: each side with ``corpus_id``, title and abstract). Returns
    the triplets (kind ``inter``, ``margin``), the papers they name and the citations they imply: SPECTER's
    positives are papers the query cites, so each (query, positive) is an edge query → positive.
    """
    triplets: list[Triplet] = []
    papers: dict[str, Paper] = {}
    graph = CitationGraph()
    for query, positive, negative in records:
        for paper in (query, positive, negative):
            papers.setdefault(paper.paper_id, paper)
        triplets.append(Triplet(query.paper_id, positive.paper_id, negative.paper_id, "inter", float(margin)))
        if query.paper_id != positive.paper_id and (query.paper_id, positive.paper_id) not in graph:
            graph.add(query.paper_id, positive.paper_id)
    if not triplets:
        raise ValueError("specter_training_set: no triplets given")
    return triplets, papers, graph


@dataclass
class FullTextReport:
    """How the full text met the triplets' papers (:func:`attach_full_text`)."""

    full_text_papers: int = 0  # papers in the full-text files
    attached: int = 0  # of those, papers of the triplets: their sections are now set
    not_in_triplets: int = 0  # full text of a paper no triplet names (left out)
    without_sections: int = 0  # triplet papers whose parse has no section

    def __str__(self) -> str:
        return (f"full text: {self.full_text_papers} papers read, {self.attached} of them named by the triplets "
                f"({self.without_sections} without any section); {self.not_in_triplets} not in the triplets, "
                f"left out.")


def attach_full_text(papers: Mapping[str, Paper], sections_by_paper: Mapping[str, list[Section]],
                     full_text_source: str = "the full text", triplets_source: str = "the triplets") -> FullTextReport:
    """Set the sections of every paper of ``papers`` that has full text (ids are S2 corpus ids on both sides).

    Raises ``ValueError`` when no full-text paper is one of ``papers``: the two inputs do not describe the same
    papers (e.g. real triplets with a replica's full text), and no intra-document triplet could be built.
    """
    report = FullTextReport(full_text_papers=len(sections_by_paper))
    for pid, sections in sections_by_paper.items():
        if pid not in papers:
            report.not_in_triplets += 1
            continue
        papers[pid].sections = list(sections)
        report.attached += 1
        report.without_sections += not sections
    if report.full_text_papers and not report.attached:
        example = next(iter(sections_by_paper))
        raise ValueError(f"attach_full_text: none of the {report.full_text_papers} papers of {full_text_source} "
                         f"(e.g. {example!r}) is named by {triplets_source} (e.g. {next(iter(papers), None)!r}): "
                         "the full text must be that of the triplets' papers (S2 corpus ids); use the real data "
                         "for both inputs or the replicas for both")
    return report


@dataclass
class TripletReport:
    """Counts in the shape of the paper's Tables 2 and 3, plus every paper that gave no triplet."""

    papers: int = 0  # full-text papers considered
    papers_with_triplets: int = 0
    both_directions: bool = False
    aspects_by_aspect: Counter = field(default_factory=Counter)  # Table 2 "Frequency": papers with the aspect
    local_pairs_by_aspect: Counter = field(default_factory=Counter)  # Table 2 "Section Triplets"
    triplets_by_kind: Counter = field(default_factory=Counter)  # what is trained (both directions when asked)
    skipped: Counter = field(default_factory=Counter)  # reason → papers
    inter_without_abstract: int = 0  # given inter-document triplets naming a paper without abstract (kept)

    def __str__(self) -> str:
        kinds = ", ".join(f"{k}: {self.triplets_by_kind[k]}" for k in ("local", "global", "inter"))
        skipped = ", ".join(f"{r}: {n}" for r, n in sorted(self.skipped.items())) or "none"
        direction = "both directions" if self.both_directions else "one direction, as the paper counts"
        return (f"CoSaEmb triplets ({direction}) from {self.papers_with_triplets} of {self.papers} full-text papers: "
                f"{kinds}; papers skipped ({skipped}); inter-document triplets naming a paper without abstract: "
                f"{self.inter_without_abstract}.")


def cosaemb_triplets(
    papers: Mapping[str, Paper],
    graph: CitationGraph,
    chunker: Chunker,
    query_ids: Iterable[str] | None = None,
    margins: Mapping[str, float] = PAPER_MARGINS,
    seed: int = 0,
    inter_triplets: Iterable[Triplet] = (),
    both_directions: bool = False,
) -> tuple[list[Triplet], dict[str, str], TripletReport]:
    """Local and global triplets of the full-text papers ``query_ids`` (default: all with sections), then the
    given inter-document triplets (SPECTER's, :func:`specter_training_set`).

    The negative of a local or global triplet is the abstract of a paper the query paper cites in ``graph``
    (one drawn per triplet, seeded; §3.3.2: "p_-^abs … of a paper that p_c cites"); papers that cite no paper
    with an abstract give no intra-document triplet and are counted. ``both_directions`` adds eqs. 8-9's reversed
    pairs (abstract → first chunk, chunk i → chunk i+1). Returns ``(triplets, texts, report)``: ``texts`` maps
    every id used to its input text.

    Shown in: notebooks/cosaemb.ipynb, "Training data: SPECTER's triplets, full text, chunks" (and the held-out
    triplets of "The order of distances on held-out papers").
    """
    for kind in ("local", "global", "inter"):
        if kind not in margins:
            raise ValueError(f"cosaemb_triplets: margins need 'local', 'global' and 'inter', got {dict(margins)}")
    rng = np.random.default_rng(seed)
    report = TripletReport(both_directions=both_directions)
    texts: dict[str, str] = {}
    triplets: list[Triplet] = []
    ids = sorted(query_ids) if query_ids is not None else sorted(p for p, paper in papers.items() if paper.sections)

    def add(query: str, positive: str, kind: str, cited: list[str]) -> None:
        pairs = ((query, positive), (positive, query)) if both_directions else ((query, positive),)
        for q, k in pairs:
            negative = cited[int(rng.integers(len(cited)))]
            texts[negative] = chunker.abstract_text(papers[negative])
            triplets.append(Triplet(q, k, negative, kind, float(margins[kind])))

    for pid in ids:
        if pid not in papers:
            raise ValueError(f"cosaemb_triplets: query paper {pid} is not in the papers given")
        paper = papers[pid]
        report.papers += 1
        cited = sorted(c for c in graph.references(pid) if c in papers and c != pid and papers[c].abstract)
        if not paper.sections:
            report.skipped["no full text (sections)"] += 1
            continue
        if not cited:
            report.skipped["cites no paper with an abstract"] += 1
            continue
        if not paper.abstract:
            report.skipped["no abstract"] += 1
            continue
        report.papers_with_triplets += 1
        texts[pid] = chunker.abstract_text(paper)
        for aspect_chunks in chunker.paper_chunks(paper):
            if not aspect_chunks:
                continue
            aspect = aspect_chunks[0].aspect
            report.aspects_by_aspect[aspect] += 1
            for chunk in aspect_chunks:
                texts[chunk.id] = chunk.text
            add(aspect_chunks[0].id, pid, "global", cited)  # eq. 3 (reversed: eq. 8)
            for before, after in zip(aspect_chunks, aspect_chunks[1:]):
                report.local_pairs_by_aspect[aspect] += 1
                add(after.id, before.id, "local", cited)  # eq. 2 (reversed: eq. 9)
    for t in inter_triplets:
        missing = [p for p in (t.query, t.positive, t.negative) if p not in papers]
        if missing:
            raise ValueError(f"cosaemb_triplets: inter-document triplet {t} names papers not given: {missing}")
        report.inter_without_abstract += any(not papers[p].abstract for p in (t.query, t.positive, t.negative))
        for p in (t.query, t.positive, t.negative):
            texts[p] = chunker.abstract_text(papers[p])
        triplets.append(dataclasses.replace(t, kind="inter", margin=float(margins["inter"])))
    report.triplets_by_kind = Counter(t.kind for t in triplets)
    check_counts(report)
    return triplets, texts, report


def check_counts(report: TripletReport) -> None:
    """Each aspect counts at most once per paper (Table 2's frequencies are all ≤ the papers): raises otherwise."""
    over = {a: n for a, n in report.aspects_by_aspect.items() if n > report.papers_with_triplets}
    if over:
        raise AssertionError(f"aspect counts exceed the {report.papers_with_triplets} papers with triplets: {over}; "
                             "sections must be merged into one text per aspect (§3.3.1)")


def repeat_to(triplets: Sequence[Triplet], count: int, seed: int = 0) -> list[Triplet]:
    """``count`` triplets drawn from ``triplets``: whole seeded permutations, then a seeded part of one more, so
    a control trains on as many triplets (optimizer steps) as the run it is compared with."""
    if not triplets:
        raise ValueError("repeat_to: no triplets to draw from")
    rng = np.random.default_rng(seed)
    drawn: list[Triplet] = []
    while len(drawn) < count:
        drawn.extend(triplets[i] for i in rng.permutation(len(triplets))[:count - len(drawn)])
    return drawn


def with_margins(triplets: Iterable[Triplet], margins: Mapping[str, float]) -> list[Triplet]:
    """The same triplets with the margin of their kind (``local``/``global``/``inter``)."""
    return [dataclasses.replace(t, margin=float(margins[t.kind])) for t in triplets]


def cosaemb_objective(texts: Mapping[str, str]) -> TripletObjective:
    """Eq. 5: ``max(0, d(q, k+)² − d(q, k−)² + m_t)`` with each triplet's own margin. Shown in:
    notebooks/cosaemb.ipynb, "Training: one run per margin setting, and the control"."""
    return TripletObjective(texts, TripletMarginLoss(distance="squared_l2"), per_example_margin=True)


# ------------------------------------------------------------------------------------ tables, evaluation
def counts_tables(report: TripletReport) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Our counts in the shape of Table 2 (per aspect) and Table 3 (per triplet kind).

    The paper counts one global triplet per aspect text and one local triplet per pair of consecutive chunks
    (its Table 2 sums to Table 3). Table 3's ``triplets trained`` column is what the run trains: the same
    counts, or twice the intra-document ones with ``both_directions``.

    Shown in: notebooks/cosaemb.ipynb, "Counts in the shape of the paper's Tables 2 and 3".
    """
    check_counts(report)
    table2 = pd.DataFrame({
        "Frequency": {ASPECT_NAMES[a]: report.aspects_by_aspect[a] for a in ASPECTS},
        "Section Triplets": {ASPECT_NAMES[a]: report.local_pairs_by_aspect[a] for a in ASPECTS},
    })
    table2.index.name = "Section"
    table3 = pd.DataFrame({
        "Frequency": {
            "Local Context (Eq. 2)": sum(report.local_pairs_by_aspect.values()),
            "Global Context (Eq. 3)": sum(report.aspects_by_aspect.values()),
            "Inter-document (Eq. 4)": report.triplets_by_kind["inter"],
        },
        "triplets trained": {
            "Local Context (Eq. 2)": report.triplets_by_kind["local"],
            "Global Context (Eq. 3)": report.triplets_by_kind["global"],
            "Inter-document (Eq. 4)": report.triplets_by_kind["inter"],
        },
    })
    table3.index.name = "Triplet type"
    return table2, table3


def aspect_paragraphs(papers: Iterable[Paper]) -> list[ParagraphChunk]:
    """Table 6's retrieval set: one text per aspect of each paper (``<paper_id>#<aspect>``, the aspect's paragraphs
    joined), the "section texts" of §5 as the model sees sections (§3.3.1).
    Shown in: notebooks/cosaemb.ipynb, "Paragraph retrieval (Table 6 set-up)"."""
    chunks = []
    for paper in papers:
        for text in aspect_texts(paper):
            body = " ".join(" ".join(p.split()) for p in text.paragraphs).strip()
            if body:
                chunks.append(ParagraphChunk(f"{paper.paper_id}#{text.aspect}", paper.paper_id, body, text.aspect))
    return chunks


def facet_query_text(paper: Paper, facet: str, sep: str) -> str:
    """A CSFCube query for a facet: ``[TTL] title [SEP] <facet tokens> abstract``.

    The paper separates title and abstract "with our special tokens in addition to the [SEP] token" and
    does not give the order; we put the facet tokens where [ABS] stands in the abstract input (after [SEP],
    before the abstract), background as ``[INTR] [RW]``.

    Shown in: notebooks/cosaemb.ipynb, "CSFCube (Table 4)".
    """
    if facet not in FACET_TOKENS:
        raise ValueError(f"unknown CSFCube facet {facet!r}; expected one of {sorted(FACET_TOKENS)}")
    return f"{TITLE_TOKEN} {paper.title} {sep} {' '.join(FACET_TOKENS[facet])} {paper.abstract}".strip()


@torch.no_grad()
def triplet_distances(encoder, triplets: Sequence[Triplet], texts: Mapping[str, str], batch_size: int = 32,
                      progress: bool = False) -> pd.DataFrame:
    """Squared L2 distances ``d(q, k+)²`` and ``d(q, k−)²`` of each triplet (one row per triplet, with kind).

    ``ordered`` is whether the positive is nearer than the negative — the order of distances that margin
    gradation is meant to produce (own sections < cited papers < papers not cited).

    Shown in: notebooks/cosaemb.ipynb, "The order of distances on held-out papers".
    """
    ids = sorted({i for t in triplets for i in (t.query, t.positive, t.negative)})
    missing = [i for i in ids if i not in texts]
    if missing:
        raise KeyError(f"triplet_distances: no text for {len(missing)} ids, e.g. {missing[:3]}")
    vectors = dict(zip(ids, encoder.encode_texts([texts[i] for i in ids], batch_size=batch_size,
                                                 progress=progress, desc="triplet texts")))
    rows = []
    for t in triplets:
        q, p, n = vectors[t.query], vectors[t.positive], vectors[t.negative]
        d_pos, d_neg = float(((q - p) ** 2).sum()), float(((q - n) ** 2).sum())
        rows.append({"kind": t.kind, "d_pos": d_pos, "d_neg": d_neg, "ordered": d_pos < d_neg})
    return pd.DataFrame(rows)


def margin_loss(distances: pd.DataFrame, margins: Mapping[str, float] = PAPER_MARGINS) -> float:
    """Eq. 5 averaged over the rows of :func:`triplet_distances`, each with the margin of its kind: the loss of
    :func:`cosaemb_objective` on those triplets, from distances already computed (no second encoding).
    Shown in: notebooks/cosaemb.ipynb, "The order of distances on held-out papers"."""
    margin = distances["kind"].map({k: float(v) for k, v in margins.items()})
    if margin.isna().any():
        raise ValueError(f"margin_loss: no margin for kinds {sorted(set(distances['kind'][margin.isna()]))}")
    return float(np.maximum(0.0, distances["d_pos"] - distances["d_neg"] + margin).mean())


def plan_run(name: str, triplets: Sequence[Triplet], texts: Mapping[str, str], tokenizer, max_length: int,
             epochs: int, effective_batch: int, sample: int = 1000, seed: int = 0) -> dict:
    """One training run as :meth:`sdr.datasets.ChapterData.plan` reads it: the run's triplets, epochs and effective
    batch, 3 texts an example, and the mean tokens of a text as the encoder reads it (``tokenizer`` cutting at
    ``max_length``, with its own [CLS]/[SEP]), measured on a seeded sample of at most ``sample`` of the texts the
    triplets name (chunks and abstract inputs alike), not assumed."""
    if not triplets:
        raise ValueError(f"plan_run {name!r}: no triplets")
    ids = sorted({i for t in triplets for i in (t.query, t.positive, t.negative)})
    missing = [i for i in ids if i not in texts]
    if missing:
        raise KeyError(f"plan_run {name!r}: no text for {len(missing)} ids of the triplets, e.g. {missing[:3]}")
    if len(ids) > sample:
        ids = sorted(np.random.default_rng(seed).choice(ids, size=sample, replace=False).tolist())
    lengths = [len(tokenizer(texts[i], truncation=True, max_length=max_length)["input_ids"]) for i in ids]
    return dict(name=name, examples=len(triplets), epochs=epochs, effective_batch=effective_batch,
                texts_per_example=3, tokens_per_text=float(np.mean(lengths)))
