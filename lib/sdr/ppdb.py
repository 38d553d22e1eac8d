"""PPDB 2.0 lexical paraphrases: a reader and the phrase augmentation of paper 004 (§3.1).

PPDB lines read ``LHS ||| SOURCE ||| PARAPHRASE ||| FEATURES ||| ALIGNMENT ||| ENTAILMENT``,
e.g. ``[JJ] ||| crucial ||| vital ||| PPDB2.0Score=3.4 … ||| 0-0 ||| Equivalence`` (PPDB 1.0 lines
have no entailment field; both are read). SciToricsBERT grows the Phrasebank "by randomly
paraphrasing one noun, adjective, or adverb in a phrase" (1.5k → 30,505 phrases). No tagger is
installed offline, so the part of speech is the one of the rule's left-hand side: a phrase word is
replaced when PPDB has a noun (NN*), adjective (JJ*) or adverb (RB*) rule for it.

PPDB itself (ppdb.org; gigabytes) is not reachable here: the book runs without augmentation by
default and reports phrase counts with and without it.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from sdr.jsonio import iter_lines

DEFAULT_POS_PREFIXES: tuple[str, ...] = ("NN", "JJ", "RB")
"""Nouns, adjectives and adverbs (paper 004, §3.1), matched as prefixes of the LHS tag."""

ENTAILMENT_RELATIONS = ("Equivalence", "ForwardEntailment", "ReverseEntailment", "Exclusion",
                        "OtherRelated", "Independent")


@dataclass(frozen=True)
class PPDBRule:
    """One paraphrase rule: LHS tag (without brackets), source, paraphrase, features, alignment, relation."""

    lhs: str
    source: str
    target: str
    features: dict = field(default_factory=dict, compare=False, hash=False)
    alignment: str = ""
    entailment: str | None = None

    @property
    def score(self) -> float | None:
        """The PPDB 2.0 score (``PPDB2.0Score`` feature), if present."""
        value = self.features.get("PPDB2.0Score")
        return float(value) if value is not None else None


def parse_ppdb_line(line: str, where: str = "") -> PPDBRule:
    """Parse one PPDB line; ``ValueError`` naming ``where`` (``file:line``) when malformed."""
    fields = [f.strip() for f in line.rstrip("\n").split("|||")]
    if len(fields) not in (5, 6):
        raise ValueError(f"{where}: expected 'LHS ||| source ||| paraphrase ||| features ||| alignment "
                         f"[||| entailment]' (5 or 6 fields), got {len(fields)}")
    lhs, source, target, feature_text, alignment = fields[:5]
    if not re.fullmatch(r"\[[^\]]+\]", lhs):
        raise ValueError(f"{where}: left-hand side {lhs!r}: expected a bracketed tag such as [NN]")
    if not source or not target:
        raise ValueError(f"{where}: empty source or paraphrase")
    features: dict[str, float | str] = {}
    for item in feature_text.split():
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{where}: feature {item!r}: expected name=value")
        try:
            features[name] = float(value)
        except ValueError:
            features[name] = value
    entailment = fields[5] if len(fields) == 6 else None
    if entailment is not None and entailment not in ENTAILMENT_RELATIONS:
        raise ValueError(f"{where}: entailment {entailment!r}: expected one of {ENTAILMENT_RELATIONS}")
    return PPDBRule(lhs[1:-1], source, target, features, alignment, entailment)


@dataclass
class PPDBLexicon:
    """Single-word paraphrases by lower-cased source word, best PPDB score first."""

    paraphrases: dict[str, list[str]]
    report: dict

    def __len__(self) -> int:
        return len(self.paraphrases)

    def get(self, word: str) -> list[str]:
        """Paraphrases of a word (lower-cased lookup); empty when none."""
        return self.paraphrases.get(word.lower(), [])


def read_ppdb(
    path: str | Path,
    pos_prefixes: Iterable[str] = DEFAULT_POS_PREFIXES,
    relations: Iterable[str] | None = None,
    min_score: float | None = None,
    progress: bool = True,
) -> PPDBLexicon:
    """Read a PPDB lexical file (plain or ``.gz``) into a :class:`PPDBLexicon`.

    Kept: single-word rules whose LHS tag starts with one of ``pos_prefixes``, whose relation is in
    ``relations`` (all when None) and whose ``PPDB2.0Score`` is at least ``min_score`` (when
    given). Everything else is counted in the report by reason.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: PPDB file not found (a PPDB 2.0 lexical pack, e.g. ppdb-2.0-s-lexical)")
    prefixes = tuple(pos_prefixes)
    relation_set = set(relations) if relations is not None else None
    scored: dict[str, dict[str, float]] = {}
    report: Counter = Counter()
    # strict UTF-8 lines, .gz read whole or refused (a truncated one names the file)
    for line_number, line in iter_lines(path, "PPDB 2.0 rules (' ||| '-separated)", progress=progress):
        if not line.strip():
            continue
        rule = parse_ppdb_line(line, f"{path}:{line_number}")
        report["rules"] += 1
        if not rule.lhs.startswith(prefixes):
            report["skipped_pos"] += 1
            continue
        if " " in rule.source or " " in rule.target:
            report["skipped_not_single_word"] += 1
            continue
        if relation_set is not None and rule.entailment not in relation_set:
            report["skipped_relation"] += 1
            continue
        score = rule.score
        if min_score is not None and (score is None or score < min_score):
            report["skipped_score"] += 1
            continue
        source, target = rule.source.lower(), rule.target.lower()
        if source == target:
            report["skipped_identity"] += 1
            continue
        best = scored.setdefault(source, {})
        best[target] = max(best.get(target, float("-inf")), score if score is not None else 0.0)
        report["kept"] += 1
    paraphrases = {source: [t for t, _ in sorted(targets.items(), key=lambda kv: (-kv[1], kv[0]))]
                   for source, targets in scored.items()}
    result = dict(report)
    result.update({"source": str(path), "source_words": len(paraphrases),
                   "pos_prefixes": list(prefixes), "relations": sorted(relation_set) if relation_set else "all",
                   "min_score": min_score})
    return PPDBLexicon(paraphrases, result)


_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_PLACEHOLDER_WORD = re.compile(r"^[XYZ](?:s|'s)?$")


def _match_case(replacement: str, original: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[0].isupper():
        return replacement[0].upper() + replacement[1:]
    return replacement


def paraphrase_variants(text: str, lexicon: PPDBLexicon) -> list[str]:
    """Every variant of ``text`` with exactly one word replaced by one of its PPDB paraphrases."""
    variants: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        if _PLACEHOLDER_WORD.match(word):
            continue
        for target in lexicon.get(word):
            variants.append(text[:match.start()] + _match_case(target, word) + text[match.end():])
    return variants


def augment_phrases(phrases, lexicon: PPDBLexicon, per_phrase: int | None = None, seed: int = 0,
                    progress: bool = True):
    """Phrase set plus its one-word PPDB paraphrases (origin ``ppdb``), as in paper 004 §3.1.

    ``per_phrase`` keeps that many variants per phrase, drawn at random with ``seed`` (all when
    None). Returns a new :class:`~sdr.cfs3.phrases.PhraseSet`; its report gains
    ``ppdb_paraphrases_added``.
    """
    from sdr.cfs3.phrases import Phrase

    rng = random.Random(seed)
    added: list[Phrase] = []
    for phrase in tqdm(phrases.phrases, desc="PPDB paraphrases", disable=not progress):
        if phrase.origin == "ppdb":
            continue
        variants = list(dict.fromkeys(paraphrase_variants(phrase.text, lexicon)))
        if per_phrase is not None and len(variants) > per_phrase:
            variants = rng.sample(variants, per_phrase)
        added.extend(Phrase(phrase.label, variant, "ppdb") for variant in variants)
    return phrases.extended(added, "ppdb_paraphrases_added")
