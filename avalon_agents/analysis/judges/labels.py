"""The labels each judge may give (its spec's `labels`), here so the summaries of the judged tables
(`analysis.paper.behavior`) read them without importing the judges."""

CAMOUFLAGE_LABELS = ("self_disclosure", "camouflage", "withholding")
ATTITUDES = ("trust", "distrust", "ambivalent")
NOT_MENTIONED = "not_mentioned"
"""A teamwork answer's value for a player the speech does not mention (such players get no row)."""
PERSUASION_LABELS = ("assertion", "logical deduction", "suggestion", "critique/opposition", "questioning",
                     "appeal/defense", "agreement", "compromise/concession")
"""Avalon-NLU's eight persuasion strategies, the dataset's own label strings."""
DECEPTION_LABELS = ("none", "influence", "commission", "omission")
"""Avalon-NLU's three kinds of lie, and "none"."""

NO_LIE = "none"
"""A chat message's deception label where the players gave none (`avalon calibrate`)."""
