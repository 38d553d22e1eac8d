"""MDCR (Medić & Šnajder, 2022): multi-domain citation recommendation, per MAG field.

Matches ``zoranmedic/mdcr`` ``evaluate.py``: for each field, a query's candidates are the union of
its ``bm25, graph, most_cited, random, scincl, specter, true`` lists, read in that order, so a
candidate listed under several types is relevant iff it is in ``true`` (``true`` comes last and
wins); ``pytrec_eval`` ``map``, ``ndcg`` and ``recall_5`` × 100 rounded to 4 decimals per field;
then the unweighted mean over the fields of the *rounded* field values, rounded to 4 decimals.

Scores come either from a ready scores file ``{"<qid>_<cid>": score}`` (higher = more relevant,
the official input) or from embeddings, scored ``-||q - c||₂`` as SciRepEval's ``mdcr.py``
(``IREvaluator.retrieval``) does: a query without an embedding is left out of the run and a
candidate without one is dropped — both counted and reported, never silently.
All fields are scored in one ``pytrec_eval`` call.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from sdr.jsonio import InputError, is_number, load_json, record_id
from sdr.evaluate.embeddings import MissingEmbeddings
from sdr.evaluate.scidocs import l2_run, load_embeddings

FIELDS = (
    "Art", "Biology", "Business", "Chemistry", "Computer Science", "Economics", "Engineering",
    "Environmental Science", "Geography", "Geology", "History", "Materials Science", "Mathematics",
    "Medicine", "Philosophy", "Physics", "Political Science", "Psychology", "Sociology",
)
"""The 19 MAG fields of ``evaluate.py``, in its order."""

CANDIDATE_TYPES = ("bm25", "graph", "most_cited", "random", "scincl", "specter", "true")
"""``NEG_TYPES`` of ``evaluate.py``: the order matters (``true`` last decides relevance)."""

MEASURES = ("map", "ndcg", "recall_5")


def read_benchmark(path: str | Path) -> dict[str, dict[str, dict[str, list[str]]]]:
    """Read ``mdcr_<split>.json``: ``{field: {query_id: {candidate_type: [candidate ids]}}}``.

    Raises ``ValueError`` naming the file, field and query when the structure is not that, or a
    query has no ``true`` list.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: MDCR split not found")
    benchmark = load_json(path, "an MDCR split {field: {query_id: {type: [ids]}}}")
    if not isinstance(benchmark, dict) or not benchmark:
        raise ValueError(f"{path}: expected a JSON object {{field: {{query_id: {{type: [ids]}}}}}}")
    for field, queries in benchmark.items():
        if not isinstance(queries, dict):
            raise ValueError(f"{path}: field {field!r}: expected an object of queries")
        for query, lists in queries.items():
            if not isinstance(lists, dict) or "true" not in lists:
                raise ValueError(f"{path}: field {field!r}, query {query!r}: expected candidate lists "
                                 f"including 'true', got {type(lists).__name__}")
            unknown = set(lists) - set(CANDIDATE_TYPES)
            if unknown:
                raise ValueError(f"{path}: field {field!r}, query {query!r}: unknown candidate types "
                                 f"{sorted(unknown)}; expected {CANDIDATE_TYPES}")
            for name, ids in lists.items():
                if not isinstance(ids, list):
                    raise ValueError(f"{path}: field {field!r}, query {query!r}: {name!r} must be a list")
                where = f"{path}: field {field!r}, query {query!r}, {name!r}"
                for candidate in ids:  # an id, not true/null/1.5 (str() would make them ids "True", "None")
                    record_id(candidate, "candidate", where)
    return benchmark


def field_order(benchmark: Mapping) -> list[str]:
    """The official 19 fields in their order, then any other field (replicas) alphabetically."""
    known = [field for field in FIELDS if field in benchmark]
    return known + sorted(set(benchmark) - set(FIELDS))


def qrels_by_field(benchmark: Mapping) -> dict[str, dict[str, dict[str, int]]]:
    """``{field: {qid: {cid: 0/1}}}`` built as ``calculate_metrics_over_fields`` builds them."""
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for field in field_order(benchmark):
        qrels[field] = {}
        for query, lists in benchmark[field].items():
            labels: dict[str, int] = {}
            for candidate_type in CANDIDATE_TYPES:
                for candidate in lists.get(candidate_type, ()):
                    labels[str(candidate)] = 1 if candidate_type == "true" else 0
            qrels[field][str(query)] = labels
    return qrels


def read_scores(path: str | Path) -> dict[str, float]:
    """A scores file ``{"<qid>_<cid>": score}`` (the official evaluator's input).

    Scores must be finite numbers (not NaN, an infinity, a boolean or a string) and keys must not repeat;
    anything else raises :class:`~sdr.jsonio.InputError` naming the file, the line and the key. Keys that
    name no query-candidate pair of the split are refused by :func:`evaluate`.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: scores file not found")
    what = 'a scores file {"qid_cid": finite number}'
    scores = load_json(path, what, finite=True)
    if not isinstance(scores, dict):
        raise InputError(f"{path}: found a JSON {type(scores).__name__}; expected {what}")
    for key, value in scores.items():
        if not is_number(value):
            raise InputError(f"{path}: score of {key!r} is {json.dumps(value)[:40]}; expected a finite number")
    return scores


def check_score_keys(scores: Mapping[str, float], qrels: Mapping[str, Mapping[str, Mapping[str, int]]],
                     source: str = "scores") -> None:
    """Every key of ``scores`` must be ``<qid>_<cid>`` of a query and one of its candidates in the split;
    a key that is not (an unknown query or candidate, another split's pair, a typo) is an error, since it
    would be ignored silently and the pair it meant to score would count as missing."""
    known = {f"{query}_{candidate}" for queries in qrels.values() for query, candidates in queries.items()
             for candidate in candidates}
    unknown = [key for key in scores if key not in known]
    if unknown:
        raise InputError(f"{source}: {len(unknown)} of {len(scores)} keys name no query-candidate pair of this split "
                         f"(e.g. {', '.join(map(repr, unknown[:3]))}); expected keys '<qid>_<cid>' of the split's "
                         f"queries and candidates")


def evaluate(
    data_dir: str | Path | None = None,
    embeddings: Mapping[str, np.ndarray] | str | Path | None = None,
    scores: Mapping[str, float] | str | Path | None = None,
    split: str = "test",
    benchmark_file: str | Path | None = None,
) -> dict:
    """MDCR metrics: ``{"fields": {field: {"map","ndcg","recall_5"}}, "avg": {…}, "missing": {…}}``.

    Give ``embeddings`` (``{id: vector}`` or a JSONL path) or ``scores`` (``{"qid_cid": score}`` or
    a JSON path).  The split is ``data_dir/mdcr_<split>.json`` unless ``benchmark_file`` is given.
    ``missing`` counts the query–candidate pairs without a score (and, for embeddings, the ids).
    """
    if (embeddings is None) == (scores is None):
        raise ValueError("MDCR: give exactly one of embeddings or scores")
    if benchmark_file is None:
        if data_dir is None:
            raise ValueError("MDCR: give data_dir (with mdcr_<split>.json) or benchmark_file")
        benchmark_file = Path(data_dir) / f"mdcr_{split}.json"
    benchmark = read_benchmark(benchmark_file)
    qrels = qrels_by_field(benchmark)
    # One combined qrel/run keyed by (field, query): one pytrec_eval call for all fields.
    combined_qrels = {_key(field, q): c for field, queries in qrels.items() for q, c in queries.items()}
    report: dict = {}
    if embeddings is not None:
        missing = MissingEmbeddings("mdcr")
        vectors = load_embeddings(embeddings)
        by_query: dict[str, dict[str, int]] = {}
        for queries in qrels.values():
            for query, candidates in queries.items():
                by_query.setdefault(query, {}).update(candidates)
        # -L2, not rounded (SciRepEval's retrieval keeps the raw distances).
        query_run = l2_run(by_query, vectors, missing, decimals=None)
        run = {_key(field, q): {c: query_run[q][c] for c in cands if c in query_run.get(q, {})}
               for field, queries in qrels.items() for q, cands in queries.items() if q in query_run}
        missing.warn()
        report["missing_embeddings"] = missing.report()
    else:
        score_map = read_scores(scores) if isinstance(scores, (str, Path)) else scores
        check_score_keys(score_map, qrels, str(scores) if isinstance(scores, (str, Path)) else "scores")
        bad = [key for key, value in score_map.items() if not is_number(value)]
        if bad:
            raise InputError(f"scores: {len(bad)} scores are not finite numbers, e.g. {bad[0]!r}: "
                             f"{score_map[bad[0]]!r}")
        run, absent = {}, []
        for field, queries in qrels.items():
            for query, candidates in queries.items():
                row = {}
                for candidate in candidates:
                    key = f"{query}_{candidate}"
                    if key in score_map:
                        row[candidate] = float(score_map[key])
                    else:
                        absent.append(key)
                if row:
                    run[_key(field, query)] = row
        report["missing_scores"] = {"count": len(absent), "examples": absent[:5]}
        if absent:
            import sys

            print(f"mdcr: {len(absent)} query-candidate pairs have no score (e.g. {', '.join(absent[:5])})",
                  file=sys.stderr)
    per_query = _pytrec(combined_qrels, run)
    fields: dict[str, dict[str, float]] = {}
    for field in qrels:
        results = [per_query[_key(field, q)] for q in qrels[field] if _key(field, q) in per_query]
        fields[field] = {m: _aggregate(m, [r[m] for r in results]) for m in MEASURES}
    average = {m: float(np.round(np.mean([fields[f][m] for f in fields]), 4)) for m in MEASURES}
    return {"fields": fields, "avg": average, **report}


def _key(field: str, query: str) -> str:
    return f"{field}\x1f{query}"


def _pytrec(qrels, run) -> dict[str, dict[str, float]]:
    import pytrec_eval

    if not run:
        return {}
    # 'recall' yields recall_5 among its cut-offs, exactly as the official measure set does.
    return pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg", "recall"}).evaluate(run)


def _aggregate(measure: str, values: list[float]) -> float:
    import pytrec_eval

    if not values:
        return float("nan")
    return float(np.round(100 * pytrec_eval.compute_aggregated_measure(measure, values), 4))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``sdr evaluate mdcr``."""
    parser.add_argument("--data-dir", type=Path, help="folder holding mdcr_<split>.json")
    parser.add_argument("--split", default="test", help="val or test (reads mdcr_<split>.json)")
    parser.add_argument("--benchmark-file", type=Path, default=None, help="an explicit mdcr_<split>.json")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--embeddings", type=Path, help="embeddings JSONL (scored by -L2)")
    source.add_argument("--scores", type=Path, help='scores JSON {"qid_cid": score} (higher = better)')


def run(args: argparse.Namespace) -> dict:
    """Run ``sdr evaluate mdcr`` and return the contract's JSON object."""
    if args.data_dir is None and args.benchmark_file is None:
        raise ValueError("sdr evaluate mdcr: give --data-dir (with mdcr_<split>.json) or --benchmark-file")
    return evaluate(args.data_dir, embeddings=args.embeddings, scores=args.scores, split=args.split,
                    benchmark_file=args.benchmark_file)
