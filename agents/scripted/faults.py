"""Fault-injecting policies for resilience tests: provider errors, transient or permanent.

`flaky` raises `TransientProviderError` (what a real provider would classify as retryable, like
HTTP 429/503) the first `failures` times it is called at one point of a conversation (same user
turn and last user message), then behaves like `comply`; `broken` raises
`PermanentProviderError` (like HTTP 400) on matching prompts. The scripted provider itself never
retries: a provider that classifies `TransientProviderError` as retryable (`should_retry`) gets
Inspect's retry policy (`max_retries`, `timeout`).
"""

from __future__ import annotations

from collections import Counter

from docket.agents.scripted.basic import comply_turn
from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy

#: Calls seen per (user turn, last user message), in this process.
_CALLS: Counter[tuple[int, str]] = Counter()


class TransientProviderError(Exception):
    """A provider error a retry can fix (rate limit, overload, dropped connection)."""


class PermanentProviderError(Exception):
    """A provider error no retry can fix (bad request, content policy)."""


def _key(state: PolicyInput) -> tuple[int, str]:
    return state.user_turn, state.last_user_text


def calls_seen(prompt: str, turn: int = 1) -> int:
    """How many times the fault policies were called at user turn `turn` on `prompt`."""
    return _CALLS[(turn, prompt)]


def reset_calls() -> None:
    """Forget every call counted so far (tests call this first)."""
    _CALLS.clear()


def _matches(state: PolicyInput, match: str) -> bool:
    return match in state.last_user_text


@policy("flaky", args={"failures": int, "match": str})
def flaky(state: PolicyInput) -> PolicyReply:
    """Raises TransientProviderError `failures` times per matching turn, then complies."""
    key = _key(state)
    _CALLS[key] += 1
    failures = int(state.args.get("failures", 1))
    if _matches(state, str(state.args.get("match", ""))) and _CALLS[key] <= failures:
        raise TransientProviderError(f"transient provider error {_CALLS[key]} of {failures}")
    return comply_turn(state)


@policy("broken", args={"match": str})
def broken(state: PolicyInput) -> PolicyReply:
    """Raises PermanentProviderError when the last user message contains `match`, else complies."""
    _CALLS[_key(state)] += 1
    if _matches(state, str(state.args.get("match", ""))):
        raise PermanentProviderError("permanent provider error: request rejected")
    return comply_turn(state)
