"""The knobs of `-M method=dustin` that the paper specifies or that users tune.

The paper (arXiv 2606.24957) states the parts these knobs set: the draft and its γ proposed
tokens per round (`draft`, `draft_layers`, `draft_tokens`), verification against a selection of
the cache (`verify`: `dense` is the vanilla speculative-decoding baseline), the selection's KV
budget with its sinks and recent window (`budget`, `sinks`, `recent`), the historical attention
of the target estimated on a minimal subset of heads (`est_heads`), refreshed every `refresh`
sparse rounds, kept as an EMA (`decay`) and mixed with the draft's lookahead by `mix`. The
paper gives no values; the defaults are our reconstruction's (`algorithm`'s docstring).

Knobs that only our experiments use live in `experimental.ExperimentalDustinSettings`; this
class behaves exactly as that one with every experimental knob at its default (off).
"""

from __future__ import annotations

from dataclasses import dataclass

from docket.methods.local.settings import knob

VERIFY_MODES = ("sparse", "dense")


@dataclass(frozen=True)
class DustinSettings:
    """The knobs of `-M method=dustin` (defaults: our reconstruction, see `algorithm`)."""

    draft_tokens: int = knob(4, "γ: tokens the draft proposes per round", minimum=1, maximum=64)
    draft_layers: int = knob(8, "the self-draft: the target's first N layers", minimum=1)
    #: A separate draft checkpoint directory (same vocabulary) instead of the self-draft.
    draft: str | None = knob(None, "a draft checkpoint directory (same vocabulary as the target)")
    verify: str = knob(
        "sparse", "sparse: Dustin's verifier; dense: reads everything", choices=VERIFY_MODES
    )
    budget: int = knob(1024, "top-scored cache entries the sparse verifier reads", minimum=0)
    sinks: int = knob(4, "first positions always read", minimum=0)
    recent: int = knob(64, "last positions always read", minimum=0)
    refresh: int = knob(
        16, "sparse rounds between dense checks (which also refresh the history)", minimum=1
    )
    est_heads: int = knob(32, "(layer, head) pairs that estimate historical attention", minimum=0)
    mix: float = knob(
        0.5, "weight of the draft's lookahead score against history", minimum=0.0, maximum=1.0
    )
    decay: float = knob(0.8, "EMA decay of the historical attention", minimum=0.0, maximum=1.0)
