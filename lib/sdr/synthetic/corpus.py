"""A seeded synthetic corpus of scientific papers with planted structure.

Stands in for S2ORC / SPECTER training data when no real data is reachable (the ``smoke``
profile) and is the base of the benchmark replicas in :mod:`sdr.synthetic`. What is planted:

* fields of study (MAG-like names) split into sub-communities, each with its own English topic,
  method and data vocabulary; a paper draws most words from a few *focus* terms of its
  community, some from its field and a few from anywhere (noise);
* abstracts of 5-8 sentences with CSAbstruct roles, grouped into FLeW/CSFCube facets;
* full-text sections (numbered and odd headings included) with formulaic rhetorical sentences
  labelled in the CFS3 scheme;
* a citation graph where newer papers cite older ones, mostly inside their community and
  preferring papers that share a focus topic or an author, with intents (background / method /
  result) and citation-context counts; a few self-loops (a paper listing itself, as parsing
  errors produce in S2ORC) so that samplers' exclusions are exercised;
* co-view and co-read pairs, mostly within a community;
* MeSH-like labels for biomedical fields, correlated with community.

Ids ``p00000…`` run in publication order: a paper only cites papers with a smaller id (same or
earlier year). Everything is drawn from one ``numpy.random.Generator`` seeded with ``seed``.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from string import Formatter

import numpy as np
from tqdm.auto import tqdm

from sdr.corpus import INTENTS, CitationGraph, Paper, Section, section_kind
from sdr.synthetic.templates import (
    ABSTRACT_TEMPLATES,
    OTHER_SECTION_TEMPLATES,
    RHETORICAL_BY_SECTION_KIND,
    RHETORICAL_FUNCTIONS,
    SECTION_HEADINGS,
    SECTION_TEMPLATES,
)
from sdr.synthetic.vocabulary import (
    ADJECTIVES,
    FIELDS,
    FIRST_NAMES,
    GENERIC_TERMS,
    LAST_NAMES,
    MESH_FIELDS,
    MESH_LABELS,
)
from sdr.datasets import forbid_replica

ABSTRACT_ROLES = ("background", "objective", "method", "result", "other")
ROLE_TO_FACET = {"background": "background", "objective": "background", "other": "background",
                 "method": "method", "result": "result"}
"""CSAbstruct role → FLeW/CSFCube facet (objective and other count as background, as in CSFCube)."""


@dataclass
class SyntheticConfig:
    """Every knob of :func:`make_corpus` (stored on the corpus so a run can be described)."""

    n_papers: int = 400
    n_fields: int = 6
    communities_per_field: int = 3
    seed: int = 0
    year_range: tuple[int, int] = (1990, 2020)
    min_references: int = 3
    max_references: int = 15
    p_same_community: float = 0.65
    p_same_field: float = 0.25  # the remaining ~10 % go anywhere
    p_author_self_citation: float = 0.25  # chance a paper also cites an older paper of a co-author
    self_loop_rate: float = 0.005  # papers that list themselves among their references
    # edges whose intent is unknown (the thesis' miscellaneous aspect); drawn from a separate generator,
    # so the rest of the corpus is the same as with 0
    p_no_intent: float = 0.0
    coview_pairs_per_paper: float = 6.0
    coread_pairs_per_paper: float = 4.0
    p_activity_same_community: float = 0.8
    with_sections: bool = True
    progress: bool | None = None  # progress bar over papers; None = only for large corpora (>= 20,000)


@dataclass
class SyntheticCorpus:
    """Papers, citation graph and user-activity pairs of a synthetic corpus."""

    papers: dict[str, Paper]
    graph: CitationGraph
    fields: list[str]
    coviews: list[tuple[str, str]]
    coreads: list[tuple[str, str]]
    communities: dict[str, str] = field(default_factory=dict)  # community id → name ("f0c1" → "machine translation")
    config: SyntheticConfig = field(default_factory=SyntheticConfig)
    stats: dict = field(default_factory=dict)

    def community_of(self, paper_id: str) -> str:
        """Community id of a paper (``paper.metadata["community"]``)."""
        return self.papers[paper_id].metadata["community"]

    def field_of(self, paper_id: str) -> str:
        """Field of study of a paper."""
        return self.papers[paper_id].fields[0]


class _Draws:
    """Fast uniform draws for the text generator, seeded from the corpus' numpy Generator.

    Text generation makes about a million small choices; Python's Mersenne Twister (seeded from
    the numpy Generator, so everything stays a pure function of ``seed``) makes each one a single
    C call instead of a numpy call.
    """

    def __init__(self, rng: np.random.Generator):
        self._random = random.Random(int(rng.integers(0, 2**63 - 1)))
        self.u = self._random.random

    def pick(self, items):
        return items[int(self.u() * len(items))]

    def integer(self, low: int, high: int) -> int:
        """Uniform integer in ``[low, high]`` (inclusive)."""
        return low + int(self.u() * (high - low + 1))


def _slots(template: str) -> tuple[str, ...]:
    return tuple(name for _, name, _, _ in Formatter().parse(template) if name)


def _compile(templates: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...], bool], ...]:
    """Templates with their slot names and whether "a {slot}" may need "an"."""
    return tuple((template, _slots(template), "a {" in template or "A {" in template) for template in templates)


_ABSTRACT = {role: _compile(templates) for role, templates in ABSTRACT_TEMPLATES.items()}
_SECTION = {kind: _compile(templates) for kind, templates in SECTION_TEMPLATES.items()}
_OTHER = {heading: _compile(templates) for heading, templates in OTHER_SECTION_TEMPLATES.items()}
_TITLES = _compile((
    "{adj} {method} for {topic}",
    "{topic} with {method}",
    "Towards {adj} {topic}",
    "On {topic} and {topic2}",
    "{method} for {topic} in {term}",
    "Learning {topic} from {data}",
    "A {method} approach to {topic}",
    "{topic}: evidence from {data}",
))


_ARTICLE = re.compile(r"\b([Aa]) (?=[aeiouAEIOU])")  # "a odds ratio" → "an odds ratio"


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


@dataclass
class _Community:
    index: int
    cid: str
    field_index: int
    name: str
    topics: tuple[str, ...]
    methods: tuple[str, ...]
    data: tuple[str, ...]
    field_topics: tuple[str, ...]  # field terms + sibling communities' topics
    field_methods: tuple[str, ...]
    field_data: tuple[str, ...]
    terms: tuple[str, ...]
    measures: tuple[str, ...]
    venues: tuple[str, ...]
    preferred_venue: int


class _Writer:
    """Fills templates for one paper from its community vocabulary and focus terms."""

    def __init__(self, draws: _Draws, all_topics, all_methods, all_data):
        self.draws = draws
        self.all_topics = all_topics
        self.all_methods = all_methods
        self.all_data = all_data

    def start(self, community: _Community, focus_topics, focus_methods, focus_data, cited_refs):
        self.community = community
        self.focus_topics = focus_topics
        self.focus_methods = focus_methods
        self.focus_data = focus_data
        self.cited_refs = cited_refs  # [(surname, year, topic)] of the papers this one cites

    # Focus terms first, then the community, the field, and a little noise from anywhere.
    def topic(self) -> str:
        u, c = self.draws.u, self.community
        r = u()
        pool = (self.focus_topics if r < 0.40 else c.topics if r < 0.72
                else c.field_topics if r < 0.90 else self.all_topics)
        return pool[int(u() * len(pool))]

    def method(self) -> str:
        u, c = self.draws.u, self.community
        r = u()
        pool = (self.focus_methods if r < 0.45 else c.methods if r < 0.80
                else c.field_methods if r < 0.92 else self.all_methods)
        return pool[int(u() * len(pool))]

    def data(self) -> str:
        u, c = self.draws.u, self.community
        r = u()
        pool = (self.focus_data if r < 0.45 else c.data if r < 0.82
                else c.field_data if r < 0.94 else self.all_data)
        return pool[int(u() * len(pool))]

    def _slot(self, slot: str) -> str:
        d = self.draws
        if slot in ("topic", "topic2"):
            return self.topic()
        if slot in ("method", "method2"):
            return self.method()
        if slot == "data":
            return self.data()
        if slot == "measure":
            return d.pick(self.community.measures)
        if slot == "term":
            return d.pick(self.community.terms)
        if slot == "generic":
            return d.pick(GENERIC_TERMS)
        if slot == "adj":
            return d.pick(ADJECTIVES)
        if slot == "author2":
            return d.pick(LAST_NAMES)
        if slot == "n":
            return str(d.integer(1, 5))
        raise KeyError(f"unknown template slot {slot!r}")  # templates are ours: a typo fails loudly

    def fill(self, template: str, slots: tuple[str, ...], article: bool = False) -> str:
        d = self.draws
        values: dict[str, str] = {}
        if "author" in slots or "year" in slots:
            # Related-work sentences name a paper this one really cites (author, year, topic).
            if self.cited_refs:
                surname, year, topic = d.pick(self.cited_refs)
                if d.u() < 0.5:
                    values["topic"] = topic
            else:
                surname, year = d.pick(LAST_NAMES), d.integer(1985, 2019)
            values["author"], values["year"] = surname, str(year)
        for slot in slots:
            if slot not in values:
                values[slot] = self._slot(slot)
        # A second topic/method equal to the first reads badly ("On X and X"): draw again.
        for second, first, draw in (("topic2", "topic", self.topic), ("method2", "method", self.method)):
            if second in values:
                for _ in range(4):
                    if values[second] != values.get(first):
                        break
                    values[second] = draw()
        text = template.format_map(values)
        if article:
            text = _ARTICLE.sub(r"\1n ", text)
        return text[:1].upper() + text[1:]

    def sentence(self, compiled) -> str:
        template, slots, article = self.draws.pick(compiled)
        return self.fill(template, slots, article)

    def rhetorical(self, function) -> dict:
        d = self.draws
        phrase = d.pick(function.phrases)
        # X is the paper's own topic or method; Y a topic, or an author name where the phrase
        # refers to a researcher (label 24).
        x_value = self.method() if d.u() < 0.5 else self.topic()
        if function.label == 24:
            y_value = self.cited_refs[0][0] if self.cited_refs else d.pick(LAST_NAMES)
        else:
            y_value = self.topic()
            if y_value == x_value:
                y_value = self.topic()
        # No article fix here: the phrase must stay verbatim around its placeholders.
        text = _capitalise(phrase.replace("X", "\x00").replace("Y", y_value).replace("\x00", x_value))
        return {"text": text, "label": function.label, "name": function.name, "phrase": phrase}


def _communities(n_fields: int, communities_per_field: int) -> list[_Community]:
    if not 1 <= n_fields <= len(FIELDS):
        raise ValueError(f"n_fields={n_fields}: expected 1..{len(FIELDS)} (fields written in sdr.synthetic.vocabulary)")
    max_communities = min(len(f.communities) for f in FIELDS)
    if not 1 <= communities_per_field <= max_communities:
        raise ValueError(f"communities_per_field={communities_per_field}: expected 1..{max_communities}")
    out: list[_Community] = []
    for fi, fv in enumerate(FIELDS[:n_fields]):
        chosen = fv.communities[:communities_per_field]
        for ci, cv in enumerate(chosen):
            siblings = [s for s in chosen if s is not cv]
            out.append(_Community(
                index=len(out), cid=f"f{fi}c{ci}", field_index=fi, name=cv.name,
                topics=cv.topics, methods=cv.methods, data=cv.data,
                field_topics=fv.terms + tuple(t for s in siblings for t in s.topics),
                field_methods=tuple(m for s in siblings for m in s.methods) or cv.methods,
                field_data=tuple(x for s in siblings for x in s.data) or cv.data,
                terms=fv.terms, measures=fv.measures, venues=fv.venues,
                preferred_venue=ci % len(fv.venues),
            ))
    return out


def _author_names(count: int, rng: np.random.Generator) -> list[str]:
    """``count`` distinct synthetic names (first + last, with middle initials once those run out)."""
    combos = [f"{first} {last}" for first in FIRST_NAMES for last in LAST_NAMES]
    order = rng.permutation(len(combos))
    names = [combos[i] for i in order]
    initial = 0
    while len(names) < count:
        letter = chr(ord("A") + initial % 26)
        names += [f"{first} {letter}. {last}" for first, last in
                  (combo.split(" ", 1) for combo in (combos[i] for i in order))]
        initial += 1
    return names[:count]


def _intents(relation: str, shares_method: bool, shares_data: bool, draws: _Draws) -> dict[str, int]:
    """Intents and context counts of one edge.

    Same-community citations lean to method/result, cross-field ones to background (the pattern
    SciCite annotations show); a shared method or dataset makes the method/result intent likelier,
    so FLeW's per-facet subgraphs carry facet-specific signal.
    """
    weights = {"community": [0.35, 0.40, 0.25], "field": [0.60, 0.28, 0.12], "other": [0.85, 0.12, 0.03]}[relation]
    weights = list(weights)
    if shares_method:
        weights[1] += 0.35
    if shares_data:
        weights[2] += 0.25
    total = sum(weights)
    r = draws.u() * total
    first = 0 if r < weights[0] else (1 if r < weights[0] + weights[1] else 2)
    chosen = [INTENTS[first]]
    if draws.u() < 0.25:  # a second intent on about a quarter of the edges
        second = INTENTS[draws.integer(0, 2)]
        if second not in chosen:
            chosen.append(second)
    counts = {}
    for intent in chosen:
        r = draws.u()  # 1-4 contexts, mostly one
        counts[intent] = 1 if r < 0.55 else (2 if r < 0.80 else (3 if r < 0.93 else 4))
    return counts


def _pick_reference(i, c, relation, topics, draws, paper_community, earlier_by_topic, earlier_by_community,
                    cited_by_community, earlier_by_field, cited_by_field, cited_all) -> int:
    """One older paper for paper ``i`` in the drawn relation (community / field / anywhere).

    Half of the picks are preferential (proportional to citations received so far), giving the
    skewed in-degrees of real graphs; inside the community a third prefer a shared focus topic.
    """
    if relation == "community":
        topic_pool = earlier_by_topic.get((c.index, draws.pick(topics)))
        if topic_pool and draws.u() < 0.35:
            return draws.pick(topic_pool)
        if cited_by_community[c.index] and draws.u() < 0.5:
            return draws.pick(cited_by_community[c.index])
        return draws.pick(earlier_by_community[c.index])
    if relation == "field":
        # Another community of the same field (own-community picks are redrawn a few times).
        cited = cited_by_field.get(c.field_index)
        for _ in range(4):
            j = draws.pick(cited if cited and draws.u() < 0.5 else earlier_by_field[c.field_index])
            if paper_community[j] != c.index:
                break
        return j
    return draws.pick(cited_all) if cited_all and draws.u() < 0.5 else draws.integer(0, i - 1)


def make_corpus(
    n_papers: int = 400,
    n_fields: int = 6,
    communities_per_field: int = 3,
    seed: int = 0,
    **options,
) -> SyntheticCorpus:
    """Generate a synthetic corpus (deterministic for a seed).

    ``options`` are the other :class:`SyntheticConfig` fields (e.g. ``p_same_community=0.8``,
    ``with_sections=False`` for a faster title+abstract corpus).
    """
    forbid_replica("sdr.synthetic.make_corpus")
    unknown = set(options) - set(SyntheticConfig.__dataclass_fields__)
    if unknown:
        raise TypeError(f"make_corpus: unknown options {sorted(unknown)}; "
                        f"expected {sorted(SyntheticConfig.__dataclass_fields__)}")
    if n_papers < 1:
        raise ValueError(f"n_papers={n_papers}: expected at least 1")
    config = SyntheticConfig(n_papers=n_papers, n_fields=n_fields,
                             communities_per_field=communities_per_field, seed=seed, **options)
    rng = np.random.default_rng(seed)
    draws = _Draws(rng)
    communities = _communities(n_fields, communities_per_field)
    field_names = [FIELDS[i].name for i in range(n_fields)]
    n_comm = len(communities)

    # --- papers: community, year, focus terms --------------------------------------------------
    community_weights = rng.dirichlet(np.full(n_comm, 6.0))  # sizes vary, none vanishes
    paper_community = rng.choice(n_comm, size=n_papers, p=community_weights)
    first_year, last_year = config.year_range
    # More papers in recent years (u**0.6 skews up); sorted so that ids run in publication order.
    years = np.sort(first_year + np.floor((last_year - first_year + 1) * rng.random(n_papers) ** 0.6)
                    ).astype(int).clip(first_year, last_year)
    ids = [f"p{i:05d}" for i in range(n_papers)]

    focus_topics, focus_methods, focus_data = [], [], []
    for i in range(n_papers):
        c = communities[paper_community[i]]
        topics = rng.choice(len(c.topics), size=2, replace=False)
        focus_topics.append(tuple(c.topics[t] for t in topics))
        focus_methods.append((c.methods[int(rng.integers(len(c.methods)))],))
        focus_data.append((c.data[int(rng.integers(len(c.data)))],))

    # --- authors: a pool per community; skewed picks make a few prolific authors --------------
    members = [np.flatnonzero(paper_community == k) for k in range(n_comm)]
    pool_sizes = [max(3, round(len(m) / 2.5)) for m in members]
    names = _author_names(sum(pool_sizes), rng)
    pools, start = [], 0
    for size in pool_sizes:
        pools.append(names[start:start + size])
        start += size
    field_pools: dict[int, list[str]] = {}
    for c in communities:
        field_pools.setdefault(c.field_index, []).extend(pools[c.index])
    paper_authors: list[list[str]] = []
    for i in range(n_papers):
        c = communities[paper_community[i]]
        n_authors = 1 + min(5, int(draws.u() * draws.u() * 7))
        chosen: list[str] = []
        for _ in range(n_authors):
            pool = pools[c.index] if draws.u() < 0.85 else field_pools[c.field_index]
            name = pool[int(len(pool) * draws.u() ** 2)]
            if name not in chosen:
                chosen.append(name)
        paper_authors.append(chosen)

    # --- citation graph -------------------------------------------------------------------------
    graph = CitationGraph()
    n_refs = config.min_references + rng.binomial(config.max_references - config.min_references, 0.4, size=n_papers)
    earlier_by_community: list[list[int]] = [[] for _ in range(n_comm)]
    earlier_by_field: dict[int, list[int]] = {}
    earlier_by_topic: dict[tuple[int, str], list[int]] = {}
    cited_by_community: list[list[int]] = [[] for _ in range(n_comm)]  # one entry per citation received
    cited_by_field: dict[int, list[int]] = {}
    cited_all: list[int] = []
    earlier_by_author: dict[str, list[int]] = {}
    relation_counts: Counter = Counter()
    author_self_citations = 0
    self_loops: list[str] = []
    references: list[list[int]] = [[] for _ in range(n_papers)]
    no_intent_rng = np.random.default_rng([seed, 7]) if config.p_no_intent > 0 else None

    def relation_of(i: int, j: int) -> str:
        if paper_community[i] == paper_community[j]:
            return "community"
        if communities[paper_community[i]].field_index == communities[paper_community[j]].field_index:
            return "field"
        return "other"

    def add_edge(i: int, j: int) -> None:
        relation = relation_of(i, j)
        relation_counts[relation] += 1
        counts = _intents(relation, focus_methods[i][0] == focus_methods[j][0],
                          focus_data[i][0] == focus_data[j][0], draws)
        if no_intent_rng is not None and no_intent_rng.random() < config.p_no_intent:
            counts = {}  # an edge without intent: the miscellaneous aspect
        graph.add(ids[i], ids[j], tuple(counts), counts)
        references[i].append(j)
        cj = communities[paper_community[j]]
        cited_by_community[cj.index].append(j)
        cited_by_field.setdefault(cj.field_index, []).append(j)
        cited_all.append(j)

    for i in range(n_papers):
        c = communities[paper_community[i]]
        chosen: set[int] = set()
        if i > 0:
            target = min(int(n_refs[i]), i)
            # An author citing their own earlier work (shared author): exercises self-citation filters.
            if draws.u() < config.p_author_self_citation:
                own = [j for a in paper_authors[i] for j in earlier_by_author.get(a, ())]
                if own:
                    j = draws.pick(own)
                    chosen.add(j)
                    author_self_citations += 1
                    add_edge(i, j)
            attempts = 0
            while len(chosen) < target and attempts < 6 * target:
                attempts += 1
                r = draws.u()
                if r < config.p_same_community and earlier_by_community[c.index]:
                    relation = "community"
                elif r < config.p_same_community + config.p_same_field and earlier_by_field.get(c.field_index):
                    relation = "field"
                else:
                    relation = "other"
                # A few tries inside the drawn relation before drawing again, so that small early
                # pools do not shift the planted shares towards the broader relations.
                for _ in range(3):
                    j = _pick_reference(i, c, relation, focus_topics[i], draws, paper_community, earlier_by_topic,
                                        earlier_by_community, cited_by_community, earlier_by_field,
                                        cited_by_field, cited_all)
                    if j not in chosen:
                        chosen.add(j)
                        add_edge(i, j)
                        break
        if draws.u() < config.self_loop_rate:
            graph.add(ids[i], ids[i], ("background",), {"background": 1})
            self_loops.append(ids[i])
        earlier_by_community[c.index].append(i)
        earlier_by_field.setdefault(c.field_index, []).append(i)
        for topic in focus_topics[i]:
            earlier_by_topic.setdefault((c.index, topic), []).append(i)
        for author in paper_authors[i]:
            earlier_by_author.setdefault(author, []).append(i)

    # --- MeSH-like labels: one primary label per biomedical community -------------------------
    mesh_communities = [c for c in communities if field_names[c.field_index] in MESH_FIELDS]
    label_order = rng.permutation(len(MESH_LABELS))
    primary_mesh = {c.index: MESH_LABELS[label_order[k % len(MESH_LABELS)]] for k, c in enumerate(mesh_communities)}

    # --- texts ---------------------------------------------------------------------------------
    all_topics = tuple(t for c in communities for t in c.topics)
    all_methods = tuple(m for c in communities for m in c.methods)
    all_data = tuple(x for c in communities for x in c.data)
    writer = _Writer(draws, all_topics, all_methods, all_data)
    in_degree = Counter(citation.cited for citation in graph)

    papers: dict[str, Paper] = {}
    show = config.progress if config.progress is not None else n_papers >= 20_000
    for i in tqdm(range(n_papers), desc="synthetic papers", disable=not show):
        c = communities[paper_community[i]]
        cited_refs = [(paper_authors[j][0].rsplit(" ", 1)[-1], int(years[j]), focus_topics[j][0])
                      for j in references[i]]
        writer.start(c, focus_topics[i], focus_methods[i], focus_data[i], cited_refs)
        title = _capitalise(writer.sentence(_TITLES))
        sentences, labels = _abstract(writer, draws)
        facets: dict[str, list[str]] = {"background": [], "method": [], "result": []}
        for sentence, label in zip(sentences, labels):
            facets[ROLE_TO_FACET[label]].append(sentence)
        rhetorical: list[dict] = []
        sections = _sections(writer, draws, rhetorical) if config.with_sections else []
        if c.index in primary_mesh:
            mesh = primary_mesh[c.index] if draws.u() < 0.8 else draws.pick(MESH_LABELS)
        else:
            mesh = None
        venue = c.venues[c.preferred_venue] if draws.u() < 0.6 else draws.pick(c.venues)
        papers[ids[i]] = Paper(
            paper_id=ids[i], title=title, abstract=" ".join(sentences), sections=sections,
            year=int(years[i]), fields=[field_names[c.field_index]], venue=venue,
            authors=list(paper_authors[i]),
            metadata={
                "community": c.cid, "community_name": c.name, "mesh": mesh,
                "abstract_sentences": sentences, "abstract_labels": labels, "facets": facets,
                "rhetorical": rhetorical, "n_citations": int(in_degree.get(ids[i], 0)),
                "focus": {"topics": list(focus_topics[i]), "methods": list(focus_methods[i]),
                          "data": list(focus_data[i])},
            },
        )

    coviews = _activity_pairs(ids, paper_community, communities, config.coview_pairs_per_paper,
                              config.p_activity_same_community, draws, neighbours=None)
    coreads = _activity_pairs(ids, paper_community, communities, config.coread_pairs_per_paper,
                              config.p_activity_same_community, draws, neighbours=references)

    n_edges_drawn = sum(relation_counts.values())
    stats = {
        "papers": n_papers, "edges": len(graph), "self_loops": len(self_loops),
        "author_self_citations": author_self_citations,
        "share_same_community": relation_counts["community"] / max(1, n_edges_drawn),
        "share_same_field_other_community": relation_counts["field"] / max(1, n_edges_drawn),
        "share_other_field": relation_counts["other"] / max(1, n_edges_drawn),
        "coviews": len(coviews), "coreads": len(coreads),
        "community_sizes": {c.cid: int(len(members[c.index])) for c in communities},
    }
    return SyntheticCorpus(
        papers=papers, graph=graph, fields=field_names, coviews=coviews, coreads=coreads,
        communities={c.cid: c.name for c in communities}, config=config, stats=stats,
    )


def _abstract(writer: _Writer, draws: _Draws) -> tuple[list[str], list[str]]:
    """5-8 sentences in CSAbstruct order: background, (objective), method, result, (other)."""
    labels = ["background"] * (1 + int(draws.u() < 0.6))
    if draws.u() < 0.6:
        labels.append("objective")
    labels += ["method"] * (1 + int(draws.u() < 0.6) + int(draws.u() < 0.3))
    labels += ["result"] * (1 + int(draws.u() < 0.6))
    if draws.u() < 0.3:
        labels.append("other")
    while len(labels) < 5:  # pad in role order so the abstract still reads in sequence
        labels.insert(labels.index("result"), "method")
    labels = labels[:8]
    sentences: list[str] = []
    for label in labels:
        sentence = writer.sentence(_ABSTRACT[label])
        if sentences and sentence == sentences[-1]:
            sentence = writer.sentence(_ABSTRACT[label])
        sentences.append(sentence)
    return sentences, labels


_ODD_HEADINGS = tuple(OTHER_SECTION_TEMPLATES)


def _sections(writer: _Writer, draws: _Draws, rhetorical: list[dict]) -> list[Section]:
    """Full-text sections in a usual order with odd extras, numbered in some papers."""
    plan: list[str] = ["introduction"]
    if draws.u() < 0.8:
        plan.append("related_work")
    if draws.u() < 0.15:
        plan.append("Preliminaries")
    plan.append("method")
    if draws.u() < 0.9:
        plan.append("results")
    if draws.u() < 0.1:
        plan.append(draws.pick(("Threats to Validity", "Limitations", "Ethics Statement")))
    plan.append("conclusion")
    if draws.u() < 0.35:
        plan.append("Acknowledgements")
    if draws.u() < 0.05:
        plan.append("Appendix A: Additional Details")
    numbering = draws.u()  # 50 % unnumbered, 30 % "3 Method", 20 % "3. Method"

    sections: list[Section] = []
    for position, item in enumerate(plan, start=1):
        if item in SECTION_HEADINGS:
            heading = draws.pick(SECTION_HEADINGS[item])
            compiled = _SECTION[item]
            functions = RHETORICAL_BY_SECTION_KIND.get(item, ())
            n_paragraphs = 1 + int(draws.u() * 3)
        else:  # odd sections are short: one paragraph
            heading, compiled, functions, n_paragraphs = item, _OTHER[item], (), 1
        if numbering >= 0.5 and not heading.startswith("Appendix"):
            heading = f"{position} {heading}" if numbering < 0.8 else f"{position}. {heading}"
        paragraphs = [[writer.sentence(compiled) for _ in range(draws.integer(3, 5))]
                      for _ in range(n_paragraphs)]
        if functions:
            r = draws.u()
            for _ in range(0 if r < 0.15 else (1 if r < 0.7 else 2)):
                record = writer.rhetorical(draws.pick(functions))
                paragraph = draws.pick(paragraphs)
                paragraph.insert(draws.integer(0, len(paragraph)), record["text"])
                record.update({"section": len(sections), "kind": item})
                rhetorical.append(record)
        sections.append(Section(heading=heading, paragraphs=[" ".join(p) for p in paragraphs],
                                kind=section_kind(heading)))
    return sections


def _activity_pairs(ids, paper_community, communities, pairs_per_paper, p_same, draws, neighbours):
    """Sessions of a user viewing (or reading) a few papers: pairs (anchor, other), deduplicated.

    Others come mostly from the anchor's community; for co-reads some are the anchor's citation
    neighbours (reading follows references).
    """
    n = len(ids)
    if n < 2:
        return []
    members: dict[int, list[int]] = {}
    by_field: dict[int, list[int]] = {}
    for i, k in enumerate(paper_community):
        members.setdefault(int(k), []).append(i)
        by_field.setdefault(communities[k].field_index, []).append(i)
    target = int(round(pairs_per_paper * n))
    seen: set[tuple[int, int]] = set()
    pairs: list[tuple[str, str]] = []
    attempts = 0
    while len(pairs) < target and attempts < 4 * target:
        anchor = draws.integer(0, n - 1)
        for _ in range(draws.integer(1, 4)):
            attempts += 1
            if neighbours is not None and neighbours[anchor] and draws.u() < 0.3:
                other = draws.pick(neighbours[anchor])
            else:
                r = draws.u()
                if r < p_same:
                    other = draws.pick(members[int(paper_community[anchor])])
                elif r < p_same + (1 - p_same) / 2:
                    other = draws.pick(by_field[communities[paper_community[anchor]].field_index])
                else:
                    other = draws.integer(0, n - 1)
            key = (min(anchor, other), max(anchor, other))
            if other == anchor or key in seen:
                continue
            seen.add(key)
            pairs.append((ids[anchor], ids[other]))
            if len(pairs) >= target:
                break
    return pairs


def write_phrase_tsv(path: str | Path) -> Path:
    """Write the rhetorical phrase templates as ``label<TAB>name<TAB>phrase`` lines.

    Placeholders are written ``X`` and ``Y`` (as in phrase lists of the Academic Phrasebank kind),
    so a CFS3 implementation can split each phrase at its placeholders and match it back in the
    synthetic sections.
    """
    forbid_replica("sdr.synthetic.write_phrase_tsv")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for function in RHETORICAL_FUNCTIONS:
            for phrase in function.phrases:
                handle.write(f"{function.label}\t{function.name}\t{phrase}\n")
    return path


def config_dict(corpus: SyntheticCorpus) -> dict:
    """The corpus' configuration as a plain dict (for results files)."""
    return asdict(corpus.config)
