"""What the CoSaEmb page claims beside the paper (issue 37): the leakage audit of its training papers against the
evaluation sets, the list of what differs from the paper, and the one rule by which a row of ours is set beside a
row of the paper.

* :func:`leakage_audit` — the papers whose text is trained on (SPECTER's triplets and the full-text papers) against
  SciRepEval's SciDocs tasks, its other tasks and CSFCube, in both id spaces the triplets carry (S2 corpus ids and
  SciDocs' paper shas); the held-out paragraph papers must share none of their sections with training.
* :func:`what_differs` — the page's "what differs from the paper" list, generated from the run (its parameters, its
  data, what it trained and measured); :func:`check_deviations` stops the page when a setting that differs from the
  paper's has no line.
* :func:`pair_rows` — each of our rows beside the paper's row of the same model only where the evaluation data, the
  model and the protocol are the same; otherwise apart, with the reason.

Shown in: notebooks/cosaemb.ipynb ("Leakage", "What differs from the paper", the pairs under Tables 4-6).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from sdr.book.chapter import ChapterCheckFailed
from sdr.methods.cosaemb.chunking import parse_chunk_id

__all__ = ["Leakage", "leakage_audit", "SETTINGS", "ALWAYS", "what_differs", "check_deviations", "deviations_markdown",
           "RowSetup", "PAPER_ROWS", "pair_rows", "our_setups", "paired_table"]


# ================================================================================================ leakage
@dataclass
class Leakage:
    """Training papers found in each evaluation set (``table``), and the ids trained on."""

    table: pd.DataFrame
    trained_papers: int

    def describe(self) -> str:
        rows = "; ".join(f"{r.eval_set}: {r.shared:,} of {r.size:,} ({100 * r.share:.1f} %)"
                         for r in self.table.itertuples())
        return f"{self.trained_papers:,} papers trained on (any text of theirs in a triplet); found in {rows}"


def _trained_paper_ids(source, built) -> set[str]:
    """Every paper whose text a training triplet holds: a chunk's paper, or a paper id (its abstract input)."""
    ids = set()
    for t in built.triplets:
        for i in (t.query, t.positive, t.negative):
            chunk = parse_chunk_id(i)
            ids.add(chunk[0] if chunk is not None else i)
    return ids


def leakage_audit(run, source, split, built, csfcube, scirepeval) -> Leakage:
    """The papers trained on (:func:`_trained_paper_ids`) found in each evaluation set: SciRepEval's SciDocs tasks
    (the SciDocs papers SPECTER's training set is known to overlap), its other tasks and CSFCube, each compared in
    both id spaces of the triplets (the S2 corpus id and SciDocs' paper sha; an evaluation id matching either
    counts). Nothing is removed: the paper trains on SPECTER's set as it is and audits nothing; the page reports
    the overlap. Check: no section of a held-out paragraph paper is trained on (the paragraph set is unseen).
    Shown in: notebooks/cosaemb.ipynb, "Leakage: training papers in the evaluation sets"."""
    trained = _trained_paper_ids(source, built)
    spaces = {"corpus id": set(), "sha": set()}
    for pid in trained:
        metadata = source.papers[pid].metadata if pid in source.papers else {}
        spaces["corpus id"].add(str(metadata.get("corpus_id", pid)))
        spaces["sha"].add(str(metadata.get("sha", pid)))
    groups: dict[str, set[str]] = {}
    for name, (group, ids) in scirepeval.task_ids.items():
        key = "SciRepEval: SciDocs tasks" if group == "scidocs" else "SciRepEval: the other tasks"
        groups.setdefault(key, set()).update(ids)
    groups["CSFCube"] = set(map(str, csfcube.papers))
    rows = []
    for name, ids in groups.items():
        by_space = {space: ids & found for space, found in spaces.items()}
        shared = set.union(*by_space.values())
        rows.append({"eval_set": name, "size": len(ids), "shared": len(shared),
                     "share": len(shared) / len(ids) if ids else 0.0,
                     **{f"shared by {space}": len(found) for space, found in by_space.items()},
                     "examples": sorted(shared)[:5]})
    sections_trained = {parse_chunk_id(i)[0] for t in built.triplets for i in (t.query, t.positive)
                        if parse_chunk_id(i) is not None}
    held = sections_trained & set(split.papers)
    if held:
        raise ChapterCheckFailed(f"held-out paragraph papers whose sections are trained on: {sorted(held)[:5]}")
    run.branch("leakage audited")
    return Leakage(pd.DataFrame(rows), len(trained))


# ================================================================================================ what differs
def _differs(p) -> dict[str, str]:
    """The settings of ``p`` that differ from the paper's (§4 Training Details, :data:`PAPER_TRAINING`; every margin
    setting trained, every triplet, one direction, one run), each with its line."""
    from sdr import book
    from sdr.methods.cosaemb.recipe import MARGIN_RUNS, PAPER_TRAINING

    paper = PAPER_TRAINING
    lines = {}
    if p.model_name != paper["model"] or p.model_layers:
        lines["model"] = (f"The encoder is {book.base_model_label(p.model_name, p.model_layers)}, not SciBERT "
                          f"({paper['model']}).")
    if p.max_length != paper["max_length"]:
        lines["max_length"] = f"Chunks and inputs of {p.max_length} tokens, not {paper['max_length']}."
    if p.epochs != paper["epochs"]:
        lines["epochs"] = f"{p.epochs} epoch{'s' if p.epochs != 1 else ''}, not {paper['epochs']}."
    if p.batch_size * p.accumulation_steps != paper["batch_size"]:
        lines["batch"] = (f"An effective batch of {p.batch_size * p.accumulation_steps} triplets, not "
                          f"{paper['batch_size']}.")
    if p.learning_rate != paper["learning_rate"]:
        lines["learning_rate"] = f"A learning rate of {p.learning_rate:g}, not {paper['learning_rate']:g}."
    if p.schedule != paper["schedule"] or p.warmup_ratio != paper["warmup_ratio"]:
        lines["schedule"] = (f"A {p.schedule} schedule with {p.warmup_ratio:g} of the steps warming up, not the "
                             f"paper's slanted-triangular one with {paper['warmup_ratio']:g}.")
    if p.max_triplets:
        lines["max_triplets"] = (f"Each run trains a seeded subset of {p.max_triplets:,} triplets (the kinds in their "
                                 "proportions), not every triplet.")
    if p.both_directions:
        lines["both_directions"] = ("The reversed intra-document pairs (eqs. 8-9) are trained too; the paper counts "
                                    "one direction.")
    if list(p.margin_runs) != list(MARGIN_RUNS):
        left = [name for name in MARGIN_RUNS if name not in p.margin_runs]
        lines["margin_runs"] = f"Margin settings not in `margin_runs`: {', '.join(left)}."
    if p.leaderboard_seeds != 1:
        lines["seeds"] = (f"The leaderboard models train with {p.leaderboard_seeds} seeds; the paper reports one run "
                          "of each.")
    return lines


SETTINGS = ("model", "max_length", "epochs", "batch", "learning_rate", "schedule", "max_triplets", "both_directions",
            "margin_runs", "seeds")
"""The settings :func:`_differs` compares with the paper's; a differing one must have its line on the page."""
ALWAYS = ("training data", "headings", "pooling", "sentences", "optimizer", "held out", "paragraph set", "csfcube",
          "scirepeval", "table 4", "control", "leakage", "parts")
"""The lines every page states, whatever the run (the paper leaves these open, or the book cannot follow it)."""


def what_differs(run, inputs, split, built, runs, scirepeval, leakage) -> dict[str, str]:
    """What differs from the paper in this run, one line per difference (``{key: line}``), generated from its
    parameters (:func:`_differs`), its data, what it trained and what it measured; :func:`check_deviations` holds
    it to every setting that differs and to the lines of :data:`ALWAYS`.
    Shown in: notebooks/cosaemb.ipynb, "What differs from the paper"."""
    from sdr.methods.cosaemb.chapter import CONTROL
    from sdr.methods.cosaemb.parts import PARTS

    p = run.p
    counts = __import__("sdr.book", fromlist=["x"]).read_paper_table("cosaemb_counts").set_index("model")
    paper_papers = int(counts.loc["papers with full text (S2ORC)", "count"])
    lines = dict(_differs(p))
    lines["training data"] = (
        f"Training data: {inputs.triplets.source} and {inputs.full_text.source}; "
        f"{built.report.papers_with_triplets:,} papers gave intra-document triplets (the paper: full text of "
        f"{paper_papers:,} papers of SPECTER's set, extracted from an earlier S2ORC).")
    lines["headings"] = ("The heading rule's keywords are this book's own: the paper's seed keywords come from "
                         "25,482 hand-sorted headings (Chakraborty et al.) that are not public.")
    lines["pooling"] = (f"A text's vector is its {'[CLS] vector' if p.pooling == 'cls' else 'mean token vector'}: the "
                        "paper does not say how it pools.")
    lines["sentences"] = (f"Sentences are split by {p.sentence_splitter} (`sentence_splitter`): the paper names no "
                          "splitter.")
    lines["optimizer"] = ("AdamW with weight decay 0.01 and gradients clipped at norm 1.0 (the book's trainer's "
                          "defaults; the paper names neither); its slanted-triangular schedule falls to 1/32 of the "
                          "peak (Howard & Ruder), which the paper does not state; the batch is one device's "
                          f"{p.batch_size} × {p.accumulation_steps} accumulation steps, not three V100s' (a triplet "
                          "loss has no in-batch negatives, so the loss is the same).")
    lines["held out"] = (f"{len(split.papers):,} full-text papers are held out for the paragraph set, with the "
                         f"{len(split.inter_heldout):,} SPECTER triplets of their queries: the paper trains on all.")
    lines["paragraph set"] = (
        f"Table 6's set here: the aspect texts of {len(split.papers):,} held-out papers of the training data "
        f"({inputs.full_text.kind}), read as `<aspect token> text` without the title; the paper's is 1,500 arXiv "
        "papers (cs.CL, cs.AI) of 2022, which it does not release, and it does not say how a section is formatted.")
    lines["csfcube"] = ("CSFCube queries put the facet's tokens after [SEP], where [ABS] stands: the paper gives "
                        f"the tokens, not their order; texts are cut at {p.csfcube_max_length} tokens.")
    counted = getattr(scirepeval, "counted", {}) or {}
    lines["scirepeval"] = ("SciRepEval (Table 5): plain embeddings of each model, no adapters, no control codes "
                           "(the paper's rows are CoSaEmb + Adapters + MTL CTRL and the SciRepEval model), no few-shot "
                           f"runs; averages over the tasks present ({counted or 'none scored'}).")
    lines["table 4"] = ("Table 4's CoSaEmb cells of the result facet and the aggregate are lost in the paper's "
                        "extracted text: not compared.")
    lines["control"] = (f"The control ({CONTROL}) is the book's, not the paper's: it tests Table 6's claim that the "
                        "gain is not more training data." + ("" if CONTROL in runs.fits else " Not trained here."))
    scidocs = leakage.table.set_index("eval_set")["share"].get("SciRepEval: SciDocs tasks") if leakage else None
    lines["leakage"] = ("Training papers found in the evaluation sets are kept, as the paper keeps them (it audits "
                        "none)" + (f"; {100 * scidocs:.1f} % of the papers of SciRepEval's SciDocs tasks are training "
                                   "papers here" if scidocs is not None else "") + ".")
    missing = [name for name in PARTS if name not in run.parts and name not in ("seeds",)]
    lines["parts"] = ("Parts not run: " + ", ".join(f"{name} ({PARTS[name].reproduces})" for name in missing) + "."
                      if missing else "Every part of the chapter ran.")
    if not run.data.policy.real_only:
        lines["parts"] += (" The released checkpoints (Table 4's SciBERT and SPECTER rows) are read at the paper "
                           "profile only: this profile runs offline.")
    check_deviations(lines, p)
    return lines


def check_deviations(lines: Mapping[str, str], p) -> None:
    """Every setting of ``p`` that differs from the paper's and every line of :data:`ALWAYS` has its line: raises
    :class:`~sdr.book.ChapterCheckFailed` naming the missing ones (a deviation the page would not state)."""
    wanted = [*_differs(p), *ALWAYS]
    missing = [key for key in wanted if not lines.get(key)]
    if missing:
        raise ChapterCheckFailed(f"what differs from the paper: no line for {missing}")


def deviations_markdown(lines: Mapping[str, str]) -> str:
    """The list as Markdown bullets, for the page."""
    return "\n".join(f"* {line}" for line in lines.values())


# ================================================================================================ pairing
@dataclass(frozen=True)
class RowSetup:
    """What a table row was measured on: the evaluation ``data``, the ``model`` (base and training), the ``protocol``
    (how it was trained and how it read a text)."""

    data: str
    model: str
    protocol: str


NOT_STATED = "not stated by the paper"
CSFCUBE_RELEASED = "CSFCube test folds (the released collection)"
ARXIV_SET = "1,500 arXiv papers (cs.CL, cs.AI) of 2022, not released"
PAPER_PROTOCOL = "the paper's settings (§4): every triplet, 2 epochs, batch 32, lr 2e-5, 512 tokens"
PAPER_ROWS = {
    "cosaemb_csfcube": {
        "SciBERT": RowSetup(CSFCUBE_RELEASED, "SciBERT (untrained)", NOT_STATED),
        "SPECTER": RowSetup(CSFCUBE_RELEASED, "SPECTER (released)", NOT_STATED),
        "OAG-BERT": RowSetup(CSFCUBE_RELEASED, "OAG-BERT (released)", NOT_STATED),
        "ASPIRE": RowSetup(CSFCUBE_RELEASED, "ASPIRE (released)", NOT_STATED),
        "CoSaEmb": RowSetup(CSFCUBE_RELEASED, "SciBERT + CoSaEmb (1, 2, 3)",
                            PAPER_PROTOCOL + "; queries with the facet tokens"),
    },
    "cosaemb_paragraphs": {
        "SciBERT": RowSetup(ARXIV_SET, "SciBERT (untrained)", NOT_STATED),
        "SPECTER": RowSetup(ARXIV_SET, "SPECTER (released)", NOT_STATED),
        "CoSaEmb (w/o margin gradation, 1/1/1)": RowSetup(ARXIV_SET, "SciBERT + CoSaEmb (1, 1, 1)", PAPER_PROTOCOL),
        "CoSaEmb (with margin gradation, 1/2/3)": RowSetup(ARXIV_SET, "SciBERT + CoSaEmb (1, 2, 3)", PAPER_PROTOCOL),
    },
    "cosaemb_scirepeval": {
        "SciRepEval (SciNCL + Adapters + MTL CTRL)": RowSetup("SciRepEval's tasks", "SciRepEval (released)",
                                                              "adapters and control codes per task format"),
        "CoSaEmb + Adapters + MTL CTRL": RowSetup("SciRepEval's tasks", "SciBERT + CoSaEmb (1, 2, 3)",
                                                  "adapters and control codes per task format (multi-task "
                                                  "training on top of CoSaEmb)"),
    },
}
"""How the paper's rows were measured, as far as it says (``NOT_STATED`` where it does not): the paper side of
:func:`pair_rows`."""


def pair_rows(ours: Mapping[str, RowSetup], paper: Mapping[str, RowSetup]) -> pd.DataFrame:
    """The one rule by which our rows meet the paper's: a row of ours is paired with the paper's row whose data,
    model and protocol are all the same; otherwise it stands apart, with the first of the three that differs from
    the paper's row of the same model (or "no row of this model in the paper"). Returns one row per row of ours:
    ``our row``, ``paper row`` (empty when apart), ``why apart``."""
    rows = []
    for name, setup in ours.items():
        same = [row for row, theirs in paper.items() if theirs == setup]
        if same:
            rows.append({"our row": name, "paper row": same[0], "why apart": ""})
            continue
        model = [(row, theirs) for row, theirs in paper.items() if theirs.model == setup.model]
        if not model:
            reason = f"no row of this model ({setup.model}) in the paper"
        else:
            row, theirs = model[0]
            field = next(f for f in ("data", "protocol") if getattr(theirs, f) != getattr(setup, f))
            reason = f"{field}: ours {getattr(setup, field)}; the paper's {row} row {getattr(theirs, field)}"
        rows.append({"our row": name, "paper row": "", "why apart": reason})
    return pd.DataFrame(rows, columns=["our row", "paper row", "why apart"])


def our_setups(run, inputs, table: str, names) -> dict[str, RowSetup]:
    """The setups of our rows ``names`` of ``table`` (a paper table of :data:`PAPER_ROWS`), from the run: the data the
    row was scored on, the model (the base model and the run it is), and the protocol (the paper's settings only
    where no setting differs, :func:`_differs`)."""
    from sdr import book
    from sdr.methods.cosaemb.chapter import CONTROL

    p = run.p
    base = "SciBERT" if p.model_name == "allenai/scibert_scivocab_uncased" and not p.model_layers \
        else book.base_model_label(p.model_name, p.model_layers)
    settings = _differs(p)
    trained = PAPER_PROTOCOL if not settings else "the book's: " + "; ".join(
        settings[k] for k in ("model", "max_length", "epochs", "batch", "learning_rate", "schedule", "max_triplets",
                              "both_directions") if k in settings)
    if table == "cosaemb_csfcube":
        data = CSFCUBE_RELEASED if inputs.csfcube.official else f"CSFCube ({inputs.csfcube.source})"
        reading = (f"; queries with the facet tokens" if p.csfcube_max_length == 512
                   else f"; queries with the facet tokens, {p.csfcube_max_length} tokens")
    elif table == "cosaemb_paragraphs":
        data, reading = f"held-out papers of the training data ({inputs.full_text.kind})", ""
    else:
        data, reading = f"SciRepEval ({inputs.scirepeval.kind})", "; plain embeddings"
    setups = {}
    for name in names:
        if name == "untrained":
            setups[name] = RowSetup(data, f"{base} (untrained)", f"CoSaEmb's inputs, {p.pooling} pooling{reading}")
        elif name in ("SPECTER", "SPECTER (official rankings)"):
            setups[name] = RowSetup(data, "SPECTER (released)", "title [SEP] abstract, [CLS]" + (
                "; the rankings shipped with CSFCube" if "official" in name else reading))
        elif name == CONTROL or name.endswith(CONTROL):
            setups[name] = RowSetup(data, f"{base} + the inter-document-only control", trained + reading)
        else:
            margins = name.removeprefix("CoSaEmb recipe: ").split(" (", 1)[-1].rstrip(")")
            setups[name] = RowSetup(data, f"{base} + CoSaEmb ({margins})", trained + reading)
    return setups


def paired_table(run, inputs, table: str, ours: pd.DataFrame, paper: pd.DataFrame, metrics) -> pd.DataFrame:
    """:func:`pair_rows` of our rows (``ours``' index) against the paper table's rows, with ours − the paper's on each
    metric of a paired row (empty where apart). Checks: :data:`PAPER_ROWS` describes exactly the paper table's rows.
    Shown in: notebooks/cosaemb.ipynb, under Tables 4-6."""
    described = PAPER_ROWS[table]
    if set(described) != set(paper["model"]):
        raise ChapterCheckFailed(f"data/paper_tables/{table}.csv rows {sorted(paper['model'])} are not the rows whose "
                                 f"setup the pairing rule knows {sorted(described)}")
    pairs = pair_rows(our_setups(run, inputs, table, list(ours.index)), described)
    by_model = paper.set_index("model")
    for metric in metrics:
        pairs[f"Δ {metric}"] = [ours.loc[row.our_row, metric] - by_model.loc[row.paper_row, metric]
                                if row.paper_row else float("nan")
                                for row in pairs.rename(columns=lambda c: c.replace(" ", "_")).itertuples()]
    return pairs
