"""The route contract, as data: every route's name, method, path, door, access class and models.

This module imports nothing from the service, so every reader can load it for free: the Lambda entry
point (which imports only the handler module a route names), the template generator, the standard-library
client and the OpenAPI description. Adding a route is one entry here, its request model, its handler,
and `make template`.

Names are written out in full, except the memory doors' routes: those are one table of verbs crossed with
the doors that serve them (`DOOR_VERBS` x `DOORS`), and `DOOR_ROUTE_NAMES` spells every name they make,
so a search for `conversation_memory_write` still lands here (a unit test holds the two equal).
`handler` is "<module>:<function>" under `agent_memory.edges.http.handlers`; `request` names the body model in
`agent_memory.edges.requests` (None: the route reads no body);
`status` is the success status and `query` the query parameters the handler reads (the OpenAPI
document, openapi.py, publishes both).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

API: Final = "/agent_api/v1"
WS: Final = f"{API}/workspaces/{{workspace_public_id}}"
CONV: Final = f"{WS}/conversations/{{conversation_public_id}}"

# The one spelling of a public id (ids.py, the request models and the OpenAPI document read it from here).
# `$` is what JSON Schema engines read as the end; Python matchers use it with \Z instead.
UUID_PATTERN: Final = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


@dataclass(frozen=True, slots=True)
class ParameterRule:
    pattern: str  # a JSON Schema / Python regex, anchored with ^...$
    description: str  # completes "must be ..."


# What each path parameter may look like. Every `{..._public_id}` is a UUID; the names have their own
# grammar. A value outside it names nothing that can exist, so the glue answers not_found before any
# storage is read (and before a 2 KB id reaches DynamoDB's key bounds); the OpenAPI document publishes
# the same patterns.
PUBLIC_ID_RULE: Final = ParameterRule(UUID_PATTERN, "a lowercase UUID")
NAME_RULES: Final[dict[str, ParameterRule]] = {
    # An agent definition's name addresses it in URLs (directory.py refuses any other at creation).
    "agent_name": ParameterRule(
        r"^[a-z0-9][a-z0-9_-]{0,63}$", "a definition name: lowercase letters, digits, '-' and '_', at most 64"
    ),
    "tool_name": ParameterRule(r"^[a-z][a-z0-9_]{0,63}$", "a tool name such as 'memory_read'"),
    "memory_id": ParameterRule(r"^mem_[0-9a-f]{32}$", "a Memory id: mem_ and 32 lowercase hex digits"),
}


def path_parameters(path: str) -> tuple[str, ...]:
    """The `{name}` parameters of a route path, in order."""
    return tuple(re.findall(r"{([^}]+)}", path))


def parameter_rule(name: str) -> ParameterRule:
    """The grammar of one path parameter (a KeyError for a parameter no rule covers: a test holds it)."""
    return PUBLIC_ID_RULE if name.endswith("_public_id") else NAME_RULES[name]


# What a route may touch, and so its IAM role and its authentication:
#   read      token; reads the table and content
#   write     token; reads and writes the table and content
#   operator  X-Operator-Key instead of a token; writes the table; reads the operator key parameter
#   public    no token and no AWS access (static answers)
#   console   the console's sign-in and session: a Human's token in the body or the session cookie, never
#             a Bearer header; writes the table (the session item) and takes no Idempotency-Key
Access = Literal["read", "write", "operator", "public", "console"]
# What a route does with content versions in S3, and so the S3 actions its IAM role carries
# ("delete": a redaction deletes a version's object and reads none).
Content = Literal["none", "read", "write", "delete"]
# The memory doors: which Context a memory verb opens (core/access.py holds what each door allows).
Door = Literal["conversation", "workspace", "profile", "definition"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteSpec:
    name: str
    method: str
    path: str
    access: Access
    handler: str
    # What the route does, in a sentence or two: the OpenAPI operation's description and the generated
    # client method's docstring.
    description: str
    door: Door | None = None
    request: str | None = None
    content: Content = "none"
    status: int = 200
    query: tuple[str, ...] = ()
    # What a success is sent as, and any other success status the route may answer (a review that
    # rejects a document's only version deletes it: 204).
    media: str = "application/json"
    also: tuple[int, ...] = ()
    # The most bytes its body may hold, when more than the API's usual bound (edges/http/glue.py).
    body_bytes: int | None = None

    @property
    def needs_token(self) -> bool:
        return self.access in ("read", "write")

    @property
    def safe_to_retry(self) -> bool:
        """Sending it twice changes nothing: every GET and every read-only POST."""
        return self.method == "GET" or self.access in ("read", "public")


CONV_MEMORY: Final = f"{CONV}/memory"
WS_MEMORY: Final = f"{WS}/memory"
PROFILE_MEMORY: Final = f"{API}/profile/memory"
DEFINITION_MEMORY: Final = f"{API}/profile/agents/{{agent_name}}/memory"
MEMORIES: Final = f"{API}/memories"
MEMORY: Final = f"{MEMORIES}/{{memory_id}}"
MEMORY_FILES: Final = f"{MEMORY}/files"
# A Memory's file holds up to 1 MiB (model.MAX_MEMORY_FILE_BYTES), more than the API's usual 512 KiB body:
# the routes that carry a file's text take 4 MiB, room for its JSON escapes and still under Lambda's 6 MB.
# That is the Memory routes, and the session's (files write/edit, a tool call) that reach a mounted Memory.
FILE_BODY_BYTES: Final = 4 * 1024 * 1024
AGENT: Final = f"{API}/agents/{{agent_public_id}}"
EXECUTION: Final = f"{API}/executions/{{execution_public_id}}"
RECORDS: Final = f"{WS}/records"
RECORD: Final = f"{RECORDS}/{{record_public_id}}"


# ---- the memory doors: one table of verbs, served at each door's path ----


@dataclass(frozen=True, slots=True, kw_only=True)
class DoorVerb:
    """One memory verb as every door serves it: its route is `<door>_memory_<verb>` at the door's path
    plus `suffix`, and its description names the door where `{door}` stands."""

    verb: str
    method: str
    suffix: str
    access: Access
    handler: str
    description: str
    request: str | None = None
    content: Content = "none"
    status: int = 200
    query: tuple[str, ...] = ()
    media: str = "application/json"
    also: tuple[int, ...] = ()


DOOR_VERBS: Final[tuple[DoorVerb, ...]] = (
    DoorVerb(
        verb="list",
        method="GET",
        suffix="",
        access="read",
        handler="memory:list_memory",
        query=("memory[speaker_public_id]",),
        description="Every document of {door}, without content.",
    ),
    DoorVerb(
        verb="write",
        method="POST",
        suffix="",
        access="write",
        handler="memory:write_memory",
        content="write",
        request="MemoryWrite",
        status=201,
        description="Create or replace a whole document of {door}, if it is still at the expected version "
        "(none expected: only while its path is absent).",
    ),
    DoorVerb(
        verb="show",
        method="POST",
        suffix="/show",
        access="read",
        handler="memory:show_memory",
        content="read",
        request="MemoryShow",
        description="One document of {door}, with its content.",
    ),
    DoorVerb(
        verb="grep",
        method="POST",
        suffix="/grep",
        access="read",
        handler="memory:grep_memory",
        content="read",
        request="MemoryGrep",
        description="Search the documents of {door} line by line for a pattern.",
    ),
    DoorVerb(
        verb="edit",
        method="POST",
        suffix="/edit",
        access="write",
        handler="memory:edit_memory",
        content="write",
        request="MemoryEdit",
        description="Replace one exact passage of a document of {door}, if it is still at the expected version; "
        "the passage must occur once.",
    ),
    DoorVerb(
        verb="delete",
        method="POST",
        suffix="/delete",
        access="write",
        handler="memory:delete_memory",
        request="MemoryDelete",
        status=204,
        description="Delete a document of {door}, if it is still at the expected version.",
    ),
    DoorVerb(
        verb="versions",
        method="POST",
        suffix="/versions",
        access="read",
        handler="memory:list_versions",
        request="MemoryVersions",
        description="A document's versions in {door}, newest first, without content.",
    ),
    DoorVerb(
        verb="version_show",
        method="POST",
        suffix="/versions/show",
        access="read",
        handler="memory:show_version",
        content="read",
        request="MemoryVersionShow",
        description="One version of a document of {door}, with its content (null once redacted).",
    ),
    DoorVerb(
        verb="rollback",
        method="POST",
        suffix="/rollback",
        access="write",
        handler="memory:rollback_version",
        content="read",
        request="MemoryVersionChange",
        status=201,
        description="Restore an earlier version of a document of {door} as a new version, if the document is "
        "still at the expected version.",
    ),
    DoorVerb(
        verb="version_redact",
        method="POST",
        suffix="/versions/redact",
        access="write",
        handler="memory:redact_version",
        content="delete",
        request="MemoryVersionChange",
        description="Delete the text of an earlier version of a document of {door} for good; the version's "
        "record stays.",
    ),
    DoorVerb(
        verb="review",
        method="POST",
        suffix="/review",
        access="write",
        handler="memory:review_version",
        content="read",
        request="MemoryReview",
        also=(204,),
        description="Release or reject the current, quarantined version of a document of {door}; rejecting "
        "its only version deletes the document (204).",
    ),
    DoorVerb(
        verb="export",
        method="GET",
        suffix="/export",
        access="read",
        handler="memory:export_memory",
        content="read",
        query=("cursor",),
        media="application/x-ndjson",
        description="One page of the export of {door} as NDJSON, personal data masked; the "
        "Export-Next-Cursor header names the next page.",
    ),
)
# The verbs every door serves; the export is only for the two doors whose documents leave as a whole.
_DOOR_COMMON: Final = tuple(v.verb for v in DOOR_VERBS if v.verb != "export")


@dataclass(frozen=True, slots=True)
class DoorSpec:
    path: str
    words: str  # what the door opens, as its routes' descriptions name it
    verbs: tuple[str, ...]


DOORS: Final[dict[Door, DoorSpec]] = {
    "conversation": DoorSpec(
        CONV_MEMORY,
        "a conversation's memory (every root its bindings open; a change bumps its context revision)",
        _DOOR_COMMON,
    ),
    "workspace": DoorSpec(
        WS_MEMORY,
        "the workspace's own workspace/ documents (with its conversations' for the export)",
        (*_DOOR_COMMON, "export"),
    ),
    "profile": DoorSpec(
        PROFILE_MEMORY,
        "the caller's own documents (a Human's user/, a paired program's agent/)",
        (*_DOOR_COMMON, "export"),
    ),
    "definition": DoorSpec(DEFINITION_MEMORY, "a named agent definition's agent/ documents", _DOOR_COMMON),
}


def door_routes(door: Door) -> tuple[RouteSpec, ...]:
    """The routes of one door, in the verbs' order."""
    spec = DOORS[door]
    return tuple(
        RouteSpec(
            name=f"{door}_memory_{v.verb}",
            method=v.method,
            path=spec.path + v.suffix,
            access=v.access,
            handler=v.handler,
            description=v.description.format(door=spec.words),
            door=door,
            request=v.request,
            content=v.content,
            status=v.status,
            query=v.query,
            media=v.media,
            also=v.also,
        )
        for v in DOOR_VERBS
        if v.verb in spec.verbs
    )


# Every name `door_routes` makes, spelled out for searches (tests/unit/test_contract.py holds them equal).
DOOR_ROUTE_NAMES: Final = (
    "conversation_memory_list",
    "conversation_memory_write",
    "conversation_memory_show",
    "conversation_memory_grep",
    "conversation_memory_edit",
    "conversation_memory_delete",
    "conversation_memory_versions",
    "conversation_memory_version_show",
    "conversation_memory_rollback",
    "conversation_memory_version_redact",
    "conversation_memory_review",
    "workspace_memory_list",
    "workspace_memory_write",
    "workspace_memory_show",
    "workspace_memory_grep",
    "workspace_memory_edit",
    "workspace_memory_delete",
    "workspace_memory_versions",
    "workspace_memory_version_show",
    "workspace_memory_rollback",
    "workspace_memory_version_redact",
    "workspace_memory_review",
    "workspace_memory_export",
    "profile_memory_list",
    "profile_memory_write",
    "profile_memory_show",
    "profile_memory_grep",
    "profile_memory_edit",
    "profile_memory_delete",
    "profile_memory_versions",
    "profile_memory_version_show",
    "profile_memory_rollback",
    "profile_memory_version_redact",
    "profile_memory_review",
    "profile_memory_export",
    "definition_memory_list",
    "definition_memory_write",
    "definition_memory_show",
    "definition_memory_grep",
    "definition_memory_edit",
    "definition_memory_delete",
    "definition_memory_versions",
    "definition_memory_version_show",
    "definition_memory_rollback",
    "definition_memory_version_redact",
    "definition_memory_review",
)

ROUTES: Final[tuple[RouteSpec, ...]] = (
    # ---- the directory ----
    RouteSpec(
        name="create_account",
        method="POST",
        path=f"{API}/accounts",
        access="operator",
        handler="directory:create_account",
        request="CreateAccount",
        status=201,
        description="Create an account with its first Human, answering that Human's token once. Needs the "
        "deployment's operator key (X-Operator-Key), not a token.",
    ),
    RouteSpec(
        name="create_human",
        method="POST",
        path=f"{API}/humans",
        access="write",
        handler="directory:create_human",
        request="CreateHuman",
        status=201,
        description="Add another Human to the caller's account, answering the new Human's token once.",
    ),
    RouteSpec(
        name="rotate_human_credentials",
        method="POST",
        path=f"{API}/humans/{{human_public_id}}/credentials/rotate",
        access="write",
        handler="directory:rotate_human_credentials",
        status=201,
        description="Issue a new token for a Human (the caller itself, or any of the account's as its first "
        "Human); the old token stops working at once.",
    ),
    RouteSpec(
        name="revoke_human_credentials",
        method="POST",
        path=f"{API}/humans/{{human_public_id}}/credentials/revoke",
        access="write",
        handler="directory:revoke_human_credentials",
        status=204,
        description="Stop every token of a Human from working until its credentials are rotated again.",
    ),
    RouteSpec(
        name="create_workspace",
        method="POST",
        path=f"{API}/workspaces",
        access="write",
        handler="directory:create_workspace",
        request="CreateWorkspace",
        status=201,
        description="Create a workspace owned by the caller; its creator is its first member.",
    ),
    RouteSpec(
        name="update_workspace",
        method="PATCH",
        path=WS,
        access="write",
        handler="directory:update_workspace",
        request="UpdateWorkspace",
        description="Change a workspace's settings, such as which provider serves each memory tool.",
    ),
    RouteSpec(
        name="add_member",
        method="POST",
        path=f"{WS}/members",
        access="write",
        handler="directory:add_member",
        request="AddMember",
        status=201,
        description="Add a Human or an agent to a workspace as a member.",
    ),
    RouteSpec(
        name="create_conversation",
        method="POST",
        path=f"{WS}/conversations",
        access="write",
        handler="directory:create_conversation",
        request="CreateConversation",
        status=201,
        description="Start a conversation in a workspace, optionally with an answering agent and its own memory "
        "bindings (memory_context).",
    ),
    RouteSpec(
        name="show_conversation",
        method="GET",
        path=CONV,
        access="read",
        handler="directory:show_conversation",
        description="A conversation: its bindings, its context revision, whether it is archived, and its fork parent.",
    ),
    RouteSpec(
        name="archive_conversation",
        method="POST",
        path=f"{CONV}/archive",
        access="write",
        handler="directory:archive_conversation",
        description="Archive a conversation: it stays readable, but its memory can no longer be changed.",
    ),
    RouteSpec(
        name="fork_conversation",
        method="POST",
        path=f"{CONV}/fork",
        access="write",
        handler="directory:fork_conversation",
        status=201,
        description="Make a copy-on-write child of a conversation: it starts with the parent's conversation/ "
        "documents, which it then changes on its own.",
    ),
    RouteSpec(
        name="delete_conversation",
        method="POST",
        path=f"{CONV}/delete",
        access="write",
        handler="directory:delete_conversation",
        status=204,
        description="Delete a conversation (its creator or the workspace's creator): from then on it is not "
        "found, and its executions are stopped. Its forks stay.",
    ),
    RouteSpec(
        name="replace_memory_context",
        method="POST",
        path=f"{CONV}/memory_context",
        access="write",
        handler="directory:replace_memory_context",
        request="ReplaceMemoryContext",
        description="Replace a conversation's memory bindings whole; null restores the default roots. Bumps its "
        "context revision.",
    ),
    RouteSpec(
        name="create_agent",
        method="POST",
        path=f"{API}/agents",
        access="write",
        handler="directory:create_agent",
        request="CreateAgent",
        status=201,
        description="Create an agent: a paired program (answering its token once) or a named definition.",
    ),
    RouteSpec(
        name="rotate_agent_credentials",
        method="POST",
        path=f"{AGENT}/credentials/rotate",
        access="write",
        handler="directory:rotate_agent_credentials",
        description="Issue a new token for a paired program agent; the old one stops working at once.",
    ),
    RouteSpec(
        name="create_speaker",
        method="POST",
        path=f"{API}/speakers",
        access="write",
        handler="directory:create_speaker",
        request="CreateSpeaker",
        status=201,
        description="Create a speaker: a named voice of an agent, with memory rows of its own.",
    ),
    # ---- a conversation's store entries, and merging a fork back ----
    RouteSpec(
        name="conversation_store_entries_list",
        method="GET",
        path=f"{CONV}/store_entries",
        access="read",
        handler="entries:list_entries",
        description="List a conversation's store entries (client state no prompt reads): each key, lock version, "
        "size and time, without values.",
    ),
    RouteSpec(
        name="conversation_store_entry_write",
        method="POST",
        path=f"{CONV}/store_entries",
        access="write",
        handler="entries:write_entry",
        request="StoreEntryWrite",
        status=201,
        description="Create a store entry (expected_lock_version null: only while absent) or replace it if still "
        "at the expected lock version.",
    ),
    RouteSpec(
        name="conversation_store_entry_show",
        method="POST",
        path=f"{CONV}/store_entries/show",
        access="read",
        handler="entries:show_entry",
        request="StoreEntryShow",
        description="One store entry with its JSON value.",
    ),
    RouteSpec(
        name="conversation_store_entry_delete",
        method="POST",
        path=f"{CONV}/store_entries/delete",
        access="write",
        handler="entries:delete_entry",
        request="StoreEntryDelete",
        status=204,
        description="Delete a store entry if it is still at the expected lock version.",
    ),
    RouteSpec(
        name="merge_conversation",
        method="POST",
        path=f"{CONV}/merge",
        access="write",
        handler="entries:merge_conversation",
        request="MergeConversation",
        description="Fold a fork's conversation/ documents back into its parent, three-way; a conflict under the "
        '"fail" strategy is merge_conflict, naming each path.',
    ),
    # ---- the conversation door, its skills and its memory block ----
    *door_routes("conversation"),
    RouteSpec(
        name="conversation_skills_list",
        method="GET",
        path=f"{CONV}/skills",
        access="read",
        handler="conversation:list_skills",
        query=("skill[speaker_public_id]",),
        description="The skills catalogue the model would see in this conversation: each skill's name and "
        "description, the first source winning.",
    ),
    RouteSpec(
        name="conversation_skill_load",
        method="POST",
        path=f"{CONV}/skills/load",
        access="read",
        handler="conversation:load_skill",
        request="SkillLoad",
        content="read",
        description="One skill's body, resolved through the conversation's skill sources in order.",
    ),
    RouteSpec(
        name="conversation_memory_block",
        method="POST",
        path=f"{CONV}/memory_block",
        access="read",
        handler="conversation:memory_block",
        request="MemoryBlock",
        content="read",
        description="The leading memory block the next reply would be assembled from, within a byte budget: its "
        "text and which documents were included or left out.",
    ),
    # ---- the workspace, profile (the caller's own user/ or agent/ rows) and definition doors ----
    *door_routes("workspace"),
    *door_routes("profile"),
    *door_routes("definition"),
    # ---- promote: a chosen version into the workspace's shared memory ----
    RouteSpec(
        name="workspace_memory_promote",
        method="POST",
        path=f"{WS_MEMORY}/promote",
        access="write",
        handler="history:promote",
        request="Promote",
        content="write",
        status=201,
        description="Copy one chosen version of a readable document into the workspace's shared workspace/ memory"
        " (appended, for a skill), recording where it came from.",
    ),
    # ---- executions and the model's tools ----
    RouteSpec(
        name="create_execution",
        method="POST",
        path=f"{CONV}/executions",
        access="write",
        handler="executions:create_execution",
        request="CreateExecution",
        status=201,
        description="Start an execution in a conversation: its bindings and tools are frozen now. Answers the "
        "execution and, once, the secret the in-account tool function accepts.",
    ),
    RouteSpec(
        name="call_tool",
        method="POST",
        path=f"{EXECUTION}/tools/{{tool_name}}",
        access="write",
        handler="executions:call_tool",
        request="CallTool",
        content="write",
        body_bytes=FILE_BODY_BYTES,
        description="Run one model tool call in an execution. A tool's refusal is a result for the model "
        "(is_error, code), not an HTTP error.",
    ),
    RouteSpec(
        name="stop_execution",
        method="POST",
        path=f"{EXECUTION}/stop",
        access="write",
        handler="executions:stop_execution",
        description="Stop an execution for good, and every execution spawned from it; stopping a stopped one "
        "answers the same.",
    ),
    RouteSpec(
        name="tool_schemas",
        method="GET",
        path=f"{API}/tools/schemas",
        access="public",
        handler="executions:tool_schemas",
        query=("format",),
        description="The model's memory tool definitions, ready to hand to a provider's API (format anthropic or "
        "openai). Needs no token.",
    ),
    RouteSpec(
        name="execution_memory_block",
        method="POST",
        path=f"{EXECUTION}/memory_block",
        access="read",
        handler="executions:execution_memory_block",
        request="ExecutionMemoryBlock",
        content="read",
        description="An execution's memory block: the conversation's documents, then the files of its read_first "
        "mounts and the other mounted Memories to open on demand.",
    ),
    RouteSpec(
        name="execution_mounts",
        method="GET",
        path=f"{EXECUTION}/mounts",
        access="read",
        handler="executions:execution_mounts",
        description="The Memories mounted into an execution's file tree, each with its path and access, as frozen"
        " at its creation.",
    ),
    RouteSpec(
        name="execution_files_list",
        method="POST",
        path=f"{EXECUTION}/files/list",
        access="read",
        handler="executions:session_files_list",
        request="SessionFile",
        description="The files at or under a folder of an execution's tree: its mounts' by absolute path, or its "
        "roots' documents.",
    ),
    RouteSpec(
        name="execution_file_show",
        method="POST",
        path=f"{EXECUTION}/files/show",
        access="read",
        handler="executions:session_file_show",
        request="SessionFile",
        content="read",
        description="One file of an execution's tree with its content.",
    ),
    RouteSpec(
        name="execution_file_write",
        method="POST",
        path=f"{EXECUTION}/files/write",
        access="write",
        handler="executions:session_file_write",
        request="SessionFileChange",
        content="write",
        status=201,
        body_bytes=FILE_BODY_BYTES,
        description="Create or replace a file in an execution's tree, conditionally on the expected version (a "
        "read-only mount refuses).",
    ),
    RouteSpec(
        name="execution_file_edit",
        method="POST",
        path=f"{EXECUTION}/files/edit",
        access="write",
        handler="executions:session_file_edit",
        request="SessionFileChange",
        content="write",
        body_bytes=FILE_BODY_BYTES,
        description="Replace one exact passage of a file in an execution's tree; the passage must occur once.",
    ),
    RouteSpec(
        name="execution_file_delete",
        method="POST",
        path=f"{EXECUTION}/files/delete",
        access="write",
        handler="executions:session_file_delete",
        request="SessionFileChange",
        status=204,
        description="Delete a file of an execution's tree if it is still at the expected version.",
    ),
    RouteSpec(
        name="execution_file_rename",
        method="POST",
        path=f"{EXECUTION}/files/rename",
        access="write",
        handler="executions:session_file_rename",
        request="SessionFileRename",
        status=201,
        description="Move a file of an execution's tree to a path that holds none, in one transaction; answers "
        "the new file.",
    ),
    # ---- organization Memories ----
    RouteSpec(
        name="create_memory",
        method="POST",
        path=MEMORIES,
        access="write",
        handler="memories:create_memory",
        request="CreateMemory",
        content="write",
        status=201,
        body_bytes=FILE_BODY_BYTES,
        description="Create an organization Memory with its first files, or imported from a Git repository; a "
        "tenant default and access rules may be given.",
    ),
    RouteSpec(
        name="list_memories",
        method="GET",
        path=MEMORIES,
        access="read",
        handler="memories:list_memories",
        query=("limit", "cursor"),
        description="A page of the organization Memories the caller can see.",
    ),
    RouteSpec(
        name="promote_memory",
        method="POST",
        path=f"{MEMORIES}/promote",
        access="write",
        handler="memories:promote_memory",
        request="PromoteToMemory",
        status=201,
        description="Copy one version of a document (from a workspace, a conversation or another Memory) into a "
        "new organization Memory.",
    ),
    RouteSpec(
        name="show_memory",
        method="GET",
        path=MEMORY,
        access="read",
        handler="memories:show_memory",
        description="One organization Memory: its name, description, source, default and access.",
    ),
    RouteSpec(
        name="update_memory",
        method="PATCH",
        path=MEMORY,
        access="write",
        handler="memories:update_memory",
        request="PatchMemory",
        description="Change a Memory's description, tenant default or access; a field sent as null clears a "
        "default or restores open access.",
    ),
    RouteSpec(
        name="archive_memory",
        method="POST",
        path=f"{MEMORY}/archive",
        access="write",
        handler="memories:archive_memory",
        description="Archive a Memory: it can no longer be newly mounted or attached; where it already is, it stays.",
    ),
    RouteSpec(
        name="delete_memory",
        method="POST",
        path=f"{MEMORY}/delete",
        access="write",
        handler="memories:delete_memory",
        status=204,
        description="Delete a Memory and its files for good.",
    ),
    RouteSpec(
        name="sync_memory",
        method="POST",
        path=f"{MEMORY}/sync",
        access="write",
        handler="memories:sync_memory",
        content="write",
        description="Re-import a git-synced Memory from its repository: answers the commit and the files changed "
        "and removed.",
    ),
    RouteSpec(
        name="memory_files_list",
        method="GET",
        path=MEMORY_FILES,
        access="read",
        handler="memories:list_files",
        query=("prefix", "limit", "cursor"),
        description="A page of a Memory's files (paths, versions and sizes, no content), optionally under a prefix.",
    ),
    RouteSpec(
        name="memory_file_write",
        method="POST",
        path=MEMORY_FILES,
        access="write",
        handler="memories:write_file",
        request="FileWrite",
        content="write",
        status=201,
        body_bytes=FILE_BODY_BYTES,
        description="Create or replace a file of a Memory, conditionally on the expected version.",
    ),
    RouteSpec(
        name="memory_file_show",
        method="POST",
        path=f"{MEMORY_FILES}/show",
        access="read",
        handler="memories:show_file",
        request="FileShow",
        content="read",
        description="One file of a Memory with its content.",
    ),
    RouteSpec(
        name="memory_file_edit",
        method="POST",
        path=f"{MEMORY_FILES}/edit",
        access="write",
        handler="memories:edit_file",
        request="FileEdit",
        content="write",
        body_bytes=FILE_BODY_BYTES,
        description="Replace one exact passage of a Memory's file; the passage must occur once.",
    ),
    RouteSpec(
        name="memory_file_delete",
        method="POST",
        path=f"{MEMORY_FILES}/delete",
        access="write",
        handler="memories:delete_file",
        request="FileDelete",
        status=204,
        description="Delete a Memory's file if it is still at the expected version.",
    ),
    RouteSpec(
        name="memory_file_grep",
        method="POST",
        path=f"{MEMORY_FILES}/grep",
        access="read",
        handler="memories:grep_files",
        request="FileGrep",
        content="read",
        description="Search a Memory's files line by line for a pattern.",
    ),
    RouteSpec(
        name="memory_file_versions",
        method="POST",
        path=f"{MEMORY_FILES}/versions",
        access="read",
        handler="memories:file_versions",
        request="FileVersions",
        description="A file's versions, newest first, without content.",
    ),
    RouteSpec(
        name="memory_file_version_show",
        method="POST",
        path=f"{MEMORY_FILES}/versions/show",
        access="read",
        handler="memories:show_file_version",
        request="FileVersionShow",
        content="read",
        description="One version of a Memory's file with its content.",
    ),
    RouteSpec(
        name="memory_file_rollback",
        method="POST",
        path=f"{MEMORY_FILES}/rollback",
        access="write",
        handler="memories:rollback_file",
        request="FileRollback",
        content="read",
        status=201,
        description="Restore an earlier version of a Memory's file as a new version, if the file is still at the "
        "expected version.",
    ),
    RouteSpec(
        name="memory_file_version_redact",
        method="POST",
        path=f"{MEMORY_FILES}/versions/redact",
        access="write",
        handler="memories:redact_file_version",
        request="FileVersionRedact",
        content="delete",
        description="Delete the text of an earlier version of a Memory's file for good, if the file is still at "
        "the expected version; the version's record stays.",
    ),
    RouteSpec(
        name="memory_file_lease",
        method="POST",
        path=f"{MEMORY_FILES}/lease",
        access="write",
        handler="memories:lease_file",
        request="FileLease",
        description="Lease a Memory's file for some seconds: while the lease lasts, other writers of that file "
        "are refused (memory_leased).",
    ),
    RouteSpec(
        name="show_agent",
        method="GET",
        path=AGENT,
        access="read",
        handler="memories:show_agent",
        description="One agent: its kind, deployment and attached Memories.",
    ),
    RouteSpec(
        name="update_agent",
        method="PATCH",
        path=AGENT,
        access="write",
        handler="memories:update_agent",
        request="PatchAgent",
        description="Replace an agent's Memory attachments ([] detaches all) and/or its deployment; what is left "
        "out stays.",
    ),
    RouteSpec(
        name="agent_memories",
        method="GET",
        path=f"{AGENT}/memories",
        access="read",
        handler="memories:agent_memories",
        description="The Memories an agent has, by attachment or tenant default.",
    ),
    RouteSpec(
        name="memory_map",
        method="GET",
        path=f"{API}/memory_map",
        access="read",
        handler="memories:memory_map",
        description="Which agents see which Memories and documents across the caller's account, as JSON.",
    ),
    RouteSpec(
        name="memory_map_page",
        method="GET",
        path=f"{API}/memory_map.html",
        access="read",
        handler="memories:memory_map_page",
        media="text/html",
        description="The memory map as one self-contained HTML page.",
    ),
    # ---- the console (render/console/, edges/http/console.py) ----
    RouteSpec(
        name="console_page",
        method="GET",
        path="/console",
        access="public",
        handler="console:console_page",
        media="text/html",
        description="The console: the page people use to see, edit and govern memory (sign in there with a "
        "Human's token). Needs no token to load.",
    ),
    # The console's own files (render/console/), one route each: no path from a request is read from disk.
    RouteSpec(
        name="console_script",
        method="GET",
        path="/console/console.js",
        access="public",
        handler="console:console_asset",
        media="text/javascript",
        description="The console's script.",
    ),
    RouteSpec(
        name="console_style",
        method="GET",
        path="/console/console.css",
        access="public",
        handler="console:console_asset",
        media="text/css",
        description="The console's styles.",
    ),
    RouteSpec(
        name="console_session",
        method="GET",
        path="/console/api/session",
        access="console",
        handler="console:console_session",
        description="Who the console's session cookie signs in, and the CSRF token every change must carry in "
        "X-CSRF-Token. 401 without a live session.",
    ),
    RouteSpec(
        name="console_sign_in",
        method="POST",
        path="/console/api/session",
        access="console",
        handler="console:console_sign_in",
        request="ConsoleSignIn",
        status=201,
        description="Exchange a Human's token (in the body, never the URL) for a console session cookie; an "
        "agent's token is refused.",
    ),
    RouteSpec(
        name="console_sign_out",
        method="POST",
        path="/console/api/session/delete",
        access="console",
        handler="console:console_sign_out",
        status=204,
        description="End the console session the cookie names; the cookie is cleared.",
    ),
    # ---- typed records ----
    RouteSpec(
        name="records_append",
        method="POST",
        path=RECORDS,
        access="write",
        handler="records:append_record",
        request="AppendRecord",
        status=201,
        also=(200,),
        description="Append a typed record to a workspace. An existing record may absorb it (a mention or more "
        "evidence): then the answer is 200 with merged true.",
    ),
    RouteSpec(
        name="records_search",
        method="POST",
        path=f"{RECORDS}/search",
        access="read",
        handler="records:search_records",
        request="SearchRecords",
        description="Ranked records of a workspace matching a query and filters; without a query only a curator's"
        " quarantine review queue.",
    ),
    RouteSpec(
        name="records_consolidate",
        method="POST",
        path=f"{RECORDS}/consolidate",
        access="write",
        handler="records:consolidate_records",
        request="ConsolidateRecords",
        description="Turn a run's Session raw lines into Workspace records: answers what was created and merged "
        "and what remains.",
    ),
    RouteSpec(
        name="records_export",
        method="GET",
        path=f"{RECORDS}/export",
        access="read",
        handler="records:export_records",
        query=("cursor",),
        media="application/x-ndjson",
        description="One page of a workspace's records as NDJSON (quarantined ones left out, personal data "
        "masked); the Export-Next-Cursor header names the next page.",
    ),
    RouteSpec(
        name="record_show",
        method="GET",
        path=RECORD,
        access="read",
        handler="records:show_record",
        description="One record with its text, tags and lock version.",
    ),
    RouteSpec(
        name="record_update",
        method="POST",
        path=RECORD,
        access="write",
        handler="records:update_record",
        request="UpdateRecord",
        description="A new version of a record's text and/or tags, if it is still at the expected lock version.",
    ),
    RouteSpec(
        name="record_delete",
        method="POST",
        path=f"{RECORD}/delete",
        access="write",
        handler="records:delete_record",
        request="DeleteRecord",
        status=204,
        description="Delete a record if it is still at the expected lock version.",
    ),
    RouteSpec(
        name="record_review",
        method="POST",
        path=f"{RECORD}/review",
        access="write",
        handler="records:review_record",
        request="ReviewRecord",
        also=(204,),
        description="A curator's verdict on a quarantined record: release answers the record, reject deletes it (204).",
    ),
    # ---- the API's own description ----
    RouteSpec(
        name="openapi_document",
        method="GET",
        path=f"{API}/openapi.json",
        access="public",
        handler="openapi:openapi_document",
        description="This API's OpenAPI 3.1 description, generated from the route table the service runs. Needs "
        "no token.",
    ),
)

# Not a route of the API: what answers a request no route matches (a path, or a path's method, the API
# does not serve). The deployed HTTP API sends those to its `$default` route, which templategen points at
# this function; the local gateway does the same. It reads nothing: the answer is the error envelope.
UNKNOWN_ROUTE: Final = RouteSpec(
    name="unknown_route",
    method="ANY",
    path="$default",
    access="public",
    handler="fallback:unknown_route",
    description="Any request no route matches: 404 not_found in the error envelope, naming the methods the path "
    "does answer, if any, and where every route is listed.",
)

# Every function's entry by name: the routes, and the fallback.
BY_NAME: Final[dict[str, RouteSpec]] = {r.name: r for r in (*ROUTES, UNKNOWN_ROUTE)}
# (door, verb) -> route, the verb read off the handler's name ("memory:write_memory" -> "write").
_DOOR_VERBS: Final[dict[tuple[str, str], RouteSpec]] = {
    (r.door, r.handler.partition(":")[2].removesuffix("_memory")): r for r in ROUTES if r.door is not None
}


def door_route(door: Door, verb: str) -> RouteSpec:
    """The route serving one memory verb (list, write, show, grep, edit, delete, and the history verbs
    list_versions, show_version, rollback_version, redact_version, review_version) at a door."""
    return _DOOR_VERBS[(door, verb)]


# The model's tools, in the order they are offered (tools.py defines them; a test holds the two equal).
TOOL_NAMES: Final = (
    "memory_ls",
    "memory_read",
    "memory_write",
    "memory_edit",
    "memory_delete",
    "memory_history",
    "memory_append",
    "memory_search",
    "skill",
)
READ_ONLY_TOOLS: Final = frozenset({"memory_ls", "memory_read", "memory_history", "memory_search", "skill"})
