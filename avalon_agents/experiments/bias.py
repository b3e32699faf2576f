"""Order effects measured (`avalon bias CONFIG`): paired games that differ in one listing order only.

For each game seed the study plays the game once with every listing order fixed (`fixed/`, today's wording) and
once per studied list with that list alone reversed (or shuffled) (`<list>/`): the seats in prose (`players`),
the answers offered (`options`), a proposal's speeches as the summary lists them (`speeches`; see
avalon_agents/orders.py), or the agents' seats (`seats`: the same deal, the agents seated the other way round).
The deal, the leaders, every agent's seed and the models' sampling seeds are the same in both games of a pair;
only the wording's order differs, and whatever it changes in the answers carries through the rest of the game.

Measured per game, per agent (the seats it sits on) and for the table as a whole, as counts:

- `approve`: the agent's votes that approve, of its votes;
- `first_vote_approve`: the same in the game's first vote (before differences can pile up);
- `team_low_seats`: the other members of the agent's own proposals (assigned teams not counted) from seats
  1..players/2, the seats the fixed wording lists first and the reversed one last (not for `seats`: an agent
  moved to other seats leads from them, and the share of low seats left to pick moves with it);
- `good_wins`: the good side won (the table only);
- `wins`: the agent's seats on the winning side, of its seats (each agent, where there are several).

Per list, agent and measure: the pooled rate in each condition, the difference (treated minus fixed) with a 95%
interval, a p-value and, since a study makes many comparisons, the Benjamini-Hochberg adjusted p-value over all
of them (`q_value`). The pair is the unit (the votes and seats of one game are not independent): the interval
is the percentile bootstrap of the pooled difference resampling whole pairs, over the pairs where both games have
the measure, and the p-value the permutation test that swaps the two games of each pair (exact up to 13 pairs;
one pair gives 1.0); both `analysis.stats` (`paired_interval`, `paired_p`). From fewer than 5 pairs, or where
the bootstrap sees no spread, the interval is widened to cover Newcombe's interval of the pooled counts (never
zero width) and the row is flagged `few_pairs`: that interval counts a game's votes as independent, a floor
rather than a measurement (the small-sample rule of every resampled interval, `stats.small_sample`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import pandas as pd
from pydantic import Field, ValidationError, model_validator

from avalon_agents.agents.registry import needs_llm
from avalon_agents.aio import run_sync
from avalon_agents.analysis.stats import SMALL, few, paired_interval, paired_p
from avalon_agents.checks import Name, refuse_reserved
from avalon_agents.core.events import GameEnded, GameEvent, TeamProposed, VoteCast, VotesRevealed
from avalon_agents.core.types import Team
from avalon_agents.experiments import scheduler
from avalon_agents.experiments.config import (
    COMMAND_KEYS, AgentSpec, PairedStudy, check_command, config_error, read_config,
)
from avalon_agents.experiments.study import (
    Health,
    Lane,
    ConfigStudy,
    Outcome,
    config_fingerprint,
    health_lines,
    markdown_head,
    markdown_row,
    one_health,
    percent,
    provenance,
    write_report,
)
from avalon_agents.formats import difference_text, p_text
from avalon_agents.host.job import GameJob
from avalon_agents.llm.pool import ClientPool
from avalon_agents.llm.settings import ModelSettings
from avalon_agents.orders import LISTS, Orders
from avalon_agents.records.run_dir import Seating, game_dir, is_done, read_events

FIXED_DIR = "fixed"
TABLE = "table"
"""The agent name of the measures over every seat."""
MEASURES = ("approve", "first_vote_approve", "team_low_seats", "good_wins", "wins")
COLUMNS = ["list", "agent", "measure", "pairs", "fixed_k", "fixed_n", "fixed_rate", "treated_k", "treated_n",
           "treated_rate", "diff", "ci_low", "ci_high", "p_value", "q_value", "method", "few_pairs"]
BOOTSTRAP_PAIRS = "bootstrap over pairs"
WIDENED = "bootstrap over pairs, widened to newcombe (pooled)"


class BiasStudy(PairedStudy):
    """An `avalon bias` config: the agents and their seats, the lists studied, the treatment and the pairs."""

    agents: dict[Name, AgentSpec] = Field(min_length=1, description="name -> agent (the keys of an experiment's)")
    seats: list[str] | None = Field(None, description="the agent of each seat, by name (default: the only agent "
                                                      "on every seat)")
    lists: list[Literal["players", "options", "speeches", "seats"]] = Field(
        default_factory=lambda: [*LISTS, "seats"], min_length=1,
        description="the orders studied, one at a time: the prompts' lists, or `seats` (who sits where)")
    treatment: Literal["reversed", "shuffled"] = Field("reversed", description="what the treated game of a pair "
                                                                               "does to its list")
    games: int = Field(10, ge=1, le=100_000, description="pairs per list")
    concurrency: int = Field(4, ge=1, le=256, description="games played at once")

    @model_validator(mode="after")
    def _seats(self) -> BiasStudy:
        for name in self.agents:
            refuse_reserved(name, {TABLE: "the rows of the whole table"})
        if self.seats is None:
            if len(self.agents) != 1:
                raise ValueError("seats: name the agent of each seat when there are several agents")
            self.seats = [next(iter(self.agents))] * self.players
        if len(self.seats) != self.players:
            raise ValueError(f"seats: {len(self.seats)} named for {self.players} players")
        unknown = [s for s in self.seats if s not in self.agents]
        if unknown:
            raise ValueError(f"seats: no agent named {unknown[0]!r} (agents: {', '.join(self.agents)})")
        if len(set(self.lists)) != len(self.lists):
            raise ValueError("lists: a list is named twice")
        return self

    def seeds(self) -> list[int]:
        return list(range(self.seed, self.seed + self.games))

    def orders(self, treated: str | None, seed: int) -> Orders:
        """The fixed orders (treated None or `seats`) or the list `treated` alone under the treatment."""
        return Orders.make(seed, self.players, modes={treated: self.treatment} if treated in LISTS else None)

    def seating(self, treated: str | None, seed: int) -> list[str]:
        """The agent of each seat: as configured, or, when the seats are studied, in reverse (or drawn from the
        seed); the deal stays, so each agent meets other seats and roles."""
        names = list(self.seats or [])
        if treated != "seats":
            return names
        if self.treatment == "reversed":
            return names[::-1]
        random.Random(f"avalon-bias-seats:{seed}").shuffle(names)
        return names


def load_bias(path: str | Path) -> BiasStudy:
    """The config at `path`. Raises ValueError naming the file and the field."""
    path = Path(path)
    raw, node = read_config(path)
    check_command(raw, path, "bias")
    try:
        cfg = BiasStudy.model_validate(raw)
        cfg.game_rules()
    except ValidationError as exc:
        raise config_error(exc, path, node) from None
    except ValueError as exc:
        raise ValueError(f"{path}: rules: {exc}") from None
    return cfg


# ------------------------------------------------------------------ playing


def pair_game(out: Path, treated: str | None, seed: int) -> Path:
    """The game of `seed` with the list `treated` reordered (None: the fixed orders)."""
    return game_dir(out / (treated or FIXED_DIR), seed)


def game_job(cfg: BiasStudy, treated: str | None, seed: int, clients: ClientPool) -> GameJob:
    """One game of a pair: the fixed orders (treated None) or the list `treated` under the treatment."""
    rules = cfg.game_rules()
    names = cfg.seating(treated, seed)
    specs = [cfg.agents[name] for name in names]
    llm_game = any(needs_llm(s.kind) for s in specs)
    setups = [s.setup(cfg.model, cfg.extractor.model if llm_game else None, clients, fresh=True) for s in specs]
    # seated as the runner seats an experiment's games: `avalon analyze OUT` then reads each condition as a variant
    place = Seating(agents=dict(zip(rules.seats, names)), series=1, game=seed, variant=treated or FIXED_DIR,
                    seed=seed)
    return GameJob(rules=rules, seed=seed, kinds=tuple(s.kind for s in specs), setups=tuple(setups), seating=place,
                   orders=cfg.orders(treated, seed))


# ------------------------------------------------------------------ measuring


def game_counts(events: Sequence[GameEvent], seats: dict[str, list[int]], players: int) -> dict[tuple, tuple]:
    """(agent, measure) -> (k, n) of one game (see the module's docstring); measures with n = 0 are left out."""
    low = set(range(1, players // 2 + 1))
    votes: dict[int, list[bool]] = {}
    first: dict[int, bool] = {}
    picks: dict[int, list[int]] = {}
    secret = [e for e in events if isinstance(e, VoteCast)]
    for e in events:
        if isinstance(e, VotesRevealed):
            cast = {s: True for s in e.approvals} | {s: False for s in e.rejections}
            if not cast:  # secret votes: each seat's own vote event of this proposal
                cast = {v.seat: v.approve for v in secret if (v.quest, v.attempt) == (e.quest, e.attempt)}
            if not votes:  # the game's first vote
                first.update(cast)
            for seat, approve in cast.items():
                votes.setdefault(seat, []).append(approve)
        elif isinstance(e, TeamProposed) and not e.assigned:
            picks.setdefault(e.leader, []).extend(s for s in e.team if s != e.leader)
    out: dict[tuple, tuple] = {}
    groups = {TABLE: list(range(1, players + 1))}
    if len(seats) > 1:  # one agent on every seat: its rows would be the table's
        groups |= seats
    for agent, mine in groups.items():
        cast = [v for s in mine for v in votes.get(s, [])]
        firsts = [first[s] for s in mine if s in first]
        chosen = [p for s in mine for p in picks.get(s, [])]
        for measure, (k, n) in {"approve": (sum(cast), len(cast)),
                                "first_vote_approve": (sum(firsts), len(firsts)),
                                "team_low_seats": (sum(p in low for p in chosen), len(chosen))}.items():
            if n:
                out[(agent, measure)] = (k, n)
    ended = next((e for e in events if isinstance(e, GameEnded)), None)
    if ended is not None:
        out[(TABLE, "good_wins")] = (int(ended.winner is Team.GOOD), 1)
        won = {s for s, role in ended.roles.items() if role.side is ended.winner}
        for agent, mine in seats.items():
            if len(seats) > 1 and mine:
                out[(agent, "wins")] = (sum(s in won for s in mine), len(mine))
    return out


def compare(pairs: Sequence[tuple[tuple[int, int], tuple[int, int]]]) -> dict[str, Any]:
    """The difference of one measure between the conditions over its pairs [((k, n) fixed, (k, n) treated)]:
    the pooled counts and rates, their difference, its interval resampling pairs and the pairs-swapped p-value
    (see the module's docstring), `method` and `few_pairs` (fewer than 5 pairs: widened, a floor)."""
    fk, fn = sum(f[0] for f, _ in pairs), sum(f[1] for f, _ in pairs)
    tk, tn = sum(t[0] for _, t in pairs), sum(t[1] for _, t in pairs)
    row = {"pairs": len(pairs), "fixed_k": fk, "fixed_n": fn, "fixed_rate": fk / fn if fn else math.nan,
           "treated_k": tk, "treated_n": tn, "treated_rate": tk / tn if tn else math.nan}
    row["diff"] = row["treated_rate"] - row["fixed_rate"]
    counts = [[f[0] for f, _ in pairs], [f[1] for f, _ in pairs], [t[0] for _, t in pairs], [t[1] for _, t in pairs]]
    low, high, widened = paired_interval(*counts)
    row.update(ci_low=low, ci_high=high, p_value=paired_p(*counts), few_pairs=few(len(pairs)),
               method=WIDENED if widened else BOOTSTRAP_PAIRS)
    return row


def measure(cfg: BiasStudy, out: Path, pairs: Sequence[tuple[str, int]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per list, agent and measure, one row per pair, agent and measure) from the finished games."""
    counts = {}

    def of(treated: str | None, seed: int) -> dict[tuple, tuple]:
        key = (treated, seed)
        if key not in counts:
            seats: dict[str, list[int]] = {}
            for seat, name in enumerate(cfg.seating(treated, seed), start=1):
                seats.setdefault(name, []).append(seat)
            counts[key] = game_counts(read_events(pair_game(out, treated, seed)), seats, cfg.players)
        return counts[key]

    pair_rows, grouped = [], {}
    for name, seed in pairs:
        fixed, treated = of(None, seed), of(name, seed)
        for key in sorted(fixed.keys() & treated.keys(), key=lambda k: (k[0] != TABLE, k[0], MEASURES.index(k[1]))):
            if name == "seats" and key[1] == "team_low_seats":
                continue  # moved agents lead from other seats: the share of low seats left to pick changes with them
            (fk, fn), (tk, tn) = fixed[key], treated[key]
            pair_rows.append({"list": name, "seed": seed, "agent": key[0], "measure": key[1], "fixed_k": fk,
                              "fixed_n": fn, "treated_k": tk, "treated_n": tn})
            grouped.setdefault((name, *key), []).append((fixed[key], treated[key]))
    rows = [{"list": name, "agent": agent, "measure": m, **compare(found)}
            for (name, agent, m), found in grouped.items()]
    tested = [r for r in rows if r["p_value"] == r["p_value"]]
    if tested:  # a study makes many comparisons: Benjamini-Hochberg's adjusted p over all of them
        from scipy.stats import false_discovery_control

        for r, q in zip(tested, false_discovery_control([r["p_value"] for r in tested])):
            r["q_value"] = float(q)
    return pd.DataFrame(rows, columns=COLUMNS), pd.DataFrame(pair_rows)


# ------------------------------------------------------------------ output


def table_lines(summary: pd.DataFrame) -> list[str]:
    """The printed table: per list, agent and measure, the two rates and the difference with its interval."""
    lines = [f"{'list':<9} {'agent':<12} {'measure':<19} {'pairs':>5} {'fixed':>13} {'treated':>13} "
             f"{'diff [95% CI]':>22}      p      q  note"]
    for r in summary.to_dict("records"):
        fixed = f"{r['fixed_k']}/{r['fixed_n']}"
        treated = f"{r['treated_k']}/{r['treated_n']}"
        ci = difference_text(r["diff"], r["ci_low"], r["ci_high"])
        p, q = (p_text(v, "") or "n/a" for v in (r["p_value"], r["q_value"]))
        lines.append(f"{r['list']:<9} {r['agent'][:12]:<12} {r['measure']:<19} {r['pairs']:>5} {fixed:>13} "
                     f"{treated:>13} {ci:>22} {p:>6} {q:>6}  {_note(r)}".rstrip())
    lines.append(INTERVALS)
    if _few(summary):
        lines.append(FEW_NOTE)
    return lines


INTERVALS = ("95% CI: bootstrap resampling whole pairs; p: the two games of each pair swapped (permutation test); "
             "q: Benjamini-Hochberg over the study.")
FEW_NOTE = (f"few pairs: fewer than {SMALL} pairs; the interval is widened to Newcombe's over the pooled counts, "
            "which counts a game's votes as independent: a floor, not a result. Run more pairs (--games N).")
INTRO = ("Pairs of games from one seed: every listing order fixed, and one list {treatment}. Per list, agent and "
         "measure: the pooled counts in each condition and the difference (treated minus fixed, signed percentages) "
         "with its 95% interval. " + INTERVALS + " See docs/analysis.md#intervals and "
         "docs/reliability.md#order-effects-measured.")
MD_COLUMNS = ("list", "agent", "measure", "pairs", "fixed", "treated", "diff", "95% CI", "p", "q (BH)", "method",
              "note")


def _pp(value: float) -> str:
    return percent(value, signed=True)  # formats': a difference of shares, '+4%'


def _note(row: dict[str, Any]) -> str:
    return "few pairs" if row.get("few_pairs") else ""


def _few(summary: pd.DataFrame) -> bool:
    return bool(summary.get("few_pairs", pd.Series(dtype=bool)).any())


# ------------------------------------------------------------------ the study


@dataclass
class OrderBias(ConfigStudy):
    """`avalon bias` as a study: per seed, a lane of one game per condition (the fixed orders, then each studied
    list treated), a group per condition; measured pair by pair."""

    command: ClassVar[str] = "bias"
    result: ClassVar[dict[str, str]] = {"Paired comparisons": "bias.csv"}
    config_keys: ClassVar[tuple[str, ...]] = COMMAND_KEYS["bias"]

    cfg: BiasStudy
    override: ModelSettings | None = None
    config_path: Path | None = None

    @classmethod
    def load(cls, config: Path, override: ModelSettings | None = None) -> OrderBias:
        return cls(load_bias(config), override, Path(config))

    def lanes(self, out: Path) -> list[Lane]:
        # pair by pair (a seed's fixed game, then its treated ones), so a run stopped early leaves whole pairs
        return [Lane(f"{treated or FIXED_DIR}/{game_dir(Path(), seed)}", treated or FIXED_DIR,
                     (pair_game(out, treated, seed),), key=(treated, seed))
                for seed in self.cfg.seeds() for treated in (None, *self.cfg.lists)]

    def jobs(self, lane: Lane, clients: ClientPool, first: int) -> Callable[[int], GameJob]:
        treated, seed = lane.key
        return lambda n: game_job(self.cfg, treated, seed, clients)

    def fingerprint(self) -> dict[str, Any]:
        """What decides the games (more pairs or lists, concurrency and health limits may change on a resume)."""
        return config_fingerprint("study", self.cfg, ("games", "lists", "concurrency", "health", "name"),
                                  self.override)

    def measure(self, out: Path) -> dict[str, Any]:
        """{summary, pairs (one row per pair, agent and measure), provenance} of the pairs whose games finished."""
        cfg = self.cfg
        pairs = [(name, seed) for name in cfg.lists for seed in cfg.seeds()
                 if is_done(pair_game(out, None, seed)) and is_done(pair_game(out, name, seed))]
        summary, pair_rows = measure(cfg, out, pairs)
        pool = ClientPool(override=self.override)
        models = sorted({pool.resolve(cfg.agents[n].settings(cfg.model)).public().get("spec", "?")
                         for n in set(cfg.seats or []) if needs_llm(cfg.agents[n].kind)})
        prov = provenance(self.config_path, models=models, rules=cfg.rules, players=cfg.players, seats=cfg.seats,
                          agents={n: a.model_dump(mode="json", exclude_defaults=True) for n, a in cfg.agents.items()},
                          lists=cfg.lists, treatment=cfg.treatment, pairs=len(pairs), seeds=cfg.seeds())
        return {"summary": summary, "pairs": pair_rows, "provenance": prov}

    def report(self, out: Path, measured: dict[str, Any], health: Health) -> tuple[Path, Path]:
        """OUT/bias.csv, OUT/pairs.csv, OUT/bias.json (provenance) and OUT/bias.md (the table and its provenance)."""
        summary, prov = measured["summary"], measured["provenance"]
        md = markdown_head(f"Order effects: {self.cfg.name}", INTRO.format(treatment=self.cfg.treatment),
                           one_health(health), MD_COLUMNS)
        for r in summary.to_dict("records"):
            p, q = (p_text(v, "") or "n/a" for v in (r["p_value"], r["q_value"]))
            md.append(markdown_row((r["list"], r["agent"], r["measure"], r["pairs"], f"{r['fixed_k']}/{r['fixed_n']}",
                                    f"{r['treated_k']}/{r['treated_n']}", _pp(r["diff"]),
                                    f"[{_pp(r['ci_low'])}, {_pp(r['ci_high'])}]", p, q, r["method"], _note(r))))
        if _few(summary):
            md += ["", FEW_NOTE]
        return write_report(out, "bias", {"bias": summary, "pairs": measured["pairs"]},
                            {"provenance": prov, "health": one_health(health)}, md, prov)

    def lines(self, outcome: Outcome) -> list[str]:
        prov = outcome.measured["provenance"]
        return [f"produced by: models {', '.join(prov['models']) or 'none'}; rules {self.cfg.rules}; config "
                f"{self.config_path} ({prov['config_sha256']}); commit {prov['commit'] or 'unknown'}; "
                f"{prov['pairs']} pairs", *table_lines(outcome.measured["summary"]),
                f"wrote {outcome.files[0]} and {outcome.files[1]}", *health_lines(outcome.health)]

    def json(self, outcome: Outcome) -> dict[str, Any]:
        m = outcome.measured
        return {"out": outcome.out, "provenance": m["provenance"], "summary": m["summary"], "pairs": m["pairs"],
                "health": one_health(outcome.health), "files": outcome.files}


def run_study(cfg: BiasStudy, out: Path, override: ModelSettings | None = None,
              config_path: Path | None = None) -> dict[str, Any]:
    """Play the study under `out` (locked; finished games kept; a changed config refused), measure it and write
    its report: {summary, pairs, health (line, problems) or None, provenance, files}."""
    outcome = run_sync(scheduler.run(OrderBias(cfg, override, config_path), Path(out)))
    return {**{k: outcome.measured[k] for k in ("summary", "pairs", "provenance")},
            "health": outcome.health.get(""), "files": outcome.files}
