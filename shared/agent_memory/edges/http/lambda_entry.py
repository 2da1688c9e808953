"""The Lambda entry point every function shares: `handler = entry("route_name")`.

The route's contract entry names its handler module, and only that module is imported: a directory
route's Lambda never loads the memory verbs, the grep engine or the tool models. `dispatch` is the single
place a request's errors become responses; a keyed request runs through the keyed runner (edges/keyed.py).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any

from agent_memory.api.contract import BY_NAME, RouteSpec
from agent_memory.api.errors import ApiError
from agent_memory.core import observability
from agent_memory.core.budget import ORIGIN
from agent_memory.core.idempotency import UnitOfWork
from agent_memory.edges import collector, snapstart
from agent_memory.edges.http.glue import (
    Handler,
    Reply,
    Request,
    answer_of,
    check_path_parameters,
    error_reply,
    idempotency_key,
    replayed,
    reply_of,
    response,
    to_request,
)

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def route_handler(route_name: str) -> Handler:
    """The handler function the contract names for a route ("<module>:<function>" under web.handlers)."""
    module_name, _, function = BY_NAME[route_name].handler.partition(":")
    module = importlib.import_module(f"{__package__}.handlers.{module_name}")
    fn: Handler = getattr(module, function)
    return fn


def entry(route_name: str) -> LambdaHandler:
    # The cold start's imports and clients are made with the collector paused (edges/collector.py).
    collector.hold()
    route = BY_NAME[route_name]
    fn = route_handler(route_name)
    # SnapStart: warm the route before the snapshot, refresh what must be unique after each restore.
    snapstart.register(route.handler.partition(":")[0])

    def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        try:
            return dispatch(route, fn, event, context)
        finally:
            collector.release()

    handler.__name__ = f"{route_name}_handler"
    return handler


def _served(route: RouteSpec, fn: Handler, req: Request) -> Reply:
    key = idempotency_key(req)
    if key is None:
        return reply_of(route, fn(req))
    from agent_memory.edges.http.idempotent import open_request
    from agent_memory.edges.keyed import Keyed, Replay, run

    def attempt(uow: UnitOfWork) -> Reply:
        req.uow = uow
        return reply_of(route, fn(req))

    out = run(Keyed(lambda: open_request(req, key), attempt, answer_of))
    if not isinstance(out, Replay):
        return out
    from agent_memory.edges.http.refill import refilled

    return replayed(refilled(req, out.answer))


def dispatch(route: RouteSpec, fn: Handler, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """Run one route's handler on one event; the single place errors become responses."""
    observability.bind_lambda_context(context)
    started = time.perf_counter()
    code = None
    try:
        req = to_request(route, event)
        ORIGIN.set(req.source_ip or None)
        if route.needs_token and req.cookies and "authorization" not in req.headers:
            # A browser's console session stands for the token it was opened with (edges/http/console.py).
            from agent_memory.edges.http.console import cookie_caller

            req.token = cookie_caller(req)
        if route.needs_token and req.token is None:
            # No or malformed credentials answer 401 before anything else is looked at.
            if route.media == "text/html":
                # A page opened in a browser, which sends no Bearer header: say where a person signs in.
                raise ApiError(
                    "not_authenticated",
                    "A browser opens this page in the console: go to /console#/map and sign in with a Human's "
                    "token (or send 'Authorization: Bearer <token>').",
                )
            raise ApiError("not_authenticated", "Send a valid token as 'Authorization: Bearer <token>'.")
        check_path_parameters(route, req.params)
        reply = _served(route, fn, req)
    except ApiError as err:
        code = err.code
        reply = error_reply(err)
    except Exception:
        code = "internal_error"
        observability.logger().exception("unhandled error", extra={"route": route.name})
        reply = error_reply(ApiError("internal_error", "Something went wrong on our side; nothing was changed."))
    observability.record_request(
        route.name, status=reply.status, error_code=code, ms=round((time.perf_counter() - started) * 1000, 2)
    )
    return response(reply)
