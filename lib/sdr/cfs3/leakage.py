"""Keep evaluation sentences out of the CFS3 sentence pool.

SciToricsBERT is scored on CSAbstruct's test split (paper 004, Table 4). A CFS3 built from a pool that holds
those sentences would train on (distantly labelled copies of) the test queries. The paper removes the
corpora of its CF-labelled evaluation set from S2ORC (Appendix A) for the same reason; here the pool is
filtered *by text*: a pool sentence is dropped when its normalised text (lower-cased, whitespace collapsed)
equals a held-out sentence, whatever source it came from (CSFCube abstracts, for instance, are CS abstracts
too and could repeat a CSAbstruct sentence).

:func:`csabstruct_held_out` names the sentences to hold out (CSAbstruct dev and test by default);
:func:`exclude_held_out` filters a pool and returns the audit: per held-out set and pool source, how many pool
sentences matched before and after the filter.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from sdr.cfs3.sentences import Sentence, csabstruct_sentences

__all__ = ["normalise_text", "csabstruct_held_out", "exclude_held_out", "leakage_audit"]

_SPACES = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """The key two sentences are compared by: lower case, runs of whitespace as one space, stripped."""
    return _SPACES.sub(" ", text).strip().lower()


def csabstruct_held_out(directory: str | Path, splits: Sequence[str] = ("dev", "test"),
                        progress: bool = False) -> dict[str, list[str]]:
    """``{"CSAbstruct <split>": [sentence, …]}`` for the splits a chapter evaluates (or validates) on."""
    held_out = {}
    for split in splits:
        sentences, _ = csabstruct_sentences(directory, splits=(split,), progress=progress)
        held_out[f"CSAbstruct {split}"] = [s.text for s in sentences]
    return held_out


def leakage_audit(pool: Iterable[Sentence], held_out: Mapping[str, Iterable[str]]) -> pd.DataFrame:
    """Pool sentences whose text is a held-out sentence: one row per (held-out set, pool source)."""
    keys = {name: {normalise_text(t) for t in texts} for name, texts in held_out.items()}
    counts: Counter = Counter()
    sources: set[str] = set()
    for sentence in pool:
        sources.add(sentence.source)
        key = normalise_text(sentence.text)
        for name, texts in keys.items():
            if key in texts:
                counts[name, sentence.source] += 1
    rows = [{"held-out set": name, "pool source": source, "pool sentences equal to a held-out one": counts[name, source]}
            for name in keys for source in sorted(sources)]
    return pd.DataFrame(rows, columns=["held-out set", "pool source", "pool sentences equal to a held-out one"])


def exclude_held_out(pool: Sequence[Sentence], held_out: Mapping[str, Iterable[str]],
                     ) -> tuple[list[Sentence], pd.DataFrame]:
    """Drop every pool sentence whose normalised text is in a held-out set.

    Returns the kept sentences and the audit: for each held-out set and pool source, the matching pool
    sentences ``before`` the filter, the sentences ``removed`` and what matches ``after`` (always 0; the
    chapters assert it on the page).
    """
    held_out = {name: list(texts) for name, texts in held_out.items()}
    excluded = {normalise_text(t) for texts in held_out.values() for t in texts}
    kept = [s for s in pool if normalise_text(s.text) not in excluded]
    removed = Counter(s.source for s in pool if normalise_text(s.text) in excluded)
    before = leakage_audit(pool, held_out).rename(columns={"pool sentences equal to a held-out one": "before"})
    after = leakage_audit(kept, held_out).rename(columns={"pool sentences equal to a held-out one": "after"})
    audit = before.merge(after, on=["held-out set", "pool source"], how="left").fillna({"after": 0})
    audit["after"] = audit["after"].astype(int)
    audit["removed from this source (any set)"] = audit["pool source"].map(removed).fillna(0).astype(int)
    return kept, audit
