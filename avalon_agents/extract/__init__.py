"""Free text -> legal actions: JSON decisions, a whole-word rule parse, an LLM extractor, the paper's fallbacks."""

from avalon_agents.extract.extractor import Extraction, Extractor

__all__ = ["Extraction", "Extractor"]
