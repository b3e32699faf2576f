"""Import avalongame.online game logs (one JSON file per game) as game directories.

The format is described in /work/shared/data/human_reference/README.md: `players` in seat order, five
`missions` (team size, fails required, state, the proposals with their proposer, team and approvers), and an
`outcome` (the winner, the roles and the assassin token, the assassinated player, and every team member's
quest card per played mission). Each game is replayed through the engine under the official rules with its
role set (see `replay`); a game the rules refuse, an unfinished one or an unreadable file is skipped with its
reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from avalon_agents.core.actions import RequestKind
from avalon_agents.core.rules import make_rules
from avalon_agents.core.types import Role, Seat, Team
from avalon_agents.importers.replay import Importer, ImportReport, Replay, ReplayError, write_game

NAME = "avalonlogs"
ROLES = {
    "MERLIN": Role.MERLIN,
    "PERCIVAL": Role.PERCIVAL,
    "LOYAL FOLLOWER": Role.LOYAL_SERVANT,
    "MORGANA": Role.MORGANA,
    "MORDRED": Role.MORDRED,
    "OBERON": Role.OBERON,
    "EVIL MINION": Role.MINION,
    "ASSASSIN": Role.ASSASSIN,
}
"""The site's role names. A Minion carrying the assassin token is the framework's Assassin (a Minion of Mordred
who assassinates); a token on another evil role makes that role the rules' `assassin`."""
WINNERS = {"GOOD_WIN": Team.GOOD, "EVIL_WIN": Team.EVIL}


def log_files(folder: Path) -> list[Path]:
    """The JSON files at or under `folder`, in path order."""
    return sorted(p for p in Path(folder).rglob("*.json") if p.is_file())


def import_logs(files: Sequence[Path], out: Path, on_file: Callable[[Path], None] | None = None,
                root: Path | None = None) -> ImportReport:
    """Replay each log and write the ones the rules accept as `out`/game-NNNNN (numbered in file order).

    Args:
        files: the logs.
        out: the run directory.
        on_file: called after each file (a progress bar).
        root: file names in the report and in meta.json are relative to it (default: the file's name).
    """
    report = ImportReport(source=NAME)
    for path in files:
        name = str(path.relative_to(root)) if root else path.name
        try:
            replay = replay_log(read_log(path))
        except ReplayError as exc:
            report.skipped.append((name, str(exc)))
        else:
            index = len(report.imported) + 1
            report.imported.append((name, write_game(out, replay, variant=NAME, index=index,
                                                     source={"format": NAME, "file": name})))
        if on_file:
            on_file(path)
    return report


def read_log(path: Path) -> dict[str, Any]:
    """One game's log. Raises ReplayError if it is not a JSON object."""
    try:
        log = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayError(f"unreadable file ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ReplayError(f"corrupt JSON ({exc})") from None
    if not isinstance(log, dict):
        raise ReplayError(f"corrupt log: a JSON {type(log).__name__}, not an object")
    return log


def replay_log(log: dict[str, Any]) -> Replay:
    """Replay one game's log through the engine. Raises ReplayError naming the first problem."""
    try:
        return _replay(log)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        problem = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]
        raise ReplayError(f"malformed log: {problem}") from None


def _replay(log: dict[str, Any]) -> Replay:
    names = [p["name"] for p in log["players"]]
    if len(set(names)) != len(names):
        raise ReplayError("players: two players share a name")
    seats = {name: seat for seat, name in enumerate(names, 1)}

    def seat(name: str, what: str) -> Seat:
        if name not in seats:
            raise ReplayError(f"{what}: {name!r} is not a player of this game")
        return seats[name]

    outcome = log.get("outcome")
    if not isinstance(outcome, dict) or outcome.get("state") not in WINNERS:
        raise ReplayError("unfinished game: no outcome (GOOD_WIN or EVIL_WIN) logged")
    rules, deal = _rules(outcome["roles"], names)
    missions = log["missions"]
    played = [m for m in missions if m.get("proposals")]
    if not played:
        raise ReplayError("unfinished game: no proposal logged")
    if missions[:len(played)] != played:
        raise ReplayError("missions: a mission with proposals follows one without")
    replay = Replay(rules, deal, seat(played[0]["proposals"][0]["proposer"], "proposer"))
    cards = outcome.get("votes") or []
    for q, mission in enumerate(played, 1):
        if (mission["teamSize"], mission["failsRequired"]) != (rules.quest_sizes[q - 1], rules.fails_required[q - 1]):
            raise ReplayError(f"mission {q}: team size {mission['teamSize']} and {mission['failsRequired']} fail(s) "
                              f"required; the official rules for {rules.players} players take "
                              f"{rules.quest_sizes[q - 1]} and {rules.fails_required[q - 1]}")
        for a, proposal in enumerate(mission["proposals"], 1):
            if (replay.engine.quest, replay.engine.attempt) != (q, a) or replay.engine.is_over:
                raise ReplayError(f"mission {q}: proposal {a} is logged, but the rules are past it "
                                  f"(at {'the end' if replay.engine.is_over else replay.where})")
            replay.propose(seat(proposal["proposer"], "proposer"),
                           [seat(n, "team") for n in proposal["team"]])
            approved = replay.vote({seat(n, "votes") for n in proposal["votes"]})
            if approved != (proposal["state"] == "APPROVED"):
                raise ReplayError(f"{replay.where}: {len(proposal['votes'])} of {rules.players} approve, so the rules "
                                  f"{'approve' if approved else 'reject'} the team; the log says {proposal['state']}")
            if not approved:
                continue
            if len(cards) < q:
                raise ReplayError(f"mission {q}: the team went, but no quest cards are logged for it")
            done = replay.quest({seat(n, "quest cards"): card for n, card in cards[q - 1].items()})
            logged = (mission["state"], mission["numFails"])
            if ("SUCCESS" if done.success else "FAIL", done.fails) != logged:
                raise ReplayError(f"mission {q}: {done.fails} fail card(s) make it a "
                                  f"{'success' if done.success else 'failure'}; the log says {logged[0]} with "
                                  f"{logged[1]} fail(s)")
            if replay.asks is RequestKind.ASSASSINATE:
                target = outcome.get("assassinated")
                if target is None:
                    raise ReplayError("unfinished game: good won three quests, but no assassination is logged")
                replay.assassinate(seat(target, "assassinated"))
    result = replay.result()
    if result.winner is not WINNERS[outcome["state"]]:
        raise ReplayError(f"outcome: the rules give {result.winner.value} the game ({result.reason.value}); the log "
                          f"says {outcome['state']}")
    if outcome.get("assassinated") is not None and result.assassination_target is None:
        raise ReplayError(f"outcome: {outcome['assassinated']!r} is logged as assassinated, but the rules asked for "
                          "no assassination")
    return replay


def _rules(roles: list[dict[str, Any]], names: list[str]):
    """The official rules with the logged role set, and each seat's role."""
    by_name: dict[str, dict[str, Any]] = {}
    for entry in roles:
        if entry["name"] in by_name:
            raise ReplayError(f"roles: {entry['name']!r} has two roles")
        by_name[entry["name"]] = entry
    missing = [n for n in names if n not in by_name]
    if missing or len(by_name) != len(names):
        raise ReplayError(f"roles: {len(by_name)} roles logged for {len(names)} players")
    unknown = sorted({by_name[n]["role"] for n in names} - set(ROLES))
    if unknown:
        raise ReplayError(f"roles: unknown role {unknown[0]!r} (known: {', '.join(ROLES)})")
    deal = [ROLES[by_name[n]["role"]] for n in names]
    holders = [i for i, n in enumerate(names) if by_name[n].get("assassin")]
    if len(holders) > 1:
        raise ReplayError(f"roles: {len(holders)} players carry the assassin token")
    assassin = None
    if Role.MERLIN in deal and holders:
        token = deal[holders[0]]
        if token is Role.MINION:
            deal[holders[0]] = Role.ASSASSIN  # a Minion with the token is the framework's Assassin
        elif token is not Role.ASSASSIN:
            assassin = token
    try:
        return make_rules("official", roles=deal, assassin=assassin), deal
    except ValueError as exc:
        raise ReplayError(str(exc).splitlines()[0]) from None


IMPORTER = Importer(
    name=NAME, argument="dir", log_files=log_files, import_logs=import_logs,
    help="""avalongame.online logs (one JSON file per game, at or under DIR) as game directories, seats of kind human.

    \b
    Example:
      avalon import avalonlogs avalonlogs/logs --out runs/humans && avalon analyze runs/humans
    """)
