"""The steps of the CoSaEmb chapter up to its trained models, one call each: the data, the heading rule, the
triplets and their checks, the margin runs and the control, the held-out order of distances (:mod:`.scoring` scores
the models on the benchmarks and stores the page's record).

Each step takes the chapter's :class:`sdr.book.ChapterRun` (its parameters are ``run.p``) and returns what the page
shows; the invariants of what a step produces are checked where it is produced and raise
:class:`sdr.book.ChapterCheckFailed` with a clear message, and the page keeps one line per claim. Where the data
came from (real, official, replica) is decided here, never on the page. Shown in: notebooks/cosaemb.ipynb.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np
import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed, Fit
from sdr.corpus import CitationGraph, Paper
from sdr.methods.cosaemb.chunking import Chunker, parse_chunk_id
from sdr.methods.cosaemb.recipe import (ASPECT_NAMES, ASPECT_TOKENS, MARGIN_RUNS, PAPER_MARGINS, SPECIAL_TOKENS,
                                        FullTextReport, TripletReport, aspect_distribution, aspect_texts,
                                        attach_full_text, cosaemb_aspect_matched, cosaemb_objective, cosaemb_triplets,
                                        counts_tables, margin_loss, plan_run, repeat_to, specter_training_set,
                                        triplet_distances, with_margins)
from sdr.methods.cosaemb.parts import MARGIN_RUN_PART, trained_margin_runs, trains_control
from sdr.samplers import Triplet

__all__ = ["CONTROL", "GRADED", "TRAINING_PARAMETERS", "SCICITE_RELEASED", "PROBE_LOSS_RATIO", "chapter_inputs",
           "TrainingSource", "training_source", "Headings", "heading_tables", "fresh_encoder", "HeldOut",
           "hold_out", "CoSaEmbTriplets", "build_triplets", "check_triplets", "Counts", "counts_vs_paper",
           "MarginRuns", "train_margin_runs", "training_figure", "retrain", "expect_lower_probe_loss", "DistanceOrder",
           "distance_order", "expect_heldout_gain", "heldout_gain"]

#: The control run: SPECTER's triplets only, from the same start, as many triplets as a margin run.
CONTROL = "inter-document only"
#: The paper's CoSaEmb: the margin setting of its Tables 4-6.
GRADED = "graded (1, 2, 3)"
#: The parameters that change training (with the training data's sources they key the run folder, book.run_dir).
TRAINING_PARAMETERS = ("model_name", "model_layers", "pooling", "seed", "n_papers", "eval_fraction",
                       "paragraph_papers", "max_train_papers", "max_triplets", "max_length", "sentence_splitter",
                       "both_directions", "epochs", "batch_size", "accumulation_steps", "learning_rate", "schedule",
                       "warmup_ratio")
#: SciCite's released dev + test files: distinct headings once case is ignored, and citation contexts (dev, test).
SCICITE_RELEASED = {"distinct headings": 427, "occurrences": 916 + 1861}
#: The default of the chapter's ``probe_loss_ratio``: training must bring the paper's setting's probe loss (and the
#: runs' together) below this share of its start; each profile sets its own from the measured seed spread.
PROBE_LOSS_RATIO = 0.83


# ------------------------------------------------------------------------------------------------- data
def chapter_inputs(run) -> SimpleNamespace:
    """SPECTER's training triplets (SciRepEval ``cite_prediction``) and their full text (S2ORC), SciCite's real
    headings when found, CSFCube and SciRepEval, under the data policy: the released data where the profile reads
    it, else replicas in the official layouts written from one synthetic corpus (its training part gives the
    triplets and their full text, its held-out part the benchmarks; built only if a replica is written).

    Shown in: notebooks/cosaemb.ipynb, first cell."""
    from sdr.synthetic import make_corpus
    from sdr.synthetic.csfcube import write_csfcube
    from sdr.synthetic.scirepeval import write_scirepeval
    from sdr.synthetic.specter_training import write_cite_prediction, write_s2orc_full_text
    from sdr.synthetic.split import split_corpus

    p, data = run.p, run.data
    started = time.time()
    synthetic = data.lazy("the synthetic corpus behind the replicas", lambda: split_corpus(
        make_corpus(n_papers=p.n_papers, seed=p.seed), p.eval_fraction, seed=p.seed))
    replica_of = f"synthetic corpus ({p.n_papers} papers, seed {p.seed})"
    triplets = data.input(
        "scirepeval_cite_prediction", role="training",
        replica=lambda folder: write_cite_prediction(synthetic()[0], folder, seed=p.seed),
        replica_source=f"SPECTER's sampler on the training part of the {replica_of}, in cite_prediction's layout")
    full_text = data.input(
        "s2orc_specter", role="training", replica=lambda folder: write_s2orc_full_text(synthetic()[0], folder),
        replica_source=f"full text of the training part of the {replica_of}, in S2ORC's layout")
    scicite = data.input("scicite", optional=True)  # real section headings, when found
    csfcube = data.input("csfcube", replica=lambda folder: write_csfcube(
        synthetic()[1], folder, n_queries=p.replica_queries, pool_size=p.replica_pool, seed=p.seed),
        replica_source=f"CSFCube replica of the held-out part of the {replica_of}")
    scirepeval = data.input("scirepeval_full", files=("scirepeval_tasks.jsonl",), replica=lambda folder: write_scirepeval(
        synthetic()[1], folder, seed=p.seed, n_queries=p.scirepeval_queries, progress=False),
        replica_source=f"SciRepEval replica of the held-out part of the {replica_of}")
    return SimpleNamespace(triplets=triplets, full_text=full_text, scicite=scicite, csfcube=csfcube,
                           scirepeval=scirepeval, synthetic=synthetic, started=started)


@dataclass
class TrainingSource:
    """SPECTER's training triplets (the inter-document set), the papers they name with the full text attached, and
    the citations they imply."""

    inter_all: list[Triplet]
    papers: dict[str, Paper]
    cites: CitationGraph
    full_text_report: FullTextReport


def training_source(inputs) -> TrainingSource:
    """SPECTER's training triplets (Table 3's inter-document set) and the full text of their papers, joined by
    corpus id (:func:`~sdr.methods.cosaemb.recipe.attach_full_text` raises when the two do not describe the same
    papers). Shown in: notebooks/cosaemb.ipynb, "Sections → aspects: the heading rule"."""
    from sdr.corpus import read_s2orc_pdf_parses, read_scirepeval_triplets

    records, _ = read_scirepeval_triplets(inputs.triplets.file("train.jsonl"))
    inter_all, papers, cites = specter_training_set(records)
    sections_by_paper, _ = read_s2orc_pdf_parses(inputs.full_text.file("pdf_parses/pdf_parses.jsonl"),
                                                 progress=False)
    report = attach_full_text(papers, sections_by_paper, inputs.full_text.source, inputs.triplets.source)
    return TrainingSource(inter_all, papers, cites, report)


# ------------------------------------------------------------------------------------------------- headings
@dataclass
class Headings:
    """The heading rule's distribution over the five aspects, per input (``tables``) and side by side (``table``)."""

    tables: dict[str, pd.DataFrame]
    table: pd.DataFrame
    full_text_key: str
    full_text_headings: list

    @property
    def full_text(self) -> pd.DataFrame:
        return self.tables[self.full_text_key]

    @property
    def defaulted(self) -> list[str]:
        """The training headings no keyword matched (they went to Methods by default), distinct and sorted."""
        return sorted({h for h in self.full_text_headings if h and not cosaemb_aspect_matched(h)})

    def defaulted_line(self, examples: int = 12) -> str:
        return (f"training headings that went to Methods by default ({len(self.defaulted)} distinct), e.g.: "
                f"{self.defaulted[:examples]}")


def heading_tables(inputs, source: TrainingSource) -> Headings:
    """The heading rule (:func:`~sdr.methods.cosaemb.recipe.cosaemb_aspect`) on the training full text's headings
    and, when SciCite is found, on the real headings of its citation contexts (``sectionName``, dev + test).

    Checks: one row per aspect in the paper's order; only Methods receives headings by default; every training
    heading is counted; on SciCite's released files, its 427 distinct headings and 916 + 1,861 contexts.
    Shown in: notebooks/cosaemb.ipynb, "Sections → aspects: the heading rule"."""
    from sdr.corpus import read_scicite

    headings = [s.heading for paper in source.papers.values() for s in paper.sections]
    key = f"training full text ({inputs.full_text.kind})"
    tables = {key: aspect_distribution(headings)}
    if inputs.scicite is not None:  # an optional input: found or not
        scicite_headings = [r.get("sectionName") for split in ("dev", "test")
                            for r in read_scicite(inputs.scicite.file(f"{split}.jsonl"))]
        tables["SciCite sectionName (dev + test)"] = aspect_distribution(scicite_headings)
    for name, table in tables.items():
        if list(table.index) != list(ASPECT_NAMES.values()):
            raise ChapterCheckFailed(f"{name}: aspects {list(table.index)}, expected {list(ASPECT_NAMES.values())}")
        by_default = table.drop(index="Method")["of which by default"]
        if (by_default != 0).any():
            raise ChapterCheckFailed(f"{name}: only Methods may receive headings by default, not {by_default.to_dict()}")
    if not tables[key]["occurrences"].sum() == len(headings) > 0:
        raise ChapterCheckFailed(f"{key}: {tables[key]['occurrences'].sum()} headings counted of {len(headings)}")
    if inputs.scicite is not None and inputs.scicite.official:
        counted = tables["SciCite sectionName (dev + test)"][list(SCICITE_RELEASED)].sum().to_dict()
        if counted != SCICITE_RELEASED:
            raise ChapterCheckFailed(f"SciCite's released dev + test files: {counted}, expected {SCICITE_RELEASED}")
    return Headings(tables, pd.concat(tables, axis=1), key, headings)


# ------------------------------------------------------------------------------------------------- triplets
def fresh_encoder(run, run_seed: int | None = None):
    """The chapter's encoder with the seven CoSaEmb tokens added; their embeddings are drawn at random, so
    ``run_seed`` (default: ``seed``) seeds torch first: the same start for every model of a seed."""
    import torch

    p = run.p
    torch.manual_seed(p.seed if run_seed is None else run_seed)
    encoder = run.encoder(pooling=p.pooling, max_length=p.max_length)
    if p.pooling == "cls":
        run.branch("cls pooling")
    added = encoder.add_special_tokens(SPECIAL_TOKENS)
    if added != len(SPECIAL_TOKENS):
        raise ChapterCheckFailed(f"{added} of the {len(SPECIAL_TOKENS)} CoSaEmb tokens were added to the tokenizer")
    return encoder


@dataclass
class HeldOut:
    """The held-out full-text papers (Table 6's paragraph set and the held-out triplets) and what trains."""

    papers: list[str]
    train_ids: list[str]
    inter_train: list[Triplet]
    inter_heldout: list[Triplet]
    inter_all: int

    def describe(self) -> str:
        return (f"held out: {len(self.papers)} full-text papers and the {len(self.inter_heldout)} SPECTER triplets of "
                f"their queries; training: {len(self.train_ids)} full-text papers, {len(self.inter_train)} of "
                f"{self.inter_all} SPECTER triplets")


def hold_out(run, source: TrainingSource) -> HeldOut:
    """Hold out a seeded sample of ``paragraph_papers`` full-text papers (at most a fifth of those with two aspect
    texts or more: a paragraph query needs another section of its paper); none of their sections is trained on,
    nor SPECTER's triplets whose query they are. ``max_train_papers`` caps the rest."""
    p = run.p
    papers = source.papers
    with_text = sorted(pid for pid, paper in papers.items() if paper.sections)
    eligible = [pid for pid in with_text if len(aspect_texts(papers[pid])) >= 2]
    held_out = sorted(np.random.default_rng(p.seed).choice(eligible, size=min(p.paragraph_papers, len(eligible) // 5),
                                                           replace=False))
    held = set(held_out)
    train_ids = [pid for pid in with_text if pid not in held]
    train_ids = train_ids[:p.max_train_papers] if p.max_train_papers else train_ids
    return HeldOut(held_out, train_ids, [t for t in source.inter_all if t.query not in held],
                   [t for t in source.inter_all if t.query in held], len(source.inter_all))


@dataclass
class CoSaEmbTriplets:
    """The three triplet kinds of the training papers, the text of every id they name, the counts, the chunker."""

    triplets: list[Triplet]
    texts: dict[str, str]
    report: TripletReport
    chunker: Chunker
    both_directions: bool

    def example_chunks(self, papers: Mapping[str, Paper], count: int = 4) -> pd.DataFrame:
        """The first ``count`` chunks of a paper that gave local triplets, cut again by a fresh chunker (so the
        run's report is untouched), with their headings, aspect, tokens and input."""
        example = next(t.query.split("#")[0] for t in self.triplets if t.kind == "local")
        chunker = Chunker(self.chunker.tokenizer, self.chunker.max_length, split_sentences=self.chunker.split_sentences)
        chunks = [c for aspect_chunks in chunker.paper_chunks(papers[example]) for c in aspect_chunks][:count]
        return pd.DataFrame([{"id": c.id, "headings": "; ".join(c.headings), "aspect": c.aspect,
                              "tokens": self.chunker.n_tokens(c.text), "input": c.text} for c in chunks]).set_index("id")


def build_triplets(run, source: TrainingSource, split: HeldOut, tokenizer) -> CoSaEmbTriplets:
    """Chunk the training papers' aspect texts (``max_length``, ``sentence_splitter``) and build the local and
    global triplets of §3.3 (one direction unless ``both_directions``), then SPECTER's inter-document triplets of
    the training queries, unchanged. Shown in: notebooks/cosaemb.ipynb, "Training data: SPECTER's triplets, full
    text, chunks"."""
    p = run.p
    chunker = Chunker(tokenizer, p.max_length, split_sentences=p.sentence_splitter)
    triplets, texts, report = cosaemb_triplets(source.papers, source.cites, chunker, query_ids=split.train_ids,
                                               seed=p.seed, inter_triplets=split.inter_train,
                                               both_directions=p.both_directions)
    if p.sentence_splitter == "pysbd":
        run.branch("pysbd sentences")
    return CoSaEmbTriplets(triplets, texts, report, chunker, p.both_directions)


def check_triplets(built: CoSaEmbTriplets, source: TrainingSource, split: HeldOut) -> str:
    """Every triplet and chunk the runs train on, not a sample: local pairs are consecutive chunks of one aspect
    text, the later one the query (eq. 2); global pairs join an aspect's first chunk (the query, eq. 3) and the
    paper's own abstract; the negatives of both are abstracts of papers the query paper cites; the inter-document
    triplets are SPECTER's, unchanged and in their order; every chunk fits the limit, the first of an aspect opens
    with the title and the aspect token, every later one carries its aspect token twice. Raises
    :class:`~sdr.book.ChapterCheckFailed` naming the first broken triplet or chunk; returns the line the page prints.
    Shown in: notebooks/cosaemb.ipynb, "Training data: SPECTER's triplets, full text, chunks"."""
    both = built.both_directions
    for t in built.triplets:
        if t.kind == "inter":
            continue
        query, positive = parse_chunk_id(t.query), parse_chunk_id(t.positive)
        chunk = query or positive
        if not (t.negative in source.cites.references(chunk[0]) and parse_chunk_id(t.negative) is None):
            raise ChapterCheckFailed(f"{t}: the negative must be the abstract of a paper {chunk[0]} cites")
        if t.kind == "local":
            consecutive = query[:2] == positive[:2] and abs(query[2] - positive[2]) == 1
            if not (consecutive and (both or query[2] == positive[2] + 1)):
                raise ChapterCheckFailed(f"{t}: a local pair must be consecutive chunks of one aspect text, the "
                                         "later one the query")
        elif not (t.kind == "global" and chunk[2] == 0 and (both or query is not None)
                  and (t.positive if query is not None else t.query) == chunk[0]):
            raise ChapterCheckFailed(f"{t}: a global pair must join an aspect's first chunk (the query) and its "
                                     "paper's own abstract")
    given = [(t.query, t.positive, t.negative) for t in split.inter_train]
    if [(t.query, t.positive, t.negative) for t in built.triplets if t.kind == "inter"] != given:
        raise ChapterCheckFailed("the inter-document triplets must be SPECTER's, unchanged and in their order")
    chunk_ids = [i for i in built.texts if parse_chunk_id(i) is not None]
    longest = max(built.chunker.token_counts([built.texts[i] for i in chunk_ids]))
    if longest > built.chunker.max_length:
        raise ChapterCheckFailed(f"a chunk of {longest} tokens, over the limit of {built.chunker.max_length}")
    for i in chunk_ids:
        paper_id, aspect, position = parse_chunk_id(i)
        token, text = ASPECT_TOKENS[aspect], built.texts[i]
        opening = f"[TTL] {source.papers[paper_id].title} {built.chunker.sep} {token}" if position == 0 else token
        if text.count(token) != (1 if position == 0 else 2) or not text.startswith(opening):
            raise ChapterCheckFailed(f"chunk {i} must open with {opening!r} and carry {token} "
                                     f"{'once' if position == 0 else 'twice'}: {text[:120]!r}")
    return f"{len(built.triplets)} triplets and {len(chunk_ids)} chunks checked"


@dataclass
class Counts:
    """Our counts in the shape of the paper's Tables 2 and 3 (``table2``, ``table3``) and beside its rows."""

    table2: pd.DataFrame
    table3: pd.DataFrame
    versus2: pd.DataFrame
    versus3: pd.DataFrame


def counts_vs_paper(run, report: TripletReport) -> Counts:
    """Tables 2 and 3 (:func:`~sdr.methods.cosaemb.recipe.counts_tables`) next to the paper's rows
    (``data/paper_tables/cosaemb_counts.csv``). Checks the tables' shape: the same rows as the paper's, Table 2
    summing to Table 3 (ours and the paper's), and each aspect at most once per paper (the paper's Table 2 against
    its papers with full text, ours against the papers that gave triplets).
    Shown in: notebooks/cosaemb.ipynb, "Counts in the shape of the paper's Tables 2 and 3"."""
    table2, table3 = counts_tables(report)
    paper_counts = book.read_paper_table("cosaemb_counts")
    paper2 = paper_counts[paper_counts["table"] == "Table 2"].set_index("model")
    paper3 = paper_counts[paper_counts["table"] == "Table 3"].set_index("model")
    full_text_papers = paper_counts.set_index("model").loc["papers with full text (S2ORC)", "count"]
    ours = f"this book ({run.profile})"
    versus2 = pd.concat({"CoSaEmb Table 2 (S2ORC)": paper2[["sections", "section_triplets"]].set_axis(
                            ["Frequency", "Section Triplets"], axis=1), ours: table2}, axis=1)
    versus3 = pd.concat({"CoSaEmb Table 3 (S2ORC)": paper3[["triplets"]].set_axis(["Frequency"], axis=1),
                         ours: table3}, axis=1)
    if set(paper2.index) != set(table2.index) or set(paper3.index) != set(table3.index):
        raise ChapterCheckFailed(f"our rows {list(table2.index)} / {list(table3.index)} are not the paper's "
                                 f"{list(paper2.index)} / {list(paper3.index)}")
    if not (table3.loc["Local Context (Eq. 2)", "Frequency"] == table2["Section Triplets"].sum()
            and table3.loc["Global Context (Eq. 3)", "Frequency"] == table2["Frequency"].sum()):
        raise ChapterCheckFailed(f"our Table 2 does not sum to our Table 3:\n{table2}\n{table3}")
    if (paper2["section_triplets"].sum(), paper2["sections"].sum()) != tuple(paper3["triplets"].iloc[:2]):
        raise ChapterCheckFailed("data/paper_tables/cosaemb_counts.csv: Table 2 does not sum to Table 3")
    if not ((paper2["sections"] <= full_text_papers).all()
            and (table2["Frequency"] <= report.papers_with_triplets).all()):
        raise ChapterCheckFailed("an aspect counts more than once per paper (Table 2)")
    return Counts(table2, table3, versus2, versus3)


# ------------------------------------------------------------------------------------------------- training
def _folder(name: str, run_seed: int, seed: int) -> str:
    folder = name.replace(" ", "").replace("(", "-").replace(")", "").replace(",", "-")
    return folder if run_seed == seed else f"{folder}-seed{run_seed}"


@dataclass
class MarginRuns:
    """The margin runs and the control: their triplets, objective and settings, the first seed's fits, the table of
    the page, and the leaderboard models with their seeds."""

    subset: list[Triplet]
    examples: dict[str, list[Triplet]]
    objective: object
    config: object
    fits: dict[str, Fit]
    table: pd.DataFrame
    seeds: list[int]
    leaderboard_models: list[str]

    @property
    def encoders(self) -> dict:
        return {name: fit.encoder for name, fit in self.fits.items()}


def train_margin_runs(run, inputs, built: CoSaEmbTriplets, split: HeldOut, base) -> MarginRuns:
    """Train one fresh encoder (:func:`fresh_encoder`) per margin setting of ``margin_runs``
    (:data:`~sdr.methods.cosaemb.recipe.MARGIN_RUNS`), all on the same triplets — a seeded subset of
    ``max_triplets`` keeping the kinds' proportions — and, with ``inter_only_control``, the control on as many of
    SPECTER's triplets (repeated in fresh seeded orders) with the inter-document margin; each run checkpoints in
    the chapter's run folder (keyed by the training parameters and the training data) and continues there with
    ``resume``. Only the runs of the parts this run runs train (:data:`~sdr.methods.cosaemb.parts.MARGIN_RUN_PART`:
    Table 6's two settings are ``main``, §4's other two ``ablations``; the control is ``control``; further seeds of
    the leaderboard models ``seeds``). At ``paper`` the tokens a text of the runs' own inputs are printed beside the
    cost plan's estimate (``ChapterRun.show_plan`` printed the plan before the data were read).

    Each run's loss is measured on a fixed probe of about 32 of its triplets (no dropout) before and after training.
    Checks: every run trains as many triplets, and the subset holds all three kinds.
    Shown in: notebooks/cosaemb.ipynb, "Training: one run per margin setting, and the control"."""
    from sdr.methods.specter.recipe import leaderboard_seeds
    from sdr.train import TrainConfig

    p = run.p
    triplets = built.triplets
    rng = np.random.default_rng(p.seed)
    subset = ([triplets[i] for i in sorted(rng.choice(len(triplets), size=p.max_triplets, replace=False))]
              if p.max_triplets and len(triplets) > p.max_triplets else list(triplets))
    examples = {name: with_margins(subset, MARGIN_RUNS[name]) for name in trained_margin_runs(run)}
    if trains_control(run):
        examples[CONTROL] = with_margins(repeat_to(split.inter_train, len(subset), seed=p.seed), PAPER_MARGINS)
    objective = cosaemb_objective({i: built.texts[i] for run_examples in examples.values()
                                   for t in run_examples for i in (t.query, t.positive, t.negative)})
    config = TrainConfig(epochs=p.epochs, batch_size=p.batch_size, accumulation_steps=p.accumulation_steps,
                         learning_rate=p.learning_rate, schedule=p.schedule, warmup_ratio=p.warmup_ratio, seed=p.seed,
                         checkpoint_every=p.checkpoint_every, progress=False)
    # The run folder is keyed by the training data's sources too, which are not parameters.
    run.runs = book.run_dir("cosaemb", run.profile, {
        **{key: getattr(p, key) for key in TRAINING_PARAMETERS},
        "training_data": [inputs.triplets.source, inputs.full_text.source]})
    seeds = leaderboard_seeds(p.seed, p.leaderboard_seeds) if run.runs_part("seeds") else [p.seed]
    leaderboard_models = [name for name in p.csfcube_models if name in examples]
    if run.data.policy.real_only and examples:  # the plan's tokens a text were estimated before the data were read
        measured = {name: plan_run(name, run_examples, built.texts, base.tokenizer, p.max_length, p.epochs,
                                   p.batch_size * p.accumulation_steps, seed=p.seed)["tokens_per_text"]
                    for name, run_examples in examples.items()}
        planned = {w.what.removeprefix("train "): w.tokens_per_text for w in run.plan.work if w.kind == "train"}
        print("tokens a text, measured on each run's inputs (the plan's estimate): " + ", ".join(
            f"{name} {value:.0f} ({planned.get(name, float('nan')):.0f})" for name, value in measured.items()))
    runs = MarginRuns(subset, examples, objective, config, {}, pd.DataFrame(), seeds, leaderboard_models)
    rows = {}
    for name, run_examples in examples.items():
        fit = retrain(run, runs, name, p.seed, probe=32)
        runs.fits[name] = fit
        kinds = pd.Series([t.kind for t in run_examples]).value_counts()
        margins = MARGIN_RUNS.get(name, {"inter": PAPER_MARGINS["inter"]})
        rows[name] = {"margins (inter, global, local)": ", ".join(f"{margins[k]:g}" if k in margins else "–"
                                                                  for k in ("inter", "global", "local")),
                      **{f"{kind} triplets": int(kinds.get(kind, 0)) for kind in ("local", "global", "inter")},
                      "optimizer steps": fit.result.steps, "loss before": fit.loss_before,
                      "loss after": fit.loss_after}
    runs.table = pd.DataFrame(rows).T
    for name in examples:
        if name == "flat (1, 1, 1)":
            run.branch("flat margins trained")
        elif name == CONTROL:
            run.branch("inter-document control trained")
        elif MARGIN_RUN_PART[name] == "ablations":
            run.branch("margin ablation trained")
    trained = runs.table.filter(like="triplets").sum(axis=1)
    if not (trained == len(subset)).all():
        raise ChapterCheckFailed(f"every run must train the {len(subset)} triplets of a margin run: {trained.to_dict()}")
    if {"local", "global", "inter"} != {t.kind for t in subset}:
        raise ChapterCheckFailed(f"the training subset lacks a triplet kind: {sorted({t.kind for t in subset})}")
    return runs


def training_figure(run, runs: MarginRuns) -> None:
    """Each run's training loss per optimizer step (:func:`sdr.book.figures.training_loss`), or one line when the
    parts chosen trained none. Shown in: notebooks/cosaemb.ipynb, "Training: one run per margin setting, and the
    control"."""
    if not runs.fits:
        print("no run trained with the parts chosen: no training curve")
        return
    book.figures.training_loss(run, runs.fits,
                               title="Training loss (squared L2, per-kind margins; rolling mean over 5 steps)")


def retrain(run, runs: MarginRuns, name: str, run_seed: int, probe: int = 0) -> Fit:
    """Run ``name`` of ``runs`` trained from a fresh encoder whose new tokens are drawn with ``run_seed``, with the
    training seed ``run_seed`` (its own folder when it is not ``seed``): the first seed of every run, and the
    further seeds of the leaderboard models (:func:`seed_rows`)."""
    p = run.p
    label = name if run_seed == p.seed else f"{name} (seed {run_seed})"
    return run.fit(label, runs.examples[name], runs.objective, replace(runs.config, seed=run_seed),
                   encoder=fresh_encoder(run, run_seed), folder=_folder(name, run_seed, p.seed), probe=probe)


def expect_lower_probe_loss(training: pd.DataFrame, ratio: float = PROBE_LOSS_RATIO) -> bool:
    """The check with teeth on training: the paper's setting (``graded (1, 2, 3)``, else the first run) ends with its
    probe loss below ``ratio`` of its start (the chapter's ``probe_loss_ratio``, set per profile above the spread
    measured over seeds: profiles.yml), and the runs' probe losses together end below ``ratio`` of theirs too (a
    run of a few steps with a small margin may end a little above its start). The paper dry run trains a few
    steps of a random stand-in at the paper's learning rate, so there it is reported, not checked. Returns whether
    it ran. Shown in: notebooks/cosaemb.ipynb, "Training: one run per margin setting, and the control"."""
    from sdr import datasets

    if training.empty:
        print("no run trained with the parts chosen: no training loss to check")
        return False
    if datasets.dry_run():
        print("paper dry run: a few steps at the paper's learning rate; whether the loss falls is checked by real runs")
        return False
    graded = training.loc[GRADED] if GRADED in training.index else training.iloc[0]
    if not graded["loss after"] < ratio * graded["loss before"]:
        raise ChapterCheckFailed(f"{graded.name}: training did not lower the probe loss below {ratio:g} of "
                                 f"its start ({graded['loss before']:.4f} -> {graded['loss after']:.4f})")
    before, after = training["loss before"].sum(), training["loss after"].sum()
    if not after < ratio * before:
        raise ChapterCheckFailed(f"training did not lower the runs' probe losses together below {ratio:g} of their "
                                 f"start ({before:.4f} -> {after:.4f})")
    print(f"check passed: {graded.name} probe loss {graded['loss before']:.4f} -> {graded['loss after']:.4f}, all runs "
          f"{before:.4f} -> {after:.4f} (each < {ratio:g} of its start)")
    return True


# ------------------------------------------------------------------------------------------------- held out
@dataclass
class DistanceOrder:
    """Per model: the share of held-out triplets of each kind whose positive is nearer (%), and eq. 5's loss."""

    table: pd.DataFrame
    triplets: list[Triplet]

    def describe(self) -> str:
        return f"{len(self.triplets)} held-out triplets: {pd.Series([t.kind for t in self.triplets]).value_counts().to_dict()}"


def distance_order(run, source: TrainingSource, split: HeldOut, tokenizer, models: Mapping) -> DistanceOrder:
    """Triplets built the same way from the held-out papers (their aspect texts, SPECTER's triplets of their
    queries; a seeded sample of ``heldout_triplets``), and for each model the share of each kind ordered (squared
    L2, :func:`~sdr.methods.cosaemb.recipe.triplet_distances`) and the loss of eq. 5 with the paper's margins
    (:func:`~sdr.methods.cosaemb.recipe.margin_loss`). Shown in: notebooks/cosaemb.ipynb, "The order of distances
    on held-out papers"."""
    p = run.p
    chunker = Chunker(tokenizer, p.max_length, split_sentences=p.sentence_splitter)
    heldout, texts, _ = cosaemb_triplets(source.papers, source.cites, chunker, query_ids=split.papers, seed=p.seed + 1,
                                         inter_triplets=split.inter_heldout)
    if p.heldout_triplets and len(heldout) > p.heldout_triplets:
        heldout = [heldout[i] for i in sorted(np.random.default_rng(p.seed).choice(len(heldout), p.heldout_triplets,
                                                                                   replace=False))]
    rows = {}
    for name, encoder in models.items():
        distances = triplet_distances(encoder, heldout, texts, batch_size=p.eval_batch_size)
        rows[name] = {**(100 * distances.groupby("kind")["ordered"].mean()).to_dict(),
                      "all": 100 * distances["ordered"].mean(),
                      "held-out loss (1, 2, 3)": margin_loss(distances, PAPER_MARGINS)}
    table = pd.DataFrame(rows).T
    # a trained model scoring exactly as its untrained start was not trained, or is not the model it claims to be
    same = [name for name in table.index if name != "untrained" and "untrained" in table.index
            and table.loc[name, "held-out loss (1, 2, 3)"] == table.loc["untrained", "held-out loss (1, 2, 3)"]]
    if same:
        raise ChapterCheckFailed(f"{same}: the held-out loss equals the untrained encoder's exactly: the trained weights "
                                 "are not the ones scored")
    return DistanceOrder(table, heldout)


def expect_heldout_gain(run, inputs, order: DistanceOrder) -> bool:
    """The check with teeth on the held-out objective: the graded (1, 2, 3) run's held-out loss lies below the
    untrained encoder's by more than ``heldout_gain_margin`` percent (set per profile from the measured spread over
    seeds, profiles.yml). It applies where the margin was measured: a margin set, the graded run trained, and
    training and held-out papers from the replicas of the chapter's one synthetic corpus. Returns whether it ran.
    Shown in: notebooks/cosaemb.ipynb, "The order of distances on held-out papers"."""
    gain = heldout_gain(order)
    print("held-out loss below the untrained encoder's (%):", gain.drop(index="untrained").round(1).to_dict())
    margin = run.p.heldout_gain_margin
    why_not = ("heldout_gain_margin is 0 at this profile" if not margin > 0
               else "the graded (1, 2, 3) run is not trained with the parts chosen" if GRADED not in gain.index
               else "the margin was measured on the replicas of the synthetic corpus, not on this training data"
               if not book.replicas_of_one_corpus(inputs.triplets, inputs.full_text) else "")
    return run.expect_gain(GRADED, float(gain.get(GRADED, float("nan"))), margin,
                           "% held-out loss below the untrained encoder's", applies=not why_not, why_not=why_not)


def heldout_gain(order: DistanceOrder) -> pd.Series:
    """How far each model's held-out loss (eq. 5, margins 1, 2, 3) lies below the untrained encoder's, in percent
    (the untrained encoder's own row is 0). Shown in: notebooks/cosaemb.ipynb, "The order of distances on held-out
    papers"."""
    loss = order.table["held-out loss (1, 2, 3)"]
    return 100 * (1 - loss / loss.loc["untrained"])
