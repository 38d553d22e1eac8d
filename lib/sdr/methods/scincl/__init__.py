"""SciNCL (Ostendorff et al. 2022): :mod:`.recipe` holds the method (the sampling bands, the kNN sampling, the
collision sweep, the task averages of Table 2); :mod:`.chapter` holds the chapter's steps, one call each, with Table
2's ablations and Figs. 2-3's sweeps as registries the notebook, the plan and the tests read; :mod:`.figures` the
chapter's own figures. ``from sdr.methods import scincl; scincl.X`` reaches all three."""

from sdr.methods.scincl.recipe import *  # noqa: F401,F403
from sdr.methods.scincl.recipe import TABLE2_ABLATIONS, __all__ as _recipe_all  # noqa: F401

__all__ = [*_recipe_all]
