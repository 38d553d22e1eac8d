"""The sequential sentence classifier behind the default splitter: a two-stage stack of logistic regressions
over TF-IDF features (:class:`SentenceClassifier`), stored as a ``.npz`` of arrays and a JSON header (loading one
never runs code), trained on CSAbstruct (:func:`read_csabstruct`, :func:`train_classifier`) and cached
(:func:`default_model_path`, :func:`load_or_train`).

It changes with the model, its features and its file format.
"""
from __future__ import annotations

import json
import os
import sys
import zipfile
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import joblib
import numpy as np

from sdr.facets.labels import CSABSTRUCT_LABELS
from sdr.jsonio import InputError, parse_json, read_jsonl, require_file


MODEL_FILE = "csabstruct-stacked-lr.npz"


def _position_features(n_sentences: int) -> np.ndarray:
    rows = []
    for i in range(n_sentences):
        relative = i / max(n_sentences - 1, 1)
        rows.append([relative, relative ** 2, float(i == 0), float(i == n_sentences - 1), float(i == 1),
                     float(i == n_sentences - 2), min(n_sentences, 15) / 15]
                    + [float(int(relative * 5) == b) for b in range(6)])
    return np.asarray(rows, dtype=np.float64).reshape(n_sentences, 13)


def _shift_within(matrix, groups: np.ndarray, offset: int):
    """Row i ← row i+offset when both rows belong to the same abstract, else zeros (sparse or dense)."""
    import scipy.sparse as sp

    n = matrix.shape[0]
    rows = np.arange(n)
    source = rows + offset
    valid = (source >= 0) & (source < n)
    valid[valid] &= groups[source[valid]] == groups[rows[valid]]
    shift = sp.csr_matrix((np.ones(valid.sum()), (rows[valid], source[valid])), shape=(n, n))
    return shift @ matrix


def _fit_first_stage(features, codes, C: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, max_iter=2000).fit(features, codes)


@dataclass
class SentenceClassifier:
    """Two-stage stacked logistic regression over sentence sequences (see the module docstring).

    Args:
        C: inverse regularisation of the first (TF-IDF) stage.
        C_stack: inverse regularisation of the second (label-sequence) stage.
        window: how many neighbours' first-stage probabilities the second stage sees on each side.
        folds: folds of the out-of-fold first-stage probabilities the second stage trains on.
        neighbour_weight: scale of the neighbouring sentences' TF-IDF in the first stage.
    """

    C: float = 4.0
    C_stack: float = 1.0
    window: int = 3
    folds: int = 5
    neighbour_weight: float = 0.5
    seed: int = 0
    labels: tuple[str, ...] = ()
    trained_on: dict = field(default_factory=dict)
    _vectorizer: object = None
    _first: object = None
    _second: object = None

    # -- features
    def _first_features(self, abstracts: Sequence[Sequence[str]]):
        import scipy.sparse as sp

        sentences = [s for abstract in abstracts for s in abstract]
        groups = np.repeat(np.arange(len(abstracts)), [len(a) for a in abstracts])
        tfidf = self._vectorizer.transform(sentences)
        position = sp.csr_matrix(np.vstack([_position_features(len(a)) for a in abstracts if len(a)])
                                 if sentences else np.zeros((0, 13)))
        parts = [tfidf, position,
                 self.neighbour_weight * _shift_within(tfidf, groups, -1),
                 self.neighbour_weight * _shift_within(tfidf, groups, 1)]
        return sp.hstack(parts).tocsr(), groups

    def _second_features(self, probabilities: np.ndarray, abstracts: Sequence[Sequence[str]],
                         groups: np.ndarray) -> np.ndarray:
        import scipy.sparse as sp

        dense = sp.csr_matrix(probabilities)
        shifted = [probabilities] + [_shift_within(dense, groups, d).toarray()
                                     for d in range(-self.window, self.window + 1) if d]
        position = np.vstack([_position_features(len(a)) for a in abstracts if len(a)])
        return np.hstack([np.log(np.hstack(shifted) + 1e-4), position])

    # -- training and prediction
    def fit(self, abstracts: Sequence[Sequence[str]], labels: Sequence[Sequence[str]]) -> "SentenceClassifier":
        """Train on abstracts (lists of sentences) with one label per sentence."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import GroupKFold

        if len(abstracts) != len(labels):
            raise ValueError(f"{len(abstracts)} abstracts but {len(labels)} label lists")
        for k, (a, y) in enumerate(zip(abstracts, labels)):
            if len(a) != len(y):
                raise ValueError(f"abstract {k}: {len(a)} sentences but {len(y)} labels")
        flat_labels = [label for y in labels for label in y]
        self.labels = tuple(sorted(set(flat_labels), key=lambda x: (CSABSTRUCT_LABELS + (x,)).index(x)))
        if len(self.labels) < 2:
            raise ValueError(f"need at least 2 sentence labels to train, got {self.labels}")
        codes = np.array([self.labels.index(x) for x in flat_labels])
        sentences = [s for a in abstracts for s in a]
        min_df = 2 if len(sentences) >= 1000 else 1  # a tiny fixture keeps every word
        self._vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=min_df, sublinear_tf=True).fit(sentences)
        features, groups = self._first_features(abstracts)
        folds = min(self.folds, len(abstracts))
        out_of_fold = np.zeros((len(codes), len(self.labels)))
        splits = list(GroupKFold(folds).split(features, codes, groups))
        # the fold models and the full first stage are independent fits: run them on every core (the same
        # models as one after another)
        fits = [np.arange(len(codes))] + [train_rows for train_rows, _ in splits]
        models = joblib.Parallel(n_jobs=min(len(fits), joblib.cpu_count()))(
            joblib.delayed(_fit_first_stage)(features[rows], codes[rows], self.C) for rows in fits)
        self._first = models[0]
        for model, (_, held_rows) in zip(models[1:], splits):
            # a fold may lack a rare label: put its columns where they belong
            out_of_fold[np.ix_(held_rows, model.classes_)] = model.predict_proba(features[held_rows])
        self._second = LogisticRegression(C=self.C_stack, max_iter=3000).fit(
            self._second_features(out_of_fold, abstracts, groups), codes)
        self.trained_on = {"abstracts": len(abstracts), "sentences": len(codes),
                           "label_counts": dict(Counter(flat_labels))}
        return self

    def predict_proba(self, abstracts: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Per abstract, an array [sentences, labels] of probabilities (columns in ``self.labels`` order)."""
        if self._second is None:
            raise ValueError("SentenceClassifier: call fit() or load() first")
        lengths = [len(a) for a in abstracts]
        if sum(lengths) == 0:
            return [np.zeros((0, len(self.labels))) for _ in abstracts]
        features, groups = self._first_features(abstracts)
        first = np.zeros((features.shape[0], len(self.labels)))
        first[:, self._first.classes_] = self._first.predict_proba(features)
        second = np.zeros_like(first)
        second[:, self._second.classes_] = self._second.predict_proba(
            self._second_features(first, abstracts, groups))
        return np.split(second, np.cumsum(lengths)[:-1])

    def predict(self, abstracts: Sequence[Sequence[str]]) -> list[list[str]]:
        """Per abstract, one label per sentence."""
        return [[self.labels[i] for i in p.argmax(axis=1)] for p in self.predict_proba(abstracts)]

    # -- persistence
    def save(self, path: str | Path) -> Path:
        """Write the model as arrays and a JSON header in one ``.npz`` (numpy's zip of ``.npy`` arrays, no
        pickle), so loading it can never run code; the write is atomic (a killed write leaves no half model)."""
        path = Path(path)
        if self._second is None:
            raise ValueError("SentenceClassifier.save: the model is not trained")
        vectorizer = self._vectorizer
        header = {
            "format": MODEL_FORMAT, "version": MODEL_VERSION,
            "options": {"C": self.C, "C_stack": self.C_stack, "window": self.window, "folds": self.folds,
                        "neighbour_weight": self.neighbour_weight, "seed": self.seed},
            "labels": list(self.labels), "trained_on": self.trained_on,
            "vectorizer": {"ngram_range": list(vectorizer.ngram_range), "min_df": vectorizer.min_df,
                           "sublinear_tf": vectorizer.sublinear_tf},
            "vocabulary": sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.get),
        }
        arrays = {
            "header": np.frombuffer(json.dumps(header, ensure_ascii=False).encode("utf-8"), dtype=np.uint8),
            "idf": np.asarray(vectorizer.idf_, dtype=np.float64),
        }
        for stage, model in (("first", self._first), ("second", self._second)):
            arrays[f"{stage}_coef"] = np.asarray(model.coef_, dtype=np.float64)
            arrays[f"{stage}_intercept"] = np.asarray(model.intercept_, dtype=np.float64)
            arrays[f"{stage}_classes"] = np.asarray(model.classes_, dtype=np.int64)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.partial")
        try:
            with temporary.open("wb") as handle:  # a handle: numpy adds no ".npz" to the name
                np.savez_compressed(handle, **arrays)
            temporary.replace(path)
        finally:
            temporary.unlink(missing_ok=True)
        return path

    @staticmethod
    def load(path: str | Path) -> "SentenceClassifier":
        """Load a model written by :meth:`save`, checked before use: a pickle (such as the ``.joblib`` files
        of earlier versions) is refused without being opened, since unpickling runs code; the header, the
        array shapes and the values are verified. Raises :class:`~sdr.jsonio.InputError` naming the file."""
        return _load_classifier(require_file(path, "a facet classifier saved by `sdr facets train` (.npz)"))


MODEL_FORMAT = "sdr.facets.SentenceClassifier"
MODEL_VERSION = 1
_ZIP_MAGIC = b"PK\x03\x04"
_ARRAYS = ("header", "idf", "first_coef", "first_intercept", "first_classes", "second_coef", "second_intercept",
           "second_classes")


def _load_classifier(path: Path) -> SentenceClassifier:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    expected = "a facet classifier written by `sdr facets train` (.npz)"
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic != _ZIP_MAGIC:
        kind = "a pickle (like the .joblib models of earlier versions)" if magic[:1] == b"\x80" else \
            f"not a .npz (it starts with {magic!r})"
        raise InputError(f"{path}: {kind}; expected {expected}. Pickles are never loaded, since loading one can "
                         f"run code: train the model again with `sdr facets train`")
    try:
        with np.load(path, allow_pickle=False) as bundle:
            absent = [name for name in _ARRAYS if name not in bundle.files]
            if absent:
                raise InputError(f"{path}: the arrays {absent} are missing; expected {expected}")
            arrays = {name: bundle[name] for name in _ARRAYS}
    except InputError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as error:  # object arrays: refused
        raise InputError(f"{path}: unreadable ({str(error)[:120]}); expected {expected}") from None
    try:
        header = parse_json(arrays["header"].tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise InputError(f"{path}: the header is not UTF-8 JSON; expected {expected}") from None
    if not isinstance(header, dict) or header.get("format") != MODEL_FORMAT:
        raise InputError(f"{path}: the header names no {MODEL_FORMAT}; expected {expected}")
    if header.get("version") != MODEL_VERSION:
        raise InputError(f"{path}: format version {header.get('version')!r}; expected {MODEL_VERSION} (train the "
                         f"model again with `sdr facets train`)")
    try:
        labels = tuple(header["labels"])
        vocabulary = header["vocabulary"]
        options = dict(header["options"])
        settings = header["vectorizer"]
        trained_on = dict(header.get("trained_on") or {})
        classifier = SentenceClassifier(**options, labels=labels, trained_on=trained_on)
        vectorizer = TfidfVectorizer(ngram_range=tuple(settings["ngram_range"]), min_df=settings["min_df"],
                                     sublinear_tf=bool(settings["sublinear_tf"]), vocabulary=vocabulary)
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"{path}: the header lacks or mistypes {error}; expected {expected}") from None
    _verify_arrays(path, arrays, labels, vocabulary, classifier.window)
    vectorizer.idf_ = arrays["idf"]
    classifier._vectorizer = vectorizer
    stages = []
    for stage, C in (("first", classifier.C), ("second", classifier.C_stack)):
        model = LogisticRegression(C=C)
        model.coef_ = arrays[f"{stage}_coef"]
        model.intercept_ = arrays[f"{stage}_intercept"]
        model.classes_ = arrays[f"{stage}_classes"]
        model.n_features_in_ = model.coef_.shape[1]
        stages.append(model)
    classifier._first, classifier._second = stages
    return classifier


def _verify_arrays(path: Path, arrays: dict, labels: tuple, vocabulary, window: int) -> None:
    """Shapes, dtypes and values a trained :class:`SentenceClassifier` has; anything else is refused."""
    def fail(what: str):
        raise InputError(f"{path}: {what}; expected a facet classifier written by `sdr facets train` (.npz)")

    if not all(isinstance(label, str) for label in labels) or len(set(labels)) != len(labels) or len(labels) < 2:
        fail(f"labels {list(labels)[:6]}")
    if not isinstance(vocabulary, list) or not all(isinstance(term, str) for term in vocabulary) \
            or len(set(vocabulary)) != len(vocabulary) or not vocabulary:
        fail("the vocabulary is not a list of distinct strings")
    if not isinstance(window, int) or not 0 <= window <= 50:
        fail(f"window {window!r}")
    widths = {"first": 3 * len(vocabulary) + 13, "second": (2 * window + 1) * len(labels) + 13}
    for name, array in arrays.items():
        if name != "header" and (array.dtype.kind not in "fi" or not np.all(np.isfinite(array))):
            fail(f"array {name!r} is {array.dtype} with non-finite or non-numeric values")
    if arrays["idf"].shape != (len(vocabulary),):
        fail(f"idf has shape {arrays['idf'].shape} for {len(vocabulary)} terms")
    for stage, width in widths.items():
        classes = arrays[f"{stage}_classes"]
        rows = 1 if len(classes) == 2 else len(classes)
        if classes.ndim != 1 or len(classes) < 2 or len(set(classes.tolist())) != len(classes) \
                or classes.min() < 0 or classes.max() >= len(labels):
            fail(f"{stage}_classes {classes.tolist()[:8]} for {len(labels)} labels")
        if arrays[f"{stage}_coef"].shape != (rows, width) or arrays[f"{stage}_intercept"].shape != (rows,):
            fail(f"{stage} stage arrays of shapes {arrays[f'{stage}_coef'].shape}, "
                 f"{arrays[f'{stage}_intercept'].shape}; expected ({rows}, {width}), ({rows},)")


def read_csabstruct(path: str | Path) -> tuple[list[list[str]], list[list[str]]]:
    """A CSAbstruct split (``{"sentences", "labels", ...}`` per line) → (abstracts, labels)."""
    path = Path(path)
    abstracts, labels = [], []
    for line_number, record in read_jsonl(path, 'CSAbstruct {"sentences": [...], "labels": [...]} lines'):
        sentences, tags = record.get("sentences"), record.get("labels")
        if not isinstance(sentences, list) or not isinstance(tags, list) or len(sentences) != len(tags):
            raise ValueError(f"{path}:{line_number}: expected 'sentences' and 'labels' lists of equal length")
        unknown = sorted(set(map(str, tags)) - set(CSABSTRUCT_LABELS))
        if unknown:
            raise ValueError(f"{path}:{line_number}: unknown labels {unknown}; expected {CSABSTRUCT_LABELS}")
        abstracts.append([str(s) for s in sentences])
        labels.append([str(t) for t in tags])
    return abstracts, labels


def default_model_path() -> Path:
    """Where ``sdr facets train`` caches the classifier: ``$SDR_MODEL_CACHE/facets/<file>``, by default
    ``~/.cache/sdr-models/facets/<file>``. Not inside the data cache (``~/.cache/sdr``), whose mere existence
    switches ``use_real_data="auto"`` on (:func:`sdr.datasets.data_root`)."""
    configured = os.environ.get("SDR_MODEL_CACHE")
    root = Path(configured).expanduser() if configured else Path.home() / ".cache" / "sdr-models"
    return root / "facets" / MODEL_FILE


def train_classifier(data_dir: str | Path, out: str | Path | None = None, **options) -> tuple[SentenceClassifier, Path]:
    """Train on ``data_dir/train.jsonl`` (CSAbstruct) and save to ``out`` (default: the cache)."""
    abstracts, labels = read_csabstruct(Path(data_dir) / "train.jsonl")
    model = SentenceClassifier(**options).fit(abstracts, labels)
    model.trained_on["data"] = str(Path(data_dir) / "train.jsonl")
    path = model.save(out or default_model_path())
    return model, path


def load_or_train(data_dir: str | Path | None = None, path: str | Path | None = None) -> SentenceClassifier:
    """The cached classifier; trained first (and cached) from CSAbstruct when there is none yet."""
    path = Path(path) if path else default_model_path()
    if path.exists():
        return SentenceClassifier.load(path)
    if data_dir is None:
        from sdr import datasets

        data_dir = datasets.locate("csabstruct")
        if data_dir is None:
            raise FileNotFoundError(
                f"{path}: no facet classifier cached and no CSAbstruct found (set SDR_DATA or run "
                "`sdr data fetch csabstruct`, then `sdr facets train`)")
    print(f"facets: training the sentence classifier on {data_dir} (cached at {path})", file=sys.stderr)
    return train_classifier(data_dir, path)[0]
