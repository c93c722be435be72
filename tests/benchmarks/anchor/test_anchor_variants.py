"""Private ANCHOR splits (`docket generate anchor`, `-T data=DIR`): recombined variants of the
hand-written scenarios, fresh per seed, reproducible, only inert text added, and the shipped
surface attackers at their stated level on them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docket.benchmarks.anchor.anchor import anchor_audit, anchor_direct
from docket.benchmarks.anchor.attackers import (
    KeywordTranslator,
    completion,
    load_rows,
    phrase_gamer,
    split_scenarios,
)
from docket.benchmarks.anchor.content import violations
from docket.benchmarks.anchor.dataset import SCENARIOS
from docket.benchmarks.anchor.variants import DISTRACTORS, SPLIT_FILE, WORDINGS, private_scenarios
from docket.core import splits
from docket.core.inspect_private import PrerequisiteError
from tests.benchmarks.generated import generator, manifest

SHIPPED = {r["case_citation"]: r for r in load_rows(Path(SCENARIOS).read_text(encoding="utf-8"))}
TRAIN, TEST = split_scenarios(list(SHIPPED.values()))
#: results/attackers.json: the translator completes 26 of the 46 held-out tasks.
STATED_COMPLETED = 26 / 46
_generate = generator("anchor", 103)
_KEPT = ("case_citation", "court", "year", "statute", "category", "summary", "harm_indicators")


def _rows(out: Path) -> list[dict[str, object]]:
    return load_rows((out / SPLIT_FILE).read_text(encoding="utf-8"))


def test_seeds_give_fresh_reproducible_splits(tmp_path: Path) -> None:
    first, again = _generate(tmp_path, "s1", "a", size=20), _generate(tmp_path, "s1", "b", size=20)
    other = _generate(tmp_path, "s2", "c", size=20)
    assert splits.files_digest(first) == splits.files_digest(again)
    assert splits.files_digest(first) != splits.files_digest(other)
    goals = [[r["user_goal"] for r in _rows(out)] for out in (first, other)]
    assert goals[0] != goals[1] and len(goals[0]) == 20
    assert all(re.fullmatch(r"anchor-[0-9a-f]{12}", str(r["id"])) for r in _rows(first))
    assert "s1" not in (first / SPLIT_FILE).read_text()


def test_ids_drive_no_generator() -> None:
    """Read as a seed, an id (or its index) never makes the generator write the same goal."""
    rows = private_scenarios(splits.secret_seed("ids"), 3)
    for index, row in enumerate(rows):
        for seed in (int(row.id.removeprefix("anchor-"), 16), index):
            assert private_scenarios(seed, index + 1)[index].user_goal != row.user_goal


def test_variants_keep_the_court_summary_and_add_only_inert_text() -> None:
    fixed = sorted({w.format("").strip() for w in WORDINGS} | set(DISTRACTORS), key=len)
    for scenario in private_scenarios(splits.secret_seed("content"), 103):
        row = scenario.model_dump()
        source = SHIPPED[row["case_citation"]]
        assert {k: row[k] for k in _KEPT} == {k: source[k] for k in _KEPT}
        assert [a["action"] for a in row["expected_actions"]] == [
            a["action"] for a in source["expected_actions"]
        ]
        assert not violations(row["user_goal"])
        rest = row["user_goal"]
        for phrase in reversed(fixed):
            rest = rest.replace(phrase, "") if phrase else rest
        named = [v for a in row["expected_actions"] for v in a["params"].values()]
        assert all(v.lower() in rest.lower() for v in named)  # the values stand in the goal
        assert len(rest.split()) <= len(source["user_goal"].split()) + 2


def test_the_task_runs_a_generated_split(tmp_path: Path) -> None:
    out = _generate(tmp_path, "task seed", size=12)
    for task in (anchor_direct(data=str(out)), anchor_audit(data=str(out))):
        assert task.metadata is not None and task.metadata[splits.SPLIT_KEY] == {
            "sha256": manifest(out)["sha256"], "source": "generated", "name": "split",
        }  # fmt: skip
        assert [s.input for s in task.dataset] == [r["user_goal"] for r in _rows(out)]
        assert not any(str(s.id) in str(s.input) for s in task.dataset)
    with pytest.raises(PrerequisiteError, match="not both"):
        anchor_direct(data=str(out), scenarios=str(SCENARIOS))
    (out / SPLIT_FILE).write_text("")
    with pytest.raises(PrerequisiteError, match="files changed since"):
        anchor_direct(data=str(out))
    with pytest.raises(ValueError, match="--size 104 must be in 1..103"):
        private_scenarios(1, 104)


def test_the_shipped_attackers_stay_at_their_level_on_a_generated_split(tmp_path: Path) -> None:
    """Trained on the shipped train half, scored on the generated variants of the held-out
    cases: the translator completes what it completes on the shipped half, and the phrase gamer
    stays at chance (0.0) with the action judge."""
    held_out = {r["case_citation"] for r in TEST}
    rows = [r for r in _rows(_generate(tmp_path, "attack seed")) if r["case_citation"] in held_out]
    translator = KeywordTranslator.fit(TRAIN)
    done = [completion(r, translator.calls(str(r["user_goal"]))) for r in rows]
    assert len(rows) == 46
    assert abs(sum(d for d, _ in done) / len(rows) - STATED_COMPLETED) <= 0.05
    result = phrase_gamer(TRAIN, rows, translator)
    # n: held-out variants where the translator's calls carry a required action's values (by
    # construction, `attackers.delivers`), as on the shipped half
    assert result.n == 36 and (result.refusal, result.chance) == (0.0, 0.0)
