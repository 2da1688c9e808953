"""The README's curl flows: every POST or PATCH shows its body, and each body is one its route accepts."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agent_memory.api.contract import API, ROUTES, RouteSpec
from agent_memory.edges.http.openapi import request_model

README = Path(__file__).resolve().parents[2] / "README.md"
# What the flows' shell variables stand for, as a reader's shell would expand them.
SAMPLES = {"MEM": "mem_" + "0" * 32}
UUID = "01990000-0000-7000-8000-000000000001"


def _curls() -> list[str]:
    text = README.read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip().startswith("curl ") and " -X " in line]


def _route(method: str, url: str) -> RouteSpec:
    # `localhost:3000/agent_api/v1/...` or `$API/...`
    path = re.sub(r"^localhost:\d+", "", url).replace("$API", API)
    path = re.sub(r"\$(\w+)", lambda m: SAMPLES.get(m.group(1), UUID), path)
    for route in ROUTES:
        pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(route.path)) + r"\Z"
        if route.method == method and re.match(pattern, path):
            return route
    raise AssertionError(f"no route answers {method} {url}")


def test_every_flow_that_changes_or_asks_shows_a_body_its_route_accepts() -> None:
    curls = _curls()
    assert len(curls) >= 15  # the first session and the flows after it
    for curl in curls:
        method, url = re.search(r"-X (\w+) (\S+)", curl).groups()  # type: ignore[union-attr]
        route = _route(method, url)
        # A variable spliced into the body ('"'$DOC'"') is what the shell would put there
        spliced = re.sub(r"'\$(\w+)'", lambda m: SAMPLES.get(m.group(1), UUID), curl)
        body = re.search(r" -d '([^']*)'", spliced)
        assert body is not None, f"{curl}: no request body shown"
        if route.request is not None:
            request_model(route.request).model_validate(json.loads(body.group(1)))
        else:
            assert json.loads(body.group(1)) == {}, curl
