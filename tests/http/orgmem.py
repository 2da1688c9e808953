"""Helpers for the organization Memories tests: create a Memory, reach its files, attach it to agents."""

from __future__ import annotations

from typing import Any

import requests

from ..support import Api, Who


class Memories:
    def __init__(self, api: Api) -> None:
        self.api = api

    def create(self, who: Who, name: str = "runbooks", **fields: Any) -> requests.Response:
        return self.api.post("/memories", who, {"memory": {"name": name, "description": "shared notes", **fields}})

    def made(self, who: Who, name: str = "runbooks", **fields: Any) -> dict[str, Any]:
        r = self.create(who, name, **fields)
        assert r.status_code == 201, r.text
        out: dict[str, Any] = r.json()["memory"]
        return out

    def show(self, who: Who, mem: str) -> requests.Response:
        return self.api.get(f"/memories/{mem}", who)

    def patch(self, who: Who, mem: str, **fields: Any) -> requests.Response:
        return self.api.call("PATCH", f"/memories/{mem}", who, {"memory": fields})

    def files(self, who: Who, mem: str, **params: str) -> requests.Response:
        return self.api.get(f"/memories/{mem}/files", who, params=params)

    def write(
        self, who: Who, mem: str, path: str, content: str, expected: tuple[Any, Any] = (None, None), **extra: Any
    ) -> requests.Response:
        body = {
            "path": path,
            "content": content,
            "expected_public_id": expected[0],
            "expected_lock_version": expected[1],
        }
        return self.api.post(f"/memories/{mem}/files", who, {"file": {**body, **extra}})

    def verb(self, who: Who, mem: str, verb: str, **body: Any) -> requests.Response:
        return self.api.post(f"/memories/{mem}/files/{verb}", who, {"file": body})

    def show_file(self, who: Who, mem: str, path: str) -> requests.Response:
        return self.verb(who, mem, "show", path=path)

    def attach(self, who: Who, agent: str, memories: Any, **extra: Any) -> requests.Response:
        return self.api.call("PATCH", f"/agents/{agent}", who, {"agent": {"memories": memories, **extra}})

    def patch_agent(self, who: Who, agent: str, **fields: Any) -> requests.Response:
        return self.api.call("PATCH", f"/agents/{agent}", who, {"agent": fields})

    def effective(self, who: Who, agent: str) -> list[dict[str, Any]]:
        r = self.api.get(f"/agents/{agent}/memories", who)
        assert r.status_code == 200, r.text
        rows: list[dict[str, Any]] = r.json()["memories"]
        return rows


def pair(file: dict[str, Any]) -> tuple[str, int]:
    return file["public_id"], file["lock_version"]
