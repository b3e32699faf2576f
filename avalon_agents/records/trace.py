"""Typed trace records: what a game's trace.jsonl holds, beside its events.

Events are the game; trace records are how the game was played (LLM calls, module outputs, extractions,
belief probes) or what people said about it (the labels of imported human games), and never reach an agent.
Like the events they are one union on a literal `type` tag, so a record is built, written and read in one
shape everywhere: the LLM client, the extractor, the cognitive agent, the probe and the importers write them;
the runner, `avalon bench cost` and the analysis read them. Each type declares the rows it gives the analysis
tables beside its fields (`rows`, core/rows.py); a type in the union without is refused at import. This module
imports only pydantic and core/rows, so loading a run into pandas needs no model client.

What an LLM call was for is structured, never a string to split: `stage` (who called: the agent itself, one
of its modules, the extractor, a belief probe, an analysis judge), `name` (which step: the module's name, the
agent's step, the judge's name), `part` (a sub-step, e.g. experience learning's `suggestions`) and `request`
(the request kind the call served, if any).
"""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypeVar, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from avalon_agents.core.rows import GameRows, Rows, check_declared

Stage = Literal["agent", "module", "extract", "probe", "judge", "other"]
Method = Literal["typed", "json", "rule", "llm", "fallback"]
"""How an extraction read its action: the agent's typed action, its constrained JSON answer, the rule parse,
the LLM extractor, or the paper's fallback."""
Outcome = Literal["ok", "retried", "failed"]
TokensSource = Literal["provider", "tiktoken", "none"]
R = TypeVar("R", bound="Record")


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Purpose(Record):
    """What an LLM call is for (see the module docstring)."""

    stage: Stage
    name: str
    part: str | None = None
    request: str | None = None

    @property
    def label(self) -> str:
        """A short name for tables: the module's or step's name, with the agent's sub-step where it has one
        ("summary", "baseline respond", "experience")."""
        if self.stage == "agent" and self.part:
            return f"{self.name} {self.part}"
        return self.name


class Message(Record):
    role: str
    content: str


class LLMCall(Record):
    """One LLM call, with the settings actually used (model spec, temperature, max tokens, ...)."""

    type: Literal["llm_call"] = "llm_call"
    seat: int | None = None
    stage: Stage
    name: str
    part: str | None = None
    request: str | None = None
    quest: int | None = None
    attempt: int | None = None
    step: int | None = None
    """The host's step the call served (a round's preparation, one batch of requests, a probe, the game end)."""
    prompt_id: str
    prompt_hash: str
    settings: dict[str, Any] = Field(default_factory=dict)
    constrained: bool = False
    messages: tuple[Message, ...] = ()
    reply: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    """Of the input tokens, those the provider served from its prompt cache (priced as cached input)."""
    tokens_source: TokensSource = "none"
    latency_s: float = 0.0
    attempts: int = 1
    throttled: int = 0
    """Answers 429 (rate limited) the call waited out; not attempts, not failures."""
    waited_s: float = 0.0
    """Seconds the call waited for its turn at the endpoint's pacer (limits and 429s)."""
    request_hash: str = ""
    """The request's identity (its messages and the schema asked for: llm.replay.request_hash): a resumed game
    and a `replay:` run answer a request from the record with the same hash."""
    replayed: bool = False
    """Answered from a recording (a resumed game's earlier attempt, a `replay:` run), not by the model now."""
    cut_chars: int = 0
    """Characters cut off an answer longer than its cap (max_tokens x 16: a server that ignored max_tokens)."""
    outcome: Outcome = "ok"
    error: str | None = None
    about: dict[str, Any] = Field(default_factory=dict)
    """What the call is about beyond the game's seat and quest (a judge's game, speech and speaker)."""

    @property
    def purpose(self) -> Purpose:
        return Purpose(stage=self.stage, name=self.name, part=self.part, request=self.request)

    @property
    def spec(self) -> str | None:
        return self.settings.get("spec")

    def rows(self, game: GameRows) -> Rows:
        """Its calls row, without its messages and settings: the purpose's label as `module`, the model's `spec`."""
        record = self.model_dump(exclude={"messages", "type", "settings"})
        record.update(module=self.purpose.label, spec=self.spec)
        return {"calls": [game.seat_row(self.seat, record)]}


class ModuleOutput(Record):
    """What one of the cognitive agent's modules wrote into its slot."""

    type: Literal["module"] = "module"
    seat: int
    module: str
    slot: str
    quest: int | None = None
    attempt: int | None = None
    text: Any = None

    def rows(self, game: GameRows) -> Rows:
        return {"modules": [game.seat_row(self.seat, self.model_dump(exclude={"type"}))]}


class Extraction(Record):
    """How one decision answer became a legal action. `valid`: the first answer gave a legal action (the
    paper's Valid Response Rate, eq. 8, counts these)."""

    type: Literal["extraction"] = "extraction"
    seat: int
    kind: str
    quest: int
    attempt: int
    method: Method
    valid: bool
    answers: int = 1
    action: Any = None
    texts: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def rows(self, game: GameRows) -> Rows:
        return {"extractions": [game.seat_row(self.seat, _renamed(self, "request"))]}


class SpeechCheck(Record):
    """How one speech reached the table (the extractor's speech guard): how many consecutive words of its
    prompt the first answer copied (`copied`: avalon_agents.profiles.ECHO_WORDS or more is an echo), whether it
    was asked again for that and whether the words it still copied were trimmed, whether nothing of its own was left
    and it said prompts/host/no_speech.txt instead (`placeholder`), its words as spoken, whether it was cut to the
    profile's word cap, and whether it ends mid-sentence."""

    type: Literal["speech_check"] = "speech_check"
    seat: int
    quest: int
    attempt: int
    profile: str = "standard"
    copied: int = 0
    echo: bool = False
    reasked: bool = False
    trimmed: bool = False
    placeholder: bool = False
    cut: bool = False
    words: int = 0
    mid_sentence: bool = False

    def rows(self, game: GameRows) -> Rows:
        return {"speech_checks": [game.seat_row(self.seat, self.model_dump(exclude={"type"}))]}


SeatProblem = Literal["bad_json", "unknown_id", "illegal", "timeout", "crash", "fallback"]


class SeatFault(Record):
    """A protocol error of a program playing a seat (agents.external, docs/seats.md): a line that is no JSON
    object (`bad_json`), an answer to no open request (`unknown_id`), an answer no legal action could be read
    from (`illegal`, asked again with the reason), no answer in time (`timeout`), a program that ended or whose
    pipes broke, or a server that refused, reset or answered an error status (`crash`); and each decision its
    fallback made for it (`fallback`: after too many illegal answers, or for the rest of a game after a timeout
    or crash; and for a person at a web table who gave no answer in time, agents.human). `kind` is the request's
    kind (None outside a request)."""

    type: Literal["seat_fault"] = "seat_fault"
    seat: int
    problem: SeatProblem
    detail: str = ""
    kind: str | None = None
    quest: int | None = None
    attempt: int | None = None

    def rows(self, game: GameRows) -> Rows:
        return {"seat_faults": [game.seat_row(self.seat, _renamed(self, "request"))]}


class Probe(Record):
    """A belief probe's answer (see host.probe): never an event, never shown to an agent."""

    type: Literal["probe"] = "probe"
    seat: int
    quest: int
    merlin_guess: int | None = None
    p_evil: dict[str, float] = Field(default_factory=dict)
    valid: bool = False
    raw: str | None = None

    def rows(self, game: GameRows) -> Rows:
        """Its probes row, with the truth: `merlin_seat` and `evil_seats`."""
        return {"probes": [game.seat_row(self.seat, {**self.model_dump(exclude={"type"}), "merlin_seat": game.merlin,
                                                     "evil_seats": game.evil})]}


AnnotationKind = Literal["persuasion", "deception", "belief"]


class Annotation(Record):
    """A human label beside the events of an imported game (never an event, never shown to an agent).

    `persuasion` and `deception` label one chat message: `seq` is the speech event it is part of, `part` its
    place among the messages that speech joins (0-based), `message` the dataset's message id and `text` the
    message itself. `belief` is a role a player stated they believed `about_seat` holds; `seq` is the last
    event at the point they stated it. `label` is the dataset's own word ("logical deduction", "commission",
    "merlin"); `source` names the dataset.
    """

    type: Literal["annotation"] = "annotation"
    kind: AnnotationKind
    label: str
    seat: int
    about_seat: int | None = None
    seq: int
    quest: int
    attempt: int
    part: int | None = None
    message: str | None = None
    text: str | None = None
    source: str

    def rows(self, game: GameRows) -> Rows:
        """Its annotations row: its kind as `annotation`, the true role of the seat a belief is about."""
        record = _renamed(self, "annotation")
        record["about_role"] = game.column(self.about_seat, "role")
        return {"annotations": [game.seat_row(self.seat, record)]}


def _renamed(record: Record, kind_as: str) -> dict[str, Any]:
    """A record's fields but its type, its `kind` under the name `kind_as` (in a table, `kind` is the seat's agent
    kind)."""
    fields = record.model_dump(exclude={"type"})
    fields[kind_as] = fields.pop("kind")
    return fields


TraceRecord = Annotated[Union[LLMCall, ModuleOutput, Extraction, SpeechCheck, SeatFault, Probe, Annotation],
                        Field(discriminator="type")]
TRACE_ADAPTER: TypeAdapter[TraceRecord] = TypeAdapter(TraceRecord)
check_declared(get_args(get_args(TraceRecord)[0]), "trace record")


def to_line(record: Record) -> str:
    """One JSONL line."""
    return record.model_dump_json()


def from_line(line: str) -> TraceRecord:
    return TRACE_ADAPTER.validate_json(line)


def read_lines(path: Path) -> list[TraceRecord]:
    """The records of a JSONL file (empty if it does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    with open(path) as f:
        return [from_line(line) for line in f if line.strip()]


class Tracer(Protocol):
    """Where the trace records of one game go (the game's recorder, or memory). `step` is the host's current
    step: the host sets it, and the LLM client stamps it on each call record. `game` is the game's id, unique
    across runs (what program seats are told, agents.protocol): a recorded game's run id and path in its run
    (records.run_record.game_id), else `<run id>/memory-N`."""

    step: int | None
    game: str

    def trace(self, record: Record) -> None: ...


_MEMORY_GAMES = itertools.count(1)
_MEMORY_RUN = uuid.uuid4().hex[:12]  # this process's games kept in memory are one run (never resumed)


def memory_game() -> str:
    """The id of a game kept in memory: `<run id>/memory-N`, the run this process (a new random id each process,
    as records.run_record.new_run_id), N counted in it: unique across runs."""
    return f"{_MEMORY_RUN}/memory-{next(_MEMORY_GAMES)}"


class MemoryTracer:
    """Keeps trace records in a list (tests, throwaway runs)."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.step: int | None = None
        self.game = memory_game()
        self.recording: Any = None  # answers already paid for (llm.replay.Recording), consulted before any call

    def trace(self, record: Record) -> None:
        self.records.append(record)
