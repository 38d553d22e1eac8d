"""Where a data set is found and how it is fetched: ``$SDR_DATA`` → cache → download.

Code never hard-codes a data path; it calls :func:`resolve`, whose lookup order is

1. ``$SDR_DATA/<folder>`` (the shared read-only mirror, what the tests use),
2. the cache ``$SDR_DATA_CACHE/<folder>`` or ``~/.cache/sdr/<folder>``,
3. a download into the cache (``urllib``; files are checked against their sha256),

and, when all three fail (offline and missing), raises :class:`DatasetUnavailable` with one line
saying what to set. Downloads are atomic (staging folders, ``.part`` files) so a failed one leaves
nothing that looks like data; :func:`fetch_any` also takes the API route (:mod:`sdr.fetchers`) and pins
first downloads (:func:`sdr.datasets.lock.pin`); :func:`fetch_model` gets a Hub model. Nothing here
copies data into the repository.

This is the module that changes with the network and the file system (timeouts, caches, archives,
interrupted downloads), not with the registry's entries or the data policy.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from tqdm.auto import tqdm

from sdr.datasets.lock import expected_digest, git_blob_sha1, lock_entry, lock_path, pin, sha256_of
from sdr.datasets.registry import DATASETS, Dataset, get


DOWNLOAD_TIMEOUT_S = 60


class DatasetUnavailable(FileNotFoundError):
    """A dataset is in neither ``$SDR_DATA`` nor the cache and could not be downloaded."""


def cache_dir() -> Path:
    """``$SDR_DATA_CACHE`` or ``~/.cache/sdr`` (not created here)."""
    configured = os.environ.get("SDR_DATA_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "sdr"


def data_root() -> Path | None:
    """``$SDR_DATA`` if set and present, else the cache folder if it holds at least one complete dataset,
    else ``None``. An empty or partial cache (a failed download) is not data: it must not switch
    ``use_real_data: auto`` on."""
    configured = os.environ.get("SDR_DATA")
    if configured and Path(configured).is_dir():
        return Path(configured)
    cache = cache_dir()
    return cache if _holds_a_dataset(cache) else None


def is_complete(dataset: str | Dataset, folder: str | Path) -> bool:
    """Whether ``folder`` holds every expected path of the dataset; a dataset built by a fetcher also needs the
    fetcher's completion record (:mod:`sdr.fetchers.completion`): files of an interrupted fetch are no data."""
    dataset, folder = get(dataset), Path(folder)
    if not folder.is_dir():
        return False
    if dataset.fetcher and not fetch_state(folder).complete:
        return False
    expected = dataset.expected_paths()
    if not expected:
        return any(folder.iterdir())
    return all((folder / p).exists() for p in expected)


def fetch_state(folder: str | Path):
    """The completion state of a fetched folder (:func:`sdr.fetchers.completion.fetch_state`)."""
    from sdr.fetchers.completion import fetch_state as state

    return state(folder)


def locate(name: str | Dataset) -> Path | None:
    """The first complete folder among ``$SDR_DATA/<folder>`` and the cache, without downloading."""
    dataset = get(name)
    configured = os.environ.get("SDR_DATA")
    candidates = [Path(configured) / dataset.folder] if configured else []
    candidates.append(cache_dir() / dataset.folder)
    return next((c for c in candidates if is_complete(dataset, c)), None)


def resolve(name: str | Dataset, download: bool = True, progress: bool = True) -> Path:
    """Folder of a dataset: ``$SDR_DATA`` → cache → download into the cache (required files only).

    Raises :class:`DatasetUnavailable` with one line naming what to set when it cannot be found.
    """
    dataset = get(name)
    found = locate(dataset)
    if found is not None:
        return found
    reason = "downloads disabled"
    if download:
        try:
            return fetch(dataset, required_only=True, progress=progress)
        except DatasetUnavailable as error:
            reason = str(error).split(": ", 1)[-1]
    raise DatasetUnavailable(_missing_message(dataset, reason))


def _missing_message(dataset: Dataset, reason: str) -> str:
    configured = os.environ.get("SDR_DATA")
    where = f"$SDR_DATA/{dataset.folder} (SDR_DATA={configured})" if configured else "$SDR_DATA (unset)"
    return (
        f"{dataset.name}: not found in {where} nor in the cache {cache_dir() / dataset.folder}, and not "
        f"downloaded ({reason}); set SDR_DATA to a folder holding {dataset.folder}/, or run "
        f"`sdr data fetch {dataset.name}` with internet access (cache: SDR_DATA_CACHE, default ~/.cache/sdr)"
    )


def _download(url: str, target: Path, expected_sha256: str | None, pinned_by: str = "the registry's",
              expected_blob: str | None = None) -> None:
    """Download ``url`` to ``target`` atomically, checking the digest when one is known (the registry's or the lock
    file's: ``pinned_by`` names which).

    The bytes go to a hidden ``.<name>.*.part`` file next to ``target`` that is renamed into place only when
    complete and checked; any failure (a digest mismatch too, or an interrupt) removes it, and removes the folders
    this call created, so a failed download leaves the cache as it was."""
    created = _missing_parents(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(handle)
    try:
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, open(temporary, "wb") as out:
                shutil.copyfileobj(response, out, length=1 << 20)
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise DatasetUnavailable(f"download failed: {url}: {reason}") from None
        if expected_sha256:
            actual = sha256_of(temporary)
            if actual != expected_sha256:
                raise ValueError(f"{url}: sha256 {actual} differs from {pinned_by} {expected_sha256}; the file was "
                                 f"not written ({target} is as it was): the upstream file changed or the download "
                                 f"is damaged")
        if expected_blob and git_blob_sha1(temporary) != expected_blob:
            raise ValueError(f"{url}: git blob {git_blob_sha1(temporary)} differs from {lock_path()}'s pinned "
                             f"{expected_blob}; the file was not written ({target} is as it was)")
        os.replace(temporary, target)
    except BaseException:
        _remove_empty(created)
        raise
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def _extract(archive: Path, folder: Path) -> None:
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(folder)
    else:
        with tarfile.open(archive) as bundle:
            bundle.extractall(folder, filter="data")


def fetch(name: str | Dataset, force: bool = False, required_only: bool = False, progress: bool = True) -> Path:
    """Download a dataset into the cache and return its folder.

    Files already present (with a matching digest when one is known) are kept unless ``force``.
    ``required_only`` skips optional files. Raises :class:`DatasetUnavailable` when a needed file has no
    URL or cannot be downloaded, ``ValueError`` when a download's sha256 differs from the registry.

    A dataset that is not in the cache yet is assembled in a hidden staging folder next to it and renamed
    into place only when complete, and archives are unpacked into a staging folder first, so a failed or
    interrupted fetch never leaves a folder that :func:`locate` or :func:`data_root` would take for data.
    """
    dataset = get(name)
    folder = cache_dir() / dataset.folder
    wanted = [f for f in dataset.files if f.required or not required_only]
    no_url = [f.path for f in wanted if f.url is None and f.required]
    if not dataset.files or no_url:
        raise DatasetUnavailable(
            f"{dataset.name}: no direct download{' for ' + ', '.join(no_url[:3]) if no_url else ''}; "
            f"{dataset.manual or 'see ' + dataset.source}"
        )
    created = _missing_parents(folder / "placeholder")
    staging = folder if folder.is_dir() else _staging_folder(folder)
    try:
        skipped_optional = []
        for data_file in tqdm(wanted, desc=f"fetch {dataset.name}", unit="file", disable=not progress):
            target = staging / data_file.path
            # the registry's digest, else the lock file's: a first download is checked against its pin before it
            # replaces anything in the cache
            digest = expected_digest(dataset, data_file.path)
            pinned_by = "the registry's" if data_file.sha256 else f"{lock_path()}'s pinned"
            blob = None if data_file.sha256 else lock_entry(dataset, data_file.path).get("git_blob_sha1")
            if target.exists() and not force and (not digest or sha256_of(target) == digest):
                continue
            try:
                _download(data_file.url, target, digest, pinned_by, blob)
            except DatasetUnavailable:
                if data_file.required:
                    raise
                skipped_optional.append(data_file.path)
                continue
            if data_file.archive:
                _extract_staged(target, staging)
        if skipped_optional:
            print(f"{dataset.name}: {len(skipped_optional)} optional files could not be downloaded "
                  f"(e.g. {', '.join(skipped_optional[:3])})", file=sys.stderr)
        if not is_complete(dataset, staging):
            raise DatasetUnavailable(f"{dataset.name}: download finished but {folder} lacks expected files "
                                     f"({', '.join(_absent_paths(dataset, staging)[:3])})")
        if staging != folder:
            os.replace(staging, folder)
    except BaseException:
        if staging != folder:
            shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(created)
        raise
    return folder


_MINILM_NAMES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def offline() -> bool:
    """``SDR_OFFLINE`` set: no download is attempted (the paper dry run, and users who want a clear stop)."""
    return os.environ.get("SDR_OFFLINE", "") not in ("", "0")


def _model_missing(name: str, download: bool) -> str | None:
    """None when a model can be loaded (a folder, the offline MiniLM, the Hugging Face cache, or downloaded now),
    else why not."""
    if Path(name).exists() or name.lower() in _MINILM_NAMES:
        return None
    from huggingface_hub import snapshot_download

    patterns = ["*.json", "*.txt", "*.safetensors", "*.model", "pytorch_model.bin"]
    try:
        snapshot_download(name, local_files_only=True, allow_patterns=patterns)
        return None
    except Exception:  # noqa: BLE001 - any failure means "not cached"
        pass
    if not download:
        return "not in the Hugging Face cache (downloads off)"
    try:
        snapshot_download(name, allow_patterns=patterns)
        return None
    except Exception as error:  # noqa: BLE001 - reported, not hidden
        return f"download failed: {type(error).__name__}: {str(error)[:200]}"


def fetch_model(name: str) -> str:
    """``sdr data fetch --model NAME``: a Hub model into the Hugging Face cache."""
    reason = _model_missing(name, download=True)
    if reason is not None:
        raise DatasetUnavailable(f"model {name}: {reason}")
    return name


def _folder_with(dataset: Dataset, paths: tuple[str, ...]) -> Path | None:
    configured = os.environ.get("SDR_DATA")
    candidates = [Path(configured) / dataset.folder] if configured else []
    candidates.append(cache_dir() / dataset.folder)
    for candidate in candidates:
        if not candidate.is_dir() or (dataset.fetcher and not fetch_state(candidate).complete):
            continue  # a fetched folder without its completion record is a partial fetch, not data
        if all((candidate / p).exists() for p in paths) if paths else any(candidate.iterdir()):
            return candidate
    return None


def partial_folder(dataset: Dataset) -> Path | None:
    """The folder of an unfinished fetch of ``dataset`` (``$SDR_DATA``, then the cache), if there is one."""
    if not dataset.fetcher:
        return None
    configured = os.environ.get("SDR_DATA")
    candidates = ([Path(configured) / dataset.folder] if configured else []) + [cache_dir() / dataset.folder]
    return next((c for c in candidates if c.is_dir() and any(c.iterdir()) and not fetch_state(c).complete), None)


#: Fetchers that read a Semantic Scholar Datasets API release chosen by ``release`` (``sdr data fetch --release``).
_RELEASE_FETCHERS = ("bulk",)


def fetch_any(name: str | Dataset, force: bool = False, progress: bool = True, release: str | None = None) -> Path:
    """Get a dataset into the cache by whatever route it has: file URLs (then pinned, :func:`pin`) or an API
    fetcher (:mod:`sdr.fetchers`). ``release``: the Datasets API release a bulk fetch reads (default the latest)."""
    dataset = get(name)
    options = {}
    if release is not None:
        if dataset.fetcher not in _RELEASE_FETCHERS:
            readers = ", ".join(n for n, d in DATASETS.items() if d.fetcher in _RELEASE_FETCHERS)
            raise ValueError(f"{dataset.name}: --release chooses a Semantic Scholar Datasets API release, which only "
                             f"the bulk datasets read ({readers})")
        options["release"] = release
    if dataset.fetcher:
        from sdr import fetchers

        folder = cache_dir() / dataset.folder
        if force and folder.is_dir():
            shutil.rmtree(folder)
        from sdr.fetchers.http import ApiError

        try:
            fetchers.fetch_dataset(dataset, folder, progress=progress, **options)  # resumes a partial fetch
        except ApiError as error:  # the API refused or the network failed: say how far it got, as one error
            what = "download failed" if error.status == 0 else "fetch failed"
            raise DatasetUnavailable(f"{dataset.name}: {what}: {error}; {fetch_state(folder).describe(dataset.name)}"
                                     ) from None
        if not is_complete(dataset, folder):
            state = fetch_state(folder)
            raise DatasetUnavailable(f"{dataset.name}: the {dataset.fetcher} fetcher finished but {folder} is not "
                                     f"complete ({state.describe(dataset.name)}; lacks "
                                     f"{[p for p in dataset.expected_paths() if not (folder / p).exists()]})")
        return folder
    folder = fetch(dataset, force=force, progress=progress)
    pin(dataset, folder)
    return folder


def _absent_paths(dataset: Dataset, folder: Path) -> list[str]:
    return [p for p in dataset.expected_paths() if not (folder / p).exists()] or ["an empty folder"]


def _holds_a_dataset(folder: Path) -> bool:
    """Whether ``folder`` (a data root) has at least one complete dataset folder of the registry."""
    return folder.is_dir() and any(is_complete(d, folder / d.folder) for d in DATASETS.values())


def _missing_parents(path: Path) -> list[Path]:
    """The folders above ``path`` that do not exist yet, deepest first (to remove them after a failure)."""
    missing = []
    for parent in Path(path).parents:
        if parent.exists():
            break
        missing.append(parent)
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove the given folders, deepest first, as long as they are empty (never anything else)."""
    for folder in folders:
        if not folder.exists():
            continue
        try:
            folder.rmdir()
        except OSError:  # not empty: someone else's files, and so are its parents
            break


def _staging_folder(folder: Path) -> Path:
    folder.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".partial"))


def _extract_staged(archive: Path, folder: Path) -> None:
    """Unpack ``archive`` into a staging folder, then move its entries into ``folder``: an interrupted
    extraction leaves no partial tree in the dataset folder."""
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".unpacking"))
    try:
        _extract(archive, staging)
        _merge_into(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _merge_into(source: Path, destination: Path) -> None:
    """Move every file of ``source`` to the same place under ``destination`` (files replaced one by one by
    rename, folders merged, nothing else of ``destination`` removed) — as unpacking in place would."""
    destination.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        target = destination / entry.name
        if entry.is_dir() and not entry.is_symlink() and target.is_dir() and not target.is_symlink():
            _merge_into(entry, target)
        else:
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(entry, target)
