"""The method of the thesis' Experiments 2–5 (Bansal, *Scientific Document Representation Learning*): objectives,
the training setup, and the embeddings a trained model offers.

* **SPECTERCL** (Exp. 2, §5.2) trains on its instances (:mod:`.sampling`) with the general contrastive loss of
  eq. 2.6 (:class:`sdr.losses.GeneralContrastiveLoss`, τ = :data:`TEMPERATURE`).
* **SciAspect** (Exp. 3, §5.3): each aspect has a linear projection head ``z = W_i d + b_i`` and eq. 5.1 is eq.
  2.6 in that aspect's space (:class:`AspectContrastiveObjective`, a ``torch.nn.Module`` whose heads the trainer
  optimizes and saves). At inference the encoder alone gives the embedding; eq. 5.2 projects it with one head,
  eq. 5.3 concatenates the three projections (:func:`embedding_variants`).
* **SciAspectHybrid** (Exp. 4, §5.4): ``α · L_global + (1 − α) · L_local`` (eq. 5.4, α = :data:`HYBRID_ALPHA`).
* Training every run of a table from one encoder with one budget, each with a held-out probe (:func:`train_runs`,
  :func:`split_probe`), the thesis' setup (:func:`paper_train_config`, §4.4), and CSFCube scored for every
  embedding of a model (:func:`csfcube_results`).

Where the thesis is silent we chose, and each choice is named where it is made (search "Choice:").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from sdr.corpus import INTENTS, MISCELLANEOUS, Paper
from sdr.losses import GeneralContrastiveLoss, HybridLoss
from sdr.methods.sciaspect.sampling import ASPECT_SPACES, AspectExample
from sdr.train import TrainConfig

__all__ = [
    "TEMPERATURE", "HYBRID_ALPHA", "TEMPERATURES", "ALPHAS", "FACET_TO_ASPECT", "paper_train_config",
    "AspectContrastiveObjective", "PROBE_SIZE", "Run", "split_probe", "train_runs", "embedding_variants",
    "csfcube_results", "SCIDOCS_WITHOUT_RECOMM", "SCIDOCS_PROXIMITY", "average_without_recomm",
]

#: τ of every contrastive run after Exp. 2.2 (Table 6.3: 0.05 was best).
TEMPERATURE = 0.05
#: SciAspectHybrid's loss weight (§5.4: "we chose α as 0.7").
HYBRID_ALPHA = 0.7
#: Exp. 2.2 temperature sweep (Table 6.3) and Exp. 4.2 α sweep (Table 6.6).
TEMPERATURES = (0.01, 0.05, 0.1, 0.5)
ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)
#: CSFCube facet → the aspect head that embeds it (the thesis never evaluated this; issue 11).
FACET_TO_ASPECT = {"background": "background", "method": "method", "result": "result"}


def paper_train_config(**overrides) -> TrainConfig:
    """The thesis' training setup (§4.4) as a :class:`TrainConfig`: AdamW (ε 1e-8), lr 2e-5, cosine schedule
    with 100 warm-up steps, 2 epochs, effective batch 8 for the contrastive runs (8 × 1 here; on a small
    GPU 2 × 4 is the same). ``overrides`` replace any field (the chapter's CPU budgets).

    Shown in: notebooks/sciaspect.ipynb, Training: every model with the same budget.
    """
    settings = dict(epochs=2, batch_size=8, accumulation_steps=1, learning_rate=2e-5, schedule="cosine",
                    warmup_steps=100)
    settings.update(overrides)
    return TrainConfig(**settings)

# ------------------------------------------------------------------------------------------ objective


class AspectContrastiveObjective(nn.Module):
    """SciAspect's objective: per-aspect linear projection heads and the aspect-space contrastive loss.

    For an instance of aspect *i*, the anchor, positives and negatives are embedded by the encoder, projected
    by head *i* (``z = W_i d + b_i``, §5.3) and scored with eq. 5.1 — the general contrastive loss of eq.
    2.6 (:class:`sdr.losses.GeneralContrastiveLoss`, cosine similarity, τ = 0.05) in that aspect's space.
    With ``alpha`` set it is SciAspectHybrid (eq. 5.4): ``α · L_global + (1 − α) · L_local`` through
    :class:`sdr.losses.HybridLoss`, ``L_global`` being eq. 2.6 on the encoder's own embeddings of the
    anchor, the same positive(s) and the instance's ``global_negatives``.

    The heads are this module's parameters: :func:`sdr.train.train` optimizes, clips, checkpoints and
    restores them and writes them to ``model_dir/objective.pt``.

    Args:
        texts: paper id → encoder input text (``encoder.paper_text(paper)``).
        dimension: the encoder's embedding size (heads are ``dimension × dimension``).
        aspects: the aspect spaces that get a head (add ``"miscellaneous"`` for the w/ misc variants).
        temperature: τ of eq. 5.1.
        alpha: None for SciAspect; the hybrid weight for SciAspectHybrid.
        similarity: ``"cosine"`` (our reading: the thesis never defines ``sim``) or ``"dot"``.

    Choice: the thesis does not say how the heads start; each starts at the identity (``W_i = I``,
    ``b_i = 0``), so every aspect space starts as the encoder's space and only training separates them.

    References:
        Bansal, *Scientific Document Representation Learning*, §5.3 (eq. 5.1), §5.4 (eq. 5.4).

    Inputs:
        +------------------------------------+--------+
        | examples                           | labels |
        +====================================+========+
        | :class:`AspectExample` (aspect,    | none   |
        | anchor, positives, negatives)      |        |
        +------------------------------------+--------+

    Example:
        ::

            encoder = Encoder.load("minilm", num_layers=2)
            texts = {pid: encoder.paper_text(p) for pid, p in corpus.papers.items()}
            examples, _ = sciaspect_examples(corpus.graph)
            objective = AspectContrastiveObjective(texts, encoder.dimension)
            train(encoder, examples, objective, paper_train_config(epochs=1))
    """

    def __init__(self, texts: Mapping[str, str], dimension: int, aspects: Sequence[str] = ASPECT_SPACES,
                 temperature: float = TEMPERATURE, alpha: float | None = None, similarity: str = "cosine"):
        super().__init__()
        unknown = set(aspects) - {*INTENTS, MISCELLANEOUS}
        if unknown or not aspects:
            raise ValueError(f"AspectContrastiveObjective: aspects must be among {(*INTENTS, MISCELLANEOUS)}, "
                             f"got {list(aspects)}")
        self.texts = texts
        self.aspects = tuple(aspects)
        self.heads = nn.ModuleDict({aspect: nn.Linear(dimension, dimension) for aspect in self.aspects})
        with torch.no_grad():
            for head in self.heads.values():
                head.weight.copy_(torch.eye(dimension))
                head.bias.zero_()
        self.loss = GeneralContrastiveLoss(temperature=temperature, similarity=similarity)
        self.hybrid = HybridLoss(self.loss, self.loss, alpha) if alpha is not None else None
        self.last_components: dict[str, float] = {}

    def project(self, embeddings: torch.Tensor, aspect: str) -> torch.Tensor:
        """Eq. 5.2: ``W_i d + b_i`` for embeddings ``[..., D]``."""
        if aspect not in self.heads:
            raise KeyError(f"no head for aspect {aspect!r}; this objective has {list(self.heads)}")
        return self.heads[aspect](embeddings)

    def forward(self, encoder, examples: Sequence[AspectExample]) -> torch.Tensor:
        """Mean over the instances of the aspect-space loss (plus the global loss for the hybrid)."""
        n_pos = max(len(e.positives) for e in examples)
        n_neg = max(len(e.negatives) for e in examples)
        n_glo = max(len(e.global_negatives) for e in examples) if self.hybrid is not None else 0
        ids, masks = [], {"pos": [], "neg": [], "glo": []}
        for e in examples:  # pad ragged groups with the anchor and mask the padding out
            if e.aspect not in self.heads:
                raise KeyError(f"instance of aspect {e.aspect!r} (anchor {e.query}) but heads are {list(self.heads)}")
            ids.append(e.query)
            for key, items, width in (("pos", e.positives, n_pos), ("neg", e.negatives, n_neg),
                                      ("glo", e.global_negatives if n_glo else [], n_glo)):
                ids += list(items) + [e.query] * (width - len(items))
                masks[key].append([True] * len(items) + [False] * (width - len(items)))
        embeddings = encoder([self.texts[i] for i in ids]).view(len(examples), 1 + n_pos + n_neg + n_glo, -1)
        device = embeddings.device
        pos_mask, neg_mask, glo_mask = (torch.tensor(masks[k], dtype=torch.bool, device=device).reshape(len(examples), width)
                                        for k, width in (("pos", n_pos), ("neg", n_neg), ("glo", n_glo)))
        local = embeddings.new_zeros(())
        for aspect in self.aspects:
            rows = [i for i, e in enumerate(examples) if e.aspect == aspect]
            if not rows:
                continue
            index = torch.tensor(rows, device=device)
            z = self.project(embeddings[index, :1 + n_pos + n_neg], aspect)
            value = self.loss(z[:, 0], z[:, 1:1 + n_pos], z[:, 1 + n_pos:],
                              positive_mask=pos_mask[index], negative_mask=neg_mask[index])
            local = local + value * len(rows) / len(examples)
        if self.hybrid is None:
            return local
        global_value = self.loss(embeddings[:, 0], embeddings[:, 1:1 + n_pos], embeddings[:, 1 + n_pos + n_neg:],
                                 positive_mask=pos_mask, negative_mask=glo_mask)
        total = self.hybrid(global_value, local)
        self.last_components = dict(self.hybrid.last_components)
        return total


# ------------------------------------------------------------------------------------------ training


#: Instances held out of every run as its probe: the loss before and after training is measured on them.
PROBE_SIZE = 8


@dataclass(frozen=True)
class Run:
    """One trained model: the sampler output it reads (``examples``, a key of the example sets), the objective
    (``"cl"``: SPECTERCL's eq. 2.6; ``"aspect"``: :class:`AspectContrastiveObjective`), τ and the hybrid's α."""

    examples: tuple[str, str]
    kind: str
    temperature: float = TEMPERATURE
    alpha: float | None = None


def split_probe(examples: Sequence, train_examples: int, seed: int, probe_size: int = PROBE_SIZE):
    """``(training instances, probe)``: a seeded permutation whose first ``probe_size`` instances are the probe,
    never trained on, and whose next ``train_examples`` (0: all the rest) are the training instances, in their
    original order. Fewer than ``probe_size + 1`` instances is an error: there would be no held-out probe.

    Shown in: notebooks/sciaspect.ipynb, Training: every model with the same budget.
    """
    if len(examples) <= probe_size:
        raise ValueError(f"split_probe: {len(examples)} instances cannot give a held-out probe of {probe_size} "
                         f"and a training set; sample more anchors")
    order = np.random.default_rng(seed).permutation(len(examples))
    probe, rest = order[:probe_size], order[probe_size:]
    if train_examples:
        rest = rest[:train_examples]
    return [examples[i] for i in sorted(rest)], [examples[i] for i in sorted(probe)]


def train_runs(runs: Mapping[tuple[str, str], Run], example_sets: Mapping[tuple[str, str], Sequence], base_encoder,
               texts: Mapping[str, str], config: TrainConfig, runs_folder: Path, *, train_examples: int, seed: int,
               resume: bool = False):
    """Train every run from a copy of ``base_encoder``; a run whose (examples, objective) another run already
    trained (τ = 0.05 is the 1p 5n row) shares that model. Each run checkpoints into ``runs_folder/<name>``.

    Returns ``(trained, losses, history, folders)``: ``{key: (encoder, objective)}``, one row per trained model with
    its instances, optimizer steps and the loss on its held-out probe before and after training, every optimizer
    step's loss, and ``{key: the saved model folder}`` (a sentence-transformers folder: ``sdr evaluate all --model``
    reads it).

    Shown in: notebooks/sciaspect.ipynb, Training: every model with the same budget.
    """
    import copy
    import re

    import pandas as pd

    from sdr.train import ContrastiveObjective, evaluate_loss, train

    trained, losses, histories, done, folders = {}, {}, [], {}, {}
    for key, run in runs.items():
        if run in done:
            trained[key], folders[key] = trained[done[run]], folders[done[run]]
            continue
        if run.kind not in ("cl", "aspect"):
            raise ValueError(f"run {key}: kind must be 'cl' or 'aspect', got {run.kind!r}")
        examples, probe = split_probe(example_sets[run.examples], train_examples, seed)
        encoder = copy.deepcopy(base_encoder)
        if run.kind == "cl":
            objective = ContrastiveObjective(texts, GeneralContrastiveLoss(temperature=run.temperature))
        else:
            order = [*ASPECT_SPACES, MISCELLANEOUS]
            aspects = sorted({e.aspect for e in example_sets[run.examples]}, key=order.index)
            objective = AspectContrastiveObjective(texts, encoder.dimension, aspects, temperature=run.temperature,
                                                   alpha=run.alpha)
        before = evaluate_loss(encoder, probe, objective)
        name = re.sub(r"[^a-z0-9]+", "-", " ".join(key).lower()).strip("-")
        result = train(encoder, examples, objective, config, output_dir=Path(runs_folder) / name, resume=resume)
        losses[key] = {"instances": len(examples), "optimizer steps": result.steps, "loss before": before,
                       "loss after": evaluate_loss(encoder, probe, objective)}
        histories.append(result.history.assign(model=" / ".join(key)))
        trained[key], folders[key] = (encoder, objective), result.model_dir
        done[run] = key
    return trained, pd.DataFrame(losses).T, pd.concat(histories, ignore_index=True), folders


@torch.no_grad()
def embedding_variants(objective: AspectContrastiveObjective, ids: Sequence[str],
                       embeddings: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """The embeddings one trained SciAspect model offers (Exp. 3.4 / 4.1), each ``{paper id: vector}``:

    ``"encoder"`` (the encoder alone, the thesis' inference embedding), one per aspect head in
    :data:`ASPECT_SPACES` (eq. 5.2), and ``"concat"`` (the three projections concatenated, eq. 5.3).

    Shown in: notebooks/sciaspect.ipynb, SciDocs: Tables 6.3–6.7.
    """
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if embeddings.shape[0] != len(ids):
        raise ValueError(f"embedding_variants: {len(ids)} ids for {embeddings.shape[0]} embeddings")
    device = next(objective.parameters()).device
    tensor = torch.from_numpy(embeddings).to(device)
    projected = {a: objective.project(tensor, a).float().cpu().numpy() for a in ASPECT_SPACES}
    variants = {"encoder": dict(zip(ids, embeddings))}
    variants.update({a: dict(zip(ids, projected[a])) for a in ASPECT_SPACES})
    variants["concat"] = dict(zip(ids, np.concatenate([projected[a] for a in ASPECT_SPACES], axis=1)))
    return variants


def csfcube_results(encoder, objective: AspectContrastiveObjective | None, papers: Mapping[str, Paper],
                    csfcube_dir: str | Path, max_length: int) -> dict[str, dict]:
    """CSFCube's evaluator output for every embedding one model offers, each paper read at ``max_length`` tokens
    (the Benchmarks chapter's length, so a leaderboard row compares with its untrained row read the same way).

    The papers are embedded once; :func:`embedding_variants` gives the encoder alone (``"encoder"``), each aspect
    head (eq. 5.2; a page reads head *i* on CSFCube's facet *i*) and the concatenated heads (``"concat"``, eq.
    5.3). ``objective=None`` (the untrained encoder) gives ``"encoder"`` only. Each value is
    :func:`sdr.evaluate.csfcube.evaluate` with per-query scores (``return_per_query=True``), ready for
    :func:`sdr.book.csfcube_per_query`. The encoder's own ``max_length`` is restored afterwards.

    Shown in: notebooks/sciaspect.ipynb, Do the aspect spaces capture CSFCube's facets?
    """
    from sdr.evaluate import csfcube

    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1:
        raise ValueError(f"csfcube_results: max_length must be a positive number of tokens, got {max_length!r}")
    ids = sorted(papers)
    if not ids:
        raise ValueError(f"csfcube_results: no CSFCube papers to embed (from {csfcube_dir})")
    previous, encoder.max_length = encoder.max_length, max_length
    try:
        vectors = encoder.encode_papers([papers[pid] for pid in ids], progress=False)
    finally:
        encoder.max_length = previous
    if objective is None:
        variants = {"encoder": dict(zip(ids, np.asarray(vectors, dtype=np.float32)))}
    else:
        variants = embedding_variants(objective, ids, vectors)
    return {name: csfcube.evaluate(csfcube_dir, embeddings=by_id, return_per_query=True)
            for name, by_id in variants.items()}


SCIDOCS_WITHOUT_RECOMM = ("mag_f1", "mesh_f1", "coview_map", "coview_ndcg", "coread_map", "coread_ndcg",
                          "cite_map", "cite_ndcg", "cocite_map", "cocite_ndcg")
"""The ten SciDocs metrics other than the recommendations task (whose ranker the chapter trains only where its
``recommendations`` parameter says so): ``avg10`` compares every row, ours and the thesis'."""


SCIDOCS_PROXIMITY = SCIDOCS_WITHOUT_RECOMM[2:]
"""The eight ranking metrics of SciDocs (co-view, co-read, cite, co-cite; MAP and nDCG): the tasks whose relevance
follows citations and co-views, the signal SPECTERCL trains on."""


def average_without_recomm(table):
    """``avg10``: the mean of the ten SciDocs metrics other than recommendations, per row of a DataFrame."""
    return table[list(SCIDOCS_WITHOUT_RECOMM)].mean(axis=1, skipna=False)
