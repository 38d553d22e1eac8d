"""Released models first (issue 32): the checkpoints FLeW reports, scored by inference on the benchmarks it reports
them on, beside its numbers, before anything trains.

:data:`RELEASED_CHECKS` is the registry (:class:`sdr.released.ReleasedCheck`): SPECTER and SciNCL on MDCR (Table 2's
average) and SciRepEval (Table 1's Total AVG), both asserted to ±0.3 (their setup is the benchmarks' own: title
[SEP] abstract, [CLS], 512 tokens); SPECTER-2's base model beside Table 1-2's SPECTER-2 row, unasserted (see
:data:`SPECTER2_WHY`); and each facet encoder of FLeW's two releases on SciRepEval beside Table 3's rows (w/ and w/o
Textual), asserted. FLeW's own row is a tuned weighted sum whose weights were never published, so it is not a
check: the chapter tunes the released encoders' sums as it tunes its own (section 4).

SciRepEval's Total AVG is compared as the mean of FLeW Table 1's columns present (:func:`flew_table1_columns`),
which is Total AVG itself when all 19 are there, as at ``paper``; a missing task changes the mean, so it fails the
check rather than passing unseen. The page's row shows how many columns it averaged.

Shown in: notebooks/flew.ipynb, "Released models first" (the first output at ``paper``).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from sdr.released import ReleasedCheck

__all__ = ["RELEASED_CHECKS", "SPECTER2_WHY", "flew_table1_columns", "released_models"]

FACET_FOLDERS = {"background": "FLeW-bg", "method": "FLeW-mt", "result": "FLeW-rs"}
#: Table 3's rows of each release's facet encoders: FLeW-split trained on split abstracts (w/ Textual), FLeW-full on
#: full ones (w/o Textual).
_TABLE3_ROW = {"Miracle-dz/FLeW-split": "{name} (w/ Textual)", "Miracle-dz/FLeW-full": "{name} (w/o Textual)"}

SPECTER2_WHY = ("FLeW does not say which SPECTER-2 it scored; SciRepEval scores SPECTER-2 with its task-format "
                "adapters (allenai/specter2 adapters), and the base model without an adapter is not that setup")


def flew_table1_columns(result: Mapping) -> dict[str, float]:
    """FLeW Table 1's columns of a SciRepEval result (:func:`sdr.methods.flew.flew_columns`), the metrics the
    SciRepEval checks compare."""
    from sdr.methods.flew.recipe import flew_columns

    return flew_columns(result)


_MDCR = {"avg/map": "map", "avg/recall_5": "recall_5"}
_SCIREPEVAL = {"avg over the columns present": "total_avg"}


def _checks() -> tuple[ReleasedCheck, ...]:
    checks = []
    for model, row in (("allenai/specter", "SPECTER"), ("malteos/scincl", "SciNCL")):
        checks.append(ReleasedCheck(model, "mdcr", "flew_table2", row, _MDCR, paper_where=(("field", "Avg"),)))
        checks.append(ReleasedCheck(model, "scirepeval", "flew_table1", row, _SCIREPEVAL,
                                    columns=flew_table1_columns))
    checks.append(ReleasedCheck("allenai/specter2_base", "mdcr", "flew_table2", "SPECTER-2", _MDCR,
                                paper_where=(("field", "Avg"),), tolerance=None, unasserted_because=SPECTER2_WHY,
                                adapter="none (base model)"))
    checks.append(ReleasedCheck("allenai/specter2_base", "scirepeval", "flew_table1", "SPECTER-2", _SCIREPEVAL,
                                columns=flew_table1_columns, tolerance=None, unasserted_because=SPECTER2_WHY,
                                adapter="none (base model)"))
    for release, row in _TABLE3_ROW.items():
        for facet, name in FACET_FOLDERS.items():
            checks.append(ReleasedCheck(release, "scirepeval", "flew_table3", row.format(name=name), _SCIREPEVAL,
                                        subfolder=facet, columns=flew_table1_columns))
    return tuple(checks)


#: The released checkpoints FLeW reports, on the benchmarks it reports them on (module docstring).
RELEASED_CHECKS = _checks()


def _facet_locations(run) -> dict[str, str]:
    """Each FLeW release's facet encoders where this run loads them (``ChapterData.model``: a stand-in in the dry
    run), located by the chapter's layout rule (:func:`sdr.methods.flew.released_facet_models`), by check label."""
    from sdr.methods.flew.recipe import released_facet_models

    located = {}
    for release in _TABLE3_ROW:
        folders = released_facet_models(run.data.model(release))
        located.update({f"{release}/{facet}": str(folder) for facet, folder in folders.items()})
    return located


def released_models(run, inputs) -> pd.DataFrame:
    """The chapter's first output at ``paper``: every check of :data:`RELEASED_CHECKS` scored through ``sdr evaluate
    all``'s path (embeddings cached), beside FLeW's number, the asserted rows held to ±0.3 before anything trains
    (:func:`sdr.released.released_part`). At smoke and real, one line saying the released models are scored at
    ``paper``.

    Shown in: notebooks/flew.ipynb, Released models first."""
    from sdr import released

    if not (run.data.policy.real_only and "released" in run.parts):  # released_part says why nothing is scored
        return released.released_part(run, RELEASED_CHECKS, {})
    data_dirs = {"mdcr": inputs.mdcr.path, "scirepeval": inputs.scirepeval.path}
    return released.released_part(run, RELEASED_CHECKS, data_dirs, load_as=_facet_locations(run))
