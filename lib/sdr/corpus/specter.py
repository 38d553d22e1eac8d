"""Readers of SPECTER-style training data: SPECTER's own layout (allenai/specter ``data/training``:
``data.json`` counts, ``metadata.json``, the id lists) and SciRepEval's SPECTER triplets (``query/pos/neg``
records, the ``cite_prediction`` config). They change with those layouts only.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from sdr.corpus.papers import CitationGraph, Paper
from sdr.corpus.report import ReadReport, _text
from sdr.jsonio import load_json, open_text, read_jsonl, require_file


# --- SPECTER (allenai/specter data/training and sample-metadata.json) -------------------------

SPECTER_DIRECT = 5  # data.json count for a direct citation (positive)
SPECTER_INDIRECT = 1  # count for a citation of a citation (hard negative candidate)


@dataclass
class SpecterTrainingData:
    """SPECTER's training inputs (``data/training`` of allenai/specter).

    ``graph`` holds the count-5 edges (the query cites the candidate), ``hard_candidates`` the
    count-1 candidates (cited by a paper the query cites), as SPECTER's
    ``create_training_files.py`` reads them.
    """

    papers: dict[str, Paper]
    graph: CitationGraph
    hard_candidates: dict[str, set[str]]
    splits: dict[str, list[str]]
    report: ReadReport
    queries: list[str] = field(default_factory=list)  # data.json keys, in file order

    @property
    def skipped(self) -> Counter:
        """Counted skips and oddities by reason (same as ``report.counts``)."""
        return self.report.counts


def _specter_paper(pid: str, record, path: Path, report: ReadReport) -> Paper:
    if not isinstance(record, dict):
        raise ValueError(f"{path}: record {pid!r}: expected an object with 'title' and 'abstract', "
                         f"got {type(record).__name__}")
    if "paper_id" in record and str(record["paper_id"]) != pid:
        report.note("paper_id_differs_from_key", pid)
    title, abstract = _text(record.get("title")), _text(record.get("abstract"))
    if not title:
        report.note("no_title", pid)
    if not abstract:
        report.note("no_abstract", pid)
    return Paper(paper_id=pid, title=title, abstract=abstract)


def read_specter_metadata(path: str | Path, ids_path: str | Path | None = None) -> tuple[dict[str, Paper], ReadReport]:
    """Read SPECTER metadata ``{pid: {"paper_id", "title", "abstract"}}`` (``sample-metadata.json``).

    With ``ids_path`` (e.g. ``sample.ids``, one id per line) the papers come back in that order;
    ids without metadata and metadata not listed are counted in the report.
    """
    path = Path(path)
    data = load_json(path, "SPECTER metadata {paper_id: {title, abstract}}")
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object {{paper_id: {{title, abstract}}}}, got {type(data).__name__}")
    report = ReadReport(source=str(path))
    papers: dict[str, Paper] = {}
    for pid, record in data.items():
        report.read += 1
        papers[str(pid)] = _specter_paper(str(pid), record, path, report)
    if ids_path is not None:
        ids_path = require_file(ids_path, "one paper id per line")
        ids = [line.strip() for line in ids_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not ids:
            raise ValueError(f"{ids_path}: empty file; expected one paper id per line")
        listed = set(ids)
        for pid in ids:
            if pid not in papers:
                report.note("ids_without_metadata", pid)
        for pid in papers:
            if pid not in listed:
                report.note("metadata_not_in_ids", pid)
        papers = {pid: papers[pid] for pid in dict.fromkeys(ids) if pid in papers}
    report.kept = len(papers)
    print(report.summary())
    return papers, report


def read_specter_training(directory: str | Path, require_metadata: bool = False,
                          progress: bool = True) -> SpecterTrainingData:
    """Read SPECTER's training directory: ``data.json``, ``metadata.json``, ``train/val/test.txt``.

    ``data.json`` is ``{query: {candidate: {"count": 5 | 1}}}``; any other count is an error naming
    the file and the record. Ids without metadata are counted (``ids_without_metadata``); their
    edges are kept unless ``require_metadata`` (then dropped and counted).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: directory not found; expected SPECTER's training layout "
                                "(data.json, metadata.json, train.txt, val.txt, test.txt)")
    data_path, metadata_path = directory / "data.json", directory / "metadata.json"
    data = load_json(data_path, "SPECTER citation data {query_id: {candidate_id: {'count': 5 or 1}}}")
    if not isinstance(data, dict) or not data:
        raise ValueError(f"{data_path}: expected a non-empty object {{query_id: {{candidate_id: {{'count': 5|1}}}}}}")
    metadata = load_json(metadata_path, "SPECTER metadata {paper_id: {title, abstract}}")
    if not isinstance(metadata, dict):
        raise ValueError(f"{metadata_path}: expected a JSON object {{paper_id: {{title, abstract}}}}")
    report = ReadReport(source=str(directory))
    papers = {str(pid): _specter_paper(str(pid), record, metadata_path, report) for pid, record in metadata.items()}

    graph = CitationGraph()
    hard_candidates: dict[str, set[str]] = {}
    missing: set[str] = set()
    for query, candidates in tqdm(data.items(), desc="data.json queries", disable=not progress):
        if not isinstance(candidates, dict):
            raise ValueError(f"{data_path}: record {query!r}: expected {{candidate_id: {{'count': 5|1}}}}, "
                             f"got {type(candidates).__name__}")
        for candidate, value in candidates.items():
            report.read += 1
            count = value.get("count") if isinstance(value, dict) else None
            if count not in (SPECTER_DIRECT, SPECTER_INDIRECT) or isinstance(count, bool):
                raise ValueError(
                    f"{data_path}: record {query!r} -> {candidate!r}: count {count!r}; expected "
                    f"{SPECTER_DIRECT} (direct citation) or {SPECTER_INDIRECT} (citation of a citation)"
                )
            if query == candidate:
                report.note("self_edges", query)
            unknown = [pid for pid in (query, candidate) if pid not in papers]
            for pid in unknown:
                if pid not in missing:
                    missing.add(pid)
                    report.note("ids_without_metadata", pid)
            if unknown and require_metadata:
                report.note("edges_dropped_without_metadata", f"{query}->{candidate}")
                continue
            if count == SPECTER_DIRECT:
                graph.add(query, candidate)
            else:
                hard_candidates.setdefault(query, set()).add(candidate)
            report.kept += 1
    report.counts["direct_edges"] = len(graph)
    report.counts["hard_candidate_edges"] = sum(len(c) for c in hard_candidates.values())

    splits: dict[str, list[str]] = {}
    for split in ("train", "val", "test"):
        split_path = directory / f"{split}.txt"
        if not split_path.is_file():
            report.note("missing_split_files", split_path.name)
            continue
        ids = [line.strip() for line in split_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for pid in ids:
            if pid not in data:
                report.note("split_ids_not_in_data", f"{split}:{pid}")
        splits[split] = ids
    print(report.summary())
    return SpecterTrainingData(papers=papers, graph=graph, hard_candidates=hard_candidates, splits=splits,
                               report=report, queries=[str(q) for q in data])


# --- SciRepEval SPECTER-style triplets (training/sample_data/specter_small.json) ----------------

TRIPLET_ROLES = ("query", "pos", "neg")


def _triplet_paper_id(record: dict, id_field: str) -> str | None:
    for key in (id_field, "corpus_id", "sha", "paper_id", "doc_id"):
        value = record.get(key)
        if value not in (None, ""):
            return str(value)
    return None


def read_scirepeval_triplets(
    path: str | Path, id_field: str = "corpus_id", require_abstract: bool = False, progress: bool = False,
) -> tuple[list[tuple[Paper, Paper, Paper]], ReadReport]:
    """Read SciRepEval/SPECTER triplets ``[{"query", "pos", "neg"}]`` (JSON list or JSONL).

    Each side is ``{sha, corpus_id, title, abstract}``; papers are keyed by ``id_field``
    (``corpus_id``, falling back to ``sha``) and shared between triplets. Missing abstracts
    (``null``) are counted; with ``require_abstract`` their triplets are skipped and counted.
    """
    path = require_file(path, "SciRepEval triplets [{'query', 'pos', 'neg'}]")
    what = "triplet {'query': {...}, 'pos': {...}, 'neg': {...}} with title/abstract/corpus_id or sha"
    with open_text(path) as handle:
        head = handle.read(4096).lstrip()
    if not head:
        raise ValueError(f"{path}: empty file; expected {what}")
    if head.startswith("["):
        data = load_json(path, f"a JSON list of {what}")
        records = ((index, record) for index, record in enumerate(data))
        where = "record"
    else:
        records = read_jsonl(path, what, progress=progress)
        where = "line"
    report = ReadReport(source=str(path))
    papers: dict[str, Paper] = {}
    triplets: list[tuple[Paper, Paper, Paper]] = []
    for position, record in records:
        report.read += 1
        location = f"{path}:{position}" if where == "line" else f"{path}: record {position}"
        if not isinstance(record, dict) or any(not isinstance(record.get(role), dict) for role in TRIPLET_ROLES):
            got = sorted(record) if isinstance(record, dict) else type(record).__name__
            raise ValueError(f"{location}: expected {what}; got {got}")
        sides = []
        for role in TRIPLET_ROLES:
            side = record[role]
            pid = _triplet_paper_id(side, id_field)
            if pid is None:
                raise ValueError(f"{location}: {role!r} has no id ({id_field!r}, 'corpus_id' or 'sha')")
            if pid not in papers:
                title, abstract = _text(side.get("title")), _text(side.get("abstract"))
                if not title:
                    report.note("papers_without_title", pid)
                if not abstract:
                    report.note("papers_without_abstract", pid)
                metadata = {key: side[key] for key in ("sha", "corpus_id") if side.get(key) is not None}
                papers[pid] = Paper(paper_id=pid, title=title, abstract=abstract, metadata=metadata)
            sides.append(papers[pid])
        if require_abstract and any(not paper.abstract for paper in sides):
            report.note("triplets_skipped_without_abstract", position)
            continue
        if sides[0].paper_id == sides[1].paper_id or sides[1].paper_id == sides[2].paper_id:
            report.note("triplets_with_repeated_paper", position)
        triplets.append(tuple(sides))
    if report.read == 0:
        raise ValueError(f"{path}: no triplets; expected {what}")
    report.kept = len(triplets)
    report.counts["distinct_papers"] = len(papers)
    print(report.summary())
    return triplets, report
