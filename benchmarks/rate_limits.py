"""Rate limits as backpressure: `avalon run` against a provider that limits, with no limit set by hand.

The server is the project's loopback server in its own process with a provider's limits (`--rpm`, `--tpm`:
requests per minute enforced per second, as providers quantize them; tokens per minute over a sliding minute;
429 with `Retry-After`, `retry-after-ms` and OpenAI's `x-ratelimit-*` headers on every answer) and a latency of
0.2 s per answer. The run is the real CLI, `avalon run CONFIG --model SPEC`, on a config of vanilla LLM seats
(six `llm` seats), N series of one game with `concurrency: {games: N}`, through both call paths:
`openai-compatible:m@URL` (llm.http's thin client) and `openai:gpt-4o-mini` with OPENAI_BASE_URL at the server
(ChatOpenAI). Nothing tells the run the limits: the pacer learns them from the answers.

Per row: the run's exit code and wall time, its failed calls (from the traces), the requests the server let
through and refused (429), the share of requests answered 429, and the share of the limit sustained: requests
(or tokens) let through per minute, over the whole minutes from the first request to the 95th percentile of
the requests' times (leaving out the tail, where fewer games are left), divided by the limit; and the same over
the whole run.

Run: .venv/bin/python benchmarks/rate_limits.py [--in-flight 16,64] [--paths openai-compatible,openai]
     [--rpm 600] [--tpm 0] [--latency 0.2] [--no-limit-headers] [--reserve] [--markdown]
(600 RPM, 16 and 64 games in flight, both paths: about 35 minutes on 2 cores.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]


def start_server(rpm: float | None, tpm: float | None, latency: float,
                 headers: bool = True, reserve: bool = False) -> tuple[subprocess.Popen, str]:
    start = "import avalon_agents.llm.loopback as m; m._Server.request_queue_size = 2048; m.main()"
    args = [sys.executable, "-c", start, "--latency", str(latency)] + ([] if headers else ["--no-limit-headers"])
    args += ["--reserve"] if reserve else []
    if rpm:
        args += ["--rpm", str(rpm)]
    if tpm:
        args += ["--tpm", str(tpm)]
    server = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    return server, url


def config(games: int) -> dict:
    return {"name": "rate_limits", "rules": "official", "players": 6, "agents": {"a": {"kind": "llm"}},
            "sides": {"good": "a", "evil": "a"}, "series": games, "games_per_series": 1,
            "concurrency": {"games": games}}


def failed_calls(out: Path) -> tuple[int, int]:
    from avalon_agents.records import read_trace, usage

    calls = failed = 0
    for trace in out.rglob("trace.jsonl"):
        u = usage(read_trace(trace.parent))
        calls += u["llm_calls"]
        failed += u["failed_calls"]
    return calls, failed


def steady(times: list[float], values: list[float]) -> tuple[float, float]:
    """(per minute over the steady part: the mean of the whole minutes from the first request to the 95th
    percentile of the requests' times, when the last games thin out; per minute over the whole run)."""
    order = sorted(range(len(times)), key=times.__getitem__)
    t = [times[i] for i in order]
    v = [values[i] for i in order]
    start, end = t[0], t[int(0.95 * len(t)) - 1]
    minutes = int((end - start) // 60)
    if minutes >= 1:
        sums = [0.0] * minutes
        for at, value in zip(t, v):
            k = int((at - start) // 60)
            if k < minutes:
                sums[k] += value
        middle = sum(sums) / minutes
    else:
        middle = sum(x for at, x in zip(t, v) if at <= end) / max(end - start, 1e-9) * 60
    whole = sum(v) / max(t[-1] - t[0], 1e-9) * 60
    return middle, whole


def one(path: str, games: int, rpm: float | None, tpm: float | None, latency: float, headers: bool = True,
        reserve: bool = False) -> dict:
    server, url = start_server(rpm, tpm, latency, headers, reserve)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cfg = Path(tmp) / "cfg.yaml"
            cfg.write_text(yaml.safe_dump(config(games)))
            out = Path(tmp) / "run"
            env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-key"}
            if path == "openai":
                spec, env["OPENAI_BASE_URL"] = "openai:gpt-4o-mini", url
            else:
                spec = f"openai-compatible:m@{url}"
            start = time.perf_counter()
            done = subprocess.run([str(ROOT / ".venv/bin/avalon"), "run", str(cfg), "--out", str(out), "--model", spec,
                                   "-q"], env=env, capture_output=True, text=True)
            wall = time.perf_counter() - start
            stats = httpx.get(f"{url}/stats", timeout=30).json()
            calls, failed = failed_calls(out)
            log = out / "run.log"
            throttled = sum("pacer" in line for line in log.read_text().splitlines()) if log.exists() else 0
    finally:
        server.terminate()
        server.wait()
    times = stats["times"]
    passed, refused = stats["passed"], stats["refused"]
    row = {"path": path, "games_in_flight": games, "limit": f"{rpm:.0f} RPM" if rpm else f"{tpm:,.0f} TPM",
           "exit": done.returncode, "wall_s": round(wall, 1), "calls": calls, "failed_calls": failed,
           "requests": passed, "answered_429": refused,
           "share_429": round(refused / max(passed + refused, 1), 4), "pacer_log_lines": throttled}
    if rpm:
        middle, whole = steady(times, [1.0] * len(times))
        row.update(sustained=round(middle / rpm, 3), sustained_whole=round(whole / rpm, 3))
    if tpm:
        per_request = stats["tokens"] / max(passed, 1)
        middle, whole = steady(times, stats.get("each") or [per_request] * len(times))
        row.update(sustained=round(middle / tpm, 3), sustained_whole=round(whole / tpm, 3),
                   tokens_per_request=round(per_request))
    if done.returncode not in (0,):
        row["stderr"] = done.stderr.strip().splitlines()[-1:] if done.stderr.strip() else []
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--in-flight", default="16,64")
    parser.add_argument("--paths", default="openai-compatible,openai")
    parser.add_argument("--rpm", type=float, default=600)
    parser.add_argument("--tpm", type=float, default=0, help="a tokens-per-minute limit instead of --rpm")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--no-limit-headers", action="store_true",
                        help="the server states its limits only in 429s (no x-ratelimit-* headers)")
    parser.add_argument("--reserve", action="store_true",
                        help="the server counts each request's max_tokens for the minute (as OpenAI does)")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    for games in (int(x) for x in args.in_flight.split(",")):
        for path in args.paths.split(","):
            row = one(path, games, None if args.tpm else args.rpm, args.tpm or None, args.latency,
                      not args.no_limit_headers, args.reserve)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.markdown:
        print("| path | games in flight | limit | exit | wall | calls | failed | requests | 429s | share 429 | "
              "sustained (steady) | sustained (whole run) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| `{r['path']}` | {r['games_in_flight']} | {r['limit']} | {r['exit']} | {r['wall_s']:.0f} s | "
                  f"{r['calls']:,} | {r['failed_calls']} | {r['requests']:,} | {r['answered_429']} | "
                  f"{r['share_429']:.1%} | {r['sustained']:.2f} | {r['sustained_whole']:.2f} |")


if __name__ == "__main__":
    main()
