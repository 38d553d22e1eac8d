"""``python -m sdr.graph.pbg_train CONFIG --rank R``: PyTorch-BigGraph's ``torchbiggraph_train`` with the book's fixes.

torchbiggraph 1.0.0's own command fails on Python ≥ 3.9 before it reads a config (``Unknown type:
typing.Optional[float]``); importing :mod:`sdr.graph.pbg` patches that (and silences its deprecation noise), then
this runs PBG's unchanged ``main`` — the command each machine of a distributed run starts
(:func:`sdr.graph.prepare_distributed` prints it).
"""

from __future__ import annotations

import sdr.graph.pbg  # noqa: F401  (the schema patch)


def _main() -> None:
    from torchbiggraph.train import main as pbg_main

    pbg_main()


if __name__ == "__main__":
    _main()
