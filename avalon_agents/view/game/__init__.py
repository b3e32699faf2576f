"""The replay viewer: any recorded game as one self-contained HTML page (see docs/replay.md).

It reads run directories only (events.jsonl, trace.jsonl, meta.json, result.json) and sits on the analysis
floor.
"""

from avalon_agents.view.game.pages import game_page, index_page, write_replay
from avalon_agents.view.game.timeline import game_data, timeline

__all__ = ["game_data", "game_page", "index_page", "timeline", "write_replay"]
