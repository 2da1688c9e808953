"""An HTTP replay's text, read again through the route's read twin (core/idempotency.refill).

Each route whose answer carries stored text has a read route that shows the same object: a door's
`versions/show`, a Memory file's `files/versions/show`, a record's show, an entry's show. The twin's own
handler runs with the caller's token and the route's path parameters, so the replay passes exactly the
checks a read would (a caller who lost the Memory since reads nothing); the session routes and the tool
route read through the execution (edges/refill.py).
"""

from __future__ import annotations

import importlib
from typing import Any

from agent_memory.api.contract import BY_NAME
from agent_memory.core.idempotency import Answer, refill
from agent_memory.edges.http.glue import Request, Shown
from agent_memory.edges.refill import Reread, same_lock_version, session


def _twin(req: Request, name: str, body: dict[str, Any], params: dict[str, str] | None = None) -> Any:
    """The answer body of read route `name` for this request's caller."""
    route = BY_NAME[name]
    twin = Request(
        route=route,
        method=route.method,
        path=req.path,
        params=params if params is not None else dict(req.params),
        query={},
        headers={k: v for k, v in req.headers.items() if k != "idempotency-key"},
        body=body,
        token=req.token,
        request_id=req.request_id,
        source_ip=req.source_ip,
    )
    module, _, function = route.handler.partition(":")
    out = getattr(importlib.import_module(f"agent_memory.edges.http.handlers.{module}"), function)(twin)
    return out.body if isinstance(out, Shown) else out


def _version(req: Request, name: str, wrapper: str, obj: dict[str, Any], extra: dict[str, Any]) -> Any:
    path, number = obj.get("path"), obj.get("lock_version")
    if not isinstance(path, str) or not isinstance(number, int):
        return None
    shown = _twin(req, name, {wrapper: {"path": path, "lock_version": number, **extra}})["version"]
    # The rule of edges/refill.same_version, on the rendered version.
    if shown.get("public_id") != obj.get("public_id") or shown.get("content_sha256") != obj.get("content_sha256"):
        return None
    return shown.get("content")


def rereader(req: Request) -> Reread:
    route = req.route

    def reread(obj: dict[str, Any], field: str) -> Any:
        if route.name == "call_tool" or route.name.startswith("execution_file_"):
            return session(req.params["execution_public_id"], req.token)(obj, field)
        if field == "content" and "content_sha256" in obj:
            if route.door is not None:
                memory = req.body.get("memory")
                speaker = memory.get("speaker_public_id") if isinstance(memory, dict) else None
                extra = {} if speaker is None else {"speaker_public_id": speaker}
                return _version(req, f"{route.door}_memory_version_show", "memory", obj, extra)
            if route.name == "workspace_memory_promote":
                return _version(req, "workspace_memory_version_show", "memory", obj, {})
            if route.name.startswith("memory_file"):
                return _version(req, "memory_file_version_show", "file", obj, {})
            return None
        if field == "content" and "layer" in obj:
            params = {"workspace_public_id": req.params["workspace_public_id"], "record_public_id": obj["public_id"]}
            found = _twin(req, "record_show", {}, params)["record"]
            return same_lock_version(found, obj, field)
        if field == "value" and route.name.startswith("conversation_store_entry"):
            found = _twin(req, "conversation_store_entry_show", {"entry": {"key": obj.get("key")}})["entry"]
            return same_lock_version(found, obj, field)
        return None

    return reread


def refilled(req: Request, answer: Answer) -> Answer:
    """The recorded answer with its withheld text read again (or left null, and named, where it is gone)."""
    return Answer(answer.status, refill(answer.body, rereader(req)))
