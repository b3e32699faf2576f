"""Tournaments: the rotation gives every entrant every role once per block under one deal, the ratings are the
same however the games are ordered on disk, config mistakes are one line naming the field, and (slow) the
shipped bot tournament ranks the rule bot above the weakened ones above the random agents."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents.analysis.load import RunData, load_run
from avalon_agents.analysis.tournaments.leaderboard import format_leaderboard, leaderboard, markdown, rank_ranges
from avalon_agents.analysis.tournaments.ratings import rate_games
from avalon_agents.cli import cli
from avalon_agents.core import make_rules
from avalon_agents.engine import AvalonEngine
from avalon_agents.experiments.runner import game_seed, run_experiment_sync, seating
from avalon_agents.experiments.tournament import load_tournament
from avalon_agents.records.run_dir import SEATING

ROOT = Path(__file__).parent.parent.parent
SHIPPED = ROOT / "experiments" / "tournament_bots.yaml"
SMALL = """\
name: t
players: {players}
entrants:
  bot: {{kind: rulebot}}
  weak: {{kind: rulebot, options: {{blunder: 0.5}}}}
  rnd: {{kind: random}}
blocks: {blocks}
series: 2
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("players", [5, 6, 7])
def test_every_entrant_takes_every_role_once_per_block_on_one_deal(tmp_path, players):
    exp = load_tournament(write(tmp_path, SMALL.format(players=players, blocks=3)))["main"]
    rules = make_rules(exp.rules, exp.players)
    n = len(exp.rotation)
    assert exp.games_per_series == 3 * n
    for series in (1, 2):
        seeds = []
        for block in range(3):
            held: dict[str, Counter] = {name: Counter() for name in exp.rotation}
            games = range(block * n + 1, block * n + n + 1)
            block_seeds = {game_seed(exp, series, g) for g in games}
            assert len(block_seeds) == 1  # one deal per block
            seed = block_seeds.pop()
            seeds.append(seed)
            roles = AvalonEngine(rules, seed).roles
            for g in games:
                for seat, name in zip(rules.seats, seating(exp, seed, series, g)):
                    held[name][roles[seat]] += 1
            for name, count in held.items():  # each entrant: every role position exactly once in the block
                assert count == Counter(rules.roles), (players, series, block, name)
        assert len(set(seeds)) == 3
    assert game_seed(exp, 1, 1) != game_seed(exp, 2, 1)


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_ratings_are_the_same_whatever_order_the_games_are_read_in(tmp_path):
    path = write(tmp_path, SMALL.format(players=5, blocks=2))
    run_experiment_sync(load_tournament(path), tmp_path / "run")
    data = load_run(tmp_path / "run")
    assert len(data.games) == 12
    seating_file = next((tmp_path / "run").rglob(SEATING))
    assert set(__import__("json").loads(seating_file.read_text())["agents"].values()) <= {"bot", "weak", "rnd"}
    first = rate_games(data)
    shuffled = RunData(**{name: frame.sample(frac=1.0, random_state=3) for name, frame in data.tables().items()})
    assert rate_games(shuffled).equals(first)
    reversed_games = RunData(**{**data.tables(), "seats": data.seats.iloc[::-1].reset_index(drop=True)})
    assert rate_games(reversed_games).equals(first)
    assert (first.groupby("scope")["games"].sum() > 0).all()
    assert not first["mu"].eq(25.0).any()  # every rating moved
    board = leaderboard(data)
    assert board.table["win_rate"].is_monotonic_decreasing  # the sort key
    assert (board.table["rank"] <= board.table.index + 1).all()
    assert (board.table["rank_worst"] >= board.table.index + 1).all()
    assert set(board.win_rates["by"]) >= {"all", "good", "evil", "Merlin", "Assassin"}
    h = board.head_to_head
    assert set(zip(h["agent"], h["opponent"])) == {(a, b) for a in ("bot", "weak", "rnd")
                                                   for b in ("bot", "weak", "rnd") if a != b}


def one_on_one(games: list[tuple[str, str, str]]) -> RunData:
    """A run of one-on-one games, (good entrant, evil entrant, winning side) each, in this order."""
    import pandas as pd

    from avalon_agents.analysis.load import COLUMNS

    tables = {name: pd.DataFrame(columns=columns) for name, columns in COLUMNS.items()}
    rows, seats = [], []
    for i, (good, evil, winner) in enumerate(games):
        game = f"main/series-1/game-{i:05d}"
        rows.append({"game": game, "variant": "main", "series": 1, "game_index": i, "winner": winner})
        seats += [{"game": game, "variant": "main", "series": 1, "game_index": i, "seat": seat, "agent": agent,
                   "side": side, "role": role}
                  for seat, agent, side, role in ((1, good, "good", "Merlin"), (2, evil, "evil", "Assassin"))]
    return RunData(**{**tables, "games": pd.DataFrame(rows), "seats": pd.DataFrame(seats)})


def test_the_leaderboard_follows_its_win_rates_and_shows_ties():
    """The defect: blunder_60 ranked above blunder_30 (by ordinal, 0.1 apart inside ±3.3) although its win rate
    was lower and it lost head to head, with no tie shown. Here B beats C early, A beats C late (openskill weighs
    late games more: A's ordinal is higher), and B beats A head to head with the higher win rate."""
    games = [("B", "C", "good"), ("C", "A", "good")] * 10 + [("B", "A", "good")] * 4 + [("A", "B", "good")] * 2
    games += [("C", "B", "good"), ("A", "C", "good")] * 6
    board = leaderboard(one_on_one(games))
    table = board.table.set_index("agent")
    assert table.loc["A", "ordinal"] > table.loc["B", "ordinal"]  # the old sort key would put A first
    assert table.loc["B", "win_rate"] > table.loc["A", "win_rate"]
    h2h = board.head_to_head.set_index(["agent", "opponent"])
    assert h2h.loc[("B", "A"), "value"] > 0.5
    assert list(board.table["agent"]).index("B") < list(board.table["agent"]).index("A")
    # their intervals overlap: a tie, shown as a shared range of ranks
    assert table.loc["A", "win_high"] > table.loc["B", "win_low"]
    assert table.loc["A", "rank"] <= table.loc["B", "rank_worst"] and table.loc["A", "rank"] == table.loc["B", "rank"]
    assert table.loc["B", "ranks"] == f"1-{table.loc['B', 'rank_worst']}" and "-" in table.loc["A", "ranks"]
    text = format_leaderboard(board)
    assert "sorted by win rate" in text and f"{table.loc['A', 'ranks']:>5}  A " in text
    assert "| " + table.loc["A", "ranks"] + " | A |" in markdown(board, "t")


def test_rank_ranges_share_ranks_where_intervals_overlap():
    import pandas as pd

    low = pd.Series([0.60, 0.48, 0.43, 0.35, 0.30])  # the shipped bots' win-rate intervals at 400 games
    high = pd.Series([0.70, 0.58, 0.52, 0.44, 0.39])
    assert rank_ranges(low, high) == ([1, 2, 2, 3, 4], [1, 3, 4, 5, 5])


@pytest.mark.parametrize("text, expected", [
    (SMALL.format(players=5, blocks=2) + "sides: {good: bot, evil: rnd}\n", "sides: not a tournament key"),
    (SMALL.format(players=5, blocks=2).replace("blunder: 0.5", "blunder: 1.5"),
     ":5: entrants.weak: options: blunder: a share from 0 to 1, got 1.5"),
    (SMALL.format(players=5, blocks=2).replace("blunder", "bluster"),
     "entrants.weak: options: agent kind 'rulebot' takes no option 'bluster'"),
    (SMALL.format(players=5, blocks=0), ":7: blocks: a whole number from 1 to 10000, got 0"),
    ("name: t\nentrants: {bot: {kind: rulebot}}\n", "entrants: at least two"),
])
def test_a_config_mistake_is_one_line_exit_2(tmp_path, text, expected):
    result = CliRunner().invoke(cli, ["tournament", str(write(tmp_path, text)), "--check"])
    assert result.exit_code == 2, result.output
    assert expected in result.output and "Traceback" not in result.output


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_the_command_plays_rates_and_writes_the_leaderboard(tmp_path):
    path = write(tmp_path, SMALL.format(players=5, blocks=1))
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["tournament", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "    #  entrant" in result.output and "sorted by win rate" in result.output
    folder = out / "tournament"
    for name in ("leaderboard.csv", "ratings.csv", "win_rates.csv", "head_to_head.csv", "ratings.png",
                 "leaderboard.md"):
        assert (folder / name).stat().st_size > 0, name
    assert "## Head to head" in (folder / "leaderboard.md").read_text()
    again = CliRunner().invoke(cli, ["tournament", str(path), "--out", str(out)])  # resumes: nothing to play
    assert again.exit_code == 0 and again.output.split("produced by")[1] == result.output.split("produced by")[1]


def test_the_shipped_tournament_validates():
    exp = load_tournament(SHIPPED)["main"]
    assert exp.rotation == ["rulebot", "blunder_30", "blunder_60", "random", "random_b"]
    assert exp.games >= 200


@pytest.mark.slow
def test_rule_bots_rank_above_weakened_bots_above_random_agents(tmp_path):
    start = time.perf_counter()
    run_experiment_sync(load_tournament(SHIPPED), tmp_path / "run")
    board = leaderboard(load_run(tmp_path / "run"))
    print(f"\n{board.games} games played and rated in {time.perf_counter() - start:.1f} s")
    order = list(board.table["agent"])
    assert order[0] == "rulebot"
    assert set(order[1:3]) == {"blunder_30", "blunder_60"}
    assert set(order[3:]) == {"random", "random_b"}
    assert board.table["win_rate"].is_monotonic_decreasing
    ranks = board.table.set_index("agent")["rank"]
    assert ranks["rulebot"] == 1 and ranks["blunder_30"] == ranks["blunder_60"] == 2  # a tie, shown


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_tournament_of_model_seats_prints_its_health_once(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("name: t\nplayers: 5\nmodel: scripted\nentrants:\n  llm: {kind: llm}\n  bot: {kind: rulebot}\n"
                    "blocks: 1\n")
    result = CliRunner().invoke(cli, ["tournament", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "health:" in line]
    assert len(lines) == 1 and lines[0].startswith("health: calls 0/") and "health: health" not in lines[0]
    assert f"Games' {lines[0]}" in (tmp_path / "run" / "tournament" / "leaderboard.md").read_text()
