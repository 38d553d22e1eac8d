"""The SciAspect chapter's scoring steps, one call each: SciDocs (Tables 6.3–6.7), MDCR (Table 6.10), SciRepEval
(Table 6.11), CSFCube's facets and the leaderboard models' seeds; then the page's record (leaderboard rows, the
results store, the findings). They read the registries of :mod:`.registry` and what :mod:`.chapter`'s steps made;
invariants raise :class:`sdr.book.ChapterCheckFailed`.
Shown in: notebooks/sciaspect.ipynb.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed, replicas_of_one_corpus
from sdr.methods.sciaspect.chapter import Models, Samples, TrainingData
from sdr.methods.sciaspect.data import TASKS_COUNTED, table_6_11_rows
from sdr.methods.sciaspect.fidelity import THESIS, Pairing, our_setting, pair, scirepeval_task_counts
from sdr.methods.sciaspect.recipe import (FACET_TO_ASPECT, SCIDOCS_PROXIMITY, SCIDOCS_WITHOUT_RECOMM,
                                          average_without_recomm, csfcube_results, train_runs)
from sdr.methods.sciaspect.registry import (BOARD_EMBEDDINGS, MDCR_CONCAT, MDCR_MODELS, NAMED_MODELS, PROJECTION_ROWS,
                                            SCIDOCS_LEADERBOARD, SCIREPEVAL_MODELS, SWEEPS, THESIS_TABLES)
from sdr.methods.specter.recipe import csfcube_leaderboard_row, seed_spread

__all__ = ["scidocs_table", "expect_trained_rows_differ", "scidocs_columns", "Comparisons", "ours_label",
           "paper_vs_ours_tables", "sweeps", "sweep_figure",
           "ScidocsGain", "scidocs_gain", "mdcr_table", "scirepeval_table", "table_6_11_findings", "FacetScores",
           "csfcube_facets", "facet_figure", "SeedRows", "seed_rows", "leaderboard", "store", "facet_queries",
           "facet_verdicts", "findings"]


# ------------------------------------------------------------------------------------------------- SciDocs
def _scidocs_scores(run, inputs, vectors_by_id: Mapping) -> dict:
    from sdr.evaluate import scidocs

    metrics = scidocs.evaluate(inputs.scidocs.path, vectors_by_id, recomm=run.p.recommendations, progress=False)
    if metrics["missing_embeddings"]["count"] != 0:
        raise ChapterCheckFailed(f"SciDocs ({inputs.scidocs.path}): {metrics['missing_embeddings']['count']} ids "
                                 "without an embedding; every paper the tasks name was embedded")
    return book.scidocs_row(metrics)


def scidocs_table(run, inputs, training: TrainingData, models: Models) -> pd.DataFrame:
    """Every trained encoder and the untrained one scored on SciDocs (the official metrics × 100), and the rows of
    :data:`PROJECTION_ROWS` (each head, eq. 5.2, and the concatenated heads, eq. 5.3); ``avg10``, the mean of the ten
    metrics other than recommendations, for every row. Indexed by (table, model).

    Shown in: notebooks/sciaspect.ipynb, SciDocs: Tables 6.3–6.7."""
    papers = training.evaluation["SciDocs"]
    vectors = models.embeddings.vectors
    rows = {("untrained", "untrained encoder"): _scidocs_scores(run, inputs, vectors(models.base, papers))}
    for key, (encoder, _) in models.trained.items():
        rows[key] = _scidocs_scores(run, inputs, vectors(encoder, papers))
    for table, (name, base_row, labels) in PROJECTION_ROWS.items():
        source = NAMED_MODELS[name]
        if source not in models.trained:
            continue
        variants = models.embeddings.variants(*models.trained[source], papers)
        if base_row is not None:
            rows[(table, base_row)] = rows[source]
        for variant, label in labels.items():
            rows[(table, label)] = _scidocs_scores(run, inputs, variants[variant])
    ours = pd.DataFrame(rows).T
    ours.index.names = ["table", "model"]
    ours["avg10"] = average_without_recomm(ours)
    expect_trained_rows_differ(run, ours, list(models.trained))
    return ours


def expect_trained_rows_differ(run, ours: pd.DataFrame, trained: list[tuple[str, str]]) -> None:
    """Every trained model's SciDocs row differs from the untrained encoder's in at least one metric: a row equal to
    it on every metric means the trained weights never reached the scores (a wrong model scored, or a run that never
    left its warm-up). Raises :class:`ChapterCheckFailed` naming the rows; records the branch."""
    untrained = ours.loc[("untrained", "untrained encoder")]
    same = [key for key in trained if key in ours.index and ours.loc[key].equals(untrained)]
    if same:
        raise ChapterCheckFailed(f"SciDocs rows {same} score exactly like the untrained encoder on every metric: the "
                                 "trained weights did not reach the scores (a wrong model scored, or no step past "
                                 "the warm-up)")
    run.branch("trained rows differ from the untrained row")


def scidocs_columns(run) -> list[str]:
    """The SciDocs columns the page shows: all 12 metrics, ``avg`` and ``avg10`` with ``recommendations``, else the
    ten others and ``avg10``."""
    if run.p.recommendations:
        return [*book.SCIDOCS_COLUMNS.values(), "avg", "avg10"]
    return [*SCIDOCS_WITHOUT_RECOMM, "avg10"]


@dataclass
class Comparisons:
    """The thesis' rows of each SciDocs table (``data/paper_tables/thesis_scidocs_ablations.csv``, with ``avg10``)
    over ours, and whether the pairing rule (:func:`sdr.methods.sciaspect.fidelity.pair`) pairs them."""

    tables: dict[str, pd.DataFrame]
    paper: pd.DataFrame
    pairing: Pairing = field(default_factory=lambda: Pairing(False, ["not compared"]))

    def view(self, *tables: str) -> pd.DataFrame:
        """One table, or several stacked under their names; the pairing's line first (our rows apart, and why,
        where the rule does not pair them)."""
        print(self.pairing.line)
        if len(tables) == 1:
            return self.tables[tables[0]]
        return pd.concat([self.tables[t] for t in tables], keys=list(tables))


def ours_label(run, pairing: Pairing, extra: str = "") -> str:
    """The ``reported by`` label of our rows: "this book (<profile>)", marked "not paired" where the rule does not
    pair them with the thesis' rows."""
    return f"this book ({run.profile}{extra})" + ("" if pairing.paired else ", not paired")


def paper_vs_ours_tables(run, ours: pd.DataFrame, inputs=None) -> Comparisons:
    """Each table of :data:`THESIS_TABLES`: every thesis row (checked: each one is shown) over the untrained encoder
    and our rows of that table, on the twelve metrics, ``avg`` and ``avg10``; our rows are paired with the thesis'
    only where the pairing rule holds (same training data source, model, training and SciDocs protocol), else
    labelled "not paired" with the reasons.

    Shown in: notebooks/sciaspect.ipynb, SciDocs: Tables 6.3–6.7."""
    paper = book.read_paper_table("thesis_scidocs_ablations")
    paper["avg10"] = average_without_recomm(paper)
    metrics = [*book.SCIDOCS_COLUMNS.values(), "avg", "avg10"]
    pairing = pair(our_setting(run, inputs, "scidocs"), THESIS["scidocs"])
    label = ours_label(run, pairing)
    tables = {}
    for table in THESIS_TABLES:
        ours_rows = _rows_of(ours, table)
        ours_rows = pd.concat([ours.xs("untrained", level="table"), ours_rows])
        paper_rows = paper[paper["table"] == table]
        comparison = book.paper_vs_ours(ours_rows, paper_rows, metrics, label=label)
        if (comparison["reported by"] != label).sum() != len(paper_rows):
            raise ChapterCheckFailed(f"{table}: not every thesis row is in the comparison:\n{comparison}")
        tables[table] = comparison
    return Comparisons(tables, paper, pairing)


def _rows_of(ours: pd.DataFrame, table: str) -> pd.DataFrame:
    """Our rows of one thesis table, indexed by model (none when the profile trains none of them)."""
    if table in ours.index.get_level_values("table"):
        return ours.xs(table, level="table")
    return ours.iloc[:0].droplevel(0)


def sweeps(run, ours: pd.DataFrame, comparisons: Comparisons) -> dict[str, pd.DataFrame]:
    """For each sweep of :data:`SWEEPS`, its axis label → the thesis' printed average (12 metrics) and our ``avg10``
    per value (columns ``value``, ``score``, ``reported by``), for :func:`sdr.book.figures.sweeps`."""
    paper = comparisons.paper
    curves = {}
    for sweep in SWEEPS.values():
        paper_rows = paper[(paper["table"] == sweep.table) & paper["model"].str.startswith(sweep.prefix)]
        our_rows = _rows_of(ours, sweep.table)
        our_rows = our_rows[our_rows.index.str.startswith(sweep.prefix)]
        curves[sweep.axis] = pd.concat([
            pd.DataFrame({"value": paper_rows["model"].map(sweep.value).values, "score": paper_rows["avg"].values,
                          "reported by": "thesis (SciDocs, printed avg of 12)"}),
            pd.DataFrame({"value": our_rows.index.map(sweep.value), "score": our_rows["avg10"].values,
                          "reported by": f"this book ({run.profile}, avg10)"})], ignore_index=True)
    return curves


def sweep_figure(run, ours: pd.DataFrame, comparisons: Comparisons):
    """The τ and α sweeps, the thesis' printed average above our ``avg10`` (:func:`sdr.book.figures.sweeps`).
    Shown in: notebooks/sciaspect.ipynb, The τ and α sweeps."""
    book.figures.sweeps(run, sweeps(run, ours, comparisons),
                        log_x=[sweep.axis for sweep in SWEEPS.values() if sweep.log])


@dataclass
class ScidocsGain:
    """SPECTERCL (1p 5n) against the untrained encoder on the mean of SciDocs' eight ranking metrics (× 100), and
    whether the data policy lets the chapter's margin apply."""

    untrained: float
    specter_cl: float
    margin: float
    applies: bool
    why_not: str
    what: str = "over the untrained encoder (mean of the 8 SciDocs ranking metrics)"

    @property
    def gain(self) -> float:
        return self.specter_cl - self.untrained

    def stored(self) -> dict:
        return {"untrained_proximity": self.untrained, "specter_cl_proximity": self.specter_cl, "gain": self.gain,
                "margin": self.margin}


def scidocs_gain(run, inputs, ours: pd.DataFrame) -> ScidocsGain:
    """The gain the chapter's check reads (issue 26): on the SciDocs replica, whose citations and co-views follow
    the communities the synthetic corpus plants, SPECTERCL (1p 5n) trained on the replica's citations must beat the
    untrained encoder by more than ``min_scidocs_gain`` on the mean of the eight ranking metrics (co-view, co-read,
    cite, co-cite: MAP and nDCG), a margin set above its measured seed spread (profiles.yml says how). MAG and MeSH F1
    are left out: on the replica MAG F1 is the same for every model and MeSH F1 rests on a few dozen test papers. The
    check applies where the profile sets ``check_scidocs_gain`` and both the training data and SciDocs are replicas
    of the one synthetic corpus, where the margin was measured.

    Shown in: notebooks/sciaspect.ipynb, The τ and α sweeps."""
    p = run.p
    key = NAMED_MODELS["SPECTERCL"]
    if key not in ours.index:
        raise ValueError(f"the gain check reads SPECTERCL's row {key}; specter_cl_variants must list {key[1]!r}")
    proximity = ours[list(SCIDOCS_PROXIMITY)].mean(axis=1)
    untrained = float(proximity[("untrained", "untrained encoder")])
    specter_cl = float(proximity[key])
    replicas = replicas_of_one_corpus(inputs.citations, inputs.scidocs)
    why_not = ("the profile does not set check_scidocs_gain; its margin was measured at smoke"
               if not p.check_scidocs_gain else "" if replicas else "real data: the margin was measured on the replicas")
    print(f"SciDocs ranking metrics (mean of 8): untrained {untrained:.2f}, SPECTERCL {specter_cl:.2f}")
    return ScidocsGain(untrained, specter_cl, p.min_scidocs_gain, bool(p.check_scidocs_gain and replicas), why_not)


# ------------------------------------------------------------------------------------------------- MDCR, SciRepEval
def mdcr_table(run, inputs, training: TrainingData, models: Models) -> pd.DataFrame:
    """The AVG rows of thesis Table 6.10 (``data/paper_tables/thesis_mdcr.csv``, every one checked to be shown) over
    ours: the untrained encoder, the trained models of :data:`MDCR_MODELS` and :data:`MDCR_CONCAT`'s concatenated
    heads, each scored by MDCR's evaluator (−L2 distance; MAP, nDCG, Recall@5); paired with the thesis' rows only
    where the pairing rule holds, else labelled "not paired" with the reasons printed.

    Shown in: notebooks/sciaspect.ipynb, MDCR: Table 6.10."""
    from sdr.evaluate import mdcr

    papers = training.evaluation["MDCR"]
    vectors = {"untrained encoder": models.embeddings.vectors(models.base, papers)}
    for name in MDCR_MODELS:
        if NAMED_MODELS[name] in models.trained:
            vectors[name] = models.embeddings.vectors(models.trained[NAMED_MODELS[name]][0], papers)
    if NAMED_MODELS[MDCR_CONCAT] in models.trained:
        vectors[f"{MDCR_CONCAT}(concat)"] = models.embeddings.variants(*models.trained[NAMED_MODELS[MDCR_CONCAT]],
                                                                       papers)["concat"]
    rows = {}
    for label, by_id in vectors.items():
        result = mdcr.evaluate(inputs.mdcr.path, embeddings=by_id)
        if result["missing_embeddings"]["count"] != 0:
            raise ChapterCheckFailed(f"MDCR ({inputs.mdcr.path}), {label}: {result['missing_embeddings']['count']} ids "
                                     "without an embedding")
        rows[label] = result["avg"]
    paper = book.read_paper_table("thesis_mdcr")
    pairing = pair(our_setting(run, inputs, "mdcr"), THESIS["mdcr"])
    print(pairing.line)
    comparison = book.paper_vs_ours(pd.DataFrame(rows).T, paper, ["map", "ndcg", "recall_5"],
                                    label=ours_label(run, pairing, ", AVG"))
    if comparison["reported by"].str.startswith("Thesis").sum() != len(paper):
        raise ChapterCheckFailed(f"MDCR: not every thesis row is in the comparison:\n{comparison}")
    return comparison


def scirepeval_table(run, inputs, models: Models) -> pd.DataFrame:
    """Thesis Table 6.11 (``data/paper_tables/thesis_scirepeval.csv``, with the rows recovered by their averages) with
    a column per model of ``scirepeval_models`` (:data:`SCIREPEVAL_MODELS`), each scored as ``sdr evaluate all``
    scores any model (the command line is printed): its saved folder embeds every document of the tasks and the
    SciRepEval evaluator scores them (:func:`table_6_11_rows`); every task must run with every document embedded.
    The rows :data:`TASKS_COUNTED` say how many tasks our averages count (the thesis': 6 in-task, 11 out-of-task,
    read from its averages), and the pairing rule's line says why our columns are not paired with the thesis'.

    Shown in: notebooks/sciaspect.ipynb, SciRepEval: Table 6.11."""
    from sdr.evaluate.suite import evaluate_model

    p = run.p
    unknown = [name for name in p.scirepeval_models if name not in SCIREPEVAL_MODELS]
    if unknown:
        raise ValueError(f"scirepeval_models {unknown}: expected names among {list(SCIREPEVAL_MODELS)}")
    ours = {}
    for name in p.scirepeval_models:
        key = SCIREPEVAL_MODELS[name]
        if key is not None and key not in models.trained:
            print(f"{name}: not trained at this profile; its SciRepEval column stays empty")
            continue
        model = run.data.model(p.model_name) if key is None else str(models.folders[key])
        layers = p.model_layers if key is None else 0  # a saved run keeps only the layers it trained
        print(f"sdr evaluate all --model {model} --layers {layers} --pooling {p.pooling} --max-length {p.max_length} "
              f"--benchmarks scirepeval --data-dir scirepeval={inputs.scirepeval.path} --no-store")
        # the untrained MiniLM folder declares a Normalize step, the trained folders do not: read both raw
        outcome = evaluate_model(model, ["scirepeval"], {"scirepeval": inputs.scirepeval.path}, max_length=p.max_length,
                                 pooling=p.pooling, layers=layers, device=p.device, normalize=False)
        result = outcome["benchmarks"]["scirepeval"]["result"]
        if result["missing_embeddings"]["count"] != 0 or result["skipped_tasks"]:
            raise ChapterCheckFailed(f"SciRepEval, {name}: {result['missing_embeddings']['count']} documents without "
                                     f"an embedding, tasks skipped: {result['skipped_tasks']}")
        ours[f"{'untrained encoder' if key is None else name} (this book, {run.profile})"] = table_6_11_rows(result)
    paper = book.read_paper_table("thesis_scirepeval").set_index("model")
    paper_models = [c for c in paper.columns if c not in ("source", "table", "note")]
    rows = [*paper.index, *TASKS_COUNTED]
    table = pd.concat([paper[paper_models], pd.DataFrame(ours)], axis=1)
    if not set(table.index) <= set(rows):
        raise ChapterCheckFailed(f"Table 6.11: our rows {sorted(set(table.index) - set(rows))} are not the "
                                 "thesis' printed rows")
    table = table.reindex(rows)
    if ours:
        counted = scirepeval_task_counts(table)
        print(pair(our_setting(run, inputs, "scirepeval", counted), THESIS["scirepeval"]).line)
    return table


def table_6_11_findings():
    """What Table 6.11 says, read from ``data/paper_tables/thesis_scirepeval.csv``: §6.3's "best overall" holds for
    "Avg without SciDocs", not for "All avg"; the best out-of-task and in-task models, the lowest REG Avg (Markdown).

    Shown in: notebooks/sciaspect.ipynb, SciRepEval: Table 6.11."""
    from IPython.display import Markdown

    paper = book.read_paper_table("thesis_scirepeval").set_index("model")
    models = [c for c in paper.columns if c not in ("source", "table", "note")]

    def best(row):
        values = paper.loc[row, models].astype(float)
        return f"{values.idxmax()} ({values.max():.2f})"

    return Markdown("\n".join([
        f"* Highest **Avg without SciDocs**: {best('Avg without SciDocs')}; highest **All avg**: {best('All avg')}, "
        f"whose SciDocs Avg is the highest too ({best('SciDocs Avg')}).",
        f"* Highest **Out of task Avg**: {best('Out of task Avg')}; highest **In task Avg**: {best('In task Avg')}.",
        f"* Lowest **REG Avg**: {paper.loc['REG Avg (excluding SciDocs)', models].astype(float).idxmin()}.",
        "* These are the thesis' printed values, one run a model with no interval: they say which number is largest, "
        "not that the differences are beyond noise.",
    ]))


# ------------------------------------------------------------------------------------------------- CSFCube
@dataclass
class FacetScores:
    """CSFCube's test means per (system, facet), the evaluator's output of every (leaderboard model, seed) scored,
    and the untrained encoder's when it was scored."""

    rows: list[dict]
    table: pd.DataFrame
    scored: dict[tuple[str, int], dict]
    untrained: dict | None
    tokens: int

    @property
    def caption_line(self) -> str:
        return f"{self.tokens} tokens per paper"


def csfcube_facets(run, inputs, training: TrainingData, models: Models) -> FacetScores:
    """Rank CSFCube's judged pools by L2 distance in the untrained encoder's space (when ``csfcube_models`` names
    "untrained") and, for each leaderboard model, in its encoder's own space, the space of the head matching the
    facet (eq. 5.2, :data:`FACET_TO_ASPECT`) and the concatenated heads (eq. 5.3), every paper read at
    ``csfcube_max_length`` tokens (:func:`csfcube_results`). MAP and NDCG%20 × 100, each in [0, 100].

    Shown in: notebooks/sciaspect.ipynb, Do the aspect spaces capture CSFCube's facets?"""
    from sdr.evaluate import csfcube

    p = run.p
    papers = training.evaluation["CSFCube"]
    rows, scored = [], {}

    def add_rows(system, result, facets=csfcube.FACETS):
        rows.extend({"system": system, "facet": facet, "map": result["test"][facet]["map"],
                     "ndcg%20": result["test"][facet]["ndcg%20"]} for facet in facets)

    untrained = None
    if "untrained" in p.csfcube_models:
        untrained = csfcube_results(models.base, None, papers, inputs.csfcube.path, p.csfcube_max_length)["encoder"]
        add_rows("untrained encoder", untrained)
    for name in models.leaderboard_models:
        encoder, objective = models.trained[NAMED_MODELS[name]]
        results = scored[(name, p.seed)] = csfcube_results(encoder, objective, papers, inputs.csfcube.path,
                                                           p.csfcube_max_length)
        add_rows(f"{name}: encoder alone", results["encoder"])
        for facet, aspect in FACET_TO_ASPECT.items():
            add_rows(f"{name}: head of the facet", results[aspect], facets=[facet])
        add_rows(f"{name}: concat (eq. 5.3)", results["concat"])
    table = pd.DataFrame(rows).pivot(index="system", columns="facet", values=["map", "ndcg%20"]) * 100
    if not (table.notna().all().all() and ((table >= 0) & (table <= 100)).all().all()):
        raise ChapterCheckFailed(f"CSFCube facet scores missing or outside [0, 100]:\n{table}")
    return FacetScores(rows, table, scored, untrained, p.csfcube_max_length)


def facet_figure(run, facets: FacetScores):
    """CSFCube test MAP per facet, one bar per system: aspect head *i* for facet *i* beside the encoder.

    Shown in: notebooks/sciaspect.ipynb, Do the aspect spaces capture CSFCube's facets?"""
    import matplotlib.pyplot as plt
    import seaborn as sns

    long = pd.DataFrame(facets.rows).assign(MAP=lambda d: d["map"] * 100)
    axis = sns.barplot(data=long, x="facet", y="MAP", hue="system")
    axis.set(title="CSFCube test MAP per facet: aspect head i for facet i vs the encoder", ylabel="MAP (× 100)")
    axis.legend(fontsize=8)
    book.figures.caption_under(run.caption(facets.caption_line), -0.04)
    plt.show()
    return long


@dataclass
class SeedRows:
    """The leaderboard's CSFCube rows (one per model, embedding and seed), the page's mean ± σ view of them, and the
    probe losses of the extra seeds' training."""

    rows: list[dict]
    table: pd.DataFrame
    seed_losses: pd.DataFrame | None
    reference: str


def seed_rows(run, inputs, training: TrainingData, samples: Samples, models: Models, facets: FacetScores) -> SeedRows:
    """The leaderboard models trained again with the next seeds (``leaderboard_seeds`` in all) on the same sampler's
    instances (another held-out probe, another seeded subset, another order), scored on CSFCube at the same length;
    one leaderboard row per model, embedding (:data:`BOARD_EMBEDDINGS`) and seed, compared with the Benchmarks
    chapter's untrained encoder of the same pooling read the same way (:func:`sdr.book.untrained_reference`).

    Shown in: notebooks/sciaspect.ipynb, Seeds: the leaderboard models trained again."""
    p = run.p
    scored, seed_losses = dict(facets.scored), []
    keys = {name: NAMED_MODELS[name] for name in models.leaderboard_models}
    for run_seed in models.seeds[1:]:
        run.branch("extra seeds trained")
        trained, losses, _, _ = train_runs({key: models.runs[key] for key in keys.values()}, samples.example_sets,
                                           models.base, models.texts, replace(models.config, seed=run_seed),
                                           models.folder / f"seed {run_seed}", train_examples=p.train_examples,
                                           seed=run_seed, resume=p.resume)
        seed_losses.append(losses.assign(seed=run_seed))
        for name, key in keys.items():
            encoder, objective = trained[key]
            scored[(name, run_seed)] = csfcube_results(encoder, objective, training.evaluation["CSFCube"],
                                                       inputs.csfcube.path, p.csfcube_max_length)
        del trained
    base_model = book.base_model_label(p.model_name, p.model_layers)
    reference = book.untrained_reference(p.model_name, p.model_layers, p.pooling, "csfcube")
    rows = [csfcube_leaderboard_row(label.format(name=name), results[embedding], inputs.csfcube.path,
                                    data=inputs.csfcube.kind, base_model=base_model,
                                    training=models.training_budget(keys[name], p), input_tokens=p.csfcube_max_length,
                                    seed=run_seed, reference=reference)
            for (name, run_seed), results in scored.items() for embedding, label in BOARD_EMBEDDINGS.items()]
    expected = len(BOARD_EMBEDDINGS) * len(models.leaderboard_models) * len(models.seeds)
    if len(rows) != expected:
        raise ChapterCheckFailed(f"{len(rows)} CSFCube leaderboard rows, expected {expected}")
    untrained = (book.csfcube_per_query(facets.untrained, inputs.csfcube.path)[0]
                 if facets.untrained is not None else None)
    table = seed_spread(rows, untrained, seed=p.seed) if rows else pd.DataFrame()
    if not (table.empty or (table["seeds"].str.count(",") + 1 == len(models.seeds)).all()):
        raise ChapterCheckFailed(f"a leaderboard row lacks a seed of {models.seeds}:\n{table}")
    if seed_losses:
        from IPython.display import display

        print("training of the extra seeds (the same sampler's instances; the loss on each seed's held-out probe):")
        display(pd.concat(seed_losses).round(4))
    print(f"seeds {models.seeds}; CSFCube test, MAP over all facets (× 100); compared with {reference}")
    return SeedRows(rows, table, pd.concat(seed_losses) if seed_losses else None, reference)


# ------------------------------------------------------------------------------------------------- the page's record
def leaderboard(run, inputs, ours: pd.DataFrame, models: Models, seeds: SeedRows) -> list[dict]:
    """The Summary's rows of this chapter: the CSFCube rows of the seeds and, with ``recommendations`` (all 12
    SciDocs metrics), the SciDocs rows of :data:`SCIDOCS_LEADERBOARD`. The untrained encoder's rows are the
    Benchmarks chapter's (:func:`sdr.book.untrained_reference`), not stored here."""
    p = run.p
    rows = list(seeds.rows)
    if not p.recommendations:
        return rows
    base_model = book.base_model_label(p.model_name, p.model_layers)
    for name in SCIDOCS_LEADERBOARD:
        key = NAMED_MODELS[name]
        if key in ours.index:
            scores = ours.loc[key]
            rows.append(book.leaderboard_row(name, "scidocs", {c: float(scores[c]) for c in
                                                                [*book.SCIDOCS_COLUMNS.values(), "avg"]},
                                             data=inputs.scidocs.kind, base_model=base_model,
                                             training=models.training_budget(key, p), input_tokens=p.max_length,
                                             seed=p.seed))
    return rows


def store(run, inputs, training: TrainingData, samples: Samples, models: Models, ours: pd.DataFrame,
          comparisons: Comparisons, mdcr: pd.DataFrame, table_6_11: pd.DataFrame, facets: FacetScores,
          seeds: SeedRows, gain: ScidocsGain, rows: list[dict], differs=None) -> Path:
    """The chapter's record in the results store: its tables, its leaderboard rows, the budget, the CSFCube input and
    length, the seeds and the gain check's numbers (the Summary and the findings below read them), and the page's
    list of what differs from the thesis (``differs``: :func:`sdr.methods.sciaspect.fidelity.what_differs`)."""
    p = run.p
    tables = {
        "SciDocs (ours)": ours.reset_index().round(2),
        **{f"paper vs ours, {t}": c.round(2) for t, c in comparisons.tables.items()},
        "MDCR paper vs ours": mdcr.round(2), "SciRepEval Table 6.11": table_6_11.round(2).reset_index(names="row"),
        "CSFCube facets": facets.table.round(2).reset_index(), "CSFCube seeds": seeds.table.round(3).reset_index(),
        "sampling": samples.report.reset_index(),
        "training": models.losses.reset_index(), "evaluation overlap": training.overlap.reset_index()}
    extra = {"budget": models.budget, "csfcube": inputs.csfcube.source, "csfcube_max_length": p.csfcube_max_length,
             "leaderboard": rows, "leaderboard_seeds": models.seeds, "scidocs_gain": gain.stored(),
             "csfcube facet queries": facet_queries(inputs, facets, p.seed)}
    if differs is not None:
        extra["what differs from the thesis"] = list(differs.lines.values())
    return run.save(tables, extra, sources=run.data.sources)


def facet_queries(inputs, facets: FacetScores, seed: int) -> dict:
    """What the findings' per-facet verdicts need, kept in the chapter's record: ``{"groups": {facet: [fold 1
    test queries, fold 2 test queries]}, "systems": {system: {facet: {query: MAP × 100}}}}`` for the untrained
    encoder (every facet) and each leaderboard model's head of the facet (its facet), first seed. Each facet's
    grouped mean is the facet table's MAP (CSFCube's test score is the mean of its two folds' means)."""
    groups, systems = {}, {}

    def keep(system, result, facet):
        per_query, groups[facet] = book.csfcube_per_query(result, inputs.csfcube.path, facet)
        systems.setdefault(system, {})[facet] = per_query

    if facets.untrained is not None:
        for facet in (*FACET_TO_ASPECT, "all"):
            keep("untrained encoder", facets.untrained, facet)
    for (name, run_seed), results in facets.scored.items():
        if run_seed == seed:
            for facet, aspect in FACET_TO_ASPECT.items():
                keep(f"{name}: head of the facet", results[aspect], facet)
    return {"groups": groups, "systems": systems}


def facet_verdicts(queries: Mapping, system: str, reference: str = "untrained encoder",
                   seed: int = 0) -> dict[str, tuple[str, str]]:
    """``system`` against ``reference`` on each CSFCube facet both were scored on (``queries`` as
    :func:`facet_queries` keeps them), MAP × 100 with a paired bootstrap interval over the facet's test queries
    within its two folds; one trained model, so conditional on it. ``{facet: (direction, sentence)}``
    (:func:`sdr.stats.direction`, :func:`sdr.stats.verdict`).

    Shown in: notebooks/sciaspect.ipynb, What this shows, and what it does not."""
    from sdr.stats import direction, paired_bootstrap, verdict

    ours, base = queries["systems"].get(system, {}), queries["systems"].get(reference, {})
    verdicts = {}
    for facet in [f for f in ours if f in base]:
        result = paired_bootstrap(ours[facet], base[facet], groups=queries["groups"][facet], seed=seed)
        what = (f"paired bootstrap over the facet's {result['queries']} test queries within their folds, one trained "
                "model: conditional on it")
        verdicts[facet] = (direction(result), verdict(f"{system} on {facet}", f"the {reference}", result,
                                                      resampled=what))
    return verdicts


def findings(run, inputs):
    """What this run measured at its profile and budget, written from the results it just stored
    (:func:`sdr.book.load_results`), as Markdown. Shown in: notebooks/sciaspect.ipynb, What this shows, and what it
    does not."""
    from IPython.display import Markdown

    stored = book.load_results(run.chapter, run.profile)[0]
    tables, extra = stored["tables"], stored["extra"]
    ours = tables["SciDocs (ours)"].set_index(["table", "model"])
    losses = tables["training"]
    untrained = ours.loc[("untrained", "untrained encoder")]
    trained = ours.drop(index=("untrained", "untrained encoder"))
    above = trained[trained["avg10"] > untrained["avg10"]]
    lines = [
        f"* Data: {', '.join(item.name + ' (' + item.kind + ')' for item in run.data.inputs.values())}; "
        f"{extra['budget']}.",
        # one run per row and no per-query scores kept: a count of point differences, not a ranking
        f"* SciDocs avg10, one run of each model: {len(above)} of {len(trained)} trained rows score higher than the "
        f"untrained encoder's {untrained['avg10']:.2f} (range {trained['avg10'].min():.2f}–"
        f"{trained['avg10'].max():.2f}). These are single runs' point differences with no interval (no per-query "
        "scores are kept for SciDocs here), not a ranking: any of them may be within noise. "
        f"SPECTERCL's gain on the mean of the eight ranking metrics {extra['scidocs_gain']['gain']:+.2f} (one run, "
        "likewise).",
        f"* The held-out probe's loss went down in {int((losses['loss after'] < losses['loss before']).sum())} "
        f"of {len(losses)} runs.",
    ]
    mdcr = tables["MDCR paper vs ours"]
    ours_mdcr = mdcr[mdcr["reported by"].str.startswith("this book")].set_index("model")["map"]
    lines.append(f"* MDCR MAP (AVG): untrained encoder {ours_mdcr['untrained encoder']:.2f}; "
                 + ", ".join(f"{m} {v:.2f}" for m, v in ours_mdcr.drop("untrained encoder").items()) + ".")
    table_6_11 = tables["SciRepEval Table 6.11"].set_index("row")
    ours_6_11 = table_6_11[[c for c in table_6_11.columns if "(this book" in c]]
    if not ours_6_11.empty:
        lines.append("* SciRepEval, Avg without SciDocs: " + ", ".join(
            f"{c.split(' (this book')[0]} {v:.2f}" for c, v in ours_6_11.loc["Avg without SciDocs"].items()) + ".")
    facet_map = tables["CSFCube facets"].set_index("system").filter(like="map")
    if "SciAspect: head of the facet" in facet_map.index and "untrained encoder" in facet_map.index:
        verdicts = facet_verdicts(extra["csfcube facet queries"], "SciAspect: head of the facet", seed=run.p.seed)
        sides = [side for side, _ in verdicts.values()]
        lines.append(f"* CSFCube ({inputs.csfcube.kind}), SciAspect's facet heads against the untrained encoder's MAP: "
                     f"above on {sides.count('above')}, below on {sides.count('below')}, within noise on "
                     f"{sides.count('within noise')} of {len(sides)} facet columns. "
                     + " ".join(sentence for _, sentence in verdicts.values()))
    seeds = tables["CSFCube seeds"]
    for _, line in (seeds.iterrows() if "MAP mean" in seeds else []):
        spread = (f" ± {line['MAP σ']:.2f} over seeds {line['seeds']}" if len(extra["leaderboard_seeds"]) > 1
                  else f" (seed {line['seeds']})")
        versus = (f"; {line['Δ vs untrained (this page)']:+.2f} [{line['95 % low']:+.2f}, {line['95 % high']:+.2f}] "
                  "from the untrained encoder scored here" if "95 % low" in line else "")
        lines.append(f"* {line['method']}: CSFCube MAP (all facets, × 100, {inputs.csfcube.kind}, "
                     f"{extra['csfcube_max_length']} tokens) {line['MAP mean']:.2f}{spread}{versus}.")
    if run.profile != "paper":
        lines.append("* This budget trains each model for a few optimizer steps: it shows that every sampler, objective "
                     "and evaluator runs end to end and that the rules hold, not the thesis' numbers; the `paper` "
                     "profile trains on the thesis' data for 2 epochs.")
    lines.append("* Not reproduced: SciAspectWeighted (Exp. 3.5, sentence attention over scispaCy sentences), a model "
                 "the thesis found worse than SciAspect (Table 6.4); its row is shown from the thesis only.")
    return Markdown("\n".join(lines))
