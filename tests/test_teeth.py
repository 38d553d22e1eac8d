"""The chapters' checks with teeth catch a broken objective (issue 26).

Each training chapter asserts at ``smoke`` that its trained model beats the untrained encoder by a margin set
from the measured seed spread. That is only worth something if a broken loss fails it. Here the trainer's loss
is sign-flipped (gradient ascent: every objective of ``sdr.train`` climbs instead of descending) in the
chapter's kernel through a ``sitecustomize`` module on its ``PYTHONPATH``, so the chapter's own code runs
unchanged, and the chapter must stop on its check, with the check's message.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import papermill
import pytest

from sdr import book

#: The chapter, and what its checks' assertion messages say (so a crash elsewhere does not pass the test): SciNCL
#: checks that training lowered its loss before it scores the gain, and that check is the first to stop it.
CHECKS = {
    "specter": ("SPECTER: ",),
    "scincl": ("SciNCL: ", "training did not lower the loss"),
    "scitoricsbert": ("over untrained [CLS]",),
    # FLeW checks that every run lowered its training loss before it scores the held-out gain (gain_margin)
    "flew": ("training did not lower the loss", "held-out triplet loss gains"),
    # CoSaEmb checks that training lowered the probe loss of the paper's margins before the held-out gain
    "cosaemb": ("training did not lower the probe loss", "% held-out loss below the untrained encoder's"),
    # SciAspect checks the held-out probe losses right after training (sciaspect.expect_lower_probe_loss)
    "sciaspect": ("training did not lower the held-out loss",),
}

# The trainer scales its loss through torch.amp.GradScaler before backward (a no-op scale on CPU); the planted
# bug negates what it returns, which is exactly a sign flip of the loss for every training run and nothing else.
SIGN_FLIP = textwrap.dedent("""
    import torch

    _scale = torch.amp.GradScaler.scale

    def _sign_flipped(self, outputs):
        return -_scale(self, outputs)

    torch.amp.GradScaler.scale = _sign_flipped
""")


@pytest.mark.notebook
@pytest.mark.parametrize("chapter", sorted(CHECKS))
def test_a_sign_flipped_loss_fails_the_chapter_check(chapter: str, tmp_path: Path, monkeypatch) -> None:
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "sitecustomize.py").write_text(SIGN_FLIP)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(planted), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("SDR_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    monkeypatch.setenv("SDR_INTERACTIVE_PROFILE", "")  # papermill's parameters, not an interactive profile
    for name, value in book.KERNEL_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(papermill.PapermillExecutionError) as failure:
        papermill.execute_notebook(str(book.NOTEBOOKS / f"{chapter}.ipynb"), str(tmp_path / f"{chapter}.ipynb"),
                                   parameters=book.chapter_parameters(chapter, "smoke"), kernel_name="python3",
                                   cwd=str(book.ROOT), progress_bar=False)
    # a check with teeth raises an AssertionError: plain, or book.ChapterCheckFailed (its subclass, named by papermill)
    assert failure.value.ename in ("AssertionError", book.ChapterCheckFailed.__name__), \
        (failure.value.ename, failure.value.evalue)
    assert any(message in failure.value.evalue for message in CHECKS[chapter]), failure.value.evalue


def test_the_planted_sign_flip_negates_the_trainers_loss(tmp_path: Path) -> None:
    """The plant itself: under it, GradScaler.scale returns the loss negated (so the test above plants what it says)."""
    import subprocess
    import sys

    (tmp_path / "sitecustomize.py").write_text(SIGN_FLIP)
    probe = "import torch; print(float(torch.amp.GradScaler('cpu', enabled=False).scale(torch.tensor(2.5))))"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment,
                               timeout=120, check=True)
    assert float(completed.stdout) == -2.5
