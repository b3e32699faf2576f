"""The extractor: free text -> a legal action, through stages that are each recorded.

For every answer: the agent's typed action (a rule bot's, or the one an LLM agent decoded from its
constrained JSON answer) -> a JSON decision in the text -> the whole-word rule parse -> the LLM extractor
(few-shot, temperature 0, structured output where available) -> validation against the request. If nothing
legal comes out, the agent is asked again with the reason, at most `max_reasks` times, and then the paper's
fallback (Appendix A.4) decides: an unclear team vote approves, an unclear quest card fails for evil and
succeeds for good, too many players are truncated, too few are filled at random, an unclear Assassin names
a random player (or holds off when allowed). What each request kind needs is declared in decisions.kinds.

Every extraction becomes one typed trace record with its truthful `method` (typed / json / rule / llm /
fallback), the number of answers it took, the raw texts, and `valid` (the first answer gave a legal action:
the paper's Valid Response Rate, eq. 8, counts these).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from loguru import logger

from avalon_agents.core.actions import Action, ActionRequest, IllegalAction, ProposeTeam, Reply, RequestKind, Speak
from avalon_agents.core.types import seat_name
from avalon_agents.decisions.jsonish import load_json
from avalon_agents.decisions.kinds import DecisionKind, kind_of, plain
from avalon_agents.llm.health import LLMCallFailed
from avalon_agents.llm.settings import ModelSettings
from avalon_agents.narrate import quote
from avalon_agents.profiles import OWN_WORDS, profile
from avalon_agents.prompting import template
from avalon_agents.records.trace import Extraction as ExtractionRecord
from avalon_agents.records.trace import Method, Purpose, SpeechCheck, Tracer
from avalon_agents.speeches import copied_run, copies, cut_speech, mid_sentence, trim_copies, unlabelled

if TYPE_CHECKING:
    from avalon_agents.llm.client import LLMClient

MAX_REASKS = 2
EXTRACTOR_SETTINGS = ModelSettings(temperature=0.0, max_tokens=64, profile="standard")
"""The LLM extractor's own defaults: temperature 0 (the paper's 5.1), short answers, no profile's shaping."""


def extractor_settings(extractor: ModelSettings | None, agent: ModelSettings) -> ModelSettings | None:
    """The LLM extractor's settings: an instrument, not a player. Its own settings (a config's
    `extractor.model`, `--extractor-model`) over EXTRACTOR_SETTINGS over the agent's model, of which it takes the
    model and the endpoint's settings but not how the agent answers: whatever the agents' `constrained`, the
    extractor's answer is grammar- or schema-constrained wherever the provider supports it, at temperature 0
    (only the extractor's own settings change that). None: no LLM stage."""
    if extractor is None:
        return None
    player = agent.model_copy(update={"constrained": None, "temperature": None, "max_tokens": None,
                                      "profile": None})
    return extractor.over(EXTRACTOR_SETTINGS.over(player))

MIN_OWN_WORDS = OWN_WORDS
"""A trimmed speech with fewer words of its own is replaced by prompts/host/no_speech.txt (the speech's fallback)."""

AskAgain = Callable[[str], Awaitable[Reply]]
"""Ask the agent the same request again, telling it why its answer could not be used."""


@dataclass
class Extraction:
    action: Action
    method: Method
    answers: int = 1
    valid: bool = True
    texts: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def record(self, request: ActionRequest) -> ExtractionRecord:
        return ExtractionRecord(seat=request.seat, kind=request.kind.value, quest=request.quest,
                                attempt=request.attempt, method=self.method, valid=self.valid, answers=self.answers,
                                action=plain(self.action), texts=tuple(self.texts), problems=tuple(self.problems))


async def guard_speech(request: ActionRequest, reply: Reply, ask_again: AskAgain | None = None
                       ) -> tuple[Speak, SpeechCheck | None]:
    """A speech as it reaches the table, and how it was read (None for a seat without a prompt: a bot, a person).

    Every LLM seat's speech is read against the prompt it answered: the words it copied (an echo at
    ECHO_WORDS) and whether it stops mid-sentence. Under a profile with `echo_reask` (small), an echoing speech is
    asked again once with the reason, and what it still copies is trimmed away (a speech left with fewer than
    MIN_OWN_WORDS words says prompts/host/no_speech.txt instead); under a profile with `speech_words`, the speech
    loses a leading speaker label and is cut to that many words at its last sentence end."""
    text = reply.action.text if isinstance(reply.action, Speak) else reply.text
    if not reply.prompt:
        return Speak(text=text), None
    shape = profile(reply.profile or None)
    copied = copied_run(text, reply.prompt)
    echo = reasked = trimmed = False
    if copies(text, reply.prompt):  # ECHO_WORDS of its instructions, or nothing of its own
        echo = True
        if shape.echo_reask and ask_again is not None:
            again = await ask_again(template("host/echo").render())
            reasked, text = True, again.text
            prompt = again.prompt or reply.prompt
            if copies(text, prompt):
                text, trimmed = trim_copies(text, prompt), True
    cut = False
    if shape.speech_words:
        text, cut = cut_speech(unlabelled(text), shape.speech_words)
    placeholder = trimmed and len(text.split()) < MIN_OWN_WORDS  # nothing of its own was left
    if placeholder:
        text = template("host/no_speech").render()
    check = SpeechCheck(seat=request.seat, quest=request.quest, attempt=request.attempt, profile=shape.name,
                        copied=copied, echo=echo, reasked=reasked, trimmed=trimmed, placeholder=placeholder, cut=cut,
                        words=len(text.split()), mid_sentence=mid_sentence(text))
    return Speak(text=text), check


class Extractor:
    """Turns replies into legal actions.

    Args:
        llm: the LLM extractor's client (temperature 0); None skips the LLM stage.
        tracer: receives one record per extraction.
        max_reasks: how many times the agent is asked again before the fallback.
        seed: seeds the random fill of the fallback.
        seats: the seats whose decisions are recorded as extraction records (the seats that ask a model: the valid
            response rate is theirs; a rule bot's, a person's or a program's answer is not counted in it); None:
            every seat's.
    """

    def __init__(self, *, llm: LLMClient | None = None, tracer: Tracer | None = None,
                 max_reasks: int = MAX_REASKS, seed: int = 0, seats: Collection[int] | None = None) -> None:
        self.llm = llm
        self.tracer = tracer
        self.max_reasks = max_reasks
        self.rng = random.Random(seed)
        self.seats = None if seats is None else frozenset(seats)

    async def __call__(self, request: ActionRequest, reply: Reply, ask_again: AskAgain | None = None,
                       instruction: str = "") -> Action:
        if request.kind is RequestKind.SPEAK:
            speech, check = await guard_speech(request, reply, ask_again)
            if self.tracer is not None and check is not None:
                self.tracer.trace(check)
            return speech
        extraction = await self.extract(request, reply, ask_again, instruction)
        if request.kind is not RequestKind.SPEAK:
            if self.tracer is not None and (self.seats is None or request.seat in self.seats):
                self.tracer.trace(extraction.record(request))
            if extraction.method == "fallback":
                logger.info("fallback: seat {} {} (quest {}.{}) -> {} after {} answer(s): {}", request.seat,
                            request.kind.value, request.quest, request.attempt, plain(extraction.action),
                            extraction.answers, "; ".join(extraction.problems))
        return extraction.action

    async def extract(self, request: ActionRequest, reply: Reply, ask_again: AskAgain | None = None,
                      instruction: str = "") -> Extraction:
        if request.kind is RequestKind.SPEAK:
            text = reply.action.text if isinstance(reply.action, Speak) else reply.text
            return Extraction(Speak(text=text), reply.source if reply.action else "rule", texts=[text])
        texts: list[str] = []
        problems: list[str] = []
        partial: Action | None = None
        for answer in range(self.max_reasks + 1):
            texts.append(reply.text)
            action, method, problem, near = await self._one(request, reply, instruction)
            if action is not None:
                return Extraction(action, method, answer + 1, answer == 0, texts, problems)
            problems.append(problem)
            partial = near or partial
            if self._too_many(request, near):  # the paper truncates at once
                return Extraction(self._fallback(request, near), "fallback", answer + 1, False, texts, problems)
            if ask_again is None or answer == self.max_reasks:
                break
            reply = await ask_again(problem)
        action = self._fallback(request, partial)
        return Extraction(action, "fallback", len(texts), False, texts, problems)

    async def _one(self, request: ActionRequest, reply: Reply, instruction: str):
        """(action, method, problem, near miss) for one answer."""
        spec = kind_of(request)
        near: Action | None = None
        candidates: list[tuple[Method, Action | None]] = []
        if reply.action is not None:
            candidates.append((reply.source, reply.action))
        else:
            candidates.append(("json", spec.read_json(reply.text)))
        candidates.append(("rule", spec.parse(reply.text, request)))
        problem = "no clear answer"
        for method, action in candidates:
            if action is None:
                continue
            try:
                return request.validate(action), method, "", None
            except IllegalAction as exc:
                problem, near = str(exc), action
        if self.llm is not None and reply.text.strip():
            action = await self._ask_llm(spec, request, reply.text, instruction)
            if action is not None:
                try:
                    return request.validate(action), "llm", "", None
                except IllegalAction as exc:
                    problem, near = str(exc), action
        return None, "", self._explain(request, problem), near

    async def _ask_llm(self, spec: DecisionKind, request: ActionRequest, text: str, instruction: str
                       ) -> Action | None:
        from langchain_core.messages import HumanMessage

        prompt = template(spec.extract_prompt)
        values = {"question": instruction, "answer": quote(text)}  # unforgeable: a JSON string literal
        if "speaker" in prompt.variables:
            values["speaker"] = seat_name(request.seat)
        try:
            out = await self.llm.call([HumanMessage(prompt.render(**values))],
                                      purpose=Purpose(stage="extract", name="extractor", request=request.kind.value),
                                      prompt_id=prompt.id, prompt_hash=prompt.hash, seat=request.seat,
                                      schema=spec.extract_schema(), quest=request.quest, attempt=request.attempt)
        except LLMCallFailed:
            return None
        value = load_json(out)
        if value is None or spec.key not in value:
            return None
        return spec.value_of(value[spec.key])

    @staticmethod
    def _explain(request: ActionRequest, problem: str) -> str:
        if request.kind is RequestKind.PROPOSE:
            return f"{problem}; name exactly {request.team_size} different players as \"Player N\""
        return problem

    @staticmethod
    def _too_many(request: ActionRequest, near: Action | None) -> bool:
        if not isinstance(near, ProposeTeam):
            return False
        legal = {s for s in near.team if s in request.options}
        return len(legal) > request.team_size

    def _fallback(self, request: ActionRequest, near: Action | None) -> Action:
        """The paper's documented defaults (Appendix A.4)."""
        return kind_of(request).fallback(request, near, self.rng)
