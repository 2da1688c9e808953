"""Write budgets: how many mutations a caller, its account and its source address may make a minute.

Every mutation spends from three meters: the principal's (the seed's ordinary caller budget), its
account's (so minting principals does not mint budget) and the source address's (the seed's broad
backstop). A mutation spends them once, before its commit and outside it (one conditional update per
meter, sent together, alongside a content write's upload), so the commit carries no meter item. Reads are
never metered here: they keep their one-request floor, and the API's stage throttling bounds them instead
(docs/decisions.md).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

from agent_memory.core.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from agent_memory.core.model import Meter, Principal, WriteBudget

# The request's source address, set by the HTTP glue for the request's thread; None off HTTP.
ORIGIN: ContextVar[str | None] = ContextVar("agent_memory_origin", default=None)


@dataclass(frozen=True, slots=True)
class Budgets:
    """Writes per minute for each meter; None turns a meter off."""

    per_principal: int | None = None
    per_account: int | None = None
    per_origin: int | None = None

    def of(self, principal: Principal) -> WriteBudget | None:
        # Imported here: the HTTP glue imports this module (for ORIGIN) in every route's Lambda, and a
        # route that never spends a budget should not load model.py's fifty dataclasses at import.
        from agent_memory.core.model import Meter, WriteBudget

        meters: list[Meter] = []
        if self.per_principal is not None:
            meters.append(Meter("principal", principal.public_id, self.per_principal))
        if self.per_account is not None:
            meters.append(Meter("account", principal.account_id, self.per_account))
        origin = ORIGIN.get()
        if self.per_origin is not None and origin:
            meters.append(Meter("origin", origin, self.per_origin))
        return WriteBudget(tuple(meters)) if meters else None
