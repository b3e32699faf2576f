"""The registries a test may change (tests/helpers.py `registries_restored`, which tests/conftest.py wraps
around every test) are left as they were found, whatever was registered meanwhile."""

from __future__ import annotations

import sys

from avalon_agents import plugins
from avalon_agents.agents import RuleBot, make_agent
from avalon_agents.agents.registry import AGENT_KINDS, register_agent
from avalon_agents.llm import ScriptedChatModel, register_provider
from avalon_agents.analysis.judges.registry import JUDGES
from avalon_agents.analysis.paper.metrics import OUTCOMES, register_metric
from avalon_agents.llm.pacer import pacer_for, pacers_state, set_share
from avalon_agents.modules.base import SLOTS, register_slot
from avalon_agents.llm.providers import PROVIDERS
from avalon_agents.modules import MODULES, Module, register_module
from tests.helpers import registries_restored

PLUGIN = '''
from avalon_agents.agents.registry import register_agent
from avalon_agents.agents import RuleBot

register_agent("from_a_plugin", RuleBot)
'''


def test_what_is_registered_inside_is_gone_after_and_what_was_there_stays(tmp_path):
    plugin = tmp_path / "a_plugin.py"
    plugin.write_text(PLUGIN)
    registries = (AGENT_KINDS, MODULES, PROVIDERS, plugins.LOADED, SLOTS, OUTCOMES, JUDGES)
    before = [r.items() for r in registries]
    with registries_restored():
        register_agent("rulebot", RuleBot)  # an existing name replaced ...
        register_agent("flavoured", RuleBot)  # ... and new ones added

        @register_module("quiet", "hush")
        class Quiet(Module):
            slot = "analysis"

        register_provider("echo", lambda model, settings: ScriptedChatModel())
        register_slot("mood", before="action")
        register_metric("talkative", lambda data: None)
        key = plugins.load_plugin(str(plugin))
        name = plugins.LOADED[key].__name__
        set_share(0.25)
        pacer = pacer_for("http://127.0.0.1:1/v1", rpm=60)
        assert isinstance(make_agent("from_a_plugin", seat=1, seed=0), RuleBot)
        assert {"flavoured", "from_a_plugin"} <= set(AGENT_KINDS) and MODULES["hush"] is Quiet
        assert "echo" in PROVIDERS and name in sys.modules and pacer.share == 0.25
        assert SLOTS.index("mood") == SLOTS.index("action") - 1 and "talkative" in OUTCOMES
    assert [r.items() for r in registries] == before
    assert name not in sys.modules and "http://127.0.0.1:1/v1" not in pacers_state()[0]
    assert pacer_for("http://127.0.0.1:2/v1").share == 1.0  # the process's share is back too
