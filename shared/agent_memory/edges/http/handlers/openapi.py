"""The API's own description: the OpenAPI 3.1 document the route table generates (openapi.py).

The route serves the copy `.ci/templategen.py` writes beside the package (`edges/http/openapi.json`, shipped in
the layer, kept current by `make template`'s drift check and tests/unit/test_openapi.py): building it from
every request and answer model would cost this function's cold start pydantic and two hundred models.
"""

from __future__ import annotations

import json
import os
from functools import cache

from agent_memory.edges.http.glue import Request

SERVED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "openapi.json")


@cache
def _document() -> object:
    with open(SERVED, "rb") as f:
        return json.loads(f.read())


def openapi_document(req: Request) -> object:
    return _document()
