"""FLeW's parts and its whole cost up front (issue 30): what a user can run alone, what of the paper each part
reproduces, and everything the chapter does at a profile, counted from the parameters the notebook reads.

:data:`PARTS` is the registry the ``parts`` parameter is resolved against (:meth:`sdr.book.ChapterRun.runs_part`):
``released`` and ``main`` make the headline run (FLeW's Tables 1-2, the FLeW row); ``published``, ``ablations`` and
``seeds`` are chosen by name. Every part but ``released`` builds on ``main`` (the splitter, the fetched graph,
the sampled triplets and their facet encoders), so ``main`` is always run (:func:`check_parts`).

:func:`cost_plan` counts every line of work: each training run (facet encoders, the published recipe's, each
ablation's, each extra seed's), every encoder's pass over MDCR, SciRepEval and CSFCube, the graph embeddings and
kNN searches of the facet subgraphs, the SVM fits of SciRepEval and of its per-task weight search, the sentence
splitter, and the data and model fetches. GPU hours come from the measured training and encoding throughput
(:mod:`sdr.plan`); CPU lines state their rate, measured on this project's 2-core machine where it could be
(``benchmarks/results/graph_scale_1m.txt``, the splitter below) and otherwise an estimate said to be one. Sizes at
``paper`` come from ``data/paper_tables`` (FLeW §4.1: the query list, triplets, the triplets' papers); the
benchmarks' sizes are not printed in the paper and are estimates, stated as such.

Shown in: notebooks/flew.ipynb (``run.show_plan()`` before anything trains, at ``paper``); ``python -m sdr.plan``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sdr.fetchers.bulk import bulk_fetch_work
from sdr.methods.scincl.paper import FLAT_SEARCH_SECONDS, PBG_SECONDS_PER_EDGE_EPOCH
from sdr.plan import CostPlan, Part, Work

__all__ = ["PARTS", "REQUIRES", "DRY_RUN_BRANCHES", "check_parts", "cost_plan", "t4_words", "paper_sizes"]

#: What a user can run alone (``parts``; "headline": the parts marked so). ``t4`` is what a Colab T4 user can finish
#: of each at the paper profile, from :func:`cost_plan`'s T4 hours (tests/test_flew.py keeps the words equal to the
#: plan's numbers).
PARTS = {
    "released": Part(
        "released", "the released models' rows of FLeW Tables 1-3: SPECTER, SciNCL and SPECTER-2 (base) on MDCR "
                    "(Table 2) and SciRepEval (Table 1), FLeW's released facet encoders on SciRepEval (Table 3, "
                    "w/ and w/o Textual) and their tuned sums (inference only)",
        headline=True, t4=("≈ 13 T4 h: 2 Colab sessions of 12 h, each rerun reads the benchmarks already embedded "
                           "from the cache (plus ≈ 99 CPU/network h)")),
    "main": Part(
        "main", "FLeW Tables 1-2, the FLeW row, and Table 3's w/ Textual rows, by the book's recipe (the S2 graph "
                "fetched around the released query list, triplets re-sampled in its facet subgraphs, the CSAbstruct "
                "splitter, weights tuned on validation data)",
        headline=True, t4=("≈ 31 T4 h: 3 Colab sessions of 12 h, each resumed with resume = True (plus ≈ 214 "
                           "CPU/network h)")),
    "published": Part(
        "published", "FLeW Tables 1-3, the FLeW and w/ Textual rows, by the published recipe: the released triplets "
                     "and the released split abstracts, no sampling or splitting here",
        t4="≈ 30 T4 h: 3 Colab sessions of 12 h, each resumed with resume = True (plus ≈ 39 CPU/network h)"),
    "ablations": Part(
        "ablations", "FLeW Table 3: w/o Textual (three encoders on full abstracts, their tuned sum) and "
                     "w/o Structural (one encoder on the whole, unweighted citation graph)",
        t4=("≈ 71 T4 h: 6 Colab sessions of 12 h, each resumed with resume = True (plus ≈ 100 CPU/network "
            "h)")),
    "seeds": Part(
        "seeds", "nothing of the paper (FLeW reports one run): the CSFCube leaderboard's extra training seeds of "
                 "the three facet encoders", t4="nothing to run on a GPU at this profile"),
}
#: The parts each part builds on (its steps read their results).
REQUIRES = {"published": ("main",), "ablations": ("main",), "seeds": ("main",)}

#: The branches of the ``paper`` path the paper dry run must take (:meth:`sdr.book.ChapterRun.branch`; the dry run
#: fails on a missing one).
DRY_RUN_BRANCHES = (
    "citation graph read from the bulk route (s2ag_bulk_flew)",
    "released checks asserted",
    "released FLeW checkpoints read as three facet encoders",
    "FLeW bands unscaled (k⁻hard 4000)",
    "every query of the list trained (nothing held out)",
    "released triplets compared with the re-sampled ones",
    "published recipe trained on the released triplets and split abstracts",
    "ablations trained (w/o textual, w/o structural)",
    "extra leaderboard seeds trained",
    "weights tuned on a held-out share of a SciRepEval train split",
)


def check_parts(run) -> tuple[str, ...]:
    """The parts this run runs (``run.parts``), after checking that each one's :data:`REQUIRES` is among them
    and that ``main`` is (every later step of the chapter reads its results); a clear error otherwise."""
    parts = tuple(run.parts)
    if "main" not in parts:
        raise ValueError(f"flew: parts {list(parts)} leave out 'main', on which every step after the released models "
                         "builds; add it (the released models alone: sdr evaluate all --model NAME)")
    for part in parts:
        missing = [need for need in REQUIRES.get(part, ()) if need not in parts]
        if missing:
            raise ValueError(f"flew: part {part!r} reads the results of {missing}; add them to `parts`")
    return parts


# ------------------------------------------------------------------------------------------------- sizes and rates
#: Tokens a text is assumed to hold (before the ``max_length`` cap): title + abstract, as the README's plan
#: assumes for SPECTER's papers; a facet's text (title + the abstract's background, method or result sentences) as
#: sdr.plan assumed for FLeW. Assumptions, not measurements.
FULL_TEXT_TOKENS = 250
FACET_TEXT_TOKENS = 120
#: Benchmarks' sizes FLeW does not print (estimates): MDCR's val and test texts (its two ~250 MB JSONL files at
#: ~1.25 KB a paper), every document SciRepEval's test configs embed (a guess from the SciRepEval paper's task sizes,
#: not counted here), and CSFCube's 4,205 papers (the collection's own count).
MDCR_PAPERS_ESTIMATE = 400_000
MDCR_TEST_PAPERS_ESTIMATE = 200_000
SCIREPEVAL_DOCUMENTS_ESTIMATE = 600_000
CSFCUBE_PAPERS = 4_205
#: SciRepEval's supervised tasks (classification and regression: 11 of FLeW Table 1's 19 columns) per system,
#: each an SVM whose C is chosen by 3-fold CV: CPU hours (an estimate, not measured at these sizes); a sum's weight
#: search fits them once per grid point on a held-out share of each train split.
SCIREPEVAL_SVM_HOURS_ESTIMATE = 1.0
#: PyTorch-BigGraph and exact FAISS search on this project's 2-core CPU: SciNCL's rates, measured at 1,000,000 nodes
#: and 700,000 papers (benchmarks/results/graph_scale_1m.txt; :mod:`sdr.methods.scincl.paper`): edge-epochs per
#: second at 768 dimensions with its HOGWILD workers (time ∝ dimension), and seconds per query × indexed vector ×
#: dimension.
PBG_EDGE_EPOCHS_PER_S_768 = 1 / PBG_SECONDS_PER_EDGE_EPOCH
FLAT_SEARCH_S = FLAT_SEARCH_SECONDS
#: Repeated edges (|C_x(e)| summed) of a facet subgraph per query of the list: an estimate (an anchor's references
#: and citations with their contexts), not a number of the paper; the whole graph (w/o structural) counts each
#: citation once.
FACET_EDGES_PER_QUERY_ESTIMATE = 50
GRAPH_EDGES_PER_QUERY_ESTIMATE = 100
#: The sequential CSAbstruct classifier splits 247 abstracts per CPU second on this machine (600 CSAbstruct train
#: abstracts in 2.43 s of CPU, sentence segmentation included; measured for this plan).
SPLITTER_ABSTRACTS_PER_CPU_S = 247.0
#: Requests a second of the fetches by request (the Hugging Face Hub files here; the Graph API's 1 a second with a
#: key). FLeW's citation graph comes through the bulk route (sdr.fetchers.bulk.bulk_plan: shards streamed and
#: filtered), not a Graph API crawl of its 216 K anchors and their second hop (weeks at 1 request a second).
S2_REQUESTS_PER_S = 1.0
#: Downloads: the released triplets (the registry's 170 MB), each split-abstract file (the registry says 1.6-4.5 GB
#: a file: 3 GB is an estimate), a BERT-base checkpoint (~440 MB of weights).
TRIPLETS_BYTES = 170 * 2**20
SPLIT_METADATA_BYTES_ESTIMATE = 3 * 2**30
BERT_BASE_BYTES = 440 * 2**20
#: SciNCL's band sampler for w/o structural: c⁻hard + c⁻easy = 5 triplets a query.
SCINCL_TRIPLETS_PER_QUERY = 5


def paper_sizes() -> dict:
    """FLeW §4.1's sizes from ``data/paper_tables``: the query list, triplets per facet and per query, the papers of
    each facet's triplets."""
    from sdr import book

    settings = book.read_paper_table("flew_settings").set_index("model")["value"]
    sizes = book.read_paper_table("training_sizes").set_index("model")
    triplets = int(round(float(sizes.loc["facet triplets", "examples"]) * 1_000_000))
    queries = int(round(float(settings["query list (thousand papers)"]) * 1000))
    papers = {facet: int(round(float(settings[f"triplet papers with metadata: {facet} (million)"]) * 1_000_000))
              for facet in ("background", "method", "result")}
    return {"queries": queries, "triplets": triplets, "triplets_per_query": triplets // queries, "papers": papers}


RESUMED = {"released": "each rerun reads the benchmarks already embedded from the cache"}
"""How a part carries over from one Colab session to the next (default: training resumes, ``resume = True``)."""


def t4_words(t4_hours: float, other_hours: float, part: str = "", session_hours: float = 12.0) -> str:
    """What a Colab T4 user can finish of a part, from its T4 hours (and its CPU/network hours)."""
    tail = f"; plus ≈ {other_hours:,.0f} CPU/network h" if other_hours >= 1 else ""
    if t4_hours <= 0:
        return "nothing to run on a GPU at this profile" + tail
    if t4_hours < session_hours / 4:
        return f"all of it in one session (≈ {t4_hours:.1f} T4 h{tail})"
    sessions = math.ceil(t4_hours / session_hours)
    resumed = RESUMED.get(part, "each resumed with resume = True")
    return (f"≈ {t4_hours:,.0f} T4 h: {sessions} Colab sessions of {session_hours:g} h, {resumed}"
            + (f" (plus ≈ {other_hours:,.0f} CPU/network h)" if other_hours >= 1 else ""))


# ------------------------------------------------------------------------------------------------- the plan
def _tokens(cap: int, assumed: int) -> int:
    return min(int(cap), assumed) if cap else assumed


def _grid_points(step: float) -> int:
    from sdr.methods.flew.recipe import simplex_grid

    return len(simplex_grid(step))


def _released_groups() -> list[tuple[str, tuple[str, ...]]]:
    """Each released model (or facet encoder of a release) the released checks embed, with its benchmarks."""
    from sdr.methods.flew.released_checks import RELEASED_CHECKS

    groups: dict[str, list[str]] = {}
    for check in RELEASED_CHECKS:
        groups.setdefault(check.label, []).append(check.benchmark)
    return [(label, tuple(dict.fromkeys(benchmarks))) for label, benchmarks in groups.items()]


def cost_plan(p) -> CostPlan:
    """Everything the FLeW chapter does with parameters ``p`` (the notebook's), part by part, with the parts this
    run runs marked (``p.parts`` against :data:`PARTS`). Queries: ``max_queries``, or (0) FLeW's whole list; every
    query gets 10 triplets a facet (§4.1). The plan counts each training run, each encoder's pass over each
    benchmark, the CPU work and the fetches; see the module docstring for the rates."""
    from sdr.methods.flew.chapter import ABLATIONS, FACET_ENCODERS, RELEASED_BASELINES, RELEASED_FLEW, chosen_ablations
    from sdr.plan import resolve_parts

    sizes = paper_sizes()
    queries = int(p.max_queries) if p.max_queries else sizes["queries"]
    share = queries / sizes["queries"]
    examples = queries * sizes["triplets_per_query"]
    batch = int(p.batch_size) * int(p.accumulation_steps)
    facet_tokens, full_tokens = _tokens(p.max_length, FACET_TEXT_TOKENS), _tokens(p.max_length, FULL_TEXT_TOKENS)
    csfcube_tokens = _tokens(p.csfcube_max_length or p.max_length, FULL_TEXT_TOKENS)
    grid = _grid_points(p.weight_step)
    seeds = max(1, int(p.leaderboard_seeds))
    work: list[Work] = []

    def train(part, what, n_examples, tokens, runs=1):
        work.append(Work(part, what, "train", runs=runs, examples=n_examples, epochs=int(p.epochs),
                         effective_batch=batch, texts_per_example=3, tokens_per_text=tokens,
                         how="measured training throughput (sdr.plan), every text of every triplet counted"))

    def benchmarks(part, what, systems, csfcube=False):
        work.append(Work(part, f"{what}: MDCR val + test", "encode", runs=systems, texts=MDCR_PAPERS_ESTIMATE,
                         tokens_per_text=full_tokens, how="MDCR's size is an estimate (not in the paper)"))
        work.append(Work(part, f"{what}: SciRepEval documents", "encode", runs=systems,
                         texts=SCIREPEVAL_DOCUMENTS_ESTIMATE, tokens_per_text=full_tokens,
                         how="SciRepEval's size is an estimate (not in the paper)"))
        if csfcube and p.csfcube_eval:
            work.append(Work(part, f"{what}: CSFCube papers", "encode", runs=systems, texts=CSFCUBE_PAPERS,
                             tokens_per_text=csfcube_tokens, how="CSFCube's 4,205 papers"))
        work.append(Work(part, f"{what}: SciRepEval SVMs (11 supervised tasks)", "svm", runs=systems,
                         hours=SCIREPEVAL_SVM_HOURS_ESTIMATE, how="an estimate, not measured at this size"))

    def weight_search(part, what, sums):
        work.append(Work(part, f"{what}: weight search, {grid} grid points × the supervised tasks", "svm", runs=sums,
                         hours=grid * SCIREPEVAL_SVM_HOURS_ESTIMATE,
                         how="one SciRepEval SVM pass per grid point on a held-out share of each train split "
                             "(estimate); MDCR and CSFCube's searches are rankings, seconds"))

    # -- released: the checks (the released-models table, read at paper only), then the released systems in the
    # chapter's tables (score_released_models)
    if p.profile == "paper":
        groups = _released_groups()
        for label, names in groups:
            for name in names:
                texts = MDCR_TEST_PAPERS_ESTIMATE if name == "mdcr" else SCIREPEVAL_DOCUMENTS_ESTIMATE
                work.append(Work("released", f"{label} on {name} (released check)", "encode", texts=texts,
                                 tokens_per_text=_tokens(512, FULL_TEXT_TOKENS),
                                 how="sdr evaluate all's path at 512 tokens; sizes are estimates"))
            if "scirepeval" in names:
                work.append(Work("released", f"{label}: SciRepEval SVMs (released check, few-shot too)", "svm",
                                 hours=2 * SCIREPEVAL_SVM_HOURS_ESTIMATE,
                                 how="the 11 supervised tasks and their few-shot variants (estimate)"))
    if p.score_released_models:
        released_systems = len(RELEASED_BASELINES) + 3 * len(RELEASED_FLEW)
        benchmarks("released", "released systems in the chapter's tables", released_systems)
        weight_search("released", "the released FLeW checkpoints' sums", len(RELEASED_FLEW))
        work.append(Work("released", "released checkpoints from the Hugging Face Hub", "fetch",
                         download_bytes=BERT_BASE_BYTES, runs=released_systems, requests=10,
                         requests_per_s=S2_REQUESTS_PER_S, how="~440 MB of weights and ~10 files a model"))

    # -- main: data, splitter, graph, sampling, three facet encoders, every system on the benchmarks
    work.append(Work("main", "FLeW's released triplets (flew_triplets)", "fetch", download_bytes=TRIPLETS_BYTES,
                     requests=3, requests_per_s=S2_REQUESTS_PER_S, how="three CSV files from the Hugging Face Hub"))
    # the graph through the bulk route (CHAPTER_DATA: s2ag_bulk_flew), not the Graph API crawl of weeks
    work.append(bulk_fetch_work("s2ag_bulk_flew", "main"))
    split_papers = sum(sizes["papers"].values()) * share
    work.append(Work("main", "the splitter on every triplet paper of each facet", "text",
                     hours=split_papers / SPLITTER_ABSTRACTS_PER_CPU_S / 3600,
                     how=f"{SPLITTER_ABSTRACTS_PER_CPU_S:g} abstracts a CPU second (measured here); FLeW §4.1's "
                         "papers per facet"))
    dimension_scale = int(p.graph_dimension) / 768
    work.append(Work("main", "PyTorch-BigGraph per facet subgraph", "graph", runs=3,
                     hours=FACET_EDGES_PER_QUERY_ESTIMATE * queries * int(p.graph_epochs) * dimension_scale
                     / PBG_EDGE_EPOCHS_PER_S_768 / 3600,
                     how=f"{PBG_EDGE_EPOCHS_PER_S_768:,.0f} edge-epochs/s at 768-d on 2 cores (measured, "
                         f"graph_scale_1m.txt) × {int(p.graph_epochs)} epochs; edges per query an estimate"))
    for facet in ("background", "method", "result"):
        nodes = sizes["papers"][facet] * share
        work.append(Work("main", f"kNN bands in the {facet} subgraph (flat FAISS)", "knn",
                         hours=queries * nodes * int(p.graph_dimension) * FLAT_SEARCH_S / 3600,
                         how=f"exact search at {FLAT_SEARCH_S:.2g} s per query × vector × dimension on 2 cores "
                             "(measured, graph_scale_1m.txt); nodes: FLeW §4.1's papers of the facet's triplets"))
    for facet, name in FACET_ENCODERS.items():
        train("main", f"{name} (split abstracts)", examples, facet_tokens)
    benchmarks("main", "the untrained encoder and the three facet encoders", 1 + len(FACET_ENCODERS), csfcube=True)
    weight_search("main", "FLeW's sum", 1)

    # -- published: the released triplets with the released split abstracts
    work.append(Work("published", "FLeW's released split abstracts (flew_split_metadata)", "fetch",
                     download_bytes=SPLIT_METADATA_BYTES_ESTIMATE, runs=3, requests=1,
                     requests_per_s=S2_REQUESTS_PER_S, how="one file a facet, 1.6-4.5 GB (3 GB an estimate)"))
    for facet, name in FACET_ENCODERS.items():
        train("published", f"{name} (published recipe)", examples, facet_tokens)
    benchmarks("published", "the published recipe's three encoders", len(FACET_ENCODERS), csfcube=True)
    weight_search("published", "the published recipe's sum", 1)

    # -- ablations
    for key, ablation in chosen_ablations(p.ablations).items():
        if key == "without_textual":
            for name in FACET_ENCODERS.values():
                train("ablations", f"{name} w/o textual (full abstracts)", examples, full_tokens)
            benchmarks("ablations", "w/o textual's three encoders", len(FACET_ENCODERS))
            weight_search("ablations", "w/o textual's sum", 1)
        elif key == "without_structural":
            work.append(Work("ablations", "PyTorch-BigGraph of the whole graph (w/o structural)", "graph",
                             hours=GRAPH_EDGES_PER_QUERY_ESTIMATE * queries * int(p.graph_epochs) * dimension_scale
                             / PBG_EDGE_EPOCHS_PER_S_768 / 3600,
                             how="as the facet subgraphs' line; edges per query an estimate"))
            nodes = max(sizes["papers"].values()) * share
            work.append(Work("ablations", "kNN bands in the whole graph (flat FAISS)", "knn",
                             hours=queries * nodes * int(p.graph_dimension) * FLAT_SEARCH_S / 3600,
                             how="as the facet subgraphs' line; nodes at least the largest facet's"))
            train("ablations", "FLeW w/o structural (SciNCL triplets, full abstracts)",
                  queries * SCINCL_TRIPLETS_PER_QUERY, full_tokens)
            benchmarks("ablations", "w/o structural's encoder", 1)
        else:  # a new registry entry must be counted here
            raise ValueError(f"flew.cost_plan: ablation {key!r} ({ABLATIONS[key].what}) is not counted")

    # -- seeds: the leaderboard's extra training seeds (CSFCube only)
    if p.csfcube_eval and seeds > 1:
        for name in FACET_ENCODERS.values():
            train("seeds", f"{name}, seeds 2-{seeds}", examples, facet_tokens, runs=seeds - 1)
        work.append(Work("seeds", "the extra seeds' encoders on CSFCube", "encode", runs=3 * (seeds - 1),
                         texts=CSFCUBE_PAPERS, tokens_per_text=csfcube_tokens, how="CSFCube's 4,205 papers"))
    selected = resolve_parts(getattr(p, "parts", "all"), PARTS)
    return CostPlan("flew", p.profile, dict(PARTS), work, selected)
