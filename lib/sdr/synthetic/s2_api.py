"""Semantic Scholar data of a synthetic corpus, written by the real fetcher (replicas and paper-dry-run fixtures).

:class:`SyntheticGraphApi` answers Graph API requests from a synthetic corpus in the API's documented JSON
shapes: ``/paper/{id}/references`` and ``/citations`` pages with ``contexts``, ``intents`` and
``contextsWithIntent`` (one context per planted context count, each with its own intent), and ``/paper/batch``
records with ``externalIds.CorpusId`` (ids may be asked for as ``CorpusId:<n>``). The writers run
:mod:`sdr.fetchers.semantic_scholar` against it, so a replica is read by exactly the code that reads a real
fetch (:func:`sdr.corpus.read_s2_citations`):

* :func:`write_citation_pages` — the citation pages of a corpus (every paper an anchor by default);
* :func:`write_flew_triplets` — FLeW's released-triplets layout (``<facet>_training_triplet.csv`` of corpus
  ids), for one shared query list.

Both refuse to run under the ``paper`` policy (:func:`sdr.datasets.forbid_replica`).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from sdr.datasets import forbid_replica

CORPUS_ID_BASE = 900_000  # synthetic papers get corpus ids CORPUS_ID_BASE + index (S2 corpus ids are integers)
S2_INTENT = {"background": "background", "method": "methodology", "result": "result"}


def corpus_ids(corpus, base: int = CORPUS_ID_BASE) -> dict[str, int]:
    """``{paper id: corpus id}``: the sorted paper ids numbered from ``base``."""
    return {pid: base + i for i, pid in enumerate(sorted(corpus.papers))}


class SyntheticGraphApi:
    """A transport (:class:`sdr.fetchers.http.Client`) answering Graph API requests from a synthetic corpus."""

    def __init__(self, corpus, corpus_ids: Mapping[str, int] | None = None):
        self.corpus = corpus
        self.corpus_ids = dict(corpus_ids or {})
        self.by_corpus_id = {str(v): k for k, v in self.corpus_ids.items()}

    def _link(self, citation, other: str, role: str) -> dict:
        paper = self.corpus.papers.get(other)
        contexts, with_intent = [], []
        for intent in citation.intents:
            for k in range(max(1, citation.count(intent))):
                text = f"[{other}] is cited for its {intent} ({k + 1})."
                contexts.append(text)
                with_intent.append({"context": text, "intents": [S2_INTENT[intent]]})
        return {"contexts": contexts, "intents": [S2_INTENT[i] for i in citation.intents],
                "contextsWithIntent": with_intent, "isInfluential": False,
                role: {"paperId": other, "title": paper.title if paper else None,
                       "abstract": paper.abstract if paper else None}}

    def _record(self, requested: str) -> dict | None:
        pid = self.by_corpus_id.get(requested.split(":", 1)[1]) if requested.startswith("CorpusId:") else requested
        paper = self.corpus.papers.get(pid) if pid else None
        if paper is None:
            return None
        record = {"paperId": pid, "title": paper.title, "abstract": paper.abstract, "year": paper.year}
        if pid in self.corpus_ids:
            record["externalIds"] = {"CorpusId": self.corpus_ids[pid]}
        return record

    def __call__(self, method, url, headers, body, timeout):
        from sdr.fetchers.http import Response

        parts = urllib.parse.urlparse(url).path.split("/")
        graph = self.corpus.graph
        if method == "POST" and parts[-1] == "batch":
            return Response(200, json.dumps([self._record(i) for i in json.loads(body)["ids"]]).encode())
        paper_id, kind = parts[-2], parts[-1]
        if paper_id not in self.corpus.papers:
            return Response(404, b'{"error": "Paper not found"}')
        if kind == "references":
            data = [self._link(graph.edge(paper_id, c), c, "citedPaper") for c in sorted(graph.references(paper_id))]
        else:
            data = [self._link(graph.edge(c, paper_id), c, "citingPaper") for c in sorted(graph.citations(paper_id))]
        return Response(200, json.dumps({"offset": 0, "data": data}).encode())


def _client(corpus, ids: Mapping[str, int] | None):
    from sdr.fetchers.http import Client

    return Client(rate=1e6, api_key="synthetic", transport=SyntheticGraphApi(corpus, ids), sleep=lambda s: None)


def write_citation_pages(corpus, folder: str | Path, anchors: Sequence[str] | None = None,
                         ids: Mapping[str, int] | None = None, references_of_references: bool = True) -> Path:
    """The Semantic Scholar citation pages of ``corpus`` in ``folder``, written by the real fetcher.

    ``anchors`` default to every paper, so each edge is in its citing paper's references and its cited
    paper's citations (the reader counts it once); ``CorpusId:<n>`` anchors are resolved through ``/paper/batch``
    as for a real fetch. ``ids`` (``{paper id: corpus id}``, default :func:`corpus_ids`) give the records'
    ``externalIds.CorpusId``."""
    forbid_replica("sdr.synthetic.s2_api.write_citation_pages")
    from sdr.fetchers.semantic_scholar import CitationFetcher

    folder = Path(folder)
    ids = corpus_ids(corpus) if ids is None else ids
    fetcher = CitationFetcher(folder, _client(corpus, ids), progress=False)
    anchors = list(anchors) if anchors is not None else sorted(corpus.papers)
    if any(str(a).startswith("CorpusId:") for a in anchors):
        anchors = fetcher.resolve_corpus_ids(anchors)
    fetcher.fetch(anchors, references_of_references=references_of_references)
    return folder


def shared_queries(graph) -> list[str]:
    """The papers with an edge in every facet subgraph (the replica's query list: each gets triplets of every
    facet)."""
    from sdr.corpus import INTENTS

    with_edge = [{p for c in graph if c.count(f) > 0 for p in (c.citing, c.cited)} for f in INTENTS]
    return sorted(set.intersection(*with_edge))


def write_flew_triplets(corpus, folder: str | Path, ids: Mapping[str, int] | None = None,
                        queries: Sequence[str] | None = None, per_query: int = 10, seed: int = 0) -> Path:
    """FLeW's released-triplets layout for ``corpus``: per facet ``<facet>_training_triplet.csv`` with the header
    ``query_paper_id,positive_id,negative_id`` and ``per_query`` rows per query (corpus ids). The query list
    (default :func:`shared_queries`) is the same in the three files, as FLeW's is; a positive is a neighbour
    of the query in that facet's subgraph (drawn with replacement when it has fewer), a negative a paper that is
    not one."""
    forbid_replica("sdr.synthetic.s2_api.write_flew_triplets")
    from sdr.corpus import INTENTS

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ids = corpus_ids(corpus) if ids is None else ids
    graph = corpus.graph
    queries = list(queries) if queries is not None else shared_queries(graph)
    papers = sorted(corpus.papers)
    rng = np.random.default_rng(seed)
    for facet in INTENTS:
        neighbours: dict[str, set[str]] = {}
        for citation in graph:
            if citation.count(facet) > 0:
                neighbours.setdefault(citation.citing, set()).add(citation.cited)
                neighbours.setdefault(citation.cited, set()).add(citation.citing)
        lines = ["query_paper_id,positive_id,negative_id"]
        for query in queries:
            near = sorted(neighbours.get(query, ()))
            if not near:
                continue
            positives = rng.choice(near, size=per_query, replace=len(near) < per_query)
            for positive in positives:
                while True:
                    negative = papers[int(rng.integers(len(papers)))]
                    if negative != query and negative not in neighbours.get(query, ()):
                        break
                lines.append(f"{ids[query]},{ids[str(positive)]},{ids[negative]}")
        (folder / f"{facet}_training_triplet.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder
