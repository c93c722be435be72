"""Reading a chain-of-thought reply: explanation, final answer, option log-probs.

The answer position is the first token after `Final Answer:` whose top-logprobs name an option;
an option token is matched after stripping spaces, brackets and a trailing period, so " A",
"A" and "(A" all count for option A (their probabilities are summed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from inspect_ai.model import Logprobs

from docket.benchmarks.scsuff.estimator import fill_missing, logsumexp
from docket.benchmarks.scsuff.prompts import COT_PREFIX

FINAL = re.compile(r"final\s+answer\s*:", re.IGNORECASE)
_LEAD = re.compile(r"^\s*" + re.escape(COT_PREFIX.rstrip(": ")) + r"\s*:?\s*", re.IGNORECASE)
_LOOKAHEAD_TOKENS = 3


@dataclass(frozen=True)
class ParsedReply:
    """A reply split at `Final Answer:` (answer None when no option could be read)."""

    explanation: str
    answer: str | None
    has_final: bool


def option_key(token: str) -> str:
    """A token normalised for matching against option letters."""
    return token.strip().strip("()[]*.:").strip().upper()


def parse_letter(text: str, options: Sequence[str], texts: Sequence[str] = ()) -> str | None:
    """The option named at the start of `text`: a letter like `B`/`(B)`, or an option's text."""
    stripped = text.strip()
    match = re.match(r"^\**\(?([A-Za-z])\)?(?:[\s.:*,)]|$)", stripped)
    if match and match.group(1).upper() in options:
        return match.group(1).upper()
    lowered = stripped.lower().rstrip(".")
    for letter, option_text in zip(options, texts, strict=False):
        if option_text and lowered == option_text.lower():
            return letter
    return None


def parse_reply(text: str, options: Sequence[str], texts: Sequence[str] = ()) -> ParsedReply:
    """Explanation (text before `Final Answer:`, CoT prefix removed) and the parsed answer.

    As in the release, a reply without `Final Answer:` has no explanation (and no answer).
    """
    found = FINAL.search(text)
    if found is None:
        return ParsedReply(explanation="", answer=None, has_final=False)
    explanation = _LEAD.sub("", text[: found.start()], count=1).strip()
    answer = parse_letter(text[found.end() :], options, texts)
    return ParsedReply(explanation=explanation, answer=answer, has_final=True)


def _options_at(
    top: Sequence[tuple[str, float]], options: Sequence[str]
) -> tuple[float, ...] | None:
    """Option log-probs from one position's top list, or None when no option is listed."""
    grouped: dict[str, list[float]] = {}
    for token, logprob in top:
        key = option_key(token)
        if key in options:
            grouped.setdefault(key, []).append(logprob)
    if not grouped:
        return None
    found = {key: logsumexp(values) for key, values in grouped.items()}
    return fill_missing(found, options, [logprob for _, logprob in top])


def answer_logprobs(
    logprobs: Logprobs | None, options: Sequence[str], after_final: bool
) -> tuple[float, ...] | None:
    """Option log-probs at the answer position of a generation, or None if unavailable.

    With `after_final`, the position is searched after the first `Final Answer:`; otherwise
    from the first generated token (a short answer-only reply).
    """
    if logprobs is None or not logprobs.content:
        return None
    tokens = logprobs.content
    start = 0
    if after_final:
        text = "".join(t.token for t in tokens)
        found = FINAL.search(text)
        if found is None:
            return None
        offset = 0
        start = len(tokens)
        for index, token in enumerate(tokens):
            offset += len(token.token)
            if offset > found.end():
                start = index
                break
    looked = 0
    for token in tokens[start:]:
        if not token.token.strip():
            continue
        top = [(t.token, t.logprob) for t in token.top_logprobs or []]
        if not top:
            top = [(token.token, token.logprob)]
        scored = _options_at(top, options)
        if scored is not None:
            return scored
        looked += 1
        if looked >= _LOOKAHEAD_TOKENS:
            break
    return None
