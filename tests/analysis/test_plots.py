"""Figures a paper could print (matplotlib Agg, no display): one panel per variant, the legend outside the
panels, every CI inside the y-limits, a label on every axis, one colour per side in every figure, and what
produced the numbers printed on the figure."""

from __future__ import annotations

import re

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex

from avalon_agents.analysis import figure_text, plots
from avalon_agents.analysis.judges.labels import CAMOUFLAGE_LABELS
from avalon_agents.records.analysis_dir import report_file

VARIANTS = ["full", "wo_analysis", "wo_plan"]
ABSOLUTE = re.compile(r"(^|[\s(;,])/[\w.-]")
ROLES = {"Merlin": "good", "Percival": "good", "Loyal Servant": "good", "Morgana": "evil", "Assassin": "evil"}
PROVENANCE = ("produced by: models scripted; rules paper; config table2.yaml (fingerprint 0123456789ab); "
              "commit deadbeef; 30 of 30 planned games finished")


def rates(by: str, values: dict) -> pd.DataFrame:
    """A metric table: per variant and `by`, a value with a CI that reaches 0 and 1 at the extremes."""
    rows = []
    for i, variant in enumerate(VARIANTS):
        for key, side in values.items():
            value = (i + 1) / 4 if side == "good" else 1 - (i + 1) / 4
            rows.append({"variant": variant, by: key, "agent": "ours" if side == "good" else "baseline",
                         "value": value, "ci_low": 0.0 if i == 0 else value / 2,
                         "ci_high": 1.0 if i == 2 else (value + 1) / 2, "n": 4.0, "games": 4})
    return pd.DataFrame(rows)


def win_rates() -> pd.DataFrame:
    return rates("side", {"good": "good", "evil": "evil"}).drop(columns="agent")


def by_role() -> pd.DataFrame:
    return rates("role", ROLES)


def drawn(fig):
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig


def panels(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def all_figures():
    roles = by_role()
    sr = pd.concat([roles.assign(metric="rate"), roles.assign(metric="success")])
    vac = pd.DataFrame([{"variant": v, "agent": "ours", "role": "Percival", "quest": q, "target_group": g,
                         "trust": 0.2 * q % 1} for v in VARIANTS for q in (1, 2, 3) for g in ("Merlin", "Morgana")])
    return {
        "win_rate": plots.win_rate_plot(win_rates(), caption=PROVENANCE),
        "qer_fvr": plots.qer_fvr_plot(roles, roles, caption=PROVENANCE),
        "leader_approval": plots.leader_approval_plot(roles, caption=PROVENANCE),
        "self_recommendation": plots.self_recommendation_plot(sr, caption=PROVENANCE),
        "vacillation": plots.curves(vac, "quest", "trust", ["agent", "role", "target_group"], "t", "trust share",
                                    caption=PROVENANCE, judge="scripted"),
    }


@pytest.fixture(scope="module")
def figures():
    """The figures, drawn once for the tests that only read them (drawing is most of this file's time)."""
    return all_figures()


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_one_panel_per_variant(figures):
    assert len(panels(figures["win_rate"])) == len(VARIANTS)
    assert len(panels(figures["leader_approval"])) == len(VARIANTS)
    assert len(panels(figures["vacillation"])) == len(VARIANTS)
    assert len(panels(figures["qer_fvr"])) == 2 * len(VARIANTS)  # a row per metric
    titles = [ax.get_title() for ax in panels(figures["win_rate"])]
    assert all(any(v in t for t in titles) for v in VARIANTS)
    shares = pd.DataFrame([{"variant": v, "agent": "ours", "role": r, "self_disclosure": 0.5, "camouflage": 0.25,
                            "withholding": 0.25, "n": 4} for v in VARIANTS for r in ROLES])
    assert len(panels(plots.shares_plot(shares, list(CAMOUFLAGE_LABELS), "c"))) == len(VARIANTS)
    many = pd.concat([win_rates().assign(variant=f"v{i}") for i in range(9)])  # wrapped, no empty panels left
    assert len(panels(plots.win_rate_plot(many))) == 9


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_legend_outside_every_panel(figures):
    for name, fig in figures.items():
        drawn(fig)
        assert fig.legends, name
        legend = fig.legends[0].get_window_extent()
        for ax in panels(fig):
            assert ax.get_legend() is None, name
            assert not legend.overlaps(ax.get_window_extent()), name


def test_y_limits_hold_every_interval_whole():
    table = by_role()
    fig = plots.leader_approval_plot(table)
    for ax, variant in zip(panels(fig), VARIANTS):
        part = table[table["variant"] == variant]
        low, high = ax.get_ylim()
        assert low < part["ci_low"].min() and high > part["ci_high"].max()  # a margin: no cap on the frame
        assert low <= 0 and high >= 1  # a rate: the whole 0-1 scale
    wide = win_rates().assign(value=2.0, ci_low=1.5, ci_high=3.5)  # not a rate: still the whole interval
    for ax in panels(plots.facet_bars([(wide, "calls")], "side", title="t", xlabel="side", bounds=None)):
        assert ax.get_ylim()[0] < 1.5 and ax.get_ylim()[1] > 3.5


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_every_axis_is_labelled(figures):
    matrix = pd.DataFrame([{"variant": "full", "agent": "ours", "role": r, "target_role": t, "trust": 0.5,
                            "distrust": 0.2, "ambivalent": 0.3, "n": 3} for r in ROLES for t in ROLES if r != t])
    for fig in [*figures.values(), plots.heatmaps(matrix)]:
        for ax in panels(fig):
            assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()


def bar_colours(fig) -> dict[str, str]:
    """side -> the colours its bars were drawn in (read back from the tick labels under them)."""
    found: dict[str, set[str]] = {}
    for ax in panels(fig):
        ticks = [t.get_text().split("\n")[0] for t in ax.get_xticklabels()]
        for tick, bar in zip(ticks, ax.patches):
            found.setdefault(plots.side_of(tick), set()).add(to_hex(bar.get_facecolor()))
    return found


def test_one_colour_per_side_in_every_figure(figures):
    for name in ("win_rate", "qer_fvr", "leader_approval", "self_recommendation"):
        colours = bar_colours(figures[name])
        assert colours == {"good": {plots.SIDE_COLOURS["good"].lower()},
                           "evil": {plots.SIDE_COLOURS["evil"].lower()}}, name
    lines = {line.get_label(): to_hex(line.get_color()) for ax in panels(figures["vacillation"])
             for line in ax.get_lines()}
    assert lines == {"ours / Percival → Merlin": plots.SIDE_COLOURS["good"].lower(),
                     "ours / Percival → Morgana": plots.SIDE_COLOURS["evil"].lower()}
    assert not set(map(str.lower, plots.LABEL_COLOURS)) & set(map(str.lower, plots.SIDE_COLOURS.values()))


def caption(fig) -> str:
    return " ".join(t.get_text().replace("\n", " ") for t in fig.texts)


def test_every_figure_carries_its_provenance(figures):
    for name, fig in figures.items():
        assert PROVENANCE in caption(fig), name
    assert plots.SCRIPTED_JUDGE in caption(figures["vacillation"])
    stamped = plots.bars_figure(pd.DataFrame([{"variant": "full", "role": "Merlin", "share_rate": 0.5}]), "role",
                                value="share_rate", title="s", judge="scripted")
    assert "scripted" in caption(stamped) and "not a real judgment" in caption(stamped)


@pytest.mark.slow  # seconds; the slow suite (CI) runs it
def test_the_report_provenance_is_on_the_analysis_figures(analysis_run, tmp_path):
    from avalon_agents.analysis.paper.report import analyze, footer, provenance
    from avalon_agents.llm import ClientPool, ModelSettings

    result = analyze(analysis_run, out=tmp_path / "a", judge=ClientPool().get(ModelSettings(spec="scripted")))
    text = footer(result)
    fig = plots.win_rate_plot(result.tables["win_rate"], caption=text)
    assert "scripted" in caption(fig) and "provenance: report.md" in text
    shown = caption(fig)[caption(fig).index(text[:20]):]  # the footer: whole, or cut at a word to fit the figure
    assert shown == text or (shown.endswith(" …") and text.startswith(shown[:-2]))
    assert len(panels(fig)) == result.data.games["variant"].nunique()
    assert str(tmp_path) not in text and not ABSOLUTE.search(text)  # relative paths only
    assert provenance(result) in report_file(tmp_path / "a").read_text()  # the whole of it is in the report


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_figures_are_not_left_in_pyplot():
    """A notebook cell returning a figure shows it once: pyplot does not show it again at the cell's end."""
    before = plt.get_fignums()
    all_figures()
    assert plt.get_fignums() == before


@pytest.mark.parametrize("table", [pd.DataFrame(columns=["variant", "role", "value", "ci_low", "ci_high"])])
def test_empty_tables_draw_a_labelled_empty_panel(table):
    fig = plots.leader_approval_plot(table, caption=PROVENANCE)
    (ax,) = panels(fig)
    assert ax.get_xlabel() and PROVENANCE[:60] in caption(fig)  # one line: cut to the narrow figure's width


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_returned_figure_shows_as_one_png_in_a_notebook():
    """What Jupyter does with a cell's last value: the figure's PNG, whether or not matplotlib's inline backend
    is active (it is once anything imports pyplot in the kernel), and nothing left for the backend to show again."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    with matplotlib.rc_context():  # the inline backend's support changes rcParams
        try:
            fig = plots.win_rate_plot(win_rates(), caption=PROVENANCE)
            data, _ = shell.display_formatter.format(fig)
            assert data["image/png"][:4] in (b"\x89PNG", "iVBO")  # raw or base64
            inline = pytest.importorskip("matplotlib_inline.backend_inline")
            inline.configure_inline_support(shell, "inline")
            data, _ = shell.display_formatter.format(fig)
            assert data["image/png"]
            assert fig not in [plt.figure(n) for n in plt.get_fignums()]
        finally:
            InteractiveShell.clear_instance()


# ------------------------------------------------------------------------------------------ small-sample figures

GOOD = ["Merlin", "Percival", "Loyal Servant"]


def one_variant(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["variant"] == "full"]


def inside(fig, text) -> bool:
    box, frame = text.get_window_extent(), fig.bbox
    return box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1 and box.y1 <= frame.y1 + 1


def titles(fig) -> list:
    return [t for t in [fig._suptitle, *(ax.title for ax in panels(fig))] if t is not None and t.get_text()]


def test_a_single_variant_figure_keeps_its_title_inside_the_figure():
    """The defect: one panel's figure (4.4 inches) clipped its suptitle at both edges."""
    roles = one_variant(by_role())
    sr = pd.concat([roles.assign(metric="rate"), roles.assign(metric="success")])
    fig = drawn(plots.self_recommendation_plot(sr, judged=True, caption=PROVENANCE))
    assert len(panels(fig)) == 2 and "Self-recommendation" in fig._suptitle.get_text()
    for text in titles(fig):
        assert inside(fig, text), text.get_text()


@pytest.mark.slow  # drawing every kind of figure takes seconds
def test_every_kind_of_figure_keeps_its_titles_inside_the_figure():
    roles = one_variant(by_role())
    shares = pd.DataFrame([{"variant": "a variant with a rather long name", "agent": "ours", "role": r,
                            "self_disclosure": 0.5, "camouflage": 0.25, "withholding": 0.25, "n": 4}
                           for r in ROLES])
    matrix = pd.DataFrame([{"variant": "full", "agent": "a long agent name", "role": r, "target_role": t,
                            "trust": 0.5, "distrust": 0.2, "ambivalent": 0.3, "n": 3} for r in ROLES for t in ROLES
                           if r != t])
    vac = pd.DataFrame([{"variant": "full", "agent": "ours", "role": "Percival", "quest": q, "target_group": g,
                         "trust": 0.5, "n": 2} for q in (1, 2, 3) for g in ("Merlin", "Morgana")])
    ratings = pd.DataFrame([{"agent": a, "scope": s, "mu": 25.0, "low": 20.0, "high": 30.0}
                            for a in ("a", "b") for s in ("overall", "good", "evil")])
    for fig in (plots.leader_approval_plot(roles), plots.qer_fvr_plot(roles, roles),
                plots.shares_plot(shares, list(CAMOUFLAGE_LABELS), "First-round speeches: how speakers present "
                                  "themselves, per role and variant"),
                plots.heatmaps(matrix), plots.curves(vac, "quest", "trust", ["agent", "role", "target_group"],
                                                     "Teamwork (trust share) towards each group over the quests",
                                                     "trust share"),
                plots.ratings_plot(ratings, caption=PROVENANCE)):
        drawn(fig)
        for text in titles(fig):
            assert inside(fig, text), text.get_text()


def test_the_footer_is_one_small_line_of_relative_paths(tmp_path, monkeypatch):
    """The defect: the provenance took about a quarter of a figure, wrapped over lines, with absolute paths."""
    monkeypatch.chdir(tmp_path)
    long = (f"run {tmp_path}/runs/r1; config {tmp_path}/configs/t.yaml; cache /somewhere/else/entirely/cache.jsonl; "
            "produced by: models scripted; rules paper; experiment t (fingerprint 0123456789ab, commit deadbeef); "
            "decisions: json; ours: summary, analysis, plan, action, response; " * 3)
    fig = plots.leader_approval_plot(one_variant(by_role()), caption=long)
    footer = fig._supxlabel
    text = footer.get_text()
    assert "\n" not in text and figure_text.FOOTER_MIN_SIZE <= footer.get_fontsize() <= figure_text.FOOTER_SIZE
    assert text.endswith(" …") and figure_text.text_width(text, footer.get_fontsize()) <= fig.get_figwidth()
    assert footer.get_fontsize() / 72 < 0.03 * fig.get_figheight()  # one small line, not a quarter
    assert str(tmp_path) not in text and not ABSOLUTE.search(text), text
    assert text.startswith("run runs/r1; config configs/t.yaml; cache …/entirely/cache.jsonl;")
    assert figure_text.relative_paths("at /x/y/z.txt and (/x)", root="/x") == "at y/z.txt and (x)"


def fvr_roles() -> pd.DataFrame:
    fvr = one_variant(by_role())
    fvr = fvr.assign(applies=~fvr["role"].isin(GOOD))
    return fvr.assign(ci_low=fvr["ci_low"].where(fvr["applies"]), ci_high=fvr["ci_high"].where(fvr["applies"]),
                      value=fvr["value"].where(fvr["applies"], 0.0))


def error_bar_positions(ax) -> set[float]:
    """The x of every error bar drawn in a panel (its vertical segments)."""
    from matplotlib.collections import LineCollection

    return {round(float(seg[0][0]), 3) for c in ax.collections if isinstance(c, LineCollection)
            for seg in c.get_segments()}


def test_failure_votes_of_good_roles_are_na_not_error_bars():
    """The defect: the failure-vote panels drew error bars for good roles, who cannot fail."""
    roles = one_variant(by_role())
    fig = plots.qer_fvr_plot(roles, fvr_roles())
    qer, fvr = panels(fig)
    ticks = [t.get_text() for t in fvr.get_xticklabels()]
    good = {float(i) for i, t in enumerate(ticks) if t in GOOD}
    assert len(good) == 3 and not good & error_bar_positions(fvr)
    assert len(error_bar_positions(fvr)) == 2  # Morgana's and the Assassin's
    assert [t.get_text() for t in fvr.texts].count(plots.NOT_APPLICABLE) == 3
    assert good <= error_bar_positions(qer)  # quest engagement applies to everyone
    heights = {i: p.get_height() for i, p in enumerate(fvr.patches)}
    assert all(heights[int(i)] == 0 for i in good)


def test_every_judged_figure_draws_its_interval_and_its_n():
    """The defect: camouflage, teamwork and vacillation drew no interval although their tables hold one."""
    shares = pd.DataFrame([{"variant": "full", "agent": "ours", "role": r, "self_disclosure": 1.0,
                            "self_disclosure_low": 0.21, "self_disclosure_high": 1.0, "camouflage": 0.0,
                            "camouflage_low": 0.0, "camouflage_high": 0.79, "withholding": 0.0,
                            "withholding_low": 0.0, "withholding_high": 0.79, "n": 1, "games": 1, "few_games": True}
                           for r in ROLES])
    camo = plots.shares_plot(shares, list(CAMOUFLAGE_LABELS), "c")
    (ax,) = panels(camo)
    assert len(error_bar_positions(ax)) == 3 * len(ROLES)  # a bar and an interval per label and role
    assert [t.get_text() for t in ax.texts].count("n=1" + plots.FEW_MARK) == len(ROLES)
    assert any(plots.FEW_MARK in t.get_text() for lg in camo.legends for t in lg.get_texts())
    matrix = pd.DataFrame([{"variant": "full", "agent": "ours", "role": "Merlin", "target_role": "Morgana",
                            "trust": 0.5, "trust_low": 0.1, "trust_high": 0.9, "distrust": 0.5, "distrust_low": 0.1,
                            "distrust_high": 0.9, "n": 2, "games": 1, "few_games": True}])
    cells = [t.get_text() for ax in panels(plots.heatmaps(matrix)) for t in ax.texts]
    assert cells == ["0.50\n0.10–0.90\nn=2*"] * 2
    vac = pd.DataFrame([{"variant": "full", "agent": "ours", "role": "Percival", "quest": q, "target_group": g,
                         "trust": 0.5, "trust_low": 0.2, "trust_high": 0.8, "n": 6, "games": 6, "few_games": False}
                        for q in (1, 2, 3) for g in ("Merlin", "Morgana")])
    (ax,) = panels(plots.curves(vac, "quest", "trust", ["agent", "role", "target_group"], "t", "trust share"))
    assert len(error_bar_positions(ax)) == 6 and [t.get_text() for t in ax.texts].count("n=6") == 6
    bars = panels(plots.bars_figure(one_variant(by_role()), "role"))[0]
    assert [t.get_text() for t in bars.texts] == ["n=4"] * len(ROLES)


def test_bars_of_one_game_say_so_in_the_panel_title():
    few = one_variant(by_role()).assign(games=1, few_games=True)
    (ax,) = panels(plots.leader_approval_plot(few))
    assert ax.get_title().endswith("(1 game*)")
    assert np.all([t.get_text() == "n=4" + plots.FEW_MARK for t in ax.texts])
