"""BaselineAgent: the Werewolf agent of Xu et al. (2023a), repurposed for Avalon as the paper did (5.3).

For each answer it gathers history three ways: the most recent messages (freshness), the messages with the
highest rule-based informativeness scores, ranked by score (informativeness), and answers to questions
(completeness): a fixed list for the seat's side plus questions the model proposes, each answered from the
history messages most similar to it (MiniLM embeddings in process by default; option `embeddings:` names a
served embeddings endpoint instead), and turned into a reflection. From an experience
pool of earlier games' (reflection, answer, score), it retrieves the situations most like the current
reflection, contrasts the best and the worst answer, and draws a suggestion (once per round, and only when
the answers found scored differently: otherwise there is no better and worse answer to contrast). It then
answers with chain-of-thought; the host receives only the part after "My concise talking content:".

Its system prompt carries its role card (the set `context.cards` names), as the paper's baseline had a strategy
(Appendix A.5). Where experience is learned (`context.pool` set: the agent's `learn`), the strategy is updated
between games as the cognitive agent's is (the paper's App. A.5 updates it "for both our agents and the
baseline"): at game end, three suggestions for its role from the game, then an improved strategy of at most two
sentences, with the experience module's prompts, named by role and kept in its pool; the next game's seat of that
role plays with it in its system prompt. Unlike the code the paper used, its system prompt is filled in (seat,
role, player count) and its informative messages are ranked by score.

Options (agent `options:` in an experiment config): `recent` and `informative` (INFORMATIVE), the two windows
(the paper's code: 15 and 15, what the paper configs set); `respond_temperature`, the temperature of the
final answer (None: the agent's own; the paper's code: 0, what the paper configs set); `improve_strategy`
(default true), the strategy update between games; `embeddings`, where retrieval's vectors come from;
`prompt_layout` (narrate.LAYOUTS), both holding the private facts in every prompt:
- `cache` (default): the three steps of a request (questions, reflection, answer; a suggestion too) share one
  start, the game so far (the public messages from a start that moves in large steps, numbered), the private
  facts, then the host's question, and add only their own material after it; at game end the strategy update
  begins with the same game so far. A message the game so far holds is cited by its number in a step's
  retrieved and informative messages instead of repeated; one from before it is quoted once. The game so far is
  cut to the newest public messages in WINDOW_KEEP tokens (at least `recent`, if set) when it holds more than
  WINDOW_SLACK tokens before them; between cuts each request's prompts extend the previous request's, so a
  prompt cache serves them. With a profile that keeps them there (Profile.standing), the steps' standing
  instructions are said once, at the end of the system message ("How you work": `steps`, with the questions its
  side always considers, and the strategy update's two steps when it learns at game end), and each prompt ends
  with a short "Now:" line naming its step: the system message (1,090 to 1,130 tokens for a seat that learns;
  970 to 1,010 for one that does not) then passes OpenAI's 1,024-token minimum by itself, so a cut costs only
  the game so far, and the window is sized for the model (the newest messages of the round, 200 to 500 tokens)
  rather than for that minimum, each of its tokens being read three times a request. A profile with
  `standing` False keeps each task whole at its end (prompts/baseline/cache/).
- `paper`: only the answer's prompt holds the recent messages, at least `recent` (default RECENT) and up to
  RECENT_STEP - 1 more (the start moves RECENT_STEP messages at a time, so a server's prompt cache, llama.cpp,
  resumes the answers between moves), as the paper's baseline did.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from avalon_agents.agents.base import AgentBase
from avalon_agents.agents.context import SeatContext
from avalon_agents.core.actions import ActionRequest, Reply, RequestKind
from avalon_agents.core.events import GameEvent, GameResult, GameStarted, RoleAssigned
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role, Seat, Team, seat_name
from avalon_agents.llm.health import LLMCallFailed
from avalon_agents.llm.stable import stable_message
from avalon_agents.llm.tokens import count_tokens, newest_that_fit
from avalon_agents.modules.experience import LOG_TOKENS, role_map
from avalon_agents.modules.sections import how_you_work
from avalon_agents.narrate import (
    announce,
    check_layout,
    decision_first,
    private_section,
    role_card,
    system_prompt,
    told_privately,
)
from avalon_agents.prices import Cost
from avalon_agents.prompting import template
from avalon_agents.records.trace import Purpose
from avalon_agents.stores.book import Experience, experience_without_seats, name_roles
from avalon_agents.stores.similarity import ranked

RECENT = 10  # the paper layout: freshest messages in the answer's prompt (at least); option `recent`
RECENT_STEP = 5  # the paper layout: the window's start moves this many messages at a time
INFORMATIVE = 5  # top-scored messages in every answer's prompt; option `informative`
WINDOW_KEEP = 200  # the cache layout: a cut keeps the newest public messages in this many tokens (or `recent`) ...
WINDOW_SLACK = 300  # ... and the next cut comes when the game so far holds more than this many tokens before them
STEPS = ("questions", "reflect", "suggest", "respond")
"""Its steps of a request, in order: the cache layout's system message says each one's standing instruction once
(prompts/baseline/standing/) when its profile keeps them there (Profile.standing)."""
LEARNING_STEPS = ("suggestions", "strategy")
"""Its steps at game end when it learns (its strategy update), said in the system message too."""
EVIDENCE = 3  # messages retrieved per question
EXTRA_QUESTIONS = 2  # questions the model proposes per answer
REFLECTION_WORDS = 80
SUGGESTION_WORDS = 60
ANSWER_MARK = "my concise talking content:"
THOUGHT_MARK = "my step-by-step thought process:"

INFORMATIVENESS = [  # (pattern, score): a message's score is the sum of the rules it matches
    (re.compile(r"\bI(?: am|'m) (?:Merlin|Percival|Morgana|the Assassin|an? Loyal Servant|loyal|good|evil)\b",
                re.IGNORECASE), 5),  # an identity claim
    (re.compile(r"\bQuest \d+ failed\b"), 5),
    (re.compile(r"^Votes on\b"), 4),
    (re.compile(r"\b(?:evil|Morgana|Assassin|Merlin|suspicious|suspect|lying|liar|traitor)\b", re.IGNORECASE), 3),
    (re.compile(r"\b(?:trust|believe|loyal)\b", re.IGNORECASE), 1),
    (re.compile(r"\bproposes this team\b"), 2),
    (re.compile(r"\bQuest \d+ succeeded\b"), 2),
]

FIXED_QUESTIONS = {
    Team.GOOD: ("Which players are most likely on the evil side, and why?",
                "Which players were on the teams of failed quests?",
                "Who seems to know more than they should, and could be Merlin?"),
    Team.EVIL: ("Which good players suspect my teammates or me?",
                "Who seems to know more than they should, and could be Merlin?",
                "Which team could I join so that a quest fails without exposing me?"),
}


def informativeness(text: str) -> int:
    return sum(score for pattern, score in INFORMATIVENESS if pattern.search(text))


def recent_start(count: int, recent: int = RECENT, step: int = RECENT_STEP) -> int:
    """Where the window of recent messages starts among `count`: the last `recent`, and up to `step` - 1
    before them, so that the start moves only every `step` messages."""
    return max(0, (count - recent) // step * step)


def concise(text: str) -> str:
    """The part of a chain-of-thought answer the host should hear."""
    lower = text.lower()
    at = lower.rfind(ANSWER_MARK)
    if at < 0:
        return text.strip()
    start = at + len(ANSWER_MARK)
    end = lower.find(THOUGHT_MARK, start)  # the small profile's form: the answer first, the thinking after it
    return text[start:end if end >= 0 else None].strip()


@dataclass
class Message:
    text: str
    quest: int
    score: int
    public: bool = True


class BaselineAgent(AgentBase):
    """The paper's baseline. `context.pool` makes the experience pool (an ExperienceStore: its turns, and the
    strategy and suggestions learned for each role); None learns nothing and plays with its role card's
    strategy. `context.end_learning` False: nothing of this game is added to the pool (no later game would
    read it). The options are the module docstring's."""

    needs_llm = True
    expected = Cost(283.6, 470_620, 10_044, 373_658)
    """Calls and tokens per game of six seats of this kind (`avalon bench cost --seats baseline --games 5`,
    2026-11-28, the strategy update between games included; the fourth figure: the input a prompt cache serves),
    what `avalon run --check` counts."""
    learning = Cost(12.0, 19_103, 439, 16_103)
    """The part of `expected` spent at game end (the suggestions and the strategy update: `baseline suggestions`
    and `baseline strategy` in the same measurement), which a series' last game does not spend."""

    def __init__(self, *, seat: Seat, seed: int = 0, context: SeatContext, embeddings: str = "local:minilm",
                 recent: int | None = None, informative: int = INFORMATIVE, respond_temperature: float | None = None,
                 improve_strategy: bool = True, prompt_layout: str = "cache") -> None:
        self.seat = seat
        self.embeddings = embeddings
        # a bad value fails here, in one line (a bad embeddings spec: ModelSpecError)
        self.check_options({"embeddings": embeddings, "recent": recent, "informative": informative,
                            "respond_temperature": respond_temperature, "improve_strategy": improve_strategy,
                            "prompt_layout": prompt_layout})
        self.layout = prompt_layout
        self.recent, self.informative, self.improve_strategy = recent, informative, improve_strategy
        self.end_learning = context.end_learning
        self.llm = context.llm
        # the final answer's client: the paper's code answered at temperature 0, its other steps at the agent's
        self.respond_llm = self.llm if respond_temperature is None else context.clients.get(
            context.settings.model_copy(update={"temperature": float(respond_temperature)}))
        self.cards = context.cards
        self.shape = self.llm.settings.shape  # its model's profile (avalon_agents.profiles)
        self.pool: Any = context.pool() if context.pool is not None else None
        self.learned = Experience()  # what earlier games taught its role: the strategy it plays with
        self.rules: RuleSet | None = None
        self.role: Role | None = None
        self.messages: list[Message] = []
        # what only it saw (narrate.told_privately): in every prompt, whatever the windows hold
        self.private: list[str] = []
        self.vectors = np.zeros((0, 0), dtype=np.float32)
        self.turns: list[tuple[str, str]] = []  # (reflection, answer) of this game, for the pool
        self.reflection = ""
        self.suggestion: tuple[int, str] | None = None  # (round, text)
        self._last: ActionRequest | None = None
        self.start = 0  # the cache layout: the first public message of the game so far
        self._steps: tuple[Role | None, str] = (None, "")  # `steps`, for the role it was written for
        self._asked = ""  # the cache layout: the request's header, after the game so far and the private facts

    # ------------------------------------------------------------------ protocol

    async def observe(self, events: Sequence[GameEvent]) -> None:
        for event in events:
            if isinstance(event, GameStarted):
                self.rules = event.rules
            elif isinstance(event, RoleAssigned):
                self.role = event.role
                if self.pool is not None:
                    self.learned = self.pool.get(event.role)
            elif (text := announce(event, self.rules)) is not None:
                public = not told_privately(event)
                self.messages.append(Message(text, event.quest, informativeness(text), public))
                if not public:
                    self.private.append(text)

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        if request is not self._last:  # a re-ask only repeats the final answer
            self._last = request
            self._move_window()
            self._asked = template("baseline/cache/asked").render(name=seat_name(self.seat), role=self.role.value,
                                                                   instruction=instruction)
            questions = await self._questions(instruction)
            self.reflection = await self._reflect(questions, request)
            await self._suggest(request)
        plain = instruction
        if self.shape.decision_first and request.kind is not RequestKind.SPEAK:
            instruction = decision_first(instruction, request.kind.value)
        found, asked = self._respond_prompt(instruction, first=instruction[len(plain):].strip())
        text = await self._call(asked, "respond", request, prompt=found)
        answer = concise(text or "")
        self.turns.append((self.reflection, answer))
        return Reply(text=answer, prompt=self.system() + "\n\n" + asked, profile=self.shape.name)

    async def on_game_end(self, result: GameResult) -> None:
        if self.pool is None or self.role is None or not self.end_learning:
            return
        score = 1.0 if result.winner is self.role.side else -1.0
        learned = await self._improve_strategy(result) if self.improve_strategy else None

        def store() -> None:  # embeddings: off the event loop, so other seats' calls go on meanwhile
            for reflection, answer in self.turns:
                if reflection and answer:
                    self.pool.add("baseline_turn", name_roles(reflection, result.roles), role=self.role,
                                  won=score > 0, seat=self.seat,
                                  extra={"answer": name_roles(answer, result.roles), "score": score})
            if learned is not None:  # seats hold other roles in the next game
                self.pool.put(self.role, experience_without_seats(learned, result.roles), result, self.seat)

        await asyncio.to_thread(store)

    # ------------------------------------------------------------------ steps

    @property
    def strategy(self) -> str:
        """The strategy it plays with: what earlier games taught its role, else its role card's."""
        return self.learned.strategy or role_card(self.role, self.cards)["strategy"]

    @property
    def steps(self) -> str:
        """How it works: its steps' standing instructions (prompts/baseline/standing/, with what they hold for the
        whole game: the questions its side always considers, the word limits), at the end of its system message in
        the cache layout when its profile keeps them there (Profile.standing); each prompt then ends with a short
        "Now:" line naming its step (prompts/baseline/steps/). "": each prompt carries its whole task."""
        if self.layout != "cache" or not self.shape.standing or self.role is None:
            return ""
        if self._steps[0] is not self.role:
            learns = self.pool is not None and self.end_learning and self.improve_strategy
            steps = [f"{step}_small" if step == "respond" and self.shape.decision_first else step for step in
                     (STEPS + LEARNING_STEPS if learns else STEPS)]  # the small profile's answer comes first
            self._steps = (self.role, how_you_work(self._standing(step) for step in steps))
        return self._steps[1]

    def _standing(self, step: str) -> str:
        """One step's standing instruction, filled with what holds for the whole game."""
        found = template(f"baseline/standing/{step}")
        values = {"fixed": " ".join(FIXED_QUESTIONS[self.role.side]), "count": EXTRA_QUESTIONS,
                  "max_words": {"reflect": REFLECTION_WORDS, "suggest": SUGGESTION_WORDS}.get(step)}
        return found.render(**{k: v for k, v in values.items() if k in found.variables})

    def system(self) -> str:
        """The same system prompt as every LLM seat's: the rules of the active preset and the role card (the
        paper gave both agents the same rules text), with the strategy earlier games taught its role; in the cache
        layout, then how it works (its steps' standing instructions: `steps`)."""
        system = system_prompt(self.rules, self.seat, self.role, strategy=self.learned.strategy, cards=self.cards,
                               rules_text=self.shape.rules)
        return system + "\n\n" + self.steps if self.steps else system

    async def _call(self, text: str, step: str, request: ActionRequest | None = None, *, prompt: str | None = None,
                    quest: int | None = None) -> str | None:
        """One call of a step (questions, reflect, suggest, respond, and at game end suggestions, strategy), with
        the prompt file of that name (`prompt`: another one). The final answer goes to its own client."""
        from langchain_core.messages import HumanMessage, SystemMessage

        found = template(prompt or f"baseline/{step}")  # its id and hash go to the trace
        llm = self.respond_llm if step == "respond" else self.llm
        user = stable_message(text, self.game_so_far()) if self.layout == "cache" else HumanMessage(text)
        try:
            return await llm.call([SystemMessage(self.system()), user],
                                  purpose=Purpose(stage="agent", name="baseline", part=step,
                                                  request=request.kind.value if request else None),
                                  prompt_id=found.id, prompt_hash=found.hash, seat=self.seat,
                                  quest=request.quest if request else quest, attempt=request.attempt if request else 0)
        except LLMCallFailed:
            return None

    def _game_log(self) -> str:
        """The game as it saw it, for learning at game end: its last reflection (its own digest, as the cognitive
        agent's summary is), then its most recent messages within the experience module's budget."""
        lines = [m.text for m in self.messages]
        recent = "\n".join(lines[newest_that_fit(lines, LOG_TOKENS):])
        reflection = f"Your last reflection: {self.reflection}" if self.reflection else ""
        return "\n".join(part for part in (reflection, recent) if part) or "(nothing recorded)"

    async def _improve_strategy(self, result: GameResult) -> Experience | None:
        """Self-role strategy learning as the cognitive agent's experience module does it (the paper's 4.8, IS):
        three suggestions for its role from the game, then the improved strategy; None if no suggestion came."""
        name, role = seat_name(self.seat), self.role.value
        won = result.winner is self.role.side
        self._move_window()
        quest = len(result.quests)
        prompts = ("baseline/suggestions", "baseline/strategy") if self.steps else (
            "modules/experience_suggestions", "modules/experience_strategy")
        found, text = self._prompt(
            prompts[0], name=name, role=role, roles=role_map(result), log=self._game_log(),
            outcome=f"{result.winner.value} won ({result.reason.value}); {name} {'won' if won else 'lost'}",
            goal=role_card(self.role, self.cards)["goal"], strategy=self.strategy,
            previous=self.learned.suggestions or "(none)")
        suggestions = await self._call(text, "suggestions", prompt=found, quest=quest)
        if not suggestions:
            return None
        found, text = self._prompt(prompts[1], name=name, role=role, strategy=self.strategy,
                                   suggestions=suggestions)
        improved = await self._call(text, "strategy", prompt=found, quest=quest)
        return Experience(strategy=improved or self.learned.strategy, suggestions=suggestions)

    async def _questions(self, instruction: str) -> list[str]:
        fixed = list(FIXED_QUESTIONS[self.role.side])
        request = self._last
        found, text = self._prompt("baseline/questions", name=seat_name(self.seat), role=self.role.value,
                                   instruction=instruction, fixed="\n".join(fixed), count=EXTRA_QUESTIONS)
        reply = await self._call(text, "questions", request, prompt=found) or ""
        extra = [line.strip(" -*0123456789.") for line in reply.splitlines() if line.strip().endswith("?")]
        return fixed + extra[:EXTRA_QUESTIONS]

    @staticmethod
    def check_options(options: dict[str, Any]) -> None:
        """Raise ValueError (one line) naming an option whose value it cannot play with (an `embeddings` spec
        that cannot name an embedder: ModelSpecError)."""
        for key, least in (("recent", 1), ("informative", 0)):
            value = options.get(key, least)
            if key == "recent" and value is None:  # the layout's own window
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{key}: a whole number of messages, at least {least} (got {value!r})")
        temperature = options.get("respond_temperature")
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float)
                                        or not 0 <= temperature <= 2):
            raise ValueError(f"respond_temperature: a number from 0 to 2, or null for the agent's own "
                             f"(got {temperature!r})")
        check_layout(options.get("prompt_layout", "cache"))
        if not isinstance(options.get("improve_strategy", True), bool):
            raise ValueError(f"improve_strategy: true or false (got {options['improve_strategy']!r})")
        if "embeddings" in options:
            from avalon_agents.stores.embeddings import check_embeddings

            check_embeddings(options["embeddings"])

    def _embedder(self) -> Any:
        from avalon_agents.stores.embeddings import embedder  # the encoder loads on first use

        return embedder(self.embeddings)

    async def _retrieve(self, questions: list[str], messages: list[Message] | None = None) -> list[list[str]]:
        """For each question, the history messages (`messages`, default: all so far) most similar to it."""
        messages = list(self.messages if messages is None else messages)
        return [[messages[i].text for i in found] for found in await self._related(questions, messages)]

    async def _related(self, questions: list[str], messages: list[Message]) -> list[list[int]]:
        """For each question, the indices of the `messages` most similar to it (cosine similarity of the
        embedder's vectors, the same on every machine: stores.similarity; an in-process encoder runs on a worker
        thread, so the loop plays other seats meanwhile)."""
        model = self._embedder()
        if len(self.vectors) < len(messages):
            new = await model.aencode([m.text for m in messages[len(self.vectors):]])
            self.vectors = np.vstack([self.vectors, new]) if len(self.vectors) else new
        if not messages:
            return [[] for _ in questions]
        texts = [m.text for m in messages]
        return [[i for i, _ in ranked(texts, self.vectors[:len(messages)], q)[:EVIDENCE]]
                for q in await model.aencode(questions)]

    def _lines(self, indices: Sequence[int], shown: set[int]) -> list[str]:
        """The messages at `indices` of self.messages as lines of a step's material. The `cache` layout cites a
        public message the prompt already holds by its number (the game so far's and those in `shown`, which
        the quoted ones join), the text of the others with their number; the `paper` layout quotes each."""
        if self.layout != "cache":
            return [self.messages[i].text for i in indices]
        numbers = self._numbers()
        lines = []
        for i in indices:
            number = numbers.get(i)
            if number is None:  # a private fact (in the private section too; a line, it is quoted)
                lines.append(self.messages[i].text)
            elif number > self.start or number in shown:
                lines.append(f"[{number}]")
            else:
                shown.add(number)
                lines.append(f"[{number}] {self.messages[i].text}")
        return lines

    def _numbers(self) -> dict[int, int]:
        """The number (from 1) of each public message, by its index in self.messages."""
        public = [i for i, m in enumerate(self.messages) if m.public]
        return {i: n for n, i in enumerate(public, 1)}

    async def _reflect(self, questions: list[str], request: ActionRequest) -> str:
        related = await self._related(questions, list(self.messages))
        shown: set[int] = set()
        parts = [f"Question: {question}\nRelated messages:\n" + ("\n".join(self._lines(found, shown)) or "(none yet)")
                 for question, found in zip(questions, related)]
        found, text = self._prompt("baseline/reflect", name=seat_name(self.seat), role=self.role.value,
                                   evidence="\n\n".join(parts), max_words=REFLECTION_WORDS)
        reply = await self._call(text, "reflect", request, prompt=found) or ""
        at = reply.lower().rfind("reflection:")
        return (reply[at + len("reflection:"):] if at >= 0 else reply).strip()

    async def _suggest(self, request: ActionRequest) -> None:
        if self.pool is None or not self.reflection or (self.suggestion and self.suggestion[0] == request.quest):
            return
        found = await asyncio.to_thread(self.pool.query, self.reflection, n=5, kind="baseline_turn",
                                        role=self.role.value)
        best = max(found, key=lambda f: f[1]["score"], default=None)
        # the worst-scored answer that differs from the best one in both score and text
        worse = [f for f in found if best is not None and f[1]["score"] < best[1]["score"]
                 and f[1]["answer"] != best[1]["answer"]]
        worst = min(worse, key=lambda f: f[1]["score"], default=None)
        if worst is None:
            return  # nothing to contrast: no two different answers found that ended differently
        found, text = self._prompt(
            "baseline/suggest", name=seat_name(self.seat), role=self.role.value, reflection=self.reflection,
            good=best[1]["answer"], good_score=best[1]["score"], bad=worst[1]["answer"],
            bad_score=worst[1]["score"], max_words=SUGGESTION_WORDS)
        reply = await self._call(text, "suggest", request, prompt=found)
        if reply:
            self.suggestion = (request.quest, reply.strip())

    def _respond_prompt(self, instruction: str, first: str = "") -> tuple[str, str]:
        """The answer's prompt; `first`, the small profile's line asking for the decision first (the `cache`
        layout asks the host's question before the step's material, and this line with the task)."""
        recent = [m.text for m in self.messages[recent_start(len(self.messages), self.recent or RECENT):]]
        ranked = sorted(range(len(self.messages)), key=lambda i: (-self.messages[i].score, -i))
        informative = self._lines([i for i in ranked[:self.informative] if self.messages[i].score > 0], set())
        suggestion = f"Suggestion from earlier games: {self.suggestion[1]}\n" if self.suggestion else ""
        # the small profile asks for the concise answer first, so that a short cap cuts the thinking, not it
        return self._prompt(
            "baseline/respond_small" if self.shape.decision_first else "baseline/respond",
            recent="\n".join(recent) or "(none yet)", informative="\n".join(informative) or "(none yet)",
            reflection=self.reflection or "(none)", suggestion=suggestion, instruction=instruction,
            first=f"{first}\n" if first else "")

    def _move_window(self) -> None:
        """The `cache` layout, at a request's start (and at game end): a cut starts the game so far at the newest
        public messages in WINDOW_KEEP tokens (at least one; at least `recent` if that option is set); it comes
        when the game so far holds more than WINDOW_SLACK tokens before where a cut would start it. Between two
        cuts each prompt's game so far extends the one before, so a prompt cache serves it again."""
        public = [m.text for m in self.messages if m.public]
        cut = min(max(0, len(public) - 1), newest_that_fit(public, WINDOW_KEEP),
                  max(0, len(public) - (self.recent or 0)))
        if sum(count_tokens(t) for t in public[self.start:cut]) > WINDOW_SLACK:
            self.start = cut

    def game_so_far(self) -> str:
        """The `cache` layout's stable part of every prompt: the public messages from `start` on, numbered (a
        step's material cites them by number)."""
        public = [m.text for m in self.messages if m.public]
        if not public:
            return "The game so far: nothing yet."
        lines = "\n".join(f"[{n}] {text}" for n, text in enumerate(public[self.start:], self.start + 1))
        head = "The game so far:" if not self.start else f"The game so far (from message {self.start + 1} on):"
        return f"{head}\n{lines}"

    def _prompt(self, prompt_id: str, /, **values: object) -> tuple[str, str]:
        """(template id, text) of the prompt `prompt_id` ("baseline/reflect", "modules/experience_strategy", ...) in the
        seat's layout: `cache`, after `game_so_far()`, the private section and (a request's steps) the host's
        question (at game end its last reflection), the step's short "Now:" version (prompts/baseline/steps/) when
        the system message holds its standing instruction (`steps`), else the prompts/<folder>/cache/ version with
        the whole task; `paper`, the paper's prompt after the section of what the seat privately knows."""
        if self.layout == "cache":
            folder, _, leaf = prompt_id.partition("/")
            found = template(f"baseline/steps/{leaf}" if self.steps and folder == "baseline" else
                             f"{folder}/cache/{leaf}")
            after = self._asked if leaf in STEPS or leaf == "respond_small" else (
                f"Your last reflection: {self.reflection}" if self.reflection else "")
            context = "\n\n".join(p for p in (self.game_so_far(), private_section(self.private), after) if p)
            return found.id, found.render(context=context, **{k: v for k, v in values.items() if k in found.variables})
        found = template(prompt_id)
        text = found.render(**{k: v for k, v in values.items() if k in found.variables})
        return found.id, "\n\n".join(p for p in (private_section(self.private), text) if p)


__all__ = ["BaselineAgent", "concise", "informativeness", "recent_start"]
