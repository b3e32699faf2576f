"""Checks a researcher runs on their own plugin (`avalon check-plugin FILE`), modelled on PettingZoo's `api_test`:
each thing a plugin registered is exercised through scripted games and the consumers that read it, and each check
says in one line what it found.

    from avalon_agents.testing import check_plugin
    lines = [found.line() for found in check_plugin("my_plugin.py")]

One check per kind of registry item: `check_module`, `check_slot`, `check_seat_kind`, `check_provider`,
`check_judge`, `check_metric`, `check_decision_kind`, `check_preset`; `CHECKS` maps a registry's `what` to its check. A check
returns a `Found` (ok or not, with what it saw) and never raises for a fault of the item under test. It fails closed:
an item of a registry no check exercises is a failure ("not checked"), not a pass.
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from avalon_agents.agents.base import AgentBase
from avalon_agents.agents.registry import AGENT_KINDS
from avalon_agents.core.actions import ActionRequest, IllegalAction, Reply
from avalon_agents.core.rules import make_rules
from avalon_agents.decisions.kinds import KINDS, kind_of
from avalon_agents.errors import Unusable
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm.settings import ModelSettings
from avalon_agents.modules.base import MODULES, SLOTS
from avalon_agents.modules.config import AgentConfig
from avalon_agents.plugins import load_plugin
from avalon_agents.records.trace import LLMCall, ModuleOutput
from avalon_agents.registry import Registry, all_registries

GAMES = 3
"""Scripted games each check plays (6 players, official rules, seeds 0..GAMES-1)."""
SCRIPTED = ModelSettings(spec="scripted")


@dataclass(frozen=True)
class Found:
    """What one check found: the item (`what` is its registry's, "module"), whether it passed, and why."""

    what: str
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.what} {self.name}: {self.detail}"


def _fault(exc: BaseException) -> str:
    from pydantic import ValidationError

    from avalon_agents.errors import field_error

    text = field_error(exc) if isinstance(exc, ValidationError) else \
        str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _play(kinds: Sequence[str], *, config: AgentConfig | None = None, settings: ModelSettings = SCRIPTED,
          games: int = GAMES, players: int = 6) -> list[Any]:
    """Scripted games with these seat kinds; the hosts."""
    setup = AgentSetup(settings=settings, agent_config=config)
    rules = make_rules("official", players)
    return [asyncio.run(play_one(rules, list(kinds), seed, setups=setup)) for seed in range(games)]


def _records(hosts: Sequence[Any], kind: type) -> list[Any]:
    return [r for host in hosts for r in host.tracer.records if isinstance(r, kind)]


# --------------------------------------------------------------------------- modules and slots


def check_module(name: str) -> Found:
    """The module, chosen for its slot in a cognitive seat, plays scripted games without raising and writes its
    slot at least once."""
    cls = MODULES[name]
    slot = cls.slot
    if slot not in SLOTS:
        return Found("module", name, False, f"its slot {slot!r} is not registered (slots: {SLOTS.known()})")
    try:
        config = AgentConfig(**{slot: {"use": name}})
        hosts = _play(["cognitive"] + ["rulebot"] * 5, config=config)
    except Exception as exc:  # noqa: BLE001 - a plugin's fault, reported
        return Found("module", name, False, f"raised in a scripted game ({_fault(exc)})")
    outputs = [r for r in _records(hosts, ModuleOutput) if r.module == name]
    if not outputs:
        return Found("module", name, False, f"wrote nothing to turn.slots.{slot} in {len(hosts)} scripted games")
    return Found("module", name, True, f"{len(hosts)} scripted games, {len(outputs)} outputs in slot {slot}")


def check_slot(name: str) -> Found:
    """The slot's default module (registered under the slot's name) runs, and the text it writes reaches a later
    module's prompt under the slot's section."""
    slot = SLOTS[name]
    if name not in MODULES:
        return Found("slot", name, False, f"no module registered under the slot's name (@register_module({name!r}))")
    try:
        hosts = _play(["cognitive"] + ["rulebot"] * 5, config=AgentConfig(**{name: {"enabled": True}}))
    except Exception as exc:  # noqa: BLE001
        return Found("slot", name, False, f"its module raised in a scripted game ({_fault(exc)})")
    texts = [r.text for r in _records(hosts, ModuleOutput) if r.slot == name and isinstance(r.text, str) and r.text]
    if not texts:
        return Found("slot", name, False, f"its module wrote nothing to turn.slots.{name} in {len(hosts)} games")
    if slot.section is None:
        return Found("slot", name, True, f"{len(texts)} outputs; it has no section, so no prompt reads it")
    later = SLOTS.names()[SLOTS.index(name) + 1:]
    prompts = [r.messages[-1].content for r in _records(hosts, LLMCall)
               if r.purpose.stage == "module" and any(part in later for part in r.purpose.name.split("+"))]
    reached = sum(f"{slot.section}:\n" in p for p in prompts)
    if not reached:
        return Found("slot", name, False, f"{len(texts)} outputs, but no later module's prompt holds its section "
                                           f"{slot.section!r}")
    return Found("slot", name, True, f"{len(texts)} outputs; its section reached {reached} of {len(prompts)} "
                                     "later prompts")


# --------------------------------------------------------------------------- seats


class _Checked(AgentBase):
    """Plays through `inner`, counting answers that are not legal (and answering for it, so the game goes on)."""

    def __init__(self, inner: Any, seat: int) -> None:
        self.inner, self.seat = inner, seat
        self.reads_instructions = getattr(inner, "reads_instructions", True)
        self.answers = 0
        self.problems: list[str] = []
        self._rng = random.Random(seat)

    async def observe(self, events):
        await self.inner.observe(events)

    async def prepare(self):
        if (prepare := getattr(self.inner, "prepare", None)) is not None:
            await prepare()

    async def on_game_end(self, result):
        await self.inner.on_game_end(result)

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        self.answers += 1
        spec = kind_of(request)
        reply = await self.inner.act(request, instruction)
        action = reply.action
        if action is None and spec.key is not None:
            action = spec.read_json(reply.text or "") or spec.parse(reply.text or "", request)
        if action is None and spec.key is None:
            return reply
        try:
            request.validate(action)
            return reply
        except (IllegalAction, AttributeError, TypeError) as exc:
            self.problems.append(f"{request.kind.value}: {_fault(exc) if action is not None else 'no answer'}")
        legal = spec.random(request, self._rng)
        return Reply(text=spec.say(legal), action=legal)


def _watched(name: str, seats: list[_Checked]) -> Callable[..., Any]:
    """A factory of `name`'s seats wrapped in `_Checked` (collected in `seats`), declaring what the kind needs."""
    inner = AGENT_KINDS[name]

    def factory(*, seat: int, seed: int, **options: Any) -> _Checked:
        seats.append(checked := _Checked(inner(seat=seat, seed=seed, **options), seat))
        return checked

    for need in ("needs_llm", "needs_tracer", "needs_terminal"):
        setattr(factory, need, getattr(inner, need, False))
    return factory


def check_seat_kind(name: str) -> Found:
    """Seats of this kind (seats 1 and 4, the others rule bots) play scripted games: every answer must be legal
    (typed, or text the rule parse reads), and the kind must not raise."""
    seats: list[_Checked] = []
    watched = f"checked-{name}"
    AGENT_KINDS.register(watched, _watched(name, seats), builtin=False)
    try:
        hosts = _play([watched if seat in (1, 4) else "rulebot" for seat in range(1, 7)])
    except Exception as exc:  # noqa: BLE001
        return Found("agent kind", name, False, f"raised in a scripted game ({_fault(exc)})")
    problems = [p for seat in seats for p in seat.problems]
    answers = sum(seat.answers for seat in seats)
    if problems:
        return Found("agent kind", name, False, f"{len(problems)} of {answers} answers not legal (first: "
                                                 f"{problems[0]})")
    return Found("agent kind", name, True, f"{len(hosts)} scripted games, {answers} answers, all legal")


def check_provider(name: str, model: str = "test") -> Found:
    """One game with a vanilla LLM seat on `name:model` (the others rule bots): the provider's model answers
    through the framework's client (pacing, recording, extraction) and no call fails."""
    try:
        hosts = _play(["llm"] + ["rulebot"] * 5, settings=ModelSettings(spec=f"{name}:{model}"), games=1)
    except Unusable as exc:
        return Found("provider", name, False, f"unusable: {_fault(exc)}")
    except Exception as exc:  # noqa: BLE001
        return Found("provider", name, False, f"raised ({_fault(exc)})")
    calls = [r for r in _records(hosts, LLMCall) if r.purpose.stage == "agent"]
    failed = [r for r in calls if r.outcome != "ok"]
    if not calls or failed:
        return Found("provider", name, False, f"{len(failed)} of {len(calls)} calls failed")
    return Found("provider", name, True, f"one game on {name}:{model}, {len(calls)} calls, none failed")


# --------------------------------------------------------------------------- analysis


def _scripted_run(folder: Path) -> Path:
    """A small scripted experiment written to `folder` (two games, an LLM side against rule bots)."""
    from avalon_agents.experiments.runner import run_experiment_sync

    config = folder / "check.yaml"
    config.write_text("name: check\nmodel: scripted\nagents:\n  ours: {kind: cognitive}\n  bots: {kind: rulebot}\n"
                      "sides: {good: ours, evil: bots}\nseries: 1\ngames_per_series: 2\n")
    out = folder / "run"
    run_experiment_sync(config, out)
    return out


def check_metric(name: str, run: Path | None = None) -> Found:
    """The metric, on a scripted run loaded as `avalon analyze` loads it, gives a table with a `value` column of
    numbers (none NaN)."""
    from avalon_agents.analysis.load import load_run
    from avalon_agents.analysis.paper.metrics import OUTCOMES

    try:
        with tempfile.TemporaryDirectory() as tmp:
            table = OUTCOMES[name](load_run(run or _scripted_run(Path(tmp))))
    except Exception as exc:  # noqa: BLE001
        return Found("metric", name, False, f"raised on a scripted run ({_fault(exc)})")
    if not hasattr(table, "columns") or "value" not in table.columns:
        return Found("metric", name, False, "returned no table with a `value` column")
    try:
        values = table["value"].astype(float)
    except (TypeError, ValueError) as exc:
        return Found("metric", name, False, f"its `value` column is not numbers ({_fault(exc)})")
    if values.isna().any():
        return Found("metric", name, False, f"{int(values.isna().sum())} of {len(values)} values are NaN on a "
                                            "scripted run")
    return Found("metric", name, True, f"{len(table)} rows on a scripted run")


def check_judge(name: str) -> Found:
    """The judge's prompt file renders, and an answer that follows its own schema with each of its labels is
    read back by its own `parse` as valid."""
    from avalon_agents.analysis.judges.registry import JUDGES
    from avalon_agents.prompting import template

    spec = JUDGES[name]
    try:
        template(spec.prompt)
    except Exception as exc:  # noqa: BLE001
        return Found("judge", name, False, f"its prompt {spec.prompt!r} does not load ({_fault(exc)})")
    subjects = (2, 3)
    try:
        schema = spec.schema(subjects)
    except Exception as exc:  # noqa: BLE001
        return Found("judge", name, False, f"its schema raised ({_fault(exc)})")
    fields = schema.get("properties", {})
    unread = []
    for label in spec.labels:
        answer = {key: (label if "enum" in prop and label in prop["enum"] else "because")
                  for key, prop in fields.items()} or {"label": label}
        try:
            parsed = spec.parse(json.dumps(answer), subjects)
        except Exception as exc:  # noqa: BLE001
            return Found("judge", name, False, f"its parse raised on its own label {label!r} ({_fault(exc)})")
        if not parsed.get("valid") or label not in json.dumps(parsed):
            unread.append(label)
    if unread:
        return Found("judge", name, False, f"its parse does not read its own labels: {', '.join(unread)}")
    return Found("judge", name, True, f"prompt loads; {len(spec.labels)} labels read back through its schema")


# --------------------------------------------------------------------------- decision kinds


def check_decision_kind(name: str) -> Found:
    """Every consumer's part of the spec on a request of the kind: the random seat's and the fallback's answers
    are legal, the protocol's legal answers and the records' data are JSON, a bot's words are read back by the
    rule parse."""
    spec = KINDS[name]
    request = ActionRequest(seat=1, kind=spec.kind, quest=2, attempt=1, options=(2, 3, 4, 5), team_size=2,
                            team=(2, 3), leader=1)
    rng = random.Random(0)
    try:
        for source in ("random", "fallback"):
            action = spec.random(request, rng) if source == "random" else spec.fallback(request, None, rng)
            request.validate(action)
        json.dumps(spec.legal(request))
        json.dumps(spec.plain(action))
        words = spec.say(action)
        if spec.key is not None and spec.parse(words, request) is None:
            return Found("decision kind", name, False, f"its rule parse does not read its own words {words!r}")
        if not spec.instruction(request, make_rules("official", 7)).strip() or not spec.answers(request):
            return Found("decision kind", name, False, "its instruction or answers are empty")
    except IllegalAction as exc:
        return Found("decision kind", name, False, f"its {source} answer is not legal ({exc})")
    except Exception as exc:  # noqa: BLE001
        return Found("decision kind", name, False, f"raised ({_fault(exc)})")
    return Found("decision kind", name, True, "random, fallback, legal, words and data checked on a request")


# --------------------------------------------------------------------------- rules presets


def check_preset(name: str) -> Found:
    """The preset gives a RuleSet for every player count it takes (5 to 10; a count it refuses in one line is
    skipped), and random legal games under it end."""
    from avalon_agents.core.rules import MAX_PLAYERS, MIN_PLAYERS, PRESETS
    from avalon_agents.engine import AvalonEngine

    played = []
    for players in range(MIN_PLAYERS, MAX_PLAYERS + 1):
        try:
            rules = PRESETS[name](players)
        except ValueError:
            continue
        except Exception as exc:  # noqa: BLE001
            return Found("rules preset", name, False, f"raised for {players} players ({_fault(exc)})")
        if rules.players != players:
            return Found("rules preset", name, False, f"asked for {players} players, gave {rules.players}")
        rng = random.Random(players)
        engine = AvalonEngine(rules, seed=players)
        engine.reset()
        for _ in range(5000):
            if engine.is_over:
                break
            for request in engine.pending():
                engine.submit(request.seat, kind_of(request).random(request, rng))
        if not engine.is_over:
            return Found("rules preset", name, False, f"a random game of {players} players did not end")
        played.append(players)
    if not played:
        return Found("rules preset", name, False, "gave no RuleSet for any player count from 5 to 10")
    return Found("rules preset", name, True, f"random games end for {', '.join(map(str, played))} players")


# --------------------------------------------------------------------------- a plugin


CHECKS: dict[str, Callable[[str], Found]] = {
    "module": check_module, "slot": check_slot, "agent kind": check_seat_kind, "provider": check_provider,
    "judge": check_judge, "metric": check_metric, "decision kind": check_decision_kind,
    "rules preset": check_preset,
}
"""A registry's `what` -> its check. An item of any other registry (importer, attack, study) fails as not checked;
one of a registry that `follows` another (a free provider's price) is checked with that registry's item."""


def registered_by(load: Callable[[], Any]) -> list[tuple[Registry, str]]:
    """What `load()` registered: (registry, name) pairs, in registry order."""
    before = {id(r): set(r.names()) for r in all_registries()}
    load()
    # a registry first made while loading (the judges, when the plugin imports them) holds built-ins too
    return [(r, n) for r in all_registries() if r.what != "plugin"
            for n in (r.names() if id(r) in before else r.added()) if n not in before.get(id(r), set())]


TIMEOUT = 60.0
"""Seconds `check_plugin` gives each step (loading the plugin, each item's check) before stopping it as hung."""


def check_plugin(path: str, base: Path | None = None, *, timeout: float = TIMEOUT,
                 provider_model: str = "test") -> list[Found]:
    """Check everything the plugin registers, each step in a child process of its own given `timeout` seconds:
    one loads the plugin and lists what it registered, then one per item loads it again and runs the item's check
    (a provider's with `provider_model`). An item no check exercises fails ("not checked"), as the plugin's code
    would then run untested. A step that hangs, exits or leaves a thread running fails, naming its item (the
    plugin itself for the loading step), and so does a plugin that replaces the framework's own code (a function
    or class of avalon_agents, a registry's built-in item) while loaded or checked. This process never imports
    the plugin.

    Raises:
        ValueError: the plugin cannot be loaded (one line naming it).
    """
    label = Path(path).name if path.endswith(".py") else path
    loaded = _isolated(_load_step, (path, base), timeout)
    if isinstance(loaded, Found):
        return [Found("plugin", label, False, f"while being imported: {loaded.detail}")]
    if isinstance(loaded, str):
        raise ValueError(loaded)
    items, problems = loaded
    found = [Found("plugin", label, False, problem) for problem in problems]
    for what, name in items:
        if what not in CHECKS:
            found.append(Found(what, name, False, f"not checked: avalon check-plugin has no check of this registry "
                                                  f"(checks: {', '.join(CHECKS)})"))
            continue
        result = _isolated(_check_step, (path, base, what, name, provider_model), timeout)
        found.append(replace(result, what=what, name=name) if isinstance(result, Found) else
                     Found(what, name, False, f"could not be checked ({result})"))
    return found


STARTUP_S = 300.0
"""Seconds a child process may take to start and import the framework, before its step's `timeout` begins."""


def _isolated(step: Callable[..., Any], args: tuple, timeout: float) -> Any:
    """`step(*args)`'s result, computed in a child process (`_child`): a Found failure when it did not answer
    within `timeout` seconds of the child's start (the framework imported: a slow machine's start is not the
    plugin's time; the child is then killed) or exited without answering."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this process's state
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, step, args), daemon=True)
    child.start()
    send.close()
    try:
        for wait, what in ((STARTUP_S, "start"), (timeout, "step")):
            if not receive.poll(wait):
                return Found("", "", False, f"did not finish in {timeout:g} s and was stopped (a loop or a wait "
                                            "that never ends?)" if what == "step" else
                                            f"its child process did not start in {wait:g} s")
            try:
                answer = receive.recv()
            except EOFError:
                child.join(5)
                code = child.exitcode
                how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited (code {code})"
                return Found("", "", False, f"{how} without answering")
        return answer
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join()


def _child(send: Any, step: Callable[..., Any], args: tuple) -> None:
    """A step in the child process: its result sent back, then the process ends at once (a thread the plugin
    left would otherwise keep it alive). The plugin's prints go to stderr, so `--json` stays JSON."""
    import os
    import sys

    from avalon_agents import logs

    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logs.configure(0)
    send.send("started")  # the framework is imported: the step's time begins
    try:
        result = step(*args)
    except SystemExit as exc:
        result = Found("", "", False, f"called sys.exit({exc.code!r})")
    except BaseException as exc:  # noqa: BLE001 - the plugin's fault, sent back
        result = Found("", "", False, f"raised ({_fault(exc)})")
    try:
        send.send(result)
    finally:
        sys.stderr.flush()
        os._exit(0)


def _load_step(path: str, base: Path | None) -> str | tuple[list[tuple[str, str]], list[str]]:
    """In the child: load the plugin. Its items as (registry's what, name) and the problems of loading it (a
    thread left running, framework code replaced), or the one line saying why it cannot be loaded."""
    threads, code = _threads(), _framework_code()
    try:
        added = registered_by(lambda: load_plugin(path, base))
    except ValueError as exc:
        return str(exc)
    problems = _left_behind(threads, code, "while being imported")
    return [(registry.what, name) for registry, name in added if registry.follows is None], problems


def _check_step(path: str, base: Path | None, what: str, name: str, provider_model: str) -> Found:
    """In the child: load the plugin and run the item's check; the check fails too when it left a thread running
    or replaced framework code."""
    load_plugin(path, base)
    threads, code = _threads(), _framework_code()
    found = check_provider(name, provider_model) if what == "provider" else CHECKS[what](name)
    problems = _left_behind(threads, code, "while being checked")
    if problems:
        detail = "; ".join(problems)
        return replace(found, ok=False, detail=detail if found.ok else f"{found.detail}; {detail}")
    return found


def _threads() -> set[int]:
    import threading

    return {t.ident for t in threading.enumerate() if t.ident is not None}


def _left_behind(threads: set[int], code: dict[str, tuple[Any, Any]], when: str) -> list[str]:
    """The threads started since `threads` and still running, and the framework code changed since `code`
    (each a problem line)."""
    import threading
    from collections import Counter

    problems = []
    left = [t for t in threading.enumerate() if t.ident not in threads and t.is_alive()]
    if left:
        names = Counter(f"{t.name}{' (daemon)' if t.daemon else ''}" for t in left)
        problems.append(f"left {len(left)} thread(s) running {when}: " +
                        ", ".join(f"{name}{f' x{n}' if n > 1 else ''}" for name, n in names.items()))
    changed = _replaced(code)
    if changed:
        problems.append(f"replaced the framework's own code {when}: {', '.join(changed[:5])}"
                        + (f" and {len(changed) - 5} more" if len(changed) > 5 else ""))
    return problems


def _framework_code() -> dict[str, tuple[Any, Any]]:
    """Every function and class of avalon_agents imported now (module-level, and each class's attributes), and
    every registry's built-in items, by name: (the object, its code object) to compare with `_replaced`."""
    import inspect
    import sys

    code: dict[str, tuple[Any, Any]] = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "avalon_agents" or module_name.startswith("avalon_agents.")):
            continue
        for attr, value in list(vars(module).items()):
            if not (inspect.isfunction(value) or inspect.isclass(value)) or value.__module__ != module_name:
                continue
            code[f"{module_name}.{attr}"] = (value, getattr(value, "__code__", None))
            if inspect.isclass(value):
                for member, item in list(vars(value).items()):
                    if callable(item) or isinstance(item, (staticmethod, classmethod, property)):
                        inner = getattr(item, "__func__", item)
                        code[f"{module_name}.{attr}.{member}"] = (item, getattr(inner, "__code__", None))
    for registry in all_registries():
        for name, item in registry.items():
            if registry.is_builtin(name):
                code[f"the built-in {registry.what} {name!r}"] = (item, None)
    return code


def _replaced(code: dict[str, tuple[Any, Any]]) -> list[str]:
    """The names in `code` (`_framework_code`) whose object, or function's code, is not the same now."""
    now = _framework_code()
    return [name for name, (item, body) in code.items()
            if name not in now or now[name][0] is not item or now[name][1] is not body]


def as_json(found: Sequence[Found]) -> list[dict[str, Any]]:
    return [asdict(f) for f in found]


__all__ = ["CHECKS", "TIMEOUT", "Found", "as_json", "check_decision_kind", "check_judge", "check_metric", "check_module",
           "check_plugin", "check_preset", "check_provider", "check_seat_kind", "check_slot", "registered_by"]
