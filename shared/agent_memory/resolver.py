"""The one resolver: caller + door + path -> binding -> anchor and access.

Every door (conversation, workspace, profile, agent definition), the memory block and the model's tools
open a `Context` here, so the rules of who reads and writes what live in exactly one place.

Loading is batched: the first round trip fetches the token, the workspace, the caller's membership,
the conversation and every document whose anchor is already known from the URL and the caller; a
second one happens only when the bindings name rows the first could not know (the answering agent,
alias conversations, explicit speakers, agent/ and speaker/ documents).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .bindings import Binding, apply_limit, configured_bindings
from .errors import ApiError
from .ids import PresentedToken, digests_equal
from .lru import Lru
from .model import (
    Agent,
    Anchor,
    Conversation,
    Document,
    Execution,
    Member,
    Principal,
    Speaker,
    TokenRow,
    Workspace,
)
from .paths import SCOPES, MemoryPath
from .ports import Ref, Store

MEMORY_PROVIDER_KEY = "nexus.memory"


@dataclass(slots=True)
class Source:
    """A binding resolved for one request: where its rows hang, and whether this caller may write them."""

    binding: Binding
    anchor: Anchor | None
    writable: bool
    unavailable: str | None = None
    agent_public_id: str | None = None
    speaker_public_id: str | None = None
    # An alias of an archived conversation: its rows are read-only through the doors, as the host's are.
    archived: bool = False

    @property
    def name(self) -> str:
        return self.binding.name

    @property
    def scope(self) -> str:
        return self.binding.scope

    def effective_json(self) -> dict[str, Any]:
        out = self.binding.as_json()
        out["anchor_public_id"] = self.anchor_public_id
        if self.scope in ("agent", "speaker"):
            out["agent_public_id"] = self.agent_public_id
        if self.scope == "speaker":
            out["speaker_public_id"] = self.speaker_public_id
        return out

    @property
    def anchor_public_id(self) -> str | None:
        if self.anchor is None:
            return None
        return self.anchor.speaker_id or self.anchor.owner_id


@dataclass(slots=True)
class Context:
    """Everything a memory verb needs once the caller is known and allowed in."""

    store: Store
    principal: Principal
    door: str
    sources: dict[str, Source]
    workspace: Workspace | None = None
    conversation: Conversation | None = None
    can_write: bool = False
    loaded: dict[Ref, Any] = field(default_factory=dict)

    @property
    def override_provider(self) -> str | None:
        if self.workspace is None:
            return None
        return self.workspace.tool_provider_overrides.get(MEMORY_PROVIDER_KEY)

    def source(self, mp: MemoryPath) -> Source:
        """The source a path's root names, or the refusal for a root this request cannot use."""
        src = self.sources.get(mp.root)
        if src is None:
            if mp.root in SCOPES:
                raise ApiError(
                    "memory_scope_unavailable",
                    f"The {mp.root}/ root is not available here: it is not among this request's memory bindings.",
                )
            raise ApiError(
                "memory_path_invalid",
                f"{mp.root!r} is not a memory scope (conversation, workspace, user, agent, speaker) "
                "nor a root name bound here.",
            )
        if src.anchor is None:
            raise ApiError("memory_scope_unavailable", f"The {mp.root}/ root is unavailable: {src.unavailable}.")
        return src

    def readable(self) -> list[Source]:
        """Sources an unqualified read (list, grep, the block) walks: unavailable ones are left out."""
        return [s for s in self.sources.values() if s.anchor is not None]

    def document(self, src: Source, rest: str) -> Document | None:
        assert src.anchor is not None
        ref = Ref.document(src.anchor, rest)
        if ref not in self.loaded:
            self.loaded[ref] = self.store.get_many([ref])[ref]
        doc: Document | None = self.loaded[ref]
        return doc


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
    return Principal(row.principal_kind, row.principal_id, row.account_id)


def not_found(what: str) -> ApiError:
    return ApiError("not_found", f"No {what} with that id is visible to you.")


def workspace_role(principal: Principal, ws: Workspace | None, member: Member | None) -> str | None:
    """The caller's standing in a workspace: 'member' (write), 'viewer' (read) or None."""
    if ws is None or ws.account_id != principal.account_id or member is None:
        return None
    return member.role


def conversation_standing(
    principal: Principal, ws: Workspace | None, member: Member | None, conv: Conversation | None
) -> str | None:
    """'write', 'read' or None for a conversation; the answering agent always writes its own."""
    if conv is None or ws is None or conv.workspace_id != ws.public_id or ws.account_id != principal.account_id:
        return None
    if principal.kind == "agent" and conv.answering_agent_id == principal.public_id:
        return "write"
    role = workspace_role(principal, ws, member)
    return {"member": "write", "viewer": "read"}.get(role or "")


def host_standing(principal: Principal, ws: Workspace | None, member: Member | None, conv: Conversation | None) -> str:
    """The caller's standing on a conversation named in a URL, or not_found when it cannot see it."""
    if workspace_role(principal, ws, member) is None and not (
        conv is not None
        and principal.kind == "agent"
        and conv.answering_agent_id == principal.public_id
        and ws is not None
        and conv.workspace_id == ws.public_id
    ):
        raise not_found("workspace")
    standing = conversation_standing(principal, ws, member, conv)
    if standing is None:
        raise not_found("conversation")
    return standing


def _host_refs(workspace_id: str, principal_id: str, conversation_id: str) -> list[Ref]:
    """What a caller's standing on a conversation is read from: the workspace, its membership, the conversation."""
    return [Ref.workspace(workspace_id), Ref.member(workspace_id, principal_id), Ref.conversation(conversation_id)]


def _host_rows(
    got: dict[Ref, Any], workspace_id: str, principal_id: str, conversation_id: str
) -> tuple[Workspace | None, Member | None, Conversation | None]:
    ws: Workspace | None = got[Ref.workspace(workspace_id)]
    member: Member | None = got[Ref.member(workspace_id, principal_id)]
    conv: Conversation | None = got[Ref.conversation(conversation_id)]
    return ws, member, conv


def _host(
    principal: Principal, got: dict[Ref, Any], workspace_id: str, conversation_id: str
) -> tuple[Workspace, Member | None, Conversation, str]:
    """The rows behind a conversation URL and the caller's standing there (not_found when it cannot see it)."""
    ws, member, conv = _host_rows(got, workspace_id, principal.public_id, conversation_id)
    standing = host_standing(principal, ws, member, conv)
    assert ws is not None and conv is not None
    return ws, member, conv, standing


def _alias_source(
    principal: Principal, ws: Workspace, member: Member | None, b: Binding, got: dict[Ref, Any]
) -> Source:
    """A root aliasing another conversation: writable only where the caller may write that conversation too."""
    assert b.conversation_public_id is not None
    alias: Conversation | None = got.get(Ref.conversation(b.conversation_public_id))
    alias_standing = conversation_standing(principal, ws, member, alias)
    if alias is None or alias_standing is None:
        return Source(b, None, False, "its conversation is missing or not visible to you")
    return Source(
        b,
        Anchor("conversation", alias.public_id),
        b.access == "read_write" and alias_standing == "write",
        archived=alias.archived,
    )


def frozen_binding(entry: dict[str, Any]) -> Binding:
    """The binding behind one frozen effective entry. A speaker entry always names its subject, so an
    inherited speaker root keeps the person it was captured for whichever agent answers next."""
    return Binding(
        entry["name"],
        entry["scope"],
        entry["access"],
        entry.get("conversation_public_id"),
        entry.get("speaker_public_id") if entry["scope"] == "speaker" else None,
    )


def frozen_anchor(entry: dict[str, Any]) -> Anchor:
    if entry["scope"] == "speaker":
        return Anchor("speaker", entry["agent_public_id"], entry["speaker_public_id"])
    return Anchor(entry["scope"], entry["anchor_public_id"])


def _execution_refs(ex: Execution, paths: tuple[MemoryPath, ...]) -> list[Ref]:
    """What a tool call reads besides the execution: standing, aliases, and the documents it names."""
    by_root = {e["name"]: e for e in ex.bindings}
    refs = _host_refs(ex.workspace_id, ex.principal_id, ex.conversation_id)
    refs += [Ref.conversation(e["conversation_public_id"]) for e in ex.bindings if e.get("conversation_public_id")]
    # Every anchor is known from the frozen entries, so the documents ride in the same round.
    refs += [Ref.document(frozen_anchor(by_root[mp.root]), mp.rest) for mp in paths if mp.root in by_root]
    return list(dict.fromkeys(refs))


# Execution rows are immutable once written, so a warm process reads each one once.
_EXECUTIONS: Lru[Execution] = Lru(4096, lambda _: 1)


@dataclass(frozen=True, slots=True)
class ExecutionStart:
    """What a new execution freezes: the sources resolved for it, who answers, its subject and its parent."""

    context: Context
    agent: Agent | None
    subject: Speaker | None
    parent: Execution | None


class Resolver:
    def __init__(self, store: Store) -> None:
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

    # ---- the conversation door ------------------------------------------------------------------

    def conversation(
        self,
        presented: PresentedToken | None,
        workspace_id: str,
        conversation_id: str,
        *,
        paths: tuple[MemoryPath, ...] = (),
        speaker_selector: str | None = None,
        write: bool = False,
    ) -> Context:
        presented = require_token(presented)
        pid = presented.principal_id
        refs = _host_refs(workspace_id, pid, conversation_id)
        if presented.principal_kind == "agent":
            refs.append(Ref.agent(pid))
        if speaker_selector:
            refs.append(Ref.speaker(speaker_selector))
        # Documents whose anchor the URL and the caller already fix ride along in the same batch.
        for mp in paths:
            if mp.root == "conversation":
                refs.append(Ref.document(Anchor("conversation", conversation_id), mp.rest))
            elif mp.root == "workspace":
                refs.append(Ref.document(Anchor("workspace", workspace_id), mp.rest))
            elif mp.root == "user" and presented.principal_kind == "human":
                refs.append(Ref.document(Anchor("user", pid), mp.rest))
        principal, got = self.first_round(presented, refs)
        ws, member, conv, standing = _host(principal, got, workspace_id, conversation_id)
        if write and standing != "write":
            raise ApiError("not_authorized", "You have read-only standing in this workspace: you cannot write here.")
        speaker = self._selected_speaker(principal, speaker_selector, got)
        sources = self._resolve_conversation_bindings(principal, ws, member, conv, speaker, got, standing)
        ctx = Context(self.store, principal, "conversation", sources, ws, conv, standing == "write", got)
        self._prefetch(ctx, paths)
        return ctx

    def _selected_speaker(self, principal: Principal, selector: str | None, got: dict[Ref, Any]) -> Speaker | None:
        if selector is None:
            return None
        speaker: Speaker | None = got.get(Ref.speaker(selector))
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

    def effective_bindings(self, conv: Conversation, agent: Agent | None) -> tuple[Binding, ...]:
        bindings = configured_bindings(conv.memory_context)
        if agent is not None:
            bindings = apply_limit(bindings, agent.memory_context_limit)
        return bindings

    def _resolve_conversation_bindings(
        self,
        principal: Principal,
        ws: Workspace,
        member: Member | None,
        conv: Conversation,
        speaker: Speaker | None,
        got: dict[Ref, Any],
        standing: str,
    ) -> dict[str, Source]:
        # Second round: the rows the bindings point at that the first round could not name.
        configured = configured_bindings(conv.memory_context)
        need: list[Ref] = []
        if conv.answering_agent_id and Ref.agent(conv.answering_agent_id) not in got:
            need.append(Ref.agent(conv.answering_agent_id))
        for b in configured:
            if b.conversation_public_id:
                need.append(Ref.conversation(b.conversation_public_id))
            if b.speaker_public_id:
                need.append(Ref.speaker(b.speaker_public_id))
        need = [r for r in need if r not in got]
        if need:
            got.update(self.store.get_many(need))
        agent: Agent | None = got.get(Ref.agent(conv.answering_agent_id)) if conv.answering_agent_id else None
        bindings = self.effective_bindings(conv, agent)
        return self._bind_sources(principal, ws, member, conv, agent, speaker, bindings, got, standing)

    def _bind_sources(
        self,
        principal: Principal,
        ws: Workspace,
        member: Member | None,
        conv: Conversation,
        agent: Agent | None,
        speaker: Speaker | None,
        bindings: tuple[Binding, ...],
        got: dict[Ref, Any],
        standing: str,
    ) -> dict[str, Source]:
        """Resolve bindings against a host conversation and its answerer: the door's and a new execution's."""
        host_write = standing == "write"
        # agent/ and speaker/ rows are the answering agent's own: only it, or the Human who stewards it,
        # may reach them through a conversation. A sibling agent or another member never does.
        owns_agent = agent is not None and (
            (principal.kind == "agent" and principal.public_id == agent.public_id)
            or (principal.kind == "human" and principal.public_id == agent.steward_id)
        )
        out: dict[str, Source] = {}
        for b in bindings:
            rw = b.access == "read_write"
            if b.scope == "conversation":
                if b.conversation_public_id is None:
                    out[b.name] = Source(b, Anchor("conversation", conv.public_id), rw and host_write)
                else:
                    out[b.name] = _alias_source(principal, ws, member, b, got)
            elif b.scope == "workspace":
                out[b.name] = Source(b, Anchor("workspace", ws.public_id), rw and host_write)
            elif b.scope == "user":
                if principal.kind != "human":
                    out[b.name] = Source(b, None, False, "user/ belongs to a Human caller; an agent has none")
                else:
                    out[b.name] = Source(b, Anchor("user", principal.public_id), rw)
            elif b.scope == "agent":
                if agent is None:
                    out[b.name] = Source(b, None, False, "this conversation is answered by a Human, not an agent")
                elif not owns_agent:
                    out[b.name] = Source(b, None, False, "agent/ belongs to the answering agent and its steward")
                else:
                    out[b.name] = Source(b, Anchor("agent", agent.public_id), rw, agent_public_id=agent.public_id)
            else:  # speaker
                subject_id = b.speaker_public_id or (speaker.public_id if speaker else None)
                subject: Speaker | None = got.get(Ref.speaker(subject_id)) if subject_id else None
                if agent is None:
                    out[b.name] = Source(b, None, False, "this conversation is answered by a Human, not an agent")
                elif subject is None or subject.account_id != agent.account_id:
                    out[b.name] = Source(
                        b,
                        None,
                        False,
                        "no speaker is selected (bind speaker_public_id or send one with the request)",
                        agent_public_id=agent.public_id,
                    )
                elif not owns_agent:
                    out[b.name] = Source(b, None, False, "speaker/ belongs to the answering agent and its steward")
                else:
                    out[b.name] = Source(
                        b,
                        Anchor("speaker", agent.public_id, subject.public_id),
                        rw,
                        agent_public_id=agent.public_id,
                        speaker_public_id=subject.public_id,
                    )
        return out

    def _prefetch(self, ctx: Context, paths: tuple[MemoryPath, ...]) -> None:
        missing: list[Ref] = []
        for mp in paths:
            src = ctx.sources.get(mp.root)
            if src is not None and src.anchor is not None:
                ref = Ref.document(src.anchor, mp.rest)
                if ref not in ctx.loaded:
                    missing.append(ref)
        if missing:
            ctx.loaded.update(self.store.get_many(missing))

    # ---- the workspace door ---------------------------------------------------------------------

    def workspace(
        self,
        presented: PresentedToken | None,
        workspace_id: str,
        *,
        paths: tuple[MemoryPath, ...] = (),
        speaker_selector: str | None = None,
        write: bool = False,
    ) -> Context:
        presented = require_token(presented)
        refs = [Ref.workspace(workspace_id), Ref.member(workspace_id, presented.principal_id)]
        refs += [Ref.document(Anchor("workspace", workspace_id), mp.rest) for mp in paths if mp.root == "workspace"]
        if speaker_selector:
            refs.append(Ref.speaker(speaker_selector))
        principal, got = self.first_round(presented, refs)
        ws: Workspace | None = got[Ref.workspace(workspace_id)]
        role = workspace_role(principal, ws, got[Ref.member(workspace_id, principal.public_id)])
        if role is None:
            raise not_found("workspace")
        if write and role != "member":
            raise ApiError("not_authorized", "You have read-only standing in this workspace: you cannot write here.")
        # This door has no speaker/ root, but the selector is still checked: same verbs, same refusals.
        self._selected_speaker(principal, speaker_selector, got)
        binding = Binding("workspace", "workspace", "read_write")
        src = Source(binding, Anchor("workspace", workspace_id), role == "member")
        return Context(self.store, principal, "workspace", {"workspace": src}, ws, None, role == "member", got)

    # ---- the profile doors ----------------------------------------------------------------------

    def profile(
        self,
        presented: PresentedToken | None,
        *,
        paths: tuple[MemoryPath, ...] = (),
        speaker_selector: str | None = None,
    ) -> Context:
        presented = require_token(presented)
        pid = presented.principal_id
        if presented.principal_kind == "human":
            anchor, binding = Anchor("user", pid), Binding("user", "user", "read_write")
        else:
            anchor, binding = Anchor("agent", pid), Binding("agent", "agent", "read_write")
        refs = [Ref.document(anchor, mp.rest) for mp in paths if mp.root == binding.name]
        if speaker_selector:
            refs.append(Ref.speaker(speaker_selector))
        principal, got = self.first_round(presented, refs)
        self._selected_speaker(principal, speaker_selector, got)
        src = Source(binding, anchor, True, agent_public_id=pid if binding.scope == "agent" else None)
        return Context(self.store, principal, "profile", {binding.name: src}, None, None, True, got)

    def definition(
        self,
        presented: PresentedToken | None,
        agent: Agent | None,
        principal: Principal,
        speaker_selector: str | None = None,
    ) -> Context:
        """The steward's door to a named definition's agent/ rows (the agent row is looked up by name first)."""
        if agent is None or agent.kind != "definition" or agent.steward_id != principal.public_id:
            raise not_found("agent definition")
        if speaker_selector is not None:
            # Only a Human reaches this door, and a Human controls no Speaker.
            self._selected_speaker(principal, speaker_selector, {})
        binding = Binding("agent", "agent", "read_write")
        src = Source(binding, Anchor("agent", agent.public_id), True, agent_public_id=agent.public_id)
        return Context(self.store, principal, "definition", {"agent": src}, None, None, True, {})

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
        ws, member, conv, standing = _host(principal, got, workspace_id, conversation_id)
        if standing != "write":
            raise ApiError("not_authorized", "Starting an execution needs write standing on the conversation.")
        if conv.archived:
            raise ApiError("conversation_archived", "The conversation is archived: it accepts no new executions.")
        parent: Execution | None = None
        if parent_id:
            parent = got[Ref.execution(parent_id)]
            if parent is None or parent.account_id != principal.account_id or parent.workspace_id != ws.public_id:
                raise not_found("parent execution")
            if speaker_id:
                raise ApiError(
                    "parameter_invalid",
                    "A child execution keeps its parent's subject: leave execution.speaker_public_id out.",
                )
        if delegate_id:
            delegate: Agent | None = got[Ref.agent(delegate_id)]
            if delegate is None or delegate.account_id != principal.account_id:
                raise not_found("agent")
        agent_id = delegate_id or conv.answering_agent_id
        configured = (
            tuple(frozen_binding(e) for e in parent.bindings) if parent else configured_bindings(conv.memory_context)
        )
        # Second round: the answerer, the parent's conversation, aliases and subjects.
        need: list[Ref] = []
        if agent_id:
            need.append(Ref.agent(agent_id))
        if parent is not None:
            need.append(Ref.conversation(parent.conversation_id))
            if parent.speaker_id:
                need.append(Ref.speaker(parent.speaker_id))
        need += [Ref.conversation(b.conversation_public_id) for b in configured if b.conversation_public_id]
        need += [Ref.speaker(b.speaker_public_id) for b in configured if b.speaker_public_id]
        need = [r for r in dict.fromkeys(need) if r not in got]
        if need:
            got.update(self.store.get_many(need))
        if (
            parent is not None
            and conversation_standing(principal, ws, member, got[Ref.conversation(parent.conversation_id)]) is None
        ):
            raise not_found("parent execution")
        subject: Speaker | None = None
        if parent is not None:
            subject = got.get(Ref.speaker(parent.speaker_id)) if parent.speaker_id else None
        elif speaker_id:
            subject = got[Ref.speaker(speaker_id)]
            initiator = conv.answering_agent_id
            if subject is None or subject.account_id != principal.account_id or subject.agent_id != initiator:
                raise ApiError(
                    "not_authorized",
                    "speaker_public_id must name an existing Speaker controlled by the conversation's answering agent.",
                )
        agent: Agent | None = got.get(Ref.agent(agent_id)) if agent_id else None
        bindings = apply_limit(configured, agent.memory_context_limit) if agent is not None else configured
        sources = self._bind_sources(principal, ws, member, conv, agent, subject, bindings, got, standing)
        ctx = Context(self.store, principal, "execution", sources, ws, conv, True, got)
        return ExecutionStart(ctx, agent, subject, parent)

    def execution(
        self,
        execution_id: str,
        presented: PresentedToken | None,
        *,
        trusted: bool = False,
        paths: tuple[MemoryPath, ...] = (),
    ) -> tuple[Execution, Context]:
        """Open an accepted execution for a tool call, from its frozen bindings.

        Over HTTP the bearer must be the execution's principal. `trusted` is the in-account Lambda path,
        where IAM already vouched for the caller and the row names the principal. Either way the
        principal's standing is read again now: freezing the configuration never freezes authority.
        """
        # The row never changes once written, so a warm function keeps it and the call costs one round
        # trip: the token and the principal's current standing are still read every time.
        ex = _EXECUTIONS.get(execution_id)
        eref = Ref.execution(execution_id)
        refs = [eref] if ex is None else _execution_refs(ex, paths)
        if not trusted:
            presented = require_token(presented)
            refs.append(Ref.token(presented.digest))
        got = self.store.get_many(refs)
        if ex is None:
            ex = got[eref]
        if not trusted:
            assert presented is not None
            caller = authenticate(presented, got[Ref.token(presented.digest)])
            if ex is not None and (caller.kind, caller.public_id) != (ex.principal_kind, ex.principal_id):
                ex = None
        if ex is None:
            raise not_found("execution")
        if eref in got:
            _EXECUTIONS.put(ex.public_id, ex)
            got.update(self.store.get_many(_execution_refs(ex, paths)))
        principal = Principal(ex.principal_kind, ex.principal_id, ex.account_id)
        ws, member, conv = _host_rows(got, ex.workspace_id, ex.principal_id, ex.conversation_id)
        standing = conversation_standing(principal, ws, member, conv)
        if standing is None:
            raise ApiError("not_authorized", "The execution's principal no longer has standing in its conversation.")
        assert ws is not None and conv is not None
        host_write = standing == "write"
        sources: dict[str, Source] = {}
        for e in ex.bindings:
            b = frozen_binding(e)
            rw = b.access == "read_write"
            anchor = frozen_anchor(e)
            if b.scope == "conversation" and b.conversation_public_id:
                # The frozen anchor of an alias is the aliased conversation itself.
                sources[b.name] = _alias_source(principal, ws, member, b, got)
            elif b.scope in ("conversation", "workspace"):
                sources[b.name] = Source(b, anchor, rw and host_write)
            else:
                # user/, agent/ and speaker/ were checked as the principal's own when the execution began,
                # and ownership of those rows never changes hands.
                sources[b.name] = Source(
                    b,
                    anchor,
                    rw,
                    agent_public_id=e.get("agent_public_id"),
                    speaker_public_id=e.get("speaker_public_id"),
                )
        return ex, Context(self.store, principal, "execution", sources, ws, conv, host_write, got)
