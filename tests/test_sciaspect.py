"""Tests of :mod:`sdr.methods.sciaspect` (thesis Exp. 2–5) and the Semantic Scholar intents reader.

The sampler tests use a hand-built graph whose pools are worked out in the comments; the loss test
compares eq. 5.1 with a value computed by hand; the heads' test trains through :func:`sdr.train.train`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from sdr.corpus import MISCELLANEOUS, CitationGraph, Paper, read_s2_citations
from sdr.methods import sciaspect as sa
from sdr.synthetic import make_corpus
from sdr.train import StopTraining, TrainConfig, train

EASY = [f"r{i}" for i in range(12)]  # unlinked papers: the only easy-negative candidates


def hand_graph() -> CitationGraph:
    """Anchor Q and a second anchor F.

    Q's links: Q→A method; Q→B background; C→Q result; Q→D method+background; Q→E no intent (misc);
    Q→Q (self-loop, method); F→Q background. Second hop (references of Q's references): A→X method,
    B→Y result, D→Z background, A→W result, D→W method. F has only a background link: it is no kept anchor.
    """
    graph = CitationGraph()
    graph.add("Q", "A", ["method"])
    graph.add("Q", "B", ["background"])
    graph.add("C", "Q", ["result"])
    graph.add("Q", "D", ["method", "background"])
    graph.add("Q", "E", [])
    graph.add("Q", "Q", ["method"])
    graph.add("F", "Q", ["background"])
    graph.add("A", "X", ["method"])
    graph.add("B", "Y", ["result"])
    graph.add("D", "Z", ["background"])
    graph.add("A", "W", ["result"])
    graph.add("D", "W", ["method"])
    return graph


CANDIDATES = ["Q", "A", "B", "C", "D", "E", "F", "X", "Y", "Z", "W", *EASY]
# Positives: papers linked in the aspect (Q itself excluded as a self-citation).
POSITIVES = {"method": {"A", "D"}, "background": {"B", "D", "F"}, "result": {"C"}, MISCELLANEOUS: {"E"}}
# L1 hard negatives: linked in another (non-misc) aspect, minus the aspect's positives, minus the anchors (F).
HARD_L1 = {"method": {"B", "C"}, "background": {"A", "C"}, "result": {"A", "B", "D"}, MISCELLANEOUS: set()}
# L2 hard negatives: references of references reached through another aspect and never through this one.
HARD_L2 = {"method": {"Y", "Z"}, "background": {"X", "Y", "W"}, "result": {"X", "Z"}}
LINKED = {"Q", "A", "B", "C", "D", "E", "F", "X", "Y", "Z", "W"}


def test_aspect_pools_follow_the_thesis_rules():
    graph = hand_graph()
    pools = sa.aspect_pools(graph, "Q", anchors={"F"})
    assert {a: set(p) for a, p in pools.positives.items()} == POSITIVES
    assert {a: set(p) for a, p in pools.hard.items()} == HARD_L1
    assert pools.self_citations == ["Q"]
    assert pools.linked == LINKED
    l2 = sa.aspect_pools(graph, "Q", anchors={"F"}, level="l2")
    assert {a: set(l2.hard[a]) for a in sa.ASPECT_SPACES} == HARD_L2
    assert l2.hard[MISCELLANEOUS] == []
    # without the anchor exclusion F (linked in background) is a hard negative of method and result
    free = sa.aspect_pools(graph, "Q")
    assert "F" in free.hard["method"] and "F" in free.hard["result"]


@pytest.mark.parametrize("seed", range(5))
def test_sciaspect_sampler_exclusion_rules(seed):
    graph = hand_graph()
    examples, report = sa.sciaspect_examples(
        graph, variant="1 positive, n negatives (w/ misc aspect)", candidates=CANDIDATES, query_ids=["Q", "F"],
        seed=seed, progress=False, verbose=False)
    # F lacks a method and a result positive: skipped, and counted
    assert report.skipped["no positive in every aspect"] == 1
    assert {e.query for e in examples} == {"Q"}
    assert sorted(e.aspect for e in examples) == sorted([*sa.ASPECT_SPACES, MISCELLANEOUS])
    for e in examples:
        assert len(e.positives) == 1 and set(e.positives) <= POSITIVES[e.aspect]
        hard, easy = e.negatives[:e.n_hard], e.negatives[e.n_hard:]
        # at most 10 hard negatives: the whole pool here; the miscellaneous aspect has easy negatives only
        assert set(hard) == HARD_L1[e.aspect]
        assert len(easy) == 3 and set(easy) <= set(EASY)
        assert not set(e.negatives) & POSITIVES[e.aspect]
        assert "F" not in e.negatives  # an anchor is never a hard negative
    assert report.collisions == 0


def test_l2_and_hybrid_samplers():
    graph = hand_graph()
    kwargs = dict(candidates=CANDIDATES, query_ids=["Q", "F"], progress=False, verbose=False)
    for seed in range(3):
        examples, _ = sa.sciaspect_l2_examples(graph, "SciAspect L2 negatives (3 hard negatives, 3 easy negatives)",
                                               seed=seed, **kwargs)
        for e in examples:
            hard, easy = e.negatives[:e.n_hard], e.negatives[e.n_hard:]
            assert set(hard) <= HARD_L2[e.aspect] and len(hard) == min(3, len(HARD_L2[e.aspect]))
            assert len(e.negatives) == 6 and set(easy) <= set(EASY)  # hard shortfall filled with easy ones
    easy_only, _ = sa.sciaspect_l2_examples(graph, "SciAspect 1 positive 3 easy negatives", **kwargs)
    assert all(e.n_hard == 0 and set(e.negatives) <= set(EASY) for e in easy_only)
    hybrid, _ = sa.sciaspect_hybrid_examples(graph, **kwargs)
    for e in hybrid:
        assert set(e.negatives) == HARD_L1[e.aspect]  # up to 5 local negatives: all of them here
        # global negatives: the references of references (X, Y, Z, W), filled up to 5 with easy ones
        assert {"X", "Y", "Z", "W"} <= set(e.global_negatives) and len(e.global_negatives) == 5


def test_samplers_are_deterministic_and_bad_input_is_refused():
    corpus = make_corpus(n_papers=120, seed=3, p_no_intent=0.1, with_sections=False)
    first, _ = sa.sciaspect_examples(corpus.graph, seed=1, progress=False, verbose=False)
    again, _ = sa.sciaspect_examples(corpus.graph, seed=1, progress=False, verbose=False)
    assert first and first == again
    with pytest.raises(ValueError, match="unknown SciAspect variant"):
        sa.sciaspect_examples(corpus.graph, variant="7 positives")
    with pytest.raises(ValueError, match="no edges"):
        sa.aspect_examples(CitationGraph())
    with pytest.raises(ValueError, match="unknown SPECTERCL variant"):
        sa.specter_cl_examples(corpus.graph, variant="3p3n")


class LookupEncoder(nn.Module):
    """A stand-in encoder: each text maps to a fixed vector (no parameters to train)."""

    def __init__(self, vectors: dict[str, list[float]]):
        super().__init__()
        self.vectors = {k: torch.tensor(v, dtype=torch.float32) for k, v in vectors.items()}

    def forward(self, texts):
        return torch.stack([self.vectors[t] for t in texts])


def _cos(u, v):
    return sum(a * b for a, b in zip(u, v)) / math.sqrt(sum(a * a for a in u) * sum(b * b for b in v))


def _project(weight, bias, d):
    return [sum(w * x for w, x in zip(row, d)) + b for row, b in zip(weight, bias)]


def test_aspect_loss_matches_a_hand_computed_value():
    vectors = {"q": [1.0, 0.0], "p": [0.6, 0.8], "n1": [0.0, 1.0], "n2": [-1.0, 0.5],
               "q2": [0.2, 0.9], "p2": [1.0, 1.0]}
    encoder = LookupEncoder(vectors)
    objective = sa.AspectContrastiveObjective({k: k for k in vectors}, dimension=2, temperature=0.5)
    weight, bias = [[2.0, 0.0], [1.0, 1.0]], [0.5, -1.0]
    with torch.no_grad():
        objective.heads["method"].weight.copy_(torch.tensor(weight))
        objective.heads["method"].bias.copy_(torch.tensor(bias))
    method = sa.AspectExample("method", "q", ["p"], ["n1", "n2"], n_hard=1)
    # the method head: z = W d + b, then eq. 5.1 with one positive and two negatives, tau = 0.5
    z = {k: _project(weight, bias, vectors[k]) for k in ("q", "p", "n1", "n2")}
    scores = [_cos(z["q"], z[k]) / 0.5 for k in ("p", "n1", "n2")]
    expected_method = -(scores[0] - math.log(sum(math.exp(s) for s in scores)))
    assert objective(encoder, [method]).item() == pytest.approx(expected_method, rel=1e-5)
    # a background instance uses its own head (still the identity): plain cosine of the encoder vectors
    background = sa.AspectExample("background", "q2", ["p2"], ["n1"], n_hard=1)
    s = [_cos(vectors["q2"], vectors[k]) / 0.5 for k in ("p2", "n1")]
    expected_background = -(s[0] - math.log(math.exp(s[0]) + math.exp(s[1])))
    both = objective(encoder, [method, background]).item()
    assert both == pytest.approx((expected_method + expected_background) / 2, rel=1e-5)
    # the hybrid: alpha * global (encoder space, same positive, global negatives) + (1 - alpha) * local
    hybrid = sa.AspectContrastiveObjective({k: k for k in vectors}, dimension=2, temperature=0.5, alpha=0.7)
    example = sa.AspectExample("background", "q2", ["p2"], ["n1"], n_hard=1, global_negatives=["n2"])
    g = [_cos(vectors["q2"], vectors[k]) / 0.5 for k in ("p2", "n2")]
    expected_global = -(g[0] - math.log(math.exp(g[0]) + math.exp(g[1])))
    assert hybrid(encoder, [example]).item() == pytest.approx(0.7 * expected_global + 0.3 * expected_background,
                                                              rel=1e-5)


def test_embedding_variants_project_and_concatenate():
    objective = sa.AspectContrastiveObjective({}, dimension=3)
    with torch.no_grad():
        objective.heads["result"].weight.mul_(2.0)
    vectors = np.arange(6, dtype=np.float32).reshape(2, 3)
    variants = sa.embedding_variants(objective, ["a", "b"], vectors)
    assert set(variants) == {"encoder", *sa.ASPECT_SPACES, "concat"}
    np.testing.assert_allclose(variants["method"]["b"], vectors[1])  # identity at the start
    np.testing.assert_allclose(variants["result"]["b"], 2 * vectors[1])
    np.testing.assert_allclose(variants["concat"]["a"], np.concatenate([vectors[0], vectors[0], 2 * vectors[0]]))


# ------------------------------------------------------------------------ heads through the trainer

PAPERS = {
    "q": "Graph neural networks for citation recommendation.",
    "m": "Message passing layers over citation graphs.",
    "b": "A survey of scholarly recommendation.",
    "r": "Recommendation accuracy on ACL anthology benchmarks.",
    "x": "Protein structure prediction with attention.",
    "y": "Monetary policy and inflation expectations.",
    "z": "Dark matter halos in cosmological simulations.",
}
EXAMPLES = [
    sa.AspectExample("method", "q", ["m"], ["b", "r", "x"], n_hard=2),
    sa.AspectExample("background", "q", ["b"], ["m", "r", "y"], n_hard=2),
    sa.AspectExample("result", "q", ["r"], ["m", "b", "z"], n_hard=2),
    sa.AspectExample("method", "m", ["q"], ["y", "z"], n_hard=0),
]


def _heads(objective) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in objective.state_dict().items()}


def test_heads_are_trained_saved_and_resumed(fresh_tiny_encoder, tmp_path):
    config = dict(epochs=2, batch_size=2, accumulation_steps=1, learning_rate=1e-2, warmup_steps=1,
                  schedule="cosine", seed=0, checkpoint_every=1, progress=False)

    def run(output_dir, resume=False, stop_at=None):
        encoder = fresh_tiny_encoder()
        objective = sa.AspectContrastiveObjective(PAPERS, encoder.dimension)

        def stop(row):
            if stop_at is not None and row["step"] == stop_at:
                raise StopTraining

        try:
            result = train(encoder, EXAMPLES, objective, TrainConfig(**config), output_dir=output_dir,
                           resume=resume, callback=stop)
        except StopTraining:
            return encoder, objective, None
        return encoder, objective, result

    _, whole, result = run(tmp_path / "whole")
    start = sa.AspectContrastiveObjective(PAPERS, 384)
    assert not torch.equal(whole.heads["method"].weight.cpu(), start.heads["method"].weight), "heads not trained"
    saved = torch.load(result.model_dir / "objective.pt", map_location="cpu", weights_only=True)
    reloaded = sa.AspectContrastiveObjective(PAPERS, 384)
    reloaded.load_state_dict(saved)
    for key, value in _heads(whole).items():
        assert torch.equal(reloaded.state_dict()[key].cpu(), value.cpu()), f"objective.pt differs in {key}"

    run(tmp_path / "cut", stop_at=2)
    _, resumed, resumed_result = run(tmp_path / "cut", resume=True)
    assert resumed_result.resumed_from_step == 2
    for key, value in _heads(whole).items():
        assert torch.equal(_heads(resumed)[key].cpu(), value.cpu()), f"resume changed head {key}"


# ------------------------------------------------------------------------ Semantic Scholar reader

FIXTURE = "data/fixtures/s2_citations"


def test_read_s2_citations_fixture():
    from pathlib import Path

    graph, papers, report = read_s2_citations(Path(__file__).resolve().parents[1] / FIXTURE)
    a1, a2 = "a1000000000000000000000000000000000000a1", "a2000000000000000000000000000000000000a2"
    r1, r3 = "r1000000000000000000000000000000000000r1", "r3000000000000000000000000000000000000r3"
    assert len(graph) == 7 and report.read == 8 and report.kept == 7
    assert report["references: other paper has no paperId"] == 1  # a null paperId: skipped and counted
    assert graph.edge(a1, r1).intents == ("method",) and graph.edge(a1, r1).count("method") == 2
    assert graph.edge(a2, r1).count("method") == 3  # one context count per context
    assert graph.edge(a1, r3).intents == () and graph.edge(a1, r3).aspects == (MISCELLANEOUS,)
    assert graph.edge(a2, a1).aspects == (MISCELLANEOUS,)  # intents: null in a citations page
    assert set(graph.edge(a1, "r2000000000000000000000000000000000000r2").intents) == {"background", "result"}
    assert graph.edge("c1000000000000000000000000000000000000c1", a1).intents == ("background",)
    assert papers[a1].abstract.startswith("We classify") and papers[r3].abstract == ""
    assert isinstance(papers[r1], Paper) and papers[r1].title == "Graph attention networks"


def test_read_s2_citations_refuses_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="references.jsonl"):
        read_s2_citations(tmp_path)
    (tmp_path / "references.jsonl").write_text(
        '{"paperId": "a", "data": [{"intents": ["motivation"], "citedPaper": {"paperId": "b"}}]}\n')
    with pytest.raises(ValueError, match=r"references.jsonl:1: anchor a: unknown intents \['motivation'\]"):
        read_s2_citations(tmp_path)
    (tmp_path / "references.jsonl").write_text('{"paperId": "a", "items": []}\n')
    with pytest.raises(ValueError, match="references.jsonl:1: expected"):
        read_s2_citations(tmp_path)


def test_synthetic_miscellaneous_edges_leave_the_rest_of_the_corpus_unchanged():
    plain = make_corpus(n_papers=80, seed=2, with_sections=False)
    mixed = make_corpus(n_papers=80, seed=2, with_sections=False, p_no_intent=0.2)
    assert [(e.citing, e.cited) for e in plain.graph] == [(e.citing, e.cited) for e in mixed.graph]
    without = [e for e in mixed.graph if not e.intents]
    assert 0.1 < len(without) / len(mixed.graph) < 0.3
    assert all(e.aspects == (MISCELLANEOUS,) for e in without)
    assert all(e.intents for e in plain.graph)


def test_violations_flags_each_broken_rule():
    graph = hand_graph()
    good = sa.AspectExample("method", "Q", ["A"], ["B", "C", "r1"], n_hard=2)
    assert sa.violations(graph, [good], anchors={"Q", "F"}) == []
    broken = [
        sa.AspectExample("method", "Q", ["B"], ["C"], n_hard=1),  # B is not linked in method
        sa.AspectExample("method", "Q", ["A"], ["D"], n_hard=1),  # D is a method positive candidate
        sa.AspectExample("method", "Q", ["A"], ["F"], n_hard=1),  # F is another anchor
        sa.AspectExample("method", "Q", ["A"], ["E"], n_hard=1),  # E is linked only without intent
        sa.AspectExample(MISCELLANEOUS, "Q", ["E"], ["A"], n_hard=1),  # misc has easy negatives only
        sa.AspectExample("method", "Q", ["A"], ["X"], n_hard=0),  # X is a reference of a reference: not easy
    ]
    for example in broken:
        assert sa.violations(graph, [example], anchors={"Q", "F"}), example
    assert sa.violations(graph, [sa.AspectExample("method", "Q", ["A"], ["Y"], n_hard=1)], level="l2") == []
    assert sa.violations(graph, [sa.AspectExample("method", "Q", ["A"], ["W"], n_hard=1)], level="l2")
