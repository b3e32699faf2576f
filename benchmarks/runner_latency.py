"""Wall time against a model with a fixed latency: one game beside its critical path, and games per hour
with several games in flight.

Every game is played through the experiment runner (`avalon run`'s code: temporary YAML configs, the
loopback OpenAI-compatible server as `--model`, real HTTP, the server in its own process with a sleep of
L seconds per request, so concurrent requests overlap).

1. **One game alone.** Each game's critical path is `records.critical_path(trace)`: the sum over host steps
   of the most calls one seat made in that step. At a fixed latency L, critical path x L is the least wall
   time the game can take; the target is wall <= 1.2 x that. Rows with `llm_calls` = 64 (no throttling)
   and 4 (the experiments' default per-model limit). The gap is split in two: inside steps (a step's
   span, from its first call's start to its last call's end, minus its longest seat chain x L: per-call
   HTTP and client cost, queueing behind the per-model limit, the agents' own work between chained calls)
   and between steps (no call in flight: the host, narration, extraction by rules, experience stores).
   Each call's end time is stamped into the trace of this run (start = end - its latency_s, which includes
   waiting for a slot of the per-model limit).
2. **Games in flight.** The quickstart match-up (cognitive agent on good, the paper's baseline on evil), k
   series at once (k = 1, 4, 16), `llm_calls` high; games per hour = games / wall x 3600, beside the ideal
   (every series as fast as its games' critical paths), and the CPU seconds of this process (the whole
   framework: one asyncio loop, plus any native threads) and of the server process.

The server's listen queue is raised to 1024 (`--backlog`): the loopback server's own (socketserver's 5)
drops connections when many games open them at once, which a real server does not.

Run: .venv/bin/python benchmarks/runner_latency.py [--latency 0.5] [--games 3] [--in-flight 1,4,16] [--quick]
(the defaults take about 17 minutes on 2 cores; --quick about 4)
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import yaml

from avalon_agents.experiments import load_experiments, run_experiment
from avalon_agents.llm import ModelSettings
from avalon_agents.records import GameRecorder, LLMCall, critical_path, read_trace

SOLO_SEATS = {"cognitive ×6": {"a": {"kind": "cognitive"}}, "llm ×6 (vanilla)": {"a": {"kind": "llm"}}}
QUICKSTART_AGENTS = {"ours": {"kind": "cognitive"}, "baseline": {"kind": "baseline"}}


def quickstart_agents(spec: str, served: bool) -> dict:
    """The quickstart match-up; `served`: the baseline's retrieval asks the loopback server (`spec`) for its
    vectors (option `embeddings`) instead of running MiniLM in this process."""
    if not served:
        return QUICKSTART_AGENTS
    url = spec.partition("@")[2]
    return {**QUICKSTART_AGENTS, "baseline": {"kind": "baseline",
                                              "options": {"embeddings": f"openai-compatible:minilm@{url}"}}}
SLOW_CALL = 0.9  # a call this much slower than L: a lost SYN (1 s retransmit) or a stall, not queueing

STARTS: dict[Path, tuple[float, float]] = {}  # game dir -> (perf_counter, process_time) when its recorder opened


class StampedRecorder(GameRecorder):
    """The game recorder, plus the time each LLM call ended (seconds since the game began) in its record."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.t0 = time.perf_counter()
        STARTS[self.path] = (self.t0, time.process_time())

    def trace(self, record: Any) -> None:
        super().trace(record)
        if isinstance(record, LLMCall):  # beside the typed trace: one end time per call, in the same order
            with open(self.path / "t_end.txt", "a") as f:
                f.write(f"{time.perf_counter() - self.t0:.4f}\n")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@contextmanager
def loopback(latency: float, backlog: int, embed: bool = False) -> Iterator[tuple[str, dict[str, float]]]:
    """The loopback server in its own process (its threads don't share our GIL); yields (spec, usage), where
    usage gets the server's CPU seconds once it has stopped. `backlog` is its listen queue: socketserver's
    default of 5 drops connections when many open at once (16 at once: some wait a 1 s SYN retransmit; 64:
    some fail with ReadError), which a real server (uvicorn: 2048) does not do. `embed`: the server also
    answers /v1/embeddings, at once and with no encoder (a fixed vector per text, `loopback.hashed_vectors`),
    as it answers chat with scripted text after a sleep: the framework's side of served embeddings is measured,
    not a one-core encoder on this machine's two cores."""
    before = children_cpu()
    start = f"import avalon_agents.llm.loopback as m; m._Server.request_queue_size = {backlog}; m.main()"
    server = subprocess.Popen([sys.executable, "-c", start, "--latency", str(latency),
                               "--embeddings", "hashed" if embed else "none"], stdout=subprocess.PIPE, text=True)
    usage: dict[str, float] = {}
    try:
        yield f"openai-compatible:loopback@{server.stdout.readline().strip()}", usage
    finally:
        server.terminate()
        server.wait()
        usage["server_cpu_s"] = children_cpu() - before


def config(agents: dict, series: int, games: int, llm_calls: int, sides: dict[str, str] | None = None) -> dict:
    name = next(iter(agents))
    return {"name": "runner_latency", "rules": "official", "players": 6, "model": "scripted", "agents": agents,
            "sides": sides or {"good": name, "evil": name}, "series": series, "games_per_series": games,
            "seed": 0, "concurrency": {"games": series, "llm_calls": llm_calls}}


POOL: dict[str, int] = {}  # --keepalive N: what specs.make_model's httpx clients get (a proposal, patched in)


class PooledAsyncClient(httpx.AsyncClient):
    """httpx.AsyncClient keeping POOL["keepalive"] connections alive and no cap on connections (httpx's
    default: 100 connections, 20 kept alive, so more calls in flight queue in the pool or reconnect)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("limits", httpx.Limits(max_connections=None, max_keepalive_connections=POOL["keepalive"]))
        super().__init__(*args, **kwargs)


def run(cfg: dict, out: Path, model: str) -> dict[str, Any]:
    """Play every game of `cfg` into `out`; wall and CPU of the whole run and, per game, its own."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(cfg))
    variants = load_experiments(out / "config.yaml")
    games: list[dict[str, Any]] = []

    def on_game(job: Any, n: int, path: Path) -> None:
        t0, cpu0 = STARTS.pop(Path(path))
        games.append({"path": Path(path), "series": job.series, "wall": time.perf_counter() - t0,
                      "cpu": time.process_time() - cpu0})
        print(f"  {job.label} game {n}: {games[-1]['wall']:.1f} s", file=sys.stderr, flush=True)

    start, cpu = time.perf_counter(), time.process_time()
    patches = [mock.patch("avalon_agents.host.play.GameRecorder", StampedRecorder)]
    if POOL:
        patches.append(mock.patch("avalon_agents.llm.providers.httpx.AsyncClient", PooledAsyncClient))
    with ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        asyncio.run(run_experiment(variants, out / "run", model=ModelSettings(spec=model), on_game=on_game))
    return {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu, "games": games}


def warm_up(cfg: dict, root: Path) -> None:
    """One scripted game of the same match-up: imports, templates, the embedding model, chromadb."""
    run({**cfg, "series": 1, "games_per_series": 1, "concurrency": {"games": 1, "llm_calls": 64}},
        root / "warmup", "scripted")


# ------------------------------------------------------------------ reading a game's trace

def calls_of(path: Path) -> list[dict[str, Any]]:
    ends = [float(line) for line in (Path(path) / "t_end.txt").read_text().split()]
    calls = [{**r.model_dump(exclude={"messages"}), "purpose": r.purpose.label, "t_end": t_end}
             for r, t_end in zip((r for r in read_trace(path) if isinstance(r, LLMCall)), ends)]
    for c in calls:
        c["t_start"] = c["t_end"] - c["latency_s"]
    return calls


def critical_of(calls: list[dict[str, Any]]) -> int:
    """records.critical_path over the call dicts of calls_of."""
    return critical_path([LLMCall.model_validate({k: v for k, v in c.items() if k in LLMCall.model_fields
                                                  and k != "purpose"}) for c in calls])


def anatomy(calls: list[dict[str, Any]], wall: float, latency: float) -> dict[str, Any]:
    """Where a game's wall time goes, beside its critical path."""
    by_step: dict[int, list[dict]] = defaultdict(list)
    for c in calls:
        by_step[c["step"]].append(c)
    spans = in_step = 0.0
    overlapped = chained = 0
    chains: Counter[str] = Counter()  # the longest seat's purposes, in order, per step
    excess: Counter[str] = Counter()  # time inside steps above the longest chain x L, per kind of step
    for step_calls in by_step.values():
        seats: dict[Any, list[dict]] = defaultdict(list)
        for c in step_calls:
            seats[c["seat"]].append(c)
        longest = max(len(v) for v in seats.values())
        span = max(c["t_end"] for c in step_calls) - min(c["t_start"] for c in step_calls)
        spans += span
        in_step += span - longest * latency
        first = min(step_calls, key=lambda c: c["t_start"])["purpose"].split("/")[0]
        excess[f"{first} ×{len(seats)}"] += span - longest * latency
        for seat_calls in seats.values():
            seat_calls.sort(key=lambda c: c["t_start"])
            for a, b in zip(seat_calls, seat_calls[1:]):
                chained += 1
                overlapped += b["t_start"] < a["t_end"] - 1e-3  # the later call began before the earlier ended
        top = max(seats.values(), key=len)
        chains[" → ".join(c["purpose"].split("/")[0] for c in sorted(top, key=lambda c: c["t_start"]))] += 1
    extra = [c["latency_s"] - latency for c in calls]
    return {"calls": len(calls), "critical": critical_of(calls), "wall": wall, "steps": len(by_step),
            "in_step": in_step, "between": wall - spans, "overlapped": overlapped, "chained": chained,
            "chains": chains, "excess": excess, "extract": sum(c["purpose"].startswith("extract") for c in calls),
            "extra_ms": 1000 * statistics.mean(extra), "extra_max_ms": 1000 * max(extra),
            "slow": sum(e > SLOW_CALL for e in extra)}


# ------------------------------------------------------------------ 1. one game alone

def solo(latency: float, games: int, limits: list[int], backlog: int, root: Path) -> list[dict[str, Any]]:
    rows = []
    for label, agents in SOLO_SEATS.items():
        warm_up(config(agents, 1, 1, 64), root / label.split()[0])
        for limit in limits:
            print(f"{label}, llm_calls {limit}, L = {latency} s", file=sys.stderr, flush=True)
            with loopback(latency, backlog) as (spec, _):
                measured = run(config(agents, 1, games, limit), root / f"{label.split()[0]}-{limit}", spec)
            for g in sorted(measured["games"], key=lambda g: g["path"]):
                rows.append({"seats": label, "llm_calls": limit, "game": g["path"].name, "cpu": g["cpu"],
                             **anatomy(calls_of(g["path"]), g["wall"], latency)})
    return rows


def print_solo(rows: list[dict[str, Any]], latency: float) -> None:
    print(f"\n### One game alone, L = {latency} s per call\n")
    print("| seats | llm_calls | game | calls | critical path | critical path × L (s) | wall (s) | wall / critical "
          "| inside steps (s) | between steps (s) | framework CPU (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ideal = r["critical"] * latency
        print(f"| {r['seats']} | {r['llm_calls']} | {r['game']} | {r['calls']} | {r['critical']} | {ideal:.1f} | "
              f"{r['wall']:.1f} | {r['wall'] / ideal:.2f} | {r['in_step']:.1f} | {r['between']:.1f} | "
              f"{r['cpu']:.1f} |")
    print("\nMeans per game:\n")
    print("| seats | llm_calls | games | calls | critical path | critical path × L (s) | wall (s) | wall / critical "
          "| inside steps (s) | between steps (s) | framework CPU (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    groups: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["seats"], r["llm_calls"])].append(r)
    for (seats, limit), rs in groups.items():
        def mean(key: str, rs: list[dict] = rs) -> float:
            return statistics.mean(r[key] for r in rs)

        ideal = sum(r["critical"] for r in rs) * latency
        ratio = sum(r["wall"] for r in rs) / ideal
        print(f"| {seats} | {limit} | {len(rs)} | {mean('calls'):.0f} | {mean('critical'):.0f} | "
              f"{ideal / len(rs):.1f} | {mean('wall'):.1f} | **{ratio:.2f}** | {mean('in_step'):.1f} | "
              f"{mean('between'):.1f} | {mean('cpu'):.1f} |")
    print("\nWhat the trace says (per row): chained calls of one seat within a step that overlapped in time "
          "(0: each seat's calls ran one after another, so critical_path counts them right); extractor calls "
          "(recorded under the seat whose answer they read, after that answer); each call's time above L "
          "(HTTP, client, and waiting for a slot of the per-model limit); the chains behind the critical path.\n")
    for (seats, limit), rs in groups.items():
        chains: Counter[str] = Counter()
        for r in rs:
            chains.update(r["chains"])
        overlapped, chained = sum(r["overlapped"] for r in rs), sum(r["chained"] for r in rs)
        print(f"- {seats}, llm_calls {limit}: overlapped {overlapped} of {chained} chained pairs; extractor "
              f"calls {sum(r['extract'] for r in rs)}; time above L per call: mean "
              f"{statistics.mean(r['extra_ms'] for r in rs):.0f} ms, max {max(r['extra_max_ms'] for r in rs):.0f} "
              f"ms, {sum(r['slow'] for r in rs)} calls > L + {SLOW_CALL} s; steps {sum(r['steps'] for r in rs)}; "
              "longest chains: " + "; ".join(f"{c} ×{n}" for c, n in chains.most_common(5)))
        excess: Counter[str] = Counter()
        for r in rs:
            excess.update(r["excess"])
        print("  time inside steps above L × the longest chain, per game, by kind of step (first call's "
              "purpose × seats calling): " + "; ".join(f"{k} {v / len(rs):.2f} s" for k, v in excess.most_common(4)))


# ------------------------------------------------------------------ 2. games in flight

def in_flight(latency: float, ks: list[int], per_series: int | None, limit: int, backlog: int,
              root: Path, served: bool = False) -> list[dict]:
    base = config(QUICKSTART_AGENTS, 1, 1, limit, sides={"good": "ours", "evil": "baseline"})
    warm_up(base, root / "quickstart")
    rows = []
    for k in ks:
        n = per_series or (2 if k <= 4 else 1)
        print(f"quickstart match-up, {k} in flight × {n} games, L = {latency} s", file=sys.stderr, flush=True)
        with loopback(latency, backlog, served) as (spec, server):
            cfg = config(quickstart_agents(spec, served), k, n, limit, sides={"good": "ours", "evil": "baseline"})
            measured = run(cfg, root / f"flight-{k}", spec)
        by_series: dict[int, float] = defaultdict(float)
        calls = slow = retried = 0
        extra: list[float] = []
        for g in measured["games"]:
            cs = calls_of(g["path"])
            by_series[g["series"]] += critical_of(cs) * latency
            calls += len(cs)
            extra += [c["latency_s"] - latency for c in cs]
            slow += sum(c["latency_s"] - latency > SLOW_CALL for c in cs)
            retried += sum(c["attempts"] > 1 for c in cs)
        games = len(measured["games"])
        rows.append({"k": k, "per_series": n, "games": games, "wall": measured["wall"], "cpu": measured["cpu"],
                     "server_cpu": server["server_cpu_s"], "ideal": max(by_series.values()),
                     "calls": calls / games, "extra_ms": 1000 * statistics.median(extra), "slow": slow,
                     "retried": retried})
    return rows


def print_in_flight(rows: list[dict[str, Any]], latency: float, limit: int, backlog: int,
                    served: bool = False) -> None:
    print(f"\n### Games in flight: cognitive (good) against the baseline (evil), L = {latency} s, "
          f"llm_calls {limit}, server backlog {backlog}, the baseline's embeddings "
          f"{'served (hashed vectors from the loopback server)' if served else 'in process'}\n")
    print("| games in flight | games | calls / game | wall (s) | games / hour | ideal games / hour | wall / ideal "
          "| time above L per call: median (calls > L + 0.9 s, retried) | framework CPU (s) | CPU per game (s) "
          "| CPU / wall | server CPU (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['k']} | {r['games']} ({r['k']} × {r['per_series']}) | {r['calls']:.0f} | {r['wall']:.0f} | "
              f"**{r['games'] / r['wall'] * 3600:.0f}** | {r['games'] / r['ideal'] * 3600:.0f} | "
              f"{r['wall'] / r['ideal']:.2f} | {r['extra_ms']:.0f} ms ({r['slow']}, {r['retried']}) | "
              f"{r['cpu']:.0f} | {r['cpu'] / r['games']:.1f} | {r['cpu'] / r['wall']:.2f} | {r['server_cpu']:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the server sleeps per request")
    parser.add_argument("--games", type=int, default=3, help="games per row of the one-game-alone table")
    parser.add_argument("--llm-calls", default="64,4",
                        help="per-model limits for the one-game rows, comma-separated; the first (high) one is "
                             "used for the in-flight rows")
    parser.add_argument("--in-flight", default="1,4,16", help="games (series) in flight, comma-separated")
    parser.add_argument("--games-per-series", type=int, default=None,
                        help="consecutive games per series in flight (default: 2 up to 4 in flight, else 1)")
    parser.add_argument("--backlog", type=int, default=1024,
                        help="the server's listen queue (5: the loopback server's own default, which drops "
                             "connections when many games are in flight)")
    parser.add_argument("--keepalive", type=int, default=None,
                        help="give the models' httpx clients no connection cap and this many kept-alive "
                             "connections (a proposal for llm/specs.py, patched in for the measurement)")
    parser.add_argument("--part", choices=("solo", "flight", "both"), default="both")
    parser.add_argument("--embeddings", choices=("local", "served"), default="local",
                        help="the baseline's retrieval vectors in the in-flight rows: MiniLM in this process "
                             "(local), or from the loopback server's /v1/embeddings (served: a fixed vector per "
                             "text, no encoder), as a run whose models are all served would get them")
    parser.add_argument("--quick", action="store_true",
                        help="1 game per row, llm_calls 64 only, 1 and 4 in flight × 1 game: about 4 minutes")
    parser.add_argument("--keep", type=Path, default=None, help="keep the run directories here")
    args = parser.parse_args()
    limits = [int(x) for x in args.llm_calls.split(",")]
    if args.keepalive:
        POOL["keepalive"] = args.keepalive
    ks = [int(x) for x in args.in_flight.split(",")]
    games, per_series = args.games, args.games_per_series
    if args.quick:
        games, limits, ks, per_series = 1, limits[:1], [k for k in ks if k <= 4], 1

    with tempfile.TemporaryDirectory(prefix="runner_latency-") as tmp:
        root = args.keep or Path(tmp)
        if args.part in ("solo", "both"):
            print_solo(solo(args.latency, games, limits, args.backlog, root), args.latency)
        if args.part in ("flight", "both"):
            served = args.embeddings == "served"
            rows = in_flight(args.latency, ks, per_series, limits[0], args.backlog, root, served)
            print_in_flight(rows, args.latency, limits[0], args.backlog, served)


if __name__ == "__main__":
    main()
