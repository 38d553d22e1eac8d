"""Padding-free BERT: a chunk's texts run as one packed token stream, attention kept within each text.

Padding each text of a chunk to the chunk's longest costs every token-wise layer (the projections, the
feed-forward block, LayerNorm, GELU, dropout) its share of pad tokens; on real abstracts that share was 28 %
even after length sorting. Here the chunk's token ids are concatenated into one ``[tokens, hidden]`` stream,
so those layers see real tokens only, and attention runs per text: on CUDA in bf16/fp16 through
variable-length FlashAttention called on the packed tensors, elsewhere (CPU, float32) through PyTorch's
scaled-dot-product attention on a nested (jagged) tensor.

It reuses the model's own modules and weights (no copy, nothing to save differently) and computes BERT's
forward: absolute position ids restart at 0 in every text, token type 0, attention dropout at the model's
rate while training. It is the same function as the padded Hugging Face forward up to floating-point
summation order (tested to 1e-5 on CPU in float32, forward and gradients, and within bf16 rounding on CUDA).
The book uses it on CUDA only (``Encoder.packed = "auto"``): CPU runs keep the padded forward and stay
bit-reproducible.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence

import torch
from torch import nn


def supports_packing(model: nn.Module) -> bool:
    """Whether ``model`` is a BERT encoder this module can run packed (BERT, SciBERT, SPECTER, MiniLM)."""
    config = getattr(model, "config", None)
    return (type(model).__name__ == "BertModel" and config is not None
            and getattr(config, "position_embedding_type", "absolute") in (None, "absolute")
            and not getattr(config, "is_decoder", False))


def pack(ids: Sequence[Sequence[int]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Concatenated token ids, each token's position in its text, and the texts' start offsets (N + 1)."""
    lengths = torch.tensor([len(row) for row in ids], dtype=torch.long)
    if (lengths < 1).any():
        raise ValueError("pack: every text needs at least one token")
    offsets = torch.zeros(len(ids) + 1, dtype=torch.int32 if device.type == "cuda" else torch.long)
    offsets[1:] = torch.cumsum(lengths, 0)
    flat = torch.tensor([token for row in ids for token in row], dtype=torch.long)
    starts = torch.repeat_interleave(offsets[:-1].long(), lengths)
    positions = torch.arange(int(offsets[-1])) - starts
    pinned = device.type == "cuda"  # page-locked host memory: the copies below don't block the host
    return tuple(t.pin_memory().to(device, non_blocking=True) if pinned else t.to(device)
                 for t in (flat, positions, offsets))


def _attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, offsets: torch.Tensor,
               seqlens: tuple[int, int], dropout: float) -> torch.Tensor:
    """Self-attention within each text of a packed stream: ``[tokens, heads, head_dim]`` in and out.
    ``seqlens`` (shortest, longest text) are known on the host: given, the nested tensor needs no
    device-to-host read of the offsets, which would stall the GPU queue three times a layer."""
    if query.is_cuda and query.dtype in (torch.bfloat16, torch.float16):
        # variable-length FlashAttention on the packed tensors themselves (what SDPA on a nested tensor
        # calls too, minus the nested tensor's per-op Python dispatch, which made the step host-bound)
        return torch.ops.aten._flash_attention_forward(
            query, key, value, offsets, offsets, seqlens[1], seqlens[1], dropout, False, False)[0]

    def jagged(x):  # [tokens, heads, dim] -> [texts, heads, (length), dim]
        return torch.nested.nested_tensor_from_jagged(x, offsets.long(), min_seqlen=seqlens[0],
                                                      max_seqlen=seqlens[1]).transpose(1, 2)

    with warnings.catch_warnings():  # the CPU fallback warns that nested tensors are a prototype API
        warnings.simplefilter("ignore", UserWarning)
        out = nn.functional.scaled_dot_product_attention(jagged(query), jagged(key), jagged(value),
                                                         dropout_p=dropout)
    return out.transpose(1, 2).values()


def packed_hidden_states(model: nn.Module, flat_ids: torch.Tensor, positions: torch.Tensor,
                         offsets: torch.Tensor, seqlens: tuple[int, int]) -> torch.Tensor:
    """BERT's last hidden states for a packed stream, ``[tokens, hidden]``; ``seqlens`` = (shortest,
    longest) text length."""
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
        context = _attention(attention.query(x).view(tokens, heads, head_dim),
                             attention.key(x).view(tokens, heads, head_dim),
                             attention.value(x).view(tokens, heads, head_dim), offsets, seqlens, dropout)
        output = layer.attention.output
        x = output.LayerNorm(output.dropout(output.dense(context.reshape(tokens, heads * head_dim))) + x)
        hidden = layer.intermediate.intermediate_act_fn(layer.intermediate.dense(x))
        x = layer.output.LayerNorm(layer.output.dropout(layer.output.dense(hidden)) + x)
    return x


@functools.cache
def compiled_hidden_states():
    """:func:`packed_hidden_states` through ``torch.compile`` (dynamic shapes: one graph for every token
    count), which fuses the elementwise work around the matrix products. Opt-in (``Encoder.compile_packed``)."""
    return torch.compile(packed_hidden_states, dynamic=True)


def packed_pool(model: nn.Module, ids: Sequence[Sequence[int]], pooling: str,
                device: torch.device, compiled: bool = False) -> torch.Tensor:
    """Pooled embeddings ``[texts, hidden]`` of tokenized texts, run packed: the [CLS] (first) token's
    vector, or the mean over each text's tokens."""
    flat_ids, positions, offsets = pack(ids, device)
    lengths = [len(row) for row in ids]
    forward = compiled_hidden_states() if compiled else packed_hidden_states
    hidden = forward(model, flat_ids, positions, offsets, (min(lengths), max(lengths)))
    if pooling == "cls":
        return hidden[offsets[:-1].long()]
    counts = (offsets[1:] - offsets[:-1]).long()  # on the device already: no host copy
    text_of_token = torch.repeat_interleave(torch.arange(len(ids), device=device), counts)
    sums = torch.zeros((len(ids), hidden.shape[1]), dtype=hidden.dtype, device=device)
    return sums.index_add(0, text_of_token, hidden) / counts.unsqueeze(1).to(hidden.dtype)
