"""FLeW (Dou et al., ``papers/002_…``): facet subgraphs, facet encoders and a tuned weighted sum.

The recipe, built from the shared modules:

1. **Weighted facet subgraphs** (eq. 2–3): for x ∈ {background, method, result}, G_x keeps the citation
   edges with intent x, weighted by |C_x(e)|, the number of the edge's citation contexts with intent x
   (:func:`facet_edges`; :func:`sdr.corpus.read_s2_citations` counts them per context).
2. **Subgraph embeddings and neighbourhood sampling** (§3.1.2): each G_x is embedded with
   PyTorch-BigGraph (:func:`sdr.graph.embed`: a weight w becomes w repeated edges, as FLeW does), and
   per-facet triplets come from the k-nearest-neighbour bands of those embeddings, for **one shared query
   list** (§4.1: "a query list of 216k papers"; :func:`query_list` reads it from FLeW's released triplets)
   and **10 triplets per query** (2.16 M / 216 K; :data:`FLEW_BANDS`). FLeW gives no k values; the book
   uses SciNCL's band sampler with its c's doubled and its k's scaled to the corpus
   (:func:`sdr.methods.scincl.scaled_bands`). A query without an edge in a facet's subgraph gets no triplet
   of that facet (its vector would be PBG's random init); :func:`facet_triplets` counts them.
3. **Textual splitting** (§3.2): triplet abstracts are cut to their facet with a :class:`sdr.facets.Splitter`
   (:func:`facet_papers`); a paper whose abstract has no sentence of the facet keeps its title only.
4. **Three facet encoders** (§3.3), each trained from the base model on its own facet's triplets with
   ``title [SEP] abstract[x]`` (triplet loss, L2, margin 1: :func:`sdr.methods.specter.train_on_triplets`).
   At inference each reads the whole ``title [SEP] abstract`` (§3.4).
5. **Weighted sum** (eq. 8): E = Σ W_x E_x with W on the simplex. FLeW grid-searches the two free weights
   per task on validation data; its step is not given, the book uses 0.1 (:func:`simplex_grid`; FLeW
   requires every weight > 0, so the default grid is the 36 interior points). :func:`tune_weights` refuses a
   split named like a test split. The rule per benchmark (:func:`scirepeval_task_weights`): MDCR on its
   ``val`` split; CSFCube on each fold's dev queries (:func:`csfcube_crossval`); a SciRepEval task with a
   train split (classification, regression) on a held-out share of that train split; a SciRepEval task
   with neither validation nor train data (proximity, search: SciRepEval's evaluation release holds only their
   test qrels; SciDocs' own release has validation qrels for its four proximity tasks, which the chapter does not
   read) takes the weights tuned on MDCR's validation split, the nearest ranking task with one. FLeW tuned every
   task on validation data; the page lists the difference (:mod:`.fidelity`). No rule reads a test split.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from sdr.corpus import CitationGraph, Paper
from sdr.facets import FACETS, Splitter
from sdr.methods.scincl import Bands

#: FLeW §4.1: 2.16 M triplets from a query list of 216 K papers, i.e. 10 triplets per query and facet.
TRIPLETS_PER_QUERY = 10
#: SciNCL's bands with every c doubled (c⁺ 5 → 10, c⁻hard 2 → 4, c⁻easy 3 → 6): 10 triplets a query, each with
#: its own positive (the page measures the released triplets' distinct positives per query beside ours).
FLEW_BANDS = Bands(k_pos=25, c_pos=10, k_hard=4000, c_hard=4, c_easy=6)
#: The book's bar for its CSAbstruct splitter (the stand-in for FLeW's LLM, §3.2), not a number of the paper: on the
#: released CSAbstruct test, the share of background/method/result sentences given their own facet, and the margin by
#: which it must beat the lexical baseline (the chapter and tests/test_flew.py check both).
SPLITTER_AGREEMENT_TARGET = 0.85
SPLITTER_BASELINE_MARGIN = 0.01

__all__ = ["FACETS", "FLEW_BANDS", "TRIPLETS_PER_QUERY", "SPLITTER_AGREEMENT_TARGET", "SPLITTER_BASELINE_MARGIN",
           "facet_edges", "subgraph_table", "embed_facet_subgraphs",
           "read_released_triplets", "query_list", "expect_triplets_per_query", "corpus_id_map", "facet_triplets",
           "facet_papers",
           "heldout_triplet_scores", "mdcr_papers",
           "simplex_grid", "combine", "tune_weights", "csfcube_per_query", "csfcube_crossval", "csfcube_systems",
           "seed_spread", "mdcr_scores", "mdcr_tune", "mdcr_fields", "scirepeval_documents", "scirepeval_task_weights", "scirepeval_weighted",
           "flew_columns", "released_facet_models", "TABLE1_COLUMNS", "FORMAT_COLUMNS"]


# ------------------------------------------------------------------------------------ structure
def facet_edges(graph: CitationGraph, facet: str) -> list[tuple[str, str, float]]:
    """The weighted edge list of G_x^W (eq. 3): ``(citing, cited, |C_x(e)|)`` for every edge with intent x.

    Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs from the citation graph."""
    if facet not in FACETS:
        raise ValueError(f"unknown facet {facet!r}; expected one of {FACETS}")
    return [(c.citing, c.cited, float(c.count(facet))) for c in graph if c.count(facet) > 0]


def subgraph_table(graph: CitationGraph) -> pd.DataFrame:
    """Per facet subgraph: edges, nodes with an edge, total weight, weight distribution, share of the graph.

    Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs from the citation graph."""
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


def facet_triplets(embeddings: Mapping, graph: CitationGraph, bands, queries: Sequence[str] | None = None,
                   seed: int = 0) -> tuple[dict, pd.DataFrame]:
    """``({facet: (triplets, report)}, coverage)``: SciNCL band sampling in each facet embedding for one shared
    query list (default: the papers with an edge in every facet subgraph).

    A query without an edge in a facet's subgraph gets no triplet of that facet (an isolated node's vector is
    only PBG's random init); ``coverage`` counts, per facet, the queries used and those left out so.

    Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs from the citation graph."""
    from sdr.methods import scincl

    with_edge = {facet: {p for e in facet_edges(graph, facet) for p in e[:2]} for facet in FACETS}
    if queries is None:
        queries = sorted(set.intersection(*with_edge.values()))
    queries = list(dict.fromkeys(map(str, queries)))
    result, rows = {}, []
    for facet in FACETS:
        usable = [q for q in queries if q in with_edge[facet]]
        result[facet] = scincl.sample_triplets(embeddings[facet], bands, query_ids=usable, seed=seed)
        triplets = result[facet][0]
        rows.append({"facet": facet, "queries in the list": len(queries), "queries with a facet edge": len(usable),
                     "left out (no edge in this subgraph)": len(queries) - len(usable), "triplets": len(triplets),
                     "triplets per query": len(triplets) / max(len({t.query for t in triplets}), 1)})
    return result, pd.DataFrame(rows).set_index("facet")


# ------------------------------------------------------------------------------------ released data
_TRIPLET_HEADER = ("query_paper_id", "positive_id", "negative_id")


def read_released_triplets(path: str | Path) -> list[tuple[str, str, str]]:
    """FLeW's released ``<facet>_training_triplet.csv``: ``(query, positive, negative)`` S2 corpus ids as
    strings, in file order. The header must be ``query_paper_id,positive_id,negative_id``; a row that is not
    three integer ids raises ``ValueError`` naming the file and line."""
    import csv

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: FLeW triplet file not found (sdr data fetch flew_triplets)")
    rows = []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != _TRIPLET_HEADER:
            raise ValueError(f"{path}:1: expected the header {','.join(_TRIPLET_HEADER)}, got {header!r}")
        for line_number, row in enumerate(reader, start=2):
            if not row:
                continue
            ids = [cell.strip() for cell in row]
            if len(ids) != 3 or not all(i.isdigit() for i in ids):
                raise ValueError(f"{path}:{line_number}: expected three S2 corpus ids "
                                 f"(query_paper_id,positive_id,negative_id), got {row!r}")
            rows.append(tuple(ids))
    if not rows:
        raise ValueError(f"{path}: no triplets after the header")
    return rows


def query_list(triplets_by_facet: Mapping[str, Sequence[tuple[str, str, str]]]) -> tuple[list[str], pd.DataFrame]:
    """FLeW's one query list (§4.1) from its released triplets: the queries in order of first appearance over
    the facets, and per facet its queries, triplets, triplets per query and distinct positives per query,
    plus how many queries of the list it lacks (0 when the three files share the list, as the paper says).

    Shown in: notebooks/flew.ipynb, 2. Weighted facet subgraphs from the citation graph."""
    queries: dict[str, None] = {}
    for facet in FACETS:
        for query, _, _ in triplets_by_facet[facet]:
            queries.setdefault(query, None)
    rows = []
    for facet in FACETS:
        rows_of = triplets_by_facet[facet]
        per_query = pd.Series([q for q, _, _ in rows_of]).value_counts()
        positives = pd.DataFrame(rows_of, columns=list(_TRIPLET_HEADER)).groupby("query_paper_id")["positive_id"].nunique()
        rows.append({"facet": facet, "queries": len(per_query), "triplets": len(rows_of),
                     "triplets per query (median)": float(per_query.median()),
                     "distinct positives per query (median)": float(positives.median()),
                     "queries of the list missing": len(queries) - len(per_query)})
    return list(queries), pd.DataFrame(rows).set_index("facet")


def expect_triplets_per_query(triplets: Sequence, facet: str, expected: int = TRIPLETS_PER_QUERY) -> None:
    """§4.1's 10 triplets per query and facet (2.16 M / 216 K), each with its own positive (:data:`FLEW_BANDS`:
    c⁺ = 10 positives in the band): every query that got triplets (``triplets``: :class:`sdr.samplers.Triplet`) has
    ``expected`` triplets and ``expected`` distinct positives. Raises :class:`ChapterCheckFailed` naming the facet
    and the queries that do not (the first five, with their counts)."""
    from sdr.book.chapter import ChapterCheckFailed

    counts = (pd.DataFrame([(t.query, t.positive) for t in triplets], columns=["query", "positive"])
              .groupby("query", sort=False)["positive"].agg(triplets="size", positives="nunique"))
    wrong = counts[(counts["triplets"] != expected) | (counts["positives"] != expected)]
    if not wrong.empty:
        shown = "; ".join(f"query {query}: {row.triplets} triplets, {row.positives} distinct positives"
                          for query, row in wrong.head(5).iterrows())
        raise ChapterCheckFailed(f"{facet}: {len(wrong)} of {len(counts)} queries do not have {expected} triplets with "
                                 f"{expected} distinct positives: {shown}")


def corpus_id_map(folder: str | Path) -> dict[str, str]:
    """``{S2 corpus id: paperId}`` from the ``papers.jsonl`` of a Semantic Scholar fetch (``/paper/batch``
    records with ``externalIds.CorpusId``); records without a corpus id are left out."""
    from sdr.jsonio import read_jsonl

    path = Path(folder) / "papers.jsonl"
    mapping = {}
    for _, record in read_jsonl(path, "a /paper/batch record {paperId, externalIds: {CorpusId}, …}", allow_empty=True):
        corpus_id = (record.get("externalIds") or {}).get("CorpusId")
        if corpus_id is not None and record.get("paperId"):
            mapping[str(corpus_id)] = str(record["paperId"])
    return mapping


# ------------------------------------------------------------------------------------ text
def facet_papers(papers: Mapping[str, Paper], splitter: Splitter, ids: Sequence[str] | None = None,
                 batch_size: int = 256) -> tuple[dict[str, dict[str, Paper]], dict]:
    """``{facet: {paper_id: Paper with abstract = abstract[x]}}`` for ``ids`` (default: all papers),
    and a report counting, per facet, papers left with an empty facet (their input is the title alone).

    Shown in: notebooks/flew.ipynb, 3. Three facet encoders."""
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


def heldout_triplet_scores(vectors: Mapping[str, np.ndarray], triplets: Sequence, margin: float = 1.0) -> dict:
    """How an encoder's ``vectors`` (``{paper id: vector}``) order triplets it did not train on: the mean triplet
    loss max(0, d(q,p) − d(q,n) + margin) with L2 distances (FLeW's objective, eq. 5) and the share of triplets
    with d(q,p) < d(q,n). The chapter embeds whole papers (``title [SEP] abstract``), as the facet encoders read
    them at inference (§3.4).

    Shown in: notebooks/flew.ipynb, 3. Three facet encoders."""
    if not triplets:
        raise ValueError("heldout_triplet_scores: no triplets")
    missing = sorted({pid for t in triplets for pid in (t.query, t.positive, t.negative)} - set(vectors))
    if missing:
        raise KeyError(f"heldout_triplet_scores: {len(missing)} papers of the triplets have no vector, e.g. {missing[:3]}")

    def distance(a, b):
        return float(np.linalg.norm(np.asarray(vectors[a], dtype=np.float64) - np.asarray(vectors[b], dtype=np.float64)))

    gaps = np.array([distance(t.query, t.positive) - distance(t.query, t.negative) for t in triplets])
    return {"triplet loss": float(np.maximum(gaps + margin, 0).mean()), "ordered correctly": float((gaps < 0).mean()),
            "triplets": len(triplets)}


# ------------------------------------------------------------------------------------ weights
def simplex_grid(step: float = 0.1, interior: bool = True) -> list[tuple[float, float, float]]:
    """Weights (W_bg, W_mt, W_rs) on the simplex with the given step; ``interior`` keeps FLeW's W > 0.

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks."""
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

    ``split`` names the data ``score`` reads; a test split is refused, since FLeW tunes on validation data.
    Ties go to the first grid point in :func:`simplex_grid` order, which starts at the lowest background weight
    and, within it, the lowest method weight: (0.1, 0.1, 0.8), the most result-heavy point of the step-0.1 grid."""
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
                     metric: str = "map", step: float = 0.1, return_per_query: bool = False) -> tuple:
    """FLeW's tuned sum on CSFCube with the official two-fold protocol.

    For each CSFCube facet and fold, the weights are chosen on that fold's dev queries
    (``evaluation_splits.json``) and the fold's test queries are scored with them; the test score is the
    mean over the two folds, as the official ``aggregate_metrics_crossval``. The ``all`` row pools the test
    queries of the three facets (``evaluation_splits.json``'s ``all`` folds), each query ranked with the weights
    chosen for its own facet and fold. Returns (scores per facet and ``all``, chosen weights per facet and fold,
    with the dev score of every grid point kept for a plot); with ``return_per_query`` also the metrics of every
    test query of the ``all`` folds under the weights it was scored with (``{"<pid>_<facet>": {metric: value}}``,
    the layout of ``csfcube.evaluate(..., return_per_query=True)["per_query"]``: their fold-grouped mean is the
    ``all`` row, so :func:`sdr.book.csfcube_per_query` reads them for the leaderboard's paired intervals).

    Shown in: notebooks/flew.ipynb, 5. CSFCube."""
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
    tested = {}
    if csfcube.AGGREGATE in splits:
        fold_scores = []
        for fold in ("fold1", "fold2"):
            test = list(splits[csfcube.AGGREGATE][f"{fold}_test"])  # keys "<pid>_<facet>"
            weights = [weights_of[(key.rsplit("_", 1)[1], fold)] for key in test]
            tested.update({q: dict(per_query[w][q]) for w, q in zip(weights, test)})
            fold_scores.append({m: np.mean([per_query[w][q][m] for w, q in zip(weights, test)])
                                for m in csfcube.METRICS})
        rows.append({"facet": csfcube.AGGREGATE,
                     **{m: float(np.mean([f[m] for f in fold_scores])) for m in csfcube.METRICS}})
    if return_per_query:
        return pd.DataFrame(rows).set_index("facet"), pd.DataFrame(chosen), tested
    return pd.DataFrame(rows).set_index("facet"), pd.DataFrame(chosen)


def csfcube_systems(data_dir: str | Path, vectors: Mapping[str, Mapping[str, np.ndarray]], names: Mapping[str, str],
                    sum_name: str = "FLeW", step: float = 0.1) -> tuple[dict[str, dict], pd.DataFrame]:
    """Each facet encoder ranked on CSFCube on its own, and their sum tuned per facet and fold on dev queries.

    ``names`` maps each facet to its encoder's system name, ``vectors`` each system name to ``{paper id: vector}``.
    Returns ``({system: result}, the sum's chosen weights)`` (:func:`csfcube_crossval`), every result in the layout
    of ``csfcube.evaluate(..., return_per_query=True)`` (``"test"``: metrics per facet and ``all``; ``"per_query"``:
    every test query's metrics, the sum's under the weights its facet and fold chose), so one reader
    (:func:`sdr.book.csfcube_metrics`, :func:`sdr.book.csfcube_per_query`) serves the encoders and the sum.

    Shown in: notebooks/flew.ipynb, 5. CSFCube."""
    from sdr.evaluate import csfcube

    if set(names) != set(FACETS):
        raise ValueError(f"csfcube_systems: names must map every facet {FACETS} to a system, got {sorted(names)}")
    results = {name: csfcube.evaluate(data_dir, embeddings=vectors[name], return_per_query=True)
               for name in names.values()}
    ids = sorted(vectors[names[FACETS[0]]])
    tuned, chosen, per_query = csfcube_crossval(
        data_dir, {facet: np.stack([vectors[names[facet]][i] for i in ids]) for facet in FACETS}, ids, step=step,
        return_per_query=True)
    results[sum_name] = {"test": {facet: dict(tuned.loc[facet]) for facet in tuned.index}, "per_query": per_query}
    return results, chosen


def seed_spread(rows: Sequence[Mapping], reference_queries: Mapping[str, float],
                query_groups: Sequence[Sequence[str]] | None = None, headline: str = "map_all",
                seed: int = 0) -> pd.DataFrame:
    """The page's view of leaderboard rows trained with several seeds (:func:`sdr.book.leaderboard_row` dicts with
    ``seed`` and ``per_query``): one line per method with its ``headline`` per seed, their mean and σ
    (:func:`sdr.stats.mean_sd`), and the difference from a reference scored on the same queries with its two-stage
    bootstrap 95 % interval (:func:`sdr.stats.seed_query_bootstrap`: training seeds, then queries, paired; as the
    Summary computes it).

    Shown in: notebooks/flew.ipynb, 5. CSFCube."""
    from sdr.stats import mean_sd, seed_query_bootstrap

    lines = {}
    for method in dict.fromkeys(row["method"] for row in rows):
        own = [row for row in rows if row["method"] == method]
        mean, sd, _ = mean_sd([row["metrics"][headline] for row in own])
        interval = seed_query_bootstrap([row["per_query"] for row in own], [reference_queries], query_groups,
                                        seed=seed)
        lines[method] = {**{f"seed {row['seed']}": row["metrics"][headline] for row in own}, "mean": mean, "σ": sd,
                         "Δ vs reference": interval["difference"], "95 % low": interval["low"],
                         "95 % high": interval["high"]}
    return pd.DataFrame(lines).T


# ------------------------------------------------------------------------------------ MDCR
def mdcr_scores(data_dir: str | Path, vectors: np.ndarray, ids: Sequence[str], split: str) -> dict:
    """MDCR metrics (``{"fields": …, "avg": …}``) of one embedding table on ``mdcr_<split>.json``."""
    from sdr.evaluate import mdcr

    return mdcr.evaluate(data_dir, embeddings=dict(zip(ids, vectors)), split=split)


def mdcr_tune(data_dir: str | Path, facet_vectors: Mapping[str, np.ndarray], ids: Sequence[str],
              metric: str = "map", step: float = 0.1) -> tuple[tuple, pd.DataFrame]:
    """Weights tuned on MDCR's validation split (``mdcr_val.json``; the test file is never opened).

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks."""
    return tune_weights(lambda w: mdcr_scores(data_dir, combine(facet_vectors, w), ids, "val")["avg"][metric],
                        split="mdcr val", grid=simplex_grid(step))


def mdcr_papers(data_dir: str | Path, splits: Sequence[str] = ("val", "test")) -> dict[str, Paper]:
    """Titles and abstracts of MDCR's queries and candidates from ``mdcr_<split>_data.jsonl`` (one paper a line;
    the id is ``paper_id``, ``id``, ``paperId`` or ``corpus_id``). A line with none of them, or a split that
    names a paper no data file holds, raises ``ValueError`` naming the file."""
    from sdr.evaluate import mdcr
    from sdr.jsonio import read_jsonl

    papers: dict[str, Paper] = {}
    for split in splits:
        path = Path(data_dir) / f"mdcr_{split}_data.jsonl"
        what = "one paper a line {paper_id, title, abstract}"
        for line_number, record in read_jsonl(path, what):
            key = next((k for k in ("paper_id", "id", "paperId", "corpus_id") if record.get(k) is not None), None)
            if key is None:
                raise ValueError(f"{path}:{line_number}: expected {what}, got keys {sorted(record)}")
            pid = str(record[key])
            papers[pid] = Paper(pid, str(record.get("title") or ""), str(record.get("abstract") or ""))
        benchmark = mdcr.read_benchmark(Path(data_dir) / f"mdcr_{split}.json")
        needed = {p for queries in benchmark.values() for q, lists in queries.items()
                  for p in (q, *(c for ids in lists.values() for c in ids))}
        absent = sorted(needed - set(papers))
        if absent:
            raise ValueError(f"{path}: {len(absent)} papers of mdcr_{split}.json have no title and abstract here, "
                             f"e.g. {absent[:3]}")
    return papers


def mdcr_fields(result: Mapping, metric: str = "map") -> dict[str, float]:
    """``metric`` (``map`` or ``recall_5``) per MAG field and the average ("Avg") of one :func:`mdcr_scores`
    result: one column of Table 2."""
    return {**{field: values[metric] for field, values in result["fields"].items()}, "Avg": result["avg"][metric]}


# ------------------------------------------------------------------------------------ SciRepEval
#: FLeW Table 1's 19 columns (``data/paper_tables/flew_table1.csv``) ← SciRepEval task names; the four SciDocs
#: proximity tasks make one column, "SciDocs PRX", whose metric is nDCG (the table's metric row).
TABLE1_COLUMNS = {
    "relish": ("RELISH",), "reviewer": ("Paper-Reviewer Matching",), "same_author": ("Same Author Detection",),
    "highinf_citation": ("Highly Influential Citations",),
    "scidocs_prx": ("SciDocs Cite", "SciDocs CoView", "SciDocs CoCite", "SciDocs CoRead"),
    "review_score": ("Peer Review Score",), "max_hindex": ("Max hIndex",), "tweet_mentions": ("Tweet Mentions",),
    "citation_count": ("Citation Count",), "pub_year": ("Publication Year",), "nfcorpus": ("NFCorpus",),
    "trec_covid": ("TREC-CoVID",), "search": ("Search",), "biomimicry": ("Biomimicry",), "drsm": ("DRSM",),
    "mesh": ("MeSH",), "fos": ("Fields of study",), "scidocs_mag": ("SciDocs MAG",), "scidocs_mesh": ("SciDocs MeSH",),
}
FORMAT_COLUMNS = {
    "prx_avg": ("relish", "reviewer", "same_author", "highinf_citation", "scidocs_prx"),
    "rgn_avg": ("review_score", "max_hindex", "tweet_mentions", "citation_count", "pub_year"),
    "qry_avg": ("nfcorpus", "trec_covid", "search"),
    "clf_avg": ("biomimicry", "drsm", "mesh", "fos", "scidocs_mag", "scidocs_mesh"),
}


def flew_columns(result: Mapping) -> dict[str, float]:
    """One SciRepEval result (:func:`sdr.evaluate.scirepeval.evaluate`) as FLeW Table 1's columns.

    Each column is its task's score (the mean of its registry metrics); "SciDocs PRX" is the mean nDCG of the
    SciDocs proximity tasks that ran. The format averages and ``total_avg`` (FLeW's "Total AVG" over 19
    columns) are given only when every one of their columns ran (NaN otherwise); ``columns averaged`` and
    ``avg over the columns present`` say what a partial run (a replica) covers instead.

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks."""
    from sdr.evaluate import scirepeval

    tasks = result["tasks"]
    row: dict[str, float] = {}
    for column, names in TABLE1_COLUMNS.items():
        present = [tasks[name] for name in names if name in tasks]
        if not present:
            row[column] = float("nan")
        elif column == "scidocs_prx":
            row[column] = float(np.mean([float(task["metrics"]["ndcg"]) for task in present]))
        else:
            row[column] = scirepeval.task_score(present[0])
    for average, columns in FORMAT_COLUMNS.items():
        values = [row[c] for c in columns]
        row[average] = float(np.mean(values)) if not np.isnan(values).any() else float("nan")
    values = np.array([row[c] for c in TABLE1_COLUMNS])
    present = values[~np.isnan(values)]
    row["total_avg"] = float(values.mean()) if len(present) == len(values) else float("nan")
    row["columns averaged"] = int(len(present))
    row["avg over the columns present"] = float(present.mean()) if len(present) else float("nan")
    return row


def scirepeval_documents(data_dir: str | Path, tasks_config: str | Path) -> tuple[dict[str, Paper], dict]:
    """Every document the registry's tasks embed (papers and search queries), as :class:`Paper` by ``doc_id``
    (a query is a paper with its text as title and no abstract, as SciRepEval's ``IRDataset``). Tasks whose
    metadata is not under ``data_dir`` are skipped and named in the report."""
    from sdr.evaluate import scirepeval

    documents: dict[str, Paper] = {}
    skipped = {}
    for task in scirepeval.read_registry(tasks_config):
        try:
            rows = scirepeval.task_documents(data_dir, task)
        except FileNotFoundError as error:
            skipped[task.name] = str(error)
            continue
        for row in rows:
            documents.setdefault(row["doc_id"], Paper(row["doc_id"], str(row.get("title") or ""),
                                                      str(row.get("abstract") or "")))
    return documents, {"documents": len(documents), "tasks without metadata": skipped}


def _holdout(labels: np.ndarray, share: float, seed: int, stratify: bool) -> tuple[np.ndarray, np.ndarray]:
    """Indices (fit, validation) of one seeded split of a train split; stratified when each class allows it."""
    from sklearn.model_selection import train_test_split

    index = np.arange(len(labels))
    classes, counts = np.unique(labels, return_counts=True)
    # stratified only when every class has two members and the held-out share can hold one of each
    strata = labels if stratify and counts.min() >= 2 and int(np.ceil(share * len(labels))) >= len(classes) else None
    return train_test_split(index, test_size=share, random_state=seed, stratify=strata)


def scirepeval_task_weights(data_dir: str | Path, tasks_config: str | Path,
                            facet_vectors: Mapping[str, Mapping[str, np.ndarray]], ranking_weights: Sequence[float],
                            step: float = 0.1, holdout: float = 0.2, seed: int = 0,
                            tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """Per SciRepEval task, the weights of FLeW's sum, chosen without reading any test split.

    * A task with a train split (classification, regression): the official protocol (the task's SVM with its
      C grid searched by 3-fold CV, :mod:`sdr.evaluate.scirepeval`) is fitted on ``1 - holdout`` of the train
      split and scored on the held-out rest (stratified for single-label classes), for every grid point.
    * A ranking task (proximity, search) has only test qrels in ``allenai/scirepeval_test`` (SciDocs' four
      proximity tasks have validation qrels in SciDocs' own release, not read here): it takes ``ranking_weights``
      (the chapter passes the weights tuned on MDCR's validation split).

    ``facet_vectors`` is ``{facet: {doc_id: vector}}``. Returns one row per task with data: ``task``, ``type``,
    ``rule``, the three weights, ``validation score`` (NaN for ranking tasks), ``validation papers`` and
    ``train papers without a vector`` (left out, counted).
    Only ``train`` splits are opened here (``split_path(…, "train")``).

    Shown in: notebooks/flew.ipynb, 4. Every encoder on the benchmarks."""
    from sdr.evaluate import scirepeval
    from sdr.evaluate.embeddings import MissingEmbeddings
    from sdr.evaluate.scirepeval import _fit_predict_classifier, _fit_predict_regressor, _metric

    grid = simplex_grid(step)
    registry = scirepeval.read_registry(tasks_config)
    if tasks is not None:
        registry = [task for task in registry if task.name in set(tasks)]
    rows = []
    for task in registry:
        folder = scirepeval.dataset_dir(data_dir, task.data["test"])
        if task.type in ("proximity", "adhoc_search"):
            if scirepeval.split_path(folder, "test") is None:
                continue
            rows.append({"task": task.name, "type": task.type,
                         "rule": "no validation or train split: the weights tuned on MDCR val",
                         **dict(zip(FACETS, map(float, ranking_weights))), "validation score": float("nan"),
                         "validation papers": 0, "train papers without a vector": 0})
            continue
        train_path = scirepeval.split_path(folder, "train")
        if train_path is None:
            continue
        regression = task.type == "regression"
        labelled = scirepeval.read_labelled(train_path, task.multi_label)
        present = set(MissingEmbeddings("scirepeval tuning").check([p for p, _ in labelled], facet_vectors[FACETS[0]]))
        kept = [(pid, label) for pid, label in labelled if pid in present]
        labels = np.array([label for _, label in kept], dtype=np.float64 if regression else None)
        stratify = task.type == "classification" and not task.multi_label
        fit, validation = _holdout(labels if stratify else np.zeros(len(kept)), holdout, seed, stratify)
        matrices = {f: np.stack([facet_vectors[f][pid] for pid, _ in kept]) for f in FACETS}

        def score(weights, fit=fit, validation=validation, matrices=matrices, labels=labels, task=task):
            x = combine(matrices, weights).astype(np.float64)
            if task.type == "regression":
                predicted = _fit_predict_regressor(x[fit], labels[fit], x[validation])
            else:
                predicted = _fit_predict_classifier(x[fit], labels[fit], x[validation], task.multi_label)
            return float(np.mean([_metric(m, labels[validation], predicted) for m in task.metrics]))

        weights, table = tune_weights(score, split=f"scirepeval {task.name} train (held-out {holdout:.0%})", grid=grid)
        rows.append({"task": task.name, "type": task.type,
                     "rule": f"held-out {holdout:.0%} of the train split",
                     **dict(zip(FACETS, weights)), "validation score": float(table["score"].max()),
                     "validation papers": int(len(validation)), "train papers without a vector": len(labelled) - len(kept)})
    return pd.DataFrame(rows)


def scirepeval_weighted(data_dir: str | Path, tasks_config: str | Path,
                        facet_vectors: Mapping[str, Mapping[str, np.ndarray]], weights: pd.DataFrame,
                        few_shot: bool = False, progress: bool = False) -> dict:
    """SciRepEval with FLeW's sum, each task with its own weights (a :func:`scirepeval_task_weights` table):
    one :func:`sdr.evaluate.scirepeval.evaluate` per distinct weight triple, merged into one result."""
    from sdr.evaluate import scirepeval

    ids = sorted(set.intersection(*(set(v) for v in facet_vectors.values())))
    merged: dict = {"tasks": {}, "skipped_tasks": {}, "missing_embeddings": {"count": 0, "examples": []}}
    for triple, group in weights.groupby(list(FACETS), sort=False):
        stacked = {f: np.stack([facet_vectors[f][i] for i in ids]) for f in FACETS}
        embeddings = dict(zip(ids, combine(stacked, triple)))
        result = scirepeval.evaluate(data_dir, embeddings, tasks_config=tasks_config, tasks=list(group["task"]),
                                     few_shot=few_shot, progress=progress)
        merged["tasks"].update(result["tasks"])
        merged["skipped_tasks"].update(result["skipped_tasks"])
        merged["missing_embeddings"]["count"] += result["missing_embeddings"]["count"]
    merged["aggregates"] = scirepeval.aggregates(merged["tasks"], scirepeval.read_registry(tasks_config))
    return merged


# ------------------------------------------------------------------------------------ released encoders
_FACET_FOLDER_NAMES = {"background": ("background", "bg"), "method": ("method", "mt"), "result": ("result", "rs")}


def released_facet_models(name_or_folder: str | Path) -> dict[str, Path]:
    """``{facet: model folder}`` of a released FLeW checkpoint holding its three facet encoders: a local folder,
    or a Hugging Face name already in the local cache (a ``paper`` run fetched it before starting).

    FLeW's model repositories (``Miracle-dz/FLeW-split``, ``Miracle-dz/FLeW-full``) hold three encoders; their
    file layout could not be checked from here, so this accepts one sub-folder per facet whose name contains
    ``background``/``bg``, ``method``/``mt`` or ``result``/``rs`` and which has a ``config.json``. Anything
    else raises ``ValueError`` naming the folder and what it holds; the chapter calls this before training."""
    folder = Path(name_or_folder)
    if not folder.is_dir():
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(str(name_or_folder), local_files_only=True,
                                        allow_patterns=["*.json", "*.txt", "*.safetensors", "*.model",
                                                        "pytorch_model.bin"]))
    # shallowest first, so a facet folder's own sub-folders (e.g. sentence-transformers' 1_Pooling) are skipped
    candidates = sorted((d for d in folder.rglob("config.json") if d.parent != folder),
                        key=lambda d: (len(d.relative_to(folder).parts), d.as_posix()))
    found: dict[str, Path] = {}
    for config in candidates:
        if any(chosen in config.parents for chosen in found.values()):
            continue
        name = config.parent.relative_to(folder).as_posix().lower()
        parts = set(name.replace("-", "_").replace("/", "_").split("_"))
        for facet, keys in _FACET_FOLDER_NAMES.items():
            if facet in name or parts & set(keys):
                if facet in found and found[facet] != config.parent:
                    raise ValueError(f"{folder}: two folders look like the {facet} encoder: {found[facet]} and "
                                     f"{config.parent}")
                found[facet] = config.parent
    if set(found) != set(FACETS):
        held = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())[:20]
        raise ValueError(f"{folder}: expected one sub-folder per facet encoder (names with background/bg, "
                         f"method/mt, result/rs, each with config.json); found {sorted(found)} among {held}")
    return found
