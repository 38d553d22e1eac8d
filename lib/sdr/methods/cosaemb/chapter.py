"""The steps of the CoSaEmb chapter, one call each.

Each step takes the chapter's :class:`sdr.book.ChapterRun` (its parameters are ``run.p``) and returns what the page
shows; the invariants of what a step produces are checked where it is produced and raise
:class:`sdr.book.ChapterCheckFailed` with a clear message, and the page keeps one line per claim. Where the data
came from (real, official, replica) is decided here, never on the page. Shown in: notebooks/cosaemb.ipynb.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import numpy as np
import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed, Fit
from sdr.corpus import CitationGraph, Paper
from sdr.methods.cosaemb.chunking import Chunker, parse_chunk_id
from sdr.methods.cosaemb.recipe import (ASPECT_NAMES, ASPECT_TOKENS, MARGIN_RUNS, PAPER_MARGINS, SPECIAL_TOKENS,
                                        FullTextReport, TripletReport, aspect_distribution, aspect_paragraphs,
                                        aspect_texts, attach_full_text, cosaemb_aspect_matched, cosaemb_objective,
                                        cosaemb_triplets, counts_tables, facet_query_text, margin_loss, plan_run,
                                        repeat_to, specter_training_set, triplet_distances, with_margins)
from sdr.samplers import Triplet

__all__ = ["CONTROL", "GRADED", "TRAINING_PARAMETERS", "SCICITE_RELEASED", "PROBE_LOSS_RATIO", "chapter_inputs",
           "TrainingSource", "training_source", "Headings", "heading_tables", "fresh_encoder", "HeldOut", "hold_out",
           "CoSaEmbTriplets", "build_triplets", "check_triplets", "Counts", "counts_vs_paper", "MarginRuns",
           "train_margin_runs", "retrain", "expect_lower_probe_loss", "DistanceOrder", "distance_order",
           "heldout_gain", "Released", "released_specter", "Paragraphs", "paragraph_table", "PaperReader",
           "CSFCubeScores", "csfcube_table", "csfcube_figure", "SeedRows", "seed_rows", "SciRepEvalScores",
           "scirepeval_table", "leaderboard", "store", "findings"]

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
#: Training must bring the paper's setting's probe loss below this share of its start (a sixth at least; measured
#: at smoke: by more than a quarter).
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
    ``resume``. At ``paper`` the runs' plan (the leaderboard models once per seed) is printed first.

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
    examples = {name: with_margins(subset, MARGIN_RUNS[name]) for name in p.margin_runs}
    if p.inter_only_control:
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
    seeds = leaderboard_seeds(p.seed, p.leaderboard_seeds)
    leaderboard_models = [name for name in p.csfcube_models if name in examples]
    run.data.plan([plan_run(f"{name} (seed {run_seed})", run_examples, built.texts, base.tokenizer, p.max_length,
                            p.epochs, p.batch_size * p.accumulation_steps, seed=p.seed)
                   for name, run_examples in examples.items()
                   for run_seed in (seeds if name in leaderboard_models else [p.seed])])
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
    trained = runs.table.filter(like="triplets").sum(axis=1)
    if not (trained == len(subset)).all():
        raise ChapterCheckFailed(f"every run must train the {len(subset)} triplets of a margin run: {trained.to_dict()}")
    if {"local", "global", "inter"} != {t.kind for t in subset}:
        raise ChapterCheckFailed(f"the training subset lacks a triplet kind: {sorted({t.kind for t in subset})}")
    return runs


def retrain(run, runs: MarginRuns, name: str, run_seed: int, probe: int = 0) -> Fit:
    """Run ``name`` of ``runs`` trained from a fresh encoder whose new tokens are drawn with ``run_seed``, with the
    training seed ``run_seed`` (its own folder when it is not ``seed``): the first seed of every run, and the
    further seeds of the leaderboard models (:func:`seed_rows`)."""
    p = run.p
    label = name if run_seed == p.seed else f"{name} (seed {run_seed})"
    return run.fit(label, runs.examples[name], runs.objective, replace(runs.config, seed=run_seed),
                   encoder=fresh_encoder(run, run_seed), folder=_folder(name, run_seed, p.seed), probe=probe)


def expect_lower_probe_loss(training: pd.DataFrame) -> bool:
    """The check with teeth on training: the paper's setting (``graded (1, 2, 3)``, else the first run) lowers its
    probe loss below :data:`PROBE_LOSS_RATIO` of its start, and the runs together lower theirs (a run of a few
    steps with a small margin may end a little above its start). The paper dry run trains a few steps at the
    paper's learning rate, so there it is reported, not checked. Returns whether it ran.
    Shown in: notebooks/cosaemb.ipynb, "Training: one run per margin setting, and the control"."""
    from sdr import datasets

    if datasets.dry_run():
        print("paper dry run: a few steps at the paper's learning rate; whether the loss falls is checked by real runs")
        return False
    graded = training.loc[GRADED] if GRADED in training.index else training.iloc[0]
    if not graded["loss after"] < PROBE_LOSS_RATIO * graded["loss before"]:
        raise ChapterCheckFailed(f"{graded.name}: training did not lower the probe loss below {PROBE_LOSS_RATIO} of "
                                 f"its start ({graded['loss before']:.4f} -> {graded['loss after']:.4f})")
    before, after = training["loss before"].sum(), training["loss after"].sum()
    if not after < before:
        raise ChapterCheckFailed(f"training did not lower the runs' probe losses together ({before:.4f} -> {after:.4f})")
    print(f"check passed: {graded.name} probe loss {graded['loss before']:.4f} -> {graded['loss after']:.4f} "
          f"(< {PROBE_LOSS_RATIO} of its start); all runs {before:.4f} -> {after:.4f}")
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
    return DistanceOrder(pd.DataFrame(rows).T, heldout)


def heldout_gain(order: DistanceOrder) -> pd.Series:
    """How far each model's held-out loss (eq. 5, margins 1, 2, 3) lies below the untrained encoder's, in percent
    (the untrained encoder's own row is 0). Shown in: notebooks/cosaemb.ipynb, "The order of distances on held-out
    papers"."""
    loss = order.table["held-out loss (1, 2, 3)"]
    return 100 * (1 - loss / loss.loc["untrained"])


# ------------------------------------------------------------------------------------------------- paragraphs
@dataclass
class Released:
    """The released SPECTER (Table 6's SPECTER row) when ``specter_model`` names it, and the line naming it."""

    encoders: dict = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)


def released_specter(run) -> Released:
    """The released SPECTER named by ``specter_model`` ([CLS] as SPECTER was trained, cut like the base model), or
    nothing when it is empty (smoke and real run offline)."""
    p = run.p
    if not p.specter_model:
        return Released()
    encoder = run.encoder(name=p.specter_model, pooling="cls", max_length=p.max_length)
    return Released({"SPECTER": encoder}, run.data.model_sources or [f"SPECTER: {p.specter_model} (released)"])


@dataclass
class Paragraphs:
    """Paragraph retrieval (Table 6): our Recall@k, the paper's rows above ours, the evaluator's report, the line
    naming the set (``source``, stored with the chapter's data) and the lines its caption adds."""

    ours: pd.DataFrame
    paper: pd.DataFrame
    table: pd.DataFrame
    report: dict
    source: str
    sources: list[str]

    def describe(self) -> str:
        r = self.report
        return (f"{r['chunks']} aspect texts of {r['papers']} papers, {r['queries']} queries "
                f"({r['excluded_single_chunk_papers']} single-text papers excluded)")

    def gains_line(self) -> str:
        gains = self.ours.drop(index="untrained")["recall@1"] - self.ours.loc["untrained", "recall@1"]
        return f"Recall@1 gain over the untrained encoder (points): {gains.round(2).to_dict()}"


def paragraph_table(run, inputs, source: TrainingSource, split: HeldOut, models: Mapping,
                    released: Released) -> Paragraphs:
    """Each aspect text of the held-out papers is a query, the aspect texts of all of them the candidates, ranked by
    Euclidean distance (:mod:`sdr.evaluate.paragraphs`); our encoders read ``<aspect token> text``, the released
    SPECTER the plain text. Checks: every paper row of ``data/paper_tables/cosaemb_paragraphs.csv`` and every model
    in the table, scores in [0, 100], Recall@3 ≥ Recall@1, and queries = texts − texts of single-text papers > 0.
    Shown in: notebooks/cosaemb.ipynb, "Paragraph retrieval (Table 6 set-up)"."""
    from sdr.evaluate import paragraphs

    p = run.p
    chunks = aspect_paragraphs(source.papers[pid] for pid in split.papers)
    ours_texts = [f"{ASPECT_TOKENS[c.section]} {c.text}" for c in chunks]
    scores = {name: paragraphs.evaluate(encoder.encode_texts(
                  [c.text for c in chunks] if name == "SPECTER" else ours_texts,
                  batch_size=p.eval_batch_size, progress=False), chunks)
              for name, encoder in models.items()}
    ours = pd.DataFrame({name: {"recall@1": 100 * r["recall@1"], "recall@3": 100 * r["recall@3"]}
                         for name, r in scores.items()}).T
    paper = book.read_paper_table("cosaemb_paragraphs")
    table = book.paper_vs_ours(ours, paper, ["recall@1", "recall@3"], f"this book ({run.profile})")
    report = next(iter(scores.values()))["report"]
    if len(table) != len(paper) + len(models):
        raise ChapterCheckFailed(f"the paragraph table has {len(table)} rows, not the paper's {len(paper)} and our "
                                 f"{len(models)}")
    if not (((ours >= 0) & (ours <= 100)).all().all() and (ours["recall@3"] >= ours["recall@1"]).all()):
        raise ChapterCheckFailed(f"Recall@k outside [0, 100] or Recall@3 below Recall@1:\n{ours}")
    if not report["queries"] == report["chunks"] - report["excluded_single_chunk_papers"] > 0:
        raise ChapterCheckFailed(f"paragraph queries do not add up: {report}")
    line = (f"paragraphs: the aspect texts of {len(split.papers)} held-out papers of the {inputs.full_text.kind} "
            f"full text ({report['chunks']} texts)")
    return Paragraphs(ours, paper, table, report, line, [*released.sources, line, "CoSaEmb Table 6 (paper rows)"])


# ------------------------------------------------------------------------------------------------- CSFCube, SciRepEval
@dataclass
class PaperReader:
    """How each model reads a paper on CSFCube and SciRepEval: the released SPECTER ``title [SEP] abstract``, our
    encoders ``[TTL] title [SEP] [ABS] abstract`` (a CSFCube query puts the facet's tokens where ``[ABS]`` stands),
    all cut at ``csfcube_max_length`` tokens."""

    chunker: Chunker
    sep: str
    length: int
    batch_size: int

    def encode(self, encoder, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` cut at ``length`` tokens (the encoder's own limit restored after)."""
        encoder.max_length, kept = self.length, encoder.max_length
        try:
            return encoder.encode_texts(texts, batch_size=self.batch_size, progress=False)
        finally:
            encoder.max_length = kept

    def abstracts(self, name: str, encoder, papers: Sequence[Paper]) -> np.ndarray:
        return self.encode(encoder, [encoder.paper_text(paper) if name == "SPECTER" else
                                     self.chunker.abstract_text(paper) for paper in papers])

    def facet_queries(self, name: str, encoder, papers: Mapping[str, Paper], keys) -> np.ndarray:
        return self.encode(encoder, [encoder.paper_text(papers[q]) if name == "SPECTER" else
                                     facet_query_text(papers[q], facet, self.sep) for q, facet in keys])


@dataclass
class CSFCubeScores:
    """CSFCube (Table 4): the evaluator's results per system, our columns, the paper's rows above ours, and the
    lines its caption adds to the chapter's data."""

    results: dict
    ours: pd.DataFrame
    table: pd.DataFrame
    papers: dict
    query_keys: list
    reader: PaperReader
    sources: list[str]

    def vectors(self, name: str, encoder) -> dict:
        """CSFCube vectors of model ``name`` read by ``encoder``: every candidate and every (query, facet)."""
        ids = sorted(self.papers)
        vectors = dict(zip(ids, self.reader.abstracts(name, encoder, [self.papers[p] for p in ids])))
        queries = self.reader.facet_queries(name, encoder, self.papers, self.query_keys)
        vectors.update({f"{q}_{facet}": v for (q, facet), v in zip(self.query_keys, queries)})
        return vectors


def _csfcube_system(name: str, margin_runs: Sequence[str]) -> str:
    return f"CoSaEmb recipe: {name}" if name in margin_runs else name


def csfcube_table(run, inputs, models: Mapping, reader: PaperReader, released: Released) -> CSFCubeScores:
    """Score the models ``csfcube_models`` names on CSFCube's test folds (the official ``ranking_eval.py``
    semantics, L2 ranking), with the official SPECTER rankings first where the real collection is read. Checks:
    the paper's rows and ours all in the table, scores in [0, 100], no missing embedding, and on the released
    bytes (the registry's digests) the official rankings' published MAP 0.3423 and NDCG%20 0.5328 over 50 queries.
    Shown in: notebooks/cosaemb.ipynb, "CSFCube (Table 4)"."""
    from sdr.evaluate import csfcube

    p = run.p
    folder = inputs.csfcube.path
    papers = csfcube.read_csfcube_papers(folder)
    keys = [(q, facet) for facet in csfcube.FACETS for q in csfcube.read_annotations(folder, facet)]
    scores = CSFCubeScores({}, pd.DataFrame(), pd.DataFrame(), papers, keys, reader,
                           [*released.sources, "CoSaEmb Table 4 (paper rows)"])
    if inputs.csfcube.real:  # the SPECTER rankings ship with the real collection
        scores.results["SPECTER (official rankings)"] = csfcube.evaluate(
            folder, rankings_dir=folder / "eval_scripts" / "sample_ranked_pools", name="specter")
    for name in p.csfcube_models:
        if name not in models:
            print(f"{name}: not trained or loaded at this profile, not scored")
            continue
        scores.results[_csfcube_system(name, p.margin_runs)] = csfcube.evaluate(
            folder, embeddings=scores.vectors(name, models[name]), return_per_query=True)
    test = csfcube.results_table(scores.results, "test")
    columns = {f"{facet}_{metric}": (facet, metric) for facet in (*csfcube.FACETS, csfcube.AGGREGATE)
               for metric in ("rp", "p@20", "r@20", "ndcg%20")}
    scores.ours = pd.DataFrame({system: {column: 100 * test.loc[(system, facet), metric]
                                         for column, (facet, metric) in columns.items()}
                                for system in scores.results}).T
    paper = book.read_paper_table("cosaemb_csfcube")
    scores.table = book.paper_vs_ours(scores.ours, paper, list(columns), f"this book ({run.profile})")
    if len(scores.table) != len(paper) + len(scores.results):
        raise ChapterCheckFailed(f"the CSFCube table has {len(scores.table)} rows, not the paper's {len(paper)} and "
                                 f"our {len(scores.results)}")
    if not ((scores.ours >= 0) & (scores.ours <= 100)).all().all():
        raise ChapterCheckFailed(f"CSFCube scores outside [0, 100]:\n{scores.ours}")
    missing = {name: r["report"]["missing_embeddings"]["count"] for name, r in scores.results.items()
               if name != "SPECTER (official rankings)" and r["report"]["missing_embeddings"]["count"]}
    if missing:
        raise ChapterCheckFailed(f"CSFCube papers without an embedding: {missing}")
    if inputs.csfcube.official:  # the released bytes: the harness is the official evaluator
        official = scores.results["SPECTER (official rankings)"]
        found = (round(official["test"]["all"]["map"], 4), round(official["test"]["all"]["ndcg%20"], 4),
                 official["report"]["queries"])
        if found != (0.3423, 0.5328, 50):
            raise ChapterCheckFailed(f"the official SPECTER rankings score MAP, NDCG%20, queries {found}, not the "
                                     "published 0.3423, 0.5328 over 50 queries")
    return scores


def csfcube_figure(run, table: pd.DataFrame, source: str):
    """RP and NDCG%20 per facet of every system of a CSFCube paper-vs-ours table, ours and the paper's Table 4.
    Shown in: notebooks/cosaemb.ipynb, "CSFCube (Table 4)"."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    long = table.melt(id_vars=["reported by", "model"], var_name="column", value_name="score").dropna()
    long[["facet", "metric"]] = long["column"].str.split("_", n=1, expand=True)
    long["system"] = long["model"] + " · " + long["reported by"].str.replace("CoSaEmb, Table 4", "paper")
    grid = sns.catplot(data=long[long["metric"].isin(["rp", "ndcg%20"])], kind="bar", x="score", y="system",
                       hue="facet", col="metric", height=max(3.5, 0.45 * len(table)), aspect=1.3, sharex=False)
    grid.set_titles("{col_name}")  # short panel titles: "metric = ndcg%20" overlapped its neighbour
    grid.set_axis_labels("score (× 100, test)", "")
    grid.figure.suptitle(f"CSFCube — {book.caption(run.profile, [source])}", y=1.03, fontsize=9)
    plt.show()
    return long


# ------------------------------------------------------------------------------------------------- seeds
def _leaderboard_method(name: str, specter_model: str) -> str:
    if name == "SPECTER":
        return f"SPECTER ({specter_model}, released)"
    if name == CONTROL:
        return "CoSaEmb control: inter-document triplets only"
    return "CoSaEmb ({})".format(name.replace(" (", " ").rstrip(")"))


@dataclass
class SeedRows:
    """The leaderboard models' CSFCube rows (one per model and seed) and the page's mean ± σ view of them."""

    rows: list[dict]
    table: pd.DataFrame
    reference: str

    def describe(self, runs: MarginRuns, length: int) -> str:
        return (f"leaderboard models: {', '.join(runs.leaderboard_models) or 'none at this profile'}; seeds "
                f"{runs.seeds}; CSFCube test, MAP over all facets (× 100), inputs cut at {length} tokens; "
                f"leaderboard reference: {self.reference}")


def seed_rows(run, inputs, runs: MarginRuns, csfcube: CSFCubeScores, pooling: str) -> SeedRows:
    """Train each leaderboard model (the trained models of ``csfcube_models``) again for every further seed on the
    same triplets (:func:`retrain`), score it on the same CSFCube at the same length, and make one leaderboard row
    per model and seed, compared with the Benchmarks chapter's untrained encoder (same base model, ``pooling``,
    length). The paper's CoSaEmb is the graded (1, 2, 3) run. Checks: one row per model and seed.
    Shown in: notebooks/cosaemb.ipynb, "Seeds: the rows of the Summary's leaderboard"."""
    from sdr.evaluate import csfcube as csfcube_evaluator
    from sdr.methods.specter.recipe import csfcube_leaderboard_row, seed_spread, training_budget

    p = run.p
    results = {(name, p.seed): csfcube.results[_csfcube_system(name, p.margin_runs)]
               for name in runs.leaderboard_models}
    for run_seed in runs.seeds[1:]:  # the first seed's encoders are the ones scored already
        for name in runs.leaderboard_models:
            encoder = retrain(run, runs, name, run_seed).encoder
            results[(name, run_seed)] = csfcube_evaluator.evaluate(
                inputs.csfcube.path, embeddings=csfcube.vectors(name, encoder), return_per_query=True)
            del encoder
    reference = book.untrained_reference(p.model_name, p.model_layers, pooling, "csfcube")
    budget = {name: training_budget(p.epochs, int(runs.table.loc[name, "optimizer steps"]),
                                    p.batch_size * p.accumulation_steps) for name in runs.leaderboard_models}
    rows = [csfcube_leaderboard_row(
        _leaderboard_method(name, p.specter_model), result, inputs.csfcube.path, data=inputs.csfcube.kind,
        base_model=book.base_model_label(p.model_name, p.model_layers), training=budget[name],
        input_tokens=p.csfcube_max_length, seed=run_seed, reference=reference,
        paper_model="CoSaEmb" if name == GRADED else None)
        for (name, run_seed), result in results.items()]
    untrained = (book.csfcube_per_query(csfcube.results["untrained"], inputs.csfcube.path)[0]
                 if "untrained" in csfcube.results else None)
    table = (seed_spread(rows, untrained, seed=p.seed) if rows
             else pd.DataFrame(columns=["seeds", "MAP per seed", "MAP mean", "MAP σ"]))
    if len(rows) != len(runs.leaderboard_models) * len(runs.seeds) or \
            not (table["seeds"].str.count(",") + 1 == len(runs.seeds)).all():
        raise ChapterCheckFailed(f"a leaderboard model lacks a seed of {runs.seeds}:\n{table}")
    return SeedRows(rows, table, reference)


@dataclass
class SciRepEvalScores:
    """SciRepEval's four averages of our plain embeddings, the paper's Table 5 rows above them, the tasks counted,
    and the lines its caption adds to the chapter's data."""

    results: dict
    ours: pd.DataFrame
    table: pd.DataFrame
    papers: int
    sources: list[str]

    @property
    def counted(self) -> dict:
        return next(iter(self.results.values()))["aggregates"]["tasks_counted"] if self.results else {}

    def describe(self) -> str:
        undefined = {name: {task: r["labels_without_test_or_prediction"] for task, r in result["tasks"].items()
                            if r.get("labels_without_test_or_prediction")} for name, result in self.results.items()}
        return ("labels without a test paper or a prediction, scored 0 in the macro F1 (as officially): "
                f"{ {name: counts for name, counts in undefined.items() if counts} or 'none'}\n"
                f"{self.papers} papers embedded per model; tasks averaged: {self.counted}")


def scirepeval_table(run, inputs, models: Mapping, reader: PaperReader, released: Released) -> SciRepEvalScores:
    """The plain embeddings of the models ``scirepeval_models`` names (no adapters, no control codes) scored by the
    book's SciRepEval evaluator without the few-shot runs, next to the paper's Table 5. Checks: every paper of the
    tasks has an embedding. Shown in: notebooks/cosaemb.ipynb, "SciRepEval (Table 5)"."""
    from sdr.evaluate import scirepeval

    folder = inputs.scirepeval.path
    papers = {}
    for task in scirepeval.read_registry(inputs.scirepeval.file("scirepeval_tasks.jsonl")):
        for document in scirepeval.task_documents(folder, task):
            papers.setdefault(document["doc_id"], Paper(document["doc_id"], document.get("title") or "",
                                                        document.get("abstract") or ""))
    ids = sorted(papers)
    results, rows = {}, {}
    for name in run.p.scirepeval_models:
        if name not in models:
            print(f"{name}: not trained or loaded at this profile, not scored")
            continue
        vectors = reader.abstracts(name, models[name], [papers[p] for p in ids])
        result = scirepeval.evaluate(folder, dict(zip(ids, vectors)), few_shot=False, progress=False)
        if result["missing_embeddings"]["count"]:
            raise ChapterCheckFailed(f"{name}: SciRepEval papers without an embedding: {result['missing_embeddings']}")
        results[name] = result
        summary = result["aggregates"]
        rows[name] = {"out_of_task_avg": summary["out_of_train"], "in_task_avg": summary["in_train"],
                      "scidocs_avg": summary["scidocs"], "all_avg": summary["all"]}
    ours = pd.DataFrame(rows).T
    table = book.paper_vs_ours(ours, book.read_paper_table("cosaemb_scirepeval"), list(ours.columns),
                               f"this book ({run.profile}, plain embeddings)")
    return SciRepEvalScores(results, ours, table, len(ids), [*released.sources, "CoSaEmb Table 5 (paper rows)"])


# ------------------------------------------------------------------------------------------------- the page's record
def leaderboard(run, inputs, seeds: SeedRows, csfcube: CSFCubeScores, runs: MarginRuns) -> list[dict]:
    """The Summary's rows of this chapter: the CSFCube rows of the seeds (one per leaderboard model and seed) and the
    released SPECTER's row when it was scored (the official SPECTER rankings and the untrained encoder are the
    Benchmarks chapter's rows); data "real" when the real CSFCube was scored, "replica" for the replica."""
    from sdr.methods.specter.recipe import csfcube_leaderboard_row

    p = run.p
    rows = list(seeds.rows)
    if "SPECTER" in csfcube.results:
        rows.append(csfcube_leaderboard_row(
            _leaderboard_method("SPECTER", p.specter_model), csfcube.results["SPECTER"], inputs.csfcube.path,
            data=inputs.csfcube.kind, base_model="SciBERT", training="external: SPECTER release",
            input_tokens=p.csfcube_max_length, paper_model="SPECTER"))
    expected = len(runs.leaderboard_models) * len(runs.seeds) + ("SPECTER" in csfcube.results)
    if len(rows) != expected:
        raise ChapterCheckFailed(f"{len(rows)} leaderboard rows, expected {expected}")
    return rows


def store(run, inputs, headings: Headings, counts: Counts, runs: MarginRuns, order: DistanceOrder,
          paragraphs: Paragraphs, csfcube: CSFCubeScores, seeds: SeedRows, scirepeval: SciRepEvalScores,
          rows: list[dict], released: Released):
    """The CoSaEmb chapter's record in the results store: its tables, its leaderboard rows and its settings."""
    p = run.p
    tables = {"headings": headings.table.reset_index(), "counts_table2": counts.versus2.reset_index(),
              "counts_table3": counts.versus3.reset_index(),
              "training": runs.table.astype(str).reset_index(names="run"),
              "distance_order": order.table.reset_index(names="model"), "paragraphs": paragraphs.table,
              "csfcube": csfcube.table, "csfcube_seeds": seeds.table.round(3).reset_index(),
              "scirepeval": scirepeval.table}
    extra = {"model": book.base_model_label(p.model_name, p.model_layers), "max_length": p.max_length,
             "both_directions": p.both_directions, "margin_runs": {r: MARGIN_RUNS[r] for r in p.margin_runs},
             "inter_only_control": p.inter_only_control, "leaderboard_seeds": runs.seeds,
             "csfcube_max_length": p.csfcube_max_length, "elapsed_s": round(time.time() - inputs.started),
             "leaderboard": rows}
    path = run.save(tables, extra, sources=[*run.data.sources, *released.sources, paragraphs.source])
    print(f"done in {time.time() - inputs.started:.0f} s")
    return path


def findings(run, inputs, headings: Headings, built: CoSaEmbTriplets, counts: Counts, runs: MarginRuns,
             order: DistanceOrder, paragraphs: Paragraphs, csfcube: CSFCubeScores, seeds: SeedRows,
             scirepeval: SciRepEvalScores) -> str:
    """What this run measured, one Markdown bullet per finding, each computed from the tables above (the paper's
    numbers from the paper tables). Shown in: notebooks/cosaemb.ipynb, "What to take from this chapter"."""
    p = run.p

    def points(value):
        return f"{value:.2f}"

    paper_recall = paragraphs.paper.set_index("model")["recall@1"]
    paper_graded = paper_recall["CoSaEmb (with margin gradation, 1/2/3)"]
    recall = paragraphs.ours["recall@1"]
    graded = GRADED if GRADED in recall.index else p.margin_runs[0]
    full_text = headings.full_text
    largest = counts.table2["Frequency"].idxmax()
    lines = [
        f"**Headings.** In the training full text ({inputs.full_text.kind}), {int(full_text['of which by default'].sum())} "
        f"of {int(full_text['distinct headings'].sum())} distinct headings reached Methods only by default, and "
        f"Methods holds {int(full_text.loc['Method', 'occurrences'])} of {len(headings.full_text_headings)} sections.",
        f"**Aspect texts.** {built.report.papers_with_triplets} papers gave intra-document triplets; the most frequent "
        f"aspect, {largest}, occurs in {int(counts.table2.loc[largest, 'Frequency'])} of them (never more than once "
        "per paper).",
        "**Paragraph retrieval (Recall@1).** " + ", ".join(f"{name} {points(value)}" for name, value in
                                                         recall.sort_values(ascending=False).items()) + ".",
    ]
    if "flat (1, 1, 1)" in recall.index:
        flat = recall["flat (1, 1, 1)"]
        lines.append(f"**Margin gradation.** The graded (1, 2, 3) run {'beat' if recall[graded] > flat else 'did not beat'} "
                     f"the flat (1, 1, 1) run here ({points(recall[graded] - flat)} points; the paper's Table 6 has the "
                     f"graded run ahead by {points(paper_graded - paper_recall['CoSaEmb (w/o margin gradation, 1/1/1)'])}).")
    if CONTROL in recall.index:
        ahead = recall[graded] > recall[CONTROL]
        verdict = "in line with the paper's argument" if ahead else "so this run does not support the paper's argument"
        lines.append(f"**Full text or more data.** The graded run {'beat' if ahead else 'did not beat'} the control "
                     f"trained on as many of SPECTER's triplets from the same start "
                     f"({points(recall[graded] - recall[CONTROL])} points), {verdict} that the full-text triplets, "
                     "not more training, make the gain.")
    if "SPECTER" in recall.index:
        lines.append(f"**Released SPECTER.** The graded run is {points(recall[graded] - recall['SPECTER'])} points "
                     f"from the released SPECTER (the paper: {points(paper_graded - paper_recall['SPECTER'])} ahead).")
    distances = order.table
    intra = [kind for kind in ("local", "global") if kind in distances.columns]
    if intra:
        lines.append("**Order of distances (held out).** Share of intra-document triplets ordered: " + ", ".join(
            f"{name} {distances.loc[name, intra].mean():.1f} %" for name in distances.index) + ".")
    gain = heldout_gain(order)
    lines.append("**Held-out objective.** Loss of eq. 5 (margins 1, 2, 3) on the held-out triplets, below the "
                 "untrained encoder's: " + ", ".join(f"{name} {gain[name]:.1f} %" for name in gain.index
                                                     if name != "untrained") + ".")
    ours_csfcube = csfcube.ours
    if "SPECTER (official rankings)" in ours_csfcube.index and f"CoSaEmb recipe: {graded}" in ours_csfcube.index:
        lines.append(f"**CSFCube.** Aggregated R-Precision: graded run "
                     f"{points(ours_csfcube.loc[f'CoSaEmb recipe: {graded}', 'all_rp'])}, the official SPECTER rankings "
                     f"{points(ours_csfcube.loc['SPECTER (official rankings)', 'all_rp'])} (at {p.csfcube_max_length} "
                     "tokens per text for our encoders).")
    if len(seeds.table):
        lines.append("**CSFCube over seeds (the leaderboard rows).** MAP, all facets: " + "; ".join(
            f"{name} {line['MAP mean']:.2f}" + (f" ± {line['MAP σ']:.2f}" if line["MAP σ"] == line["MAP σ"] else "")
            + f" over seed(s) {line['seeds']}" for name, line in seeds.table.iterrows())
            + f" (at {p.csfcube_max_length} tokens; the Summary compares each with the Benchmarks chapter's untrained "
            "encoder).")
    if {"untrained", graded} <= set(scirepeval.ours.index):
        lines.append(f"**SciRepEval (plain embeddings).** Average over the tasks present: graded run "
                     f"{points(scirepeval.ours.loc[graded, 'all_avg'])}, its untrained start "
                     f"{points(scirepeval.ours.loc['untrained', 'all_avg'])}.")
    if run.profile != "paper":
        models = len(runs.leaderboard_models)
        lines.append(f"At `{run.profile}` these are tiny runs ({int(runs.table['optimizer steps'].max())} optimizer "
                     f"steps at most, {len(runs.seeds)} seed{'s' if len(runs.seeds) > 1 else ''} for the leaderboard "
                     f"model{'s' if models > 1 else ''}, one for the rest) of a small encoder on the data in the table "
                     "at the top; they test the pipeline, not the paper's differences of a point or less.")
    return "\n".join(f"* {line}" for line in lines)
