"""docket.sandboxes.bwrap: the `bwrap` (bubblewrap) Inspect sandbox provider."""

from .config import BwrapConfig, BwrapConfigError
from .sandbox import BwrapSandboxEnvironment

__all__ = ["BwrapConfig", "BwrapConfigError", "BwrapSandboxEnvironment"]
