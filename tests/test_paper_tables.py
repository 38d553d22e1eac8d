"""Checks of the numbers copied from the papers into ``data/paper_tables/*.csv``.

These files are transcriptions: a mistyped digit would silently become "the paper's result" in every
paper-vs-ours table. So every number of every row is looked up in the paper's own text
(``/work/shared/papers/*.txt``, found as ``../shared/papers`` beside the checkout or via ``$SDR_PAPERS``),
and a copy of each file with any single number changed must fail that check. The SciDocs rows also carry
their printed average as a checksum, which holds without the papers; and every file must say where each
row comes from.

The convention the text check relies on (see also the team rules):

* ``# paper: <file>.txt`` comment lines at the top name the paper file(s) the rows come from;
* values exactly as printed (same units and decimals; ``.445`` may be written ``0.445``; thousands
  separators may be left out);
* a row is found when its numbers, in any order, are a run of consecutive numbers of the text spanning at
  most :data:`MAX_LINES` lines (a table row, or the sentence that states a count);
* a row whose ``note`` starts with ``garbled:`` (the extraction garbled it; unreadable cells left empty)
  or ``not in papers:`` (the number comes from another source, e.g. a dataset README; say which) is
  reported and left out of the text check.
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from decimal import Decimal, InvalidOperation
from functools import lru_cache
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


# ----------------------------------------------------------------------------- against the paper text

ROOT = Path(__file__).resolve().parents[1]
#: Where the plain-text papers are: ``$SDR_PAPERS``, else ``../shared/papers`` beside the checkout.
PAPERS = Path(os.environ.get("SDR_PAPERS") or ROOT.parent / "shared" / "papers")
#: A row's numbers may wrap over this many consecutive lines of the extraction (or one line per number).
MAX_LINES = 3
#: A row may be every s-th number of the text for s up to this (a column of a table, or a transposed table).
MAX_STRIDE = 30
#: The rows of one table are printed within this many lines of each other's lines (gaps, headings).
TABLE_SLACK = 6
#: A row printed in pieces (a table split in halves): each piece holds at least this many of its numbers.
MIN_PIECE = 4
#: Notes that take a row out of the text check (reported, never silently).
EXCLUDED = ("garbled:", "not in papers:")
# "SciBERT (2019)": a model's citation year in a table's label column, not one of its cells.
_CITATION_YEAR = re.compile(r"\((?:19|20)\d\d\)")
_PAPER_LINE = re.compile(r"^#\s*paper:\s*(\S+\.txt)", re.IGNORECASE)
# A printed number: optional sign, 1,234,567 or 12.5 or .445, not glued to a word ("F1", "SciBERT2") nor part
# of a metric name ("P@20", "NDCG_{%20}").
_NUMBER = re.compile(r"(?<![\w.,@%])([-−–+]?)(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?!\d)")


def needs_papers() -> Path:
    if not PAPERS.is_dir():
        pytest.skip(f"{PAPERS} not found: the paper-text check needs the papers (set SDR_PAPERS to the folder "
                    "of *.txt extractions, or put the shared mirror at ../shared)")
    return PAPERS


def paper_files(path: Path) -> list[str]:
    """The ``# paper: <file>.txt`` names at the top of a paper-table CSV."""
    names = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        match = _PAPER_LINE.match(line)
        if match:
            names.append(match.group(1))
    return names


def as_number(text: str) -> Decimal | None:
    """A CSV cell as a number (``0.445``, ``-0.6``, ``30505``, ``1,349``), or None for text and empty cells."""
    text = text.strip().replace(",", "").replace("−", "-")
    if not text:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def text_numbers(text: str) -> list[tuple[Decimal, int]]:
    """Every printed number of a text with its line index, in reading order."""
    numbers = []
    for index, line in enumerate(text.splitlines()):
        for sign, digits in _NUMBER.findall(_CITATION_YEAR.sub(" ", line)):
            value = Decimal(digits.replace(",", ""))
            numbers.append((-value if sign and sign in "-−–" else value, index))
    return numbers


@lru_cache(maxsize=None)
def _paper_index(name: str) -> tuple[list[tuple[Decimal, int]], dict[Decimal, list[int]], Counter, dict]:
    numbers = text_numbers((PAPERS / name).read_text(encoding="utf-8"))
    positions: dict[Decimal, list[int]] = {}
    for position, (value, _) in enumerate(numbers):
        positions.setdefault(value, []).append(position)
    last_on_line = {line: position for position, (_, line) in enumerate(numbers)}
    return numbers, positions, Counter(line for _, line in numbers), last_on_line


def _found_run(values: list[Decimal], numbers: list[tuple[Decimal, int]], positions: dict[Decimal, list[int]],
               per_line: Counter, last_on_line: dict):
    """Every (start, stride, line) where ``values`` are printed in order at positions p, p+s, p+2s, … of the paper's numbers:

    * s = 1: a run of consecutive numbers within a few lines (a table row, or a sentence);
    * s > 1 on one line holding exactly s × len(values) numbers: a transposed table's row (every s-th cell);
    * s > 1, one value per consecutive line, each line holding s numbers: a column of a table (3 values or
      more: two numbers in a column are too often a coincidence).
    """
    size = len(values)
    key = min(range(size), key=lambda i: len(positions.get(values[i], ())))  # the rarest value pins it
    for position in positions.get(values[key], ()):
        for stride in range(1, (MAX_STRIDE if size > 1 else 1) + 1):
            start = position - key * stride
            last = start + (size - 1) * stride
            if start < 0 or last >= len(numbers):
                continue
            lines = [numbers[start + i * stride][1] for i in range(size)]
            if stride == 1:
                layout = lines[-1] - lines[0] < max(MAX_LINES, size)
            elif lines[0] == lines[-1]:
                layout = per_line[lines[0]] == stride * size
            else:
                layout = size >= 3 and lines == list(range(lines[0], lines[0] + size)) and \
                    all(per_line[n] == stride for n in lines)
            if layout and all(numbers[start + i * stride][0] == value for i, value in enumerate(values)):
                yield start, stride, lines[0] + 1


def row_places(values: list[Decimal], papers: list[str]) -> list[tuple]:
    """Every place in the papers where ``values`` are printed (empty: not found).

    The row's numbers, in the CSV's order, are one run (:func:`_found_run`), or consecutive pieces of at
    least :data:`MIN_PIECE` numbers each found as a run (a table the extraction printed in halves).
    """
    places = []
    for name in papers:
        numbers, positions, per_line, last_on_line = _paper_index(name)
        places += [(name, line, start, stride) for start, stride, line in _found_run(values, numbers, positions, per_line, last_on_line)]
        if places:
            continue
        pieces, start = [], 0
        while start < len(values):  # greedy: the longest piece found from here
            for stop in range(len(values) - (start == 0), start + MIN_PIECE - 1, -1):
                found = next(_found_run(values[start:stop], numbers, positions, per_line, last_on_line), None)
                if found is not None:
                    pieces.append(found)
                    start = stop
                    break
            else:
                break
        if pieces and start == len(values):
            places.append((name, pieces[0][2], tuple(pieces)))
    return places


def find_row(values: list[Decimal], papers: list[str]) -> tuple[str, int] | None:
    """(paper, line) of the first place where ``values`` are printed, else None."""
    for name in papers:
        numbers, positions, per_line, last_on_line = _paper_index(name)
        for _, _, line in _found_run(values, numbers, positions, per_line, last_on_line):
            return name, line
    places = row_places(values, papers)
    return (places[0][0], None) if places else None


def unplaced(candidates: dict[int, list[tuple]]) -> list[int]:
    """Rows left without a place when every row must have a place of its own (a maximum bipartite matching,
    Kuhn's algorithm): a number changed into another printed row's numbers finds no free place."""
    owner: dict[tuple, int] = {}

    def assign(row: int, seen: set) -> bool:
        for place in candidates[row]:
            if place not in seen:
                seen.add(place)
                if place not in owner or assign(owner[place], seen):
                    owner[place] = row
                    return True
        return False

    return [row for row in sorted(candidates, key=lambda r: len(candidates[r])) if not assign(row, set())]


def read_text_table(path: Path) -> pd.DataFrame:
    """A paper table with every cell as written (no float conversion: ``0.50`` stays ``0.50``)."""
    return pd.read_csv(path, comment="#", dtype=str, keep_default_na=False)


def value_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c not in ORIGIN_COLUMNS + ["note"]]


def row_numbers(row: pd.Series, columns: list[str]) -> list[Decimal]:
    return [n for n in (as_number(row[c]) for c in columns) if n is not None]


def is_excluded(row: pd.Series) -> bool:
    return row["note"].strip().lower().startswith(EXCLUDED)


def row_candidates(table: pd.DataFrame, papers: list[str]) -> dict[int, list[tuple]]:
    """Every checked row's places in the paper text, kept to its table's lines (:func:`near_its_table`)."""
    columns = value_columns(table)
    candidates = {index: row_places(row_numbers(row, columns), papers)
                  for index, row in table.iterrows() if not is_excluded(row)}
    return {index: near_its_table(table, candidates, index, places) for index, places in candidates.items()}


def near_its_table(table: pd.DataFrame, candidates: dict[int, list[tuple]], index: int, places: list[tuple]):
    """The places of row ``index`` within :data:`TABLE_SLACK` lines of the lines where the other rows of its
    (source, table) are printed — a table is printed in one piece. Applied when at least 3 other rows of
    the table have exactly one place each (a place the text pins down); else all places are kept."""
    group = table.index[(table["source"] == table.at[index, "source"]) & (table["table"] == table.at[index, "table"])]
    pinned = [candidates[i][0] for i in group if i != index and len(candidates.get(i, ())) == 1]
    if len(pinned) < 3 or len({place[0] for place in pinned}) > 1:
        return places
    low, high = min(place[1] for place in pinned), max(place[1] for place in pinned)
    slack = max(TABLE_SLACK, len(group) - len(pinned))  # rows not pinned may lie beyond the pinned ones
    return [place for place in places if place[0] == pinned[0][0] and low - slack <= place[1] <= high + slack]


def rows_not_found(table: pd.DataFrame, papers: list[str]) -> list[str]:
    """Every checked row whose numbers are not printed in the paper text (or only where another row of the
    file is printed), as readable problems."""
    columns = value_columns(table)
    candidates = row_candidates(table, papers)
    problems = []
    for index in sorted(set(unplaced(candidates)) | {i for i, places in candidates.items() if not places}):
        row = table.loc[index]
        values = [str(v) for v in row_numbers(row, columns)]
        reason = "no number to look up" if not values else (
            "not found together" if not candidates[index] else "found only where another row of the file is printed")
        problems.append(f"data row {index + 1} ({row['source']}, {row['table']}, {row['model']}): {values} "
                        f"{reason} in {papers}")
    return problems


def mutations(value: Decimal) -> list[Decimal]:
    """The typos the check must catch: ± 0.1, and ± one unit of the last printed digit."""
    unit = Decimal(1).scaleb(value.as_tuple().exponent)
    return sorted({value + Decimal("0.1"), value - Decimal("0.1"), value + unit, value - unit} - {value})


@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_every_row_is_printed_in_the_paper(path):
    papers_dir = needs_papers()
    papers = paper_files(path)
    assert papers, f"{path.name}: no '# paper: <file>.txt' comment line names the paper the rows come from"
    missing = [name for name in papers if not (papers_dir / name).is_file()]
    assert not missing, f"{path.name}: '# paper:' names files that are not in {papers_dir}: {missing}"
    table = read_text_table(path)
    problems = rows_not_found(table, papers)
    assert not problems, f"{path.name}: rows not found in the paper text: {problems}"


@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_rows_left_out_of_the_text_check_say_why(path):
    """Flagged rows are reported (``pytest -rA -s`` shows them) and carry a reason after the flag."""
    table = read_text_table(path)
    flagged = table[table.apply(is_excluded, axis=1)]
    for index, row in flagged.iterrows():
        reason = row["note"].split(":", 1)[1].strip()
        assert reason, f"{path.name}: data row {index + 1} ({row['model']}) is flagged without a reason"
        print(f"{path.name}: data row {index + 1} ({row['source']}, {row['model']}) not checked: {row['note']}")


@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_any_single_changed_number_fails_the_text_check(path):
    """Every numeric cell of every checked row, changed by ± 0.1 or ± 1 in its last digit: not found."""
    needs_papers()
    papers = paper_files(path)
    table = read_text_table(path)
    columns = value_columns(table)
    candidates = row_candidates(table, papers)
    assert not unplaced(candidates), f"{path.name}: fix test_every_row_is_printed_in_the_paper first"
    missed, tried = [], 0
    for index, row in table.iterrows():
        if is_excluded(row):
            continue
        for column in columns:
            original = as_number(row[column])
            if original is None:
                continue
            for changed in mutations(original):
                tried += 1
                mutated = row.copy()
                mutated[column] = str(changed)
                places = near_its_table(table, candidates, index, row_places(row_numbers(mutated, columns), papers))
                if not unplaced({**candidates, index: places}):
                    missed.append(f"data row {index + 1} ({row['model']}) {column}: {row[column]} -> {changed}")
    if not candidates:
        pytest.skip(f"{path.name}: every row is flagged (garbled or not in papers); no number to change")
    assert tried > 0, f"{path.name}: no number was checked"
    assert not missed, f"{path.name}: changed numbers still found in the paper text: {missed}"


@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_a_mutated_copy_of_the_file_fails(path, tmp_path):
    """The whole file path: a copy with one seeded-random number changed by 0.1 is reported, naming the row."""
    needs_papers()
    table = read_text_table(path)
    columns = value_columns(table)
    papers = paper_files(path)
    before = rows_not_found(table, papers)
    unfound = {int(problem.split()[2]) - 1 for problem in before}
    cells = [(i, c) for i, row in table.iterrows() if not is_excluded(row) and i not in unfound for c in columns
             if as_number(row[c]) is not None]
    if not cells:
        pytest.skip(f"{path.name}: no row is both checked and found; no number to change")
    index, column = random.Random(path.name).choice(cells)
    table.at[index, column] = str(as_number(table.at[index, column]) + Decimal("0.1"))
    header = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    copy = tmp_path / path.name
    copy.write_text("\n".join(header) + "\n" + table.to_csv(index=False), encoding="utf-8")
    assert paper_files(copy) == papers
    new = [problem for problem in rows_not_found(read_text_table(copy), papers) if problem not in before]
    assert len(new) == 1 and new[0].startswith(f"data row {index + 1} "), (index, column, new)


def test_number_reader_on_printed_forms():
    text = "GloVe avg. .445 .124\nSPECTER* (2020)\t82.0\t86.4\n(-0.6 points) 30,505 phrases; F1 and SciBERT2 0.5%"
    assert [(str(v), line) for v, line in text_numbers(text)] == [
        ("0.445", 0), ("0.124", 0), ("82.0", 1), ("86.4", 1), ("-0.6", 2), ("30505", 2), ("0.5", 2)]
    assert [str(v) for v, _ in text_numbers("RP 9.92 r P@20 16.53 NDCG _{%20} 38.51 in 2019")] == [
        "9.92", "16.53", "38.51", "2019"]
    assert as_number("0.445") == Decimal(".445") and as_number("1,349") == 1349 and as_number("n/a") is None
    assert mutations(Decimal("0.445")) == [Decimal("0.345"), Decimal("0.444"), Decimal("0.446"), Decimal("0.545")]
    assert mutations(Decimal("30505")) == [Decimal("30504"), Decimal("30504.9"), Decimal("30505.1"), Decimal("30506")]


def test_scitoricsbert_table4_values_line_by_line():
    """Table 4 row by row: the line that starts with the model's label prints exactly the four values, in
    the CSV's column order (CS P@1, CS MAP@R, PubMed P@1, PubMed MAP@R)."""
    papers_dir = needs_papers()
    path = PAPER_TABLES / "scitoricsbert_table4.csv"
    assert paper_files(path) == ["004_a6ce29e949df17e7.txt"]
    lines = (papers_dir / "004_a6ce29e949df17e7.txt").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("GloVe avg. "))
    end = next(i for i, line in enumerate(lines) if line.startswith("Table 4:"))
    table = read_text_table(path)
    metrics = ["csabstruct_p@1", "csabstruct_map@r", "pubmedrct_p@1", "pubmedrct_map@r"]
    assert value_columns(table) == metrics and len(table) == 12
    printed = {}
    for line in lines[start:end]:
        numbers = [v for v, _ in text_numbers(line)]
        if len(numbers) == 4:
            label = line[:line.index(" .")].strip()
            printed[label.replace("(", "SciToricsBERT (") if label.startswith("(") else label] = numbers
    assert list(printed) == table["model"].tolist()
    for _, row in table.iterrows():
        assert [as_number(row[m]) for m in metrics] == printed[row["model"]], row["model"]
        assert all(len(row[m].split(".")[1]) == 3 for m in metrics), row["model"]  # three decimals, as printed
