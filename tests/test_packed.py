"""The padding-free BERT forward (sdr.packed) computes what the padded Hugging Face forward does.

On CPU in float32 the two differ only in summation order, so embeddings and gradients agree to 1e-5; CUDA's
variable-length FlashAttention path is checked within bf16 rounding in tests/test_gpu.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import sdr.packed
from sdr.encoders import Encoder
from sdr.packed import pack, packed_hidden_states
from sdr.train import TrainConfig, TripletObjective, train
from training_toy import TEXTS, TRIPLETS


def _encoder(pooling: str, layers: int = 2) -> Encoder:
    encoder = Encoder.load("minilm", num_layers=layers, max_length=48, pooling=pooling, device="cpu")
    encoder.eval()  # dropout off: the two paths are then the same function
    return encoder


def test_pack_restarts_positions_in_every_text():
    flat, positions, offsets = pack([[5, 6, 7], [8], [9, 10]], torch.device("cpu"))
    assert flat.tolist() == [5, 6, 7, 8, 9, 10]
    assert positions.tolist() == [0, 1, 2, 0, 0, 1]
    assert offsets.tolist() == [0, 3, 4, 6]
    with pytest.raises(ValueError, match="at least one token"):
        pack([[1], []], torch.device("cpu"))


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_packed_embeddings_and_gradients_match_the_padded_forward(pooling):
    texts = list(TEXTS.values())
    padded, packed = _encoder(pooling), _encoder(pooling)
    packed.packed = True
    assert not padded.packing and packed.packing
    # texts of different lengths, so the padded forward really pads
    assert len({len(row) for row in padded.token_ids(texts)}) > 3
    out_padded, out_packed = padded(texts), packed(texts)
    torch.testing.assert_close(out_packed, out_padded, atol=1e-5, rtol=1e-5)
    weights = torch.randn_like(out_padded)
    (out_padded * weights).sum().backward()
    (out_packed * weights).sum().backward()
    named = dict(packed.model.named_parameters())
    compared = 0
    for name, parameter in padded.model.named_parameters():
        if parameter.grad is None:  # the pooler is unused by both paths
            assert named[name].grad is None, name
            continue
        # absolute tolerance relative to the tensor's scale: float32 sums over every token (the token-type
        # embedding's gradient reaches ~600) differ with the summation order, which CPU matrix kernels
        # choose by memory alignment, so by which tests ran before
        atol = 1e-5 * max(parameter.grad.abs().max().item(), 1.0)
        torch.testing.assert_close(named[name].grad, parameter.grad, atol=atol, rtol=1e-4, msg=name)
        compared += 1
    assert compared > 20


def test_packed_chunks_bound_real_tokens_and_keep_order():
    encoder = _encoder("cls")
    encoder.packed, encoder.chunk_tokens = True, 40
    texts = list(TEXTS.values())
    lengths = [len(row) for row in encoder.token_ids(texts)]
    chunks = encoder.chunks(lengths)
    assert sorted(np.concatenate(chunks).tolist()) == list(range(len(texts)))
    assert all(sum(lengths[i] for i in chunk) <= 40 or len(chunk) == 1 for chunk in chunks)
    assert len(encoder.chunks(lengths, max_rows=2)) >= (len(texts) + 1) // 2
    whole = _encoder("cls")
    whole.packed = True
    torch.testing.assert_close(encoder(texts), whole(texts), atol=1e-5, rtol=1e-5)


def test_packing_needs_a_bert_model():
    encoder = _encoder("cls")
    encoder.model.__class__ = type("OtherModel", (type(encoder.model),), {})
    assert not encoder.packing  # "auto" falls back to the padded forward
    encoder.packed = True
    with pytest.raises(ValueError, match="needs a BERT model"):
        encoder.packing


def test_training_packed_matches_the_padded_run_without_dropout():
    """With dropout off (the only random part that the two paths draw differently), one seed trained packed
    and padded gives the same losses and weights up to float32 summation order."""
    runs = []
    for packed in (False, True):
        encoder = Encoder.load("minilm", num_layers=1, max_length=32, device="cpu")
        for module in encoder.model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        encoder.packed = packed
        config = TrainConfig(epochs=3, batch_size=2, accumulation_steps=1, learning_rate=1e-4, warmup_steps=1,
                             seed=0, progress=False)
        history = train(encoder, TRIPLETS, TripletObjective(TEXTS), config).history["loss"].to_numpy()
        runs.append((history, {k: v.detach().clone() for k, v in encoder.model.state_dict().items()}))
    (padded_loss, padded_weights), (packed_loss, packed_weights) = runs
    assert len(padded_loss) == 9 and (padded_loss > 0).sum() >= 6, padded_loss
    np.testing.assert_allclose(packed_loss, padded_loss, rtol=1e-3, atol=1e-4)
    # Adam divides each gradient by its own running magnitude, so an element whose gradient is ~0 moves a
    # full step on rounding noise either way: each tensor is compared relative to how far training moved it
    # (within 2 % of the update), leaving out the two whose exact gradient is zero (the attention key bias:
    # softmax ignores a shift of all scores; the last LayerNorm bias: it shifts every mean-pooled embedding
    # alike, which the triplet loss's distances ignore), as tests/test_train_processes.py does.
    initial = Encoder.load("minilm", num_layers=1, max_length=32, device="cpu").model.state_dict()
    zero_gradient = ("attention.self.key.bias", "layer.0.output.LayerNorm.bias")
    far = [name for name, value in padded_weights.items() if not name.endswith(zero_gradient)
           and (packed_weights[name] - value).norm() > 0.02 * (value - initial[name]).norm() + 1e-6]
    assert not far, far
    assert sum(not torch.equal(initial[name], value) for name, value in padded_weights.items()) > 10


def test_compiled_packed_forward_matches_eager():
    """The opt-in torch.compile path computes the eager packed forward (one graph for all token counts)."""
    texts = list(TEXTS.values())
    eager, compiled = _encoder("mean", layers=1), _encoder("mean", layers=1)
    eager.packed = compiled.packed = True
    compiled.compile_packed = True
    for subset in (texts, texts[:3]):  # two token counts through one dynamic-shape graph
        torch.testing.assert_close(compiled(subset), eager(subset), atol=1e-5, rtol=1e-5)


def test_packed_encode_texts_matches_the_padded_one_in_input_order():
    texts = list(TEXTS.values()) * 3
    padded, packed = _encoder("mean"), _encoder("mean")
    packed.packed = True
    expected = padded.encode_texts(texts, batch_size=4, progress=False)
    # batches of 4, flushed to the host every 2 batches: rows must land at their input positions
    got = np.zeros_like(expected)
    with torch.no_grad():
        packed._encode_packed(texts, 4, False, "encoding", got, flush_every=2)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(packed.encode_texts(texts, batch_size=5, progress=False), expected,
                               atol=1e-5, rtol=1e-5)


def test_fused_qkv_is_the_three_projections():
    """One matrix product over the concatenated Q/K/V weights gives the three products' numbers, forward and
    every parameter's gradient, in training mode with dropout off."""
    texts = list(TEXTS.values())
    encoder = _encoder("mean")
    ids = encoder.token_ids(texts)
    lengths = [len(row) for row in ids]
    flat, positions, offsets = pack(ids, torch.device("cpu"))
    outputs, gradients = [], []
    for fuse in (True, False):
        encoder.model.zero_grad(set_to_none=True)
        hidden = packed_hidden_states(encoder.model, flat, positions, offsets, (min(lengths), max(lengths)),
                                      "nested", fuse_qkv=fuse)
        (hidden * torch.linspace(-1, 1, hidden.shape[1])).sum().backward()
        outputs.append(hidden.detach())
        gradients.append({n: p.grad.clone() for n, p in encoder.model.named_parameters() if p.grad is not None})
    torch.testing.assert_close(outputs[0], outputs[1], atol=1e-5, rtol=1e-5)
    assert gradients[0].keys() == gradients[1].keys() and len(gradients[0]) > 20
    for name, gradient in gradients[1].items():  # within 1e-5 of each tensor's largest entry
        if name.endswith("attention.self.key.bias"):  # zero in exact arithmetic (softmax ignores a shift
            assert gradient.abs().max() < 1e-5 and gradients[0][name].abs().max() < 1e-5  # of all scores)
            continue
        scale = gradient.abs().max().item()
        torch.testing.assert_close(gradients[0][name], gradient, atol=1e-5 * scale, rtol=1e-5, msg=name)
    assert any("attention.self.query" in name for name in gradients[0])


def test_flash_attention_is_asked_for_only_where_it_runs():
    """attention="flash" on CPU tensors (or float32 ones) runs SDPA on nested tensors: no FlashAttention
    call where it cannot run."""
    query, key, value = (torch.randn(7, 2, 4) for _ in range(3))
    offsets = torch.tensor([0, 3, 7])
    flash = sdr.packed._attention(query, key, value, offsets, (3, 4), 0.0, "flash")
    nested = sdr.packed._attention(query, key, value, offsets, (3, 4), 0.0, "nested")
    torch.testing.assert_close(flash, nested)
    first = torch.softmax(query[:3].transpose(0, 1) @ key[:3].permute(1, 2, 0) / 2.0, -1) @ value[:3].transpose(0, 1)
    torch.testing.assert_close(nested[:3], first.transpose(0, 1), atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="attention must be one of"):
        sdr.packed.pool_packed_stream(None, (None, None, offsets), (3, 4), "cls", attention="math")


# ------------------------------------------------------------------------------------------ speed changes
def test_pack_pads_to_a_bucketed_shape_with_short_pad_texts():
    ids = [[5, 6, 7], [8], [9, 10]]
    tokens, texts = sdr.packed.padded_shape(6, 3, max_segment=4)
    assert (tokens, texts) == (64, 18)  # the smallest token bucket; 15 pad texts of 3 or 4 tokens (≤ 4 each)
    flat, positions, offsets = sdr.packed.pack_on_host(ids, torch.device("cpu"), (tokens, texts), pad_id=0)
    assert flat.shape == positions.shape == (64,) and offsets.shape == (19,)
    assert flat[:6].tolist() == [5, 6, 7, 8, 9, 10] and flat[6:].eq(0).all()
    lengths = (offsets[1:] - offsets[:-1]).tolist()
    assert lengths[:3] == [3, 1, 2] and all(1 <= n <= 4 for n in lengths[3:])
    assert all(positions[offsets[i]:offsets[i + 1]].tolist() == list(range(n)) for i, n in enumerate(lengths))
    for tokens_, texts_ in ((1, 1), (64, 2), (700, 5), (18_500, 96), (65_536, 300)):
        padded, padded_texts = sdr.packed.padded_shape(tokens_, texts_, 512)
        assert tokens_ <= padded <= tokens_ * 1.125 + 64  # 8 sizes per power of two: at most 1/8 more tokens
        assert padded_texts - texts_ == -(-(padded - tokens_) // 512)  # the fewest pad texts of ≤ 512 tokens
    sizes = {sdr.packed.padded_shape(n, 96, 512)[0] for n in range(16_385, 32_769)}
    assert len(sizes) == 8  # a few shapes for a whole octave of token counts


def test_cuda_graph_shapes_bucket_the_text_count_too():
    """CUDA graphs record one graph per distinct shape: with ``bucket_texts`` the text count is rounded to a few
    sizes as well, and every pad text still gets 1 to ``max_segment`` pad tokens."""
    rng = np.random.default_rng(0)
    for _ in range(2000):
        texts = int(rng.integers(1, 400))
        tokens = int(rng.integers(texts, texts * 512 + 1))
        max_segment = int(rng.choice([2, 64, 512]))
        padded, padded_texts = sdr.packed.padded_shape(tokens, texts, max_segment, bucket_texts=True)
        assert padded == sdr.packed.bucket(padded, 8, 64) and padded_texts == sdr.packed.bucket(padded_texts, 8)
        pad, segments = padded - tokens, padded_texts - texts
        assert segments <= pad <= segments * max_segment and (segments > 0) == (pad > 0), (tokens, texts)
        assert padded <= sdr.packed.bucket(sdr.packed.bucket(tokens, 8, 64) + 1, 8, 64)  # at most one bucket more
    assert sdr.packed.padded_shape(18_500, 97, 512) == (20_480, 101)  # the text count left free
    assert sdr.packed.padded_shape(18_500, 97, 512, bucket_texts=True) == (20_480, 104)
    shapes = {sdr.packed.padded_shape(int(rng.integers(15_000, 26_000)), int(rng.integers(60, 97)), 512,
                                      bucket_texts=True) for _ in range(3000)}
    assert len(shapes) <= 60  # a training run's steps of 60-96 texts: a few dozen graphs, not one per step
    ids = [[7] * 9, [8] * 5, [9] * 3]
    flat, positions, offsets = sdr.packed.pack_on_host(ids, torch.device("cpu"),
                                                       sdr.packed.padded_shape(17, 3, 4, bucket_texts=True))
    assert flat[:17].tolist() == [7] * 9 + [8] * 5 + [9] * 3 and flat[17:].eq(0).all()


def test_recomputed_chunks_run_without_cuda_graphs():
    """The out-of-memory fallback recomputes chunk activations in the backward pass: a CUDA graph replayed inside
    its own backward is not a path that was measured or tested, so that forward compiles without graphs."""
    encoder = _encoder("cls")
    encoder.compile_mode = "reduce-overhead"
    assert encoder._forward_mode() == "reduce-overhead"
    encoder.recompute_chunks = True
    assert encoder._forward_mode() is None
    with torch.no_grad():  # encoding recomputes nothing
        assert encoder._forward_mode() == "reduce-overhead"


def test_the_encoder_buckets_the_text_count_only_for_cuda_graphs():
    encoder = _encoder("cls")
    encoder.packed, encoder.compile_packed = True, True
    assert encoder.compile_mode == "auto" and encoder.graph_mode is None  # the CPU's plan: no CUDA graphs
    ids = encoder.token_ids(list(TEXTS.values()) * 3)
    free = encoder.host_chunks(ids).chunks[0]
    encoder.compile_mode = "reduce-overhead"
    graphs = encoder.host_chunks(ids).chunks[0]
    tokens = sum(map(len, ids))
    assert free[2].real == graphs[2].real == (len(ids), tokens)
    assert free[1][2].shape[0] - 1 == sdr.packed.padded_shape(tokens, len(ids), encoder.max_length)[1]
    assert graphs[1][2].shape[0] - 1 == sdr.packed.padded_shape(tokens, len(ids), encoder.max_length,
                                                                bucket_texts=True)[1]


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_a_stream_padded_to_a_bucket_pools_the_same_embeddings(pooling):
    """The pad texts attend only to themselves, so the real texts' embeddings are those of the unpadded
    stream; pooling drops the pad texts."""
    encoder = _encoder(pooling)
    ids = encoder.token_ids(list(TEXTS.values()))
    lengths = [len(row) for row in ids]
    shape = sdr.packed.padded_shape(sum(lengths), len(ids), encoder.max_length)
    padded = sdr.packed.pack_on_host(ids, torch.device("cpu"), shape)
    with torch.no_grad():
        expected = sdr.packed.pool_packed_stream(encoder.model, pack(ids, torch.device("cpu")),
                                                 (min(lengths), max(lengths)), pooling)
        got = sdr.packed.pool_packed_stream(encoder.model, padded, (1, encoder.max_length), pooling,
                                            real=(len(ids), sum(lengths)))
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_balanced_chunks_bound_the_tokens_without_a_tiny_last_chunk():
    rng = np.random.default_rng(0)
    for _ in range(300):
        sizes = np.sort(rng.integers(1, 513, size=int(rng.integers(1, 200))))[::-1]
        bound = int(rng.choice([512, 1000, 4096, 16384]))
        chunks = sdr.encoders.balanced_chunks(np.arange(len(sizes)), sizes, bound)
        assert np.array_equal(np.concatenate(chunks), np.arange(len(sizes)))  # consecutive, every row once
        tokens = [int(sizes[chunk].sum()) for chunk in chunks]
        assert all(n <= bound or len(chunk) == 1 for n, chunk in zip(tokens, chunks))
        if len(chunks) > 1 and min(len(chunk) for chunk in chunks) > 1:
            # nearly equal: no chunk is much smaller than the mean (a greedy fill leaves any remainder last)
            assert min(tokens) >= sum(tokens) / len(tokens) - 512, (tokens, bound)
    # 96 texts of 26.7K tokens, 16K-token chunks: greedy 16.3K + 10.4K, balanced two of ~13K
    encoder = _encoder("cls")
    encoder.packed, encoder.chunk_tokens = True, 16384
    lengths = [int(n) for n in np.sort(rng.integers(50, 512, 96))[::-1]]
    balanced = [sum(lengths[i] for i in chunk) for chunk in encoder.chunks(lengths)]
    encoder.balance_chunks = False
    greedy = [sum(lengths[i] for i in chunk) for chunk in encoder.chunks(lengths)]
    assert len(balanced) == len(greedy) == 2 and max(balanced) - min(balanced) < 512 < max(greedy) - min(greedy)


def test_compiled_chunks_padded_to_buckets_never_compile_per_step():
    """With ``compile_buckets`` the compiled forward sees bucketed token counts and constant seqlens, and the
    text count is dynamic: chunks in the same bucket with other text counts reuse the graph, a second bucket
    compiles once more (a graph general in the token count: torch's automatic dynamic shapes), a third none;
    the embeddings are the eager forward's."""
    from torch._dynamo.utils import counters

    eager, compiled = _encoder("mean", layers=1), _encoder("mean", layers=1)
    eager.packed = compiled.packed = True
    compiled.compile_packed = True
    ids = compiled.token_ids(list(TEXTS.values()) * 4)
    subsets = [ids[:3], ids[3:7], ids[:8], ids[:20]]  # ≤ 64 tokens (3 and 4 texts), 65-72 tokens, > 128 tokens
    assert [sdr.packed.bucket(sum(map(len, s)), 8, 64) for s in subsets][:2] == [64, 64]
    assert len({sdr.packed.bucket(sum(map(len, s)), 8, 64) for s in subsets}) == 3
    torch._dynamo.reset()
    counters.clear()
    graphs = []
    with torch.no_grad():
        for subset in subsets:
            torch.testing.assert_close(compiled.embed_token_ids(subset), eager.embed_token_ids(subset),
                                       atol=1e-5, rtol=1e-5)
            graphs.append(counters["stats"]["unique_graphs"])
    # (the CPU's nested-tensor attention splits the forward into a few graphs; each is compiled at most twice)
    assert graphs[0] > 0 and graphs[1] == graphs[0] and graphs[3] == graphs[2] <= 2 * graphs[0], graphs
