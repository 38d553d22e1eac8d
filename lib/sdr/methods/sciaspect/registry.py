"""The SciAspect chapter's registries: what it samples, trains and shows, said once; the chapter's steps, the
notebook and the tests read them.

:data:`SAMPLERS` (every sampler of Tables 6.3–6.7), :data:`TRAINED_ROWS` (which parameter of the notebook lists which
rows of which table, and what trains each row), :data:`NAMED_MODELS` (the thesis' named models and the row that
trains each; MDCR, SciRepEval, CSFCube and the leaderboard read them), :data:`PROJECTION_ROWS` (the rows of Tables
6.4 and 6.5 that a model's heads give) and :data:`SWEEPS` (the τ and α plots).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from sdr.methods.sciaspect.recipe import HYBRID_ALPHA, Run
from sdr.methods.sciaspect.sampling import (L2_CONFIGS, SCIASPECT_VARIANTS, SPECTERCL_VARIANTS, sciaspect_examples,
                                            sciaspect_hybrid_examples, sciaspect_l2_examples, specter_cl_examples)

__all__ = ["SAMPLERS", "RULE_LEVEL", "TableRows", "TRAINED_ROWS", "NAMED_MODELS", "CSFCUBE_MODELS", "MDCR_MODELS",
           "MDCR_CONCAT", "SCIDOCS_LEADERBOARD", "SCIREPEVAL_MODELS", "PROJECTION_ROWS", "THESIS_TABLES", "Sweep",
           "SWEEPS", "BOARD_EMBEDDINGS"]


#: Every sampler of Tables 6.3–6.7, (model, variant) → ``sampler(graph, **options)``. Each runs, and is checked
#: against the thesis' rules, at every profile; the profile's parameters choose which are trained (:data:`TRAINED_ROWS`).
SAMPLERS: dict[tuple[str, str], Callable] = {
    **{("SPECTERCL", v): partial(specter_cl_examples, variant=v) for v in SPECTERCL_VARIANTS},
    **{("SciAspect", v): partial(sciaspect_examples, variant=v) for v in SCIASPECT_VARIANTS},
    ("SciAspectHybrid", "5 local, 5 global"): sciaspect_hybrid_examples,
    **{("SciAspectL2", c): partial(sciaspect_l2_examples, config=c) for c in L2_CONFIGS},
}
#: The level of :func:`violations` each aspect model's instances are checked at (SPECTERCL has its own §5.1 rule).
RULE_LEVEL = {"SciAspect": "l1", "SciAspectHybrid": "l1", "SciAspectL2": "l2"}


def _alpha_label(alpha: float) -> str:
    return f"alpha = {alpha:g}" + (" (base)" if alpha == HYBRID_ALPHA else "")


@dataclass(frozen=True)
class TableRows:
    """The rows of a thesis table that one notebook parameter lists: each value's row label and the run that trains
    it (a run several rows share, as τ = 0.05 and the 1p 5n row, trains once)."""

    table: str
    label: Callable[[object], str]
    run: Callable[[object], Run]

    def rows(self, values: Sequence) -> dict[tuple[str, str], Run]:
        return {(self.table, self.label(value)): self.run(value) for value in values}


#: The trainable rows of Tables 6.3–6.7: the notebook parameter that lists them → their table, labels and runs (the
#: rows not listed are shown from the thesis only).
TRAINED_ROWS = {
    "specter_cl_variants": TableRows("Table 6.3", str, lambda variant: Run(("SPECTERCL", variant), "cl")),
    "temperatures": TableRows("Table 6.3", lambda tau: f"tau = {tau:g}",
                              lambda tau: Run(("SPECTERCL", "1 positive, 5 negatives"), "cl", tau)),
    "sciaspect_variants": TableRows("Table 6.4", str, lambda variant: Run(("SciAspect", variant), "aspect")),
    "alphas": TableRows("Table 6.6", _alpha_label,
                        lambda alpha: Run(("SciAspectHybrid", "5 local, 5 global"), "aspect", alpha=alpha)),
    "l2_configs": TableRows("Table 6.7", str, lambda config: Run(("SciAspectL2", config), "aspect")),
}

#: The thesis' named models and the table row that trains each.
NAMED_MODELS = {
    "SPECTERCL": ("Table 6.3", "1 positive, 5 negatives"),
    "SciAspect": ("Table 6.4", "1 positive, n negatives (w/o misc aspect)"),
    "SciAspectHybrid": ("Table 6.6", _alpha_label(HYBRID_ALPHA)),
    "SciAspect(L2)": ("Table 6.7", "SciAspect L2 negatives (3 hard negatives, 3 easy negatives)"),
}
#: The models ``csfcube_models`` may name beside "untrained": the chapter's rows on the Summary's leaderboard.
CSFCUBE_MODELS = ("SciAspect", "SciAspectHybrid")
#: The models MDCR scores (Table 6.10), and the one whose concatenated heads it scores too.
MDCR_MODELS = ("SPECTERCL", "SciAspect", "SciAspectHybrid")
MDCR_CONCAT = "SciAspectHybrid"
#: The models with a SciDocs leaderboard row where all 12 metrics are scored (``recommendations``).
SCIDOCS_LEADERBOARD = ("SPECTERCL", "SciAspect", "SciAspectHybrid")
#: What ``scirepeval_models`` may name (Table 6.11's columns): None is the untrained encoder.
SCIREPEVAL_MODELS = {"untrained": None, **NAMED_MODELS}
#: The rows of Tables 6.4 and 6.5 a trained model's heads give (eq. 5.2: one head; eq. 5.3: the three
#: concatenated): table → (the named model, its row repeated as this label or None, embedding → row label).
PROJECTION_ROWS = {
    "Table 6.4": ("SciAspect", None, {"method": "SciAspect (methodology)", "background": "SciAspect (background)",
                                      "result": "SciAspect (result)", "concat": "1 positive, n negatives (concat)"}),
    "Table 6.5": ("SciAspectHybrid", "base model",
                  {"method": "local loss w.r.t. methodology space", "background": "local loss w.r.t. background space",
                   "result": "local loss w.r.t. result space", "concat": "local loss w.r.t. concatenated embeddings"}),
}
#: The thesis' SciDocs tables set beside ours.
THESIS_TABLES = ("Table 6.3", "Table 6.4", "Table 6.5", "Table 6.6", "Table 6.7")
#: A leaderboard model's CSFCube rows: the embedding → the row's name.
BOARD_EMBEDDINGS = {"encoder": "{name}", "concat": "{name} (concat heads, eq. 5.3)"}


@dataclass(frozen=True)
class Sweep:
    """A swept parameter of a thesis table: its rows start with ``prefix`` and read ``"<prefix> = <value>…"``."""

    table: str
    prefix: str
    axis: str
    log: bool = False

    @staticmethod
    def value(label: str) -> float:
        return float(label.split("=")[1].split()[0])


#: The τ sweep of Table 6.3 (a peak at 0.05) and the α sweep of Table 6.6 (flat, best at 0.7).
SWEEPS = {"tau": Sweep("Table 6.3", "tau", "temperature τ (SPECTERCL, 1p 5n)", log=True),
          "alpha": Sweep("Table 6.6", "alpha", "α (SciAspectHybrid)")}
