"""The game engine: pure and seeded; knows nothing of LLMs, files or logging."""

from avalon_agents.engine.engine import AvalonEngine

__all__ = ["AvalonEngine"]
