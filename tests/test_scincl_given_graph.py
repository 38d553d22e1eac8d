"""SciNCL's graph at ``paper`` (issue 36): a precomputed embedding of S2ORC's citation graph, keyed by S2 corpus ids,
read (sdr.graph.read_given_embedding) with errors that name the file and line or record, restricted to the
training papers through their corpus ids (sdr.methods.scincl.given_embedding) and sampled on over the chapter's own
paper ids. The pairing rule that reads the graph's source is tested in test_specter_paper.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from sdr.book.chapter import ChapterCheckFailed
from sdr.graph import EMBEDDING_INFO, GraphEmbeddingConfig, embed_edge_files, read_given_embedding
from sdr.graph.given import check_given_embedding
from sdr.jsonio import InputError
from sdr.methods import scincl

CORPUS_IDS = [101, 205, 307, 411, 523, 640]
VECTORS = np.arange(6 * 4, dtype=np.float32).reshape(6, 4) / 10


def write_folder(folder, ids=CORPUS_IDS, vectors=VECTORS, info=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ids.txt").write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    np.save(folder / "vectors.npy", vectors)
    if info is not None:
        (folder / EMBEDDING_INFO).write_text(json.dumps(info), encoding="utf-8")
    return folder


def write_jsonl(path, ids=CORPUS_IDS, vectors=VECTORS):
    path.write_text("".join(json.dumps({"paper_id": str(i), "embedding": [float(x) for x in v]}) + "\n"
                            for i, v in zip(ids, vectors)), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------- the loader
def test_a_work_dir_folder_is_read_with_its_recorded_settings(tmp_path):
    info = {"config": {"dimension": 4, "comparator": "dot"}, "link_prediction": {"MRR": 41.0, "AUC": 88.0}}
    given = read_given_embedding(write_folder(tmp_path / "graph", info=info), dimension=4)
    assert given.corpus_ids.tolist() == CORPUS_IDS and given.dimension == 4
    np.testing.assert_array_equal(np.asarray(given.vectors), VECTORS)
    assert given.comparator == "dot" and given.link_prediction == {"MRR": 41.0, "AUC": 88.0}
    # without embedding.json: no recorded comparator or link prediction
    bare = read_given_embedding(write_folder(tmp_path / "bare"))
    assert bare.comparator is None and bare.link_prediction == {}


def test_an_embeddings_jsonl_is_read(tmp_path):
    given = read_given_embedding(write_jsonl(tmp_path / "graph.jsonl"), dimension=4)
    assert given.corpus_ids.tolist() == CORPUS_IDS
    np.testing.assert_allclose(given.vectors, VECTORS)


@pytest.mark.parametrize("ids, vectors, message", [
    (CORPUS_IDS[:5], VECTORS, r"vectors.npy: 6 rows, but .*ids.txt has 5 ids"),
    ([101, 205, 307, 205, 523, 640], VECTORS, r"ids.txt:4: corpus id 205 again \(first on line 2\)"),
    ([101, 205, "W307", 411, 523, 640], VECTORS, r"ids.txt:3: id 'W307'; expected an S2 corpus id \(digits only\)"),
    ([101, 205, "", 411, 523, 640], VECTORS, r"ids.txt:3: id ''; expected an S2 corpus id"),
    (CORPUS_IDS, VECTORS[:, 0], r"vectors.npy: an array of shape \(6,\) .*expected \[N, d\] floats"),
    (CORPUS_IDS, VECTORS.astype(np.int64), r"vectors.npy: an array of shape \(6, 4\) and dtype int64"),
])
def test_a_bad_folder_names_the_file_and_line(tmp_path, ids, vectors, message):
    with pytest.raises(InputError, match=message):
        read_given_embedding(write_folder(tmp_path / "graph", ids=ids, vectors=vectors))


def test_wrong_dimension_missing_files_and_a_wrong_record_are_errors(tmp_path):
    folder = write_folder(tmp_path / "graph")
    with pytest.raises(InputError, match=r"graph: the vectors have 4 dimensions; expected 768 \(graph_dimension\)"):
        read_given_embedding(folder, dimension=768)
    with pytest.raises(InputError, match=r"embedding.json: records dimension 8 for vectors of dimension 4"):
        read_given_embedding(write_folder(tmp_path / "info", info={"config": {"dimension": 8}}))
    (folder / "ids.txt").unlink()
    with pytest.raises(InputError, match=r"ids.txt: missing; expected a folder written by `sdr graph embed"):
        read_given_embedding(folder)
    with pytest.raises(FileNotFoundError, match="nowhere: not found"):
        read_given_embedding(tmp_path / "nowhere")
    (tmp_path / "torn").mkdir()
    write_folder(tmp_path / "torn")
    (tmp_path / "torn" / "vectors.npy").write_bytes(b"not numpy")
    with pytest.raises(InputError, match=r"torn/vectors.npy: not a .npy array"):
        read_given_embedding(tmp_path / "torn")


@pytest.mark.parametrize("ids, message", [
    ([101, 205, "p307", 411, 523, 640], r"record 3 has paper_id 'p307'; expected an S2 corpus id"),
    ([101, 205, 307, 411, 523, "0205"], r"record 6 is corpus id 205 again \(first: record 2\)"),
    ([101, 205, 307, 411, 523, 205], r"id '205' again \(first on line 2\)"),  # sdr.evaluate's reader, with its line
])
def test_a_bad_jsonl_names_the_record(tmp_path, ids, message):
    with pytest.raises(InputError, match=message):
        read_given_embedding(write_jsonl(tmp_path / "graph.jsonl", ids=ids))


def test_a_jsonl_of_another_dimension_line_is_an_error(tmp_path):
    path = write_jsonl(tmp_path / "graph.jsonl")
    path.write_text(path.read_text() + json.dumps({"paper_id": "777", "embedding": [1.0, 2.0]}) + "\n")
    with pytest.raises(InputError, match=r"graph.jsonl:7: the embedding has 2 dimensions; expected 4"):
        read_given_embedding(path)


def test_restrict_maps_corpus_ids_to_the_chapters_papers_and_checks_the_rows_read(tmp_path):
    given = read_given_embedding(write_folder(tmp_path / "graph"))
    restricted = given.restrict({"shaC": "523", "shaA": 101, "shaX": "999", "shaN": None, "shaB": " 307"})
    assert restricted.ids == ["shaC", "shaA", "shaB"] and restricted.missing == ["shaX", "shaN"]
    np.testing.assert_array_equal(restricted.vectors, VECTORS[[4, 0, 2]])
    bad = VECTORS.copy()
    bad[2, 1] = np.nan
    given = read_given_embedding(write_folder(tmp_path / "nan", vectors=bad))
    assert given.restrict({"shaA": 101}).ids == ["shaA"]  # rows not asked for are not read
    with pytest.raises(InputError, match=r"the vector of corpus id 307 \(row 3\) has NaN or infinite values"):
        given.restrict({"shaB": 307})


# ------------------------------------------------------------------------------------------------- the chapter's step
def _run(dimension=4, comparator="dot"):
    branches, glued = [], {}
    p = SimpleNamespace(graph_dimension=dimension, graph_comparator=comparator, graph_epochs=20,
                        graph_test_fraction=0.01, graph_undirected=False, seed=0)
    return SimpleNamespace(p=p, profile="paper", branch=branches.append, glue=glued.__setitem__, branches=branches,
                           glued=glued)


def _specter_like_graph(corpus_of):
    """A TripletGraph as triplet_graph() makes it from SPECTER's training set: papers keyed by sha, each with the
    ``corpus_id`` its triplet side carries; the queries are the papers with out-edges."""
    papers = sorted(corpus_of)
    return scincl.TripletGraph(citations=None, report={"edges": 0, "triplets": 0, "papers": len(papers)},
                               query_ids=papers[:3], label="SPECTER's triplet graph", query_leakage=None,
                               paper_ids=papers, corpus_ids=dict(corpus_of))


#: embedding.json's source as `sdr graph embed` writes it for a complete bulk s2orc_citation_graph fetch
S2ORC_SOURCE = {"dataset": "s2orc_citation_graph", "release": "2026-11-17", "node_set": "papers of the release's s2orc "
                "dataset (both ends of every edge are in it)", "nodes": 6, "edges": 9, "files": ["/data/edges"]}


def test_given_embedding_is_restricted_to_the_training_papers_under_their_own_ids(tmp_path):
    info = {"config": {"dimension": 4, "comparator": "dot"}, "link_prediction": {"MRR": 41.0, "Hits@1": 30.0,
                                                                                   "Hits@10": 70.0, "AUC": 88.0},
            "source": S2ORC_SOURCE}
    folder = write_folder(tmp_path / "s2orc", info=info)
    # five training papers: four of them in the S2ORC embedding, one (a query) not; one without a corpus id
    corpus_of = {"sha_a": 205, "sha_b": 640, "sha_c": 999_999, "sha_d": 101, "sha_e": 307, "sha_f": None}
    graph = _specter_like_graph(corpus_of)
    run = _run()
    embedded = scincl.given_embedding(run, graph, str(folder))
    assert embedded.embedding.ids == ["sha_a", "sha_b", "sha_d", "sha_e"]
    np.testing.assert_array_equal(embedded.embedding.vectors, VECTORS[[1, 5, 0, 2]])
    assert embedded.embedding.metric == "ip" and embedded.embedding.link_prediction["AUC"] == 88.0
    assert embedded.source == scincl.S2ORC_GRAPH and embedded.given
    assert embedded.graph_label == f"the S2ORC citation graph (given embedding: {folder})"
    assert run.branches == ["S2ORC graph embedding read"] and run.glued["given_found"] == "4"
    # embedding.json here records no report: no edge count; the graph's dataset, release and node set from its source
    assert embedded.graph_size == {"nodes": 6, "edges": None, "dataset": "s2orc_citation_graph",
                                   "release": "2026-11-17", "node_set": S2ORC_SOURCE["node_set"]}
    assert embedded.describe().startswith("4 of the 6 training papers found in the given embedding (6 nodes, "
                                          "dimension 4); the other 2 are not in the FAISS index")
    # the query not in the embedding is not sampled; the others are
    assert graph.query_ids == ["sha_a", "sha_b", "sha_c"] and embedded.query_ids(graph) == ["sha_a", "sha_b"]
    ours = embedded.link_table[embedded.link_table["reported by"].str.startswith("sdr graph embed")]
    assert len(ours) == 1 and ours["AUC"].iloc[0] == 88.0 and ours["model"].iloc[0] == "BigGraph 4 Dot."


def test_a_given_embedding_without_link_prediction_says_why(tmp_path):
    path = write_jsonl(tmp_path / "s2orc.jsonl")
    graph = _specter_like_graph({"sha_a": 205, "sha_b": 640})
    embedded = scincl.given_embedding(_run(), graph, str(path))
    assert embedded.embedding.link_prediction == {}
    assert not embedded.link_table["reported by"].str.startswith("sdr graph embed").any()
    assert any(line.startswith("link prediction not scored:") for line in embedded.checks)


def test_a_file_of_another_graph_stops_the_page(tmp_path):
    folder = write_folder(tmp_path / "s2orc")
    # two of five training papers found: fewer than half
    graph = _specter_like_graph({"sha_a": 205, "sha_b": 640, "sha_c": 1, "sha_d": 2, "sha_e": 3})
    run = _run()
    with pytest.raises(ChapterCheckFailed, match=r"2 of the 5 training papers found .*need at least 50%"):
        scincl.given_embedding(run, graph, str(folder))
    assert run.branches == []
    with pytest.raises(ChapterCheckFailed, match=r"embedded with the 'dot' comparator; graph_comparator is 'cos'"):
        scincl.given_embedding(_run(comparator="cos"), _specter_like_graph({"sha_a": 205}),
                               str(write_folder(tmp_path / "dot", info={"config": {"comparator": "dot"}})))


def test_embed_graph_takes_the_given_embedding_when_the_parameter_is_set(tmp_path):
    folder = write_folder(tmp_path / "s2orc")
    run = _run()
    run.p.graph_embedding = str(folder)
    embedded = scincl.embed_graph(run, SimpleNamespace(), _specter_like_graph({"sha_a": 205, "sha_b": 640}))
    assert embedded.given and embedded.embedding.ids == ["sha_a", "sha_b"]


def test_sdr_graph_embed_work_dir_is_read_back_and_sampled_over_the_training_papers(tmp_path):
    """The path of a `paper` run, end to end on a small graph: PBG embeds corpus-id edges into a work dir (with
    embedding.json), the chapter restricts it to its training papers, and SciNCL's bands are sampled on it with
    the chapter's paper ids."""
    rng = np.random.default_rng(0)
    corpus = [1000 + i for i in range(60)]
    edges = tmp_path / "citations.tsv"
    edges.write_text("".join(f"{corpus[i]}\t{corpus[j]}\n" for i in range(60)
                             for j in rng.choice(60, size=4, replace=False) if i != j))
    config = GraphEmbeddingConfig(dimension=8, epochs=2, test_fraction=0.05, seed=0)
    result = embed_edge_files([edges], config, work_dir=tmp_path / "work")
    about = json.loads((tmp_path / "work" / EMBEDDING_INFO).read_text())
    assert about["config"]["dimension"] == 8 and about["link_prediction"] == result.link_prediction
    assert about["report"]["distinct_edges"] == result.report.distinct_edges > 0
    corpus_of = {f"sha{c}": c for c in corpus[:40]}  # the training papers: 40 of the graph's 60 nodes
    run = _run(dimension=8)
    embedded = scincl.given_embedding(run, _specter_like_graph(corpus_of), str(tmp_path / "work"))
    assert embedded.embedding.ids == sorted(corpus_of)
    assert embedded.graph_size == {"nodes": 60, "edges": result.report.distinct_edges}
    assert embedded.link_table["reported by"].str.startswith("sdr graph embed").sum() == 1
    by_corpus = dict(zip(result.ids, np.asarray(result.vectors)))
    np.testing.assert_array_equal(embedded.embedding.vectors[0], by_corpus[str(corpus[0])])
    bands = scincl.Bands(k_pos=6, c_pos=3, k_hard=20, c_hard=2, c_easy=3)
    triplets, report = scincl.sample_triplets(embedded.embedding, bands, sorted(corpus_of)[:10], seed=0)
    assert report.queries_used == 10 and len(triplets) == 50
    assert {p for t in triplets for p in (t.query, t.positive, t.negative)} <= set(corpus_of)


def test_the_dry_runs_s2orc_graph_fixture_holds_most_of_the_specter_fixtures_training_papers(tmp_path):
    """The paper dry run's second SciNCL run (DRY_RUN_GIVEN_GRAPH) embeds the s2orc_citation_graph fixture: its
    corpus ids are the ones the SPECTER fixture's triplets carry, and it holds more than MIN_GIVEN_SHARE of them
    (the s2orc node set is a subset of the corpus, so not all: the page counts the others)."""
    import gzip

    from sdr import datasets, dryrun

    given = scincl.DRY_RUN_GIVEN_GRAPH
    assert datasets.BULK_ROUTE["scincl"][1] == given["dataset"]
    fixture = dryrun.FixtureCorpus()
    folder = tmp_path / given["dataset"]
    dryrun.write_s2orc_citation_graph(folder, fixture)
    nodes = {part for path in (folder / "edges").glob("*.tsv.gz")
             for line in gzip.open(path, "rt") for part in line.split()[:2]}
    training = {str(fixture.record(pid)["corpus_id"]) for triplet in fixture.triplets() for pid in triplet}
    found = len(training & nodes)
    assert scincl.MIN_GIVEN_SHARE * len(training) < found < len(training)


def test_the_quick_check_stops_a_wrong_path_or_dimension_before_the_released_models(tmp_path):
    folder = write_folder(tmp_path / "graph")
    check_given_embedding(folder, dimension=4)
    check_given_embedding(write_jsonl(tmp_path / "graph.jsonl"), dimension=4)
    with pytest.raises(InputError, match=r"graph: the vectors have 4 dimensions; expected 768"):
        check_given_embedding(folder, dimension=768)
    with pytest.raises(InputError, match=r"graph.jsonl: the vectors have 4 dimensions; expected 16"):
        check_given_embedding(tmp_path / "graph.jsonl", dimension=16)
    with pytest.raises(FileNotFoundError, match="typo: not found"):
        check_given_embedding(tmp_path / "typo")
    (tmp_path / "bad.jsonl").write_text("not json\n")
    with pytest.raises(InputError, match=r"bad.jsonl:1: not an embedding record"):
        check_given_embedding(tmp_path / "bad.jsonl")
    # the released step runs it before any model is read
    run = SimpleNamespace(p=SimpleNamespace(graph_embedding=str(tmp_path / "typo"), graph_dimension=4))
    with pytest.raises(FileNotFoundError, match="typo: not found"):
        scincl.released_models(run, SimpleNamespace())


def test_the_wol_part_reads_the_given_embedding_for_the_triples_papers(tmp_path):
    """With ``graph_embedding`` the without_leakage part samples on S2ORC's graph: the rows of the triples' papers
    (corpus ids) found in it, counted; fewer than half found stops the page, as for the main part."""
    folder = write_folder(tmp_path / "s2orc", info={"config": {"dimension": 4, "comparator": "dot"}})
    papers = ["101", "307", "640", "999999"]  # the last is not in the embedding
    embedding, line, words = scincl.given_wol_embedding(_run(), papers, str(folder))
    assert words.startswith("another graph (given embedding): it records no source of its edges")
    assert embedding.ids == ["101", "307", "640"] and embedding.metric == "ip"
    np.testing.assert_array_equal(embedding.vectors, VECTORS[[0, 2, 5]])
    assert line.startswith("w/o leakage: 3 of the 4 papers of SciNCL's released triples found in the given S2ORC "
                           "embedding (6 nodes); the other 1 are not in the FAISS index")
    with pytest.raises(ChapterCheckFailed, match="need at least 50%"):
        scincl.given_wol_embedding(_run(), ["101", "1", "2", "3"], str(folder))
    with pytest.raises(ChapterCheckFailed, match="comparator"):
        scincl.given_wol_embedding(_run(comparator="cos"), papers, str(folder))


# ------------------------------------------------------------------------------------------------- the pairing rule
def _pairing_run(dimension=8):
    run = _run(dimension=dimension)
    # every setting the pairing rule reads at the paper's value (SciNCL §4.3, §5), so only the graph decides
    for name, (value, _) in scincl.PAPER_SETTINGS.items():
        if value is not None and not name.startswith("graph_"):  # the graph is the test's own small one
            setattr(run.p, name, value)
    run.p.released_checkpoints = []
    return run


def _pairs(run, embedded):
    import pandas as pd

    from sdr.methods import specter

    names = {"SciNCL": f"SciNCL sampling on {embedded.graph_label} (with leakage)",
             "SPECTER sampling": "SPECTER sampling on SPECTER's triplet graph (with leakage)"}
    ours = pd.DataFrame({c: [60.0, 81.0, 79.0] for c in specter.METRIC_COLUMNS},
                        index=["untrained encoder", *names.values()])
    paired, apart = scincl.paper_pairs(run, SimpleNamespace(scidocs=SimpleNamespace(real=True)),
                                       SimpleNamespace(with_leakage=True), SimpleNamespace(label="SPECTER's triplet graph"),
                                       ours, names, embedded)
    return names["SciNCL"], paired, apart


def _edges_over(corpus, seed):
    rng = np.random.default_rng(seed)
    return sorted({(corpus[i], corpus[int(j)]) for i in range(len(corpus)) for j in rng.choice(len(corpus), 4)
                   if i != int(j)})


def test_an_embedding_of_another_graph_covering_the_training_papers_is_trained_on_but_not_paired(tmp_path):
    """Planted: the triplet graph's citations keyed by corpus ids (every training paper in it), embedded by `sdr graph
    embed` from a TSV: the bands are sampled on it, but its SciNCL row stands apart, the reason naming its source."""
    corpus = [5000 + i for i in range(30)]
    edges = tmp_path / "triplet_graph_by_corpus_id.tsv"
    edges.write_text("".join(f"{a}\t{b}\n" for a, b in _edges_over(corpus, 1)))
    embed_edge_files([edges], GraphEmbeddingConfig(dimension=8, epochs=1, test_fraction=0.05), work_dir=tmp_path / "w")
    run = _pairing_run()
    corpus_of = {f"sha{c}": c for c in corpus}
    embedded = scincl.given_embedding(run, _specter_like_graph(corpus_of), str(tmp_path / "w"))
    assert len(embedded.embedding.ids) == len(corpus_of)  # the whole training set is covered, and used
    assert embedded.source != scincl.S2ORC_GRAPH and run.branches == ["given embedding of another graph read"]
    assert "not the S2ORC citation graph dataset" in embedded.graph_label
    assert any(line.startswith(f"graph: edge files {edges}") and "stand apart" in line
               for line in embedded.checks)
    row, paired, apart = _pairs(run, embedded)
    assert row not in set(paired.get("ours", [])) and row in set(apart["ours"])
    why = apart.set_index("ours").loc[row, "shown apart because"]
    assert "its edges are not the s2orc_citation_graph dataset" in why and "S2ORC's citation graph" in why
    # an embedding.json without a source (or a JSONL) is not SciNCL's graph either
    write_folder(tmp_path / "bare", ids=corpus[:6])
    bare = scincl.given_embedding(_run(), _specter_like_graph(dict(list(corpus_of.items())[:6])), str(tmp_path / "bare"))
    assert bare.source.startswith("another graph (given embedding): it records no source")


def test_an_embedding_of_the_s2orc_citation_graph_fetch_is_paired(tmp_path):
    """The bulk fetch's edges folder (graph_stats.json and completion record beside it) embedded by `sdr graph embed`:
    embedding.json names the dataset, and the SciNCL row pairs with Table 1's SciNCL row (81.8)."""
    import gzip

    from sdr.fetchers.completion import write_record

    corpus = [5000 + i for i in range(30)]
    fetch = tmp_path / "s2orc_citation_graph"
    (fetch / "edges").mkdir(parents=True)
    edges = _edges_over(corpus, 2)
    with gzip.open(fetch / "edges" / "citations-0.tsv.gz", "wt") as handle:
        handle.writelines(f"{a}\t{b}\n" for a, b in edges)
    (fetch / "graph_stats.json").write_text(json.dumps({"release": "2026-11-17", "node_set": "papers of the "
                                                        "release's s2orc dataset", "distinct_edges": len(edges)}))
    write_record(fetch, "s2orc_citation_graph", "bulk", {})
    assert embed_edge_files([fetch / "edges"], GraphEmbeddingConfig(dimension=8, epochs=1, test_fraction=0.05),
                            work_dir=tmp_path / "w").report.distinct_edges == len(edges)
    run = _pairing_run()
    embedded = scincl.given_embedding(run, _specter_like_graph({f"sha{c}": c for c in corpus}), str(tmp_path / "w"))
    assert embedded.source == scincl.S2ORC_GRAPH and run.branches == ["S2ORC graph embedding read"]
    assert embedded.graph_size == {"nodes": len({n for e in edges for n in e}), "edges": len(edges),
                                   "dataset": "s2orc_citation_graph", "release": "2026-11-17",
                                   "node_set": "papers of the release's s2orc dataset"}
    row, paired, apart = _pairs(run, embedded)
    pair = paired.set_index("ours").loc[row]
    assert pair["avg (paper)"] == 81.8 and row not in set(apart["ours"])


def test_the_page_states_the_graph_used_beside_table_4(tmp_path):
    """The Table 4 cell's line: an S2ORC fetch's dataset, release, node set, nodes and edges from embedding.json
    (through the embedding's graph_size) beside Table 4's 52,526,134 nodes and 463,697,639 edges; another graph by
    its label and counts."""
    glued = {}
    run = SimpleNamespace(glue=glued.__setitem__, profile="paper")
    s2orc = SimpleNamespace(graph_size={"nodes": 1_200_000, "edges": 9_000_000, "dataset": "s2orc_citation_graph",
                                        "release": "2026-11-17", "node_set": "papers of the release's s2orc dataset"},
                            n_nodes=300_000, graph_label="the S2ORC citation graph (given embedding: /g)")
    graph = SimpleNamespace(label="SPECTER's triplet graph", report={"edges": 500}, paper_ids=["a"] * 700)
    line = scincl.graph_statement(run, s2orc, graph)
    assert line == ("Graph used: the s2orc_citation_graph dataset, S2AG release 2026-11-17, node set: papers of the "
                    "release's s2orc dataset; 1,200,000 nodes, 9,000,000 edges (SciNCL Table 4: 52,526,134 nodes, "
                    "463,697,639 edges; here 2.28 % of its nodes).")
    assert glued["graph_used"] == line
    triplets = SimpleNamespace(graph_size={}, n_nodes=700, graph_label="SPECTER's triplet graph")
    assert scincl.graph_statement(run, triplets, graph).startswith("Graph used: SPECTER's triplet graph; 700 nodes, "
                                                                  "500 edges (SciNCL Table 4: 52,526,134 nodes")
    other = SimpleNamespace(graph_size={"nodes": 60, "edges": None}, n_nodes=40,
                            graph_label="a given graph embedding (/w), not the S2ORC citation graph dataset")
    assert "; 60 nodes, edges not recorded" in scincl.graph_statement(run, other, graph)


# ------------------------------------------------------------------------------------------------- graph_source
def test_the_paper_inputs_hold_the_s2orc_graph_only_when_the_chapter_embeds_it():
    from sdr.datasets import CHAPTER_DATA

    assert "s2orc_citation_graph" in CHAPTER_DATA["scincl"]
    assert scincl.paper_inputs("s2orc") == CHAPTER_DATA["scincl"]
    assert "s2orc_citation_graph" not in scincl.paper_inputs("s2orc", "/data/given")
    assert "s2orc_citation_graph" not in scincl.paper_inputs("triplets")
    with pytest.raises(ValueError, match="graph_source 'S2ORC'; expected one of s2orc, triplets"):
        scincl.paper_inputs("S2ORC")


def test_the_chapter_embeds_the_s2orc_fetch_once_and_reads_it_as_a_given_embedding(tmp_path, monkeypatch):
    """graph_source "s2orc" without graph_embedding: embed_graph embeds the fetch's edges (embed_edge_files) into the
    results store and reads them back as a given embedding named S2ORC's by its recorded source; a second run with
    the same settings and fetch reads the same folder again instead of embedding."""
    import gzip

    from sdr.fetchers.completion import write_record

    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    corpus = [7000 + i for i in range(30)]
    fetch = tmp_path / "s2orc_citation_graph"
    (fetch / "edges").mkdir(parents=True)
    with gzip.open(fetch / "edges" / "citations-0.tsv.gz", "wt") as handle:
        handle.writelines(f"{a}\t{b}\n" for a, b in _edges_over(corpus, 3))
    (fetch / "graph_stats.json").write_text(json.dumps({"release": "2026-11-17", "node_set": "s2orc papers"}))
    write_record(fetch, "s2orc_citation_graph", "bulk", {"edges": 1})
    asked = []

    def input_of(name, role="evaluation"):
        asked.append((name, role))
        return SimpleNamespace(path=fetch)

    def chapter_run():
        run = _run(dimension=8)
        run.p.graph_embedding, run.p.graph_source, run.p.graph_epochs = "", "s2orc", 1
        run.data = SimpleNamespace(input=input_of)
        return run

    run = chapter_run()
    graph = _specter_like_graph({f"sha{c}": c for c in corpus[:20]})
    embedded = scincl.embed_graph(run, SimpleNamespace(), graph)
    assert asked == [("s2orc_citation_graph", "training")]
    assert run.branches == ["S2ORC citation graph embedded in the chapter", "S2ORC graph embedding read"]
    assert embedded.source == scincl.S2ORC_GRAPH and len(embedded.embedding.ids) == 20
    assert embedded.graph_size["release"] == "2026-11-17" and embedded.embedding.vectors.shape == (20, 8)
    assert embedded.graph_label.startswith("the S2ORC citation graph (embedded in the chapter: ")
    folders = list((tmp_path / "results" / "runs" / "scincl-s2orc-graph").rglob("embedding.json"))
    assert len(folders) == 1 and not list((tmp_path / "results").rglob("embedding.partial"))
    # again with the same settings and fetch: read back, not embedded
    monkeypatch.setattr("sdr.graph.embed_edge_files", lambda *a, **k: pytest.fail("embedded twice"))
    again = scincl.embed_graph(chapter_run(), SimpleNamespace(), graph)
    np.testing.assert_array_equal(again.embedding.vectors, embedded.embedding.vectors)
