"""Two vanilla 6-seat games against the loopback server with 20% faulty requests: what was injected, what the
trace recorded, how the decisions were read (docs/reliability.md).

    .venv/bin/python benchmarks/faults.py
"""
import asyncio
import collections

from avalon_agents.core import make_rules
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm import ClientPool, ModelSettings
from avalon_agents.llm import client as client_module
from avalon_agents.llm.loopback import openai_server

client_module.BACKOFF = {"multiplier": 0.005, "max": 0.05, "exp_base": 2.0, "jitter": 0.005}
rules = make_rules("official", 6)
with openai_server(fault_rate=0.2, timeout_sleep=0.6, seed=11) as server:
    spec = f"openai-compatible:loopback@{server.base_url}"
    setup = AgentSetup(clients=ClientPool(), settings=ModelSettings(spec=spec, retries=1, timeout=0.3))
    records = []
    for seed in range(2):
        host = asyncio.run(play_one(rules, ["llm"] * 6, seed, setups=setup))
        assert host.engine.is_over
        records += host.tracer.records
    print("requests", len(server.state.requests), "injected", collections.Counter(server.state.injected))
calls = [r for r in records if r.type == "llm_call"]
print("calls", len(calls), collections.Counter(r.outcome for r in calls))
ex = [r for r in records if r.type == "extraction"]
print("decisions", len(ex), collections.Counter(r.method for r in ex), "reasks", sum(r.answers - 1 for r in ex))
