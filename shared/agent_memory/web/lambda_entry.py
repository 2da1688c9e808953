"""The Lambda entry point every function shares: `handler = entry("route_name")`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .glue import dispatch
from .routes import BY_NAME

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def entry(route_name: str) -> LambdaHandler:
    route = BY_NAME[route_name]

    def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        return dispatch(
            route.name, route.fn, event, needs_token=route.access not in ("operator", "public"), context=context
        )

    handler.__name__ = f"{route_name}_handler"
    return handler
