"""SciToricsBERT (Sugimoto & Aizawa 2022, paper 004): :mod:`.recipe` holds the method (the objective and its five
losses, PK batches, scoring, Tables 3-4's baselines and released checks, the §4.3 label schedule, the CFS3 training
set); :mod:`.chapter` holds the chapter's steps, one call each, :mod:`.page` what the page shows of them next to the
paper, :mod:`.parts` the chapter's parts (``PARTS``) and its whole cost (``cost_plan``), and :mod:`.fidelity` the
one rule that pairs our rows with the paper's and the generated list of what differs from it. ``from sdr.methods
import scitoricsbert as st; st.X`` reaches them all."""

from sdr.methods.scitoricsbert.recipe import *  # noqa: F401,F403
from sdr.methods.scitoricsbert.recipe import __all__ as _recipe_all
from sdr.methods.scitoricsbert.chapter import *  # noqa: F401,F403
from sdr.methods.scitoricsbert.chapter import __all__ as _chapter_all
from sdr.methods.scitoricsbert.page import *  # noqa: F401,F403
from sdr.methods.scitoricsbert.page import __all__ as _page_all
from sdr.methods.scitoricsbert.parts import *  # noqa: F401,F403
from sdr.methods.scitoricsbert.parts import __all__ as _parts_all
from sdr.methods.scitoricsbert.fidelity import *  # noqa: F401,F403
from sdr.methods.scitoricsbert.fidelity import __all__ as _fidelity_all

__all__ = [*_recipe_all, *_chapter_all, *_page_all, *_parts_all, *_fidelity_all]
