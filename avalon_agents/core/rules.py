"""RuleSet: every rule ambiguity as a named field, plus the `official` and `paper` presets."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from avalon_agents.core.types import Role, Team
from avalon_agents.registry import Registry

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
EVIL_COUNT: dict[int, int] = {5: 2, 6: 2, 7: 3, 8: 3, 9: 3, 10: 4}
"""The official number of evil seats per player count; the rest are good."""
UNIQUE_ROLES = (Role.MERLIN, Role.PERCIVAL, Role.MORGANA, Role.ASSASSIN, Role.MORDRED, Role.OBERON)
"""Roles a game holds at most once (Loyal Servants and Minions may repeat)."""
# Official quest team sizes.
QUEST_SIZES: dict[int, tuple[int, ...]] = {
    5: (2, 3, 2, 3, 3),
    6: (2, 3, 4, 3, 4),
    7: (2, 3, 3, 4, 4),
    8: (3, 4, 4, 5, 5),
    9: (3, 4, 4, 5, 5),
    10: (3, 4, 4, 5, 5),
}


LADY_MIN_PLAYERS = 7
LADY_QUESTS = (2, 3, 4)
"""The Lady of the Lake is used after these quests, if the game goes on."""


def lady_first_holder(first_leader: int, players: int) -> int:
    """Who holds the Lady of the Lake first: the seat the lead passes from to the first leader."""
    return (first_leader - 2) % players + 1


def lady_refused(players: int) -> str:
    return f"lady_of_the_lake: the Lady of the Lake takes {LADY_MIN_PLAYERS} or more players, not {players}"


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
    """The rules preset the game was built from (`official`, `paper` or a plugin's)."""
    players: int = Field(6, ge=MIN_PLAYERS, le=MAX_PLAYERS)
    """How many players sit at the table (seats 1 to players)."""
    roles: tuple[Role, ...] = ROLE_TABLE[6]
    """The role set, any multiset of roles with the official good/evil split (`EVIL_COUNT`)."""
    assassin: Role | None = None
    """The evil role that carries the assassination; None: the Assassin. Without Merlin nobody assassinates."""
    quest_sizes: tuple[int, int, int, int, int] = QUEST_SIZES[6]
    """How many players go on each quest, quest 1 first."""
    fails_required: tuple[int, int, int, int, int] = (1, 1, 1, 1, 1)
    """How many fail cards fail each quest, quest 1 first."""
    points_to_win: int = 3
    """Quests a side must win to win the game."""
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
    """True: good seats may play a fail card too."""
    first_leader: Literal["random"] | int = "random"
    """The first leader's seat, or "random": drawn from the game's seed."""
    lady_of_the_lake: bool = False
    """The official optional card (7+ players): after quests 2, 3 and 4 its holder learns one player's loyalty."""

    @field_validator("roles", mode="before")
    @classmethod
    def _role_names(cls, roles: object) -> object:
        if isinstance(roles, str):
            roles = roles.split(",")
        return tuple(Role.parse(r) for r in roles) if isinstance(roles, (list, tuple)) else roles

    @field_validator("assassin", mode="before")
    @classmethod
    def _assassin_name(cls, role: object) -> object:
        return Role.parse(role) if isinstance(role, str) else role

    @model_validator(mode="after")
    def _consistent(self) -> RuleSet:
        if len(self.roles) != self.players:
            raise ValueError(f"roles: {len(self.roles)} roles listed for {self.players} players")
        check_role_set(self.roles, self.assassin)
        for i, size in enumerate(self.quest_sizes, 1):
            if not 1 <= size <= self.players:
                raise ValueError(f"quest_sizes: quest {i} has {size} players, not 1..{self.players}")
            if not 1 <= self.fails_required[i - 1] <= size:
                raise ValueError(f"fails_required: quest {i} needs 1..{size} fail cards")
        if isinstance(self.first_leader, int) and not 1 <= self.first_leader <= self.players:
            raise ValueError(f"first_leader: seat {self.first_leader} is not 1..{self.players}")
        if self.lady_of_the_lake and self.players < LADY_MIN_PLAYERS:
            raise ValueError(lady_refused(self.players))
        return self

    @property
    def assassin_role(self) -> Role | None:
        """The role that carries the assassination (`assassin`, else the Assassin); None without Merlin."""
        if Role.MERLIN not in self.roles:
            return None
        return self.assassin or Role.ASSASSIN

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


PRESETS: Registry[Callable[[int], RuleSet]] = Registry("rules preset", [("official", official), ("paper", paper)])
"""Rule presets by name: a function of the player count returning the RuleSet (`--rules`, a config's `rules:`)."""


def register_preset(name: str, preset: Callable[[int], RuleSet]) -> None:
    """Add a rules preset (a plugin's): `preset(players)` returns its RuleSet (set its `name` to `name`). Refused in
    one line under a built-in preset's name."""
    PRESETS.register(name, preset, builtin=False)


def make_rules(preset: str = "official", players: int | None = None,
               roles: Sequence[Role | str] | None = None, assassin: Role | str | None = None,
               lady_of_the_lake: bool = False) -> RuleSet:
    """Build a preset by name, for `players` (default: as many as `roles`, else 6), with its own role set
    `roles` (names in any case, underscores or spaces) and `assassin`, and the Lady of the Lake if asked (7+
    players). Raises ValueError naming the bad field."""
    rules = _make_rules(preset, players, roles, assassin)
    if not lady_of_the_lake:
        return rules
    if rules.players < LADY_MIN_PLAYERS:
        raise ValueError(lady_refused(rules.players))  # one line, not pydantic's
    return rules.model_copy(update={"lady_of_the_lake": True})


def _make_rules(preset: str, players: int | None, roles: Sequence[Role | str] | None,
                assassin: Role | str | None) -> RuleSet:
    if preset not in PRESETS:
        raise ValueError(f"rules: unknown preset {preset!r} (choose from {PRESETS.known()})")
    if roles is None:
        if assassin is not None:
            raise ValueError("assassin: give the role set too (roles)")
        return PRESETS[preset](6 if players is None else players)
    try:
        roles = tuple(Role.parse(r) for r in roles)
    except ValueError as exc:
        raise ValueError(f"roles: {exc}") from None
    try:
        assassin = None if assassin is None else Role.parse(assassin)
    except ValueError as exc:
        raise ValueError(f"assassin: {exc}") from None
    if players is not None and players != len(roles):
        raise ValueError(f"players: {players} players, but the role set has {len(roles)} roles")
    base = PRESETS[preset](len(roles))
    check_role_set(roles, assassin)  # its own message, not pydantic's
    return base.model_copy(update={"roles": roles, "assassin": assassin})


def check_role_set(roles: tuple[Role, ...], assassin: Role | None) -> None:
    """Raise ValueError, naming the problem in one line, unless the roles are a playable set for their count
    and `assassin` (None: the Assassin) can carry the assassination."""
    counts = Counter(roles)
    for unique in UNIQUE_ROLES:
        if counts[unique] > 1:
            raise ValueError(f"roles: {unique.value} appears {counts[unique]} times (at most once)")
    evil = sum(r.side is Team.EVIL for r in roles)
    players = len(roles)
    if players in EVIL_COUNT and evil != EVIL_COUNT[players]:
        raise ValueError(f"roles: {players - evil} good and {evil} evil roles; {players} players take "
                         f"{players - EVIL_COUNT[players]} good and {EVIL_COUNT[players]} evil")
    merlin = Role.MERLIN in counts
    if assassin is not None:
        if not merlin:
            raise ValueError("assassin: no Merlin among the roles, so nobody assassinates (leave assassin out)")
        if assassin not in counts:
            raise ValueError(f"assassin: {assassin.value} is not among the roles")
        if assassin.side is not Team.EVIL:
            raise ValueError(f"assassin: {assassin.value} is a good role; an evil role carries the assassination")
        if counts[assassin] > 1:
            raise ValueError(f"assassin: {counts[assassin]} seats are {assassin.value}; name a role one seat holds")
        if assassin is not Role.ASSASSIN and Role.ASSASSIN in counts:
            raise ValueError(f"assassin: the Assassin among the roles carries the assassination, not "
                             f"{assassin.value}")
    elif merlin and Role.ASSASSIN not in counts:
        able = [r.value for r in counts if r.side is Team.EVIL and counts[r] == 1]
        if not able:
            raise ValueError("roles: Merlin needs an evil role held by one seat to carry the assassination "
                             "(add an Assassin, or another evil role)")
        raise ValueError(f"assassin: no Assassin among the roles; name the evil role that carries the "
                         f"assassination ({' or '.join(able)})")


def _check_players(players: int) -> None:
    if not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise ValueError(f"players: Avalon takes {MIN_PLAYERS} to {MAX_PLAYERS} players, got {players}")
