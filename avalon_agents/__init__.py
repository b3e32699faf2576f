"""avalon_agents: LLM agents playing The Resistance: Avalon, built for ablation studies."""

__version__ = "0.1.0"

from loguru import logger as _logger

_logger.disable("avalon_agents")  # library code logs, never prints: the CLI (or the user) turns it on
