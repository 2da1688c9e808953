"""A Python client for the agent memory API: a method per route, an exception class per error code.

Both are generated from the contract by `make template`: the route methods in routes.py (`client.routes`,
named by route), the exception classes in the marked block below. What is written here by hand is the
transport and the helpers that build a route's body from arguments and unwrap its answer.

One return convention for every helper: an answer that is one named object (`{"workspace": {...}}`,
`{"memory": [...]}`, `{"file": {...}}`) is unwrapped to that object; an answer of several parts (a thing and
its token or its secret shown once, a page and its `next_cursor`, a result and its flags) is returned
whole, as the service sent it; a 204 is None; an export page is its (lines, next cursor). `client.routes`
always answers the body whole. Every option of every route's body is a helper's argument (`mounts` and
`capabilities` of `create_execution` included).

Standard library only (urllib), so an agent runtime can use it without the service's own dependencies,
and importing it costs next to nothing. Every call has a timeout. Retries are limited to requests that
cannot change anything: GETs and the read-only POSTs (show, grep, the memory block, skill loads, the
read-only model tools), on connection failures, 5xx and 429, with jittered exponential backoff. A write,
edit, delete or any other mutation is sent once: a refused conditional write must reach the caller, who
re-reads and recomputes (retrying an old calculation with a fresh pair would overwrite someone's work),
and a write whose answer was lost may have been applied.

    from agent_memory_sdk import MemoryClient
    from agent_memory_sdk.client import StaleObject

    client = MemoryClient("http://127.0.0.1:3000", token)
    door = client.conversation_memory(ws, conv)
    doc = door.write("conversation/plan.md", "# Plan", NEW)
    try:
        door.edit("conversation/plan.md", "Plan", "Plan v2", doc)
    except StaleObject:
        ...  # read again, redo the change on what you read, send it with the new pair
"""

from __future__ import annotations

import http.client
import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, Final, Literal, TypedDict, cast

from agent_memory.api import contract
from agent_memory.api.errors import resend_may_help

from agent_memory_sdk.routes import Routes

#: name -> (method, path template), read from the route contract the server serves.
ROUTES: Final[dict[str, tuple[str, str]]] = {r.name: (r.method, r.path) for r in contract.ROUTES}

#: POST routes that only read: safe to send twice. Every GET is safe too.
READ_ONLY_POSTS: Final = frozenset(r.name for r in contract.ROUTES if r.method == "POST" and r.safe_to_retry)

#: The model's tools that only read; calling them again changes nothing.
READ_ONLY_TOOLS: Final = contract.READ_ONLY_TOOLS

#: The expectation that creates a document only if its path is absent.
NEW: Final[tuple[None, None]] = (None, None)

#: A conditional write's expectation: NEW, a (public_id, lock_version) pair, or a document as returned
#: by show/write/edit or a listing (its public_id and lock_version are used).
Expected = tuple[str | None, int | None] | Mapping[str, Any]


class _Unset(Enum):
    UNSET = "UNSET"


UNSET: Final = _Unset.UNSET


# ---- exceptions -----------------------------------------------------------------------------------


class MemoryClientError(Exception):
    """Anything this client raises."""


class MemoryConnectionError(MemoryClientError):
    """No answer: the service was unreachable, the connection broke, or the call timed out.

    `may_have_applied` is true for a mutation whose request may have reached the service: read the state
    before deciding to send it again.
    """

    def __init__(self, message: str, *, may_have_applied: bool) -> None:
        super().__init__(message)
        self.may_have_applied = may_have_applied


class MemoryApiError(MemoryClientError):
    """The service answered with a refusal. Each catalogued code has its own subclass."""

    code: str = "unexpected_response"
    status: int = 0

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or type(self).code
        self.status = status or type(self).status
        self.details: dict[str, Any] = dict(details or {})
        #: seconds the service asked us to wait (Retry-After), when it said so
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"{self.code} ({self.status}): {self.message}"


def exception_name(code: str) -> str:
    """stale_object -> StaleObject."""
    return "".join(part.capitalize() for part in code.split("_"))


# ---- generated by .ci/templategen.py from api/errors.CATALOGUE (`make template`): do not edit ----


class ParameterMissing(MemoryApiError):
    """The service refused with `parameter_missing` (HTTP 400)."""

    code = "parameter_missing"
    status = 400


class ParameterInvalid(MemoryApiError):
    """The service refused with `parameter_invalid` (HTTP 400)."""

    code = "parameter_invalid"
    status = 400


class NotAuthenticated(MemoryApiError):
    """The service refused with `not_authenticated` (HTTP 401)."""

    code = "not_authenticated"
    status = 401


class NotAuthorized(MemoryApiError):
    """The service refused with `not_authorized` (HTTP 403)."""

    code = "not_authorized"
    status = 403


class MemoryReadOnly(MemoryApiError):
    """The service refused with `memory_read_only` (HTTP 403)."""

    code = "memory_read_only"
    status = 403


class MemoryReservedPrefix(MemoryApiError):
    """The service refused with `memory_reserved_prefix` (HTTP 403)."""

    code = "memory_reserved_prefix"
    status = 403


class NotFound(MemoryApiError):
    """The service refused with `not_found` (HTTP 404)."""

    code = "not_found"
    status = 404


class MemoryNotFound(MemoryApiError):
    """The service refused with `memory_not_found` (HTTP 404)."""

    code = "memory_not_found"
    status = 404


class MemoryVersionNotFound(MemoryApiError):
    """The service refused with `memory_version_not_found` (HTTP 404)."""

    code = "memory_version_not_found"
    status = 404


class StoreEntryNotFound(MemoryApiError):
    """The service refused with `store_entry_not_found` (HTTP 404)."""

    code = "store_entry_not_found"
    status = 404


class StaleObject(MemoryApiError):
    """The service refused with `stale_object` (HTTP 409)."""

    code = "stale_object"
    status = 409


class ConversationArchived(MemoryApiError):
    """The service refused with `conversation_archived` (HTTP 409)."""

    code = "conversation_archived"
    status = 409


class ExecutionExpired(MemoryApiError):
    """The service refused with `execution_expired` (HTTP 409)."""

    code = "execution_expired"
    status = 409


class ExecutionStopped(MemoryApiError):
    """The service refused with `execution_stopped` (HTTP 409)."""

    code = "execution_stopped"
    status = 409


class MemoryOverridden(MemoryApiError):
    """The service refused with `memory_overridden` (HTTP 409)."""

    code = "memory_overridden"
    status = 409


class MemoryVersionRedacted(MemoryApiError):
    """The service refused with `memory_version_redacted` (HTTP 409)."""

    code = "memory_version_redacted"
    status = 409


class MemoryVersionCurrent(MemoryApiError):
    """The service refused with `memory_version_current` (HTTP 409)."""

    code = "memory_version_current"
    status = 409


class MemoryQuarantined(MemoryApiError):
    """The service refused with `memory_quarantined` (HTTP 409)."""

    code = "memory_quarantined"
    status = 409


class AlreadyExists(MemoryApiError):
    """The service refused with `already_exists` (HTTP 409)."""

    code = "already_exists"
    status = 409


class MemoryNameTaken(MemoryApiError):
    """The service refused with `memory_name_taken` (HTTP 409)."""

    code = "memory_name_taken"
    status = 409


class MemoryLeased(MemoryApiError):
    """The service refused with `memory_leased` (HTTP 409)."""

    code = "memory_leased"
    status = 409


class IdempotencyConflict(MemoryApiError):
    """The service refused with `idempotency_conflict` (HTTP 409)."""

    code = "idempotency_conflict"
    status = 409


class IdempotencyInProgress(MemoryApiError):
    """The service refused with `idempotency_in_progress` (HTTP 409)."""

    code = "idempotency_in_progress"
    status = 409


class MergeConflict(MemoryApiError):
    """The service refused with `merge_conflict` (HTTP 409)."""

    code = "merge_conflict"
    status = 409


class MemoryPathInvalid(MemoryApiError):
    """The service refused with `memory_path_invalid` (HTTP 422)."""

    code = "memory_path_invalid"
    status = 422


class MemoryScopeUnavailable(MemoryApiError):
    """The service refused with `memory_scope_unavailable` (HTTP 422)."""

    code = "memory_scope_unavailable"
    status = 422


class MemoryEditNotFound(MemoryApiError):
    """The service refused with `memory_edit_not_found` (HTTP 422)."""

    code = "memory_edit_not_found"
    status = 422


class MemoryEditAmbiguous(MemoryApiError):
    """The service refused with `memory_edit_ambiguous` (HTTP 422)."""

    code = "memory_edit_ambiguous"
    status = 422


class MemoryFull(MemoryApiError):
    """The service refused with `memory_full` (HTTP 422)."""

    code = "memory_full"
    status = 422


class MemoryDocumentTooLarge(MemoryApiError):
    """The service refused with `memory_document_too_large` (HTTP 422)."""

    code = "memory_document_too_large"
    status = 422


class MemoryContentInvalid(MemoryApiError):
    """The service refused with `memory_content_invalid` (HTTP 422)."""

    code = "memory_content_invalid"
    status = 422


class SkillDescriptionRequired(MemoryApiError):
    """The service refused with `skill_description_required` (HTTP 422)."""

    code = "skill_description_required"
    status = 422


class MemoryDescriptionInvalid(MemoryApiError):
    """The service refused with `memory_description_invalid` (HTTP 422)."""

    code = "memory_description_invalid"
    status = 422


class SkillNameInvalid(MemoryApiError):
    """The service refused with `skill_name_invalid` (HTTP 422)."""

    code = "skill_name_invalid"
    status = 422


class SkillScopeUnavailable(MemoryApiError):
    """The service refused with `skill_scope_unavailable` (HTTP 422)."""

    code = "skill_scope_unavailable"
    status = 422


class ValidationFailed(MemoryApiError):
    """The service refused with `validation_failed` (HTTP 422)."""

    code = "validation_failed"
    status = 422


class MemoryPiiBlocked(MemoryApiError):
    """The service refused with `memory_pii_blocked` (HTTP 422)."""

    code = "memory_pii_blocked"
    status = 422


class MemoryNameInvalid(MemoryApiError):
    """The service refused with `memory_name_invalid` (HTTP 422)."""

    code = "memory_name_invalid"
    status = 422


class MemorySourceUnavailable(MemoryApiError):
    """The service refused with `memory_source_unavailable` (HTTP 422)."""

    code = "memory_source_unavailable"
    status = 422


class StoreFull(MemoryApiError):
    """The service refused with `store_full` (HTTP 422)."""

    code = "store_full"
    status = 422


class StoreEntryTooLarge(MemoryApiError):
    """The service refused with `store_entry_too_large` (HTTP 422)."""

    code = "store_entry_too_large"
    status = 422


class RateLimited(MemoryApiError):
    """The service refused with `rate_limited` (HTTP 429)."""

    code = "rate_limited"
    status = 429


class InternalError(MemoryApiError):
    """The service refused with `internal_error` (HTTP 500)."""

    code = "internal_error"
    status = 500


class MemoryContentMissing(MemoryApiError):
    """The service refused with `memory_content_missing` (HTTP 500)."""

    code = "memory_content_missing"
    status = 500


class MemoryContentCorrupt(MemoryApiError):
    """The service refused with `memory_content_corrupt` (HTTP 500)."""

    code = "memory_content_corrupt"
    status = 500


class StorageBusy(MemoryApiError):
    """The service refused with `storage_busy` (HTTP 503)."""

    code = "storage_busy"
    status = 503


class StorageUnavailable(MemoryApiError):
    """The service refused with `storage_unavailable` (HTTP 503)."""

    code = "storage_unavailable"
    status = 503


#: code -> exception class, one per catalogued code.
ERRORS: Final[dict[str, type[MemoryApiError]]] = {
    "parameter_missing": ParameterMissing,
    "parameter_invalid": ParameterInvalid,
    "not_authenticated": NotAuthenticated,
    "not_authorized": NotAuthorized,
    "memory_read_only": MemoryReadOnly,
    "memory_reserved_prefix": MemoryReservedPrefix,
    "not_found": NotFound,
    "memory_not_found": MemoryNotFound,
    "memory_version_not_found": MemoryVersionNotFound,
    "store_entry_not_found": StoreEntryNotFound,
    "stale_object": StaleObject,
    "conversation_archived": ConversationArchived,
    "execution_expired": ExecutionExpired,
    "execution_stopped": ExecutionStopped,
    "memory_overridden": MemoryOverridden,
    "memory_version_redacted": MemoryVersionRedacted,
    "memory_version_current": MemoryVersionCurrent,
    "memory_quarantined": MemoryQuarantined,
    "already_exists": AlreadyExists,
    "memory_name_taken": MemoryNameTaken,
    "memory_leased": MemoryLeased,
    "idempotency_conflict": IdempotencyConflict,
    "idempotency_in_progress": IdempotencyInProgress,
    "merge_conflict": MergeConflict,
    "memory_path_invalid": MemoryPathInvalid,
    "memory_scope_unavailable": MemoryScopeUnavailable,
    "memory_edit_not_found": MemoryEditNotFound,
    "memory_edit_ambiguous": MemoryEditAmbiguous,
    "memory_full": MemoryFull,
    "memory_document_too_large": MemoryDocumentTooLarge,
    "memory_content_invalid": MemoryContentInvalid,
    "skill_description_required": SkillDescriptionRequired,
    "memory_description_invalid": MemoryDescriptionInvalid,
    "skill_name_invalid": SkillNameInvalid,
    "skill_scope_unavailable": SkillScopeUnavailable,
    "validation_failed": ValidationFailed,
    "memory_pii_blocked": MemoryPiiBlocked,
    "memory_name_invalid": MemoryNameInvalid,
    "memory_source_unavailable": MemorySourceUnavailable,
    "store_full": StoreFull,
    "store_entry_too_large": StoreEntryTooLarge,
    "rate_limited": RateLimited,
    "internal_error": InternalError,
    "memory_content_missing": MemoryContentMissing,
    "memory_content_corrupt": MemoryContentCorrupt,
    "storage_busy": StorageBusy,
    "storage_unavailable": StorageUnavailable,
}
# ---- end of the generated exceptions ----


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: rare enough to fall back on our own backoff


def _code_of(raw: bytes) -> str | None:
    """The error code of a refusal's body, or None (a proxy's or gateway's own page)."""
    try:
        code = json.loads(raw)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return code if isinstance(code, str) else None


def error_from_response(status: int, raw: bytes, retry_after: str | None = None) -> MemoryApiError:
    """The exception for a refusal: by the body's code, else (a proxy's or gateway's own page) by status."""
    code, message, details = None, "", None
    try:
        err = json.loads(raw)["error"]
        code, message, details = err["code"], str(err.get("message", "")), err.get("details")
    except (ValueError, KeyError, TypeError):
        message = raw[:200].decode("utf-8", "replace").strip() or f"HTTP {status}"
    cls = ERRORS.get(code or "")
    if cls is None:
        fallback = {401: "not_authenticated", 429: "rate_limited"}.get(status)
        if fallback is None and status >= 500:
            fallback = "internal_error"
        cls = ERRORS[fallback] if fallback and code is None else MemoryApiError
    return cls(message, code=code, status=status, details=details, retry_after=_retry_after(retry_after))


def expectation(expected: Expected) -> dict[str, Any]:
    """The two expected_* fields of a conditional write, from NEW, a pair, or a document."""
    if isinstance(expected, Mapping):
        return {"expected_public_id": expected["public_id"], "expected_lock_version": expected["lock_version"]}
    public_id, lock_version = expected
    return {"expected_public_id": public_id, "expected_lock_version": lock_version}


def _without_none(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _conditional(
    expected: Expected, expected_context_revision: int | None, speaker_public_id: str | None
) -> dict[str, Any]:
    """What every conditional change carries after its own fields: the expectation, then the optional checks."""
    return {
        **expectation(expected),
        **_without_none(expected_context_revision=expected_context_revision, speaker_public_id=speaker_public_id),
    }


# ---- the client -----------------------------------------------------------------------------------


class MemoryClient:
    """One principal's view of the API. Thread-safe: it keeps no connection between calls."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        *,
        backoff: float = 0.25,
        operator_key: str | None = None,
        user_agent: str = "agent-memory-client",
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive: a call without one can hang a runtime forever")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        self.operator_key = operator_key
        self.user_agent = user_agent
        self._opener = urllib.request.build_opener()
        #: Every route of the contract as a method (generated): what the helpers below are built on.
        self.routes = Routes(self)

    def with_token(self, token: str) -> MemoryClient:
        """The same service and settings, acting as another principal."""
        return MemoryClient(
            self.base_url,
            token,
            self.timeout,
            self.retries,
            backoff=self.backoff,
            operator_key=self.operator_key,
            user_agent=self.user_agent,
        )

    # ---- transport ------------------------------------------------------------------------------

    def call(
        self,
        route: str,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        read_only: bool | None = None,
        ndjson: bool = False,
        text: bool = False,
    ) -> Any:
        """Call a route of `ROUTES` by name; returns the decoded JSON body (None for 204), an export's
        (lines, next cursor) with `ndjson`, or the body as text with `text`."""
        spec = contract.BY_NAME[route]
        path = spec.path.format(**{k: urllib.parse.quote(str(v), safe="") for k, v in (params or {}).items()})
        if read_only is None:
            read_only = spec.safe_to_retry
        keyed = False
        if spec.access in ("write", "operator") and not read_only:
            # Every mutation carries a key of its own, reused on this client's retries: the service then
            # answers a resend of a change that landed with that change's answer, so retrying is safe.
            # A read-only tool call is safe to resend as it is, and a key would have its answer recorded.
            headers = dict(headers or {})
            headers.setdefault("Idempotency-Key", str(uuid.uuid4()))
            keyed = True
        return self.request(
            spec.method,
            path,
            body,
            query=query,
            headers=headers,
            read_only=read_only,
            keyed=keyed,
            ndjson=ndjson,
            text=text,
        )

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        read_only: bool = False,
        keyed: bool = False,
        ndjson: bool = False,
        text: bool = False,
    ) -> Any:
        """Send one request. Only `read_only` requests and `keyed` ones (mutations carrying an
        Idempotency-Key, which the service answers once) are ever sent more than once."""
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode("utf-8")
        h = {"Accept": "application/json", "User-Agent": self.user_agent, **(headers or {})}
        if data is not None:
            h["Content-Type"] = "application/json"
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        attempts = 1 + (self.retries if read_only or keyed else 0)
        for attempt in range(attempts):
            last = attempt == attempts - 1
            req = urllib.request.Request(url, data=data, headers=h, method=method)
            try:
                with self._opener.open(req, timeout=self.timeout) as resp:
                    if text:
                        return resp.read().decode("utf-8")
                    if ndjson:
                        # An export: one JSON object a line, and where the next page starts in a header.
                        lines = [json.loads(line) for line in resp.read().decode("utf-8").splitlines() if line]
                        return lines, resp.headers.get("Export-Next-Cursor")
                    return _decode(resp.status, resp.read())
            except urllib.error.HTTPError as err:
                status, wait = err.code, err.headers.get("Retry-After")
                try:
                    raw = err.read()
                except (OSError, http.client.HTTPException):
                    raw = b""  # the status alone still names the refusal
                finally:
                    err.close()
                if not last and resend_may_help(status, _code_of(raw)):
                    self._pause(attempt, _retry_after(wait))
                    continue
                raise error_from_response(status, raw, wait) from None
            except (OSError, http.client.HTTPException) as err:  # URLError, timeouts, resets
                if not last:
                    self._pause(attempt, None)
                    continue
                reason = getattr(err, "reason", None) or err
                raise MemoryConnectionError(
                    f"{method} {path}: {reason}", may_have_applied=not read_only and not _refused_before_sending(err)
                ) from err
        raise AssertionError("unreachable")  # pragma: no cover

    def _pause(self, attempt: int, asked: float | None) -> None:
        # Full jitter keeps a crowd of runtimes from retrying in step; a server's Retry-After wins, capped.
        delay = asked if asked is not None else random.uniform(0, self.backoff * 2**attempt)
        time.sleep(min(delay, 30.0))

    # ---- accounts, humans, workspaces -----------------------------------------------------------

    def create_account(self, name: str, human_name: str, *, operator_key: str | None = None) -> dict[str, Any]:
        """A new account and its first Human: {"account", "human", "token"}. Needs the operator key."""
        key = operator_key or self.operator_key
        if not key:
            raise ValueError("creating an account needs the deployment's operator key")
        body = {"account": {"name": name}, "human": {"name": human_name}}
        return self.routes.create_account(body=body, headers={"X-Operator-Key": key})

    def create_human(self, name: str) -> dict[str, Any]:
        """Another Human in the caller's account: {"human", "token"}."""
        return self.routes.create_human(body={"human": {"name": name}})

    def rotate_human_credentials(self, human_public_id: str) -> dict[str, Any]:
        """A new token for a Human (itself, or any of the account's as its first Human): {"human", "token"}.
        The old token stops working at once."""
        return self.routes.rotate_human_credentials(human_public_id=human_public_id)

    def revoke_human_credentials(self, human_public_id: str) -> None:
        """No token of that Human works until its credentials are rotated again."""
        self.routes.revoke_human_credentials(human_public_id=human_public_id)

    def create_workspace(self, name: str) -> dict[str, Any]:
        return _dict(self.routes.create_workspace(body={"workspace": {"name": name}})["workspace"])

    def update_workspace(
        self,
        workspace: str,
        *,
        tool_provider_overrides: Mapping[str, str | None] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Change a workspace's tool provider overrides and/or its settings (`{"dedup": {...}}`)."""
        fields = _without_none(
            tool_provider_overrides=None if tool_provider_overrides is None else dict(tool_provider_overrides),
            settings=None if settings is None else dict(settings),
        )
        return _dict(
            self.routes.update_workspace(workspace_public_id=workspace, body={"workspace": fields})["workspace"]
        )

    def add_member(
        self,
        workspace: str,
        *,
        human_public_id: str | None = None,
        agent_public_id: str | None = None,
        role: str = "member",
    ) -> dict[str, Any]:
        member = _without_none(human_public_id=human_public_id, agent_public_id=agent_public_id, role=role)
        return _dict(self.routes.add_member(workspace_public_id=workspace, body={"member": member})["member"])

    # ---- conversations --------------------------------------------------------------------------

    def create_conversation(
        self,
        workspace: str,
        *,
        answering_agent_public_id: str | None = None,
        memory_context: Mapping[str, Any] | _Unset | None = UNSET,
    ) -> dict[str, Any]:
        conv = _without_none(answering_agent_public_id=answering_agent_public_id)
        if memory_context is not UNSET:
            conv["memory_context"] = memory_context
        out = self.routes.create_conversation(workspace_public_id=workspace, body={"conversation": conv})
        return _dict(out["conversation"])

    def show_conversation(self, workspace: str, conversation: str) -> dict[str, Any]:
        return _dict(self.routes.show_conversation(**_conv(workspace, conversation))["conversation"])

    def archive_conversation(self, workspace: str, conversation: str) -> dict[str, Any]:
        return _dict(self.routes.archive_conversation(**_conv(workspace, conversation))["conversation"])

    def replace_memory_context(
        self, workspace: str, conversation: str, memory_context: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """Replace the bindings whole; None restores the default roots."""
        body = {"memory_context": memory_context}
        return _dict(self.routes.replace_memory_context(**_conv(workspace, conversation), body=body)["conversation"])

    def fork_conversation(self, workspace: str, conversation: str) -> dict[str, Any]:
        """A copy-on-write child conversation."""
        return _dict(self.routes.fork_conversation(**_conv(workspace, conversation))["conversation"])

    def delete_conversation(self, workspace: str, conversation: str) -> None:
        """Delete a conversation (its creator or the workspace's creator): from then on it is not_found,
        an alias of it is unavailable and its executions are stopped. Its forks are untouched."""
        self.routes.delete_conversation(**_conv(workspace, conversation))

    def merge_conversation(
        self,
        workspace: str,
        conversation: str,
        *,
        strategy: Literal["fail", "prefer_child", "prefer_parent"] = "fail",
        into: Literal["parent"] = "parent",
    ) -> dict[str, Any]:
        """Fold a fork's conversation/ documents back into its parent, three-way: {"landed", "kept",
        "conversation"}. A conflict under "fail" raises MergeConflict (its details name each path)."""
        body = {"merge": {"into": into, "strategy": strategy}}
        return _dict(self.routes.merge_conversation(**_conv(workspace, conversation), body=body)["merge"])

    # ---- a conversation's store entries (client state no prompt reads) ---------------------------

    def list_store_entries(self, workspace: str, conversation: str) -> list[dict[str, Any]]:
        """Every entry's key, lock_version, bytesize and updated_at (no values)."""
        out = self.routes.conversation_store_entries_list(**_conv(workspace, conversation))["entries"]
        return cast(list[dict[str, Any]], out)

    def show_store_entry(self, workspace: str, conversation: str, key: str) -> dict[str, Any]:
        body = {"entry": {"key": key}}
        return _dict(self.routes.conversation_store_entry_show(**_conv(workspace, conversation), body=body)["entry"])

    def write_store_entry(
        self, workspace: str, conversation: str, key: str, value: Any, expected_lock_version: int | None
    ) -> dict[str, Any]:
        """Create (expected_lock_version None: only while absent) or replace an entry; any JSON value."""
        body = {"entry": {"key": key, "value": value, "expected_lock_version": expected_lock_version}}
        return _dict(self.routes.conversation_store_entry_write(**_conv(workspace, conversation), body=body)["entry"])

    def delete_store_entry(self, workspace: str, conversation: str, key: str, expected_lock_version: int) -> None:
        body = {"entry": {"key": key, "expected_lock_version": expected_lock_version}}
        self.routes.conversation_store_entry_delete(**_conv(workspace, conversation), body=body)

    def memory_block(
        self,
        workspace: str,
        conversation: str,
        *,
        budget_bytes: int | None = None,
        expected_context_revision: int | None = None,
        speaker_public_id: str | None = None,
    ) -> dict[str, Any]:
        """The leading block the next reply would be assembled from: {"text", "included", "omitted", ...}."""
        block = _without_none(
            budget_bytes=budget_bytes,
            expected_context_revision=expected_context_revision,
            speaker_public_id=speaker_public_id,
        )
        out = self.routes.conversation_memory_block(**_conv(workspace, conversation), body={"memory_block": block})
        return _dict(out["memory_block"])

    def list_skills(
        self, workspace: str, conversation: str, *, speaker_public_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The skills catalog the model would see in this conversation: name and description, first source wins."""
        out = self.routes.conversation_skills_list(
            **_conv(workspace, conversation), speaker_public_id=speaker_public_id
        )
        return cast(list[dict[str, Any]], out["skills"])

    def load_skill(
        self, workspace: str, conversation: str, name: str, *, speaker_public_id: str | None = None
    ) -> dict[str, Any]:
        """One skill's body, resolved through its sources in order."""
        skill = _without_none(name=name, speaker_public_id=speaker_public_id)
        return _dict(
            self.routes.conversation_skill_load(**_conv(workspace, conversation), body={"skill": skill})["skill"]
        )

    # ---- agents and speakers --------------------------------------------------------------------

    def create_agent(
        self,
        name: str,
        *,
        kind: Literal["program", "definition"] = "program",
        memory_context_limit: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """{"agent", "token"}: a paired program gets its token once, here."""
        agent = {"name": name, "kind": kind, "memory_context_limit": memory_context_limit}
        return self.routes.create_agent(body={"agent": agent})

    def rotate_agent_credentials(self, agent_public_id: str) -> dict[str, Any]:
        """{"token"}: the new token; the old one stops working at once."""
        return self.routes.rotate_agent_credentials(agent_public_id=agent_public_id)

    def create_speaker(self, name: str, agent_public_id: str) -> dict[str, Any]:
        body = {"speaker": {"name": name, "agent_public_id": agent_public_id}}
        return _dict(self.routes.create_speaker(body=body)["speaker"])

    # ---- executions and the model's tools -------------------------------------------------------

    def create_execution(
        self,
        workspace: str,
        conversation: str,
        *,
        speaker_public_id: str | None = None,
        parent_execution_public_id: str | None = None,
        delegate_to_agent_public_id: str | None = None,
        tools: Iterable[str] | None = None,
        mail_from_execution_public_id: str | None = None,
        mounts: Iterable[Mapping[str, Any]] | None = None,
        capabilities: Iterable[Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """An execution whose bindings, tools and file tree are frozen now: {"execution": {"public_id",
        "bindings", "tools", "mounts", ...}, "secret"} (the secret the in-account tool function accepts,
        shown once).

        `mounts` mounts Memories into the session's tree: `[{"memory": id, "path": "/workspace/runbooks",
        "mode": "readwrite" | "readonly", "read_first": bool}]` (the `memory` capability's config);
        `capabilities` is the list as the API takes it (`[{"ref", "config"}]`), for what `mounts` does not
        spell. `mail_from_execution_public_id` starts it as peer mail from that execution: its bindings are
        this conversation's intersected with the sender's, read-only winning."""
        caps = [dict(c) for c in capabilities] if capabilities is not None else None
        if mounts is not None:
            if any(c.get("ref") == "memory" for c in caps or []):
                raise ValueError("give the mounts once: as `mounts`, or in the memory capability of `capabilities`")
            caps = [*(caps or []), {"ref": "memory", "config": {"mounts": [dict(m) for m in mounts]}}]
        execution = _without_none(
            speaker_public_id=speaker_public_id,
            parent_execution_public_id=parent_execution_public_id,
            delegate_to_agent_public_id=delegate_to_agent_public_id,
            tools=None if tools is None else list(tools),
            mail_from_execution_public_id=mail_from_execution_public_id,
            capabilities=caps,
        )
        return _dict(self.routes.create_execution(**_conv(workspace, conversation), body={"execution": execution}))

    def stop_execution(self, execution_public_id: str) -> dict[str, Any]:
        """Stop an execution for good, and every execution spawned from it: {"public_id", ..., "stopped": True}.
        Stopping a stopped execution answers the same."""
        out = self.routes.stop_execution(execution_public_id=execution_public_id)
        return _dict(out["execution"])

    def call_tool(
        self,
        execution_public_id: str,
        tool: str,
        tool_input: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Run one model tool call: {"tool", "is_error", "code", "content", "data"}.

        A tool's refusal is a result for the model (is_error, code, content), not an exception; an
        exception means the call itself was refused (bad token, unknown execution). `idempotency_key`
        (the runtime's own, such as the model's tool_use id) makes a resent call answer the first answer.
        """
        headers = _keyed(idempotency_key)
        return _dict(
            self.routes.call_tool(
                execution_public_id=execution_public_id,
                tool_name=tool,
                body={"input": dict(tool_input)},
                headers=headers,
                read_only=tool in READ_ONLY_TOOLS,
            )
        )

    def execution_memory_block(self, execution_public_id: str, *, budget_bytes: int | None = None) -> dict[str, Any]:
        """An execution's memory block: the conversation's documents, then the files of its read_first mounts
        and the other mounted Memories to open on demand ({"text", "included", "omitted", "memories", ...})."""
        block = _without_none(budget_bytes=budget_bytes)
        out = self.routes.execution_memory_block(execution_public_id=execution_public_id, body={"memory_block": block})
        return _dict(out["memory_block"])

    def session_files(self, execution_public_id: str) -> SessionFiles:
        """A session's file tree: its mounts, and their files by absolute path."""
        return SessionFiles(self, execution_public_id)

    def tool_schemas(self, format: Literal["anthropic", "openai"] = "anthropic") -> list[dict[str, Any]]:
        """The model's tool definitions, ready to hand to that provider's API."""
        return cast(list[dict[str, Any]], self.routes.tool_schemas(format=format)["tools"])

    def openapi_document(self) -> dict[str, Any]:
        """The API's OpenAPI 3.1 description, generated from the route table the service runs."""
        return self.routes.openapi_document()

    # ---- memory doors ---------------------------------------------------------------------------

    def promote(
        self,
        workspace: str,
        source_path: str,
        lock_version: int,
        target_path: str,
        expected: Expected,
        *,
        conversation_public_id: str | None = None,
        description: str | None = None,
        speaker_public_id: str | None = None,
    ) -> dict[str, Any]:
        """Copy one version of a readable document into workspace/ (appended, for a skill)."""
        source = _without_none(
            speaker_public_id=speaker_public_id, conversation_public_id=conversation_public_id, path=source_path
        )
        body = {
            "promote": {
                "source": {**source, "lock_version": lock_version},
                "target_path": target_path,
                **expectation(expected),
                **_without_none(description=description),
            }
        }
        return _dict(self.routes.workspace_memory_promote(workspace_public_id=workspace, body=body)["memory"])

    def export_workspace(self, workspace: str, *, cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of the room's export (its workspace/ and conversation/ documents, PII masked), and the
        cursor of the next page (None after the last)."""
        return self.routes.workspace_memory_export(workspace_public_id=workspace, cursor=cursor)

    def export_own(self, *, cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of the caller's own user/ (or agent/) documents, PII masked, and the next cursor."""
        return self.routes.profile_memory_export(cursor=cursor)

    # ---- typed records --------------------------------------------------------------------------

    def append_record(
        self,
        workspace: str,
        content: str,
        type: str,
        *,
        layer: Literal["Workspace", "Session"] | None = None,
        run_id: str | None = None,
        tags: Mapping[str, Any] | None = None,
        source_kind: str | None = None,
        source_ref: str | None = None,
        visibility: Literal["workspace", "private"] | None = None,
        user_id: str | None = None,
        observed_at: str | None = None,
        valid_from: str | None = None,
        valid_to: str | None = None,
        supersedes: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Append a record: {"record", "merged", "content_replaced", "operation_id"}. `merged` says an
        existing record absorbed it (a mention or more evidence) instead of a new one being made; `tags` is
        {"facet", "labels"}. `idempotency_key` is the caller's own key for a resend after a lost answer
        (without one the client makes one, reused on its own retries)."""
        record = _without_none(
            content=content,
            type=type,
            layer=layer,
            run_id=run_id,
            tags=None if tags is None else dict(tags),
            source_kind=source_kind,
            source_ref=source_ref,
            visibility=visibility,
            user_id=user_id,
            observed_at=observed_at,
            valid_from=valid_from,
            valid_to=valid_to,
            supersedes=supersedes,
        )
        out = self.routes.records_append(
            workspace_public_id=workspace, body={"record": record}, headers=_keyed(idempotency_key)
        )
        return _dict(out)

    def get_record(self, workspace: str, record_id: str) -> dict[str, Any]:
        return _dict(self.routes.record_show(**_rec(workspace, record_id))["record"])

    def update_record(
        self,
        workspace: str,
        record_id: str,
        expected_lock_version: int,
        *,
        content: str | None = None,
        tags: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """A new version of the record's text and/or tags, if it is still at `expected_lock_version`
        (else StaleObject: read it again)."""
        record = _without_none(
            content=content, tags=None if tags is None else dict(tags), expected_lock_version=expected_lock_version
        )
        out = self.routes.record_update(
            **_rec(workspace, record_id), body={"record": record}, headers=_keyed(idempotency_key)
        )
        return _dict(out["record"])

    def delete_record(
        self, workspace: str, record_id: str, expected_lock_version: int, *, idempotency_key: str | None = None
    ) -> None:
        body = {"record": {"expected_lock_version": expected_lock_version}}
        self.routes.record_delete(**_rec(workspace, record_id), body=body, headers=_keyed(idempotency_key))

    def search_records(
        self,
        workspace: str,
        query: str | None = None,
        *,
        type: str | None = None,
        facet: str | None = None,
        layer: Literal["Workspace", "Session"] | None = None,
        run_id: str | None = None,
        user_id: str | None = None,
        include_superseded: bool | None = None,
        include_expired: bool | None = None,
        quarantine: Literal["pending"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Ranked records: {"results": [{"record", "score"}], "next_cursor"}. Only `quarantine="pending"`
        (a curator's review queue) goes without a query."""
        search = _without_none(
            query=query,
            type=type,
            facet=facet,
            layer=layer,
            run_id=run_id,
            user_id=user_id,
            include_superseded=include_superseded,
            include_expired=include_expired,
            quarantine=quarantine,
            limit=limit,
            cursor=cursor,
        )
        return self.routes.records_search(workspace_public_id=workspace, body={"search": search})

    def consolidate(
        self,
        workspace: str,
        run_id: str,
        *,
        extraction_instructions: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Turn a run's Session raw lines into Workspace records: {"status", "created", "merged",
        "extraction", "remaining"} (and a "note" when instructions were given but not read)."""
        body = {"consolidate": _without_none(run_id=run_id, extraction_instructions=extraction_instructions)}
        out = self.routes.records_consolidate(workspace_public_id=workspace, body=body, headers=_keyed(idempotency_key))
        return _dict(out)

    def review_record(
        self,
        workspace: str,
        record_id: str,
        decision: Literal["release", "reject"],
        *,
        idempotency_key: str | None = None,
    ) -> dict[str, Any] | None:
        """A curator's verdict on a quarantined record: the released record, or None once rejected (deleted)."""
        body = {"review": {"decision": decision}}
        out = self.routes.record_review(**_rec(workspace, record_id), body=body, headers=_keyed(idempotency_key))
        return None if out is None else _dict(out["record"])

    def export_records(self, workspace: str, *, cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of the workspace's records (both layers, quarantined ones left out, personal data
        masked) and the cursor of the next page (None after the last). A page may hold no records and
        still name a next one: follow the cursor until it is None."""
        return self.routes.records_export(workspace_public_id=workspace, cursor=cursor)

    # ---- organization Memories ------------------------------------------------------------------

    def create_memory(
        self,
        name: str,
        description: str = "",
        *,
        files: Mapping[str, str] | None = None,
        git: Mapping[str, str] | None = None,
        default: Mapping[str, Any] | None = None,
        access: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A new organization Memory, with its first files (path -> content) or imported from Git
        (`{"url", "ref", "path"}`); a tenant default and an Access panel may be given."""
        memory: dict[str, Any] = {"name": name, "description": description}
        if files:
            memory["files"] = [{"path": p, "content": c} for p, c in files.items()]
        if git is not None:
            memory["source"] = {"git": dict(git)}
        memory |= _without_none(default=default, access=access)
        return _dict(self.routes.create_memory(body={"memory": memory})["memory"])

    def list_memories(self, *, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        """A page of the Memories the caller sees: {"memories", "next_cursor"}."""
        return self.routes.list_memories(limit=limit, cursor=cursor)

    def show_memory(self, memory_id: str) -> dict[str, Any]:
        return _dict(self.routes.show_memory(memory_id=memory_id)["memory"])

    def update_memory(
        self,
        memory_id: str,
        *,
        description: str | _Unset = UNSET,
        default: Mapping[str, Any] | _Unset | None = UNSET,
        access: Mapping[str, Any] | _Unset | None = UNSET,
    ) -> dict[str, Any]:
        """Change a Memory's description, default or access; what is left out stays (None clears a default
        or restores open access)."""
        given = {"description": description, "default": default, "access": access}
        fields = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in given.items() if v is not UNSET}
        return _dict(self.routes.update_memory(memory_id=memory_id, body={"memory": fields})["memory"])

    def archive_memory(self, memory_id: str) -> dict[str, Any]:
        return _dict(self.routes.archive_memory(memory_id=memory_id)["memory"])

    def delete_memory(self, memory_id: str) -> None:
        self.routes.delete_memory(memory_id=memory_id)

    def sync_memory(self, memory_id: str) -> dict[str, Any]:
        """Re-import a git-synced Memory: {"memory", "sync": {"commit", "changed", "removed"}}."""
        return self.routes.sync_memory(memory_id=memory_id)

    def promote_to_memory(
        self,
        source: Mapping[str, Any],
        name: str,
        description: str = "",
        *,
        file_path: str | None = None,
        default: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Copy one version (`source`: workspace_public_id [+ conversation_public_id] or memory_id, with path
        and lock_version) into a new Memory."""
        body = {
            "promote": {
                "source": dict(source),
                "name": name,
                "description": description,
                **_without_none(file_path=file_path, default=default),
            }
        }
        return _dict(self.routes.promote_memory(body=body)["memory"])

    def memory_files(self, memory_id: str) -> MemoryFiles:
        """A Memory's files and their history."""
        return MemoryFiles(self, memory_id)

    def show_agent(self, agent_public_id: str) -> dict[str, Any]:
        return _dict(self.routes.show_agent(agent_public_id=agent_public_id)["agent"])

    def update_agent(
        self,
        agent_public_id: str,
        *,
        memories: list[Mapping[str, Any]] | _Unset = UNSET,
        deployment: str | _Unset | None = UNSET,
    ) -> dict[str, Any]:
        """Replace an agent's attachments (`[]` detaches all) and/or its deployment; what is left out stays."""
        agent: dict[str, Any] = {}
        if not isinstance(memories, _Unset):
            agent["memories"] = [dict(m) for m in memories]
        if not isinstance(deployment, _Unset):
            agent["deployment"] = deployment
        return _dict(self.routes.update_agent(agent_public_id=agent_public_id, body={"agent": agent})["agent"])

    def agent_memories(self, agent_public_id: str) -> list[dict[str, Any]]:
        """The Memories an agent has, by attachment or tenant default."""
        return cast(list[dict[str, Any]], self.routes.agent_memories(agent_public_id=agent_public_id)["memories"])

    def memory_map(self) -> dict[str, Any]:
        return self.routes.memory_map()

    def memory_map_page(self) -> str:
        """The map as one self-contained HTML page."""
        return self.routes.memory_map_page()

    def conversation_memory(self, workspace: str, conversation: str) -> MemoryDoor:
        """The conversation's effective bindings; writes bump its context_revision."""
        params = {"workspace_public_id": workspace, "conversation_public_id": conversation}
        return MemoryDoor(self, "conversation", params)

    def workspace_memory(self, workspace: str) -> MemoryDoor:
        """The room's own workspace/ rows; bumps no conversation's revision."""
        return MemoryDoor(self, "workspace", {"workspace_public_id": workspace})

    def profile_memory(self) -> MemoryDoor:
        """The calling Human's user/ rows, or a paired program's own agent/ rows."""
        return MemoryDoor(self, "profile", {})

    def definition_memory(self, agent_name: str) -> MemoryDoor:
        """A named definition's agent/ rows."""
        return MemoryDoor(self, "definition", {"agent_name": agent_name})


class MemoryDoor:
    """The memory and history verbs of one door. Changes take an explicit expectation: NEW, a pair, or a
    document."""

    def __init__(self, client: MemoryClient, door: contract.Door, params: Mapping[str, str]) -> None:
        self.client, self.door, self.params = client, door, dict(params)

    def _call(self, verb: str, memory: dict[str, Any] | None = None, **kw: Any) -> Any:
        body = None if memory is None else {"memory": memory}
        return self.client.call(contract.door_route(self.door, verb).name, self.params, body, **kw)

    def ls(self, *, speaker_public_id: str | None = None) -> list[dict[str, Any]]:
        """Every document in the door's bindings, without content."""
        query = {"memory[speaker_public_id]": speaker_public_id} if speaker_public_id else None
        return cast(list[dict[str, Any]], self._call("list", query=query)["memory"])

    def show(self, path: str, *, speaker_public_id: str | None = None) -> dict[str, Any]:
        return _dict(self._call("show", _without_none(path=path, speaker_public_id=speaker_public_id))["memory"])

    def write(
        self,
        path: str,
        content: str,
        expected: Expected,
        *,
        description: str | _Unset | None = UNSET,
        expected_context_revision: int | None = None,
        speaker_public_id: str | None = None,
        overwrite: bool = False,
    ) -> dict[str, Any]:
        """Replace the whole document if it is still `expected` (NEW: only if absent). `overwrite` says the
        caller saw a newer version and replaces it on purpose; the history records it."""
        memory = {
            "path": path,
            "content": content,
            **_conditional(expected, expected_context_revision, speaker_public_id),
        }
        if description is not UNSET:
            memory["description"] = description
        if overwrite:
            memory["conflict_resolution"] = "overwrite"
        return _dict(self._call("write", memory)["memory"])

    def edit(
        self,
        path: str,
        old_text: str,
        new_text: str,
        expected: Expected,
        *,
        expected_context_revision: int | None = None,
        speaker_public_id: str | None = None,
    ) -> dict[str, Any]:
        """Replace one exact passage, which must occur once."""
        memory = {
            "path": path,
            "old_text": old_text,
            "new_text": new_text,
            **_conditional(expected, expected_context_revision, speaker_public_id),
        }
        return _dict(self._call("edit", memory)["memory"])

    def grep(
        self,
        pattern: str,
        *,
        path: str | None = None,
        ignore_case: bool = False,
        limit: int | None = None,
        speaker_public_id: str | None = None,
    ) -> dict[str, Any]:
        """{"matches": [{"path", "line_number", "text"}], "truncated", "truncated_reason"}."""
        memory = {
            "pattern": pattern,
            "ignore_case": ignore_case,
            **_without_none(path=path, limit=limit, speaker_public_id=speaker_public_id),
        }
        return _dict(self._call("grep", memory))

    def delete(
        self,
        path: str,
        expected: Expected,
        *,
        expected_context_revision: int | None = None,
        speaker_public_id: str | None = None,
    ) -> None:
        memory = {"path": path, **_conditional(expected, expected_context_revision, speaker_public_id)}
        self._call("delete", memory)

    # ---- history ----

    def versions(
        self, path: str, *, limit: int | None = None, cursor: str | None = None, speaker_public_id: str | None = None
    ) -> dict[str, Any]:
        """{"versions": [...newest first, no content], "next_cursor": str | None}."""
        memory = _without_none(path=path, limit=limit, cursor=cursor, speaker_public_id=speaker_public_id)
        return _dict(self._call("list_versions", memory))

    def show_version(self, path: str, lock_version: int, *, speaker_public_id: str | None = None) -> dict[str, Any]:
        """One version with its content (None once redacted)."""
        memory = _without_none(path=path, lock_version=lock_version, speaker_public_id=speaker_public_id)
        return _dict(self._call("show_version", memory)["version"])

    def rollback(
        self,
        path: str,
        lock_version: int,
        expected: Expected,
        *,
        expected_context_revision: int | None = None,
        speaker_public_id: str | None = None,
    ) -> dict[str, Any]:
        """Restore version `lock_version` as a new version, if the document is still `expected`."""
        memory = {
            "path": path,
            "lock_version": lock_version,
            **_conditional(expected, expected_context_revision, speaker_public_id),
        }
        return _dict(self._call("rollback_version", memory)["memory"])

    def review(
        self,
        path: str,
        lock_version: int,
        decision: Literal["release", "reject"],
        expected: Expected,
        *,
        speaker_public_id: str | None = None,
    ) -> dict[str, Any] | None:
        """Release or reject the current, quarantined version (None: rejected with nothing to restore)."""
        memory = {
            "path": path,
            "lock_version": lock_version,
            "decision": decision,
            **_conditional(expected, None, speaker_public_id),
        }
        out = self._call("review_version", memory)
        return None if out is None else _dict(out["memory"])

    def redact(
        self,
        path: str,
        lock_version: int,
        expected: Expected,
        *,
        expected_context_revision: int | None = None,
        speaker_public_id: str | None = None,
    ) -> dict[str, Any]:
        """Delete an earlier version's text for good; its record stays."""
        memory = {
            "path": path,
            "lock_version": lock_version,
            **_conditional(expected, expected_context_revision, speaker_public_id),
        }
        return _dict(self._call("redact_version", memory)["version"])


class _FileVerbs:
    """The file verbs both file trees share (a Memory's, relative; a session's, absolute): `ROUTE` spells
    each route's name from its verb."""

    ROUTE = ""

    def __init__(self, client: MemoryClient, params: dict[str, str]) -> None:
        self.client, self.params = client, params

    def _call(self, route: str, file: dict[str, Any] | None = None, **kw: Any) -> Any:
        return self.client.call(route, self.params, None if file is None else {"file": file}, **kw)

    def show(self, path: str) -> dict[str, Any]:
        return _dict(self._call(self.ROUTE.format("show"), {"path": path})["file"])

    def write(self, path: str, content: str, expected: Expected, *, overwrite: bool = False) -> dict[str, Any]:
        file = {"path": path, "content": content, **expectation(expected)}
        if overwrite:
            file["conflict_resolution"] = "overwrite"
        return _dict(self._call(self.ROUTE.format("write"), file)["file"])

    def edit(self, path: str, old_text: str, new_text: str, expected: Expected) -> dict[str, Any]:
        file = {"path": path, "old_text": old_text, "new_text": new_text, **expectation(expected)}
        return _dict(self._call(self.ROUTE.format("edit"), file)["file"])

    def delete(self, path: str, expected: Expected) -> None:
        self._call(self.ROUTE.format("delete"), {"path": path, **expectation(expected)})


class SessionFiles(_FileVerbs):
    """An execution's file tree: its mounts' files by absolute path (`/workspace/runbooks/a.md`), and its
    roots' documents by `<root>/<rest>` (`conversation/notes.md`)."""

    ROUTE = "execution_file_{}"

    def __init__(self, client: MemoryClient, execution_public_id: str) -> None:
        super().__init__(client, {"execution_public_id": execution_public_id})

    def mounts(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], self._call("execution_mounts")["mounts"])

    def ls(self, path: str = "/") -> list[dict[str, Any]]:
        """The files at or under a folder: absolute ('/' every mount's), or of the execution's roots
        ('' every root's, 'conversation/' one root's). A shorthand for `listing(path)["files"]`."""
        return cast(list[dict[str, Any]], self._call("execution_files_list", {"path": path})["files"])

    def listing(self, path: str = "/") -> dict[str, Any]:
        """`ls` with the rest of the answer: {"files", "roots"} (each root with the access it grants)."""
        return _dict(self._call("execution_files_list", {"path": path}))

    def rename(self, path: str, new_path: str, expected: Expected) -> dict[str, Any]:
        """Move a file to a path that holds none, in one transaction (no bytes move): the new file."""
        file = {"path": path, "new_path": new_path, **expectation(expected)}
        return _dict(self._call("execution_file_rename", file)["file"])


class MemoryFiles(_FileVerbs):
    """The files of one organization Memory: the memory verbs with relative paths, plus leases."""

    ROUTE = "memory_file_{}"

    def __init__(self, client: MemoryClient, memory_id: str) -> None:
        super().__init__(client, {"memory_id": memory_id})

    def ls(self, *, prefix: str | None = None, limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
        query = {"limit": str(limit), **_without_none(prefix=prefix, cursor=cursor)}
        return _dict(self._call("memory_files_list", query=query))

    def grep(
        self, pattern: str, *, path: str | None = None, ignore_case: bool = False, limit: int = 100
    ) -> dict[str, Any]:
        """{"matches": [{"path", "line_number", "text"}], "truncated", "truncated_reason"}."""
        file = {"pattern": pattern, "ignore_case": ignore_case, "limit": limit, **_without_none(path=path)}
        return _dict(self._call("memory_file_grep", file))

    def versions(self, path: str, *, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        return _dict(self._call("memory_file_versions", {"path": path, "limit": limit, **_without_none(cursor=cursor)}))

    def show_version(self, path: str, lock_version: int) -> dict[str, Any]:
        return _dict(self._call("memory_file_version_show", {"path": path, "lock_version": lock_version})["version"])

    def rollback(self, path: str, lock_version: int, expected: Expected) -> dict[str, Any]:
        file = {"path": path, "lock_version": lock_version, **expectation(expected)}
        return _dict(self._call("memory_file_rollback", file)["file"])

    def redact(self, path: str, lock_version: int, expected: Expected) -> dict[str, Any]:
        """Delete an earlier version's text for good (the file must still be at `expected`): the record."""
        file = {"path": path, "lock_version": lock_version, **expectation(expected)}
        return _dict(self._call("memory_file_version_redact", file)["version"])

    def lease(self, path: str, seconds: int) -> dict[str, Any]:
        return _dict(self._call("memory_file_lease", {"path": path, "seconds": seconds})["lease"])


# ---- helpers --------------------------------------------------------------------------------------


class _RecordParams(TypedDict):
    workspace_public_id: str
    record_public_id: str


class _ConversationParams(TypedDict):
    workspace_public_id: str
    conversation_public_id: str


def _rec(workspace: str, record_id: str) -> _RecordParams:
    return {"workspace_public_id": workspace, "record_public_id": record_id}


def _keyed(idempotency_key: str | None) -> dict[str, str] | None:
    """The caller's own Idempotency-Key, if any (`call` gives every mutation one otherwise)."""
    return {"Idempotency-Key": idempotency_key} if idempotency_key else None


def _conv(workspace: str, conversation: str) -> _ConversationParams:
    return {"workspace_public_id": workspace, "conversation_public_id": conversation}


def _decode(status: int, raw: bytes) -> Any:
    if status == 204 or not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise MemoryApiError(f"HTTP {status} with a body that is not JSON", status=status) from exc


def _dict(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MemoryApiError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _refused_before_sending(err: BaseException) -> bool:
    """A refused connection carried no request, so even a write certainly did not happen."""
    reason = getattr(err, "reason", err)
    return isinstance(reason, ConnectionRefusedError)
