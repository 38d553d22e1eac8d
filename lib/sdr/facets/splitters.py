"""The :class:`Splitter` interface (abstracts → background / method / result) and its two routes: the
classifier (:class:`ClassifierSplitter`, the default) and an LLM prompted with FLeW's instruction
(:class:`PromptSplitter`, :data:`FLEW_PROMPT`). A new route is a new subclass here.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from sdr.facets.classifier import SentenceClassifier
from sdr.facets.labels import FACETS, SentenceSegmenter, join_facets, label_mapping, to_facets


FLEW_PROMPT = """Instruction: Here is the abstract of a scientific paper. Your task is to split the text into three \
distinct sections based on the content of sentences:
1.Background: The context or previous knowledge related to the topic.
2.Method: The methodology, approach, or contribution proposed in the paper.
3.Result: The findings, outcomes, or conclusions derived from experiments or analysis.
Please return the output in a structured JSON format, as shown below:
{"background":"xxx","method":"xxx","result":"xxx"}
Ensure that the original text remains intact in each section and that every sentence is categorized appropriately.
Input: "{abstract}"
Output:"""
"""FLeW's instruction (§3.2), verbatim up to line breaks; ``{abstract}`` is replaced by the abstract."""


class Splitter(ABC):
    """Splits abstracts into FLeW's facets. Subclasses say which facet each sentence belongs to."""

    def __init__(self, segmenter: SentenceSegmenter | None = None):
        self._segmenter = segmenter

    @property
    def segmenter(self) -> SentenceSegmenter:
        if self._segmenter is None:
            self._segmenter = SentenceSegmenter()
        return self._segmenter

    @abstractmethod
    def sentence_facets(self, abstracts: Sequence[Sequence[str]]) -> list[list[str]]:
        """Per abstract (a list of sentences), one facet of :data:`FACETS` per sentence."""

    def split_many(self, abstracts: Sequence[str]) -> list[dict[str, str]]:
        """Each abstract → ``{"background", "method", "result"}``: its sentences, verbatim, joined by
        single spaces in their original order (an empty string where a facet has no sentence)."""
        sentences = [self.segmenter.split(text) for text in abstracts]
        facets = self.sentence_facets(sentences)
        return [join_facets(s, f) for s, f in zip(sentences, facets)]

    def split(self, abstract: str) -> dict[str, str]:
        return self.split_many([abstract])[0]


class ClassifierSplitter(Splitter):
    """The default splitter: :class:`SentenceClassifier` labels mapped with :func:`to_facets`."""

    def __init__(self, classifier: SentenceClassifier, objective_to: str = "method",
                 segmenter: SentenceSegmenter | None = None):
        super().__init__(segmenter)
        label_mapping(objective_to)  # validates
        self.classifier = classifier
        self.objective_to = objective_to

    def sentence_facets(self, abstracts: Sequence[Sequence[str]]) -> list[list[str]]:
        return [to_facets(labels, self.objective_to) for labels in self.classifier.predict(abstracts)]


class PromptSplitter(Splitter):
    """FLeW's LLM route: :data:`FLEW_PROMPT` through ``generate(prompt) -> str`` (any LLM client).

    The answer must be the JSON object FLeW asks for; each sentence of the abstract is assigned to the
    facet whose text contains it. A sentence found in no facet is an error naming the abstract (an LLM
    that rewrites text breaks FLeW's "original text remains intact").
    """

    def __init__(self, generate: Callable[[str], str], segmenter: SentenceSegmenter | None = None):
        super().__init__(segmenter)
        self.generate = generate

    @staticmethod
    def prompt(abstract: str) -> str:
        return FLEW_PROMPT.replace("{abstract}", abstract)

    def sentence_facets(self, abstracts: Sequence[Sequence[str]]) -> list[list[str]]:
        results = []
        for k, sentences in enumerate(abstracts):
            answer = self.generate(self.prompt(" ".join(sentences)))
            start, end = answer.find("{"), answer.rfind("}")
            try:
                parsed = json.loads(answer[start:end + 1]) if start >= 0 else None
            except json.JSONDecodeError:
                parsed = None
            if not isinstance(parsed, dict) or not all(isinstance(parsed.get(f, ""), str) for f in FACETS):
                raise ValueError(f"abstract {k}: the LLM answer is not the JSON object "
                                 f'{{"background", "method", "result"}} FLeW asks for: {answer[:200]!r}')
            facets = []
            for sentence in sentences:
                owner = next((f for f in FACETS if sentence in parsed.get(f, "")), None)
                if owner is None:
                    raise ValueError(f"abstract {k}: the LLM answer lost or rewrote the sentence {sentence[:80]!r}")
                facets.append(owner)
            results.append(facets)
        return results
