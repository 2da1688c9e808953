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

    def listing(self, who: Who, **params: str) -> requests.Response:
        return self.api.get("/memories", who, params=params or None)

    def listed(self, who: Who) -> list[str]:
        """The ids of every Memory `who` sees, walking the listing to its end."""
        out: list[str] = []
        cursor: str | None = None
        while True:
            r = self.listing(who, limit="100", **({} if cursor is None else {"cursor": cursor}))
            assert r.status_code == 200, r.text
            out += [m["memory_id"] for m in r.json()["memories"]]
            cursor = r.json()["next_cursor"]
            if cursor is None:
                return out

    def detail(self, who: Who, mem: str) -> dict[str, Any]:
        r = self.show(who, mem)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()["memory"]
        return out

    def archive(self, who: Who, mem: str) -> requests.Response:
        return self.api.post(f"/memories/{mem}/archive", who)

    def delete(self, who: Who, mem: str) -> requests.Response:
        return self.api.post(f"/memories/{mem}/delete", who)

    def content(self, who: Who, mem: str, path: str) -> str:
        r = self.show_file(who, mem, path)
        assert r.status_code == 200, r.text
        return str(r.json()["file"]["content"])

    def lease(self, who: Who, mem: str, path: str, seconds: Any) -> requests.Response:
        return self.verb(who, mem, "lease", path=path, seconds=seconds)

    def agent(self, who: Who, agent: str) -> dict[str, Any]:
        r = self.api.get(f"/agents/{agent}", who)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()["agent"]
        return out

    def attached(self, who: Who, agent: str) -> list[dict[str, Any]]:
        """The attachment list `GET /agents/{id}` shows."""
        rows: list[dict[str, Any]] = self.agent(who, agent)["memories"]
        return rows

    def effective(self, who: Who, agent: str) -> list[dict[str, Any]]:
        r = self.api.get(f"/agents/{agent}/memories", who)
        assert r.status_code == 200, r.text
        rows: list[dict[str, Any]] = r.json()["memories"]
        return rows


def pair(file: dict[str, Any]) -> tuple[str, int]:
    return file["public_id"], file["lock_version"]


def rw(mem: str, **extra: Any) -> dict[str, Any]:
    """A readWrite attachment entry."""
    return {"memory_id": mem, "mode": "readWrite", **extra}


def ro(mem: str, **extra: Any) -> dict[str, Any]:
    """A readOnly attachment entry."""
    return {"memory_id": mem, "mode": "readOnly", **extra}


def error(r: requests.Response) -> dict[str, Any]:
    """The error body of a refusal."""
    assert r.status_code >= 400, r.text
    out: dict[str, Any] = r.json()["error"]
    return out
