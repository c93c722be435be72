"""Reference policies of `docket/erm_retrieval` and `docket/erm_rag`.

* `erm_expander` (the `expander` role): expands a query with the shipped thesaurus (or
  `-M thesaurus=FILE`), one document term per line, exactly as `-T expander=thesaurus` does;
  for a doc2query prompt it writes queries by swapping each known document term for a query
  word (the thesaurus read backwards, the first word each time).
* `erm_reader`: `mode=first` answers with the first four-digit year of the first passage (a
  reader whose accuracy is the share of questions whose top passage holds the answer);
  `mode=constant` always answers 1900 (the no-reasoning baseline).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy
from docket.benchmarks.erm_retrieval.dataset import SHIPPED as DATA

SHIPPED = DATA / "thesaurus.json"
_WORD = re.compile(r"[a-z0-9]+")
_QUERY = re.compile(r"^Query:\s*(.*)$", re.MULTILINE)
_PASSAGE = re.compile(r"^Passage:\s*(.*)", re.MULTILINE | re.DOTALL)
_FIRST = re.compile(r"^\[1\]\s*(.*)$", re.MULTILINE)
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")


@lru_cache(maxsize=4)
def _thesaurus(path: str) -> dict[str, list[str]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {str(k): [str(u) for u in v] for k, v in data.items()}


@policy("erm_expander", args={"thesaurus": str})
def erm_expander(state: PolicyInput) -> PolicyReply:
    """Thesaurus expansion of the `Query:` line; doc2query by the reversed thesaurus."""
    table = _thesaurus(str(state.args.get("thesaurus") or SHIPPED))
    text = state.last_user_text
    passage = _PASSAGE.search(text)
    if passage:
        inverse: dict[str, str] = {}
        for word, terms in table.items():
            for term in terms:
                inverse.setdefault(term, word)
        words = [inverse[w] for w in _WORD.findall(passage.group(1).lower()) if w in inverse]
        return PolicyReply(text=" ".join(dict.fromkeys(words)))
    found = _QUERY.search(text)
    words = _WORD.findall((found.group(1) if found else text).lower())
    units = [u for w in words for u in table.get(w, [])]
    return PolicyReply(text="\n".join(dict.fromkeys(units)))


@policy("erm_reader", args={"mode": str})
def erm_reader(state: PolicyInput) -> PolicyReply:
    """`ANSWER: <year>` from the first passage (mode=first) or always 1900 (mode=constant)."""
    mode = str(state.args.get("mode") or "first")
    if mode == "constant":
        return PolicyReply(text="ANSWER: 1900")
    if mode != "first":
        raise ValueError(f"erm_reader: -M mode={mode!r}; accepted: first, constant")
    first = _FIRST.search(state.last_user_text)
    year = _YEAR.search(first.group(1)) if first else None
    return PolicyReply(text=f"ANSWER: {year.group(1)}" if year else "ANSWER: unknown")
