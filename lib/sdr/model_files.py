"""A model folder checked before anything loads it: weights in the safetensors format only, headers whole, shard
indexes that stay inside the folder.

:func:`check_model_folder` runs before :meth:`sdr.encoders.Encoder.load` opens a local folder (``sdr embed``,
``sdr evaluate all``, ``sdr train``, the chapters), so a bad folder is one line naming the file and what was
expected, not a traceback from deep inside ``transformers``:

* ``config.json`` is a JSON object (strict: UTF-8, no repeated keys);
* weights are ``*.safetensors`` (plain tensors; loading them runs no code). A folder whose only weights are a
  pickle (``pytorch_model.bin``, ``*.pt``, ``*.pth``, ``*.ckpt``, ``*.pkl``) is refused in one line: unpickling
  can run code, and ``transformers`` is then told to load safetensors only;
* every safetensors file has a whole header: an 8-byte length, that many bytes of JSON, each tensor's
  ``data_offsets`` inside the file;
* a shard index (``model.safetensors.index.json``) maps every tensor to a shard file *inside* the folder (no
  absolute path, no ``..``, no link out of it), and every shard it names is there and whole.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

from sdr.jsonio import InputError, load_json

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
OTHER_WEIGHTS = (".h5", ".msgpack", ".onnx")
INDEX_SUFFIX = ".index.json"
MAX_HEADER_BYTES = 100 * 2 ** 20  # safetensors' own limit


def _shard_path(folder: Path, index: Path, tensor: str, name) -> Path:
    if not isinstance(name, str) or not name or os.path.isabs(name) or "\\" in name:
        raise InputError(f"{index}: tensor {tensor!r} is in shard {json.dumps(name)[:80]}; expected a file name "
                         f"inside the model folder")
    path = folder / name
    resolved, root = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    if not resolved.is_relative_to(root) or ".." in Path(name).parts:
        raise InputError(f"{index}: tensor {tensor!r} is in shard {name!r}, which lies outside the model folder "
                         f"{folder}; expected shard files inside it")
    return path


def check_safetensors(path: str | Path) -> dict:
    """The header of a ``.safetensors`` file, checked whole (see the module docstring); :class:`InputError`
    naming the file otherwise."""
    path = Path(path)
    what = "a safetensors file (8-byte header length, JSON header, tensor data)"
    if not path.is_file():
        raise InputError(f"{path}: missing or not a regular file; expected {what}")
    size = path.stat().st_size
    with path.open("rb") as handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise InputError(f"{path}: {size} bytes, shorter than the 8-byte header length; expected {what}")
        (length,) = struct.unpack("<Q", prefix)
        if length > MAX_HEADER_BYTES or 8 + length > size:
            raise InputError(f"{path}: the header declares {length:,} bytes but the file has {size - 8:,} after "
                             f"the length (truncated or not safetensors); expected {what}")
        raw = handle.read(length)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique)
    except (UnicodeDecodeError, ValueError) as error:
        raise InputError(f"{path}: the header is not valid JSON ({str(error)[:80]}); expected {what}") from None
    if not isinstance(header, dict):
        raise InputError(f"{path}: the header is a JSON {type(header).__name__}; expected {what}")
    data_bytes = size - 8 - length
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= data_bytes):
            raise InputError(f"{path}: tensor {name!r} has data_offsets {json.dumps(offsets)[:60]} outside the "
                             f"file's {data_bytes:,} data bytes (truncated?); expected {what}")
    return header


def _unique(pairs):
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key appears twice")
    return dict(pairs)


def check_model_folder(folder: str | Path) -> list[Path]:
    """Check a local model folder before loading it (see the module docstring); returns its safetensors files.

    Raises :class:`~sdr.jsonio.InputError` (one line: the file and what was expected)."""
    folder = Path(folder)
    config = folder / "config.json"
    if config.exists():
        settings = load_json(config, "a model's config.json (a JSON object)")
        if not isinstance(settings, dict):
            raise InputError(f"{config}: found a JSON {type(settings).__name__}; expected a JSON object")
    files = sorted(p for p in folder.iterdir() if p.is_file() or p.is_symlink())
    indexes = [p for p in files if p.name.endswith(".safetensors" + INDEX_SUFFIX)]
    shards: list[Path] = []
    for index in indexes:
        spec = load_json(index, "a safetensors shard index {'weight_map': {tensor: shard file}}")
        weight_map = spec.get("weight_map") if isinstance(spec, dict) else None
        if not isinstance(weight_map, dict) or not weight_map:
            raise InputError(f"{index}: no 'weight_map' object; expected {{'weight_map': {{tensor: shard file}}}}")
        for tensor, name in weight_map.items():
            shard = _shard_path(folder, index, tensor, name)
            if shard not in shards:
                shards.append(shard)
    safetensors = [p for p in files if p.suffix == ".safetensors"]
    for shard in shards:
        if shard.suffix != ".safetensors":
            raise InputError(f"{shard}: a shard index names a {shard.suffix or 'suffix-less'} file; only safetensors "
                             f"shards are loaded")
        if shard not in safetensors:
            safetensors.append(shard)
    for path in safetensors:
        check_safetensors(path)
    if not safetensors:
        pickles = [p for p in files if p.suffix in PICKLE_SUFFIXES or p.name.endswith(".bin" + INDEX_SUFFIX)]
        if pickles:
            raise InputError(f"{pickles[0]}: PyTorch pickle weights are not loaded (unpickling a file can run "
                             f"code); expected model.safetensors in {folder} (convert the model once with "
                             f"save_pretrained(..., safe_serialization=True) where you trust it)")
        others = [p for p in files if p.suffix in OTHER_WEIGHTS]
        raise InputError(f"{folder}: no model.safetensors"
                         + (f" (only {', '.join(p.name for p in others[:3])})" if others else "")
                         + "; expected a model folder with safetensors weights")
    return safetensors
