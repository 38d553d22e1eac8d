"""SPECTER (Cohan et al. 2020): :mod:`.recipe` holds the method (paper defaults, its training data, training on
triplets, the evaluations every document-level chapter reports); :mod:`.chapter` holds the chapter's steps, one
call each, which the SciNCL chapter shares (same data, same evaluations, same leaderboard rows); :mod:`.paper` what
a ``paper`` run does up front (parts, the whole cost, the released models first, the dry run's branches, what the
page pairs with the papers and says differs)."""

from sdr.methods.specter.recipe import *  # noqa: F401,F403
from sdr.methods.specter.recipe import CORPUS_ID_BASE, __all__ as _recipe_all  # noqa: F401
from sdr.methods.specter.chapter import *  # noqa: F401,F403
from sdr.methods.specter.chapter import __all__ as _chapter_all
from sdr.methods.specter.paper import *  # noqa: F401,F403
from sdr.methods.specter.paper import __all__ as _paper_all

__all__ = [*_recipe_all, *_chapter_all, *_paper_all]
