"""Training and encoding throughput of the book's trainer on a GPU (and, tiny, on CPU so CI runs the code).

On CUDA: a BERT-base-sized encoder (12 layers, hidden 768, random initialization: speed does not depend on
the weights; the bert-base-uncased vocabulary of all-MiniLM-L6-v2's tokenizer), max_length 512, in the
precision and attention the device plan chooses (:func:`sdr.encoders.device_plan`: bf16 + packed
FlashAttention on sm80+, fp16 + padded SDPA on T4/V100). On CPU: all-MiniLM-L6-v2 cut to 2 layers, float32,
max_length 128, 3 steps, one thread. Texts of real length: CSAbstruct abstracts
(``$SDR_DATA/csabstruct/train.jsonl``, title-less) when present, else the synthetic corpus' texts.

Two triplet settings, each at effective batch 32 (32 triplets, 96 texts a step):

* ``synthetic graph``: SPECTER triplets (:func:`sdr.samplers.specter_triplets`) of a 400-paper synthetic
  citation graph; its few queries repeat within a step, and the trainer encodes each distinct text of a step
  once, so fewer texts run than the step holds;
* ``no repeats``: every text of a step is a different paper (as in SciRepEval-like data, where a step's
  triplets rarely share a paper), so all 96 run.

The share of repeated texts per step is reported for both.

Reported per trainer: triplets/s as the **median of ``--runs`` runs with min–max**, the runs alternating
between trainers and settings so load drifts hit all alike; each run's time is the wall time of a training
call of ``steps + 1`` optimizer steps minus that of a 1-step call (after a warm-up call), so setup and the
first step are excluded without a per-step synchronization. **MFU**: FLOPs per second against the device's
dense peak in the plan's precision (:data:`PEAK_TFLOPS`), with FLOPs = 6 × the matrix-product parameters
(the encoder layers' linear weights: no embeddings, no pooler) × the tokens the trainer computes (each text
of a step once for sdr.train, every text for sentence-transformers; pad tokens not counted) + attention's
12 × layers × hidden × Σ length² (:func:`training_flops`). The padding share is of the tokens run.
sentence-transformers runs its own ``SentenceTransformerTrainer`` + ``TripletLoss`` (Euclidean, margin 1)
as a knowledgeable user would set it up: mixed precision (bf16, fp16 on T4/V100), the fastest attention
its transformers offers here (``flash_attention_2`` when the flash-attn package is installed, else
``sdpa``), and with ``--compile`` a second row with ``torch_compile=True``; the output states what it used.
It needs ``datasets`` and ``accelerate`` (a note says when they are missing). Encoding papers/s of
:meth:`sdr.encoders.Encoder.encode_texts` against sentence-transformers' ``encode`` follows (one run each).

Usage: ``python benchmarks/bench_train_gpu.py [--steps 20] [--runs 3] [--compile] [--quick]``; raw output goes
to ``benchmarks/results/train_gpu_<device>.txt`` (or ``--out``). ``--variants`` (``padded16k``, ``packed16k``,
``packed64k``, ``compiled16k``, ``compiled64k``, ``dynamic64k``, ``graphs64k``: see :data:`VARIANT_ENCODER`), ``--settings``, ``--no-st``, ``--no-encode`` and ``--label``
choose what runs; the last line (``BENCH_JSON``) holds the measurements for ``device_check_summary.py``, which
pools the single-run processes of ``benchmarks/device_check.sh`` (the library on ``PYTHONPATH`` is timed: the
device check alternates a baseline checkout and this one). A compiled variant's warm-up is the timed call
itself, so every shape it meets is compiled before timing. Measurements, not asserted by any test (the MFU formula is:
``tests/test_bench_mfu.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_synthetic import machine_line, peak_rss_mib  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
#: sdr.train variants: key → (packed, chunk tokens, torch.compile of the packed forward)
VARIANTS = {"padded16k": (False, 16384, False), "packed16k": (True, 16384, False), "packed64k": (True, 65536, False),
            "compiled16k": (True, 16384, True), "compiled64k": (True, 65536, True),
            "dynamic64k": (True, 65536, True), "graphs64k": (True, 65536, True)}
#: Encoder attributes a variant sets beyond those: compiled without CUDA graphs, no bucketed token counts (dynamic
#: shapes from the first call, no pad tokens), and CUDA graphs (torch.compile's "reduce-overhead", one recording per
#: bucketed shape; the default of the packed FlashAttention path). A baseline library without these attributes
#: ignores them.
VARIANT_ENCODER = {"compiled16k": {"compile_mode": None}, "compiled64k": {"compile_mode": None},
                   "dynamic64k": {"compile_buckets": 0, "compile_mode": None},
                   "graphs64k": {"compile_mode": "reduce-overhead"}}
#: dense (no sparsity) tensor-core peak TFLOP/s by device-name fragment, more specific names first, and the
#: precision it is for (vendor data sheets): bf16 where the GPU has it, fp16 on T4 and V100
PEAK_TFLOPS = {
    "H200": (989.0, "bf16"), "H100 PCIe": (756.0, "bf16"), "H100 NVL": (835.0, "bf16"), "H100": (989.0, "bf16"),
    "A100": (312.0, "bf16"), "L40S": (362.0, "bf16"), "L4": (121.0, "bf16"), "A10": (125.0, "bf16"),
    "RTX 4090": (165.0, "bf16"), "RTX 3090": (71.0, "bf16"), "V100": (125.0, "fp16"), "T4": (65.0, "fp16"),
}


# ---------------------------------------------------------------------------------------------- FLOPs and MFU
def matmul_parameters(model) -> int:
    """Parameters that take part in a matrix product per token: the weights of the model's linear layers,
    without the pooler (the book pools [CLS] or the mean itself) — no embeddings (a lookup), no biases or
    LayerNorms (elementwise)."""
    from torch import nn

    return sum(module.weight.numel() for name, module in model.named_modules()
               if isinstance(module, nn.Linear) and not name.split(".")[0] == "pooler")


def training_flops(matmul_params: int, lengths: Sequence[int], layers: int, hidden: int) -> float:
    """FLOPs of one forward + backward over texts of these token counts: 6 × matmul parameters × tokens
    (2 forward, 4 backward per parameter and token) + attention's scores and weighted sum, 2 × 2 × L² × hidden
    per layer forward, three times that with the backward: 12 × layers × hidden × Σ L²."""
    return 6.0 * matmul_params * sum(lengths) + 12.0 * layers * hidden * sum(length * length for length in lengths)


def mfu(flops: float, seconds: float, peak_tflops: float) -> float:
    """Model FLOPs utilization: achieved FLOP/s over the device's peak."""
    return flops / seconds / (peak_tflops * 1e12)


def device_peak(name: str) -> tuple[float, str] | None:
    """(peak TFLOP/s, its precision) of a device name, None when the table has no entry."""
    return next((value for key, value in PEAK_TFLOPS.items() if key in name), None)


# ---------------------------------------------------------------------------------------------- inputs
def real_abstracts() -> list[str]:
    root = os.environ.get("SDR_DATA")
    path = Path(root) / "csabstruct" / "train.jsonl" if root else None
    if path is None or not path.exists():
        return []
    from sdr.jsonio import read_jsonl

    return [" ".join(record["sentences"]) for _, record in read_jsonl(path, "CSAbstruct records")]


def no_repeat_triplets(n_triplets: int, pool: Sequence[str], batch_size: int) -> tuple[list, dict[str, str]]:
    """Triplets whose papers never repeat within an optimizer step: the 3 × batch texts of each step (in the
    trainer's shuffle, :func:`step_texts`) are consecutive texts of the pool, distinct when the pool has at
    least that many different texts."""
    from sdr.samplers import Triplet
    from sdr.train import _batches

    triplets = [Triplet(f"p{3 * i}", f"p{3 * i + 1}", f"p{3 * i + 2}", "easy") for i in range(n_triplets)]
    texts, position = {}, 0
    for batch in _batches(n_triplets, batch_size, seed=0, epoch=0):
        for i in batch:
            for paper in (triplets[i].query, triplets[i].positive, triplets[i].negative):
                texts[paper] = pool[position % len(pool)]
                position += 1
    return triplets, texts


def step_texts(triplets: Sequence, texts: dict[str, str], batch_size: int) -> list[list[str]]:
    """Each optimizer step's texts, in the order the trainer runs them (its (seed 0, epoch 0) shuffle)."""
    from sdr.train import _batches

    return [[texts[p] for i in batch for p in (triplets[i].query, triplets[i].positive, triplets[i].negative)]
            for batch in _batches(len(triplets), batch_size, seed=0, epoch=0)]


# ---------------------------------------------------------------------------------------------- runs
def median_range(values: Sequence[float]) -> str:
    return f"{statistics.median(values):>8.1f} ({min(values):.1f}–{max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps timed per run")
    parser.add_argument("--runs", type=int, default=3, help="runs per trainer and setting (median, min–max)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--encode-papers", type=int, default=4096)
    parser.add_argument("--quick", action="store_true", help="3 steps, 1 run, 256 papers encoded; nothing written")
    parser.add_argument("--compile", action="store_true",
                        help="also time the packed forward and sentence-transformers under torch.compile")
    parser.add_argument("--variants", default="",
                        help="comma-separated sdr.train variants to time (default: padded16k,packed16k, and on CUDA "
                             f"packed64k, plus compiled16k with --compile); any of {', '.join(VARIANTS)}")
    parser.add_argument("--settings", default="synthetic graph,no repeats", help="comma-separated triplet settings")
    parser.add_argument("--no-st", action="store_true", help="skip sentence-transformers' trainer")
    parser.add_argument("--no-encode", action="store_true", help="skip the encoding (inference) comparison")
    parser.add_argument("--label", default="", help="a name for this run's library (the device check: baseline, new)")
    parser.add_argument("--out", type=Path, default=None, help="write the raw output here (instead of results/)")
    parser.add_argument("--long-texts", action="store_true",
                        help="every text four abstracts long, so each runs at max_length (512 on CUDA): peak memory "
                             "at the longest inputs; output to train_gpu_<device>_512.txt")
    args = parser.parse_args()
    import numpy as np
    import torch

    from sdr.encoders import Encoder, device_plan
    from sdr.samplers import specter_triplets
    from sdr.synthetic import make_corpus
    from sdr.train import TrainConfig, TripletObjective, train

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.set_num_threads(1)
        args.steps = min(args.steps, 3)
        args.encode_papers = min(args.encode_papers, 256)
    if args.quick:
        args.steps, args.runs, args.encode_papers = min(args.steps, 3), 1, min(args.encode_papers, 256)
    import sdr
    import sdr.encoders

    # the library under test (the device check times a baseline checkout and this one, alternately)
    library = f"sdr from {Path(sdr.__file__).resolve().parent}" + (f" ({args.label})" if args.label else "")

    base = Encoder.load("minilm", num_layers=2, max_length=128, device="cpu")
    folder = Path(tempfile.mkdtemp())
    if device.type == "cuda":  # BERT-base sized, random weights, same vocabulary
        from transformers import BertConfig, BertModel

        encoder = Encoder(BertModel(BertConfig(vocab_size=len(base.tokenizer))), base.tokenizer, pooling="cls",
                          max_length=512, device=device)
        label = "BERT-base-sized (random init), max_length 512"
    else:
        encoder = base
        label = "all-MiniLM-L6-v2 cut to 2 layers, max_length 128, 1 thread"
    encoder.save(folder / "model")
    plan = device_plan(device, encoder.model)
    config_model = encoder.model.config
    layers, hidden = config_model.num_hidden_layers, config_model.hidden_size
    n_matmul = matmul_parameters(encoder.model)
    n_parameters = sum(p.numel() for p in encoder.model.parameters())
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        peak = device_peak(name)
        memory = torch.cuda.get_device_properties(device).total_memory / 2**30
        peak_text = f"dense {peak[1]} peak {peak[0]:g} TFLOP/s" if peak else "no peak in the table: no MFU"
        device_text = f"device: {name}, {memory:.0f} GiB, CUDA {torch.version.cuda}, {peak_text}"
        if peak and peak[1] != plan.precision:
            device_text += f" (the plan trains in {plan.precision}: MFU against the {peak[1]} peak)"
    else:
        peak, device_text = None, "device: CPU (no MFU: no tensor-core peak for a CPU)"

    # ---------------------------------------------------------------- the two triplet settings
    n_triplets = (args.steps + 1) * args.batch_size
    abstracts = real_abstracts()
    corpus = make_corpus(n_papers=max(400, n_triplets // 2), seed=0)
    ids = sorted(corpus.papers)
    if abstracts and args.long_texts:
        pool = [" ".join(abstracts[(i + j) % len(abstracts)] for j in range(4)) for i in range(len(abstracts))]
        source = f"four CSAbstruct abstracts a text ({len(abstracts)}, $SDR_DATA), truncated at max_length"
    elif abstracts:
        pool, source = abstracts, f"CSAbstruct abstracts ({len(abstracts)}, $SDR_DATA)"
    else:
        pool = [base.paper_text(corpus.papers[pid]) for pid in ids]
        source = "synthetic title [SEP] abstract (no $SDR_DATA)"
    graph_triplets, _ = specter_triplets(corpus.graph, seed=0, progress=False, verbose=False)
    settings = {
        "synthetic graph": (graph_triplets[:n_triplets], {pid: pool[i % len(pool)] for i, pid in enumerate(ids)}),
        "no repeats": no_repeat_triplets(n_triplets, pool, args.batch_size),
    }
    wanted = [name.strip() for name in args.settings.split(",") if name.strip()]
    unknown = sorted(set(wanted) - set(settings))
    if unknown:
        raise SystemExit(f"--settings: unknown {unknown}; expected some of {sorted(settings)}")
    settings = {name: settings[name] for name in settings if name in wanted}
    lengths_of = {}
    statistics_of = {}
    for setting, (triplets, texts) in settings.items():
        unique = list(dict.fromkeys(texts.values()))
        lengths_of.update(zip(unique, (len(row) for row in encoder.token_ids(unique, cache=False))))
        # a run times the (steps + 1)-step call minus the 1-step call: count the FLOPs the same way
        steps = step_texts(triplets, texts, args.batch_size)
        first = step_texts(triplets[:args.batch_size], texts, args.batch_size)
        distinct = [list(dict.fromkeys(step)) for step in steps]

        def flops(groups, sign=1.0):
            return sign * sum(training_flops(n_matmul, [lengths_of[t] for t in group], layers, hidden)
                              for group in groups)

        statistics_of[setting] = {
            "repeated": float(np.mean([1 - len(d) / len(step) for d, step in zip(distinct, steps)])),
            "ours": flops(distinct) + flops([list(dict.fromkeys(step)) for step in first], -1.0),
            "all": flops(steps) + flops(first, -1.0),
            "distinct": [[lengths_of[t] for t in d] for d in distinct],
        }
    timed = args.steps * args.batch_size

    def padding_share(packed: bool, chunk_tokens: int, setting: str) -> float:
        """Pad tokens among the tokens run, from the encoder's own chunking of each timed step."""
        probe = Encoder(encoder.model, encoder.tokenizer, encoder.pooling, encoder.max_length, device,
                        packed=packed)
        probe.chunk_tokens = chunk_tokens
        real = run = 0
        for lengths in statistics_of[setting]["distinct"]:
            for chunk in probe.chunks(lengths):
                chunk_real = sum(lengths[i] for i in chunk)
                real += chunk_real
                run += chunk_real if packed else len(chunk) * max(lengths[i] for i in chunk)
        return 1 - real / run

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def seconds_of_ours(variant: dict, triplets, texts) -> tuple[float, float | None]:
        """Wall time of the timed steps of sdr.train: T(steps + 1) - T(1), after a warm-up call."""
        run = Encoder.load(str(folder / "model"), device=str(device), packed=variant["packed"])
        run.compile_packed = variant["compile"]  # the library's own compile (bucketed in the new one)
        for attribute, value in VARIANT_ENCODER.get(variant["key"], {}).items():
            setattr(run, attribute, value)
        objective = TripletObjective(texts)

        def call(n_steps: int) -> float:
            config = TrainConfig(epochs=1, batch_size=args.batch_size, accumulation_steps=1, learning_rate=2e-5,
                                 warmup_steps=0, seed=0, progress=False, chunk_tokens=variant["chunk_tokens"])
            synchronize()
            start = time.perf_counter()
            train(run, triplets[:n_steps * args.batch_size], objective, config)
            synchronize()
            return time.perf_counter() - start

        # warm-up; compiled: the timed call's own steps, so every shape it meets is compiled before timing
        call(args.steps + 1 if variant["compile"] else 1)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        one = call(1)
        whole = call(args.steps + 1)
        memory = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
        return whole - one, memory

    # ---------------------------------------------------------------- sentence-transformers, set up well
    try:
        import accelerate  # noqa: F401
        import datasets  # noqa: F401
        have_st_trainer = True
    except ImportError:
        have_st_trainer = False
    st_attention = "sdpa"
    if device.type == "cuda":
        from transformers.utils import is_flash_attn_2_available

        if is_flash_attn_2_available():
            st_attention = "flash_attention_2"

    def seconds_of_st(compile_: bool, triplets, texts) -> tuple[float, float | None, str]:
        from datasets import Dataset
        from sentence_transformers import (SentenceTransformer, SentenceTransformerTrainer,
                                           SentenceTransformerTrainingArguments, losses)

        kwargs = {"attn_implementation": st_attention}
        if st_attention == "flash_attention_2":  # flash-attn wants the weights in half precision
            kwargs["torch_dtype"] = torch.bfloat16 if plan.precision == "bf16" else torch.float16
        model = SentenceTransformer(str(folder / "model"), device=str(device), model_kwargs=kwargs)
        used = model[0].auto_model.config._attn_implementation
        loss = losses.TripletLoss(model, distance_metric=losses.TripletDistanceMetric.EUCLIDEAN, triplet_margin=1.0)

        def call(n_steps: int) -> float:
            chosen = triplets[:n_steps * args.batch_size]
            data = Dataset.from_dict({"anchor": [texts[t.query] for t in chosen],
                                      "positive": [texts[t.positive] for t in chosen],
                                      "negative": [texts[t.negative] for t in chosen]})
            arguments = SentenceTransformerTrainingArguments(
                output_dir=str(folder / "st"), num_train_epochs=1, per_device_train_batch_size=args.batch_size,
                learning_rate=2e-5, warmup_steps=0, seed=0, save_strategy="no", report_to="none",
                disable_tqdm=True, logging_strategy="no", bf16=device.type == "cuda" and plan.precision == "bf16",
                fp16=device.type == "cuda" and plan.precision == "fp16", use_cpu=device.type == "cpu",
                torch_compile=compile_)
            trainer = SentenceTransformerTrainer(model=model, args=arguments, train_dataset=data, loss=loss)
            synchronize()
            start = time.perf_counter()
            trainer.train()
            synchronize()
            return time.perf_counter() - start

        call(3 if compile_ else 1)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        one = call(1)
        whole = call(args.steps + 1)
        memory = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
        precision = {"bf16": "bf16 autocast", "fp16": "fp16 autocast"}.get(plan.precision, "float32") \
            if device.type == "cuda" else "float32"
        return whole - one, memory, f"{precision}, attn_implementation={used!r}" + (", torch.compile" if compile_ else "")

    # ---------------------------------------------------------------- the trainers, alternating
    packed_label = "packed" + ("" if plan.packed else " (not the default here)")
    chosen = [name.strip() for name in args.variants.split(",") if name.strip()]
    if not chosen:
        chosen = ["padded16k", "packed16k"] + (["packed64k"] + (["compiled16k"] if args.compile else [])
                                               if device.type == "cuda" else [])
    if chosen == ["none"]:  # sentence-transformers only
        chosen = []
    unknown = sorted(set(chosen) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"--variants: unknown {unknown}; expected some of {list(VARIANTS)}")
    variants = {}
    for key in chosen:
        packed, chunk_tokens, compiled = VARIANTS[key]
        path = f"{packed_label}{' + torch.compile' if compiled else ''}" if packed else "padded chunks"
        path += "".join(f", {attribute}={value!r}" for attribute, value in VARIANT_ENCODER.get(key, {}).items())
        variants[f"sdr.train [{key}], {path}, {chunk_tokens // 1024}K-token chunks"] = {
            "packed": packed, "chunk_tokens": chunk_tokens, "compile": compiled, "key": key}
    trainers = [(name, "ours", variant) for name, variant in variants.items()]
    if args.no_st:
        have_st_trainer = False
    if have_st_trainer:
        trainers.append(("sentence-transformers", "st", False))
        if args.compile:
            trainers.append(("sentence-transformers + torch.compile", "st", True))
    measured = {(setting, name): [] for setting in settings for name, _, _ in trainers}
    memory_of, st_used, failed = {}, {}, {}
    for run_number in range(args.runs):
        for setting, (triplets, texts) in settings.items():
            for name, kind, variant in trainers:
                if name in failed:
                    continue
                try:
                    if kind == "ours":
                        seconds, memory = seconds_of_ours(variant, triplets, texts)
                    else:
                        seconds, memory, st_used[name] = seconds_of_st(variant, triplets, texts)
                except Exception as error:  # one variant failing (e.g. a compile mode) leaves the others' runs
                    failed[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"
                    print(f"run {run_number + 1}, {setting}, {name}: failed, {failed[name]}", flush=True)
                    traceback.print_exc()
                    continue
                measured[(setting, name)].append(timed / seconds)
                memory_of[(setting, name)] = max(memory or 0.0, memory_of.get((setting, name), 0.0))
                print(f"run {run_number + 1}, {setting}, {name}: {timed / seconds:.1f} triplets/s", flush=True)

    lines = [machine_line("bench_train_gpu"), device_text, library,
             f"plan: {plan.describe()}",
             f"model: {label}, {n_parameters / 1e6:.1f} M parameters, {n_matmul / 1e6:.1f} M in matrix products "
             f"(MFU counts these); texts: {source}, {np.mean(list(lengths_of.values())):.0f} tokens per text (mean)",
             f"training: SPECTER triplets, effective batch {args.batch_size}, {args.steps} timed optimizer steps a "
             f"run, median of {args.runs} alternating runs (min–max)"]
    for setting in settings:
        stats = statistics_of[setting]
        lines.append(f"setting '{setting}': {stats['repeated']:.1%} of a step's texts repeat an earlier one "
                     f"(mean over the timed steps), so sdr.train computes {1 - stats['repeated']:.1%} of them")
        lines.append(f"  {'trainer':<66}{'triplets/s (min–max)':>26}{'MFU':>7}{'padding':>9}  peak memory")
        for name, kind, variant in trainers:
            if name in failed:
                lines.append(f"  {name:<66}  failed: {failed[name]}")
                continue
            speeds = measured[(setting, name)]
            flops = stats["ours"] if kind == "ours" else stats["all"]
            seconds = timed / statistics.median(speeds)
            mfu_text = f"{mfu(flops, seconds, peak[0]):.1%}" if peak else "n/a"
            padding = (f"{padding_share(variant['packed'], variant['chunk_tokens'], setting):.1%}"
                       if kind == "ours" else "")
            memory = memory_of[(setting, name)]
            memory_text = f"{memory:.1f} GiB" if device.type == "cuda" else f"{peak_rss_mib():.0f} MiB RSS (process)"
            lines.append(f"  {name:<66}{median_range(speeds):>26}{mfu_text:>7}{padding:>9}  {memory_text}")
        ours_ran = [n for n, k, _ in trainers if k == "ours" and n not in failed]
        if have_st_trainer and ours_ran and "sentence-transformers" not in failed:
            best = max(ours_ran, key=lambda n: statistics.median(measured[(setting, n)]))
            st = statistics.median(measured[(setting, "sentence-transformers")])
            lines.append(f"  fastest sdr.train ({best}) / sentence-transformers: "
                         f"{statistics.median(measured[(setting, best)]) / st:.2f}x")
    if have_st_trainer:
        versions = __import__("sentence_transformers").__version__, __import__("transformers").__version__
        for name, used in st_used.items():
            lines.append(f"{name}: sentence-transformers {versions[0]} (transformers {versions[1]}), {used}")
    elif args.no_st:
        lines.append("sentence-transformers' trainer: not run (--no-st)")
    else:
        lines.append("sentence-transformers' trainer: not run (needs the `datasets` and `accelerate` packages)")
    # what the device check's summary pools over processes (benchmarks/device_check_summary.py)
    trainers = [trainer for trainer in trainers if trainer[0] not in failed]
    measured = {key: values for key, values in measured.items() if key[1] not in failed}
    record = {"label": args.label, "library": library, "device": device_text, "peak": list(peak) if peak else None,
              "timed_triplets": timed, "steps": args.steps, "source": source,
              "settings": {setting: {"repeated": stats["repeated"], "flops_ours": stats["ours"],
                                     "flops_all": stats["all"]} for setting, stats in statistics_of.items()},
              "trainers": {name: {"kind": kind, "key": variant["key"] if kind == "ours" else
                                  ("st-compiled" if variant else "st")} for name, kind, variant in trainers},
              "measured": {f"{setting} / {name}": values for (setting, name), values in measured.items()},
              "memory_gib": {f"{setting} / {name}": value for (setting, name), value in memory_of.items()}}
    if args.no_encode:
        text = "\n".join(lines + ["BENCH_JSON " + json.dumps(record)])
        print(text)
        _write(args, text, device, torch)
        return

    # ---------------------------------------------------------------- encoding (inference), one run each
    from sentence_transformers import SentenceTransformer

    papers = [pool[i % len(pool)] for i in range(args.encode_papers)]
    st_model = SentenceTransformer(str(folder / "model"), device=str(device),
                                   model_kwargs={"attn_implementation": st_attention})
    if device.type == "cuda":
        st_model = st_model.to(torch.bfloat16 if plan.precision == "bf16" else torch.float16)
    lines.append(f"encoding {len(papers)} texts (inference, one run each), papers/s:")
    for batch in (32, 128, 512):
        rates = {}
        for packed in (False, True):
            encoder.chunk_tokens, encoder.packed = 0, packed
            encoder.encode_texts(papers[:batch], batch_size=batch, progress=False)  # warm-up
            synchronize()
            start = time.perf_counter()
            encoder.encode_texts(papers, batch_size=batch, progress=False)
            rates[packed] = len(papers) / (time.perf_counter() - start)
        st_model.encode(papers[:batch], batch_size=batch)
        start = time.perf_counter()
        st_model.encode(papers, batch_size=batch, show_progress_bar=False)
        theirs = len(papers) / (time.perf_counter() - start)
        lines.append(f"  batch {batch:>4}: Encoder.encode_texts padded {rates[False]:>8.1f}, packed {rates[True]:>8.1f}"
                     f"   sentence-transformers encode {theirs:>8.1f}   ratio (packed) {rates[True] / theirs:.2f}x")
        print(lines[-1], flush=True)
    text = "\n".join(lines + ["BENCH_JSON " + json.dumps(record)])
    print(text)
    _write(args, text, device, torch)


def _write(args, text: str, device, torch) -> None:
    """The raw output: to ``--out``, else (not ``--quick``) to benchmarks/results/train_gpu_<device>.txt."""
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    elif not args.quick:
        name = "cpu" if device.type == "cpu" else "-".join(torch.cuda.get_device_name(device).lower().split())
        (RESULTS / f"train_gpu_{name}{'_512' if args.long_texts else ''}.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
