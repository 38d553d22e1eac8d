"""How well sentence labels match CSAbstruct's gold labels, as FLeW's facets (:func:`facet_scores`), and the
lexical baseline they are compared with (:func:`lexical_baseline`). It changes with the evaluation only.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sdr.facets.classifier import _position_features
from sdr.facets.labels import FACETS, to_facets


def facet_scores(predicted: Sequence[Sequence[str]], gold: Sequence[Sequence[str]],
                 objective_to: str = "method") -> dict:
    """How well predicted CSAbstruct labels split abstracts into FLeW's facets.

    Both sides are mapped with :func:`to_facets`. The headline ``agreement`` is the share of the gold
    background / method / result sentences whose predicted facet is their own (gold ``objective`` and
    ``other`` sentences are left out, since their facet is a choice, not a label). Per-facet
    precision / recall / F1 are over the same sentences; ``accuracy_5`` is plain 5-label accuracy over all.
    """
    from sklearn.metrics import precision_recall_fscore_support

    kept_pred, kept_gold, exact, total = [], [], 0, 0
    for p, g in zip(predicted, gold, strict=True):
        if len(p) != len(g):
            raise ValueError(f"{len(p)} predicted labels for {len(g)} gold labels")
        p_facets = to_facets(p, objective_to)
        exact += sum(a == b for a, b in zip(p, g))
        total += len(g)
        for pf, gl in zip(p_facets, g):
            if gl in FACETS:
                kept_pred.append(pf)
                kept_gold.append(gl)
    if not kept_gold:
        raise ValueError("facet_scores: no gold background/method/result sentence")
    precision, recall, f1, support = precision_recall_fscore_support(kept_gold, kept_pred, labels=list(FACETS),
                                                                     zero_division=0)
    return {
        "agreement": float(np.mean([a == b for a, b in zip(kept_pred, kept_gold)])),
        "accuracy_5": exact / total if total else float("nan"),
        "sentences_scored": len(kept_gold),
        "per_facet": {facet: {"precision": float(precision[i]), "recall": float(recall[i]), "f1": float(f1[i]),
                              "support": int(support[i])} for i, facet in enumerate(FACETS)},
    }


def lexical_baseline(train_abstracts, train_labels, test_abstracts, C: float = 4.0) -> list[list[str]]:
    """The baseline the splitter must beat: TF-IDF 1–2-grams + sentence position, one logistic
    regression, each sentence on its own (no neighbours, no label sequence)."""
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    sentences = [s for a in train_abstracts for s in a]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2 if len(sentences) >= 1000 else 1,
                                 sublinear_tf=True).fit(sentences)

    def features(abstracts):
        flat = [s for a in abstracts for s in a]
        position = np.vstack([_position_features(len(a)) for a in abstracts if len(a)])
        return sp.hstack([vectorizer.transform(flat), sp.csr_matrix(position)]).tocsr()

    model = LogisticRegression(C=C, max_iter=2000).fit(features(train_abstracts),
                                                       [y for ys in train_labels for y in ys])
    flat = list(model.predict(features(test_abstracts)))
    out, start = [], 0
    for a in test_abstracts:
        out.append([str(x) for x in flat[start:start + len(a)]])
        start += len(a)
    return out
