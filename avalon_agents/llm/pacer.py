"""Pacing the calls to one endpoint: a provider's rate limits are backpressure, not failures.

One `Pacer` per endpoint (the model and the server it is asked at) is shared by every caller in the process:
each seat, module, extractor, judge and embedding request to that endpoint waits for its turn here. The limits
are requests and tokens per minute, set by the user (`rpm`, `tpm`, `requests_per_second`) or learned from the
provider: the `x-ratelimit-*` headers of ordinary answers (OpenAI's and compatible servers', Anthropic's
`anthropic-ratelimit-*`), and `Retry-After` / `retry-after-ms` on a 429. The pacer keeps what it sent in the
last minute (a sliding window, as providers count) and gives each call a start time, first come first served:

- requests are spaced evenly at `SAFETY` of the per-second share of the limit (providers enforce a per-minute
  limit in one-second slices: 600 RPM is 10 requests in any second);
- tokens stay under `SAFETY` of the per-minute limit over any minute: a request holds its prompt's tokens and
  its whole `max_tokens` for the minute from its start, as providers count it (they count max_tokens against a
  token limit when a request arrives, and do not give back what the answer left unused); the answer's counts
  replace the prompt's estimate, and an answer longer than `max_tokens` (a cap the server ignored) counts whole;
- while no limit is known (none set, none stated by an answer's headers, no 429 yet), the calls in flight
  start at one and grow by one with each answer (doubling each round trip, as TCP's slow start): a provider
  that states its limits only in 429s meets a few of them, not an opening burst of every caller at once;
- a 429 holds every call to the endpoint for as long as the server says, and, where no limit is known, sets a
  request limit from the answers that went through (then raised slowly while no 429 comes).

Clock and locking are thread-safe and loop-agnostic (time.monotonic, threading.Lock, asyncio.sleep), so one
pacer serves every event loop of the process. Under Ray, each worker's pacer takes `share` of the limits.
Each change of the limits is one line of run.log.
"""

from __future__ import annotations

import asyncio
import email.utils
import re
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from loguru import logger

WINDOW_S = 60.0
LATE = 0.01
"""A sent request leaves this pacer's window 1% of a window after the provider's would (0.6 s of a minute): the
provider registered it a little after it was sent, and letting a wave of new requests in at the very moment
the old ones leave would meet the provider's count before it drops them."""
SAFETY = 0.95
"""The share of a limit the pacer aims at: the rest absorbs estimate errors and network jitter."""
CHARS_PER_TOKEN = 4.0
"""The first guess of a prompt's tokens (chars / 4); learned from the provider's counts after the first answers."""
RAISE_AFTER_S = 60.0
"""A rate learned from 429s alone (no headers) is raised by 10% after this long without a 429."""
PROBE_POLL_S = 0.02
"""While no limit is known, a caller over the calls in flight allowed looks again this often."""
RECHECK_S = 0.25
"""A waiting request looks this often whether its slot is still good."""
WAIT_429_S = 1.0
"""How long a 429 that names no wait holds the endpoint."""


def _duration(text: str) -> float | None:
    """OpenAI's reset durations ("1s", "6m0s", "20ms", "1h2m3.5s") or plain seconds, in seconds."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = re.findall(r"([\d.]+)(ms|h|m|s)", text)
    if not parts:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """How long a 429 asks to wait: `retry-after-ms`, else `Retry-After` (seconds or an HTTP date)."""
    if not headers:
        return None
    low = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in low:
        try:
            return max(0.0, float(low["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = low.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class Told:
    """What an answer's headers say of the limits (None: not said)."""

    rpm: int | None = None
    tpm: int | None = None
    requests_left: int | None = None
    tokens_left: int | None = None
    requests_reset_s: float | None = None
    tokens_reset_s: float | None = None


def _int(value: str | None) -> int | None:
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        return None


def read_headers(headers: Mapping[str, str] | None) -> Told:
    """The limits an answer's headers state: OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`
    or Anthropic's `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`."""
    if not headers:
        return Told()
    low = {k.lower(): v for k, v in headers.items()}
    if "x-ratelimit-limit-requests" in low or "x-ratelimit-limit-tokens" in low:
        def reset(kind: str) -> float | None:
            value = low.get(f"x-ratelimit-reset-{kind}")
            return _duration(value) if value else None

        return Told(rpm=_int(low.get("x-ratelimit-limit-requests")), tpm=_int(low.get("x-ratelimit-limit-tokens")),
                    requests_left=_int(low.get("x-ratelimit-remaining-requests")),
                    tokens_left=_int(low.get("x-ratelimit-remaining-tokens")),
                    requests_reset_s=reset("requests"), tokens_reset_s=reset("tokens"))
    if "anthropic-ratelimit-requests-limit" in low or "anthropic-ratelimit-tokens-limit" in low:
        def until(kind: str) -> float | None:
            value = low.get(f"anthropic-ratelimit-{kind}-reset")
            if not value:
                return None
            try:
                from datetime import datetime

                return max(0.0, datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() - time.time())
            except ValueError:
                return None

        return Told(rpm=_int(low.get("anthropic-ratelimit-requests-limit")),
                    tpm=_int(low.get("anthropic-ratelimit-tokens-limit")),
                    requests_left=_int(low.get("anthropic-ratelimit-requests-remaining")),
                    tokens_left=_int(low.get("anthropic-ratelimit-tokens-remaining")),
                    requests_reset_s=until("requests"), tokens_reset_s=until("tokens"))
    return Told()


@dataclass(eq=False)
class Ticket:
    """One admitted request: when it may start, and the tokens it holds in the window."""

    at: float
    tokens: float
    reserved: float = 0.0
    """The request's `max_tokens`: held for the minute whatever the answer used (0: no cap set)."""
    waited_s: float = 0.0
    generation: int = 0
    """The pacer's generation when the slot was given: a change of limits or a 429's hold gives new slots."""


@dataclass
class Pacer:
    """The pace of one endpoint. See the module's docstring.

    Args:
        endpoint: what it paces, for run.log ("openai-compatible:m@http://...").
        rpm: requests per minute the user set (None: learned).
        tpm: tokens per minute the user set (None: learned).
        share: the part of the limits this process may use (1 / the Ray workers sharing the endpoint).
    """

    endpoint: str
    rpm: float | None = None
    tpm: float | None = None
    share: float = 1.0
    learned_rpm: float | None = None
    learned_tpm: float | None = None
    blocked_until: float = 0.0
    throttled: int = 0
    waited_s: float = 0.0
    answered: int = 0
    """Answers while no limit was known: the calls in flight then allowed are one more (see `_opening`)."""
    from_429: bool = False
    """The request limit was set from 429s, not from headers (raised again slowly)."""
    chars_per_token: float = CHARS_PER_TOKEN
    output_tokens: float = 0.0
    in_flight: int = 0
    _window: deque = field(default_factory=deque)  # Tickets of the last minute, by start time
    _next_at: float = 0.0
    _generation: int = 0
    _cut_at: float = 0.0  # when a 429 last lowered a rate learned from 429s
    _last_429: float = 0.0
    _last_ok: float = 0.0
    _streak: float = 0.0  # when the 429s since the last answer began
    _ok_times: deque = field(default_factory=deque)
    _counted: bool = False  # an answer with the provider's token counts came
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------------ limits

    def set_limits(self, rpm: float | None, tpm: float | None) -> None:
        """Limits the user set (the lowest wins when several callers set one)."""
        with self._lock:
            if rpm and (self.rpm is None or rpm < self.rpm):
                self.rpm = rpm
            if tpm and (self.tpm is None or tpm < self.tpm):
                self.tpm = tpm

    def limits(self) -> tuple[float | None, float | None]:
        """(requests, tokens) per minute this process paces at, before SAFETY (None: no limit known)."""
        rpm = min((x for x in (self.rpm, self.learned_rpm) if x), default=None)
        tpm = min((x for x in (self.tpm, self.learned_tpm) if x), default=None)
        return (rpm * self.share if rpm else None, tpm * self.share if tpm else None)

    # ------------------------------------------------------------------ admission

    async def acquire(self, prompt_chars: int, max_output: int) -> Ticket:
        """Wait for this request's turn; the ticket must be settled, released or throttled afterwards.

        Request slots are handed out in order (a caller takes the next free slot and sleeps until it); a caller
        that would take the last minute's tokens over the limit waits until enough of them leave the window and
        looks again, with the estimates the answers meanwhile corrected."""
        start = time.monotonic()
        while True:
            with self._lock:
                now = time.monotonic()
                if self._probing():
                    if self.in_flight < self._opening():  # limits unknown: a slow start
                        ticket = self._admit(now, prompt_chars, max_output)
                        break
                    wait = PROBE_POLL_S
                else:
                    room = self._token_room(now, self._estimate(prompt_chars, max_output))
                    if room <= now:
                        ticket = self._admit(self._request_slot(now), prompt_chars, max_output)
                        break
                    # an answer in flight replaces its prompt's estimate with the provider's count: look again soon
                    wait = min(room - now, RECHECK_S) if self.in_flight else room - now
            await asyncio.sleep(wait)
        try:
            while True:  # until the slot; the limits changed or a 429 held the endpoint meanwhile: a new slot
                with self._lock:
                    now = time.monotonic()
                    if ticket.generation != self._generation:
                        ticket.at, ticket.generation = self._request_slot(now), self._generation
                        self._advance(ticket.at)
                    wait = max(ticket.at, self.blocked_until) - now
                if wait <= 0:
                    break
                await asyncio.sleep(min(wait, RECHECK_S))
        except BaseException:  # cancelled while waiting (a timeout, the watchdog): the slot is given up
            self.release(ticket)
            raise
        ticket.waited_s = time.monotonic() - start
        with self._lock:
            self.waited_s += ticket.waited_s
        return ticket

    def _probing(self) -> bool:
        """No limit is known: set, stated by the provider, or learned from a 429."""
        return self.limits() == (None, None)

    def _opening(self) -> int:
        """The calls in flight allowed while no limit is known: one, and one more per answer since."""
        return 1 + self.answered

    def _estimate(self, prompt_chars: int, max_output: int) -> float:
        """The tokens a request holds until its answer says what it used: the prompt's and all of `max_tokens`,
        which providers reserve against a token limit (an unset cap: the answers' mean so far)."""
        return prompt_chars / self.chars_per_token + (max_output or self.output_tokens)

    def _request_slot(self, now: float) -> float:
        """The next free request slot (and not before a 429's hold ends)."""
        at = max(now, self.blocked_until)
        return max(at, self._next_at) if self.limits()[0] else at

    def _token_room(self, now: float, tokens: float) -> float:
        """When the last minute's tokens leave room for `tokens` more (now, if they do)."""
        _, tpm = self.limits()
        self._expire(now)
        at = now
        if tpm:
            room = tpm * SAFETY - tokens
            used = sum(t.tokens for t in self._window)
            for t in self._window:  # the oldest leave first
                if used <= room:
                    break
                used -= t.tokens
                at = max(at, t.at + WINDOW_S * (1 + LATE))
        return at

    def _start_time(self, now: float, tokens: float) -> float:
        return max(self._request_slot(now), self._token_room(now, tokens))

    def _admit(self, at: float, prompt_chars: int, max_output: int) -> Ticket:
        ticket = Ticket(at=at, tokens=self._estimate(prompt_chars, max_output), reserved=float(max_output or 0),
                        generation=self._generation)
        self._advance(at)
        self._window.append(ticket)
        self.in_flight += 1
        return ticket

    def _advance(self, at: float) -> None:
        """A request slot at `at` is taken: the next one is a request interval later."""
        rpm, _ = self.limits()
        if rpm:
            self._next_at = max(self._next_at, at) + WINDOW_S / (rpm * SAFETY)

    def _renew(self, now: float) -> None:
        """The limits changed or the endpoint is held: every waiting request takes a new slot."""
        self._generation += 1
        self._next_at = max(now, self.blocked_until)

    def _expire(self, now: float) -> None:
        while self._window and self._window[0].at <= now - WINDOW_S * (1 + LATE):
            self._window.popleft()

    # ------------------------------------------------------------------ outcomes

    def settle(self, ticket: Ticket, headers: Mapping[str, str] | None, prompt_chars: int,
               input_tokens: int, output_tokens: int) -> None:
        """An answer came: count its real tokens (its prompt's, and its `max_tokens` still held for the minute, or
        what it used if more), learn from its headers."""
        told = read_headers(headers)
        with self._lock:
            self.in_flight -= 1
            now = time.monotonic()
            self._last_ok = now
            self._ok_times.append(now)
            while self._ok_times and self._ok_times[0] <= now - WINDOW_S:
                self._ok_times.popleft()
            if self._probing():
                self.answered += 1
            if input_tokens:
                ticket.tokens = input_tokens + max(output_tokens, ticket.reserved)
                ratio = max(1.0, prompt_chars / input_tokens)
                self.chars_per_token = ratio if not self._counted else 0.8 * self.chars_per_token + 0.2 * ratio
                self.output_tokens = (0.8 * self.output_tokens + 0.2 * output_tokens if self._counted
                                      else float(output_tokens))
                self._counted = True
            self._learn(told, now)
            self._sync(told, now)

    def release(self, ticket: Ticket) -> None:
        """The request failed (not a 429): it still counts in the window, as the provider counts it."""
        with self._lock:
            self.in_flight -= 1

    def throttle(self, ticket: Ticket, headers: Mapping[str, str] | None) -> float:
        """The provider answered 429: hold every call for as long as it says; returns the wait."""
        told = read_headers(headers)
        wait = retry_after(headers)
        with self._lock:
            self.in_flight -= 1
            now = time.monotonic()
            self.throttled += 1
            self._last_429 = now
            if self._streak <= self._last_ok:
                self._streak = now
            self._learn(told, now)
            rpm, tpm = self.limits()
            if wait is None:  # no word from the server: a second, or the pacer's own next slot
                wait = max(WAIT_429_S, self._start_time(now, ticket.tokens) - now)
            if rpm is None and tpm is None:  # limits unknown: pace at what went through
                self._pace_from_429(now, wait)
            elif self.from_429 and self.learned_rpm and now > self._cut_at + max(wait, 1.0):
                self.learned_rpm = max(1.0, self.learned_rpm * 0.8)  # one cut per hold, not per 429 of a burst
                self._cut_at = now
                logger.info("pacer {}: HTTP 429: pacing lowered to {:.0f} requests/min", self.endpoint,
                            self.learned_rpm)
            if now + wait > self.blocked_until:
                self.blocked_until = now + wait
                self._renew(now)
        logger.debug("pacer {}: HTTP 429, every call waits {:.2f} s as the server says", self.endpoint, wait)
        return wait

    def _pace_from_429(self, now: float, wait: float) -> None:
        """A provider that states no limits answered 429: pace at the rate that went through, per second when
        it asks for a short wait (a per-second slice of a minute's limit), else per minute."""
        if wait <= 1.0:
            done = sum(1 for t in self._ok_times if t > now - 1.0) * 60
        else:
            done = len(self._ok_times)
        self.learned_rpm = max(1.0, 0.9 * done) if done else 60.0
        self.from_429, self._cut_at = True, now
        logger.info("pacer {}: HTTP 429 and no limits in the headers: pacing at {:.0f} requests/min", self.endpoint,
                    self.learned_rpm)

    def _sync(self, told: Told, now: float) -> None:
        """The provider counts more tokens in its window than this pacer does (another process on the same key,
        or estimates that ran low): hold the difference in the window as if this process had sent it."""
        _, tpm = self.limits()
        if not tpm or told.tokens_left is None or not told.tpm:
            return
        self._expire(now)
        theirs = told.tpm * self.share - told.tokens_left * self.share
        mine = sum(t.tokens for t in self._window)
        if theirs > mine:
            self._window.append(Ticket(at=now, tokens=theirs - mine))

    def stalled(self, patience_s: float) -> bool:
        """No call to the endpoint was answered for `patience_s` since the 429s began: not backpressure."""
        with self._lock:
            return self._streak > self._last_ok and time.monotonic() - self._streak > patience_s

    def _learn(self, told: Told, now: float) -> None:
        before = (self.learned_rpm, self.learned_tpm)
        if told.rpm:
            self.learned_rpm, self.from_429 = float(told.rpm), False
        elif self.from_429 and self.learned_rpm and now - max(self._last_429, 0.0) > RAISE_AFTER_S:
            self.learned_rpm *= 1.1
            self._last_429 = now
        if told.tpm:
            self.learned_tpm = float(told.tpm)
        # the provider's own count says nothing is left (another process on the same key): wait for its reset
        if told.requests_left == 0 and told.requests_reset_s:
            self.blocked_until = max(self.blocked_until, now + told.requests_reset_s)
        if told.tokens_left == 0 and told.tokens_reset_s:
            self.blocked_until = max(self.blocked_until, now + told.tokens_reset_s)
        if (self.learned_rpm, self.learned_tpm) != before:
            self._renew(now)
        if (self.learned_rpm, self.learned_tpm) != before and (told.rpm or told.tpm):
            rpm, tpm = self.limits()
            logger.info("pacer {}: limits from the provider's headers: {}, {} (pacing at {:.0%} of them{})",
                        self.endpoint, f"{rpm:,.0f} requests/min" if rpm else "no request limit",
                        f"{tpm:,.0f} tokens/min" if tpm else "no token limit", SAFETY,
                        f", this process's share {self.share:.2f}" if self.share != 1 else "")


_pacers: dict[str, Pacer] = {}
_pacers_lock = threading.Lock()
_share = 1.0


def set_share(share: float) -> None:
    """The part of every endpoint's limits this process may use (a Ray worker: 1 / the workers)."""
    global _share
    with _pacers_lock:
        _share = share
        for pacer in _pacers.values():
            pacer.share = share


def pacer_for(endpoint: str, rpm: float | None = None, tpm: float | None = None) -> Pacer:
    """The process's one pacer of `endpoint` (made on first use), with the limits the caller set applied."""
    with _pacers_lock:
        pacer = _pacers.get(endpoint)
        if pacer is None:
            pacer = _pacers[endpoint] = Pacer(endpoint, share=_share)
    pacer.set_limits(rpm, tpm)
    return pacer


def pacers_state() -> tuple[dict[str, Pacer], float]:
    """The process's pacers and its share, to put back with `restore_pacers` (the test suite's fixture)."""
    with _pacers_lock:
        return dict(_pacers), _share


def restore_pacers(state: tuple[dict[str, Pacer], float]) -> None:
    global _share
    with _pacers_lock:
        _pacers.clear()
        _pacers.update(state[0])
        _share = state[1]


def forget_pacers() -> None:
    """Drop every pacer (tests; a new run in the same process keeps what it learned otherwise)."""
    with _pacers_lock:
        _pacers.clear()
