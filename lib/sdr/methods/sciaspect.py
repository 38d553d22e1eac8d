"""SPECTERCL and the SciAspect family: Bansal's thesis, Experiments 2–5 (``papers/003_…``).

* **SPECTERCL** (Exp. 2, §5.2): SPECTER(Undirected)'s pools (direct references *and* citations as
  positives, references-of-references as hard negatives) with the general contrastive loss of eq. 2.6
  (:class:`sdr.losses.GeneralContrastiveLoss`, τ = 0.05) instead of the triplet loss. Sampling is
  :func:`sdr.samplers.contrastive_examples`; :data:`SPECTERCL_VARIANTS` are the rows of Table 6.3.
* **SciAspect** (Exp. 3, §5.3): one instance is (aspect *i*, anchor, positives linked to the anchor in
  aspect *i*, hard negatives linked to it in another aspect, easy negatives); each aspect has a linear
  projection head ``z = W_i d + b_i`` and eq. 5.1 is eq. 2.6 in that aspect's space
  (:class:`AspectContrastiveObjective`, a ``torch.nn.Module`` whose heads the trainer optimizes and saves).
  At inference the encoder alone gives the embedding; eq. 5.2 projects it with one head, eq. 5.3
  concatenates the three projections (:func:`embedding_variants`).
* **SciAspectHybrid** (Exp. 4, §5.4): ``α · L_global + (1 − α) · L_local`` (eq. 5.4, α = 0.7).
* **SciAspectL2** (Exp. 5, §5.5): negatives are references-of-references reached in another aspect,
  configurations 5.1/5.2/5.3 (:data:`L2_CONFIGS`, Table 6.7).

Where the thesis is silent we chose, and each choice is named where it is made (search "Choice:").
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from sdr.corpus import INTENTS, MISCELLANEOUS, CitationGraph, Paper, ReadReport, read_s2_citations
from sdr.losses import GeneralContrastiveLoss, HybridLoss
from sdr.samplers import (
    ContrastiveExample,
    SamplingReport,
    count_collisions,
    graph_pools,
)
# Private helpers of the shared sampler module, reused rather than copied: the sorted candidate pool
# with rejection sampling for easy negatives, the seeded distinct draw and the oversampling positive draw.
from sdr.samplers import _CandidatePool, _draw_distinct, _draw_positives
from sdr.train import TrainConfig

__all__ = [
    "TEMPERATURE", "HYBRID_ALPHA", "TEMPERATURES", "ALPHAS", "ASPECT_SPACES", "FACET_TO_ASPECT",
    "SPECTERCL_VARIANTS", "SCIASPECT_VARIANTS", "L2_CONFIGS", "POSITIVES_PER_QUERY", "paper_train_config",
    "ThesisData", "read_thesis_citations", "write_s2_citations_replica", "id_form", "remove_evaluation_papers",
    "read_mdcr_papers", "scirepeval_papers", "TABLE_6_11_SCIDOCS", "table_6_11_rows",
    "specter_cl_examples", "AspectExample", "AspectPools", "aspect_neighbours", "aspect_pools",
    "AspectSamplingReport", "aspect_examples", "sciaspect_examples", "sciaspect_hybrid_examples", "sciaspect_l2_examples",
    "AspectContrastiveObjective", "PROBE_SIZE", "Run", "split_probe", "train_runs", "embedding_variants",
    "csfcube_results", "violations", "SCIDOCS_WITHOUT_RECOMM", "SCIDOCS_PROXIMITY", "average_without_recomm",
]

#: τ of every contrastive run after Exp. 2.2 (Table 6.3: 0.05 was best).
TEMPERATURE = 0.05
#: SciAspectHybrid's loss weight (§5.4: "we chose α as 0.7").
HYBRID_ALPHA = 0.7
#: Exp. 2.2 temperature sweep (Table 6.3) and Exp. 4.2 α sweep (Table 6.6).
TEMPERATURES = (0.01, 0.05, 0.1, 0.5)
ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)
#: The three aspect spaces evaluated in Exp. 3.4 (thesis: methodology, background, result).
ASPECT_SPACES = INTENTS
#: CSFCube facet → the aspect head that embeds it (the thesis never evaluated this; issue 11).
FACET_TO_ASPECT = {"background": "background", "method": "method", "result": "result"}

#: Table 6.3, Exp. 2.1: positives / negatives / hard negatives per instance. Choice: the thesis does not
#: say how many of the negatives are hard; we keep Exp. 1's share (2 of 5, SPECTER's ratio 0.3), and
#: the single negative of "1p1n" is a hard one (falling back to an easy one) so that it is a triplet.
SPECTERCL_VARIANTS = {
    "1 positive, 1 negative": dict(n_positives=1, n_negatives=1, n_hard=1),
    "1 positive, 5 negatives": dict(n_positives=1, n_negatives=5, n_hard=2),
    "1 positive, 3 easy negatives": dict(n_positives=1, n_negatives=3, n_hard=0),
    "2 positive, 5 negatives": dict(n_positives=2, n_negatives=5, n_hard=2),
    "4 positives, 5 negatives": dict(n_positives=4, n_negatives=5, n_hard=2),
    "5 positives, 5 negatives": dict(n_positives=5, n_negatives=5, n_hard=2),
}

#: Table 6.4, Exp. 3.1–3.3: "at most 5 positives, at most 10 hard negatives, 3 easy negatives" (§5.3).
SCIASPECT_VARIANTS = {
    "1 positive, n negatives (w/ misc aspect)": dict(n_positives=1, include_miscellaneous=True),
    "m positives, n negatives": dict(n_positives=5, include_miscellaneous=True),
    "1 positive, n negatives (w/o misc aspect)": dict(n_positives=1, include_miscellaneous=False),
}

#: Table 6.7, Exp. 5.1–5.3: hard (L2, other aspect) and easy negatives per instance, one positive.
L2_CONFIGS = {
    "SciAspect 1 positive 3 easy negatives": dict(n_hard=0, n_easy=3),
    "SciAspect L2 negatives (5 hard negatives)": dict(n_hard=5, n_easy=0),
    "SciAspect L2 negatives (3 hard negatives, 3 easy negatives)": dict(n_hard=3, n_easy=3),
}


def paper_train_config(**overrides) -> TrainConfig:
    """The thesis' training setup (§4.4) as a :class:`TrainConfig`: AdamW (ε 1e-8), lr 2e-5, cosine schedule
    with 100 warm-up steps, 2 epochs, effective batch 8 for the contrastive runs (8 × 1 here; on a small
    GPU 2 × 4 is the same). ``overrides`` replace any field (the chapter's CPU budgets)."""
    settings = dict(epochs=2, batch_size=8, accumulation_steps=1, learning_rate=2e-5, schedule="cosine",
                    warmup_steps=100)
    settings.update(overrides)
    return TrainConfig(**settings)


# ------------------------------------------------------------------------------------------ the data


@dataclass
class ThesisData:
    """The thesis' training data (§4.3): the local citation graph of each anchor with intents, the papers'
    titles and abstracts, and the anchors (the query papers of SciNCL's SPECTER w/o leakage triples)."""

    graph: CitationGraph
    papers: dict[str, Paper]
    anchors: list[str]
    report: ReadReport
    anchors_listed: int  # lines of anchors.txt
    anchors_without_links: int  # listed anchors with no reference or citation in the pages (e.g. unknown to S2)


def read_thesis_citations(folder: str | Path) -> ThesisData:
    """Read a ``s2_citations_thesis`` folder (:mod:`sdr.fetchers.semantic_scholar` writes it): the Graph API
    pages through :func:`sdr.corpus.read_s2_citations` (anchors' references and citations, and the references'
    own reference pages, so references-of-references are edges of the graph) and ``anchors.txt`` (one anchor id a
    line). Anchors with no link at all are counted and left out of :attr:`ThesisData.anchors`."""
    folder = Path(folder)
    anchors_file = folder / "anchors.txt"
    if not anchors_file.exists():
        raise FileNotFoundError(f"{anchors_file}: not found; the s2_citations_thesis folder {folder} must list its "
                                f"anchor papers there, one Semantic Scholar id a line (the fetcher writes it)")
    listed = [line.strip() for line in anchors_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not listed:
        raise ValueError(f"{anchors_file}: no anchor ids; expected one Semantic Scholar paper id a line")
    duplicates = len(listed) - len(set(listed))
    if duplicates:
        raise ValueError(f"{anchors_file}: {duplicates} anchor ids are listed twice; expected each once")
    graph, papers, report = read_s2_citations(folder)
    nodes = graph.nodes
    anchors = [a for a in listed if a in nodes]
    return ThesisData(graph, papers, anchors, report, len(listed), len(listed) - len(anchors))


def write_s2_citations_replica(corpus, folder: str | Path, anchor_fraction: float, seed: int = 0) -> Path:
    """The replica of ``s2_citations_thesis``: ``corpus`` (a synthetic corpus) served as the Semantic Scholar Graph
    API and fetched by the real fetcher (:func:`sdr.synthetic.s2_api.write_citation_pages`), so the folder has the
    official layout (anchors' reference and citation pages, their references' reference pages, ``anchors.txt``).

    The anchors stand in for SPECTER's query papers: a seeded ``anchor_fraction`` of the corpus' papers with a
    link (the thesis' 132k anchors are a minority of the papers their pages reach, so "excluding all anchor
    papers" from the hard negatives leaves most of them).
    """
    import contextlib
    import io

    from sdr.datasets import forbid_replica
    from sdr.synthetic.s2_api import write_citation_pages

    forbid_replica("sdr.methods.sciaspect.write_s2_citations_replica")
    if not 0 < anchor_fraction <= 1:
        raise ValueError(f"write_s2_citations_replica: anchor_fraction must be in (0, 1], got {anchor_fraction}")
    linked = sorted(corpus.graph.nodes)
    if not linked:
        raise ValueError("write_s2_citations_replica: the corpus has no citation edges")
    size = max(1, round(anchor_fraction * len(linked)))
    anchors = sorted(np.random.default_rng(seed).choice(linked, size=size, replace=False).tolist())
    with contextlib.redirect_stdout(io.StringIO()):  # the fetcher's request-time estimate is for the real API
        return write_citation_pages(corpus, folder, anchors=anchors)


_SHA = re.compile(r"^[0-9a-f]{40}$")


def id_form(ids: Iterable[str]) -> str:
    """Which id space a set of paper ids is in: ``"S2 paper id"`` (40 hex digits: the Graph API, SciDocs),
    ``"S2 corpus id"`` (digits: CSFCube, SPECTER's triplets, much of SciRepEval), or ``"other"`` (replicas);
    ``"mixed"`` when they differ (every id is looked at)."""
    forms = {"S2 paper id" if _SHA.match(i) else "S2 corpus id" if i.isdigit() else "other" for i in map(str, ids)}
    return forms.pop() if len(forms) == 1 else "mixed" if forms else "none"


def remove_evaluation_papers(data: ThesisData, evaluation_sets: Mapping[str, Iterable[str]]):
    """Drop every paper of the evaluation sets from the training data, and count what each set removed.

    The thesis made sure "that there is no overlap between the training documents and the documents used to
    test" (§4.3); here the overlap is measured and filtered, never assumed: each evaluation paper found in the
    training graph leaves it with its edges (so it is no anchor, positive or negative). Ids are compared only
    within one id space (:func:`id_form`): a set whose ids are in another space than the training graph's gets no
    count (NaN, "not comparable") instead of a false 0, and nothing is removed for it.

    Returns ``(filtered ThesisData, table)``: one row per set with its size and id form, the papers it shares with
    the training graph, how many of those are anchors, and the edges that touch them.
    """
    import pandas as pd

    nodes = data.graph.nodes
    training_form = id_form(nodes)
    anchors = set(data.anchors)
    rows, removed = [], set()
    for name, ids in evaluation_sets.items():
        ids = {str(i) for i in ids}
        form = id_form(ids)
        row = {"evaluation set": name, "papers": len(ids), "ids": form}
        if form != training_form or form == "mixed":
            rows.append({**row, "in the training graph": float("nan"), "of them anchors": float("nan"),
                         "edges touching them": float("nan"),
                         "note": f"not comparable: the training graph's ids are of another kind ({training_form})"})
            continue
        shared = ids & nodes
        removed |= shared
        rows.append({**row, "in the training graph": len(shared), "of them anchors": len(shared & anchors),
                     "edges touching them": sum(1 for c in data.graph if c.citing in shared or c.cited in shared),
                     "note": "removed from the training data" if shared else ""})
    graph = CitationGraph(c for c in data.graph if c.citing not in removed and c.cited not in removed)
    rows.append({"evaluation set": "all (removed)", "papers": len(removed), "ids": training_form,
                 "in the training graph": len(removed), "of them anchors": len(removed & anchors),
                 "edges touching them": len(data.graph) - len(graph), "note": ""})
    kept_nodes = graph.nodes
    filtered = ThesisData(graph, {pid: p for pid, p in data.papers.items() if pid not in removed},
                          [a for a in data.anchors if a not in removed and a in kept_nodes], data.report,
                          data.anchors_listed, data.anchors_without_links)
    return filtered, pd.DataFrame(rows).set_index("evaluation set")


# ------------------------------------------------------------------------------------------ evaluation data


def read_mdcr_papers(folder: str | Path, split: str = "test") -> dict[str, Paper]:
    """Titles and abstracts of MDCR's queries and candidates: ``mdcr_<split>_data.jsonl``, one
    ``{"paper_id", "title", "abstract"}`` a line (the key SciRepEval's ``mdcr.py`` reads them by)."""
    from sdr.jsonio import read_jsonl

    path = Path(folder) / f"mdcr_{split}_data.jsonl"
    papers: dict[str, Paper] = {}
    for line_number, record in read_jsonl(path, "one MDCR paper {paper_id, title, abstract} a line"):
        if not record.get("paper_id"):
            raise ValueError(f"{path}:{line_number}: record without paper_id; expected {{paper_id, title, abstract}}")
        pid = str(record["paper_id"])
        papers[pid] = Paper(pid, str(record.get("title") or ""), str(record.get("abstract") or ""))
    return papers


def scirepeval_papers(data_dir: str | Path, tasks_config: str | Path | None = None) -> dict[str, Paper]:
    """Every document the SciRepEval tasks with test data under ``data_dir`` need embedded (their ``data.meta``
    papers, search queries as title-only papers, reviewers' papers), by ``doc_id``."""
    from sdr.evaluate import scirepeval

    data_dir = Path(data_dir)
    papers: dict[str, Paper] = {}
    for task in scirepeval.read_registry(tasks_config or data_dir / "scirepeval_tasks.jsonl"):
        if scirepeval.split_path(scirepeval.dataset_dir(data_dir, task.data["test"]), "test") is None:
            continue  # the evaluator skips (and reports) tasks without test data
        for doc in scirepeval.task_documents(data_dir, task):
            papers.setdefault(doc["doc_id"], Paper(doc["doc_id"], str(doc.get("title") or ""),
                                                   str(doc.get("abstract") or "")))
    return papers


#: Table 6.11's SciDocs rows (as labelled in data/paper_tables/thesis_scirepeval.csv) ← (SciRepEval task, metric).
TABLE_6_11_SCIDOCS = {
    ("SciDocs MAG", None): "SciDocs MAG [CLF] F1", ("SciDocs MeSH", None): "SciDocs MeSH [CLF] F1",
    ("SciDocs CoView", "map"): "SciDocs Co-View [PRX] MAP", ("SciDocs CoView", "ndcg"): "SciDocs Co-View [PRX] nDCG",
    ("SciDocs CoRead", "map"): "SciDocs Co-Read [PRX] MAP", ("SciDocs CoRead", "ndcg"): "SciDocs Co-Read [PRX] nDCG",
    ("SciDocs Cite", "map"): "SciDocs Cite [PRX] MAP", ("SciDocs Cite", "ndcg"): "SciDocs Cite [PRX] nDCG",
    ("SciDocs CoCite", "map"): "SciDocs Co-Cite [PRX] MAP", ("SciDocs CoCite", "ndcg"): "SciDocs Co-Cite [PRX] nDCG",
}


def table_6_11_rows(result: Mapping) -> dict[str, float]:
    """One model's column of Table 6.11 from :func:`sdr.evaluate.scirepeval.evaluate`'s output: the ten SciDocs
    rows, the format averages without SciDocs, Out-of-/In-task, SciDocs, All and "Avg without SciDocs" (the mean
    of the non-SciDocs tasks' scores; the thesis' values are that mean over its 17 tasks). A row whose tasks did
    not run is NaN."""
    from sdr.evaluate import scirepeval

    nan = float("nan")
    tasks = result["tasks"]
    rows: dict[str, float] = {}
    for (task, metric), label in TABLE_6_11_SCIDOCS.items():
        metrics = tasks.get(task, {}).get("metrics", {})
        value = next(iter(metrics.values()), nan) if metric is None else metrics.get(metric, nan)
        rows[label] = float(value)
    aggregates = result["aggregates"]
    for fmt, label in (("CLF", "CLF Avg"), ("RGN", "REG Avg"), ("PRX", "PRX Avg"), ("QRY", "QRY Avg")):
        value = aggregates["formats"].get(fmt)
        rows[f"{label} (excluding SciDocs)"] = nan if value is None else float(value)
    for key, label in (("out_of_train", "Out of task Avg"), ("in_train", "In task Avg"), ("scidocs", "SciDocs Avg"),
                       ("all", "All avg")):
        rows[label] = nan if aggregates[key] is None else float(aggregates[key])
    others = [scirepeval.task_score(r) for r in tasks.values() if r["group"] != "scidocs"]
    rows["Avg without SciDocs"] = float(np.mean(others)) if others else nan
    return rows


# ------------------------------------------------------------------------------------------ SPECTERCL

#: §5.1: "For each query paper a total of 5 positives … are randomly sampled"; SPECTERCL (§5.2) follows the
#: same procedure, so every query contributes 5 positives per epoch, grouped into instances of the variant's size.
POSITIVES_PER_QUERY = 5


def specter_cl_examples(
    graph: CitationGraph,
    variant: str = "1 positive, 5 negatives",
    *,
    papers: Mapping[str, Paper] | None = None,
    candidates: Iterable[str] | None = None,
    query_ids: Iterable[str] | None = None,
    positives_per_query: int = POSITIVES_PER_QUERY,
    seed: int = 0,
    progress: bool = True,
    verbose: bool = True,
) -> tuple[list[ContrastiveExample], SamplingReport]:
    """SPECTERCL instances of one Table 6.3 variant (:data:`SPECTERCL_VARIANTS`), sampled as in §5.1.

    Per query: ``positives_per_query`` (5) positives from its direct references and citations (self-citations
    excluded; "oversampled if the required number of candidates is not found"), split into
    ``positives_per_query // n_positives`` instances of ``n_positives`` each (1 positive: 5 instances; 2: 2;
    4 and 5: 1). Each instance draws its own ``n_negatives`` negatives: ``n_hard`` hard ones from the
    references of the query's references that are not directly linked to it, the rest easy ones, i.e. corpus
    papers other than the query, its direct links and its references-of-references ("all papers in the corpus
    excluding the anchor paper and papers connected to the anchor paper (i.e., positive candidates and hard
    negative candidates)"). A shortfall of hard negatives is filled with easy ones and counted in the report
    (``hard_short``).

    Choice: with 2 positives an instance, the fifth positive is left out (2 instances of 2), so that every
    instance of a variant has the same shape.
    """
    if variant not in SPECTERCL_VARIANTS:
        raise ValueError(f"unknown SPECTERCL variant {variant!r}; expected one of {list(SPECTERCL_VARIANTS)}")
    settings = SPECTERCL_VARIANTS[variant]
    n_positives, n_negatives, n_hard = settings["n_positives"], settings["n_negatives"], settings["n_hard"]
    if positives_per_query < n_positives:
        raise ValueError(f"specter_cl_examples: positives_per_query ({positives_per_query}) is smaller than the "
                         f"variant's {n_positives} positives an instance")
    if len(graph) == 0:
        raise ValueError("specter_cl_examples: the citation graph has no edges, so there is nothing to sample")
    rng = np.random.default_rng(seed)
    pool = _CandidatePool(graph.nodes if candidates is None else candidates)
    authors = _authors(papers)
    nodes = graph.nodes
    queries = sorted(nodes) if query_ids is None else [str(q) for q in query_ids]
    report = SamplingReport(method="specter_cl_examples", queries_total=len(queries))
    examples: list[ContrastiveExample] = []
    per_query = positives_per_query // n_positives
    for query in tqdm(queries, desc="specter_cl_examples", disable=not progress):
        if query not in nodes:
            report.skipped["not in graph"] += 1
            continue
        pools = graph_pools(graph, query, undirected=True, authors=authors)
        report.self_citations_excluded += len(pools.self_citations)
        if not pools.positives:
            report.skipped["no positives"] += 1
            continue
        drawn, repeats = _draw_positives(pools.positives, positives_per_query, rng)
        made, short_hard = 0, False
        for k in range(per_query):
            hard = _draw_distinct(pools.hard, n_hard, rng)
            easy = pool.sample(n_negatives - len(hard), pools.linked, rng)
            report.negatives_short += n_negatives - len(hard) - len(easy)
            if n_negatives and not hard and not easy:
                continue
            if len(hard) < n_hard:
                report.hard_short += n_hard - len(hard)
                short_hard = True
            examples.append(ContrastiveExample(query, drawn[k * n_positives:(k + 1) * n_positives], hard + easy,
                                               n_hard=len(hard)))
            report.hard_negatives += len(hard)
            report.easy_negatives += len(easy)
            made += 1
        if not made:
            report.skipped["no negatives"] += 1
            continue
        report.queries_used += 1
        report.oversampled_queries += int(repeats > 0)
        report.oversampled_positives += repeats
        report.hard_short_queries += int(short_hard)
    report.examples = len(examples)
    report.collisions = count_collisions(examples)
    if verbose:
        print(report)
    return examples, report


# ------------------------------------------------------------------------------------- SciAspect sampling


@dataclass
class AspectExample:
    """One SciAspect instance: an aspect, the anchor, its positives and negatives in that aspect (ids).

    The first ``n_hard`` negatives are hard (linked to the anchor in another aspect, or for L2 reached as
    a reference-of-reference in another aspect), the rest easy. ``global_negatives`` (SciAspectHybrid
    only) are SPECTERCL's negatives for the global loss, the first ``n_global_hard`` of them references of
    references, the rest easy ones filling a shortfall.
    """

    aspect: str
    query: str
    positives: list[str]
    negatives: list[str]
    n_hard: int = 0
    global_negatives: list[str] = field(default_factory=list)
    n_global_hard: int = 0


@dataclass
class AspectSamplingReport(SamplingReport):
    """:class:`sdr.samplers.SamplingReport` of the SciAspect family, with what its instances hold beyond it.

    ``hard_negatives``/``easy_negatives`` count the aspect-space (local) negatives; ``hard_short`` the hard ones
    missing and filled with easy ones (SciAspectL2's exact counts), ``hard_unfilled`` those missing and left out
    (§5.3's "at most 10"), in ``hard_unfilled_instances`` instances; ``global_hard_negatives`` and
    ``global_easy_negatives`` the hybrid's global negatives (references of references, and easy ones filling a
    shortfall); ``instances_per_aspect`` the instances of each aspect, and why an aspect of a kept anchor made none.
    """

    hard_unfilled: int = 0
    hard_unfilled_instances: int = 0
    global_hard_negatives: int = 0
    global_easy_negatives: int = 0
    instances_per_aspect: Counter = field(default_factory=Counter)

    def __str__(self) -> str:
        lines = [super().__str__(),
                 "instances per aspect: " + ", ".join(f"{k}: {v}" for k, v in sorted(self.instances_per_aspect.items()))]
        if self.hard_unfilled:
            lines.append(f"{self.hard_unfilled} hard negatives short in {self.hard_unfilled_instances} instances, "
                         f"not filled (at most n_hard).")
        if self.global_hard_negatives or self.global_easy_negatives:
            lines.append(f"global negatives: {self.global_hard_negatives} references of references, "
                         f"{self.global_easy_negatives} easy ones filling a shortfall.")
        return " ".join(lines)


@dataclass
class AspectPools:
    """Candidate pools of one anchor, per aspect (sorted lists)."""

    positives: dict[str, list[str]]
    hard: dict[str, list[str]]
    global_hard: list[str] | None  # references of references (SPECTERCL's hard pool), for the hybrid's global loss
    linked: set[str]  # what an easy negative avoids at this level (§5.3: the anchor and its direct links; §5.5: also L2)
    global_linked: set[str] | None  # what an easy global negative avoids (§5.1: the anchor, direct links and L2 papers)
    self_citations: list[str]


def aspect_neighbours(graph: CitationGraph, query: str) -> dict[str, set[str]]:
    """``{neighbour: aspects}``: every paper the query cites or is cited by, with the aspects of the link(s).

    Both directions count (the thesis' positives are "direct references and citations", Table 5.1); an
    edge without intent is the miscellaneous aspect; two edges between the same papers add up.
    """
    linked: dict[str, set[str]] = defaultdict(set)
    for other in graph.references(query):
        linked[other].update(graph.edge(query, other).aspects)
    for other in graph.citations(query):
        linked[other].update(graph.edge(other, query).aspects)
    return dict(linked)


def _second_hop_aspects(graph: CitationGraph, query: str) -> dict[str, set[str]]:
    """``{reference of a reference: aspects of the second edge}``.

    Choice: the thesis does not say how a two-hop paper gets an aspect; we take the aspect of the edge
    that reaches it (reference → reference-of-reference), i.e. why the middle paper cites it.
    """
    reached: dict[str, set[str]] = defaultdict(set)
    for reference in graph.references(query):
        for second in graph.references(reference):
            reached[second].update(graph.edge(reference, second).aspects)
    return dict(reached)


def aspect_pools(
    graph: CitationGraph,
    query: str,
    *,
    anchors: Iterable[str] = (),
    authors: Mapping[str, frozenset[str]] | None = None,
    level: str = "l1",
    with_global: bool = True,
) -> AspectPools:
    """The thesis' candidate pools of one anchor (§5.3 for ``level="l1"``, §5.5 for ``"l2"``).

    * positives of aspect *i*: papers directly linked (cited or citing) in aspect *i*, self-citations
      excluded (the query itself; with ``authors``, links sharing an author, as in
      :func:`sdr.samplers.graph_pools`);
    * hard negatives of aspect *i* (L1): papers directly linked in an aspect other than *i* and other than
      miscellaneous, excluding the ``anchors`` and the positive candidates of *i* ("as papers can be
      related in multiple aspects"); the miscellaneous aspect has none ("the only certain negative
      documents here are the easy negatives");
    * hard negatives of aspect *i* (L2): references-of-references reached through an edge of another
      (non-miscellaneous) aspect and never through an edge of *i*, minus direct links, the query and the
      ``anchors``;
    * ``linked``, what an easy negative must avoid: at L1 the query and every paper directly linked to it, in any
      aspect or none (§5.3: "all papers in the corpus excluding the anchor paper and the papers connected to the
      anchor paper (i.e., positive candidates and the negative candidates chosen above)"); at L2 also the
      references-of-references (§5.5: "not connected with the anchor paper directly or through
      reference-of-references");
    * ``global_linked``: the §5.1 rule for SPECTERCL-style negatives (the query, direct links and references of
      references), used by SciAspectHybrid's global negatives.

    ``anchors`` is best a set (a sampler passes the same one for every anchor; any other iterable is copied once
    per call). ``with_global=False`` leaves ``global_hard`` and ``global_linked`` None at L1, where nothing else
    needs the references of references (they are the largest part of an anchor's local graph).
    """
    if level not in ("l1", "l2"):
        raise ValueError(f"aspect_pools: level must be 'l1' or 'l2', got {level!r}")
    if not isinstance(anchors, (set, frozenset)):
        anchors = set(anchors)
    neighbours = aspect_neighbours(graph, query)
    self_citations = {query} & set(neighbours)
    neighbours.pop(query, None)
    if authors is not None and authors.get(query):
        self_citations |= {pid for pid in neighbours if authors.get(pid, frozenset()) & authors[query]}
    spaces = (*INTENTS, MISCELLANEOUS)
    positives = {a: sorted(p for p, linked_in in neighbours.items() if a in linked_in and p not in self_citations)
                 for a in spaces}
    second_hop = _second_hop_aspects(graph, query) if with_global or level == "l2" else None
    hard: dict[str, list[str]] = {MISCELLANEOUS: []}
    for aspect in INTENTS:
        others = set(INTENTS) - {aspect}
        if level == "l1":
            pool = {p for p, linked_in in neighbours.items() if linked_in & others}
            pool -= set(positives[aspect])
        else:
            pool = {p for p, reached in second_hop.items() if reached & others and aspect not in reached}
            pool -= set(neighbours)
        hard[aspect] = sorted(pool - anchors - self_citations - {query})
    direct = {query} | neighbours.keys()
    global_hard = global_linked = None
    if second_hop is not None:
        global_hard = sorted(second_hop.keys() - direct - self_citations)
        global_linked = direct | second_hop.keys()
    linked = direct if level == "l1" else global_linked
    return AspectPools(positives, hard, global_hard, linked, global_linked, sorted(self_citations))


def _authors(papers: Mapping[str, Paper] | None) -> dict[str, frozenset[str]] | None:
    if papers is None:
        return None
    return {str(pid): frozenset(" ".join(str(a).lower().split()) for a in paper.authors if str(a).strip())
            for pid, paper in papers.items()}


def aspect_examples(
    graph: CitationGraph,
    *,
    level: str = "l1",
    n_positives: int = 1,
    n_hard: int = 10,
    n_easy: int = 3,
    n_global: int = 0,
    fill_hard_with_easy: bool = False,
    include_miscellaneous: bool = False,
    papers: Mapping[str, Paper] | None = None,
    candidates: Iterable[str] | None = None,
    query_ids: Iterable[str] | None = None,
    exclude_anchors: bool = True,
    seed: int = 0,
    progress: bool = True,
    verbose: bool = True,
) -> tuple[list[AspectExample], AspectSamplingReport]:
    """SciAspect-family instances: one per anchor and aspect (see :func:`aspect_pools` for the pools).

    * an anchor is kept only with ≥ 1 positive candidate in each of background, method and result
      (§4.3, §5.3); the miscellaneous aspect gets an instance only when ``include_miscellaneous`` and the
      anchor has a link without intent, and its negatives are easy ones only;
    * ``n_positives`` distinct positives at most ("at most 5 documents", §5.3; 1 in the best models);
    * ``n_hard`` hard negatives at most (10 for SciAspect), then ``n_easy`` easy ones (random corpus
      papers not in the level's ``linked`` set, see :func:`aspect_pools`); with ``fill_hard_with_easy`` a
      shortfall of hard negatives is made up with easy ones and counted in ``hard_short`` (the L2
      configurations name exact counts); without it the shortfall is only counted (``hard_unfilled``: §5.3's
      10 is "at most");
    * ``n_global`` > 0 adds SPECTERCL's negatives (references-of-references, filled with easy ones under the
      §5.1 rule; ``global_hard_negatives``, ``global_easy_negatives``) for SciAspectHybrid's global loss;
    * ``exclude_anchors``: hard-negative candidates exclude every anchor of this run ("excluding all anchor
      papers", §5.3), i.e. every id in ``query_ids`` (all graph nodes when ``query_ids`` is None).

    Deterministic for a seed: one generator consumed in query order, aspects in :data:`ASPECT_SPACES` order.
    The report's ``collisions`` counts pairs that are positive and negative *within the same aspect*;
    across aspects the same pair is meant to be both.
    """
    method = {"l1": "sciaspect_examples", "l2": "sciaspect_l2_examples"}.get(level)
    if method is None:
        raise ValueError(f"aspect_examples: level must be 'l1' or 'l2', got {level!r}")
    if len(graph) == 0:
        raise ValueError(f"{method}: the citation graph has no edges, so there is nothing to sample")
    if n_positives < 1 or n_hard < 0 or n_easy < 0 or n_global < 0 or n_hard + n_easy < 1:
        raise ValueError(f"{method}: need n_positives >= 1, n_hard, n_easy, n_global >= 0 and n_hard + n_easy >= 1; "
                         f"got {n_positives}, {n_hard}, {n_easy}, {n_global}")
    rng = np.random.default_rng(seed)
    pool = _CandidatePool(graph.nodes if candidates is None else candidates)
    authors = _authors(papers)
    nodes = graph.nodes
    queries = sorted(nodes) if query_ids is None else [str(q) for q in query_ids]
    # one frozen set for every query, never copied per query (the pools drop the query itself): 132k anchors at paper
    anchors = frozenset(queries) if exclude_anchors else frozenset()
    aspects = (*ASPECT_SPACES, MISCELLANEOUS) if include_miscellaneous else ASPECT_SPACES
    report = AspectSamplingReport(method=method, queries_total=len(queries))
    per_aspect = report.instances_per_aspect
    examples: list[AspectExample] = []
    for query in tqdm(queries, desc=method, disable=not progress):
        if query not in nodes:
            report.skipped["not in graph"] += 1
            continue
        pools = aspect_pools(graph, query, anchors=anchors, authors=authors, level=level, with_global=n_global > 0)
        report.self_citations_excluded += len(pools.self_citations)
        if any(not pools.positives[a] for a in ASPECT_SPACES):
            report.skipped["no positive in every aspect"] += 1
            continue
        made = 0
        short_hard = False
        for aspect in aspects:
            if not pools.positives[aspect]:
                per_aspect[f"{aspect}: no positive"] += 1
                continue
            positives = _draw_distinct(pools.positives[aspect], n_positives, rng)
            hard = _draw_distinct(pools.hard[aspect], n_hard, rng) if aspect != MISCELLANEOUS else []
            missing_hard = n_hard - len(hard) if aspect != MISCELLANEOUS else 0
            wanted_easy = n_easy + (missing_hard if fill_hard_with_easy else 0)
            easy = pool.sample(wanted_easy, pools.linked, rng)
            report.negatives_short += wanted_easy - len(easy)
            if missing_hard and fill_hard_with_easy:
                report.hard_short += missing_hard
                short_hard = True
            elif missing_hard:
                report.hard_unfilled += missing_hard
                report.hard_unfilled_instances += 1
            if not hard and not easy:
                per_aspect[f"{aspect}: no negative"] += 1
                continue
            global_negatives: list[str] = []
            if n_global:
                global_negatives = _draw_distinct(pools.global_hard, n_global, rng)
                global_easy = pool.sample(n_global - len(global_negatives), pools.global_linked, rng)
                report.global_hard_negatives += len(global_negatives)
                report.global_easy_negatives += len(global_easy)
                examples.append(AspectExample(aspect, query, positives, hard + easy, len(hard),
                                              global_negatives + global_easy, len(global_negatives)))
            else:
                examples.append(AspectExample(aspect, query, positives, hard + easy, len(hard)))
            report.hard_negatives += len(hard)
            report.easy_negatives += len(easy)
            per_aspect[aspect] += 1
            made += 1
        if not made:
            report.skipped["no negatives"] += 1
            continue
        report.queries_used += 1
        report.hard_short_queries += int(short_hard)
    report.examples = len(examples)
    report.collisions = sum(
        count_collisions([ContrastiveExample(e.query, e.positives, e.negatives) for e in examples if e.aspect == a])
        for a in aspects)
    if verbose:
        print(report)
    return examples, report


def sciaspect_examples(graph: CitationGraph, variant: str = "1 positive, n negatives (w/o misc aspect)",
                       **kwargs) -> tuple[list[AspectExample], AspectSamplingReport]:
    """SciAspect (L1 negatives) instances of one Table 6.4 variant (:data:`SCIASPECT_VARIANTS`)."""
    if variant not in SCIASPECT_VARIANTS:
        raise ValueError(f"unknown SciAspect variant {variant!r}; expected one of {list(SCIASPECT_VARIANTS)}")
    settings = dict(level="l1", n_hard=10, n_easy=3, **SCIASPECT_VARIANTS[variant])
    settings.update(kwargs)
    return aspect_examples(graph, **settings)


def sciaspect_hybrid_examples(graph: CitationGraph, n_local: int = 5, n_global: int = 5,
                              **kwargs) -> tuple[list[AspectExample], AspectSamplingReport]:
    """SciAspectHybrid instances (Table 5.1: "1, 10 (5 local, 5 global)"): one aspect positive, up to
    ``n_local`` papers linked in another aspect (local negatives) and ``n_global`` references-of-references
    (global negatives, filled with easy ones when short).

    Choice: the global loss reuses the aspect positive (a paper linked in aspect *i* is also a direct link,
    i.e. a SPECTERCL positive); the thesis does not say whether L_global draws its own positive.
    """
    settings = dict(level="l1", n_positives=1, n_hard=n_local, n_easy=0, n_global=n_global,
                    include_miscellaneous=False)
    settings.update(kwargs)
    return aspect_examples(graph, **settings)


def sciaspect_l2_examples(graph: CitationGraph, config: str = "SciAspect L2 negatives (3 hard negatives, 3 easy negatives)",
                          **kwargs) -> tuple[list[AspectExample], AspectSamplingReport]:
    """SciAspectL2 instances of one Table 6.7 configuration (:data:`L2_CONFIGS`); a shortfall of L2 hard
    negatives is filled with easy ones (counted in the report)."""
    if config not in L2_CONFIGS:
        raise ValueError(f"unknown SciAspectL2 configuration {config!r}; expected one of {list(L2_CONFIGS)}")
    settings = dict(level="l2", n_positives=1, fill_hard_with_easy=True, include_miscellaneous=False,
                    **L2_CONFIGS[config])
    settings.update(kwargs)
    return aspect_examples(graph, **settings)


# ------------------------------------------------------------------------------------------ objective


class AspectContrastiveObjective(nn.Module):
    """SciAspect's objective: per-aspect linear projection heads and the aspect-space contrastive loss.

    For an instance of aspect *i*, the anchor, positives and negatives are embedded by the encoder, projected
    by head *i* (``z = W_i d + b_i``, §5.3) and scored with eq. 5.1 — the general contrastive loss of eq.
    2.6 (:class:`sdr.losses.GeneralContrastiveLoss`, cosine similarity, τ = 0.05) in that aspect's space.
    With ``alpha`` set it is SciAspectHybrid (eq. 5.4): ``α · L_global + (1 − α) · L_local`` through
    :class:`sdr.losses.HybridLoss`, ``L_global`` being eq. 2.6 on the encoder's own embeddings of the
    anchor, the same positive(s) and the instance's ``global_negatives``.

    The heads are this module's parameters: :func:`sdr.train.train` optimizes, clips, checkpoints and
    restores them and writes them to ``model_dir/objective.pt``.

    Args:
        texts: paper id → encoder input text (``encoder.paper_text(paper)``).
        dimension: the encoder's embedding size (heads are ``dimension × dimension``).
        aspects: the aspect spaces that get a head (add ``"miscellaneous"`` for the w/ misc variants).
        temperature: τ of eq. 5.1.
        alpha: None for SciAspect; the hybrid weight for SciAspectHybrid.
        similarity: ``"cosine"`` (our reading: the thesis never defines ``sim``) or ``"dot"``.

    Choice: the thesis does not say how the heads start; each starts at the identity (``W_i = I``,
    ``b_i = 0``), so every aspect space starts as the encoder's space and only training separates them.

    References:
        Bansal, *Scientific Document Representation Learning*, §5.3 (eq. 5.1), §5.4 (eq. 5.4).

    Inputs:
        +------------------------------------+--------+
        | examples                           | labels |
        +====================================+========+
        | :class:`AspectExample` (aspect,    | none   |
        | anchor, positives, negatives)      |        |
        +------------------------------------+--------+

    Example:
        ::

            encoder = Encoder.load("minilm", num_layers=2)
            texts = {pid: encoder.paper_text(p) for pid, p in corpus.papers.items()}
            examples, _ = sciaspect_examples(corpus.graph)
            objective = AspectContrastiveObjective(texts, encoder.dimension)
            train(encoder, examples, objective, paper_train_config(epochs=1))
    """

    def __init__(self, texts: Mapping[str, str], dimension: int, aspects: Sequence[str] = ASPECT_SPACES,
                 temperature: float = TEMPERATURE, alpha: float | None = None, similarity: str = "cosine"):
        super().__init__()
        unknown = set(aspects) - {*INTENTS, MISCELLANEOUS}
        if unknown or not aspects:
            raise ValueError(f"AspectContrastiveObjective: aspects must be among {(*INTENTS, MISCELLANEOUS)}, "
                             f"got {list(aspects)}")
        self.texts = texts
        self.aspects = tuple(aspects)
        self.heads = nn.ModuleDict({aspect: nn.Linear(dimension, dimension) for aspect in self.aspects})
        with torch.no_grad():
            for head in self.heads.values():
                head.weight.copy_(torch.eye(dimension))
                head.bias.zero_()
        self.loss = GeneralContrastiveLoss(temperature=temperature, similarity=similarity)
        self.hybrid = HybridLoss(self.loss, self.loss, alpha) if alpha is not None else None
        self.last_components: dict[str, float] = {}

    def project(self, embeddings: torch.Tensor, aspect: str) -> torch.Tensor:
        """Eq. 5.2: ``W_i d + b_i`` for embeddings ``[..., D]``."""
        if aspect not in self.heads:
            raise KeyError(f"no head for aspect {aspect!r}; this objective has {list(self.heads)}")
        return self.heads[aspect](embeddings)

    def forward(self, encoder, examples: Sequence[AspectExample]) -> torch.Tensor:
        """Mean over the instances of the aspect-space loss (plus the global loss for the hybrid)."""
        n_pos = max(len(e.positives) for e in examples)
        n_neg = max(len(e.negatives) for e in examples)
        n_glo = max(len(e.global_negatives) for e in examples) if self.hybrid is not None else 0
        ids, masks = [], {"pos": [], "neg": [], "glo": []}
        for e in examples:  # pad ragged groups with the anchor and mask the padding out
            if e.aspect not in self.heads:
                raise KeyError(f"instance of aspect {e.aspect!r} (anchor {e.query}) but heads are {list(self.heads)}")
            ids.append(e.query)
            for key, items, width in (("pos", e.positives, n_pos), ("neg", e.negatives, n_neg),
                                      ("glo", e.global_negatives if n_glo else [], n_glo)):
                ids += list(items) + [e.query] * (width - len(items))
                masks[key].append([True] * len(items) + [False] * (width - len(items)))
        embeddings = encoder([self.texts[i] for i in ids]).view(len(examples), 1 + n_pos + n_neg + n_glo, -1)
        device = embeddings.device
        pos_mask, neg_mask, glo_mask = (torch.tensor(masks[k], dtype=torch.bool, device=device).reshape(len(examples), width)
                                        for k, width in (("pos", n_pos), ("neg", n_neg), ("glo", n_glo)))
        local = embeddings.new_zeros(())
        for aspect in self.aspects:
            rows = [i for i, e in enumerate(examples) if e.aspect == aspect]
            if not rows:
                continue
            index = torch.tensor(rows, device=device)
            z = self.project(embeddings[index, :1 + n_pos + n_neg], aspect)
            value = self.loss(z[:, 0], z[:, 1:1 + n_pos], z[:, 1 + n_pos:],
                              positive_mask=pos_mask[index], negative_mask=neg_mask[index])
            local = local + value * len(rows) / len(examples)
        if self.hybrid is None:
            return local
        global_value = self.loss(embeddings[:, 0], embeddings[:, 1:1 + n_pos], embeddings[:, 1 + n_pos + n_neg:],
                                 positive_mask=pos_mask, negative_mask=glo_mask)
        total = self.hybrid(global_value, local)
        self.last_components = dict(self.hybrid.last_components)
        return total


# ------------------------------------------------------------------------------------------ training


#: Instances held out of every run as its probe: the loss before and after training is measured on them.
PROBE_SIZE = 8


@dataclass(frozen=True)
class Run:
    """One trained model: the sampler output it reads (``examples``, a key of the example sets), the objective
    (``"cl"``: SPECTERCL's eq. 2.6; ``"aspect"``: :class:`AspectContrastiveObjective`), τ and the hybrid's α."""

    examples: tuple[str, str]
    kind: str
    temperature: float = TEMPERATURE
    alpha: float | None = None


def split_probe(examples: Sequence, train_examples: int, seed: int, probe_size: int = PROBE_SIZE):
    """``(training instances, probe)``: a seeded permutation whose first ``probe_size`` instances are the probe,
    never trained on, and whose next ``train_examples`` (0: all the rest) are the training instances, in their
    original order. Fewer than ``probe_size + 1`` instances is an error: there would be no held-out probe."""
    if len(examples) <= probe_size:
        raise ValueError(f"split_probe: {len(examples)} instances cannot give a held-out probe of {probe_size} "
                         f"and a training set; sample more anchors")
    order = np.random.default_rng(seed).permutation(len(examples))
    probe, rest = order[:probe_size], order[probe_size:]
    if train_examples:
        rest = rest[:train_examples]
    return [examples[i] for i in sorted(rest)], [examples[i] for i in sorted(probe)]


def train_runs(runs: Mapping[tuple[str, str], Run], example_sets: Mapping[tuple[str, str], Sequence], base_encoder,
               texts: Mapping[str, str], config: TrainConfig, runs_folder: Path, *, train_examples: int, seed: int,
               resume: bool = False):
    """Train every run from a copy of ``base_encoder``; a run whose (examples, objective) another run already
    trained (τ = 0.05 is the 1p 5n row) shares that model. Each run checkpoints into ``runs_folder/<name>``.

    Returns ``(trained, losses, history, folders)``: ``{key: (encoder, objective)}``, one row per trained model with
    its instances, optimizer steps and the loss on its held-out probe before and after training, every optimizer
    step's loss, and ``{key: the saved model folder}`` (a sentence-transformers folder: ``sdr evaluate all --model``
    reads it).
    """
    import copy
    import re

    import pandas as pd

    from sdr.train import ContrastiveObjective, evaluate_loss, train

    trained, losses, histories, done, folders = {}, {}, [], {}, {}
    for key, run in runs.items():
        if run in done:
            trained[key], folders[key] = trained[done[run]], folders[done[run]]
            continue
        if run.kind not in ("cl", "aspect"):
            raise ValueError(f"run {key}: kind must be 'cl' or 'aspect', got {run.kind!r}")
        examples, probe = split_probe(example_sets[run.examples], train_examples, seed)
        encoder = copy.deepcopy(base_encoder)
        if run.kind == "cl":
            objective = ContrastiveObjective(texts, GeneralContrastiveLoss(temperature=run.temperature))
        else:
            order = [*ASPECT_SPACES, MISCELLANEOUS]
            aspects = sorted({e.aspect for e in example_sets[run.examples]}, key=order.index)
            objective = AspectContrastiveObjective(texts, encoder.dimension, aspects, temperature=run.temperature,
                                                   alpha=run.alpha)
        before = evaluate_loss(encoder, probe, objective)
        name = re.sub(r"[^a-z0-9]+", "-", " ".join(key).lower()).strip("-")
        result = train(encoder, examples, objective, config, output_dir=Path(runs_folder) / name, resume=resume)
        losses[key] = {"instances": len(examples), "optimizer steps": result.steps, "loss before": before,
                       "loss after": evaluate_loss(encoder, probe, objective)}
        histories.append(result.history.assign(model=" / ".join(key)))
        trained[key], folders[key] = (encoder, objective), result.model_dir
        done[run] = key
    return trained, pd.DataFrame(losses).T, pd.concat(histories, ignore_index=True), folders


@torch.no_grad()
def embedding_variants(objective: AspectContrastiveObjective, ids: Sequence[str],
                       embeddings: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """The embeddings one trained SciAspect model offers (Exp. 3.4 / 4.1), each ``{paper id: vector}``:

    ``"encoder"`` (the encoder alone, the thesis' inference embedding), one per aspect head in
    :data:`ASPECT_SPACES` (eq. 5.2), and ``"concat"`` (the three projections concatenated, eq. 5.3).
    """
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if embeddings.shape[0] != len(ids):
        raise ValueError(f"embedding_variants: {len(ids)} ids for {embeddings.shape[0]} embeddings")
    device = next(objective.parameters()).device
    tensor = torch.from_numpy(embeddings).to(device)
    projected = {a: objective.project(tensor, a).float().cpu().numpy() for a in ASPECT_SPACES}
    variants = {"encoder": dict(zip(ids, embeddings))}
    variants.update({a: dict(zip(ids, projected[a])) for a in ASPECT_SPACES})
    variants["concat"] = dict(zip(ids, np.concatenate([projected[a] for a in ASPECT_SPACES], axis=1)))
    return variants


def csfcube_results(encoder, objective: AspectContrastiveObjective | None, papers: Mapping[str, Paper],
                    csfcube_dir: str | Path, max_length: int) -> dict[str, dict]:
    """CSFCube's evaluator output for every embedding one model offers, each paper read at ``max_length`` tokens
    (the Benchmarks chapter's length, so a leaderboard row compares with its untrained row read the same way).

    The papers are embedded once; :func:`embedding_variants` gives the encoder alone (``"encoder"``), each aspect
    head (eq. 5.2; a page reads head *i* on CSFCube's facet *i*) and the concatenated heads (``"concat"``, eq.
    5.3). ``objective=None`` (the untrained encoder) gives ``"encoder"`` only. Each value is
    :func:`sdr.evaluate.csfcube.evaluate` with per-query scores (``return_per_query=True``), ready for
    :func:`sdr.book.csfcube_per_query`. The encoder's own ``max_length`` is restored afterwards.
    """
    from sdr.evaluate import csfcube

    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1:
        raise ValueError(f"csfcube_results: max_length must be a positive number of tokens, got {max_length!r}")
    ids = sorted(papers)
    if not ids:
        raise ValueError(f"csfcube_results: no CSFCube papers to embed (from {csfcube_dir})")
    previous, encoder.max_length = encoder.max_length, max_length
    try:
        vectors = encoder.encode_papers([papers[pid] for pid in ids], progress=False)
    finally:
        encoder.max_length = previous
    if objective is None:
        variants = {"encoder": dict(zip(ids, np.asarray(vectors, dtype=np.float32)))}
    else:
        variants = embedding_variants(objective, ids, vectors)
    return {name: csfcube.evaluate(csfcube_dir, embeddings=by_id, return_per_query=True)
            for name, by_id in variants.items()}


def violations(graph: CitationGraph, examples: Sequence[AspectExample], anchors: Iterable[str] = (),
               level: str = "l1") -> list[str]:
    """Every instance that breaks the thesis' rules, as messages (an empty list when all hold).

    Checked per instance, from the graph alone: each positive is linked to the anchor in the instance's
    aspect; each hard negative is linked (L1) or reached as a reference-of-reference (L2) in another
    aspect (L2: never in this one, and not a direct link), is not a positive candidate of the aspect and not
    one of ``anchors`` (pass the other anchors); the miscellaneous aspect has no hard negative; each easy
    negative is not linked to the anchor (L1, §5.3) and, at L2, not a reference-of-reference of it either
    (§5.5); a global negative (hybrid) is a reference-of-reference that is not a direct link, or an easy one
    that is neither (§5.1).
    """
    anchors = anchors if isinstance(anchors, (set, frozenset)) else set(anchors)
    problems = []
    local: dict[str, tuple] = {}  # an anchor's links, computed once for its instances of every aspect
    for e in examples:
        if e.query not in local:
            local = {e.query: (aspect_neighbours(graph, e.query), _second_hop_aspects(graph, e.query))}
        neighbours, second_hop = local[e.query]
        positive_candidates = {p for p, linked_in in neighbours.items() if e.aspect in linked_in}
        hard, easy = e.negatives[:e.n_hard], e.negatives[e.n_hard:]
        others = set(INTENTS) - {e.aspect}
        where = f"{e.aspect} instance of {e.query}"
        problems += [f"{where}: positive {p} not linked in {e.aspect}" for p in e.positives if p not in positive_candidates]
        if e.aspect == MISCELLANEOUS and hard:
            problems.append(f"{where}: hard negatives {hard} in the miscellaneous aspect")
        for n in hard:
            reached = neighbours.get(n, set()) if level == "l1" else second_hop.get(n, set())
            broken = not reached & others or n in positive_candidates or n in anchors or n == e.query
            if level == "l2":
                broken |= e.aspect in reached or n in neighbours
            if broken:
                problems.append(f"{where}: hard negative {n} breaks the {level} rule")
        problems += [f"{where}: easy negative {n} is linked to the anchor" for n in easy
                     if n == e.query or n in neighbours or (level == "l2" and n in second_hop)]
        problems += [f"{where}: global negative {n} is a direct link" for n in e.global_negatives
                     if n == e.query or n in neighbours]
        problems += [f"{where}: global hard negative {n} is no reference of a reference"
                     for n in e.global_negatives[:e.n_global_hard] if n not in second_hop]
        problems += [f"{where}: global easy negative {n} is a reference of a reference"
                     for n in e.global_negatives[e.n_global_hard:] if n in second_hop]
    return problems


SCIDOCS_WITHOUT_RECOMM = ("mag_f1", "mesh_f1", "coview_map", "coview_ndcg", "coread_map", "coread_ndcg",
                          "cite_map", "cite_ndcg", "cocite_map", "cocite_ndcg")
"""The ten SciDocs metrics other than the recommendations task (whose ranker the chapter trains only where its
``recommendations`` parameter says so): ``avg10`` compares every row, ours and the thesis'."""


SCIDOCS_PROXIMITY = SCIDOCS_WITHOUT_RECOMM[2:]
"""The eight ranking metrics of SciDocs (co-view, co-read, cite, co-cite; MAP and nDCG): the tasks whose relevance
follows citations and co-views, the signal SPECTERCL trains on."""


def average_without_recomm(table):
    """``avg10``: the mean of the ten SciDocs metrics other than recommendations, per row of a DataFrame."""
    return table[list(SCIDOCS_WITHOUT_RECOMM)].mean(axis=1, skipna=False)
