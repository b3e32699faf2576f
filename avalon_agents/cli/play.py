"""`avalon play`: games between agent kinds named per seat (or a person at one), a transcript or a summary."""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import nullcontext
from pathlib import Path

import click

from avalon_agents.cli.base import (
    GAMES,
    PLAYERS,
    SEEDS,
    ReadsNoConfig,
    RunUnhealthy,
    UserError,
    check_option,
    cli,
    embedded_notice,
    lady_option,
    logging_options,
    model_options,
    one_line_errors,
    plugin_option,
    progress_bar,
    spend_options,
)
from avalon_agents.cli.spending import PLAY_BUDGET, PaidGames, kept_within, prices_of
from avalon_agents.cli.studies import carry_out, prepare
from avalon_agents.core.rules import MAX_PLAYERS, MIN_PLAYERS, PRESETS, RuleSet, make_rules
from avalon_agents.llm.settings import ModelSettings
from avalon_agents.narrate import DEFAULT_CARDS, card_sets
from avalon_agents.records.health import health_line


def option_group(command, options: list):
    """`command` with `options` (click.option decorators), listed in --help in their order."""
    for option in reversed(options):
        command = option(command)
    return command


def program_options(command):
    """--seat-command, --seat-url and --seat-timeout: what the 'external' seats play (`program_seats`)."""
    return option_group(command, [
        click.option("--seat-command", default=None, metavar="COMMAND",
                     help="The program every 'external' seat runs (one process per seat per game, speaking the seat "
                          "protocol of docs/seats.md on its standard input and output), as one string split like a "
                          "shell line, e.g. --seat-command 'python3 experiments/bots/random_bot.py'."),
        click.option("--seat-url", default=None, metavar="URL",
                     help="Instead of --seat-command: the server every 'external' seat asks, one HTTP POST per "
                          "request (docs/seats.md, 'Programs over HTTP'), e.g. --seat-url http://127.0.0.1:8000/."),
        click.option("--seat-timeout", default=60.0, show_default=True,
                     type=click.FloatRange(0, 3600, min_open=True),
                     help="Seconds an 'external' seat's program (or server) may take to answer one request."),
    ])


def rules_options(command):
    """--rules, --players, --roles and --assassin: the rules of the games a command deals (`rules_of`)."""
    return option_group(command, [
        click.option("--rules", "preset", default="official", show_default=True,
                     help=f"Rule preset: {' or '.join(PRESETS)}, or a plugin's (docs/paper.md#rules)."),
        click.option("--players", default=None, type=PLAYERS,
                     help=f"{MIN_PLAYERS} to {MAX_PLAYERS} (default: as many as --roles lists, else 6)."),
        click.option("--roles", "role_set", default=None, metavar="ROLE,ROLE,...",
                     help="The role set, one role per seat (any case, underscores or spaces): merlin, percival, "
                          "loyal_servant, morgana, mordred, oberon, minion, assassin; with the official good/evil "
                          "split. Default: the preset's roles."),
        click.option("--assassin", default=None, metavar="ROLE",
                     help="The evil role that carries the assassination (default: the Assassin; a set without one "
                          "must name it). No Merlin: no assassination."),
    ])


def rules_of(preset: str, players: int | None, role_set: str | None, assassin: str | None,
             lady: bool = False) -> RuleSet:
    """The RuleSet `rules_options` (and --lady-of-the-lake) name; ValueError naming the bad option."""
    return make_rules(preset, players, role_set.split(",") if role_set else None, assassin, lady)


@cli.command(cls=ReadsNoConfig)
@rules_options
@lady_option
@click.option("--seats", default="rulebot", show_default=True,
              help="Agent kind for every seat (rulebot, random, llm, cognitive, baseline, external: a program, "
                   "with --seat-command; or a plugin's), or a comma list, one per seat.")
@program_options
@click.option("--human", type=int, default=None, metavar="SEAT",
              help="You take this seat: you see what it may see, and type each speech and decision as one line "
                   "on standard input (answers can be piped in). One game only.")
@click.option("--seed", default=0, show_default=True, type=SEEDS, help="Seed of the first game; game i uses seed+i.")
@click.option("--games", default=1, show_default=True, type=GAMES, help="How many games to play.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write each game's run directory (events.jsonl, trace.jsonl, meta.json, result.json) and run.log "
                   "under this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON summary object instead of text.")
@click.option("--stream/--no-stream", default=None,
              help="One game: print the transcript as the game goes, not at its end, and keep one line on stderr "
                   "saying who the game is waiting for (default: the transcript streams when standard output is a "
                   "terminal, the line shows when stderr is one). --stream streams into a pipe too (plain lines); "
                   "--no-stream: the transcript at the end, no waiting line.")
@model_options
@click.option("--extractor-model", default=None, help="Model of the LLM extractor (default: the seats' model, at "
              "temperature 0); 'none' skips the LLM stage.")
@click.option("--constrained/--unconstrained", default=True, show_default=True,
              help="Decisions of llm seats use JSON-schema constrained output.")
@click.option("--agent-config", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="YAML module config of the cognitive seats (modules on/off, options, model settings; "
                   "README.md#writing-your-own-module).")
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
@check_option
@spend_options(PLAY_BUDGET)
@plugin_option
@logging_options
def play(preset: str, players: int | None, role_set: str | None, assassin: str | None, lady: bool, seats: str,
         seat_command: str | None, seat_url: str | None, seat_timeout: float, human: int | None, seed: int,
         games: int, out: Path | None, as_json: bool, stream: bool | None,
         settings: ModelSettings, extractor_model: str | None, constrained: bool, agent_config: Path | None,
         cards: str, experience_dir: Path | None, probes: bool, order_modes: tuple[str, ...], check: bool,
         prices_file: Path | None, budget_usd: float | None) -> None:
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
      avalon play --seats external,rulebot,rulebot,rulebot,rulebot,rulebot --seat-command 'python3 bot.py'
      avalon play --seats external,rulebot,rulebot,rulebot,rulebot,rulebot --seat-url http://127.0.0.1:8000/
      avalon play --seats llm --model scripted --order options=reversed --order players=shuffled
      avalon play --seats llm --model openai:gpt-4o-mini --games 20 --check      calls, tokens, dollars, time
      avalon play --seats llm --model openai:gpt-4o-mini --games 20 --budget-usd 1
    """
    from avalon_agents.agents.registry import needs_llm, parse_seats, take_seat
    from avalon_agents.experiments.play import PlayStudy
    from avalon_agents.host.batch import batch
    from avalon_agents.modules import load_agent_config

    live = live_view(stream, games, as_json, human)
    with one_line_errors(out):
        rules = rules_of(preset, players, role_set, assassin, lady)
        order = parse_order(order_modes, rules.players)
        kinds = parse_seats(seats, rules.players)
        if human is not None:
            from avalon_agents.agents.human import Terminal

            kinds = take_seat(kinds, human, games)
        config = load_agent_config(agent_config) if agent_config is not None else None
        budget = None
        if check or budget_usd is not None:  # the plan (every study's preparation), before any model loads
            from avalon_agents.host.play import AgentSetup

            planned = PlayStudy(batch(rules, kinds, seed, games, AgentSetup(settings=settings, agent_config=config),
                                      probes, order), order)
            budget, _ = prepare(planned, None, check=check, as_json=as_json, prices=prices_of(prices_file),
                                budget_usd=budget_usd)
            if check:
                return
        if any(needs_llm(k) for k in kinds):  # said before the model loads
            embedded_notice(settings.spec, *([extractor_model] if extractor_model not in (None, "none") else []))
        from avalon_agents.host.batch import play_setup

        output = live.guard(sys.stdout) if live is not None else sys.stdout
        setup = play_setup(kinds, settings.model_copy(update={"constrained": constrained}), extractor_model,
                           cards=cards, terminal=Terminal(sys.stdin, output) if human is not None else None,
                           agent_config=config,
                           experience_dir=experience_dir)
        programs = program_seats(kinds, setup, seat_command, seat_url, seat_timeout)
        study = PlayStudy(batch(rules, kinds, seed, games, programs, probes, order), order, human,
                          shown=lambda: live.printed if live is not None and live.out is not None else 0)
        if out is not None:
            from avalon_agents.experiments import scheduler

            scheduler.preflight(study, out)
            out.mkdir(parents=True, exist_ok=True)
            if budget is not None:  # the games finished before count toward it
                budget.count_finished(scheduler.games(study, out))
    if out is not None:  # a study on the scheduler: lock, fingerprint, resume, budget, run record, exit codes
        carry_out(study, out, as_json=as_json, budget=budget, play_with=_shown_playing(live, games),
                  stopped="the game stopped; it is played again on a rerun")
        return
    from avalon_agents.experiments.study import Outcome
    from avalon_agents.host.batch import batch_summary

    played = _play_in_memory(study, live, budget)
    outcome = Outcome(out=Path(), measured={"summary": batch_summary(study.games, played, order), "played": played},
                      health={})
    summary = outcome.measured["summary"]
    if as_json:  # the counts and each side's win rate with its interval (PlayStudy.json, as with --out)
        click.echo(json.dumps(study.json(outcome)))
        lines = []
    else:
        lines = study.lines(outcome)
    for line in lines:
        click.echo(line)
    if "usage" in summary and not as_json:
        click.echo(health_line(summary["usage"]))
    problems = summary.get("health", {}).get("problems")
    if problems:
        raise RunUnhealthy("unhealthy run, not a result: " + "; ".join(problems))


def _play_in_memory(study, live, budget) -> list:
    """Play a batch without a directory (nothing kept): its games in order, a progress bar over several, within
    the budget (`PaidGames`: the game that would go over is not started, exit 4)."""
    from avalon_agents.host.batch import play_batch
    from avalon_agents.host.host import watching

    paid = PaidGames(budget) if budget is not None else None
    with progress_bar(disable=len(study.games) == 1) as progress:
        task = progress.add_task("games", total=len(study.games))
        with (one_line_errors(None, stopped="the game stopped; nothing was counted"), kept_within(),
              live.running() if live is not None else nullcontext(), watching(live)):

            def played_one(game) -> None:
                progress.advance(task)
                if paid is not None:
                    paid.played(game)

            return asyncio.run(play_batch(study.games, None, played_one, lean=True,
                                          before=paid.before if paid is not None else None))


def _shown_playing(live, games: int):
    """How `avalon play --out` plays its study on the scheduler (carry_out's `play_with`): its progress bar over
    several games (the finished ones counted), the live view following each game."""

    def play_study(study, out: Path, max_games: int | None, budget) -> list[str]:
        from avalon_agents.experiments import scheduler

        with (progress_bar(disable=games == 1) as progress,
              live.running() if live is not None else nullcontext()):
            task = progress.add_task("games", total=games, completed=scheduler.finished(study, out))
            return asyncio.run(scheduler.play(study, out, max_games=max_games, budget=budget,
                                              on_game=lambda *_: progress.advance(task),
                                              on_start=(lambda *_: live) if live is not None else None))

    return play_study


def program_seats(kinds: list[str], setup, command: str | None, url: str | None, timeout: float):
    """The setup of each seat, the 'external' ones running `command` (--seat-command) or asking the server at
    `url` (--seat-url), or the one shared setup when no seat is a program. Raises UserError for a program seat
    without a command or URL, both, a malformed one, or one without a program seat."""
    given = "seat-command" if command is not None else "seat-url" if url is not None else None
    if "external" not in kinds:
        if given is not None:
            raise UserError(f"{given}: no seat is 'external' (name it in --seats)")
        return setup
    if command is not None and url is not None:
        raise UserError("seat-url: give --seat-command or --seat-url, not both")
    if not command and not url:
        raise UserError("seat-command: an 'external' seat runs a program: give --seat-command 'PROGRAM ARGS' (or "
                        "its server: --seat-url URL)")
    import shlex
    from dataclasses import replace

    from avalon_agents.agents.external import ExternalAgent

    options = {"command": shlex.split(command)} if command else {"url": url}
    options["timeout"] = timeout
    try:
        ExternalAgent.check_options(options)
    except ValueError as exc:  # named by its field (command: or url:), the option's name without its "seat-"
        raise UserError(f"seat-{exc}") from None
    program = replace(setup, options=options)
    return tuple(program if kind == "external" else setup for kind in kinds)


def live_view(stream: bool | None, games: int, as_json: bool, human: int | None):
    """The live view of a one-game `avalon play` (cli.live.LiveView), or None: the transcript streams to stdout
    when it is a terminal (or --stream), never with --json or a human seat (the transcript shows what the seat
    may not see); the waiting line shows when stderr is a terminal. --stream where it cannot be is one line."""
    if stream:
        if as_json:
            raise UserError("stream: --json prints one JSON object at the end; leave out --stream")
        if human is not None:
            raise UserError("stream: the transcript shows what your seat may not see; leave out --stream")
        if games > 1:
            raise UserError("stream: one game only (several games show a progress bar); leave out --stream")
    if games > 1 or stream is False:
        return None
    from avalon_agents.cli.live import LiveView, is_terminal

    lines = stream if stream is not None else is_terminal(sys.stdout) and not as_json and human is None
    view = LiveView(out=sys.stdout if lines else None, status=sys.stderr if is_terminal(sys.stderr) else None,
                    human=human)
    return view if view.out is not None or view.status is not None else None


def parse_order(items: tuple[str, ...], players: int) -> dict[str, str] | None:
    """`--order LIST=MODE` options as Orders.make's modes (None: all fixed). Raises ValueError naming the bad
    one."""
    from avalon_agents.orders import Orders

    modes = {}
    for item in items:
        name, sep, mode = item.partition("=")
        if not sep:
            raise ValueError(f"order: {item!r} is not LIST=MODE (e.g. options=reversed)")
        name = name.strip()
        if name in modes:
            raise ValueError(f"order: {name} given twice ({modes[name]}, {mode.strip()}); give each list once")
        modes[name] = mode.strip()
    if not modes:
        return None
    Orders.make(0, players, modes=modes)  # checks the names and modes
    return modes
