"""The citation graph inside SPECTER's training triplets (:func:`citation_graph_from_triplets`): the real
graph SciNCL's ``paper`` profile embeds. It changes with the triplet data, not with the embedding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sdr.corpus import CitationGraph


def citation_graph_from_triplets(triplets: Iterable[Sequence]) -> tuple[CitationGraph, dict, dict]:
    """The citation graph that SPECTER's training triplets carry: one edge ``query → positive`` per triplet.

    SPECTER (§3) draws a query's positives from the papers it cites, so every (query, positive) pair of its
    released triplets (SciRepEval's ``cite_prediction`` config, :func:`sdr.corpus.read_scirepeval_triplets`)
    is a real citation. Negatives are not edges: the files do not say which negatives are hard (cited by a
    positive) and which are random. This is the real graph the book can download for SciNCL's ``paper``
    profile; SciNCL itself embeds the whole S2ORC graph (52 M nodes), which no registry entry provides.

    Args:
        triplets: ``(query, positive, negative)`` :class:`~sdr.corpus.Paper` triples.

    Returns:
        ``(graph, papers, report)``: the graph, every paper of the triplets by id (negatives included, so
        they can be embedded and sampled as easy negatives), and counts (``triplets``, ``edges``,
        ``repeated_pairs``: triplets whose citation was already an edge; ``self_citations``: a query
        given as its own positive, kept as the graph keeps self-loops and counted).
    """
    citation_graph, papers = CitationGraph(), {}
    report = {"triplets": 0, "edges": 0, "repeated_pairs": 0, "self_citations": 0}
    for number, triplet in enumerate(triplets, 1):
        if len(triplet) != 3:
            raise ValueError(f"triplet {number}: expected (query, positive, negative) papers, got {len(triplet)} items")
        query, positive, negative = triplet
        for paper in triplet:
            papers.setdefault(paper.paper_id, paper)
        report["triplets"] += 1
        if (query.paper_id, positive.paper_id) in citation_graph:
            report["repeated_pairs"] += 1
            continue
        report["self_citations"] += query.paper_id == positive.paper_id
        citation_graph.add(query.paper_id, positive.paper_id)
    report["edges"] = len(citation_graph)
    report["papers"] = len(papers)
    if not report["edges"]:
        raise ValueError("citation_graph_from_triplets: no triplets, so no citation edges")
    return citation_graph, papers, report
