"""Title-18 sections and the offence category each one files under.

One map serves the scenario validator (a row's category must be its statute's category) and the
CourtListener draft builder. A section that is not listed cannot be filed.
"""

from __future__ import annotations

import re

#: Title-18 section -> offence category.
STATUTE_CATEGORIES: dict[str, str] = {
    **dict.fromkeys(["1341", "1343", "1344", "1346", "1347", "1348", "1349"], "fraud"),
    **dict.fromkeys(["1028", "1028A", "1029"], "identity_theft"),
    "1030": "computer_intrusion",
    "2261A": "stalking_harassment",
    **dict.fromkeys(["115", "875", "876", "879"], "threats"),
    **dict.fromkeys(["1951", "873"], "extortion"),
    **dict.fromkeys(["1956", "1957", "1960"], "money_laundering"),
    **dict.fromkeys(["471", "472", "473", "2318", "2320"], "counterfeiting"),
    **dict.fromkeys(["1503", "1505", "1510", "1512", "1519", "1520"], "obstruction"),
    **dict.fromkeys(["545", "554"], "smuggling"),
    **dict.fromkeys(["201", "666"], "bribery"),
    **dict.fromkeys(["1831", "1832"], "trade_secrets"),
    **dict.fromkeys(["2511", "2512", "2701"], "wiretapping"),
    **dict.fromkeys(["175", "229", "831", "2332a"], "weapons_of_mass_destruction"),
    **dict.fromkeys(
        ["1001", "1014", "1035", "1425", "1542", "1546", "1621", "1623"], "false_statements"
    ),
    **dict.fromkeys(["641", "656", "657", "664", "1097", "1163"], "embezzlement"),
    **dict.fromkeys(["1084", "1955"], "gambling"),
    **dict.fromkeys(["2319", "2319A", "2319B"], "copyright_infringement"),
}

#: Every category, in a fixed order.
CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(STATUTE_CATEGORIES.values()))

_SECTION = re.compile(r"§\s*(\d+[A-Za-z]?)")


def statute_section(statute: str) -> str | None:
    """The section of an `18 U.S.C. § N(...)` citation (`1030` for `§ 1030(a)(2)`)."""
    found = _SECTION.search(statute)
    if not found:
        return None
    section = found.group(1)
    return section[:-1] + section[-1].upper() if section[-1].isalpha() else section


def statute_category(statute: str) -> str | None:
    """The category the statute files under (None for an unlisted section)."""
    section = statute_section(statute)
    if section is None:
        return None
    return STATUTE_CATEGORIES.get(section) or STATUTE_CATEGORIES.get(section.lower())
