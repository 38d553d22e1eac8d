"""SciNCL's Table 2 and Figs. 2-3 in the chapter: the ablations as one registry (:data:`TABLE2_ABLATIONS`: name →
the paper's rows it stands for, the parameter that lists its values, its rows in the paper plan, and how it varies
the main run) that the notebook (:func:`run_table2`), the paper plan (:func:`table2_plan`) and the tests read; the
sweeps of the bands (:data:`sdr.methods.scincl.recipe.SWEEPS`) run by :func:`run_sweeps`.

Every row and point trains from a fresh encoder with the main runs' settings (:func:`.chapter.train_config`) and is
scored on SciDocs with Table 2's task averages. Shown in: notebooks/scincl.ipynb, Table 2: ablations, and Figs. 2
and 3: where the bands should sit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace

import pandas as pd

from sdr.book.chapter import ChapterCheckFailed, Fit
from sdr.methods import specter
from sdr.methods.scincl.chapter import (CitationEmbedding, TrainingSets, bands_words, fit_and_release,
                                        main_queries_words, scidocs_scorer, train_config)
from sdr.methods.scincl.recipe import (PAPER_BANDS, SWEEPS, Bands, sample_triplets, scaled_bands, search_bands,
                                       seed_summary, share_of_queries, sweep_points)
from sdr.train import TrainConfig

__all__ = ["TABLE2_COLUMNS", "TABLE2_METRICS", "Table2Row", "Table2Setup", "Ablation", "TABLE2_ABLATIONS",
           "table2_plan", "table2_seeds", "Table2", "run_table2", "TABLE2_PAIRED", "LEAKY_GRAPH", "LEAKAGE_PAPER_ROW",
           "table2_origin", "table2_paper_origin", "table2_pairs", "show_leakage_audit", "SweepRuns", "run_sweeps"]

#: The columns of SciNCL's Table 2 that ours has too (task averages and the average over all metrics).
TABLE2_COLUMNS = ["cls", "usr", "cite", "rec", "avg"]
#: What a Table 2 row reports: the task averages, the average, and the average without recommendations.
TABLE2_METRICS = ["cls", "usr", "cite", "rec", "avg", "avg w/o REC"]


# ------------------------------------------------------------------------------------------------- Table 2
@dataclass(frozen=True)
class Table2Row:
    """One row of our Table 2: what was run (its name on the page and its run folder), the paper's row it
    corresponds to, its setting in words, its triplets for a seed, and its training settings (None: the main
    runs'). ``audit``, when given, runs after the row trained and returns a table the page shows."""

    label: str
    paper_row: str
    note: str
    examples: Callable[[int], list]
    config: TrainConfig | None = None
    audit: Callable[[], pd.DataFrame] | None = None


@dataclass
class Table2Setup:
    """What every ablation varies: the run, its inputs and texts, the graph embedding and the main training set."""

    run: object
    inputs: SimpleNamespace
    training: specter.TrainingSet
    embedded: CitationEmbedding
    sets: TrainingSets
    config: TrainConfig

    def knn_examples(self, bands: Bands, queries: Sequence[str] | None = None) -> Callable[[int], list]:
        queries = self.sets.main_queries if queries is None else queries
        return lambda seed: sample_triplets(self.embedded.embedding, bands, queries, seed)[0]


@dataclass(frozen=True)
class Ablation:
    """One kind of SciNCL Table 2 row, by the name the ``ablations`` parameter uses: the parameter that lists its
    values (one row each; None: one row), its name and query papers in the paper plan, and ``vary``, which makes the
    row from the main run's setting."""

    paper_rows: str
    values: str | None
    plan: Callable[[object, Sequence[str], int], tuple[str, int]]
    vary: Callable[[Table2Setup, object], Table2Row]

    def settings(self, p) -> list:
        return list(getattr(p, self.values)) if self.values else [None]


def _k_hard_row(setup: Table2Setup, share: float) -> Table2Row:
    bands = setup.sets.bands
    varied = replace(bands, k_hard=max(bands.k_pos + bands.c_hard + 1, int(round(share * bands.k_hard))))
    return Table2Row(f"k_hard={varied.k_hard} (of {bands.k_hard})", f"k_hard={int(round(share * PAPER_BANDS.k_hard))}",
                     varied.describe(), setup.knn_examples(varied))


def _easy_random_row(setup: Table2Setup, _) -> Table2Row:
    varied = replace(setup.sets.bands, filtered_random=False)
    return Table2Row("easy negatives plain random", "easy neg. w/ random", varied.describe(),
                     setup.knn_examples(varied))


def _data_fraction_row(setup: Table2Setup, fraction: float) -> Table2Row:
    queries = setup.sets.main_queries
    kept = share_of_queries(queries, fraction, setup.run.p.seed)
    return Table2Row(f"{fraction:.0%} of the training set ({len(kept):,} of {len(queries):,} query papers)",
                     f"{fraction:.0%} training data", f"{len(kept) * specter.TRIPLETS_PER_QUERY:,} triplets",
                     setup.knn_examples(setup.sets.bands, kept))


def _bitfit_row(setup: Table2Setup, _) -> Table2Row:
    rate = setup.run.p.bitfit_learning_rate
    return Table2Row(f"BitFit (bias terms only, lr {rate:g})", "BitFit training", "bias terms only",
                     setup.knn_examples(setup.sets.bands), replace(setup.config, bitfit=True, learning_rate=rate))


def _leakage_row(setup: Table2Setup, _) -> Table2Row:
    """SciNCL's w/ leakage graph: SPECTER's sampling on the whole synthetic corpus (the SciDocs replica's papers
    too), embedded with the same settings, its bands scaled to it; the evaluation papers' texts join the training
    texts. Its audit: the main triplets share no paper with SciDocs' test and validation papers, the leaky ones do."""
    from sdr.graph import citation_graph_from_triplets, embed

    run, inputs, training, sets = setup.run, setup.inputs, setup.training, setup.sets
    if inputs.triplets.real or inputs.scidocs.real:
        raise ValueError("Table 2's leakage row adds the SciDocs replica's papers to the synthetic graph: it needs the "
                         "replicas of the training triplets and of SciDocs, and this run reads "
                         f"{'the real training triplets' if inputs.triplets.real else 'the real SciDocs'}; "
                         "leave 'leakage' out of ablations")
    p = run.p
    leaky_path, _ = specter.write_training_triplets(inputs.synthetic().corpus, run.workdir / "leaky" / "train.jsonl",
                                                    p.seed)
    leaky_training = specter.read_training_triplets(leaky_path)
    leaky_graph, _, _ = citation_graph_from_triplets(leaky_training.paper_triplets)
    leaky_embedding = embed(leaky_graph, setup.embedded.config)
    leaky_bands = scaled_bands(len(leaky_embedding.ids))
    training.papers.update(leaky_training.papers)  # their texts, for training

    def audit() -> pd.DataFrame:
        leaky_ids = {x for t in sample_triplets(leaky_embedding, leaky_bands, sets.main_queries, p.seed)[0]
                     for x in (t.query, t.positive, t.negative)}
        clean_ids = {x for t in sets.triplets for x in (t.query, t.positive, t.negative)}
        audits = pd.concat([
            specter.scidocs_leakage({x: training.papers[x] for x in clean_ids}, inputs.scidocs.path)
            .assign(graph="w/o leakage"),
            specter.scidocs_leakage({x: training.papers[x] for x in leaky_ids}, inputs.scidocs.path)
            .assign(graph="w/ leakage")])
        clean = audits.query("graph == 'w/o leakage'").loc["in test or validation", "training papers in it"]
        leaky = audits.query("graph == 'w/ leakage'").loc["in test or validation", "training papers in it"]
        if not (clean == 0 and leaky > 0):
            raise ChapterCheckFailed(f"SciNCL's leakage check: the main triplets share {clean} papers with SciDocs' "
                                     f"test and validation papers (must be 0), the leaky graph's {leaky} (must be "
                                     "more than 0)")
        return audits

    return Table2Row("graph with the evaluation papers (leakage)",
                     LEAKAGE_PAPER_ROW, leaky_bands.describe(),
                     lambda seed: sample_triplets(leaky_embedding, leaky_bands, sets.main_queries, seed)[0],
                     audit=audit)


#: SciNCL Table 2's ablations this book runs, in the order of its rows. The notebook (:func:`run_table2`), the paper
#: plan (:func:`table2_plan`) and the tests read this one table.
TABLE2_ABLATIONS: dict[str, Ablation] = {
    "k_hard": Ablation("k_hard=2000, k_hard=3000 (shares of the main k-hard)", "table2_k_hard_shares",
                       lambda share, queries, seed: (f"k_hard share {share:g}", len(queries)), _k_hard_row),
    "easy_random": Ablation("easy neg. w/ random", None,
                            lambda _, queries, seed: ("easy negatives plain random", len(queries)), _easy_random_row),
    "data_fraction": Ablation("1% and 10% training data (shares of the training set by query)", "data_fractions",
                              lambda fraction, queries, seed: (f"{fraction:.0%} of the training set",
                                                               len(share_of_queries(queries, fraction, seed))),
                              _data_fraction_row),
    "bitfit": Ablation("BitFit training", None, lambda _, queries, seed: ("BitFit", len(queries)), _bitfit_row),
    "leakage": Ablation("w/ leakage (Table 1's graph with the evaluation papers)", None,
                        lambda _, queries, seed: ("graph with the evaluation papers", len(queries)), _leakage_row),
}


def _selected_ablations(ablations: Sequence[str]) -> dict[str, Ablation]:
    unknown = sorted(set(ablations) - set(TABLE2_ABLATIONS))
    if unknown:
        raise ValueError(f"unknown ablations {unknown}; known: {list(TABLE2_ABLATIONS)}")
    return {name: ablation for name, ablation in TABLE2_ABLATIONS.items() if name in ablations}


def table2_plan(ablations: Sequence[str], k_hard_shares: Sequence[float], data_fractions: Sequence[float],
                query_ids: Sequence[str], seed: int) -> list[tuple[str, int]]:
    """The Table 2 rows a chapter will train, as ``(row, query papers)``, for the paper plan: the rows of the
    ablations named, in :data:`TABLE2_ABLATIONS`' order (one per value of its parameter)."""
    try:
        selected = _selected_ablations(ablations)
    except ValueError as error:
        raise ValueError(f"table2_plan: {error}") from None
    values = SimpleNamespace(table2_k_hard_shares=k_hard_shares, data_fractions=data_fractions)
    return [ablation.plan(value, query_ids, seed) for ablation in selected.values()
            for value in ablation.settings(values)]


def table2_seeds(p) -> list[int]:
    """Each Table 2 row's seeds: the chapter's seed (the main run is the reference's), then ``ablation_seeds``."""
    return list(dict.fromkeys([p.seed, *p.ablation_seeds]))


@dataclass
class Table2:
    """Our Table 2 (one row per ablation value, mean and σ over seeds, Δ from the reference), how it was run, and
    the leakage row's audit when it ran."""

    table: pd.DataFrame
    ran: list[str]
    not_run: list[str]
    protocol: str
    paper_protocol: bool
    audits: dict[str, pd.DataFrame]

    def report(self, run) -> None:
        """Print what ran at this profile and how (the paper's protocol or a smaller one); name what did not."""
        from IPython.display import Markdown, display

        print(f"Table 2 rows run at this profile: {self.ran or 'none'}; {self.protocol} — "
              + ("the paper's protocol on this graph." if self.paper_protocol
                 else "a smaller version of the paper's protocol."))
        if self.not_run:
            display(Markdown(f"**Not run at `{run.profile}`** (one parameter away, `ablations` and `parts`; "
                             f"profiles.yml says why): {', '.join(self.not_run)}."))
        from sdr.methods.scincl.paper import TABLE2_NOT_RUN

        display(Markdown("**Not run at any profile**: " + "; ".join(f"{row} ({why})" for row, why in
                                                                   TABLE2_NOT_RUN.items()) + "."))


def run_table2(run, inputs, training: specter.TrainingSet, embedded: CitationEmbedding, sets: TrainingSets,
               ours: pd.DataFrame, fits: Mapping[str, Fit]) -> Table2:
    """SciNCL Table 2's ablations named in ``ablations`` (:data:`TABLE2_ABLATIONS`), each row trained on the main
    runs' training set (or the stated share of it) for ``epochs`` epochs and scored on SciDocs test, as the mean over
    ``ablation_seeds`` (sampling and training seed); the reference is the main SciNCL run, its first seed the main
    run itself (scored again only when ``table2_recommendations`` differs from ``recommendations``).

    Shown in: notebooks/scincl.ipynb, Table 2: ablations."""
    p = run.p
    selected = _selected_ablations(p.ablations)  # unknown names are an error whether or not the part runs
    if selected and not run.runs_part("ablations"):
        selected = {}
    seeds = table2_seeds(p)
    config = train_config(run)
    setup = Table2Setup(run, inputs, training, embedded, sets, config)
    score = scidocs_scorer(inputs)
    main = sets.names["SciNCL"]

    def trained(row: Table2Row) -> dict:
        scores = []
        for run_seed in seeds:
            if row.label == "reference" and run_seed == p.seed:  # the main run is the reference's first seed
                scores.append(ours.loc[main].to_dict() if p.recommendations == p.table2_recommendations
                              else score(fits[main].encoder, p.table2_recommendations))
                continue
            encoder = fit_and_release(run, f"table2 {row.label} seed {run_seed}", row.examples(run_seed),
                                       training.papers, replace(row.config or config, seed=run_seed))
            scores.append(score(encoder, p.table2_recommendations))
        return seed_summary(scores, TABLE2_METRICS)

    rows, results, audits = [], {}, {}
    if selected:  # the reference first, then each ablation's rows in the registry's order, each trained when made
        rows.append(Table2Row("reference", "SciNCL", sets.bands.describe(), setup.knn_examples(sets.bands)))
        results["reference"] = trained(rows[-1])
    for ablation in selected.values():
        for value in ablation.settings(p):
            rows.append(ablation.vary(setup, value))
            results[rows[-1].label] = trained(rows[-1])
            if rows[-1].audit is not None:
                audits[rows[-1].label] = rows[-1].audit()
    table = pd.DataFrame(results).T
    if len(table):
        notes = {row.label: row.note for row in rows}
        table["Δ avg w/o REC"] = table["avg w/o REC"] - table.loc["reference", "avg w/o REC"]
        table["setting"] = pd.Series(notes)
        pairs = table2_pairs(setup, rows).set_index("row")
        table[TABLE2_PAIRED] = pairs[TABLE2_PAIRED]
        table["shown apart because"] = pairs["shown apart because"]
        table = table.rename(index={"reference": f"{main} (reference: the main run)"})
    protocol = (f"{len(sets.main_queries):,} query papers ({len(sets.triplets):,} triplets), {p.epochs} epoch(s), "
                f"{len(seeds)} seed(s) a row, SciDocs {inputs.scidocs.kind} test")
    paper_protocol = p.epochs == 2 and p.max_queries == 0 and len(seeds) >= 3 and inputs.scidocs.real
    return Table2(table, list(selected), [name for name in TABLE2_ABLATIONS if name not in selected], protocol,
                  paper_protocol, audits)


#: Our Table 2's column naming the paper's row a row is paired with (empty where the rule shows it apart).
TABLE2_PAIRED = "corresponds to (SciNCL Table 2)"
#: The data of our leakage row (the replica's graph with SciDocs' papers), in the words of the paper rows' origins.
LEAKY_GRAPH = "a replica graph with the evaluation papers"


def table2_origin(setup: Table2Setup, row: Table2Row):
    """Where our Table 2 row comes from (:class:`sdr.methods.specter.RowOrigin`): SciNCL's bands on the graph the row
    was sampled on (``embedded.source``: :data:`sdr.methods.scincl.S2ORC_GRAPH` only for a given embedding of
    S2ORC's citation graph; the leakage row: :data:`LEAKY_GRAPH`) with the main run's queries, the model family,
    Table 2's SciDocs protocol (``table2_recommendations``) and the row's training protocol (its own config)."""
    from sdr.methods.specter.paper import RowOrigin, TrainingProtocol, scidocs_protocol

    p = setup.run.p
    source = LEAKY_GRAPH if row.paper_row == LEAKAGE_PAPER_ROW else (setup.embedded.source
                                                                     or setup.embedded.graph_label)
    queries = main_queries_words(p, setup.training.with_leakage)
    config = row.config or setup.config
    training = TrainingProtocol(config.epochs, config.batch_size * config.accumulation_steps, config.learning_rate,
                                p.max_length)
    return RowOrigin(f"SciNCL's kNN bands{bands_words(p)} on {source}, {queries}", specter.model_family(p),
                     scidocs_protocol(setup.inputs.scidocs.real, p.table2_recommendations), training)


#: The paper's row of our leakage row: Table 1's SciNCL (w/ leakage), whose graph holds SciDocs' papers.
LEAKAGE_PAPER_ROW = "w/ leakage (Table 1)"


def table2_paper_origin(paper_row: str):
    """Where SciNCL Table 2's row ``paper_row`` comes from: Table 1's SciNCL (S2ORC's citation graph, SPECTER's
    queries, §4.3's training), BitFit with §4.3's learning rate 1e-4; the leakage row is Table 1's SciNCL."""
    from sdr.methods.scincl.paper import PAPER_SETTINGS
    from sdr.methods.specter.paper import PAPER_ROWS

    origin = PAPER_ROWS["SciNCL"]
    if paper_row == "BitFit training":
        rate, where = PAPER_SETTINGS["bitfit_learning_rate"]
        training = replace(origin.training, learning_rate=rate,
                           where=tuple((k, where if k == "learning_rate" else w) for k, w in origin.training.where))
        origin = replace(origin, training=training)
    return origin


def table2_pairs(setup: Table2Setup, rows: Sequence[Table2Row]) -> pd.DataFrame:
    """SciNCL Table 2's row each of our rows is set beside, by the pages' one pairing rule
    (:class:`sdr.methods.specter.RowOrigin`: same data source — the graph the row was sampled on —, model family,
    protocol and training protocol): ``row``, :data:`TABLE2_PAIRED` (empty where apart) and ``shown apart
    because``. Rows on SPECTER's triplet graph stand apart (SciNCL's Table 2 sampled on S2ORC's citation graph);
    rows on a given embedding of S2ORC's graph pair; a row whose paper row Table 2 lacks (another k-hard share)
    stands apart with that reason."""
    from sdr import book

    printed = set(book.read_paper_table("scincl_table2")["model"]) | {LEAKAGE_PAPER_ROW}
    lines = []
    for row in rows:
        if row.paper_row not in printed:
            lines.append({"row": row.label, TABLE2_PAIRED: "",
                          "shown apart because": f"SciNCL Table 2 has no row {row.paper_row!r}"})
            continue
        differences = table2_origin(setup, row).differences(table2_paper_origin(row.paper_row))
        lines.append({"row": row.label, TABLE2_PAIRED: "" if differences else row.paper_row,
                      "shown apart because": "; ".join(differences)})
    return pd.DataFrame(lines, columns=["row", TABLE2_PAIRED, "shown apart because"])


def show_leakage_audit(run, table2: Table2) -> None:
    """The leakage row's audit (SciNCL's check: the clean graph shares no paper with the evaluation set, the leaky
    one does), when that row ran.

    Shown in: notebooks/scincl.ipynb, Table 2: ablations."""
    if not table2.audits:
        print("The leakage row did not run at this profile (`ablations`).")
    for audit in table2.audits.values():
        run.show(audit.drop(columns="examples"))


# ------------------------------------------------------------------------------------------------- Figs. 2-3
@dataclass
class SweepRuns:
    """Figs. 2-3's points (one row per sweep, k and seed: triplets and SciDocs validation averages) and how they ran."""

    table: pd.DataFrame
    score: str
    protocol: str
    paper_protocol: bool
    ran: list[str]
    not_swept: list[str]

    @property
    def title(self) -> str:
        return f"Figs. 2-3 ({'paper protocol' if self.paper_protocol else 'small version'}): {self.score} against k"

    def report(self, run) -> pd.DataFrame:
        """Print what ran and how, name what did not, and return the mean and σ over seeds of each point."""
        from IPython.display import Markdown, display

        print(f"Sweeps run at this profile: {self.ran or 'none'}; {self.protocol} — "
              + ("the paper's protocol." if self.paper_protocol else "a small version of the paper's protocol, "
                                                                       "labelled so."))
        if self.not_swept:
            display(Markdown(f"**Not run at `{run.profile}`** (one parameter away, `sweeps`; profiles.yml says why): "
                             f"{', '.join(self.not_swept)}."))
        return self.table.groupby(["sweep", "k"])[[self.score]].agg(["mean", "std"]).round(2)


def run_sweeps(run, inputs, training: specter.TrainingSet, embedded: CitationEmbedding,
               sets: TrainingSets) -> SweepRuns:
    """SciNCL §6's sweeps named in ``sweeps`` (:data:`sdr.methods.scincl.SWEEPS`; points from
    :func:`sdr.methods.scincl.sweep_points`): each point trains on ``sweep_fraction`` of the query papers for
    ``sweep_epochs`` epochs, once per seed of ``sweep_seeds``, and is scored on SciDocs' validation split; one blocked
    search per seed serves every point of both grids.

    Shown in: notebooks/scincl.ipynb, Figs. 2 and 3: where the bands should sit."""
    p = run.p
    sweep_queries = share_of_queries(sets.query_ids, p.sweep_fraction, p.seed)
    swept = list(p.sweeps) if not p.sweeps or run.runs_part("sweeps") else []
    points = sweep_points(sets.bands, sets.n_nodes, swept, p.k_pos_sweep, p.k_hard_sweep)
    config = replace(train_config(run), epochs=p.sweep_epochs)
    searches = {run_seed: search_bands(embedded.embedding, list(points.values()), sweep_queries, run_seed)
                for run_seed in p.sweep_seeds} if points else {}
    score = scidocs_scorer(inputs) if points else None
    rows = []
    for (sweep, value), varied in points.items():
        for run_seed in p.sweep_seeds:
            examples = searches[run_seed].triplets(varied)[0]
            encoder = fit_and_release(run, f"sweep {sweep}={value} seed {run_seed}", examples, training.papers,
                                       replace(config, seed=run_seed))
            row = score(encoder, p.sweep_recommendations, split="val")
            rows.append({"sweep": SWEEPS[sweep].label, "k": int(value), "seed": run_seed, "triplets": len(examples),
                         "val avg": row["avg"], "val avg w/o REC": row["avg w/o REC"]})
    table = pd.DataFrame(rows, columns=["sweep", "k", "seed", "triplets", "val avg", "val avg w/o REC"])
    measure = "val avg" if p.sweep_recommendations else "val avg w/o REC"
    protocol = (f"{len(sweep_queries):,} of {len(sets.query_ids):,} query papers ({p.sweep_fraction:.0%}), "
                f"{p.sweep_epochs} epoch(s), {len(p.sweep_seeds)} seed(s), SciDocs {inputs.scidocs.kind} validation, "
                f"{measure}")
    paper_protocol = (p.sweep_fraction == 0.1 and len(p.sweep_seeds) >= 3 and p.sweep_epochs == 2
                      and inputs.scidocs.real and p.sweep_recommendations)
    return SweepRuns(table, measure, protocol, paper_protocol, swept, [name for name in SWEEPS if name not in swept])
