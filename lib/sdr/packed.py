"""Padding-free BERT: a chunk's texts run as one packed token stream, attention kept within each text.

Padding each text of a chunk to the chunk's longest costs every token-wise layer (the projections, the
feed-forward block, LayerNorm, GELU, dropout) its share of pad tokens; on real abstracts that share was 28 %
even after length sorting. Here the chunk's token ids are concatenated into one ``[tokens, hidden]`` stream,
so those layers see real tokens only, and attention runs per text: on GPUs of compute capability 8.0 or newer
(A100, L4, H100) in bf16/fp16 through variable-length FlashAttention called on the packed tensors, elsewhere
(CPU, float32, or ``packed=True`` forced on an older GPU) through PyTorch's scaled-dot-product attention on a
nested (jagged) tensor, which picks a kernel the device has. Which one runs is
:func:`sdr.encoders.device_plan`'s choice (``attention``: ``"flash"`` or ``"nested"``); FlashAttention is never
called on a GPU that lacks it. Q, K and V are one matrix product over the concatenated weights (the same
numbers as three, tested to 1e-5 on CPU; its GPU speed-up is not measured).

It reuses the model's own modules and weights (no copy, nothing to save differently) and computes BERT's
forward: absolute position ids restart at 0 in every text, token type 0, attention dropout at the model's
rate while training. It is the same function as the padded Hugging Face forward up to floating-point
summation order (tested to 1e-5 on CPU in float32, forward and gradients, and within bf16 rounding on CUDA).
The book uses it on sm80+ GPUs only (``Encoder.packed = "auto"``): CPU runs keep the padded forward and stay
bit-reproducible, and older GPUs (T4, V100) run padded chunks through Hugging Face's SDPA attention in fp16.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn


def supports_packing(model: nn.Module) -> bool:
    """Whether ``model`` is a BERT encoder this module can run packed (BERT, SciBERT, SPECTER, MiniLM)."""
    config = getattr(model, "config", None)
    return (type(model).__name__ == "BertModel" and config is not None
            and getattr(config, "position_embedding_type", "absolute") in (None, "absolute")
            and not getattr(config, "is_decoder", False))


def bucket(count: int, per_octave: int, minimum: int = 1) -> int:
    """``count`` rounded up to the next of ``per_octave`` evenly spaced sizes in its power of two (at least
    ``minimum``): 8 per octave waste at most 1/8 of the count and give a few distinct sizes over a run."""
    if count <= minimum:
        return minimum
    step = max(1, (1 << (count.bit_length() - 1)) // per_octave)
    return -(-count // step) * step


def padded_shape(tokens: int, texts: int, max_segment: int, per_octave: int = 8,
                 bucket_texts: bool = False) -> tuple[int, int]:
    """(token count, text count) a packed stream of ``tokens`` tokens in ``texts`` texts is padded to for the
    compiled forward (:func:`compiled_hidden_states`): the token count up to its :func:`bucket`, the pad tokens as
    the fewest extra texts of 1 to ``max_segment`` tokens each (attention stays within a text, so the real texts
    are unaffected). The text count is left to vary (the compiled forward treats it as dynamic), or with
    ``bucket_texts`` (CUDA graphs, which record one graph per distinct shape) is rounded up to its :func:`bucket`
    too, taking the next token bucket where the pad tokens are fewer than the pad texts."""
    padded = bucket(tokens, per_octave, 64)
    while True:
        padded_texts = texts + -(-(padded - tokens) // max_segment)
        if not bucket_texts:
            return padded, padded_texts
        padded_texts = bucket(padded_texts, per_octave)
        if padded - tokens >= padded_texts - texts:  # each pad text holds at least one pad token
            return padded, padded_texts
        padded = bucket(padded + 1, per_octave, 64)


def pack_on_host(ids: Sequence[Sequence[int]], device: torch.device, pad_to: tuple[int, int] | None = None,
                 pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`pack`'s tensors still on the host (page-locked when ``device`` is CUDA), so a worker thread can
    build the next step's while the device runs this one; ``.to(device, non_blocking=True)`` then copies.
    Built with NumPy (a tenth of the time ``torch.tensor`` of a Python list takes). ``pad_to`` (token count,
    text count; :func:`padded_shape`) appends pad texts of ``pad_id`` tokens up to that shape."""
    lengths = np.fromiter((len(row) for row in ids), dtype=np.int64, count=len(ids))
    if (lengths < 1).any():
        raise ValueError("pack: every text needs at least one token")
    total = int(lengths.sum())
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=total)
    if pad_to is not None:
        padded_tokens, padded_texts = pad_to
        segments = padded_texts - len(ids)
        pad = padded_tokens - total
        if segments < 0 or pad < segments or (segments == 0 and pad > 0):
            raise ValueError(f"pack: cannot pad {len(ids)} texts of {total} tokens to {pad_to}")
        if segments:
            base, extra = divmod(pad, segments)
            lengths = np.concatenate([lengths, np.full(segments, base, dtype=np.int64)])
            lengths[len(ids):len(ids) + extra] += 1
            flat = np.concatenate([flat, np.full(pad, pad_id, dtype=np.int64)])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    positions = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    offsets = offsets.astype(np.int32 if device.type == "cuda" else np.int64)
    tensors = tuple(torch.from_numpy(array) for array in (flat, positions, offsets))
    if device.type == "cuda":  # page-locked host memory: the copies to the device don't block the host
        return tuple(t.pin_memory() for t in tensors)
    return tensors


def pack(ids: Sequence[Sequence[int]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Concatenated token ids, each token's position in its text, and the texts' start offsets (N + 1)."""
    return tuple(t.to(device, non_blocking=True) for t in pack_on_host(ids, device))


ATTENTIONS = ("flash", "nested")


def _attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, offsets: torch.Tensor,
               seqlens: tuple[int, int], dropout: float, attention: str = "nested") -> torch.Tensor:
    """Self-attention within each text of a packed stream: ``[tokens, heads, head_dim]`` in and out.
    ``seqlens`` (shortest, longest text) are known on the host: given, the nested tensor needs no
    device-to-host read of the offsets, which would stall the GPU queue three times a layer.
    ``attention="flash"`` (the device plan's choice on sm80+ GPUs) calls FlashAttention when the inputs are
    CUDA bf16/fp16; anything else, and ``"nested"``, runs SDPA on nested tensors."""
    if attention == "flash" and query.is_cuda and query.dtype in (torch.bfloat16, torch.float16):
        # variable-length FlashAttention on the packed tensors themselves (what SDPA on a nested tensor
        # calls too, minus the nested tensor's per-op Python dispatch, which made the step host-bound)
        return torch.ops.aten._flash_attention_forward(
            query, key, value, offsets, offsets, seqlens[1], seqlens[1], dropout, False, False)[0]

    def jagged(x):  # [tokens, heads, dim] -> [texts, heads, (length), dim]
        # (a view of the fused Q/K/V product is strided; SDPA on nested tensors wants contiguous values,
        # FlashAttention above takes the strided views as they are)
        return torch.nested.nested_tensor_from_jagged(x.contiguous(), offsets.long(), min_seqlen=seqlens[0],
                                                      max_seqlen=seqlens[1]).transpose(1, 2)

    with warnings.catch_warnings():  # the CPU fallback warns that nested tensors are a prototype API
        warnings.simplefilter("ignore", UserWarning)
        out = nn.functional.scaled_dot_product_attention(jagged(query), jagged(key), jagged(value),
                                                         dropout_p=dropout)
    return out.transpose(1, 2).values()


def fused_qkv(attention: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """BERT's query, key and value projections of ``x`` as one matrix product over the concatenated weights
    (``[tokens, 3 × hidden]``, then three views): the numbers of the three separate products, one kernel
    launch instead of three, forward and backward."""
    weight = torch.cat((attention.query.weight, attention.key.weight, attention.value.weight))
    bias = torch.cat((attention.query.bias, attention.key.bias, attention.value.bias))
    tokens = x.shape[0]
    qkv = nn.functional.linear(x, weight, bias).view(tokens, 3, attention.num_attention_heads,
                                                     attention.attention_head_size)
    return qkv[:, 0], qkv[:, 1], qkv[:, 2]


def packed_hidden_states(model: nn.Module, flat_ids: torch.Tensor, positions: torch.Tensor,
                         offsets: torch.Tensor, seqlens: tuple[int, int], attention_kind: str = "nested",
                         fuse_qkv: bool = True) -> torch.Tensor:
    """BERT's last hidden states for a packed stream, ``[tokens, hidden]``; ``seqlens`` = (shortest,
    longest) text length; ``attention_kind`` see :func:`_attention`; ``fuse_qkv=False`` runs Q, K and V as
    three products (kept to test the fused one against)."""
    embeddings = model.embeddings
    x = (embeddings.word_embeddings(flat_ids) + embeddings.position_embeddings(positions)
         + embeddings.token_type_embeddings(torch.zeros_like(flat_ids)))
    x = embeddings.dropout(embeddings.LayerNorm(x))
    tokens = x.shape[0]
    for layer in model.encoder.layer:
        attention = layer.attention.self
        heads = attention.num_attention_heads
        head_dim = attention.attention_head_size
        dropout = attention.dropout.p if model.training else 0.0
        if fuse_qkv:
            query, key, value = fused_qkv(attention, x)
        else:
            query, key, value = (projection(x).view(tokens, heads, head_dim)
                                 for projection in (attention.query, attention.key, attention.value))
        context = _attention(query, key, value, offsets, seqlens, dropout, attention_kind)
        output = layer.attention.output
        x = output.LayerNorm(output.dropout(output.dense(context.reshape(tokens, heads * head_dim))) + x)
        hidden = layer.intermediate.intermediate_act_fn(layer.intermediate.dense(x))
        x = layer.output.LayerNorm(layer.output.dropout(layer.output.dense(hidden)) + x)
    return x


@functools.cache
def compiled_hidden_states(static: bool = False, mode: str | None = None):
    """:func:`packed_hidden_states` through ``torch.compile``, which fuses the elementwise work around the matrix
    products. ``static=False``: dynamic shapes from the start, one graph for every token count.
    ``static=True``: for streams padded to a few bucketed token counts (:func:`padded_shape`) with constant
    ``seqlens``: the first shape compiles specialized, a second one compiles a graph general in the token count
    (torch's automatic dynamic shapes), so a run compiles at most twice, never per step; with
    ``mode="reduce-overhead"`` (CUDA graphs) each bucket is one recording. ``Encoder.compile_packed``
    (and ``Encoder.compile_buckets``, ``Encoder.compile_mode``); measured in benchmarks/bench_train_gpu.py."""
    # static: torch's automatic dynamic shapes (dynamic=None) compile the first token count as it is and, at a
    # second one, one graph for every count; the text count is marked dynamic by the caller
    return torch.compile(packed_hidden_states, dynamic=None if static else True, mode=mode)


def packed_pool(model: nn.Module, ids: Sequence[Sequence[int]], pooling: str,
                device: torch.device, compiled: bool = False, attention: str = "nested") -> torch.Tensor:
    """Pooled embeddings ``[texts, hidden]`` of tokenized texts, run packed: the [CLS] (first) token's
    vector, or the mean over each text's tokens."""
    lengths = [len(row) for row in ids]
    return pool_packed_stream(model, pack(ids, device), (min(lengths), max(lengths)), pooling, compiled,
                              attention)


def pool_packed_stream(model: nn.Module, packed: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                       seqlens: tuple[int, int], pooling: str, compiled: bool = False,
                       attention: str = "nested", real: tuple[int, int] | None = None,
                       compile_mode: str | None = None) -> torch.Tensor:
    """:func:`packed_pool` from :func:`pack`'s tensors, already on the model's device. ``real`` = (texts,
    tokens) of a stream padded to a bucketed shape (:func:`pack_on_host`'s ``pad_to``): its first texts and
    tokens are pooled, the pad texts after them dropped, and the compiled forward is the static-shape one."""
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    flat_ids, positions, offsets = packed
    if compiled:
        forward = compiled_hidden_states(static=real is not None, mode=compile_mode)
        if real is not None:  # the text count varies from step to step: no recompilation for it
            torch._dynamo.maybe_mark_dynamic(offsets, 0)
    else:
        forward = packed_hidden_states
    hidden = forward(model, flat_ids, positions, offsets, seqlens, attention)
    texts, tokens = real if real is not None else (offsets.shape[0] - 1, hidden.shape[0])
    if real is not None:
        offsets, hidden = offsets[:texts + 1], hidden[:tokens]
    if pooling == "cls":
        return hidden[offsets[:-1].long()]
    counts = (offsets[1:] - offsets[:-1]).long()  # on the device already: no host copy
    # output_size given: without it repeat_interleave reads the counts' sum back to the host (a sync)
    text_of_token = torch.repeat_interleave(torch.arange(texts, device=hidden.device), counts,
                                            output_size=tokens)
    sums = torch.zeros((texts, hidden.shape[1]), dtype=hidden.dtype, device=hidden.device)
    return sums.index_add(0, text_of_token, hidden) / counts.unsqueeze(1).to(hidden.dtype)
