"""SciRepEval: the real registry, hand-computed metrics of every task type, aggregates, replica, CLI."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from sdr.evaluate import scirepeval
from sdr.synthetic.scirepeval import write_scirepeval

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "scirepeval"


@pytest.fixture()
def real_registry(real_data) -> Path:
    """The official task registry in the mirror (skips, naming SDR_DATA, without it)."""
    return real_data("scirepeval/scirepeval_tasks.jsonl")


def test_real_registry_is_read_and_grouped(real_registry):
    tasks = scirepeval.read_registry(real_registry)
    by_name = {task.name: task for task in tasks}
    assert len(tasks) == 22
    assert {task.type for task in tasks} == set(scirepeval.TASK_TYPES)
    # Every name the aggregates rely on exists in the official registry.
    assert scirepeval.IN_TRAIN_TASKS <= set(by_name)
    assert set(scirepeval.SCIDOCS_TASKS) <= set(by_name)
    groups = [task.group for task in tasks]
    assert (groups.count("in_train"), groups.count("scidocs"), groups.count("out_of_train")) == (7, 6, 9)
    assert by_name["Fields of study"].multi_label and by_name["Fields of study"].few_shot[0] == {
        "sample_size": 10, "iterations": 50}
    assert by_name["Paper-Reviewer Matching"].metrics == ["P_5", "P_10"]
    assert "reviewers" in by_name["Paper-Reviewer Matching"].data
    assert scirepeval.dataset_dir("D", by_name["MeSH"].data["test"]) == Path("D/scirepeval_test/mesh_descriptors")


def test_bad_registry_line_names_file_and_line(tmp_path):
    path = tmp_path / "tasks.jsonl"
    lines = (FIXTURE / "scirepeval_tasks.jsonl").read_text().splitlines()
    path.write_text("\n".join([lines[0], '{"name": "X", "type": "ranking", "data": {"test": "x"}, "metrics": ["map"]}']))
    with pytest.raises(ValueError, match=r"tasks\.jsonl:2: task 'X' has type 'ranking'"):
        scirepeval.read_registry(path)
    path.write_text(lines[0] + "\n{oops\n")
    with pytest.raises(ValueError, match=r"tasks\.jsonl:2: not valid JSON"):
        scirepeval.read_registry(path)
    path.write_text('{"name": "X", "type": "proximity", "data": {"test": "x"}}\n')
    with pytest.raises(ValueError, match=r"tasks\.jsonl:1: task lacks 'metrics'"):
        scirepeval.read_registry(path)


@pytest.fixture(scope="module")
def fixture_results():
    return scirepeval.evaluate(FIXTURE, FIXTURE / "embeddings.jsonl", progress=False)


def test_classification_and_few_shot_match_hand_computation(fixture_results):
    biomimicry = fixture_results["tasks"]["Biomimicry"]
    # Predictions [1,0,1,0,1] vs labels [1,0,0,1,1]: TP 2, FP 1, FN 1 -> binary F1 2/3.
    # The sixth test paper has no embedding: left out (SupervisedEvaluator) and counted.
    assert biomimicry["metrics"] == {"f1": 66.67} and biomimicry["n_test"] == 5
    # 12 training papers, sample 4 -> 3 stratified folds, so 3 of the 5 iterations exist.
    assert biomimicry["few_shot"] == [{"sample_size": 4, "iterations": 3, "results": {"f1": 66.67}, "skipped": 0}]
    # Multi-label [x>0, y>0]: label A F1 0.8 (one positive missed), label B F1 1.0 -> macro 90.
    assert fixture_results["tasks"]["Fields of study"]["metrics"] == {"f1_macro": 90.0}
    assert fixture_results["tasks"]["Fields of study"]["labels_without_test_or_prediction"] == 0
    assert fixture_results["missing_embeddings"] == {"count": 1, "examples": ["bio-t5"]}


def test_a_label_without_test_or_predicted_paper_scores_zero_as_officially_and_warns_nothing():
    import warnings

    # label 0 has no true and no predicted test paper (a small split's missing field); labels 1 and 2 F1 1.0 and 0.5.
    # The official evaluator (sklearn's default zero_division) scores label 0 as 0: macro (0 + 1 + 0.5) / 3 = 50.
    y_true = np.array([[0, 1, 1], [0, 1, 0], [0, 0, 1]])
    y_pred = np.array([[0, 1, 1], [0, 1, 1], [0, 0, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # sklearn's UndefinedMetricWarning would fail here
        assert scirepeval._metric("f1_macro", y_true, y_pred) == 50.0
        assert scirepeval._metric("precision_macro", y_true, y_pred) == round(100 * (0 + 1 + 0.5) / 3, 2)
        assert scirepeval._metric("recall_macro", y_true, y_pred) == 50.0
        assert scirepeval._metric("accuracy", y_true, y_pred) == round(100 / 3, 2)  # exact-match rows


def test_regression_kendall_tau(fixture_results):
    # Predictions increase with x; labels 1,3,2,4: 5 concordant, 1 discordant pair -> tau 4/6.
    assert fixture_results["tasks"]["Publication Year"]["metrics"] == {"kendalltau": 66.67}


def test_ranking_tasks_match_hand_computation(fixture_results):
    # RELISH: graded ranking a(2) b(0) c(1): DCG 2 + 1/log2(4), ideal 2 + 1/log2(3).
    relish = (2 + 0.5) / (2 + 1 / math.log2(3))
    assert fixture_results["tasks"]["RELISH"]["metrics"] == {"ndcg": round(100 * relish, 2)}
    # Reviewers: top-3 mean cosine r1 = (1 + .8 + .6)/3 = .8, r2 = .9, r3 = .5 -> r2 r1 r3;
    # relevant r1 and r3: AP (1/2 + 2/3)/2; P@5 = 2/5.  (Max-similarity would put r1 first.)
    assert fixture_results["tasks"]["Paper-Reviewer Matching"]["metrics"] == {"map": 58.33, "P_5": 40.0}
    # Ad-hoc search: the relevant document is second -> nDCG 1/log2(3).
    assert fixture_results["tasks"]["TREC-CoVID"]["metrics"] == {"ndcg": round(100 / math.log2(3), 2)}


def test_aggregates(real_registry):
    tasks = scirepeval.read_registry(real_registry)
    results = {"Search": {"metrics": {"ndcg": 80.0}}, "Biomimicry": {"metrics": {"f1": 60.0}},
               "Paper-Reviewer Matching": {"metrics": {"P_5": 40.0, "P_10": 20.0}},
               "SciDocs Cite": {"metrics": {"map": 90.0, "ndcg": 94.0}}}
    aggregates = scirepeval.aggregates(results, tasks)
    assert aggregates["in_train"] == 80.0
    assert aggregates["out_of_train"] == 45.0  # mean of 60 and (40 + 20)/2
    assert aggregates["scidocs"] == 92.0
    assert aggregates["all"] == pytest.approx(np.mean([80, 60, 30, 90, 94]))
    assert aggregates["formats"] == {"CLF": 60.0, "PRX": 30.0, "QRY": 80.0}
    assert aggregates["tasks_counted"] == {"in_train": 1, "out_of_train": 2, "scidocs": 1}


def test_aggregates_reproduce_the_published_average(monkeypatch):
    # BENCHMARKING.md, SPECTER: In-Train 54.3, Out-of-Train 57.4, SciDocs 89.1 -> Average 67.9.
    tasks = [scirepeval.Task(f"in{i}", "proximity", {}, ["map"]) for i in range(7)]
    tasks += [scirepeval.Task(f"out{i}", "proximity", {}, ["map"]) for i in range(11)]
    tasks += [scirepeval.Task(name, "proximity", {}, ["map", "ndcg"]) for name in scirepeval.SCIDOCS_TASKS]
    results = {}
    for task in tasks[:7]:
        results[task.name] = {"metrics": {"map": 54.3}}
    for task in tasks[7:18]:
        results[task.name] = {"metrics": {"map": 57.4}}
    for task in tasks[18:]:
        results[task.name] = {"metrics": {"f1": 89.1} if "MAG" in task.name or "MeSH" in task.name
                              else {"map": 89.1, "ndcg": 89.1}}
    monkeypatch.setattr(scirepeval, "IN_TRAIN_TASKS", frozenset(t.name for t in tasks[:7]))
    aggregates = scirepeval.aggregates(results, tasks)
    # (7 × 54.3 + 11 × 57.4 + 10 × 89.1) / 28 = 67.946, printed as 67.9.
    assert aggregates["scidocs"] == 89.1 and aggregates["all"] == pytest.approx(67.95)


def test_bad_data_and_skipped_tasks(tmp_path, capsys):
    data = tmp_path / "d"
    shutil.copytree(FIXTURE, data)
    shutil.rmtree(data / "scirepeval_test" / "relish")
    result = scirepeval.evaluate(data, FIXTURE / "embeddings.jsonl", tasks=["RELISH", "TREC-CoVID"], progress=False)
    assert set(result["tasks"]) == {"TREC-CoVID"}
    assert result["skipped_tasks"] == {"RELISH": f"no test data under {data / 'scirepeval_test' / 'relish'}"}
    assert "1 tasks have no data here" in capsys.readouterr().err
    (data / "scirepeval_test" / "trec_covid" / "test.jsonl").write_text('{"query_id": "tq1", "cand_id": "td1"}\n')
    with pytest.raises(ValueError, match=r"trec_covid/test\.jsonl: row 1 lacks \['score'\]"):
        scirepeval.evaluate(data, FIXTURE / "embeddings.jsonl", tasks=["TREC-CoVID"], progress=False)
    with pytest.raises(ValueError, match="unknown SciRepEval tasks"):
        scirepeval.evaluate(data, FIXTURE / "embeddings.jsonl", tasks=["Nope"], progress=False)


def test_task_documents_read_both_metadata_formats():
    tasks = {t.name: t for t in scirepeval.read_registry(FIXTURE / "scirepeval_tasks.jsonl")}
    relish = scirepeval.task_documents(FIXTURE, tasks["RELISH"])
    assert [d["doc_id"] for d in relish] == ["rq", "ra", "rb", "rc"]
    search = scirepeval.task_documents(FIXTURE, tasks["TREC-CoVID"])
    assert search[0] == {"title": "coronavirus transmission", "doc_id": "tq1"}
    assert [d["doc_id"] for d in search[1:]] == ["td1", "td2"]


def test_cli_contract(capsys):
    from sdr.cli import main

    assert main(["evaluate", "scirepeval", "--data-dir", str(FIXTURE), "--embeddings",
                 str(FIXTURE / "embeddings.jsonl"), "--task", "RELISH", "--json"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["tasks"]["RELISH"]["metrics"]["ndcg"] == 95.02


def test_replica_registry_layout_and_scores(tmp_path):
    from test_eval_scidocs import community_embeddings, tiny_corpus

    corpus = tiny_corpus()
    out = write_scirepeval(corpus, tmp_path / "sre", n_queries=8, progress=False)
    registry = scirepeval.read_registry(out / "scirepeval_tasks.jsonl")
    assert {task.type for task in registry} == set(scirepeval.TASK_TYPES)
    assert {task.group for task in registry} == {"in_train", "out_of_train", "scidocs"}
    # Embed exactly what each task's metadata lists: nothing the evaluator needs may be absent.
    base = community_embeddings(corpus, noise=0.3)
    vectors = {}
    for task in registry:
        for document in scirepeval.task_documents(out, task):
            source = document["doc_id"] if document["doc_id"] in base else next(
                pid for pid, paper in corpus.papers.items() if paper.title == document["title"])
            vectors[document["doc_id"]] = base[source]
    good = scirepeval.evaluate(out, vectors, few_shot=False, progress=False)
    assert good["missing_embeddings"]["count"] == 0 and not good["skipped_tasks"]
    assert good["aggregates"]["tasks_counted"] == {"in_train": 7, "out_of_train": 2, "scidocs": 6}
    rng = np.random.default_rng(0)
    random = scirepeval.evaluate(out, {k: rng.normal(size=16) for k in vectors}, few_shot=False, progress=False)
    assert good["aggregates"]["scidocs"] > random["aggregates"]["scidocs"] + 20
    assert good["tasks"]["SciDocs MAG"]["metrics"]["f1_macro"] == 100.0


def test_replica_task_names_are_official(tmp_path, real_registry):
    from test_eval_scidocs import tiny_corpus

    out = write_scirepeval(tiny_corpus(), tmp_path / "sre", n_queries=8, progress=False)
    registry = scirepeval.read_registry(out / "scirepeval_tasks.jsonl")
    official = {json.loads(line)["name"] for line in real_registry.read_text().splitlines() if line.strip()}
    assert {task.name for task in registry} <= official  # official names, official schema
