"""SciToricsBERT (Sugimoto & Aizawa 2022, paper 004): sentence embeddings of communicative function.

The recipe: a pretrained encoder, the final [CLS] vector, fine-tuned on sentences labelled with their function
(CFS3, built by distant supervision, :mod:`sdr.cfs3`) with one of five metric-learning losses
(:func:`sdr.losses.metric_learning_loss`, values of Table 6), PK batches (App. B: P = 64, K = 1 for softmax
cross-entropy and ArcFace, P = 8, K = 8 for the others), Adam at lr 2e-5, batch 64, up to five epochs,
keeping the epoch with the best validation MAP@R (§4.1). Scored by sentence retrieval: every sentence a query
against all others, P@1 and MAP@R on L2-normalised embeddings (:mod:`sdr.evaluate.sentences`).

What the paper leaves open and the authors' code (kaisugi/rhetorical_aspect_embeddings) settles, kept here:
no weight decay, no warm-up, a linear schedule, no gradient clipping, max_length 128, and dropout on the
[CLS] vector before the softmax/ArcFace classifier (``modules/models.py``). What this module chooses itself
is said where it happens (:func:`pk_batch_sampler` for label sets smaller than P).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from sdr.evaluate import sentences as sentence_eval
from sdr.losses import METRIC_LEARNING_LOSSES, SCITORICS_PK, SCITORICS_SETTINGS, metric_learning_loss
from sdr.samplers import PKBatchSampler
from sdr.train import TrainConfig, TrainResult, train

__all__ = [
    "LOSSES", "PAPER_MODEL_NAMES", "PAPER_TRAINING", "LabelledExample", "SentenceFunctionObjective",
    "label_space", "labelled_examples", "pk_shape", "pk_batch_sampler", "map_at_r_validator", "train_config",
    "train_function_model",
    "score_sentences", "cf_section_items", "CF_SECTIONS", "score_sections", "table3_row",
    "LabelSchedule", "sample_label_subsets", "items_with_labels", "label_subset_epochs", "label_schedule",
    "Baseline", "BASELINES", "RELEASED", "PAPER_MAX_LENGTH", "RELEASED_TOLERANCE", "RELEASED_CHECKS",
    "BOOK_CFS3_INPUTS", "paper_inputs", "CFS3TrainingSet", "cfs3_training_set",
    "SETTINGS", "TABLE6_KEYS", "settings_table", "seed_intervals",
]

#: The five objectives, in the order of the paper's tables.
LOSSES: tuple[str, ...] = ("softmax", "triplet", "arcface", "multi_similarity", "ntxent")
assert set(LOSSES) == set(METRIC_LEARNING_LOSSES)

#: Row names of ``data/paper_tables/scitoricsbert_table{3,4}.csv`` for each loss.
PAPER_MODEL_NAMES: dict[str, str] = {
    "softmax": "SciToricsBERT (Softmax loss)",
    "triplet": "SciToricsBERT (Triplet loss)",
    "arcface": "SciToricsBERT (ArcFace loss)",
    "multi_similarity": "SciToricsBERT (MS loss)",
    "ntxent": "SciToricsBERT (NT-Xent loss)",
}

#: Training settings: paper App. B (Adam, lr 2e-5, batch 64), §4.1 (≤ 5 epochs, best validation MAP@R), and
#: the authors' ``modules/args.py`` defaults for what the paper does not state (weight decay 0, no warm-up,
#: linear schedule) and their ``train.py`` (no gradient clipping, one micro-batch per step).
PAPER_TRAINING: dict = {
    "epochs": 5, "batch_size": 64, "accumulation_steps": 1, "learning_rate": 2e-5, "weight_decay": 0.0,
    "schedule": "linear", "warmup_steps": 0, "max_grad_norm": 0.0,
}

#: The authors' tokenizer limit (``--max_length`` default 128), in training and in scoring (``visualize.py``).
PAPER_MAX_LENGTH = 128

#: Dropout on the [CLS] vector before the classifier of softmax and ArcFace (BERT's hidden_dropout_prob).
CLASSIFIER_DROPOUT = 0.1


def train_config(seed: int = 0, **overrides) -> TrainConfig:
    """The paper's training settings (:data:`PAPER_TRAINING`) as a :class:`~sdr.train.TrainConfig`."""
    settings = {**PAPER_TRAINING, "seed": seed, **overrides}
    return TrainConfig(**settings)


# --------------------------------------------------------------------------------------------- examples


@dataclass(frozen=True)
class LabelledExample:
    """One training sentence: its text and its class index (``0 … num_classes - 1``)."""

    text: str
    label: int


def label_space(*item_sets: Sequence) -> list[str]:
    """The sorted labels of one or more item sets (anything with a ``label``), as strings.

    SciToricsBERT's ``train.py`` sorts the union of the train and validation labels the same way.
    """
    return sorted({str(item.label) for items in item_sets for item in items})


def labelled_examples(items: Sequence, labels: Sequence[str]) -> list[LabelledExample]:
    """``items`` (with ``text`` and ``label``) as :class:`LabelledExample` indexed in ``labels``.

    An item whose label is not in ``labels`` is an error naming it (nothing is dropped silently).
    """
    index = {label: i for i, label in enumerate(labels)}
    examples = []
    for position, item in enumerate(items):
        key = str(item.label)
        if key not in index:
            raise ValueError(f"item {position} ({getattr(item, 'id', '?')}): label {key!r} is not in the label "
                             f"space {list(labels)[:10]}{'…' if len(labels) > 10 else ''}")
        if not isinstance(item.text, str) or not item.text.strip():
            raise ValueError(f"item {position} ({getattr(item, 'id', '?')}): empty text")
        examples.append(LabelledExample(item.text, index[key]))
    return examples


# --------------------------------------------------------------------------------------------- objective


class SentenceFunctionObjective(nn.Module):
    """SciToricsBERT's training objective: embed labelled sentences, apply one metric-learning loss.

    The loss is one of :data:`LOSSES`, built by :func:`sdr.losses.metric_learning_loss` with the values the
    paper reports (Table 6): softmax cross-entropy (eq. 1); triplet, m = 0.05 (eq. 2); ArcFace, m = 0.5 rad,
    s = 16 (eq. 3); multi-similarity, α = 2, β = 40, λ = 0.75 (eq. 4); NT-Xent, T = 0.1 (eq. 5). No miner:
    every in-batch pair or triplet is used (footnote 5). The objective is an ``nn.Module``: the classifier
    weights of softmax cross-entropy and ArcFace are its parameters, so the trainer optimises them with the
    encoder, saves them in checkpoints and in ``objective.pt``, and restores them on resume. As in the authors'
    ``modules/models.py``, the [CLS] vector goes through dropout before those two classifiers.

    Args:
        loss: ``"softmax" | "triplet" | "arcface" | "multi_similarity" | "ntxent"``.
        num_classes: number of labels (the classifier's outputs; needed by softmax and ArcFace).
        embedding_size: the encoder's output dimension.
        classifier_dropout: dropout on the embedding before the softmax/ArcFace classifier.
        **settings: overrides of the Table 6 values (e.g. ``margin=0.1`` for triplet).

    References:
        Sugimoto & Aizawa, "Incorporating the Rhetoric of Scientific Language into Sentence Embeddings
        using Phrase-guided Distant Supervision and Metric Learning", SDP 2022 (§3.3, App. B, Table 6).

    Inputs:
        +-----------------------------------------+-----------------------------------------------+
        | Texts                                   | Labels                                        |
        +=========================================+===============================================+
        | a batch of :class:`LabelledExample`     | their ``label`` (class index), PK-batched     |
        +-----------------------------------------+-----------------------------------------------+

    Example:
        ::

            objective = SentenceFunctionObjective("softmax", num_classes=77, embedding_size=encoder.dimension)
            result = train(encoder, examples, objective, train_config(),
                           batch_sampler=pk_batch_sampler([e.label for e in examples], "softmax"),
                           validate=map_at_r_validator(valid_texts, valid_labels))
    """

    def __init__(self, loss: str, num_classes: int, embedding_size: int,
                 classifier_dropout: float = CLASSIFIER_DROPOUT, **settings):
        super().__init__()
        if loss not in LOSSES:
            raise ValueError(f"SentenceFunctionObjective: unknown loss {loss!r}; expected one of {LOSSES}")
        self.loss_name = loss
        self.num_classes = int(num_classes)
        self.loss = metric_learning_loss(loss, num_classes=num_classes, embedding_size=embedding_size, **settings)
        # dropout before the classifier only; it follows the encoder's train/eval mode (see forward)
        self.classifier_dropout = float(classifier_dropout) if loss in ("softmax", "arcface") else 0.0

    def forward(self, encoder, examples: Sequence[LabelledExample]) -> torch.Tensor:
        """The loss of one batch of labelled sentences."""
        labels = [e.label for e in examples]
        if min(labels) < 0 or max(labels) >= self.num_classes:
            raise ValueError(f"{self.loss_name}: labels must lie in 0..{self.num_classes - 1}, got "
                             f"{min(labels)}..{max(labels)}")
        embeddings = encoder([e.text for e in examples]).float()  # PML losses in float32 under bf16 autocast
        targets = torch.tensor(labels, dtype=torch.long, device=embeddings.device)
        if self.classifier_dropout:
            embeddings = nn.functional.dropout(embeddings, self.classifier_dropout, training=encoder.training)
        return self.loss(embeddings, targets)


# --------------------------------------------------------------------------------------------- batches


def pk_shape(loss: str) -> tuple[int, int]:
    """(P, K) of the PK batches for ``loss`` (paper App. B): P = 64, K = 1 for softmax/ArcFace, else 8 × 8."""
    if loss not in SCITORICS_PK:
        raise ValueError(f"pk_shape: unknown loss {loss!r}; expected one of {tuple(SCITORICS_PK)}")
    return SCITORICS_PK[loss]


def pk_batch_sampler(labels: Sequence[int], loss: str, max_batches: int | None = None) -> PKBatchSampler:
    """The trainer's ``batch_sampler``: PK batches of ``loss``'s shape over the training ``labels``.

    An epoch has ``len(labels) // (P·K)`` batches (the authors' ``length_before_new_iter = len(labels)``),
    at most ``max_batches`` when given (the CPU profiles' budget). With fewer labels than P (CSAbstruct has 5;
    the book's small CFS3 at ``real`` about 60) every batch holds all labels and still 64 sentences, spread
    evenly over them (:class:`sdr.samplers.PKBatchSampler`): the book's choice, where the authors' sampler
    (PML's ``MPerClassSampler``) refuses such data. Batches are a pure function of (seed, epoch).
    """
    labels = [int(x) for x in labels]
    p, k = pk_shape(loss)
    if len(set(labels)) < 2:
        raise ValueError(f"pk_batch_sampler: metric learning needs at least 2 labels, got {len(set(labels))}")
    per_epoch = max(1, len(labels) // (p * k))
    if max_batches:
        per_epoch = min(per_epoch, int(max_batches))
    return PKBatchSampler(labels, p, k, num_batches=per_epoch, verbose=False)


# --------------------------------------------------------------------------------------------- scoring


def score_sentences(encoder, items: Sequence, batch_size: int = 64) -> dict:
    """P@1 and MAP@R of ``items`` (each a query against all others), from ``encoder``'s embeddings."""
    vectors = encoder.encode_texts([item.text for item in items], batch_size=batch_size, progress=False)
    return sentence_eval.evaluate(vectors, [str(item.label) for item in items])


def train_function_model(encoder, examples: Sequence, n_labels: int, loss: str, *, seed: int, epochs: int,
                         learning_rate: float, validate: Callable | None = None, max_batches_per_epoch: int | None = None,
                         sampler: PKBatchSampler | None = None, output_dir: str | Path | None = None,
                         resume: bool = False, checkpoint_every: int = 0) -> TrainResult:
    """One SciToricsBERT run: ``loss``'s objective (with classifier weights over ``n_labels`` where the loss has
    them), PK batches of its shape (``sampler``, or :func:`pk_batch_sampler` capped at ``max_batches_per_epoch``),
    the paper's settings (:func:`train_config`) at the given epochs and learning rate, and the best validation
    epoch kept. ``encoder`` is trained in place; returns the trainer's result."""
    objective = SentenceFunctionObjective(loss, n_labels, encoder.dimension)
    config = train_config(seed=seed, epochs=epochs, learning_rate=learning_rate, progress=False,
                          checkpoint_every=checkpoint_every)
    if sampler is None:
        sampler = pk_batch_sampler([e.label for e in examples], loss, max_batches=max_batches_per_epoch)
    return train(encoder, examples, objective, config, batch_sampler=sampler, validate=validate,
                 output_dir=output_dir, resume=resume)


def map_at_r_validator(items: Sequence, batch_size: int = 64) -> Callable:
    """The trainer's ``validate(encoder) -> float``: MAP@R on a validation set (higher is better).

    Every validation sentence is scored (the authors' validation loader drops a last partial batch and
    samples classes; the book scores the whole split, which makes the selection deterministic).
    """
    items = list(items)
    if len(Counter(str(item.label) for item in items)) < 2:
        raise ValueError("map_at_r_validator: the validation set needs at least two labels")

    def validate(encoder) -> float:
        return float(score_sentences(encoder, items, batch_size)["map@r"])

    return validate


SEED_INTERVAL_COLUMNS = ["training set", "loss", "seeds", "MAP@R mean", "σ", "Δ vs untrained [CLS]", "95 % low",
                         "95 % high", "excludes 0"]


def seed_intervals(runs, per_query: Mapping[tuple, Mapping[str, float]], reference: Mapping[str, float],
                   samples: int = 2000, seed: int = 0):
    """Per training set and loss: CSAbstruct MAP@R mean ± σ over its seeds and its difference from ``reference``
    (the untrained [CLS] encoder's per-sentence AP@R, same sentences and length) with a two-stage bootstrap 95 %
    interval — training seeds, then test sentences (:func:`sdr.stats.seed_query_bootstrap`) —, as the Summary's
    leaderboard computes it.

    ``runs``: the chapter's runs table (columns "training set", "loss", "seed", "map@r"); ``per_query``: (training
    set, loss, seed) → AP@R per sentence (:func:`sdr.book.csabstruct_per_query`).
    """
    import pandas as pd

    from sdr.stats import mean_sd, seed_query_bootstrap

    rows = []
    for (data_name, loss), group in runs.groupby(["training set", "loss"], sort=False):
        mean, sd, count = mean_sd(group["map@r"])
        seeds = [int(s) for s in group["seed"]]
        missing = [s for s in seeds if (data_name, loss, s) not in per_query]
        if missing:
            raise ValueError(f"seed_intervals: no per-sentence scores for {loss} on {data_name}, seeds {missing}")
        interval = seed_query_bootstrap([per_query[data_name, loss, s] for s in seeds], [reference],
                                        [list(reference)], samples=samples, seed=seed)
        rows.append({"training set": data_name, "loss": loss, "seeds": count, "MAP@R mean": mean, "σ": sd,
                     "Δ vs untrained [CLS]": interval["difference"], "95 % low": interval["low"],
                     "95 % high": interval["high"], "excludes 0": interval["excludes_zero"]})
    return pd.DataFrame(rows, columns=SEED_INTERVAL_COLUMNS)


# --------------------------------------------------------------------------------------------- Table 3

CF_SECTIONS: tuple[str, ...] = tuple(sentence_eval.CF_SECTION_OFFSETS)


def cf_section_items(folder: str | Path, section: str) -> list:
    """One section of the CF-labelled sentence set, train and eval files pooled over the four disciplines.

    That is how the authors score Table 3 (``data/cf-sentence-dataset/convert.py`` writes
    ``{section}_all.jsonl`` from both files of every discipline).
    """
    if section not in CF_SECTIONS:
        raise ValueError(f"cf_section_items: unknown section {section!r}; expected one of {CF_SECTIONS}")
    return [item for split in ("train", "eval")
            for item in sentence_eval.read_cf_sentences(folder, split=split, sections=(section,))]


def table3_row(scores_by_section: Mapping[str, Mapping]) -> dict:
    """Table 3's columns from per-section scores: ``<section>_p@1``, ``<section>_map@r`` and their average."""
    row = {}
    for section in CF_SECTIONS:
        row[f"{section}_p@1"] = float(scores_by_section[section]["p@1"])
        row[f"{section}_map@r"] = float(scores_by_section[section]["map@r"])
    row["avg_p@1"] = sum(row[f"{s}_p@1"] for s in CF_SECTIONS) / len(CF_SECTIONS)
    row["avg_map@r"] = sum(row[f"{s}_map@r"] for s in CF_SECTIONS) / len(CF_SECTIONS)
    return row


def score_sections(encoder, sections: Mapping[str, Sequence], batch_size: int = 64) -> dict[str, dict]:
    """:func:`score_sentences` of each section on its own (Table 3 scores the CF-labelled sections apart)."""
    return {section: score_sentences(encoder, items, batch_size) for section, items in sections.items()}


# --------------------------------------------------------------------------------------------- §4.3, Figs. 3-4
# The generalisability analysis: train on 10, 20 or 40 of CFS3's 77 labels, score the CF-labelled set.


def sample_label_subsets(labels: Sequence[str], counts: Sequence[int], seed: int) -> dict[int, list[str]]:
    """For each count n, n labels drawn at random from ``labels``: the first n of one seeded permutation.

    The paper samples "10, 20, or 40 of the 77 function labels" with a different draw per seed (footnote 9) and
    says no more; nesting the subsets of one seed (its 10 labels are among its 20, those among its 40) is the
    book's choice: the curve over n then changes one thing at a time. Each subset is returned sorted.
    """
    pool = sorted({str(label) for label in labels})
    for n in counts:
        if not 2 <= int(n) < len(pool):
            raise ValueError(f"sample_label_subsets: a subset of {n} labels needs 2 <= n < {len(pool)} (the labels "
                             f"available); drop it from the profile's label counts")
    order = [pool[i] for i in np.random.default_rng(seed).permutation(len(pool))]
    return {int(n): sorted(order[:int(n)]) for n in counts}


def items_with_labels(items: Sequence, keep: Sequence[str]) -> list:
    """The items (anything with a ``label``) whose label is one of ``keep``, in their order."""
    keep = {str(label) for label in keep}
    return [item for item in items if str(item.label) in keep]


def label_subset_epochs(n_labels: int, n_all_labels: int, full_epochs: int) -> int:
    """Footnote 9: "we vary the maximum training epoch in inverse proportion to the number of training labels".

    ``full_epochs × n_all_labels / n_labels``, rounded half up, at least 1: with the paper's 5 epochs on 77 labels,
    10 labels train 39 epochs (38.5), 20 train 19 (19.25) and 40 train 10 (9.6). The paper does not say how it
    rounds; half up is the book's choice.
    """
    if not 0 < n_labels <= n_all_labels or full_epochs < 1:
        raise ValueError(f"label_subset_epochs: need 0 < n_labels <= n_all_labels and full_epochs >= 1, got "
                         f"{n_labels}, {n_all_labels}, {full_epochs}")
    return max(1, math.floor(full_epochs * n_all_labels / n_labels + 0.5))


@dataclass(frozen=True)
class LabelSchedule:
    """How long one label-subset run trains: ``epochs`` × ``batches_per_epoch`` optimizer steps."""

    epochs: int
    batches_per_epoch: int

    @property
    def steps(self) -> int:
        return self.epochs * self.batches_per_epoch


def label_schedule(n_labels: int, n_all_labels: int, n_train: int, full_epochs: int, loss: str,
                   max_batches_per_epoch: int = 0, max_steps: int = 0) -> LabelSchedule:
    """The schedule of a run on ``n_labels`` of ``n_all_labels`` labels with ``n_train`` training sentences.

    The paper's rule: :func:`label_subset_epochs` epochs of ``n_train // (P·K)`` PK batches (at least one; as
    :func:`pk_batch_sampler`), so that runs on fewer labels, which have fewer sentences, see about as many
    training sentences as a run on all labels. ``max_batches_per_epoch`` caps the batches of an epoch as the
    chapter's other runs are capped. ``max_steps`` (the CPU profiles; 0 = none) caps the run's optimizer steps:
    batches per epoch are cut first, down to one, then epochs; every run then trains the same number of steps, the
    equal exposure the rule aims at, but no longer the rule's epochs.
    """
    p, k = pk_shape(loss)
    epochs = label_subset_epochs(n_labels, n_all_labels, full_epochs)
    batches = max(1, int(n_train) // (p * k))
    if max_batches_per_epoch:
        batches = min(batches, int(max_batches_per_epoch))
    if max_steps and epochs * batches > max_steps:
        batches = max(1, int(max_steps) // epochs)
        if epochs * batches > max_steps:
            epochs = int(max_steps)
    return LabelSchedule(epochs, batches)


SETTINGS = SCITORICS_SETTINGS  # the Table 6 values, re-exported for the chapter's settings table

#: The rows of ``data/paper_tables/scitoricsbert_settings.csv`` (Table 6: loss, hyperparameter) → (our loss, the
#: key of :data:`SETTINGS` that holds the value).
TABLE6_KEYS: dict[tuple[str, str], tuple[str, str]] = {
    ("Triplet loss", "m (margin)"): ("triplet", "margin"),
    ("ArcFace loss", "m (angular margin)"): ("arcface", "margin_radians"),
    ("ArcFace loss", "s (scale)"): ("arcface", "scale"),
    ("MS loss", "α"): ("multi_similarity", "alpha"),
    ("MS loss", "β"): ("multi_similarity", "beta"),
    ("MS loss", "λ"): ("multi_similarity", "base"),
    ("NT-Xent loss", "T (temperature)"): ("ntxent", "temperature"),
}


def settings_table() -> "pd.DataFrame":
    """Table 6 (``scitoricsbert_settings``: the value each loss reports its results with, and the values its search
    tried) next to the value :data:`SETTINGS` trains with; one row per hyperparameter, in the paper's order."""
    import pandas as pd

    from sdr.book import read_paper_table

    paper = read_paper_table("scitoricsbert_settings")
    rows = []
    for _, row in paper.iterrows():
        key = (row["model"], row["hyperparameter"])
        if key not in TABLE6_KEYS:
            raise ValueError(f"scitoricsbert_settings.csv: row {key} has no entry in TABLE6_KEYS (which loss "
                             f"setting it is)")
        loss, setting = TABLE6_KEYS[key]
        tested = sorted(float(row[c]) for c in paper.columns
                        if (c.startswith("tested_") or c == "value") and pd.notna(row[c]))
        rows.append({"loss": loss, "hyperparameter": row["hyperparameter"], "paper (Table 6, •)": float(row["value"]),
                     "this book": float(SETTINGS[loss][setting]),
                     "values the paper tested": ", ".join(f"{v:g}" for v in tested)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------- Tables 3-4 baselines


@dataclass(frozen=True)
class Baseline:
    """One baseline row of Tables 3 and 4: the Hugging Face model the authors scored and its pooling."""

    name: str  # the row name of this book
    model: str  # Hugging Face name (kaisugi/rhetorical_aspect_embeddings README, "Evaluation (baseline)")
    pooling: str  # "mean" = the paper's "avg." (footnote 8: the mean of the last hidden layer), or "cls"
    table3: str  # the row's name in Table 3
    table4: str  # and in Table 4


#: The transformer baselines of Tables 3-4 besides SciBERT (the chapter's base model, scored as "avg." anyway).
#: SRoBERTa is ``stsb-roberta-base-v2`` (the authors' README; the paper says "fine-tuned on NLI"). The authors score
#: SimCSE with ``--cls_pooling``, the pooler output (BERT's dense + tanh over [CLS]); :class:`sdr.encoders.Encoder`
#: offers the last layer's [CLS], which is what this book scores (the page says so). GloVe avg. (the authors: mean of
#: glove.42B.300d vectors over lower-cased NLTK tokens) is not scored: no package in the book's registries ships
#: those vectors.
BASELINES: tuple[Baseline, ...] = (
    Baseline("BERT avg.", "bert-base-uncased", "mean", "BERTbase avg.", "BERT avg."),
    Baseline("RoBERTa avg.", "roberta-base", "mean", "RoBERTabase avg.", "RoBERTa avg."),
    Baseline("PubMedBERT avg.", "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext", "mean",
             "PubMedBERT avg.", "PubMedBERT avg."),
    Baseline("SRoBERTa", "sentence-transformers/stsb-roberta-base-v2", "mean", "SRoBERTabase", "SRoBERTa"),
    Baseline("SimCSE-RoBERTa [CLS]", "princeton-nlp/sup-simcse-roberta-base", "cls", "SimCSE-RoBERTabase",
             "SimCSE-RoBERTa"),
)

#: The released SciToricsBERT (softmax loss; its README embeds with the last layer's [CLS]).
RELEASED = Baseline("SciToricsBERT release (kaisugi/scitoricsbert)", "kaisugi/scitoricsbert", "cls",
                    PAPER_MODEL_NAMES["softmax"], PAPER_MODEL_NAMES["softmax"])

#: Table 4 prints fractions to three decimals (.226): ±0.3 points is ±0.003 there.
RELEASED_TOLERANCE = 0.003
_TABLE4_METRICS = {"csabstruct": {"p@1": "csabstruct_p@1", "map@r": "csabstruct_map@r"},
                   "pubmed_rct": {"p@1": "pubmedrct_p@1", "map@r": "pubmedrct_map@r"}}


def _table4_checks(model: str, paper_row: str, pooling: str, why_unasserted: str = "") -> tuple:
    from sdr.released import ReleasedCheck

    return tuple(ReleasedCheck(model, benchmark, "scitoricsbert_table4", paper_row, metrics, pooling=pooling,
                               max_length=PAPER_MAX_LENGTH,
                               tolerance=None if why_unasserted else RELEASED_TOLERANCE,
                               unasserted_because=why_unasserted)
                 for benchmark, metrics in _TABLE4_METRICS.items())


#: The released checkpoints Table 4 reports, scored before any training (issue 32; :func:`sdr.released.
#: released_part`): each on CSAbstruct test (1,349 sentences) and PubMed 20k RCT test (30,135), read as the authors'
#: ``visualize.py`` reads them — the mean of the last layer over the attention mask ("avg.", footnote 8) or its
#: [CLS], 128 tokens, L2-normalised, P@1 and MAP@R over every sentence — beside Table 4's row. The paper names no
#: checkpoint; the names are the authors' README's ("Evaluation (baseline)"), SRoBERTa's included (the paper only says
#: "fine-tuned on NLI"). Asserted to ±0.3 points where the setup is the authors' exactly; SimCSE and the released
#: SciToricsBERT stay unasserted (why is on the row). GloVe avg. has no row: no package ships its vectors.
#: Table 3's baselines (the CF-labelled set, no benchmark of ``sdr evaluate all``) are scored by the chapter's
#: :func:`score_baselines` and shown beside Table 3, unasserted.
RELEASED_CHECKS: tuple = (
    *_table4_checks("allenai/scibert_scivocab_uncased", "SciBERT avg.", "mean"),
    *_table4_checks("bert-base-uncased", "BERT avg.", "mean"),
    *_table4_checks("roberta-base", "RoBERTa avg.", "mean"),
    *_table4_checks("microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext", "PubMedBERT avg.", "mean"),
    *_table4_checks("sentence-transformers/stsb-roberta-base-v2", "SRoBERTa", "mean"),
    *_table4_checks("princeton-nlp/sup-simcse-roberta-base", "SimCSE-RoBERTa", "cls",
                    "the authors read SimCSE's pooler output (a dense layer and tanh over [CLS], visualize.py "
                    "--cls_pooling); the book's encoders read the last layer's [CLS]"),
    *_table4_checks("kaisugi/scitoricsbert", PAPER_MODEL_NAMES["softmax"], "cls",
                    "Table 4's row is the mean of five seeds; the release is one softmax checkpoint whose seed the "
                    "authors do not name"),
)

#: What the book's own CFS3 build reads (:func:`cfs3_training_set` without the release), besides CSAbstruct.
BOOK_CFS3_INPUTS: tuple[str, ...] = ("academic_phrasebank", "scicite", "csfcube", "s2orc_sample")


def paper_inputs(release: bool) -> tuple[str, ...]:
    """The datasets the chapter reads at ``paper``: ``sdr.datasets.CHAPTER_DATA["scitoricsbert"]`` with the CFS3
    release, or, training on the book's own build instead, the build's sources in its place."""
    from sdr.datasets import CHAPTER_DATA

    declared = CHAPTER_DATA["scitoricsbert"]
    if release:
        return declared
    return (*(name for name in declared if name != "cfs3"), *BOOK_CFS3_INPUTS)


@dataclass
class CFS3TrainingSet:
    """The CFS3 the chapter trains on: its 4:1 split, where it came from, and the build's leakage audit."""

    train: list
    valid: list
    origin: str  # "release", "book build" or "replica"
    source: str
    pool_audit: object = None  # pandas DataFrame of the pool filter (book build only)
    removed_as_evaluation: int = 0  # sentences equal to an evaluation sentence, dropped before the split


def cfs3_training_set(data, *, release: bool, replica: Callable[[Path], Path], csabstruct, seed: int,
                      evaluation_texts: set[str] = frozenset(), progress: bool = False) -> CFS3TrainingSet:
    """Resolve the CFS3 training set through ``data`` (a :class:`sdr.datasets.ChapterData`), role "training".

    * ``release``: the released splits ``CFS3_train/valid.jsonl`` of Alab-NII/CFS3 (the ``paper`` profile);
      where the policy allows a replica, ``replica(folder)`` writes a CFS3 JSONL that is split 4:1 here.
    * otherwise the book's own build (:mod:`sdr.cfs3`): the Academic Phrasebank's n-grams matched against the real
      sentences found (:func:`sdr.cfs3.sentence_pool`: CSAbstruct train, SciCite, CSFCube, the S2ORC sample), with
      CSAbstruct's dev and test sentences removed from the pool by text; its replica is ``replica(folder)``.

    ``csabstruct`` is the chapter's CSAbstruct *training* input (its train split joins the pool; its dev and test,
    when real, are held out). Sentences of the book's build or the replica whose normalised text is in
    ``evaluation_texts`` (the CF-labelled sentences the chapter scores) are dropped before the stratified split;
    the release is used as released.
    """
    from sdr import cfs3

    def split(records) -> tuple[list, list, int]:
        kept = [r for r in records if cfs3.normalise_text(r.text) not in evaluation_texts]
        train, valid, _ = cfs3.stratified_split(kept, valid_fraction=0.2, seed=seed)
        return train, valid, len(records) - len(kept)

    if release:
        item = data.input("cfs3", role="training", files=("CFS3_train.jsonl", "CFS3_valid.jsonl"),
                          replica=replica, replica_source="CFS3 replica: the planted formulaic sentences of the "
                                                          "synthetic corpus")
        if item.real:
            train = cfs3.read_labelled(item.file("CFS3_train.jsonl"))
            valid = cfs3.read_labelled(item.file("CFS3_valid.jsonl"))
            return CFS3TrainingSet(train, valid, "release", f"{item.source}: {len(train):,} train, {len(valid):,} "
                                                            f"valid sentences")
        train, valid, removed = split(cfs3.read_labelled(item.path))
        return CFS3TrainingSet(train, valid, "replica", item.source, removed_as_evaluation=removed)
    phrasebank = data.input("academic_phrasebank", role="training", replica=replica,
                            replica_source="CFS3 replica: the planted formulaic sentences of the synthetic corpus "
                                           "(no Phrasebank)")
    if not phrasebank.real:
        train, valid, removed = split(cfs3.read_labelled(phrasebank.path))
        return CFS3TrainingSet(train, valid, "replica", phrasebank.source, removed_as_evaluation=removed)
    folders = {"csabstruct": csabstruct.path} if csabstruct.real else {}
    for name in BOOK_CFS3_INPUTS[1:]:
        found = data.input(name, role="training", optional=True)
        if found is not None:
            folders[name] = found.path
    lemmatizer = cfs3.Lemmatizer()
    phrases = cfs3.read_phrasebank(phrasebank.path)
    dictionary = cfs3.build_ngram_dictionary(phrases, n=5, lemmatizer=lemmatizer, progress=progress)
    parts, _ = cfs3.sentence_pool(folders, progress=progress)
    pool = [s for part in parts.values() for s in part]
    held_out = cfs3.csabstruct_held_out(csabstruct.path) if csabstruct.real else {}
    pool, audit = cfs3.exclude_held_out(pool, held_out)
    records, _ = cfs3.SentenceMatcher(dictionary, lemmatizer=lemmatizer).label(pool, progress=progress)
    train, valid, removed = split(records)
    source = (f"CFS3 built by sdr.cfs3 from the Academic Phrasebank and {len(pool):,} real sentences "
              f"({', '.join(parts)}; CSAbstruct dev/test removed)")
    return CFS3TrainingSet(train, valid, "book build", source, audit if held_out else None, removed)
