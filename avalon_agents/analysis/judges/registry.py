"""Every judge, by name: the one place a judge is registered (its spec is in `speeches` or `messages`).

`Judge.tasks` asks the judges whose `analyze` is True about every speech of a run, in this order; the task,
its prompt, schema, parse and rows, and the report's figures all read the judge's spec from here.
"""

from __future__ import annotations

from avalon_agents.analysis.judges.messages import DECEPTION, PERSUASION
from avalon_agents.analysis.judges.spec import JudgeSpec
from avalon_agents.analysis.judges.speeches import CAMOUFLAGE, SELF_RECOMMENDATION, SHARING, TEAMWORK

JUDGES: dict[str, JudgeSpec] = {s.name: s for s in (CAMOUFLAGE, TEAMWORK, SHARING, SELF_RECOMMENDATION,
                                                    PERSUASION, DECEPTION)}
"""Every judge's spec, in the order `Judge.tasks` asks them."""

BUILT_IN = frozenset(JUDGES)


def register_judge(spec: JudgeSpec) -> None:
    """Add a judge (a plugin's: its prompt may be a file of its own, `prompt=` its path without `.txt`); it is asked
    after the built-in ones and its figures come after theirs in the report. Raises ValueError for a built-in
    judge's name: a plugin adds judges, never replaces the package's."""
    if spec.name in BUILT_IN:
        raise ValueError(f"judge {spec.name!r} is built in: a plugin adds names, never replaces the package's "
                         "(register yours under another name)")
    JUDGES[spec.name] = spec


def judge_spec(name: str) -> JudgeSpec:
    """The spec of the judge `name`.

    Raises:
        ValueError: no judge has that name (one line naming the known ones).
    """
    spec = JUDGES.get(name)
    if spec is None:
        raise ValueError(f"judge: unknown judge {name!r} (known: {', '.join(JUDGES)})")
    return spec
