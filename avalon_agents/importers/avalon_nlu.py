"""Import the Avalon-NLU dataset (Stepputtis et al., EMNLP Findings 2023; MIT) as game directories.

Each `<id>.json` is a TinyDB dict of tables (`users`, `messages`, `persuasion`, `beliefs`), each a dict of rows
keyed by a string index. The game is read from the message log (chat lines and system lines such as
"player-4 proposed a party: player-4, player-5") and replayed through the engine under the `paper` rules,
with a fixed deal and the log's first leader; the human labels become `Annotation` trace records. How the log
maps onto the rules is in docs/humans.md ("Importing Avalon-NLU").
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avalon_agents.core.actions import Assassinate, ProposeTeam, QuestCard, RequestKind, Speak, Vote
from avalon_agents.core.events import GameEvent
from avalon_agents.core.rules import RuleSet, make_rules
from avalon_agents.core.types import EndReason, Role, Seat
from avalon_agents.importers.replay import Importer, ImportReport, Replay, ReplayError, write_game
from avalon_agents.records.trace import Annotation
from avalon_agents.records.walk import holds_games

SOURCE = "avalon-nlu"
LICENCE = "Avalon-NLU dataset (sstepput/Avalon-NLU), MIT licence; LICENSE-avalon-nlu beside the games"
PLAYER = re.compile(r"^player-(\d+)$")
PROPOSED = re.compile(r"^player-(\d+) proposed a party: (.+)$")
VOTES = re.compile(r"^party vote outcome: (.+)$")
VOTE = re.compile(r"^player-(\d+): (yes|no)$")
ENDINGS = {
    "the assassin identified merlin, thus evil wins": EndReason.MERLIN_ASSASSINATED,
    "the assassin didn't find merlin, thus the forces of good win": EndReason.ASSASSIN_MISSED,
    "evil has failed three quests and wins": EndReason.THREE_FAILS,
}
RESULTS = {"vote succeeded! initiating quest vote": ("vote", True), "vote failed": ("vote", False),
           "quest succeeded": ("quest", True), "quest failed": ("quest", False)}
QUIET = {"game started", "good won for now, but the assassin"}
"""System lines that carry nothing the events do not. Lines are compared without their closing "." and "!"."""


@dataclass
class Message:
    """One line of the log: a chat message (`seat`) or a system line (`seat` None)."""

    order: int
    seat: Seat | None
    text: str
    mid: str
    quest: int
    turn: int


@dataclass
class Attempt:
    """One party vote: the chat since the last vote, the leader's last proposal, the votes, what followed."""

    chat: list[Message]
    leader: Seat
    team: tuple[Seat, ...]
    votes: dict[Seat, bool]
    line: Message
    approved: bool | None = None
    quest: bool | None = None


@dataclass
class Log:
    """A game of the dataset, read but not yet checked against the rules."""

    deal: tuple[Role, ...]
    messages: list[Message]
    attempts: list[Attempt]
    ending: EndReason
    after_end: int
    trailing: int
    """Chat messages after the last party vote (no discussion is left to hold them)."""
    labels: list[dict[str, Any]]
    beliefs: list[dict[str, Any]]


@dataclass
class Imported:
    """A game replayed through the rules: the replay, its annotation records, what was inferred."""

    replay: Replay
    annotations: list[Annotation]
    inferred: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------- reading the file

def seat_of(name: str, players: int | None = None) -> Seat:
    """The seat of "player-N"; ReplayError if it is no player of the game."""
    m = PLAYER.match(str(name).strip())
    if not m or (players is not None and not 1 <= int(m.group(1)) <= players):
        raise ReplayError(f"{name!r} is not a player of this game")
    return int(m.group(1))


def role_of(name: str) -> Role:
    """The dataset's role names: merlin, percival, morgana, assassin, servant-1, servant-2 (and the like)."""
    base = re.sub(r"-\d+$", "", str(name).strip().lower())
    try:
        return Role.LOYAL_SERVANT if base == "servant" else Role.parse(base)
    except ValueError:
        raise ReplayError(f"users: unknown role {name!r}") from None


def rows(data: dict[str, Any], table: str) -> list[dict[str, Any]]:
    """A table's rows in index order (a missing table is empty)."""
    found = data.get(table) or {}
    if not isinstance(found, dict):
        raise ReplayError(f"{table}: not a table of rows")
    try:
        return [found[k] for k in sorted(found, key=int)]
    except ValueError:
        raise ReplayError(f"{table}: row keys are not numbers") from None


def read_log(path: Path) -> Log:
    """Read one `<id>.json`. Raises ReplayError naming what is wrong with it."""
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise ReplayError(f"not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ReplayError("not a dict of tables")
    users = rows(data, "users")
    if not users:
        raise ReplayError("users: no players")
    seats = sorted(seat_of(u["name"]) for u in users)
    if seats != list(range(1, len(users) + 1)):
        raise ReplayError(f"users: players {seats} are not player-1..player-{len(users)}")
    deal = tuple(role_of(u["role"]) for u in sorted(users, key=lambda u: seat_of(u["name"])))
    n = len(deal)
    messages = []
    for i, row in enumerate(rows(data, "messages")):
        who = row["player"]
        messages.append(Message(order=i, seat=None if who == "system" else seat_of(who, n), text=str(row["msg"]),
                                mid=str(row["mid"]), quest=int(row["quest"]), turn=int(row["turn"])))
    attempts, ending, after_end, trailing = read_flow(messages, n)
    return Log(deal=deal, messages=messages, attempts=attempts, ending=ending, after_end=after_end, trailing=trailing,
               labels=rows(data, "persuasion"), beliefs=rows(data, "beliefs"))


def read_flow(messages: list[Message], players: int) -> tuple[list[Attempt], EndReason, int, int]:
    """The party votes of the log, how it ended, how many lines came after its end (ignored) and how many chat
    messages after the last vote (left out)."""
    attempts: list[Attempt] = []
    chat: list[Message] = []
    proposal: tuple[Seat, tuple[Seat, ...]] | None = None
    for m in messages:
        if m.seat is not None:
            chat.append(m)
            continue
        text = m.text.strip().rstrip(".!")
        if found := PROPOSED.match(text):
            team = tuple(seat_of(p, players) for p in found.group(2).split(","))
            proposal = (seat_of(f"player-{found.group(1)}", players), team)
        elif found := VOTES.match(text):
            if proposal is None:
                raise ReplayError(f"message {m.order + 1}: a party vote with no party proposed")
            votes = {}
            for part in found.group(1).split(","):
                vote = VOTE.match(part.strip())
                if not vote:
                    raise ReplayError(f"message {m.order + 1}: cannot read the vote {part.strip()!r}")
                votes[seat_of(f"player-{vote.group(1)}", players)] = vote.group(2) == "yes"
            attempts.append(Attempt(chat=chat, leader=proposal[0], team=proposal[1], votes=votes, line=m))
            chat, proposal = [], None
        elif text in RESULTS:
            what, value = RESULTS[text]
            if not attempts:
                raise ReplayError(f"message {m.order + 1}: {m.text!r} before any party vote")
            setattr(attempts[-1], "approved" if what == "vote" else what, value)
        elif text in ENDINGS:
            return attempts, ENDINGS[text], len(messages) - m.order - 1, len(chat)
        elif text not in QUIET:
            raise ReplayError(f"message {m.order + 1}: unknown system line {m.text!r}")
    raise ReplayError("the log ends before the game does (no line says who won)")


# ----------------------------------------------------------------- replaying it

def rules_for(log: Log) -> RuleSet:
    """The `paper` rules for the log's role set, with its first proposer as the first leader."""
    if not log.attempts:
        raise ReplayError("no party vote in the log")
    try:
        rules = make_rules("paper", roles=log.deal)
        return RuleSet(**{**rules.model_dump(), "first_leader": log.attempts[0].leader})
    except ValueError as exc:
        raise ReplayError(str(exc).splitlines()[0]) from None


def replay(log: Log) -> Imported:
    """Drive the engine with the log's actions. Raises ReplayError where the rules refuse what the log has."""
    rules = rules_for(log)
    game = Replay(rules, log.deal)
    inferred: list[dict[str, Any]] = []
    spoken: dict[int, tuple[int, int]] = {}  # message order -> (speech seq, part)
    point: dict[int, int] = {}  # message order -> the seq of the event it became
    for a in log.attempts:
        if a.line.quest != game.engine.quest:
            raise ReplayError(f"{game.where}: the log votes on quest {a.line.quest} here")
        while game.engine.pending() and game.engine.pending()[0].kind is RequestKind.SPEAK:
            seat = game.engine.pending()[0].seat
            mine = [m for m in a.chat if m.seat == seat]
            seq = game.submit(seat, Speak(text="\n".join(m.text.strip() for m in mine)))[0].seq
            for part, m in enumerate(mine):
                spoken[m.order], point[m.order] = (seq, part), seq
        leader = game.asked(RequestKind.PROPOSE, f"player-{a.leader}'s party")[0].seat
        if leader != a.leader:
            raise ReplayError(f"{game.where}: player-{a.leader} proposed a party, but the lead passes in seat order to "
                       f"player-{leader} (the log's lead leaves seat order)")
        game.submit(leader, ProposeTeam(team=a.team))
        where = game.where
        for request in game.asked(RequestKind.VOTE, "a party vote"):
            if request.seat not in a.votes:
                raise ReplayError(f"{game.where}: player-{request.seat} has no vote in the log")
            new = game.submit(request.seat, Vote(approve=a.votes[request.seat]))
        revealed = new[0]
        point[a.line.order] = revealed.seq
        if a.approved is not None and a.approved != revealed.approved:
            raise ReplayError(f"{where}: the log says the vote {'passed' if a.approved else 'failed'}, but "
                       f"{revealed.approve_count} of {rules.players} approvals "
                       f"{'pass' if revealed.approved else 'fail'} it")
        if not revealed.approved and a.quest is not None:
            raise ReplayError(f"{where}: the log has a quest result after a rejected party")
        if revealed.approved:
            inferred += play_quest(game, a)
            while (asked := game.engine.pending()) and asked[0].kind is RequestKind.ASSASSINATE and asked[0].may_pass:
                game.submit(asked[0].seat, Assassinate(target=None))
    if not game.engine.is_over:
        inferred += assassinate(game, log)
    result = game.engine.result()
    if result.reason is not log.ending:
        raise ReplayError(f"the log ends with {log.ending.value}, the rules with {result.reason.value}")
    annotations, notes = annotate(log, game.events, spoken, point)
    if log.after_end:
        notes.append(f"{log.after_end} line(s) after the game's end ignored")
    if log.trailing:
        notes.append(f"{log.trailing} chat message(s) after the last party vote left out (no discussion follows)")
    return Imported(replay=game, annotations=annotations, inferred=inferred, notes=notes)


def play_quest(game: Replay, a: Attempt) -> list[dict[str, Any]]:
    """The quest cards. The log gives only the result, so a failed quest gets as many fail cards as the rules
    need, from the evil team members in seat order, and every other card succeeds. Returns what was inferred:
    the cards of a quest whose result leaves a choice (more evil players on the team than fail cards needed)."""
    if a.quest is None:
        raise ReplayError(f"{game.where}: the party went, but the log has no quest result")
    requests = game.asked(RequestKind.QUEST, "a quest")
    required = game.engine.rules.fails_required[game.engine.quest - 1]
    evil = [r.seat for r in requests if r.can_fail]
    need = 0 if a.quest else required
    if len(evil) < need:
        raise ReplayError(f"{game.where}: the quest failed, but the team {list(game.engine.team)} holds "
                          f"{len(evil)} evil player(s) and the rules need {need} fail card(s)")
    fails = evil[:need]
    quest = game.engine.quest
    for r in requests:
        game.submit(r.seat, QuestCard(success=r.seat not in fails))
    choice = len(evil) > need if not a.quest else required > 1 and bool(evil)
    if not choice:
        return []
    return [{"what": "quest_cards", "quest": quest, "fails": fails,
             "why": "the log gives the quest's result only: fail cards from evil team members in seat order, "
                    "as many as the result needs"}]


def assassinate(game: Replay, log: Log) -> list[dict[str, Any]]:
    """The assassination after good's third success. The log says only whether Merlin was found; a miss names
    the player the assassin last said they believed to be Merlin, else the first good non-Merlin seat."""
    request = game.asked(RequestKind.ASSASSINATE, "the game's end")[0]
    roles = game.engine.roles
    merlin = next(s for s, r in roles.items() if r is Role.MERLIN)
    if log.ending is EndReason.MERLIN_ASSASSINATED:
        game.submit(request.seat, Assassinate(target=merlin))
        return []
    if log.ending is not EndReason.ASSASSIN_MISSED:
        raise ReplayError(f"{game.where}: good won three quests, but the log ends with {log.ending.value}")
    stated = [seat_of(b["about_player"]) for b in log.beliefs
              if b.get("belief") == "merlin" and seat_of(b["player"]) == request.seat]
    stated = [s for s in stated if s in request.options and s != merlin]
    good = [s for s in request.options if roles[s].side.value == "good" and s != merlin]
    target, why = ((stated[-1], "the assassin's last stated belief about Merlin") if stated
                   else (good[0], "the first good seat other than Merlin"))
    game.submit(request.seat, Assassinate(target=target))
    return [{"what": "assassination_target", "seat": target,
             "why": f"the log says only that Merlin was not found: {why}"}]


def annotate(log: Log, events: list[GameEvent], spoken: dict[int, tuple[int, int]],
             point: dict[int, int]) -> tuple[list[Annotation], list[str]]:
    """The human labels as annotation records: persuasion and deception on the speech holding each message,
    beliefs at the point they were stated. Exact duplicate label rows count once."""
    by_mid = {m.mid: m for m in log.messages if m.seat is not None}
    out: list[Annotation] = []
    seen: set[tuple] = set()
    dropped = unplaced = 0
    for row in log.labels:
        key = (row.get("mid"), row.get("persuasion"), row.get("deception"))
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        m = by_mid.get(str(row.get("mid")))
        if m is None or m.order not in spoken:
            unplaced += 1
            continue
        seq, part = spoken[m.order]
        where = {"seat": m.seat, "seq": seq, "quest": events[seq].quest, "attempt": events[seq].attempt,
                 "part": part, "message": m.mid, "text": m.text.strip(), "source": SOURCE}
        for kind in ("persuasion", "deception"):
            if row.get(kind):
                out.append(Annotation(kind=kind, label=str(row[kind]), **where))
    first = next(e.seq for e in events if e.type == "leader_chosen")
    for b in log.beliefs:
        at = [point[m.order] for m in log.messages
              if (m.quest, m.turn) <= (int(b["quest"]), int(b["turn"])) and m.order in point]
        seq = max(at, default=first)
        out.append(Annotation(kind="belief", label=str(b["belief"]), seat=seat_of(b["player"], len(log.deal)),
                              about_seat=seat_of(b["about_player"], len(log.deal)), seq=seq,
                              quest=events[seq].quest, attempt=events[seq].attempt, source=SOURCE))
    notes = []
    if dropped:
        notes.append(f"{dropped} duplicate label row(s) counted once")
    if unplaced:
        notes.append(f"{unplaced} label row(s) name no chat message of the game: left out")
    return out, notes


# ----------------------------------------------------------------- the folder

def log_files(dataset: Path) -> list[Path]:
    """The dataset's `<id>.json` files, in sorted order (the games' numbers)."""
    return sorted(Path(dataset).glob("*.json"))


def import_logs(files: Sequence[Path], out: Path, on_file: Callable[[Path], None] | None = None,
                root: Path | None = None) -> ImportReport:
    """Import each `<id>.json` of `files` into `out`/game-NNNNN (numbered in file order, skipped files too), copy
    the dataset's LICENSE (beside the files, or above `root`) and write OUT/import.json."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = ImportReport(source=SOURCE)
    for index, path in enumerate(files, 1):
        try:
            done = replay(read_log(path))
        except ReplayError as exc:
            report.skipped.append((path.name, str(exc)))
            continue
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            report.skipped.append((path.name, f"malformed ({type(exc).__name__}: {str(exc).splitlines()[0]})"))
            continue
        finally:
            if on_file:
                on_file(path)
        source = {"format": SOURCE, "file": path.name, "game": path.stem, "licence": LICENCE,
                  "inferred": done.inferred, "notes": done.notes}
        report.imported.append((path.name, write_game(out, done.replay, variant=SOURCE, index=index,
                                                      source=source, records=done.annotations)))
        report.annotations.update(a.kind for a in done.annotations)
        report.notes += [f"{path.name}: {n}" for n in done.notes]
    dataset = Path(root) if root is not None else Path(files[0]).parent if files else Path(".")
    licence = next((p for p in (dataset / "LICENSE", dataset.parent / "LICENSE") if p.is_file()), None)
    if licence is not None:
        shutil.copyfile(licence, out / "LICENSE-avalon-nlu")
    else:
        report.notes.append("no LICENSE found beside the dataset: keep Avalon-NLU's MIT licence with this copy")
    report.write(out)
    return report


def import_avalon_nlu(dataset: Path, out: Path) -> ImportReport:
    """Import every `<id>.json` of `dataset` into `out`/game-NNNNN (numbered by the files' sorted order).

    Raises:
        ValueError: `dataset` holds no `<id>.json` files, or `out` already holds games (one line, naming it).
    """
    dataset, out = Path(dataset), Path(out)
    if not dataset.is_dir():
        raise ValueError(f"dataset: {dataset} is not a folder")
    files = log_files(dataset)
    if not files:
        raise ValueError(f"dataset: no <id>.json files in {dataset}")
    if holds_games(out):
        raise ValueError(f"out: {out} already holds games; choose a new folder")
    return import_logs(files, out, root=dataset)


IMPORTER = Importer(
    name=SOURCE, argument="dataset", log_files=log_files, import_logs=import_logs,
    help="""Import the Avalon-NLU dataset: DATASET is the folder of <id>.json files.

    Each game is replayed through the engine under the paper rules (its deal and first leader fixed), with the
    chat as speeches, so every imported game is checked against the rules; the persuasion, deception and
    belief labels go to each game's trace.jsonl as annotation records. Prints how many games were imported and
    why each other one was skipped (also in OUT/import.json). See docs/humans.md.

    \b
    Example:
      avalon import avalon-nlu ../shared/data/avalon_nlu/dataset --out runs/avalon-nlu
    """)
