"""The steps of the SciAspect chapter (the thesis' Experiments 2–5) up to training, one call each: its inputs, the
training data, the samplers and the trained models. The scoring steps and the page's record are :mod:`.scoring`'s,
the registries they all read :mod:`.registry`'s.

Each step takes the chapter's :class:`sdr.book.ChapterRun` (its parameters are ``run.p``) and returns what the page
shows; the invariants are checked where the values are made and raise :class:`sdr.book.ChapterCheckFailed`, and the
page keeps one line per claim. Shown in: notebooks/sciaspect.ipynb.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed
from sdr.methods.sciaspect.data import (ThesisData, id_aliases, read_mdcr_papers, read_thesis_citations,
                                        remove_evaluation_papers, scirepeval_papers, write_s2_citations_replica)
from sdr.methods.sciaspect.paper import row_part, selected_parts
from sdr.methods.sciaspect.recipe import Run, embedding_variants, paper_train_config, train_runs
from sdr.methods.sciaspect.registry import (CSFCUBE_MODELS, NAMED_MODELS, RULE_LEVEL, SAMPLERS,
                                            TRAINED_ROWS)
from sdr.methods.sciaspect.sampling import aspect_neighbours, violations
from sdr.methods.specter.recipe import leaderboard_seeds

__all__ = ["chapter_inputs", "TrainingData", "synthetic_data", "training_data", "Samples", "sample_every_table",
           "check_rules", "all_trained_rows", "trained_rows", "run_folder", "EmbeddingCache", "Models", "train_models",
           "expect_lower_probe_loss"]


# ------------------------------------------------------------------------------------------------- data
def chapter_inputs(run) -> SimpleNamespace:
    """The thesis' citation pages (``s2_citations_thesis``'s layout, read from the bulk route ``s2ag_bulk_thesis``
    that CHAPTER_DATA names: the Graph API crawl takes days), SciDocs, MDCR, SciRepEval and CSFCube under the data
    policy: the thesis' data where the profile reads it (at ``paper`` all of it, fetched or one stop before
    training), else a replica in the official layout, written from one synthetic corpus that is built only when a
    replica is needed (its training part served as the Graph API, its evaluation part behind the benchmarks).

    Shown in: notebooks/sciaspect.ipynb, first code cell."""
    from sdr.synthetic import make_corpus
    from sdr.synthetic.csfcube import write_csfcube
    from sdr.synthetic.mdcr import write_mdcr
    from sdr.synthetic.scidocs import write_scidocs
    from sdr.synthetic.scirepeval import write_scirepeval
    from sdr.synthetic.split import split_corpus

    p, data = run.p, run.data
    parts = data.lazy("the synthetic corpus behind the replicas", lambda: split_corpus(
        make_corpus(n_papers=p.n_papers, seed=p.seed, p_no_intent=p.p_no_intent, with_sections=False),
        p.eval_fraction, seed=p.seed))
    replica_of = f"synthetic corpus ({p.n_papers} papers, seed {p.seed}, {p.p_no_intent:.0%} of edges without intent)"
    citations = data.input("s2_citations_thesis", role="training", replica_source=(
        f"Semantic Scholar pages replica: the training part of the {replica_of} fetched from a synthetic Graph API, "
        f"{p.anchor_fraction:.0%} of its papers as anchors"),
        replica=lambda folder: write_s2_citations_replica(parts()[0], folder, p.anchor_fraction, p.seed))
    if citations.real and citations.name == "s2ag_bulk_thesis":  # CHAPTER_DATA's route at paper (sdr.datasets.BULK_ROUTE)
        run.branch("citation graph read from the bulk route (s2ag_bulk_thesis)")
    scidocs = data.input("scidocs", replica_source=f"SciDocs replica of the evaluation part of the {replica_of}",
                         replica=lambda folder: write_scidocs(parts()[1], folder, seed=p.seed, n_queries=p.n_eval_queries,
                                                              include_recomm=p.recommendations, progress=False))
    mdcr = data.input("mdcr", files=("mdcr_test.json", "mdcr_test_data.jsonl"),
                      replica_source=f"MDCR replica of the evaluation part of the {replica_of}",
                      replica=lambda folder: write_mdcr(parts()[1], folder, seed=p.seed,
                                                        n_queries_per_field=p.mdcr_queries_per_field, progress=False))
    scirepeval = data.input("scirepeval_full", files=("scirepeval_tasks.jsonl",),
                            replica_source=f"SciRepEval replica of the evaluation part of the {replica_of}",
                            replica=lambda folder: write_scirepeval(parts()[1], folder, seed=p.seed,
                                                                    n_queries=p.scirepeval_queries, progress=False))
    csfcube = data.input("csfcube", replica_source=f"CSFCube replica of the evaluation part of the {replica_of} "
                                                   "(8 queries)",
                         replica=lambda folder: write_csfcube(parts()[1], folder, n_queries=8, pool_size=24, seed=p.seed))
    return SimpleNamespace(citations=citations, scidocs=scidocs, mdcr=mdcr, scirepeval=scirepeval, csfcube=csfcube)


@dataclass
class TrainingData:
    """The thesis' citation data as read, the same with every evaluation paper removed (what the chapter trains
    on), the table of what each evaluation set removed, and the evaluation sets' papers by benchmark."""

    read: ThesisData
    kept: ThesisData
    overlap: pd.DataFrame
    evaluation: dict[str, dict]

    @property
    def graph(self):
        return self.kept.graph

    @property
    def papers(self):
        return self.kept.papers

    @property
    def anchors(self) -> list[str]:
        return self.kept.anchors

    def describe(self) -> str:
        return (f"{self.read.anchors_listed} anchors listed, {self.read.anchors_without_links} of them without any "
                f"link; after removing the evaluation papers: {len(self.anchors)} anchors in a graph of "
                f"{len(self.graph.nodes)} papers and {len(self.graph)} citation edges")

    @property
    def edges(self) -> pd.DataFrame:
        """The citation edges per combination of intents (an edge without intent is miscellaneous)."""
        return pd.Series([", ".join(c.aspects) for c in self.graph]).value_counts().rename("edges").to_frame()


def synthetic_data(item) -> bool:
    """Whether an input holds a synthetic corpus' papers: a replica, or in the paper dry run a fixture (real-shaped,
    not the released bytes: :attr:`sdr.datasets.DataInput.official`); the released data linked into the dry run's
    mirror is not."""
    from sdr import datasets

    return not item.real or (datasets.dry_run() and not item.official)


def training_data(run, inputs) -> TrainingData:
    """Read the thesis' citation graph (:func:`read_thesis_citations`) and the papers of every evaluation set, and
    remove each evaluation paper found in the graph with its edges (:func:`remove_evaluation_papers`, which counts
    them per set; removing any is the paper path's leakage branch, recorded). A set keyed by the other S2 id space
    is compared through the ids the fetch gave each paper (:func:`id_aliases`): on the bulk route's graph (corpus
    ids) SciDocs' 40-hex ids through each paper's ``paperSha``, on the Graph API's (40-hex ids) CSFCube's and
    SciRepEval's corpus ids through ``corpusId``. A set is compared only with a graph of the same provenance
    (:func:`synthetic_data`): a synthetic corpus' corpus ids (900000 + i) name other papers than the released
    data's (900029 is a real CSFCube id). Shown in: notebooks/sciaspect.ipynb, Data: a citation graph with intents."""
    from sdr.evaluate import csfcube, scidocs

    read = read_thesis_citations(inputs.citations.path)
    evaluation = {"SciDocs": scidocs.read_papers(inputs.scidocs.path), "MDCR": read_mdcr_papers(inputs.mdcr.path),
                  "SciRepEval": scirepeval_papers(inputs.scirepeval.path),  # sdr evaluate all embeds them itself
                  "CSFCube": csfcube.read_csfcube_papers(inputs.csfcube.path)}
    inputs_of = {"SciDocs": inputs.scidocs, "MDCR": inputs.mdcr, "SciRepEval": inputs.scirepeval,
                 "CSFCube": inputs.csfcube}
    graph_synthetic = synthetic_data(inputs.citations)
    other_provenance = {name: ("the released data beside a synthetic training graph (the same ids name other papers)"
                               if graph_synthetic else "a synthetic set beside the released training graph")
                        for name, item in inputs_of.items() if synthetic_data(item) != graph_synthetic}
    kept, overlap = remove_evaluation_papers(read, evaluation, id_aliases(inputs.citations.path), other_provenance)
    if overlap.loc["all (removed)", "in the training graph"] > 0:
        run.branch("evaluation papers removed from the training graph")
    if not kept.anchors:
        raise ChapterCheckFailed(f"no anchor is left in {inputs.citations.path} after removing the evaluation papers:\n"
                                 f"{overlap}")
    return TrainingData(read, kept, overlap, evaluation)


# ------------------------------------------------------------------------------------------------- sampling
@dataclass
class Samples:
    """Every sampler's instances and report (:data:`SAMPLERS`), and the page's views of them."""

    example_sets: dict[tuple[str, str], list]
    reports: dict[tuple[str, str], object]

    @property
    def report(self) -> pd.DataFrame:
        """One row per sampler: anchors used and skipped, instances, hard and easy negatives, hard ones filled
        with easy ones, self-citations excluded, collisions within an aspect."""
        return pd.DataFrame([
            {"model": model, "variant": variant, "anchors used": r.queries_used, "anchors skipped": r.queries_skipped,
             "instances": r.examples, "hard negatives": r.hard_negatives, "easy negatives": r.easy_negatives,
             "hard short, filled with easy": r.hard_short, "self-citations excluded": r.self_citations_excluded,
             "collisions (same aspect)": r.collisions, "notes": " ".join(r.warnings)}
            for (model, variant), r in self.reports.items()]).set_index(["model", "variant"])

    def aspect_counts(self) -> pd.DataFrame:
        """Instances per aspect of every aspect sampler."""
        return pd.DataFrame({f"{m} / {v}": pd.Series([e.aspect for e in examples]).value_counts()
                             for (m, v), examples in self.example_sets.items() if m != "SPECTERCL"}).fillna(0).astype(int)

    def example(self, training: TrainingData,
                key: tuple[str, str] = ("SciAspect", "1 positive, n negatives (w/o misc aspect)")) -> str:
        """One instance of ``key``'s sampler with the most hard negatives: its positive, a hard and an easy negative,
        each with its title and the aspects of its link to the anchor."""
        instance = max(self.example_sets[key], key=lambda e: e.n_hard)
        papers = training.papers
        lines = [f"one instance: aspect {instance.aspect}, anchor {instance.query!r}: {papers[instance.query].title}"]
        roles = [("positive", instance.positives[0])] + [("hard negative", instance.negatives[0])] * (instance.n_hard > 0) \
            + [("easy negative", instance.negatives[-1])] * (len(instance.negatives) > instance.n_hard)
        for role, pid in roles:
            link = aspect_neighbours(training.graph, instance.query).get(pid, "none")
            lines.append(f"  {role:>13}: {pid} {papers[pid].title[:70]}  (link: {link})")
        return "\n".join(lines)


def sample_every_table(run, training: TrainingData) -> Samples:
    """Run every sampler of :data:`SAMPLERS` on the same anchors, every paper of the graph a candidate, and check the
    instances against the thesis' rules (:func:`check_rules`). Shown in: notebooks/sciaspect.ipynb, Sampling."""
    options = dict(papers=training.papers, candidates=list(training.papers), query_ids=training.anchors,
                   seed=run.p.seed, progress=False, verbose=False)
    example_sets, reports = {}, {}
    for key, sample in SAMPLERS.items():
        example_sets[key], reports[key] = sample(training.graph, **options)
    samples = Samples(example_sets, reports)
    check_rules(samples, training, run.p.max_checked_instances, run.p.seed)
    return samples


def check_rules(samples: Samples, training: TrainingData, max_checked: int, seed: int) -> None:
    """The thesis' rules hold on every sampler's instances (a seeded sample of ``max_checked`` each; 0: all):
    SPECTERCL's positives are direct links and its negatives never are; an aspect model's instances break no rule of
    :func:`violations` (positives linked in the aspect; hard negatives linked in another aspect, never a positive
    candidate nor another anchor; none in the miscellaneous aspect; easy negatives unlinked at the sampler's level).
    Raises :class:`ChapterCheckFailed` naming the sampler and the first broken instances."""
    rng = np.random.default_rng(seed)
    graph = training.graph
    for (model, variant), examples in samples.example_sets.items():
        if not examples:
            raise ChapterCheckFailed(f"{model} / {variant}: no instances")
        checked = examples
        if max_checked and len(examples) > max_checked:
            checked = [examples[i] for i in sorted(rng.choice(len(examples), max_checked, replace=False))]
        if model == "SPECTERCL":
            problems = [f"{e.query}: positives {sorted(set(e.positives) - graph.neighbours(e.query))} are no direct links"
                        for e in checked if not set(e.positives) <= graph.neighbours(e.query)]
            problems += [f"{e.query}: negatives {sorted(set(e.negatives) & graph.neighbours(e.query))} are direct links"
                         for e in checked if set(e.negatives) & graph.neighbours(e.query)]
        else:
            problems = violations(graph, checked, anchors=training.anchors, level=RULE_LEVEL[model])
        if problems:
            raise ChapterCheckFailed(f"{model} / {variant}: {problems[:3]}")


# ------------------------------------------------------------------------------------------------- training
def all_trained_rows(p) -> dict[tuple[str, str], Run]:
    """(table, row label as in the thesis' table) → the run that trains it, for every value the parameters ``p``
    list in the parameters of :data:`TRAINED_ROWS`, whatever part trains it (the cost plan counts them all); a value
    no sampler of :data:`SAMPLERS` makes is refused."""
    rows = {}
    for parameter, table_rows in TRAINED_ROWS.items():
        for key, row_run in table_rows.rows(getattr(p, parameter)).items():
            if row_run.examples not in SAMPLERS:
                raise ValueError(f"{parameter}: {key[1]!r} is not a row this chapter samples; "
                                 f"expected one of {[v for m, v in SAMPLERS if m == row_run.examples[0]]}")
            rows[key] = row_run
    return rows


def trained_rows(run) -> dict[tuple[str, str], Run]:
    """The rows of :func:`all_trained_rows` whose part (:func:`sdr.methods.sciaspect.paper.row_part`) this run runs
    (``parts``: at ``paper`` the headline parts by default, i.e. Table 6.2's four models)."""
    parts = selected_parts(run)
    return {key: row_run for key, row_run in all_trained_rows(run.p).items() if row_part(key) in parts}


def run_folder(run) -> Path:
    """The chapter's run folder in the results store (:func:`sdr.book.run_dir`), keyed by the parameters that change
    training and by the data sources (a replica and the thesis' data train different models)."""
    p = run.p
    keys = ("model_name", "model_layers", "pooling", "seed", "n_papers", "eval_fraction", "p_no_intent",
            "anchor_fraction", "max_length", "train_examples", "epochs", "batch_size", "accumulation_steps",
            "learning_rate", "warmup_steps")
    return book.run_dir(run.chapter, run.profile, {**{key: getattr(p, key) for key in keys},
                                                   "sources": run.data.sources})


class EmbeddingCache:
    """Each encoder's vectors by (title, abstract), so a paper several benchmarks share is embedded once."""

    def __init__(self):
        self._encoders: dict[int, tuple[object, dict]] = {}  # the encoder is kept, so its id is never reused

    def vectors(self, encoder, papers_by_id: Mapping) -> dict:
        """``{paper id: vector}`` of ``encoder`` for a benchmark's papers."""
        cache = self._encoders.setdefault(id(encoder), (encoder, {}))[1]
        missing = list({(p.title, p.abstract): p for p in papers_by_id.values()
                        if (p.title, p.abstract) not in cache}.items())
        if missing:
            cache.update(zip([k for k, _ in missing], encoder.encode_papers([p for _, p in missing], progress=False)))
        return {pid: cache[(p.title, p.abstract)] for pid, p in papers_by_id.items()}

    def variants(self, encoder, objective, papers_by_id: Mapping) -> dict[str, dict]:
        """The embeddings a trained aspect model offers on a benchmark's papers (:func:`embedding_variants`)."""
        by_id = self.vectors(encoder, papers_by_id)
        return embedding_variants(objective, list(by_id), np.stack(list(by_id.values())))


@dataclass
class Models:
    """What training made: the untrained encoder every run starts from, each row's trained encoder and objective,
    the losses on the held-out probes, every step's loss, the saved model folders, and what retraining needs."""

    base: object
    texts: dict[str, str]
    config: object
    folder: Path
    budget: str
    runs: dict[tuple[str, str], Run]
    trained: dict[tuple[str, str], tuple]
    losses: pd.DataFrame
    history: pd.DataFrame
    folders: dict[tuple[str, str], Path]
    seeds: list[int]
    leaderboard_models: list[str]
    embeddings: EmbeddingCache = field(default_factory=EmbeddingCache)

    def training_budget(self, key: tuple[str, str], p) -> str:
        """A leaderboard row's training: epochs, optimizer steps, instances a step and input length."""
        steps = int(self.losses.loc[key, "optimizer steps"])
        return (f"{p.epochs} epoch{'s' if p.epochs != 1 else ''}, {steps:,} steps × {p.batch_size * p.accumulation_steps} "
                f"instances at {p.max_length} tokens")


def train_models(run, training: TrainingData, samples: Samples) -> Models:
    """Train every row :func:`trained_rows` lists (the rows of the parts this run runs) from one encoder with one
    budget (:func:`train_runs`): each sees ``train_examples`` instances of its sampler (a seeded subset; 0: all)
    after 8 are held out as its probe, with the thesis' optimizer and cosine schedule at the profile's sizes
    (:func:`paper_train_config`), checkpointed in :func:`run_folder`. The budget becomes a line of every later
    caption. Records the paper path's branches it takes (:data:`DRY_RUN_BRANCHES`): [CLS] pooling, the
    miscellaneous head trained (:func:`misc_heads_trained`), every run past its warm-up.

    Shown in: notebooks/sciaspect.ipynb, Training: every model with the same budget."""
    p = run.p
    base = run.encoder(pooling=p.pooling, max_length=p.max_length)
    print("encoding path:", base.plan.describe())
    if base.pooling == "cls":
        run.branch("[CLS] pooling")
    texts = {pid: base.paper_text(paper) for pid, paper in training.papers.items()}
    config = paper_train_config(epochs=p.epochs, batch_size=p.batch_size, accumulation_steps=p.accumulation_steps,
                                learning_rate=p.learning_rate, warmup_steps=p.warmup_steps, seed=p.seed,
                                progress=False, checkpoint_every=p.checkpoint_every)
    folder = run_folder(run)
    budget = (f"each model: {p.train_examples or 'all'} instances x {p.epochs} epoch(s), batch {p.batch_size} x "
              f"{p.accumulation_steps}, lr {p.learning_rate:g}, cosine, {p.warmup_steps} warm-up steps")
    runs = trained_rows(run)
    leaderboard_models = [name for name in p.csfcube_models if name != "untrained"]
    not_trained = [name for name in leaderboard_models if NAMED_MODELS.get(name) not in runs
                   or name not in CSFCUBE_MODELS]
    if not_trained:
        raise ValueError(f"csfcube_models {not_trained}: not a model trained at this profile (CSFCube scores "
                         f"{['untrained', *CSFCUBE_MODELS]}; their rows come from sciaspect_variants and alphas)")
    seeds = leaderboard_seeds(p.seed, p.leaderboard_seeds)
    if len(seeds) > 1 and not run.runs_part("seeds"):
        seeds = seeds[:1]
    trained, losses, history, folders = train_runs(runs, samples.example_sets, base, texts, config, folder,
                                                   train_examples=p.train_examples, seed=p.seed, resume=p.resume)
    print(budget)
    print("trained rows: " + "; ".join(f"{table} {label}" for table, label in runs))
    if misc_heads_trained(runs, trained, samples, p.train_examples, p.seed):
        run.branch("misc head trained")
    if (losses["optimizer steps"] > p.warmup_steps).all():
        run.branch("trained past warm-up")
    else:
        print(f"runs that end inside their {p.warmup_steps} warm-up steps: "
              f"{list(losses.index[losses['optimizer steps'] <= p.warmup_steps])}")
    run.add_source(budget)
    return Models(base, texts, config, folder, budget, runs, trained, losses, history, folders, seeds,
                  leaderboard_models)


def misc_heads_trained(runs: Mapping[tuple[str, str], Run], trained: Mapping, samples: Samples, train_examples: int,
                       seed: int) -> list[tuple[str, str]]:
    """The rows whose objective has a miscellaneous head (Table 6.4's "w/ misc aspect" rows) that trained on
    miscellaneous instances and moved away from its identity start."""
    import torch

    from sdr.corpus import MISCELLANEOUS
    from sdr.methods.sciaspect.recipe import split_probe

    found = []
    for key, row_run in runs.items():
        heads = getattr(trained[key][1], "heads", {})
        if MISCELLANEOUS not in heads:
            continue
        examples, _ = split_probe(samples.example_sets[row_run.examples], train_examples, seed)
        head = heads[MISCELLANEOUS]
        identity = torch.eye(head.weight.shape[0], device=head.weight.device, dtype=head.weight.dtype)
        if any(e.aspect == MISCELLANEOUS for e in examples) and not torch.equal(head.weight.detach(), identity):
            found.append(key)
    return found


def expect_lower_probe_loss(run, models: Models, always: str = "SPECTERCL") -> bool:
    """The check with teeth of training: the held-out probe's loss of the ``always`` model (SPECTERCL, 1p 5n) went
    down by more than ``min_probe_loss_drop``, a margin set from its measured seed spread (profiles.yml says how),
    and, where the profile sets ``check_every_probe_loss``, every run's went down. Every run's drop is shown. Not
    applied in the paper dry run: its random stand-in trains a few steps at the thesis' learning rate, where no
    margin was measured. Returns whether it ran.

    Shown in: notebooks/sciaspect.ipynb, Training: every model with the same budget."""
    from IPython.display import display

    from sdr import datasets

    p = run.p
    losses = models.losses
    drops = (losses["loss before"] - losses["loss after"]).astype(float).rename("probe loss drop")
    display(drops.to_frame().round(4))
    checked = NAMED_MODELS[always]
    for key in losses.index:
        margin = p.min_probe_loss_drop if key == checked else (0.0 if p.check_every_probe_loss else None)
        name = ": ".join(map(str, key)) if isinstance(key, tuple) else str(key)  # ("Table 6.3", "1 positive, …")
        run.record_loss_check(name, losses.loc[key, "loss before"], losses.loc[key, "loss after"], margin)
    improved = drops > 0
    print(f"held-out loss lowered in {improved.sum()} of {len(improved)} runs")
    if datasets.dry_run():
        print("check not applied: the paper dry run's random stand-in trains a few steps; the margin was measured at "
              "smoke")
        return False
    if not getattr(p, "check_probe_loss", True):
        print(f"check off at this profile (check_probe_loss): {always}'s held-out loss was measured to rise for some "
              "training seeds at these settings (profiles.yml), so no margin separates learning from seed noise; the "
              "drops are shown")
        return False
    key = checked
    if not drops[key] > p.min_probe_loss_drop:
        raise ChapterCheckFailed(f"training did not lower the held-out loss of {always} {key} by more than "
                                 f"{p.min_probe_loss_drop:g}: {losses.loc[key, 'loss before']:.4f} -> "
                                 f"{losses.loc[key, 'loss after']:.4f}")
    print(f"check passed: {always}'s held-out loss {drops[key]:+.4f} lower, more than {p.min_probe_loss_drop:g}")
    if p.check_every_probe_loss and not improved.all():
        raise ChapterCheckFailed(f"training did not lower the held-out loss for {list(losses.index[~improved])}")
    if not p.check_every_probe_loss:
        print("the other runs' drops are shown, not checked at this profile (check_every_probe_loss; profiles.yml: "
              "at smoke's two steps they went either way over 8 seeds)")
    return True
