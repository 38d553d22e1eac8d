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
