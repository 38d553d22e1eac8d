"""The one data policy (sdr.datasets.ChapterData): replicas at smoke, real-if-found at real, real-or-stop at paper;
replica writers refuse to run under paper; the lock file pins files the registry cannot."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from sdr import datasets
from sdr.cli import main as sdr_main
from sdr.datasets import ChapterData, DataFile, Dataset, PaperDataMissing, ReplicaForbidden


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.delenv(datasets.DRY_RUN_ENV, raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SDR_DATA_LOCK", str(tmp_path / "datasets.lock.json"))
    yield tmp_path
    datasets.activate(None)


def toy_registry(monkeypatch, tmp_path, names=("alpha", "beta")):
    """Registry entries whose URLs point at files under tmp_path/upstream (present or not)."""
    upstream = tmp_path / "upstream"
    upstream.mkdir(exist_ok=True)
    for name in names:
        entry = Dataset(name, name, f"the {name} set", "CC0", "test",
                        (DataFile("data.txt", (upstream / name / "data.txt").as_uri()),), label=f"{name.title()} data")
        monkeypatch.setitem(datasets.DATASETS, name, entry)
    monkeypatch.setitem(datasets.CHAPTER_DATA, "toychapter", tuple(names))
    return upstream


def put(folder, text="real\n"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.txt").write_text(text)


def write_replica(folder):
    (folder / "data.txt").write_text("replica\n")
    return folder


@pytest.mark.parametrize("profile, setting, training, evaluation", [
    ("smoke", "auto", "replica", "real if found"),
    ("smoke", True, "real if found", "real if found"),
    ("smoke", False, "replica", "replica"),
    ("real", "auto", "real if found", "real if found"),
    ("real", True, "real if found", "real if found"),
    ("real", False, "replica", "replica"),
    ("paper", "auto", "real only", "real only"),
    ("paper", True, "real only", "real only"),
])
def test_policy_table(profile, setting, training, evaluation):
    policy = datasets.policy_for(profile, setting)
    assert (policy.training, policy.evaluation) == (training, evaluation)


def test_paper_refuses_use_real_data_false():
    with pytest.raises(ValueError, match="contradicts the paper profile"):
        datasets.policy_for("paper", False)


def test_paper_stops_before_training_listing_every_missing_dataset(monkeypatch, isolated):
    toy_registry(monkeypatch, isolated)
    started = time.monotonic()
    with pytest.raises(PaperDataMissing) as caught:
        ChapterData("toychapter", "paper", download=False)
    message = str(caught.value)
    assert time.monotonic() - started < 5
    assert message.startswith("toychapter at profile paper: 2 of the 2 data sets it reads are missing; nothing was trained.")
    assert "alpha: the alpha set" in message and "beta: the beta set" in message
    assert message.count("get it: sdr data fetch") == 2
    assert "sdr data fetch --for toychapter" in message and "sdr data status --for toychapter" in message


def test_paper_downloads_what_is_missing_then_stops_trying_when_offline(monkeypatch, isolated):
    upstream = toy_registry(monkeypatch, isolated, names=("alpha", "beta", "gamma"))
    put(upstream / "alpha")  # alpha downloadable; beta's URL fails (offline); gamma is not tried after that
    calls = []
    original = datasets.fetch_any
    # ChapterData looks fetch_any up in sdr.datasets.policy, its module
    monkeypatch.setattr(datasets.policy, "fetch_any", lambda d, **kw: calls.append(d.name) or original(d, **kw))
    with pytest.raises(PaperDataMissing) as caught:
        ChapterData("toychapter", "paper", progress=False)
    assert calls == ["alpha", "beta"]  # the first failed download stops further attempts
    message = str(caught.value)
    assert "2 of the 3 data sets" in message and "alpha" not in message.split("\n", 1)[1].split("get it")[0]
    assert "download failed" in message  # why: named for beta, and for gamma (not tried)
    assert (isolated / "cache" / "alpha" / "data.txt").read_text() == "real\n"


def test_paper_with_data_resolves_real_inputs_and_forbids_replicas(monkeypatch, isolated):
    toy_registry(monkeypatch, isolated)
    put(isolated / "mirror" / "alpha")
    put(isolated / "cache" / "beta")
    monkeypatch.setenv("SDR_DATA", str(isolated / "mirror"))
    data = ChapterData("toychapter", "paper", progress=False)
    alpha = data.input("alpha", replica=write_replica)
    assert alpha.real and alpha.path == isolated / "mirror" / "alpha" and alpha.source == "Alpha data"
    assert data.input("beta", role="training").path == isolated / "cache" / "beta"
    with pytest.raises(ValueError, match="not declared in sdr.datasets.CHAPTER_DATA"):
        data.input("csfcube")
    # the policy is active: the synthetic corpus and every replica writer refuse to run
    from sdr.synthetic import make_corpus
    from sdr.synthetic.csfcube import write_csfcube

    with pytest.raises(ReplicaForbidden, match="make_corpus: the paper profile reads the papers' own data only"):
        make_corpus(n_papers=10, seed=0)
    with pytest.raises(ReplicaForbidden, match="write_csfcube"):
        write_csfcube(None, isolated / "x")
    with pytest.raises(ReplicaForbidden):
        data.replica("the synthetic training corpus", lambda: 1)
    assert data.table().loc["alpha", "kind"] == "real"


def test_smoke_and_real_policies(monkeypatch, isolated):
    toy_registry(monkeypatch, isolated)
    put(isolated / "mirror" / "alpha")
    monkeypatch.setenv("SDR_DATA", str(isolated / "mirror"))
    smoke = ChapterData("toychapter", "smoke", "auto")
    assert smoke.input("alpha", write_replica, role="training").kind == "replica"  # smoke trains on replicas
    smoke = ChapterData("toychapter", "smoke", "auto")
    assert smoke.input("alpha", write_replica).real  # and evaluates on real data when found
    real = ChapterData("toychapter", "real")
    assert real.input("alpha", write_replica, role="training").real
    beta = real.input("beta", write_replica, replica_source="Beta replica of the evaluation papers")
    assert beta.kind == "replica" and (beta.path / "data.txt").read_text() == "replica\n"
    assert real.sources == ["Alpha data", "Beta replica of the evaluation papers [replica]"]
    assert real.replicas == ["beta"]
    with pytest.raises(datasets.DatasetUnavailable, match="beta is not in \\$SDR_DATA or the cache and has no replica"):
        ChapterData("toychapter", "real").input("beta")
    # the replica writers work again once a smoke/real policy is active
    from sdr.synthetic import make_corpus

    assert len(make_corpus(n_papers=12, seed=0).papers) == 12


def test_dry_run_labels_inputs_as_fixtures(monkeypatch, isolated):
    toy_registry(monkeypatch, isolated, names=("alpha",))
    put(isolated / "cache" / "alpha")
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")
    item = ChapterData("toychapter", "paper", download=False).input("alpha")
    assert item.real and item.verified is False and "paper dry run: an official-format fixture" in item.source


def test_every_chapter_declares_registry_datasets():
    from sdr import book

    assert set(book.chapter_names()) == set(datasets.CHAPTER_DATA)
    for chapter, names in datasets.CHAPTER_DATA.items():
        for name in names:
            assert datasets.fetch_command(name), (chapter, name)


def test_lock_file_defaults_to_the_checkouts_data_folder(monkeypatch):
    monkeypatch.delenv("SDR_DATA_LOCK", raising=False)
    checkout = Path(__file__).resolve().parents[1]
    assert datasets.lock_path() == checkout / "data" / "datasets.lock.json"


def test_lock_pins_first_download_and_rejects_a_changed_file(monkeypatch, isolated):
    upstream = toy_registry(monkeypatch, isolated, names=("alpha",))
    put(upstream / "alpha", "version 1\n")
    folder = datasets.fetch_any("alpha", progress=False)
    lock = json.loads((isolated / "datasets.lock.json").read_text())
    digest = hashlib.sha256(b"version 1\n").hexdigest()
    assert lock["alpha"]["data.txt"]["sha256"] == digest and lock["alpha"]["data.txt"]["size"] == 10
    assert datasets.expected_digest("alpha", "data.txt") == digest
    assert datasets.pin("alpha", folder) == {"data.txt": "matches lock"}
    (folder / "data.txt").write_text("version 2\n")  # upstream changed (or a damaged copy)
    with pytest.raises(ValueError, match=r"alpha/data.txt: sha256 [0-9a-f]{64} \(10 bytes\) differs from .*datasets.lock.json"):
        datasets.pin("alpha", folder)


def test_cli_status_and_fetch_for_a_chapter(monkeypatch, isolated, capsys):
    upstream = toy_registry(monkeypatch, isolated)
    monkeypatch.setitem(datasets.CHAPTER_DATA, "toychapter", ("alpha", "beta"))  # the one dict every module reads
    put(upstream / "alpha")
    assert sdr_main(["data", "status", "--for", "toychapter"]) == 1
    out = capsys.readouterr().out
    assert "alpha" in out and "missing" in out and "get it: sdr data fetch alpha" in out
    assert sdr_main(["data", "fetch", "--for", "toychapter"]) == 1  # beta cannot be downloaded
    captured = capsys.readouterr()
    assert "not fetched: beta" in captured.err and (isolated / "cache" / "alpha" / "data.txt").exists()
    put(upstream / "beta")
    assert sdr_main(["data", "fetch", "--for", "toychapter"]) == 0
    capsys.readouterr()
    assert sdr_main(["data", "status", "--for", "toychapter", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["dataset"], r["state"]) for r in rows] == [("alpha", "present"), ("beta", "present")]
    assert all(r["unpinned"] == [] for r in rows)  # both pinned by their first download
