"""SciDocs (Cohan et al., 2020): MAG/MeSH classification, co-view/co-read/cite/co-cite, recommendations.

Matches ``allenai/scidocs``:

* ``scidocs/classification.py`` — ``LinearSVC(loss="squared_hinge", random_state=42)`` from
  sklearn-contrib-lightning (no intercept), ``GridSearchCV(cv=3)`` over ``C = logspace(-4, 2, 7)``,
  fitted on train, macro F1 × 100 on test rounded to 2 decimals; a paper without an embedding gets
  a zero vector.  lightning is not installable today; scikit-learn's liblinear ``LinearSVC`` with
  ``fit_intercept=False`` solves the same (primal-equivalent) problem by dual coordinate descent.
* ``scidocs/user_activity_and_citations.py`` — for each query only its qrel candidates, score
  ``-||q - c||₂`` rounded to 5 decimals (``np.round(d, 5)``, which decides the ties trec_eval
  breaks by document id), ``pytrec_eval`` ``map`` and full ``ndcg``, mean over evaluated queries,
  × 100, 2 decimals.  A query without an embedding is skipped (not averaged), a candidate without
  one is dropped from the ranking — exactly as the official run file is built — and both are counted.
* ``scidocs/paths.py`` — the file layout (``DataPaths``), :mod:`sdr.evaluate.scidocs_layout`.
* ``scidocs/recomm_click_eval.py`` — the recommendations task, see :mod:`sdr.evaluate.recommendations`.

Speed: one ``pytrec_eval`` call per task and all query–candidate distances of a task in one
vectorised pass (measured against a per-query loop in ``benchmarks/bench_scidocs.py``).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from sdr.evaluate import recommendations
from sdr.evaluate.embeddings import MissingEmbeddings
from sdr.evaluate.scidocs_layout import PROXIMITY_TASKS, ScidocsPaths, load_embeddings  # noqa: F401 (re-exported)
from sdr.jsonio import iter_lines, load_json

CLASSIFICATION_TASKS = ("mag", "mesh")

SCIDOCS_METRICS = (
    ("mag", "f1"), ("mesh", "f1"),
    ("co-view", "map"), ("co-view", "ndcg"), ("co-read", "map"), ("co-read", "ndcg"),
    ("cite", "map"), ("cite", "ndcg"), ("co-cite", "map"), ("co-cite", "ndcg"),
    ("recomm", "adj-NDCG"), ("recomm", "adj-P@1"),
)
"""The 12 numbers of SPECTER's Table 1 (their unweighted mean is the papers' "avg")."""

SVM_C_GRID = np.logspace(-4, 2, 7)


# ----------------------------------------------------------------------------------------- readers


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read a TREC qrel file ``query-id 0 paper-id relevance`` (space separated, as SciDocs writes).

    Same result as ``pytrec_eval.parse_qrel`` (a repeated pair keeps its last relevance), but a
    malformed line raises ``ValueError`` naming the file and line instead of being misparsed.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: qrel file not found")
    qrels: dict[str, dict[str, int]] = {}
    # strict UTF-8 lines (a byte-order mark is not part of the first query id)
    for line_number, line in iter_lines(path, "TREC qrels 'query-id iteration paper-id relevance'"):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4:
            raise ValueError(
                f"{path}:{line_number}: expected 'query-id iteration paper-id relevance' "
                f"(4 fields), got {len(parts)}: {line.strip()!r}"
            )
        query_id, _iteration, doc_id, relevance = parts
        try:
            qrels.setdefault(query_id, {})[doc_id] = int(relevance)
        except ValueError:
            raise ValueError(
                f"{path}:{line_number}: relevance must be an integer, got {relevance!r}"
            ) from None
    if not qrels:
        raise ValueError(f"{path}: no qrels in file")
    return qrels


def read_labels_csv(path: str | Path) -> list[tuple[str, str]]:
    """Read a MAG/MeSH split ``pid,class_label`` (header line first), as ``pd.read_csv`` does.

    Labels stay strings: macro F1 only needs them to be comparable, and the official integer
    labels map one-to-one onto their strings.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: classification split not found")
    rows: list[tuple[str, str]] = []
    # strict UTF-8 lines (a byte-order mark is not part of the header)
    reader = csv.reader(line for _, line in iter_lines(path, "a MAG/MeSH split 'pid,class_label'"))
    header = next(reader, None)
    if header is None or len(header) != 2:
        raise ValueError(f"{path}:1: expected a header of two columns 'pid,class_label', got {header}")
    for line_number, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) != 2 or not row[0].strip():
            raise ValueError(f"{path}:{line_number}: expected 'pid,class_label', got {row}")
        rows.append((row[0].strip(), row[1].strip()))
    if not rows:
        raise ValueError(f"{path}: no rows after the header")
    return rows


def papers_to_embed(data_dir: str | Path) -> dict[str, dict]:
    """Every paper the suite needs an embedding for: the union of the three metadata files
    (``paper_metadata_{mag_mesh,view_cite_read,recomm}.json``, as the SciDocs README instructs),
    ``{paper_id: {"title", "abstract", …}}``.  Missing metadata files are skipped (recomm is optional);
    none at all raises ``FileNotFoundError``."""
    paths = ScidocsPaths(Path(data_dir))
    papers: dict[str, dict] = {}
    found = False
    for path in (paths.metadata_mag_mesh, paths.metadata_view_cite_read, paths.metadata_recomm):
        if not path.exists():
            continue
        found = True
        records = load_json(path, "SciDocs paper metadata {paper_id: {title, abstract, ...}}")
        for pid, record in records.items():
            papers.setdefault(str(pid), record)
    if not found:
        raise FileNotFoundError(f"{data_dir}: no paper_metadata_*.json files (not a SciDocs folder?)")
    return papers


def read_papers(data_dir: str | Path) -> dict:
    """The papers to embed as :class:`sdr.corpus.Paper` (title and abstract; missing ones are empty)."""
    from sdr.corpus import Paper

    return {pid: Paper(pid, record.get("title") or "", record.get("abstract") or "")
            for pid, record in papers_to_embed(data_dir).items()}


# ------------------------------------------------------------------------------------ classification


def classification_f1(
    X_train: np.ndarray, y_train, X_test: np.ndarray, y_test, n_jobs: int = 1
) -> float:
    """Macro F1 × 100 (2 decimals) of SciDocs' grid-searched linear SVM (``classification.classify``)."""
    from sklearn.metrics import f1_score
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import LinearSVC

    # lightning's LinearSVC has no intercept; liblinear's would add a regularised bias column.
    estimator = LinearSVC(loss="squared_hinge", fit_intercept=False, dual=True, random_state=42,
                          max_iter=1000)
    search = GridSearchCV(estimator=estimator, cv=3, param_grid={"C": SVM_C_GRID}, n_jobs=n_jobs)
    with _quiet_convergence():
        search.fit(X_train, y_train)
    predictions = search.predict(X_test)
    return float(np.round(100 * f1_score(y_test, predictions, average="macro"), 2))


def classification_matrix(
    rows: list[tuple[str, str]], embeddings: Mapping[str, np.ndarray], missing: MissingEmbeddings
) -> tuple[np.ndarray, np.ndarray]:
    """``X, y`` of one split; a paper without an embedding becomes a zero vector (the official rule)."""
    dimension = len(next(iter(embeddings.values())))
    X = np.zeros((len(rows), dimension), dtype=np.float64)
    found = set(missing.check([pid for pid, _ in rows], embeddings))
    for index, (pid, _label) in enumerate(rows):
        if pid in found:
            X[index] = embeddings[pid]
    labels = [label for _pid, label in rows]
    # pd.read_csv (the official reader) turns an all-integer column into ints; the class order,
    # and so which class a zero vector is assigned to, follows that type.
    if all(re.fullmatch(r"[+-]?\d+", label) for label in labels):
        return X, np.array([int(label) for label in labels])
    return X, np.array(labels)


def evaluate_classification(
    data_dir: str | Path,
    embeddings: Mapping[str, np.ndarray],
    task: str,
    val_or_test: str = "test",
    n_jobs: int = 1,
    missing: MissingEmbeddings | None = None,
) -> dict[str, float]:
    """``{"f1": …}`` of MAG or MeSH: fit on ``train.csv``, score on ``val_or_test``."""
    paths = ScidocsPaths(Path(data_dir))
    missing = missing or MissingEmbeddings(f"scidocs {task}")
    X_train, y_train = classification_matrix(read_labels_csv(paths.classification(task, "train")),
                                             embeddings, missing)
    X_test, y_test = classification_matrix(read_labels_csv(paths.classification(task, val_or_test)),
                                           embeddings, missing)
    return {"f1": classification_f1(X_train, y_train, X_test, y_test, n_jobs=n_jobs)}


# ----------------------------------------------------------------------------------------- proximity


def l2_run(
    qrels: Mapping[str, Mapping[str, int]],
    embeddings: Mapping[str, np.ndarray],
    missing: MissingEmbeddings | None = None,
    decimals: int | None = 5,
    chunk_pairs: int = 2048,
) -> dict[str, dict[str, float]]:
    """The run of ``make_run_from_embeddings``: ``{query: {candidate: -L2 distance}}``, vectorised.

    Only each query's qrel candidates are scored.  Queries without an embedding are left out and
    candidates without one are dropped (both counted in ``missing``).  Scores are rounded to
    ``decimals`` as the official run file is (``None`` keeps them exact).
    """
    missing = missing or MissingEmbeddings("proximity")
    query_ids: list[str] = []
    candidate_ids: list[str] = []
    for query_id, candidates in qrels.items():
        if not missing.check([query_id], embeddings):
            continue
        for candidate_id in missing.check(list(candidates), embeddings):
            query_ids.append(query_id)
            candidate_ids.append(candidate_id)
    run: dict[str, dict[str, float]] = {}
    if not query_ids:
        return run
    # One matrix of the distinct papers, then index pairs into it: no per-query Python loop.
    # Pairs go in chunks of ``chunk_pairs``: the gathered rows then stay small enough for the
    # cache (65,536-pair chunks of 768-d rows were 6x slower than 2,048, measured on 30k pairs).
    vocabulary = {pid: i for i, pid in enumerate(dict.fromkeys(query_ids + candidate_ids))}
    matrix = np.stack([np.asarray(embeddings[pid], dtype=np.float64) for pid in vocabulary])
    query_index = np.fromiter((vocabulary[q] for q in query_ids), dtype=np.int64, count=len(query_ids))
    candidate_index = np.fromiter((vocabulary[c] for c in candidate_ids), dtype=np.int64,
                                  count=len(candidate_ids))
    scores = np.empty(len(query_ids), dtype=np.float64)
    for start in range(0, len(query_ids), chunk_pairs):
        stop = start + chunk_pairs
        difference = matrix[query_index[start:stop]] - matrix[candidate_index[start:stop]]
        scores[start:stop] = -np.linalg.norm(difference, axis=1)
    if decimals is not None:
        scores = np.round(scores, decimals)
    for query_id, candidate_id, score in zip(query_ids, candidate_ids, scores.tolist()):
        run.setdefault(query_id, {})[candidate_id] = score
    return run


def trec_metrics(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    measures: tuple[str, ...] = ("map", "ndcg"),
    scale: float = 100.0,
    decimals: int | None = 2,
) -> dict[str, float]:
    """Mean of ``pytrec_eval`` measures over the evaluated queries (``get_qrel_metrics``), one call."""
    import pytrec_eval

    if not run:
        return {measure: float("nan") for measure in sorted(measures)}
    evaluator = pytrec_eval.RelevanceEvaluator({q: dict(c) for q, c in qrels.items()}, set(measures))
    per_query = evaluator.evaluate({q: dict(c) for q, c in run.items()})
    result = {}
    for measure in sorted(measures):
        value = pytrec_eval.compute_aggregated_measure(measure, [m[measure] for m in per_query.values()])
        value = scale * value
        result[measure] = float(np.round(value, decimals)) if decimals is not None else float(value)
    return result


def evaluate_proximity(
    data_dir: str | Path,
    embeddings: Mapping[str, np.ndarray],
    task: str,
    split: str = "test",
    missing: MissingEmbeddings | None = None,
) -> dict[str, float]:
    """``{"map", "ndcg"}`` of one of co-view, co-read, cite, co-cite (× 100, 2 decimals)."""
    if task not in PROXIMITY_TASKS:
        raise ValueError(f"unknown SciDocs proximity task {task!r}; expected one of {list(PROXIMITY_TASKS)}")
    qrels = read_qrels(ScidocsPaths(Path(data_dir)).qrel(task, split))
    run = l2_run(qrels, embeddings, missing)
    return trec_metrics(qrels, run)


# ------------------------------------------------------------------------------------------- all


def evaluate(
    data_dir: str | Path,
    embeddings: Mapping[str, np.ndarray] | str | Path,
    recomm: bool | None = None,
    val_or_test: str = "test",
    n_jobs: int = 1,
    recomm_embeddings: Mapping[str, np.ndarray] | str | Path | None = None,
    position_bug: bool = True,
    recomm_device: str = "cpu",
    progress: bool = True,
    proximity_split: str = "test",
) -> dict:
    """All SciDocs metrics, as ``scidocs.get_scidocs_metrics`` returns them, plus a missing-ids report.

    ``recomm``: ``None`` runs the recommendations task when ``recomm/`` is present, ``True`` requires
    it, ``False`` skips it.  ``recomm_embeddings`` defaults to ``embeddings`` (the official suite
    takes three files; one file holding the union of the ids is equivalent).  ``position_bug``
    reproduces the official ranker, whose position feature is always zero (see
    :mod:`sdr.evaluate.recommendations`).  Returns ``{"mag": {"f1"}, "mesh": {"f1"}, "co-view":
    {"map","ndcg"}, "co-read", "cite", "co-cite", ["recomm": {"adj-NDCG","adj-P@1"}],
    "missing_embeddings": {"count","examples"}}``.

    ``proximity_split``: the official suite scores co-view, co-read, cite and co-cite on their *test* qrels
    whatever ``val_or_test`` says; ``"val"`` scores their validation qrels instead, for a validation score of
    every task (SciNCL tuned its sampling on "the SciDocs validation set", §6).
    """
    from tqdm.auto import tqdm

    for name, value in (("val_or_test", val_or_test), ("proximity_split", proximity_split)):
        if value not in ("val", "test"):
            raise ValueError(f"{name} must be 'val' or 'test', got {value!r}")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"{data_dir}: SciDocs data directory not found")
    paths = ScidocsPaths(data_dir)
    embeddings = load_embeddings(embeddings)
    missing = MissingEmbeddings("scidocs")
    metrics: dict = {}
    steps = list(CLASSIFICATION_TASKS) + list(PROXIMITY_TASKS)
    run_recomm = paths.has_recomm() if recomm is None else recomm
    if run_recomm and not paths.has_recomm():
        raise FileNotFoundError(
            f"{data_dir / 'recomm'}: recommendations data not found (need train.csv, test.csv, "
            f"propensity_scores.json and {paths.metadata_recomm.name})"
        )
    if run_recomm:
        steps.append("recomm")
    for task in tqdm(steps, desc="SciDocs tasks", disable=not progress):
        if task in CLASSIFICATION_TASKS:
            metrics[task] = evaluate_classification(data_dir, embeddings, task, val_or_test, n_jobs, missing)
        elif task in PROXIMITY_TASKS:
            # The official suite scores the *test* qrels for these tasks whatever val_or_test says.
            metrics[task] = evaluate_proximity(data_dir, embeddings, task, proximity_split, missing)
        else:
            recomm_vectors = load_embeddings(recomm_embeddings) if recomm_embeddings is not None else embeddings
            metrics["recomm"] = recommendations.evaluate(
                data_dir, recomm_vectors, val_or_test=val_or_test, position_bug=position_bug,
                device=recomm_device, progress=progress, missing=missing,
            )["recomm"]
    missing.warn()
    metrics["missing_embeddings"] = missing.report()
    return metrics


def split_paper_ids(data_dir: str | Path, split: str) -> set[str]:
    """Every paper a SciDocs split names: the queries and candidates of the four proximity qrels, the MAG and MeSH
    papers, and the recommendation queries and shown papers of ``split`` ("val" or "test"; files that are absent
    are skipped). SciNCL A.3 counts SPECTER's training papers that are in these sets."""
    if split not in ("val", "test"):
        raise ValueError(f"split must be 'val' or 'test', got {split!r}")
    paths = ScidocsPaths(Path(data_dir))
    ids: set[str] = set()

    def has_lines(path: Path, header: int = 0) -> bool:  # a split a replica left empty names no paper
        return path.exists() and sum(1 for _, line in iter_lines(path) if line.strip()) > header

    for task in PROXIMITY_TASKS:
        if has_lines(paths.qrel(task, split)):
            for query, candidates in read_qrels(paths.qrel(task, split)).items():
                ids.add(query)
                ids.update(candidates)
    for task in CLASSIFICATION_TASKS:
        if has_lines(paths.classification(task, split), header=1):
            ids.update(pid for pid, _ in read_labels_csv(paths.classification(task, split)))
    if has_lines(paths.recomm(split), header=1):
        for query, _clicked, shown in recommendations.read_clicks(paths.recomm(split)):
            ids.add(query)
            ids.update(shown)
    if not ids:
        raise FileNotFoundError(f"{data_dir}: no SciDocs {split} files (qrels, MAG/MeSH csv, recomm csv)")
    return ids


def scidocs_average(metrics: Mapping[str, Mapping[str, float]]) -> float:
    """The papers' SciDocs "avg": unweighted mean of the 12 metrics (recomm included).

    Raises ``KeyError`` naming the metric when one of the 12 is absent, so a partial run is never
    averaged as if it were complete.
    """
    values = []
    for task, measure in SCIDOCS_METRICS:
        if task not in metrics or measure not in metrics[task]:
            raise KeyError(f"SciDocs average needs {task}/{measure}, which the metrics lack")
        values.append(float(metrics[task][measure]))
    return float(np.mean(values))


# -------------------------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``sdr evaluate scidocs``."""
    parser.add_argument("--data-dir", required=True, type=Path, help="SciDocs folder in the official layout")
    parser.add_argument("--embeddings", required=True, type=Path, help="embeddings JSONL (paper_id, embedding)")
    parser.add_argument("--recomm-embeddings", type=Path, default=None,
                        help="separate embeddings for the recommendations task (default: --embeddings)")
    recomm = parser.add_mutually_exclusive_group()
    recomm.add_argument("--recomm", dest="recomm", action="store_true", default=None,
                        help="require and run the recommendations task")
    recomm.add_argument("--no-recomm", dest="recomm", action="store_false",
                        help="skip the recommendations task")
    parser.add_argument("--fix-position-bug", action="store_true",
                        help="recomm: feed the real result position (the official code zeroes it)")
    parser.add_argument("--val-or-test", choices=("val", "test"), default="test")
    parser.add_argument("--n-jobs", type=int, default=1, help="parallel jobs of the SVM grid search")
    parser.add_argument("--device", default="cpu", help="recomm ranker device (cpu, cuda, auto)")


def run(args: argparse.Namespace) -> dict:
    """Run ``sdr evaluate scidocs`` and return the contract's JSON object."""
    return evaluate(
        args.data_dir, args.embeddings, recomm=args.recomm, val_or_test=args.val_or_test,
        n_jobs=args.n_jobs, recomm_embeddings=args.recomm_embeddings,
        position_bug=not args.fix_position_bug, recomm_device=args.device,
        progress=sys.stderr.isatty(),
    )


class _quiet_convergence:
    """Silence liblinear's ConvergenceWarning at tiny C (lightning stops silently at max_iter too) and
    StratifiedKFold's warning about classes smaller than the 3 folds."""

    def __enter__(self):
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        self._catcher = warnings.catch_warnings()
        self._catcher.__enter__()
        warnings.simplefilter("ignore", ConvergenceWarning)
        # A class with fewer members than cv=3 folds (small replicas) makes StratifiedKFold warn; the
        # grid search still runs exactly as the official script's does, so the warning carries no news.
        warnings.filterwarnings("ignore", message="The least populated class in y has only",
                                category=UserWarning)
        return self

    def __exit__(self, *exc):
        return self._catcher.__exit__(*exc)
