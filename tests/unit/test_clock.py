"""The one clock: what it reads, how an instant is spelled and read back, and holding it in a test."""

from __future__ import annotations

import time

import pytest
from agent_memory.core import clock, ids


def test_held_time_is_what_every_reader_sees_then_it_runs_again() -> None:
    at = 1_800_000_000.25
    with clock.held(at) as c:
        assert clock.now() == at
        assert clock.now_iso() == ids.now_iso() == "2027-01-15T08:00:00.250Z"
        c.advance(3600)
        assert clock.now() == at + 3600
    assert abs(clock.now() - time.time()) < 5


def test_the_stored_spelling_round_trips() -> None:
    stamp = clock.iso_of(1_700_000_000.123456)
    assert stamp == "2023-11-14T22:13:20.123Z"
    assert clock.epoch_of(stamp) == pytest.approx(1_700_000_000.123)


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2026-03-01", "2026-03-01T00:00:00.000Z"),
        ("2026-03-01T10:00:00z", "2026-03-01T10:00:00.000Z"),
        (" 2026-03-01T10:00:00+02:00 ", "2026-03-01T08:00:00.000Z"),
        ("2026-03-01T10:00:00.98765", "2026-03-01T10:00:00.987Z"),
    ],
)
def test_instants_are_read_as_utc(given: str, stored: str) -> None:
    assert clock.iso(clock.parse_iso(given)) == stored


def test_not_an_instant() -> None:
    with pytest.raises(ValueError):
        clock.parse_iso("next tuesday")
