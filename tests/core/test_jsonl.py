"""The one JSONL reader and writer: numbered rows, a bad line named in the caller's words."""

import json
from pathlib import Path

import pytest

from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import JsonlLineError, jsonl_text, parse_lines, read_jsonl, write_jsonl


def test_rows_are_numbered_from_one_and_blank_lines_count() -> None:
    lines = ['{"a": 1}', "", "  ", "[2]"]
    assert list(parse_lines(lines)) == [(1, {"a": 1}), (4, [2])]
    assert list(parse_lines(lines, count_blank=False)) == [(1, {"a": 1}), (2, [2])]
    assert list(parse_lines(lines, start=0)) == [(0, {"a": 1}), (3, [2])]


def test_a_bad_line_is_one_error_naming_it() -> None:
    with pytest.raises(JsonlLineError, match=r"^line 2: not JSON \(Expecting value\)$") as error:
        list(parse_lines(['{"a": 1}', "nope"]))
    assert error.value.number == 2 and error.value.syntax
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(JsonlLineError) as error:
        list(parse_lines([deep]))
    assert not error.value.syntax and error.value.reason == "RecursionError"


def test_the_caller_builds_its_own_error() -> None:
    def bad(number: int, ex: JsonlLineError) -> ValueError:
        return ValueError(f"f.jsonl:{number}: {ex.reason}")

    with pytest.raises(ValueError, match=r"^f.jsonl:1: Expecting value$"):
        list(parse_lines(["x"], bad))


def test_invalid_lines_can_be_skipped() -> None:
    rows = parse_lines(['{"a": 1}', '{"a": 2', "[3]"], skip_invalid=True)
    assert [row for _, row in rows] == [{"a": 1}, [3]]


def test_written_rows_read_back(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "deep" / "rows.jsonl", [{"b": 1, "a": "é"}], sort_keys=True)
    assert path.read_text(encoding="utf-8") == json.dumps({"a": "é", "b": 1}) + "\n"
    assert read_jsonl(path, "t", ("a",)) == [{"a": "é", "b": 1}]


def test_a_benchmark_data_file_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    with pytest.raises(PrerequisiteError, match="t: data file not found"):
        read_jsonl(path, "t")
    path.write_text('{"a": 1}\n[1]\n', encoding="utf-8")
    with pytest.raises(PrerequisiteError, match=r"d.jsonl line 2: not a JSON object"):
        read_jsonl(path, "t")
    path.write_text('{"a": 1}\n\n{"b": 1}\n', encoding="utf-8")
    with pytest.raises(PrerequisiteError, match=r"d.jsonl line 3: no field 'a'"):
        read_jsonl(path, "t", ("a",))
    path.write_text("{\n", encoding="utf-8")
    with pytest.raises(PrerequisiteError, match=r"d.jsonl line 1: not JSON$"):
        read_jsonl(path, "t")


def test_jsonl_text_writes_each_style_the_shipped_files_use() -> None:
    rows = [{"b": 1, "a": "é"}, [1, 2]]
    assert jsonl_text(rows) == '{"b": 1, "a": "\\u00e9"}\n[1, 2]\n'
    assert jsonl_text(rows, sort_keys=True) == '{"a": "\\u00e9", "b": 1}\n[1, 2]\n'
    assert jsonl_text(rows, compact=True) == '{"b":1,"a":"\\u00e9"}\n[1,2]\n'
    assert jsonl_text(rows, ascii_only=False) == '{"b": 1, "a": "é"}\n[1, 2]\n'
    assert jsonl_text([]) == ""
