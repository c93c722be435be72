"""Dustin's experiment-only knobs: `ExperimentalDustinSettings` (TRL's `experimental` pattern).

`DustinSettings` holds what the paper specifies and what users tune. The knobs here are our
own experiments on top of the paper (the pass-key measurements in the decoding README); none
of them has changed a default, so every one is at its off (or reconstruction) default, where
`DustinSettings` behaves exactly as this class does. A knob is promoted to `DustinSettings`
only when a measurement changes its default, and deleted when nothing uses it.

Why each knob is here rather than in `DustinSettings`:

- `prefill_heads`: how the history starts (the last prompt queries of every head, or only of
  the estimation heads) is our reconstruction; the paper names only the head subset that
  refreshes it. `est` was a pass-key variant and failed a check at 3.4k: `all` stays.
- `prefill_candidates`, `refresh_candidates`, `candidate_block`: Quest-style candidate
  blocks for the history estimates, a cost experiment (512 in blocks of 16 in the pass-key
  rows, never swept); off by default.
- `layer_share`: blends each layer's selection score with the mean over layers; share 0.5
  read 0.31 of dense's entries at 1.5k against 0.32 at share 0, not adopted.
- `successors`: the entry after a well-scored one inherits its score (copying heads); 1 in
  the pass-key settings, 0 by default (on short chat prompts the selection is the cache).
- `escalate`, `escalate_budget`: re-runs uncertain sparse rounds on a larger selection;
  measured not to pay on SmolLM2.
- `fail_budget`: a larger budget after a failed check; 0 was at least as good as 256.
- `select_by`: per key-value group selection; helped at 1.5k, not at 3.4k.
- `branches`, `branch_margin`, `branch_rank`, `branch_grow`: near-tie branches checked in one
  tree pass; they made the held-out keys worse.
- `tail_samples`, `tail_proposal`, `tail_from`: stratified samples of the unselected entries;
  helped some 3.4k key sets, cost reads at 1.5k.
- `summary_block`: block-mean summaries of the unselected entries; helped at 1.5k, hurt at
  3.4k.

On the command line every knob of both classes is accepted (`-M method=dustin` registers this
class); `resolve_knobs` returns a plain `DustinSettings` unless an experimental knob is given.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from docket.methods.local.settings import knob

from .settings import DustinSettings

PREFILL_HEADS = ("all", "est")
SELECT_BY = ("layer", "group")
BRANCH_GROW = ("sparse", "copy")
TAIL_PROPOSALS = ("uniform", "score")
TAIL_FROM = ("start", "failure")


@dataclass(frozen=True)
class ExperimentalDustinSettings(DustinSettings):
    """`DustinSettings` plus the knobs only experiments use (each at its off default)."""

    prefill_heads: str = knob(
        "all",
        "heads whose attention from the last prompt queries starts the history: all, or est",
        choices=PREFILL_HEADS,
    )
    prefill_candidates: int = knob(
        0,
        "the prefill's history estimate reads only this many candidate positions per key-value "
        "group, in the blocks whose key bounds (channel-wise min and max, Quest's page "
        "metadata) carry the most attention (0: every key)",
        minimum=0,
    )
    refresh_candidates: int = knob(
        0,
        "the same for the estimation heads' refresh at a dense check (0: every key)",
        minimum=0,
    )
    candidate_block: int = knob(
        16, "positions per block of prefill_candidates and refresh_candidates", minimum=1
    )
    layer_share: float = knob(
        0.0,
        "weight of the mean over layers in each layer's selection score",
        minimum=0.0,
        maximum=1.0,
    )
    successors: int = knob(
        0,
        "positions after a scored one that inherit its score (a copying head reads the next)",
        minimum=0,
        maximum=16,
    )
    escalate: float = knob(
        0.0,
        "re-run a sparse round with escalate_budget when a new token's top-1 minus top-2 "
        "logit is below this (0: off)",
        minimum=0.0,
    )
    escalate_budget: int = knob(512, "the budget of an escalated sparse round", minimum=0)
    fail_budget: int = knob(
        0, "the budget for the rest of a generation after a failed dense check (0: same)", minimum=0
    )
    select_by: str = knob(
        "layer",
        "one index set per layer, or one per key-value group of each layer (same entries read)",
        choices=SELECT_BY,
    )
    branches: int = knob(
        0,
        "greedy: near-tie branches grown per dense check and verified with the tentative "
        "tokens in one tree-masked pass (0: off)",
        minimum=0,
        maximum=32,
    )
    branch_margin: float = knob(
        0.25,
        "a tentative token whose sparse top-1 minus top-2 logit is below this gets a branch "
        "through its runner-up",
        minimum=0.0,
    )
    branch_rank: int = knob(
        2,
        "the lowest sparse rank a branch goes through (2: the runner-up only; 3: also the "
        "third token, with margin top-1 minus top-3)",
        minimum=2,
        maximum=8,
    )
    branch_grow: str = knob(
        "sparse",
        "a branch's tokens after its near-tie: sparse rounds (read), or copy: the parent "
        "path's own tokens (a guess that reads nothing before the check)",
        choices=BRANCH_GROW,
    )
    tail_samples: int = knob(
        0,
        "sparse rounds also read this many of each layer's unselected entries, one drawn "
        "in each of as many equal strata, each weighted by the entries it stands for (an "
        "estimate of the unselected attention; 0: off)",
        minimum=0,
    )
    tail_proposal: str = knob(
        "uniform",
        "where tail samples are drawn: uniform, or score (half uniform, half by the "
        "selection score, each sample weighted by its density)",
        choices=TAIL_PROPOSALS,
    )
    tail_from: str = knob(
        "start",
        "when sparse rounds take tail samples: from the start, or after the generation's first "
        "failed dense check",
        choices=TAIL_FROM,
    )
    summary_block: int = knob(
        0,
        "sparse rounds also read, per block of this many dense-verified positions, one mean "
        "key and value of the block's unselected entries, weighted by their count (0: off)",
        minimum=0,
    )

    def __post_init__(self) -> None:
        """Refuse experiments that exclude each other (one `ValueError` line).

        Raises:
            ValueError: `summary_block` with `select_by=group` or with `tail_samples`.
        """
        if self.summary_block and self.select_by != "layer":
            raise ValueError("-M method=dustin: summary_block needs select_by=layer")
        if self.summary_block and self.tail_samples:
            raise ValueError("-M method=dustin: summary_block and tail_samples exclude each other")

    @classmethod
    def of(cls, settings: DustinSettings) -> ExperimentalDustinSettings:
        """The experimental settings a decoder runs with.

        Args:
            settings: Plain or experimental settings.

        Returns:
            `settings` itself when experimental, else its knobs with every experimental knob
            at its default.
        """
        if isinstance(settings, ExperimentalDustinSettings):
            return settings
        return cls(**dataclasses.asdict(settings))

    def resolve_knobs(self, given: frozenset[str]) -> DustinSettings:
        """The settings `-M method=dustin` runs with (`parse_settings` calls this).

        Args:
            given: The knobs given on the command line.

        Returns:
            These settings when an experimental knob was given; else a plain `DustinSettings`
            with the same values of its own knobs.
        """
        if given & set(experimental_knobs()):
            return self
        plain = {f.name for f in dataclasses.fields(DustinSettings)}
        values = dataclasses.asdict(self)
        return DustinSettings(**{name: values[name] for name in plain})


def experimental_knobs() -> tuple[str, ...]:
    """The knobs `ExperimentalDustinSettings` adds to `DustinSettings`.

    Returns:
        Their names in declaration order.
    """
    plain = {f.name for f in dataclasses.fields(DustinSettings)}
    return tuple(
        f.name for f in dataclasses.fields(ExperimentalDustinSettings) if f.name not in plain
    )
