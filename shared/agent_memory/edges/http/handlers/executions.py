"""Executions, the model's tools over HTTP, and the tools' published schemas."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from agent_memory.api.errors import ApiError
from agent_memory.edges import services
from agent_memory.edges.http.glue import Request
from agent_memory.edges.http.handlers import answered, no_content, parsed
from agent_memory.render import views

# Request models and domain modules are imported inside the verbs that use them: a route's Lambda loads
# only its own verb's (handlers/__init__.py).
if TYPE_CHECKING:
    from agent_memory.core.model import ToolResult
    from agent_memory.domain.directory.executions import NewExecution

if TYPE_CHECKING:
    from agent_memory.core.model import Located

T = TypeVar("T")


def create_execution(req: Request) -> object:
    from agent_memory.edges.requests.executions import CreateExecution

    e = parsed(req, CreateExecution).execution
    p = req.params
    return answered(
        req,
        _execution,
        lambda: services.executions().create(
            req.token,
            p["workspace_public_id"],
            p["conversation_public_id"],
            speaker_id=e.speaker_public_id,
            parent_id=e.parent_execution_public_id,
            delegate_id=e.delegate_to_agent_public_id,
            mail_from_id=e.mail_from_execution_public_id,
            tools=e.tools,
            capabilities=e.capabilities,
        ),
    )


def _execution(new: NewExecution) -> object:
    return {"execution": views.execution(new.execution), "secret": new.secret}


def stop_execution(req: Request) -> object:
    return answered(
        req,
        lambda ex: {"execution": views.execution(ex, stopped=True)},
        lambda: services.executions().stop(req.token, req.params["execution_public_id"]),
    )


def _tool_result(result: ToolResult) -> object:
    return views.tool_result(result)


def call_tool(req: Request) -> object:
    from agent_memory.core.idempotency import without_key
    from agent_memory.edges.requests.executions import CallTool

    body = parsed(req, CallTool)
    p = req.params
    # The key the input may carry is the call's (edges/http/glue.py read it), not one of the tool's arguments.
    tool_input = without_key(body.input)
    return answered(
        req,
        _tool_result,
        lambda: services.tools().call(p["execution_public_id"], p["tool_name"], tool_input, req.token),
    )


def tool_schemas(req: Request) -> object:
    from agent_memory.edges.tools.dispatch import tool_schemas as schemas

    return {"tools": schemas(req.query.get("format") or "anthropic")}


def execution_memory_block(req: Request) -> object:
    from agent_memory.edges.requests.executions import ExecutionMemoryBlock, ExecutionMemoryBlockFields

    # Every field has a default, so an empty body asks for the default block.
    b = parsed(req, ExecutionMemoryBlock).memory_block if req.body or req.body_error else ExecutionMemoryBlockFields()
    ex, ctx = services.resolver().execution(req.params["execution_public_id"], req.token)
    return {"memory_block": views.block(services.block().assemble_session(ex, ctx, b.budget_bytes))}


# ---- the session's file tree ------------------------------------------------------------------------------


def execution_mounts(req: Request) -> object:
    ex, _ = services.resolver().execution(req.params["execution_public_id"], req.token)
    return {"mounts": [views.mount(m) for m in ex.mounts]}


def _placed(req: Request, *, change: bool = False) -> tuple[Any, Any]:
    from agent_memory.domain.memories.mounts import locate, mounted_refs, relative_paths
    from agent_memory.edges.requests.executions import SessionFile, SessionFileChange

    f = parsed(req, SessionFileChange).file if change else parsed(req, SessionFile).file
    # A root-relative path is parsed before any I/O, so its document rides in the resolver's batch; so do
    # a mounted Memory's row and file, once the execution names the mount.
    ex, ctx = services.resolver().execution(
        req.params["execution_public_id"],
        req.token,
        paths=relative_paths(f.path),
        mounted=lambda ex: mounted_refs(ex, (f.path,)),
    )
    return f, locate(ex, ctx, f.path)


def _session_file(loc: Any) -> object:
    return {"file": views.file(loc)}


def session_files_list(req: Request) -> object:
    from agent_memory.domain.memories.mounts import SessionFiles
    from agent_memory.edges.requests.executions import SessionFile

    f = parsed(req, SessionFile).file
    ex, ctx = services.resolver().execution(req.params["execution_public_id"], req.token)
    rows = SessionFiles(services.memory()).listing(ex, ctx, f.path)
    return {"files": [views.file_summary(loc.document, path) for path, loc in rows], "roots": views.roots(ctx)}


def session_file_show(req: Request) -> object:
    _, placed = _placed(req)
    loc = services.memory().show(placed.context, placed.path)
    return {"file": views.file(_absolute(placed, loc))}


def _required(value: str | None, field: str) -> str:
    if value is None:
        raise ApiError("parameter_missing", f"file.{field} is required.")
    return value


def session_file_write(req: Request) -> object:
    f, placed = _placed(req, change=True)
    content = _required(f.content, "content")
    placed.require_writable()
    return answered(
        req,
        _session_file,
        _committed(
            (placed,),
            lambda: _absolute(
                placed,
                services.memory().write(
                    placed.context,
                    placed.path,
                    content,
                    f.expected,
                    overwrite=f.conflict_resolution == "overwrite",
                ),
            ),
        ),
    )


def session_file_edit(req: Request) -> object:
    f, placed = _placed(req, change=True)
    old, new = _required(f.old_text, "old_text"), _required(f.new_text, "new_text")
    placed.require_writable()
    return answered(
        req,
        _session_file,
        _committed(
            (placed,),
            lambda: _absolute(placed, services.memory().edit(placed.context, placed.path, old, new, f.expected)),
        ),
    )


def session_file_delete(req: Request) -> object:
    f, placed = _placed(req, change=True)
    placed.require_writable()
    return answered(
        req,
        no_content,
        _committed((placed,), lambda: services.memory().delete(placed.context, placed.path, f.expected)),
    )


def session_file_rename(req: Request) -> object:
    from agent_memory.domain.memories.mounts import locate_all, mounted_refs, relative_paths
    from agent_memory.edges.requests.executions import SessionFileRename

    f = parsed(req, SessionFileRename).file
    # Both documents ride in the resolver's batch, a root's or a mounted Memory's (with that Memory's row).
    ex, ctx = services.resolver().execution(
        req.params["execution_public_id"],
        req.token,
        paths=relative_paths(f.path, f.new_path),
        mounted=lambda ex: mounted_refs(ex, (f.path, f.new_path)),
    )
    old, new = locate_all(ex, ctx, (f.path, f.new_path))
    old.require_writable()
    new.require_writable()
    return answered(
        req,
        _session_file,
        _committed(
            (old, new),
            lambda: _absolute(
                new,
                services.memory().rename(old.context, old.path, new.context, new.path, f.expected, shown=old.name),
            ),
        ),
    )


def _committed(placed: tuple[Any, ...], change: Callable[[], T]) -> Callable[[], T]:
    from agent_memory.domain.memories.mounts import committed

    return committed(placed, change)


def _absolute(placed: Any, loc: Located) -> Located:
    """A file as the session names it: by its absolute path."""
    from agent_memory.core.model import Located

    return Located(placed.absolute(loc.document.rest), loc.document, loc.content)
