"""Semantic Scholar's Datasets API for a synthetic corpus, in the service's shapes and habits (tests, the paper dry run).

:class:`SyntheticDatasetsApi` is two things the bulk fetcher (:mod:`sdr.fetchers.bulk`) talks to:

* a JSON transport (:class:`sdr.fetchers.http.Client`) for ``GET /datasets/v1/release/`` (the release ids),
  ``/release/{id|latest}`` (``{"release_id", "README", "datasets": [{"name", "description", "README"}]}``) and
  ``/release/{id}/dataset/{name}`` (``{"name", "description", "README", "files": [pre-signed link, …]}``; without an
  ``x-api-key`` it answers 403, as the real API does);
* a shard server (:meth:`SyntheticDatasetsApi.open`, the fetcher's ``opener``): gzipped JSONL shards answered with
  ``Content-Length``, ``Range`` requests with 206 and ``Content-Range``, a link of an older listing with 403
  ``Request has expired`` (:meth:`expire`, or ``expire_after_opens``), and a connection that drops after
  ``drop_after_bytes`` bytes on a shard's first download (:attr:`drops`).

The records have the real datasets' schemas (as in Semantic Scholar's public samples): ``citations``
``{"citingcorpusid", "citedcorpusid", "isinfluential", "contexts", "intents", "updated"}`` (ids as strings, contexts
and link-level intents ``null`` when there are none, a null ``citedcorpusid`` every ``null_cited_every`` links: a
reference S2 did not resolve), ``papers`` ``{"corpusid", "externalids", "url", "title", "authors", "year", …}``,
``abstracts`` ``{"corpusid", "openaccessinfo", "abstract"}``, and ``s2orc`` ``{"corpusid", "externalids",
"content": {"source", "text", "annotations"}}`` for the papers in :meth:`s2orc_ids` (three in four).
"""

from __future__ import annotations

import gzip
import io
import json
import urllib.parse
from collections.abc import Mapping

from sdr.synthetic.s2_api import S2_INTENT, corpus_ids as number_papers, sha_id

RELEASE = "2024-04-02"  # FLeW §4.1's release
HOST = "https://s2ag-datasets.example"
DATASET_NAMES = ("papers", "abstracts", "citations", "s2orc")


class _Stream(io.RawIOBase):
    """A response body that raises ``ConnectionResetError`` after ``limit`` bytes (a dropped connection)."""

    def __init__(self, data: bytes, limit: int | None):
        self.data, self.position, self.limit = data, 0, limit

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.limit is not None and self.position >= self.limit:
            raise ConnectionResetError("synthetic shard server: connection dropped mid-download")
        end = len(self.data) if size is None or size < 0 else self.position + size
        if self.limit is not None:
            end = min(end, self.limit)
        block = self.data[self.position:end]
        self.position += len(block)
        return block


class SyntheticDatasetsApi:
    """The Datasets API of a synthetic corpus (see the module docstring)."""

    def __init__(self, corpus, corpus_ids: Mapping[str, int] | None = None, *, release: str = RELEASE,
                 shards: int = 3, null_cited_every: int = 7, require_key: bool = True,
                 drop_after_bytes: int | None = None, expire_after_opens: int | None = None):
        self.corpus, self.release, self.require_key = corpus, release, require_key
        self.ids = dict(corpus_ids) if corpus_ids is not None else number_papers(corpus)
        self.null_cited_every = null_cited_every
        self.drop_after_bytes, self.expire_after_opens = drop_after_bytes, expire_after_opens
        self.generation = 1  # the signature of the current listing's links; expire() makes older links stale
        self.opens = 0
        self.drops: list[str] = []  # shards whose first download was cut
        self.requests: list[str] = []
        records = {"citations": self._citations(), "papers": self._papers(), "abstracts": self._abstracts(),
                   "s2orc": self._s2orc()}
        self.shards = {name: self._shard(rows, shards) for name, rows in records.items()}

    # -- records in the datasets' schemas
    def s2orc_ids(self) -> set[int]:
        """The corpus ids the synthetic ``s2orc`` dataset holds (three papers in four)."""
        return {cid for i, (pid, cid) in enumerate(sorted(self.ids.items(), key=lambda x: x[1])) if i % 4 != 3}

    def _citations(self) -> list[dict]:
        rows = []
        for number, citation in enumerate(sorted(self.corpus.graph, key=lambda c: (c.citing, c.cited)), 1):
            contexts, intents = [], []
            for intent in citation.intents:
                for k in range(max(1, citation.count(intent))):
                    contexts.append(f"[{citation.cited}] is cited for its {intent} ({k + 1}).")
                intents.append(S2_INTENT[intent])
            rows.append({"citingcorpusid": str(self.ids[citation.citing]), "citedcorpusid": str(self.ids[citation.cited]),
                         "isinfluential": number % 5 == 0, "contexts": contexts or None, "intents": intents or None,
                         "updated": "2024-03-30T00:00:00.000Z"})
            if self.null_cited_every and number % self.null_cited_every == 0:
                rows.append({"citingcorpusid": str(self.ids[citation.citing]), "citedcorpusid": None,
                             "isinfluential": False, "contexts": [f"an unresolved reference of {citation.citing}"],
                             "intents": None, "updated": "2024-03-30T00:00:00.000Z"})
        return rows

    def _papers(self) -> list[dict]:
        rows = []
        for pid, cid in sorted(self.ids.items(), key=lambda x: x[1]):
            paper = self.corpus.papers.get(pid)
            if paper is None:
                continue
            external = {"ACL": None, "DBLP": None, "ArXiv": None, "MAG": None, "CorpusId": str(cid), "PubMed": None,
                        "DOI": None, "PubMedCentral": None}
            rows.append({"corpusid": cid, "externalids": external,
                         "url": f"https://www.semanticscholar.org/paper/{sha_id(pid)}", "title": paper.title,
                         "authors": [], "venue": "", "publicationvenueid": None, "year": paper.year,
                         "referencecount": len(self.corpus.graph.references(pid)),
                         "citationcount": len(self.corpus.graph.citations(pid)), "influentialcitationcount": 0,
                         "isopenaccess": False, "s2fieldsofstudy": None, "publicationtypes": None,
                         "publicationdate": None, "journal": None, "updated": "2024-03-30T00:00:00.000Z"})
        return rows

    def _abstracts(self) -> list[dict]:
        return [{"corpusid": cid, "openaccessinfo": {"externalids": {"MAG": None, "ACL": None, "DOI": None,
                                                                     "PubMedCentral": None, "ArXiv": None},
                                                     "license": None, "url": None, "status": None},
                 "abstract": self.corpus.papers[pid].abstract}
                for pid, cid in sorted(self.ids.items(), key=lambda x: x[1])
                if pid in self.corpus.papers and self.corpus.papers[pid].abstract]

    def _s2orc(self) -> list[dict]:
        keep = self.s2orc_ids()
        rows = []
        for pid, cid in sorted(self.ids.items(), key=lambda x: x[1]):
            paper = self.corpus.papers.get(pid)
            if cid not in keep or paper is None:
                continue
            text = f"{paper.title}\n{paper.abstract}\n"
            spans = {"title": [{"start": 0, "end": len(paper.title)}],
                     "abstract": [{"start": len(paper.title) + 1, "end": len(paper.title) + 1 + len(paper.abstract)}]}
            rows.append({"corpusid": cid, "externalids": {"doi": None},
                         "content": {"source": {"pdfsha": None}, "text": text,
                                     "annotations": {k: json.dumps(v) for k, v in spans.items()}}})
        return rows

    @staticmethod
    def _shard(rows: list[dict], shards: int) -> dict[str, bytes]:
        parts = [rows[i::shards] for i in range(shards)]
        return {f"part-{i:05d}.jsonl.gz": gzip.compress("".join(json.dumps(r) + "\n" for r in part).encode(),
                                                        mtime=0)
                for i, part in enumerate(parts)}

    # -- the JSON API
    def link(self, dataset: str, key: str) -> str:
        return (f"{HOST}/{self.release}/{dataset}/{key}?X-Amz-Expires=604800"
                f"&X-Amz-Signature=sig{self.generation}")

    def expire(self) -> None:
        """A week passes: every link listed so far is stale."""
        self.generation += 1

    def __call__(self, method, url, headers, body, timeout):
        from sdr.fetchers.http import Response

        path = urllib.parse.urlparse(url).path.removeprefix("/datasets/v1").rstrip("/")
        self.requests.append(f"{method} {path}")
        if self.require_key and not headers.get("x-api-key"):
            return Response(403, b'{"message": "Forbidden"}')
        parts = path.split("/")[1:]  # release, <id>, dataset, <name>
        if parts == ["release"]:
            return Response(200, json.dumps(["2023-03-14", self.release]).encode())
        if len(parts) == 2 and parts[0] == "release":
            if parts[1] not in ("latest", self.release):
                return Response(404, b'{"message": "release not found"}')
            return Response(200, json.dumps({"release_id": self.release, "README": "Subject to the terms of ODC-BY",
                                             "datasets": [{"name": n, "description": f"the {n} dataset",
                                                           "README": "…"} for n in DATASET_NAMES]}).encode())
        if len(parts) == 4 and parts[0] == "release" and parts[2] == "dataset":
            name = parts[3]
            if parts[1] not in ("latest", self.release) or name not in self.shards:
                return Response(404, b'{"message": "not found"}')
            return Response(200, json.dumps({"name": name, "description": f"the {name} dataset", "README": "…",
                                             "files": [self.link(name, k) for k in self.shards[name]]}).encode())
        return Response(404, b'{"message": "not found"}')

    # -- the shard server
    def open(self, url: str, start: int = 0):
        from sdr.fetchers.bulk import Opened

        self.opens += 1
        if self.expire_after_opens and self.opens % self.expire_after_opens == 0:
            self.expire()
        parsed = urllib.parse.urlparse(url)
        _, release, dataset, key = parsed.path.split("/")
        query = urllib.parse.parse_qs(parsed.query)
        if query.get("X-Amz-Signature") != [f"sig{self.generation}"]:
            return Opened(403, {"content-type": "application/xml"},
                          io.BytesIO(b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"))
        data = self.shards.get(dataset, {}).get(key)
        if data is None or release != self.release:
            return Opened(404, {})
        if start >= len(data):
            return Opened(416, {"content-range": f"bytes */{len(data)}"})
        limit = None
        if self.drop_after_bytes is not None and f"{dataset}/{key}" not in self.drops and start == 0:
            self.drops.append(f"{dataset}/{key}")
            limit = min(self.drop_after_bytes, len(data) - 1)
        body = data[start:]
        headers = {"content-length": str(len(body)), "content-type": "binary/octet-stream"}
        if start:
            headers["content-range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        return Opened(206 if start else 200, headers, _Stream(body, limit))
