"""The host: runs games between agents, delivers visible events, records the run directory.

The names below load their module when first used (`lazy.py`), so a light module of the host (the probe's
declared cost, `avalon play`'s seat parsing) can be imported without the rest."""

from __future__ import annotations

from typing import TYPE_CHECKING

from avalon_agents.lazy import lazy_exports

_WHERE = {"ActionReader": "host", "GameHost": "host", "NoActionError": "host", "play_game": "host",
          "typed_action": "host", "BeliefProbe": "probe"}

__all__ = ["ActionReader", "BeliefProbe", "GameHost", "NoActionError", "play_game", "typed_action"]

__getattr__ = lazy_exports(__name__, _WHERE)

if TYPE_CHECKING:
    from avalon_agents.host.host import ActionReader, GameHost, NoActionError, play_game, typed_action
    from avalon_agents.host.probe import BeliefProbe
