"""The released CFS3 (``Alab-NII/CFS3``): reader and comparison with what we build.

The release has ``CFS3.jsonl``, ``CFS3_train.jsonl``, ``CFS3_valid.jsonl`` (records with ``text``,
``label`` "01"–"80" and ``ngram``, per ``kaisugi/rhetorical_aspect_embeddings`` train.py) and
``5gram_dict.json`` (the labelled n-gram list). Their blobs were not retrievable for this book, so
the n-gram file's exact layout is unseen: :func:`read_ngram_dict` accepts the plausible layouts
(``{"w1 … w5": label}``, ``{label: ["w1 … w5", …]}``, ``[[ngram, label], …]``,
``[{"ngram": …, "label": …}, …]``, n-grams as strings or word lists) and names the file when none fits.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sdr.jsonio import load_json
from sdr.cfs3.dataset import parse_label, read_labelled
from sdr.cfs3.matching import LabelledSentence
from sdr.cfs3.ngrams import Ngram, NgramDictionary

RELEASED_FILES = {"all": "CFS3.jsonl", "train": "CFS3_train.jsonl", "valid": "CFS3_valid.jsonl"}
NGRAM_FILE = "5gram_dict.json"


def _as_ngram(value, where: str) -> Ngram:
    if isinstance(value, str):
        words = value.split()
    elif isinstance(value, (list, tuple)) and all(isinstance(w, str) for w in value):
        words = list(value)
    else:
        raise ValueError(f"{where}: n-gram {value!r}: expected a string or a list of words")
    if not words:
        raise ValueError(f"{where}: empty n-gram")
    return tuple(w.lower() for w in words)


def read_ngram_dict(path: str | Path) -> dict[Ngram, int]:
    """Read a labelled n-gram list (the release's ``5gram_dict.json``) into ``{ngram: label}``.

    An n-gram listed with two different labels raises (the paper's list has one label per n-gram).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: n-gram dictionary not found")
    payload = load_json(path, "CFS3's 5gram_dict.json")
    pairs: list[tuple[Ngram, int]] = []
    if isinstance(payload, dict) and "ngrams" in payload and isinstance(payload["ngrams"], dict):
        payload = payload["ngrams"]  # our own NgramDictionary.to_json layout
    if isinstance(payload, dict):
        for key, value in payload.items():
            where = f"{path}: entry {key!r}"
            if isinstance(value, list) and key.strip().isdigit():
                label = parse_label(key, where)
                pairs.extend((_as_ngram(item, where), label) for item in value)
            else:
                pairs.append((_as_ngram(key, where), parse_label(value, where)))
    elif isinstance(payload, list):
        for index, item in enumerate(payload):
            where = f"{path}: item {index}"
            if isinstance(item, dict) and "ngram" in item and "label" in item:
                pairs.append((_as_ngram(item["ngram"], where), parse_label(item["label"], where)))
            elif isinstance(item, (list, tuple)) and len(item) == 2:
                pairs.append((_as_ngram(item[0], where), parse_label(item[1], where)))
            else:
                raise ValueError(f"{where}: expected [ngram, label] or {{'ngram', 'label'}}")
    else:
        raise ValueError(f"{path}: expected a JSON object or list of labelled n-grams")
    result: dict[Ngram, int] = {}
    for ngram, label in pairs:
        if result.get(ngram, label) != label:
            raise ValueError(f"{path}: n-gram {' '.join(ngram)!r} listed with labels {result[ngram]} and {label}")
        result[ngram] = label
    return result


@dataclass
class ReleasedCFS3:
    """Whatever parts of the release were found: splits by name and the n-gram dictionary."""

    directory: Path
    splits: dict[str, list[LabelledSentence]] = field(default_factory=dict)
    ngrams: dict[Ngram, int] | None = None

    def label_counts(self) -> dict[str, Counter]:
        """Sentences per label in each split present."""
        return {name: Counter(r.label for r in records) for name, records in self.splits.items()}


def read_released_cfs3(directory: str | Path) -> ReleasedCFS3:
    """Read the released CFS3 files present in ``directory``; error when none is there."""
    directory = Path(directory)
    released = ReleasedCFS3(directory)
    for name, filename in RELEASED_FILES.items():
        if (directory / filename).is_file():
            released.splits[name] = read_labelled(directory / filename)
    if (directory / NGRAM_FILE).is_file():
        released.ngrams = read_ngram_dict(directory / NGRAM_FILE)
    if not released.splits and released.ngrams is None:
        raise FileNotFoundError(f"{directory}: none of the released CFS3 files "
                                f"({', '.join(list(RELEASED_FILES.values()) + [NGRAM_FILE])})")
    return released


def compare_ngram_dictionaries(ours: NgramDictionary | dict[Ngram, int], theirs: dict[Ngram, int]) -> dict:
    """Overlap of two labelled n-gram lists: sizes, shared n-grams, same label among shared, per side only."""
    ours_map = ours.labels if isinstance(ours, NgramDictionary) else ours
    shared = set(ours_map) & set(theirs)
    same = sum(ours_map[g] == theirs[g] for g in shared)
    union = set(ours_map) | set(theirs)
    return {"ours": len(ours_map), "theirs": len(theirs), "shared": len(shared),
            "only_ours": len(ours_map) - len(shared), "only_theirs": len(theirs) - len(shared),
            "same_label_of_shared": same / len(shared) if shared else float("nan"),
            "jaccard": len(shared) / len(union) if union else float("nan")}


def _text_key(text: str) -> str:
    return " ".join(text.lower().split())


def compare_labelled(ours: list[LabelledSentence], theirs: list[LabelledSentence]) -> dict:
    """Sentences labelled in both (same whitespace/case-normalised text) and how often labels agree."""
    their_labels: dict[str, int] = {}
    for r in theirs:
        their_labels.setdefault(_text_key(r.text), r.label)
    shared = [(r.label, their_labels[_text_key(r.text)]) for r in ours if _text_key(r.text) in their_labels]
    same = sum(a == b for a, b in shared)
    return {"ours": len(ours), "theirs": len(theirs), "shared_sentences": len(shared),
            "same_label": same, "agreement": same / len(shared) if shared else float("nan")}
