"""Play many games between agent kinds named per seat (what `avalon play` runs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from avalon_agents.agents.registry import AGENT_KINDS, make_agent
from avalon_agents.core.events import GameResult
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.host.host import GameHost
from avalon_agents.records import GameRecorder


def parse_seats(spec: str, players: int) -> list[str]:
    """`rulebot` (every seat) or a comma list with one kind per seat. Raises ValueError naming `seats`."""
    kinds = [k.strip() for k in spec.split(",")]
    if len(kinds) == 1:
        kinds *= players
    if len(kinds) != players:
        raise ValueError(f"seats: {len(kinds)} kinds given for {players} players (give one, or one per seat)")
    for kind in kinds:
        if kind not in AGENT_KINDS:
            raise ValueError(f"seats: unknown seat kind {kind!r} (choose from {', '.join(sorted(AGENT_KINDS))})")
    return kinds


def agent_seed(game_seed: int, seat: Seat) -> int:
    """Each seat's agent gets its own seed, derived from the game's."""
    return game_seed * 1009 + seat


def game_dir(out: Path, index: int) -> Path:
    return out / f"game-{index:05d}"


async def play_one(rules: RuleSet, kinds: Sequence[str], seed: int, out: Path | None = None) -> GameHost:
    """Play one game; return its host (engine events and result inside)."""
    agents = {
        seat: make_agent(kind, seat=seat, seed=agent_seed(seed, seat)) for seat, kind in zip(rules.seats, kinds)
    }
    host = GameHost(
        rules=rules,
        agents=agents,
        seed=seed,
        recorder=GameRecorder(out) if out else None,
        meta={"seats": dict(zip(rules.seats, kinds))},
    )
    await host.run()
    return host


async def play_games(
    rules: RuleSet,
    kinds: Sequence[str],
    seed: int,
    games: int,
    out: Path | None = None,
    on_game: Callable[[int, GameHost], None] | None = None,
) -> list[GameResult]:
    """Play `games` games with seeds seed, seed+1, ...; write game-NNNNN/ under `out` if given."""
    results = []
    for i in range(games):
        host = await play_one(rules, kinds, seed + i, game_dir(out, i + 1) if out else None)
        results.append(host.engine.result())
        if on_game:
            on_game(i, host)
    return results


def summarize(results: Sequence[GameResult]) -> dict:
    """Counts for a batch of games: games, good_wins, evil_wins, reasons."""
    reasons: dict[str, int] = {}
    for r in results:
        reasons[r.reason.value] = reasons.get(r.reason.value, 0) + 1
    good = sum(r.winner.value == "good" for r in results)
    return {
        "games": len(results),
        "good_wins": good,
        "evil_wins": len(results) - good,
        "good_win_rate": round(good / len(results), 4) if results else None,
        "reasons": dict(sorted(reasons.items())),
    }

