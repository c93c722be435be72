"""Irrelevant sentences for questions (as in GSM-IC), from a generated family, not fixed templates.

A sentence is an optional opener, one of `FRAMES` (an unrelated fact with zero to three numbers
and sometimes a region), and an optional closer: 13 openers x 36 frames x 7 closers, each
number from one of three ranges. A question gets one, then another with chance
`MORE` each time (at most `CAP`), each placed before the question or after it. So how many of
the question's numbers are irrelevant varies from 0 to 24 and is not told by the number of
sentences, and a reader that strips a handful of fixed sentences (3-B had four templates) still
sees most irrelevant numbers.

`without_irrelevant` removes every sentence of the family (what a reader does by meaning: none
of them is about the question's objects); the step checks use it to know which numbers a plan
needs.
"""

from __future__ import annotations

import random
import re

from docket.benchmarks.correct.simulator.world import REGIONS

OPENERS = (
    "",
    "",
    "",
    "",
    "Unrelated to this question, ",
    "For context only, ",
    "Separately, ",
    "As background, ",
    "By the way, ",
    "Incidentally, ",
    "On a different note, ",
    "In other news, ",
    "Meanwhile, ",
)
#: Unrelated facts: `{n}`, `{m}`, `{k}` are numbers, `{region}` a region name.
FRAMES = (
    "{n} other requests are waiting in the queue",
    "the {region} team has handled {n} similar questions this week",
    "the {region} office filed {n} reports last month",
    "the previous run took {n} minutes",
    "the help desk closed {n} tickets and reopened {m} of them",
    "the archive room holds {n} shelves of old binders",
    "{n} volunteers and {m} staff came to the meeting",
    "the cafeteria served {n} lunches on the first floor",
    "a courier made {n} deliveries in {m} hours",
    "the server was restarted {n} times overnight",
    "the newsletter now has {n} subscribers",
    "the parking lot has room for {n} cars",
    "the training course lasts {n} weeks",
    "the chess club has {n} members and meets every {m} days",
    "the lobby clock runs {n} minutes fast",
    "the printer jammed twice this morning",
    "the weather was mild today",
    "a colleague asked something similar yesterday",
    "the building was repainted {n} years ago",
    "the {region} depot ordered {n} pallets of paper",
    "the meeting room seats {n} people and has {m} screens",
    "the {region} branch hired {n} interns",
    "the coffee machine made {n} cups by noon",
    "the shuttle bus leaves every {n} minutes",
    "the last audit listed {n} minor findings, {m} of them closed",
    "the team chat has {n} unread messages",
    "it took {n} attempts to book the {region} conference room",
    "the quiz night had {n} teams of {m} players and {k} rounds",
    "the spare keys are kept in drawer {n}",
    "the website had {n} visitors across {m} pages",
    "the fire drill lasted {n} minutes",
    "nobody has updated the wiki page of the {region} office",
    "the office fridge holds {n} bottles of water",
    "the storage unit is {n} metres long and {m} metres wide",
    "the {region} warehouse repainted {n} of its {m} doors",
    "the night shift logged {n} calls, {m} of them after midnight, over {k} hours",
)
CLOSERS = (
    "",
    "",
    "",
    ", which does not matter here",
    ", but that is beside the point",
    " (not needed here)",
    ", though it has no bearing on the question",
)
#: The ranges a number of an irrelevant sentence is drawn from (one per number).
RANGES = ((2, 30), (2, 100), (10, 1000))
#: Chance of one more irrelevant sentence after each one (their count is geometric, capped).
MORE = 0.6
CAP = 8
#: Chance that a sentence goes before the question (else after it).
BEFORE = 0.6


def sentence(rng: random.Random) -> str:
    """One irrelevant sentence: opener, frame, closer, with its numbers and region drawn.

    Args:
        rng: The random stream.

    Returns:
        The sentence, ending with a full stop.
    """
    opener, frame, closer = rng.choice(OPENERS), rng.choice(FRAMES), rng.choice(CLOSERS)
    fields = {slot: rng.randrange(*rng.choice(RANGES)) for slot in ("n", "m", "k")}
    body = frame.format(region=rng.choice(REGIONS), **fields)
    if not opener:
        body = body[:1].upper() + body[1:]
    return f"{opener}{body}{closer}."


def with_irrelevant(rng: random.Random, question: str) -> str:
    """`question` with one or more irrelevant sentences before and after it.

    Args:
        rng: The random stream.
        question: The question proper.

    Returns:
        The question with its irrelevant sentences.
    """
    sentences = [sentence(rng)]
    while len(sentences) < CAP and rng.random() < MORE:
        sentences.append(sentence(rng))
    places = [rng.random() < BEFORE for _ in sentences]
    before = [s for s, first in zip(sentences, places, strict=True) if first]
    after = [s for s, first in zip(sentences, places, strict=True) if not first]
    return " ".join([*before, question, *after])


def _pattern() -> re.Pattern[str]:
    def alternatives(texts: tuple[str, ...]) -> str:
        return "|".join(re.escape(t) for t in sorted(set(texts), key=len, reverse=True) if t)

    regions = "|".join(REGIONS)
    frames = []
    for frame in FRAMES:
        for variant in (frame, frame[:1].upper() + frame[1:]):
            escaped = re.escape(variant)
            for slot in ("n", "m", "k"):
                escaped = escaped.replace(re.escape("{" + slot + "}"), r"\d+")
            frames.append(escaped.replace(re.escape("{region}"), f"(?:{regions})"))
    return re.compile(
        rf" ?(?:{alternatives(OPENERS)})?(?:{'|'.join(frames)})(?:{alternatives(CLOSERS)})?\."
    )


IRRELEVANT = _pattern()


def without_irrelevant(question: str) -> str:
    """The question with every irrelevant sentence of the family removed.

    Args:
        question: A question, with its irrelevant sentences.

    Returns:
        The question proper.
    """
    return IRRELEVANT.sub("", question).strip()


def irrelevant_sentences(question: str) -> list[str]:
    """The irrelevant sentences of a question, in order.

    Args:
        question: A question.

    Returns:
        Each irrelevant sentence found (without the leading space).
    """
    return [match.strip() for match in IRRELEVANT.findall(question)]
