"""Rebuilds that don't redo work, and resumable training runs (``sdr.book.run_chapter``, ``run_dir``).

Both execute tiny notebooks with papermill (a kernel each), in a temporary book: ``profiles.yml`` and
``notebooks/`` written here, ``sdr.book`` pointed at them (in-process by monkeypatching, in a subprocess by
``SDR_BOOK_ROOT``), and a private results store (``SDR_RESULTS``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from sdr import book

COUNTING_BODY = (
    "from pathlib import Path\n"
    "with open(Path(counter), 'a') as handle:\n"
    "    handle.write(f'{profile} {n}\\n')\n"
    "print('n =', n)\n"
)


@pytest.fixture()
def tiny_book(tmp_path, tiny_notebook, monkeypatch) -> Path:
    (tmp_path / "profiles.yml").write_text(
        "chapters: [tiny]\nprofiles:\n  smoke:\n    parameters: {profile: smoke}\n    chapters:\n      tiny: {n: 1}\n")
    counter = tmp_path / "executions.txt"
    tiny_notebook(f'profile = "none"\nn = 0\ncounter = "{counter}"\n', COUNTING_BODY, name="tiny",
                  folder=tmp_path / "notebooks")
    monkeypatch.setattr(book, "ROOT", tmp_path)
    monkeypatch.setattr(book, "NOTEBOOKS", tmp_path / "notebooks")
    monkeypatch.setattr(book, "PROFILES_FILE", tmp_path / "profiles.yml")
    monkeypatch.setattr(book, "CHAPTERS_OUT", tmp_path / "book" / "chapters")
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    data = tmp_path / "mirror"
    (data / "csfcube").mkdir(parents=True)
    (data / "csfcube" / "abstracts.jsonl").write_text("{}\n")
    monkeypatch.setenv("SDR_DATA", str(data))
    return tmp_path


def _executions(root: Path) -> list[str]:
    path = root / "executions.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_unchanged_chapter_is_not_reexecuted_and_a_changed_parameter_is(tiny_book, capsys):
    output = book.run_chapter("tiny", "smoke", progress=False)
    assert _executions(tiny_book) == ["smoke 1"]
    executed = nbformat.read(output, as_version=4)
    assert executed.metadata["sdr"]["fingerprint"] == book.stored_fingerprint(output)
    assert any(book.PROFILE_BOX_TAG in c.metadata.get("tags", []) for c in executed.cells)
    assert (output.parent / book.STATUS_PAGE).exists()

    book.run_chapter("tiny", "smoke", progress=False)  # nothing changed
    assert _executions(tiny_book) == ["smoke 1"]
    assert "tiny: unchanged since its last execution" in capsys.readouterr().err

    book.run_chapter("tiny", "smoke", {"n": 2}, progress=False)  # a changed parameter
    assert _executions(tiny_book) == ["smoke 1", "smoke 2"]
    book.run_chapter("tiny", "smoke", {"n": 2}, progress=False)
    book.run_chapter("tiny", "smoke", {"n": 2}, progress=False, force=True)
    assert _executions(tiny_book) == ["smoke 1", "smoke 2", "smoke 2"]


def test_fingerprint_follows_notebook_library_and_data(tiny_book, tiny_notebook):
    parameters = book.chapter_parameters("tiny", "smoke")
    first = book.chapter_fingerprint("tiny", "smoke", parameters)
    assert book.chapter_fingerprint("tiny", "smoke", parameters) == first  # deterministic
    assert book.chapter_fingerprint("tiny", "smoke", {**parameters, "n": 5}) != first
    # the real-data mirror: a file touched (new size and time) changes it
    data_file = tiny_book / "mirror" / "csfcube" / "abstracts.jsonl"
    data_file.write_text("{}\n{}\n")
    second = book.chapter_fingerprint("tiny", "smoke", parameters)
    assert second != first
    # the book's own data files (paper tables)
    (tiny_book / "data" / "paper_tables").mkdir(parents=True)
    (tiny_book / "data" / "paper_tables" / "x.csv").write_text("source,table,model\n")
    third = book.chapter_fingerprint("tiny", "smoke", parameters)
    assert third != second
    # the notebook's code (not its outputs)
    notebook = nbformat.read(tiny_book / "notebooks" / "tiny.ipynb", as_version=4)
    notebook.cells[-1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="x")]
    nbformat.write(notebook, tiny_book / "notebooks" / "tiny.ipynb")
    assert book.chapter_fingerprint("tiny", "smoke", parameters) == third
    notebook.cells[-1].source += "\nprint('changed')\n"
    nbformat.write(notebook, tiny_book / "notebooks" / "tiny.ipynb")
    assert book.chapter_fingerprint("tiny", "smoke", parameters) != third


def test_fingerprint_covers_the_whole_library_not_only_the_book_package(tiny_book, tmp_path_factory, monkeypatch):
    assert book.paths.LIBRARY == Path(book.__file__).resolve().parents[1]  # lib/sdr, not lib/sdr/book
    assert (book.paths.LIBRARY / "encoders.py").exists()
    library = tmp_path_factory.mktemp("library")
    (library / "book").mkdir()
    (library / "book" / "runs.py").write_text("# the book package\n")
    (library / "encoders.py").write_text("# an encoder\n")
    monkeypatch.setattr(book.paths, "LIBRARY", library)
    parameters = book.chapter_parameters("tiny", "smoke")
    first = book.chapter_fingerprint("tiny", "smoke", parameters)
    (library / "encoders.py").write_text("# a changed encoder\n")
    assert book.chapter_fingerprint("tiny", "smoke", parameters) != first


def test_the_book_root_is_the_repository_and_setting_it_reaches_every_module(tmp_path, monkeypatch):
    assert (book.ROOT / "profiles.yml").exists() and (book.ROOT / "lib" / "sdr" / "book").is_dir()
    monkeypatch.setattr(book, "PROFILES_FILE", tmp_path / "profiles.yml")
    assert book.paths.PROFILES_FILE == book.PROFILES_FILE == tmp_path / "profiles.yml"
    with pytest.raises(FileNotFoundError, match="profiles.yml: profiles file not found"):
        book.load_profiles()


def test_summary_depends_on_the_other_chapters_results(tiny_book):
    parameters = {"profile": "smoke"}
    notebook = tiny_book / "notebooks" / "tiny.ipynb"
    before = book.chapter_fingerprint("summary", "smoke", parameters, notebook)
    book.save_results("specter", "smoke", {}, ["x"])
    assert book.chapter_fingerprint("summary", "smoke", parameters, notebook) != before
    # a chapter that does not read the results store ignores them
    plain = book.chapter_fingerprint("tiny", "smoke", parameters, notebook)
    book.save_results("specter", "smoke", {}, ["y"])
    assert book.chapter_fingerprint("tiny", "smoke", parameters, notebook) == plain


def test_run_dir_is_stable_per_training_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path))
    first = book.run_dir("specter", "paper", {"epochs": 2, "learning_rate": 2e-5, "seed": 0})
    assert first == book.run_dir("specter", "paper", {"seed": 0, "learning_rate": 2e-5, "epochs": 2})
    assert first.parent == tmp_path / "runs" / "specter" / "paper" and first.is_dir()
    assert json.loads((first / "parameters.json").read_text()) == {"epochs": 2, "learning_rate": 2e-5, "seed": 0}
    assert book.run_dir("specter", "paper", {"epochs": 3, "learning_rate": 2e-5, "seed": 0}) != first
    assert book.run_dir("specter", "real", {"epochs": 2, "learning_rate": 2e-5, "seed": 0}) != first


# ------------------------------------------------------------------------------------------ resume
TRAINING_PARAMETERS = 'profile = "none"\nresume = False\npause = 0.0\nseed = 0\n'
TRAINING_BODY = '''
import time
from sdr import book
from sdr.encoders import Encoder
from sdr.samplers import Triplet
from sdr.train import TrainConfig, TripletObjective, train

texts = {f"p{i}": f"paper {i} about topic {i % 3} with words {'x ' * i}" for i in range(8)}
examples = [Triplet(f"p{i}", f"p{(i + 3) % 8}", f"p{(i + 1) % 8}", "easy") for i in range(8)] * 2
training = {"model": "minilm", "layers": 1, "seed": seed, "epochs": 1, "batch_size": 2, "learning_rate": 1e-3}
config = TrainConfig(epochs=1, batch_size=2, accumulation_steps=1, learning_rate=1e-3, seed=seed,
                     checkpoint_every=1, progress=False)
encoder = Encoder.load("minilm", num_layers=1, max_length=32, device="cpu")
result = train(encoder, examples, TripletObjective(texts), config,
               output_dir=book.run_dir("tiny", profile, training) / "model-a", resume=resume,
               callback=lambda row: time.sleep(pause))
vectors = encoder.encode_texts(list(texts.values()), progress=False)
book.save_results("tiny", profile, {"history": result.history},
                  ["eight tiny texts"], extra={"vectors": vectors.tolist(), "steps": result.steps,
                                               "resumed_from_step": result.resumed_from_step})
'''


def _sdr_chapter(root: Path, results: Path, *parameters: str) -> subprocess.Popen:
    environment = {**os.environ, "SDR_BOOK_ROOT": str(root), "SDR_RESULTS": str(results), "OMP_NUM_THREADS": "1"}
    environment.pop("SDR_DATA", None)
    command = [str(Path(sys.executable).with_name("sdr")), "chapter", "tiny", "--profile", "smoke", "--force"]
    for parameter in parameters:
        command += ["-p", *parameter.split("=", 1)]
    # a session of its own: SIGKILL to the group takes the kernel papermill started with it
    return subprocess.Popen(command, env=environment, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _stored(results: Path) -> dict:
    record = json.loads((results / "tiny" / "smoke.json").read_text())
    return {"history": record["tables"]["history"], "vectors": record["extra"]["vectors"],
            "steps": record["extra"]["steps"], "resumed_from_step": record["extra"]["resumed_from_step"]}


@pytest.mark.notebook
def test_a_killed_chapter_resumes_to_the_results_of_an_uninterrupted_run(tmp_path, tiny_notebook):
    (tmp_path / "profiles.yml").write_text("chapters: [tiny]\nprofiles:\n  smoke:\n    parameters: {profile: smoke}\n")
    tiny_notebook(TRAINING_PARAMETERS, TRAINING_BODY, name="tiny", folder=tmp_path / "notebooks")

    reference = _sdr_chapter(tmp_path, tmp_path / "uninterrupted")
    assert reference.wait(timeout=300) == 0, reference.stdout.read()[-3000:]
    expected = _stored(tmp_path / "uninterrupted")
    assert expected["steps"] == 8 and expected["resumed_from_step"] == 0

    results = tmp_path / "interrupted"
    killed = _sdr_chapter(tmp_path, results, "pause=1.0")
    checkpoint = next(iter(results.glob("runs/tiny/smoke/*/model-a/checkpoint.pt")), None)
    deadline = time.monotonic() + 240
    while checkpoint is None and time.monotonic() < deadline and killed.poll() is None:
        time.sleep(0.2)
        checkpoint = next(iter(results.glob("runs/tiny/smoke/*/model-a/checkpoint.pt")), None)
    assert checkpoint is not None, "no checkpoint appeared: " + (killed.stdout.read()[-3000:] if killed.poll() else "")
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert not (results / "tiny" / "smoke.json").exists()  # it died before storing anything

    resumed = _sdr_chapter(tmp_path, results, "resume=true")
    assert resumed.wait(timeout=300) == 0, resumed.stdout.read()[-3000:]
    got = _stored(results)
    assert 1 <= got["resumed_from_step"] < 8, got["resumed_from_step"]  # it continued mid-run
    assert got["history"] == expected["history"] and got["steps"] == expected["steps"]
    assert got["vectors"] == expected["vectors"]  # the same weights, bit for bit
