"""What a seat learned in earlier games (the paper's 4.8), by role: the in-memory book; the chromadb
ExperienceStore (stores.experience) keeps the same on disk."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from avalon_agents.core.events import GameResult
from avalon_agents.core.types import Role


@dataclass
class Experience:
    """What a seat carries from earlier games into this one (experience learning, the paper's 4.8)."""

    strategy: str | None = None  # the improved strategy for the seat's role
    suggestions: str | None = None  # the last game's three suggestions
    other_roles: str | None = None  # notes on how the other roles play
    reflection: str | None = None  # the last game as the seat saw it (its summary)


class ExperienceBook:
    """Experience by role, carried from game to game (in memory; the chromadb store keeps it on disk).
    A seat takes its role's entry when it learns its role and puts back what it learned at game end."""

    def __init__(self) -> None:
        self._by_role: dict[Role, tuple[tuple[int, int], Experience]] = {}
        self.game = 0  # the game being played (the chromadb store records it)
        self.run = 1  # in memory, one run

    def get(self, role: Role) -> Experience:
        return replace(self._by_role.get(role, ((0, 0), Experience()))[1])

    def put(self, role: Role, experience: Experience, result: GameResult | None = None, seat: int = 0) -> None:
        """Keep what a seat of `role` learned; of two seats of one role in one game the higher seat's is the
        latest, whichever finished writing first (so a replay learns the same)."""
        order = (self.game, seat)
        if role not in self._by_role or order >= self._by_role[role][0]:
            self._by_role[role] = (order, replace(experience))


NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10}
COUNTS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
_WORD = "|".join(NUMBER_WORDS)
_NOUNS = ("other", "player", "quest", "round", "fail", "failure", "success", "vote", "time", "member", "seat", "card",
          "turn", "game", "team", "approval", "rejection")
# what follows a count rather than a seat ("Player 3 and 2 others", "seats 1, 2 quests later", "and 1 other"); a
# singular noun only after 1, since "Players 5 and 6 fail quests" names two seats
_PLURALS = "|".join(n + ("es" if n.endswith("s") else "s") for n in _NOUNS)
_COUNTED = rf"(?!\s*%|\s+(?:more|of|people|percent|{_PLURALS})\b|(?<=\b1)\s+(?:{'|'.join(_NOUNS)})\b)"
_MORE = (r"(?P<more>(?:\s*(?:,\s*(?:and\s+|or\s+|&\s*)?|\s(?:and|or|to)\s+|&\s*|/\s*|\+\s*|[-–]\s*)"
         rf"(?:\#\s*)?[Pp]?\d{{1,2}}\b{_COUNTED})*)")
SEAT = re.compile(
    r"(?:(?P<lead>\b(?i:the\s+players?\s+(?:in|at|on|from)\s+))?"  # "the player in seat 3": the role itself
    r"\b(?P<noun>(?i:players?|seats?))"  # Player 3, PLAYER 3, Player3, player #4, player no. 4, Seats 1 and 2
    rf"(?:\s*\#\s*|\s+(?i:number|no\.|num\.)\s*|[\s_-]*)(?P<first>\d{{1,2}}\b|(?i:{_WORD})\b){_COUNTED}"
    r"|\b[Pp]\#?(?P<short>\d{1,2})\b)"  # P3, P3/P4
    + _MORE)
_ITEM = re.compile(r"(?P<sep>[^\d#Pp]*)(?:\#\s*)?[Pp]?(?P<n>\d{1,2})")
_ROLE_NAMES = "|".join(sorted((re.escape(r.value) for r in Role), key=len, reverse=True))
# "Merlin (Merlin)": what "Player 3 (Merlin)" or "Merlin (Player 3)" becomes once the seat is named by role
_ECHO = re.compile(rf"\b((?:the |an? )?)({_ROLE_NAMES})\s*\((?:the |an? )?\2\)", re.IGNORECASE)
UNIQUE = {Role.MERLIN, Role.PERCIVAL, Role.MORGANA, Role.ASSASSIN, Role.MORDRED, Role.OBERON}


def role_name(role: Role | None) -> str:
    """How a sentence names a seat by its role: "Merlin", "the Assassin", "a Loyal Servant"; "a player" for a seat
    the game did not have."""
    if role is None:
        return "a player"
    if role is Role.ASSASSIN:
        return "the Assassin"
    return role.value if role in UNIQUE else f"a {role.value}"


def _plural(name: str, count: int) -> str:
    """`count` of one non-unique name: "two Loyal Servants", "three players", "two Minions of Mordred"."""
    bare = name.split(" ", 1)[1]  # without its article
    head, _, rest = bare.partition(" of ")
    return f"{COUNTS.get(count, str(count))} {head}s" + (f" of {rest}" if rest else "")


def _seats(match: re.Match[str]) -> list[int]:
    """The seats a reference names, in its order: the first, then each listed one (a range "3-5" or "3 to 5"
    names every seat in it)."""
    first = match.group("first") or match.group("short")
    seats = [int(first) if first.isdigit() else NUMBER_WORDS[first.lower()]]
    for item in _ITEM.finditer(match.group("more") or ""):
        n = int(item.group("n"))
        if item.group("sep").strip() in ("-", "–", "to") and seats[-1] < n <= seats[-1] + 9:
            seats.extend(range(seats[-1] + 1, n + 1))
        else:
            seats.append(n)
    return list(dict.fromkeys(seats))


def _join(names: list[str], conjunction: str) -> str:
    merged: dict[str, int] = {}
    for name in names:
        merged[name] = merged.get(name, 0) + 1
    parts = [name if n == 1 else _plural(name, n) for name, n in merged.items()]
    if conjunction in ("/", ","):  # "P3/P4", "Players 3, 4": the list as it was written
        return (conjunction if conjunction == "/" else ", ").join(parts)
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} {conjunction} {parts[-1]}"


def name_roles(text: str, roles: dict[int, Role]) -> str:
    """`text` with every seat reference of the game it came from replaced by that seat's role: what is learned
    from a game must not name seats, which hold other roles in the next one.

    A reference is "Player 3" in any case or spacing ("PLAYER 3", "Player3", "player #4", "player no. 4",
    "Player Three"), "P3", "seat 4", or a list of them ("Players 3 and 4", "Players 2, 3 and 5", "seats 1 and 2",
    "P3/P4", "Players 3-5"); it becomes the roles ("Morgana and the Assassin", "two Loyal Servants"), a seat
    the game did not have "a player", and "Player 3 (Merlin)" plain "Merlin". Numbers that count or name
    other things ("3 quests", "Quest 3", "round 4", "(3)", "Player 3 and 2 others") are left as they are, and so
    is a lowercase number word after a lowercase noun ("every player one vote")."""

    def replace_match(match: re.Match[str]) -> str:
        first = match.group("first")
        if first and not first.isdigit() and first[0].islower() and match.group("noun")[0].islower():
            return match.group(0)  # "each player one chance": a count, not a seat
        seps = [item.group("sep").strip() for item in _ITEM.finditer(match.group("more") or "")]
        conjunction = ("/" if seps and all(s == "/" for s in seps) else "," if seps and all(s == "," for s in seps)
                       else "or" if seps and seps[-1].endswith("or") else "and")
        named = _join([role_name(roles.get(seat)) for seat in _seats(match)], conjunction)
        before = text[: match.start()].rstrip()
        at_start = not before or before.endswith((".", "!", "?", ":", "\n"))
        return named[0].upper() + named[1:] if at_start else named

    return _ECHO.sub(r"\1\2", SEAT.sub(replace_match, text))


def experience_without_seats(experience: Experience, roles: dict[int, Role]) -> Experience:
    """Every text of `experience` with seats named by role (see name_roles)."""
    return replace(experience, **{f: name_roles(v, roles) for f, v in vars(experience).items() if isinstance(v, str)})
