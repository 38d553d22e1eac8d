"""Issue 36: an embedding records which graph it embeds. `sdr graph embed` / sdr.graph.embed_edge_files write the edge
files' source into embedding.json: the dataset, release, node set, nodes and edges of a complete bulk
s2orc_citation_graph fetch (its graph_stats.json and completion record beside the edges folder), else the files and
counts with the reason no dataset is named."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pytest

from sdr import cli
from sdr.fetchers.completion import write_record
from sdr.graph import EMBEDDING_INFO, GraphEmbeddingConfig, embed_edge_files
from sdr.graph.provenance import S2ORC_GRAPH_DATASET, describe_source, edge_source, s2orc_graph_problem

NODES = [3000 + i for i in range(40)]


def _edges(seed=0):
    rng = np.random.default_rng(seed)
    return sorted({(NODES[i], NODES[int(j)]) for i in range(len(NODES)) for j in rng.choice(len(NODES), 3)
                   if NODES[i] != NODES[int(j)]})


def write_fetch(folder, dataset=S2ORC_GRAPH_DATASET, shards=2, complete=True, release="2026-11-17"):
    """A bulk fetch's folder as sdr.fetchers.bulk writes it: edges/citations-<shard>.tsv.gz, graph_stats.json,
    _complete.json last."""
    edges = _edges()
    (folder / "edges").mkdir(parents=True)
    for shard in range(shards):
        with gzip.open(folder / "edges" / f"citations-{shard}.tsv.gz", "wt") as handle:
            handle.writelines(f"{a}\t{b}\n" for a, b in edges[shard::shards])
    stats = {"release": release, "node_set": "papers of the release's s2orc dataset (both ends of every edge are in it)",
             "node_set_papers": 45, "nodes_with_an_edge": len({n for e in edges for n in e}), "edge_lines": len(edges),
             "distinct_edges": len(edges), "scincl_table4": {"nodes": 52_526_134, "edges": 463_697_639}}
    (folder / "graph_stats.json").write_text(json.dumps(stats), encoding="utf-8")
    if complete:
        write_record(folder, dataset, "bulk", {"edges": len(edges)})
    return folder, edges


def test_sdr_graph_embed_records_the_s2orc_fetch_it_embedded(tmp_path, capsys):
    fetch, edges = write_fetch(tmp_path / "s2orc_citation_graph")
    work = tmp_path / "work"
    assert cli.main(["graph", "embed", str(fetch / "edges"), "--dim", "8", "--epochs", "1", "--test-fraction", "0.05",
                     "--work-dir", str(work)]) == 0
    about = json.loads((work / EMBEDDING_INFO).read_text())
    source = about["source"]
    assert source["dataset"] == S2ORC_GRAPH_DATASET and source["release"] == "2026-11-17"
    assert source["node_set"].startswith("papers of the release's s2orc dataset") and source["node_set_papers"] == 45
    assert source["fetch"] == str(fetch.resolve()) and source["files"] == [str(fetch / "edges")]
    # what was embedded: every node with an edge and every distinct edge of the fetch
    assert source["nodes"] == about["report"]["nodes"] == len({n for e in edges for n in e})
    assert source["edges"] == about["report"]["distinct_edges"] == len(edges)
    assert source["graph_stats"]["distinct_edges"] == len(edges)
    assert s2orc_graph_problem(about) is None
    assert describe_source(about) == (f"graph: {S2ORC_GRAPH_DATASET}, S2AG release 2026-11-17, node set: papers of the "
                                      f"release's s2orc dataset (both ends of every edge are in it); embedded "
                                      f"{source['nodes']:,} nodes, {len(edges):,} edges")


def test_other_edge_files_are_recorded_with_their_counts_and_no_dataset(tmp_path):
    path = tmp_path / "triplet_graph.tsv"
    edges = _edges(seed=1)
    path.write_text("".join(f"{a}\t{b}\n" for a, b in edges))
    config = GraphEmbeddingConfig(dimension=8, epochs=1, test_fraction=0.05, seed=0)
    embed_edge_files([path], config, work_dir=tmp_path / "work")
    about = json.loads((tmp_path / "work" / EMBEDDING_INFO).read_text())
    source = about["source"]
    assert source["dataset"] is None and source["files"] == [str(path)]
    assert source["nodes"] == len({n for e in edges for n in e}) and source["edges"] == len(edges)
    assert "not the edges folder of a bulk s2orc_citation_graph fetch" in source["why_no_dataset"]
    assert s2orc_graph_problem(about).startswith("its edges are not the s2orc_citation_graph dataset (the edge files")
    assert describe_source(about).startswith(f"graph: edge files {path} (no dataset named")


@pytest.mark.parametrize("case, expected", [
    ("one shard", r"1 of the 2 edge files of the fetch in .* given: a part of the graph"),
    ("incomplete", r"is not complete \(partial"),
    ("another dataset", r"is of 's2ag_bulk_flew', not s2orc_citation_graph"),
    ("no stats", r"no graph_stats.json beside"),
])
def test_a_part_an_unfinished_fetch_or_another_dataset_names_no_dataset(tmp_path, case, expected):
    fetch, _ = write_fetch(tmp_path / "fetch", complete=case != "incomplete",
                           dataset="s2ag_bulk_flew" if case == "another dataset" else S2ORC_GRAPH_DATASET)
    if case == "no stats":
        (fetch / "graph_stats.json").unlink()
    given = fetch / "edges" / "citations-0.tsv.gz" if case == "one shard" else fetch / "edges"
    source = edge_source([given])
    assert source["dataset"] is None
    assert re.search(expected, source["why_no_dataset"]), source["why_no_dataset"]


def test_an_embedding_without_a_recorded_source_is_not_called_s2orc(tmp_path):
    assert s2orc_graph_problem({"config": {"dimension": 4}}).startswith("it records no source of its edges")
    assert s2orc_graph_problem(None).startswith("it records no source")
    assert describe_source({}) == "graph of the given embedding: not recorded (embedding.json has no source)"
