"""Replicas of SPECTER's training set, written from a synthetic corpus in the real datasets' layouts.

* :func:`write_cite_prediction` — the triplets as SciRepEval's ``cite_prediction`` training config
  (``scirepeval_cite_prediction``: ``train.jsonl``, one ``{"query", "pos", "neg"}`` per line, each side
  ``{"sha", "corpus_id", "title", "abstract"}``), drawn by SPECTER's sampler
  (:func:`sdr.samplers.specter_triplets`: cited positives, 2 hard + 3 easy negatives per query);
* :func:`write_s2orc_full_text` — the full text of those papers as the S2ORC fetcher writes it
  (``s2orc_specter``: ``metadata/metadata.jsonl`` and ``pdf_parses/pdf_parses.jsonl``, ``paper_id`` = the
  corpus id as a string, ``body_text`` = ``[{"section", "text"}]`` per paragraph).

Both name a paper by the same integer corpus id (:func:`corpus_ids`, S2 corpus ids are integers), so a chapter
reads the replicas with the readers of the real files and joins them as it joins the real ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from sdr.datasets import forbid_replica

CORPUS_ID_BASE = 500_000


def corpus_ids(corpus) -> dict[str, int]:
    """Synthetic paper id → the integer corpus id both replicas use (sorted ids from :data:`CORPUS_ID_BASE`)."""
    return {pid: CORPUS_ID_BASE + index for index, pid in enumerate(sorted(corpus.papers))}


def write_cite_prediction(corpus, folder: str | Path, seed: int = 0, query_ids: Iterable[str] | None = None) -> Path:
    """SPECTER's triplets of ``corpus`` (queries: ``query_ids``, default all) in ``folder/train.jsonl``; returns
    the folder."""
    forbid_replica("sdr.synthetic.write_cite_prediction")
    from sdr.samplers import specter_triplets

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ids = corpus_ids(corpus)
    triplets, report = specter_triplets(corpus.graph, candidates=sorted(corpus.papers), query_ids=query_ids,
                                        seed=seed, progress=False, verbose=False)
    if not triplets:
        raise ValueError(f"write_cite_prediction: the corpus gave no triplet ({report})")

    def side(pid: str) -> dict:
        paper = corpus.papers[pid]
        return {"sha": pid, "corpus_id": ids[pid], "title": paper.title, "abstract": paper.abstract}

    with (folder / "train.jsonl").open("w", encoding="utf-8") as handle:
        for t in triplets:
            handle.write(json.dumps({"query": side(t.query), "pos": side(t.positive), "neg": side(t.negative)}) + "\n")
    print(f"cite_prediction replica {folder / 'train.jsonl'}: {len(triplets)} triplets of "
          f"{report.queries_used} queries")
    return folder


def write_s2orc_full_text(corpus, folder: str | Path, paper_ids: Iterable[str] | None = None) -> Path:
    """Full text of ``paper_ids`` (default: every paper of ``corpus`` with sections) in the s2orc_specter layout;
    returns the folder."""
    forbid_replica("sdr.synthetic.write_s2orc_full_text")
    folder = Path(folder)
    (folder / "metadata").mkdir(parents=True, exist_ok=True)
    (folder / "pdf_parses").mkdir(parents=True, exist_ok=True)
    ids = corpus_ids(corpus)
    chosen = sorted(paper_ids) if paper_ids is not None else sorted(p for p, paper in corpus.papers.items()
                                                                    if paper.sections)
    with (folder / "metadata" / "metadata.jsonl").open("w", encoding="utf-8") as metadata, \
            (folder / "pdf_parses" / "pdf_parses.jsonl").open("w", encoding="utf-8") as parses:
        for pid in chosen:
            paper = corpus.papers[pid]
            body = [{"section": section.heading, "text": paragraph}
                    for section in paper.sections for paragraph in section.paragraphs]
            paper_id = str(ids[pid])
            metadata.write(json.dumps({"paper_id": paper_id, "title": paper.title, "abstract": paper.abstract,
                                       "externalids": {}, "has_pdf_parse": bool(body)}) + "\n")
            parses.write(json.dumps({"paper_id": paper_id, "abstract": [{"text": paper.abstract}],
                                     "body_text": body}) + "\n")
    print(f"S2ORC full-text replica {folder}: {len(chosen)} papers")
    return folder
