"""The README's own-module example, run as written: the subclass registers, YAML selects it, a game uses it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from avalon_agents.core import make_rules
from avalon_agents.host.play import play_one
from avalon_agents.modules import MODULES, load_agent_config
from tests.helpers import scripted_setup

README = Path(__file__).resolve().parents[2] / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.DOTALL)


def test_readme_module_example_runs_from_yaml(tmp_path):
    example = next(b for b in blocks("python") if "register_module" in b)
    assert len(example.strip().splitlines()) <= 16
    exec(compile(example, "README example", "exec"), {"__name__": "readme_example"})
    assert "failed_teams" in MODULES

    config_file = tmp_path / "agent.yaml"
    config_file.write_text(next(b for b in blocks("yaml") if "use: failed_teams" in b))
    config = load_agent_config(config_file)
    setup = scripted_setup(agent_config=config, extractor=None)
    host = asyncio.run(play_one(make_rules(), ["cognitive"] * 6, seed=5, setups=setup))
    records = host.tracer.records
    analyses = [r for r in records if r.type == "module" and r.slot == "analysis"]
    assert analyses and all(r.module == "failed_teams" for r in analyses)
    assert all(r.text.startswith("Most often on failed quests: ") for r in analyses)
    assert not any(r.type == "llm_call" and r.name == "analysis" for r in records)
    late = [r for r in records if r.type == "llm_call" and r.name == "action+response" and r.quest > 1]
    assert any("Most often on failed quests" in r.messages[-1].content for r in late)


def test_readme_agent_config_example_is_valid(tmp_path):
    example = next(b for b in blocks("yaml") if "my_agent.yaml" in b)
    path = tmp_path / "my_agent.yaml"
    path.write_text(example)
    config = load_agent_config(path)
    assert config.plan.enabled is False and config.options_of("analysis").scope == "adversaries"
