"""Private SCSuff splits (`docket generate scsuff`, `-T data=DIR`) and opaque, unused ids."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from docket.benchmarks.scsuff.dataset import feature_rule_items, item_key, render
from docket.benchmarks.scsuff.scsuff import scsuff, scsuff_hints
from docket.benchmarks.scsuff.splits import SPLIT_FILE, generate_split, opaque_id
from docket.cli import main
from docket.core.inspect_private import PrerequisiteError
from docket.core.splits import SPLIT_KEY, files_digest, secret_seed
from tests.benchmarks.scsuff.scsuff_eval import run


def _generate(tmp_path: Path, secret: str = "a secret", size: int = 6) -> Path:
    out = tmp_path / "split"
    assert (
        main(["generate", "scsuff", "--seed", secret, "--out", str(out), "--size", str(size)]) == 0
    )
    return out


def test_generate_writes_a_fresh_split_and_tasks_run_on_it(tmp_path: Path) -> None:
    out = _generate(tmp_path)
    manifest = json.loads((out / "split.json").read_text())
    assert manifest == {"benchmark": "scsuff", "sha256": files_digest(out), "source": "generated"}
    assert "a secret" not in (out / SPLIT_FILE).read_text() + json.dumps(manifest)
    log = run(scsuff(data=str(out), self_generator=True, config={"num_alternatives": 2}), tmp_path)
    assert log.eval.metadata is not None
    assert log.eval.metadata[SPLIT_KEY] == {
        "sha256": manifest["sha256"], "source": "generated", "name": "split",
    }  # fmt: skip
    assert log.samples is not None and len(log.samples) == 6
    seed = secret_seed("a secret")
    shipped = [item_key(item) for item in feature_rule_items(100, 42)]  # never in a private split
    drawn = feature_rule_items(6, seed, shipped)
    expected = {opaque_id(seed, i): render(it) for i, it in enumerate(drawn)}
    assert {s.id: s.input for s in log.samples} == expected
    hints = scsuff_hints(data=str(out), judge="keyword", scsuff=False)
    assert hints.metadata is not None and hints.metadata[SPLIT_KEY]["source"] == "generated"


def test_the_shipped_split_is_named_by_its_content_hash() -> None:
    first, again = scsuff(n=5).metadata, scsuff(n=5).metadata
    other = scsuff(n=5, config={"seed": 7}).metadata
    assert first is not None and again is not None and other is not None
    assert first[SPLIT_KEY]["source"] == "shipped"
    assert first[SPLIT_KEY]["sha256"] == again[SPLIT_KEY]["sha256"]
    assert first[SPLIT_KEY]["sha256"] != other[SPLIT_KEY]["sha256"]


def test_a_changed_or_foreign_split_is_one_line(tmp_path: Path) -> None:
    out = _generate(tmp_path)
    with (out / SPLIT_FILE).open("a") as handle:
        handle.write("\n")
    with pytest.raises(PrerequisiteError, match="files changed since") as error:
        scsuff(data=str(out))
    assert "\n" not in str(error.value)
    with pytest.raises(PrerequisiteError, match="no split.json"):
        scsuff(data=str(tmp_path))
    with pytest.raises(PrerequisiteError, match="-T data applies to dataset=feature_rule"):
        scsuff(dataset="mmlu", data=str(out))


def test_no_prompt_shows_an_id_and_ids_do_not_drive_the_generator(tmp_path: Path) -> None:
    """The model sees only the passage: no sample id, no index. A generated split's ids are
    hashes: decoding every digit run or hex run of an id as a seed never reproduces its item."""
    out = _generate(tmp_path, "another secret", size=4)
    for task in (scsuff(n=20), scsuff(data=str(out)), scsuff_hints(n=20, judge="keyword")):
        for sample in task.dataset:
            text = str(sample.input) + str((sample.metadata or {}).get("biased_input", ""))
            assert str(sample.id) not in text
            assert not re.search(r"rule-[0-9a-f]{4,}", text)
    generated = list(scsuff(data=str(out)).dataset)
    for index, sample in enumerate(generated):
        tokens = re.findall(r"[0-9a-f]+", str(sample.id).removeprefix("rule-"))
        candidates = {int(t, 16) for t in tokens} | {int(t) for t in tokens if t.isdigit()}
        for seed in candidates:
            items = feature_rule_items(index + 1, seed)
            assert render(items[index]) != sample.input


def test_generate_split_size_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--size 0 must be at least 1"):
        generate_split(1, tmp_path, 0)
    # 1 600 feature-rule items, 100 of them shipped: a larger private split cannot be distinct
    with pytest.raises(ValueError, match="--size 1501: the feature-rule world has only 1500"):
        generate_split(1, tmp_path, 1501)
    full = tmp_path / "full"
    full.mkdir()
    generate_split(1, full, 1500)  # every item but the shipped ones, each once
    rows = [json.loads(line) for line in (full / SPLIT_FILE).read_text().splitlines()]
    passages = {json.dumps([r["preamble"], r["question"], r["options"]]) for r in rows}
    assert len(rows) == len(passages) == 1500
