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
* The CF-labelled sentence set (Iwatsuki & Aizawa 2021, ``sentence-dataset/{train,eval}.<discipline>.<section>``,
  ``label<TAB>sentence`` with labels counted from 0 within each section): the same planted formulaic
  sentences, each in the CF section its full-text section maps to (:data:`CF_SECTION_OF_KIND`) and the
  discipline its field maps to (:data:`CF_DISCIPLINE_OF_FIELD`).

Papers are assigned to splits at random (by paper, so no abstract is split), seeded.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sdr.evaluate.sentences import CF_DISCIPLINES, CF_SECTION_OFFSETS
from sdr.synthetic.templates import RHETORICAL_BY_SECTION_KIND
from sdr.datasets import forbid_replica

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
    forbid_replica("sdr.synthetic.write_csabstruct")
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
    forbid_replica("sdr.synthetic.write_pubmed_rct")
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
    forbid_replica("sdr.synthetic.write_cfs3")
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


CF_SECTION_OF_KIND = {"introduction": "introduction", "related_work": "introduction", "method": "methods",
                      "results": "results", "conclusion": "discussion"}
"""Synthetic full-text section kind → CF-labelled set section. Related work goes to the introduction (the set has
the four IMRaD sections only; its introduction functions include reviewing previous work) and the conclusion to
the discussion: our choices."""

CF_DISCIPLINE_OF_FIELD = {"Chemistry": "Chem", "Materials Science": "Chem", "Physics": "Chem",
                          "Computer Science": "CL", "Mathematics": "CL",
                          "Medicine": "Onc", "Biology": "Onc",
                          "Psychology": "Psy", "Economics": "Psy", "Sociology": "Psy"}
"""Synthetic field → the set's four disciplines (chemistry, computational linguistics, oncology, psychology): our
choice of the nearest; it only decides which file a sentence is written to."""


def cf_section_labels() -> dict[str, list[int]]:
    """Per CF section, the CFS3 labels planted there, sorted: a sentence's CF label is its index in this list.

    Each section's labels must fit below the next section's offset in the pooled label space
    (:data:`sdr.evaluate.sentences.CF_SECTION_OFFSETS`), as the real set's do.
    """
    labels: dict[str, set[int]] = {section: set() for section in CF_SECTION_OFFSETS}
    for kind, functions in RHETORICAL_BY_SECTION_KIND.items():
        labels[CF_SECTION_OF_KIND[kind]].update(f.label for f in functions)
    offsets = list(CF_SECTION_OFFSETS.values()) + [None]
    for (section, offset), upper in zip(CF_SECTION_OFFSETS.items(), offsets[1:]):
        if upper is not None and len(labels[section]) > upper - offset:
            raise ValueError(f"CF replica: section {section!r} has {len(labels[section])} functions, more than the "
                             f"{upper - offset} labels its offset range holds")
    return {section: sorted(values) for section, values in labels.items()}


def write_cf_sentences(corpus, out_dir: str | Path, eval_fraction: float = 0.2, seed: int = 0) -> Path:
    """Write the CF-labelled sentence set's files ``{train,eval}.<discipline>.<section>`` from the planted sentences.

    One ``label<TAB>sentence`` line per planted formulaic sentence (``metadata["rhetorical"]``): its section is
    the one its full-text section kind maps to (:data:`CF_SECTION_OF_KIND`), its label the index of its CFS3
    function among that section's (:func:`cf_section_labels`), its discipline its paper's first field's
    (:data:`CF_DISCIPLINE_OF_FIELD`). Papers go to ``eval`` with probability ``eval_fraction`` (seeded), the rest
    to ``train``. All 32 files are written, empty ones included, so :func:`sdr.evaluate.sentences.read_cf_sentences`
    finds every file it expects. Returns ``out_dir``.
    """
    forbid_replica("sdr.synthetic.write_cf_sentences")
    if not 0 <= eval_fraction <= 1:
        raise ValueError(f"write_cf_sentences: eval_fraction must lie in [0, 1], got {eval_fraction}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    section_labels = {s: {label: i for i, label in enumerate(v)} for s, v in cf_section_labels().items()}
    rows = {(split, d, s): [] for split in ("train", "eval") for d in CF_DISCIPLINES for s in CF_SECTION_OFFSETS}
    paper_ids = sorted(corpus.papers)
    in_eval = np.random.default_rng(seed).random(len(paper_ids)) < eval_fraction
    for pid, is_eval in zip(paper_ids, in_eval):
        paper = corpus.papers[pid]
        field = paper.fields[0] if paper.fields else None
        if field not in CF_DISCIPLINE_OF_FIELD:
            raise ValueError(f"paper {pid}: field {field!r} has no CF discipline; expected one of "
                             f"{sorted(CF_DISCIPLINE_OF_FIELD)}")
        for index, record in enumerate(paper.metadata.get("rhetorical") or []):
            kind = record.get("kind")
            if kind not in CF_SECTION_OF_KIND:
                raise ValueError(f"paper {pid}, rhetorical sentence {index}: section kind {kind!r}; expected one of "
                                 f"{sorted(CF_SECTION_OF_KIND)}")
            section = CF_SECTION_OF_KIND[kind]
            label = section_labels[section][int(record["label"])]
            key = ("eval" if is_eval else "train", CF_DISCIPLINE_OF_FIELD[field], section)
            rows[key].append(f"{label}\t{' '.join(record['text'].split())}")
    for (split, discipline, section), lines in rows.items():
        (out_dir / f"{split}.{discipline}.{section}").write_text("".join(line + "\n" for line in lines),
                                                                   encoding="utf-8")
    counts = {s: sum(len(v) for (_, _, sec), v in rows.items() if sec == s) for s in CF_SECTION_OFFSETS}
    print(f"CF-labelled sentence replica in {out_dir}: sentences per section {counts}")
    return out_dir
