"""The in-account tool door: a Lambda an agent runtime invokes directly, with IAM instead of a bearer token.

Event: {"execution": "<uuid>", "tool": "<name>", "input": {...}}. The answer is the same dict the HTTP
tool route returns; a refusal of the call itself (unknown execution or tool, malformed event) is the
HTTP error body {"error": {"code", "message"}} without a status, since there is no HTTP here.
"""

from __future__ import annotations

import time
from typing import Any

from .. import observability, views
from ..errors import ApiError
from . import services


def invoke(event: object) -> dict[str, Any]:
    if not isinstance(event, dict):
        raise ApiError("parameter_invalid", "The event must be an object with execution, tool and input.")
    for key in ("execution", "tool", "input"):
        if key not in event:
            raise ApiError("parameter_missing", f"The event needs {key!r}.")
    execution, tool, raw = event["execution"], event["tool"], event["input"]
    if not isinstance(execution, str) or not isinstance(tool, str):
        raise ApiError("parameter_invalid", "execution and tool must be strings.")
    # IAM authorised the invoker; the execution row names the principal whose standing is checked.
    return views.tool_result(services.tools().call(execution, tool, raw, None, trusted=True))


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
