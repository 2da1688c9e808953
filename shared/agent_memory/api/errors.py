"""The one error catalogue: every refusal the service can give, with its HTTP status.

Domain and storage code raise `ApiError(code, message)`; only the HTTP glue turns it into a response,
and the Python client turns a response back into the matching exception class. Adding a code here is
the only way to add one anywhere.
"""

from __future__ import annotations

from typing import Any

# code -> HTTP status. Grouped as the seeds' status tables group them.
CATALOGUE: dict[str, int] = {
    "parameter_missing": 400,
    "parameter_invalid": 400,
    "not_authenticated": 401,
    "not_authorized": 403,
    "memory_read_only": 403,
    "memory_reserved_prefix": 403,
    "not_found": 404,
    "memory_not_found": 404,
    "memory_version_not_found": 404,
    "store_entry_not_found": 404,
    "stale_object": 409,
    "conversation_archived": 409,
    "execution_expired": 409,
    "execution_stopped": 409,
    "memory_overridden": 409,
    "memory_version_redacted": 409,
    "memory_version_current": 409,
    "memory_quarantined": 409,
    "already_exists": 409,
    "memory_name_taken": 409,
    "memory_leased": 409,
    "idempotency_conflict": 409,
    "idempotency_in_progress": 409,
    "merge_conflict": 409,
    "memory_path_invalid": 422,
    "memory_scope_unavailable": 422,
    "memory_edit_not_found": 422,
    "memory_edit_ambiguous": 422,
    "memory_full": 422,
    "memory_document_too_large": 422,
    "memory_content_invalid": 422,
    "skill_description_required": 422,
    "memory_description_invalid": 422,
    "skill_name_invalid": 422,
    "skill_scope_unavailable": 422,
    "validation_failed": 422,
    "memory_pii_blocked": 422,
    "memory_name_invalid": 422,
    "memory_source_unavailable": 422,
    "store_full": 422,
    "store_entry_too_large": 422,
    "rate_limited": 429,
    "internal_error": 500,
    "memory_content_missing": 500,
    "storage_busy": 503,
    "storage_unavailable": 503,
}


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
        return CATALOGUE[self.code]

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}

    def __repr__(self) -> str:
        return f"ApiError({self.code!r}, {self.message!r})"


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
