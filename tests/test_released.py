"""Released models first (issue 32): a released checkpoint scored through ``sdr evaluate all``'s path beside the
paper's number, and in the paper dry run beside an expected value computed by a plain ``transformers`` forward."""

from __future__ import annotations

import json

import pytest

from sdr import datasets, embed, released
from sdr.book.chapter import ChapterCheckFailed
from sdr.evaluate import suite
from sdr.synthetic.models import write_stand_in

MODEL = "allenai/specter"


@pytest.fixture(scope="module")
def setting(tmp_path_factory, synthetic_corpus):
    """A SPECTER stand-in, CSFCube and SciDocs replicas, and the expected values a dry-run mirror would hold."""
    from sdr.synthetic.csfcube import write_csfcube
    from sdr.synthetic.scidocs import write_scidocs

    root = tmp_path_factory.mktemp("released")
    texts = [f"{p.title} {p.abstract}" for p in synthetic_corpus.papers.values()]
    model = write_stand_in(root / "models" / "allenai__specter", MODEL, texts, layers=1, hidden=16)
    data = {"csfcube": write_csfcube(synthetic_corpus, root / "csfcube", n_queries=6, pool_size=30, seed=0),
            "scidocs": write_scidocs(synthetic_corpus, root / "scidocs", seed=0, n_queries=10, progress=False)}
    expected = {}
    encoder = embed.load_model(str(model), max_length=64, pooling="cls", device="cpu")
    for name, folder in data.items():
        inputs = embed.benchmark_inputs(name, folder, encoder)
        vectors = released.plain_embeddings(model, inputs.texts, "cls", 64)
        result, _ = suite.score(inputs, vectors)
        for metric, value in released.flat_metrics(name, result).items():
            check = released.ReleasedCheck(MODEL, name, "scidocs", "SPECTER", {metric: metric}, max_length=64)
            expected[released.expected_key(check, metric)] = value
    (root / released.EXPECTED_FILE).write_text(json.dumps(expected))
    return root, model, data


CHECKS = [released.ReleasedCheck(MODEL, "csfcube", "scidocs", "SPECTER", {"map_all": "avg"}, max_length=64),
          released.ReleasedCheck(MODEL, "scidocs", "scidocs", "SPECTER",
                                 {"cite_map": "cite_map", "mag_f1": "mag_f1"}, max_length=64)]


def test_in_the_dry_run_the_encoders_path_matches_a_plain_forward(setting, monkeypatch, tmp_path):
    root, model, data = setting
    monkeypatch.setenv("SDR_DATA", str(root))
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")
    table = released.score_released(CHECKS, data, load_as={MODEL: str(model)}, device="cpu", cache=tmp_path)
    assert len(table) == 3 and table["holds"].all(), table
    assert (table["difference"].abs() < 1e-3).all()  # the same numbers as the plain forward, not only within 0.3
    released.assert_released(table)
    again = released.score_released(CHECKS, data, load_as={MODEL: str(model)}, device="cpu", cache=tmp_path)
    assert again["cached"].all() and again["ours"].tolist() == table["ours"].tolist()


def test_a_planted_mismatch_fails_the_check(setting, monkeypatch, tmp_path):
    root, model, data = setting
    planted = tmp_path / "mirror"
    planted.mkdir()
    stored = json.loads((root / released.EXPECTED_FILE).read_text())
    stored[released.expected_key(CHECKS[1], "cite_map")] += 0.5
    (planted / released.EXPECTED_FILE).write_text(json.dumps(stored))
    monkeypatch.setenv("SDR_DATA", str(planted))
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")
    table = released.score_released(CHECKS, data, load_as={MODEL: str(model)}, device="cpu", cache=tmp_path)
    assert table["holds"].tolist().count(False) == 1
    with pytest.raises(ChapterCheckFailed, match="scidocs, cite_map: .*tolerance ±0.3"):
        released.assert_released(table)


def test_outside_the_dry_run_the_papers_numbers_are_the_reference():
    values = released.expected_values(CHECKS)
    assert values[(MODEL, "scidocs", "cite_map")] == 88.3 and values[(MODEL, "csfcube", "map_all")] == 80.0
    with pytest.raises(ValueError, match="says why"):
        released.ReleasedCheck(MODEL, "mdcr", "flew_table2", "SPECTER", {"avg": "mdcr"}, tolerance=None)
