"""What `avalon run --check` prints: variants x series x games, the LLM calls and tokens to expect, what they
cost at the models' prices, and the least time the models' rate limits allow.

The per-seat estimates are what each module, agent kind and the belief probe declare (`expected`: `avalon bench
cost` figures for six seats, 6 players, official rules, 5 scripted games; docs/benchmarks.md, "Cost per game")
divided by 6; re-measure them with `avalon bench cost` after changing an agent (a slow test holds them to what
it measures).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from avalon_agents.agents.registry import expected_cost, learning_cost, needs_llm
from avalon_agents.analysis.stats import wilson
from avalon_agents.experiments.config import AgentSpec, Experiment
from avalon_agents.host.probe import PROBE_COST, PROBES_PER_SEAT
from avalon_agents.llm.pool import ClientPool
from avalon_agents.llm.registry import provider
from avalon_agents.llm.settings import ModelSettings
from avalon_agents.modules import AgentConfig
from avalon_agents.modules.base import SLOTS
from avalon_agents.prices import Cost, NoPrice, Prices, model_name

MEASURED = "2026-11-28, `avalon bench cost --games 5` (6 players, official rules, the scripted model, tiktoken)"
"""Where the declared figures come from: each module's `expected` (modules/standard.py), each agent kind's
(`expected` on its class), the belief probe's (host/probe.py)."""


def per_turn_pipeline(modules: AgentConfig) -> bool:
    """Whether the cognitive pipeline thinks before every answer: analysis or plan on with `cadence: per_turn`."""
    return any(modules.settings(slot).enabled and modules.settings(slot).options.get("cadence") == "per_turn"
               for slot in ("analysis", "plan"))


def module_table(modules: AgentConfig) -> dict[str, Cost]:
    """The cost per game of six seats of each enabled slot of the cognitive agent's pipeline, as its module
    declares it (`Module.expected`; a module that declares none counts as none)."""
    per_turn = per_turn_pipeline(modules)
    table = {}
    for slot in modules.enabled():
        expected = modules.module_class(slot).expected_with(modules.settings(slot).options)
        table[slot] = expected.of(per_turn) if expected is not None else Cost()
    return table


def undeclared(modules: AgentConfig) -> list[str]:
    """The enabled modules that declare no expected calls (`--check` counts them as none, and says so)."""
    return [modules.module_class(slot).name or slot for slot in modules.enabled()
            if modules.module_class(slot).expected is None]


def seat_cost(agent: AgentSpec, learning: bool = True) -> Cost:
    """Expected calls and tokens per game of one seat of this agent (disabled modules cost nothing; without
    `learning`, as in a series' last game, experience learning costs nothing either)."""
    if agent.kind == "cognitive":
        table = module_table(agent.modules or AgentConfig())
        return sum((cost for slot, cost in table.items() if learning or slot != "experience"), Cost()) * (1 / 6)
    cost = expected_cost(agent.kind) or Cost()
    return (cost if learning else cost + learning_cost(agent.kind) * -1) * (1 / 6)


def seats_of(exp: Experiment) -> list[tuple[str, float]]:
    """(agent name, seats it fills per game on average)."""
    rules = exp.game_rules()
    if exp.lineup is not None:
        return list(exp.lineup.items())
    if exp.rotation is not None:  # a tournament: every entrant sits players / entrants seats on average
        return [(name, exp.players / len(exp.rotation)) for name in exp.rotation]
    counts: dict[str, float] = {}
    for role in rules.roles:
        name = exp.agent_for_role(role)
        counts[name] = counts.get(name, 0) + 1
    return list(counts.items())


def agent_probes(agent: AgentSpec, probes: bool) -> Cost:
    """Expected calls and tokens per game of one seat's belief probes (none without `probes` or a model)."""
    return PROBE_COST * PROBES_PER_SEAT if probes and needs_llm(agent.kind) else Cost()


def agent_cost(exp: Experiment, name: str, learning: bool = True) -> Cost:
    """Expected calls and tokens per game of one seat of agent `name`, belief probes included."""
    agent = exp.agents[name]
    return seat_cost(agent, learning) + agent_probes(agent, exp.probes)


def game_cost(exp: Experiment, learning: bool = True) -> Cost:
    """Expected calls and tokens per game: every seat's agent's estimate (sides split by the role set)."""
    return sum((agent_cost(exp, name, learning) * n for name, n in seats_of(exp)), Cost())


def run_cost(exp: Experiment) -> Cost:
    """Expected calls and tokens of all the variant's games: a series' last game learns nothing (unless
    `learn_after_last`)."""
    last = game_cost(exp, learning=exp.learn_after_last)
    return game_cost(exp) * (exp.games - exp.series) + last * exp.series


def calls_per_game(exp: Experiment, learning: bool = True) -> float:
    return game_cost(exp, learning).calls


def calls_per_run(exp: Experiment) -> float:
    return run_cost(exp).calls


def pipeline(agent: AgentSpec) -> str:
    """How an agent plays, in words: the cognitive agent's cadence and calls, the others' kind."""
    if agent.kind != "cognitive":
        return agent.kind
    modules = agent.modules or AgentConfig()
    per_turn = [slot for slot in ("analysis", "plan") if modules.settings(slot).enabled
                and modules.settings(slot).options.get("cadence") == "per_turn"]
    combined = modules.settings("action").enabled and modules.settings("action").options.get("combine", True)
    off = [slot for slot in SLOTS if not modules.settings(slot).enabled]
    unknown = undeclared(modules)
    cadence = "+".join(per_turn) + " before every answer" if per_turn else "analysis and plan once per round"
    return (f"cognitive ({cadence}"
            f"; {'action and response in one call' if combined else 'action and response as separate calls'}"
            f"{'; off: ' + ', '.join(off) if off else ''}"
            f"{'; no expected calls declared, counted as none: ' + ', '.join(unknown) if unknown else ''})")


def decisions(exp: Experiment) -> str:
    settings = exp.model
    return "free text, read by the extractor" if settings is not None and settings.constrained is False else \
        "JSON-schema constrained where the model supports it"


def model_parts(exp: Experiment, name: str, override: ModelSettings | None,
                learning: bool = True) -> list[tuple[ModelSettings, Cost]]:
    """(complete model settings, expected cost per game of one seat) of an agent's calls, per model it calls:
    a cognitive agent's module with a model of its own is priced at that model."""
    agent = exp.agents[name]
    if not needs_llm(agent.kind):
        return []
    pool = ClientPool(override=override)
    base = agent.settings(exp.model)
    parts = [(pool.resolve(base), agent_cost(exp, name, learning))]
    if agent.kind == "cognitive" and agent.modules is not None:
        table = module_table(agent.modules)
        for slot in table:
            own = pool.resolve(agent.modules.model_for(slot, base))
            if own.spec != parts[0][0].spec and (learning or slot != "experience"):
                moved = table[slot] * (1 / 6)  # this slot's calls leave the agent's model for the module's own
                parts[0] = (parts[0][0], parts[0][1] + moved * -1)
                parts.append((own, moved))
    return parts


def variant_models(exp: Experiment, override: ModelSettings | None) -> dict[str, tuple[ModelSettings, Cost]]:
    """Per model spec: its settings and the variant's expected calls and tokens of it over all its games."""
    found: dict[str, tuple[ModelSettings, Cost]] = {}
    for learning, games in ((True, exp.games - exp.series), (exp.learn_after_last, exp.series)):
        for name, seats in seats_of(exp):
            for settings, cost in model_parts(exp, name, override, learning):
                before = found.get(settings.spec, (settings, Cost()))[1]
                found[settings.spec] = (settings, before + cost * (seats * games))
    return found


def dollars(models: dict[str, tuple[ModelSettings, Cost]], prices: Prices,
            cached: bool = False) -> tuple[float | None, list[str]]:
    """The dollars of these models' expected tokens (`cached`: the input a prompt cache serves at the cached-input
    price), and the models without a price (dollars None if any)."""
    total, missing = 0.0, []
    for spec, (_, cost) in models.items():
        try:
            total += prices.dollars(spec, cost.input_tokens, cost.output_tokens, cost.cached_tokens if cached else 0)
        except NoPrice:
            missing.append(model_name(spec))
    return (None if missing else total), missing


def least_seconds(settings: ModelSettings, cost: Cost) -> tuple[float | None, str | None]:
    """The least wall time one model's limits allow for these calls and tokens: (seconds or None, in words; None
    for a model that takes no time, the scripted one)."""
    rpm, tpm = settings.limits
    pace = provider(settings.provider).seconds_per_call
    if pace == 0:
        return 0.0, None
    if pace is not None:
        seconds = cost.calls * pace
        return seconds, (f"{settings.spec}: about {duration(seconds)} on 2 cores (one call at a time, at the "
                         f"quickstart's measured {pace:g} s a call on an idle machine; the progress bar's time left "
                         "uses the run's own pace)")
    if rpm or tpm:
        minutes = max(cost.calls / rpm if rpm else 0.0, cost.input_tokens / tpm if tpm else 0.0)
        limit = " and ".join(x for x in (f"{rpm:,.0f} RPM" if rpm else "", f"{tpm / 1000:,.0f}k TPM" if tpm
                                          else "") if x)
        return minutes * 60, f"{settings.spec}: at {limit}: at least {duration(minutes * 60)}"
    return None, (f"{settings.spec}: limits learned from the provider's answers when the run starts (set rpm/tpm, or "
                  "--rpm/--tpm, to see the least time)")


def least_time(models: dict[str, tuple[ModelSettings, Cost]]) -> list[str]:
    """Per model, the least wall time its limits allow for these calls and tokens, in words."""
    return [text for settings, cost in models.values() if (text := least_seconds(settings, cost)[1]) is not None]


def duration(seconds: float) -> str:
    """'2 h 31 min', '14 min', '40 s'."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def money(usd: float | None) -> str:
    return "no price" if usd is None else f"${usd:,.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}"


def priced(models: dict[str, tuple[ModelSettings, Cost]], prices: Prices) -> dict[str, Any]:
    """What these models' expected calls come to: calls, tokens, dollars (None when a model has no price) and
    the least time, in all and per model, with each price's date and source (the plan `--check --json` prints)."""
    total = sum((cost for _, cost in models.values()), Cost())
    usd, missing = dollars(models, prices)
    rows = []
    for spec, (settings, cost) in models.items():
        price = prices.price(spec)
        one, _ = dollars({spec: (settings, cost)}, prices)
        seconds, time_text = least_seconds(settings, cost)
        rows.append({"model": spec, "calls": round(cost.calls), "input_tokens": round(cost.input_tokens),
                     "output_tokens": round(cost.output_tokens), "usd": one,
                     "price": None if price is None else {"input": price.input, "output": price.output,
                                                          "cached_input": price.cached_input, "date": price.date,
                                                          "source": price.source},
                     "least_seconds": None if seconds is None else round(seconds, 1), "time": time_text})
    known = [r["least_seconds"] for r in rows]
    cached = dollars(models, prices, cached=True)[0]
    return {"calls": round(total.calls), "input_tokens": round(total.input_tokens),
            "output_tokens": round(total.output_tokens), "usd": None if usd is None else round(usd, 6),
            "cached_tokens": round(total.cached_tokens), "usd_cached": None if cached is None else round(cached, 6),
            "no_price": missing,
            "least_seconds": None if None in known else max(known, default=0.0), "models": rows}


def plan(variants: dict[str, Experiment], out: Path, override: ModelSettings | None = None,
         prices: Prices | None = None) -> dict[str, Any]:
    """The plan of a run (`avalon run --check`; `--json` prints it): per variant its series, games, expected calls,
    tokens and dollars and the precision its games give; the totals, the prices, the least time."""
    first = next(iter(variants.values()))
    prices = prices or Prices.shipped().over(first.prices)
    rows, everything = [], {}
    for name, exp in variants.items():
        cost = run_cost(exp)
        models = variant_models(exp, override)
        usd, _ = dollars(models, prices)
        for spec, (settings, part) in models.items():
            everything[spec] = (settings, everything.get(spec, (settings, Cost()))[1] + part)
        half, diff = precision(exp.games)
        rows.append({"variant": name, "series": exp.series, "games_per_series": exp.games_per_series,
                     "games": exp.games, "calls": round(cost.calls), "input_tokens": round(cost.input_tokens),
                     "output_tokens": round(cost.output_tokens), "usd": usd, "win_rate_ci_half": round(half, 4),
                     "detectable_difference": round(diff, 4)})
    return {"experiment": first.name, "rules": first.rules, "players": first.players,
            "decisions": decisions(first),
            "agents": {name: pipeline(agent) + (f", {agent.cards} role cards" if needs_llm(agent.kind) else "")
                       for name, agent in first.agents.items()},
            "variants": rows, "games": sum(r["games"] for r in rows), **priced(everything, prices),
            "estimated_from": MEASURED, "run_dir": str(out)}


def plan_lines(variants: dict[str, Experiment], out: Path, override: ModelSettings | None = None,
               prices: Prices | None = None, found: dict[str, Any] | None = None) -> list[str]:
    """The plan (`plan`, or `found` when made already) in words, as `avalon run --check` prints it."""
    p = found or plan(variants, out, override, prices)
    models = bool(p["models"])  # how decisions are read and what calls cost are said where a model is called
    lines = [f"experiment {p['experiment']}: {len(p['variants'])} variant(s), {p['rules']} rules, {p['players']} "
             "players", *([f"decisions: {p['decisions']}"] if models else []),
             *(f"agent {name}: {text}" for name, text in p["agents"].items()),
             f"{'variant':<28}{'series':>7}{'games/series':>13}{'games':>7}{'est. LLM calls':>16}"
             f"{'input tokens':>14}{'output tokens':>15}{'est. USD':>11}{'win-rate CI ±':>15}{'detectable diff.':>18}"]
    for r in p["variants"]:
        half, diff = r["win_rate_ci_half"], r["detectable_difference"]
        lines.append(f"{r['variant']:<28}{r['series']:>7}{r['games_per_series']:>13}{r['games']:>7}{r['calls']:>16,}"
                     f"{r['input_tokens']:>14,}{r['output_tokens']:>15,}{money(r['usd']):>11}"
                     f"{f'{half:.0%}' if half < 1 else '>100%':>15}{f'{diff:.0%}' if diff < 1 else '>100%':>18}")
    lines.append(f"{'total':<28}{'':>7}{'':>13}{p['games']:>7}{p['calls']:>16,}{p['input_tokens']:>14,}"
                 f"{p['output_tokens']:>15,}{money(p['usd']):>11}")
    if p["usd"] and p.get("cached_tokens"):
        lines.append(f"with a prompt cache: {money(p['usd_cached'])} (the {p['cached_tokens'] / p['input_tokens']:.0%} "
                     "of input tokens a provider's cache can serve, at its cached-input price; avalon bench cost)")
    if models:
        lines.append(f"calls and tokens: estimates per agent and pipeline ({MEASURED}); USD at the prices of "
                     "avalon_agents/data/prices.yaml and the config's prices:")
        lines += price_lines(p)
    lines.append("win-rate CI ±: half the width of a variant's 95% interval at a 50% win rate; detectable diff.: the "
                 "smallest difference between two variants' win rates found 80% of the time at the 5% level")
    lines.append(f"run directory: {p['run_dir']}")
    return lines


def price_lines(p: dict[str, Any]) -> list[str]:
    """A priced plan's prices (with date and source), the models without one, and the least time, in words."""
    lines = []
    for row in p["models"]:
        price = row["price"]
        if price is not None and (price["input"] or price["output"]):  # free models (embedded, scripted, replay): no line
            when = f" ({price['date']}, {price['source']})" if price["date"] else ""
            lines.append(f"  {model_name(row['model'])}: ${price['input']:g} input, ${price['output']:g} output per "
                         f"1M tokens{when}")
    lines += [f"  no price for {model}: give one with prices: in the config or --prices FILE" for model in p["no_price"]]
    return lines + [f"time: {row['time']}" for row in p["models"] if row["time"]]


def work_plan(what: str, settings: ModelSettings, cost: Cost, prices: Prices, cached: int = 0,
              estimated: str = "") -> dict[str, Any]:
    """The plan of a command's own calls to one model (the judges of `avalon analyze` and `avalon calibrate`, the
    probes of `avalon probe-humans`, the LLM seats of `avalon play`): `priced`, with what the calls are, the
    answers already cached (no call) and how the tokens were estimated."""
    return {"what": what, "cached": cached, "estimated_from": estimated, **priced({settings.spec: (settings, cost)},
                                                                                  prices)}


def work_lines(p: dict[str, Any]) -> list[str]:
    """A `work_plan` in words: 'plan: 120 judge calls (30 answers cached): 84,000 input and 9,600 output tokens of
    openai:gpt-4o-mini, $0.02', its prices and least time."""
    cached = f" ({p['cached']:,} answers cached, no call)" if p["cached"] else ""
    models = ", ".join(row["model"] for row in p["models"])
    lines = [f"plan: {p['calls']:,} {p['what']}{cached}: {p['input_tokens']:,} input and {p['output_tokens']:,} "
             f"output tokens of {models}, {money(p['usd'])}"]
    if p["estimated_from"]:
        lines.append(f"  tokens: {p['estimated_from']}")
    return lines + price_lines(p)


def precision(games: int, rate: float = 0.5) -> tuple[float, float]:
    """(half the width of the 95% Wilson interval `avalon run` prints for a win rate over `games` games, the
    smallest difference between two such variants a two-sided test at the 5% level detects with 80% power, by
    the normal approximation), at the given rate."""
    if games <= 0:
        return float("nan"), float("nan")
    low, high = wilson(round(rate * games), games)
    spread = (rate * (1 - rate) / games) ** 0.5
    return (high - low) / 2, (1.96 + 0.84) * spread * 2 ** 0.5


JUDGE_ANSWER = Cost(0, 0, 60)
"""Output tokens of one judge's answer (a short JSON object: a label and a reason): an estimate."""


def judge_cost(tasks: list[Any], cache_dir: Path, spec: str) -> tuple[Cost, int]:
    """(the calls of these judge tasks (analysis.judges.run.JudgeTask) not in the judgments' cache under
    `cache_dir`, their prompts' tokens counted and their answers' estimated; the answers cached), read without
    writing anything."""
    from avalon_agents.analysis.judges.cache import CACHE_FILE, JudgmentCache, cache_key
    from avalon_agents.llm.tokens import count_tokens

    cache = JudgmentCache(folder=cache_dir) if (Path(cache_dir) / CACHE_FILE).is_file() else None
    cost, cached = Cost(), 0
    for task in tasks:
        if cache is not None and cache.get(cache_key(task.judge, task.prompt_hash, [task.prompt], spec)) is not None:
            cached += 1
        else:
            cost = cost + Cost(1, count_tokens(task.prompt), 0) + JUDGE_ANSWER
    return cost, cached


def judge_plan(settings: ModelSettings, cost: Cost, prices: Prices, cached: int) -> dict[str, Any]:
    """The `work_plan` of judge calls (`judge_cost`)."""
    return work_plan("judge calls", settings, cost, prices, cached,
                     f"prompts counted (tiktoken), answers estimated at {JUDGE_ANSWER.output_tokens:g} tokens each")


def probe_cost(games: list[Any], out: Path, spec: str) -> tuple[Cost, int]:
    """(the belief probes of these imported games (analysis.humans.games.HumanGame: every seat at every quest's
    end) not yet answered by `spec` in OUT's answers (`avalon probe-humans`' cache), at the probe's declared cost;
    the answers cached)."""
    import json

    from avalon_agents.host.human_probes import ANSWERS

    asked = set()
    answers = Path(out) / ANSWERS
    if answers.is_file():
        for line in answers.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a half-written line
            if isinstance(entry, dict) and entry.get("model") == spec:
                asked.add((entry.get("game"), entry.get("seat"), entry.get("quest")))
    jobs = [(g.name, seat, end.quest) for g in games for end in g.quest_ends for seat in g.rules.seats]
    cached = sum(job in asked for job in jobs)
    return PROBE_COST * (len(jobs) - cached), cached


# ------------------------------------------------------------------ any study's plan, from its game jobs


def job_cost(job: Any) -> dict[str, tuple[ModelSettings, Cost]]:
    """Per model: the expected calls and tokens of one game job (host.job.GameJob): each LLM seat's agent kind's
    declared cost (a cognitive seat's modules as its setup says; the red team's attacker seat: its inner agent's),
    its belief probes if the job asks them, at the model its setup resolves to."""
    found: dict[str, tuple[ModelSettings, Cost]] = {}
    for kind, setup in zip(job.kinds, job.seat_setups()):
        if not needs_llm(kind):
            continue
        inner = setup.options.get("inner")  # a seat that plays through another agent (the attacker) costs its calls
        played = inner["kind"] if isinstance(inner, dict) and isinstance(inner.get("kind"), str) else kind
        agent = AgentSpec(kind=played, modules=setup.agent_config if played == "cognitive" else None)
        settings = setup.clients.resolve(setup.settings)
        before = found.get(settings.spec, (settings, Cost()))[1]
        found[settings.spec] = (settings, before + seat_cost(agent) + agent_probes(agent, job.probes))
    return found


def study_plan(study: Any, out: Path | None, prices: Prices) -> dict[str, Any]:
    """The plan of any study (experiments.study.Study) from its game jobs: per group (the budget's: '' is the
    whole study's) its games and their expected
    calls, tokens and dollars (each lane's first game's job times its games), then the totals, the prices and the
    least time (`priced`). Nothing is played or written."""
    clients = ClientPool(limit=study.llm_calls, override=study.override)
    groups: dict[str, tuple[int, dict[str, tuple[ModelSettings, Cost]]]] = {}
    everything: dict[str, tuple[ModelSettings, Cost]] = {}
    for lane in study.lanes(Path(out or ".")):
        games, models = groups.get(lane.group, (0, {}))
        for spec, (settings, cost) in job_cost(study.jobs(lane, clients, 1)(1)).items():
            for table in (models, everything):
                table[spec] = (settings, table.get(spec, (settings, Cost()))[1] + cost * len(lane.paths))
        groups[lane.group] = (games + len(lane.paths), models)
    rows = []
    for group, (games, models) in groups.items():
        cost = sum((c for _, c in models.values()), Cost())
        rows.append({"group": group, "games": games, "calls": round(cost.calls),
                     "input_tokens": round(cost.input_tokens), "output_tokens": round(cost.output_tokens),
                     "usd": dollars(models, prices)[0]})
    return {"study": study.name, "command": study.command, "games": sum(r["games"] for r in rows), "groups": rows,
            **priced(everything, prices), "estimated_from": MEASURED, "run_dir": str(out) if out else None}


def study_estimates(found: dict[str, Any]) -> dict[str, float]:
    """Per group, the dollars one game is expected to cost (a `study_plan`'s: the budget's before a game of the
    group finished). Raises ValueError naming a model without a price."""
    if found["usd"] is None:
        raise ValueError(f"budget-usd: no price for {', '.join(found['no_price'])}, so no budget can be kept (give "
                         "one with --prices FILE)")
    return {r["group"]: (r["usd"] or 0.0) / r["games"] if r["games"] else 0.0 for r in found["groups"]}


def study_plan_lines(found: dict[str, Any]) -> list[str]:
    """A `study_plan` in words: the games, calls, tokens and dollars in all and per group, the prices, the least
    time and the run directory."""
    lines = [f"plan: {found['games']:,} games, {found['calls']:,} LLM calls: {found['input_tokens']:,} input and "
             f"{found['output_tokens']:,} output tokens, {money(found['usd'])}"]
    if len(found["groups"]) > 1:
        lines += [f"  {r['group'] or found['study']}: {r['games']:,} games, {r['calls']:,} calls, {money(r['usd'])}"
                  for r in found["groups"]]
    if found["models"]:
        lines.append(f"  calls and tokens: declared per agent kind and module ({MEASURED})")
    lines += price_lines(found)
    return lines + ([f"run directory: {found['run_dir']}"] if found["run_dir"] else [])
