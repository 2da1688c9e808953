"""The one error catalogue: what each surface says about a code is what the catalogue says."""

from __future__ import annotations

import pytest
from agent_memory.api.errors import CALL_REFUSALS, CATALOGUE, ApiError, retryable_status
from agent_memory.core.idempotency import final
from agent_memory.edges.tools.dispatch import TOOLS, tool_refusal


def test_the_statuses_are_the_contracts() -> None:
    assert {c.status for c in CATALOGUE.values()} == {400, 401, 403, 404, 409, 422, 429, 500, 503}
    assert ApiError("memory_leased", "x").status == 409


@pytest.mark.parametrize(("status", "retryable"), [(400, False), (409, False), (429, True), (500, True), (503, True)])
def test_retryable_is_read_by_status(status: int, retryable: bool) -> None:
    assert retryable_status(status) is retryable


def test_a_key_records_only_what_a_retry_could_not_change() -> None:
    for code, known in CATALOGUE.items():
        told = {"tool": "memory_read", "is_error": True, "code": code, "content": "", "data": None}
        assert final(200, told) is not known.retryable, code
        assert ApiError(code, "x").retryable is known.retryable


def test_call_refusals_are_what_no_model_can_fix() -> None:
    assert {
        "not_authenticated",
        "not_authorized",
        "not_found",
        "execution_expired",
        "execution_stopped",
        "internal_error",
    } == CALL_REFUSALS


def test_a_tool_refusal_tells_the_catalogues_next_step() -> None:
    stale = ApiError("stale_object", "It moved.")
    told = tool_refusal("memory_write", stale)
    assert told.content == f"stale_object: It moved. {CATALOGUE['stale_object'].next_step}"
    assert "memory_read again" in told.content
    # The record tools name records: theirs is the record step
    assert TOOLS["memory_append"].records and not TOOLS["memory_write"].records
    record_step = CATALOGUE["stale_object"].record_step
    assert record_step is not None
    assert tool_refusal("memory_append", stale, records=True).content.endswith(record_step)
    # A code with no record step of its own tells the document step, and one with no step tells none
    assert tool_refusal("memory_append", ApiError("memory_full", "Full."), records=True).content.endswith(
        CATALOGUE["memory_full"].next_step
    )
    assert tool_refusal("memory_read", ApiError("storage_busy", "Busy.")).content == "storage_busy: Busy."
