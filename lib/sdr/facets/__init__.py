"""Abstract → background / method / result: FLeW's textual splitting without an LLM.

FLeW (Dou et al., §3.2) splits every triplet abstract into three facets with an LLM (GPT-4o labels on 12k
papers, distilled into a LoRA-tuned Llama-3.1-8B) prompted with these definitions:

    1. Background: The context or previous knowledge related to the topic.
    2. Method: The methodology, approach, or contribution proposed in the paper.
    3. Result: The findings, outcomes, or conclusions derived from experiments or analysis.

No reader can run that offline, so the default :class:`Splitter` here is a sequential sentence classifier
trained on the real CSAbstruct train split (Cohan et al. 2019; 5 labels: background, objective, method,
result, other), whose labels are mapped onto FLeW's three facets:

* ``objective`` ("In this paper we propose …") is FLeW's "contribution proposed in the paper", so the
  default mapping sends it to **method**; ``objective_to="background"`` is the other reading (the
  objective as the paper's context). Both are scored in the FLeW chapter.
* ``other`` (copyright lines, URLs, "All rights reserved.") belongs to no facet, but FLeW's prompt wants
  every sentence categorised: it joins the facet of the sentence before it (the next one for a leading
  ``other``), so boilerplate never forms a facet of its own.

The classifier (:class:`SentenceClassifier`) is a two-stage stack: a logistic regression over TF-IDF
1–2-grams of the sentence and of its two neighbours plus its position in the abstract; then a second
logistic regression over the first stage's class probabilities of the sentence and of the three
sentences on each side (out-of-fold on the training split), which learns the label order of abstracts
(background → objective → method → result) the way a CRF's transitions would. It trains in about two
minutes on 2 CPU cores; ``sdr facets train`` trains it once and caches it (:func:`default_model_path`).

An LLM is one :class:`Splitter` away: :class:`PromptSplitter` sends FLeW's prompt (:data:`FLEW_PROMPT`) to
any ``generate(prompt) -> str`` callable and checks that the answer keeps every sentence verbatim.

CLI: ``sdr facets train [--data-dir CSABSTRUCT] [--out MODEL] [--force]`` and
``sdr facets split ABSTRACTS.jsonl --out SPLIT.jsonl [--model MODEL] [--skip-bad] [--force]`` (input lines
``{"paper_id", "title", "abstract"}``; output lines add ``background``, ``method``, ``result``). Models are
``.npz`` files of arrays and a JSON header (:meth:`SentenceClassifier.save`): loading one never runs code.

One module per reason to change: :mod:`~sdr.facets.labels` (facets, CSAbstruct labels, their mapping, the
segmenter), :mod:`~sdr.facets.classifier` (:class:`SentenceClassifier`, its file format, training and cache),
:mod:`~sdr.facets.scoring`, :mod:`~sdr.facets.splitters` (:class:`Splitter`, :class:`ClassifierSplitter`,
:class:`PromptSplitter`), :mod:`~sdr.facets.files` (abstracts JSONL in and out) and :mod:`~sdr.facets.cli`.
Every name is re-exported here, so ``facets.load_or_train()`` reads as before.
"""

from sdr.facets.labels import (
    CSABSTRUCT_LABELS, FACETS, OBJECTIVE_TARGETS, SentenceSegmenter, join_facets, label_mapping, to_facets,
)
from sdr.facets.classifier import (
    MODEL_FILE, MODEL_FORMAT, MODEL_VERSION, SentenceClassifier, default_model_path, load_or_train,
    read_csabstruct, train_classifier,
)
from sdr.facets.scoring import facet_scores, lexical_baseline
from sdr.facets.splitters import FLEW_PROMPT, ClassifierSplitter, PromptSplitter, Splitter
from sdr.facets.files import ABSTRACTS_EXPECTED, read_abstracts, split_file
from sdr.facets.cli import register

__all__ = [
    "CSABSTRUCT_LABELS", "FACETS", "OBJECTIVE_TARGETS", "SentenceSegmenter", "join_facets", "label_mapping",
    "to_facets",
    "MODEL_FILE", "MODEL_FORMAT", "MODEL_VERSION", "SentenceClassifier", "default_model_path", "load_or_train",
    "read_csabstruct", "train_classifier",
    "facet_scores", "lexical_baseline",
    "FLEW_PROMPT", "ClassifierSplitter", "PromptSplitter", "Splitter",
    "ABSTRACTS_EXPECTED", "read_abstracts", "split_file",
    "register",
]
