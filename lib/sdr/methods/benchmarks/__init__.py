"""The Benchmarks chapter (notebooks/benchmarks.ipynb): :mod:`.chapter` holds its steps, one call each (the harness
checked against published numbers, the floor every later chapter has to clear); :mod:`.cost` its parts
(:data:`PARTS`), the data each reads and its whole cost up front (:func:`cost_plan`); :mod:`.released_models` the
``released`` part, the papers' models on the papers' benchmarks gathered from every chapter (and the dry run's
fixture of SciDocs' shipped embeddings); :mod:`.fidelity` the pairing rule of our rows with the papers' and the page's
list of what differs from the papers. ``from sdr.methods import benchmarks; benchmarks.X`` reaches all of them."""

from sdr.methods.benchmarks.chapter import *  # noqa: F401,F403
from sdr.methods.benchmarks.chapter import __all__ as _chapter_all
from sdr.methods.benchmarks.chapter import _check_csfcube, _check_sentences  # noqa: F401 - the checks' own tests
from sdr.methods.benchmarks.cost import *  # noqa: F401,F403
from sdr.methods.benchmarks.cost import __all__ as _cost_all
from sdr.methods.benchmarks.released_models import *  # noqa: F401,F403
from sdr.methods.benchmarks.released_models import __all__ as _released_all
from sdr.methods.benchmarks.fidelity import *  # noqa: F401,F403
from sdr.methods.benchmarks.fidelity import __all__ as _fidelity_all

DRY_RUN_BRANCHES = ("shipped SciDocs SPECTER embeddings scored", "PubMed-RCT scored", "paragraphs from S2ORC full text")
"""The paper path's branches the dry run must take (:meth:`sdr.book.ChapterRun.branch`): the shipped embeddings
scored against their expected values, PubMed-RCT's columns filled, paragraph retrieval on S2ORC full text (the
``real=`` path, not a replica). "released checks gathered" (any chapter registers a check) and "released checks
asserted" (one of them has a tolerance) are recorded as they happen, and "official CSFCube evaluator checked" where
the released CSFCube is linked into the mirror (``SDR_DATA``): none is required, since the first two depend on what
other chapters register and the third on the data the dry run is given."""

__all__ = [*_chapter_all, *_cost_all, *_released_all, *_fidelity_all, "DRY_RUN_BRANCHES"]
