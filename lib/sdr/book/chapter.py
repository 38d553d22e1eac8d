"""A chapter's run: the one object every cell of a chapter shares.

A chapter used to pass two dozen globals by name into helpers and branch on where its data came from. It now
starts with::

    run = book.ChapterRun("specter", globals())

which reads the values of the notebook's ``parameters`` cell (``run.p.seed``, ``run.p.epochs`` …), resolves
the data policy once (``run.data``: :class:`sdr.datasets.ChapterData`), and holds what every step needs: the
working folder, the caption under tables and figures, the run folder that makes training resumable, a fresh
encoder with the chapter's settings, :meth:`fit` (train with the chapter's settings, checkpointed under the run
folder), the checks with teeth (:meth:`expect_gain`, :meth:`expect_lower_loss`), and :meth:`save` (the results
store). Methods' steps (``sdr.methods.<name>``) take the run and return tables; the notebook keeps prose, the
parameters, one call per step and the figures.

Shown in: every chapter notebook, first code cell after the parameters.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from sdr.book import paths
from sdr.book.profiles import notebook_parameters
from sdr.book.results import save_results
from sdr.book.runs import run_dir
from sdr.book.sources import caption
from sdr.outputs import scratch_folder


class ChapterCheckFailed(AssertionError):
    """A chapter's check with teeth did not hold (an ``AssertionError``, as papermill and the teeth tests see it)."""


@dataclass
class Fit:
    """One training run of a chapter: the trained encoder, the trainer's result and, when a probe was asked for,
    the objective's loss on a fixed probe subset before and after training (dropout off)."""

    name: str
    encoder: object
    result: object
    loss_before: float = math.nan
    loss_after: float = math.nan
    examples: int = 0

    @property
    def steps(self) -> int:
        return int(self.result.steps)

    @property
    def history(self) -> pd.DataFrame:
        return self.result.history.assign(model=self.name)

    def losses(self) -> dict:
        return {"triplets": self.examples, "optimizer steps": self.steps, "loss before training": self.loss_before,
                "loss after training": self.loss_after}


@dataclass
class ChapterRun:
    """A chapter's parameters, data, folders and training, built from the notebook's namespace.

    Args:
        chapter: the chapter's name (``notebooks/<chapter>.ipynb``).
        namespace: the notebook's ``globals()``; the names of its ``parameters`` cell are read from it.
        training_keys: the parameters that change training (they key :attr:`runs`, so a rerun with
            ``resume = True`` finds the same checkpoints). Default: the method module's ``TRAINING_PARAMETERS``.
        models: models the chapter loads beside ``model_name`` (checked at ``paper`` before anything runs).
        loads_model: False for a chapter that loads no model (the Summary reads only the results store), so
            ``model_name`` is not checked, nor downloaded, at ``paper``.
        needs: the datasets checked at ``paper`` before anything runs, where they differ from
            ``sdr.datasets.CHAPTER_DATA[chapter]`` (e.g. SciToricsBERT without the CFS3 release reads its sources).

    Example::

        run = book.ChapterRun("specter", globals())
        fit = run.fit("SPECTER", triplets, objective, config)
        run.expect_lower_loss([fit])
    """

    chapter: str
    namespace: Mapping
    training_keys: Sequence[str] | None = None
    models: Sequence[str] = ()
    needs: Sequence[str] | None = None
    sources_extra: list[str] = field(default_factory=list)
    sources_replaced: list[str] = field(default_factory=list)
    fits: dict[str, Fit] = field(default_factory=dict)
    loads_model: bool = True
    branches: list[str] = field(default_factory=list)
    # every training run's probe loss a check read (before, after, the margin it needed), stored with the results as
    # the table "loss checks": benchmarks/measure_real_margins.py reads the drops over seeds from it
    loss_checks: dict[str, dict] = field(default_factory=dict)
    # every gain a check with teeth read (the gain, its margin, whether it applied), stored as the table "gain checks"
    gain_checks: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self):
        names = notebook_parameters(paths.NOTEBOOKS / f"{self.chapter}.ipynb")
        missing = sorted(name for name in names if name not in self.namespace)
        if missing:
            raise ValueError(f"ChapterRun({self.chapter!r}): parameters {missing} of the notebook's parameters cell "
                             "are not in the namespace given (pass globals() after the parameters cell ran)")
        values = {name: self.namespace[name] for name in names}
        # a papermill run started by hand is checked too (`sdr chapter` checked before papermill started)
        from sdr import parameters
        from sdr.book.profiles import load_profiles

        notebook = paths.NOTEBOOKS / f"{self.chapter}.ipynb"
        parameters.check_rules(values, parameters.parameter_rules(self.chapter, load_profiles()), notebook)
        self.p = SimpleNamespace(**values)
        self.profile = self.p.profile
        self.workdir = scratch_folder(f"sdr-{self.chapter}-")
        from sdr import datasets

        models = [getattr(self.p, "model_name", None) if self.loads_model else None, *self.models]
        self.data = datasets.ChapterData(self.chapter, self.profile, getattr(self.p, "use_real_data", "auto"),
                                         needs=self.needs, models=[m for m in models if m],
                                         workdir=self.workdir / "data")
        import seaborn as sns

        sns.set_theme(style="whitegrid")

    # ------------------------------------------------------------------------------------ parts, cost, branches
    @cached_property
    def parts(self) -> tuple[str, ...]:
        """The parts this run runs: the ``parts`` parameter (``"all"``, ``"headline"`` or names) resolved against
        the method's ``PARTS`` registry (:func:`sdr.plan.resolve_parts`); every part where the chapter has no
        registry or no ``parts`` parameter."""
        from sdr.plan import resolve_parts

        registry = getattr(self.method, "PARTS", None)
        if registry is None:
            return ()
        return resolve_parts(getattr(self.p, "parts", "all"), registry)

    def runs_part(self, name: str) -> bool:
        """Whether part ``name`` runs; a step of a part not run prints one line saying so (and how to run it)."""
        registry = getattr(self.method, "PARTS", None)
        if registry is not None and name not in registry:
            raise ValueError(f"{self.chapter}: {name!r} is not a part of the chapter; its PARTS are {list(registry)}")
        runs = registry is None or name in self.parts
        if not runs:
            print(f"part {name!r} not run at this profile (parts = {getattr(self.p, 'parts', 'all')!r}; it reproduces "
                  f"{registry[name].reproduces}; add it to `parts` to run it)")
        return runs

    @cached_property
    def plan(self):
        """The chapter's whole cost at this run's parameters (``sdr.methods.<chapter>.cost_plan``), every part with
        the parts this run runs marked; :meth:`show_plan` prints it."""
        cost_plan = getattr(self.method, "cost_plan", None)
        if cost_plan is None:
            raise ValueError(f"sdr.methods.{self.chapter} defines no cost_plan")
        return cost_plan(self.p)

    def show_plan(self) -> None:
        """At ``paper``, before anything trains: every part's training runs, encodings, graph, kNN, SVM and fetch
        work with their GPU hours (measured GPU; others scaled and labelled) and the totals. Nothing at smoke and
        real, whose sizes are not the papers'."""
        if self.data.policy.real_only:
            self.plan.show()

    def branch(self, name: str) -> None:
        """Record that the run took a branch of the ``paper`` path (stored with the results as ``branches``); the
        paper dry run checks that each chapter took the branches its method lists in ``DRY_RUN_BRANCHES``."""
        if name not in self.branches:
            self.branches.append(name)

    # ------------------------------------------------------------------------------------ what the page says
    @property
    def sources(self) -> list[str]:
        """The data lines under every table and figure: the inputs resolved so far (less those a step's line
        replaces), then lines added by steps."""
        return [*(line for line in self.data.sources if line not in self.sources_replaced), *self.sources_extra]

    def add_source(self, line: str, replaces: Iterable[str] = ()) -> None:
        """A line every later caption carries (e.g. "CSFCube inputs cut at 32 tokens"); ``replaces``: data lines it
        says more about, left out from then on (e.g. the CFS3 release's line, replaced by one with its split's
        sizes)."""
        self.sources_replaced.extend(old for old in replaces if old not in self.sources_replaced)
        if line not in self.sources_extra:
            self.sources_extra.append(line)

    def caption(self, *extra: str) -> str:
        return caption(self.profile, [*self.sources, *extra])

    def show(self, table: pd.DataFrame, *extra_sources: str, decimals: int | None = 2):
        """Print the caption, then display ``table`` (rounded to ``decimals``)."""
        from IPython.display import display

        print(self.caption(*extra_sources))
        display(table.round(decimals) if decimals is not None else table)

    def glue(self, name: str, value, fmt: str | None = None) -> None:
        """Glue ``value`` for the prose as ``{glue:text}`<chapter>_<name>```; ``fmt`` formats it first."""
        from myst_nb import glue

        glue(f"{self.chapter}_{name}", format(value, fmt) if fmt else value, display=False)

    # ------------------------------------------------------------------------------------ training
    @cached_property
    def runs(self) -> Path:
        """The chapter's run folder in the results store (:func:`sdr.book.runs.run_dir`), keyed by the
        parameters that change training and the training data resolved when it is first asked for (ask after
        the chapter resolved its inputs)."""
        keys = self.training_keys
        if keys is None:
            keys = getattr(self.method, "TRAINING_PARAMETERS", None)
        if keys is None:
            raise ValueError(f"{self.chapter}: no training_keys and sdr.methods.{self.chapter} has no "
                             "TRAINING_PARAMETERS, so the run folder cannot be keyed")
        unknown = [key for key in keys if not hasattr(self.p, key)]
        if unknown:
            raise ValueError(f"{self.chapter}: training keys {unknown} are not parameters of the notebook")
        # the training data too: the same parameters on other data (a replica, then the real set) must not resume
        # another run's checkpoints
        return run_dir(self.chapter, self.profile, {**{key: getattr(self.p, key) for key in keys},
                                                    "training data": self.data.training_sources,
                                                    **getattr(self, "_runs_extra", {})})

    def key_runs(self, extra: Mapping) -> Path:
        """Key the run folder by the training parameters and ``extra`` values that change training but are no
        parameter (SciNCL: the training data's source line); call it before the first :meth:`fit` (again with the
        same values: a rerun of the cell). Returns :attr:`runs`."""
        if "runs" in self.__dict__ and dict(extra) != getattr(self, "_runs_extra", {}):
            raise ValueError(f"{self.chapter}: key_runs({dict(extra)}) after the run folder was made; call it before "
                             "the first fit")
        self._runs_extra = dict(extra)
        return self.runs

    @cached_property
    def method(self):
        import importlib

        try:
            return importlib.import_module(f"sdr.methods.{self.chapter}")
        except ModuleNotFoundError:
            return None

    def encoder(self, *, name: str | None = None, **options):
        """A fresh encoder with the chapter's model settings (``model_name``, ``model_layers``, ``device``,
        ``packed``, ``precision``); ``options`` go to :meth:`sdr.encoders.Encoder.load` (pooling, max_length …)."""
        from sdr.encoders import Encoder

        p = self.p
        settings = {"num_layers": getattr(p, "model_layers", 0), "device": getattr(p, "device", "auto"),
                    "packed": getattr(p, "packed", "auto"), "precision": getattr(p, "precision", "auto")}
        settings.update(options)
        return Encoder.load(self.data.model(name or p.model_name), **settings)

    def fit(self, name: str, examples: Sequence, objective, config, *, encoder=None, folder: str | None = None,
            probe: int = 0, **train_options) -> Fit:
        """Train ``encoder`` (default: :meth:`encoder` with the chapter's settings, which then needs
        ``pooling``/``max_length`` from the method: pass ``encoder``) on ``examples`` with ``objective`` and
        ``config``, checkpointed in ``runs / (folder or name)`` and resumed from there when ``resume`` is set.

        ``probe > 0`` measures the objective on a fixed, evenly spaced subset of about ``probe`` examples before
        and after training (dropout off), which :meth:`expect_lower_loss` checks."""
        from sdr.train import evaluate_loss, train

        if not examples:
            raise ValueError(f"{self.chapter}: {name} has no training examples")
        encoder = encoder if encoder is not None else self.encoder()
        probe_set = list(examples[::max(1, len(examples) // probe)]) if probe > 0 else []
        before = evaluate_loss(encoder, probe_set, objective) if probe_set else math.nan
        result = train(encoder, list(examples), objective, config, output_dir=self.runs / (folder or name),
                       resume=bool(getattr(self.p, "resume", False)), **train_options)
        after = evaluate_loss(encoder, probe_set, objective) if probe_set else math.nan
        fit = Fit(name, encoder, result, before, after, len(examples))
        self.fits[name] = fit
        return fit

    @property
    def resumed_from(self) -> dict[str, int]:
        """Where each run of this execution resumed (optimizer step; 0 = trained from the start)."""
        return {name: int(fit.result.resumed_from_step) for name, fit in self.fits.items()}

    # ------------------------------------------------------------------------------------ checks with teeth
    def expect_lower_loss(self, fits: Iterable[Fit], margin: float = 0.0) -> pd.DataFrame:
        """Every fit's probe loss after training is below its loss before by more than ``margin``; returns the
        table of the losses (raises :class:`ChapterCheckFailed` naming the run otherwise)."""
        fits = list(fits)
        for fit in fits:
            self.record_loss_check(fit.name, fit.loss_before, fit.loss_after, margin)
        for fit in fits:
            if not fit.loss_after < fit.loss_before - margin:
                raise ChapterCheckFailed(f"{fit.name}: training did not lower the loss by more than {margin:g} "
                                         f"({fit.loss_before:.4f} -> {fit.loss_after:.4f})")
        return pd.DataFrame({fit.name: fit.losses() for fit in fits}).T

    def record_loss_check(self, name: str, before: float, after: float, margin: float | None) -> None:
        """Keep a run's probe loss before and after training and the margin its check needs (None: shown, not
        checked) for the results store's "loss checks" table."""
        self.loss_checks[name] = {"loss before": float(before), "loss after": float(after),
                                  "drop": float(before) - float(after),
                                  "margin": float("nan") if margin is None else float(margin)}

    def expect_gain(self, name: str, gain: float, margin: float, what: str = "over the untrained encoder",
                    applies: bool = True, why_not: str = "", decimals: int = 2) -> bool:
        """A check with teeth: ``gain`` (trained minus untrained, on the page's scale) must exceed ``margin``, a
        value set from the measured seed spread (profiles.yml says how). ``applies`` is False where the check
        has no meaning at this run (e.g. real data, on which the margin was not measured); the page then prints
        why (``why_not``). ``decimals``: of the gain as printed (3 for scores on a 0-1 scale). Returns whether the
        check ran."""
        shown = f"{gain:+.{decimals}f}"
        self.gain_checks[name] = {"gain": float(gain), "margin": float(margin), "applied": bool(applies)}
        if not applies:
            print(f"check not applied: {name} {shown} {what}" + (f" ({why_not})" if why_not else ""))
            return False
        if not gain > margin:
            raise ChapterCheckFailed(f"{name}: {shown} {what}, need more than {margin:g}")
        print(f"check passed: {name} {shown} {what} > {margin:g}")
        return True

    # ------------------------------------------------------------------------------------ the results store
    def save(self, tables: Mapping[str, pd.DataFrame], extra: Mapping | None = None,
             sources: Sequence[str] | None = None) -> Path:
        """Store the chapter's tables and extra values (:func:`sdr.book.results.save_results`)."""
        sources = list(sources) if sources is not None else [*self.sources, *self.data.model_sources]
        extra = dict(extra or {})
        if self.loss_checks and "loss checks" not in tables:
            tables = {**tables, "loss checks": pd.DataFrame(self.loss_checks).T.rename_axis("run")}
        if self.gain_checks and "gain checks" not in tables:
            tables = {**tables, "gain checks": pd.DataFrame(self.gain_checks).T.rename_axis("check")}
        if self.branches:
            extra["branches"] = list(self.branches)
        if self.parts:
            extra["parts"] = list(self.parts)
        return save_results(self.chapter, self.profile, tables, sources, extra)


def show_paper_vs_ours(run: ChapterRun, ours: pd.DataFrame, paper: str, *, models: Sequence[str] | None = None,
                       columns: Sequence[str] | None = None, decimals: int | None = 2, label: str | None = None,
                       sources: Sequence[str] = ()) -> pd.DataFrame:
    """A paper table's rows (``data/paper_tables/<paper>.csv``, those named ``models`` when given: each must be
    there) stacked over ours on the ``columns`` both have (default: every column of ours the paper table has),
    with a ``reported by`` column (ours: ``label``, default "this book (<profile>)"); shown under the run's
    caption (and the lines ``sources`` add) and returned (the paper's rows alone when ours is empty: ``columns``
    must then be given). A figure-like cell: ``hide-input`` on the page."""
    from sdr.book.results import paper_vs_ours, read_paper_table

    table = read_paper_table(paper)
    if models is not None:
        missing = sorted(set(models) - set(table["model"]))
        if missing:
            raise ValueError(f"data/paper_tables/{paper}.csv has no rows {missing}")
        table = table[table["model"].isin(models)]
    columns = list(columns) if columns is not None else [c for c in ours.columns if c in table.columns]
    if not columns:
        raise ValueError(f"no column of ours is in data/paper_tables/{paper}.csv: {list(ours.columns)}")
    if ours.empty:  # no row of ours ran at this profile (e.g. no ablation): the paper's rows alone
        ours = pd.DataFrame(columns=columns)
    combined = paper_vs_ours(ours, table, columns, label=label or f"this book ({run.profile})")
    run.show(combined, *sources, decimals=decimals)
    return combined


def replicas_of_one_corpus(*inputs) -> bool:
    """Whether every input is a replica written from the chapter's one synthetic corpus: where the checks with
    teeth were measured (their margins come from seeds of exactly that setting)."""
    return all(item is not None and not item.real for item in inputs)

