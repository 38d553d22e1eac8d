"""S2ORC full text (Semantic Scholar Datasets API, dataset ``s2orc``) for a set of papers, in the 2020 release's
``metadata`` / ``pdf_parses`` layout that :func:`sdr.corpus.read_s2orc_metadata` and
:func:`sdr.corpus.read_s2orc_pdf_parses` read.

The API lists a release's shards (``GET /datasets/v1/release/{release}/dataset/s2orc`` → ``{"files": [url, …]}``,
API key required); each shard is gzipped JSONL of ``{"corpusid", "externalids", "content": {"source", "text",
"annotations": {"title", "abstract", "sectionheader", "paragraph", …}}}``, where each annotation is a JSON
*string* holding character spans ``[{"start", "end", "attributes"?}]`` into ``text``. The fetcher streams every
shard once, keeps the records whose ``corpusid`` is wanted, and converts them: the title and abstract spans,
and each paragraph span under the last section header that starts before it.

Shards already read are listed in ``shards_done.jsonl`` with the sizes the two output files had after each, so an
interrupted fetch resumes at the next shard after cutting both files back to the last finished shard (a torn or
half-written shard's lines are dropped and read again). A shard whose stream breaks off, or that S3 answers with a
5xx, is read again under the client's retry policy (:meth:`sdr.fetchers.http.Client.retrying`: exponential
back-off, then an error naming the shard); a pre-signed link that expired (HTTP 400/403) is replaced by a fresh
listing. The completion record (:mod:`sdr.fetchers.completion`) is written last.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import urllib.request
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

from tqdm.auto import tqdm

from sdr.fetchers import completion
from sdr.fetchers.http import ApiError, Client

DATASETS_API = "https://api.semanticscholar.org/datasets/v1"
#: Fresh listings a shard may need in a row before its link's refusal counts as an error (a key without access).
LISTING_REFRESHES = 3
#: Errors of a gzip stream cut short (besides the network errors): the shard is read again.
TRUNCATED_STREAM = (EOFError, zlib.error)


def _spans(annotations: dict, name: str) -> list[dict]:
    value = annotations.get(name)
    if value in (None, ""):
        return []
    spans = json.loads(value) if isinstance(value, str) else value
    if not isinstance(spans, list):
        raise ValueError(f"annotation {name!r}: expected a list of spans, got {type(spans).__name__}")
    return sorted((s for s in spans if isinstance(s, dict) and "start" in s and "end" in s),
                  key=lambda s: (int(s["start"]), int(s["end"])))


def convert(record: dict) -> tuple[dict, dict]:
    """One S2ORC record → (``metadata`` line, ``pdf_parses`` line) with ``paper_id`` = the corpus id."""
    if "corpusid" not in record or not isinstance(record.get("content"), dict):
        raise ValueError(f"expected an S2ORC record {{corpusid, content: {{text, annotations}}}}, got keys "
                         f"{sorted(record)}")
    content = record["content"]
    text = content.get("text") or ""
    annotations = content.get("annotations") or {}

    def cut(span) -> str:
        return " ".join(text[int(span["start"]):int(span["end"])].split())

    title = " ".join(cut(s) for s in _spans(annotations, "title"))
    abstract = " ".join(cut(s) for s in _spans(annotations, "abstract"))
    headers = _spans(annotations, "sectionheader")
    body = []
    for paragraph in _spans(annotations, "paragraph"):
        start = int(paragraph["start"])
        heading = ""
        for header in headers:
            if int(header["start"]) <= start:
                heading = cut(header)
            else:
                break
        paragraph_text = cut(paragraph)
        if paragraph_text:
            body.append({"section": heading, "text": paragraph_text})
    paper_id = str(record["corpusid"])
    metadata = {"paper_id": paper_id, "title": title, "abstract": abstract,
                "externalids": record.get("externalids") or {}, "has_pdf_parse": bool(body)}
    parse = {"paper_id": paper_id, "abstract": [{"text": abstract}] if abstract else [], "body_text": body}
    return metadata, parse


def shard_urls(client: Client, release: str = "latest") -> list[str]:
    listing = client.json("GET", f"{DATASETS_API}/release/{release}/dataset/s2orc")
    files = listing.get("files") if isinstance(listing, dict) else None
    if not isinstance(files, list) or not files:
        raise ValueError(f"{DATASETS_API}/release/{release}/dataset/s2orc: expected {{files: [url, …]}}, got "
                         f"{str(listing)[:200]}")
    return [str(url) for url in files]


def _open_url(url: str):
    return urllib.request.urlopen(url, timeout=120)


def _shard_key(url: str, index: int) -> str:
    return url.split("?", 1)[0].rsplit("/", 1)[-1] or str(index)


def _read_done(folder: Path, metadata_path: Path, parses_path: Path) -> set[str]:
    """The shards read before, with both output files cut back to their sizes after the last of them."""
    done_file = folder / "shards_done.jsonl"
    legacy = folder / "shards_done.txt"  # a fetch begun before the sizes were recorded: its shards stay read
    if legacy.exists() and not done_file.exists():
        completion.cut_torn_line(legacy)
        for path in (metadata_path, parses_path):
            completion.cut_torn_line(path)
        keys = legacy.read_text(encoding="utf-8").split()
        sizes = {"metadata_bytes": metadata_path.stat().st_size if metadata_path.exists() else 0,
                 "parses_bytes": parses_path.stat().st_size if parses_path.exists() else 0}
        done_file.write_text("".join(json.dumps({"shard": key, **sizes}) + "\n" for key in keys), encoding="utf-8")
        legacy.unlink()
    completion.cut_torn_line(done_file)
    entries = []
    if done_file.exists():
        entries = [json.loads(line) for line in done_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    for path, key in ((metadata_path, "metadata_bytes"), (parses_path, "parses_bytes")):
        size = entries[-1][key] if entries else 0
        if path.exists() and path.stat().st_size > size:
            with path.open("rb+") as handle:
                handle.truncate(size)  # lines of a shard that was not finished: read again
    return {entry["shard"] for entry in entries}


def fetch_full_text(wanted: Iterable[str], folder: str | Path, client: Client | None = None,
                    opener: Callable[[str], io.BufferedIOBase] = _open_url, release: str = "latest",
                    progress: bool = True) -> dict:
    """Stream every shard, keep the wanted corpus ids; returns counts (shards, records read, papers kept)."""
    wanted = {str(w) for w in wanted}
    folder = Path(folder)
    (folder / "metadata").mkdir(parents=True, exist_ok=True)
    (folder / "pdf_parses").mkdir(parents=True, exist_ok=True)
    client = client or Client()
    urls = shard_urls(client, release)
    metadata_path, parses_path = folder / "metadata" / "metadata.jsonl", folder / "pdf_parses" / "pdf_parses.jsonl"
    done = _read_done(folder, metadata_path, parses_path)
    kept_ids = set()
    if metadata_path.exists():
        kept_ids = {json.loads(line)["paper_id"] for line in metadata_path.read_text().splitlines() if line.strip()}
    status = completion.Progress(folder, every_s=0)
    print(f"S2ORC ({release}): {len(urls)} shards to read (each a few GB gzipped; all of them are streamed, only "
          f"the {len(wanted):,} wanted papers are kept), {len(done)} already read; writing {folder}")
    status.update("S2ORC shards", len(done), len(urls), "shards", force=True)
    read = 0

    def read_shard(index: int, key: str) -> tuple[list, list, set, int]:
        """One shard, streamed whole: (metadata lines, pdf_parses lines, their ids, records read)."""
        shard_metadata, shard_parses, shard_ids, shard_read = [], [], set(), 0
        with opener(urls[index]) as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
            for line_number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                shard_read += 1
                record = json.loads(line)
                corpus_id = str(record.get("corpusid"))
                if corpus_id not in wanted or corpus_id in kept_ids or corpus_id in shard_ids:
                    continue
                try:
                    metadata, parse = convert(record)
                except (ValueError, TypeError, KeyError) as error:
                    raise ValueError(f"{key}:{line_number}: {error}") from None
                shard_metadata.append(metadata)
                shard_parses.append(parse)
                shard_ids.add(corpus_id)
        return shard_metadata, shard_parses, shard_ids, shard_read

    for index in tqdm(range(len(urls)), desc="S2ORC shards", unit="shard", disable=not progress):
        key = _shard_key(urls[index], index)
        if key in done:
            continue
        refreshes = 0
        while True:
            name = f"S2ORC shard {key} ({urls[index].split('?', 1)[0]})"  # the link without its signature
            try:
                shard_metadata, shard_parses, shard_ids, shard_read = client.retrying(
                    name, functools.partial(read_shard, index, key), retryable=TRUNCATED_STREAM)
                break
            except ApiError as error:
                if error.status not in (400, 403) or refreshes >= LISTING_REFRESHES:
                    raise
                refreshes += 1
                urls = shard_urls(client, release)  # the pre-signed links expired: a fresh listing
        read += shard_read
        kept_ids |= shard_ids
        # a shard's papers are written together after it was read whole, then the shard is marked read with the
        # files' sizes, so a resume cuts anything written after the last finished shard
        with metadata_path.open("a", encoding="utf-8") as m, parses_path.open("a", encoding="utf-8") as p:
            m.write("".join(json.dumps(x) + "\n" for x in shard_metadata))
            p.write("".join(json.dumps(x) + "\n" for x in shard_parses))
        with (folder / "shards_done.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"shard": key, "metadata_bytes": metadata_path.stat().st_size,
                                     "parses_bytes": parses_path.stat().st_size}) + "\n")
        done.add(key)
        status.update("S2ORC shards", len(done), len(urls), "shards")
    metadata_path.touch()
    parses_path.touch()
    return {"shards": len(urls), "records_read": read, "papers_kept": len(kept_ids),
            "papers_not_found": len(wanted - kept_ids)}


def specter_corpus_ids() -> list[str]:
    """Corpus ids of every paper in SPECTER's training triplets (SciRepEval cite_prediction)."""
    from sdr import datasets
    from sdr.jsonio import read_jsonl

    folder = datasets.resolve("scirepeval_cite_prediction")
    ids: dict[str, None] = {}
    for _, record in read_jsonl(folder / "train.jsonl", "a triplet {query, pos, neg}"):
        for role in ("query", "pos", "neg"):
            paper = record.get(role) or {}
            if paper.get("corpus_id") is not None:
                ids.setdefault(str(paper["corpus_id"]), None)
    return list(ids)


def fetch_dataset(dataset, folder: Path, progress: bool = True, client: Client | None = None,
                  opener=_open_url, wanted: Iterable[str] | None = None) -> Path:
    if dataset.name != "s2orc_specter":
        raise ValueError(f"{dataset.name}: the s2orc fetcher builds s2orc_specter only")
    wanted = list(wanted) if wanted is not None else specter_corpus_ids()
    completion.begin(folder)
    counts = fetch_full_text(wanted, folder, client=client, opener=opener, progress=progress)
    print(f"S2ORC: {counts['papers_kept']:,} of {len(wanted):,} papers found with text "
          f"({counts['papers_not_found']:,} not in S2ORC), {counts['records_read']:,} records read")
    completion.write_record(folder, dataset.name, "s2orc", {"wanted": len(wanted), **counts})
    return folder
