"""The bulk route: Semantic Scholar's Datasets API → the folders the chapters read, filtered out of core by DuckDB.

A Graph API crawl asks one paper at a time (FLeW's 216 K anchors and their second hop: weeks at 1 request/s). The
Datasets API serves each dataset of a release as gzipped JSONL shards behind pre-signed S3 links
(``GET /datasets/v1/release/{release}/dataset/{name}`` → ``{"name", "description", "README", "files": [url, …]}``,
API key required); this module downloads every shard once, filters it with DuckDB to the ids a chapter needs
(``read_json`` over the gzipped file, a semi-join against the id table; out of core with a memory limit and a
spill folder) and keeps only what it needs:

* ``s2ag_bulk_flew`` / ``s2ag_bulk_thesis`` — the layout of the Graph API fetch they replace
  (:mod:`sdr.fetchers.semantic_scholar`, read by :func:`sdr.corpus.read_s2_citations`): ``references.jsonl`` and
  ``citations.jsonl`` (one page of at most 1,000 links a line, ``{"paperId", "offset", "next"?, "data"}``),
  ``papers.jsonl`` (``{"paperId", "paperSha", "title", "abstract", "year", "externalIds": {…, "CorpusId"}}``),
  ``anchors.txt`` and ``missing.jsonl`` — with S2 **corpus ids** as paper ids (the ``citations`` dataset has no
  other). Every paper record, the anchors' and the linked papers' in the pages, also carries ``paperSha``: its 40-hex
  S2 paper id (the Graph API's ``paperId``, which SciDocs keys its papers by), parsed from the ``papers`` dataset's
  ``url`` (``https://www.semanticscholar.org/paper/<sha>``, :func:`sha_from_url`); a kept paper whose url gives none
  is listed in ``missing.jsonl`` and counted (``papers_without_sha``). The
  ``citations`` records carry ``contexts``, link-level ``intents`` and ``isinfluential``, not the Graph API's
  ``contextsWithIntent`` (the completion record says so; :func:`sdr.corpus.read_s2_citations` counts such links).
  The thesis' references of references take a second pass over the citations shards. There is no 9,999-link cap.
* ``s2ag_bulk_wol_texts`` — the titles and abstracts of every paper of SciNCL's released w/o-leakage triples
  (``specter_wol``: 680,967 corpus ids, A.4), from the ``papers`` and ``abstracts`` datasets filtered to those ids:
  ``papers.jsonl`` in the Graph API's ``/paper/batch`` layout (``{"paperId": corpus id, "title", "abstract", "year",
  "externalIds"}``, the layout :func:`sdr.corpus.read_s2_citations` reads), ``missing.jsonl`` (the ids the papers
  dataset does not hold) and ``ids.txt`` (every id asked for); :func:`text_ids_for` reads the ids.
* ``s2orc_citation_graph`` — SciNCL's graph: ``edges/citations-<shard>.tsv.gz`` (``citing<TAB>cited`` corpus ids, the
  edges whose two papers are in the node set: the release's ``s2orc`` dataset by default) and
  ``graph_stats.json`` (release, node set, nodes, edges, against SciNCL's Table 4), read by ``sdr graph embed``.

Every shard is downloaded to a ``.part`` file (resumed with an HTTP ``Range`` after a dropped connection, its
length checked), filtered, marked done in ``work/done.jsonl`` and deleted: an interrupted fetch resumes at the
next shard. A dropped connection or a 5xx is retried under the project's retry policy
(:class:`sdr.fetchers.http.RetryPolicy`); links that expired (S3 answers 400/403 a week after the listing) are listed
again. The release is the latest or one named with ``sdr data fetch NAME --release ID`` (checked against the API's
release listing), fixed at the first run (``release.json``), so a resume never mixes releases; the completion record
gives it. Progress is one bar in bytes with an ETA per pass, its total re-estimated from the real sizes of the shards
downloaded so far; :func:`bulk_plan` states the download size and time before anything starts, estimated from
records × bytes a record since the listing gives no sizes (and chapters' cost plans can call it:
:func:`bulk_fetch_work`). The completion record (:mod:`sdr.fetchers.completion`) is written last.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from sdr.fetchers import completion
from sdr.fetchers.http import (NETWORK_ERRORS, ApiError, Client, RetryPolicy, retry_after_seconds,
                              retryable_status)

DATASETS_API = "https://api.semanticscholar.org/datasets/v1"
PAGE_LINKS = 1000  # links a written page holds (the Graph API's largest page)
DOWNLOAD_ATTEMPTS = 8  # retries of one shard download (each resumes with Range where the last one stopped)
BLOCK = 1 << 20

#: Gzipped bytes a record takes, measured on Semantic Scholar's public samples of each dataset (100 records of
#: citations, papers and abstracts, 3 of s2orc; ``samples/<name>/<name>-sample.jsonl.gz`` as mirrored in
#: aliabusaleh/bdma-upc-sdm-lab @ 9d39df4), and records in a release (Kinney et al. 2023, arXiv:2301.10140v2:
#: 225 M papers, 2.8 B citation edges; abstracts at most one a paper; S2ORC's README: 12.7 M full texts).
#: :func:`bulk_plan` multiplies them: an estimate (the Datasets API lists a dataset's shard links, not their sizes);
#: during a fetch the progress bar's total is re-estimated from the real sizes of the shards downloaded so far.
BYTES_PER_RECORD = {"citations": 104, "papers": 190, "abstracts": 492, "s2orc": 21_228}
RECORDS_PER_RELEASE = {"citations": 2_800_000_000, "papers": 225_000_000, "abstracts": 225_000_000,
                       "s2orc": 12_700_000}
#: Gzipped megabytes per second DuckDB filters on one 2-core machine of this project: 308 K citations records/s ×
#: the public sample's 104 bytes a record (``benchmarks/bench_bulk_filter.py``, raw output
#: ``benchmarks/results/bulk_filter.txt``).
FILTER_MB_PER_S = 32.0
SCINCL_TABLE4 = {"nodes": 52_526_134, "edges": 463_697_639}
RECENT_RELEASES_SHOWN = 8  # releases an unknown --release's error lists (the API has one a week)


# ---------------------------------------------------------------------------------------------- the routes
@dataclass(frozen=True)
class Pass:
    """One streaming pass over the shards of one dataset: ``purpose`` names the filter (see :class:`BulkFetch`)."""

    dataset: str
    purpose: str


@dataclass(frozen=True)
class Route:
    """What a registry dataset of this fetcher reads: its passes, in order, and its output ``kind``."""

    kind: str  # "pages" (the Graph API fetch's layout) or "edges" (an edge list)
    passes: tuple[Pass, ...]
    second_hop: bool = False  # references of references (the thesis)


ROUTES = {
    "s2ag_bulk_flew": Route("pages", (Pass("citations", "links"), Pass("papers", "papers"),
                                      Pass("abstracts", "abstracts"))),
    "s2ag_bulk_thesis": Route("pages", (Pass("citations", "links"), Pass("citations", "second_hop"),
                                        Pass("papers", "papers"), Pass("abstracts", "abstracts")), second_hop=True),
    "s2orc_citation_graph": Route("edges", (Pass("s2orc", "node_ids"), Pass("citations", "edges"))),
    # the texts of given corpus ids (no citations pass): SciNCL's w/o-leakage triples' papers
    "s2ag_bulk_wol_texts": Route("texts", (Pass("papers", "papers"), Pass("abstracts", "abstracts"))),
}
#: Where a ``texts`` route's ids come from: ``{bulk dataset: (registry dataset, file of query,positive,negative
#: corpus-id triples)}`` (:func:`text_ids_for`).
TEXT_IDS = {"s2ag_bulk_wol_texts": ("specter_wol", "specter-wol__train_triples.csv")}


def bulk_plan(dataset: str, shard_bytes: dict[str, int] | None = None, bandwidth_mb_s: float = 25.0,
              filter_mb_s: float = FILTER_MB_PER_S) -> dict:
    """What fetching ``dataset`` through the bulk route downloads and how long it takes, stated before it starts.

    ``shard_bytes``: ``{dataset: total gzipped bytes}`` of a release when the caller knows them (the Datasets API's
    listing does not give them, so :meth:`BulkFetch.run` states the estimate), else the estimate records × bytes a
    record (:data:`BYTES_PER_RECORD`). Time = bytes ÷ bandwidth +
    bytes ÷ DuckDB's filter rate (the two are sequential per shard). Returns ``{"passes": [(dataset, purpose,
    bytes)], "bytes", "hours", "estimated"}``."""
    route = ROUTES[dataset]
    passes, total, estimated = [], 0, False
    for step in route.passes:
        if shard_bytes and step.dataset in shard_bytes:
            size = int(shard_bytes[step.dataset])
        else:
            size, estimated = RECORDS_PER_RELEASE[step.dataset] * BYTES_PER_RECORD[step.dataset], True
        passes.append((step.dataset, step.purpose, size))
        total += size
    seconds = total / (bandwidth_mb_s * 1e6) + total / (filter_mb_s * 1e6)
    return {"passes": passes, "bytes": total, "hours": seconds / 3600, "estimated": estimated,
            "bandwidth_mb_s": bandwidth_mb_s, "filter_mb_s": filter_mb_s}


def describe_plan(dataset: str, plan: dict) -> str:
    passes = ", ".join(f"{name} ({purpose}) {size / 1e9:,.0f} GB" for name, purpose, size in plan["passes"])
    return (f"{dataset} through the Semantic Scholar Datasets API: {plan['bytes'] / 1e12:.2f} TB gzipped to stream "
            f"({passes}{'; estimated from records × bytes a record' if plan['estimated'] else ''}) ≈ "
            f"{plan['hours']:.1f} h at {plan['bandwidth_mb_s']:g} MB/s download and {plan['filter_mb_s']:g} MB/s "
            f"DuckDB filtering; resumable per shard")


def bulk_fetch_work(dataset: str, part: str, **plan_options):
    """A cost-plan line (:class:`sdr.plan.Work`, kind ``fetch``) of the bulk fetch of ``dataset``."""
    from sdr.plan import Work

    plan = bulk_plan(dataset, **plan_options)
    return Work(part=part, what=f"{dataset}: Semantic Scholar bulk datasets, filtered with DuckDB", kind="fetch",
                download_bytes=plan["bytes"], hours=plan["hours"],
                how=f"{plan['bandwidth_mb_s']:g} MB/s download + {plan['filter_mb_s']:g} MB/s filtering"
                    + (" (sizes estimated)" if plan["estimated"] else ""))


# ---------------------------------------------------------------------------------------------- the API
#: The file a bulk fetch fixes its release in at the first run (``{"release_id", "datasets"}``), kept by every resume.
RELEASE_FILE = "release.json"


def fixed_release(folder: str | Path) -> dict | None:
    """The release a bulk fetch in ``folder`` fixed (its :data:`RELEASE_FILE`), or None before its first run; a file
    without ``release_id`` is an error naming it."""
    path = Path(folder) / RELEASE_FILE
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(record, dict) or "release_id" not in record:
        raise ValueError(f"{path}: expected the bulk fetch's {{release_id, ...}}, got {str(record)[:200]}")
    return record


class DatasetsApi:
    """The Datasets API's JSON endpoints through :class:`Client` (the API key, retries, rate limit)."""

    def __init__(self, client: Client | None = None, base: str = DATASETS_API):
        self.client = client or Client()
        self.base = base

    def releases(self) -> list[str]:
        listing = self.client.json("GET", f"{self.base}/release/")
        if not isinstance(listing, list):
            raise ApiError(f"{self.base}/release/", 200, f"expected a list of release ids, got {str(listing)[:200]}")
        return [str(r) for r in listing]

    def release(self, release: str = "latest") -> dict:
        answer = self.client.json("GET", f"{self.base}/release/{release}")
        if not isinstance(answer, dict) or "release_id" not in answer:
            raise ApiError(f"{self.base}/release/{release}", 200,
                           f"expected {{release_id, README, datasets: [...]}}, got {str(answer)[:200]}")
        return answer

    def files(self, release: str, dataset: str) -> list[str]:
        """The dataset's shard links (pre-signed: they expire)."""
        url = f"{self.base}/release/{release}/dataset/{dataset}"
        answer = self.client.json("GET", url)
        files = answer.get("files") if isinstance(answer, dict) else None
        if not isinstance(files, list) or not files:
            raise ApiError(url, 200, f"expected {{name, description, README, files: [url, …]}}, got {str(answer)[:200]}")
        return [str(f) for f in files]


def shard_key(url: str) -> str:
    """A shard's name, stable across listings (the link's path without the signature)."""
    return url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


#: The ``papers`` dataset's ``url``: the paper's page on Semantic Scholar, ``https://www.semanticscholar.org/paper/``
#: and its 40-hex paper id (as in the public sample, ``samples/papers/papers-sample.jsonl``; the website also
#: accepts a title slug before the id).
PAPER_URL = re.compile(r"^https?://(?:www\.)?semanticscholar\.org/paper/(?:[^/?#]+/)?([0-9a-fA-F]{40})/?$")


def sha_from_url(url) -> str | None:
    """The 40-hex S2 paper id (lower case) in a ``papers`` record's ``url``, or None when the url has none (missing,
    or not a Semantic Scholar paper page)."""
    match = PAPER_URL.match(url.strip()) if isinstance(url, str) else None
    return match.group(1).lower() if match else None


@dataclass
class Opened:
    """An answer to a shard request: status, headers (lower-case names) and the body stream (None on errors)."""

    status: int
    headers: dict
    stream: object | None = None


def urllib_opener(url: str, start: int = 0, timeout: float = 120.0) -> Opened:
    request = urllib.request.Request(url, headers={"Range": f"bytes={start}-"} if start else {})
    try:
        answer = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        return Opened(error.code, {k.lower(): v for k, v in (error.headers or {}).items()})
    return Opened(answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer)


def _total_length(opened: Opened, start: int) -> int | None:
    """The shard's full size from ``Content-Range: bytes a-b/total`` or ``Content-Length``."""
    content_range = opened.headers.get("content-range")
    if content_range and "/" in content_range and not content_range.endswith("/*"):
        return int(content_range.rsplit("/", 1)[1])
    length = opened.headers.get("content-length")
    if length is not None:
        return int(length) + (start if opened.status == 206 else 0)
    return None


class ShardDownloader:
    """Shard links of one release, refreshed when they expire, and downloads that resume with ``Range``."""

    def __init__(self, api: DatasetsApi, release: str, opener: Callable[..., Opened] = urllib_opener,
                 sleep: Callable[[float], None] = time.sleep, attempts: int = DOWNLOAD_ATTEMPTS, say=None):
        self.api, self.release, self.opener, self.sleep, self.attempts = api, release, opener, sleep, attempts
        # the project's one retry policy (the client's back-off cap), with more retries: each resumes with Range
        self.policy = RetryPolicy(attempts, api.client.max_backoff_s)
        self.say = say or (lambda message: print(message, file=sys.stderr, flush=True))
        self._links: dict[str, dict[str, str]] = {}
        self.refreshed = 0  # listings fetched again because links had expired
        self.resumed = 0  # downloads resumed with Range after a broken connection

    def links(self, dataset: str, refresh: bool = False) -> dict[str, str]:
        """``{shard key: link}`` of a dataset, in the listing's order."""
        if refresh or dataset not in self._links:
            self._links[dataset] = {shard_key(url): url for url in self.api.files(self.release, dataset)}
        return self._links[dataset]

    def download(self, dataset: str, key: str, target: Path, bar=None) -> int:
        """Download shard ``key`` to ``target`` (via ``target.part``, resumed where a broken connection left it);
        returns its size."""
        part = target.with_name(target.name + ".part")
        part.parent.mkdir(parents=True, exist_ok=True)
        failures = expired = 0
        while True:
            start = part.stat().st_size if part.exists() else 0
            url = self.links(dataset)[key]
            try:
                opened = self.opener(url, start)
            except NETWORK_ERRORS as error:
                opened, problem = None, error
            else:
                problem = None
            if opened is not None and opened.status in (400, 401, 403):
                # S3 answers 400/403 ("Request has expired") for a stale pre-signed link: list the files again
                expired += 1
                if expired > 3:
                    raise ApiError(url.split("?", 1)[0], opened.status, "the shard link is refused even after "
                                   "listing the files again (is S2_API_KEY valid?)")
                self.refreshed += 1
                self.links(dataset, refresh=True)
                continue
            if opened is not None and opened.status == 416 and start:  # the .part is already whole
                os.replace(part, target)
                return target.stat().st_size
            retry_after = None
            if opened is not None and opened.status not in (200, 206):
                if not retryable_status(opened.status):  # e.g. 404: asking again does not help
                    raise ApiError(url.split("?", 1)[0], opened.status, f"shard {key} of {dataset}: download refused")
                problem = ApiError(url.split("?", 1)[0], opened.status, "shard download failed")
                retry_after = retry_after_seconds(opened.headers.get("retry-after"), time.time())
            if problem is None:
                if opened.status == 200 and start:  # the server ignored Range: start over
                    start = 0
                    part.unlink()
                total = _total_length(opened, start)
                try:
                    with part.open("ab") as out, opened.stream as stream:
                        while True:
                            block = stream.read(BLOCK)
                            if not block:
                                break
                            out.write(block)
                            if bar is not None:
                                bar.update(len(block))
                except NETWORK_ERRORS as error:
                    problem = error
                else:
                    size = part.stat().st_size
                    if total is None or size == total:
                        os.replace(part, target)
                        return size
                    if size > total:
                        part.unlink()  # longer than the server says: corrupt, start again
                    problem = ConnectionError(f"{key}: {size:,} of {total:,} bytes arrived")
            if self.policy.gives_up(failures):
                raise ApiError(url.split("?", 1)[0], getattr(opened, "status", 0) or 0,
                               f"download failed {failures + 1} times: {problem} (run the fetch again to resume)")
            self.resumed += 1
            self.sleep(self.policy.wait_s(failures, retry_after))
            failures += 1


# ---------------------------------------------------------------------------------------------- DuckDB filters
#: The columns read from each dataset's records (others are not parsed into the result); ids as text, since the
#: citations dataset writes them as strings and the others as numbers.
COLUMNS = {
    "citations": {"citingcorpusid": "VARCHAR", "citedcorpusid": "VARCHAR", "isinfluential": "BOOLEAN",
                  "contexts": "VARCHAR[]", "intents": "VARCHAR[]"},
    "papers": {"corpusid": "VARCHAR", "url": "VARCHAR", "title": "VARCHAR", "year": "INTEGER", "externalids": "JSON"},
    "abstracts": {"corpusid": "VARCHAR", "abstract": "VARCHAR"},
    "s2orc": {"corpusid": "VARCHAR"},
}


def _source(path: Path, dataset: str) -> str:
    columns = ", ".join(f"{name}: '{kind}'" for name, kind in COLUMNS[dataset].items())
    return (f"read_json('{path.as_posix()}', format = 'newline_delimited', compression = 'gzip', "
            f"columns = {{{columns}}}, maximum_object_size = 33554432)")


def connect(work: Path, memory_limit: str | None = None, threads: int | None = None):
    """A DuckDB connection that spills to ``work/duckdb-tmp`` beyond ``memory_limit`` (default: a quarter of RAM)."""
    import duckdb

    if memory_limit is None:
        try:
            memory_limit = f"{max(1, os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 4 // 2 ** 30)}GB"
        except (ValueError, OSError, AttributeError):
            memory_limit = "2GB"
    connection = duckdb.connect()
    connection.execute(f"SET memory_limit = '{memory_limit}'")
    connection.execute(f"SET temp_directory = '{(work / 'duckdb-tmp').as_posix()}'")
    connection.execute(f"SET threads = {int(threads or len(os.sched_getaffinity(0)))}")
    connection.execute("SET preserve_insertion_order = false")
    return connection


def _id_table(connection, name: str, ids: Iterable[int]) -> int:
    """A one-column table ``name(id BIGINT)`` of distinct ids."""
    import numpy as np
    import pyarrow as pa

    values = np.unique(np.fromiter((int(i) for i in ids), dtype=np.int64))
    connection.register(f"{name}_arrow", pa.table({"id": values}))
    connection.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT id FROM {name}_arrow")
    connection.unregister(f"{name}_arrow")
    return len(values)


def filter_sql(purpose: str, dataset: str, raw: Path) -> str:
    """The query that keeps a shard's records for ``purpose`` (tables ``anchors``, ``second_hop``, ``nodes`` and
    ``node_set`` hold the ids)."""
    source = _source(raw, dataset)
    if dataset == "citations":
        select = (f"SELECT TRY_CAST(citingcorpusid AS BIGINT) AS citing, TRY_CAST(citedcorpusid AS BIGINT) AS cited, "
                  f"isinfluential, contexts, intents FROM {source}")
        if purpose == "links":  # the anchors' references (cited may be null: a reference S2 did not resolve) and
            return (f"SELECT * FROM ({select}) WHERE citing IN (SELECT id FROM anchors) "  # citations
                    f"OR cited IN (SELECT id FROM anchors)")
        if purpose == "second_hop":  # references of the anchors' references, less the rows the first pass kept
            return (f"SELECT * FROM ({select}) WHERE citing IN (SELECT id FROM second_hop) "
                    f"AND (cited IS NULL OR cited NOT IN (SELECT id FROM anchors))")
        if purpose == "edges":
            return (f"SELECT citing, cited FROM ({select}) WHERE citing IS NOT NULL AND cited IS NOT NULL "
                    f"AND citing IN (SELECT id FROM node_set) AND cited IN (SELECT id FROM node_set)")
    if dataset == "papers" and purpose == "papers":
        return (f"SELECT TRY_CAST(corpusid AS BIGINT) AS corpusid, url, title, year, externalids FROM {source} "
                f"WHERE TRY_CAST(corpusid AS BIGINT) IN (SELECT id FROM nodes)")
    if dataset == "abstracts" and purpose == "abstracts":
        return (f"SELECT TRY_CAST(corpusid AS BIGINT) AS corpusid, abstract FROM {source} "
                f"WHERE TRY_CAST(corpusid AS BIGINT) IN (SELECT id FROM nodes)")
    if dataset == "s2orc" and purpose == "node_ids":
        return f"SELECT DISTINCT TRY_CAST(corpusid AS BIGINT) AS id FROM {source} WHERE corpusid IS NOT NULL"
    raise ValueError(f"no filter for the {dataset} dataset's purpose {purpose!r}")


# ---------------------------------------------------------------------------------------------- the fetch
@dataclass
class BulkFetch:
    """One bulk fetch into ``folder`` (see the module docstring); :meth:`run` does it, resumably."""

    dataset: str
    folder: Path
    api: DatasetsApi
    opener: Callable[..., Opened] = urllib_opener
    release: str = "latest"
    progress: bool = True
    memory_limit: str | None = None
    sleep: Callable[[float], None] = time.sleep
    counts: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.dataset not in ROUTES:
            raise ValueError(f"{self.dataset}: the bulk fetcher builds {', '.join(ROUTES)}")
        self.folder = Path(self.folder)
        self.work = self.folder / "work"
        self.route = ROUTES[self.dataset]
        self._release_checked = False

    # -- bookkeeping
    def check_release(self) -> None:
        """A release asked for by name (``--release``) must be in the API's release listing (``GET /release/``);
        otherwise an error listing the most recent ones. ``latest`` is what the API says it is."""
        if self.release == "latest" or self._release_checked:
            return
        known = self.api.releases()
        if self.release not in known:
            recent = ", ".join(sorted(known, reverse=True)[:RECENT_RELEASES_SHOWN])
            raise ApiError(f"{self.api.base}/release/", 200,
                           f"release {self.release!r} is not in the Datasets API's release listing ({len(known)} "
                           f"releases; the most recent: {recent}); give one of them with --release, or leave "
                           f"--release out for the latest")
        self._release_checked = True

    def _fixed_release(self) -> dict:
        """The release of this fetch: chosen at the first run (``release.json``), kept by every resume."""
        path = self.folder / RELEASE_FILE
        stored = fixed_release(self.folder)
        if stored is not None:
            if self.release not in ("latest", stored["release_id"]):
                raise ValueError(f"{path}: this fetch reads release {stored['release_id']}, not {self.release}; "
                                 f"delete {self.folder} to fetch another release")
            return stored
        self.check_release()
        answer = self.api.release(self.release)
        stored = {"release_id": str(answer["release_id"]),
                  "datasets": sorted(d.get("name", "") for d in answer.get("datasets", []) if isinstance(d, dict))}
        needed = {step.dataset for step in self.route.passes}
        if stored["datasets"] and not needed <= set(stored["datasets"]):
            raise ApiError(f"{self.api.base}/release/{stored['release_id']}", 200,
                           f"the release lacks {sorted(needed - set(stored['datasets']))}")
        self.folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
        return stored

    def _done(self) -> dict[tuple[str, str], dict]:
        path = self.work / "done.jsonl"
        completion.cut_torn_line(path)
        entries = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    entry = json.loads(line)
                    entries[(entry["pass"], entry["shard"])] = entry
        return entries

    def _mark(self, entry: dict) -> None:
        with (self.work / "done.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")

    # -- a pass over every shard of one dataset
    def _pass(self, connection, downloader: ShardDownloader, step: Pass, output: Path, status) -> dict:
        """Download, filter and mark every shard not done yet; the filtered rows of each shard go to
        ``output/<shard>.parquet`` (or, for edges, ``edges/citations-<shard>.tsv.gz``)."""
        name = f"{step.dataset}:{step.purpose}"
        links = downloader.links(step.dataset)
        done = self._done()
        output.mkdir(parents=True, exist_ok=True)
        keys = list(links)
        known = [done[(name, k)]["bytes"] for k in keys if (name, k) in done]
        average = sum(known) / len(known) if known else None
        todo = [k for k in keys if (name, k) not in done]
        estimate = sum(known) + (average or 0) * len(todo)
        bar = tqdm(total=estimate or None, initial=sum(known), unit="B", unit_scale=True, unit_divisor=1024,
                   desc=f"{step.dataset} ({step.purpose})", disable=not self.progress)
        status.update(name, len(keys) - len(todo), len(keys), "shards", force=True)
        try:
            for key in todo:
                raw = self.work / "shards" / key
                size = downloader.download(step.dataset, key, raw, bar)
                stem = key.removesuffix(".gz").removesuffix(".jsonl")
                query = filter_sql(step.purpose, step.dataset, raw)
                if step.purpose == "edges":
                    target = output / f"citations-{stem}.tsv.gz"
                    options = "(FORMAT csv, DELIMITER '\t', HEADER false, COMPRESSION gzip)"
                else:
                    target = output / f"{stem}.parquet"
                    options = "(FORMAT parquet)"
                temporary = target.with_name(f".{target.name}.tmp")
                rows = connection.execute(f"COPY ({query}) TO '{temporary.as_posix()}' {options}").fetchone()[0]
                os.replace(temporary, target)
                raw.unlink()
                self._mark({"pass": name, "shard": key, "bytes": size, "kept": rows})
                known.append(size)
                average = sum(known) / len(known)
                bar.total = int(sum(known) + average * (len(keys) - len(known)))
                bar.refresh()
                status.update(name, len(known), len(keys), "shards")
        finally:
            bar.close()
        entries = [e for (p, _), e in self._done().items() if p == name]
        return {"shards": len(keys), "bytes": sum(e["bytes"] for e in entries), "kept": sum(e["kept"] for e in entries)}

    # -- the whole fetch
    def run(self, anchors: Sequence[int] | None = None, missing_anchors: Sequence[str] = ()) -> dict:
        """Every pass, then the output layout and the completion record. ``anchors``: corpus ids (``pages`` routes);
        ``missing_anchors``: given anchors that could not be resolved to a corpus id (noted in ``missing.jsonl``)."""
        completion.begin(self.folder)
        release = self._fixed_release()
        downloader = ShardDownloader(self.api, release["release_id"], self.opener, self.sleep)
        plan = bulk_plan(self.dataset)  # an estimate: the listing gives no sizes (the bar re-estimates per shard)
        print(describe_plan(self.dataset, plan) + f"; release {release['release_id']}, writing {self.folder}")
        self.work.mkdir(parents=True, exist_ok=True)
        for leftover in self.work.glob("**/.*.tmp"):
            leftover.unlink()  # a filter interrupted before its rename
        connection = connect(self.work, self.memory_limit)
        status = completion.Progress(self.folder)
        passes = {}
        try:
            if self.route.kind == "pages":
                if not anchors:
                    raise ValueError(f"{self.dataset}: no anchor corpus ids to filter the citations to")
                counts = self._pages(connection, downloader, [int(a) for a in anchors], status, passes)
            elif self.route.kind == "texts":
                if not anchors:
                    raise ValueError(f"{self.dataset}: no corpus ids to filter the papers and abstracts to")
                counts = self._texts(connection, downloader, [int(a) for a in anchors], status, passes)
            else:
                counts = self._edges(connection, downloader, status, passes)
        finally:
            connection.close()
        if self.route.kind == "pages":
            with (self.folder / "missing.jsonl").open("a", encoding="utf-8") as handle:
                for given in missing_anchors:
                    handle.write(json.dumps({"paperId": given, "kind": "anchors",
                                             "status": "no corpus id (unknown to /paper/batch)"}) + "\n")
        shutil.rmtree(self.work)
        counts = {"release": release["release_id"], "release_requested": self.release, **counts,
                  **{f"{name} shards": p["shards"] for name, p in passes.items()},
                  **{f"{name} bytes": p["bytes"] for name, p in passes.items()},
                  "links_refreshed": downloader.refreshed, "downloads_resumed": downloader.resumed}
        notes = [f"S2AG release {release['release_id']} through the Datasets API; paper ids are S2 corpus ids"]
        if self.route.kind == "texts":
            notes.append("titles and abstracts of the given corpus ids (papers and abstracts datasets); the ids the "
                         "papers dataset lacks are in missing.jsonl, counted as 'missing'")
        elif self.route.kind == "pages":
            notes.append("the citations dataset gives each link its contexts and link-level intents, not the Graph "
                         "API's contextsWithIntent: per-intent context counts are the link's context count for each "
                         "of its intents (sdr.corpus.read_s2_citations counts such links); no 9,999-link cap")
            notes.append(f"paperSha: each paper's 40-hex S2 paper id from the papers dataset's url; "
                         f"{counts.get('papers_without_sha', 0):,} kept papers have none (listed in missing.jsonl), "
                         f"{counts.get('nodes_not_in_papers', 0):,} papers of the graph are not in the papers dataset")
        else:
            notes.append(f"SciNCL Table 4 (S2ORC 2020): {SCINCL_TABLE4['nodes']:,} nodes, "
                         f"{SCINCL_TABLE4['edges']:,} edges")
        completion.write_record(self.folder, self.dataset, "bulk", counts, notes)
        self.counts = counts
        return counts

    def _pages(self, connection, downloader, anchors: list[int], status, passes) -> dict:
        n_anchors = _id_table(connection, "anchors", anchors)
        links_dir = self.work / "links"
        passes["citations:links"] = self._pass(connection, downloader, Pass("citations", "links"), links_dir, status)
        parts = [f"read_parquet('{(links_dir / '*.parquet').as_posix()}')"]
        second_hop = 0
        if self.route.second_hop:
            connection.execute(f"CREATE OR REPLACE TABLE second_hop AS SELECT DISTINCT cited AS id FROM {parts[0]} "
                               f"WHERE citing IN (SELECT id FROM anchors) AND cited IS NOT NULL "
                               f"AND cited NOT IN (SELECT id FROM anchors)")
            second_hop = connection.execute("SELECT count(*) FROM second_hop").fetchone()[0]
            hop_dir = self.work / "second_hop"
            passes["citations:second_hop"] = self._pass(connection, downloader, Pass("citations", "second_hop"),
                                                        hop_dir, status)
            parts.append(f"read_parquet('{(hop_dir / '*.parquet').as_posix()}')")
        connection.execute("CREATE OR REPLACE TABLE links AS " + " UNION ALL ".join(f"SELECT * FROM {p}" for p in parts))
        connection.execute("CREATE OR REPLACE TABLE nodes AS SELECT id FROM anchors UNION SELECT citing FROM links "
                           "WHERE citing IS NOT NULL UNION SELECT cited FROM links WHERE cited IS NOT NULL")
        for step, purpose in ((Pass("papers", "papers"), "papers"), (Pass("abstracts", "abstracts"), "abstracts")):
            passes[f"{step.dataset}:{purpose}"] = self._pass(connection, downloader, step, self.work / purpose, status)
        connection.execute(f"CREATE OR REPLACE TABLE papers AS SELECT DISTINCT ON (corpusid) * FROM "
                           f"read_parquet('{(self.work / 'papers' / '*.parquet').as_posix()}')")
        connection.execute(f"CREATE OR REPLACE TABLE abstracts AS SELECT DISTINCT ON (corpusid) * FROM "
                           f"read_parquet('{(self.work / 'abstracts' / '*.parquet').as_posix()}')")
        written = write_pages(connection, self.folder, anchors, self.route.second_hop)
        return {"anchors": n_anchors, "references_of_references": second_hop, **written}

    def _texts(self, connection, downloader, ids: list[int], status, passes) -> dict:
        """The papers and abstracts passes filtered to ``ids`` (the ``nodes`` table the filters read), then
        :func:`write_texts`."""
        asked = _id_table(connection, "nodes", ids)
        for step in self.route.passes:
            passes[f"{step.dataset}:{step.purpose}"] = self._pass(connection, downloader, step,
                                                                  self.work / step.purpose, status)
        connection.execute(f"CREATE OR REPLACE TABLE papers AS SELECT DISTINCT ON (corpusid) * FROM "
                           f"read_parquet('{(self.work / 'papers' / '*.parquet').as_posix()}')")
        connection.execute(f"CREATE OR REPLACE TABLE abstracts AS SELECT DISTINCT ON (corpusid) * FROM "
                           f"read_parquet('{(self.work / 'abstracts' / '*.parquet').as_posix()}')")
        return {"ids": asked, **write_texts(connection, self.folder, ids)}

    def _edges(self, connection, downloader, status, passes) -> dict:
        ids_dir = self.work / "node_ids"
        passes["s2orc:node_ids"] = self._pass(connection, downloader, Pass("s2orc", "node_ids"), ids_dir, status)
        connection.execute(f"CREATE OR REPLACE TABLE node_set AS SELECT DISTINCT id FROM "
                           f"read_parquet('{(ids_dir / '*.parquet').as_posix()}')")
        node_set = connection.execute("SELECT count(*) FROM node_set").fetchone()[0]
        edges_dir = self.folder / "edges"
        passes["citations:edges"] = self._pass(connection, downloader, Pass("citations", "edges"), edges_dir, status)
        files = f"'{(edges_dir / 'citations-*.tsv.gz').as_posix()}'"
        table = (f"read_csv({files}, delim = '\t', header = false, columns = {{'citing': 'BIGINT', "
                 f"'cited': 'BIGINT'}}, compression = 'gzip')")
        edges, distinct = connection.execute(f"SELECT count(*), count(DISTINCT (citing, cited)) FROM {table}").fetchone()
        nodes = connection.execute(f"SELECT count(*) FROM (SELECT citing AS id FROM {table} UNION "
                                   f"SELECT cited FROM {table})").fetchone()[0]
        stats = {"release": self._fixed_release()["release_id"],
                 "node_set": "papers of the release's s2orc dataset (both ends of every edge are in it)",
                 "node_set_papers": node_set, "nodes_with_an_edge": nodes, "edge_lines": edges,
                 "distinct_edges": distinct, "scincl_table4": SCINCL_TABLE4}
        (self.folder / "graph_stats.json").write_text(json.dumps(stats, indent=1) + "\n", encoding="utf-8")
        return {"node_set_papers": node_set, "nodes": nodes, "edges": edges, "distinct_edges": distinct}


def write_pages(connection, folder: Path, anchors: Sequence[int], second_hop: bool) -> dict:
    """The Graph API fetch's layout from the filtered tables (``links``, ``papers``, ``abstracts``): per anchor its
    reference and citation pages (at most :data:`PAGE_LINKS` links a page, ``offset``/``next`` as the API pages; an
    empty page for an anchor without links, as the API answers), the reference pages of the anchors' references
    (``second_hop``), ``papers.jsonl`` for the anchors and ``anchors.txt``; every paper record carries its
    ``paperSha`` (None where the url gives none: those papers are listed in ``missing.jsonl`` and counted). Pages
    are written in corpus-id order,
    streamed from DuckDB in batches (never a whole link list in memory)."""
    anchor_list = list(dict.fromkeys(int(a) for a in anchors))
    (folder / "anchors.txt").write_text("".join(f"{a}\n" for a in anchor_list), encoding="utf-8")
    query = ("SELECT l.{anchor} AS anchor, l.{other} AS other, l.isinfluential, l.contexts, l.intents, p.title, "
             "a.abstract, p.url FROM links l LEFT JOIN papers p ON p.corpusid = l.{other} "
             "LEFT JOIN abstracts a ON a.corpusid = l.{other} WHERE l.{anchor} IN (SELECT id FROM {owners}) "
             "ORDER BY anchor, other NULLS LAST, l.contexts::VARCHAR, l.intents::VARCHAR")
    counts = {}
    for kind, anchor, other_end, role in (("references", "citing", "cited", "citedPaper"),
                                          ("citations", "cited", "citing", "citingPaper")):
        owners = ["anchors"] + (["second_hop"] if second_hop and kind == "references" else [])
        written = 0
        with (folder / f"{kind}.jsonl").open("w", encoding="utf-8") as handle:
            for table in owners:
                ids = [row[0] for row in connection.execute(f"SELECT id FROM {table} ORDER BY id").fetchall()]
                cursor = connection.execute(query.format(anchor=anchor, other=other_end, owners=table))
                written += _write_grouped(handle, ids, _group_pages(cursor, role))
        counts[f"{kind}_links"] = written
    counts["unresolved_references"] = connection.execute("SELECT count(*) FROM links WHERE cited IS NULL").fetchone()[0]
    found = 0
    rows = {r[0]: r for r in connection.execute(
        "SELECT p.corpusid, p.title, p.year, p.externalids, a.abstract, p.url FROM papers p LEFT JOIN abstracts a "
        "ON a.corpusid = p.corpusid WHERE p.corpusid IN (SELECT id FROM anchors)").fetchall()}
    with (folder / "papers.jsonl").open("w", encoding="utf-8") as papers, \
            (folder / "missing.jsonl").open("w", encoding="utf-8") as missing:
        counts["papers_without_sha"] = _list_papers_without_sha(connection, missing)
        for corpus_id in anchor_list:
            row = rows.get(corpus_id)
            if row is None:
                missing.write(json.dumps({"paperId": str(corpus_id), "kind": "papers",
                                          "status": "not in the papers dataset"}) + "\n")
                continue
            external = json.loads(row[3]) if isinstance(row[3], str) else (row[3] or {})
            external = {k: v for k, v in (external or {}).items() if v is not None}
            external["CorpusId"] = int(corpus_id)
            papers.write(json.dumps({"paperId": str(corpus_id), "paperSha": sha_from_url(row[5]), "title": row[1],
                                     "abstract": row[4], "year": row[2], "externalIds": external}) + "\n")
            found += 1
    counts["anchors_in_papers"] = found
    # papers of the graph the papers dataset has no record of: no title, abstract or sha (the audit's coverage)
    counts["nodes_not_in_papers"] = connection.execute(
        "SELECT count(*) FROM nodes WHERE id NOT IN (SELECT corpusid FROM papers WHERE corpusid IS NOT NULL)").fetchone()[0]
    return counts


def write_texts(connection, folder: Path, ids: Sequence[int]) -> dict:
    """``papers.jsonl`` (one ``/paper/batch``-shaped record per id the ``papers`` table holds, in corpus-id order,
    ``abstract`` null where the ``abstracts`` table has none), ``missing.jsonl`` (the other ids) and ``ids.txt``
    (every id asked for, distinct, in order), streamed from DuckDB in batches. Returns the counts."""
    asked = sorted(set(int(i) for i in ids))
    (folder / "ids.txt").write_text("".join(f"{i}\n" for i in asked), encoding="utf-8")
    cursor = connection.execute(
        "SELECT n.id, p.corpusid IS NOT NULL, p.title, p.year, p.externalids, a.abstract FROM nodes n "
        "LEFT JOIN papers p ON p.corpusid = n.id LEFT JOIN abstracts a ON a.corpusid = n.id ORDER BY n.id")
    counts = {"papers_found": 0, "with_abstract": 0, "missing": 0}
    with (folder / "papers.jsonl").open("w", encoding="utf-8") as papers, \
            (folder / "missing.jsonl").open("w", encoding="utf-8") as missing:
        while True:
            rows = cursor.fetchmany(10_000)
            if not rows:
                break
            for corpus_id, found, title, year, external, abstract in rows:
                if not found:
                    missing.write(json.dumps({"paperId": str(corpus_id), "kind": "papers",
                                              "status": "not in the papers dataset"}) + "\n")
                    counts["missing"] += 1
                    continue
                external = json.loads(external) if isinstance(external, str) else (external or {})
                external = {k: v for k, v in (external or {}).items() if v is not None}
                external["CorpusId"] = int(corpus_id)
                papers.write(json.dumps({"paperId": str(corpus_id), "title": title, "abstract": abstract,
                                         "year": year, "externalIds": external}) + "\n")
                counts["papers_found"] += 1
                counts["with_abstract"] += bool(abstract)
    return counts


def text_ids_for(dataset) -> list[int]:
    """The corpus ids a ``texts`` route filters to (:data:`TEXT_IDS`): every id of the triples file (query,
    positive and negative), distinct, in order of first appearance. A header row is skipped; a row without three
    all-digit ids is an error naming the file and the line."""
    import csv

    from sdr import datasets

    source, name = TEXT_IDS[dataset.name]
    path = datasets.resolve(source) / name
    ids: dict[int, None] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            if not row:
                continue
            cells = [cell.strip() for cell in row]
            if number == 1 and not cells[0].isdigit():
                continue
            if len(cells) != 3 or not all(cell.isdigit() for cell in cells):
                raise ValueError(f"{path}:{number}: expected three S2 corpus ids (query,positive,negative), got {row!r}")
            ids.update(dict.fromkeys(int(cell) for cell in cells))
    if not ids:
        raise ValueError(f"{path}: no triples (expected query,positive,negative corpus-id rows)")
    return list(ids)


def _list_papers_without_sha(connection, missing) -> int:
    """Write a ``missing.jsonl`` line for every kept paper whose ``url`` gives no 40-hex paper id
    (:func:`sha_from_url`), so no paper loses its sha unnoticed; returns how many."""
    cursor = connection.execute("SELECT corpusid, url FROM papers ORDER BY corpusid")
    without = 0
    while True:
        rows = cursor.fetchmany(10_000)
        if not rows:
            return without
        for corpus_id, url in rows:
            if sha_from_url(url) is None:
                without += 1
                missing.write(json.dumps({"paperId": str(corpus_id), "kind": "paperSha",
                                          "status": f"papers dataset url {url!r} is not "
                                                    "https://www.semanticscholar.org/paper/<40-hex paper id>"}) + "\n")


def _group_pages(cursor, role: str):
    """``(anchor, [link, …])`` from rows ordered by anchor, fetched in batches (never the whole result)."""
    current, links = None, []
    while True:
        rows = cursor.fetchmany(10_000)
        if not rows:
            break
        for anchor, other, influential, contexts, intents, title, abstract, url in rows:
            if anchor != current:
                if current is not None:
                    yield current, links
                current, links = anchor, []
            links.append({"contexts": list(contexts or []), "intents": list(intents or []),
                          "isInfluential": bool(influential),
                          role: {"paperId": None if other is None else str(other), "paperSha": sha_from_url(url),
                                 "title": title, "abstract": abstract}})
    if current is not None:
        yield current, links


def _write_grouped(handle, ids: list[int], groups) -> int:
    """The pages of every id in ``ids`` (sorted), merged with ``groups`` (sorted by id): an id without links gets
    one empty page. Returns the links written."""
    written = 0
    groups = iter(groups)
    pending = next(groups, None)
    for anchor in ids:
        links = []
        while pending is not None and pending[0] < anchor:
            pending = next(groups, None)  # (rows of ids not asked for cannot occur: the query selects by id)
        if pending is not None and pending[0] == anchor:
            links = pending[1]
            pending = next(groups, None)
        for offset in range(0, max(1, len(links)), PAGE_LINKS):
            page = {"paperId": str(anchor), "offset": offset, "data": links[offset:offset + PAGE_LINKS]}
            if offset + PAGE_LINKS < len(links):
                page["next"] = offset + PAGE_LINKS
            handle.write(json.dumps(page) + "\n")
        written += len(links)
    return written


# ---------------------------------------------------------------------------------------------- anchors
def resolve_to_corpus_ids(client: Client, ids: Sequence[str]) -> tuple[list[int], list[str]]:
    """Corpus ids of S2 paper ids through the Graph API's ``/paper/batch`` (fields ``externalIds``, 500 a request:
    SciNCL's 136,820 anchors in 274 requests); all-digit ids are corpus ids already. Returns (corpus ids in order,
    ids the API does not know)."""
    from sdr.fetchers.semantic_scholar import BATCH_LIMIT, GRAPH_API, api_id

    resolved: dict[str, int] = {}
    unknown = []
    todo = []
    for given in dict.fromkeys(map(str, ids)):
        if given.isdigit():
            resolved[given] = int(given)
        elif given.startswith("CorpusId:") and given.split(":", 1)[1].isdigit():
            resolved[given] = int(given.split(":", 1)[1])
        else:
            todo.append(given)
    for start in range(0, len(todo), BATCH_LIMIT):
        batch = todo[start:start + BATCH_LIMIT]
        records = client.json("POST", f"{GRAPH_API}/paper/batch", {"fields": "externalIds"},
                              payload={"ids": [api_id(i) for i in batch]})
        if not isinstance(records, list) or len(records) != len(batch):
            raise ApiError(f"{GRAPH_API}/paper/batch", 200, f"expected a list of {len(batch)} records")
        for given, record in zip(batch, records):
            corpus_id = ((record or {}).get("externalIds") or {}).get("CorpusId")
            if corpus_id is None:
                unknown.append(given)
            else:
                resolved[given] = int(corpus_id)
    order = [resolved[g] for g in dict.fromkeys(map(str, ids)) if g in resolved]
    return list(dict.fromkeys(order)), unknown


def anchors_for(dataset) -> list[str]:
    """The anchor papers of a pages route: the Graph API route's (:func:`sdr.fetchers.semantic_scholar.anchors_for`
    of the dataset it stands in for)."""
    from sdr.datasets import SAME_LAYOUT_AS, get
    from sdr.fetchers import semantic_scholar

    return semantic_scholar.anchors_for(get(SAME_LAYOUT_AS[dataset.name]))


def fetch_dataset(dataset, folder: Path, progress: bool = True, client: Client | None = None,
                  opener: Callable[..., Opened] = urllib_opener, anchors: list[str] | None = None,
                  release: str = "latest", memory_limit: str | None = None, sleep=time.sleep) -> Path:
    """``sdr data fetch s2ag_bulk_flew | s2ag_bulk_thesis | s2orc_citation_graph | s2ag_bulk_wol_texts
    [--release ID]`` (``anchors``: for a ``texts`` route, the corpus ids; default :func:`text_ids_for`). ``release``:
    ``latest`` or a release id of the API's listing (checked; the completion record's counts give ``release`` and
    ``release_requested``). The API key (``S2_API_KEY``) is required by the Datasets API."""
    if client is None and not os.environ.get("S2_API_KEY"):
        raise ApiError(DATASETS_API, 401, "the Datasets API needs an API key: set S2_API_KEY (ask for one at "
                                          "https://www.semanticscholar.org/product/api)")
    if completion.fetch_state(folder).complete:
        print(f"{dataset.name}: complete in {folder} ({completion.fetch_state(folder).describe(dataset.name)}); "
              f"delete the folder to fetch again")
        return Path(folder)
    client = client or Client()
    fetch = BulkFetch(dataset.name, Path(folder), DatasetsApi(client), opener, release, progress, memory_limit, sleep)
    if fixed_release(folder) is None:
        fetch.check_release()  # before the anchors are resolved: an unknown release stops the fetch at once
    corpus_anchors, unknown = None, []
    if fetch.route.kind == "texts":
        corpus_anchors = [int(a) for a in anchors] if anchors is not None else text_ids_for(dataset)
    if fetch.route.kind == "pages":
        given = anchors if anchors is not None else anchors_for(dataset)
        stored = Path(folder) / "anchor_ids.json"
        if stored.exists():  # resolved at the first run
            saved = json.loads(stored.read_text(encoding="utf-8"))
            corpus_anchors, unknown = saved["corpus_ids"], saved["unknown"]
        else:
            corpus_anchors, unknown = resolve_to_corpus_ids(client, given)
            Path(folder).mkdir(parents=True, exist_ok=True)
            stored.write_text(json.dumps({"given": len(given), "corpus_ids": corpus_anchors, "unknown": unknown})
                              + "\n", encoding="utf-8")
    fetch.run(corpus_anchors, unknown)
    return Path(folder)
