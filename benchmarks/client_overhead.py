"""CPU per LLM call of each layer of the client stack, against the loopback server in its own process.

The same request (a system and a user message of game-like length) is sent `--calls` times by `--workers`
concurrent workers through, from the top:

  llmclient  LLMClient.call as built for an openai-compatible: spec (llm/http.py's aiohttp client, tenacity's
             retry, the trace record)
  llmclient-chatopenai  LLMClient.call over ChatOpenAI (what openai: specs use)
  chatopenai ChatOpenAI.ainvoke (langchain-openai, the openai SDK, httpx)
  openai     AsyncOpenAI.chat.completions.create (the openai SDK's request building and parsing, httpx)
  aiohttp    aiohttp.ClientSession.post of the same body (keep-alive pool as large as the workers)
  httpx      httpx.AsyncClient.post of the JSON body, json.loads of the answer (the floor of any client)
  ...-pool   the same with the connection pool keeping as many connections alive as there are workers
             (httpx's default keeps 20: more calls in flight open and close a connection each time)

and the CPU seconds of this process per call are printed per layer: the differences are what each layer
costs. Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/client_overhead.py [--workers 32] [--calls 640]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import aiohttp
import httpx
import openai
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

sys.path.insert(0, str(Path(__file__).parent))

from runner_latency import loopback  # noqa: E402

from avalon_agents.llm import LLMClient, ModelSettings  # noqa: E402
from avalon_agents.records import MemoryTracer, Purpose  # noqa: E402

SYSTEM = "You are Player 3 in a game of Avalon. " * 40
USER = "Player 4 said: \"As Player 4, I trust Player 5 for now, while Player 6 has not earned it yet.\"\n" * 30


def limits(workers: int, pooled: bool) -> httpx.Limits:
    return httpx.Limits(max_connections=None, max_keepalive_connections=workers) if pooled else httpx.Limits()


async def measure(layer: str, url: str, workers: int, calls: int) -> float:
    pooled = layer.endswith("-pool")
    base = layer.removesuffix("-pool")
    http = httpx.AsyncClient(timeout=60, limits=limits(workers, pooled))
    messages = [SystemMessage(SYSTEM), HumanMessage(USER)]
    body = {"model": "loopback", "messages": [{"role": "system", "content": SYSTEM},
                                              {"role": "user", "content": USER}], "temperature": 0.3}
    chat = ChatOpenAI(model="loopback", base_url=url, api_key="x", max_retries=0, use_responses_api=False,
                      http_async_client=http, temperature=0.3)
    settings = ModelSettings(spec=f"openai-compatible:loopback@{url}", temperature=0.3)
    client = LLMClient(settings=settings, model=chat if base == "llmclient-chatopenai" else None,
                       tracer=MemoryTracer())
    sdk = openai.AsyncOpenAI(base_url=url, api_key="x", http_client=http, max_retries=0)
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=workers)) if base == "aiohttp" else None

    async def one() -> None:
        if base.startswith("llmclient"):
            await client.call(messages, purpose=Purpose(stage="other", name="bench"), prompt_id="bench")
        elif base == "chatopenai":
            await chat.ainvoke(messages)
        elif base == "aiohttp":
            async with session.post(f"{url}/chat/completions", json=body) as r:
                json.loads(await r.read())["choices"][0]["message"]["content"]
        elif base == "openai":
            await sdk.chat.completions.create(**body)
        else:
            r = await http.post(f"{url}/chat/completions", json=body)
            json.loads(r.content)["choices"][0]["message"]["content"]

    async def worker(n: int) -> None:
        for _ in range(n):
            await one()

    await asyncio.gather(*(worker(1) for _ in range(workers)))  # connections and caches warm
    cpu = time.process_time()
    await asyncio.gather(*(worker(calls // workers) for _ in range(workers)))
    cpu = time.process_time() - cpu
    await http.aclose()
    if session is not None:
        await session.close()
    return cpu / (calls // workers * workers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--calls", type=int, default=640)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--layers", default="llmclient,llmclient-chatopenai,chatopenai,openai,httpx-pool,aiohttp")
    args = parser.parse_args()
    print(f"| layer | CPU per call (ms), {args.workers} in flight, {args.calls} calls |\n|---|---|")
    with loopback(args.latency, 1024) as (spec, _):
        url = spec.split("@", 1)[1]
        for layer in args.layers.split(","):
            per_call = asyncio.run(measure(layer, url, args.workers, args.calls))
            print(f"| {layer} | {1000 * per_call:.2f} |", flush=True)


if __name__ == "__main__":
    main()
