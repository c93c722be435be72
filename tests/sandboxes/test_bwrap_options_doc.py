"""sandboxes/README.md's options table is generated from `BwrapConfig`'s field docstrings."""

from __future__ import annotations

from pathlib import Path

import pytest

from docket.core.results_tables import block, table_block
from docket.sandboxes.bwrap import options_doc
from docket.sandboxes.bwrap.config import BwrapConfig


def test_the_readme_holds_the_generated_table() -> None:
    held = table_block(options_doc.README.read_text(encoding="utf-8"), options_doc.BLOCK)
    assert held == options_doc.options_table()  # else: python -m docket.sandboxes.bwrap.options_doc


def test_every_option_has_a_row_with_its_default() -> None:
    rows = options_doc.options_table().splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == list(BwrapConfig.model_fields)
    assert rows[0].startswith("| `memory_mb` | `2048` | RAM of the whole sample")
    by_name = {row.split("`")[1]: row for row in rows}
    assert "| `host_uid` | unset |" in by_name["host_uid"]
    assert "| `host_uid_range` | `[1500000000, 1500004095]` |" in by_name["host_uid_range"]
    assert "| `ro_binds` | `[]` |" in by_name["ro_binds"]


def test_check_reports_a_drifted_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(block(options_doc.BLOCK, "| old |") + "\n", encoding="utf-8")
    monkeypatch.setattr(options_doc, "README", readme)
    assert options_doc.main(["--check"]) == 1
    assert "differs from BwrapConfig's docstrings" in capsys.readouterr().err
    assert options_doc.main([]) == 0
    assert options_doc.main(["--check"]) == 0
    assert table_block(readme.read_text(encoding="utf-8"), options_doc.BLOCK).startswith(
        "| option | default | meaning |"
    )


def test_the_readme_holds_the_pools_table_with_a_bound_per_pool() -> None:
    """#52 item 3: each host-wide pool with what bounds a sample's share (or says it is not)."""
    text = options_doc.README.read_text(encoding="utf-8")
    rows = text.split("### Host-wide pools", 1)[1].split("\n\n")[2].splitlines()[2:]
    cells = {row.split(" | ")[0].strip("| "): row.split(" | ")[1] for row in rows}
    for pool in ("File handles", "Tasks", "inotify", "Keys", "message queues", "Ptys", "AIO"):
        assert any(pool in name for name in cells), pool
    for pool in ("Locked memory", "Page cache of host files", "CPU", "Disk"):
        assert cells[pool]
    assert "`max_open_files`" in cells["File handles (`fs.file-max`)"]
    assert "**not bounded**" in cells["Page cache of host files"]
