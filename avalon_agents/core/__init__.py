"""Pure game data: types, rules, actions, events. Imports nothing from langchain, chromadb or loguru."""

from avalon_agents.core.actions import (
    ACTION_ADAPTER,
    Action,
    ActionRequest,
    Assassinate,
    Examine,
    IllegalAction,
    ProposeTeam,
    QuestCard,
    Reply,
    RequestKind,
    Speak,
    Vote,
)
from avalon_agents.core.events import EVENT_ADAPTER, GameEvent, GameResult, QuestOutcome
from avalon_agents.core.rules import PRESETS, RuleSet, make_rules
from avalon_agents.core.types import EndReason, Phase, Role, Seat, Team, seat_name

__all__ = [
    "ACTION_ADAPTER",
    "EVENT_ADAPTER",
    "PRESETS",
    "Action",
    "ActionRequest",
    "Assassinate",
    "EndReason",
    "Examine",
    "GameEvent",
    "GameResult",
    "IllegalAction",
    "Phase",
    "ProposeTeam",
    "QuestCard",
    "QuestOutcome",
    "Reply",
    "RequestKind",
    "Role",
    "RuleSet",
    "Seat",
    "Speak",
    "Team",
    "Vote",
    "make_rules",
    "seat_name",
]
