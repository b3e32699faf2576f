"""The recorded runs a config replays: the RUN_DIR of every model whose provider answers from a recorded run
(`Provider.replays`: `replay:RUN_DIR`), in a config file as written (its plugins are loaded before the file is
read: cli.base.model_options) or in a study's config as its run record keeps it (run.json's `replays`:
experiments.scheduler)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from avalon_agents.errors import parse_yaml


def replayed_runs(path: str | Path) -> list[Path]:
    """The RUN_DIRs of the replaying models a config file names (`replay_sources` of the file as written): their
    plugins are loaded before the config is read (cli.base.model_options), as --model replay:RUN_DIR's are. None for
    a file that cannot be read (reading it says why)."""
    try:
        raw, _ = parse_yaml(Path(path).read_text(), str(path))
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    return replay_sources(raw)


def replay_sources(config: Any) -> list[Path]:
    """The RUN_DIRs of the models in `config` (a config file's mapping, or a study's config as its run record keeps
    it) whose provider answers from a recorded run (`Provider.replays`: `replay:RUN_DIR`), as a `model:` or a
    model's `spec:` at any depth, each once, in order."""
    from avalon_agents.llm.registry import provider_of_spec

    found: list[Path] = []

    def visit(value: Any, key: Any = None) -> None:
        if isinstance(value, str) and key in ("model", "spec") and ":" in value:
            if provider_of_spec(value).replays:
                found.append(Path(value.partition(":")[2]))
        elif isinstance(value, dict):
            for k, v in value.items():
                visit(v, k)
        elif isinstance(value, list):
            for v in value:
                visit(v, key)

    visit(config)
    return list(dict.fromkeys(found))
