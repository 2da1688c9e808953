"""The API's own description: the OpenAPI 3.1 document the route table generates (openapi.py)."""

from __future__ import annotations

from ... import openapi
from ..glue import Reply, Request


def openapi_document(req: Request) -> Reply:
    return Reply(200, openapi.document())
