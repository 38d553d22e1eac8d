"""SciDocs recommendations: the official feed-forward click ranker, re-implemented in PyTorch.

Matches ``allenai/scidocs`` without allennlp 0.9:

* ``recommender/simclick_data_reader.py`` — the 11 features of a (query, candidate) pair, in the
  order ``simpaper_recommender.py`` concatenates them: author Jaccard, position / 10, title-token
  Jaccard, cosine of the embeddings (zero vector when missing), citation overlap (Jaccard of
  ``cited_by``), reference overlap (Jaccard of ``references``), candidate cites query, query cites
  candidate, oldness ``clip((2020 − year)/20, ±1)``, relative oldness ``clip((year_q − year_c)/20,
  ±1)``, ``log(1 + #cited_by)/10``.
* ``recommender/simclick_triplet_sampler.py`` — per logged line, the clicked paper against each
  other shown paper (at most ``max_results_per_query = 10`` triplets).
* ``recommender/simpaper_recommender.py`` and ``experiment_configs/train_similar_papers_model.json``
  — ``Linear(11, 50) → ReLU → Dropout(0.4) → Linear(50, 1) → Sigmoid``, ``MarginRankingLoss(margin
  = 0.1)`` divided by the (mean-normalised) propensity of the clicked position, Adadelta (ρ = 0.95),
  gradient values clipped to ±5, batch 128, 5 epochs, seed 7, the epoch with the lowest validation
  loss kept.
* ``recomm_click_eval.py`` — each test line ranks the clicked paper against the other shown
  papers; ``adj-NDCG`` = Σ w·1/log2(2 + #ranked above) / Σ w and ``adj-P@1`` = Σ w·[#above = 0] / Σ w
  with w = 1 / propensity(clicked position); ties count ½ above.  × 100, 2 decimals.

**The position bug.**  ``text_to_instance`` first sets ``pos_position = position / 10`` and then,
a few lines below, overwrites it with ``ArrayField(numpy.array([0]))`` (``neg_position`` likewise).
So the official ranker never sees the position feature, and in the loss the propensity index
``round(0 · 10 − 1) = −1`` picks the *last* position's propensity for every example — the
inverse-propensity weighting degenerates to a constant.  ``position_bug=True`` (the default)
reproduces this, so numbers compare with the published ones; ``position_bug=False`` feeds the
real position and weights each example by its clicked position's propensity, as intended.
The evaluation weights (``adj``) use the real clicked position in both modes, as the official
evaluation does.

Official results are not bit-reproducible (the README says so: PyTorch randomness); this version is
deterministic for a seed on CPU.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdr.evaluate.embeddings import MissingEmbeddings
from sdr.evaluate.scidocs_layout import ScidocsPaths, load_embeddings
from sdr.jsonio import InputError, is_number, iter_lines, load_json

FEATURES = (
    "author_match", "position", "title_match", "embedding_cosine", "citation_overlap",
    "reference_overlap", "candidate_cites_query", "query_cites_candidate", "oldness",
    "relative_oldness", "number_citations",
)
"""The 11 numeric features, in the order of ``torch.cat([pos_author_match, pos_position, …])``."""

MAX_RESULTS_PER_QUERY = 10
BLANK = "<blank>"


@dataclass
class RankerConfig:
    """Hyper-parameters of ``train_similar_papers_model.json``."""

    hidden: int = 50
    dropout: float = 0.4
    margin: float = 0.1
    batch_size: int = 128
    epochs: int = 5
    grad_clipping: float = 5.0
    rho: float = 0.95
    seed: int = 7
    max_results_per_query: int = MAX_RESULTS_PER_QUERY


# ----------------------------------------------------------------------------------------- readers


def read_clicks(path: str | Path) -> list[tuple[str, str, list[str]]]:
    """Read a recomm split: header line, then ``query_id,clicked_id,"shown_1,…,shown_k"``.

    A line whose clicked paper is not among the shown ones raises ``ValueError`` with file and line
    (the official reader would stop on ``list.index``).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: recommendations split not found")
    rows = []
    what = "a recommendations split (header, then query_id,clicked_id,\"shown ids\")"
    for line_number, line in iter_lines(path, what):  # strict UTF-8, a bad byte names its line
        line = line.rstrip("\r\n")
        if line_number == 1 or not line.strip():  # the first line is the header
            continue
        fields = next(csv.reader([line], delimiter=",", quotechar='"'))
        if len(fields) != 3:
            raise ValueError(f"{path}:{line_number}: expected 'query_id,clicked_id,\"id,id,…\"', got {fields}")
        query, clicked, shown = fields[0], fields[1], fields[2].strip().split(",")
        if clicked not in shown:
            raise ValueError(f"{path}:{line_number}: clicked paper {clicked!r} is not among the shown papers")
        rows.append((query, clicked, shown))
    return rows


def read_propensity(path: str | Path) -> np.ndarray:
    """``{"scores": [...]}`` normalised to mean 1 (``adj * len / sum``), as model and evaluation do."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: propensity scores not found")
    what = 'propensity scores {"scores": [positive numbers]}'
    payload = load_json(path, what, finite=True)
    values = payload.get("scores") if isinstance(payload, dict) else None
    if not isinstance(values, list) or not all(is_number(v) for v in values):
        raise InputError(f"{path}: expected {what} (no booleans, strings or null)")
    scores = np.asarray(values, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0 or np.any(scores <= 0):
        raise ValueError(f"{path}: 'scores' must be a non-empty list of positive numbers")
    return scores * len(scores) / scores.sum()


def read_paper_features(path: str | Path) -> dict[str, dict]:
    """``paper_metadata_recomm.json``: ``{pid: {"title", "authors", "references", "cited_by", "year", …}}``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: recommendations paper metadata not found")
    papers = load_json(path, "recommendation paper metadata {paper id: {authors, references, cited_by, year}}")
    if not isinstance(papers, dict):
        raise ValueError(f"{path}: expected a JSON object keyed by paper id")
    for pid, record in papers.items():
        absent = [key for key in ("authors", "references", "cited_by", "year") if key not in record]
        if absent:
            raise ValueError(f"{path}: paper {pid!r} lacks {absent} (needed by the ranker's features)")
    return papers


# ---------------------------------------------------------------------------------------- features


def jaccard(a, b) -> float:
    """``|A ∩ B| / |A ∪ B|``, 0 for two empty sets (``SimClickDataReader.jaccard``)."""
    a, b = set(a), set(b)
    union = a | b
    return len(a & b) / len(union) if union else 0.0


class PairFeatures:
    """The reader's features of (query, candidate) pairs, computed once per pair (``SimClickDataReader``)."""

    def __init__(self, papers: Mapping[str, dict], embeddings: Mapping[str, np.ndarray],
                 missing: MissingEmbeddings | None = None):
        self.papers = papers
        self.embeddings = embeddings
        self.dimension = len(next(iter(embeddings.values())))
        self.missing = missing or MissingEmbeddings("scidocs recomm")
        self._tokens: dict[str, list[str]] = {}
        self._tokenizer = None

    def title_tokens(self, pid: str) -> list[str]:
        """spaCy English tokens of the title (allennlp's ``WordTokenizer``), ``<blank>`` when missing."""
        if pid not in self._tokens:
            title = (self.papers.get(pid) or {}).get("title") or BLANK
            if self._tokenizer is None:
                import spacy

                self._tokenizer = spacy.blank("en").tokenizer
            self._tokens[pid] = [token.text for token in self._tokenizer(title)]
        return self._tokens[pid]

    def _overlap(self, source: str, candidate: str, key: str) -> float:
        if source not in self.papers or candidate not in self.papers:
            return 0.0
        return jaccard(self.papers[source][key], self.papers[candidate][key])

    def _cites(self, source: str, candidate: str) -> float:
        """1 if ``candidate`` cites ``source`` per either paper's lists (``candidate_cites_source``)."""
        source_cited = source in self.papers and candidate in self.papers[source]["cited_by"]
        candidate_cites = candidate in self.papers and source in self.papers[candidate]["references"]
        return float(source_cited or candidate_cites)

    def _year(self, pid: str) -> float | None:
        year = (self.papers.get(pid) or {}).get("year")
        try:
            return None if year is None else float(year)
        except (TypeError, ValueError):
            return None

    def _oldness(self, candidate: str) -> float:
        year = self._year(candidate)
        return 0.0 if year is None else max(-1.0, min(1.0, (2020.0 - year) / 20.0))

    def _relative_oldness(self, source: str, candidate: str) -> float:
        source_year, candidate_year = self._year(source), self._year(candidate)
        if source_year is None or candidate_year is None:
            return 0.0
        return max(-1.0, min(1.0, (source_year - candidate_year) / 20.0))

    def _number_citations(self, candidate: str) -> float:
        if candidate not in self.papers:
            return 0.0
        return math.log(len(set(self.papers[candidate]["cited_by"])) + 1) / 10.0

    def _title_match(self, source: str, candidate: str) -> float:
        a, b = self.title_tokens(source), self.title_tokens(candidate)
        # The official check compares allennlp Tokens with a str; the intent (two missing titles
        # do not match) is what is implemented here.
        if a == [BLANK] and b == [BLANK]:
            return 0.0
        return jaccard(a, b)

    def vector(self, pid: str) -> np.ndarray:
        """The paper's embedding, or zeros when missing (``valueOrZeros``); missing ids are counted."""
        if self.missing.check([pid], self.embeddings):
            return np.asarray(self.embeddings[pid], dtype=np.float32)
        return np.zeros(self.dimension, dtype=np.float32)

    def static(self, source: str, candidate: str) -> list[float]:
        """The 10 features that do not depend on position or the embeddings' cosine (slot 1 and 3 = 0)."""
        return [
            self._overlap(source, candidate, "authors"), 0.0, self._title_match(source, candidate), 0.0,
            self._overlap(source, candidate, "cited_by"), self._overlap(source, candidate, "references"),
            self._cites(source, candidate), self._cites(candidate, source), self._oldness(candidate),
            self._relative_oldness(source, candidate), self._number_citations(candidate),
        ]

    def matrix(self, pairs: list[tuple[str, str]], positions: np.ndarray, position_bug: bool) -> np.ndarray:
        """Features ``[n_pairs, 11]``; the cosine is computed with torch as the official model does."""
        import torch

        features = np.array([self.static(s, c) for s, c in pairs], dtype=np.float32).reshape(-1, len(FEATURES))
        if not position_bug:
            features[:, 1] = np.asarray(positions, dtype=np.float32) / 10.0
        if pairs:
            queries = torch.from_numpy(np.stack([self.vector(s) for s, _ in pairs]))
            candidates = torch.from_numpy(np.stack([self.vector(c) for _, c in pairs]))
            features[:, 3] = torch.nn.functional.cosine_similarity(queries, candidates, dim=1).numpy()
        return features


# --------------------------------------------------------------------------------------- the model


def build_ranker(config: RankerConfig | None = None):
    """The ``FeedForward`` of the config: 11 → 50 (ReLU, dropout 0.4) → 1 (sigmoid)."""
    import torch

    config = config or RankerConfig()
    return torch.nn.Sequential(
        torch.nn.Linear(len(FEATURES), config.hidden), torch.nn.ReLU(), torch.nn.Dropout(config.dropout),
        torch.nn.Linear(config.hidden, 1), torch.nn.Sigmoid(),
    )


@dataclass
class Triplets:
    """Training examples: features of the clicked and of the other paper, and the loss weight."""

    positive: np.ndarray
    negative: np.ndarray
    propensity: np.ndarray


def make_triplets(rows, features: PairFeatures, propensity: np.ndarray, position_bug: bool,
                  max_results_per_query: int = MAX_RESULTS_PER_QUERY) -> Triplets:
    """``SimClickTripletSampler.generate_triplets`` for every line, vectorised into arrays."""
    pos_pairs, pos_positions, neg_pairs, neg_positions = [], [], [], []
    for query, clicked, shown in rows:
        clicked_position = shown.index(clicked) + 1
        count = 0
        for position, other in enumerate(shown, start=1):
            if other != clicked:
                pos_pairs.append((query, clicked))
                pos_positions.append(clicked_position)
                neg_pairs.append((query, other))
                neg_positions.append(position)
                count += 1
            if count == max_results_per_query:
                break
    pos_positions = np.asarray(pos_positions, dtype=np.int64)
    # Official: propensity index round(pos_position * 10 - 1); with the bug pos_position is 0 → index -1.
    index = np.full(len(pos_positions), -1) if position_bug else pos_positions - 1
    if len(index) and index.max(initial=-1) >= len(propensity):
        raise ValueError(f"a clicked position exceeds the {len(propensity)} propensity scores")
    return Triplets(
        features.matrix(pos_pairs, pos_positions, position_bug),
        features.matrix(neg_pairs, np.asarray(neg_positions), position_bug),
        propensity[index].astype(np.float32) if len(index) else np.zeros(0, dtype=np.float32),
    )


def _loss(model, triplets_batch, margin: float):
    import torch

    positive, negative, propensity = triplets_batch
    pos_score, neg_score = model(positive), model(negative)
    loss = torch.nn.functional.margin_ranking_loss(
        pos_score, neg_score, torch.ones_like(pos_score), margin=margin, reduction="none"
    )
    return torch.mean(loss / propensity.view(-1, 1))


def train_ranker(train: Triplets, val: Triplets | None, config: RankerConfig | None = None,
                 device: str = "cpu", progress: bool = True):
    """Train as ``allennlp train`` with the official config; returns ``(model, history)``.

    The weights of the epoch with the lowest validation loss are kept (allennlp's default
    ``validation_metric = -loss``); without validation data, the last epoch's.
    """
    import copy

    import torch
    from tqdm.auto import tqdm

    config = config or RankerConfig()
    torch.manual_seed(config.seed)
    model = build_ranker(config).to(device)
    for parameter in model.parameters():
        # allennlp's grad_clipping clamps gradient *values* (not the norm) through hooks.
        parameter.register_hook(lambda grad: grad.clamp(-config.grad_clipping, config.grad_clipping))
    optimizer = torch.optim.Adadelta(model.parameters(), rho=config.rho)
    tensors = [torch.from_numpy(a).to(device) for a in (train.positive, train.negative, train.propensity)]
    val_tensors = ([torch.from_numpy(a).to(device) for a in (val.positive, val.negative, val.propensity)]
                   if val is not None and len(val.propensity) else None)
    generator = torch.Generator().manual_seed(config.seed)
    history = []
    best_state, best_loss = None, math.inf
    n = len(train.propensity)
    if n == 0:
        raise ValueError("recommendations: no training triplets (is recomm/train.csv empty?)")
    for epoch in tqdm(range(config.epochs), desc="recomm ranker epochs", disable=not progress):
        model.train()
        order = torch.randperm(n, generator=generator).to(device)
        total, batches = 0.0, 0
        for start in range(0, n, config.batch_size):
            batch = [t[order[start:start + config.batch_size]] for t in tensors]
            optimizer.zero_grad()
            loss = _loss(model, batch, config.margin)
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
            batches += 1
        record = {"epoch": epoch, "train_loss": total / batches}
        if val_tensors is not None:
            model.eval()
            with torch.no_grad():
                val_loss = float(_loss(model, val_tensors, config.margin))
            record["val_loss"] = val_loss
            if val_loss < best_loss:
                best_loss, best_state = val_loss, copy.deepcopy(model.state_dict())
        history.append(record)
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return model, history


def ranking_metrics(rows, scores: list[np.ndarray], propensity: np.ndarray) -> dict[str, float]:
    """``evaluate_ranking_performance``: (adjusted) accuracy, nDCG, MRR and P@1 of the clicked paper.

    ``scores[i]`` holds the model's score of every shown paper of line ``i`` in shown order.
    """
    sums = dict.fromkeys(("correct", "incorrect", "ndcg", "mrr", "p1", "adj", "adj_correct",
                          "adj_incorrect", "adj_ndcg", "adj_mrr", "adj_p1"), 0.0)
    for (query, clicked, shown), line_scores in zip(rows, scores):
        clicked_index = shown.index(clicked)
        pos_score = line_scores[clicked_index]
        others = np.array([s for i, (pid, s) in enumerate(zip(shown, line_scores)) if pid != clicked])
        ties = 0.5 * float(np.sum(others == pos_score))
        above = float(np.sum(others > pos_score)) + ties
        below = float(np.sum(others < pos_score)) + ties
        ndcg = 1.0 / math.log2(2 + above)
        weight = 1.0 / propensity[clicked_index]
        first = 1.0 if above == 0 else 0.0
        sums["correct"] += below
        sums["incorrect"] += above
        sums["ndcg"] += ndcg
        sums["mrr"] += 1.0 / (1.0 + above)
        sums["p1"] += first
        sums["adj"] += weight
        sums["adj_ndcg"] += weight * ndcg
        sums["adj_correct"] += weight * below
        sums["adj_incorrect"] += weight * above
        sums["adj_mrr"] += weight / (1.0 + above)
        sums["adj_p1"] += weight * first
    n = len(rows)
    if n == 0:
        raise ValueError("recommendations: no test lines")
    pairs = sums["correct"] + sums["incorrect"]
    adj_pairs = sums["adj_correct"] + sums["adj_incorrect"]
    return {
        "accuracy": sums["correct"] / pairs if pairs else float("nan"),
        "ndcg": sums["ndcg"] / n,
        "mrr": sums["mrr"] / n,
        "Rprec/P@1": sums["p1"] / n,
        "Adj-accuracy": sums["adj_correct"] / adj_pairs if adj_pairs else float("nan"),
        "Adj-ndcg": sums["adj_ndcg"] / sums["adj"],
        "Adj-mrr": sums["adj_mrr"] / sums["adj"],
        "Adj-Rprec/P@1": sums["adj_p1"] / sums["adj"],
    }


def score_lines(model, rows, features: PairFeatures, position_bug: bool, device: str = "cpu") -> list[np.ndarray]:
    """The model's score of every shown paper of every line (positions are the shown ones)."""
    import torch

    pairs, positions, lengths = [], [], []
    for query, _clicked, shown in rows:
        pairs += [(query, pid) for pid in shown]
        positions += list(range(1, len(shown) + 1))
        lengths.append(len(shown))
    matrix = torch.from_numpy(features.matrix(pairs, np.asarray(positions), position_bug)).to(device)
    with torch.no_grad():
        flat = model(matrix).view(-1).cpu().numpy() if len(pairs) else np.zeros(0, dtype=np.float32)
    return np.split(flat, np.cumsum(lengths)[:-1]) if lengths else []


def evaluate(
    data_dir: str | Path,
    embeddings: Mapping[str, np.ndarray] | str | Path,
    val_or_test: str = "test",
    position_bug: bool = True,
    config: RankerConfig | None = None,
    device: str = "cpu",
    progress: bool = True,
    missing: MissingEmbeddings | None = None,
) -> dict:
    """Train the ranker on ``recomm/train.csv`` and score ``val_or_test`` (``get_recomm_metrics``).

    Returns ``{"recomm": {"adj-NDCG", "adj-P@1"}, "details": {all eight metrics as fractions,
    "history", "train_triplets", "position_bug"}, "missing_embeddings": {...}}``.  With
    ``val_or_test="val"`` the official code evaluates on val and trains without validation.
    """
    if val_or_test not in ("val", "test"):
        raise ValueError(f"val_or_test must be 'val' or 'test', got {val_or_test!r}")
    device = _resolve_device(device)
    paths = ScidocsPaths(Path(data_dir))
    embeddings = load_embeddings(embeddings)
    own_missing = missing is None
    missing = missing or MissingEmbeddings("scidocs recomm")
    propensity = read_propensity(paths.propensity_scores)
    features = PairFeatures(read_paper_features(paths.metadata_recomm), embeddings, missing)
    train_rows = read_clicks(paths.recomm("train"))
    val_rows = read_clicks(paths.recomm("val")) if val_or_test == "test" and paths.recomm("val").exists() else []
    test_rows = read_clicks(paths.recomm(val_or_test))
    train = make_triplets(train_rows, features, propensity, position_bug)
    val = make_triplets(val_rows, features, propensity, position_bug) if val_rows else None
    with _single_thread():
        model, history = train_ranker(train, val, config, device=device, progress=progress)
        scores = score_lines(model, test_rows, features, position_bug, device)
    metrics = ranking_metrics(test_rows, scores, propensity)
    if own_missing:
        missing.warn()
    return {
        "recomm": {"adj-NDCG": float(np.round(100 * metrics["Adj-ndcg"], 2)),
                   "adj-P@1": float(np.round(100 * metrics["Adj-Rprec/P@1"], 2))},
        "details": {**metrics, "history": history, "train_triplets": int(len(train.propensity)),
                    "test_lines": len(test_rows), "position_bug": position_bug},
        "missing_embeddings": missing.report(),
    }


class _single_thread:
    """One intra-op thread while the tiny ranker runs: its 11×50 matrices gain nothing from more,
    and on a shared CPU thread hand-offs made each step ~15× slower (measured)."""

    def __enter__(self):
        import torch

        self._threads = torch.get_num_threads()
        torch.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        import torch

        torch.set_num_threads(self._threads)
        return False


def _resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device
