"""Every study type, by the command that plays it: the one place a study type is registered.

A study type is a `Study` subclass (experiments/study.py) that declares its lanes of games, its fingerprint, its
measure and its report; its command loads its config, builds it and hands it to `cli.studies.carry_out`, which plays
it on the scheduler. Every entry is a command: `avalon study NAME CONFIG` loads CONFIG's plugins, then plays
`STUDIES[NAME].load(CONFIG)` (the built-ins have their own commands too). `register_study` adds one (a plugin's: `@register_study` on the class); a class that leaves
part of the shape undeclared is refused in one line naming what it lacks.
"""

from __future__ import annotations

import inspect
from avalon_agents.experiments.bias import OrderBias
from avalon_agents.experiments.config import COMMAND_KEYS
from avalon_agents.experiments.redteam import RedTeamSuite
from avalon_agents.experiments.runner import ExperimentStudy
from avalon_agents.experiments.study import Study
from avalon_agents.experiments.tournament import TournamentStudy
from avalon_agents.registry import Registry


def _complete(name: str, kind: type[Study]) -> None:
    """Refuse a study type its scheduler and command could not use (one line)."""
    if not (inspect.isclass(kind) and issubclass(kind, Study)):
        raise ValueError(f"study {name}: {kind!r} is not a Study subclass (experiments/study.py)")
    if getattr(kind, "command", None) != name:
        raise ValueError(f"study {name}: its class says command = {getattr(kind, 'command', None)!r}")
    missing = sorted(kind.__abstractmethods__) if inspect.isabstract(kind) else []
    if getattr(kind.load, "__func__", None) is Study.load.__func__:  # its command could not make it from a config
        missing.append("load")
    if missing:
        raise ValueError(f"study {name}: {kind.__name__} does not declare {', '.join(missing)} (see "
                         "docs/architecture.md, a new study type)")


STUDIES: Registry[type[Study]] = Registry("study", [(kind.command, kind) for kind in (
    ExperimentStudy, TournamentStudy, RedTeamSuite, OrderBias)], check=_complete)
"""Every study type, by its command."""


def register_study(kind: type[Study]) -> type[Study]:
    """Add a study type under its `command` (usable as a class decorator). Raises ValueError for a built-in
    command's name or an incomplete class."""
    STUDIES.register(kind.command, kind, builtin=False)
    COMMAND_KEYS.register(kind.command, tuple(kind.config_keys), builtin=False)  # a config for it is named
    return kind

