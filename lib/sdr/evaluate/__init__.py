"""Evaluators that reproduce the official benchmark scripts.

Each benchmark is one module exposing

* ``add_arguments(parser)`` — its command-line options (``sdr evaluate NAME …``), and
* ``run(args) -> dict`` — the metrics dict of the contract in the README, and
* a Python function named ``evaluate`` that chapters call directly.

``BENCHMARKS`` is the single registry the CLI and the book read.
"""

BENCHMARKS = {
    "csfcube": "sdr.evaluate.csfcube",
    "scidocs": "sdr.evaluate.scidocs",
    "mdcr": "sdr.evaluate.mdcr",
    "scirepeval": "sdr.evaluate.scirepeval",
    "sentences": "sdr.evaluate.sentences",
    "paragraphs": "sdr.evaluate.paragraphs",
}
