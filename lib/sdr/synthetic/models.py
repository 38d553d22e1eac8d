"""Tiny random stand-ins of the papers' released models, written offline in their released layouts.

The paper dry run cannot download SciBERT, SPECTER, RoBERTa or SimCSE, yet their code paths differ: a WordPiece
BERT has token type ids and ``[CLS] … [SEP]``, a byte-level BPE RoBERTa has neither type ids nor a ``[CLS]`` token
(``<s> … </s>``, positions offset by the padding index), and a sentence-transformers folder carries its own pooling.
:func:`write_stand_in` trains a tokenizer of the family on the fixture's texts with the ``tokenizers`` library and
saves a small randomly initialised model of that architecture with the file names the released model uses
(``config.json``, ``model.safetensors``, ``vocab.txt`` or ``vocab.json`` + ``merges.txt``, ``tokenizer.json``,
``tokenizer_config.json``, ``special_tokens_map.json``; plus ``modules.json``, ``sentence_bert_config.json`` and
``1_Pooling/config.json`` for sentence-transformers models), so every family's loading, tokenizing and pooling path
runs in CI. The weights are random: the numbers such a model gives mean nothing, only that the path ran.

Shown in: the paper dry run (``sdr paper-dry-run``), which writes one stand-in per released model a chapter reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StandIn:
    """How a released model is stood in for: its architecture family and, for sentence-transformers models, the
    pooling its folder declares."""

    family: str  # "bert" (WordPiece) or "roberta" (byte-level BPE)
    sentence_transformers: bool = False
    pooling: str = "mean"
    subfolders: tuple[str, ...] = ()  # a release of several encoders: one stand-in per sub-folder, none at the top


#: The released models the chapters read at ``paper`` → their stand-in (architecture family of the released
#: checkpoint: SciBERT, SPECTER, SciNCL, SPECTER2, FLeW's encoders, SciToricsBERT, PubMedBERT and BERT are BERT
#: models with WordPiece vocabularies; RoBERTa and the two RoBERTa-based sentence encoders are byte-level BPE).
# BERT's own initialisation (std 0.02) gives a random model whose [CLS] vectors of different texts agree to a cosine
# of 0.9999998: the differences between documents are then a few float32 ulps, and any metric of the stand-in flips
# with the batching of its forward pass (seen in CI: the same model scored 0.11 apart by two encoding paths). At 0.5
# the texts' vectors differ as a trained encoder's do (mean pairwise cosine about 0.8), and the dry run's released
# checks compare encoding paths, not rounding noise.
STAND_IN_INIT_RANGE = 0.5

STAND_INS = {
    "allenai/scibert_scivocab_uncased": StandIn("bert"),
    "allenai/specter": StandIn("bert"),
    "malteos/scincl": StandIn("bert"),
    "allenai/specter2_base": StandIn("bert"),
    # FLeW's releases hold three facet encoders; their layout could not be checked from here (the chapter's
    # sdr.methods.flew.released_facet_models accepts one sub-folder per facet): the stand-in has one folder each
    "Miracle-dz/FLeW-split": StandIn("bert", subfolders=("background", "method", "result")),
    "Miracle-dz/FLeW-full": StandIn("bert", subfolders=("background", "method", "result")),
    "kaisugi/scitoricsbert": StandIn("bert"),
    "bert-base-uncased": StandIn("bert"),
    "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext": StandIn("bert"),
    "roberta-base": StandIn("roberta"),
    "sentence-transformers/stsb-roberta-base-v2": StandIn("roberta", sentence_transformers=True, pooling="mean"),
    "princeton-nlp/sup-simcse-roberta-base": StandIn("roberta"),
}


def stand_in_for(name: str) -> StandIn:
    """The stand-in of a released model (a name not in :data:`STAND_INS` is a BERT model unless it names
    RoBERTa)."""
    return STAND_INS.get(name, StandIn("roberta" if "roberta" in name.lower() else "bert"))


def folder_name(name: str) -> str:
    """A Hub name as one folder name (``allenai/specter`` → ``allenai__specter``)."""
    if not name or name.startswith(("/", ".")) or ".." in name or "\\" in name:
        raise ValueError(f"{name!r}: expected a Hub model name such as 'allenai/specter'")
    return name.replace("/", "__")


def _wordpiece(texts: Sequence[str], vocab_size: int):
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(lowercase=True)
    tokenizer.train_from_iterator(list(texts), vocab_size=vocab_size, min_frequency=1,
                                  special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
                                  show_progress=False)
    return tokenizer


def _byte_level_bpe(texts: Sequence[str], vocab_size: int):
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(list(texts), vocab_size=vocab_size, min_frequency=1,
                                  special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False)
    return tokenizer


def write_stand_in(folder: str | Path, name: str, texts: Iterable[str], *, layers: int = 2, hidden: int = 32,
                   heads: int = 2, vocab_size: int = 2000, seed: int = 0) -> Path:
    """Write the stand-in of released model ``name`` into ``folder`` (see the module docstring) and return it.

    ``texts`` train the tokenizer (the fixture's titles and abstracts); the model is a ``layers``-layer, ``hidden``-
    wide random model of the family, seeded by ``seed``. A release of several encoders (``subfolders``) gets one
    such model per sub-folder, each with its own seed."""
    spec = stand_in_for(name)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        raise ValueError(f"write_stand_in {name}: no texts to train its tokenizer on")
    if spec.subfolders:
        for number, subfolder in enumerate(spec.subfolders):
            _write_one(folder / subfolder, name, spec, texts, layers, hidden, heads, vocab_size,
                       seed + 101 * (number + 1))
        (folder / "STAND_IN.md").write_text(
            f"A tiny random stand-in of {name}: {len(spec.subfolders)} encoders in {', '.join(spec.subfolders)}, "
            "written by sdr.synthetic.models for the paper dry run: their numbers mean nothing.\n")
        return folder
    return _write_one(folder, name, spec, texts, layers, hidden, heads, vocab_size, seed)


def _write_one(folder: Path, name: str, spec: StandIn, texts: list[str], layers: int, hidden: int, heads: int,
               vocab_size: int, seed: int) -> Path:
    import torch
    from transformers import (BertConfig, BertModel, BertTokenizerFast, RobertaConfig, RobertaModel,
                              RobertaTokenizerFast)

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    common = dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=hidden * 4, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                  initializer_range=STAND_IN_INIT_RANGE)
    if spec.family == "bert":
        _wordpiece(texts, vocab_size).save_model(str(folder))  # vocab.txt, as the released BERT models ship it
        tokenizer = BertTokenizerFast.from_pretrained(str(folder))
        model = BertModel(BertConfig(vocab_size=len(tokenizer), max_position_embeddings=512, **common))
    elif spec.family == "roberta":
        _byte_level_bpe(texts, vocab_size).save_model(str(folder))  # vocab.json and merges.txt, as RoBERTa's
        tokenizer = RobertaTokenizerFast.from_pretrained(str(folder))
        model = RobertaModel(RobertaConfig(vocab_size=len(tokenizer), max_position_embeddings=514, type_vocab_size=1,
                                           pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                                           eos_token_id=tokenizer.eos_token_id, **common))
    else:
        raise ValueError(f"write_stand_in {name}: unknown family {spec.family!r}")
    tokenizer.model_max_length = 512
    tokenizer.save_pretrained(str(folder))
    (folder / "special_tokens_map.json").write_text(json.dumps(
        {key: str(getattr(tokenizer, key)) for key in ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
                                                        "bos_token", "eos_token") if getattr(tokenizer, key, None)},
        indent=2))
    model.config.name_or_path = name
    model.save_pretrained(str(folder), safe_serialization=True)
    if spec.sentence_transformers:
        _sentence_transformers_files(folder, hidden, spec.pooling)
    (folder / "STAND_IN.md").write_text(
        f"A tiny random stand-in of {name} ({spec.family}, {layers} layers, hidden {hidden}) written by "
        "sdr.synthetic.models for the paper dry run: its numbers mean nothing.\n")
    return folder


def _sentence_transformers_files(folder: Path, dimension: int, pooling: str) -> None:
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    (folder / "modules.json").write_text(json.dumps(modules, indent=2))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128, "do_lower_case": False}))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": dimension, "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False}, indent=2))
