"""The route contract, as data: every route's name, method, path, door, access class and models.

This module imports nothing from the service, so every reader can load it for free: the Lambda entry
point (which imports only the handler module a route names), the template generator, the standard-library
client and the OpenAPI description. Adding a route is one entry here, its handler, and `make template`.

Names are written out in full, never built, so a search for `conversation_memory_write` finds its entry.
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
Access = Literal["read", "write", "operator", "public"]
# What a route does with content versions in S3, and so the S3 actions its IAM role carries
# ("delete": a redaction deletes a version's object and reads none).
Content = Literal["none", "read", "write", "delete"]
# The memory doors: which Context a memory verb opens (core/access.py holds what each door allows).
Door = Literal["conversation", "workspace", "profile", "definition"]


@dataclass(frozen=True, slots=True)
class RouteSpec:
    name: str
    method: str
    path: str
    access: Access
    handler: str
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


def _r(
    name: str,
    method: str,
    path: str,
    access: Access,
    handler: str,
    *,
    door: Door | None = None,
    request: str | None = None,
    content: Content = "none",
    status: int = 200,
    query: tuple[str, ...] = (),
    media: str = "application/json",
    also: tuple[int, ...] = (),
    body_bytes: int | None = None,
) -> RouteSpec:
    return RouteSpec(
        name, method, path, access, handler, door, request, content, status, query, media, also, body_bytes
    )


CONV_MEMORY: Final = f"{CONV}/memory"
WS_MEMORY: Final = f"{WS}/memory"
PROFILE_MEMORY: Final = f"{API}/profile/memory"
DEFINITION_MEMORY: Final = f"{API}/profile/agents/{{agent_name}}/memory"
MEMORIES: Final = f"{API}/memories"
MEMORY: Final = f"{MEMORIES}/{{memory_id}}"
MEMORY_FILES: Final = f"{MEMORY}/files"
# A Memory's file holds up to 1 MiB (model.MAX_MEMORY_FILE_BYTES), more than the API's usual 512 KiB body:
# the routes that carry a file's text take 4 MiB, room for its JSON escapes and still under Lambda's 6 MB.
FILE_BODY_BYTES: Final = 4 * 1024 * 1024
AGENT: Final = f"{API}/agents/{{agent_public_id}}"
EXECUTION: Final = f"{API}/executions/{{execution_public_id}}"
RECORDS: Final = f"{WS}/records"
RECORD: Final = f"{RECORDS}/{{record_public_id}}"

ROUTES: Final[tuple[RouteSpec, ...]] = (
    # ---- the directory ----
    _r(
        "create_account",
        "POST",
        f"{API}/accounts",
        "operator",
        "directory:create_account",
        request="CreateAccount",
        status=201,
    ),
    _r("create_human", "POST", f"{API}/humans", "write", "directory:create_human", request="CreateHuman", status=201),
    _r(
        "rotate_human_credentials",
        "POST",
        f"{API}/humans/{{human_public_id}}/credentials/rotate",
        "write",
        "directory:rotate_human_credentials",
        status=201,
    ),
    _r(
        "revoke_human_credentials",
        "POST",
        f"{API}/humans/{{human_public_id}}/credentials/revoke",
        "write",
        "directory:revoke_human_credentials",
        status=204,
    ),
    _r(
        "create_workspace",
        "POST",
        f"{API}/workspaces",
        "write",
        "directory:create_workspace",
        request="CreateWorkspace",
        status=201,
    ),
    _r("update_workspace", "PATCH", WS, "write", "directory:update_workspace", request="UpdateWorkspace"),
    _r("add_member", "POST", f"{WS}/members", "write", "directory:add_member", request="AddMember", status=201),
    _r(
        "create_conversation",
        "POST",
        f"{WS}/conversations",
        "write",
        "directory:create_conversation",
        request="CreateConversation",
        status=201,
    ),
    _r("show_conversation", "GET", CONV, "read", "directory:show_conversation"),
    _r("archive_conversation", "POST", f"{CONV}/archive", "write", "directory:archive_conversation"),
    _r("fork_conversation", "POST", f"{CONV}/fork", "write", "directory:fork_conversation", status=201),
    _r("delete_conversation", "POST", f"{CONV}/delete", "write", "directory:delete_conversation", status=204),
    _r(
        "replace_memory_context",
        "POST",
        f"{CONV}/memory_context",
        "write",
        "directory:replace_memory_context",
        request="ReplaceMemoryContext",
    ),
    _r("create_agent", "POST", f"{API}/agents", "write", "directory:create_agent", request="CreateAgent", status=201),
    _r(
        "rotate_agent_credentials",
        "POST",
        f"{API}/agents/{{agent_public_id}}/credentials/rotate",
        "write",
        "directory:rotate_agent_credentials",
    ),
    _r(
        "create_speaker",
        "POST",
        f"{API}/speakers",
        "write",
        "directory:create_speaker",
        request="CreateSpeaker",
        status=201,
    ),
    # ---- a conversation's store entries, and merging a fork back ----
    _r("conversation_store_entries_list", "GET", f"{CONV}/store_entries", "read", "entries:list_entries"),
    _r(
        "conversation_store_entry_write",
        "POST",
        f"{CONV}/store_entries",
        "write",
        "entries:write_entry",
        request="StoreEntryWrite",
        status=201,
    ),
    _r(
        "conversation_store_entry_show",
        "POST",
        f"{CONV}/store_entries/show",
        "read",
        "entries:show_entry",
        request="StoreEntryShow",
    ),
    _r(
        "conversation_store_entry_delete",
        "POST",
        f"{CONV}/store_entries/delete",
        "write",
        "entries:delete_entry",
        request="StoreEntryDelete",
        status=204,
    ),
    _r(
        "merge_conversation",
        "POST",
        f"{CONV}/merge",
        "write",
        "entries:merge_conversation",
        request="MergeConversation",
    ),
    # ---- the conversation door ----
    _r(
        "conversation_memory_list",
        "GET",
        CONV_MEMORY,
        "read",
        "memory:list_memory",
        door="conversation",
        query=("memory[speaker_public_id]",),
    ),
    _r(
        "conversation_memory_write",
        "POST",
        CONV_MEMORY,
        "write",
        "memory:write_memory",
        content="write",
        door="conversation",
        request="MemoryWrite",
        status=201,
    ),
    _r(
        "conversation_memory_show",
        "POST",
        f"{CONV_MEMORY}/show",
        "read",
        "memory:show_memory",
        content="read",
        door="conversation",
        request="MemoryShow",
    ),
    _r(
        "conversation_memory_grep",
        "POST",
        f"{CONV_MEMORY}/grep",
        "read",
        "memory:grep_memory",
        content="read",
        door="conversation",
        request="MemoryGrep",
    ),
    _r(
        "conversation_memory_edit",
        "POST",
        f"{CONV_MEMORY}/edit",
        "write",
        "memory:edit_memory",
        content="write",
        door="conversation",
        request="MemoryEdit",
    ),
    _r(
        "conversation_memory_delete",
        "POST",
        f"{CONV_MEMORY}/delete",
        "write",
        "memory:delete_memory",
        door="conversation",
        request="MemoryDelete",
        status=204,
    ),
    _r(
        "conversation_memory_versions",
        "POST",
        f"{CONV_MEMORY}/versions",
        "read",
        "memory:list_versions",
        door="conversation",
        request="MemoryVersions",
    ),
    _r(
        "conversation_memory_version_show",
        "POST",
        f"{CONV_MEMORY}/versions/show",
        "read",
        "memory:show_version",
        content="read",
        door="conversation",
        request="MemoryVersionShow",
    ),
    _r(
        "conversation_memory_rollback",
        "POST",
        f"{CONV_MEMORY}/rollback",
        "write",
        "memory:rollback_version",
        content="read",
        door="conversation",
        request="MemoryVersionChange",
        status=201,
    ),
    _r(
        "conversation_memory_version_redact",
        "POST",
        f"{CONV_MEMORY}/versions/redact",
        "write",
        "memory:redact_version",
        content="delete",
        door="conversation",
        request="MemoryVersionChange",
    ),
    _r(
        "conversation_memory_review",
        "POST",
        f"{CONV_MEMORY}/review",
        "write",
        "memory:review_version",
        content="read",
        door="conversation",
        request="MemoryReview",
        also=(204,),
    ),
    _r(
        "conversation_skills_list",
        "GET",
        f"{CONV}/skills",
        "read",
        "conversation:list_skills",
        query=("skill[speaker_public_id]",),
    ),
    _r(
        "conversation_skill_load",
        "POST",
        f"{CONV}/skills/load",
        "read",
        "conversation:load_skill",
        content="read",
        request="SkillLoad",
    ),
    _r(
        "conversation_memory_block",
        "POST",
        f"{CONV}/memory_block",
        "read",
        "conversation:memory_block",
        content="read",
        request="MemoryBlock",
    ),
    # ---- the workspace door ----
    _r(
        "workspace_memory_list",
        "GET",
        WS_MEMORY,
        "read",
        "memory:list_memory",
        door="workspace",
        query=("memory[speaker_public_id]",),
    ),
    _r(
        "workspace_memory_write",
        "POST",
        WS_MEMORY,
        "write",
        "memory:write_memory",
        content="write",
        door="workspace",
        request="MemoryWrite",
        status=201,
    ),
    _r(
        "workspace_memory_show",
        "POST",
        f"{WS_MEMORY}/show",
        "read",
        "memory:show_memory",
        content="read",
        door="workspace",
        request="MemoryShow",
    ),
    _r(
        "workspace_memory_grep",
        "POST",
        f"{WS_MEMORY}/grep",
        "read",
        "memory:grep_memory",
        content="read",
        door="workspace",
        request="MemoryGrep",
    ),
    _r(
        "workspace_memory_edit",
        "POST",
        f"{WS_MEMORY}/edit",
        "write",
        "memory:edit_memory",
        content="write",
        door="workspace",
        request="MemoryEdit",
    ),
    _r(
        "workspace_memory_delete",
        "POST",
        f"{WS_MEMORY}/delete",
        "write",
        "memory:delete_memory",
        door="workspace",
        request="MemoryDelete",
        status=204,
    ),
    _r(
        "workspace_memory_versions",
        "POST",
        f"{WS_MEMORY}/versions",
        "read",
        "memory:list_versions",
        door="workspace",
        request="MemoryVersions",
    ),
    _r(
        "workspace_memory_version_show",
        "POST",
        f"{WS_MEMORY}/versions/show",
        "read",
        "memory:show_version",
        content="read",
        door="workspace",
        request="MemoryVersionShow",
    ),
    _r(
        "workspace_memory_rollback",
        "POST",
        f"{WS_MEMORY}/rollback",
        "write",
        "memory:rollback_version",
        content="read",
        door="workspace",
        request="MemoryVersionChange",
        status=201,
    ),
    _r(
        "workspace_memory_version_redact",
        "POST",
        f"{WS_MEMORY}/versions/redact",
        "write",
        "memory:redact_version",
        content="delete",
        door="workspace",
        request="MemoryVersionChange",
    ),
    _r(
        "workspace_memory_review",
        "POST",
        f"{WS_MEMORY}/review",
        "write",
        "memory:review_version",
        content="read",
        door="workspace",
        request="MemoryReview",
        also=(204,),
    ),
    _r(
        "workspace_memory_export",
        "GET",
        f"{WS_MEMORY}/export",
        "read",
        "memory:export_memory",
        content="read",
        door="workspace",
        query=("cursor",),
        media="application/x-ndjson",
    ),
    # ---- the profile door (the caller's own user/ or agent/ rows) ----
    _r(
        "profile_memory_list",
        "GET",
        PROFILE_MEMORY,
        "read",
        "memory:list_memory",
        door="profile",
        query=("memory[speaker_public_id]",),
    ),
    _r(
        "profile_memory_write",
        "POST",
        PROFILE_MEMORY,
        "write",
        "memory:write_memory",
        content="write",
        door="profile",
        request="MemoryWrite",
        status=201,
    ),
    _r(
        "profile_memory_show",
        "POST",
        f"{PROFILE_MEMORY}/show",
        "read",
        "memory:show_memory",
        content="read",
        door="profile",
        request="MemoryShow",
    ),
    _r(
        "profile_memory_grep",
        "POST",
        f"{PROFILE_MEMORY}/grep",
        "read",
        "memory:grep_memory",
        content="read",
        door="profile",
        request="MemoryGrep",
    ),
    _r(
        "profile_memory_edit",
        "POST",
        f"{PROFILE_MEMORY}/edit",
        "write",
        "memory:edit_memory",
        content="write",
        door="profile",
        request="MemoryEdit",
    ),
    _r(
        "profile_memory_delete",
        "POST",
        f"{PROFILE_MEMORY}/delete",
        "write",
        "memory:delete_memory",
        door="profile",
        request="MemoryDelete",
        status=204,
    ),
    _r(
        "profile_memory_versions",
        "POST",
        f"{PROFILE_MEMORY}/versions",
        "read",
        "memory:list_versions",
        door="profile",
        request="MemoryVersions",
    ),
    _r(
        "profile_memory_version_show",
        "POST",
        f"{PROFILE_MEMORY}/versions/show",
        "read",
        "memory:show_version",
        content="read",
        door="profile",
        request="MemoryVersionShow",
    ),
    _r(
        "profile_memory_rollback",
        "POST",
        f"{PROFILE_MEMORY}/rollback",
        "write",
        "memory:rollback_version",
        content="read",
        door="profile",
        request="MemoryVersionChange",
        status=201,
    ),
    _r(
        "profile_memory_version_redact",
        "POST",
        f"{PROFILE_MEMORY}/versions/redact",
        "write",
        "memory:redact_version",
        content="delete",
        door="profile",
        request="MemoryVersionChange",
    ),
    _r(
        "profile_memory_review",
        "POST",
        f"{PROFILE_MEMORY}/review",
        "write",
        "memory:review_version",
        content="read",
        door="profile",
        request="MemoryReview",
        also=(204,),
    ),
    _r(
        "profile_memory_export",
        "GET",
        f"{PROFILE_MEMORY}/export",
        "read",
        "memory:export_memory",
        content="read",
        door="profile",
        query=("cursor",),
        media="application/x-ndjson",
    ),
    # ---- the definition door (a steward's named agent definition) ----
    _r(
        "definition_memory_list",
        "GET",
        DEFINITION_MEMORY,
        "read",
        "memory:list_memory",
        door="definition",
        query=("memory[speaker_public_id]",),
    ),
    _r(
        "definition_memory_write",
        "POST",
        DEFINITION_MEMORY,
        "write",
        "memory:write_memory",
        content="write",
        door="definition",
        request="MemoryWrite",
        status=201,
    ),
    _r(
        "definition_memory_show",
        "POST",
        f"{DEFINITION_MEMORY}/show",
        "read",
        "memory:show_memory",
        content="read",
        door="definition",
        request="MemoryShow",
    ),
    _r(
        "definition_memory_grep",
        "POST",
        f"{DEFINITION_MEMORY}/grep",
        "read",
        "memory:grep_memory",
        content="read",
        door="definition",
        request="MemoryGrep",
    ),
    _r(
        "definition_memory_edit",
        "POST",
        f"{DEFINITION_MEMORY}/edit",
        "write",
        "memory:edit_memory",
        content="write",
        door="definition",
        request="MemoryEdit",
    ),
    _r(
        "definition_memory_delete",
        "POST",
        f"{DEFINITION_MEMORY}/delete",
        "write",
        "memory:delete_memory",
        door="definition",
        request="MemoryDelete",
        status=204,
    ),
    _r(
        "definition_memory_versions",
        "POST",
        f"{DEFINITION_MEMORY}/versions",
        "read",
        "memory:list_versions",
        door="definition",
        request="MemoryVersions",
    ),
    _r(
        "definition_memory_version_show",
        "POST",
        f"{DEFINITION_MEMORY}/versions/show",
        "read",
        "memory:show_version",
        content="read",
        door="definition",
        request="MemoryVersionShow",
    ),
    _r(
        "definition_memory_rollback",
        "POST",
        f"{DEFINITION_MEMORY}/rollback",
        "write",
        "memory:rollback_version",
        content="read",
        door="definition",
        request="MemoryVersionChange",
        status=201,
    ),
    _r(
        "definition_memory_version_redact",
        "POST",
        f"{DEFINITION_MEMORY}/versions/redact",
        "write",
        "memory:redact_version",
        content="delete",
        door="definition",
        request="MemoryVersionChange",
    ),
    _r(
        "definition_memory_review",
        "POST",
        f"{DEFINITION_MEMORY}/review",
        "write",
        "memory:review_version",
        content="read",
        door="definition",
        request="MemoryReview",
        also=(204,),
    ),
    # ---- promote: a chosen version into the workspace's shared memory ----
    _r(
        "workspace_memory_promote",
        "POST",
        f"{WS_MEMORY}/promote",
        "write",
        "history:promote",
        content="write",
        request="Promote",
        status=201,
    ),
    # ---- executions and the model's tools ----
    _r(
        "create_execution",
        "POST",
        f"{CONV}/executions",
        "write",
        "executions:create_execution",
        request="CreateExecution",
        status=201,
    ),
    _r(
        "call_tool",
        "POST",
        f"{API}/executions/{{execution_public_id}}/tools/{{tool_name}}",
        "write",
        "executions:call_tool",
        content="write",
        request="CallTool",
    ),
    _r("stop_execution", "POST", f"{EXECUTION}/stop", "write", "executions:stop_execution"),
    _r("tool_schemas", "GET", f"{API}/tools/schemas", "public", "executions:tool_schemas", query=("format",)),
    _r(
        "execution_memory_block",
        "POST",
        f"{EXECUTION}/memory_block",
        "read",
        "executions:execution_memory_block",
        content="read",
        request="ExecutionMemoryBlock",
    ),
    _r("execution_mounts", "GET", f"{EXECUTION}/mounts", "read", "executions:execution_mounts"),
    _r(
        "execution_files_list",
        "POST",
        f"{EXECUTION}/files/list",
        "read",
        "executions:session_files_list",
        request="SessionFile",
    ),
    _r(
        "execution_file_show",
        "POST",
        f"{EXECUTION}/files/show",
        "read",
        "executions:session_file_show",
        content="read",
        request="SessionFile",
    ),
    _r(
        "execution_file_write",
        "POST",
        f"{EXECUTION}/files/write",
        "write",
        "executions:session_file_write",
        content="write",
        request="SessionFile",
        status=201,
    ),
    _r(
        "execution_file_edit",
        "POST",
        f"{EXECUTION}/files/edit",
        "write",
        "executions:session_file_edit",
        content="write",
        request="SessionFile",
    ),
    _r(
        "execution_file_delete",
        "POST",
        f"{EXECUTION}/files/delete",
        "write",
        "executions:session_file_delete",
        request="SessionFile",
        status=204,
    ),
    _r(
        "execution_file_rename",
        "POST",
        f"{EXECUTION}/files/rename",
        "write",
        "executions:session_file_rename",
        request="SessionFileRename",
        status=201,
    ),
    # ---- organization Memories ----
    _r(
        "create_memory",
        "POST",
        MEMORIES,
        "write",
        "memories:create_memory",
        content="write",
        request="CreateMemory",
        body_bytes=FILE_BODY_BYTES,
        status=201,
    ),
    _r("list_memories", "GET", MEMORIES, "read", "memories:list_memories", query=("limit", "cursor")),
    _r(
        "promote_memory",
        "POST",
        f"{MEMORIES}/promote",
        "write",
        "memories:promote_memory",
        request="PromoteToMemory",
        status=201,
    ),
    _r("show_memory", "GET", MEMORY, "read", "memories:show_memory"),
    _r("update_memory", "PATCH", MEMORY, "write", "memories:update_memory", request="PatchMemory"),
    _r("archive_memory", "POST", f"{MEMORY}/archive", "write", "memories:archive_memory"),
    _r("delete_memory", "POST", f"{MEMORY}/delete", "write", "memories:delete_memory", status=204),
    _r("sync_memory", "POST", f"{MEMORY}/sync", "write", "memories:sync_memory", content="write"),
    _r(
        "memory_files_list",
        "GET",
        MEMORY_FILES,
        "read",
        "memories:list_files",
        query=("prefix", "limit", "cursor"),
    ),
    _r(
        "memory_file_write",
        "POST",
        MEMORY_FILES,
        "write",
        "memories:write_file",
        content="write",
        request="FileWrite",
        body_bytes=FILE_BODY_BYTES,
        status=201,
    ),
    _r(
        "memory_file_show",
        "POST",
        f"{MEMORY_FILES}/show",
        "read",
        "memories:show_file",
        content="read",
        request="FileShow",
    ),
    _r(
        "memory_file_edit",
        "POST",
        f"{MEMORY_FILES}/edit",
        "write",
        "memories:edit_file",
        content="write",
        request="FileEdit",
        body_bytes=FILE_BODY_BYTES,
    ),
    _r(
        "memory_file_delete",
        "POST",
        f"{MEMORY_FILES}/delete",
        "write",
        "memories:delete_file",
        request="FileDelete",
        status=204,
    ),
    _r(
        "memory_file_grep",
        "POST",
        f"{MEMORY_FILES}/grep",
        "read",
        "memories:grep_files",
        content="read",
        request="FileGrep",
    ),
    _r(
        "memory_file_versions",
        "POST",
        f"{MEMORY_FILES}/versions",
        "read",
        "memories:file_versions",
        request="FileVersions",
    ),
    _r(
        "memory_file_version_show",
        "POST",
        f"{MEMORY_FILES}/versions/show",
        "read",
        "memories:show_file_version",
        content="read",
        request="FileVersionShow",
    ),
    _r(
        "memory_file_rollback",
        "POST",
        f"{MEMORY_FILES}/rollback",
        "write",
        "memories:rollback_file",
        content="read",
        request="FileRollback",
        status=201,
    ),
    _r(
        "memory_file_lease",
        "POST",
        f"{MEMORY_FILES}/lease",
        "write",
        "memories:lease_file",
        request="FileLease",
    ),
    _r("show_agent", "GET", AGENT, "read", "memories:show_agent"),
    _r("update_agent", "PATCH", AGENT, "write", "memories:update_agent", request="PatchAgent"),
    _r("agent_memories", "GET", f"{AGENT}/memories", "read", "memories:agent_memories"),
    _r("memory_map", "GET", f"{API}/memory_map", "read", "memories:memory_map"),
    _r("memory_map_page", "GET", f"{API}/memory_map.html", "read", "memories:memory_map_page", media="text/html"),
    # ---- typed records ----
    _r(
        "records_append",
        "POST",
        RECORDS,
        "write",
        "records:append_record",
        request="AppendRecord",
        status=201,
        also=(200,),
    ),
    _r("records_search", "POST", f"{RECORDS}/search", "read", "records:search_records", request="SearchRecords"),
    _r(
        "records_consolidate",
        "POST",
        f"{RECORDS}/consolidate",
        "write",
        "records:consolidate_records",
        request="ConsolidateRecords",
    ),
    _r(
        "records_export",
        "GET",
        f"{RECORDS}/export",
        "read",
        "records:export_records",
        query=("cursor",),
        media="application/x-ndjson",
    ),
    _r("record_show", "GET", RECORD, "read", "records:show_record"),
    _r("record_update", "POST", RECORD, "write", "records:update_record", request="UpdateRecord"),
    _r(
        "record_delete",
        "POST",
        f"{RECORD}/delete",
        "write",
        "records:delete_record",
        request="DeleteRecord",
        status=204,
    ),
    _r(
        "record_review",
        "POST",
        f"{RECORD}/review",
        "write",
        "records:review_record",
        request="ReviewRecord",
        also=(204,),
    ),
    # ---- the API's own description ----
    _r("openapi_document", "GET", f"{API}/openapi.json", "public", "openapi:openapi_document"),
)


BY_NAME: Final[dict[str, RouteSpec]] = {r.name: r for r in ROUTES}
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
