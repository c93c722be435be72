"""The mini knowledge base and sales table the simulated agents consult.

Everything is built from fixed name lists and one fixed seed, so the world is identical on every
machine (`build_world()` is cached). Tools print nested output: a knowledge-base record is a
JSON object whose dated facts carry their previous value, and `sales.csv` holds one row per
year and region with monthly figures.

No number a report states is printed as such by its tool (`encode_fact`, `table_text`): a
record gives a population as its urban and rural parts, an area as land and water, an
elevation as the river level and the height above it, a year as years before `AS_OF` (a first
award as the age at the award), and the table gives months, not quarters. So a reported value
is never a string of its tool output, right or wrong: telling them apart takes the addition or
subtraction that `decode_fact` does.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from functools import lru_cache

Value = int | str

_PREFIXES = ("Ash", "Bel", "Cor", "Dun", "Elm", "Fair", "Glen", "Har", "Ivy", "Kings")
_SUFFIXES = ("ford", "haven", "ton")
_COUNTRIES = ("Veltria", "Osmark", "Drevania", "Calloway", "Miraso", "Pellin", "Quorra", "Talvik")
_CURRENCIES = ("velt", "mark", "drev", "crown", "sol", "pell", "quor", "tal")
_FIRST = ("Ada", "Bruno", "Celia", "Dario", "Edith", "Farid", "Greta", "Hugo", "Ines", "Jonas")
_LAST = ("Brennan", "Okafor", "Lindqvist", "Moreau")
REGIONS = ("North", "South", "East", "West", "Central", "Coastal")
QUARTERS = ("Q1", "Q2", "Q3", "Q4")
#: The second name of each region (lower case), which dispatches use as often as the first.
REGION_ALIASES = {
    "North": "northern",
    "South": "southern",
    "East": "eastern",
    "West": "western",
    "Central": "central",
    "Coastal": "coastal",
}
CURRENT_YEAR = 2024
PREVIOUS_YEAR = 2023
#: The year that record ages count back from.
AS_OF = 2026
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

#: Attributes per entity kind, with their value type ("city" values name another city).
ATTRIBUTES: dict[str, dict[str, str]] = {
    "person": {
        "birth_city": "city",
        "residence_city": "city",
        "birth_year": "int",
        "first_award_year": "int",
    },
    "city": {
        "country": "country",
        "twin_city": "city",
        "population": "int",
        "founded": "int",
        "area_km2": "int",
        "elevation_m": "int",
    },
    "country": {
        "capital": "city",
        "largest_city": "city",
        "population": "int",
        "founded": "int",
        "currency": "str",
    },
}
#: Attributes whose record also lists an outdated value (the 2015 census).
DATED = frozenset({"population"})
OLD_CENSUS, NEW_CENSUS = 2015, 2023
SALES_FILE = "sales.csv"

#: How agents name each attribute in prose (the first name is the plan's).
ATTRIBUTE_NAMES: dict[str, tuple[str, ...]] = {
    "birth_city": ("birth city", "city of birth"),
    "residence_city": ("city of residence", "home city"),
    "birth_year": ("birth year", "year of birth"),
    "first_award_year": ("first award year", "year of the first award"),
    "country": ("country",),
    "twin_city": ("twin city", "sister city"),
    "population": ("population", "number of inhabitants"),
    "founded": ("founding year", "year of founding"),
    "area_km2": ("area in km2", "surface area in km2"),
    "elevation_m": ("elevation in metres", "altitude in metres"),
    "capital": ("capital",),
    "largest_city": ("largest city",),
    "currency": ("currency",),
}


@dataclass
class Entity:
    """One knowledge-base record."""

    name: str
    kind: str
    facts: dict[str, Value]
    outdated: dict[str, int] = field(default_factory=dict)

    def record_json(self) -> str:
        """The record as the search tool prints it: nested JSON, every number encoded."""
        facts: dict[str, object] = {}
        for key, value in self.facts.items():
            if not isinstance(value, int):
                facts[key] = value
                continue
            facts[key] = encode_fact(self, key, value)
            if key in self.outdated:
                assert isinstance(facts[key], dict)
                facts[key] = {
                    **facts[key],  # type: ignore[dict-item]
                    "as_of": NEW_CENSUS,
                    "previous": {
                        **encode_fact(self, key, self.outdated[key]),
                        "as_of": OLD_CENSUS,
                    },
                }
        return json.dumps({"name": self.name, "type": self.kind, "facts": facts})


def _split(name: str, key: str, value: int) -> int:
    """A reproducible share of `value` (its first part when a fact is printed as two parts)."""
    rng = random.Random(f"{name}:{key}:{value}")
    return rng.randrange(max(value // 4, 1), max(3 * value // 4, 2)) if value > 1 else 0


#: Facts printed as two parts that add up to the value.
PARTS = {
    "population": ("urban", "rural"),
    "area_km2": ("land_km2", "water_km2"),
    "elevation_m": ("river_level_m", "above_river_m"),
}


def encode_fact(entity: Entity, key: str, value: int) -> dict[str, int]:
    """How a record prints an int fact: two parts, years before `AS_OF`, or an age."""
    if key in PARTS:
        first = _split(entity.name, key, value)
        return {PARTS[key][0]: first, PARTS[key][1]: value - first}
    if key == "first_award_year":
        return {"age_at_award": value - int(entity.facts["birth_year"])}
    return {"years_before": AS_OF - value, "counted_from": AS_OF}


def decode_fact(facts: dict[str, object], key: str, previous: bool = False) -> int | None:
    """The value of fact `key` from a printed record's `facts` (None if it is not there).

    Args:
        facts: The `facts` object of a record as `Entity.record_json` prints it.
        key: The attribute.
        previous: Decode the outdated (previous census) value instead.

    Returns:
        The integer the encoded fact stands for.
    """
    raw = facts.get(key)
    if not isinstance(raw, dict):
        return None
    if previous:
        raw = raw.get("previous")
        if not isinstance(raw, dict):
            return None
    try:
        if key in PARTS:
            return int(raw[PARTS[key][0]]) + int(raw[PARTS[key][1]])
        if key == "first_award_year":
            born = decode_fact(facts, "birth_year")
            return None if born is None else born + int(raw["age_at_award"])
        return int(raw["counted_from"]) - int(raw["years_before"])
    except (KeyError, TypeError, ValueError):
        return None


@dataclass
class World:
    """Entities by name plus the quarterly sales tables by year."""

    entities: dict[str, Entity]
    sales: dict[int, dict[str, dict[str, int]]]
    monthly: dict[int, dict[str, dict[str, int]]]

    def of_kind(self, kind: str) -> list[Entity]:
        """Entities of one kind, in a fixed order."""
        return [e for e in self.entities.values() if e.kind == kind]

    def confusable(self, name: str) -> list[str]:
        """The entities of the same kind whose names share the longest prefix with `name`."""
        kind = self.entities[name].kind
        others = [e.name for e in self.of_kind(kind) if e.name != name]

        def shared(other: str) -> int:
            return next(
                (i for i, (a, b) in enumerate(zip(name, other, strict=False)) if a != b),
                min(len(name), len(other)),
            )

        longest = max(shared(other) for other in others)
        return [other for other in others if shared(other) == longest]

    def table_text(self, region: str) -> str:
        """The header and the rows of one region in `sales.csv` (one per year, by month)."""
        lines = ["year,region," + ",".join(MONTHS)]
        for year in sorted(self.monthly):
            row = self.monthly[year][region]
            lines.append(f"{year},{region}," + ",".join(str(row[m]) for m in MONTHS))
        return "\n".join(lines) + f"\n({len(self.sales)} rows)"


@lru_cache(maxsize=1)
def build_world() -> World:
    """Build the fixed world (seeded, so it never changes)."""
    rng = random.Random(20260)
    cities = [p + s for p in _PREFIXES for s in _SUFFIXES]
    entities: dict[str, Entity] = {}
    homes = {c: _COUNTRIES[i % len(_COUNTRIES)] for i, c in enumerate(cities)}
    for city in cities:
        population = rng.randrange(40, 900) * 1000
        entities[city] = Entity(
            city,
            "city",
            {
                "country": homes[city],
                "twin_city": rng.choice([c for c in cities if c != city]),
                "population": population,
                "founded": rng.randrange(1150, 1900),
                "area_km2": rng.randrange(30, 800),
                "elevation_m": rng.randrange(2, 1500),
            },
            {"population": population - rng.randrange(3, 60) * 1000},
        )
    for country, currency in zip(_COUNTRIES, _CURRENCIES, strict=True):
        own = [c for c in cities if homes[c] == country]
        population = rng.randrange(2000, 90000) * 1000
        entities[country] = Entity(
            country,
            "country",
            {
                "capital": own[0],
                "largest_city": own[1],
                "population": population,
                "founded": rng.randrange(800, 1950),
                "currency": currency,
            },
            {"population": population - rng.randrange(50, 900) * 1000},
        )
    for first in _FIRST:
        for last in _LAST:
            name = f"{first} {last}"
            birth, residence = rng.sample(cities, 2)
            born = rng.randrange(1930, 2000)
            entities[name] = Entity(
                name,
                "person",
                {
                    "birth_city": birth,
                    "residence_city": residence,
                    "birth_year": born,
                    "first_award_year": born + rng.randrange(20, 45),
                },
            )
    monthly = {
        year: {r: {m: rng.randrange(30, 330) for m in MONTHS} for r in REGIONS}
        for year in (PREVIOUS_YEAR, CURRENT_YEAR)
    }
    sales = {
        year: {r: quarters(monthly[year][r]) for r in REGIONS}
        for year in (PREVIOUS_YEAR, CURRENT_YEAR)
    }
    return World(entities, sales, monthly)


def quarters(months: dict[str, int]) -> dict[str, int]:
    """Quarter totals of one row of monthly figures (Q1 = Jan + Feb + Mar, ...)."""
    return {q: sum(months[m] for m in MONTHS[3 * i : 3 * i + 3]) for i, q in enumerate(QUARTERS)}
