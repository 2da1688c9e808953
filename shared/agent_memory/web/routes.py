"""Every route: method, path, the function that serves it and what it may touch in AWS.

Route functions are thin: parse with the glue helpers, call one domain operation, wrap the result.
template.yaml is generated from `ROUTES` (see .ci/templategen.py), and the local gateway reads
template.yaml, so this table is the single source of truth for what the API serves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from ..block import DEFAULT_BUDGET_BYTES, MAX_BUDGET_BYTES, BlockService
from ..directory import Directory
from ..errors import ApiError
from ..executions import ExecutionService, check_tools
from ..memory import MemoryService
from ..paths import MemoryPath, parse_document_path, parse_prefix
from ..resolver import Context, Resolver
from ..settings import settings
from ..skills import SkillService
from ..store import get_store
from ..tools import ToolRunner, tool_schemas
from .glue import (
    Handler,
    Reply,
    Request,
    boolean,
    condition,
    integer,
    required,
    section,
    string,
    uuid_field,
)

API = "/agent_api/v1"
# "public" routes serve static data: no token, and no AWS access in their IAM policy.
Access = Literal["read", "write", "operator", "public"]


@dataclass(frozen=True, slots=True)
class Route:
    name: str
    method: str
    path: str
    fn: Handler
    access: Access


@dataclass(frozen=True, slots=True)
class Services:
    resolver: Resolver
    directory: Directory
    memory: MemoryService
    skills: SkillService
    block: BlockService
    executions: ExecutionService
    tools: ToolRunner


@lru_cache(maxsize=1)
def services() -> Services:
    """The domain services of this container, built once around one store and the one resolver."""
    store = get_store()
    resolver = Resolver(store)
    memory = MemoryService(settings().writes_per_minute)
    skills = SkillService()
    return Services(
        resolver,
        Directory(store, resolver),
        memory,
        skills,
        BlockService(),
        ExecutionService(store, resolver),
        ToolRunner(resolver, memory, skills),
    )


def reset_services() -> None:
    services.cache_clear()
    _operator_key.cache_clear()


@lru_cache(maxsize=1)
def _operator_key() -> str | None:
    s = settings()
    if s.operator_key:
        return s.operator_key
    if s.operator_key_parameter:
        import boto3

        ssm = boto3.client("ssm", region_name=s.region)
        value: str = ssm.get_parameter(Name=s.operator_key_parameter, WithDecryption=True)["Parameter"]["Value"]
        return value
    return None


# ---- directory routes -----------------------------------------------------------------------------


def create_account(req: Request) -> Reply:
    presented = req.headers.get("x-operator-key")
    key = _operator_key() if presented else None
    services().directory.require_operator(key, presented)
    account, human = section(req.body, "account"), section(req.body, "human")
    name = string(account, "name", "account")
    human_name = string(human, "name", "human")
    assert name is not None and human_name is not None
    return Reply(201, services().directory.create_account(key, presented, name, human_name))


def create_human(req: Request) -> Reply:
    name = string(section(req.body, "human"), "name", "human")
    assert name is not None
    return Reply(201, services().directory.create_human(req.token, name))


def create_workspace(req: Request) -> Reply:
    name = string(section(req.body, "workspace"), "name", "workspace")
    assert name is not None
    return Reply(201, services().directory.create_workspace(req.token, name))


def update_workspace(req: Request) -> Reply:
    ws = section(req.body, "workspace")
    overrides = required(ws, "tool_provider_overrides", "workspace")
    if not isinstance(overrides, dict):
        raise ApiError("parameter_invalid", "workspace.tool_provider_overrides must be an object.")
    return Reply(200, services().directory.set_overrides(req.token, req.params["workspace_public_id"], overrides))


def add_member(req: Request) -> Reply:
    m = section(req.body, "member")
    human = uuid_field(m, "human_public_id", "member", optional=True)
    agent = uuid_field(m, "agent_public_id", "member", optional=True)
    role = string(m, "role", "member", optional=True) or "member"
    return Reply(201, services().directory.add_member(req.token, req.params["workspace_public_id"], human, agent, role))


def create_conversation(req: Request) -> Reply:
    c = section(req.body, "conversation") if "conversation" in req.body else {}
    agent = uuid_field(c, "answering_agent_public_id", "conversation", optional=True)
    out = services().directory.create_conversation(
        req.token, req.params["workspace_public_id"], agent, c.get("memory_context"), "memory_context" in c
    )
    return Reply(201, out)


def show_conversation(req: Request) -> Reply:
    p = req.params
    return Reply(
        200, services().directory.show_conversation(req.token, p["workspace_public_id"], p["conversation_public_id"])
    )


def archive_conversation(req: Request) -> Reply:
    p = req.params
    return Reply(200, services().directory.archive(req.token, p["workspace_public_id"], p["conversation_public_id"]))


def fork_conversation(req: Request) -> Reply:
    p = req.params
    return Reply(201, services().directory.fork(req.token, p["workspace_public_id"], p["conversation_public_id"]))


def replace_memory_context(req: Request) -> Reply:
    if "memory_context" not in req.body:
        raise ApiError(
            "parameter_missing",
            "memory_context is required: the whole new configuration, or null for the default roots.",
        )
    p = req.params
    return Reply(
        200,
        services().directory.replace_memory_context(
            req.token, p["workspace_public_id"], p["conversation_public_id"], req.body["memory_context"]
        ),
    )


def create_agent(req: Request) -> Reply:
    a = section(req.body, "agent")
    name = string(a, "name", "agent")
    kind = string(a, "kind", "agent", optional=True) or "program"
    assert name is not None
    return Reply(201, services().directory.create_agent(req.token, name, kind, a.get("memory_context_limit")))


def rotate_agent_credentials(req: Request) -> Reply:
    return Reply(200, services().directory.rotate(req.token, req.params["agent_public_id"]))


def create_speaker(req: Request) -> Reply:
    s = section(req.body, "speaker")
    name = string(s, "name", "speaker")
    agent = uuid_field(s, "agent_public_id", "speaker")
    assert name is not None and agent is not None
    return Reply(201, services().directory.create_speaker(req.token, name, agent))


# ---- memory routes, one set per door ------------------------------------------------------------

Opener = Callable[[Request, tuple[MemoryPath, ...], str | None, bool], Context]


def _open_conversation(req: Request, paths: tuple[MemoryPath, ...], speaker: str | None, write: bool) -> Context:
    p = req.params
    return services().resolver.conversation(
        req.token,
        p["workspace_public_id"],
        p["conversation_public_id"],
        paths=paths,
        speaker_selector=speaker,
        write=write,
    )


def _open_workspace(req: Request, paths: tuple[MemoryPath, ...], speaker: str | None, write: bool) -> Context:
    return services().resolver.workspace(
        req.token, req.params["workspace_public_id"], paths=paths, speaker_selector=speaker, write=write
    )


def _open_profile(req: Request, paths: tuple[MemoryPath, ...], speaker: str | None, write: bool) -> Context:
    return services().resolver.profile(req.token, paths=paths, speaker_selector=speaker)


def _open_definition(req: Request, paths: tuple[MemoryPath, ...], speaker: str | None, write: bool) -> Context:
    return services().directory.definition_context(req.token, req.params["agent_name"], speaker)


def _memory(req: Request) -> dict[str, Any]:
    return section(req.body, "memory")


def _speaker(obj: dict[str, Any]) -> str | None:
    return uuid_field(obj, "speaker_public_id", "memory", optional=True)


def _expected_revision(obj: dict[str, Any]) -> int | None:
    return integer(obj, "expected_context_revision", "memory")


def memory_routes(door: str, base: str, opener: Opener) -> list[Route]:
    """The six verbs of one door. Paths are parsed before any I/O so a bad one costs no round trip."""

    def list_(req: Request) -> Reply:
        speaker = _speaker({"speaker_public_id": req.query.get("memory[speaker_public_id]")})
        ctx = opener(req, (), speaker, False)
        return Reply(200, {"memory": services().memory.listing(ctx)})

    def show(req: Request) -> Reply:
        m = _memory(req)
        mp = parse_document_path(required(m, "path", "memory"))
        ctx = opener(req, (mp,), _speaker(m), False)
        return Reply(200, {"memory": services().memory.show(ctx, mp)})

    def write(req: Request) -> Reply:
        m = _memory(req)
        mp = parse_document_path(required(m, "path", "memory"))
        cond = condition(m)
        content = required(m, "content", "memory")
        ctx = opener(req, (), _speaker(m), True)
        doc = services().memory.write(
            ctx,
            mp,
            content,
            cond,
            description=m.get("description"),
            description_given="description" in m,
            expected_context_revision=_expected_revision(m),
        )
        return Reply(201, {"memory": doc})

    def edit(req: Request) -> Reply:
        m = _memory(req)
        mp = parse_document_path(required(m, "path", "memory"))
        cond = condition(m)
        old, new = required(m, "old_text", "memory"), required(m, "new_text", "memory")
        ctx = opener(req, (mp,), _speaker(m), True)
        doc = services().memory.edit(ctx, mp, old, new, cond, expected_context_revision=_expected_revision(m))
        return Reply(200, {"memory": doc})

    def grep(req: Request) -> Reply:
        m = _memory(req)
        pattern = required(m, "pattern", "memory")
        if not isinstance(pattern, str) or pattern == "":
            raise ApiError("parameter_invalid", "memory.pattern must be a nonempty string.")
        prefix = parse_prefix(m["path"]) if m.get("path") is not None else None
        ignore_case = boolean(m, "ignore_case", "memory")
        limit = integer(m, "limit", "memory", default=100, low=1, high=500)
        assert limit is not None
        ctx = opener(req, (), _speaker(m), False)
        return Reply(200, services().memory.grep(ctx, pattern, prefix, ignore_case, limit))

    def delete(req: Request) -> Reply:
        m = _memory(req)
        mp = parse_document_path(required(m, "path", "memory"))
        cond = condition(m)
        ctx = opener(req, (), _speaker(m), True)
        services().memory.delete(ctx, mp, cond, expected_context_revision=_expected_revision(m))
        return Reply(204)

    return [
        Route(f"{door}_memory_list", "GET", base, list_, "read"),
        Route(f"{door}_memory_write", "POST", base, write, "write"),
        Route(f"{door}_memory_show", "POST", f"{base}/show", show, "read"),
        Route(f"{door}_memory_grep", "POST", f"{base}/grep", grep, "read"),
        Route(f"{door}_memory_edit", "POST", f"{base}/edit", edit, "write"),
        Route(f"{door}_memory_delete", "POST", f"{base}/delete", delete, "write"),
    ]


# ---- skills and the memory block (conversation door, reads: a viewer may call them) ----------------


def list_skills(req: Request) -> Reply:
    speaker = uuid_field(
        {"speaker_public_id": req.query.get("skill[speaker_public_id]")}, "speaker_public_id", "skill", optional=True
    )
    ctx = _open_conversation(req, (), speaker, False)
    return Reply(200, {"skills": services().skills.catalog(ctx)})


def load_skill(req: Request) -> Reply:
    s = section(req.body, "skill")
    name = required(s, "name", "skill")
    ctx = _open_conversation(req, (), uuid_field(s, "speaker_public_id", "skill", optional=True), False)
    return Reply(200, {"skill": services().skills.load(ctx, name)})


def memory_block(req: Request) -> Reply:
    # Every field has a default, so an empty body asks for the default block.
    b = section(req.body, "memory_block") if req.body else {}
    budget = integer(b, "budget_bytes", "memory_block", default=DEFAULT_BUDGET_BYTES, low=1, high=MAX_BUDGET_BYTES)
    expected = integer(b, "expected_context_revision", "memory_block")
    assert budget is not None
    ctx = _open_conversation(req, (), uuid_field(b, "speaker_public_id", "memory_block", optional=True), False)
    return Reply(200, {"memory_block": services().block.assemble(ctx, budget, expected)})


# ---- executions and the model's tools -------------------------------------------------------------


def create_execution(req: Request) -> Reply:
    e = section(req.body, "execution") if "execution" in req.body else {}
    p = req.params
    out = services().executions.create(
        req.token,
        p["workspace_public_id"],
        p["conversation_public_id"],
        speaker_id=uuid_field(e, "speaker_public_id", "execution", optional=True),
        parent_id=uuid_field(e, "parent_execution_public_id", "execution", optional=True),
        delegate_id=uuid_field(e, "delegate_to_agent_public_id", "execution", optional=True),
        tools=check_tools(e.get("tools")),
    )
    return Reply(201, out)


def call_tool(req: Request) -> Reply:
    raw = section(req.body, "input")
    p = req.params
    return Reply(200, services().tools.call(p["execution_public_id"], p["tool_name"], raw, req.token))


def show_tool_schemas(req: Request) -> Reply:
    return Reply(200, {"tools": tool_schemas(req.query.get("format") or "anthropic")})


WS = f"{API}/workspaces/{{workspace_public_id}}"
CONV = f"{WS}/conversations/{{conversation_public_id}}"

ROUTES: list[Route] = [
    Route("create_account", "POST", f"{API}/accounts", create_account, "operator"),
    Route("create_human", "POST", f"{API}/humans", create_human, "write"),
    Route("create_workspace", "POST", f"{API}/workspaces", create_workspace, "write"),
    Route("update_workspace", "PATCH", WS, update_workspace, "write"),
    Route("add_member", "POST", f"{WS}/members", add_member, "write"),
    Route("create_conversation", "POST", f"{WS}/conversations", create_conversation, "write"),
    Route("show_conversation", "GET", CONV, show_conversation, "read"),
    Route("archive_conversation", "POST", f"{CONV}/archive", archive_conversation, "write"),
    Route("fork_conversation", "POST", f"{CONV}/fork", fork_conversation, "write"),
    Route("replace_memory_context", "POST", f"{CONV}/memory_context", replace_memory_context, "write"),
    Route("create_agent", "POST", f"{API}/agents", create_agent, "write"),
    Route(
        "rotate_agent_credentials",
        "POST",
        f"{API}/agents/{{agent_public_id}}/credentials/rotate",
        rotate_agent_credentials,
        "write",
    ),
    Route("create_speaker", "POST", f"{API}/speakers", create_speaker, "write"),
    *memory_routes("conversation", f"{CONV}/memory", _open_conversation),
    Route("conversation_skills_list", "GET", f"{CONV}/skills", list_skills, "read"),
    Route("conversation_skill_load", "POST", f"{CONV}/skills/load", load_skill, "read"),
    Route("conversation_memory_block", "POST", f"{CONV}/memory_block", memory_block, "read"),
    *memory_routes("workspace", f"{WS}/memory", _open_workspace),
    *memory_routes("profile", f"{API}/profile/memory", _open_profile),
    *memory_routes("definition", f"{API}/profile/agents/{{agent_name}}/memory", _open_definition),
    Route("create_execution", "POST", f"{CONV}/executions", create_execution, "write"),
    Route("call_tool", "POST", f"{API}/executions/{{execution_public_id}}/tools/{{tool_name}}", call_tool, "write"),
    Route("tool_schemas", "GET", f"{API}/tools/schemas", show_tool_schemas, "public"),
]

BY_NAME: dict[str, Route] = {r.name: r for r in ROUTES}
