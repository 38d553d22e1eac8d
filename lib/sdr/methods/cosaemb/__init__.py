"""CoSaEmb (Singh & Singh): :mod:`.recipe` holds the method (the heading rule, the aspect texts, the three triplet
kinds, the graded loss, the paper's settings) and :mod:`.chunking` its chunker (sentences packed into encoder inputs);
``from sdr.methods import cosaemb; cosaemb.X`` reaches both."""

from sdr.methods.cosaemb.recipe import *  # noqa: F401,F403
from sdr.methods.cosaemb.recipe import __all__ as _recipe_all
from sdr.methods.cosaemb.chunking import *  # noqa: F401,F403
from sdr.methods.cosaemb.chunking import __all__ as _chunking_all

__all__ = [*_recipe_all, *_chunking_all]
