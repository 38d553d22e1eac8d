"""Issue 27: bad input never passes silently, never destroys a file, never runs code.

One test (or parametrized case) per case of the issue: outputs that would overwrite an input, model files that
would run code, input values that changed scores silently, crashes and vague errors, and the side effects of a
failed download. Every error is checked for its file (and line) and for a non-zero exit where a command runs.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import urllib.error
from pathlib import Path

import numpy as np
import pytest

from sdr import cli, datasets, facets, graph
from sdr.evaluate import csfcube, mdcr
from sdr.evaluate.embeddings import read_embeddings
from sdr.jsonio import InputError, load_json, read_jsonl

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "data" / "fixtures"
CFS3 = FIXTURES / "cfs3"


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ============================================================================ outputs never destroy inputs


@pytest.fixture()
def edges(tmp_path) -> Path:
    return write(tmp_path / "edges.tsv", "a\tb\nb\tc\nc\ta\n")


def test_graph_embed_refuses_its_own_input(edges, capsys, monkeypatch):
    # sdr graph embed streams its edge files (sdr.graph.cli looks up embed_edge_files): nothing may run before the check
    monkeypatch.setattr(graph.cli, "embed_edge_files",
                        lambda *a, **k: pytest.fail("trained although the output is the input"))
    before = edges.read_bytes()
    code, _, err = run(["graph", "embed", edges, "--dim", "4", "--out", edges], capsys)
    assert code == 2 and f"--out {edges} is the input EDGES {edges}" in err
    assert edges.read_bytes() == before
    link = edges.with_name("link.tsv")  # through a symbolic link: the same file after resolving links
    link.symlink_to(edges)
    code, _, err = run(["graph", "embed", link, "--dim", "4", "--out", edges, "--force"], capsys)
    assert code == 2 and "the same file after resolving links" in err and edges.read_bytes() == before
    hard = edges.with_name("hard.tsv")  # a hard link is the same file too
    os.link(edges, hard)
    code, _, err = run(["graph", "embed", edges, "--dim", "4", "--out", hard, "--force"], capsys)
    assert code == 2 and "is the input EDGES" in err and edges.read_bytes() == before


def test_graph_embed_checks_the_output_before_training(edges, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(graph.cli, "embed_edge_files",
                        lambda *a, **k: pytest.fail("trained before the output was checked"))
    code, _, err = run(["graph", "embed", edges, "--dim", "4", "--out", edges / "out.jsonl"], capsys)
    assert code == 2 and f"{edges} is not a folder" in err  # cannot be written: found before the training
    code, _, err = run(["graph", "embed", edges, "--dim", "4", "--out", tmp_path], capsys)
    assert code == 2 and "is a folder; expected the path of a file" in err
    existing = write(tmp_path / "old.jsonl", "keep me\n")
    code, _, err = run(["graph", "embed", edges, "--dim", "4", "--out", existing], capsys)
    assert code == 2 and f"--out {existing} exists; pass --force to replace it" in err
    assert existing.read_text() == "keep me\n"


def test_graph_embed_with_force_replaces_and_says_so(edges, tmp_path, capsys, monkeypatch):
    def fake_embed_edge_files(paths, config, *args, **kwargs):
        ids = sorted({node for citing, cited, _ in graph.EdgeFiles(paths).chunks() for node in (*citing, *cited)})
        return graph.GraphEmbedding(ids, np.ones((len(ids), config.dimension), np.float32), config)

    monkeypatch.setattr(graph.cli, "embed_edge_files", fake_embed_edge_files)
    out = write(tmp_path / "old.jsonl", "keep me\n")
    code, _, err = run(["graph", "embed", edges, "--dim", "4", "--out", out, "--force"], capsys)
    assert code == 0 and f"--out {out}: replaced the existing file (--force)" in err
    assert set(read_embeddings(out)) == {"a", "b", "c"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def _abstracts(tmp_path) -> Path:
    good = {"paper_id": "p1", "title": "T", "abstract": "Prior work is limited. We train a model."}
    return write(tmp_path / "abstracts.jsonl", "\n".join([json.dumps(good), "{broken", json.dumps(
        {**good, "paper_id": "p2"})]) + "\n")


@pytest.fixture(scope="module")
def classifier():
    from test_facets import fixture_abstracts

    abstracts, labels = fixture_abstracts()
    return facets.SentenceClassifier(folds=3).fit(abstracts, labels)


def test_facets_split_refuses_its_own_input(tmp_path, classifier, capsys):
    source = _abstracts(tmp_path)
    model = classifier.save(tmp_path / "model.npz")
    before, model_bytes = source.read_bytes(), model.read_bytes()
    code, _, err = run(["facets", "split", source, "--out", source, "--skip-bad", "--model", model], capsys)
    assert code == 2 and f"--out {source} is the input ABSTRACTS {source}" in err and source.read_bytes() == before
    code, _, err = run(["facets", "split", source, "--out", model, "--model", model, "--force"], capsys)
    assert code == 2 and "is the input --model" in err and model.read_bytes() == model_bytes
    with pytest.raises(ValueError, match="is the input ABSTRACTS"):  # the Python API refuses too
        facets.split_file(source, source, facets.ClassifierSplitter(classifier), skip_bad=True)
    assert source.read_bytes() == before


def test_facets_train_refuses_its_data_and_an_existing_model(tmp_path, capsys, monkeypatch):
    # sdr facets train looks train_classifier up in sdr.facets.cli
    monkeypatch.setattr(facets.cli, "train_classifier", lambda *a, **k: pytest.fail("trained before the check"))
    data = tmp_path / "csabstruct"
    data.mkdir()
    train = write(data / "train.jsonl", json.dumps({"sentences": ["a", "b"], "labels": ["method", "result"]}) + "\n")
    before = train.read_bytes()
    code, _, err = run(["facets", "train", "--data-dir", data, "--out", train, "--force"], capsys)
    assert code == 2 and f"--out {train} lies inside the input folder --data-dir {data}" in err
    assert train.read_bytes() == before
    model = write(tmp_path / "model.npz", "an older model")
    code, _, err = run(["facets", "train", "--data-dir", data, "--out", model], capsys)
    assert code == 2 and "exists; pass --force to replace it" in err and model.read_text() == "an older model"


def _cfs3(out, *extra) -> list:
    return ["cfs3", "build", "--phrasebank", CFS3 / "phrases.tsv", "--sentences", CFS3 / "sentences.jsonl",
            "--out", out, "--no-progress", *extra]


def test_cfs3_build_refuses_its_own_input(tmp_path, capsys, monkeypatch):
    import sdr.cfs3.build

    monkeypatch.setattr(sdr.cfs3.build, "build_cfs3", lambda *a, **k: pytest.fail("built before the check"))
    sentences = tmp_path / "sentences.jsonl"
    sentences.write_bytes((CFS3 / "sentences.jsonl").read_bytes())
    before = sentences.read_bytes()
    argv = ["cfs3", "build", "--phrasebank", CFS3 / "phrases.tsv", "--sentences", sentences, "--no-progress"]
    for extra in (["--out", sentences], ["--out", tmp_path / "o.jsonl", "--stats", sentences],
                  ["--out", tmp_path / "o.jsonl", "--ngram-dict", sentences]):
        code, _, err = run(argv + extra + ["--force"], capsys)
        assert code == 2 and f"{sentences} is the input --sentences" in err, err
        assert sentences.read_bytes() == before
    phrasebank = tmp_path / "phrasebank"
    phrasebank.mkdir()
    for page in (CFS3 / "phrasebank").iterdir():
        (phrasebank / page.name).write_bytes(page.read_bytes())
    code, _, err = run(["cfs3", "build", "--phrasebank", phrasebank, "--sentences", sentences, "--out",
                        phrasebank / "introducing-work.json", "--force", "--no-progress"], capsys)
    assert code == 2 and "lies inside the input folder --phrasebank" in err
    assert tree(phrasebank) == tree(CFS3 / "phrasebank")


def test_cfs3_build_refuses_two_outputs_on_one_file(tmp_path, capsys):
    out = tmp_path / "cfs3.jsonl"
    code, _, err = run(_cfs3(out, "--stats", out), capsys)
    assert code == 2 and f"--stats {out} and --out {out} name the same file" in err
    assert not out.exists()  # nothing written, not "both were written"
    code, _, err = run(_cfs3(out, "--split", "--ngram-dict", tmp_path / "cfs3_train.jsonl"), capsys)
    assert code == 2 and "name the same file" in err


def test_cfs3_build_writes_all_outputs_together_or_none(tmp_path, capsys, monkeypatch):
    import sdr.cfs3.dataset

    out = tmp_path / "cfs3.jsonl"
    original = sdr.cfs3.dataset.label_table
    monkeypatch.setattr(sdr.cfs3.dataset, "label_table", lambda *a, **k: 1 / 0)  # fails while writing --stats
    with pytest.raises(ZeroDivisionError):
        cli.main([str(a) for a in _cfs3(out, "--split", "--stats", tmp_path / "stats.json")])
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file
    monkeypatch.setattr(sdr.cfs3.dataset, "label_table", original)
    code, _, err = run(_cfs3(out, "--split", "--stats", tmp_path / "stats.json"), capsys)
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == [
        "cfs3.jsonl", "cfs3_train.jsonl", "cfs3_valid.jsonl", "stats.json"]
    json.loads((tmp_path / "stats.json").read_text(), parse_constant=pytest.fail)  # strict JSON


# ============================================================================ nothing executes from a file


class Planted:
    """A pickle that creates a file when it is loaded."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


@pytest.fixture()
def planted(tmp_path):
    marker = tmp_path / "code-ran"
    payload = pickle.dumps(Planted(marker))
    pickle.loads(payload).close()  # the plant works: unpickling it creates the marker
    assert marker.exists()
    marker.unlink()
    return payload, marker


def test_a_planted_pickle_never_runs_wherever_a_model_file_is_accepted(tmp_path, planted, capsys, monkeypatch):
    payload, marker = planted
    model = tmp_path / "M.joblib"
    model.write_bytes(payload)
    expected = rf"{model}: a pickle .*; expected a facet classifier .* Pickles are never loaded"
    with pytest.raises(InputError, match=expected):
        facets.SentenceClassifier.load(model)
    with pytest.raises(InputError, match=expected):
        facets.load_or_train(path=model)
    code, _, err = run(["facets", "split", _abstracts(tmp_path), "--out", tmp_path / "o.jsonl", "--skip-bad",
                        "--model", model], capsys)
    assert code == 2 and f"{model}: a pickle" in err
    # the classifier cached in the user's cache: loaded by `sdr facets split` without --model
    monkeypatch.setenv("SDR_MODEL_CACHE", str(tmp_path / "models"))
    cached = facets.default_model_path()
    cached.parent.mkdir(parents=True)
    cached.write_bytes(payload)
    code, _, err = run(["facets", "split", _abstracts(tmp_path), "--out", tmp_path / "o.jsonl", "--skip-bad"],
                       capsys)
    assert code == 2 and f"{cached}: a pickle" in err
    assert not marker.exists()
    assert not (tmp_path / "o.jsonl").exists()


def test_an_old_joblib_model_in_the_cache_is_never_opened(tmp_path, planted, monkeypatch):
    from test_facets import fixture_abstracts

    payload, marker = planted
    monkeypatch.setenv("SDR_MODEL_CACHE", str(tmp_path / "models"))
    old = tmp_path / "models" / "facets" / "csabstruct-stacked-lr.joblib"  # the name earlier versions used
    old.parent.mkdir(parents=True)
    old.write_bytes(payload)
    data = tmp_path / "csabstruct"
    data.mkdir()
    abstracts, labels = fixture_abstracts()
    write(data / "train.jsonl", "".join(json.dumps({"sentences": a, "labels": y}) + "\n"
                                        for a, y in zip(abstracts, labels)))
    model = facets.load_or_train(data)  # trains and caches a .npz; the .joblib is left alone
    assert facets.default_model_path().suffix == ".npz" and facets.default_model_path().exists()
    assert not marker.exists() and model.labels


def _tampered(tmp_path, classifier, **changes) -> Path:
    path = classifier.save(tmp_path / "good.npz")
    with np.load(path) as bundle:
        arrays = {name: bundle[name] for name in bundle.files}
    arrays.update(changes)
    tampered = tmp_path / "tampered.npz"
    with tampered.open("wb") as handle:
        np.savez(handle, **{k: v for k, v in arrays.items() if v is not None})
    return tampered


@pytest.mark.parametrize("case", ["text", "empty", "zip", "object array", "missing array", "bad shape", "nan",
                                  "bad header", "other format"])
def test_a_non_model_file_as_model_is_a_clear_error(tmp_path, classifier, case):
    if case == "text":
        path = write(tmp_path / "m.npz", "not a model\n")
    elif case == "empty":
        path = write(tmp_path / "m.npz", "")
    elif case == "zip":
        import zipfile

        path = tmp_path / "m.npz"
        with zipfile.ZipFile(path, "w") as bundle:
            bundle.writestr("readme.txt", "hello")
    elif case == "object array":  # numpy stores object arrays as pickles: refused, not unpickled
        path = _tampered(tmp_path, classifier, idf=np.array([{"a": 1}], dtype=object))
    elif case == "missing array":
        path = _tampered(tmp_path, classifier, second_coef=None)
    elif case == "bad shape":
        with np.load(classifier.save(tmp_path / "g.npz")) as bundle:
            coef = bundle["first_coef"]
        path = _tampered(tmp_path, classifier, first_coef=coef[:, :-1])
    elif case == "nan":
        with np.load(classifier.save(tmp_path / "g.npz")) as bundle:
            intercept = bundle["second_intercept"].copy()
        intercept[0] = np.nan
        path = _tampered(tmp_path, classifier, second_intercept=intercept)
    elif case == "bad header":
        path = _tampered(tmp_path, classifier, header=np.frombuffer(b"{not json", dtype=np.uint8))
    else:
        header = json.dumps({"format": "something else", "version": 1}).encode()
        path = _tampered(tmp_path, classifier, header=np.frombuffer(header, dtype=np.uint8))
    with pytest.raises(InputError, match=rf"^{path}: .*expected a facet classifier written by `sdr facets train`"):
        facets.SentenceClassifier.load(path)


def test_the_safe_model_format_round_trips_exactly(tmp_path, classifier):
    from test_facets import fixture_abstracts

    abstracts, _ = fixture_abstracts()
    again = facets.SentenceClassifier.load(classifier.save(tmp_path / "model.npz"))
    for ours, theirs in zip(classifier.predict_proba(abstracts), again.predict_proba(abstracts)):
        np.testing.assert_array_equal(ours, theirs)
    assert (again.labels, again.trained_on, again.window) == (classifier.labels, classifier.trained_on,
                                                              classifier.window)


# ============================================================================ scores never change silently


def embeddings_file(tmp_path, *lines: str, name: str = "emb.jsonl") -> Path:
    return write(tmp_path / name, "\n".join(lines) + "\n")


GOOD = '{"paper_id": "a", "embedding": [1.0, 2.0]}'


@pytest.mark.parametrize("line, expected", [
    ('{"paper_id": "b", "embedding": [NaN, 1.0]}', r"NaN is not a JSON number"),
    ('{"paper_id": "b", "embedding": [Infinity, 1.0]}', r"Infinity is not a JSON number"),
    ('{"paper_id": "b", "embedding": [-Infinity, 1.0]}', r"-Infinity is not a JSON number"),
    ('{"paper_id": "b", "embedding": [1e999, 1.0]}', r"1e999 overflows a 64-bit float"),
    ('{"paper_id": "b", "embedding": [1e39, 1.0]}', r"'embedding' value 0 \(1e\+39\) is not a finite float32"),
    ('{"paper_id": "b", "embedding": [1' + "0" * 400 + ', 1.0]}', r"'embedding' value 0 \(1000.*\) is not a finite float32"),
], ids=["nan", "inf", "-inf", "overflow-float64", "overflow-float32", "huge-int"])
def test_embeddings_refuse_non_finite_numbers(tmp_path, line, expected):
    path = embeddings_file(tmp_path, GOOD, line)
    with pytest.raises(InputError, match=rf"^{path}:2: {expected}"):
        read_embeddings(path)


def test_embeddings_refuse_a_repeated_id(tmp_path):
    path = embeddings_file(tmp_path, GOOD, '{"paper_id": "b", "embedding": [0, 0]}', GOOD.replace("1.0", "9.0"))
    with pytest.raises(InputError, match=rf"^{path}:3: id 'a' again \(first on line 1\); expected each id once"):
        read_embeddings(path)
    path = embeddings_file(tmp_path, GOOD, '{"paper_id": 7, "embedding": [0, 0]}', '{"id": "7", "embedding": [1, 1]}')
    with pytest.raises(InputError, match=r":3: id '7' again"):
        read_embeddings(path)


@pytest.mark.parametrize("line, expected", [
    ('{"paper_id": "b", "embedding": [true, 1.0]}', r"'embedding' value 0 is true; expected numbers only"),
    ('{"paper_id": "b", "embedding": [1.0, false]}', r"'embedding' value 1 is false"),
    ('{"paper_id": "b", "embedding": [true, false]}', r"'embedding' value 0 is true"),
    ('{"paper_id": null, "embedding": [1.0, 2.0]}', r"'paper_id' is null; expected a non-empty string id"),
    ('{"paper_id": true, "embedding": [1.0, 2.0]}', r"'paper_id' is true; expected a non-empty string id"),
    ('{"paper_id": "", "embedding": [1.0, 2.0]}', r"'paper_id' is \"\"; expected a non-empty string id"),
    ('{"paper_id": 1.5, "embedding": [1.0, 2.0]}', r"'paper_id' is 1.5"),
    ('{"paper_id": "b", "embedding": {"x": 1.0}}', r"'embedding' is a JSON dict; expected a non-empty list"),
    ('{"paper_id": "b", "embedding": [[1.0], [2.0]]}', r"'embedding' value 0 is \[1.0\]; expected numbers only"),
    ('{"paper_id": "b", "embedding": "1.0 2.0"}', r"'embedding' is \"1.0 2.0\"; expected a non-empty list"),
    ('{"paper_id": "b", "embedding": []}', r"'embedding' is an empty list"),
    ('{"paper_id": "b", "embedding": [1.0, null]}', r"'embedding' value 1 is null"),
    ('{"paper_id": "b", "embedding": [1.0, 2.0, 3.0]}', r"the embedding has 3 dimensions; expected 2"),
    ('{"paper_id": "b", "paper_id": "c", "embedding": [1.0, 2.0]}', r"key 'paper_id' appears twice"),
    ('{"paper_id": "b"}', r"found keys \['paper_id'\]; expected 'paper_id' \(or 'doc_id'/'id'\) and 'embedding'"),
], ids=["bool", "bool-later", "all-bools", "null-id", "bool-id", "empty-id", "float-id", "dict-vector",
        "nested", "string-vector", "empty-vector", "null-value", "dimension", "repeated-key", "no-vector"])
def test_embeddings_refuse_wrong_types(tmp_path, line, expected):
    path = embeddings_file(tmp_path, GOOD, line)
    with pytest.raises(InputError, match=rf"^{path}:2: {expected}"):
        read_embeddings(path)


def test_embeddings_error_exits_non_zero_with_file_and_line(tmp_path, capsys):
    labels = write(tmp_path / "labels.jsonl", '{"id": "a", "label": "x"}\n{"id": "b", "label": "y"}\n')
    path = embeddings_file(tmp_path, GOOD, '{"paper_id": "b", "embedding": [NaN, 1.0]}')
    code, out, err = run(["evaluate", "sentences", "--labels", labels, "--embeddings", path, "--json"], capsys)
    assert code == 2 and out == "" and f"{path}:2: NaN is not a JSON number" in err


def test_ranking_refuses_a_repeated_candidate(tmp_path):
    import shutil

    shutil.copytree(FIXTURES / "csfcube" / "rankings", tmp_path / "r")
    path = tmp_path / "r" / "test-pid2pool-csfcube-toy-method-ranked.json"
    ranking = json.loads(path.read_text())
    query = next(iter(ranking))
    ranking[query].insert(3, ranking[query][0])  # the top candidate again: its relevance would count twice
    path.write_text(json.dumps(ranking))
    with pytest.raises(InputError, match=rf"{path}: query {query}, rank 4: candidate .* again \(first at rank 1\)"):
        csfcube.evaluate(FIXTURES / "csfcube", rankings_dir=tmp_path / "r", name="toy")
    del ranking[query][3]
    ranking[query][1] = [ranking[query][1][0], float("nan")]
    path.write_text(json.dumps(ranking))  # Python writes NaN, which is not JSON
    with pytest.raises(InputError, match=rf"{path}:1: NaN is not a JSON number"):
        csfcube.evaluate(FIXTURES / "csfcube", rankings_dir=tmp_path / "r", name="toy")
    with pytest.raises(ValueError, match="candidates ranked more than once"):  # the Python API too
        pools = {f: {q: [c for c, _ in cands] for q, cands in json.loads(
            (FIXTURES / "csfcube" / "rankings" / f"test-pid2pool-csfcube-toy-{f}-ranked.json").read_text()).items()}
            for f in csfcube.FACETS}
        first = next(iter(pools["result"]))
        pools["result"][first].append(pools["result"][first][0])
        csfcube.evaluate(FIXTURES / "csfcube", ranked=pools)


def _scores(tmp_path, **changes) -> Path:
    scores = json.loads((FIXTURES / "mdcr" / "scores_test.json").read_text())
    scores.update(changes)
    path = tmp_path / "scores.json"
    path.write_text(json.dumps({k: v for k, v in scores.items() if v is not ...}))
    return path


def test_mdcr_scores_refuse_nan_and_unknown_pairs(tmp_path, capsys):
    path = _scores(tmp_path, qa_t1=float("nan"))
    with pytest.raises(InputError, match=rf"^{path}:\d+: NaN is not a JSON number"):
        mdcr.evaluate(FIXTURES / "mdcr", scores=path)
    path = _scores(tmp_path, qa_t1=True)
    with pytest.raises(InputError, match=rf"^{path}: score of 'qa_t1' is true; expected a finite number"):
        mdcr.evaluate(FIXTURES / "mdcr", scores=path)
    path = _scores(tmp_path, qz_t1=0.5, qa_zz=0.1)
    code, out, err = run(["evaluate", "mdcr", "--data-dir", FIXTURES / "mdcr", "--scores", path, "--json"], capsys)
    assert code == 2 and out == ""
    assert f"{path}: 2 of 15 keys name no query-candidate pair of this split (e.g. 'qz_t1', 'qa_zz')" in err
    with pytest.raises(InputError, match="not finite numbers"):  # the Python API
        mdcr.evaluate(FIXTURES / "mdcr", scores={"qa_t1": float("inf")})


def test_mdcr_json_is_strict_json_with_null_for_an_undefined_metric(tmp_path, capsys):
    path = _scores(tmp_path, qc_v1=..., qc_w1=...)  # Biology's one query has no score: its metrics are undefined
    code, out, err = run(["evaluate", "mdcr", "--data-dir", FIXTURES / "mdcr", "--scores", path, "--json"], capsys)
    assert code == 0
    result = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in --json output"))
    assert result["fields"]["Biology"] == {"map": None, "ndcg": None, "recall_5": None}
    assert result["fields"]["Art"]["map"] == 50.0 and result["avg"]["map"] is None
    assert "values are undefined (no query to average) and printed as null: fields.Biology.map" in err


def test_fractional_edge_weights_are_an_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(graph.scale, "_train_pbg", lambda *a, **k: pytest.fail("trained on rounded weights"))
    path = write(tmp_path / "edges.tsv", "a\tb\t2\nb\tc\t0.4\n")
    code, _, err = run(["graph", "embed", path, "--dim", "4", "--out", tmp_path / "out.jsonl"], capsys)
    assert code == 2 and f"{path}:2: weight '0.4'; expected a whole number of repeats >= 1" in err
    assert graph.read_edges_tsv(write(tmp_path / "whole.tsv", "a\tb\t2.0\nb\tc\t3e0\n")) == [
        ("a", "b", 2.0), ("b", "c", 3.0)]


# ============================================================================ crashes and vague errors


def test_a_gz_that_is_not_gzip_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "emb.jsonl.gz"
    path.write_text(GOOD + "\n")
    with pytest.raises(InputError, match=rf"^{path}: not a gzip file \(it starts with b'{{\"'.*\); expected"):
        read_embeddings(path)
    labels = write(tmp_path / "labels.jsonl", '{"id": "a", "label": "x"}\n')
    code, _, err = run(["evaluate", "sentences", "--labels", labels, "--embeddings", path], capsys)
    assert code == 2 and f"{path}: not a gzip file" in err


def test_a_truncated_gz_is_a_clear_error(tmp_path):
    whole = gzip.compress(("\n".join(GOOD.replace('"a"', f'"p{i}"') for i in range(2000)) + "\n").encode())
    path = tmp_path / "emb.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match=rf"^{path}: the gzip stream is broken after line \d+ .*; expected embeddings"):
        read_embeddings(path)
    path.write_bytes(whole[:-3])  # only the trailer cut
    with pytest.raises(InputError, match="the gzip stream is broken"):
        read_embeddings(path)


@pytest.mark.parametrize("reader", ["embeddings", "edges", "sentences", "abstracts", "json", "labels"])
def test_non_utf8_input_names_file_line_and_column(tmp_path, reader):
    from sdr.cfs3.sentences import read_sentences_jsonl
    from sdr.evaluate.sentences import read_labels

    first = {"embeddings": GOOD, "edges": "a\tb", "sentences": '{"id": "s1", "text": "fine"}',
             "abstracts": '{"paper_id": "p", "abstract": "fine"}', "json": "{", "labels": '{"id": "a", "label": "x"}'}
    path = tmp_path / f"{reader}.txt"
    path.write_bytes(first[reader].encode() + b'\n{"x": "caf\xe9"}\n')
    read = {"embeddings": read_embeddings, "edges": graph.read_edges_tsv,
            "sentences": lambda p: read_sentences_jsonl(p, progress=False), "abstracts": facets.read_abstracts,
            "json": load_json, "labels": read_labels}[reader]
    with pytest.raises(InputError, match=rf"^{path}:2: byte 0xe9 at column 11 is not UTF-8; expected .* UTF-8 text"):
        read(path)


def test_skip_bad_also_skips_a_line_that_is_not_utf8(tmp_path, capsys):
    from sdr.jsonio import SkippedLines

    path = tmp_path / "abstracts.jsonl"
    path.write_bytes(b'{"paper_id": "p1", "abstract": "x"}\n{"paper_id": "p2", "abstract": "caf\xe9"}\n'
                     b'{"paper_id": "p1", "abstract": "again"}\n{"paper_id": null, "abstract": "y"}\n')
    skipped = SkippedLines()
    assert [r["paper_id"] for r in facets.read_abstracts(path, skipped)] == ["p1"]
    assert dict(skipped.counts) == {"not_utf8": 1, "duplicate_id": 1, "bad_fields": 1}
    assert skipped.summary().startswith("skipped 3 bad lines (1 bad fields, 1 duplicate id, 1 not utf8)")
    assert f"{path}:4: found {{'paper_id': 'null', 'abstract': 'str'}}" in skipped.summary()


def test_data_verify_names_the_one_missing_file(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    entry = datasets.Dataset("toy", "toy", "a toy dataset", "CC0", "test", (
        datasets.DataFile("a.txt", "https://example.org/a.txt"), datasets.DataFile("b.txt", "https://example.org/b.txt")))
    monkeypatch.setitem(datasets.DATASETS, "toy", entry)
    folder = tmp_path / "cache" / "toy"
    folder.mkdir(parents=True)
    write(folder / "a.txt", "x")
    code, out, _ = run(["data", "verify", "toy"], capsys)
    assert code == 1
    assert f"missing   {folder / 'b.txt'}" in out and "toy: 0 ok, 0 mismatch, 1 missing, 0 absent, 1 unchecked" in out
    folder.joinpath("a.txt").unlink()
    folder.rmdir()
    code, _, err = run(["data", "verify", "toy"], capsys)
    assert code == 2 and "toy: not found in $SDR_DATA (unset) nor in the cache" in err


# ============================================================================ side effects of a failed download


@pytest.fixture()
def offline(tmp_path, monkeypatch):
    """No SDR_DATA, a cache folder that does not exist yet, and every download failing at once."""
    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))

    def refuse(url, *args, **kwargs):
        raise urllib.error.URLError("offline (test)")

    monkeypatch.setattr(datasets.download.urllib.request, "urlopen", refuse)
    return tmp_path / "cache"


def test_evaluate_csfcube_without_data_dir_leaves_no_cache_folder(offline, capsys):
    from sdr import book

    code, out, err = run(["evaluate", "csfcube", "--embeddings", FIXTURES / "csfcube" / "embeddings.jsonl"], capsys)
    assert code == 2 and out == "" and "csfcube: not found in $SDR_DATA (unset) nor in the cache" in err
    assert not offline.exists()  # no empty folder that would later look like data
    assert datasets.data_root() is None and datasets.locate("csfcube") is None


def test_an_interrupted_download_leaves_nothing(offline, tmp_path, monkeypatch):
    source = write(tmp_path / "a.txt", "hello\n")
    entry = datasets.Dataset("toy", "toy", "a toy dataset", "CC0", "test",
                             (datasets.DataFile("a.txt", source.as_uri()),))
    monkeypatch.undo()  # downloads work again (file:// URLs) …
    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(offline))

    def interrupted(response, out, length=0):
        out.write(b"hel")
        raise KeyboardInterrupt  # … but this one is cut off half-way (Ctrl-C)

    monkeypatch.setattr(datasets.download.shutil, "copyfileobj", interrupted)
    with pytest.raises(KeyboardInterrupt):
        datasets.fetch(entry, progress=False)
    assert not offline.exists()
    offline.joinpath("toy").mkdir(parents=True)  # an existing dataset folder keeps only complete files
    with pytest.raises(KeyboardInterrupt):
        datasets.fetch(entry, progress=False)
    assert list(offline.rglob("*")) == [offline / "toy"]
    monkeypatch.setitem(datasets.DATASETS, "toy", entry)
    assert datasets.data_root() is None and datasets.locate("toy") is None


def test_a_failed_archive_leaves_no_partial_dataset(offline, tmp_path, monkeypatch):
    archive = write(tmp_path / "bundle.tar.gz", "not a tar archive")
    entry = datasets.Dataset("bundle", "bundle", "archive", "CC0", "test",
                             (datasets.DataFile("bundle.tar.gz", archive.as_uri(), archive=True),))
    monkeypatch.undo()
    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(offline))
    with pytest.raises(Exception):
        datasets.fetch(entry, progress=False)
    assert not offline.exists()


# ============================================================================ the shared readers


def test_jsonl_reader_refuses_repeated_keys_and_non_finite_numbers_when_asked(tmp_path):
    path = write(tmp_path / "r.jsonl", '{"a": 1, "a": 2}\n')
    with pytest.raises(InputError, match=rf"^{path}:1: key 'a' appears twice in one object"):
        list(read_jsonl(path))
    path = write(tmp_path / "n.jsonl", '{"a": NaN}\n')
    assert np.isnan(next(read_jsonl(path))[1]["a"])  # official files carry NaN in unused fields (SciCite)
    with pytest.raises(InputError, match=rf"^{path}:1: NaN is not a JSON number"):
        list(read_jsonl(path, finite=True))
    path = write(tmp_path / "bom.jsonl", '\ufeff{"a": 1}\n')
    assert list(read_jsonl(path)) == [(1, {"a": 1})]  # a byte-order mark is not an error


def test_an_archive_fetched_again_is_merged_into_the_folder(tmp_path, monkeypatch):
    import io
    import tarfile

    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as bundle:
        for name, payload in (("inner/train.jsonl", b'{"x": 2}\n'), ("top.txt", b"new\n")):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            bundle.addfile(info, io.BytesIO(payload))
    entry = datasets.Dataset("bundle", "bundle", "archive", "CC0", "test",
                             (datasets.DataFile("bundle.tar.gz", archive.as_uri(), archive=True),),
                             expected=("inner/train.jsonl",))
    folder = tmp_path / "cache" / "bundle"
    (folder / "inner").mkdir(parents=True)
    write(folder / "inner" / "train.jsonl", '{"x": 1}\n')
    write(folder / "inner" / "mine.txt", "a file of the user's\n")
    assert datasets.fetch(entry, force=True, progress=False) == folder
    assert tree(folder) == {"bundle.tar.gz": archive.read_bytes(), "inner/mine.txt": b"a file of the user's\n",
                            "inner/train.jsonl": b'{"x": 2}\n', "top.txt": b"new\n"}
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["bundle"]  # no staging folder left


def test_a_file_rewritten_in_place_is_replaced_whole_or_not_at_all(tmp_path):
    from sdr.outputs import rewritten

    path = write(tmp_path / "chapter.ipynb", "old\n")
    path.chmod(0o640)
    with pytest.raises(RuntimeError), rewritten(path) as temporary:
        temporary.write_text("half")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["chapter.ipynb"]
    with rewritten(path) as temporary:
        temporary.write_text("new\n")
    assert path.read_text() == "new\n" and path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["chapter.ipynb"]
