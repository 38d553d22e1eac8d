"""Writing a command's output files safely: never over an input, checked before the work, all or nothing.

Every ``sdr`` command that writes files goes through :class:`Outputs`:

>>> outputs = Outputs(inputs={"EDGES": edges_path}, outputs={"--out": out_path}, force=args.force)
>>> outputs.check()                      # before any work: refuses unsafe paths (see below)
>>> with outputs.commit() as staged:     # after the work
...     write_embeddings(staged["--out"], vectors)

:meth:`Outputs.check` refuses, with :class:`UnsafeOutput` (a ``ValueError``, so ``sdr`` exits with status 2)
naming the option and the path:

* an output that is one of the inputs, or lies inside an input folder, after resolving links (a hard link
  to an input counts too);
* two outputs that name the same file;
* an output that exists, unless ``force`` (the command's ``--force``) — nothing is replaced silently;
* an output that cannot be written: a folder, or a folder that does not let us create a file there (the check
  creates and removes a temporary file, so a long run never ends on "permission denied").

:meth:`Outputs.commit` hands out temporary paths next to each output (same folder, so the final rename is
atomic); when the block ends without an error every temporary file is renamed into place, otherwise every
one is removed, so an error or an interrupt leaves neither half-written files nor a mix of old and new ones.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


class UnsafeOutput(ValueError):
    """An output path that would destroy an input, replace a file without ``--force``, or cannot be written."""


def _resolved(path: Path) -> Path:
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


def _inside(path: Path, folder: Path) -> bool:
    return folder.is_dir() and _resolved(path).is_relative_to(_resolved(folder))


def _nearest_existing(folder: Path) -> Path:
    folder = Path(os.path.abspath(folder))
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def check_writable(path: Path, label: str) -> None:
    """Raise :class:`UnsafeOutput` unless a file can be created at ``path`` (its folder is created later)."""
    if path.is_dir():
        raise UnsafeOutput(f"{label} {path}: is a folder; expected the path of a file to write")
    folder = path.parent
    if folder.exists():
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


class Outputs:
    """The input and output paths of one command; see the module docstring.

    Args:
        inputs: ``{label: path}`` of everything the command reads (files or folders; None entries ignored).
        outputs: ``{label: path}`` of everything it writes (None entries ignored); labels are the options
            (``"--out"``) so errors say which argument to change.
        force: replace existing outputs (the command's ``--force``).
    """

    def __init__(self, inputs: Mapping[str, str | Path | None], outputs: Mapping[str, str | Path | None],
                 force: bool = False):
        self.inputs = {label: Path(path) for label, path in inputs.items() if path is not None}
        self.outputs = {label: Path(path) for label, path in outputs.items() if path is not None}
        self.force = force
        self.replaced: list[Path] = []

    def check(self) -> "Outputs":
        """Refuse unsafe outputs (see the module docstring) before any work is done."""
        seen: dict[str, Path] = {}
        for label, path in self.outputs.items():
            for input_label, source in self.inputs.items():
                if same_file(path, source):
                    raise UnsafeOutput(f"{label} {path} is the input {input_label} {source} (the same file after "
                                       f"resolving links); write the output to another path")
                if _inside(path, source):
                    raise UnsafeOutput(f"{label} {path} lies inside the input folder {input_label} {source}; "
                                       f"write the output elsewhere")
            for other_label, other in seen.items():
                if same_file(path, other):
                    raise UnsafeOutput(f"{label} {path} and {other_label} {other} name the same file; give each "
                                       f"output its own path")
            seen[label] = path
            if path.exists() and not path.is_dir() and not self.force:
                raise UnsafeOutput(f"{label} {path} exists; pass --force to replace it (nothing was written)")
            check_writable(path, label)
        return self

    @contextmanager
    def commit(self) -> Iterator[dict[str, Path]]:
        """``{label: temporary path}``; renamed into place when the block succeeds, removed when it fails.

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
            yield staged
            for label, temporary in staged.items():
                if temporary.exists():
                    target = self.outputs[label]
                    if target.exists():
                        self.replaced.append(target)
                        print(f"{label} {target}: replaced the existing file (--force)", file=sys.stderr)
                    os.replace(temporary, target)
        finally:
            for temporary in staged.values():
                if temporary.exists():
                    temporary.unlink()

    def written(self) -> list[Path]:
        return [path for path in self.outputs.values() if path.exists()]


@contextmanager
def rewritten(path: str | Path) -> Iterator[Path]:
    """Rewrite a file in place atomically (``sdr book-setup-cells`` updating a notebook): the block writes the
    new content to the yielded temporary path, which then replaces ``path``; an error leaves ``path`` as it
    was. For a command's *outputs*, use :class:`Outputs`, which never lets an output be an input."""
    path = Path(path)
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
