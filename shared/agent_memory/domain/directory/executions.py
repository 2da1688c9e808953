"""Executions: one accepted model run with its memory configuration frozen at the moment it began.

The resolver (with core/access.py) decides what the run may reach; this module stores that decision as
a row so that every later tool call (over HTTP or through the in-account Lambda) works from the same
bindings, whatever happens to the conversation's configuration afterwards.
"""

from __future__ import annotations

import math
import secrets
from typing import TYPE_CHECKING, Any

from agent_memory.api.contract import TOOL_NAMES
from agent_memory.api.errors import ApiError
from agent_memory.core import access, clock
from agent_memory.core.budget import Budgets
from agent_memory.core.context import Context
from agent_memory.core.idempotency import settle
from agent_memory.core.ids import PresentedToken, now_iso, token_digest, uuid7
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.mail import mail_mounts
from agent_memory.core.model import DEFAULT_EXECUTION_TTL_SECONDS, Execution
from agent_memory.core.ports import ExecutionStore
from agent_memory.core.resolver import ExecutionStart, Resolver

if TYPE_CHECKING:
    from agent_memory.domain.memories.service import MemoriesService


@dataclass(frozen=True, slots=True)
class NewExecution:
    execution: Execution
    # Shown once: the in-account tool function accepts it in place of the principal's token.
    secret: str


class ExecutionService:
    def __init__(
        self,
        store: ExecutionStore,
        resolver: Resolver,
        budgets: Budgets | None = None,
        ttl_seconds: int = DEFAULT_EXECUTION_TTL_SECONDS,
        memories: MemoriesService | None = None,
    ) -> None:
        self.memories = memories
        self.store = store
        self.resolver = resolver
        self.budgets = budgets or Budgets()
        self.ttl_seconds = ttl_seconds

    def create(
        self,
        presented: PresentedToken | None,
        workspace_id: str,
        conversation_id: str,
        *,
        speaker_id: str | None = None,
        parent_id: str | None = None,
        delegate_id: str | None = None,
        tools: list[str] | None = None,
        capabilities: list[Any] | None = None,
        mail_from_id: str | None = None,
    ) -> NewExecution:
        """`tools` None offers every tool; [] none (a direct reply). `capabilities` configures the session's
        mounts (mounts.py), checked before anything is read."""
        from agent_memory.domain.memories.mounts import plan, requested_mounts

        requests = requested_mounts(capabilities)
        if mail_from_id is not None:
            start = self._mail_start(
                presented, workspace_id, conversation_id, mail_from_id, speaker_id, parent_id, delegate_id
            )
        else:
            start = self.resolver.new_execution(
                presented,
                workspace_id,
                conversation_id,
                speaker_id=speaker_id,
                parent_id=parent_id,
                delegate_id=delegate_id,
            )
        ctx: Context = start.context
        if ctx.workspace is None or ctx.conversation is None:  # new_execution always loads both
            raise access.not_found("conversation")
        # The answering agent's Memories, each mounted only as far as the caller reaches it itself (mounts.plan).
        agent_memories = [] if start.agent is None or self.memories is None else self.memories.effective_of(start.agent)
        reach = self.resolver.memory_reach
        mounts = plan(ctx, requests, lambda mem: reach(ctx, mem), agent_memories)
        if start.mail_from is not None:
            mounts = mail_mounts(mounts, start.mail_from.mounts)
        secret = secrets.token_urlsafe(32)
        ex = Execution(
            public_id=uuid7(),
            workspace_id=ctx.workspace.public_id,
            conversation_id=ctx.conversation.public_id,
            account_id=ctx.principal.account_id,
            agent_id=start.agent.public_id if start.agent else None,
            principal_kind=ctx.principal.kind,
            principal_id=ctx.principal.public_id,
            speaker_id=start.subject.public_id if start.subject else None,
            # Only what resolved is frozen: a root unavailable now stays out for the whole run.
            bindings=[s.frozen() for s in ctx.readable()],
            tools=list(TOOL_NAMES) if tools is None else tools,
            created_at=now_iso(),
            parent_id=start.parent.public_id if start.parent else None,
            # Rounded up: an execution lives at least its whole lifetime.
            expires_at=math.ceil(clock.now()) + self.ttl_seconds,
            secret_digest=token_digest(secret),
            principal_name=ctx.author().name,
            mounts=mounts,
            mail_from_id=start.mail_from.public_id if start.mail_from else None,
            # Its parent and the parent's own ancestors: a stop of any of them reaches this one at call time.
            ancestors=list(start.parent.lineage) if start.parent else [],
        )
        budget = self.budgets.of(ctx.principal)
        if budget is not None:
            self.store.spend(budget)
        out = NewExecution(ex, secret)
        settle(out)
        self.store.create_execution(ex)
        return out

    def _mail_start(
        self,
        presented: PresentedToken | None,
        workspace_id: str,
        conversation_id: str,
        mail_from_id: str,
        speaker_id: str | None,
        parent_id: str | None,
        delegate_id: str | None,
    ) -> ExecutionStart:
        """Peer mail: its subject is the sender's and its answerer the receiving conversation's."""
        for given, field in (
            (speaker_id, "speaker_public_id"),
            (parent_id, "parent_execution_public_id"),
            (delegate_id, "delegate_to_agent_public_id"),
        ):
            if given is not None:
                raise ApiError(
                    "parameter_invalid",
                    f"Mail keeps the sender's subject and the receiving conversation's answerer: leave "
                    f"execution.{field} out when execution.mail_from_execution_public_id is given.",
                )
        return self.resolver.mail_execution(presented, workspace_id, conversation_id, mail_from_id)

    def stop(self, presented: PresentedToken | None, execution_id: str) -> Execution:
        """Stop an execution for good: its later tool calls, its block and any spawn from it are refused
        `execution_stopped`, and so are those of every execution spawned from it, each of which checks its
        ancestors' marks at call time (no fan-out here). Stopping a stopped execution changes nothing."""
        ex, principal, already = self.resolver.execution_to_stop(presented, execution_id)
        if already:
            return ex
        budget = self.budgets.of(principal)
        if budget is not None:
            self.store.spend(budget)
        now = clock.now()
        # The mark must outlive every execution it stops. None can be spawned below this one once the mark
        # is there, so each descendant began before `now` (or at most a request's length after, if its spawn
        # raced the stop) and expires within a lifetime of it; an hour covers the race and a clock's skew.
        keep_until = math.ceil(max(now, ex.expires_at)) + self.ttl_seconds + 3600
        settle(ex)
        self.store.stop_execution(ex, principal.public_id, now, keep_until)
        return ex
