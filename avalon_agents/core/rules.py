"""RuleSet: every rule ambiguity as a named field, plus the `official` and `paper` presets."""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from avalon_agents.core.types import Role, Team

MIN_PLAYERS = 5
MAX_PLAYERS = 10

R = Role
# Role lists per player count. 5 and 6 follow the paper's roles; from 7 players on, the official
# good/evil split (4/3, 5/3, 6/3, 6/4) is filled with Loyal Servants and Minions of Mordred.
ROLE_TABLE: dict[int, tuple[Role, ...]] = {
    5: (R.MERLIN, R.PERCIVAL, R.LOYAL_SERVANT, R.MORGANA, R.ASSASSIN),
    6: (R.MERLIN, R.PERCIVAL, R.LOYAL_SERVANT, R.LOYAL_SERVANT, R.MORGANA, R.ASSASSIN),
    7: (R.MERLIN, R.PERCIVAL, R.LOYAL_SERVANT, R.LOYAL_SERVANT, R.MORGANA, R.ASSASSIN, R.MINION),
    8: (R.MERLIN, R.PERCIVAL, *[R.LOYAL_SERVANT] * 3, R.MORGANA, R.ASSASSIN, R.MINION),
    9: (R.MERLIN, R.PERCIVAL, *[R.LOYAL_SERVANT] * 4, R.MORGANA, R.ASSASSIN, R.MINION),
    10: (R.MERLIN, R.PERCIVAL, *[R.LOYAL_SERVANT] * 4, R.MORGANA, R.ASSASSIN, R.MINION, R.MINION),
}
# Official quest team sizes.
QUEST_SIZES: dict[int, tuple[int, ...]] = {
    5: (2, 3, 2, 3, 3),
    6: (2, 3, 4, 3, 4),
    7: (2, 3, 3, 4, 4),
    8: (3, 4, 4, 5, 5),
    9: (3, 4, 4, 5, 5),
    10: (3, 4, 4, 5, 5),
}


def fails_table(players: int) -> tuple[int, ...]:
    """Fail cards needed to fail each quest: two on the fourth quest with 7 or more players."""
    return (1, 1, 1, 2, 1) if players >= 7 else (1, 1, 1, 1, 1)


ProposalOrder = Literal["propose_then_discuss", "discuss_then_propose"]
LastRejection = Literal["evil_wins", "leader_assigns"]
AssassinationTiming = Literal["end_of_game", "after_any_quest"]


class RuleSet(BaseModel):
    """The rules one game is played by. Frozen and validated: build a new one to change a rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "official"
    players: int = Field(6, ge=MIN_PLAYERS, le=MAX_PLAYERS)
    roles: tuple[Role, ...] = ROLE_TABLE[6]
    quest_sizes: tuple[int, int, int, int, int] = QUEST_SIZES[6]
    fails_required: tuple[int, int, int, int, int] = (1, 1, 1, 1, 1)
    points_to_win: int = 3
    approve_on_tie: bool = False
    """False: a team needs a strict majority (3-3 of 6 rejects)."""
    votes_public: bool = True
    """True: everyone sees how each seat voted; False: only the counts."""
    proposal_order: ProposalOrder = "propose_then_discuss"
    """Official: the leader names a team, then everyone discusses it. Paper: discuss, then name."""
    max_proposals: int = Field(5, ge=1)
    """Proposals per quest; what happens when the last one is rejected is `on_last_rejection`."""
    on_last_rejection: LastRejection = "evil_wins"
    """Official: the 5th rejection wins for evil. Paper: the next leader assigns a team, no vote."""
    assassination: AssassinationTiming = "end_of_game"
    """Official: once, after good's third success. Paper: once, after any quest."""
    assassin_may_pass: bool = False
    """Paper: the Assassin may hold off after a quest and try later."""
    good_may_fail: bool = False
    first_leader: Literal["random"] | int = "random"

    @model_validator(mode="after")
    def _consistent(self) -> RuleSet:
        if len(self.roles) != self.players:
            raise ValueError(f"roles: {len(self.roles)} roles listed for {self.players} players")
        counts = Counter(self.roles)
        for unique in (Role.MERLIN, Role.PERCIVAL, Role.MORGANA, Role.ASSASSIN, Role.MORDRED, Role.OBERON):
            if counts[unique] > 1:
                raise ValueError(f"roles: {unique.value} appears {counts[unique]} times")
        if counts[Role.ASSASSIN] != 1:
            raise ValueError("roles: exactly one Assassin is needed")
        if not any(r.side is Team.GOOD for r in self.roles):
            raise ValueError("roles: no good role")
        for i, size in enumerate(self.quest_sizes, 1):
            if not 1 <= size <= self.players:
                raise ValueError(f"quest_sizes: quest {i} has {size} players, not 1..{self.players}")
            if not 1 <= self.fails_required[i - 1] <= size:
                raise ValueError(f"fails_required: quest {i} needs 1..{size} fail cards")
        if isinstance(self.first_leader, int) and not 1 <= self.first_leader <= self.players:
            raise ValueError(f"first_leader: seat {self.first_leader} is not 1..{self.players}")
        return self

    @property
    def seats(self) -> range:
        return range(1, self.players + 1)

    @property
    def evil_count(self) -> int:
        return sum(r.side is Team.EVIL for r in self.roles)


def official(players: int = 6) -> RuleSet:
    """The published rules: propose, discuss, vote; 5th rejection and Merlin's assassination win for evil."""
    _check_players(players)
    return RuleSet(
        name="official",
        players=players,
        roles=ROLE_TABLE[players],
        quest_sizes=QUEST_SIZES[players],
        fails_required=fails_table(players),
    )


PAPER_CHANGES = dict(
    name="paper",
    proposal_order="discuss_then_propose",
    on_last_rejection="leader_assigns",
    assassination="after_any_quest",
    assassin_may_pass=True,
)


def paper(players: int = 6) -> RuleSet:
    """The variant of the paper (Section 3, Appendix A.1-A.2)."""
    return RuleSet(**{**official(players).model_dump(), **PAPER_CHANGES})


PRESETS = {"official": official, "paper": paper}


def make_rules(preset: str = "official", players: int = 6) -> RuleSet:
    """Build a preset by name. Raises ValueError naming the bad field."""
    if preset not in PRESETS:
        raise ValueError(f"rules: unknown preset {preset!r} (choose from {', '.join(PRESETS)})")
    return PRESETS[preset](players)


def _check_players(players: int) -> None:
    if not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise ValueError(f"players: Avalon takes {MIN_PLAYERS} to {MAX_PLAYERS} players, got {players}")
