"""The standing rules moved into the access policy, read on model values alone (no store, no HTTP)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import pytest
from agent_memory.api.errors import ApiError
from agent_memory.core import access
from agent_memory.core.bindings import Binding
from agent_memory.core.model import Author, Principal, Quarantine, TypedRecord, Workspace

ACCOUNT = "acct"
WS = Workspace("ws-1", ACCOUNT, "room", "2026-01-01T00:00:00.000Z")
ALICE = Principal("human", "alice", ACCOUNT)
BOB = Principal("human", "bob", ACCOUNT)


def _record(
    author: Principal, *, visibility: str = "workspace", pending: bool = False, ws: str = WS.public_id
) -> TypedRecord:
    quarantine = Quarantine("pending", ("rule",), "v1") if pending else None
    return TypedRecord(
        "rec-1",
        ws,
        "Workspace",
        "fact",
        "text",
        Author(author.kind, author.public_id),
        "2026-01-01T00:00:00.000Z",
        "2026-01-01T00:00:00.000Z",
        visibility=visibility,
        quarantine=quarantine,
    )


def _refusal(call: Callable[[], object]) -> str:
    with pytest.raises(ApiError) as err:
        call()
    return err.value.code


@pytest.mark.parametrize(
    ("role", "standing"), [("curator", "write"), ("member", "write"), ("viewer", "read"), (None, None)]
)
def test_role_standing(role: str | None, standing: str | None) -> None:
    assert access.role_standing(role) == standing


def test_workspace_write_needs_a_writing_role() -> None:
    access.require_workspace_write("member")
    access.require_workspace_write("curator")
    assert _refusal(lambda: access.require_workspace_write("viewer")) == "not_authorized"


def test_records_private_and_quarantined() -> None:
    mine = _record(ALICE, visibility="private")
    assert access.sees_record(ALICE, WS, "viewer", mine)
    assert not access.sees_record(BOB, WS, "curator", mine)
    waiting = _record(ALICE, pending=True)
    assert access.sees_record(BOB, WS, "curator", waiting)
    assert not access.sees_record(ALICE, WS, "member", waiting)
    assert not access.sees_record(ALICE, WS, "curator", _record(ALICE, ws="ws-2"))
    assert not access.sees_record(ALICE, WS, "curator", None)


@pytest.mark.parametrize("what", ["version", "record"])
def test_review_is_another_curators(what: Literal["version", "record"]) -> None:
    writer = Author("human", ALICE.public_id)
    access.reviews(BOB, "curator", writer, what)
    with pytest.raises(ApiError, match="Only a curator") as err:
        access.reviews(BOB, "member", writer, what)
    assert err.value.code == "not_authorized"
    with pytest.raises(ApiError, match=f"You wrote this {what}"):
        access.reviews(ALICE, "curator", writer, what)
    # An agent with the same public id as no one: kinds are compared too.
    access.reviews(Principal("agent", ALICE.public_id, ACCOUNT), "curator", writer, what)


def test_writing_through_a_mount_needs_write_standing() -> None:
    access.grants_write("write", "mounts[0]", "a readwrite mount", "notes")
    with pytest.raises(ApiError, match=r"mounts\[0\]: a readwrite mount needs write access to Memory 'notes'\."):
        access.grants_write("read", "mounts[0]", "a readwrite mount", "notes")


@pytest.mark.parametrize(
    ("bound", "standing", "writable"),
    [
        ("read_write", "write", True),
        ("read_write", "read", False),
        ("read_write", None, False),
        ("read", "write", False),
    ],
)
def test_a_binding_writes_only_with_write_standing(
    bound: Literal["read", "read_write"], standing: access.Standing | None, writable: bool
) -> None:
    binding = Binding("notes", "conversation", bound)
    assert access.writes_through(binding, standing) is writable
