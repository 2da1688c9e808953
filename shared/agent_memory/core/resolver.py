"""The one resolver: caller + door + path -> the rows a request needs, loaded in as few batches as possible.

Every door (conversation, workspace, profile, agent definition), the memory block, the directory and the
model's tools open a `Context` here. What a caller may reach is decided by `core/access.py`; this
module only knows which rows those rules need and how to fetch them together.

Loading is batched: the first round trip fetches the token, the workspace, the caller's membership,
the conversation and every document whose anchor is already known from the URL and the caller; a
second one happens only when the bindings name rows the first could not know (the answering agent,
alias conversations, explicit speakers, agent/ and speaker/ documents).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from agent_memory.api.contract import Door
from agent_memory.api.errors import ApiError
from agent_memory.core import access, clock
from agent_memory.core.access import Standing
from agent_memory.core.bindings import Binding, apply_limit, configured_bindings
from agent_memory.core.context import Context, Source
from agent_memory.core.ids import PresentedToken, digests_equal, token_digest
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.lru import Lru
from agent_memory.core.mail import mail_bindings, mail_subjects
from agent_memory.core.model import (
    MAX_SPAWN_DEPTH,
    Agent,
    Anchor,
    Conversation,
    Execution,
    FrozenBinding,
    Member,
    OrgMemory,
    Principal,
    Speaker,
    TokenRow,
    Workspace,
)
from agent_memory.core.paths import FILES_ROOT, MemoryPath
from agent_memory.core.ports import Ref, ResolverStore


def _unauthenticated() -> ApiError:
    return ApiError("not_authenticated", "Send a valid token as 'Authorization: Bearer <token>'.")


def require_token(presented: PresentedToken | None) -> PresentedToken:
    if presented is None:
        raise _unauthenticated()
    return presented


def authenticate(presented: PresentedToken, row: TokenRow | None) -> Principal:
    if (
        row is None
        or not digests_equal(row.digest, presented.digest)
        or row.principal_id != presented.principal_id
        or row.principal_kind != presented.principal_kind
    ):
        raise _unauthenticated()
    return Principal(row.principal_kind, row.principal_id, row.account_id, row.principal_name)


def _host_refs(workspace_id: str, principal_id: str, conversation_id: str) -> list[Ref]:
    """What a caller's standing on a conversation is read from: the workspace, its membership, the conversation."""
    return [Ref.workspace(workspace_id), Ref.member(workspace_id, principal_id), Ref.conversation(conversation_id)]


@dataclass(frozen=True, slots=True)
class Host:
    """The rows behind a conversation URL and the caller's standing there."""

    workspace: Workspace
    member: Member | None
    conversation: Conversation
    standing: Standing


def _host_rows(
    got: dict[Ref, Any], workspace_id: str, principal_id: str, conversation_id: str
) -> tuple[Workspace | None, Member | None, Conversation | None]:
    ws: Workspace | None = got[Ref.workspace(workspace_id)]
    member: Member | None = got[Ref.member(workspace_id, principal_id)]
    conv: Conversation | None = got[Ref.conversation(conversation_id)]
    return ws, member, conv


def _host(principal: Principal, got: dict[Ref, Any], workspace_id: str, conversation_id: str) -> Host:
    ws, member, conv = _host_rows(got, workspace_id, principal.public_id, conversation_id)
    standing = access.host_standing(principal, ws, member, conv)
    if ws is None or conv is None:  # host_standing has refused already; this narrows the types
        raise access.not_found("conversation")
    return Host(ws, member, conv, standing)


def thawed(entry: FrozenBinding) -> Binding:
    """The binding behind one frozen root."""
    speaker = entry.speaker_public_id if entry.scope == "speaker" else None
    return Binding(entry.name, entry.scope, entry.access, entry.conversation_public_id, speaker)


def _execution_refs(ex: Execution, paths: tuple[MemoryPath, ...]) -> list[Ref]:
    """What a tool call reads besides the execution: standing, aliases, and the documents it names."""
    by_root = {e.name: e for e in ex.bindings}
    refs = _host_refs(ex.workspace_id, ex.principal_id, ex.conversation_id)
    refs += [Ref.conversation(e.conversation_public_id) for e in ex.bindings if e.conversation_public_id]
    # Every anchor is known from the frozen entries, so the documents ride in the same round.
    refs += [Ref.document(by_root[mp.root].anchor, mp.rest) for mp in paths if mp.root in by_root]
    refs += _lineage_refs(ex)
    return list(dict.fromkeys(refs))


def _call_refs(
    ex: Execution, paths: tuple[MemoryPath, ...], mounted: Callable[[Execution], list[Ref]] | None
) -> list[Ref]:
    refs = _execution_refs(ex, paths)
    return refs if mounted is None else list(dict.fromkeys([*refs, *mounted(ex)]))


def _lineage_refs(ex: Execution) -> list[Ref]:
    """What says whether an execution still runs: its stop mark and its ancestors', and their conversations
    (the execution's own rides in the host refs). At most MAX_SPAWN_DEPTH + 1 of each."""
    refs = [Ref.execution_stop(a.execution_id) for a in ex.lineage]
    return refs + [Ref.conversation(a.conversation_id) for a in ex.ancestors if a.conversation_id]


# Execution rows are immutable once written, so a warm process reads each one once.
_EXECUTIONS: Lru[Execution] = Lru(4096, lambda _: 1)


@dataclass(frozen=True, slots=True)
class MemoryDoor:
    """A Memory opened for one request: the Context of its files, the Memory, and the caller's reach."""

    context: Context
    memory: OrgMemory
    reach: access.Reach


@dataclass(frozen=True, slots=True)
class ExecutionStart:
    """What a new execution freezes: the sources resolved for it, who answers, its subject and its parent."""

    context: Context
    agent: Agent | None
    subject: Speaker | None
    parent: Execution | None
    # The sender, when the execution is peer mail from another.
    mail_from: Execution | None = None


def _path_refs(anchor: Anchor, mp: MemoryPath, versions: tuple[int, ...]) -> list[Ref]:
    """A path's document row and the version records a history verb names, once the anchor is known."""
    return [Ref.document(anchor, mp.rest), *(Ref.version(anchor, mp.rest, n) for n in versions)]


def _workspace_refs(
    workspace_id: str, principal_id: str, paths: tuple[MemoryPath, ...], versions: tuple[int, ...]
) -> list[Ref]:
    """What the workspace door reads: the workspace, the caller's membership, the workspace/ documents named."""
    refs = [Ref.workspace(workspace_id), Ref.member(workspace_id, principal_id)]
    for mp in paths:
        if mp.root == "workspace":
            refs += _path_refs(Anchor("workspace", workspace_id), mp, versions)
    return refs


def workspace_refs(
    presented: PresentedToken | None, workspace_id: str, paths: tuple[MemoryPath, ...]
) -> tuple[Ref, ...]:
    """The rows `Resolver.workspace_context_of` reads, for another door's batch to carry (none without a token:
    that door refuses first)."""
    if presented is None:
        return ()
    return tuple(_workspace_refs(workspace_id, presented.principal_id, paths, ()))


class Resolver:
    def __init__(self, store: ResolverStore) -> None:
        self.store = store

    # ---- principals -----------------------------------------------------------------------------

    def principal(self, presented: PresentedToken | None) -> Principal:
        return self.first_round(presented, [])[0]

    def first_round(self, presented: PresentedToken | None, extra: list[Ref]) -> tuple[Principal, dict[Ref, Any]]:
        """Authenticate and fetch `extra` in the same batch read; the rows are used only once the token holds."""
        presented = require_token(presented)
        tref = Ref.token(presented.digest)
        got = self.store.get_many([tref, *extra])
        return authenticate(presented, got[tref]), got

    def human(self, presented: PresentedToken | None) -> Principal:
        principal = self.principal(presented)
        access.require_human(principal)
        return principal

    def account_row(self, presented: PresentedToken | None, ref: Ref, what: str) -> tuple[Principal, Any]:
        """The caller and one row of its account (not_found for any other account's)."""
        principal, got = self.first_round(presented, [ref])
        return principal, access.in_account(principal, got[ref], what)

    def writable_workspace(
        self, presented: PresentedToken | None, ws_id: str, extra: list[Ref] | None = None
    ) -> tuple[Principal, Workspace, dict[Ref, Any]]:
        """The caller and a workspace it may change (read-only callers are refused)."""
        tok = require_token(presented)
        principal, got = self.first_round(
            tok, [Ref.workspace(ws_id), Ref.member(ws_id, tok.principal_id), *(extra or [])]
        )
        ws = access.workspace_write_role(
            principal, got[Ref.workspace(ws_id)], got[Ref.member(ws_id, principal.public_id)]
        )
        return principal, ws, got

    # ---- the doors ------------------------------------------------------------------------------

    def door(
        self,
        door: Door,
        presented: PresentedToken | None,
        params: Mapping[str, str],
        *,
        paths: tuple[MemoryPath, ...] = (),
        speaker_selector: str | None = None,
        write: bool = False,
        late_paths: bool = True,
        versions: tuple[int, ...] = (),
    ) -> Context:
        """Open the Context of a memory door for a route's path parameters.

        `late_paths=False` loads the documents of `paths` only where they ride in the first batch, never
        in a round of their own (a write reads its row only when the read is free). `versions` names the
        version records of those paths to load with their documents.
        """
        if door == "conversation":
            return self.conversation(
                presented,
                params["workspace_public_id"],
                params["conversation_public_id"],
                paths=paths,
                speaker_selector=speaker_selector,
                write=write,
                late_paths=late_paths,
                versions=versions,
            )
        if door == "workspace":
            return self.workspace(
                presented,
                params["workspace_public_id"],
                paths=paths,
                speaker_selector=speaker_selector,
                write=write,
                versions=versions,
            )
        if door == "profile":
            return self.profile(presented, paths=paths, speaker_selector=speaker_selector, versions=versions)
        return self.definition(presented, params["agent_name"], speaker_selector)

    def conversation(
        self,
        presented: PresentedToken | None,
        workspace_id: str,
        conversation_id: str,
        *,
        paths: tuple[MemoryPath, ...] = (),
        speaker_selector: str | None = None,
        write: bool = False,
        late_paths: bool = True,
        versions: tuple[int, ...] = (),
        extra: tuple[Ref, ...] = (),
    ) -> Context:
        """`extra` rows ride in the first batch too (a conversation's store entry pages, a fork's base)."""
        presented = require_token(presented)
        pid = presented.principal_id
        refs = _host_refs(workspace_id, pid, conversation_id) + list(extra)
        if presented.principal_kind == "agent":
            refs.append(Ref.agent(pid))
        if speaker_selector:
            refs.append(Ref.speaker(speaker_selector))
        # Documents whose anchor the URL and the caller already fix ride along in the same batch.
        for mp in paths:
            if mp.root == "conversation":
                refs += _path_refs(Anchor("conversation", conversation_id), mp, versions)
            elif mp.root == "workspace":
                refs += _path_refs(Anchor("workspace", workspace_id), mp, versions)
            elif mp.root == "user" and presented.principal_kind == "human":
                refs += _path_refs(Anchor("user", pid), mp, versions)
        principal, got = self.first_round(presented, refs)
        host = _host(principal, got, workspace_id, conversation_id)
        if write:
            access.require_write_standing(host.standing)
        speaker = access.selected_speaker(principal, got.get(Ref.speaker(speaker_selector or "")), speaker_selector)
        ctx = self.conversation_context(principal, host, speaker, got)
        if late_paths:
            self._prefetch(ctx, paths, versions)
        return ctx

    def conversation_context(
        self, principal: Principal, host: Host, speaker: Speaker | None, got: dict[Ref, Any]
    ) -> Context:
        """The conversation door's Context for rows already loaded (a second round fetches what bindings name)."""
        conv = host.conversation
        configured = configured_bindings(conv.memory_context)
        need: list[Ref] = []
        if conv.answering_agent_id:
            need.append(Ref.agent(conv.answering_agent_id))
        need += [Ref.conversation(b.conversation_public_id) for b in configured if b.conversation_public_id]
        need += [Ref.speaker(b.speaker_public_id) for b in configured if b.speaker_public_id]
        ctx = Context(self.store, principal, "conversation", {}, host.workspace, conv, got)
        ctx.fetch(need)
        agent: Agent | None = got.get(Ref.agent(conv.answering_agent_id)) if conv.answering_agent_id else None
        bindings = self.effective_bindings(conv, agent)
        ctx.sources = access.conversation_sources(
            principal, host.workspace, host.member, conv, agent, speaker, bindings, got, host.standing
        )
        return ctx

    def new_conversation_context(
        self, principal: Principal, ws: Workspace, got: dict[Ref, Any], conv: Conversation
    ) -> Context:
        """The Context a conversation about to be created will resolve to, from the rows already read."""
        member: Member | None = got.get(Ref.member(ws.public_id, principal.public_id))
        standing = access.conversation_standing(principal, ws, member, conv) or "read"
        return self.conversation_context(principal, Host(ws, member, conv, standing), None, dict(got))

    def conversation_context_of(self, ctx: Context, conv: Conversation) -> Context:
        """`ctx`'s conversation resolved again as `conv` (a changed row of it), from the rows already read."""
        if ctx.workspace is None:
            raise access.not_found("workspace")
        member: Member | None = ctx.loaded.get(Ref.member(ctx.workspace.public_id, ctx.principal.public_id))
        standing = access.conversation_standing(ctx.principal, ctx.workspace, member, conv) or "read"
        return self.conversation_context(
            ctx.principal, Host(ctx.workspace, member, conv, standing), None, dict(ctx.loaded)
        )

    def child_context(self, parent: Context, child: Conversation) -> Context:
        """A new fork's Context, from the rows its parent's already loaded (same workspace, answerer, caller)."""
        if parent.workspace is None:
            raise access.not_found("workspace")
        member: Member | None = parent.loaded.get(Ref.member(parent.workspace.public_id, parent.principal.public_id))
        standing = access.conversation_standing(parent.principal, parent.workspace, member, child) or "read"
        return self.conversation_context(
            parent.principal, Host(parent.workspace, member, child, standing), None, parent.loaded
        )

    def effective_bindings(self, conv: Conversation, agent: Agent | None) -> tuple[Binding, ...]:
        bindings = configured_bindings(conv.memory_context)
        if agent is not None:
            bindings = apply_limit(bindings, agent.memory_context_limit)
        return bindings

    def _prefetch(self, ctx: Context, paths: tuple[MemoryPath, ...], versions: tuple[int, ...] = ()) -> None:
        refs = []
        for mp in paths:
            src = ctx.sources.get(mp.root)
            if src is not None and src.anchor is not None:
                refs += _path_refs(src.anchor, mp, versions)
        ctx.fetch(refs)

    # ---- the workspace door ---------------------------------------------------------------------

    def workspace(
        self,
        presented: PresentedToken | None,
        workspace_id: str,
        *,
        paths: tuple[MemoryPath, ...] = (),
        speaker_selector: str | None = None,
        write: bool = False,
        versions: tuple[int, ...] = (),
    ) -> Context:
        presented = require_token(presented)
        refs = _workspace_refs(workspace_id, presented.principal_id, paths, versions)
        if speaker_selector:
            refs.append(Ref.speaker(speaker_selector))
        principal, got = self.first_round(presented, refs)
        return self._workspace_door(principal, got, workspace_id, write=write, speaker_selector=speaker_selector)

    def workspace_context_of(
        self, ctx: Context, workspace_id: str, *, paths: tuple[MemoryPath, ...] = (), write: bool = False
    ) -> Context:
        """The workspace door's Context for `ctx`'s caller, from the rows `ctx` loaded: a read only for what
        it lacks. A verb with two doors (promote: the source's, then the workspace it writes) names the
        second's rows in the first's batch (`workspace_refs`) and opens it here without a round trip."""
        got = dict(ctx.loaded)
        missing = [r for r in _workspace_refs(workspace_id, ctx.principal.public_id, paths, ()) if r not in got]
        if missing:
            got.update(self.store.get_many(missing))
        return self._workspace_door(ctx.principal, got, workspace_id, write=write)

    def _workspace_door(
        self,
        principal: Principal,
        got: dict[Ref, Any],
        workspace_id: str,
        *,
        write: bool,
        speaker_selector: str | None = None,
    ) -> Context:
        ws: Workspace | None = got[Ref.workspace(workspace_id)]
        role = access.workspace_role(principal, ws, got[Ref.member(workspace_id, principal.public_id)])
        if role is None:
            raise access.not_found("workspace")
        if write:
            access.require_workspace_write(role)
        # This door has no speaker/ root, but the selector is still checked: same verbs, same refusals.
        access.selected_speaker(principal, got.get(Ref.speaker(speaker_selector or "")), speaker_selector)
        src = access.workspace_source(workspace_id, role)
        return Context(self.store, principal, "workspace", {"workspace": src}, ws, None, got)

    # ---- the profile doors ----------------------------------------------------------------------

    def profile(
        self,
        presented: PresentedToken | None,
        *,
        paths: tuple[MemoryPath, ...] = (),
        speaker_selector: str | None = None,
        versions: tuple[int, ...] = (),
        extra: tuple[Ref, ...] = (),
    ) -> Context:
        """`extra` rows ride in the first batch too (the workspace a promote writes)."""
        presented = require_token(presented)
        root = "user" if presented.principal_kind == "human" else "agent"
        anchor = Anchor(root, presented.principal_id)
        refs = [ref for mp in paths if mp.root == root for ref in _path_refs(anchor, mp, versions)]
        refs += extra
        if speaker_selector:
            refs.append(Ref.speaker(speaker_selector))
        principal, got = self.first_round(presented, refs)
        access.selected_speaker(principal, got.get(Ref.speaker(speaker_selector or "")), speaker_selector)
        src = access.own_root_source(principal)
        return Context(self.store, principal, "profile", {src.name: src}, None, None, got)

    def definition(self, presented: PresentedToken | None, name: str, speaker_selector: str | None = None) -> Context:
        """The steward's door to a named definition's agent/ rows (the agent row is looked up by name first)."""
        principal = self.human(presented)
        agent_id = self.store.find_definition(principal.public_id, name)
        agent: Agent | None = self.store.get_many([Ref.agent(agent_id)])[Ref.agent(agent_id)] if agent_id else None
        agent = access.definition_door(principal, agent)
        # Only a Human reaches this door, and a Human controls no Speaker.
        access.selected_speaker(principal, None, speaker_selector)
        src = access.definition_source(agent)
        return Context(self.store, principal, "definition", {"agent": src}, None, None, {})

    # ---- organization Memories -------------------------------------------------------------------

    def memory(
        self,
        presented: PresentedToken | None,
        memory_id: str,
        *,
        paths: tuple[MemoryPath, ...] = (),
        versions: tuple[int, ...] = (),
        stats: bool = False,
    ) -> MemoryDoor:
        """Open a Memory's files for the caller: the Memory, the caller's own agent row (its attachments),
        and the rows the request names ride in the token's batch; a Human's reach of a restricted Memory
        costs a second batch (the account and the workspaces of its panel)."""
        presented = require_token(presented)
        mref = Ref.memory(memory_id)
        refs: list[Ref] = [mref]
        if stats:
            refs.append(Ref.memory_stats(memory_id))
        if presented.principal_kind == "agent":
            refs.append(Ref.agent(presented.principal_id))
        anchor = Anchor("memory", memory_id)
        for mp in paths:
            refs += _path_refs(anchor, mp, versions)
        principal, got = self.first_round(presented, refs)
        mem = access.memory_in_account(principal, got[mref])
        ctx = Context(self.store, principal, "memory", {}, None, None, got)
        reach = self.memory_reach(ctx, mem)
        if reach is None:
            raise access.not_found("Memory")
        ctx.sources = {FILES_ROOT: access.memory_source(mem, reach)}
        return MemoryDoor(ctx, mem, reach)

    def memory_reach(self, ctx: Context, mem: OrgMemory) -> access.Reach | None:
        """The caller's reach of a Memory, reading what the rules need that `ctx` has not loaded."""
        principal = ctx.principal
        if principal.kind == "agent":
            ctx.fetch([Ref.agent(principal.public_id)])
            return access.agent_memory_reach(ctx.loaded.get(Ref.agent(principal.public_id)), mem)
        ctx.fetch(access.memory_panel_needs(principal, mem))
        return access.human_memory_reach(principal, mem, ctx.loaded)

    # ---- executions -----------------------------------------------------------------------------

    def new_execution(
        self,
        presented: PresentedToken | None,
        workspace_id: str,
        conversation_id: str,
        *,
        speaker_id: str | None = None,
        parent_id: str | None = None,
        delegate_id: str | None = None,
    ) -> ExecutionStart:
        """Resolve the configuration a new execution captures, with the same rules as the conversation door.

        An ordinary execution takes the conversation's configured bindings; a spawned one (parent given)
        takes its parent's frozen bindings instead, re-resolved here so relative roots follow this
        conversation and this answerer. Either way the answerer's memory_context_limit narrows the list.
        """
        presented = require_token(presented)
        refs = _host_refs(workspace_id, presented.principal_id, conversation_id)
        if speaker_id:
            refs.append(Ref.speaker(speaker_id))
        if parent_id:
            refs.append(Ref.execution(parent_id))
        if delegate_id:
            refs.append(Ref.agent(delegate_id))
        principal, got = self.first_round(presented, refs)
        host = _host(principal, got, workspace_id, conversation_id)
        ws, conv = host.workspace, host.conversation
        access.may_start_execution(host.standing, conv)
        parent: Execution | None = None
        if parent_id:
            parent = got[Ref.execution(parent_id)]
            if parent is None or parent.account_id != principal.account_id or parent.workspace_id != ws.public_id:
                raise access.not_found("parent execution")
            access.unexpired(parent, clock.now())
            if len(parent.lineage) > MAX_SPAWN_DEPTH:
                raise ApiError(
                    "parameter_invalid",
                    f"parent_execution_public_id: executions spawn at most {MAX_SPAWN_DEPTH} deep, and that "
                    "execution is as deep as they go.",
                )
            if speaker_id:
                raise ApiError(
                    "parameter_invalid",
                    "A child execution keeps its parent's subject: leave execution.speaker_public_id out.",
                )
        if delegate_id:
            access.in_account(principal, got[Ref.agent(delegate_id)], "agent")
        agent_id = delegate_id or conv.answering_agent_id
        configured = tuple(thawed(e) for e in parent.bindings) if parent else configured_bindings(conv.memory_context)
        ctx = Context(self.store, principal, "execution", {}, ws, conv, got)
        # Second round: the answerer, the parent's conversation, aliases and subjects.
        need: list[Ref] = []
        if agent_id:
            need.append(Ref.agent(agent_id))
        if parent is not None:
            need.append(Ref.conversation(parent.conversation_id))
            # Whether the parent (or one it was spawned from) was stopped: a stopped execution spawns nothing.
            need += _lineage_refs(parent)
            if parent.speaker_id:
                need.append(Ref.speaker(parent.speaker_id))
        need += [Ref.conversation(b.conversation_public_id) for b in configured if b.conversation_public_id]
        need += [Ref.speaker(b.speaker_public_id) for b in configured if b.speaker_public_id]
        ctx.fetch(need)
        if parent is not None:
            parent_conv = got[Ref.conversation(parent.conversation_id)]
            visible = access.conversation_standing(principal, ws, host.member, parent_conv) is not None
            if parent_conv is not None and not visible:
                raise access.not_found("parent execution")
            access.not_stopped(parent, got)
        subject: Speaker | None = None
        if parent is not None:
            subject = got.get(Ref.speaker(parent.speaker_id)) if parent.speaker_id else None
        elif speaker_id:
            subject = access.execution_subject(principal, conv, got[Ref.speaker(speaker_id)])
        agent: Agent | None = got.get(Ref.agent(agent_id)) if agent_id else None
        if speaker_id:
            # A subject the caller names is a choice to reach that pair's notes; an inherited one is the
            # parent's, and resolves as unavailable below where the caller does not own the pair.
            access.may_run_for(principal, agent, subject)
        bindings = apply_limit(configured, agent.memory_context_limit) if agent is not None else configured
        ctx.sources = access.conversation_sources(
            principal, ws, host.member, conv, agent, subject, bindings, got, host.standing
        )
        return ExecutionStart(ctx, agent, subject, parent)

    def mail_execution(
        self, presented: PresentedToken | None, workspace_id: str, conversation_id: str, mail_from_id: str
    ) -> ExecutionStart:
        """Resolve an execution started as peer mail from another execution (mail.py has the rule).

        The receiving conversation's selected bindings are resolved for the caller exactly as a new
        ordinary execution's would be, except that speaker roots take the sender's subjects; the receiving
        profile's limit narrows them; then only what the sender's frozen bindings also reach is kept, at the
        lesser access. The caller must be able to start an execution here and to send as the sender.
        """
        presented = require_token(presented)
        refs = [*_host_refs(workspace_id, presented.principal_id, conversation_id), Ref.execution(mail_from_id)]
        principal, got = self.first_round(presented, refs)
        host = _host(principal, got, workspace_id, conversation_id)
        ws, conv = host.workspace, host.conversation
        access.may_start_execution(host.standing, conv)
        sender = access.mail_sender(principal, got[Ref.execution(mail_from_id)])
        configured = mail_subjects(configured_bindings(conv.memory_context), sender.bindings)
        ctx = Context(self.store, principal, "execution", {}, ws, conv, got)
        # Second round: the sender's standing rows, the answerer, the sender's subject, aliases and subjects.
        need = _host_refs(sender.workspace_id, principal.public_id, sender.conversation_id)
        # Whether the sender (or one it was spawned from) was stopped: a stopped execution sends nothing.
        need += _lineage_refs(sender)
        if conv.answering_agent_id:
            need.append(Ref.agent(conv.answering_agent_id))
        if sender.speaker_id:
            need.append(Ref.speaker(sender.speaker_id))
        need += [Ref.conversation(b.conversation_public_id) for b in configured if b.conversation_public_id]
        need += [Ref.speaker(b.speaker_public_id) for b in configured if b.speaker_public_id]
        ctx.fetch(need)
        sender_ws, sender_member, sender_conv = _host_rows(
            got, sender.workspace_id, principal.public_id, sender.conversation_id
        )
        access.may_send_mail(
            principal, sender, access.conversation_standing(principal, sender_ws, sender_member, sender_conv)
        )
        access.unexpired(sender, clock.now())
        access.not_stopped(sender, got)
        # Completion continues with the captured subject: the mail keeps the sender's.
        subject: Speaker | None = got.get(Ref.speaker(sender.speaker_id)) if sender.speaker_id else None
        agent: Agent | None = got.get(Ref.agent(conv.answering_agent_id)) if conv.answering_agent_id else None
        bindings = apply_limit(configured, agent.memory_context_limit) if agent is not None else configured
        sources = access.conversation_sources(
            principal, ws, host.member, conv, agent, subject, bindings, got, host.standing
        )
        kept = {
            f.name: f
            for f in mail_bindings([s.frozen() for s in sources.values() if s.anchor is not None], sender.bindings)
        }
        ctx.sources = {
            name: dataclasses.replace(src, binding=dataclasses.replace(src.binding, access=kept[name].access))
            for name, src in sources.items()
            if name in kept
        }
        return ExecutionStart(ctx, agent, subject, None, sender)

    def execution(
        self,
        execution_id: str,
        presented: PresentedToken | None,
        *,
        secret: str | None = None,
        paths: tuple[MemoryPath, ...] = (),
        mounted: Callable[[Execution], list[Ref]] | None = None,
    ) -> tuple[Execution, Context]:
        """Open an accepted execution for a tool call, from its frozen bindings.

        `mounted` names, given the execution, rows its mounts hold that the call will read (a mounted
        Memory's row and file): they ride in the batch that reads its standing.

        The caller proves itself with the principal's bearer token (HTTP, or the in-account function), or
        with the execution's own secret, handed out once when it began (the in-account function: a
        runtime holding only the execution). IAM alone vouches for no tenant. Either way the principal's
        standing is read again now: freezing the configuration never freezes authority.
        """
        # The row never changes once written, so a warm function keeps it and the call costs one round
        # trip: the token and the principal's current standing are still read every time.
        ex = _EXECUTIONS.get(execution_id)
        eref = Ref.execution(execution_id)
        # The stop mark is never cached: it rides in the call's batch whichever round that is.
        refs = [eref, Ref.execution_stop(execution_id)] if ex is None else _call_refs(ex, paths, mounted)
        tref = None
        if secret is None:
            presented = require_token(presented)
            tref = Ref.token(presented.digest)
            refs.append(tref)
        got = self.store.get_many(refs)
        if ex is None:
            ex = got[eref]
        if presented is not None and tref is not None:
            caller = authenticate(presented, got[tref])
            if ex is not None and (caller.kind, caller.public_id) != (ex.principal_kind, ex.principal_id):
                ex = None
        if ex is not None and secret is not None and not digests_equal(ex.secret_digest or "", token_digest(secret)):
            raise _unauthenticated()
        if ex is None:
            raise access.not_found("execution")
        access.unexpired(ex, clock.now())
        if eref in got:
            _EXECUTIONS.put(ex.public_id, ex)
            got.update(self.store.get_many(_call_refs(ex, paths, mounted)))
        principal = Principal(ex.principal_kind, ex.principal_id, ex.account_id, ex.principal_name)
        access.not_stopped(ex, got)
        ws, member, conv = _host_rows(got, ex.workspace_id, ex.principal_id, ex.conversation_id)
        standing = access.still_standing(access.conversation_standing(principal, ws, member, conv))
        if ws is None or conv is None:  # still_standing has refused already; this narrows the types
            raise access.not_found("execution")
        sources: dict[str, Source] = {}
        for e in ex.bindings:
            b = thawed(e)
            rw = access.writes_through(b, standing)
            if b.scope == "conversation" and b.conversation_public_id:
                # The frozen anchor of an alias is the aliased conversation itself.
                sources[b.name] = access.alias_source(principal, ws, member, b, got)
            else:
                # user/, agent/ and speaker/ were checked as the principal's own when the execution began,
                # and ownership of those rows never changes hands.
                sources[b.name] = Source(
                    b, e.anchor, rw, agent_public_id=e.agent_public_id, speaker_public_id=e.speaker_public_id
                )
        return ex, Context(
            self.store,
            principal,
            "execution",
            sources,
            ws,
            conv,
            got,
            execution_public_id=ex.public_id,
            stops=tuple(a.execution_id for a in ex.lineage),
        )

    def execution_to_stop(
        self, presented: PresentedToken | None, execution_id: str
    ) -> tuple[Execution, Principal, bool]:
        """An execution the caller may stop, the caller, and whether it is stopped already.

        One batch reads the token, the execution and its stop mark; someone other than its principal costs
        one more, of their standing on its conversation. An expired execution may still be stopped."""
        tok = require_token(presented)
        eref, sref = Ref.execution(execution_id), Ref.execution_stop(execution_id)
        principal, got = self.first_round(tok, [eref, sref])
        ex: Execution | None = got[eref]
        if ex is None or ex.account_id != principal.account_id:
            raise access.not_found("execution")
        standing: Standing | None = None
        if (principal.kind, principal.public_id) != (ex.principal_kind, ex.principal_id):
            host = self.store.get_many(_host_refs(ex.workspace_id, principal.public_id, ex.conversation_id))
            ws, member, conv = _host_rows(host, ex.workspace_id, principal.public_id, ex.conversation_id)
            standing = access.conversation_standing(principal, ws, member, conv)
        access.may_stop_execution(principal, ex, standing)
        return ex, principal, got[sref] is not None

    def conversation_host(
        self, presented: PresentedToken | None, workspace_id: str, conversation_id: str
    ) -> tuple[Principal, Host]:
        """The caller and the rows behind a conversation URL, in one batch (no bindings resolved)."""
        tok = require_token(presented)
        principal, got = self.first_round(tok, _host_refs(workspace_id, tok.principal_id, conversation_id))
        return principal, _host(principal, got, workspace_id, conversation_id)
