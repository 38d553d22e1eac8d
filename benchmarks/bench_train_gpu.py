"""Training and encoding throughput of the book's trainer on a GPU (and, smaller, on CPU for CI).

On CUDA: a BERT-base-sized encoder (12 layers, hidden 768, random initialization: speed does not depend on
the weights; the bert-base-uncased vocabulary of all-MiniLM-L6-v2's tokenizer), bf16 autocast, max_length
512. On CPU: all-MiniLM-L6-v2 cut to 2 layers, float32, a few steps — so CI exercises the code path.
Texts of real length: CSAbstruct abstracts (``$SDR_DATA/csabstruct/train.jsonl``, title-less) when present,
else the synthetic corpus' ``title [SEP] abstract``; they are assigned to the papers of a synthetic citation
graph whose SPECTER triplets (:func:`sdr.samplers.specter_triplets`) are trained at effective batch 32.

Reported, each in the same run: triplets/s of :func:`sdr.train.train` + :class:`~sdr.train.TripletObjective`
(the first optimizer step is a warm-up and not timed) and of sentence-transformers'
``SentenceTransformerTrainer`` + ``TripletLoss`` (Euclidean, margin 1) on the same model, texts and batch
(needs ``datasets`` and ``accelerate``; skipped with a note when they are missing); the useful-token MFU
(6 × parameters × the triplets' real tokens per second, against the device's dense bf16 peak; attention
FLOPs not counted); the padding share of the tokens the book's trainer ran; peak memory; then encoding
papers/s of :meth:`sdr.encoders.Encoder.encode_texts` against sentence-transformers' ``encode``.

Usage: ``python benchmarks/bench_train_gpu.py [--steps 20] [--quick]``; raw output goes to
``benchmarks/results/train_gpu_<device>.txt``. Measurements, not asserted by any test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_synthetic import machine_line, peak_rss_mib  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
#: dense bf16 peak TFLOP/s by device name fragment (vendor data sheets, without sparsity)
BF16_PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L4": 121.0, "A10": 125.0, "T4": 65.0,
                    "RTX 4090": 165.0, "RTX 3090": 71.0}


def real_abstracts() -> list[str]:
    root = os.environ.get("SDR_DATA")
    path = Path(root) / "csabstruct" / "train.jsonl" if root else None
    if path is None or not path.exists():
        return []
    from sdr.jsonio import read_jsonl

    return [" ".join(record["sentences"]) for _, record in read_jsonl(path, "CSAbstruct records")]


def device_line(device) -> tuple[str, float | None]:
    import torch

    if device.type != "cuda":
        return "device: CPU (no MFU: no bf16 peak for a CPU)", None
    name = torch.cuda.get_device_name(device)
    peak = next((value for key, value in BF16_PEAK_TFLOPS.items() if key in name), None)
    memory = torch.cuda.get_device_properties(device).total_memory / 2**30
    return f"device: {name}, {memory:.0f} GiB, CUDA {torch.version.cuda}, bf16 peak {peak} TFLOP/s", peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps timed (after 1 warm-up)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--encode-papers", type=int, default=4096)
    parser.add_argument("--quick", action="store_true", help="3 steps, 256 papers encoded")
    parser.add_argument("--compile", action="store_true", help="also time the packed forward under torch.compile")
    parser.add_argument("--long-texts", action="store_true",
                        help="every text four abstracts long, so each runs at max_length (512 on CUDA): peak memory "
                             "at the longest inputs; output to train_gpu_<device>_512.txt")
    args = parser.parse_args()
    import numpy as np
    import torch

    from sdr.encoders import Encoder
    from sdr.samplers import specter_triplets
    from sdr.synthetic import make_corpus
    from sdr.train import TrainConfig, TripletObjective, train

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.set_num_threads(1)
        args.steps = min(args.steps, 3)
        args.encode_papers = min(args.encode_papers, 256)
    if args.quick:
        args.steps, args.encode_papers = min(args.steps, 3), min(args.encode_papers, 256)
    device_text, peak = device_line(device)

    n_triplets = (args.steps + 1) * args.batch_size
    corpus = make_corpus(n_papers=max(400, n_triplets // 2), seed=0)
    triplets, _ = specter_triplets(corpus.graph, seed=0, progress=False, verbose=False)
    triplets = triplets[:n_triplets]
    abstracts = real_abstracts()
    base = Encoder.load("minilm", num_layers=2, max_length=128, device="cpu")
    ids = sorted(corpus.papers)
    if abstracts and args.long_texts:
        texts = {pid: " ".join(abstracts[(i + j) % len(abstracts)] for j in range(4)) for i, pid in enumerate(ids)}
        source = f"four CSAbstruct abstracts a text ({len(abstracts)}, $SDR_DATA), truncated at max_length"
    elif abstracts:
        texts = {pid: abstracts[i % len(abstracts)] for i, pid in enumerate(ids)}
        source = f"CSAbstruct abstracts ({len(abstracts)}, $SDR_DATA)"
    else:
        texts = {pid: base.paper_text(corpus.papers[pid]) for pid in ids}
        source = "synthetic title [SEP] abstract (no $SDR_DATA)"

    folder = Path(tempfile.mkdtemp())
    if device.type == "cuda":  # BERT-base sized, random weights, same vocabulary
        from transformers import BertConfig, BertModel

        model = BertModel(BertConfig(vocab_size=len(base.tokenizer)))
        encoder = Encoder(model, base.tokenizer, pooling="cls", max_length=512, device=device)
        label = "BERT-base-sized (random init), bf16 autocast, max_length 512"
    else:
        encoder = base
        label = "all-MiniLM-L6-v2 cut to 2 layers, float32, max_length 128, 1 thread"
    encoder.save(folder / "model")
    n_parameters = sum(p.numel() for p in encoder.model.parameters())

    lengths = {pid: len(row) for pid, row in zip(ids, encoder.token_ids([texts[p] for p in ids], cache=False))}
    real_tokens = [sum(lengths[p] for p in (t.query, t.positive, t.negative)) for t in triplets]
    timed = len(triplets) - args.batch_size
    pad_id = encoder.tokenizer.pad_token_id or 0

    def stamp(row):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        stamps.append(time.perf_counter())

    def measure(packed: bool, chunk_tokens: int, compile_: bool = False) -> tuple[float, str, float, str]:
        """triplets/s, MFU, padding share and peak memory of sdr.train with one encoding path."""
        run = Encoder.load(str(folder / "model"), device=str(device))
        run.packed, run.compile_packed = packed, compile_
        ran = {"real": 0, "all": 0}

        def count(module, inputs):  # the token ids the embedding layer sees: pads included when padded
            ran["all"] += inputs[0].numel()
            ran["real"] = ran["real"] + (inputs[0] != pad_id).sum()  # a device tensor: no sync per call

        # no counting hook under torch.compile: the compiler guards on the hook's counters and would
        # recompile every call (a packed run has no pad tokens by construction)
        hook = None if compile_ else run.model.embeddings.word_embeddings.register_forward_pre_hook(count)
        stamps.clear()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        config = TrainConfig(epochs=1, batch_size=args.batch_size, accumulation_steps=1, learning_rate=2e-5,
                             warmup_steps=0, seed=0, progress=False, chunk_tokens=chunk_tokens)
        train(run, triplets, TripletObjective(texts), config, callback=stamp)
        if hook is not None:
            hook.remove()
        seconds = stamps[-1] - stamps[0]
        memory = (f"{torch.cuda.max_memory_allocated(device) / 2**30:.1f} GiB" if device.type == "cuda"
                  else f"{peak_rss_mib():.0f} MiB RSS")
        mfu = (f"{6 * n_parameters * sum(real_tokens[args.batch_size:]) / seconds / (peak * 1e12):.1%}"
               if peak else "n/a")
        padding = 1 - int(ran["real"]) / ran["all"] if hook is not None else 0.0
        return timed / seconds, mfu, padding, memory

    stamps = []
    lines = [machine_line("bench_train_gpu"), device_text,
             f"model: {label}, {n_parameters / 1e6:.0f} M parameters; texts: {source}, "
             f"{np.mean(list(lengths.values())):.0f} tokens per text (mean)",
             f"training: SPECTER triplets, effective batch {args.batch_size}, {args.steps} timed optimizer steps "
             "after 1 warm-up",
             f"{'trainer':<40}{'triplets/s':>12}{'MFU':>8}{'padding':>9}  peak memory"]
    # padded: each length-sorted chunk padded to its longest text; packed: one token stream (sdr.packed)
    variants = [("sdr.train, padded chunks of 16K tokens", False, 16384, False),
                ("sdr.train, packed, 16K tokens a chunk", True, 16384, False),
                ("sdr.train, packed, 64K tokens a chunk", True, 65536, False)]
    if device.type == "cuda" and args.compile:
        variants.append(("sdr.train, packed + torch.compile", True, 16384, True))
    speeds = {}
    for name, packed, chunk_tokens, compile_ in variants:
        speed, mfu, padding, memory = measure(packed, chunk_tokens, compile_)
        speeds[name] = speed
        lines.append(f"{name:<40}{speed:>12.1f}{mfu:>8}{padding:>9.1%}  {memory}")
        print(lines[-1], flush=True)
    best = max(speeds, key=speeds.get)
    seconds = timed / speeds[best]

    try:
        import datasets  # noqa: F401  (sentence-transformers' trainer needs it)
        have_st_trainer = True
    except ImportError:
        have_st_trainer = False
    if have_st_trainer:
        from datasets import Dataset
        from sentence_transformers import (SentenceTransformer, SentenceTransformerTrainer,
                                           SentenceTransformerTrainingArguments, losses)
        from transformers import TrainerCallback

        model = SentenceTransformer(str(folder / "model"), device=str(device))
        st_stamps = []

        class Stamp(TrainerCallback):
            def on_step_end(self, *unused, **kwargs):
                stamp(None)
                st_stamps.append(stamps.pop())

        data = Dataset.from_dict({"anchor": [texts[t.query] for t in triplets],
                                  "positive": [texts[t.positive] for t in triplets],
                                  "negative": [texts[t.negative] for t in triplets]})
        loss = losses.TripletLoss(model, distance_metric=losses.TripletDistanceMetric.EUCLIDEAN,
                                  triplet_margin=1.0)
        arguments = SentenceTransformerTrainingArguments(
            output_dir=str(folder / "st"), num_train_epochs=1, per_device_train_batch_size=args.batch_size,
            learning_rate=2e-5, warmup_steps=0, seed=0, save_strategy="no", report_to="none",
            disable_tqdm=True, logging_strategy="no", bf16=device.type == "cuda", use_cpu=device.type == "cpu")
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        SentenceTransformerTrainer(model=model, args=arguments, train_dataset=data, loss=loss,
                                   callbacks=[Stamp()]).train()
        st_seconds = st_stamps[-1] - st_stamps[0]
        st_mfu = (f"{6 * n_parameters * sum(real_tokens[args.batch_size:]) / st_seconds / (peak * 1e12):.1%}"
                  if peak else "n/a")
        st_memory = (f"{torch.cuda.max_memory_allocated(device) / 2**30:.1f} GiB" if device.type == "cuda"
                     else "(same process)")
        lines.append(f"{'sentence-transformers':<40}{timed / st_seconds:>12.1f}{st_mfu:>8}{'':>9}  {st_memory}")
        lines.append(f"fastest sdr.train ({best}) / sentence-transformers: {st_seconds / seconds:.2f}x")
    else:
        lines.append("sentence-transformers' trainer: not run (needs the `datasets` and `accelerate` packages)")

    # encoding: the book's encode_texts vs sentence-transformers' encode, same weights, bf16 on CUDA
    from sentence_transformers import SentenceTransformer

    papers = [texts[ids[i % len(ids)]] for i in range(args.encode_papers)]
    st_model = SentenceTransformer(str(folder / "model"), device=str(device))
    if device.type == "cuda":
        st_model = st_model.to(torch.bfloat16)
    lines.append(f"encoding {len(papers)} texts (inference), papers/s:")
    for batch in (32, 128, 512):
        rates = {}
        for packed in (False, True):
            encoder.chunk_tokens, encoder.packed = 0, packed
            encoder.encode_texts(papers[:batch], batch_size=batch, progress=False)  # warm-up
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
    text = "\n".join(lines)
    print(text)
    if not args.quick:
        name = "cpu" if device.type == "cpu" else "-".join(torch.cuda.get_device_name(device).lower().split())
        (RESULTS / f"train_gpu_{name}{'_512' if args.long_texts else ''}.txt").write_text(text + "\n")
    print(json.dumps({"triplets_per_second": speeds}))


if __name__ == "__main__":
    main()
