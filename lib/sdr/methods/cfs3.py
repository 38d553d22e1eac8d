"""The CFS3 chapter's registries (its steps are :mod:`sdr.cfs3.chapter`): its parts, its whole cost up front, the
branches of the ``paper`` path the dry run must take, and what differs from the paper (issues 30 and 37).

CFS3 trains nothing: its cost is the downloads and a few CPU minutes of tokenising and matching the book's offline
sentence pool (the ~46 K sentences of CSAbstruct train, SciCite, CSFCube and the S2ORC sample that the data mirror
holds, not the paper's 19 M S2ORC sentences), with the dependency parser's root check at ``paper``.
Shown in: notebooks/cfs3.ipynb (``run.show_plan()``, the parts of the steps, "What differs from the paper").
"""

from __future__ import annotations

from dataclasses import dataclass

from sdr.plan import CostPlan, Part, Work, resolve_parts

__all__ = ["PARTS", "DOWNLOADS", "POOL_SENTENCES", "TOKENISE_PER_S", "PARSE_PER_S", "MATCH_PER_S", "cost_plan",
           "DRY_RUN_BRANCHES", "Deviation", "DEVIATIONS", "PAPER_SETTINGS", "what_differs"]

PARTS: dict[str, Part] = {part.name: part for part in (
    Part("main", "§3.1-3.2: the phrases, the n-gram list, the sentence pool and the labelled sentences at n = 5 (the "
                 "counts next to §3.1-3.2), Table 1's and Figure 2's examples, the label distribution and the check "
                 "against CSAbstruct's human labels", headline=True,
         t4="minutes on the CPU: no GPU work"),
    Part("sweeps", "footnote 4: the other n-gram lengths (n_sweep), matched on the same tokenised pool",
         t4="seconds on the CPU: no GPU work"),
    Part("released", "the released CFS3 (Alab-NII/CFS3): its n-gram list and labelled sentences against ours",
         headline=True, t4="minutes on the CPU: no GPU work"),
)}

#: What the chapter downloads at ``paper`` (the registry's files of each data set a paper run reads): bytes as in the
#: data mirror's pinned files, measured; the CFS3 release's an estimate (100,016 sentences of ≈ 200 bytes, in
#: CFS3.jsonl and again in its two splits, and the n-gram list).
DOWNLOADS: dict[str, tuple[int, str]] = {
    "academic_phrasebank": (173_801, "measured: the six pages of the 2022 crawl"),
    "csabstruct": (2_623_812, "measured: train, dev and test as pinned"),
    "scicite": (1_977_180, "measured: dev and test as pinned"),
    "csfcube": (631_930, "measured: the ten files a paper run reads"),
    "s2orc_sample": (1_393_195, "measured: the 1,000-paper metadata sample"),
    "cfs3": (45_000_000, "estimated: 100,016 sentences of ≈ 200 bytes, twice, and the n-gram list"),
}
#: The offline pool a ``paper`` run labels: the data mirror's four sources before the leakage filter
#: (:data:`sdr.cfs3.MIRROR_COUNTS`; the paper's S2ORC pool of 19 M sentences is not available).
POOL_SENTENCES = 45_977
#: spaCy tokenising and lemmatising without a parser, sentences a second: measured on the mirror's pool on the
#: book's 2-core CPU machine (5,701/s under a load of 7; the smoke chapter printed 7,622/s).
TOKENISE_PER_S = 5_701.0
#: With en_core_web_sm's dependency parser (``paper``): an assumption of 1,000 sentences a second on one core; the
#: parser is not installed where the book is built, so this was not measured.
PARSE_PER_S = 1_000.0
#: Matching a tokenised pool with one n-gram list, sentences a second: measured on the mirror's pool (n = 3 to 6:
#: 87 K to 143 K a second; the slowest is used).
MATCH_PER_S = 87_000.0
#: Requests a second the plan assumes for downloads (raw GitHub files; an upper bound on the time).
REQUESTS_PER_S = 1.0


def cost_plan(p) -> CostPlan:
    """Everything the CFS3 chapter does with parameters ``p``: the downloads of every data set a paper run reads
    (:data:`sdr.datasets.CHAPTER_DATA`), tokenising the pool once (with the parser when ``parser`` names one), and
    matching it with the n-gram list of ``n`` (main) and of each other length of ``n_sweep`` (sweeps). The pool is
    ``max_sentences`` when it caps it, else the mirror's (:data:`POOL_SENTENCES`)."""
    from sdr import datasets

    pool = min(int(p.max_sentences), POOL_SENTENCES) if p.max_sentences else POOL_SENTENCES
    rate, rate_how = ((PARSE_PER_S, f"{PARSE_PER_S:,.0f} sentences/s with the parser (assumed, not measured)")
                      if p.parser else (TOKENISE_PER_S, f"{TOKENISE_PER_S:,.0f} sentences/s (measured, no parser)"))
    work = []
    for name in datasets.CHAPTER_DATA["cfs3"]:
        size, how = DOWNLOADS[name]
        part = "released" if name == "cfs3" else "main"
        work.append(Work(part, f"download {name}", "fetch", download_bytes=size,
                         requests=len(datasets.paper_files(datasets.get(name))), requests_per_s=REQUESTS_PER_S,
                         how=f"{how}; {REQUESTS_PER_S:g} request/s assumed"))
    work.append(Work("main", f"tokenise and lemmatise the pool ({pool:,} sentences)", "cpu", hours=pool / rate / 3600,
                     how=rate_how))
    work.append(Work("main", f"match the pool with the {p.n}-gram list", "cpu", hours=pool / MATCH_PER_S / 3600,
                     how=f"{MATCH_PER_S:,.0f} sentences/s (measured)"))
    others = sorted(set(p.n_sweep) - {p.n})
    if others:
        work.append(Work("sweeps", f"match it with the n-gram lists of n = {', '.join(map(str, others))}", "cpu",
                         runs=len(others), hours=pool / MATCH_PER_S / 3600,
                         how=f"{MATCH_PER_S:,.0f} sentences/s (measured), the pool tokenised once"))
    work.append(Work("released", "read the release and compare its n-gram list and sentences with ours", "cpu",
                     hours=100_016 / MATCH_PER_S / 3600, how="as fast as matching (assumed)"))
    return CostPlan("cfs3", p.profile, dict(PARTS), work, resolve_parts(getattr(p, "parts", "all"), PARTS))


#: The ``paper`` path's branches the dry run must take (recorded by the chapter's steps with ``run.branch``): the
#: pool is read from the real sources' layouts, not the synthetic corpus; the released CFS3 is read and compared.
#: The parser's root check is not listed: en_core_web_sm is not installed where the dry run runs (the step says so).
DRY_RUN_BRANCHES = ("pool from the sentence sources", "released CFS3 compared")


# ------------------------------------------------------------------------------------------------- what differs
@dataclass(frozen=True)
class Deviation:
    """One way a run can differ from the paper: ``applies(state)`` says whether it does in this run, ``text(state)``
    says how (and why) in a line of the page."""

    key: str
    applies: object  # Callable[[dict], bool]
    text: object  # Callable[[dict], str]


#: The paper's construction, as the settings the book can vary (§3.1-3.2, Appendix A): each that a run sets
#: otherwise must be covered by a :data:`DEVIATIONS` entry (:func:`what_differs` checks it).
PAPER_SETTINGS = {"n": 5, "ppdb": True, "root_check": True, "pool": "S2ORC", "sentence_splitter": "NLTK",
                  "multi_label": "unstated", "phrasebank": "real", "max_sentences": 0, "table_cells": "unstated"}


def _state(run, inputs, phrases, pool, matching) -> dict:
    p = run.p
    return {"n": p.n, "ppdb": bool(p.ppdb_path), "root_check": bool(matching.stats.root_check),
            "pool": "synthetic" if pool.synthetic else "offline", "sentence_splitter": "pysbd",
            "multi_label": p.multi_label, "phrasebank": "real" if inputs.real_phrasebank else (
                "phrase list" if p.phrasebank_dir else "replica"),
            "max_sentences": p.max_sentences, "table_cells": p.table_cells, "phrases": phrases.augmented,
            "pool_size": len(pool.sentences), "parser": p.parser, "labelled": matching.stats.labelled}


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("n", lambda s: s["n"] != 5,
              lambda s: f"**n-gram length {s['n']}**, where the paper builds CFS3 with 5-grams (footnote 4)."),
    Deviation("ppdb", lambda s: not s["ppdb"],
              lambda s: f"**No PPDB augmentation**: {s['phrases']:,} phrases, where the paper grows them to 30,505 "
                        "with PPDB 2.0 (gigabytes, not downloadable where the book is built; `ppdb_path` applies it)."),
    Deviation("root_check", lambda s: not s["root_check"],
              lambda s: "**No root check**: the n-gram need not contain the sentence's dependency root, so more "
                        "sentences are labelled than the paper's rule allows ("
                        + (f"the parser {s['parser']!r} is not installed" if s["parser"] else "no parser given")
                        + ")."),
    Deviation("pool", lambda s: s["pool"] != "S2ORC",
              lambda s: f"**The sentence pool** is {s['pool_size']:,} sentences "
                        + ("of the synthetic corpus (no real source found)" if s["pool"] == "synthetic" else
                           "of CSAbstruct train, SciCite, CSFCube and the S2ORC metadata sample (abstracts only: "
                           "the sample's full text could not be retrieved, so Appendix A's body-text filter is off)")
                        + ", not the paper's ~19 M sentences of ~1 M S2ORC papers; hence far fewer labelled "
                          f"sentences ({s['labelled']:,} against 100,016) and labels."),
    Deviation("sentence_splitter", lambda s: s["sentence_splitter"] != "NLTK",
              lambda s: "**Sentences are split with pysbd**; the paper used NLTK's tokenizer."),
    Deviation("multi_label", lambda s: True,
              lambda s: f"**Sentences matching n-grams of several labels**: `{s['multi_label']}` (the paper does not "
                        "say what it did)."),
    Deviation("table_cells", lambda s: True,
              lambda s: f"**Phrasebank tables** are read as `{s['table_cells']}` (the paper does not say how its "
                        "phrases were taken from the site's tables)."),
    Deviation("phrasebank", lambda s: s["phrasebank"] != "real",
              lambda s: "**The phrases** are " + ("a phrase list of one's own (`phrasebank_dir`)"
                                                  if s["phrasebank"] == "phrase list" else
                                                  "a replica (the synthetic corpus' phrases and a file written for "
                                                  "this book)") + ", not the Academic Phrasebank."),
    Deviation("crawl", lambda s: s["phrasebank"] == "real",
              lambda s: "**The Phrasebank crawl is of 2022**; the paper's (2021) differed: two of its Table 1 "
                        "examples match a phrase the 2022 crawl lists under two labels, dropped as ambiguous."),
    Deviation("max_sentences", lambda s: bool(s["max_sentences"]),
              lambda s: f"**The pool is capped** at {s['max_sentences']:,} sentences (`max_sentences`)."),
)


def what_differs(run, inputs, phrases, pool, matching) -> str:
    """The page's "what differs from the paper" list for this run (Markdown bullets): every :data:`DEVIATIONS` entry
    that applies. Checked: every setting of :data:`PAPER_SETTINGS` this run sets otherwise is covered by an entry that
    applies (a deviation without its line fails the chapter). Shown in: notebooks/cfs3.ipynb, What differs from the
    paper."""
    from sdr.book.chapter import ChapterCheckFailed

    state = _state(run, inputs, phrases, pool, matching)
    lines = [d for d in DEVIATIONS if d.applies(state)]
    stated = {d.key for d in lines}
    unstated = [key for key, value in PAPER_SETTINGS.items() if state.get(key) != value and key not in stated]
    if unstated:
        raise ChapterCheckFailed(f"settings that differ from the paper with no line saying so: {unstated}")
    return "\n".join(f"* {d.text(state)}" for d in lines)
