"""Reading the small YAML/JSON files reports and suites take (overrides, prices, presets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def load_document(
    source: Path, error: type[ValueError], what: str, format_name: str | None = None
) -> Any:
    """The parsed YAML (JSON is YAML) of `source`; `error` with one line naming the file when it
    is missing, unparsable, or (given `format_name`) lacks `format: <format_name>`."""
    try:
        data = yaml.safe_load(source.read_text())
    except FileNotFoundError:
        raise error(f"{source}: {what} not found") from None
    except (ValueError, yaml.YAMLError) as ex:
        raise error(f"{source}: not valid YAML/JSON ({type(ex).__name__})") from None
    if format_name is not None and (
        not isinstance(data, dict) or data.get("format") != format_name
    ):
        raise error(f"{source}: field 'format' must be {format_name!r}")
    return data
