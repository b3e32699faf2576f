"""Host overhead per LLM call: what the framework adds to each call (host, narration, agent prompt, client
ledger, extractor, engine) when the model answers instantly.

Games with the vanilla LLM agent on all 6 seats are played twice over the same model: through the whole
framework (wall time W), and then by replaying the very same requests straight to the chat model, one
after another (time R). Overhead per call = (W - R) / calls. Measured against the loopback
OpenAI-compatible server at 0 latency (real HTTP through ChatOpenAI) and against the in-process
scripted model (no HTTP, so the figure is not blurred by socket time).

Run: .venv/bin/python benchmarks/llm_overhead.py [GAMES]
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from avalon_agents.core import make_rules
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm import ClientPool, ModelSettings
from avalon_agents.llm.client import response_format

ROLE = {"system": SystemMessage, "human": HumanMessage, "ai": AIMessage}


async def measure(spec: str, games: int) -> dict[str, float]:
    rules = make_rules("official", 6)
    settings = ModelSettings(spec=spec, retries=0)
    models = AgentSetup(clients=ClientPool(), settings=settings)
    await play_one(rules, ["llm"] * 6, seed=10_000, setups=models)  # warm up connections and caches
    calls: list[dict] = []
    start = time.perf_counter()
    for seed in range(games):
        host = await play_one(rules, ["llm"] * 6, seed=seed, setups=models)
        calls += [r for r in host.tracer.records if r.type == "llm_call"]
    wall = time.perf_counter() - start

    model = models.clients.get(settings).model
    requests = []
    for call in calls:
        messages = [ROLE[m.role](content=m.content) for m in call.messages]
        fmt = None
        if call.constrained:  # the same schema request shape; the schema itself hardly matters here
            fmt = response_format({"type": "object"}, "replay", settings.schema_style)
        requests.append((messages, fmt))
    start = time.perf_counter()
    for messages, fmt in requests:
        await (model.bind(response_format=fmt) if fmt else model).ainvoke(messages)
    raw = time.perf_counter() - start
    n = len(calls)
    return {"calls": n, "wall_ms_per_call": 1000 * wall / n, "raw_ms_per_call": 1000 * raw / n,
            "overhead_ms_per_call": 1000 * (wall - raw) / n, "games_per_s": games / wall}


def main(games: int = 5) -> None:
    print("| model | games | calls | wall per call (ms) | model alone per call (ms) | host overhead per call (ms) |")
    print("|---|---|---|---|---|---|")
    # the server runs in its own process, as a real one would, so its threads do not share this one's GIL
    server = subprocess.Popen([sys.executable, "-m", "avalon_agents.llm.loopback"], stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        rows = [("loopback HTTP, 0 latency", asyncio.run(measure(f"openai-compatible:loopback@{url}", games)))]
    finally:
        server.terminate()
    rows.append(("scripted, in process", asyncio.run(measure("scripted", games))))
    for name, f in rows:
        print(f"| {name} | {games} | {f['calls']} | {f['wall_ms_per_call']:.2f} | {f['raw_ms_per_call']:.2f} | "
              f"{f['overhead_ms_per_call']:.2f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
