"""Idempotency-Key at the door: open a keyed request's guard, and record answers that change nothing.

Reading the record costs the first attempt one batch read (the caller's token and the record together,
the record used only once the token holds); a replay costs that one read and nothing else.
"""

from __future__ import annotations

from agent_memory.core.idempotency import Answer, Guard, fingerprint, judge, new_guard, withheld
from agent_memory.core.ports import Ref
from agent_memory.domain.directory.service import require_operator
from agent_memory.edges import services
from agent_memory.edges.http.glue import Reply, Request
from agent_memory.edges.http.secrets import operator_key


def open_guard(req: Request, key: str) -> Guard:
    """The guard of a keyed request, after replaying or refusing what its key already answered."""
    body = req.body
    if req.route.name == "call_tool" and "idempotency_key" in body:
        body = {k: v for k, v in body.items() if k != "idempotency_key"}
    if req.body_error is not None:
        body = {"unreadable_body": req.body_error.message}
    print_ = fingerprint(req.method, req.route.name, req.params, body)
    if req.route.needs_token:
        token = req.token
        if token is None:  # dispatch refused this already
            raise LookupError("a token route without a token")
        guard = new_guard(token.principal_id, key, print_)
        ref = Ref.idempotency(guard.scope, guard.key_digest)
        _, got = services.resolver().first_round(token, [ref])
    else:
        # The operator's routes: the key proves who asks, so it is checked before any record is read.
        presented = req.headers.get("x-operator-key")
        require_operator(operator_key() if presented else None, presented)
        guard = new_guard("operator", key, print_)
        ref = Ref.idempotency(guard.scope, guard.key_digest)
        got = services.resolver().store.get_many([ref])
    judge(guard, got[ref])
    return guard


def record_reply(guard: Guard, reply: Reply) -> Answer | None:
    """Record an answer that changed nothing; the key's earlier answer when it already has one."""
    guard.answer = Answer(reply.status, withheld(reply.body))
    found = services.store().record_answer(guard.record())
    if found is None:
        return None
    return found.answer if found.fingerprint == guard.fingerprint else None


def open_tool_guard(
    execution_id: str, tool: str, raw_input: object, key: str, secret: str | None, token: str | None
) -> Guard:
    """The guard of a keyed call of the in-account tool function, scoped to the caller it proves to be.

    A call proven by the execution's secret is scoped to that execution (whose principal is fixed), and
    the secret is checked before any record is used."""
    from agent_memory.core.ids import digests_equal, parse_token, token_digest
    from agent_memory.core.resolver import _unauthenticated

    print_ = fingerprint("INVOKE", "tool_invoke", {"execution": execution_id, "tool": tool}, raw_input)
    store = services.resolver().store
    presented = parse_token(token) if token else None
    if presented is not None and not secret:
        guard = new_guard(presented.principal_id, key, print_)
        ref = Ref.idempotency(guard.scope, guard.key_digest)
        _, got = services.resolver().first_round(presented, [ref])
    else:
        guard = new_guard(f"execution:{execution_id}", key, print_)
        ref = Ref.idempotency(guard.scope, guard.key_digest)
        eref = Ref.execution(execution_id)
        got = store.get_many([eref, ref])
        ex = got[eref]
        if ex is None or not digests_equal(ex.secret_digest or "", token_digest(secret or "")):
            raise _unauthenticated()
    judge(guard, got[ref])
    return guard
