"""The model under test as a CLI agent: shell, python and file tools plus inert emulated apps."""

from docket.agents.cli_target.agent import CliTarget, TargetState, TargetTurn
from docket.agents.cli_target.tools import (
    SyntheticTool,
    app_tools,
    shell_tools,
    synthetic_tool,
)
from docket.agents.cli_target.workspace import (
    WorkspaceFile,
    read_workspace,
    restore_workspace,
    snapshot_files,
    snapshot_workspace,
)

__all__ = [
    "CliTarget",
    "SyntheticTool",
    "TargetState",
    "TargetTurn",
    "WorkspaceFile",
    "app_tools",
    "read_workspace",
    "restore_workspace",
    "shell_tools",
    "snapshot_files",
    "snapshot_workspace",
    "synthetic_tool",
]
