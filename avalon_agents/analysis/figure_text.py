"""Text that fits a figure: the width of a line in inches without a renderer, wrapping to a width, one line that
shrinks and then is cut, and absolute paths made relative (the provenance footer, `analysis.plots`)."""

from __future__ import annotations

from functools import lru_cache

from matplotlib.font_manager import FontProperties

from avalon_agents.formats import relative_paths as relative_paths  # the figures' footers: formats.py

FOOTER_SIZE = 6.0
FOOTER_MIN_SIZE = 5.0


@lru_cache(maxsize=4096)
def text_width(text: str, size: float) -> float:
    """The width in inches of one line of `text` at `size` points in the default font (no renderer needed)."""
    from matplotlib.textpath import TextToPath

    width, _, _ = TextToPath().get_text_width_height_descent(text, FontProperties(size=size), ismath=False)
    return width / 72


def wrap(text: str, size: float, width: float) -> str:
    """`text` broken at spaces into lines no wider than `width` inches at `size` points (a word wider than that
    keeps its own line)."""
    lines: list[str] = []
    for paragraph in str(text).split("\n"):
        line = ""
        for word in paragraph.split(" "):
            trial = f"{line} {word}" if line else word
            if line and text_width(trial, size) > width:
                lines.append(line)
                line = word
            else:
                line = trial
        lines.append(line)
    return "\n".join(lines)


def one_line(text: str, width: float, size: float = FOOTER_SIZE, smallest: float = FOOTER_MIN_SIZE
             ) -> tuple[str, float]:
    """(text, size): `text` on one line no wider than `width` inches: at `size`, else at a smaller size down to
    `smallest`, else cut at a word and ended with an ellipsis."""
    text = " ".join(str(text).split())
    if size > smallest and text_width(text, size) > width:  # as small as allowed before cutting anything
        size = max(smallest, size * width / text_width(text, size))
    if text_width(text, size) <= width:
        return text, size
    words = text.split(" ")
    keep, over = 1, len(words)  # the most words that fit, by halving: a long provenance is measured a few times
    while over - keep > 1:
        middle = (keep + over) // 2
        if text_width(" ".join(words[:middle]) + " …", size) <= width:
            keep = middle
        else:
            over = middle
    return " ".join(words[:keep]) + " …", size


