"""The Summary chapter (notebooks/summary.ipynb): its parts and cost, and the book-wide plan it shows.

The Summary computes nothing of its own: it reads the results store the other chapters write (its steps are
:mod:`sdr.book.summary`). Its parts are the page's sections, all of them the default run; its cost plan has no
line of work. Its last section is the book-wide plan (:func:`book_plan`): what a ``paper`` run of each chapter
costs, part by part, and what a Colab T4 user can finish of it — the table ``python -m sdr.plan`` prints and the
README holds.

Shown in: notebooks/summary.ipynb.
"""

from __future__ import annotations

from sdr.plan import CostPlan, Part, resolve_parts

__all__ = ["PARTS", "cost_plan", "book_plan"]

PARTS = {
    "leaderboard": Part("leaderboard", "no paper table: the book's own leaderboard of every method on the real "
                                       "CSFCube and CSAbstruct, each read at one input length", headline=True),
    "tables": Part("tables", "every table the chapters stored beside the papers' rows (among them the Benchmarks "
                             "chapter's released models on the papers' benchmarks)", headline=True),
    "plan": Part("plan", "no paper table: what a paper run of each chapter costs, part by part (sdr.plan)",
                 headline=True),
}
"""The page's sections; it reads the results store, so every part is the default run and costs nothing."""


def cost_plan(p) -> CostPlan:
    """No line of work: the Summary reads the results store (the chapters' costs are theirs)."""
    return CostPlan("summary", getattr(p, "profile", "paper"), dict(PARTS), [],
                    resolve_parts(getattr(p, "parts", "all"), PARTS))


def book_plan(run):
    """Every chapter's cost at ``paper``, part by part, with the headline parts' and the whole chapter's totals
    and what a Colab T4 user can finish (:func:`sdr.plan.book_plan_table`; GPU hours from the measured throughput,
    the T4's scaled by peak and labelled so). The same table at every profile: it is the plan of a paper run.

    Shown in: notebooks/summary.ipynb, What a paper run costs."""
    from IPython.display import display

    from sdr import plan

    table = plan.book_plan_table("paper")
    print(f"GPU hours: training and encoding throughput measured on {plan.MEASURED_DEVICE}; the T4's scaled by the "
          "two GPUs' dense peak (not measured). A Colab session runs at most "
          f"{plan.COLAB_SESSION_HOURS} h; a longer part resumes from the checkpoints and cached embeddings on Drive.")
    display(table.set_index(["chapter", "part"]).round(2))
    return table
