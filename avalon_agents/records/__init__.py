"""Run directories: layout, the recorder (the one writer of a game directory), the reader (records.reader: the one
reader of a run), atomic writers."""

from avalon_agents.records.reader import Game, Health, Progress, Run, Tail, UnknownGame, open_run
from avalon_agents.records.recorder import GameRecorder
from avalon_agents.records.run_dir import (
    LAYOUT,
    LayoutError,
    is_done,
    read_events,
    read_result,
    read_trace,
    write_json_atomic,
)
from avalon_agents.records.trace import (
    Annotation,
    Extraction,
    LLMCall,
    MemoryTracer,
    ModuleOutput,
    Probe,
    Purpose,
    Record,
    SpeechCheck,
    Tracer,
    TraceRecord,
)
from avalon_agents.records.usage import critical_path, usage

__all__ = [
    "LAYOUT",
    "Annotation",
    "LayoutError",
    "Extraction",
    "Game",
    "Health",
    "Progress",
    "Run",
    "Tail",
    "UnknownGame",
    "open_run",
    "SpeechCheck",
    "GameRecorder",
    "LLMCall",
    "MemoryTracer",
    "ModuleOutput",
    "Probe",
    "Purpose",
    "Record",
    "TraceRecord",
    "Tracer",
    "critical_path",
    "is_done",
    "read_events",
    "read_result",
    "read_trace",
    "usage",
    "write_json_atomic",
]
