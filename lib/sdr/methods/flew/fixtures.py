"""FLeW's replica of the released split abstracts, and the paper dry run's FLeW fixtures (issue 30).

The dry run must take the branches the ``paper`` path takes. FLeW's bands keep SciNCL's k⁻hard = 4000 only in a
graph of more than 4,000 papers (:func:`sdr.methods.scincl.scaled_bands` scales them below that), so the dry run's
citation graph is its own synthetic corpus of :data:`DRY_RUN_GRAPH_PAPERS` papers, fetched page by page by the
real Semantic Scholar fetcher from a synthetic Graph API; the released triplets' query list is a dozen of its
papers, each with ten distinct positives in every facet subgraph, small enough that the paper profile's
``max_queries = 0`` (every query trained, nothing held out) runs uncapped. The released split abstracts are
written from the corpus' planted facets. ``sdr.dryrun.WRITERS`` registers the three writers.

Shown in: the paper dry run (``sdr paper-dry-run flew``); the smoke and real profiles' replica of
``flew_split_metadata``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np

from sdr.facets import FACETS

__all__ = ["DRY_RUN_GRAPH_PAPERS", "DRY_RUN_QUERIES", "write_split_metadata", "write_dry_run_triplets",
           "write_dry_run_citations", "write_dry_run_split_metadata"]

#: Papers of the dry run's citation graph: more than SciNCL's k⁻hard = 4000 + the c's, so FLeW's bands are not
#: scaled down (the paper's branch).
DRY_RUN_GRAPH_PAPERS = 4_400
#: Queries of the dry run's released list, each with ten distinct positives per facet.
DRY_RUN_QUERIES = 12
#: Corpus ids of the dry run's graph start here (apart from the shared fixture corpus' ids).
DRY_RUN_CORPUS_ID_BASE = 5_000_000


def write_split_metadata(corpus, folder: str | Path, ids: Mapping[str, int], papers: Iterable[str] | None = None
                         ) -> Path:
    """``<facet>_split_triplets_metadata.jsonl`` for ``papers`` (default: every paper of ``corpus``): one line a
    paper, ``{"corpus_id", "title", "abstract"}`` with the abstract cut to the facet by the corpus' planted labels
    (the replica stands in for FLeW's LLM-split release; the layout is the one the chapter's reader takes)."""
    from sdr.datasets import forbid_replica

    forbid_replica("sdr.methods.flew.fixtures.write_split_metadata")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    chosen = sorted(papers) if papers is not None else sorted(corpus.papers)
    for facet in FACETS:
        with (folder / f"{facet}_split_triplets_metadata.jsonl").open("w", encoding="utf-8") as handle:
            for pid in chosen:
                paper = corpus.papers[pid]
                facet_text = " ".join(paper.metadata.get("facets", {}).get(facet, []))
                handle.write(json.dumps({"corpus_id": ids[pid], "title": paper.title, "abstract": facet_text}) + "\n")
    return folder


@lru_cache(maxsize=2)
def _dry_run_graph(seed: int):
    """The dry run's citation corpus, its corpus ids and its released query list with triplets per facet."""
    from sdr.corpus import INTENTS
    from sdr.synthetic import make_corpus

    corpus = make_corpus(n_papers=DRY_RUN_GRAPH_PAPERS, seed=seed, with_sections=False, p_no_intent=0.15)
    ids = {pid: DRY_RUN_CORPUS_ID_BASE + i for i, pid in enumerate(sorted(corpus.papers))}
    neighbours = {facet: {} for facet in INTENTS}
    for citation in corpus.graph:
        for facet in INTENTS:
            if citation.count(facet) > 0:
                neighbours[facet].setdefault(citation.citing, set()).add(citation.cited)
                neighbours[facet].setdefault(citation.cited, set()).add(citation.citing)
    candidates = sorted(pid for pid in corpus.papers
                        if all(len(neighbours[f].get(pid, ())) >= 10 for f in INTENTS))
    if len(candidates) < DRY_RUN_QUERIES:
        raise ValueError(f"dry-run FLeW graph: {len(candidates)} papers with 10 neighbours in every facet subgraph, "
                         f"need {DRY_RUN_QUERIES}")
    rng = np.random.default_rng(seed)
    queries = [candidates[i] for i in sorted(rng.choice(len(candidates), DRY_RUN_QUERIES, replace=False))]
    papers = sorted(corpus.papers)
    triplets = {}
    for facet in INTENTS:
        rows = []
        for query in queries:
            near = sorted(neighbours[facet][query])
            for positive in rng.choice(near, 10, replace=False):
                while True:
                    negative = papers[int(rng.integers(len(papers)))]
                    if negative != query and negative not in neighbours[facet][query]:
                        break
                rows.append((query, str(positive), negative))
        triplets[facet] = rows
    return corpus, ids, queries, triplets


def write_dry_run_triplets(folder: Path, fixture) -> None:
    """The released triplet files of the dry run's query list (corpus ids, FLeW's header)."""
    corpus, ids, _, triplets = _dry_run_graph(fixture.seed)
    folder.mkdir(parents=True, exist_ok=True)
    for facet, rows in triplets.items():
        lines = ["query_paper_id,positive_id,negative_id"] + [",".join(str(ids[p]) for p in row) for row in rows]
        (folder / f"{facet}_training_triplet.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_dry_run_citations(folder: Path, fixture) -> None:
    """The Semantic Scholar pages of every paper of the dry run's graph (corpus ids resolved through /paper/batch),
    written by the real fetcher from the synthetic Graph API: a graph of more than 4,000 papers."""
    from sdr import datasets
    from sdr.fetchers.http import Client
    from sdr.fetchers.semantic_scholar import fetch_dataset
    from sdr.synthetic.s2_api import SyntheticGraphApi

    corpus, ids, _, _ = _dry_run_graph(fixture.seed)
    client = Client(rate=1e6, api_key="dry-run", transport=SyntheticGraphApi(corpus, ids), sleep=lambda s: None)
    anchors = [f"CorpusId:{ids[pid]}" for pid in sorted(corpus.papers)]
    fetch_dataset(datasets.get("s2ag_citations_flew"), folder, progress=False, client=client, anchors=anchors)


def write_dry_run_split_metadata(folder: Path, fixture) -> None:
    """The released split abstracts of every paper of the dry run's triplets."""
    corpus, ids, _, triplets = _dry_run_graph(fixture.seed)
    write_split_metadata(corpus, folder, ids, {pid for rows in triplets.values() for t in rows for pid in t})
