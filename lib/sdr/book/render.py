"""How a chapter reads: cleaned executed pages (final progress bars, one profile box), styled tables, heatmaps.

:func:`finish_notebook` turns an executed chapter into prose, tables and figures; :func:`styled` prints a table to
the papers' precision; :func:`paper_vs_ours_heatmap` draws a paper-vs-ours table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

import pandas as pd

from sdr.book.results import jsonable


PROFILE_BOX_CLASS = "sdr-profile-box"
"""CSS class of the "this page was built with" box (the HTML test looks for it)."""
PROFILE_BOX_TAG = "sdr-profile-box"


def _render_carriage_returns(text: str) -> str:
    """What a terminal shows for ``text``: on each line only what the last carriage return left.

    tqdm redraws a bar with ``\\r``; Jupyter and terminals overwrite the line, but a stored notebook keeps
    every redraw, which a static page prints one per line. A line whose last segment is blank was erased
    (``leave=False``) and is dropped.
    """
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            segments = [segment for segment in line.split("\r") if segment]
            line = segments[-1] if segments else ""
            if not line.strip():
                continue
        lines.append(line)
    return "\n".join(lines)


def clean_outputs(notebook) -> None:
    """Merge each cell's consecutive stream outputs of one name and keep progress bars' final state."""
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        merged = []
        for output in cell.get("outputs", []):
            if (output.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                    and merged[-1].get("name") == output.get("name")):
                merged[-1]["text"] += output.get("text", "")
            else:
                merged.append(output)
        for output in merged:
            if output.get("output_type") == "stream":
                output["text"] = _render_carriage_returns(output.get("text", ""))
        cell["outputs"] = [o for o in merged if o.get("output_type") != "stream" or o["text"].strip()]


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>$|#{}])")


def markdown_text(text: str) -> str:
    """Plain text safe inside MyST markdown (``$`` would open math, ``*`` emphasis, ``|`` a table)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text))


def profile_box(chapter: str, profile: str, parameters: Mapping, sources: Sequence[str] | None) -> str:
    """The markdown of the "this page was built with" box that replaces the two parameter cells."""
    values = " · ".join(f"`{key} = {value!r}`" for key, value in parameters.items() if key != "profile")
    data = "; ".join(markdown_text(s) for s in sources) if sources else \
        "named in the caption under each table and figure"
    # A colon fence: a backtick fence's info string may not hold backticks (CommonMark), and the title is
    # kept free of them too.
    return "\n".join([
        f":::{{admonition}} This page was built with the {markdown_text(profile)} profile",
        f":class: {PROFILE_BOX_CLASS}",
        "",
        f"**Data:** {data}",
        "",
        f"**Parameters** (`profiles.yml`, profile `{profile}`): {values or 'the notebook defaults'}",
        "",
        f"**Rebuild it:** `sdr chapter {chapter} --profile {profile}` (see *How to reproduce*)",
        ":::",
    ])


def finish_notebook(notebook, chapter: str, parameters: Mapping, sources: Sequence[str] | None = None,
                    fingerprint: str | None = None):
    """Make an executed chapter read as prose, tables and figures (in place; also returned).

    * progress bars keep their final state (:func:`clean_outputs`);
    * the notebook's own ``parameters`` cell and papermill's ``injected-parameters`` cell are removed from
      the page (tag ``remove-cell``; they stay in the .ipynb that Colab opens) and one box names the
      profile, the data sources (those the chapter stored with :func:`~sdr.book.results.save_results`) and
      the parameters;
    * ``metadata["sdr"]`` records chapter, profile, parameters and the fingerprint (see
      :func:`~sdr.book.runs.run_chapter`).
    """
    import nbformat

    clean_outputs(notebook)
    notebook.cells = [c for c in notebook.cells if PROFILE_BOX_TAG not in c.metadata.get("tags", [])]
    profile = str(parameters.get("profile", "?"))
    position = None
    for index, cell in enumerate(notebook.cells):
        tags = cell.metadata.get("tags", [])
        if {"parameters", "injected-parameters"} & set(tags):
            if "remove-cell" not in tags:
                cell.metadata["tags"] = [*tags, "remove-cell"]
            position = index + 1
    box = nbformat.v4.new_markdown_cell(profile_box(chapter, profile, parameters, sources))
    box.metadata["tags"] = [PROFILE_BOX_TAG]
    notebook.cells.insert(position if position is not None else min(1, len(notebook.cells)), box)
    notebook.metadata["sdr"] = {"chapter": chapter, "profile": profile, "parameters": jsonable(dict(parameters)),
                                "fingerprint": fingerprint,
                                "executed": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return notebook


def _decimals(value: float) -> int:
    text = repr(round(float(value), 6))
    return 0 if "." not in text or "e" in text else len(text.split(".")[1].rstrip("0") or "0")


def is_paper_vs_ours(table: pd.DataFrame) -> bool:
    """A paper-vs-ours metric table: a ``reported by`` column, paper rows and ours, and numeric metrics."""
    if "reported by" not in table.columns or table.select_dtypes("number").dropna(how="all", axis=1).empty:
        return False
    ours = table["reported by"].astype(str).str.startswith("this book")
    return bool(ours.any() and (~ours).any())


def column_decimals(table: pd.DataFrame) -> dict[str, int]:
    """Decimals per numeric column: the papers' (most common among paper rows) in a paper-vs-ours table,
    else 3 for fractions and 2 for other floats; integers keep none."""
    decimals = {}
    paper_rows = ~table["reported by"].astype(str).str.startswith("this book") if is_paper_vs_ours(table) else None
    for column in table.select_dtypes("number").columns:
        values = table[column].dropna()
        if values.empty:
            continue
        if paper_rows is not None and values[paper_rows.reindex(values.index, fill_value=False)].size:
            printed = values[paper_rows.reindex(values.index, fill_value=False)].map(_decimals)
            decimals[column] = int(printed.mode().max())
        elif pd.api.types.is_integer_dtype(values) or (values == values.round()).all() and values.abs().max() > 1:
            decimals[column] = 0
        else:
            decimals[column] = 3 if values.abs().max() <= 1 else 2
    return decimals


def styled(table: pd.DataFrame, caption: str | None = None):
    """``table`` for display: numbers to the papers' precision (:func:`column_decimals`), NaN as "—"."""
    formats = {column: f"{{:,.{d}f}}" for column, d in column_decimals(table).items()}
    style = table.style.format(formats, na_rep="—")
    if isinstance(table.index, pd.RangeIndex) or list(table.index) == list(range(len(table))):
        style = style.hide(axis="index")  # a row number is not information (tables stored as JSON lose RangeIndex)
    if caption:
        style = style.set_caption(caption).set_table_styles(
            [{"selector": "caption", "props": [("caption-side", "bottom"), ("font-size", "85%")]}])
    return style


def paper_vs_ours_heatmap(table: pd.DataFrame, title: str, caption_text: str):
    """A heatmap of a paper-vs-ours table (papers' rows above ours), annotated to the papers' precision.

    Returns the figure, or None when ``table`` is not a paper-vs-ours metric table (:func:`is_paper_vs_ours`).
    """
    if not is_paper_vs_ours(table):
        return None
    import matplotlib.pyplot as plt
    import seaborn as sns

    numeric = table.select_dtypes("number").dropna(how="all", axis=1)
    labels = table["reported by"].astype(str)
    if "model" in table:
        labels = labels + " · " + table["model"].astype(str)
    numeric = numeric.set_axis(labels, axis=0)
    decimals = max(column_decimals(table).get(c, 1) for c in numeric.columns)
    figure, axes = plt.subplots(figsize=(min(1.0 * numeric.shape[1] + 4, 16), 0.45 * len(numeric) + 1.5))
    sns.heatmap(numeric, annot=True, fmt=f".{decimals}f", cmap="viridis", cbar=False, ax=axes)
    axes.set(title=title, ylabel="")
    from sdr.book.figures import caption_under

    caption_under(caption_text, -0.02, figure)
    return figure
