"""Experience learning (the paper's 4.8), at game end.

Self-role strategy learning: step 1 asks for three suggestions for the seat's role from the game's log
(summaries, naming roles rather than seats); step 2 folds them into an improved strategy of at most two
sentences that keeps the old one's strengths. Other-role strategy learning writes at most 100 words on
how each other role played, merged with the earlier notes. `improve_strategy` (the paper's IS) and
`other_roles` (AO) switch the two parts separately. The results go to `mind.experience`, which the next
game's role card and prompts use (and an experience store keeps across processes).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from avalon_agents import orders
from avalon_agents.core.events import GameResult
from avalon_agents.core.types import seat_name
from avalon_agents.modules.base import Expected, Module, Turn, register_module
from avalon_agents.modules.memory import Memory
from avalon_agents.modules.sections import context, with_private
from avalon_agents.prices import Cost
from avalon_agents.prompting import template

LOG_TOKENS = 1500


def game_log(turn: Turn) -> str:
    """The game as the seat knows it: its summary, then the rounds it did not summarize yet."""
    mind = turn.mind
    rest = Memory.render([e for e in mind.memory.entries if e.quest > mind.summarized], LOG_TOKENS)
    return "\n".join(part for part in (turn.slots.summaries(), rest) if part) or "(nothing recorded)"


def role_map(result: GameResult) -> str:
    listed = orders.current().listed(sorted(result.roles))  # the game's order of players
    return "; ".join(f"{seat_name(seat)}: {result.roles[seat].value}" for seat in listed)


@register_module("experience")
class ExperienceModule(Module):
    slot = "experience"
    prompt = "modules/experience_suggestions"
    # per game of six seats (standard.py)
    expected = Expected(Cost(18.0, 37_593, 144, 30_541), Cost(18.0, 32_252, 144, 26_522))
    PARTS: ClassVar[dict[str, int]] = {"improve_strategy": 2, "other_roles": 1}
    """Calls per seat and game of each part: the suggestions and the improved strategy; the notes on the others."""

    @classmethod
    def expected_with(cls, options: dict[str, Any]) -> Expected:
        """Table 6's w/o IS and w/o AO leave a part's calls out (tokens in proportion to the calls)."""
        on = sum(n for part, n in cls.PARTS.items() if options.get(part, True))
        share = on / sum(cls.PARTS.values())
        return Expected(cls.expected.per_round * share, cls.expected.per_turn * share)

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        improve_strategy: bool = True
        other_roles: bool = True
        max_words: int = Field(100, ge=20, le=500)

    async def game_end(self, turn: Turn, result: GameResult) -> None:
        mind, exp = turn.mind, turn.mind.experience
        name, role = seat_name(mind.seat), mind.role.value
        log, roles = game_log(turn), role_map(result)
        won = result.winner is mind.role.side
        quest = len(result.quests)
        exp.reflection = f"{roles}\n{log}\nResult: {result.winner.value} won ({result.reason.value})"
        cache = mind.layout == "cache"
        told = {"context": context(turn, upto="experience")} if cache else {"log": log}

        def prompt(name_: str, **values: object) -> tuple[str, str]:
            """(template id, text) of a part's prompt in the seat's layout (`cache`: after the game so far)."""
            found = f"modules/cache/{name_}" if cache else f"modules/{name_}"
            values = {k: v for k, v in {**values, **told}.items() if k in template(found).variables}
            text = template(found).render(**values)
            return found, text if cache else with_private(mind, text)

        async def improve() -> None:
            found, text = prompt("experience_suggestions", name=name, role=role, roles=roles,
                                 outcome=f"{result.winner.value} won ({result.reason.value}); {name} "
                                         f"{'won' if won else 'lost'}",
                                 goal=mind.card["goal"], strategy=mind.strategy, previous=exp.suggestions or "(none)")
            suggestions = await self.ask(mind, text, part="suggestions", prompt=found, quest=quest)
            if suggestions:
                found, text = prompt("experience_strategy", name=name, role=role, strategy=mind.strategy,
                                     suggestions=suggestions)
                improved = await self.ask(mind, text, part="strategy", prompt=found, quest=quest)
                exp.suggestions = suggestions
                exp.strategy = improved or exp.strategy

        async def other_roles() -> None:
            found, text = prompt("experience_other_roles", name=name, role=role, roles=roles,
                                 previous=exp.other_roles or "(none)", max_words=self.options.max_words)
            notes = await self.ask(mind, text, part="other_roles", prompt=found, quest=quest)
            exp.other_roles = notes or exp.other_roles

        # the two parts read neither's output: they run side by side
        await asyncio.gather(*(part() for part, on in ((improve, self.options.improve_strategy),
                                                       (other_roles, self.options.other_roles)) if on))
