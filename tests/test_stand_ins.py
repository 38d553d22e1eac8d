"""Tiny random stand-ins of the released models (``sdr.synthetic.models``): the paper dry run loads one per
released model, so each family's files, tokenizer and pooling path runs in CI."""

from __future__ import annotations

import pytest

from sdr.encoders import Encoder
from sdr.synthetic.models import STAND_INS, folder_name, stand_in_for, write_stand_in

TEXTS = ["Neural networks for citation recommendation in scientific documents.",
         "We propose a method; results show consistent gains over strong baselines."] * 10


@pytest.mark.parametrize("name, files, type_ids, pooling", [
    ("allenai/specter", {"vocab.txt", "tokenizer.json", "config.json", "model.safetensors"}, True, "cls"),
    ("roberta-base", {"vocab.json", "merges.txt", "tokenizer.json", "config.json", "model.safetensors"}, False, "cls"),
    ("sentence-transformers/stsb-roberta-base-v2", {"vocab.json", "merges.txt", "modules.json",
                                                    "sentence_bert_config.json", "1_Pooling"}, False, "mean"),
])
def test_a_stand_in_has_its_familys_files_and_loads_through_the_encoder(name, files, type_ids, pooling, tmp_path):
    folder = write_stand_in(tmp_path / folder_name(name), name, TEXTS, layers=1, hidden=16)
    assert files <= {p.name for p in folder.iterdir()}
    encoder = Encoder.load(str(folder), device="cpu")
    assert encoder.pooling == pooling and encoder.model.config.num_hidden_layers == 1
    assert ("token_type_ids" in encoder.tokenizer("a b")) is type_ids
    assert encoder.tokenizer.tokenize("citation recommendation") != [encoder.tokenizer.unk_token] * 2
    vectors = encoder.encode_texts(TEXTS[:2], progress=False)
    assert vectors.shape == (2, 16) and (vectors[0] != vectors[1]).any()


def test_every_released_model_has_a_family_and_names_stay_inside_one_folder():
    assert {stand_in_for(name).family for name in STAND_INS} == {"bert", "roberta"}
    assert stand_in_for("someone/roberta-large-x").family == "roberta"
    assert folder_name("allenai/specter") == "allenai__specter"
    for bad in ("../x", "/abs", "a\\b", ""):
        with pytest.raises(ValueError, match="Hub model name"):
            folder_name(bad)


@pytest.mark.parametrize("name", ["allenai/specter", "sentence-transformers/stsb-roberta-base-v2"])
def test_a_stand_ins_documents_differ_by_more_than_rounding(name, synthetic_corpus, tmp_path):
    """At BERT's own initialisation the [CLS] vectors of a 1-layer random model agree to cosine 0.9999998, so a
    metric of it flipped with the forward pass's batching (a CI failure of the FLeW released check); the stand-ins
    are initialised wider so that documents differ by far more than rounding, and a perturbation of a float32 ulp
    leaves every ranking as it was."""
    import numpy as np

    texts = [f"{p.title} {p.abstract}" for p in synthetic_corpus.papers.values()]
    folder = write_stand_in(tmp_path / folder_name(name), name, texts, layers=1, hidden=16)
    vectors = Encoder.load(str(folder), device="cpu").encode_texts(texts, progress=False).astype(np.float64)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = (unit @ unit.T)[np.triu_indices(len(texts), 1)]
    assert cosines.mean() < 0.99, cosines.mean()
    noisy = unit + np.random.default_rng(0).normal(0, 1e-7, unit.shape)
    assert ((unit @ unit.T).argsort(1) == (noisy @ noisy.T).argsort(1))[:, -10:].all()
