"""Semantic Scholar Graph API → the citation pages :func:`sdr.corpus.read_s2_citations` reads.

For each anchor paper it fetches every page of ``GET /paper/{id}/references`` and ``…/citations`` with the
link fields ``contexts, intents, contextsWithIntent, isInfluential`` and the other paper's ``title, abstract``
(the thesis §4.3: "their citations and references and their corresponding intents"), optionally the references
of each reference ("for each reference we retrieved their references along with their intent"), and the
anchors' own titles and abstracts through ``POST /paper/batch``. Output, in ``folder``:

* ``references.jsonl`` / ``citations.jsonl``: one API page a line, ``{"paperId": <anchor>, "offset", "next"?,
  "data": [...]}``: the page exactly as the API returned it, plus the anchor's id (and ``"truncated": true`` on
  the last page of a link list cut at the API's cap, below);
* ``papers.jsonl``: ``/paper/batch`` records ``{"paperId", "title", "abstract", ...}``;
* ``anchors.txt``: the anchors, one id a line (the query papers of the chapter);
* ``missing.jsonl``: ``{"paperId", "kind", "status"}`` for ids the API does not know (404), counted, not fatal;
* ``_complete.json`` last (:mod:`sdr.fetchers.completion`): the counts and every file's digest.

Ids go out in a documented form (:func:`api_id`): an all-digit id as ``CorpusId:<n>`` (never ``/paper/12345``,
which is no documented form), a 40-hex S2 paper id and prefixed ids (``DOI:``, ``ARXIV:`` …) as given. The Graph API serves at most 9,999 links of a paper (``offset + limit`` must stay below 10,000): a longer
list is fetched up to that cap, its last page marked ``"truncated": true``, and the truncated lists are counted in
the completion record (the bulk route, :mod:`sdr.fetchers.bulk`, has no cap). A 504 (the server gave up on a large
page) halves the page size for the rest of the run; 429s and other 5xx are retried by :class:`~sdr.fetchers.http.Client`.

All pages of one anchor are appended together, so an interrupted fetch resumes at the first anchor whose pages
are not all written (a torn last line of any output file is cut off first). The API key comes from
``S2_API_KEY``; without one the public rate limit applies and requests are often refused (HTTP 429: waited out).
"""

from __future__ import annotations

import csv
import json
import os
import re
import urllib.parse
from collections.abc import Iterable
from pathlib import Path

from tqdm.auto import tqdm

from sdr.fetchers import completion
from sdr.fetchers.http import ApiError, Client

GRAPH_API = "https://api.semanticscholar.org/graph/v1"
# corpusId: CSFCube and SciRepEval key their papers by S2 corpus ids, so the leakage audit needs every linked paper's
LINK_FIELDS = "contexts,intents,contextsWithIntent,isInfluential,title,abstract,corpusId"
PAPER_FIELDS = "title,abstract,externalIds,year"
PAGE_LIMIT = 1000  # the API's maximum for /references and /citations
MIN_PAGE_LIMIT = 10  # a 504 halves the page down to this, then the 504 is an error
LINK_CAP = 9999  # the Graph API serves links up to offset + limit = 9,999 (larger offsets answer 400)
BATCH_LIMIT = 500  # the API's maximum ids per /paper/batch call
KINDS = ("references", "citations")
OTHER_PAPER = {"references": "citedPaper", "citations": "citingPaper"}
_HEX_ID = re.compile(r"^[0-9a-f]{40}$")
#: The id prefixes the Graph API documents for /paper/{paper_id} and /paper/batch.
ID_PREFIXES = ("CorpusId:", "DOI:", "ARXIV:", "MAG:", "ACL:", "PMID:", "PMCID:", "URL:")


def api_id(paper_id: str) -> str:
    """A paper id in a form the Graph API documents: all digits (an S2 corpus id) as ``CorpusId:<n>``; a 40-hex S2
    id or an id with a documented prefix (:data:`ID_PREFIXES`) as given. Other ids are sent as given (the API
    answers 404 for a form it does not know, and the fetch notes it in ``missing.jsonl``); an empty id is an error."""
    text = str(paper_id).strip()
    if not text:
        raise ValueError(f"paper id {paper_id!r}: empty; expected a 40-hex Semantic Scholar id, a corpus id (digits) "
                         f"or one of the prefixes {', '.join(ID_PREFIXES)}")
    if text.isdigit():
        return f"CorpusId:{text}"
    return text


def _paper_url(paper_id: str, kind: str) -> str:
    return f"{GRAPH_API}/paper/{urllib.parse.quote(api_id(paper_id), safe=':')}/{kind}"


def _read_pages(path: Path) -> tuple[set[str], set[str]]:
    """(anchors whose last written page has no ``next`` — all their pages are there —, anchors whose list was cut
    at the cap). Cuts a torn last line first."""
    done: set[str] = set()
    truncated: set[str] = set()
    if not path.exists():
        return done, truncated
    completion.cut_torn_line(path)  # an interrupted append: drop the torn line, its anchor is fetched again
    last_page: dict[str, dict] = {}
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                page = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{line_number}: not valid JSON ({error.msg}); expected one API page a line "
                                 f"(delete the file to fetch again)") from None
            last_page[str(page.get("paperId"))] = page
    for anchor, page in last_page.items():
        if page.get("next") is None:
            done.add(anchor)
            if page.get("truncated"):
                truncated.add(anchor)
    return done, truncated


def _complete_anchors(path: Path) -> set[str]:
    """Anchors whose last written page has no ``next`` (all their pages are there). Cuts a torn last line."""
    return _read_pages(path)[0]


def _jsonl_records(path: Path) -> list[dict]:
    """The records of a JSONL output file, a torn last line cut off first."""
    if not path.exists():
        return []
    completion.cut_torn_line(path)
    records = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{line_number}: not valid JSON ({error.msg}); expected one record a line "
                                 f"(delete the file to fetch again)") from None
    return records


def _ids_in(path: Path, key: str) -> set[str]:
    return {str(record[key]) for record in _jsonl_records(path) if record.get(key) is not None}


class CitationFetcher:
    """Fetch citation pages for anchors into ``folder`` (see the module docstring)."""

    def __init__(self, folder: str | Path, client: Client | None = None, progress: bool = True):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.client = client or Client()
        self.progress = progress
        self.missing = 0
        self.truncated = 0
        self.smaller_pages = 0  # 504s answered with a smaller page
        self.link_cap = LINK_CAP
        self.page_limit = PAGE_LIMIT  # halved on a 504, and kept so for the rest of the run
        self.status = completion.Progress(self.folder)

    def _pages(self, paper_id: str, kind: str) -> list[dict] | None:
        """Every page of one link list (None when the API does not know the paper); cut at :data:`LINK_CAP`."""
        url = _paper_url(paper_id, kind)
        pages, offset = [], 0
        while True:
            if offset >= self.link_cap:
                pages[-1] = {**pages[-1], "truncated": True, "cap": self.link_cap}
                pages[-1].pop("next", None)
                self.truncated += 1
                return pages
            size = min(self.page_limit, self.link_cap - offset)
            # a 504 comes back at once while the page can shrink; at the smallest page it is retried with back-off
            # like any 5xx (Client.request), then it is an error
            shrinkable = self.page_limit > MIN_PAGE_LIMIT
            response = self.client.request("GET", url, {"fields": LINK_FIELDS, "limit": size, "offset": offset},
                                           pass_through=(504, 400) if shrinkable else (400,))
            if response.status == 504 and shrinkable:
                self.page_limit = max(MIN_PAGE_LIMIT, self.page_limit // 2)  # the server timed out: ask for less
                self.smaller_pages += 1
                continue
            if response.status == 504:
                raise ApiError(response_url(url, size, offset), 504,
                               f"the gateway timed out even for pages of {size} links (the smallest page, after "
                               f"{self.smaller_pages} smaller pages and {self.client.retries} retries with back-off); "
                               f"the Graph API is overloaded for this paper: run the fetch again later to resume, "
                               f"or use the bulk route (sdr data fetch s2ag_bulk_*)")
            if response.status == 400 and offset > 0:
                # past the links the API serves for this paper: a stated truncation, not an error
                pages[-1] = {**pages[-1], "truncated": True, "cap": offset}
                pages[-1].pop("next", None)
                self.truncated += 1
                return pages
            if response.status == 404:
                return None
            if response.status != 200:
                raise ApiError(response_url(url, size, offset), response.status,
                               response.body.decode("utf-8", "replace"))
            try:
                page = response.json()
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise ApiError(url, 200, f"not JSON ({error})") from None
            if not isinstance(page, dict) or not isinstance(page.get("data"), list):
                raise ApiError(url, 200, f"expected a page {{offset, next?, data: [...]}}, got {str(page)[:200]}")
            pages.append({"paperId": paper_id, **page})
            if page.get("next") is None:
                return pages
            offset = int(page["next"])

    def _note_missing(self, paper_id: str, kind: str, status: int = 404) -> None:
        self.missing += 1
        with (self.folder / "missing.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"paperId": paper_id, "kind": kind, "status": status}) + "\n")

    def fetch_links(self, paper_ids: Iterable[str], kind: str, desc: str | None = None) -> int:
        """All pages of ``kind`` for every id not yet complete; returns the number of ids fetched now."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        path = self.folder / f"{kind}.jsonl"
        wanted = list(dict.fromkeys(map(str, paper_ids)))
        done = _complete_anchors(path) | {m["paperId"] for m in self._missing(kind)}
        todo = [pid for pid in wanted if pid not in done]
        phase = desc or kind
        self.status.update(phase, len(wanted) - len(todo), len(wanted), "papers", force=True)
        with path.open("a", encoding="utf-8") as handle:
            for number, paper_id in enumerate(tqdm(todo, desc=phase, unit="paper", disable=not self.progress), 1):
                pages = self._pages(paper_id, kind)
                if pages is None:
                    self._note_missing(paper_id, kind)
                else:
                    handle.write("".join(json.dumps(page) + "\n" for page in pages))
                    handle.flush()
                self.status.update(phase, len(wanted) - len(todo) + number, len(wanted), "papers")
        self.status.update(phase, len(wanted), len(wanted), "papers", force=True)
        return len(todo)

    def _missing(self, kind: str) -> list[dict]:
        return [r for r in _jsonl_records(self.folder / "missing.jsonl") if r.get("kind") == kind]

    def _batch(self, batch: list[str]) -> list:
        records = self.client.json("POST", f"{GRAPH_API}/paper/batch", {"fields": PAPER_FIELDS},
                                   payload={"ids": [api_id(i) for i in batch]})
        if not isinstance(records, list) or len(records) != len(batch):
            raise ApiError(f"{GRAPH_API}/paper/batch", 200,
                           f"expected a list of {len(batch)} records (null for unknown ids)")
        return records

    def fetch_papers(self, paper_ids: Iterable[str]) -> int:
        """Titles and abstracts of ``paper_ids`` not yet in ``papers.jsonl`` (batches of 500)."""
        path = self.folder / "papers.jsonl"
        have = _ids_in(path, "paperId") | {m["paperId"] for m in self._missing("papers")}
        todo = [pid for pid in dict.fromkeys(map(str, paper_ids)) if pid not in have]
        batches = [todo[i:i + BATCH_LIMIT] for i in range(0, len(todo), BATCH_LIMIT)]
        with path.open("a", encoding="utf-8") as handle:
            for number, batch in enumerate(tqdm(batches, desc="papers", unit="batch", disable=not self.progress), 1):
                records = self._batch(batch)
                lines = []
                for paper_id, record in zip(batch, records):
                    if record is None:
                        self._note_missing(paper_id, "papers")
                        continue
                    lines.append(json.dumps({**record, "paperId": record.get("paperId") or paper_id}) + "\n")
                handle.write("".join(lines))
                handle.flush()
                self.status.update("papers' titles and abstracts", number, len(batches), "batches")
        return len(todo)

    def resolve_corpus_ids(self, ids: Iterable[str]) -> list[str]:
        """S2 paper ids (sha) of ``CorpusId:<n>`` ids (FLeW releases corpus ids), through ``/paper/batch``; the
        records go to ``papers.jsonl`` (their ``externalIds.CorpusId`` keeps the mapping), so a rerun asks only
        for the ones not there yet. Ids the API does not know are noted in ``missing.jsonl`` and left out."""
        path = self.folder / "papers.jsonl"
        ids = list(dict.fromkeys(map(str, ids)))
        wrong = [i for i in ids if not i.startswith("CorpusId:") or not i.split(":", 1)[1].isdigit()]
        if wrong:
            raise ValueError(f"resolve_corpus_ids: expected ids CorpusId:<digits>, got {wrong[:3]}")
        wanted = [i.split(":", 1)[1] for i in ids]
        known = {}
        for record in _jsonl_records(path):
            corpus_id = (record.get("externalIds") or {}).get("CorpusId")
            if corpus_id is not None and record.get("paperId"):
                known[str(corpus_id)] = str(record["paperId"])
        missing = {m["paperId"] for m in self._missing("papers")}
        todo = [f"CorpusId:{c}" for c in wanted if c not in known and f"CorpusId:{c}" not in missing]
        with path.open("a", encoding="utf-8") as handle:
            for start in tqdm(range(0, len(todo), BATCH_LIMIT), desc="corpus ids", unit="batch",
                              disable=not self.progress):
                batch = todo[start:start + BATCH_LIMIT]
                lines = []
                for requested, record in zip(batch, self._batch(batch)):
                    if record is None or not record.get("paperId"):
                        self._note_missing(requested, "papers")
                        continue
                    corpus_id = requested.split(":", 1)[1]
                    record = {**record, "externalIds": {**(record.get("externalIds") or {}), "CorpusId": int(corpus_id)}}
                    known[corpus_id] = str(record["paperId"])
                    lines.append(json.dumps(record) + "\n")
                handle.write("".join(lines))
                handle.flush()
        return [known[c] for c in wanted if c in known]

    def referenced_ids(self, anchors: Iterable[str]) -> list[str]:
        """The papers the anchors cite (from the written reference pages), in order of appearance."""
        anchors = set(map(str, anchors))
        found: dict[str, None] = {}
        path = self.folder / "references.jsonl"
        if not path.exists():
            return []
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                page = json.loads(line)
                if str(page.get("paperId")) not in anchors:
                    continue
                for link in page.get("data") or []:
                    other = (link or {}).get("citedPaper") or {}
                    if other.get("paperId"):
                        found.setdefault(str(other["paperId"]), None)
        return list(found)

    def fetch(self, anchors: list[str], kinds: tuple[str, ...] = KINDS, references_of_references: bool = True) -> dict:
        """The whole fetch; returns counts (anchors, second-hop papers, requests, missing ids, truncated lists)."""
        anchors = list(dict.fromkeys(map(str, anchors)))
        for anchor in anchors:
            api_id(anchor)  # every id in a documented form before the first request
        (self.folder / "anchors.txt").write_text("".join(f"{a}\n" for a in anchors), encoding="utf-8")
        hours = len(anchors) * (len(kinds) + 1 / BATCH_LIMIT) * self.client.interval / 3600
        print(f"Semantic Scholar: {len(anchors):,} anchors × {len(kinds)} link kinds ≥ "
              f"{len(anchors) * len(kinds):,} requests at {1 / self.client.interval:g}/s ≈ {hours:.1f} h"
              + (" before the references of references (one request each)" if references_of_references else "")
              + f"; writing {self.folder}, resumable")
        for kind in kinds:
            self.fetch_links(anchors, kind, desc=f"{kind} of anchors")
        second_hop = []
        if references_of_references:
            anchor_set = set(anchors)
            second_hop = [pid for pid in self.referenced_ids(anchors) if pid not in anchor_set]
            print(f"references of references: {len(second_hop):,} cited papers, one request each "
                  f"≈ {len(second_hop) * self.client.interval / 3600:.1f} h")
            self.fetch_links(second_hop, "references", desc="references of references")
        for kind in KINDS:  # read_s2_citations needs both files; a kind not fetched is an empty file
            (self.folder / f"{kind}.jsonl").touch()
        self.fetch_papers(anchors)
        truncated = {kind: len(_read_pages(self.folder / f"{kind}.jsonl")[1]) for kind in KINDS}
        missing = _jsonl_records(self.folder / "missing.jsonl")
        return {"anchors": len(anchors), "references_of_references": len(second_hop),
                "requests": self.client.requests, "missing": len(missing),
                "truncated_references": truncated["references"], "truncated_citations": truncated["citations"],
                "smaller_pages": self.smaller_pages, "rate_limited_retries": self.client.retried["rate_limited"]}


def response_url(url: str, limit: int, offset: int) -> str:
    return f"{url}?limit={limit}&offset={offset}"


# ------------------------------------------------------------------------------------------- anchors


def read_triple_queries(path: str | Path) -> list[str]:
    """Query paper ids (first column) of a SciNCL triples CSV (``query,positive,negative`` S2 ids, an optional
    header row), in order of first appearance; a malformed row is an error naming the line."""
    path = Path(path)
    queries: dict[str, None] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for line_number, row in enumerate(csv.reader(handle), start=1):
            if not row:
                continue
            if len(row) < 3:
                raise ValueError(f"{path}:{line_number}: expected query,positive,negative ids, got {row!r}")
            if line_number == 1 and not _HEX_ID.match(row[0].strip()) and not row[0].strip().isdigit():
                continue  # a header row
            queries.setdefault(row[0].strip(), None)
    if not queries:
        raise ValueError(f"{path}: no triples; expected rows query,positive,negative")
    return list(queries)


def anchors_for(dataset) -> list[str]:
    """The anchor papers of a registry dataset fetched by this module: the thesis' are SciNCL's w/o-leakage
    queries (it says so); FLeW's are its released query list (the queries of ``flew_triplets``, S2 corpus ids,
    returned as ``CorpusId:<n>``)."""
    from sdr import datasets

    if dataset.name == "s2_citations_thesis":
        folder = datasets.resolve("specter_wol")
        return read_triple_queries(folder / "specter-wol__train_triples.csv")
    if dataset.name == "s2ag_citations_flew":
        from sdr.methods import flew

        folder = datasets.resolve("flew_triplets")
        released = {facet: flew.read_released_triplets(folder / f"{facet}_training_triplet.csv")
                    for facet in flew.FACETS}
        return [f"CorpusId:{query}" for query in flew.query_list(released)[0]]
    raise ValueError(f"{dataset.name}: no anchor list is defined for the semantic_scholar fetcher")


def fetch_dataset(dataset, folder: Path, progress: bool = True, client: Client | None = None,
                  anchors: list[str] | None = None, limit: int = 0) -> Path:
    """``sdr data fetch s2_citations_thesis`` (and FLeW's graph): anchors from the registry, every link page,
    the references of the references (the thesis' local graph), the anchors' texts. ``limit`` caps the anchors
    (0: all), for a first look."""
    if client is None and not os.environ.get("S2_API_KEY"):
        print("S2_API_KEY is not set: the public rate limit applies and many requests will be refused (429) and "
              "retried; ask for a key at https://www.semanticscholar.org/product/api")
    anchors = anchors if anchors is not None else anchors_for(dataset)
    if limit:
        anchors = anchors[:limit]
    completion.begin(folder)
    fetcher = CitationFetcher(folder, client, progress)
    requested = len(anchors)
    if any(str(a).startswith("CorpusId:") for a in anchors):
        anchors = fetcher.resolve_corpus_ids(anchors)  # the Graph API pages are keyed by paperId
    counts = fetcher.fetch(anchors)
    completion.write_record(folder, dataset.name, "semantic_scholar", {"anchors_requested": requested, **counts},
                            notes=[f"link lists longer than the Graph API's cap of {LINK_CAP:,} are cut there "
                                   "(their last page says \"truncated\": true)"])
    return folder
