"""What each benchmark needs embedded, embedded by any model: ``sdr embed``.

A benchmark's inputs are the texts its evaluator (:mod:`sdr.evaluate`) looks up by id:

============== ====================================================================================
benchmark      embedded texts (ids as the evaluator reads them)
============== ====================================================================================
``csfcube``    every query and candidate paper, ``title [SEP] abstract`` (``<pid>``); with facet queries
               also each query's facet sentences (``<pid>_<facet>``, which the evaluator prefers)
``csabstruct`` every sentence of the test split (``<line>_<index>``, as :func:`read_csabstruct` numbers them)
``pubmed_rct`` every sentence of ``test.txt`` (``<PMID>_<index>``)
``scidocs``    every paper of the three ``paper_metadata_*.json`` files, ``title [SEP] abstract``
``mdcr``       every query and candidate of ``mdcr_test_data.jsonl``, ``title [SEP] abstract``
``scirepeval`` the documents of every registry task whose test data is present (search queries: the query)
``paragraphs`` every chunk of a chunks JSONL ``{"id", "paper_id", "text"}`` (no registry dataset: give it)
============== ====================================================================================

``[SEP]`` is the model tokenizer's separator (SPECTER's input, :meth:`sdr.encoders.Encoder.paper_text`).
Data are found by :func:`sdr.datasets.locate` (``$SDR_DATA``, then the cache) unless a folder is given.
A model is anything :meth:`sdr.encoders.Encoder.load` opens: ``minilm`` (the offline all-MiniLM-L6-v2), a
Hugging Face name, a sentence-transformers folder, or a chapter's saved model (a sentence-transformers folder).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sdr.outputs import Outputs, output_file

BENCHMARKS = ("csfcube", "csabstruct", "pubmed_rct", "scidocs", "mdcr", "scirepeval", "paragraphs")
"""Every benchmark ``sdr embed`` and ``sdr evaluate all`` know, in the order ``evaluate all`` scores them."""
DATASET_OF = {"csfcube": "csfcube", "csabstruct": "csabstruct", "pubmed_rct": "pubmed_rct", "scidocs": "scidocs",
              "mdcr": "mdcr", "scirepeval": "scirepeval_full", "paragraphs": None}
"""The :mod:`sdr.datasets` entry each benchmark's data is located by (None: the data must be given). SciRepEval's is
``scirepeval_full``, the evaluation sets with their task registry: the ``scirepeval`` entry holds the registry and
training samples alone, no test data to score."""
CSFCUBE_QUERIES = ("abstract", "facet")


@dataclass
class Inputs:
    """One benchmark's texts to embed, and what its evaluator needs besides the vectors."""

    benchmark: str
    data: Path
    texts: dict[str, str]
    labels: dict[str, str] | None = None  # sentence benchmarks: id → class label
    chunks: list | None = None  # paragraphs: the chunks, in file order
    report: dict = field(default_factory=dict)  # counts a reader should see (e.g. facet-query fallbacks)


# ------------------------------------------------------------------------------------------------ model
def load_model(name_or_path: str, max_length: int | None = None, pooling: str | None = None, layers: int = 0,
               device: str = "auto", normalize: bool | None = None):
    """An :class:`~sdr.encoders.Encoder` for ``name_or_path``, or a one-line error naming what failed.

    ``max_length=None`` and ``pooling=None`` keep the model folder's own settings (a sentence-transformers
    folder declares both; otherwise 512 tokens and CLS pooling). A sentence-transformers folder whose
    ``modules.json`` ends in ``Normalize`` gets unit-length vectors, as ``SentenceTransformer.encode`` gives;
    ``normalize`` True/False decides it instead (a comparison of an untrained folder that declares ``Normalize``
    with trained folders that do not must read both the same way).
    """
    from sdr.encoders import Encoder, resolve_model

    text = str(name_or_path).strip()
    if not text:
        raise ValueError("--model: give a model name or folder (e.g. minilm)")
    location = Path(resolve_model(text)).expanduser()
    if text.startswith((".", "/", "~")) and not location.exists():
        raise FileNotFoundError(f"model folder {text} not found")
    if location.is_file():
        raise ValueError(f"model {text}: {location} is a file; give a model folder or a Hugging Face name")
    if location.is_dir() and not (location / "config.json").exists():
        raise FileNotFoundError(f"model folder {location} has no config.json: not a Hugging Face or "
                                f"sentence-transformers model folder")
    if max_length is not None and max_length < 1:
        raise ValueError(f"--max-length must be a positive number of tokens, got {max_length}")
    encoder = Encoder.load(text, pooling=pooling, max_length=max_length, num_layers=layers, device=device,
                           normalize=(location.is_dir() and _declares_normalize(location)) if normalize is None
                           else bool(normalize))
    limit = getattr(encoder.model.config, "max_position_embeddings", None)
    if limit is not None and encoder.max_length > limit:
        raise ValueError(f"--max-length {encoder.max_length} exceeds what model {text} can read "
                         f"({limit} positions)")
    return encoder


def model_folder(name_or_path: str) -> Path | None:
    """The local folder a ``--model`` names (an input no output may overwrite), or None for a Hub name."""
    from sdr.encoders import resolve_model

    text = str(name_or_path).strip()
    location = Path(resolve_model(text)).expanduser() if text else None
    return location if location is not None and location.exists() else None


MAX_BATCH_SIZE = 65_536


def check_run_options(args) -> None:
    """The numeric options of ``sdr embed`` / ``sdr evaluate all`` in range, before any data or model is read."""
    from sdr.encoders import check_device

    if not 1 <= args.batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"--batch-size {args.batch_size}: expected 1 to {MAX_BATCH_SIZE:,} texts a batch")
    if args.layers < 0:
        raise ValueError(f"--layers {args.layers}: expected 0 (all layers) or a positive number of layers")
    if args.max_length is not None and args.max_length < 1:
        raise ValueError(f"--max-length must be a positive number of tokens, got {args.max_length}")
    check_device(args.device, "--device")


def _declares_normalize(folder: Path) -> bool:
    from sdr.jsonio import InputError, load_json

    modules = folder / "modules.json"
    if not modules.exists():
        return False
    declared = load_json(modules, "sentence-transformers modules.json (a list of modules)")
    if not isinstance(declared, list):
        raise InputError(f"{modules}: found a JSON {type(declared).__name__}; expected a list of modules")
    return any(str(m.get("type", "")).endswith("Normalize") for m in declared if isinstance(m, dict))


def model_label(name_or_path: str, layers: int = 0) -> str:
    """How a row names the model: "all-MiniLM-L6-v2" for the alias, a folder's name, a Hugging Face name as is."""
    from sdr.encoders import MINILM_ALIASES

    text = str(name_or_path).strip()
    if text.lower() in MINILM_ALIASES:
        label = "all-MiniLM-L6-v2"
    elif Path(text).expanduser().is_dir():
        label = Path(text).expanduser().resolve().name
    else:
        label = text
    return f"{label} ({layers} layers)" if layers else label


def embed(encoder, texts: dict[str, str], batch_size: int = 32, progress: bool = False) -> dict[str, np.ndarray]:
    """``{id: vector}`` for ``{id: text}`` (float32, in the ids' order)."""
    ids = list(texts)
    vectors = encoder.encode_texts([texts[i] for i in ids], batch_size=batch_size, progress=progress)
    return dict(zip(ids, vectors))


# ------------------------------------------------------------------------------------------------ data
def locate_data(benchmark: str, data_dir: str | Path | None = None, download: bool = False) -> Path:
    """The data folder (or chunks file) of ``benchmark``: ``data_dir`` when given, else the registry's."""
    from sdr import datasets

    check_benchmark(benchmark)
    if data_dir is not None:
        path = Path(data_dir).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"{benchmark}: data {path} not found")
        return path
    dataset = DATASET_OF[benchmark]
    if dataset is None:
        raise FileNotFoundError(f"{benchmark}: no registry dataset holds it; give its chunks JSONL "
                                f'{{"id", "paper_id", "text"}} with --data-dir')
    return datasets.resolve(dataset, download=download)


def check_benchmark(benchmark: str) -> str:
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r}; known: {', '.join(BENCHMARKS)}")
    return benchmark


def benchmark_inputs(benchmark: str, data: Path, encoder, csfcube_queries: str = "abstract") -> Inputs:
    """The texts ``benchmark`` needs embedded (see the module docstring), read from ``data``."""
    check_benchmark(benchmark)
    if csfcube_queries not in CSFCUBE_QUERIES:
        raise ValueError(f"CSFCube queries must be one of {CSFCUBE_QUERIES}, got {csfcube_queries!r}")
    inputs = _READERS[benchmark](Path(data), encoder, csfcube_queries)
    if not inputs.texts:
        raise ValueError(f"{benchmark}: {data} holds no text to embed")
    return inputs


def _csfcube(data: Path, encoder, queries: str) -> Inputs:
    from sdr.evaluate import csfcube

    papers = csfcube.read_csfcube_papers(data)
    texts = {pid: encoder.paper_text(papers[pid]) for pid in sorted(papers)}
    report = {"papers": len(texts), "queries": queries}
    if queries == "facet":
        facet_texts, facet_report = csfcube.facet_query_texts(papers, data)
        texts.update(facet_texts)
        report["facet_queries"] = facet_report
    return Inputs("csfcube", data, texts, report=report)


def _sentences(benchmark: str, items, data: Path) -> Inputs:
    texts = {item.id: item.text for item in items}
    if len(texts) != len(items):
        raise ValueError(f"{benchmark}: {data} has duplicate sentence ids")
    return Inputs(benchmark, data, texts, labels={item.id: item.label for item in items},
                  report={"sentences": len(texts)})


def _csabstruct(data: Path, encoder, queries: str) -> Inputs:
    from sdr.evaluate import sentences

    path = data / "test.jsonl" if data.is_dir() else data
    return _sentences("csabstruct", sentences.read_csabstruct(path), path)


def _pubmed_rct(data: Path, encoder, queries: str) -> Inputs:
    from sdr.evaluate import sentences

    path = data / "test.txt" if data.is_dir() else data
    return _sentences("pubmed_rct", sentences.read_pubmed_rct(path), path)


def _scidocs(data: Path, encoder, queries: str) -> Inputs:
    from sdr.evaluate import scidocs

    papers = scidocs.read_papers(data)
    return Inputs("scidocs", data, {pid: encoder.paper_text(paper) for pid, paper in papers.items()},
                  report={"papers": len(papers)})


def _mdcr(data: Path, encoder, queries: str) -> Inputs:
    from sdr.corpus import Paper
    from sdr.jsonio import read_jsonl

    path = data / "mdcr_test_data.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path}: the texts of MDCR's queries and candidates are missing "
                                f'(JSONL {{"paper_id", "title", "abstract"}}; `sdr data fetch mdcr` downloads it)')
    texts = {}
    for line_number, record in read_jsonl(path, 'MDCR paper texts {"paper_id", "title", "abstract"}'):
        if "paper_id" not in record or "title" not in record:
            raise ValueError(f"{path}:{line_number}: expected keys 'paper_id' and 'title'")
        paper = Paper(str(record["paper_id"]), record["title"] or "", record.get("abstract") or "")
        texts[paper.paper_id] = encoder.paper_text(paper)
    return Inputs("mdcr", data, texts, report={"papers": len(texts)})


def _scirepeval(data: Path, encoder, queries: str) -> Inputs:
    from sdr.corpus import Paper
    from sdr.evaluate import scirepeval

    registry = scirepeval.read_registry(data / "scirepeval_tasks.jsonl")
    present = [task for task in registry
               if scirepeval.split_path(scirepeval.dataset_dir(data, task.data["test"]), "test") is not None]
    if not present:
        raise FileNotFoundError(f"{data}: none of the {len(registry)} SciRepEval tasks has test data here "
                                f"(<dataset>/<config>/test.jsonl; `sdr data fetch scirepeval_full`)")
    texts = {}
    for task in present:
        for document in scirepeval.task_documents(data, task):
            paper = Paper(document["doc_id"], document.get("title") or "", document.get("abstract") or "")
            texts.setdefault(paper.paper_id, encoder.paper_text(paper))
    return Inputs("scirepeval", data, texts, report={"documents": len(texts), "tasks": [t.name for t in present]})


def _paragraphs(data: Path, encoder, queries: str) -> Inputs:
    from sdr.evaluate import paragraphs

    path = data / "chunks.jsonl" if data.is_dir() else data
    chunks = paragraphs.read_chunks(path)
    empty = [c.id for c in chunks if not c.text.strip()]
    if empty:
        raise ValueError(f"{path}: {len(empty)} chunks have no 'text' to embed, e.g. {empty[:3]}")
    return Inputs("paragraphs", path, {c.id: c.text for c in chunks}, chunks=chunks,
                  report={"chunks": len(chunks)})


_READERS: dict[str, Callable[[Path, object, str], Inputs]] = {
    "csfcube": _csfcube, "csabstruct": _csabstruct, "pubmed_rct": _pubmed_rct, "scidocs": _scidocs,
    "mdcr": _mdcr, "scirepeval": _scirepeval, "paragraphs": _paragraphs,
}


# ------------------------------------------------------------------------------------------------ command
def add_model_arguments(parser) -> None:
    """The model options ``sdr embed`` and ``sdr evaluate all`` share."""
    parser.add_argument("--model", required=True,
                        help="minilm (offline all-MiniLM-L6-v2), a Hugging Face name, or a model folder "
                             "(sentence-transformers, or a chapter's saved model)")
    parser.add_argument("--max-length", type=int, default=None,
                        help="tokens per text (default: the model folder's max_seq_length, else 512)")
    parser.add_argument("--pooling", choices=("cls", "mean"), default=None,
                        help="default: the folder's pooling (sentence-transformers), else cls")
    parser.add_argument("--layers", type=int, default=0, help="keep only the first N transformer layers (0: all)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--csfcube-queries", choices=CSFCUBE_QUERIES, default="abstract",
                        help="CSFCube query vectors: the whole paper (default; the official SPECTER protocol) or "
                             "the facet's sentences (<pid>_<facet>)")
    parser.add_argument("--download", action="store_true",
                        help="download a benchmark missing from $SDR_DATA and the cache (needs network)")


def register(subparsers) -> None:
    parser = subparsers.add_parser("embed", help="embed what a benchmark needs with any model (embeddings JSONL)")
    add_model_arguments(parser)
    parser.add_argument("--benchmark", required=True, help=", ".join(BENCHMARKS))
    parser.add_argument("--out", required=True, type=output_file,
                        help="embeddings JSONL to write (never an input; an existing file only with --force)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="the benchmark's folder (paragraphs: its chunks JSONL); default: located by sdr data")
    parser.add_argument("--labels-out", type=output_file, default=None,
                        help="csabstruct, pubmed_rct: also write the labels file `sdr evaluate sentences` reads")
    parser.add_argument("--force", action="store_true", help="replace --out / --labels-out if they exist")
    parser.set_defaults(func=_embed_command)


def _embed_command(args) -> int:
    from sdr.evaluate.embeddings import write_embeddings
    from sdr.evaluate.sentences import LabelledSentence, write_labels

    benchmark = check_benchmark(args.benchmark)
    if args.labels_out is not None and benchmark not in ("csabstruct", "pubmed_rct"):
        raise ValueError(f"--labels-out is for the sentence benchmarks (csabstruct, pubmed_rct), not {benchmark}")
    check_run_options(args)
    data = locate_data(benchmark, args.data_dir, download=args.download)
    # before the model is loaded and the texts embedded: no output over the data or the model, none replaced
    # without --force, each writable
    outputs = Outputs(inputs={"--data-dir" if args.data_dir else f"{benchmark} data": data,
                              "--model": model_folder(args.model)},
                      outputs={"--out": args.out, "--labels-out": args.labels_out}, force=args.force).check()
    encoder = load_model(args.model, args.max_length, args.pooling, args.layers, args.device)
    inputs = benchmark_inputs(benchmark, data, encoder, args.csfcube_queries)
    vectors = embed(encoder, inputs.texts, args.batch_size, progress=sys.stderr.isatty())
    with outputs.commit() as staged:
        write_embeddings(staged["--out"], vectors)
        if args.labels_out is not None:
            write_labels(staged["--labels-out"],
                         [LabelledSentence(i, inputs.texts[i], label) for i, label in inputs.labels.items()])
    print(json.dumps({"benchmark": benchmark, "data": str(inputs.data), "model": args.model,
                      "max_length": encoder.max_length, "pooling": encoder.pooling, "normalize": encoder.normalize,
                      "embeddings": str(args.out), "vectors": len(vectors), "dimension": encoder.dimension,
                      **({"labels": str(args.labels_out)} if args.labels_out else {}), "report": inputs.report}))
    return 0
