"""Importers: games people played, turned into ordinary game directories by driving the engine with the
recorded actions, so every imported game is checked against the rules."""
