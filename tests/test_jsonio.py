"""The one JSONL reader: every malformed input names the file, the line and what was expected."""

from __future__ import annotations

import gzip

import pytest

from sdr.jsonio import read_jsonl, require_file


def test_records_with_line_numbers_skip_blank_lines(tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert list(read_jsonl(path)) == [(1, {"a": 1}), (3, {"a": 2})]


def test_gzip_is_read_transparently(tmp_path):
    path = tmp_path / "ok.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write('{"a": 1}\n')
    assert list(read_jsonl(path)) == [(1, {"a": 1})]


def test_truncated_line_names_file_line_and_expectation(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: not valid JSON \(.*column \d+\); expected papers"):
        list(read_jsonl(path, "papers"))


def test_a_line_that_is_not_an_object_is_an_error(tmp_path):
    path = tmp_path / "list.jsonl"
    path.write_text("[1, 2]\n")
    with pytest.raises(ValueError, match=r"list\.jsonl:1: expected a JSON object \(papers\), got list"):
        list(read_jsonl(path, "papers"))


def test_empty_file_is_an_error_unless_allowed(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    with pytest.raises(ValueError, match=r"empty\.jsonl: empty file; expected papers"):
        list(read_jsonl(path, "papers"))
    assert list(read_jsonl(path, "papers", allow_empty=True)) == []


def test_missing_file_says_what_was_expected(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.jsonl: file not found; expected papers"):
        require_file(tmp_path / "nope.jsonl", "papers")
