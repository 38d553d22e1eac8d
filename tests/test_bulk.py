"""sdr.fetchers.bulk: the Semantic Scholar Datasets API route, on the synthetic Datasets API (release listing,
pre-signed shard links that expire, gzipped JSONL shards in the real schemas, dropped connections). No test touches
the network. The bulk pages must read back as the Graph API route's pages of the same papers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdr import datasets
from sdr.corpus import read_s2_citations
from sdr.fetchers import bulk, completion
from sdr.fetchers.http import ApiError, Client
from sdr.synthetic import make_corpus
from sdr.synthetic.s2_api import SyntheticGraphApi, corpus_ids
from sdr.synthetic.s2_datasets import SyntheticDatasetsApi

OUTPUTS = ("references.jsonl", "citations.jsonl", "papers.jsonl", "anchors.txt", "missing.jsonl")


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(n_papers=60, seed=3)


def services(corpus, **options):
    ids = corpus_ids(corpus)
    datasets_api = SyntheticDatasetsApi(corpus, ids, **options)
    graph_api = SyntheticGraphApi(corpus, ids, sha_ids=True)

    def transport(method, url, headers, body, timeout):
        service = datasets_api if "/datasets/v1/" in url else graph_api
        return service(method, url, headers, body, timeout)

    client = Client(rate=1e6, api_key="test-key", transport=transport, sleep=lambda s: None, say=lambda m: None)
    return ids, datasets_api, graph_api, client


def fetch(name, folder, corpus, anchors=None, opener=None, release="latest", **options):
    ids, datasets_api, graph_api, client = services(corpus, **options)
    if anchors is None and name != "s2orc_citation_graph":
        anchors = [graph_api.external(p) for p in sorted(corpus.papers)[::5]]  # 40-hex ids, resolved by /paper/batch
    bulk.fetch_dataset(datasets.get(name), folder, progress=False, client=client, opener=opener or datasets_api.open,
                       anchors=anchors, sleep=lambda s: None, memory_limit="512MB", release=release)
    return ids, datasets_api


def test_bulk_pages_read_back_as_the_graph_api_pages_of_the_same_papers(tmp_path, corpus):
    from sdr.fetchers.semantic_scholar import CitationFetcher

    ids, _, graph_api, client = services(corpus)
    anchors = [graph_api.external(p) for p in sorted(corpus.papers)[::5]]
    fetch("s2ag_bulk_thesis", tmp_path / "bulk", corpus, anchors)
    CitationFetcher(tmp_path / "graph", client, progress=False).fetch(anchors)
    bulk_graph, bulk_papers, bulk_report = read_s2_citations(tmp_path / "bulk")
    api_graph, api_papers, _ = read_s2_citations(tmp_path / "graph")
    corpus_id = {graph_api.external(p): str(c) for p, c in ids.items()}
    assert {(c.citing, c.cited, c.intents) for c in bulk_graph} == \
        {(corpus_id[c.citing], corpus_id[c.cited], c.intents) for c in api_graph}  # the same edges and intents
    assert (tmp_path / "bulk" / "anchors.txt").read_text().split() == [corpus_id[a] for a in anchors]
    assert {bulk_papers[corpus_id[a]].title for a in anchors} == {api_papers[a].title for a in anchors}
    # the bulk records carry link-level intents only: read_s2_citations counts those links (a stated difference)
    assert bulk_report.counts["no contextsWithIntent: every intent given all the link's contexts"] > 0
    assert bulk_report.counts["references: other paper has no paperId"] > 0  # null citedcorpusid: skipped, counted
    record = completion.fetch_state(tmp_path / "bulk").record
    assert record["counts"]["release"] == "2024-04-02" and record["counts"]["references_of_references"] > 0
    assert any("contextsWithIntent" in note for note in record["notes"])


def test_an_interrupted_bulk_fetch_is_partial_and_resumes_to_the_same_files(tmp_path, corpus):
    whole = tmp_path / "whole"
    fetch("s2ag_bulk_thesis", whole, corpus)
    ids, datasets_api, graph_api, client = services(corpus, drop_after_bytes=300, expire_after_opens=5)
    opens = []

    def failing(url, start=0):
        opens.append(url)
        if len(opens) == 7:
            raise KeyboardInterrupt  # the process is stopped mid-way (the second pass over the citations)
        return datasets_api.open(url, start)

    broken = tmp_path / "broken"
    anchors = [graph_api.external(p) for p in sorted(corpus.papers)[::5]]
    with pytest.raises(KeyboardInterrupt):
        bulk.fetch_dataset(datasets.get("s2ag_bulk_thesis"), broken, progress=False, client=client, opener=failing,
                           anchors=anchors, sleep=lambda s: None)
    state = completion.fetch_state(broken)
    assert not state.complete and state.progress["unit"] == "shards"
    assert state.describe("s2ag_bulk_thesis").startswith("partial: ") and "sdr data fetch s2ag_bulk_thesis" in \
        state.describe("s2ag_bulk_thesis")
    done = [json.loads(line) for line in (broken / "work" / "done.jsonl").read_text().splitlines()]
    assert 0 < len(done) < 12
    with (broken / "work" / "done.jsonl").open("a") as handle:
        handle.write('{"pass": "citations:sec')  # a torn bookkeeping line: dropped, that shard read again
    bulk.fetch_dataset(datasets.get("s2ag_bulk_thesis"), broken, progress=False, client=client,
                       opener=datasets_api.open, anchors=anchors, sleep=lambda s: None)
    assert completion.fetch_state(broken).complete and not (broken / "work").exists()
    counts = completion.fetch_state(broken).record["counts"]
    assert counts["downloads_resumed"] > 0 and counts["links_refreshed"] > 0  # Range resumes, expired links listed
    for name in OUTPUTS:
        assert (broken / name).read_bytes() == (whole / name).read_bytes(), name
    first = len(opens)
    bulk.fetch_dataset(datasets.get("s2ag_bulk_thesis"), broken, progress=False, client=client, opener=failing,
                       anchors=anchors)
    assert len(opens) == first  # complete: nothing is fetched again


def test_the_sha_is_the_papers_datasets_url_as_semantic_scholar_writes_it():
    sha = "d5ec1ea2c9261c54cf41fef1e5c9f2f8abe28ce2"  # a record of the public papers sample (samples/papers)
    assert bulk.sha_from_url(f"https://www.semanticscholar.org/paper/{sha}") == sha
    assert bulk.sha_from_url(f"https://www.semanticscholar.org/paper/Some-Title-Slug/{sha.upper()}") == sha
    for malformed in (None, "", f"https://www.semanticscholar.org/paper/{sha[:-1]}", f"https://example.org/paper/{sha}",
                      f"https://www.semanticscholar.org/author/{sha}", f"https://www.semanticscholar.org/paper/{sha}x",
                      123):
        assert bulk.sha_from_url(malformed) is None, malformed


class MalformedUrlDatasetsApi(SyntheticDatasetsApi):
    """The synthetic Datasets API with one ``papers`` record whose url names no paper id (``broken``: its corpus id)
    and one paper without a ``papers`` record (``dropped``)."""

    broken: int | None = None
    dropped: int | None = None

    def _papers(self):
        rows = super()._papers()
        rows[1]["url"] = "https://www.semanticscholar.org/paper/"  # the sha cut off
        type(self).broken = rows[1]["corpusid"]
        type(self).dropped = rows.pop(2)["corpusid"]
        return rows


def test_every_bulk_paper_carries_its_sha_and_a_url_without_one_is_counted(tmp_path, corpus):
    """The bulk pages key papers by corpus id; SciDocs keys them by the 40-hex S2 id: the papers dataset's url gives
    it to every paper record (anchors and linked papers), and a url without one is listed and counted, not lost."""
    from sdr.synthetic.s2_api import sha_id

    ids = corpus_ids(corpus)
    api = MalformedUrlDatasetsApi(corpus, ids)
    client = Client(rate=1e6, api_key="test-key", transport=api, sleep=lambda s: None, say=lambda m: None)
    folder = tmp_path / "bulk"
    bulk.fetch_dataset(datasets.get("s2ag_bulk_thesis"), folder, progress=False, client=client, opener=api.open,
                       anchors=[str(c) for c in sorted(ids.values())[::5]], sleep=lambda s: None, memory_limit="512MB")
    sha_of = {str(cid): sha_id(pid) for pid, cid in ids.items()}
    broken, dropped = str(MalformedUrlDatasetsApi.broken), str(MalformedUrlDatasetsApi.dropped)
    records = [json.loads(line) for line in (folder / "papers.jsonl").read_text().splitlines()]
    linked = [link[role] for kind, role in (("references", "citedPaper"), ("citations", "citingPaper"))
              for line in (folder / f"{kind}.jsonl").read_text().splitlines() for link in json.loads(line)["data"]
              if link[role]["paperId"] is not None]
    assert len(records) > 5 and len(linked) > 50
    for record in records + linked:
        expected = None if record["paperId"] in (broken, dropped) else sha_of[record["paperId"]]
        assert record["paperSha"] == expected, record["paperId"]
    assert {broken, dropped} <= {record["paperId"] for record in records + linked}  # the planted papers are linked
    missing = [json.loads(line) for line in (folder / "missing.jsonl").read_text().splitlines()]
    assert [m["paperId"] for m in missing if m["kind"] == "paperSha"] == [broken]
    record = completion.fetch_state(folder).record
    assert record["counts"]["papers_without_sha"] == 1 and any("1 kept papers have none" in n for n in record["notes"])
    assert record["counts"]["nodes_not_in_papers"] == 1  # the dropped one: no title, abstract or sha, counted


def test_the_s2orc_citation_graph_is_an_edge_list_over_the_s2orc_papers(tmp_path, corpus):
    from sdr.graph import EdgeFiles

    ids, datasets_api = fetch("s2orc_citation_graph", tmp_path / "graph", corpus)
    keep = datasets_api.s2orc_ids()
    expected = {(str(ids[c.citing]), str(ids[c.cited])) for c in corpus.graph
                if ids[c.citing] in keep and ids[c.cited] in keep}
    files = EdgeFiles(tmp_path / "graph" / "edges")
    found = {(a, b) for citing, cited, _ in files.chunks(1000) for a, b in zip(citing, cited)}
    assert found == expected and len(expected) < len(corpus.graph)  # edges leaving the node set are not edges
    stats = json.loads((tmp_path / "graph" / "graph_stats.json").read_text())
    assert stats["node_set_papers"] == len(keep) and stats["edge_lines"] == len(expected)
    assert stats["scincl_table4"] == {"nodes": 52_526_134, "edges": 463_697_639}
    assert datasets.is_complete("s2orc_citation_graph", tmp_path / "graph")


def test_the_datasets_api_needs_a_key(tmp_path, corpus, monkeypatch):
    monkeypatch.delenv("S2_API_KEY", raising=False)
    with pytest.raises(ApiError, match="needs an API key: set S2_API_KEY"):
        bulk.fetch_dataset(datasets.get("s2ag_bulk_flew"), tmp_path, progress=False, anchors=["1"])
    api = SyntheticDatasetsApi(corpus)
    keyless = Client(rate=1e6, api_key="", transport=api, sleep=lambda s: None)
    with pytest.raises(ApiError, match="HTTP 403"):
        bulk.DatasetsApi(keyless).files("latest", "citations")


def test_the_plan_states_download_size_and_time():
    plan = bulk.bulk_plan("s2ag_bulk_flew", bandwidth_mb_s=100, filter_mb_s=50)
    expected = sum(bulk.RECORDS_PER_RELEASE[d] * bulk.BYTES_PER_RECORD[d] for d in ("citations", "papers", "abstracts"))
    assert plan["bytes"] == expected and plan["estimated"]
    assert plan["hours"] == pytest.approx(expected / 100e6 / 3600 + expected / 50e6 / 3600)
    thesis = bulk.bulk_plan("s2ag_bulk_thesis", {"citations": 300e9, "papers": 40e9, "abstracts": 100e9})
    assert thesis["bytes"] == 740e9 and not thesis["estimated"]  # two passes over the citations
    work = bulk.bulk_fetch_work("s2orc_citation_graph", "main")
    assert work.kind == "fetch" and work.download_bytes == bulk.bulk_plan("s2orc_citation_graph")["bytes"]
    assert work.other_hours() == pytest.approx(bulk.bulk_plan("s2orc_citation_graph")["hours"])


def test_a_chapter_switches_to_the_bulk_route_with_one_line(tmp_path, corpus, monkeypatch):
    from sdr.methods.flew.recipe import corpus_id_map

    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SDR_DATA_LOCK", str(tmp_path / "lock.json"))
    ids, _ = fetch("s2ag_bulk_flew", tmp_path / "cache" / "s2ag_bulk_flew", corpus,
                   anchors=[str(c) for c in sorted(ids_of(corpus).values())[::5]])
    switched = tuple("s2ag_bulk_flew" if n == "s2ag_citations_flew" else n for n in datasets.CHAPTER_DATA["flew"])
    monkeypatch.setitem(datasets.CHAPTER_DATA, "flew", switched)  # the one line
    monkeypatch.setitem(datasets.CHAPTER_MODELS, "flew", ())  # (its released models are not what this test is about)
    data = datasets.ChapterData("flew", "paper", needs=("s2ag_bulk_flew",), download=False)
    try:
        citations = data.input("s2ag_citations_flew", role="training")  # the chapter's call, unchanged
    finally:
        datasets.activate(None)
    assert citations.path == tmp_path / "cache" / "s2ag_bulk_flew" and citations.name == "s2ag_bulk_flew"
    mapping = corpus_id_map(citations.path)  # FLeW's query list maps through papers.jsonl's CorpusId
    assert mapping and all(k == v for k, v in mapping.items())  # corpus ids are the paper ids


def ids_of(corpus):
    return corpus_ids(corpus)


def test_the_registry_states_each_bulk_size_as_the_plan_computes_it():
    for name in bulk.ROUTES:
        plan = bulk.bulk_plan(name)
        assert datasets.get(name).size.startswith(f"≈ {plan['bytes'] / 1e12:.2f} TB streamed"), name
        assert datasets.get(name).fetcher == "bulk" and datasets.get(name).expected


# ---------------------------------------------------------------------------------------------- the texts route
def test_the_texts_route_keeps_only_the_triples_papers_and_lists_the_missing(tmp_path, corpus, monkeypatch):
    """s2ag_bulk_wol_texts: the ids come from the specter_wol triples file (every column, a header skipped); the
    papers and abstracts shards are filtered to them; an id the release lacks goes to missing.jsonl, counted."""
    from sdr.methods.scincl.without_leakage import read_wol_texts

    ids = corpus_ids(corpus)
    chosen = [ids[pid] for pid in sorted(corpus.papers)[:12]]
    absent = 999_999_999  # no paper of the release has it
    wol = tmp_path / "specter_wol"
    wol.mkdir()
    rows = [(chosen[i], chosen[i + 1], chosen[i + 2]) for i in range(0, 9, 3)] + [(chosen[9], absent, chosen[10])]
    (wol / "specter-wol__train_triples.csv").write_text(
        "query_paper_id,positive_id,negative_id\n" + "".join(f"{q},{p},{n}\n" for q, p, n in rows))
    monkeypatch.setattr(datasets, "resolve", lambda name: {"specter_wol": wol}[name])
    assert bulk.text_ids_for(datasets.get("s2ag_bulk_wol_texts")) == [*chosen[:10], absent, chosen[10]]
    folder = tmp_path / "texts"
    _, datasets_api, _, client = services(corpus, drop_after_bytes=512, expire_after_opens=3)
    bulk.fetch_dataset(datasets.get("s2ag_bulk_wol_texts"), folder, progress=False, client=client,
                       opener=datasets_api.open, sleep=lambda s: None, memory_limit="512MB")  # ids: text_ids_for
    records = [json.loads(line) for line in (folder / "papers.jsonl").read_text().splitlines()]
    wanted = sorted(chosen[:11])
    assert [int(r["paperId"]) for r in records] == wanted  # the triples' papers, nothing else, in id order
    by_cid = {cid: pid for pid, cid in ids.items()}
    assert all(r["title"] == corpus.papers[by_cid[int(r["paperId"])]].title for r in records)
    assert all(r["abstract"] == (corpus.papers[by_cid[int(r["paperId"])]].abstract or None) for r in records)
    assert [json.loads(line)["paperId"] for line in (folder / "missing.jsonl").read_text().splitlines()] == [str(absent)]
    assert (folder / "ids.txt").read_text().split() == [str(i) for i in sorted([*wanted, absent])]
    state = completion.fetch_state(folder)
    assert state.complete and state.record["counts"]["missing"] == 1
    assert state.record["counts"]["papers_found"] == 11 and datasets_api.drops  # the dropped downloads resumed
    texts = read_wol_texts(folder)
    assert set(texts.papers) == {str(i) for i in wanted} and texts.asked == 12 and texts.missing == 1
    assert texts.papers[str(wanted[0])].metadata == {"corpus_id": wanted[0]}


def test_the_texts_route_names_a_bad_triples_line(tmp_path, monkeypatch):
    wol = tmp_path / "specter_wol"
    wol.mkdir()
    (wol / "specter-wol__train_triples.csv").write_text("1,2,3\n4,abc,6\n")
    monkeypatch.setattr(datasets, "resolve", lambda name: wol)
    with pytest.raises(ValueError, match=r"specter-wol__train_triples.csv:2: expected three S2 corpus ids"):
        bulk.text_ids_for(datasets.get("s2ag_bulk_wol_texts"))


# ---------------------------------------------------------------------------------------------- the release
def test_a_named_release_is_checked_against_the_listing_and_recorded(tmp_path, corpus):
    ids, datasets_api = fetch("s2orc_citation_graph", tmp_path / "named", corpus, release="2024-04-02")
    assert "GET /release" in datasets_api.requests  # the listing was asked
    counts = completion.fetch_state(tmp_path / "named").record["counts"]
    assert counts["release"] == "2024-04-02" and counts["release_requested"] == "2024-04-02"
    fetch("s2orc_citation_graph", tmp_path / "latest", corpus)
    latest = completion.fetch_state(tmp_path / "latest").record["counts"]
    assert latest["release"] == "2024-04-02" and latest["release_requested"] == "latest"
    for name in ("edges/citations-part-00000.tsv.gz", "graph_stats.json"):
        assert (tmp_path / "named" / name).read_bytes() == (tmp_path / "latest" / name).read_bytes(), name
    with pytest.raises(ApiError, match=r"release '2099-01-01' is not in the Datasets API's release listing \(2 "
                                       r"releases; the most recent: 2024-04-02, 2023-03-14\)"):
        fetch("s2orc_citation_graph", tmp_path / "unknown", corpus, release="2099-01-01")
    assert not (tmp_path / "unknown" / "release.json").exists()


def test_sdr_data_fetch_release_reaches_the_bulk_fetcher(tmp_path, corpus, monkeypatch, capsys):
    from sdr.cli import main as sdr_main
    from sdr.fetchers import http

    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("S2_API_KEY", "test-key")
    api = SyntheticDatasetsApi(corpus)
    monkeypatch.setattr(http, "urllib_transport", api)  # the default client's transport: no network
    assert sdr_main(["data", "fetch", "s2orc_citation_graph", "--release", "2099-01-01"]) == 1
    err = capsys.readouterr().err
    assert "s2orc_citation_graph: not fetched: s2orc_citation_graph: fetch failed: " in err
    assert "release '2099-01-01' is not in the Datasets API's release listing" in err
    assert "the most recent: 2024-04-02, 2023-03-14" in err and "Traceback" not in err
    assert api.requests == ["GET /release"]  # stopped before any shard was listed
    assert sdr_main(["data", "fetch", "specter_wol", "--release", "2024-04-02"]) == 2
    assert "--release chooses a Semantic Scholar Datasets API release, which only the bulk datasets read" in \
        capsys.readouterr().err


def test_shard_downloads_follow_the_one_retry_policy(tmp_path, corpus):
    """A 5xx from S3 is retried with the client's back-off (its Retry-After capped), a 404 fails at once naming the
    shard, and a dropped connection resumes with Range to the shard's bytes."""
    import io as _io

    from sdr.fetchers.bulk import Opened, ShardDownloader

    api = SyntheticDatasetsApi(corpus, drop_after_bytes=100)
    client = Client(rate=1e6, api_key="k", transport=api, sleep=lambda s: None, max_backoff_s=60)
    answers = [Opened(503, {"retry-after": "86400"}, _io.BytesIO(b"<Error>SlowDown</Error>")),
               Opened(500, {}, _io.BytesIO(b""))]

    def flaky(url, start=0):
        return answers.pop(0) if answers else api.open(url, start)

    waits = []
    downloader = ShardDownloader(bulk.DatasetsApi(client), "2024-04-02", flaky, sleep=waits.append)
    key = next(iter(api.shards["papers"]))
    size = downloader.download("papers", key, tmp_path / key)
    assert (tmp_path / key).read_bytes() == api.shards["papers"][key] and size == len(api.shards["papers"][key])
    assert waits == [60, 2.0, 4.0]  # capped Retry-After, then 2 s (a 500), 4 s (the dropped connection, resumed)
    opened = []

    def missing(url, start=0):
        opened.append(url)
        return Opened(404, {})

    with pytest.raises(ApiError, match=r"https://s2ag-datasets.example/2024-04-02/papers/part-00001.jsonl.gz: HTTP "
                                       r"404: shard part-00001.jsonl.gz of papers: download refused"):
        ShardDownloader(bulk.DatasetsApi(client), "2024-04-02", missing, sleep=waits.append).download(
            "papers", "part-00001.jsonl.gz", tmp_path / "other")
    assert len(opened) == 1
