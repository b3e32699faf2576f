"""`avalon view --export OUT`: the same site as plain files that open from disk or any static host (each page holds
its data; links are relative), for a paper's supplement. OUT must be new or empty; nothing is written elsewhere."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from avalon_agents.view.confine import MAX_FILE_BYTES, Unreadable
from avalon_agents.view.pages import View
from avalon_agents.view.site import Site, page_html


def export(roots: list[Path], out: Path, comparisons: list[list[str]] = (),
           progress: Callable[[str], None] = lambda what: None, max_bytes: int = MAX_FILE_BYTES) -> list[Path]:
    """Write the site under `out`: the index, each run's page, its calls and its games' replays, and each
    comparison asked for (each a list of run ids) and each run's variants' comparison (its page links it); a run its
    row calls unreadable is on the index alone (progress names why). Returns the files written. Raises ValueError
    when `out` holds anything."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"export: {out} is not empty (give a new folder)")
    view = View(roots, Site(export=True), max_bytes=max_bytes)
    written: list[Path] = []

    def write(kind: str, html: str, **where) -> None:
        path = out / view.site.path(kind, **where)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html)
        written.append(path)

    index = view.index()
    index["comparisons"] = [{"runs": runs, "link": view.site.link(view.site.path("index"), "compare", runs=runs)}
                            for runs in comparisons]
    write("index", page_html("avalon view: runs", index))
    for row in index["runs"]:
        run_id = row["id"]
        progress(run_id)
        try:
            data = view.run(run_id)
        except Unreadable as exc:  # its row on the index names the file; no page of it
            progress(f"{run_id}: not exported ({exc})")
            continue
        write("run", page_html(data["title"], data), run=run_id)
        calls = view.calls(run_id, {})
        write("calls", page_html(calls["title"], calls), run=run_id)
        for game in data["games"]:
            write("game", view.game_page(run_id, game["game"]), run=run_id, game=game["game"])
        sides = view.variant_sides(run_id)
        if sides:  # the comparison of its variants, which its page links
            variants = view.compare(sides)
            write("compare", page_html(variants["title"], variants), runs=sides)
    for runs in comparisons:
        data = view.compare(runs)
        write("compare", page_html(data["title"], data), runs=runs)
    return written
