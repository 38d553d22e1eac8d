"""What the SciToricsBERT chapter shows next to the paper, one call each: Table 4's and Table 3's rows (ours under the
paper's, through :func:`sdr.book.show_paper_vs_ours`), the seeds' intervals, the figures (validation curves, the
losses' bars, Figures 3 and 4), Table 6's settings, and the page's reading of the run. The steps that compute what
these show are in :mod:`.chapter`; the checks of invariants raise :class:`sdr.book.ChapterCheckFailed`.
Shown in: notebooks/scitoricsbert.ipynb.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed
from sdr.methods.scitoricsbert.chapter import (Baselines, ChapterInputs, GoldCheck, LabelExperiment, TrainedRuns,
                                               TrainingSets)
from sdr.methods.scitoricsbert.fidelity import table3_pairs, table4_pairs
from sdr.methods.scitoricsbert.recipe import (CF_SECTIONS, LOSSES, PAPER_MODEL_NAMES, pk_shape, seed_intervals,
                                              settings_table)

__all__ = ["TABLE4_METRICS", "validation_curves", "table4_rows", "table4_next_to_paper", "loss_bars",
           "SeedIntervals", "intervals_over_seeds", "table3_rows", "table3_next_to_paper", "label_curves", "table6",
           "pk_batches_line", "findings"]

#: Table 4's columns (CSAbstruct and PubMed-RCT test, P@1 and MAP@R).
TABLE4_METRICS = ["csabstruct_p@1", "csabstruct_map@r", "pubmedrct_p@1", "pubmedrct_map@r"]
TABLE4_SOURCE = "SciToricsBERT Table 4 (paper rows, SciBERT, 5 seeds, full CFS3)"
TABLE3_SOURCE = "SciToricsBERT Table 3 (paper rows)"

# ------------------------------------------------------------------------------------------------- figures of training
def validation_curves(run, trained: TrainedRuns) -> None:
    """Validation MAP@R after each epoch, per loss, one panel per training set.
    Shown in: notebooks/scitoricsbert.ipynb, Training."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    if trained.validation.empty:
        print("no model trained at these parts: no validation curve")
        return
    grid = sns.relplot(data=trained.validation, x="epoch", y="validation MAP@R", hue="loss", col="training set",
                       kind="line", marker="o", height=3.2, aspect=1.2, facet_kws={"sharey": False})
    grid.figure.suptitle("Validation MAP@R after each epoch (the best epoch is kept)", y=1.03)
    book.figures.caption_under(run.caption(), -0.06)
    plt.show()


# ------------------------------------------------------------------------------------------------- Table 4
def _in_unit_interval(table: pd.DataFrame, what: str) -> None:
    if not (table.notna().all().all() and ((table >= 0) & (table <= 1)).all().all()):
        raise ChapterCheckFailed(f"{what}: a score is missing or outside [0, 1]:\n{table}")


def table4_rows(baselines: Baselines, trained: TrainedRuns) -> pd.DataFrame:
    """Our rows of Table 4: the baselines, then each loss × training set (the mean over its seeds). Checked: every
    score is in [0, 1]. Shown in: notebooks/scitoricsbert.ipynb, CSAbstruct test: ours next to Table 4."""
    ours = pd.DataFrame(baselines.scores).T
    for (data_name, loss), row in trained.means.iterrows():
        ours.loc[f"{PAPER_MODEL_NAMES[loss]} · {data_name}"] = [row["p@1"], row["map@r"], row["pubmedrct p@1"],
                                                                 row["pubmedrct map@r"]]
    _in_unit_interval(ours[TABLE4_METRICS], "Table 4 (ours)")
    return ours


def table4_next_to_paper(run, inputs: ChapterInputs, sets: TrainingSets, ours: pd.DataFrame, baselines: Baselines,
                         trained: TrainedRuns) -> pd.DataFrame:
    """Table 4's paper rows over ours (:func:`sdr.book.show_paper_vs_ours`), what the data policy says of our
    PubMed-RCT columns, then which of our rows pair with a paper row under the one rule (:func:`table4_pairs`: same
    data, model and protocol), each pair with its difference, every other row apart with the reason.
    Shown in: notebooks/scitoricsbert.ipynb, CSAbstruct test: ours next to Table 4."""
    from IPython.display import display

    comparison = book.show_paper_vs_ours(run, ours, "scitoricsbert_table4", columns=TABLE4_METRICS, decimals=3,
                                         label=f"this book ({run.profile}, {inputs.model_label})",
                                         sources=[TABLE4_SOURCE, *run.data.model_sources])
    if not inputs.pubmed_test.real:
        print("PubMed-RCT columns of our rows: the replica (synthetic abstracts), not comparable with the paper's "
              "numbers")
    for test, pairs in table4_pairs(run, inputs, sets, ours, baselines, trained).items():
        print(f"{test}: our rows paired with Table 4's where data, model and protocol are the paper's "
              f"({int(pairs['pairs'].sum())} of {len(pairs)}); the others apart, with the reason")
        display(pairs.round(3))
    return comparison


def loss_bars(run, trained: TrainedRuns, ours: pd.DataFrame) -> None:
    """CSAbstruct test P@1 and MAP@R of every loss × training set, with the untrained baselines and the paper's
    softmax row as lines. Shown in: notebooks/scitoricsbert.ipynb, CSAbstruct test: ours next to Table 4."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    if trained.runs.empty:
        print("no model trained at these parts: no bars")
        return
    paper4 = book.read_paper_table("scitoricsbert_table4")
    plot = trained.means.reset_index().melt(id_vars=["training set", "loss"], value_vars=["p@1", "map@r"],
                                            var_name="metric", value_name="score")
    plot["metric"] = plot["metric"].map({"p@1": "P@1", "map@r": "MAP@R"})
    grid = sns.catplot(data=plot, kind="bar", x="loss", y="score", hue="training set", col="metric",
                       height=3.4, aspect=1.3, sharey=False)
    for axis, metric in zip(grid.axes.flat, ["csabstruct_p@1", "csabstruct_map@r"]):
        for (name, row), style in zip(ours.iloc[:2].iterrows(), (":", "--")):
            axis.axhline(row[metric], color="black", linestyle=style, linewidth=1, label=name)
        softmax = paper4.loc[paper4["model"] == PAPER_MODEL_NAMES["softmax"], metric].iloc[0]
        axis.axhline(softmax, color="tab:red", linewidth=1, label="paper: softmax on CFS3 (SciBERT)")
        axis.tick_params(axis="x", rotation=30)
    grid.axes.flat[0].legend(fontsize=7, loc="lower left")
    grid.figure.suptitle("CSAbstruct test: five losses × two training sets (lines: untrained baselines, paper)", y=1.03)
    book.figures.caption_under(run.caption(), -0.08)
    plt.show()


# ------------------------------------------------------------------------------------------------- seeds
@dataclass
class SeedIntervals:
    """Per model: CSAbstruct test MAP@R mean ± σ over its seeds and its difference from untrained [CLS] with a
    paired bootstrap 95 % interval over test sentences."""

    table: pd.DataFrame
    line: str

    def view(self) -> pd.DataFrame:
        """The table as the page shows it: σ left out ("NaN") for a model trained once."""
        return self.table.assign(σ=self.table["σ"].where(self.table["seeds"] > 1)).set_index(["training set", "loss"])

    def describe(self) -> str:
        return self.line


def intervals_over_seeds(run, sets: TrainingSets, trained: TrainedRuns, baselines: Baselines) -> SeedIntervals:
    """:func:`seed_intervals` against untrained [CLS] (the same sentences at the same length). Checked: every model
    has at least ``leaderboard_seeds`` seeds and its difference lies inside its interval.
    Shown in: notebooks/scitoricsbert.ipynb, Seeds and the untrained encoder."""
    p = run.p
    table = seed_intervals(trained.runs, trained.per_query, baselines.per_query[baselines.untrained_cls], seed=p.seed)
    if not (table["seeds"] >= p.leaderboard_seeds).all():
        raise ChapterCheckFailed(f"a model has fewer than {p.leaderboard_seeds} seeds:\n{table}")
    inside = (table["95 % low"] <= table["Δ vs untrained [CLS]"]) & (table["Δ vs untrained [CLS]"] <= table["95 % high"])
    if not inside.all():
        raise ChapterCheckFailed(f"a difference outside its own bootstrap interval:\n{table[~inside]}")
    untrained = baselines.scores[baselines.untrained_cls]["csabstruct_map@r"]
    line = (f"untrained [CLS]: MAP@R {untrained:.3f} on the same {len(sets.test_items):,} sentences at {p.max_length} "
            f"tokens; {p.leaderboard_seeds} seed{'s' if p.leaderboard_seeds > 1 else ''} a model (the check's model: "
            f"{max(p.leaderboard_seeds, p.check_seeds)})")
    return SeedIntervals(table, line)


# ------------------------------------------------------------------------------------------------- Table 3
def _table3_metrics() -> list[str]:
    return [c for c in book.read_paper_table("scitoricsbert_table3").columns if c.endswith(("p@1", "map@r"))]


def table3_rows(baselines: Baselines, trained: TrainedRuns) -> pd.DataFrame:
    """Our rows of Table 3: the baselines, then each loss × training set (the mean over the seeds scored on the
    CF-labelled set). Checked: every score in [0, 1]; Avg. is the mean of the four sections, as the paper's column.
    Shown in: notebooks/scitoricsbert.ipynb, Table 3: the CF-labelled sentences."""
    metrics = _table3_metrics()
    ours = pd.DataFrame(baselines.cf).T
    for (data_name, loss), row in trained.cf_runs.groupby(["training set", "loss"], sort=False)[metrics].mean().iterrows():
        ours.loc[f"{PAPER_MODEL_NAMES[loss]} · {data_name}"] = row
    _in_unit_interval(ours[metrics], "Table 3 (ours)")
    for name, scores in baselines.cf.items():
        if abs(scores["avg_map@r"] - np.mean([scores[f"{s}_map@r"] for s in CF_SECTIONS])) >= 1e-12:
            raise ChapterCheckFailed(f"{name}: Table 3's Avg. MAP@R is not the mean of the four sections")
    return ours


def table3_next_to_paper(run, inputs: ChapterInputs, sets: TrainingSets, ours: pd.DataFrame, baselines: Baselines,
                         trained: TrainedRuns) -> pd.DataFrame:
    """Table 3's paper rows over ours (:func:`sdr.book.show_paper_vs_ours`); our rows are labelled a REPLICA, not
    comparable, where the data policy scored the CF-labelled replica; then the rows the one rule pairs with Table 3's
    (:func:`table3_pairs`), the others apart with the reason.
    Shown in: notebooks/scitoricsbert.ipynb, Table 3: the CF-labelled sentences."""
    from IPython.display import display

    label = f"this book ({run.profile}, {inputs.model_label})"
    comparison = book.show_paper_vs_ours(run, ours, "scitoricsbert_table3", columns=_table3_metrics(), decimals=3,
                                         label=label if inputs.cf_input.real else f"{label}, CF REPLICA: not comparable",
                                         sources=[TABLE3_SOURCE, *run.data.model_sources])
    if not inputs.cf_input.real:
        print("Our rows: the CF-labelled REPLICA (synthetic sentences), not comparable with the paper's numbers; the "
              "real set is scored when found ($SDR_DATA/cf_sentences; required at paper)")
    pairs = table3_pairs(run, inputs, sets, ours, baselines, trained)
    print(f"our rows paired with Table 3's where data, model and protocol are the paper's ({int(pairs['pairs'].sum())} "
          f"of {len(pairs)}); the others apart, with the reason")
    display(pairs.round(3))
    return comparison


def label_curves(run, experiment: LabelExperiment) -> None:
    """P@1 (Figure 3) and MAP@R (Figure 4) by the number of training labels, per loss (mean over seeds), with the
    untrained baselines as lines. Shown in: notebooks/scitoricsbert.ipynb, Training on 10, 20 or 40 labels."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    curve = experiment.curve
    if curve.empty:
        print("no model trained on CFS3 at these parts: no label curve")
        return
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for axis, (metric, title) in zip(axes, (("p@1", "P@1 (Figure 3)"), ("map@r", "MAP@R (Figure 4)"))):
        sns.lineplot(data=curve, x="training labels", y=metric, hue="loss", marker="o", errorbar=None, ax=axis)
        for (name, row), style in zip(experiment.evaluation.untrained.items(), (":", "--")):
            axis.axhline(row[metric], color="black", linestyle=style, linewidth=1, label=name)
        axis.set_xticks(sorted(curve["training labels"].unique()))
        axis.set_title(title)
        axis.set_ylabel(title.split(" (")[0])
    axes[0].legend(fontsize=7)
    if axes[1].get_legend():
        axes[1].get_legend().remove()
    fig.suptitle(f"Training on a random subset of CFS3's labels, scored on {experiment.evaluation.name}\n"
                 "(mean over seeds; the right end: all labels; lines: untrained baselines)", y=1.06, fontsize=10)
    fig.tight_layout()
    book.figures.caption_under(run.caption(experiment.source), -0.02, fontsize=7)
    plt.show()


# ------------------------------------------------------------------------------------------------- settings
def table6() -> pd.DataFrame:
    """:func:`settings_table`, checked: every value this book trains with is the one Table 6 reports (•).
    Shown in: notebooks/scitoricsbert.ipynb, What differs from the paper, and why."""
    settings = settings_table()
    differ = settings[settings["paper (Table 6, •)"] != settings["this book"]]
    if len(differ):
        raise ChapterCheckFailed(f"loss settings that differ from Table 6's reported values:\n{differ}")
    return settings


def pk_batches_line() -> str:
    return "PK batches (Appendix B): " + ", ".join("{} {} × {}".format(loss, *pk_shape(loss)) for loss in LOSSES)


# ------------------------------------------------------------------------------------------------- findings
def findings(run, inputs: ChapterInputs, sets: TrainingSets, baselines: Baselines, trained: TrainedRuns,
             intervals: SeedIntervals, gold: GoldCheck, ours3: pd.DataFrame, experiment: LabelExperiment) -> str:
    """The page's reading of this run, written from its own results (the paper's numbers from its tables).
    Shown in: notebooks/scitoricsbert.ipynb, What differs from the paper, and why."""
    from sdr import datasets

    p = run.p
    cls_row, mean_row = baselines.scores[baselines.untrained_cls], baselines.scores[baselines.untrained_mean]
    on_csabstruct = trained.means["map@r"]
    paper4 = book.read_paper_table("scitoricsbert_table4").set_index("model")
    dry = " (paper dry run: fixtures and stand-ins)" if datasets.dry_run() else ""
    seeds = f"{p.leaderboard_seeds} seed{'s' if p.leaderboard_seeds > 1 else ''}"
    table = intervals.table
    named = table["loss"] + " on " + table["training set"]
    above = named[table["excludes 0"] & (table["Δ vs untrained [CLS]"] > 0)].tolist()
    below = named[table["excludes 0"] & (table["Δ vs untrained [CLS]"] < 0)].tolist()
    noise = named[~table["excludes 0"]].tolist()
    trained3 = ours3.iloc[len(baselines.cf):]["avg_map@r"]  # the trained rows (the baselines come first)
    label_curve = experiment.curve.groupby("training labels")["map@r"].mean()
    check_summary = gold.summary.iloc[:, 0]
    elapsed = time.perf_counter() - inputs.started

    def reached(data_name: str) -> str:
        if data_name not in on_csabstruct.index.get_level_values(0):
            return "not trained at these parts"
        scores = on_csabstruct.loc[data_name]
        return f"{scores.min():.3f}–{scores.max():.3f} (best: {scores.idxmax()})"

    check_line = (f"* The check: {p.check_loss} trained on {sets.check_set} gains {gold.gain:+.3f} over untrained [CLS] "
                  f"in {gold.summary.columns[0]} ({gold.seeds} seed{'s' if gold.seeds > 1 else ''}), against a margin "
                  f"of {check_summary['margin (2 σ, measured)']:.3f}." if gold.seeds else
                  f"* The check was not applied: {gold.why_not}.")
    trained_range = (f"the trained rows range {trained3.min():.3f}–{trained3.max():.3f}" if len(trained3) else
                     "no trained row at these parts")
    label_line = (f"* The label experiment, scored on {experiment.evaluation.name}: MAP@R by number of training labels "
                  + ", ".join(f"{int(n)}: {v:.3f}" for n, v in label_curve.items())
                  + f" (untrained [CLS]: {experiment.evaluation.untrained[baselines.untrained_cls]['map@r']:.3f})."
                  if len(experiment.runs) else "* The label experiment (§4.3) did not run at these parts.")
    lines = [
        f"* On CSAbstruct test ({inputs.csabstruct_test.kind}{dry}, {len(sets.test_items):,} sentences), the "
        f"untrained [CLS] encoder reaches MAP@R {cls_row['csabstruct_map@r']:.3f} and its mean pooling "
        f"{mean_row['csabstruct_map@r']:.3f}. Trained on CSAbstruct's gold roles, the losses reach "
        f"{reached('CSAbstruct train')}; trained on CFS3 ({inputs.cfs3_set.origin}), {reached('CFS3')}. The paper's "
        f"SciBERT runs: softmax {paper4.loc[PAPER_MODEL_NAMES['softmax'], 'csabstruct_map@r']:.3f} against SciBERT "
        f"avg. {paper4.loc['SciBERT avg.', 'csabstruct_map@r']:.3f}.",
        f"* Against untrained [CLS] on CSAbstruct test ({seeds} a model, paired 95 % intervals over its sentences): "
        f"of {len(table)} trained models, {len(above)} {'is' if len(above) == 1 else 'are'} above it with an interval "
        f"that excludes 0 ({', '.join(above) or 'none'}), {len(below)} below it ({', '.join(below) or 'none'}), and "
        f"{len(noise)} within noise.",
        check_line,
        f"* Table 3 ({'the CF-labelled set' + dry if inputs.cf_input.real else 'the CF replica, not comparable'}): "
        f"untrained [CLS] averages MAP@R {baselines.cf[baselines.untrained_cls]['avg_map@r']:.3f}, mean pooling "
        f"{baselines.cf[baselines.untrained_mean]['avg_map@r']:.3f}; {trained_range}.",
        label_line,
        f"* This chapter ran {elapsed / 60:.1f} min at profile `{run.profile}` ({len(trained.runs)} trainings, "
        f"{len(experiment.runs)} label-subset runs) on {book.environment_line()}.",
    ]
    return "\n".join(lines)
