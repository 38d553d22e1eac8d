"""Semantic Scholar Graph API → the citation pages :func:`sdr.corpus.read_s2_citations` reads.

For each anchor paper it fetches every page of ``GET /paper/{id}/references`` and ``…/citations`` with the
link fields ``contexts, intents, contextsWithIntent, isInfluential`` and the other paper's ``title, abstract``
(the thesis §4.3: "their citations and references and their corresponding intents"), optionally the references
of each reference ("for each reference we retrieved their references along with their intent"), and the
anchors' own titles and abstracts through ``POST /paper/batch``. Output, in ``folder``:

* ``references.jsonl`` / ``citations.jsonl``: one API page a line, ``{"paperId": <anchor>, "offset", "next"?,
  "data": [...]}``: the page exactly as the API returned it, plus the anchor's id;
* ``papers.jsonl``: ``/paper/batch`` records ``{"paperId", "title", "abstract", ...}``;
* ``anchors.txt``: the anchors, one id a line (the query papers of the chapter);
* ``missing.jsonl``: ``{"paperId", "kind", "status"}`` for ids the API does not know (404), counted, not fatal.

All pages of one anchor are appended together, so an interrupted fetch resumes at the first anchor whose pages
are not all written (a torn last line is cut off first). The API key comes from ``S2_API_KEY``; without one
the public rate limit applies and requests are often refused (HTTP 429: retried with back-off).
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from tqdm.auto import tqdm

from sdr.fetchers.http import ApiError, Client

GRAPH_API = "https://api.semanticscholar.org/graph/v1"
LINK_FIELDS = "contexts,intents,contextsWithIntent,isInfluential,title,abstract"
PAPER_FIELDS = "title,abstract,externalIds,year"
PAGE_LIMIT = 1000  # the API's maximum for /references and /citations
BATCH_LIMIT = 500  # the API's maximum ids per /paper/batch call
KINDS = ("references", "citations")
OTHER_PAPER = {"references": "citedPaper", "citations": "citingPaper"}


def _complete_anchors(path: Path) -> set[str]:
    """Anchors whose last written page has no ``next`` (all their pages are there). Cuts a torn last line."""
    done: set[str] = set()
    if not path.exists():
        return done
    raw = path.read_bytes()
    if raw and not raw.endswith(b"\n"):
        keep = raw.rfind(b"\n") + 1
        path.write_bytes(raw[:keep])  # an interrupted append: drop the torn line, its anchor is fetched again
        raw = raw[:keep]
    last_page: dict[str, dict] = {}
    for line_number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            page = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{line_number}: not valid JSON ({error.msg}); expected one API page a line "
                             f"(delete the file to fetch again)") from None
        last_page[str(page.get("paperId"))] = page
    return {anchor for anchor, page in last_page.items() if page.get("next") is None}


def _ids_in(path: Path, key: str) -> set[str]:
    if not path.exists():
        return set()
    return {str(json.loads(line)[key]) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


class CitationFetcher:
    """Fetch citation pages for anchors into ``folder`` (see the module docstring)."""

    def __init__(self, folder: str | Path, client: Client | None = None, progress: bool = True):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.client = client or Client()
        self.progress = progress
        self.missing = 0

    def _pages(self, paper_id: str, kind: str) -> list[dict] | None:
        pages, offset = [], 0
        while True:
            page = self.client.json("GET", f"{GRAPH_API}/paper/{paper_id}/{kind}",
                                    {"fields": LINK_FIELDS, "limit": PAGE_LIMIT, "offset": offset}, allow=(200, 404))
            if page is None:
                return None
            if not isinstance(page, dict) or not isinstance(page.get("data"), list):
                raise ApiError(f"{GRAPH_API}/paper/{paper_id}/{kind}", 200,
                               f"expected a page {{offset, next?, data: [...]}}, got {str(page)[:200]}")
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
        done = _complete_anchors(path) | {m["paperId"] for m in self._missing(kind)}
        todo = [pid for pid in dict.fromkeys(map(str, paper_ids)) if pid not in done]
        with path.open("a", encoding="utf-8") as handle:
            for paper_id in tqdm(todo, desc=desc or kind, unit="paper", disable=not self.progress):
                pages = self._pages(paper_id, kind)
                if pages is None:
                    self._note_missing(paper_id, kind)
                    continue
                handle.write("".join(json.dumps(page) + "\n" for page in pages))
                handle.flush()
        return len(todo)

    def _missing(self, kind: str) -> list[dict]:
        path = self.folder / "missing.jsonl"
        if not path.exists():
            return []
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [r for r in records if r.get("kind") == kind]

    def fetch_papers(self, paper_ids: Iterable[str]) -> int:
        """Titles and abstracts of ``paper_ids`` not yet in ``papers.jsonl`` (batches of 500)."""
        path = self.folder / "papers.jsonl"
        have = _ids_in(path, "paperId") | {m["paperId"] for m in self._missing("papers")}
        todo = [pid for pid in dict.fromkeys(map(str, paper_ids)) if pid not in have]
        batches = [todo[i:i + BATCH_LIMIT] for i in range(0, len(todo), BATCH_LIMIT)]
        with path.open("a", encoding="utf-8") as handle:
            for batch in tqdm(batches, desc="papers", unit="batch", disable=not self.progress):
                records = self.client.json("POST", f"{GRAPH_API}/paper/batch", {"fields": PAPER_FIELDS},
                                           payload={"ids": batch})
                if not isinstance(records, list) or len(records) != len(batch):
                    raise ApiError(f"{GRAPH_API}/paper/batch", 200,
                                   f"expected a list of {len(batch)} records (null for unknown ids)")
                for paper_id, record in zip(batch, records):
                    if record is None:
                        self._note_missing(paper_id, "papers")
                        continue
                    handle.write(json.dumps({**record, "paperId": record.get("paperId") or paper_id}) + "\n")
                handle.flush()
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
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    record = json.loads(line)
                    corpus_id = (record.get("externalIds") or {}).get("CorpusId")
                    if corpus_id is not None:
                        known[str(corpus_id)] = str(record["paperId"])
        missing = {m["paperId"] for m in self._missing("papers")}
        todo = [f"CorpusId:{c}" for c in wanted if c not in known and f"CorpusId:{c}" not in missing]
        with path.open("a", encoding="utf-8") as handle:
            for start in tqdm(range(0, len(todo), BATCH_LIMIT), desc="corpus ids", unit="batch",
                              disable=not self.progress):
                batch = todo[start:start + BATCH_LIMIT]
                records = self.client.json("POST", f"{GRAPH_API}/paper/batch", {"fields": PAPER_FIELDS},
                                           payload={"ids": batch})
                if not isinstance(records, list) or len(records) != len(batch):
                    raise ApiError(f"{GRAPH_API}/paper/batch", 200,
                                   f"expected a list of {len(batch)} records (null for unknown ids)")
                for requested, record in zip(batch, records):
                    if record is None or not record.get("paperId"):
                        self._note_missing(requested, "papers")
                        continue
                    corpus_id = requested.split(":", 1)[1]
                    record = {**record, "externalIds": {**(record.get("externalIds") or {}), "CorpusId": int(corpus_id)}}
                    known[corpus_id] = str(record["paperId"])
                    handle.write(json.dumps(record) + "\n")
                handle.flush()
        return [known[c] for c in wanted if c in known]

    def referenced_ids(self, anchors: Iterable[str]) -> list[str]:
        """The papers the anchors cite (from the written reference pages), in order of appearance."""
        anchors = set(map(str, anchors))
        found: dict[str, None] = {}
        path = self.folder / "references.jsonl"
        if not path.exists():
            return []
        for line in path.read_text(encoding="utf-8").splitlines():
            page = json.loads(line)
            if str(page.get("paperId")) not in anchors:
                continue
            for link in page.get("data") or []:
                other = (link or {}).get("citedPaper") or {}
                if other.get("paperId"):
                    found.setdefault(str(other["paperId"]), None)
        return list(found)

    def fetch(self, anchors: list[str], kinds: tuple[str, ...] = KINDS, references_of_references: bool = True) -> dict:
        """The whole fetch; returns counts (anchors, second-hop papers, requests, missing ids)."""
        anchors = list(dict.fromkeys(map(str, anchors)))
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
            second_hop = [pid for pid in self.referenced_ids(anchors) if pid not in set(anchors)]
            print(f"references of references: {len(second_hop):,} cited papers, one request each "
                  f"≈ {len(second_hop) * self.client.interval / 3600:.1f} h")
            self.fetch_links(second_hop, "references", desc="references of references")
        for kind in KINDS:  # read_s2_citations needs both files; a kind not fetched is an empty file
            (self.folder / f"{kind}.jsonl").touch()
        self.fetch_papers(anchors)
        return {"anchors": len(anchors), "references_of_references": len(second_hop),
                "requests": self.client.requests, "missing": self.missing}


# ------------------------------------------------------------------------------------------- anchors
_HEX_ID = re.compile(r"^[0-9a-f]{40}$")


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
    fetcher = CitationFetcher(folder, client, progress)
    if any(str(a).startswith("CorpusId:") for a in anchors):
        anchors = fetcher.resolve_corpus_ids(anchors)  # the Graph API pages are keyed by paperId
    fetcher.fetch(anchors)
    return folder
