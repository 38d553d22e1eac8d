"""SPECTERCL and the SciAspect family: Bansal's thesis, Experiments 2–5 (``papers/003_…``).

* **SPECTERCL** (Exp. 2, §5.2): SPECTER(Undirected)'s pools (direct references *and* citations as positives,
  references-of-references as hard negatives) with the general contrastive loss of eq. 2.6 instead of the triplet
  loss; :data:`SPECTERCL_VARIANTS` are the rows of Table 6.3.
* **SciAspect** (Exp. 3, §5.3): one instance is (aspect *i*, anchor, positives linked to the anchor in aspect *i*,
  hard negatives linked to it in another aspect, easy negatives), eq. 2.6 in the aspect's projection space.
* **SciAspectHybrid** (Exp. 4, §5.4): ``α · L_global + (1 − α) · L_local`` (eq. 5.4, α = 0.7).
* **SciAspectL2** (Exp. 5, §5.5): negatives are references-of-references reached in another aspect,
  configurations 5.1/5.2/5.3 (:data:`L2_CONFIGS`, Table 6.7).

The package is split by what changes each part: :mod:`.data` (the thesis' citation data and its evaluation sets'
papers), :mod:`.sampling` (the samplers and their rules), :mod:`.recipe` (objectives, training setup, embeddings),
:mod:`.registry` (what the chapter samples, trains and shows, said once), :mod:`.chapter` (the chapter's steps up to
training), :mod:`.scoring` (its scoring steps and its record), :mod:`.paper` (the chapter at ``paper``: its
parts, its whole cost, the released checkpoints the thesis reports, the dry run's branches and fixture) and
:mod:`.fidelity` (the rule that pairs our rows with the thesis', and the page's list of what differs). Everything
is re-exported here, so ``from sdr.methods import sciaspect; sciaspect.X`` reaches any of them.
"""

from sdr.methods.sciaspect.data import *  # noqa: F401,F403
from sdr.methods.sciaspect.data import __all__ as _data_all
from sdr.methods.sciaspect.sampling import *  # noqa: F401,F403
from sdr.methods.sciaspect.sampling import __all__ as _sampling_all
from sdr.methods.sciaspect.recipe import *  # noqa: F401,F403
from sdr.methods.sciaspect.recipe import __all__ as _recipe_all
from sdr.methods.sciaspect.registry import *  # noqa: F401,F403
from sdr.methods.sciaspect.registry import __all__ as _registry_all
from sdr.methods.sciaspect.chapter import *  # noqa: F401,F403
from sdr.methods.sciaspect.chapter import __all__ as _chapter_all
from sdr.methods.sciaspect.scoring import *  # noqa: F401,F403
from sdr.methods.sciaspect.scoring import __all__ as _scoring_all
from sdr.methods.sciaspect.paper import *  # noqa: F401,F403
from sdr.methods.sciaspect.paper import __all__ as _paper_all
from sdr.methods.sciaspect.fidelity import *  # noqa: F401,F403
from sdr.methods.sciaspect.fidelity import __all__ as _fidelity_all

__all__ = [*_data_all, *_sampling_all, *_recipe_all, *_registry_all, *_chapter_all, *_scoring_all, *_paper_all,
           *_fidelity_all]
