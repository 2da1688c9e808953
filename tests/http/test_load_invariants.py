"""The load run (tests/loadrun.py) in small: concurrent clients through the gateway, then its invariants.

The run itself proves the service under contention; the checker's own tests prove the run would notice a
lost update, a misplaced one or a version nobody was told of, since a green run alone cannot show that.
"""

from __future__ import annotations

import pytest
from agent_memory_sdk.local.runtime import LocalService

from ..loadrun import (
    KINDS,
    AcceptedWrite,
    HistoryVersion,
    check_history,
    premature_refusals,
    render,
    run_load,
    sha256,
)
from ..support import pct

PID = "01a23000-0000-7000-8000-000000000001"


def test_a_small_load_run_keeps_every_invariant_and_really_contends(fresh: LocalService) -> None:
    # When six clients mix reads, conditional writes on shared documents, forks, blocks and capped creates,
    # told the service keeps 16 versions (it keeps 100), so each shared document moves to a new path after
    # a few writes and that path's creation is raced too
    report = run_load(
        fresh.url, clients=6, seconds=4.0, max_requests=400, seed=17, operator_key=fresh.operator_key, versions_kept=16
    )
    inv = report.invariants
    # Then nothing was lost, misplaced or invented, the cap held exactly, and no answer was a 5xx or a surprise
    assert report.ok, render(report)
    assert (inv.lost_updates, inv.out_of_order, inv.unexplained_versions, inv.unverified_writes) == (0, 0, 0, 0)
    assert inv.cap_actual == inv.cap_expected == inv.cap_accepted == 64
    assert (inv.cap_refusals_wrong_code, inv.cap_premature_refusals, inv.five_xx, inv.unexpected_4xx) == (0, 0, 0, 0)
    # And every kind of request really ran, writers really collided and creators really raced past the cap
    assert all(report.kinds[k].count >= 3 for k in KINDS), render(report)
    assert inv.stale_refusals > 0 and inv.accepted_writes > 0, render(report)
    assert inv.cap_refusals > 0, render(report)
    assert inv.shared_documents > 4, render(report)
    # And the bounds held: requests within the budget, time within the budget plus one slow answer
    assert report.requests <= 400 and report.seconds < 4.0 + 10
    assert sum(report.statuses.values()) == report.requests == sum(k.count for k in report.kinds.values())
    data = report.to_dict()
    assert data["ok"] is True and data["invariants"]["failures"] == []
    assert set(data["kinds"]) == set(KINDS) and set(data["kinds"]["write"]) == {
        "count",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "statuses",
    }


def test_the_run_refuses_unbounded_clients() -> None:
    with pytest.raises(ValueError, match="clients"):
        run_load("http://127.0.0.1:9", clients=33, operator_key="k")
    with pytest.raises(ValueError, match="seconds"):
        run_load("http://127.0.0.1:9", seconds=0, operator_key="k")


# ---- the checker --------------------------------------------------------------------------------------


def write(v: int, text: str, path: str = "conversation/shared/doc-0-g0.md") -> AcceptedWrite:
    return AcceptedWrite(path, PID, v, text)


def version(w: AcceptedWrite, *, at: int | None = None, text: str | None = None) -> HistoryVersion:
    content = w.content if text is None else text
    return HistoryVersion(PID, w.lock_version if at is None else at, sha256(content), content)


WRITES = [write(0, "setup\n"), write(1, "marker a\n"), write(2, "marker b\n"), write(3, "marker c\n")]


def newest_first(versions: list[HistoryVersion]) -> list[HistoryVersion]:
    return sorted(versions, key=lambda h: -h.lock_version)


def newest_first_writes(writes: list[AcceptedWrite]) -> list[AcceptedWrite]:
    return sorted(writes, key=lambda w: -w.lock_version)


def test_a_history_holding_every_accepted_write_in_order_passes() -> None:
    check = check_history(WRITES, newest_first([version(w) for w in WRITES]))
    assert (check.lost_updates, check.out_of_order, check.unexplained_versions) == (0, 0, 0)


def test_an_accepted_write_missing_from_the_history_is_a_lost_update() -> None:
    # Given a history where b's version holds c's text, as a last-writer-wins overwrite would leave it
    a, _b, c = WRITES[1:]
    history = newest_first([version(WRITES[0]), version(a), version(c, at=2)])
    check = check_history(WRITES, history)
    # Then b is lost, c sits where b was promised
    assert check.lost_updates == 1
    assert check.out_of_order == 1
    assert any("accepted v2" in p for p in check.problems), check.problems


def test_a_write_dropped_without_a_trace_is_lost_even_with_only_hashes() -> None:
    history = [HistoryVersion(PID, w.lock_version, w.content_sha256) for w in newest_first_writes(WRITES[:-1])]
    check = check_history(WRITES, history)
    assert (check.lost_updates, check.out_of_order, check.unexplained_versions) == (1, 0, 0)


def test_a_version_nobody_was_told_of_is_unexplained() -> None:
    ghost = HistoryVersion(PID, 4, sha256("ghost\n"), "ghost\n")
    check = check_history(WRITES, [ghost, *newest_first([version(w) for w in WRITES])])
    assert (check.lost_updates, check.out_of_order, check.unexplained_versions) == (0, 0, 1)


def test_swapped_versions_are_out_of_order_and_different_text_under_the_same_hash_is_caught() -> None:
    a, b = WRITES[1], WRITES[2]
    swapped = newest_first([version(WRITES[0]), version(a, at=2), version(b, at=1), version(WRITES[3])])
    assert check_history(WRITES, swapped).out_of_order == 2
    # A listing that is not newest first is out of order too
    assert check_history(WRITES, [version(w) for w in WRITES]).out_of_order == 3
    # A version whose text differs from what was written is no proof of the write
    forged = HistoryVersion(PID, 1, a.content_sha256, "marker A\n")
    history = newest_first([version(WRITES[0]), forged, version(b), version(WRITES[3])])
    check = check_history(WRITES, history)
    assert (check.lost_updates, check.unexplained_versions) == (1, 1)


def test_writes_older_than_a_full_history_are_unverified_not_lost() -> None:
    writes = [write(v, f"marker {v}\n") for v in range(10)]
    kept = newest_first([version(w) for w in writes[6:]])
    pruned = check_history(writes, kept, versions_kept=4)
    assert (pruned.lost_updates, pruned.unverified_writes) == (0, 6)
    # But a history shorter than the bound had no reason to drop them
    assert check_history(writes, kept, versions_kept=5).lost_updates == 6


def test_a_cap_refusal_answered_before_an_accepted_create_was_sent_is_premature() -> None:
    accepted = [(0.0, 1.0), (1.5, 2.0)]
    assert premature_refusals([(0.5, 1.2)], accepted) == 1
    assert premature_refusals([(1.0, 1.6)], accepted) == 0
    assert premature_refusals([(0.0, 0.1)], []) == 0


def test_percentiles_are_nearest_rank_as_the_bench_publishes() -> None:
    values = [float(v) for v in (5, 1, 9, 3, 7, 2, 8, 4, 6, 10, 11)]
    # rank ceil(p/100 * 11) of the sorted values: p50 is the 6th, p95 and p99 the 11th, p1 and p0 the 1st
    expected = {0: 1.0, 1: 1.0, 50: 6.0, 95: 11.0, 99: 11.0, 100: 11.0}
    assert {p: pct(values, p) for p in expected} == expected
    assert pct([], 50) == 0.0
