"""Helpers for the typed-records HTTP tests (issue 15): a room with every kind of caller, and the verbs.

Ada owns the workspace (a curator); Bob is a member, Vic a viewer, Cy a Human of the account who is not
a member; alpha and beta are program agents, both members. Every helper goes through the local gateway.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import requests

from ..support import Api, Who
from .test_idempotency import table


@dataclass
class Room:
    api: Api
    ada: Who
    bob: Who
    vic: Who
    cy: Who
    alpha: Who
    beta: Who
    ws: str

    @property
    def url(self) -> str:
        return f"/workspaces/{self.ws}/records"

    def append(
        self, who: Who | None = None, headers: dict[str, str] | None = None, ws: str | None = None, **fields: Any
    ) -> requests.Response:
        url = f"/workspaces/{ws}/records" if ws else self.url
        return self.api.post(url, who or self.ada, {"record": fields}, headers=headers)

    def added(self, who: Who | None = None, status: int = 201, **fields: Any) -> dict[str, Any]:
        """The answer of an append that must have `status` (201 made a record, 200 merged it)."""
        r = self.append(who, **fields)
        assert r.status_code == status, r.text
        out: dict[str, Any] = r.json()
        return out

    def show(self, record_id: str, who: Who | None = None) -> requests.Response:
        return self.api.get(f"{self.url}/{record_id}", who or self.ada)

    def record(self, record_id: str, who: Who | None = None) -> dict[str, Any]:
        r = self.show(record_id, who)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()["record"]
        return out

    def search(self, query: str | None = None, who: Who | None = None, **fields: Any) -> list[dict[str, Any]]:
        """Every record one search page shows `who` (limit 100)."""
        body: dict[str, Any] = {"limit": 100, **fields}
        if query is not None:
            body["query"] = query
        r = self.api.post(f"{self.url}/search", who or self.ada, {"search": body})
        assert r.status_code == 200, r.text
        assert r.json()["next_cursor"] is None
        return [hit["record"] for hit in r.json()["results"]]

    def dedup(self, enabled: bool, who: Who | None = None) -> requests.Response:
        body = {"workspace": {"settings": {"dedup": {"enabled": enabled}}}}
        return self.api.call("PATCH", f"/workspaces/{self.ws}", who or self.ada, body)


def make_room(api: Api) -> Room:
    ada = api.account()
    ws = api.workspace(ada)
    bob = api.human(ada, "bob")
    api.member(ada, ws, bob)
    vic = api.human(ada, "vic")
    api.member(ada, ws, vic, role="viewer")
    cy = api.human(ada, "cy")
    alpha = api.agent(ada, "alpha")
    api.member(ada, ws, alpha)
    beta = api.agent(ada, "beta")
    api.member(ada, ws, beta)
    return Room(api, ada, bob, vic, cy, alpha, beta, ws)


@pytest.fixture
def room(api: Api) -> Room:
    return make_room(api)


def record_rows() -> list[dict[str, Any]]:
    """Every typed record item in the table (both layers, every workspace)."""
    return [row for (pk, _), row in table().items() if pk.startswith("RECORD#")]
