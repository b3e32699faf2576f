"""Model settings: one pydantic model laid over field by field (run -> agent -> module), the provider registry
(built-ins, plugins, anything else through init_chat_model), and the CLI options that set them."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.core import make_rules
from avalon_agents.host.play import play_one
from avalon_agents.llm import ClientPool, ModelSettings, ModelSpecError, make_model
from avalon_agents.modules import AgentConfig
from avalon_agents.records import LLMCall, read_trace
from avalon_agents.records.run_dir import META
from tests.helpers import scripted_setup


def test_settings_are_laid_over_field_by_field():
    agent = ModelSettings(spec="openai:gpt-4o-mini", temperature=0.7, kwargs={"seed": 1, "top_p": 0.5})
    module = ModelSettings.model_validate({"max_tokens": 50, "kwargs": {"top_p": 0.9}})
    both = module.over(agent)
    assert both.spec == "openai:gpt-4o-mini" and both.temperature == 0.7 and both.max_tokens == 50
    assert both.kwargs == {"seed": 1, "top_p": 0.9}
    assert ModelSettings.model_validate("scripted").spec == "scripted"  # a bare string is a spec
    complete = ModelSettings(spec="local:smollm2").complete()
    assert (complete.temperature, complete.max_tokens, complete.timeout, complete.retries) == (0.3, 96, 900.0, 2)


def module_temperatures(records) -> dict[str, set[float]]:
    seen: dict[str, set[float]] = {}
    for r in records:
        if isinstance(r, LLMCall):
            seen.setdefault(r.purpose.label, set()).add(r.settings["temperature"])
    return seen


def test_cognitive_modules_run_at_the_agents_temperature():
    """The bug this design fixes: modules ran at AgentConfig's 0.3 whatever the agent's temperature."""
    setup = scripted_setup(settings=ModelSettings(spec="scripted", temperature=0.7))
    host = asyncio.run(play_one(make_rules(), ["cognitive"] * 6, 1, setups=setup))
    seen = module_temperatures(host.tracer.records)
    assert seen["analysis"] == seen["plan"] == seen["action+response"] == {0.7}
    assert seen["experience"] == {0.7}
    assert seen.get("extractor", {0.0}) == {0.0}  # the extractor stays at 0


def test_a_module_with_its_own_settings_overrides_only_those():
    config = AgentConfig.model_validate({"summary": {"model": {"temperature": 0.1}},
                                         "plan": {"model": "scripted"}})
    setup = scripted_setup(settings=ModelSettings(spec="scripted", temperature=0.7, max_tokens=77),
                           agent_config=config)
    host = asyncio.run(play_one(make_rules(), ["cognitive"] * 6, 2, setups=setup))
    calls = [r for r in host.tracer.records if isinstance(r, LLMCall) and r.stage == "module"]
    summary = [c for c in calls if c.name == "summary"]
    assert summary and all(c.settings["temperature"] == 0.1 and c.settings["max_tokens"] == 77 for c in summary)
    assert all(c.settings["temperature"] == 0.7 for c in calls if c.name != "summary")


def test_an_uninstalled_provider_names_the_package_to_install(monkeypatch):
    # as if langchain-anthropic were not installed, whether or not it is (a None entry makes its import fail)
    monkeypatch.setitem(sys.modules, "langchain_anthropic", None)
    with pytest.raises(ModelSpecError, match=r"pip install langchain-anthropic"):
        make_model("anthropic:claude-3-5-haiku-latest")
    with pytest.raises(ModelSpecError, match="unknown spec"):
        make_model("no-colon-here")
    result = CliRunner().invoke(cli, ["play", "--seats", "llm", "--model", "anthropic:claude-3-5-haiku-latest"])
    assert result.exit_code == 2 and "langchain-anthropic" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


PROVIDER_PLUGIN = '''
    from avalon_agents.llm import ScriptedChatModel, register_provider

    def echo(model, settings):  # a provider of the user's: the scripted model under another name
        return ScriptedChatModel(seed=len(model))

    register_provider("echo", echo)
'''


def test_a_plugin_registers_a_provider_and_the_cli_settings_reach_every_call(tmp_path):
    plugin = tmp_path / "echo_provider.py"
    plugin.write_text(textwrap.dedent(PROVIDER_PLUGIN))
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, [
        "play", "--seats", "llm", "--model", "echo:any", "--temperature", "0.7", "--max-tokens", "50",
        "--retries", "1", "--model-kwarg", "top_p=0.9", "--plugin", str(plugin), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    game = out / "game-00001"
    meta = json.loads((game / META).read_text())
    assert meta["model"]["spec"] == "echo:any" and meta["model"]["temperature"] == 0.7
    assert meta["model"]["kwargs"] == {"top_p": 0.9} and meta["extractor_model"]["temperature"] == 0.0
    calls = [r for r in read_trace(game) if isinstance(r, LLMCall)]
    agent_calls = [c for c in calls if c.stage == "agent"]
    assert agent_calls and all(c.settings["max_tokens"] == 50 and c.settings["retries"] == 1 for c in agent_calls)


def test_the_pool_shares_one_client_per_settings_and_the_override_wins():
    pool = ClientPool(limit=2, override=ModelSettings(spec="scripted"))
    a = pool.get(ModelSettings(spec="openai:gpt-4o", temperature=0.5))
    assert a.settings.spec == "scripted" and a.settings.temperature == 0.5  # the override replaced the spec only
    assert pool.get(ModelSettings(temperature=0.5)) is a and pool.get(ModelSettings(temperature=0.4)) is not a


BROKEN_PLUGIN = '''
    from avalon_agents.llm import ScriptedChatModel, register_provider

    def broken(model, settings):  # every call fails
        return ScriptedChatModel(respond=lambda messages, kwargs: None)

    register_provider("broken", broken)
'''


def test_failed_calls_and_fallbacks_are_in_run_log_and_quiet_hides_them(tmp_path):
    plugin = tmp_path / "broken_provider.py"
    plugin.write_text(textwrap.dedent(BROKEN_PLUGIN))
    base = ["play", "--seats", "llm", "--model", "broken:x", "--retries", "0", "--plugin", str(plugin), "--json"]
    loud = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "a")])
    log = (tmp_path / "a" / "run.log").read_text()
    assert "LLM call failed" in log and "fallback: seat" in log
    assert "LLM call failed" in loud.stderr  # warnings reach stderr by default
    quiet = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "b"), "-q"])
    assert "LLM call failed" not in quiet.stderr and "LLM call failed" in (tmp_path / "b" / "run.log").read_text()
