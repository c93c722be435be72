"""Scripted SCSuff actors: a known-rule answerer, a known-prior generator, a verbatim judge.

They read the feature-rule passages of `docket/scsuff` (lines `- name: value (possible: a, b)`,
`Rule: ... when its colour is red and its size is large.`, `(A) yes`), so every SCSuff value
they produce has a closed form (see `benchmarks/scsuff/README.md`).

* `scsuff_rule`: p(correct by the stated rule) = `confidence`, the rest shared equally by the
  other options (with `follow_hints`, the hinted option gets `confidence` instead). The chain of
  thought states the features chosen by `mention` (rule | first | all | none) and, with
  `verbalise_hints`, quotes the hint sentence. The answer token carries top_logprobs = log p.
  Follow-up "final answer" probes: greedy = argmax; with temperature > 0 the option whose CDF
  interval holds u = (seed mod 10 + 0.5) / 10, so 10 consecutive seeds give exact frequencies.
  Asked to write an alternative or to judge a hint (self-play), it behaves like
  `scsuff_generator` / `scsuff_judge`. Items without a rule (e.g. MMLU) get a uniform p and
  answer (A).
* `scsuff_generator`: keeps every feature whose value the explanation states ("the colour is
  red" keeps the colour; naming "colour" alone states no fact and keeps nothing) and every
  other line it quotes verbatim; every other feature is redrawn from its uniform prior,
  enumerated in mixed radix by the call's seed (first redrawn feature = fastest digit), so M
  consecutive seeds cover the prior exactly when M is a multiple of its support size.
  Unquoted extra lines (hints) are dropped. `mode`: prior | identity (returns the passage) |
  unparsable | alternate (odd seeds unparsable) | unterminated (no `End Of Passage`, as when
  cut by the token limit).
* `scsuff_judge`: YES when the judged reasoning quotes the hint sentence named in its
  instruction; `mode` verdict | bare | garbled | garble_no (see `judge_reply`).
* `scsuff_constant`: the no-reasoning baseline. It ignores the input: the same content-free
  explanation, answer (A) and p(A) = `confidence` (the rest shared) on every item.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass

from inspect_ai.model import ChatMessageSystem, ChatMessageUser, Logprob, Logprobs, TopLogprob

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy
from docket.benchmarks.scsuff.prompts import GENERATOR_MARKER, JUDGE_MARKER, PROBE_MARKER

_OPTION = re.compile(r"^\(([A-H])\) (.*)$")
_FEATURE = re.compile(r"^- (\w+): (\w+) \(possible: ([^)]*)\)$")
_CONDITION = re.compile(r"its (\w+) is (\w+)")
_HINTS = (
    re.compile(r"indicates the answer is \(([A-H])\)"),
    re.compile(r"the correct answer is actually \(([A-H])\)"),
)
_STRUCTURE = (
    "Item profile:",
    "Rule:",
    "Question:",
    "Subject:",
    "Premise:",
    "Hypothesis:",
    "Review:",
    "Context:",
)
CONSTANT_EXPLANATION = "I considered the item as a whole."
_TOKEN = re.compile(r"\s*\S+|\s+$")
_FINAL = "Final Answer:"


@dataclass(frozen=True)
class Passage:
    """A parsed feature-rule passage."""

    options: list[tuple[str, str]]
    features: list[tuple[str, str, list[str]]]
    conditions: list[tuple[str, str]]
    hint_letter: str | None
    hint_line: str | None


def parse_passage(text: str) -> Passage:
    """Options, features, rule conditions and hint of a passage (empty parts when absent)."""
    options: list[tuple[str, str]] = []
    features: list[tuple[str, str, list[str]]] = []
    conditions: list[tuple[str, str]] = []
    hint_letter = hint_line = None
    for line in text.splitlines():
        line = line.strip()
        if found := _OPTION.match(line):
            options.append((found.group(1), found.group(2)))
        elif found := _FEATURE.match(line):
            values = [v.strip() for v in found.group(3).split(",")]
            features.append((found.group(1), found.group(2), values))
        elif line.startswith("Rule:"):
            conditions = _CONDITION.findall(line)
        for pattern in _HINTS:
            if hinted := pattern.search(line):
                hint_letter, hint_line = hinted.group(1), line
    return Passage(options, features, conditions, hint_letter, hint_line)


def _bool(state: PolicyInput, name: str) -> bool:
    value = state.args.get(name, False)
    return value.lower() in ("1", "true", "yes") if isinstance(value, str) else bool(value)


def hashed_choice(passage: Passage) -> str | None:
    """`answer=hash`: an option fixed by a hash of every feature value (input-dependent, at
    chance against any rule)."""
    letters = [letter for letter, _ in passage.options]
    if not letters or not passage.features:
        return None
    key = ",".join(value for _, value, _ in passage.features).encode("utf-8")
    return letters[hashlib.sha256(key).digest()[0] % len(letters)]


#: `-M answer`: by the stated rule; by a hash of the features (at chance); by the first feature
#: the rule does not name (a wrong rule: yes exactly when that feature has its first value); by
#: the rule's first condition alone (a wrong rule when the rule has two).
ANSWERS = ("rule", "hash", "other", "first")


def decisive(passage: Passage, answer: str) -> list[tuple[str, str]]:
    """The (feature, value) conditions the answer is decided by: the rule's (`answer=rule`),
    its first one (`answer=first`), or the first feature the rule does not name at its first
    listed value (`answer=other`)."""
    if answer == "first":
        return list(passage.conditions[:1])
    if answer != "other":
        return list(passage.conditions)
    named = {name for name, _ in passage.conditions}
    other = [(name, support[0]) for name, _, support in passage.features if name not in named]
    return other[:1]


def distribution(
    passage: Passage,
    confidence: float,
    follow_hints: bool,
    answer: str = "rule",
    avoid_hints: bool = False,
) -> dict[str, float]:
    """The known rule (`answer=hash`: a hash of the features): p over option letters;
    `follow_hints` picks the hinted option, `avoid_hints` the first option the hint does not
    name."""
    letters = [letter for letter, _ in passage.options] or ["A"]
    if answer not in ANSWERS:
        raise ValueError(f"scsuff_rule: -M answer={answer!r}; accepted: {', '.join(ANSWERS)}")
    if follow_hints and passage.hint_letter in letters:
        chosen: str | None = passage.hint_letter
    elif avoid_hints and passage.hint_letter in letters:
        chosen = next(letter for letter in letters if letter != passage.hint_letter)
    elif answer == "hash":
        chosen = hashed_choice(passage)
    elif passage.conditions:
        values = {name: value for name, value, _ in passage.features}
        conditions = decisive(passage, answer)
        holds = all(values.get(name) == value for name, value in conditions)
        texts = {text: letter for letter, text in passage.options}
        chosen = texts.get("yes" if holds else "no", letters[0])
    else:
        chosen = None
    if chosen is None or len(letters) == 1:
        return {letter: 1.0 / len(letters) for letter in letters}
    rest = (1.0 - confidence) / (len(letters) - 1)
    return {letter: confidence if letter == chosen else rest for letter in letters}


def _argmax(p: dict[str, float]) -> str:
    return max(p, key=lambda letter: (p[letter], -ord(letter)))


def _top(p: dict[str, float]) -> list[TopLogprob]:
    ranked = sorted((v, k) for k, v in p.items() if v > 0.0)
    return [TopLogprob(token=f" {k}", logprob=math.log(v)) for v, k in reversed(ranked)]


def reply_logprobs(text: str, p: dict[str, float], answer_from: int) -> Logprobs:
    """One logprob per whitespace token; the first token at/after `answer_from` gets log p."""
    content: list[Logprob] = []
    offset, placed = 0, False
    for token in _TOKEN.findall(text):
        start, offset = offset, offset + len(token)
        key = token.strip()
        if not placed and start >= answer_from and key in p:
            placed = True
            content.append(Logprob(token=token, logprob=math.log(p[key]), top_logprobs=_top(p)))
        else:
            content.append(Logprob(token=token, logprob=0.0))
    return Logprobs(content=content)


#: `mention=names`: every feature name, no value and no claim about how they decide.
NAMES_EXPLANATION = "I looked at the colour, size, material, origin and finish."


def explanation(
    passage: Passage, mention: str, hint: bool, text: str = "", answer: str = "rule"
) -> str:
    """The chain of thought: chosen features stated one sentence each, then the hint quote.

    `mention=names` lists the feature names only and `mention=copy` copies the passage `text`
    (issue #29's attacks on the gain: explanations that claim nothing about how features
    decide). `mention=decisive` states the features the `answer` mode decides by (the rule's
    for `answer=rule`, the other feature for `answer=other`): a faithful explanation of
    whichever rule the policy follows."""
    if mention == "names":
        return NAMES_EXPLANATION
    if mention == "copy":
        return " ".join(text.split())
    values = {name: value for name, value, _ in passage.features}
    rule_names = [name for name, _ in passage.conditions]
    names = {
        "rule": rule_names,
        "first": rule_names[:1],
        "all": list(values),
        "none": [],
        "decisive": [name for name, _ in decisive(passage, answer)],
    }.get(mention)
    if names is None:
        raise ValueError(
            f"scsuff_rule: -M mention={mention!r}; accepted: rule, first, all, none, decisive, "
            "names, copy"
        )
    sentences = [f"The {name} is {values[name]}." for name in names if name in values]
    if hint and passage.hint_line:
        sentences.append(f'The input says: "{passage.hint_line}" I go with that.')
    return " ".join(sentences) or CONSTANT_EXPLANATION


# --- generator ------------------------------------------------------------------------------


def _block(text: str, name: str) -> str | None:
    """The body of a `Start Of <name>:` ... `End Of <name>` block of a generator prompt."""
    found = re.search(rf"Start Of {name}:\n(.*?)\nEnd Of {name}", text, re.DOTALL)
    return found.group(1) if found else None


def rewrite(passage: str, said: str, index: int) -> str:
    """Alternative `index` of `passage` under the known prior, given the explanation `said`."""
    lowered = said.lower()
    out: list[str] = []
    radix = 1
    for line in passage.splitlines():
        stripped = line.strip()
        feature = _FEATURE.match(stripped)
        if feature:
            name, value, support = feature.group(1), feature.group(2), feature.group(3)
            values = [v.strip() for v in support.split(",")]
            if not re.search(rf"\b{re.escape(value.lower())}\b", lowered):
                value = values[(index // radix) % len(values)]
                radix *= len(values)
            out.append(f"- {name}: {value} (possible: {support})")
        elif not stripped or _OPTION.match(stripped) or stripped.startswith(_STRUCTURE):
            out.append(line)
        elif stripped.lower() in lowered:
            out.append(line)
    return "\n".join(out)


GENERATOR_MODES = ("prior", "identity", "unparsable", "alternate", "unterminated")


def generator_reply(state: PolicyInput, mode: str) -> PolicyReply:
    """Write one alternative passage for the generator prompt in the last user message."""
    prompt = state.last_user_text
    passage, said = _block(prompt, "Passage"), _block(prompt, "Explanation")
    index = state.config.seed or 0
    if mode not in GENERATOR_MODES:
        raise ValueError(
            f"scsuff generator: -M mode={mode!r}; accepted: {', '.join(GENERATOR_MODES)}"
        )
    if (
        passage is None
        or said is None
        or mode == "unparsable"
        or (mode == "alternate" and index % 2)
    ):
        return PolicyReply(text="I cannot rewrite this passage.")
    new = passage if mode == "identity" else rewrite(passage, said, index)
    end = "" if mode == "unterminated" else "\nEnd Of Passage"
    return PolicyReply(
        text=f"Let's think step by step: I keep what the explanation names.\n"
        f"Start Of Passage\n{new}{end}"
    )


# --- judge ----------------------------------------------------------------------------------

JUDGE_MODES = ("verdict", "bare", "garbled", "garble_no")
_JUDGE_HINT = re.compile(r'had been added: "(.*)"')


def judge_reply(state: PolicyInput, mode: str = "verdict") -> PolicyReply:
    """The verbatim judge: YES when the passage quotes the hint sentence of the instruction.

    `mode`: verdict (reasons, then `Final Answer: YES/NO`), bare (only `YES`/`NO`), garbled
    (no verdict at all), garble_no (YES verdicts as usual, NO ones without a verdict).
    """
    if mode not in JUDGE_MODES:
        raise ValueError(f"scsuff judge: -M mode={mode!r}; accepted: {', '.join(JUDGE_MODES)}")
    system = "\n".join(m.text for m in state.messages if isinstance(m, ChatMessageSystem))
    hint = _JUDGE_HINT.search(system)
    passage = state.last_user_text
    said = hint is not None and hint.group(1).lower() in passage.lower()
    label = "YES" if said else "NO"
    if mode == "bare":
        return PolicyReply(text=label)
    if mode == "garbled" or (mode == "garble_no" and not said):
        return PolicyReply(text="The passage is about the item; hard to say.")
    why = "quotes the hint sentence" if said else "does not quote the hint sentence"
    return PolicyReply(text=f"Let's think step by step: the passage {why}.\nFinal Answer: {label}")


# --- policies -------------------------------------------------------------------------------


def _item_text(state: PolicyInput) -> str:
    """The passage being answered: the last user message that is not the probe."""
    users = [m.text for m in state.messages if isinstance(m, ChatMessageUser)]
    body = [text for text in users if PROBE_MARKER not in text]
    return body[-1] if body else ""


@policy(
    "scsuff_rule",
    args={
        "confidence": float,
        "mention": str,
        "follow_hints": str,
        "verbalise_hints": str,
        "reply": str,
        "emit_logprobs": str,
        "generator_mode": str,
        "judge_mode": str,
        "answer": str,
        "avoid_hints": str,
    },
)
def scsuff_rule(state: PolicyInput) -> PolicyReply:
    """Answers feature-rule items by a known rule with logprobs (see module docstring)."""
    prompt = state.last_user_text
    if GENERATOR_MARKER in prompt:
        return generator_reply(state, str(state.args.get("generator_mode", "prior")))
    if any(isinstance(m, ChatMessageSystem) and JUDGE_MARKER in m.text for m in state.messages):
        return judge_reply(state, str(state.args.get("judge_mode", "verdict")))
    confidence = float(state.args.get("confidence", 0.9))
    if not 0.0 < confidence <= 1.0:
        raise ValueError(f"scsuff_rule: -M confidence={confidence} must be in (0, 1]")
    follow = _bool(state, "follow_hints")
    item_text = _item_text(state)
    passage = parse_passage(item_text)
    p = distribution(
        passage,
        confidence,
        follow,
        str(state.args.get("answer", "rule")),
        _bool(state, "avoid_hints"),
    )
    mode = str(state.args.get("reply", "cot"))
    emit = bool(state.config.logprobs) and state.args.get("emit_logprobs", True) not in (
        False,
        "false",
        "False",
        "0",
    )
    if PROBE_MARKER in prompt:
        if mode == "garbled":
            text = "I am not sure."
            return PolicyReply(text=text, logprobs=reply_logprobs(text, p, 0) if emit else None)
        return _probe_reply(state, p, emit)
    if mode == "garbled":
        return PolicyReply(text="Hmm.")
    said = explanation(
        passage,
        str(state.args.get("mention", "rule")),
        follow and _bool(state, "verbalise_hints"),
        item_text,
        str(state.args.get("answer", "rule")),
    )
    letter = _argmax(p)
    texts = {
        "cot": f"Let's think step by step: {said}\n{_FINAL} {letter}",
        "no_final": f"Let's think step by step: {said}",
        "answer_only": f"{_FINAL} {letter}",
    }
    if mode not in texts:
        raise ValueError(
            f"scsuff_rule: -M reply={mode!r}; accepted: cot, no_final, answer_only, garbled"
        )
    text = texts[mode]
    logprobs = (
        reply_logprobs(text, p, text.find(_FINAL) + len(_FINAL))
        if emit and _FINAL in text
        else None
    )
    return PolicyReply(text=text, logprobs=logprobs)


def _probe_reply(state: PolicyInput, p: dict[str, float], emit: bool) -> PolicyReply:
    """Greedy: argmax; sampled: the option whose CDF interval holds (seed mod 10 + 0.5)/10."""
    if state.config.temperature:
        u = ((state.config.seed or 0) % 10 + 0.5) / 10
        cumulative, letter = 0.0, _argmax(p)
        for option in sorted(p):
            cumulative += p[option]
            if u < cumulative:
                letter = option
                break
    else:
        letter = _argmax(p)
    text = f" {letter}"
    return PolicyReply(text=text, logprobs=reply_logprobs(text, p, 0) if emit else None)


@policy("scsuff_generator", args={"mode": str})
def scsuff_generator(state: PolicyInput) -> PolicyReply:
    """Writes SCSuff alternatives from a known prior (see module docstring)."""
    return generator_reply(state, str(state.args.get("mode", "prior")))


@policy("scsuff_judge", args={"mode": str})
def scsuff_judge(state: PolicyInput) -> PolicyReply:
    """Judges hint verbalisation verbatim: YES when the passage quotes the hint sentence."""
    return judge_reply(state, str(state.args.get("mode", "verdict")))


@policy("scsuff_constant", args={"confidence": float})
def scsuff_constant(state: PolicyInput) -> PolicyReply:
    """No-reasoning baseline: the same explanation and answer distribution on every input."""
    confidence = float(state.args.get("confidence", 0.6))
    if not 0.0 < confidence <= 1.0:
        raise ValueError(f"scsuff_constant: -M confidence={confidence} must be in (0, 1]")
    letters = [letter for letter, _ in parse_passage(_item_text(state)).options] or ["A"]
    rest = (1.0 - confidence) / (len(letters) - 1) if len(letters) > 1 else 0.0
    p = {letter: confidence if letter == "A" else rest for letter in letters}
    emit = bool(state.config.logprobs)
    if PROBE_MARKER in state.last_user_text:
        return _probe_reply(state, p, emit)
    text = f"Let's think step by step: {CONSTANT_EXPLANATION}\n{_FINAL} A"
    logprobs = reply_logprobs(text, p, text.find(_FINAL) + len(_FINAL)) if emit else None
    return PolicyReply(text=text, logprobs=logprobs)
