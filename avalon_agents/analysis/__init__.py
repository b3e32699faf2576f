"""Analysis of run directories: loading into pandas, outcome and behavior metrics, plots and reports.

    data = load_run("runs/quickstart")          # tables: games, seats, speeches, votes, cards, calls, ...
    metrics.quest_engagement(data)              # any outcome metric, grouped with by=[...]
    analyze("runs/quickstart", judge=client)    # every metric, figure and report.md (what `avalon analyze` runs)
"""

from avalon_agents.analysis.load import RunData, load_run
from avalon_agents.analysis.paper import metrics
from avalon_agents.analysis.paper.report import Analysis, analyze

__all__ = ["Analysis", "RunData", "analyze", "load_run", "metrics"]
