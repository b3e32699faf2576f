"""`avalon extract` (one answer through the extractor) and `avalon bench` (engine speed, calls and tokens)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from avalon_agents.cli.base import (
    GAMES,
    PLAYERS,
    SEATS,
    SEEDS,
    cli,
    echo_json,
    json_option,
    logging_options,
    one_line_errors,
    plugin_option,
)
from avalon_agents.core.rules import MAX_PLAYERS, MIN_PLAYERS, make_rules
from avalon_agents.decisions.kinds import KINDS

ALIASES = {"team": "propose"}
"""Older names `avalon extract --kind` still takes."""


@cli.command()
@click.option("--kind", type=click.Choice([n for n, spec in KINDS.items() if spec.key is not None] + list(ALIASES)),
              required=True,
              help="What the text answers: a decision kind (decisions/kinds.py); team is propose.")
@click.option("--text", required=True, help="The player's free-text answer.")
@click.option("--team-size", default=2, show_default=True, type=SEATS, help="Team size (for --kind propose).")
@click.option("--players", default=6, show_default=True, type=PLAYERS, help="Players in the game.")
@click.option("--seat", default=1, show_default=True, type=SEATS, help="The speaker's seat.")
@click.option("--evil", is_flag=True, help="The speaker is evil (may fail a quest).")
@click.option("--model", "model_spec", default="none", show_default=True,
              help="Model of the LLM extractor stage, or 'none' for the rule stage and fallback only.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@logging_options
def extract(kind: str, text: str, team_size: int, players: int, seat: int, evil: bool, model_spec: str,
            as_json: bool) -> None:
    """Turn a free-text answer into an action, as the host would (no re-asking).

    \b
    Example:
      avalon extract --kind propose --team-size 3 --text "Player 2, myself and Player 10" --players 10 --seat 4
      avalon extract --kind lady --text "I'll look at Player 3" --players 7 --seat 1
    """
    from avalon_agents.extract_check import run_extract

    with one_line_errors():
        if not 1 <= seat <= players:
            raise ValueError(f"seat: {seat} is not a seat of a {players}-player game")
        make_rules("official", players)
        out = asyncio.run(run_extract(ALIASES.get(kind, kind), text, team_size=team_size, players=players, seat=seat,
                                      evil=evil, model_spec=None if model_spec == "none" else model_spec))
    click.echo(json.dumps(out) if as_json else f"{out['action']}  (method: {out['method']}, valid: {out['valid']})")



@cli.group()
def bench() -> None:
    """Throughput benchmarks (they print figures)."""


@bench.command("engine")
@click.option("--games", default=1000, show_default=True, type=GAMES, help="Games to play in each measurement.")
@click.option("--rules", "preset", default="official", show_default=True, help="Rule preset.")
@click.option("--players", default=6, show_default=True, type=PLAYERS, help=f"{MIN_PLAYERS} to {MAX_PLAYERS}.")
@click.option("--seats", default="rulebot", show_default=True, help="Bot kind on every seat (rulebot, random).")
@json_option
@logging_options
def bench_engine_cmd(games: int, preset: str, players: int, seats: str, as_json: bool) -> None:
    """Rule-bot games per second on one core, without writing files.

    Prints three figures for the same games: the engine alone (replaying the bots' recorded decisions),
    the engine with the bots deciding in a plain loop, and everything through GameHost (asyncio).
    """
    from avalon_agents.agents.registry import needs_llm, parse_seats
    from avalon_agents.bench import bench_engine

    with one_line_errors():
        rules = make_rules(preset, players)
        kind = parse_seats(seats, players)[0]
        if needs_llm(kind):
            raise ValueError(f"seats: bench engine plays bots without a model (rulebot, random), not {kind!r}")
    figures = bench_engine(rules, games, kind)
    if as_json:
        echo_json({"games": games, "seats": kind, "rules": rules.name, "players": players, **figures})
        return
    click.echo(f"{games} {kind} games, {rules.name} rules, {players} players")
    click.echo(f"engine alone:      {figures['engine_alone_games_per_s']:8.1f} games/s")
    click.echo(f"engine + bots:     {figures['engine_games_per_s']:8.1f} games/s")
    click.echo(f"through GameHost:  {figures['host_games_per_s']:8.1f} games/s")


@bench.command("cost")
@click.option("--seats", default="cognitive", show_default=True,
              help="Agent kind for every seat (cognitive, baseline, llm, ...), or a comma list, one per seat.")
@click.option("--games", default=3, show_default=True, type=GAMES, help="Games to play (experience carried forward).")
@click.option("--agent-config", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="YAML config of the cognitive agents' modules (e.g. experiments/agents/per_turn.yaml).")
@click.option("--rules", "preset", default="official", show_default=True, help="Rule preset.")
@click.option("--players", default=6, show_default=True, type=PLAYERS, help=f"{MIN_PLAYERS} to {MAX_PLAYERS}.")
@click.option("--seed", default=0, show_default=True, type=SEEDS, help="Seed of the first game.")
@click.option("--layout", type=click.Choice(["cache", "paper"]), default=None,
              help="The LLM seats' prompt_layout (default: each agent's own, cache).")
@click.option("--price-model", default="gpt-4o-mini", show_default=True,
              help="Whose list prices the dollars are quoted at (avalon_agents/data/prices.yaml).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@plugin_option
@logging_options
def bench_cost_cmd(seats: str, games: int, agent_config: Path | None, preset: str, players: int, seed: int,
                   layout: str | None, price_model: str, as_json: bool) -> None:
    """LLM calls and tokens per game, played with the scripted model (no model needed, a few seconds a game).

    Tokens are counted with tiktoken's cl100k_base encoding (offline copy) over every message sent and every
    reply, split per module or purpose. `avalon run --check CONFIG` turns such figures into dollars at the
    models' prices.

    \b
    Examples:
      avalon bench cost --seats cognitive --games 5 --json
      avalon bench cost --seats cognitive --agent-config experiments/agents/per_turn.yaml
      avalon bench cost --seats baseline --layout paper
    """
    from avalon_agents.agents.registry import parse_seats
    from avalon_agents.bench import bench_cost
    from avalon_agents.modules import load_agent_config

    with one_line_errors():
        rules = make_rules(preset, players)
        kinds = parse_seats(seats, players)
        config = load_agent_config(agent_config) if agent_config else None
    figures = bench_cost(rules, kinds, games, seed, config, price_model=price_model,
                         options={"prompt_layout": layout} if layout else None)
    if as_json:
        click.echo(json.dumps(figures))
        return
    click.echo(f"{games} games, seats {','.join(kinds)}; tokens: {figures['tokenizer']}; cacheable: the input a "
               "prompt cache serves (each call against its seat's earlier prompts, from 1,024 tokens in steps of 128)")
    head = f"{'calls':>8}{'input tokens':>15}{'cacheable':>11}{'output tokens':>15}"
    for title, table in (("per game", figures["per_module"]), ("per agent kind", figures["per_kind"])):
        click.echo(f"{title:<28}{head}")
        for name, row in table.items():
            click.echo(f"  {name:<26}{row['calls_per_game']:>8.1f}{row['input_tokens_per_game']:>15,}"
                       f"{row['cacheable_share']:>11.0%}{row['output_tokens_per_game']:>15,}")
    click.echo(f"{'total':<28}{figures['calls_per_game']:>8.1f}{figures['input_tokens_per_game']:>15,}"
               f"{figures['cacheable_share']:>11.0%}{figures['output_tokens_per_game']:>15,}")
    usd = figures["list_price"]
    if usd["usd_per_game"] is None:
        click.echo(f"dollars: no price for {usd['model']}")
    else:
        click.echo(f"dollars per game at {usd['model']}'s list prices: ${usd['usd_per_game']:,.4f}; with the "
                   f"cacheable input at its cached-input price: ${usd['usd_per_game_cached']:,.4f}")


@cli.command("check-plugin")
@click.argument("plugin", metavar="FILE_OR_MODULE")
@click.option("--provider-model", default="test", show_default=True,
              help="The model name a registered provider is checked with (one game: NAME:MODEL).")
@click.option("--timeout", type=click.FloatRange(min=1), default=60, show_default=True,
              help="Seconds each step (loading the plugin, each item's check) may take before it is stopped and "
                   "fails as hung.")
@json_option
@logging_options
def check_plugin(plugin: str, provider_model: str, timeout: float, as_json: bool) -> None:
    """Check your plugin: load it, then exercise everything it registered through scripted games and the code
    that reads it, one line per item. The plugin's code runs, with your rights (it can read, write and send what
    you can): check only code you would run yourself.

    Each step runs in a child process of its own, stopped after --timeout seconds: loading the plugin, then each
    item's check. A step that hangs, exits, or leaves a thread running fails, naming its item (or the plugin), and
    so does a plugin that replaces the framework's own code (a function or class of avalon_agents, such as
    AvalonEngine.submit, or a registry's built-in item).

    \b
    What is checked, by what the plugin registered:
      module         chosen for its slot in a cognitive seat: plays without raising, writes its slot
      slot           its default module runs and its text reaches a later module's prompt
      agent kind     two seats of it in scripted games: every answer legal, nothing raised
      provider       one game of a vanilla LLM seat on NAME:MODEL (--provider-model): no call fails
      judge          its prompt loads; an answer with each of its labels, shaped by its schema, parses back
      metric         on a scripted run: a table with a `value` column, no value NaN
      decision kind  random, fallback, legal answers, words and data on a request of its kind
      rules preset   a RuleSet for each player count it takes, and random games under it end
    Anything else (importers, attacks, studies) fails as not checked: nothing here exercises it.

    Exit codes: 0 every item passed; 1 an item failed (each failing item is named); 2 the plugin cannot be loaded.

    \b
    Example:
      avalon check-plugin my_modules.py --json
    """
    from avalon_agents import testing

    with one_line_errors():
        found = testing.check_plugin(plugin, timeout=timeout, provider_model=provider_model)
    failed = [f for f in found if not f.ok]
    if as_json:
        echo_json({"plugin": plugin, "items": testing.as_json(found), "failed": [f"{f.what} {f.name}" for f in failed]})
    else:
        for f in found:
            click.echo(f.line())
        if not found:
            click.echo(f"{plugin}: registered nothing")
        elif failed:
            click.echo(f"{len(failed)} of {len(found)} failed: " + ", ".join(f"{f.what} {f.name}" for f in failed))
        else:
            click.echo(f"all {len(found)} passed")
    if failed:
        raise SystemExit(1)
