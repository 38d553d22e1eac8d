"""Sentence-retrieval replicas written from a synthetic corpus, in the official layouts.

* CSAbstruct (allenai/sequential_sentence_classification ``data/CSAbstruct/{train,dev,test}.jsonl``):
  one abstract per line, ``{"abstract_id", "sentences", "labels", "confs"}``, from the corpus'
  abstract sentences and their planted CSAbstruct roles. ``confs`` are 1.0 (no annotators).
* PubMed 20k RCT (Franck-Dernoncourt/pubmed-rct ``PubMed_20k_RCT/{train,dev,test}.txt``): ``###<id>``, then
  ``LABEL<TAB>sentence`` lines, a blank line between abstracts, from the same abstracts with the roles named
  in PubMed-RCT's label set (:data:`PUBMED_RCT_LABELS`).
* CFS3 (Alab-NII/CFS3 ``CFS3.jsonl``): one sentence per line, ``{"id", "text", "label" (two
  digits), "label_name", "ngram", "source"}``, from the formulaic sentences planted in the full
  text (``metadata["rhetorical"]``); ``ngram`` is the template phrase the generator used.

Papers are assigned to splits at random (by paper, so no abstract is split), seeded.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

CSABSTRUCT_SPLITS = ("train", "dev", "test")
PUBMED_RCT_LABELS = {"background": "BACKGROUND", "objective": "OBJECTIVE", "method": "METHODS",
                     "result": "RESULTS", "other": "CONCLUSIONS"}
"""CSAbstruct role → PubMed-RCT label. The replica's ``other`` sentences (implications, code availability) take
PubMed-RCT's fifth label, CONCLUSIONS: our choice, as the generator plants no conclusion role of its own."""


def _split_of(paper_ids: list[str], fractions: tuple[float, float, float], seed: int) -> dict[str, str]:
    if len(fractions) != 3 or abs(sum(fractions) - 1.0) > 1e-6 or min(fractions) < 0:
        raise ValueError(f"split fractions must be three non-negative numbers summing to 1, got {fractions}")
    order = np.random.default_rng(seed).permutation(len(paper_ids))
    cut1 = int(round(fractions[0] * len(paper_ids)))
    cut2 = cut1 + int(round(fractions[1] * len(paper_ids)))
    split = {}
    for rank, index in enumerate(order):
        split[paper_ids[index]] = "train" if rank < cut1 else ("dev" if rank < cut2 else "test")
    return split


def write_csabstruct(
    corpus, out_dir: str | Path, fractions: tuple[float, float, float] = (0.7, 0.1, 0.2), seed: int = 0,
    max_papers: int | None = None,
) -> Path:
    """Write ``train/dev/test.jsonl`` in CSAbstruct's format; returns ``out_dir``.

    ``max_papers`` keeps the first papers (by id) to make small replicas.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paper_ids = sorted(pid for pid, p in corpus.papers.items() if p.metadata.get("abstract_sentences"))
    skipped = len(corpus.papers) - len(paper_ids)
    if max_papers is not None:
        paper_ids = paper_ids[:max_papers]
    split = _split_of(paper_ids, fractions, seed)
    handles = {s: (out_dir / f"{s}.jsonl").open("w", encoding="utf-8") for s in CSABSTRUCT_SPLITS}
    counts = dict.fromkeys(CSABSTRUCT_SPLITS, 0)
    try:
        for abstract_id, pid in enumerate(paper_ids):
            meta = corpus.papers[pid].metadata
            sentences, labels = list(meta["abstract_sentences"]), list(meta["abstract_labels"])
            record = {"abstract_id": abstract_id, "sentences": sentences, "labels": labels,
                      "confs": [1.0] * len(sentences), "paper_id": pid}
            handles[split[pid]].write(json.dumps(record) + "\n")
            counts[split[pid]] += len(sentences)
    finally:
        for handle in handles.values():
            handle.close()
    print(f"CSAbstruct replica in {out_dir}: sentences per split {counts} "
          f"({skipped} papers without abstract sentences skipped)")
    return out_dir


def write_pubmed_rct(
    corpus, out_dir: str | Path, fractions: tuple[float, float, float] = (0.7, 0.1, 0.2), seed: int = 0,
) -> Path:
    """Write ``train/dev/test.txt`` in PubMed 20k RCT's text format from the corpus' planted abstract roles
    (:data:`PUBMED_RCT_LABELS`); papers are split as :func:`write_csabstruct` splits them. Returns ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paper_ids = sorted(pid for pid, p in corpus.papers.items() if p.metadata.get("abstract_sentences"))
    split = _split_of(paper_ids, fractions, seed)
    lines = {s: [] for s in CSABSTRUCT_SPLITS}
    for abstract_id, pid in enumerate(paper_ids):
        meta = corpus.papers[pid].metadata
        unknown = set(meta["abstract_labels"]) - set(PUBMED_RCT_LABELS)
        if unknown:
            raise ValueError(f"paper {pid}: abstract roles {sorted(unknown)} have no PubMed-RCT label; "
                             f"expected {sorted(PUBMED_RCT_LABELS)}")
        lines[split[pid]].append(f"###{abstract_id}")
        lines[split[pid]] += [f"{PUBMED_RCT_LABELS[label]}\t{' '.join(text.split())}"
                              for text, label in zip(meta["abstract_sentences"], meta["abstract_labels"])]
        lines[split[pid]].append("")
    for name, rows in lines.items():
        (out_dir / f"{name}.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out_dir


def write_cfs3(corpus, path: str | Path, max_sentences: int | None = None) -> Path:
    """Write the planted rhetorical sentences as CFS3 JSONL; returns the file path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w", encoding="utf-8") as handle:
        for pid in sorted(corpus.papers):
            for index, record in enumerate(corpus.papers[pid].metadata.get("rhetorical") or []):
                if max_sentences is not None and written >= max_sentences:
                    break
                handle.write(json.dumps({
                    "id": f"{pid}_r{index}", "text": record["text"], "label": f"{int(record['label']):02d}",
                    "label_name": record.get("name", ""), "ngram": record.get("phrase", ""),
                    "source": "synthetic",
                }) + "\n")
                written += 1
    print(f"CFS3 replica {path}: {written} sentences")
    return path
