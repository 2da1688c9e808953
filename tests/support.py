"""A tiny HTTP client for the tests, plus builders for the usual world (account, workspace, conversation)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import requests
from agent_memory_sdk.client import MemoryClient

API = "/agent_api/v1"


def pct(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile every published figure uses (`make bench`, the load run); 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1))
    return ordered[index]


# memory_context entries binding each scope under its own name, read_write; `{**X, ...}` varies one.
CONV = {"name": "conversation", "scope": "conversation", "access": "read_write"}
WORKSPACE = {"name": "workspace", "scope": "workspace", "access": "read_write"}
USER = {"name": "user", "scope": "user", "access": "read_write"}
AGENT = {"name": "agent", "scope": "agent", "access": "read_write"}
SPEAKER = {"name": "speaker", "scope": "speaker", "access": "read_write"}


@dataclass
class Who:
    """A principal with its token."""

    token: str
    public_id: str
    kind: str = "human"


class Api:
    def __init__(self, url: str, operator_key: str) -> None:
        self.url = url
        self.operator_key = operator_key
        self.http = requests.Session()

    def call(
        self,
        method: str,
        path: str,
        who: Who | str | None = None,
        json: Any = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> requests.Response:
        h = dict(headers or {})
        token = who.token if isinstance(who, Who) else who
        if token:
            h["Authorization"] = f"Bearer {token}"
        return self.http.request(method, f"{self.url}{API}{path}", json=json, params=params, headers=h, timeout=30)

    def post(self, path: str, who: Who | str | None = None, json: Any = None, **kw: Any) -> requests.Response:
        return self.call("POST", path, who, json, **kw)

    def get(self, path: str, who: Who | str | None = None, **kw: Any) -> requests.Response:
        return self.call("GET", path, who, **kw)

    # ---- builders -----------------------------------------------------------------------------------

    def account(self, name: str = "acme", human: str = "ada") -> Who:
        r = self.post(
            "/accounts",
            json={"account": {"name": name}, "human": {"name": human}},
            headers={"X-Operator-Key": self.operator_key},
        )
        assert r.status_code == 201, r.text
        return Who(r.json()["token"], r.json()["human"]["public_id"])

    def human(self, who: Who, name: str = "bob") -> Who:
        r = self.post("/humans", who, {"human": {"name": name}})
        assert r.status_code == 201, r.text
        return Who(r.json()["token"], r.json()["human"]["public_id"])

    def workspace(self, who: Who, name: str = "room") -> str:
        r = self.post("/workspaces", who, {"workspace": {"name": name}})
        assert r.status_code == 201, r.text
        return str(r.json()["workspace"]["public_id"])

    def member(self, who: Who, ws: str, other: Who, role: str = "member") -> None:
        key = "human_public_id" if other.kind == "human" else "agent_public_id"
        r = self.post(f"/workspaces/{ws}/members", who, {"member": {key: other.public_id, "role": role}})
        assert r.status_code == 201, r.text

    def agent(self, who: Who, name: str = "helper", kind: str = "program", limit: Any = None) -> Who:
        r = self.post("/agents", who, {"agent": {"name": name, "kind": kind, "memory_context_limit": limit}})
        assert r.status_code == 201, r.text
        return Who(r.json().get("token", ""), r.json()["agent"]["public_id"], "agent")

    def speaker(self, who: Who, agent: Who, name: str = "visitor") -> str:
        r = self.post("/speakers", who, {"speaker": {"name": name, "agent_public_id": agent.public_id}})
        assert r.status_code == 201, r.text
        return str(r.json()["speaker"]["public_id"])

    def conversation(self, who: Who, ws: str, **fields: Any) -> str:
        r = self.post(f"/workspaces/{ws}/conversations", who, {"conversation": fields})
        assert r.status_code == 201, r.text
        return str(r.json()["conversation"]["public_id"])

    def room(self) -> tuple[Who, str, str]:
        """A new account's Human, a workspace of theirs and one conversation in it."""
        owner = self.account()
        ws = self.workspace(owner)
        return owner, ws, self.conversation(owner, ws)

    def show_conversation(self, who: Who, ws: str, conv: str) -> dict[str, Any]:
        r = self.get(f"/workspaces/{ws}/conversations/{conv}", who)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()["conversation"]
        return out

    # ---- memory verbs on any door (base is the door's memory URL under /agent_api/v1) ----------------

    def write(
        self, who: Who, base: str, path: str, content: Any, expected: tuple[Any, Any] = (None, None), **extra: Any
    ) -> requests.Response:
        body = {
            "path": path,
            "content": content,
            "expected_public_id": expected[0],
            "expected_lock_version": expected[1],
            **extra,
        }
        return self.post(base, who, {"memory": body})

    def show(self, who: Who, base: str, path: str, **extra: Any) -> requests.Response:
        return self.post(f"{base}/show", who, {"memory": {"path": path, **extra}})

    def edit(
        self, who: Who, base: str, path: str, old: Any, new: Any, expected: tuple[Any, Any], **extra: Any
    ) -> requests.Response:
        body = {
            "path": path,
            "old_text": old,
            "new_text": new,
            "expected_public_id": expected[0],
            "expected_lock_version": expected[1],
            **extra,
        }
        return self.post(f"{base}/edit", who, {"memory": body})

    def delete(self, who: Who, base: str, path: str, expected: tuple[Any, Any], **extra: Any) -> requests.Response:
        body = {"path": path, "expected_public_id": expected[0], "expected_lock_version": expected[1], **extra}
        return self.post(f"{base}/delete", who, {"memory": body})

    def grep(self, who: Who, base: str, pattern: Any, **extra: Any) -> requests.Response:
        return self.post(f"{base}/grep", who, {"memory": {"pattern": pattern, **extra}})

    def ls(self, who: Who, base: str, **params: str) -> requests.Response:
        return self.get(base, who, params=params or None)


def client_room(url: str, operator_key: str) -> tuple[MemoryClient, MemoryClient, str]:
    """The same start through the Python client: (the operator's client, a new account's Human's, a workspace)."""
    admin = MemoryClient(url, operator_key=operator_key)
    owner = admin.with_token(admin.create_account("acme", "ada")["token"])
    return admin, owner, owner.create_workspace("room")["public_id"]


def bindings(*items: dict[str, Any]) -> dict[str, Any]:
    """A memory_context value binding `items` in order."""
    return {"bindings": list(items)}


def alias(conv: str, access: str = "read", name: str = "group") -> dict[str, Any]:
    """A binding that reaches another conversation's rows under `name`/."""
    return {"name": name, "scope": "conversation", "access": access, "conversation_public_id": conv}


def conv_base(ws: str, conv: str) -> str:
    return f"/workspaces/{ws}/conversations/{conv}/memory"


def ws_base(ws: str) -> str:
    return f"/workspaces/{ws}/memory"


def code(r: requests.Response) -> tuple[int, str | None]:
    """(status, error code) of a response: what most refusal tests assert."""
    if r.status_code >= 400:
        return r.status_code, r.json()["error"]["code"]
    return r.status_code, None


def pair(r: requests.Response) -> tuple[str, int]:
    m = r.json()["memory"]
    return m["public_id"], m["lock_version"]


def created(r: requests.Response) -> tuple[str, int]:
    """The pair of a document a write just created (or replaced): 201 or the test stops here."""
    assert r.status_code == 201, r.text
    return pair(r)


def listed(api: Api, who: Who, base: str, **params: str) -> list[str]:
    """The paths a door's listing shows `who`, in the listing's order."""
    r = api.ls(who, base, **params)
    assert r.status_code == 200, r.text
    return [m["path"] for m in r.json()["memory"]]
