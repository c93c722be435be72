"""docket.core.splits: content hashes, secret seeds, manifests; `docket generate` refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docket.cli import main
from docket.core.splits import (
    MANIFEST,
    SPLIT_KEY,
    files_digest,
    read_manifest,
    rows_digest,
    secret_seed,
    split_metadata,
    split_of,
    write_manifest,
)


def test_secret_seed_is_a_stable_63_bit_hash() -> None:
    assert secret_seed("hunter2") == secret_seed("hunter2")
    assert secret_seed("hunter2") != secret_seed("hunter3")
    assert 0 <= secret_seed("0") < 2**63
    with pytest.raises(ValueError, match="must not be empty"):
        secret_seed("")


def test_files_digest_names_paths_and_contents(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n')
    first = files_digest(tmp_path)
    (tmp_path / MANIFEST).write_text("{}")  # the manifest never counts
    assert files_digest(tmp_path) == first
    (tmp_path / "a.jsonl").rename(tmp_path / "b.jsonl")
    assert files_digest(tmp_path) != first


def test_rows_digest_and_metadata_round_trip() -> None:
    digest = rows_digest([{"b": 1, "a": 2}])
    assert digest == rows_digest([{"a": 2, "b": 1}])
    assert digest != rows_digest([{"a": 2, "b": 2}])
    meta = split_metadata(digest, generated=False)
    assert meta == {SPLIT_KEY: {"sha256": digest, "source": "shipped"}}
    assert split_of(meta) == digest
    assert split_of({}) is None and split_of(None) is None


def test_manifest_detects_edited_files(tmp_path: Path) -> None:
    (tmp_path / "test.jsonl").write_text("1\n")
    sha = write_manifest(tmp_path, "toy")
    assert read_manifest(tmp_path)["sha256"] == sha
    assert json.loads((tmp_path / MANIFEST).read_text())["benchmark"] == "toy"
    (tmp_path / "test.jsonl").write_text("2\n")
    with pytest.raises(ValueError, match="files changed"):
        read_manifest(tmp_path)
    with pytest.raises(ValueError, match="no split.json"):
        read_manifest(tmp_path / "missing")


def test_generate_refuses_unknown_benchmark_and_non_empty_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["generate", "no_such", "--seed", "s", "--out", str(tmp_path / "o")]) == 2
    assert "no split generator" in capsys.readouterr().out


def test_generate_refuses_a_size_below_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    assert main(["generate", "docval", "--seed", "s", "--out", str(out), "--size", "0"]) == 2
    assert "--size must be at least 1" in capsys.readouterr().out
    assert not out.exists()
