"""Embeddings cached on disk by model, benchmark inputs and reading settings, read back on a rerun.

Scoring a released checkpoint (or any outside model) re-embedded every benchmark on every rerun. A cache entry's
key covers everything the vectors depend on:

* the model's identity — the Hugging Face snapshot revision when the model comes from the Hub cache, else the
  sha256 of its weight files (a retrained model folder gets a new key), plus the layers kept;
* how it reads a text — input length (tokens), pooling, unit-length normalisation;
* the texts — a digest of every ``(id, text)`` pair the benchmark embeds (another CSFCube query form or a
  different data folder gives other texts, hence another key).

Entries live in ``$SDR_DATA_CACHE/embeddings/<key>/`` as ``vectors.npy`` (float32, memory-mapped on reading),
``ids.json`` and ``entry.json`` (what the key covers, for people), written to a temporary folder and renamed, so an
interrupted write leaves no entry.

Shown in: ``sdr evaluate all`` (every benchmark), the released-models part of the chapters at ``paper``, and FLeW's
released encoders in its own tables (:func:`read_or_embed`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack")


def default_root() -> Path:
    from sdr.datasets import cache_dir

    return cache_dir() / "embeddings"


def model_identity(location: str | Path, layers: int = 0) -> dict:
    """What identifies a model's weights: ``{"location", "revision" | "weights_sha256", "layers"}``.

    A Hub snapshot (``…/snapshots/<revision>/``) is named by its revision; any other folder by the sha256 of its
    weight files (names and bytes, in name order)."""
    location = Path(location).resolve()
    identity: dict = {"location": location.name, "layers": int(layers)}
    if location.parent.name == "snapshots":
        identity["revision"] = location.name
        identity["repository"] = location.parent.parent.name
        return identity
    if not location.is_dir():
        raise FileNotFoundError(f"{location}: model folder not found")
    digest = hashlib.sha256()
    weights = sorted(p for p in location.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    if not weights:
        raise FileNotFoundError(f"{location}: no weight file ({', '.join(WEIGHT_SUFFIXES)}) to identify the model by")
    for path in weights:
        digest.update(str(path.relative_to(location)).encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    identity["weights_sha256"] = digest.hexdigest()
    return identity


def model_location(name_or_path: str) -> Path | None:
    """The folder a model loads from: a local folder, the offline MiniLM's, or the Hub cache's snapshot of a Hub
    name (None when the Hub cache does not hold it: nothing to identify, nothing cached)."""
    from sdr.encoders import resolve_model

    location = Path(resolve_model(str(name_or_path))).expanduser()
    if location.is_dir():
        return location
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(name_or_path), local_files_only=True))
    except Exception:  # noqa: BLE001 - not in the Hub cache: the caller embeds without a cache entry
        return None


def texts_digest(texts: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for key, text in texts.items():
        digest.update(json.dumps([str(key), str(text)], ensure_ascii=False).encode() + b"\n")
    return digest.hexdigest()


class EmbeddingCache:
    """Cached vectors of (model, benchmark texts, reading settings); see the module docstring."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_root()

    def key(self, identity: Mapping, benchmark: str, texts: Mapping[str, str], *, max_length: int, pooling: str,
            normalize: bool) -> tuple[str, dict]:
        """The entry's key and what it covers."""
        covers = {"model": dict(identity), "benchmark": benchmark, "max_length": int(max_length),
                  "pooling": pooling, "normalize": bool(normalize), "texts": texts_digest(texts),
                  "count": len(texts)}
        return hashlib.sha256(json.dumps(covers, sort_keys=True).encode()).hexdigest()[:24], covers

    def load(self, key: str, texts: Mapping[str, str]) -> dict[str, np.ndarray] | None:
        """The cached vectors of ``key`` (None when absent); an entry whose ids are not ``texts``' is an error."""
        folder = self.root / key
        if not (folder / "entry.json").exists():
            return None
        from sdr.jsonio import load_json

        ids = load_json(folder / "ids.json", "the cached ids (a JSON list)")
        if ids != [str(k) for k in texts]:
            raise ValueError(f"{folder}: the cached ids are not the texts' ids; delete the folder to re-embed")
        vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        if vectors.shape[0] != len(ids):
            raise ValueError(f"{folder}: {vectors.shape[0]} vectors for {len(ids)} ids; delete the folder")
        return {key_: np.asarray(vector) for key_, vector in zip(texts, vectors)}

    def save(self, key: str, vectors: Mapping[str, np.ndarray], covers: Mapping) -> Path:
        """Write an entry (to a temporary folder renamed into place)."""
        self.root.mkdir(parents=True, exist_ok=True)
        target = self.root / key
        staging = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=self.root))
        try:
            np.save(staging / "vectors.npy", np.stack([np.asarray(v, dtype=np.float32) for v in vectors.values()]))
            (staging / "ids.json").write_text(json.dumps([str(k) for k in vectors]), encoding="utf-8")
            (staging / "entry.json").write_text(json.dumps(covers, indent=1, sort_keys=True), encoding="utf-8")
            if target.exists():
                shutil.rmtree(target)
            os.replace(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return target


def released_identity(model: str, layers: int = 0) -> dict | None:
    """:func:`model_identity` of a model named as the chapters name it (a Hub name or a folder), or None when nothing
    identifies it (a Hub model the cache does not hold: it is embedded without a cache entry)."""
    location = model_location(model)
    return None if location is None else model_identity(location, layers)


def read_or_embed(cache: EmbeddingCache | None, identity: Mapping | None, benchmark: str, texts: Mapping[str, str], *,
                  max_length: int, pooling: str, normalize: bool,
                  embed: Callable[[], Mapping[str, np.ndarray]]) -> tuple[dict[str, np.ndarray], bool]:
    """``texts``' vectors from ``cache`` when an entry of the model ``identity`` read as stated covers them, else
    ``embed()``'s, then saved. Returns ``(vectors, read_from_cache)``; without a cache or an identity, ``embed()``'s.
    ``sdr evaluate all`` and FLeW's released encoders read through it."""
    if cache is None or identity is None:
        return dict(embed()), False
    key, covers = cache.key(identity, benchmark, texts, max_length=max_length, pooling=pooling, normalize=normalize)
    vectors = cache.load(key, texts)
    if vectors is not None:
        return vectors, True
    vectors = dict(embed())
    cache.save(key, vectors, covers)
    return vectors, False
