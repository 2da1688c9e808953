"""The answer to a request no route matches (contract.UNKNOWN_ROUTE, the HTTP API's `$default` route)."""

from __future__ import annotations

import re
from functools import cache

from agent_memory.api.contract import API, ROUTES
from agent_memory.api.errors import ApiError
from agent_memory.edges.http.glue import Reply, Request


@cache
def _patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    # A path parameter matches one segment, as API Gateway matches `{name}`.
    return tuple((re.compile(re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(r.path)) + r"\Z"), r.method) for r in ROUTES)


def unknown_route(req: Request) -> Reply:
    methods = sorted({method for pattern, method in _patterns() if pattern.match(req.path)})
    listed = f"Every route is listed in GET {API}/openapi.json."
    if methods:
        raise ApiError(
            "not_found", f"{req.path} does not answer {req.method}: send {' or '.join(methods)} instead. {listed}"
        )
    raise ApiError("not_found", f"No route answers {req.method} {req.path}. {listed}")
