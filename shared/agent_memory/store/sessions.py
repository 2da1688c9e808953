"""Console sessions: one item each, keyed by the digest of the cookie's random id, removed by TTL."""

from __future__ import annotations

from agent_memory.api.errors import ApiError
from agent_memory.core.model import ConsoleSession
from agent_memory.store import kinds
from agent_memory.store.clients import Backend
from agent_memory.store.commit import Refusals, read, write_one


class ConsoleSessions(Backend):
    """Open, read and end console sessions (edges/http/console.py)."""

    def open_session(self, session: ConsoleSession) -> None:
        refused = Refusals(otherwise=lambda: ApiError("already_exists", "That session already exists; sign in again."))
        write_one(self.ddb, ("session", self._new(kinds.CONSOLE_SESSION.item(session))), refused)

    def console_session(self, session_digest: str, now: float) -> ConsoleSession | None:
        """The session, or None when there is none or it has expired (TTL removes items late: up to days)."""
        pk, sk = kinds.CONSOLE_SESSION.key(session_digest=session_digest)
        got = read(
            lambda: self.ddb.get_item(TableName=self.table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True)
        )
        item = got.get("Item")
        if item is None:
            return None
        session = kinds.CONSOLE_SESSION.read(item)
        return session if session.expires_at > now else None

    def end_session(self, session_digest: str) -> None:
        """Delete the session; ending one that is already gone changes nothing."""
        pk, sk = kinds.CONSOLE_SESSION.key(session_digest=session_digest)
        body = {"TableName": self.table, "Key": {"pk": {"S": pk}, "sk": {"S": sk}}}
        write_one(self.ddb, ("session", {"Delete": body}), Refusals())
