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
        self,
        who: Who,
        mem: str,
        path: str,
        content: str,
        expected: tuple[Any, Any] | None = (None, None),
        **extra: Any,
    ) -> requests.Response:
        body = {"path": path, "content": content, **expect(expected)}
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
    """A readwrite attachment entry."""
    return {"memory_id": mem, "mode": "readwrite", **extra}


def ro(mem: str, **extra: Any) -> dict[str, Any]:
    """A readonly attachment entry."""
    return {"memory_id": mem, "mode": "readonly", **extra}


def error(r: requests.Response) -> dict[str, Any]:
    """The error body of a refusal."""
    assert r.status_code >= 400, r.text
    out: dict[str, Any] = r.json()["error"]
    return out


# ---- the files door and promote, as the files and promote tests use them -------------------------------


def expect(pair_: tuple[Any, Any] | None) -> dict[str, Any]:
    """The seed-000 condition pair as body fields (None: null/null, "create only if absent")."""
    pid, lv = pair_ if pair_ is not None else (None, None)
    return {"expected_public_id": pid, "expected_lock_version": lv}


class Files(Memories):
    """The files door of one account's Memories, with the reads a refusal test compares before and after."""

    def edit(self, who: Who, mem: str, path: str, old: str, new: str, expected: Any) -> requests.Response:
        return self.verb(who, mem, "edit", path=path, old_text=old, new_text=new, **expect(expected))

    def delete_file(self, who: Who, mem: str, path: str, expected: Any) -> requests.Response:
        return self.verb(who, mem, "delete", path=path, **expect(expected))

    def grep(self, who: Who, mem: str, pattern: str, **extra: Any) -> requests.Response:
        return self.verb(who, mem, "grep", pattern=pattern, **extra)

    def versions(self, who: Who, mem: str, path: str, **extra: Any) -> requests.Response:
        return self.verb(who, mem, "versions", path=path, **extra)

    def version_show(self, who: Who, mem: str, path: str, lock_version: Any) -> requests.Response:
        return self.verb(who, mem, "versions/show", path=path, lock_version=lock_version)

    def rollback(self, who: Who, mem: str, path: str, lock_version: Any, expected: Any) -> requests.Response:
        return self.verb(who, mem, "rollback", path=path, lock_version=lock_version, **expect(expected))

    def promote(self, who: Who, source: dict[str, Any], name: str, **extra: Any) -> requests.Response:
        body = {"source": source, "name": name, "description": "promoted notes", **extra}
        return self.api.post("/memories/promote", who, {"promote": body})

    def delete_memory(self, who: Who, mem: str) -> requests.Response:
        return self.api.post(f"/memories/{mem}/delete", who)

    # ---- reads -------------------------------------------------------------------------------------------

    def file(self, who: Who, mem: str, path: str) -> dict[str, Any]:
        r = self.show_file(who, mem, path)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()["file"]
        return out

    def written(self, r: requests.Response, status: int = 201) -> dict[str, Any]:
        """The file a write, edit or rollback answered: `status` or the test stops here."""
        assert r.status_code == status, r.text
        out: dict[str, Any] = r.json()["file"]
        return out

    def file_listing(self, who: Who, mem: str, **params: str) -> list[dict[str, Any]]:
        """Every file the listing shows, walking next_cursor to the end."""
        rows: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            query = dict(params, **({"cursor": cursor} if cursor is not None else {}))
            r = self.files(who, mem, **query)
            assert r.status_code == 200, r.text
            rows += r.json()["files"]
            cursor = r.json()["next_cursor"]
            if cursor is None:
                return rows

    def history(self, who: Who, mem: str, path: str) -> list[dict[str, Any]]:
        r = self.versions(who, mem, path, limit=100)
        assert r.status_code == 200, r.text
        assert r.json()["next_cursor"] is None
        rows: list[dict[str, Any]] = r.json()["versions"]
        return rows

    def memory_ids(self, who: Who) -> list[str]:
        r = self.api.get("/memories", who, params={"limit": "100"})
        assert r.status_code == 200, r.text
        return [m["memory_id"] for m in r.json()["memories"]]

    def state(self, who: Who, mem: str) -> dict[str, Any]:
        """What a refused change must leave alone: the Memory's detail (counts, bytes, last writer), its
        listing, every file's text and every file's history."""
        rows = self.file_listing(who, mem)
        return {
            "memory": self.detail(who, mem),
            "files": rows,
            "contents": {f["path"]: self.file(who, mem, f["path"])["content"] for f in rows},
            "histories": {f["path"]: self.history(who, mem, f["path"]) for f in rows},
        }
