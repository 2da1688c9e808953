"""The rows the domain reasons about. Plain dataclasses: the store maps them to items, the HTTP glue to JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

PrincipalKind = Literal["human", "agent"]
Role = Literal["member", "viewer"]

MAX_DOCUMENTS_PER_ANCHOR = 64
MAX_DOCUMENT_BYTES = 64 * 1024
MAX_DESCRIPTION_BYTES = 1024
# How long an execution's tools answer after it starts, unless the deployment says otherwise.
DEFAULT_EXECUTION_TTL_SECONDS = 24 * 3600


@dataclass(frozen=True, slots=True)
class Anchor:
    """What a document row hangs under: one scope's owner (or, for speaker/, the agent-speaker pair)."""

    scope: str
    owner_id: str
    speaker_id: str | None = None

    @property
    def key(self) -> str:
        if self.speaker_id:
            return f"{self.scope}#{self.owner_id}#{self.speaker_id}"
        return f"{self.scope}#{self.owner_id}"

    @classmethod
    def from_key(cls, key: str) -> Anchor:
        parts = key.split("#")
        return cls(parts[0], parts[1], parts[2] if len(parts) > 2 else None)


@dataclass(frozen=True, slots=True)
class TokenRow:
    digest: str
    principal_kind: PrincipalKind
    principal_id: str
    account_id: str


@dataclass(frozen=True, slots=True)
class Principal:
    kind: PrincipalKind
    public_id: str
    account_id: str


@dataclass(slots=True)
class Account:
    public_id: str
    name: str
    created_at: str
    # The Human created with the account: it may rotate and revoke any Human's credentials here.
    first_human_id: str | None = None


@dataclass(slots=True)
class Human:
    public_id: str
    account_id: str
    name: str
    created_at: str
    # The digest of the Human's current token (None once revoked): rotations are conditional on it.
    token_digest: str | None = None


@dataclass(slots=True)
class Agent:
    public_id: str
    account_id: str
    steward_id: str
    name: str
    kind: Literal["program", "definition"]
    memory_context_limit: dict[str, Any] | None
    created_at: str
    token_digest: str | None = None


@dataclass(slots=True)
class Speaker:
    public_id: str
    account_id: str
    agent_id: str
    name: str
    created_at: str


@dataclass(slots=True)
class Workspace:
    public_id: str
    account_id: str
    name: str
    created_at: str
    tool_provider_overrides: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Member:
    workspace_id: str
    principal_kind: PrincipalKind
    principal_id: str
    role: Role
    created_at: str


@dataclass(slots=True)
class Conversation:
    public_id: str
    workspace_id: str
    account_id: str
    created_by: str
    created_at: str
    context_revision: int = 0
    archived: bool = False
    memory_context: dict[str, Any] | None = None
    answering_agent_id: str | None = None
    parent_public_id: str | None = None


@dataclass(frozen=True, slots=True)
class FrozenBinding:
    """One root of an execution as it resolved when the execution began: stored with it, never changed.

    A speaker root always names its subject, so an inherited speaker root keeps the person it was captured
    for whichever agent answers next.
    """

    name: str
    scope: str
    access: Literal["read", "read_write"]
    anchor_public_id: str
    conversation_public_id: str | None = None
    speaker_public_id: str | None = None
    agent_public_id: str | None = None

    @property
    def anchor(self) -> Anchor:
        if self.scope == "speaker":
            return Anchor("speaker", self.agent_public_id or "", self.speaker_public_id)
        return Anchor(self.scope, self.anchor_public_id)


@dataclass(slots=True)
class Execution:
    """One accepted model run: who started it, who answers, and the memory configuration frozen for it."""

    public_id: str
    workspace_id: str
    conversation_id: str
    account_id: str
    agent_id: str | None
    principal_kind: PrincipalKind
    principal_id: str
    speaker_id: str | None
    bindings: list[FrozenBinding]
    tools: list[str]
    created_at: str
    parent_id: str | None = None
    # Epoch seconds past which its tools refuse (execution_expired); the table's TTL removes the row later.
    expires_at: int = 0
    # SHA-256 of the secret handed out once at creation: what the in-account tool function accepts.
    secret_digest: str | None = None


@dataclass(slots=True)
class Document:
    anchor: Anchor
    rest: str
    public_id: str
    lock_version: int
    bytesize: int
    sha256: str
    description: str | None
    written_at: str
    content_key: str
    author: str


@dataclass(frozen=True, slots=True)
class ConversationBump:
    """Move a conversation's context_revision in the same commit as a document change."""

    conversation_id: str
    expected_context_revision: int | None = None
    refuse_archived: bool = True


@dataclass(frozen=True, slots=True)
class Meter:
    """One count of writes per minute: a principal's, its account's, or a source address's."""

    subject: Literal["principal", "account", "origin"]
    key: str
    per_minute: int


@dataclass(frozen=True, slots=True)
class WriteBudget:
    """The meters one mutation spends from, each counted in the same request as the write it lets through
    (or, for a directory change, in one request just before it)."""

    meters: tuple[Meter, ...]


@dataclass(frozen=True, slots=True)
class DocumentChange:
    """One conditional document mutation: create (expected None), replace, or delete (new None)."""

    anchor: Anchor
    rest: str
    expected: tuple[str, int] | None
    new: Document | None
    bump: ConversationBump | None = None
    budget: WriteBudget | None = None
    # A change through a root aliasing another conversation moves that conversation too (its next reply
    # changes as well), and is refused in the same commit if it was archived meanwhile.
    alias: ConversationBump | None = None


# ---- what the verbs answer (views.py turns these into the wire JSON) ----------------------------------


@dataclass(frozen=True, slots=True)
class Located:
    """A document under the logical path a request names it by (`<root>/<rest>`)."""

    path: str
    document: Document
    content: str | None = None


@dataclass(frozen=True, slots=True)
class GrepMatch:
    path: str
    line_number: int
    text: str


# Why a grep answer is not the whole answer: more matches than `limit`, more content than the request
# may read, or the request's deadline reached.
GrepTruncation = Literal["limit", "byte_budget", "deadline"]


@dataclass(frozen=True, slots=True)
class GrepResult:
    matches: list[GrepMatch]
    truncated_reason: GrepTruncation | None = None

    @property
    def truncated(self) -> bool:
        return self.truncated_reason is not None

    # Paths searched past because their content object is missing from storage (memory_content_missing).
    unreadable: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool call's answer: text written for the model, and the same facts as data for the runtime."""

    tool: str
    content: str
    data: Any = None
    code: str | None = None
