"""The one output layer: every ``sdr`` command that writes a file or a folder goes through :class:`Outputs`.

>>> outputs = Outputs(inputs={"EDGES": edges_path}, outputs={"--out": out_path}, force=args.force)
>>> outputs.check()                      # before any work: refuses unsafe paths (see below)
>>> with outputs.commit() as staged:     # after (or around) the work
...     write_embeddings(staged["--out"], vectors)

:meth:`Outputs.check` refuses, with :class:`UnsafeOutput` (a ``ValueError``, so ``sdr`` exits with status 2 and
one line) naming the option and the path, before the command does any work:

* an output that is one of the inputs, lies inside an input folder, or (an output folder) holds an input, after
  resolving links (a hard link to an input counts too);
* an output that is a tracked source file of the repository (``git ls-files``), lies in the ``sdr`` library or
  in ``.git``, or (a folder) holds tracked files — except the files a command exists to regenerate, which it
  declares as ``maintained`` (``requirements-cpu.lock``, the notebooks ``sdr book-setup-cells`` updates);
* an output that lies outside the folder it is declared in (``within``), so no name from data or from an option
  (a profile, a chapter, a benchmark) can lead a write elsewhere; such names are checked by :func:`safe_name`;
* a link at an output's own path (a file or folder): nothing is ever written *through* a link;
* two outputs that name the same file;
* an output file that exists, unless ``force`` (the command's ``--force``) or it is ``maintained`` — nothing is
  replaced silently; an output folder that holds files, unless ``force``, or it is a scratch folder the command
  made itself (``owned``: it carries the command's mark file and the command clears it);
* an output that cannot be written: a special file (FIFO, device), a folder where a file is expected, a folder
  that does not let us create a file (checked by creating and removing one), so a long run never ends on
  "permission denied".

:meth:`Outputs.commit` hands out temporary paths next to each output (same folder, so the final rename is
atomic; a folder output gets a temporary sibling folder); when the block ends without an error every temporary
is renamed into place, otherwise (an error, an interrupt, ``SIGTERM`` under ``sdr``) every one is removed, so a
failure leaves neither half-written files nor a mix of old and new ones.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from sdr.jsonio import file_kind

REPOSITORY = Path(__file__).resolve().parents[2]
"""The checkout this library runs from (its tracked files are never outputs)."""
LIBRARY = Path(__file__).resolve().parent


class UnsafeOutput(ValueError):
    """An output path that would destroy an input or a source file, replace a file without ``--force``, write
    through a link or outside its folder, or cannot be written."""


# ------------------------------------------------------------------------------------------------ argparse

def scratch_folder(prefix: str) -> Path:
    """A new temporary folder that is removed when the process exits (a chapter's or a data check's scratch).

    Every run makes one; without the removal a researcher's ``/tmp`` (and CI's disk) fills with one per chapter run.
    A process killed with ``SIGKILL`` still leaves its folder: the prefix names the owner.
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, True)
    return folder

def output_file(text: str) -> Path:
    """``argparse`` type of an option naming a file the command writes (checked by :class:`Outputs`)."""
    return Path(text)


def output_folder(text: str) -> Path:
    """``argparse`` type of an option naming a folder the command writes into (checked by :class:`Outputs`)."""
    return Path(text)


OUTPUT_TYPES = (output_file, output_folder)
"""The argparse types that mark an option as an output; ``tests/test_output_layer.py`` enumerates them."""


# ------------------------------------------------------------------------------------------------ names
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}")


def safe_name(value, what: str) -> str:
    """``value`` when it can be one path component of a file the command writes: letters, digits, ``_ . + -``,
    not starting with a dot or dash, no ``..``, no separator, no space; otherwise :class:`UnsafeOutput`. A name
    such as ``../cfs3/paper`` would place a write outside its folder."""
    if not isinstance(value, str) or not _NAME.fullmatch(value) or ".." in value:
        raise UnsafeOutput(f"{what} {value!r}: not a plain name (expected letters, digits, '_', '.', '+', '-', "
                           f"starting with a letter or digit, no '..', no path separator)")
    return value


# ------------------------------------------------------------------------------------------------ paths
def _resolved(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file: equal after resolving links, or the same inode (hard links)."""
    a, b = Path(a), Path(b)
    if _resolved(a) == _resolved(b):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _under(path: Path, folder: Path) -> bool:
    """``path`` lies inside ``folder`` (both resolved; neither needs to exist), ``folder`` itself excluded."""
    inner, outer = _resolved(path), _resolved(folder)
    return inner != outer and inner.is_relative_to(outer)


def _inside(path: Path, folder: Path) -> bool:
    """``path`` lies inside the existing folder ``folder`` (an input file holds nothing)."""
    return Path(folder).is_dir() and _under(path, folder)


def _nearest_existing(folder: Path) -> Path:
    folder = Path(os.path.abspath(folder))
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    return folder


@lru_cache(maxsize=4)
def tracked_files(root: Path = REPOSITORY) -> frozenset[Path]:
    """The resolved paths of the repository's tracked files (``git ls-files``). Without git (an installed
    package, a tarball), every file under the source folders and the root's own files count as tracked."""
    root = _resolved(root)
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, timeout=60,
                                check=True).stdout.decode("utf-8", "surrogateescape")
        names = [name for name in listed.split("\0") if name]
        if names:
            return frozenset(_resolved(root / name) for name in names)
    except (OSError, subprocess.SubprocessError):
        pass
    found = {path for path in root.iterdir() if path.is_file()} if root.is_dir() else set()
    for folder in ("lib", "notebooks", "tests", "data", "benchmarks", "book"):
        if (root / folder).is_dir():
            found.update(p for p in (root / folder).rglob("*") if p.is_file() and "chapters" not in p.parts)
    return frozenset(_resolved(p) for p in found)


def protected_reason(path: str | Path, folder: bool = False) -> str | None:
    """Why ``path`` must not be written (a tracked source file, the library, ``.git``; a folder: one that holds
    tracked files or the repository itself), or None."""
    resolved = _resolved(path)
    repository = _resolved(REPOSITORY)
    if resolved == LIBRARY or resolved.is_relative_to(LIBRARY):
        return f"lies in the sdr library {LIBRARY}"
    if resolved.is_relative_to(repository / ".git"):
        return "lies in the repository's .git folder"
    tracked = tracked_files(REPOSITORY)
    if resolved in tracked:
        return f"is a tracked source file of the repository ({resolved.relative_to(repository)})"
    if folder:
        if repository.is_relative_to(resolved):
            return f"holds the repository {repository}"
        held = next((p for p in tracked if p.is_relative_to(resolved)), None)
        if held is not None:
            return f"holds tracked source files of the repository (e.g. {held.relative_to(repository)})"
    return None


def check_writable(path: Path, label: str) -> None:
    """Raise :class:`UnsafeOutput` unless a file can be created at ``path`` (its folder is created later)."""
    if os.path.islink(path):
        raise UnsafeOutput(f"{label} {path}: is a symbolic link (to {os.readlink(path)}); outputs are never "
                           f"written through a link: remove the link or choose another path")
    if path.is_dir():
        raise UnsafeOutput(f"{label} {path}: is a folder; expected the path of a file to write")
    if path.exists() and file_kind(path) is not None:
        raise UnsafeOutput(f"{label} {path}: is {file_kind(path)}; expected the path of a regular file to write")
    _check_can_create_in(path.parent, label, path)


def _check_can_create_in(folder: Path, label: str, path: Path) -> None:
    if os.path.lexists(folder):
        if not folder.is_dir():
            raise UnsafeOutput(f"{label} {path}: {folder} is not a folder")
        try:
            handle, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".probe")
        except OSError as error:
            raise UnsafeOutput(f"{label} {path}: cannot write in {folder} ({error.strerror})") from None
        os.close(handle)
        os.remove(probe)
        return
    ancestor = _nearest_existing(folder)
    if not ancestor.is_dir():
        raise UnsafeOutput(f"{label} {path}: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UnsafeOutput(f"{label} {path}: cannot create {folder} (no write permission in {ancestor})")


def _holds_files(folder: Path) -> bool:
    try:
        return any(True for _ in folder.iterdir())
    except OSError:
        return False


# ------------------------------------------------------------------------------------------------ the layer
class Outputs:
    """The inputs and outputs of one command; see the module docstring.

    Args:
        inputs: ``{label: path}`` of everything the command reads (files or folders; None entries ignored).
        outputs: ``{label: path}`` of the files it writes (None entries ignored); labels are the options
            (``"--out"``) so errors say which argument to change.
        force: replace existing outputs (the command's ``--force``).
        folders: ``{label: path}`` of folders written as a whole (``sdr graph embed --work-dir``): staged in a
            temporary sibling folder and renamed into place; one that holds files is replaced only with ``force``.
        stores: ``{label: path}`` of folders the command writes named files into (``sdr chapter --output-dir``,
            the results store, ``--embeddings-dir``): checked like any output (not an input, not holding one,
            not the sources, not a link, writable), created when absent; the files themselves are ``outputs``
            declared ``within`` the store.
        within: ``{label: folder}``: the output ``label`` must lie inside ``folder`` (resolved).
        maintained: labels of outputs the command exists to regenerate (may be tracked files; replaced
            without ``--force``).
        owned: ``{label: mark file name}``: a store the command empties and refills (a scratch folder); an
            existing one must be empty or carry the mark (written by :meth:`claim`), so only the command's own
            scratch folder is ever removed.
    """

    def __init__(self, inputs: Mapping[str, str | Path | None], outputs: Mapping[str, str | Path | None] | None = None,
                 force: bool = False, *, folders: Mapping[str, str | Path | None] | None = None,
                 stores: Mapping[str, str | Path | None] | None = None,
                 within: Mapping[str, str | Path] | None = None, maintained: Iterable[str] = (),
                 owned: Mapping[str, str] | None = None):
        self.inputs = {label: Path(path) for label, path in inputs.items() if path is not None}
        self.outputs = {label: Path(path) for label, path in (outputs or {}).items() if path is not None}
        self.folders = {label: Path(path) for label, path in (folders or {}).items() if path is not None}
        self.stores = {label: Path(path) for label, path in (stores or {}).items() if path is not None}
        self.within = {label: Path(folder) for label, folder in (within or {}).items()}
        self.maintained = set(maintained)
        self.owned = dict(owned or {})
        self.force = force
        self.replaced: list[Path] = []
        self.checked: list[str] = []

    # ------------------------------------------------------------------ checks
    def _check_common(self, label: str, path: Path, folder: bool) -> None:
        if label not in self.maintained:
            reason = protected_reason(path, folder=folder)
            if reason:
                raise UnsafeOutput(f"{label} {path} {reason}; write the output elsewhere (nothing was written)")
        if label in self.within and not _under(path, self.within[label]):
            raise UnsafeOutput(f"{label} {path} lies outside its folder {self.within[label]} (after resolving "
                               f"links); nothing was written")
        for input_label, source in self.inputs.items():
            if same_file(path, source):
                raise UnsafeOutput(f"{label} {path} is the input {input_label} {source} (the same file after "
                                   f"resolving links); write the output to another path")
            if _inside(path, source):
                raise UnsafeOutput(f"{label} {path} lies inside the input folder {input_label} {source}; "
                                   f"write the output elsewhere")
            if folder and (label in self.folders or label in self.owned) and _under(source, path):
                raise UnsafeOutput(f"{label} {path} holds the input {input_label} {source}; give the output an "
                                   f"empty or new folder of its own")

    def _check_file(self, label: str, path: Path) -> None:
        self._check_common(label, path, folder=False)
        if os.path.islink(path):
            raise UnsafeOutput(f"{label} {path}: is a symbolic link (to {os.readlink(path)}); outputs are never "
                               f"written through a link: remove the link or choose another path")
        if path.exists() and not path.is_dir() and file_kind(path) is None and not self.force \
                and label not in self.maintained:
            raise UnsafeOutput(f"{label} {path} exists; pass --force to replace it (nothing was written)")
        check_writable(path, label)

    def _check_folder(self, label: str, path: Path, whole: bool = True) -> None:
        self._check_common(label, path, folder=True)
        if os.path.islink(path):
            raise UnsafeOutput(f"{label} {path}: is a symbolic link (to {os.readlink(path)}); outputs are never "
                               f"written through a link: give the folder's own path")
        if path.exists() and not path.is_dir():
            raise UnsafeOutput(f"{label} {path}: is {file_kind(path) or 'a file'}; expected a folder")
        if path.is_dir() and label in self.owned and _holds_files(path) and not (path / self.owned[label]).exists():
            raise UnsafeOutput(f"{label} {path}: holds files and has no {self.owned[label]} mark, so it was not made "
                               f"by this command, which empties it; give a new or empty folder")
        if whole and path.is_dir() and not self.force and _holds_files(path):
            raise UnsafeOutput(f"{label} {path} holds files; pass --force to replace what the command writes "
                               f"there, or give a new or empty folder (nothing was written)")
        _check_can_create_in(path, label, path / ".probe")

    def check(self) -> "Outputs":
        """Refuse unsafe outputs (see the module docstring) before any work is done."""
        seen: dict[str, Path] = {}
        for label, path in self.outputs.items():
            self._check_file(label, path)
            for other_label, other in seen.items():
                if same_file(path, other):
                    raise UnsafeOutput(f"{label} {path} and {other_label} {other} name the same file; give each "
                                       f"output its own path")
            seen[label] = path
            self.checked.append(label)
        for label, path in [*self.folders.items(), *self.stores.items()]:
            self._check_folder(label, path, whole=label in self.folders)
            for other_label, other in seen.items():
                if same_file(path, other):
                    raise UnsafeOutput(f"{label} {path} and {other_label} {other} name the same path")
            seen[label] = path
            self.checked.append(label)
        return self

    # ------------------------------------------------------------------ writing
    def claim(self, label: str) -> Path:
        """Create the ``owned`` store ``label`` (emptied first when it carries the mark) and mark it."""
        folder = self.stores[label]
        self._check_folder(label, folder, whole=False)
        if folder.is_dir() and _holds_files(folder):
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / self.owned[label]).write_text(f"made by sdr; emptied and refilled by the command that made it\n",
                                                encoding="utf-8")
        return folder

    @contextmanager
    def commit(self) -> Iterator[dict[str, Path]]:
        """``{label: temporary path}`` for every file and folder output; renamed into place when the block
        succeeds, removed when it fails or is interrupted.

        Outputs that the block leaves unwritten are not created (an optional output nobody wrote)."""
        self.check()
        staged: dict[str, Path] = {}
        try:
            for label, path in self.outputs.items():
                path.parent.mkdir(parents=True, exist_ok=True)
                handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                                     suffix=f".partial{''.join(path.suffixes[-2:])}")
                os.close(handle)
                os.remove(temporary)  # the writer creates it; an unwritten output stays absent
                staged[label] = Path(temporary)
            for label, path in self.folders.items():
                path.parent.mkdir(parents=True, exist_ok=True)
                staged[label] = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial"))
            yield staged
            for label, temporary in staged.items():
                if label in self.folders:
                    self._place_folder(label, temporary)
                elif temporary.exists():
                    target = self.outputs[label]
                    if os.path.islink(target):
                        raise UnsafeOutput(f"{label} {target}: became a symbolic link while the command ran; "
                                           f"not written through it")
                    if target.exists():
                        self.replaced.append(target)
                        if label not in self.maintained:
                            print(f"{label} {target}: replaced the existing file (--force)", file=sys.stderr)
                    os.replace(temporary, target)
        finally:
            for temporary in staged.values():
                if temporary.is_dir() and not temporary.is_symlink():
                    shutil.rmtree(temporary, ignore_errors=True)
                elif os.path.lexists(temporary):
                    temporary.unlink()

    def _place_folder(self, label: str, temporary: Path) -> None:
        target = self.folders[label]
        if os.path.islink(target):
            raise UnsafeOutput(f"{label} {target}: became a symbolic link while the command ran; not written")
        if not target.exists():
            os.replace(temporary, target)
            return
        # --force over a folder with files: the new folder replaces it whole (the old one is removed after)
        old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old"))
        old.rmdir()
        os.replace(target, old)
        os.replace(temporary, target)
        self.replaced.append(target)
        print(f"{label} {target}: replaced the existing folder (--force)", file=sys.stderr)
        shutil.rmtree(old, ignore_errors=True)

    def written(self) -> list[Path]:
        return [path for path in [*self.outputs.values(), *self.folders.values()] if path.exists()]

    def store(self, label: str, create: bool = True) -> Path:
        """The store folder ``label``, created (after the checks) when absent."""
        folder = self.stores[label]
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        return folder


def write_text(path: str | Path, text: str, label: str = "output", *, within: str | Path | None = None,
               inputs: Mapping[str, str | Path | None] | None = None, maintained: bool = True) -> Path:
    """Write ``text`` to ``path`` through the layer: a store or generated file the command owns (replaced
    without ``--force`` when ``maintained``), never through a link, never outside ``within``, atomically."""
    path = Path(path)
    outputs = Outputs(inputs or {}, {label: path}, force=True, within={label: within} if within else None,
                      maintained=[label] if maintained else ())
    with outputs.commit() as staged:
        staged[label].write_text(text, encoding="utf-8")
    return path


@contextmanager
def rewritten(path: str | Path, label: str | None = None, maintained: bool = True) -> Iterator[Path]:
    """Rewrite a file in place atomically (``sdr book-setup-cells`` updating a notebook, ``book-publish configure``
    updating ``_config.yml``): the block writes the new content to the yielded temporary path, which then
    replaces ``path``; an error leaves ``path`` as it was. A link is never written through, and (unless
    ``maintained``, the default for the files a command exists to update) a tracked source file is refused.
    For a command's *outputs*, use :class:`Outputs`, which never lets an output be an input."""
    path = Path(path)
    label = label or str(path)
    if os.path.islink(path):
        raise UnsafeOutput(f"{label}: {path} is a symbolic link (to {os.readlink(path)}); it is not rewritten "
                           f"through the link")
    if path.exists() and file_kind(path) is not None:
        raise UnsafeOutput(f"{label}: {path} is {file_kind(path)}; expected a regular file")
    if not maintained:
        reason = protected_reason(path)
        if reason:
            raise UnsafeOutput(f"{label}: {path} {reason}")
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                         suffix=f".partial{''.join(path.suffixes[-2:])}")
    os.close(handle)
    try:
        yield Path(temporary)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)  # keep the file's permissions
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
