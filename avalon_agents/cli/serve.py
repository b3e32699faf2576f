"""`avalon serve`: one game at a web table, people at their seats' pages (docs/table.md)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import click

from avalon_agents import logs
from avalon_agents.cli.base import (
    SEEDS,
    UserError,
    cli,
    echo_json,
    embedded_notice,
    json_option,
    lady_option,
    logging_options,
    model_options,
    one_line_errors,
    plugin_option,
)
from avalon_agents.cli.play import program_options, program_seats, rules_of, rules_options
from avalon_agents.llm.settings import ModelSettings

DEFAULT_OUT = Path("runs") / "table"


@cli.command()
@click.option("--human", "humans", default="1", show_default=True, metavar="SEAT,SEAT,...",
              help="The seats people take, each at its own page (a comma list).")
@click.option("--seats", default="rulebot", show_default=True,
              help="Agent kind of the other seats (rulebot, random, llm, cognitive, baseline, external: a program, "
                   "with --seat-command or --seat-url; or a plugin's), or a "
                   "comma list, one per seat (the people's seats are left out of it or named 'human').")
@rules_options
@lady_option
@click.option("--seed", default=0, show_default=True, type=SEEDS,
              help="The first game's seed (the deal, the first leader); game i uses seed+i.")
@click.option("--games", default=1, show_default=True, type=click.IntRange(1, 100),
              help="Games the session plays, one after the other at the same seats (the agents carry their "
                   "experience from game to game).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="The port to listen on (0: any free one).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on. Only this machine can reach 127.0.0.1; any other address lets other "
                   "machines play (a warning says so).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the games are recorded (game-00001/, ..., replay/, run.log), like any; people's seats are "
                   "recorded as 'human'. Default: runs/table/DATE-TIME. Must be new or empty.")
@click.option("--decision-timeout", default=300.0, show_default=True, type=click.FloatRange(0),
              help="Seconds a person may take over one decision or speech; then the documented fallback decides "
                   "(recorded in the run's health). 0: no limit.")
@click.option("--lobby/--no-lobby", default=True, show_default=True,
              help="Start the game once every person has opened their page (--no-lobby: at once).")
@click.option("--linger", default=30.0, show_default=True, type=click.FloatRange(0, 3600),
              help="Seconds each game's end shows (the roles, the replay's link) before the next game starts, and "
                   "the table stays up after the last.")
@json_option
@program_options
@model_options
@click.option("--constrained/--unconstrained", default=True, show_default=True,
              help="Decisions of llm seats use JSON-schema constrained output.")
@plugin_option
@logging_options
def serve(humans: str, seats: str, preset: str, players: int | None, role_set: str | None, assassin: str | None,
          lady: bool, seed: int, games: int, port: int, host: str, out: Path | None,
          decision_timeout: float, lobby: bool, linger: float, as_json: bool, seat_command: str | None,
          seat_url: str | None, seat_timeout: float, settings: ModelSettings, constrained: bool) -> None:
    """Play a game (or a session of games) at a web table: people take seats in their browsers, the other seats
    are agents, bots or programs.

    Prints one address per person's seat (`Player N: http://127.0.0.1:PORT/seat/N?token=TOKEN`: the token is
    the seat's key, give each person only theirs) and one for spectators (public events, the roles at the end);
    starts once every person has opened their page, serves the table until the last game ends, records the games
    in --out like any, writes their replay and exits 0. A page keeps its address from game to game.
    With --json: two JSON lines instead, the addresses when the table opens ({"seats": {N: URL}, "watch": URL})
    and the end ({"games": [{"winner", "reason"}...], "out", "replay", "fallbacks": {N: count}}).

    \b
    Examples:
      avalon serve                                     you at seat 1 against 5 rule bots
      avalon serve --human 1,4 --players 7             two people, 5 rule bots
      avalon serve --roles merlin,loyal_servant,loyal_servant,morgana,mordred --assassin mordred   a role set
      avalon serve --human 1,2 --games 5 --seats cognitive --model openai:gpt-4o-mini   a session of 5 games
      avalon serve --human 2 --seats llm --model openai:gpt-4o-mini
      avalon serve --human 1 --seats external --seat-command 'python3 experiments/bots/random_bot.py'
      avalon serve --host 0.0.0.0 --port 8080          reachable from other machines (a warning says so)
    """
    from avalon_agents.agents.registry import needs_llm
    from avalon_agents.host.batch import play_setup
    from avalon_agents.table.serve import TableGame
    from avalon_agents.web.hosts import loopback

    with one_line_errors():
        rules = rules_of(preset, players, role_set, assassin, lady)
        kinds = table_seats(seats, humans, rules.players)
        out = out if out is not None else DEFAULT_OUT / datetime.now().strftime("%Y%m%d-%H%M%S")
        if out.exists() and any(out.iterdir()):
            raise UserError(f"out: {out} is not empty (a table records new games; choose a new folder)")
        if any(needs_llm(k) for k in kinds):
            embedded_notice(settings.spec)
        setup = play_setup(kinds, settings.model_copy(update={"constrained": constrained}))
        setup = program_seats(kinds, setup, seat_command, seat_url, seat_timeout)
        game = TableGame(rules=rules, kinds=tuple(kinds), seed=seed, setup=setup,
                         decision_timeout=decision_timeout or None, games=games)
    if not loopback(host):
        click.echo(f"warning: the table listens on {host}: anyone who can reach this machine and holds a seat's "
                   "address can play that seat; give each person only their own address", err=True)
    # OUT and its run.log are made once the table listens: a table that cannot start leaves OUT as it was
    with contextlib.ExitStack() as logged, one_line_errors(out, stopped="the table stopped; finished games are kept"):
        record = {"rules": rules.model_dump(mode="json"), "seats": list(kinds), "seed": seed, "games": games,
                  "model": settings.public(), "decision_timeout": decision_timeout or None}
        played = asyncio.run(_serve(game, out, host, port, lobby, linger, as_json,
                                    opened=lambda: _opened(out, record, logged)))
    missed = [seat for p in played for seat in _missed(p.records, game)]
    replay = out / "replay" / "index.html"
    if as_json:
        echo_json({"games": [{"winner": p.result.winner.value, "reason": p.result.reason.value} for p in played],
                   "out": str(out), "replay": str(replay), "fallbacks": {str(s): missed.count(s) for s in game.humans}})
        return
    for p in played:
        click.echo(f"game {p.index + 1}: {p.result.winner.value} wins ({p.result.reason.value.replace('_', ' ')})")
    click.echo(f"recorded in {out}; replay: {replay}")
    limit = f"{game.decision_timeout:g} s" if game.decision_timeout else "no limit"
    click.echo(f"people's seats {', '.join(map(str, game.humans))}: {len(missed)} answers by the fallback (no "
               f"answer in {limit})")


def _opened(out: Path, config: dict, logged: contextlib.ExitStack) -> None:
    """The table listens: OUT's run record (run.json: command serve, the table's config) and its run.log."""
    from avalon_agents.records.run_record import write_run_record

    write_run_record(out, "serve", out.name, config)
    logged.enter_context(logs.run_log(out))


async def _serve(game, out: Path, host: str, port: int, lobby: bool, linger: float, as_json: bool,
                 opened: Callable[[], object]):
    from avalon_agents.table.serve import serve_table

    def ready(table, address) -> None:
        opened()
        seats = {seat: address.url(table.seat_path(seat)) for seat in game.humans}
        if as_json:
            echo_json({"seats": {str(s): url for s, url in seats.items()}, "watch": address.url(table.watch_path())})
        else:
            for seat, url in seats.items():
                click.echo(f"Player {seat}: {url}")
            click.echo(f"Spectators: {address.url(table.watch_path())}")
        start = "once every person has opened their page" if lobby else "now"
        click.echo(f"the table is open: the first game starts {start}; the table closes {linger:g} s after the last "
                   "(Ctrl-C stops it)", err=True)
        sys.stdout.flush()

    try:
        return await serve_table(game, out, host=host, port=port, ready=ready, linger=linger, lobby=lobby)
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            field = "port" if exc.errno in (errno.EADDRINUSE, errno.EACCES) else "host"
            why = os.strerror(exc.errno) if exc.errno > 0 else exc.strerror  # not asyncio's long wording
            raise UserError(f"{field}: cannot listen on {host}:{port} ({why[:1].lower()}{why[1:]})") from None
        raise


def table_seats(seats: str, humans: str, players: int) -> list[str]:
    """The kind at each seat: `--seats` (one kind, or one per seat) with `human` at each of `--human`'s seats.
    Raises UserError naming the bad option."""
    from avalon_agents.agents.registry import AGENT_KINDS

    try:
        taken = sorted({int(part) for part in humans.split(",") if part.strip()})
    except ValueError:
        raise UserError(f"human: seats as a comma list of numbers, e.g. 1,3; not {humans!r}") from None
    if not taken or not all(1 <= s <= players for s in taken):
        raise UserError(f"human: seats from 1 to {players}, e.g. 1,3; not {humans!r}")
    kinds = [k.strip() for k in seats.split(",")]
    if len(kinds) == 1:
        kinds *= players
    if len(kinds) != players:
        raise UserError(f"seats: {len(kinds)} kinds given for {players} players (give one, or one per seat)")
    for seat, kind in enumerate(kinds, 1):
        if kind == "human" and seat not in taken:
            raise UserError(f"seats: seat {seat} is 'human' but not in --human")
        if kind not in AGENT_KINDS:
            raise UserError(f"seats: unknown seat kind {kind!r} (choose from {', '.join(sorted(AGENT_KINDS))})")
        if kind == "attacker":
            raise UserError("seats: an 'attacker' seat needs its options in a config (`avalon redteam`)")
    return ["human" if seat in taken else kind for seat, kind in enumerate(kinds, 1)]


def _missed(records, game) -> list[int]:
    """The people's seats, once per answer their fallback made."""
    from avalon_agents.records.trace import SeatFault

    return [r.seat for r in records if isinstance(r, SeatFault) and r.seat in game.humans and r.problem == "fallback"]
