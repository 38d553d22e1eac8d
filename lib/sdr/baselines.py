"""Lexical baselines for re-ranking candidate pools: BM25 (bm25s) and TF-IDF (scikit-learn).

Both score a query text against every candidate text of a collection; :func:`rank_pools` then sorts
each query's own pool by descending score (ties keep the pool order). The collection statistics
(BM25's IDF and document lengths, TF-IDF's IDF and vocabulary) come from the candidate texts, so a
query is scored like an unseen document — the usual query-by-example set-up.

* BM25: ``bm25s.BM25`` with its defaults (Lucene variant, k1 = 1.5, b = 0.75), the bm25s tokenizer
  (lower-cased ``\\w\\w+`` tokens, English stop words removed, no stemming).
* TF-IDF: ``TfidfVectorizer(stop_words="english", sublinear_tf=True)`` with L2-normalised rows;
  the score is the cosine similarity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

METHODS = ("bm25", "tfidf")


def bm25_scores(
    query_texts: Sequence[str], candidate_texts: Sequence[str], k1: float = 1.5, b: float = 0.75,
    progress: bool = False,
) -> np.ndarray:
    """BM25 scores ``[n_queries, n_candidates]`` over the candidate collection (bm25s, Lucene variant)."""
    import bm25s

    corpus_tokens = bm25s.tokenize(list(candidate_texts), stopwords="en", show_progress=False)
    retriever = bm25s.BM25(k1=k1, b=b)
    retriever.index(corpus_tokens, show_progress=False)
    query_tokens = bm25s.tokenize(list(query_texts), stopwords="en", show_progress=False, return_ids=False)
    scores = np.zeros((len(query_texts), len(candidate_texts)), dtype=np.float64)
    for row, tokens in enumerate(tqdm(query_tokens, desc="bm25 queries", disable=not progress)):
        if tokens:
            scores[row] = retriever.get_scores(tokens)
    return scores


def tfidf_scores(query_texts: Sequence[str], candidate_texts: Sequence[str], progress: bool = False) -> np.ndarray:
    """Cosine similarities of TF-IDF vectors fitted on the candidate collection."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True)
    candidates = vectorizer.fit_transform(list(candidate_texts))
    queries = vectorizer.transform(list(query_texts))
    return np.asarray((queries @ candidates.T).toarray(), dtype=np.float64)


SCORERS = {"bm25": bm25_scores, "tfidf": tfidf_scores}


def rank_pools(
    query_texts: Mapping[str, str],
    candidate_texts: Mapping[str, str],
    pools: Mapping[str, Sequence[str]],
    method: str = "bm25",
    progress: bool = True,
) -> dict[str, list[tuple[str, float]]]:
    """Rank each query's pool by a lexical score: ``{query: [(cand_id, score), ...]}``, best first.

    ``query_texts`` and ``pools`` share their keys (e.g. CSFCube query pids, or ``<pid>_<facet>``);
    every pooled candidate must have a text in ``candidate_texts`` (a ``ValueError`` names the
    missing ones). The collection is the union of all pools.
    """
    if method not in SCORERS:
        raise ValueError(f"unknown baseline {method!r}; expected one of {METHODS}")
    lacking_queries = [q for q in pools if q not in query_texts]
    if lacking_queries:
        raise ValueError(f"{method}: {len(lacking_queries)} queries have no text, e.g. {lacking_queries[:5]}")
    collection = list(dict.fromkeys(c for pool in pools.values() for c in pool))
    lacking = [c for c in collection if c not in candidate_texts]
    if lacking:
        raise ValueError(f"{method}: {len(lacking)} pooled candidates have no text, e.g. {lacking[:5]}")
    position = {c: i for i, c in enumerate(collection)}
    queries = list(pools)
    scores = SCORERS[method]([query_texts[q] for q in queries], [candidate_texts[c] for c in collection],
                             progress=progress)
    ranked = {}
    for row, query in enumerate(queries):
        pool = list(pools[query])
        pool_scores = scores[row, [position[c] for c in pool]]
        order = np.argsort(-pool_scores, kind="stable")
        ranked[query] = [(pool[i], float(pool_scores[i])) for i in order]
    return ranked


def tfidf_vectors(texts: Sequence[str]) -> np.ndarray:
    """Dense L2-normalised TF-IDF vectors fitted on ``texts`` (a lexical baseline for embedding-based
    evaluators such as sentence and paragraph retrieval)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True)
    return np.asarray(vectorizer.fit_transform(list(texts)).toarray(), dtype=np.float32)
