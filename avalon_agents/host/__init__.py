"""The host: runs games between agents, delivers visible events, records the run directory."""

from avalon_agents.host.host import Extractor, GameHost, NoActionError, play_game, typed_action

__all__ = ["Extractor", "GameHost", "NoActionError", "play_game", "typed_action"]
