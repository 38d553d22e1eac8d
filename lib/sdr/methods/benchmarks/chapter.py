"""The Benchmarks chapter's steps, one call each: the evaluation harness checked against published numbers, and the
floor every later chapter has to clear (lexical rankers, the untrained encoder, a random order). Each step belongs
to a part of :data:`sdr.methods.benchmarks.PARTS` and returns None, saying so once, when its part does not run.

The systems the chapter scores are registries read by the page, the leaderboard rows and the tests:
:data:`POOLINGS` (the untrained encoder's two poolings), :data:`LEXICAL_RANKERS`, :data:`QUERY_KINDS` and
:data:`CSFCUBE_REFERENCES` (rows scored on this page but never on the one-length leaderboard). Each step takes the
chapter's :class:`sdr.book.ChapterRun` (its parameters are ``run.p``) and returns what the page shows; the checks of
invariants live here and raise :class:`sdr.book.ChapterCheckFailed`; the data policy (``inputs.*.real``,
``.official``) decides which checks apply and what the page says, so the notebook never branches on it.

Shown in: notebooks/benchmarks.ipynb.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace

import pandas as pd

from sdr import book
from sdr.book.chapter import ChapterCheckFailed

__all__ = ["POOLINGS", "LEXICAL_RANKERS", "QUERY_KINDS", "CSFCUBE_REFERENCES", "PUBLISHED_SPECTER_RANKINGS",
           "RELEASED_CSFCUBE", "RELEASED_LEXICAL_TEST_MAP", "RELEASED_RANDOM_FLOOR", "RELEASED_CSABSTRUCT_TEST",
           "REAL_CSABSTRUCT_MARGIN", "TFIDF_CHANCE_FACTOR", "system_name", "csfcube_system_names",
           "chapter_inputs", "untrained_encoders", "show_setup", "CSFCubeScores", "csfcube_scores", "show_csfcube",
           "csfcube_figure", "check_official_csfcube", "TABLE4_COLUMNS", "SentenceScores", "sentence_retrieval",
           "sentence_figure", "expect_above_chance", "ParagraphScores", "paragraph_retrieval", "show_paragraphs",
           "paragraph_figure", "expect_tfidf_above_chance", "leaderboard", "store"]

#: The untrained encoder's poolings: every trained row of the other chapters is compared with one of them.
POOLINGS = ("mean", "cls")
#: Page name → :mod:`sdr.baselines` method of the lexical rankers (over ``title abstract``).
LEXICAL_RANKERS = {"BM25": "bm25", "TF-IDF": "tfidf"}
#: CSFCube query kinds: the query paper's title and abstract, or only its abstract sentences labelled with the facet
#: (objective counts as background, as in allenai/aspire).
QUERY_KINDS = ("abstract", "facet")
#: CSFCube rows scored on this page only, not on the Summary's one-length leaderboard, and why.
CSFCUBE_REFERENCES = {
    "SPECTER (official rankings)": "the rankings shipped with the released collection (eval_scripts/"
                                   "sample_ranked_pools); they read SPECTER's own inputs (up to 512 tokens)",
    "random order": "each judged pool in a seeded random order: the floor",
    "oracle (gold grades)": "each pool sorted by its adjudicated grade: the ceiling",
}
#: The official evaluator's test scores of the shipped SPECTER rankings, "all" facets (CSFCube's eval_scripts
#: README, iesl/CSFCube); the harness must give them to 4 decimals on the released bytes.
PUBLISHED_SPECTER_RANKINGS = {"map": 0.3423, "ndcg%20": 0.5328}
#: The released CSFCube (SOURCES.md of the mirror): 50 query-facet pairs, 4,205 papers, judged candidates per facet.
RELEASED_CSFCUBE = {"queries": 50, "papers": 4205,
                    "judged": {"background": 1877, "method": 2174, "result": 2193}}
#: The lexical baselines are deterministic: their whole-text test MAP on "all" on the released CSFCube, as measured
#: with bm25s 0.3.16 and scikit-learn 1.9.1 (a change means their tokenization or scoring changed).
RELEASED_LEXICAL_TEST_MAP = {"BM25 · abstract query": 0.3491, "BM25 · facet query": 0.3022,
                             "TF-IDF · abstract query": 0.3590, "TF-IDF · facet query": 0.2953}
#: The random floor of seed 0 on the released CSFCube (numpy default_rng permutations), test MAP on "all".
RELEASED_RANDOM_FLOOR = {0: 0.1370}
#: SciToricsBERT Table 2: 1,349 CSAbstruct test sentences in 5 labels; per-label counts of the released test.jsonl.
RELEASED_CSABSTRUCT_TEST = {"background": 493, "method": 421, "result": 219, "objective": 155, "other": 61}
#: On the real CSAbstruct each pooling's P@1 must clear chance by this much; on a replica, chance itself is the bar.
#: Measured on real CSAbstruct (chance 0.27): P@1 0.48 / 0.45 with 2 layers (mean / cls pooling, smoke) and
#: 0.40 / 0.37 with all 6 (real).
REAL_CSABSTRUCT_MARGIN = 0.07
#: TF-IDF finds a sibling section first far above chance (measured 13 × at smoke); the bar is 5 ×.
TFIDF_CHANCE_FACTOR = 5


def system_name(label: str, queries: str) -> str:
    """A CSFCube row: a system (``"BM25"``, an encoder's name) with a query kind of :data:`QUERY_KINDS`."""
    return f"{label} · {queries} query"


def csfcube_system_names(encoders: Mapping) -> list[str]:
    """The CSFCube rows ranked by a system of this chapter (lexical, then encoders), in the page's order."""
    labels = [*LEXICAL_RANKERS, *encoders]
    return [system_name(label, queries) for label in labels for queries in QUERY_KINDS]


# ------------------------------------------------------------------------------------------------- data and models
def chapter_inputs(run) -> SimpleNamespace:
    """CSFCube, CSAbstruct, PubMed-RCT (optional: scored when found, no replica at smoke/real) and the paragraph
    chunks under the data policy: the released data where the profile reads it, else replicas in the official
    layouts written from one synthetic corpus (built only if a replica is written). The paragraph chunks are
    sections of real S2ORC full text at ``paper`` (CoSaEmb's arXiv set is not public), else of the replica. Only
    the inputs of the parts the run runs are resolved (the others are None): at ``paper`` a headline run reads no
    S2ORC full text.

    Shown in: notebooks/benchmarks.ipynb, Benchmarks and baselines."""
    from sdr.evaluate import paragraphs
    from sdr.synthetic import make_corpus
    from sdr.synthetic.csfcube import write_csfcube
    from sdr.synthetic.paragraphs import write_paragraphs
    from sdr.synthetic.sentences import write_csabstruct

    p, data, parts = run.p, run.data, run.parts
    synthetic = data.lazy("the synthetic corpus behind the replicas",
                          lambda: make_corpus(n_papers=p.synthetic_papers, seed=p.seed))
    replica_of = f"synthetic corpus (seed {p.seed}, {p.synthetic_papers} papers)"
    csfcube = csabstruct = pubmed = chunks = None
    if "csfcube" in parts:
        csfcube = data.input("csfcube", replica=lambda folder: write_csfcube(
            synthetic(), folder, n_queries=p.replica_queries, pool_size=p.replica_pool, seed=p.seed),
            replica_source=f"CSFCube replica of the {replica_of}")
    if "sentences" in parts:
        csabstruct = data.input("csabstruct", replica=lambda folder: write_csabstruct(synthetic(), folder,
                                                                                      seed=p.seed),
                                replica_source=f"CSAbstruct replica of the {replica_of}")
        pubmed = data.input("pubmed_rct", optional=True)
    if "paragraphs" in parts:
        chunks = data.input(
            "s2orc_specter", real=lambda folder: paragraphs.write_s2orc_chunks(
                folder, run.workdir / "paragraphs.jsonl", n_papers=p.paragraph_papers, seed=p.seed),
            replica=lambda folder: write_paragraphs(synthetic(), folder / "paragraphs.jsonl",
                                                    n_papers=p.paragraph_papers, seed=p.seed),
            replica_source=f"paragraph replica of the {replica_of} ({p.paragraph_papers} papers)")
    return SimpleNamespace(csfcube=csfcube, csabstruct=csabstruct, pubmed=pubmed, paragraphs=chunks,
                           synthetic=synthetic)


def untrained_encoders(run) -> dict:
    """The chapter's encoder (``model_name``, first ``model_layers`` layers, ``max_length`` tokens) once per pooling
    of :data:`POOLINGS`, named ``"<base model> · <pooling>"`` as the leaderboard's untrained references are; none
    when no part that scores it runs (a ``released``-only run loads no base model).

    Shown in: notebooks/benchmarks.ipynb, Benchmarks and baselines."""
    if not {"csfcube", "sentences", "paragraphs"} & set(run.parts):
        return {}
    label = book.base_model_label(run.p.model_name, run.p.model_layers)
    return {f"{label} · {pooling}": run.encoder(pooling=pooling, max_length=run.p.max_length) for pooling in POOLINGS}


def show_setup(run, encoders: Mapping):
    """The environment, the encoders' device path and the page's data table (every input, real or replica).

    Shown in: notebooks/benchmarks.ipynb, Benchmarks and baselines."""
    from IPython.display import display

    print(book.environment_line())
    if encoders:
        print("encoding path:", next(iter(encoders.values())).plan.describe())
    display(run.data.table())


def _encode_at(encoder, tokens: int, encode):
    """Run ``encode(encoder)`` with the encoder reading ``tokens`` tokens, then restore its length."""
    kept = encoder.max_length
    encoder.max_length = tokens
    try:
        return encode(encoder)
    finally:
        encoder.max_length = kept


# ------------------------------------------------------------------------------------------------- CSFCube
@dataclass
class CSFCubeScores:
    """Every CSFCube system's evaluator output (with per-query scores for the ranked systems), the test and dev
    tables (system, facet) × metric (fractions), the lexical rankers' whole-text scores, and the facet queries."""

    results: dict
    whole_text: dict
    test: pd.DataFrame
    dev: pd.DataFrame
    facet_report: dict
    papers: dict
    grades: dict
    tokens: int

    @property
    def test_all(self) -> dict:
        return {system: result["test"]["all"] for system, result in self.results.items()}

    def describe(self) -> str:
        return (f"{len(self.papers)} papers; facet queries: {self.facet_report}; every system reads {self.tokens} "
                "tokens of a paper (the lexical rankers' whole-text scores are in the check below)")


def csfcube_scores(run, inputs, encoders: Mapping) -> CSFCubeScores:
    """Score every system on CSFCube's judged pools (the query paper left out, as in the official pools): the
    official SPECTER rankings (shipped with the real collection only), a random order, the gold-grade oracle, the
    lexical rankers and the encoders with each query kind. Every ranked system reads the same text of each paper,
    cut at ``csfcube_max_length`` tokens (:class:`sdr.evaluate.csfcube.TokenCut`); the lexical rankers are also
    scored on whole texts, the collection's own setting.

    Checks: the oracle scores exactly 1 on every facet and metric (a misread grade would show), every query-facet
    pair has its facet sentences, the table has the three facets and "all", and the lexical rankers with an
    abstract query beat the random floor.

    Shown in: notebooks/benchmarks.ipynb, CSFCube: faceted query by example."""
    from sdr.evaluate import csfcube

    if not run.runs_part("csfcube"):
        return None
    p, folder = run.p, inputs.csfcube.path
    papers = csfcube.read_csfcube_papers(folder)
    results = {}
    if inputs.csfcube.real:  # the SPECTER rankings ship with the real collection only
        results["SPECTER (official rankings)"] = csfcube.evaluate(
            folder, rankings_dir=folder / "eval_scripts" / "sample_ranked_pools", name="specter")
    results["random order"] = csfcube.evaluate(folder, ranked=csfcube.random_rankings(folder, p.seed))
    grades = {f: csfcube.read_annotations(folder, f) for f in csfcube.FACETS}
    oracle = {f: {q: sorted(pool, key=grades[f][q].get, reverse=True)
                  for q, pool in csfcube.judged_pools(folder, f).items()} for f in csfcube.FACETS}
    results["oracle (gold grades)"] = csfcube.evaluate(folder, ranked=oracle)
    tokens = p.csfcube_max_length or p.max_length
    cut = csfcube.TokenCut(next(iter(encoders.values())).tokenizer, tokens)
    whole_text = {}
    for label, method in LEXICAL_RANKERS.items():
        for queries in QUERY_KINDS:
            whole_text[system_name(label, queries)] = csfcube.evaluate(
                folder, ranked=csfcube.lexical_rankings(papers, folder, method, queries))
            results[system_name(label, queries)] = csfcube.evaluate(
                folder, ranked=csfcube.lexical_rankings(papers, folder, method, queries, cut=cut),
                return_per_query=True)
    paper_ids = sorted(papers)
    facet_texts, facet_report = csfcube.facet_query_texts(papers, folder)
    for name, encoder in encoders.items():
        vectors, facet_vectors = _encode_at(encoder, tokens, lambda e: (
            dict(zip(paper_ids, e.encode_papers([papers[i] for i in paper_ids], batch_size=p.batch_size))),
            dict(zip(facet_texts, e.encode_texts(list(facet_texts.values()), batch_size=p.batch_size)))))
        results[system_name(name, "abstract")] = csfcube.evaluate(folder, embeddings=vectors, return_per_query=True)
        results[system_name(name, "facet")] = csfcube.evaluate(folder, embeddings={**vectors, **facet_vectors},
                                                               return_per_query=True)
    scores = CSFCubeScores(results, whole_text, csfcube.results_table(results, "test"),
                           csfcube.results_table(results, "dev"), facet_report, papers, grades, tokens)
    _check_csfcube(scores)
    return scores


def show_csfcube(run, scores: CSFCubeScores | None) -> None:
    """What the systems read, the test scores on "all" facets, then every facet (× 100), under the caption.

    Shown in: notebooks/benchmarks.ipynb, CSFCube: faceted query by example."""
    from IPython.display import display

    if scores is None:
        return
    print(scores.describe())
    display((100 * scores.test.xs("all", level="facet")).round(2))
    print("Test split, every facet (× 100):")
    run.show(100 * scores.test)


def csfcube_figure(run, scores: CSFCubeScores | None) -> None:
    """MAP and NDCG%20 per system and facet (:func:`sdr.book.figures.facet_bars`).

    Shown in: notebooks/benchmarks.ipynb, CSFCube: faceted query by example."""
    if scores is not None:
        book.figures.facet_bars(run, 100 * scores.test, ["map", "ndcg%20"], title="CSFCube")


def _check_csfcube(scores: CSFCubeScores) -> None:
    from sdr.evaluate import csfcube

    for facet, oracle in scores.results["oracle (gold grades)"]["test"].items():
        off = {m: oracle[m] for m in ("rp", "ndcg", "ndcg@20", "ndcg%20", "map", "mrr") if abs(oracle[m] - 1.0) >= 1e-12}
        if off:
            raise ChapterCheckFailed(f"CSFCube: the gold-grade oracle scores {off} on {facet}, not 1: a grade was "
                                     "misread")
    expected_queries = sum(len(scores.grades[f]) for f in csfcube.FACETS)
    if scores.facet_report["queries"] != expected_queries or scores.facet_report["fallback_to_abstract"] != 0:
        raise ChapterCheckFailed(f"CSFCube facet queries: {scores.facet_report}, expected {expected_queries} "
                                 "queries, none falling back to the whole abstract")
    facets = set(scores.test.index.get_level_values("facet"))
    if facets != {"background", "method", "result", "all"}:
        raise ChapterCheckFailed(f"CSFCube facets: {sorted(facets)}")
    floor = scores.test_all["random order"]["map"]
    for label in LEXICAL_RANKERS:
        system = system_name(label, "abstract")
        if not scores.test_all[system]["map"] > floor:
            raise ChapterCheckFailed(f"CSFCube: {system} test MAP {scores.test_all[system]['map']:.4f} does not beat "
                                     f"the random order's {floor:.4f}")


def check_official_csfcube(run, inputs, scores: CSFCubeScores) -> None:
    """The harness is the official evaluator: on the released CSFCube bytes (the registry's digests) the shipped
    SPECTER rankings give the published test scores (:data:`PUBLISHED_SPECTER_RANKINGS`, to 4 decimals), the
    collection has its released sizes (:data:`RELEASED_CSFCUBE`), and the deterministic lexical baselines and the
    random floor give their measured MAP. On other data, it says so and checks nothing.

    Shown in: notebooks/benchmarks.ipynb, CSFCube: faceted query by example."""
    from sdr.evaluate import csfcube

    if scores is None:
        return
    if not inputs.csfcube.official:
        print(f"official-evaluator check not applied: {inputs.csfcube.source} is not the released CSFCube (the "
              "check needs its released bytes)")
        return
    test_all = scores.test_all
    specter = test_all["SPECTER (official rankings)"]
    published = PUBLISHED_SPECTER_RANKINGS
    print(f"official SPECTER rankings, test 'all': MAP {specter['map']:.4f}, NDCG%20 {specter['ndcg%20']:.4f} "
          f"(published: {published['map']:.4f}, {published['ndcg%20']:.4f})")
    if any(round(specter[m], 4) != value for m, value in published.items()):
        raise ChapterCheckFailed(f"the official SPECTER rankings score {specter}, not the published {published}")
    queries = scores.results["SPECTER (official rankings)"]["report"]["queries"]
    judged = {f: sum(map(len, scores.grades[f].values())) for f in csfcube.FACETS}
    sizes = {"queries": queries, "papers": len(scores.papers), "judged": judged}
    if sizes != RELEASED_CSFCUBE:
        raise ChapterCheckFailed(f"the released CSFCube has {RELEASED_CSFCUBE}, this one {sizes}")
    lexical = {s: round(scores.whole_text[s]["test"]["all"]["map"], 4) for s in RELEASED_LEXICAL_TEST_MAP}
    print("lexical baselines, test MAP on 'all':", lexical)
    if lexical != RELEASED_LEXICAL_TEST_MAP:
        raise ChapterCheckFailed(f"the lexical baselines' whole-text test MAP changed: {lexical}, measured "
                                 f"{RELEASED_LEXICAL_TEST_MAP}")
    floor = round(test_all["random order"]["map"], 4)
    if run.p.seed in RELEASED_RANDOM_FLOOR and floor != RELEASED_RANDOM_FLOOR[run.p.seed]:
        raise ChapterCheckFailed(f"the random floor of seed {run.p.seed} is {floor}, measured "
                                 f"{RELEASED_RANDOM_FLOOR[run.p.seed]}")
    run.branch("official CSFCube evaluator checked")


# ------------------------------------------------------------------------------------------------- sentences
@dataclass
class SentenceScores:
    """Sentence retrieval by rhetorical role: each pooling's CSAbstruct (and, when found, PubMed-RCT) scores, our
    rows as SciToricsBERT Table 4's columns, and the paper-vs-ours table (the paper's rows, then ours)."""

    items: list
    scores: dict
    pubmed_scores: dict | None
    ours: pd.DataFrame
    table: pd.DataFrame
    tokens: int
    real: bool
    counts: pd.Series
    official: bool = False  # the released test split (its registry digests)

    @property
    def chance_p1(self) -> float:
        """P@1 of a random neighbour: the chance that another sentence drawn at random has the query's label."""
        counts = self.counts
        return float((counts * (counts - 1)).sum() / (len(self.items) * (len(self.items) - 1)))

    def describe(self) -> str:
        return (f"{len(self.items)} sentences, {self.tokens} tokens each at most; "
                f"k = {next(iter(self.scores.values()))['report']['k']}")


#: SciToricsBERT Table 4's columns, as ``data/paper_tables/scitoricsbert_table4.csv`` names them.
TABLE4_COLUMNS = ["csabstruct_p@1", "csabstruct_map@r", "pubmedrct_p@1", "pubmedrct_map@r"]


def sentence_retrieval(run, inputs, encoders: Mapping) -> SentenceScores:
    """Every CSAbstruct test sentence a query against all the others (SciToricsBERT Table 4's "CS" column), each
    pooling of the encoder reading ``csabstruct_max_length`` tokens; PubMed-RCT too when it was found (else its
    columns stay empty for our rows and the page says so). Our rows go under the paper's
    (:func:`sdr.book.paper_vs_ours`).

    Checks: every sentence is a query or a singleton excluded, k is the largest class less one, on the released
    test split the label counts of SciToricsBERT Table 2 (:data:`RELEASED_CSABSTRUCT_TEST`), and the table holds
    every row of the paper's CSV, values untouched, then one row per pooling.

    Shown in: notebooks/benchmarks.ipynb, Sentence retrieval by rhetorical role (CSAbstruct)."""
    from sdr.evaluate import sentences

    if not run.runs_part("sentences"):
        return None
    p = run.p
    tokens = p.csabstruct_max_length or p.max_length

    def scored(items) -> dict:
        texts, labels = [s.text for s in items], [s.label for s in items]
        return {name: sentences.evaluate(_encode_at(encoder, tokens, lambda e: e.encode_texts(
            texts, batch_size=p.batch_size)), labels) for name, encoder in encoders.items()}

    items = sentences.read_csabstruct(inputs.csabstruct.file("test.jsonl"))
    scores = scored(items)
    columns = {"csabstruct_p@1": "p@1", "csabstruct_map@r": "map@r"}
    pubmed_scores = None
    if inputs.pubmed is not None:
        pubmed_scores = scored(sentences.read_pubmed_rct(inputs.pubmed.file("test.txt")))
        columns.update({"pubmedrct_p@1": "p@1", "pubmedrct_map@r": "map@r"})
        run.branch("PubMed-RCT scored")
    else:
        print("PubMed-RCT not found in $SDR_DATA or the cache (`sdr data fetch pubmed_rct`): its columns stay empty "
              "for our rows.")
    ours = pd.DataFrame({name: {column: (pubmed_scores if column.startswith("pubmed") else scores)[name][metric]
                                for column, metric in columns.items()} for name in scores}).T
    paper = book.read_paper_table("scitoricsbert_table4")
    table = book.paper_vs_ours(ours.reindex(columns=TABLE4_COLUMNS), paper, TABLE4_COLUMNS, f"this book ({run.profile})")
    counts = pd.Series([s.label for s in items]).value_counts()
    result = SentenceScores(items, scores, pubmed_scores, ours, table, tokens, inputs.csabstruct.real, counts,
                            inputs.csabstruct.official)
    _check_sentences(result, paper, inputs.csabstruct.official)
    return result


def _check_sentences(result: SentenceScores, paper: pd.DataFrame, official: bool) -> None:
    counts = result.counts
    for name, scored in result.scores.items():
        report = scored["report"]
        if report["queries"] + report["excluded_singleton_queries"] != len(result.items):
            raise ChapterCheckFailed(f"CSAbstruct, {name}: {report['queries']} queries and "
                                     f"{report['excluded_singleton_queries']} singletons, not the "
                                     f"{len(result.items)} sentences")
        if report["k"] != counts.max() - 1:
            raise ChapterCheckFailed(f"CSAbstruct, {name}: k = {report['k']}, not the largest class less one "
                                     f"({counts.max() - 1})")
    if official and (len(result.items) != sum(RELEASED_CSABSTRUCT_TEST.values())
                     or counts.to_dict() != RELEASED_CSABSTRUCT_TEST):
        raise ChapterCheckFailed(f"the released CSAbstruct test split has {RELEASED_CSABSTRUCT_TEST} (SciToricsBERT "
                                 f"Table 2), this one {counts.to_dict()}")
    table = result.table
    if len(table) != len(paper) + len(result.scores):
        raise ChapterCheckFailed(f"the paper-vs-ours table has {len(table)} rows, not the paper's {len(paper)} and "
                                 f"our {len(result.scores)}")
    try:
        pd.testing.assert_frame_equal(table.iloc[:len(paper)][["model", *TABLE4_COLUMNS]].reset_index(drop=True),
                                      paper[["model", *TABLE4_COLUMNS]].reset_index(drop=True), check_dtype=False)
    except AssertionError as error:
        raise ChapterCheckFailed(f"the paper's rows changed in the paper-vs-ours table: {error}") from None
    if list(table.iloc[len(paper):]["model"]) != list(result.scores):
        raise ChapterCheckFailed(f"our rows are {list(table.iloc[len(paper):]['model'])}, not {list(result.scores)}")


def sentence_figure(run, result: SentenceScores | None) -> None:
    """The paper's rows of Table 4 and ours as bars (:func:`sdr.book.figures.paper_vs_ours_bars`).

    Shown in: notebooks/benchmarks.ipynb, Sentence retrieval by rhetorical role (CSAbstruct)."""
    if result is not None:
        book.figures.paper_vs_ours_bars(run, result.table, "CSAbstruct sentence retrieval",
                                        metrics={"csabstruct_p@1": "P@1", "csabstruct_map@r": "MAP@R"})


def expect_above_chance(run, result: SentenceScores | None) -> None:
    """The claim: each pooling's P@1 is above chance (:attr:`SentenceScores.chance_p1`), by
    :data:`REAL_CSABSTRUCT_MARGIN` on the real CSAbstruct with a pretrained encoder; an encoder that ignores its
    input sits at chance and fails. In the paper dry run the encoder is a tiny random stand-in, for which the margin
    (measured with the pretrained MiniLM) means nothing: chance itself is the bar there, as on a replica.

    Shown in: notebooks/benchmarks.ipynb, Sentence retrieval by rhetorical role (CSAbstruct)."""
    from sdr import datasets

    if result is None:
        return
    chance = result.chance_p1
    p1 = {name: round(scored["p@1"], 3) for name, scored in result.scores.items()}
    print(f"chance P@1 {chance:.3f}; ours:", p1)
    margin = REAL_CSABSTRUCT_MARGIN if result.real and not datasets.dry_run() else 0.0
    if result.real and datasets.dry_run():
        print(f"margin {REAL_CSABSTRUCT_MARGIN:g} not applied: the paper dry run's encoder is a tiny random stand-in "
              "(the margin was measured with the pretrained MiniLM); the bar is chance")
    for name, scored in result.scores.items():
        if not scored["p@1"] > chance + margin:
            raise ChapterCheckFailed(f"CSAbstruct, {name}: P@1 {scored['p@1']:.3f} is not above chance "
                                     f"{chance:.3f} + {margin:g}")


# ------------------------------------------------------------------------------------------------- paragraphs
@dataclass
class ParagraphScores:
    """Paragraph retrieval (CoSaEmb Table 6 set-up): each system's Recall@k of a same-paper section."""

    chunks: list
    scores: dict
    table: pd.DataFrame
    source: str
    real: bool
    profile: str

    @property
    def caption(self) -> str:
        """The line under the table: the profile and the chunks' source only."""
        return book.caption(self.profile, [f"{self.source}: {len(self.chunks)} sections"])

    @property
    def what(self) -> str:
        return "real S2ORC full text" if self.real else "synthetic replica"

    @property
    def chance_r1(self) -> float:
        """Recall@1 of a random neighbour: (sections of the query's paper - 1) / (all sections - 1), averaged."""
        per_paper = pd.Series([c.paper_id for c in self.chunks]).value_counts()
        n = len(self.chunks)
        return float(sum(per_paper[c.paper_id] - 1 for c in self.chunks) / (n * (n - 1)))


def paragraph_retrieval(run, inputs, encoders: Mapping) -> ParagraphScores:
    """One chunk per section; each pooling of the encoder and TF-IDF vectors; Recall@1 and Recall@3 of another
    section of the query's paper among the nearest by Euclidean distance. Checks: every system scored some queries
    and Recall@3 ≥ Recall@1 (the page's claim is :func:`expect_tfidf_above_chance`).

    Shown in: notebooks/benchmarks.ipynb, Paragraph retrieval (CoSaEmb Table 6 set-up)."""
    from sdr import baselines
    from sdr.evaluate import paragraphs

    if not run.runs_part("paragraphs"):
        return None
    if inputs.paragraphs.real:
        run.branch("paragraphs from S2ORC full text")
    chunks = paragraphs.read_chunks(inputs.paragraphs.path)
    texts = [c.text for c in chunks]
    scores = {name: paragraphs.evaluate(encoder.encode_texts(texts, batch_size=run.p.batch_size), chunks)
              for name, encoder in encoders.items()}
    scores["TF-IDF vectors"] = paragraphs.evaluate(baselines.tfidf_vectors(texts), chunks)
    table = pd.DataFrame({name: {k: v for k, v in r.items() if k.startswith("recall")}
                          for name, r in scores.items()}).T
    unscored = [name for name, r in scores.items() if not r["report"]["queries"] > 0]
    if unscored:
        raise ChapterCheckFailed(f"paragraphs: {unscored} scored no query")
    if not (table["recall@3"] >= table["recall@1"]).all():
        raise ChapterCheckFailed(f"paragraphs: Recall@3 below Recall@1:\n{table}")
    return ParagraphScores(chunks, scores, table, inputs.paragraphs.source, inputs.paragraphs.real, run.profile)


def show_paragraphs(run, result: ParagraphScores | None) -> None:
    """Recall@1 and Recall@3 of each system (× 100) under the chunks' caption.

    Shown in: notebooks/benchmarks.ipynb, Paragraph retrieval (CoSaEmb Table 6 set-up)."""
    from IPython.display import display

    if result is not None:
        print(result.caption)
        display((100 * result.table).round(2))


def paragraph_figure(run, result: ParagraphScores | None) -> None:
    """The systems' Recall@k as bars (:func:`sdr.book.figures.system_bars`).

    Shown in: notebooks/benchmarks.ipynb, Paragraph retrieval (CoSaEmb Table 6 set-up)."""
    if result is not None:
        book.figures.system_bars(run, 100 * result.table, title=f"Paragraph retrieval — {result.what} ({run.profile})")


def expect_tfidf_above_chance(run, result: ParagraphScores | None) -> None:
    """The claim: TF-IDF vectors find a sibling section first far above chance (:attr:`ParagraphScores.chance_r1`),
    by :data:`TFIDF_CHANCE_FACTOR` ×.

    Shown in: notebooks/benchmarks.ipynb, Paragraph retrieval (CoSaEmb Table 6 set-up)."""
    if result is None:
        return
    chance = result.chance_r1
    print(f"chance recall@1 {chance:.4f}")
    recall = result.table.loc["TF-IDF vectors", "recall@1"]
    if not recall > TFIDF_CHANCE_FACTOR * chance:
        raise ChapterCheckFailed(f"paragraphs: TF-IDF recall@1 {recall:.4f} is not above {TFIDF_CHANCE_FACTOR} × "
                                 f"chance ({chance:.4f})")


# ------------------------------------------------------------------------------------------------- the results store
def leaderboard(run, inputs, csfcube: CSFCubeScores | None, sentences: SentenceScores | None) -> list[dict]:
    """The Summary's leaderboard rows: every ranked CSFCube system (not :data:`CSFCUBE_REFERENCES`) and each
    pooling on CSAbstruct test, none trained here, each read at one input length, with per-query scores (the rows
    of the parts that ran). The untrained encoders are the references every trained row of the other chapters is
    compared with (:func:`sdr.book.untrained_reference`).

    Shown in: notebooks/benchmarks.ipynb, Paragraph retrieval (CoSaEmb Table 6 set-up)."""
    p = run.p
    encoder_base = book.base_model_label(p.model_name, p.model_layers)
    rows = []
    if csfcube is not None:
        encoders = [system for system in csfcube.results if system.endswith(" · abstract query")]
        for system, result in csfcube.results.items():
            if system in CSFCUBE_REFERENCES:
                continue
            base = encoder_base if system.startswith(encoder_base) else "—"
            per_query, groups = book.csfcube_per_query(result, inputs.csfcube.path)
            rows.append(book.leaderboard_row(system, "csfcube", book.csfcube_metrics(result),
                                             data=inputs.csfcube.kind, base_model=base, training="none",
                                             input_tokens=csfcube.tokens, per_query=per_query, query_groups=groups))
        reference = book.untrained_reference(p.model_name, p.model_layers, "cls")
        if reference not in csfcube.results:
            raise ChapterCheckFailed(f"the untrained reference {reference!r} was not scored on CSFCube ({encoders})")
    if sentences is not None:
        for (name, result), pooling in zip(sentences.scores.items(), POOLINGS):
            if not name.endswith(pooling):
                raise ChapterCheckFailed(f"the encoder {name!r} is not the {pooling} pooling")
            rows.append(book.leaderboard_row(
                book.untrained_reference(p.model_name, p.model_layers, pooling, "csabstruct"), "csabstruct",
                book.csabstruct_metrics(result), data=inputs.csabstruct.kind, base_model=encoder_base,
                training="none", input_tokens=sentences.tokens, per_query=book.csabstruct_per_query(result)))
    return rows


def store(run, csfcube: CSFCubeScores | None, sentences: SentenceScores | None, paragraphs: ParagraphScores | None,
          rows: list[dict], released=None):
    """Store the tables of the parts that ran (the released models' table as ``released``), the facet queries'
    report, the model and the leaderboard rows.

    Shown in: notebooks/benchmarks.ipynb, Paragraph retrieval (CoSaEmb Table 6 set-up)."""
    tables, extra = {}, {}
    if released is not None:
        tables["released"] = released.table
    if csfcube is not None:
        tables.update({"csfcube_test": csfcube.test.reset_index(), "csfcube_dev": csfcube.dev.reset_index()})
        extra["csfcube_facet_queries"] = csfcube.facet_report
    if sentences is not None:
        tables["sentences"] = sentences.table
    if paragraphs is not None:
        tables["paragraphs"] = paragraphs.table.reset_index(names="system")
    extra["model"] = book.base_model_label(run.p.model_name, run.p.model_layers)
    path = run.save(tables, extra={**extra, "leaderboard": rows})
    print(f"stored {path}")
    return path
