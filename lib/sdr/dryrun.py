"""The paper dry run: every chapter executed at the ``paper`` profile on a paper-shaped mirror, offline, in CI.

What cannot run here (downloads, SciBERT, a GPU) is still executed line by line: :func:`build_mirror` writes, for
every dataset a ``paper`` chapter reads (:data:`sdr.datasets.CHAPTER_DATA`), a small fixture in the dataset's
official layout, in the folder a download would fill. Real data from ``$SDR_DATA`` is linked in where the mirror
has it (CSFCube, CSAbstruct, SciCite, the Phrasebank, the S2ORC sample), so the chapters' checks against published
numbers run too; everything else is written from one seeded synthetic corpus by the replica writers, and the
API-built datasets are written *by their fetchers* (:mod:`sdr.fetchers`) answering from a transport that serves
the synthetic corpus in the APIs' JSON shapes and habits (paging, 429/5xx, null ids, 40-hex ids; the Datasets API's
gzipped shards behind links that expire, connections that drop), so the fetchers' code runs as well — the bulk
route's datasets (:data:`sdr.datasets.BULK_ROUTE`) included, whether or not a chapter reads them yet.

:func:`run` then executes the chapters with papermill at ``paper`` plus the ``dry_run`` caps of ``profiles.yml``
(tiny random stand-ins of SciBERT and the released models in their families and layouts, a few steps: sizes
only), with ``SDR_PAPER_DRY_RUN=1`` and
``SDR_OFFLINE=1``. Under the paper policy every replica writer raises, so a chapter that reads a replica at
``paper`` fails here. ``make paper-dry-run`` runs it; ``.ci/run`` runs it after ``make test``.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from sdr import datasets
from sdr.outputs import output_folder
from sdr.synthetic.s2_api import Faults, SyntheticGraphApi  # the Graph API of a synthetic corpus (also imported from here)

FIXTURE_SEED = 7
FIXTURE_PAPERS = 240
CORPUS_ID_BASE = 900_000  # synthetic papers get corpus ids CORPUS_ID_BASE + index (S2 corpus ids are integers)
REAL_FROM_MIRROR = ("csfcube", "csabstruct", "scicite", "academic_phrasebank", "s2orc_sample")
FIXTURES = Path(__file__).resolve().parents[2] / "data" / "fixtures"
WORKDIR_MARK = ".sdr-paper-dry-run"
"""The file that marks a folder as this command's work folder, the only kind it empties."""


# ---------------------------------------------------------------------------------------------- the corpus
class FixtureCorpus:
    """One seeded synthetic corpus for every fixture, split into a training part (triplets, citations, full
    text) and an evaluation part (SciDocs, MDCR, SciRepEval, …), so the fixtures agree on paper ids."""

    def __init__(self, n_papers: int = FIXTURE_PAPERS, seed: int = FIXTURE_SEED):
        from sdr.synthetic import make_corpus
        from sdr.synthetic.split import split_corpus

        # some edges without intent: the thesis' miscellaneous aspect exists in the real S2 data
        self.corpus = make_corpus(n_papers=n_papers, seed=seed, p_no_intent=0.15)
        self.train, self.eval = split_corpus(self.corpus, 0.5, seed=seed)
        self.seed = seed
        self.corpus_ids = {pid: CORPUS_ID_BASE + i for i, pid in enumerate(sorted(self.corpus.papers))}

    def record(self, pid: str) -> dict:
        paper = self.corpus.papers[pid]
        return {"sha": pid, "corpus_id": self.corpus_ids[pid], "title": paper.title, "abstract": paper.abstract}

    def triplets(self) -> list[tuple[str, str, str]]:
        """SPECTER-style triplets of the training part: each query with each of its references, a random
        non-cited negative (ids in file order, deterministic)."""
        rng = np.random.default_rng(self.seed)
        graph, ids = self.train.graph, sorted(self.train.papers)
        triplets = []
        for query in ids:
            cited = sorted(graph.references(query))
            for positive in cited[:5]:
                while True:
                    negative = ids[int(rng.integers(len(ids)))]
                    if negative != query and negative not in cited:
                        break
                triplets.append((query, positive, negative))
        return triplets


# ---------------------------------------------------------------------------------------------- writers
def _link(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(source.resolve(), target_is_directory=source.is_dir())
    return target


def write_scirepeval_cite_prediction(folder: Path, fixture: FixtureCorpus) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "train.jsonl").open("w", encoding="utf-8") as handle:
        for query, positive, negative in fixture.triplets():
            handle.write(json.dumps({"query": fixture.record(query), "pos": fixture.record(positive),
                                     "neg": fixture.record(negative)}) + "\n")


def write_specter_wol(folder: Path, fixture: FixtureCorpus) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["query_paper_id,positive_id,negative_id"] + [",".join(t) for t in fixture.triplets()]
    (folder / "specter-wol__train_triples.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_scidocs(folder: Path, fixture: FixtureCorpus) -> None:
    from sdr.synthetic.scidocs import write_scidocs as write

    write(fixture.eval, folder, seed=fixture.seed, n_queries=12, include_recomm=True, progress=False)


def write_mdcr(folder: Path, fixture: FixtureCorpus) -> None:
    from sdr.synthetic.mdcr import write_mdcr as write

    write(fixture.eval, folder, seed=fixture.seed, n_queries_per_field=3, progress=False)


def write_scirepeval_full(folder: Path, fixture: FixtureCorpus) -> None:
    from sdr.synthetic.scirepeval import write_scirepeval

    write_scirepeval(fixture.eval, folder, seed=fixture.seed, n_queries=8, n_candidates=10, progress=False)


def write_csfcube(folder: Path, fixture: FixtureCorpus) -> None:
    from sdr.evaluate import csfcube
    from sdr.synthetic.csfcube import write_csfcube as write

    write(fixture.eval, folder, n_queries=8, pool_size=20, seed=fixture.seed)
    # the SPECTER rankings shipped with CSFCube, in their format: {query: [[candidate, distance], ...]}
    rankings = folder / "eval_scripts" / "sample_ranked_pools"
    rankings.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(fixture.seed)
    for facet in csfcube.FACETS:
        pools = csfcube.judged_pools(folder, facet)
        ranked = {q: [[c, float(d)] for c, d in sorted(zip(pool, rng.random(len(pool))), key=lambda x: x[1])]
                  for q, pool in pools.items()}
        (rankings / f"test-pid2pool-csfcube-specter-{facet}-ranked.json").write_text(json.dumps(ranked))


def write_csabstruct(folder: Path, fixture: FixtureCorpus) -> None:
    from sdr.synthetic.sentences import write_csabstruct as write

    write(fixture.corpus, folder, seed=fixture.seed)


def write_pubmed_rct(folder: Path, fixture: FixtureCorpus) -> None:
    from sdr.synthetic.sentences import write_pubmed_rct as write

    write(fixture.corpus, folder, seed=fixture.seed)


def write_cf_sentences(folder: Path, fixture: FixtureCorpus) -> None:
    from sdr.synthetic.sentences import write_cf_sentences as write

    write(fixture.corpus, folder / "sentence-dataset", seed=fixture.seed)


def write_cfs3_release(folder: Path, fixture: FixtureCorpus) -> None:
    """The CFS3 release's four files in its layout (``{"text", "label": "02", "ngram"}`` lines, the 4:1 stratified
    split, ``5gram_dict.json`` as ``{"lemmatised 5-gram": "02"}``), from the fixture corpus' planted sentences and
    the n-grams of its phrases: enough labels and sentences for SciToricsBERT's paper path to train and validate."""
    from sdr import cfs3
    from sdr.synthetic import write_phrase_tsv
    from sdr.synthetic.sentences import write_cfs3

    folder.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="cfs3-release-"))
    records = cfs3.read_labelled(write_cfs3(fixture.corpus, scratch / "CFS3.jsonl"))
    train, valid, _ = cfs3.stratified_split(records, valid_fraction=0.2, seed=fixture.seed)
    for name, part in (("CFS3.jsonl", records), ("CFS3_train.jsonl", train), ("CFS3_valid.jsonl", valid)):
        (folder / name).write_text("".join(json.dumps({"text": r.text, "label": f"{r.label:02d}", "ngram": r.ngram})
                                           + "\n" for r in part), encoding="utf-8")
    dictionary = cfs3.build_ngram_dictionary(cfs3.read_phrase_tsv(write_phrase_tsv(scratch / "phrases.tsv")), n=5,
                                             progress=False)
    (folder / "5gram_dict.json").write_text(json.dumps({" ".join(g): f"{label:02d}" for g, label in
                                                        sorted(dictionary.labels.items())}), encoding="utf-8")
    shutil.rmtree(scratch)


def copy_fixture(relative: str, layout: tuple[tuple[str, str], ...] | None = None):
    """A writer that copies ``data/fixtures/<relative>`` (``layout``: (fixture file, dataset path) pairs)."""

    def write(folder: Path, fixture: FixtureCorpus) -> None:
        source = FIXTURES / relative
        if layout is None:
            shutil.copytree(source, folder)
            return
        for name, target in layout:
            (folder / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source / name, folder / target)

    return write


def write_s2_citations(folder: Path, fixture: FixtureCorpus) -> None:
    """The Semantic Scholar citation pages, written by the real fetcher from the synthetic Graph API."""
    from sdr.fetchers.http import Client
    from sdr.fetchers.semantic_scholar import CitationFetcher

    anchors = list(dict.fromkeys(q for q, _, _ in fixture.triplets()))
    client = Client(rate=1e6, api_key="dry-run", transport=SyntheticGraphApi(fixture.train), sleep=lambda s: None)
    CitationFetcher(folder, client, progress=False).fetch(anchors)


#: How the synthetic Graph API behaves for the mirror's fetches: as the real one does — 40-hex paper ids, pages of a
#: few links with ``next``, some links to papers it could not resolve (null ``paperId``), 429s with ``Retry-After``
#: as an HTTP date, 503s — so the fetcher's paging, retries and skips run in the dry run (its waits are not slept).
GRAPH_API_HABITS = {"sha_ids": True, "page_size": 4, "null_paper_every": 6,
                    "faults": Faults(rate_limit_every=9, retry_after_date=True, server_error_every=13)}




def _bulk_services(corpus, fixture: FixtureCorpus, ids=None):
    """The synthetic Datasets API (3 shards a dataset; the first download of every shard drops after 2 kB and links
    expire every 5 downloads, so the fetcher's Range resumes and fresh listings run) and Graph API of ``corpus``,
    behind one client."""
    from sdr.fetchers.http import Client
    from sdr.synthetic.s2_datasets import SyntheticDatasetsApi

    ids = fixture.corpus_ids if ids is None else ids
    datasets_api = SyntheticDatasetsApi(corpus, ids, shards=3, drop_after_bytes=2048, expire_after_opens=5)
    graph_api = SyntheticGraphApi(corpus, ids, **GRAPH_API_HABITS)

    def transport(method, url, headers, body, timeout):
        service = datasets_api if "/datasets/v1/" in url else graph_api
        return service(method, url, headers, body, timeout)

    client = Client(rate=1e6, api_key="dry-run", transport=transport, sleep=lambda s: None, say=lambda m: None)
    return datasets_api, graph_api, client


def _bulk_fetch(name: str, folder: Path, corpus, fixture: FixtureCorpus, anchors=None, ids=None) -> None:
    from sdr.fetchers.bulk import fetch_dataset

    datasets_api, graph_api, client = _bulk_services(corpus, fixture, ids)
    anchors = anchors(graph_api) if callable(anchors) else anchors
    fetch_dataset(datasets.get(name), folder, progress=False, client=client, opener=datasets_api.open, anchors=anchors,
                  sleep=lambda s: None, memory_limit="1GB")


def write_s2ag_bulk_flew(folder: Path, fixture: FixtureCorpus) -> None:
    """FLeW's citation graph through the bulk route (the chapter's route at paper): FLeW's dry-run graph (corpus ids,
    as ``flew_triplets``' fixture has them, :mod:`sdr.methods.flew.fixtures`) filtered out of the synthetic Datasets
    API's citations, papers and abstracts shards of that graph. Every paper of the graph is an anchor, as in the Graph
    API route's fixture: the released queries' links alone would give too few nodes for FLeW's unclipped bands
    (k⁻hard 4000, a branch the dry run must take)."""
    corpus, ids, queries, _ = _method("flew.fixtures")._dry_run_graph(fixture.seed)
    _bulk_fetch("s2ag_bulk_flew", folder, corpus, fixture, [str(ids[pid]) for pid in sorted(corpus.papers)], ids=ids)


def write_s2ag_bulk_thesis(folder: Path, fixture: FixtureCorpus) -> None:
    """The thesis' pages through the bulk route: the anchors of the Graph API route's fixture
    (``sdr.methods.sciaspect.write_dry_run_citations``, the whole fixture corpus) as 40-hex S2 ids (SciNCL's triples
    name papers so), resolved to corpus ids through ``/paper/batch``, then two passes over the citations shards (the
    references of references)."""
    queries = _method("sciaspect").dry_run_anchors(fixture)
    _bulk_fetch("s2ag_bulk_thesis", folder, fixture.corpus, fixture,
                lambda graph_api: [graph_api.external(q) for q in queries])


def write_s2orc_citation_graph(folder: Path, fixture: FixtureCorpus) -> None:
    """SciNCL's citation graph through the bulk route: the whole fixture corpus' citations, kept where both papers are
    in the synthetic ``s2orc`` dataset."""
    _bulk_fetch("s2orc_citation_graph", folder, fixture.corpus, fixture)


def write_scirepeval_registry(folder: Path, fixture: FixtureCorpus) -> None:
    """The task registry of the SciRepEval fixture (the one ``write_scirepeval_full`` writes with its data)."""
    with tempfile.TemporaryDirectory() as temporary:
        write_scirepeval_full(Path(temporary), fixture)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(temporary) / "scirepeval_tasks.jsonl", folder / "scirepeval_tasks.jsonl")


def _s2orc_record(fixture: FixtureCorpus, pid: str) -> dict:
    paper = fixture.corpus.papers[pid]
    text, spans = "", {"title": [], "abstract": [], "sectionheader": [], "paragraph": []}

    def add(kind: str, value: str) -> None:
        nonlocal text
        start = len(text)
        text += value + "\n"
        spans[kind].append({"start": start, "end": start + len(value)})

    add("title", paper.title)
    add("abstract", paper.abstract)
    for section in paper.sections:
        add("sectionheader", section.heading)
        for paragraph in section.paragraphs:
            add("paragraph", paragraph)
    return {"corpusid": fixture.corpus_ids[pid], "externalids": {"doi": None},
            "content": {"source": {"pdfsha": None}, "text": text,
                        "annotations": {k: json.dumps(v) for k, v in spans.items()}}}


def write_s2orc_specter(folder: Path, fixture: FixtureCorpus) -> None:
    """S2ORC full text of the triplets' papers, written by the real S2ORC fetcher from a synthetic shard."""
    from sdr.fetchers.http import Client, Response
    from sdr.fetchers.s2orc import fetch_full_text

    shard = "".join(json.dumps(_s2orc_record(fixture, pid)) + "\n" for pid in sorted(fixture.corpus.papers))
    listing = Response(200, json.dumps({"files": ["https://dry-run.invalid/s2orc/shard-0.gz"]}).encode())
    client = Client(rate=1e6, api_key="dry-run", transport=lambda *a: listing, sleep=lambda s: None)
    wanted = {fixture.corpus_ids[p] for t in fixture.triplets() for p in t}
    fetch_full_text(sorted(map(str, wanted)), folder, client=client,
                    opener=lambda url: io.BytesIO(gzip.compress(shard.encode())), progress=False)


def _method(chapter: str):
    """A chapter's methods package, imported when its fixture is written (it imports torch)."""
    import importlib

    return importlib.import_module(f"sdr.methods.{chapter}")
def _method_writer(chapter: str, name: str):
    """A fixture writer of a chapter's methods package (imported when the mirror is written)."""
    def write(folder: Path, fixture: FixtureCorpus) -> None:
        import importlib

        getattr(importlib.import_module(f"sdr.methods.{chapter}"), name)(folder, fixture)

    return write


def write_dry_run_scidocs(folder: Path, fixture: FixtureCorpus) -> None:
    """SciDocs as the chapters' leakage branches need it: SPECTER's fixture (training papers among the cite task's
    candidates, named as SPECTER's triplets name them) and a few papers of the thesis graph named by their 40-hex S2
    ids, which the SciAspect chapter finds in the bulk route's corpus-id graph through each paper's ``paperSha``."""
    _method("specter").write_dry_run_scidocs(folder, fixture)
    _method("sciaspect").name_thesis_papers_by_sha(folder, fixture)


WRITERS = {
    "scirepeval_cite_prediction": write_scirepeval_cite_prediction,
    "specter_wol": _method_writer("scincl", "write_dry_run_wol"),
    "scidocs": write_dry_run_scidocs,
    "mdcr": write_mdcr,
    "scirepeval_full": write_scirepeval_full,
    "csfcube": write_csfcube,
    "csabstruct": write_csabstruct,
    "pubmed_rct": write_pubmed_rct,
    "cf_sentences": write_cf_sentences,
    "cfs3": write_cfs3_release,
    "academic_phrasebank": copy_fixture("cfs3/phrasebank"),
    "scicite": copy_fixture("scicite", (("dev.jsonl", "dev.jsonl"), ("dev.jsonl", "test.jsonl"))),
    "s2orc_sample": copy_fixture("s2orc", (("metadata.jsonl", "metadata/sample.jsonl"),)),
    "s2_citations_thesis": lambda folder, fixture: _method("sciaspect").write_dry_run_citations(folder, fixture),
    # FLeW's: a graph of > 4,000 papers so its bands are not scaled (sdr.methods.flew.fixtures)
    "flew_triplets": lambda folder, fixture: _method("flew.fixtures").write_dry_run_triplets(folder, fixture),
    "s2ag_citations_flew": lambda folder, fixture: _method("flew.fixtures").write_dry_run_citations(folder, fixture),
    "flew_split_metadata": lambda folder, fixture: _method("flew.fixtures").write_dry_run_split_metadata(folder,
                                                                                                          fixture),
    "scirepeval": write_scirepeval_registry,
    "s2orc_specter": write_s2orc_specter,
    "scidocs_specter_embeddings": lambda folder, fixture: __import__(  # the Benchmarks chapter's fixture
        "sdr.methods.benchmarks").methods.benchmarks.write_shipped_embeddings(folder, fixture),
    "s2ag_bulk_flew": write_s2ag_bulk_flew,
    "s2ag_bulk_thesis": write_s2ag_bulk_thesis,
    "s2orc_citation_graph": write_s2orc_citation_graph,
    # SciNCL's w/o-leakage texts through the bulk route (after specter_wol, whose ids it filters to)
    "s2ag_bulk_wol_texts": _method_writer("scincl", "write_dry_run_wol_texts"),
}
"""How the mirror gets each dataset a ``paper`` chapter reads (``REAL_FROM_MIRROR`` ones are linked when
``$SDR_DATA`` has them)."""


# ---------------------------------------------------------------------------------------------- released models
MODELS_FOLDER = "models"
"""Where the mirror holds the released models' stand-ins (``<mirror>/models/<org>__<name>``), which
``ChapterData.model`` loads in the dry run."""
BASE_MODEL = "allenai/scibert_scivocab_uncased"
"""The ``paper`` profile's base model: its stand-in is a WordPiece BERT like SciBERT."""


def needed_models(chapters=None) -> list[str]:
    """The base model and every released model the chapters read at ``paper``."""
    from sdr import released

    chapters = chapters or list(datasets.CHAPTER_MODELS)
    return list(dict.fromkeys([BASE_MODEL, *(m for c in chapters for m in datasets.CHAPTER_MODELS.get(c, ())),
                               *(check.model for check in released.checks_read_by(chapters))]))


def write_model_stand_ins(mirror: Path, models, fixture: "FixtureCorpus") -> dict[str, Path]:
    """A tiny random stand-in of each model in its family and released layout (:mod:`sdr.synthetic.models`), its
    tokenizer trained on the fixture corpus' texts."""
    from sdr.synthetic.models import folder_name, write_stand_in

    texts = [f"{paper.title} {paper.abstract}" for paper in fixture.corpus.papers.values()]
    written = {}
    for number, name in enumerate(models):
        folder = mirror / MODELS_FOLDER / folder_name(name)
        if not folder.exists():
            write_stand_in(folder, name, texts, layers=2, hidden=32, seed=FIXTURE_SEED + number)
        written[name] = folder
    return written


def write_released_expected(mirror: Path, checks, data_dirs) -> Path:
    """The expected values of the released-model checks on the mirror (``released_expected.json``): each check's
    model stand-in embeds the benchmark's texts by a plain ``transformers`` forward (:func:`sdr.released.
    plain_embeddings`), scored by the benchmark's evaluator — the independent computation the chapters' checks
    compare the book's encoding path with. ``data_dirs``: each benchmark's folder in the mirror."""
    from sdr import embed, released
    from sdr.evaluate import suite
    from sdr.synthetic.models import folder_name

    path = mirror / released.EXPECTED_FILE
    stored = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    scored = {}  # checks of one model read the same way (a chapter may split its metrics) are embedded once
    for check in checks:
        key = (check.label, check.benchmark, check.pooling, check.max_length, check.csfcube_queries)
        if key not in scored:  # one model read one way is embedded and scored once
            folder = mirror / MODELS_FOLDER / folder_name(check.model) / check.subfolder
            data = Path(data_dirs[check.benchmark])
            encoder = embed.load_model(str(folder), max_length=check.max_length, pooling=check.pooling, device="cpu")
            inputs = embed.benchmark_inputs(check.benchmark, data, encoder, check.csfcube_queries)
            vectors = released.plain_embeddings(folder, inputs.texts, check.pooling, check.max_length)
            scored[key] = suite.score(inputs, vectors)[0]
        for metric, value in released.check_metrics(check, scored[key]).items():
            stored[released.expected_key(check, metric)] = value
    path.write_text(json.dumps(stored, indent=1, sort_keys=True), encoding="utf-8")
    return path


def write_released_expected_for(mirror: Path, chapters) -> Path | None:
    """The expected values of every released check the chapters register (``RELEASED_CHECKS``), on the mirror's
    benchmark folders (:data:`sdr.embed.DATASET_OF`)."""
    from sdr import embed, released

    checks = released.checks_read_by(chapters)
    if not checks:
        return None
    data_dirs = {}
    for benchmark in {check.benchmark for check in checks}:
        dataset = embed.DATASET_OF[benchmark]
        data_dirs[benchmark] = mirror / datasets.get(dataset).folder
    return write_released_expected(mirror, checks, data_dirs)


def branches_taken(chapter: str, results: Path, required=None) -> dict:
    """The ``paper`` branches a dry-run chapter had to take (``required``, default its method's ``DRY_RUN_BRANCHES``)
    against those its stored results record (``extra["branches"]``, :meth:`sdr.book.ChapterRun.branch`):
    ``{"required", "taken", "missing"}``."""
    if required is None:
        required = list(getattr(_method_or_none(chapter), "DRY_RUN_BRANCHES", ()))
    required = list(required)
    path = results / chapter / "paper.json"
    taken = json.loads(path.read_text()).get("extra", {}).get("branches", []) if path.exists() else []
    return {"required": required, "taken": taken, "missing": [b for b in required if b not in taken]}


def needed_datasets(chapters=None) -> list[str]:
    chapters = chapters or list(datasets.CHAPTER_DATA)
    return list(dict.fromkeys(name for c in chapters for name in datasets.CHAPTER_DATA[c]))


def bulk_datasets(chapters=None) -> list[str]:
    """The bulk-route datasets of the chapters (:data:`sdr.datasets.BULK_ROUTE`): the mirror builds them through the
    bulk fetcher too, whether or not CHAPTER_DATA reads them yet, so the dry run runs that route."""
    chapters = chapters or list(datasets.CHAPTER_DATA)
    return [datasets.BULK_ROUTE[c][1] for c in chapters if c in datasets.BULK_ROUTE]


def build_mirror(folder: str | Path, chapters=None, real_data: str | Path | None = None,
                 extra: tuple[str, ...] | list[str] = ()) -> dict[str, str]:
    """Write the paper-shaped mirror into ``folder`` (the chapters' datasets and ``extra`` ones); returns
    ``{dataset: "real (linked)" | "fixture"}``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    real_root = Path(real_data) if real_data else None
    fixture = None
    made = {}
    for name in dict.fromkeys([*needed_datasets(chapters), *extra]):
        dataset = datasets.get(name)
        target = folder / dataset.folder
        if target.exists():
            made[name] = "present"
            continue
        source = real_root / dataset.folder if real_root else None
        if name in REAL_FROM_MIRROR and source is not None and all(
                (source / p).exists() for p in datasets.paper_files(dataset)):
            _link(source, target)
            made[name] = "real (linked)"
            continue
        if name not in WRITERS:
            raise ValueError(f"no fixture writer for {name}: add one to sdr.dryrun.WRITERS")
        fixture = fixture or FixtureCorpus()
        WRITERS[name](target, fixture)
        missing = [p for p in datasets.paper_files(dataset) if not (target / p).exists()]
        if missing:
            raise ValueError(f"fixture of {name} lacks files a paper run reads: {missing[:5]}")
        if dataset.fetcher and not datasets.fetch_state(target).complete:
            # written by a fixture writer that calls the fetcher's parts (or, for scirepeval_full, the replica
            # writer): the completion record says so, as a fetch's own would say what it fetched
            from sdr.fetchers.completion import write_record

            write_record(target, name, f"dry-run fixture writer {WRITERS[name].__name__}", {})
        made[name] = "fixture"
    return made


# ---------------------------------------------------------------------------------------------- the run
def dry_run_overrides(chapter: str) -> dict:
    """The ``dry_run`` caps of profiles.yml (sizes only) for ``chapter``."""
    from sdr import book

    spec = book.load_profiles().get("dry_run") or {}
    return {**(spec.get("parameters") or {}), **((spec.get("chapters") or {}).get(chapter) or {})}


def execute(notebook: Path, parameters: dict, output: Path, environment: dict, timeout: int = 1800) -> dict:
    """Execute one notebook with papermill in ``environment`` (added to this process's); returns
    ``{"ok", "seconds", "error", "ename", "evalue"}`` (the exception's name and message when it failed)."""
    import papermill

    environment = {**environment, "SDR_INTERACTIVE_PROFILE": ""}  # papermill's parameters, not an interactive profile
    saved = {k: os.environ.get(k) for k in environment}
    os.environ.update(environment)
    clock = time.perf_counter()
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        papermill.execute_notebook(str(notebook), str(output), parameters=parameters, cwd=str(notebook.parents[1]),
                                   kernel_name="python3", progress_bar=False, log_output=False,
                                   execution_timeout=timeout)
        return {"ok": True, "seconds": time.perf_counter() - clock, "error": "", "ename": None, "evalue": ""}
    except Exception as error:  # noqa: BLE001 - every chapter runs; failures are listed at the end
        return {"ok": False, "seconds": time.perf_counter() - clock,
                "error": "".join(traceback.format_exception_only(type(error), error))[-3000:],
                "ename": getattr(error, "ename", type(error).__name__), "evalue": getattr(error, "evalue", str(error))}
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def check_stop(chapter: str, workdir: Path, limit_s: float = 120.0) -> dict:
    """``chapter`` at ``paper`` with no data and no network: it must stop before training, within ``limit_s``,
    with one :class:`~sdr.datasets.PaperDataMissing` naming every dataset it reads and its fetch command."""
    from sdr import book

    empty = workdir / "no-data"
    (empty / "mirror").mkdir(parents=True, exist_ok=True)
    environment = {"SDR_DATA": str(empty / "mirror"), "SDR_DATA_CACHE": str(empty / "cache"),
                   "SDR_RESULTS": str(empty / "results"), "SDR_OFFLINE": "1", datasets.DRY_RUN_ENV: "",
                   "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    # the dry run's parts (all of them), so the stop names the data of every part, as CHAPTER_DATA lists it
    parts = {key: value for key, value in dry_run_overrides(chapter).items() if key == "parts"}
    parameters = book.chapter_parameters(chapter, "paper", parts)
    result = execute(book.NOTEBOOKS / f"{chapter}.ipynb", parameters, workdir / "stops" / f"{chapter}.ipynb",
                     environment, timeout=int(limit_s))
    problems = []
    if result["ok"] or result["ename"] != "PaperDataMissing":
        problems.append(f"expected a PaperDataMissing stop, got {'success' if result['ok'] else result['ename']}")
    if result["seconds"] > limit_s:
        problems.append(f"stopped after {result['seconds']:.0f} s (limit {limit_s:.0f} s)")
    for name in datasets.CHAPTER_DATA.get(chapter, ()):
        if f"- {name}:" not in result["evalue"]:
            problems.append(f"the message does not name {name}")
    return {**result, "ok": not problems, "problems": problems}


def run(chapters=None, workdir: str | Path = "_build/paper-dry-run", real_data: str | Path | None = None,
        fresh: bool = True, stops: bool = True) -> dict[str, dict]:
    """Build the mirror and execute ``chapters`` (default: all) at ``paper`` with the dry-run caps; first, unless
    ``stops`` is off, check that each chapter with no data stops before training (:func:`check_stop`)."""
    from sdr import book

    from sdr.outputs import Outputs

    # the work folder is emptied and refilled: only a folder this command made (its mark file) or an empty one,
    # never a source folder, never one holding --real-data
    outputs = Outputs(inputs={"--real-data": real_data}, stores={"--workdir": workdir},
                      owned={"--workdir": WORKDIR_MARK}).check()
    if fresh:
        outputs.claim("--workdir")
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    chapters = list(chapters or book.chapter_names())
    outcome = {}
    if stops:
        for chapter in chapters:
            if not datasets.CHAPTER_DATA.get(chapter):
                continue
            result = check_stop(chapter, workdir)
            outcome[f"{chapter} (no data: stops)"] = result
            state = "ok" if result["ok"] else "FAILED: " + "; ".join(result["problems"])
            print(f"[dry run] {chapter} without data: {state} ({result['seconds']:.0f} s)", flush=True)
    mirror = workdir / "mirror"
    started = time.perf_counter()
    with_data = [c for c in chapters if c in datasets.CHAPTER_DATA]
    made = build_mirror(mirror, with_data, real_data, extra=bulk_datasets(with_data))
    models = write_model_stand_ins(mirror, needed_models(chapters), FixtureCorpus())
    write_released_expected_for(mirror, chapters)
    print(f"[dry run] mirror {mirror} in {time.perf_counter() - started:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in made.items()) + f"; {len(models)} model stand-ins", flush=True)
    environment = {"SDR_DATA": str(mirror), "SDR_DATA_CACHE": str(workdir / "cache"),
                   "SDR_RESULTS": str(workdir / "results"), datasets.DRY_RUN_ENV: "1", "SDR_OFFLINE": "1",
                   "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **book.KERNEL_ENVIRONMENT}
    for chapter in chapters:
        parameters = book.chapter_parameters(chapter, "paper", dry_run_overrides(chapter))
        result = execute(book.NOTEBOOKS / f"{chapter}.ipynb", parameters, workdir / "chapters" / f"{chapter}.ipynb",
                         environment)
        if result["ok"]:
            branches = branches_taken(chapter, workdir / "results")
            if branches["missing"]:
                result = {**result, "ok": False, "problems": [f"the paper path's branches not taken: "
                                                              f"{', '.join(branches['missing'])}"]}
        outcome[chapter] = result
        print(f"[dry run] {chapter}: {'ok' if result['ok'] else 'FAILED'} in {result['seconds']:.0f} s", flush=True)
        given = getattr(_method_or_none(chapter), "DRY_RUN_GIVEN_GRAPH", None)
        if given:
            name = f"{chapter} (given graph embedding)"
            outcome[name] = run_on_given_graph(chapter, given, mirror, workdir, environment)
            print(f"[dry run] {name}: {'ok' if outcome[name]['ok'] else 'FAILED'} in {outcome[name]['seconds']:.0f} s",
                  flush=True)
    return outcome


def _method_or_none(chapter: str):
    import importlib

    try:
        return importlib.import_module(f"sdr.methods.{chapter}")
    except ModuleNotFoundError:
        return None


def run_on_given_graph(chapter: str, given: dict, mirror: Path, workdir: Path, environment: dict) -> dict:
    """The chapter again on a precomputed graph embedding (its method's ``DRY_RUN_GIVEN_GRAPH``; SciNCL's S2ORC graph,
    issue 36): the mirror's ``given["dataset"]`` edges embedded as `sdr graph embed --work-dir` does
    (:func:`sdr.graph.embed_edge_files`, with the run's graph settings), then ``given["parts"]`` executed with
    ``given["parameter"]`` naming that folder, in a results store of its own (the chapter's record from the run above
    stays the one later chapters read); it must take ``given["branches"]``."""
    from sdr import book
    from sdr.graph import GraphEmbeddingConfig, embed_edge_files
    from sdr.plan import chapter_values

    overrides = {**dry_run_overrides(chapter), "parts": given["parts"]}
    parameters = book.chapter_parameters(chapter, "paper", overrides)
    notebook = book.NOTEBOOKS / f"{chapter}.ipynb"
    settings = chapter_values(chapter, "paper", overrides)
    folder = workdir / f"{chapter}-given-graph"
    shutil.rmtree(folder, ignore_errors=True)
    clock = time.perf_counter()
    config = GraphEmbeddingConfig(dimension=settings["graph_dimension"], comparator=settings["graph_comparator"],
                                  epochs=settings["graph_epochs"], seed=settings["seed"])
    embed_edge_files([mirror / datasets.get(given["dataset"]).folder / "edges"], config, work_dir=folder / "embedding")
    parameters[given["parameter"]] = str(folder / "embedding")
    results = folder / "results"
    result = execute(notebook, parameters, workdir / "chapters" / f"{chapter}-given-graph.ipynb",
                     {**environment, "SDR_RESULTS": str(results)})
    result["seconds"] = time.perf_counter() - clock  # the embedding's time too
    if result["ok"]:
        missing = branches_taken(chapter, results, given["branches"])["missing"]
        if missing:
            result = {**result, "ok": False, "problems": [f"the given-graph run's branches not taken: "
                                                          f"{', '.join(missing)}"]}
    return result


def register(subparsers) -> None:
    parser = subparsers.add_parser("paper-dry-run", help="execute chapters at the paper profile on official-format "
                                                         "fixtures, offline (what CI runs after make test)")
    parser.add_argument("chapters", nargs="*", help="default: every chapter")
    parser.add_argument("--workdir", type=output_folder, default=Path("_build/paper-dry-run"),
                        help=f"a new or empty folder, or one this command made (it holds {WORKDIR_MARK}): it is "
                             f"emptied first")
    parser.add_argument("--real-data", default=os.environ.get("SDR_DATA") or None,
                        help="a data mirror whose real CSFCube, CSAbstruct, SciCite, Phrasebank and S2ORC sample are "
                             "linked in (default: $SDR_DATA)")
    parser.set_defaults(func=_command)


def _command(args) -> int:
    outcome = run(args.chapters or None, args.workdir, args.real_data)
    failed = {c: o for c, o in outcome.items() if not o["ok"]}
    total = sum(o["seconds"] for o in outcome.values())
    print(f"[dry run] {len(outcome) - len(failed)} of {len(outcome)} checks passed (chapters without data stop "
          f"before training; chapters on the fixtures run at paper) in {total / 60:.1f} min", file=sys.stderr)
    for chapter, result in failed.items():
        print(f"[dry run] {chapter} FAILED: {'; '.join(result.get('problems', []))}\n{result['error']}",
              file=sys.stderr)
    return 1 if failed else 0
