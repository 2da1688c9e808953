"""The one error catalogue: every refusal the service can give, and everything said about each code.

Domain and storage code raise `ApiError(code, message)`; only the HTTP glue turns it into a response,
and the Python client turns a response back into the matching exception class. Adding a code here is
the only way to add one anywhere, and whatever a surface says about a code (its HTTP status, whether a
retry may succeed, whether a model can deal with it, the next step a model is told) is read from here.
This module imports nothing but the standard library: the client and the contract read it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def retryable_status(status: int) -> bool:
    """Whether the same request may succeed later: the client resends it, and an Idempotency-Key does not
    record it as the key's answer (5xx and 429 say the service, not the request, was the trouble). Read
    by HTTP status too, since a proxy's or gateway's own answer carries no code."""
    return status >= 500 or status == 429


def resend_may_help(status: int, code: str | None) -> bool:
    """Whether a client should send the same request again: a retryable status, unless the body's code is a
    permanent fault (the same bytes would fail the same way)."""
    known = CATALOGUE.get(code or "")
    return retryable_status(status) and not (known is not None and known.permanent)


@dataclass(frozen=True, slots=True)
class Code:
    """What is known of one refusal code."""

    status: int
    # Whether a model can deal with it itself (change its call, call again, carry on without): a tool
    # surface then tells it the refusal as the call's result. When False the refusal is of the call
    # (who calls, through which execution) or a fault of ours, and a tool surface raises it to the
    # program running the model instead.
    model_fixable: bool = True
    # What a model is told to do next when a tool call is refused with this code ("": nothing to add).
    next_step: str = ""
    # The record tools' own next step, where theirs differs (they name records, not documents).
    record_step: str | None = None
    # A fault of ours that resending cannot clear (a person must act: restore an object, write it again), so
    # clients do not resend it. Like every 5xx it is still not recorded as an Idempotency-Key's answer, so the
    # same key succeeds once the fault is repaired.
    permanent: bool = False

    @property
    def retryable(self) -> bool:
        return retryable_status(self.status)

    def step(self, *, records: bool = False) -> str:
        return self.record_step if records and self.record_step is not None else self.next_step


_FIX_INPUT = "Fix the input and call again."

# Grouped as the seeds' status tables group them. The next steps' rule for stale writes is the
# important one: never re-apply an old change to a newly fetched pair without looking at the new text.
CATALOGUE: Mapping[str, Code] = {
    "parameter_missing": Code(400, next_step="Add the missing field and call again."),
    "parameter_invalid": Code(400, next_step=_FIX_INPUT),
    "not_authenticated": Code(401, model_fixable=False),
    "not_authorized": Code(403, model_fixable=False, next_step="You cannot do this here; do not retry it."),
    "memory_read_only": Code(
        403,
        next_step="This root or mount is read-only for you here; write under a read_write root or a "
        "readwrite mount (memory_ls lists them).",
        record_step="The workspace is read-only for you here: you may search its records, not append.",
    ),
    "memory_reserved_prefix": Code(
        403,
        next_step="skills/ documents are written by people, not by you; keep your notes under another path, "
        "such as conversation/notes.md.",
    ),
    "not_found": Code(
        404,
        model_fixable=False,
        record_step="No record with that id is visible to you: find the one you mean with memory_search.",
    ),
    "memory_not_found": Code(
        404,
        next_step="Call memory_ls to see which documents exist; to create this one, call memory_write with "
        "expected_public_id and expected_lock_version set to null.",
    ),
    "memory_version_not_found": Code(404),
    "store_entry_not_found": Code(404),
    "stale_object": Code(
        409,
        next_step="Call memory_read again, decide your change against the current text, then retry with the new "
        "expected_public_id and expected_lock_version (null/null only creates a document that does not exist).",
        record_step="That record was superseded already: find its successor with memory_search "
        "(include_superseded true shows superseded_by), and supersede the successor instead.",
    ),
    "conversation_archived": Code(409),
    "execution_expired": Code(409, model_fixable=False),
    "execution_stopped": Code(409, model_fixable=False),
    "memory_overridden": Code(
        409, next_step="This workspace's memory is served by another provider: use that provider's tools."
    ),
    "memory_version_redacted": Code(409),
    "memory_version_current": Code(409),
    "memory_quarantined": Code(409, next_step="Carry on without this document; a person will review it."),
    "already_exists": Code(409),
    "memory_name_taken": Code(409),
    "memory_leased": Code(409),
    "idempotency_conflict": Code(409),
    "idempotency_in_progress": Code(409),
    "merge_conflict": Code(409),
    "memory_path_invalid": Code(
        422,
        next_step="Start the path with a root, such as conversation/notes.md or workspace/notes.md, or give an "
        "absolute path to a file inside a mount, such as /workspace/runbooks/deploy.md.",
    ),
    "memory_scope_unavailable": Code(
        422,
        next_step="That root or path is not available in this execution; memory_ls lists the roots and mounts "
        "you have.",
        record_step="This execution does not reach the workspace's records; carry on without them.",
    ),
    "memory_edit_not_found": Code(
        422, next_step="Call memory_read and copy the passage exactly, including spaces and line breaks."
    ),
    "memory_edit_ambiguous": Code(
        422, next_step="Include more of the surrounding text in old_text so it occurs exactly once."
    ),
    "memory_full": Code(422, next_step="Delete or merge a document under this root before creating another."),
    "memory_document_too_large": Code(
        422, next_step="Shorten the document or split it into several; each holds at most 64 KiB."
    ),
    "memory_content_invalid": Code(422, next_step="Send the text as a string."),
    "skill_description_required": Code(422),
    "memory_description_invalid": Code(422),
    "skill_name_invalid": Code(422, next_step="Use a skill name exactly as your skills list shows it."),
    "skill_scope_unavailable": Code(422, next_step="Skills are not kept per conversation."),
    "validation_failed": Code(422, next_step="Fix the input as the message says and call again."),
    "memory_pii_blocked": Code(422),
    "memory_name_invalid": Code(422),
    "memory_source_unavailable": Code(422),
    "store_full": Code(422),
    "store_entry_too_large": Code(422),
    "rate_limited": Code(429),
    "internal_error": Code(500, model_fixable=False),
    "memory_content_missing": Code(500),
    # Bytes that no longer match the hash recorded when they were written: never served. A retry reads the
    # same object, so only a person (restoring the object, or writing the document again) fixes it.
    "memory_content_corrupt": Code(
        500,
        permanent=True,
        next_step="This document's stored text failed its integrity check and is not shown: do not retry; "
        "carry on without it, or tell a person so they can restore it or write it again.",
    ),
    "storage_busy": Code(503),
    "storage_unavailable": Code(503),
}

# Refusals of the call, not of what it asks: no model gets past them by changing its input.
CALL_REFUSALS: frozenset[str] = frozenset(c for c, known in CATALOGUE.items() if not known.model_fixable)


class ApiError(Exception):
    """A refusal with a catalogued code and a sentence a person understands."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        if code not in CATALOGUE:
            raise ValueError(f"uncatalogued error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    @property
    def status(self) -> int:
        return CATALOGUE[self.code].status

    @property
    def retryable(self) -> bool:
        return CATALOGUE[self.code].retryable

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}

    def __repr__(self) -> str:
        return f"ApiError({self.code!r}, {self.message!r})"


def content_corrupt(path: str, lock_version: int) -> ApiError:
    """Stored bytes that differ from the hash their version recorded (edited, truncated or swapped behind us)."""
    return ApiError(
        "memory_content_corrupt",
        f"The stored text of {path!r} version {lock_version} does not match the hash recorded when it was "
        "written, so it is not served. Ask an operator to restore the object, or write the document again "
        "with its expected_public_id and expected_lock_version.",
        path=path,
        lock_version=lock_version,
    )


def stale(
    message: str = "The document changed since you read it: read it again, then retry with the new "
    "expected_public_id and expected_lock_version.",
) -> ApiError:
    return ApiError("stale_object", message)


def version_not_found(lock_version: int) -> ApiError:
    return ApiError(
        "memory_version_not_found",
        f"This document has no version {lock_version} in its history (the history keeps the most recent "
        "versions only): list the versions to see which exist.",
    )


def version_redacted(lock_version: int) -> ApiError:
    return ApiError(
        "memory_version_redacted",
        f"Version {lock_version} was redacted: its text is gone, so it cannot be restored or promoted.",
    )


def quarantined(path: str) -> ApiError:
    return ApiError(
        "memory_quarantined",
        f"{path} holds a version that resembles prompt injection and is waiting for a person to review it, "
        "so it is not shown to a model.",
    )


def destination_taken(path: str) -> ApiError:
    """A rename onto a path that holds a document: a rename never replaces one."""
    return ApiError("already_exists", f"There is already a document at {path!r}: a rename never replaces one.")
