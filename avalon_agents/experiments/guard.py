"""What keeps a run directory safe: one run at a time (a lock), one config per directory (its fingerprint in
experiment.json), games of a layout this code writes (records.run_dir.LAYOUT: a newer one is refused before a
resume touches it), and `--max-games` as a cap on the run's total, spread over the variants and series."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from avalon_agents.llm.settings import NOT_MEASURED
from avalon_agents.records.run_dir import EXPERIMENT, LOCK, check_layout, read_run_file
from avalon_agents.records.walk import games_in

IGNORED = ("concurrency", "paper", "health", "watchdog_s", "prices")
"""Config keys that change neither which games are played nor how: a resume may change them."""


class RunDirInUse(ValueError):
    """Another process is running in this directory (one line)."""


class ConfigChanged(ValueError):
    """The directory holds games of another config (one line, naming what changed)."""


@contextmanager
def run_lock(out: Path) -> Iterator[None]:
    """Hold the run directory's lock while the block runs. The lock is the operating system's (flock), so a
    lock left by a process that died is free again at once; the file says who holds it."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = path.read_text().strip() or "another process"
        os.close(fd)
        raise RunDirInUse(f"run-dir: {out} is in use by {holder}; wait for it, or use another --out") from None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"process {os.getpid()} on {socket.gethostname()} since {time.strftime('%H:%M:%S')}".encode())
        yield
    finally:
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def check_free(out: Path) -> None:
    """Raise RunDirInUse now if another process holds the directory (a check before any output; the run
    itself takes the lock)."""
    if (out / LOCK).exists():
        with run_lock(out):
            pass


SCHEDULES = {"balanced": "balanced (Latin square over seats, roles and speaking positions)"}
"""Schedules whose meaning changed, as the fingerprint names them: a lineup run started when `balanced` meant
the role rotation (now `schedule: roles`) is refused on resume instead of mixing the two."""


def fingerprint(variants: dict[str, Any], model_override: dict[str, Any] | None) -> dict[str, Any]:
    """What decides a run's games: every variant's config (without IGNORED keys) and the model override, each
    model's settings without those a resume may change (timeouts, retries, rate limits: NOT_MEASURED)."""
    def decided(config: dict[str, Any]) -> dict[str, Any]:
        kept = {k: v for k, v in config.items() if k not in IGNORED}
        if kept.get("lineup") and kept.get("schedule") in SCHEDULES:
            kept["schedule"] = SCHEDULES[kept["schedule"]]
        return measured(kept)

    return measured_fingerprint({"variants": {name: decided(config) for name, config in variants.items()},
                                 "model_override": model_override or None})


def measured_fingerprint(fp: dict[str, Any]) -> dict[str, Any]:
    """A fingerprint without the model settings a resume may change (the override's too, which may hold no
    spec: `--timeout 30` alone)."""
    override = {k: v for k, v in (fp.get("model_override") or {}).items() if k not in NOT_MEASURED}
    return {**{k: measured(v) for k, v in fp.items()}, "model_override": measured(override) or None}


def measured(value: Any) -> Any:
    """A JSON value without the model settings that do not change what a run measures (in every dict that
    holds a model `spec`)."""
    if isinstance(value, dict):
        drop = NOT_MEASURED if "spec" in value else ()
        return {k: measured(v) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [measured(v) for v in value]
    return value


def first_difference(old: Any, new: Any, path: str = "") -> str | None:
    """The first dotted path at which two JSON values differ (None if they are equal)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                if old.get(key) is None and new.get(key) is None:
                    continue  # a key added since, at its default None: the same config
                return where
            found = first_difference(old[key], new[key], where)
            if found:
                return found
        return None
    return None if old == new else (path or "the config")


def check_same_config(out: Path, current: dict[str, Any], file: str = EXPERIMENT) -> None:
    """Refuse to resume a directory whose games were played under another config (naming what changed), as
    recorded under `fingerprint` in OUT/`file`, or that holds games of a layout this code does not read
    (records.run_dir.LayoutError, naming both layouts)."""
    check_layout(out, games_in(out))
    stored = read_run_file(out, file)
    if stored is None:
        return
    before = stored.get("fingerprint")
    if before is None:
        return  # written before fingerprints were kept
    changed = first_difference(measured_fingerprint(before), measured_fingerprint(json.loads(json.dumps(current))))
    if changed:
        raise ConfigChanged(f"run-dir: {out} holds games of another config ({changed} changed); resume with the "
                            "config it was started with, or give a new --out")


def allotment(pending: list[tuple[int, int, int]], finished: int, max_games: int | None) -> set[tuple[int, int, int]]:
    """Which pending games (variant index, series, game) to play now under a cap on the run's total: the first
    games of every series of every variant before any second games, so a smoke run compares every variant,
    and never more than `max_games` finished in all, so rerunning converges."""
    if max_games is None:
        return set(pending)
    room = max(0, max_games - finished)
    order = sorted(pending, key=lambda p: (p[2], p[1], p[0]))
    return set(order[:room])
