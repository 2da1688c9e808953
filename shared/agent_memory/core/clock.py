"""The one clock: the wall time every rule reads, and the one spelling of an instant.

Stored instants are ISO 8601 UTC with milliseconds ('2026-01-01T00:00:00.000Z'); expiries, leases and
DynamoDB's TTL are epoch seconds. Everything in the service takes "now" from `now()` and turns one form
into the other here, so a test can hold the time (`held`) instead of patching each place that reads it.
Durations and pacing use `time.monotonic`, which no test needs to set and no row stores.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime


class Clock:
    """Wall time, or the time a test set."""

    def __init__(self) -> None:
        self._at: float | None = None
        self._lock = threading.Lock()

    def now(self) -> float:
        at = self._at
        return time.time() if at is None else at

    def set(self, at: float | None) -> None:
        """Hold the time at `at` epoch seconds; None lets it run again."""
        with self._lock:
            self._at = at

    def advance(self, seconds: float) -> None:
        """Move a held time on (or start holding it, from now)."""
        with self._lock:
            self._at = (time.time() if self._at is None else self._at) + seconds


CLOCK = Clock()


def now() -> float:
    """Epoch seconds, as the service sees them."""
    return CLOCK.now()


@contextmanager
def held(at: float) -> Iterator[Clock]:
    """The time held at `at` for the block (a test's), then running again."""
    CLOCK.set(at)
    try:
        yield CLOCK
    finally:
        CLOCK.set(None)


def iso(moment: datetime) -> str:
    """The stored spelling of an instant: UTC, milliseconds (truncated), 'Z'."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_of(epoch: float) -> str:
    return iso(datetime.fromtimestamp(epoch, UTC))


def now_iso() -> str:
    """Now, as stored: fine enough to order documents newest-first."""
    return iso_of(now())


def parse_iso(text: str) -> datetime:
    """An ISO 8601 date or date-time ('Z' or 'z' for UTC; one without an offset is read as UTC).
    Raises ValueError when it is not one."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def epoch_of(text: str) -> float:
    """Epoch seconds of an ISO 8601 instant."""
    return parse_iso(text).timestamp()
