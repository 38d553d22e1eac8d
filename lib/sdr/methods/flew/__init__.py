"""FLeW (Dou et al.): :mod:`.recipe` holds the method (facet subgraphs, the released triplets' query list, facet
papers, the simplex grid and the weight search per benchmark, FLeW's table columns); :mod:`.chapter` holds the
chapter's data and training steps, one call each, with its registries (facet encoders, Table 3's ablations, the
released encoders); :mod:`.evaluation` its benchmark steps, the paper's tables, findings and store; :mod:`.figures`
the chapter's own figures. :mod:`.parts` is what a user can run alone (``PARTS``) and the whole cost up front
(``cost_plan``); :mod:`.released_checks` the released models scored first (``RELEASED_CHECKS``); :mod:`.published`
the published recipe (the released triplets and split abstracts) and the comparison of the two triplet sets;
:mod:`.fidelity` the pairing rule and the differences from the paper; :mod:`.fixtures` the replica of the released
split abstracts and the paper dry run's fixtures. ``from sdr.methods import flew; flew.X`` reaches them all."""

from sdr.methods.flew.recipe import *  # noqa: F401,F403
from sdr.methods.flew.recipe import __all__ as _recipe_all
from sdr.methods.flew.chapter import *  # noqa: F401,F403
from sdr.methods.flew.chapter import __all__ as _chapter_all
from sdr.methods.flew.evaluation import *  # noqa: F401,F403
from sdr.methods.flew.evaluation import __all__ as _evaluation_all
from sdr.methods.flew.parts import *  # noqa: F401,F403
from sdr.methods.flew.parts import __all__ as _parts_all
from sdr.methods.flew.released_checks import *  # noqa: F401,F403
from sdr.methods.flew.released_checks import __all__ as _released_all
from sdr.methods.flew.published import *  # noqa: F401,F403
from sdr.methods.flew.published import __all__ as _published_all
from sdr.methods.flew.fidelity import *  # noqa: F401,F403
from sdr.methods.flew.fidelity import __all__ as _fidelity_all
from sdr.methods.flew import figures  # noqa: F401

__all__ = [*_recipe_all, *_chapter_all, *_evaluation_all, *_parts_all, *_released_all, *_published_all,
           *_fidelity_all, "figures"]
