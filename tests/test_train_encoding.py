"""The trainer's encoding path: token ids cached per text, each distinct paper encoded once per optimizer
step, length-sorted chunks padded to their own longest text, activations recomputed per chunk on request.
Same tiny setting as ``test_train.py`` (1-layer all-MiniLM-L6-v2, max_length 32, CPU, float32)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sdr.samplers import Triplet
from sdr.train import TrainConfig, TripletObjective, train

TEXTS = {
    "a": "Graph neural networks for citation recommendation.",
    "b": "Citation-informed transformers embed scientific documents.",
    "c": "Protein structure prediction with attention.",
    "d": "Folding proteins using deep learning and evolutionary data from many species and families.",
    "e": "Monetary policy.",
    "f": "Central bank communication moves interest rates.",
    "g": "Contrastive learning of document representations from citations.",
    "h": "Dark matter halos in cosmological simulations.",
}
TRIPLETS = [Triplet("a", "b", "c", "hard"), Triplet("c", "d", "e", "easy"), Triplet("e", "f", "h", "easy"),
            Triplet("g", "a", "d", "hard"), Triplet("b", "g", "f", "easy"), Triplet("h", "c", "a", "easy")]


def _record_model_inputs(encoder) -> list[torch.Size]:
    """Shapes of every input_ids tensor the transformer receives."""
    shapes = []
    encoder.model.register_forward_pre_hook(lambda module, args, kwargs: shapes.append(kwargs["input_ids"].shape),
                                            with_kwargs=True)
    return shapes


def test_forward_encodes_distinct_texts_once_in_length_sorted_chunks(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    encoder.eval()
    texts = [TEXTS[k] for k in "abcadbe"]  # "a" and "b" twice
    lengths = {t: len(ids) for t, ids in zip(TEXTS.values(), encoder.token_ids(list(TEXTS.values())))}
    with torch.no_grad():
        one_by_one = torch.cat([encoder([t]) for t in texts])
        shapes = _record_model_inputs(encoder)
        encoder.chunk_tokens = 2 * max(lengths.values())  # room for 2 rows of the longest text
        chunked = encoder(texts)
    torch.testing.assert_close(chunked, one_by_one, rtol=1e-5, atol=1e-6)
    assert sum(shape[0] for shape in shapes) == 5  # 5 distinct texts, each encoded once
    assert len(shapes) > 1  # the budget forced several chunks
    # chunks are taken longest first, each padded only to its own longest text, within the token budget
    sorted_lengths = sorted((lengths[t] for t in dict.fromkeys(texts)), reverse=True)
    starts = np.cumsum([0] + [shape[0] for shape in shapes[:-1]])
    assert [shape[1] for shape in shapes] == [sorted_lengths[i] for i in starts]
    assert all(shape[0] * shape[1] <= encoder.chunk_tokens for shape in shapes)

def test_each_distinct_paper_is_encoded_once_per_optimizer_step(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    shapes = _record_model_inputs(encoder)
    objective = TripletObjective(TEXTS)
    calls = []

    def count_calls(row):
        calls.append(sum(shape[0] for shape in shapes))
        shapes.clear()

    config = TrainConfig(epochs=1, batch_size=2, accumulation_steps=3, learning_rate=1e-3, seed=0,
                         progress=False)
    train(encoder, TRIPLETS, objective, config, callback=count_calls)
    # one step of all 6 triplets (18 paper slots) over 8 distinct papers: 8 rows, not 18
    assert calls == [8]


def test_token_ids_are_computed_once_per_text(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    calls = []
    tokenizer_call = type(encoder.tokenizer).__call__

    class Counting(type(encoder.tokenizer)):
        def __call__(self, texts, *args, **kwargs):
            calls.append(len(texts))
            return tokenizer_call(self, texts, *args, **kwargs)

    encoder.tokenizer.__class__ = Counting
    config = TrainConfig(epochs=2, batch_size=2, accumulation_steps=1, learning_rate=1e-3, seed=0,
                         progress=False)
    train(encoder, TRIPLETS, TripletObjective(TEXTS), config)
    assert sum(calls) == len(TEXTS)  # 6 optimizer steps, 8 texts tokenized once each
    encoder.max_length = 8  # another truncation: the cache is dropped, not reused
    assert max(len(ids) for ids in encoder.token_ids(list(TEXTS.values()))) == 8


def test_recomputed_chunks_give_the_same_training_run(fresh_tiny_encoder):
    """Activation recomputation per chunk (the memory saver) replays the same dropout masks: same weights."""
    config = dict(epochs=1, batch_size=3, accumulation_steps=2, learning_rate=1e-3, seed=0, progress=False,
                  chunk_tokens=40)
    plain, recomputed = fresh_tiny_encoder(), fresh_tiny_encoder()
    first = train(plain, TRIPLETS, TripletObjective(TEXTS), TrainConfig(**config))
    second = train(recomputed, TRIPLETS, TripletObjective(TEXTS), TrainConfig(**config, recompute_chunks=True))
    assert first.history["loss"].tolist() == second.history["loss"].tolist()
    for (name, one), two in zip(plain.named_parameters(), recomputed.parameters()):
        torch.testing.assert_close(one, two, rtol=0, atol=1e-7, msg=name)
    assert not np.isnan(first.history["loss"]).any()


def _out_of_memory_above(encoder, max_chunk_tokens: int, failures: list) -> None:
    """Make ``encoder`` behave like a device that cannot hold a step unless it runs with activations
    recomputed in chunks of at most ``max_chunk_tokens`` padded tokens (a CUDA out-of-memory error
    otherwise, as torch raises it)."""
    pool = encoder._pool

    def limited(input_ids, attention_mask):
        if torch.is_grad_enabled() and (not encoder.recompute_chunks or encoder.chunk_tokens > max_chunk_tokens):
            failures.append((encoder.recompute_chunks, encoder.chunk_tokens))
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return pool(input_ids, attention_mask)

    encoder._pool = limited


def test_out_of_memory_shrinks_the_chunks_not_the_batch(fresh_tiny_encoder):
    """Issue 9: the micro-batch adapts to memory. On out-of-memory the same step reruns with recomputed
    activations, then in halved chunks, until it fits; the effective batch, and so the weights, are those of
    a run that started with the setting that fits."""
    # 2 optimizer steps: the first adapts, the second keeps the setting that fit
    config = dict(epochs=1, batch_size=3, accumulation_steps=1, learning_rate=1e-3, seed=0, progress=False)
    fitting, adapting = fresh_tiny_encoder(), fresh_tiny_encoder()
    reference = train(fitting, TRIPLETS, TripletObjective(TEXTS),
                      TrainConfig(**config, chunk_tokens=2048, recompute_chunks=True))
    failures = []
    _out_of_memory_above(adapting, 2048, failures)
    adapting_settings = adapting.chunk_tokens, adapting.recompute_chunks
    result = train(adapting, TRIPLETS, TripletObjective(TEXTS), TrainConfig(**config, chunk_tokens=16384))
    assert result.memory_adaptations == [
        {"step": 1, "chunk_tokens": 16384, "recompute_chunks": True},
        {"step": 1, "chunk_tokens": 8192, "recompute_chunks": True},
        {"step": 1, "chunk_tokens": 4096, "recompute_chunks": True},
        {"step": 1, "chunk_tokens": 2048, "recompute_chunks": True},
    ]
    assert len(failures) == 4 and result.steps == reference.steps == 2
    assert result.history["loss"].tolist() == reference.history["loss"].tolist()
    for (name, one), two in zip(fitting.named_parameters(), adapting.parameters()):
        torch.testing.assert_close(one, two, rtol=0, atol=1e-7, msg=name)
    # the encoder's own chunking is restored after training
    assert (adapting.chunk_tokens, adapting.recompute_chunks) == adapting_settings


def test_out_of_memory_at_the_smallest_chunk_is_raised(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    _out_of_memory_above(encoder, 0, [])
    config = TrainConfig(epochs=1, batch_size=3, accumulation_steps=1, seed=0, progress=False, chunk_tokens=1024)
    with pytest.raises(torch.OutOfMemoryError):
        train(encoder, TRIPLETS, TripletObjective(TEXTS), config)
