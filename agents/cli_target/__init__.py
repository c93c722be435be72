"""The model under test as a CLI agent: shell, python and file tools plus inert emulated apps."""

from docket.agents.cli_target.agent import CliTarget, TargetTurn
from docket.agents.cli_target.tools import target_tools
from docket.agents.cli_target.workspace import (
    list_files,
    read_action_log,
    restore_workspace,
    snapshot_workspace,
)

__all__ = [
    "CliTarget",
    "TargetTurn",
    "list_files",
    "read_action_log",
    "restore_workspace",
    "snapshot_workspace",
    "target_tools",
]
