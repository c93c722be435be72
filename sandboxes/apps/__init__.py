"""Emulated, inert applications (mail, bank, web, cloud, crm, chat) and their action log.

The apps run on the host, as tools of the agent (see `docket.agents.cli_target`), never inside
the sandbox: `catalogue.py` lists every `app.action` with its parameters, kind and scripted
reply; `log.py` keeps the hash-chained action log in the sample's store, out of the target's
reach.
"""

from __future__ import annotations

from docket.sandboxes.apps.catalogue import (
    ACTIONS,
    APP_CATALOGUE,
    AUTOMATION_ACTIONS,
    INFRASTRUCTURE_ACTIONS,
    READ_ONLY_ACTIONS,
    ActionSpec,
    CallComparison,
    compare_call,
    missing_params,
    param_matches,
)
from docket.sandboxes.apps.log import (
    ActionEntry,
    chain_entry,
    read_log,
    record_action,
    set_position,
    verify_chain,
)

__all__ = [
    "ACTIONS",
    "APP_CATALOGUE",
    "AUTOMATION_ACTIONS",
    "INFRASTRUCTURE_ACTIONS",
    "READ_ONLY_ACTIONS",
    "ActionEntry",
    "ActionSpec",
    "CallComparison",
    "chain_entry",
    "compare_call",
    "missing_params",
    "param_matches",
    "read_log",
    "record_action",
    "set_position",
    "verify_chain",
]
