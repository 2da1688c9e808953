"""A world for execution and tool tests: a room, an answering program agent and a person it talks with.

Ada owns the workspace and stewards the program agent `alpha`, which answers the conversation and is a
member of the room; `visitor` is a Speaker alpha controls. Bob is a plain member, Vic a viewer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from ..support import Api, Who
from .world import OwnedRoom

TOOL_NAMES = [
    "memory_ls",
    "memory_read",
    "memory_write",
    "memory_edit",
    "memory_delete",
    "memory_history",
    "memory_append",
    "memory_search",
    "skill",
]


@dataclass
class Run(OwnedRoom):
    alpha: Who
    bob: Who
    vic: Who
    visitor: str

    def conv_url(self, conv: str | None = None) -> str:
        return f"/workspaces/{self.ws}/conversations/{conv or self.conv}"

    def conversation(self, answering: Who | None = None, memory_context: Any = None) -> str:
        return self.api.conversation(
            self.ada,
            self.ws,
            answering_agent_public_id=(answering or self.alpha).public_id,
            memory_context=memory_context,
        )

    def start(self, who: Who | None = None, conv: str | None = None, **fields: Any) -> requests.Response:
        return self.api.post(f"{self.conv_url(conv)}/executions", who or self.alpha, {"execution": fields})

    def execution(self, who: Who | None = None, conv: str | None = None, **fields: Any) -> dict[str, Any]:
        r = self.start(who, conv, **fields)
        assert r.status_code == 201, r.text
        # The secret is shown once, beside the execution: kept with it for the in-account function's tests.
        ex: dict[str, Any] = {**r.json()["execution"], "secret": r.json()["secret"]}
        return ex

    def call(self, ex: dict[str, Any], tool: str, who: Who | None = None, **inp: Any) -> requests.Response:
        return self.api.post(f"/executions/{ex['public_id']}/tools/{tool}", who or self.principal(ex), {"input": inp})

    def tool(self, ex: dict[str, Any], tool: str, **inp: Any) -> dict[str, Any]:
        """A tool call that reached the tool: 200, whatever the tool's own verdict."""
        r = self.call(ex, tool, **inp)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        assert set(out) == {"tool", "is_error", "code", "content", "data"}
        assert out["tool"] == tool
        return out

    def ok(self, ex: dict[str, Any], tool: str, **inp: Any) -> dict[str, Any]:
        out = self.tool(ex, tool, **inp)
        assert not out["is_error"], out["content"]
        assert out["code"] is None
        return out

    def refused(self, ex: dict[str, Any], tool: str, **inp: Any) -> str:
        """The code of a tool refusal; its text must name that code for the model."""
        out = self.tool(ex, tool, **inp)
        assert out["is_error"], out
        assert out["data"] is None
        assert out["content"].startswith(f"{out['code']}: "), out["content"]
        code: str = out["code"]
        return code

    def principal(self, ex: dict[str, Any]) -> Who:
        pid = ex["principal"]["public_id"]
        for who in (self.ada, self.alpha, self.bob, self.vic):
            if who.public_id == pid:
                return who
        raise AssertionError(f"unknown principal {pid}")

    def roots(self, ex: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {b["name"]: b for b in ex["bindings"]}


def create(path: str, content: str) -> dict[str, Any]:
    """A memory_write input that creates a document."""
    return {"path": path, "content": content, "expected_public_id": None, "expected_lock_version": None}


def version(result: dict[str, Any]) -> dict[str, Any]:
    """The condition a later change needs, from a tool result's data."""
    return {"expected_public_id": result["data"]["public_id"], "expected_lock_version": result["data"]["lock_version"]}


def make_run(api: Api) -> Run:
    ada = api.account()
    ws = api.workspace(ada)
    alpha = api.agent(ada, "alpha")
    api.member(ada, ws, alpha)
    bob = api.human(ada, "bob")
    api.member(ada, ws, bob)
    vic = api.human(ada, "vic")
    api.member(ada, ws, vic, role="viewer")
    visitor = api.speaker(ada, alpha)
    conv = api.conversation(ada, ws, answering_agent_public_id=alpha.public_id)
    return Run(api, ada, ws, conv, alpha=alpha, bob=bob, vic=vic, visitor=visitor)
