"""The labelled dataset: JSONL files, the 4:1 stratified split, statistics and label-quality checks.

Files hold one record per sentence, ``{"id","text","label","label_name","ngram","source"}``, with
``label`` written as CFS3's two-digit string ("01"–"80", the labels ``kaisugi/rhetorical_aspect_
embeddings`` train.py expects). The split is scikit-learn's stratified ``train_test_split`` with a
0.2 validation share: fed with the per-label counts of the released CFS3 it gives exactly the
released CFS3_train/CFS3_valid counts of every label (tested).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from sdr.jsonio import read_jsonl
from sdr.cfs3.matching import LabelledSentence
from sdr.cfs3.phrases import FUNCTION_GROUPS, group_of

CSABSTRUCT_LABELS: tuple[str, ...] = ("background", "objective", "method", "result", "other")

GROUP_TO_CSABSTRUCT: dict[str, str] = {
    "introducing-work": "background",
    "referring-to-sources": "background",
    "describing-methods": "method",
    "reporting-results": "result",
    "discussing-findings": "result",
    "writing-conclusions": "result",
}
"""Our a-priori reading of the six Phrasebank pages as CSAbstruct sentence labels."""

LABEL_TO_CSABSTRUCT_REFINED: dict[int, str] = {
    10: "objective",  # Stating the focus, aim, or argument of a short paper
    11: "objective",  # Stating the purpose of the current research
    12: "method",  # Describing the research design and the methods used
    73: "objective",  # Restating the aims of the study
}
"""Functions whose name says objective or method although their page says otherwise."""


def write_labelled(path: str | Path, records: Iterable[LabelledSentence]) -> Path:
    """Write records as CFS3 JSONL (one object per line)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.to_record(), ensure_ascii=False) + "\n")
    return path


def parse_label(value, where: str) -> int:
    """A CFS3 label given as 1, "1" or "01" → 1; ``ValueError`` naming ``where`` otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{where}: label {value!r}: expected a number 1-80 or a string such as '01'")
    if isinstance(value, int):
        label = value
    elif isinstance(value, str) and value.strip().isdigit():
        label = int(value.strip())
    else:
        raise ValueError(f"{where}: label {value!r}: expected a number 1-80 or a string such as '01'")
    if not 1 <= label <= 999:
        raise ValueError(f"{where}: label {value!r}: expected a positive label")
    return label


def read_labelled(path: str | Path, label_names: dict[int, str] | None = None) -> list[LabelledSentence]:
    """Read CFS3 JSONL — ours or the released ``CFS3*.jsonl`` (``text``, ``label``, optional others).

    A missing ``id`` becomes ``<file stem>:<line>``; errors name the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: CFS3 JSONL not found")
    records: list[LabelledSentence] = []
    for line_number, record in read_jsonl(path, "CFS3 JSONL {'text', 'label'}", allow_empty=True):
        where = f"{path}:{line_number}"
        if not isinstance(record.get("text"), str) or "label" not in record:
            raise ValueError(f"{where}: expected an object with 'text' (string) and 'label'")
        label = parse_label(record["label"], where)
        name = record.get("label_name") or (label_names or {}).get(label, "")
        ngram = record.get("ngram") or ""
        if isinstance(ngram, list):
            ngram = " ".join(map(str, ngram))
        records.append(LabelledSentence(str(record.get("id", f"{path.stem}:{line_number}")), record["text"],
                                        label, str(name), str(ngram), str(record.get("source", path.stem))))
    return records


def stratified_split(records: list[LabelledSentence], valid_fraction: float = 0.2, seed: int = 0,
                     ) -> tuple[list[LabelledSentence], list[LabelledSentence], dict]:
    """Stratified train/valid split (4:1 by default) with scikit-learn's ``train_test_split``.

    Labels with a single sentence cannot be stratified: they go to train (counted in the report).
    When the set is too small for scikit-learn (fewer validation slots than labels) each label is
    split on its own, ``round(count × valid_fraction)`` sentences to valid (same counts on CFS3).
    """
    from sklearn.model_selection import train_test_split

    if not 0 < valid_fraction < 1:
        raise ValueError(f"valid_fraction={valid_fraction}: expected a number between 0 and 1")
    counts = Counter(r.label for r in records)
    singles = [i for i, r in enumerate(records) if counts[r.label] == 1]
    rest = [i for i, r in enumerate(records) if counts[r.label] > 1]
    report = {"singleton_labels_to_train": len(singles), "method": "sklearn.train_test_split(stratify)"}
    valid_index: list[int] = []
    if rest:
        labels = np.array([records[i].label for i in rest])
        try:
            _, valid_index = train_test_split(rest, test_size=valid_fraction, stratify=labels, random_state=seed)
        except ValueError:
            report["method"] = "per-label round(count * valid_fraction)"
            rng = np.random.default_rng(seed)
            by_label: dict[int, list[int]] = {}
            for i in rest:
                by_label.setdefault(records[i].label, []).append(i)
            valid_index = []
            for label in sorted(by_label):
                members = list(rng.permutation(by_label[label]))
                valid_index.extend(members[:int(round(len(members) * valid_fraction))])
    valid_set = set(int(i) for i in valid_index)
    train = [r for i, r in enumerate(records) if i not in valid_set]
    valid = [r for i, r in enumerate(records) if i in valid_set]
    return train, valid, report


def label_table(records: list[LabelledSentence], label_names: dict[int, str],
                train: list[LabelledSentence] | None = None, valid: list[LabelledSentence] | None = None,
                ngrams_per_label: dict[int, int] | None = None) -> pd.DataFrame:
    """One row per label: name, group, sentences (and train/valid/n-gram counts when given)."""
    counts = Counter(r.label for r in records)
    train_counts = Counter(r.label for r in train) if train is not None else None
    valid_counts = Counter(r.label for r in valid) if valid is not None else None
    rows = []
    for label in sorted(set(label_names) | set(counts)):
        row = {"label": label, "label_name": label_names.get(label, ""),
               "group": group_of(label) if label <= 80 else "", "sentences": counts.get(label, 0)}
        if train_counts is not None:
            row["train"] = train_counts.get(label, 0)
        if valid_counts is not None:
            row["valid"] = valid_counts.get(label, 0)
        if ngrams_per_label is not None:
            row["ngrams"] = ngrams_per_label.get(label, 0)
        rows.append(row)
    return pd.DataFrame(rows)


def empty_labels(records: list[LabelledSentence], label_names: dict[int, str]) -> list[int]:
    """Labels that no sentence received (the paper's CFS3: 15, 29 and 39)."""
    used = {r.label for r in records}
    return sorted(set(label_names) - used)


def gold_agreement(records: list[LabelledSentence], group_mapping: dict[str, str] | None = None,
                   label_overrides: dict[int, str] | None = None) -> dict:
    """Agreement of our distant labels with gold CSAbstruct-style sentence labels.

    Uses the records that carry a ``gold`` label. Returns ``confusion`` (groups × gold labels,
    counts), ``n``, ``agreement`` (share whose mapped label equals gold, with ``group_mapping`` and
    ``label_overrides``), ``majority_agreement``: the agreement when each group is mapped to its
    most frequent gold label — the best any group-level mapping can do — and
    ``label_majority_agreement``, the same per function label (the best any label-level mapping can do).
    """
    group_mapping = dict(GROUP_TO_CSABSTRUCT if group_mapping is None else group_mapping)
    label_overrides = dict(label_overrides or {})
    scored = [r for r in records if r.gold]
    groups = [name for name, _, _ in FUNCTION_GROUPS]
    gold_labels = list(CSABSTRUCT_LABELS) + sorted({r.gold for r in scored} - set(CSABSTRUCT_LABELS))
    confusion = pd.DataFrame(0, index=pd.Index(groups, name="our group"),
                             columns=pd.Index(gold_labels, name="gold label"))
    agree = 0
    for r in scored:
        confusion.loc[r.group, r.gold] += 1
        predicted = label_overrides.get(r.label, group_mapping.get(r.group))
        agree += predicted == r.gold
    n = len(scored)
    majority = int(confusion.max(axis=1).sum())
    per_label: dict[int, Counter] = {}
    for r in scored:
        per_label.setdefault(r.label, Counter())[r.gold] += 1
    label_majority = sum(max(counts.values()) for counts in per_label.values())
    return {"n": n, "confusion": confusion,
            "agreement": agree / n if n else float("nan"),
            "majority_agreement": majority / n if n else float("nan"),
            "label_majority_agreement": label_majority / n if n else float("nan"),
            "majority_mapping": {g: confusion.loc[g].idxmax() for g in groups if confusion.loc[g].sum() > 0}}


def planted_recovery(records: list[LabelledSentence], sentences) -> dict:
    """On the synthetic corpus: how many planted function sentences got their planted label.

    ``precision`` = correct / labelled planted sentences, ``recall`` = correct / planted sentences,
    ``labelled_unplanted`` = labelled sentences that were not planted (false alarms).
    """
    planted = {s.id: s.meta["planted_label"] for s in sentences if "planted_label" in s.meta}
    labelled_planted = [r for r in records if r.id in planted]
    correct = sum(r.label == planted[r.id] for r in labelled_planted)
    return {"planted": len(planted), "labelled_planted": len(labelled_planted), "correct": correct,
            "precision": correct / len(labelled_planted) if labelled_planted else float("nan"),
            "recall": correct / len(planted) if planted else float("nan"),
            "labelled_unplanted": sum(r.id not in planted for r in records)}
