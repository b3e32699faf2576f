"""Write replay pages: one self-contained HTML file per game (its data embedded as JSON, the page's CSS and
script inline: no network), and an index linking every game with its outcome.

The templates are files beside this one: game.html (with page.css and the SCRIPTS put inline) and index.html.
"""

from __future__ import annotations

import html
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from avalon_agents.records.reader import open_run
from avalon_agents.view.game.timeline import game_data

REPLAY = "replay"
"""The default output folder, inside the replayed directory."""
SCRIPTS = ("page.js", "calls.js", "step.js", "search.js", "main.js")
"""The game page's script, in this order: rendering, LLM calls, stepping, search, then main.js runs it all."""


def template(name: str) -> str:
    return files("avalon_agents.view.game").joinpath(name).read_text()


def embed(data: Any) -> str:
    """JSON safe inside a <script> element: no '<' (so no '</script>' or '<!--') survives unescaped."""
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace("\u2028", "\\u2028").replace(
        "\u2029", "\\u2029")


def game_page(data: dict[str, Any]) -> str:
    """One game's page."""
    return (template("game.html")
            .replace("{{title}}", html.escape(f"Avalon replay: {data['game']}"))
            .replace("/*{{css}}*/", template("page.css"))
            .replace("/*{{js}}*/", "\n".join(template(name) for name in SCRIPTS))
            .replace("{{data}}", embed(data)))


def page_name(game: str) -> str:
    """The file name of a game's page: its path in the run, '/' turned into '--'."""
    return game.replace("/", "--") + ".html"


def index_page(title: str, games: list[dict[str, Any]]) -> str:
    """The index: one row per game (its data as game_page gets it) linking its page, with its outcome."""
    rows = []
    for g in games:
        r = g["result"]
        quests = "".join("✓" if q["success"] else "✗" for q in r["quests"])
        kinds = ", ".join(sorted({s["kind"] for s in g["seats"].values()}))
        cells = [f'<a href="{html.escape(page_name(g["game"]))}">{html.escape(g["game"])}</a>',
                 html.escape(r["winner"]), html.escape(r["reason"].replace("_", " ")), quests,
                 str(len(g["seats"])), html.escape(kinds), html.escape(str(g["seed"]))]
        rows.append(f'<tr class="game winner-{html.escape(r["winner"])}">'
                    + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    good = sum(g["result"]["winner"] == "good" for g in games)
    return (template("index.html")
            .replace("{{title}}", html.escape(title))
            .replace("{{summary}}", f"{len(games)} games: good won {good}, evil won {len(games) - good}")
            .replace("{{rows}}", "\n".join(rows)))


def write_replay(root: Path, out: Path | None = None) -> Path:
    """Write the replay of every finished game at or under `root`; return the page to open.

    `out`: a folder (default `root/replay/`) for index.html and one page per game; or, for a single game, a
    file name ending in .html for its page alone.

    Raises:
        FileNotFoundError: no finished game at or under `root`.
        ValueError: `out` names an .html file but `root` holds more than one game.
    """
    root = Path(root)
    found = open_run(root).finished(check=True) if root.is_dir() else []
    if not found:
        raise FileNotFoundError(f"{root}: no finished game (a game directory holds meta.json and result.json)")
    games = [game_data(game.path, game.name) for game in found]
    if out is not None and out.suffix == ".html":
        if len(games) > 1:
            raise ValueError(f"out: {out} is one page, but {root} holds {len(games)} games; give a folder")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(game_page(games[0]))
        return out
    folder = out if out is not None else root / REPLAY
    folder.mkdir(parents=True, exist_ok=True)
    for g in games:
        (folder / page_name(g["game"])).write_text(game_page(g))
    (folder / "index.html").write_text(index_page(f"Avalon replays: {root.resolve().name}", games))
    return folder / "index.html"
