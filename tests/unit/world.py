"""A caller, a workspace and a conversation over any store, with the real resolver and memory services.

The same builder runs on the in-memory fake (tests/fakes.py) and on the moto-backed store, so a scenario
can be played on both (test_fake_parity.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from agent_memory.core.budget import Budgets
from agent_memory.core.context import Context
from agent_memory.core.ids import PresentedToken, mint_token, now_iso, parse_token, uuid7
from agent_memory.core.model import (
    DEFAULT_VERSIONS_KEPT,
    Account,
    Conversation,
    Human,
    Member,
    Role,
    TokenRow,
    Workspace,
)
from agent_memory.core.paths import MemoryPath, parse_document_path
from agent_memory.core.ports import IdempotencyRecords, ResolverStore
from agent_memory.core.resolver import Resolver
from agent_memory.domain.memory.block import BlockService
from agent_memory.domain.memory.history import HistoryService
from agent_memory.domain.memory.service import MemoryService
from agent_memory.domain.memory.skills import SkillService


class Seedable(ResolverStore, IdempotencyRecords, Protocol):
    """What a world is built on: the resolver's ports and the directory creates that seed its rows (and the
    idempotency records, which the parity scenario stores)."""

    def create_account(self, account: Account, human: Human, token: TokenRow) -> None: ...
    def create_human(self, human: Human, token: TokenRow) -> None: ...
    def create_workspace(self, workspace: Workspace, member: Member) -> None: ...
    def put_member(self, member: Member) -> None: ...
    def create_conversation(self, conversation: Conversation) -> None: ...


@dataclass(slots=True)
class World:
    store: Seedable
    resolver: Resolver
    memory: MemoryService
    history: HistoryService
    presented: PresentedToken
    account_id: str
    workspace_id: str
    conversation_id: str
    block: BlockService = field(default_factory=BlockService)
    skills: SkillService = field(default_factory=SkillService)

    def ctx(
        self, *paths: str, write: bool = False, who: PresentedToken | None = None, versions: tuple[int, ...] = ()
    ) -> Context:
        """The conversation door's Context, loading `paths` (and their `versions` records) with the caller's
        rows, as a route does."""
        return self.resolver.conversation(
            who or self.presented,
            self.workspace_id,
            self.conversation_id,
            paths=tuple(path(p) for p in paths),
            write=write,
            versions=versions,
        )

    def workspace_ctx(self, *paths: str) -> Context:
        return self.resolver.workspace(self.presented, self.workspace_id, paths=tuple(path(p) for p in paths))

    def member(self, role: Role) -> PresentedToken:
        """Another Human of the account, in the workspace with `role`."""
        human_id = uuid7()
        token, digest = mint_token("human", human_id)
        self.store.create_human(
            Human(human_id, self.account_id, "Bo", now_iso(), digest),
            TokenRow(digest, "human", human_id, self.account_id, "Bo"),
        )
        self.store.put_member(Member(self.workspace_id, "human", human_id, role, now_iso()))
        presented = parse_token(token)
        assert presented is not None
        return presented


def path(p: str) -> MemoryPath:
    return parse_document_path(p)


def build(
    store: Seedable,
    *,
    budgets: Budgets | None = None,
    versions_kept: int = DEFAULT_VERSIONS_KEPT,
    archived: bool = False,
) -> World:
    """A Human (curator of a workspace) and a conversation of theirs, seeded through the store's creates."""
    human_id, account_id, workspace_id, conversation_id = uuid7(), uuid7(), uuid7(), uuid7()
    token, digest = mint_token("human", human_id)
    store.create_account(
        Account(account_id, "acme", now_iso(), human_id),
        Human(human_id, account_id, "Ada", now_iso(), digest),
        TokenRow(digest, "human", human_id, account_id, "Ada"),
    )
    store.create_workspace(
        Workspace(workspace_id, account_id, "room", now_iso(), created_by=human_id),
        Member(workspace_id, "human", human_id, "curator", now_iso()),
    )
    store.create_conversation(
        Conversation(conversation_id, workspace_id, account_id, human_id, now_iso(), archived=archived)
    )
    presented = parse_token(token)
    assert presented is not None
    memory = MemoryService(budgets, versions_kept)
    return World(
        store,
        Resolver(store),
        memory,
        HistoryService(memory),
        presented,
        account_id,
        workspace_id,
        conversation_id,
    )
