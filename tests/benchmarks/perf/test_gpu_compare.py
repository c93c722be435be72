"""The GPU comparison script runs end to end on tiny models with `--device cpu`."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest

from docket.core.jsonl import parse_lines, write_jsonl
from tests.methods.decoding.conftest import one_thread  # noqa: F401  (one torch thread)

SCRIPT = Path(__file__).parents[3] / "benchmarks" / "perf" / "scripts" / "gpu_compare.py"
main = runpy.run_path(str(SCRIPT))["main"]


def rows(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [row for _, row in parse_lines(capsys.readouterr().out.splitlines())]


def test_dsb_comparison_covers_every_setting(
    toy_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tmp_path / "prompts.jsonl"
    write_jsonl(prompts, [{"question": q, "answer": "1"} for q in ["copy: ab", "sort: ba"]])
    common = ["--device", "cpu", "--dtype", "float32", "dsb", "--model", str(toy_dir)]
    main([*common, "--prompts", str(prompts), "--gen-length", "8", "--block-length", "4"])
    found = rows(capsys)
    assert [r["setting"] for r in found] == [
        "vanilla",
        "naive",
        "dsb_const",
        "dsb",
        "naive+dual_cache",
        "dsb_const+dsb_cache",
        "dsb+dsb_cache",
    ]
    assert all(r["prompts"] == 2 and 2 <= float(r["mean_nfe"]) <= 8 for r in found)
    assert found[0]["mean_nfe"] == 8  # one token per step


def test_dustin_comparison_reports_steps_and_generations(
    tiny_llama_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(
        [
            "--device", "cpu", "--dtype", "float32", "dustin", "--model", str(tiny_llama_dir),
            "--draft-layers", "2", "--contexts", "64", "200", "--budget", "16", "--recent", "8",
            "--new-tokens", "6",
        ]
    )  # fmt: skip
    found = rows(capsys)
    assert [r.get("context") for r in found[:2]] == [64, 200]
    assert found[1]["reads"] == 28
    assert [r["verify"] for r in found[2:]] == ["dense", "sparse"]
    assert found[3]["attention_bytes_saved"] > 0


def test_flash_comparison_reports_heads(
    vlm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from PIL import Image

    image = tmp_path / "page.png"
    Image.new("RGB", (64, 64), (200, 30, 30)).save(image)
    main(
        [
            "--device", "cpu", "--dtype", "float32", "flash", "--model", str(vlm_dir),
            "--image", str(image), "--new-tokens", "4", "--heads", "2",
        ]
    )  # fmt: skip
    plain, shaped = rows(capsys)
    assert plain["setting"] == "plain" and shaped["setting"] == "flash"
    assert len(shaped["visual_heads"]) == 2
