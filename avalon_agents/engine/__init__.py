"""The game engine: pure and seeded; knows nothing of LLMs, files or logging."""

from avalon_agents.engine.engine import AvalonEngine, deal

__all__ = ["AvalonEngine", "deal"]
