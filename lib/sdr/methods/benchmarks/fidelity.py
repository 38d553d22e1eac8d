"""What the Benchmarks page may set beside the papers, and what differs from them (issue 37).

**Pairing.** A row of ours is set beside a paper's row only when both have the same :class:`RowIdentity` — data
source, model (with the layers kept), pooling and protocol; otherwise it is shown apart with the reason, naming
what differs from the nearest paper row (:func:`pair_rows`). SciToricsBERT Table 4's rows are
:data:`TABLE4_IDENTITIES`; at ``paper`` the untrained SciBERT with mean pooling on the released CSAbstruct test
split is its "SciBERT avg." row; a MiniLM cut, a replica or a [CLS] pooling is not any of its rows.

**Deviations.** :func:`differences_from_the_papers` lists what the page does otherwise than the papers, generated from
the run: :func:`detected_differences` finds each from the run's own state (parameters, inputs, parts run) and
:data:`DEVIATIONS` says it in words; a difference found but not worded fails the chapter, so nothing the run does
differently goes unstated.

Shown in: notebooks/benchmarks.ipynb, Sentence retrieval by rhetorical role and What differs from the papers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed

__all__ = ["RowIdentity", "TABLE4_IDENTITIES", "SENTENCE_PROTOCOL", "Pairing", "pair_rows", "sentence_identities",
           "sentence_pairs", "DEVIATIONS", "detected_differences", "differences_from_the_papers", "what_differs",
           "PAPER_INPUT_TOKENS", "PAPER_MODEL"]


@dataclass(frozen=True)
class RowIdentity:
    """What a row of scores is: the data it was scored on, the model (with the layers kept), the pooling, and the
    protocol (metrics and how they are computed). Rows pair only when all four are equal."""

    data: str
    model: str
    pooling: str
    protocol: str


SENTENCE_PROTOCOL = "P@1 and MAP@R (pytorch-metric-learning AccuracyCalculator, every other sentence a reference)"
_CSABSTRUCT_TEST = "CSAbstruct test split (released)"
_PUBMED_TEST = "PubMed-RCT test split (released)"

TABLE4_IDENTITIES = {
    "GloVe avg.": RowIdentity(_CSABSTRUCT_TEST, "GloVe", "mean", SENTENCE_PROTOCOL),
    "BERT avg.": RowIdentity(_CSABSTRUCT_TEST, "bert-base-uncased", "mean", SENTENCE_PROTOCOL),
    "RoBERTa avg.": RowIdentity(_CSABSTRUCT_TEST, "roberta-base", "mean", SENTENCE_PROTOCOL),
    "SciBERT avg.": RowIdentity(_CSABSTRUCT_TEST, "allenai/scibert_scivocab_uncased", "mean", SENTENCE_PROTOCOL),
    "PubMedBERT avg.": RowIdentity(_CSABSTRUCT_TEST, "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext",
                                   "mean", SENTENCE_PROTOCOL),
    "SRoBERTa": RowIdentity(_CSABSTRUCT_TEST, "sentence-transformers/stsb-roberta-base-v2", "mean",
                            SENTENCE_PROTOCOL),
    "SimCSE-RoBERTa": RowIdentity(_CSABSTRUCT_TEST, "princeton-nlp/sup-simcse-roberta-base", "cls",
                                  SENTENCE_PROTOCOL),
    **{f"SciToricsBERT ({loss} loss)": RowIdentity(_CSABSTRUCT_TEST, f"SciToricsBERT trained on CFS3 ({loss})",
                                                   "mean", SENTENCE_PROTOCOL)
       for loss in ("Softmax", "Triplet", "ArcFace", "MS", "NT-Xent")},
}
"""SciToricsBERT Table 4's rows (``data/paper_tables/scitoricsbert_table4.csv``) as identities: the baselines are the
mean of the last hidden layer ("avg.", footnote 8) of the named Hugging Face models (the authors' README names
them; SimCSE is read at its [CLS] token as its model card does), the SciToricsBERT rows CFS3-trained models (another
chapter). The identities are of the CSAbstruct column."""


@dataclass
class Pairing:
    """Which of our rows pair with which paper row, and the others with why they stay apart."""

    paired: dict
    apart: dict

    def table(self, ours: pd.DataFrame, paper: pd.DataFrame, columns) -> pd.DataFrame:
        """Paired rows side by side: ours, the paper's and the difference for each of ``columns``."""
        rows = []
        for name, paper_name in self.paired.items():
            row = {"ours": name, "paper row": paper_name}
            for column in columns:
                mine, theirs = ours.loc[name, column], paper.set_index("model").loc[paper_name, column]
                row.update({f"{column} (ours)": mine, f"{column} (paper)": theirs, f"{column} difference":
                            mine - theirs if pd.notna(mine) and pd.notna(theirs) else float("nan")})
            rows.append(row)
        return pd.DataFrame(rows)


def pair_rows(ours: Mapping[str, RowIdentity], paper: Mapping[str, RowIdentity]) -> Pairing:
    """The one pairing rule: our row ``name`` pairs with the paper row of the same identity; otherwise it is apart,
    and the reason names what differs from the paper row that agrees with it on the most fields."""
    paired, apart = {}, {}
    names = [f.name for f in fields(RowIdentity)]
    for name, identity in ours.items():
        same = [row for row, theirs in paper.items() if theirs == identity]
        if same:
            paired[name] = same[0]
            continue
        nearest, theirs = max(paper.items(), key=lambda item: sum(getattr(item[1], f) == getattr(identity, f)
                                                                  for f in names))
        differs = [f"{f}: ours {getattr(identity, f)!r}, the paper's {getattr(theirs, f)!r}" for f in names
                   if getattr(identity, f) != getattr(theirs, f)]
        apart[name] = f"no paper row like it (nearest: {nearest!r}; " + "; ".join(differs) + ")"
    return Pairing(paired, apart)


def _model_identity(model_name: str, layers: int) -> str:
    model = "sentence-transformers/all-MiniLM-L6-v2" if model_name == "minilm" else model_name
    return f"{model} (first {layers} layers)" if layers else model


def sentence_identities(run, sentences) -> dict[str, RowIdentity]:
    """Our sentence-retrieval rows (one per pooling) as identities, scored on CSAbstruct's test split: the released
    one (its registry digests) or another file (a replica, or test data that differs from the release)."""
    data = _CSABSTRUCT_TEST if sentences.real and sentences.official else "CSAbstruct " + (
        "test data that is not the release" if sentences.real else "replica")
    model = _model_identity(run.p.model_name, run.p.model_layers)
    return {name: RowIdentity(data, model, name.rsplit(" · ", 1)[-1], SENTENCE_PROTOCOL)
            for name in sentences.scores}


def sentence_pairs(run, sentences, paper_identities: Mapping[str, RowIdentity] | None = None) -> Pairing | None:
    """Table 4's rows under the caption, then ours: beside the paper row of the same identity with the differences,
    or apart with the reason (:func:`pair_rows`).

    Shown in: notebooks/benchmarks.ipynb, Sentence retrieval by rhetorical role (CSAbstruct)."""
    from IPython.display import display

    from sdr.methods.benchmarks.chapter import TABLE4_COLUMNS

    if sentences is None:
        return None
    print(sentences.describe())
    paper = book.read_paper_table("scitoricsbert_table4")
    run.show(paper.set_index("model")[TABLE4_COLUMNS], "SciToricsBERT Table 4 (the paper's rows)", decimals=3)
    pairing = pair_rows(sentence_identities(run, sentences), paper_identities or TABLE4_IDENTITIES)
    if pairing.paired:
        print("Our rows beside the paper's row of the same data, model, pooling and protocol:")
        display(pairing.table(sentences.ours, paper, ["csabstruct_p@1", "csabstruct_map@r"]).round(3))
    for name, reason in pairing.apart.items():
        print(f"{name}: shown apart, {reason}")
    if pairing.apart:
        display(sentences.ours.loc[list(pairing.apart)].round(3))
    return pairing


# ------------------------------------------------------------------------------------------------ what differs
PAPER_MODEL = "allenai/scibert_scivocab_uncased"
"""The papers' base model (SciNCL, SPECTER, the thesis, CoSaEmb and FLeW start from SciBERT)."""
PAPER_INPUT_TOKENS = 512
"""The papers' input length for a title and abstract (SPECTER's, which CSFCube's official rankings read)."""


def detected_differences(run, inputs, csfcube, sentences, paragraphs, released) -> dict[str, dict]:
    """Every way this run differs from the papers, found from its own state: ``{key: facts}`` (the facts the
    sentence about it needs)."""
    p = run.p
    found: dict[str, dict] = {}
    if p.model_name != PAPER_MODEL or p.model_layers:
        found["encoder"] = {"model": _model_identity(p.model_name, p.model_layers)}
    names = {"csfcube": "CSFCube", "csabstruct": "CSAbstruct", "s2orc_specter": "the paragraph chunks"}
    replicas = [names.get(item.name, item.name) for item in (inputs.csfcube, inputs.csabstruct, inputs.paragraphs)
                if item is not None and not item.real]
    if replicas:
        found["replicas"] = {"inputs": replicas}
    if csfcube is not None and csfcube.tokens < PAPER_INPUT_TOKENS:
        found["csfcube tokens"] = {"tokens": csfcube.tokens}
    if sentences is not None:
        found["every sentence"] = {}
        if sentences.pubmed_scores is None:
            found["no pubmed"] = {}
    if paragraphs is not None:
        found["paragraph data"] = {"source": paragraphs.source}
    if released is not None:
        found["scidocs svm"] = {}
        found["recommendations"] = {"tolerance": 0.3}
        unasserted = released.table[released.table["holds"].isna()]
        if len(unasserted):
            found["unasserted"] = {"rows": len(unasserted)}
    return found


DEVIATIONS = {
    "encoder": lambda f: f"The untrained encoder is {f['model']}, not the whole SciBERT the papers start from "
                         f"({PAPER_MODEL}, the paper profile's); its rows are references for this book's chapters.",
    "replicas": lambda f: f"{', '.join(f['inputs'])}: synthetic replicas in the official layout, not the "
                          "released data (none was found, or this profile does not read it); their scores say the "
                          "pipeline works.",
    "csfcube tokens": lambda f: f"CSFCube papers are cut at {f['tokens']} tokens for every ranked system (the "
                                f"official SPECTER rankings read up to {PAPER_INPUT_TOKENS}); the lexical rankers "
                                "are also checked on whole texts.",
    "every sentence": lambda f: "Sentence retrieval scores every CSAbstruct test sentence; SciToricsBERT's "
                                "evaluation loader drops its last partial batch.",
    "no pubmed": lambda f: "PubMed-RCT was not found: Table 4's PubMed columns stay empty for our rows.",
    "paragraph data": lambda f: f"Paragraph retrieval runs on {f['source']}, not CoSaEmb's arXiv set (not "
                                "public): comparable with each other, not with Table 6.",
    "scidocs svm": lambda f: "SciDocs' MAG and MeSH classifiers are scikit-learn's liblinear LinearSVC without "
                             "intercept (sklearn-contrib-lightning's, which SciDocs uses, is not installable).",
    "recommendations": lambda f: f"SciDocs' recommendation metrics are held within ±{f['tolerance']} only: its "
                                 "ranker trains with PyTorch, which does not reproduce exactly (SciDocs README).",
    "unasserted": lambda f: f"{f['rows']} released-model rows are shown but not asserted; each says why.",
}
"""Each difference :func:`detected_differences` can find, in words."""


def differences_from_the_papers(run, inputs, csfcube, sentences, paragraphs, released=None) -> list[str]:
    """The page's "what differs from the papers" list: one line per difference this run has (found by
    :func:`detected_differences`, worded by :data:`DEVIATIONS`); a difference found but not worded raises
    :class:`ChapterCheckFailed` naming it."""
    found = detected_differences(run, inputs, csfcube, sentences, paragraphs, released)
    unworded = sorted(set(found) - set(DEVIATIONS))
    if unworded:
        raise ChapterCheckFailed(f"differences from the papers found but not stated on the page: {unworded} (add them "
                                 "to sdr.methods.benchmarks.DEVIATIONS)")
    return [DEVIATIONS[key](facts) for key, facts in found.items()]


def what_differs(run, inputs, csfcube, sentences, paragraphs, released=None) -> list[str]:
    """Print :func:`differences_from_the_papers` as the page's list.

    Shown in: notebooks/benchmarks.ipynb, What differs from the papers."""
    lines = differences_from_the_papers(run, inputs, csfcube, sentences, paragraphs, released)
    for line in lines:
        print(f"- {line}")
    return lines
