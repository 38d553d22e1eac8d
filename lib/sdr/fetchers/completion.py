"""Complete or say so: the record a fetcher writes last, and the progress it writes on the way.

A fetcher builds its folder over hours or days and can be stopped at any point; files that exist are therefore
no evidence that the fetch finished. Every fetcher (:mod:`sdr.fetchers`) writes

* ``_progress.json`` while it works — ``{"phase", "done", "total", "unit", "updated"}`` (e.g. 1,234 of 136,820
  papers in the phase "references of anchors"), so ``sdr data status`` can say "partial: N of M";
* ``_complete.json`` as its very last step — the dataset, the fetcher, when, its counts (anchors, links,
  truncated link lists, ids unknown to the API, shards …), and every file of the folder with its size and sha256;
  then it removes ``_progress.json``.

A folder counts as present only with ``_complete.json`` whose files are all there with their recorded sizes
(:func:`fetch_state`); a later resume of the fetch removes the record first (:func:`begin`), so a folder is never
both being changed and called complete.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sdr.jsonio import file_kind

RECORD = "_complete.json"
PROGRESS = "_progress.json"
_OWN = (RECORD, PROGRESS)


def _write_json(path: Path, value: dict) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(value, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def begin(folder: str | Path) -> None:
    """A fetch starts or resumes in ``folder``: any completion record is removed (the folder is about to change)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RECORD).unlink(missing_ok=True)


class Progress:
    """``_progress.json`` of a fetch, written when ``every_s`` seconds passed or another 1 % of the phase is done
    (and at each phase's start and end), so it lags the fetch by little and costs little."""

    def __init__(self, folder: str | Path, every_s: float = 30.0, clock=time.monotonic):
        self.path = Path(folder) / PROGRESS
        self.every_s, self.clock = every_s, clock
        self._last, self._last_done = None, 0

    def update(self, phase: str, done: int, total: int, unit: str, force: bool = False) -> None:
        now = self.clock()
        step = max(1, total // 100)
        if (not force and self._last is not None and now - self._last < self.every_s and done < total
                and done - self._last_done < step):
            return
        self._last, self._last_done = now, done
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _write_json(self.path, {"phase": phase, "done": int(done), "total": int(total), "unit": unit,
                                "updated": datetime.now(timezone.utc).isoformat(timespec="seconds")})


def _digest(path: Path) -> str:
    from sdr.datasets.lock import sha256_of

    return sha256_of(path)


def folder_files(folder: Path) -> list[Path]:
    """Every data file of a fetched folder (not the record, the progress file or hidden temporaries)."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in _OWN
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def write_record(folder: str | Path, dataset: str, fetcher: str, counts: dict, notes: list[str] | None = None,
                 digests: bool = True) -> dict:
    """The completion record, written last: ``counts`` (what was fetched, truncated, missing), ``notes`` (what a
    reader must know, e.g. "contexts carry no per-context intents"), and every file with its size and sha256."""
    folder = Path(folder)
    files = {}
    for path in folder_files(folder):
        entry = {"size": path.stat().st_size}
        if digests:
            entry["sha256"] = _digest(path)
        files[path.relative_to(folder).as_posix()] = entry
    record = {"dataset": dataset, "fetcher": fetcher, "completed": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "counts": counts, "notes": list(notes or []), "files": files}
    _write_json(folder / RECORD, record)
    (folder / PROGRESS).unlink(missing_ok=True)
    return record


@dataclass
class FetchState:
    """What a fetched folder holds: ``complete`` with its record, else how far the fetch got (``progress``) or why
    the record does not count (``problem``)."""

    complete: bool
    record: dict = field(default_factory=dict)
    progress: dict = field(default_factory=dict)
    problem: str = ""

    def summary(self) -> str:
        """A few words: ``complete``, ``partial: N of M <unit>`` (how far the fetch got) or ``partial``."""
        if self.complete:
            return "complete"
        if self.progress and not self.problem:
            p = self.progress
            return f"partial: {p.get('done', 0):,} of {p.get('total', 0):,} {p.get('unit', 'items')}"
        return "partial"

    def describe(self, dataset_name: str) -> str:
        if self.complete:
            counts = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}"
                               for k, v in self.record.get("counts", {}).items())
            return f"complete ({self.record.get('completed', '?')}; {counts})"
        resume = f"resume with `sdr data fetch {dataset_name}`"
        if self.problem:
            return f"partial: {self.problem}; {resume}"
        if self.progress:
            phase, updated = self.progress.get("phase", "fetch"), self.progress.get("updated", "?")
            return f"{self.summary()} ({phase}, {updated}); {resume}"
        return f"partial: the fetch did not finish (no completion record); {resume}"


def fetch_state(folder: str | Path) -> FetchState:
    """The state of a fetched folder: complete only with a readable ``_complete.json`` whose every listed file is
    there with its recorded size (sizes only: ``sdr data verify`` checks the digests)."""
    folder = Path(folder)
    progress = {}
    if (folder / PROGRESS).is_file():
        try:
            progress = json.loads((folder / PROGRESS).read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            progress = {}
    path = folder / RECORD
    if not path.is_file():
        return FetchState(False, progress=progress)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return FetchState(False, progress=progress, problem=f"{path} is not valid JSON ({error})")
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, dict):
        return FetchState(False, progress=progress, problem=f"{path}: expected {{files: {{path: {{size, sha256}}}}}}")
    for relative, entry in files.items():
        target = folder / relative
        if not target.is_file():
            kind = file_kind(target)
            return FetchState(False, record, progress, f"{relative} listed in {RECORD} is "
                                                       f"{'missing' if kind == 'missing' else kind + ', not a file'}")
        if isinstance(entry, dict) and entry.get("size") is not None and target.stat().st_size != entry["size"]:
            return FetchState(False, record, progress, f"{relative} has {target.stat().st_size} bytes, "
                                                       f"{RECORD} says {entry['size']}")
    return FetchState(True, record, progress)


def verify_record(folder: str | Path) -> dict[str, str]:
    """``{path: "ok" | "mismatch" | "missing" | "special"}`` for every file the record lists (digests recomputed).

    The record is read strictly (:func:`sdr.jsonio.load_json`: a repeated key, a byte that is not UTF-8, a FIFO
    in its place are input errors) and must be ``{"files": {path: {"size", "sha256"}}}`` with every path inside
    the folder. A listed file that is not a regular file (a FIFO, a link to ``/dev/zero``) is ``special`` and
    never read: hashing it would hang or never end.
    """
    from sdr.jsonio import InputError, load_json

    folder = Path(folder)
    path = folder / RECORD
    expected = 'a completion record {"files": {path: {"size": bytes, "sha256": hex}}}'
    record = load_json(path, expected)
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, dict):
        raise InputError(f"{path}: expected {expected}")
    status = {}
    for relative, entry in files.items():
        target = folder / relative
        size, digest = (entry.get("size"), entry.get("sha256")) if isinstance(entry, dict) else (None, None)
        if not isinstance(entry, dict) or not relative or Path(relative).is_absolute() or ".." in Path(relative).parts \
                or not (size is None or type(size) is int and size >= 0) \
                or not (digest is None or isinstance(digest, str) and re.fullmatch("[0-9a-f]{64}", digest)):
            raise InputError(f"{path}: entry {relative!r}: {entry!r}; expected a path inside {folder} with "
                             f"{{\"size\": bytes, \"sha256\": hex}}")
        kind = file_kind(target)
        if kind == "missing":
            status[relative] = "missing"
        elif kind is not None:
            status[relative] = "special"
        elif digest:
            status[relative] = "ok" if _digest(target) == digest else "mismatch"
        else:
            status[relative] = "ok" if target.stat().st_size == size else "mismatch"
    return status


def cut_torn_line(path: str | Path) -> int:
    """Drop a last line without its newline (an append interrupted mid-write); returns the bytes dropped. The
    records of that line are then fetched again by the resume."""
    path = Path(path)
    if not path.is_file():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as handle:
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return 0
        # search backwards for the last newline, one block at a time (files can be gigabytes)
        position, block = size, 1 << 16
        keep = 0
        while position > 0:
            start = max(0, position - block)
            handle.seek(start)
            chunk = handle.read(position - start)
            found = chunk.rfind(b"\n")
            if found >= 0:
                keep = start + found + 1
                break
            position = start
        handle.truncate(keep)
    return size - keep
