"""`avalon play --human SEAT`: a whole game played from piped lines, shown exactly what the seat may see.

The answers come from a game of rule bots with the same seed: the human seat types what the rule bot in its
place did (in words the rule parse reads), so the game played through the terminal must be that game, event for
event.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from avalon_agents.analysis.load import load_run
from avalon_agents.core import Role, Team, make_rules
from avalon_agents.engine import AvalonEngine
from avalon_agents.host.play import play_one
from avalon_agents.narrate import announce, names
from avalon_agents.records.run_dir import EVENTS, META, RESULT
from tests.helpers import avalon

SEAT = 3
REQUEST_OPENINGS = ("Your turn to speak", "You lead quest", "Vote on the team", "You are on the team for quest",
                    "Assassin, name", "Your answer could not be used:", "Your answer (")


def answers(events, seat: int) -> list[tuple[str, str]]:
    """(request kind, typed line) for each of the seat's actions, in the order it was asked."""
    lines = []
    for e in events:
        if e.type == "speech" and e.seat == seat:
            lines.append(("speak", e.text))
        elif e.type == "team_proposed" and e.leader == seat:
            lines.append(("propose", "I propose " + " and ".join(f"Player {s}" for s in e.team) + "."))
        elif e.type == "votes_revealed" and seat in e.approvals + e.rejections:
            lines.append(("vote", "approve" if seat in e.approvals else "reject"))
        elif e.type == "vote_cast" and e.seat == seat:
            lines.append(("vote", "approve" if e.approve else "reject"))
        elif e.type == "quest_card" and e.seat == seat:
            lines.append(("quest", "success" if e.success else "fail"))
        elif e.type == "assassination" and e.assassin == seat:
            lines.append(("assassinate", f"Player {e.target} is Merlin."))
        elif e.type == "assassination_declined" and e.seat == seat:
            lines.append(("assassinate", "pass"))
    return lines


def with_mistakes(planned: list[tuple[str, str]]) -> list[str]:
    """The answers, with an unusable one before the first of each decision kind."""
    wrong = {"propose": "Player 1", "vote": "maybe later", "quest": "dunno", "assassinate": "hmm"}
    lines = []
    for kind, line in planned:
        if kind in wrong:
            lines.append(wrong.pop(kind))
        lines.append(line)
    return lines


def seed_where(rules, role: Role) -> int:
    """The first seed whose game gives SEAT this role and, with rule bots, makes it lead a proposal."""
    for seed in range(200):
        engine = AvalonEngine(rules, seed)
        engine.reset()
        if engine.roles[SEAT] is role:
            host = asyncio.run(play_one(rules, ["rulebot"] * rules.players, seed))
            if any(kind == "propose" for kind, _ in answers(host.engine.events, SEAT)):
                return seed
    raise AssertionError(f"no seed gives seat {SEAT} the role {role}")


def play_as_human(rules, seed: int, tmp_path, lines: list[str]):
    out = tmp_path / "run"
    done = avalon("play", "--human", str(SEAT), "--seats", "rulebot", "--seed", str(seed), "--rules",
                  rules.name, "--players", str(rules.players), "--out", str(out),
                  input="".join(line + "\n" for line in lines))
    return done, out / "game-00001"


@pytest.mark.parametrize("preset,players,role", [("official", 6, Role.LOYAL_SERVANT), ("paper", 7, Role.MERLIN)])
def test_a_piped_game_is_the_seats_game_and_shows_only_what_it_may_see(preset, players, role, tmp_path):
    rules = make_rules(preset, players)
    seed = seed_where(rules, role)
    bots = asyncio.run(play_one(rules, ["rulebot"] * players, seed)).engine.events
    planned = answers(bots, SEAT)
    done, game = play_as_human(rules, seed, tmp_path, with_mistakes(planned))
    assert done.returncode == 0, done.stderr
    # the game finished, and the seat's actions were the piped ones: the very game the rule bot played
    assert (game / RESULT).is_file()
    recorded = [json.loads(line) for line in (game / EVENTS).read_text().splitlines()]
    assert recorded == [json.loads(e.to_json()) for e in bots]
    assert json.loads((game / META).read_text())["seats"][str(SEAT)] == "human"
    seats = load_run(game.parent).seats
    assert seats.loc[seats.seat == SEAT, "kind"].tolist() == ["human"]

    shown = done.stdout
    # each unusable answer was asked again with its reason, then the legal one was used
    for reason in ("team size: quest", "no clear answer"):
        assert f"Your answer could not be used: {reason}" in shown
    assert shown.count("Your answer could not be used:") == len(with_mistakes(planned)) - len(planned)
    # everything the seat may see, in order
    visible = [text for e in bots if e.visible(SEAT) and (text := announce(e, rules)) is not None]
    at = 0
    for text in visible:
        at = shown.index(text, at) + len(text)
    # nothing it may not see: no other seat's night information, card or vote
    hidden = {text for e in bots if not e.visible(SEAT) and (text := announce(e, rules)) is not None}
    hidden -= set(visible)
    assert hidden and not [text for text in hidden if text in shown]
    # and nothing else: its role card and rules, the host's narration, the requests
    header, _, rest = shown.partition("\n\n" + visible[0])
    assert f"You are Player {SEAT}, and your role is {role.value}." in header
    for line in rest.splitlines():
        assert not line or line in visible or line.startswith(REQUEST_OPENINGS), line
    engine = AvalonEngine(rules, seed)
    engine.reset()
    evil = sorted(s for s, r in engine.roles.items() if r.side is Team.EVIL)
    before_the_end = shown[:shown.index(visible[-1])]
    if role is Role.MERLIN:
        assert announce(next(e for e in bots if e.type == "night_info" and e.seat == SEAT), rules) in shown
        assert f"Night: you see that {names(evil)} are evil." in shown
    else:
        assert "Night: your role card shows you no one." in shown
        assert "Night: you see" not in shown  # neither Merlin's nor the evil seats' night
        for s in evil:  # no role is named beside an evil seat before the game-end reveal
            assert not [r for r in Role if f"Player {s} {r.value}" in before_the_end]


def test_the_end_of_input_mid_game_is_one_line_and_exit_2(tmp_path):
    rules = make_rules("official", 6)
    done, game = play_as_human(rules, 3, tmp_path, ["I am loyal.", "approve"])
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: human: the input ended before the game did (Player 3 "), \
        done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert not (game / RESULT).exists()  # an unfinished game


@pytest.mark.parametrize("args,start", [
    (["--human", "3", "--games", "2"], "error: human: a person plays one game at a time"),
    (["--human", "7"], "error: human: seat 7 is not a seat of a 6-player game"),
    (["--human", "0"], "error: human: seat 0"),
    (["--seats", "rulebot,human,rulebot,rulebot,rulebot,rulebot"], "error: seats: a 'human' seat is taken with"),
])
def test_human_mistakes_are_one_line_naming_the_field(args, start):
    done = avalon("play", *args, input="")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith(start), done.stderr
