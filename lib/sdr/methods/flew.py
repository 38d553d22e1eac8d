"""FLeW (Dou et al., ``papers/002_…``): facet subgraphs, facet encoders and a tuned weighted sum.

The recipe, built from the shared modules:

1. **Weighted facet subgraphs** (eq. 2–3): for x ∈ {background, method, result}, G_x keeps the citation
   edges with intent x, weighted by the number of citation contexts with that intent
   (:func:`facet_edges`; :class:`sdr.corpus.CitationGraph` holds the counts).
2. **Subgraph embeddings and neighbourhood sampling** (§3.1.2): each G_x is embedded with
   PyTorch-BigGraph (:func:`sdr.graph.embed`: a weight w becomes w repeated edges, as FLeW does), and
   per-facet triplets come from the k-nearest-neighbour bands of those embeddings. FLeW gives no k
   values; the book uses SciNCL's band sampler with its defaults scaled to the corpus
   (:func:`sdr.methods.scincl.scaled_bands`). Queries are the papers with at least one facet edge.
3. **Textual splitting** (§3.2): triplet abstracts are cut to their facet with a :class:`sdr.facets.Splitter`
   (:func:`facet_papers`); a paper whose abstract has no sentence of the facet keeps its title only.
4. **Three facet encoders** (§3.3), each trained from the base model on its own facet's triplets with
   ``title [SEP] abstract[x]`` (triplet loss, L2, margin 1: :func:`sdr.methods.specter.train_on_triplets`).
   At inference each reads the whole ``title [SEP] abstract`` (§3.4).
5. **Weighted sum** (eq. 8): E = Σ W_x E_x with W on the simplex. FLeW grid-searches the two free weights
   per task on validation data; its step is not given, the book uses 0.1 (:func:`simplex_grid`; FLeW
   requires every weight > 0, so the default grid is the 36 interior points).
   :func:`tune_weights` refuses a split named like a test split, and the CSFCube protocol
   (:func:`csfcube_crossval`) tunes on each fold's dev queries and scores that fold's test queries only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from sdr.corpus import CitationGraph, Paper
from sdr.facets import FACETS, Splitter

__all__ = ["FACETS", "facet_edges", "subgraph_table", "embed_facet_subgraphs", "facet_triplets", "facet_papers",
           "simplex_grid", "combine", "tune_weights", "csfcube_per_query", "csfcube_crossval"]


# ------------------------------------------------------------------------------------ structure
def facet_edges(graph: CitationGraph, facet: str) -> list[tuple[str, str, float]]:
    """The weighted edge list of G_x^W (eq. 3): ``(citing, cited, |C_x(e)|)`` for every edge with intent x."""
    if facet not in FACETS:
        raise ValueError(f"unknown facet {facet!r}; expected one of {FACETS}")
    return [(c.citing, c.cited, float(c.count(facet))) for c in graph if c.count(facet) > 0]


def subgraph_table(graph: CitationGraph) -> pd.DataFrame:
    """Per facet subgraph: edges, nodes with an edge, total weight, weight distribution, share of the graph."""
    rows = {}
    for facet in FACETS:
        edges = facet_edges(graph, facet)
        weights = np.array([w for _, _, w in edges]) if edges else np.zeros(0)
        rows[facet] = {
            "edges": len(edges),
            "share of citation edges": len(edges) / max(len(graph), 1),
            "nodes with an edge": len({p for e in edges for p in e[:2]}),
            "total weight (repeated edges)": int(weights.sum()),
            "edges with weight > 1": int((weights > 1).sum()),
            "max weight": int(weights.max()) if len(weights) else 0,
        }
    return pd.DataFrame(rows).T


def embed_facet_subgraphs(graph: CitationGraph, config, nodes: Sequence[str] = ()) -> dict:
    """``{facet: sdr.graph.GraphEmbedding}`` of each weighted facet subgraph (PBG, weights as repeats)."""
    from sdr import graph as graph_module

    return {facet: graph_module.embed(facet_edges(graph, facet), config, nodes=list(nodes)) for facet in FACETS}


def facet_triplets(embeddings: Mapping, graph: CitationGraph, bands, seed: int = 0) -> dict:
    """``{facet: (triplets, report)}``: SciNCL band sampling in each facet embedding; queries are the papers
    with at least one edge in that facet's subgraph (an isolated node's vector is only its random init)."""
    from sdr.methods import scincl

    result = {}
    for facet in FACETS:
        queries = sorted({p for e in facet_edges(graph, facet) for p in e[:2]})
        result[facet] = scincl.sample_triplets(embeddings[facet], bands, query_ids=queries, seed=seed)
    return result


# ------------------------------------------------------------------------------------ text
def facet_papers(papers: Mapping[str, Paper], splitter: Splitter, ids: Sequence[str] | None = None,
                 batch_size: int = 256) -> tuple[dict[str, dict[str, Paper]], dict]:
    """``{facet: {paper_id: Paper with abstract = abstract[x]}}`` for ``ids`` (default: all papers),
    and a report counting, per facet, papers left with an empty facet (their input is the title alone)."""
    ids = sorted(papers) if ids is None else list(ids)
    split = []
    for start in range(0, len(ids), batch_size):
        split += splitter.split_many([papers[pid].abstract for pid in ids[start:start + batch_size]])
    out = {facet: {} for facet in FACETS}
    empty = dict.fromkeys(FACETS, 0)
    for pid, parts in zip(ids, split):
        for facet in FACETS:
            out[facet][pid] = replace(papers[pid], abstract=parts[facet])
            empty[facet] += not parts[facet]
    return out, {"papers": len(ids), "empty facet (title only)": empty}


# ------------------------------------------------------------------------------------ weights
def simplex_grid(step: float = 0.1, interior: bool = True) -> list[tuple[float, float, float]]:
    """Weights (W_bg, W_mt, W_rs) on the simplex with the given step; ``interior`` keeps FLeW's W > 0."""
    n = int(round(1 / step))
    if n < 1 or abs(n * step - 1) > 1e-9:
        raise ValueError(f"simplex_grid: step must divide 1, got {step}")
    low = 1 if interior else 0
    grid = []
    for i in range(low, n + 1):
        for j in range(low, n + 1 - i):
            k = n - i - j
            if k >= low:
                grid.append((round(i / n, 10), round(j / n, 10), round(k / n, 10)))
    if not grid:
        raise ValueError(f"simplex_grid: no interior point with step {step}")
    return grid


def combine(vectors: Mapping[str, np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """E = Σ W_x E_x (eq. 8) over facets in :data:`FACETS` order."""
    if len(weights) != len(FACETS):
        raise ValueError(f"expected {len(FACETS)} weights, got {weights}")
    return sum(w * np.asarray(vectors[f], dtype=np.float32) for w, f in zip(weights, FACETS))


def tune_weights(score: Callable[[tuple[float, float, float]], float], split: str,
                 grid: Sequence[tuple[float, float, float]] | None = None) -> tuple[tuple, pd.DataFrame]:
    """Grid search: the weights with the highest ``score(weights)`` (higher is better) and every point's score.

    ``split`` names the data ``score`` reads; a test split is refused, since FLeW tunes on validation data
    (ties go to the first grid point, i.e. the most background-heavy)."""
    if "test" in split.lower():
        raise ValueError(f"tune_weights: refusing to tune on {split!r}; weights are tuned on validation data only")
    grid = list(grid or simplex_grid())
    table = pd.DataFrame([{"background": w[0], "method": w[1], "result": w[2], "score": float(score(w))}
                          for w in grid])
    best = table.loc[table["score"].idxmax()]
    return (float(best["background"]), float(best["method"]), float(best["result"])), table


# ------------------------------------------------------------------------------------ CSFCube
def csfcube_per_query(data_dir: str | Path, vectors: Mapping[str, np.ndarray], ids: Sequence[str],
                      facets_to_rank: Sequence[str] = FACETS) -> dict[str, dict[str, float]]:
    """Per-query CSFCube metrics ``{"<pid>_<facet>": {metric: value}}`` of one embedding table."""
    from sdr.evaluate import csfcube

    table = dict(zip(ids, vectors))
    pools = {}
    for facet in facets_to_rank:
        annotations = csfcube.read_annotations(data_dir, facet)
        ranked = csfcube.rank_pools_by_embeddings(annotations, table, facet)
        pools[facet] = {q: [c for c, _ in pairs] for q, pairs in ranked.items()}
    annotations = {facet: csfcube.read_annotations(data_dir, facet) for facet in facets_to_rank}
    return csfcube.score_queries(pools, annotations)


def csfcube_crossval(data_dir: str | Path, facet_vectors: Mapping[str, np.ndarray], ids: Sequence[str],
                     metric: str = "map", step: float = 0.1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """FLeW's tuned sum on CSFCube with the official two-fold protocol.

    For each CSFCube facet and fold, the weights are chosen on that fold's dev queries
    (``evaluation_splits.json``) and the fold's test queries are scored with them; the test score is the
    mean over the two folds, as the official ``aggregate_metrics_crossval``. The ``all`` row pools the test
    queries of the three facets (``evaluation_splits.json``'s ``all`` folds), each query ranked with the weights
    chosen for its own facet and fold. Returns (scores per facet and ``all``, chosen weights per facet and fold,
    with the dev score of every grid point kept for a plot).
    """
    from sdr.evaluate import csfcube

    splits = csfcube.read_splits(data_dir)
    grid = simplex_grid(step)
    per_query = {w: csfcube_per_query(data_dir, combine(facet_vectors, w), ids) for w in grid}
    rows, chosen, weights_of = [], [], {}
    for facet in FACETS:
        fold_scores = []
        for fold in ("fold1", "fold2"):
            dev = list(splits[facet][f"{fold}_dev"])
            test = list(splits[facet][f"{fold}_test"])
            weights, table = tune_weights(lambda w: np.mean([per_query[w][q][metric] for q in dev]),
                                          split=f"csfcube {facet} {fold}_dev", grid=grid)
            weights_of[(facet, fold)] = weights
            fold_scores.append({m: np.mean([per_query[weights][q][m] for q in test]) for m in csfcube.METRICS})
            chosen.append({"facet": facet, "fold": fold, "background": weights[0], "method": weights[1],
                           "result": weights[2], f"dev {metric}": float(table["score"].max()),
                           "grid": table})
        rows.append({"facet": facet, **{m: float(np.mean([f[m] for f in fold_scores])) for m in csfcube.METRICS}})
    if csfcube.AGGREGATE in splits:
        fold_scores = []
        for fold in ("fold1", "fold2"):
            test = list(splits[csfcube.AGGREGATE][f"{fold}_test"])  # keys "<pid>_<facet>"
            weights = [weights_of[(key.rsplit("_", 1)[1], fold)] for key in test]
            fold_scores.append({m: np.mean([per_query[w][q][m] for w, q in zip(weights, test)])
                                for m in csfcube.METRICS})
        rows.append({"facet": csfcube.AGGREGATE,
                     **{m: float(np.mean([f[m] for f in fold_scores])) for m in csfcube.METRICS}})
    return pd.DataFrame(rows).set_index("facet"), pd.DataFrame(chosen)


# ------------------------------------------------------------------------------------ MDCR
def mdcr_scores(data_dir: str | Path, vectors: np.ndarray, ids: Sequence[str], split: str) -> dict:
    """MDCR metrics (``{"fields": …, "avg": …}``) of one embedding table on ``mdcr_<split>.json``."""
    from sdr.evaluate import mdcr

    return mdcr.evaluate(data_dir, embeddings=dict(zip(ids, vectors)), split=split)


def mdcr_tune(data_dir: str | Path, facet_vectors: Mapping[str, np.ndarray], ids: Sequence[str],
              metric: str = "map", step: float = 0.1) -> tuple[tuple, pd.DataFrame]:
    """Weights tuned on MDCR's validation split (``mdcr_val.json``; the test file is never opened)."""
    return tune_weights(lambda w: mdcr_scores(data_dir, combine(facet_vectors, w), ids, "val")["avg"][metric],
                        split="mdcr val", grid=simplex_grid(step))
