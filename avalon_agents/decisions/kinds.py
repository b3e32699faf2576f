"""Each request kind declared once: everything the framework knows about answering it.

A `DecisionKind` holds, for one `RequestKind`:

- `key`: the single JSON key of a constrained answer (propose: `team`, vote: `vote`, quest: `card`,
  assassinate: `merlin`, lady: `examine`; a speech has none),
- `answer_model(request)`: the pydantic model of a constrained answer, `{"reason": ..., key: ...}` with only
  legal values (seats as an enum, exactly the team size, success only for a good seat), whose JSON schema the
  model is asked to follow,
- `value_of(json_value)`: the key's value -> an action (None if it names nothing usable),
- `parse(text, request)`: the whole-word rule parse of free text (decisions.parse),
- `extract_prompt` and `extract_model`: the LLM extractor's prompt file and the shape of its answer,
- `fallback(request, near, rng)`: the paper's default for an answer nothing could read (Appendix A.4),
- `instruction(request, rules)`: the host's wording of the request (prompts/host/request_*.txt),
- `scripted(prompt, rng, me, others)`: the scripted model's free-text answer when it recognises the request,
- `answers(request)`: the legal answers in a few words (what a human seat is shown beside the instruction),
- what every other consumer needs (`CONSUMERS`, refused at registration without them): `random` (the random
  seat), `bot` (the rule bot), `legal` (the legal answers by shape: the seat protocol and the web table), `asking`
  (the live view's waiting line), `say` and `plain` (an action in words and as data), `spelled` (a person's
  misspellings), `events` (the events a decision becomes: the replay timeline and the calls page place a
  decision's records just before its own event).

`KINDS` is their registry, by the request kind's value. Adding a decision kind means one spec here plus its prompt
files (and its `RequestKind`, action and the engine asking it: docs/architecture.md, the recipe). A plugin cannot
add one: the engine asks only the request kinds of `RequestKind`, each built in, so a plugin's kind is refused when
registered, naming why. This module sits below the LLM layer (it
imports only core, the prompt files and the parser), so the scripted model and the analysis can use it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from avalon_agents.core.actions import (
    Action,
    ActionRequest,
    Assassinate,
    Examine,
    ProposeTeam,
    QuestCard,
    RequestKind,
    Speak,
    Vote,
)
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import seat_name
from avalon_agents.decisions.jsonish import load_json
from avalon_agents.decisions.parse import parse_quest, parse_target, parse_team, parse_vote, seats_named
from avalon_agents.narrate import choices, holder, names, phrase, words
from avalon_agents.orders import current
from avalon_agents.prompting import template
from avalon_agents.registry import Registry

REASON_CHARS = 200
PASS_WORDS = ("pass", "i pass", "hold off", "wait")
MAX_SPEECH = 1000
"""The most characters a speech may have when a program or a person answers it (the seat protocol, the web table):
the speak request's legal answers say it (`max_chars`); a longer one is refused with the reason."""
CANNED_SPEECHES = ("I have nothing to add.", "Let's see how this goes.", "I am on the side of good.")
"""The random seat's speeches."""
APPROVE_SHARE = 0.7
"""How often the scripted model approves a team (LLM players approve most proposals)."""


@dataclass(frozen=True)
class Becomes:
    """An event a decision becomes, and how a record of the decision (an extraction: its seat, quest and attempt)
    finds it among a game's events."""

    event: str
    """The event's type ("team_proposed", core.events)."""
    seat: str | None = "seat"
    """The event's field holding the deciding seat (None: the event names no one seat, e.g. the votes revealed)."""
    quest: bool = True
    """The event is of the decision's quest."""
    attempt: bool = True
    """The event is of the decision's proposal (attempt) too."""
    own: bool = True
    """One decision's event (taken by the first record that finds it); False: an event several decisions share
    (the votes revealed, a quest's result), where a decision whose own event the seat may not see is placed."""

    def match(self, seat: int, quest: int, attempt: int) -> dict[str, Any]:
        """The fields an event must have to be this decision's."""
        return {"type": self.event, **({self.seat: seat} if self.seat else {}), **({"quest": quest} if self.quest
                else {}), **({"attempt": attempt} if self.attempt else {})}


class Answer(BaseModel):
    """The common part of every constrained decision answer: a short public reason."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(max_length=REASON_CHARS)


@dataclass(frozen=True)
class DecisionKind:
    kind: RequestKind
    key: str | None
    value_type: Callable[[ActionRequest], Any]
    """The type of the key's value for this request (a Literal of the legal values, or a constrained list)."""
    value_of: Callable[[Any], Action | None]
    parse: Callable[[str, ActionRequest], Action | None]
    extract_prompt: str | None
    extract_type: Any
    """The type of the LLM extractor's reported value (legal values plus "unclear" / 0 / an empty list)."""
    fallback: Callable[[ActionRequest, Action | None, random.Random], Action]
    instruction: Callable[[ActionRequest, RuleSet], str]
    scripted: Callable[[str, random.Random, int, list[int]], str | None]
    answers: Callable[[ActionRequest], str]
    """The legal answers in a few words, e.g. 'approve or reject' (shown to a human seat)."""
    asked_in_public: bool = True
    """Every seat may know that this request is being asked, and of whom (a leader's proposal, the votes, the
    team's cards, a speech). False for the assassination: asking it names the seat that carries it (under the
    paper's rules, mid-game), so a waiting line or a spectator view shown to people leaves it out."""
    random: Callable[[ActionRequest, random.Random], Action] | None = None
    """The random seat's answer: a legal action drawn uniformly (agents/random_agent.py)."""
    bot: Callable[[Any, ActionRequest], Action] | None = None
    """The rule bot's answer, given the bot (agents/rulebot.py: `ranked(private)` lists the seats from least to
    most suspected, `rng` is its random stream, and it has a method for each built-in kind)."""
    legal: Callable[[ActionRequest], dict[str, Any]] | None = None
    """The legal answers as data, in the seat protocol's `request` message and for the web table's page, by shape:
    `{"players": [...], "team_size": N}` (pick N players), `{"players": [...]}` (one player; `"may_pass": true`
    adds "pass"), `{"options": [...]}` (one of these words, any case), `{"max_chars": N}` (free text, at most N
    characters)."""
    asking: str = ""
    """What the seat is asked, in the words of a waiting line: "waiting for Player 3 to <asking>"."""
    say: Callable[[Action], str] | None = None
    """A typed action in plain words (a bot's reply text, "I approve.")."""
    plain: Callable[[Action], Any] | None = None
    """A typed action as JSON-friendly data (a seats list, true/false, a seat number or null, a speech)."""
    spelled: tuple[str, ...] = ()
    """One-word answers a person may misspell (`aprove`), read as the nearest of these."""
    events: tuple[Becomes, ...] = ()
    """The events a decision of this kind becomes, in the order a reader looks for them: the seat's own first, then
    a public one its hidden choice shows in (the replay timeline places the decision's records before it)."""

    @property
    def name(self) -> str:
        return self.kind.value

    def answer_model(self, request: ActionRequest) -> type[BaseModel] | None:
        """The pydantic model of a constrained answer to `request` (None for a speech)."""
        if self.key is None:
            return None
        value_type = self.value_type(request)
        # repr: Literal[2, 3] == Literal[3, 2] (and hash alike), but their schemas list the values in order
        return _answer_model(self.kind.value, self.key, value_type, repr(value_type))

    def schema(self, request: ActionRequest) -> dict[str, Any] | None:
        """The JSON schema of a constrained answer to `request` (None for a speech, which is free text)."""
        model = self.answer_model(request)
        return _schema(model) if model is not None else None

    def read_json(self, text: str) -> Action | None:
        """The action a JSON answer names (legal or not: the request validates it), or None."""
        if self.key is None:
            return None
        value = load_json(text)
        if value is None or self.key not in value:
            return None
        return self.value_of(value[self.key])

    def extract_schema(self) -> dict[str, Any]:
        """The JSON schema of the LLM extractor's answer, `{key: value}`."""
        return _schema(_extract_model(self.kind.value, self.key, self.extract_type))


@lru_cache(maxsize=4096)
def _answer_model(kind: str, key: str, value_type: Any, order: str) -> type[BaseModel]:
    return create_model(f"{kind.capitalize()}Answer", __base__=Answer, **{key: (value_type, ...)})


@lru_cache(maxsize=64)
def _extract_model(kind: str, key: str, value_type: Any) -> type[BaseModel]:
    return create_model(f"{kind.capitalize()}Extraction", **{key: (value_type, ...)})


@lru_cache(maxsize=4096)
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def _seat(value: Any) -> int | None:
    """A seat number from JSON (an int, or a string of one); None for anything else (floats, huge numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -1000 < value < 1000 else None
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) < 4:
        return int(value.strip())
    return None


# --------------------------------------------------------------------------- propose


def _team_type(request: ActionRequest) -> Any:
    seat = Literal[tuple(current().offered(request.options))]  # type: ignore[valid-type]
    size = request.team_size
    return tuple[seat, ...] if size is None else _sized(seat, size, repr(seat))


@lru_cache(maxsize=256)
def _sized(seat: Any, size: int, order: str) -> Any:
    from typing import Annotated

    return Annotated[list[seat], Field(min_length=size, max_length=size)]


def _team_of(value: Any) -> Action | None:
    if not isinstance(value, list) or not value:
        return None
    seats = [_seat(v) for v in value]
    return None if any(s is None for s in seats) else ProposeTeam(team=tuple(seats))


def _parse_team(text: str, request: ActionRequest) -> Action | None:
    players = max(request.options or (request.seat,))
    team = parse_team(text, seat=request.seat, players=players, team_size=request.team_size)
    if team is None:
        named = seats_named(text, seat=request.seat, players=players)
        return ProposeTeam(team=tuple(named)) if named else None
    return ProposeTeam(team=team)


def _team_fallback(request: ActionRequest, near: Action | None, rng: random.Random) -> Action:
    """Too many named: keep the first ones; too few: fill at random (seeded)."""
    named = [s for s in dict.fromkeys(near.team if isinstance(near, ProposeTeam) else ()) if s in request.options]
    rest = [s for s in request.options if s not in named]
    rng.shuffle(rest)
    return ProposeTeam(team=tuple(sorted((named + rest)[: request.team_size])))


TEAM_SIZE = re.compile(r"exactly (\d+) players")


def _scripted_team(prompt: str, rng: random.Random, me: int, others: list[int]) -> str | None:
    if (size := TEAM_SIZE.search(prompt)) is None:
        return None
    k = int(size.group(1))
    pool = [me] + rng.sample(others, len(others))
    team = sorted(dict.fromkeys(pool))[:k] if len(pool) >= k else pool
    return "I propose " + ", ".join(f"Player {s}" for s in team) + "."


PROPOSE = DecisionKind(
    kind=RequestKind.PROPOSE,
    key="team",
    value_type=_team_type,
    value_of=_team_of,
    parse=_parse_team,
    extract_prompt="extract/team",
    extract_type=list[int],
    fallback=_team_fallback,
    instruction=lambda request, rules: template("host/request_propose").render(
        quest=request.quest, team_size=request.team_size),
    scripted=_scripted_team,
    answers=lambda request: f'name {request.team_size} players as "Player N", from {choices(request.options)}',
    random=lambda request, rng: ProposeTeam(team=tuple(sorted(rng.sample(request.options, request.team_size)))),
    bot=lambda bot, request: ProposeTeam(team=tuple(sorted(bot.propose(request)))),
    legal=lambda request: {"team_size": request.team_size, "players": list(request.options)},
    asking="propose a team",
    say=lambda action: "I propose " + ", ".join(seat_name(s) for s in action.team) + ".",
    plain=lambda action: list(action.team),
    events=(Becomes("team_proposed", seat="leader"),),
)


# --------------------------------------------------------------------------- vote


def _vote_of(value: Any) -> Action | None:
    return {"approve": Vote(approve=True), "reject": Vote(approve=False)}.get(value.strip().lower()) \
        if isinstance(value, str) else None  # any case: "APPROVE" approves


def _vote_instruction(request: ActionRequest, rules: RuleSet) -> str:
    stakes = phrase(f"stakes_final_{rules.on_last_rejection}") if request.final else phrase("stakes_normal")
    return template("host/request_vote").render(team=names(request.team), quest=request.quest, stakes=stakes,
                                                options=words(current().vote))


def _scripted_vote(prompt: str, rng: random.Random, me: int, others: list[int]) -> str | None:
    lowered = prompt.lower()
    if '"approve"' in lowered and '"reject"' in lowered:
        return "I approve this team." if rng.random() < APPROVE_SHARE else "I reject this team."
    return None


VOTE = DecisionKind(
    kind=RequestKind.VOTE,
    key="vote",
    value_type=lambda request: Literal[current().vote],  # type: ignore[valid-type]
    value_of=_vote_of,
    parse=lambda text, request: None if (v := parse_vote(text)) is None else Vote(approve=v),
    extract_prompt="extract/vote",
    extract_type=Literal["approve", "reject", "unclear"],
    fallback=lambda request, near, rng: Vote(approve=True),  # the paper: an unclear team vote approves
    instruction=_vote_instruction,
    scripted=_scripted_vote,
    answers=lambda request: words(current().vote),
    random=lambda request, rng: Vote(approve=rng.random() < 0.5),
    bot=lambda bot, request: Vote(approve=bot.vote(request)),
    legal=lambda request: {"options": ["approve", "reject"]},
    asking="vote",
    say=lambda action: "I approve." if action.approve else "I reject.",
    plain=lambda action: action.approve,
    spelled=("approve", "reject"),
    events=(Becomes("vote_cast"), Becomes("votes_revealed", seat=None, own=False)),
)


# --------------------------------------------------------------------------- quest card


def _card_of(value: Any) -> Action | None:
    return {"success": QuestCard(success=True), "fail": QuestCard(success=False)}.get(value.strip().lower()) \
        if isinstance(value, str) else None  # any case: "FAIL" fails


def _quest_instruction(request: ActionRequest, rules: RuleSet) -> str:
    return template("host/request_quest").render(quest=request.quest, team=names(request.team),
                                                 cards=_cards(request))


def _cards(request: ActionRequest) -> str:
    """The cards a seat may play, quoted: '"success" or "fail"', or only success for a good seat."""
    return words(current().card) if request.can_fail else words(["success"]) + phrase("cards_good_only")


def _scripted_card(prompt: str, rng: random.Random, me: int, others: list[int]) -> str | None:
    lowered = prompt.lower()
    if '"success"' not in lowered:
        return None
    return "I play a fail card." if '"fail"' in lowered and rng.random() < 0.5 else "Success."


QUEST = DecisionKind(
    kind=RequestKind.QUEST,
    key="card",
    value_type=lambda request: Literal[current().card] if request.can_fail else Literal["success"],  # type: ignore
    value_of=_card_of,
    parse=lambda text, request: None if (c := parse_quest(text)) is None else QuestCard(success=c),
    extract_prompt="extract/quest",
    extract_type=Literal["success", "fail", "unclear"],
    # the paper: an unclear card fails for evil; good can only succeed
    fallback=lambda request, near, rng: QuestCard(success=not request.can_fail),
    instruction=_quest_instruction,
    scripted=_scripted_card,
    answers=lambda request: words(current().card) if request.can_fail else '"success" (good can only succeed)',
    random=lambda request, rng: QuestCard(success=not request.can_fail or rng.random() < 0.5),
    bot=lambda bot, request: QuestCard(success=not (request.can_fail and bot.fails(request))),
    legal=lambda request: {"options": ["success", "fail"] if request.can_fail else ["success"]},
    asking="play a quest card",
    say=lambda action: "Success." if action.success else "Fail.",
    plain=lambda action: action.success,
    spelled=("success", "fail"),
    events=(Becomes("quest_card", attempt=False), Becomes("quest_completed", seat=None, attempt=False, own=False)),
)


# --------------------------------------------------------------------------- assassination


def _target_type(request: ActionRequest) -> Any:
    offered = tuple(current().offered(request.options))
    return Literal[offered + ((0,) if request.may_pass else ())]  # type: ignore[valid-type]


def _target_of(value: Any) -> Action | None:
    seat = _seat(value)
    return None if seat is None else Assassinate(target=seat or None)


def _parse_target(text: str, request: ActionRequest) -> Action | None:
    if request.may_pass and text.strip().lower().strip(".!") in PASS_WORDS:
        return Assassinate(target=None)
    target = parse_target(text, seat=request.seat, players=max(max(request.options or (1,)), request.seat))
    return None if target is None else Assassinate(target=target)


def _target_fallback(request: ActionRequest, near: Action | None, rng: random.Random) -> Action:
    return Assassinate(target=None) if request.may_pass else Assassinate(target=rng.choice(request.options))


def _assassinate_instruction(request: ActionRequest, rules: RuleSet) -> str:
    option = phrase("pass_option_yes" if request.may_pass else "pass_option_no")
    addressee = (holder(rules) or "the Assassin").removeprefix("the ")  # "Assassin", "Mordred"
    return template("host/request_assassinate").render(addressee=addressee, options=choices(request.options),
                                                       pass_option=option)


def _target_answers(request: ActionRequest) -> str:
    named = f'name one of {choices(request.options)} as "Player N"'
    return named + ', or "pass"' if request.may_pass else named


def _scripted_target(prompt: str, rng: random.Random, me: int, others: list[int]) -> str | None:
    lowered = prompt.lower()
    if "merlin" in lowered and ("name" in lowered or "guess" in lowered):
        return f"I name Player {rng.choice(others)} as Merlin."
    return None


ASSASSINATE = DecisionKind(
    kind=RequestKind.ASSASSINATE,
    key="merlin",
    value_type=_target_type,
    value_of=_target_of,
    parse=_parse_target,
    extract_prompt="extract/assassinate",
    extract_type=int,
    fallback=_target_fallback,
    instruction=_assassinate_instruction,
    scripted=_scripted_target,
    answers=_target_answers,
    asked_in_public=False,
    random=lambda request, rng: Assassinate(target=rng.choice(list(request.options) + [None] * request.may_pass)),
    bot=lambda bot, request: Assassinate(target=bot.assassinate(request)),
    legal=lambda request: {"players": list(request.options), **({"may_pass": True} if request.may_pass else {})},
    asking="name Merlin",
    say=lambda action: f"I name {seat_name(action.target)} as Merlin." if action.target else "I hold off.",
    plain=lambda action: action.target,
    spelled=("pass",),
    events=(Becomes("assassination", seat=None, quest=False, attempt=False, own=False),
            Becomes("assassination_declined", seat=None, quest=False, attempt=False, own=False)),
)


# --------------------------------------------------------------------------- the Lady of the Lake


def _examine_of(value: Any) -> Action | None:
    seat = _seat(value)
    return None if not seat else Examine(target=seat)


def _parse_examine(text: str, request: ActionRequest) -> Action | None:
    target = parse_target(text, seat=request.seat, players=max(max(request.options or (1,)), request.seat))
    return None if target is None else Examine(target=target)


def _scripted_examine(prompt: str, rng: random.Random, me: int, others: list[int]) -> str | None:
    if "name one player to examine" not in prompt.lower():  # prompts/host/request_lady.txt
        return None
    return f"I examine Player {rng.choice(others)}."


def _bot_examine(bot: Any, request: ActionRequest) -> Action:
    """The rule bot examines the player it suspects most among those it may name."""
    return Examine(target=next(s for s in reversed(bot.ranked(True)) if s in request.options))


LADY = DecisionKind(
    kind=RequestKind.LADY,
    key="examine",
    value_type=lambda request: Literal[tuple(current().offered(request.options))],  # type: ignore[valid-type]
    value_of=_examine_of,
    parse=_parse_examine,
    extract_prompt="extract/lady",
    extract_type=int,
    # not in the paper (its games have no Lady): an answer nothing could read examines a player at random
    fallback=lambda request, near, rng: Examine(target=rng.choice(request.options)),
    instruction=lambda request, rules: template("host/request_lady").render(options=choices(request.options)),
    scripted=_scripted_examine,
    answers=lambda request: f'name one of {choices(request.options)} as "Player N"',
    random=lambda request, rng: Examine(target=rng.choice(request.options)),
    bot=_bot_examine,
    legal=lambda request: {"players": list(request.options)},
    asking="examine a player with the Lady of the Lake",
    say=lambda action: f"I examine {seat_name(action.target)}.",
    plain=lambda action: action.target,
    events=(Becomes("lady_examined", seat="holder", attempt=False),),
)


# --------------------------------------------------------------------------- speech (not a decision)


def _speak_instruction(request: ActionRequest, rules: RuleSet) -> str:
    if request.team:
        return template("host/request_speak_team").render(team=names(request.team), quest=request.quest)
    size = rules.quest_sizes[request.quest - 1]
    return template("host/request_speak_candidates").render(quest=request.quest, team_size=size)


SPEAK = DecisionKind(
    kind=RequestKind.SPEAK,
    key=None,
    value_type=lambda request: str,
    value_of=lambda value: None,
    parse=lambda text, request: Speak(text=text),
    extract_prompt=None,
    extract_type=str,
    fallback=lambda request, near, rng: Speak(text=""),
    instruction=_speak_instruction,
    scripted=lambda prompt, rng, me, others: None,  # the scripted model's speech is its default
    answers=lambda request: "your speech, on one line",
    random=lambda request, rng: Speak(text=rng.choice(CANNED_SPEECHES)),
    bot=lambda bot, request: Speak(text=bot.speech(request)),
    legal=lambda request: {"max_chars": MAX_SPEECH},
    asking="speak",
    say=lambda action: action.text,
    plain=lambda action: action.text,
    events=(Becomes("speech"),),
)


CONSUMERS = ("random", "bot", "legal", "asking", "say", "plain", "events")
"""What every consumer needs of a decision kind beyond answering it: the random seat, the rule bot, the seat
protocol and the web table, the live view's waiting line, a bot's words, the records' JSON, the replay timeline."""


def _check(name: str, spec: DecisionKind) -> None:
    """Refuse, in one line, a decision kind that a consumer could not handle."""
    if not isinstance(spec, DecisionKind):
        raise ValueError(f"decision kind {name}: not a DecisionKind")
    if not isinstance(spec.kind, RequestKind):
        raise ValueError(f"decision kind {name}: the engine asks only its own request kinds "
                         f"({', '.join(k.value for k in RequestKind)}), so a new kind needs its RequestKind, action and "
                         "the rule asking it in the package (docs/architecture.md), not a plugin")
    if spec.kind.value != name:
        raise ValueError(f"decision kind {name}: registered under its request kind's value {spec.kind.value!r}")
    missing = [f for f in CONSUMERS if not getattr(spec, f)]
    if missing:
        raise ValueError(f"decision kind {name}: no {', '.join(missing)} (every consumer needs them: the random "
                         "seat, the rule bot, program seats and the web table, the live view, bots' words, records)")
    for prompt in (spec.extract_prompt,) if spec.key is not None else ():
        if prompt is None:
            raise ValueError(f"decision kind {name}: a decision with a JSON key needs its extractor prompt")


KINDS: Registry[DecisionKind] = Registry("decision kind", [(k.kind.value, k) for k in (
    SPEAK, PROPOSE, VOTE, QUEST, LADY, ASSASSINATE)], check=_check)
"""Every request kind's spec, by its value ("vote"). The scripted model tries the decisions' recognisers in this
order."""


def register_kind(spec: DecisionKind) -> DecisionKind:
    """Add a decision kind (its `RequestKind` and action are in core.actions, the engine asks it). Refused in one
    line when it lacks what a consumer needs (`CONSUMERS`), under a built-in kind's name, or when its kind is no
    `RequestKind` (the engine would never ask it: a plugin's)."""
    return KINDS.register(spec.kind.value, spec)


def kind_of(request: ActionRequest) -> DecisionKind:
    return KINDS[request.kind.value]


def spec_of(action: Action) -> DecisionKind:
    """The spec of the kind an action answers (an action's `kind` is its request kind's value)."""
    return KINDS[action.kind]


def decision_schema(request: ActionRequest) -> dict[str, Any] | None:
    """The JSON schema of a constrained answer to `request` (None for speeches)."""
    return kind_of(request).schema(request)


def instruct(request: ActionRequest, rules: RuleSet) -> str:
    """The host's instruction for a request, stating exactly what answer is expected."""
    return kind_of(request).instruction(request, rules)


def scripted_answer(prompt: str, rng: random.Random, me: int, others: Sequence[int]) -> str | None:
    """The scripted model's free-text answer to the request its prompt asks, if it recognises one."""
    for spec in KINDS.values():
        text = spec.scripted(prompt, rng, me, list(others))
        if text is not None:
            return text
    return None


def plain(action: Action) -> Any:
    """An action as JSON-friendly data: a seats list, true/false, a seat number (or null), a speech."""
    return spec_of(action).plain(action)


def say(action: Action) -> str:
    """Plain words for a typed action (the text part of a bot's Reply)."""
    return spec_of(action).say(action)
