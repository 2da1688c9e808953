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

from agent_memory.api.contract import BY_NAME
from agent_memory.api.errors import ApiError
from agent_memory.core import observability
from agent_memory.core.idempotency import (
    KEY_FIELD,
    Answer,
    UnitOfWork,
    fingerprint,
    judge,
    one_key,
    unit_of_work,
    without_key,
)
from agent_memory.core.ids import PresentedToken, parse_token
from agent_memory.edges import collector, services, snapstart
from agent_memory.render import views

# Everything an event may carry; anything else is a mistake its sender should hear about.
EVENT_FIELDS = ("execution", "tool", "input", "secret", "token", "idempotency_key")


def invoke(event: object) -> dict[str, Any]:
    if not isinstance(event, dict):
        raise ApiError("parameter_invalid", "The event must be an object with execution, tool and input.")
    stray = [k for k in event if k not in EVENT_FIELDS]
    if stray:
        from agent_memory.edges.requests.base import unknown_field  # only for a refused event

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
    # The key beside the input and the key inside it (the model's own argument) mean the one key.
    idem = one_key(
        [
            (KEY_FIELD, event.get(KEY_FIELD)),
            (f"input.{KEY_FIELD}", raw.get(KEY_FIELD) if isinstance(raw, dict) else None),
        ]
    )
    raw = without_key(raw)
    if idem is None:
        return views.tool_result(services.tools().call(execution, tool, raw, presented, secret=proof))
    return _keyed(execution, tool, raw, presented, proof, idem, token if isinstance(token, str) else None)


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
    from agent_memory.edges.keyed import Keyed, Replay, run

    if not is_uuid(execution):
        raise ApiError("not_found", "There is no such execution.")

    # The answer is the HTTP tool route's, recorded with that route's status.
    status = BY_NAME["call_tool"].status

    def attempt(uow: UnitOfWork) -> dict[str, Any]:
        with uow.viewing(lambda result: Answer(status, views.tool_result(result))):
            return views.tool_result(services.tools().call(execution, tool, raw, presented, secret=proof))

    out = run(
        Keyed(
            lambda: open_call(execution, tool, raw, key, proof, token),
            attempt,
            lambda body: Answer(status, body),
            # A refusal of the call itself (a bad proof, an unknown tool) is not the key's answer: the
            # model's refusals come back as results, and those are recorded.
            refusals=False,
        )
    )
    if not isinstance(out, Replay):
        return out
    from agent_memory.core.idempotency import refill
    from agent_memory.edges.refill import session

    return dict(refill(out.answer.body, session(execution, presented, proof)))


def open_call(
    execution_id: str, tool: str, raw_input: object, key: str, secret: str | None, token: str | None
) -> UnitOfWork:
    """The unit of work of a keyed call of the in-account tool function, scoped to the caller it proves to be.

    A call proven by the execution's secret is scoped to that execution (whose principal is fixed), and
    the secret is checked before any record is used."""
    from agent_memory.core.ids import digests_equal, parse_token, token_digest
    from agent_memory.core.ports import Ref
    from agent_memory.core.resolver import _unauthenticated

    print_ = fingerprint("INVOKE", "tool_invoke", {"execution": execution_id, "tool": tool}, raw_input)
    store = services.resolver().store
    presented = parse_token(token) if token else None
    if presented is not None and not secret:
        uow = unit_of_work(presented.principal_id, key, print_)
        ref = Ref.idempotency(uow.scope, uow.key_digest)
        _, got = services.resolver().first_round(presented, [ref])
    else:
        uow = unit_of_work(f"execution:{execution_id}", key, print_)
        ref = Ref.idempotency(uow.scope, uow.key_digest)
        eref = Ref.execution(execution_id)
        got = store.get_many([eref, ref])
        ex = got[eref]
        if ex is None or not digests_equal(ex.secret_digest or "", token_digest(secret or "")):
            raise _unauthenticated()
    judge(uow, got[ref])
    return uow


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    try:
        return _handled(event, context)
    finally:
        collector.release()


def _handled(event: dict[str, Any], context: Any) -> dict[str, Any]:
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


# The cold start's imports and clients are made with the collector paused (edges/collector.py).
collector.hold()
# SnapStart: the tool models and the store's clients before the snapshot, fresh uniqueness after a restore.
snapstart.register("tools")
