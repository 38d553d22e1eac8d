"""Reading text, JSON and JSONL input strictly, with errors that name the file, the line and what was expected.

Every reader in the package goes through these, so a malformed file fails the same way everywhere, with
:class:`InputError` (a ``ValueError``) and the message ``FILE:LINE: what was found; expected …``:

* ``.gz`` files are read transparently; a ``.gz`` that is not gzip, or is truncated, is an error;
* text must be UTF-8 (a leading byte-order mark is allowed): a bad byte names its line and column;
* an object that repeats a key is an error (plain ``json`` keeps the last value silently);
* with ``finite=True`` — the readers of what users hand in: embeddings, rankings, scores, abstracts,
  sentences — ``NaN``, ``Infinity`` and numbers that overflow a float are errors too (JSON has none of them).
  The official benchmark files are read with ``finite=False``, since some carry Python's ``NaN`` in fields
  nobody uses (SciCite's ``citeStart``, S2ORC's ``year``); a reader that uses a number checks it.
"""

from __future__ import annotations

import gzip
import json
import math
import numbers
import os
import re
import stat
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tqdm.auto import tqdm

GZIP_MAGIC = b"\x1f\x8b"
# A float literal that may overflow: an exponent of three digits or more, or a 309-digit mantissa. Only lines
# that contain one are parsed with the slower finite-float check (an embedding line has hundreds of floats).
_MAYBE_OVERFLOW = re.compile(r"[eE]\+?\d{3}|\d{309}")


class InputError(ValueError):
    """Bad input. The message names the file, the line (or the record) and what was expected.

    A ``ValueError``, so callers that catch ``ValueError`` keep working; ``sdr`` reports it in one line and
    exits with status 2.
    """


class _StrictJSONError(ValueError):
    """Raised by the decoder hooks; turned into an :class:`InputError` that names the file and line."""


def _reject_constant(name: str):
    raise _StrictJSONError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _StrictJSONError(f"{text[:40]} overflows a 64-bit float")
    return value


def _unique_keys(pairs: list) -> dict:
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _StrictJSONError(f"key {repeated!r} appears twice in one object")
    return record


_LENIENT_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
_CHECKED_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys,
                                    parse_float=_finite_float)


def parse_json(text: str, finite: bool = True):
    """``json.loads`` without repeated keys and, when ``finite``, without NaN, infinities or overflowing numbers.

    Raises ``json.JSONDecodeError`` for syntax errors and ``ValueError`` (with the reason) for the rest,
    including nesting too deep for the parser.
    """
    decoder = _LENIENT_DECODER if not finite else _CHECKED_DECODER if _MAYBE_OVERFLOW.search(text) else _DECODER
    try:
        return decoder.decode(text)
    except RecursionError:
        raise _StrictJSONError("arrays or objects nested too deeply") from None


def is_number(value) -> bool:
    """A finite real number (Python's or numpy's), not a ``bool`` (JSON's ``true`` is not 1)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def check_id(value: str, key: str, where: str, path_safe: bool = True) -> str:
    """``value`` when it is a usable id: no surrounding whitespace (``"p1 "`` would match no other file's
    ``"p1"``, leaving papers without a vector), no control character and, with ``path_safe``, no path separator
    (``/`` or ``\\``); otherwise :class:`InputError` naming ``where`` (``"FILE:LINE"``) and the field."""
    if value != value.strip():
        raise InputError(f"{where}: {key!r} is {json.dumps(value)[:60]}, with surrounding whitespace; expected an "
                         f"id without it (it would match no other file's id)")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InputError(f"{where}: {key!r} is {json.dumps(value)[:60]}, with a control character; expected a "
                         f"printable id")
    if path_safe and ("/" in value or "\\" in value):
        raise InputError(f"{where}: {key!r} is {json.dumps(value)[:60]}, with a path separator; expected a plain id")
    return value


def record_id(value, key: str, where: str, path_safe: bool = True) -> str:
    """An id field of a record as a string: a non-empty string, or an integer read as its digits. ``null``, a
    boolean, a float, a list or an empty string raise :class:`InputError` (``where``: ``"FILE:LINE"``) — they
    would otherwise become ids such as ``"None"`` or ``"True"`` — and so does a string :func:`check_id`
    refuses (surrounding whitespace, a control character, a path separator unless ``path_safe`` is off)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return check_id(value, key, where, path_safe)
    raise InputError(f"{where}: {key!r} is {json.dumps(value)[:60]}; expected a non-empty string id")


def finite_or_null(value, where: str = "") -> tuple[object, list[str]]:
    """``value`` (nested dicts and lists) with every NaN or infinite float replaced by ``None``, numpy scalars
    made Python numbers, and the paths of the replaced values: what ``json.dumps(..., allow_nan=False)`` needs to
    print strict JSON (``NaN`` is not JSON) without hiding that a value was undefined."""
    undefined: list[str] = []

    def clean(item, path: str):
        if isinstance(item, dict):
            return {key: clean(inner, f"{path}.{key}" if path else str(key)) for key, inner in item.items()}
        if isinstance(item, (list, tuple)):
            return [clean(inner, f"{path}[{i}]") for i, inner in enumerate(item)]
        if isinstance(item, numbers.Integral) and not isinstance(item, bool):
            return int(item)
        if isinstance(item, numbers.Real) and not isinstance(item, bool):
            if not math.isfinite(item):
                undefined.append(path or "(value)")
                return None
            return float(item)
        return item

    return clean(value, where), undefined


def file_kind(path: str | Path) -> str | None:
    """``None`` for a regular file (links followed), else what it is: "a folder", "a FIFO (named pipe)", "a
    character device", …, or "missing"."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as error:
        return f"unreadable ({error.strerror})"
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def require_file(path: str | Path, what: str) -> Path:
    """``path`` when it is a regular file (links followed); a folder, a FIFO, a device (``/dev/zero``, which
    would never end) or a socket is an :class:`InputError`, a missing file a ``FileNotFoundError``."""
    path = Path(path)
    kind = file_kind(path)
    if kind == "missing":
        raise FileNotFoundError(f"{path}: file not found; expected {what}")
    if kind is not None:
        raise InputError(f"{path}: is {kind}; expected a regular file ({what})")
    return path


@contextmanager
def open_binary(path: str | Path, what: str = "a file"):
    """The file's bytes, gunzipped when the name ends in ``.gz``; a ``.gz`` that is not gzip is an
    :class:`InputError` (a truncated one fails while reading, see :func:`iter_lines`)."""
    path = Path(path)
    if path.suffix == ".gz":
        with path.open("rb") as raw:
            magic = raw.read(2)
        if magic != GZIP_MAGIC:
            raise InputError(f"{path}: not a gzip file (it starts with {magic!r}, gzip with {GZIP_MAGIC!r}); "
                             f"expected {what} compressed with gzip, or a name without .gz")
        with gzip.open(path, "rb") as handle:
            yield handle
    else:
        with path.open("rb") as handle:
            yield handle


def _decode_line(path: Path, line_number: int, raw: bytes, what: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}:{line_number}: byte 0x{raw[error.start]:02x} at column {error.start + 1} is "
                         f"not UTF-8; expected {what} as UTF-8 text") from None
    return text[1:] if line_number == 1 and text.startswith("\ufeff") else text


def iter_lines(path: str | Path, what: str = "text", progress: bool = False,
               on_error: Callable[[str, str], None] | None = None) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` of a UTF-8 text file (``.gz`` read transparently), line ends kept.

    A byte that is not UTF-8, a ``.gz`` that is not gzip and a truncated ``.gz`` raise :class:`InputError`
    naming the file (and the line). With ``on_error`` (e.g. a :class:`SkippedLines`), a line that is not
    UTF-8 is handed to it as ``(reason, message)`` and skipped instead; a broken gzip stream always raises.
    """
    path = require_file(path, what)
    line_number = 0
    with open_binary(path, what) as handle:
        try:
            for raw in tqdm(handle, desc=path.name, unit=" lines", disable=not progress):
                line_number += 1
                try:
                    line = _decode_line(path, line_number, raw, what)
                except InputError as error:
                    if on_error is None:
                        raise
                    on_error("not_utf8", str(error))
                    continue
                yield line_number, line
        except (EOFError, gzip.BadGzipFile, zlib.error) as error:
            raise InputError(f"{path}: the gzip stream is broken after line {line_number} ({error}); expected "
                             f"{what}, compressed completely") from None


def read_text(path: str | Path, what: str = "text") -> str:
    """The whole file as text (strict UTF-8, ``.gz`` transparently), errors as in :func:`iter_lines`."""
    return "".join(line for _, line in iter_lines(path, what))


def open_text(path: str | Path, what: str = "text"):
    """A streaming text handle (UTF-8, ``.gz`` transparently, a ``.gz`` that is not gzip refused), for peeking at
    a file's start; readers of whole files use :func:`iter_lines` or :func:`read_text`, which name the line of
    a bad byte."""
    path = Path(path)
    if path.suffix == ".gz":
        with open_binary(path, what):  # checks the magic bytes
            pass
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _line_of(text: str, token: str | None) -> int | None:
    """The line of the first occurrence of ``token`` (best effort, for errors in whole-file JSON)."""
    position = text.find(token) if token else -1
    return text.count("\n", 0, position) + 1 if position >= 0 else None


def _strict_error_token(error: _StrictJSONError) -> str | None:
    """The text that caused a strict-JSON error, to find its line: a repeated key, NaN, a huge number."""
    message = str(error)
    if message.startswith("key ") and "'" in message:
        return json.dumps(message.split("'")[1])
    if message.endswith(("is not a JSON number", "overflows a 64-bit float")):
        return message.split(" ", 1)[0]
    return None


def load_json(path: str | Path, what: str = "a JSON document", finite: bool = False):
    """Load a whole JSON file (strict, see the module docstring); errors name the file, line and column."""
    path = require_file(path, what)
    text = read_text(path, what)
    if not text.strip():
        raise InputError(f"{path}: empty file; expected {what}")
    try:
        return parse_json(text, finite)
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:{error.lineno}: not valid JSON ({error.msg}, column {error.colno}, character "
                         f"{error.pos}); expected {what}") from None
    except _StrictJSONError as error:
        line = _line_of(text, _strict_error_token(error))
        raise InputError(f"{path}{f':{line}' if line else ''}: {error}; expected {what}") from None


def read_jsonl(path: str | Path, what: str = "one JSON object per line", progress: bool = False,
               allow_empty: bool = False, finite: bool = False,
               on_error: Callable[[str, str], None] | None = None) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)`` of a JSONL file; blank lines are skipped.

    A line that is not a JSON object (or not strict JSON, see the module docstring) raises
    :class:`InputError` naming the file and line; a file without any record raises too unless ``allow_empty``.
    ``finite``: NaN, infinities and overflowing numbers are errors too. ``on_error`` (e.g. a
    :class:`SkippedLines`): bad lines are handed to it as ``(reason, message)`` and skipped instead.
    """
    path = require_file(path, what)
    seen_any = False

    def bad(reason: str, message: str) -> None:
        if on_error is None:
            raise InputError(message)
        on_error(reason, message)

    for line_number, line in iter_lines(path, what, progress=progress, on_error=on_error):
        if not line.strip():
            continue
        try:
            record = parse_json(line, finite)
        except json.JSONDecodeError as error:
            bad("not_json", f"{path}:{line_number}: not valid JSON ({error.msg}, column {error.colno}); "
                            f"expected {what}")
            continue
        except _StrictJSONError as error:
            bad("not_json", f"{path}:{line_number}: {error}; expected {what}")
            continue
        if not isinstance(record, dict):
            bad("not_object", f"{path}:{line_number}: expected a JSON object ({what}), got {type(record).__name__}")
            continue
        seen_any = True
        yield line_number, record
    if not seen_any and not allow_empty:
        raise InputError(f"{path}: empty file; expected {what}")


class SkippedLines:
    """What a reader skipped under ``--skip-bad``: counts by reason and the first messages (file:line: why).

    Pass it as ``on_error`` to :func:`read_jsonl`; call it for record-level problems; print :meth:`summary`.
    """

    def __init__(self, examples: int = 5):
        self.counts: Counter = Counter()
        self.examples: list[str] = []
        self.limit = examples

    def __call__(self, reason: str, message: str) -> None:
        self.counts[reason] += 1
        if len(self.examples) < self.limit:
            self.examples.append(message)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        """One paragraph: the count by reason and the first lines skipped (empty when nothing was skipped)."""
        if not self.total:
            return ""
        reasons = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(self.counts.items()))
        return (f"skipped {self.total} bad lines ({reasons}); the first {len(self.examples)}:\n  "
                + "\n  ".join(self.examples))


def read_notebook(path: str | Path):
    """A Jupyter notebook (``nbformat`` v4 node), validated: a file that is not JSON, or not a valid notebook,
    raises :class:`InputError` naming the file (and the line for JSON errors)."""
    import nbformat

    raw = load_json(path, "a Jupyter notebook (.ipynb JSON)")
    if not isinstance(raw, dict) or "cells" not in raw or "nbformat" not in raw:
        found = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise InputError(f"{path}: found {found}; expected a Jupyter notebook with 'cells' and 'nbformat'")
    try:
        notebook = nbformat.reads(json.dumps(raw), as_version=4)
        nbformat.validate(notebook)
    except Exception as error:  # nbformat raises its own types (ValidationError, NBFormatError, …)
        reason = str(error).strip().splitlines()[0][:200]
        raise InputError(f"{path}: not a valid Jupyter notebook ({reason}); expected nbformat 4") from None
    return notebook


def _strict_yaml_loader(base):
    """``base`` (a PyYAML loader class) refusing a mapping that repeats a key (PyYAML keeps the last silently)."""
    import yaml

    class StrictLoader(base):
        pass

    def construct_mapping(loader, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                key = loader.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark.line)
                except TypeError:
                    continue  # an unhashable key: PyYAML refuses it itself
                if first != key_node.start_mark.line:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice in one mapping (first on line {first + 1})",
                        key_node.start_mark)
        return base.construct_mapping(loader, node, deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return StrictLoader


def read_yaml(path: str | Path, what: str, loader=None):
    """A YAML file (a config: ``_toc.yml``, ``_config.yml``, ``profiles.yml``) read strictly: UTF-8 (errors as in
    :func:`read_text`), no repeated key in a mapping; invalid YAML is an :class:`InputError` naming the file,
    the line and what was expected. ``loader``: a PyYAML loader class (default ``yaml.SafeLoader``)."""
    import yaml

    path = require_file(path, what)
    text = read_text(path, what)
    try:
        return yaml.load(text, Loader=_strict_yaml_loader(loader or yaml.SafeLoader))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputError(f"{where}: not valid YAML ({problem}); expected {what}") from None
