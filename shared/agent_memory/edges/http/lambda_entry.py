"""The Lambda entry point every function shares: `handler = entry("route_name")`.

The route's contract entry names its handler module, and only that module is imported: a directory
route's Lambda never loads the memory verbs, the grep engine or the tool models.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from agent_memory.api.contract import BY_NAME
from agent_memory.edges.http.glue import Handler, dispatch

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def route_handler(route_name: str) -> Handler:
    """The handler function the contract names for a route ("<module>:<function>" under web.handlers)."""
    module_name, _, function = BY_NAME[route_name].handler.partition(":")
    module = importlib.import_module(f"{__package__}.handlers.{module_name}")
    fn: Handler = getattr(module, function)
    return fn


def entry(route_name: str) -> LambdaHandler:
    route = BY_NAME[route_name]
    fn = route_handler(route_name)

    def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        return dispatch(route, fn, event, context)

    handler.__name__ = f"{route_name}_handler"
    return handler
