"""A chapter killed with SIGKILL mid-training and rerun with ``-p resume true`` stores the same results as an
uninterrupted run (issue 15, item 8: "a disconnected run resumes, as the docs promise").

The SPECTER chapter runs at ``smoke`` with tiny overrides (a checkpoint after every optimizer step), each run in
its own results store (``SDR_RESULTS``, which also holds the run folders of ``book.run_dir``). The interrupted run
is killed once the *second* model (SPECTER(Undirected)) has written a checkpoint, so the resumed run exercises
both paths: a finished run loaded from its final checkpoint and an interrupted one continued from its last.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch

from sdr import book

CHAPTER = "specter"
# Small enough for under a minute a run on one thread; about 20 optimizer steps a model with a checkpoint every 4
# (a checkpoint of the 2-layer encoder and its Adam state is ~180 MB), so the kill lands mid-run. At this size
# training is too short to beat the untrained encoder reliably (measured -4.1 on the replica), so the chapter's
# margin is switched off: this test checks resuming, the smoke run in test_chapters checks learning.
OVERRIDES = {
    "use_real_data": False, "n_papers": 200, "n_eval_queries": 10, "max_queries": 16, "max_length": 32,
    "batch_size": 4, "accumulation_steps": 1, "checkpoint_every": 4, "recommendations": False,
    "csfcube_replica_queries": 6, "csfcube_replica_pool": 20, "min_gain": -100.0, "min_loss_drop": 0.0,
}
FIRST, SECOND = "SPECTER", "SPECTER(Undirected)"


def _command(output_dir: Path, resume: bool = False) -> list[str]:
    command = [str(Path(sys.executable).with_name("sdr")), "chapter", CHAPTER, "--profile", "smoke", "--force",
               "--output-dir", str(output_dir)]
    for key, value in {**OVERRIDES, "resume": resume}.items():
        command += ["-p", key, json.dumps(value)]  # YAML reads JSON scalars
    return command


def _environment(results: Path) -> dict:
    # one thread: the resumed steps must be bit-identical to the uninterrupted ones
    return {**os.environ, "SDR_RESULTS": str(results), "SDR_DATA": "", "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def _run(command: list[str], results: Path) -> None:
    completed = subprocess.run(command, env=_environment(results), capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]


def _stored(results: Path) -> dict:
    """The stored record without what differs between executions (time written, where training resumed)."""
    record = json.loads((results / CHAPTER / "smoke.json").read_text())
    record.pop("written")
    record["extra"].pop("resumed_from_step")
    return record


def _kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL the chapter's process group and every descendant: the Jupyter kernel that trains runs in a
    session of its own (jupyter_client starts kernels with ``start_new_session``), so the group alone misses it."""
    descendants = psutil.Process(process.pid).children(recursive=True)
    os.killpg(process.pid, signal.SIGKILL)
    for child in descendants:
        try:
            child.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(descendants, timeout=30)
    process.wait(timeout=30)


def _start(command: list[str], results: Path, log: Path) -> subprocess.Popen:
    with log.open("w") as sink:  # a file, not a pipe: nobody reads a pipe while the chapter runs
        return subprocess.Popen(command, env=_environment(results), stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)


@pytest.mark.notebook
def test_chapter_killed_after_a_checkpoint_resumes_to_the_uninterrupted_results(tmp_path):
    # the uninterrupted run goes alongside (one thread each), so the test costs about two runs of wall time
    uninterrupted_results, interrupted_results = tmp_path / "uninterrupted", tmp_path / "interrupted"
    uninterrupted = _start(_command(tmp_path / "pages-uninterrupted"), uninterrupted_results, tmp_path / "u.log")
    try:
        process = _start(_command(tmp_path / "pages-interrupted"), interrupted_results, tmp_path / "i.log")
        runs = interrupted_results / "runs" / CHAPTER / "smoke"
        deadline = time.monotonic() + 300
        checkpoints: list[Path] = []
        try:
            while not checkpoints and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
                checkpoints = list(runs.glob(f"*/{SECOND}/checkpoint.pt"))
        finally:
            if process.poll() is None:
                _kill_tree(process)
        output = (tmp_path / "i.log").read_text(errors="replace")
        assert checkpoints, f"no checkpoint of {SECOND} appeared: {output[-3000:]}"
        assert process.returncode == -signal.SIGKILL, (process.returncode, output[-3000:])
        assert not (interrupted_results / CHAPTER / "smoke.json").exists()  # killed before it stored anything
        run_folder = checkpoints[0].parent.parent
        assert (run_folder / FIRST / "model").is_dir()  # the first model had finished
        killed_at = torch.load(checkpoints[0], weights_only=False)["step"]
        assert not (run_folder / SECOND / "model").exists() and killed_at >= 1

        _run(_command(tmp_path / "pages-interrupted", resume=True), interrupted_results)
        stored = json.loads((interrupted_results / CHAPTER / "smoke.json").read_text())
        steps = {name: torch.load(run_folder / name / "checkpoint.pt", weights_only=False)["step"]
                 for name in (FIRST, SECOND)}
        # the first model loaded its final checkpoint; the second continued mid-run from the one the kill left
        assert stored["extra"]["resumed_from_step"] == {FIRST: steps[FIRST], SECOND: killed_at}, (steps, killed_at)
        assert killed_at < steps[SECOND], "the kill came after the second model's last step: nothing resumed mid-run"

        uninterrupted.wait(timeout=600)
        assert uninterrupted.returncode == 0, (tmp_path / "u.log").read_text(errors="replace")[-3000:]
        assert _stored(interrupted_results) == _stored(uninterrupted_results)
    finally:
        if uninterrupted.poll() is None:
            _kill_tree(uninterrupted)
