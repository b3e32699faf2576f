"""avalon_agents: LLM agents playing The Resistance: Avalon, built for ablation studies."""

__version__ = "0.1.0"
