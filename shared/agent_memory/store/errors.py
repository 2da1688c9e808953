"""The one place a botocore `ClientError` is read: every write goes through `attempt`.

A write names each item it sends by its ROLE ("document", "meta", "conversation", "budget", "token", ...)
and says, in `Refusals`, what a failed condition on an item of that role means. A refusal is read the
same way whatever the request was:

- a transaction cancelled: `CancellationReasons[i]` belongs to the i-th item sent, so reason i is the
  role of item i (DynamoDB returns one reason per item, "None" for the items that passed);
- a single-item write whose condition failed (DynamoDB's ConditionalCheckFailedException, S3's
  PreconditionFailed for If-None-Match): one reason, for the one item.

The first role in `Refusals.by_role` order whose item failed its condition names the refusal, given the
old item DynamoDB returned with it (ReturnValuesOnConditionCheckFailure=ALL_OLD), so naming it costs no
second read. Failing that, a cancellation caused by a concurrent transaction (TransactionConflict) is
`Refusals.conflict`'s, and anything else `Refusals.otherwise`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from ..errors import ApiError
from .items import unmarshal

R = TypeVar("R")

# What a failed condition means, given the old item (plain, as `items.unmarshal` reads it) or None
# when there was none.
Refusal = Callable[[dict[str, Any] | None], ApiError]
# One item of a transaction: its role, and its TransactItems entry ({"Put": ...}, {"Update": ...}, ...).
Step = tuple[str, dict[str, Any]]

CONDITION_FAILED = "ConditionalCheckFailed"
CONFLICT = "TransactionConflict"
# Error codes that mean "a condition refused this request", as opposed to a fault: the single-item ones
# are reported as one ConditionalCheckFailed reason for the request's one item.
_SINGLE_REFUSALS = frozenset({"ConditionalCheckFailedException", "PreconditionFailed"})
_CANCELLED = "TransactionCanceledException"


@dataclass(frozen=True, slots=True)
class Refusals:
    """What a refused write means to the caller that sent it."""

    # Role -> its refusal; when several items failed, the first role in this order names the refusal.
    by_role: Mapping[str, Refusal] = field(default_factory=dict)
    # A transaction cancelled by a concurrent one, when no role above explains it.
    conflict: Callable[[], ApiError] | None = None
    # Refused for any other reason; None re-raises the ClientError.
    otherwise: Callable[[], ApiError] | None = None


@dataclass(frozen=True, slots=True)
class Reason:
    """Why one item of a refused request was refused."""

    role: str
    code: str
    old: dict[str, Any] | None


def reasons(exc: ClientError, roles: Sequence[str]) -> list[Reason] | None:
    """The per-item reasons of a refused request, or None when the error is not a refusal."""
    code = exc.response.get("Error", {}).get("Code")
    if code == _CANCELLED:
        raw: list[dict[str, Any]] = exc.response.get("CancellationReasons") or []  # type: ignore[assignment]
        return [
            Reason(role, r.get("Code") or "None", unmarshal(r["Item"]) if r.get("Item") else None)
            for role, r in zip(roles, raw, strict=False)
        ]
    if code in _SINGLE_REFUSALS:
        old = exc.response.get("Item")
        return [Reason(roles[0], CONDITION_FAILED, unmarshal(old) if old else None)]  # type: ignore[arg-type]
    return None


def explain(found: Sequence[Reason], refusals: Refusals) -> ApiError | None:
    """The domain error a refusal means, or None when the caller gave it no meaning."""
    failed: dict[str, dict[str, Any] | None] = {}
    for r in found:
        if r.code == CONDITION_FAILED:
            failed.setdefault(r.role, r.old)
    for role, refusal in refusals.by_role.items():
        if role in failed:
            return refusal(failed[role])
    if refusals.conflict is not None and any(r.code == CONFLICT for r in found):
        return refusals.conflict()
    return refusals.otherwise() if refusals.otherwise is not None else None


def attempt(call: Callable[[], R], roles: Sequence[str], refusals: Refusals) -> R:
    """Send one write whose items have `roles`; a refusal becomes the domain error `refusals` gives it.

    Retrying TransactionConflict or throttling, when it comes, belongs here: every write passes through.
    """
    try:
        return call()
    except ClientError as exc:
        found = reasons(exc, roles)
        err = explain(found, refusals) if found is not None else None
        if err is None:
            # A fault, not a refusal (or one the caller gave no meaning): it stays the 500 it was.
            raise
        raise err from exc


def transact(ddb: Any, steps: Sequence[Step], refusals: Refusals) -> None:
    """One TransactWriteItems of `steps`, refused as `refusals` says."""
    attempt(
        lambda: ddb.transact_write_items(TransactItems=[op for _, op in steps]),
        [role for role, _ in steps],
        refusals,
    )
