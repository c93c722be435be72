"""The bwrap sandbox config (`sandboxes/bwrap/config.py`) from arbitrary dicts and YAML files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from docket.sandboxes.bwrap.config import (
    BwrapConfig,
    BwrapConfigError,
    accepted_keys,
    load_config,
    parse_config,
)
from tests.properties.prop_strategies import JSON_VALUES, one_line

PREFIX = "bwrap sandbox config:"
PATHS = st.one_of(
    st.sampled_from(["/", "/proc", "/dev/x", "/usr", "/opt/a:/data", "rel", "/a/../proc", "/x:"]),
    st.text(max_size=12),
)
VALUES = st.one_of(
    JSON_VALUES,
    st.integers(-5, 5000),
    st.lists(PATHS, max_size=3),
    st.dictionaries(PATHS, PATHS, max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)
CONFIGS = st.dictionaries(
    st.one_of(st.sampled_from(accepted_keys()), st.text(max_size=6), st.integers()),
    VALUES,
    max_size=4,
)


def _check(config_or_error: BwrapConfig | BwrapConfigError) -> None:
    if isinstance(config_or_error, BwrapConfigError):
        one_line(str(config_or_error), PREFIX)
        return
    try:  # a config that loads yields valid bind pairs or one clear error
        pairs = config_or_error.bind_pairs()
    except BwrapConfigError as ex:
        one_line(str(ex), PREFIX, "ro_binds")
        return
    for host, dest in pairs:
        assert host.startswith("/") and dest.startswith("/")
        assert dest != "/" and not dest.startswith(("/proc", "/dev"))


@settings(max_examples=200)
@given(CONFIGS)
@example({"memory_mb": 10**400})
@example({"env": {"A=B": "1"}})
@example({"ro_binds": {"/x": "/a/../proc"}})
@example({1: 2})
def test_parse_config_returns_a_config_or_one_error(data: dict[object, object]) -> None:
    try:
        config = parse_config(data)  # type: ignore[arg-type]  # any YAML mapping, on purpose
    except BwrapConfigError as ex:
        _check(ex)
        return
    assert isinstance(config, BwrapConfig)
    _check(config)
    assert parse_config(config.model_dump()) == config  # a loaded config round-trips


YAML_TEXT = st.one_of(
    st.text(max_size=80),
    CONFIGS.map(lambda d: yaml.safe_dump(d, allow_unicode=True)),
    st.sampled_from(
        [
            "- a\n- b\n",
            "memory_mb: [\n",
            "!!python/object:os.system {}\n",
            "a: &x [*x]\n",
            "\t- x",
            "memory_mb: 0\n",
            "null\n",
            "[" * 300,
            "max_processes: 1e999\n",
        ]
    ),
)


@settings(max_examples=150)
@given(YAML_TEXT)
@example("a: 1\n" * 3 + "\x00")
def test_load_config_from_yaml_returns_a_config_or_one_error(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = tmp_path_factory.mktemp("bwrap") / "config.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        config = load_config(str(path))
    except BwrapConfigError as ex:
        _check(ex)
        return
    _check(config)


def test_load_config_names_a_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"memory_mb: \xff\n")
    with pytest.raises(BwrapConfigError) as info:
        load_config(str(path))
    one_line(str(info.value), PREFIX, str(path))


def test_load_config_names_a_file_nested_too_deep(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("memory_mb: " + "[" * 2000, encoding="utf-8")
    with pytest.raises(BwrapConfigError) as info:
        load_config(str(path))
    one_line(str(info.value), PREFIX, str(path))
