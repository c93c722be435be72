"""ERM, the evolving retrieval memory (Hu et al., "RAG without Forgetting: Continual
Query-Infused Key Memory", arXiv 2602.05152): query-time expansions that led to a correct result
are written into the keys of the documents they helped, so that plain retrieval later finds them
with no expansion and no extra model call.

The paper's method section was not available; this is our reconstruction from its abstract,
with every knob in `ERMConfig`:

1. Expand the query q into atomic units u_1..u_m (an expander model or a rule-based expander)
   and retrieve with q ⊕ U on the *original* keys k⁰ (the transient adaptation).
2. **Correctness gate**: unless the caller says the result was correct (a gold document in the
   top `gate_depth`, or a reader's verified answer), nothing changes.
3. **Atomic attribution**, for each document d that supported the result: the gain of unit u is
   g_u(d) = s⁰(q ⊕ u, d) − s⁰(q, d); A(d) = {u : g_u(d) > threshold}.
4. **Query-infused key update**: the target is t_d = s⁰(q ⊕ A(d), d), what the attributed
   expansion gave d. The residual r = t_d − s(q, d) on the current keys is moved into the key
   along ψ(q), a direction with ⟨φ(q), ψ(q)⟩ = 1 (`Keys.infusion`):
   δ_d ← δ_d + η_n·max(r, 0)·ψ(q), with η_n = eta / (1 + decay·n) after n earlier updates of d.
   With eta = 1 the plain query then scores d exactly as the expanded query did: query
   expansion moved into the key (the equivalence the paper proves under inner-product scoring).
5. **Norm bound**: δ_d is projected onto ‖δ_d‖ ≤ ρ_d (ρ_d = radius·‖k⁰_d‖ when `relative`, else
   radius), so ‖k_d − k⁰_d‖ ≤ ρ_d always.

Repeated identical feedback converges: the residual shrinks by (1 − η) per step until the target
is met, or the displacement settles on the sphere of radius ρ_d. Retrieval uses the evolved keys
with the unchanged scoring code (`Keys.rank`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .keys import Keys


@dataclass(frozen=True)
class ERMConfig:
    """ERM's knobs (docket's defaults; the paper's values were not available)."""

    #: η in (0, 1]: the share of the residual a key absorbs per feedback.
    eta: float = 1.0
    #: ρ: the largest displacement of a key from its original.
    radius: float = 0.25
    #: ρ_d = radius·‖k⁰_d‖ (True) or radius itself (False).
    relative: bool = True
    #: τ: a unit is attributed to a document when its gain exceeds this.
    threshold: float = 0.0
    #: The retrieval gate: a gold document within this depth of the expanded ranking.
    gate_depth: int = 10
    #: η_n = eta / (1 + decay·n) after n updates of the same key (0: constant step).
    decay: float = 0.0

    def __post_init__(self) -> None:
        if not 0 < self.eta <= 1:
            raise ValueError(f"ERM eta must be in (0, 1], got {self.eta}")
        if self.radius < 0 or self.decay < 0 or self.gate_depth < 1:
            raise ValueError("ERM radius and decay must be >= 0 and gate_depth >= 1")


@dataclass(frozen=True)
class Feedback:
    """One feedback query: its text, its expansion units and its gold documents."""

    query: str
    units: tuple[str, ...]
    relevant: frozenset[int] = frozenset()


@dataclass(frozen=True)
class KeyChange:
    """What one update did to one document's key."""

    doc: int
    attributed: tuple[tuple[str, float], ...]
    target: float
    residual: float
    step: float
    displacement: float


@dataclass
class Update:
    """The outcome of one feedback: whether the gate passed and which keys moved."""

    query: str
    passed: bool
    changes: list[KeyChange] = field(default_factory=list)


class EvolvingMemory:
    """An index whose keys evolve through correctness-gated, attributed, norm-bounded updates."""

    def __init__(self, keys: Keys, config: ERMConfig | None = None) -> None:
        self.keys = keys
        self.config = config or ERMConfig()
        self.updates_of: dict[int, int] = {}

    def radius_of(self, doc: int) -> float:
        """ρ_d."""
        scale = self.keys.key_norm(doc) if self.config.relative else 1.0
        return self.config.radius * scale

    def expanded_ranking(self, query: str, units: Sequence[str], k: int) -> list[int]:
        """Top `k` documents for q ⊕ U on the original keys (the query-time expansion)."""
        [expanded] = self.keys.encode([expand(query, units)])
        return [doc for doc, _ in self.keys.rank(expanded, k, evolved=False)]

    def attribute(self, query: str, units: Sequence[str], doc: int) -> list[tuple[str, float]]:
        """(unit, gain) for every unit whose gain on `doc` exceeds the threshold."""
        return self._attribute(self._unit_queries(query, units), units, doc)

    def _unit_queries(self, query: str, units: Sequence[str]) -> list[Any]:
        """φ(q), then φ(q ⊕ u) for each unit (encoded once per feedback)."""
        return self.keys.encode([query, *(expand(query, [u]) for u in units)])

    def _attribute(
        self, encoded: list[Any], units: Sequence[str], doc: int
    ) -> list[tuple[str, float]]:
        plain, *expanded = encoded
        base = self.keys.doc_score(plain, doc, evolved=False)
        gains = [
            (u, self.keys.doc_score(e, doc, evolved=False) - base)
            for u, e in zip(units, expanded, strict=True)
        ]
        return [(u, g) for u, g in gains if g > self.config.threshold]

    def update(
        self, query: str, units: Sequence[str], *, correct: bool, supported: Iterable[int]
    ) -> Update:
        """Apply one feedback; nothing changes unless `correct`."""
        [direction_query] = self.keys.encode([query], grow=True)
        self.keys.observe(direction_query)
        if not correct:
            return Update(query, passed=False)
        direction = self.keys.infusion(direction_query)
        encoded = self._unit_queries(query, units)
        plain = encoded[0]
        result = Update(query, passed=True)
        for doc in dict.fromkeys(supported):
            attributed = self._attribute(encoded, units, doc)
            if not attributed:
                continue
            [target_query] = self.keys.encode([expand(query, [u for u, _ in attributed])])
            target = self.keys.doc_score(target_query, doc, evolved=False)
            residual = target - self.keys.doc_score(plain, doc, evolved=True)
            if residual <= 0:
                continue
            n = self.updates_of.get(doc, 0)
            step = self.config.eta / (1 + self.config.decay * n) * residual
            norm = self.keys.displace(doc, direction, step, self.radius_of(doc))
            self.updates_of[doc] = n + 1
            result.changes.append(KeyChange(doc, tuple(attributed), target, residual, step, norm))
        return result

    def feedback(self, item: Feedback) -> Update:
        """The retrieval gate: correct when a gold document is in the expanded top `gate_depth`;
        the gold documents found there are the ones that supported the result."""
        top = self.expanded_ranking(item.query, item.units, self.config.gate_depth)
        found = [doc for doc in top if doc in item.relevant]
        return self.update(item.query, item.units, correct=bool(found), supported=found)

    def learn(self, items: Iterable[Feedback]) -> list[Update]:
        """Every feedback in order, then the evolved keys committed for retrieval."""
        items = list(items)
        self.keys.prepare(
            [
                text
                for item in items
                for text in [
                    item.query,
                    expand(item.query, item.units),
                    *(expand(item.query, [u]) for u in item.units),
                ]
            ]
        )
        updates = [self.feedback(item) for item in items]
        self.keys.commit()
        return updates

    def retrieve(self, query: str, k: int) -> list[tuple[int, float]]:
        """Plain retrieval on the evolved keys: no expansion, no model call."""
        [encoded] = self.keys.encode([query])
        return self.keys.rank(encoded, k, evolved=True)


def expand(query: str, units: Sequence[str]) -> str:
    """q ⊕ U as text: the query followed by its units."""
    return " ".join([query, *units])
