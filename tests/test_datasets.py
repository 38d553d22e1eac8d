"""sdr.datasets: the registry, the SDR_DATA → cache → download lookup, digests, offline errors, CLI.

No test touches the network: downloads use ``file://`` URLs to files written here.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from sdr import datasets
from sdr.datasets import DataFile, Dataset, DatasetUnavailable



@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No SDR_DATA and an empty cache under tmp_path."""
    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    return tmp_path


def toy(tmp_path: Path, content: bytes = b"hello\n", digest: str | None = "auto", url: str | None = None) -> Dataset:
    source = tmp_path / "upstream" / "a.txt"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_bytes(content)
    if digest == "auto":
        digest = hashlib.sha256(content).hexdigest()
    return Dataset("toy", "toy", "a toy dataset", "CC0", "test", (
        DataFile("a.txt", url or source.as_uri(), digest),
        DataFile("extra/b.txt", (tmp_path / "upstream" / "missing.txt").as_uri(), required=False),
    ))


def test_registry_entries_are_complete():
    assert {"csfcube", "csabstruct", "pubmed_rct", "cfs3", "scidocs", "mdcr", "scirepeval"} <= set(datasets.DATASETS)
    for name, entry in datasets.DATASETS.items():
        assert entry.name == name and entry.folder and entry.licence and entry.source
        assert entry.files or entry.manual, name  # a way to get it: URLs or instructions
        for data_file in entry.files:
            assert data_file.url is None or data_file.url.startswith(("https://", "http://")), data_file
            assert data_file.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", data_file.sha256), data_file
    csfcube = datasets.get("csfcube")
    expected = csfcube.expected_paths()
    assert "test-pid2anns-csfcube-method.json" in expected and "evaluation_splits.json" in expected
    assert "readable_annotations" in expected  # the folder: its files' names depend on the queries
    assert sum(f.path.startswith("readable_annotations/") for f in csfcube.files) == 50  # all downloaded
    assert all(f.url.startswith("https://raw.githubusercontent.com/iesl/CSFCube/7ffe012") for f in csfcube.files)
    with pytest.raises(KeyError, match="unknown dataset 'nope'"):
        datasets.get("nope")


def test_real_mirror_matches_the_registry_digests(monkeypatch, real_data):
    mirror = real_data("csfcube").parent
    monkeypatch.setenv("SDR_DATA", str(mirror))
    for name in ("csfcube", "csabstruct", "scirepeval", "specter_sample"):
        status = datasets.verify(name)
        assert "mismatch" not in status.values() and "missing" not in status.values(), name
        assert datasets.resolve(name, download=False) == mirror / datasets.get(name).folder
    assert datasets.verify("csfcube")["abstracts-csfcube-preds.jsonl"] == "absent"  # optional, not mirrored
    assert datasets.data_root() == mirror


def test_lookup_order_sdr_data_then_cache(isolated, monkeypatch):
    entry = toy(isolated)
    mirror = isolated / "mirror" / "toy"
    mirror.mkdir(parents=True)
    (mirror / "a.txt").write_text("mirror copy")
    cached = isolated / "cache" / "toy"
    cached.mkdir(parents=True)
    (cached / "a.txt").write_text("cache copy")
    monkeypatch.setenv("SDR_DATA", str(isolated / "mirror"))
    assert datasets.resolve(entry, download=False) == mirror
    (mirror / "a.txt").unlink()  # incomplete mirror: fall through to the cache
    assert datasets.resolve(entry, download=False) == cached
    monkeypatch.delenv("SDR_DATA")
    assert datasets.resolve(entry, download=False) == cached
    assert datasets.data_root() is None  # the cache holds no dataset of the registry
    monkeypatch.setitem(datasets.DATASETS, "toy", entry)
    assert datasets.data_root() == isolated / "cache"


def test_download_into_the_cache_with_digest_check(isolated, capsys):
    entry = toy(isolated)
    folder = datasets.resolve(entry, progress=False)  # not in SDR_DATA nor cache: downloaded
    assert folder == isolated / "cache" / "toy"
    assert (folder / "a.txt").read_bytes() == b"hello\n"
    assert not (folder / "extra" / "b.txt").exists()  # optional files are not fetched by resolve
    # fetch() takes optional files too; one that cannot be downloaded is reported, not fatal.
    datasets.fetch(entry, progress=False)
    assert "1 optional files could not be downloaded (e.g. extra/b.txt)" in capsys.readouterr().err
    assert datasets.verify(entry, folder) == {"a.txt": "ok", "extra/b.txt": "absent"}
    (folder / "a.txt").write_bytes(b"tampered")
    assert datasets.verify(entry, folder)["a.txt"] == "mismatch"
    datasets.fetch(entry, progress=False)  # a file with the wrong digest is downloaded again
    assert (folder / "a.txt").read_bytes() == b"hello\n"


def test_digest_mismatch_is_an_error_and_leaves_nothing(isolated):
    entry = toy(isolated, digest="0" * 64)
    with pytest.raises(ValueError, match=r"a.txt: sha256 [0-9a-f]{64} differs from the registry's 0000"):
        datasets.fetch(entry, progress=False)
    leftovers = list((isolated / "cache" / "toy").glob("*"))
    assert leftovers == []


def test_archives_are_unpacked(isolated):
    archive = isolated / "upstream" / "bundle.tar.gz"
    archive.parent.mkdir(parents=True)
    with tarfile.open(archive, "w:gz") as bundle:
        payload = b'{"x": 1}\n'
        info = tarfile.TarInfo("inner/train.jsonl")
        info.size = len(payload)
        bundle.addfile(info, io.BytesIO(payload))
    entry = Dataset("bundle", "bundle", "archive", "CC0", "test",
                    (DataFile("bundle.tar.gz", archive.as_uri(), archive=True),), expected=("inner/train.jsonl",))
    folder = datasets.resolve(entry, progress=False)
    assert json.loads((folder / "inner" / "train.jsonl").read_text()) == {"x": 1}


def test_offline_and_missing_gives_one_clear_line(isolated):
    entry = toy(isolated, url=(isolated / "nowhere" / "a.txt").as_uri())
    with pytest.raises(DatasetUnavailable) as caught:
        datasets.resolve(entry, progress=False)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("toy: not found in $SDR_DATA (unset) nor in the cache")
    assert "set SDR_DATA to a folder holding toy/" in message and "sdr data fetch toy" in message
    assert "nowhere/a.txt" in message  # the failed URL and the reason
    with pytest.raises(DatasetUnavailable, match="downloads disabled"):
        datasets.resolve(toy(isolated), download=False)
    # FileNotFoundError subclass: the CLI prints it as one line.
    assert issubclass(DatasetUnavailable, FileNotFoundError)


def test_no_direct_download_says_how_to_get_it(isolated):
    with pytest.raises(DatasetUnavailable, match=r"cf_sentences: .*iwa2ki.com/FE"):
        datasets.resolve("cf_sentences", progress=False)


def test_cli_list_fetch_verify(isolated, monkeypatch, capsys):
    entry = toy(isolated)
    monkeypatch.setitem(datasets.DATASETS, "toy", entry)
    parser = argparse.ArgumentParser()
    datasets.register(parser.add_subparsers(dest="command"))

    def call(*argv):
        args = parser.parse_args(list(argv))
        return args.func(args)

    assert call("data", "list", "--json") == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["toy"]["where"] == "missing" and rows["csfcube"]["licence"] == "CC BY-NC 4.0"
    assert call("data", "fetch", "toy") == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"toy: {isolated / 'cache' / 'toy'}"
    assert call("data", "verify", "toy") == 0
    assert "toy: 1 ok, 0 mismatch, 0 missing, 1 absent, 0 unchecked" in capsys.readouterr().out
    assert call("data", "list") == 0
    assert re.search(r"^toy\s+cache\s", capsys.readouterr().out, flags=re.M)


# ----------------------------------------------------------------------------- the no-data path
# CI has the mirror, so it never takes the path of a fresh clone without one; these tests take it.


@pytest.mark.parametrize("value", [None, "", "missing-folder"], ids=["unset", "empty", "missing-folder"])
def test_real_data_tests_skip_naming_sdr_data_without_the_mirror(real_data, shared_data_skip_env, value):
    shared_data_skip_env(value)
    with pytest.raises(pytest.skip.Exception, match="SDR_DATA"):
        real_data()
    with pytest.raises(pytest.skip.Exception, match="SDR_DATA"):
        real_data("csfcube/evaluation_splits.json")


def test_real_data_test_skips_naming_the_missing_file(real_data, tmp_path, monkeypatch):
    (tmp_path / "csfcube").mkdir()
    monkeypatch.setenv("SDR_DATA", str(tmp_path))
    assert real_data() == tmp_path and real_data("csfcube") == tmp_path / "csfcube"
    with pytest.raises(pytest.skip.Exception, match=r"SDR_DATA=.* has no csfcube/evaluation_splits\.json"):
        real_data("csfcube/evaluation_splits.json")


def _smoke_reads_real_csabstruct(tmp_path) -> bool:
    """Whether the smoke policy (real evaluation data when found) finds real CSAbstruct here."""
    data = datasets.ChapterData("benchmarks", "smoke", "auto", workdir=tmp_path / "work")
    return data.input("csabstruct", replica=lambda folder: folder).real


@pytest.mark.parametrize("value", [None, "", "missing-folder"], ids=["unset", "empty", "missing-folder"])
def test_smoke_reads_replicas_without_mirror_or_cache(shared_data_skip_env, value, tmp_path):
    shared_data_skip_env(value)
    assert datasets.data_root() is None and datasets.locate("csfcube") is None
    assert _smoke_reads_real_csabstruct(tmp_path) is False
    with pytest.raises(ValueError, match="use_real_data must be true, false or 'auto'"):
        datasets.policy_for("smoke", "sometimes")


def test_smoke_reads_real_data_from_a_mirror_or_a_complete_cache(tmp_path, monkeypatch):
    for split in ("train", "dev", "test"):
        (tmp_path / "mirror" / "csabstruct").mkdir(parents=True, exist_ok=True)
        (tmp_path / "mirror" / "csabstruct" / f"{split}.jsonl").write_text("{}\n")
    monkeypatch.setenv("SDR_DATA", str(tmp_path / "mirror"))
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "no-cache"))
    assert _smoke_reads_real_csabstruct(tmp_path) is True and datasets.data_root() == tmp_path / "mirror"
    monkeypatch.delenv("SDR_DATA")
    cache = tmp_path / "cache"
    (cache / "csabstruct").mkdir(parents=True)
    monkeypatch.setenv("SDR_DATA_CACHE", str(cache))
    # an empty or partial cache (a failed download) is not data
    assert _smoke_reads_real_csabstruct(tmp_path) is False and datasets.data_root() is None
    (cache / "csabstruct" / "train.jsonl").write_text("{}\n")
    assert _smoke_reads_real_csabstruct(tmp_path) is False
    for split in ("dev", "test"):
        (cache / "csabstruct" / f"{split}.jsonl").write_text("{}\n")
    assert _smoke_reads_real_csabstruct(tmp_path) is True and datasets.data_root() == cache
    datasets.activate(None)


@pytest.fixture
def shared_data_skip_env(tmp_path, monkeypatch):
    """Sets SDR_DATA to unset (None), empty or a missing folder, with an empty cache that does not exist."""
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "no-cache"))

    def apply(value):
        if value is None:
            monkeypatch.delenv("SDR_DATA", raising=False)
        else:
            monkeypatch.setenv("SDR_DATA", str(tmp_path / value) if value else "")

    return apply


def test_the_real_profile_data_are_registry_entries_and_sdr_data_fetch_real_profile_runs(tmp_path, monkeypatch, capsys):
    """`make data-real` runs `sdr data fetch --real-profile`: each data set it names is in the registry, and the
    command fetches them (here from $SDR_DATA: nothing to download) instead of failing on an undefined name."""
    from sdr import datasets
    from sdr.cli import main

    assert all(datasets.get(name) for name in datasets.REAL_PROFILE_DATA)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    fetched = []
    monkeypatch.setattr("sdr.datasets.cli.fetch_any", lambda name, **kw: fetched.append(name) or tmp_path)
    assert main(["data", "fetch", "--real-profile"]) == 0, capsys.readouterr().err
    assert fetched == list(datasets.REAL_PROFILE_DATA)
