"""The deterministic multi-agent system and the manifestation of each injected error.

A task is a list of operations. `run(task, fault)` plays the team: the Planner's plan (step 0),
then for each planned operation an Orchestrator dispatch and the worker's turn (WebSurfer,
FileSurfer, Calculator, or Coder plus ComputerTerminal), then the wrap-up (Orchestrator asks,
Verifier confirms, Orchestrator gives the FINAL ANSWER) and closing remarks. Between them come
turns that change nothing: the Planner's progress checks (re-plans), Orchestrator ledgers,
Analyst notes, Verifier re-checks, transient tool errors with a retry, and self-corrected slips
(a wrong result that the Verifier corrects at once, so it is not the decisive mistake).

Values live in named variables, so a corrupted value is consumed by every later step. Every
random choice that shapes a turn (wording, distractors) is drawn from a stream keyed by the
task's seed and the step index, so a run with a fault is identical to the clean run before the
faulty step. A fault is silent: the faulty turn uses the same templates as a clean turn of its
kind and only its values (or its plan items) are wrong. With `fault=None` the run records which
error types each step could host.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field, replace

from docket.benchmarks.correct.simulator.irrelevant import without_irrelevant
from docket.benchmarks.correct.simulator.style import TOOL_ERRORS, Voice
from docket.benchmarks.correct.simulator.world import (
    ATTRIBUTE_NAMES,
    ATTRIBUTES,
    CURRENT_YEAR,
    DATED,
    PREVIOUS_YEAR,
    QUARTERS,
    REGION_ALIASES,
    REGIONS,
    SALES_FILE,
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
    """FileSurfer: `var` = one cell of `sales.csv` (region, quarter, year)."""

    var: str
    region: str
    quarter: str
    year: int = CURRENT_YEAR
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
    """A task with an exact answer: the question, the correct plan and the answer variable.

    `seed` drives the wording and the distractor turns; `density` is the chance of a
    distractor turn after each report.
    """

    family: str
    question: str
    ops: tuple[Op, ...]
    answer_var: str
    seed: int = 0
    density: float = 0.3


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
    """The result of playing a task.

    `sites` maps a step to the error types it could host, `kinds` names each step's turn kind
    (plan, replan, dispatch, lookup, ..., final), `reason` explains the injected fault.
    """

    turns: list[Turn]
    answer: Value | None
    sites: dict[int, list[str]]
    kinds: list[str]
    reason: str = ""


AGENT = {Lookup: "WebSurfer", ReadCell: "FileSurfer", Calc: "Calculator", Code: "Coder"}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*"}
#: Distractor turns that may follow a report, and their shares.
_FOLLOWERS = (("recheck", 0.3), ("ledger", 0.4), ("notes", 0.3))
#: Turn kinds that precede a wrap-up in a clean run (a premature one may only follow these).
_BEFORE_WRAPUP = ("calc", "own_calc", "lookup", "recheck", "recheck_fix", "ledger", "notes")
#: The attributes the task families look up (`tasks`): a wrong call names one of them.
ASKED = frozenset(
    {"birth_city", "residence_city", "country", "capital", "founded", "area_km2", "elevation_m"}
    | {"population"}
)
#: Share of Calculator operations the Orchestrator works out itself (clean runs do it right).
OWN_SHARE = 0.3
#: Chance that a plan sets aside each irrelevant number or region of the question in a line of
#: its own (a dropped item's number or region is always set aside, so a faulty plan holds as
#: many numbers of the question and as many lines as a clean one).
ASIDE_SHARE = 0.5
#: Chance that a plan item names an attribute by its second name.
PLAN_ALIAS_SHARE = 0.5


def evaluate(op: str, values: list[Value]) -> Value:
    """Apply a Calculator operation; non-numeric input gives the string 'error'."""
    if not values or not all(isinstance(v, int) for v in values):
        return "error"
    numbers = [int(v) for v in values]
    if op == "sum":
        return sum(numbers)
    if op == "absdiff":
        return abs(numbers[0] - numbers[1]) if len(numbers) == 2 else "error"
    result = numbers[0]
    for number in numbers[1:]:
        result = {"add": result + number, "sub": result - number, "mul": result * number}[op]
    return result


def expression(op: str, values: list[Value]) -> str:
    """How the Calculator writes an operation over concrete values."""
    if op in _SYMBOL:
        return f" {_SYMBOL[op]} ".join(str(v) for v in values)
    if op == "absdiff" and len(values) == 2:
        return f"abs({values[0]} - {values[1]})"
    return " + ".join(str(v) for v in values)


def code_result(op: Code) -> int:
    """What the Coder's program prints."""
    return sum(i**op.power for i in range(op.start, op.stop + 1) if i % op.divisor == 0)


def program(op: Code) -> str:
    """The Coder's program for an operation."""
    return (
        "```python\n"
        f"total = sum(i ** {op.power} for i in range({op.start}, {op.stop + 1}) "
        f"if i % {op.divisor} == 0)\nprint(total)\n```"
    )


def attribute_name(attribute: str, alternative: bool = False) -> str:
    """How an attribute is named in prose (`alternative`: its second name, if any)."""
    names = ATTRIBUTE_NAMES[attribute]
    return names[-1] if alternative else names[0]


def expected_answer(task: TaskSpec) -> Value | None:
    """The task's answer, computed directly from its operations."""
    world = build_world()
    values: dict[str, Value] = {}

    def resolve(arg: str | int) -> Value | None:
        return values.get(arg[1:]) if isinstance(arg, str) and arg.startswith("$") else arg

    for op in task.ops:
        if isinstance(op, Lookup):
            entity = world.entities.get(str(resolve(op.entity)))
            values[op.var] = entity.facts[op.attribute] if entity else "unknown"
        elif isinstance(op, ReadCell):
            values[op.var] = world.sales[op.year][op.region][op.quarter]
        elif isinstance(op, Calc):
            args = [resolve(a) for a in op.args]
            values[op.var] = evaluate(op.op, [a for a in args if a is not None])
        else:
            values[op.var] = code_result(op)
    return values.get(task.answer_var)


def misread(op: Op, free: list[int], rng: random.Random) -> Op | None:
    """The operation as a Planner who misreads the question would plan it (None: no misreading).

    `free`: the question's irrelevant numbers that the plan does not set aside. A misread
    number is one of them, so a misread plan holds as many of the question's numbers as a
    clean one and no new number.
    """
    if isinstance(op, Lookup):
        types = ATTRIBUTES[op.kind]
        options = [a for a, t in types.items() if t == "int" and a != op.attribute]
        return replace(op, attribute=rng.choice(options)) if types[op.attribute] == "int" else None
    if isinstance(op, ReadCell):
        return replace(op, quarter=rng.choice([q for q in QUARTERS if q != op.quarter]))
    if isinstance(op, Calc):
        if op.op in ("add", "sub"):
            return replace(op, op="sub" if op.op == "add" else "add")
        literals = [i for i, a in enumerate(op.args) if isinstance(a, int)]
        swaps = [n for n in free if n not in op.args]
        if literals and swaps:
            args = list(op.args)
            args[rng.choice(literals)] = rng.choice(swaps)
            return replace(op, args=tuple(args))
        return None
    divisors = [n for n in free if n != op.divisor]
    return replace(op, divisor=rng.choice(divisors)) if divisors else None


def _droppable(op: Op) -> bool:
    return bool(getattr(op, "droppable", False))


def _ref(arg: str | int) -> str:
    return f"[{arg[1:]}]" if isinstance(arg, str) and arg.startswith("$") else str(arg)


def _refs(op: Op) -> list[str]:
    args: list[str | int] = [op.entity] if isinstance(op, Lookup) else []
    if isinstance(op, Calc):
        args = list(op.args)
    return [a[1:] for a in args if isinstance(a, str) and a.startswith("$")]


REASONS: dict[str, tuple[str, ...]] = {
    "misread_instruction": (
        "The Planner misread the question: item {item} should be '{right}' but the plan says "
        "'{wrong}'.",
        "Plan item {item} does not match the question ('{wrong}' instead of '{right}'), and "
        "the team followed it.",
    ),
    "dropped_plan_step": (
        "The Planner left out a required item ('{right}'), so its contribution is missing.",
        "The plan omits '{right}', which the question needs.",
    ),
    "premature_termination": (
        "The Orchestrator wrapped up after {done} of {total} plan items and offered the "
        "intermediate {var} = {value} as the answer.",
        "The run was closed early: {var} = {value} was treated as the answer while plan items "
        "remained.",
    ),
    "ignored_feedback": (
        "The Orchestrator used {var} = {wrong} although the latest reported value was {right}.",
        "{right} was reported for {var}, but the Orchestrator went on with the earlier {wrong}.",
    ),
    "role_violation": (
        "The Orchestrator worked out {var} itself ({wrong}) instead of asking the {agent}, and "
        "got it wrong; the exact value is {right}.",
        "{var} was computed as {wrong} by the Orchestrator without the {agent}; it should be "
        "{right}.",
    ),
    "wrong_tool_argument": (
        "{agent} queried {wrong} instead of {right}, and the result was used as if it answered "
        "the request.",
        "{agent} called its tool with the wrong argument ({wrong} rather than {right}).",
    ),
    "hallucinated_fact": (
        "{agent} reported {wrong} for {what}, a value the tool output does not contain (it "
        "shows {right}).",
        "The value {wrong} given by {agent} for {what} is not supported by the tool output "
        "({right}).",
    ),
    "misread_tool_output": (
        "{agent} read the {field} field ({wrong}) as {what}; the output gives {right}.",
        "{agent} took {wrong} from the wrong field ({field}) for {what}, which is {right}.",
    ),
    "stale_information": (
        "{agent} reported the outdated value {wrong} ({when}) for {what} instead of the "
        "current {right}.",
        "For {what}, {agent} used the older figure {wrong} ({when}); the current one is {right}.",
    ),
    "calculation_slip": (
        "The Calculator computed {expr} as {wrong}; the correct result is {right}.",
        "{expr} is {right}, but the Calculator returned {wrong}.",
    ),
}


@dataclass
class _Play:
    """Mutable state of one run."""

    task: TaskSpec
    fault: Fault | None
    voice: Voice
    irrelevant: list[str]
    turns: list[Turn] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    values: dict[str, Value] = field(default_factory=dict)
    earlier: dict[str, list[Value]] = field(default_factory=dict)
    log: list[tuple[str, Value]] = field(default_factory=list)
    sites: dict[int, list[str]] = field(default_factory=dict)
    reason: str = ""
    answer: Value | None = None
    stopped: bool = False
    aside: list[str] = field(default_factory=list)

    @property
    def step(self) -> int:
        return len(self.turns)

    def draw(self, what: str, step: int | None = None) -> float:
        """A uniform number for a wording or distractor choice, keyed by step (not by fault)."""
        at = self.step if step is None else step
        return random.Random(f"{self.task.seed}:{what}:{at}").random()

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

    def explain(self, kind: str, **fields: object) -> None:
        self.reason = self.rng().choice(REASONS[kind]).format(**fields)

    def say(self, name: str, kind: str, content: str, role: str = "assistant") -> None:
        self.turns.append(Turn(name, role, content))
        self.kinds.append(kind)

    def words(self, kind: str, speaker: str, **fields: object) -> str:
        return self.voice.say(kind, speaker, self.step, **fields)

    def set(self, var: str, value: Value) -> None:
        if var in self.values and self.values[var] != value:
            self.earlier.setdefault(var, []).append(self.values[var])
        self.values[var] = value
        self.log.append((var, value))

    def resolve(self, arg: str | int) -> Value | None:
        if isinstance(arg, str) and arg.startswith("$"):
            return self.values.get(arg[1:])
        return arg

    def stale(self, var: str, shown: frozenset[Value] = frozenset()) -> Value | None:
        """An earlier value an agent could wrongly use for `var` (same type), if any.

        `shown`: values the same turn already forwards; none of them is picked, so a turn that
        forwards a stale value holds no number twice (a clean one seldom does).
        """
        current = self.values.get(var)
        if current is None:
            return None
        for value in reversed(self.earlier.get(var, [])):
            if value != current and value not in shown:
                return value
        same_type = [
            v for _, v in self.log if _same_kind(v, current) and v != current and v not in shown
        ]
        return same_type[-1] if same_type else None

    def assignments(self, limit: int) -> str:
        recent: dict[str, Value] = {}
        for var, value in reversed(self.log):
            if var not in recent and len(recent) < limit:
                recent[var] = value
        return ", ".join(f"{var} = {value}" for var, value in reversed(recent.items()))


def _same_kind(value: Value, other: Value) -> bool:
    """Both numbers, or both names of knowledge-base entities of the same kind."""
    if isinstance(value, int) or isinstance(other, int):
        return isinstance(value, int) and isinstance(other, int)
    entities = build_world().entities
    one, two = entities.get(value), entities.get(other)
    return one is not None and two is not None and one.kind == two.kind


def run(task: TaskSpec, fault: Fault | None = None) -> Run:
    """Play `task`, injecting `fault` (a ValueError if it cannot happen where it is placed)."""
    play = _Play(task, fault, Voice(task.seed), irrelevant_tokens(task.question))
    remaining = _plan(play, list(task.ops), done=0)
    done = 0
    while remaining and not play.stopped:
        op = remaining.pop(0)
        total = done + 1 + len(remaining)
        inputs = _dispatch(play, op, done, total)
        if play.stopped:
            break
        if inputs is not None:
            _work(play, op, inputs)
        done += 1
        if len(remaining) >= 2 and play.draw("replan") < task.density * 0.4:
            remaining = _plan(play, remaining, done=done)
    if not play.stopped:
        _finish(play, task.answer_var, play.values.get(task.answer_var), done, done)
    return Run(play.turns, play.answer, play.sites, play.kinds, play.reason)


def irrelevant_tokens(question: str) -> list[str]:
    """The numbers and regions that only the question's irrelevant sentences hold, in order."""
    core = without_irrelevant(question)
    tokens = [
        *re.findall(r"\b\d+\b", question),
        *(r for r in REGIONS if re.search(rf"\b{r}\b", question)),
    ]
    kept = set(re.findall(r"\b\d+\b", core)) | {r for r in REGIONS if re.search(rf"\b{r}\b", core)}
    return list(dict.fromkeys(t for t in tokens if t not in kept))


def _fields(op: ReadCell | Code) -> dict[str, object]:
    """The template fields of a table read or a program."""
    if isinstance(op, ReadCell):
        return {"quarter": op.quarter, "year": op.year, "region": op.region, "var": op.var}
    return {
        "power": op.power,
        "start": op.start,
        "stop": op.stop,
        "divisor": op.divisor,
        "var": op.var,
    }


def _item(play: _Play, op: Op, key: int) -> str:
    """One plan line for an operation."""
    voice, step = play.voice, play.step * 100 + key
    if isinstance(op, Lookup):
        alias = random.Random(f"{play.task.seed}:plan_alias:{step}").random() < PLAN_ALIAS_SHARE
        attr = attribute_name(op.attribute, alternative=alias)
        fields = {"attr": attr, "entity": _ref(op.entity), "var": op.var}
        return voice.say("item_lookup", "Planner", step, **fields)
    if isinstance(op, Calc):
        expr = expression(op.op, [_ref(a) for a in op.args])
        return voice.say("item_calc", "Planner", step, var=op.var, expr=expr)
    kind = "item_read" if isinstance(op, ReadCell) else "item_code"
    return voice.say(kind, "Planner", step, **_fields(op))


def _forgotten(op: Op) -> list[str]:
    """What a dropped item took out of the plan: its literal numbers, or its region."""
    if isinstance(op, ReadCell):
        return [op.region]
    return [str(a) for a in op.args if isinstance(a, int)] if isinstance(op, Calc) else []


def _aside_lines(play: _Play, aside: list[str]) -> list[str]:
    """One set-aside line per token (`style` kind `aside`), in an order drawn from the step's
    own stream."""
    order = random.Random(f"{play.task.seed}:aside_order:{play.step}")
    tokens = sorted(aside, key=lambda token: (order.random(), token))
    return [play.words("aside", "Planner", what=token) for token in tokens]


def _plan(play: _Play, ops: list[Op], done: int) -> list[Op]:
    """The plan (done = 0) or a progress check listing the remaining items; may be faulty.

    The plan sets aside some irrelevant numbers and regions of the question, each in a line
    of its own (`ASIDE_SHARE`); a dropped item's numbers or region join them.
    """
    probe = random.Random(0)
    aside = [
        token
        for token in play.irrelevant
        if random.Random(f"{play.task.seed}:aside:{play.step}:{token}").random() < ASIDE_SHARE
    ]
    free = [int(t) for t in play.irrelevant if t.isdigit() and t not in aside]
    kinds = []
    if any(misread(op, free, probe) is not None for op in ops):
        kinds.append("misread_instruction")
    if any(_droppable(op) for op in ops):
        kinds.append("dropped_plan_step")
    chosen = play.offer(kinds)
    ops = list(ops)
    if chosen == "misread_instruction":
        rng = play.rng()
        at = rng.choice([i for i, op in enumerate(ops) if misread(op, free, probe)])
        before = _item(play, ops[at], at)
        ops[at] = misread(ops[at], free, rng) or ops[at]
        play.explain(kind=chosen, item=done + at + 1, right=before, wrong=_item(play, ops[at], at))
    elif chosen == "dropped_plan_step":
        at = play.rng().choice([i for i, op in enumerate(ops) if _droppable(op)])
        play.explain(kind=chosen, right=_item(play, ops[at], at))
        aside += [token for token in _forgotten(ops[at]) if token not in aside]
        ops = _forget(ops, at)
    play.aside = list(dict.fromkeys([*play.aside, *aside]))
    lines = [f"{done + i + 1}. {_item(play, op, i)}" for i, op in enumerate(ops)]
    # numbered like the items, so a plan with a forgotten item has as many numbered lines
    lines += [
        f"{done + len(lines) + j + 1}. {line}" for j, line in enumerate(_aside_lines(play, aside))
    ]
    if done == 0:
        header = play.words("plan_header", "Planner", n=len(lines))
        play.say("Planner", "plan", header + "\n" + "\n".join(lines))
    else:
        header = play.words("replan_header", "Planner", done=done)
        play.say("Planner", "replan", header + "\n" + "\n".join(lines))
    return ops


def _forget(ops: list[Op], at: int) -> list[Op]:
    """The plan without item `at`, and without the later references to its variable.

    A Planner who forgets an item forgets it everywhere: no later item names the missing
    variable (a reference that no item defines would mark the plan without reading it). The
    team computes the same values either way, since a missing input is left out.
    """
    gone = f"${ops[at].var}"
    kept = [op for i, op in enumerate(ops) if i != at]
    return [
        replace(op, args=tuple(a for a in op.args if a != gone))
        if isinstance(op, Calc) and gone in op.args
        else op
        for op in kept
    ]


def _task_text(play: _Play, op: Op, inputs: dict[str, Value]) -> str:
    agent = "Orchestrator"
    if isinstance(op, Lookup):
        entity = inputs.get(op.entity[1:], op.entity) if op.entity.startswith("$") else op.entity
        attr = attribute_name(op.attribute, alternative=play.draw("alias") < 0.3)
        return play.words("task_lookup", agent, attr=attr, entity=entity, var=op.var)
    if isinstance(op, Calc):
        values = [inputs.get(a[1:]) if isinstance(a, str) else a for a in op.args]
        expr = expression(op.op, [v for v in values if v is not None])
        return play.words("task_calc", agent, expr=expr, var=op.var)
    if isinstance(op, ReadCell):
        # half the dispatches name the region by its second name, so the region a clean call
        # names is not always a string of the dispatch either (as a wrong region never is)
        fields = _fields(op)
        if play.draw("region_alias") < 0.5:
            fields["region"] = f"the {REGION_ALIASES[op.region]} region"
        return play.words("task_read", agent, **fields)
    return play.words("task_code", agent, **_fields(op))


def _dispatch(play: _Play, op: Op, done: int, total: int) -> dict[str, Value] | None:
    """The Orchestrator's turn for `op`: the inputs it forwards, or None when no worker acts."""
    agent = AGENT[type(op)]
    refs = [r for r in _refs(op) if r in play.values]
    # not the operation's own variable: its latest value is restated before the wrap-up
    current = frozenset(play.values[r] for r in refs)
    stale = {r: s for r in refs if r != op.var and (s := play.stale(r, current)) is not None}
    exact: Value = "error"
    if isinstance(op, Calc | Code):
        exact = _compute(play, op, {r: play.values[r] for r in refs})
    own = isinstance(op, Calc) and isinstance(exact, int) and play.draw("own") < OWN_SHARE
    kinds = []
    if play.log and isinstance(play.log[-1][1], int) and play.kinds[-1] in _BEFORE_WRAPUP:
        kinds.append("premature_termination")  # an intermediate number passed off as the answer
    if own:
        kinds.append("role_violation")
    elif stale:
        kinds.append("ignored_feedback")
    chosen = play.offer(kinds)
    if chosen == "premature_termination":
        var, value = play.log[-1]
        play.explain(kind=chosen, done=done, total=total, var=var, value=value)
        _finish(play, var, value, done, total, wrapped=True)
        return None
    if own and isinstance(op, Calc):
        value = int(exact)
        if chosen == "role_violation":
            value = _mental(value, play.rng())
            play.explain(kind=chosen, var=op.var, wrong=value, right=exact, agent=agent)
        values = [play.values.get(a[1:]) if isinstance(a, str) else a for a in op.args]
        expr = expression(op.op, [v for v in values if v is not None])
        play.set(op.var, value)
        text = play.words("own_calc", "Orchestrator", var=op.var, expr=expr, value=value)
        play.say("Orchestrator", "own_calc", text)
        return None
    inputs = {r: play.values[r] for r in refs}
    if chosen == "ignored_feedback":
        var = play.rng().choice(sorted(stale))
        play.explain(kind=chosen, var=var, wrong=stale[var], right=inputs[var])
        inputs[var] = stale[var]
    shown = ", ".join(f"{r} = {v}" for r, v in inputs.items())
    extra = play.words("inputs", "Orchestrator", assignments=shown) if shown else ""
    text = play.words(
        "dispatch", "Orchestrator", agent=agent, task=_task_text(play, op, inputs), inputs=extra
    )
    play.say("Orchestrator", "dispatch", text)
    return inputs


def _compute(play: _Play, op: Calc | Code, inputs: dict[str, Value]) -> Value:
    if isinstance(op, Code):
        return code_result(op)
    values = [inputs.get(a[1:]) if isinstance(a, str) else a for a in op.args]
    return evaluate(op.op, [v for v in values if v is not None])


def _mental(exact: int, rng: random.Random) -> int:
    """A value worked out in the head: off by a plausible slip."""
    return exact + rng.choice([-1, 1]) * rng.choice([1, 2, 10, 20, 100])


def _slip(exact: int, rng: random.Random) -> int:
    digits = str(abs(exact))
    if len(digits) >= 2 and digits[-1] != digits[-2] and rng.random() < 0.4:
        swapped = digits[:-2] + digits[-1] + digits[-2]
        return int(swapped) * (1 if exact >= 0 else -1)
    return exact + rng.choice([-1, 1]) * rng.choice([1, 2, 10, 100])


def _follower(play: _Play) -> str:
    """The distractor turn that follows the report at the current step ('' for none)."""
    if play.draw("follow") >= play.task.density:
        return ""
    pick = play.draw("follower")
    for name, share in _FOLLOWERS:
        if pick < share:
            return name
        pick -= share
    return ""


def _work(play: _Play, op: Op, inputs: dict[str, Value]) -> None:
    """The worker's turn(s) for `op`, then any distractor turn after the report."""
    if isinstance(op, Lookup | ReadCell) and play.draw("retry") < play.task.density * 0.15:
        agent = AGENT[type(op)]
        play.offer([])
        call = _call(op, inputs, op.region if isinstance(op, ReadCell) else None)
        error = TOOL_ERRORS[int(play.draw("error") * len(TOOL_ERRORS))]
        play.say(agent, "tool_error", call + "\n" + play.words("tool_error", agent, error=error))
    follower = _follower(play)
    corrected: tuple[Value, Value] | None = None
    if isinstance(op, Lookup):
        corrected = _lookup(play, op, inputs, quiet=follower == "recheck")
    elif isinstance(op, ReadCell):
        corrected = _read_cell(play, op, quiet=follower == "recheck")
    elif isinstance(op, Calc):
        corrected = _calc(play, op, inputs, quiet=follower == "recheck")
    else:
        _code(play, op, quiet=follower == "recheck")
    if corrected is not None:
        wrong, right = corrected
        play.offer([])
        play.say(
            "Verifier",
            "recheck_fix",
            play.words("recheck_fix", "Verifier", var=op.var, wrong=wrong, right=right),
        )
        play.set(op.var, right)
        return
    if follower:
        play.offer([])
        if follower == "recheck":
            text = play.words("recheck_ok", "Verifier", var=op.var, value=play.values[op.var])
            play.say("Verifier", "recheck", text)
        elif follower == "ledger":
            text = play.words("ledger", "Orchestrator", assignments=play.assignments(3))
            play.say("Orchestrator", "ledger", text)
        else:
            play.say(
                "Analyst", "notes", play.words("notes", "Analyst", assignments=play.assignments(4))
            )


def _call(op: Lookup | ReadCell, inputs: dict[str, Value], region: str | None) -> str:
    if isinstance(op, ReadCell):
        return f"read_table('{SALES_FILE}', region='{region}')"
    entity = inputs.get(op.entity[1:], op.entity) if op.entity.startswith("$") else op.entity
    return f"search_kb(entity='{entity}', attribute='{op.attribute}')"


def _background_slip(play: _Play, quiet: bool) -> bool:
    """Whether this report gets a slip that the Verifier corrects in the next turn."""
    return not quiet and play.draw("slip") < play.task.density * 0.2


def _lookup(
    play: _Play, op: Lookup, inputs: dict[str, Value], quiet: bool
) -> tuple[Value, Value] | None:
    world = build_world()
    name = str(inputs.get(op.entity[1:], op.entity) if op.entity.startswith("$") else op.entity)
    entity = world.entities.get(name)
    found = entity is not None and op.attribute in entity.facts
    alternatives: list[str] = []
    kinds: list[str] = []
    if entity is not None and found:
        wanted = ATTRIBUTES[entity.kind][op.attribute]
        alternatives = [
            a for a, t in ATTRIBUTES[entity.kind].items() if t == wanted and a != op.attribute
        ]
        # an invented name would be the only name of the step its record lacks: numbers only
        kinds = ["hallucinated_fact"] if wanted == "int" else []
        kinds += ["misread_tool_output"] if alternatives else []
        kinds += ["wrong_tool_argument"] if set(alternatives) & ASKED else []
        kinds += ["stale_information"] if op.attribute in DATED else []
    slip = found and bool(alternatives) and _background_slip(play, quiet)
    chosen = play.offer([] if slip else kinds)
    attr = attribute_name(op.attribute, alternative=play.draw("alias") < 0.3)
    call = _call(op, inputs, None)
    if entity is None or not found:
        record = json.dumps({"name": name, "error": "no record found"})
        play.say("WebSurfer", "lookup", f"{call}\n{record}\nNo record was found for {name}.")
        play.set(op.var, "unknown")
        return None
    true = entity.facts[op.attribute]
    value: Value = true
    shown = entity
    if chosen == "wrong_tool_argument":
        # the call names another field that tasks ask for (a field no clean call names would
        # give the mistake away by its name)
        asked = play.rng().choice([a for a in alternatives if a in ASKED])
        call = f"search_kb(entity='{name}', attribute='{asked}')"
        value = entity.facts[asked]
        play.explain(kind=chosen, agent="WebSurfer", wrong=f"attribute {asked}", right=op.attribute)
    elif chosen == "hallucinated_fact":
        value = _fabricate(play.rng(), true, entity.record_json(), entity.kind, op.attribute)
        play.explain(
            kind=chosen, agent="WebSurfer", wrong=value, right=true, what=f"the {attr} of {name}"
        )
    elif chosen == "misread_tool_output":
        field_ = play.rng().choice(alternatives)
        value = entity.facts[field_]
        play.explain(
            kind=chosen,
            agent="WebSurfer",
            field=field_,
            wrong=value,
            right=true,
            what=f"the {attr} of {name}",
        )
    elif chosen == "stale_information":
        value = entity.outdated[op.attribute]
        play.explain(
            kind=chosen,
            agent="WebSurfer",
            wrong=value,
            right=true,
            when="the previous census",
            what=f"the {attr} of {name}",
        )
    elif slip:
        value = entity.facts[alternatives[int(play.draw("slip_field") * len(alternatives))]]
    report = play.words("lookup_report", "WebSurfer", attr=attr, entity=name, value=value)
    play.say("WebSurfer", "lookup", f"{call}\n{shown.record_json()}\n{report}")
    play.set(op.var, value)
    return (value, true) if slip and value != true else None


def _fabricate(rng: random.Random, true: Value, record: str, kind: str, attribute: str) -> Value:
    """A value of the right type that the record does not contain."""
    if isinstance(true, int):
        scale = 1000 if true > 10**5 else 1
        for _ in range(20):
            value = true + rng.choice([-1, 1]) * rng.randrange(2, 40) * scale
            if str(value) not in record:
                return value
        return true + 7 * scale
    world = build_world()
    target = ATTRIBUTES[kind][attribute]
    pool = (
        [e.name for e in world.of_kind(target) if e.name not in record] if target != "str" else []
    )
    return rng.choice(pool) if pool else f"{true}o"


def _read_cell(play: _Play, op: ReadCell, quiet: bool) -> tuple[Value, Value] | None:
    world = build_world()
    kinds = ["wrong_tool_argument", "hallucinated_fact", "misread_tool_output"]
    kinds += ["stale_information"] if op.year == CURRENT_YEAR else []
    slip = _background_slip(play, quiet)
    chosen = play.offer([] if slip else kinds)
    true = world.sales[op.year][op.region][op.quarter]
    region, quarter, year = op.region, op.quarter, op.year
    value: Value = true
    what = f"the {op.quarter} {op.year} sales of {op.region}"
    if chosen == "wrong_tool_argument":
        region = play.rng().choice([r for r in REGIONS if r != op.region])
        play.explain(kind=chosen, agent="FileSurfer", wrong=f"region {region}", right=op.region)
    elif chosen == "stale_information":
        year = PREVIOUS_YEAR
        play.explain(
            kind=chosen,
            agent="FileSurfer",
            wrong=world.sales[year][region][quarter],
            right=true,
            when=f"the {PREVIOUS_YEAR} row",
            what=what,
        )
    elif chosen == "misread_tool_output" or slip:
        quarter = QUARTERS[(QUARTERS.index(op.quarter) + 1) % len(QUARTERS)]
        if chosen:
            play.explain(
                kind=chosen,
                agent="FileSurfer",
                field=quarter,
                wrong=world.sales[year][region][quarter],
                right=true,
                what=what,
            )
    table = world.table_text(region)
    if chosen == "hallucinated_fact":
        rng = play.rng()
        value = true
        while value == true or str(value) in table:
            value = true + rng.choice([-1, 1]) * rng.randrange(5, 90)
        play.explain(kind=chosen, agent="FileSurfer", wrong=value, right=true, what=what)
    else:
        value = world.sales[year][region][quarter]
    call = f"read_table('{SALES_FILE}', region='{region}')"
    report = play.words(
        "read_report", "FileSurfer", region=region, quarter=op.quarter, year=op.year, value=value
    )  # the region it read: a step naming two regions was always a wrong argument
    play.say("FileSurfer", "read", f"{call}\n{table}\n{report}")
    play.set(op.var, value)
    return (value, true) if slip and value != true else None


def _calc(
    play: _Play, op: Calc, inputs: dict[str, Value], quiet: bool
) -> tuple[Value, Value] | None:
    values = [inputs.get(a[1:]) if isinstance(a, str) else a for a in op.args]
    present = [v for v in values if v is not None]
    exact = evaluate(op.op, present)
    slip = isinstance(exact, int) and _background_slip(play, quiet)
    chosen = play.offer(["calculation_slip"] if isinstance(exact, int) and not slip else [])
    result = exact
    expr = expression(op.op, present)
    if chosen == "calculation_slip":
        result = _slip(int(exact), play.rng())
        play.explain(kind=chosen, expr=expr, wrong=result, right=exact)
    elif slip:
        result = _slip(int(exact), random.Random(f"{play.task.seed}:slip_value:{play.step}"))
    note = play.words("calc_note", "Calculator")
    play.say("Calculator", "calc", f"calculate('{expr}')\n= {result}{note}")
    play.set(op.var, result)
    return (result, exact) if slip else None


def _code(play: _Play, op: Code, quiet: bool) -> None:
    exact = code_result(op)
    # one past the bound: as many numbers of the program are new as in the right one
    changed = [v for v in [replace(op, stop=op.stop + 1)] if code_result(v) != exact]
    chosen = play.offer(["wrong_tool_argument"] if changed else [])
    used = op
    if chosen == "wrong_tool_argument":
        used = changed[int(play.rng().random() * len(changed))]
        play.explain(
            kind=chosen,
            agent="Coder",
            wrong=f"range({used.start}, {used.stop + 1})",
            right=f"range({op.start}, {op.stop + 1})",
        )
    intro = play.words("code_intro", "Coder")
    play.say("Coder", "code", f"{intro}\n{program(used)}")
    result = code_result(used)
    play.offer([])
    play.say(
        "ComputerTerminal",
        "terminal",
        f"exitcode: 0 (execution succeeded)\nCode output: {result}",
        role="tool",
    )
    play.set(op.var, result)


def _finish(
    play: _Play, var: str, value: Value | None, done: int, total: int, wrapped: bool = False
) -> None:
    """Wrap-up request, the Verifier's confirmation, the final answer and closing turns."""
    if not wrapped:
        play.offer([])
    # every latest value is restated once before the wrap-up, so no reported value goes unused
    summary = play.words("ledger", "Orchestrator", assignments=play.assignments(len(play.log)))
    if play.aside:  # what the plans set aside is restated too, a forgotten item's with the rest
        summary += " " + play.words("unused", "Orchestrator", tokens=", ".join(play.aside))
    play.say("Orchestrator", "ledger", summary)
    play.offer([])
    play.say("Orchestrator", "wrapup", play.words("wrapup", "Orchestrator", var=var, value=value))
    play.offer([])
    play.say("Verifier", "confirm", play.words("confirm", "Verifier", value=value))
    play.offer([])
    answer = value
    play.say("Orchestrator", "final", play.words("final", "Orchestrator", value=answer))
    play.answer = answer
    for index in range(int(play.draw("closing") * 3)):
        play.offer([])
        agent = "Analyst" if play.draw(f"closer{index}") < 0.6 else "Verifier"
        play.say(agent, "closing", play.words("closing", agent))
    play.stopped = True
