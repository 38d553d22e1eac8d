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

__all__ = ["ThesisData", "read_thesis_citations", "write_s2_citations_replica", "id_form", "id_aliases",
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
    """Read a ``s2_citations_thesis`` folder or one in its layout (:mod:`sdr.fetchers.semantic_scholar` writes the
    first, :mod:`sdr.fetchers.bulk` ``s2ag_bulk_thesis``, the chapter's route at ``paper``, with corpus ids as paper
    ids): the pages through :func:`sdr.corpus.read_s2_citations` (anchors' references and citations, and the
    references' own reference pages, so references-of-references are edges of the graph) and ``anchors.txt`` (one
    anchor id a line). Anchors with no link at all are counted and left out of :attr:`ThesisData.anchors`.

    Shown in: notebooks/sciaspect.ipynb, Data: a citation graph with intents.
    """
    folder = Path(folder)
    anchors_file = folder / "anchors.txt"
    if not anchors_file.exists():
        raise FileNotFoundError(f"{anchors_file}: not found; the thesis' citation folder {folder} must list its "
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


def _form_of(paper_id: str) -> str:
    return id_form([paper_id])


#: How a note names the ids of each S2 id space.
_ID_WORDS = {"S2 corpus id": "corpus ids", "S2 paper id": "S2 paper ids"}


def id_aliases(folder: str | Path) -> dict[str, str]:
    """Each paper of a thesis folder → its id in the other S2 id space, where its record carries one.

    The Graph API fetch (``s2_citations_thesis``) keys papers by 40-hex S2 paper ids: the alias is the corpus id
    (the anchors' ``externalIds.CorpusId`` in ``papers.jsonl``, and ``corpusId`` of every linked paper's page record:
    the fetch requests it, :data:`sdr.fetchers.semantic_scholar.LINK_FIELDS`; a graph fetched before it did has only
    the anchors'). The bulk route (``s2ag_bulk_thesis``) keys papers by corpus ids: the alias is ``paperSha``, the
    40-hex id parsed from the papers dataset's url (:func:`sdr.fetchers.bulk.sha_from_url`), on the anchors' records
    and the linked papers' alike. A record without one gets no alias (and the audit says how many papers that
    leaves uncompared)."""
    import json

    folder = Path(folder)
    aliases: dict[str, str] = {}

    def note(record: dict, corpus_id) -> None:
        paper_id = record.get("paperId")
        if not paper_id:
            return
        for alias in (record.get("paperSha"), corpus_id):
            if alias is not None and str(alias) != str(paper_id):
                aliases[str(paper_id)] = str(alias)

    papers = folder / "papers.jsonl"
    if papers.exists():
        for line in papers.read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.strip() else {}
            note(record, (record.get("externalIds") or {}).get("CorpusId"))
    for kind, role in (("references", "citedPaper"), ("citations", "citingPaper")):
        path = folder / f"{kind}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            for link in (json.loads(line).get("data") or []) if line.strip() else []:
                other = (link or {}).get(role) or {}
                note(other, other.get("corpusId"))
    return aliases


def remove_evaluation_papers(data: ThesisData, evaluation_sets: Mapping[str, Iterable[str]],
                             aliases: Mapping[str, str] | None = None, not_comparable: Mapping[str, str] | None = None):
    """Drop every paper of the evaluation sets from the training data, and count what each set removed.

    The thesis made sure "that there is no overlap between the training documents and the documents used to
    test" (§4.3); here the overlap is measured and filtered, never assumed: each evaluation paper found in the
    training graph leaves it with its edges (so it is no anchor, positive or negative). Ids are compared within one
    id space (:func:`id_form`): an evaluation id of the graph's kind as it is; one of another S2 kind through
    ``aliases`` (graph paper id → its id in the other S2 space, :func:`id_aliases`: corpus ids for the Graph API's
    40-hex ids, 40-hex ids for the bulk route's corpus ids), for the graph papers that have one — the row says how
    many that covers when not all. A set with no id of the graph's kind and no alias of its kind gets no count
    (NaN, "not comparable") instead of a false 0, and nothing is removed for it; so does a set named in
    ``not_comparable`` (set → why: e.g. the released data beside a synthetic graph, whose corpus ids name other
    papers).

    Returns ``(filtered ThesisData, table)``: one row per set with its size and id form, the papers it shares with
    the training graph, how many of those are anchors, and the edges that touch them.

    Shown in: notebooks/sciaspect.ipynb, Data: a citation graph with intents.
    """
    import pandas as pd

    nodes = data.graph.nodes
    training_form = id_form(nodes)
    anchors = set(data.anchors)
    known = {pid: str(alias) for pid, alias in (aliases or {}).items() if pid in nodes and str(alias) != pid}
    nan = float("nan")
    rows, removed = [], set()
    for name, ids in evaluation_sets.items():
        ids = {str(i) for i in ids}
        row = {"evaluation set": name, "papers": len(ids), "ids": id_form(ids)}
        if name in (not_comparable or {}):
            rows.append({**row, "in the training graph": nan, "of them anchors": nan, "edges touching them": nan,
                         "note": f"not comparable: {not_comparable[name]}"})
            continue
        same_kind = {i for i in ids if _form_of(i) == training_form} if training_form != "mixed" else set(ids)
        other_kinds = {_form_of(i) for i in ids - same_kind}
        through = {pid: alias for pid, alias in known.items() if _form_of(alias) in other_kinds}
        if not same_kind and not through:
            rows.append({**row, "in the training graph": nan, "of them anchors": nan, "edges touching them": nan,
                         "note": f"not comparable: the training graph's ids are of another kind ({training_form})"})
            continue
        shared = (same_kind & nodes) | {pid for pid, alias in through.items() if alias in ids}
        removed |= shared
        alias_forms = {_form_of(alias) for alias in through.values()}
        uncompared = {i for i in ids - same_kind if _form_of(i) not in alias_forms}
        partial_graph = bool(through) and len(through) < len(nodes)
        words = " and ".join(sorted(_ID_WORDS.get(form, form) for form in alias_forms))
        parts = []
        if through:
            parts.append(f"through the {words} of {len(through)} of the graph's {len(nodes)} papers (those the fetch "
                         f"gave one)" if partial_graph else f"through the {words} the fetch gave every paper of the graph")
        elif uncompared:
            parts.append(f"through its {len(same_kind)} ids of the graph's kind ({training_form})")
        if uncompared:
            parts.append(f"its {len(uncompared)} ids of a kind the graph has no alias of are not compared")
        note = (("partly comparable: " if partial_graph or uncompared else "compared ") + "; ".join(parts)) if parts \
            else ""
        if shared:
            note = f"{note}; removed from the training data" if note else "removed from the training data"
        rows.append({**row, "in the training graph": len(shared), "of them anchors": len(shared & anchors),
                     "edges touching them": sum(1 for c in data.graph if c.citing in shared or c.cited in shared),
                     "note": note})
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
