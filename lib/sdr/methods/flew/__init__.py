"""FLeW (Dou et al.): :mod:`.recipe` holds the method (facet subgraphs, the released triplets' query list, facet
papers, the simplex grid and the weight search per benchmark, FLeW's table columns); :mod:`.chapter` holds the
chapter's data and training steps, one call each, with its registries (facet encoders, Table 3's ablations, the
released encoders); :mod:`.evaluation` its benchmark steps, the paper's tables, findings and store; :mod:`.figures`
the chapter's own figures. ``from sdr.methods import flew; flew.X`` reaches the recipe and the
steps alike."""

from sdr.methods.flew.recipe import *  # noqa: F401,F403
from sdr.methods.flew.recipe import __all__ as _recipe_all
from sdr.methods.flew.chapter import *  # noqa: F401,F403
from sdr.methods.flew.chapter import __all__ as _chapter_all
from sdr.methods.flew.evaluation import *  # noqa: F401,F403
from sdr.methods.flew.evaluation import __all__ as _evaluation_all
from sdr.methods.flew import figures  # noqa: F401

__all__ = [*_recipe_all, *_chapter_all, *_evaluation_all, "figures"]
