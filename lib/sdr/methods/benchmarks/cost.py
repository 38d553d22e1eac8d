"""The Benchmarks chapter's parts and its whole cost up front (issue 30, parts 2-3).

:data:`PARTS` says what each part reproduces and whether the default ``paper`` run (``parts: headline``) runs it;
:data:`PART_DATA` which data sets a part reads, so a run of some parts checks and fetches only theirs
(:func:`chapter_run`). :func:`cost_plan` counts everything the chapter does at the notebook's parameters: the
encodings of every released model the book's chapters register (``RELEASED_CHECKS``, gathered by the ``released``
part) and of the untrained encoder, the SVM grids and recommendation rankers of SciDocs' evaluator, and the data
fetches. Sizes come from ``data/paper_tables/benchmark_sizes.csv``; tokens per text, bandwidth and CPU rates are
assumptions, each stated in its line's ``how``.

Shown in: notebooks/benchmarks.ipynb (the plan, printed at ``paper`` before anything runs); ``python -m sdr.plan``
and the README's table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sdr.plan import CostPlan, Part, Work, resolve_parts

__all__ = ["PARTS", "PART_DATA", "RELEASED_DATA", "BENCHMARK_SIZE_ROWS", "TOKENS_PER_TEXT", "FETCH_BYTES",
           "ASSUMED_BYTES_PER_S", "SVM_MEASURED", "SCIDOCS_CLASSIFICATION_ESTIMATE", "SCIDOCS_SVM_CPU_HOURS", "SCIDOCS_RECOMM_CPU_HOURS", "SECTIONS_PER_PAPER",
           "benchmark_texts", "needs", "chapter_run", "gathered_checks", "cost_plan"]

PARTS = {
    "released": Part("released", "the papers' models on the papers' benchmarks: SciDocs' shipped SPECTER embeddings "
                                 "against SPECTER's SciDocs row (SciNCL Table 1, quoted from Cohan et al. 2020) and "
                                 "every chapter's released checks against its paper's table", headline=True),
    "csfcube": Part("csfcube", "the CSFCube harness against the official evaluator's published SPECTER scores "
                               "(CSFCube's eval_scripts README) and the floor: lexical rankers, the untrained encoder, "
                               "a random order", headline=True),
    "sentences": Part("sentences", "SciToricsBERT Table 4's sentence-retrieval set-up (CSAbstruct, PubMed-RCT): the "
                                   "untrained encoder beside the paper's rows", headline=True),
    "paragraphs": Part("paragraphs", "CoSaEmb Table 6's paragraph-retrieval set-up on S2ORC full text (not the "
                                     "paper's arXiv set, so not comparable with its rows)"),
}
"""The chapter's parts (``parts`` parameter: ``"all"``, ``"headline"`` or names). The headline is the released
models' table and the harness checks; paragraph retrieval is left out of it because its S2ORC full text is a
~ 250 GB stream (:data:`FETCH_BYTES`) for a table no paper row can be set beside."""

RELEASED_DATA = ("scidocs", "scidocs_specter_embeddings", "mdcr", "scirepeval_full", "csfcube", "csabstruct", "pubmed_rct")
"""What the ``released`` part may read: SciDocs with its shipped SPECTER embeddings, and every benchmark a chapter's
released check scores (``sdr.embed.DATASET_OF`` of each check's benchmark; a test keeps every registered check's
data set in here)."""

PART_DATA = {
    "released": RELEASED_DATA,
    "csfcube": ("csfcube",),
    "sentences": ("csabstruct", "pubmed_rct"),
    "paragraphs": ("s2orc_specter",),
}
"""The data sets each part reads at ``paper`` (their union is ``sdr.datasets.CHAPTER_DATA["benchmarks"]``)."""

BENCHMARK_SIZE_ROWS = {"scidocs": "SciDocs papers", "mdcr": "MDCR documents", "csfcube": "CSFCube papers",
                       "csabstruct": "CSAbstruct test sentences", "pubmed_rct": "PubMed-RCT test sentences"}
"""Benchmark → its row of ``data/paper_tables/benchmark_sizes.csv`` (the texts a model embeds to be scored).
SciRepEval has none: no paper of the book gives its size, and the plan says so instead of guessing."""

TOKENS_PER_TEXT = {"scidocs": 250, "mdcr": 250, "scirepeval": 250, "scirepeval_full": 250, "csfcube": 250, "csabstruct": 40,
                   "pubmed_rct": 40, "paragraphs": 400}
"""Assumed tokens a text, before the input length cuts it: a title and abstract 250 (as :func:`sdr.plan.paper_runs`
assumes for SPECTER's papers), a sentence 40 (as it assumes for CFS3's), an S2ORC section 400 (as for CoSaEmb's)."""

ASSUMED_BYTES_PER_S = 50e6
"""An assumed download bandwidth (50 MB/s: a cloud VM or Colab; not measured)."""

GB, MB = 1024 ** 3, 1024 ** 2
FETCH_BYTES = {
    "scidocs": int(4.6 * GB),  # the registry's size: SciDocs with its shipped embeddings
    "mdcr": 500 * MB,  # the registry's "~ 500 MB"
    "scirepeval_full": 4 * GB,  # the evaluation sets of the tasks the checks read (as sdr.methods.sciaspect assumes)
    "csfcube": 10 * MB,  # an estimate: six JSON/CSV files and 50 readable annotations
    "csabstruct": 5 * MB,  # an estimate: three JSONL files of 2,189 abstracts
    "pubmed_rct": 30 * MB,  # the registry's "~ 30 MB"
    "s2orc_specter": 250 * GB,  # the registry's manual: every S2ORC shard streamed (~ 250 GB read, ~ 2 GB kept)
}
"""Bytes each data set's fetch transfers (once: the cache keeps it for every chapter)."""

SVM_MEASURED = {"train": 2_000, "classes": 19, "cpu_seconds": 42.6}
"""SciDocs' classification grid (``GridSearchCV`` cv 3 over 7 C, 22 ``LinearSVC`` fits) on 2,000 synthetic 768-d
training vectors of 19 overlapping classes: 42.6 s of CPU on this project's 2-core CPU, one thread (10.1 s at 1,000:
the time grew with the square of the size; ``benchmarks/results/scidocs_svm_cpu.txt``)."""

SCIDOCS_CLASSIFICATION_ESTIMATE = {"MAG": (25_000, 19), "MeSH": (23_000, 11)}
"""MAG's and MeSH's papers and classes, as the SPECTER paper gives them (Cohan et al. 2020 §4; not among the book's
papers, so not checked against its text): an upper bound of the training vectors, since the SVM trains on a split."""

SCIDOCS_SVM_CPU_HOURS = sum(SVM_MEASURED["cpu_seconds"] * (papers / SVM_MEASURED["train"]) ** 2
                            * classes / SVM_MEASURED["classes"]
                            for papers, classes in SCIDOCS_CLASSIFICATION_ESTIMATE.values()) / 3600
"""CPU hours of SciDocs' classification for one set of embeddings (MAG and MeSH): :data:`SVM_MEASURED` scaled by
the square of the size and by the classes (one-vs-rest) to :data:`SCIDOCS_CLASSIFICATION_ESTIMATE` (≈ 2.8 h). An
extrapolation over an order of magnitude in size from synthetic data: read it as the order of the cost."""

SCIDOCS_RECOMM_CPU_HOURS = 0.1
"""CPU hours of SciDocs' recommendation ranker for one set of embeddings (a small PyTorch ranker trained on the
recommendation clicks): an estimate, not measured at SciDocs' size."""

SECTIONS_PER_PAPER = 8
"""Assumed sections of an S2ORC full-text paper (the paragraph-retrieval chunks): an estimate."""


def benchmark_texts() -> dict[str, int]:
    """Benchmark → texts embedded, from ``data/paper_tables/benchmark_sizes.csv`` (:data:`BENCHMARK_SIZE_ROWS`)."""
    from sdr.book import read_paper_table

    table = read_paper_table("benchmark_sizes")
    sizes = {}
    for benchmark, row in BENCHMARK_SIZE_ROWS.items():
        found = table[table["model"] == row]
        if len(found) != 1:
            raise ValueError(f"data/paper_tables/benchmark_sizes.csv: {len(found)} rows named {row!r}")
        sizes[benchmark] = int(found["texts"].iloc[0])
    return sizes


def needs(parts: Iterable[str]) -> tuple[str, ...]:
    """The data sets the parts read at ``paper``, in ``CHAPTER_DATA["benchmarks"]``'s order."""
    from sdr.datasets import CHAPTER_DATA

    wanted = {name for part in parts for name in PART_DATA[part]}
    return tuple(name for name in CHAPTER_DATA["benchmarks"] if name in wanted)


def gathered_checks() -> dict[str, list]:
    """Every chapter's released checks (:func:`sdr.released.registered_checks`), by chapter: what the ``released``
    part scores."""
    from sdr.released import registered_checks

    return registered_checks()


def chapter_run(namespace: Mapping):
    """The chapter's :class:`sdr.book.ChapterRun` with the data sets and models of the parts it runs: at ``paper`` a
    headline run checks and fetches neither S2ORC's full text nor anything only paragraph retrieval reads, and the
    released part adds every registered check's model.

    Shown in: notebooks/benchmarks.ipynb, first code cell."""
    from sdr import book

    parts = resolve_parts(namespace.get("parts", "all"), PARTS)
    models = ([check.model for found in gathered_checks().values() for check in found]
              if "released" in parts else [])
    return book.ChapterRun("benchmarks", namespace, needs=needs(parts), models=list(dict.fromkeys(models)))


def _tokens(benchmark: str, max_length: int) -> int:
    return min(TOKENS_PER_TEXT[benchmark], max_length)


def _fetch(part: str, name: str) -> Work:
    from sdr import datasets

    files = len(datasets.get(name).files) + (len(datasets.get("scidocs_specter_embeddings").files)
                                             if name == "scidocs" else 0)
    source = "the registry's size" if name in ("scidocs", "mdcr", "pubmed_rct", "s2orc_specter") else "an estimate"
    return Work(part, f"fetch {name}" + (" with its shipped embeddings" if name == "scidocs" else ""), "fetch",
                download_bytes=FETCH_BYTES[name], requests=max(1, files), requests_per_s=1.0,
                bytes_per_s=ASSUMED_BYTES_PER_S,
                how=f"{source}; {ASSUMED_BYTES_PER_S / 1e6:.0f} MB/s assumed; once into the cache (shared by every "
                    "chapter; counted in each part that reads it)")


def cost_plan(p) -> CostPlan:
    """Everything the chapter does at parameters ``p`` (the notebook's, as :func:`sdr.plan.chapter_cost_plan` and
    ``ChapterRun.plan`` give them), part by part, with the parts ``p.parts`` selects marked.

    Every part first fetches what it reads (:data:`PART_DATA`, what ``ChapterData`` fetches at ``paper``).

    * ``released``: SciDocs (with its shipped embeddings) and the benchmarks checks score; score the shipped
      SPECTER embeddings (SciDocs' SVM grids and ranker, CPU); for each released model, each reading setting
      (pooling, input length) and each benchmark it is checked on, one encoding of the benchmark's texts (GPU),
      plus SciDocs' SVM grids and ranker where the benchmark is SciDocs. Checks of the same model, setting and
      benchmark share one encoding (the embeddings cache), as :func:`sdr.released.score_released` groups them.
    * ``csfcube``: the untrained encoder's two poolings on CSFCube's papers (lexical rankers: seconds of CPU).
    * ``sentences``: the two poolings on CSAbstruct's and PubMed-RCT's test sentences.
    * ``paragraphs``: S2ORC's full text of SPECTER's papers fetched, the two poolings on ``paragraph_papers`` papers'
      sections (:data:`SECTIONS_PER_PAPER` assumed)."""
    texts = benchmark_texts()
    selected = resolve_parts(getattr(p, "parts", "all"), PARTS)
    work: list[Work] = []
    for part, names in PART_DATA.items():  # what ChapterData checks and fetches for the part at paper
        work.extend(_fetch(part, name) for name in names if name in FETCH_BYTES)
    # released: the shipped embeddings, then every chapter's checks
    work.append(Work("released", "SciDocs' shipped SPECTER embeddings: MAG and MeSH SVM grids", "svm",
                     hours=SCIDOCS_SVM_CPU_HOURS, how="CPU, one thread; extrapolated from a measurement on this 2-core CPU (SCIDOCS_SVM_CPU_HOURS)"))
    work.append(Work("released", "SciDocs' shipped SPECTER embeddings: recommendation ranker", "svm",
                     hours=SCIDOCS_RECOMM_CPU_HOURS, how="CPU; an estimate, not measured (SCIDOCS_RECOMM_CPU_HOURS)"))
    encoded = set()
    for chapter, checks in gathered_checks().items():
        for check in checks:
            key = (check.model, check.pooling, check.max_length, check.csfcube_queries, check.benchmark)
            if key in encoded:
                continue
            encoded.add(key)
            setting = f"{check.pooling}, {check.max_length} tokens"
            size = texts.get(check.benchmark)
            what = f"{check.model} on {check.benchmark} ({setting}; {chapter})"
            if size is None:
                work.append(Work("released", what, "encode", how=f"size unknown: no row for {check.benchmark} in "
                                                                 "data/paper_tables/benchmark_sizes.csv; not counted"))
                continue
            work.append(Work("released", what, "encode", texts=size,
                             tokens_per_text=_tokens(check.benchmark, check.max_length),
                             how="encoding throughput measured on the H100 (BERT-base); cached after the first run"))
            if check.benchmark == "scidocs":
                work.append(Work("released", f"{check.model}: SciDocs' SVM grids and ranker", "svm",
                                 hours=SCIDOCS_SVM_CPU_HOURS + SCIDOCS_RECOMM_CPU_HOURS,
                                 how="CPU; extrapolated SVM grids and an estimated ranker (SCIDOCS_SVM_CPU_HOURS + SCIDOCS_RECOMM_CPU_HOURS)"))
    # the untrained encoder's parts: each pooling of the chapter's encoder (benchmarks.POOLINGS)
    from sdr.methods.benchmarks.chapter import POOLINGS

    max_length = int(p.max_length)
    work.append(Work("csfcube", "untrained encoder on CSFCube's papers", "encode", runs=len(POOLINGS),
                     texts=texts["csfcube"], tokens_per_text=_tokens("csfcube", p.csfcube_max_length or max_length),
                     how="one encoding a pooling; the facet queries (a few dozen sentences) not counted"))
    for name in ("csabstruct", "pubmed_rct"):
        work.append(Work("sentences", f"untrained encoder on {name}'s test sentences", "encode", runs=len(POOLINGS),
                         texts=texts[name], tokens_per_text=_tokens(name, p.csabstruct_max_length or max_length),
                         how="one encoding a pooling"))
    work.append(Work("paragraphs", "untrained encoder on the sections of the held-out papers", "encode",
                     runs=len(POOLINGS), texts=int(p.paragraph_papers) * SECTIONS_PER_PAPER,
                     tokens_per_text=_tokens("paragraphs", max_length),
                     how=f"{SECTIONS_PER_PAPER} sections a paper assumed; one encoding a pooling"))
    return CostPlan("benchmarks", getattr(p, "profile", "paper"), dict(PARTS), work, selected)
