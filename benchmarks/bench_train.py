"""Training and encoding throughput of the book's trainer and encoder on CPU.

Training: :func:`sdr.train.train` with SPECTER's :class:`~sdr.train.TripletObjective` (triplets from
:func:`sdr.samplers.specter_triplets` on a 400-paper synthetic corpus, inputs ``title [SEP] abstract``)
for all-MiniLM-L6-v2 cut to 1 layer and in full (6 layers), at max_length 64 and 128; batch 8, no
accumulation, one epoch over ``--examples`` triplets, one run per setting. Each setting runs in its own
subprocess so its peak resident memory (``VmHWM``, or ``resource.getrusage`` where /proc is missing) is its
own; the model load is not timed. The grid uses ``--threads`` torch threads (default 1: on a shared 2-core
machine torch's OpenMP threads spin against other processes, which makes multi-thread timings mostly a
measure of the neighbours); one extra row repeats the smallest setting with torch's default thread count
to show what that costs right now.

Encoding: :meth:`sdr.encoders.Encoder.encode_papers` (batches of texts sorted by length, so each batch
pads little) against a naive loop over the same papers in input order with the same batch size —
what the sorting buys (best of 3 alternating runs after an untimed warm-up). Also the share of padding
tokens each way and the largest difference between the two outputs (they must agree).

Usage: ``python benchmarks/bench_train.py [--examples 64] [--encode-papers 200] [--quick]``; raw output
goes to ``benchmarks/results/train.txt``. The numbers are measurements, not asserted by any test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_synthetic import machine_line, peak_rss_mib  # noqa: E402  (shared by the benchmarks)

RESULTS = Path(__file__).resolve().parent / "results" / "train.txt"
SETTINGS = [(1, 64), (1, 128), (6, 64), (6, 128)]  # (transformer layers, max_length)


def _corpus_and_triplets(n_papers: int, n_examples: int):
    from sdr.samplers import specter_triplets
    from sdr.synthetic import make_corpus

    corpus = make_corpus(n_papers=n_papers, seed=0)
    triplets, _ = specter_triplets(corpus.graph, seed=0, progress=False, verbose=False)
    if len(triplets) < n_examples:
        raise ValueError(f"only {len(triplets)} triplets from {n_papers} papers; asked for {n_examples}")
    return corpus, triplets[:n_examples]


def train_worker(spec: dict) -> dict:
    """One training run in this process; returns throughput and this process's peak RSS."""
    import torch

    from sdr.encoders import Encoder
    from sdr.train import TrainConfig, TripletObjective, train

    if spec.get("threads"):  # 0 / None: torch's default
        torch.set_num_threads(spec["threads"])
    corpus, triplets = _corpus_and_triplets(400, spec["examples"])
    encoder = Encoder.load("minilm", num_layers=spec["layers"], max_length=spec["max_length"], device="cpu")
    texts = {pid: encoder.paper_text(paper) for pid, paper in corpus.papers.items()}
    used = {pid for t in triplets for pid in (t.query, t.positive, t.negative)}
    lengths = [min(len(encoder.tokenizer(texts[pid])["input_ids"]), spec["max_length"]) for pid in used]
    config = TrainConfig(epochs=1, batch_size=8, accumulation_steps=1, learning_rate=2e-5, seed=0,
                         progress=False)
    start = time.perf_counter()
    result = train(encoder, triplets, TripletObjective(texts), config)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "steps": result.steps, "examples": len(triplets),
            "mean_tokens": sum(lengths) / len(lengths), "threads": torch.get_num_threads(),
            "final_loss": float(result.history["loss"].iloc[-1]),
            "peak_mib": peak_rss_mib()}


def encode_comparison(n_papers: int, max_length: int, batch_size: int = 32, repeat: int = 3) -> dict:
    """encode_papers (length-sorted batches) vs a naive input-order loop, same model and batch size."""
    import numpy as np
    import torch

    from sdr.encoders import Encoder
    from sdr.synthetic import make_corpus

    corpus = make_corpus(n_papers=max(n_papers, 60), seed=0)
    papers = list(corpus.papers.values())[:n_papers]
    encoder = Encoder.load("minilm", max_length=max_length, device="cpu")
    texts = [encoder.paper_text(p) for p in papers]
    lengths = np.array([min(len(encoder.tokenizer(t)["input_ids"]), max_length) for t in texts])

    def padding_share(order: np.ndarray) -> float:
        padded = sum(len(b) * lengths[b].max() for b in (order[i:i + batch_size]
                                                         for i in range(0, len(order), batch_size)))
        return 1 - lengths.sum() / padded

    def naive() -> np.ndarray:
        output = np.zeros((len(texts), encoder.dimension), dtype=np.float32)
        with torch.no_grad():
            for i in range(0, len(texts), batch_size):
                output[i:i + batch_size] = encoder(texts[i:i + batch_size]).numpy()
        return output

    def length_sorted() -> np.ndarray:
        return encoder.encode_papers(papers, batch_size=batch_size, progress=False)

    encoder.eval()
    encoder.encode_texts(texts[:batch_size], batch_size=batch_size, progress=False)  # warm-up, untimed
    sorted_seconds, naive_seconds = float("inf"), float("inf")
    for _ in range(repeat):  # alternate the two, keep each one's best time
        start = time.perf_counter()
        sorted_vectors = length_sorted()
        sorted_seconds = min(sorted_seconds, time.perf_counter() - start)
        start = time.perf_counter()
        naive_vectors = naive()
        naive_seconds = min(naive_seconds, time.perf_counter() - start)
    return {"papers": len(papers), "max_length": max_length, "batch_size": batch_size, "repeat": repeat,
            "mean_tokens": float(lengths.mean()), "min_tokens": int(lengths.min()), "max_tokens": int(lengths.max()),
            "sorted_seconds": sorted_seconds, "naive_seconds": naive_seconds,
            "sorted_padding": padding_share(np.argsort(-lengths, kind="stable")),
            "naive_padding": padding_share(np.arange(len(texts))),
            "max_abs_diff": float(np.abs(sorted_vectors - naive_vectors).max())}


def _run_worker(spec: dict) -> dict:
    child = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True,
                           text=True)
    if child.returncode != 0:
        tail = child.stderr.strip().splitlines()[-1] if child.stderr.strip() else f"exit {child.returncode}"
        raise RuntimeError(f"worker {spec} failed: {tail}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=64, help="training triplets per setting")
    parser.add_argument("--encode-papers", type=int, default=200, help="papers for the encoding comparison")
    parser.add_argument("--encode-max-length", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the grid and encoding (0: default)")
    parser.add_argument("--quick", action="store_true", help="16 triplets, 64 papers (a check that it runs)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(train_worker(json.loads(args.worker))))
        return 0
    if args.quick:
        args.examples, args.encode_papers = 16, 64
    import torch

    default_threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)  # the encoding comparison runs in this process

    lines = [machine_line("bench_train" + (" --quick" if args.quick else "")),
             f"training: sdr.train.train + TripletObjective, {args.examples} SPECTER triplets of a 400-paper "
             "synthetic corpus, batch 8, 1 epoch, CPU float32, one run each",
             f"{'layers':>6} {'max_len':>7} {'threads':>7} {'tokens/text':>11} {'steps':>5} {'seconds':>8} "
             f"{'triplets/s':>10} {'texts/s':>8} {'peak RSS MiB':>12}"]
    print("\n".join(lines), flush=True)
    runs = {}
    failures = 0
    specs = [{"layers": layers, "max_length": length, "examples": args.examples, "threads": args.threads}
             for layers, length in SETTINGS]
    if args.threads and args.threads != default_threads:
        specs.append({"layers": 1, "max_length": 64, "examples": args.examples, "threads": 0})
    for spec in specs:
        try:
            run = _run_worker(spec)
        except RuntimeError as error:
            failures += 1
            line = f"{spec['layers']:>6} {spec['max_length']:>7} FAILED: {error}"
        else:
            runs[(spec["layers"], spec["max_length"], spec["threads"])] = run
            rate = run["examples"] / run["seconds"]
            line = (f"{spec['layers']:>6} {spec['max_length']:>7} {run['threads']:>7} {run['mean_tokens']:>11.1f} "
                    f"{run['steps']:>5} {run['seconds']:>8.2f} {rate:>10.2f} {3 * rate:>8.1f} {run['peak_mib']:>12.0f}")
        lines.append(line)
        print(line, flush=True)

    ratios = []
    grid = args.threads
    for length in (64, 128):
        if (1, length, grid) in runs and (6, length, grid) in runs:
            one, six = runs[(1, length, grid)], runs[(6, length, grid)]
            ratios.append(f"max_length {length}: 6 layers take {six['seconds'] / one['seconds']:.2f}x the time of 1 "
                          f"layer, {six['peak_mib'] / one['peak_mib']:.2f}x the peak memory")
    for layers in (1, 6):
        if (layers, 64, grid) in runs and (layers, 128, grid) in runs:
            short, long = runs[(layers, 64, grid)], runs[(layers, 128, grid)]
            ratios.append(f"{layers} layer(s): max_length 128 takes {long['seconds'] / short['seconds']:.2f}x the time "
                          f"of 64, {long['peak_mib'] / short['peak_mib']:.2f}x the peak memory")
    if (1, 64, grid) in runs and (1, 64, 0) in runs:
        chosen, default = runs[(1, 64, grid)], runs[(1, 64, 0)]
        ratios.append(f"1 layer, max_length 64: torch's default {default['threads']} threads take "
                      f"{default['seconds'] / chosen['seconds']:.2f}x the time of {chosen['threads']} "
                      "(depends on what else the machine runs)")
    lines += ["ratios:"] + [f"  {r}" for r in ratios]
    print("\n".join(["ratios:"] + [f"  {r}" for r in ratios]), flush=True)

    encode = encode_comparison(args.encode_papers, args.encode_max_length, repeat=1 if args.quick else 3)
    encode_lines = [
        f"encoding: Encoder.encode_papers vs a naive input-order loop, all-MiniLM-L6-v2 (6 layers), "
        f"{encode['papers']} papers, max_length {encode['max_length']}, batch {encode['batch_size']}, "
        f"best of {encode['repeat']} alternating runs after a warm-up, "
        f"tokens per paper {encode['min_tokens']}-{encode['max_tokens']} (mean {encode['mean_tokens']:.1f})",
        f"{'method':<28} {'seconds':>8} {'papers/s':>9} {'padding share':>13}",
        f"{'length-sorted (encode_papers)':<28} {encode['sorted_seconds']:>8.2f} "
        f"{encode['papers'] / encode['sorted_seconds']:>9.1f} {encode['sorted_padding']:>13.1%}",
        f"{'naive input order':<28} {encode['naive_seconds']:>8.2f} "
        f"{encode['papers'] / encode['naive_seconds']:>9.1f} {encode['naive_padding']:>13.1%}",
        f"sorting speed-up {encode['naive_seconds'] / encode['sorted_seconds']:.2f}x; "
        f"max |difference| between the two outputs {encode['max_abs_diff']:.1e}",
    ]
    lines += encode_lines
    print("\n".join(encode_lines), flush=True)

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
