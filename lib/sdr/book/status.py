"""The reproduction-status map of the intro page: per method and benchmark, our headline number and the paper's.

Generated from the stored leaderboard rows (:mod:`sdr.book.leaderboard`) into ``book/chapters/status.md``
(:data:`STATUS_PAGE`), which ``book/intro.md`` includes; :func:`sdr.book.runs.run_chapter` rewrites it after
every chapter.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sdr.book import paths
from sdr.book.leaderboard import BENCHMARKS, EXTERNAL, leaderboard_rows
from sdr.book.render import markdown_text
from sdr.book.results import read_paper_table

STATUS_PAGE = "status.md"
"""The reproduction-status table, generated beside the executed chapters; ``book/intro.md`` includes it."""


def _paper_value(benchmark: str, paper_model: str | None, metric: str) -> float | None:
    spec = BENCHMARKS[benchmark]
    column = spec["paper_columns"].get(metric)
    if not paper_model or not spec["paper_table"] or column is None:
        return None
    if not (paths.PAPER_TABLES / f"{spec['paper_table']}.csv").exists():
        return None
    table = read_paper_table(spec["paper_table"])
    match = table[table["model"] == paper_model]
    if match.empty or column not in match or pd.isna(match[column].iloc[0]):
        return None
    return float(match[column].iloc[0])


def reproduction_status(results: Path | None = None) -> pd.DataFrame:
    """One row per method, one column per benchmark: our headline number (mean ± σ over the run's seeds), the
    paper's, and which run.

    A cell prefers a real-data run here (profile ``real``, then any other non-``paper`` profile), then a
    replica run ("replica only": the real benchmark is evaluated at the ``paper`` profile, not run here),
    then a stored ``paper``-profile run. The paper's number comes from ``data/paper_tables`` through the
    row's ``paper_model``. Rows of models scored by ``sdr evaluate all`` (:data:`EXTERNAL`) are left out.
    """
    rows = leaderboard_rows(profile=None, data=None, results=results)
    if len(rows):
        rows = rows[rows["chapter"] != EXTERNAL]  # models scored by `sdr evaluate all` reproduce no paper
    if rows.empty:
        return pd.DataFrame()

    def rank(row) -> tuple:
        if row["profile"] == "paper":
            return (2, 0)
        return (0 if row["data"] == "real" else 1, 0 if row["profile"] == "real" else 1)

    from sdr.stats import mean_sd

    cells: dict[str, dict[str, str]] = {}
    for (method, benchmark), group in rows.groupby(["method", "benchmark"], sort=False):
        spec = BENCHMARKS[benchmark]
        best = min((row for _, row in group.iterrows()), key=rank)
        headline, decimals = spec["headline"], spec["decimals"]
        # every seed of the chosen run (same profile and data), as mean ± σ: not the first seed stored
        runs = group[(group["profile"] == best["profile"]) & (group["data"] == best["data"])]
        mean, sd, count = mean_sd(runs[headline].astype(float))
        text = f"{mean:.{decimals}f}" + (f" ± {sd:.{decimals}f} ({count} seeds)" if count > 1 else "")
        paper = _paper_value(benchmark, best["paper_model"], headline)
        text += f" (paper {paper:.{decimals}f})" if paper is not None else " (paper: —)"
        where = {0: f"real data, `{best['profile']}`", 1: f"replica only, `{best['profile']}`",
                 2: "`paper` profile only"}[rank(best)[0]]
        cells.setdefault(method, {})[f"{spec['title']} ({headline})"] = f"{text} · {where}"
    table = pd.DataFrame(cells).T
    return table.fillna("not run")


def status_markdown(results: Path | None = None) -> str:
    """The generated part of the intro page: :func:`reproduction_status` as a MyST table with a legend."""
    table = reproduction_status(results)
    if table.empty:
        return ("*No chapter has stored leaderboard rows yet (`extra[\"leaderboard\"]` of its results, see "
                "`sdr.book.leaderboard_row`): this table is generated from them when `make book` runs.*\n")
    header = "| method | " + " | ".join(markdown_text(c) for c in table.columns) + " |"
    lines = [header, "|" + "---|" * (len(table.columns) + 1)]
    for method, row in table.iterrows():
        cells = [str(v).replace("|", "\\|") for v in row]
        lines.append(f"| {markdown_text(method)} | " + " | ".join(cells) + " |")
    legend = ("Each cell: our headline number, the paper's in parentheses (from `data/paper_tables`), and the run "
              "that produced ours: *real data* (the real benchmark, at the profile named), *replica only* (the "
              "synthetic replica; the real benchmark is run at the `paper` profile, not here), or *`paper` profile "
              "only*. Units: " + "; ".join(f"{s['title']}: {markdown_text(s['units'])}" for s in BENCHMARKS.values())
              + ". Generated from the results store by `sdr.book.status_markdown`.")
    return "\n".join(lines) + "\n\n" + legend + "\n"


def write_status_page(path: Path, results: Path | None = None) -> Path:
    """Write :func:`status_markdown` to ``path`` (only when it changed, so an unchanged book rebuilds fast)."""
    path = Path(path)
    text = status_markdown(results)
    if not path.exists() or path.is_symlink() or path.read_text() != text:
        from sdr.outputs import write_text

        write_text(path, text, "status page")  # atomically, never through a link, never over a source file
    return path
