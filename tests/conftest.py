"""Hypothesis profiles for every property test (`HYPOTHESIS_PROFILE=dev` for a wider search),
an environment that one test cannot leak into the next, and the S3 store of the log-store
tests (`s3_store`, `s3_env`: SeaweedFS on 127.0.0.1, `tests/s3_support.py`).

`ci` (the default) is derandomized, so a CI run is deterministic and reproducible; `dev` draws
fresh random examples and more of them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.s3_support import s3_env, s3_store

__all__ = ["s3_env", "s3_store"]  # the S3 log-store fixtures (tests/s3_support.py)

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=500,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _restore_pythonpath() -> Iterator[None]:
    """Put PYTHONPATH back after each test: Flower's Ray backend writes the test process's
    sys.path (the checkout included) into it, and later subprocesses (fresh venvs) would import
    docket from the checkout instead of what they installed."""
    before = os.environ.get("PYTHONPATH")
    yield
    if before is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = before
