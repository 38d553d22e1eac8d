"""sdr — the thin library behind the Scientific Document Representations book.

One module per idea (see the README's "Layout"): ``corpus`` (papers, citation graphs, readers),
``synthetic`` (seeded corpora and benchmark replicas), ``datasets`` (where every benchmark lives),
``encoders``, ``samplers``, ``losses``, ``train``, ``cfs3``, ``evaluate`` and ``book``.
Chapters import this package; it never imports the notebooks.
"""

__version__ = "0.1.0"
