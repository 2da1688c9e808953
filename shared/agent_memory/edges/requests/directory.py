"""Request bodies of the directory: accounts, humans, workspaces, members, conversations, agents, speakers."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, JsonValue, PlainValidator, WithJsonSchema, model_validator

from agent_memory.domain.directory.service import MAX_OVERRIDE_KEY, MAX_OVERRIDES
from agent_memory.edges.requests.base import SURROGATE, Body, Flag, Name, OptionalName, OptionalUuid, Uuid, coded


def _overrides(value: Any) -> dict[str, Any]:
    # The keys are bounded here, before anything is read: a thousand keys, or one of 100 KB, would make a
    # workspace row past DynamoDB's 400 KB. The values (a provider name, or null to clear one) and the
    # merged total are the directory's to judge.
    if not isinstance(value, dict):
        raise coded("parameter_invalid", "must be a JSON object")
    if len(value) > MAX_OVERRIDES:
        raise coded("parameter_invalid", f"must have at most {MAX_OVERRIDES} keys, not {len(value)}")
    for key in value:
        if not key or len(key) > MAX_OVERRIDE_KEY or SURROGATE.search(key) or not key.isprintable():
            raise coded(
                "parameter_invalid",
                f"has the key {key[:64]!r}; a key is 1 to {MAX_OVERRIDE_KEY} printable characters, "
                "such as 'nexus.memory'",
            )
    return value


Overrides = Annotated[
    dict[str, Any],
    PlainValidator(_overrides),
    WithJsonSchema(
        {
            "type": "object",
            "maxProperties": MAX_OVERRIDES,
            "propertyNames": {"minLength": 1, "maxLength": MAX_OVERRIDE_KEY},
            "additionalProperties": {"anyOf": [{"type": "string", "minLength": 1, "maxLength": 200}, {"type": "null"}]},
        }
    ),
]


class NamedFields(Body):
    name: Name


class CreateAccount(Body):
    account: NamedFields
    human: NamedFields


class CreateHuman(Body):
    human: NamedFields


class CreateWorkspace(Body):
    workspace: NamedFields


class DedupSettings(Body):
    enabled: Flag


class WorkspaceSettings(Body):
    dedup: DedupSettings | None = None


class UpdateWorkspaceFields(Body):
    # Either or both; a request naming neither is refused (there is nothing to change).
    tool_provider_overrides: Overrides | None = None
    settings: WorkspaceSettings | None = Field(default=None, examples=[{"dedup": {"enabled": True}}])

    @model_validator(mode="after")
    def _something(self) -> UpdateWorkspaceFields:
        if self.tool_provider_overrides is None and self.settings is None:
            raise coded(
                "parameter_missing", "workspace.tool_provider_overrides or workspace.settings is required", whole=True
            )
        return self


class UpdateWorkspace(Body):
    workspace: UpdateWorkspaceFields


class AddMemberFields(Body):
    human_public_id: OptionalUuid = None
    agent_public_id: OptionalUuid = None
    role: OptionalName = None


class AddMember(Body):
    member: AddMemberFields


class CreateConversationFields(Body):
    answering_agent_public_id: OptionalUuid = None
    # The bindings grammar (bindings.py) answers validation_failed with the binding it names.
    memory_context: JsonValue = None

    @property
    def has_memory_context(self) -> bool:
        return "memory_context" in self.model_fields_set


class CreateConversation(Body):
    conversation: CreateConversationFields = CreateConversationFields()


class ReplaceMemoryContext(Body):
    # Required, and null is a value: it restores the default roots.
    memory_context: JsonValue


class CreateAgentFields(Body):
    name: Name
    kind: OptionalName = None
    memory_context_limit: JsonValue = None


class CreateAgent(Body):
    agent: CreateAgentFields


class CreateSpeakerFields(Body):
    name: Name
    agent_public_id: Uuid


class CreateSpeaker(Body):
    speaker: CreateSpeakerFields
