"""Digests of data files, and the lock file that pins the files the registry cannot.

:func:`sha256_of` is the one digest every check uses. Files whose bytes the registry cannot pin (the
mirror does not have them) are pinned in ``data/datasets.lock.json`` (``$SDR_DATA_LOCK``), which is committed:
by their git blob id where the file is a blob of a repository at a fixed commit (``git_blob_sha1``, read from the
repository's tree without its bytes: :func:`git_blob_sha1`), and by their first download (size and sha256). A
download or check must match every digest its entry has; a download that does not is never written to the cache.

Changes here concern the lock file's format and rules only; the registry and the download code do not
change with them.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from sdr.datasets.registry import Dataset, get


def sha256_of(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git_blob_sha1(path: str | Path) -> str:
    """The git blob id of a file (``git hash-object``): sha1 of ``blob <size>\\0`` and the bytes."""
    path = Path(path)
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def lock_path() -> Path:
    """``$SDR_DATA_LOCK`` or ``data/datasets.lock.json`` of the checkout."""
    configured = os.environ.get("SDR_DATA_LOCK")
    return Path(configured) if configured else Path(__file__).resolve().parents[3] / "data" / "datasets.lock.json"


def read_lock() -> dict:
    path = lock_path()
    if not path.exists():
        return {}
    from sdr.jsonio import load_json

    lock = load_json(path, "{dataset: {file: {size, sha256}}}")  # strict: a repeated key is an error
    if not isinstance(lock, dict):
        raise ValueError(f"{path}: expected {{dataset: {{file: {{size, sha256}}}}}}")
    return lock


def expected_digest(dataset: str | Dataset, relative: str) -> str | None:
    """The sha256 a file must have: the registry's, else the lock file's, else None (not pinned yet)."""
    dataset = get(dataset)
    for data_file in dataset.files:
        if data_file.path == relative and data_file.sha256:
            return data_file.sha256
    entry = read_lock().get(dataset.name, {}).get(relative)
    return entry.get("sha256") if isinstance(entry, dict) else None


def lock_entry(dataset: str | Dataset, relative: str) -> dict:
    """The lock file's entry for a file (``{}`` when it has none)."""
    entry = read_lock().get(get(dataset).name, {}).get(relative)
    return entry if isinstance(entry, dict) else {}


def check_against_lock(dataset: str | Dataset, relative: str, path: str | Path) -> None:
    """Raise ``ValueError`` when ``path`` differs from a digest the lock file has for ``dataset/relative``."""
    entry = lock_entry(dataset, relative)
    if entry.get("sha256") and sha256_of(path) != entry["sha256"]:
        raise ValueError(f"{dataset if isinstance(dataset, str) else dataset.name}/{relative}: sha256 "
                         f"{sha256_of(path)} differs from {lock_path()}'s pinned {entry['sha256']}")
    if entry.get("git_blob_sha1") and git_blob_sha1(path) != entry["git_blob_sha1"]:
        raise ValueError(f"{dataset if isinstance(dataset, str) else dataset.name}/{relative}: git blob "
                         f"{git_blob_sha1(path)} differs from {lock_path()}'s pinned {entry['git_blob_sha1']} "
                         f"({entry.get('source', 'the repository at the registry commit')})")


def pin(dataset: str | Dataset, folder: str | Path) -> dict[str, str]:
    """Check every downloaded file without a registry digest against the lock file, and record those not in it.

    Returns ``{path: "pinned" | "matches lock" | "registry"}``; a file whose bytes differ from its lock entry
    raises ``ValueError`` naming the file, both digests and the lock file.
    """
    dataset, folder = get(dataset), Path(folder)
    lock = read_lock()
    entries = lock.setdefault(dataset.name, {})
    status, changed = {}, False
    for data_file in dataset.files:
        path = folder / data_file.path
        if data_file.archive or not path.is_file():
            continue
        if data_file.sha256:
            status[data_file.path] = "registry"
            continue
        digest, size = sha256_of(path), path.stat().st_size
        known = entries.get(data_file.path)
        if known and known.get("git_blob_sha1") and git_blob_sha1(path) != known["git_blob_sha1"]:
            raise ValueError(f"{path}: git blob {git_blob_sha1(path)} differs from {lock_path()}'s "
                             f"{known['git_blob_sha1']} for {dataset.name}/{data_file.path} "
                             f"({known.get('source', 'the repository at the registry commit')})")
        if known and not known.get("sha256"):  # pinned by its git blob id so far: add the download's sha256
            known.update({"size": size, "sha256": digest})
            status[data_file.path] = "pinned"
            changed = True
        elif known:
            if known.get("sha256") != digest:
                raise ValueError(f"{path}: sha256 {digest} ({size} bytes) differs from {lock_path()}'s "
                                 f"{known.get('sha256')} ({known.get('size')} bytes) for {dataset.name}/"
                                 f"{data_file.path}: the upstream file changed or the download is damaged")
            status[data_file.path] = "matches lock"
        else:
            entries[data_file.path] = {"size": size, "sha256": digest, "url": data_file.url,
                                       "recorded": datetime.now(timezone.utc).date().isoformat()}
            status[data_file.path] = "pinned"
            changed = True
    if changed:
        target = lock_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_suffix(".tmp")
        temporary.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temporary, target)
        print(f"{dataset.name}: pinned {sum(v == 'pinned' for v in status.values())} files by their first download "
              f"in {target} (commit it to pin them for everyone)")
    return status
