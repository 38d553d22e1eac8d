"""What is there: each data set's files checked against their digests (:func:`verify`), where every data set
is found (:func:`status_table`), what a chapter reads at ``paper`` and what of it is missing or unpinned
(:func:`chapter_status`), and the README's table of it (:func:`paper_data_markdown`).

Reports change with what users need to see (``sdr data list/status/verify``), not with how data is fetched.
"""

from __future__ import annotations

import os
from pathlib import Path

from sdr.datasets.download import (DatasetUnavailable, _folder_with, _missing_message, cache_dir, fetch_state, locate,
                                   partial_folder)
from sdr.datasets.lock import read_lock, sha256_of
from sdr.jsonio import file_kind
from sdr.datasets.registry import CHAPTER_DATA, CHAPTER_MODELS, DATASETS, Dataset, fetch_command, get, paper_files


def verify(name: str | Dataset, folder: str | Path | None = None) -> dict[str, str]:
    """Check a dataset folder file by file: ``{path: "ok" | "mismatch" | "missing" | "absent" | "unchecked"}``.

    ``missing`` = a required file is not there; ``absent`` = an optional one is not there;
    ``unchecked`` = present, but the registry has no digest for it; ``special`` = not a regular file (a FIFO, a
    device, a link to ``/dev/zero``: never read, since hashing it would hang or never end). Without ``folder``: the located folder,
    else the first incomplete one that exists (``$SDR_DATA/<folder>``, then the cache), so the report names
    the files it lacks; :class:`DatasetUnavailable` only when there is no folder at all.
    """
    dataset = get(name)
    folder = Path(folder) if folder is not None else verified_folder(dataset)
    status = {}
    for data_file in dataset.files:
        path = folder / data_file.path
        kind = file_kind(path)
        if kind == "missing":
            status[data_file.path] = "missing" if data_file.required else "absent"
        elif kind is not None:
            status[data_file.path] = "special"
        elif not data_file.sha256:
            status[data_file.path] = "unchecked"
        else:
            status[data_file.path] = "ok" if sha256_of(path) == data_file.sha256 else "mismatch"
    for expected in dataset.expected_paths():  # entries without files (manual downloads) list paths only
        if expected not in status and not (folder / expected).exists():
            status[expected] = "missing"
    if dataset.fetcher:  # a fetched folder: its completion record lists every file with its digest
        from sdr.fetchers.completion import RECORD, verify_record

        kind = file_kind(folder / RECORD)
        if kind == "missing":
            status[RECORD] = "missing"
        elif kind is not None:
            status[RECORD] = "special"
        else:  # listed files are checked even when the folder is incomplete: the report says which file is wrong
            status.update(verify_record(folder))
    return status


def status_table() -> list[dict]:
    """One row per dataset: name, where it is found (SDR_DATA / cache / missing, or ``partial: N of M <unit>``
    for an interrupted fetch, as :func:`chapter_status` says; ``detail`` then says how to resume), licence, files."""
    rows = []
    configured = os.environ.get("SDR_DATA")
    for dataset in DATASETS.values():
        found, detail = locate(dataset), ""
        if found is None:
            found = partial_folder(dataset)
            where = "missing" if found is None else fetch_state(found).summary()
            detail = "" if found is None else fetch_state(found).describe(dataset.name)
        elif configured and found == Path(configured) / dataset.folder:
            where = "SDR_DATA"
        else:
            where = "cache"
        rows.append({"name": dataset.name, "where": where, "path": str(found) if found else "",
                     "files": len(dataset.files), "licence": dataset.licence,
                     "description": dataset.description, "detail": detail})
    return rows


def chapter_status(chapter: str) -> list[dict]:
    """``sdr data status --for CHAPTER``: each dataset the chapter reads at ``paper``, where it is, what is missing
    and which of its files are not pinned by a digest (registry or lock file)."""
    if chapter not in CHAPTER_DATA:
        raise ValueError(f"unknown chapter {chapter!r}; chapters: {', '.join(CHAPTER_DATA)}")
    rows = []
    lock = read_lock()
    for name in CHAPTER_DATA[chapter]:
        dataset = get(name)
        files = paper_files(dataset)
        folder = _folder_with(dataset, files) or _folder_with(dataset, dataset.expected_paths())
        missing = [p for p in files if folder is None or not (folder / p).exists()]
        unpinned = [f.path for f in dataset.files if not f.sha256 and not f.archive
                    and f.path not in lock.get(name, {})]
        detail = ""
        if folder is None:
            partial = partial_folder(dataset)
            if partial is not None:  # an interrupted fetch: how far it got, and how to resume it
                state, folder = "partial", partial
                detail = fetch_state(partial).describe(name)
                missing = [p for p in files if not (partial / p).exists()]
            else:
                state = "missing"  # also for a dataset that lists no files (scirepeval_full): its folder is not there
        elif dataset.fetcher:
            state = "present"  # _folder_with found its completion record
            detail = fetch_state(folder).describe(name)
        else:
            state = "present" if not missing else "incomplete"
        rows.append({"dataset": name, "state": state, "folder": str(folder or ""), "missing": missing,
                     "unpinned": unpinned, "get it": fetch_command(dataset), "detail": detail})
    return rows


def verified_folder(dataset: Dataset) -> Path:
    """The folder :func:`verify` checks: the located one, else the first existing (incomplete) candidate."""
    found = locate(dataset) or partial_folder(dataset)
    if found is not None:
        return found
    configured = os.environ.get("SDR_DATA")
    candidates = ([Path(configured) / dataset.folder] if configured else []) + [cache_dir() / dataset.folder]
    existing = next((c for c in candidates if c.is_dir()), None)
    if existing is None:
        raise DatasetUnavailable(_missing_message(dataset, "no folder to verify"))
    return existing


def paper_data_markdown() -> str:
    """The README's table of what each chapter reads at ``paper`` (:data:`CHAPTER_DATA`, :data:`CHAPTER_MODELS`)
    and how each dataset is fetched; ``tests/test_readme.py`` keeps the README's copy equal to it."""
    lines = ["| chapter | data sets it reads at `paper` | released models it scores |", "|---|---|---|"]
    for chapter, names in CHAPTER_DATA.items():
        if not names:
            continue
        data = ", ".join(f"`{n}`" + (" (API)" if get(n).fetcher else " (manual)" if not get(n).files else "")
                         for n in names)
        models = ", ".join(f"`{m}`" for m in CHAPTER_MODELS.get(chapter, ())) or "—"
        lines.append(f"| {chapter} | {data} | {models} |")
    return "\n".join(lines)
