"""The CoSaEmb chapter's parts, its whole cost up front, its released checkpoints and the paper branches its dry run
must take (issues 30 and 32).

* :data:`PARTS` — what a ``paper`` run can be cut into (the ``parts`` parameter): ``released`` (Table 4's SciBERT and
  SPECTER rows by inference), ``prepare`` (the data, the full text's triplets, Tables 2-3 and the baseline rows:
  every other part reads it, so it always runs), ``main`` (Table 6, the headline: the graded (1, 2, 3) and flat
  (1, 1, 1) runs), ``ablations`` (§4's two other margin settings), ``control`` (the book's inter-document-only
  control) and ``seeds`` (further seeds of the leaderboard models). :data:`MARGIN_RUN_PART` says which part trains
  each margin setting of :data:`~sdr.methods.cosaemb.recipe.MARGIN_RUNS`.
* :func:`cost_plan` — every line of work of the chapter at its parameters (training runs, encodings, kNN, the
  SciRepEval probes, the CPU preparation of the full text, the fetches), sizes at ``paper`` from
  ``data/paper_tables`` (Tables 2-3) and the estimates below, each stated as one where the papers give no size.
* :data:`RELEASED_CHECKS` — the released checkpoints the paper reports (SciBERT and SPECTER on CSFCube, Table 4),
  how they are read, and which cells are asserted.
* :data:`DRY_RUN_BRANCHES` — the branches of the ``paper`` path the paper dry run must take.

Shown in: notebooks/cosaemb.ipynb ("Released models first", the plan printed before training at ``paper``).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from sdr.plan import Part, Work
from sdr.released import ReleasedCheck

__all__ = ["PARTS", "MARGIN_RUN_PART", "ALWAYS_RUN", "COLAB_SESSION_HOURS", "trained_margin_runs",
           "trains_control", "cost_plan", "RELEASED_CHECKS", "released_data_dirs", "DRY_RUN_BRANCHES"]

COLAB_SESSION_HOURS = 12
"""The longest Colab session (hours; Colab's FAQ): what "one session" means in :data:`PARTS`' T4 notes."""

PARTS = {
    "released": Part(
        "released", "Table 4's SciBERT and SPECTER rows (CSFCube), by inference with the released checkpoints",
        headline=True, t4="all of it in minutes (two CSFCube passes of 4,205 papers), before anything trains"),
    "prepare": Part(
        "prepare", "Tables 2-3 (the triplets built from SPECTER's papers' full text) and the SciBERT (untrained) and "
                   "SPECTER rows of Tables 4-6 as this chapter reads them; every other part reads its data, so it "
                   "runs with every choice of parts",
        headline=True, t4="its GPU work in one session; before it, the S2ORC stream (a download of hours) and the "
                          "full text's sentence splitting (CPU hours)"),
    "main": Part(
        "main", "Table 6 (the headline: CoSaEmb with margin gradation (1, 2, 3) and without (1, 1, 1)) and the "
                "CoSaEmb rows of Tables 4 and 5 (plain embeddings)",
        headline=True, t4="not in one session: each of its two runs spans several 12-hour sessions (resume = True "
                          "continues a run from its last checkpoint)"),
    "ablations": Part(
        "ablations", "§4's margin ablation: (0.5, 1, 1.5) and (2, 4, 6) (the paper prints no numbers for them, only "
                     "that (1, 2, 3) was best)",
        t4="not in one session: each of its two runs spans several 12-hour sessions (resume = True continues it)"),
    "control": Part(
        "control", "no table of the paper: the book's inter-document-only control (SPECTER's triplets alone, as many "
                   "as a margin run), a test of Table 6's claim that the gain is not more training data",
        t4="not in one session: its run spans two 12-hour sessions (resume = True continues it)"),
    "seeds": Part(
        "seeds", "no table of the paper (it reports one run): the leaderboard models trained again with further "
                 "seeds (leaderboard_seeds)",
        t4="nothing at the paper profile (one seed, as the paper); each further seed costs a run of its model"),
}
"""The chapter's parts (``parts`` parameter: ``"all"``, ``"headline"`` = released, prepare and main, or names).
Shown in: notebooks/cosaemb.ipynb (the plan at ``paper``) and profiles.yml (``parts: headline`` at ``paper``)."""

ALWAYS_RUN = ("prepare",)
"""Parts that run whatever ``parts`` says: every other part reads the data, triplets and baseline rows they make."""

MARGIN_RUN_PART = {"graded (1, 2, 3)": "main", "flat (1, 1, 1)": "main", "graded (0.5, 1, 1.5)": "ablations",
                   "graded (2, 4, 6)": "ablations"}
"""Which part trains each margin setting: Table 6's two rows are the headline, §4's other two the ablation."""


def trained_margin_runs(run) -> list[str]:
    """The margin settings of ``margin_runs`` whose part runs (each part not run prints one line, once)."""
    runs = {part: run.runs_part(part) for part in dict.fromkeys(MARGIN_RUN_PART[n] for n in run.p.margin_runs)}
    return [name for name in run.p.margin_runs if runs[MARGIN_RUN_PART[name]]]


def trains_control(run) -> bool:
    """Whether the inter-document-only control trains: ``inter_only_control`` and the ``control`` part."""
    return bool(run.p.inter_only_control) and run.runs_part("control")


# ================================================================================================ the cost plan
# Sizes the papers do not give, each an estimate or a measurement named here (the plan's `how` repeats it).
ABSTRACT_TOKENS = 234
"""Mean tokens of ``[TTL] title [SEP] [ABS] abstract`` (BERT's uncased WordPiece, cut at 512), measured on the 596
papers of SciRepEval's ``sample_data/specter_small.json`` (SPECTER's training papers): the abstract inputs."""
CSFCUBE_TOKENS = 222
"""Mean tokens of CSFCube's ``title [SEP] abstract`` (the same tokenizer, cut at 512), measured on its 4,205 papers."""
CHARS_PER_TOKEN = 5.18
"""Characters per WordPiece token, measured on CSFCube's 4,205 abstracts: turns full-text tokens into characters."""
CHUNK_FILL = 0.85
"""Estimate: the mean share of ``max_length`` a chunk fills (chunks take whole sentences up to the limit; the last
chunk of an aspect text is partial). Not measured on S2ORC: the mirror holds no full text."""
CSFCUBE_PAPERS, CSFCUBE_QUERIES = 4205, 50
"""The released CSFCube: papers embedded, and the query-facet pairs our encoders read as facet queries."""
SCIREPEVAL_PAPERS = 1_140_000
"""Estimate: papers SciRepEval's evaluation embeds, the sum of the row counts of the 23 configs of the Hugging Face
dataset ``allenai/scirepeval_test`` (its viewer: 11 K to 259 K a config; ids shared between configs counted again)."""
SCIREPEVAL_PROBE_HOURS = 0.5
"""Estimate, not measured: CPU hours of SciRepEval's linear probes (classification and regression tasks, ~ 400 K
labelled papers) for one model."""
PYSBD_CHARS_PER_S, REGEX_CHARS_PER_S = 277_000, 19_600_000
"""Sentence splitting, characters per CPU second, measured on 400 CSFCube abstracts (2 shared CPU cores)."""
KNN_FLOPS = 1e10
"""Estimate: a CPU's float32 rate for the paragraph set's all-pairs distances (10 GFLOP/s)."""
BANDWIDTH = 50e6
"""Estimate: download bytes per second of a Colab or workstation connection (50 MB/s)."""
TRIPLET_JSON_BYTES = 3835
"""Bytes per triplet of SciRepEval's cite_prediction JSON, measured on ``sample_data/specter_small.json`` (200)."""
S2ORC_STREAM_BYTES, S2ORC_SHARDS = 250e9, 30
"""The S2ORC release the ``s2orc_specter`` fetch streams whole (the registry's ~ 250 GB, kept ~ 2 GB) and its shard
count (an estimate: the Datasets API lists the shards of the release)."""
SCIREPEVAL_BYTES, SCIREPEVAL_REQUESTS = 4e9, 46
"""``scirepeval_full``: the registry's ~ 4 GB; a metadata and a test config per task (23), at 5 requests a second."""
MODEL_BYTES = 440e6
"""A BERT-base checkpoint (110 M float32 parameters): SciBERT and the released SPECTER."""


def _paper_counts() -> dict[str, int]:
    """CoSaEmb Tables 2-3 (``data/paper_tables/cosaemb_counts.csv``): triplets per kind, aspect texts, papers."""
    from sdr import book

    table = book.read_paper_table("cosaemb_counts").set_index("model")
    return {"local": int(table.loc["Local Context (Eq. 2)", "triplets"]),
            "global": int(table.loc["Global Context (Eq. 3)", "triplets"]),
            "inter": int(table.loc["Inter-document (Eq. 4)", "triplets"]),
            "papers": int(table.loc["papers with full text (S2ORC)", "count"])}


def _run_size(p, counts: dict) -> tuple[int, float]:
    """A margin run's triplets (the paper's Tables 2-3, the reversed pairs doubling the intra-document ones, capped
    by ``max_triplets``; the control trains as many) and its mean tokens a text."""
    intra = 2 if p.both_directions else 1
    kinds = {"local": intra * counts["local"], "global": intra * counts["global"], "inter": counts["inter"]}
    total = sum(kinds.values())
    examples = min(p.max_triplets, total) if p.max_triplets else total
    chunk, abstract = CHUNK_FILL * p.max_length, min(ABSTRACT_TOKENS, p.max_length)
    texts = {"local": 2 * chunk + abstract, "global": chunk + 2 * abstract, "inter": 3 * abstract}  # of a triplet
    tokens = sum(kinds[k] * texts[k] for k in kinds) / (3 * total)  # a subset keeps the kinds' proportions
    return examples, tokens


def cost_plan(p: SimpleNamespace):
    """Everything the chapter does at the parameters ``p`` (the notebook's, as ``sdr.plan.chapter_cost_plan`` or
    ``ChapterRun.plan`` give them), part by part: the training runs (each margin setting, the control, each further
    seed), the encodings of every model scored (held-out triplets, paragraphs, CSFCube, SciRepEval), the released
    checkpoints' CSFCube passes, the paragraph set's distances, the SciRepEval probes, the full text's sentence
    splitting and the fetches. Triplet counts come from the paper's Tables 2-3 (an upper bound: the held-out papers'
    triplets are not subtracted); the other sizes are the measurements and estimates of this module."""
    from sdr.methods.cosaemb.chapter import CONTROL
    from sdr.plan import CostPlan, resolve_parts

    counts = _paper_counts()
    examples, tokens = _run_size(p, counts)
    batch = p.batch_size * p.accumulation_steps
    aspects_per_paper = counts["global"] / counts["papers"]  # Table 2's frequencies over its papers
    paragraph_texts = round(p.paragraph_papers * aspects_per_paper)
    csfcube_tokens = min(CSFCUBE_TOKENS, p.csfcube_max_length or 512)
    scirepeval_tokens = min(ABSTRACT_TOKENS, p.csfcube_max_length or 512)
    work: list[Work] = []

    def scored(part: str, names: list[str], held_out: bool = True) -> None:
        """The encodings (and the probes and distances they feed) of the models ``names`` of ``part``."""
        if not names:
            return
        label = ", ".join(names)
        texts = paragraph_texts + (3 * p.heldout_triplets if held_out else 0)
        work.append(Work(part, f"encode {'held-out triplets and ' if held_out else ''}paragraph set ({label})",
                         "encode", runs=len(names), texts=texts,
                         tokens_per_text=(paragraph_texts * p.max_length
                                          + (3 * p.heldout_triplets * tokens if held_out else 0)) / texts,
                         how=(f"{3 * p.heldout_triplets} held-out triplet texts at most (tokens as in training), "
                              if held_out else "") + f"{p.paragraph_papers} held-out papers × {aspects_per_paper:.2f} "
                             "aspect texts (Table 2 over its papers) cut at max_length"))
        work.append(Work(part, f"paragraph distances ({label})", "knn", runs=len(names),
                         hours=2 * paragraph_texts ** 2 * 768 / KNN_FLOPS / 3600,
                         how=f"all pairs of the paragraph set, 768 dimensions, at {KNN_FLOPS:.0e} FLOP/s (estimate)"))
        on_csfcube = [n for n in names if n in p.csfcube_models]
        if on_csfcube:
            work.append(Work(part, f"encode CSFCube ({', '.join(on_csfcube)})", "encode", runs=len(on_csfcube),
                             texts=CSFCUBE_PAPERS + CSFCUBE_QUERIES, tokens_per_text=csfcube_tokens,
                             how=f"4,205 papers and 50 facet queries, {CSFCUBE_TOKENS} tokens measured, cut at "
                                 "csfcube_max_length"))
        on_scirepeval = [n for n in names if n in p.scirepeval_models]
        if on_scirepeval:
            work.append(Work(part, f"encode SciRepEval ({', '.join(on_scirepeval)})", "encode",
                             runs=len(on_scirepeval), texts=SCIREPEVAL_PAPERS, tokens_per_text=scirepeval_tokens,
                             how="papers of allenai/scirepeval_test's 23 configs (estimate), cut at csfcube_max_length"))
            work.append(Work(part, f"SciRepEval probes ({', '.join(on_scirepeval)})", "svm", runs=len(on_scirepeval),
                             hours=SCIREPEVAL_PROBE_HOURS, how="linear probes of the classification and regression "
                                                               "tasks, CPU (estimate, not measured)"))

    def trained(part: str, name: str, run_examples: int, run_tokens: float, what: str) -> None:
        work.append(Work(part, f"train {name}", "train", examples=run_examples, epochs=p.epochs,
                         effective_batch=batch, texts_per_example=3, tokens_per_text=run_tokens, how=what))

    # released: the released checkpoints on CSFCube (the same path as `sdr evaluate all`)
    groups = dict.fromkeys((c.model, c.max_length) for c in RELEASED_CHECKS)
    for model, length in groups:
        work.append(Work("released", f"encode CSFCube with {model} (released, {length} tokens)", "encode",
                         texts=CSFCUBE_PAPERS, tokens_per_text=min(CSFCUBE_TOKENS, length),
                         how="title [SEP] abstract of CSFCube's 4,205 papers, 222 tokens measured"))

    # prepare: the fetches, the full text's chunks, the baseline rows
    work += [
        Work("prepare", "fetch s2orc_specter (S2ORC streamed, SPECTER's papers kept)", "fetch",
             download_bytes=int(S2ORC_STREAM_BYTES), requests=1 + S2ORC_SHARDS, requests_per_s=1.0,
             hours=S2ORC_STREAM_BYTES / BANDWIDTH / 3600,
             how=f"the whole release (~ 250 GB, {S2ORC_SHARDS} shards: estimate) at {BANDWIDTH / 1e6:.0f} MB/s "
                 "(estimate); 1 API request a second"),
        Work("prepare", "fetch scirepeval_cite_prediction (SPECTER's triplets)", "fetch",
             download_bytes=counts["inter"] * TRIPLET_JSON_BYTES, requests=1,
             hours=counts["inter"] * TRIPLET_JSON_BYTES / BANDWIDTH / 3600,
             how=f"684,100 triplets × {TRIPLET_JSON_BYTES} bytes (measured on SciRepEval's sample) at "
                 f"{BANDWIDTH / 1e6:.0f} MB/s"),
        Work("prepare", "fetch scirepeval_full (the evaluation sets)", "fetch", download_bytes=int(SCIREPEVAL_BYTES),
             requests=SCIREPEVAL_REQUESTS, requests_per_s=5.0, hours=SCIREPEVAL_BYTES / BANDWIDTH / 3600,
             how="the registry's ~ 4 GB of parquet exports at 5 requests a second"),
        Work("prepare", "fetch csfcube, scicite (GitHub files)", "fetch", download_bytes=12_000_000, requests=62,
             requests_per_s=5.0, how="8 CSFCube files, 50 readable annotations, 2 SciCite splits (~ 12 MB)"),
        Work("prepare", "fetch SciBERT and the released SPECTER", "fetch", download_bytes=int(2 * MODEL_BYTES),
             requests=2, hours=2 * MODEL_BYTES / BANDWIDTH / 3600,
             how="two BERT-base checkpoints of ~ 440 MB"),
    ]
    chars = (counts["local"] + counts["global"]) * CHUNK_FILL * p.max_length * CHARS_PER_TOKEN
    rate = PYSBD_CHARS_PER_S if p.sentence_splitter == "pysbd" else REGEX_CHARS_PER_S
    work.append(Work("prepare", f"split the full text into sentences ({p.sentence_splitter}) and chunk it", "prepare",
                     hours=chars / rate / 3600,
                     how=f"{counts['papers']:,} papers' text as Table 2's chunks hold it ({CHARS_PER_TOKEN} characters "
                         f"a token) at {rate:,} characters a CPU second (measured)"))
    scored("prepare", ["untrained"])
    if p.specter_model:
        scored("prepare", ["SPECTER"], held_out=False)  # the released SPECTER is not in the held-out distances

    # the margin runs, the control, the further seeds
    for name in p.margin_runs:
        part = MARGIN_RUN_PART[name]
        trained(part, name, examples, tokens, "the paper's Tables 2-3 triplets (all kinds), capped by max_triplets; "
                f"chunks ≈ {CHUNK_FILL} × max_length (estimate), abstracts {ABSTRACT_TOKENS} tokens (measured)")
        scored(part, [name])
    if p.inter_only_control:
        trained("control", CONTROL, examples, min(ABSTRACT_TOKENS, p.max_length),
                "as many of SPECTER's triplets as a margin run (repeated), 3 abstract inputs each")
        scored("control", [CONTROL])
    leaderboard = [n for n in p.csfcube_models if n in p.margin_runs or (n == CONTROL and p.inter_only_control)]
    further = max(p.leaderboard_seeds - 1, 0)
    if leaderboard:
        abstract = min(ABSTRACT_TOKENS, p.max_length)
        mean_tokens = sum(abstract if n == CONTROL else tokens for n in leaderboard) / len(leaderboard)
        label = ", ".join(leaderboard)
        work.append(Work("seeds", f"train further seeds ({label})", "train", runs=further * len(leaderboard),
                         examples=examples, epochs=p.epochs, effective_batch=batch, texts_per_example=3,
                         tokens_per_text=mean_tokens,
                         how=f"leaderboard_seeds - 1 = {further} more runs of each leaderboard model, as its first"))
        work.append(Work("seeds", f"encode CSFCube (further seeds of {label})", "encode",
                         runs=further * len(leaderboard), texts=CSFCUBE_PAPERS + CSFCUBE_QUERIES,
                         tokens_per_text=csfcube_tokens, how="each further seed scored on CSFCube"))
    selected = resolve_parts(getattr(p, "parts", "all"), PARTS)
    selected = tuple(name for name in PARTS if name in selected or name in ALWAYS_RUN)
    return CostPlan("cosaemb", p.profile, dict(PARTS), work, selected)


# ================================================================================================ released models
_TABLE4 = {f"{metric}_{facet}": f"{facet}_{metric}" for facet in ("background", "method", "result", "all")
           for metric in ("rp", "p@20", "r@20", "ndcg%20")}
_SPECTER_READING = "none: title [SEP] abstract, [CLS], as SPECTER reads a paper (CSFCube's abstract queries)"

RELEASED_CHECKS = (
    ReleasedCheck("allenai/specter", "csfcube", "cosaemb_csfcube", "SPECTER", {"ndcg%20_all": "all_ndcg%20"},
                  pooling="cls", max_length=512, tolerance=0.3, adapter=_SPECTER_READING),
    ReleasedCheck("allenai/specter", "csfcube", "cosaemb_csfcube", "SPECTER",
                  {k: v for k, v in _TABLE4.items() if k != "ndcg%20_all"}, pooling="cls", max_length=512,
                  tolerance=None, adapter=_SPECTER_READING,
                  unasserted_because="the paper does not say how it ran SPECTER, and these cells are not SPECTER's "
                                     "published CSFCube scores: the official SPECTER rankings shipped with CSFCube "
                                     "score background RP 24.81 (paper 26.48), aggregated RP 18.29 (17.69) and "
                                     "R@20 50.14 (48.96) with the book's evaluator; only the aggregated NDCG%20 "
                                     "agrees (53.28 vs 53.31), and that cell is asserted"),
    ReleasedCheck("allenai/scibert_scivocab_uncased", "csfcube", "cosaemb_csfcube", "SciBERT", dict(_TABLE4),
                  pooling="cls", max_length=512, tolerance=None,
                  adapter="none: title [SEP] abstract, [CLS] (the paper states neither)",
                  unasserted_because="the paper does not say how it read SciBERT (pooling, input), and an untrained "
                                     "language model's CSFCube scores depend on both"),
)
"""The released checkpoints CoSaEmb reports, on the benchmark it reports them on (Table 4, CSFCube; Table 6's
SciBERT and SPECTER rows are on the paper's own arXiv set, which has no download; Table 5 has neither), each with
how it is read and whether it is asserted (±0.3 where the paper's number is SPECTER's published one). Shown in:
notebooks/cosaemb.ipynb, "Released models first"."""


def released_data_dirs(inputs) -> dict:
    """The benchmark folders the released checks read: the chapter's CSFCube."""
    return {"csfcube": inputs.csfcube.path}


DRY_RUN_BRANCHES = (
    "released checks asserted",          # sdr.released.released_part: the ±0.3 row compared and asserted
    "cls pooling",                       # the paper profile's [CLS] vectors (mean at smoke and real)
    "pysbd sentences",                   # the paper profile's sentence splitter (regex at smoke and real)
    "released SPECTER scored beside",    # Tables 4-6's SPECTER rows from specter_model
    "margin ablation trained",           # §4's (0.5, 1, 1.5) and (2, 4, 6) (the ablations part)
    "flat margins trained",              # Table 6's w/o margin gradation row
    "inter-document control trained",    # the control, SPECTER's triplets repeated to a margin run's count
    "further seeds trained",             # the seed loop's body (leaderboard_seeds > 1)
    "leakage audited",                   # training papers against SciRepEval (its SciDocs tasks) and CSFCube
)
"""The ``paper`` path's branches the dry run must take (``ChapterRun.branch``; checked by ``sdr.dryrun``)."""
