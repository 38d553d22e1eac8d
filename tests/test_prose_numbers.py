"""Numbers a reader can trust (issue 26): a chapter's markdown holds paper numbers and words; every number the book
measured is computed where it is shown (MyST-NB ``{glue}`` references, or printed by a cell from the results).

Each markdown cell of every chapter is scanned, with code spans, math, links, glue roles and references to the
papers' structure (Table 3, §4.2, Fig. 2, eq. 3, A.7.10, years) left out. A number that remains must be
* a value printed in the papers (any number of ``data/paper_tables/*.csv``, as written there), or
* a small count (an integer up to :data:`SMALL_COUNT`: "5 triplets per query", "2 epochs"), or
* on the allow-list below, with the reason it is not a measurement of this book.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SMALL_COUNT = 100

ALLOWED = {
    # number (as written) → why it is not a measured number of this book
    "4,205": "CSFCube's paper count (the collection's own, SOURCES of the data)",
    "4,176": "CSFCube's judged candidates (the collection's own)",
    "1,349": "CSAbstruct test sentences (the released split)",
    "1,668": "CSAbstruct train abstracts (the released split)",
    "2,189": "CSAbstruct abstracts, all splits (1,668 + 295 + 226, the release)",
    "11,333": "CSAbstruct train sentences (the released split)",
    "1,133": "CSAbstruct test sentences labelled background, method or result (the released split)",
    "0.3423": "the official SPECTER rankings' published CSFCube MAP (CSFCube's eval_scripts README)",
    "0.5328": "the official SPECTER rankings' published CSFCube NDCG%20",
    "512": "BERT's input length in tokens",
    "768": "SciBERT's embedding dimension",
    "2e-5": "the papers' learning rate",
    "2e-4": "a learning rate (profile setting)",
    "1e-4": "a learning rate (profile setting)",
    "5e-5": "a learning rate (profile setting)",
}

_STRIP = [
    re.compile(r"`[^`]*`"),                                   # code spans (parameter names and values)
    re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S),             # math
    re.compile(r"\{glue(?::\w+)?\}`[^`]*`"),                  # glue references
    re.compile(r"\{cite(?::\w+)?\}`[^`]*`"),                  # citations
    re.compile(r"\]\([^)]*\)|https?://\S+"),                  # link targets
    re.compile(r"(?i)(?:§+|\b(?:tables?|tab\.|figs?\.|figures?|eqs?\.|equations?|sections?|appendix|app\.|experiment"
               r"|footnote|chapter|step|cell|row|column|stage|layer)s?)\s*[A-Z]?\d+(?:\.\d+)*(?:\s*(?:[–,-]|and)\s*"
               r"[A-Z]?\d+(?:\.\d+)*)*"),                     # references to the papers' structure
    re.compile(r"\bA\.\d+(?:\.\d+)*"),                        # appendix sections (A.7.10)
    re.compile(r"\b(?:19|20)\d\d\b"),                         # years
    re.compile(r"\b\w+-\d+\w*\b|\b\d+-\w*[a-zA-Z]\w*\b"),     # names with digits (MiniLM-L6, GPT-4o, SFR-2_R, 3-fold)
    re.compile(r"\b[A-Za-z]+\d+[A-Za-z\d]*\b"),               # identifiers with digits (L2, H100, T4, SciNCL2)
]
_NUMBER = re.compile(r"[+±−-]?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?%?|[+±−-]?\.\d+%?")


def _paper_values() -> set[str]:
    values = set()
    for path in (ROOT / "data" / "paper_tables").glob("*.csv"):
        table = pd.read_csv(path, comment="#", dtype=str)
        for column in table.columns[3:]:
            for cell in table[column].dropna():
                for token in _NUMBER.findall(str(cell)):
                    values.add(_canonical(token))
    return values


def _canonical(token: str) -> str:
    text = token.replace(",", "").replace("−", "-").lstrip("+±").rstrip("%")
    try:
        return str(Decimal(text).normalize())
    except InvalidOperation:
        return text


def stray_numbers(markdown: str, paper_values: set[str]) -> list[str]:
    """Numbers in ``markdown`` that are neither paper values, small counts, nor allowed."""
    text = markdown
    for pattern in _STRIP:
        text = pattern.sub(" ", text)
    allowed = {_canonical(k) for k in ALLOWED}
    stray = []
    for token in _NUMBER.findall(text):
        canonical = _canonical(token)
        plain = token.lstrip("+±−-")
        if re.fullmatch(r"\d+", plain.replace(",", "")) and int(plain.replace(",", "")) <= SMALL_COUNT \
                and not token.startswith(("+", "±", "−", "-")):  # a signed number is a difference, not a count
            continue
        if canonical in paper_values or canonical in allowed:
            continue
        stray.append(token)
    return stray


def _markdown_cells(path: Path) -> list[tuple[int, str]]:
    cells = json.loads(path.read_text())["cells"]
    return [(i, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "markdown"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_markdown_holds_no_measured_number(notebook):
    values = _paper_values()
    problems = [f"cell {i}: {', '.join(stray)}" for i, text in _markdown_cells(notebook)
                if (stray := stray_numbers(text, values))]
    assert not problems, (f"{notebook.name}: numbers typed into the prose that are not the papers' (glue them or print "
                          f"them from the results; or add them to ALLOWED with the reason): " + "; ".join(problems))


def test_a_planted_hand_typed_number_is_caught():
    values = _paper_values()
    clean = "SPECTER is trained with 5 triplets per query (Table 1, §4.2) in 2020; we glue {glue:text}`gain`."
    assert stray_numbers(clean, values) == []
    assert stray_numbers(clean + " The facet encoders gain 0.862 MAP.", values) == ["0.862"]
    assert stray_numbers("SciNCL reaches 81.8 on average (its Table 1).", values) == []  # a paper value
    assert stray_numbers("ours: +4.5 over the untrained encoder", values) == ["+4.5"]



# ------------------------------------------------------------------------------------ code comments a page shows
_SHOWN_DECIMAL_OR_SIGNED = re.compile(r"(?<![\w.])(?:[+±−-]?\d[\d,]*\.\d+|[+±−-]\d[\d,]*|\.\d+)%?")


def comment_numbers(source: str, paper_values: set[str]) -> list[str]:
    """Signed and decimal numbers in the ``#`` comments of a code cell that are neither paper values nor allowed:
    a measured value typed into a comment the page shows (``# .699/.727``, ``# 12.27, 19.24``)."""
    import io
    import tokenize

    try:
        comments = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
                    if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        comments = [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]
    allowed = {_canonical(k) for k in ALLOWED}
    stray = []
    for comment in comments:
        text = comment
        for pattern in _STRIP[3:]:  # structure references, years, identifiers with digits (code spans stay numbers)
            text = pattern.sub(" ", text)
        for token in _SHOWN_DECIMAL_OR_SIGNED.findall(text):
            canonical = _canonical(token)
            if canonical not in paper_values and canonical not in allowed:
                stray.append(token)
    return stray


def _shown_code_cells(path: Path) -> list[tuple[int, str]]:
    cells = json.loads(path.read_text())["cells"]
    return [(i, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "code"
            and not {"remove-cell", "remove-input", "parameters"} & set(c.get("metadata", {}).get("tags", []))]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_code_comments_a_page_shows_hold_no_measured_number(notebook):
    values = _paper_values()
    problems = [f"cell {i}: {', '.join(stray)}" for i, text in _shown_code_cells(notebook)
                if (stray := comment_numbers(text, values))]
    assert not problems, (f"{notebook.name}: measured numbers typed into code comments the page shows (print them "
                          "from the results, or cite the paper table): " + "; ".join(problems))


def test_a_planted_number_in_a_comment_is_caught():
    values = _paper_values()
    assert comment_numbers("x = 1  # 5 seeds, Table 3, all-MiniLM-L6-v2\n", values) == []
    assert comment_numbers("x = 1  # the seeds gave .699/.727 here\n", values) == [".699", ".727"]
    assert comment_numbers("x = 1  # the seeds gave 0.699 and 0.727\n", values) == ["0.699", "0.727"]
    assert comment_numbers("x = 1  # fell 12.27, 19.24 % below\n", values) == ["12.27", "19.24"]
    assert comment_numbers("x = 1  # SciNCL's 81.8 (its Table 1)\n", values) == []  # a paper value
    assert comment_numbers("y = 2  # a gain of -3 over the reference\n", values) == ["-3"]
