"""Semantic Scholar data of a synthetic corpus, written by the real fetcher (replicas and paper-dry-run fixtures).

:class:`SyntheticGraphApi` answers Graph API requests from a synthetic corpus in the API's documented JSON
shapes and with its habits: ``/paper/{id}/references`` and ``/citations`` pages of at most ``page_size`` links
with ``offset``/``next`` (``offset + limit`` past 9,999 answers 400, as the API does), ``contexts``, ``intents`` and
``contextsWithIntent`` (one context per planted context count, each with its own intent), some links whose other
paper has a null ``paperId`` (a reference S2 could not resolve), and ``/paper/batch`` records with
``externalIds.CorpusId`` (ids may be asked for as ``CorpusId:<n>``). With ``sha_ids`` the papers' ids are 40-hex
shas (as S2 paper ids are) instead of the corpus' own; :class:`Faults` makes it answer 429 with ``Retry-After``
(seconds or an HTTP date), 5xx, 504 for large pages, or drop the connection. The writers run
:mod:`sdr.fetchers.semantic_scholar` against it, so a replica is read by exactly the code that reads a real
fetch (:func:`sdr.corpus.read_s2_citations`):

* :func:`write_citation_pages` — the citation pages of a corpus (every paper an anchor by default);
* :func:`write_flew_triplets` — FLeW's released-triplets layout (``<facet>_training_triplet.csv`` of corpus
  ids), for one shared query list.

Both refuse to run under the ``paper`` policy (:func:`sdr.datasets.forbid_replica`). The bulk datasets of the same
corpus are :mod:`sdr.synthetic.s2_datasets`.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from sdr.datasets import forbid_replica

CORPUS_ID_BASE = 900_000  # synthetic papers get corpus ids CORPUS_ID_BASE + index (S2 corpus ids are integers)
S2_INTENT = {"background": "background", "method": "methodology", "result": "result"}
LINK_CAP = 9999  # the Graph API's offset + limit bound for link lists


def corpus_ids(corpus, base: int = CORPUS_ID_BASE) -> dict[str, int]:
    """``{paper id: corpus id}``: the sorted paper ids numbered from ``base``."""
    return {pid: base + i for i, pid in enumerate(sorted(corpus.papers))}


def sha_id(paper_id: str) -> str:
    """The 40-hex id a synthetic paper has when served with ``sha_ids`` (sha1 of its corpus id)."""
    return hashlib.sha1(f"sdr-synthetic:{paper_id}".encode()).hexdigest()


@dataclass
class Faults:
    """The failures a synthetic service produces, deterministically by request number (counted from 1):
    every ``rate_limit_every``-th request answers 429 (``Retry-After`` in seconds, or as an HTTP date with
    ``retry_after_date``), every ``server_error_every``-th 503, a page asking for more than ``gateway_timeout_above``
    links 504, and every ``drop_connection_every``-th request raises ``ConnectionResetError`` (a dropped
    connection). 0 turns a fault off."""

    rate_limit_every: int = 0
    retry_after_s: int = 2
    retry_after_date: bool = False
    server_error_every: int = 0
    gateway_timeout_above: int = 0
    drop_connection_every: int = 0

    def answer(self, number: int, now: datetime | None = None):
        """The fault answer for request ``number`` (a Response), None to answer normally; may raise."""
        from sdr.fetchers.http import Response

        if self.drop_connection_every and number % self.drop_connection_every == 0:
            raise ConnectionResetError(f"synthetic service: connection {number} dropped")
        if self.rate_limit_every and number % self.rate_limit_every == 0:
            if self.retry_after_date:
                when = (now or datetime.now(timezone.utc)) + timedelta(seconds=self.retry_after_s)
                header = format_datetime(when, usegmt=True)
            else:
                header = str(self.retry_after_s)
            return Response(429, b'{"message": "Too Many Requests. Please wait and try again"}',
                            {"Retry-After": header})
        if self.server_error_every and number % self.server_error_every == 0:
            return Response(503, b'{"message": "Service Unavailable"}')
        return None


class SyntheticGraphApi:
    """A transport (:class:`sdr.fetchers.http.Client`) answering Graph API requests from a synthetic corpus.

    ``page_size``: the most links one page holds (the real API: the request's ``limit``, at most 1,000; smaller here
    so that paging runs on small corpora). ``null_paper_every``: every n-th link of a list gets an extra link
    whose other paper has ``paperId: null`` (0: none). ``sha_ids``: serve 40-hex ids. ``faults``: :class:`Faults`.
    ``link_cap``: the API's ``offset + limit`` bound (9,999)."""

    def __init__(self, corpus, corpus_ids: Mapping[str, int] | None = None, *, page_size: int = 1000,
                 null_paper_every: int = 0, sha_ids: bool = False, faults: Faults | None = None,
                 link_cap: int = LINK_CAP, now=None):
        self.corpus = corpus
        self.corpus_ids = dict(corpus_ids or {})
        self.by_corpus_id = {str(v): k for k, v in self.corpus_ids.items()}
        self.page_size, self.null_paper_every, self.sha_ids = page_size, null_paper_every, sha_ids
        self.faults, self.link_cap, self.now = faults or Faults(), link_cap, now
        self.by_sha = {sha_id(pid): pid for pid in corpus.papers} if sha_ids else {}
        self.requests = 0

    def external(self, paper_id: str) -> str:
        """The id the service gives a paper of the corpus."""
        return sha_id(paper_id) if self.sha_ids else paper_id

    def internal(self, requested: str) -> str | None:
        """The corpus' paper id of a requested id (a served id or ``CorpusId:<n>``), None when unknown."""
        requested = urllib.parse.unquote(requested)
        if requested.startswith("CorpusId:"):
            return self.by_corpus_id.get(requested.split(":", 1)[1])
        if self.sha_ids:
            return self.by_sha.get(requested)
        return requested if requested in self.corpus.papers else None

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
                role: {"paperId": self.external(other), "corpusId": self.corpus_ids.get(other),
                       "title": paper.title if paper else None, "abstract": paper.abstract if paper else None}}

    def _record(self, requested: str) -> dict | None:
        pid = self.internal(requested)
        paper = self.corpus.papers.get(pid) if pid else None
        if paper is None:
            return None
        record = {"paperId": self.external(pid), "title": paper.title, "abstract": paper.abstract,
                  "year": paper.year}
        if pid in self.corpus_ids:
            record["externalIds"] = {"CorpusId": self.corpus_ids[pid]}
        return record

    def links(self, paper_id: str, kind: str) -> list[dict]:
        """The whole link list of a paper (``kind``: references or citations), before paging."""
        graph = self.corpus.graph
        if kind == "references":
            data = [self._link(graph.edge(paper_id, c), c, "citedPaper") for c in sorted(graph.references(paper_id))]
        else:
            data = [self._link(graph.edge(c, paper_id), c, "citingPaper") for c in sorted(graph.citations(paper_id))]
        if self.null_paper_every:
            role = "citedPaper" if kind == "references" else "citingPaper"
            unresolved = {"contexts": [], "intents": [], "contextsWithIntent": [], "isInfluential": False,
                          role: {"paperId": None, "corpusId": None,
                                 "title": "A reference Semantic Scholar did not resolve",
                                 "abstract": None}}
            data = [link for i, item in enumerate(data, 1)
                    for link in ([item, unresolved] if i % self.null_paper_every == 0 else [item])]
        return data

    @staticmethod
    def _only(links: list[dict], fields: Sequence[str]) -> list[dict]:
        """The link records with the requested ``fields`` alone, as the service answers (a linked paper's
        ``paperId`` always)."""
        kept = []
        for link in links:
            record = {key: value for key, value in link.items() if key in fields}
            for role in ("citedPaper", "citingPaper"):
                if role in link:
                    record[role] = {key: value for key, value in link[role].items()
                                    if key == "paperId" or key in fields}
            kept.append(record)
        return kept

    def __call__(self, method, url, headers, body, timeout):
        from sdr.fetchers.http import Response

        self.requests += 1
        parsed = urllib.parse.urlparse(url)
        parts = parsed.path.split("/")
        query = urllib.parse.parse_qs(parsed.query)
        limit = int(query.get("limit", ["100"])[0])
        fault = self.faults.answer(self.requests, self.now() if self.now else None)
        if fault is None and self.faults.gateway_timeout_above and method == "GET" \
                and limit > self.faults.gateway_timeout_above:
            fault = Response(504, b'{"message": "Endpoint request timed out"}')
        if fault is not None:
            return fault
        if method == "POST" and parts[-1] == "batch":
            return Response(200, json.dumps([self._record(i) for i in json.loads(body)["ids"]]).encode())
        requested, kind = parts[-2], parts[-1]
        paper_id = self.internal(requested)
        if paper_id is None:
            return Response(404, b'{"error": "Paper not found"}')
        offset = int(query.get("offset", ["0"])[0])
        if limit > 1000 or offset + limit > self.link_cap:
            return Response(400, json.dumps({"error": "offset + limit must be < 10000 and limit <= 1000"}).encode())
        data = self._only(self.links(paper_id, kind), query.get("fields", [""])[0].split(","))
        size = min(limit, self.page_size)
        page = {"offset": offset, "data": data[offset:offset + size]}
        if offset + size < len(data):
            page["next"] = offset + size
        return Response(200, json.dumps(page).encode())


def _client(corpus, ids: Mapping[str, int] | None, **service):
    from sdr.fetchers.http import Client

    return Client(rate=1e6, api_key="synthetic", transport=SyntheticGraphApi(corpus, ids, **service),
                  sleep=lambda s: None)


def write_citation_pages(corpus, folder: str | Path, anchors: Sequence[str] | None = None,
                         ids: Mapping[str, int] | None = None, references_of_references: bool = True,
                         **service) -> Path:
    """The Semantic Scholar citation pages of ``corpus`` in ``folder``, written by the real fetcher.

    ``anchors`` default to every paper, so each edge is in its citing paper's references and its cited
    paper's citations (the reader counts it once); ``CorpusId:<n>`` anchors are resolved through ``/paper/batch``
    as for a real fetch. ``ids`` (``{paper id: corpus id}``, default :func:`corpus_ids`) give the records'
    ``externalIds.CorpusId``. ``service``: options of :class:`SyntheticGraphApi` (``sha_ids``, ``page_size``,
    ``null_paper_every``, ``faults``); with ``sha_ids`` the anchors (corpus paper ids) are asked for by their
    served ids, so the whole folder speaks in 40-hex ids."""
    forbid_replica("sdr.synthetic.s2_api.write_citation_pages")
    from sdr.fetchers.semantic_scholar import CitationFetcher

    folder = Path(folder)
    ids = corpus_ids(corpus) if ids is None else ids
    client = _client(corpus, ids, **service)
    fetcher = CitationFetcher(folder, client, progress=False)
    anchors = list(anchors) if anchors is not None else sorted(corpus.papers)
    anchors = [a if str(a).startswith("CorpusId:") else client.transport.external(a) for a in anchors]
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
