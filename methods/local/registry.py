"""Method plugins of `docket/local`: `-M method=NAME` with the method's own `-M` knobs.

A plugin builds a `DecodeFn` once per model API from the loaded checkpoint and its settings (a
speculative decoder loads its draft, SHINE turns a context into an adapter, ...). Its settings
dataclass (`settings.knob` fields) declares its knobs. It may bring its own loader when its
checkpoint is not a transformers causal LM (a masked-diffusion LM). A plugin registers itself
with the `method_plugin` decorator on its build function when its module is imported;
`docket/local` imports the plugin modules on the first `-M method=` that is not a built-in
decoding method, so runs without one import none of them.

Each `Generation.metadata` a plugin fills (NFE, acceptance rate, tokens per forward, ...) is
recorded in the call's `ModelOutput.metadata`, where Inspect logs keep it per model call.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .settings import knob_names

if TYPE_CHECKING:
    from .loading import CheckpointSpec, LoadedModel
    from .sampling import DecodeFn

BuildT = TypeVar("BuildT", bound=Callable[..., Any])


@dataclass(frozen=True)
class MethodPlugin:
    """A decoding method with knobs: `build(loaded, settings) -> DecodeFn`."""

    name: str
    build: Callable[[LoadedModel, Any], DecodeFn]
    #: The settings dataclass whose `knob` fields are the `-M` arguments this method accepts.
    settings: type
    #: Loads the checkpoint when it is not a transformers causal LM (None: the standard loader).
    load: Callable[[CheckpointSpec], LoadedModel] | None = None
    description: str = ""

    @property
    def args(self) -> tuple[str, ...]:
        """The `-M` arguments this method accepts besides the provider's own."""
        return knob_names(self.settings)


_PLUGINS: dict[str, MethodPlugin] = {}


def method_plugin(
    name: str,
    settings: type,
    description: str,
    load: Callable[[CheckpointSpec], LoadedModel] | None = None,
) -> Callable[[BuildT], BuildT]:
    """Register the decorated `build(loaded, settings) -> DecodeFn` as `-M method=<name>`.

    Args:
        name: The `-M method=` value that selects the method.
        settings: Its settings dataclass (`settings.knob` fields: the method's `-M` knobs).
        description: One line saying what the method does.
        load: Its own checkpoint loader, when the checkpoint is not a transformers causal LM.

    Returns:
        A decorator that registers the build function and returns it unchanged.
    """

    def register(build: BuildT) -> BuildT:
        _PLUGINS[name] = MethodPlugin(name, build, settings, load, description)
        return build

    return register


def _import_plugins() -> None:
    """Import every plugin module once: each registers its method as it is imported.

    Every subpackage of `docket.methods.decoding` with a `plugin` module is a decoding method
    (adding one is its folder); SHINE and AffIn-Space register from their own methods.
    """
    from docket.methods import decoding
    from docket.methods.adaptation import shine  # noqa: F401
    from docket.methods.spatial import affin  # noqa: F401

    for found in pkgutil.iter_modules(decoding.__path__, prefix=f"{decoding.__name__}."):
        if found.ispkg and importlib.util.find_spec(f"{found.name}.plugin") is not None:
            importlib.import_module(f"{found.name}.plugin")


def plugin_names() -> list[str]:
    """Every plugin name `-M method=` accepts.

    Returns:
        The registered method names, sorted.
    """
    _import_plugins()
    return sorted(_PLUGINS)


def find_plugin(name: str) -> MethodPlugin | None:
    """The plugin called `name`.

    Args:
        name: A `-M method=` value.

    Returns:
        Its plugin, or None when no plugin has that name.
    """
    if name not in _PLUGINS:
        _import_plugins()
    return _PLUGINS.get(name)
