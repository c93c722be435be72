"""When a sample is an infrastructure failure, not a score: the model was never heard from.

Inspect scores a sample that hit its time limit whatever it holds, so a dead endpoint (connection
refused, every retry failed, the limit reached before the first reply) would be scored 0 like a
wrong answer. `unanswered_reason` names such samples; `docket suite` writes the reason into the
sample's `error` (so every metric drops it and Inspect's eval-set resume re-runs it), and the
reports read the same definition for logs the suite did not write.

A sample is *unanswered* when
- the model under test was called (a model event with no role) and no such call succeeded, or
- it hit a limit (time, working, tokens, ...) before any model call, of any role, succeeded.

A model-free sample (no model call by design, no limit hit) is not unanswered: its score does
not depend on a model, and it is reported as such, not as an error.
"""

from __future__ import annotations

from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalSample

#: The prefix of the `error` message docket writes into an unanswered sample.
UNANSWERED_PREFIX = "no successful model call"


def succeeded(event: ModelEvent) -> bool:
    """Whether a model call returned an answer (no error, at least one choice).

    Args:
        event: A model event of a sample's transcript.

    Returns:
        True when the call ended without an error and with a choice.
    """
    output = event.output
    return event.error is None and output.error is None and bool(output.choices)


def unanswered_reason(sample: EvalSample) -> str | None:
    """Why `sample` is an infrastructure failure, or None when its score is a measurement.

    Args:
        sample: A sample of an Inspect log, read with its events.

    Returns:
        One line starting with `UNANSWERED_PREFIX` (the limit, or the last call's error), or
        None: the sample already carries an `error`, some call of the model under test
        succeeded, or it made no model call by design.
    """
    if sample.error is not None:
        return None
    calls = [e for e in sample.events if isinstance(e, ModelEvent)]
    own = [e for e in calls if e.role is None]
    if sample.limit is not None and not any(succeeded(e) for e in calls):
        limit = sample.limit
        return f"{UNANSWERED_PREFIX} before the {limit.type} limit ({limit.limit:g})"
    if own and not any(succeeded(e) for e in own):
        last = last_model_error(sample)
        where = f"{len(own)} call(s) of {own[0].model}"
        return f"{UNANSWERED_PREFIX}: {where} failed" + (f" ({last})" if last else "")
    return None


def last_model_error(sample: EvalSample) -> str | None:
    """The last line of the last failed model call's error (the provider's reason), if any.

    Args:
        sample: A sample of an Inspect log, read with its events.

    Returns:
        E.g. `Error code: 500 - CUDA out of memory`, or None when no model call failed.
    """
    for event in reversed(sample.events):
        if isinstance(event, ModelEvent):
            text = str(event.error or event.output.error or "").strip()
            if text:
                return text.splitlines()[-1]
    return None
