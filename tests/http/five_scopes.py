"""A world where one caller reaches all five scopes through one conversation (issue-4 HTTP tests).

Ada owns the workspace and stewards the program agent that answers the conversation; the conversation
binds conversation/, workspace/, user/, agent/ and speaker/ (with an explicit speaker subject), so Ada
can address every scope and the agent every scope but user/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from ..support import AGENT, CONV, SPEAKER, USER, WORKSPACE, Api, Who, bindings
from .world import OwnedRoom

SCOPE_WORDS = ("conversation", "workspace", "user", "agent", "speaker")


def all_five(speaker: str) -> dict[str, Any]:
    return bindings(CONV, WORKSPACE, USER, AGENT, {**SPEAKER, "speaker_public_id": speaker})


@dataclass
class Five(OwnedRoom):
    helper: Who
    speaker: str

    @property
    def conv_url(self) -> str:
        return f"/workspaces/{self.ws}/conversations/{self.conv}"

    def conversation(self, memory_context: Any = None, *, agent: bool = True) -> str:
        """Another conversation in the same workspace (answered by the helper unless agent=False)."""
        fields: dict[str, Any] = {"memory_context": memory_context}
        if agent:
            fields["answering_agent_public_id"] = self.helper.public_id
        return self.api.conversation(self.ada, self.ws, **fields)

    def skill(
        self, path: str, content: str, description: str, *, base: str | None = None, who: Who | None = None
    ) -> requests.Response:
        return self.api.write(who or self.ada, base or self.base, path, content, description=description)

    def skills(self, who: Who | None = None, conv: str | None = None, **params: str) -> requests.Response:
        url = f"/workspaces/{self.ws}/conversations/{conv or self.conv}/skills"
        return self.api.get(url, who or self.ada, params=params or None)

    def load(self, name: Any, who: Who | None = None, conv: str | None = None) -> requests.Response:
        url = f"/workspaces/{self.ws}/conversations/{conv or self.conv}/skills/load"
        return self.api.post(url, who or self.ada, {"skill": {"name": name}})

    def block(self, who: Who | None = None, conv: str | None = None, **fields: Any) -> requests.Response:
        url = f"/workspaces/{self.ws}/conversations/{conv or self.conv}/memory_block"
        return self.api.post(url, who or self.ada, {"memory_block": fields})

    def set_override(self, provider: str | None, who: Who | None = None) -> requests.Response:
        return self.api.call(
            "PATCH",
            f"/workspaces/{self.ws}",
            who or self.ada,
            {"workspace": {"tool_provider_overrides": {"nexus.memory": provider}}},
        )


def make_five(api: Api) -> Five:
    ada = api.account()
    ws = api.workspace(ada)
    helper = api.agent(ada, "helper")
    speaker = api.speaker(ada, helper)
    conv = api.conversation(ada, ws, answering_agent_public_id=helper.public_id, memory_context=all_five(speaker))
    return Five(api, ada, ws, conv, helper=helper, speaker=speaker)
