"""The host: runs games between agents, delivers visible events, records the run directory."""

from avalon_agents.host.host import ActionReader, GameHost, NoActionError, play_game, typed_action
from avalon_agents.host.probe import BeliefProbe

__all__ = ["ActionReader", "BeliefProbe", "GameHost", "NoActionError", "play_game", "typed_action"]
