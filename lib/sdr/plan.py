"""What a ``paper`` run will do, printed before it trains: data sets and their sizes, training examples, optimizer
steps, and the estimated GPU time on the detected device.

The time comes from the trainer's GPU measurement (``benchmarks/results/train_gpu_nvidia-h200_graphs.txt``, written
by ``benchmarks/device_check.sh``: BERT-base size, the default path there — packed FlashAttention, bf16, torch.compile
replayed as CUDA graphs, 64K-token chunks —, effective batch 32, CSAbstruct abstracts of 193 tokens on average, every
text of a step computed: the median of three runs' triplets/s, never the best; the slowest is the first run, which
records the graphs), turned into *computed tokens per second* and scaled (1) to
the run's texts per example and tokens per text, and (2) to another GPU by the ratio of its dense tensor-core peak to
the H200's. Only the H200 figure is measured; every other device's is an extrapolation and is labelled so. Encoding
(inference) was measured on an H100 (``train_gpu_nvidia-h100-80gb-hbm3.txt``) and is scaled the same way. Estimates
count every text of every example (no deduplication within a step), so they are upper bounds for triplet objectives.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path

MEASURED_DEVICE = "NVIDIA H200"
MEASURED_RUNS = "train_gpu_nvidia-h200_graphs.txt"  # in benchmarks/results
MEASURED_RUNS_TRIPLETS_PER_S = (801.0, 1250.7, 1236.3)  # the three no-repeat runs of the default path (CUDA graphs)
MEASURED_TRIPLETS_PER_S = float(sorted(MEASURED_RUNS_TRIPLETS_PER_S)[1])
MEASURED_TEXTS_COMPUTED_PER_STEP = 96  # no repeated text: every text of a step's 32 triplets is computed
MEASURED_BATCH = 32
MEASURED_TOKENS_PER_TEXT = 193
MEASURED_TOKENS_PER_S = (MEASURED_TRIPLETS_PER_S / MEASURED_BATCH * MEASURED_TEXTS_COMPUTED_PER_STEP
                         * MEASURED_TOKENS_PER_TEXT)
"""Computed tokens per second of BERT-base training (forward + backward) on the measured H200 (≈ 552 K)."""

PEAK_TFLOPS = {  # dense tensor-core peak in the precision the trainer uses there (bf16 on sm80+, fp16 before)
    "H100": 989.0, "H200": 989.0, "A100": 312.0, "L4": 121.0, "A10G": 70.0, "A10": 125.0, "L40S": 362.0,
    "RTX 4090": 165.0, "RTX 3090": 71.0, "V100": 125.0, "T4": 65.0, "P100": 21.0,
}
"""Datasheet peaks (NVIDIA), used only to scale the measurements; the key is matched in the device name."""

BERT_BASE_MATMUL_PARAMETERS = 85e6  # the planner scales other model sizes by their matmul parameters


def peak_for(device_name: str) -> tuple[str, float] | None:
    for key in sorted(PEAK_TFLOPS, key=len, reverse=True):
        if key.lower() in device_name.lower():
            return key, PEAK_TFLOPS[key]
    return None


def tokens_per_second(device_name: str, model_parameters: float = BERT_BASE_MATMUL_PARAMETERS) -> tuple[float, str]:
    """Estimated computed training tokens per second on ``device_name`` and how the figure was obtained."""
    scale = BERT_BASE_MATMUL_PARAMETERS / model_parameters
    if MEASURED_DEVICE.lower() in device_name.lower():
        return MEASURED_TOKENS_PER_S * scale, "measured on this device (H200, benchmarks/results)"
    peak = peak_for(device_name)
    if peak is None:
        raise ValueError(f"no peak throughput known for {device_name!r}; known: {', '.join(PEAK_TFLOPS)}")
    key, tflops = peak
    return (MEASURED_TOKENS_PER_S * tflops / PEAK_TFLOPS["H200"] * scale,
            f"extrapolated from the H200 measurement by peak tensor throughput ({key} {tflops:g} vs H200 989 "
            f"TFLOP/s); not measured")


def training_estimate(examples: int, epochs: int, effective_batch: int, texts_per_example: float,
                      tokens_per_text: float, device_name: str,
                      model_parameters: float = BERT_BASE_MATMUL_PARAMETERS) -> dict:
    """Optimizer steps and GPU hours of one training run."""
    if examples <= 0 or epochs <= 0 or effective_batch <= 0:
        raise ValueError(f"examples, epochs and batch must be positive, got {examples}, {epochs}, {effective_batch}")
    steps = epochs * math.ceil(examples / effective_batch)
    rate, how = tokens_per_second(device_name, model_parameters)
    tokens = examples * epochs * texts_per_example * tokens_per_text
    return {"examples": examples, "epochs": epochs, "steps": steps, "tokens": tokens,
            "hours": tokens / rate / 3600, "device": device_name, "how": how}


def folder_size(path: str | Path) -> int:
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def human_bytes(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError


def detected_device() -> str:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return os.environ.get("SDR_PLAN_DEVICE", "CPU")


def print_plan(data, runs: Iterable[dict], device_name: str | None = None) -> list[dict]:
    """Print a ``paper`` chapter's plan: its inputs with sizes, then one line per training run (``runs``: dicts with
    ``name, examples, epochs, effective_batch, texts_per_example, tokens_per_text``), with steps and estimated
    hours on the detected GPU (or, on a CPU, on an H100 and a T4 for reference). Returns the estimates."""
    device_name = device_name or detected_device()
    print(f"Plan of {data.chapter} at profile {data.profile}:")
    for item in data.inputs.values():
        size = human_bytes(folder_size(item.path)) if Path(item.path).exists() else "?"
        print(f"  data  {item.name:<28} {item.kind:<8} {size:>9}  {item.source}")
    devices = [device_name] if device_name != "CPU" else [MEASURED_DEVICE, "Tesla T4"]
    estimates = []
    for run in runs:
        for device in devices:
            estimate = training_estimate(run["examples"], run["epochs"], run["effective_batch"],
                                         run["texts_per_example"], run["tokens_per_text"], device)
            estimates.append({"run": run["name"], **estimate})
            print(f"  train {run['name']:<28} {run['examples']:,} examples × {run['epochs']} epochs = "
                  f"{estimate['steps']:,} steps of {run['effective_batch']}: ≈ {estimate['hours']:.1f} GPU h on "
                  f"{device} ({estimate['how']})")
    if device_name == "CPU":
        print("  (no GPU detected: the estimates are for an H100 and a T4; a CPU is far slower)")
    return estimates


PAPER_TABLES = Path(__file__).resolve().parents[2] / "data" / "paper_tables"
UNITS = {"one": 1, "thousand": 1_000, "million": 1_000_000}


def _paper_count(table: str, model: str, column: str) -> int:
    import pandas as pd

    rows = pd.read_csv(PAPER_TABLES / f"{table}.csv", comment="#")
    row = rows[rows["model"] == model]
    if row.empty:
        raise ValueError(f"{table}.csv: no row {model!r}")
    value = float(row[column].iloc[0])
    return int(round(value * UNITS.get(str(row["unit"].iloc[0]), 1) if "unit" in row else value))


def paper_runs() -> dict[str, list[dict]]:
    """The paper-scale training run(s) of every chapter: sizes from ``data/paper_tables`` (each with its table
    reference there); epochs and effective batches are the papers' settings (the ``paper`` profile's values);
    texts per example and tokens per text are the book's assumptions (stated in the README)."""
    specter = _paper_count("training_sizes", "SPECTER training triplets", "examples")
    cosaemb = specter + sum(_paper_count("cosaemb_counts", m, "triplets")
                            for m in ("Local Context (Eq. 2)", "Global Context (Eq. 3)"))
    flew = _paper_count("training_sizes", "facet triplets", "examples")
    return {
        # SciNCL §4.2: 684 K triplets, same count as SPECTER; 2 epochs; 8 × 4 = 32
        "specter": [dict(name="SPECTER", examples=specter, epochs=2, effective_batch=32, texts_per_example=3,
                         tokens_per_text=250)],
        "scincl": [dict(name="SciNCL", examples=specter, epochs=2, effective_batch=32, texts_per_example=3,
                        tokens_per_text=250)],
        # thesis §5.3: query + positive + 10 hard + 3 easy negatives; 2 epochs; batch 8
        "sciaspect": [dict(name="SciAspect", examples=_paper_count("training_sizes", "training anchor documents",
                                                                    "examples"),
                           epochs=2, effective_batch=8, texts_per_example=15, tokens_per_text=250)],
        # FLeW §4.1: three facet encoders, batch 10, 2 epochs; facet texts are a third of an abstract
        "flew": [dict(name=f"FLeW {facet} encoder", examples=flew, epochs=2, effective_batch=10, texts_per_example=3,
                      tokens_per_text=120) for facet in ("background", "method", "result")],
        # CoSaEmb Table 3: local + global + inter-document triplets; 2 epochs, batch 32; section texts are long
        "cosaemb": [dict(name="CoSaEmb", examples=cosaemb, epochs=2, effective_batch=32, texts_per_example=3,
                         tokens_per_text=400)],
        # SciToricsBERT §4.1: CFS3 train split, batch 64, 5 epochs, one sentence per example (one loss, one seed)
        "scitoricsbert": [dict(name="SciToricsBERT, one loss and seed",
                               examples=_paper_count("cfs3_counts", "CFS3 split", "train"), epochs=5,
                               effective_batch=64, texts_per_example=1, tokens_per_text=40)],
    }


def single_run_estimates(chapter: str, devices=(MEASURED_DEVICE, "Tesla T4")) -> list[dict]:
    """The one paper-scale training run (or runs) of :func:`paper_runs` for a chapter that has no cost plan yet:
    ``{"run", "examples", "epochs", "steps", "<device>": hours}`` per run."""
    found = []
    for run in paper_runs().get(chapter, []):
        cells = [training_estimate(run["examples"], run["epochs"], run["effective_batch"], run["texts_per_example"],
                                   run["tokens_per_text"], d) for d in devices]
        found.append({"run": run["name"], "examples": run["examples"], "epochs": run["epochs"],
                      "steps": cells[0]["steps"], **{d: c["hours"] for d, c in zip(devices, cells)}})
    return found


# ================================================================================ the whole cost of a chapter
# A chapter's cost plan counts everything it does at a profile, from the same parameters the notebook reads and
# the registry of its parts (``sdr.methods.<name>.PARTS``): every training run (seeds, ablations, sweeps, each
# encoder), the benchmarks' encodings, graph embeddings, kNN searches, SVM grids and the data fetches. GPU hours
# come from the measured throughput (training and encoding on the measured GPU), scaled to other GPUs by their peak
# and labelled as scaled; other work states its own rate (``Work.how``).

MEASURED_ENCODE_DEVICE = "NVIDIA H100 80GB HBM3"
MEASURED_ENCODE_PAPERS_PER_S = 5961.6  # Encoder.encode_texts, packed, batch 512, bf16 (train_gpu_nvidia-h100…txt)
MEASURED_ENCODE_TOKENS_PER_S = MEASURED_ENCODE_PAPERS_PER_S * 198  # that run's texts: 198 tokens on average
"""Inference tokens per second of BERT-base on the measured H100 (one run of the benchmark, ≈ 1.18 M)."""

KINDS = ("train", "encode", "graph", "knn", "svm", "fetch", "text", "prepare", "cpu")
"""``text``: CPU text work (a sentence splitter); ``prepare``: CPU work on the data before training (e.g. splitting
full text into sentences), its ``hours`` per run; ``cpu``: other work on a CPU with its rate in ``how`` (CFS3's
tokenising and n-gram matching)."""


from dataclasses import dataclass, field  # noqa: E402


@dataclass(frozen=True)
class Part:
    """A part of a chapter that a user can run alone (``parts`` parameter), and what of the paper it reproduces.

    Args:
        name: ``released``, ``main``, ``seeds``, ``ablations``, ``sweeps`` … (the chapter's registry key).
        reproduces: the paper's table or figure ("SciNCL Table 1, SciNCL row").
        headline: part of the default ``paper`` run (the paper's headline table).
        t4: what a Colab T4 user can finish of it, said in words (e.g. "one seed in a 12-hour session").
    """

    name: str
    reproduces: str
    headline: bool = False
    t4: str = ""


@dataclass(frozen=True)
class Work:
    """One line of a chapter's cost plan: a unit of work, how many times it runs, and what it costs.

    ``kind`` is one of :data:`KINDS`. ``train`` lines give examples, epochs, the effective batch, texts per example
    and tokens per text (GPU hours from the measured training throughput); ``encode`` lines the texts embedded per
    run and tokens per text; ``graph``/``knn``/``svm``/``text``/``prepare`` lines their ``hours`` per run on
    ``hours_on`` (a CPU or a GPU, from the rate ``how`` states); ``fetch`` lines the bytes downloaded and requests
    made (at ``requests_per_s``), and the transfer time: at ``bytes_per_s`` where given, else in ``hours`` at the
    bandwidth ``how`` states (0: not counted)."""

    part: str
    what: str
    kind: str
    runs: int = 1
    examples: int = 0
    epochs: int = 0
    effective_batch: int = 0
    texts_per_example: float = 0.0
    tokens_per_text: float = 0.0
    texts: int = 0
    hours: float = 0.0
    hours_on: str = "CPU"
    download_bytes: int = 0
    requests: int = 0
    requests_per_s: float = 1.0
    how: str = ""
    bytes_per_s: float = 0.0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Work {self.what!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.runs < 0:
            raise ValueError(f"Work {self.what!r}: runs must be ≥ 0, got {self.runs}")

    @property
    def steps(self) -> int:
        if self.kind != "train" or not self.examples:
            return 0
        return self.epochs * math.ceil(self.examples / self.effective_batch)

    def gpu_hours(self, device_name: str) -> float:
        """GPU hours of all its runs on ``device_name`` (training and encoding; 0 for other kinds)."""
        if self.kind == "train" and self.examples:
            rate, _ = tokens_per_second(device_name)
            return self.runs * self.examples * self.epochs * self.texts_per_example * self.tokens_per_text / rate / 3600
        if self.kind == "encode" and self.texts:
            peak = peak_for(device_name)
            if peak is None:
                raise ValueError(f"no peak throughput known for {device_name!r}; known: {', '.join(PEAK_TFLOPS)}")
            rate = MEASURED_ENCODE_TOKENS_PER_S * peak[1] / PEAK_TFLOPS["H100"]
            return self.runs * self.texts * self.tokens_per_text / rate / 3600
        if self.hours_on == "GPU":
            return self.runs * self.hours * _peak_ratio(device_name)
        return 0.0

    def other_hours(self) -> float:
        """CPU hours (graph, kNN, SVM and preparation work on a CPU) and network hours (fetches: requests at their rate
        and the transfer time) of all its runs."""
        if self.kind == "fetch":
            seconds = self.requests / self.requests_per_s if self.requests else 0.0
            if self.bytes_per_s and self.download_bytes:
                seconds += self.download_bytes / self.bytes_per_s
            return self.runs * (seconds / 3600 + self.hours)
        if self.kind in ("graph", "knn", "svm", "text", "prepare", "cpu") and self.hours_on == "CPU":
            return self.runs * self.hours
        return 0.0


def _peak_ratio(device_name: str) -> float:
    """How much longer GPU work measured on the reference GPU takes on ``device_name`` (by dense peak)."""
    if MEASURED_DEVICE.lower() in device_name.lower():
        return 1.0
    peak = peak_for(device_name)
    if peak is None:
        raise ValueError(f"no peak throughput known for {device_name!r}; known: {', '.join(PEAK_TFLOPS)}")
    return PEAK_TFLOPS["H200"] / peak[1]


@dataclass
class CostPlan:
    """Everything a chapter does at a profile, part by part (:class:`Work` lines), and which parts this run runs."""

    chapter: str
    profile: str
    parts: dict  # name -> Part
    work: list = field(default_factory=list)
    selected: tuple = ()

    def __post_init__(self):
        unknown = sorted({w.part for w in self.work} - set(self.parts))
        if unknown:
            raise ValueError(f"{self.chapter}: work in parts {unknown} that the chapter's PARTS do not define "
                             f"({sorted(self.parts)})")
        unknown = sorted(set(self.selected) - set(self.parts))
        if unknown:
            raise ValueError(f"{self.chapter}: parts {unknown} are not parts of the chapter; it has "
                             f"{sorted(self.parts)}")

    def table(self, devices: tuple[str, ...] = (MEASURED_DEVICE, "Tesla T4")):
        """One row per line of work: part, what, runs, steps, GPU hours on each device (the measured one first;
        others scaled by peak, marked "scaled"), CPU/network hours, download size."""
        import pandas as pd

        columns = ["part", "runs it", "what", "kind", "runs", "steps a run", *(_hours_label(d) for d in devices),
                   "CPU / network h", "download", "how"]
        rows = []
        for w in self.work:
            row = {"part": w.part, "runs it": "yes" if w.part in self.selected else "no", "what": w.what,
                   "kind": w.kind, "runs": w.runs, "steps a run": w.steps or None}
            for device in devices:
                row[_hours_label(device)] = w.gpu_hours(device)
            row["CPU / network h"] = w.other_hours()
            row["download"] = human_bytes(w.download_bytes * w.runs) if w.download_bytes else ""
            row["how"] = w.how
            rows.append(row)
        return pd.DataFrame(rows, columns=columns)

    def totals(self, devices: tuple[str, ...] = (MEASURED_DEVICE, "Tesla T4")):
        """Hours per part (every part of the registry, in its order; 0 where it has no work), the selected parts'
        total and the whole chapter's."""
        table = self.table(devices)
        columns = [_hours_label(d) for d in devices] + ["CPU / network h"]
        table[columns] = table[columns].astype(float)
        per_part = table.groupby("part", sort=False)[columns].sum().reindex(list(self.parts), fill_value=0.0)
        per_part.loc["selected parts"] = table.loc[table["runs it"] == "yes", columns].sum()
        per_part.loc["whole chapter"] = table[columns].sum()
        return per_part

    def download_bytes(self, parts: Iterable[str] | None = None) -> int:
        """Bytes the lines of ``parts`` (default: every part) download."""
        parts = set(self.parts if parts is None else parts)
        return sum(w.download_bytes * w.runs for w in self.work if w.part in parts)

    def t4_words(self, name: str | None = None) -> str:
        """What a Colab T4 user can finish of part ``name`` (None: the whole chapter), in words: the part's own
        ``Part.t4`` where the registry gives one, else :func:`colab_t4_words` of the plan's T4 hours (scaled
        from the measured GPU) plus its CPU and network hours."""
        if name is not None and self.parts[name].t4:
            return self.parts[name].t4
        totals = self.totals()
        row = totals.loc[name if name is not None else "whole chapter"]
        return colab_t4_words(row[_hours_label("Tesla T4")], row["CPU / network h"])

    def total_hours(self, device: str = MEASURED_DEVICE, selected_only: bool = False) -> float:
        return sum(w.gpu_hours(device) for w in self.work if not selected_only or w.part in self.selected)

    def show(self, devices: tuple[str, ...] = (MEASURED_DEVICE, "Tesla T4")) -> None:
        """Print the plan: the parts with what each reproduces, every line of work, the totals."""
        print(f"Cost plan of {self.chapter} at profile {self.profile} (parts run: {', '.join(self.selected) or 'none'}):")
        for part in self.parts.values():
            mark = "runs" if part.name in self.selected else "not run"
            print(f"  part {part.name:<10} [{mark}] reproduces {part.reproduces}"
                  + (" (headline)" if part.headline else "") + f"; on a Colab T4: {self.t4_words(part.name)}")
        table = self.table(devices)
        for _, row in table.iterrows():
            hours = ", ".join(f"{format_hours(row[_hours_label(d)])} {_hours_label(d)}" for d in devices)
            print(f"  {row['part']:<10} {row['what']:<48} × {row['runs']:<3} {hours}, "
                  f"{format_hours(row['CPU / network h'])} CPU/network h {row['download']}".rstrip())
        totals = self.totals(devices)
        for name in ("selected parts", "whole chapter"):
            hours = ", ".join(f"{format_hours(totals.loc[name, _hours_label(d)])} {_hours_label(d)}" for d in devices)
            print(f"  total, {name}: {hours}, {format_hours(totals.loc[name, 'CPU / network h'])} CPU/network h")
        print(f"  GPU hours: training and encoding throughput measured on {MEASURED_DEVICE}; other GPUs scaled by "
              "their dense peak (not measured).")


def _hours_label(device: str) -> str:
    short = peak_for(device)[0] if peak_for(device) else device
    return f"GPU h {short}" + ("" if MEASURED_DEVICE.lower() in device.lower() else " (scaled)")


def chapter_cost_plan(chapter: str, profile: str = "paper", overrides: dict | None = None) -> CostPlan:
    """A chapter's cost plan at a profile, from the parameters the notebook would get there (profiles.yml and the
    notebook's defaults, ``overrides`` as ``-p``): ``sdr.methods.<chapter>.cost_plan(parameters)``."""
    import importlib
    from types import SimpleNamespace

    method = importlib.import_module(f"sdr.methods.{chapter}")
    return method.cost_plan(SimpleNamespace(**chapter_values(chapter, profile, overrides)))


def chapter_values(chapter: str, profile: str = "paper", overrides: dict | None = None) -> dict:
    """Every parameter a chapter's notebook gets at a profile, as values: the notebook's defaults, then profiles.yml's
    and ``overrides`` (``-p``) on top."""
    from sdr.book import paths
    from sdr.book.profiles import chapter_parameters
    from sdr.parameters import parameter_specs

    notebook = paths.NOTEBOOKS / f"{chapter}.ipynb"
    # the defaults as values (papermill's inspection gives their source text: '"mean"', not 'mean')
    defaults = {name: spec.default for name, spec in parameter_specs(notebook).items()}
    return {**defaults, **chapter_parameters(chapter, profile, overrides, notebook=notebook)}


def plan_chapters() -> list[str]:
    """The chapters that define a cost plan (``cost_plan`` in their methods module)."""
    import importlib

    from sdr.book.profiles import chapter_names

    found = []
    for chapter in chapter_names():
        try:
            method = importlib.import_module(f"sdr.methods.{chapter}")
        except ModuleNotFoundError:
            continue
        if hasattr(method, "cost_plan"):
            found.append(chapter)
    return found


def resolve_parts(value, parts: dict) -> tuple[str, ...]:
    """The ``parts`` parameter → the names of the parts to run: ``"all"``, ``"headline"`` (the parts marked
    ``headline``: the paper's headline table) or part names, as a list or one comma-separated string
    (``"released,main"``: a notebook's ``parts`` parameter is a string, and ``-p`` values keep its type); each must
    be a part of the chapter."""
    if value == "all":
        return tuple(parts)
    if value == "headline":
        return tuple(name for name, part in parts.items() if part.headline)
    names = [n.strip() for n in value.split(",") if n.strip()] if isinstance(value, str) else list(value)
    unknown = [name for name in names if name not in parts]
    if unknown:
        raise ValueError(f"parts {unknown} are not parts of this chapter; choose from {list(parts)}, 'all' or "
                         "'headline'")
    return tuple(name for name in parts if name in names)


# ================================================================================ the book-wide plan (README, Summary)
COLAB_SESSION_HOURS = 12
"""The longest a Colab session runs (Colab's FAQ: "at most 12 hours" for the free tier, often less); a longer part
needs several sessions, each resuming from the checkpoints and cached embeddings kept on Google Drive."""

README_BEGIN = "<!-- generated by `python -m sdr.plan --write-readme`: begin -->"
README_END = "<!-- generated by `python -m sdr.plan --write-readme`: end -->"


def format_hours(hours: float) -> str:
    """Hours as the plan prints them: two significant figures below 10, whole hours above."""
    if hours == 0:
        return "0"
    if hours < 0.01:
        return "< 0.01"
    if hours < 1:
        return f"{hours:.2f}"
    if hours < 10:
        return f"{hours:.1f}"
    return f"{hours:,.0f}"


def _about(hours: float) -> str:
    text = format_hours(hours)
    return text if text.startswith("<") or text == "0" else f"≈ {text}"


def colab_t4_words(t4_hours: float, other_hours: float = 0.0) -> str:
    """What a Colab T4 user can finish of work taking ``t4_hours`` on the T4 (scaled from the measured GPU) and
    ``other_hours`` on its CPU and network, in words: the sessions of :data:`COLAB_SESSION_HOURS` it needs."""
    total = float(t4_hours) + float(other_hours)
    if total < 1 / 60:
        return "under a minute"
    if total < 1:
        return f"≈ {total * 60:.0f} min: one session"
    sessions = math.ceil(total / COLAB_SESSION_HOURS)
    if sessions == 1:
        return f"≈ {format_hours(total)} h: one session"
    if sessions <= 10:
        return (f"≈ {format_hours(total)} h: {sessions} sessions of {COLAB_SESSION_HOURS} h, each resuming from "
                "Drive")
    return (f"≈ {format_hours(total)} h: {sessions} sessions of {COLAB_SESSION_HOURS} h, more than Colab is "
            "made for (a workstation GPU)")


def book_plan_rows(profile: str = "paper", chapters: Iterable[str] | None = None) -> list[dict]:
    """Every chapter's cost at ``profile``, part by part, then the headline parts' and the whole chapter's totals:
    GPU hours on the measured GPU and on a T4 (scaled), CPU/network hours, download, and what a Colab T4 user can
    finish. A chapter whose methods module has no ``cost_plan`` yet is one row saying so, with the single training
    run the README listed before (:func:`paper_runs`) where it has one."""
    from sdr.book.profiles import chapter_names

    h100, t4 = _hours_label(MEASURED_DEVICE), _hours_label("Tesla T4")
    planned = set(plan_chapters())
    rows = []
    for chapter in chapters or chapter_names():
        if chapter not in planned:
            for run in single_run_estimates(chapter) or [None]:
                what = ("no cost plan yet" if run is None else
                        f"no cost plan yet; one run estimated: {run['run']}, {run['examples']:,} × {run['epochs']}, "
                        f"{run['steps']:,} steps")
                rows.append({"chapter": chapter, "part": "—", "reproduces": what, "headline": "",
                             h100: run[MEASURED_DEVICE] if run else None, t4: run["Tesla T4"] if run else None,
                             "CPU / network h": None, "download": "", "on a Colab T4": ""})
            continue
        cost = chapter_cost_plan(chapter, profile)
        totals = cost.totals()
        for name, part in cost.parts.items():
            rows.append({"chapter": chapter, "part": name, "reproduces": part.reproduces,
                         "headline": "yes" if part.headline else "", h100: totals.loc[name, h100],
                         t4: totals.loc[name, t4], "CPU / network h": totals.loc[name, "CPU / network h"],
                         "download": human_bytes(cost.download_bytes([name])) if cost.download_bytes([name]) else "",
                         "on a Colab T4": cost.t4_words(name)})
        headline = [name for name, part in cost.parts.items() if part.headline]
        sums = {column: sum(totals.loc[name, column] for name in headline)
                for column in (h100, t4, "CPU / network h")}
        rows.append({"chapter": chapter, "part": "headline parts", "reproduces": ", ".join(headline),
                     "headline": "", **sums, "download": human_bytes(cost.download_bytes(headline))
                     if cost.download_bytes(headline) else "",
                     "on a Colab T4": colab_t4_words(sums[t4], sums["CPU / network h"])})
        rows.append({"chapter": chapter, "part": "whole chapter", "reproduces": "", "headline": "",
                     h100: totals.loc["whole chapter", h100], t4: totals.loc["whole chapter", t4],
                     "CPU / network h": totals.loc["whole chapter", "CPU / network h"],
                     "download": human_bytes(cost.download_bytes()) if cost.download_bytes() else "",
                     "on a Colab T4": cost.t4_words()})
    return rows


def book_plan_table(profile: str = "paper"):
    """:func:`book_plan_rows` as a DataFrame (the Summary page shows it)."""
    import pandas as pd

    return pd.DataFrame(book_plan_rows(profile))


def readme_table(devices=(MEASURED_DEVICE, "Tesla T4")) -> str:
    """Markdown of :func:`book_plan_rows` at ``paper``: per chapter, each part's cost and what a Colab T4 user can
    finish of it, then the headline parts' and the whole chapter's totals (the README's table; a test keeps them
    equal). ``devices`` is kept for callers of the earlier one-run table; the columns are the measured GPU's and
    the T4's."""
    rows = book_plan_rows("paper")
    h100, t4 = _hours_label(MEASURED_DEVICE), _hours_label("Tesla T4")
    header = ["chapter", "part", "reproduces", "headline", f"≈ {h100}", f"≈ {t4}", "CPU / network h", "download",
              "on a Colab T4"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]

    def cell(value) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        return format_hours(value) if isinstance(value, float) else str(value).replace("|", "/")

    for row in rows:
        bold = row["part"] in ("headline parts", "whole chapter")
        values = [row["chapter"], row["part"], row["reproduces"], row["headline"], row[h100], row[t4],
                  row["CPU / network h"], row["download"], row["on a Colab T4"]]
        text = [cell(v) for v in values]
        if bold:
            text[1] = f"**{text[1]}**"
        lines.append("| " + " | ".join(text) + " |")
    return "\n".join(lines)


def released_markdown() -> str:
    """One line per chapter: how long its ``released`` part (the papers' released models scored by inference,
    issue 32) takes at ``paper`` and on what, from its cost plan; chapters without one say so."""
    from sdr.book.profiles import chapter_names

    h100, t4 = _hours_label(MEASURED_DEVICE), _hours_label("Tesla T4")
    planned = set(plan_chapters())
    lines = []
    for chapter in chapter_names():
        if chapter not in planned:
            lines.append(f"- {chapter}: no cost plan yet")
            continue
        cost = chapter_cost_plan(chapter, "paper")
        if "released" not in cost.parts:
            lines.append(f"- {chapter}: no released part (it scores no released model)")
            continue
        row = cost.totals().loc["released"]
        lines.append(f"- {chapter}: {_about(row[h100])} GPU h on an {MEASURED_DEVICE} (encoding throughput "
                     f"measured there), {_about(row[t4])} GPU h on a Tesla T4 (scaled, not measured), and "
                     f"{_about(row['CPU / network h'])} h of CPU and network work (downloads at the stated "
                     f"bandwidth, SVM grids); on a Colab T4: {cost.t4_words('released')}")
    return "\n".join(lines)


def readme_block() -> str:
    """What the README holds between :data:`README_BEGIN` and :data:`README_END`."""
    return "\n".join([README_BEGIN, "", readme_table(), "", "The `released` part of each chapter at `paper`:", "",
                       released_markdown(), "", README_END])


def write_readme(path: str | Path | None = None) -> bool:
    """Replace the README's generated block with :func:`readme_block`; returns whether it changed."""
    path = Path(path) if path else PAPER_TABLES.parents[1] / "README.md"
    text = path.read_text(encoding="utf-8")
    if README_BEGIN not in text or README_END not in text:
        raise ValueError(f"{path}: the markers {README_BEGIN!r} … {README_END!r} are missing")
    head, rest = text.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    new = head + readme_block() + tail
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m sdr.plan", description="every chapter's cost at paper, part by "
                                     "part (the README's table)")
    parser.add_argument("--write-readme", action="store_true", help="replace the README's generated block")
    args = parser.parse_args(argv)
    if args.write_readme:
        print("README.md " + ("updated" if write_readme() else "already current"))
    else:
        print(readme_block())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
