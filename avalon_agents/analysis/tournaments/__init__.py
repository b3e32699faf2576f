"""Tournaments: openskill ratings of a run's entrants and the leaderboard's tables, page and figure."""
