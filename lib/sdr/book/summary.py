"""The Summary page's steps, one call each: what every chapter stored, the leaderboards on real data with their
intervals, and every table the chapters stored (paper-vs-ours tables drawn as heatmaps).

The page computes nothing new: it reads the results store (``results/<chapter>/<profile>.json``) that each chapter
writes (:mod:`sdr.book.results`) and the leaderboard rows in it (:mod:`sdr.book.leaderboard`). The checks of what
the store must hold live here and raise :class:`sdr.book.ChapterCheckFailed`.

Shown in: notebooks/summary.ipynb.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from sdr.book.chapter import ChapterCheckFailed
from sdr.book.leaderboard import BENCHMARKS, EXTERNAL, headline_display, headline_table, leaderboard_table, \
    trained_here
from sdr.book.paths import results_dir
from sdr.book.profiles import chapter_names
from sdr.book.render import is_paper_vs_ours, paper_vs_ours_heatmap, styled
from sdr.book.results import load_results
from sdr.book.sources import caption

__all__ = ["LEADERBOARDS", "REAL_PROFILE_SEEDS", "Stored", "stored_chapters", "Leaderboard", "leaderboards",
           "show_leaderboard", "leaderboard_bars", "interval_findings", "show_every_table"]

#: The benchmarks with a leaderboard on the page, in its order (keys of :data:`sdr.book.BENCHMARKS`).
LEADERBOARDS = ("csfcube", "csabstruct")
#: At ``real`` every row the book trained is the mean of at least this many training seeds.
REAL_PROFILE_SEEDS = 3


@dataclass
class Stored:
    """The chapters the Summary expects (every chapter of ``profiles.yml`` but itself), the records stored at this
    profile, and the page's table of them."""

    profile: str
    expected: list[str]
    records: dict
    table: pd.DataFrame

    def show(self):
        return styled(self.table, f"What each chapter stored · Profile: {self.profile} · results store: "
                                  f"{results_dir().name}/")

    @property
    def missing(self) -> list[str]:
        return list(self.table.index[~self.table["stored"]])


def stored_chapters(run) -> Stored:
    """Every chapter's record at the run's profile: when it was written, how many tables and leaderboard rows.

    Shown in: notebooks/summary.ipynb, the first table."""
    records = {r["chapter"]: r for r in load_results(profile=run.profile)}
    expected = [name for name in chapter_names() if name != run.chapter]
    table = pd.DataFrame([{"chapter": name, "stored": name in records,
                           "written (UTC)": records[name]["written"] if name in records else None,
                           "tables": len(records[name]["tables"]) if name in records else 0,
                           "leaderboard rows": len(records[name]["extra"].get("leaderboard", []))
                           if name in records else 0}
                          for name in expected]).set_index("chapter")
    return Stored(run.profile, expected, records, table)


# ------------------------------------------------------------------------------------------------ leaderboards
@dataclass
class Leaderboard:
    """One benchmark's leaderboard: every metric per method (``detail``) and the headline with its intervals."""

    benchmark: str
    detail: pd.DataFrame
    headline: pd.DataFrame
    sources: list[str]

    @property
    def spec(self) -> dict:
        return BENCHMARKS[self.benchmark]

    @property
    def lengths(self) -> list[int]:
        return sorted({int(t) for t in self.detail["input tokens"].dropna()})

    def caption(self, profile: str) -> str:
        lengths = self.lengths
        read = f"every system reads {lengths[0]} tokens of each text" if len(lengths) == 1 else \
            f"input lengths differ: {lengths}"
        return f"{self.spec['title']} ({self.spec['units']}); {read} · " + caption(profile, self.sources)


def leaderboards(run, stored: Stored) -> dict[str, Leaderboard]:
    """The leaderboard of each benchmark of :data:`LEADERBOARDS` that has real-data rows at this profile
    (:func:`sdr.book.leaderboard_table`, :func:`sdr.book.headline_table`).

    Checks, per leaderboard: the rows the book trained share one base model (so the rows compare methods, not
    encoders), every row has a training budget, no method appears twice, every row read the same input length;
    at ``real`` also every row has its input length and every trained row is the mean of
    :data:`REAL_PROFILE_SEEDS` seeds or more with its difference from the untrained encoder."""
    boards = {}
    for name in LEADERBOARDS:
        detail = leaderboard_table(name, run.profile)
        if detail.empty:
            continue
        sources = sorted({s for r in stored.records.values() for s in r["sources"] if name.lower() in s.lower()})
        boards[name] = Leaderboard(name, detail, headline_table(name, run.profile), sources)
        _check(boards[name], run.profile)
    return boards


def _check(board: Leaderboard, profile: str) -> None:
    name, detail = board.benchmark, board.detail
    trained = detail[detail["training budget"].map(trained_here).astype(bool)]
    if trained["base model"].nunique() > 1:
        raise ChapterCheckFailed(f"{name}: the rows trained here start from several base models: "
                                 f"{sorted(trained['base model'].unique())}")
    if not detail["training budget"].str.strip().ne("").all():
        raise ChapterCheckFailed(f"{name}: rows without a training budget: "
                                 f"{list(detail.index[detail['training budget'].str.strip().eq('')])}")
    if not detail.index.is_unique:
        raise ChapterCheckFailed(f"{name}: a method appears twice at {profile}")
    if detail["input tokens"].dropna().nunique() > 1:
        raise ChapterCheckFailed(f"{name}: rows read different input lengths: "
                                 f"{detail['input tokens'].value_counts().to_dict()}")
    if profile != "real":
        return
    if not detail["input tokens"].notna().all():
        raise ChapterCheckFailed(f"{name}: rows without their input length")
    book_trained = board.headline[board.headline["chapter"] != EXTERNAL]
    book_trained = book_trained[book_trained["training"].map(trained_here).astype(bool)]
    if not ((book_trained["seeds"] >= REAL_PROFILE_SEEDS).all() and book_trained["difference"].notna().all()):
        raise ChapterCheckFailed(f"{name}: trained rows with fewer than {REAL_PROFILE_SEEDS} seeds or no difference "
                                 f"from their untrained encoder:\n{book_trained}")


def show_leaderboard(run, boards: Mapping[str, Leaderboard], benchmark: str) -> None:
    """A benchmark's heading, its headline table (mean ± σ over seeds, the difference from the untrained encoder
    with its interval) and every metric in a collapsed table; or a line saying that no chapter stored real-data
    rows for it at this profile. The bars are :func:`leaderboard_bars` (a figure cell of its own).

    Shown in: notebooks/summary.ipynb, Leaderboard on real data."""
    from IPython.display import HTML, Markdown, display

    spec = BENCHMARKS[benchmark]
    display(Markdown(f"### {spec['title']}"))
    board = boards.get(benchmark)
    if board is None:
        display(Markdown(f"*No chapter has stored real-data {spec['title']} rows at the `{run.profile}` profile yet.*"))
        return
    display(styled(headline_display(board.headline, benchmark), board.caption(run.profile)))
    display(HTML(f"<details><summary>{spec['title']}: every metric, seeds and the full training budget</summary>"
                 f"<div style='overflow-x:auto'>{styled(board.detail).to_html()}</div></details>"))


def leaderboard_bars(run, boards: Mapping[str, Leaderboard], benchmark: str) -> None:
    """A benchmark's headline per method, mean ± σ over seeds, best first; nothing where it has no leaderboard.

    Shown in: notebooks/summary.ipynb, Leaderboard on real data."""
    import matplotlib.pyplot as plt

    board = boards.get(benchmark)
    if board is None:
        return
    spec, headline = board.spec, board.headline
    figure, axes = plt.subplots(figsize=(7, 0.35 * len(headline) + 1.2))
    axes.barh(headline["method"], headline["mean"], xerr=headline["sd"], color="steelblue")
    axes.invert_yaxis()
    axes.set(xlabel=f"{spec['headline']} (mean ± σ over seeds)", title=f"{spec['title']} (profile {run.profile})")
    plt.show()


def interval_findings(boards: Mapping[str, Leaderboard]) -> list[str]:
    """What the intervals say, generated from each leaderboard's headline table: per trained row one sentence
    (:func:`sdr.stats.verdict`) that ranks it against its untrained encoder only when the two-stage interval (seeds,
    then queries) excludes 0 and Holm's adjustment over the leaderboard's comparisons keeps p below 0.05, otherwise
    says the difference is within noise; then the counts, the family and whether training beat the best free
    baseline (the strongest untrained pooling).

    Shown in: notebooks/summary.ipynb, Leaderboard on real data."""
    from IPython.display import Markdown, display

    from sdr.stats import verdict

    lines = []
    for name, board in boards.items():
        compared = board.headline[board.headline["difference"].notna()]
        sentences, above, below = [], 0, 0
        for line in compared.itertuples():
            result = {"difference": line.difference, "low": line.low, "high": line.high,
                      "conditional_on_one_model": bool(line.conditional)}
            sentence = verdict(line.method, line.reference, result, adjusted_p=float(line.p_holm))
            above += sentence.startswith(f"{line.method} is above")
            below += sentence.startswith(f"{line.method} is below")
            if isinstance(line.best_untrained, str) and line.best_untrained != line.reference:
                beats = line.best_low > 0
                sentence += (f" Against the best untrained reading ({line.best_untrained}): {line.best_difference:+.2f} "
                             f"[{line.best_low:+.2f}, {line.best_high:+.2f}], "
                             + ("above it." if beats else "not above it: training did not beat the best free baseline."))
            sentences.append(f"- {sentence}")
        header = (f"**{BENCHMARKS[name]['title']}.** {len(compared)} trained rows compared with their untrained "
                  f"encoder (one family: Holm's correction over these {len(compared)} comparisons, each a two-stage "
                  f"bootstrap over training seeds and queries; † in the table: one trained seed, so the interval is "
                  f"conditional on that model): {above} above it, {below} below it, {len(compared) - above - below} "
                  "within noise.")
        lines.append("\n".join([header, *sentences]))
        display(Markdown(lines[-1]))
    return lines


# ------------------------------------------------------------------------------------------------ every table
def show_every_table(run, stored: Stored) -> dict[str, int]:
    """Every chapter's stored tables, chapter by chapter, each under the caption of the data that produced it; each
    paper-vs-ours table (:func:`sdr.book.is_paper_vs_ours`) also drawn as a heatmap, papers' rows above ours.

    Checks: every expected chapter stored its results at this profile, and every paper-vs-ours table is drawn,
    and only those (at least one). Returns the counts of paper-vs-ours tables and heatmaps drawn.

    Shown in: notebooks/summary.ipynb, Every replicated table."""
    import matplotlib.pyplot as plt
    from IPython.display import Markdown, display

    if stored.missing:
        raise ChapterCheckFailed(f"chapters without stored results at {run.profile}: {stored.missing}")
    heatmaps, paper_tables = 0, 0
    for name in stored.expected:
        record = stored.records[name]
        display(Markdown(f"### {name}"))
        for title, table in record["tables"].items():
            display(Markdown(f"**{title}**"))
            display(styled(table, caption(run.profile, record["sources"])))
            paper_tables += is_paper_vs_ours(table)
            figure = paper_vs_ours_heatmap(table, f"{name}: {title}", caption(run.profile, record["sources"]))
            if figure is not None:
                plt.show()
                heatmaps += 1
    if not heatmaps == paper_tables >= 1:
        raise ChapterCheckFailed(f"{heatmaps} heatmaps drawn for {paper_tables} paper-vs-ours tables: every one, and "
                                 "only those, must be drawn (at least one)")
    return {"paper-vs-ours tables": paper_tables, "heatmaps": heatmaps}
