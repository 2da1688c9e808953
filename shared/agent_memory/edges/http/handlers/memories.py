"""Organization Memories: the Memory as a whole, its files (the seed's six verbs and the history verbs,
through the Memory's one root), leases, promote, Git sync, agents' attachments and the memory map."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.edges import services
from agent_memory.edges.http.glue import Request, Shown
from agent_memory.edges.http.handlers import answered, no_content, parsed
from agent_memory.render import views

# Request models and domain modules are imported inside the verbs that use them: a route's Lambda loads
# only its own verb's (handlers/__init__.py).
if TYPE_CHECKING:
    from agent_memory.core.model import Agent, Located
    from agent_memory.core.paths import MemoryPath
    from agent_memory.core.resolver import MemoryDoor
    from agent_memory.domain.memories.service import MemoryView


def _memory(view: MemoryView) -> object:
    return {"memory": views.memory(view)}


def _file(loc: Located) -> object:
    return {"file": views.file(loc)}


def _door(req: Request, paths: tuple[MemoryPath, ...] = (), versions: tuple[int, ...] = ()) -> MemoryDoor:
    from agent_memory.domain.memories.service import check_memory_id

    return services.resolver().memory(
        req.token, check_memory_id(req.params["memory_id"]), paths=paths, versions=versions
    )


# ---- the Memory ----------------------------------------------------------------------------------------


def create_memory(req: Request) -> object:
    from agent_memory.domain.memories.service import MemorySpec
    from agent_memory.edges.requests.memories import CreateMemory

    m = parsed(req, CreateMemory).memory
    spec = MemorySpec(
        name=m.name,
        description=m.description,
        files=[(f.path, f.content) for f in m.files],
        git=None if m.source is None else (m.source.url, m.source.ref, m.source.path),
        default=None if m.default is None else m.default.value(),
        access=None if m.access is None else m.access.value(),
    )
    return answered(req, _memory, lambda: services.memories().create(req.token, spec))


def list_memories(req: Request) -> object:
    from agent_memory.edges.requests.memories import MemoriesQuery

    q = parsed(req, MemoriesQuery, {"limit": req.query.get("limit"), "cursor": req.query.get("cursor")})
    return views.memory_page(services.memories().listing(req.token, q.limit, q.cursor))


def show_memory(req: Request) -> object:
    view = services.memories().show(req.token, req.params["memory_id"])
    return {"memory": views.memory(view)}


def update_memory(req: Request) -> object:
    from agent_memory.domain.memories.service import MemoryPatch
    from agent_memory.edges.requests.memories import PatchMemory

    m = parsed(req, PatchMemory).memory
    change = MemoryPatch(
        description=m.description,
        default_given=m.given("default"),
        default=None if m.default is None else m.default.value(),
        access_given=m.given("access"),
        access=None if m.access is None else m.access.value(),
    )
    return answered(req, _memory, lambda: services.memories().patch(req.token, req.params["memory_id"], change))


def archive_memory(req: Request) -> object:
    return answered(req, _memory, lambda: services.memories().archive(req.token, req.params["memory_id"]))


def delete_memory(req: Request) -> object:
    return answered(req, no_content, lambda: services.memories().delete(req.token, req.params["memory_id"]))


def sync_memory(req: Request) -> object:
    return answered(
        req,
        lambda result: views.sync(result),
        lambda: services.memories().sync(req.token, req.params["memory_id"]),
    )


def promote_memory(req: Request) -> object:
    from agent_memory.core.paths import parse_document_path, parse_file_path
    from agent_memory.edges.requests.memories import PromoteToMemory

    p = parsed(req, PromoteToMemory).promote
    src = p.source
    resolver = services.resolver()
    if src.memory_id is not None:
        path = parse_file_path(src.path)
        ctx = services.resolver().memory(req.token, src.memory_id, paths=(path,), versions=(src.lock_version,)).context
    else:
        path = parse_document_path(src.path)
        ws = src.workspace_public_id or ""
        if src.conversation_public_id is not None:
            ctx = resolver.conversation(
                req.token, ws, src.conversation_public_id, paths=(path,), versions=(src.lock_version,)
            )
        else:
            ctx = resolver.workspace(req.token, ws, paths=(path,), versions=(src.lock_version,))
    return answered(
        req,
        _memory,
        lambda: services.memories().promote(
            req.token,
            ctx,
            path,
            src.lock_version,
            src.memory_id,
            p.name,
            p.description,
            p.file_path,
            None if p.default is None else p.default.value(),
        ),
    )


# ---- files -----------------------------------------------------------------------------------------------


def list_files(req: Request) -> object:
    from agent_memory.edges.requests.memories import FilesQuery

    q = parsed(
        req,
        FilesQuery,
        {"prefix": req.query.get("prefix"), "limit": req.query.get("limit"), "cursor": req.query.get("cursor")},
    )
    page = services.memories().files(req.token, req.params["memory_id"], q.prefix, q.limit, q.cursor)
    return views.file_page(page)


def show_file(req: Request) -> object:
    from agent_memory.edges.requests.memories import FileShow

    f = parsed(req, FileShow).file
    ctx = _door(req, (f.path,)).context
    return {"file": views.file(services.memory().show(ctx, f.path))}


def write_file(req: Request) -> object:
    from agent_memory.edges.requests.memories import FileWrite

    f = parsed(req, FileWrite).file
    ctx = _door(req, (f.path,)).context
    return answered(
        req,
        _file,
        lambda: services.memory().write(
            ctx, f.path, f.content, f.expected, overwrite=f.conflict_resolution == "overwrite"
        ),
    )


def edit_file(req: Request) -> object:
    from agent_memory.edges.requests.memories import FileEdit

    f = parsed(req, FileEdit).file
    ctx = _door(req, (f.path,)).context
    return answered(req, _file, lambda: services.memory().edit(ctx, f.path, f.old_text, f.new_text, f.expected))


def delete_file(req: Request) -> object:
    from agent_memory.edges.requests.memories import FileDelete

    f = parsed(req, FileDelete).file
    ctx = _door(req, (f.path,)).context
    return answered(req, no_content, lambda: services.memory().delete(ctx, f.path, f.expected))


def grep_files(req: Request) -> object:
    from agent_memory.edges.requests.memories import FileGrep

    f = parsed(req, FileGrep).file
    ctx = _door(req).context
    prefix = f.path if f.path is not None and f.path.rest else None
    return views.grep(services.memory().grep(ctx, f.pattern, prefix, f.ignore_case, f.limit))


def file_versions(req: Request) -> object:
    from agent_memory.edges.requests.memories import FileVersions

    f = parsed(req, FileVersions).file
    ctx = _door(req, (f.path,)).context
    return views.version_page(services.history().versions(ctx, f.path, f.limit, f.cursor))


def show_file_version(req: Request) -> object:
    from agent_memory.edges.requests.memories import FileVersionShow

    f = parsed(req, FileVersionShow).file
    ctx = _door(req, (f.path,), (f.lock_version,)).context
    return {"version": views.shown_version(services.history().show(ctx, f.path, f.lock_version))}


def rollback_file(req: Request) -> object:
    from agent_memory.edges.requests.memories import FileRollback

    f = parsed(req, FileRollback).file
    ctx = _door(req, (f.path,), (f.lock_version,)).context
    return answered(req, _file, lambda: services.history().rollback(ctx, f.path, f.lock_version, f.expected))


def redact_file_version(req: Request) -> object:
    from agent_memory.edges.requests.memories import FileVersionRedact

    f = parsed(req, FileVersionRedact).file
    ctx = _door(req, (f.path,), (f.lock_version,)).context
    return answered(
        req,
        lambda shown: {"version": views.shown_version(shown)},
        lambda: services.history().redact(ctx, f.path, f.lock_version, f.expected),
    )


def lease_file(req: Request) -> object:
    from agent_memory.edges.requests.memories import FileLease

    f = parsed(req, FileLease).file
    return answered(
        req,
        lambda lease: {"lease": views.lease(lease)},
        lambda: services.memories().lease(req.token, req.params["memory_id"], f.path, f.seconds),
    )


# ---- agents -------------------------------------------------------------------------------------------------


def _agent(a: Agent) -> object:
    return {"agent": views.agent(a)}


def show_agent(req: Request) -> object:
    return _agent(services.memories().agent(req.token, req.params["agent_public_id"]))


def update_agent(req: Request) -> object:
    from agent_memory.domain.memories.service import AgentPatch
    from agent_memory.edges.requests.memories import PatchAgent

    a = parsed(req, PatchAgent).agent
    change = AgentPatch(
        memories=None if a.memories is None else [m.value() for m in a.memories],
        deployment_given=a.given("deployment"),
        deployment=a.deployment,
    )
    return answered(
        req, _agent, lambda: services.memories().update_agent(req.token, req.params["agent_public_id"], change)
    )


def agent_memories(req: Request) -> object:
    rows = services.memories().effective(req.token, req.params["agent_public_id"])
    return views.effective_memories(rows)


# ---- the map -------------------------------------------------------------------------------------------------


def memory_map(req: Request) -> object:
    return services.memories().graph(req.token)


def memory_map_page(req: Request) -> object:
    from agent_memory.render.mapview import CONTENT_SECURITY_POLICY, render_map_html

    page = render_map_html(services.memories().graph(req.token))
    # The page's own policy, sent as a header too: no script, no fetch, whatever a name holds.
    headers = {"content-type": "text/html; charset=utf-8", "content-security-policy": CONTENT_SECURITY_POLICY}
    return Shown(page, headers)
