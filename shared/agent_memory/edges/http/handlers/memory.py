"""The memory verbs and the history verbs, served through every door: the route's contract entry names
the door."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.edges import services
from agent_memory.edges.http.glue import Request, Shown
from agent_memory.edges.http.handlers import answered, no_content, parsed
from agent_memory.render import views

# Request models and domain modules are imported inside the verbs that use them: a route's Lambda loads
# only its own verb's (handlers/__init__.py).
if TYPE_CHECKING:
    from agent_memory.api.contract import Door
    from agent_memory.core.context import Context
    from agent_memory.core.model import Located, ShownVersion
    from agent_memory.core.paths import MemoryPath


def _door(req: Request) -> Door:
    door = req.route.door
    if door is None:
        raise LookupError(f"route {req.route.name} serves no memory door")
    return door


def _open(
    req: Request,
    paths: tuple[MemoryPath, ...],
    speaker: str | None,
    *,
    write: bool,
    late_paths: bool = True,
    versions: tuple[int, ...] = (),
) -> Context:
    return services.resolver().door(
        _door(req),
        req.token,
        req.params,
        paths=paths,
        speaker_selector=speaker,
        write=write,
        late_paths=late_paths,
        versions=versions,
    )


def _shown(loc: Located) -> object:
    return {"memory": views.document(loc)}


def _shown_version(shown: ShownVersion) -> object:
    return {"version": views.shown_version(shown)}


def list_memory(req: Request) -> object:
    from agent_memory.edges.requests.memory import Selector

    selector = parsed(req, Selector, {"speaker_public_id": req.query.get("memory[speaker_public_id]")}, "memory")
    ctx = _open(req, (), selector.speaker_public_id, write=False)
    return {"memory": views.listing(services.memory().listing(ctx))}


def show_memory(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryShow

    m = parsed(req, MemoryShow).memory
    # Paths are parsed before any I/O, so the document rides in the resolver's first batch.
    ctx = _open(req, (m.path,), m.speaker_public_id, write=False)
    return {"memory": views.document(services.memory().show(ctx, m.path))}


def write_memory(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryWrite

    m = parsed(req, MemoryWrite).memory
    # The row rides in the first batch where its anchor is known from the URL and the caller, so a write
    # the commit would refuse is refused before its content is stored, at no extra request.
    ctx = _open(req, (m.path,), m.speaker_public_id, write=True, late_paths=False)
    return answered(
        req,
        _shown,
        lambda: services.memory().write(
            ctx,
            m.path,
            m.content,
            m.expected,
            description=m.description,
            description_given=m.description_given,
            expected_context_revision=m.expected_context_revision,
            overwrite=m.conflict_resolution == "overwrite",
        ),
    )


def edit_memory(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryEdit

    m = parsed(req, MemoryEdit).memory
    ctx = _open(req, (m.path,), m.speaker_public_id, write=True)
    return answered(
        req,
        _shown,
        lambda: services.memory().edit(
            ctx, m.path, m.old_text, m.new_text, m.expected, expected_context_revision=m.expected_context_revision
        ),
    )


def grep_memory(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryGrep

    m = parsed(req, MemoryGrep).memory
    ctx = _open(req, (), m.speaker_public_id, write=False)
    return views.grep(services.memory().grep(ctx, m.pattern, m.path, m.ignore_case, m.limit))


def delete_memory(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryDelete

    m = parsed(req, MemoryDelete).memory
    ctx = _open(req, (), m.speaker_public_id, write=True)
    return answered(
        req,
        no_content,
        lambda: services.memory().delete(
            ctx, m.path, m.expected, expected_context_revision=m.expected_context_revision
        ),
    )


# ---- history: every door serves the same four verbs ------------------------------------------------


def list_versions(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryVersions

    m = parsed(req, MemoryVersions).memory
    ctx = _open(req, (m.path,), m.speaker_public_id, write=False)
    return views.version_page(services.history().versions(ctx, m.path, m.limit, m.cursor))


def show_version(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryVersionShow

    m = parsed(req, MemoryVersionShow).memory
    ctx = _open(req, (m.path,), m.speaker_public_id, write=False, versions=(m.lock_version,))
    return {"version": views.shown_version(services.history().show(ctx, m.path, m.lock_version))}


def rollback_version(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryVersionChange

    m = parsed(req, MemoryVersionChange).memory
    ctx = _open(req, (m.path,), m.speaker_public_id, write=True, versions=(m.lock_version,))
    return answered(
        req,
        _shown,
        lambda: services.history().rollback(
            ctx, m.path, m.lock_version, m.expected, expected_context_revision=m.expected_context_revision
        ),
    )


def redact_version(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryVersionChange

    m = parsed(req, MemoryVersionChange).memory
    ctx = _open(req, (m.path,), m.speaker_public_id, write=True, versions=(m.lock_version,))
    return answered(
        req,
        _shown_version,
        lambda: services.history().redact(ctx, m.path, m.lock_version, m.expected),
    )


def review_version(req: Request) -> object:
    from agent_memory.edges.requests.memory import MemoryReview

    m = parsed(req, MemoryReview).memory
    ctx = _open(req, (m.path,), m.speaker_public_id, write=True, versions=(m.lock_version,))
    return answered(
        req,
        _reviewed,
        lambda: services.history().review(ctx, m.path, m.lock_version, m.decision, m.expected),
    )


def _reviewed(loc: Located | None) -> object:
    # A rejection with no earlier version to restore deletes the document: nothing is left to show.
    return None if loc is None else {"memory": views.document(loc)}


def export_memory(req: Request) -> object:
    """A door's export as NDJSON, one document a line; the next page's cursor in a header."""
    from agent_memory.edges.requests.memory import ExportQuery
    from agent_memory.render.export import Exporter

    cursor = parsed(req, ExportQuery, {"cursor": req.query.get("cursor")}).cursor
    door = _door(req)
    exporter = Exporter(services.store())
    if door == "workspace":
        # The room's export is for its members: the door opens with write standing.
        page = exporter.room(_open(req, (), None, write=True), cursor)
    else:
        page = exporter.own(_open(req, (), None, write=False), cursor)
    headers = {"content-type": "application/x-ndjson; charset=utf-8"}
    if page.next_cursor:
        headers["export-next-cursor"] = page.next_cursor
    return Shown(page.ndjson(), headers)
