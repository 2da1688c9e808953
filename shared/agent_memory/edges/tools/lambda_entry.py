"""The in-account tool door: a Lambda an agent runtime invokes directly, without HTTP.

Event: {"execution": "<uuid>", "tool": "<name>", "input": {...}} plus the caller's proof: "secret" (the
execution's own, returned once when it was created) or "token" (the principal's bearer token), and
optionally "idempotency_key" (the HTTP header's rules: the same call again answers the first answer). IAM lets
a runtime invoke the function at all; it vouches for no tenant, so every call proves which execution it
may drive. The answer is the same dict the HTTP tool route returns; a refusal of the call itself
(unknown or expired execution, bad proof, malformed event) is the HTTP error body
{"error": {"code", "message"}} without a status, since there is no HTTP here.
"""

from __future__ import annotations

import time
from typing import Any

from agent_memory.api.errors import ApiError
from agent_memory.core import observability
from agent_memory.core.idempotency import GUARD, Replayed, answering, check_key, final
from agent_memory.core.ids import PresentedToken, parse_token
from agent_memory.edges import services
from agent_memory.edges.http.glue import Reply
from agent_memory.render import views

# Everything an event may carry; anything else is a mistake its sender should hear about.
EVENT_FIELDS = ("execution", "tool", "input", "secret", "token", "idempotency_key")


def invoke(event: object) -> dict[str, Any]:
    if not isinstance(event, dict):
        raise ApiError("parameter_invalid", "The event must be an object with execution, tool and input.")
    stray = [k for k in event if k not in EVENT_FIELDS]
    if stray:
        from agent_memory.edges.requests.base import unknown_field  # pydantic, only for a refused event

        raise unknown_field(str(stray[0])[:64], list(EVENT_FIELDS))
    for key in ("execution", "tool", "input"):
        if key not in event:
            raise ApiError("parameter_missing", f"The event needs {key!r}.")
    execution, tool, raw = event["execution"], event["tool"], event["input"]
    if not isinstance(execution, str) or not isinstance(tool, str):
        raise ApiError("parameter_invalid", "execution and tool must be strings.")
    secret, token = event.get("secret"), event.get("token")
    presented = parse_token(token) if isinstance(token, str) else None
    if not (isinstance(secret, str) and secret) and presented is None:
        raise ApiError(
            "not_authenticated", "Send the execution's secret (as 'secret') or the principal's token (as 'token')."
        )
    proof = secret if isinstance(secret, str) and secret else None
    idem = event.get("idempotency_key")
    if idem is None:
        return views.tool_result(services.tools().call(execution, tool, raw, presented, secret=proof))
    if not isinstance(idem, str):
        raise ApiError("parameter_invalid", "idempotency_key must be a string.")
    return _keyed(execution, tool, raw, presented, proof, check_key(idem), token if isinstance(token, str) else None)


def _keyed(
    execution: str,
    tool: str,
    raw: object,
    presented: PresentedToken | None,
    proof: str | None,
    key: str,
    token: str | None,
) -> dict[str, Any]:
    """A keyed call: replayed when its key already answered it, else run with its answer recorded."""
    from agent_memory.core.ids import is_uuid
    from agent_memory.edges.http.idempotent import open_tool_guard, record_reply

    if not is_uuid(execution):
        raise ApiError("not_found", "There is no such execution.")
    try:
        guard = open_tool_guard(execution, tool, raw, key, proof, token)
    except Replayed as done:
        return dict(done.answer.body)
    reset = GUARD.set(guard)
    try:
        with answering(lambda r: Reply(200, views.tool_result(r))):
            try:
                out = views.tool_result(services.tools().call(execution, tool, raw, presented, secret=proof))
            except Replayed as done:
                return dict(done.answer.body)
        if not guard.stored and final(200, out):
            found = record_reply(guard, Reply(200, out))
            if found is not None:
                return dict(found.body)
        return out
    finally:
        GUARD.reset(reset)


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    observability.bind_lambda_context(context)
    started = time.perf_counter()
    code = None
    try:
        out = invoke(event)
        code = out.get("code")
    except ApiError as err:
        code = err.code
        out = err.body()
    except Exception:
        code = "internal_error"
        observability.logger().exception("unhandled error", extra={"route": "tool_invoke"})
        out = ApiError("internal_error", "Something went wrong on our side; nothing was changed.").body()
    tool = event.get("tool") if isinstance(event, dict) else None
    # The route, not the tool, is the metric dimension: `tool` comes from the invoker and may be any string.
    observability.record_request(
        "tool_invoke",
        status=None,
        error_code=code,
        ms=round((time.perf_counter() - started) * 1000, 2),
        message="tool_invoke",
        tool=tool if isinstance(tool, str) else None,
    )
    return out
