"""Small game logs in the avalongame.online format (one JSON object per game), written by hand for the tests.

`game_log` fills in what the site derives (proposal and mission states, fail counts, padding missions), so each
game below is its players, roles, proposals and quest cards; a test breaks a log by editing the dict.
"""

from __future__ import annotations

from avalon_agents.core.rules import QUEST_SIZES, fails_table


def game_log(roles: list[tuple[str, str]], missions: list[list[tuple[str, list[str], list[str]]]],
             cards: list[dict[str, bool]], state: str, token: str | None = None,
             assassinated: str | None = None) -> dict:
    """roles: (name, site role) in seat order; missions: per mission its proposals (proposer, team, approvers);
    cards: per mission that went, each team member's card (True: success); token: who holds the assassin token."""
    n = len(roles)
    logged = []
    for q, proposals in enumerate(missions):
        rows = [{"proposer": p, "team": team, "votes": yes,
                 "state": "APPROVED" if 2 * len(yes) > n else "REJECTED"} for p, team, yes in proposals]
        went = rows[-1]["state"] == "APPROVED"
        fails = sum(not c for c in cards[q].values()) if went else 0
        logged.append({"teamSize": QUEST_SIZES[n][q], "failsRequired": fails_table(n)[q],
                       "state": ("FAIL" if fails >= fails_table(n)[q] else "SUCCESS") if went else "PENDING",
                       "numFails": fails, "team": rows[-1]["team"] if went else [], "proposals": rows})
    for q in range(len(missions), 5):
        logged.append({"teamSize": QUEST_SIZES[n][q], "failsRequired": fails_table(n)[q], "state": "PENDING",
                       "numFails": 0, "team": [], "proposals": []})
    return {
        "players": [{"uid": f"uid-{name}", "name": name} for name, _ in roles],
        "missions": logged,
        "outcome": {"state": state, "message": "", "assassinated": assassinated,
                    "roles": [{"name": name, "role": role, "assassin": name == token} for name, role in roles],
                    "votes": cards},
        "options": {}, "timeCreated": {"_seconds": 1600000000, "_nanoseconds": 0},
        "timeFinished": {"_seconds": 1600003600, "_nanoseconds": 0},
    }


def paper6() -> dict:
    """Six players, the paper's roles, the token on the EVIL MINION (F), who names Merlin after three successes.
    On the quests that went: A (Merlin) 4 of 4, B (Percival) 3, C and D (servants) 2 each, E (Morgana) 0, F 1."""
    return game_log(
        [("A", "MERLIN"), ("B", "PERCIVAL"), ("C", "LOYAL FOLLOWER"), ("D", "LOYAL FOLLOWER"), ("E", "MORGANA"),
         ("F", "EVIL MINION")],
        [[("A", ["A", "B"], ["A", "B", "C", "D"])],
         [("B", ["B", "C", "E"], ["B", "C", "E"]), ("C", ["A", "C", "F"], ["A", "C", "D", "F"])],
         [("D", ["A", "B", "C", "D"], ["A", "B", "C", "D"])],
         [("E", ["A", "B", "D"], ["A", "B", "D", "E", "F"])]],
        [{"A": True, "B": True}, {"A": True, "C": True, "F": False},
         {"A": True, "B": True, "C": True, "D": True}, {"A": True, "B": True, "D": True}],
        "EVIL_WIN", token="F", assassinated="A")


def five_rejections() -> dict:
    """Five players; every proposal of quest 1 rejected: evil wins."""
    names = ["P1", "P2", "P3", "P4", "P5"]
    return game_log(
        list(zip(names, ["MERLIN", "PERCIVAL", "LOYAL FOLLOWER", "MORGANA", "EVIL MINION"])),
        [[(p, [p, names[(i + 1) % 5]], [p]) for i, p in enumerate(names)]],
        [], "EVIL_WIN", token="P5")


def mordred_assassin() -> dict:
    """Seven players, Mordred (P6) carries the token; quest 4 has one fail card but needs two, so it succeeds;
    Mordred names Percival: good wins. The first leader is P3."""
    return game_log(
        [("P1", "MERLIN"), ("P2", "PERCIVAL"), ("P3", "LOYAL FOLLOWER"), ("P4", "LOYAL FOLLOWER"),
         ("P5", "MORGANA"), ("P6", "MORDRED"), ("P7", "EVIL MINION")],
        [[("P3", ["P3", "P4"], ["P1", "P2", "P3", "P4"])],
         [("P4", ["P4", "P5", "P1"], ["P4", "P5", "P1", "P6"])],
         [("P5", ["P5", "P6", "P7"], ["P5", "P6", "P7"]), ("P6", ["P1", "P2", "P3"], ["P1", "P2", "P3", "P6"])],
         [("P7", ["P1", "P2", "P3", "P7"], ["P1", "P2", "P3", "P7", "P4"])]],
        [{"P3": True, "P4": True}, {"P4": True, "P5": False, "P1": True}, {"P1": True, "P2": True, "P3": True},
         {"P1": True, "P2": True, "P3": True, "P7": False}],
        "GOOD_WIN", token="P6", assassinated="P2")


def no_merlin() -> dict:
    """Eight players, plain Resistance (no Merlin; the token the site marks is ignored); two fail cards fail
    quest 4; good wins on quest 5 without an assassination."""
    names = [f"P{i}" for i in range(1, 9)]
    good = names[:5]
    return game_log(
        list(zip(names, ["LOYAL FOLLOWER"] * 5 + ["EVIL MINION", "EVIL MINION", "MORGANA"])),
        [[("P1", ["P1", "P2", "P6"], ["P1", "P2", "P3", "P4", "P6"])],
         [("P2", ["P1", "P2", "P3", "P4"], good)],
         [("P3", ["P1", "P2", "P3", "P5"], good)],
         [("P4", ["P1", "P4", "P6", "P7", "P8"], ["P4", "P6", "P7", "P8", "P1"])],
         [("P5", good, good)]],
        [{"P1": True, "P2": True, "P6": False}, dict.fromkeys(["P1", "P2", "P3", "P4"], True),
         dict.fromkeys(["P1", "P2", "P3", "P5"], True),
         {"P1": True, "P4": True, "P6": False, "P7": False, "P8": True}, dict.fromkeys(good, True)],
        "GOOD_WIN", token="P6")


def good_fails() -> dict:
    """The paper6 game, but Percival (B) plays a fail card on quest 1: the rules refuse it."""
    log = paper6()
    log["outcome"]["votes"][0]["B"] = False
    log["missions"][0].update(state="FAIL", numFails=1)
    return log
