"""Task families with exact answers: arithmetic word problems, multi-hop lookups over the mini
knowledge base, table questions over the sales files, and small code tasks."""

from __future__ import annotations

import random
from collections.abc import Callable

from docket.agents.mas.simulator import Calc, Code, Lookup, ReadCell, TaskSpec
from docket.agents.mas.world import ATTRIBUTES, CURRENT_YEAR, QUARTERS, REGIONS, build_world


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
        ops = (
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
        question = f"What is the {attr} of the city where {person} was born?"
        ops: tuple[Lookup | Calc, ...] = (
            Lookup("city", person, "birth_city", "person"),
            Lookup("answer", "$city", attr, "city"),
        )
    elif variant == 1:
        attr = _int_attribute(rng, "country")
        question = f"What is the {attr} of the country where {person} was born?"
        ops = (
            Lookup("city", person, "birth_city", "person"),
            Lookup("country", "$city", "country", "city"),
            Lookup("answer", "$country", attr, "country"),
        )
    elif variant == 2:
        attr = _int_attribute(rng, "city")
        question = (
            f"What is the {attr} of the capital of the country that contains the city where "
            f"{person} lives?"
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
    """A question over the current quarterly sales file."""
    quarter = rng.choice(QUARTERS)
    if rng.random() < 0.6:
        regions = rng.sample(REGIONS, 3)
        question = (
            f"According to sales_{CURRENT_YEAR}.csv, what were the total {quarter} sales of "
            f"{', '.join(regions[:2])} and {regions[2]}?"
        )
        cells = tuple(ReadCell(f"cell_{i}", r, quarter) for i, r in enumerate(regions))
        ops: tuple[ReadCell | Calc, ...] = (
            *cells,
            Calc("answer", "sum", tuple(f"${c.var}" for c in cells)),
        )
        return TaskSpec("table", question, ops, "answer")
    first, second = rng.sample(REGIONS, 2)
    question = (
        f"According to sales_{CURRENT_YEAR}.csv, what is the absolute difference between the "
        f"{quarter} sales of {first} and {second}?"
    )
    ops = (
        ReadCell("cell_a", first, quarter, droppable=False),
        ReadCell("cell_b", second, quarter, droppable=False),
        Calc("answer", "absdiff", ("$cell_a", "$cell_b")),
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
        ops: tuple[Code | Calc, ...] = (program, Calc("answer", "mul", ("$result", k)))
        return TaskSpec("code", question, ops, "answer")
    k = rng.choice([n for n in range(11, 99) if n not in (power, divisor, start, stop)])
    question = f"{text}, then subtract {k} from it."
    ops = (program, Calc("result", "sub", ("$result", k), droppable=True))
    return TaskSpec("code", question, ops, "result")


FAMILIES: dict[str, Callable[[random.Random], TaskSpec]] = {
    "arithmetic": arithmetic,
    "multihop": multihop,
    "table": table,
    "code": code,
}
