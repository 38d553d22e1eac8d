"""CoSaEmb (Singh & Singh): :mod:`.recipe` holds the method (the heading rule, the aspect texts, the three triplet
kinds, the graded loss, the paper's settings)."""

from sdr.methods.cosaemb.recipe import *  # noqa: F401,F403
from sdr.methods.cosaemb.recipe import __all__ as _recipe_all

__all__ = [*_recipe_all]
