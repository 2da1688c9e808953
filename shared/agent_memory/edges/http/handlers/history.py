"""Promote: copy one version of a document the caller reads into the workspace's shared memory.

The per-door history verbs (versions, one version, rollback, redaction) live with the other memory verbs
in memory.py; promote has one door of its own, since its source may sit behind any of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.edges import services
from agent_memory.edges.http.glue import Request
from agent_memory.edges.http.handlers import answered, parsed
from agent_memory.render import views

# Request models and domain modules are imported inside the verbs that use them: a route's Lambda loads
# only its own verb's (handlers/__init__.py).
if TYPE_CHECKING:
    from agent_memory.core.context import Context
    from agent_memory.core.model import Located
    from agent_memory.core.ports import Ref
    from agent_memory.edges.requests.memory import PromoteFields


def _source_context(req: Request, p: PromoteFields, ws: str, extra: tuple[Ref, ...]) -> Context:
    """Where the source is read: the conversation it names, else the workspace or the caller's own root.
    `extra` rows ride in its batch."""
    r, src = services.resolver(), p.source
    numbers = (src.lock_version,)
    if src.conversation_public_id is not None:
        return r.conversation(
            req.token,
            ws,
            src.conversation_public_id,
            paths=(src.path,),
            speaker_selector=src.speaker_public_id,
            versions=numbers,
            extra=extra,
        )
    if src.path.root == "workspace":
        return r.workspace(req.token, ws, paths=(src.path,), speaker_selector=src.speaker_public_id, versions=numbers)
    return r.profile(
        req.token, paths=(src.path,), speaker_selector=src.speaker_public_id, versions=numbers, extra=extra
    )


def _promoted(loc: Located) -> object:
    return {"memory": views.document(loc)}


def promote(req: Request) -> object:
    from agent_memory.edges.requests.memory import Promote

    p = parsed(req, Promote).promote
    ws = req.params["workspace_public_id"]
    r = services.resolver()
    if p.source.conversation_public_id is None and p.source.path.root == "workspace":
        # Within one workspace's own memory: one Context reads the source and writes the target, so the
        # caller's rows and both documents come in one batch.
        source = target = r.workspace(
            req.token, ws, paths=(p.source.path, p.target_path), write=True, versions=(p.source.lock_version,)
        )
    else:
        from agent_memory.core.resolver import workspace_refs

        # The target's rows are known from the URL and the body: they ride in the source's batch, so the
        # target's door opens without a round trip of its own.
        source = _source_context(req, p, ws, workspace_refs(req.token, ws, (p.target_path,)))
        target = r.workspace_context_of(source, ws, paths=(p.target_path,), write=True)
    return answered(
        req,
        _promoted,
        lambda: services.history().promote(
            source, p.source.path, p.source.lock_version, target, p.target_path, p.expected, description=p.description
        ),
    )
