"""A CSFCube replica written from a synthetic corpus, in the official file layout (iesl/CSFCube)::

    queries-release.csv                     pid,facet,year,title,paper type
    test-pid2anns-csfcube-<facet>.json      {qpid: {"cands", "relevance_adju", "relevance_max",
                                                    "relevance_min", "relevance_ann1", "relevance_ann2"}}
    test-pid2pool-csfcube.json              {qpid: {"cands", "cand_source"}}
    evaluation_splits.json                  {facet | "all": {fold1_dev, fold2_dev, fold1_test, fold2_test}}
    abstracts-csfcube-preds.jsonl           {"paper_id", "metadata", "title", "abstract": [sentences],
                                             "pred_labels": ["<label>_label", ...], "pred_labels_truncated"}
    readable_annotations/<pid>-<facet>-adju.txt   (optional) the human-readable view

Graded relevance is planted from the corpus, facet by facet. A paper's *facet terms* are its focus
topics (background), its focus method (method) or its focus data (result) — the words its abstract
sentences of that facet are written with. For query q, candidate c and facet f:
``grade = 2·[c shares a facet-f term with q] + [same community] + [a citation between them carries
intent f]``, capped at 3. So binary relevance (grade ≥ 2) means "the same background / method /
result", which differs between facets as in the real collection. There are no annotators, so the
per-annotator, min and max grades equal the adjudicated one.

Each query paper gets one or two facets (the real collection has 50 pairs over 34 papers); pools mix
papers sharing facet terms, papers of the same community and random papers. Folds split each
facet's queries in two halves: fold1_dev = fold2_test and fold2_dev = fold1_test, as in the original.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from sdr.datasets import forbid_replica

FACETS = ("background", "method", "result")
FACET_FOCUS = {"background": "topics", "method": "methods", "result": "data"}


def facet_terms(paper, facet: str) -> set[str]:
    """The planted focus terms of a paper for a facet (empty when the paper has none)."""
    return set((paper.metadata.get("focus") or {}).get(FACET_FOCUS[facet], ()))


def facet_grade(corpus, query: str, candidate: str, facet: str) -> int:
    """Planted graded relevance 0-3 of ``candidate`` to ``query`` for ``facet`` (module docstring)."""
    papers = corpus.papers
    q, c = papers[query], papers[candidate]
    grade = 2 * bool(facet_terms(q, facet) & facet_terms(c, facet))
    grade += int(q.metadata.get("community") == c.metadata.get("community"))
    for citing, cited in ((query, candidate), (candidate, query)):
        edge = corpus.graph.edge(citing, cited)
        if edge is not None and facet in edge.intents:
            grade += 1
            break
    return min(grade, 3)


def write_csfcube(
    corpus,
    out_dir: str | Path,
    n_queries: int = 16,
    pool_size: int = 40,
    seed: int = 0,
    readable: bool = True,
) -> Path:
    """Write a CSFCube replica of ``corpus`` (a :class:`sdr.synthetic.SyntheticCorpus`) into ``out_dir``.

    ``n_queries`` query papers with one or two facets each; ``pool_size`` judged candidates per
    query. Counts are printed in one line and saved in ``out_dir/replica_stats.json``.
    """
    forbid_replica("sdr.synthetic.write_csfcube")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    papers = corpus.papers
    paper_ids = sorted(pid for pid, p in papers.items() if p.metadata.get("abstract_sentences"))
    if len(paper_ids) < pool_size + n_queries:
        raise ValueError(
            f"csfcube replica: {len(paper_ids)} papers with abstracts, need at least {pool_size + n_queries}"
        )
    queries = [paper_ids[i] for i in rng.choice(len(paper_ids), size=n_queries, replace=False)]
    facets_of = {}
    for index, query in enumerate(queries):
        chosen = [FACETS[index % 3]]
        if index % 2 == 0:
            chosen.append(FACETS[(index + 1) % 3])
        facets_of[query] = chosen

    by_community: dict[str, list[str]] = {}
    for pid in paper_ids:
        by_community.setdefault(papers[pid].metadata.get("community"), []).append(pid)

    anns = {facet: {} for facet in FACETS}
    pool_file = {}
    grade_counts = {facet: [0, 0, 0, 0] for facet in FACETS}
    for query in queries:
        others = [p for p in paper_ids if p != query]
        sharing = [p for p in others
                   if any(facet_terms(papers[query], f) & facet_terms(papers[p], f) for f in facets_of[query])]
        community = [p for p in by_community.get(papers[query].metadata.get("community"), []) if p != query]
        pool: list[str] = []
        sources: dict[str, str] = {}
        for source, members, quota in (("facet_terms", sharing, pool_size // 2),
                                       ("community", community, pool_size // 4),
                                       ("random", others, pool_size)):
            members = [p for p in members if p not in sources]
            take = min(quota, pool_size - len(pool), len(members))
            for pick in rng.choice(len(members), size=take, replace=False) if take else ():
                pid = members[int(pick)]
                sources[pid] = source
                pool.append(pid)
        pool = [pool[i] for i in rng.permutation(len(pool))]  # no hint of the source in the order
        pool_file[query] = {"cands": pool, "cand_source": [[f"synthetic_{sources[p]}"] for p in pool]}
        for facet in facets_of[query]:
            grades = [facet_grade(corpus, query, c, facet) for c in pool]
            for g in grades:
                grade_counts[facet][g] += 1
            anns[facet][query] = {key: grades for key in ("relevance_adju", "relevance_max", "relevance_min",
                                                          "relevance_ann1", "relevance_ann2")}
            anns[facet][query] = {"cands": pool, **anns[facet][query]}

    for facet in FACETS:
        (out_dir / f"test-pid2anns-csfcube-{facet}.json").write_text(json.dumps(anns[facet]), encoding="utf-8")
    (out_dir / "test-pid2pool-csfcube.json").write_text(json.dumps(pool_file), encoding="utf-8")

    splits: dict[str, dict[str, list[str]]] = {"all": {f: [] for f in ("fold1_dev", "fold2_dev", "fold1_test",
                                                                        "fold2_test")}}
    for facet in FACETS:
        keys = [f"{q}_{facet}" for q in anns[facet]]
        half = (len(keys) + 1) // 2
        first, second = keys[:half], keys[half:]
        splits[facet] = {"fold1_dev": first, "fold2_dev": second, "fold1_test": second, "fold2_test": first}
        for fold, members in splits[facet].items():
            splits["all"][fold] += members
    (out_dir / "evaluation_splits.json").write_text(json.dumps(splits, indent=1), encoding="utf-8")

    with (out_dir / "queries-release.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["pid", "facet", "year", "title", "paper type"])
        for facet in FACETS:
            for query in anns[facet]:
                writer.writerow([query, facet, papers[query].year, papers[query].title, "synthetic"])

    needed = sorted(set(queries) | {c for entry in pool_file.values() for c in entry["cands"]})
    with (out_dir / "abstracts-csfcube-preds.jsonl").open("w", encoding="utf-8") as handle:
        for pid in needed:
            paper = papers[pid]
            labels = [f"{label}_label" for label in paper.metadata["abstract_labels"]]
            handle.write(json.dumps({
                "paper_id": pid, "metadata": {"year": paper.year}, "title": paper.title,
                "abstract": list(paper.metadata["abstract_sentences"]), "pred_labels": labels,
                "pred_labels_truncated": labels,
            }) + "\n")
    if readable:
        _write_readable(out_dir / "readable_annotations", corpus, anns)

    stats = {
        "query_papers": len(queries),
        "query_facet_pairs": sum(len(anns[f]) for f in FACETS),
        "papers": len(needed),
        "pool_size": pool_size,
        "grades": {facet: dict(zip(("0", "1", "2", "3"), counts)) for facet, counts in grade_counts.items()},
    }
    (out_dir / "replica_stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    relevant = {f: c[2] + c[3] for f, c in grade_counts.items()}
    print(f"CSFCube replica in {out_dir}: {stats['query_facet_pairs']} query-facet pairs over "
          f"{len(queries)} papers, {len(needed)} papers, relevant (grade>=2) per facet {relevant}")
    return out_dir


_GRADE_NAMES = {3: "Identical (+3)", 2: "Similar (+2)", 1: "Related (+1)", 0: "Irrelevant (0)"}


def _paper_block(paper) -> list[str]:
    sentences = paper.metadata["abstract_sentences"]
    labels = paper.metadata["abstract_labels"]
    lines = [f"TITLE: {paper.title}"]
    for index, (label, sentence) in enumerate(zip(labels, sentences)):
        prefix = "ABSTRACT: " if index == 0 else ""
        lines.append(f"{prefix}{label}_label: {sentence}")
    return lines


def _write_readable(folder: Path, corpus, anns: dict) -> None:
    """The human-readable files: query block, then candidates sorted by grade (as the originals)."""
    folder.mkdir(parents=True, exist_ok=True)
    papers = corpus.papers
    for facet, queries in anns.items():
        for query, record in queries.items():
            lines = ["=" * 70, f"paper_id: {query}; YEAR: {papers[query].year}", *_paper_block(papers[query])]
            ranked = sorted(zip(record["cands"], record["relevance_adju"]), key=lambda pair: -pair[1])
            for cand, grade in ranked:
                lines += ["=" * 35, f"paper_id: {cand}; YEAR: {papers[cand].year}",
                          f"adju relevance: {_GRADE_NAMES[grade]}",
                          f"difference: 0; annotator1: {grade}; annotator2: {grade}",
                          "sources: synthetic", *_paper_block(papers[cand]), ""]
            (folder / f"{query}-{facet}-adju.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
