"""Issue 35, part 6: property-based tests (Hypothesis) of the ``sdr`` command line, command by command.

For every leaf command of :func:`sdr.cli.build_parser` that reads files, random arguments and random or malformed
input files (truncated JSON/JSONL, byte-order marks, CRLF, non-UTF-8 bytes, repeated keys, huge numbers, ids
with whitespace or path separators, empty files, folders where files are expected, links, missing files, FIFOs,
links to ``/dev/zero``, names with quotes and newlines) are handed to :func:`sdr.cli.main` in-process. The
property, for each example:

* the exit status is 0, or the project's input error: status 2 with one line ``sdr CMD: error: …`` on stderr
  (``data verify``/``data status`` also exit 1 when something is missing) — never another exception, never a
  traceback, never a hang (an alarm turns one into a failure);
* no input file or folder is changed, whatever the status;
* an input that only changed its form (a byte-order mark, CRLF line ends) gives the same result as the pristine
  fixture; one that is malformed (a repeated key, a number that overflows, an id with whitespace or a path
  separator, a special file, a missing or empty file, a folder) is refused with status 2.

Commands that would run a chapter or a training (``chapter``, ``train``, ``paper-dry-run``, ``evaluate all``,
``facets train``) are fuzzed on their argument validation path only: the step that would start the work is
replaced by one raising :class:`StartedWork`, an accepted outcome when the arguments were valid. Nothing reaches
the network (``SDR_OFFLINE=1``; cache and results store in temporary folders). ``sdr embed`` uses the session's
tiny encoder instead of loading a model.

Examples are derandomized (the same on every run) and bounded (``max_examples``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sdr import cli

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "data" / "fixtures"

FUZZ = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.filter_too_much])
FEW = settings(FUZZ, max_examples=10)


# ------------------------------------------------------------------------------------------ the commands

FUZZED = {"evaluate csfcube", "evaluate scidocs", "evaluate mdcr", "evaluate scirepeval", "evaluate sentences",
          "evaluate paragraphs", "embed", "book-setup-cells", "data verify", "data status", "data fetch",
          "cfs3 build", "graph embed", "graph collect", "facets split"}
"""Commands fuzzed with random files and arguments, each by a test below."""

VALIDATION_ONLY = {"evaluate all", "chapter", "train", "paper-dry-run", "facets train"}
"""Commands that run a chapter or a training: fuzzed up to the step that starts the work."""

NOT_FUZZED = {
    "data list": "reads no user file and takes no argument but --json (covered by test_not_fuzzed_commands_run)",
    "book-publish check": "reads only the checkout's own book files; no argument",
    "book-publish manifest": "reads only the checkout's own book files; no argument",
    "book-publish binder-lock": "reads and writes the checkout's lock files; no user path (tests/test_publish.py)",
    "book-publish configure": "writes the checkout's _config.yml; --repository is validated in tests/test_publish.py",
}


def test_every_command_is_fuzzed_or_says_why_not():
    commands = {name for name, _ in cli.leaf_commands(cli.build_parser())}
    assert commands == FUZZED | VALIDATION_ONLY | set(NOT_FUZZED), (
        "a command was added or removed: fuzz it here (or say in NOT_FUZZED why not)")


# ------------------------------------------------------------------------------------------ the harness

class StartedWork(BaseException):
    """Raised where a heavy command would start its work: its arguments were accepted."""


class Hang(BaseException):
    """Raised by the alarm: a command still running after its time (not an OSError, which sdr would report)."""


def started_work(*args, **kwargs):
    raise StartedWork


@contextmanager
def no_hang(seconds: float = 30):
    def expire(signum, frame):
        raise Hang(f"still running after {seconds} s (a special file read forever?)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def snapshot(*paths: Path) -> dict[str, object]:
    """Every file's bytes (and every link's target, every special file's kind) under ``paths``."""
    state: dict[str, object] = {}

    def visit(path: Path):
        if path.is_symlink():
            state[str(path)] = ("link", os.readlink(path))
        elif path.is_dir():
            state[str(path)] = "folder"
            for child in sorted(path.iterdir()):
                visit(child)
        elif path.is_file():
            state[str(path)] = path.read_bytes()
        elif path.exists():
            state[str(path)] = ("special", os.stat(path).st_mode)

    for path in paths:
        visit(Path(path))
    return state


class Outcome:
    def __init__(self, code, out, err, started=False):
        self.code, self.out, self.err, self.started = code, out, err, started

    def json(self):
        return json.loads(self.out)


def run(argv, capsys, inputs=(), allowed=(0, 2), seconds: float = 60) -> Outcome:
    """``sdr.cli.main(argv)`` under the property: an allowed status, one error line for status 2, no traceback,
    no hang, the ``inputs`` unchanged."""
    argv = [str(a) for a in argv]
    before = snapshot(*inputs)
    started = False
    with no_hang(seconds):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:  # argparse: a usage error (2) or --help (0)
            code = exit_.code
        except StartedWork:
            code, started = None, True
    captured = capsys.readouterr()
    assert snapshot(*inputs) == before, f"sdr {' '.join(argv)}: an input was changed (exit {code})"
    assert "Traceback" not in captured.err, captured.err
    if not started:
        assert code in allowed, f"sdr {' '.join(argv)}: exit {code}\n{captured.err[-2000:]}"
        if code == 2:
            lines = [line for line in captured.err.strip().splitlines() if line.strip()]
            errors = [line for line in lines if re.match(r"^sdr[ a-z0-9-]*: error: ", line)]
            assert len(errors) == 1 and lines[-1] == errors[0], f"sdr {' '.join(argv)}: {captured.err!r}"
    from hypothesis.control import _current_build_context

    if _current_build_context.value is not None:
        event("started work" if started else f"exit {code}")
    return Outcome(code, captured.out, captured.err, started)


@pytest.fixture(autouse=True)
def _offline(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SDR_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path_factory.mktemp("results")))
    monkeypatch.delenv("SDR_DATA", raising=False)


@contextmanager
def scratch():
    with tempfile.TemporaryDirectory(prefix="sdr-fuzz-") as folder:
        yield Path(folder)


# ------------------------------------------------------------------------------------------ files

FORM_ONLY = ("valid", "bom", "crlf")
"""Variants that change only the form: the result must be the pristine file's."""
REFUSED = ("empty", "truncated", "not utf-8", "repeated key", "huge number", "id with space", "id with slash",
           "folder", "missing", "dangling link", "fifo", "dev zero")
"""Variants that must be refused (status 2) where the readers apply them (see :func:`variant_bytes`)."""
LOOSE = ("mutated", "link")
"""Variants that may be valid or not: either a result or an input error."""

_ID_VALUE = re.compile(r'("(?:paper_id|doc_id|id|pid|corpus_id|query_id|citing|cited)"\s*:\s*")([^"\\]+)"')
_NUMBER = re.compile(r'(?<=[:\[,] )-?\d+(\.\d+)?(?=[,\]}])')


def variant_bytes(valid: bytes, kind: str, data) -> bytes | None:
    """``valid`` changed as ``kind`` says; ``None`` when the change does not apply to this file (no id, no
    number, no object to repeat a key of)."""
    if kind == "valid":
        return valid
    if kind == "bom":
        return b"\xef\xbb\xbf" + valid
    if kind == "crlf":
        return valid.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if kind == "empty":
        return b""
    if kind == "truncated":
        text = valid.rstrip(b"\n")
        cut = data.draw(st.integers(1, max(1, min(40, len(text) - 1))), label="cut")
        return text[:-cut] if text.startswith((b"{", b"[")) else None  # truncated JSON: never valid
    if kind == "not utf-8":
        position = data.draw(st.integers(0, len(valid)), label="position")
        return valid[:position] + b"\xff\xfe" + valid[position:]
    if kind == "mutated":
        out = bytearray(valid)
        for _ in range(data.draw(st.integers(1, 3), label="edits")):
            position = data.draw(st.integers(0, len(out)), label="at")
            chunk = data.draw(st.sampled_from([b"", b"x", b"\"", b"\n", b"{", b"]", b",", b" ", b"0", b"\t",
                                               b"\x00"]), label="bytes")
            out[position:position + data.draw(st.integers(0, 3), label="width")] = chunk
        return bytes(out)
    try:
        text = valid.decode("utf-8")
    except UnicodeDecodeError:  # a binary file (a .npz model): the text variants do not apply
        return None
    if kind == "repeated key":
        match = re.search(r'\{\s*("[^"\\]+")\s*:\s*("[^"\\]*"|-?[\d.]+)\s*,', text)
        if not match:
            return None
        pair = f"{match.group(1)}: {match.group(2)}, "
        return (text[:match.end()] + " " + pair + text[match.end():]).encode()
    if kind == "huge number":
        match = _NUMBER.search(text)
        return (text[:match.start()] + "1e999" + text[match.end():]).encode() if match else None
    if kind in ("id with space", "id with slash"):
        match = _ID_VALUE.search(text)
        if not match:
            return None
        value = match.group(2) + " " if kind == "id with space" else "../" + match.group(2)
        return (text[:match.start(2)] + value + text[match.end(2):]).encode()
    raise AssertionError(kind)


def plant(path: Path, valid: bytes, data, kinds=FORM_ONLY + REFUSED + LOOSE) -> str:
    """Write a drawn variant of ``valid`` at ``path`` (a file, a folder, a link, a FIFO or nothing); returns the
    variant's kind."""
    while True:
        kind = data.draw(st.sampled_from(kinds), label=f"{path.name}")
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "folder":
            path.mkdir()
        elif kind == "missing":
            pass
        elif kind == "dangling link":
            path.symlink_to(path.parent / "nowhere")
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "dev zero":
            path.symlink_to("/dev/zero")
        elif kind == "link":
            target = path.parent / f".{path.name}.target"
            target.write_bytes(valid)
            path.symlink_to(target)
        else:
            content = variant_bytes(valid, kind, data)
            if content is None:
                continue
            path.write_bytes(content)
        return kind


def check_kind(kind: str, outcome: Outcome, baseline: object | None = None, result=None):
    """The rule for a planted variant: form-only changes give the pristine result, malformed files status 2."""
    if outcome.started:
        assert kind in FORM_ONLY + LOOSE, f"a {kind} input reached the work"
        return
    if kind in FORM_ONLY:
        assert outcome.code == 0, f"{kind}: {outcome.err}"
        if baseline is not None:
            assert (result or (lambda o: o.json()))(outcome) == baseline, f"{kind}: another result"
    elif kind in REFUSED:
        assert outcome.code == 2, f"{kind} accepted: {outcome.out[:500]}"


def copy_fixture(name: str, into: Path) -> Path:
    target = into / name
    shutil.copytree(FIXTURES / name, target)
    return target


def files_of(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and p.suffix in (".json", ".jsonl", ".qrel", ".csv", ".tsv", ".txt"))


_baselines: dict[str, object] = {}


def baseline(key: str, argv, capsys) -> object:
    if key not in _baselines:
        outcome = run(argv, capsys)
        assert outcome.code == 0, outcome.err
        _baselines[key] = outcome.json()
    return _baselines[key]


# ------------------------------------------------------------------------------------------ arguments

odd_text = st.one_of(st.sampled_from(["", " ", "..", "../x", "/", "a/b", "x\ny", "it's", 'say "hi"', "-", "--json",
                                      "\x00", "é", "nan", "-1", "0", "1e9"]), st.text(max_size=6))
odd_ints = st.one_of(st.integers(-3, 5), st.sampled_from(["0", "-1", "1e3", "x", "", "2147483648", "٣"]))


def odd_option(data, option: str, good: list[str], weight: float = 0.3) -> list[str]:
    """Sometimes ``option`` with an odd value, else the good arguments."""
    if data.draw(st.floats(0, 1), label=f"odd {option}?") < weight:
        value = data.draw(odd_text, label=option)
        return [option, value] if not value.startswith("-") else [f"{option}={value}"]
    return good


# ============================================================================ evaluate (single benchmarks)

def test_not_fuzzed_commands_run(capsys):
    for argv in (["data", "list"], ["data", "list", "--json"]):
        assert run(argv, capsys).code == 0


@FUZZ
@given(data=st.data())
def test_evaluate_sentences(capsys, data):
    pristine = baseline("sentences", ["evaluate", "sentences", "--labels", FIXTURES / "sentences" / "labels.jsonl",
                                      "--embeddings", FIXTURES / "sentences" / "embeddings.jsonl", "--json"], capsys)
    with scratch() as tmp:
        target = data.draw(st.sampled_from(["labels.jsonl", "embeddings.jsonl"]))
        for name in ("labels.jsonl", "embeddings.jsonl"):
            if name != target:
                shutil.copy(FIXTURES / "sentences" / name, tmp / name)
        kind = plant(tmp / target, (FIXTURES / "sentences" / target).read_bytes(), data)
        outcome = run(["evaluate", "sentences", "--labels", tmp / "labels.jsonl", "--embeddings",
                       tmp / "embeddings.jsonl", "--json"], capsys, inputs=[tmp])
        check_kind(kind, outcome, pristine)


def _chunks(folder: Path) -> tuple[Path, Path]:
    chunks = folder / "chunks.jsonl"
    chunks.write_text("".join(json.dumps({"id": f"c{i}", "paper_id": f"p{i // 2}", "text": f"text {i}"}) + "\n"
                              for i in range(6)), encoding="utf-8")
    vectors = folder / "vectors.jsonl"
    vectors.write_text("".join(json.dumps({"id": f"c{i}", "embedding": [float(i % 2), 1.0, 0.5 * i]}) + "\n"
                               for i in range(6)), encoding="utf-8")
    return chunks, vectors


@FUZZ
@given(data=st.data())
def test_evaluate_paragraphs(capsys, data, tmp_path):
    pristine_folder = tmp_path / "pristine"
    pristine_folder.mkdir(exist_ok=True)
    chunks, vectors = _chunks(pristine_folder)
    pristine = baseline("paragraphs", ["evaluate", "paragraphs", "--chunks", chunks, "--embeddings", vectors,
                                       "--json"], capsys)
    with scratch() as tmp:
        target = data.draw(st.sampled_from(["chunks.jsonl", "vectors.jsonl"]))
        for source in (chunks, vectors):
            if source.name != target:
                shutil.copy(source, tmp / source.name)
        kind = plant(tmp / target, (pristine_folder / target).read_bytes(), data)
        k = data.draw(st.one_of(st.just(["--k", "1", "3"]), st.lists(odd_ints.map(str), min_size=1, max_size=3)
                                .map(lambda values: ["--k", *values])))
        outcome = run(["evaluate", "paragraphs", "--chunks", tmp / "chunks.jsonl", "--embeddings",
                       tmp / "vectors.jsonl", "--json", *k], capsys, inputs=[tmp])
        if k == ["--k", "1", "3"]:
            check_kind(kind, outcome, pristine)


# ============================================================================ evaluate (benchmark folders)

BENCHMARKS = {  # fixture folder, embeddings file in it, further arguments (an option that may be fuzzed: odd_option)
    "csfcube": ("embeddings.jsonl", []),
    "mdcr": ("embeddings.jsonl", [("--split", "test")]),
    "scidocs": ("embeddings.jsonl", [("--val-or-test", "test"), ("--n-jobs", "1")]),
    "scirepeval": ("embeddings.jsonl", [("--task", "RELISH"), ("--n-jobs", "1")]),
}


def _benchmark_argv(name: str, data_dir: Path, embeddings: Path, options: list[str]) -> list:
    return ["evaluate", name, "--data-dir", data_dir, "--embeddings", embeddings, "--json", *options]


_read_files: dict[tuple[str, str], bool] = {}


def is_read(name: str, relative: str, capsys) -> bool:
    """Whether ``sdr evaluate NAME`` reads the fixture file ``relative``: it fails without it."""
    if (name, relative) not in _read_files:
        embeddings, options = BENCHMARKS[name]
        with scratch() as tmp:
            data_dir = copy_fixture(name, tmp)
            shutil.copy(data_dir / embeddings, tmp / "embeddings.jsonl")
            (data_dir / relative).unlink()
            outcome = run(_benchmark_argv(name, data_dir, tmp / "embeddings.jsonl",
                                          [a for pair in options for a in pair]), capsys)
        _read_files[name, relative] = outcome.code != 0
    return _read_files[name, relative]


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
@FEW
@given(data=st.data())
def test_evaluate_benchmark(capsys, data, name):
    embeddings_name, options = BENCHMARKS[name]
    good = [a for pair in options for a in pair]
    pristine = baseline(name, _benchmark_argv(name, FIXTURES / name, FIXTURES / name / embeddings_name, good), capsys)
    with scratch() as tmp:
        data_dir = copy_fixture(name, tmp)
        embeddings = tmp / "embeddings.jsonl"
        valid_embeddings = (data_dir / embeddings_name).read_bytes()
        files = [f for f in files_of(data_dir) if f != embeddings_name]
        target = data.draw(st.sampled_from(["EMBEDDINGS", *files]), label="planted in")
        if target == "EMBEDDINGS":
            kind = plant(embeddings, valid_embeddings, data)
        else:
            embeddings.write_bytes(valid_embeddings)
            path = data_dir / target
            valid = path.read_bytes()
            path.unlink()
            kind = plant(path, valid, data)
        argv = []
        for option, value in options:
            argv += odd_option(data, option, [option, value])
        outcome = run(_benchmark_argv(name, data_dir, embeddings, argv), capsys, inputs=[tmp])
        if argv != good:
            return
        if target == "EMBEDDINGS" or kind in FORM_ONLY or is_read(name, target, capsys):
            check_kind(kind, outcome, pristine)


# ============================================================================ sdr data

@pytest.fixture()
def toy_datasets(monkeypatch):
    """Two registry entries in the cache: ``toy`` (files with digests) and ``toyapi`` (a fetched folder with its
    completion record)."""
    import hashlib

    from sdr import datasets

    contents = {"a.txt": b"alpha\n", "b.jsonl": b'{"id": "x", "n": 1}\n'}
    digests = {name: hashlib.sha256(body).hexdigest() for name, body in contents.items()}
    toy = datasets.Dataset("toy", "toy", "a toy dataset", "CC0", "test", tuple(
        datasets.DataFile(name, f"https://example.org/{name}", sha256=digest) for name, digest in digests.items()))
    api = datasets.Dataset("toyapi", "toyapi", "a fetched toy dataset", "CC0", "test", expected=("a.txt",),
                           fetcher="semantic_scholar")
    monkeypatch.setitem(datasets.DATASETS, "toy", toy)
    monkeypatch.setitem(datasets.DATASETS, "toyapi", api)
    record = json.dumps({"files": {name: {"size": len(body), "sha256": digests[name]}
                                   for name, body in contents.items()}}, indent=1).encode()
    return contents, record


@FUZZ
@given(data=st.data())
def test_data_verify(capsys, data, toy_datasets, monkeypatch):
    """`sdr data verify` on planted files, FIFOs and links to /dev/zero: a report (exit 0 or 1) or an input
    error, never a hang; a special file is reported as special, never read."""
    contents, record = toy_datasets
    with scratch() as tmp:
        monkeypatch.setenv("SDR_DATA_CACHE", str(tmp))
        name = data.draw(st.sampled_from(["toy", "toyapi"]))
        folder = tmp / name
        folder.mkdir()
        planted = {}
        for file_name, body in contents.items():
            planted[file_name] = plant(folder / file_name, body, data, kinds=("valid", "fifo", "dev zero", "missing",
                                                                              "mutated", "folder", "link"))
        if name == "toyapi":
            planted["_complete.json"] = plant(folder / "_complete.json", record, data)
        outcome = run(["data", "verify", name], capsys, inputs=[tmp], allowed=(0, 1, 2))
        if all(kind in FORM_ONLY for kind in planted.values()):
            assert outcome.code == 0, outcome.out + outcome.err
        if planted.get("_complete.json") in REFUSED and planted["_complete.json"] not in ("missing", "dangling link"):
            assert outcome.code == 2 or "special   " in outcome.out, outcome.out  # a bad record: an input error
        for file_name, kind in planted.items():
            if kind in ("fifo", "dev zero") and planted.get("_complete.json", "valid") in FORM_ONLY + ("link",):
                assert outcome.code == 1 and f"special   {folder / file_name}" in outcome.out, outcome.out


@FEW
@given(chapter=odd_text | st.sampled_from(["specter", "flew"]), as_json=st.booleans())
def test_data_status(capsys, chapter, as_json):
    run(["data", "status", "--for", chapter] + (["--json"] if as_json else []), capsys, allowed=(0, 1, 2))


@FEW
@given(name=odd_text | st.sampled_from(["csfcube", "toy"]), model=st.none() | odd_text,
       chapter=st.none() | odd_text | st.just("specter"))
def test_data_fetch_offline(capsys, name, model, chapter):
    """Offline (SDR_OFFLINE=1), every fetch is refused in one line, whatever the arguments."""
    argv = ["data", "fetch", name] + (["--model", model] if model is not None else []) \
        + (["--for", chapter] if chapter is not None else [])
    outcome = run([a if not a.startswith("-") or a.startswith("--") else f"./{a}" for a in argv], capsys,
                  allowed=(2,))
    assert outcome.code == 2


# ============================================================================ sdr graph

EDGES = b"".join(f"n{i}\tn{(i * 7 + 3) % 12}\n".encode() for i in range(12))


@FEW
@given(data=st.data())
def test_graph_embed(capsys, data):
    with scratch() as tmp:
        edges = tmp / "in" / "edges.tsv"
        kind = plant(edges, EDGES, data, kinds=FORM_ONLY + REFUSED + LOOSE)
        argv = ["graph", "embed", edges, "--work-dir", tmp / "work", "--out", tmp / "out.jsonl", "--json",
                "--epochs", "1", "--test-fraction", "0.1"]
        argv += odd_option(data, "--dim", ["--dim", "4"], 0.4)
        for option in ("--partitions", "--workers", "--lr", "--comparator", "--memory-gb"):
            argv += odd_option(data, option, [], 0.2)
        outcome = run(argv, capsys, inputs=[tmp / "in"], seconds=120)
        if argv[-2:] == ["--dim", "4"] and len(argv) == 15:
            check_kind(kind, outcome)
            if outcome.code == 0:
                vectors = [json.loads(line) for line in (tmp / "out.jsonl").read_text().splitlines()]
                assert len(vectors) == 12 and all(len(v["embedding"]) == 4 for v in vectors)


@pytest.fixture(scope="module")
def distributed_run(tmp_path_factory):
    """A distributed run prepared by `sdr graph embed --machines 2` (its machines never ran)."""
    folder = tmp_path_factory.mktemp("distributed")
    (folder / "edges.tsv").write_bytes(EDGES)
    assert cli.main(["graph", "embed", str(folder / "edges.tsv"), "--dim", "4", "--machines", "2", "--work-dir",
                     str(folder / "run"), "--init-method", "tcp://127.0.0.1:29599"]) == 0
    return folder / "run"


def test_collect_of_a_run_whose_machines_never_finished_is_an_input_error(distributed_run, capsys):
    """Found by the fuzz below: torchbiggraph's CouldNotLoadData traceback before; now one line saying what to do."""
    assert cli.main(["graph", "collect", str(distributed_run)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "no finished checkpoint" in error[0] and "pbg_train" in error[0]


@FEW
@given(data=st.data())
def test_graph_collect(capsys, data, distributed_run):
    """A run whose machines never finished, with its files planted: an input error, never a traceback."""
    with scratch() as tmp:
        run_folder = tmp / "run"
        shutil.copytree(distributed_run, run_folder, symlinks=True)
        planted = data.draw(st.sampled_from(sorted(p.name for p in run_folder.iterdir()
                                                   if p.is_file() and p.name != "config.py")))
        valid = (run_folder / planted).read_bytes()
        (run_folder / planted).unlink()
        plant(run_folder / planted, valid, data)
        run(["graph", "collect", run_folder, "--out", tmp / "out.jsonl"], capsys, inputs=[run_folder])


# ============================================================================ sdr cfs3 build

@FEW
@given(data=st.data())
def test_cfs3_build(capsys, data):
    with scratch() as tmp:
        shutil.copytree(FIXTURES / "cfs3" / "phrasebank", tmp / "phrasebank")
        sentences = tmp / "sentences.jsonl"
        target = data.draw(st.sampled_from(["SENTENCES"] + sorted(p.name for p in (tmp / "phrasebank").iterdir())))
        path = sentences if target == "SENTENCES" else tmp / "phrasebank" / target
        valid = (FIXTURES / "cfs3" / "sentences.jsonl").read_bytes() if target == "SENTENCES" else path.read_bytes()
        path.unlink(missing_ok=True)
        kind = plant(path, valid, data)
        if target != "SENTENCES":
            shutil.copy(FIXTURES / "cfs3" / "sentences.jsonl", sentences)
        argv = ["cfs3", "build", "--phrasebank", tmp / "phrasebank", "--sentences", sentences, "--out",
                tmp / "out" / "cfs3.jsonl", "--no-progress"]
        argv += odd_option(data, "--n", ["--n", "3"]) + odd_option(data, "--seed", [], 0.2)
        outcome = run(argv, capsys, inputs=[tmp / "phrasebank", sentences])
        if target == "SENTENCES" and argv[-2:] == ["--n", "3"]:
            check_kind(kind, outcome)


# ============================================================================ sdr facets split, sdr embed

@pytest.fixture(scope="module")
def facet_model(tmp_path_factory) -> bytes:
    from test_facets import fixture_abstracts

    from sdr import facets

    abstracts, labels = fixture_abstracts()
    return facets.SentenceClassifier(folds=3).fit(abstracts, labels).save(
        tmp_path_factory.mktemp("model") / "model.npz").read_bytes()


ABSTRACTS = b"".join(json.dumps({"paper_id": f"p{i}", "title": f"T {i}",
                                 "abstract": "Prior work is slow. We train a model. It is fast."}).encode() + b"\n"
                     for i in range(3))


@FEW
@given(data=st.data())
def test_facets_split(capsys, data, facet_model, monkeypatch):
    import sdr.facets.cli

    monkeypatch.setattr(sdr.facets.cli, "load_or_train", started_work)  # no --model: it would train
    with scratch() as tmp:
        abstracts = tmp / "in" / "abstracts.jsonl"
        model = tmp / "in" / "model.npz"
        target = data.draw(st.sampled_from(["abstracts", "model"]))
        kind = plant(abstracts, ABSTRACTS, data) if target == "abstracts" else "valid"
        if target == "model":
            plant(model, facet_model, data, kinds=("valid", "mutated", "empty", "folder", "fifo", "dev zero",
                                                   "missing"))
        else:
            model.write_bytes(facet_model)
        argv = ["facets", "split", abstracts, "--out", tmp / "out.jsonl"]
        argv += odd_option(data, "--model", ["--model", model], 0.1)
        argv += odd_option(data, "--objective-to", [], 0.2) + (["--skip-bad"] if data.draw(st.booleans()) else [])
        outcome = run(argv, capsys, inputs=[tmp / "in"])
        if target == "abstracts" and "--skip-bad" not in argv and ["--model", model] == argv[4:6] and len(argv) == 6:
            check_kind(kind, outcome)


@FEW
@given(data=st.data())
def test_embed(capsys, data, tiny_encoder, monkeypatch):
    """`sdr embed` with the session's tiny encoder (no model loaded): CSAbstruct test files planted."""
    import sdr.embed

    monkeypatch.setattr(sdr.embed, "load_model", lambda *args, **kwargs: tiny_encoder)
    with scratch() as tmp:
        kind = plant(tmp / "data" / "test.jsonl", (FIXTURES / "sentences" / "csabstruct.jsonl").read_bytes(), data)
        argv = ["embed", "--model", "minilm", "--data-dir", tmp / "data", "--out", tmp / "out.jsonl",
                "--labels-out", tmp / "labels.jsonl", "--device", "cpu"]
        argv += odd_option(data, "--benchmark", ["--benchmark", "csabstruct"], 0.2)
        argv += odd_option(data, "--batch-size", [], 0.2) + odd_option(data, "--max-length", [], 0.2)
        outcome = run(argv, capsys, inputs=[tmp / "data"])
        if argv[-2:] == ["--benchmark", "csabstruct"]:
            check_kind(kind, outcome, baseline=None)
            if outcome.code == 0:
                assert outcome.json()["vectors"] == len((tmp / "out.jsonl").read_text().splitlines()) > 0


# ============================================================================ sdr book-setup-cells

@FEW
@given(data=st.data(), name=st.sampled_from(["page", "it's", 'say "hi"', "a\nb", "back\\slash", "é"]))
def test_book_setup_cells(capsys, data, name, tiny_notebook):
    import nbformat

    with scratch() as tmp:
        valid = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])).encode()
        notebook = tmp / f"{name}.ipynb"
        kind = plant(notebook, valid, data, kinds=("valid", "mutated", "empty", "truncated", "not utf-8", "folder",
                                                   "missing", "fifo", "dev zero", "link", "repeated key"))
        other = tmp / "other.txt"
        other.write_text("not a notebook")
        outcome = run(["book-setup-cells", notebook], capsys, inputs=[other])
        if kind in ("empty", "truncated", "not utf-8", "folder", "missing", "fifo", "dev zero", "link"):
            assert outcome.code == 2
        if outcome.code == 0:
            nbformat.validate(nbformat.read(notebook, as_version=4))


# ============================================================================ validation paths only

@FUZZ
@given(data=st.data())
def test_chapter_arguments(capsys, data, monkeypatch):
    import sdr.book.runs

    monkeypatch.setattr(sdr.book.runs, "run_chapter", started_work)
    with scratch() as tmp:
        argv = ["chapter", data.draw(odd_text | st.sampled_from(["specter", "flew", "summary"]), label="name")]
        argv += odd_option(data, "--profile", ["--profile", "smoke"])
        for _ in range(data.draw(st.integers(0, 2))):
            argv += ["-p", data.draw(odd_text | st.sampled_from(["seed", "n_papers", "use_real_data"])),
                     data.draw(odd_text | st.sampled_from(["010", "5:00", "1e3", "true", "maybe", "[1, 2]"]))]
        argv += ["--output-dir", tmp / "pages"]
        run(argv, capsys)


@FUZZ
@given(data=st.data(), extra=st.lists(odd_text, max_size=3))
def test_evaluate_all_arguments(capsys, data, extra, monkeypatch):
    import sdr.evaluate.suite

    monkeypatch.setattr(sdr.evaluate.suite, "evaluate_model", started_work)
    argv = ["evaluate", "all"] + odd_option(data, "--model", ["--model", "minilm"])
    for option in ("--benchmarks", "--profile", "--device", "--n-jobs", "--batch-size", "--max-length",
                   "--data-dir", "--layers", "--name"):
        argv += odd_option(data, option, [], 0.3)
    run(argv + ["--no-store"] * data.draw(st.booleans()), capsys)


@FEW
@given(data=st.data())
def test_train_arguments(capsys, data, monkeypatch):
    import sdr.distributed

    monkeypatch.setattr(sdr.distributed, "init_distributed", started_work)
    with scratch() as tmp:
        folder = tmp / "run"
        kind = data.draw(st.sampled_from(["missing", "empty folder", "file", "fifo", "junk spec"]))
        if kind == "empty folder":
            folder.mkdir()
        elif kind == "file":
            folder.write_text("x")
        elif kind == "fifo":
            os.mkfifo(folder)
        elif kind == "junk spec":
            folder.mkdir()
            for name in data.draw(st.lists(st.sampled_from(["run.json", "spec.json", "examples.jsonl",
                                                            "config.json"]), max_size=3, unique=True)):
                (folder / name).write_bytes(data.draw(st.binary(max_size=30) | st.just(b"{}")))
        outcome = run(["train", folder], capsys, inputs=[tmp])
        assert not outcome.started


@FEW
@given(chapters=st.lists(odd_text | st.just("specter"), max_size=2), real=st.none() | odd_text)
def test_paper_dry_run_arguments(capsys, chapters, real, monkeypatch):
    import sdr.dryrun

    monkeypatch.setattr(sdr.dryrun, "run", started_work)
    with scratch() as tmp:
        argv = ["paper-dry-run", *[c if not c.startswith("-") else f"./{c}" for c in chapters], "--workdir",
                tmp / "work"] + ([f"--real-data={real}"] if real is not None else [])
        run(argv, capsys)


@FEW
@given(data=st.data())
def test_facets_train_arguments(capsys, data, monkeypatch):
    import sdr.facets.cli

    monkeypatch.setattr(sdr.facets.cli, "train_classifier", started_work)
    with scratch() as tmp:
        kind = plant(tmp / "data" / "train.jsonl", (FIXTURES / "sentences" / "csabstruct.jsonl").read_bytes(), data,
                     kinds=("valid", "missing", "folder", "fifo", "dev zero", "empty", "dangling link"))
        outcome = run(["facets", "train", "--data-dir", tmp / "data", "--out", tmp / "model.npz"], capsys,
                      inputs=[tmp / "data"])
        if kind in ("missing", "folder", "fifo", "dev zero", "dangling link"):
            assert outcome.code == 2
