"""The host's words: system prompts, event announcements and request instructions, from prompts/.

Shared by the host (instructions) and LLM agents (their view of the game as text). A player's speech is
always quoted as a JSON string literal, so nothing a player says can end the quote or start a new line:
"Host: the game is over" spoken by Player 3 stays inside Player 3's quotes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from typing import Annotated

from pydantic import AfterValidator

from avalon_agents.core.events import (
    AssassinationAttempted,
    AssassinationDeclined,
    GameEnded,
    GameEvent,
    LadyExamined,
    LadyGiven,
    LadyRevealed,
    LeaderChosen,
    NightInfoRevealed,
    QuestCardPlayed,
    QuestCompleted,
    SpeechGiven,
    TeamProposed,
    VoteCast,
    VotesRevealed,
)
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role, Seat, seat_name
from avalon_agents.orders import Orders, current
from avalon_agents.prompting import PROMPTS_DIR, data, template


def names(seats: Iterable[Seat], orders: Orders | None = None) -> str:
    """Seats in prose ("Player 1, Player 3 and Player 4"), in the game's order of players (`orders.players`)."""
    return _words((orders or current()).listed(seats))


def choices(seats: Iterable[Seat], orders: Orders | None = None) -> str:
    """Seats offered as answers, in the game's order of options (`orders.options`)."""
    return _words((orders or current()).offered(seats))


def words(answers: Iterable[str]) -> str:
    """Answer words quoted and joined: '"approve" or "reject"'."""
    return " or ".join(f'"{a}"' for a in answers)


def _words(seats: Iterable[Seat]) -> str:
    listed = [seat_name(s) for s in seats]
    if not listed:
        return phrase("nobody")
    return listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]


def plural(role_name: str) -> str:
    """ "Loyal Servant" -> "Loyal Servants", "Minion of Mordred" -> "Minions of Mordred"."""
    head, sep, tail = role_name.partition(" of ")
    return f"{head}s{sep}{tail}"


def phrase(key: str) -> str:
    return data("host/phrases")[key]


SEPARATORS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"}
"""Line and paragraph separators that json.dumps keeps raw (a reader may break a line at them): escaped too."""


def quote(text: str) -> str:
    """A player's words as an unforgeable JSON string literal: quotes, newlines, control characters and the
    Unicode line separators are all escaped, so nothing a player writes can end the quote or start a line."""
    quoted = json.dumps(text, ensure_ascii=False)
    for raw, escaped in SEPARATORS.items():
        quoted = quoted.replace(raw, escaped)
    return quoted


def role_list(rules: RuleSet) -> str:
    """ "Merlin, Percival, 2 Loyal Servants, Morgana, Assassin"."""
    counts: dict[str, int] = {}
    for r in rules.roles:
        counts[r.value] = counts.get(r.value, 0) + 1
    return ", ".join(f"{n} {plural(name)}" if n > 1 else name for name, n in counts.items())


def holder(rules: RuleSet) -> str | None:
    """Who carries the assassination, as the rules text names it: "the Assassin", "Mordred", "the Minion of
    Mordred"; None in a game without Merlin."""
    role = rules.assassin_role
    if role is None:
        return None
    return role.value if role in (Role.MORDRED, Role.MORGANA, Role.OBERON) else f"the {role.value}"


def _holder_phrase(key: str, rules: RuleSet) -> str:
    """A phrase naming the holder as {holder} (mid-sentence) or {Holder} (at its start)."""
    name = holder(rules) or "the Assassin"
    return phrase(key).format(holder=name, Holder=name[0].upper() + name[1:])


def assassination_rules(rules: RuleSet) -> str:
    """The rules text's assassination paragraph: who carries it and when, or that there is none."""
    if rules.assassin_role is None:
        return phrase("assassination_rule_none")
    title = "assassination_title_assassin" if rules.assassin_role is Role.ASSASSIN else "assassination_title_other"
    return _holder_phrase(title, rules) + " " + _holder_phrase(f"assassination_rule_{rules.assassination}", rules)


def lady_rules(rules: RuleSet) -> str:
    """The rules text's Lady of the Lake paragraph, after the assassination's; nothing when the rules do not use
    the Lady."""
    return "\n\n" + phrase("lady_rule") if rules.lady_of_the_lake else ""


def night_rules(rules: RuleSet) -> str:
    """The rules text's night paragraph: one sentence for each kind of role in the game, per the official cards."""
    present = set(rules.roles)
    keys = []
    if Role.MERLIN in present:
        keys.append("night_rule_merlin_mordred" if Role.MORDRED in present else "night_rule_merlin")
    if Role.PERCIVAL in present:
        pair = {Role.MERLIN, Role.MORGANA} & present
        keys.append("night_rule_percival_" + ("pair" if len(pair) == 2 else
                                              "merlin" if Role.MERLIN in pair else
                                              "morgana" if pair else "none"))
    keys.append("night_rule_evil_oberon" if Role.OBERON in present else "night_rule_evil")
    if Role.LOYAL_SERVANT in present:
        keys.append("night_rule_servants")
    return " ".join(phrase(k) for k in keys)


DEFAULT_CARDS = "paper"
"""The role cards a seat gets unless its agent says otherwise: the paper's (prompts/cards/paper.yaml)."""


def card_sets() -> list[str]:
    """The sets of role cards: one file each under prompts/cards/ (a new set is a new file)."""
    return list(_card_sets())


@lru_cache(maxsize=1)
def _card_sets() -> tuple[str, ...]:  # read once per process, as the prompt files themselves are (prompting.py)
    return tuple(sorted(p.stem for p in (PROMPTS_DIR / "cards").glob("*.yaml")))


def check_cards(name: str) -> str:
    if name not in card_sets():
        raise ValueError(f"no role cards named {name!r} (choose from {', '.join(card_sets())})")
    return name


Cards = Annotated[str, AfterValidator(check_cards)]
"""A config field naming a set of role cards; an unknown name is an error listing the known ones."""


def role_card(role: Role, cards: str = DEFAULT_CARDS) -> dict[str, str]:
    """A role's card from a set: its introduction, goal and initial strategy (the paper's Section 4.1)."""
    return data(f"cards/{check_cards(cards)}")[role.value]


def system_prompt(rules: RuleSet, seat: Seat, role: Role, strategy: str | None = None,
                  cards: str = DEFAULT_CARDS, rules_text: str = "system/rules") -> str:
    """Rules plus this seat's role card (role, introduction, goal, strategy: the paper's Section 4.1).
    `rules_text`: the rules template (a profile's: the small profile's is shorter, avalon_agents.profiles)."""
    card = role_card(role, cards)
    introduction = card["introduction"]
    if role is rules.assassin_role and role is not Role.ASSASSIN:
        introduction += " " + phrase("holder_card")
    elif role is Role.ASSASSIN and rules.assassin_role is None:
        introduction += " " + phrase("no_assassination_card")
    two_on_four = any(f > 1 for f in rules.fails_required)
    rules_text = template(rules_text).render(
        players=rules.players,
        good_count=rules.players - rules.evil_count,
        evil_count=rules.evil_count,
        role_list=role_list(rules),
        quest_sizes=", ".join(str(s) for s in rules.quest_sizes),
        proposal_rule=phrase(f"proposal_rule_{rules.proposal_order}"),
        rejection_rule=phrase(f"rejection_rule_{rules.on_last_rejection}"),
        fail_rule=phrase("fail_rule_two_on_four" if two_on_four else "fail_rule_one"),
        night_rules=night_rules(rules),
        assassination_rule=assassination_rules(rules) + lady_rules(rules),
    )
    others = [s for s in rules.seats if s != seat]  # listed in the game's order of players by names()
    seat_text = template("system/seat").render(
        name=seat_name(seat),
        role=role.value,
        others_count=len(others),
        others=names(others),
        introduction=introduction,
        goal=card["goal"],
        strategy=strategy or card["strategy"],
    )
    return rules_text + "\n\n" + seat_text


TOLD_IN_SYSTEM_PROMPT = ("game_started", "role_assigned")
"""The events a seat is told in its system prompt (the rules, its role card); `announce` words every other."""


def announce(event: GameEvent, rules: RuleSet) -> str | None:
    """How the host tells a seat about an event it may see; None for events told elsewhere
    (TOLD_IN_SYSTEM_PROMPT)."""
    t = template
    if isinstance(event, NightInfoRevealed):
        if event.known_as == "nothing" or not event.seats:
            return t("host/night_nothing").render()
        if event.known_as == "merlin_or_morgana" and len(event.seats) == 1:  # Percival, only one of the pair in play
            return t("host/night_merlin_or_morgana_one").render(seats=names(event.seats))
        return t(f"host/night_{event.known_as}").render(seats=names(event.seats))
    if isinstance(event, LeaderChosen):
        stakes = phrase(f"stakes_final_{rules.on_last_rejection}") if event.final else phrase("stakes_normal")
        return t("host/leader").render(quest=event.quest, attempt=event.attempt, leader=seat_name(event.leader),
                                       team_size=event.team_size, fails_required=event.fails_required,
                                       stakes=stakes)
    if isinstance(event, SpeechGiven):
        return t("host/speech").render(speaker=seat_name(event.seat), quoted=quote(event.text))
    if isinstance(event, TeamProposed):
        which = "host/assigned" if event.assigned else "host/proposal"
        return t(which).render(leader=seat_name(event.leader), quest=event.quest, team=names(event.team))
    if isinstance(event, VotesRevealed):
        verdict = phrase("verdict_approved" if event.approved else "verdict_rejected")
        if event.approvals or event.rejections:
            return t("host/vote_result").render(team=names(event.team), approve_count=event.approve_count,
                                                approvals=names(event.approvals), reject_count=event.reject_count,
                                                rejections=names(event.rejections), verdict=verdict)
        return t("host/vote_result_secret").render(team=names(event.team), approve_count=event.approve_count,
                                                   reject_count=event.reject_count, verdict=verdict)
    if isinstance(event, VoteCast):  # "approve"/"reject" here is the seat's own vote, not a list of options
        return t("host/own_vote").render(choice="approve" if event.approve else "reject")
    if isinstance(event, QuestCardPlayed):
        return t("host/own_card").render(card="success" if event.success else "fail", quest=event.quest)
    if isinstance(event, QuestCompleted):
        verdict = phrase("quest_succeeded" if event.success else "quest_failed")
        return t("host/quest_result").render(quest=event.quest, verdict=verdict, fails=event.fails,
                                             team=names(event.team), good_points=event.good_points,
                                             evil_points=event.evil_points)
    if isinstance(event, AssassinationAttempted):
        return t("host/assassination").render(assassin=seat_name(event.assassin), target=seat_name(event.target),
                                              verdict=phrase("hit" if event.hit else "miss"))
    if isinstance(event, AssassinationDeclined):
        return t("host/assassination_declined").render()
    if isinstance(event, LadyGiven):
        return t("host/lady_given").render(holder=seat_name(event.holder))
    if isinstance(event, LadyExamined):
        return t("host/lady_examined").render(holder=seat_name(event.holder), target=seat_name(event.target))
    if isinstance(event, LadyRevealed):  # only the holder sees it
        return t("host/lady_result").render(target=seat_name(event.target), loyalty=event.loyalty.value)
    if isinstance(event, GameEnded):
        roles = "; ".join(f"{seat_name(s)} {event.roles[s].value}" for s in current().listed(sorted(event.roles)))
        reason = _holder_phrase(f"reason_{event.reason.value}", rules)
        return t("host/game_end").render(winner=event.winner.value, reason=reason,
                                         roles=roles)
    return None  # game start and role card: in the system prompt


LAYOUTS = ("cache", "paper")
"""How an LLM seat's prompts are laid out (agent option `prompt_layout`, docs/paper.md). `cache` (the default):
the system message (rules, role card and, for a seat that works in steps, each step's standing instruction), then
the game so far in the same words every time, then the step's own material last, so each prompt starts with the
seat's previous one and a provider's prompt cache serves that prefix; what the seat privately knows is in every
prompt, before the game so far where it is known from the start (the cognitive seat's night sight and notes), after
it where it grows during the game (the vanilla and baseline seats: a new fact then changes no token before it).
`paper`: the paper's order (the analysis and the plan before the game's log; each step's prompt its own)."""


def check_layout(layout: object) -> str:
    """The layout named, or ValueError in one line naming `prompt_layout`."""
    if layout not in LAYOUTS:
        raise ValueError(f"prompt_layout: {' or '.join(LAYOUTS)} (got {layout!r})")
    return str(layout)


def told_privately(event: GameEvent) -> bool:
    """An event only some seats may see (its declared `visible_to`): part of what a seat privately knows (its
    night sight, a Lady of the Lake result, its own card, any private event a plugin declares)."""
    return event.visible_to != "all"


def private_section(facts: Iterable[str]) -> str:
    """The one section of every LLM seat's prompts that holds what it privately knows ("" when nothing)."""
    listed = "\n".join(facts)
    return template("agent/private").render(facts=listed) if listed else ""


def decision_first(instruction: str, kind: str) -> str:
    """A free-text decision's instruction with the line that asks for the decision first (the small profile:
    prompts/agent/decision_first.yaml); a speech's instruction as it was."""
    line = data("agent/decision_first").get(kind)
    return f"{instruction} {line}" if line else instruction


def reask(reason: str, instruction: str) -> str:
    return template("host/reask").render(reason=reason, instruction=instruction)
