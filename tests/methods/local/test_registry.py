"""The method registry: filled by the decorator, a decoding method is found from its folder, and
`docket list` shows each method's knobs as its settings dataclass declares them."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from docket.cli import main
from docket.methods import decoding
from docket.methods.decoding.dsb.algorithm import DSBSettings
from docket.methods.local import registry
from docket.methods.local.settings import knob, knob_fields

PLUGIN = """
from dataclasses import dataclass

from docket.methods.local.registry import method_plugin
from docket.methods.local.settings import knob


@dataclass(frozen=True)
class EchoSettings:
    width: int = knob(3, "tokens echoed per step", minimum=1)


@method_plugin("echo_probe", EchoSettings, "a probe method found from its folder")
def build(loaded, settings):
    return settings.width
"""


def test_a_decoding_method_is_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "echo_probe"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "plugin.py").write_text(PLUGIN)
    registry.plugin_names()  # the shipped plugins register into the real table first
    monkeypatch.setattr(decoding, "__path__", [*decoding.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "_PLUGINS", dict(registry._PLUGINS))
    monkeypatch.delitem(sys.modules, "docket.methods.decoding.echo_probe", raising=False)
    monkeypatch.delitem(sys.modules, "docket.methods.decoding.echo_probe.plugin", raising=False)
    assert "echo_probe" in registry.plugin_names()
    found = registry.find_plugin("echo_probe")
    assert found is not None
    assert found.args == ("width",)
    assert found.settings() == found.settings(width=3)
    assert [f.default for f in knob_fields(found.settings)] == [3]
    assert {"dsb", "dustin", "flash", "shine", "affin"} <= set(registry.plugin_names())


def test_the_decorator_registers_without_a_name_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_PLUGINS", {})

    @dataclasses.dataclass(frozen=True)
    class Knobs:
        depth: int = knob(2, "layers kept")

    @registry.method_plugin("probe", Knobs, "a probe")
    def build(loaded: object, settings: Knobs) -> int:
        return settings.depth

    assert registry._PLUGINS["probe"].build is build
    assert registry._PLUGINS["probe"].args == ("depth",)


def test_docket_list_shows_each_knob_with_its_default_and_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "│" in line]
    cells = [[cell.strip() for cell in row.split("│")[1:-1]] for row in rows]
    threshold = next(f for f in knob_fields(DSBSettings) if f.name == "threshold")
    assert threshold.default == 0.9
    knob_rows = [c for c in cells if len(c) == 4 and c[1] == "threshold" and c[2] == "0.9"]
    assert knob_rows and str(threshold.metadata["help"]).startswith(knob_rows[0][3])
    block = next(f for f in knob_fields(DSBSettings) if f.name == "block_length")
    assert any(c[1:3] == ["block_length", repr(block.default)] for c in cells if len(c) == 4)
