"""Papers, citation graphs, and readers for the corpora the methods train on.

The types are deliberately plain so real readers (S2ORC, SPECTER, SciRepEval, SciCite) and the
synthetic generator (:mod:`sdr.synthetic`) produce the same objects.

One module per reason to change: :mod:`~sdr.corpus.papers` (``Paper``, ``Section``, ``Citation``,
``CitationGraph``, the intents), :mod:`~sdr.corpus.report` (``ReadReport``), :mod:`~sdr.corpus.sections`
(section-heading kinds), the readers of each layout — :mod:`~sdr.corpus.specter` (SPECTER's training data,
SciRepEval's triplets), :mod:`~sdr.corpus.s2orc`, :mod:`~sdr.corpus.citations` (SciCite, the S2 Graph API's
citations with intents) — and :mod:`~sdr.corpus.leakage` (the leakage audit). Every name is re-exported here,
so ``from sdr.corpus import Paper`` reads as before.
"""

from sdr.corpus.papers import ASPECTS, INTENTS, MISCELLANEOUS, Citation, CitationGraph, Paper, Section
from sdr.corpus.report import ReadReport
from sdr.corpus.sections import SECTION_KINDS, section_kind
from sdr.corpus.specter import (
    SPECTER_DIRECT, SPECTER_INDIRECT, TRIPLET_ROLES, SpecterTrainingData, read_scirepeval_triplets,
    read_specter_metadata, read_specter_training,
)
from sdr.corpus.s2orc import read_s2orc_metadata, read_s2orc_pdf_parses
from sdr.corpus.citations import S2_INTENTS, SCICITE_REQUIRED, read_s2_citations, read_scicite, scicite_graph
from sdr.corpus.leakage import ids_in_space, leakage_audit

__all__ = [
    "ASPECTS", "INTENTS", "MISCELLANEOUS", "Citation", "CitationGraph", "Paper", "Section",
    "ReadReport",
    "SECTION_KINDS", "section_kind",
    "SPECTER_DIRECT", "SPECTER_INDIRECT", "TRIPLET_ROLES", "SpecterTrainingData", "read_scirepeval_triplets",
    "read_specter_metadata", "read_specter_training",
    "read_s2orc_metadata", "read_s2orc_pdf_parses",
    "S2_INTENTS", "SCICITE_REQUIRED", "read_s2_citations", "read_scicite", "scicite_graph",
    "ids_in_space", "leakage_audit",
]
