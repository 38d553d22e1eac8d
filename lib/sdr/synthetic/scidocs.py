"""A SciDocs replica written from a synthetic corpus, in the official file layout.

Layout and formats follow ``allenai/scidocs`` (``scidocs/paths.py`` and the readers of
``classification.py``, ``user_activity_and_citations.py``, ``recomm_click_eval.py`` and
``recommender/simclick_data_reader.py``)::

    paper_metadata_mag_mesh.json        {pid: {"paper_id", "title", "abstract"}}
    paper_metadata_view_cite_read.json  {pid: {"paper_id", "title", "abstract"}}
    paper_metadata_recomm.json          {pid: {"paper_id", "title", "abstract", "authors",
                                               "references", "cited_by", "year", "venue"}}
    mag/{train,val,test}.csv            header "pid,class_label", integer class per paper
    mesh/{train,val,test}.csv
    {cite,cocite,coview,coread}/{val,test}.qrel   "qid 0 pid rel", 5 positives + 25 negatives
    recomm/{train,val,test}.csv         header, then query_id,clicked_id,"shown_id_1,…,shown_id_k"
    recomm/propensity_scores.json       {"scores": [click propensity of positions 1…k]}

How each task is built from the corpus (the real SciDocs uses the same relations on S2 data):
MAG = the paper's sub-field (its community; ``mag_level="field"`` gives the field); MeSH = ``metadata["mesh"]``; cite = papers the query cites; co-cite =
papers cited together with the query by a third paper (most co-citations first); co-view /
co-read = the corpus' user-activity pairs (most frequent first).  Negatives are random papers
without that relation to the query, as in SciDocs.  Recommendations: a "production" list of
related papers in a noisy order is shown, and one click is drawn with probability proportional to
the position's propensity times a hidden relevance (community, citation link, co-view), so
position bias is present, as in the logged clicks SciDocs uses.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from sdr.datasets import forbid_replica

QREL_FOLDERS = ("cite", "cocite", "coview", "coread")
DEFAULT_PROPENSITY = tuple(round(1.0 / (position ** 0.8), 6) for position in range(1, 11))
"""Click propensity by position: a power-law decay, the usual shape of position bias."""
CLICK_SHARPNESS = 2.0
"""Clicks follow propensity × exp(sharpness × hidden relevance): users mostly click the best match."""


def write_scidocs(
    corpus,
    out_dir: str | Path,
    seed: int = 0,
    n_queries: int = 100,
    include_recomm: bool = True,
    n_positives: int = 5,
    n_negatives: int = 25,
    classification_split: tuple[float, float, float] = (0.6, 0.2, 0.2),
    n_shown: int = 10,
    recomm_split: tuple[float, float, float] = (0.6, 0.15, 0.25),
    mag_level: str = "subfield",
    progress: bool = True,
) -> Path:
    """Write a SciDocs replica of ``corpus`` (a :class:`sdr.synthetic.SyntheticCorpus`) into ``out_dir``.

    ``n_queries`` is the number of queries per proximity task and split (val, test); fewer are
    written when fewer papers have ``n_positives`` related papers, and the shortfall is counted.
    The counts of everything written and skipped are printed in one line and saved in
    ``out_dir/replica_stats.json``.  Returns ``out_dir``.

    ``mag_level``: the MAG classes. SciDocs uses MAG's 19 top-level fields. The synthetic corpus has 6
    fields, each with its own vocabulary, so any encoder separates them and macro F1 sat at 100 for
    untrained and trained encoders alike. ``"subfield"`` (the default) labels each paper with its community
    (18 at the default corpus settings), which share their field's vocabulary and differ by topic, so F1
    depends on the encoder (measured 85-92 for MiniLM cut to 1, 2 and 6 layers, 300 papers);
    ``"field"`` keeps the 6 fields.
    """
    forbid_replica("sdr.synthetic.write_scidocs")
    if mag_level not in ("field", "subfield"):
        raise ValueError(f"mag_level={mag_level!r}: expected 'field' or 'subfield'")
    from tqdm.auto import tqdm

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    papers = corpus.papers
    paper_ids = sorted(papers)
    stats: dict = {"papers": len(paper_ids)}
    steps = ["mag", "mesh", *QREL_FOLDERS] + (["recomm"] if include_recomm else [])
    progress_bar = tqdm(steps, desc="SciDocs replica", disable=not progress)

    # --- MAG and MeSH: one integer class per paper, split train/val/test.
    classified: set[str] = set()
    if mag_level == "field":
        field_index = {name: i for i, name in enumerate(corpus.fields)}
        mag_labels = {pid: field_index[papers[pid].fields[0]] for pid in paper_ids
                      if papers[pid].fields and papers[pid].fields[0] in field_index}
    else:
        community_of = {pid: papers[pid].metadata.get("community") for pid in paper_ids}
        community_index = {name: i for i, name in enumerate(sorted({c for c in community_of.values() if c}))}
        mag_labels = {pid: community_index[c] for pid, c in community_of.items() if c}
    stats["mag"] = _write_classification(out_dir / "mag", mag_labels, classification_split, rng)
    stats["mag"]["papers_without_field"] = len(paper_ids) - len(mag_labels)
    stats["mag"]["level"] = mag_level
    classified |= set(mag_labels)
    progress_bar.update()

    mesh_of = {pid: papers[pid].metadata.get("mesh") for pid in paper_ids}
    mesh_names = sorted({label for label in mesh_of.values() if label})
    mesh_index = {name: i for i, name in enumerate(mesh_names)}
    mesh_labels = {pid: mesh_index[label] for pid, label in mesh_of.items() if label}
    stats["mesh"] = _write_classification(out_dir / "mesh", mesh_labels, classification_split, rng)
    stats["mesh"]["papers_without_mesh"] = len(paper_ids) - len(mesh_labels)
    classified |= set(mesh_labels)
    progress_bar.update()
    _write_metadata(out_dir / "paper_metadata_mag_mesh.json", papers, sorted(classified))

    # --- cite, co-cite, co-view, co-read: 5 positives + 25 random negatives per query.
    relations = {
        "cite": _cite_relation(corpus.graph, paper_ids),
        "cocite": _cocite_relation(corpus.graph, paper_ids),
        "coview": _pair_relation(getattr(corpus, "coviews", ())),
        "coread": _pair_relation(getattr(corpus, "coreads", ())),
    }
    proximity_ids: set[str] = set()
    for folder in QREL_FOLDERS:
        stats[folder], used = _write_qrels(
            out_dir / folder, relations[folder], paper_ids, n_queries, n_positives, n_negatives, rng
        )
        proximity_ids |= used
        progress_bar.update()
    _write_metadata(out_dir / "paper_metadata_view_cite_read.json", papers, sorted(proximity_ids))

    if include_recomm:
        stats["recomm"] = _write_recomm(out_dir, corpus, paper_ids, relations, n_shown, recomm_split, rng)
        progress_bar.update()
    progress_bar.close()

    (out_dir / "replica_stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    summary = "; ".join(f"{task} {_count(stats[task])}" for task in steps)
    print(f"SciDocs replica in {out_dir}: {summary} "
          f"(skipped: {_skipped_total(stats)}; details in replica_stats.json)")
    return out_dir


# ------------------------------------------------------------------------------ classification


def _write_classification(folder: Path, labels: dict[str, int], split: tuple[float, float, float],
                          rng: np.random.Generator) -> dict:
    """Stratified train/val/test split (each class split in the given proportions, so the
    3-fold grid search of the evaluator sees every class in training when it has ≥ 3 papers)."""
    folder.mkdir(parents=True, exist_ok=True)
    by_class: dict[int, list[str]] = defaultdict(list)
    for pid in sorted(labels):
        by_class[labels[pid]].append(pid)
    parts: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    for label in sorted(by_class):
        ids = by_class[label]
        rng.shuffle(ids)
        n_test = int(round(split[2] * len(ids)))
        n_val = int(round(split[1] * len(ids)))
        n_train = len(ids) - n_test - n_val
        if n_train < min(3, len(ids)):  # small class: training examples first
            n_train = min(3, len(ids))
            n_val = min(n_val, len(ids) - n_train)
            n_test = len(ids) - n_train - n_val
        parts["train"] += ids[:n_train]
        parts["val"] += ids[n_train:n_train + n_val]
        parts["test"] += ids[n_train + n_val:]
    for name, part in parts.items():
        part.sort()
        with (folder / f"{name}.csv").open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["pid", "class_label"])
            for pid in part:
                writer.writerow([pid, labels[pid]])
    return {"rows": len(labels), "classes": len(by_class), **{name: len(part) for name, part in parts.items()}}


def _write_metadata(path: Path, papers: dict, ids: list[str]) -> None:
    records = {pid: {"paper_id": pid, "title": papers[pid].title, "abstract": papers[pid].abstract}
               for pid in ids}
    path.write_text(json.dumps(records), encoding="utf-8")


# ----------------------------------------------------------------------------------- proximity


def _cite_relation(graph, paper_ids: list[str]) -> dict[str, Counter]:
    """Query → papers it cites (each with weight 1)."""
    return {pid: Counter({cited: 1 for cited in graph.references(pid) if cited != pid}) for pid in paper_ids}


def _cocite_relation(graph, paper_ids: list[str]) -> dict[str, Counter]:
    """Query → papers cited together with it, weighted by the number of co-citing papers."""
    relation: dict[str, Counter] = defaultdict(Counter)
    for citing in sorted(graph.nodes):
        cited = sorted(graph.references(citing) - {citing})
        for i, a in enumerate(cited):
            for b in cited[i + 1:]:
                relation[a][b] += 1
                relation[b][a] += 1
    return {pid: relation.get(pid, Counter()) for pid in paper_ids}


def _pair_relation(pairs) -> dict[str, Counter]:
    """Undirected user-activity pairs → paper → partners weighted by how often the pair occurs."""
    relation: dict[str, Counter] = defaultdict(Counter)
    for a, b in pairs:
        if a != b:
            relation[a][b] += 1
            relation[b][a] += 1
    return relation


def _write_qrels(folder: Path, relation: dict[str, Counter], paper_ids: list[str], n_queries: int,
                 n_positives: int, n_negatives: int, rng: np.random.Generator) -> tuple[dict, set[str]]:
    folder.mkdir(parents=True, exist_ok=True)
    all_ids = np.array(paper_ids)
    eligible = [pid for pid in paper_ids if len(relation.get(pid, ())) >= n_positives]
    order = rng.permutation(len(eligible))
    eligible = [eligible[i] for i in order]
    # The test split is filled first, so a small corpus still yields a full test set.
    splits = {"test": eligible[:n_queries], "val": eligible[n_queries:2 * n_queries]}
    used: set[str] = set()
    negatives_short = 0
    for split, queries in splits.items():
        with (folder / f"{split}.qrel").open("w", encoding="utf-8") as handle:
            for query in queries:
                partners = relation[query]
                # Strongest relations first; ties in a seeded random order.
                tie_break = {pid: rng.random() for pid in sorted(partners)}
                positives = sorted(partners, key=lambda pid: (-partners[pid], tie_break[pid]))[:n_positives]
                excluded = set(partners) | {query}
                pool = all_ids[[pid not in excluded for pid in paper_ids]]
                count = min(n_negatives, len(pool))
                negatives_short += n_negatives - count
                negatives = rng.choice(pool, size=count, replace=False).tolist() if count else []
                for pid in positives:
                    handle.write(f"{query} 0 {pid} 1\n")
                for pid in negatives:
                    handle.write(f"{query} 0 {pid} 0\n")
                used.update([query, *positives, *negatives])
    stats = {
        "queries": {split: len(queries) for split, queries in splits.items()},
        "eligible_queries": len(eligible),
        "queries_short": max(0, 2 * n_queries - len(eligible)),
        "negatives_short": negatives_short,
    }
    return stats, used


# ------------------------------------------------------------------------------ recommendations


def _write_recomm(out_dir: Path, corpus, paper_ids: list[str], relations: dict[str, Counter],
                  n_shown: int, split: tuple[float, float, float], rng: np.random.Generator) -> dict:
    """Logged clicks on a production list of ``n_shown`` similar papers, with position bias."""
    folder = out_dir / "recomm"
    folder.mkdir(parents=True, exist_ok=True)
    papers, graph = corpus.papers, corpus.graph
    propensity = np.array(DEFAULT_PROPENSITY[:n_shown] if n_shown <= len(DEFAULT_PROPENSITY)
                          else [1.0 / (p ** 0.8) for p in range(1, n_shown + 1)])
    by_community: dict[str, list[str]] = defaultdict(list)
    by_field: dict[str, list[str]] = defaultdict(list)
    for pid in paper_ids:
        by_community[str(papers[pid].metadata.get("community"))].append(pid)
        by_field[papers[pid].fields[0] if papers[pid].fields else ""].append(pid)

    def relevance(query: str, candidate: str) -> float:
        """Hidden relevance behind the clicks: topic, citation and co-view links, shared authors,
        popularity and recency — the signals the official ranker's features and embeddings carry."""
        q, c = papers[query], papers[candidate]
        score = 0.0
        if q.metadata.get("community") is not None and q.metadata.get("community") == c.metadata.get("community"):
            score += 2.0
        if q.fields[:1] == c.fields[:1]:
            score += 0.5
        if candidate in graph.neighbours(query):
            score += 1.5
        score += 0.5 * min(2, relations["coview"].get(query, Counter()).get(candidate, 0))
        if set(q.authors) & set(c.authors):
            score += 1.0
        score += 0.5 * math.log1p(len(graph.citations(candidate)))
        if q.year is not None and c.year is not None:
            score -= 0.05 * abs(q.year - c.year)
        return score

    rows = []
    skipped = 0
    for query in paper_ids:
        paper = papers[query]
        related = set(graph.neighbours(query)) | set(relations["coview"].get(query, ()))
        if paper.metadata.get("community") is not None:
            related |= set(by_community[str(paper.metadata["community"])])
        related.discard(query)
        field_pool = [pid for pid in by_field[paper.fields[0] if paper.fields else ""] if pid != query]
        if len(set(related) | set(field_pool)) < n_shown:
            skipped += 1
            continue
        # Half related papers, half weaker same-field suggestions: the list mixes good and poor hits.
        related_list = sorted(related)
        take = min(len(related_list), n_shown // 2)
        shown = [str(pid) for pid in rng.choice(related_list, size=take, replace=False)] if take else []
        for pool in (field_pool, paper_ids):
            already = set(shown)
            remaining = [pid for pid in pool if pid != query and pid not in already]
            need = n_shown - len(shown)
            if need > 0 and remaining:
                shown += [str(pid) for pid in rng.choice(remaining, size=min(need, len(remaining)),
                                                         replace=False)]
        # The production order: relevance plus noise, so the logged list is informative but imperfect.
        hidden = np.array([relevance(query, pid) for pid in shown])
        order = np.argsort(-(hidden + rng.normal(0.0, 1.0, size=len(shown))), kind="stable")
        shown = [str(shown[i]) for i in order]
        hidden = hidden[order]
        click_weights = propensity[: len(shown)] * np.exp(CLICK_SHARPNESS * (hidden - hidden.max()))
        clicked = shown[int(rng.choice(len(shown), p=click_weights / click_weights.sum()))]
        rows.append((query, clicked, shown))

    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    n_train = int(round(split[0] * len(rows)))
    n_val = int(round(split[1] * len(rows)))
    parts = {"train": rows[:n_train], "val": rows[n_train:n_train + n_val], "test": rows[n_train + n_val:]}
    used: set[str] = set()
    for name, part in parts.items():
        with (folder / f"{name}.csv").open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["query_id", "clicked_id", "result_ids"])
            for query, clicked, shown in part:
                writer.writerow([query, clicked, ",".join(shown)])
                used.update([query, *shown])
    (folder / "propensity_scores.json").write_text(
        json.dumps({"scores": [float(x) for x in propensity]}) + "\n", encoding="utf-8"
    )
    metadata = {}
    for pid in sorted(used):
        paper = papers[pid]
        metadata[pid] = {
            "paper_id": pid,
            "title": paper.title,
            "abstract": paper.abstract,
            "authors": list(paper.authors),
            "references": sorted(graph.references(pid)),
            "cited_by": sorted(graph.citations(pid)),
            "year": paper.year,
            "venue": paper.venue,
        }
    (out_dir / "paper_metadata_recomm.json").write_text(json.dumps(metadata), encoding="utf-8")
    return {"queries": {name: len(part) for name, part in parts.items()}, "skipped_queries": skipped,
            "positions": len(propensity)}


def _count(task_stats: dict) -> str:
    if "queries" in task_stats:
        return "/".join(f"{split} {n}" for split, n in task_stats["queries"].items()) + " queries"
    return f"{task_stats['rows']} papers"


def _skipped_total(stats: dict) -> int:
    total = 0
    for task in stats.values():
        if isinstance(task, dict):
            total += sum(v for k, v in task.items() if (k.startswith("skipped") or k.endswith("_short"))
                         and isinstance(v, int))
    return total
