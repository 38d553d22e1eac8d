"""The FLeW chapter's own figures, one call each (its cells are tagged ``hide-input`` with a MyST caption); the line
under each figure names the profile and the data that produced it.

Shown in: notebooks/flew.ipynb.
"""

from __future__ import annotations

import numpy as np


def _caption(run, source: str, y: float) -> None:
    import matplotlib.pyplot as plt

    from sdr import book

    book.figures.caption_under(book.caption(run.profile, [source]), y)
    plt.show()


def edge_weights(run, graph, source: str):
    """A count of the facet subgraphs' edges by weight |C_x(e)| (log scale), one bar colour per facet.

    Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs from the citation graph."""
    import seaborn as sns

    axis = sns.countplot(data=graph.edge_weights(), x="weight (contexts)", hue="facet")
    axis.set(title="Edge weights of the facet subgraphs", ylabel="edges", yscale="log")
    _caption(run, source, -0.04)


def weight_simplex(run, mdcr, system: str, source: str):
    """The validation score of every grid point of ``system``'s weight search on the simplex (a triangle with a
    corner per facet), the chosen point starred.

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks."""
    import matplotlib.pyplot as plt

    grid, chosen, height = mdcr.grids[system], mdcr.weights[system], np.sqrt(3) / 2
    figure, axis = plt.subplots(figsize=(5.5, 4.5))
    points = axis.scatter(grid["background"] + grid["method"] / 2, grid["method"] * height, c=grid["score"],
                          cmap="viridis", s=120)
    axis.scatter([chosen[0] + chosen[1] / 2], [chosen[1] * height], marker="*", s=300, color="red",
                 label=f"chosen {tuple(round(x, 2) for x in chosen)}")
    for label, (x, y) in {"result": (0, 0), "background": (1, 0), "method": (0.5, height)}.items():
        axis.annotate(label, (x, y), ha="center", va="top" if y == 0 else "bottom")
    axis.plot([0, 1, 0.5, 0], [0, 0, height, 0], color="grey", lw=0.8)
    figure.colorbar(points, label="MDCR val MAP (× 100)")
    step = run.p.weight_step
    axis.set(title=f"MDCR: validation MAP of {system} over the weight simplex (step {step})", xticks=[], yticks=[])
    axis.legend(loc="upper right", fontsize=8)
    _caption(run, source, -0.04)
