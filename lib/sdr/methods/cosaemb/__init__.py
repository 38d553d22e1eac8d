"""CoSaEmb (Singh & Singh): :mod:`.recipe` holds the method (the heading rule, the aspect texts, the three triplet
kinds, the graded loss, the paper's settings) and :mod:`.chunking` its chunker (sentences packed into encoder inputs);
the chapter's steps, one call each, are in :mod:`.chapter` (data, triplets, training, held-out distances) and
:mod:`.scoring` (the benchmarks, the results store, the findings); :mod:`.parts` holds the parts, the cost plan, the
released checks and the dry run's branches, :mod:`.fidelity` the leakage audit, the list of what differs from the
paper and the rule that pairs our rows with the paper's. ``from sdr.methods import cosaemb; cosaemb.X`` reaches all
of them."""

from sdr.methods.cosaemb.recipe import *  # noqa: F401,F403
from sdr.methods.cosaemb.recipe import __all__ as _recipe_all
from sdr.methods.cosaemb.chunking import *  # noqa: F401,F403
from sdr.methods.cosaemb.chunking import __all__ as _chunking_all
from sdr.methods.cosaemb.chapter import *  # noqa: F401,F403
from sdr.methods.cosaemb.chapter import __all__ as _chapter_all
from sdr.methods.cosaemb.scoring import *  # noqa: F401,F403
from sdr.methods.cosaemb.scoring import __all__ as _scoring_all
from sdr.methods.cosaemb.parts import *  # noqa: F401,F403
from sdr.methods.cosaemb.parts import __all__ as _parts_all
from sdr.methods.cosaemb.fidelity import *  # noqa: F401,F403
from sdr.methods.cosaemb.fidelity import __all__ as _fidelity_all

__all__ = [*_recipe_all, *_chunking_all, *_chapter_all, *_scoring_all, *_parts_all, *_fidelity_all]
