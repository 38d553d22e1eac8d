"""The SciNCL chapter's own figures, one call each (the generic ones are :mod:`sdr.book.figures`); each cell is
tagged ``hide-input`` with its MyST caption, and the line under the figure names the profile and the data.

Shown in: notebooks/scincl.ipynb.
"""

from __future__ import annotations


def collisions(run, collisions) -> None:
    """Fig. 5: colliding pairs of the kNN bands against k⁻hard, SPECTER's sampling on the same graph as a line, and
    the positive band's k⁺ (:class:`sdr.methods.scincl.Collisions`).

    Shown in: notebooks/scincl.ipynb, Collisions against the sampling-induced margin (A.8, Fig. 5)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from sdr import book

    axis = sns.lineplot(data=collisions.table, x="k_hard", y="collisions", marker="o", label="SciNCL kNN bands")
    axis.axhline(collisions.specter, color="grey", linestyle="--", label="SPECTER sampling (same graph)")
    axis.axvline(collisions.bands.k_pos, color="green", alpha=0.4, label="k+ (positive band)")
    axis.set(title=f"Collisions vs. k-hard (k+ = {collisions.bands.k_pos}; {collisions.queries:,} queries)",
             xlabel="k_hard", ylabel="colliding pairs")
    axis.legend()
    book.figures.caption_under(run.caption(), -0.04)
    plt.show()
