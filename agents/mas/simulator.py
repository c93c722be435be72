"""The deterministic multi-agent system and the manifestation of each injected error.

A task is a list of operations. `run(task, fault)` plays the team: step 0 is the Planner's plan,
then for each planned operation an Orchestrator dispatch and the worker's turn (WebSurfer,
FileSurfer, Calculator, or Coder plus ComputerTerminal), then the Verifier and the
Orchestrator's final answer. Values live in named variables, so a corrupted value is consumed by
every later step. With `fault=None` the run records which error types each step could host.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace

from docket.agents.mas.world import (
    ATTRIBUTES,
    CURRENT_YEAR,
    DATED,
    NEW_CENSUS,
    OLD_CENSUS,
    PREVIOUS_YEAR,
    QUARTERS,
    REGIONS,
    Value,
    build_world,
)


@dataclass(frozen=True)
class Lookup:
    """WebSurfer: `var` = attribute of an entity (a literal name or `$var`)."""

    var: str
    entity: str
    attribute: str
    kind: str


@dataclass(frozen=True)
class ReadCell:
    """FileSurfer: `var` = one cell of `sales_<year>.csv`."""

    var: str
    region: str
    quarter: str
    droppable: bool = True


@dataclass(frozen=True)
class Calc:
    """Calculator: `var` = op(args); args are ints or `$var` references."""

    var: str
    op: str
    args: tuple[str | int, ...]
    droppable: bool = False


@dataclass(frozen=True)
class Code:
    """Coder + ComputerTerminal: `var` = sum of i**power for start <= i <= stop, divisor | i."""

    var: str
    start: int
    stop: int
    divisor: int
    power: int


Op = Lookup | ReadCell | Calc | Code


@dataclass(frozen=True)
class TaskSpec:
    """A task with an exact answer: the question, the correct plan and the answer variable."""

    family: str
    question: str
    ops: tuple[Op, ...]
    answer_var: str


@dataclass(frozen=True)
class Fault:
    """One injected error: its type, the step it happens at and the seed of its details."""

    kind: str
    step: int
    seed: int = 0


@dataclass(frozen=True)
class Turn:
    """One history entry."""

    name: str
    role: str
    content: str


@dataclass
class Run:
    """The result of playing a task: the history, final answer, sites and the fault's reason."""

    turns: list[Turn]
    answer: Value | None
    sites: dict[int, list[str]]
    reason: str = ""


_SYMBOL = {"add": "+", "sub": "-", "mul": "*"}
_AGENT = {Lookup: "WebSurfer", ReadCell: "FileSurfer", Calc: "Calculator", Code: "Coder"}


def evaluate(op: str, values: list[Value]) -> Value:
    """Apply a Calculator operation; non-numeric input gives the string 'error'."""
    if not values or not all(isinstance(v, int) for v in values):
        return "error"
    numbers = [int(v) for v in values]
    if op == "sum":
        return sum(numbers)
    if op == "absdiff":
        return abs(numbers[0] - numbers[1])
    result = numbers[0]
    for number in numbers[1:]:
        result = {"add": result + number, "sub": result - number, "mul": result * number}[op]
    return result


def code_result(op: Code) -> int:
    """What the Coder's program prints."""
    return sum(i**op.power for i in range(op.start, op.stop + 1) if i % op.divisor == 0)


def describe(op: Op) -> str:
    """One plan line for an operation."""
    if isinstance(op, Lookup):
        return f"WebSurfer: find the {op.attribute} of {_ref(op.entity)}"
    if isinstance(op, ReadCell):
        return f"FileSurfer: read the {op.quarter} sales of {op.region} in sales_{CURRENT_YEAR}.csv"
    if isinstance(op, Calc):
        args = ", ".join(_ref(a) for a in op.args)
        return f"Calculator: compute {op.op}({args}) as {op.var}"
    return (
        f"Coder: sum i**{op.power} for {op.start} <= i <= {op.stop} with i divisible by "
        f"{op.divisor}"
    )


def _ref(arg: str | int) -> str:
    return f"the result {arg[1:]}" if isinstance(arg, str) and arg.startswith("$") else str(arg)


def _expression(op: str, values: list[Value]) -> str:
    if op in _SYMBOL:
        return f" {_SYMBOL[op]} ".join(str(v) for v in values)
    return f"{op}({', '.join(str(v) for v in values)})"


def misread(op: Op, question_numbers: list[int], rng: random.Random) -> Op | None:
    """The operation as a Planner who misreads the question would plan it (None: no misreading)."""
    if isinstance(op, Lookup):
        types = ATTRIBUTES[op.kind]
        options = [a for a, t in types.items() if t == "int" and a != op.attribute]
        return replace(op, attribute=rng.choice(options)) if types[op.attribute] == "int" else None
    if isinstance(op, ReadCell):
        others = [q for q in QUARTERS if q != op.quarter]
        return replace(op, quarter=rng.choice(others))
    if isinstance(op, Calc):
        if op.op in ("add", "sub"):
            return replace(op, op="sub" if op.op == "add" else "add")
        literals = [i for i, a in enumerate(op.args) if isinstance(a, int)]
        swaps = [n for n in question_numbers if n not in op.args]
        if literals and swaps:
            args = list(op.args)
            args[rng.choice(literals)] = rng.choice(swaps)
            return replace(op, args=tuple(args))
        return None
    return replace(op, divisor=op.divisor + 1)


@dataclass
class _Play:
    """Mutable state of one run."""

    task: TaskSpec
    fault: Fault | None
    numbers: list[int]
    turns: list[Turn] = field(default_factory=list)
    values: dict[str, Value] = field(default_factory=dict)
    log: list[Value] = field(default_factory=list)
    sites: dict[int, list[str]] = field(default_factory=dict)
    reason: str = ""
    answer: Value | None = None
    stopped: bool = False

    @property
    def step(self) -> int:
        return len(self.turns)

    def offer(self, kinds: list[str]) -> str | None:
        """Record the error types this step can host; return the fault to inject here, if any."""
        self.sites[self.step] = list(kinds)
        if self.fault and self.fault.step == self.step:
            if self.fault.kind not in kinds:
                raise ValueError(
                    f"fault {self.fault.kind} cannot happen at step {self.step} "
                    f"(possible: {', '.join(kinds) or 'none'})"
                )
            return self.fault.kind
        return None

    def rng(self) -> random.Random:
        assert self.fault is not None
        return random.Random(f"{self.fault.seed}:{self.fault.kind}:{self.fault.step}")

    def say(self, name: str, content: str, role: str = "assistant") -> None:
        self.turns.append(Turn(name, role, content))

    def set(self, var: str, value: Value) -> None:
        self.values[var] = value
        self.log.append(value)

    def resolve(self, arg: str | int) -> Value | None:
        if isinstance(arg, str) and arg.startswith("$"):
            return self.values.get(arg[1:])
        return arg

    def earlier_value(self, current: Value | None) -> Value | None:
        """The most recent logged value different from `current` (what an agent could revert to)."""
        return next((v for v in reversed(self.log) if v != current), None)


def run(task: TaskSpec, fault: Fault | None = None) -> Run:
    """Play `task`, injecting `fault` (a ValueError if it cannot happen where it is placed)."""
    play = _Play(task, fault, _numbers(task.question))
    plan = _plan(play)
    for index, op in enumerate(plan):
        _dispatch(play, op, index)
        if play.stopped:
            break
        _work(play, op)
    if not play.stopped:
        _verify_and_finish(play, len(plan))
    return Run(play.turns, play.answer, play.sites, play.reason)


def _numbers(question: str) -> list[int]:
    return [int(n) for n in re.findall(r"\b\d+\b", question)]


def _plan(play: _Play) -> list[Op]:
    ops = list(play.task.ops)
    rng0 = random.Random(0)
    kinds = []
    if any(misread(op, play.numbers, rng0) is not None for op in ops):
        kinds.append("misread_instruction")
    if any(getattr(op, "droppable", False) for op in ops):
        kinds.append("dropped_plan_step")
    chosen = play.offer(kinds)
    if chosen == "misread_instruction":
        rng = play.rng()
        candidates = [i for i, op in enumerate(ops) if misread(op, play.numbers, rng0)]
        at = rng.choice(candidates)
        before = describe(ops[at])
        ops[at] = misread(ops[at], play.numbers, rng) or ops[at]
        play.reason = (
            f"The Planner misread the question: plan item {at + 1} should be '{before}' but "
            f"reads '{describe(ops[at])}'."
        )
    elif chosen == "dropped_plan_step":
        rng = play.rng()
        at = rng.choice([i for i, op in enumerate(ops) if getattr(op, "droppable", False)])
        play.reason = (
            f"The Planner left out a required sub-goal: '{describe(ops[at])}', so its "
            "contribution is missing from the answer."
        )
        del ops[at]
    lines = [f"{i + 1}. {describe(op)}" for i, op in enumerate(ops)]
    play.say("Planner", "Plan for the question:\n" + "\n".join(lines))
    return ops


def _inputs(op: Op) -> list[str | int]:
    if isinstance(op, Lookup):
        return [op.entity]
    if isinstance(op, Calc):
        return list(op.args)
    return []


def _dispatch(play: _Play, op: Op, index: int) -> None:
    agent = _AGENT[type(op)]
    refs = [a for a in _inputs(op) if isinstance(a, str) and a.startswith("$")]
    latest = play.log[-1] if play.log else None
    kinds = []
    if latest is not None:
        kinds.append("premature_termination")
    fresh = [r for r in refs if play.resolve(r) == latest and latest is not None]
    if fresh and play.earlier_value(latest) is not None:
        kinds.append("ignored_feedback")
    if isinstance(op, Calc | Code) and _computable(play, op):
        kinds.append("role_violation")
    chosen = play.offer(kinds)
    if chosen == "premature_termination":
        play.say(
            "Orchestrator",
            f"The last result looks like what the question asks for; the remaining plan items "
            f"are unnecessary.\nFINAL ANSWER: {latest}",
        )
        play.reason = (
            f"The Orchestrator stopped after {index} of the planned steps and answered with an "
            f"intermediate result ({latest})."
        )
        play.answer, play.stopped = latest, True
        return
    if chosen == "ignored_feedback":
        stale = play.earlier_value(latest)
        for ref in fresh:
            if stale is not None:
                play.values[ref[1:]] = stale
        play.reason = (
            f"The Orchestrator ignored the value {latest} just reported by "
            f"{play.turns[-1].name} and forwarded the earlier value {stale}."
        )
    if chosen == "role_violation" and isinstance(op, Calc | Code):
        exact = _compute(play, op)
        estimate = _rough(exact)
        play.say(
            "Orchestrator",
            f"No need to involve the {agent}; I can estimate this myself: the result is about "
            f"{estimate}. Recording {estimate} and moving on.",
        )
        play.reason = (
            f"The Orchestrator did the {agent}'s job itself and recorded an estimate "
            f"({estimate}) instead of the exact result ({exact})."
        )
        play.set(op.var, estimate)
        play.values["__skip__"] = 1
        return
    shown = ", ".join(f"{r[1:]} = {play.resolve(r)}" for r in refs)
    suffix = f" Use {shown}." if shown else ""
    play.say("Orchestrator", f"Next speaker: {agent}. Task: {_instruction(play, op)}.{suffix}")


def _instruction(play: _Play, op: Op) -> str:
    if isinstance(op, Lookup):
        return f"find the {op.attribute} of {play.resolve(op.entity)}"
    if isinstance(op, ReadCell):
        return f"read the {op.quarter} sales of {op.region} from sales_{CURRENT_YEAR}.csv"
    if isinstance(op, Calc):
        values = [play.resolve(a) for a in op.args]
        return f"compute {_expression(op.op, [v for v in values if v is not None])}"
    return describe(op).split(": ", 1)[1]


def _computable(play: _Play, op: Calc | Code) -> bool:
    return not isinstance(_compute(play, op), str)


def _compute(play: _Play, op: Calc | Code) -> Value:
    if isinstance(op, Code):
        return code_result(op)
    values = [play.resolve(a) for a in op.args]
    return evaluate(op.op, [v for v in values if v is not None])


def _rough(exact: Value) -> Value:
    if not isinstance(exact, int):
        return exact
    for unit in (10, 100, 1000):
        rounded = round(exact / unit) * unit
        if rounded != exact:
            return rounded
    return exact + 7


def _work(play: _Play, op: Op) -> None:
    if play.values.pop("__skip__", None):
        return
    if isinstance(op, Lookup):
        _lookup(play, op)
    elif isinstance(op, ReadCell):
        _read_cell(play, op)
    elif isinstance(op, Calc):
        _calc(play, op)
    else:
        _code(play, op)


def _lookup(play: _Play, op: Lookup) -> None:
    world = build_world()
    name = play.resolve(op.entity)
    entity = world.entities.get(str(name))
    kinds: list[str] = []
    alternatives: list[str] = []
    if entity is not None and op.attribute in entity.facts:
        kinds += ["wrong_tool_argument", "hallucinated_fact"]
        wanted = ATTRIBUTES[entity.kind][op.attribute]
        alternatives = [
            a for a, t in ATTRIBUTES[entity.kind].items() if t == wanted and a != op.attribute
        ]
        if alternatives:
            kinds.append("misread_tool_output")
        if op.attribute in DATED:
            kinds.append("stale_information")
    chosen = play.offer(kinds)
    call = f"search_kb(entity={name!r}, attribute={op.attribute!r})"
    if entity is None or op.attribute not in entity.facts:
        play.say("WebSurfer", f"{call}\nResult: no record found.\nI could not find it.")
        play.set(op.var, "unknown")
        return
    true = entity.facts[op.attribute]
    if chosen == "hallucinated_fact":
        value = _fabricate(play, true, entity.kind, op.attribute)
        play.say(
            "WebSurfer",
            f"I already know this one, no search needed: the {op.attribute} of {name} is {value}.",
        )
        play.reason = (
            f"WebSurfer stated the {op.attribute} of {name} from memory ({value}) without "
            f"searching; the record says {true}."
        )
        play.set(op.var, value)
        return
    if chosen == "wrong_tool_argument":
        other = world.entities[world.confusable(str(name))]
        value = other.facts.get(op.attribute, "unknown")
        wrong_call = f"search_kb(entity={other.name!r}, attribute={op.attribute!r})"
        play.say(
            "WebSurfer",
            f"{wrong_call}\nResult: {other.record_text()}\n"
            f"The {op.attribute} of {name} is {value}.",
        )
        play.reason = (
            f"WebSurfer searched for {other.name} instead of {name} and reported its "
            f"{op.attribute} ({value}); the right value is {true}."
        )
        play.set(op.var, value)
        return
    value = true
    if chosen == "misread_tool_output":
        field_ = play.rng().choice(alternatives)
        value = entity.facts[field_]
        play.reason = (
            f"WebSurfer read the {field_} field ({value}) of the search result as the "
            f"{op.attribute} of {name} ({true})."
        )
    elif chosen == "stale_information":
        value = entity.outdated[op.attribute]
        play.reason = (
            f"WebSurfer reported the outdated {OLD_CENSUS} {op.attribute} of {name} ({value}) "
            f"instead of the current {NEW_CENSUS} value ({true})."
        )
    note = f" (as of {OLD_CENSUS})" if chosen == "stale_information" else ""
    play.say(
        "WebSurfer",
        f"{call}\nResult: {entity.record_text()}\nThe {op.attribute} of {name} is {value}{note}.",
    )
    play.set(op.var, value)


def _fabricate(play: _Play, true: Value, kind: str, attribute: str) -> Value:
    rng = play.rng()
    if isinstance(true, int):
        return true + rng.choice([-1, 1]) * rng.randrange(2, 40) * (1000 if true > 10**5 else 1)
    world = build_world()
    target_kind = ATTRIBUTES[kind][attribute]
    pool = [e.name for e in world.of_kind(target_kind)] if target_kind != "str" else []
    if not pool:
        return f"{true}o"
    return rng.choice([p for p in pool if p != true])


def _read_cell(play: _Play, op: ReadCell) -> None:
    world = build_world()
    kinds = ["wrong_tool_argument", "hallucinated_fact", "misread_tool_output", "stale_information"]
    chosen = play.offer(kinds)
    true = world.sales[CURRENT_YEAR][op.region][op.quarter]
    year, region, quarter = CURRENT_YEAR, op.region, op.quarter
    if chosen == "hallucinated_fact":
        value = true + play.rng().choice([-1, 1]) * play.rng().randrange(5, 90)
        play.say(
            "FileSurfer",
            f"From the summary I saw earlier, the {op.quarter} sales of {op.region} were {value}.",
        )
        play.reason = (
            f"FileSurfer gave the {op.quarter} sales of {op.region} ({value}) without opening "
            f"the file; the file says {true}."
        )
        play.set(op.var, value)
        return
    if chosen == "wrong_tool_argument":
        region = REGIONS[(REGIONS.index(op.region) + 1) % len(REGIONS)]
    elif chosen == "stale_information":
        year = PREVIOUS_YEAR
    elif chosen == "misread_tool_output":
        quarter = QUARTERS[(QUARTERS.index(op.quarter) + 1) % len(QUARTERS)]
    value = world.sales[year][region][quarter]
    call = f"read_table('sales_{year}.csv', region={region!r})"
    play.say(
        "FileSurfer",
        f"{call}\n{world.table_text(year, region)}\nThe {op.quarter} sales of {op.region} are "
        f"{value}.",
    )
    if chosen == "wrong_tool_argument":
        play.reason = (
            f"FileSurfer read the row of {region} instead of {op.region} and reported {value}; "
            f"the right value is {true}."
        )
    elif chosen == "stale_information":
        play.reason = (
            f"FileSurfer used last year's file sales_{PREVIOUS_YEAR}.csv ({value}) instead of "
            f"sales_{CURRENT_YEAR}.csv ({true})."
        )
    elif chosen == "misread_tool_output":
        play.reason = (
            f"FileSurfer read the {quarter} column ({value}) as the {op.quarter} sales of "
            f"{op.region} ({true})."
        )
    play.set(op.var, value)


def _calc(play: _Play, op: Calc) -> None:
    values = [play.resolve(a) for a in op.args]
    present = [v for v in values if v is not None]
    exact = evaluate(op.op, present)
    chosen = play.offer(["calculation_slip"] if isinstance(exact, int) else [])
    result = exact
    if chosen == "calculation_slip":
        result = _slip(int(exact), play.rng())
        play.reason = (
            f"The Calculator computed {_expression(op.op, present)} as {result}; the correct "
            f"result is {exact}."
        )
    play.say("Calculator", f"calculate('{_expression(op.op, present)}')\n= {result}")
    play.set(op.var, result)


def _slip(exact: int, rng: random.Random) -> int:
    digits = str(abs(exact))
    if len(digits) >= 2 and digits[-1] != digits[-2] and rng.random() < 0.4:
        swapped = digits[:-2] + digits[-1] + digits[-2]
        return int(swapped) * (1 if exact >= 0 else -1)
    return exact + rng.choice([-1, 1]) * rng.choice([1, 2, 10, 100])


def _code(play: _Play, op: Code) -> None:
    exact = code_result(op)
    variants = [replace(op, stop=op.stop - 1), replace(op, start=op.start + 1)]
    changed = [v for v in variants if code_result(v) != exact]
    chosen = play.offer(["wrong_tool_argument"] if changed else [])
    used = changed[0] if chosen == "wrong_tool_argument" else op
    program = (
        "```python\n"
        f"total = sum(i ** {used.power} for i in range({used.start}, {used.stop + 1}) "
        f"if i % {used.divisor} == 0)\nprint(total)\n```"
    )
    play.say("Coder", f"Here is the program:\n{program}")
    if chosen == "wrong_tool_argument":
        play.reason = (
            f"The Coder's program iterates over range({used.start}, {used.stop + 1}) instead of "
            f"range({op.start}, {op.stop + 1}), so the bounds of the question are not respected."
        )
    result = code_result(used)
    play.offer([])
    play.say("ComputerTerminal", f"exitcode: 0\nOutput: {result}", role="tool")
    play.set(op.var, result)


def _verify_and_finish(play: _Play, planned: int) -> None:
    value = play.values.get(play.task.answer_var)
    play.offer([])
    play.say(
        "Verifier",
        f"All {planned} plan items were completed and each result was passed on. The final "
        f"value is {value}.",
    )
    earlier = play.earlier_value(value) if value is not None else None
    chosen = play.offer(["ignored_feedback"] if earlier is not None else [])
    if chosen == "ignored_feedback":
        play.say("Orchestrator", f"Going with the earlier result.\nFINAL ANSWER: {earlier}")
        play.reason = (
            f"The Orchestrator ignored the Verifier's confirmed value ({value}) and answered with "
            f"an earlier result ({earlier})."
        )
        play.answer = earlier
        return
    play.say("Orchestrator", f"FINAL ANSWER: {value}")
    play.answer = value
