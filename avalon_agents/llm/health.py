"""Whether a model is answering at all: a run whose calls mostly fail stops early instead of becoming hours of
fallbacks.

Every client of one model spec shares one `ModelHealth` (the pool hands it out with the call limit). A call that
fails with an error no retry can fix (a wrong key, a refused parameter, an unknown model: HTTP 400, 401, 403,
404) before any call of that model succeeded, a quota used up (OpenAI's `insufficient_quota` 429), a
failure share above `max_failed` after `min_calls` calls, or `max_in_a_row` failed calls one after another
(a server that died mid-run), makes the next call raise `ModelUnusable`, which no agent catches: the game
stops unfinished (it is replayed on resume) and the command ends with one line quoting the server's error.

A server that accepts connections and answers nothing is found by the time it is silent, not by its failed
calls (the first calls wait three timeouts each, so ten of them in a row would take hours): while calls wait
for it and nothing came back from it, not even an error, for `hang_limit(timeout)` (five minutes at the
default 60 s timeout), every waiting call stops with `ModelUnusable` ("answered nothing for ..."), from the
first call on, in every command that calls a model (LLMClient watches it, see `LLMClient._timed`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from avalon_agents.errors import Unusable

FATAL_STATUS = {400, 401, 403, 404}
"""Errors a retry cannot fix (the same request gets the same answer), as HTTP statuses (llm.http's ServerError)."""


def fatal_errors() -> tuple[type[BaseException], ...]:
    """The same as openai's errors (imported only when a call has failed, so loading this module loads no
    provider package)."""
    import openai

    return (openai.BadRequestError, openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)


def fatal(error: BaseException) -> bool:
    return isinstance(error, fatal_errors()) or getattr(error, "status", None) in FATAL_STATUS


def quota_gone(error: BaseException) -> bool:
    """OpenAI's `insufficient_quota`: a 429 that says the account's money is used up, which no wait fixes."""
    return getattr(error, "code", None) == "insufficient_quota" or "insufficient_quota" in str(error)


HANG_S = 300.0
"""A server that answers nothing for this long while calls wait for it is hung (or for HANG_TIMEOUTS timeouts, if
that is less)."""
HANG_TIMEOUTS = 5


def hang_limit(timeout: float) -> float:
    """Seconds a server may answer nothing while calls wait before it counts as hung: five minutes, or five
    timeouts if that is less (a test's short timeout). The same for the embedded model, whose 900 s timeout
    is its calls' wait behind one another, not the time of one answer: a model whose one answer takes over
    five minutes, with nothing else answered meanwhile, counts as hung."""
    return min(HANG_S, HANG_TIMEOUTS * timeout)


class LLMCallFailed(RuntimeError):
    """Every attempt of a call failed; the failure is already in the trace (defined here, beside the model's
    health, so code that only catches it loads no model client)."""


class ModelUnusable(Unusable):
    """The model's calls fail in a way that would make the rest of the run fallbacks. One line, the server's
    message quoted."""


@dataclass
class ModelHealth:
    """Calls and failures of one model spec across the run.

    Args:
        spec: the model spec.
        max_failed: the failure share above which the model counts as unusable (once `min_calls` were made).
        min_calls: calls before the share is judged.
    """

    spec: str
    max_failed: float = 0.5
    min_calls: int = 20
    max_in_a_row: int = 10
    """Calls failed one after another that stop the run at once (a server that died or hangs mid-run, after
    hours of answers that keep the run's share low)."""
    calls: int = 0
    failed: int = 0
    ok: int = 0
    in_a_row: int = 0
    verdict: str | None = None
    causes: dict[str, int] = field(default_factory=dict)
    waiting: int = 0
    """Requests sent to the server and not yet come back."""
    quiet_s: float = 0.0
    """Seconds requests waited since the server last answered anything (an error status too), up to `_since`
    (the time no request waits is not counted: a game between calls)."""
    _since: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def check(self) -> None:
        """Raise ModelUnusable if this model was found unusable."""
        if self.verdict is not None:
            raise ModelUnusable(self.verdict)

    def sent(self) -> None:
        """A request went to the server."""
        with self._lock:
            if self.waiting == 0:
                self._since = time.monotonic()
            self.waiting += 1

    def came_back(self, heard: bool) -> None:
        """A request came back: `heard`, the server answered (an answer or an error status), or not (a timeout,
        a broken connection)."""
        with self._lock:
            now = time.monotonic()
            self.waiting -= 1
            if heard:
                self.quiet_s, self._since = 0.0, now
            elif self.waiting == 0:
                self.quiet_s += now - self._since

    def quiet_left(self, limit_s: float) -> float:
        """Seconds of waiting left until the server's silence reaches `limit_s`."""
        with self._lock:
            quiet = self.quiet_s + (time.monotonic() - self._since if self.waiting else 0.0)
            return limit_s - quiet

    def hung(self, limit_s: float) -> bool:
        """Requests waited `limit_s` with nothing from the server: it is hung (the verdict says so)."""
        if self.quiet_left(limit_s) > 0:
            return False
        if self.verdict is None:
            self.verdict = (f"model: {self.spec} answered nothing for {limit_s:g} s while calls waited for it (the "
                            "server accepts connections but does not answer)")
        return True

    def record(self, error: BaseException | None) -> None:
        """Count one finished call (`error` None: it succeeded)."""
        self.calls += 1
        if error is None:
            self.ok += 1
            self.in_a_row = 0
            return
        self.failed += 1
        self.in_a_row += 1
        cause = type(error).__name__
        self.causes[cause] = self.causes.get(cause, 0) + 1
        message = " ".join(str(error).split())[:300]
        if quota_gone(error):
            self.verdict = f"model: {self.spec} has no quota left ({cause}: {message})"
        elif fatal(error) and self.ok == 0:
            self.verdict = f"model: {self.spec} refused the first calls ({cause}: {message})"
        elif self.calls >= self.min_calls and self.failed / self.calls > self.max_failed:
            self.verdict = (f"model: {self.failed} of {self.calls} calls to {self.spec} failed "
                            f"(last: {cause}: {message})")
        elif self.in_a_row >= self.max_in_a_row:
            self.verdict = (f"model: the last {self.in_a_row} calls to {self.spec} failed one after another "
                            f"(last: {cause}: {message})")
