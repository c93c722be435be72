"""Report readers under adversarial input: regress baseline JSON and corrupted Inspect logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from docket.reports.logs import load_logs
from docket.reports.regress import BASELINE_FORMAT, ENTRY_FIELDS, BaselineError, read_baseline
from tests.properties.prop_strategies import JSON_VALUES, one_line

GOOD_ENTRY = {
    "task": "docket/smoke",
    "version": "1-A",
    "task_args": {},
    "model": "docket/scripted",
    "setup": {},
    "headline": {"metric": "accuracy", "direction": "higher", "value": "binary"},
    "value": 1.0,
    "samples": {"1": 1.0},
}
ENTRIES = st.builds(
    lambda key, value, drop: {
        k: v for k, v in {**GOOD_ENTRY, key: value}.items() if not (drop and k == key)
    },
    st.sampled_from(ENTRY_FIELDS),
    st.one_of(JSON_VALUES, st.dictionaries(st.text(max_size=3), JSON_VALUES, max_size=3)),
    st.booleans(),
)
BASELINES = st.one_of(
    JSON_VALUES.map(json.dumps),
    st.text(max_size=40),
    st.fixed_dictionaries(
        {"format": st.one_of(st.just(BASELINE_FORMAT), JSON_VALUES)},
        optional={
            "entries": st.one_of(st.lists(st.one_of(ENTRIES, JSON_VALUES), max_size=3), JSON_VALUES)
        },
    ).map(json.dumps),
)


def _usable(entry: dict[str, object]) -> None:
    """What `compare` relies on: a number `value`, a headline with its direction and kind, and
    per-sample numbers (or [time, event] pairs for survival)."""
    assert isinstance(entry["value"], (int, float))
    headline = entry["headline"]
    assert isinstance(headline, dict) and {"metric", "direction", "value"} <= set(headline)
    samples = entry["samples"]
    assert isinstance(samples, dict)
    if headline["value"] == "survival":
        assert all(isinstance(v, list) for v in samples.values())
    else:
        assert all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in samples.values()
        )


def _read(tmp: Path, text: str) -> list[dict[str, object]] | None:
    path = tmp / "baseline.json"
    path.write_text(text, encoding="utf-8")
    try:
        return read_baseline(path)
    except BaselineError as ex:
        one_line(str(ex), str(path))
        return None


def test_read_baseline_with_an_over_long_int_is_one_baseline_error(tmp_path: Path) -> None:
    _read(tmp_path, '{"format": "docket-baseline/1", "entries": [' + "1" * 5000 + "]}")


@settings(max_examples=150)
@given(BASELINES.filter(lambda t: "1" * 4300 not in t))
@example(
    json.dumps({"format": BASELINE_FORMAT, "entries": [{**GOOD_ENTRY, "samples": {"1": "x"}}]})
)
def test_read_baseline_returns_entries_compare_can_use(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    for entry in _read(tmp_path_factory.mktemp("baseline"), text) or []:
        _usable(entry)


@settings(max_examples=150)
@given(BASELINES.filter(lambda t: "1" * 4300 not in t and "[" * 900 not in t))
def test_read_baseline_never_raises_anything_but_baseline_error(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = tmp_path_factory.mktemp("baseline") / "baseline.json"
    path.write_text(text, encoding="utf-8")
    try:
        entries = read_baseline(path)
    except BaselineError as ex:
        one_line(str(ex), str(path))
        return
    assert all(set(ENTRY_FIELDS) <= set(e) and isinstance(e["samples"], dict) for e in entries)


def test_read_baseline_names_a_missing_or_non_utf8_file(tmp_path: Path) -> None:
    for path, content in ((tmp_path / "nope.json", None), (tmp_path / "bad.json", b"\xff")):
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(BaselineError) as info:
            read_baseline(path)
        one_line(str(info.value), str(path))


LOG_NAME = "2026-01-01T00-00-00+00-00_docket-smoke_abc.json"


@settings(max_examples=15)
@given(
    st.one_of(JSON_VALUES.map(json.dumps), st.text(max_size=60)),
    st.binary(max_size=60),
)
@example('{"version": 2, "status": "success"}', b"PK\x03\x04")
def test_corrupted_logs_become_one_counted_error_each(
    tmp_path_factory: pytest.TempPathFactory, json_text: str, eval_bytes: bytes
) -> None:
    folder = tmp_path_factory.mktemp("logs")
    (folder / LOG_NAME).write_text(json_text, encoding="utf-8")
    (folder / "run.eval").write_bytes(eval_bytes)
    (folder / "eval-set.json").write_text("{}", encoding="utf-8")  # not a log: ignored
    loaded = load_logs(folder)
    assert len(loaded.errors) == 2 and loaded.evals.empty
    for error in loaded.errors:
        one_line(str(error), error.path, "unreadable Inspect log")


@settings(max_examples=60)
@given(st.one_of(JSON_VALUES.map(json.dumps), st.text(max_size=60)))
@example('{"format": "docket-overrides/1", "overrides": [{"task": "t", "value": [1]}]}')
@example('{"format": "docket-prices/1", "models": {"m": {"input": -1, "output": 0}}}')
def test_overrides_prices_and_presets_fail_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    from docket.reports.overrides import OverrideError, read_overrides
    from docket.reports.prices import PriceError, load_prices
    from docket.suite import PresetError, load_preset

    folder = tmp_path_factory.mktemp("files")
    for reader, error in (
        (read_overrides, OverrideError),
        (load_prices, PriceError),
        (load_preset, PresetError),
    ):
        path = folder / "file.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            reader(str(path))
        except error as ex:
            one_line(str(ex), str(path))
