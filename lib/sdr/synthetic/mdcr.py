"""An MDCR replica written from a synthetic corpus, in the official file layout.

Files (``zoranmedic/mdcr`` README and SciRepEval's ``mdcr.py``)::

    mdcr_<split>.json         {field: {query_id: {"bm25", "graph", "most_cited", "random",
                                                   "scincl", "specter", "true": [paper ids]}}}
    mdcr_<split>_data.jsonl   {"paper_id", "title", "abstract"} of every query and candidate

How the candidate pools are drawn, following the selection strategies of the MDCR paper
(Medić & Šnajder, 2022, section 3): ``true`` = papers the query cites; ``bm25`` = the field's
papers BM25 (``bm25s``) ranks highest for the query's title and abstract without being cited;
``graph`` = citation-graph neighbours of the cited papers (2 hops from the query) that the query
does not cite; ``most_cited`` = the field's most cited papers; ``random`` = random papers of the
field.  ``scincl`` and ``specter`` are model-based hard negatives in the real benchmark; no such
model runs here, so they are papers of the query's own community that it does not cite (what a
citation-trained encoder ranks high), split between the two lists.  Lists may overlap, as in the
real data (a candidate is relevant iff it is in ``true``).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from sdr.datasets import forbid_replica


def write_mdcr(
    corpus,
    out_dir: str | Path,
    seed: int = 0,
    splits: tuple[str, ...] = ("val", "test"),
    n_queries_per_field: int = 10,
    n_true: int = 5,
    n_per_type: int = 5,
    min_true: int = 2,
    progress: bool = True,
) -> Path:
    """Write ``mdcr_<split>.json`` and ``mdcr_<split>_data.jsonl`` for each split into ``out_dir``.

    Each field contributes up to ``n_queries_per_field`` queries per split (papers citing at least
    ``min_true`` papers); shortfalls are counted in ``mdcr_stats.json`` and printed.  Returns ``out_dir``.
    """
    forbid_replica("sdr.synthetic.write_mdcr")
    import bm25s
    from tqdm.auto import tqdm

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    papers, graph = corpus.papers, corpus.graph
    by_field: dict[str, list[str]] = defaultdict(list)
    for pid in sorted(papers):
        if papers[pid].fields:
            by_field[papers[pid].fields[0]].append(pid)
    citation_counts = Counter({pid: len(graph.citations(pid) - {pid}) for pid in papers})
    stats: dict = {"fields": {}, "papers_without_field": sum(1 for p in papers.values() if not p.fields)}
    benchmark: dict[str, dict] = {split: {} for split in splits}
    for field in tqdm(sorted(by_field), desc="MDCR replica fields", disable=not progress):
        members = by_field[field]
        texts = [f"{papers[pid].title} {papers[pid].abstract}" for pid in members]
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        most_cited = sorted(members, key=lambda pid: (-citation_counts[pid], pid))
        eligible = [pid for pid in members if len(graph.references(pid) - {pid}) >= min_true]
        order = rng.permutation(len(eligible))
        eligible = [eligible[i] for i in order]
        field_stats = {"eligible_queries": len(eligible)}
        for index, split in enumerate(splits):
            queries = eligible[index * n_queries_per_field:(index + 1) * n_queries_per_field]
            field_stats[split] = len(queries)
            if not queries:
                continue
            field_benchmark = {}
            for query in queries:
                field_benchmark[query] = _pools(query, papers, graph, members, retriever, most_cited, rng,
                                                n_true, n_per_type)
            benchmark[split][field] = field_benchmark
        field_stats["queries_short"] = max(0, len(splits) * n_queries_per_field - len(eligible))
        stats["fields"][field] = field_stats
    for split in splits:
        (out_dir / f"mdcr_{split}.json").write_text(json.dumps(benchmark[split], indent=1), encoding="utf-8")
        ids = set()
        for queries in benchmark[split].values():
            for query, lists in queries.items():
                ids.add(query)
                for candidates in lists.values():
                    ids.update(candidates)
        with (out_dir / f"mdcr_{split}_data.jsonl").open("w", encoding="utf-8") as handle:
            for pid in sorted(ids):
                record = {"paper_id": pid, "title": papers[pid].title, "abstract": papers[pid].abstract}
                handle.write(json.dumps(record) + "\n")
    (out_dir / "mdcr_stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    short = sum(f["queries_short"] for f in stats["fields"].values())
    counts = ", ".join(f"{split}: {sum(len(q) for q in benchmark[split].values())} queries" for split in splits)
    print(f"MDCR replica in {out_dir}: {len(by_field)} fields, {counts} "
          f"(queries short of {n_queries_per_field}/field/split: {short}; details in mdcr_stats.json)")
    return out_dir


def _pools(query, papers, graph, members, retriever, most_cited, rng, n_true, n_per_type) -> dict[str, list[str]]:
    """The seven candidate lists of one query (see the module docstring)."""
    import bm25s

    cited = sorted(graph.references(query) - {query})
    true = sorted(rng.choice(cited, size=min(n_true, len(cited)), replace=False).tolist())
    excluded = set(cited) | {query}
    member_set = set(members)

    tokens = bm25s.tokenize([f"{papers[query].title} {papers[query].abstract}"], stopwords="en",
                            show_progress=False)
    k = min(len(members), n_per_type + len(excluded) + 1)
    documents, _scores = retriever.retrieve(tokens, k=k, show_progress=False)
    bm25 = [members[i] for i in documents[0].tolist() if members[i] not in excluded][:n_per_type]

    two_hop = set()
    for pid in cited:
        two_hop |= graph.neighbours(pid)
    two_hop = sorted((two_hop & member_set) - excluded)
    graph_list = _sample(two_hop, n_per_type, rng)

    popular = [pid for pid in most_cited if pid not in excluded][:n_per_type]
    random_list = _sample(sorted(member_set - excluded), n_per_type, rng)

    community = papers[query].metadata.get("community")
    same = sorted(pid for pid in members if pid not in excluded
                  and papers[pid].metadata.get("community") == community)
    hard = _sample(same, 2 * n_per_type, rng)
    return {"bm25": bm25, "graph": graph_list, "most_cited": popular, "random": random_list,
            "scincl": hard[:n_per_type], "specter": hard[n_per_type:], "true": true}


def _sample(pool: list[str], size: int, rng: np.random.Generator) -> list[str]:
    if not pool:
        return []
    return [str(x) for x in rng.choice(pool, size=min(size, len(pool)), replace=False)]
