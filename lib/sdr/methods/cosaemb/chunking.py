"""CoSaEmb's chunker (§3.3.1): an aspect text split at sentence boundaries into encoder inputs of at most
``max_length`` tokens, each later chunk repeating its predecessor's last sentence.

* :func:`regex_sentences` (fast, rule-based) and :func:`pysbd_sentences` (pysbd's English segmenter, the ``paper``
  profile's) split a text into sentences; :data:`SENTENCE_SPLITTERS` names them for the chapter's
  ``sentence_splitter`` parameter.
* :class:`Chunker` — the first chunk of an aspect text is ``[TTL] title [SEP] [INTR] l1 … li`` (the aspect's own
  token), every later one ``[INTR] li [INTR] li+1 … lj``; lengths count the tokenizer's own [CLS]/[SEP], so no chunk
  is ever truncated. Its :class:`ChunkingReport` counts everything it cut or left out.
* :func:`parse_chunk_id` reads the ids ``<paper_id>#<aspect>.<chunk>`` the chunks carry.

Shown in: notebooks/cosaemb.ipynb, "Training data: SPECTER's triplets, full text, chunks".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sdr.corpus import Paper
from sdr.methods.cosaemb.recipe import (ABSTRACT_TOKEN, ASPECT_TOKENS, SPECIAL_TOKENS, TITLE_TOKEN, AspectText,
                                        aspect_texts, cosaemb_aspect)

__all__ = ["regex_sentences", "pysbd_sentences", "SENTENCE_SPLITTERS", "Chunk", "ChunkingReport", "Chunker",
           "parse_chunk_id"]

# ------------------------------------------------------------------------------------ sentences
# A period ends a sentence unless it closes a common abbreviation; "et al." and "Fig." stay inside.
_ABBREVIATIONS = ("et al", "e.g", "i.e", "fig", "figs", "eq", "eqs", "cf", "vs", "sec", "tab", "no", "approx",
                  "resp", "dr", "mr", "ms", "prof", "st", "vol", "pp", "ref", "refs")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def regex_sentences(text: str) -> list[str]:
    """Fast rule-based sentence split: ``.``/``!``/``?`` + space + capital or digit, not after an abbreviation."""
    text = " ".join(text.split())
    if not text:
        return []
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        before = text[start:match.start()].rstrip(".!?\"')]").lower()
        if any(before.endswith(" " + a) or before == a for a in _ABBREVIATIONS) or re.search(r"\b[a-z]$", before):
            continue  # "et al. Smith", "Fig. 3", an initial "J. Smith"
        sentences.append(text[start:match.start()].strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


_PYSBD = None


def pysbd_sentences(text: str) -> list[str]:
    """pysbd's English segmenter (slower; what the paper-scale profile uses)."""
    global _PYSBD
    if _PYSBD is None:
        import pysbd

        _PYSBD = pysbd.Segmenter(language="en", clean=False)
    return [s.strip() for s in _PYSBD.segment(" ".join(text.split())) if s.strip()]


SENTENCE_SPLITTERS = {"regex": regex_sentences, "pysbd": pysbd_sentences}


# ------------------------------------------------------------------------------------ chunking
@dataclass(frozen=True)
class Chunk:
    """One encoder input cut from an aspect text: ``id`` = ``<paper_id>#<aspect>.<chunk index>``.

    ``sentences`` are the chunk's sentences (the first one repeated from the previous chunk when
    ``carried``); ``text`` is the formatted input with the aspect token (and the title in chunk 0);
    ``headings`` are the paper's headings merged into the aspect text.
    """

    id: str
    paper_id: str
    aspect: str
    position: int
    sentences: tuple[str, ...]
    text: str
    carried: bool = False
    headings: tuple[str, ...] = ()


@dataclass
class ChunkingReport:
    """What the chunker did; nothing is dropped without being counted here."""

    papers: int = 0
    papers_without_sections: int = 0
    sections: int = 0  # the papers' sections (headings) read
    aspect_texts: int = 0  # what they were merged into: at most five per paper
    aspect_texts_empty: int = 0  # no sentence at all: no chunk
    chunks: int = 0
    sentences: int = 0
    sentences_cut: int = 0  # longer than a chunk on their own: cut into pieces at word boundaries
    carry_dropped: int = 0  # the previous last sentence did not fit with the next one: not repeated
    max_tokens: int = 0  # longest chunk, in tokens (with the tokenizer's own [CLS]/[SEP])
    sections_by_aspect: Counter = field(default_factory=Counter)
    aspect_texts_by_aspect: Counter = field(default_factory=Counter)
    chunks_by_aspect: Counter = field(default_factory=Counter)

    def __str__(self) -> str:
        return (f"chunker: {self.papers} papers ({self.papers_without_sections} without sections), "
                f"{self.sections} sections merged into {self.aspect_texts} aspect texts ({self.aspect_texts_empty} "
                f"empty), {self.chunks} chunks of at most {self.max_tokens} tokens from {self.sentences} sentences; "
                f"{self.sentences_cut} over-long sentences cut at word boundaries; carry-over sentence left out "
                f"{self.carry_dropped} times because it did not fit with the next sentence.")


class Chunker:
    """Cuts sections into CoSaEmb inputs of at most ``max_length`` tokens (§3.3.1).

    ``tokenizer`` must already hold :data:`SPECIAL_TOKENS` (``Encoder.add_special_tokens``) so that each
    counts as one token. Lengths include the tokenizer's own ``[CLS]``/``[SEP]``: every chunk is encoded
    whole, never truncated. ``sep`` is the tokenizer's separator (``[SEP]`` for BERT models).
    """

    def __init__(self, tokenizer, max_length: int, sep: str | None = None,
                 split_sentences: Callable[[str], list[str]] | str = "regex"):
        missing = [t for t in SPECIAL_TOKENS if t not in tokenizer.get_vocab()]
        if missing:
            raise ValueError(f"Chunker: the tokenizer lacks the CoSaEmb tokens {missing}; call "
                             "Encoder.add_special_tokens(cosaemb.SPECIAL_TOKENS) first")
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.sep = sep if sep is not None else (tokenizer.sep_token or " ")
        if isinstance(split_sentences, str):
            if split_sentences not in SENTENCE_SPLITTERS:
                raise ValueError(f"unknown sentence splitter {split_sentences!r}; have {sorted(SENTENCE_SPLITTERS)}")
            split_sentences = SENTENCE_SPLITTERS[split_sentences]
        self.split_sentences = split_sentences
        self.report = ChunkingReport()
        # [CLS] and [SEP] that the tokenizer adds around every input
        self._frame = len(tokenizer("", add_special_tokens=True)["input_ids"])
        self._token_costs: dict[str, int] = {}

    # -------------------------------------------------------------- texts
    def n_tokens(self, text: str) -> int:
        """Tokens of ``text`` as the encoder sees it (with [CLS]/[SEP])."""
        return len(self.tokenizer(text, add_special_tokens=True)["input_ids"])

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """:meth:`n_tokens` of many texts in one batched tokenizer call."""
        return [n + self._frame for n in self._piece_counts(texts)]

    def _pieces(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def abstract_text(self, paper: Paper) -> str:
        """``[TTL] title [SEP] [ABS] abstract`` (eq. 3's p^abs)."""
        return f"{TITLE_TOKEN} {paper.title} {self.sep} {ABSTRACT_TOKEN} {paper.abstract}".strip()

    def first_prefix(self, paper: Paper, aspect: str) -> str:
        return f"{TITLE_TOKEN} {paper.title} {self.sep} {ASPECT_TOKENS[aspect]}"

    @staticmethod
    def later_text(token: str, carried: str | None, sentences: Sequence[str]) -> str:
        """``[INTR] l_i [INTR] l_i+1 … l_j`` (the carried sentence, then the chunk's own)."""
        body = " ".join(sentences)
        return f"{token} {carried} {token} {body}" if carried is not None else f"{token} {body}"

    # -------------------------------------------------------------- chunking
    def _piece_counts(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]]

    def _cut(self, sentence: str, budget: int) -> list[str]:
        """An over-long sentence in word-boundary pieces of at most ``budget`` tokens."""
        pieces, current = [], []
        for word in sentence.split():
            if current and self._pieces(" ".join(current + [word])) > budget:
                pieces.append(" ".join(current))
                current = []
            current.append(word)
        if current:
            pieces.append(" ".join(current))
        return pieces

    def _token_cost(self, token: str) -> int:
        if token not in self._token_costs:
            self._token_costs[token] = self._pieces(token)
        return self._token_costs[token]

    def _pack(self, units: list[str], unit_lengths: list[int], limit: int, first_cost: int, token_cost: int,
              paper: Paper, aspect: str) -> list[tuple[str | None, list[str]]]:
        """Greedy packing: ``[(carried sentence or None, own sentences), ...]``; cuts a unit that cannot fit."""
        packed: list[tuple[str | None, list[str]]] = []
        carried: tuple[str, int] | None = None
        i = 0
        while i < len(units):
            use_carry = carried
            if not packed:
                cost = first_cost
            else:
                cost = self._frame + token_cost + (token_cost + use_carry[1] if use_carry else 0)
            if use_carry is not None and cost + unit_lengths[i] > limit:
                use_carry = None  # the carried sentence and the next one do not fit together
                self.report.carry_dropped += 1
                cost = self._frame + token_cost
            if cost + unit_lengths[i] > limit:  # alone it does not fit after this prefix: cut it
                pieces = self._cut(units[i], limit - cost - 1)
                if len(pieces) < 2:
                    raise ValueError(f"Chunker: sentence {i} of the {aspect} text of {paper.paper_id} "
                                     f"does not fit in {self.max_length} tokens")
                units[i:i + 1] = pieces
                unit_lengths[i:i + 1] = self._piece_counts(pieces)
                self.report.sentences_cut += 1
                continue
            j = i
            while j < len(units) and cost + unit_lengths[j] <= limit:
                cost += unit_lengths[j]
                j += 1
            packed.append((use_carry[0] if use_carry else None, units[i:j]))
            carried = (units[j - 1], unit_lengths[j - 1])
            i = j
        return packed

    def aspect_chunks(self, paper: Paper, aspect_text: AspectText) -> list[Chunk]:
        """The chunks of one aspect text of ``paper`` (empty list for a text without sentences)."""
        aspect = aspect_text.aspect
        token = ASPECT_TOKENS[aspect]
        self.report.aspect_texts += 1
        self.report.aspect_texts_by_aspect[aspect] += 1
        sentences = [s for paragraph in aspect_text.paragraphs for s in self.split_sentences(paragraph)]
        if not sentences:
            self.report.aspect_texts_empty += 1
            return []
        self.report.sentences += len(sentences)
        first_prefix = self.first_prefix(paper, aspect)
        # room for sentences in a later chunk that carries nothing: [CLS] token ... [SEP]
        budget = self.max_length - self._frame - self._token_cost(token)
        if self.max_length - self._frame - self._pieces(first_prefix) < 8 or budget < 16:
            raise ValueError(f"Chunker: max_length {self.max_length} leaves no room for text after the title "
                             f"of paper {paper.paper_id} ({self.n_tokens(first_prefix)} tokens)")
        lengths = self._piece_counts(sentences)
        units: list[str] = []
        unit_lengths: list[int] = []
        for sentence, length in zip(sentences, lengths):
            if length > budget // 2:
                # a sentence over half a chunk is cut so that it always fits next to a carried piece
                cut = self._cut(sentence, budget // 2)
                self.report.sentences_cut += len(cut) > 1
                units.extend(cut)
                unit_lengths.extend(self._piece_counts(cut))
            else:
                units.append(sentence)
                unit_lengths.append(length)

        # Greedy packing on token counts (WordPiece counts add up over space-joined pieces); the chunks are
        # then tokenized whole to check the limit, and packed again tighter if a tokenizer disagrees.
        first_cost = self._frame + self._pieces(first_prefix)
        token_cost = self._token_cost(token)
        limit = self.max_length
        while True:
            packed = self._pack(units, unit_lengths, limit, first_cost, token_cost, paper, aspect)
            texts = [f"{first_prefix} {' '.join(own)}" if k == 0 else self.later_text(token, carry, own)
                     for k, (carry, own) in enumerate(packed)]
            counts = self._piece_counts(texts)
            overshoot = max(n + self._frame - self.max_length for n in counts)
            if overshoot <= 0:
                break
            limit -= overshoot
        chunks: list[Chunk] = []
        for k, ((carry, own), text, n) in enumerate(zip(packed, texts, counts)):
            chunk_sentences = ((carry,) if carry is not None else ()) + tuple(own)
            chunks.append(Chunk(f"{paper.paper_id}#{aspect}.{k}", paper.paper_id, aspect, k, chunk_sentences, text,
                                carried=carry is not None, headings=aspect_text.headings))
            self.report.max_tokens = max(self.report.max_tokens, n + self._frame)
        self.report.chunks += len(chunks)
        self.report.chunks_by_aspect[aspect] += len(chunks)
        return chunks

    def paper_chunks(self, paper: Paper) -> list[list[Chunk]]:
        """Chunks of each aspect text of ``paper`` (:func:`aspect_texts`: one list per aspect present, in
        :data:`ASPECTS` order)."""
        self.report.papers += 1
        self.report.sections += len(paper.sections)
        for section in paper.sections:
            self.report.sections_by_aspect[cosaemb_aspect(section.heading)] += 1
        if not paper.sections:
            self.report.papers_without_sections += 1
        return [self.aspect_chunks(paper, text) for text in aspect_texts(paper)]


def parse_chunk_id(text_id: str) -> tuple[str, str, int] | None:
    """``<paper_id>#<aspect>.<position>`` → ``(paper_id, aspect, position)``; a paper id (an abstract) → None."""
    if "#" not in text_id:
        return None
    paper_id, rest = text_id.rsplit("#", 1)
    aspect, _, position = rest.rpartition(".")
    if aspect not in ASPECT_TOKENS or not position.isdigit():
        raise ValueError(f"{text_id!r} is not a chunk id <paper_id>#<aspect>.<position>")
    return paper_id, aspect, int(position)
