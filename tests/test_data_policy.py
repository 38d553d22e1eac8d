"""The one data policy (sdr.datasets.ChapterData): replicas at smoke, real-if-found at real, real-or-stop at paper;
replica writers refuse to run under paper; the lock file pins files the registry cannot."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

import pytest

from sdr import datasets
from sdr.cli import main as sdr_main
from sdr.datasets import ChapterData, DataFile, Dataset, DatasetUnavailable, PaperDataMissing, ReplicaForbidden
from sdr.fetchers.http import NetworkError


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


# ------------------------------------------------------------------------------------------- complete or say so
def test_a_download_that_differs_from_its_pin_leaves_the_cache_as_it_was(monkeypatch, isolated):
    upstream = toy_registry(monkeypatch, isolated, names=("alpha",))
    put(upstream / "alpha", "version 1\n")
    folder = datasets.fetch_any("alpha", progress=False)  # pinned in the lock file by its first download
    put(upstream / "alpha", "version 2, changed upstream\n")
    with pytest.raises(ValueError, match=r"differs from .*datasets.lock.json's pinned [0-9a-f]{64}; the file was not "
                                         r"written"):
        datasets.fetch_any("alpha", force=True, progress=False)
    assert (folder / "data.txt").read_text() == "version 1\n"  # not replaced by the bytes that failed the check
    assert [p.name for p in folder.iterdir()] == ["data.txt"]  # and no partial download left beside it


def _toy_fetcher(monkeypatch, fail_after=None):
    """A fetcher module ``sdr.fetchers.toyfetch`` that writes three numbered files, one a call step, resumes, and
    writes the completion record last; ``fail_after`` files it raises (an interrupted fetch)."""
    import sys
    import types

    from sdr.fetchers import completion

    calls = []

    def fetch_dataset(dataset, folder, progress=True):
        calls.append(folder)
        completion.begin(folder)
        status = completion.Progress(folder, every_s=0)
        for number in range(3):
            if (folder / f"part{number}.txt").exists():
                continue
            if fail_after is not None and number >= fail_after[0]:
                raise NetworkError("https://api.example/parts", ConnectionResetError("the connection dropped"), 7)
            (folder / f"part{number}.txt").write_text(f"part {number}\n")
            status.update("parts", number + 1, 3, "parts")
        completion.write_record(folder, dataset.name, "toyfetch", {"parts": 3})
        return folder

    module = types.ModuleType("sdr.fetchers.toyfetch")
    module.fetch_dataset = fetch_dataset
    monkeypatch.setitem(sys.modules, "sdr.fetchers.toyfetch", module)
    entry = Dataset("fetched", "fetched", "a fetched set", "CC0", "an API", expected=("part0.txt",), fetcher="toyfetch")
    monkeypatch.setitem(datasets.DATASETS, "fetched", entry)
    monkeypatch.setitem(datasets.CHAPTER_DATA, "toychapter", ("fetched",))
    return calls


def test_a_partial_fetch_is_partial_and_the_paper_check_resumes_it(monkeypatch, isolated, capsys):
    from sdr.fetchers.http import NetworkError  # noqa: F401  (raised by the toy fetcher)

    fail_after = [2]
    calls = _toy_fetcher(monkeypatch, fail_after)
    with pytest.raises(DatasetUnavailable, match=r"fetched: download failed: .*network error after 7 attempts.*"
                                                 r"partial: 2 of 3 parts"):
        datasets.fetch_any("fetched", progress=False)
    folder = isolated / "cache" / "fetched"
    assert (folder / "part0.txt").exists() and datasets.locate("fetched") is None  # files, but not complete
    assert sdr_main(["data", "status", "--for", "toychapter"]) == 1
    out = capsys.readouterr().out
    assert "partial" in out and "partial: 2 of 3 parts (parts" in out and "resume with `sdr data fetch fetched`" in out
    with pytest.raises(PaperDataMissing, match=r"partial: 2 of 3 parts .*resume with `sdr data fetch fetched`"):
        ChapterData("toychapter", "paper", download=False)
    with pytest.raises(PaperDataMissing, match=r"download failed.*partial: 2 of 3 parts"):
        ChapterData("toychapter", "paper", progress=False)  # the network still down: a stop, not a traceback
    fail_after[0] = 99  # the network is back: the check before training resumes the fetch
    data = ChapterData("toychapter", "paper", progress=False)
    assert data.input("fetched").path == folder and len(calls) == 3
    assert sorted(p.name for p in folder.iterdir()) == ["_complete.json", "part0.txt", "part1.txt", "part2.txt"]
    record = json.loads((folder / "_complete.json").read_text())
    assert record["counts"] == {"parts": 3} and record["files"]["part2.txt"]["sha256"] == \
        hashlib.sha256(b"part 2\n").hexdigest()
    assert datasets.verify("fetched", folder)["part1.txt"] == "ok"
    (folder / "part1.txt").write_text("changed\n")  # a file that no longer matches its record: not complete
    assert datasets.locate("fetched") is None
    assert "part1.txt has 8 bytes" in datasets.fetch_state(folder).describe("fetched")


def test_a_git_blob_pin_checks_the_first_download(monkeypatch, isolated):
    import subprocess

    upstream = toy_registry(monkeypatch, isolated, names=("alpha",))
    put(upstream / "alpha", "the committed bytes\n")
    blob = subprocess.run(["git", "hash-object", str(upstream / "alpha" / "data.txt")], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert datasets.git_blob_sha1(upstream / "alpha" / "data.txt") == blob
    lock = isolated / "datasets.lock.json"
    lock.write_text(json.dumps({"alpha": {"data.txt": {"git_blob_sha1": "0" * 40}}}))
    with pytest.raises(ValueError, match=r"git blob [0-9a-f]{40} differs from .*pinned 0{40}; the file was not written"):
        datasets.fetch_any("alpha", progress=False)
    assert not (isolated / "cache" / "alpha").exists()
    lock.write_text(json.dumps({"alpha": {"data.txt": {"git_blob_sha1": blob}}}))
    datasets.fetch_any("alpha", progress=False)
    entry = json.loads(lock.read_text())["alpha"]["data.txt"]
    assert entry["git_blob_sha1"] == blob and entry["sha256"] == hashlib.sha256(b"the committed bytes\n").hexdigest()


def test_the_committed_lock_pins_registry_files_the_registry_has_no_digest_for(monkeypatch):
    monkeypatch.delenv("SDR_DATA_LOCK", raising=False)
    lock = datasets.read_lock()
    assert lock, "data/datasets.lock.json is committed"
    for name, files in lock.items():
        entries = {f.path: f for f in datasets.get(name).files}
        for path, entry in files.items():
            assert path in entries and not entries[path].sha256 and entry["url"] == entries[path].url, (name, path)
            assert re.fullmatch(r"[0-9a-f]{40}", entry.get("git_blob_sha1", "")) or \
                re.fullmatch(r"[0-9a-f]{64}", entry.get("sha256", "")), (name, path)
    # every registry file served from a repository at a fixed commit without a registry digest is pinned
    github = [(d.name, f.path) for d in datasets.DATASETS.values() for f in d.files
              if not f.sha256 and f.url and f.url.startswith("https://raw.githubusercontent.com/")]
    assert github and all(path in lock.get(name, {}) for name, path in github)


def test_sdr_data_list_shows_a_partial_fetch_as_partial_not_missing(monkeypatch, isolated, capsys):
    _toy_fetcher(monkeypatch, [2])
    with pytest.raises(DatasetUnavailable):
        datasets.fetch_any("fetched", progress=False)
    folder = isolated / "cache" / "fetched"
    row = {r["name"]: r for r in datasets.status_table()}["fetched"]
    assert row["where"] == "partial: 2 of 3 parts" and row["path"] == str(folder)
    assert row["detail"] == datasets.chapter_status("toychapter")[0]["detail"]  # as sdr data status says it
    assert "resume with `sdr data fetch fetched`" in row["detail"]
    assert sdr_main(["data", "list"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("fetched "))
    assert "partial: 2 of 3 parts" in line and "missing" not in line
