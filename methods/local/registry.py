"""Method plugins of `docket/local`: `-M method=NAME` with the method's own `-M` knobs.

A plugin builds a `DecodeFn` once per model API from the loaded checkpoint and its knobs (a
speculative decoder loads its draft, SHINE turns a context into an adapter, ...). It may bring
its own loader when its checkpoint is not a transformers causal LM (a masked-diffusion LM).
Plugins live in their own modules and register on import; `PLUGIN_MODULES` says which module
provides which name, so `docket/local` imports only the one asked for (torch stays lazy).

Each `Generation.metadata` a plugin fills (NFE, acceptance rate, tokens per forward, ...) is
recorded in the call's `ModelOutput.metadata`, where Inspect logs keep it per model call.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .loading import CheckpointSpec, LoadedModel
from .sampling import DecodeFn


@dataclass(frozen=True)
class MethodPlugin:
    """A decoding method with knobs: `build(loaded, knobs) -> DecodeFn`."""

    name: str
    build: Callable[[LoadedModel, Mapping[str, Any]], DecodeFn]
    #: The `-M` arguments this method accepts besides the provider's own.
    args: tuple[str, ...] = ()
    #: Loads the checkpoint when it is not a transformers causal LM (None: the standard loader).
    load: Callable[[CheckpointSpec], LoadedModel] | None = None
    description: str = ""


#: Method name -> module that registers it (imported on first use).
PLUGIN_MODULES: dict[str, str] = {
    "dsb": "docket.methods.decoding.dsb",
    "dustin": "docket.methods.decoding.dustin",
    "flash": "docket.methods.decoding.flash",
    "shine": "docket.methods.adaptation.shine",
    "affin": "docket.methods.spatial.affin",
}

_PLUGINS: dict[str, MethodPlugin] = {}


def register_method(plugin: MethodPlugin) -> MethodPlugin:
    """Register `plugin` under its name (modules call this at import time)."""
    _PLUGINS[plugin.name] = plugin
    return plugin


def plugin_names() -> list[str]:
    """Every plugin name `-M method=` accepts (registered or importable)."""
    return sorted(set(_PLUGINS) | set(PLUGIN_MODULES))


def find_plugin(name: str) -> MethodPlugin | None:
    """The plugin called `name`, importing its module if needed; None if there is none."""
    if name not in _PLUGINS and name in PLUGIN_MODULES:
        importlib.import_module(PLUGIN_MODULES[name])
    return _PLUGINS.get(name)
