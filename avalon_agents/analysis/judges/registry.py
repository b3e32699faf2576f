"""Every judge, by name: the one place a judge is registered (its spec is in `speeches` or `messages`).

`Judge.tasks` asks the judges whose `analyze` is True about every speech of a run, in this order; the task,
its prompt, schema, parse and rows, and the report's figures all read the judge's spec from here.
"""

from __future__ import annotations

from avalon_agents.analysis.judges.messages import DECEPTION, PERSUASION
from avalon_agents.analysis.judges.spec import JudgeSpec
from avalon_agents.analysis.judges.speeches import CAMOUFLAGE, SELF_RECOMMENDATION, SHARING, TEAMWORK
from avalon_agents.registry import Registry

JUDGES: Registry[JudgeSpec] = Registry("judge", [(s.name, s) for s in (
    CAMOUFLAGE, TEAMWORK, SHARING, SELF_RECOMMENDATION, PERSUASION, DECEPTION)])
"""Every judge's spec, in the order `Judge.tasks` asks them."""


def register_judge(spec: JudgeSpec) -> None:
    """Add a judge (a plugin's: its prompt may be a file of its own, `prompt=` its path without `.txt`); it is asked
    after the built-in ones and its figures come after theirs in the report. Raises ValueError for a built-in
    judge's name: a plugin adds judges, never replaces the package's."""
    JUDGES.register(spec.name, spec, builtin=False)


def judge_spec(name: str) -> JudgeSpec:
    """The spec of the judge `name`.

    Raises:
        ValueError: no judge has that name (one line naming the known ones).
    """
    return JUDGES[name]
