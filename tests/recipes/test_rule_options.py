"""The recipe "a new rule option" followed to its consumers: every `RuleSet` field is a row of docs/paper.md's
rules table (what each preset does and what the paper says), and every field reaches a game's own record (the
`game_started` event in events.jsonl, read back equal)."""

from __future__ import annotations

from pathlib import Path

from avalon_agents.core.events import EVENT_ADAPTER
from avalon_agents.core.rules import PRESETS, RuleSet, make_rules
from avalon_agents.engine import AvalonEngine

ROOT = Path(__file__).parents[2]
NOT_RULES = ("name", "players")
"""Fields that name a preset or size a game rather than decide a rule."""


def test_every_rule_option_is_a_row_of_the_papers_rules_table():
    table = (ROOT / "docs" / "paper.md").read_text().split("## Rules", 1)[1].split("\n\n**", 1)[0]
    missing = [f for f in RuleSet.model_fields if f not in NOT_RULES and f"| `{f}` |" not in table]
    assert not missing, f"docs/paper.md's rules table has no row for {missing}"


def test_every_rule_option_reaches_the_games_record():
    for preset in PRESETS:
        rules = make_rules(preset, 7)
        (started,) = [e for e in AvalonEngine(rules, seed=1).reset() if e.type == "game_started"]
        read = EVENT_ADAPTER.validate_json(EVENT_ADAPTER.dump_json(started))
        assert read.rules == rules and read.rules.model_dump().keys() == RuleSet.model_fields.keys()
