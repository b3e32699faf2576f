"""One game at a web table: people at their seat pages, the other seats played as in `avalon play`, a spectator
view; the game recorded in its directory like any other (people's seats as `human`), and its replay written
and linked at the end."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aiohttp import web

from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.host.batch import Played, batch, play_batch
from avalon_agents.host.host import watching
from avalon_agents.host.play import AgentSetup
from avalon_agents.records.run_dir import game_dir
from avalon_agents.table.desk import WebDesk
from avalon_agents.table.server import Table
from avalon_agents.table.watch import Spectator
from avalon_agents.web.hosts import reachable
from avalon_agents.web.serving import runner as site_runner

LINGER = 30.0
"""Seconds the table stays up after the game by default, so people see the end and open the replay."""


@dataclass(frozen=True)
class TableGame:
    """What one web table plays.

    Attributes:
        rules: the rules.
        kinds: the agent kind at each seat, `human` at the people's.
        seed: the game's seed.
        setup: what the other seats play with (`avalon play`'s setup), or one per seat.
        decision_timeout: seconds a person may take over one request before the fallback decides (None: no limit).
        games: how many games the session plays, one after the other at the same seats (game i: seed + i; the
            agents carry their experience from game to game, as in `avalon play`).
    """

    rules: RuleSet
    kinds: tuple[str, ...]
    seed: int
    setup: AgentSetup | tuple[AgentSetup, ...]
    decision_timeout: float | None = None
    games: int = 1

    @property
    def humans(self) -> list[Seat]:
        return [seat for seat, kind in zip(self.rules.seats, self.kinds) if kind == "human"]


@dataclass(frozen=True)
class Address:
    """Where the table listens, once it does: `host` is an address people can open (`reachable`)."""

    host: str
    port: int

    def url(self, path: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"


async def serve_table(game: TableGame, out: Path, *, host: str = "127.0.0.1", port: int = 0,
                      ready: Callable[[Table, Address], None] = lambda table, address: None,
                      linger: float = LINGER, lobby: bool = True) -> list[Played]:
    """Serve `game`'s table on `host`:`port` (0: any free port), call `ready` once it listens (nothing is written
    to `out` before: a table that cannot listen leaves it as it was), wait until every
    person has opened their page (`lobby`; else start at once), play the session's games into OUT/game-00001,
    ..., write each one's replay (OUT/replay/) as it ends, show each end `linger` seconds (before the next game,
    and before the table closes), and return the games."""
    desks = {seat: WebDesk(seat, game.rules, game.decision_timeout) for seat in game.humans}
    spectator = Spectator(game.rules)
    table = Table(desks, spectator, game.games)
    runner = site_runner(table.app(host))
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0]
        ready(table, Address(reachable(bound[0]), bound[1]))

        async def before(i: int) -> None:
            if i == 0 and lobby:
                await table.everyone_joined.wait()
            elif i > 0:
                await asyncio.sleep(linger)  # the last game's end, on every page
            table.started = True

        jobs = batch(game.rules, game.kinds, game.seed, game.games, seat_setups(game, desks))
        with watching(spectator):
            played = await play_batch(jobs, out, before=before,
                                      on_game=lambda p: table.game_over(p.index + 1, _replay(out, p.index + 1)))
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(linger)
        return played
    finally:
        await runner.cleanup()


def seat_setups(game: TableGame, desks: dict[Seat, WebDesk]) -> tuple[AgentSetup, ...]:
    """Each seat's setup: the people's with their desk, the others' as given."""
    per_seat: Sequence[AgentSetup] = (game.setup if isinstance(game.setup, tuple)
                                      else (game.setup,) * game.rules.players)
    return tuple(replace(s, terminal=desks[seat]) if seat in desks else s
                 for seat, s in zip(game.rules.seats, per_seat))


def _replay(out: Path, n: int) -> str | None:
    """Game n's replay page (the replay of every finished game is written under OUT/replay/), or None if it cannot
    be written."""
    from avalon_agents.view.game.pages import page_name, write_replay

    try:
        index = write_replay(out)
    except (FileNotFoundError, ValueError):
        return None
    return (index.parent / page_name(game_dir(Path(), n).as_posix())).read_text()
