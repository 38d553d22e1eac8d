"""Throughput of sdr.samplers on a random citation graph with 10^5 edges and on kNN bands."""
from __future__ import annotations
import time, numpy as np
from sdr.corpus import CitationGraph, Paper
from sdr.samplers import specter_triplets, undirected_triplets, contrastive_examples, knn_band_triplets

rng = np.random.default_rng(0)
n_papers, n_edges = 20_000, 100_000
# newer cites older, mostly nearby (community-like locality)
citing = rng.integers(1, n_papers, size=n_edges)
offset = np.minimum(citing, rng.geometric(1 / 200, size=n_edges))
cited = citing - offset
t = time.perf_counter()
graph = CitationGraph()
for a, b in zip(citing.tolist(), cited.tolist()):
    graph.add(f"p{a:06d}", f"p{b:06d}")
print(f"graph: {len(graph.nodes)} nodes, {len(graph)} edges built in {time.perf_counter()-t:.1f}s")
papers = {pid: Paper(pid, pid, authors=[f"author{int(pid[1:]) % 5000}"]) for pid in graph.nodes}
for name, call in [
    ("specter_triplets", lambda: specter_triplets(graph, progress=False)),
    ("undirected_triplets", lambda: undirected_triplets(graph, papers=papers, progress=False)),
    ("contrastive_examples", lambda: contrastive_examples(graph, progress=False)),
]:
    t = time.perf_counter(); examples, report = call(); dt = time.perf_counter() - t
    print(f"{name}: {len(examples)} examples in {dt:.2f}s ({report.queries_used/dt:.0f} queries/s)")
for n, k_hard in [(20_000, 4000)]:
    emb = rng.standard_normal((n, 64)).astype(np.float32)
    ids = [f"p{i}" for i in range(n)]
    t = time.perf_counter(); trip, rep = knn_band_triplets(emb, ids, k_hard=k_hard, progress=False, verbose=False)
    print(f"knn_band_triplets n={n} d=64 k_hard={k_hard}: {len(trip)} triplets in {time.perf_counter()-t:.1f}s")
