"""Task families with exact answers, and composite tasks that make trajectories long.

The base families are arithmetic word problems, multi-hop lookups over the mini knowledge base,
table questions over `sales.csv` and small code tasks. `compose` joins several base tasks into
one question with lettered parts, interleaves their operations (each part keeps its own order,
so a value found early may only be used many steps later) and combines the part answers with a
final Calculator step. `make_task` draws a task whose clean run has a length in a target range.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import replace

from docket.benchmarks.correct.simulator.irrelevant import with_irrelevant
from docket.benchmarks.correct.simulator.simulator import (
    Calc,
    Code,
    Lookup,
    Op,
    ReadCell,
    TaskSpec,
    attribute_name,
    expected_answer,
    run,
)
from docket.benchmarks.correct.simulator.world import (
    ATTRIBUTES,
    CURRENT_YEAR,
    PREVIOUS_YEAR,
    QUARTERS,
    REGIONS,
    SALES_FILE,
    build_world,
)


def _distinct(rng: random.Random, count: int, low: int, high: int) -> list[int]:
    return rng.sample(range(low, high), count)


def arithmetic(rng: random.Random) -> TaskSpec:
    """A multi-step word problem solved by the Calculator."""
    variant = rng.randrange(3)
    if variant == 0:
        a, b, c, d, e = _distinct(rng, 5, 3, 99)
        question = (
            f"A warehouse holds {a} crates. For {d} days, {b} trucks each deliver {c} crates per "
            f"day. Then {e} crates are shipped out. How many crates are in the warehouse now?"
        )
        ops: tuple[Op, ...] = (
            Calc("per_day", "mul", (b, c)),
            Calc("delivered", "mul", ("$per_day", d)),
            Calc("total", "add", (a, "$delivered")),
            Calc("total", "sub", ("$total", e), droppable=True),
        )
        return TaskSpec("arithmetic", question, ops, "total")
    if variant == 1:
        a, p, b, q, r = _distinct(rng, 5, 4, 98)
        question = (
            f"A theatre sold {a} tickets at {p} coins each on Friday and {b} tickets at {q} coins "
            f"each on Saturday. Refunds of {r} coins were paid. What was the net revenue in coins?"
        )
        ops = (
            Calc("friday", "mul", (a, p)),
            Calc("saturday", "mul", (b, q)),
            Calc("revenue", "add", ("$friday", "$saturday")),
            Calc("revenue", "sub", ("$revenue", r), droppable=True),
        )
        return TaskSpec("arithmetic", question, ops, "revenue")
    a, b, c, d, e = _distinct(rng, 5, 5, 97)
    question = (
        f"A library had {a} books. It bought {b} boxes of {c} books each, donated {d} books, "
        f"and then received {e} books as a gift. How many books does it have now?"
    )
    ops = (
        Calc("bought", "mul", (b, c)),
        Calc("books", "add", (a, "$bought")),
        Calc("books", "sub", ("$books", d), droppable=True),
        Calc("books", "add", ("$books", e), droppable=True),
    )
    return TaskSpec("arithmetic", question, ops, "books")


def _int_attribute(rng: random.Random, kind: str) -> str:
    return rng.choice([a for a, t in ATTRIBUTES[kind].items() if t == "int"])


def multihop(rng: random.Random) -> TaskSpec:
    """A chain of knowledge-base lookups, sometimes ending in a Calculator step."""
    world = build_world()
    people = [e.name for e in world.of_kind("person")]
    person = rng.choice(people)
    variant = rng.randrange(4)
    if variant == 0:
        attr = _int_attribute(rng, "city")
        question = f"What is the {attribute_name(attr)} of the city where {person} was born?"
        ops: tuple[Op, ...] = (
            Lookup("city", person, "birth_city", "person"),
            Lookup("answer", "$city", attr, "city"),
        )
    elif variant == 1:
        attr = _int_attribute(rng, "country")
        question = f"What is the {attribute_name(attr)} of the country where {person} was born?"
        ops = (
            Lookup("city", person, "birth_city", "person"),
            Lookup("country", "$city", "country", "city"),
            Lookup("answer", "$country", attr, "country"),
        )
    elif variant == 2:
        attr = _int_attribute(rng, "city")
        question = (
            f"What is the {attribute_name(attr)} of the capital of the country that contains "
            f"the city where {person} lives?"
        )
        ops = (
            Lookup("city", person, "residence_city", "person"),
            Lookup("country", "$city", "country", "city"),
            Lookup("capital", "$country", "capital", "country"),
            Lookup("answer", "$capital", attr, "city"),
        )
    else:
        other = rng.choice([p for p in people if p != person])
        question = (
            f"How many years apart were the birth cities of {person} and {other} founded? "
            "Give the absolute difference."
        )
        ops = (
            Lookup("city_a", person, "birth_city", "person"),
            Lookup("founded_a", "$city_a", "founded", "city"),
            Lookup("city_b", other, "birth_city", "person"),
            Lookup("founded_b", "$city_b", "founded", "city"),
            Calc("answer", "absdiff", ("$founded_a", "$founded_b")),
        )
    return TaskSpec("multihop", question, ops, "answer")


def table(rng: random.Random) -> TaskSpec:
    """A question over `sales.csv`: a total, a difference, or a change from last year."""
    quarter = rng.choice(QUARTERS)
    pick = rng.random()
    if pick < 0.45:
        regions = rng.sample(REGIONS, 3)
        question = (
            f"According to {SALES_FILE}, what were the total {quarter} {CURRENT_YEAR} sales of "
            f"{', '.join(regions[:2])} and {regions[2]}?"
        )
        cells = tuple(
            ReadCell(f"cell_{letter}", r, quarter) for letter, r in zip("xyz", regions, strict=True)
        )  # no digit in a variable name: a forgotten item would take a number with it
        ops: tuple[Op, ...] = (*cells, Calc("answer", "sum", tuple(f"${c.var}" for c in cells)))
        return TaskSpec("table", question, ops, "answer")
    if pick < 0.75:
        first, second = rng.sample(REGIONS, 2)
        question = (
            f"According to {SALES_FILE}, what is the absolute difference between the {quarter} "
            f"{CURRENT_YEAR} sales of {first} and {second}?"
        )
        ops = (
            ReadCell("cell_a", first, quarter, droppable=False),
            ReadCell("cell_b", second, quarter, droppable=False),
            Calc("answer", "absdiff", ("$cell_a", "$cell_b")),
        )
        return TaskSpec("table", question, ops, "answer")
    region = rng.choice(REGIONS)
    question = (
        f"According to {SALES_FILE}, by how much did the {quarter} sales of {region} change from "
        f"{PREVIOUS_YEAR} to {CURRENT_YEAR}? Give the absolute change."
    )
    ops = (
        ReadCell("cell_old", region, quarter, PREVIOUS_YEAR, droppable=False),
        ReadCell("cell_new", region, quarter, CURRENT_YEAR, droppable=False),
        Calc("answer", "absdiff", ("$cell_old", "$cell_new")),
    )
    return TaskSpec("table", question, ops, "answer")


def code(rng: random.Random) -> TaskSpec:
    """A small program written by the Coder and run by the ComputerTerminal."""
    power = rng.choice([1, 2, 3])
    divisor = rng.choice([2, 3, 4, 5, 6, 7])
    start = rng.randrange(1, 30)
    stop = start + rng.randrange(12, 60)
    program = Code("result", start, stop, divisor, power)
    text = (
        f"Compute the sum of i**{power} over all integers i from {start} to {stop} inclusive "
        f"that are divisible by {divisor}"
    )
    if rng.random() < 0.5:
        k = rng.choice([n for n in range(3, 19) if n not in (power, divisor, start, stop)])
        question = f"{text}, then multiply the sum by {k}."
        ops: tuple[Op, ...] = (program, Calc("answer", "mul", ("$result", k)))
        return TaskSpec("code", question, ops, "answer")
    k = rng.choice([n for n in range(11, 99) if n not in (power, divisor, start, stop)])
    question = f"{text}, then subtract {k} from it."
    # not droppable: a one-item plan for a two-step question gave a forgotten item away
    ops = (program, Calc("result", "sub", ("$result", k)))
    return TaskSpec("code", question, ops, "result")


FAMILIES: dict[str, Callable[[random.Random], TaskSpec]] = {
    "arithmetic": arithmetic,
    "multihop": multihop,
    "table": table,
    "code": code,
}

#: Clean-run lengths (steps) per tier, the parts per task and the distractor density.
TIERS: dict[str, tuple[tuple[int, int], tuple[int, int], float]] = {
    "short": ((8, 15), (1, 1), 0.15),
    "medium": ((16, 59), (2, 3), 0.35),
    "long": ((60, 140), (5, 7), 0.45),
}
#: No trajectory is shorter than this.
MIN_STEPS = 8


def length_tier(steps: int) -> str:
    """The tier a trajectory of `steps` steps belongs to (short <= 15 < medium < 60 <= long)."""
    return next(
        name for name, ((_, high), _, _) in TIERS.items() if steps <= high or name == "long"
    )


def _renamed(op: Op, prefix: str, answer: str, letter: str) -> Op:
    """`op` with its variables prefixed (the part's answer variable becomes the part letter)."""

    def name(var: str) -> str:
        return letter if var == answer else f"{prefix}{var}"

    def arg(value: str | int) -> str | int:
        return f"${name(value[1:])}" if isinstance(value, str) and value.startswith("$") else value

    if isinstance(op, Lookup):
        return replace(op, var=name(op.var), entity=str(arg(op.entity)))
    if isinstance(op, Calc):
        return replace(op, var=name(op.var), args=tuple(arg(a) for a in op.args))
    return replace(op, var=name(op.var))


def _interleave(rng: random.Random, parts: list[list[Op]]) -> list[Op]:
    """Merge the parts' operation lists at random, keeping each part's own order."""
    queues = [list(part) for part in parts]
    merged: list[Op] = []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        merged.append(queue.pop(0))
    return merged


def compose(rng: random.Random, tasks: list[TaskSpec]) -> TaskSpec:
    """One question with a lettered part per task, answered by combining the part answers."""
    if len(tasks) == 1:
        return tasks[0]
    letters = string.ascii_lowercase[: len(tasks)]
    parts = [
        [_renamed(op, f"{letter}_", task.answer_var, letter) for op in task.ops]
        for letter, task in zip(letters, tasks, strict=True)
    ]
    lines = [f"({letter}) {task.question}" for letter, task in zip(letters, tasks, strict=True)]
    if len(tasks) == 2 and rng.random() < 0.5:
        op = rng.choice(["add", "sub"])
        combine = f"{letters[0]} {'+' if op == 'add' else '-'} {letters[1]}"
        final = Calc("answer", op, (f"${letters[0]}", f"${letters[1]}"))
    else:
        combine = "the sum " + " + ".join(letters)
        final = Calc("answer", "sum", tuple(f"${letter}" for letter in letters))
    question = (
        f"This question has {len(tasks)} parts. Answer each part, then report {combine}.\n"
        + "\n".join(lines)
    )
    ops = (*_interleave(rng, parts), final)
    return TaskSpec("composite", question, ops, "answer")


def make_task(rng: random.Random, tier: str, family: str = "") -> TaskSpec:
    """A task whose clean run has a length in the tier's range (`family` for single parts)."""
    (low, high), (few, many), density = TIERS[tier]
    names = list(FAMILIES)
    for _ in range(200):
        count = rng.randint(few, many)
        chosen = [family or rng.choice(names)] if count == 1 else rng.choices(names, k=count)
        parts = [FAMILIES[name](rng) for name in chosen]
        if count > 1 and any(not isinstance(expected_answer(p), int) for p in parts):
            continue
        task = compose(rng, parts)
        task = replace(
            task,
            question=with_irrelevant(rng, task.question),
            seed=rng.randrange(10**9),
            density=density,
        )
        if low <= len(run(task).turns) <= high:
            return task
    raise RuntimeError(f"no {tier} task within {low}-{high} steps")
