"""Hand-written game records for the analysis tests (no engine: every event is written out here).

Seats in both games: 1 Merlin, 2 Percival, 3 and 4 Loyal Servants, 5 Morgana, 6 Assassin.

Game A (series 1, game 1): four quests, an assassination hit.
  Q1  leader 1 proposes [1, 3] (self), approve 1-4, reject 5 6 -> approved; cards S S -> success
  Q2a leader 2 proposes [2, 3, 5] (self, dirty), approve 2 5 6, reject 1 3 4 -> rejected (3-3)
  Q2b leader 3 proposes [1, 2, 3] (self), approve all -> approved; S S S -> success
  Q3  leader 4 proposes [1, 4, 5, 6] (self, dirty), approve 2 4 5 6, reject 1 3 -> approved; 5 and 6 fail
  Q4  leader 5 proposes [1, 2, 3], approve 1-4, reject 5 6 -> approved; S S S -> success (3 successes)
  the Assassin (6) names 1: Merlin, evil wins.
Game B (series 1, game 2): five rejected proposals on quest 1, leaders 1..5, each [leader, next seat];
  approve: the leader and the next seat; evil wins on the fifth rejection. No quest goes out.
"""

from __future__ import annotations

import json
from pathlib import Path

from avalon_agents.records.run_dir import EVENTS, META, RESULT, SEATING, TRACE

ROLES = {1: "Merlin", 2: "Percival", 3: "Loyal Servant", 4: "Loyal Servant", 5: "Morgana", 6: "Assassin"}
EVIL = [5, 6]


class Game:
    def __init__(self) -> None:
        self.events: list[dict] = []
        self.quest, self.attempt = 1, 1

    def add(self, type_: str, visible_to="all", **fields) -> None:
        self.events.append({"seq": len(self.events), "quest": self.quest, "attempt": self.attempt,
                            "visible_to": visible_to, "type": type_, **fields})

    def proposal(self, leader: int, team: list[int], approve: list[int]) -> bool:
        self.add("leader_chosen", leader=leader, team_size=len(team), fails_required=1, final=False)
        self.add("team_proposed", leader=leader, team=team, assigned=False)
        self.add("speech", seat=leader, text=f"I propose {team}.")
        reject = [s for s in ROLES if s not in approve]
        ok = len(approve) > len(reject)
        self.add("votes_revealed", team=team, approvals=approve, rejections=reject, approve_count=len(approve),
                 reject_count=len(reject), approved=ok)
        self.attempt += 1
        return ok

    def quest_out(self, team: list[int], fails: list[int]) -> None:
        self.attempt -= 1
        for seat in team:
            self.add("quest_card", visible_to=[seat], seat=seat, success=seat not in fails)
        self.add("quest_completed", team=team, fails=len(fails), success=not fails, good_points=0, evil_points=0)
        self.quest, self.attempt = self.quest + 1, 1


def game_a() -> tuple[Game, dict]:
    g = Game()
    g.proposal(1, [1, 3], [1, 2, 3, 4])
    g.quest_out([1, 3], [])
    g.proposal(2, [2, 3, 5], [2, 5, 6])
    g.proposal(3, [1, 2, 3], [1, 2, 3, 4, 5, 6])
    g.quest_out([1, 2, 3], [])
    g.proposal(4, [1, 4, 5, 6], [2, 4, 5, 6])
    g.quest_out([1, 4, 5, 6], [5, 6])
    g.proposal(5, [1, 2, 3], [1, 2, 3, 4])
    g.quest_out([1, 2, 3], [])
    g.quest = 4
    g.add("assassination", assassin=6, target=1, hit=True)
    g.add("game_ended", winner="evil", reason="merlin_assassinated", roles=ROLES)
    quests = [{"quest": 1, "team": [1, 3], "fails": 0, "success": True},
              {"quest": 2, "team": [1, 2, 3], "fails": 0, "success": True},
              {"quest": 3, "team": [1, 4, 5, 6], "fails": 2, "success": False},
              {"quest": 4, "team": [1, 2, 3], "fails": 0, "success": True}]
    return g, {"winner": "evil", "reason": "merlin_assassinated", "roles": ROLES, "quests": quests,
               "proposals": 5, "assassination_target": 1}


def game_b() -> tuple[Game, dict]:
    g = Game()
    for leader in range(1, 6):
        g.proposal(leader, [leader, leader + 1], [leader, leader + 1])
    g.attempt = 5
    g.add("game_ended", winner="evil", reason="five_rejections", roles=ROLES)
    return g, {"winner": "evil", "reason": "five_rejections", "roles": ROLES, "quests": [], "proposals": 5,
               "assassination_target": None}


TRACE_A = [
    {"type": "extraction", "seat": 1, "kind": "vote", "quest": 1, "attempt": 1, "method": "rule", "valid": True},
    {"type": "extraction", "seat": 1, "kind": "vote", "quest": 2, "attempt": 1, "method": "llm", "valid": True},
    {"type": "extraction", "seat": 1, "kind": "vote", "quest": 2, "attempt": 2, "method": "fallback",
     "valid": False},
    {"type": "llm_call", "seat": 1, "stage": "module", "name": "summary", "prompt_id": "modules/summary",
     "prompt_hash": "0", "input_tokens": 100, "output_tokens": 10},
    {"type": "llm_call", "seat": 2, "stage": "module", "name": "summary", "prompt_id": "modules/summary",
     "prompt_hash": "0", "input_tokens": 200, "output_tokens": 30},
    {"type": "llm_call", "seat": 2, "stage": "module", "name": "action+response", "request": "vote",
     "prompt_id": "modules/action_response", "prompt_hash": "0", "input_tokens": 50, "output_tokens": 5},
]


def write_game(path: Path, game: Game, result: dict, agents: dict[int, str], trace=(), variant="full",
               series=1, index=1) -> Path:
    path.mkdir(parents=True)
    (path / EVENTS).write_text("".join(json.dumps(e) + "\n" for e in game.events))
    (path / TRACE).write_text("".join(json.dumps(r) + "\n" for r in trace))
    kinds = {s: "rulebot" if a == "bot" else "cognitive" for s, a in agents.items()}
    (path / META).write_text(json.dumps({"seed": index, "rules": {"name": "official"}, "seats": kinds}))
    (path / SEATING).write_text(json.dumps({"agents": agents, "series": series, "game": index,
                                            "variant": variant, "seed": index}))
    (path / RESULT).write_text(json.dumps(result))
    return path


def write_run(root: Path) -> Path:
    """An experiment folder with games A and B: agent "ours" on the good side, "theirs" on the evil side."""
    agents = {s: "ours" if s not in EVIL else "theirs" for s in ROLES}
    write_game(root / "full" / "series-1" / "game-00001", *game_a(), agents, TRACE_A, index=1)
    write_game(root / "full" / "series-1" / "game-00002", *game_b(), agents, index=2)
    unfinished = write_game(root / "full" / "series-1" / "game-00003", *game_b(), agents, index=3)
    (unfinished / RESULT).unlink()  # not done: never loaded
    return root
