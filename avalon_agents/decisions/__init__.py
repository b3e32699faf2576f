"""Decisions: each request kind declared once (kinds), the whole-word rule parse (parse), JSON reading."""

from avalon_agents.decisions.jsonish import load_json
from avalon_agents.decisions.kinds import KINDS, DecisionKind, decision_schema, instruct, kind_of, plain

__all__ = ["KINDS", "DecisionKind", "decision_schema", "instruct", "kind_of", "load_json", "plain"]
