"""Outcome metrics of the paper (Section 5.2, 6.1, 6.2, Appendix C) computed from the structured records.

Each function takes a `RunData` and the columns to group by, and returns one row per group with `value`,
its 95% CI (`ci_low`, `ci_high`: Wilson's over games for one yes/no per game, else resampling games, never
narrower than Wilson's interval of the pooled counts below 20 games; see `analysis.stats`) and the method that gave
it (`ci_method`), `n` (what the rate is over), `games` and `few_games` (fewer than 5 games: the interval is widened
to the pooled counts' Wilson interval as one trial a game, a floor).
Definitions, as implemented:

- Winning Rate (eq. 5): games the group's side won / games played.
- Quest Engagement Rate (eq. 6): quests a seat was on the team of / quests played in its games.
- Failure Vote Rate (eq. 7): fail cards a seat played / quest cards it played.
- Leader Approval Rate (6.1): approve votes on teams a leader proposed / votes on them.
- Leader self-inclusion: proposals that include the leader / proposals; its success: those teams that went
  on the quest / self-including proposals. (Not the paper's self-recommendation, which judges every
  discussion speech: `behavior.self_recommendation`. Saved outputs before the rename call this table
  `self_recommendation`.)
- Valid Response Rate (eq. 8): decisions whose first answer gave a legal action (no re-ask, no fallback) /
  decisions, LLM seats only (the extractor's `valid` flag; docs/analysis.md).
- Merlin assassination rate: assassinations that named Merlin / assassinations (by whoever carried them).
- Votes on clean and dirty teams: reject votes / votes, for teams without and with an evil player.
- Cost: LLM calls and tokens per game, per module.
- Versus the reference: each variant's win rate minus its reference variant's (the first variant with the
  same agents on each side), per side, with Newcombe's interval and Fisher's exact p-value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from avalon_agents.analysis.load import RunData
from avalon_agents.analysis.stats import METHOD, fisher_p, newcombe, rate
from avalon_agents.core.types import Role, Team
from avalon_agents.prices import Prices
from avalon_agents.registry import Registry

GROUP = ("variant", "agent", "role")
EVIL_ROLES = tuple(role.value for role in Role if role.side is Team.EVIL)


def role_column(role: str) -> str:
    """A role's name as a column's suffix: `qer_Morgana`, `qer_Minion_of_Mordred`."""
    return role.replace(" ", "_")


def roles_in_play(data: RunData, side: Team | None = None) -> list[str]:
    """The roles dealt in the run's games (of `side`, when given), in the order of the role cards: the table's
    per-role columns follow these, so a role not in play has no column and every role in play has one."""
    dealt = set(data.seats["role"]) if "role" in data.seats else set()
    return [role.value for role in Role if role.value in dealt and (side is None or role.side is side)]


def win_rate(data: RunData, by: Sequence[str] = ("variant", "side")) -> pd.DataFrame:
    """Winning Rate per group of seat columns (a side, an agent, a role): one unit per game and group."""
    seats = data.seats.merge(data.games[["game", "winner"]], on="game")
    seats = seats.assign(won=seats["side"] == seats["winner"]).drop_duplicates([*by, "game"])
    return rate(seats, by, "won")


def quest_engagement(data: RunData, by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Quest Engagement Rate: quests on the team / quests played, per seat-game, summed over the group."""
    on_team = data.quests.explode("team").rename(columns={"team": "seat"}).groupby(["game", "seat"]).size()
    seats = data.seats.merge(data.games[["game", "quests_played"]], on="game")
    seats["on_team"] = on_team.reindex(pd.MultiIndex.from_arrays([seats["game"], seats["seat"]]),
                                       fill_value=0).to_numpy()  # one lookup for all: .get per seat took 5 s
    return rate(seats, by, "on_team", "quests_played")


def failure_votes(data: RunData, by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Failure Vote Rate: fail cards / quest cards played. `applies` False: none of the group's cards could fail
    (good seats under rules without `good_may_fail`): its 0 is the rules', not a measurement, and it gets no
    interval (NaN; a figure shows n/a)."""
    cards = data.cards.assign(fail=~data.cards["success"].astype(bool))
    could = cards["could_fail"] if "could_fail" in cards else pd.Series(True, index=cards.index)
    table = rate(cards, by, "fail")
    if table.empty:
        return table.assign(applies=pd.Series(dtype=bool))
    keys = list(by)
    possible = cards.assign(applies=could.fillna(True).astype(bool))
    possible = (possible.groupby(keys, dropna=False)["applies"].any().reset_index() if keys
                else pd.DataFrame({"applies": [bool(possible["applies"].any())]}))
    table = table.merge(possible, on=keys, how="left") if keys else table.assign(applies=possible["applies"].iloc[0])
    table["applies"] = table["applies"].fillna(True).astype(bool)
    table.loc[~table["applies"], ["ci_low", "ci_high", METHOD]] = float("nan"), float("nan"), None
    return table


def leader_approval(data: RunData, by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Leader Approval Rate: approvals of a leader's teams / votes cast on them (assigned teams have none)."""
    voted = data.proposals[data.proposals["votes"].notna()]
    return rate(voted, by, "approvals", "votes")


def leader_self_inclusion(data: RunData, by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Leaders' proposals that include themselves (`metric` "rate") and, of those, teams that went (`metric`
    "success")."""
    proposals = data.proposals
    mine = proposals[proposals["self_included"].astype(bool)]
    return pd.concat([rate(proposals, by, "self_included").assign(metric="rate"),
                      rate(mine, by, "went").assign(metric="success")], ignore_index=True)


def valid_responses(data: RunData, by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Valid Response Rate (eq. 8): decisions whose first answer gave a legal action, without a re-ask or a
    fallback, over decisions (the extractor's records of LLM seats)."""
    return rate(data.extractions, by, "valid")


def assassinations(data: RunData, by: Sequence[str] = ("variant", "agent")) -> pd.DataFrame:
    """Merlin assassination rate, grouped by the columns of the seat that carried the assassination (the
    Assassin, or the role the rules name, e.g. a Minion or Mordred)."""
    events = data.events
    if events.empty or "assassin" not in events:
        return rate(pd.DataFrame(columns=["game", *by, "hit"]), by, "hit")
    shots = events[events["type"] == "assassination"][["game", "assassin", "hit"]].rename(columns={"assassin": "seat"})
    shots = shots.assign(seat=shots["seat"].astype(int)).merge(data.seats, on=["game", "seat"])
    return rate(shots, by, "hit")


def team_votes(data: RunData, by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Reject rate on clean teams (`team` "clean") and on teams with an evil player (`team` "dirty")."""
    votes = data.votes.assign(reject=data.votes["vote"] == "reject",
                              team=data.votes["clean"].map({True: "clean", False: "dirty"}))
    return rate(votes, [*by, "team"], "reject")


def cost(data: RunData, by: Sequence[str] = ("variant", "module"), prices: Prices | None = None) -> pd.DataFrame:
    """Mean LLM calls, input and output tokens and dollars per game, per module (and whatever else `by` names).
    Dollars at `prices` (default: the shipped table, llm.prices); NaN where a model has no price."""
    columns = [*by, "calls_per_game", "input_tokens_per_game", "output_tokens_per_game", "usd_per_game", "games"]
    if data.calls.empty:
        return pd.DataFrame(columns=columns)
    prices = prices or Prices.shipped()
    calls = data.calls.assign(calls=1, usd=float("nan"))
    for spec in calls["spec"].dropna().unique():
        price = prices.price(spec)
        if price is not None:
            rows = calls["spec"] == spec
            calls.loc[rows, "usd"] = (calls.loc[rows, "input_tokens"] * price.input
                                      + calls.loc[rows, "output_tokens"] * price.output) / 1e6
    game_keys = [b for b in by if b in data.games.columns]  # e.g. the variant: games to divide by
    sums = calls.groupby(list(by))[["calls", "input_tokens", "output_tokens"]].sum()
    sums["usd"] = calls.groupby(list(by))["usd"].sum(min_count=1).where(
        calls.groupby(list(by))["usd"].apply(lambda u: u.notna().all()))
    sums = sums.reset_index()
    if game_keys:
        sums = sums.merge(data.games.groupby(game_keys).size().rename("games").reset_index(), on=game_keys)
    else:
        sums["games"] = len(data.games)
    for column in ("calls", "input_tokens", "output_tokens", "usd"):
        sums[f"{column}_per_game"] = sums[column] / sums["games"]
    return sums[columns]


def health(data: RunData, by: Sequence[str] = ("variant",)) -> pd.DataFrame:
    """Whether each group's games are a result: LLM calls, failed calls (after their retries) and their share,
    decisions, re-asks, fallbacks and their share, and the valid response rate (decisions whose first answer
    was legal; shown beside every figure; see records.health); and the LLM seats' speeches: how many, the share
    whose first answer echoed its instructions (profiles.ECHO_WORDS consecutive words or more of the package's
    wording, avalon_agents.speeches), how many are not their own words (`placeholders`: the placeholder said when
    nothing of a speech's own was left, or empty) and the share that ends mid-sentence (NaN for runs recorded
    without the speech guard's records); and the program and web seats' protocol errors and the decisions their
    fallback made (`seat_faults`, `seat_fallbacks`)."""
    columns = [*by, "games", "llm_calls", "failed_calls", "failed_share", "decisions", "reasks", "fallbacks",
               "fallback_share", "valid_response_rate", "speeches", "echo_rate", "placeholders", "mid_sentence_rate",
               "seat_faults", "seat_fallbacks"]
    if data.games.empty:
        return pd.DataFrame(columns=columns)
    games = data.games.groupby(list(by)).size().rename("games")
    calls = data.calls.assign(failed=data.calls["outcome"] == "failed").groupby(list(by)).agg(
        llm_calls=("failed", "size"), failed_calls=("failed", "sum")) if not data.calls.empty else None
    decisions = data.extractions.assign(fallback=data.extractions["method"] == "fallback",
                                        reask=data.extractions.get("answers", 1) - 1).groupby(list(by)).agg(
        decisions=("fallback", "size"), reasks=("reask", "sum"), fallbacks=("fallback", "sum"),
        valid_first=("valid", "sum")) if not data.extractions.empty else None
    checks = data.speech_checks
    speeches = checks.assign(  # not their own words: the placeholder or empty (records.health.not_data)
        not_own=checks.get("placeholder", pd.Series(False, index=checks.index)).fillna(False).astype(bool)
        | (checks.get("words", 1) == 0)
    ).groupby(list(by)).agg(speeches=("echo", "size"), echoes=("echo", "sum"), unfinished=("mid_sentence", "sum"),
                            placeholders=("not_own", "sum")) if not checks.empty else None
    faults = data.seat_faults.assign(fallback=data.seat_faults["problem"] == "fallback").groupby(list(by)).agg(
        seat_fallbacks=("fallback", "sum"), seat_records=("fallback", "size")) if not data.seat_faults.empty else None
    table = pd.concat([t for t in (games, calls, decisions, speeches, faults) if t is not None], axis=1).fillna(0)
    table = table.reset_index()
    for column in ("llm_calls", "failed_calls", "decisions", "reasks", "fallbacks", "speeches", "placeholders",
                   "seat_fallbacks", "seat_records"):
        table[column] = table.get(column, 0)
        table[column] = table[column].astype(int)
    table["failed_share"] = (table["failed_calls"] / table["llm_calls"].where(table["llm_calls"] > 0)).fillna(0.0)
    table["fallback_share"] = (table["fallbacks"] / table["decisions"].where(table["decisions"] > 0)).fillna(0.0)
    table["valid_response_rate"] = table.get("valid_first", 0) / table["decisions"].where(table["decisions"] > 0)
    said = table["speeches"].where(table["speeches"] > 0)
    table["echo_rate"] = table.get("echoes", 0) / said
    table["mid_sentence_rate"] = table.get("unfinished", 0) / said
    table["seat_faults"] = table["seat_records"] - table["seat_fallbacks"]
    return table[columns]


OUTCOMES: Registry[Callable[[RunData], pd.DataFrame]] = Registry("metric", [
    ("win_rate", win_rate),
    ("win_rate_by_role", lambda data: win_rate(data, GROUP)),
    ("quest_engagement", quest_engagement),
    ("failure_votes", failure_votes),
    ("leader_approval", leader_approval),
    ("leader_self_inclusion", leader_self_inclusion),
    ("valid_responses", valid_responses),
    ("assassinations", assassinations),
    ("team_votes", team_votes),
    ("cost", cost),
    ("health", health),
])
"""Every outcome metric with its default grouping, by name (the file names `avalon analyze` writes)."""


def register_metric(name: str, metric: Callable[[RunData], pd.DataFrame]) -> None:
    """Add an outcome metric (a plugin's): `avalon analyze` writes metrics/NAME.csv and its rows in metrics.json.
    Raises ValueError for a built-in metric's name."""
    OUTCOMES.register(name, metric, builtin=False)


def outcome_metrics(data: RunData) -> dict[str, pd.DataFrame]:
    """Every registered outcome metric; a table by role has a row for every role dealt (`every_role`)."""
    return {name: every_role(metric(data), data) for name, metric in OUTCOMES.items()}


def every_role(table: pd.DataFrame, data: RunData) -> pd.DataFrame:
    """`table` with a row for each group of seats it leaves out (a role in play that never, say, played a quest
    card): `n` 0 and no value, so every role of the game's role set has its rows. A table not by role: as is."""
    if "role" not in table or "role" not in data.seats:
        return table
    keys = [c for c in ("variant", "agent", "side", "role") if c in table and c in data.seats]
    if "metric" in table:  # one table of several measures: each gets the missing groups
        parts = [every_role(part.drop(columns="metric"), data).assign(metric=name)
                 for name, part in table.groupby("metric", sort=False)]
        return pd.concat(parts, ignore_index=True)[list(table.columns)] if parts else table
    missing = data.seats[keys].drop_duplicates().merge(table[keys].drop_duplicates(), on=keys, how="left",
                                                       indicator=True)
    missing = missing[missing["_merge"] == "left_only"].drop(columns="_merge")
    if missing.empty:
        return table
    filler = missing.assign(n=0, games=0).reindex(columns=table.columns)
    return pd.concat([table, filler], ignore_index=True) if not table.empty else filler


def references(data: RunData, order: Sequence[str] | None = None) -> dict[str, str]:
    """Each variant's reference: the first variant (in `order`, else as loaded) with the same agents on each
    side. An ablation's first variant is its full agent; Table 2 has two, ours on the good and on the evil
    side, and each of its variants is compared with the one of its sides."""
    teams = data.games.drop_duplicates("variant").set_index("variant")[["good_agents", "evil_agents"]]
    order = [v for v in (order or []) if v in teams.index] + [v for v in teams.index if v not in (order or [])]
    first: dict[tuple, str] = {}
    return {v: first.setdefault(tuple(teams.loc[v]), v) for v in order}


def versus(data: RunData, order: Sequence[str] | None = None) -> pd.DataFrame:
    """Per variant and side: its win rate minus its reference's (`vs_variant`, see `references`), Newcombe's
    95% interval of that difference and Fisher's exact two-sided p-value (NaN for a reference itself)."""
    columns = ["variant", "side", "vs_variant", "diff", "diff_ci_low", "diff_ci_high", "diff_p_value"]
    wr = win_rate(data, ("variant", "side"))
    if wr.empty:
        return pd.DataFrame(columns=columns)
    wins = {(r.variant, r.side): (int(round(r.value * r.n)), int(r.n)) for r in wr.itertuples()}
    refs, rows = references(data, order), []
    for (variant, side), (x1, n1) in wins.items():
        ref = refs[variant]
        x2, n2 = wins.get((ref, side), (0, 0))
        if ref == variant or not n2:
            rows.append({"variant": variant, "side": side, "vs_variant": ref if n2 else None})
            continue
        low, high = newcombe(x1, n1, x2, n2)
        rows.append({"variant": variant, "side": side, "vs_variant": ref, "diff": x1 / n1 - x2 / n2,
                     "diff_ci_low": low, "diff_ci_high": high, "diff_p_value": fisher_p(x1, n1, x2, n2)})
    return pd.DataFrame(rows, columns=columns).astype({c: float for c in columns[3:]})


def paper_table(data: RunData, order: Sequence[str] | None = None) -> pd.DataFrame:
    """The paper's table shape (Tables 2, 6-8): per variant and side, the agents, WR with its CI and games,
    its difference from the reference variant (`versus`; `order`: the variants' order, first first); and QER
    and FVR of each evil role in play (the paper's: Morgana, Assassin) by the agent that played them, as
    `qer_ROLE` and `fvr_ROLE` columns (`role_column`)."""
    wr = win_rate(data, ("variant", "side")).merge(versus(data, order), on=["variant", "side"], how="left")
    agents = data.games.melt(id_vars=["variant"], value_vars=["good_agents", "evil_agents"], var_name="side",
                             value_name="agents")
    agents["side"] = agents["side"].str.removesuffix("_agents")
    agents = agents.groupby(["variant", "side"])["agents"].agg(lambda a: "/".join(sorted(set(a)))).reset_index()
    table = wr.merge(agents, on=["variant", "side"]).rename(columns={"value": "win_rate"})
    for name, metric in (("qer", quest_engagement), ("fvr", failure_votes)):
        m = metric(data, ("variant", "side", "role"))
        for role in roles_in_play(data, Team.EVIL):
            part = m[m["role"] == role][["variant", "side", "value"]].rename(
                columns={"value": f"{name}_{role_column(role)}"})
            table = table.merge(part, on=["variant", "side"], how="left")
    rank = {v: i for i, v in enumerate(references(data, order))}  # the given order, then as loaded
    return table.sort_values(["variant", "side"], key=lambda c: c.map(rank) if c.name == "variant" else c,
                             ignore_index=True)
