"""Tests of the seeded synthetic corpus (:mod:`sdr.synthetic`): determinism, sizes, planted structure."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from sdr.corpus import INTENTS, SECTION_KINDS
from sdr.synthetic import (
    ABSTRACT_ROLES,
    MESH_LABELS,
    RHETORICAL_FUNCTIONS,
    ROLE_TO_FACET,
    make_corpus,
    rhetorical_group,
    write_phrase_tsv,
)
from sdr.synthetic.vocabulary import MESH_FIELDS


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(n_papers=400, seed=0)


def _index(paper_id: str) -> int:
    return int(paper_id[1:])


def _snapshot(corpus) -> tuple:
    papers = [(p.paper_id, p.title, p.abstract, p.year, tuple(p.authors), p.venue, p.metadata["mesh"],
               tuple((s.heading, tuple(s.paragraphs)) for s in p.sections)) for p in corpus.papers.values()]
    edges = sorted((c.citing, c.cited, c.intents, c.context_counts) for c in corpus.graph)
    return papers, edges, corpus.coviews, corpus.coreads


def test_same_seed_same_corpus_other_seed_differs():
    first, again = make_corpus(n_papers=60, seed=3), make_corpus(n_papers=60, seed=3)
    assert _snapshot(first) == _snapshot(again)
    other = make_corpus(n_papers=60, seed=4)
    assert [p.title for p in other.papers.values()] != [p.title for p in first.papers.values()]
    assert _snapshot(other)[1] != _snapshot(first)[1]


def test_sizes_ids_and_fields(corpus):
    assert len(corpus.papers) == 400
    assert list(corpus.papers) == [f"p{i:05d}" for i in range(400)]
    assert corpus.fields == ["Computer Science", "Medicine", "Biology", "Physics", "Chemistry", "Economics"]
    assert len(corpus.communities) == 18 and "f2c1" in corpus.communities
    for paper in corpus.papers.values():
        assert paper.fields[0] in corpus.fields
        community = paper.metadata["community"]
        assert corpus.fields[int(community[1:community.index("c")])] == paper.fields[0]
        assert 1990 <= paper.year <= 2020
        assert paper.authors and paper.venue
    # a few thousand user-activity pairs for 400 papers
    assert len(corpus.coviews) == 2400 and len(corpus.coreads) == 1600


def test_options_are_checked():
    with pytest.raises(ValueError, match="n_fields"):
        make_corpus(n_papers=10, n_fields=99)
    with pytest.raises(ValueError, match="communities_per_field"):
        make_corpus(n_papers=10, communities_per_field=0)
    with pytest.raises(TypeError, match="unknown options"):
        make_corpus(n_papers=10, p_same_comunity=0.5)
    small = make_corpus(n_papers=40, n_fields=2, communities_per_field=2, seed=1, with_sections=False)
    assert set(small.communities) == {"f0c0", "f0c1", "f1c0", "f1c1"}
    assert all(not p.sections for p in small.papers.values())


def test_abstracts_have_roles_and_facets(corpus):
    lengths = Counter()
    for paper in corpus.papers.values():
        sentences, labels = paper.metadata["abstract_sentences"], paper.metadata["abstract_labels"]
        assert 5 <= len(sentences) <= 8 and len(labels) == len(sentences)
        lengths[len(sentences)] += 1
        assert set(labels) <= set(ABSTRACT_ROLES)
        assert paper.abstract == " ".join(sentences)
        assert labels[0] == "background"
        facets = paper.metadata["facets"]
        assert set(facets) == {"background", "method", "result"}
        expected = {facet: [s for s, l in zip(sentences, labels) if ROLE_TO_FACET[l] == facet] for facet in facets}
        assert facets == expected
        assert facets["method"] and facets["result"]
    assert len(lengths) >= 3  # lengths vary


def test_citations_point_to_older_papers_with_valid_intents(corpus):
    graph, papers = corpus.graph, corpus.papers
    self_loops = 0
    for citation in graph:
        if citation.citing == citation.cited:
            self_loops += 1
            continue
        assert _index(citation.cited) < _index(citation.citing)
        assert papers[citation.cited].year <= papers[citation.citing].year
        assert citation.intents and set(citation.intents) <= set(INTENTS)
        counts = dict(citation.context_counts)
        assert set(counts) == set(citation.intents)
        assert all(1 <= n <= 4 for n in counts.values())
    assert self_loops == corpus.stats["self_loops"]
    for paper_id in papers:
        out_degree = len(graph.references(paper_id) - {paper_id})
        assert out_degree <= 15
        if _index(paper_id) >= 20:
            assert out_degree >= 3
    for paper_id, paper in papers.items():
        assert paper.metadata["n_citations"] == len(graph.citations(paper_id))


def test_planted_citation_structure(corpus):
    community = {pid: p.metadata["community"] for pid, p in corpus.papers.items()}
    edges = [c for c in corpus.graph if c.citing != c.cited]
    same_community = [c for c in edges if community[c.citing] == community[c.cited]]
    cross_field = [c for c in edges if corpus.papers[c.citing].fields != corpus.papers[c.cited].fields]
    share_community = len(same_community) / len(edges)
    assert 0.55 < share_community < 0.75  # ~65 % planted
    assert 0.04 < len(cross_field) / len(edges) < 0.2  # ~10 % anywhere (some land in the same field)

    def share_method_or_result(citations):
        return np.mean([bool({"method", "result"} & set(c.intents)) for c in citations])

    assert share_method_or_result(same_community) > share_method_or_result(cross_field) + 0.2
    # author self-citations: edges between papers sharing an author
    shared_author = sum(1 for c in edges if set(corpus.papers[c.citing].authors) & set(corpus.papers[c.cited].authors))
    assert shared_author >= 20
    # skewed in-degree (preferential attachment): the top 10 % of papers receive > 25 % of citations
    in_degrees = sorted((p.metadata["n_citations"] for p in corpus.papers.values()), reverse=True)
    assert sum(in_degrees[:40]) > 0.25 * sum(in_degrees)


def test_text_similarity_is_higher_within_community(corpus):
    from sklearn.feature_extraction.text import TfidfVectorizer

    papers = list(corpus.papers.values())
    matrix = TfidfVectorizer(stop_words="english").fit_transform(p.text(" ") for p in papers)
    similarity = (matrix @ matrix.T).toarray()
    labels = np.array([p.metadata["community"] for p in papers])
    fields = np.array([p.fields[0] for p in papers])
    same = labels[:, None] == labels[None, :]
    same_field = fields[:, None] == fields[None, :]
    off_diagonal = ~np.eye(len(papers), dtype=bool)
    within = similarity[same & off_diagonal].mean()
    sibling = similarity[same_field & ~same].mean()
    across = similarity[~same_field].mean()
    assert within > 1.5 * sibling > 1.5 * across


def test_sections_have_kinds_and_odd_headings(corpus):
    headings = Counter()
    for paper in corpus.papers.values():
        kinds = [s.kind for s in paper.sections]
        assert set(kinds) <= set(SECTION_KINDS)
        assert kinds[0] == "introduction" and "method" in kinds and "conclusion" in kinds
        for section in paper.sections:
            assert 1 <= len(section.paragraphs) <= 3
            assert all(len(re.findall(r"[.!?](?:\s|$)", p)) >= 3 for p in section.paragraphs)
            headings[section.heading] += 1
    assert any(re.match(r"^\d+\.? ", h) for h in headings)  # numbered headings
    assert any(not re.match(r"^\d", h) for h in headings)
    odd = {re.sub(r"^\d+\.? ", "", h) for h in headings}
    assert {"Preliminaries", "Acknowledgements"} <= odd
    assert odd & {"Threats to Validity", "Limitations", "Ethics Statement"}


def test_rhetorical_sentences_contain_their_phrase(corpus):
    functions = {f.label: f for f in RHETORICAL_FUNCTIONS}
    assert 12 <= len(functions) <= 22
    assert {rhetorical_group(label) for label in functions} == {
        "introducing work", "referring to sources", "describing methods", "reporting results",
        "discussing findings", "writing conclusions"}
    group_kinds = {"introducing work": {"introduction"}, "referring to sources": {"related_work"},
                   "describing methods": {"method"}, "reporting results": {"results"},
                   "discussing findings": {"results", "conclusion"}, "writing conclusions": {"conclusion"}}
    seen = Counter()
    for paper in corpus.papers.values():
        for record in paper.metadata["rhetorical"]:
            function = functions[record["label"]]
            assert record["name"] == function.name and record["phrase"] in function.phrases
            pieces = [piece.strip() for piece in re.split(r"\b[XY]\b", record["phrase"]) if piece.strip()]
            position = 0
            for piece in pieces:  # every fixed part of the phrase, in order
                found = record["text"].lower().find(piece.lower(), position)
                assert found >= 0, (piece, record["text"])
                position = found + len(piece)
            section = paper.sections[record["section"]]
            assert record["text"] in section.text
            assert section.kind in group_kinds[rhetorical_group(record["label"])]
            seen[record["label"]] += 1
    assert set(seen) == set(functions)  # every function is planted somewhere


def test_phrase_tsv_round_trips(tmp_path):
    path = write_phrase_tsv(tmp_path / "phrases.tsv")
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    assert all(len(row) == 3 for row in rows)
    expected = {(f.label, f.name, phrase) for f in RHETORICAL_FUNCTIONS for phrase in f.phrases}
    assert {(int(label), name, phrase) for label, name, phrase in rows} == expected
    assert all(re.search(r"\b[XY]\b", phrase) for _, _, phrase in rows)
    # no stray capital X/Y outside placeholders, so placeholder splitting is unambiguous
    assert not any(re.search(r"[XY]\w|\w[XY]", phrase) for _, _, phrase in rows)


def test_user_activity_pairs_mostly_within_community(corpus):
    community = {pid: p.metadata["community"] for pid, p in corpus.papers.items()}
    for pairs in (corpus.coviews, corpus.coreads):
        assert all(a != b for a, b in pairs)
        assert len({frozenset(pair) for pair in pairs}) == len(pairs)
        share = np.mean([community[a] == community[b] for a, b in pairs])
        assert 0.7 < share < 0.98


def test_mesh_labels_only_for_biomedical_fields_and_follow_community(corpus):
    by_community: dict[str, Counter] = {}
    for paper in corpus.papers.values():
        mesh = paper.metadata["mesh"]
        if paper.fields[0] in MESH_FIELDS:
            assert mesh in MESH_LABELS
            by_community.setdefault(paper.metadata["community"], Counter())[mesh] += 1
        else:
            assert mesh is None
    assert len(by_community) == 9  # Medicine, Biology, Chemistry x 3 communities
    # 80 % of a community's papers carry its primary label (pooled, as small communities vary)
    majority = sum(counts.most_common(1)[0][1] for counts in by_community.values())
    assert 0.7 < majority / sum(sum(counts.values()) for counts in by_community.values()) < 0.92
    assert len({counts.most_common(1)[0][0] for counts in by_community.values()}) == 9


def test_pubmed_rct_replica_reads_back_with_the_roles_of_the_csabstruct_replica(corpus, tmp_path):
    from sdr.evaluate.sentences import read_csabstruct, read_pubmed_rct
    from sdr.synthetic.sentences import PUBMED_RCT_LABELS, write_csabstruct, write_pubmed_rct

    pubmed = write_pubmed_rct(corpus, tmp_path / "pubmed", seed=3)
    csabstruct = write_csabstruct(corpus, tmp_path / "csab", seed=3)
    for split in ("train", "dev", "test"):
        ours = read_pubmed_rct(pubmed / f"{split}.txt")
        same = read_csabstruct(csabstruct / f"{split}.jsonl")
        # the same papers in the same split, sentence for sentence, each role under its PubMed-RCT name
        assert [(s.text, s.label) for s in ours] == [(" ".join(s.text.split()), PUBMED_RCT_LABELS[s.label])
                                                     for s in same]
    assert {s.label for s in read_pubmed_rct(pubmed / "train.txt")} <= set(PUBMED_RCT_LABELS.values())
