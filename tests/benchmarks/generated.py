"""Shared by the private-split tests: write a split through `docket generate` as a user would."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docket.cli import main


def generate(tmp_path: Path, benchmark: str, secret: str, name: str, size: int) -> Path:
    """`docket generate BENCHMARK --seed SECRET --out TMP/NAME --size SIZE`, asserted to succeed.

    Args:
        tmp_path: The test's temporary folder.
        benchmark: The benchmark folder's name.
        secret: The secret seed.
        name: The split folder's name under `tmp_path`.
        size: `--size`.

    Returns:
        The split's folder.
    """
    out = tmp_path / name
    argv = ["generate", benchmark, "--seed", secret, "--out", str(out), "--size", str(size)]
    assert main(argv) == 0
    return out


def generator(benchmark: str, size: int) -> Callable[..., Path]:
    """`generate` bound to one benchmark: call it as `(tmp_path, secret, name="split", size=N)`.

    Args:
        benchmark: The benchmark folder's name.
        size: The default `--size`.

    Returns:
        The bound function.
    """

    def bound(tmp_path: Path, secret: str, name: str = "split", size: int = size) -> Path:
        return generate(tmp_path, benchmark, secret, name, size)

    return bound


def manifest(out: Path) -> dict[str, Any]:
    """The `split.json` a generated split holds.

    Args:
        out: The split's folder.

    Returns:
        The manifest.
    """
    loaded: dict[str, Any] = json.loads((out / "split.json").read_text())
    return loaded
