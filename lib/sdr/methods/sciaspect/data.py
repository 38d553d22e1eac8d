"""The thesis' data (Bansal, *Scientific Document Representation Learning*, §4.3) and its evaluation sets' papers.

The local citation graph of each anchor with the intents Semantic Scholar assigns to every link
(:func:`read_thesis_citations`; its replica, :func:`write_s2_citations_replica`), the evaluation papers removed
from it and counted (:func:`remove_evaluation_papers`), the papers MDCR and SciRepEval embed, and the column of
Table 6.11 one SciRepEval run gives (:func:`table_6_11_rows`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdr.corpus import CitationGraph, Paper, ReadReport, read_s2_citations

__all__ = ["ThesisData", "read_thesis_citations", "write_s2_citations_replica", "id_form", "corpus_id_aliases",
           "remove_evaluation_papers",
           "read_mdcr_papers", "scirepeval_papers", "TABLE_6_11_SCIDOCS", "TABLE_6_11_REGRESSION", "TASKS_COUNTED",
           "table_6_11_rows"]

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
    line). Anchors with no link at all are counted and left out of :attr:`ThesisData.anchors`.

    Shown in: notebooks/sciaspect.ipynb, Data: a citation graph with intents.
    """
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


def corpus_id_aliases(folder: str | Path) -> dict[str, str]:
    """S2 paper id → S2 corpus id of every paper of a ``s2_citations_thesis`` folder whose record carries one: the
    anchors (``papers.jsonl``, ``externalIds.CorpusId`` of ``/paper/batch``) and every linked paper whose page record
    has ``corpusId`` (the fetch requests it, :data:`sdr.fetchers.semantic_scholar.LINK_FIELDS`; a graph fetched before
    it did has only the anchors', and the overlap rows then say how many of the graph's papers were comparable)."""
    import json

    folder = Path(folder)
    aliases: dict[str, str] = {}
    papers = folder / "papers.jsonl"
    if papers.exists():
        for line in papers.read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.strip() else {}
            corpus_id = (record.get("externalIds") or {}).get("CorpusId")
            if record.get("paperId") and corpus_id is not None:
                aliases[str(record["paperId"])] = str(corpus_id)
    for kind, role in (("references", "citedPaper"), ("citations", "citingPaper")):
        path = folder / f"{kind}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            for link in (json.loads(line).get("data") or []) if line.strip() else []:
                other = (link or {}).get(role) or {}
                if other.get("paperId") and other.get("corpusId") is not None:
                    aliases[str(other["paperId"])] = str(other["corpusId"])
    return aliases


def remove_evaluation_papers(data: ThesisData, evaluation_sets: Mapping[str, Iterable[str]],
                             aliases: Mapping[str, str] | None = None):
    """Drop every paper of the evaluation sets from the training data, and count what each set removed.

    The thesis made sure "that there is no overlap between the training documents and the documents used to
    test" (§4.3); here the overlap is measured and filtered, never assumed: each evaluation paper found in the
    training graph leaves it with its edges (so it is no anchor, positive or negative). Ids are compared within one
    id space (:func:`id_form`). A set keyed by S2 corpus ids, beside a graph of paper ids, is compared through
    ``aliases`` (paper id → corpus id, :func:`corpus_id_aliases`) for the papers that have one, and the row says how
    many of the graph's papers that covers; a set in another space with no alias gets no count (NaN, "not
    comparable") instead of a false 0, and nothing is removed for it.

    Returns ``(filtered ThesisData, table)``: one row per set with its size and id form, the papers it shares with
    the training graph, how many of those are anchors, and the edges that touch them.

    Shown in: notebooks/sciaspect.ipynb, Data: a citation graph with intents.
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
        known = {pid: cid for pid, cid in (aliases or {}).items() if pid in nodes}
        if (form != training_form or form == "mixed") and known and form in ("S2 corpus id", "mixed"):
            shared = {pid for pid, cid in known.items() if cid in ids}
            removed |= shared
            rows.append({**row, "in the training graph": len(shared), "of them anchors": len(shared & anchors),
                         "edges touching them": sum(1 for c in data.graph if c.citing in shared or c.cited in shared),
                         "note": f"partly comparable: through the corpus ids of {len(known)} of the graph's "
                                 f"{len(nodes)} papers (those the fetch gave one)"
                                 + ("; removed from the training data" if shared else "")})
            continue
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


#: Table 6.11's regression rows recovered by their average (data/paper_tables/thesis_scirepeval.csv) ← SciRepEval task.
TABLE_6_11_REGRESSION = {"Review Score [RGN]": "Peer Review Score", "Max hIndex [RGN]": "Max hIndex",
                         "Tweet Mentions [RGN]": "Tweet Mentions", "Citation Count [RGN]": "Citation Count",
                         "Publication Year [RGN]": "Publication Year"}
#: The rows of our columns that say how many tasks each average counted (the thesis prints none: its 17
#: non-SciDocs tasks, 6 in-task and 11 out-of-task, are read from its averages).
TASKS_COUNTED = {"tasks counted: in-task": "in_train", "tasks counted: out-of-task": "out_of_train",
                 "tasks counted: SciDocs": "scidocs"}


def table_6_11_rows(result: Mapping) -> dict[str, float]:
    """One model's column of Table 6.11 from :func:`sdr.evaluate.scirepeval.evaluate`'s output: the ten SciDocs
    rows, the five regression tasks (:data:`TABLE_6_11_REGRESSION`), the format averages without SciDocs,
    Out-of-/In-task, SciDocs, All and "Avg without SciDocs" (the mean of the non-SciDocs tasks' scores; the thesis'
    values are that mean over its 17 tasks), and how many tasks each group counted (:data:`TASKS_COUNTED`). A row
    whose tasks did not run is NaN.

    Shown in: notebooks/sciaspect.ipynb, SciRepEval: Table 6.11.
    """
    from sdr.evaluate import scirepeval

    nan = float("nan")
    tasks = result["tasks"]
    rows: dict[str, float] = {}
    for (task, metric), label in TABLE_6_11_SCIDOCS.items():
        metrics = tasks.get(task, {}).get("metrics", {})
        value = next(iter(metrics.values()), nan) if metric is None else metrics.get(metric, nan)
        rows[label] = float(value)
    for label, task in TABLE_6_11_REGRESSION.items():
        rows[label] = scirepeval.task_score(tasks[task]) if task in tasks else nan
    aggregates = result["aggregates"]
    for fmt, label in (("CLF", "CLF Avg"), ("RGN", "REG Avg"), ("PRX", "PRX Avg"), ("QRY", "QRY Avg")):
        value = aggregates["formats"].get(fmt)
        rows[f"{label} (excluding SciDocs)"] = nan if value is None else float(value)
    for key, label in (("out_of_train", "Out of task Avg"), ("in_train", "In task Avg"), ("scidocs", "SciDocs Avg"),
                       ("all", "All avg")):
        rows[label] = nan if aggregates[key] is None else float(aggregates[key])
    others = [scirepeval.task_score(r) for r in tasks.values() if r["group"] != "scidocs"]
    rows["Avg without SciDocs"] = float(np.mean(others)) if others else nan
    for label, group in TASKS_COUNTED.items():
        rows[label] = float(aggregates["tasks_counted"][group])
    return rows
