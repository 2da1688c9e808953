"""The access policy: may principal P do verb V on source S through door D.

Every door, tool, the memory block, the directory and executions ask here; nothing else decides who
reaches what. The resolver loads rows and hands them in; these functions read rows and raise the
catalogue's refusals, and never do I/O.

Adding a door: an entry in `DOORS` (and the route contract). A verb that changes rows asks `may_change`
before it stores anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from agent_memory.api.errors import ApiError
from agent_memory.core.bindings import Binding
from agent_memory.core.context import Context, ContextDoor, Source
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import (
    Account,
    Agent,
    Anchor,
    Author,
    Conversation,
    Execution,
    Human,
    Member,
    OrgMemory,
    Principal,
    Speaker,
    TypedRecord,
    Workspace,
)
from agent_memory.core.paths import FILES_ROOT, MemoryPath, check_skill_path
from agent_memory.core.ports import Ref

Standing = Literal["write", "read"]


@dataclass(frozen=True, slots=True)
class DoorRules:
    """What a door's writes carry with them."""

    # A change moves the conversation's context_revision in the same commit (its next reply changes).
    bumps_revision: bool
    # Changes are refused once the conversation (or an aliased one) is archived. An execution accepted
    # before the archive may still finish its writes; the doors may not.
    refuses_archived: bool
    # The writer may send expected_context_revision, checked before anything is stored.
    checks_context_revision: bool


DOORS: Mapping[ContextDoor, DoorRules] = {
    "conversation": DoorRules(bumps_revision=True, refuses_archived=True, checks_context_revision=True),
    "workspace": DoorRules(bumps_revision=False, refuses_archived=False, checks_context_revision=False),
    "profile": DoorRules(bumps_revision=False, refuses_archived=False, checks_context_revision=False),
    "definition": DoorRules(bumps_revision=False, refuses_archived=False, checks_context_revision=False),
    "execution": DoorRules(bumps_revision=True, refuses_archived=False, checks_context_revision=False),
    # An organization Memory's files: no conversation moves with them.
    "memory": DoorRules(bumps_revision=False, refuses_archived=False, checks_context_revision=False),
}

_READ_ONLY_STANDING = "You have read-only standing in this workspace: you cannot write here."


def not_found(what: str) -> ApiError:
    return ApiError("not_found", f"No {what} with that id is visible to you.")


# ---- standing -------------------------------------------------------------------------------------


# A curator is a member who may also review quarantined versions.
WRITING_ROLES = frozenset({"member", "curator"})


def is_curator(role: str | None) -> bool:
    """A curator reviews what is quarantined in its workspace, and so is the one who may see it waiting."""
    return role == "curator"


def workspace_role(principal: Principal, ws: Workspace | None, member: Member | None) -> str | None:
    """The caller's role in a workspace: 'curator' or 'member' (write), 'viewer' (read) or None."""
    if ws is None or ws.account_id != principal.account_id or member is None:
        return None
    return member.role


def _answers(principal: Principal, conv: Conversation | None) -> bool:
    return conv is not None and principal.kind == "agent" and conv.answering_agent_id == principal.public_id


def role_standing(role: str | None) -> Standing | None:
    """The standing a workspace role gives on the workspace's own rows: members write, viewers read."""
    if role in WRITING_ROLES:
        return "write"
    return "read" if role == "viewer" else None


def require_workspace_write(role: str | None) -> None:
    """A change through a workspace (its memory door, its records) needs a writing role there."""
    require_write_standing(role_standing(role) or "read")


def conversation_standing(
    principal: Principal, ws: Workspace | None, member: Member | None, conv: Conversation | None
) -> Standing | None:
    """'write', 'read' or None for a conversation; the answering agent always writes its own."""
    if conv is None or ws is None or conv.workspace_id != ws.public_id or ws.account_id != principal.account_id:
        return None
    if _answers(principal, conv):
        return "write"
    return role_standing(workspace_role(principal, ws, member))


def host_standing(
    principal: Principal, ws: Workspace | None, member: Member | None, conv: Conversation | None
) -> Standing:
    """The caller's standing on a conversation named in a URL, or not_found when it cannot see it."""
    answers_here = (
        _answers(principal, conv) and ws is not None and conv is not None and conv.workspace_id == ws.public_id
    )
    if workspace_role(principal, ws, member) is None and not answers_here:
        raise not_found("workspace")
    standing = conversation_standing(principal, ws, member, conv)
    if standing is None:
        raise not_found("conversation")
    return standing


def writes_through(b: Binding, standing: Standing | None) -> bool:
    """A root is writable when it is bound read_write and the caller has write standing on the
    conversation (or workspace) behind it: the binding never grants more than the standing."""
    return b.access == "read_write" and standing == "write"


def require_write_standing(standing: Standing, message: str = _READ_ONLY_STANDING) -> None:
    if standing != "write":
        raise ApiError("not_authorized", message)


def workspace_write_role(principal: Principal, ws: Workspace | None, member: Member | None) -> Workspace:
    """A workspace the caller may change (members add members, conversations, settings)."""
    role = workspace_role(principal, ws, member)
    if role is None or ws is None:
        raise not_found("workspace")
    if role not in WRITING_ROLES:
        raise ApiError("not_authorized", "You have read-only standing in this workspace.")
    return ws


# ---- the directory --------------------------------------------------------------------------------


def require_human(principal: Principal) -> None:
    if principal.kind != "human":
        raise ApiError("not_authorized", "Only a Human can do this; an agent's token cannot.")


def in_account(principal: Principal, row: Any, what: str) -> Any:
    """A row of the caller's account, or not_found: another account's rows do not exist for it."""
    if row is None or row.account_id != principal.account_id:
        raise not_found(what)
    return row


def require_steward(principal: Principal, agent: Agent) -> None:
    if agent.steward_id != principal.public_id:
        raise ApiError("not_authorized", "Only the agent's steward can do this.")


def may_manage_credentials(principal: Principal, human: Human, account: Account | None) -> None:
    """A Human's credentials are its own, and its account's first Human's to rotate or revoke."""
    first = account.first_human_id if account is not None else None
    if principal.kind != "human" or principal.public_id not in (human.public_id, first):
        raise ApiError(
            "not_authorized", "Only the Human itself, or the account's first Human, can change a Human's credentials."
        )


def may_add_speaker(principal: Principal, agent: Agent) -> None:
    if principal.public_id not in (agent.steward_id, agent.public_id):
        raise ApiError("not_authorized", "Only the agent itself or its steward can add its speakers.")


def owns_agent(principal: Principal, agent: Agent | None) -> bool:
    """agent/ and speaker/ rows are the agent's own: only it, or the Human who stewards it, reaches them."""
    return agent is not None and (
        (principal.kind == "agent" and principal.public_id == agent.public_id)
        or (principal.kind == "human" and principal.public_id == agent.steward_id)
    )


def definition_door(principal: Principal, agent: Agent | None) -> Agent:
    """A named definition its steward may open (the definition door)."""
    if agent is None or agent.kind != "definition" or agent.steward_id != principal.public_id:
        raise not_found("agent definition")
    return agent


def selected_speaker(principal: Principal, speaker: Speaker | None, selector: str | None) -> Speaker | None:
    """The request's speaker selector: a Speaker the calling agent controls in its account."""
    if selector is None:
        return None
    if (
        speaker is None
        or principal.kind != "agent"
        or speaker.agent_id != principal.public_id
        or speaker.account_id != principal.account_id
    ):
        raise ApiError(
            "not_authorized",
            "speaker_public_id must name an existing Speaker that the calling agent controls in its account.",
        )
    return speaker


# ---- configuring bindings -------------------------------------------------------------------------


def check_configured(
    principal: Principal,
    ws: Workspace,
    member: Member | None,
    conv: Conversation,
    bindings: tuple[Binding, ...],
    rows: Mapping[Ref, Any],
) -> None:
    """Every source a new memory_context names must exist and be within the configuring caller's reach."""
    for b in bindings:
        if b.scope == "agent" and conv.answering_agent_id is None:
            raise ApiError(
                "memory_scope_unavailable", f"Binding {b.name!r}: a Human-answered conversation has no agent/ scope."
            )
        if b.conversation_public_id:
            alias = rows[Ref.conversation(b.conversation_public_id)]
            standing = conversation_standing(principal, ws, member, alias)
            if alias is None or standing is None:
                # A deleted conversation reads as absent (its tombstone), so binding one is refused here too.
                raise ApiError(
                    "memory_scope_unavailable",
                    f"Binding {b.name!r}: no conversation with that id is visible in this workspace "
                    "(missing, deleted or not yours to see).",
                )
            if b.access == "read_write" and not writes_through(b, standing):
                raise ApiError(
                    "not_authorized", f"Binding {b.name!r}: read_write needs write standing on that conversation."
                )
        if b.speaker_public_id:
            speaker = rows[Ref.speaker(b.speaker_public_id)]
            if speaker is None or speaker.account_id != principal.account_id:
                raise ApiError(
                    "memory_scope_unavailable", f"Binding {b.name!r}: no speaker with that id exists in this account."
                )
            # The root reaches the (answering agent, speaker) pair's notes: binding it is reading them, so
            # only those who may read that pair's rows may bind it.
            answerer = rows.get(Ref.agent(conv.answering_agent_id)) if conv.answering_agent_id else None
            if not owns_agent(principal, answerer):
                raise ApiError(
                    "not_authorized",
                    f"Binding {b.name!r}: only the answering agent or its steward may bind a speaker's notes.",
                )


# ---- resolving sources ----------------------------------------------------------------------------


def alias_source(
    principal: Principal, ws: Workspace, member: Member | None, b: Binding, rows: Mapping[Ref, Any]
) -> Source:
    """A root aliasing another conversation: writable only where the caller may write that conversation too."""
    alias: Conversation | None = rows.get(Ref.conversation(b.conversation_public_id or ""))
    alias_standing = conversation_standing(principal, ws, member, alias)
    if alias is None or alias_standing is None:
        return Source(b, None, False, "its conversation is missing, deleted or not visible to you")
    return Source(
        b,
        Anchor("conversation", alias.public_id),
        writes_through(b, alias_standing),
        archived=alias.archived,
    )


def conversation_sources(
    principal: Principal,
    ws: Workspace,
    member: Member | None,
    conv: Conversation,
    agent: Agent | None,
    speaker: Speaker | None,
    bindings: tuple[Binding, ...],
    rows: Mapping[Ref, Any],
    standing: Standing,
) -> dict[str, Source]:
    """Bindings resolved against a host conversation and its answerer: the door's and a new execution's."""
    owned = owns_agent(principal, agent)
    out: dict[str, Source] = {}
    for b in bindings:
        rw = writes_through(b, standing)
        if b.scope == "conversation":
            if b.conversation_public_id is None:
                out[b.name] = Source(b, Anchor("conversation", conv.public_id), rw)
            else:
                out[b.name] = alias_source(principal, ws, member, b, rows)
        elif b.scope == "workspace":
            out[b.name] = Source(b, Anchor("workspace", ws.public_id), rw)
        elif b.scope == "user":
            if principal.kind != "human":
                out[b.name] = Source(b, None, False, "user/ belongs to a Human caller; an agent has none")
            else:
                out[b.name] = Source(b, Anchor("user", principal.public_id), rw)
        elif b.scope == "agent":
            if agent is None:
                out[b.name] = Source(b, None, False, "this conversation is answered by a Human, not an agent")
            elif not owned:
                out[b.name] = Source(b, None, False, "agent/ belongs to the answering agent and its steward")
            else:
                out[b.name] = Source(b, Anchor("agent", agent.public_id), rw, agent_public_id=agent.public_id)
        else:  # speaker
            out[b.name] = _speaker_source(b, agent, speaker, rows, owned, rw)
    return out


def _speaker_source(
    b: Binding, agent: Agent | None, speaker: Speaker | None, rows: Mapping[Ref, Any], owned: bool, rw: bool
) -> Source:
    subject_id = b.speaker_public_id or (speaker.public_id if speaker else None)
    subject: Speaker | None = rows.get(Ref.speaker(subject_id)) if subject_id else None
    if agent is None:
        return Source(b, None, False, "this conversation is answered by a Human, not an agent")
    if subject is None or subject.account_id != agent.account_id:
        return Source(
            b,
            None,
            False,
            "no speaker is selected (bind speaker_public_id or send one with the request)",
            agent_public_id=agent.public_id,
        )
    if not owned:
        return Source(b, None, False, "speaker/ belongs to the answering agent and its steward")
    return Source(
        b,
        Anchor("speaker", agent.public_id, subject.public_id),
        rw,
        agent_public_id=agent.public_id,
        speaker_public_id=subject.public_id,
    )


def own_root_source(principal: Principal) -> Source:
    """The profile door: a Human's own user/ rows, an agent's own agent/ rows."""
    if principal.kind == "human":
        return Source(Binding("user", "user", "read_write"), Anchor("user", principal.public_id), True)
    return Source(
        Binding("agent", "agent", "read_write"),
        Anchor("agent", principal.public_id),
        True,
        agent_public_id=principal.public_id,
    )


def workspace_source(workspace_id: str, role: str) -> Source:
    """The workspace door: its rows, writable by members."""
    binding = Binding("workspace", "workspace", "read_write")
    return Source(binding, Anchor("workspace", workspace_id), role_standing(role) == "write")


def definition_source(agent: Agent) -> Source:
    """The definition door: a steward's named definition's agent/ rows."""
    binding = Binding("agent", "agent", "read_write")
    return Source(binding, Anchor("agent", agent.public_id), True, agent_public_id=agent.public_id)


# ---- executions -----------------------------------------------------------------------------------


def may_start_execution(standing: Standing, conv: Conversation) -> None:
    require_write_standing(standing, "Starting an execution needs write standing on the conversation.")
    if conv.archived:
        raise ApiError("conversation_archived", "The conversation is archived: it accepts no new executions.")


def execution_subject(principal: Principal, conv: Conversation, subject: Speaker | None) -> Speaker:
    """An execution's explicit subject: a Speaker of the conversation's answering agent."""
    if subject is None or subject.account_id != principal.account_id or subject.agent_id != conv.answering_agent_id:
        raise ApiError(
            "not_authorized",
            "speaker_public_id must name an existing Speaker controlled by the conversation's answering agent.",
        )
    return subject


def may_run_for(principal: Principal, agent: Agent | None, subject: Speaker | None) -> None:
    """A run about a person reads and writes the (agent, person) pair's notes: as binding them does, it
    needs the answering agent itself or its steward."""
    if subject is not None and not owns_agent(principal, agent):
        raise ApiError(
            "not_authorized",
            "Only the answering agent or its steward may start an execution about a speaker: it reaches "
            "that pair's notes.",
        )


def unexpired(ex: Execution, now: float) -> None:
    """An execution's tools answer for its lifetime only; a child cannot outlive a finished parent."""
    if ex.expires_at <= now:
        raise ApiError(
            "execution_expired",
            "This execution has expired: its tools no longer answer. Start a new execution for this conversation.",
        )


def not_stopped(ex: Execution, rows: Mapping[Ref, Any]) -> None:
    """An execution answers while neither it nor any execution it was spawned from has been stopped, and
    none of their conversations deleted (a deleted conversation reads as absent). Every row named here
    rides in the call's own batch read (resolver.py), a bounded number of them (MAX_SPAWN_DEPTH)."""
    for a in ex.lineage:
        if rows.get(Ref.execution_stop(a.execution_id)) is not None:
            whom = "This execution" if a.execution_id == ex.public_id else "An execution this one was spawned from"
            raise ApiError(
                "execution_stopped",
                f"{whom} was stopped: its tools and its block no longer answer. A stop is final; start a new "
                "execution to go on.",
            )
    for a in ex.lineage:
        if a.conversation_id and rows.get(Ref.conversation(a.conversation_id)) is None:
            raise ApiError(
                "execution_stopped",
                "The conversation of this execution (or of one it was spawned from) was deleted: its tools "
                "and its block no longer answer.",
            )


def may_stop_execution(principal: Principal, ex: Execution, standing: Standing | None) -> None:
    """The execution's own principal stops it, and so does anyone with write standing on its conversation
    (`standing` is only read for someone else; None: that conversation is not visible to the caller)."""
    if (principal.kind, principal.public_id) == (ex.principal_kind, ex.principal_id):
        return
    if standing is None:
        raise not_found("execution")
    require_write_standing(standing, "Stopping an execution needs its principal or write standing on its conversation.")


def may_delete_conversation(principal: Principal, ws: Workspace, conv: Conversation, standing: Standing) -> None:
    """Deleting a conversation is for its creator or the workspace's creator, and needs write standing there."""
    require_write_standing(standing, "Deleting a conversation needs write standing on it.")
    if principal.public_id not in (conv.created_by, ws.created_by):
        raise ApiError(
            "not_authorized", "Only the conversation's creator or the workspace's creator can delete a conversation."
        )


def still_standing(standing: Standing | None) -> Standing:
    """A tool call's principal must still have standing in the execution's conversation."""
    if standing is None:
        raise ApiError("not_authorized", "The execution's principal no longer has standing in its conversation.")
    return standing


def mail_sender(principal: Principal, sender: Execution | None) -> Execution:
    """The execution peer mail is sent from: one of the caller's account (another account's does not exist)."""
    if sender is None or sender.account_id != principal.account_id:
        raise not_found("sender execution")
    return sender


def may_send_mail(principal: Principal, sender: Execution, standing: Standing | None) -> None:
    """Who may send mail as an execution: its own principal, or anyone with write standing on its
    conversation. `standing` is the caller's on the sender's conversation; a caller who cannot see that
    conversation does not learn the execution exists."""
    if standing is None:
        raise not_found("sender execution")
    if (principal.kind, principal.public_id) == (sender.principal_kind, sender.principal_id):
        return
    if standing != "write":
        raise ApiError(
            "not_authorized",
            "Sending mail from an execution needs to be its principal, or write standing on its conversation.",
        )


# ---- verbs ----------------------------------------------------------------------------------------


def refuse_override(ctx: Context, mp: MemoryPath | None) -> None:
    """Under a provider override the workspace's memory verbs belong to the provider."""
    provider = ctx.override_provider
    if provider is None:
        return
    # A skill is the service's own instruction row, never the provider's: verbs naming one are served.
    if mp is not None and mp.skill_name is not None:
        return
    raise ApiError(
        "memory_overridden",
        f"This workspace's memory is provided by {provider!r} (tool_provider_overrides['nexus.memory']); "
        "use that provider's tools, or clear the override.",
        provider=provider,
    )


def may_redact(ctx: Context, mp: MemoryPath) -> Source:
    """The source whose history a redaction scrubs: write standing through a read-write binding.

    An archived conversation does not refuse it: a redaction removes text and adds none, and it changes
    nothing a model reads."""
    src = ctx.source(mp)
    check_skill_path(src.scope, mp)
    if src.binding.access != "read_write":
        raise ApiError("memory_read_only", f"The {mp.root}/ root is bound read-only here: it cannot be changed.")
    if not src.writable:
        raise ApiError("not_authorized", f"You have no write standing on the {mp.root}/ root.")
    return src


def may_change(ctx: Context, mp: MemoryPath) -> Source:
    """The source a change to `mp` lands in, or the refusal: read-only binding, no standing, archived."""
    src = may_redact(ctx, mp)
    if DOORS[ctx.door].refuses_archived:
        conv = ctx.conversation
        if conv is not None and conv.archived:
            raise ApiError("conversation_archived", "The conversation is archived: its memory is read-only.")
        if src.archived:
            raise ApiError(
                "conversation_archived",
                f"The conversation behind the {mp.root}/ root is archived: its memory is read-only.",
            )
    return src


def may_review(ctx: Context, src: Source, writer: Author) -> None:
    """Who releases or rejects a quarantined version.

    In the shared scopes (conversation/, workspace/) a curator of the workspace, and never the writer of
    the flagged version; user/, agent/ and speaker/ rows are private, so their owner reviews them, its own
    writes included (write standing on the root, which the caller has already shown)."""
    if src.scope not in ("conversation", "workspace"):
        return
    ws = ctx.workspace
    member = ctx.loaded.get(Ref.member(ws.public_id, ctx.principal.public_id)) if ws is not None else None
    reviews(ctx.principal, workspace_role(ctx.principal, ws, member), writer, "version")


def reviews(principal: Principal, role: str | None, writer: Author, what: Literal["version", "record"]) -> None:
    """The review rule of everything shared in a workspace (its documents' versions, its records): a
    curator of it reviews, and never what they wrote themselves (a second pair of eyes)."""
    if not is_curator(role):
        things = "quarantined versions" if what == "version" else "records"
        raise ApiError("not_authorized", f"Only a curator of this workspace reviews {things}.")
    if (writer.kind, writer.public_id) == (principal.kind, principal.public_id):
        raise ApiError("not_authorized", f"You wrote this {what}: another curator of the workspace reviews it.")


def sees_record(principal: Principal, ws: Workspace, role: str | None, rec: TypedRecord | None) -> bool:
    """A workspace's records: private ones are their author's alone; quarantined ones a curator's (and
    nobody else's)."""
    if rec is None or rec.workspace_id != ws.public_id:
        return False
    if rec.visibility == "private" and rec.author.public_id != principal.public_id:
        return False
    return not rec.hidden or is_curator(role)


def reaches_record(
    principal: Principal, ws: Workspace, role: str | None, rec: TypedRecord | None, *, write: bool
) -> TypedRecord:
    """A record's door (show, update, delete, review), in the order that tells nothing: a record the caller
    may not see is not found whatever it asked and whatever its standing (only a curator learns that a
    quarantined record exists, only its author a private one); a record it sees is changed only with
    write standing (a viewer's change is not_authorized)."""
    if rec is None or not sees_record(principal, ws, role, rec):
        raise not_found("record")
    if write:
        require_workspace_write(role)
    return rec


def grants_write(standing: Standing, where: str, what: str, memory_name: str) -> None:
    """A mount or an attachment that writes a Memory needs the grantor's own write standing on it."""
    if standing != "write":
        raise ApiError("not_authorized", f"{where}: {what} needs write access to Memory {memory_name!r}.")


def access_of(src: Source) -> Literal["read", "read_write"]:
    """What the caller may do with a root, as a model is told it."""
    return "read_write" if src.binding.access == "read_write" and src.writable else "read"


def check_context_revision(ctx: Context, expected: int | None) -> None:
    """The writer's expected_context_revision, where its door honours one."""
    conv = ctx.conversation
    if not DOORS[ctx.door].checks_context_revision or conv is None or expected is None:
        return
    if conv.context_revision != expected:
        raise ApiError(
            "stale_object",
            f"The conversation's context_revision is {conv.context_revision}, not the "
            "expected_context_revision you sent: read the conversation again.",
        )


# ---- organization Memories ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reach:
    """How a principal reaches an organization Memory: its standing there, and by what.

    `via` is "access" for a Human (open access, the panel, or the Memory's creator), "attachment" or
    "default" for an agent (a session mount is a third way, which the execution carries)."""

    standing: Standing
    via: Literal["access", "attachment", "default", "mount"]
    read_first: bool = False


def memory_in_account(principal: Principal, memory: OrgMemory | None) -> OrgMemory:
    if memory is None or memory.account_id != principal.account_id:
        raise not_found("Memory")
    return memory


def memory_panel_needs(principal: Principal, memory: OrgMemory) -> list[Ref]:
    """The rows a Human's reach of a restricted Memory is read from, beyond the Memory itself."""
    if principal.kind != "human" or memory.access is None or _named(principal, memory):
        return []
    return [Ref.account(memory.account_id), *(Ref.member(ws, principal.public_id) for ws in memory.access.workspaces)]


def _named(principal: Principal, memory: OrgMemory) -> bool:
    return memory.created_by.public_id == principal.public_id or (
        memory.access is not None and principal.public_id in memory.access.humans
    )


def human_memory_reach(principal: Principal, memory: OrgMemory, rows: Mapping[Ref, Any]) -> Reach | None:
    """Every Human of the account reads and writes a Memory with open access. The Access panel narrows it
    to the Humans it names and the members of the workspaces it names (a workspace's viewers read). Its
    creator and the account's first Human always reach it: they are the ones who change its access."""
    if memory.access is None or _named(principal, memory):
        return Reach("write", "access")
    account: Account | None = rows.get(Ref.account(memory.account_id))
    if account is not None and account.first_human_id == principal.public_id:
        return Reach("write", "access")
    best: Standing | None = None
    for ws in memory.access.workspaces:
        member: Member | None = rows.get(Ref.member(ws, principal.public_id))
        if member is None:
            continue
        if member.role in WRITING_ROLES:
            return Reach("write", "access")
        best = "read"
    return None if best is None else Reach(best, "access")


def agent_memory_reach(agent: Agent | None, memory: OrgMemory) -> Reach | None:
    """An agent reaches a Memory through its own attachment, else through a tenant default that reaches it
    (an attachment overrides a default). Its mode says whether it may write."""
    if agent is None or agent.account_id != memory.account_id:
        return None
    for a in agent.memories:
        if a.memory_id == memory.memory_id:
            return Reach("write" if a.mode == "readwrite" else "read", "attachment", a.read_first)
    d = memory.default
    if d is not None and d.reaches(agent):
        return Reach("write" if d.mode == "readwrite" else "read", "default", d.read_first)
    return None


def memory_source(memory: OrgMemory, reach: Reach) -> Source:
    """The one root a Memory's files are reached through. A read-only reach (a readonly attachment or
    default, or a git-synced Memory, read-only to everyone) binds it read-only, so a write is
    memory_read_only; a Human who only reads (a workspace's viewer) is refused not_authorized."""
    agent_read_only = reach.via in ("attachment", "default", "mount") and reach.standing != "write"
    read_only = memory.source == "git" or agent_read_only
    binding = Binding(FILES_ROOT, "memory", "read" if read_only else "read_write")
    return Source(binding, memory.anchor, reach.standing == "write")


def may_manage_memory(principal: Principal, reach: Reach) -> None:
    """Changing a Memory as a whole (its description, default, archive, deletion, a sync) is for the
    Humans who write it; an agent changes files only."""
    require_human(principal)
    require_write_standing(reach.standing, "You can read this Memory but not change it.")


def may_change_access(principal: Principal, memory: OrgMemory, rows: Mapping[Ref, Any]) -> None:
    account: Account | None = rows.get(Ref.account(memory.account_id))
    first = account.first_human_id if account is not None else None
    if principal.public_id not in (memory.created_by.public_id, first):
        raise ApiError(
            "not_authorized", "Only the Memory's creator or the account's first Human changes who may see it."
        )


def may_attach(principal: Principal, agent: Agent) -> None:
    """An agent's attachments are its steward's to set, or a program's own."""
    if principal.public_id == agent.steward_id or (agent.kind == "program" and principal.public_id == agent.public_id):
        return
    raise ApiError("not_authorized", "Only the agent's steward (or the agent itself, for a program) sets its memories.")


def may_grant(principal: Principal, reach: Reach | None, mode: str, where: str, memory_id: str, name: str) -> None:
    """One attaches to an agent only what one already reaches, as far as one reaches it: the rule for a
    person attaching a Memory and for a program setting its own attachments alike.

    `reach` is the attacher's own: a Human's (open access or the Access panel), or, for a program setting
    its own list, the program's (its attachments and the defaults that reach it), so an agent grants itself
    nothing. A Memory the attacher does not reach is answered as if it did not exist."""
    if reach is None:
        if principal.kind == "agent":
            raise ApiError(
                "validation_failed",
                f"{where}: an agent attaches to itself only a Memory it already reaches (through an attachment "
                f"or a default), and no Memory {memory_id} is one: ask the agent's steward to attach it.",
            )
        raise ApiError("validation_failed", f"{where}: no Memory {memory_id} is visible to you.")
    if mode != "readwrite" or reach.standing == "write":
        return
    if principal.kind == "agent":
        raise ApiError(
            "validation_failed",
            f"{where}: an agent grants itself nothing: it reaches Memory {name!r} read-only, so it cannot attach "
            "it readwrite. Ask the agent's steward.",
        )
    grants_write(reach.standing, where, "a readwrite attachment", name)


def may_see_agent(principal: Principal, agent: Agent | None) -> Agent:
    """An agent's detail is visible to its account's Humans and to itself."""
    if agent is None or agent.account_id != principal.account_id:
        raise not_found("agent")
    if principal.kind == "agent" and principal.public_id != agent.public_id:
        raise not_found("agent")
    return agent
