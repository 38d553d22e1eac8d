"""CSFCube faceted query-by-example: the official ``eval_scripts/ranking_eval.py`` re-implemented.

Semantics matched line by line (iesl/CSFCube, ``eval_scripts/ranking_eval.py`` + ``rank_metrics.py``):

* gold: ``test-pid2anns-csfcube-<facet>.json``, graded ``relevance_adju`` 0–3; binary relevance is
  grade ≥ 2;
* a ranked pool ``{query_pid: [[cand_pid, score], ...]}`` is read in file order; only its candidates
  count (the recall denominator is the relevant candidates *in the ranked list*);
* per query: ``rp`` = precision up to the rank of the last relevant item, ``p@20``, ``r@20``,
  ``ndcg`` over the full list, ``ndcg@20``, ``ndcg%20`` = NDCG at int(0.2 × list length) — all NDCGs
  graded with the first two ranks undiscounted — ``map`` (average precision) and ``mrr``;
* ``dev`` = the mean over ``fold1_dev``; ``test`` = the mean of the ``fold1_test`` and ``fold2_test``
  means; ``all`` pools the queries of the three facets (keys ``<pid>_<facet>``).

From embeddings, each query's judged pool (minus the query paper itself, as in the official ranked
pools) is sorted by ascending L2 distance; an embedding keyed ``<pid>_<facet>`` overrides the query
paper's own for that facet.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from sdr.jsonio import InputError, is_number, iter_lines, load_json, read_jsonl, record_id
from sdr.corpus import Paper
from sdr.evaluate.embeddings import MissingEmbeddings, read_embeddings
from sdr.evaluate.ranking import (
    average_precision,
    ndcg_at_k,
    precision_at_k,
    r_precision,
    rank_by_l2,
    recall_at_k,
    reciprocal_rank,
)

DATASET = "csfcube"
FACETS = ("background", "method", "result")
AGGREGATE = "all"
SPLITS = ("dev", "test")
METRICS = ("rp", "p@20", "r@20", "ndcg", "ndcg@20", "ndcg%20", "map", "mrr")
AT_K = 20  # the official ATK
THRESHOLD_GRADE = 2  # graded → binary: relevant iff grade >= 2
# Sentence labels that make up each facet, as in allenai/aspire (objective counts as background).
FACET_LABELS = {"background": ("background", "objective"), "method": ("method",), "result": ("result",)}


# --------------------------------------------------------------------------- reading the collection


def gold_path(data_dir: str | Path, facet: str) -> Path:
    """``<data_dir>/test-pid2anns-csfcube-<facet>.json``."""
    return Path(data_dir) / f"test-pid2anns-{DATASET}-{facet}.json"


def ranked_path(rankings_dir: str | Path, name: str, facet: str) -> Path:
    """``<rankings_dir>/test-pid2pool-csfcube-<name>-<facet>-ranked.json`` (the official run file)."""
    return Path(rankings_dir) / f"test-pid2pool-{DATASET}-{name}-{facet}-ranked.json"


def _load_json(path: Path):
    return load_json(path, "a CSFCube JSON file")


def read_annotations(data_dir: str | Path, facet: str) -> dict[str, dict[str, int]]:
    """``{query_pid: {cand_pid: adjudicated grade}}`` for one facet, in file order."""
    if facet not in FACETS:
        raise ValueError(f"unknown CSFCube facet {facet!r}; expected one of {FACETS}")
    path = gold_path(data_dir, facet)
    raw = _load_json(path)
    annotations: dict[str, dict[str, int]] = {}
    for query, record in raw.items():
        if not isinstance(record, dict) or "cands" not in record or "relevance_adju" not in record:
            raise ValueError(f"{path}: query {query}: expected keys 'cands' and 'relevance_adju'")
        cands, grades = record["cands"], record["relevance_adju"]
        if len(cands) != len(grades):
            raise ValueError(
                f"{path}: query {query}: {len(cands)} candidates but {len(grades)} relevance grades"
            )
        # a boolean is no grade (JSON's true is not 1: it would be scored as 1 silently)
        bad = [g for g in grades if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g <= 3]
        if bad:
            raise InputError(f"{path}: query {query}: relevance grades must be integers 0-3, got "
                             f"{json.dumps(bad[:3])}")
        where = f"{path}: query {query}"
        cands = [record_id(c, "cands", where) for c in cands]
        if len(set(cands)) != len(cands):
            raise InputError(f"{where}: a candidate is judged twice; expected each candidate once")
        annotations[record_id(query, "query", str(path))] = dict(zip(cands, grades))
    return annotations


def read_splits(data_dir: str | Path) -> dict[str, dict[str, list[str]]]:
    """``evaluation_splits.json``: ``{facet or "all": {fold: ["<pid>_<facet>", ...]}}``."""
    path = Path(data_dir) / "evaluation_splits.json"
    splits = _load_json(path)
    for facet in (*FACETS, AGGREGATE):
        for fold in ("fold1_dev", "fold1_test", "fold2_test"):
            if fold not in splits.get(facet, {}):
                raise ValueError(f"{path}: missing fold {facet}/{fold}")
    return splits


def read_ranked_pools(
    rankings_dir: str | Path, name: str, facet: str, annotations: Mapping[str, Mapping[str, int]]
) -> dict[str, list[str]]:
    """Read an official ``-ranked.json`` run: ``{query_pid: [cand_pid, ...]}`` in ranked order.

    Like the official reader, the order of each ``[cand_pid, score]`` pair list is the ranking. Stricter than it,
    so that no score changes silently: each entry is ``[cand_pid]`` or ``[cand_pid, score]`` with a string (or
    integer) id and a finite number, a candidate must be in the judged pool (the official script would stop
    with a ``KeyError``) and may appear once per query (a repeat would count its relevance twice).
    """
    path = ranked_path(rankings_dir, name, facet)
    what = "a CSFCube ranking {query_pid: [[cand_pid, score], ...]}"
    raw = load_json(path, what, finite=True)
    if not isinstance(raw, dict):
        raise InputError(f"{path}: found a JSON {type(raw).__name__}; expected {what}")
    pools: dict[str, list[str]] = {}
    for query, ranked in raw.items():
        if query not in annotations:
            raise InputError(f"{path}: query {query} has no judgements in {gold_path('.', facet).name}; expected "
                             f"the queries of the {facet} facet")
        if not isinstance(ranked, list):
            raise InputError(f"{path}: query {query}: found a JSON {type(ranked).__name__}; expected a list of "
                             f"[cand_pid, score]")
        cands: list[str] = []
        seen: dict[str, int] = {}
        for position, entry in enumerate(ranked, start=1):
            where = f"{path}: query {query}, rank {position}"
            if not isinstance(entry, list) or not 1 <= len(entry) <= 2:
                raise InputError(f"{where}: found {json.dumps(entry)[:60]}; expected [cand_pid, score]")
            cand = entry[0]
            if isinstance(cand, bool) or not isinstance(cand, (str, int)) or not str(cand).strip():
                raise InputError(f"{where}: candidate id {json.dumps(cand)[:40]}; expected a paper id string")
            if len(entry) == 2 and not is_number(entry[1]):
                raise InputError(f"{where}: score {json.dumps(entry[1])[:40]}; expected a finite number")
            cand = str(cand)
            if cand not in annotations[query]:
                raise InputError(f"{where}: candidate {cand} is not in the judged pool; expected one of the "
                                 f"query's {len(annotations[query])} judged candidates")
            if cand in seen:
                raise InputError(f"{where}: candidate {cand} again (first at rank {seen[cand]}); expected each "
                                 f"candidate once")
            seen[cand] = position
            cands.append(cand)
        pools[query] = cands
    return pools


def write_ranked_pools(
    rankings_dir: str | Path, name: str, facet: str, ranked: Mapping[str, Sequence[tuple[str, float]]]
) -> Path:
    """Write ``{query_pid: [[cand_pid, score], ...]}`` in the official run format (readable by the
    official script and by :func:`read_ranked_pools`). A candidate without a finite score (no embedding:
    ranked last with distance ``inf``) is written ``[cand_pid]``, since JSON has no infinity."""
    path = ranked_path(rankings_dir, name, facet)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {q: [[c, float(s)] if np.isfinite(s) else [c] for c, s in pairs] for q, pairs in ranked.items()}
    path.write_text(json.dumps(payload, allow_nan=False), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- ranking from embeddings


def judged_pools(data_dir: str | Path, facet: str) -> dict[str, list[str]]:
    """``{query_pid: judged candidates}`` without the query paper itself: the pool a system re-ranks."""
    return {q: [c for c in judged if c != q] for q, judged in read_annotations(data_dir, facet).items()}


def rank_pools_by_embeddings(
    annotations: Mapping[str, Mapping[str, int]],
    embeddings: Mapping[str, np.ndarray],
    facet: str,
    missing: MissingEmbeddings | None = None,
) -> dict[str, list[tuple[str, float]]]:
    """Sort each query's judged pool by ascending L2 distance to the query embedding.

    The query vector is ``embeddings["<pid>_<facet>"]`` when present, else ``embeddings[pid]``. The
    query paper is removed from its own pool (the official SPECTER pools leave it out). Candidates
    without an embedding are put last, in id order, and counted in ``missing``; a query without an
    embedding raises ``ValueError`` (the official fold averages need every query).
    """
    missing = missing if missing is not None else MissingEmbeddings(DATASET)
    ranked: dict[str, list[tuple[str, float]]] = {}
    lacking_queries = []
    for query, judged in annotations.items():
        query_vector = embeddings.get(f"{query}_{facet}", embeddings.get(query))
        if query_vector is None:
            missing.missing.append(query)
            lacking_queries.append(query)
            continue
        pool = [c for c in judged if c != query]
        found = missing.check(pool, embeddings)
        absent = sorted(set(pool) - set(found))
        pairs: list[tuple[str, float]] = []
        if found:
            order, distances = rank_by_l2(query_vector, np.stack([embeddings[c] for c in found]))
            pairs = [(found[i], float(d)) for i, d in zip(order, distances)]
        pairs += [(c, float("inf")) for c in absent]
        ranked[query] = pairs
    if lacking_queries:
        raise ValueError(
            f"csfcube/{facet}: {len(lacking_queries)} query papers have no embedding "
            f"(neither '<pid>' nor '<pid>_{facet}'), e.g. {', '.join(sorted(lacking_queries)[:5])}"
        )
    return ranked


# --------------------------------------------------------------------------- metrics


def query_metrics(ranked_grades: Sequence[int]) -> dict[str, float]:
    """The official ``compute_metrics(ranked_judgements, pr_atk=20, threshold_grade=2)`` for one query."""
    grades = list(ranked_grades)
    binary = [1 if g >= THRESHOLD_GRADE else 0 for g in grades]
    return {
        "rp": r_precision(binary),
        "p@20": precision_at_k(binary, AT_K),
        "r@20": recall_at_k(binary, AT_K, total_relevant=sum(binary)),
        "ndcg": ndcg_at_k(grades, len(grades)),
        "ndcg@20": ndcg_at_k(grades, AT_K),
        "ndcg%20": ndcg_at_k(grades, int(0.20 * len(grades))),
        "map": average_precision(binary),
        "mrr": reciprocal_rank(binary),
    }


def aggregate(
    per_query: Mapping[str, Mapping[str, float]],
    splits: Mapping[str, Mapping[str, Sequence[str]]],
    facet: str,
    split: str,
) -> dict[str, float]:
    """The official ``aggregate_metrics_crossval``: mean per fold, then the mean over folds."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    folds = ["fold1_dev"] if split == "dev" else ["fold1_test", "fold2_test"]
    fold_means = []
    for fold in folds:
        keys = list(splits[facet][fold])
        absent = [k for k in keys if k not in per_query]
        if absent:
            raise ValueError(
                f"csfcube {facet}/{fold}: no ranking for {len(absent)} queries, e.g. {', '.join(absent[:5])}"
            )
        fold_means.append({m: sum(per_query[k][m] for k in keys) / len(keys) for m in METRICS})
    return {m: statistics.mean(f[m] for f in fold_means) for m in METRICS}


def score_queries(
    pools: Mapping[str, Mapping[str, Sequence[str]]],
    annotations: Mapping[str, Mapping[str, Mapping[str, int]]],
) -> dict[str, dict[str, float]]:
    """Per-query metrics ``{"<pid>_<facet>": {metric: value}}`` from ranked candidate ids per facet."""
    per_query = {}
    for facet, facet_pools in pools.items():
        for query, cands in facet_pools.items():
            grades = [annotations[facet][query][c] for c in cands]
            try:
                per_query[f"{query}_{facet}"] = query_metrics(grades)
            except ValueError as error:  # P@20 needs 20 ranked candidates, as in the official script
                raise ValueError(f"csfcube/{facet}: query {query}: {error}") from None
    return per_query


def evaluate(
    data_dir: str | Path,
    *,
    rankings_dir: str | Path | None = None,
    name: str | None = None,
    embeddings: Mapping[str, np.ndarray] | str | Path | None = None,
    ranked: Mapping[str, Mapping[str, Sequence]] | None = None,
    return_per_query: bool = False,
    progress: bool = False,
) -> dict:
    """Score one system on CSFCube: ``{"dev": {facet: metrics}, "test": {...}, "report": {...}}``.

    Give exactly one of: official run files (``rankings_dir`` + ``name``), ``embeddings`` (a mapping or
    an embeddings JSONL path), or ``ranked`` (``{facet: {query: [cand_pid or (cand_pid, score), ...]}}``,
    e.g. from :mod:`sdr.baselines`). Facets are background, method, result and ``all``; values are
    fractions, unrounded. ``return_per_query`` adds ``"per_query"``.
    """
    given = sum(x is not None for x in (rankings_dir, embeddings, ranked))
    if given != 1:
        raise ValueError("csfcube: give exactly one of rankings_dir (+ name), embeddings or ranked")
    data_dir = Path(data_dir)
    annotations = {facet: read_annotations(data_dir, facet) for facet in FACETS}
    splits = read_splits(data_dir)
    missing = MissingEmbeddings(DATASET)
    pools: dict[str, dict[str, list[str]]] = {}
    for facet in tqdm(FACETS, desc="csfcube facets", disable=not progress):
        if rankings_dir is not None:
            if not name:
                raise ValueError("csfcube: --rankings needs --name (the NAME in test-pid2pool-csfcube-NAME-…)")
            pools[facet] = read_ranked_pools(rankings_dir, name, facet, annotations[facet])
        elif embeddings is not None:
            if isinstance(embeddings, (str, Path)):
                embeddings = read_embeddings(embeddings)
            by_l2 = rank_pools_by_embeddings(annotations[facet], embeddings, facet, missing)
            pools[facet] = {q: [c for c, _ in pairs] for q, pairs in by_l2.items()}
        else:
            if facet not in ranked:
                raise ValueError(f"csfcube: ranked pools lack facet {facet!r}")
            pools[facet] = {
                str(q): [str(c[0]) if isinstance(c, (list, tuple)) else str(c) for c in cands]
                for q, cands in ranked[facet].items()
            }
            for q, cands in pools[facet].items():
                unknown = [c for c in cands if c not in annotations[facet].get(q, {})]
                if q not in annotations[facet] or unknown:
                    raise ValueError(f"csfcube/{facet}: query {q}: candidates not in the judged pool: {unknown[:3]}")
                repeated = sorted(c for c, n in Counter(cands).items() if n > 1)
                if repeated:
                    raise ValueError(f"csfcube/{facet}: query {q}: candidates ranked more than once: {repeated[:3]}; "
                                     f"expected each candidate once")
    per_query = score_queries(pools, annotations)
    result: dict = {
        split: {facet: aggregate(per_query, splits, facet, split) for facet in (*FACETS, AGGREGATE)}
        for split in SPLITS
    }
    report = {
        "queries": len(per_query),
        "candidates": sum(len(c) for facet_pools in pools.values() for c in facet_pools.values()),
    }
    if embeddings is not None:
        report["missing_embeddings"] = missing.report()
        missing.warn()
    result["report"] = report
    if return_per_query:
        result["per_query"] = per_query
    return result


# --------------------------------------------------------------------------- systems for the chapter


def query_texts(
    papers: Mapping[str, Paper], data_dir: str | Path, queries: str = "abstract", sep: str = " "
) -> dict[str, dict[str, str]]:
    """``{facet: {query_pid: text}}``: the whole ``title sep abstract`` or only the facet's sentences."""
    if queries not in ("abstract", "facet"):
        raise ValueError(f"queries must be 'abstract' or 'facet', got {queries!r}")
    facet_texts = facet_query_texts(papers, data_dir)[0] if queries == "facet" else {}
    texts: dict[str, dict[str, str]] = {}
    for facet in FACETS:
        texts[facet] = {}
        for query in read_annotations(data_dir, facet):
            if query not in papers:
                raise ValueError(f"csfcube: no text for query paper {query} ({facet})")
            texts[facet][query] = facet_texts[f"{query}_{facet}"] if queries == "facet" else papers[query].text(sep)
    return texts


class TokenCut:
    """Cut texts to what an encoder with ``max_tokens`` reads, so every system of a leaderboard (lexical rankers
    too) sees the same text of each paper: the first ``max_tokens - 2`` tokens of a text (its [CLS] and final
    [SEP] take two), the title first, then the abstract after the separator's token, as ``title [SEP] abstract``
    is truncated by the encoder. ``tokenizer`` is a Hugging Face fast tokenizer (offsets map tokens to text)."""

    def __init__(self, tokenizer, max_tokens: int):
        if max_tokens < 4:
            raise ValueError(f"max_tokens must be at least 4, got {max_tokens}")
        self.tokenizer, self.max_tokens = tokenizer, int(max_tokens)

    def _prefix(self, text: str, budget: int) -> tuple[str, int]:
        """The longest prefix of ``text`` of at most ``budget`` tokens, and the tokens it has."""
        if budget <= 0 or not text:
            return "", 0
        offsets = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        if len(offsets) <= budget:
            return text, len(offsets)
        return text[:offsets[budget - 1][1]], budget

    def text(self, text: str) -> str:
        return self._prefix(text, self.max_tokens - 2)[0]

    def paper(self, paper: Paper) -> Paper:
        """``paper`` with title and abstract cut as the encoder cuts ``title [SEP] abstract``."""
        import dataclasses

        title, used = self._prefix(paper.title, self.max_tokens - 2)
        abstract, _ = self._prefix(paper.abstract, self.max_tokens - 3 - used) if paper.abstract else ("", 0)
        return dataclasses.replace(paper, title=title, abstract=abstract)


def lexical_rankings(
    papers: Mapping[str, Paper], data_dir: str | Path, method: str = "bm25", queries: str = "abstract",
    progress: bool = False, cut: TokenCut | None = None,
) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """Rank every judged pool with BM25 or TF-IDF (:mod:`sdr.baselines`); candidates are ``title abstract``.
    With ``cut``, every text (candidates and queries, facet queries too) is what an encoder of that input length
    reads (:class:`TokenCut`)."""
    from sdr.baselines import rank_pools

    if cut is not None:
        papers = {pid: cut.paper(paper) for pid, paper in papers.items()}
    candidate_texts = {pid: paper.text(" ") for pid, paper in papers.items()}
    by_facet = query_texts(papers, data_dir, queries)
    if cut is not None and queries == "facet":
        by_facet = {facet: {q: cut.text(t) for q, t in texts.items()} for facet, texts in by_facet.items()}
    return {facet: rank_pools(by_facet[facet], candidate_texts, judged_pools(data_dir, facet), method=method,
                              progress=progress)
            for facet in FACETS}


def random_rankings(data_dir: str | Path, seed: int = 0) -> dict[str, dict[str, list[str]]]:
    """Each judged pool in a seeded random order: the floor every system should clear."""
    rng = np.random.default_rng(seed)
    rankings = {}
    for facet in FACETS:
        pools = judged_pools(data_dir, facet)
        rankings[facet] = {q: [pool[i] for i in rng.permutation(len(pool))] for q, pool in pools.items()}
    return rankings


def results_table(results: Mapping[str, Mapping], split: str = "test"):
    """Long table (pandas) of several systems' results: one row per system and facet, the 8 metrics."""
    import pandas as pd

    rows = []
    for system, result in results.items():
        for facet in (*FACETS, AGGREGATE):
            rows.append({"system": system, "facet": facet, **{m: result[split][facet][m] for m in METRICS}})
    return pd.DataFrame(rows).set_index(["system", "facet"])


# --------------------------------------------------------------------------- paper texts


def read_csfcube_papers(data_dir: str | Path, progress: bool = False) -> dict[str, Paper]:
    """Titles and labelled abstract sentences of every query and candidate.

    Reads ``abstracts-csfcube-preds.jsonl`` when present (fields ``paper_id, title, abstract`` = list of
    sentences, ``pred_labels`` = ``<label>_label`` per sentence), else rebuilds the same from
    ``readable_annotations/*.txt``. ``Paper.metadata`` gets ``abstract_sentences``, ``abstract_labels``
    (background/objective/method/result/other) and ``source``.
    """
    data_dir = Path(data_dir)
    jsonl = data_dir / "abstracts-csfcube-preds.jsonl"
    if jsonl.exists():
        return _read_abstracts_jsonl(jsonl)
    folder = data_dir / "readable_annotations"
    files = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    if not files:
        raise FileNotFoundError(
            f"{data_dir}: neither abstracts-csfcube-preds.jsonl nor readable_annotations/*.txt found"
        )
    papers: dict[str, Paper] = {}
    conflicts = 0
    for path in tqdm(files, desc="readable_annotations", disable=not progress):
        for paper in _parse_readable(path):
            previous = papers.get(paper.paper_id)
            if previous is None:
                papers[paper.paper_id] = paper
            elif previous.metadata["abstract_sentences"] != paper.metadata["abstract_sentences"]:
                conflicts += 1  # the first file's version is kept
    if conflicts:
        print(f"csfcube: {conflicts} papers appear with different abstracts in readable_annotations; "
              f"kept the first (file name order)", file=sys.stderr)
    return papers


def _strip_label(label: str) -> str:
    return label[: -len("_label")] if label.endswith("_label") else label


def _make_paper(paper_id: str, title: str, sentences: list[str], labels: list[str], year, source: str) -> Paper:
    return Paper(
        paper_id=str(paper_id),
        title=title,
        abstract=" ".join(sentences),
        year=year,
        metadata={"abstract_sentences": sentences, "abstract_labels": labels, "source": source},
    )


def _read_abstracts_jsonl(path: Path) -> dict[str, Paper]:
    papers = {}
    for line_number, record in read_jsonl(path, 'abstracts-csfcube-preds.jsonl records', allow_empty=False):
        for key in ("paper_id", "title", "abstract"):
            if key not in record:
                raise ValueError(f"{path}:{line_number}: missing key {key!r}")
        sentences = record["abstract"]
        if isinstance(sentences, str):
            sentences = [sentences]
        labels = [_strip_label(x) for x in record.get("pred_labels", [])]
        if labels and len(labels) != len(sentences):
            raise ValueError(
                f"{path}:{line_number}: {len(sentences)} abstract sentences but {len(labels)} pred_labels"
            )
        year = (record.get("metadata") or {}).get("year")
        papers[str(record["paper_id"])] = _make_paper(
            record["paper_id"], record["title"], list(sentences), labels, year, path.name
        )
    return papers


_ID_LINE = re.compile(r"^paper_id: (?P<pid>\S+); YEAR: (?P<year>.*)$")
_SENTENCE_LINE = re.compile(r"^(?P<label>[a-z]+)_label: (?P<text>.*)$")


def _parse_readable(path: Path) -> list[Paper]:
    """Parse one ``<pid>-<facet>-adju.txt``: the query block and every candidate block."""
    papers = []
    current: dict | None = None

    def finish(line_number: int):
        if current is None:
            return
        if current["title"] is None:
            raise ValueError(f"{path}:{line_number}: paper {current['pid']} has no 'TITLE:' line")
        papers.append(
            _make_paper(current["pid"], current["title"], current["sentences"], current["labels"],
                        current["year"], f"readable_annotations/{path.name}")
        )

    line_number = 0
    # strict UTF-8 lines (a bad byte names its line), a byte-order mark dropped
    for line_number, raw in iter_lines(path, "CSFCube readable annotations"):
        line = raw.rstrip("\n")
        if not line.strip() or set(line.strip()) == {"="}:
            continue
        match = _ID_LINE.match(line)
        if match:
            finish(line_number)
            year = match["year"].strip()
            current = {"pid": match["pid"], "year": int(year) if year.isdigit() else None,
                       "title": None, "sentences": [], "labels": []}
            continue
        if current is None:
            raise ValueError(f"{path}:{line_number}: expected 'paper_id: <id>; YEAR: <year>' first")
        if line.startswith("TITLE: ") or line == "TITLE:":
            current["title"] = line[len("TITLE:"):].strip()
            continue
        if line.startswith("ABSTRACT:"):
            line = line[len("ABSTRACT:"):].strip()
            if not line:
                continue
        sentence = _SENTENCE_LINE.match(line)
        if sentence:
            current["labels"].append(sentence["label"])
            current["sentences"].append(sentence["text"])
        elif line.startswith(("adju relevance:", "difference:", "sources:")):
            continue  # judgement details; the grades themselves come from test-pid2anns-*.json
        else:
            raise ValueError(
                f"{path}:{line_number}: expected '<facet>_label: sentence', 'TITLE:' or a judgement "
                f"line, got {line[:60]!r}"
            )
    finish(line_number)
    return papers


def facet_sentences(paper: Paper, facet: str) -> list[str]:
    """Abstract sentences whose label belongs to ``facet`` (objective counts as background)."""
    labels = paper.metadata.get("abstract_labels") or []
    sentences = paper.metadata.get("abstract_sentences") or []
    wanted = FACET_LABELS[facet]
    return [s for s, label in zip(sentences, labels) if label in wanted]


def facet_query_texts(
    papers: Mapping[str, Paper], data_dir: str | Path, title: bool = False
) -> tuple[dict[str, str], dict]:
    """Facet-sentence query texts ``{"<pid>_<facet>": text}`` for every query–facet pair.

    A query whose abstract has no sentence of the facet falls back to the whole abstract; the
    fallbacks are counted in the returned report. ``title=True`` prefixes the title.
    """
    texts: dict[str, str] = {}
    fallbacks = []
    for facet in FACETS:
        for query in read_annotations(data_dir, facet):
            paper = papers.get(query)
            if paper is None:
                raise ValueError(f"csfcube: no text for query paper {query} ({facet})")
            sentences = facet_sentences(paper, facet)
            if not sentences:
                fallbacks.append(f"{query}_{facet}")
                sentences = paper.metadata.get("abstract_sentences") or [paper.abstract]
            body = " ".join(sentences)
            texts[f"{query}_{facet}"] = f"{paper.title} {body}" if title else body
    return texts, {"queries": len(texts), "fallback_to_abstract": len(fallbacks), "examples": fallbacks[:5]}


def read_queries(data_dir: str | Path) -> list[dict]:
    """Rows of ``queries-release.csv`` (pid, facet, year, title, paper type)."""
    path = Path(data_dir) / "queries-release.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path}: file not found")
    rows = list(csv.DictReader(line for _, line in iter_lines(path, "CSFCube queries (CSV)")))
    for line_number, row in enumerate(rows, start=2):
        if not row.get("pid") or row.get("facet") not in FACETS:
            raise ValueError(f"{path}:{line_number}: expected columns pid,facet,year,title,paper type")
    return rows


# --------------------------------------------------------------------------- command line


def add_arguments(parser) -> None:
    """Options of ``sdr evaluate csfcube``."""
    parser.add_argument("--data-dir", help="CSFCube folder (default: resolved by `sdr data`, name csfcube)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--rankings", help="folder with test-pid2pool-csfcube-NAME-<facet>-ranked.json")
    source.add_argument("--embeddings", help="embeddings JSONL; keys <pid> and optionally <pid>_<facet>")
    parser.add_argument("--name", help="NAME of the ranked files (with --rankings)")


def run(args) -> dict:
    """``sdr evaluate csfcube …`` → the contract's JSON object."""
    data_dir = args.data_dir
    if data_dir is None:
        from sdr.datasets import resolve

        data_dir = resolve(DATASET)
    if args.rankings:
        return evaluate(data_dir, rankings_dir=args.rankings, name=args.name)
    return evaluate(data_dir, embeddings=args.embeddings)
