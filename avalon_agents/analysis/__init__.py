"""Analysis of run directories: loading into pandas, outcome and behavior metrics, plots and reports.

    data = load_run("runs/quickstart")          # tables: games, seats, speeches, votes, cards, calls, ...
    metrics.quest_engagement(data)              # any outcome metric, grouped with by=[...]
    analyze("runs/quickstart", judge=client)    # every metric, figure and report.md (what `avalon analyze` runs)

The names below load their module when first used (PEP 562): a command that only needs `stats` (the plan's
intervals) loads no pandas or matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avalon_agents.lazy import lazy_exports

_WHERE = {"RunData": "load", "load_run": "load", "metrics": "paper.metrics", "Analysis": "paper.report",
          "analyze": "paper.report"}

__all__ = ["Analysis", "RunData", "analyze", "load_run", "metrics"]

__getattr__ = lazy_exports(__name__, _WHERE)

if TYPE_CHECKING:
    from avalon_agents.analysis.load import RunData, load_run
    from avalon_agents.analysis.paper import metrics
    from avalon_agents.analysis.paper.report import Analysis, analyze
