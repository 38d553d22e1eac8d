"""Citation-graph embeddings with PyTorch-BigGraph (PBG), link prediction, FAISS neighbour search.

SciNCL (Ostendorff et al., §3.4 and A.5) embeds the S2ORC citation graph with PBG and samples training
triplets from the k-nearest-neighbour bands of those embeddings; FLeW embeds weighted facet subgraphs
the same way. This package is that first step, for any edge list:

>>> from sdr import graph
>>> result = graph.embed([("a", "b"), ("b", "c"), ("c", "a", 3.0)], graph.GraphEmbeddingConfig(dimension=8))
>>> vectors = result.as_dict()            # {paper_id: np.ndarray[dimension]}
>>> result.link_prediction                # {"MRR": …, "Hits@1": …, "Hits@10": …, "AUC": …} on held-out edges
>>> ids, scores = result.neighbours(k=2)  # FAISS flat search with the comparator's metric

API (stable; other chapters import it):

* :class:`GraphEmbeddingConfig` — PBG settings. Defaults are SciNCL A.5 / malteos/scincl
  ``biggraph_configs/s2orc_768d_dot.py``: dimension 768, ``dot`` comparator, 20 epochs, lr 0.1,
  ranking loss with margin 0.15, ``max_norm`` 1.0, no global embedding, no uniform negatives (batch
  negatives only), a 99 / 1 train / link-prediction split of the edges. Directed by default;
  ``undirected=True`` adds every training edge in both directions (SciNCL A.7.1).
* :func:`embed` — embed a :class:`~sdr.corpus.CitationGraph` or an iterable of ``(citing, cited)`` /
  ``(citing, cited, weight)`` edges; returns a :class:`GraphEmbedding`. A weight is a repetition count,
  as FLeW weights its facet subgraphs: an edge of weight ``w`` is written ``w * weight_scale`` times,
  which must be a whole number (a fractional one is an error, not rounded; an edge of weight 0 is left out
  and counted in ``report``). Held-out edges are chosen among distinct edges before repetition, so no copy
  of a test edge is trained on.
* :func:`embed_edge_files` (also :func:`embed` given a path) — the same for a graph of any size (S2ORC's
  52.5 M nodes / 463.7 M edges): edge files (:class:`EdgeFiles`: TSV, CitationGraph JSONL, S2AG
  ``citations`` shards, S2ORC metadata; ``.gz``; folders) are streamed twice in chunks, node ids kept as
  one sorted array (:class:`NodeIds`), edges spilled into PBG's partition buckets and deduplicated and
  split bucket by bucket (:func:`write_buckets`), and PBG trains in partitioned mode with
  ``num_partitions`` chosen from the node count and a memory budget (:func:`plan_partitions`;
  ``GraphEmbeddingConfig.num_partitions`` / ``memory_budget_gb``). With ``work_dir`` the vectors are a
  memory-mapped ``vectors.npy`` (``ids.txt`` beside it, and ``embedding.json``: settings, report, link
  prediction, and ``source``: where the edges came from, :func:`edge_source` — a complete bulk
  ``s2orc_citation_graph`` fetch's dataset, release, node set, nodes and edges, else the files and counts). PBG trains with ``workers`` HOGWILD processes
  (``GraphEmbeddingConfig.workers``; default every core of the machine for runs of ≥ 1 M training edges, one
  below); :func:`prepare_distributed` / :func:`collect_distributed` run PBG's distributed mode on several machines.
* :func:`read_given_embedding` — such a folder (or an embeddings JSONL) read back as a precomputed embedding keyed
  by S2 corpus ids, restricted to a chapter's papers by :meth:`GivenEmbedding.restrict` (SciNCL's
  ``graph_embedding``: S2ORC's citation graph); errors name the file and line or record.
* :func:`read_edges_tsv` — ``citing<TAB>cited[<TAB>weight]`` per line, weights whole numbers >= 1; errors
  name file and line.
* :func:`nearest_neighbours` — exact FAISS search in blocks of queries, the metric matching the comparator
  (:data:`COMPARATOR_METRIC`: ``dot`` → inner product, ``cos`` → cosine), self excluded. SciNCL's bands
  over a large corpus: :func:`sdr.samplers.knn_bands` (blocked, keeps only the bands; IVF, GPU).
* ``sdr graph embed EDGES… --dim D [--epochs E] [--comparator dot|cos] [--undirected] [--partitions P]
  [--memory-gb G] [--workers W] [--work-dir DIR] [--out F.jsonl] [--force]`` writes the book's embeddings JSONL
  (``{"paper_id", "embedding"}``), so ``sdr evaluate`` and FAISS read it, and/or ``DIR/vectors.npy``; with
  ``--machines M --init-method URI`` it prepares a distributed run instead and prints each machine's command, and
  ``sdr graph collect DIR`` reads the vectors back after it.

Link prediction is PBG's own ranking evaluator (``torchbiggraph.eval.RankingEvaluator``), the one
behind SciNCL Table 5: each held-out edge's score is ranked against the corrupted edges built from
the other held-out edges of its batch (``eval_num_batch_negs``) and uniformly drawn nodes
(``eval_num_uniform_negs``), on both sides; MRR, Hits@1, Hits@10 and AUC are reported in percent.

One module per reason to change: :mod:`~sdr.graph.pbg` (PBG settings, training, the in-memory
:func:`embed`, :func:`plan_partitions`), :mod:`~sdr.graph.edges` (edge layouts in), :mod:`~sdr.graph.scale`
(:func:`embed_edge_files`, :func:`write_buckets`, :class:`NodeIds`), :mod:`~sdr.graph.link_prediction`,
:mod:`~sdr.graph.neighbours`, :mod:`~sdr.graph.given` (a precomputed embedding read back),
:mod:`~sdr.graph.provenance` (which graph an embedding embeds: :func:`edge_source`, :func:`s2orc_graph_problem`),
:mod:`~sdr.graph.triplet_graph` (:func:`citation_graph_from_triplets`) and
:mod:`~sdr.graph.cli` (``sdr graph embed``). Every name is re-exported here, so ``graph.embed(...)`` reads as
before.
"""

from sdr.graph.pbg import (
    COMPARATOR_METRIC, MAX_REPEATS, PARALLEL_MIN_EDGES, EmbeddingReport, GraphEmbedding, GraphEmbeddingConfig, PartitionPlan,
    check_dimension, check_resources, default_memory_budget, embed, machine_workers, plan_partitions, training_edges, workers_for,
)
from sdr.graph.edges import MAX_WEIGHT, Edge, EdgeFiles, edges_of, read_edges_tsv, write_edges_tsv
from sdr.graph.scale import Buckets, NodeIds, collect_distributed, embed_edge_files, prepare_distributed, write_buckets
from sdr.graph.link_prediction import LINK_PREDICTION_METRICS
from sdr.graph.neighbours import nearest_neighbours
from sdr.graph.triplet_graph import citation_graph_from_triplets
from sdr.graph.given import EMBEDDING_INFO, GivenEmbedding, Restricted, check_given_embedding, read_given_embedding
from sdr.graph.provenance import (
    GRAPH_STATS, S2ORC_GRAPH_DATASET, describe_source, edge_source, s2orc_graph_problem,
    source_with_counts,
)
from sdr.graph.cli import register

__all__ = [
    "MAX_REPEATS",
    "MAX_WEIGHT",
    "check_dimension",
    "check_resources",
    "GraphEmbeddingConfig",
    "GraphEmbedding",
    "EmbeddingReport",
    "COMPARATOR_METRIC",
    "LINK_PREDICTION_METRICS",
    "embed",
    "embed_edge_files",
    "prepare_distributed",
    "collect_distributed",
    "machine_workers",
    "workers_for",
    "PARALLEL_MIN_EDGES",
    "write_buckets",
    "Buckets",
    "EdgeFiles",
    "NodeIds",
    "PartitionPlan",
    "plan_partitions",
    "default_memory_budget",
    "training_edges",
    "read_edges_tsv",
    "write_edges_tsv",
    "edges_of",
    "citation_graph_from_triplets",
    "read_given_embedding",
    "check_given_embedding",
    "GivenEmbedding",
    "Restricted",
    "EMBEDDING_INFO",
    "edge_source",
    "s2orc_graph_problem",
    "source_with_counts",
    "describe_source",
    "S2ORC_GRAPH_DATASET",
    "GRAPH_STATS",
    "nearest_neighbours",
    "register",
]
