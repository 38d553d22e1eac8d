"""Where a graph embedding's edges came from, recorded in ``embedding.json`` beside its vectors (issue 36).

SciNCL's rows are set beside the paper's only when they were sampled on S2ORC's citation graph (§3.4, A.4; Table 4:
52,526,134 nodes, 463,697,639 edges). An embedding's vectors cannot tell which graph they embed, so
:func:`sdr.graph.embed_edge_files` records the edge files' source (:func:`edge_source`): when the files are the
``edges`` folder of a complete bulk ``s2orc_citation_graph`` fetch (:mod:`sdr.fetchers.bulk`, its
``graph_stats.json`` and completion record beside them), the dataset's name, the release, the node set and the
fetch's counts; otherwise only the files, and why no dataset is named. :func:`s2orc_graph_problem` is the one test
the SciNCL chapter reads: ``None`` for an embedding of that dataset, else the reason its rows are shown apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

__all__ = ["S2ORC_GRAPH_DATASET", "GRAPH_STATS", "edge_source", "source_with_counts", "s2orc_graph_problem",
           "describe_source"]

#: The registry's name of SciNCL's graph (:data:`sdr.datasets.registry.S2ORC_CITATION_GRAPH`).
S2ORC_GRAPH_DATASET = "s2orc_citation_graph"
#: Written by the bulk fetch beside its ``edges`` folder (:meth:`sdr.fetchers.bulk.BulkFetch._edges`).
GRAPH_STATS = "graph_stats.json"


def edge_source(paths: str | Path | Iterable[str | Path]) -> dict:
    """What can be said of the edge files ``paths`` (files or folders, as :class:`sdr.graph.EdgeFiles` reads them):
    ``{"dataset", "files", ...}``. ``dataset`` is :data:`S2ORC_GRAPH_DATASET` only when the files are every file of
    the ``edges`` folder of one bulk fetch whose completion record names that dataset and whose
    :data:`GRAPH_STATS` is beside the folder; then ``release``, ``node_set``, ``node_set_papers`` and ``fetch``
    (the folder) come from it, and ``graph_stats`` is the file as written. Otherwise ``dataset`` is ``None`` and
    ``why_no_dataset`` says why."""
    from sdr.graph.edges import EdgeFiles

    given = [paths] if isinstance(paths, (str, Path)) else list(paths)
    files = [p.resolve() for p in EdgeFiles(given).paths]
    source: dict = {"dataset": None, "files": [str(Path(p)) for p in given]}
    folders = {f.parent.parent for f in files if f.parent.name == "edges"}
    if len(folders) != 1 or any(f.parent.name != "edges" for f in files):
        source["why_no_dataset"] = "the edge files are not the edges folder of a bulk s2orc_citation_graph fetch"
        return source
    fetch = folders.pop()
    stats_path = fetch / GRAPH_STATS
    if not stats_path.is_file():
        source["why_no_dataset"] = f"no {GRAPH_STATS} beside {fetch / 'edges'} (not a bulk fetch's edges)"
        return source
    from sdr.fetchers.completion import fetch_state

    state = fetch_state(fetch)
    if not state.complete:
        source["why_no_dataset"] = f"the fetch in {fetch} is not complete ({state.describe(S2ORC_GRAPH_DATASET)})"
        return source
    if state.record.get("dataset") != S2ORC_GRAPH_DATASET:
        source["why_no_dataset"] = (f"the fetch in {fetch} is of {state.record.get('dataset')!r}, not "
                                    f"{S2ORC_GRAPH_DATASET}")
        return source
    every = {p.resolve() for p in (fetch / "edges").iterdir() if p.is_file() and not p.name.startswith(".")}
    if set(files) != every:
        source["why_no_dataset"] = (f"{len(set(files) & every)} of the {len(every)} edge files of the fetch in {fetch} "
                                    f"given{' (and others)' if set(files) - every else ''}: a part of the graph")
        return source
    try:
        stats = json.loads(stats_path.read_text(encoding="utf-8"))
        release, node_set = stats["release"], stats["node_set"]
    except (ValueError, KeyError, TypeError) as error:
        source["why_no_dataset"] = f"{stats_path}: unreadable ({type(error).__name__}: {error}); expected the fetch's stats"
        return source
    source.update(dataset=S2ORC_GRAPH_DATASET, release=release, node_set=node_set,
                  node_set_papers=stats.get("node_set_papers"), fetch=str(fetch), graph_stats=stats)
    return source


def source_with_counts(source: dict, report) -> dict:
    """``source`` with the nodes and distinct edges the embedding was trained on (its :class:`EmbeddingReport`)."""
    return {**source, "nodes": int(report.nodes), "edges": int(report.distinct_edges)}


def s2orc_graph_problem(info: dict | None) -> str | None:
    """``None`` when a given embedding's ``embedding.json`` (``info``) names the S2ORC citation graph dataset as its
    edges' source; else why not, in words for the page."""
    source = (info or {}).get("source") if isinstance(info, dict) else None
    if not isinstance(source, dict):
        return ("it records no source of its edges (embedding.json without `source`: written before provenance was "
                "recorded, or not by `sdr graph embed`)")
    if source.get("dataset") != S2ORC_GRAPH_DATASET:
        why = source.get("why_no_dataset") or f"its edges are of {source.get('dataset')!r}"
        return f"its edges are not the {S2ORC_GRAPH_DATASET} dataset ({why})"
    return None


def describe_source(info: dict | None) -> str:
    """One line on the graph an embedding embeds, from its ``embedding.json``: the release, node set, nodes and
    edges of an S2ORC citation graph fetch, else the files and counts recorded."""
    source = (info or {}).get("source") if isinstance(info, dict) else None
    if not isinstance(source, dict):
        return "graph of the given embedding: not recorded (embedding.json has no source)"
    counts = ", ".join(f"{source[k]:,} {k}" for k in ("nodes", "edges") if isinstance(source.get(k), int))
    if source.get("dataset") == S2ORC_GRAPH_DATASET:
        return (f"graph: {S2ORC_GRAPH_DATASET}, S2AG release {source.get('release')}, node set: "
                f"{source.get('node_set')}; embedded {counts}")
    files = ", ".join(source.get("files") or []) or "?"
    return f"graph: edge files {files} (no dataset named: {source.get('why_no_dataset', '?')}); embedded {counts}"
