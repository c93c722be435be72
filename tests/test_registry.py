"""Every name docket registers with Inspect resolves (Inspect only warns on import failure)."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

import pytest

from docket.core.inspect_private import registry_lookup


def test_entry_point_targets_the_registry_module() -> None:
    points = [p for p in entry_points(group="inspect_ai") if p.name == "docket"]
    assert [p.value for p in points] == ["docket._registry"]


def test_registry_module_imports_cleanly() -> None:
    importlib.import_module("docket._registry")


REGISTERED = importlib.import_module("docket._registry").REGISTERED


@pytest.mark.parametrize(
    ("kind", "name"), [(kind, name) for kind, names in REGISTERED.items() for name in names]
)
def test_registered_name_resolves(kind: str, name: str) -> None:
    assert registry_lookup(kind, name) is not None  # type: ignore[arg-type]
