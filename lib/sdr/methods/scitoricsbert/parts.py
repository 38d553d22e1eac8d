"""The SciToricsBERT chapter's parts and its whole cost up front (issue 30, parts 2-3).

:data:`PARTS` says which of the paper's tables each part reproduces and which belong to the headline run (the
``paper`` profile's ``parts: headline``); :func:`training_part` puts each training run of the chapter in its part,
the one rule :func:`sdr.methods.scitoricsbert.train_runs` and :func:`cost_plan` both follow; :func:`cost_plan` counts
everything the chapter does at a parameter set — every training run (each loss, training set and seed, each
label-subset run of §4.3), every encoding (validation after each epoch, the test sets each model is scored on, the
baselines and released models), the exact k-NN searches of P@1 and MAP@R, and the downloads — with the GPU hours of
:mod:`sdr.plan` (training and encoding measured on its reference GPUs, other GPUs scaled by their peak and
labelled so).

Sizes are the paper's data (:class:`PaperSizes`, from ``data/paper_tables``: Table 2 and the CFS3 release's label
table; CSAbstruct's train and dev splits counted from the registry's pinned files) with the profile's caps applied;
at ``smoke`` and ``real`` the replicas and the book's CFS3 build are far smaller, so the plan is an upper bound there
(it is printed at ``paper`` only). Shown in: notebooks/scitoricsbert.ipynb (``run.show_plan()``, before anything
trains) and ``python -m sdr.plan``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

from sdr.plan import CostPlan, Part, Work, resolve_parts

__all__ = ["PARTS", "PaperSizes", "paper_sizes", "check_training_set", "training_part", "cost_plan",
           "PLAN_TOKENS_PER_SENTENCE", "EMBEDDING_DIMENSION", "KNN_TFLOPS", "MODEL_DOWNLOAD_BYTES", "t4_words"]

#: The chapter's parts. ``headline``: Table 4 (and Table 3) as the paper reports them, the mean of five seeds of
#: every loss trained on the released CFS3, with the paper's baselines and the released model scored first.
PARTS: dict[str, Part] = {part.name: part for part in (
    Part("released", "Table 4's baselines (BERT, RoBERTa, SciBERT, PubMedBERT, SRoBERTa, SimCSE-RoBERTa) and the "
                     "released kaisugi/scitoricsbert by inference, on CSAbstruct and PubMed-RCT test (and the "
                     "CF-labelled set of Table 3), before any training", headline=True),
    Part("main", "Tables 3-4's SciToricsBERT rows, first seed: the five losses trained on CFS3 (and the check's "
                 "model)", headline=True),
    Part("seeds", "Tables 3-4's SciToricsBERT rows as printed, the mean of five seeds: seeds 2-5 of every loss on "
                  "CFS3", headline=True),
    Part("labels", "§4.3, Figures 3-4: training on 10, 20 or 40 of CFS3's labels, scored on the CF-labelled set"),
    Part("gold_labels", "no table of the paper: the book's comparison, every loss trained on CSAbstruct's gold "
                        "roles (CSAbstruct train) instead of CFS3"),
)}

#: Tokens per sentence the plan assumes: CFS3's sentences are short, so the authors' 128-token limit is rarely
#: reached (an assumption, as :func:`sdr.plan.paper_runs`).
PLAN_TOKENS_PER_SENTENCE = 40
#: The embedding size of the paper's encoders (BERT-base and RoBERTa-base), for the k-NN searches.
EMBEDDING_DIMENSION = 768
#: The rate the plan assumes for the exact k-NN of P@1 and MAP@R (a float32 matrix product of every sentence with
#: every other): 50 TFLOP/s on the plan's reference GPU (an H100/H200 class GPU: a tenth of its TF32 tensor peak);
#: an assumption, not measured (the searches
#: take seconds either way).
KNN_TFLOPS = 50.0
#: Download size of a released checkpoint, an estimate (no paper gives it): float32 weights of BERT-base
#: (110 M parameters × 4 bytes ≈ 440 MB) or RoBERTa-base (125 M × 4 ≈ 500 MB), plus tokenizer and config files.
MODEL_DOWNLOAD_BYTES = {"bert": 440_000_000, "roberta": 500_000_000}
#: Files fetched per model (config, tokenizer files, weights; an estimate).
MODEL_REQUESTS = 6
#: The rate the plan assumes for downloads (requests a second; the hubs serve faster, so an upper bound on time).
REQUESTS_PER_S = 1.0
#: A Colab session's budget the T4 line is stated in (Colab's documented maximum is 12 h; free sessions end sooner).
COLAB_SESSION_HOURS = 10.0


@dataclass(frozen=True)
class PaperSizes:
    """The sizes the paper run reads, from ``data/paper_tables``: CFS3's released split (``cfs3_counts``: the split
    and each label's train/valid sentences of the release's README), the evaluation sets (SciToricsBERT Table 2,
    ``scitoricsbert_sizes``) and CSAbstruct's train/dev splits (counted from the pinned files, ``scitoricsbert_sizes``
    rows marked "not in papers")."""

    cfs3_train: int
    cfs3_valid: int
    cfs3_label_train: dict  # label ("01") -> train sentences (labels with sentences only)
    cfs3_label_valid: dict
    csabstruct_train: int
    csabstruct_dev: int
    csabstruct_test: int
    pubmed_test: int
    cf_sections: dict  # section -> sentences

    @property
    def cfs3_labels(self) -> list[str]:
        return sorted(self.cfs3_label_train)

    @property
    def cf_sentences(self) -> int:
        return sum(self.cf_sections.values())


@lru_cache(maxsize=1)
def paper_sizes() -> PaperSizes:
    from sdr.book import read_paper_table

    counts = read_paper_table("cfs3_counts")
    split = counts[counts["model"] == "CFS3 split"].iloc[0]
    labels = counts[counts["table"] == "Label Distribution"]
    labels = labels[labels["labelled_sentences"] > 0]
    label_key = labels["label"].map(lambda value: f"{int(value):02d}")
    sizes = read_paper_table("scitoricsbert_sizes").set_index("model")["sentences"]
    sections = {"introduction": "CF-labeled Introduction", "methods": "CF-labeled Methods",
                "results": "CF-labeled Results", "discussion": "CF-labeled Discussion"}
    return PaperSizes(
        cfs3_train=int(split["train"]), cfs3_valid=int(split["valid"]),
        cfs3_label_train=dict(zip(label_key, labels["train"].astype(int))),
        cfs3_label_valid=dict(zip(label_key, labels["valid"].astype(int))),
        csabstruct_train=int(sizes["CSAbstruct train"]), csabstruct_dev=int(sizes["CSAbstruct dev"]),
        csabstruct_test=int(sizes["CSAbstruct"]), pubmed_test=int(sizes["PubMed-RCT"]),
        cf_sections={section: int(sizes[row]) for section, row in sections.items()})


def check_training_set(profile: str, use_real_data) -> str:
    """The training set whose check with teeth the run applies (:data:`sdr.methods.scitoricsbert.CHECKS`), as far as
    the parameters tell: CSAbstruct train where that input is real (always at ``paper``; at ``real`` when
    ``use_real_data`` is true), the CFS3 replica otherwise. The chapter itself decides from the data it resolved
    (``TrainingSets.check_set``); a ``real`` run with ``"auto"`` that finds the data checks CSAbstruct train."""
    return "CSAbstruct train" if profile == "paper" or (profile == "real" and use_real_data is True) else "CFS3"


def training_part(data_name: str, loss: str, seed: int, p, check_set: str) -> str:
    """The part a training run belongs to: the check's model (``check_loss`` on ``check_set``, its ``check_seeds``
    seeds) and the first seed of every loss on CFS3 to ``main``, the other seeds on CFS3 to ``seeds``, every other
    run on CSAbstruct train to ``gold_labels``."""
    if (data_name, loss) == (check_set, p.check_loss) and seed < p.seed + p.check_seeds:
        return "main"
    if data_name == "CFS3":
        return "main" if seed == p.seed else "seeds"
    return "gold_labels"


def t4_words(hours: float) -> str:
    """What a Colab T4 user can finish of a part of ``hours`` T4 hours (the plan's scaled estimate)."""
    if hours < 1 / 60:
        return "under a minute on a T4 (scaled estimate)"
    if hours < 1:
        return f"≈ {hours * 60:.0f} T4 min (scaled estimate): fits one Colab session"
    if hours <= COLAB_SESSION_HOURS:
        return f"≈ {hours:.1f} T4 h (scaled estimate): fits one Colab session"
    sessions = math.ceil(hours / COLAB_SESSION_HOURS)
    return (f"≈ {hours:.1f} T4 h (scaled estimate): about {sessions} Colab sessions of {COLAB_SESSION_HOURS:g} h, "
            "carried across with resume = True")


def _capped(limit: int, size: int) -> int:
    return min(int(limit), size) if limit else size


def _knn_hours(*set_sizes: int) -> float:
    """Reference-GPU hours of an exact k-NN of every sentence of each set against all others (2·n²·d FLOPs each)."""
    return sum(2.0 * n * n * EMBEDDING_DIMENSION for n in set_sizes) / (KNN_TFLOPS * 1e12) / 3600


def cost_plan(p) -> CostPlan:
    """Everything the chapter does with parameters ``p`` (the notebook's, as :func:`sdr.plan.chapter_cost_plan`
    gives them), part by part, with the parts ``p.parts`` runs marked. Follows the chapter's own rules:
    :func:`training_part` for the main runs, :func:`sdr.methods.scitoricsbert.pk_batch_sampler`'s batches per
    epoch, :func:`~sdr.methods.scitoricsbert.label_schedule` and :func:`~sdr.methods.scitoricsbert.
    sample_label_subsets` (the release's own labels, so each seed's subset and its sentences are the ones the run
    draws), the caps of ``max_valid``, ``max_test``, ``max_pubmed_test`` and ``secondary_test_seeds``."""
    from sdr.methods.scitoricsbert.recipe import (BASELINES, RELEASED, label_schedule, pk_shape,
                                                  sample_label_subsets)

    sizes = paper_sizes()
    tokens = min(int(p.max_length), PLAN_TOKENS_PER_SENTENCE)
    check_set = check_training_set(p.profile, p.use_real_data)
    test = _capped(p.max_test, sizes.csabstruct_test)
    pubmed = _capped(p.max_pubmed_test, sizes.pubmed_test)
    cf = sizes.cf_sentences
    work: list[Work] = []
    how_encode = f"{tokens} tokens a sentence (assumed); inference throughput as measured in sdr.plan"
    how_knn = (f"exact k-NN, 2·n²·{EMBEDDING_DIMENSION} FLOPs a set at {KNN_TFLOPS:g} TFLOP/s (assumed, "
               "not measured)")

    # ---------------------------------------------------------------------------------------------- released
    if p.paper_baselines:
        externals = [*BASELINES, RELEASED]
        families = {b.model: ("roberta" if "roberta" in b.model.lower() else "bert") for b in externals}
        work.append(Work("released", f"download {len(externals)} released models (Table 4's baselines, "
                                     "kaisugi/scitoricsbert)", "fetch",
                         download_bytes=sum(MODEL_DOWNLOAD_BYTES[f] for f in families.values()),
                         requests=MODEL_REQUESTS * len(externals), requests_per_s=REQUESTS_PER_S,
                         how="sizes estimated from the parameter counts (float32); 1 request/s assumed"))
        checked = len(externals) + 1  # the released checks also read SciBERT with mean pooling ("SciBERT avg.")
        work.append(Work("released", "released checks: CSAbstruct and PubMed-RCT tests (sdr evaluate all's path)",
                         "encode", runs=checked, texts=sizes.csabstruct_test + sizes.pubmed_test,
                         tokens_per_text=tokens, how=how_encode + "; cached, read back on a rerun"))
        work.append(Work("released", "Tables 3-4's baselines: CSAbstruct, PubMed-RCT and CF-labelled sets",
                         "encode", runs=len(externals), texts=test + pubmed + cf, tokens_per_text=tokens,
                         how=how_encode))
        work.append(Work("released", "released checks: their P@1 / MAP@R searches", "knn", runs=checked,
                         hours=_knn_hours(sizes.csabstruct_test, sizes.pubmed_test), hours_on="GPU", how=how_knn))
        work.append(Work("released", "Tables 3-4's baselines: their searches", "knn", runs=len(externals),
                         hours=_knn_hours(test, pubmed, *sizes.cf_sections.values()), hours_on="GPU", how=how_knn))

    # ---------------------------------------------------------------------------------------------- training runs
    sets = {"CFS3": (sizes.cfs3_train, sizes.cfs3_valid), "CSAbstruct train": (sizes.csabstruct_train,
                                                                                sizes.csabstruct_dev)}
    fetches = {"main": [("cfs3", 4, 45_000_000, "CFS3 release (4 files; ≈ 45 MB, estimated from 100,016 "
                                                 "sentences of ≈ 200 bytes, twice, and the n-gram list)"),
                        ("csabstruct", 3, 2_623_812, "CSAbstruct (3 files, 2.6 MB as pinned)"),
                        ("pubmed_rct", 3, 30_000_000, "PubMed 20k RCT (3 files, ~ 30 MB: the registry's size)"),
                        ("cf_sentences", 0, 0, "CF-labelled sentences: a manual download (no request counted)"),
                        ("allenai/scibert_scivocab_uncased", MODEL_REQUESTS, MODEL_DOWNLOAD_BYTES["bert"],
                         "SciBERT (estimated as the other BERT-base checkpoints)")]}
    for what, requests, size, how in fetches["main"]:
        work.append(Work("main", f"download {what}", "fetch", download_bytes=size, requests=requests,
                         requests_per_s=REQUESTS_PER_S, how=how))
    work.append(Work("main", "untrained SciBERT, mean and [CLS] pooling: both tests and the CF-labelled set",
                     "encode", runs=2, texts=test + pubmed + cf, tokens_per_text=tokens, how=how_encode))
    work.append(Work("main", "untrained SciBERT, mean and [CLS] pooling: their searches", "knn", runs=2,
                     hours=_knn_hours(test, pubmed, *sizes.cf_sections.values()), hours_on="GPU", how=how_knn))
    grouped: dict[tuple, dict] = {}
    for data_name, (n_train, n_valid) in sets.items():
        valid = _capped(p.max_valid, n_valid)
        for loss in p.losses:
            pk, kk = pk_shape(loss)
            batches = max(1, n_train // (pk * kk))
            if p.max_batches_per_epoch:
                batches = min(batches, int(p.max_batches_per_epoch))
            is_check = (data_name, loss) == (check_set, p.check_loss)
            seeds = max(p.leaderboard_seeds, p.check_seeds) if is_check else p.leaderboard_seeds
            for run_seed in range(p.seed, p.seed + seeds):
                part = training_part(data_name, loss, run_seed, p, check_set)
                secondary = (not p.secondary_test_seeds or run_seed < p.seed + p.secondary_test_seeds
                             or (check_set == "CFS3" and is_check))
                key = (part, data_name, loss, secondary)
                entry = grouped.setdefault(key, {"runs": 0, "batches": batches, "pk": pk * kk, "valid": valid})
                entry["runs"] += 1
    scoring: dict[str, list] = {}  # part -> [runs, texts encoded, k-NN hours]: one encode and one knn line a part

    def scored(part: str, runs: int, texts: int, knn_hours: float) -> None:
        entry = scoring.setdefault(part, [0, 0, 0.0])
        entry[0] += runs
        entry[1] += runs * texts
        entry[2] += runs * knn_hours

    for (part, data_name, loss, secondary), entry in grouped.items():
        runs, per_step = entry["runs"], entry["pk"]
        label = f"{loss} on {data_name}" + ("" if secondary else " (scored on CSAbstruct test only)")
        work.append(Work(part, f"train {label}", "train", runs=runs, examples=entry["batches"] * per_step,
                         epochs=int(p.epochs), effective_batch=per_step, texts_per_example=1, tokens_per_text=tokens,
                         how=f"PK batches of {per_step}, {entry['batches']:,} an epoch; {tokens} tokens a sentence "
                             "(assumed); training throughput as measured in sdr.plan"))
        tests = (test, *((pubmed, *sizes.cf_sections.values()) if secondary else ()))
        scored(part, runs, entry["valid"] * int(p.epochs) + sum(tests),
               int(p.epochs) * _knn_hours(entry["valid"]) + _knn_hours(*tests))

    # ---------------------------------------------------------------------------------------------- §4.3
    all_labels = sizes.cfs3_labels
    counts = [n for n in p.label_counts if n < len(all_labels)]
    valid_cap = _capped(p.max_valid, sizes.cfs3_valid)
    # scored on the CF-labelled set (or its replica), except at real on the book's CFS3 build: CSAbstruct test
    on_csabstruct = p.profile == "real" and check_set == "CSAbstruct train"
    label_searched = (test,) if on_csabstruct else tuple(sizes.cf_sections.values())
    for run_seed in range(p.seed, p.seed + (p.label_seeds if counts else 0)):
        for n_labels, subset in sample_label_subsets(all_labels, counts, seed=run_seed).items():
            n_train = sum(sizes.cfs3_label_train[label] for label in subset)
            n_valid = sum(sizes.cfs3_label_valid[label] for label in subset)
            n_valid = min(n_valid, round(valid_cap * n_valid / sizes.cfs3_valid)) if p.max_valid else n_valid
            shapes: dict[tuple, list[str]] = {}  # every loss's batch holds 64 sentences: one line for all losses
            for loss in p.label_losses:
                pk, kk = pk_shape(loss)
                schedule = label_schedule(n_labels, len(all_labels), n_train, p.epochs, loss,
                                          max_batches_per_epoch=p.max_batches_per_epoch, max_steps=p.label_max_steps)
                shapes.setdefault((pk * kk, schedule), []).append(loss)
            for (per_step, schedule), losses in shapes.items():
                work.append(Work("labels", f"train {n_labels} labels, seed {run_seed}: {', '.join(losses)}", "train",
                                 runs=len(losses), examples=schedule.batches_per_epoch * per_step,
                                 epochs=schedule.epochs, effective_batch=per_step, texts_per_example=1,
                                 tokens_per_text=tokens,
                                 how=f"{n_train:,} sentences of the subset drawn for this seed (the release's label "
                                     f"table); {schedule.epochs} epochs of {schedule.batches_per_epoch:,} PK batches "
                                     "(footnote 9's rule)"))
                scored("labels", len(losses), n_valid * schedule.epochs + sum(label_searched),
                       schedule.epochs * _knn_hours(n_valid) + _knn_hours(*label_searched))

    for part, (runs, texts, knn_hours) in scoring.items():
        work.append(Work(part, f"score the {runs} trained models: validation each epoch, then the tests", "encode",
                         texts=texts, tokens_per_text=tokens, how=how_encode))
        work.append(Work(part, f"their P@1 / MAP@R searches", "knn", hours=knn_hours, hours_on="GPU", how=how_knn))

    plan = CostPlan("scitoricsbert", p.profile, dict(PARTS), work, resolve_parts(getattr(p, "parts", "all"), PARTS))
    t4 = plan.totals()
    column = next(c for c in t4.columns if "T4" in c)
    plan.parts = {name: replace(part, t4=t4_words(float(t4[column].get(name, 0.0)))) for name, part in PARTS.items()}
    return plan
