"""sdr.fetchers: the Semantic Scholar Graph API citation fetcher and the S2ORC shard fetcher, on recorded
responses in the APIs' documented JSON shapes (data/fixtures/s2_api, data/fixtures/s2orc_datasets). No test
touches the network: the HTTP transport is replaced by one that answers from the recordings."""

from __future__ import annotations

import gzip
import io
import json
import urllib.parse
from pathlib import Path

import pytest

from sdr.corpus import read_s2_citations, read_s2orc_metadata, read_s2orc_pdf_parses
from sdr.fetchers import s2orc, semantic_scholar
from sdr.fetchers.http import ApiError, Client, Response

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"
A1, A2 = "a1000000000000000000000000000000000000a1", "a2000000000000000000000000000000000000a2"


class Recorded:
    """A transport answering from recorded_responses.json; counts the calls per request key."""

    def __init__(self, fail_after: int | None = None, statuses: list[int] | None = None):
        self.answers = json.loads((FIXTURES / "s2_api" / "recorded_responses.json").read_text())
        self.calls: list[str] = []
        self.headers: list[dict] = []
        self.fail_after = fail_after
        self.statuses = list(statuses or [])

    def __call__(self, method, url, headers, body, timeout):
        parsed = urllib.parse.urlparse(url)
        path = parsed.path.removeprefix("/graph/v1")
        query = urllib.parse.parse_qs(parsed.query)
        key = f"{method} {path}" + (f"?offset={query['offset'][0]}" if "offset" in query else "")
        self.calls.append(key)
        self.headers.append(headers)
        if self.statuses:
            return Response(self.statuses.pop(0), b'{"message": "Too Many Requests"}', {"Retry-After": "0"})
        if self.fail_after is not None and len(self.calls) > self.fail_after:
            raise KeyboardInterrupt  # an interrupted fetch
        if method == "GET":
            assert query["fields"] == [semantic_scholar.LINK_FIELDS] and query["limit"] == ["1000"]
        answer = self.answers[key]
        if isinstance(answer, dict) and "status" in answer:
            return Response(answer["status"], json.dumps(answer["body"]).encode())
        if method == "POST":
            ids = json.loads(body)["ids"]
            by_id = {a["paperId"]: a for a in answer}
            answer = [by_id.get(i) for i in ids]
        return Response(200, json.dumps(answer).encode())


def client(transport) -> Client:
    return Client(rate=1000.0, api_key="test-key", transport=transport, sleep=lambda s: None)


def test_citation_fetch_writes_what_read_s2_citations_reads(tmp_path):
    transport = Recorded()
    counts = semantic_scholar.CitationFetcher(tmp_path, client(transport), progress=False).fetch([A1, A2])
    assert counts["anchors"] == 2 and counts["missing"] == 1  # r3's references: 404, noted
    # paging: A1's references came in two pages; references of references fetched for r1, r2, r3 (not anchors)
    assert transport.calls.count(f"GET /paper/{A1}/references?offset=2") == 1
    assert {c for c in transport.calls if c.startswith("GET /paper/r")} == {
        f"GET /paper/r{i}000000000000000000000000000000000000r{i}/references?offset=0" for i in (1, 2, 3)}
    assert all(h["x-api-key"] == "test-key" for h in transport.headers)
    missing = [json.loads(line) for line in (tmp_path / "missing.jsonl").read_text().splitlines()]
    assert missing == [{"paperId": "r3000000000000000000000000000000000000r3", "kind": "references", "status": 404}]
    assert (tmp_path / "anchors.txt").read_text().split() == [A1, A2]

    graph, papers, report = read_s2_citations(tmp_path)
    assert papers[A1].title == "Graph attention for citation intent"  # from /paper/batch
    r1, r2 = "r1000000000000000000000000000000000000r1", "r2000000000000000000000000000000000000r2"
    assert graph.edge(A1, r1).intents == ("method",) and graph.edge(A1, r2).intents == ("background", "result")
    assert graph.edge(r1, r2) is not None  # a reference of a reference: SPECTER's hard-negative source
    assert graph.edge("c1000000000000000000000000000000000000c1", A1).intents == ("background",)
    assert report.counts["references: other paper has no paperId"] == 1


def test_citation_fetch_resumes_without_duplicates(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        semantic_scholar.CitationFetcher(tmp_path, client(Recorded(fail_after=2)), progress=False).fetch([A1, A2])
    # A1's two reference pages were written together; A2's were not started
    first = (tmp_path / "references.jsonl").read_text().splitlines()
    assert [json.loads(line)["paperId"] for line in first] == [A1, A1]
    with (tmp_path / "references.jsonl").open("a") as handle:
        handle.write('{"paperId": "torn')  # a torn last line from a killed process
    transport = Recorded()
    semantic_scholar.CitationFetcher(tmp_path, client(transport), progress=False).fetch([A1, A2])
    assert f"GET /paper/{A1}/references?offset=0" not in transport.calls  # complete anchors are not fetched again
    pages = [json.loads(line) for line in (tmp_path / "references.jsonl").read_text().splitlines()]
    assert [p["paperId"] for p in pages].count(A1) == 2  # no duplicate pages
    graph, _, _ = read_s2_citations(tmp_path)
    semantic_scholar.CitationFetcher(tmp_path / "whole", client(Recorded()), progress=False).fetch([A1, A2])
    uninterrupted, _, _ = read_s2_citations(tmp_path / "whole")
    assert {(c.citing, c.cited, c.intents) for c in graph} == {(c.citing, c.cited, c.intents) for c in uninterrupted}
    assert len(graph) == 6


def test_retries_429_then_gives_up_with_the_url(tmp_path):
    transport = Recorded(statuses=[429, 429])
    waits = []
    fetcher = semantic_scholar.CitationFetcher(
        tmp_path, Client(rate=1000.0, transport=transport, sleep=waits.append, retries=3), progress=False)
    fetcher.fetch_links([A2], "citations")  # two 429s, then the recorded page
    assert waits.count(0.0) >= 2 and len(transport.calls) == 3
    always = Recorded(statuses=[503] * 10)
    with pytest.raises(ApiError, match=r"paper/a2.*/citations.*HTTP 503"):
        semantic_scholar.CitationFetcher(tmp_path / "b", Client(rate=1000.0, transport=always, sleep=lambda s: None,
                                                                 retries=2), progress=False).fetch_links([A2], "citations")


def test_triple_queries_read_scincl_csv(tmp_path):
    path = tmp_path / "specter-wol__train_triples.csv"
    path.write_text(f"query_paper_id,positive_id,negative_id\n{A1},{A2},{A2}\n{A1},{A2},{A2}\n{A2},{A1},{A1}\n")
    assert semantic_scholar.read_triple_queries(path) == [A1, A2]
    path.write_text(f"{A1},{A2}\n")
    with pytest.raises(ValueError, match=r"triples.csv:1: expected query,positive,negative"):
        semantic_scholar.read_triple_queries(path)


def _shard_listing_transport(method, url, headers, body, timeout):
    assert url.endswith("/datasets/v1/release/latest/dataset/s2orc")
    return Response(200, json.dumps({"name": "s2orc", "files": ["https://shards.example/s2orc/shard-0.gz?sig=x"]}).encode())


def _gzipped_excerpt(url):
    raw = (FIXTURES / "s2orc_datasets" / "s2orc-shard-excerpt.jsonl").read_bytes()
    return io.BytesIO(gzip.compress(raw))


def test_s2orc_shards_become_the_metadata_and_pdf_parses_layout(tmp_path):
    counts = s2orc.fetch_full_text(["12871252", "33333", "999"], tmp_path, client=client(_shard_listing_transport),
                                   opener=_gzipped_excerpt, progress=False)
    assert counts == {"shards": 1, "records_read": 3, "papers_kept": 2, "papers_not_found": 1}
    papers, _, _ = read_s2orc_metadata(tmp_path / "metadata" / "metadata.jsonl", progress=False)
    assert papers["12871252"].title == "The Effect of Aesthetic on the Usability of Data Visualization"
    assert papers["12871252"].abstract == "Aesthetic seems under represented in evaluation."
    sections, _ = read_s2orc_pdf_parses(tmp_path / "pdf_parses" / "pdf_parses.jsonl", papers, progress=False)
    kinds = [(s.heading, s.kind) for s in sections["12871252"]]
    assert kinds == [("Introduction", "introduction"), ("2 Related Work", "related_work"), ("3 Method", "method"),
                     ("4 Results", "results"), ("5 Conclusion", "conclusion")]
    assert sections["12871252"][0].paragraphs == ["Visualization evaluation rarely measures aesthetic.",
                                                  "We ask whether it matters."]
    assert sections["33333"][0].heading == ""  # a paragraph before the first header keeps no heading
    # a second run reads no shard again and writes nothing twice
    again = s2orc.fetch_full_text(["12871252", "33333", "999"], tmp_path, client=client(_shard_listing_transport),
                                  opener=lambda url: pytest.fail("a read shard was opened again"), progress=False)
    assert again["papers_kept"] == 2
    assert len((tmp_path / "metadata" / "metadata.jsonl").read_text().splitlines()) == 2


def test_s2orc_bad_record_names_shard_and_line(tmp_path):
    def bad(url):
        return io.BytesIO(gzip.compress(b'{"corpusid": 1, "content": {"text": "x", "annotations": {"paragraph": "{}"}}}\n'))
    with pytest.raises(ValueError, match=r"shard-0.gz:1: annotation 'paragraph': expected a list of spans"):
        s2orc.fetch_full_text(["1"], tmp_path, client=client(_shard_listing_transport), opener=bad, progress=False)


def test_huggingface_parquet_exports_become_the_scirepeval_jsonl_layout(tmp_path):
    """SciRepEval's configs from the Hub's parquet export (recorded listing in the API's shape; a parquet file
    written here), in the layout sdr.evaluate.scirepeval reads; a second run reads nothing again."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sdr.evaluate import scirepeval as sre
    from sdr.fetchers import huggingface

    registry = tmp_path / "scirepeval_tasks.jsonl"
    registry.write_text(json.dumps({"name": "Fields of study", "type": "classification", "multi_label": True,
                                    "data": {"meta": {"name": "allenai/scirepeval", "config": "fos"},
                                             "test": {"name": "allenai/scirepeval_test", "config": "fos"}},
                                    "metrics": ["f1_macro"]}) + "\n")
    assert huggingface.registry_datasets(registry) == [("allenai/scirepeval", "fos"), ("allenai/scirepeval_test", "fos")]
    tables = {
        "meta": pa.table({"doc_id": ["1", "2"], "title": ["A", "B"], "abstract": ["a", None]}),
        "test": pa.table({"doc_id": ["1", "2"], "labels": [[0, 2], [1]], "score": [0.5, float("nan")]}),
    }
    files = {}
    for name, table in tables.items():
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        files[f"https://huggingface.co/parquet/{name}/0000.parquet"] = buffer.getvalue()
    listings = {"/api/datasets/allenai/scirepeval/parquet/fos": {"evaluation": ["https://huggingface.co/parquet/meta/0000.parquet"]},
                "/api/datasets/allenai/scirepeval_test/parquet/fos": {"test": ["https://huggingface.co/parquet/test/0000.parquet"]}}

    def transport(method, url, headers, body, timeout):
        return Response(200, json.dumps(listings[urllib.parse.urlparse(url).path]).encode())

    opened = []

    def opener(url):
        opened.append(url)
        return io.BytesIO(files[url])

    counts = huggingface.fetch_configs(huggingface.registry_datasets(registry), tmp_path / "out", client=client(transport),
                                       opener=opener, progress=False)
    assert counts == {"configs": 2, "splits_written": 2, "splits_present": 0, "rows": 4}
    meta = sre.read_rows(sre.split_path(tmp_path / "out" / "scirepeval" / "fos", "evaluation"))
    test = sre.read_rows(sre.split_path(tmp_path / "out" / "scirepeval_test" / "fos", "test"))
    assert meta == [{"doc_id": "1", "title": "A", "abstract": "a"}, {"doc_id": "2", "title": "B", "abstract": None}]
    assert test[0]["labels"] == [0, 2] and test[1]["score"] is None  # a parquet NaN is JSON null, never NaN
    again = huggingface.fetch_configs(huggingface.registry_datasets(registry), tmp_path / "out", client=client(transport),
                                      opener=opener, progress=False)
    assert again["splits_present"] == 2 and len(opened) == 2


# ------------------------------------------------------------------------------------------- transport (issue 36)
from email.utils import format_datetime  # noqa: E402
from datetime import datetime, timezone  # noqa: E402

from sdr.fetchers import completion  # noqa: E402
from sdr.fetchers.http import NetworkError, retry_after_seconds  # noqa: E402
from sdr.synthetic.s2_api import Faults, SyntheticGraphApi, sha_id  # noqa: E402


def _corpus(n=40, seed=1):
    from sdr.synthetic import make_corpus

    return make_corpus(n_papers=n, seed=seed)


def test_network_errors_are_retried_with_back_off_then_named():
    calls = []

    def flaky(method, url, headers, body, timeout):
        calls.append(url)
        if len(calls) <= 2:
            raise ConnectionResetError("connection reset by peer")
        return Response(200, b'{"ok": 1}')

    waits = []
    assert Client(rate=1e6, transport=flaky, sleep=waits.append, retries=3).json("GET", "https://x.test/a") == {"ok": 1}
    assert waits == [1.0, 2.0]  # exponential back-off between the three attempts

    def dead(method, url, headers, body, timeout):
        raise TimeoutError("timed out")

    with pytest.raises(NetworkError, match=r"https://x.test/b: network error after 3 attempts: TimeoutError"):
        Client(rate=1e6, transport=dead, sleep=lambda s: None, retries=2).json("GET", "https://x.test/b")


def test_retry_after_in_seconds_and_as_an_http_date():
    now = datetime(2026, 1, 5, 12, 0, 0, tzinfo=timezone.utc).timestamp()
    assert retry_after_seconds("17", now) == 17.0
    assert retry_after_seconds("Mon, 05 Jan 2026 12:00:30 GMT", now) == 30.0
    assert retry_after_seconds("Mon, 05 Jan 2026 11:00:00 GMT", now) == 0.0  # a date in the past: at once
    assert retry_after_seconds("soon", now) is None and retry_after_seconds(None, now) is None
    statuses = [Response(429, b"", {"retry-after": format_datetime(datetime.fromtimestamp(now + 45, timezone.utc),
                                                                    usegmt=True)}),
                Response(200, b"[]")]
    waits = []
    client = Client(rate=1e6, transport=lambda *a: statuses.pop(0), sleep=waits.append, now=lambda: now)
    assert client.json("GET", "https://x.test/c") == [] and waits == [45.0]  # the date, read case-insensitively


def test_a_long_rate_limit_waits_instead_of_aborting():
    answers = [Response(429, b"{}", {"Retry-After": "60"})] * 200 + [Response(200, b'{"done": true}')]
    waits = []
    client = Client(rate=1e6, transport=lambda *a: answers.pop(0), sleep=waits.append, say=lambda m: None)
    assert client.json("GET", "https://x.test/d") == {"done": True}
    assert sum(waits) == 12_000 and client.retried["rate_limited"] == 200  # 200 minutes of 429s: still fetched
    endless = Client(rate=1e6, transport=lambda *a: Response(429, b"{}", {"Retry-After": "600"}), sleep=lambda s: None,
                     say=lambda m: None, rate_limit_patience_s=3600)
    with pytest.raises(ApiError, match=r"x.test/e: HTTP 429"):
        endless.json("GET", "https://x.test/e")  # past the patience: an error naming the URL


def test_5xx_is_retried_and_a_504_shrinks_the_page(tmp_path):
    corpus = _corpus()
    service = SyntheticGraphApi(corpus, page_size=1000, faults=Faults(server_error_every=5, gateway_timeout_above=250))
    asked = []

    def recording(method, url, headers, body, timeout):
        asked.append(urllib.parse.parse_qs(urllib.parse.urlparse(url).query).get("limit", [""])[0])
        return service(method, url, headers, body, timeout)

    fetcher = semantic_scholar.CitationFetcher(tmp_path, client(recording), progress=False)
    anchors = sorted(corpus.papers)[:5]
    fetcher.fetch_links(anchors, "citations")
    assert asked[:3] == ["1000", "500", "250"] and fetcher.smaller_pages == 2  # halved until the server answers
    reference = semantic_scholar.CitationFetcher(tmp_path / "plain", client(SyntheticGraphApi(corpus)), progress=False)
    reference.fetch_links(anchors, "citations")
    assert [json.loads(x)["data"] for x in (tmp_path / "citations.jsonl").read_text().splitlines()] == \
        [json.loads(x)["data"] for x in (tmp_path / "plain" / "citations.jsonl").read_text().splitlines()]


def test_documented_id_forms_and_the_link_cap(tmp_path):
    assert semantic_scholar.api_id("12345") == "CorpusId:12345"  # never /paper/12345
    assert semantic_scholar.api_id(A1) == A1 and semantic_scholar.api_id("DOI:10.1/x") == "DOI:10.1/x"
    with pytest.raises(ValueError, match="empty"):
        semantic_scholar.api_id(" ")
    corpus = _corpus()
    ids = {pid: 900_000 + i for i, pid in enumerate(sorted(corpus.papers))}
    most_cited = max(corpus.papers, key=lambda p: len(corpus.graph.citations(p)))
    n_links = len(corpus.graph.citations(most_cited))
    urls = []
    service = SyntheticGraphApi(corpus, ids, page_size=3, link_cap=7, sha_ids=True)

    def recording(method, url, headers, body, timeout):
        urls.append(url)
        return service(method, url, headers, body, timeout)

    fetcher = semantic_scholar.CitationFetcher(tmp_path, client(recording), progress=False)
    fetcher.link_cap, fetcher.page_limit = 7, 3  # the API's 9,999 and 1,000, scaled down
    fetcher.fetch_links([str(ids[most_cited])], "citations")  # an all-digit anchor: a corpus id
    assert f"/paper/CorpusId:{ids[most_cited]}/citations?" in urls[0]
    assert "limit=1&offset=6" in urls[-1]  # offset + limit stays within the cap
    pages = [json.loads(x) for x in (tmp_path / "citations.jsonl").read_text().splitlines()]
    assert n_links > 7 and sum(len(p["data"]) for p in pages) == 7  # the links the API serves, no more
    assert pages[-1]["truncated"] is True and "next" not in pages[-1] and fetcher.truncated == 1
    assert all(len(link["citingPaper"]["paperId"]) == 40 for p in pages for link in p["data"])  # 40-hex ids
    fetcher.link_cap = 9999  # our cap above the service's: its 400 past the links it serves is a truncation too
    (tmp_path / "citations.jsonl").unlink()
    fetcher.fetch_links([str(ids[most_cited])], "citations")
    pages = [json.loads(x) for x in (tmp_path / "citations.jsonl").read_text().splitlines()]
    assert pages[-1]["truncated"] is True and sum(len(p["data"]) for p in pages) == 6 and fetcher.truncated == 2
    counts = semantic_scholar.CitationFetcher(tmp_path, client(recording), progress=False).fetch(
        [str(ids[most_cited])], kinds=("citations",), references_of_references=False)
    assert counts["truncated_citations"] == 1  # counted for the completion record


def _fetch_all(folder, corpus, ids, faults=None, retries=6, anchors=None):
    from sdr.datasets import get

    service = SyntheticGraphApi(corpus, ids, page_size=4, null_paper_every=5, sha_ids=True, faults=faults)
    anchors = anchors or [f"CorpusId:{ids[p]}" for p in sorted(corpus.papers)[::4]]
    transport_client = Client(rate=1e6, api_key="k", transport=service, sleep=lambda s: None, retries=retries,
                              say=lambda m: None)
    return semantic_scholar.fetch_dataset(get("s2_citations_thesis"), folder, progress=False, client=transport_client,
                                          anchors=anchors)


def test_an_interrupted_fetch_is_partial_and_resumes_to_the_files_of_an_uninterrupted_one(tmp_path):
    corpus = _corpus()
    ids = {pid: 900_000 + i for i, pid in enumerate(sorted(corpus.papers))}
    whole = _fetch_all(tmp_path / "whole", corpus, ids, Faults(rate_limit_every=3, retry_after_date=True,
                                                               server_error_every=7))
    record = completion.fetch_state(whole).record
    assert completion.fetch_state(whole).complete and record["counts"]["anchors"] == 10
    assert record["files"]["references.jsonl"]["sha256"] == datasets_sha(whole / "references.jsonl")
    graph, _, report = read_s2_citations(whole)
    assert report.counts["references: other paper has no paperId"] > 0  # null paperIds: skipped and counted

    broken = tmp_path / "broken"
    with pytest.raises(NetworkError):  # the connection drops for good mid-way (after 40 requests)
        _fetch_all(broken, corpus, ids, Faults(drop_connection_every=40), retries=0)
    state = completion.fetch_state(broken)
    assert not state.complete and 0 < state.progress["done"] < state.progress["total"]
    assert state.describe("s2_citations_thesis").startswith("partial: ")
    assert "resume with `sdr data fetch s2_citations_thesis`" in state.describe("s2_citations_thesis")
    with (broken / "references.jsonl").open("a") as handle:
        handle.write('{"paperId": "torn')  # and a torn last line from the killed process
    with (broken / "missing.jsonl").open("a") as handle:
        handle.write('{"paperId": "tor')
    _fetch_all(broken, corpus, ids, Faults(rate_limit_every=5))  # resumed
    assert completion.fetch_state(broken).complete
    def content(path):
        return path.read_bytes() if path.exists() else b""  # (the torn line was the resumed missing.jsonl's only one)

    for name in ("references.jsonl", "citations.jsonl", "papers.jsonl", "anchors.txt", "missing.jsonl"):
        assert content(broken / name) == content(whole / name), name
    assert (whole / "references.jsonl").stat().st_size > 0


def datasets_sha(path):
    from sdr.datasets import sha256_of

    return sha256_of(path)


def test_torn_papers_line_is_dropped_and_fetched_again(tmp_path):
    corpus = _corpus()
    ids = {pid: 900_000 + i for i, pid in enumerate(sorted(corpus.papers))}
    whole = _fetch_all(tmp_path / "whole", corpus, ids)
    torn = tmp_path / "torn"
    _fetch_all(torn, corpus, ids)
    text = (torn / "papers.jsonl").read_bytes()
    (torn / "papers.jsonl").write_bytes(text[:len(text) - 30])  # the last record cut mid-line
    _fetch_all(torn, corpus, ids)
    assert (torn / "papers.jsonl").read_bytes() == (whole / "papers.jsonl").read_bytes()


def test_s2orc_resume_cuts_a_torn_metadata_line_and_a_half_written_shard(tmp_path):
    raw = (FIXTURES / "s2orc_datasets" / "s2orc-shard-excerpt.jsonl").read_bytes()
    lines = raw.splitlines(keepends=True)
    shards = {"https://shards.example/s2orc/shard-0.gz?sig=x": lines[:2],
              "https://shards.example/s2orc/shard-1.gz?sig=x": lines[2:]}

    def listing(method, url, headers, body, timeout):
        return Response(200, json.dumps({"files": list(shards)}).encode())

    def opener(url):
        return io.BytesIO(gzip.compress(b"".join(shards[url])))

    wanted = ["12871252", "33333", "999"]
    s2orc.fetch_full_text(wanted, tmp_path / "whole", client=client(listing), opener=opener, progress=False)
    part = tmp_path / "part"
    s2orc.fetch_full_text(wanted, part, client=client(listing), opener=opener, progress=False)
    metadata = part / "metadata" / "metadata.jsonl"
    done = (part / "shards_done.jsonl").read_text().splitlines()
    (part / "shards_done.jsonl").write_text(done[0] + "\n")  # killed before the second shard was marked read
    metadata.write_bytes(metadata.read_bytes()[:-15])  # and its metadata line torn
    s2orc.fetch_full_text(wanted, part, client=client(listing), opener=opener, progress=False)
    for name in ("metadata/metadata.jsonl", "pdf_parses/pdf_parses.jsonl"):
        assert (part / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


def test_s2orc_expired_links_are_listed_again(tmp_path):
    import urllib.error

    listings = []

    def listing(method, url, headers, body, timeout):
        listings.append(url)
        return Response(200, json.dumps({"files": [f"https://shards.example/s2orc/shard-0.gz?sig={len(listings)}"]}).encode())

    def opener(url):
        if url.endswith("sig=1"):
            raise urllib.error.HTTPError(url, 403, "Request has expired", {}, None)
        return _gzipped_excerpt(url)

    counts = s2orc.fetch_full_text(["12871252"], tmp_path, client=client(listing), opener=opener, progress=False)
    assert counts["papers_kept"] == 1 and len(listings) == 2


def test_huggingface_fetch_is_complete_only_with_its_record(tmp_path, monkeypatch):
    from sdr import datasets
    from sdr.fetchers import huggingface

    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SDR_DATA", raising=False)
    registry = tmp_path / "scirepeval_tasks.jsonl"
    registry.write_text(json.dumps({"name": "t", "type": "classification",
                                    "data": {"test": {"name": "allenai/scirepeval_test", "config": "fos"}},
                                    "metrics": ["f1_macro"]}) + "\n")
    folder = tmp_path / "cache" / "scirepeval_full"

    def broken(method, url, headers, body, timeout):
        raise ConnectionResetError("dropped")

    with pytest.raises(NetworkError):
        huggingface.fetch_dataset(datasets.get("scirepeval_full"), folder, progress=False, registry=registry,
                                  client=Client(rate=1e6, transport=broken, sleep=lambda s: None, retries=0))
    assert (folder / "scirepeval_tasks.jsonl").exists()  # the registry is there, the data is not
    assert datasets.locate("scirepeval_full") is None and datasets.partial_folder(datasets.get("scirepeval_full")) == folder
    row = next(r for r in _status_rows("scirepeval_full"))
    assert row["state"] == "partial" and "resume with `sdr data fetch scirepeval_full`" in row["detail"]


def _status_rows(name):
    from sdr import datasets

    datasets.CHAPTER_DATA["_probe"] = (name,)
    try:
        return datasets.chapter_status("_probe")
    finally:
        del datasets.CHAPTER_DATA["_probe"]


def test_s2orc_fetch_begun_before_sizes_were_recorded_keeps_its_read_shards(tmp_path):
    s2orc.fetch_full_text(["12871252", "33333"], tmp_path, client=client(_shard_listing_transport),
                          opener=_gzipped_excerpt, progress=False)
    (tmp_path / "shards_done.jsonl").unlink()
    (tmp_path / "shards_done.txt").write_text("shard-0.gz\n")  # the earlier bookkeeping
    again = s2orc.fetch_full_text(["12871252", "33333"], tmp_path, client=client(_shard_listing_transport),
                                  opener=lambda url: pytest.fail("a read shard was opened again"), progress=False)
    assert again["papers_kept"] == 2 and not (tmp_path / "shards_done.txt").exists()


# ------------------------------------------------------------------------------- downloads under one retry policy
class BreakingStream(io.RawIOBase):
    """A response body that delivers ``limit`` bytes, then the connection drops (``http.client.IncompleteRead``,
    as urllib raises when a body ends before its ``Content-Length``)."""

    def __init__(self, data: bytes, limit: int):
        self.data, self.limit, self.position = data, limit, 0

    def readable(self):
        return True

    def readinto(self, buffer):
        import http.client

        if self.position >= self.limit:
            raise http.client.IncompleteRead(self.data[:self.position], len(self.data) - self.position)
        chunk = self.data[self.position:min(self.limit, self.position + len(buffer))]
        buffer[:len(chunk)] = chunk
        self.position += len(chunk)
        return len(chunk)


def server_error(url, status=503, retry_after=None):
    import urllib.error
    from email.message import Message

    headers = Message()
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return urllib.error.HTTPError(url, status, "Service Unavailable", headers, io.BytesIO(b"<Error>SlowDown</Error>"))


def _planned_opener(payloads: dict, fail: dict, opened: list):
    """An opener of ``payloads`` by url that records each open in ``opened`` and first answers each url's planned
    failures (``fail``: url → [exception or "break", …], popped one an open; "break" cuts the stream half-way)."""
    def opener(url):
        opened.append(url)
        planned = fail.get(url) or []
        if planned:
            failure = planned.pop(0)
            if failure == "break":
                return BreakingStream(payloads[url], len(payloads[url]) // 2)
            raise failure
        return io.BytesIO(payloads[url])

    return opener


def test_a_5xx_retry_after_is_capped_by_max_backoff_but_a_429s_is_not():
    answers = [Response(503, b"{}", {"Retry-After": "86400"}), Response(200, b'{"ok": 1}')]
    waits = []
    client = Client(rate=1e6, transport=lambda *a: answers.pop(0), sleep=waits.append, max_backoff_s=120)
    assert client.json("GET", "https://x.test/f") == {"ok": 1} and waits == [120]  # not a day
    answers = [Response(429, b"{}", {"Retry-After": "900"}), Response(200, b'{"ok": 2}')]
    waits = []
    client = Client(rate=1e6, transport=lambda *a: answers.pop(0), sleep=waits.append, max_backoff_s=120,
                    say=lambda m: None)
    assert client.json("GET", "https://x.test/g") == {"ok": 2} and waits == [900]  # a rate limit's wait is kept
    # and the same cap on a download's 5xx (Client.retrying)
    failures = [server_error("https://files.test/a", 503, "86400")]
    waits = []

    def attempt():
        if failures:
            raise failures.pop()
        return b"body"

    client = Client(rate=1e6, sleep=waits.append, max_backoff_s=120)
    assert client.retrying("https://files.test/a", attempt) == b"body" and waits == [120]


def _two_shard_service(fail):
    """An S2ORC listing of two shards (the fixture's records split in two) and an opener that fails as ``fail``
    says: ``{shard url: [exception or "break", …]}`` popped one an open, then it answers normally."""
    raw = (FIXTURES / "s2orc_datasets" / "s2orc-shard-excerpt.jsonl").read_bytes()
    lines = raw.splitlines(keepends=True)
    shards = {"https://shards.example/s2orc/shard-0.gz?sig=x": gzip.compress(b"".join(lines[:2]), mtime=0),
              "https://shards.example/s2orc/shard-1.gz?sig=x": gzip.compress(b"".join(lines[2:]), mtime=0)}
    opened = []

    def listing(method, url, headers, body, timeout):
        return Response(200, json.dumps({"files": list(shards)}).encode())

    return listing, _planned_opener(shards, fail, opened), opened


S2ORC_WANTED = ["12871252", "33333", "999"]
S2ORC_FILES = ("metadata/metadata.jsonl", "pdf_parses/pdf_parses.jsonl")


def test_s2orc_shard_broken_midway_or_answering_5xx_is_read_again_with_back_off(tmp_path):
    listing, opener, _ = _two_shard_service({})
    s2orc.fetch_full_text(S2ORC_WANTED, tmp_path / "whole", client=client(listing), opener=opener, progress=False)
    second = "https://shards.example/s2orc/shard-1.gz?sig=x"
    listing, opener, opened = _two_shard_service({"https://shards.example/s2orc/shard-0.gz?sig=x": ["break"],
                                                  second: [server_error(second, 503), server_error(second, 502)]})
    waits = []
    flaky = Client(rate=1e6, api_key="k", transport=listing, sleep=waits.append)
    counts = s2orc.fetch_full_text(S2ORC_WANTED, tmp_path / "flaky", client=flaky, opener=opener, progress=False)
    assert counts["papers_kept"] == 2 and len(opened) == 5  # each shard read whole once more per failure
    assert waits == [1.0, 1.0, 2.0]  # the client's back-off: per shard 1 s, then 2 s
    assert flaky.retried["network_error"] == 1 and flaky.retried["server_error"] == 2
    for name in S2ORC_FILES:
        assert (tmp_path / "flaky" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


def test_an_s2orc_fetch_interrupted_after_its_first_shard_is_partial_and_resumes(tmp_path, monkeypatch):
    from sdr import datasets

    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SDR_DATA", raising=False)
    listing, opener, _ = _two_shard_service({})
    whole = tmp_path / "whole"
    s2orc.fetch_dataset(datasets.get("s2orc_specter"), whole, progress=False, client=client(listing), opener=opener,
                        wanted=S2ORC_WANTED)
    second = "https://shards.example/s2orc/shard-1.gz?sig=x"
    listing, opener, opened = _two_shard_service({second: [server_error(second, 503)] * 3})
    folder = tmp_path / "cache" / "s2orc_specter"
    waits = []
    down = Client(rate=1e6, api_key="k", transport=listing, sleep=waits.append, retries=2)
    with pytest.raises(ApiError, match=r"S2ORC shard shard-1.gz \(https://shards.example/s2orc/shard-1.gz\): "
                                       r"HTTP 503: .*after 3 attempts"):
        s2orc.fetch_dataset(datasets.get("s2orc_specter"), folder, progress=False, client=down, opener=opener,
                            wanted=S2ORC_WANTED)
    assert waits == [1.0, 2.0] and "sig=" not in str(waits)
    assert datasets.locate("s2orc_specter") is None  # both output files are there, but the fetch is not complete
    row = _status_rows("s2orc_specter")[0]
    assert row["state"] == "partial" and row["folder"] == str(folder)
    assert row["detail"].startswith("partial: 1 of 2 shards (S2ORC shards")
    assert "resume with `sdr data fetch s2orc_specter`" in row["detail"]
    listed = {r["name"]: r for r in datasets.status_table()}["s2orc_specter"]
    assert listed["where"] == "partial: 1 of 2 shards" and listed["path"] == str(folder)
    first = len(opened)
    s2orc.fetch_dataset(datasets.get("s2orc_specter"), folder, progress=False, client=client(listing), opener=opener,
                        wanted=S2ORC_WANTED)
    assert opened[first:] == [second]  # resumed at the second shard
    assert datasets.locate("s2orc_specter") == folder and _status_rows("s2orc_specter")[0]["state"] == "present"
    for name in S2ORC_FILES:
        assert (folder / name).read_bytes() == (whole / name).read_bytes(), name


def _hub_service(registry_path, fail):
    """A Hub with two configs (a recorded listing in the API's shape, parquet files written here) and an opener
    that fails as ``fail`` says (``{url: [exception or "break", …]}``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    registry_path.write_text(json.dumps({"name": "Fields of study", "type": "classification", "multi_label": True,
                                         "data": {"meta": {"name": "allenai/scirepeval", "config": "fos"},
                                                  "test": {"name": "allenai/scirepeval_test", "config": "fos"}},
                                         "metrics": ["f1_macro"]}) + "\n")
    files = {}
    for name, table in {"meta": pa.table({"doc_id": [str(i) for i in range(300)],
                                          "title": [f"title {i}" for i in range(300)]}),
                        "test": pa.table({"doc_id": ["1", "2"], "labels": [[0, 2], [1]]})}.items():
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        files[f"https://huggingface.co/parquet/{name}/0000.parquet"] = buffer.getvalue()
    listings = {"/api/datasets/allenai/scirepeval/parquet/fos": {"evaluation": ["https://huggingface.co/parquet/meta/0000.parquet"]},
                "/api/datasets/allenai/scirepeval_test/parquet/fos": {"test": ["https://huggingface.co/parquet/test/0000.parquet"]}}
    opened = []

    def transport(method, url, headers, body, timeout):
        return Response(200, json.dumps(listings[urllib.parse.urlparse(url).path]).encode())

    return transport, _planned_opener(files, fail, opened), opened


HUB_FILES = ("scirepeval/fos/evaluation.jsonl", "scirepeval_test/fos/test.jsonl")


def test_a_hub_download_broken_midway_or_answering_5xx_is_retried_then_named_and_resumes(tmp_path):
    from sdr import datasets
    from sdr.fetchers import huggingface

    meta, test = "https://huggingface.co/parquet/meta/0000.parquet", "https://huggingface.co/parquet/test/0000.parquet"
    transport, opener, _ = _hub_service(tmp_path / "tasks.jsonl", {})
    whole = huggingface.fetch_dataset(datasets.get("scirepeval_full"), tmp_path / "whole", progress=False,
                                      client=client(transport), opener=opener, registry=tmp_path / "tasks.jsonl")
    transport, opener, opened = _hub_service(tmp_path / "tasks.jsonl", {meta: ["break"], test: [server_error(test, 500)]})
    waits = []
    flaky = Client(rate=1e6, api_key="", transport=transport, sleep=waits.append)
    huggingface.fetch_dataset(datasets.get("scirepeval_full"), tmp_path / "flaky", progress=False, client=flaky,
                              opener=opener, registry=tmp_path / "tasks.jsonl")
    assert opened == [meta, meta, test, test] and waits == [1.0, 1.0]
    for name in HUB_FILES:
        assert (tmp_path / "flaky" / name).read_bytes() == (whole / name).read_bytes(), name
    # the second file's server stays down: an error naming its URL after the retries, the first split kept
    transport, opener, opened = _hub_service(tmp_path / "tasks.jsonl", {test: [server_error(test, 503)] * 3})
    broken = tmp_path / "broken"
    with pytest.raises(ApiError, match=r"https://huggingface.co/parquet/test/0000.parquet: HTTP 503: .*after 3 "
                                       r"attempts"):
        huggingface.fetch_dataset(datasets.get("scirepeval_full"), broken, progress=False, opener=opener,
                                  client=Client(rate=1e6, transport=transport, sleep=lambda s: None, retries=2),
                                  registry=tmp_path / "tasks.jsonl")
    assert not completion.fetch_state(broken).complete and (broken / HUB_FILES[0]).exists()
    huggingface.fetch_dataset(datasets.get("scirepeval_full"), broken, progress=False, client=client(transport),
                              opener=opener, registry=tmp_path / "tasks.jsonl")
    assert opened.count(meta) == 1  # the written split was not downloaded again
    assert completion.fetch_state(broken).complete
    for name in HUB_FILES:
        assert (broken / name).read_bytes() == (whole / name).read_bytes(), name


def test_a_hub_network_error_reaches_sdr_data_fetch_as_one_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    """Through the defaults (urllib's urlopen, the Hub's listing): the URLError of a dead connection is retried, then
    `sdr data fetch` reports it with the URL, how far the fetch got and how to resume."""
    import functools
    import urllib.error
    import urllib.request

    from sdr import datasets
    from sdr.cli import main as sdr_main
    from sdr.fetchers import http, huggingface

    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SDR_DATA", raising=False)
    transport, _, _ = _hub_service(tmp_path / "scirepeval_tasks.jsonl", {})  # the scirepeval dataset's registry
    monkeypatch.setattr(http, "urllib_transport", transport)  # the listing answers
    urls = []

    def dead(url, timeout=None):
        urls.append(url)
        raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))

    monkeypatch.setattr(urllib.request, "urlopen", dead)  # every file download fails
    waits = []
    monkeypatch.setattr(huggingface, "Client", functools.partial(Client, sleep=waits.append))
    monkeypatch.setattr(datasets, "resolve", lambda name, **kw: tmp_path if name == "scirepeval" else None)
    assert sdr_main(["data", "fetch", "scirepeval_full"]) == 1
    err = capsys.readouterr().err
    assert "scirepeval_full: not fetched: scirepeval_full: download failed: https://huggingface.co/parquet/meta/" \
           "0000.parquet: network error after 7 attempts: URLError" in err
    assert "partial: 0 of 2 configs" in err and "Traceback" not in err
    assert len(urls) == 7 and waits == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]


def test_a_504_at_the_smallest_page_is_retried_then_a_clear_error(tmp_path):
    corpus = _corpus()
    service = SyntheticGraphApi(corpus, page_size=1000, faults=Faults(gateway_timeout_above=5))  # below the minimum
    asked = []

    def recording(method, url, headers, body, timeout):
        asked.append(int(urllib.parse.parse_qs(urllib.parse.urlparse(url).query)["limit"][0]))
        return service(method, url, headers, body, timeout)

    waits = []
    fetcher = semantic_scholar.CitationFetcher(
        tmp_path, Client(rate=1e6, transport=recording, sleep=waits.append, retries=2), progress=False)
    anchor = sorted(corpus.papers)[0]
    with pytest.raises(ApiError, match=rf"/paper/{anchor}/citations\?limit=10&offset=0: HTTP 504: the gateway timed "
                                       r"out even for pages of 10 links \(the smallest page, after 7 smaller pages "
                                       r"and 2 retries with back-off\)"):
        fetcher.fetch_links([anchor], "citations")
    assert asked == [1000, 500, 250, 125, 62, 31, 15, 10, 10, 10]  # halved to the minimum, then retried there
    assert waits == [1.0, 2.0] and fetcher.smaller_pages == 7
    assert semantic_scholar.MIN_PAGE_LIMIT == 10
