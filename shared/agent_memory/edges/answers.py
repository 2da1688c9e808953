"""Success answers as pydantic models: what `render/views.py` builds, declared so OpenAPI can publish it.

The views stay the one place answers are built; these models describe them, field for field, and
`edges/http/openapi.py` publishes each route's model as its success schema with an example built from
the examples its fields declare. A model is closed (`additionalProperties: false`), so the fuzz's
response check (tests/http/test_fuzz.py) fails on any key a view adds without its model.

`ANSWERS` names each route's model (the lead folds these names into the contract). The few routes left
without one are listed in `UNDESCRIBED`; a unit test holds every route with a JSON answer to one or the
other, so a new route needs its answer model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_memory.api.contract import ROUTES

_UUID = "0193f0c2-a1b2-7c4e-8f5d-6a7b8c9d0e1f"
_WHEN = "2026-01-05T09:30:00.000Z"


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


PublicId = str
When = str


def _id(description: str) -> Any:
    return Field(description=description, examples=[_UUID])


def _when(description: str) -> Any:
    return Field(description=description, examples=[_WHEN])


# ---- the directory -------------------------------------------------------------------------------------


class AccountView(Answer):
    public_id: PublicId = _id("The account's id.")
    name: str = Field(examples=["acme"])
    created_at: When = _when("When it was created.")


class HumanView(Answer):
    public_id: PublicId = _id("The Human's id.")
    name: str = Field(examples=["ada"])
    created_at: When = _when("When they were added.")


class ConsoleSessionAnswer(Answer):
    """A console session: who it signs in, and the CSRF token each of its changes carries."""

    human: HumanView
    csrf_token: str = Field(
        description="Send it as X-CSRF-Token on every request from the console that is not a GET.",
        examples=["3f1c0e9b7a"],
    )
    expires_at: When = _when("When the session ends, unless it is ended sooner.")


class Withheld(Answer):
    """An answer carrying a secret: an Idempotency-Key replay answers it with the secret null and this set."""

    secret_withheld: bool | None = None


class TextWithheld(Answer):
    """An answer carrying stored text: an Idempotency-Key replay reads it again, and names here (as dotted
    paths, "memory.content") the text it found gone since (redacted, deleted, replaced), left null."""

    text_withheld: list[str] | None = Field(default=None, examples=[["memory.content"]])


class AccountCreated(Withheld):
    account: AccountView
    human: HumanView
    token: str | None = Field(description="The first Human's bearer token, shown once.", examples=["am_h_..."])


class HumanCreated(Withheld):
    human: HumanView
    token: str | None = Field(description="The Human's bearer token, shown once.", examples=["am_h_..."])


class DedupView(Answer):
    enabled: bool = Field(examples=[True])


class WorkspaceSettingsView(Answer):
    dedup: DedupView


class WorkspaceView(Answer):
    public_id: PublicId = _id("The workspace's id.")
    name: str = Field(examples=["room"])
    created_at: When = _when("When it was created.")
    tool_provider_overrides: dict[str, str | None] = Field(examples=[{}])
    settings: WorkspaceSettingsView


class WorkspaceAnswer(Answer):
    workspace: WorkspaceView


class MemberView(Answer):
    workspace_public_id: PublicId = _id("The workspace.")
    # One of the two, by the member's kind.
    human_public_id: PublicId | None = Field(default=None, description="The member, when a Human.", examples=[_UUID])
    agent_public_id: PublicId | None = None
    role: str = Field(examples=["member"])
    created_at: When = _when("When they joined.")


class MemberAnswer(Answer):
    member: MemberView


class BindingView(Answer):
    name: str = Field(examples=["conversation"])
    scope: str = Field(examples=["conversation"])
    access: Literal["read", "read_write"]
    conversation_public_id: PublicId | None = None
    anchor_public_id: PublicId | None = _id("The row the root resolves to (null for none).")
    agent_public_id: PublicId | None = None
    speaker_public_id: PublicId | None = None


class EffectiveContext(Answer):
    bindings: list[BindingView]


class ConversationView(Answer):
    public_id: PublicId = _id("The conversation's id.")
    workspace_public_id: PublicId = _id("Its workspace.")
    answering_agent_public_id: PublicId | None = None
    parent_public_id: PublicId | None = None
    context_revision: int = Field(examples=[0])
    archived: bool = Field(examples=[False])
    created_at: When = _when("When it was created.")
    memory_context: dict[str, Any] | None = None
    effective_memory_context: EffectiveContext


class ConversationAnswer(Answer):
    conversation: ConversationView


class SpeakerView(Answer):
    public_id: PublicId = _id("The Speaker's id.")
    name: str = Field(examples=["visitor"])
    agent_public_id: PublicId = _id("The agent it speaks to.")
    created_at: When = _when("When it was added.")


class SpeakerAnswer(Answer):
    speaker: SpeakerView


class TokenAnswer(Withheld):
    token: str | None = Field(description="The new bearer token, shown once.", examples=["am_a_..."])


# ---- executions ----------------------------------------------------------------------------------------


class PrincipalView(Answer):
    kind: Literal["human", "agent"]
    public_id: PublicId = _id("Who runs it.")


class SubjectView(Answer):
    speaker_public_id: PublicId = _id("The Speaker the execution speaks for.")


class ExecutionView(Answer):
    public_id: PublicId = _id("The execution's id.")
    workspace_public_id: PublicId = _id("Its workspace.")
    conversation_public_id: PublicId = _id("Its conversation.")
    agent_public_id: PublicId | None = None
    principal: PrincipalView
    subject: SubjectView | None = None
    mail_from_execution_public_id: PublicId | None = None
    bindings: list[BindingView]
    tools: list[str] = Field(examples=[["memory_read"]])
    created_at: When = _when("When it started.")
    expires_at: When = _when("When it stops answering.")
    stopped: bool = Field(examples=[False])


class ExecutionCreated(Withheld):
    execution: ExecutionView
    secret: str | None = Field(description="The execution's own proof, shown once.", examples=["s3cr3t"])


class ExecutionAnswer(Answer):
    execution: ExecutionView


# ---- documents -----------------------------------------------------------------------------------------


class AuthorView(Answer):
    kind: str = Field(examples=["human"])
    public_id: PublicId | None = None
    name: str = Field(examples=["ada"])
    execution_public_id: PublicId | None = None
    # A git sync's commit.
    commit: str | None = None


class QuarantineView(Answer):
    status: str
    rules: list[str]
    ruleset: str
    reviewed_by: AuthorView | None = None
    reviewed_at: When | None = None


class DocumentView(Answer):
    path: str = Field(examples=["conversation/plan.md"])
    public_id: PublicId = _id("The document's id (the expected_public_id of its next change).")
    lock_version: int = Field(description="Its version (the expected_lock_version of its next change).", examples=[1])
    bytesize: int = Field(examples=[11])
    description: str | None = None
    written_at: When = _when("When this version was written.")
    written_by: AuthorView
    content_sha256: str = Field(examples=["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"])
    pii: list[str] = Field(examples=[[]])
    quarantine: QuarantineView | None = None
    content: str | None = Field(default=None, examples=["ship friday"])


class DocumentAnswer(TextWithheld):
    memory: DocumentView


class DocumentList(Answer):
    memory: list[DocumentView]


class GrepMatch(Answer):
    path: str = Field(examples=["conversation/plan.md"])
    line_number: int = Field(examples=[1])
    text: str = Field(examples=["ship friday"])


class GrepAnswer(Answer):
    matches: list[GrepMatch]
    truncated: bool = Field(examples=[False])
    truncated_reason: str | None = None
    # Only when a document's content was missing, so it was not searched.
    unreadable: list[str] | None = None
    # Only when a document's bytes failed their recorded hash (memory_content_corrupt), so it was not searched.
    corrupt: list[str] | None = Field(default=None, examples=[["conversation/plan.md"]])


class MergedFromView(Answer):
    conversation_public_id: PublicId = _id("The fork the merge landed.")
    public_id: PublicId = _id("The fork's document.")
    lock_version: int = Field(examples=[2])


class PromotedFromView(Answer):
    # An anchor's document, or a Memory's file.
    anchor_public_id: PublicId | None = None
    memory_id: str | None = None
    path: str = Field(examples=["conversation/plan.md"])
    public_id: PublicId = _id("The source document.")
    lock_version: int = Field(examples=[1])
    promoted_by: AuthorView | None = None
    promoted_at: When | None = None


class ForkedFromView(Answer):
    conversation_public_id: PublicId = _id("The parent conversation.")


class VersionView(Answer):
    path: str = Field(examples=["conversation/plan.md"])
    public_id: PublicId = _id("The document's id.")
    lock_version: int = Field(examples=[1])
    bytesize: int = Field(examples=[11])
    content_sha256: str = Field(examples=["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"])
    description: str | None = None
    written_at: When = _when("When this version was written.")
    author: AuthorView
    operation: str = Field(examples=["write"])
    overwrote_concurrent_edit: bool = Field(examples=[False])
    rolled_back_from: int | None = None
    renamed_from: str | None = None
    promoted_from: PromotedFromView | None = None
    promoted_by: AuthorView | None = None
    forked_from: ForkedFromView | None = None
    merged_from: MergedFromView | None = None
    redacted: bool = Field(examples=[False])
    redacted_at: When | None = None
    redacted_by: AuthorView | None = None
    pii: list[str] = Field(examples=[[]])
    quarantine: QuarantineView | None = None


class ShownVersionView(VersionView):
    content: str | None = Field(examples=["ship friday"])


class VersionPageAnswer(Answer):
    versions: list[VersionView]
    next_cursor: str | None = None


class VersionAnswer(TextWithheld):
    version: ShownVersionView


# ---- organization Memories ---------------------------------------------------------------------------

_MEM = "mem_0193f0c2a1b27c4e8f5d6a7b8c9d0e1f"
Mode = Literal["readwrite", "readonly"]


def _mem(description: str) -> Any:
    return Field(description=description, examples=[_MEM])


class DefaultView(Answer):
    reach: Literal["account", "deployment"]
    deployment: str | None = None
    mode: Mode
    read_first: bool


class AccessView(Answer):
    humans: list[str]
    workspaces: list[str]


class GitView(Answer):
    url: str = Field(examples=["https://github.com/acme/runbooks.git"])
    ref: str | None = None
    path: str | None = None
    commit: str | None = None


class ReferenceView(Answer):
    agent_public_id: PublicId = _id("An agent the Memory reaches.")
    name: str = Field(examples=["helper"])
    via: str = Field(examples=["attachment"])
    mode: Mode
    read_first: bool


class OrgMemoryView(Answer):
    memory_id: str = _mem("The Memory's id.")
    name: str = Field(examples=["runbooks"])
    description: str = Field(examples=["How we deploy and who is on call."])
    source: Literal["native", "git"]
    archived: bool = Field(examples=[False])
    default: DefaultView | None = None
    access: AccessView | None = None
    created_by: AuthorView
    created_at: When = _when("When it was created.")
    file_count: int = Field(examples=[2])
    bytesize: int = Field(examples=[18])
    written_by: AuthorView | None = None
    written_at: When | None = None
    # Only for a git-synced Memory, a promoted one, a listing, and a steward's view respectively.
    git: GitView | None = None
    promoted_from: PromotedFromView | None = None
    attachment_count: int | None = None
    referenced_by: list[ReferenceView] | None = None


class OrgMemoryAnswer(Answer):
    memory: OrgMemoryView


class OrgMemoryPage(Answer):
    memories: list[OrgMemoryView]
    next_cursor: str | None = None


class SyncView(Answer):
    commit: str = Field(examples=["4b825dc642cb6eb9a060e54bf8d69288fbee4904"])
    changed: list[str] = Field(examples=[["deploy/steps.md"]])
    removed: list[str] = Field(examples=[[]])


class SyncAnswer(Answer):
    memory: OrgMemoryView
    sync: SyncView


class FileView(Answer):
    """A Memory's file: a document without the skill-only description."""

    path: str = Field(examples=["deploy/steps.md"])
    public_id: PublicId = _id("The file's id.")
    lock_version: int = Field(examples=[1])
    bytesize: int = Field(examples=[9])
    written_at: When = _when("When this version was written.")
    written_by: AuthorView
    content_sha256: str = Field(examples=["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"])
    pii: list[str] = Field(examples=[[]])
    quarantine: QuarantineView | None = None
    content: str | None = Field(default=None, examples=["1. build"])


class FileAnswer(TextWithheld):
    file: FileView


class FileSummary(Answer):
    path: str = Field(examples=["deploy/steps.md"])
    public_id: PublicId = _id("The file's id.")
    lock_version: int = Field(examples=[1])
    bytesize: int = Field(examples=[9])
    written_at: When = _when("When this version was written.")
    written_by: AuthorView
    content_sha256: str = Field(examples=["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"])


class FilePageAnswer(Answer):
    files: list[FileSummary]
    next_cursor: str | None = None


class LeaseView(Answer):
    path: str = Field(examples=["deploy/steps.md"])
    holder: AuthorView
    expires_at: When = _when("When the lease lapses.")


class LeaseAnswer(Answer):
    lease: LeaseView


class AttachmentView(Answer):
    memory_id: str = _mem("The attached Memory.")
    mode: Mode
    read_first: bool


class AgentView(Answer):
    public_id: PublicId = _id("The agent's id.")
    name: str = Field(examples=["helper"])
    kind: str = Field(examples=["program"])
    steward_public_id: PublicId | None = None
    memory_context_limit: dict[str, Any] | None = None
    created_at: When = _when("When it was created.")
    deployment: str | None = None
    memories: list[AttachmentView]


class AgentAnswer(Answer):
    agent: AgentView


class AgentCreated(Withheld):
    agent: AgentView
    # A program's bearer token, shown once; a definition has none.
    token: str | None = Field(default=None, examples=["am_a_..."])


class EffectiveView(Answer):
    memory_id: str = _mem("A Memory the agent reaches.")
    name: str = Field(examples=["runbooks"])
    mode: Mode
    read_first: bool
    via: str = Field(examples=["attachment"])
    source: Literal["native", "git"]
    archived: bool


class EffectiveMemories(Answer):
    memories: list[EffectiveView]


# ---- typed records -------------------------------------------------------------------------------------


class TagsView(Answer):
    facet: str | None = None
    labels: list[str] = Field(examples=[["deploys"]])


class RecordView(Answer):
    public_id: PublicId = _id("The record's id.")
    workspace_public_id: PublicId = _id("Its workspace.")
    layer: str = Field(examples=["Workspace"])
    type: str = Field(examples=["decision"])
    # Null only in an Idempotency-Key replay of a record deleted or changed since (`text_withheld`).
    content: str | None = Field(examples=["We deploy on Fridays."])
    tags: TagsView
    run_id: str | None = None
    source_kind: str = Field(examples=["agent"])
    source_ref: str | None = None
    visibility: str = Field(examples=["workspace"])
    user_id: str | None = None
    observed_at: When | None = None
    valid_from: When | None = None
    valid_to: When | None = None
    supersedes: PublicId | None = None
    superseded_by: PublicId | None = None
    author: AuthorView
    created_at: When = _when("When it was first appended.")
    updated_at: When = _when("When it last changed.")
    last_seen_at: When = _when("When it was last appended again.")
    mention_count: int = Field(examples=[1])
    evidence_count: int = Field(examples=[1])
    stability: float = Field(examples=[0.5])
    pii: list[str] = Field(examples=[[]])
    quarantine: QuarantineView | None = None
    lock_version: int = Field(examples=[1])


class RecordAnswer(TextWithheld):
    record: RecordView


class AppendedAnswer(TextWithheld):
    record: RecordView
    merged: bool = Field(description="True when it joined an existing record (200), false when new (201).")
    content_replaced: bool = Field(examples=[False])
    operation_id: str = Field(examples=["op_1"])


class ScoredRecord(Answer):
    record: RecordView
    score: float = Field(examples=[1.5])


class RecordSearchAnswer(Answer):
    results: list[ScoredRecord]
    next_cursor: str | None = None
    # Only when the search stopped early.
    truncated: bool | None = None


class ConsolidationAnswer(Answer):
    status: Literal["consolidated"]
    created: int = Field(examples=[2])
    merged: int = Field(examples=[0])
    extraction: str = Field(examples=["rules"])
    note: str | None = None
    remaining: int = Field(examples=[0])


# ---- store entries, merges, skills, blocks, sessions ----------------------------------------------------


class EntryView(Answer):
    key: str = Field(examples=["plan"])
    lock_version: int = Field(examples=[1])
    bytesize: int = Field(examples=[14])
    updated_at: When = _when("When it was last written.")
    # Show and write answer the value; the listing does not.
    value: Any = Field(default=None, examples=[{"step": 1}])


class EntryAnswer(TextWithheld):
    entry: EntryView


class EntryList(Answer):
    entries: list[EntryView]


class MergeView(Answer):
    landed: list[str] = Field(examples=[["conversation/plan.md"]])
    kept: list[str] = Field(examples=[[]])
    conversation: ConversationView


class MergeAnswer(Answer):
    merge: MergeView


class SkillView(Answer):
    name: str = Field(examples=["deploy"])
    description: str | None = Field(examples=["How to ship a release."])
    path: str = Field(examples=["workspace/skills/deploy/SKILL.md"])
    content: str | None = None


class SkillList(Answer):
    skills: list[SkillView]


class SkillAnswer(Answer):
    skill: SkillView


class IncludedView(Answer):
    path: str = Field(examples=["conversation/plan.md"])
    public_id: PublicId = _id("The document.")
    lock_version: int = Field(examples=[1])
    bytesize: int = Field(examples=[11])
    written_at: When = _when("When it was written.")
    pii: list[str] = Field(examples=[[]])


class OmittedView(Answer):
    path: str = Field(examples=["workspace/big.md"])
    bytesize: int = Field(examples=[90000])
    written_at: When = _when("When it was written.")
    pii: list[str] = Field(examples=[[]])


class BlockMemoryView(Answer):
    memory_id: str = _mem("A mounted Memory.")
    name: str = Field(examples=["runbooks"])
    description: str = Field(examples=["How we deploy."])
    path: str = Field(examples=["/workspace/runbooks"])
    mode: Mode


class BlockView(Answer):
    context_revision: int = Field(examples=[1])
    budget_bytes: int = Field(examples=[16384])
    used_bytes: int = Field(examples=[11])
    text: str = Field(examples=["## conversation/plan.md\nship friday\n"])
    included: list[IncludedView]
    omitted: list[OmittedView]
    overridden_by: str | None = None
    # Only when it happens, and only for an execution's block, respectively.
    unreadable: list[OmittedView] | None = None
    # Only when a document's bytes failed their recorded hash (memory_content_corrupt): named, never rendered.
    corrupt: list[OmittedView] | None = None
    quarantined: list[OmittedView] | None = None
    memories: list[BlockMemoryView] | None = None


class BlockAnswer(Answer):
    memory_block: BlockView


class ToolResultAnswer(TextWithheld):
    tool: str = Field(examples=["memory_read"])
    is_error: bool = Field(examples=[False])
    code: str | None = None
    content: str = Field(examples=["ship friday"])
    data: Any = None


class MountView(Answer):
    path: str = Field(examples=["/workspace/runbooks"])
    kind: Literal["memory", "agent", "user"]
    memory_id: str | None = None
    name: str | None = None
    mode: Mode
    source: str = Field(examples=["native"])
    read_first: bool | None = None


class MountList(Answer):
    mounts: list[MountView]


class RootView(Answer):
    root: str = Field(examples=["conversation/"])
    scope: str = Field(examples=["conversation"])
    access: Literal["read", "read_write"]


class SessionFileList(Answer):
    files: list[FileSummary]
    roots: list[RootView]


class ToolSchemas(Answer):
    tools: list[dict[str, Any]]


class MapNode(Answer):
    id: str = Field(description="A Memory's or agent's id, `all_agents`, or `deployment:<name>`.", examples=[_UUID])
    kind: Literal["memory", "agent", "all_agents", "deployment"]
    name: str = Field(examples=["team-handbook"])


class MapEdge(Answer):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    source: str = Field(
        alias="from",
        description="The Memory the edge starts at (a `deployment:<name>` node for a `member` edge).",
        examples=[_UUID],
    )
    target: str = Field(alias="to", description="The node it reaches.", examples=["all_agents"])
    # member: an agent of a deployment that a Memory's deployment default reaches.
    kind: Literal["attachment", "default", "provenance", "member"]
    mode: Literal["readwrite", "readonly"] | None = None
    read_first: bool | None = None


class MapAnswer(Answer):
    """The graph the memory map draws: what each Memory the caller sees reaches, and where promoted ones came from."""

    nodes: list[MapNode]
    edges: list[MapEdge]
    orphans: list[str] = Field(description="Memories that nothing reaches.", examples=[[_UUID]])


# Each handler's answer, so a door's four routes share one line; ANSWERS spells it per route name.
_BY_HANDLER: dict[str, str] = {
    "directory:create_account": "AccountCreated",
    "console:console_session": "ConsoleSessionAnswer",
    "console:console_sign_in": "ConsoleSessionAnswer",
    "directory:create_human": "HumanCreated",
    "directory:rotate_human_credentials": "HumanCreated",
    "directory:create_workspace": "WorkspaceAnswer",
    "directory:update_workspace": "WorkspaceAnswer",
    "directory:add_member": "MemberAnswer",
    "directory:create_conversation": "ConversationAnswer",
    "directory:show_conversation": "ConversationAnswer",
    "directory:archive_conversation": "ConversationAnswer",
    "directory:fork_conversation": "ConversationAnswer",
    "directory:replace_memory_context": "ConversationAnswer",
    "directory:rotate_agent_credentials": "TokenAnswer",
    "directory:create_speaker": "SpeakerAnswer",
    "executions:create_execution": "ExecutionCreated",
    "executions:stop_execution": "ExecutionAnswer",
    "memory:show_memory": "DocumentAnswer",
    "memory:write_memory": "DocumentAnswer",
    "memory:edit_memory": "DocumentAnswer",
    "memory:rollback_version": "DocumentAnswer",
    "memory:review_version": "DocumentAnswer",
    "memory:list_memory": "DocumentList",
    "memory:grep_memory": "GrepAnswer",
    "memory:list_versions": "VersionPageAnswer",
    "memory:show_version": "VersionAnswer",
    "memory:redact_version": "VersionAnswer",
    "history:promote": "DocumentAnswer",
    "memories:create_memory": "OrgMemoryAnswer",
    "memories:show_memory": "OrgMemoryAnswer",
    "memories:update_memory": "OrgMemoryAnswer",
    "memories:archive_memory": "OrgMemoryAnswer",
    "memories:promote_memory": "OrgMemoryAnswer",
    "memories:list_memories": "OrgMemoryPage",
    "memories:sync_memory": "SyncAnswer",
    "memories:show_file": "FileAnswer",
    "memories:write_file": "FileAnswer",
    "memories:edit_file": "FileAnswer",
    "memories:rollback_file": "FileAnswer",
    "memories:redact_file_version": "VersionAnswer",
    "memories:list_files": "FilePageAnswer",
    "memories:grep_files": "GrepAnswer",
    "memories:file_versions": "VersionPageAnswer",
    "memories:show_file_version": "VersionAnswer",
    "memories:lease_file": "LeaseAnswer",
    "memories:show_agent": "AgentAnswer",
    "directory:create_agent": "AgentCreated",
    "records:append_record": "AppendedAnswer",
    "records:show_record": "RecordAnswer",
    "records:update_record": "RecordAnswer",
    "records:review_record": "RecordAnswer",
    "records:search_records": "RecordSearchAnswer",
    "records:consolidate_records": "ConsolidationAnswer",
    "entries:list_entries": "EntryList",
    "entries:show_entry": "EntryAnswer",
    "entries:write_entry": "EntryAnswer",
    "entries:merge_conversation": "MergeAnswer",
    "conversation:list_skills": "SkillList",
    "conversation:load_skill": "SkillAnswer",
    "conversation:memory_block": "BlockAnswer",
    "executions:execution_memory_block": "BlockAnswer",
    "executions:call_tool": "ToolResultAnswer",
    "executions:execution_mounts": "MountList",
    "executions:tool_schemas": "ToolSchemas",
    "executions:session_file_show": "FileAnswer",
    "executions:session_files_list": "SessionFileList",
    "executions:session_file_write": "FileAnswer",
    "executions:session_file_edit": "FileAnswer",
    "executions:session_file_rename": "FileAnswer",
    "memories:update_agent": "AgentAnswer",
    "memories:agent_memories": "EffectiveMemories",
    "memories:memory_map": "MapAnswer",
}

ANSWERS: dict[str, str] = {r.name: _BY_HANDLER[r.handler] for r in ROUTES if r.handler in _BY_HANDLER}

# Routes whose JSON answer has no model (their success schema stays {"type": "object"}): the OpenAPI document
# itself, and a revoke that answers no content under a 200 its route declares.
UNDESCRIBED: frozenset[str] = frozenset({"openapi_document", "revoke_human_credentials"})


def answer_model(name: str) -> type[Answer]:
    """The answer model a route's entry names."""
    found = globals().get(name)
    if not (isinstance(found, type) and issubclass(found, Answer)):
        raise LookupError(f"no answer model {name!r} in agent_memory.edges.answers")
    return found
