"""Route handlers, one module per area; the route contract (contract.py) names each one.

A handler answers a body (None for no content) or a glue.Shown; the status is always its route's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from agent_memory.api.errors import ApiError
from agent_memory.edges import services
from agent_memory.edges.http.glue import Request, answer_of, reply_of

if TYPE_CHECKING:
    from agent_memory.edges.requests.validation import Model

# Each handler module imports its request models inside the verbs that parse them: a route's Lambda
# imports only its own verb's models, and only when its first request parses one.
M = TypeVar("M", bound="Model")
T = TypeVar("T")


def no_content(_: object) -> None:
    return None


def answered(req: Request, view: Callable[[T], object], run: Callable[[], T]) -> object:
    """Run a mutation and show its result. Under an Idempotency-Key the service settles the same answer,
    with the route's status, just before its commit, so the commit can record it (core/idempotency.py)."""
    if req.uow is None:
        return view(run())
    route = req.route
    with req.uow.viewing(lambda r: answer_of(reply_of(route, view(r)))):
        result = run()
    return view(result)


def parsed(req: Request, model: type[M], data: Any = None, prefix: str = "") -> M:
    """The request's body (or `data`, such as query parameters) as `model`.

    A refused body answers only once the caller is known: a bad token is 401 whatever the body holds,
    so a caller without credentials learns nothing of what a valid request looks like. Checking the
    token costs one read, and only on a request that is refused anyway.
    """
    from agent_memory.edges.requests.base import parse

    try:
        if req.body_error is not None and data is None:
            raise req.body_error
        return parse(model, req.body if data is None else data, prefix)
    except ApiError:
        if req.route.needs_token:
            services.resolver().principal(req.token)
        raise
