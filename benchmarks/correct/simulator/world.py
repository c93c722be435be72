"""The mini knowledge base and sales table the simulated agents consult.

Everything is built from fixed name lists and one fixed seed, so the world is identical on every
machine (`build_world()` is cached). Tools print nested output: a knowledge-base record is a
JSON object whose dated facts carry their previous value, and `sales.csv` holds one row per
year and region.
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
CURRENT_YEAR = 2024
PREVIOUS_YEAR = 2023

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
        """The record as the search tool prints it: nested JSON, dated facts with history."""
        facts: dict[str, object] = {}
        for key, value in self.facts.items():
            if key in self.outdated:
                facts[key] = {
                    "value": value,
                    "as_of": NEW_CENSUS,
                    "previous": {"value": self.outdated[key], "as_of": OLD_CENSUS},
                }
            else:
                facts[key] = value
        return json.dumps({"name": self.name, "type": self.kind, "facts": facts})


@dataclass
class World:
    """Entities by name plus the quarterly sales tables by year."""

    entities: dict[str, Entity]
    sales: dict[int, dict[str, dict[str, int]]]

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
        """The header and the rows of one region in `sales.csv` (one per year)."""
        lines = ["year,region," + ",".join(QUARTERS)]
        for year in sorted(self.sales):
            row = self.sales[year][region]
            lines.append(f"{year},{region}," + ",".join(str(row[q]) for q in QUARTERS))
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
    sales = {
        year: {r: {q: rng.randrange(100, 999) for q in QUARTERS} for r in REGIONS}
        for year in (PREVIOUS_YEAR, CURRENT_YEAR)
    }
    return World(entities, sales)
