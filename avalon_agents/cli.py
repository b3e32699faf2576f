"""The `avalon` command: play games, run benchmarks.

User mistakes (a bad option value, an unknown preset or seat kind) end with one line on stderr naming
the bad field and exit code 2; never a traceback.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import click
from loguru import logger
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from avalon_agents import logs
from avalon_agents.agents.human import InputEnded, Terminal
from avalon_agents.agents.registry import needs_llm
from avalon_agents.checks import MAX_GAMES, MAX_PAIRS, SEED_MAX
from avalon_agents.core.actions import IllegalAction
from avalon_agents.core.rules import MAX_PLAYERS, MIN_PLAYERS, PRESETS, make_rules
from avalon_agents.errors import field_error
from avalon_agents.extract.extractor import EXTRACTOR_SETTINGS
from avalon_agents.host.play import AgentSetup, parse_seats, play_games, summarize, trace_of
from avalon_agents.llm import ClientPool, ModelSettings, ModelSpecError, ModelUnusable, check_reachable
from avalon_agents.llm.settings import parse_kwarg
from avalon_agents.modules import load_agent_config
from avalon_agents.narrate import DEFAULT_CARDS, card_sets
from avalon_agents.plugins import load_plugins
from avalon_agents.records import LLMCall, usage
from avalon_agents.records.health import EXIT_UNHEALTHY, HealthLimits, health_line
from avalon_agents.records.transcript import transcript

USER_ERRORS = (ValueError, ValidationError, IllegalAction)
GAMES = click.IntRange(1, MAX_GAMES)
PAIRS = click.IntRange(1, MAX_PAIRS)
SEEDS = click.IntRange(0, SEED_MAX)
PLAYERS = click.IntRange(MIN_PLAYERS, MAX_PLAYERS)
SEATS = click.IntRange(1, MAX_PLAYERS)
IN_FLIGHT = click.IntRange(1, 1024)
AT_LEAST_1 = click.IntRange(min=1)


class UserError(click.ClickException):
    """A mistake in the user's input: printed as one line, exit code 2."""

    exit_code = 2


class RunUnhealthy(click.ClickException):
    """The run's model was unusable, or its results are over the health thresholds: one line, exit code 3."""

    exit_code = EXIT_UNHEALTHY


class OverBudget(click.ClickException):
    """The run stopped before a game that would take it over --budget-usd: one line, exit code 4."""

    exit_code = 4


def _one_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return field_error(exc)
    return str(exc).splitlines()[0]


def logging_options(command: Callable) -> Callable:
    """-v/--verbose and -q/--quiet: how much of the diagnostic log reaches stderr."""

    @click.option("-v", "--verbose", count=True, help="Show more of the diagnostic log (-vv: everything).")
    @click.option("-q", "--quiet", is_flag=True, help="Show only errors.")
    @functools.wraps(command)
    def wrapper(*args, verbose: int, quiet: bool, **kwargs):
        logs.configure(-1 if quiet else verbose)
        return command(*args, **kwargs)

    return wrapper


def plugin_option(command: Callable) -> Callable:
    """--plugin (repeatable): import the user's code (agent kinds, modules, providers) before anything else."""

    @click.option("--plugin", "plugins", multiple=True, metavar="PATH_OR_MODULE",
                  help="Import your own code first (a .py file or a module name): its registered agent kinds, "
                       "modules and model providers become usable. Repeatable.")
    @functools.wraps(command)
    def wrapper(*args, plugins: tuple[str, ...], **kwargs):
        try:
            load_plugins(plugins)
        except ValueError as exc:
            raise UserError(_one_line(exc)) from None
        return command(*args, **kwargs)

    return wrapper


def runner_options(command: Callable) -> Callable:
    """--max-games, --backend and --address: how the experiment runner plays (`run`, `tournament`)."""
    for option in reversed([
        click.option("--max-games", type=AT_LEAST_1, default=None,
                     help="Play at most this many games now (a smoke run)."),
        click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="local: series as asyncio tasks in this process; ray: series as Ray tasks."),
        click.option("--address", default=None, help="Ray cluster address (default: start a local Ray)."),
        click.option("--prices", "prices_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="USD per 1M tokens, laid over the shipped table: a YAML file of MODEL: {input: ..., "
                          "output: ..., cached_input: ...} (docs/providers.md)."),
        click.option("--budget-usd", type=float, default=None,
                     help="Start no game that would take the run's cost (its finished games included) over this "
                          "many dollars: the run stops with exit code 4, finished games kept; rerun with a larger "
                          "budget to go on."),
    ]):
        command = option(command)
    return command


def model_options(command: Callable) -> Callable:
    """The model settings on the command line; each given option sets one field of a ModelSettings."""
    options = [
        click.option("--model", "spec", default=None, metavar="SPEC",
                     help="Model spec: local:smollm2, openai:MODEL, openai-compatible:MODEL@URL, scripted, or any "
                          "provider:model langchain's init_chat_model knows (default: openai:gpt-4o-mini if "
                          "OPENAI_API_KEY is set, else local:smollm2)."),
        click.option("--temperature", type=float, default=None, help="Sampling temperature (default 0.3)."),
        click.option("--max-tokens", type=int, default=None, help="Cap on each answer (default 256; 96 local)."),
        click.option("--timeout", type=float, default=None, help="Seconds per request (default 120; 900 local)."),
        click.option("--retries", type=int, default=None, help="Extra attempts after a failed call (default 2)."),
        click.option("--rpm", type=float, default=None,
                     help="The endpoint's requests per minute (default: learned from the provider's headers and "
                          "429s). Calls are paced under it; a 429 is waited out, never a failed call."),
        click.option("--tpm", type=float, default=None,
                     help="The endpoint's tokens per minute (default: learned, as --rpm)."),
        click.option("--rps", "requests_per_second", type=float, default=None,
                     help="The endpoint's requests per second (--rpm / 60)."),
        click.option("--model-kwarg", "kwargs", multiple=True, metavar="KEY=VALUE",
                     help="Extra chat-model argument (seed=1, top_p=0.9, reasoning_effort=low). Repeatable."),
        click.option("--api-key-env", default=None, metavar="VARIABLE",
                     help="The environment variable holding the model's key (openai: default OPENAI_API_KEY; an "
                          "openai-compatible server gets a key only this way). Keys never go into files."),
        click.option("--key-over-http", is_flag=True, default=None,
                     help="Allow sending that key over plain http to another machine (refused otherwise)."),
    ]

    @functools.wraps(command)
    def wrapper(*args, spec, temperature, max_tokens, timeout, retries, rpm, tpm, requests_per_second, kwargs,
                api_key_env, key_over_http, **rest):
        try:
            given = {"spec": spec, "temperature": temperature, "max_tokens": max_tokens, "timeout": timeout,
                     "retries": retries, "rpm": rpm, "tpm": tpm, "requests_per_second": requests_per_second,
                     "api_key_env": api_key_env, "key_over_http": key_over_http}
            settings = ModelSettings(**{k: v for k, v in given.items() if v is not None},
                                     kwargs=dict(parse_kwarg(k) for k in kwargs))
        except USER_ERRORS as exc:
            raise UserError(_one_line(exc)) from None
        return command(*args, settings=settings, **rest)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="avalon_agents")
def cli() -> None:
    """avalon_agents: LLM agents playing The Resistance: Avalon.

    \b
    avalon play            play games between rule bots, random agents and LLM agents (--human: or you)
    avalon run             run an experiment config (variants x series x games), resumable
    avalon analyze         metrics, figures and a report of a run
    avalon tournament      entrants against each other in every role; openskill ratings, a leaderboard
    avalon redteam         injected instructions: paired games with and without an attacker's wrapper
    avalon bias            order effects: paired games that differ in one listing order or the seating
    avalon replay          any recorded game as a self-contained HTML page (a timeline, a seat filter)
    avalon extract         turn one free-text answer into an action, as the host does
    avalon import          human games (avalongame.online logs, Avalon-NLU) as run directories
    avalon calibrate       the judges against human labels; avalon probe-humans: belief probes on them
    avalon bench engine    measure engine throughput
    avalon bench cost      LLM calls and tokens per game, per module (scripted model)

    \b
    Exit codes: 0 done; 2 a mistake in the input (one line naming it); 3 the run is not a result (its model
    was unusable, a game was aborted, or a variant is over its health limits); 130 interrupted.
    """


@cli.command()
@click.option("--rules", "preset", default="official", show_default=True,
              help=f"Rule preset: {' or '.join(PRESETS)} (see README, 'Rules').")
@click.option("--players", default=None, type=PLAYERS,
              help=f"{MIN_PLAYERS} to {MAX_PLAYERS} (default: as many as --roles lists, else 6).")
@click.option("--roles", "role_set", default=None, metavar="ROLE,ROLE,...",
              help="The role set, one role per seat (any case, underscores or spaces): merlin, percival, "
                   "loyal_servant, morgana, mordred, oberon, minion, assassin; with the official good/evil split. "
                   "Default: the preset's roles.")
@click.option("--assassin", default=None, metavar="ROLE",
              help="The evil role that carries the assassination (default: the Assassin; a set without one must "
                   "name it). No Merlin: no assassination.")
@click.option("--seats", default="rulebot", show_default=True,
              help="Agent kind for every seat (rulebot, random, llm, cognitive, baseline, or a plugin's), or a "
                   "comma list, one per seat.")
@click.option("--human", type=int, default=None, metavar="SEAT",
              help="You take this seat: you see what it may see, and type each speech and decision as one line "
                   "on standard input (answers can be piped in). One game only.")
@click.option("--seed", default=0, show_default=True, type=SEEDS, help="Seed of the first game; game i uses seed+i.")
@click.option("--games", default=1, show_default=True, type=GAMES, help="How many games to play.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write each game's run directory (events.jsonl, trace.jsonl, meta.json, result.json) and run.log "
                   "under this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON summary object instead of text.")
@model_options
@click.option("--extractor-model", default=None, help="Model of the LLM extractor (default: the seats' model, at "
              "temperature 0); 'none' skips the LLM stage.")
@click.option("--constrained/--unconstrained", default=True, show_default=True,
              help="Decisions of llm seats use JSON-schema constrained output.")
@click.option("--agent-config", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="YAML module config of the cognitive seats (modules on/off, options, model settings; see README).")
@click.option("--cards", type=click.Choice(card_sets()), default=DEFAULT_CARDS, show_default=True,
              help="Role cards of the LLM seats: the paper's goals and initial strategies, or our improved ones.")
@click.option("--experience", "experience_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep what cognitive seats learn in a chromadb store in this folder, across games and runs "
                   "(default: in memory, carried from game to game of this batch only).")
@click.option("--probes", is_flag=True,
              help="Belief probes: after each quest, ask every LLM seat privately (its own model, outside the "
                   "game) who it thinks is Merlin and how likely each other player is evil; the answers go to "
                   "trace.jsonl as 'probe' records, never to the game.")
@click.option("--order", "order_modes", multiple=True, metavar="LIST=MODE",
              help="How the prompts list a LIST (players, options, speeches): fixed (the default), shuffled (from "
                   "each game's seed) or reversed, e.g. --order options=reversed. Repeatable.")
@plugin_option
@logging_options
def play(preset: str, players: int | None, role_set: str | None, assassin: str | None, seats: str,
         human: int | None, seed: int, games: int, out: Path | None, as_json: bool,
         settings: ModelSettings, extractor_model: str | None, constrained: bool, agent_config: Path | None,
         cards: str, experience_dir: Path | None, probes: bool, order_modes: tuple[str, ...]) -> None:
    """Play Avalon games and print a transcript (one game) or a summary (many).

    \b
    Examples:
      avalon play                                  one rule-bot game, transcript
      avalon play --rules paper --players 7        the paper's rule variant, 7 players
      avalon play --roles merlin,percival,loyal_servant,loyal_servant,morgana,mordred,minion --assassin mordred
      avalon play --seats rulebot,random,rulebot,random,rulebot,random
      avalon play --games 1000 --json              win rates and end reasons as JSON
      avalon play --seats llm                      vanilla LLM agents on the embedded local model
      avalon play --seats cognitive --model scripted --agent-config my_agent.yaml --plugin my_modules.py
      avalon play --seats cognitive,baseline,cognitive,baseline,cognitive,baseline --model scripted
      avalon play --seats llm,rulebot,rulebot,rulebot,rulebot,rulebot --model openai:gpt-4o-mini
      avalon play --seats llm --model openai-compatible:qwen2.5@http://localhost:8000/v1 --temperature 0.7
      avalon play --seats llm --model scripted --probes --out runs/probed
      avalon play --human 3 --seats rulebot        you play seat 3 against rule bots
      avalon play --seats llm --model scripted --order options=reversed --order players=shuffled
    """
    try:
        if games < 1:
            raise ValueError(f"games: must be at least 1, got {games}")
        rules = make_rules(preset, players, role_set.split(",") if role_set else None, assassin)
        players = rules.players
        order = parse_order(order_modes, players)
        kinds = parse_seats(seats, players)
        if human is not None:
            kinds = take_seat(kinds, human, games)
        setup = build_setup(kinds, settings.model_copy(update={"constrained": constrained}), extractor_model)
        setup.cards = cards
        if human is not None:
            setup.terminal = Terminal(sys.stdin, sys.stdout)
        if agent_config is not None:
            setup.agent_config = load_agent_config(agent_config)
        if experience_dir is not None:
            from avalon_agents.stores.experience import ExperienceStore

            setup.experience = ExperienceStore(experience_dir)
            setup.experience_dir = experience_dir
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    except OSError as exc:
        raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None

    err = Console(stderr=True)
    progress = Progress(TextColumn("games"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                        console=err, disable=games == 1, transient=True)
    last = {}
    ledger: list = []  # trace records without their texts, for the usage figures
    with progress, logs.run_log(out) if out else nullcontext():
        task = progress.add_task("games", total=games)

        def on_game(i, host) -> None:
            last["host"] = host
            # the usage figures need no texts: a batch of many games keeps only what it counts
            ledger.extend(r.model_copy(update={"messages": (), "reply": None}) if isinstance(r, LLMCall) else r
                          for r in trace_of(host))
            progress.advance(task)

        try:
            results = asyncio.run(play_games(rules, kinds, seed, games, out, on_game, setup, probes, order))
        except (ModelSpecError, InputEnded) as exc:
            raise UserError(_one_line(exc)) from None
        except ModelUnusable as exc:
            raise RunUnhealthy(f"{_one_line(exc)} (the game stopped; nothing was counted)") from None
        except OSError as exc:
            raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None

    summary = {"rules": rules.name, "players": players, "seats": kinds, "seed": seed, **summarize(results)}
    if order:
        summary["order"] = order
    problems: list[str] = []
    if any(needs_llm(k) for k in kinds):
        summary["model"] = setup.clients.resolve(setup.settings).spec
        summary["usage"] = usage(ledger)
        problems = HealthLimits().problems(summary["usage"])
        summary["health"] = {"healthy": not problems, "problems": problems}
    if out:
        summary["out"] = str(out)
    if as_json:
        click.echo(json.dumps(summary))
    elif human is not None:
        pass  # the person has seen the game as the seat saw it; the transcript would show what it may not see
    elif games == 1:
        for line in transcript(last["host"].engine.events):
            click.echo(line)
    else:
        _print_summary(summary)
    if "usage" in summary and not as_json:
        _print_usage(summary["usage"], games)
    if problems:
        raise RunUnhealthy("unhealthy run, not a result: " + "; ".join(problems))


def take_seat(kinds: list[str], seat: int, games: int) -> list[str]:
    """The seat kinds with a person at `seat`. Raises ValueError naming `human`."""
    if not 1 <= seat <= len(kinds):
        raise ValueError(f"human: seat {seat} is not a seat of a {len(kinds)}-player game")
    if games != 1:
        raise ValueError(f"human: a person plays one game at a time (--games 1), not {games}")
    return [*kinds[:seat - 1], "human", *kinds[seat:]]


def build_setup(kinds: list[str], settings: ModelSettings, extractor_spec: str | None) -> AgentSetup:
    """The seats' setup for `avalon play`: one client pool, the agents' settings, the extractor's."""
    setup = AgentSetup(clients=ClientPool(), settings=settings)
    if not any(needs_llm(k) for k in kinds):
        return setup
    if extractor_spec == "none":
        setup.extractor = None
    elif extractor_spec:
        setup.extractor = EXTRACTOR_SETTINGS.model_copy(update={"spec": extractor_spec})
    for wanted in (settings, setup.extractor_settings()):
        if wanted is not None:  # fail early, in one line: a bad spec, a missing key or package, no server
            check_reachable(setup.clients.resolve(wanted))
            setup.clients.get(wanted)
    return setup


def _print_usage(u: dict, games: int) -> None:
    vrr = u["valid_response_rate"]
    click.echo(f"LLM calls: {u['llm_calls']} ({u['llm_calls'] / games:.0f} per game), outcomes {u['outcomes']}, "
               f"{u['seconds_per_call'] or 0:.2f} s per call")
    click.echo(f"tokens: {u['input_tokens']} in, {u['output_tokens']} out")
    click.echo(f"valid response rate: {'n/a' if vrr is None else f'{vrr:.1%}'} of {u['decisions']} decisions "
               f"(read by {u['methods']})")
    click.echo(health_line(u))



def parse_order(items: tuple[str, ...], players: int) -> dict[str, str] | None:
    """`--order LIST=MODE` options as Orders.make's modes (None: all fixed). Raises ValueError naming the bad
    one."""
    from avalon_agents.orders import Orders

    modes = {}
    for item in items:
        name, sep, mode = item.partition("=")
        if not sep:
            raise ValueError(f"order: {item!r} is not LIST=MODE (e.g. options=reversed)")
        modes[name.strip()] = mode.strip()
    if not modes:
        return None
    Orders.make(0, players, modes=modes)  # checks the names and modes
    return modes

def _print_summary(summary: dict) -> None:
    console = Console()
    g = summary["games"]
    console.print(f"{g} games, {summary['rules']} rules, {summary['players']} players")
    console.print(f"good wins {summary['good_wins']} ({summary['good_wins'] / g:.1%}), "
                  f"evil wins {summary['evil_wins']} ({summary['evil_wins'] / g:.1%})")
    for reason, count in summary["reasons"].items():
        console.print(f"  {reason:<22} {count:>6} ({count / g:.1%})")


@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--check", is_flag=True, help="Validate the config and print the plan; play nothing.")
@model_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory (default: runs/<experiment name>).")
@runner_options
@click.option("--json", "as_json", is_flag=True, help="Print the results (per variant and side: games, wins, "
              "rate, interval, health) as one JSON object instead of the tables.")
@plugin_option
@logging_options
def run(config: Path, check: bool, settings: ModelSettings, out: Path | None, max_games: int | None, backend: str,
        address: str | None, prices_file: Path | None, budget_usd: float | None, as_json: bool) -> None:
    """Run an experiment: every variant x series x game of CONFIG, resumable.

    Rerunning the same command skips finished games and restarts an unfinished one from its start, answering
    again from the records the calls it had already paid for; a killed run loses no finished game. --check
    prints the plan: games, calls, tokens, dollars and the least time the models' rate limits allow. At the
    end it prints win rates per variant and side with 95% Wilson CIs, mean calls and tokens per game, and each
    variant's health and cost (also in OUT/cost.csv). The model options given here (--model, --temperature,
    ...) are laid over every agent's and module's settings (--model scripted: a smoke run; --model
    replay:RUN_DIR: every answer from a finished run's records). Rate limits are learned from the provider;
    a 429 is waited out, never a failed call. Diagnostics go to OUT/run.log.

    \b
    Examples:
      avalon run experiments/quickstart.yaml
      avalon run --check experiments/paper/table2.yaml
      avalon run experiments/paper/table7.yaml --model openai:gpt-4o-mini --model-kwarg seed=1
      avalon run experiments/quickstart.yaml --model scripted --max-games 2 --out /tmp/smoke
      avalon run experiments/paper/table2.yaml --model openai:gpt-4o-mini --budget-usd 5
      avalon run my_ablation.yaml --plugin my_modules.py
      avalon run experiments/paper/table8.yaml --backend ray --address ray://head:10001
    """
    from avalon_agents.experiments import load_experiments

    variants, out, override, spend = _prepare(load_experiments, config, settings, out, max_games, check, as_json,
                                              prices_file, budget_usd, backend)
    if check:
        return
    aborted = _play(variants, out, override, max_games, backend, address, config, spend.budget)
    _report_run(out, variants, aborted, as_json=as_json, prices=spend.prices)
    spend.stop_if_over()


@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--check", is_flag=True, help="Validate the config and print the plan; play nothing.")
@model_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory (default: runs/<tournament name>); the leaderboard goes to OUT/tournament/.")
@runner_options
@plugin_option
@logging_options
def tournament(config: Path, check: bool, settings: ModelSettings, out: Path | None, max_games: int | None,
               backend: str, address: str | None, prices_file: Path | None, budget_usd: float | None) -> None:
    """Play a tournament: CONFIG's entrants against each other, every entrant in every role equally often,
    then rate them (openskill) and print the leaderboard.

    Resumable like `avalon run` (same run directory, lock and resume rules). Writes OUT/tournament/:
    leaderboard.csv, ratings.csv, win_rates.csv, head_to_head.csv, ratings.png and leaderboard.md. Each game
    is an ordinary game directory (`avalon analyze OUT` works) whose seating.json says which entrant sat where.
    See docs/tournaments.md.

    \b
    Examples:
      avalon tournament experiments/tournament_bots.yaml
      avalon tournament my_tournament.yaml --max-games 20 --out /tmp/smoke
    """
    from avalon_agents.analysis.leaderboard import format_leaderboard, leaderboard, write
    from avalon_agents.analysis.load import load_run
    from avalon_agents.experiments.results import provenance, variant_health
    from avalon_agents.experiments.tournament import load_tournament

    variants, out, override, spend = _prepare(load_tournament, config, settings, out, max_games, check, False,
                                              prices_file, budget_usd, backend)
    if check:
        return
    aborted = _play(variants, out, override, max_games, backend, address, config, spend.budget)
    try:
        board = leaderboard(load_run(out))
    except FileNotFoundError:
        raise UserError(f"out: no finished game in {out} yet") from None
    origin = provenance(out)
    found = variant_health(out, variants)
    health = [line + ("  UNHEALTHY: " + "; ".join(problems) if problems else "") for line, problems in found.values()]
    unhealthy = [name for name, (_, problems) in found.items() if problems]
    try:
        paths = write(board, out / "tournament", next(iter(variants.values())).name, origin, "; ".join(health))
    except OSError as exc:
        raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None
    click.echo(origin)
    click.echo(format_leaderboard(board))
    for line in health:
        click.echo(line)
    click.echo(f"leaderboard: {paths['markdown']} (CSV, ratings.png beside it)")
    spend.stop_if_over()
    if unhealthy:
        raise RunUnhealthy("unhealthy tournament, not a result (see the health line above)")
    if aborted:
        raise RunUnhealthy(f"{len(aborted)} game(s) aborted (no progress, or too many of their calls failed), not "
                           "counted; rerun to replay them")


def _paired_study(load: Callable[[], tuple[Any, Any]], games: int | None, settings: ModelSettings,
                  out: Path | None) -> tuple[Any, Any, ModelSettings | None, Path]:
    """What `redteam` and `bias` do before playing: load the config (`load()`: the config and what else its
    loader returns), apply `--games`, check the model, make the run directory. Returns (config, the rest,
    the model override, out); a mistake is one line, exit 2."""
    try:
        cfg, rest = load()
        if games is not None:
            if games < 1:
                raise ValueError(f"games: must be at least 1, got {games}")
            cfg = cfg.model_copy(update={"games": games})
        override = settings if settings.model_dump(exclude_defaults=True) else None
        if settings.spec:
            check_reachable(settings.spec)
        out = out or Path("runs") / cfg.name
        out.mkdir(parents=True, exist_ok=True)
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    except OSError as exc:
        raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None
    return cfg, rest, override, out


def _study_health(health: tuple[str, list[str]] | None, what: str) -> None:
    """Print a paired study's health line; exit 3 (RunUnhealthy) if it is over its limits."""
    if health is None:
        return
    line, problems = health
    click.echo(line + ("  UNHEALTHY: " + "; ".join(problems) if problems else ""))
    if problems:
        raise RunUnhealthy(f"unhealthy {what}, not a result (see the health line above)")


@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--attacks", "attack_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="A YAML file of your own attacks (the shape of avalon_agents/data/attacks.yaml); they join the run. "
                   "Repeatable.")
@click.option("--games", type=PAIRS, default=None, help="Paired games per attack (default: the config's).")
@model_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory (default: runs/NAME).")
@plugin_option
@logging_options
def redteam(config: Path, attack_files: tuple[Path, ...], games: int | None, settings: ModelSettings,
            out: Path | None) -> None:
    """Run a red-team suite: per attack, paired games from one seed with and without the attacker's wrapper.

    Prints per attack the share of pairs whose next decision (the listeners' votes or team, the assassination,
    the extractor's reading, a judge's label) moved toward the attack's goal, judged from the records, with its
    95% Wilson interval, and the forged lines found in a prompt outside the host's quotes (must be 0). Writes
    OUT/redteam.csv, OUT/pairs.csv and OUT/redteam.md (with provenance). Finished games are kept on a rerun.

    \b
    Examples:
      avalon redteam experiments/redteam.yaml --model scripted --games 2
      avalon redteam experiments/redteam.yaml --attacks my_attacks.yaml
    """
    from avalon_agents.experiments.redteam import load_redteam, run_redteam, suite_health, table_lines, write_report

    cfg, attacks, override, out = _paired_study(lambda: load_redteam(config, attack_files), games, settings, out)
    click.echo(f"red team {cfg.name}: {len(attacks)} attack(s) x {cfg.games} paired game(s), attacker seat "
               f"{cfg.attacker.seat} -> {out}")
    try:
        summary, pairs = asyncio.run(run_redteam(cfg, attacks, out, override))
    except ModelUnusable as exc:
        raise RunUnhealthy(f"{_one_line(exc)} (stopped; finished games are kept, a rerun goes on)") from None
    health = suite_health(cfg, out)
    csv, md = write_report(out, cfg, attacks, summary, pairs, config_path=config, override=override,
                           health=health[0] if health else None)
    for line in table_lines(summary):
        click.echo(line)
    click.echo(f"wrote {csv} and {md}")
    leaks = int(summary["leaks"].sum())
    if leaks:
        if health is not None:
            click.echo(health[0])
        raise RunUnhealthy(f"{leaks} forged line(s) reached a prompt unquoted (see {out / 'pairs.csv'})")
    _study_health(health, "suite")



@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--games", type=PAIRS, default=None, help="Paired games per list (default: the config's).")
@model_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory (default: runs/NAME).")
@plugin_option
@logging_options
def bias(config: Path, games: int | None, settings: ModelSettings, out: Path | None) -> None:
    """Measure order effects: per studied order, paired games from one seed that differ in that order only.

    Each pair plays a seed once with every listing order fixed and once with one list (`players`: seats in
    prose; `options`: the answers offered; `speeches`: a proposal's speeches as summarized; `seats`: which
    agent sits where, on the same deal) reversed or shuffled. Prints, per list, agent and measure (approvals,
    first-vote approvals, proposals' picks from the low seats, wins), the rate in each condition and the
    difference with its 95% interval, p-value and Benjamini-Hochberg q-value, and the games' health. Writes
    OUT/bias.csv, OUT/pairs.csv, OUT/bias.md and OUT/bias.json (with provenance). Resumable: finished games are kept; a changed config is refused. Exit 3 if unhealthy.

    \b
    Examples:
      avalon bias experiments/bias.yaml --games 100
      avalon bias experiments/bias_embedded.yaml --games 1
    """
    from avalon_agents.experiments.bias import load_bias, run_study, table_lines
    from avalon_agents.experiments.guard import ConfigChanged, RunDirInUse

    cfg, _, override, out = _paired_study(lambda: (load_bias(config), None), games, settings, out)
    total = cfg.games * (1 + len(cfg.lists))
    click.echo(f"order bias {cfg.name}: {len(cfg.lists)} list(s) ({', '.join(cfg.lists)}) {cfg.treatment} x "
               f"{cfg.games} pair(s), {total} games -> {out}")
    try:
        with logs.run_log(out), Progress(TextColumn("games"), BarColumn(), MofNCompleteColumn(),
                                         TimeRemainingColumn(), console=Console(stderr=True),
                                         transient=True) as progress:
            task = progress.add_task("games", total=total)
            found = run_study(cfg, out, override, config_path=config,
                              progress=lambda done, _: progress.update(task, completed=done))
    except (ModelSpecError, RunDirInUse, ConfigChanged) as exc:
        raise UserError(_one_line(exc)) from None
    except ModelUnusable as exc:
        raise RunUnhealthy(f"{_one_line(exc)} (stopped; finished games are kept, a rerun goes on)") from None
    except OSError as exc:
        raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None
    prov = found["provenance"]
    click.echo(f"produced by: models {', '.join(prov['models']) or 'none'}; rules {cfg.rules}; config {config} "
               f"({prov['config_sha256']}); commit {prov['commit'] or 'unknown'}; {prov['pairs']} pairs")
    for line in table_lines(found["summary"]):
        click.echo(line)
    click.echo(f"wrote {found['files'][0]} and {found['files'][1]}")
    _study_health(found["health"], "study")

class Spend:
    """A run's prices and budget, as the command line and the config set them."""

    def __init__(self, prices: Any, budget: Any | None) -> None:
        self.prices = prices
        self.budget = budget

    def stop_if_over(self) -> None:
        """Exit 4 with one line if the budget stopped the run."""
        if self.budget is not None and self.budget.stopped:
            raise OverBudget(self.budget.stopped)


def _prepare(load: Callable, config: Path, settings: ModelSettings, out: Path | None, max_games: int | None,
             check: bool, as_json: bool = False, prices_file: Path | None = None, budget_usd: float | None = None,
             backend: str = "local") -> tuple[dict, Path, ModelSettings | None, Spend]:
    """Load a config (run or tournament), check it and the run directory, print the plan: (variants, out, the
    model override, the prices and budget)."""
    from avalon_agents.experiments.plan import dollars, plan_lines, variant_models
    from avalon_agents.experiments.spend import Budget
    from avalon_agents.prices import load_prices

    try:
        variants = load(config)
        if max_games is not None and max_games < 1:
            raise ValueError(f"max-games: must be at least 1, got {max_games}")
        first = next(iter(variants.values()))
        out = out or Path("runs") / first.name
        override = settings if settings.model_dump(exclude_defaults=True) else None
        prices = load_prices(prices_file, {k: v.model_dump() for k, v in (first.prices or {}).items()})
        budget = None
        if budget_usd is not None:
            if not budget_usd > 0:  # nan too
                raise ValueError(f"budget-usd: must be more than 0, got {budget_usd:g}")
            if backend != "local":
                raise ValueError("budget-usd: the budget is kept by the local backend; leave out --backend ray")
            estimates = {}
            for name, exp in variants.items():
                usd, missing = dollars(variant_models(exp, override), prices)
                if usd is None:
                    raise ValueError(f"budget-usd: no price for {', '.join(missing)}, so no budget can be kept (give "
                                     "one with prices: in the config or --prices FILE)")
                estimates[name] = usd / exp.games
            budget = Budget(budget_usd, prices, estimates)
        if settings.spec:
            check_reachable(settings.spec)
        if not check:
            from avalon_agents.experiments.runner import preflight

            preflight(out, variants, override)
            out.mkdir(parents=True, exist_ok=True)
            if budget is not None:
                budget.count_finished(out, variants)
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    except OSError as exc:
        raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None
    for line in plan_lines(variants, out, override, prices):
        click.echo(line, err=as_json)
    if budget is not None:
        click.echo(f"budget: ${budget.limit_usd:,.2f}, ${budget.spent:,.2f} spent by the finished games", err=as_json)
    return variants, out, override, Spend(prices, budget)


def _play(variants: dict, out: Path, override: ModelSettings | None, max_games: int | None, backend: str,
          address: str | None, config: Path, budget: Any | None = None) -> list[str]:
    """Play a run's unfinished games with a progress bar (run and tournament); returns the aborted games."""
    from avalon_agents.experiments import run_experiment
    from avalon_agents.experiments.guard import ConfigChanged, RunDirInUse
    from avalon_agents.experiments.runner import finished_games, game_usage

    total = sum(exp.games for exp in variants.values())
    done = finished_games(variants, out)
    err = Console(stderr=True)
    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
               TextColumn("{task.fields[tokens]:>10,} tokens"))
    spent = {"tokens": 0}
    if backend == "ray":
        from avalon_agents.experiments.ray_backend import ClusterFailed, run_with_ray

        with Progress(*columns[:-1], console=err) as progress:
            overall = progress.add_task("all games (ray)", total=total, completed=done)
            with logs.run_log(out):
                try:
                    run_with_ray(variants, out, model=override, max_games=max_games, source=config,
                                 address=address, on_progress=lambda n: progress.update(overall, completed=n))
                except (ModelSpecError, RunDirInUse, ConfigChanged) as exc:
                    raise UserError(_one_line(exc)) from None
                except (ModelUnusable, ClusterFailed) as exc:
                    raise RunUnhealthy(f"{_one_line(exc)} (finished games are kept, a rerun goes on)") from None
        return []
    with Progress(*columns, console=err) as progress:
        overall = progress.add_task("all games", total=total, completed=done, tokens=0)
        bars: dict[str, int] = {}

        def on_game(job, n, path) -> None:
            u = game_usage(path)
            spent["tokens"] += u["input_tokens"] + u["output_tokens"]
            if job.label not in bars:
                bars[job.label] = progress.add_task(job.label, total=job.experiment.games_per_series,
                                                    completed=n - 1, tokens=0)
            progress.update(bars[job.label], completed=n, tokens=spent["tokens"])
            progress.update(overall, advance=1, tokens=spent["tokens"])

        with logs.run_log(out):
            try:
                aborted = asyncio.run(run_experiment(variants, out, model=override, max_games=max_games,
                                                     source=config, on_game=on_game, budget=budget))
            except (ModelSpecError, RunDirInUse, ConfigChanged) as exc:
                raise UserError(_one_line(exc)) from None
            except ModelUnusable as exc:
                raise RunUnhealthy(f"{_one_line(exc)} (stopped; the unfinished game is replayed on resume)") from None
            except OSError as exc:
                if exc.filename is None:  # not the file system: a connection or a timeout outside any model call
                    logger.opt(exception=exc).error("run stopped")
                    raise UserError(f"run stopped: {type(exc).__name__}: {_one_line(exc) or 'no message'} "
                                    f"(traceback in {out / 'run.log'})") from None
                raise UserError(f"out: cannot write {exc.filename} ({exc.strerror})") from None
    return aborted


def _report_run(out: Path, variants: dict, aborted: list[str] = (), as_json: bool = False,
                prices: Any | None = None) -> None:
    """The results table, each variant's health and cost beside it (cost also in OUT/cost.csv), and exit code 3
    when a variant is over its limits."""
    from avalon_agents.analysis.load import game_dirs
    from avalon_agents.experiments import format_table, results_table
    from avalon_agents.experiments.results import (
        figures_table,
        format_figures,
        provenance,
        variant_health,
        variant_usage,
    )
    from avalon_agents.experiments.spend import cost_line, cost_rows, write_cost
    from avalon_agents.prices import Prices

    table, figures = results_table(out), figures_table(out)
    usages = variant_usage(out, variants)
    health = variant_health(out, variants, usages)
    games = {name: len(game_dirs(out / name)) for name in usages}
    costs = cost_rows(usages, prices or Prices.shipped(), games)
    write_cost(out, costs)
    if not table.empty:
        usd = {name: (None if any(r["usd"] is None for r in costs if r["variant"] == name) else
                      sum(r["usd"] for r in costs if r["variant"] == name)) for name in games}
        table["usd"] = table["variant"].map(usd)
        table["usd_per_game"] = [u / games[v] if u is not None and games.get(v) else None
                                 for v, u in zip(table["variant"], table["usd"])]
    unhealthy = [name for name, (_, problems) in health.items() if problems]
    if as_json:
        rows = json.loads(table.to_json(orient="records")) if not table.empty else []
        paper = json.loads(figures.to_json(orient="records")) if not figures.empty else []
        click.echo(json.dumps({"out": str(out), "provenance": provenance(out), "results": rows, "paper_figures": paper,
                               "aborted": list(aborted),
                               "health": {name: {"line": line, "problems": problems}
                                          for name, (line, problems) in health.items()},
                               "cost": costs}))
    else:
        click.echo(provenance(out))
        click.echo(format_table(table))
        if not figures.empty:
            click.echo(format_figures(figures))
        for name, (line, problems) in health.items():
            mark = "  UNHEALTHY: " + "; ".join(problems) if problems else ""
            click.echo(f"{name}: {line}{mark}")
        for name in usages:
            click.echo(cost_line(name, costs))
        for line in aborted:
            click.echo(f"aborted: {line}")
        click.echo(f"run directory: {out}")
    if unhealthy:
        raise RunUnhealthy(f"unhealthy variant(s), not results: {', '.join(unhealthy)} (see the health lines above)")
    if aborted:
        raise RunUnhealthy(f"{len(aborted)} game(s) aborted (no progress, or too many of their calls failed), not "
                           "counted; rerun to replay them")


@cli.command()
@click.option("--kind", type=click.Choice(["team", "vote", "quest", "assassinate"]), required=True,
              help="What the text answers.")
@click.option("--text", required=True, help="The player's free-text answer.")
@click.option("--team-size", default=2, show_default=True, type=SEATS, help="Team size (for --kind team).")
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
      avalon extract --kind team --team-size 3 --text "Player 2, myself and Player 10" --players 10 --seat 4
    """
    from avalon_agents.extract.cli import run_extract

    try:
        if not 1 <= seat <= players:
            raise ValueError(f"seat: {seat} is not a seat of a {players}-player game")
        make_rules("official", players)
        out = asyncio.run(run_extract(kind, text, team_size=team_size, players=players, seat=seat, evil=evil,
                                      model_spec=None if model_spec == "none" else model_spec))
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    click.echo(json.dumps(out) if as_json else f"{out['action']}  (method: {out['method']}, valid: {out['valid']})")


@cli.group("import")
def import_group() -> None:
    """Import human games as run directories (`avalon analyze RUN` reads them).

    Every logged action is replayed through the engine, so each imported game is checked against the rules;
    a log the rules refuse, an unfinished game or an unreadable file is skipped, with its reason.
    """


@import_group.command("avalonlogs")
@click.argument("log_dir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The run directory to write (game-NNNNN/ per imported game); it must hold no games yet.")
@logging_options
def import_avalonlogs(log_dir: Path, out: Path) -> None:
    """avalongame.online logs (one JSON file per game, at or under DIR) as game directories, seats of kind human.

    \b
    Example:
      avalon import avalonlogs avalonlogs/logs --out runs/humans && avalon analyze runs/humans
    """
    from avalon_agents.importers import IMPORTERS

    _import(IMPORTERS["avalonlogs"], log_dir, out)


def _import(importer, log_dir: Path, out: Path) -> None:
    """Run an importer module (see `importers`) over DIR with a progress bar; print what was skipped and why."""
    if not log_dir.is_dir():
        raise UserError(f"dir: {log_dir} is not a folder")
    files = importer.log_files(log_dir)
    if not files:
        raise UserError(f"dir: {log_dir} holds no game logs")
    if out.is_dir() and any(out.rglob("meta.json")):
        raise UserError(f"out: {out} already holds games; import into a new folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with Progress(TextColumn("games"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True), transient=True, disable=len(files) < 20) as progress:
            task = progress.add_task("games", total=len(files))
            report = importer.import_logs(files, out, on_file=lambda _: progress.advance(task), root=log_dir)
    except OSError as exc:
        raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None
    for name, reason in report.skipped:
        click.echo(f"skipped {name}: {reason}")
    click.echo(f"imported {len(report.imported)} of {len(files)} game(s) into {out}"
               + (f" ({len(report.skipped)} skipped)" if report.skipped else ""))


@cli.group()
def bench() -> None:
    """Throughput benchmarks (they print figures)."""


@bench.command("engine")
@click.option("--games", default=1000, show_default=True, type=GAMES, help="Games to play in each measurement.")
@click.option("--rules", "preset", default="official", show_default=True, help="Rule preset.")
@click.option("--players", default=6, show_default=True, type=PLAYERS, help=f"{MIN_PLAYERS} to {MAX_PLAYERS}.")
@click.option("--seats", default="rulebot", show_default=True, help="Bot kind on every seat (rulebot, random).")
@logging_options
def bench_engine_cmd(games: int, preset: str, players: int, seats: str) -> None:
    """Rule-bot games per second on one core, without writing files.

    Prints three figures for the same games: the engine alone (replaying the bots' recorded decisions),
    the engine with the bots deciding in a plain loop, and everything through GameHost (asyncio).
    """
    from avalon_agents.bench import bench_engine

    try:
        if games < 1:
            raise ValueError(f"games: must be at least 1, got {games}")
        rules = make_rules(preset, players)
        kind = parse_seats(seats, players)[0]
        if needs_llm(kind):
            raise ValueError(f"seats: bench engine plays bots without a model (rulebot, random), not {kind!r}")
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    figures = bench_engine(rules, games, kind)
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
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@plugin_option
@logging_options
def bench_cost_cmd(seats: str, games: int, agent_config: Path | None, preset: str, players: int, seed: int,
                   as_json: bool) -> None:
    """LLM calls and tokens per game, played with the scripted model (no model needed, a few seconds a game).

    Tokens are counted with tiktoken's cl100k_base encoding (offline copy) over every message sent and every
    reply, split per module or purpose. `avalon run --check CONFIG` turns such figures into dollars at the
    models' prices.

    \b
    Examples:
      avalon bench cost --seats cognitive --games 5 --json
      avalon bench cost --seats cognitive --agent-config experiments/agents/per_turn.yaml
      avalon bench cost --seats baseline
    """
    from avalon_agents.cost import bench_cost

    try:
        if games < 1:
            raise ValueError(f"games: must be at least 1, got {games}")
        rules = make_rules(preset, players)
        kinds = parse_seats(seats, players)
        config = load_agent_config(agent_config) if agent_config else None
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    figures = bench_cost(rules, kinds, games, seed, config)
    if as_json:
        click.echo(json.dumps(figures))
        return
    click.echo(f"{games} games, seats {','.join(kinds)}; tokens: {figures['tokenizer']}")
    click.echo(f"{'per game':<28}{'calls':>8}{'input tokens':>15}{'output tokens':>15}")
    for name, row in figures["per_module"].items():
        click.echo(f"  {name:<26}{row['calls_per_game']:>8.1f}{row['input_tokens_per_game']:>15,}"
                   f"{row['output_tokens_per_game']:>15,}")
    click.echo(f"{'total':<28}{figures['calls_per_game']:>8.1f}{figures['input_tokens_per_game']:>15,}"
               f"{figures['output_tokens_per_game']:>15,}")


@cli.command()
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--judge-model", default=None,
              help="Model that judges speeches for the behavior metrics (camouflage, teamwork/confrontation, "
                   "sharing, vacillation), e.g. openai:gpt-4o-mini, local:smollm2 or scripted. Without it those "
                   "metrics are skipped. Judgments are cached under OUT/judgments: a rerun costs nothing.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write metrics/, figures/, metrics.json and report.md (default: RUN_DIR/analysis).")
@click.option("--judge-concurrency", default=4, show_default=True, type=IN_FLIGHT,
              help="Judge calls in flight at once.")
@click.option("--reference", type=click.Choice(["auto", "human", "none"]), default="auto", show_default=True,
              help="human: each role's quest engagement, approve rate, leader self-inclusion, leader approval and "
                   "failure votes beside the same figures over 1,089 human games (paper's six roles); auto: so when "
                   "every game has the paper's six roles.")
@logging_options
def analyze(run_dir: Path, judge_model: str | None, out: Path | None, judge_concurrency: int, reference: str) -> None:
    """Analyze a run: outcome and behavior metrics, figures and a report.

    RUN_DIR is a game, a series, an experiment (runs/<name>) or any folder of game directories; only
    finished games are read. Writes every metric as CSV and JSON, the figures as PNG, and report.md showing
    each figure with the numbers behind it; prints the headline table.

    \b
    Examples:
      avalon analyze runs/quickstart
      avalon analyze runs/table2 --judge-model openai:gpt-4o-mini
      avalon analyze runs/smoke --judge-model scripted --out /tmp/report
    """
    from avalon_agents.analysis.report import analyze as run_analysis
    from avalon_agents.analysis.report import headline_text

    try:
        judge = None
        if judge_model:
            if judge_concurrency < 1:
                raise ValueError(f"judge-concurrency: must be at least 1, got {judge_concurrency}")
            settings = ModelSettings(spec=judge_model, temperature=0.0)
            check_reachable(settings)
            judge = ClientPool(limit=judge_concurrency).get(settings)
        with Progress(TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True), disable=judge is None) as progress:
            task = progress.add_task("judging", total=None)
            result = run_analysis(run_dir, out, judge=judge, reference=reference,
                                  progress=lambda done, total: progress.update(task, completed=done, total=total))
    except FileNotFoundError as exc:
        raise UserError(f"run-dir: {exc}") from None
    except OSError as exc:
        raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    from avalon_agents.analysis.report import provenance

    click.echo(provenance(result))
    click.echo(headline_text(result.headline))
    for row in result.tables["health"].itertuples(index=False):
        click.echo(f"{row.variant}: health: {row.failed_calls}/{row.llm_calls} calls failed ({row.failed_share:.1%}), "
                   f"{row.reasks} re-asks, {row.fallbacks}/{row.decisions} fallbacks ({row.fallback_share:.1%})")
    click.echo(f"{len(result.data.games)} game(s); report: {result.out / 'report.md'}")


@cli.command()
@click.argument("run_or_game_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=True, path_type=Path), default=None,
              help="A folder for index.html and one page per game (default: RUN_OR_GAME_DIR/replay), or, for a "
                   "single game, a file ending in .html for its page alone.")
@logging_options
def replay(run_or_game_dir: Path, out: Path | None) -> None:
    """Write replay pages: each finished game as one self-contained HTML file (no network), and an index.

    RUN_OR_GAME_DIR is a game, a series, an experiment or any folder of game directories. Each page shows the
    game as a timeline (seats, proposals and votes, quests, speeches, each seat's module outputs, how each
    decision was read, belief probes), roles hidden until revealed, and a seat filter that shows the game as
    that seat saw it. See docs/replay.md.

    \b
    Examples:
      avalon replay runs/quickstart                 runs/quickstart/replay/index.html and a page per game
      avalon replay runs/play/game-00001 --out game.html
    """
    from avalon_agents.viewer import write_replay

    try:
        page = write_replay(run_or_game_dir, out)
    except FileNotFoundError as exc:
        raise UserError(f"run-or-game-dir: {exc}") from None
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    except OSError as exc:
        raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None
    click.echo(f"replay: {page}")


@import_group.command("avalon-nlu")
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="A new folder for the games (game-NNNNN, numbered by the files' sorted order) and import.json.")
@logging_options
def import_avalon_nlu(dataset: Path, out: Path) -> None:
    """Import the Avalon-NLU dataset: DATASET is the folder of <id>.json files.

    Each game is replayed through the engine under the paper rules (its deal and first leader fixed), with the
    chat as speeches, so every imported game is checked against the rules; the persuasion, deception and
    belief labels go to each game's trace.jsonl as annotation records. Prints how many games were imported and
    why each other one was skipped (also in OUT/import.json). See docs/humans.md.

    \b
    Example:
      avalon import avalon-nlu ../shared/data/avalon_nlu/dataset --out runs/avalon-nlu
    """
    from avalon_agents.importers.avalon_nlu import import_avalon_nlu as run_import

    try:
        report = run_import(dataset, out)
    except OSError as exc:
        raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    for line in report.lines():
        click.echo(line)


@cli.command()
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--judge-model", required=True,
              help="The judge model, e.g. openai:gpt-4o-mini, local:smollm2 or scripted (canned labels: the floor).")
@click.option("--sample", type=int, default=None,
              help="Judge a fixed sample of N messages, stratified by label (default: every labelled message).")
@click.option("--seed", type=SEEDS, default=0, show_default=True, help="Seeds the sample and the bootstrap CIs.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write the CSV files and report.md (default: RUN_DIR/calibration).")
@click.option("--judge-concurrency", default=4, show_default=True, type=IN_FLIGHT,
              help="Judge calls in flight at once.")
@logging_options
def calibrate(run_dir: Path, judge_model: str, sample: int | None, seed: int, out: Path | None,
              judge_concurrency: int) -> None:
    """Judges against people: run the judges on the labelled chat messages of an imported Avalon-NLU run and
    report their agreement with the human labels.

    Judges: persuasion (the dataset's eight strategies), deception (influence, commission, omission or none),
    and the behavior judges camouflage (read as lie or honest) and teamwork (read as agreement,
    critique/opposition or other). Prints Cohen's kappa and accuracy with 95% CIs (bootstrap over games);
    writes summary.csv, per_class.csv (precision, recall), confusion.csv, judgments.csv and report.md.
    Judgments are cached under OUT/judgments: a rerun costs nothing. See docs/humans.md.

    \b
    Examples:
      avalon calibrate runs/avalon-nlu --judge-model scripted
      avalon calibrate runs/avalon-nlu --judge-model local:smollm2 --sample 200 --seed 0
    """
    from avalon_agents.analysis.calibrate import calibrate as run_calibration
    from avalon_agents.analysis.calibration_report import provenance, text_table, write_calibration
    from avalon_agents.analysis.load import load_run
    from avalon_agents.records.run_dir import JsonlTracer

    out = out if out is not None else run_dir / "calibration"
    try:
        if judge_concurrency < 1:
            raise ValueError(f"judge-concurrency: must be at least 1, got {judge_concurrency}")
        if sample is not None and sample < 1:
            raise ValueError(f"sample: must be at least 1, got {sample}")
        data = load_run(run_dir)
        if data.games.empty:
            raise ValueError(f"run-dir: no finished games in {run_dir}")
        settings = ModelSettings(spec=judge_model, temperature=0.0)
        check_reachable(settings)
        client = ClientPool(limit=judge_concurrency).get(settings).with_tracer(
            JsonlTracer(out / "judgments" / "calls.jsonl"))  # every judge call, recorded
        with Progress(TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True)) as progress:
            task = progress.add_task("judging", total=None)
            found = run_calibration(data, run_dir, client=client, cache_dir=out / "judgments", n=sample, seed=seed,
                                    concurrency=judge_concurrency,
                                    progress=lambda done, total: progress.update(task, completed=done, total=total))
        files = write_calibration(found, out)
    except FileNotFoundError as exc:
        raise UserError(f"run-dir: {exc}") from None
    except OSError as exc:
        raise UserError(f"out: cannot write {exc.filename or out} ({exc.strerror})") from None
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    click.echo(provenance(found))
    click.echo(text_table(found))
    click.echo(f"report: {files[-1]}")


@cli.command("probe-humans")
@click.argument("run_dir", metavar="RUN", type=click.Path(file_okay=False, path_type=Path))
@model_options
@click.option("--games", type=int, default=None, help="Probe only the first N games (default: all).")
@click.option("--history-tokens", type=AT_LEAST_1, default=None,
              help="Budget for the seat's view of the game in the prompt; older lines are cut, night information "
                   "kept (default: the model's, as in games: 2500; 900 local).")
@click.option("--concurrency", default=4, show_default=True, type=IN_FLIGHT, help="Probes in flight at once.")
@logging_options
def probe_humans(run_dir: Path, settings: ModelSettings, games: int | None, history_tokens: int | None,
                 concurrency: int) -> None:
    """Belief probes on imported human games: who is Merlin, who is evil, at the end of every quest.

    RUN is a folder of games made by `avalon import` (Avalon-NLU: with the players' stated beliefs). Every
    seat is given the game as it saw it up to the end of each quest (public events and speeches, its own night
    information) and asked the belief probe; the answers are scored against the truth and against the beliefs
    the player had stated by then. Prints accuracy per quest with 95% intervals (whole games resampled); writes
    RUN/probes-humans/ (probes.csv, quests.csv, roles.csv, report.md, the answers cached in answers.jsonl, every
    call in calls/). A rerun asks only what is not cached. See docs/humans.md.

    \b
    Example:
      avalon probe-humans runs/avalon-nlu --model scripted
    """
    from avalon_agents.analysis.human_report import probe_humans as run_probes
    from avalon_agents.analysis.human_report import quest_lines

    try:
        if settings.spec is None:
            raise ValueError("model: give the model to probe with --model SPEC (e.g. scripted, local:smollm2)")
        if concurrency < 1:
            raise ValueError(f"concurrency: must be at least 1, got {concurrency}")
        check_reachable(settings)
        client = ClientPool(limit=concurrency).get(settings)
        with Progress(TextColumn("probes"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("probes", total=None)
            result = asyncio.run(run_probes(
                run_dir, client, games=games, history_tokens=history_tokens, concurrency=concurrency,
                progress=lambda done, total: progress.update(task, completed=done, total=total)))
    except ModelUnusable as exc:
        raise RunUnhealthy(f"{_one_line(exc)} (answers so far are cached; a rerun asks the rest)") from None
    except OSError as exc:
        raise UserError(f"run: cannot write {exc.filename or run_dir} ({exc.strerror})") from None
    except USER_ERRORS as exc:
        raise UserError(_one_line(exc)) from None
    click.echo(result.provenance)
    for line in quest_lines(result.quests):
        click.echo(line)
    click.echo(f"{len(result.scored)} probes ({result.asked} asked now, the rest cached); report: "
               f"{result.out / 'report.md'}")


def main() -> None:
    """Entry point of the `avalon` console script."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("interrupted: finished games are complete on disk; an unfinished one has no result.json",
                   err=True)
        sys.exit(130)
    except click.ClickException as exc:  # usage errors included: one line, no usage dump
        click.echo(f"error: {exc.format_message()}", err=True)
        sys.exit(2 if isinstance(exc, (click.UsageError, UserError)) else exc.exit_code)


if __name__ == "__main__":
    main()
