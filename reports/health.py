"""What a run's samples did, read from their events: model calls, failures, limits, parse results.

Every number here is read from the log itself (`EvalSample.events`, `.scores`, `.limit`,
`.error`), one sample epoch at a time:

- an *errored* sample (excluded from every metric, counted on the leaderboard and by `docket
  regress --max-errors`): the sample has an `error`, or it made no successful call of the model
  under test (model events with `role` None and no `error`) and stopped on an error or a limit
  (connection refused, time limit before the first response, every retry failed);
- model behaviour (shown beside the score so that a 0 that means "could not parse" is never
  read as a 0 that means "wrong"): answers a scorer could not parse (`parsed: false` in a score's
  metadata, or a truthy `unparsed` in its value dict, as DocVAL's scorers give), tool-call
  errors (tool events with an `error`, tool calls with a `parse_error`), refusals (`refused:
  true` in a score's metadata, or a reply stopped by the provider's `content_filter`), samples
  that hit the message or token limit, replies cut at `max_tokens`, samples whose model was
  offered tools and never made a structured tool call (its calls came back as text: a server
  that does not parse tool calls, or a model that never tried);
- why a headline has no value: per-sample failure flags in a score's value dict or metadata
  (`judge_failure`, `auditor_failure`, `no_alternatives`, any key ending in `_failure` or
  `_unparsed`, or starting with `no_`), model calls that asked for logprobs and got none.

Reading every sample's events is most of a report's time (about 6 ms a sample), so `docket
suite` stores each log's health in the log itself (`HEALTH_KEY` in the eval metadata: the summed
counts and the errored sample epochs), with a digest of what its samples were (eval id, and per
sample epoch its id, uuid, whether it errored and its score values). `read_log_health` uses that
record when the digest matches the log's sample summaries, and reads every sample otherwise (a
log from `inspect eval`, or one whose samples changed after the suite wrote it).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.log import (
    EvalLog,
    EvalSample,
    EvalSampleSummary,
    read_eval_log,
    read_eval_log_sample,
    read_eval_log_sample_summaries,
    read_eval_log_samples,
)

#: Role of the model under test in model events (roles such as judge or auditor are named).
UNDER_TEST = "model"
#: Sample fields the health never reads (skipped when reading: about 12 % faster).
UNREAD_FIELDS = {"messages", "attachments", "store"}
#: Score value key of scorers that count unparsed answers as a metric (`unparsed`: 1.0).
UNPARSED_VALUE = "unparsed"
#: Limit types counted as "hit the message or token limit" (model behaviour, not infrastructure).
BEHAVIOUR_LIMITS = ("message", "token")
#: Eval metadata key of a log's health record (`health_record`), written by `docket suite`.
HEALTH_KEY = "docket_health"
HEALTH_FORMAT = "docket-health/1"


def failure_key(key: str) -> bool:
    """Whether a score key names a per-sample failure flag (judge_failure, no_alternatives, ...).

    Args:
        key: A key of a score's value dict or metadata.

    Returns:
        True for keys ending in `_failure` or `_unparsed`, or starting with `no_`.
    """
    return key.endswith(("_failure", "_unparsed")) or key.startswith("no_")


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return math.isfinite(float(value)) and float(value) > 0
    if isinstance(value, str):
        return value.strip() not in ("", "0", "false", "False", "N", "no")
    return False


def _role(event: Any) -> str:
    return str(event.role) if getattr(event, "role", None) else UNDER_TEST


@dataclass
class SampleHealth:
    """What one sample epoch did, from its events, scores, limit and error."""

    sample_id: str
    epoch: int
    #: Successful model calls per role (`model` is the model under test).
    calls: Counter[str] = field(default_factory=Counter)
    #: Model calls that ended in an error, per role, and the first error's text.
    failed_calls: Counter[str] = field(default_factory=Counter)
    call_error: str | None = None
    error: str | None = None
    limit: str | None = None
    #: Replies cut at max_tokens, per role.
    truncated: Counter[str] = field(default_factory=Counter)
    #: max_tokens values the calls carried, per role.
    max_tokens: dict[str, set[int]] = field(default_factory=dict)
    tool_errors: int = 0
    refused: bool = False
    unparsed: bool = False
    #: Model calls that asked for logprobs and got none.
    no_logprobs: int = 0
    #: Failure flags set on this sample's scores (judge_failure, no_alternatives, ...).
    failures: set[str] = field(default_factory=set)
    #: The sample carries scores (an error written after scoring, e.g. by `docket suite`).
    scored: bool = False
    #: Successful calls of the model under test that offered tools, those whose reply carried a
    #: structured tool call, and the first text reply of one that carried none.
    tool_offers: int = 0
    tool_calls: int = 0
    tool_text: str | None = None

    @property
    def no_tool_call(self) -> bool:
        """Offered tools, the model under test never made a structured tool call."""
        return self.tool_offers > 0 and self.tool_calls == 0

    @property
    def model_events(self) -> int:
        """Model calls of any role, failed ones included."""
        return sum(self.calls.values()) + sum(self.failed_calls.values())

    @property
    def no_model_answer(self) -> bool:
        """No successful call of the model under test, and an error or a limit stopped it."""
        return self.calls[UNDER_TEST] == 0 and (self.error is not None or self.limit is not None)

    @property
    def errored(self) -> bool:
        """Excluded from every metric: an error, or a limit before the model ever answered."""
        return self.error is not None or self.no_model_answer

    @property
    def why_errored(self) -> str | None:
        """One line on why this sample is excluded (None when it is not)."""
        if not self.errored:
            return None
        if self.calls[UNDER_TEST] == 0 and (self.call_error or self.error is None):
            cause = "; ".join(
                part
                for part in (f"{self.limit} limit" if self.limit else "", self.call_error)
                if part
            )
            return f"no successful model call ({cause})"
        return str(self.error)


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:200] if lines else text


def _score_flags(health: SampleHealth, sample: EvalSample) -> None:
    for score in (sample.scores or {}).values():
        sources: list[dict[str, Any]] = []
        if isinstance(score.value, dict):
            sources.append(score.value)
            if _truthy(score.value.get(UNPARSED_VALUE)):
                health.unparsed = True
        if isinstance(score.metadata, dict):
            sources.append(score.metadata)
            if score.metadata.get("parsed") is False:
                health.unparsed = True
            if _truthy(score.metadata.get("refused")):
                health.refused = True
        for source in sources:
            for key, value in source.items():
                if failure_key(str(key)) and _truthy(value):
                    health.failures.add(str(key))


#: How Inspect writes a long text that it moved to the sample's attachments.
ATTACHMENT = "attachment://"


def _count_tool_call(
    health: SampleHealth, calls: list[Any] | None, text: str, attachments: dict[str, str]
) -> None:
    health.tool_offers += 1
    health.tool_calls += int(bool(calls))
    if not calls and health.tool_text is None and text.strip():
        if text.startswith(ATTACHMENT):  # the reply's own words, where the log holds them
            text = attachments.get(text.removeprefix(ATTACHMENT), text)
        health.tool_text = text


def sample_health(sample: EvalSample) -> SampleHealth:
    """The health of one sample epoch.

    Args:
        sample: A sample as read from a log (with its events).

    Returns:
        Its model calls, failures, limits and parse flags.
    """
    health = SampleHealth(str(sample.id), int(sample.epoch))
    if sample.error is not None:
        health.error = _first_line(sample.error.message)
    health.scored = bool(sample.scores)
    if sample.limit is not None:
        health.limit = str(sample.limit.type)
    for event in sample.events:
        if event.event == "model":
            role = _role(event)
            if event.config.max_tokens is not None:
                health.max_tokens.setdefault(role, set()).add(int(event.config.max_tokens))
            if event.error:
                health.failed_calls[role] += 1
                if role == UNDER_TEST and health.call_error is None:
                    health.call_error = _first_line(event.error)
                continue
            health.calls[role] += 1
            choice = event.output.choices[0] if event.output.choices else None
            if choice is None:
                continue
            if choice.stop_reason == "max_tokens":
                health.truncated[role] += 1
            if choice.stop_reason == "content_filter" and role == UNDER_TEST:
                health.refused = True
            if event.config.logprobs and choice.logprobs is None:
                health.no_logprobs += 1
            health.tool_errors += sum(
                1 for call in choice.message.tool_calls or [] if call.parse_error
            )
            if role == UNDER_TEST and event.tools:
                _count_tool_call(
                    health, choice.message.tool_calls, choice.message.text, sample.attachments
                )
        elif event.event == "tool" and event.error is not None:
            health.tool_errors += 1
    _score_flags(health, sample)
    return health


def read_health(path: str | Path) -> tuple[str, dict[tuple[str, int], SampleHealth]]:
    """The eval id of one log file and the health of each of its sample epochs.

    Args:
        path: An Inspect log file (`.eval` or `.json`).

    Returns:
        (eval id, {(sample id, epoch): health}); empty when the log holds no samples.
    """
    header = read_eval_log(str(path), header_only=True)
    found: dict[tuple[str, int], SampleHealth] = {}
    read_again: list[tuple[SampleHealth, int | str, int]] = []
    for sample in read_eval_log_samples(
        str(path), all_samples_required=False, exclude_fields=UNREAD_FIELDS
    ):
        health = sample_health(sample)
        found[(health.sample_id, health.epoch)] = health
        if health.tool_text is not None and health.tool_text.startswith(ATTACHMENT):
            read_again.append((health, sample.id, sample.epoch))
    for health, sample_id, epoch in read_again:
        _resolve_tool_text(str(path), health, sample_id, epoch)
    return header.eval.eval_id, found


def _resolve_tool_text(path: str, health: SampleHealth, sample_id: int | str, epoch: int) -> None:
    """Replace a text reply that Inspect moved to the sample's attachments by its words.

    The health reads samples without their attachments (`UNREAD_FIELDS`); the first text reply
    of a sample that never made a tool call is the one place that shows it, so the few samples
    whose reply is an attachment are read again, with them.
    """
    assert health.tool_text is not None
    sample = read_eval_log_sample(path, sample_id, epoch, exclude_fields={"messages", "store"})
    key = health.tool_text.removeprefix(ATTACHMENT)
    health.tool_text = sample.attachments.get(key, health.tool_text)


@dataclass
class RunHealth:
    """One run's sample epochs summed: what the leaderboard and `docket regress` print."""

    #: Sample epochs read from the log (0: the log holds no samples; nothing below is known).
    samples: int = 0
    errored: int = 0
    #: Why samples were excluded, with their counts ("no successful model call (...)": 2).
    errored_why: dict[str, int] = field(default_factory=dict)
    #: Sample epochs with no successful model call and an error or limit.
    no_model_answer: int = 0
    #: Of those, the ones stopped by a limit, not an error (Inspect scored them).
    scored_no_answer: int = 0
    #: Model calls of any role, and of the model under test that succeeded.
    model_events: int = 0
    model_calls: int = 0
    unparsed: int = 0
    tool_errors: int = 0
    tool_error_samples: int = 0
    refusals: int = 0
    #: Scored sample epochs per limit type (message, token, time, working, ...); the limits of
    #: errored ones are in `errored_why`.
    limits: dict[str, int] = field(default_factory=dict)
    #: Sample epochs with a reply cut at max_tokens, and replies cut per role.
    truncated: int = 0
    truncated_by_role: dict[str, int] = field(default_factory=dict)
    no_logprobs: int = 0
    #: Sample epochs with each failure flag (judge_failure: 2, ...), errored samples left out.
    failures: dict[str, int] = field(default_factory=dict)
    #: max_tokens values the calls carried, per role.
    max_tokens: dict[str, list[int]] = field(default_factory=dict)
    #: Scored sample epochs whose model was offered tools and never made a structured tool
    #: call, and the first text it answered with instead.
    no_tool_calls: int = 0
    no_tool_calls_text: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready counts (the leaderboard's `health`)."""
        return dict(self.__dict__)

    @property
    def behaviour_limits(self) -> int:
        """Sample epochs that hit the message or token limit."""
        return sum(self.limits.get(kind, 0) for kind in BEHAVIOUR_LIMITS)


def summarise(samples: list[SampleHealth]) -> RunHealth:
    """Sum the health of a run's sample epochs.

    Args:
        samples: Every sample epoch of one run.

    Returns:
        The counts the leaderboard shows.
    """
    run = RunHealth(samples=len(samples))
    failures: Counter[str] = Counter()
    why: Counter[str] = Counter()
    limits: Counter[str] = Counter()
    truncated: Counter[str] = Counter()
    tokens: dict[str, set[int]] = {}
    for s in samples:
        run.model_events += s.model_events
        run.model_calls += s.calls[UNDER_TEST]
        for role, values in s.max_tokens.items():
            tokens.setdefault(role, set()).update(values)
        if s.errored:
            run.errored += 1
            run.no_model_answer += int(s.no_model_answer)
            # Inspect's metrics counted it: scored, then marked errored (`docket suite`), or
            # a limit before the model ever answered
            run.scored_no_answer += int(s.scored or (s.no_model_answer and s.error is None))
            why[str(s.why_errored)] += 1
            continue
        if s.limit:
            limits[s.limit] += 1
        run.unparsed += int(s.unparsed)
        run.tool_errors += s.tool_errors
        run.tool_error_samples += int(s.tool_errors > 0)
        run.refusals += int(s.refused)
        run.no_tool_calls += int(s.no_tool_call)
        if s.no_tool_call and run.no_tool_calls_text is None:
            run.no_tool_calls_text = s.tool_text
        run.truncated += int(sum(s.truncated.values()) > 0)
        truncated.update(s.truncated)
        run.no_logprobs += int(s.no_logprobs > 0)
        failures.update(s.failures)
    run.failures = dict(sorted(failures.items()))
    run.errored_why = dict(why.most_common())
    run.limits = dict(sorted(limits.items()))
    run.truncated_by_role = dict(sorted(truncated.items()))
    run.max_tokens = {role: sorted(v) for role, v in sorted(tokens.items())}
    return run


def _roles_text(by_role: dict[str, int]) -> str:
    return ", ".join(f"{role} {n}" for role, n in by_role.items())


def behaviour_parts(health: RunHealth) -> list[str]:
    """Model-behaviour counts that are not zero, each as `name k/n` (scored sample epochs).

    Args:
        health: A run's summed health.

    Returns:
        E.g. `["unparsed 2/5", "tool-call errors 3 (2/5 samples)", "message limit 1/5"]`.
    """
    n = health.samples - health.errored
    parts = [text] if (text := no_tool_call_part(health)) else []
    if health.unparsed:
        parts.append(f"unparsed {health.unparsed}/{n}")
    if health.tool_errors:
        parts.append(f"tool-call errors {health.tool_errors} ({health.tool_error_samples}/{n})")
    if health.refusals:
        parts.append(f"refusals {health.refusals}/{n}")
    ordered = [*BEHAVIOUR_LIMITS, *sorted(set(health.limits) - set(BEHAVIOUR_LIMITS))]
    for kind in ordered:
        if health.limits.get(kind):
            parts.append(f"{kind} limit {health.limits[kind]}/{n}")
    if health.truncated:
        parts.append(
            f"truncated at max_tokens {health.truncated}/{n} "
            f"(replies: {_roles_text(health.truncated_by_role)})"
        )
    return parts


def no_tool_call_part(health: RunHealth) -> str | None:
    """Why an agent's 0 may not be a wrong answer: it never made a structured tool call.

    Args:
        health: A run's summed health.

    Returns:
        E.g. `no structured tool call 3/3 (replies were text, e.g. "functions.submit:"; a
        server that does not parse tool calls cannot run agent tasks)`, or None.
    """
    if not health.no_tool_calls:
        return None
    n = health.samples - health.errored
    said = health.no_tool_calls_text
    example = f'replies were text, e.g. "{_shown(said)}"' if said else "replies were empty"
    return (
        f"no structured tool call {health.no_tool_calls}/{n} ({example}; a server that does "
        "not parse tool calls cannot run agent tasks)"
    )


def _shown(text: str, width: int = 40) -> str:
    flat = "".join(c if c.isprintable() else " " for c in " ".join(text.split()))
    return flat[:width] + ("..." if len(flat) > width else "")


def failure_parts(health: RunHealth) -> list[str]:
    """The failure counts that can leave a headline without a value, each as `name k/n`.

    Args:
        health: A run's summed health.

    Returns:
        E.g. `["judge_failure 2/2", "no logprobs 2/2"]` (scored sample epochs).
    """
    n = health.samples - health.errored
    parts = [f"{key} {count}/{n}" for key, count in health.failures.items() if count]
    if health.no_logprobs:
        parts.append(f"no logprobs {health.no_logprobs}/{n}")
    return parts


def errored_text(health: RunHealth) -> str:
    """`2/2 samples errored: no successful model call (Connection error.) (2)`, or empty."""
    if not health.errored:
        return ""
    why = "; ".join(f"{text} ({count})" for text, count in health.errored_why.items())
    return f"{health.errored}/{health.samples} samples errored: {why}"


@dataclass
class LogHealth:
    """One log's health: summed, and the sample epochs left out of every metric."""

    eval_id: str
    run: RunHealth
    #: (sample id, epoch) of each errored sample epoch.
    errored: set[tuple[str, int]] = field(default_factory=set)
    #: Each sample epoch's health when the samples were read; None when it came from the log's
    #: health record.
    samples: dict[tuple[str, int], SampleHealth] | None = None


def samples_digest(eval_id: str, samples: Iterable[EvalSample | EvalSampleSummary]) -> str:
    """A hash of what a log's samples are: its eval id, and per sample epoch its id, uuid,
    whether it errored and its score values. Full samples and their summaries hash alike.

    Args:
        eval_id: The log's eval id.
        samples: Its samples, or their summaries.

    Returns:
        A sha256 hex digest.
    """
    rows = sorted(
        (
            str(s.id),
            int(s.epoch),
            s.uuid or "",
            s.error is not None,
            json.dumps(
                {k: v.value for k, v in (s.scores or {}).items()}, sort_keys=True, default=str
            ),
        )
        for s in samples
    )
    return hashlib.sha256(json.dumps([eval_id, rows]).encode()).hexdigest()


def health_record(eval_id: str, samples: list[EvalSample]) -> dict[str, Any]:
    """The health record `docket suite` stores under `HEALTH_KEY` in a log's eval metadata.

    Args:
        eval_id: The log's eval id.
        samples: Every sample of the log, with its events, as it is written.

    Returns:
        `{"format", "digest", "run": RunHealth counts, "errored": [[id, epoch], ...]}`.
    """
    found = [sample_health(s) for s in samples]
    errored = sorted([h.sample_id, h.epoch] for h in found if h.errored)
    return {
        "format": HEALTH_FORMAT,
        "digest": samples_digest(eval_id, samples),
        "run": summarise(found).to_json(),
        "errored": errored,
    }


def _from_record(record: Any, eval_id: str) -> LogHealth | None:
    if not isinstance(record, dict) or record.get("format") != HEALTH_FORMAT:
        return None
    try:
        run = RunHealth(**record["run"])
        errored = {(str(sid), int(epoch)) for sid, epoch in record["errored"]}
    except (KeyError, TypeError, ValueError):
        return None
    return LogHealth(eval_id, run, errored)


def read_log_health(path: str | Path, header: EvalLog | None = None) -> LogHealth:
    """The health of one log: from its health record when the record matches its samples
    (header and summaries read, no sample), else from every sample's events.

    Args:
        path: An Inspect log file (`.eval` or `.json`).
        header: Its header, when the caller has read it already.

    Returns:
        The summed health and the errored sample epochs.
    """
    header = header or read_eval_log(str(path), header_only=True)
    eval_id = header.eval.eval_id
    record = (header.eval.metadata or {}).get(HEALTH_KEY)
    stored = _from_record(record, eval_id)
    if stored is not None and isinstance(record, dict):
        summaries = read_eval_log_sample_summaries(str(path))
        if samples_digest(eval_id, summaries) == record.get("digest"):
            return stored
    eval_id, found = read_health(path)
    errored = {key for key, health in found.items() if health.errored}
    return LogHealth(eval_id, summarise(list(found.values())), errored, found)
