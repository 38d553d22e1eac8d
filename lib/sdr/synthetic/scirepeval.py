"""A SciRepEval replica written from a synthetic corpus: a few tasks of each format, with a
registry in the official schema and the data as the Hugging Face exports (JSONL).

Layout (read by :mod:`sdr.evaluate.scirepeval`)::

    scirepeval_tasks.jsonl                       one task per line, official keys (name, type,
                                                 data.meta/test[/reviewers], metrics, few_shot,
                                                 multi_label) plus "synthetic": how it was built
    scirepeval/<config>/evaluation.jsonl         what to embed: {"doc_id","title","abstract",…}, or
                                                 for search {"doc_id","query","candidates":[…]}
    scirepeval_test/<config>/{train,test}.jsonl  classification/regression {"paper_id","label"}
    scirepeval_test/<config>/test.jsonl          ranking qrels {"query_id","cand_id","score"}
    scirepeval_test/reviewers/metadata.jsonl     {"r_id","papers"}

Tasks carry the official names of the real tasks they stand in for, so the In-Train /
Out-of-Train / SciDocs aggregates are computed the same way; each registry line's ``synthetic``
field says what the labels are here.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from sdr.synthetic.scidocs import _cite_relation, _cocite_relation, _pair_relation
from sdr.datasets import forbid_replica


def write_scirepeval(
    corpus,
    out_dir: str | Path,
    seed: int = 0,
    test_fraction: float = 0.3,
    n_queries: int = 30,
    n_candidates: int = 20,
    include_scidocs: bool = True,
    progress: bool = True,
) -> Path:
    """Write the replica into ``out_dir`` and return it; task sizes are printed and saved in
    ``scirepeval_stats.json`` (queries short of ``n_queries`` are counted there)."""
    forbid_replica("sdr.synthetic.write_scirepeval")
    from tqdm.auto import tqdm

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    writer = _Writer(out_dir, corpus)
    papers = corpus.papers
    ids = sorted(papers)
    builders = [
        _fos, _mesh, _biomimicry, _citation_count, _publication_year, _same_author, _influential,
        _search, _reviewers,
    ] + ([_scidocs] if include_scidocs else [])
    for build in tqdm(builders, desc="SciRepEval replica", disable=not progress):
        build(writer, corpus, ids, rng, test_fraction, n_queries, n_candidates)
    writer.finish()
    summary = "; ".join(f"{name} {size}" for name, size in writer.stats["tasks"].items())
    left_out = writer.stats.get("tasks_without_queries", [])
    print(f"SciRepEval replica in {out_dir}: {len(writer.registry)} tasks ({summary}); "
          f"queries short: {writer.stats['queries_short']}"
          + (f"; left out for lack of queries: {', '.join(left_out)}" if left_out else ""))
    return out_dir


class _Writer:
    def __init__(self, out_dir: Path, corpus):
        self.out_dir, self.corpus = out_dir, corpus
        self.registry: list[dict] = []
        self.stats: dict = {"tasks": {}, "queries_short": 0}

    def _jsonl(self, path: Path, rows) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")

    def doc(self, pid: str) -> dict:
        paper = self.corpus.papers[pid]
        return {"doc_id": pid, "title": paper.title, "abstract": paper.abstract, "venue": paper.venue,
                "year": paper.year}

    def metadata(self, config: str, ids) -> None:
        self._jsonl(self.out_dir / "scirepeval" / config / "evaluation.jsonl", [self.doc(p) for p in sorted(ids)])

    def supervised(self, name: str, task_type: str, config: str, labels: dict, metrics: list[str],
                   test_fraction: float, rng, meta_config: str | None = None, stratify: bool = False,
                   description: str = "", **extra) -> None:
        ids = sorted(labels)
        if stratify:
            by_label: dict = defaultdict(list)
            for pid in ids:
                by_label[json.dumps(labels[pid])].append(pid)
            train, test = [], []
            for key in sorted(by_label):
                members = by_label[key]
                rng.shuffle(members)
                n_test = int(round(test_fraction * len(members)))
                test += members[:n_test]
                train += members[n_test:]
        else:
            rng.shuffle(ids)
            n_test = int(round(test_fraction * len(ids)))
            test, train = ids[:n_test], ids[n_test:]
        folder = self.out_dir / "scirepeval_test" / config
        for split, part in (("train", sorted(train)), ("test", sorted(test))):
            self._jsonl(folder / f"{split}.jsonl", [{"paper_id": pid, "label": labels[pid]} for pid in part])
        meta_config = meta_config or config
        if not (self.out_dir / "scirepeval" / meta_config / "evaluation.jsonl").exists():
            self.metadata(meta_config, labels)
        self.register(name, task_type, meta_config, config, metrics, description, **extra)
        self.stats["tasks"][name] = f"{len(train)}/{len(test)} papers"

    def ranking(self, name: str, task_type: str, config: str, qrels: dict, metrics: list[str],
                n_queries: int, description: str, meta_config: str | None = None, queries_text: dict | None = None,
                **extra) -> None:
        self.stats["queries_short"] += max(0, n_queries - len(qrels))
        if not qrels:  # nothing to rank: the task is left out of the registry, and said so
            self.stats.setdefault("tasks_without_queries", []).append(name)
            return
        rows = [{"query_id": q, "cand_id": c, "score": s} for q in sorted(qrels) for c, s in qrels[q].items()]
        self._jsonl(self.out_dir / "scirepeval_test" / config / "test.jsonl", rows)
        meta_config = meta_config or config
        meta_path = self.out_dir / "scirepeval" / meta_config / "evaluation.jsonl"
        if queries_text is not None:  # IRDataset format: a text query and its candidate documents
            self._jsonl(meta_path, [{"doc_id": q, "query": queries_text[q],
                                     "candidates": [self.doc(c) for c in sorted(qrels[q])]} for q in sorted(qrels)])
        elif not meta_path.exists():
            ids = set(qrels) | {c for cands in qrels.values() for c in cands}
            self.metadata(meta_config, ids & set(self.corpus.papers))
        self.register(name, task_type, meta_config, config, metrics, description, **extra)
        self.stats["tasks"][name] = f"{len(qrels)} queries"

    def register(self, name, task_type, meta_config, test_config, metrics, description, **extra) -> None:
        record = {"name": name, "type": task_type,
                  "data": {"meta": {"name": "allenai/scirepeval", "config": meta_config},
                           "test": {"name": "allenai/scirepeval_test", "config": test_config}},
                  "metrics": metrics}
        for key in ("reviewers", "simple_format"):
            if key in extra:
                record["data"][key] = extra.pop(key)
        record.update(extra)
        record["synthetic"] = description
        self.registry.append(record)

    def finish(self) -> None:
        with (self.out_dir / "scirepeval_tasks.jsonl").open("w", encoding="utf-8") as handle:
            for record in self.registry:
                handle.write(json.dumps(record) + "\n")
        (self.out_dir / "scirepeval_stats.json").write_text(json.dumps(self.stats, indent=2) + "\n",
                                                            encoding="utf-8")


# --------------------------------------------------------------------------------- the tasks


def _field(paper) -> str | None:
    return paper.fields[0] if paper.fields else None


def _fos(w: _Writer, corpus, ids, rng, test_fraction, n_queries, n_candidates) -> None:
    fields = list(corpus.fields)
    index = {name: i for i, name in enumerate(fields)}
    labels = {}
    for pid in ids:
        own = _field(corpus.papers[pid])
        if own not in index:
            continue
        cited_fields = Counter(_field(corpus.papers[c]) for c in corpus.graph.references(pid) if c in corpus.papers)
        vector = [0] * len(fields)
        vector[index[own]] = 1
        for name, count in cited_fields.items():
            if name in index and count >= 2:
                vector[index[name]] = 1
        labels[pid] = vector
    w.supervised("Fields of study", "classification", "fos", labels, ["f1_macro"], test_fraction, rng,
                 description="multi-hot: the paper's field plus every field it cites at least twice",
                 few_shot=[{"sample_size": 5, "iterations": 3}], multi_label=True)


def _mesh(w, corpus, ids, rng, test_fraction, n_queries, n_candidates) -> None:
    labels = {pid: corpus.papers[pid].metadata["mesh"] for pid in ids if corpus.papers[pid].metadata.get("mesh")}
    w.supervised("MeSH", "classification", "mesh_descriptors", labels, ["f1_macro"], test_fraction, rng,
                 stratify=True, description="the corpus' MeSH-like label (biomedical fields only)")


def _biomimicry(w, corpus, ids, rng, test_fraction, n_queries, n_candidates) -> None:
    target = corpus.fields[0]
    labels = {pid: int(_field(corpus.papers[pid]) == target) for pid in ids}
    w.supervised("Biomimicry", "classification", "biomimicry", labels, ["f1"], test_fraction, rng, stratify=True,
                 description=f"binary: is the paper in the field {target!r}",
                 few_shot=[{"sample_size": 16, "iterations": 5}])


def _citation_count(w, corpus, ids, rng, test_fraction, n_queries, n_candidates) -> None:
    labels = {pid: len(corpus.graph.citations(pid) - {pid}) for pid in ids}
    w.supervised("Citation Count", "regression", "cite_count", labels, ["kendalltau"], test_fraction, rng,
                 description="number of in-corpus citations")


def _publication_year(w, corpus, ids, rng, test_fraction, n_queries, n_candidates) -> None:
    labels = {pid: corpus.papers[pid].year for pid in ids if corpus.papers[pid].year is not None}
    w.supervised("Publication Year", "regression", "pub_year", labels, ["kendalltau"], test_fraction, rng,
                 description="publication year")


def _same_author(w, corpus, ids, rng, test_fraction, n_queries, n_candidates) -> None:
    by_author: dict[str, list[str]] = defaultdict(list)
    for pid in ids:
        for author in corpus.papers[pid].authors:
            by_author[author].append(pid)
    eligible = [pid for pid in ids if corpus.papers[pid].authors
                and len(by_author[corpus.papers[pid].authors[0]]) >= 3]
    qrels = {}
    for query in _take(eligible, n_queries, rng):
        author = corpus.papers[query].authors[0]
        positives = [p for p in by_author[author] if p != query][:5]
        field = _field(corpus.papers[query])
        pool = [p for p in ids if p != query and author not in corpus.papers[p].authors
                and _field(corpus.papers[p]) == field]
        negatives = _sample(pool, n_candidates - len(positives), rng)
        qrels[query] = {**{p: 1 for p in positives}, **{p: 0 for p in negatives}}
    w.ranking("Same Author Detection", "proximity", "same_author", qrels, ["map"], n_queries,
              "candidates of the query's field; relevant = shares the query's first author")


def _influential(w, corpus, ids, rng, test_fraction, n_queries, n_candidates) -> None:
    qrels = {}
    eligible = []
    for pid in ids:
        labels = {}
        for citation_target in sorted(corpus.graph.references(pid) - {pid}):
            edge = corpus.graph.edge(pid, citation_target)
            contexts = sum(count for _, count in edge.context_counts) if edge else 0
            labels[citation_target] = int(contexts >= 3)
        if 0 < sum(labels.values()) < len(labels):
            eligible.append((pid, labels))
    for index in _take(list(range(len(eligible))), n_queries, rng):
        query, labels = eligible[index]
        qrels[query] = labels
    w.ranking("Highly Influential Citations", "proximity", "high_influence_cite", qrels, ["map"], n_queries,
              "candidates = the query's references; relevant = cited in at least 3 contexts")


def _search(w, corpus, ids, rng, test_fraction, n_queries, n_candidates) -> None:
    qrels, texts = {}, {}
    for number, seed_paper in enumerate(_take(ids, n_queries, rng)):
        paper = corpus.papers[seed_paper]
        query_id = f"search-q{number:04d}"
        texts[query_id] = paper.title  # a title-like text query about the seed paper's topic
        community, field = paper.metadata.get("community"), _field(paper)
        same = [p for p in ids if p != seed_paper and corpus.papers[p].metadata.get("community") == community]
        near = [p for p in ids if _field(corpus.papers[p]) == field and p not in same and p != seed_paper]
        far = [p for p in ids if _field(corpus.papers[p]) != field]
        chosen = _sample(same, n_candidates // 4, rng) + _sample(near, n_candidates // 4, rng)
        chosen += _sample(far, n_candidates - len(chosen), rng)
        qrels[query_id] = {p: 2 if p in set(same) else 1 if p in set(near) else 0 for p in chosen}
    w.ranking("Search", "adhoc_search", "search", qrels, ["ndcg"], n_queries,
              "query = a paper's title; graded 2 same community, 1 same field, 0 other",
              queries_text=texts, fields=["title", "abstract", "venue", "year"])


def _reviewers(w, corpus, ids, rng, test_fraction, n_queries, n_candidates) -> None:
    by_author: dict[str, list[str]] = defaultdict(list)
    for pid in ids:
        for author in corpus.papers[pid].authors:
            by_author[author].append(pid)
    reviewers = sorted(a for a, papers in by_author.items() if len(papers) >= 2)
    reviewer_ids = {a: f"r{i:04d}" for i, a in enumerate(reviewers)}
    qrels = {}
    for query in _take(ids, n_queries, rng):
        community = corpus.papers[query].metadata.get("community")
        candidates = [a for a in reviewers if query not in by_author[a]]
        row = {}
        for author in _sample(candidates, n_candidates, rng):
            own = [p for p in by_author[author] if corpus.papers[p].metadata.get("community") == community]
            row[reviewer_ids[author]] = 2 if len(own) >= 2 else 1 if own else 0
        qrels[query] = row
    w._jsonl(w.out_dir / "scirepeval_test" / "reviewers" / "metadata.jsonl",
             [{"r_id": reviewer_ids[a], "papers": sorted(by_author[a])} for a in reviewers])
    papers_to_embed = set(qrels) | {p for a in reviewers for p in by_author[a]}
    w.metadata("paper_reviewer_matching", papers_to_embed)
    w.ranking("Paper-Reviewer Matching", "proximity", "paper_reviewer_matching", qrels, ["P_5", "P_10"],
              n_queries, "reviewers = authors with ≥ 2 papers; graded by their papers in the query's community",
              reviewers={"name": "allenai/scirepeval_test", "config": "reviewers"})


def _scidocs(w, corpus, ids, rng, test_fraction, n_queries, n_candidates) -> None:
    field_index = {name: i for i, name in enumerate(corpus.fields)}
    mag = {pid: field_index[_field(corpus.papers[pid])] for pid in ids if _field(corpus.papers[pid]) in field_index}
    mesh_names = sorted({p.metadata["mesh"] for p in corpus.papers.values() if p.metadata.get("mesh")})
    mesh = {pid: mesh_names.index(corpus.papers[pid].metadata["mesh"]) for pid in ids
            if corpus.papers[pid].metadata.get("mesh")}
    w.metadata("scidocs_mag_mesh", set(mag) | set(mesh))
    w.supervised("SciDocs MAG", "classification", "scidocs_mag", mag, ["f1_macro"], test_fraction, rng,
                 meta_config="scidocs_mag_mesh", stratify=True, description="the paper's field index")
    w.supervised("SciDocs MeSH", "classification", "scidocs_mesh", mesh, ["f1_macro"], test_fraction, rng,
                 meta_config="scidocs_mag_mesh", stratify=True, description="the MeSH-like label index")
    relations = {"scidocs_cite": _cite_relation(corpus.graph, ids), "scidocs_cocite": _cocite_relation(corpus.graph, ids),
                 "scidocs_view": _pair_relation(getattr(corpus, "coviews", ())),
                 "scidocs_read": _pair_relation(getattr(corpus, "coreads", ()))}
    names = {"scidocs_cite": "SciDocs Cite", "scidocs_view": "SciDocs CoView", "scidocs_cocite": "SciDocs CoCite",
             "scidocs_read": "SciDocs CoRead"}
    all_qrels = {}
    for config, relation in relations.items():
        eligible = [pid for pid in ids if len(relation.get(pid, ())) >= 5]
        qrels = {}
        for query in _take(eligible, n_queries, rng):
            partners = relation[query]
            positives = sorted(partners, key=lambda p: (-partners[p], p))[:5]
            pool = [p for p in ids if p not in partners and p != query]
            qrels[query] = {**{p: 1 for p in positives}, **{p: 0 for p in _sample(pool, 25, rng)}}
        all_qrels[config] = qrels
    ids_to_embed = {pid for qrels in all_qrels.values() for q, c in qrels.items() for pid in (q, *c)}
    w.metadata("scidocs_view_cite_read", ids_to_embed)
    for config in ("scidocs_cite", "scidocs_view", "scidocs_cocite", "scidocs_read"):
        w.ranking(names[config], "proximity", config, all_qrels[config], ["map", "ndcg"], n_queries,
                  "SciDocs-style: 5 related papers + 25 random", meta_config="scidocs_view_cite_read",
                  simple_format=True)


def _take(items: list, n: int, rng: np.random.Generator) -> list:
    order = rng.permutation(len(items))
    return [items[i] for i in order[:n]]


def _sample(pool: list, size: int, rng: np.random.Generator) -> list:
    size = min(size, len(pool))
    if size <= 0:
        return []
    return [str(x) for x in rng.choice(pool, size=size, replace=False)]
