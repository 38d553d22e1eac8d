"""``sdr evaluate all``: embed what each benchmark needs with one model, score it, store its leaderboard rows.

Each benchmark's texts come from :mod:`sdr.embed` (the same texts ``sdr embed`` writes), and are scored by the
benchmark's own evaluator with the vectors as ``sdr evaluate <benchmark> --embeddings`` would read them back from
that file (float32 for CSFCube and the sentence and paragraph benchmarks; float64 for SciDocs, MDCR and
SciRepEval, which round distances), so both routes give the same numbers.

The rows of the leaderboard benchmarks (CSFCube, CSAbstruct, SciDocs when all 12 metrics ran) are stored in the
results store as the "external" chapter (:func:`sdr.book.leaderboard.store_external_rows`); the Summary page
shows them beside the book's methods.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from sdr import embed
from sdr.outputs import output_folder

LEADERBOARD_OF = {"csfcube": "csfcube", "csabstruct": "csabstruct", "scidocs": "scidocs"}
"""Benchmarks with a leaderboard on the Summary page (:data:`sdr.book.BENCHMARKS`); the others are reported only."""
DEFAULT_TRAINING = "external: scored by sdr evaluate all"


def score(inputs: embed.Inputs, vectors: Mapping[str, np.ndarray], progress: bool = False,
          n_jobs: int = 1) -> tuple[dict, dict | None]:
    """Score ``vectors`` on ``inputs.benchmark``: (the evaluator's output, leaderboard metrics or None)."""
    from sdr import book
    from sdr.evaluate import csfcube, mdcr, paragraphs, scidocs, scirepeval, sentences

    name = inputs.benchmark
    wide = {key: np.asarray(vector, dtype=np.float64) for key, vector in vectors.items()}
    if name == "csfcube":
        result = csfcube.evaluate(inputs.data, embeddings=vectors, return_per_query=True)
        return result, book.csfcube_metrics(result)
    if name in ("csabstruct", "pubmed_rct"):
        result = sentences.evaluate(vectors, inputs.labels)
        return result, book.csabstruct_metrics(result) if name == "csabstruct" else None
    if name == "scidocs":
        result = scidocs.evaluate(inputs.data, wide, n_jobs=n_jobs, progress=progress)
        row = book.scidocs_row(result)
        return result, row if row["avg"] == row["avg"] else None  # the average needs all 12 metrics
    if name == "mdcr":
        return mdcr.evaluate(inputs.data, embeddings=wide), None
    if name == "scirepeval":
        return scirepeval.evaluate(inputs.data, wide, tasks=inputs.report["tasks"], n_jobs=n_jobs,
                                   progress=progress), None
    if name == "paragraphs":
        return paragraphs.evaluate(vectors, inputs.chunks), None
    raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(embed.BENCHMARKS)}")


def evaluate_model(model: str, benchmarks: Iterable[str] | None = None,
                   data_dirs: Mapping[str, str | Path] | None = None, *, max_length: int | None = None,
                   pooling: str | None = None, layers: int = 0,
                   device: str = "auto", batch_size: int = 32, csfcube_queries: str = "abstract",
                   download: bool = False, embeddings_dir: str | Path | None = None, progress: bool = False,
                   n_jobs: int = 1, cache: bool | str | Path = True, lengths: Mapping[str, int] | None = None,
                   normalize: bool | None = None, force: bool = False,
                   results_store: str | Path | None = None) -> dict:
    """Embed and score ``model`` on ``benchmarks`` (None: every benchmark whose data is found, the others listed
    under ``"skipped"`` with the reason; named benchmarks must all have data). ``data_dirs`` overrides a
    benchmark's folder. ``embeddings_dir`` also writes each benchmark's vectors as ``<benchmark>.jsonl`` (an
    existing file is replaced only with ``force``; see :func:`check_outputs`). ``results_store``: the store the
    caller will write the rows to, checked with the other outputs before any model is loaded.
    ``cache`` (default on; a folder to use another than ``$SDR_DATA_CACHE/embeddings``) reads each benchmark's
    vectors back from :class:`sdr.evaluate.cache.EmbeddingCache` when the same model, texts and reading settings
    were embedded before, and stores them otherwise; ``"cached"`` lists the benchmarks read back. ``lengths``
    gives a benchmark's input length (tokens) where ``max_length`` is None (:func:`leaderboard_lengths`: the
    profile's, so an outside model's rows read what the chapters' rows read).

    Returns ``{"model", "label", "max_length", "pooling", "normalize", "layers", "csfcube_queries",
    "benchmarks": {name: {"data", "inputs", "vectors", "result", "leaderboard_metrics"}}, "skipped"}``.
    """
    explicit = benchmarks is not None
    names = list(dict.fromkeys(benchmarks)) if explicit else list(embed.BENCHMARKS)
    if explicit and not names:
        raise ValueError("--benchmarks: name at least one benchmark")
    for name in names:
        embed.check_benchmark(name)
    data_dirs = dict(data_dirs or {})
    stray = sorted(set(data_dirs) - set(names))
    if stray:
        raise ValueError(f"--data-dir given for {stray}, which is not among the benchmarks to score {names}")
    located, skipped = {}, {}
    for name in names:
        try:
            located[name] = embed.locate_data(name, data_dirs.get(name), download=download)
        except FileNotFoundError as error:
            if explicit:
                raise
            skipped[name] = str(error)
    if not located:
        raise FileNotFoundError("no benchmark data found: " + "; ".join(skipped.values()))
    outputs = check_outputs(located, model, embeddings_dir, results_store, force)
    encoder = embed.load_model(model, max_length, pooling, layers, device, normalize)
    from sdr.evaluate.cache import EmbeddingCache, read_or_embed, released_identity

    identity = released_identity(model, layers) if cache else None
    store_cache = EmbeddingCache(None if cache is True else cache) if identity is not None else None
    cached = []
    scored = {}
    own_length = encoder.max_length
    for name, data in located.items():
        encoder.max_length = (lengths or {}).get(name, own_length) if max_length is None else max_length
        started = time.perf_counter()
        try:
            inputs = embed.benchmark_inputs(name, data, encoder, csfcube_queries)
        except FileNotFoundError as error:
            if explicit:
                raise
            skipped[name] = str(error)
            continue
        vectors, from_cache = read_or_embed(
            store_cache, identity, name, inputs.texts, max_length=encoder.max_length, pooling=encoder.pooling,
            normalize=encoder.normalize, embed=lambda: embed.embed(encoder, inputs.texts, batch_size, progress))
        if from_cache:
            cached.append(name)
        if embeddings_dir is not None:
            _write(outputs, inputs, vectors)
        result, metrics = score(inputs, vectors, progress, n_jobs)
        scored[name] = {"data": str(inputs.data), "inputs": inputs.report, "vectors": len(vectors),
                        "result": result, "leaderboard_metrics": metrics, "max_length": encoder.max_length,
                        "seconds": round(time.perf_counter() - started, 1)}
        # a line per benchmark in any log (the bars show only on a terminal)
        print(f"sdr evaluate all: {name}: {len(vectors):,} texts at {encoder.max_length} tokens "
              f"{'read from the cache' if name in cached else 'embedded'} and scored in "
              f"{scored[name]['seconds']:.0f} s", file=sys.stderr, flush=True)
    if not scored:
        raise FileNotFoundError("no benchmark could be scored: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    if skipped:
        print(f"sdr evaluate all: skipped {', '.join(skipped)} (no data; --benchmarks NAME says why)",
              file=sys.stderr)
    encoder.max_length = own_length
    return {"model": model, "label": embed.model_label(model, layers),
            "max_length": max_length if max_length is not None else None,
            "device": str(encoder.device), "precision": encoder.plan.precision, "batch_size": batch_size,
            "pooling": encoder.pooling, "normalize": encoder.normalize, "layers": layers,
            "csfcube_queries": csfcube_queries, "benchmarks": scored, "skipped": skipped, "cached": cached,
            "model_identity": identity}


def _embedding_files(folder: Path, benchmark: str) -> dict[str, Path]:
    files = {f"--embeddings-dir {benchmark}.jsonl": folder / f"{benchmark}.jsonl"}
    if benchmark in ("csabstruct", "pubmed_rct"):
        files[f"--embeddings-dir {benchmark}.labels.jsonl"] = folder / f"{benchmark}.labels.jsonl"
    return files


def check_outputs(located: Mapping[str, Path], model: str, embeddings_dir: str | Path | None,
                  results_store: str | Path | None, force: bool) -> "Outputs":
    """Every file ``evaluate all`` may write, checked before the model is loaded (:class:`sdr.outputs.Outputs`):
    no vectors file over a benchmark's data or the model, none replaced without ``force``, each inside its folder
    and writable; the results store not a source folder nor holding the data."""
    from sdr.outputs import Outputs

    inputs = {f"{name} data": path for name, path in located.items()}
    inputs["--model"] = embed.model_folder(model)
    files: dict[str, Path] = {}
    within: dict[str, Path] = {}
    if embeddings_dir is not None:
        folder = Path(embeddings_dir)
        for name in located:
            for label, path in _embedding_files(folder, name).items():
                files[label], within[label] = path, folder
    return Outputs(inputs=inputs, outputs=files, force=force, within=within,
                   stores={"--embeddings-dir": embeddings_dir, "results store": results_store}).check()


def _write(outputs, inputs: embed.Inputs, vectors: Mapping[str, np.ndarray]) -> None:
    from sdr.evaluate.embeddings import write_embeddings
    from sdr.evaluate.sentences import LabelledSentence, write_labels
    from sdr.outputs import Outputs

    files = _embedding_files(outputs.stores["--embeddings-dir"], inputs.benchmark)
    one = Outputs(outputs.inputs, files, outputs.force, within={label: outputs.stores["--embeddings-dir"]
                                                              for label in files})
    with one.commit() as staged:
        label = next(iter(files))
        write_embeddings(staged[label], vectors)
        if inputs.labels is not None:
            write_labels(staged[f"--embeddings-dir {inputs.benchmark}.labels.jsonl"],
                         [LabelledSentence(i, inputs.texts[i], label) for i, label in inputs.labels.items()])


def method_name(outcome: Mapping, name: str | None = None) -> str:
    """The leaderboard's name for the scored model: ``--name``, else label · pooling (each row records its input
    length; an explicit ``--max-length`` is part of the name, since it overrides the profile's lengths)."""
    if name:
        return name
    text = f"{outcome['label']} · {outcome['pooling']}"
    if outcome.get("max_length"):
        text += f" · {outcome['max_length']} tokens"
    return text + (" · facet query" if outcome["csfcube_queries"] == "facet" and "csfcube" in outcome["benchmarks"]
                   else "")


def leaderboard_lengths(profile: str) -> dict[str, int]:
    """The input length each leaderboard benchmark is read at, at ``profile``: the Benchmarks chapter's
    ``csfcube_max_length`` and ``csabstruct_max_length`` (its ``max_length`` where 0), the lengths every chapter's
    rows on those leaderboards read."""
    from sdr import book

    values = {**_defaults("benchmarks"), **book.chapter_parameters("benchmarks", profile)}
    return {"csfcube": int(values["csfcube_max_length"] or values["max_length"]),
            "csabstruct": int(values["csabstruct_max_length"] or values["max_length"])}


def _defaults(chapter: str) -> dict:
    import ast

    from sdr import book

    return {k: ast.literal_eval(v) for k, v in book.notebook_parameters(book.NOTEBOOKS / f"{chapter}.ipynb").items()}


def reference_method(benchmark: str, profile: str, pooling: str) -> str:
    """The Benchmarks chapter's untrained encoder at ``profile`` read with ``pooling`` (the row it stores with
    per-query scores): what an outside model's row is compared with, as every chapter's trained row is."""
    from sdr import book

    values = {**_defaults("benchmarks"), **book.chapter_parameters("benchmarks", profile)}
    return book.untrained_reference(values["model_name"], values["model_layers"], pooling, benchmark)


def store(outcome: Mapping, profile: str = "real", name: str | None = None, data: str = "real",
          training: str = DEFAULT_TRAINING) -> Path | None:
    """Store the leaderboard rows of :func:`evaluate_model`'s ``outcome`` (None when no benchmark has one): each
    with its input length, per-query scores and, on CSFCube and CSAbstruct, the Benchmarks chapter's untrained
    encoder read the same way as its reference (so the Summary shows its difference and interval), plus one record
    per benchmark of how it was scored (:func:`run_record`)."""
    from sdr import book

    method = method_name(outcome, name)
    rows, sources = [], []
    for benchmark, scored in outcome["benchmarks"].items():
        if scored["leaderboard_metrics"] is None:
            continue
        board = LEADERBOARD_OF[benchmark]
        per_query, groups, reference = None, None, None
        if board == "csfcube":
            per_query, groups = book.csfcube_per_query(scored["result"], scored["data"])
        elif board == "csabstruct":
            per_query = book.csabstruct_per_query(scored["result"])
        if per_query is not None:
            reference = reference_method(board, profile, outcome["pooling"])
        rows.append(book.leaderboard_row(method, board, scored["leaderboard_metrics"], data=data,
                                         base_model=outcome["label"], training=training,
                                         input_tokens=int(scored["max_length"]), per_query=per_query,
                                         query_groups=groups, reference=reference))
        sources.append(f"{book.BENCHMARKS[board]['title']} via sdr evaluate all ({data} data)")
    for benchmark in outcome["benchmarks"]:
        run_record(outcome, benchmark, method, profile)
    if not rows:
        return None
    details = {key: value for key, value in outcome.items() if key != "benchmarks"}
    details["benchmarks"] = {b: {k: v for k, v in s.items() if k not in ("leaderboard_metrics", "result")}
                             for b, s in outcome["benchmarks"].items()}
    return book.store_external_rows(rows, profile, sources, details)


def run_record(outcome: Mapping, benchmark: str, method: str, profile: str) -> Path:
    """One record per model and benchmark (as MTEB keeps one file per model and task): the scores, the model's
    identity (Hub revision or weights digest), the book's commit, library versions, device, precision, batch size,
    input length (and whether it overrode the profile's), and when; in
    ``<results>/external/runs/<profile>/<method>/<benchmark>.json``."""
    import json
    import platform
    import re
    import subprocess
    from datetime import datetime, timezone
    from importlib.metadata import PackageNotFoundError, version

    from sdr.book import paths, results

    scored = outcome["benchmarks"][benchmark]

    def package(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    try:
        commit = subprocess.run(["git", "-C", str(paths.ROOT), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    record = {"method": method, "benchmark": benchmark, "profile": profile, "model": outcome["model"],
              "model_identity": outcome.get("model_identity"), "pooling": outcome["pooling"],
              "normalize": outcome["normalize"], "layers": outcome["layers"], "input_tokens": scored["max_length"],
              "input_tokens_overridden": outcome.get("max_length") is not None,
              "csfcube_queries": outcome["csfcube_queries"], "device": outcome.get("device"),
              "precision": outcome.get("precision"), "batch_size": outcome.get("batch_size"),
              "book_commit": commit, "python": platform.python_version(),
              "libraries": {name: package(name) for name in ("sdr", "torch", "transformers", "sentence-transformers",
                                                             "numpy", "scikit-learn", "pytrec-eval-terrier")},
              "written": datetime.now(timezone.utc).isoformat(timespec="seconds"), "seconds": scored.get("seconds"),
              "cached": benchmark in outcome.get("cached", []), "data": scored["data"],
              "result": results.jsonable(scored["result"])}
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", method).strip("_") or "model"
    path = paths.results_dir() / "external" / "runs" / profile / slug / f"{benchmark}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=str))
    return path


# ------------------------------------------------------------------------------------------------ command
def _data_dir(text: str) -> tuple[str, str]:
    name, separator, path = text.partition("=")
    if not separator or not name or not path:
        raise argparse.ArgumentTypeError(f"expected BENCHMARK=PATH, got {text!r}")
    return name.strip(), path.strip()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``sdr evaluate all``."""
    embed.add_model_arguments(parser)
    parser.add_argument("--benchmarks", default=None,
                        help=f"comma-separated, from {','.join(embed.BENCHMARKS)} (default: every one whose data "
                             f"is found; the others are listed as skipped)")
    parser.add_argument("--data-dir", type=_data_dir, action="append", default=[], metavar="BENCHMARK=PATH",
                        help="a benchmark's folder (paragraphs: its chunks JSONL) instead of the located one "
                             "(repeatable)")
    parser.add_argument("--embeddings-dir", type=output_folder, default=None,
                        help="also write each benchmark's vectors there as <benchmark>.jsonl (never over the data)")
    parser.add_argument("--force", action="store_true", help="replace vectors files that exist in --embeddings-dir")
    parser.add_argument("--profile", default="real",
                        help="the results-store profile the rows join (default real: the Summary of make book; a "
                             "plain name, it becomes a file name)")
    parser.add_argument("--name", default=None, help="the rows' method name (default: model · pooling · tokens)")
    parser.add_argument("--training", default=DEFAULT_TRAINING,
                        help='the rows\' training budget ("external: …" keeps them out of the trained-row checks)')
    parser.add_argument("--data", choices=("real", "replica"), default="real",
                        help="what the benchmark folders hold (the Summary shows real-data rows)")
    parser.add_argument("--no-store", action="store_true", help="print the scores, store no leaderboard row")
    parser.add_argument("--n-jobs", type=int, default=1, help="parallel jobs of the SVM grid searches")
    parser.add_argument("--no-cache", action="store_true",
                        help="embed every benchmark again (default: read vectors cached for the same model, texts "
                             "and settings from $SDR_DATA_CACHE/embeddings, and cache new ones)")


def run(args: argparse.Namespace) -> dict:
    """``sdr evaluate all …`` → ``{"method", "stored", …evaluate_model's output}``."""
    from sdr.book import paths
    from sdr.outputs import safe_name

    embed.check_run_options(args)
    if not args.no_store:
        safe_name(args.profile, "--profile")  # a file name in the results store: no path from a name
    if args.n_jobs < 1:
        raise ValueError(f"--n-jobs {args.n_jobs}: expected a positive number of parallel jobs")
    benchmarks = None
    if args.benchmarks is not None:
        benchmarks = [name.strip() for name in args.benchmarks.split(",") if name.strip()]
    data_dirs = dict(args.data_dir)
    if len(data_dirs) != len(args.data_dir):
        raise ValueError("--data-dir: one folder per benchmark")
    outcome = evaluate_model(args.model, benchmarks, data_dirs, max_length=args.max_length, pooling=args.pooling,
                             layers=args.layers, device=args.device, batch_size=args.batch_size,
                             csfcube_queries=args.csfcube_queries, download=args.download,
                             embeddings_dir=args.embeddings_dir, progress=sys.stderr.isatty(), n_jobs=args.n_jobs,
                             cache=not args.no_cache, lengths=leaderboard_lengths(args.profile), force=args.force,
                             results_store=None if args.no_store else paths.results_dir())
    stored = None if args.no_store else store(outcome, args.profile, args.name, args.data, args.training)
    return {"method": method_name(outcome, args.name), "stored": str(stored) if stored else None, **outcome}
