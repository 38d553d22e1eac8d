"""The CoSaEmb chapter's scoring steps, one call each: paragraph retrieval (Table 6), CSFCube (Table 4) with the
leaderboard seeds, SciRepEval (Table 5), the page's record in the results store and its findings.

As in :mod:`.chapter`, each step takes the chapter's :class:`sdr.book.ChapterRun` and returns what the page shows;
invariants are checked where the values are produced and raise :class:`sdr.book.ChapterCheckFailed`; where the data
came from (real, official, replica) is decided here, never on the page. Shown in: notebooks/cosaemb.ipynb.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed
from sdr.corpus import Paper
from sdr.methods.cosaemb.chapter import (CONTROL, GRADED, CoSaEmbTriplets, Counts, DistanceOrder, Headings, HeldOut,
                                         MarginRuns, TrainingSource, heldout_gain, retrain)
from sdr.methods.cosaemb.chunking import Chunker
from sdr.methods.cosaemb.fidelity import paired_table
from sdr.methods.cosaemb.recipe import ASPECT_TOKENS, MARGIN_RUNS, aspect_paragraphs, facet_query_text

__all__ = ["Released", "released_specter", "Paragraphs", "paragraph_table", "PaperReader", "CSFCubeScores",
           "csfcube_table", "csfcube_figure", "SeedRows", "seed_rows", "SciRepEvalScores", "scirepeval_table",
           "leaderboard", "store", "findings"]


# ------------------------------------------------------------------------------------------------- paragraphs
@dataclass
class Released:
    """The released SPECTER (Table 6's SPECTER row) when ``specter_model`` names it, and the line naming it."""

    encoders: dict = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)


def released_specter(run) -> Released:
    """The released SPECTER named by ``specter_model`` ([CLS] as SPECTER was trained, cut like the base model), or
    nothing when it is empty (smoke and real run offline)."""
    p = run.p
    if not p.specter_model:
        return Released()
    encoder = run.encoder(name=p.specter_model, pooling="cls", max_length=p.max_length)
    run.branch("released SPECTER scored beside")
    return Released({"SPECTER": encoder}, run.data.model_sources or [f"SPECTER: {p.specter_model} (released)"])


@dataclass
class Paragraphs:
    """Paragraph retrieval (Table 6): our Recall@k, the paper's rows above ours, the evaluator's report, the line
    naming the set (``source``, stored with the chapter's data) and the lines its caption adds."""

    ours: pd.DataFrame
    paper: pd.DataFrame
    table: pd.DataFrame
    report: dict
    source: str
    sources: list[str]
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)  # our rows beside the paper's (fidelity.pair_rows)
    #: ``{model: {query chunk id: 0 or 100}}``: each query's Recall@1 in points, the same queries for every model
    per_query: dict = field(default_factory=dict)

    def describe(self) -> str:
        r = self.report
        return (f"{r['chunks']} aspect texts of {r['papers']} papers, {r['queries']} queries "
                f"({r['excluded_single_chunk_papers']} single-text papers excluded)")

    def compare(self, system: str, reference: str, system_label: str, reference_label: str,
                seed: int = 0) -> tuple[str, str]:
        """``system`` against ``reference`` on Recall@1 (points), with a paired bootstrap interval over the
        queries (one trained model each, so conditional on those models): ``(direction, sentence)``
        (:func:`sdr.stats.direction`, :func:`sdr.stats.verdict`)."""
        from sdr.stats import direction, paired_bootstrap, verdict

        missing = [name for name in (system, reference) if name not in self.per_query]
        if missing:
            raise ChapterCheckFailed(f"paragraph retrieval: no per-query Recall@1 kept for {missing}")
        result = paired_bootstrap(self.per_query[system], self.per_query[reference], seed=seed)
        what = (f"Recall@1, paired bootstrap over the {result['queries']} paragraph queries, one trained model each: "
                "conditional on those models")
        return direction(result), verdict(system_label, reference_label, result, unit=" points", resampled=what)

    def gains_line(self) -> str:
        gains = self.ours.drop(index="untrained")["recall@1"] - self.ours.loc["untrained", "recall@1"]
        return f"Recall@1 gain over the untrained encoder (points): {gains.round(2).to_dict()}"


def paragraph_table(run, inputs, source: TrainingSource, split: HeldOut, models: Mapping,
                    released: Released) -> Paragraphs:
    """Each aspect text of the held-out papers is a query, the aspect texts of all of them the candidates, ranked by
    Euclidean distance (:mod:`sdr.evaluate.paragraphs`); our encoders read ``<aspect token> text``, the released
    SPECTER the plain text. Checks: every paper row of ``data/paper_tables/cosaemb_paragraphs.csv`` and every model
    in the table, scores in [0, 100], Recall@3 ≥ Recall@1, and queries = texts − texts of single-text papers > 0.
    Shown in: notebooks/cosaemb.ipynb, "Paragraph retrieval (Table 6 set-up)"."""
    from sdr.evaluate import paragraphs

    p = run.p
    chunks = aspect_paragraphs(source.papers[pid] for pid in split.papers)
    ours_texts = [f"{ASPECT_TOKENS[c.section]} {c.text}" for c in chunks]
    scores = {name: paragraphs.evaluate(encoder.encode_texts(
                  [c.text for c in chunks] if name == "SPECTER" else ours_texts,
                  batch_size=p.eval_batch_size, progress=False), chunks, per_query=True)
              for name, encoder in models.items()}
    ours = pd.DataFrame({name: {"recall@1": 100 * r["recall@1"], "recall@3": 100 * r["recall@3"]}
                         for name, r in scores.items()}).T
    paper = book.read_paper_table("cosaemb_paragraphs")
    table = book.paper_vs_ours(ours, paper, ["recall@1", "recall@3"], f"this book ({run.profile})")
    report = next(iter(scores.values()))["report"]
    if len(table) != len(paper) + len(models):
        raise ChapterCheckFailed(f"the paragraph table has {len(table)} rows, not the paper's {len(paper)} and our "
                                 f"{len(models)}")
    if not (((ours >= 0) & (ours <= 100)).all().all() and (ours["recall@3"] >= ours["recall@1"]).all()):
        raise ChapterCheckFailed(f"Recall@k outside [0, 100] or Recall@3 below Recall@1:\n{ours}")
    if not report["queries"] == report["chunks"] - report["excluded_single_chunk_papers"] > 0:
        raise ChapterCheckFailed(f"paragraph queries do not add up: {report}")
    line = (f"paragraphs: the aspect texts of {len(split.papers)} held-out papers of the {inputs.full_text.kind} "
            f"full text ({report['chunks']} texts)")
    pairs = paired_table(run, inputs, "cosaemb_paragraphs", ours, paper, ["recall@1", "recall@3"])
    per_query = {name: {query: 100 * hit for query, hit in r["per_query"]["recall@1"].items()}
                 for name, r in scores.items()}
    return Paragraphs(ours, paper, table, report, line, [*released.sources, line, "CoSaEmb Table 6 (paper rows)"],
                      pairs, per_query)


# ------------------------------------------------------------------------------------------------- CSFCube, SciRepEval
@dataclass
class PaperReader:
    """How each model reads a paper on CSFCube and SciRepEval: the released SPECTER ``title [SEP] abstract``, our
    encoders ``[TTL] title [SEP] [ABS] abstract`` (a CSFCube query puts the facet's tokens where ``[ABS]`` stands),
    all cut at ``csfcube_max_length`` tokens."""

    chunker: Chunker
    sep: str
    length: int
    batch_size: int

    def encode(self, encoder, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` cut at ``length`` tokens (the encoder's own limit restored after)."""
        encoder.max_length, kept = self.length, encoder.max_length
        try:
            return encoder.encode_texts(texts, batch_size=self.batch_size, progress=False)
        finally:
            encoder.max_length = kept

    def abstracts(self, name: str, encoder, papers: Sequence[Paper]) -> np.ndarray:
        return self.encode(encoder, [encoder.paper_text(paper) if name == "SPECTER" else
                                     self.chunker.abstract_text(paper) for paper in papers])

    def facet_queries(self, name: str, encoder, papers: Mapping[str, Paper], keys) -> np.ndarray:
        return self.encode(encoder, [encoder.paper_text(papers[q]) if name == "SPECTER" else
                                     facet_query_text(papers[q], facet, self.sep) for q, facet in keys])


@dataclass
class CSFCubeScores:
    """CSFCube (Table 4): the evaluator's results per system, our columns, the paper's rows above ours, and the
    lines its caption adds to the chapter's data."""

    results: dict
    ours: pd.DataFrame
    table: pd.DataFrame
    papers: dict
    query_keys: list
    reader: PaperReader
    sources: list[str]
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)  # our rows beside the paper's (fidelity.pair_rows)

    def vectors(self, name: str, encoder) -> dict:
        """CSFCube vectors of model ``name`` read by ``encoder``: every candidate and every (query, facet)."""
        ids = sorted(self.papers)
        vectors = dict(zip(ids, self.reader.abstracts(name, encoder, [self.papers[p] for p in ids])))
        queries = self.reader.facet_queries(name, encoder, self.papers, self.query_keys)
        vectors.update({f"{q}_{facet}": v for (q, facet), v in zip(self.query_keys, queries)})
        return vectors


def _csfcube_system(name: str, margin_runs: Sequence[str]) -> str:
    return f"CoSaEmb recipe: {name}" if name in margin_runs else name


def csfcube_table(run, inputs, models: Mapping, reader: PaperReader, released: Released) -> CSFCubeScores:
    """Score the models ``csfcube_models`` names on CSFCube's test folds (the official ``ranking_eval.py``
    semantics, L2 ranking), with the official SPECTER rankings first where the real collection is read. Checks:
    the paper's rows and ours all in the table, scores in [0, 100], no missing embedding, and on the released
    bytes (the registry's digests) the official rankings' published MAP 0.3423 and NDCG%20 0.5328 over 50 queries.
    Shown in: notebooks/cosaemb.ipynb, "CSFCube (Table 4)"."""
    from sdr.evaluate import csfcube

    p = run.p
    folder = inputs.csfcube.path
    papers = csfcube.read_csfcube_papers(folder)
    keys = [(q, facet) for facet in csfcube.FACETS for q in csfcube.read_annotations(folder, facet)]
    scores = CSFCubeScores({}, pd.DataFrame(), pd.DataFrame(), papers, keys, reader,
                           [*released.sources, "CoSaEmb Table 4 (paper rows)"])
    if inputs.csfcube.real:  # the SPECTER rankings ship with the real collection
        scores.results["SPECTER (official rankings)"] = csfcube.evaluate(
            folder, rankings_dir=folder / "eval_scripts" / "sample_ranked_pools", name="specter")
    for name in p.csfcube_models:
        if name not in models:
            print(f"{name}: not trained or loaded at this profile, not scored")
            continue
        scores.results[_csfcube_system(name, p.margin_runs)] = csfcube.evaluate(
            folder, embeddings=scores.vectors(name, models[name]), return_per_query=True)
    test = csfcube.results_table(scores.results, "test")
    columns = {f"{facet}_{metric}": (facet, metric) for facet in (*csfcube.FACETS, csfcube.AGGREGATE)
               for metric in ("rp", "p@20", "r@20", "ndcg%20")}
    scores.ours = pd.DataFrame({system: {column: 100 * test.loc[(system, facet), metric]
                                         for column, (facet, metric) in columns.items()}
                                for system in scores.results}).T
    paper = book.read_paper_table("cosaemb_csfcube")
    scores.table = book.paper_vs_ours(scores.ours, paper, list(columns), f"this book ({run.profile})")
    scores.pairs = paired_table(run, inputs, "cosaemb_csfcube", scores.ours, paper, ["all_rp", "all_ndcg%20"])
    if len(scores.table) != len(paper) + len(scores.results):
        raise ChapterCheckFailed(f"the CSFCube table has {len(scores.table)} rows, not the paper's {len(paper)} and "
                                 f"our {len(scores.results)}")
    if not ((scores.ours >= 0) & (scores.ours <= 100)).all().all():
        raise ChapterCheckFailed(f"CSFCube scores outside [0, 100]:\n{scores.ours}")
    missing = {name: r["report"]["missing_embeddings"]["count"] for name, r in scores.results.items()
               if name != "SPECTER (official rankings)" and r["report"]["missing_embeddings"]["count"]}
    if missing:
        raise ChapterCheckFailed(f"CSFCube papers without an embedding: {missing}")
    if inputs.csfcube.official:  # the released bytes: the harness is the official evaluator
        official = scores.results["SPECTER (official rankings)"]
        found = (round(official["test"]["all"]["map"], 4), round(official["test"]["all"]["ndcg%20"], 4),
                 official["report"]["queries"])
        if found != (0.3423, 0.5328, 50):
            raise ChapterCheckFailed(f"the official SPECTER rankings score MAP, NDCG%20, queries {found}, not the "
                                     "published 0.3423, 0.5328 over 50 queries")
    return scores


def csfcube_figure(run, table: pd.DataFrame, source: str):
    """RP and NDCG%20 per facet of every system of a CSFCube paper-vs-ours table, ours and the paper's Table 4.
    Shown in: notebooks/cosaemb.ipynb, "CSFCube (Table 4)"."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    long = table.melt(id_vars=["reported by", "model"], var_name="column", value_name="score").dropna()
    long[["facet", "metric"]] = long["column"].str.split("_", n=1, expand=True)
    long["system"] = long["model"] + " · " + long["reported by"].str.replace("CoSaEmb, Table 4", "paper")
    grid = sns.catplot(data=long[long["metric"].isin(["rp", "ndcg%20"])], kind="bar", x="score", y="system",
                       hue="facet", col="metric", height=max(3.5, 0.45 * len(table)), aspect=1.3, sharex=False)
    grid.set_titles("{col_name}")  # short panel titles: "metric = ndcg%20" overlapped its neighbour
    grid.set_axis_labels("score (× 100, test)", "")
    grid.figure.suptitle(f"CSFCube — {book.caption(run.profile, [source])}", y=1.03, fontsize=9)
    plt.show()
    return long


# ------------------------------------------------------------------------------------------------- seeds
def _leaderboard_method(name: str, specter_model: str) -> str:
    if name == "SPECTER":
        return f"SPECTER ({specter_model}, released)"
    if name == CONTROL:
        return "CoSaEmb control: inter-document triplets only"
    return "CoSaEmb ({})".format(name.replace(" (", " ").rstrip(")"))


@dataclass
class SeedRows:
    """The leaderboard models' CSFCube rows (one per model and seed) and the page's mean ± σ view of them."""

    rows: list[dict]
    table: pd.DataFrame
    reference: str

    def describe(self, runs: MarginRuns, length: int) -> str:
        return (f"leaderboard models: {', '.join(runs.leaderboard_models) or 'none at this profile'}; seeds "
                f"{runs.seeds}; CSFCube test, MAP over all facets (× 100), inputs cut at {length} tokens; "
                f"leaderboard reference: {self.reference}")


def seed_rows(run, inputs, runs: MarginRuns, csfcube: CSFCubeScores, pooling: str) -> SeedRows:
    """Train each leaderboard model (the trained models of ``csfcube_models``) again for every further seed on the
    same triplets (:func:`retrain`), score it on the same CSFCube at the same length, and make one leaderboard row
    per model and seed, compared with the Benchmarks chapter's untrained encoder (same base model, ``pooling``,
    length). The paper's CoSaEmb is the graded (1, 2, 3) run. Checks: one row per model and seed.
    Shown in: notebooks/cosaemb.ipynb, "Seeds: the rows of the Summary's leaderboard"."""
    from sdr.evaluate import csfcube as csfcube_evaluator
    from sdr.methods.specter.recipe import csfcube_leaderboard_row, seed_spread, training_budget

    p = run.p
    results = {(name, p.seed): csfcube.results[_csfcube_system(name, p.margin_runs)]
               for name in runs.leaderboard_models}
    for run_seed in runs.seeds[1:]:  # the first seed's encoders are the ones scored already
        for name in runs.leaderboard_models:
            encoder = retrain(run, runs, name, run_seed).encoder
            run.branch("further seeds trained")
            results[(name, run_seed)] = csfcube_evaluator.evaluate(
                inputs.csfcube.path, embeddings=csfcube.vectors(name, encoder), return_per_query=True)
            del encoder
    reference = book.untrained_reference(p.model_name, p.model_layers, pooling, "csfcube")
    budget = {name: training_budget(p.epochs, int(runs.table.loc[name, "optimizer steps"]),
                                    p.batch_size * p.accumulation_steps) for name in runs.leaderboard_models}
    rows = [csfcube_leaderboard_row(
        _leaderboard_method(name, p.specter_model), result, inputs.csfcube.path, data=inputs.csfcube.kind,
        base_model=book.base_model_label(p.model_name, p.model_layers), training=budget[name],
        input_tokens=p.csfcube_max_length, seed=run_seed, reference=reference,
        paper_model="CoSaEmb" if name == GRADED else None)
        for (name, run_seed), result in results.items()]
    untrained = (book.csfcube_per_query(csfcube.results["untrained"], inputs.csfcube.path)[0]
                 if "untrained" in csfcube.results else None)
    table = (seed_spread(rows, untrained, seed=p.seed) if rows
             else pd.DataFrame(columns=["seeds", "MAP per seed", "MAP mean", "MAP σ"]))
    if len(rows) != len(runs.leaderboard_models) * len(runs.seeds) or \
            not (table["seeds"].str.count(",") + 1 == len(runs.seeds)).all():
        raise ChapterCheckFailed(f"a leaderboard model lacks a seed of {runs.seeds}:\n{table}")
    return SeedRows(rows, table, reference)


@dataclass
class SciRepEvalScores:
    """SciRepEval's four averages of our plain embeddings, the paper's Table 5 rows above them, the tasks counted,
    and the lines its caption adds to the chapter's data."""

    results: dict
    ours: pd.DataFrame
    table: pd.DataFrame
    papers: int
    sources: list[str]
    task_ids: dict = field(default_factory=dict)  # task → its papers' ids and its group (the leakage audit reads it)
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)  # our rows beside the paper's (fidelity.pair_rows)

    @property
    def counted(self) -> dict:
        return next(iter(self.results.values()))["aggregates"]["tasks_counted"] if self.results else {}

    def describe(self) -> str:
        undefined = {name: {task: r["labels_without_test_or_prediction"] for task, r in result["tasks"].items()
                            if r.get("labels_without_test_or_prediction")} for name, result in self.results.items()}
        return ("labels without a test paper or a prediction, scored 0 in the macro F1 (as officially): "
                f"{ {name: counts for name, counts in undefined.items() if counts} or 'none'}\n"
                f"{self.papers} papers embedded per model; tasks averaged: {self.counted}")


def scirepeval_table(run, inputs, models: Mapping, reader: PaperReader, released: Released) -> SciRepEvalScores:
    """The plain embeddings of the models ``scirepeval_models`` names (no adapters, no control codes) scored by the
    book's SciRepEval evaluator without the few-shot runs, next to the paper's Table 5. Checks: every paper of the
    tasks has an embedding. Shown in: notebooks/cosaemb.ipynb, "SciRepEval (Table 5)"."""
    from sdr.evaluate import scirepeval

    folder = inputs.scirepeval.path
    papers = {}
    task_ids = {}
    for task in scirepeval.read_registry(inputs.scirepeval.file("scirepeval_tasks.jsonl")):
        documents = scirepeval.task_documents(folder, task)
        task_ids[task.name] = (task.group, {str(document["doc_id"]) for document in documents})
        for document in documents:
            papers.setdefault(document["doc_id"], Paper(document["doc_id"], document.get("title") or "",
                                                        document.get("abstract") or ""))
    ids = sorted(papers)
    results, rows = {}, {}
    for name in run.p.scirepeval_models:
        if name not in models:
            print(f"{name}: not trained or loaded at this profile, not scored")
            continue
        vectors = reader.abstracts(name, models[name], [papers[p] for p in ids])
        result = scirepeval.evaluate(folder, dict(zip(ids, vectors)), few_shot=False, progress=False)
        if result["missing_embeddings"]["count"]:
            raise ChapterCheckFailed(f"{name}: SciRepEval papers without an embedding: {result['missing_embeddings']}")
        results[name] = result
        summary = result["aggregates"]
        rows[name] = {"out_of_task_avg": summary["out_of_train"], "in_task_avg": summary["in_train"],
                      "scidocs_avg": summary["scidocs"], "all_avg": summary["all"]}
    ours = pd.DataFrame(rows).T
    paper = book.read_paper_table("cosaemb_scirepeval")
    table = book.paper_vs_ours(ours, paper, list(ours.columns), f"this book ({run.profile}, plain embeddings)")
    pairs = paired_table(run, inputs, "cosaemb_scirepeval", ours, paper, ["all_avg"]) if len(ours) else pd.DataFrame()
    return SciRepEvalScores(results, ours, table, len(ids), [*released.sources, "CoSaEmb Table 5 (paper rows)"],
                            task_ids, pairs)


# ------------------------------------------------------------------------------------------------- the page's record
def leaderboard(run, inputs, seeds: SeedRows, csfcube: CSFCubeScores, runs: MarginRuns) -> list[dict]:
    """The Summary's rows of this chapter: the CSFCube rows of the seeds (one per leaderboard model and seed) and the
    released SPECTER's row when it was scored (the official SPECTER rankings and the untrained encoder are the
    Benchmarks chapter's rows); data "real" when the real CSFCube was scored, "replica" for the replica."""
    from sdr.methods.specter.recipe import csfcube_leaderboard_row

    p = run.p
    rows = list(seeds.rows)
    if "SPECTER" in csfcube.results:
        rows.append(csfcube_leaderboard_row(
            _leaderboard_method("SPECTER", p.specter_model), csfcube.results["SPECTER"], inputs.csfcube.path,
            data=inputs.csfcube.kind, base_model="SciBERT", training="external: SPECTER release",
            input_tokens=p.csfcube_max_length, paper_model="SPECTER"))
    expected = len(runs.leaderboard_models) * len(runs.seeds) + ("SPECTER" in csfcube.results)
    if len(rows) != expected:
        raise ChapterCheckFailed(f"{len(rows)} leaderboard rows, expected {expected}")
    return rows


def store(run, inputs, headings: Headings, counts: Counts, runs: MarginRuns, order: DistanceOrder,
          paragraphs: Paragraphs, csfcube: CSFCubeScores, seeds: SeedRows, scirepeval: SciRepEvalScores,
          rows: list[dict], released: Released, leakage=None, differs: dict | None = None):
    """The CoSaEmb chapter's record in the results store: its tables (the leakage audit's when given), its
    leaderboard rows, its settings and what differs from the paper (``differs``, when given)."""
    p = run.p
    tables = {"headings": headings.table.reset_index(), "counts_table2": counts.versus2.reset_index(),
              "counts_table3": counts.versus3.reset_index(),
              "training": runs.table.astype(str).reset_index(names="run"),
              "distance_order": order.table.reset_index(names="model"), "paragraphs": paragraphs.table,
              "csfcube": csfcube.table, "csfcube_seeds": seeds.table.round(3).reset_index(),
              "scirepeval": scirepeval.table}
    if leakage is not None:
        tables["leakage"] = leakage.table.assign(examples=leakage.table["examples"].map(", ".join))
    extra = {"model": book.base_model_label(p.model_name, p.model_layers), "max_length": p.max_length,
             "both_directions": p.both_directions, "margin_runs": {r: MARGIN_RUNS[r] for r in p.margin_runs},
             "inter_only_control": p.inter_only_control, "leaderboard_seeds": runs.seeds,
             "csfcube_max_length": p.csfcube_max_length, "elapsed_s": round(time.time() - inputs.started),
             "leaderboard": rows}
    if differs is not None:
        extra["what differs from the paper"] = dict(differs)
    path = run.save(tables, extra, sources=[*run.data.sources, *released.sources, paragraphs.source])
    print(f"done in {time.time() - inputs.started:.0f} s")
    return path


def findings(run, inputs, headings: Headings, built: CoSaEmbTriplets, counts: Counts, runs: MarginRuns,
             order: DistanceOrder, paragraphs: Paragraphs, csfcube: CSFCubeScores, seeds: SeedRows,
             scirepeval: SciRepEvalScores) -> str:
    """What this run measured, one Markdown bullet per finding, each computed from the tables above (the paper's
    numbers from the paper tables). Shown in: notebooks/cosaemb.ipynb, "What to take from this chapter"."""
    p = run.p

    def points(value):
        return f"{value:.2f}"

    paper_recall = paragraphs.paper.set_index("model")["recall@1"]
    paper_graded = paper_recall["CoSaEmb (with margin gradation, 1/2/3)"]
    recall = paragraphs.ours["recall@1"]
    # the paper's setting, else the first margin run trained (none: the parts chosen trained no margin run)
    graded = GRADED if GRADED in recall.index else next((n for n in p.margin_runs if n in recall.index), None)
    full_text = headings.full_text
    largest = counts.table2["Frequency"].idxmax()
    lines = [
        f"**Headings.** In the training full text ({inputs.full_text.kind}), {int(full_text['of which by default'].sum())} "
        f"of {int(full_text['distinct headings'].sum())} distinct headings reached Methods only by default, and "
        f"Methods holds {int(full_text.loc['Method', 'occurrences'])} of {len(headings.full_text_headings)} sections.",
        f"**Aspect texts.** {built.report.papers_with_triplets} papers gave intra-document triplets; the most frequent "
        f"aspect, {largest}, occurs in {int(counts.table2.loc[largest, 'Frequency'])} of them (never more than once "
        "per paper).",
        "**Paragraph retrieval (Recall@1).** " + ", ".join(f"{name} {points(value)}" for name, value in
                                                         recall.sort_values(ascending=False).items()) + ".",
    ]
    if "flat (1, 1, 1)" in recall.index and graded not in (None, "flat (1, 1, 1)"):
        _, sentence = paragraphs.compare(graded, "flat (1, 1, 1)", f"The {graded} run",
                                         "the flat (1, 1, 1) run", seed=p.seed)
        lines.append(f"**Margin gradation.** {sentence} The paper's Table 6, on its arXiv set, has the graded run ahead "
                     f"by {points(paper_graded - paper_recall['CoSaEmb (w/o margin gradation, 1/1/1)'])}.")
    if CONTROL in recall.index and graded is not None:
        side, sentence = paragraphs.compare(graded, CONTROL, "The graded run", "the control trained on as many of "
                                            "SPECTER's triplets from the same start", seed=p.seed)
        argument = "that the full-text triplets, not more training, make the gain"
        reading = {"above": f"This is in line with the paper's argument {argument}.",
                   "below": f"So this run does not support the paper's argument {argument}.",
                   "within noise": f"So this run can neither support nor refute the paper's argument {argument}."}
        lines.append(f"**Full text or more data.** {sentence} {reading[side]}")
    if "SPECTER" in recall.index and graded is not None:
        _, sentence = paragraphs.compare(graded, "SPECTER", "The graded run", "the released SPECTER", seed=p.seed)
        lines.append(f"**Released SPECTER.** {sentence} The paper, on its arXiv set: "
                     f"{points(paper_graded - paper_recall['SPECTER'])} ahead.")
    distances = order.table
    intra = [kind for kind in ("local", "global") if kind in distances.columns]
    if intra:
        lines.append("**Order of distances (held out).** Share of intra-document triplets ordered: " + ", ".join(
            f"{name} {distances.loc[name, intra].mean():.1f} %" for name in distances.index) + ".")
    gain = heldout_gain(order)
    lines.append("**Held-out objective.** Loss of eq. 5 (margins 1, 2, 3) on the held-out triplets, below the "
                 "untrained encoder's: " + ", ".join(f"{name} {gain[name]:.1f} %" for name in gain.index
                                                     if name != "untrained") + ".")
    ours_csfcube = csfcube.ours
    if "SPECTER (official rankings)" in ours_csfcube.index and f"CoSaEmb recipe: {graded}" in ours_csfcube.index:
        lines.append(f"**CSFCube.** Aggregated R-Precision: graded run "
                     f"{points(ours_csfcube.loc[f'CoSaEmb recipe: {graded}', 'all_rp'])}, the official SPECTER rankings "
                     f"{points(ours_csfcube.loc['SPECTER (official rankings)', 'all_rp'])} (at {p.csfcube_max_length} "
                     "tokens per text for our encoders).")
    if len(seeds.table):
        lines.append("**CSFCube over seeds (the leaderboard rows).** MAP, all facets: " + "; ".join(
            f"{name} {line['MAP mean']:.2f}" + (f" ± {line['MAP σ']:.2f}" if line["MAP σ"] == line["MAP σ"] else "")
            + f" over seed(s) {line['seeds']}" for name, line in seeds.table.iterrows())
            + f" (at {p.csfcube_max_length} tokens; the Summary compares each with the Benchmarks chapter's untrained "
            "encoder).")
    if {"untrained", graded} <= set(scirepeval.ours.index):
        lines.append(f"**SciRepEval (plain embeddings).** Average over the tasks present: graded run "
                     f"{points(scirepeval.ours.loc[graded, 'all_avg'])}, its untrained start "
                     f"{points(scirepeval.ours.loc['untrained', 'all_avg'])}.")
    if run.profile != "paper" and len(runs.table):
        models = len(runs.leaderboard_models)
        lines.append(f"At `{run.profile}` these are tiny runs ({int(runs.table['optimizer steps'].max())} optimizer "
                     f"steps at most, {len(runs.seeds)} seed{'s' if len(runs.seeds) > 1 else ''} for the leaderboard "
                     f"model{'s' if models > 1 else ''}, one for the rest) of a small encoder on the data in the table "
                     "at the top; they test the pipeline, not the paper's differences of a point or less.")
    return "\n".join(f"* {line}" for line in lines)
