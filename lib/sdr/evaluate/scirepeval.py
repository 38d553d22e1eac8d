"""SciRepEval (Singh et al., 2023): the task registry drives classification, regression, proximity,
ad-hoc search and reviewer matching.

Matches ``allenai/scirepeval``:

* ``scirepeval.py`` — the registry ``scirepeval_tasks.jsonl`` (one task per line: ``name``,
  ``type``, ``data.meta`` / ``data.test`` / ``data.reviewers``, ``metrics``, ``few_shot``,
  ``multi_label``) decides which evaluator runs with which metrics.
* ``evaluation/evaluator.py`` ``SupervisedEvaluator`` — papers without an embedding are left out
  (counted here); classification: lightning ``LinearSVC(loss="squared_hinge", random_state=42)``
  with ``GridSearchCV(cv=3)`` over ``C = logspace(-2, 2, 5)``; multi-label: one-vs-rest over a
  ``GridSearchCV`` of a hinge-loss ``LinearSVC``; regression: ``LinearSVR`` over ``C =
  logspace(-4, 2, 7)``; metrics ``f1`` (binary), ``f1_macro``, ``f1_weighted`` … and
  ``kendalltau``/``pearsonr``/``r2`` × 100, ``mse`` raw, 2 decimals.  lightning's estimators have
  no intercept; scikit-learn's with ``fit_intercept=False`` solve the same problems.
* ``evaluation/few_shot_evaluator.py`` — single-label: the test folds of ``StratifiedKFold(n_splits
  = ceil(n / sample_size))`` are the training samples (plain ``LinearSVC``, C = 1), at most
  ``iterations`` of them; multi-label: ``sample_size`` positives per label drawn with
  ``np.random.seed(42 + k)``; the mean of the per-iteration (rounded) metrics.
* ``IREvaluator`` — proximity and search: score ``-||q - c||₂`` (not rounded) for the qrel
  candidates, graded qrels into ``pytrec_eval``, mean × 100, 2 decimals.
* ``reviewer_matching.py`` — a reviewer's score is the mean of the top-3 cosine similarities
  between the query paper and the reviewer's papers.

Data are the Hugging Face exports as JSONL under ``data_dir`` (see :func:`split_path`).  The
aggregates of the paper (:data:`IN_TRAIN_TASKS`, :func:`aggregates`) are computed over the tasks
that ran, and say how many that was.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sdr.jsonio import InputError, iter_lines, read_jsonl, record_id
from sdr.evaluate.embeddings import MissingEmbeddings
from sdr.evaluate.scidocs import load_embeddings, trec_metrics

TASK_TYPES = ("classification", "regression", "proximity", "adhoc_search")
FORMAT_OF_TYPE = {"classification": "CLF", "regression": "RGN", "proximity": "PRX", "adhoc_search": "QRY"}
RANDOM_STATE = 42
CLASSIFICATION_C_GRID = np.logspace(-2, 2, 5)
REGRESSION_C_GRID = np.logspace(-4, 2, 7)

IN_TRAIN_TASKS = frozenset({
    "Fields of study", "MeSH", "Citation Count", "Publication Year", "Search",
    "Same Author Detection", "Highly Influential Citations",
})
"""Evaluation tasks whose training split SciRepEval trains on (the paper's Table 1: the large
FoS, MeSH, citation-count, publication-year, search, same-author and influential-citation tasks;
citation-prediction triplets are training-only).  Every other non-SciDocs task is Out-of-Train."""

SCIDOCS_TASKS = ("SciDocs MAG", "SciDocs MeSH", "SciDocs Cite", "SciDocs CoView", "SciDocs CoCite",
                 "SciDocs CoRead")
"""Reported as one "SciDocs" aggregate: the mean of their 10 numbers (MAG/MeSH F1, MAP and nDCG of
the four proximity tasks), which reproduces e.g. SPECTER's 89.1 in SciRepEval's Table 2."""


# ------------------------------------------------------------------------------------ registry


@dataclass
class Task:
    """One line of ``scirepeval_tasks.jsonl``."""

    name: str
    type: str
    data: dict
    metrics: list[str]
    few_shot: list[dict] = field(default_factory=list)
    multi_label: bool = False
    raw: dict = field(default_factory=dict)

    @property
    def format(self) -> str:
        return FORMAT_OF_TYPE[self.type]

    @property
    def group(self) -> str:
        """``in_train``, ``out_of_train`` or ``scidocs`` (the paper's aggregates)."""
        if self.name in SCIDOCS_TASKS:
            return "scidocs"
        return "in_train" if self.name in IN_TRAIN_TASKS else "out_of_train"


def read_registry(path: str | Path) -> list[Task]:
    """Parse ``scirepeval_tasks.jsonl``; a malformed line raises ``ValueError`` with file and line."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: SciRepEval task registry not found")
    tasks: list[Task] = []
    for line_number, record in read_jsonl(path, "SciRepEval task registry (one task per line)", allow_empty=True):
        where = f"{path}:{line_number}"
        for key in ("name", "type", "data", "metrics"):
            if key not in record:
                raise ValueError(f"{where}: task lacks {key!r} (expected name, type, data, metrics)")
        if record["type"] not in TASK_TYPES:
            raise ValueError(f"{where}: task {record['name']!r} has type {record['type']!r}; "
                             f"expected one of {TASK_TYPES}")
        data = record["data"]
        if not isinstance(data, dict) or not data.get("test") and not data.get("meta"):
            raise ValueError(f"{where}: task {record['name']!r}: 'data' needs 'test' (or 'meta')")
        if not isinstance(record["metrics"], list) or not record["metrics"]:
            raise ValueError(f"{where}: task {record['name']!r}: 'metrics' must be a non-empty list")
        for run in record.get("few_shot", []):
            if not {"sample_size", "iterations"} <= set(run):
                raise ValueError(f"{where}: task {record['name']!r}: few_shot entries need "
                                 f"'sample_size' and 'iterations'")
        tasks.append(Task(record["name"], record["type"], data, list(record["metrics"]),
                          list(record.get("few_shot", [])), bool(record.get("multi_label", False)),
                          record))
    if not tasks:
        raise ValueError(f"{path}: no tasks in registry")
    return tasks


# ---------------------------------------------------------------------------------------- data


def dataset_dir(data_dir: str | Path, spec: dict | str) -> Path:
    """Folder of one HF dataset config: ``data_dir/<repo name without owner>/<config>``.

    ``{"name": "allenai/scirepeval_test", "config": "fos"}`` → ``data_dir/scirepeval_test/fos``;
    a plain string (the official local-folder form) is taken relative to ``data_dir``.
    """
    if isinstance(spec, str):
        return Path(data_dir) / spec
    return Path(data_dir) / spec["name"].split("/")[-1] / spec["config"]


def split_path(folder: Path, split: str) -> Path | None:
    """``<split>.jsonl`` (an HF split exported with ``Dataset.to_json``) or the official local files
    (``train.csv``/``test.csv``, ``test_qrel.jsonl``, ``reviewer_metadata.jsonl``)."""
    candidates = [folder / f"{split}.jsonl", folder / f"{split}.csv"]
    if split == "test":
        candidates.append(folder / "test_qrel.jsonl")
    if split == "metadata":
        candidates.append(folder / "reviewer_metadata.jsonl")
    return next((p for p in candidates if p.exists()), None)


def read_rows(path: Path) -> list[dict]:
    """Rows of a JSONL or CSV split; a malformed JSONL line names file and line."""
    if path.suffix == ".csv":  # strict UTF-8 lines, a byte-order mark dropped (not part of the first column)
        return list(csv.DictReader(line for _, line in iter_lines(path, "a SciRepEval CSV split")))
    return [record for _, record in read_jsonl(path, "one JSON object per row", allow_empty=True)]


def _require(row: dict, keys: Iterable[str], path: Path, index: int) -> None:
    absent = [k for k in keys if k not in row]
    if absent:
        raise ValueError(f"{path}: row {index + 1} lacks {absent}; has {sorted(row)}")


def _paper_id(row: dict, path: Path, index: int) -> str:
    for key in ("paper_id", "doc_id", "corpus_id"):
        if key in row:
            return str(row[key])
    raise ValueError(f"{path}: row {index + 1} has no 'paper_id' (or 'doc_id'/'corpus_id'); has {sorted(row)}")


def read_labelled(path: Path, multi_label: bool, n_labels: int | None = None) -> list[tuple[str, object]]:
    """``(paper_id, label)`` rows.  Multi-label: ``label`` is a multi-hot list (the official
    format, indexed as ``y[:, i]``) or ``labels`` a list of label indices (the training format)."""
    rows = read_rows(path)
    out = []
    for index, row in enumerate(rows):
        pid = _paper_id(row, path, index)
        if multi_label and "label" not in row and "labels" in row:
            if n_labels is None:
                raise ValueError(f"{path}: label-index lists need the number of labels")
            vector = [0] * n_labels
            for label in row["labels"]:
                vector[int(label)] = 1
            out.append((pid, vector))
            continue
        _require(row, ["label"], path, index)
        out.append((pid, row["label"]))
    if not out:
        raise ValueError(f"{path}: no rows")
    return out


def read_qrels_rows(path: Path) -> dict[str, dict[str, int]]:
    """``{"query_id", "cand_id", "score"}`` rows → ``{query: {candidate: graded relevance}}``."""
    qrels: dict[str, dict[str, int]] = {}
    for index, row in enumerate(read_rows(path)):
        _require(row, ["query_id", "cand_id", "score"], path, index)
        score = row["score"]
        try:  # a whole number (JSON or CSV text); a boolean or 2.7 would be scored as 1 or 2 silently
            value = float(score) if not isinstance(score, bool) else math.nan
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value) or value != int(value):
            raise InputError(f"{path}: row {index + 1}: score is {json.dumps(score)[:40]}; expected a whole-number "
                             f"relevance grade")
        where = f"{path}: row {index + 1}"
        query, candidate = record_id(row["query_id"], "query_id", where), record_id(row["cand_id"], "cand_id", where)
        grades = qrels.setdefault(query, {})
        if candidate in grades:
            raise InputError(f"{where}: query {query!r}, candidate {candidate!r} graded again; expected each pair once")
        grades[candidate] = int(value)
    if not qrels:
        raise ValueError(f"{path}: no qrels")
    return qrels


def task_documents(data_dir: str | Path, task: Task) -> list[dict]:
    """Documents a model must embed for ``task`` (``data.meta``, split ``evaluation``), as
    ``{"doc_id", "title", "abstract", …}``; search queries come as ``{"doc_id", "title": query}``
    (``SimpleDataset`` / ``IRDataset``).  Reviewer papers are included for reviewer matching."""
    folder = dataset_dir(data_dir, task.data["meta"])
    path = split_path(folder, "evaluation")
    if path is None:
        raise FileNotFoundError(f"{folder}/evaluation.jsonl: metadata of task {task.name!r} not found")
    documents: dict[str, dict] = {}
    for index, row in enumerate(read_rows(path)):
        if "candidates" in row:  # IRDataset format
            query = row["query"]
            query_doc = {"title": query, "doc_id": row["doc_id"]} if isinstance(query, str) else query
            for doc in [query_doc, *row["candidates"]]:
                documents.setdefault(str(doc["doc_id"]), dict(doc, doc_id=str(doc["doc_id"])))
        else:
            _require(row, ["doc_id"], path, index)
            documents.setdefault(str(row["doc_id"]), dict(row, doc_id=str(row["doc_id"])))
    return list(documents.values())


# -------------------------------------------------------------------------------- supervised


def _metric(name: str, y_true, y_pred) -> float:
    """``SupervisedEvaluator.calc_metrics``: ``f1_macro`` → ``f1_score(average="macro")`` etc., × 100."""
    from scipy.stats import kendalltau, pearsonr
    from sklearn.metrics import accuracy_score, f1_score, mean_squared_error, precision_score, r2_score, recall_score

    classification = {"f1": f1_score, "accuracy": accuracy_score, "precision": precision_score,
                      "recall": recall_score}
    regression = {"mse": mean_squared_error, "r2": r2_score, "pearsonr": pearsonr, "kendalltau": kendalltau}
    if name in regression:
        result = regression[name](y_true, y_pred)
        result = result[0] if isinstance(result, tuple) or hasattr(result, "statistic") else result
        result = float(result)
        return result if name == "mse" else float(np.round(100 * result, 2))
    head, _, average = name.partition("_")
    if head not in classification:
        raise ValueError(f"unknown SciRepEval metric {name!r}; expected f1[_avg], accuracy, precision, "
                         f"recall, mse, r2, pearsonr, kendalltau")
    kwargs = {"average": average} if average else {}
    if head != "accuracy":
        # A label with no true and no predicted test paper (a multi-label column absent from a small test split) has
        # no F-score, precision or recall. SciRepEval calls sklearn with its default zero_division ("warn"), which
        # scores such a label 0 and warns; 0 is set here on purpose, so the scores stay the official evaluator's
        # (evaluate_supervised counts those labels in "labels_without_test_or_prediction").
        kwargs["zero_division"] = 0.0
    return float(np.round(100 * classification[head](y_true, y_pred, **kwargs), 2))


def _fit_predict_classifier(x_train, y_train, x_test, multi_label: bool, cv: int = 3, n_jobs: int = 1):
    """``SupervisedEvaluator.classify``."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import LinearSVC

    from sdr.evaluate.scidocs import _quiet_convergence

    if multi_label:
        # lightning LinearSVC(max_iter=10000): its default loss is the (plain) hinge.
        estimator = LinearSVC(loss="hinge", fit_intercept=False, dual=True, max_iter=10000,
                              random_state=RANDOM_STATE)
        model = OneVsRestClassifier(GridSearchCV(estimator, cv=cv, param_grid={"C": CLASSIFICATION_C_GRID},
                                                 n_jobs=n_jobs), n_jobs=1)
    else:
        estimator = LinearSVC(loss="squared_hinge", fit_intercept=False, dual=True, random_state=RANDOM_STATE)
        model = (GridSearchCV(estimator, cv=cv, param_grid={"C": CLASSIFICATION_C_GRID}, n_jobs=n_jobs)
                 if cv else estimator)
    with _quiet_convergence():
        model.fit(x_train, y_train)
    return model.predict(x_test)


def _fit_predict_regressor(x_train, y_train, x_test, cv: int = 3, n_jobs: int = 1):
    """``SupervisedEvaluator.regression``: lightning ``LinearSVR`` defaults (ε = 0, L1 loss)."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import LinearSVR

    from sdr.evaluate.scidocs import _quiet_convergence

    estimator = LinearSVR(epsilon=0.0, loss="epsilon_insensitive", fit_intercept=False, dual=True,
                          random_state=RANDOM_STATE)
    search = GridSearchCV(estimator, cv=cv, param_grid={"C": REGRESSION_C_GRID}, n_jobs=n_jobs)
    with _quiet_convergence():
        search.fit(x_train, y_train)
    return search.predict(x_test)


def _supervised_arrays(rows, embeddings, missing: MissingEmbeddings, regression: bool):
    found = set(missing.check([pid for pid, _ in rows], embeddings))
    kept = [(pid, label) for pid, label in rows if pid in found]
    if not kept:
        return np.zeros((0, 0)), np.zeros(0)
    x = np.stack([np.asarray(embeddings[pid], dtype=np.float64) for pid, _ in kept])
    y = np.array([label for _, label in kept], dtype=np.float64 if regression else None)
    return x, y


def few_shot_classification(x_train, y_train, x_test, y_test, metrics, sample_size: int, iterations: int,
                            multi_label: bool, n_jobs: int = 1) -> dict:
    """``FewShotEvaluator``: mean of the per-iteration metrics (and how many iterations ran)."""
    from sklearn.model_selection import StratifiedKFold

    per_iteration: list[dict[str, float]] = []
    short_labels = 0
    if multi_label:
        for k in range(iterations):
            # np.random.seed(42 + k) then np.random.choice: the same stream as RandomState(42 + k).
            state = np.random.RandomState(RANDOM_STATE + k)
            chosen: set[int] = set()
            for label in range(y_train.shape[1]):
                positives = np.where(y_train[:, label] == 1)[0]
                if len(positives) < sample_size:
                    short_labels += 1  # the official code stops here (choice without replacement)
                take = min(sample_size, len(positives))
                if take:
                    chosen.update(state.choice(positives, take, replace=False).tolist())
            index = list(chosen)  # req_idx = list(idx_set), as the official code orders it
            predictions = _fit_predict_classifier(x_train[index], y_train[index], x_test, True, n_jobs=n_jobs)
            per_iteration.append({m: _metric(m, y_test, predictions) for m in metrics})
    else:
        folds = StratifiedKFold(n_splits=math.ceil(x_train.shape[0] / sample_size))
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "least populated class" for rare classes
            splits = list(folds.split(x_train, y_train))
        for _, sample in splits[:iterations]:
            if len(np.unique(y_train[sample])) < 2:
                short_labels += 1
                continue
            predictions = _fit_predict_classifier(x_train[sample], y_train[sample], x_test, False, cv=0)
            per_iteration.append({m: _metric(m, y_test, predictions) for m in metrics})
    result = {m: float(np.mean([r[m] for r in per_iteration])) if per_iteration else float("nan")
              for m in metrics}
    return {"sample_size": sample_size, "iterations": len(per_iteration), "results": result,
            "skipped": short_labels}


def evaluate_supervised(data_dir, task: Task, embeddings, missing: MissingEmbeddings, few_shot: bool = True,
                        n_jobs: int = 1) -> dict:
    """Classification / regression of one task (complete data, then the registry's few-shot runs)."""
    folder = dataset_dir(data_dir, task.data["test"])
    paths = {split: split_path(folder, split) for split in ("train", "test")}
    for split, path in paths.items():
        if path is None:
            raise FileNotFoundError(f"{folder}/{split}.jsonl: {split} split of task {task.name!r} not found")
    regression = task.type == "regression"
    train_rows = read_labelled(paths["train"], task.multi_label)
    test_rows = read_labelled(paths["test"], task.multi_label)
    x_train, y_train = _supervised_arrays(train_rows, embeddings, missing, regression)
    x_test, y_test = _supervised_arrays(test_rows, embeddings, missing, regression)
    if len(x_train) == 0 or len(x_test) == 0:
        raise ValueError(f"task {task.name!r}: no train or test paper has an embedding")
    if regression:
        predictions = _fit_predict_regressor(x_train, y_train, x_test, n_jobs=n_jobs)
    else:
        predictions = _fit_predict_classifier(x_train, y_train, x_test, task.multi_label, n_jobs=n_jobs)
    result = {"metrics": {m: _metric(m, y_test, predictions) for m in task.metrics},
              "n_train": int(len(x_train)), "n_test": int(len(x_test))}
    if task.multi_label:  # labels the macro average scores 0 because no test paper has them and none was predicted
        result["labels_without_test_or_prediction"] = int(
            ((np.asarray(y_test).sum(axis=0) == 0) & (np.asarray(predictions).sum(axis=0) == 0)).sum())
    if few_shot and task.few_shot and not regression:
        result["few_shot"] = [
            few_shot_classification(x_train, y_train, x_test, y_test, task.metrics, run["sample_size"],
                                    run["iterations"], task.multi_label, n_jobs)
            for run in task.few_shot
        ]
    return result


# ------------------------------------------------------------------------------------ ranking


def l2_scores(qrels: Mapping[str, Mapping[str, int]], embeddings, missing: MissingEmbeddings) -> dict:
    """``IREvaluator.retrieval``: ``-||q - c||₂`` (unrounded) for every qrel candidate with an embedding."""
    from sdr.evaluate.scidocs import l2_run

    return l2_run(qrels, embeddings, missing, decimals=None)


def reviewer_scores(qrels, embeddings, reviewer_papers: Mapping[str, list[str]],
                    missing: MissingEmbeddings) -> dict[str, dict[str, float]]:
    """``ReviewerMatchingEvaluator.retrieval``: mean of a reviewer's top-3 cosine similarities."""
    run: dict[str, dict[str, float]] = {}
    for query, candidates in qrels.items():
        if not missing.check([query], embeddings):
            continue
        q = np.asarray(embeddings[query], dtype=np.float64)
        q = q / (np.linalg.norm(q) or 1.0)
        row = {}
        for reviewer in candidates:
            if reviewer not in reviewer_papers:
                continue
            papers = missing.check(reviewer_papers[reviewer], embeddings)
            if not papers:
                continue
            matrix = np.stack([np.asarray(embeddings[p], dtype=np.float64) for p in papers])
            norms = np.linalg.norm(matrix, axis=1)
            norms[norms == 0] = 1.0  # sklearn's cosine_similarity leaves zero vectors at 0
            similarities = np.sort(matrix @ q / norms)[::-1]
            row[reviewer] = float(np.mean(similarities[:3]))
        if row:
            run[query] = row
    return run


def evaluate_ranking(data_dir, task: Task, embeddings, missing: MissingEmbeddings) -> dict:
    """Proximity, ad-hoc search or reviewer matching of one task: ``pytrec_eval`` metrics × 100."""
    folder = dataset_dir(data_dir, task.data["test"])
    path = split_path(folder, "test")
    if path is None:
        raise FileNotFoundError(f"{folder}/test.jsonl: qrels of task {task.name!r} not found")
    qrels = read_qrels_rows(path)
    if "reviewers" in task.data or "hf_reviewers" in task.data:
        spec = task.data.get("reviewers") or task.data.get("hf_reviewers")
        reviewers_folder = dataset_dir(data_dir, spec)
        reviewers_path = split_path(reviewers_folder, "metadata")
        if reviewers_path is None:
            raise FileNotFoundError(f"{reviewers_folder}/metadata.jsonl: reviewers of {task.name!r} not found")
        reviewer_papers = {}
        for index, row in enumerate(read_rows(reviewers_path)):
            _require(row, ["r_id", "papers"], reviewers_path, index)
            reviewer_papers[str(row["r_id"])] = [str(p) for p in row["papers"]]
        run = reviewer_scores(qrels, embeddings, reviewer_papers, missing)
    else:
        run = l2_scores(qrels, embeddings, missing)
    return {"metrics": trec_metrics(qrels, run, tuple(task.metrics)), "n_queries": len(run)}


# -------------------------------------------------------------------------------- aggregates


def task_score(result: Mapping) -> float:
    """One number per task: the mean of its registry metrics on the complete data (e.g. the
    reviewer task's P@5 and P@10); few-shot runs are reported, not averaged in."""
    return float(np.mean([float(v) for v in result["metrics"].values()]))


def aggregates(results: Mapping[str, Mapping], tasks: Iterable[Task]) -> dict:
    """The paper's In-Train / Out-of-Train / SciDocs averages, an overall average and per format.

    ``scidocs`` is the mean of every SciDocs metric value (10 when complete); ``all`` averages the
    other tasks' scores together with those SciDocs values (BENCHMARKING.md's "Average": for
    SPECTER, 7 in-train tasks at 54.3, 11 out-of-train at 57.4 and 10 SciDocs values at 89.1 give
    67.9).  Each entry says how many tasks it covers, so a partial run is not mistaken for a full one.
    """
    by_name = {task.name: task for task in tasks}
    groups: dict[str, list[float]] = {"in_train": [], "out_of_train": [], "scidocs": []}
    formats: dict[str, list[float]] = {}
    counts = {"in_train": 0, "out_of_train": 0, "scidocs": 0}
    for name, result in results.items():
        task = by_name[name]
        if task.group == "scidocs":
            groups["scidocs"] += [float(v) for v in result["metrics"].values()]
            counts["scidocs"] += 1
            continue
        score = task_score(result)
        groups[task.group].append(score)
        counts[task.group] += 1
        formats.setdefault(task.format, []).append(score)
    mean = lambda values: float(np.round(np.mean(values), 2)) if values else None  # noqa: E731
    everything = groups["in_train"] + groups["out_of_train"] + groups["scidocs"]
    return {
        "in_train": mean(groups["in_train"]),
        "out_of_train": mean(groups["out_of_train"]),
        "scidocs": mean(groups["scidocs"]),
        "all": mean(everything),
        "formats": {name: mean(values) for name, values in sorted(formats.items())},
        "tasks_counted": counts,
    }


# --------------------------------------------------------------------------------------- all


def evaluate(
    data_dir: str | Path,
    embeddings: Mapping[str, np.ndarray] | str | Path,
    tasks_config: str | Path | None = None,
    tasks: Iterable[str] | None = None,
    few_shot: bool = True,
    n_jobs: int = 1,
    progress: bool = True,
) -> dict:
    """Every registry task whose data is under ``data_dir``.

    ``tasks_config`` defaults to ``data_dir/scirepeval_tasks.jsonl``.  Returns ``{"tasks": {name:
    {"type", "group", "metrics", ["few_shot"], …}}, "aggregates": {…}, "skipped_tasks": {name:
    reason}, "missing_embeddings": {"count", "examples"}}``.
    """
    from tqdm.auto import tqdm

    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"{data_dir}: SciRepEval data directory not found")
    registry = read_registry(tasks_config or data_dir / "scirepeval_tasks.jsonl")
    names = {task.name for task in registry}
    if tasks is not None:
        tasks = list(tasks)
        unknown = [name for name in tasks if name not in names]
        if unknown:
            raise ValueError(f"unknown SciRepEval tasks {unknown}; the registry has {sorted(names)}")
        registry = [task for task in registry if task.name in tasks]
    embeddings = load_embeddings(embeddings)
    missing = MissingEmbeddings("scirepeval")
    results: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    for task in tqdm(registry, desc="SciRepEval tasks", disable=not progress):
        folder = dataset_dir(data_dir, task.data["test"])
        if split_path(folder, "test") is None:
            skipped[task.name] = f"no test data under {folder}"
            continue
        if task.type in ("classification", "regression"):
            result = evaluate_supervised(data_dir, task, embeddings, missing, few_shot, n_jobs)
        else:
            result = evaluate_ranking(data_dir, task, embeddings, missing)
        results[task.name] = {"type": task.type, "group": task.group, **result}
    if skipped:
        print(f"scirepeval: {len(skipped)} tasks have no data here and were skipped: "
              f"{', '.join(sorted(skipped))}", file=sys.stderr)
    missing.warn()
    return {"tasks": results, "aggregates": aggregates(results, registry), "skipped_tasks": skipped,
            "missing_embeddings": missing.report()}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``sdr evaluate scirepeval``."""
    parser.add_argument("--data-dir", required=True, type=Path,
                        help="folder with the HF exports (<dataset>/<config>/<split>.jsonl)")
    parser.add_argument("--embeddings", required=True, type=Path, help="embeddings JSONL")
    parser.add_argument("--tasks-config", type=Path, default=None,
                        help="task registry (default: DATA_DIR/scirepeval_tasks.jsonl)")
    parser.add_argument("--task", action="append", dest="tasks", default=None,
                        help="evaluate only this task (repeatable)")
    parser.add_argument("--no-few-shot", action="store_true", help="skip the few-shot runs")
    parser.add_argument("--n-jobs", type=int, default=1)


def run(args: argparse.Namespace) -> dict:
    """Run ``sdr evaluate scirepeval`` and return its JSON object."""
    return evaluate(args.data_dir, args.embeddings, tasks_config=args.tasks_config, tasks=args.tasks,
                    few_shot=not args.no_few_shot, n_jobs=args.n_jobs, progress=sys.stderr.isatty())
