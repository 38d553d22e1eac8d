"""Tests of the corpus readers (SPECTER, SciRepEval, S2ORC, SciCite), section kinds and the leakage audit.

Fixtures in ``data/fixtures/`` are small files we wrote in the official layouts (counts below are
worked out by hand from them); the ``shared_data`` tests read the real files in ``$SDR_DATA``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sdr.corpus import (
    CitationGraph,
    leakage_audit,
    read_s2orc_metadata,
    read_s2orc_pdf_parses,
    read_scicite,
    read_scirepeval_triplets,
    read_specter_metadata,
    read_specter_training,
    scicite_graph,
    section_kind,
)

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"


def _edges(graph: CitationGraph) -> set[tuple[str, str]]:
    return {(c.citing, c.cited) for c in graph}


# --- section kinds ---------------------------------------------------------------------------

@pytest.mark.parametrize("heading, kind", [
    ("Introduction", "introduction"), ("1 Introduction", "introduction"), ("I. INTRODUCTION", "introduction"),
    ("2 Related Work", "related_work"), ("Background and Related Work", "related_work"),
    ("3 Our Approach", "method"), ("Materials and Methods", "method"), ("3.1 Model", "method"),
    ("Experiments", "results"), ("Results and Discussion", "results"), ("4. Evaluation", "results"),
    ("Discussion", "conclusion"), ("Conclusions and Future Work", "conclusion"), ("6 Summary", "conclusion"),
    ("Preliminaries", "other"), ("Threats to Validity", "other"), ("Acknowledgements", "other"),
    ("Appendix A: Proofs", "other"), ("", "other"), ("Figure 3", "other"),
])
def test_section_kind(heading, kind):
    assert section_kind(heading) == kind


# --- SPECTER ---------------------------------------------------------------------------------

def test_specter_training_fixture(capsys):
    data = read_specter_training(FIXTURES / "specter" / "training")
    assert data.queries == ["q1", "q2", "q3"]
    assert _edges(data.graph) == {("q1", "c1"), ("q1", "c2"), ("q2", "c1"), ("q3", "q1")}
    assert data.hard_candidates == {"q1": {"h1"}, "q2": {"h2", "h3"}, "q3": {"x9"}}
    assert data.splits == {"train": ["q1", "q2"], "val": ["q3"], "test": ["zz"]}
    assert set(data.papers) == {"q1", "q2", "q3", "c1", "c2", "h1"}
    assert data.papers["c2"].title == "Hard negatives in metric learning"
    assert data.skipped["ids_without_metadata"] == 3  # h2, h3, x9
    assert sorted(data.report.examples["ids_without_metadata"]) == ["h2", "h3", "x9"]
    assert data.skipped["split_ids_not_in_data"] == 1
    assert data.report.read == 8 and data.report.kept == 8
    assert "ids_without_metadata: 3" in capsys.readouterr().out


def test_specter_training_require_metadata_drops_and_counts():
    data = read_specter_training(FIXTURES / "specter" / "training", require_metadata=True)
    assert data.hard_candidates == {"q1": {"h1"}}
    assert len(data.graph) == 4
    assert data.skipped["edges_dropped_without_metadata"] == 3


def test_specter_bad_count_names_file_and_record():
    with pytest.raises(ValueError, match=r"data\.json: record 'q1' -> 'c2': count 3; expected 5"):
        read_specter_training(FIXTURES / "bad" / "specter_bad_count")


def test_specter_missing_directory():
    with pytest.raises(FileNotFoundError, match="SPECTER's training layout"):
        read_specter_training(FIXTURES / "no_such_dir")


def test_specter_sample_metadata_fixture():
    papers, report = read_specter_metadata(FIXTURES / "specter" / "sample-metadata.json",
                                           FIXTURES / "specter" / "sample.ids")
    assert list(papers) == ["s1", "s2"]  # ids order; s4 has no metadata, s3 is not listed
    assert report["ids_without_metadata"] == 1 and report["metadata_not_in_ids"] == 1
    assert report["no_abstract"] == 1  # s3's abstract is null
    papers, _ = read_specter_metadata(FIXTURES / "specter" / "sample-metadata.json")
    assert papers["s3"].abstract == "" and papers["s1"].text(" | ") == (
        "Topic models of physics preprints | We fit topic models to a decade of preprints.")


def test_truncated_json_names_position():
    with pytest.raises(ValueError, match=r"truncated\.json:4: not valid JSON \(.*column 14"):
        read_specter_metadata(FIXTURES / "bad" / "truncated.json")


def test_specter_training_real(shared_data):
    data = read_specter_training(shared_data / "specter" / "training")
    assert len(data.queries) == 20
    assert len(data.graph) == 85
    assert sum(len(c) for c in data.hard_candidates.values()) == 337
    assert {k: len(v) for k, v in data.splits.items()} == {"train": 12, "val": 2, "test": 3}
    assert len(data.papers) == 17
    assert data.skipped["ids_without_metadata"] == 382  # 399 distinct ids, 17 with metadata
    assert data.skipped["split_ids_not_in_data"] == 0


def test_specter_sample_metadata_real(shared_data):
    papers, report = read_specter_metadata(shared_data / "specter" / "sample-metadata.json",
                                           shared_data / "specter" / "sample.ids")
    assert len(papers) == 55
    assert report["ids_without_metadata"] == 0 and report["metadata_not_in_ids"] == 0
    assert all(paper.title for paper in papers.values())


# --- SciRepEval triplets -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["specter_small.json", "specter_small.jsonl"])
def test_scirepeval_triplets_fixture(name):
    triplets, report = read_scirepeval_triplets(FIXTURES / "scirepeval" / name)
    assert [(q.paper_id, p.paper_id, n.paper_id) for q, p, n in triplets] == [
        ("101", "102", "103"), ("104", "101", "106"), ("105", "102", "103")]
    assert triplets[0][0] is triplets[1][1]  # one Paper object per corpus id
    assert triplets[0][0].metadata == {"sha": "aaa1", "corpus_id": 101}
    assert report["distinct_papers"] == 6 and report["papers_without_abstract"] == 1
    kept, report = read_scirepeval_triplets(FIXTURES / "scirepeval" / name, require_abstract=True)
    assert len(kept) == 2 and report["triplets_skipped_without_abstract"] == 1
    by_sha, _ = read_scirepeval_triplets(FIXTURES / "scirepeval" / name, id_field="sha")
    assert by_sha[0][0].paper_id == "aaa1"


def test_scirepeval_triplet_missing_side():
    with pytest.raises(ValueError, match=r"triplets_missing_neg\.json: record 1: expected triplet"):
        read_scirepeval_triplets(FIXTURES / "bad" / "triplets_missing_neg.json")


def test_scirepeval_triplets_real(shared_data):
    triplets, report = read_scirepeval_triplets(shared_data / "scirepeval" / "sample_data" / "specter_small.json")
    assert len(triplets) == 200
    assert report["distinct_papers"] == 596
    assert report["papers_without_abstract"] == 14  # 16 null abstracts on 14 distinct papers
    kept, report = read_scirepeval_triplets(shared_data / "scirepeval" / "sample_data" / "specter_small.json",
                                            require_abstract=True)
    assert len(kept) == 185 and report["triplets_skipped_without_abstract"] == 15


# --- S2ORC -----------------------------------------------------------------------------------------

def test_s2orc_metadata_fixture():
    papers, graph, report = read_s2orc_metadata(FIXTURES / "s2orc" / "metadata.jsonl", progress=False)
    assert list(papers) == ["P1", "P2", "P3", "P4", "P5"]
    assert _edges(graph) == {("P1", "P2"), ("P1", "P3"), ("P2", "P3"), ("P4", "P1"), ("P5", "P5")}
    assert report["no_abstract"] == 1 and report["no_venue"] == 1  # P3; P4 (P2 has a journal)
    assert report["unknown_citation_ids"] == 2 and report["edges_dropped_to_unknown_ids"] == 2
    assert report["self_citations"] == 1
    p1 = papers["P1"]
    assert p1.authors == ["Grace Hopper", "Alan Turing"] and p1.year == 2019 and p1.venue == "ACL"
    assert p1.fields == ["Computer Science"] and p1.metadata["n_citations"] == 1
    assert papers["P2"].venue == "Scientometrics" and papers["P3"].fields == [] and papers["P5"].year is None


def test_s2orc_metadata_options():
    path = FIXTURES / "s2orc" / "metadata.jsonl"
    papers, graph, report = read_s2orc_metadata(path, require_abstract=True, progress=False)
    assert "P3" not in papers and report["skipped_no_abstract"] == 1
    assert _edges(graph) == {("P4", "P1"), ("P5", "P5"), ("P1", "P2")}
    assert report["edges_to_skipped_papers"] == 2  # P1->P3, P2->P3
    papers, graph, report = read_s2orc_metadata(path, require_venue=True, progress=False)
    assert "P4" not in papers and report["skipped_no_venue"] == 1 and len(graph) == 4
    papers, graph, report = read_s2orc_metadata(path, exclude_ids={"P2"}, progress=False)
    assert "P2" not in papers and report["excluded"] == 1 and report["edges_to_skipped_papers"] == 2
    papers, graph, report = read_s2orc_metadata(path, keep_unknown_citations=True, progress=False)
    assert len(graph) == 7 and ("P1", "UNK1") in graph and ("P4", "UNK2") in graph


def test_s2orc_pdf_parses_fixture():
    papers, _, _ = read_s2orc_metadata(FIXTURES / "s2orc" / "metadata.jsonl", progress=False)
    sections, report = read_s2orc_pdf_parses(FIXTURES / "s2orc" / "pdf_parses.jsonl", papers=papers, progress=False)
    p1 = sections["P1"]
    assert [(s.heading, s.kind, len(s.paragraphs)) for s in p1] == [
        ("Introduction", "introduction", 2), ("2 Methods", "method", 1), ("", "other", 1),
        ("Results and Discussion", "results", 1), ("Acknowledgements", "other", 1)]
    assert papers["P1"].sections is p1
    assert sections["P9"] == []
    assert report["parses_without_paper"] == 1 and report["parses_without_body_text"] == 1
    assert report["empty_paragraphs"] == 1 and report["paragraphs_without_heading"] == 1


def test_s2orc_bad_inputs():
    with pytest.raises(ValueError, match=r"truncated\.jsonl:3: not valid JSON"):
        read_s2orc_metadata(FIXTURES / "bad" / "truncated.jsonl", progress=False)
    with pytest.raises(ValueError, match=r"s2orc_missing_id\.jsonl:2: missing 'paper_id'"):
        read_s2orc_metadata(FIXTURES / "bad" / "s2orc_missing_id.jsonl", progress=False)
    with pytest.raises(ValueError, match=r"empty\.jsonl: empty file"):
        read_s2orc_metadata(FIXTURES / "bad" / "empty.jsonl", progress=False)
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        read_s2orc_metadata(FIXTURES / "bad" / "missing.jsonl", progress=False)


def test_s2orc_metadata_real(shared_data):
    path = shared_data / "s2orc" / "metadata" / "sample.jsonl"
    papers, graph, report = read_s2orc_metadata(path, progress=False)
    assert len(papers) == 1000 and report["no_abstract"] == 512
    # the only citations inside the sample are 4 papers listing themselves
    assert len(graph) == 4 and all(c.citing == c.cited for c in graph)
    assert report["self_citations"] == 4
    assert report["unknown_citation_ids"] == 6049  # distinct ids cited or citing outside the sample
    papers, graph, report = read_s2orc_metadata(path, require_abstract=True, progress=False)
    assert len(papers) == 488 and len(graph) == 3 and report["skipped_no_abstract"] == 512


# --- SciCite ---------------------------------------------------------------------------------------

def test_scicite_fixture_graph():
    records = read_scicite(FIXTURES / "scicite" / "dev.jsonl")
    assert len(records) == 5 and records[2]["sectionName"] == "Methods"
    graph = scicite_graph(records)
    assert _edges(graph) == {("A", "B"), ("C", "B"), ("C", "D")}
    edge = graph.edge("A", "B")
    assert edge.intents == ("background", "method")
    assert edge.count("background") == 2 and edge.count("method") == 1
    assert graph.edge("C", "B").intents == ("result",)
    assert _edges(graph.subgraph("background", min_count=2)) == {("A", "B")}


def test_scicite_bad_inputs():
    with pytest.raises(ValueError, match=r"scicite_bad_label\.jsonl:2: label 'comparison'"):
        read_scicite(FIXTURES / "bad" / "scicite_bad_label.jsonl")
    with pytest.raises(ValueError, match="empty file"):
        read_scicite(FIXTURES / "bad" / "empty.jsonl")
    with pytest.raises(ValueError, match="no records"):
        scicite_graph([])


def test_scicite_real(shared_data):
    for split, total, labels in (("dev", 916, {"background": 538, "method": 255, "result": 123}),
                                 ("test", 1861, {"background": 997, "method": 605, "result": 259})):
        records = read_scicite(shared_data / "scicite" / f"{split}.jsonl")
        assert len(records) == total
        counts = {label: sum(r["label"] == label for r in records) for label in labels}
        assert counts == labels
        graph = scicite_graph(records)
        # every citation string is one context: the graph's context counts add up to the records
        assert sum(sum(n for _, n in c.context_counts) for c in graph) == total


# --- leakage audit -----------------------------------------------------------------------------

def test_leakage_audit_hand_computed():
    table = leakage_audit(["a", "b", "c"], {"scidocs": ["a", "d", "a"], "empty": [], "mdcr": ["c", "b", "e", "f"]})
    assert list(table.columns) == ["eval_set", "size", "shared", "share", "examples"]
    assert table["eval_set"].tolist() == ["scidocs", "empty", "mdcr"]
    assert table["size"].tolist() == [2, 0, 4]
    assert table["shared"].tolist() == [1, 0, 2]
    assert table["share"].tolist() == [0.5, 0.0, 0.5]
    assert table["examples"].tolist() == [["a"], [], ["b", "c"]]


def test_leakage_audit_specter_splits_real(shared_data):
    data = read_specter_training(shared_data / "specter" / "training")
    table = leakage_audit(data.splits["train"], {"val": data.splits["val"], "test": data.splits["test"]})
    assert table["shared"].tolist() == [0, 0]  # SPECTER's query splits are disjoint
