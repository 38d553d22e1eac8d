"""Seeded synthetic data: a corpus with planted structure and benchmark replicas built from it.

``make_corpus`` (this package) generates papers, a citation graph with intents, co-views and
co-reads; the replica modules (``scidocs``, ``mdcr``, ``scirepeval``, ``csfcube``, ``sentences``,
``paragraphs``) write benchmark files in the official layouts from such a corpus.
"""

from __future__ import annotations

from sdr.synthetic.corpus import (
    ABSTRACT_ROLES,
    ROLE_TO_FACET,
    SyntheticConfig,
    SyntheticCorpus,
    make_corpus,
    write_phrase_tsv,
)
from sdr.synthetic.templates import RHETORICAL_FUNCTIONS, RhetoricalFunction, rhetorical_group
from sdr.synthetic.vocabulary import FIELDS, MESH_LABELS

__all__ = [
    "ABSTRACT_ROLES",
    "FIELDS",
    "MESH_LABELS",
    "RHETORICAL_FUNCTIONS",
    "ROLE_TO_FACET",
    "RhetoricalFunction",
    "SyntheticConfig",
    "SyntheticCorpus",
    "make_corpus",
    "rhetorical_group",
    "write_phrase_tsv",
]
