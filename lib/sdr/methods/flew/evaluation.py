"""The FLeW chapter's evaluation steps, one call each: every encoder on the benchmarks and the weighted sums tuned on
validation data (section 4: MDCR, SciRepEval), CSFCube and the leaderboard rows (section 5), the paper's Tables 1-3
beside ours, the findings and the chapter's record in the results store. The training steps are in :mod:`.chapter`.

Shown in: notebooks/flew.ipynb.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed
from sdr.facets import FACETS
from sdr.methods.flew.chapter import (FACET_ENCODERS, RELEASED_BASELINES, RELEASED_FLEW, SUM_NAME,
                                      CSFCubeAgreement, FacetGraph, FacetTraining, QueryList, Sampling,
                                      SplitterScores, _encoder, show)
from sdr.methods.flew.recipe import (FORMAT_COLUMNS, TABLE1_COLUMNS, combine, csfcube_systems, flew_columns,
                                     mdcr_fields, mdcr_papers, mdcr_scores, mdcr_tune, scirepeval_documents,
                                     scirepeval_task_weights, scirepeval_weighted, seed_spread, simplex_grid)

__all__ = ["BENCHMARKS", "Systems", "embed_systems", "MDCRScores", "mdcr_systems", "mdcr_table2", "SciRepEvalScores",
           "scirepeval_systems", "CSFCubeRows", "csfcube_rows", "show_csfcube", "TABLE_COLUMNS", "PARTIAL", "table1",
           "table3", "table3_claim", "MIN_RESAMPLED", "scirepeval_verdicts", "mdcr_verdicts",
           "findings", "store", "show_paired", "show_table2", "differences_markdown"]


# ------------------------------------------------------------------------------------------------- 4. benchmarks
BENCHMARKS = ("MDCR", "SciRepEval", "CSFCube")


@dataclass
class Systems:
    """Every system's embeddings of every benchmark paper (``single``: ``{system: {benchmark: {id: vector}}}``) and
    the weighted sums (``sums``: ``{sum: {facet: system}}``)."""

    run: object
    papers: dict
    single: dict = field(default_factory=dict)
    sums: dict = field(default_factory=dict)
    cached: list = field(default_factory=list)  # "<released model> on <benchmark>" read from the embeddings cache

    def embed(self, encoder, benchmarks: Sequence[str] = ("MDCR", "SciRepEval"),
              released: tuple[str, int] | None = None) -> dict:
        """``{benchmark: {id: vector}}``; CSFCube (ours and the untrained encoder only) is read at
        ``csfcube_max_length`` tokens, the rest at ``max_length``. A ``released`` model (its name or folder and the
        layers kept) is read through the embeddings cache (:func:`sdr.evaluate.cache.read_or_embed`: keyed by
        its revision or weights, the texts and the reading settings), so a rerun of the released part reads its
        vectors back instead of embedding every benchmark again."""
        from sdr.evaluate.cache import EmbeddingCache, read_or_embed, released_identity

        p = self.run.p
        identity = released_identity(*released) if released is not None else None  # its weights hashed once
        cache = EmbeddingCache() if identity is not None else None
        vectors = {}
        for name in benchmarks:
            if name not in self.papers:
                continue
            papers = self.papers[name]
            encoder.max_length = p.csfcube_max_length if name == "CSFCube" else p.max_length
            ids = sorted(papers)

            def embedded(ids=ids, papers=papers):
                return dict(zip(ids, encoder.encode_papers([papers[i] for i in ids], batch_size=64, progress=False)))

            if cache is None:
                vectors[name] = embedded()
                continue
            texts = {i: encoder.paper_text(papers[i]) for i in ids}
            vectors[name], cached = read_or_embed(cache, identity, f"flew:{name}", texts,
                                                  max_length=encoder.max_length, pooling=encoder.pooling,
                                                  normalize=encoder.normalize, embed=embedded)
            if cached:
                self.cached.append(f"{released[0]} on {name}")
        encoder.max_length = p.max_length
        return vectors

    def stacked(self, name: str, benchmark: str, ids: Sequence[str]) -> np.ndarray:
        return np.stack([self.single[name][benchmark][i] for i in ids])

    def facet_vectors(self, system: str, benchmark: str) -> dict:
        """``{facet: {id: vector}}`` of the members of the weighted sum ``system``."""
        return {f: self.single[self.sums[system][f]][benchmark] for f in FACETS}

    def describe(self) -> str:
        return f"systems: {list(self.single)} | weighted sums: {list(self.sums)}"


def embed_systems(run, inputs, training: FacetTraining) -> Systems:
    """Every paper of every benchmark read once by every encoder — MDCR's queries and candidates, every document
    SciRepEval's tasks embed (search queries as title-only papers) and, with ``csfcube_eval``, CSFCube's papers —
    so a weighted sum is free to compute for any weights. Systems: the untrained encoder, every trained run, and
    at ``paper`` the released encoders ([CLS] pooling, as they were trained); sums: the training's (FLeW's, each
    ablation's that has one, the published recipe's) and each released FLeW checkpoint's.

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks."""
    from sdr.evaluate import csfcube

    p = run.p
    papers = {"MDCR": mdcr_papers(inputs.mdcr.path)}
    papers["SciRepEval"], report = scirepeval_documents(inputs.scirepeval.path, inputs.tasks)
    if p.csfcube_eval:
        papers["CSFCube"] = csfcube.read_csfcube_papers(inputs.csfcube.path)
    print({name: len(ids) for name, ids in papers.items()}, "papers to embed;",
          f"SciRepEval tasks without data here: {len(report['tasks without metadata'])}")
    systems = Systems(run, papers)
    systems.single["untrained encoder"] = systems.embed(_encoder(run), BENCHMARKS)
    for name, fit in training.fits.items():
        systems.single[name] = systems.embed(fit.encoder, BENCHMARKS if name in FACET_ENCODERS.values()
                                             else ("MDCR", "SciRepEval"))
    systems.sums.update(training.sums)  # FLeW's, each ablation's that has one, the published recipe's
    for name, where in inputs.released.items():
        if name in RELEASED_FLEW:
            tag = RELEASED_FLEW[name]
            for facet, path in where.items():
                layers = p.model_layers if path == "minilm" else 0
                systems.single[f"{FACET_ENCODERS[facet]} ({tag})"] = systems.embed(
                    _encoder(run, name=path, layers=layers, pooling="cls"), released=(path, layers))
            systems.sums[f"{SUM_NAME} ({tag})"] = {f: f"{FACET_ENCODERS[f]} ({tag})" for f in FACETS}
        else:
            layers = p.model_layers if where == "minilm" else 0
            systems.single[RELEASED_BASELINES[name]] = systems.embed(
                _encoder(run, name=name, pooling="cls", layers=layers), released=(where, layers))
    if systems.cached:
        print(f"read from the embeddings cache ({len(systems.cached)} released encodings): "
              + ", ".join(systems.cached))
    return systems


@dataclass
class MDCRScores:
    """MDCR: each sum's weights tuned on val with every grid point's score, every system's test result, and the
    page's table (MAP, R@5 × 100 and the fields scored)."""

    weights: dict
    grids: dict
    results: dict
    table: pd.DataFrame

    @property
    def weight_table(self) -> pd.DataFrame:
        return pd.DataFrame(self.weights, index=list(FACETS)).T


def mdcr_systems(run, inputs, systems: Systems) -> MDCRScores:
    """Each weighted sum's weights tuned on MDCR's ``val`` split (:func:`mdcr_tune`; the test file is not opened by
    the search), then every sum and every system scored on ``test``.

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks."""
    path, step = inputs.mdcr.path, run.p.weight_step
    ids = sorted(systems.papers["MDCR"])
    weights, grids, results = {}, {}, {}
    for system, members in systems.sums.items():
        vectors = {f: systems.stacked(members[f], "MDCR", ids) for f in FACETS}
        weights[system], grids[system] = mdcr_tune(path, vectors, ids, step=step)
        results[system] = mdcr_scores(path, combine(vectors, weights[system]), ids, "test")
    for name in systems.single:
        results[name] = mdcr_scores(path, systems.stacked(name, "MDCR", ids), ids, "test")
    table = pd.DataFrame({name: {"MAP": r["avg"]["map"], "R@5": r["avg"]["recall_5"], "fields": len(r["fields"])}
                          for name, r in results.items()}).T
    return MDCRScores(weights, grids, results, table)


def mdcr_table2(run, inputs, mdcr: MDCRScores) -> dict[str, pd.DataFrame]:
    """FLeW's Table 2 beside ours: ``{"MAP": …, "R@5": …}``, the paper's columns (its six models, prefixed
    ``paper:``) and, by the chapter's pairing rule (:func:`sdr.methods.flew.pair_with_paper`), each system of this
    run that pairs with one of them, one row per MAG field in the paper's order and its average (a field this run
    lacks stays empty); ``"apart"``: every other system's MAP and R@5 averages with the reason it stands apart.

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks (Table 2)."""
    from sdr.methods.flew.fidelity import pairing, row_setups

    paper = book.read_paper_table("flew_table2")
    field_order = [*[f for f in paper["field"].unique() if f != "Avg"], "Avg"]
    decided = pairing(list(mdcr.results), row_setups(run, list(mdcr.results), inputs.mdcr), paper["model"])
    table2 = {}
    for metric, label in (("map", "MAP"), ("recall_5", "R@5")):
        paper_fields = paper.pivot(index="field", columns="model", values=metric).add_prefix("paper: ")
        if len(paper_fields) != 20:
            raise ValueError(f"data/paper_tables/flew_table2.csv: {len(paper_fields)} fields, expected MDCR's 19 and "
                             "their average (every row of FLeW's Table 2)")
        ours = pd.DataFrame({f"{name} (pairs with {target})": mdcr_fields(mdcr.results[name], metric)
                             for name, (target, _) in decided.items() if target})
        table2[label] = paper_fields.join(ours, how="outer").reindex(
            field_order + sorted(set(ours.index) - set(field_order)))
    table2["apart"] = pd.DataFrame({name: {"why apart": why, "MAP": mdcr.results[name]["avg"]["map"],
                                           "R@5": mdcr.results[name]["avg"]["recall_5"]}
                                    for name, (target, why) in decided.items() if not target}).T
    return table2


@dataclass
class SciRepEvalScores:
    """SciRepEval: every system's result, each sum's weights per task (with the rule that chose them), and the
    page's table of FLeW's Table 1 columns."""

    results: dict
    weights: dict
    table: pd.DataFrame

    SUMMARY = ["prx_avg", "rgn_avg", "qry_avg", "clf_avg", "total_avg", "columns averaged",
               "avg over the columns present"]


def scirepeval_systems(run, inputs, systems: Systems, mdcr: MDCRScores) -> SciRepEvalScores:
    """Every system on SciRepEval (few-shot variants off), and each sum with its own weights per task
    (:func:`scirepeval_task_weights`: a held-out share ``tuning_holdout`` of a task's train split, or MDCR val's
    weights for a task with neither validation nor train data), as FLeW Table 1's 19 columns
    (:func:`flew_columns`). Every paper a task names must have an embedding.

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks (SciRepEval)."""
    from sdr.evaluate import scirepeval

    p, path = run.p, inputs.scirepeval.path
    results, weights = {}, {}
    for name in systems.single:
        results[name] = scirepeval.evaluate(path, systems.single[name]["SciRepEval"], tasks_config=inputs.tasks,
                                            few_shot=False, progress=False)
    for system in systems.sums:
        vectors = systems.facet_vectors(system, "SciRepEval")
        weights[system] = scirepeval_task_weights(path, inputs.tasks, vectors, mdcr.weights[system],
                                                  step=p.weight_step, holdout=p.tuning_holdout, seed=p.seed)
        results[system] = scirepeval_weighted(path, inputs.tasks, vectors, weights[system])
    missing = {name: r["missing_embeddings"] for name, r in results.items() if r["missing_embeddings"]["count"]}
    if missing:
        raise ChapterCheckFailed(f"SciRepEval papers without an embedding: {missing}")
    if any(str(rule).startswith("held-out") for table in weights.values() for rule in table.get("rule", [])):
        run.branch("weights tuned on a held-out share of a SciRepEval train split")
    return SciRepEvalScores(results, weights, pd.DataFrame({name: flew_columns(r) for name, r in results.items()}).T)


# ------------------------------------------------------------------------------------------------- 5. CSFCube
@dataclass
class CSFCubeRows:
    """CSFCube: the leaderboard rows (facet encoders and the tuned sum, one per training seed), the page's view of
    them (mean ± σ and Δ vs the untrained encoder), the first seed's MAP per facet and chosen weights, the extra
    seeds' training, and the untrained encoder's result and reference name. Empty when ``csfcube_eval`` is off."""

    leaderboard: list = field(default_factory=list)
    seeds: pd.DataFrame = field(default_factory=pd.DataFrame)
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    weights: pd.DataFrame = field(default_factory=pd.DataFrame)
    seed_training: dict = field(default_factory=dict)
    untrained: dict | None = None
    reference: str = ""
    seed_list: list = field(default_factory=list)

    @property
    def scored(self) -> bool:
        return self.untrained is not None


def csfcube_rows(run, inputs, systems: Systems, training: FacetTraining) -> CSFCubeRows:
    """The chapter's leaderboard rows. Each facet encoder ranks CSFCube on its own and their sum is tuned per facet
    and fold on dev queries (:func:`csfcube_systems`), papers read at the Benchmarks chapter's length; each is
    trained ``leaderboard_seeds`` times (the same triplets, seeds ``seed``, ``seed`` + 1, …), every seed its own
    row with per-query MAP, compared with that chapter's untrained encoder of the same pooling. Checked: one row
    per model and seed, every chosen weight a point of the grid.

    Shown in: notebooks/flew.ipynb, 5. CSFCube."""
    from sdr.evaluate import csfcube
    from sdr.methods.specter import leaderboard_seeds

    p = run.p
    if not p.csfcube_eval:
        return CSFCubeRows()
    base_model = book.base_model_label(p.model_name, p.model_layers)
    # the Benchmarks chapter's untrained row of this encoder: same pooling, same input length
    reference = book.untrained_reference(p.model_name, p.model_layers,
                                         training.fits[FACET_ENCODERS["background"]].encoder.pooling, "csfcube")
    untrained = csfcube.evaluate(inputs.csfcube.path, embeddings=systems.single["untrained encoder"]["CSFCube"],
                                 return_per_query=True)
    untrained_queries, query_groups = book.csfcube_per_query(untrained, inputs.csfcube.path)
    budget = training.budget
    # the extra seeds are the `seeds` part; the first seed is section 3's
    extra = p.leaderboard_seeds > 1 and run.runs_part("seeds")
    seeds = leaderboard_seeds(p.seed, p.leaderboard_seeds) if extra else [p.seed]
    if extra:
        run.branch("extra leaderboard seeds trained")
    rows, seed_training = [], {}
    for run_seed in seeds:
        if run_seed == p.seed:  # the encoders of sections 3-4
            vectors = {name: systems.single[name]["CSFCube"] for name in FACET_ENCODERS.values()}
        else:  # the same triplets, another training seed; only CSFCube is read
            vectors = {}
            for name in FACET_ENCODERS.values():
                fit = training.fit(name, run_seed)
                seed_training[f"{name} · seed {run_seed}"] = fit.losses()
                vectors[name] = systems.embed(fit.encoder, ("CSFCube",))["CSFCube"]
        scored, weights = csfcube_systems(inputs.csfcube.path, vectors, FACET_ENCODERS, SUM_NAME, step=p.weight_step)
        for name, result in scored.items():
            per_query, groups = book.csfcube_per_query(result, inputs.csfcube.path)
            rows.append(book.leaderboard_row(
                name, "csfcube", book.csfcube_metrics(result), data=inputs.csfcube.kind, base_model=base_model,
                training=budget[name], input_tokens=p.csfcube_max_length, seed=run_seed, per_query=per_query,
                query_groups=groups, reference=reference))
        if run_seed == p.seed:  # the page's per-facet table and chosen weights: the first seed's
            first_seed, chosen = {**scored, "untrained encoder": untrained}, weights
    if len(rows) != 4 * len(seeds):
        raise ChapterCheckFailed(f"{len(rows)} leaderboard rows, expected one per model and seed (4 × {len(seeds)}): "
                                 f"{[row['method'] for row in rows]}")
    off_grid = {tuple(w) for w in chosen[list(FACETS)].to_numpy()} - set(simplex_grid(p.weight_step))
    if off_grid:
        raise ChapterCheckFailed(f"CSFCube weights off the step-{p.weight_step} grid: {sorted(off_grid)}")
    # mean ± σ over the seeds and the paired interval against the untrained encoder scored here at the same length
    seed_table = seed_spread(rows, untrained_queries, query_groups, seed=p.seed).rename(
        columns={"Δ vs reference": "Δ vs untrained"})
    table = pd.DataFrame({"FLeW (tuned per facet on dev folds)" if name == SUM_NAME else name:
                          {f: 100 * r["test"][f]["map"] for f in (*FACETS, "all")}
                          for name, r in first_seed.items()}).T
    return CSFCubeRows(rows, seed_table, table, chosen, seed_training, untrained, reference, seeds)


def show_csfcube(run, inputs, cs: CSFCubeRows) -> None:
    """The CSFCube section's tables: each facet encoder on its own facet's queries, the seeds' mean ± σ with Δ vs
    the untrained encoder, the extra seeds' training, the weights each fold chose and MAP per facet.

    Shown in: notebooks/flew.ipynb, 5. CSFCube."""
    if not cs.scored:
        print("CSFCube ranking not evaluated on this run (csfcube_eval is off).")
        return
    p = run.p
    own = {f: cs.table.loc[name, f] for f, name in FACET_ENCODERS.items()}
    print("each facet encoder on its own facet's queries (MAP, first seed):", {k: round(v, 2) for k, v in own.items()})
    caption = book.caption(run.profile, [inputs.csfcube.source, f"{p.csfcube_max_length} tokens per paper"])
    show(run, cs.seeds, title=f"CSFCube test MAP (all) × 100 per training seed; the untrained encoder "
                              f"({cs.reference}) scores {100 * cs.untrained['test']['all']['map']:.2f} here · {caption}")
    if cs.seed_training:
        show(run, pd.DataFrame(cs.seed_training).T, title="training of the extra seeds (the same triplets):",
             decimals=4)
    show(run, cs.weights.drop(columns="grid"), title="weights chosen on each fold's dev queries (first seed):",
         decimals=None)
    show(run, cs.table, title="MAP per facet (first seed)")


# ------------------------------------------------------------------------------------------------- the paper's tables
TABLE_COLUMNS = [*TABLE1_COLUMNS, *FORMAT_COLUMNS, "total_avg"]
#: ours only: what a partial run (a replica) covers
PARTIAL = ["columns averaged", "avg over the columns present"]


def table1(run, inputs, scirepeval: SciRepEvalScores):
    """Every row of FLeW's Table 1 on its 19 columns, the format averages and Total AVG, with ours (the systems
    that are not ablations) by the chapter's pairing rule (:func:`sdr.methods.flew.pair_with_paper`): a row of
    ours that pairs with a paper row beneath the paper's, the others apart with the reason. Returns the
    :class:`~sdr.methods.flew.fidelity.Paired` tables (ours with the columns a partial run covers).

    Shown in: notebooks/flew.ipynb, Ours next to the paper."""
    from sdr.methods.flew.fidelity import pair_with_paper, row_setups

    paper = book.read_paper_table("flew_table1")
    ours = scirepeval.table.loc[[n for n in scirepeval.table.index if "w/o" not in n]]
    table = pair_with_paper(ours, paper.assign(**dict.fromkeys(PARTIAL, np.nan)), TABLE_COLUMNS + PARTIAL,
                            row_setups(run, ours.index, inputs.scirepeval), f"this book ({run.profile})")
    if len(table.paired) + len(table.apart) != len(paper) + len(ours):
        raise ChapterCheckFailed(f"Table 1: {len(table.paired)} + {len(table.apart)} rows, expected the paper's "
                                 f"{len(paper)} and our {len(ours)}")
    return table


def table3(run, inputs, scirepeval: SciRepEvalScores, mdcr: MDCRScores):
    """Every row of FLeW's Table 3 (the ablations), with ours whose names start with FLeW (the facet encoders, the
    sums and the ablations trained) and MDCR's MAP beside ours, paired by the chapter's rule as in :func:`table1`.

    Shown in: notebooks/flew.ipynb, Ours next to the paper."""
    from sdr.methods.flew.fidelity import pair_with_paper, row_setups

    paper = book.read_paper_table("flew_table3")
    ours = scirepeval.table.loc[[n for n in scirepeval.table.index if n.startswith(SUM_NAME)]]
    ours = ours.assign(**{"MDCR MAP": [mdcr.table.loc[n, "MAP"] for n in ours.index]})
    table = pair_with_paper(ours, paper.assign(**dict.fromkeys([*PARTIAL, "MDCR MAP"], np.nan)),
                            TABLE_COLUMNS + PARTIAL + ["MDCR MAP"],
                            row_setups(run, ours.index, inputs.scirepeval, inputs.mdcr), f"this book ({run.profile})")
    if len(table.paired) + len(table.apart) != len(paper) + len(ours):
        raise ChapterCheckFailed(f"Table 3: {len(table.paired)} + {len(table.apart)} rows, expected the paper's "
                                 f"{len(paper)} and our {len(ours)}")
    return table


def table3_claim(systems: Systems, scirepeval: SciRepEvalScores, mdcr: MDCRScores) -> pd.DataFrame:
    """Table 3's claim, measured: each weighted sum minus each of its facet encoders on SciRepEval (mean over the
    columns present) and on MDCR's test MAP (positive: the sum is better).

    Shown in: notebooks/flew.ipynb, Ours next to the paper."""
    average = "avg over the columns present"
    ours, mdcr_table = scirepeval.table, mdcr.table
    return pd.DataFrame({system: {
        **{f"SciRepEval: sum − {f} encoder": ours.loc[system, average] - ours.loc[members[f], average] for f in FACETS},
        **{f"MDCR MAP: sum − {f} encoder": mdcr_table.loc[system, "MAP"] - mdcr_table.loc[members[f], "MAP"]
           for f in FACETS}} for system, members in systems.sums.items()})


# ------------------------------------------------------------------------------------------------- findings, store
#: fewer resampled items (SciRepEval tasks, MDCR fields) than this and a page ranks nothing: a percentile bootstrap
#: over a handful of items is far too narrow (two positive tasks alone would "exclude 0")
MIN_RESAMPLED = 5


def _signed(value: float) -> str:
    return f"{value:+.2f}"


def scirepeval_verdicts(scirepeval: SciRepEvalScores, system: str = SUM_NAME, seed: int = 0) -> dict[str, tuple]:
    """Table 3's claim on SciRepEval as sentences: ``system`` (the tuned sum) minus each facet encoder, with a
    paired bootstrap interval over the Table 1 columns (tasks) both rows have, each task's score one item; one
    trained model per row, so the interval says nothing about training noise. ``{facet: (direction, sentence)}``
    (:func:`sdr.stats.direction`, :func:`sdr.stats.verdict`).

    Shown in: notebooks/flew.ipynb, Ours next to the paper (the findings)."""
    from sdr.stats import direction, paired_bootstrap, verdict

    columns = list(TABLE1_COLUMNS)
    ours = scirepeval.table
    verdicts = {}
    for facet in FACETS:
        encoder = FACET_ENCODERS[facet]
        both = [c for c in columns if np.isfinite(ours.loc[system, c]) and np.isfinite(ours.loc[encoder, c])]
        if not both:
            raise ChapterCheckFailed(f"SciRepEval: {system!r} and {encoder!r} share no Table 1 column")
        result = paired_bootstrap({c: float(ours.loc[system, c]) for c in both},
                                  {c: float(ours.loc[encoder, c]) for c in both}, seed=seed)
        what = (f"paired bootstrap over the {len(both)} SciRepEval tasks both rows have, one trained model each: "
                "conditional on those models")
        verdicts[facet] = (direction(result, min_items=MIN_RESAMPLED),
                           verdict(f"The tuned sum ({system})", encoder, result, resampled=what,
                                   min_items=MIN_RESAMPLED))
    return verdicts


def mdcr_verdicts(mdcr: MDCRScores, systems: Sequence[str], reference: str = "untrained encoder",
                  seed: int = 0) -> dict[str, tuple]:
    """Each of ``systems`` against ``reference`` on MDCR's test MAP as sentences, with a paired bootstrap interval
    over the MAG fields both were scored on (MDCR's average is the mean of its fields' MAP); one trained model per
    system. ``{system: (direction, sentence)}``.

    Shown in: notebooks/flew.ipynb, Ours next to the paper (the findings)."""
    from sdr.stats import direction, paired_bootstrap, verdict

    base = mdcr.results[reference]["fields"]
    verdicts = {}
    for system in systems:
        fields = mdcr.results[system]["fields"]
        both = sorted(set(fields) & set(base))
        if not both:
            raise ChapterCheckFailed(f"MDCR: {system!r} and {reference!r} share no field")
        result = paired_bootstrap({f: float(fields[f]["map"]) for f in both}, {f: float(base[f]["map"]) for f in both},
                                  seed=seed)
        what = f"paired bootstrap over the {len(both)} MDCR fields, one trained model: conditional on it"
        verdicts[system] = (direction(result, min_items=MIN_RESAMPLED),
                            verdict(system, f"the {reference}", result, resampled=what, min_items=MIN_RESAMPLED))
    return verdicts


def findings(run, inputs, scores: SplitterScores, heldout: pd.DataFrame, mdcr: MDCRScores,
             scirepeval: SciRepEvalScores, cs: CSFCubeRows) -> str:
    """What this run shows, one markdown line per finding, each written from the run's own numbers; every sentence
    that ranks two systems comes from an interval (:func:`scirepeval_verdicts`, :func:`mdcr_verdicts`).

    Shown in: notebooks/flew.ipynb, Ours next to the paper (the closing cell)."""
    p = run.p
    ours = scirepeval.table
    lines = []
    columns = int(ours.loc[SUM_NAME, "columns averaged"])
    claim = scirepeval_verdicts(scirepeval, seed=p.seed)
    sides = [side for side, _ in claim.values()]
    summary = ("the tuned sum is above every facet encoder." if all(side == "above" for side in sides) else
               f"the tuned sum is not above every facet encoder: above {sides.count('above')}, within noise "
               f"{sides.count('within noise')}, below {sides.count('below')} of {len(sides)}.")
    lines.append(f"* **Table 3's claim on SciRepEval ({columns} of FLeW's 19 columns here):** {summary} "
                 + " ".join(sentence for _, sentence in claim.values()))
    mdcr_systems_here = (*FACET_ENCODERS.values(), SUM_NAME)
    mdcr_gain = mdcr_verdicts(mdcr, mdcr_systems_here, seed=p.seed)
    lines.append(f"* **MDCR test MAP against the untrained encoder** ({int(mdcr.table.loc[SUM_NAME, 'fields'])} fields "
                 "here): " + " ".join(sentence for _, sentence in mdcr_gain.values())
                 + f" FLeW's weights, tuned on MDCR val: {tuple(round(w, 2) for w in mdcr.weights[SUM_NAME])} "
                   "(bg, mt, rs).")
    if not heldout.empty:
        lines.append("* **Held-out queries of the list:** the triplet loss of every facet encoder against the untrained "
                     "one changes by " + ", ".join(f"{-v:+.3f} ({n})" for n, v in heldout["loss gain"].items())
                     + " (negative: lower loss, better ordering).")
    if cs.scored:
        seeds_here, table = len(cs.seed_list), cs.seeds
        lines.append(f"* **CSFCube ({inputs.csfcube.kind}, {p.csfcube_max_length} tokens a paper), MAP on 'all', "
                     f"mean ± σ over {seeds_here} training seed{'s' if seeds_here > 1 else ''}:** untrained "
                     f"{cs.table.loc['untrained encoder', 'all']:.2f}; "
                     + "; ".join(f"{name} {line['mean']:.2f} ± {line['σ']:.2f}, Δ {_signed(line['Δ vs untrained'])} "
                                 f"[{_signed(line['95 % low'])}, {_signed(line['95 % high'])}]"
                                 for name, line in table.iterrows())
                     + " (Δ: difference from the untrained encoder with its paired bootstrap 95 % interval over "
                     + ("training seeds, then queries within folds; " if seeds_here > 1
                        else "queries, conditional on one trained model; ")
                     + ("every interval excludes 0)." if ((table["95 % low"] > 0) | (table["95 % high"] < 0)).all()
                        else "an interval that includes 0 is within noise)."))
    lines.append(f"* **The splitter** agrees with CSAbstruct test's facets on {scores.ours:.3f} of its sentences "
                 f"({inputs.csabstruct.kind}; the lexical baseline {scores.baseline:.3f}).")
    return "\n".join(lines)


def store(run, scores: SplitterScores, agreement: CSFCubeAgreement, graph: FacetGraph, queries: QueryList,
          sampling: Sampling, heldout: pd.DataFrame, mdcr: MDCRScores, table2: Mapping, scirepeval: SciRepEvalScores,
          tables: Mapping, cs: CSFCubeRows, conclusions: str, *, released: pd.DataFrame | None = None,
          comparison=None, published=None, differences: list[str] | None = None, losses: pd.DataFrame | None = None):
    """The FLeW chapter's record in the results store: its tables (``tables``: Table 1 and Table 3 as paired by the
    chapter's rule, with ours that stand apart, and Table 3's claim), the released models' table (``paper``), the
    released triplets beside the re-sampled ones, the published recipe's training, the training runs' probe losses
    (``losses``: what ``loss_margin`` checks, read by benchmarks/measure_real_margins.py), the weights every sum
    chose, its leaderboard rows, the list of differences from the paper and the findings."""
    extra_tables = {"Table 1, ours apart": tables["Table 1"].apart.round(2),
                    "Table 3, ours apart": tables["Table 3"].apart.round(2),
                    "MDCR Table 2, ours apart": table2["apart"]}
    if released is not None and not released.empty:
        extra_tables["released models"] = released.round(4)
    if comparison is not None and not comparison.empty:
        extra_tables["released vs re-sampled triplets"] = comparison.table.round(4)
    if losses is not None and not losses.empty:
        extra_tables["probe loss (training runs)"] = losses.round(4)
    if published is not None and not published.empty:
        extra_tables["published recipe"] = published.table.round(4)
    return run.save({
        "splitter (CSAbstruct test)": scores.table.round(4), "splitter per facet": scores.per_facet.round(4),
        "splitter vs CSFCube labels": agreement.table.round(4), "facet subgraphs": graph.table,
        "released triplets": queries.released_table, "structure": sampling.table.round(3),
        "held-out triplets": heldout.round(4), "MDCR (ours)": mdcr.table.round(2),
        "MDCR MAP per field (Table 2)": table2["MAP"].round(2), "MDCR R@5 per field (Table 2)": table2["R@5"].round(2),
        "SciRepEval (ours, FLeW columns)": scirepeval.table.round(2), "Table 1": tables["Table 1"].paired.round(2),
        "Table 3": tables["Table 3"].paired.round(2), "Table 3 claim": tables["Table 3 claim"].round(2),
        "CSFCube MAP (ours)": cs.table.round(2), "CSFCube MAP per seed": cs.seeds.round(3), **extra_tables},
        extra={"mdcr_weights": {k: list(v) for k, v in mdcr.weights.items()}, "leaderboard": cs.leaderboard,
               "scirepeval_weights": {k: v.to_dict("records") for k, v in scirepeval.weights.items()},
               "conclusions": conclusions, "differences from the paper": list(differences or [])})


# ------------------------------------------------------------------------------------------------- the page's views
def show_paired(run, paired, *sources: str, title: str = "") -> None:
    """A paper table split by the pairing rule: the paper's rows with ours that pair with them, then ours that
    stand apart with the reason (nothing when none does).

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks and Ours next to the paper."""
    show(run, paired.paired, *sources, title=title)
    if not paired.apart.empty:
        show(run, paired.apart, title="ours apart from the paper's rows (the pairing rule: same data, model family "
                                      "and protocol), with the reason:")


def show_table2(run, inputs, table2: Mapping) -> None:
    """FLeW's Table 2 (MAP and Recall@5 per field) with the systems of ours that pair with its columns, then those
    that stand apart (their averages and the reason).

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks (Table 2)."""
    show(run, table2["MAP"], inputs.mdcr.source, "FLeW Table 2 (paper columns)", decimals=1)
    show(run, table2["R@5"], title="Recall@5 per field", decimals=1)
    if not table2["apart"].empty:
        show(run, table2["apart"], title="ours apart from Table 2's columns (the pairing rule), MDCR test averages:",
             decimals=None)


def differences_markdown(run, inputs, sampling: Sampling, scirepeval: SciRepEvalScores, queries: QueryList
                         ) -> tuple[list[str], str]:
    """The page's "what differs from the paper" list (:func:`sdr.methods.flew.differences`), checked to state every
    difference of this run (:func:`sdr.methods.flew.expect_differences_stated`); returns the lines and their markdown.

    Shown in: notebooks/flew.ipynb, Ours next to the paper."""
    from sdr.methods.flew.fidelity import differences, expect_differences_stated

    weights = scirepeval.weights.get(SUM_NAME)
    lines = differences(run, inputs, sampling.bands, weights, queries)
    expect_differences_stated(lines, run, inputs, weights)
    return lines, "**What differs from the paper** (this run):\n\n" + "\n".join(f"* {line}" for line in lines)
