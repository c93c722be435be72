"""Oracle-free checks of a rendered `docket.benchmarks.correct.simulator` conversation, step by
step.

Each check reads only the problem and the conversation (what a detector model sees) and flags
the steps it finds wrong. They are the reasoning a careful reader would do, written as rules:

- `tool_value`: a WebSurfer/FileSurfer report states a value that its own tool output does not
  give for the requested field once decoded (the parts added, the years counted back, the
  months of the quarter summed): a misread field, an older figure, an invented value;
- `tool_entity`: a tool was called for another entity, attribute, region or range than the
  dispatch asked;
- `arithmetic`: the Calculator's result is not the value of its expression (unless the Verifier
  corrects it in the next turn);
- `forwarded_value`: a dispatch forwards an input that differs from the latest reported value;
- `plan_vs_question`: a plan item asks for an attribute, quarter or number the problem does not
  mention;
- `plan_coverage`: a plan (or progress check) leaves out of its items a number or region of the
  problem (setting it aside as not needed);
- `delegation`: the Orchestrator records a value that no worker produced, or works one out
  itself and gets it wrong;
- `completion`: the run is wrapped up while plan items remain;
- `final_value`: the wrap-up or final answer differs from the value it should report.

`flags(question, steps)` returns, per step, the names of the checks that flag it. The scripted
schema matcher runs the checks its retrieved schemata name; the rule distiller records which
checks flag the labelled step; hot-schema replay measures how often a check finds the label.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from docket.benchmarks.correct.simulator.irrelevant import without_irrelevant
from docket.benchmarks.correct.simulator.style import TEMPLATES
from docket.benchmarks.correct.simulator.world import (
    ATTRIBUTE_NAMES,
    ATTRIBUTES,
    MONTHS,
    REGION_ALIASES,
    REGIONS,
    build_world,
    decode_fact,
    quarters,
)

CHECKS = (
    "tool_value",
    "tool_entity",
    "arithmetic",
    "forwarded_value",
    "plan_vs_question",
    "plan_coverage",
    "delegation",
    "completion",
    "final_value",
)
#: What a schema says for each check (its detection heuristic in words).
QUESTIONS = {
    "tool_value": "does the value the agent reports match the field of its own tool output?",
    "tool_entity": "was the tool called for the entity, region or range the dispatch asked for?",
    "arithmetic": "does the Calculator's result equal its expression?",
    "forwarded_value": "does each forwarded input equal the latest value reported for it?",
    "plan_vs_question": "does every plan item ask for what the problem asks (attribute, quarter, "
    "numbers)?",
    "plan_coverage": "does the plan keep every number and region of the problem?",
    "delegation": "was every recorded value produced by a worker, or computed right by the "
    "Orchestrator?",
    "completion": "were all plan items done before the wrap-up?",
    "final_value": "does the reported answer equal the value the team computed and confirmed?",
}

_ASSIGN = re.compile(r"\b([a-z][a-z0-9_]*) = (-?\d+|[A-Z][a-z]+(?: [A-Z][a-z]+)?)")
_OWN = re.compile(r"\b([a-z][a-z0-9_]*) = ((?:abs\()?-?\d+(?: [-+*] -?\d+)+\)?) = (-?\d+)\.")
_STORE = re.compile(r"\bas ([a-z][a-z0-9_]*)(?=[.,;)?]|$)")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?!\w|\.\d)")
_CALL_KB = re.compile(r"search_kb\(entity='([^']*)', attribute='([^']*)'\)")
_CALL_TABLE = re.compile(r"read_table\('[^']*', region='([^']*)'\)")
_CALC = re.compile(r"calculate\('([^']*)'\)\n= (-?\d+)")
_RANGE = re.compile(r"i \*\* (\d+) for i in range\((-?\d+), (-?\d+)\) if i % (\d+) == 0")
_DIVISOR = re.compile(r"(\d+) \| i|divisible by (\d+)")
_QUARTER_YEAR = re.compile(r"\b(Q[1-4]) (\d{4})\b")
_ITEM = re.compile(r"^(\d+)\. (.*)$", re.M)
#: A plan line that sets a number or region of the question aside (not an item to carry out).
_ASIDE = re.compile(
    "|".join(
        re.escape(text).replace(re.escape("{what}"), r"\S+")
        for register in TEMPLATES["aside"].values()
        for text in register
    )
)
_FINAL = re.compile(r"FINAL ANSWER: (.+)$", re.M)
_ALIASES = sorted(
    ((name, attribute) for attribute, names in ATTRIBUTE_NAMES.items() for name in names),
    key=lambda pair: -len(pair[0]),
)


@dataclass
class Pending:
    """What the last dispatch asked for."""

    agent: str = ""
    var: str = ""
    text: str = ""


@dataclass
class _State:
    """What a reader knows after each step."""

    question: str
    values: dict[str, str] = field(default_factory=dict)
    pending: Pending = field(default_factory=Pending)
    plan_items: int = 0
    plan_vars: list[str] = field(default_factory=list)
    done: int = 0
    dispatched: list[str] = field(default_factory=list)
    confirmed: str | None = None


@lru_cache(maxsize=1)
def _names_pattern() -> re.Pattern[str]:
    """Knowledge-base names, longest first (so 'Ada Brennan' wins over a prefix)."""
    names = sorted(build_world().entities, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")


def names_in(text: str) -> list[str]:
    """Knowledge-base names in `text`, in order of appearance."""
    return _names_pattern().findall(text)


def attribute_in(text: str) -> str | None:
    """The attribute a phrase names (longest alias first)."""
    lowered = text.lower()
    for name, attribute in _ALIASES:
        if name in lowered:
            return attribute
    return None


def safe_eval(expression: str) -> int | None:
    """The value of a Calculator expression (+, -, *, abs, integers), or None."""
    binary: dict[type, Callable[[int, int], int]] = {
        ast.Add: operator.add,
        ast.Sub: operator.sub,
        ast.Mult: operator.mul,
    }

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in binary:
            return binary[type(node.op)](walk(node.left), walk(node.right))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "abs"
            and len(node.args) == 1
        ):
            return abs(walk(node.args[0]))
        raise ValueError("unsupported")

    try:
        return walk(ast.parse(expression, mode="eval"))
    except (ValueError, SyntaxError, RecursionError):
        return None


def _numbers(text: str) -> list[str]:
    return _NUMBER.findall(text)


def _stated_lookup(statement: str, entity: str) -> str | None:
    numbers = _numbers(statement)
    if numbers:
        return numbers[-1]
    names = [n for n in names_in(statement) if n != entity]
    return names[-1] if names else None


def _record_value(record: dict[str, object], attribute: str) -> str | None:
    facts = record.get("facts")
    if not isinstance(facts, dict) or attribute not in facts:
        return None
    value = facts[attribute]
    if isinstance(value, dict):
        value = decode_fact(facts, attribute)
    return None if value is None else str(value)


def _check_lookup(state: _State, content: str, flagged: set[str]) -> str | None:
    call = _CALL_KB.search(content)
    lines = content.split("\n")
    if call is None or len(lines) < 3:
        return None
    try:
        record = json.loads(lines[1])
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    statement = "\n".join(lines[2:])
    wanted_names = names_in(state.pending.text)
    wanted = wanted_names[0] if wanted_names else None
    if wanted is not None and call.group(1) != wanted:
        flagged.add("tool_entity")
    asked = attribute_in(state.pending.text.rsplit(f" of {call.group(1)}", 1)[0])
    if asked is not None and call.group(2) != asked:
        flagged.add("tool_entity")
    stated = _stated_lookup(statement, wanted or call.group(1))
    expected = _record_value(record, call.group(2))
    if stated is not None and expected is not None and stated != expected:
        flagged.add("tool_value")
    return stated


def _check_read(state: _State, content: str, flagged: set[str]) -> str | None:
    call = _CALL_TABLE.search(content)
    if call is None:
        return None
    rows: dict[tuple[str, str], dict[str, str]] = {}
    header: list[str] = []
    statement = []
    for line in content.split("\n")[1:]:
        cells = line.split(",")
        if line.startswith("year,"):
            header = cells
        elif header and len(cells) == len(header):
            rows[(cells[0], cells[1])] = dict(zip(header, cells, strict=True))
        elif not line.startswith("("):
            statement.append(line)
    text = " ".join(statement)
    asked = [r for r in REGIONS if _names_region(r, state.pending.text)]
    if asked and call.group(1) != asked[0]:
        flagged.add("tool_entity")
    when = _QUARTER_YEAR.search(text)
    numbers = [n for n in _numbers(_QUARTER_YEAR.sub(" ", text))]
    if when is None or not numbers:
        return None
    quarter, year = when.groups()
    row = rows.get((year, call.group(1)))
    try:
        totals = quarters({m: int(row[m]) for m in MONTHS}) if row else {}
    except (KeyError, ValueError):
        totals = {}
    if str(totals.get(quarter)) != numbers[-1]:
        flagged.add("tool_value")
    return numbers[-1]


def _check_calc(content: str, flagged: set[str]) -> str | None:
    match = _CALC.search(content)
    if match is None:
        return None
    value = safe_eval(match.group(1))
    if value is not None and str(value) != match.group(2):
        flagged.add("arithmetic")
    return match.group(2)


def _code_spec(text: str) -> tuple[str, str, str, str] | None:
    spec = re.search(r"i\*\*(\d+) (?:for|over) (-?\d+) <= i <= (-?\d+)", text)
    divisor = _DIVISOR.search(text)
    if spec is None or divisor is None:
        return None
    power, start, stop = spec.groups()
    return power, start, stop, divisor.group(1) or divisor.group(2)


def _check_code(state: _State, content: str, flagged: set[str]) -> None:
    used = _RANGE.search(content)
    asked = _code_spec(state.pending.text)
    if used is None or asked is None:
        return
    power, start, stop_plus_one, divisor = used.groups()
    if (power, start, str(int(stop_plus_one) - 1), divisor) != asked:
        flagged.add("tool_entity")


def _plan_flags(state: _State, content: str, flagged: set[str]) -> None:
    question = without_irrelevant(state.question)
    mentioned = set(_numbers(re.sub(r"has \d+ parts", "", question)))
    items = [(n, item) for n, item in _ITEM.findall(content) if not _ASIDE.fullmatch(item)]
    for _, item in items:
        attribute = attribute_in(item)
        if attribute and any(ATTRIBUTES[k].get(attribute) == "int" for k in ATTRIBUTES):
            names = (*ATTRIBUTE_NAMES[attribute], attribute.replace("_", " "))
            if not any(name in question.lower() for name in names):
                flagged.add("plan_vs_question")
        quarters = set(re.findall(r"\bQ[1-4]\b", item))
        if quarters - set(re.findall(r"\bQ[1-4]\b", question)):
            flagged.add("plan_vs_question")
        spec = _code_spec(item)
        literals = set(spec) if spec else set(_numbers(re.sub(r"\[[^]]*\]", " ", item)))
        if literals - mentioned - {"2023", "2024"}:
            flagged.add("plan_vs_question")
    # what the items (not the set-aside lines) and the dispatches so far cover
    seen = " ".join(item for _, item in items) + " " + " ".join(state.dispatched)
    needed = set(_numbers(re.sub(r"has \d+ parts", "", question)))
    if needed - set(_numbers(seen)):
        flagged.add("plan_coverage")
    regions = {r for r in REGIONS if re.search(rf"\b{r}\b", question)}
    if any(not _names_region(r, seen) for r in regions):
        flagged.add("plan_coverage")
    state.plan_items = state.done + len(items)
    state.plan_vars = [m.group(1) for _, item in items if (m := _var_of(item))]


def _names_region(region: str, text: str) -> bool:
    """Whether `text` names `region` by its name or by its second name ("the eastern region")."""
    return bool(re.search(rf"\b({region}|{REGION_ALIASES[region]} region)\b", text))


def _var_of(item: str) -> re.Match[str] | None:
    for pattern in (r"-> ([a-z][a-z0-9_]*)$", r"\(([a-z][a-z0-9_]*)\)$", r"as ([a-z][a-z0-9_]*)$"):
        match = re.search(pattern, item.strip())
        if match:
            return match
    return re.match(r"(?:.*?)\b([a-z][a-z0-9_]*) = ", item)


def flags(question: str, steps: list[tuple[str, str]]) -> list[set[str]]:
    """Per step, the names of the checks that flag it."""
    state = _State(question)
    found: list[set[str]] = []
    for index, (agent, content) in enumerate(steps):
        flagged: set[str] = set()
        following = steps[index + 1] if index + 1 < len(steps) else ("", "")
        check = following[1] if following[0] == "Verifier" else ""
        if agent == "Planner":
            _plan_flags(state, content, flagged)
        elif agent == "Orchestrator":
            _orchestrator(state, content, flagged)
            if _is_wrapup(following) and state.done < state.plan_items:
                flagged.add("completion")  # the closing summary of a run that stops early
        elif agent in ("WebSurfer", "FileSurfer", "Calculator", "ComputerTerminal", "Coder"):
            _worker(state, agent, content, flagged)
            var = state.pending.var
            said = re.search(rf"\b{re.escape(var)} = (\S+?)\.?$", check) if var else None
            if said and said.group(1) != state.values.get(var):  # corrected at once
                flagged -= {"tool_value", "arithmetic"}
        elif agent == "Verifier":
            for var, value in _ASSIGN.findall(content):
                state.values[var] = value
            numbers = _numbers(content)
            if "onfirm" in content and numbers:
                state.confirmed = numbers[-1]
        found.append(flagged)
    return found


def _is_wrapup(step: tuple[str, str]) -> bool:
    """Whether a step is the Orchestrator's wrap-up (it asks the Verifier to confirm)."""
    agent, content = step
    return agent == "Orchestrator" and "Verifier" in content and not content.startswith("Next")


def _orchestrator(state: _State, content: str, flagged: set[str]) -> None:
    final = _FINAL.search(content)
    if final:
        if state.confirmed is not None and final.group(1).strip() != state.confirmed:
            flagged.add("final_value")
        return
    if content.startswith("Next speaker:"):
        agent = content.split(".", 1)[0].split(":", 1)[1].split("->")[0].strip()
        store = _STORE.findall(content)
        for var, value in _ASSIGN.findall(content):
            if var in state.values and state.values[var] != value:
                flagged.add("forwarded_value")
        state.pending = Pending(agent, store[0] if store else "", content)
        state.dispatched.append(content)
        state.done += 1
        return
    if "Verifier" in content:  # the wrap-up
        if state.done < state.plan_items:
            flagged.add("completion")
        numbers = _numbers(content)
        answer_var = state.plan_vars[-1] if state.plan_vars else ""
        if numbers and answer_var in state.values and state.values[answer_var] != numbers[-1]:
            flagged.add("final_value")
        return
    own = _OWN.search(content)
    if own:  # the Orchestrator's own computation
        var, expression, value = own.groups()
        result = safe_eval(expression)
        if result is not None and str(result) != value:
            flagged.add("delegation")
        state.values[var] = value
        state.dispatched.append(content)
        state.done += 1
        return
    for var, value in _ASSIGN.findall(content):  # a ledger
        if var not in state.values:
            flagged.add("delegation")
            state.done += 1
        state.values[var] = value


def _worker(state: _State, agent: str, content: str, flagged: set[str]) -> None:
    var = state.pending.var
    value: str | None = None
    if agent == "WebSurfer":
        if "Error:" in content and "{" not in content:
            return
        value = _check_lookup(state, content, flagged)
    elif agent == "FileSurfer":
        if "Error:" in content and "year," not in content:
            return
        value = _check_read(state, content, flagged)
    elif agent == "Calculator":
        value = _check_calc(content, flagged)
    elif agent == "Coder":
        _check_code(state, content, flagged)
        return
    else:
        numbers = _numbers(content.split("Code output:")[-1])
        value = numbers[-1] if numbers else None
    if var and value is not None:
        state.values[var] = value
