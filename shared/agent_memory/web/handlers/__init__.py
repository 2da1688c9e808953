"""Route handlers, one module per area; the route contract (contract.py) names each one."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from ...errors import ApiError
from ...inputs.base import parse
from .. import services
from ..glue import Request

M = TypeVar("M", bound=BaseModel)


def parsed(req: Request, model: type[M], data: Any = None, prefix: str = "") -> M:
    """The request's body (or `data`, such as query parameters) as `model`.

    A refused body answers only once the caller is known: a bad token is 401 whatever the body holds,
    so a caller without credentials learns nothing of what a valid request looks like. Checking the
    token costs one read, and only on a request that is refused anyway.
    """
    try:
        if req.body_error is not None and data is None:
            raise req.body_error
        return parse(model, req.body if data is None else data, prefix)
    except ApiError:
        if req.route.needs_token:
            services.resolver().principal(req.token)
        raise
