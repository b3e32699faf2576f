"""`avalon seat-test`: a program (or a server) plays a few games as a seat among rule bots; every protocol error it
made."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import click

from avalon_agents.cli.base import (
    GAMES,
    SEEDS,
    UserError,
    cli,
    echo_json,
    json_option,
    lady_option,
    one_line_errors,
    plugin_option,
)
from avalon_agents.cli.play import rules_of, rules_options

if TYPE_CHECKING:
    from avalon_agents.core.rules import RuleSet

EXIT_FAULTS = 1


@cli.command("seat-test", context_settings={"ignore_unknown_options": True})
@click.option("--games", default=3, show_default=True, type=GAMES,
              help="How many games (game i seats the program at seat i, counted round the table).")
@rules_options
@lady_option
@click.option("--seed", default=0, show_default=True, type=SEEDS, help="Seed of the first game; game i uses seed+i.")
@click.option("--timeout", default=10.0, show_default=True, type=click.FloatRange(0, 3600, min_open=True),
              help="Seconds the program (or server) may take to answer one request.")
@click.option("--url", default=None, metavar="URL",
              help="Test the server at this URL (a seat over HTTP: docs/seats.md, 'Programs over HTTP') instead of "
                   "a program given after --.")
@json_option
@plugin_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def seat_test(games: int, preset: str, players: int | None, role_set: str | None, assassin: str | None, lady: bool,
              seed: int, timeout: float, url: str | None, as_json: bool, command: tuple[str, ...]) -> None:
    """Test a program that plays a seat (the protocol of docs/seats.md), given after -- or as a server's --url:
    it plays GAMES games, one seat among rule bots, by the rules --rules, --players, --roles and --assassin name
    (as in avalon play), and every protocol error it made is printed (bad JSON, an answer to an unknown id, an
    illegal answer, a timeout, a crash) with the fallbacks they cost.

    \b
    Exit codes: 0 no protocol error; 1 the program made protocol errors (each printed); 2 a mistake in the
    input (one line naming it).

    \b
    Examples:
      avalon seat-test -- python3 experiments/bots/random_bot.py
      avalon seat-test --url http://127.0.0.1:8000/
      avalon seat-test --roles merlin,loyal_servant,loyal_servant,morgana,mordred --assassin mordred -- ./bot
    """
    from avalon_agents.agents.external import ExternalAgent

    if bool(command) == (url is not None):
        raise UserError("command or url: give the program after -- (avalon seat-test -- python3 bot.py) or its "
                        "server with --url URL" + (", not both" if command else ""))
    options = {"command": list(command)} if command else {"url": url}
    with one_line_errors():
        ExternalAgent.check_options({**options, "timeout": timeout})
        rules = rules_of(preset, players, role_set, assassin, lady)
    faults = asyncio.run(_play(options, rules, games, seed, timeout))
    errors = [f for _, f in faults if f.problem != "fallback"]
    if as_json:
        echo_json({"games": games, "errors": len(errors), "fallbacks": len(faults) - len(errors),
                   "faults": [{"game": game, **fault.model_dump(exclude={"type"})} for game, fault in faults]})
        sys.exit(EXIT_FAULTS if errors else 0)
    for game, fault in faults:
        where = f" quest {fault.quest}.{fault.attempt} {fault.kind}" if fault.kind else ""
        click.echo(f"game {game}, seat {fault.seat}{where}: {fault.problem}: {fault.detail}")
    fallbacks = len(faults) - len(errors)
    if errors:
        click.echo(f"{len(errors)} protocol errors, {fallbacks} fallbacks in {games} games", err=True)
        sys.exit(EXIT_FAULTS)
    click.echo(f"no protocol error in {games} games")


async def _play(options: dict, rules: RuleSet, games: int, seed: int, timeout: float) -> list:
    from avalon_agents.host.play import AgentSetup, play_one
    from avalon_agents.records.trace import SeatFault

    program, bots = AgentSetup(options={**options, "timeout": timeout}), AgentSetup()
    found = []
    for i in range(games):
        seat = i % rules.players + 1
        kinds = ["external" if s == seat else "rulebot" for s in rules.seats]
        setups = [program if s == seat else bots for s in rules.seats]
        host = await play_one(rules, kinds, seed + i, setups=setups)
        found += [(i + 1, r) for r in host.tracer.records if isinstance(r, SeatFault)]
    return found
