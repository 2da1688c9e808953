"""Defence in depth on the wire (issue 26, item 6): `X-Content-Type-Options: nosniff` on every answer,
`Cache-Control: no-store` on every authenticated one.

Every route of the contract is called twice with a request it must refuse or answer harmlessly: once with
no credentials, once with a real token and a body holding only a field no route knows. Then the answers no
route gives: the `$default` fallback's 404, a method the gateway has no handler for, and the map's HTML.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
import requests
from agent_memory.api.contract import ROUTES, RouteSpec, path_parameters

from ..support import Api

pytestmark = pytest.mark.http

SAMPLE = {
    "agent_name": "tutor",
    "tool_name": "memory_read",
    "memory_id": "mem_" + "0" * 32,
}
UUID = "01990000-0000-7000-8000-000000000001"
STATUSES: Counter[int] = Counter()


def url_of(route: RouteSpec) -> str:
    path = route.path
    for name in path_parameters(path):
        path = path.replace("{" + name + "}", SAMPLE.get(name, UUID))
    return path


def checked(r: requests.Response, *, authenticated: bool, where: str) -> None:
    STATUSES[r.status_code] += 1
    assert r.status_code < 500, (where, r.status_code, r.text[:300])
    assert r.headers.get("X-Content-Type-Options") == "nosniff", (where, dict(r.headers))
    if authenticated:
        assert "no-store" in (r.headers.get("Cache-Control") or ""), (where, dict(r.headers))


def send(api: Api, route: RouteSpec, token: str | None, headers: dict[str, str] | None = None) -> requests.Response:
    url = f"{api.url}{url_of(route)}"
    h = {"Authorization": f"Bearer {token}"} if token else {}
    h |= headers or {}
    body = None if route.method == "GET" else {"surely_not_a_field": 1}
    return requests.request(route.method, url, json=body, headers=h, timeout=30)


def test_every_route_answers_nosniff_and_no_store(api: Api) -> None:
    ada = api.account()
    for route in ROUTES:
        # Without credentials: 401 for a token route, the operator's refusal, or a public answer
        checked(send(api, route, None), authenticated=False, where=f"{route.name} anonymous")
        # With a real token (and, for the operator's routes, a wrong operator key)
        extra = {"X-Operator-Key": "0" * 48} if route.access == "operator" else None
        checked(send(api, route, ada.token, extra), authenticated=True, where=f"{route.name} with a token")
    assert STATUSES[401] > 0 and (STATUSES[400] + STATUSES[404]) > 0, STATUSES


def test_answers_no_route_gives_carry_nosniff(api: Api) -> None:
    ada = api.account()
    # The $default fallback: a path no route has, and a route's path with a method it does not answer
    for method, path in (
        ("GET", "/agent_api/v1/no/such/route"),
        ("DELETE", "/agent_api/v1/memories"),
        ("POST", "/elsewhere"),
    ):
        r = requests.request(method, f"{api.url}{path}", headers={"Authorization": f"Bearer {ada.token}"}, timeout=30)
        assert r.status_code == 404, r.text
        checked(r, authenticated=True, where=f"{method} {path}")
    # A method the gateway has no handler for at all: the HTTP server's own refusal
    for method in ("HEAD", "OPTIONS", "TRACE"):
        r = requests.request(method, f"{api.url}/agent_api/v1/memories", timeout=30)
        assert r.status_code in (404, 405, 501), (method, r.status_code)
        assert r.headers.get("X-Content-Type-Options") == "nosniff", (method, dict(r.headers))
    # The map's HTML page, with its own content type and policy
    r = requests.get(f"{api.url}/agent_api/v1/memory_map.html", headers={"Authorization": f"Bearer {ada.token}"})
    assert r.status_code == 200 and re.match(r"text/html", r.headers["Content-Type"])
    checked(r, authenticated=True, where="memory_map.html")
