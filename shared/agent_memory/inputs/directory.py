"""Request bodies of the directory: accounts, humans, workspaces, members, conversations, agents, speakers."""

from __future__ import annotations

from pydantic import JsonValue

from .base import Body, JsonObject, Name, OptionalName, OptionalUuid, Uuid

# Keys and values are judged by the directory (a provider name, or null to clear one).
Overrides = JsonObject


class NamedFields(Body):
    name: Name


class CreateAccount(Body):
    account: NamedFields
    human: NamedFields


class CreateHuman(Body):
    human: NamedFields


class CreateWorkspace(Body):
    workspace: NamedFields


class UpdateWorkspaceFields(Body):
    tool_provider_overrides: Overrides


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
