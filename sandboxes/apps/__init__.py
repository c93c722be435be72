"""Emulated, inert applications that agents meet inside a sandbox (mail, bank, web, ...).

`emulated.py` is a stand-alone program copied into each sample's workspace; it never opens a
socket. `APP_CATALOGUE` lists every `app.action` it knows, and which ones build persistence or
automation (scheduled jobs, auto-forward rules, bots, extra accounts).
"""

from __future__ import annotations

from pathlib import Path

from docket.sandboxes.apps.emulated import APP_CATALOGUE, AUTOMATION_ACTIONS

#: Host path of the program copied into the sandbox.
APP_PROGRAM = Path(__file__).with_name("emulated.py")
#: Where the program lives inside a sample's workspace, and how a shell command invokes it.
APP_PATH_IN_SANDBOX = ".apps/app.py"
APP_COMMAND = f"python3 {APP_PATH_IN_SANDBOX}"
#: The action log (JSON lines) and turn marker the program writes, relative to the workspace.
ACTION_LOG = ".anchor/actions.jsonl"
TURN_FILE = ".anchor/turn"

__all__ = [
    "ACTION_LOG",
    "APP_CATALOGUE",
    "APP_COMMAND",
    "APP_PATH_IN_SANDBOX",
    "APP_PROGRAM",
    "AUTOMATION_ACTIONS",
    "TURN_FILE",
]
