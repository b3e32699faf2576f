"""The web table's page: page.html with page.css and page.js put inline, one self-contained page (no external
resource; the server's Content Security Policy lets its one inline script run by its hash)."""

from __future__ import annotations

from importlib.resources import files


def page() -> str:
    """The page every seat and the spectator load (the script tells them apart by the address)."""
    here = files("avalon_agents.table")
    return (here.joinpath("page.html").read_text()
            .replace("/*{{css}}*/", here.joinpath("page.css").read_text())
            .replace("/*{{js}}*/", here.joinpath("page.js").read_text()))
