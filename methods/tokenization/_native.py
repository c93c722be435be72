"""The compiled core, imported on first use with one clear line when it was not built."""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType

MISSING = (
    "docket.methods.tokenization: the native core (_incbpe) is not built; install g++ "
    "(C++17) and reinstall docket (pip install -e .). The pure-Python oracle "
    "(docket.methods.tokenization.oracle) works without it"
)


class NativeCoreMissing(ImportError):
    """The C++ extension is not importable (no compiler at install time)."""


@lru_cache(maxsize=1)
def native() -> ModuleType:
    """The `_incbpe` extension module."""
    try:
        from . import _incbpe  # type: ignore[attr-defined]
    except ImportError as error:
        raise NativeCoreMissing(f"{MISSING} ({error})") from None
    return _incbpe
