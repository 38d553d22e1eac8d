"""Abstract → background / method / result: FLeW's textual splitting without an LLM.

FLeW (Dou et al., §3.2) splits every triplet abstract into three facets with an LLM (GPT-4o labels on 12k
papers, distilled into a LoRA-tuned Llama-3.1-8B) prompted with these definitions:

    1. Background: The context or previous knowledge related to the topic.
    2. Method: The methodology, approach, or contribution proposed in the paper.
    3. Result: The findings, outcomes, or conclusions derived from experiments or analysis.

No reader can run that offline, so the default :class:`Splitter` here is a sequential sentence classifier
trained on the real CSAbstruct train split (Cohan et al. 2019; 5 labels: background, objective, method,
result, other), whose labels are mapped onto FLeW's three facets:

* ``objective`` ("In this paper we propose …") is FLeW's "contribution proposed in the paper", so the
  default mapping sends it to **method**; ``objective_to="background"`` is the other reading (the
  objective as the paper's context). Both are scored in the FLeW chapter.
* ``other`` (copyright lines, URLs, "All rights reserved.") belongs to no facet, but FLeW's prompt wants
  every sentence categorised: it joins the facet of the sentence before it (the next one for a leading
  ``other``), so boilerplate never forms a facet of its own.

The classifier (:class:`SentenceClassifier`) is a two-stage stack: a logistic regression over TF-IDF
1–2-grams of the sentence and of its two neighbours plus its position in the abstract; then a second
logistic regression over the first stage's class probabilities of the sentence and of the three
sentences on each side (out-of-fold on the training split), which learns the label order of abstracts
(background → objective → method → result) the way a CRF's transitions would. It trains in about two
minutes on 2 CPU cores; ``sdr facets train`` trains it once and caches it (:func:`default_model_path`).

An LLM is one :class:`Splitter` away: :class:`PromptSplitter` sends FLeW's prompt (:data:`FLEW_PROMPT`) to
any ``generate(prompt) -> str`` callable and checks that the answer keeps every sentence verbatim.

CLI: ``sdr facets train [--data-dir CSABSTRUCT] [--out MODEL] [--force]`` and
``sdr facets split ABSTRACTS.jsonl --out SPLIT.jsonl [--model MODEL] [--skip-bad] [--force]`` (input lines
``{"paper_id", "title", "abstract"}``; output lines add ``background``, ``method``, ``result``). Models are
``.npz`` files of arrays and a JSON header (:meth:`SentenceClassifier.save`): loading one never runs code.
"""

from __future__ import annotations

import json
import os
import sys
import zipfile
import zlib
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import joblib
import numpy as np

from sdr.jsonio import InputError, SkippedLines, parse_json, read_jsonl, require_file

FACETS = ("background", "method", "result")
CSABSTRUCT_LABELS = ("background", "objective", "method", "result", "other")
OBJECTIVE_TARGETS = ("method", "background")
MODEL_FILE = "csabstruct-stacked-lr.npz"

FLEW_PROMPT = """Instruction: Here is the abstract of a scientific paper. Your task is to split the text into three \
distinct sections based on the content of sentences:
1.Background: The context or previous knowledge related to the topic.
2.Method: The methodology, approach, or contribution proposed in the paper.
3.Result: The findings, outcomes, or conclusions derived from experiments or analysis.
Please return the output in a structured JSON format, as shown below:
{"background":"xxx","method":"xxx","result":"xxx"}
Ensure that the original text remains intact in each section and that every sentence is categorized appropriately.
Input: "{abstract}"
Output:"""
"""FLeW's instruction (§3.2), verbatim up to line breaks; ``{abstract}`` is replaced by the abstract."""


# ------------------------------------------------------------------------------------ label mapping
def label_mapping(objective_to: str = "method") -> dict[str, str | None]:
    """CSAbstruct label → FLeW facet (``other`` → None: it takes a neighbour's facet)."""
    if objective_to not in OBJECTIVE_TARGETS:
        raise ValueError(f"objective_to must be one of {OBJECTIVE_TARGETS}, got {objective_to!r}")
    return {"background": "background", "objective": objective_to, "method": "method", "result": "result",
            "other": None}


def to_facets(labels: Sequence[str], objective_to: str = "method") -> list[str]:
    """One abstract's sentence labels (CSAbstruct's or already facets) → one facet per sentence.

    ``other`` joins the facet of the previous sentence (of the next one when it leads the abstract;
    background when the whole abstract is ``other``).
    """
    mapping = label_mapping(objective_to)
    unknown = sorted(set(labels) - set(mapping))
    if unknown:
        raise ValueError(f"unknown sentence labels {unknown}; expected {CSABSTRUCT_LABELS}")
    facets = [mapping[label] for label in labels]
    known = [f for f in facets if f is not None]
    previous = known[0] if known else "background"
    for i, facet in enumerate(facets):
        if facet is None:
            facets[i] = previous
        previous = facets[i]
    return facets


# ------------------------------------------------------------------------------------ sentences
class SentenceSegmenter:
    """pysbd (rule-based, offline) sentences as exact substrings of the text, in order."""

    def __init__(self):
        import pysbd

        self._segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)

    def split(self, text: str) -> list[str]:
        if not text or not text.strip():
            return []
        return [span.sent.strip() for span in self._segmenter.segment(text) if span.sent.strip()]


def join_facets(sentences: Sequence[str], facets: Sequence[str]) -> dict[str, str]:
    """``{facet: its sentences joined by one space}`` (every facet key present, possibly empty)."""
    if len(sentences) != len(facets):
        raise ValueError(f"{len(sentences)} sentences but {len(facets)} facet labels")
    return {facet: " ".join(s for s, f in zip(sentences, facets) if f == facet) for facet in FACETS}


# ------------------------------------------------------------------------------------ the classifier
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


# ------------------------------------------------------------------------------------ CSAbstruct
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


# ------------------------------------------------------------------------------------ scoring
def facet_scores(predicted: Sequence[Sequence[str]], gold: Sequence[Sequence[str]],
                 objective_to: str = "method") -> dict:
    """How well predicted CSAbstruct labels split abstracts into FLeW's facets.

    Both sides are mapped with :func:`to_facets`. The headline ``agreement`` is the share of the gold
    background / method / result sentences whose predicted facet is their own (gold ``objective`` and
    ``other`` sentences are left out, since their facet is a choice, not a label). Per-facet
    precision / recall / F1 are over the same sentences; ``accuracy_5`` is plain 5-label accuracy over all.
    """
    from sklearn.metrics import precision_recall_fscore_support

    kept_pred, kept_gold, exact, total = [], [], 0, 0
    for p, g in zip(predicted, gold, strict=True):
        if len(p) != len(g):
            raise ValueError(f"{len(p)} predicted labels for {len(g)} gold labels")
        p_facets = to_facets(p, objective_to)
        exact += sum(a == b for a, b in zip(p, g))
        total += len(g)
        for pf, gl in zip(p_facets, g):
            if gl in FACETS:
                kept_pred.append(pf)
                kept_gold.append(gl)
    if not kept_gold:
        raise ValueError("facet_scores: no gold background/method/result sentence")
    precision, recall, f1, support = precision_recall_fscore_support(kept_gold, kept_pred, labels=list(FACETS),
                                                                     zero_division=0)
    return {
        "agreement": float(np.mean([a == b for a, b in zip(kept_pred, kept_gold)])),
        "accuracy_5": exact / total if total else float("nan"),
        "sentences_scored": len(kept_gold),
        "per_facet": {facet: {"precision": float(precision[i]), "recall": float(recall[i]), "f1": float(f1[i]),
                              "support": int(support[i])} for i, facet in enumerate(FACETS)},
    }


def lexical_baseline(train_abstracts, train_labels, test_abstracts, C: float = 4.0) -> list[list[str]]:
    """The baseline the splitter must beat: TF-IDF 1–2-grams + sentence position, one logistic
    regression, each sentence on its own (no neighbours, no label sequence)."""
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    sentences = [s for a in train_abstracts for s in a]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2 if len(sentences) >= 1000 else 1,
                                 sublinear_tf=True).fit(sentences)

    def features(abstracts):
        flat = [s for a in abstracts for s in a]
        position = np.vstack([_position_features(len(a)) for a in abstracts if len(a)])
        return sp.hstack([vectorizer.transform(flat), sp.csr_matrix(position)]).tocsr()

    model = LogisticRegression(C=C, max_iter=2000).fit(features(train_abstracts),
                                                       [y for ys in train_labels for y in ys])
    flat = list(model.predict(features(test_abstracts)))
    out, start = [], 0
    for a in test_abstracts:
        out.append([str(x) for x in flat[start:start + len(a)]])
        start += len(a)
    return out


# ------------------------------------------------------------------------------------ splitters
class Splitter(ABC):
    """Splits abstracts into FLeW's facets. Subclasses say which facet each sentence belongs to."""

    def __init__(self, segmenter: SentenceSegmenter | None = None):
        self._segmenter = segmenter

    @property
    def segmenter(self) -> SentenceSegmenter:
        if self._segmenter is None:
            self._segmenter = SentenceSegmenter()
        return self._segmenter

    @abstractmethod
    def sentence_facets(self, abstracts: Sequence[Sequence[str]]) -> list[list[str]]:
        """Per abstract (a list of sentences), one facet of :data:`FACETS` per sentence."""

    def split_many(self, abstracts: Sequence[str]) -> list[dict[str, str]]:
        """Each abstract → ``{"background", "method", "result"}``: its sentences, verbatim, joined by
        single spaces in their original order (an empty string where a facet has no sentence)."""
        sentences = [self.segmenter.split(text) for text in abstracts]
        facets = self.sentence_facets(sentences)
        return [join_facets(s, f) for s, f in zip(sentences, facets)]

    def split(self, abstract: str) -> dict[str, str]:
        return self.split_many([abstract])[0]


class ClassifierSplitter(Splitter):
    """The default splitter: :class:`SentenceClassifier` labels mapped with :func:`to_facets`."""

    def __init__(self, classifier: SentenceClassifier, objective_to: str = "method",
                 segmenter: SentenceSegmenter | None = None):
        super().__init__(segmenter)
        label_mapping(objective_to)  # validates
        self.classifier = classifier
        self.objective_to = objective_to

    def sentence_facets(self, abstracts: Sequence[Sequence[str]]) -> list[list[str]]:
        return [to_facets(labels, self.objective_to) for labels in self.classifier.predict(abstracts)]


class PromptSplitter(Splitter):
    """FLeW's LLM route: :data:`FLEW_PROMPT` through ``generate(prompt) -> str`` (any LLM client).

    The answer must be the JSON object FLeW asks for; each sentence of the abstract is assigned to the
    facet whose text contains it. A sentence found in no facet is an error naming the abstract (an LLM
    that rewrites text breaks FLeW's "original text remains intact").
    """

    def __init__(self, generate: Callable[[str], str], segmenter: SentenceSegmenter | None = None):
        super().__init__(segmenter)
        self.generate = generate

    @staticmethod
    def prompt(abstract: str) -> str:
        return FLEW_PROMPT.replace("{abstract}", abstract)

    def sentence_facets(self, abstracts: Sequence[Sequence[str]]) -> list[list[str]]:
        results = []
        for k, sentences in enumerate(abstracts):
            answer = self.generate(self.prompt(" ".join(sentences)))
            start, end = answer.find("{"), answer.rfind("}")
            try:
                parsed = json.loads(answer[start:end + 1]) if start >= 0 else None
            except json.JSONDecodeError:
                parsed = None
            if not isinstance(parsed, dict) or not all(isinstance(parsed.get(f, ""), str) for f in FACETS):
                raise ValueError(f"abstract {k}: the LLM answer is not the JSON object "
                                 f'{{"background", "method", "result"}} FLeW asks for: {answer[:200]!r}')
            facets = []
            for sentence in sentences:
                owner = next((f for f in FACETS if sentence in parsed.get(f, "")), None)
                if owner is None:
                    raise ValueError(f"abstract {k}: the LLM answer lost or rewrote the sentence {sentence[:80]!r}")
                facets.append(owner)
            results.append(facets)
        return results


# ------------------------------------------------------------------------------------ JSONL files
ABSTRACTS_EXPECTED = "abstracts JSONL {'paper_id': str, 'title': str, 'abstract': str}"


def read_abstracts(path: str | Path, skipped: SkippedLines | None = None) -> list[dict]:
    """The records of an abstracts JSONL file ``{"paper_id", "title", "abstract"}`` (other fields kept).

    Strict: ``paper_id`` is a non-empty string (an integer is read as its digits; ``null`` is an error),
    ``abstract`` a string, ``title`` a string when present, each ``paper_id`` once, no NaN or infinite
    numbers anywhere. A bad line raises :class:`~sdr.jsonio.InputError` naming file and line, or, with
    ``skipped`` (``--skip-bad``), is handed to it and left out.
    """
    path = require_file(path, ABSTRACTS_EXPECTED)
    records: list[dict] = []
    first_line: dict[str, int] = {}

    def bad(reason: str, message: str) -> None:
        if skipped is None:
            raise InputError(message)
        skipped(reason, message)

    for line_number, record in read_jsonl(path, ABSTRACTS_EXPECTED, allow_empty=True, finite=True,
                                          on_error=skipped):
        where = f"{path}:{line_number}"
        paper_id, title = record.get("paper_id"), record.get("title")
        if isinstance(paper_id, int) and not isinstance(paper_id, bool):
            paper_id = str(paper_id)
        if not isinstance(paper_id, str) or not paper_id.strip() or not isinstance(record.get("abstract"), str) \
                or not (title is None or isinstance(title, str)):
            found = {key: type(record[key]).__name__ if record[key] is not None else "null"
                     for key in ("paper_id", "title", "abstract") if key in record}
            bad("missing_abstract" if not isinstance(record.get("abstract"), str) else "bad_fields",
                f"{where}: found {found or sorted(record)}; expected {{'paper_id': str, 'title': str, "
                f"'abstract': str}}")
            continue
        if paper_id in first_line:
            bad("duplicate_id", f"{where}: paper_id {paper_id!r} again (first on line {first_line[paper_id]}); "
                                f"expected each paper once")
            continue
        first_line[paper_id] = line_number
        records.append({**record, "paper_id": paper_id})
    return records


def split_file(path: str | Path, out: str | Path, splitter: Splitter, skip_bad: bool = False,
               batch_size: int = 256) -> dict:
    """``{"paper_id", "title", "abstract"}`` lines (:func:`read_abstracts`) → the same lines plus
    ``background``, ``method``, ``result``, written to ``out`` atomically (never over ``path``).

    A bad line raises :class:`~sdr.jsonio.InputError` naming file and line; with ``skip_bad`` it is skipped,
    counted in the report (``skipped_<reason>``, ``skipped_examples``: the first messages) and summarised on
    stderr."""
    from sdr.outputs import Outputs

    outputs = Outputs(inputs={"ABSTRACTS": path}, outputs={"--out": out}, force=True).check()
    skipped = SkippedLines() if skip_bad else None
    records = read_abstracts(path, skipped)
    with outputs.commit() as staged, staged["--out"].open("w", encoding="utf-8") as handle:
        for start in range(0, len(records), batch_size):
            chunk = records[start:start + batch_size]
            for record, facets in zip(chunk, splitter.split_many([r["abstract"] for r in chunk])):
                handle.write(json.dumps({**record, **facets}, ensure_ascii=False) + "\n")
    report = {f"skipped_{reason}": n for reason, n in sorted((skipped.counts if skipped else {}).items())}
    report["written"] = len(records)
    if skipped is not None:
        report["skipped_examples"] = skipped.examples
        if skipped.total:
            print(f"sdr facets split: {path}: {skipped.summary()}", file=sys.stderr)
    return report


# ------------------------------------------------------------------------------------ CLI
def register(subparsers) -> None:
    parser = subparsers.add_parser("facets", help="FLeW's facet splitter: abstracts → background/method/result")
    commands = parser.add_subparsers(dest="facets_command", required=True)
    train = commands.add_parser("train", help="train the sentence classifier on CSAbstruct and cache it")
    train.add_argument("--data-dir", default=None, help="CSAbstruct folder with train.jsonl (default: located)")
    train.add_argument("--out", default=None, help=f"model file (default: {default_model_path()})")
    train.add_argument("--force", action="store_true", help="replace the model file if it exists")
    train.set_defaults(func=_cli_train)
    split = commands.add_parser("split", help='split {"paper_id","title","abstract"} JSONL into facets')
    split.add_argument("abstracts", help="input JSONL")
    split.add_argument("--out", required=True, help="output JSONL (input fields + background/method/result)")
    split.add_argument("--model", default=None, help="classifier file (default: the cached one, trained if absent)")
    split.add_argument("--objective-to", default="method", choices=OBJECTIVE_TARGETS,
                       help="facet of CSAbstruct 'objective' sentences (default: method = FLeW's 'contribution')")
    split.add_argument("--skip-bad", action="store_true",
                       help="skip bad lines instead of stopping; their count and the first ones are printed")
    split.add_argument("--force", action="store_true", help="replace --out if it exists")
    split.set_defaults(func=_cli_split)


def _cli_train(args) -> int:
    from sdr import datasets
    from sdr.outputs import Outputs

    data_dir = args.data_dir or datasets.locate("csabstruct")
    if data_dir is None:
        raise FileNotFoundError("CSAbstruct not found: pass --data-dir, set SDR_DATA or `sdr data fetch csabstruct`")
    out = Path(args.out) if args.out else default_model_path()
    require_file(Path(data_dir) / "train.jsonl", "CSAbstruct train.jsonl")
    # checked before the minutes of training: not inside the data folder, not over a model without --force
    Outputs(inputs={"--data-dir": data_dir}, outputs={"--out": out}, force=args.force).check()
    model, path = train_classifier(data_dir, out)
    print(json.dumps({"model": str(path), **model.trained_on}))
    return 0


def _cli_split(args) -> int:
    from sdr.outputs import Outputs

    Outputs(inputs={"ABSTRACTS": args.abstracts, "--model": args.model or default_model_path()},
            outputs={"--out": args.out}, force=args.force).check()
    classifier = SentenceClassifier.load(args.model) if args.model else load_or_train()
    report = split_file(args.abstracts, args.out, ClassifierSplitter(classifier, args.objective_to),
                        skip_bad=args.skip_bad)
    print(json.dumps(report))
    return 0
