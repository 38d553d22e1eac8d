"""Issue 35, part 1: one output layer (:mod:`sdr.outputs`) under every command that writes.

The first tests enumerate the ``sdr`` command line from its argparse parsers: every leaf command is either
read-only or has a planted case here, and every output option (typed ``output_file`` / ``output_folder``) has one.
Each case plants an unsafe output (the output is an input, lies in ``notebooks/``, is a link, holds the input…),
makes the command's work fail the test if it starts, and checks that the command exits 2 with the layer's one-line
error naming the option, and that the planted input is byte for byte unchanged. The later tests check the layer's
own rules: links, tracked source files, names, folders written whole, owned scratch folders, interrupts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from sdr import cli, outputs
from sdr.outputs import OUTPUT_TYPES, Outputs, UnsafeOutput

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "data" / "fixtures"


def output_options(parser: argparse.ArgumentParser) -> set[str]:
    return {action.dest for action in parser._actions if action.type in OUTPUT_TYPES}


READ_ONLY = {"evaluate csfcube", "evaluate scirepeval", "evaluate mdcr", "evaluate sentences", "evaluate paragraphs",
             "evaluate scidocs", "data list", "data status", "data verify", "book-publish check",
             "book-publish manifest"}
"""Commands that write no file (they print)."""

# command -> its output options (argparse dests) and the outputs it writes without an option
WRITES = {
    "embed": {"out", "labels_out"},
    "evaluate all": {"embeddings_dir", "profile (results store file name)", "$SDR_RESULTS (results store)"},
    "chapter": {"output_dir"},
    "book-setup-cells": {"notebooks"},
    "book-publish configure": {"_config.yml"},
    "book-publish binder-lock": {"requirements-cpu.lock"},
    "graph embed": {"out", "work_dir"},
    "graph collect": {"out"},
    "facets train": {"out"},
    "facets split": {"out"},
    "cfs3 build": {"out", "stats", "ngram_dict"},
    "data fetch": {"$SDR_DATA_CACHE (download cache)"},
    "paper-dry-run": {"workdir"},
    "train": {"run_folder"},
}
OUTPUTISH = re.compile(r"(^|_)(out|output|outputs|work_dir|workdir|stats|ngram_dict|embeddings_dir|save|target)($|_)")


def test_every_command_is_read_only_or_has_its_outputs_listed():
    commands = dict(cli.leaf_commands(cli.build_parser()))
    assert set(commands) == READ_ONLY | set(WRITES), "a command was added or removed: list its outputs here"
    for command, parser in commands.items():
        typed = output_options(parser)
        declared = {name for name in WRITES.get(command, ()) if " " not in name and "." not in name}
        assert typed == declared, f"sdr {command}: options typed as outputs {typed}, listed {declared}"
        for action in parser._actions:  # an option named like an output but not typed as one escapes the layer
            if OUTPUTISH.search(action.dest) and action.nargs != 0:
                assert action.type in OUTPUT_TYPES, f"sdr {command} --{action.dest}: not typed as an output"


def test_every_output_has_a_planted_case():
    planted = {(command, output) for command, output in CASES}
    listed = {(command, output) for command, names in WRITES.items() for output in names}
    assert planted == listed


# ------------------------------------------------------------------------------------------------ the cases

def fail(*args, **kwargs):
    pytest.fail("the command started its work although an output was unsafe")


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def chunks_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": f"c{i}", "paper_id": f"p{i // 2}", "text": f"text {i}"}) + "\n"
                            for i in range(4)), encoding="utf-8")
    return path


def case_embed_out(tmp_path, monkeypatch):
    import sdr.embed

    monkeypatch.setattr(sdr.embed, "load_model", fail)
    chunks = chunks_file(tmp_path / "chunks.jsonl")
    return (["embed", "--model", "minilm", "--benchmark", "paragraphs", "--data-dir", chunks, "--out", chunks,
             "--force"], chunks, "--out")


def case_embed_labels_out(tmp_path, monkeypatch):
    import sdr.embed

    monkeypatch.setattr(sdr.embed, "load_model", fail)
    data = tmp_path / "csabstruct"
    data.mkdir()
    shutil.copy(FIXTURES / "sentences" / "csabstruct.jsonl", data / "test.jsonl")
    return (["embed", "--model", "minilm", "--benchmark", "csabstruct", "--data-dir", data, "--out",
             tmp_path / "e.jsonl", "--labels-out", data / "test.jsonl", "--force"], data, "--labels-out")


def case_evaluate_all_embeddings_dir(tmp_path, monkeypatch):
    import sdr.embed

    monkeypatch.setattr(sdr.embed, "load_model", fail)
    chunks = chunks_file(tmp_path / "vectors" / "paragraphs.jsonl")  # the data is where the vectors would go
    return (["evaluate", "all", "--model", "minilm", "--benchmarks", "paragraphs", "--data-dir",
             f"paragraphs={chunks}", "--embeddings-dir", tmp_path / "vectors", "--no-store", "--force", "--no-cache"],
            chunks, "--embeddings-dir")


def case_evaluate_all_profile(tmp_path, monkeypatch):
    import sdr.embed

    monkeypatch.setattr(sdr.embed, "load_model", fail)
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    stored = tmp_path / "results" / "cfs3" / "paper.json"
    stored.parent.mkdir(parents=True)
    stored.write_text('{"chapter": "cfs3"}')
    chunks = chunks_file(tmp_path / "chunks.jsonl")
    return (["evaluate", "all", "--model", "minilm", "--benchmarks", "paragraphs", "--data-dir",
             f"paragraphs={chunks}", "--profile", "../cfs3/paper", "--no-cache"], tmp_path / "results", "--profile")


def case_evaluate_all_results_store(tmp_path, monkeypatch):
    import sdr.embed

    monkeypatch.setattr(sdr.embed, "load_model", fail)
    monkeypatch.setenv("SDR_RESULTS", str(ROOT / "notebooks"))  # a source folder as the results store
    chunks = chunks_file(tmp_path / "chunks.jsonl")
    return (["evaluate", "all", "--model", "minilm", "--benchmarks", "paragraphs", "--data-dir",
             f"paragraphs={chunks}", "--no-cache"], ROOT / "notebooks", "results store")


def case_chapter_output_dir(tmp_path, monkeypatch):
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", fail)
    return ["chapter", "benchmarks", "--output-dir", ROOT / "notebooks"], ROOT / "notebooks", "--output-dir"


def case_book_setup_cells(tmp_path, monkeypatch):
    copy = tmp_path / "benchmarks.ipynb"
    shutil.copy(ROOT / "notebooks" / "benchmarks.ipynb", copy)
    link = tmp_path / "link.ipynb"
    link.symlink_to(copy)
    return ["book-setup-cells", link], copy, "NOTEBOOKS"


def _book_root(tmp_path, monkeypatch) -> Path:
    from sdr.book import paths

    root = tmp_path / "book"
    root.mkdir()
    monkeypatch.setattr(paths, "ROOT", root)
    monkeypatch.setattr(paths, "NOTEBOOKS", root / "notebooks")
    (root / "notebooks").mkdir()
    return root


def case_book_publish_configure(tmp_path, monkeypatch):
    root = _book_root(tmp_path, monkeypatch)
    real = tmp_path / "elsewhere.yml"
    real.write_text("repository:\n  url: https://github.com/a/b\n  branch: notebooks\n")
    (root / "_config.yml").symlink_to(real)  # written through, it would change a file outside the book
    return ["book-publish", "configure", "--repository", "https://github.com/c/d"], real, "_config.yml"


def case_book_publish_binder_lock(tmp_path, monkeypatch):
    root = _book_root(tmp_path, monkeypatch)
    (root / "requirements.lock").write_text("numpy==2.0.0\ntorch==2.5.0\n")
    (root / "requirements-cpu.lock").symlink_to(root / "requirements.lock")  # the symlinked lock
    return ["book-publish", "binder-lock"], root / "requirements.lock", "requirements-cpu.lock"


def _edges(tmp_path) -> Path:
    path = tmp_path / "edges" / "edges.tsv"
    path.parent.mkdir()
    path.write_text("a\tb\nb\tc\nc\ta\n")
    return path


def case_graph_embed_out(tmp_path, monkeypatch):
    import sdr.graph.cli

    monkeypatch.setattr(sdr.graph.cli, "embed_edge_files", fail)
    edges = _edges(tmp_path)
    return ["graph", "embed", edges, "--dim", "4", "--out", edges, "--force"], edges, "--out"


def case_graph_embed_work_dir(tmp_path, monkeypatch):
    import sdr.graph.cli

    monkeypatch.setattr(sdr.graph.cli, "embed_edge_files", fail)
    edges = _edges(tmp_path)
    return (["graph", "embed", edges, "--dim", "4", "--work-dir", edges.parent, "--force"], edges.parent,
            "--work-dir")


def case_graph_collect_out(tmp_path, monkeypatch):
    import sdr.graph.scale

    monkeypatch.setattr(sdr.graph.scale, "collect_distributed", fail)
    run = tmp_path / "distributed"
    run.mkdir()
    (run / "config.py").write_text("def get_torchbiggraph_config():\n    return {}\n")
    return ["graph", "collect", run, "--out", run, "--force"], run, "--out"


def case_facets_train_out(tmp_path, monkeypatch):
    import sdr.facets.cli

    monkeypatch.setattr(sdr.facets.cli, "train_classifier", fail)
    data = tmp_path / "csabstruct"
    data.mkdir()
    shutil.copy(FIXTURES / "sentences" / "csabstruct.jsonl", data / "train.jsonl")
    return ["facets", "train", "--data-dir", data, "--out", data / "train.jsonl", "--force"], data, "--out"


def case_facets_split_out(tmp_path, monkeypatch):
    import sdr.facets.cli

    monkeypatch.setattr(sdr.facets.cli, "split_file", fail)
    source = tmp_path / "abstracts.jsonl"
    source.write_text(json.dumps({"paper_id": "p1", "title": "T", "abstract": "We do it."}) + "\n")
    return ["facets", "split", source, "--out", source, "--model", tmp_path / "m.npz", "--force"], source, "--out"


def _cfs3(tmp_path, monkeypatch, option):
    import sdr.cfs3.build

    monkeypatch.setattr(sdr.cfs3.build, "build_cfs3", fail)
    sentences = tmp_path / "sentences.jsonl"
    shutil.copy(FIXTURES / "cfs3" / "sentences.jsonl", sentences)
    argv = ["cfs3", "build", "--phrasebank", FIXTURES / "cfs3" / "phrases.tsv", "--sentences", sentences,
            "--out", tmp_path / "out.jsonl", "--no-progress", "--force"]
    return argv + [option, sentences], sentences, option


def case_data_fetch(tmp_path, monkeypatch):
    import sdr.datasets.cli

    monkeypatch.setattr(sdr.datasets.cli, "fetch_any", fail)
    monkeypatch.setenv("SDR_DATA_CACHE", str(ROOT / "data"))  # the book's own data folder as the download cache
    return ["data", "fetch", "csfcube"], ROOT / "data", "download cache"


def case_paper_dry_run(tmp_path, monkeypatch):
    import sdr.dryrun

    monkeypatch.setattr(sdr.dryrun, "build_mirror", fail)
    monkeypatch.setattr(sdr.dryrun, "check_stop", fail)
    mine = tmp_path / "my-files"
    mine.mkdir()
    (mine / "thesis.tex").write_text("months of work")  # a folder of the user's: never emptied
    return ["paper-dry-run", "specter", "--workdir", mine], mine, "--workdir"


def case_train(tmp_path, monkeypatch):
    import sdr.distributed
    from sdr.train import TripletObjective, write_run_spec
    from training_toy import TEXTS, TRIPLETS, toy_config

    monkeypatch.setattr(sdr.distributed, "init_distributed", fail)
    run = write_run_spec(tmp_path / "run", {"name_or_path": "minilm", "num_layers": 1}, TRIPLETS,
                         TripletObjective(TEXTS), toy_config())
    (run / "checkpoint.pt").symlink_to(run / "examples.jsonl")  # a checkpoint would be written over the examples
    return ["train", run], run, "checkpoint.pt"


CASES = {
    ("embed", "out"): case_embed_out,
    ("embed", "labels_out"): case_embed_labels_out,
    ("evaluate all", "embeddings_dir"): case_evaluate_all_embeddings_dir,
    ("evaluate all", "profile (results store file name)"): case_evaluate_all_profile,
    ("evaluate all", "$SDR_RESULTS (results store)"): case_evaluate_all_results_store,
    ("chapter", "output_dir"): case_chapter_output_dir,
    ("book-setup-cells", "notebooks"): case_book_setup_cells,
    ("book-publish configure", "_config.yml"): case_book_publish_configure,
    ("book-publish binder-lock", "requirements-cpu.lock"): case_book_publish_binder_lock,
    ("graph embed", "out"): case_graph_embed_out,
    ("graph embed", "work_dir"): case_graph_embed_work_dir,
    ("graph collect", "out"): case_graph_collect_out,
    ("facets train", "out"): case_facets_train_out,
    ("facets split", "out"): case_facets_split_out,
    ("cfs3 build", "out"): lambda t, m: _cfs3(t, m, "--out"),
    ("cfs3 build", "stats"): lambda t, m: _cfs3(t, m, "--stats"),
    ("cfs3 build", "ngram_dict"): lambda t, m: _cfs3(t, m, "--ngram-dict"),
    ("data fetch", "$SDR_DATA_CACHE (download cache)"): case_data_fetch,
    ("paper-dry-run", "workdir"): case_paper_dry_run,
    ("train", "run_folder"): case_train,
}


def snapshot(path: Path):
    path = Path(path)
    if path.is_dir():
        return tree(path)
    return path.read_bytes() if path.exists() else None


@pytest.mark.parametrize("command, output", sorted(CASES), ids=[f"{c}:{o}" for c, o in sorted(CASES)])
def test_a_planted_unsafe_output_is_refused_by_the_layer_before_the_work(command, output, tmp_path, monkeypatch,
                                                                         capsys):
    argv, planted, label = CASES[(command, output)](tmp_path, monkeypatch)
    before = snapshot(planted)
    refusals = []
    original = UnsafeOutput.__init__

    def record(self, *args):  # the error must come from the layer, not from a check of the command's own
        refusals.append(args[0])
        original(self, *args)

    monkeypatch.setattr(UnsafeOutput, "__init__", record)
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(refusals) == 1 and label in refusals[0], (refusals, err)
    assert err.strip().splitlines()[-1].endswith(" ".join(refusals[0].split()))  # one line, the layer's message
    assert snapshot(planted) == before


# ------------------------------------------------------------------------------------------------ the rules


def test_names_from_options_and_data_cannot_leave_their_folder(tmp_path, monkeypatch):
    from sdr.book import save_results

    for bad in ("../cfs3/paper", "..", ".hidden", "a/b", "a\\b", "", " real", "real ", "a\nb", "-rf"):
        with pytest.raises(UnsafeOutput, match="not a plain name"):
            outputs.safe_name(bad, "--profile")
    assert outputs.safe_name("paper", "--profile") == "paper"
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    with pytest.raises(UnsafeOutput, match="profile '../cfs3/paper'"):
        save_results("external", "../cfs3/paper", {}, [])
    assert not (tmp_path / "results").exists()
    path = save_results("external", "real", {}, ["s"])
    assert path == tmp_path / "results" / "external" / "real.json" and json.loads(path.read_text())["sources"] == ["s"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "results" / "cfs3").symlink_to(outside)  # a link inside the store points out of it
    with pytest.raises(UnsafeOutput, match="lies outside its folder"):
        save_results("cfs3", "paper", {}, [])
    assert list(outside.iterdir()) == []


def test_outputs_never_written_through_a_link(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep")
    link = tmp_path / "out.jsonl"
    link.symlink_to(target)
    with pytest.raises(UnsafeOutput, match="is a symbolic link"):
        Outputs({}, {"--out": link}, force=True).check()
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere" / "x")
    with pytest.raises(UnsafeOutput, match="is a symbolic link"):
        Outputs({}, {"--out": dangling}, force=True).check()
    folder_link = tmp_path / "work"
    folder_link.symlink_to(tmp_path)
    with pytest.raises(UnsafeOutput, match="is a symbolic link"):
        Outputs({}, folders={"--work-dir": folder_link}, force=True).check()
    with pytest.raises(UnsafeOutput, match="symbolic link"), outputs.rewritten(link) as temporary:
        temporary.write_text("x")
    assert target.read_text() == "keep"


def test_tracked_source_files_and_special_files_are_never_outputs(tmp_path):
    for path in (ROOT / "README.md", ROOT / "lib" / "sdr" / "cli.py", ROOT / "notebooks" / "specter.ipynb"):
        with pytest.raises(UnsafeOutput, match="tracked source file|sdr library"):
            Outputs({}, {"--out": path}, force=True).check()
    with pytest.raises(UnsafeOutput, match="holds tracked source files|holds the repository"):
        Outputs({}, stores={"--output-dir": ROOT / "lib"}).check()
    with pytest.raises(UnsafeOutput, match="holds the repository"):
        Outputs({}, stores={"--workdir": ROOT.parent}).check()
    assert Outputs({}, {"--out": ROOT / "results" / "x.json"}, maintained=["--out"]).check()  # ignored, not tracked
    assert Outputs({}, {"lock": ROOT / "requirements-cpu.lock"}, maintained=["lock"]).check()  # declared by binder-lock
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for special in (fifo, Path("/dev/null")):
        with pytest.raises(UnsafeOutput, match="FIFO|character device"):
            Outputs({}, {"--out": special}, force=True).check()


def test_an_unwritable_output_fails_at_once_naming_path_and_reason(tmp_path, capsys, monkeypatch):
    import sdr.graph.cli

    monkeypatch.setattr(sdr.graph.cli, "embed_edge_files", fail)
    edges = _edges(tmp_path)
    code = cli.main(["graph", "embed", str(edges), "--dim", "4", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and f"--out {tmp_path}: is a folder; expected the path of a file to write" in err
    assert "Errno" not in err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = cli.main(["graph", "embed", str(edges), "--dim", "4", "--out", str(blocker / "sub" / "o.jsonl")])
    assert code == 2 and f"{blocker} is not a folder" in capsys.readouterr().err


def test_a_folder_output_is_written_whole_or_not_at_all(tmp_path):
    work = tmp_path / "work"
    layer = Outputs({}, folders={"--work-dir": work})
    with pytest.raises(KeyboardInterrupt), layer.commit() as staged:
        (staged["--work-dir"] / "checkpoint.pt").write_bytes(b"x" * 1000)
        raise KeyboardInterrupt  # interrupted mid-run: nothing is left behind
    assert list(tmp_path.iterdir()) == []
    with layer.commit() as staged:
        (staged["--work-dir"] / "vectors.npy").write_bytes(b"new")
    assert tree(work) == {"vectors.npy": b"new"} and [p.name for p in tmp_path.iterdir()] == ["work"]
    with pytest.raises(UnsafeOutput, match="holds files; pass --force"):
        Outputs({}, folders={"--work-dir": work}).check()
    with Outputs({}, folders={"--work-dir": work}, force=True).commit() as staged:
        (staged["--work-dir"] / "ids.txt").write_text("a\n")
    assert tree(work) == {"ids.txt": b"a\n"} and [p.name for p in tmp_path.iterdir()] == ["work"]


def test_an_owned_scratch_folder_is_the_only_kind_emptied(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    layer = Outputs({}, stores={"--workdir": mine}, owned={"--workdir": ".mark"})
    with pytest.raises(UnsafeOutput, match="holds files and has no .mark mark"):
        layer.check()
    assert (mine / "notes.txt").read_text() == "mine"
    scratch = tmp_path / "scratch"
    owned = Outputs({}, stores={"--workdir": scratch}, owned={"--workdir": ".mark"})
    owned.claim("--workdir")
    (scratch / "old-run.txt").write_text("old")
    owned.claim("--workdir")  # its own folder, marked: emptied and refilled
    assert sorted(p.name for p in scratch.iterdir()) == [".mark"]
    real = tmp_path / "real-data"
    real.mkdir()
    with pytest.raises(UnsafeOutput, match="holds the input --real-data"):
        Outputs({"--real-data": real}, stores={"--workdir": tmp_path}, owned={"--workdir": ".mark"}).check()


def test_scratch_folders_of_a_chapter_run_are_removed_when_its_process_exits(tmp_path):
    """ChapterRun's and ChapterData's workdirs and the band cache's folder are scratch: a process leaves none behind
    (before, every chapter run left its folder in /tmp, which filled CI's disk)."""
    import subprocess
    import sys

    script = ("from sdr.outputs import scratch_folder\n"
              "f = scratch_folder('sdr-test-scratch-'); (f / 'x.bin').write_bytes(b'0' * 1024); print(f)\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    made = Path(out.stdout.strip())
    assert made.parent == tmp_path and made.name.startswith("sdr-test-scratch-")
    assert not made.exists() and list(tmp_path.iterdir()) == []
