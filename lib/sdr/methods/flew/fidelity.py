"""What the FLeW page claims against the paper (issue 37): one rule for pairing our rows with the paper's, and the
list of what differs from the paper, generated from the run.

**Pairing** (:func:`pair_with_paper`): a row of ours stands beside a paper row only when both were measured on the
same data (the real benchmark, not a replica), with the same model family (a BERT-base encoder such as SciBERT) and
by the same protocol (``title [SEP] abstract`` read with [CLS] at 512 tokens, as FLeW's eq. 1 and the benchmarks
read it); any other row is shown apart, with the reason. The paper's rows are shown either way.

**Differences** (:func:`differences`): the recipe choices the paper leaves open or that the book cannot make as the
paper did (the splitter, the bands, the graph, the grid, the tuning rule, the trainer's schedule), and every
setting of this run that is not the paper's (:data:`PAPER_SETTINGS`); the graph line names the route the run's
citation input came by (:func:`graph_source`). :func:`expect_differences_stated` checks that each fixed line
(:data:`FIXED_DIFFERENCES`), the graph's source, the tuning, the replicas and each differing setting has its line.

Shown in: notebooks/flew.ipynb, Ours next to the paper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from sdr.book.chapter import ChapterCheckFailed

__all__ = ["Setup", "PAPER_SETUP", "PAPER_ROW_OF", "PAPER_SETTINGS", "Paired", "pairing", "pair_with_paper",
           "data_of", "row_setups",
           "setting_differences", "graph_source", "graph_line", "differences", "FIXED_DIFFERENCES",
           "expect_differences_stated"]


@dataclass(frozen=True)
class Setup:
    """How a row was measured: the data it was scored on, the model family and the reading protocol."""

    data: str
    model: str
    protocol: str

    def mismatches(self, other: "Setup") -> list[str]:
        return [f"{name}: {mine} here, {theirs} in the paper" for name, mine, theirs in
                (("data", self.data, other.data), ("model", self.model, other.model),
                 ("protocol", self.protocol, other.protocol)) if mine != theirs]


#: FLeW's rows: SciBERT-sized BERT encoders (SciBERT and the models fine-tuned from it), the released benchmarks,
#: title [SEP] abstract read with [CLS] (eq. 1) at BERT's 512 tokens.
BERT_BASE = "BERT-base (SciBERT and the encoders fine-tuned from it)"
PAPER_PROTOCOL = "title [SEP] abstract, [CLS], 512 tokens"
PAPER_SETUP = Setup("the released benchmark", BERT_BASE, PAPER_PROTOCOL)

#: Our rows → the paper's row of Tables 1-3 each stands for (rows not named here have no paper counterpart); FLeW's
#: own row is "FLeW(ours)" in Tables 1-2 and "FLeW" in Table 3 (:func:`pairing` takes the name the table has).
PAPER_ROW_OF = {
    "untrained encoder": "SciBERT", "SPECTER (released)": "SPECTER", "SciNCL (released)": "SciNCL",
    "SPECTER-2 base (released, no adapter)": "SPECTER-2", "FLeW": "FLeW(ours)",
    "FLeW (published recipe)": "FLeW(ours)", "FLeW (released, split)": "FLeW(ours)",
    "FLeW-bg": "FLeW-bg (w/ Textual)", "FLeW-mt": "FLeW-mt (w/ Textual)", "FLeW-rs": "FLeW-rs (w/ Textual)",
    "FLeW-bg (published recipe)": "FLeW-bg (w/ Textual)", "FLeW-mt (published recipe)": "FLeW-mt (w/ Textual)",
    "FLeW-rs (published recipe)": "FLeW-rs (w/ Textual)",
    "FLeW-bg (released, split)": "FLeW-bg (w/ Textual)", "FLeW-mt (released, split)": "FLeW-mt (w/ Textual)",
    "FLeW-rs (released, split)": "FLeW-rs (w/ Textual)",
    "FLeW-bg w/o textual": "FLeW-bg (w/o Textual)", "FLeW-mt w/o textual": "FLeW-mt (w/o Textual)",
    "FLeW-rs w/o textual": "FLeW-rs (w/o Textual)", "FLeW w/o textual": "FLeW w/o Textual",
    "FLeW-bg (released, full: w/o textual)": "FLeW-bg (w/o Textual)",
    "FLeW-mt (released, full: w/o textual)": "FLeW-mt (w/o Textual)",
    "FLeW-rs (released, full: w/o textual)": "FLeW-rs (w/o Textual)",
    "FLeW (released, full: w/o textual)": "FLeW w/o Textual",
    "FLeW w/o structural (one encoder, whole graph)": "FLeW w/o Structural",
}


def _family(model_name: str) -> str:
    name = str(model_name).lower()
    if "minilm" in name:
        return "MiniLM (all-MiniLM-L6-v2)"
    return BERT_BASE if "scibert" in name else str(model_name)


def data_of(*inputs) -> str:
    """The data a row was scored on: "the released benchmark" when every input is the official release (its known
    digests match), else what it is (a replica, or a paper dry-run fixture)."""
    if all(item.official for item in inputs):
        return "the released benchmark"
    if all(item.real for item in inputs):
        return "real-shaped data that is not the release (a paper dry-run fixture)"
    return "a replica of the benchmark"


def row_setups(run, rows: Sequence[str], *inputs) -> dict[str, Setup]:
    """The setup of each of our rows scored on ``inputs`` (:func:`data_of`): the released models are BERT-base
    read with [CLS] at 512 tokens; every other row is the run's base model read as the run reads it (``pooling``;
    MiniLM with its own mean pooling), at ``max_length`` tokens."""
    p = run.p
    data = data_of(*inputs)
    reads_cls = p.pooling == "cls" and not _family(p.model_name).startswith("MiniLM")  # MiniLM: its own mean
    ours = Setup(data, _family(p.model_name),
                 f"title [SEP] abstract, {'[CLS]' if reads_cls else 'mean pooling'}, {p.max_length} tokens")
    released = Setup(data, BERT_BASE, PAPER_PROTOCOL)
    return {row: released if "(released" in row else ours for row in rows}


@dataclass
class Paired:
    """A paper table split by the pairing rule: the paper's rows with ours that pair with them (``paired``), and
    ours that do not, with the reason (``apart``)."""

    paired: pd.DataFrame
    apart: pd.DataFrame


def pairing(rows: Sequence[str], setups: Mapping[str, Setup], paper_models: Sequence[str],
            paper_setup: Setup = PAPER_SETUP, row_of: Mapping[str, str] = PAPER_ROW_OF) -> dict[str, tuple]:
    """The one pairing rule, row by row: ``{our row: (the paper row it pairs with, "")}`` when the paper has the row
    ``row_of`` names and the setups are equal, else ``{our row: (None, why apart)}``."""
    unknown = sorted(set(rows) - set(setups))
    if unknown:
        raise ValueError(f"pairing: no setup for our rows {unknown}")
    models, decided = set(paper_models), {}
    for row in rows:
        target = row_of.get(row)
        if target == "FLeW(ours)" and target not in models and "FLeW" in models:
            target = "FLeW"  # Table 3's name of the same row
        why = setups[row].mismatches(paper_setup)
        if target is None or target not in models:
            why = [f"no row of this paper table stands for it{f' ({target})' if target else ''}", *why]
        decided[row] = (None, "; ".join(why)) if why else (target, "")
    return decided


def pair_with_paper(ours: pd.DataFrame, paper: pd.DataFrame, columns: Sequence[str], setups: Mapping[str, Setup],
                    label: str, paper_setup: Setup = PAPER_SETUP, row_of: Mapping[str, str] = PAPER_ROW_OF) -> Paired:
    """The one pairing rule: each of our rows (the index of ``ours``) is paired with the paper row ``row_of`` names
    when its :class:`Setup` equals the paper's; otherwise it goes apart with every mismatch as its reason (and "no
    paper row" where the paper has none). ``paired`` holds every paper row, then our paired rows with a ``pairs
    with`` column; ``apart`` our other rows with ``why apart``."""
    from sdr.book.results import paper_vs_ours

    decided = pairing(ours.index, setups, paper["model"], paper_setup, row_of)
    paired_rows = [row for row, (target, _) in decided.items() if target]
    partners = [decided[row][0] for row in paired_rows]
    apart_rows = [row for row, (target, _) in decided.items() if not target]
    reasons = [decided[row][1] for row in apart_rows]
    table = paper_vs_ours(ours.loc[paired_rows], paper, list(columns), label)
    table.insert(2, "pairs with", [""] * len(paper) + partners)
    apart = ours.loc[apart_rows, list(columns)].copy()
    apart.insert(0, "why apart", reasons)
    return Paired(table, apart)


# ------------------------------------------------------------------------------------------------- differences
#: FLeW's settings the run's parameters are compared with: parameter → (the paper's value, where it says so).
PAPER_SETTINGS = {
    "model_name": ("allenai/scibert_scivocab_uncased", "§4.1: 'we initialize the model with SciBERT'"),
    "pooling": ("cls", "eq. 1: the final hidden state of [CLS]"),
    "epochs": (2, "§4.1: 2 epochs"),
    "effective batch": (10, "§4.1: batch size 10"),
    "learning_rate": (2e-5, "§4.1: 'λ = 2^-5' (SPECTER's and SciNCL's 2e-5)"),
    "max_queries": (0, "§4.1: the whole query list of 216k papers"),
    "leaderboard_seeds": (1, "one trained model per facet"),
}


def _ours(p, name):
    return p.batch_size * p.accumulation_steps if name == "effective batch" else getattr(p, name)


def setting_differences(p) -> dict[str, str]:
    """One line per setting of :data:`PAPER_SETTINGS` whose value in this run is not the paper's."""
    lines = {}
    for name, (paper, where) in PAPER_SETTINGS.items():
        ours = _ours(p, name)
        if ours != paper:
            lines[name] = f"`{name}` is {ours!r} here; the paper: {paper!r} ({where})."
    return lines


def graph_source(citations) -> str:
    """Where this run's citation graph comes from, read from its input (``inputs.citations``: its name, kind and, on
    the bulk route, the release its fetch fixed in ``release.json``)."""
    from sdr import datasets

    if not citations.real:
        return f"a replica ({citations.source})"
    if datasets.dry_run():
        return f"the paper dry run's fixture in the {citations.name} layout"
    if citations.name == "s2ag_bulk_flew":
        from sdr.fetchers.bulk import fixed_release

        record = fixed_release(citations.path)
        release = f"release {record['release_id']}" if record is not None else "one release"
        return (f"the Semantic Scholar bulk datasets of {release} (s2ag_bulk_flew: citations, papers and abstracts "
                "filtered to the released query list)")
    return f"today's Semantic Scholar Graph API ({citations.name}, fetched around the released query list)"


def graph_line(inputs, query_list=None) -> str:
    """The page's **Graph:** line, generated from the run's citation input (:func:`graph_source`)."""
    return (f"**Graph:** read from {graph_source(inputs.citations)}, not the 2024-04-02 S2AG release FLeW used"
            + (f" ({query_list.describe()})" if query_list is not None else "")
            + "; the `published` part trains on the released triplets.")


def differences(run, inputs, bands=None, weights: pd.DataFrame | None = None, query_list=None) -> list[str]:
    """What differs from the paper on this page, one markdown line each: the recipe choices (splitter, bands,
    graph, grid, tuning rule, trainer), the inputs that are replicas, and every setting of :func:`setting_differences`.
    ``bands``: the bands sampled with; ``weights``: FLeW's sum's weights per SciRepEval task (section 4), whose rules
    give the tuning line its counts; ``query_list``: the :class:`QueryList` (queries found in the fetched graph)."""
    from sdr.methods.flew.recipe import TABLE1_COLUMNS, simplex_grid

    p = run.p
    lines = [
        "**Splitter:** a sequential classifier trained on CSAbstruct stands in for FLeW's LoRA-tuned "
        "Llama-3.1-8B (its GPT-4o labels are not released); the `published` part trains on FLeW's own split "
        "abstracts instead.",
        graph_line(inputs, query_list),
        "**Bands:** FLeW gives no k; SciNCL's band sampler with its c's doubled (ten triplets a query)"
        + (f": {bands.describe()}" if bands is not None else "") + ".",
        f"**Grid:** FLeW's grid step is not given; {p.weight_step:g} here ({len(simplex_grid(p.weight_step))} "
        "weight triples with every weight > 0).",
        "**Trainer:** AdamW with weight decay 0.01, linear decay after 10 % warm-up, gradient clipping at 1.0 (the "
        "trainer's defaults); FLeW states Adam with weight decay and the learning rate only.",
    ]
    if weights is not None and not weights.empty:
        rules = weights.set_index("task")["rule"]
        columns = {column: names for column, names in TABLE1_COLUMNS.items()}
        tuned = [c for c, names in columns.items() if any(str(rules.get(n, "")).startswith("held-out") for n in names)]
        shared = [c for c, names in columns.items() if any(str(rules.get(n, "")).startswith("no validation")
                                                           for n in names)]
        lines.append(
            f"**Tuning:** FLeW searches the weights per task on validation data. Here {len(tuned)} of Table 1's 19 "
            f"columns (classification, regression) are tuned per task on a held-out share of their train split "
            f"(SciRepEval's test release has no validation split); {len(shared)} (proximity and search) share the "
            "weights tuned on MDCR's validation split: SciRepEval releases only their test qrels (SciDocs' own "
            "Cite/CoView/CoCite/CoRead val qrels exist in the SciDocs release, which this chapter does not read)"
            + (f"; {19 - len(tuned) - len(shared)} columns have no data here" if len(tuned) + len(shared) < 19
               else "") + ".")
    replicas = [item.name for item in run.data.inputs.values() if not item.real]
    if replicas:
        lines.append(f"**Data:** replicas stand in for {', '.join(replicas)} (the data table at the top).")
    lines.extend(setting_differences(p).values())
    lines.append("**CSFCube** is not in the paper: it is the book's facet benchmark (section 5).")
    return lines


#: The labels of the lines every FLeW page states whatever the run (:func:`differences`): the recipe choices the
#: paper leaves open or the book cannot make as the paper did.
FIXED_DIFFERENCES = ("**Splitter:**", "**Graph:**", "**Bands:**", "**Grid:**", "**Trainer:**", "**CSFCube**")


def expect_differences_stated(lines: Sequence[str], run, inputs, weights: pd.DataFrame | None = None) -> None:
    """The page's list of differences (``lines``) states every difference of this run: each fixed line of
    :data:`FIXED_DIFFERENCES`, the graph's source as the run's citation input gives it (:func:`graph_source`), the
    tuning line when the sum's ``weights`` were tuned, the replicas read, and every setting that differs from the
    paper (:func:`setting_differences`); raises :class:`ChapterCheckFailed` naming what is missing."""
    missing = [label.strip("*:") for label in FIXED_DIFFERENCES if not any(line.startswith(label) for line in lines)]
    source = graph_source(inputs.citations)
    if "Graph" not in missing and not any(line.startswith("**Graph:**") and source in line for line in lines):
        missing.append(f"Graph (read from {source})")
    if weights is not None and not weights.empty and not any(line.startswith("**Tuning:**") for line in lines):
        missing.append("Tuning")
    replicas = [item.name for item in run.data.inputs.values() if not item.real]
    if replicas and not any(line.startswith("**Data:**") and all(name in line for name in replicas)
                            for line in lines):
        missing.append(f"Data (replicas: {', '.join(replicas)})")
    missing += [name for name, line in setting_differences(run.p).items() if line not in lines]
    if missing:
        raise ChapterCheckFailed(f"the page's list of differences from the paper lacks {missing}")
