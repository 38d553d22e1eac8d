"""sdr.dryrun: the paper-shaped mirror (every dataset a paper chapter reads, in its official layout) and the
runner's guarantee that a replica read under the paper policy fails the dry run."""

from __future__ import annotations

import json

import nbformat
import pytest

from sdr import datasets, dryrun
from sdr.corpus import read_s2_citations, read_s2orc_metadata, read_scirepeval_triplets


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mirror")
    # no real data: every dataset from its fixture writer, the bulk route's too, and the thesis' Graph API route
    # (no chapter reads it at paper: SciAspect reads s2ag_bulk_thesis) to compare the two routes
    made = dryrun.build_mirror(folder, extra=[*dryrun.bulk_datasets(), "s2_citations_thesis"])
    return folder, made


def test_mirror_holds_every_file_a_paper_chapter_reads(mirror):
    folder, made = mirror
    assert set(made) == set(dryrun.needed_datasets()) | {"s2ag_bulk_flew", "s2ag_bulk_thesis", "s2orc_citation_graph",
                                                         "s2_citations_thesis"}
    assert set(made.values()) == {"fixture"}
    for name in made:  # every fetched dataset complete: written by its fetcher, or its fixture writer says so
        assert datasets.is_complete(name, folder / datasets.get(name).folder), name
    for name in made:
        dataset = datasets.get(name)
        missing = [p for p in datasets.paper_files(dataset) if not (folder / dataset.folder / p).exists()]
        assert not missing, (name, missing)


def test_fixtures_read_back_with_the_books_readers(mirror):
    folder, _ = mirror
    triplets, _ = read_scirepeval_triplets(folder / "scirepeval_cite_prediction" / "train.jsonl")
    assert len(triplets) > 50
    graph, papers, _ = read_s2_citations(folder / "s2_citations_thesis")
    anchors = (folder / "s2_citations_thesis" / "anchors.txt").read_text().split()
    assert len(graph) > 100 and set(anchors) <= set(papers)
    assert any(c.intents for c in graph) and any(not c.intents for c in graph)  # intents and the misc aspect
    metadata, _, _ = read_s2orc_metadata(folder / "s2orc_specter" / "metadata" / "metadata.jsonl", progress=False)
    wanted = {str(json.loads(line)[role]["corpus_id"])
              for line in (folder / "scirepeval_cite_prediction" / "train.jsonl").read_text().splitlines()
              for role in ("query", "pos", "neg")}
    assert set(metadata) == wanted  # the S2ORC fetcher kept exactly the triplets' papers


def test_the_bulk_route_builds_flew_sciaspect_and_scincl_inputs(mirror):
    from sdr.fetchers.completion import fetch_state
    from sdr.methods.sciaspect.data import read_thesis_citations

    folder, _ = mirror
    thesis = read_thesis_citations(folder / "s2ag_bulk_thesis")  # what the SciAspect chapter reads
    pages = read_thesis_citations(folder / "s2_citations_thesis")  # the Graph API route, 40-hex ids
    assert len(thesis.anchors) == len(pages.anchors) > 5 and all(a.isdigit() for a in thesis.anchors)
    assert len(thesis.graph) == len(pages.graph)  # the same edges, by either route
    record = fetch_state(folder / "s2ag_bulk_thesis").record
    assert record["fetcher"] == "bulk" and record["counts"]["downloads_resumed"] > 0  # dropped connections resumed
    flew, _, _ = read_s2_citations(folder / "s2ag_bulk_flew")
    anchors = (folder / "s2ag_bulk_flew" / "anchors.txt").read_text().split()
    triplet_queries = {line.split(",")[0] for line in
                       (folder / "flew_triplets" / "background_training_triplet.csv").read_text().splitlines()[1:]}
    # every paper of FLeW's dry-run graph an anchor (as its Graph API fixture): the query list among them, as corpus
    # ids, and a graph large enough for FLeW's unclipped bands (k⁻hard 4000)
    assert set(anchors) >= triplet_queries and len(flew.nodes) > 4010 and all(a.isdigit() for a in anchors)
    stats = json.loads((folder / "s2orc_citation_graph" / "graph_stats.json").read_text())
    assert stats["edge_lines"] > 100 and stats["nodes_with_an_edge"] <= stats["node_set_papers"]


def test_the_leakage_branch_runs_on_the_bulk_thesis_graph_through_scidocs_shas(mirror):
    """SciAspect reads the bulk route's graph (corpus ids); the dry run's SciDocs names a few of its papers by their
    40-hex ids, which the audit finds only through each paper's paperSha: the leakage branch on the bulk layout."""
    from sdr.evaluate import scidocs
    from sdr.methods import sciaspect

    folder, _ = mirror
    thesis = sciaspect.read_thesis_citations(folder / "s2ag_bulk_thesis")
    evaluation = {"SciDocs": scidocs.read_papers(folder / "scidocs")}
    named = sciaspect.dry_run_sha_named_papers(dryrun.FixtureCorpus())
    assert len(named) == sciaspect.SHA_NAMED_PAPERS
    kept, overlap = sciaspect.remove_evaluation_papers(thesis, evaluation, sciaspect.id_aliases(folder / "s2ag_bulk_thesis"))
    assert overlap.loc["SciDocs", "in the training graph"] == sciaspect.SHA_NAMED_PAPERS  # the sha-named ones only
    assert overlap.loc["SciDocs", "note"].startswith("partly comparable: through the S2 paper ids the fetch gave every "
                                                     "paper of the graph")  # the fixture's other ids are no S2 ids
    assert kept.anchors and len(kept.graph.nodes) < len(thesis.graph.nodes)
    _, unaliased = sciaspect.remove_evaluation_papers(thesis, evaluation)
    assert unaliased.loc["all (removed)", "in the training graph"] == 0  # nothing matches without the shas


def _notebook(tmp_path, source: str):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    parameters = nbformat.v4.new_code_cell('profile = "paper"')
    parameters.metadata["tags"] = ["parameters"]
    notebook.cells = [parameters, nbformat.v4.new_code_cell(source)]
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    path = tmp_path / "notebooks" / "planted.ipynb"
    nbformat.write(notebook, path)
    return path


def test_a_planted_replica_read_under_paper_fails_the_run(mirror, tmp_path):
    folder, _ = mirror
    environment = {"SDR_DATA": str(folder), "SDR_DATA_CACHE": str(tmp_path / "cache"), datasets.DRY_RUN_ENV: "1",
                   "SDR_OFFLINE": "1"}
    honest = _notebook(tmp_path, 'from sdr import datasets\n'
                                 'data = datasets.ChapterData("benchmarks", profile)\n'
                                 'assert data.input("csfcube").real')
    assert dryrun.execute(honest, {"profile": "paper"}, tmp_path / "out1.ipynb", environment)["ok"]
    planted = _notebook(tmp_path, 'from sdr import datasets\n'
                                  'from sdr.synthetic import make_corpus\n'
                                  'data = datasets.ChapterData("benchmarks", profile)\n'
                                  'corpus = make_corpus(n_papers=20, seed=0)')
    result = dryrun.execute(planted, {"profile": "paper"}, tmp_path / "out2.ipynb", environment)
    assert not result["ok"] and result["ename"] == "ReplicaForbidden" and "make_corpus" in result["evalue"]


def test_a_chapter_that_skips_a_branch_of_the_paper_path_fails_the_dry_run(tmp_path, monkeypatch):
    """Issue 30: each chapter lists the branches its paper path must take in the dry run (DRY_RUN_BRANCHES); the
    run compares them with what the chapter recorded (ChapterRun.branch, stored as extra["branches"])."""
    import json
    import types

    from sdr import dryrun

    module = types.ModuleType("sdr.methods.planted")
    module.DRY_RUN_BRANCHES = ("bands unclipped", "leakage branch")
    monkeypatch.setitem(__import__("sys").modules, "sdr.methods.planted", module)
    store = tmp_path / "results"
    (store / "planted").mkdir(parents=True)
    (store / "planted" / "paper.json").write_text(json.dumps({"extra": {"branches": ["bands unclipped"]}}))
    assert dryrun.branches_taken("planted", store)["missing"] == ["leakage branch"]
    (store / "planted" / "paper.json").write_text(json.dumps({"extra": {"branches": ["leakage branch",
                                                                                    "bands unclipped"]}}))
    assert dryrun.branches_taken("planted", store)["missing"] == []
    # the second SciNCL run (on a given graph embedding) is held to its own list
    assert dryrun.branches_taken("planted", store, ["S2ORC graph embedding read"])["missing"] == [
        "S2ORC graph embedding read"]
