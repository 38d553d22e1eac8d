"""SciRepEval's evaluation data from the Hugging Face Hub → the JSONL layout :mod:`sdr.evaluate.scirepeval` reads.

The task registry (``scirepeval_tasks.jsonl``, the ``scirepeval`` dataset) names, per task, the Hub datasets and
configs it reads (``data.meta``, ``data.test``, ``data.reviewers``: ``{"name": "allenai/scirepeval_test", "config":
"fos"}``). For each, the Hub's parquet export is listed (``GET /api/datasets/{repo}/parquet/{config}`` →
``{split: [url, …]}``, the files of the ``refs/convert/parquet`` branch), every file is downloaded and written as
``<folder>/<repo name>/<config>/<split>.jsonl`` — what ``Dataset.to_json`` writes, the layout the evaluator reads.
A split already written is skipped, so an interrupted fetch resumes; each split is written to a temporary file
renamed into place. A parquet file whose download breaks off or answers a 5xx is downloaded again under the
client's retry policy (:meth:`sdr.fetchers.http.Client.retrying`), then the error names the file's URL. The
completion record (:mod:`sdr.fetchers.completion`) is written last: the folder counts as present only then, not when
``scirepeval_tasks.jsonl`` (copied first) is there.
"""

from __future__ import annotations

import functools
import io
import json
import os
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

from sdr.fetchers import completion
from sdr.fetchers.http import ApiError, Client

HUB = "https://huggingface.co"


def registry_datasets(registry: str | Path) -> list[tuple[str, str]]:
    """The (repository, config) pairs a SciRepEval registry's tasks read, in order."""
    from sdr.evaluate.scirepeval import read_registry

    pairs: dict[tuple[str, str], None] = {}
    for task in read_registry(registry):
        for key in ("meta", "test", "reviewers"):
            spec = task.data.get(key)
            if isinstance(spec, dict) and spec.get("name") and spec.get("config"):
                pairs.setdefault((str(spec["name"]), str(spec["config"])), None)
    return list(pairs)


def _open_url(url: str):
    return urllib.request.urlopen(url, timeout=300)


def _download(opener: Callable[[str], io.BufferedIOBase], url: str) -> bytes:
    """The whole body of ``url`` (a connection that breaks mid-way raises: the caller retries it whole)."""
    with opener(url) as handle:
        return handle.read()


def _jsonable(value):
    if isinstance(value, float) and value != value:
        return None  # parquet nulls of float columns: JSON null, not NaN
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def fetch_configs(pairs: list[tuple[str, str]], folder: str | Path, client: Client | None = None,
                  opener: Callable[[str], io.BufferedIOBase] = _open_url, progress: bool = True) -> dict:
    """Write every split of every (repository, config) into ``folder``; returns counts."""
    import pyarrow.parquet as parquet

    folder = Path(folder)
    client = client or Client(rate=5.0, api_key="")
    written, skipped, rows = 0, 0, 0
    print(f"Hugging Face: {len(pairs)} dataset configs to export as JSONL into {folder} (resumable)")
    status = completion.Progress(folder, every_s=0)
    for number, (repo, config) in enumerate(tqdm(pairs, desc="SciRepEval configs", unit="config",
                                                 disable=not progress)):
        status.update("SciRepEval configs", number, len(pairs), "configs")
        listing = client.json("GET", f"{HUB}/api/datasets/{repo}/parquet/{config}")
        if not isinstance(listing, dict) or not listing or not all(isinstance(v, list) for v in listing.values()):
            raise ApiError(f"{HUB}/api/datasets/{repo}/parquet/{config}", 200,
                           f"expected {{split: [parquet url, ...]}}, got {str(listing)[:200]}")
        target_dir = folder / repo.split("/")[-1] / config
        target_dir.mkdir(parents=True, exist_ok=True)
        for split, urls in listing.items():
            target = target_dir / f"{split}.jsonl"
            if target.exists():
                skipped += 1
                continue
            temporary = target.with_suffix(".jsonl.partial")
            with temporary.open("w", encoding="utf-8") as out:
                for url in urls:
                    body = client.retrying(url, functools.partial(_download, opener, url))
                    table = parquet.read_table(io.BytesIO(body))
                    for record in table.to_pylist():
                        out.write(json.dumps(_jsonable(record), default=str) + "\n")
                        rows += 1
            os.replace(temporary, target)
            written += 1
    return {"configs": len(pairs), "splits_written": written, "splits_present": skipped, "rows": rows}


def fetch_dataset(dataset, folder: Path, progress: bool = True, client: Client | None = None,
                  opener=_open_url, registry: str | Path | None = None) -> Path:
    """``sdr data fetch scirepeval_full``: the registry of the ``scirepeval`` dataset (copied into ``folder``) and
    every dataset config its tasks read."""
    import shutil

    if dataset.name != "scirepeval_full":
        raise ValueError(f"{dataset.name}: the huggingface fetcher builds scirepeval_full only")
    if registry is None:
        from sdr import datasets

        registry = datasets.resolve("scirepeval") / "scirepeval_tasks.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    completion.begin(folder)
    shutil.copy(registry, folder / "scirepeval_tasks.jsonl")
    counts = fetch_configs(registry_datasets(registry), folder, client=client, opener=opener, progress=progress)
    print(f"SciRepEval: {counts['splits_written']} splits written ({counts['rows']:,} rows), "
          f"{counts['splits_present']} already present")
    completion.write_record(folder, dataset.name, "huggingface", counts)
    return folder
