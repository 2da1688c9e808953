"""The one place a botocore error is read: every write goes through `attempt`, every read through `read`.

A write names each item it sends by its ROLE ("document", "meta", "conversation", "budget", "token", ...)
and says, in `Refusals`, what a failed condition on an item of that role means. A refusal is read the
same way whatever the request was:

- a transaction cancelled: `CancellationReasons[i]` belongs to the i-th item sent, so reason i is the
  role of item i (DynamoDB returns one reason per item, "None" for the items that passed);
- a single-item write whose condition failed (DynamoDB's ConditionalCheckFailedException, S3's
  PreconditionFailed for If-None-Match): one reason, for the one item.

Only `ConditionalCheckFailed` on item i is a refusal of item i's condition. The first role in
`Refusals.by_role` order whose item failed names the refusal, given the old item DynamoDB returned with it
(ReturnValuesOnConditionCheckFailure=ALL_OLD), so naming it costs no second read.

Everything else is read as what it is, never as a refusal:

- contention (TransactionConflict, throttling, ProvisionedThroughputExceeded, RequestLimitExceeded, on
  any item or on the request): the write is sent again, up to `PACING.retries` times with full-jitter
  exponential backoff. That is safe because DynamoDB checks every condition again on each attempt. Past
  the retries the answer is 503 `storage_busy` with `retry_after_seconds`;
- no answer (a connection refused or reset, a connect or read timeout after botocore's own retries) or a
  server-side fault (HTTP 5xx): 503 `storage_unavailable`, never retried here, since botocore already
  retried it and a write may have landed;
- a refused write whose old item is exactly the item this request put: an earlier send of this same
  request landed and its answer was lost (botocore resends after a timeout). That is the write itself,
  answered as success rather than as the `stale_object` or `already_exists` its own success would cause;
- anything else (a validation error, a missing table) is a bug, re-raised as the 500 it is.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field, replace
from typing import Any, TypeVar

from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from agent_memory.api.errors import ApiError
from agent_memory.core import clock, idempotency
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.store import kinds
from agent_memory.store.items import unmarshal

T = TypeVar("T")

# What a failed condition means, given the old item (plain, as `items.unmarshal` reads it) or None
# when there was none.
Refusal = Callable[[dict[str, Any] | None], ApiError]
# One item of a transaction: its role, and its TransactItems entry ({"Put": ...}, {"Update": ...}, ...).
Step = tuple[str, dict[str, Any]]

# DynamoDB's bound on the items of one TransactWriteItems.
TRANSACTION_ITEMS = 100

CONDITION_FAILED = "ConditionalCheckFailed"
# Cancellation reasons that mean "the item was busy", not "its condition was false".
CONTENTION_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"}
)
# Error codes of a whole request that mean the same (DynamoDB's, then S3's). TransactionInProgress is a
# resend of a transaction whose first send is still running under the same ClientRequestToken.
_BUSY = frozenset(
    {
        "TransactionConflictException",
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TransactionInProgressException",
        "SlowDown",
        "Throttling",
    }
)
# Error codes that mean "a condition refused this request", as opposed to a fault: the single-item ones
# are reported as one ConditionalCheckFailed reason for the request's one item.
_SINGLE_REFUSALS = frozenset({"ConditionalCheckFailedException", "PreconditionFailed"})
_CANCELLED = "TransactionCanceledException"
# No answer from storage, after botocore's own retries: connect/read timeouts, refused or reset connections.
_NO_ANSWER = (BotoConnectionError, HTTPClientError)


@dataclass(slots=True)
class Pacing:
    """How contention is retried. One per process; tests replace `sleep` so they never wait for real."""

    retries: int = 3
    base_seconds: float = 0.05
    cap_seconds: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random

    def pause(self, retry: int) -> None:
        """Full jitter: a uniform wait up to the exponential bound, so racing writers spread out."""
        self.sleep(self.jitter() * min(self.cap_seconds, self.base_seconds * 2**retry))


# 3 retries wait at most 0.05 + 0.1 + 0.2 s: well inside a route Lambda's 10 s, even after botocore's own.
PACING = Pacing()
# What a 503 storage_busy asks the caller to wait: contention on one item clears within a second or two.
RETRY_AFTER_SECONDS = 1


@dataclass(frozen=True, slots=True)
class Reason:
    """Why one item of a refused request was refused."""

    role: str
    code: str
    old: dict[str, Any] | None
    index: int = 0


@dataclass(frozen=True, slots=True)
class Refusals:
    """What a refused write means to the caller that sent it."""

    # Role -> its refusal; when several items failed, the first role in this order names the refusal.
    by_role: Mapping[str, Refusal] = field(default_factory=dict)
    # A failed condition on an item no role above explains; None re-raises the ClientError.
    otherwise: Callable[[], ApiError] | None = None
    # Whether the refusal shows that this very write already landed (an earlier send of it whose answer
    # was lost); such a refusal is answered as the write's success.
    landed: Callable[[Sequence[Reason]], bool] | None = None


def busy() -> ApiError:
    # No claim that nothing changed: a verb may read again after its own write (to render its answer).
    return ApiError(
        "storage_busy",
        f"Storage is busy with other requests for the same records. Try again in {RETRY_AFTER_SECONDS} second(s).",
        retry_after_seconds=RETRY_AFTER_SECONDS,
    )


def unavailable(*, writing: bool) -> ApiError:
    if writing:
        return ApiError(
            "storage_unavailable",
            "Storage did not answer; the change may or may not have been applied. Read it again before "
            "retrying: a write that landed makes its pair stale.",
            retry_after_seconds=RETRY_AFTER_SECONDS,
        )
    return ApiError(
        "storage_unavailable",
        "Storage did not answer. Try again shortly.",
        retry_after_seconds=RETRY_AFTER_SECONDS,
    )


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code") or "")


def _server_fault(exc: ClientError) -> bool:
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
    return int(status) >= 500 or _code(exc) in {"InternalServerError", "InternalError", "ServiceUnavailable"}


def reasons(exc: ClientError, roles: Sequence[str]) -> list[Reason] | None:
    """The per-item reasons of a refused or cancelled request, or None when it is neither."""
    code = _code(exc)
    if code == _CANCELLED:
        raw: list[dict[str, Any]] = exc.response.get("CancellationReasons") or []  # type: ignore[assignment]
        return [
            Reason(role, r.get("Code") or "None", unmarshal(r["Item"]) if r.get("Item") else None, i)
            for i, (role, r) in enumerate(zip(roles, raw, strict=False))
        ]
    if code in _SINGLE_REFUSALS:
        old = exc.response.get("Item")
        return [Reason(roles[0], CONDITION_FAILED, unmarshal(old) if old else None)]  # type: ignore[arg-type]
    return None


def explain(found: Sequence[Reason], refusals: Refusals) -> ApiError | None:
    """The domain error the failed conditions mean, or None when no condition failed (or none has a meaning)."""
    failed: dict[str, dict[str, Any] | None] = {}
    for r in found:
        if r.code == CONDITION_FAILED:
            failed.setdefault(r.role, r.old)
    if not failed:
        return None
    for role, refusal in refusals.by_role.items():
        if role in failed:
            return refusal(failed[role])
    return refusals.otherwise() if refusals.otherwise is not None else None


def attempt(call: Callable[[], dict[str, Any]], roles: Sequence[str], refusals: Refusals) -> dict[str, Any]:
    """Send one write whose items have `roles`: retried under contention, a refusal becomes its domain error.

    Answers the call's response, or {} when the refusal showed that an earlier send of it had landed.
    """
    last: ClientError | None = None
    contended: set[str] = set()
    for retry in range(PACING.retries + 1):
        if retry:
            PACING.pause(retry - 1)
        try:
            return call()
        except ClientError as exc:
            found = reasons(exc, roles)
            if found is not None:
                if refusals.landed is not None and refusals.landed(found):
                    return {}
                err = explain(found, refusals)
                if err is not None:
                    raise err from exc
                if any(r.code in CONTENTION_REASONS for r in found):
                    contended = {r.role for r in found if r.code in CONTENTION_REASONS}
                    last = exc
                    continue
                # Cancelled for a reason that is neither a condition nor contention (a validation error on
                # an item, a size limit): a bug, and the 500 it should be.
                raise
            if _code(exc) in _BUSY:
                last = exc
                continue
            if _server_fault(exc):
                raise unavailable(writing=True) from exc
            raise
        except _NO_ANSWER as exc:
            raise unavailable(writing=True) from exc
    if "idempotency" in contended:
        # What stayed busy is the key's own record: a duplicate of this request is committing right now.
        raise idempotency.in_progress() from last
    raise busy() from last


def read(call: Callable[[], T]) -> T:
    """Send one read, already retried by botocore: throttling left is `storage_busy`, silence `storage_unavailable`."""
    try:
        return call()
    except ClientError as exc:
        if _code(exc) in _BUSY:
            raise busy() from exc
        if _server_fault(exc):
            raise unavailable(writing=False) from exc
        raise
    except _NO_ANSWER as exc:
        raise unavailable(writing=False) from exc


def own_puts(steps: Sequence[Step]) -> Callable[[Sequence[Reason]], bool]:
    """Whether a refusal's old item is exactly an item these steps put: the write had landed already.

    Every item this service puts carries something new to its request (a uuid7 id, a content key, a token
    digest), so no other request can have written that same item.
    """
    sent = {i: unmarshal(op["Put"]["Item"]) for i, (_, op) in enumerate(steps) if "Put" in op}

    def landed(found: Sequence[Reason]) -> bool:
        return any(r.code == CONDITION_FAILED and r.old is not None and sent.get(r.index) == r.old for r in found)

    return landed


def request_token() -> str:
    """A ClientRequestToken for one logical transaction: 36 characters, DynamoDB's limit."""
    return str(uuid.uuid4())


def guarded(steps: Sequence[Step], refusals: Refusals) -> tuple[list[Step], Refusals, idempotency.UnitOfWork | None]:
    """`steps` with the keyed request's record added, when this is the commit its answer was settled for.

    The record's condition is that the key holds no live record: a duplicate that got there first makes
    this whole commit refuse, and its recorded answer is this request's answer too (or, for another
    request under the same key, idempotency_conflict). Its refusal is looked at first.

    A keyed request whose entry renders an answer and whose service reaches its decisive commit without
    settling it is a bug: committing the change without its record would let a retry run it twice, so it
    is refused before anything is sent.
    """
    uow = idempotency.current()
    if uow is None or not uow.pending or not steps:
        return list(steps), refusals, None
    if uow.answer is None:
        raise RuntimeError("a keyed change reached its decisive commit without settling its answer")
    table = next(iter(steps[0][1].values()))["TableName"]
    step: Step = (
        "idempotency",
        {
            "Put": {
                "TableName": table,
                "Item": kinds.idempotency_item(uow.record(), request_token()),
                "ConditionExpression": "attribute_not_exists(#pk) OR #exp <= :now",
                "ExpressionAttributeNames": {"#pk": "pk", "#exp": "expires_at"},
                "ExpressionAttributeValues": {":now": {"N": str(int(clock.now()))}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        },
    )

    def taken(old: dict[str, Any] | None) -> ApiError:
        if old is None:
            return idempotency.conflict()
        record = kinds.idempotency_record(old)
        if record.fingerprint == uow.fingerprint:
            raise idempotency.Replayed(record.answer)
        return idempotency.conflict()

    return [*steps, step], replace(refusals, by_role={"idempotency": taken, **refusals.by_role}), uow


def keyed() -> bool:
    """Whether the next write is a keyed request's decisive commit (its answer to be carried by it)."""
    uow = idempotency.current()
    return uow is not None and uow.pending


def transact(ddb: Any, steps: Sequence[Step], refusals: Refusals, *, decisive: bool = True) -> None:
    """One TransactWriteItems of `steps`, refused as `refusals` says. A keyed request's record rides in it
    unless it is not `decisive`: a transaction written ahead of the change it prepares (a fork's history
    records) must not say the change happened.

    The token is made once per call of this function and sent with every send of it, botocore's resends
    and the contention retries alike: a resend of a commit that landed is answered by DynamoDB's
    idempotent replay (for 10 minutes) as that commit, and no two requests ever share a token.
    """
    sent, refusals, guard = guarded(steps, refusals) if decisive else (list(steps), refusals, None)
    token = request_token()
    items = [op for _, op in sent]
    attempt(
        lambda: ddb.transact_write_items(TransactItems=items, ClientRequestToken=token),
        [role for role, _ in sent],
        refusals if refusals.landed is not None else replace(refusals, landed=own_puts(sent)),
    )
    if guard is not None:
        guard.stored = True


def write_one(ddb: Any, step: Step, refusals: Refusals) -> dict[str, Any]:
    """One single-item write of a step ({"Put"|"Update"|"Delete": body}), refused as `refusals` says.

    A keyed request's decisive write becomes a transaction with its record (see `guarded`)."""
    if keyed():
        transact(ddb, [step], refusals)
        return {}
    role, op = step
    ((verb, body),) = op.items()
    call = {"Put": ddb.put_item, "Update": ddb.update_item, "Delete": ddb.delete_item}[verb]
    return attempt(
        lambda: call(**body),
        [role],
        refusals if refusals.landed is not None else replace(refusals, landed=own_puts([step])),
    )
