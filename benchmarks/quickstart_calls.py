"""README command 1's game cut short: `avalon run experiments/quickstart.yaml` (the embedded model) until its
first CALLS LLM calls have been answered, then the process ends (its llama.cpp server with it). Timed from
outside (start-up included), it compares two versions of the code on the same game's opening, in a fraction of a
game's time: run it with the other version's directory first on PYTHONPATH.

Run: .venv/bin/python benchmarks/quickstart_calls.py [CALLS] [OUT]   (default 40 calls, OUT a temporary folder)

Prints, as the process ends: the calls, their prompt tokens and the share the server's cache served (when the
server reports `cached_tokens`), and the seconds since start.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

START = time.perf_counter()


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="quickstart-calls-")
    from avalon_agents.cli import cli
    from avalon_agents.llm import client

    original = client.LLMClient._trace
    seen: list = []

    def trace(self, record) -> None:  # every answered call passes here once
        original(self, record)
        seen.append(record)
        if len(seen) >= calls:
            tokens = sum(r.input_tokens for r in seen)
            cached = sum(getattr(r, "cached_tokens", 0) for r in seen)
            print(f"{len(seen)} calls, {tokens:,} prompt tokens, {cached:,} from the cache ({cached / tokens:.0%}); "
                  f"{time.perf_counter() - START:.1f} s", flush=True)
            os._exit(0)

    client.LLMClient._trace = trace
    cli.main(["run", "experiments/quickstart.yaml", "--out", out], standalone_mode=False)


if __name__ == "__main__":
    main()
