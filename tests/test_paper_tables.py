"""Checks of the numbers copied from the papers into ``data/paper_tables/*.csv``.

These files are transcriptions: a mistyped digit would silently become "the paper's result" in every
paper-vs-ours table. The papers print an average next to their metrics, so each row carries its own
checksum; and every file must say where each row comes from.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

PAPER_TABLES = Path(__file__).resolve().parents[1] / "data" / "paper_tables"
TABLES = sorted(PAPER_TABLES.glob("*.csv"))
ORIGIN_COLUMNS = ["source", "table", "model"]

#: The 12 SciDocs metrics (Cohan et al. 2020, Table 1 layout), as named in ``scidocs.csv``.
SCIDOCS_METRICS = ["mag_f1", "mesh_f1", "coview_map", "coview_ndcg", "coread_map", "coread_ndcg",
                   "cite_map", "cite_ndcg", "cocite_map", "cocite_ndcg", "recomm_ndcg", "recomm_p1"]

#: Printed values have 1-2 decimals and the printed average is itself rounded to 1 decimal (± 0.05).
AVERAGE_TOLERANCE = 0.05


def _read(path: Path) -> pd.DataFrame:
    # dtype=str for the origin columns keeps labels such as "01" as written
    return pd.read_csv(path, comment="#", dtype={"source": str, "table": str, "model": str, "note": str})


def test_there_are_paper_tables():
    assert TABLES, f"no paper tables in {PAPER_TABLES}"
    assert any(set(SCIDOCS_METRICS + ["avg"]) <= set(_read(p).columns) for p in TABLES)


@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_every_row_says_where_it_comes_from(path):
    table = _read(path)
    assert list(table.columns[:3]) == ORIGIN_COLUMNS, f"{path.name}: first columns must be {ORIGIN_COLUMNS}"
    assert table.columns[-1] == "note", f"{path.name}: last column must be 'note'"
    assert len(table) > 0, f"{path.name}: no rows"
    for column in ORIGIN_COLUMNS:
        empty = table.index[table[column].isna() | (table[column].str.strip() == "")].tolist()
        assert not empty, f"{path.name}: empty {column!r} in data rows {[i + 1 for i in empty]}"


@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_no_unexplained_empty_metric_cells(path):
    """An empty value cell is accepted when its whole column is empty within the row's (source, table)
    group — that table does not report the quantity (e.g. the CFS3 label table has no phrase counts) —
    or when the row's ``note`` explains it. A gap in a column the same table fills elsewhere, with no
    note, is a transcription slip."""
    table = _read(path)
    metrics = [c for c in table.columns if c not in ORIGIN_COLUMNS + ["note"]]
    assert metrics, f"{path.name}: no value columns"
    has_note = table["note"].fillna("").str.strip() != ""
    problems = []
    for _, group in table.groupby(["source", "table"], sort=False):
        reported = [c for c in metrics if group[c].notna().any()]
        for index, row in group.iterrows():
            missing = [c for c in reported if pd.isna(row[c])]
            if missing and not has_note[index]:
                problems.append(f"data row {index + 1} ({row['model']}): {missing}")
            if not any(pd.notna(row[c]) for c in metrics):
                problems.append(f"data row {index + 1} ({row['model']}): no value at all")
    assert not problems, f"{path.name}: empty cells without a note: {problems}"


SCIDOCS_FILES = [p for p in TABLES if set(SCIDOCS_METRICS + ["avg"]) <= set(_read(p).columns)]


@pytest.mark.parametrize("path", SCIDOCS_FILES, ids=[p.name for p in SCIDOCS_FILES])
def test_scidocs_average_matches_the_twelve_metrics(path):
    """Each row's ``avg`` equals the mean of its 12 SciDocs metrics within the printed rounding.

    This checks the *transcription*: the papers print the average of the same 12 numbers, so a digit
    mistyped in any metric (or in the average) moves the recomputed mean away from the printed one by
    more than the ± 0.05 that rounding the printed average to one decimal can explain.
    """
    table = _read(path)
    values = table[SCIDOCS_METRICS].apply(pd.to_numeric, errors="raise")
    complete = values.notna().all(axis=1) & table["avg"].notna()
    assert complete.any(), f"{path.name}: no row with all 12 metrics and an average"
    mean = values[complete].mean(axis=1)
    difference = (mean - table.loc[complete, "avg"]).abs()
    wrong = [f"data row {i + 1} ({table.at[i, 'source']}, {table.at[i, 'model']}): mean of the 12 = "
             f"{mean[i]:.3f}, printed avg = {table.at[i, 'avg']}" for i in difference.index[difference > AVERAGE_TOLERANCE]]
    assert not wrong, f"{path.name}: {wrong}"
    # rows without the full set of metrics must say why
    incomplete = table.index[~complete & table["note"].fillna("").str.strip().eq("")].tolist()
    assert not incomplete, f"{path.name}: rows {[i + 1 for i in incomplete]} lack metrics or avg and have no note"


def test_the_average_check_catches_a_typo():
    """A single mistyped digit (82.0 → 28.0 in SPECTER's MAG F1) moves the mean by 4.5: caught."""
    row = dict(zip(SCIDOCS_METRICS, [82.0, 86.4, 83.6, 91.5, 84.5, 92.4, 88.3, 94.9, 88.1, 94.8, 53.9, 20.0]))
    mean = sum(row.values()) / 12
    assert abs(mean - 80.0) <= AVERAGE_TOLERANCE  # SciNCL Table 1, SPECTER: avg 80.0
    row["mag_f1"] = 28.0
    assert abs(sum(row.values()) / 12 - 80.0) > AVERAGE_TOLERANCE
