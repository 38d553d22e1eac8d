"""SciNCL (Ostendorff et al. 2022): :mod:`.recipe` holds the method (the sampling bands, the kNN sampling, the
collision sweep, the sweeps of Figs. 2-3, the task averages of Table 2); :mod:`.chapter` holds the chapter's steps,
one call each (it shares SPECTER's through :mod:`sdr.methods.specter.chapter`); :mod:`.ablations` Table 2's
ablations as one registry and the runs of the sweeps; :mod:`.without_leakage` Table 1's w/o-leakage rows (the graph
of SciNCL's released triples); :mod:`.paper` what a ``paper`` run does up front (parts, the whole cost, the released
model, the dry run's branches, the deviations); :mod:`.figures` the chapter's own figures.
``from sdr.methods import scincl; scincl.X`` reaches all of them."""

from sdr.methods.scincl.recipe import *  # noqa: F401,F403
from sdr.methods.scincl.recipe import __all__ as _recipe_all
from sdr.methods.scincl.chapter import *  # noqa: F401,F403
from sdr.methods.scincl.chapter import __all__ as _chapter_all
from sdr.methods.scincl.ablations import *  # noqa: F401,F403
from sdr.methods.scincl.ablations import __all__ as _ablations_all
from sdr.methods.scincl.without_leakage import *  # noqa: F401,F403
from sdr.methods.scincl.without_leakage import __all__ as _without_leakage_all
from sdr.methods.scincl.paper import *  # noqa: F401,F403
from sdr.methods.scincl.paper import __all__ as _paper_all
from sdr.methods.scincl import figures  # noqa: F401

__all__ = [*_recipe_all, *_chapter_all, *_ablations_all, *_without_leakage_all, *_paper_all, "figures"]
