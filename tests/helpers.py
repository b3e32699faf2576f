"""Drive an engine with simple policies, for rule tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from avalon_agents.core import (
    ActionRequest,
    Assassinate,
    Examine,
    ProposeTeam,
    QuestCard,
    RequestKind,
    Role,
    Speak,
    Team,
    Vote,
)
from avalon_agents.engine import AvalonEngine


def evil_seats(engine: AvalonEngine) -> list[int]:
    return sorted(s for s, r in engine.roles.items() if r.side is Team.EVIL)


def good_seats(engine: AvalonEngine) -> list[int]:
    return sorted(s for s, r in engine.roles.items() if r.side is Team.GOOD)


def seat_of(engine: AvalonEngine, role: Role) -> int:
    return next(s for s, r in engine.roles.items() if r is role)


@dataclass
class Policy:
    """How every seat answers. Each function gets (engine, request)."""

    team: Callable[[AvalonEngine, ActionRequest], list[int]] = lambda e, r: good_seats(e)[: r.team_size]
    vote: Callable[[AvalonEngine, ActionRequest], bool] = lambda e, r: True
    card: Callable[[AvalonEngine, ActionRequest], bool] = lambda e, r: not r.can_fail  # evil fails
    target: Callable[[AvalonEngine, ActionRequest], int | None] = lambda e, r: seat_of(e, Role.MERLIN)
    lady: Callable[[AvalonEngine, ActionRequest], int] = lambda e, r: r.options[0]
    """Whom the Lady of the Lake's holder examines (default: the first player who never held it)."""
    log: list = field(default_factory=list)

    def act(self, engine: AvalonEngine, r: ActionRequest):
        if r.kind is RequestKind.PROPOSE:
            return ProposeTeam(team=tuple(self.team(engine, r)))
        if r.kind is RequestKind.VOTE:
            return Vote(approve=self.vote(engine, r))
        if r.kind is RequestKind.QUEST:
            return QuestCard(success=self.card(engine, r))
        if r.kind is RequestKind.ASSASSINATE:
            return Assassinate(target=self.target(engine, r))
        if r.kind is RequestKind.LADY:
            return Examine(target=self.lady(engine, r))
        return Speak(text=f"seat {r.seat} speaks")


def drive(engine: AvalonEngine, policy: Policy, until: Callable[[AvalonEngine], bool] | None = None,
          max_steps: int = 5000) -> list:
    """Answer pending requests with `policy` until the game ends (or `until` holds). Returns all events."""
    for _ in range(max_steps):
        if engine.is_over or (until and until(engine)):
            return engine.events
        for r in engine.pending():
            engine.submit(r.seat, policy.act(engine, r))
    raise AssertionError("game did not end")


def events_of(engine: AvalonEngine, type_: str) -> list:
    return [e for e in engine.events if e.type == type_]


AVALON = str(Path(sys.executable).parent / "avalon")


def avalon_process(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """Run the installed `avalon` console script in a new process, as a user would. Only for tests whose
    subject is the process boundary (exit codes of the real script, signals); others call `avalon`."""
    return subprocess.run([AVALON, *args], capture_output=True, text=True, timeout=timeout, **kw)


def scripted_setup(model=None, **fields):
    """An AgentSetup on the scripted model (its default replies, or `model`'s answering function), with any
    other AgentSetup fields (agent_config, experience, ...)."""
    from avalon_agents.host.play import AgentSetup
    from avalon_agents.llm import ClientPool, ModelSettings

    settings = fields.pop("settings", None) or ModelSettings(spec="scripted")
    pool = ClientPool(models={"scripted": model} if model is not None else None)
    return AgentSetup(clients=pool, settings=settings, **fields)


class ScoredPool:
    """A baseline experience pool that finds the same turns for any query: (answer, score) pairs."""

    def __init__(self, scored: list[tuple[str, float]]) -> None:
        self.found = [(f"reflection {i}", {"answer": answer, "score": score}, 0.1)
                      for i, (answer, score) in enumerate(scored)]

    def query(self, text: str, n: int = 3, **where) -> list:
        return self.found[:n]


def baseline_with_pool(scored: list[tuple[str, float]], role: Role = Role.PERCIVAL, **options):
    """A baseline seat (Player 2, on the scripted model) that has reflected and finds `scored` in its pool
    (`options`: the agent's, e.g. prompt_layout)."""
    from avalon_agents.agents.baseline import BaselineAgent
    from avalon_agents.core import make_rules

    setup = scripted_setup()
    context = setup.context(setup.clients.for_game(None))
    context.pool = lambda: ScoredPool(scored)
    agent = BaselineAgent(seat=2, context=context, **options)
    agent.rules, agent.role, agent.reflection = make_rules(), role, "Player 3 looks evil."
    return agent


SUGGEST_REQUEST = ActionRequest(seat=2, kind=RequestKind.VOTE, quest=2, attempt=1, team=(1, 2))


def avalon(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """Run the `avalon` command in this process: the console script's own entry point (`cli.main`, which maps
    errors to one line and exit code 2) under click's CliRunner isolation (captured stdout and stderr, `env`
    applied and restored, `input` as standard input). Returns what `avalon_process` returns, without paying a
    process start and the package's import for each call."""
    from click.testing import CliRunner

    from avalon_agents.cli import main

    code = 0
    argv = sys.argv
    with CliRunner().isolation(input=input, env=env) as (stdout, stderr, _):
        sys.argv = ["avalon", *args]
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = argv
        out, err = stdout.getvalue().decode(), stderr.getvalue().decode()
    return subprocess.CompletedProcess(["avalon", *args], code, out, err)


@contextmanager
def registries_restored() -> Iterator[None]:
    """Leave the process's registries as they were: every `avalon_agents.registry.Registry` (agent kinds, modules,
    slots, providers, decision kinds, judges, metrics, importers, attacks, studies, the plugins imported; one made
    meanwhile keeps its built-ins only), a plugin file's module in sys.modules, and the pacers with this process's
    share of their limits. tests/conftest.py wraps every test in it."""
    from avalon_agents import plugins
    from avalon_agents.llm.pacer import pacers_state, restore_pacers
    from avalon_agents.registry import restore_all, snapshot_all

    every = snapshot_all()
    loaded_before = set(plugins.LOADED)
    pacers = pacers_state()
    try:
        yield
    finally:
        for key in plugins.LOADED.added():  # a plugin file imported meanwhile (plugins.load_plugin's name)
            module = plugins.LOADED[key]
            if key not in loaded_before and module.__name__.startswith("avalon_plugin_") \
                    and sys.modules.get(module.__name__) is module:
                del sys.modules[module.__name__]
        restore_all(every)
        restore_pacers(pacers)


def seat_faults(host, seat: int, problem: str) -> list:
    """The seat_fault records of a finished game whose program seat `seat` broke with `problem`: the game
    finished, the problem and the fallbacks it cost are recorded, and usage() counts them. Returns the records."""
    from avalon_agents.records.trace import SeatFault
    from avalon_agents.records.usage import usage

    assert host.engine.is_over  # the game always finishes
    found = [r for r in host.tracer.records if isinstance(r, SeatFault)]
    assert problem in {f.problem for f in found}
    fallbacks = [f for f in found if f.problem == "fallback"]
    assert fallbacks and all(f.seat == seat and f.kind for f in fallbacks)
    u = usage(host.tracer.records)
    assert u["seat_fallbacks"] == len(fallbacks) and u["seat_faults"] == len(found) - len(fallbacks)
    return found
