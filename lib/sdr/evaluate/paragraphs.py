"""Full-text paragraph retrieval (CoSaEmb, Singh & Singh, §5 and Table 6).

"A section embedding is used as a query and embeddings from a candidate set are retrieved based on
Euclidean distance. The candidate set is composed of other section texts from the same paper as well
as other papers. We evaluate if [the] embeddings retrieve other section texts from the same paper."

Recall@k here is the fraction of queries with at least one chunk of the same paper among their k
nearest other chunks (the query itself excluded). The paper gives no code; this reading is the one
consistent with its numbers (Recall@1 of 74.7 for SPECTER would be impossible if Recall@k were the
share of *all* same-paper chunks found, since papers have several sections). Queries whose paper has
no other chunk cannot succeed and are excluded and counted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from sdr.jsonio import InputError, read_jsonl, record_id
from sdr.corpus import Paper
from sdr.evaluate.embeddings import MissingEmbeddings, read_embeddings
from sdr.evaluate.ranking import l2_distances

DEFAULT_KS = (1, 3)


@dataclass(frozen=True)
class Chunk:
    """A retrievable piece of full text: its id, the paper it belongs to, and the text."""

    id: str
    paper_id: str
    text: str = ""
    section: str = ""


def chunks_from_papers(papers: Iterable[Paper], min_chars: int = 1) -> list[Chunk]:
    """One chunk per non-empty section (``<paper_id>#<section index>``), as CoSaEmb's section texts."""
    chunks = []
    for paper in papers:
        for index, section in enumerate(paper.sections):
            text = section.text.strip()
            if len(text) >= min_chars:
                chunks.append(Chunk(f"{paper.paper_id}#{index}", paper.paper_id, text, section.heading))
    return chunks


def write_s2orc_chunks(s2orc_dir: str | Path, path: str | Path, n_papers: int | None = None, seed: int = 0,
                       exclude_ids: Iterable[str] = ()) -> Path:
    """Section chunks of real S2ORC full text (``metadata/*.jsonl`` + ``pdf_parses/*.jsonl``): ``n_papers`` papers
    with at least two sections, drawn at random (all when None), ``exclude_ids`` left out (e.g. training papers)."""
    from sdr.corpus import read_s2orc_metadata, read_s2orc_pdf_parses

    s2orc_dir = Path(s2orc_dir)
    papers: dict[str, Paper] = {}
    for metadata in sorted((s2orc_dir / "metadata").glob("*.jsonl")):
        papers.update(read_s2orc_metadata(metadata, progress=False)[0])
    for parses in sorted((s2orc_dir / "pdf_parses").glob("*.jsonl")):
        read_s2orc_pdf_parses(parses, papers, progress=False)
    excluded = set(map(str, exclude_ids))
    eligible = sorted(pid for pid, paper in papers.items() if len(paper.sections) >= 2 and pid not in excluded)
    if not eligible:
        raise ValueError(f"{s2orc_dir}: no paper with two or more sections (after excluding {len(excluded)} ids)")
    if n_papers is not None and n_papers < len(eligible):
        picks = np.random.default_rng(seed).choice(len(eligible), size=n_papers, replace=False)
        eligible = sorted(eligible[i] for i in picks)
    chunks = chunks_from_papers(papers[pid] for pid in eligible)
    write_chunks(path, chunks)
    print(f"paragraph set {path}: {len(chunks)} section chunks of {len(eligible)} S2ORC papers ({s2orc_dir})")
    return Path(path)


def read_chunks(path: str | Path) -> list[Chunk]:
    """JSONL ``{"id", "paper_id"[, "text", "section"]}`` → chunks (duplicate ids are an error)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: file not found")
    chunks, seen = [], set()
    for line_number, record in read_jsonl(path, "chunks JSONL {'id', 'paper_id', 'text'}", allow_empty=False,
                                          finite=True):
        where = f"{path}:{line_number}"
        if "id" not in record or "paper_id" not in record:
            raise InputError(f"{where}: found keys {sorted(record)}; expected keys 'id' and 'paper_id'")
        key = record_id(record["id"], "id", where)
        if key in seen:
            raise InputError(f"{where}: duplicate chunk id {key!r}; expected each id once")
        seen.add(key)
        text, section = record.get("text", ""), record.get("section", "")
        if not isinstance(text, str) or not isinstance(section, str):
            raise InputError(f"{where}: 'text' and 'section' must be strings; found "
                             f"{type(text).__name__}, {type(section).__name__}")
        chunks.append(Chunk(key, record_id(record["paper_id"], "paper_id", where), text, section))
    if not chunks:
        raise InputError(f"{path}: no chunks in file; expected {{'id', 'paper_id'}} lines")
    return chunks


def write_chunks(path: str | Path, chunks: Sequence[Chunk]) -> Path:
    """Write chunks as the JSONL :func:`read_chunks` reads."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for c in chunks:
            handle.write(json.dumps({"id": c.id, "paper_id": c.paper_id, "section": c.section, "text": c.text}) + "\n")
    return path


def evaluate(
    embeddings: np.ndarray | Mapping[str, np.ndarray],
    chunks: Sequence[Chunk] | Sequence[str],
    ks: Sequence[int] = DEFAULT_KS,
    block_size: int = 1024,
    progress: bool = False,
    per_query: bool = False,
) -> dict:
    """Recall@k of same-paper chunks: ``{"recall@1", "recall@3", "report": {...}}`` (fractions).

    ``embeddings`` is an ``[n, d]`` array aligned with ``chunks`` (``Chunk`` objects or their paper
    ids), or ``{chunk_id: vector}`` with ``Chunk`` objects (chunks without a vector are reported and
    left out). Distances are computed in blocks of queries; ties keep the input order.
    ``per_query`` adds ``"per_query": {"recall@k": {query: 0 or 1}}``, keyed by the query's chunk id
    (its position, as a string, when ``chunks`` are paper ids): each Recall@k is their mean, so two
    systems can be compared query by query (:func:`sdr.stats.paired_bootstrap`).
    """
    missing = MissingEmbeddings("paragraphs")
    if isinstance(embeddings, Mapping):
        if not chunks or not isinstance(chunks[0], Chunk):
            raise ValueError("paragraphs: embeddings given by id need Chunk objects (with ids)")
        found = set(missing.check([c.id for c in chunks], embeddings))
        kept = [c for c in chunks if c.id in found]
        vectors = np.stack([embeddings[c.id] for c in kept]) if kept else np.zeros((0, 1))
        paper_ids = [c.paper_id for c in kept]
        query_ids = [c.id for c in kept]
        missing.warn()
    else:
        vectors = np.asarray(embeddings)
        paper_ids = [c.paper_id if isinstance(c, Chunk) else str(c) for c in chunks]
        if vectors.ndim != 2 or len(vectors) != len(paper_ids):
            raise ValueError(f"paragraphs: {len(vectors)} embeddings for {len(paper_ids)} chunks")
        query_ids = [c.id if isinstance(c, Chunk) else str(i) for i, c in enumerate(chunks)]
    if per_query and len(set(query_ids)) != len(query_ids):
        repeated = sorted(i for i, n in Counter(query_ids).items() if n > 1)
        raise ValueError(f"paragraphs: per-query hits need distinct chunk ids; repeated: {repeated[:5]}")
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValueError(f"paragraphs: ks must be positive integers, got {ks}")
    papers = np.unique(paper_ids, return_inverse=True)[1]
    sizes = Counter(papers.tolist())
    queries = np.array([i for i in range(len(papers)) if sizes[papers[i]] > 1], dtype=np.int64)
    if not len(queries):
        raise ValueError("paragraphs: no paper has two chunks; nothing can be retrieved")
    depth = min(max(ks), len(papers) - 1)
    hits = {k: 0 for k in ks}
    found = {k: {} for k in ks}  # query id → 0/1, only filled with per_query
    for start in tqdm(range(0, len(queries), block_size), desc="paragraph retrieval", disable=not progress):
        block = queries[start : start + block_size]
        distances = l2_distances(vectors[block], vectors)
        distances[np.arange(len(block)), block] = np.inf  # never retrieve the query itself
        nearest = np.argsort(distances, axis=1, kind="stable")[:, :depth]
        same = papers[nearest] == papers[block][:, None]
        for k in ks:
            hit = np.any(same[:, :k], axis=1)
            hits[k] += int(hit.sum())
            if per_query:
                found[k].update((query_ids[q], int(h)) for q, h in zip(block.tolist(), hit.tolist()))
    result = {f"recall@{k}": hits[k] / len(queries) for k in ks}
    result["report"] = {
        "chunks": len(papers),
        "papers": len(sizes),
        "queries": int(len(queries)),
        "excluded_single_chunk_papers": int(sum(1 for n in sizes.values() if n == 1)),
        "missing_embeddings": missing.report(),
    }
    if per_query:
        result["per_query"] = {f"recall@{k}": found[k] for k in ks}
    return result


def add_arguments(parser) -> None:
    """Options of ``sdr evaluate paragraphs``."""
    parser.add_argument("--chunks", required=True, help='JSONL {"id", "paper_id"} (one line per chunk)')
    parser.add_argument("--embeddings", required=True, help="embeddings JSONL keyed by chunk id")
    parser.add_argument("--k", type=int, nargs="+", default=list(DEFAULT_KS), help="cut-offs (default 1 3)")


def run(args) -> dict:
    """``sdr evaluate paragraphs --chunks C --embeddings E`` → ``{"recall@1", "recall@3", "report"}``."""
    return evaluate(read_embeddings(args.embeddings), read_chunks(args.chunks), ks=args.k)
