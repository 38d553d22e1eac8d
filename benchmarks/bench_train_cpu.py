"""The book's trainer against sentence-transformers' trainer on CPU, same model, triplets and batch.

Both train all-MiniLM-L6-v2 cut to its first 2 layers (mean pooling, max_length 128, float32, one torch
thread) for one epoch over the same 192 SPECTER triplets (:func:`sdr.samplers.specter_triplets` on a
400-paper synthetic corpus, inputs ``title [SEP] abstract``), batch 32 (6 optimizer steps), AdamW at
lr 2e-5, no warm-up, linear decay, clipping at 1.0, triplet loss with Euclidean distance and margin 1:

* the book: :func:`sdr.train.train` + :class:`sdr.train.TripletObjective`;
* sentence-transformers: ``SentenceTransformerTrainer`` + ``losses.TripletLoss`` (Euclidean, margin 1)
  on a ``datasets.Dataset`` with anchor/positive/negative columns, loaded from the same saved weights.

Runs alternate (book, s-t, book, s-t, …) so load on the shared machine hits both alike; each run starts
from freshly loaded weights; only the training call is timed; the median of ``--rounds`` runs is reported.
sentence-transformers' trainer needs ``datasets`` and ``accelerate``, which the book does not depend on:
install them (e.g. ``pip install --target DIR datasets accelerate`` and put DIR on ``PYTHONPATH``).

Usage: ``python benchmarks/bench_train_cpu.py [--rounds 3] [--quick]``; raw output goes to
``benchmarks/results/train_cpu.txt``. Measurements, not asserted by any test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_synthetic import machine_line  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "train_cpu.txt"


def synthetic_triplets(n_triplets: int, n_papers: int = 400):
    from sdr.samplers import specter_triplets
    from sdr.synthetic import make_corpus

    corpus = make_corpus(n_papers=n_papers, seed=0)
    triplets, _ = specter_triplets(corpus.graph, seed=0, progress=False, verbose=False)
    if len(triplets) < n_triplets:
        raise ValueError(f"only {len(triplets)} triplets from {n_papers} papers; asked for {n_triplets}")
    return corpus, triplets[:n_triplets]


def run_book(model_dir: Path, texts: dict, triplets: list, batch_size: int, max_length: int) -> float:
    from sdr.encoders import Encoder
    from sdr.train import TrainConfig, TripletObjective, train

    encoder = Encoder.load(str(model_dir), max_length=max_length, device="cpu")
    config = TrainConfig(epochs=1, batch_size=batch_size, accumulation_steps=1, learning_rate=2e-5,
                         warmup_steps=0, schedule="linear", max_grad_norm=1.0, seed=0, progress=False)
    start = time.perf_counter()
    train(encoder, triplets, TripletObjective(texts), config)
    return time.perf_counter() - start


def run_sentence_transformers(model_dir: Path, texts: dict, triplets: list, batch_size: int,
                              max_length: int, output_dir: Path) -> float:
    from datasets import Dataset
    from sentence_transformers import (SentenceTransformer, SentenceTransformerTrainer,
                                       SentenceTransformerTrainingArguments, losses)

    model = SentenceTransformer(str(model_dir), device="cpu")
    model.max_seq_length = max_length
    dataset = Dataset.from_dict({"anchor": [texts[t.query] for t in triplets],
                                 "positive": [texts[t.positive] for t in triplets],
                                 "negative": [texts[t.negative] for t in triplets]})
    loss = losses.TripletLoss(model, distance_metric=losses.TripletDistanceMetric.EUCLIDEAN, triplet_margin=1.0)
    arguments = SentenceTransformerTrainingArguments(
        output_dir=str(output_dir), num_train_epochs=1, per_device_train_batch_size=batch_size,
        learning_rate=2e-5, warmup_steps=0, lr_scheduler_type="linear", max_grad_norm=1.0, seed=0,
        save_strategy="no", report_to="none", disable_tqdm=True, logging_strategy="no", use_cpu=True,
        dataloader_drop_last=False)
    trainer = SentenceTransformerTrainer(model=model, args=arguments, train_dataset=dataset, loss=loss)
    start = time.perf_counter()
    trainer.train()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triplets", type=int, default=192)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="64 triplets, 1 round")
    args = parser.parse_args()
    if args.quick:
        args.triplets, args.rounds = 64, 1

    import numpy as np
    import torch

    torch.set_num_threads(1)
    from sdr.encoders import Encoder

    corpus, triplets = synthetic_triplets(args.triplets)
    with tempfile.TemporaryDirectory() as folder:
        model_dir = Path(folder) / "minilm"
        base = Encoder.load("minilm", num_layers=args.layers, max_length=args.max_length, device="cpu")
        base.save(model_dir)
        texts = {pid: base.paper_text(paper) for pid, paper in corpus.papers.items()}
        used = [pid for t in triplets for pid in (t.query, t.positive, t.negative)]
        lengths = [len(ids) for ids in base.token_ids([texts[p] for p in used], cache=False)]
        times: dict[str, list[float]] = {"book": [], "sentence-transformers": []}
        for _ in range(args.rounds):
            times["book"].append(run_book(model_dir, texts, triplets, args.batch_size, args.max_length))
            times["sentence-transformers"].append(run_sentence_transformers(
                model_dir, texts, triplets, args.batch_size, args.max_length, Path(folder) / "st"))

    lines = [machine_line("bench_train_cpu"),
             f"all-MiniLM-L6-v2 cut to {args.layers} layers, max_length {args.max_length}, CPU float32, "
             f"{torch.get_num_threads()} thread; {len(triplets)} SPECTER triplets of a 400-paper synthetic "
             f"corpus ({len(set(used))} distinct papers, {np.mean(lengths):.1f} tokens per text), batch "
             f"{args.batch_size}, 1 epoch; {args.rounds} alternating rounds, median",
             f"{'trainer':<24}{'runs (s)':>28}{'median s':>10}{'triplets/s':>12}"]
    median = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        runs = " ".join(f"{v:.2f}" for v in values)
        lines.append(f"{name:<24}{runs:>28}{median[name]:>10.2f}{len(triplets) / median[name]:>12.1f}")
    ratio = median["sentence-transformers"] / median["book"]
    lines.append(f"book trainer speed / sentence-transformers trainer speed: {ratio:.2f}x (target >= 1.5x)")
    text = "\n".join(lines)
    print(text)
    if not args.quick:
        RESULTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
