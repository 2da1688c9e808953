"""Reading again, on an Idempotency-Key replay, the text its record left out (core/idempotency.refill).

A key record keeps the answer without its stored text, so a redaction or a deletion reaches it at once.
A replay asks the service for that text again, through the same doors and standing checks a read takes,
and accepts it only when it is the very version the first answer showed: a document's `(public_id,
lock_version)` with the same hash, a record or an entry at the same lock_version. A version redacted since
reads as null; a document, record or entry deleted or replaced since reads as null.

The HTTP routes re-read through their read twin's handler (edges/http/refill.py); the model's tools and
the session files API through the execution, here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_memory.edges import services

if TYPE_CHECKING:
    from agent_memory.core.ids import PresentedToken
    from agent_memory.core.model import ShownVersion

Reread = Callable[[dict[str, Any], str], Any]


def same_version(shown: ShownVersion, obj: dict[str, Any]) -> str | None:
    """The version's text when it is the one the recorded answer showed (same document, same bytes)."""
    v = shown.version
    if v.public_id != obj.get("public_id") or v.sha256 != obj.get("content_sha256"):
        return None
    return shown.content


def same_lock_version(found: dict[str, Any], obj: dict[str, Any], field: str) -> Any:
    """A record's or an entry's field as read now, when it is still at the version the answer showed."""
    return found.get(field) if found.get("lock_version") == obj.get("lock_version") else None


def session(execution_id: str, presented: PresentedToken | None, secret: str | None = None) -> Reread:
    """Re-reads for an execution's answers (its tools, its files API): a document version by the path the
    answer named (root-relative or inside a mount), a record through the execution's workspace."""

    def reread(obj: dict[str, Any], field: str) -> Any:
        from agent_memory.domain.memories.mounts import locate, mounted_refs, relative_paths

        path, number = obj.get("path"), obj.get("lock_version")
        if field == "content" and "content_sha256" in obj and isinstance(path, str) and isinstance(number, int):
            ex, ctx = services.resolver().execution(
                execution_id,
                presented,
                secret=secret,
                paths=relative_paths(path),
                mounted=lambda ex: mounted_refs(ex, (path,)),
            )
            placed = locate(ex, ctx, path)
            return same_version(services.history().show(placed.context, placed.path, number), obj)
        if field == "content" and "layer" in obj:
            from agent_memory.domain.records.service import InExecution
            from agent_memory.render import views

            ex, ctx = services.resolver().execution(execution_id, presented, secret=secret)
            acting = InExecution(ctx.principal, ex.public_id)
            found = views.record(services.records().show(acting, ex.workspace_id, str(obj.get("public_id"))))
            return same_lock_version(found, obj, field)
        return None

    return reread
