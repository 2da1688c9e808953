"""Request bodies of the directory: accounts, humans, workspaces, members, conversations, agents, speakers."""

from __future__ import annotations

import re
from typing import Annotated, Any

from agent_memory.api.contract import NAME_RULES
from agent_memory.domain.directory.service import MAX_OVERRIDES
from agent_memory.edges.requests.base import SURROGATE, Body, Flag, Name, OptionalUuid, Uuid, coded
from agent_memory.edges.requests.validation import Field, JsonValue, PlainValidator, WithJsonSchema, model_validator

# The contract's grammar for the {agent_name} a definition is addressed by (\Z: `$` accepts a newline).
DEFINITION_NAME_RE = re.compile(NAME_RULES["agent_name"].pattern[:-1] + r"\Z")
MAX_PROVIDER_NAME = 200
MAX_OVERRIDE_KEY = 64


def _overrides(value: Any) -> dict[str, Any]:
    # The keys are bounded here, before anything is read: a thousand keys, or one of 100 KB, would make a
    # workspace row past DynamoDB's 400 KB. Each value is a provider name, or null to clear one; the
    # merged total, which depends on what is stored, is the directory's to judge.
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
    for key, provider in value.items():
        if provider is not None and not (
            isinstance(provider, str) and provider.strip() and len(provider) <= MAX_PROVIDER_NAME
        ):
            raise coded(
                "parameter_invalid", f"tool_provider_overrides[{key!r}] must be a provider name or null.", whole=True
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
            "additionalProperties": {
                "anyOf": [{"type": "string", "minLength": 1, "maxLength": MAX_PROVIDER_NAME}, {"type": "null"}]
            },
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


def _one_of(options: tuple[str, ...]) -> Any:
    """A name from a closed set (or null, for the route's default), refused with the set spelled out."""
    spelled = ", ".join(repr(o) for o in options[:-1]) + f" or {options[-1]!r}"

    def check(value: Any) -> str | None:
        if value is not None and value not in options:
            raise coded("parameter_invalid", f"must be {spelled}")
        return value  # type: ignore[no-any-return]

    return PlainValidator(check)


ROLES = ("curator", "member", "viewer")
AGENT_KINDS = ("program", "definition")
OptionalRole = Annotated[str | None, _one_of(ROLES), WithJsonSchema({"enum": [*ROLES, None]})]
OptionalAgentKind = Annotated[str | None, _one_of(AGENT_KINDS), WithJsonSchema({"enum": [*AGENT_KINDS, None]})]


class AddMemberFields(Body):
    human_public_id: OptionalUuid = None
    agent_public_id: OptionalUuid = None
    role: OptionalRole = None

    @model_validator(mode="after")
    def _one_principal(self) -> AddMemberFields:
        if (self.human_public_id is None) == (self.agent_public_id is None):
            raise coded(
                "parameter_invalid", "member needs exactly one of human_public_id and agent_public_id.", whole=True
            )
        return self


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
    kind: OptionalAgentKind = None
    memory_context_limit: JsonValue = None

    @model_validator(mode="after")
    def _definition_name(self) -> CreateAgentFields:
        if self.kind == "definition" and not DEFINITION_NAME_RE.match(self.name):
            raise coded(
                "parameter_invalid",
                "A definition's name addresses it in URLs: lowercase letters, digits, '-' and '_', "
                "at most 64 characters.",
                whole=True,
            )
        return self


class CreateAgent(Body):
    agent: CreateAgentFields


class CreateSpeakerFields(Body):
    name: Name
    agent_public_id: Uuid


class CreateSpeaker(Body):
    speaker: CreateSpeakerFields


class ConsoleSignIn(Body):
    """A Human's token, exchanged for a console session cookie (sent in the body: a URL is logged)."""

    token: str = Field(min_length=1, max_length=400, description="A Human's API token (am_h_...).")
