"""Sentence retrieval by rhetorical / communicative function (SciToricsBERT, Sugimoto & Aizawa).

Every sentence is a query against all the others: embeddings are L2-normalised, the nearest
neighbours come from pytorch-metric-learning's ``AccuracyCalculator`` with ``k="max_bin_count"``
(k = largest class size − 1 when the reference set includes the queries), the query itself is
removed from its neighbours, and queries whose class has a single member are excluded. P@1 and MAP@R
are ``precision_at_1`` and ``mean_average_precision_at_r`` of that calculator — the same calls as
``train.py`` and ``visualize.py`` of kaisugi/rhetorical_aspect_embeddings (whose ``modules/utils.py`` is a
copy of pytorch-metric-learning's). The test numbers of the paper come from ``visualize.py``, whose test
loader scores every sentence, as here. ``drop_last=True`` belongs to ``train.py``'s *validation* loader
(per-epoch model selection on CFS3's validation split), which can leave out a last partial batch.

Readers for the four formats SciToricsBERT evaluates on: CSAbstruct JSONL (one abstract per line),
PubMed-RCT text, the CF-labelled sentence TSVs (labels offset +11 methods, +17 results,
+23 discussion) and CFS3 JSONL.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdr.jsonio import InputError, iter_lines, read_jsonl, record_id
from sdr.evaluate.embeddings import MissingEmbeddings, read_embeddings

# data/cf-sentence-dataset/convert.py of kaisugi/rhetorical_aspect_embeddings
CF_SECTION_OFFSETS = {"introduction": 0, "methods": 11, "results": 17, "discussion": 23}
CF_DISCIPLINES = ("Chem", "CL", "Onc", "Psy")


@dataclass(frozen=True)
class LabelledSentence:
    """One retrieval item: an id (unique in its dataset), the sentence and its class label."""

    id: str
    text: str
    label: str


# --------------------------------------------------------------------------- readers


def _jsonl(path: Path):
    return read_jsonl(path, "one JSON object per line", allow_empty=True)


def read_csabstruct(path: str | Path) -> list[LabelledSentence]:
    """CSAbstruct ``{"abstract_id", "sentences", "labels", ...}`` lines → one item per sentence.

    Ids are ``<line number>_<sentence index>`` (the released files set every ``abstract_id`` to 0, so
    it cannot serve as a key); the order is the file's, as SciToricsBERT's
    ``data/csabstruct/convert.py`` flattens it.
    """
    path = Path(path)
    items = []
    for line_number, record in _jsonl(path):
        if "sentences" not in record or "labels" not in record:
            raise ValueError(f"{path}:{line_number}: expected keys 'sentences' and 'labels'")
        if len(record["sentences"]) != len(record["labels"]):
            raise ValueError(
                f"{path}:{line_number}: {len(record['sentences'])} sentences but {len(record['labels'])} labels"
            )
        for index, (text, label) in enumerate(zip(record["sentences"], record["labels"])):
            items.append(LabelledSentence(f"{line_number}_{index}", text, str(label)))
    return items


def read_pubmed_rct(path: str | Path) -> list[LabelledSentence]:
    """PubMed-RCT text: ``###<PMID>`` lines, then ``LABEL<TAB>sentence`` lines, blank between abstracts.

    Ids are ``<PMID>_<sentence index>``.
    """
    path = Path(path)
    items, pmid, index = [], None, 0
    # strict UTF-8 lines; a bad byte names its line
    for line_number, line in iter_lines(path, "PubMed-RCT text ('###<PMID>', 'LABEL<TAB>sentence')"):
        line = line.strip()
        if not line:
            continue
        if line.startswith("###"):
            pmid, index = line[3:].strip(), 0
            continue
        parts = line.split("\t", 1)
        if len(parts) != 2 or pmid is None:
            raise ValueError(f"{path}:{line_number}: expected '###<PMID>' then 'LABEL<TAB>sentence' lines")
        items.append(LabelledSentence(f"{pmid}_{index}", parts[1], parts[0]))
        index += 1
    return items


def read_cf_sentences(
    folder: str | Path,
    split: str = "eval",
    sections: Sequence[str] = tuple(CF_SECTION_OFFSETS),
    disciplines: Sequence[str] = CF_DISCIPLINES,
) -> list[LabelledSentence]:
    """CF-labelled sentence TSVs ``<split>.<discipline>.<section>`` (``label<TAB>sentence``).

    Labels are shifted by the section offset (+11 methods, +17 results, +23 discussion) so the four
    sections share one label space, exactly as SciToricsBERT's ``convert.py``. Ids are
    ``<discipline>.<section>:<line>``.
    """
    folder = Path(folder)
    items = []
    for discipline in disciplines:
        for section in sections:
            if section not in CF_SECTION_OFFSETS:
                raise ValueError(f"unknown CF section {section!r}; expected one of {tuple(CF_SECTION_OFFSETS)}")
            path = folder / f"{split}.{discipline}.{section}"
            # strict UTF-8 lines; a bad byte names its line
            for line_number, line in iter_lines(path, "CF sentences ('label<TAB>sentence')"):
                line = line.strip()
                if not line:
                    continue
                parts = line.split("\t", 1)
                if len(parts) != 2 or not parts[0].lstrip("-").isdigit():
                    raise ValueError(f"{path}:{line_number}: expected 'integer label<TAB>sentence'")
                label = int(parts[0]) + CF_SECTION_OFFSETS[section]
                items.append(LabelledSentence(f"{discipline}.{section}:{line_number}", parts[1], str(label)))
    return items


def read_cfs3(path: str | Path) -> list[LabelledSentence]:
    """CFS3 JSONL ``{"text", "label", ...}`` (SciToricsBERT's training/validation format).

    Ids are the record's ``id`` when present, else the line number.
    """
    path = Path(path)
    items = []
    for line_number, record in _jsonl(path):
        if "text" not in record or "label" not in record:
            raise ValueError(f"{path}:{line_number}: expected keys 'text' and 'label'")
        items.append(LabelledSentence(str(record.get("id", line_number)), record["text"], str(record["label"])))
    return items


def read_labels(path: str | Path) -> dict[str, str]:
    """The CLI's labels file: JSONL ``{"id", "label"}`` → ``{id: label}``.

    Strict: ids are non-empty strings (or integers), labels strings (or integers), each id once; anything
    else (``null``, booleans, NaN, a repeated id) raises :class:`~sdr.jsonio.InputError` naming file and line.
    """
    path = Path(path)
    labels: dict[str, str] = {}
    for line_number, record in read_jsonl(path, "labels JSONL {'id': str, 'label': str}", allow_empty=True,
                                          finite=True):
        where = f"{path}:{line_number}"
        if "id" not in record or "label" not in record:
            raise InputError(f"{where}: found keys {sorted(record)}; expected keys 'id' and 'label'")
        key = record_id(record["id"], "id", where)
        if key in labels:
            raise InputError(f"{where}: duplicate id {key!r}; expected each id once")
        labels[key] = record_id(record["label"], "label", where, path_safe=False)
    if not labels:
        raise InputError(f"{path}: no labels in file; expected {{'id', 'label'}} lines")
    return labels


def write_labels(path: str | Path, items: Sequence[LabelledSentence], with_text: bool = True) -> Path:
    """Write ``{"id", "label"[, "text"]}`` lines: the labels file ``sdr evaluate sentences`` reads."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for item in items:
            record = {"id": item.id, "label": item.label}
            if with_text:
                record["text"] = item.text
            handle.write(json.dumps(record) + "\n")
    return path


# --------------------------------------------------------------------------- metrics


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """``torch.nn.functional.normalize(p=2, eps=1e-12)``, as SciToricsBERT's evaluation: a zero vector
    stays zero (it is then equally far from every unit vector)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


KNN_BATCH = 4096
"""Queries per block of the exact k-NN on the GPU (a 4,096 × 100k distance block is 1.6 GB in float32)."""


def knn_backend(device: str | None = None) -> tuple[str, str]:
    """``(device, k-NN)`` for :func:`evaluate`: ``("cuda", "torch")`` when a GPU is available (or asked for),
    else ``("cpu", "faiss")``. Both are exact (no approximate index), so they rank the same neighbours."""
    import torch

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"sentences: device {device!r} asked for, but torch sees no CUDA device")
    return device, ("torch" if device.startswith("cuda") else "faiss")


def _calculator_class():
    from pytorch_metric_learning.utils import accuracy_calculator as pml

    class Calculator(pml.AccuracyCalculator):
        """pytorch-metric-learning's calculator with one more metric: AP@R per query, from the same neighbours and the
        same relevance mask its MAP@R averages (so a paired comparison uses exactly the evaluator's numbers)."""

        def calculate_ap_at_r_per_query(self, knn_labels, query_labels, not_lone_query_mask, ref_includes_query,
                                        label_counts, **kwargs):
            import torch

            kept = not_lone_query_mask.cpu().numpy().astype(bool)
            knn, labels = knn_labels[not_lone_query_mask], query_labels[not_lone_query_mask][:, None]
            relevance, count = pml.get_relevance_mask(knn.shape[:2], labels, ref_includes_query, label_counts)
            equality = self.label_comparison_fn(labels, knn) * relevance
            ranks = torch.arange(1, knn.shape[1] + 1, device=knn.device).repeat(knn.shape[0], 1)
            precision = (torch.cumsum(equality, dim=1) * equality).type(torch.float64) / ranks
            return kept, (torch.sum(precision * relevance, dim=1) / count).cpu().numpy()

        def requires_knn(self):
            return [*super().requires_knn(), "ap_at_r_per_query"]

    return Calculator


def evaluate(
    embeddings: np.ndarray | Mapping[str, np.ndarray],
    labels: Sequence | Mapping[str, str],
    device: str | None = None,
    knn: str | None = None,
) -> dict:
    """P@1 and MAP@R of sentence retrieval: ``{"p@1", "map@r", "report": {...}}`` (fractions).

    ``embeddings`` is an ``[n, d]`` array aligned with the ``labels`` sequence, or a mapping
    ``{id: vector}`` together with ``labels`` as ``{id: label}`` (ids without an embedding are
    reported and left out). The report gives k, the number of scored queries and of queries
    excluded because their class has one member, and where the neighbours were searched.

    ``device`` (default: CUDA when available, else CPU) and ``knn`` (default: ``"torch"`` on CUDA, blockwise exact
    L2 distances with ``torch.topk``; ``"faiss"`` on the CPU, faiss' exact ``IndexFlatL2``, the
    ``AccuracyCalculator`` default): MAP@R with k ≈ the largest class over tens of thousands of sentences, for
    dozens of models, is quadratic work that the GPU does in seconds.
    """
    import torch
    from pytorch_metric_learning.distances import LpDistance
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator
    from pytorch_metric_learning.utils.inference import CustomKNN, FaissKNN

    device, default_knn = knn_backend(device)
    knn = knn or default_knn
    if knn not in ("torch", "faiss"):
        raise ValueError(f"sentences: knn must be 'torch' or 'faiss', got {knn!r}")

    missing = MissingEmbeddings("sentences")
    if isinstance(embeddings, Mapping):
        if not isinstance(labels, Mapping):
            raise ValueError("sentences: embeddings given by id need labels given by id ({id: label})")
        ids = missing.check(list(labels), embeddings)
        if not ids:
            raise ValueError("sentences: none of the labelled ids has an embedding")
        vectors = np.stack([embeddings[i] for i in ids])
        label_list = [labels[i] for i in ids]
        missing.warn()
    else:
        vectors = np.asarray(embeddings)
        label_list = list(labels.values()) if isinstance(labels, Mapping) else list(labels)
        if vectors.ndim != 2 or len(vectors) != len(label_list):
            raise ValueError(
                f"sentences: {len(vectors)} embeddings for {len(label_list)} labels; expected a 2-D array aligned "
                f"with the labels"
            )
    classes = sorted(set(label_list))
    codes = np.array([classes.index(x) for x in label_list], dtype=np.int64)
    counts = Counter(label_list)
    singletons = sum(1 for x in label_list if counts[x] == 1)
    if singletons == len(label_list):
        raise ValueError("sentences: every class has a single sentence; nothing can be retrieved")
    knn_func = (CustomKNN(LpDistance(normalize_embeddings=False), batch_size=KNN_BATCH) if knn == "torch"
                else FaissKNN())
    calculator = _calculator_class()(
        include=("precision_at_1", "mean_average_precision_at_r", "ap_at_r_per_query"),
        k="max_bin_count",
        device=torch.device(device),
        knn_func=knn_func,
    )
    zero_vectors = int(np.sum(~np.any(np.asarray(vectors) != 0, axis=1)))
    scores = calculator.get_accuracy(_normalise(vectors), codes)
    kept, per_query = scores["ap_at_r_per_query"]
    return {
        "p@1": float(scores["precision_at_1"]),
        "map@r": float(scores["mean_average_precision_at_r"]),
        # AP@R of each non-singleton query (its index in the input) from the same neighbours: their mean is map@r
        "per_query": {int(i): float(v) for i, v in zip(np.flatnonzero(kept), per_query)},
        "report": {
            "sentences": len(label_list),
            "classes": len(classes),
            "k": max(counts.values()) - 1,
            "queries": len(label_list) - singletons,
            "excluded_singleton_queries": singletons,
            "zero_vectors": zero_vectors,
            "missing_embeddings": missing.report(),
            "device": device,
            "knn": knn,
        },
    }


def naive_scores(embeddings: np.ndarray, labels: Sequence) -> dict[str, float]:
    """P@1 and MAP@R by a plain double loop (the benchmark's reference and a cross-check).

    Same definitions: L2-normalised vectors, Euclidean order (stable on ties), self excluded,
    R = class size − 1, singleton classes excluded, MAP@R = (1/R) Σ_{i≤R} P@i · rel_i.
    """
    vectors = _normalise(np.asarray(embeddings)).astype(np.float64)
    labels = list(labels)
    counts = Counter(labels)
    p_at_1, map_at_r = [], []
    for q in range(len(labels)):
        r = counts[labels[q]] - 1
        if r == 0:
            continue
        distances = [(float(np.sum((vectors[q] - vectors[j]) ** 2)), j) for j in range(len(labels)) if j != q]
        distances.sort(key=lambda pair: pair[0])
        relevant = [labels[j] == labels[q] for _, j in distances[:r]]
        p_at_1.append(float(relevant[0]))
        hits, total = 0, 0.0
        for i, is_relevant in enumerate(relevant, start=1):
            if is_relevant:
                hits += 1
                total += hits / i
        map_at_r.append(total / r)
    return {"p@1": float(np.mean(p_at_1)), "map@r": float(np.mean(map_at_r))}


# --------------------------------------------------------------------------- command line


def add_arguments(parser) -> None:
    """Options of ``sdr evaluate sentences``."""
    parser.add_argument("--labels", required=True, help='JSONL {"id", "label"} (one line per sentence)')
    parser.add_argument("--embeddings", required=True, help="embeddings JSONL keyed by the same ids")


def run(args) -> dict:
    """``sdr evaluate sentences --labels L --embeddings E`` → ``{"p@1", "map@r", "report"}``."""
    return evaluate(read_embeddings(args.embeddings), read_labels(args.labels))
