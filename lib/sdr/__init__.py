"""sdr — the thin library behind the Scientific Document Representations book.

One module per idea (see the README's "Layout"): ``corpus`` (papers, citation graphs, readers),
``synthetic`` (seeded corpora and benchmark replicas), ``datasets`` (where every benchmark lives),
``encoders``, ``samplers``, ``losses``, ``train``, ``cfs3``, ``evaluate`` and ``book``.
Chapters import this package; it never imports the notebooks.
"""

import warnings

__version__ = "0.1.0"

# Without ipywidgets, tqdm.auto falls back to text bars inside Jupyter; that is what we want in the
# executed chapters, so its one-time warning about it is noise.
warnings.filterwarnings("ignore", message="IProgress not found")
