"""What the SciToricsBERT page may pair with the paper, and what differs from it (issue 37).

**One pairing rule** (:func:`pairing`): a row of ours is set beside a row of Table 4 or Table 3 only where the
evaluation data, the model and the protocol are the paper's (:class:`Setting`); every other row is shown apart, with
the fields that differ as the reason. :func:`table4_pairs` and :func:`table3_pairs` apply it to the chapter's rows.

**What differs** (:func:`what_differs`): every :data:`DEVIATIONS` entry that applies to this run, as the page's
list. :data:`PAPER_SETTINGS` holds the paper's value of every parameter the book can vary; a run that sets one
otherwise without an entry covering it stops the chapter (a deviation never goes unstated).
Shown in: notebooks/scitoricsbert.ipynb (CSAbstruct test: ours next to Table 4; Table 3; What differs from the paper).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from sdr.book.chapter import ChapterCheckFailed
from sdr.methods.scitoricsbert.recipe import (BASELINES, CF_SECTIONS, LOSSES, PAPER_MAX_LENGTH, PAPER_MODEL_NAMES,
                                              RELEASED)

__all__ = ["Setting", "pairing", "PAPER_BASE_MODEL", "PAPER_SEEDS", "PAPER_TEST_SIZES", "table4_pairs",
           "table3_pairs", "PAPER_SETTINGS", "Deviation", "DEVIATIONS", "what_differs"]

PAPER_BASE_MODEL = "allenai/scibert_scivocab_uncased"
PAPER_SEEDS = 5
#: The evaluation sets as the paper scores them (Table 2): every sentence of each.
PAPER_TEST_SIZES = {"csabstruct": 1349, "pubmed_rct": 30135, "cf_sentences": 773 + 468 + 521 + 781}
_TEST_NAMES = {"csabstruct": "CSAbstruct test", "pubmed_rct": "PubMed 20k RCT test",
               "cf_sentences": "CF-labelled sentences (4 sections)"}


@dataclass(frozen=True)
class Setting:
    """What a row's numbers come from: the evaluation data, the model, the protocol (pooling, input length and, for
    a trained model, its training)."""

    data: str
    model: str
    protocol: str


def pairing(ours: Setting, paper: Setting | None, no_paper_row: str = "") -> str:
    """"" when ``ours`` pairs with ``paper`` (same data, model and protocol); otherwise why not: the paper has no such
    row (``no_paper_row``), or each field that differs, ours against the paper's."""
    if paper is None:
        return no_paper_row or "the paper has no such row"
    return "; ".join(f"{field}: ours {getattr(ours, field)}, the paper's {getattr(paper, field)}"
                     for field in ("data", "model", "protocol") if getattr(ours, field) != getattr(paper, field))


def _data(benchmark: str, scored: int, real: bool) -> str:
    return f"{_TEST_NAMES[benchmark]}, {scored:,} of {PAPER_TEST_SIZES[benchmark]:,} sentences" + (
        "" if real else " (a replica)")


def _paper_data(benchmark: str) -> str:
    return _data(benchmark, PAPER_TEST_SIZES[benchmark], True)


def _reading(pooling: str, tokens: int) -> str:
    return f"{'mean pooling' if pooling == 'mean' else '[CLS] of the last layer'}, {tokens} tokens"


def _model(name: str, layers: int) -> str:
    return name + (f" (first {layers} layers)" if layers else "")


def _trained(p, data_name: str, origin: str, seeds: int) -> str:
    steps = f"at most {p.max_batches_per_epoch} steps" if p.max_batches_per_epoch else "every batch"
    return (f"{_reading('cls', p.max_length)}; trained on {data_name}"
            + (f" ({origin})" if data_name == "CFS3" else "")
            + f", {p.epochs} epochs of {steps}, lr {p.learning_rate:g}, mean of {seeds} seeds")


def _paper_trained() -> str:
    return (f"{_reading('cls', PAPER_MAX_LENGTH)}; trained on CFS3 (release), 5 epochs of every batch, lr 2e-05, "
            f"mean of {PAPER_SEEDS} seeds")


def _rows(run, inputs, sets, ours: pd.DataFrame, baselines, trained, benchmark: str, scored: int, real: bool,
          columns: dict[str, str]) -> pd.DataFrame:
    """One row per row of ``ours`` (Table 4's or Table 3's): the paper row the rule pairs it with, or why not, and
    for a pair its scores (``columns``: ours → the paper table's) beside the paper's with the difference."""
    from sdr import book

    p = run.p
    table = book.read_paper_table("scitoricsbert_table4" if benchmark != "cf_sentences" else "scitoricsbert_table3")
    table = table.set_index("model")
    data, paper_data = _data(benchmark, scored, real), _paper_data(benchmark)
    seeds = trained.runs.groupby(["training set", "loss"]).size() if len(trained.runs) else pd.Series(dtype=int)
    rows = []
    for name in ours.index:
        why = ""
        external = {b.name: b for b in (*BASELINES, RELEASED)}.get(name)
        if name == baselines.untrained_mean:
            mine = Setting(data, _model(p.model_name, p.model_layers), _reading("mean", p.max_length))
            paper_row, theirs = "SciBERT avg.", Setting(paper_data, PAPER_BASE_MODEL, _reading("mean", PAPER_MAX_LENGTH))
        elif name == baselines.untrained_cls:
            mine, paper_row, theirs = Setting(data, _model(p.model_name, p.model_layers),
                                              _reading("cls", p.max_length)), None, None
            why = "the paper scores its base model with mean pooling only"
        elif external is RELEASED:
            mine = Setting(data, RELEASED.model, f"{_reading('cls', p.max_length)}; one released checkpoint")
            paper_row = RELEASED.table4 if benchmark != "cf_sentences" else RELEASED.table3
            theirs = Setting(paper_data, f"{PAPER_BASE_MODEL} fine-tuned (softmax loss)", _paper_trained())
        elif external is not None:
            reading = _reading(external.pooling, p.max_length)
            paper_reading = (f"pooler output over [CLS], {PAPER_MAX_LENGTH} tokens" if "SimCSE" in external.name
                             else _reading(external.pooling, PAPER_MAX_LENGTH))
            mine = Setting(data, _model(external.model, p.baseline_layers), reading)
            paper_row = external.table4 if benchmark != "cf_sentences" else external.table3
            theirs = Setting(paper_data, external.model, paper_reading)
        else:
            loss_name, data_name = name.split(" · ")
            loss = next(key for key, value in PAPER_MODEL_NAMES.items() if value == loss_name)
            count = int(seeds.get((data_name, loss), 0))
            mine = Setting(data, _model(p.model_name, p.model_layers),
                           _trained(p, data_name, inputs.cfs3_set.origin, count))
            paper_row = PAPER_MODEL_NAMES[loss] if data_name == "CFS3" else None
            theirs = Setting(paper_data, PAPER_BASE_MODEL, _paper_trained()) if paper_row else None
            why = "the paper trains on CFS3 only: the book's gold-label comparison"
        if paper_row is not None and paper_row not in table.index:
            raise ValueError(f"the pairing names paper row {paper_row!r}, which the paper table does not have")
        reason = pairing(mine, theirs, why if paper_row is None else "")
        row = {"ours": name, "paper row": paper_row or "—", "pairs": not reason, "why apart": reason}
        if not reason:
            for our_column, paper_column in columns.items():
                row[f"{paper_column} ours"] = float(ours.loc[name, our_column])
                row[f"{paper_column} paper"] = float(table.loc[paper_row, paper_column])
                row[f"{paper_column} difference"] = row[f"{paper_column} ours"] - row[f"{paper_column} paper"]
        rows.append(row)
    return pd.DataFrame(rows).set_index("ours")


def table4_pairs(run, inputs, sets, ours4: pd.DataFrame, baselines, trained) -> dict[str, pd.DataFrame]:
    """:func:`pairing` for every row of our Table 4, on each of its two test sets (a row may pair on CSAbstruct
    and not on a capped or replica PubMed-RCT): ``{"CSAbstruct": table, "PubMed-RCT": table}``."""
    return {
        "CSAbstruct": _rows(run, inputs, sets, ours4, baselines, trained, "csabstruct", len(sets.test_items),
                            inputs.csabstruct_test.real, {"csabstruct_p@1": "csabstruct_p@1",
                                                          "csabstruct_map@r": "csabstruct_map@r"}),
        "PubMed-RCT": _rows(run, inputs, sets, ours4, baselines, trained, "pubmed_rct", len(sets.pubmed_items),
                            inputs.pubmed_test.real, {"pubmedrct_p@1": "pubmedrct_p@1",
                                                      "pubmedrct_map@r": "pubmedrct_map@r"})}


def table3_pairs(run, inputs, sets, ours3: pd.DataFrame, baselines, trained) -> pd.DataFrame:
    """:func:`pairing` for every row of our Table 3 (the CF-labelled set: every sentence of its four sections)."""
    scored = sum(len(items) for items in inputs.cf_sections.values())
    return _rows(run, inputs, sets, ours3, baselines, trained, "cf_sentences", scored, inputs.cf_input.real,
                 {"avg_p@1": "avg_p@1", "avg_map@r": "avg_map@r"})


# ------------------------------------------------------------------------------------------------- what differs
#: The paper's value of every parameter of the chapter that changes what its tables mean (the paper profile's values:
#: App. B, §4.1, §4.3, Table 4's baselines); :func:`what_differs` stops the chapter when one differs unstated.
PAPER_SETTINGS: dict = {
    "model_name": PAPER_BASE_MODEL, "model_layers": 0, "cfs3_release": True, "max_length": PAPER_MAX_LENGTH,
    "epochs": 5, "learning_rate": 2e-5, "max_batches_per_epoch": 0, "max_valid": 0, "max_test": 0,
    "max_pubmed_test": 0, "leaderboard_seeds": PAPER_SEEDS, "secondary_test_seeds": 0, "losses": list(LOSSES),
    "paper_baselines": True, "baseline_layers": 0, "label_counts": [10, 20, 40], "label_losses": list(LOSSES),
    "label_seeds": PAPER_SEEDS, "label_max_steps": 0,
    # what the data policy resolved, and the parts run
    "csabstruct test": "real", "pubmed_rct test": "real", "cf_sentences": "real", "parts run": "every table's",
}


@dataclass(frozen=True)
class Deviation:
    """A way a run can differ from the paper: the settings it covers, whether it applies to this run, its line."""

    key: str
    covers: tuple[str, ...]
    applies: Callable[[dict], bool]
    text: Callable[[dict], str]


def _state(run, inputs, sets) -> dict:
    p = run.p
    parts = set(run.parts) or {"released", "main", "seeds", "labels", "gold_labels"}
    state = {key: getattr(p, key) for key in PAPER_SETTINGS if hasattr(p, key)}
    state.update({
        "csabstruct test": inputs.csabstruct_test.kind, "pubmed_rct test": inputs.pubmed_test.kind,
        "cf_sentences": inputs.cf_input.kind, "parts": parts,
        "parts run": "every table's" if {"released", "main", "seeds", "labels"} <= parts else "not every table's",
        "origin": inputs.cfs3_set.origin, "precision": getattr(p, "precision", "auto"),
        "few labels": sorted(name for name, (train, _) in sets.sets.items()
                             if len({str(i.label) for i in train}) < 64),
        "test scored": len(sets.test_items), "pubmed scored": len(sets.pubmed_items)})
    return state


def _differs(state: dict, *keys: str) -> bool:
    return any(state.get(key) != PAPER_SETTINGS[key] for key in keys)


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("model", ("model_name", "model_layers"), lambda s: _differs(s, "model_name", "model_layers"),
              lambda s: f"**Model**: {_model(s['model_name'], s['model_layers'])}, where the paper fine-tunes the "
                        f"whole of SciBERT ({PAPER_BASE_MODEL}): no trained row of ours pairs with the paper's."),
    Deviation("cfs3", ("cfs3_release",), lambda s: s["origin"] != "release",
              lambda s: "**CFS3** is " + ("the book's own build from the Academic Phrasebank and the sentences "
                                          "available offline (no S2ORC full text, no PPDB, no root check): hundreds "
                                          "of labelled sentences, not 100,016" if s["origin"] == "book build" else
                                          "the replica (the synthetic corpus' planted sentences)")
                        + ", not the released CFS3."),
    Deviation("budget", ("epochs", "learning_rate", "max_batches_per_epoch"),
              lambda s: _differs(s, "epochs", "learning_rate", "max_batches_per_epoch"),
              lambda s: f"**Training budget**: {s['epochs']} epochs of "
                        + (f"at most {s['max_batches_per_epoch']} optimizer steps" if s["max_batches_per_epoch"]
                           else "every batch")
                        + f" at lr {s['learning_rate']:g}, where the paper trains five full epochs at lr 2e-5 (a "
                          "CPU budget: the runs show the direction training moves the embeddings, not converged "
                          "numbers)."),
    Deviation("length", ("max_length",), lambda s: _differs(s, "max_length"),
              lambda s: f"**Input length** {s['max_length']} tokens in training and scoring (the Benchmarks "
                        f"chapter's CSAbstruct length, one length for the leaderboard), where the authors read "
                        f"{PAPER_MAX_LENGTH}."),
    Deviation("seeds", ("leaderboard_seeds",), lambda s: _differs(s, "leaderboard_seeds") or "seeds" not in s["parts"],
              lambda s: f"**Seeds**: {s['leaderboard_seeds'] if 'seeds' in s['parts'] else 1} a model, where the "
                        f"paper's rows are the mean of {PAPER_SEEDS}."),
    Deviation("losses", ("losses",), lambda s: set(s["losses"]) != set(LOSSES),
              lambda s: f"**Losses**: {', '.join(s['losses'])} of the five (the others have their unit tests; "
                        "`paper` trains all five)."),
    Deviation("subsets", ("max_valid", "max_test", "max_pubmed_test"),
              lambda s: _differs(s, "max_valid", "max_test", "max_pubmed_test"),
              lambda s: f"**Evaluation subsets**: {s['test scored']:,} CSAbstruct test sentences, {s['pubmed scored']:,} "
                        f"PubMed-RCT test sentences, {s['max_valid'] or 'all'} validation sentences (the paper scores "
                        "every one)."),
    Deviation("secondary", ("secondary_test_seeds",), lambda s: _differs(s, "secondary_test_seeds"),
              lambda s: f"**PubMed-RCT and the CF-labelled set** score the first {s['secondary_test_seeds']} seed(s) "
                        "of a model (and every seed of the check's model on CFS3)."),
    Deviation("replicas", ("csabstruct test", "pubmed_rct test", "cf_sentences"),
              lambda s: _differs(s, "csabstruct test", "pubmed_rct test", "cf_sentences"),
              lambda s: "**Replicas scored**: " + ", ".join(
                  name for name, key in (("CSAbstruct test", "csabstruct test"), ("PubMed-RCT test", "pubmed_rct test"),
                                         ("the CF-labelled set", "cf_sentences")) if s[key] != "real")
                        + " are synthetic sets in the real ones' layouts; their numbers are not comparable with the "
                          "paper's."),
    Deviation("baselines", ("paper_baselines", "baseline_layers"),
              lambda s: _differs(s, "paper_baselines", "baseline_layers") or "released" not in s["parts"],
              lambda s: ("**Tables 3-4's other baselines** and the released model are not scored at this run"
                         if not s["paper_baselines"] or "released" not in s["parts"] else
                         f"**Tables 3-4's baselines** keep their first {s['baseline_layers']} layers")
                        + "."),
    Deviation("labels", ("label_counts", "label_losses", "label_seeds", "label_max_steps"),
              lambda s: _differs(s, "label_counts", "label_losses", "label_seeds", "label_max_steps")
              or "labels" not in s["parts"],
              lambda s: ("**The label experiment (§4.3)** did not run (part `labels` not run)"
                         if "labels" not in s["parts"] else
                         f"**The label experiment (§4.3)** trains on {s['label_counts']} labels with "
                         f"{', '.join(s['label_losses'])}, {s['label_seeds']} seed(s)"
                         + (f", at most {s['label_max_steps']} steps a run instead of footnote 9's epochs"
                            if s["label_max_steps"] else ""))
                        + f" (the paper: 10, 20 and 40 labels, five losses, {PAPER_SEEDS} seeds)."),
    Deviation("parts", ("parts run",), lambda s: _differs(s, "parts run"),
              lambda s: f"**Parts run**: {', '.join(sorted(s['parts']))}; the others' rows are missing."),
    Deviation("glove", (), lambda s: True,
              lambda s: "**GloVe avg.** is not scored: the authors average glove.42B.300d vectors, which no package "
                        "the book can install ships; its row stays the paper's alone."),
    Deviation("simcse", (), lambda s: True,
              lambda s: "**SimCSE** is read at the last layer's [CLS]; the authors read its pooler output (a dense "
                        "layer and tanh over [CLS]), which the book's encoders do not offer: its rows stay apart."),
    Deviation("pk", (), lambda s: bool(s["few labels"]),
              lambda s: f"**PK batches with fewer labels than P = 64** ({', '.join(s['few labels'])}): every batch "
                        "holds all labels and still 64 sentences, spread evenly; the authors' sampler refuses such "
                        "data (the book's choice)."),
    Deviation("validation", (), lambda s: True,
              lambda s: "**Validation** scores every validation sentence after each epoch; the authors' loader "
                        "samples classes and drops a last partial batch."),
    Deviation("label subsets", (), lambda s: "labels" in s["parts"],
              lambda s: "**Label subsets** of one seed are nested (its 10 labels are among its 20) and footnote 9's "
                        "epochs are rounded half up: the paper says neither (the book's choices)."),
    Deviation("precision", (), lambda s: s["precision"] != "fp32",
              lambda s: f"**Precision** `{s['precision']}`: bf16 or fp16 autocast where a GPU has it, float32 on a "
                        "CPU; the paper does not state its precision."),
)


def what_differs(run, inputs, sets) -> str:
    """The page's "what differs from the paper" list for this run (Markdown bullets), from :data:`DEVIATIONS`.
    Checked: every setting of :data:`PAPER_SETTINGS` this run sets otherwise is covered by an entry that applies.
    Shown in: notebooks/scitoricsbert.ipynb, What differs from the paper, and why."""
    state = _state(run, inputs, sets)
    applied = [d for d in DEVIATIONS if d.applies(state)]
    covered = {key for d in applied for key in d.covers}
    unstated = [key for key, value in PAPER_SETTINGS.items() if key in state and state[key] != value
                and key not in covered]
    if unstated:
        raise ChapterCheckFailed(f"settings that differ from the paper with no line saying so: {unstated}")
    return "\n".join(f"* {d.text(state)}" for d in applied)
