"""The SciAspect chapter at ``paper`` (issues 30 and 32): its parts, its whole cost, the released checkpoints the
thesis reports, and the branches of the paper path the dry run must take.

* :data:`PARTS`: what a user can run alone (the notebook's ``parts`` parameter), and which of the thesis' tables
  each part reproduces; ``headline`` (the ``paper`` default) is the released models and Table 6.2's four models
  with their MDCR, SciRepEval and CSFCube scores. :func:`row_part` says which part trains a row of
  :data:`TRAINED_ROWS <sdr.methods.sciaspect.registry.TRAINED_ROWS>`.
* :func:`cost_plan`: every training run, encoding, classifier grid and fetch the chapter does at a profile, from the
  same parameters and registries the notebook reads (:class:`sdr.plan.CostPlan`).
* :data:`RELEASED_CHECKS`: the released checkpoints on the benchmarks the thesis reports them
  (:func:`sdr.released.released_part` scores them first at ``paper``); :func:`released_models` is the step.
* :data:`DRY_RUN_BRANCHES`: what the paper dry run must have executed (:meth:`sdr.book.ChapterRun.branch`);
  :func:`write_dry_run_citations` writes the dry run's citation fixture that makes it take them.

Sizes at ``paper`` come from ``data/paper_tables`` (``training_sizes.csv``, ``thesis_benchmark_sizes.csv``); what the
thesis does not print is an estimate, named ``*_ESTIMATE`` here and said so on the plan's line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from sdr.plan import MEASURED_TOKENS_PER_TEXT, CostPlan, Part, Work, resolve_parts
from sdr.released import ReleasedCheck

__all__ = ["PARTS", "TRAINING_PARTS", "row_part", "selected_parts", "thesis_sizes", "instances_per_anchor",
           "texts_per_instance", "SESSION_HOURS", "t4_words", "cost_plan", "RELEASED_CHECKS", "released_models",
           "DRY_RUN_BRANCHES", "write_dry_run_citations", "dry_run_anchors", "SHA_NAMED_PAPERS",
           "dry_run_sha_named_papers", "name_thesis_papers_by_sha"]

# ------------------------------------------------------------------------------------------------- parts
_NO_RUN_IN_ONE_SESSION = ("not all in one 12-hour session, and some training runs take several: resume = True "
                          "skips the finished runs and continues the interrupted one from its last checkpoint")
#: The chapter's parts: what each reproduces, whether the headline ``paper`` run (``parts: headline``) runs it, and
#: what a Colab T4 user can finish of it (from :func:`cost_plan` at ``paper``; tests/test_sciaspect_paper.py keeps
#: the words true to the plan's T4 hours: one session is at most 12 hours).
PARTS: dict[str, Part] = {
    "released": Part("released", "the released checkpoints the thesis reports: SciNCL on MDCR (Table 6.9, asserted), "
                                 "SciBERT, SPECTER (Table 6.8) on MDCR and SciBERT on SciDocs (Table 6.2), unasserted",
                     headline=True, t4="all of it in one 12-hour session"),
    "main": Part("main", "Table 6.2's four models (SPECTERCL 1p 5n, SciAspect, SciAspectHybrid α 0.7, SciAspectL2) "
                         "on SciDocs with Table 6.5's heads, Table 6.10 (MDCR), Table 6.11 (SciRepEval) and CSFCube",
                 headline=True, t4=_NO_RUN_IN_ONE_SESSION),
    "ablations": Part("ablations", "the other rows of Tables 6.3 (SPECTERCL variants), 6.4 (SciAspect variants) and "
                                   "6.7 (L2 configurations)",
                      t4=_NO_RUN_IN_ONE_SESSION),
    "sweeps": Part("sweeps", "Table 6.3's τ rows and Table 6.6's α rows (the sweep figure)",
                   t4="each run in one 12-hour session; all of it in several sessions (resume = True skips the "
                      "finished runs)"),
    "seeds": Part("seeds", "the leaderboard models (csfcube_models) trained again with the next seeds: the seed "
                           "spread the thesis, with one run a model, does not give",
                  t4=_NO_RUN_IN_ONE_SESSION),
}
#: The parts that train. Every run includes ``main``: the other parts' rows are set beside main's models, the
#: chapter's checks and every later section read them (the released table alone is the Benchmarks chapter's
#: gathered table, or this chapter's first output before training starts).
TRAINING_PARTS = ("main", "ablations", "sweeps", "seeds")


def row_part(key: tuple[str, str]) -> str:
    """The part that trains a row of the thesis' tables: ``main`` for the named models (:data:`NAMED_MODELS`),
    ``sweeps`` for the τ and α rows of :data:`SWEEPS`, ``ablations`` for every other row."""
    from sdr.methods.sciaspect.registry import NAMED_MODELS, SWEEPS

    if key in NAMED_MODELS.values():
        return "main"
    table, label = key
    if any(table == sweep.table and label.startswith(sweep.prefix) for sweep in SWEEPS.values()):
        return "sweeps"
    return "ablations"


def selected_parts(run) -> tuple[str, ...]:
    """The parts this run runs (``run.parts``; every part for a run without them, e.g. a test's namespace). A
    selection without ``main`` is refused, naming why."""
    parts = tuple(getattr(run, "parts", None) or PARTS)
    if "main" not in parts:
        raise ValueError(f"parts {list(parts)}: every run of the SciAspect chapter includes 'main' (the other parts' "
                         "rows are set beside its models, and every later section reads them); for the released "
                         "models alone, their table is the first output of a run with 'main', or `sdr evaluate all`")
    return parts


# ------------------------------------------------------------------------------------------------- sizes
#: Tokens of a title and abstract: the mean of the texts the training throughput was measured on (SciBERT
#: WordPiece, title [SEP] abstract; :data:`sdr.plan.MEASURED_TOKENS_PER_TEXT`), capped at the run's input length.
TOKENS_PER_PAPER = MEASURED_TOKENS_PER_TEXT
#: CSFCube's papers (queries and judged candidates: the collection's own count, data/SOURCES).
CSFCUBE_PAPERS = 4205
#: Estimates of what the thesis does not print (each plan line that uses one says "estimate"):
#: MDCR's test papers (the MDCR README: a titles-and-abstracts JSONL of "around 250MB" a split, ≈ 1.25 KB a paper).
MDCR_PAPERS_ESTIMATE = 200_000
#: SciRepEval's test documents over the 16 non-SciDocs and 6 SciDocs tasks of its public registry (order of
#: magnitude; the thesis prints no size).
SCIREPEVAL_DOCUMENTS_ESTIMATE = 800_000
#: CPU hours of SciDocs' classifiers (MAG, MeSH: a 7-point C grid, 3-fold) and recommendations ranker for one row
#: scored, and of SciRepEval's classifiers, regressors and few-shot runs for one model (not measured).
SCIDOCS_CPU_HOURS_ESTIMATE = 0.25
SCIREPEVAL_CPU_HOURS_ESTIMATE = 0.5
#: Downloads of the benchmarks (the registry's sizes: SciDocs with its shipped embeddings, MDCR, SciRepEval).
DOWNLOAD_BYTES = {"scidocs": int(4.6 * 2**30), "mdcr": 500 * 2**20, "scirepeval_full": 4 * 2**30,
                  "csfcube": 10 * 2**20}
#: The Semantic Scholar Graph API's rate with an API key (requests per second; sdr.fetchers.http.Client's default):
#: the bulk fetch resolves the anchors' corpus ids through it.
S2_REQUESTS_PER_S = 1.0


@lru_cache(maxsize=None)
def _printed(table: str, model: str, column: str) -> int:
    from sdr import book

    rows = book.read_paper_table(table)
    row = rows[rows["model"] == model]
    if len(row) != 1:
        raise ValueError(f"data/paper_tables/{table}.csv: {len(row)} rows named {model!r}")
    unit = {"one": 1, "thousand": 1_000, "million": 1_000_000}[str(row["unit"].iloc[0])]
    return int(round(float(row[column].iloc[0]) * unit))


def thesis_sizes() -> dict[str, int]:
    """The sizes the thesis prints (``data/paper_tables``): training anchors (132k), SciNCL's published anchors
    (the fetch's), SciDocs' documents and MDCR's queries (200 per field, 19 fields)."""
    return {"training anchors": _printed("training_sizes", "training anchor documents", "examples"),
            "published anchors": _printed("thesis_benchmark_sizes", "SciNCL's published training anchors", "count"),
            "scidocs documents": _printed("thesis_benchmark_sizes", "SciDocs documents", "count"),
            "mdcr queries": 19 * _printed("thesis_benchmark_sizes", "MDCR queries per field", "count")}


def instances_per_anchor(examples: tuple[str, str]) -> int:
    """Instances one anchor gives a sampler at most: SPECTERCL 5 positives grouped by the variant's size (§5.1);
    an aspect model one per aspect (three, a fourth with the miscellaneous aspect). An upper bound: the thesis
    keeps only anchors with a positive in every aspect and prints no instance count."""
    from sdr.methods.sciaspect.sampling import (ASPECT_SPACES, POSITIVES_PER_QUERY, SCIASPECT_VARIANTS,
                                                SPECTERCL_VARIANTS)

    model, variant = examples
    if model == "SPECTERCL":
        return POSITIVES_PER_QUERY // SPECTERCL_VARIANTS[variant]["n_positives"]
    if model == "SciAspect" and SCIASPECT_VARIANTS[variant]["include_miscellaneous"]:
        return len(ASPECT_SPACES) + 1
    return len(ASPECT_SPACES)


def texts_per_instance(examples: tuple[str, str]) -> int:
    """Texts one instance embeds at most: the anchor, its positives and every negative (local and global)."""
    from sdr.methods.sciaspect.sampling import L2_CONFIGS, SCIASPECT_VARIANTS, SPECTERCL_VARIANTS

    model, variant = examples
    if model == "SPECTERCL":
        settings = SPECTERCL_VARIANTS[variant]
        return 1 + settings["n_positives"] + settings["n_negatives"]
    if model == "SciAspect":  # §5.3: at most 10 hard and 3 easy negatives
        return 1 + SCIASPECT_VARIANTS[variant]["n_positives"] + 10 + 3
    if model == "SciAspectHybrid":  # Table 5.1: 1 positive, 5 local and 5 global negatives
        return 1 + 1 + 5 + 5
    settings = L2_CONFIGS[variant]
    return 1 + 1 + settings["n_hard"] + settings["n_easy"]


def _instances(p, row_run) -> int:
    from sdr.methods.sciaspect.recipe import PROBE_SIZE

    sampled = thesis_sizes()["training anchors"] * instances_per_anchor(row_run.examples) - PROBE_SIZE
    return min(sampled, p.train_examples) if p.train_examples else sampled


# ------------------------------------------------------------------------------------------------- the cost plan
def cost_plan(p) -> CostPlan:
    """Everything the chapter does with parameters ``p`` (the notebook's), part by part: each distinct training run
    of :data:`TRAINED_ROWS` (instances at ``paper``: the thesis' 132k anchors × the sampler's instances an anchor, an
    upper bound; else ``train_examples``), the leaderboard models' extra seeds, every model's encodings of SciDocs,
    MDCR, SciRepEval and CSFCube, SciDocs' and SciRepEval's classifier grids, the released checkpoints' encodings,
    and the fetches. A run several rows share (τ = 0.05 is the 1p 5n row) is counted once, in the first part."""
    from sdr.methods.sciaspect.chapter import all_trained_rows
    from sdr.methods.sciaspect.registry import (CSFCUBE_MODELS, MDCR_MODELS, NAMED_MODELS, PROJECTION_ROWS,
                                                SCIREPEVAL_MODELS)
    from sdr.methods.specter.recipe import leaderboard_seeds

    sizes = thesis_sizes()
    tokens = min(p.max_length, TOKENS_PER_PAPER)
    batch = p.batch_size * p.accumulation_steps
    work: list[Work] = _released_work()
    rows = all_trained_rows(p)
    counted, runs_of = set(), {part: [] for part in PARTS}
    for part in PARTS:
        for key, row_run in rows.items():
            if row_part(key) != part or row_run in counted:
                continue
            counted.add(row_run)
            runs_of[part].append(key)
            work.append(Work(part, f"train {' / '.join(key)}", "train", examples=_instances(p, row_run),
                             epochs=p.epochs, effective_batch=batch, texts_per_example=texts_per_instance(row_run.examples),
                             tokens_per_text=tokens, how=_train_how(p, row_run)))
    trained_names = [name for name, key in NAMED_MODELS.items() if key in rows]
    leaderboard = [name for name in p.csfcube_models if name in CSFCUBE_MODELS and name in trained_names]
    seeds = len(leaderboard_seeds(p.seed, p.leaderboard_seeds)) - 1
    for name in leaderboard if seeds else ():
        row_run = rows[NAMED_MODELS[name]]
        work.append(Work("seeds", f"train {name} again (seeds after {p.seed})", "train", runs=seeds,
                         examples=_instances(p, row_run), epochs=p.epochs, effective_batch=batch,
                         texts_per_example=texts_per_instance(row_run.examples), tokens_per_text=tokens,
                         how=_train_how(p, row_run)))
    # encodings: every distinct model once per benchmark it is scored on
    projections = sum(len(labels) for name, _, labels in PROJECTION_ROWS.values() if name in trained_names)
    for part, keys in runs_of.items():
        models = len(keys) + (1 if part == "main" else 0)  # main scores the untrained encoder too
        if not models:
            continue
        work.append(Work(part, f"SciDocs: embed {models} model(s)", "encode", runs=models,
                         texts=sizes["scidocs documents"], tokens_per_text=tokens,
                         how="the thesis' 223,932 SciDocs documents (§2.5.1)"))
        # every row is scored, a row sharing another's model too (τ = 0.05 is the 1p 5n model)
        rows_scored = (sum(1 for key in rows if row_part(key) == part) + (1 if part == "main" else 0)
                       + (projections if part == "main" else 0))
        work.append(Work(part, f"SciDocs: classifiers and ranker of {rows_scored} row(s)", "svm", runs=rows_scored,
                         hours=SCIDOCS_CPU_HOURS_ESTIMATE,
                         how=f"estimate, not measured: {SCIDOCS_CPU_HOURS_ESTIMATE:g} CPU h a row (MAG and MeSH "
                             "linear SVMs, 7 C values × 3 folds; the recommendations ranker"
                             + ("; Table 6.4-6.5's heads and concatenations are rows of their own)" if part == "main"
                                else ")")))
    mdcr_models = 1 + sum(1 for name in MDCR_MODELS if name in trained_names) + ("SciAspectHybrid" in trained_names)
    work.append(Work("main", f"MDCR: embed {mdcr_models} model(s)", "encode", runs=mdcr_models,
                     texts=MDCR_PAPERS_ESTIMATE + sizes["mdcr queries"], tokens_per_text=tokens,
                     how=f"{sizes['mdcr queries']:,} queries (19 fields × 200, §4.5) and ≈ {MDCR_PAPERS_ESTIMATE:,} "
                         "candidates (estimate from the MDCR README's file sizes)"))
    scirepeval_models = [name for name in p.scirepeval_models
                         if SCIREPEVAL_MODELS.get(name) is None or name in trained_names]
    work.append(Work("main", f"SciRepEval: embed {len(scirepeval_models)} model(s)", "encode",
                     runs=len(scirepeval_models), texts=SCIREPEVAL_DOCUMENTS_ESTIMATE, tokens_per_text=tokens,
                     how=f"≈ {SCIREPEVAL_DOCUMENTS_ESTIMATE:,} test documents (estimate: the thesis prints none)"))
    work.append(Work("main", f"SciRepEval: classifiers, regressors, few-shot runs of {len(scirepeval_models)} "
                             "model(s)", "svm", runs=len(scirepeval_models), hours=SCIREPEVAL_CPU_HOURS_ESTIMATE,
                     how=f"estimate, not measured: {SCIREPEVAL_CPU_HOURS_ESTIMATE:g} CPU h a model"))
    csfcube_tokens = min(p.csfcube_max_length, TOKENS_PER_PAPER)
    csfcube_models = (1 if "untrained" in p.csfcube_models else 0) + len(leaderboard)
    if csfcube_models:
        work.append(Work("main", f"CSFCube: embed {csfcube_models} model(s)", "encode", runs=csfcube_models,
                         texts=CSFCUBE_PAPERS, tokens_per_text=csfcube_tokens,
                         how="CSFCube's 4,205 papers at csfcube_max_length"))
    if seeds and leaderboard:
        work.append(Work("seeds", f"CSFCube: embed {len(leaderboard)} model(s) × {seeds} seed(s)", "encode",
                         runs=len(leaderboard) * seeds, texts=CSFCUBE_PAPERS, tokens_per_text=csfcube_tokens,
                         how="CSFCube's 4,205 papers at csfcube_max_length"))
    work += _fetch_work(sizes)
    return CostPlan("sciaspect", p.profile, PARTS, work, resolve_parts(getattr(p, "parts", "all"), PARTS))


#: A Colab session's limit in hours (a free T4 session ends sooner; paid ones run about this long).
SESSION_HOURS = 12


def t4_words(plan: CostPlan, part: str) -> str:
    """What a Colab T4 user can finish of ``part``, in words, from the plan's T4 hours (GPU, scaled from the
    measured GPU) and its largest single run: :data:`PARTS` says these words, a test keeps them equal."""
    lines = [w for w in plan.work if w.part == part]
    total = sum(w.gpu_hours("Tesla T4") for w in lines)
    largest = max((w.gpu_hours("Tesla T4") / max(w.runs, 1) for w in lines), default=0.0)
    if total <= SESSION_HOURS:
        return f"all of it in one {SESSION_HOURS}-hour session"
    if largest <= SESSION_HOURS:
        return (f"each run in one {SESSION_HOURS}-hour session; all of it in several sessions (resume = True skips "
                "the finished runs)")
    return (f"not all in one {SESSION_HOURS}-hour session, and some training runs take several: resume = True skips "
            "the finished runs and continues the interrupted one from its last checkpoint")


def _train_how(p, row_run) -> str:
    shape = (f"{instances_per_anchor(row_run.examples)} instances an anchor, {texts_per_instance(row_run.examples)} "
             "texts an instance (upper bounds)")
    if p.train_examples:
        return f"train_examples = {p.train_examples} instances; {shape}"
    return f"{thesis_sizes()['training anchors']:,} anchors (§4.3) × {shape}"


def _released_work() -> list[Work]:
    """The released checkpoints' encodings: one per (model, pooling, input length) and benchmark."""
    sizes = thesis_sizes()
    texts = {"scidocs": sizes["scidocs documents"], "mdcr": MDCR_PAPERS_ESTIMATE + sizes["mdcr queries"]}
    groups: dict[tuple, set] = {}
    for check in RELEASED_CHECKS:
        groups.setdefault((check.model, check.pooling, check.max_length), set()).add(check.benchmark)
    work = []
    for (model, pooling, max_length), benchmarks in groups.items():
        for benchmark in sorted(benchmarks):
            work.append(Work("released", f"{model} on {benchmark} ({pooling}, {max_length} tokens)", "encode",
                             texts=texts[benchmark], tokens_per_text=min(max_length, TOKENS_PER_PAPER),
                             how="SciDocs: the thesis' 223,932 documents" if benchmark == "scidocs" else
                             f"MDCR: ≈ {texts[benchmark]:,} papers (estimate)"))
            if benchmark == "scidocs":
                work.append(Work("released", f"{model}: SciDocs classifiers and ranker", "svm",
                                 hours=SCIDOCS_CPU_HOURS_ESTIMATE,
                                 how=f"estimate, not measured: {SCIDOCS_CPU_HOURS_ESTIMATE:g} CPU h a row"))
    for dataset in dict.fromkeys(("scidocs", "mdcr")):
        work.append(_download(dataset, "released"))
    return work


def _download(dataset: str, part: str) -> Work:
    from sdr import datasets

    files = len(datasets.paper_files(dataset))
    return Work(part, f"fetch {dataset}", "fetch", download_bytes=DOWNLOAD_BYTES[dataset], requests=files,
                requests_per_s=1.0, how=f"{files} files (the registry's size); bandwidth not counted")


def _fetch_work(sizes: Mapping[str, int]) -> list[Work]:
    """The training data's fetch through the bulk route (CHAPTER_DATA: ``s2ag_bulk_thesis``; the Graph API crawl of
    the anchors' pages and then each cited paper's references would take over a million requests at 1 a second): the
    anchors' corpus ids through the Graph API's ``/paper/batch`` (SciNCL's anchors are 40-hex ids), then the
    shards' download and DuckDB filtering (:func:`sdr.fetchers.bulk.bulk_plan`: two passes over the citations for
    the references of references); and the other benchmarks' downloads."""
    from sdr.fetchers.bulk import bulk_fetch_work
    from sdr.fetchers.semantic_scholar import BATCH_LIMIT

    anchors = sizes["published anchors"]
    batches = math.ceil(anchors / BATCH_LIMIT)
    return [Work("main", "s2ag_bulk_thesis: the anchors' corpus ids (Graph API /paper/batch)", "fetch",
                 requests=batches, requests_per_s=S2_REQUESTS_PER_S,
                 how=f"{anchors:,} anchors (§4.3) in batches of {BATCH_LIMIT} at {S2_REQUESTS_PER_S:g} request/s"),
            bulk_fetch_work("s2ag_bulk_thesis", "main"),
            _download("scirepeval_full", "main"), _download("csfcube", "main")]


# ------------------------------------------------------------------------------------------------- released models
_MDCR = {"avg/map": "map", "avg/ndcg": "ndcg", "avg/recall_5": "recall_5"}
_MDCR_68 = {"avg/map": "map", "avg/recall_5": "recall_5"}  # Table 6.8 prints no nDCG
_SCIDOCS = {metric: metric for metric in ("mag_f1", "mesh_f1", "coview_map", "coview_ndcg", "coread_map",
                                          "coread_ndcg", "cite_map", "cite_ndcg", "cocite_map", "cocite_ndcg",
                                          "recomm_ndcg", "recomm_p1", "avg")}
_QUOTED = ("Table 6.8 quotes Medić & Šnajder at one decimal, and the thesis says the precise results on the "
           "released test set are given for SciNCL only (§6.2.1)")

#: The released checkpoints the thesis reports, on the benchmarks it reports them, [CLS] of SciBERT-family models
#: at 512 tokens (§4.4: "the pooled [CLS] representations"; title [SEP] abstract). SciNCL on MDCR is the thesis'
#: own measurement ("reconfirmed by evaluating the benchmark on SciNCL's HuggingFace model", §6.2.1): asserted. The
#: others are quoted numbers whose setup the book cannot reproduce exactly: shown, unasserted, with the reason.
#: Not registered: Table 6.11's SciBERT, SPECTER and SciNCL columns (quoted from the SciRepEval paper over a task set
#: with Feeds, which the public SciRepEval registry lacks), and Table 6.2's SPECTER and SciNCL (models trained by
#: SciNCL's authors without leakage, not the released checkpoints).
RELEASED_CHECKS = (
    ReleasedCheck("malteos/scincl", "mdcr", "thesis_mdcr", "SciNCL", _MDCR, pooling="cls", max_length=512,
                  tolerance=0.3, table_ref="Table 6.9"),
    ReleasedCheck("allenai/specter", "mdcr", "thesis_mdcr", "SPECTER", _MDCR_68, pooling="cls", max_length=512,
                  tolerance=None, unasserted_because=_QUOTED, table_ref="Table 6.8"),
    ReleasedCheck("allenai/scibert_scivocab_uncased", "mdcr", "thesis_mdcr", "SCIBERT", _MDCR_68, pooling="cls",
                  max_length=512, tolerance=None, unasserted_because=_QUOTED + "; how SciBERT was pooled is not said",
                  table_ref="Table 6.8"),
    ReleasedCheck("allenai/scibert_scivocab_uncased", "scidocs", "scidocs", "SciBERT", _SCIDOCS, pooling="cls",
                  max_length=512, tolerance=None, table_ref="Table 6.2",
                  unasserted_because="marked as taken from SciNCL [10], whose Table 1 prints other SciBERT values "
                                     "(avg 59.6, not 63.295); the row matches Table 6.11's SciDocs rows of SciBERT, "
                                     "i.e. SciRepEval's harness, whose pooling and classifier the book does not "
                                     "reproduce exactly"),
)


def released_models(run):
    """The chapter's ``released`` part, its first output at ``paper``: :data:`RELEASED_CHECKS` scored through
    ``sdr evaluate all``'s cached path on the real benchmarks, beside the thesis' numbers, the asserted rows held to
    their tolerance before anything trains (:func:`sdr.released.released_part`). At smoke and real: one line.
    Shown in: notebooks/sciaspect.ipynb, Released models first."""
    from sdr.embed import DATASET_OF
    from sdr.released import released_part

    data_dirs = {}
    if run.data.policy.real_only and run.runs_part("released"):
        files = {"mdcr": ("mdcr_test.json", "mdcr_test_data.jsonl")}
        for benchmark in dict.fromkeys(check.benchmark for check in RELEASED_CHECKS):
            dataset = DATASET_OF[benchmark]
            data_dirs[benchmark] = run.data.input(dataset, files=files.get(dataset, ())).path
    return released_part(run, RELEASED_CHECKS, data_dirs)


# ------------------------------------------------------------------------------------------------- the dry run
#: What the paper dry run must execute of this chapter (issue 30.4), each recorded where it happens: the released
#: checks asserted on the stand-ins; the citation graph read through the bulk route (issue 36); the leakage branch
#: (evaluation papers found in, and removed from, the training graph: on the bulk route's corpus ids, SciDocs' 40-hex
#: ids found through each paper's paperSha); [CLS] pooling as the thesis reads SciBERT; the miscellaneous head trained
#: (Table 6.4's w/ misc row); every run past its warm-up, so trained rows differ from the untrained one; the seed
#: loop's body.
DRY_RUN_BRANCHES = ("released checks asserted", "citation graph read from the bulk route (s2ag_bulk_thesis)",
                    "evaluation papers removed from the training graph",
                    "[CLS] pooling", "misc head trained", "trained past warm-up",
                    "trained rows differ from the untrained row", "extra seeds trained")


def write_dry_run_citations(folder: Path, fixture) -> None:
    """The dry run's ``s2_citations_thesis``: the whole fixture corpus (training and evaluation papers) served as the
    Graph API and fetched by the real fetcher (:func:`sdr.synthetic.s2_api.write_citation_pages`) for every third
    training paper with a link, so the anchors' references and citations reach evaluation papers (the leakage branch:
    the real thesis data overlap SciDocs), and edges without intent give the miscellaneous aspect. The anchors are a
    third of the training papers: with every paper an anchor, "excluding all anchor papers" would leave no hard
    negative. Registered in :data:`sdr.dryrun.WRITERS`."""
    from sdr.dryrun import GRAPH_API_HABITS
    from sdr.synthetic.s2_api import write_citation_pages

    # the Graph API's habits (pages, null ids, 429s, 503s) but the fixture's own paper ids: the leakage branch needs
    # the ids the SciDocs fixture names
    write_citation_pages(fixture.corpus, folder, anchors=dry_run_anchors(fixture), ids=fixture.corpus_ids,
                         **{**GRAPH_API_HABITS, "sha_ids": False})


#: Papers of the dry run's thesis graph that its SciDocs names by their 40-hex S2 paper ids.
SHA_NAMED_PAPERS = 4


def dry_run_sha_named_papers(fixture) -> list[str]:
    """The papers :func:`name_thesis_papers_by_sha` adds to the dry run's SciDocs: training papers linked to a
    dry-run anchor (so in the thesis graph by either route), not anchors themselves, the first
    :data:`SHA_NAMED_PAPERS` by id."""
    anchors = set(dry_run_anchors(fixture))
    linked = {other for anchor in anchors for other in fixture.corpus.graph.neighbours(anchor)}
    return sorted(linked - anchors - set(fixture.eval.papers))[:SHA_NAMED_PAPERS]


def name_thesis_papers_by_sha(folder: Path, fixture) -> list[str]:
    """The dry run's SciDocs (written before, :func:`sdr.methods.specter.write_dry_run_scidocs`) names
    :func:`dry_run_sha_named_papers` as the released SciDocs names papers: by their 40-hex S2 paper ids — the ids the
    synthetic Datasets API's ``papers`` urls give them (:func:`sdr.synthetic.s2_api.sha_id`) — as extra candidates
    (relevance 0) of the cite task's test queries, with their metadata. The bulk route keys the thesis graph by
    corpus ids, so its leakage branch finds them only through each paper's ``paperSha`` (issue 36), as on the real
    data, where the thesis graph overlaps SciDocs. Returns the ids written. Registered in :data:`sdr.dryrun.WRITERS`
    (with SPECTER's writer)."""
    import json

    from sdr.evaluate import scidocs
    from sdr.synthetic.s2_api import sha_id

    named = {sha_id(pid): pid for pid in dry_run_sha_named_papers(fixture)}
    qrel = Path(folder) / "cite" / "test.qrel"
    queries = sorted(scidocs.read_qrels(qrel))
    with qrel.open("a", encoding="utf-8") as handle:
        for number, sha in enumerate(named):
            handle.write(f"{queries[number % len(queries)]} 0 {sha} 0\n")
    metadata_path = Path(folder) / "paper_metadata_view_cite_read.json"
    metadata = json.loads(metadata_path.read_text(encoding="utf-8"))
    for sha, pid in named.items():
        paper = fixture.corpus.papers[pid]
        metadata[sha] = {"paper_id": sha, "title": paper.title, "abstract": paper.abstract}
    metadata_path.write_text(json.dumps(metadata), encoding="utf-8")
    return list(named)


def dry_run_anchors(fixture) -> list[str]:
    """The dry run's thesis anchors: every third training paper with a link (the Graph API and bulk routes share
    them)."""
    return sorted(fixture.train.graph.nodes)[::3]
