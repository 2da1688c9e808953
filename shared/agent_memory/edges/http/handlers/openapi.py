"""The API's own description: the OpenAPI 3.1 document the route table generates (openapi.py)."""

from __future__ import annotations

from agent_memory.edges.http.glue import Request


def openapi_document(req: Request) -> object:
    # The document is built from every request model and tool schema: imported on the first request.
    from agent_memory.edges.http import openapi

    return openapi.document()
