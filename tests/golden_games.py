"""A fixed set of games whose events must be the same on every machine: their digests, and the recorded replay.

    python -m tests.golden_games            print {"set": digest, ...} and the environment as JSON
    python -m tests.golden_games --write    write them to tests/data/golden_games.json (after a change that
                                            changes games on purpose: say why in the commit)

Each set is played through the `avalon` command line in this process, its games written to a temporary folder and
read back through records (`read_events`); its digest is the sha256 of every game's events, in game order. The
sets cover the rule bots (5, 7 and 10 players, the paper's preset, the Lady of the Lake at 8), random seats, and
scripted cognitive and baseline seats learning from experience over consecutive games. `replay` replays the
recorded run of tests/data/replay with no model and says whether its events are byte-for-byte the recorded ones.

tests/engine/test_same_game_everywhere.py runs this under every OpenBLAS kernel the CPU can run and with numpy's
SIMD paths off, and compares each with the golden file.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "data" / "golden_games.json"
REPLAY = Path(__file__).resolve().parent / "data" / "replay"

SETS: dict[str, list[str]] = {
    "rulebot-5": ["play", "--players", "5", "--games", "25", "--seed", "500"],
    "rulebot-7": ["play", "--players", "7", "--games", "25", "--seed", "700"],
    "rulebot-10": ["play", "--players", "10", "--games", "25", "--seed", "1000"],
    "rulebot-paper-6": ["play", "--rules", "paper", "--games", "25", "--seed", "600"],
    "rulebot-lady-8": ["play", "--players", "8", "--lady-of-the-lake", "--games", "25", "--seed", "800"],
    "random-and-rulebot-6": ["play", "--seats", "random,rulebot,random,rulebot,random,rulebot", "--games", "25",
                             "--seed", "60"],
    "cognitive-baseline-experience-6": ["play", "--seats", "cognitive,baseline,cognitive,baseline,cognitive,baseline",
                                        "--model", "scripted", "--games", "3", "--seed", "7", "--experience",
                                        "{experience}"],
}
"""Each set's `avalon` arguments (`--out` and `-q` are added; `{experience}` is a fresh folder)."""


def _avalon(args: list[str]) -> None:
    from avalon_agents.cli import cli

    try:
        cli.main(args, prog_name="avalon", standalone_mode=False)
    except SystemExit as exc:  # a command that ends with a code other than 0 is a failure here
        if exc.code not in (0, None):
            raise RuntimeError(f"avalon {' '.join(args)} exited {exc.code}") from None


def digest(folder: Path) -> tuple[str, int]:
    """The sha256 of the events of every finished game under `folder` (in their folders' order), and how many."""
    from avalon_agents.core.events import EVENT_ADAPTER
    from avalon_agents.records.run_dir import read_events
    from avalon_agents.records.walk import finished_games

    h, games = hashlib.sha256(), finished_games(folder)
    for game in games:
        for event in read_events(game):
            h.update(EVENT_ADAPTER.dump_json(event))
            h.update(b"\n")
    return h.hexdigest(), len(games)


def play_sets(names: list[str] | None = None) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, args in SETS.items():
        if names and name not in names:
            continue
        with tempfile.TemporaryDirectory(prefix=f"golden-{name}-") as tmp:
            out = Path(tmp) / "out"
            args = [a.replace("{experience}", str(Path(tmp) / "experience")) for a in args]
            _avalon([*args, "--out", str(out), "-q"])
            value, games = digest(out)
            found[name] = f"{games} games {value}"
    return found


def replay() -> str:
    """'same' when the recorded run replays with byte-identical events, else what went wrong."""
    from avalon_agents.records.run_dir import read_events
    from avalon_agents.records.walk import finished_games

    recorded = REPLAY / "run"
    with tempfile.TemporaryDirectory(prefix="golden-replay-") as tmp:
        out = Path(tmp) / "again"
        try:
            _avalon(["run", str(REPLAY / "config.yaml"), "--model", f"replay:{recorded}", "--out", str(out), "-q"])
        except Exception as exc:  # noqa: BLE001 - what stopped it is the answer (a divergence names its step)
            return f"failed: {exc}"
        before = [read_events(g) for g in finished_games(recorded)]
        after = [read_events(g) for g in finished_games(out)]
        return "same" if before == after and before else "different events"


def main(argv: list[str]) -> int:
    from avalon_agents.records.environment import environment

    found = {**play_sets(), "replay": replay()}
    if "--write" in argv:
        GOLDEN.write_text(json.dumps(found, indent=2) + "\n")
    print(json.dumps({"digests": found, "environment": environment()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
