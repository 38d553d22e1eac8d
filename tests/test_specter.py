"""Tests of the SPECTER recipe (sdr.methods.specter): its paper settings and schedule, the replica of its training
data in the released layout, the SciDocs leakage audit in one id space, missing embeddings counted as the official
evaluator handles them, and the helpers the chapters report with."""

from __future__ import annotations

import json
import zlib
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from sdr import datasets
from sdr.corpus import Paper, ids_in_space, leakage_audit, read_scirepeval_triplets
from sdr.methods import specter
from sdr.samplers import Triplet
from sdr.train import TrainConfig, make_schedule


# ----------------------------------------------------------------------------------------- paper settings
def test_paper_training_is_specters_setup():
    """SciNCL §4.3 ("the training setup from SPECTER"): AdamW, lr 2e-5, 2 epochs, batch 8 with 4 accumulation
    steps = 32; SPECTER's AllenNLP config: slanted triangular with cut_frac 0.1, gradient clipping 1, weight
    decay 0.01; 5 triplets a query of which ceil(0.3 × 5) = 2 hard."""
    config = specter.PAPER_TRAINING
    assert (config.epochs, config.batch_size, config.accumulation_steps) == (2, 8, 4)
    assert config.batch_size * config.accumulation_steps == 32
    assert config.learning_rate == 2e-5 and config.weight_decay == 0.01 and config.max_grad_norm == 1.0
    assert config.schedule == "slanted_triangular" and config.warmup_ratio == 0.1 and config.warmup_steps is None
    assert (specter.TRIPLETS_PER_QUERY, specter.HARD_PER_QUERY) == (5, 2)


def _multipliers(config: TrainConfig, total: int) -> list[float]:
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=1.0)
    scheduler = make_schedule(optimizer, config.schedule, total, int(config.warmup_ratio * total))
    values = []
    for _ in range(total):
        values.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return values


def allennlp_slanted_triangular(step: int, total: int, cut_frac: float = 0.1, ratio: int = 32) -> float:
    """AllenNLP's SlantedTriangular multiplier (Howard & Ruder 2018): rise from 1/ratio to 1 over the first cut_frac
    of the steps, then fall linearly back to 1/ratio."""
    cut = int(total * cut_frac)
    proportion = step / cut if step < cut else 1 - (step - cut) / (total - cut)
    return (1 + proportion * (ratio - 1)) / ratio


def test_paper_schedule_is_allennlps_slanted_triangular_after_the_warm_up():
    total = 400
    ours = _multipliers(specter.PAPER_TRAINING, total)
    reference = [allennlp_slanted_triangular(step, total) for step in range(total)]
    cut = int(0.1 * total)
    # from the peak on: the same multipliers, down to 1/32 of the peak
    np.testing.assert_allclose(ours[cut:], reference[cut:], atol=1e-12)
    assert ours[cut] == pytest.approx(1.0) and ours[-1] == pytest.approx(reference[-1])
    assert min(ours[cut:]) > 1 / 32 - 1e-12
    # the rise starts at lr / warm-up steps instead of lr / 32: never more than 1/32 apart for warm-ups of 16+ steps
    differences = np.abs(np.array(ours[:cut]) - np.array(reference[:cut]))
    assert differences.max() <= 1 / 32 + 1e-12 and differences.max() > 0
    assert "slanted-triangular" in specter.SCHEDULE_NOTE and "1/32" in specter.SCHEDULE_NOTE


# ----------------------------------------------------------------------------------------- training data
def test_replica_triplets_are_written_in_the_released_layout_and_read_back(synthetic_corpus, tmp_path):
    path, report = specter.write_training_triplets(synthetic_corpus, tmp_path / "train.jsonl", seed=3)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == report.examples > 0
    for record in records[:20]:
        assert set(record) == {"query", "pos", "neg"}
        for side in record.values():
            assert set(side) == {"sha", "corpus_id", "title", "abstract"}
            assert side["sha"] in synthetic_corpus.papers and isinstance(side["corpus_id"], int)
            assert side["corpus_id"] >= specter.CORPUS_ID_BASE
    training = specter.read_training_triplets(path)
    # keyed by sha (SciDocs' id), corpus_id kept in the metadata
    assert {t.query for t in training.triplets} <= set(synthetic_corpus.papers)
    paper = training.papers[records[0]["query"]["sha"]]
    assert paper.metadata == {"sha": records[0]["query"]["sha"], "corpus_id": records[0]["query"]["corpus_id"]}
    # SPECTER's sampling: 5 triplets a query, every positive cited by its query
    per_query = pd.Series([t.query for t in training.triplets]).value_counts()
    assert (per_query == specter.TRIPLETS_PER_QUERY).all()
    assert all(t.positive in synthetic_corpus.graph.references(t.query) for t in training.triplets)
    assert len(training.paper_triplets) == len(training.triplets)


def test_replica_triplets_are_refused_under_the_paper_policy(synthetic_corpus, tmp_path):
    datasets.activate(datasets.policy_for("paper"))
    try:
        with pytest.raises(datasets.ReplicaForbidden, match="write_training_triplets"):
            specter.write_training_triplets(synthetic_corpus, tmp_path / "train.jsonl")
    finally:
        datasets.activate(None)
    assert not (tmp_path / "train.jsonl").exists()


def test_take_queries_is_a_seeded_subset():
    ids = [f"q{i}" for i in range(50)]
    first = specter.take_queries(ids, 10, seed=1)
    assert first == specter.take_queries(list(reversed(ids)), 10, seed=1) and len(first) == 10
    assert set(first) <= set(ids) and first == sorted(first)
    assert specter.take_queries(ids, 0, seed=1) == sorted(ids) == specter.take_queries(ids, 80, seed=1)


def test_triplet_statistics_count_queries_papers_and_collisions():
    triplets = [Triplet("q", "a", "b", "hard"), Triplet("q", "b", "c", "easy"), Triplet("r", "a", "q", "easy")]
    stats = specter.triplet_statistics(triplets)
    assert stats["triplets"] == 3 and stats["query papers"] == 2 and stats["distinct papers"] == 5
    assert stats["triplets per query (mean)"] == 1.5
    assert stats["collisions"] == 1  # (q, b) is a positive pair and a negative pair


def test_train_on_triplets_names_papers_without_text(fresh_tiny_encoder):
    with pytest.raises(KeyError, match="1 papers of the triplets have no text"):
        specter.train_on_triplets(fresh_tiny_encoder(), [Triplet("a", "b", "zz", "easy")],
                                  {p: Paper(p, p) for p in "ab"}, TrainConfig(epochs=1, progress=False))
    with pytest.raises(ValueError, match="no triplets"):
        specter.train_on_triplets(fresh_tiny_encoder(), [], {}, TrainConfig(epochs=1, progress=False))


def test_train_on_triplets_lowers_the_probe_loss(fresh_tiny_encoder, synthetic_corpus, tmp_path):
    path, _ = specter.write_training_triplets(synthetic_corpus, tmp_path / "train.jsonl")
    training = specter.read_training_triplets(path)
    examples = training.triplets[:32]
    config = TrainConfig(epochs=3, batch_size=8, accumulation_steps=1, learning_rate=1e-3, progress=False)
    result, losses = specter.train_on_triplets(fresh_tiny_encoder(), examples, training.papers, config, probe_size=32)
    assert losses["triplets"] == 32 and losses["optimizer steps"] == result.steps == 12
    assert losses["loss after training"] < losses["loss before training"], losses
    _, unmeasured = specter.train_on_triplets(fresh_tiny_encoder(), examples[:8], training.papers,
                                              TrainConfig(epochs=1, progress=False), probe_size=0)
    assert math.isnan(unmeasured["loss before training"]) and math.isnan(unmeasured["loss after training"])


def test_training_budget_line():
    assert specter.training_budget(2, 42756, 32) == "2 epochs, 42,756 steps × 32 triplets"
    assert specter.training_budget(1, 5, 16) == "1 epoch, 5 steps × 16 triplets"


# ----------------------------------------------------------------------------------------- SciDocs
def _scidocs_folder(root: Path) -> Path:
    """A hand-made SciDocs layout: which paper belongs to which split is known exactly."""
    (root / "mag").mkdir(parents=True)
    (root / "mag" / "test.csv").write_text("pid,class_label\nT1,0\nT2,1\n")
    (root / "mag" / "val.csv").write_text("pid,class_label\nV1,0\n")
    (root / "cite").mkdir()
    (root / "cite" / "test.qrel").write_text("T3 0 T4 1\nT3 0 B 0\n")
    (root / "cite" / "val.qrel").write_text("V2 0 B 1\n")
    (root / "coview").mkdir()
    (root / "coview" / "val.qrel").write_text("")  # a split a replica left empty names no paper
    return root


def test_split_paper_ids_reads_every_task_file_of_a_split(tmp_path):
    from sdr.evaluate import scidocs

    folder = _scidocs_folder(tmp_path / "scidocs")
    assert scidocs.split_paper_ids(folder, "test") == {"T1", "T2", "T3", "T4", "B"}
    assert scidocs.split_paper_ids(folder, "val") == {"V1", "V2", "B"}
    with pytest.raises(ValueError, match="'val' or 'test'"):
        scidocs.split_paper_ids(folder, "train")


def test_leakage_audit_compares_shas_with_shas(tmp_path):
    """Issue 20 item 5: the triplets are keyed by corpus id, SciDocs by sha; comparing corpus ids with shas finds
    nothing, mapping both to shas finds the overlap."""
    folder = _scidocs_folder(tmp_path / "scidocs")
    records = [{"query": {"sha": "T1", "corpus_id": 11, "title": "t1"}, "pos": {"sha": "B", "corpus_id": 12, "title": "b"},
                "neg": {"sha": "X", "corpus_id": 13, "title": "x"}},
               {"query": {"sha": "V1", "corpus_id": 14, "title": "v1"}, "pos": {"corpus_id": 15, "title": "no sha"},
                "neg": {"sha": "Y", "corpus_id": 16, "title": "y"}}]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    by_corpus_id, _ = read_scirepeval_triplets(path)  # the reader's default key
    papers = {p.paper_id: p for triplet in by_corpus_id for p in triplet}
    assert set(papers) == {"11", "12", "13", "14", "15", "16"}
    naive = leakage_audit(set(papers), {"test": {"T1", "T2", "T3", "T4", "B"}})
    assert naive.loc[0, "shared"] == 0  # the bug the audit had: different id spaces
    audit = specter.scidocs_leakage(papers, folder)
    assert audit.attrs == {"training papers": 6, "unmapped": 1, "unmapped examples": ["15"]}
    assert audit.loc["in test", "training papers in it"] == 2  # T1, B
    assert audit.loc["in validation", "training papers in it"] == 2  # V1, B
    assert audit.loc["in test or validation", "training papers in it"] == 3
    assert audit.loc["in test or validation", "SciDocs papers"] == 7
    assert audit.loc["in test", "% of the training papers"] == pytest.approx(100 * 2 / 5)
    assert audit.loc["in test", "% of the SciDocs papers"] == pytest.approx(100 * 2 / 5)
    assert ids_in_space(papers.values()) == ({"T1", "B", "X", "V1", "Y"}, ["15"])
    # the same papers keyed by sha give the same audit
    training = specter.read_training_triplets(path)
    assert specter.scidocs_leakage(training.papers, folder).equals(audit)


class _FakeEncoder:
    """Deterministic vectors from a paper's title: no model needed to test the evaluation plumbing."""

    def encode_papers(self, papers, batch_size=32, progress=False):
        return np.stack([np.random.default_rng(zlib.crc32(p.title.encode())).normal(size=8) for p in papers])


def test_scidocs_scores_count_missing_embeddings_as_the_official_evaluator(tmp_path):
    from sdr.evaluate import scidocs
    from sdr.synthetic import make_corpus
    from sdr.synthetic.scidocs import write_scidocs

    folder = write_scidocs(make_corpus(n_papers=120, seed=2), tmp_path / "scidocs", n_queries=8,
                           include_recomm=False, progress=False)
    papers = scidocs.read_papers(folder)
    complete = specter.scidocs_scores(_FakeEncoder(), papers, folder)
    assert complete["missing embeddings"] == 0 and math.isnan(complete["avg"])  # no recommendations: no average
    assert all(0 <= complete[m] <= 100 for m in specter.PROXIMITY_METRICS)
    dropped = sorted(papers)[:5]
    partial = specter.scidocs_scores(_FakeEncoder(), {p: v for p, v in papers.items() if p not in dropped}, folder)
    assert partial["missing embeddings"] == 5  # counted, not an error
    validation = specter.scidocs_scores(_FakeEncoder(), papers, folder, split="val")
    assert validation["missing embeddings"] == 0 and validation["cite_map"] != complete["cite_map"]
    assert specter.proximity_mean(complete) == pytest.approx(np.mean([complete[m] for m in specter.PROXIMITY_METRICS]))


def test_published_difference_and_the_released_checkpoints():
    table = pd.DataFrame({"model": ["SPECTER", "SciNCL"], "avg": [80.0, 81.8]})
    assert specter.published_difference({"avg": 80.2}, table, "SPECTER") == pytest.approx(0.2)
    with pytest.raises(ValueError, match="0 rows named 'Nope'"):
        specter.published_difference({"avg": 1.0}, table, "Nope")
    assert specter.RELEASED_CHECKPOINTS == {"allenai/specter": "SPECTER", "malteos/scincl": "SciNCL"}
    assert set(specter.RELEASED_CHECKPOINTS) == set(datasets.CHAPTER_MODELS["specter"]) | set(datasets.CHAPTER_MODELS["scincl"])
    assert specter.PUBLISHED_TOLERANCE == 0.3


def test_csfcube_leaderboard_metrics_pick_map_and_ndcg_per_facet():
    index = pd.MultiIndex.from_product([["A"], ["background", "method", "result", "all"]], names=["system", "facet"])
    table = pd.DataFrame({"MAP": [1.0, 2.0, 3.0, 4.0], "NDCG%20": [5.0, 6.0, 7.0, 8.0], "RP": 0.0, "P@20": 0.0,
                          "R@20": 0.0}, index=index)
    metrics = specter.csfcube_leaderboard_metrics(table, "A")
    assert metrics == {"map_background": 1.0, "ndcg%20_background": 5.0, "map_method": 2.0, "ndcg%20_method": 6.0,
                       "map_result": 3.0, "ndcg%20_result": 7.0, "map_all": 4.0, "ndcg%20_all": 8.0}


# ----------------------------------------------------------------------------------------- leaderboard rows and seeds
def test_csfcube_leaderboard_rows_carry_per_query_map_seed_length_and_reference(synthetic_corpus, fresh_tiny_encoder,
                                                                                tmp_path):
    """A trained model's CSFCube row (issue 26): the evaluator's metrics, its per-query MAP averaging (by fold) to
    the headline, the test folds as groups, the input length, the seed and the untrained reference; the table and
    the results of csfcube_scores agree."""
    from sdr import book
    from sdr.synthetic.csfcube import write_csfcube

    folder = write_csfcube(synthetic_corpus, tmp_path / "csfcube", n_queries=8, pool_size=24, seed=0)
    encoder = fresh_tiny_encoder()
    table, results = specter.csfcube_scores({"A": encoder}, folder, official_specter=False, return_results=True)
    assert specter.csfcube_scores({"A": encoder}, folder, official_specter=False).equals(table)
    reference = book.untrained_reference("minilm", 2, "cls")
    row = specter.csfcube_leaderboard_row("A", results["A"], folder, data="replica", base_model="all-MiniLM-L6-v2",
                                          training="1 epoch, 3 steps × 16 triplets", input_tokens=32, seed=4,
                                          reference=reference)
    assert row["metrics"]["map_all"] == pytest.approx(table.loc[("A", "all"), "MAP"])
    assert row["metrics"] == pytest.approx(specter.csfcube_leaderboard_metrics(table, "A"))
    assert (row["seed"], row["input_tokens"], row["reference"]) == (4, 32, "all-MiniLM-L6-v2 (2 layers) · cls · abstract query")
    assert len(row["query_groups"]) == 2 and set(row["per_query"]) == {k for g in row["query_groups"] for k in g}
    fold_means = [np.mean([row["per_query"][k] for k in group]) for group in row["query_groups"]]
    assert np.mean(fold_means) == pytest.approx(row["metrics"]["map_all"])
    without_per_query = {k: v for k, v in results["A"].items() if k != "per_query"}
    with pytest.raises(ValueError, match="return_per_query"):
        specter.csfcube_leaderboard_row("A", without_per_query, folder, data="replica", base_model="m", training="t",
                                        input_tokens=32)


def test_leaderboard_seeds_follow_the_chapter_seed():
    assert specter.leaderboard_seeds(0, 3) == [0, 1, 2] and specter.leaderboard_seeds(7, 1) == [7]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="positive integer"):
            specter.leaderboard_seeds(0, bad)


def _row(method, seed, per_query):
    groups = [["q1", "q2"], ["q3", "q4"]]
    score = float(np.mean([np.mean([per_query[k] for k in g]) for g in groups]))
    from sdr import book

    return book.leaderboard_row(method, "csfcube", {"map_all": score}, data="replica", base_model="m", training="t",
                                seed=seed, per_query=per_query, query_groups=groups, input_tokens=32)


def test_seed_spread_gives_mean_sd_and_the_paired_interval():
    """Mean ± sample σ of MAP over a method's seeds, and the two-stage bootstrap difference (seeds, then queries) of
    its per-query MAP from the untrained encoder's (the Summary's computation, sdr.stats)."""
    from sdr.stats import seed_query_bootstrap

    rows = [_row("A", 1, {"q1": 30.0, "q2": 40.0, "q3": 20.0, "q4": 50.0}),
            _row("A", 0, {"q1": 20.0, "q2": 40.0, "q3": 20.0, "q4": 40.0}),
            _row("B", 0, {"q1": 10.0, "q2": 10.0, "q3": 10.0, "q4": 10.0})]
    untrained = {"q1": 10.0, "q2": 20.0, "q3": 10.0, "q4": 30.0}
    table = specter.seed_spread(rows, untrained, [["q1", "q2"], ["q3", "q4"]])
    assert table.loc["A", "seeds"] == "0, 1" and table.loc["A", "MAP per seed"] == "30.00, 35.00"
    assert table.loc["A", "MAP mean"] == pytest.approx(32.5) and table.loc["A", "MAP σ"] == pytest.approx(3.5355339)
    assert math.isnan(table.loc["B", "MAP σ"]) and table.loc["B", "MAP mean"] == 10.0
    expected = seed_query_bootstrap([rows[1]["per_query"], rows[0]["per_query"]], [untrained],
                                    [["q1", "q2"], ["q3", "q4"]], seed=0)
    assert table.loc["A", "Δ vs untrained (this page)"] == pytest.approx(32.5 - 17.5) == expected["difference"]
    assert (table.loc["A", "95 % low"], table.loc["A", "95 % high"]) == (expected["low"], expected["high"])
    assert "95 % low" not in specter.seed_spread(rows).columns


def test_plan_run_measures_tokens_per_text(fresh_tiny_encoder, synthetic_corpus, tmp_path):
    """The paper plan's run: the run's triplets, epochs and batch, 3 texts an example, and the mean token count of
    its papers as the encoder cuts them (never above max_length)."""
    path, _ = specter.write_training_triplets(synthetic_corpus, tmp_path / "train.jsonl")
    training = specter.read_training_triplets(path)
    encoder = fresh_tiny_encoder()
    run = specter.plan_run("SPECTER", training.triplets, training.papers, encoder, epochs=2, effective_batch=32)
    ids = sorted({p for t in training.triplets for p in (t.query, t.positive, t.negative)})
    lengths = [len(encoder.tokenizer(encoder.paper_text(training.papers[p]), truncation=True,
                                     max_length=encoder.max_length)["input_ids"]) for p in ids]
    assert run == {"name": "SPECTER", "examples": len(training.triplets), "epochs": 2, "effective_batch": 32,
                   "texts_per_example": 3, "tokens_per_text": pytest.approx(np.mean(lengths))}
    assert 1 < run["tokens_per_text"] <= encoder.max_length
    sampled = specter.plan_run("SPECTER", training.triplets, training.papers, encoder, 2, 32, sample=10)
    assert 1 < sampled["tokens_per_text"] <= encoder.max_length
    with pytest.raises(KeyError, match="have no text"):
        specter.plan_run("x", training.triplets, {}, encoder, 1, 8)
    with pytest.raises(ValueError, match="no triplets"):
        specter.plan_run("x", [], training.papers, encoder, 1, 8)


def test_real_profile_trains_the_leaderboard_model_with_three_seeds_at_the_benchmarks_length():
    """The Summary asserts at real that every trained row has at least 3 seeds and one CSFCube input length (the
    Benchmarks chapter's); the paper profile trains once, as SPECTER (Cohan et al., 2020) reported one model."""
    from sdr import book

    real = book.chapter_parameters("specter", "real")
    assert real["leaderboard_seeds"] >= 3 and real["csfcube_models"]
    for profile in ("smoke", "real", "paper"):
        benchmarks = book.chapter_parameters("benchmarks", profile)  # its CSFCube length: csfcube_max_length or max_length
        assert (book.chapter_parameters("specter", profile)["csfcube_max_length"]
                == (benchmarks.get("csfcube_max_length") or benchmarks["max_length"])), profile
    assert book.chapter_parameters("specter", "smoke")["leaderboard_seeds"] == 1
    assert book.chapter_parameters("specter", "paper")["leaderboard_seeds"] == 1
