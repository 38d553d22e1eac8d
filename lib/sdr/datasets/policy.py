"""The one data policy: what each profile reads, decided here and nowhere else (:class:`ChapterData`).

A chapter resolves each input through :meth:`ChapterData.input`: a replica at ``smoke``, the real data when
found at ``real``, and at ``paper`` the real data only, checked (or downloaded) before anything is trained,
else :class:`PaperDataMissing`. The active policy makes replica writers refuse under ``paper``
(:func:`forbid_replica`, :class:`ReplicaForbidden`); :func:`dry_run` is the paper dry run's switch.

The policy changes when the book's rule for real versus replica data changes, independently of the
registry's entries and of how files are downloaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sdr.datasets.download import (_MINILM_NAMES, DatasetUnavailable, _folder_with, _model_missing, fetch_any,
                                   fetch_state, offline, partial_folder)
from sdr.datasets.lock import sha256_of
from sdr.datasets.registry import (CHAPTER_DATA, CHAPTER_MODELS, SAME_LAYOUT_AS, Dataset, fetch_command, get,
                                   paper_files)
from sdr.outputs import scratch_folder


#
# One rule for every chapter's inputs, decided here and nowhere else:
#
# ========  ===============================  ====================================
# profile   training data                    evaluation data
# ========  ===============================  ===========================================
# smoke     replicas                         real when found, else replicas
# real      real when found, else replicas   real when found, else replicas
# paper     real only (downloaded, or stop)  real only (downloaded, or stop)
# ========  ===============================  ===========================================
#
# ``use_real_data=False`` (smoke/real) turns every input into its replica; at ``paper`` it is refused.
# ``smoke`` with ``use_real_data=True`` reads real training data when found too.

REPLICA, REAL_IF_FOUND, REAL_ONLY = "replica", "real if found", "real only"
DRY_RUN_ENV = "SDR_PAPER_DRY_RUN"
"""Set (to 1) by ``make paper-dry-run``: the mirror holds official-format fixtures, so digests are not checked
and every input is labelled a dry-run fixture; released models resolve to the offline MiniLM stand-in."""


class ReplicaForbidden(RuntimeError):
    """A replica or the synthetic corpus was requested while the ``paper`` policy is active."""


class PaperDataMissing(DatasetUnavailable):
    """At ``paper``, inputs of a chapter are missing and could not be fetched: raised before any training."""


@dataclass(frozen=True)
class Policy:
    """What a profile reads: ``training`` and ``evaluation`` are each REPLICA, REAL_IF_FOUND or REAL_ONLY."""

    profile: str
    training: str
    evaluation: str

    @property
    def real_only(self) -> bool:
        return REAL_ONLY in (self.training, self.evaluation)

    def mode(self, role: str) -> str:
        if role not in ("training", "evaluation"):
            raise ValueError(f"role must be 'training' or 'evaluation', got {role!r}")
        return self.training if role == "training" else self.evaluation


def _real_data_setting(setting) -> bool | None:
    """``use_real_data`` as True / False / None (None: "auto", the profile decides)."""
    if isinstance(setting, bool):
        return setting
    if isinstance(setting, str) and setting.strip().lower() in ("auto", "true", "false"):
        value = setting.strip().lower()
        return None if value == "auto" else value == "true"
    raise ValueError(f"use_real_data must be true, false or 'auto', got {setting!r}")


def policy_for(profile: str, use_real_data="auto") -> Policy:
    """The data policy of a profile (see the table at the top of this section)."""
    setting = _real_data_setting(use_real_data)
    if profile == "paper":
        if setting is False:
            raise ValueError("use_real_data=False contradicts the paper profile, which reads the papers' own data only")
        return Policy(profile, REAL_ONLY, REAL_ONLY)
    if setting is False:
        return Policy(profile, REPLICA, REPLICA)
    if profile == "smoke" and setting is None:
        return Policy(profile, REPLICA, REAL_IF_FOUND)
    return Policy(profile, REAL_IF_FOUND, REAL_IF_FOUND)


_active_policy: Policy | None = None


def activate(policy: Policy | None) -> None:
    """Make ``policy`` the process's data policy (``ChapterData`` does it); the replica writers consult it."""
    global _active_policy
    _active_policy = policy
    if policy is not None and policy.real_only:
        os.environ["SDR_DATA_POLICY"] = policy.profile  # worker processes inherit the prohibition
    else:
        os.environ.pop("SDR_DATA_POLICY", None)


def active_policy() -> Policy | None:
    if _active_policy is not None:
        return _active_policy
    if os.environ.get("SDR_DATA_POLICY") == "paper":
        return policy_for("paper")
    return None


def forbid_replica(what: str) -> None:
    """Called by every replica writer and the synthetic corpus: refuses to run under the ``paper`` policy."""
    policy = active_policy()
    if policy is not None and policy.real_only:
        raise ReplicaForbidden(
            f"{what}: the {policy.profile} profile reads the papers' own data only; a replica or the synthetic "
            f"corpus was requested. Each input must come from sdr.datasets.ChapterData.input(), which fetches the "
            f"real data or stops before training.")


def dry_run() -> bool:
    return os.environ.get(DRY_RUN_ENV, "") not in ("", "0")


_OFFICIAL: dict[tuple[str, str], bool] = {}


@dataclass(frozen=True)
class DataInput:
    """One resolved input of a chapter: its folder (or file), whether it is real or a replica, and the line
    that names it on the page."""

    name: str
    kind: str  # "real" or "replica"
    path: Path
    source: str
    verified: bool | None = None  # real data: every file with a known digest matched (None: none checked)

    @property
    def real(self) -> bool:
        return self.kind == "real"

    @property
    def official(self) -> bool:
        """Real, and the released bytes: every file the registry has a digest for matches it (checks against a
        published number run only then; in the paper dry run a fixture is real-shaped but not official)."""
        if not self.real:
            return False
        dataset = get(self.name)
        pinned = [f for f in dataset.files if f.sha256 and not f.archive]
        if not pinned:
            return not dry_run()
        key = (str(self.path), self.name)
        if key not in _OFFICIAL:
            _OFFICIAL[key] = all((self.path / f.path).is_file() and sha256_of(self.path / f.path) == f.sha256
                                 for f in pinned if f.required or (self.path / f.path).exists())
        return _OFFICIAL[key]

    def file(self, relative: str) -> Path:
        """``path / relative``, which must exist."""
        target = self.path / relative
        if not target.exists():
            raise FileNotFoundError(f"{target}: not found in the {self.kind} {self.name} folder {self.path}")
        return target


class ChapterData:
    """A chapter's inputs under its profile's data policy: one :meth:`input` call per input, no branching.

    At ``paper`` the constructor checks every dataset the chapter reads (:data:`CHAPTER_DATA`, or ``needs``),
    downloads what is missing when ``download`` is on, and otherwise raises one :class:`PaperDataMissing`
    listing every missing dataset and the command that fetches it, before anything is trained. It also
    makes the policy active, so a replica writer called under ``paper`` raises :class:`ReplicaForbidden`.

    Example::

        data = ChapterData("specter", profile, use_real_data)
        scidocs_input = data.input("scidocs", replica=lambda folder: write_scidocs(eval_corpus, folder),
                                   replica_source="SciDocs replica of the evaluation papers")
        scidocs_input.path, scidocs_input.real, data.sources
    """

    def __init__(self, chapter: str, profile: str, use_real_data="auto", *, download: bool | None = None,
                 needs: tuple[str, ...] | list[str] | None = None, models: tuple[str, ...] | list[str] = (),
                 workdir: str | Path | None = None, progress: bool = True):
        self.chapter, self.profile = chapter, profile
        self.policy = policy_for(profile, use_real_data)
        self.download = self.policy.real_only if download is None else bool(download)
        if offline():
            self.download = False
        self.models = tuple(dict.fromkeys([*models, *CHAPTER_MODELS.get(chapter, ())]))
        self._model_sources: dict[str, str] = {}
        self._training_sources: list[str] = []
        if needs is None:
            needs = CHAPTER_DATA.get(chapter, ())
        self.needs = tuple(dict.fromkeys(needs))
        for name in self.needs:
            get(name)  # unknown names fail here
        self.workdir = Path(workdir) if workdir else scratch_folder(f"sdr-{chapter}-data-")
        self.progress = progress
        self.inputs: dict[str, DataInput] = {}
        self.absent: list[str] = []  # optional inputs neither found nor replicated (smoke/real)
        self._prepared: dict[str, Path] = {}
        activate(self.policy)
        if self.policy.real_only:
            self._prepare()

    # ---------------------------------------------------------------- paper: everything before training
    def _prepare(self) -> None:
        missing: list[tuple[Dataset, str]] = []
        offline_reason = None
        for name in self.needs:
            dataset = get(name)
            files = paper_files(dataset)
            folder = _folder_with(dataset, files)
            if folder is None and self.download and offline_reason is None:
                try:
                    folder = fetch_any(dataset, progress=self.progress)
                    folder = _folder_with(dataset, files)
                    if folder is None:
                        raise DatasetUnavailable(f"{dataset.name}: fetched, but the files a paper run reads are "
                                                 f"not all there: {', '.join(files[:5])}")
                except DatasetUnavailable as error:
                    reason = str(error)
                    if "download failed" in reason:
                        offline_reason = reason  # no network: do not wait for every other download to time out
                    missing.append((dataset, reason))
                    continue
            if folder is None:
                reason = (f"not tried: offline ({offline_reason.split(': ', 1)[-1][:160]})" if offline_reason
                          else "not in $SDR_DATA or the cache, and downloads are off" if not self.download
                          else "not found")
                partial = partial_folder(dataset)
                if partial is not None:  # say how far an interrupted fetch got, and how to resume it
                    reason += f"; {partial}: {fetch_state(partial).describe(dataset.name)}"
                missing.append((dataset, reason))
                continue
            self._prepared[name] = folder
        missing_models = []
        for model in self.models:
            reason = None if dry_run() else _model_missing(model, self.download and offline_reason is None)
            if reason is not None and offline_reason is not None and self.download:
                reason = "not tried: offline"
            if reason is not None:
                if "download failed" in reason:
                    offline_reason = offline_reason or reason
                missing_models.append((model, reason))
        if missing or missing_models:
            raise PaperDataMissing(self._missing_report(missing, missing_models))

    def _missing_report(self, missing: list[tuple["Dataset", str]], missing_models=()) -> str:
        lines = [f"{self.chapter} at profile {self.profile}: {len(missing)} of the {len(self.needs)} data sets it "
                 f"reads {'is' if len(missing) == 1 else 'are'} missing"
                 + (f", and {len(missing_models)} of its {len(self.models)} models" if missing_models else "")
                 + "; nothing was trained."]
        for dataset, reason in missing:
            lines.append(f"  - {dataset.name}: {dataset.description}")
            lines.append(f"      get it: {fetch_command(dataset)}")
            lines.append(f"      why missing: {reason}")
        for model, reason in missing_models:
            lines.append(f"  - model {model} (Hugging Face Hub)")
            lines.append(f"      get it: sdr data fetch --model {model}")
            lines.append(f"      why missing: {reason}")
        lines.append(f"Fetch everything this chapter reads with `sdr data fetch --for {self.chapter}` (internet "
                     f"needed; cache: $SDR_DATA_CACHE, default ~/.cache/sdr), or set SDR_DATA to a mirror holding "
                     f"these folders; `sdr data status --for {self.chapter}` lists what is present.")
        return "\n".join(lines)

    # ---------------------------------------------------------------- one input
    def input(self, name: str, replica=None, *, role: str = "evaluation", replica_source: str | None = None,
              files: tuple[str, ...] = (), real=None, optional: bool = False) -> DataInput | None:
        """Resolve one input: its real folder or, where the policy allows, the replica ``replica`` writes.

        ``replica(folder)`` is called with an empty folder and returns the path to use (a folder or a file).
        ``real(folder)``, when given, turns the real folder into the same kind of thing the replica is (e.g. a
        chunk file cut from S2ORC full text) and its return value becomes the input's path.
        ``files`` are paths the real folder must hold for this input (default: the dataset's expected files).
        ``optional``: at smoke/real, an input that is neither found nor has a replica is None (its rows stay
        empty and the page says so); at ``paper`` nothing is optional.
        """
        name = self._stand_in(name)
        dataset = get(name)
        mode = self.policy.mode(role)
        if mode == REAL_ONLY:
            if name not in self._prepared:
                raise ValueError(f"{self.chapter}: input {name!r} is read at profile {self.profile} but not declared "
                                 f"in sdr.datasets.CHAPTER_DATA[{self.chapter!r}] (nor in needs=), so it was not "
                                 f"checked before training")
            folder = self._prepared[name]
            for relative in files:
                if not (folder / relative).exists():
                    raise FileNotFoundError(f"{folder / relative}: not found; the {name} folder {folder} lacks it")
            return self._remember(self._real_input(dataset, folder, real), role)
        folder = _folder_with(dataset, tuple(files) or dataset.expected_paths()) if mode == REAL_IF_FOUND else None
        if folder is not None:
            return self._remember(self._real_input(dataset, folder, real), role)
        if replica is None and optional:
            self.absent.append(name)
            return None
        if replica is None:
            raise DatasetUnavailable(
                f"{self.chapter}: {name} is not in $SDR_DATA or the cache and has no replica; "
                f"{fetch_command(dataset)}")
        target = self.workdir / f"replica-{name}"
        target.mkdir(parents=True, exist_ok=True)
        path = Path(replica(target))
        source = replica_source or f"{dataset.label or dataset.name} replica"
        return self._remember(DataInput(name, "replica", path, f"{source} [replica]"), role)

    def _stand_in(self, name: str) -> str:
        """The dataset read for ``name``: itself, or, when the chapter's data (CHAPTER_DATA / ``needs``) lists a bulk
        dataset in its place (``SAME_LAYOUT_AS``: the same layout, another route), that bulk dataset."""
        if name in self.needs:
            return name
        return next((bulk for bulk in self.needs if SAME_LAYOUT_AS.get(bulk) == name), name)

    def model(self, name: str) -> str:
        """The name or folder to load a model from. At ``paper`` the model was checked (or downloaded) before the
        chapter started. In the paper dry run a Hub model loads from its tiny random stand-in in the mirror
        (``<$SDR_DATA>/models/<org>__<name>``, in its family and released layout: :mod:`sdr.synthetic.models`), or,
        where the mirror has none, from the offline MiniLM; the page says which."""
        if dry_run() and not Path(name).exists() and name.lower() not in _MINILM_NAMES:
            from sdr.datasets.download import data_root
            from sdr.synthetic.models import folder_name, stand_in_for

            root = data_root()
            folder = root / "models" / folder_name(name) if root is not None else None
            if folder is not None and folder.is_dir():
                self._model_sources[name] = (f"{name}: a tiny random {stand_in_for(name).family} stand-in in its "
                                             "released layout [paper dry run]")
                return str(folder)
            self._model_sources[name] = f"{name}: the offline all-MiniLM-L6-v2 as its stand-in [paper dry run]"
            return "minilm"
        return name

    @property
    def model_sources(self) -> list[str]:
        return list(self._model_sources.values())

    def _real_input(self, dataset: Dataset, folder: Path, adapt=None) -> DataInput:
        label = dataset.label or dataset.name
        path = Path(adapt(folder)) if adapt is not None else folder
        if dry_run():
            linked = DataInput(dataset.name, "real", folder, label).official
            what = "the released files, linked" if linked else "an official-format fixture"
            return DataInput(dataset.name, "real", path, f"{label} [paper dry run: {what}]", verified=linked)
        return DataInput(dataset.name, "real", path, label, verified=None)

    def lazy(self, what: str, build):
        """A function that builds something synthetic once, on its first call (the corpus behind the replicas, only
        when a replica is written); under the ``paper`` policy the call raises :class:`ReplicaForbidden`."""
        built = []

        def get_it():
            if not built:
                built.append(self.replica(what, build))
            return built[0]

        return get_it

    @property
    def training_sources(self) -> list[str]:
        """The lines of the inputs read with ``role="training"``: what a training run's checkpoints depend on."""
        return list(self._training_sources)

    def _remember(self, item: DataInput, role: str = "evaluation") -> DataInput:
        if role == "training" and item.source not in self._training_sources:
            self._training_sources.append(item.source)
        key = item.name
        known = self.inputs.get(key)
        if known is not None and (known.kind, known.path) != (item.kind, item.path):
            key = f"{item.name} ({role})"  # one dataset read two ways (smoke: replica to train on, real to score)
        self.inputs.setdefault(key, item)
        return item

    def replica(self, what: str, build):
        """Build something synthetic that is not a registry dataset (the synthetic training corpus); refused
        at ``paper`` like every replica. ``what`` names it in the error."""
        forbid_replica(what)
        return build()

    def plan(self, runs, device_name: str | None = None) -> list[dict]:
        """At ``paper``, print the chapter's plan before it trains (:func:`sdr.plan.print_plan`: the inputs with
        their sizes, each run's examples, steps and estimated GPU time); at other profiles print nothing."""
        if not self.policy.real_only:
            return []
        from sdr.plan import print_plan

        return print_plan(self, runs, device_name)

    # ---------------------------------------------------------------- what the page shows
    @property
    def sources(self) -> list[str]:
        """One line per input resolved so far, for the captions."""
        return [item.source for item in self.inputs.values()]

    @property
    def replicas(self) -> list[str]:
        return [name for name, item in self.inputs.items() if not item.real]

    def table(self):
        """The page's data table: every input, real or replica, and where it came from."""
        import pandas as pd

        rows = [{"input": key, "kind": item.kind, "source": item.source} for key, item in self.inputs.items()]
        rows += [{"input": name, "kind": "absent", "source": f"not found ({fetch_command(name)}); its rows stay empty"}
                 for name in self.absent]
        rows += [{"input": model.split(":", 1)[0], "kind": "model stand-in", "source": line}
                 for model, line in self._model_sources.items()]
        return pd.DataFrame(rows, columns=["input", "kind", "source"]).set_index("input")
