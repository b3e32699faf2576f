"""The site's pages: each one HTML file holding its data (JSON in a <script type="application/json">), the
site's stylesheet and script inline, and nothing from the network, so the same page works served live (its script
then asks the JSON API again every few seconds and redraws) and exported as a plain file opened from disk.

`Site` knows where each page lives: as an address under the server (`live`), or as a file of the export, linked
relatively from the page that links it. Every page's data carries `page` (which page: index, run, compare, calls),
`links` (the addresses it links, made here) and `stamp` (what produced it: the framework's version, the folders
viewed, the time).
"""

from __future__ import annotations

import datetime as dt
import html
import posixpath
from importlib.resources import files
from typing import Any
from urllib.parse import quote, urlencode

from avalon_agents.view.game.pages import embed

PAGES = ("index", "run", "compare", "calls")
"""The pages this site draws (view.js has one drawing function per page)."""
POLL_SECONDS = 3
"""How often a live page asks its API again."""


def template(name: str) -> str:
    return files("avalon_agents.view").joinpath(name).read_text()


def page_html(title: str, data: dict[str, Any]) -> str:
    """One page: its title, its data and the site's CSS and script, inline."""
    assert data["page"] in PAGES, data["page"]
    return (template("page.html")
            .replace("{{title}}", html.escape(title))
            .replace("/*{{css}}*/", template("view.css"))
            .replace("/*{{js}}*/", template("view.js"))
            .replace("{{data}}", embed(data)))


class Site:
    """Where each page lives. `export`: False, an address on the server (with `token` on every link when the
    server asks for one); True, a file of the export, linked relatively from `here` (the linking page's file)."""

    def __init__(self, export: bool = False, token: str | None = None) -> None:
        self.export = export
        self.token = token

    def path(self, kind: str, run: str | None = None, game: str | None = None,
             runs: list[str] | None = None) -> str:
        """A page's own path: `/`, `/runs/ID`, `/runs/ID/calls`, `/runs/ID/games/GAME`, `/compare?runs=...`
        (live); index.html, runs/ID/index.html, runs/ID/calls.html, runs/ID/games/GAME.html,
        compare/A--B.html (export)."""
        if self.export:
            return {"index": "index.html",
                    "run": f"runs/{run}/index.html",
                    "calls": f"runs/{run}/calls.html",
                    "game": f"runs/{run}/games/{game}.html",
                    "compare": f"compare/{compare_name(runs or [])}.html"}[kind]
        quoted = quote(run or "", safe="/")
        return {"index": "/",
                "run": f"/runs/{quoted}",
                "calls": f"/runs/{quoted}/calls",
                "game": f"/runs/{quoted}/games/{quote(game or '', safe='/')}",
                "compare": "/compare?" + urlencode({"runs": ",".join(runs or [])})}[kind]

    def link(self, here: str, kind: str, **where: Any) -> str:
        """The address of a page as the page at `here` (its own `path`) links it."""
        target = self.path(kind, **where)
        if self.export:
            return posixpath.relpath(target, posixpath.dirname(here) or ".")
        if self.token:
            target += ("&" if "?" in target else "?") + urlencode({"token": self.token})
        return target

    def api(self, kind: str, **where: Any) -> str | None:
        """The JSON address a live page asks again (None in an export)."""
        if self.export:
            return None
        page = self.path(kind, **where)
        address = "/api" + ("/runs" if page == "/" else page)
        if self.token:
            address += ("&" if "?" in address else "?") + urlencode({"token": self.token})
        return address


def compare_name(runs: list[str]) -> str:
    """The export's file name of a comparison of runs (a variant's '#' as '@': a '#' in a link starts a fragment)."""
    return "--".join(run.replace("/", "~").replace("#", "@") for run in runs) or "none"


def stamp(roots: list[str], version: str | None = None) -> dict[str, Any]:
    """What produced a page: the framework's version, the folders viewed and when."""
    if version is None:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as package_version

        try:
            version = package_version("avalon_agents")
        except PackageNotFoundError:
            version = "unknown"
    return {"framework": f"avalon_agents {version}", "folders": roots,
            "made": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
