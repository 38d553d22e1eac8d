"""The chapters' figures, one call each (as d2l's ``d2l.plot``): a chapter's figure cell is tagged ``hide-input``
and carries its MyST caption in the cell's metadata; the line under the figure names the profile and the data that
produced it (``run.caption()``). Each function draws and shows its figure and returns nothing, so a figure cell's
only output is the figure (MyST-NB wraps every output of a captioned cell in the figure).

Shown in: every training chapter (training loss, metric bars, sweeps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd


def caption_under(text: str, y: float = -0.02, figure=None, fontsize: int = 8):
    """The line under a figure that names the profile and the data (``run.caption()``), wrapped to the figure's
    width: one long unwrapped line would widen the saved figure (``bbox_inches="tight"``) and shrink the plot on the
    page. Placed from ``y`` (figure coordinates) downwards."""
    import textwrap

    import matplotlib.pyplot as plt

    figure = figure or plt.gcf()
    characters = max(40, int(figure.get_figwidth() * 72 / (0.55 * fontsize)))  # ~0.55 em a character
    return figure.text(0.01, y, textwrap.fill(text, characters), fontsize=fontsize, va="top")


def _finish(run, axis_or_figure, caption_y: float) -> None:
    import matplotlib.pyplot as plt

    caption_under(run.caption(), caption_y)
    plt.show()


def training_loss(run, fits: Mapping, window: int = 5,
                  title: str = "Training loss (triplet, L2, margin 1; rolling mean over 5 steps)"):
    """Each run's loss per optimizer step, smoothed by a rolling mean over ``window`` steps."""
    import seaborn as sns

    history = pd.concat([fit.history for fit in fits.values()], ignore_index=True)
    history["smoothed loss"] = history.groupby("model")["loss"].transform(
        lambda s: s.rolling(window, min_periods=1).mean())
    axis = sns.lineplot(data=history, x="step", y="smoothed loss", hue="model")
    axis.set(title=title, xlabel="optimizer step")
    _finish(run, axis, -0.04)


def metric_bars(run, table: pd.DataFrame, metrics: Sequence[str], title: str, ylabel: str = "score (× 100)"):
    """One bar per (metric, model) of ``table`` (models as rows, metrics as columns); missing values left out."""
    import seaborn as sns

    long = table[list(metrics)].reset_index(names="model").melt(id_vars="model", var_name="metric",
                                                                  value_name="score")
    axis = sns.barplot(data=long.dropna(), x="metric", y="score", hue="model")
    axis.set(title=title, ylabel=ylabel, xlabel="")
    axis.tick_params(axis="x", rotation=45)
    sns.move_legend(axis, "upper left", bbox_to_anchor=(1.01, 1), frameon=False)  # beside the bars, not over them
    _finish(run, axis, -0.12)


# ------------------------------------------------------------------------------------------------ benchmarks chapter
def _grid_title(grid, text: str) -> None:
    import matplotlib.pyplot as plt

    grid.figure.suptitle(text, y=1.02, fontsize=9)
    plt.show()


def facet_bars(run, table: pd.DataFrame, metrics: Sequence[str], title: str,
               xlabel: str = "score (× 100, test)"):
    """CSFCube scores per system and facet, one panel per metric: ``table`` indexed by (system, facet), one column
    per metric, already on the page's scale. The title carries the run's caption.

    Shown in: notebooks/benchmarks.ipynb, CSFCube: faceted query by example."""
    import seaborn as sns

    long = table[list(metrics)].reset_index().melt(id_vars=["system", "facet"], var_name="metric",
                                                   value_name="score")
    systems = table.index.get_level_values("system").nunique()
    grid = sns.catplot(data=long, kind="bar", x="score", y="system", hue="facet", col="metric",
                       height=max(4, 0.45 * systems), aspect=1.1, sharex=False)
    grid.set_axis_labels(xlabel, "")
    _grid_title(grid, f"{title} — {run.caption()}")


def paper_vs_ours_bars(run, table: pd.DataFrame, title: str, metrics: Mapping[str, str] | None = None,
                       value_name: str = "score", sources: Sequence[str] | None = None):
    """A paper-vs-ours table (:func:`sdr.book.paper_vs_ours`: ``reported by``, ``model``, metric columns) as
    horizontal bars, one panel per metric (``metrics``: column → panel name; default every metric column), the
    papers' rows and ours coloured apart; empty cells left out. The title carries the caption of ``sources``
    (default: the run's data).

    Shown in: notebooks/benchmarks.ipynb, Sentence retrieval by rhetorical role (CSAbstruct); notebooks/cosaemb.ipynb,
    Paragraph retrieval."""
    import seaborn as sns

    from sdr.book.sources import caption

    columns = list(metrics) if metrics is not None else [c for c in table.columns if c not in ("reported by", "model")]
    long = table.melt(id_vars=["reported by", "model"], value_vars=columns, var_name="metric",
                      value_name=value_name).dropna()
    if metrics is not None:
        long["metric"] = long["metric"].map(dict(metrics))
    grid = sns.catplot(data=long, kind="bar", x=value_name, y="model", hue="reported by", col="metric",
                       height=max(3.5, 0.4 * len(table)), aspect=1.1, dodge=False)
    lines = run.sources if sources is None else list(sources)
    _grid_title(grid, f"{title} — {caption(run.profile, lines)}")


def system_bars(run, table: pd.DataFrame, title: str, xlabel: str = "score (× 100)"):
    """One horizontal bar per (system, metric) of ``table`` (systems as rows, metrics as columns, on the page's
    scale).

    Shown in: notebooks/benchmarks.ipynb, Paragraph retrieval (CoSaEmb Table 6 set-up)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    long = table.reset_index(names="system").melt(id_vars="system", var_name="metric", value_name="score")
    axis = sns.barplot(data=long, x="score", y="system", hue="metric")
    axis.set(xlabel=xlabel, ylabel="", title=title)
    plt.show()


# ------------------------------------------------------------------------------------------------- sciaspect
# Appended for the SciAspect chapter (issue 31); generic: any chapter training many runs or reading a paper's sweeps.
def loss_per_run(run, history: pd.DataFrame, title: str = "Training loss of every run (one line per model)"):
    """Every run's loss per optimizer step, one line per run (``history``: columns ``step``, ``loss``, ``model``),
    without a legend: for chapters that train many runs, whose names the loss table beside it gives.
    Shown in: notebooks/sciaspect.ipynb, Training: every model with the same budget."""
    import seaborn as sns

    axis = sns.lineplot(data=history, x="step", y="loss", hue="model", legend=False)
    axis.set(title=title, xlabel="optimizer step")
    _finish(run, axis, -0.04)


def sweeps(run, curves: Mapping[str, pd.DataFrame], log_x: Sequence[str] = (), ylabel: str = "score"):
    """A paper's sweeps beside ours: one column per swept parameter (``curves``: its axis label → a frame with
    ``value``, ``score`` and ``reported by``), one row per reporter (the paper's printed scores above ours, each on
    its own scale: the shapes compare, the levels need not). The axis labels in ``log_x`` get a log scale.
    Shown in: notebooks/sciaspect.ipynb, The τ and α sweeps."""
    import matplotlib.pyplot as plt

    rows = max(frame["reported by"].nunique() for frame in curves.values())
    figure, axes = plt.subplots(rows, len(curves), figsize=(5 * len(curves), 3 * rows), sharex="col", squeeze=False)
    for column, (name, frame) in enumerate(curves.items()):
        for row, reporter in enumerate(frame["reported by"].unique()):
            part = frame[frame["reported by"] == reporter].sort_values("value")
            axes[row, column].plot(part["value"], part["score"], marker="o", color=f"C{row}")
            axes[row, column].set(title=reporter, ylabel=ylabel, xscale="log" if name in log_x else "linear")
        axes[rows - 1, column].set_xlabel(name)
    figure.tight_layout()
    _finish(run, figure, -0.03)


# ------------------------------------------------------------------------------------------------- SciNCL
def sweep_lines(run, table: pd.DataFrame, x: str, y: str, column: str, title: str, log_x: bool = True) -> None:
    """A sweep: ``y`` against ``x``, one panel per value of ``column`` (mean ± σ over the rows of a point, e.g.
    its seeds), x on a log scale. Prints a line instead of an empty figure when ``table`` has no row.

    Shown in: notebooks/scincl.ipynb, Figs. 2 and 3: where the bands should sit."""
    import seaborn as sns
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    if table.empty:
        print(f"{title}: no point ran at this profile.")
        return
    grid = sns.relplot(data=table, x=x, y=y, col=column, kind="line", marker="o", errorbar="sd",
                       facet_kws={"sharex": False, "sharey": False}, height=3.2)
    for value, axis in grid.axes_dict.items():
        axis.set_xscale("log" if log_x else "linear")
        axis.set_xticks(sorted(table.loc[table[column] == value, x].unique()))  # the points swept, as plain numbers
        axis.xaxis.set_major_formatter(ScalarFormatter())
        axis.xaxis.set_minor_formatter(NullFormatter())
    grid.figure.suptitle(title, y=1.05)
    _finish(run, grid, -0.06)
