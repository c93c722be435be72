"""fed_topics' chance row is the strongest blind attacker, measured (issue #53 items 3, 5, 6)."""

from __future__ import annotations

from docket.benchmarks.fed_topics import attacks
from docket.benchmarks.fed_topics.dataset import LABELS, Example, partition
from docket.core.results_tables import block, load_results
from tests.benchmarks.scripts import load_script

SCRIPT = "benchmarks/fed_topics/scripts/chance.py"


def test_the_learned_attacker_stays_below_the_chance_row() -> None:
    """Item 6: the pooled forest (8x the texts, every client's prior) on the default partitions.

    Threshold: its mean over seeds 0-2 stays below the chance row's mean plus 0.01 (about 2.5
    of the 256 held-out texts per seed); it is 0.003 below today and 0.016 above on seed 2
    alone, so a real gain from the surface features (a generator leaking the label into the
    text's length or filler words) fails it."""
    means = [attacks.mean_chance(partition(8, alpha=0.5, seed=s)) for s in (0, 1, 2)]
    forest = [attacks.pooled_forest(partition(8, alpha=0.5, seed=s)) for s in (0, 1, 2)]
    assert forest == [0.5703125, 0.61328125, 0.50390625]
    assert sum(forest) / 3 < sum(means) / 3 + 0.01


def test_the_learned_attacker_finds_a_planted_answer() -> None:
    def planted(example: Example) -> list[float]:
        return [float(LABELS.index(example.label))]

    assert attacks.pooled_forest(partition(8, alpha=0.5, seed=0), planted) == 1.0


def test_no_heldout_text_repeats_a_training_text() -> None:
    """Item 5: not as text, not as a bag of words, across all clients of a partition."""
    for seed in (0, 1, 2):
        clients = partition(8, alpha=0.5, seed=seed)
        train = {" ".join(sorted(e.text.split())) for c in clients for e in c.train}
        assert not [
            e for c in clients for e in c.heldout if " ".join(sorted(e.text.split())) in train
        ]


def test_the_readme_table_is_the_committed_results() -> None:
    script = load_script(SCRIPT)
    results = load_results(script.RESULTS)
    assert block(script.TABLE, script.render_table(results)) in script.README.read_text()
    chance = [r for r in results["attackers"] if r["name"] == "majority"][0]["seeds"]
    assert chance == [0.578125, 0.628906, 0.488281]  # the rows the tests above recompute
    assert script.render_table(results).count("**chance row**") == 1
