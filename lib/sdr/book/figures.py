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


# ------------------------------------------------------------------------------------ CoSaEmb (notebooks/cosaemb.ipynb)
def paper_vs_ours_bars(run, table: pd.DataFrame, title: str, value_name: str = "score (× 100)",
                       sources: Sequence[str] | None = None):
    """A paper-vs-ours table (:func:`sdr.book.results.paper_vs_ours`: ``reported by``, ``model``, metric columns) as
    horizontal bars, one panel per metric, one bar per row coloured by who reported it; the title carries the
    caption of ``sources`` (default: the run's data). Shown in: notebooks/cosaemb.ipynb, Paragraph retrieval."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from sdr.book.sources import caption

    long = table.melt(id_vars=["reported by", "model"], var_name="metric", value_name=value_name)
    grid = sns.catplot(data=long, kind="bar", x=value_name, y="model", hue="reported by", col="metric",
                       height=max(3.5, 0.4 * len(table)), aspect=1.1, dodge=False)
    lines = run.sources if sources is None else list(sources)
    grid.figure.suptitle(f"{title} — {caption(run.profile, lines)}", y=1.03, fontsize=9)
    plt.show()
    return long
