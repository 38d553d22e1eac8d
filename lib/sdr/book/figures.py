"""The chapters' figures, one call each (as d2l's ``d2l.plot``): a chapter's figure cell is tagged ``hide-input``
and carries its MyST caption in the cell's metadata; the line under the figure names the profile and the data that
produced it (``run.caption()``).

Shown in: every training chapter (training loss, metric bars, sweeps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd


def _finish(run, axis_or_figure, caption_y: float) -> None:
    import matplotlib.pyplot as plt

    plt.figtext(0.01, caption_y, run.caption(), fontsize=8)
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
    return history


def metric_bars(run, table: pd.DataFrame, metrics: Sequence[str], title: str, ylabel: str = "score (× 100)"):
    """One bar per (metric, model) of ``table`` (models as rows, metrics as columns); missing values left out."""
    import seaborn as sns

    long = table[list(metrics)].reset_index(names="model").melt(id_vars="model", var_name="metric",
                                                                  value_name="score")
    axis = sns.barplot(data=long.dropna(), x="metric", y="score", hue="model")
    axis.set(title=title, ylabel=ylabel, xlabel="")
    axis.tick_params(axis="x", rotation=45)
    _finish(run, axis, -0.12)
    return long


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
