"""A paragraph-retrieval replica (CoSaEmb Table 6) written from a synthetic corpus.

CoSaEmb's set-up is 1,500 arXiv papers split into section texts; the replica takes papers of the
corpus and writes one chunk per section as JSONL ``{"id", "paper_id", "section", "text"}``, the file
``sdr evaluate paragraphs --chunks`` reads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sdr.evaluate.paragraphs import chunks_from_papers, write_chunks
from sdr.datasets import forbid_replica


def write_paragraphs(corpus, path: str | Path, n_papers: int | None = None, seed: int = 0) -> Path:
    """Write section chunks of ``n_papers`` randomly chosen papers (all when ``None``); returns the path."""
    forbid_replica("sdr.synthetic.write_paragraphs")
    paper_ids = sorted(corpus.papers)
    if n_papers is not None and n_papers < len(paper_ids):
        picks = np.random.default_rng(seed).choice(len(paper_ids), size=n_papers, replace=False)
        paper_ids = sorted(paper_ids[i] for i in picks)
    chunks = chunks_from_papers(corpus.papers[pid] for pid in paper_ids)
    without_sections = sum(1 for pid in paper_ids if not corpus.papers[pid].sections)
    write_chunks(path, chunks)
    print(f"paragraph replica {path}: {len(chunks)} chunks from {len(paper_ids)} papers "
          f"({without_sections} papers without sections)")
    return Path(path)
