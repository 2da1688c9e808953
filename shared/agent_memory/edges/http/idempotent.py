"""Idempotency-Key at the doors: open a keyed request's unit of work, scoped to the caller it proves to be.

Reading the record costs the first attempt one batch read (the caller's token and the record together,
the record used only once the token holds); a replay costs that one read and nothing else.
"""

from __future__ import annotations

from agent_memory.core.idempotency import KEY_FIELD, UnitOfWork, fingerprint, judge, unit_of_work, without_key
from agent_memory.core.ports import Ref
from agent_memory.domain.directory.service import require_operator
from agent_memory.edges import services
from agent_memory.edges.http.glue import Request
from agent_memory.edges.http.secrets import operator_key


def open_request(req: Request, key: str) -> UnitOfWork:
    """The unit of work of a keyed HTTP request, after replaying or refusing what its key already answered."""
    body = req.body
    if req.route.name == "call_tool":
        # The key is not part of the request it names, wherever it was carried.
        body = {k: without_key(v) if k == "input" else v for k, v in body.items() if k != KEY_FIELD}
    if req.body_error is not None:
        body = {"unreadable_body": req.body_error.message}
    print_ = fingerprint(req.method, req.route.name, req.params, body)
    if req.route.needs_token:
        token = req.token
        if token is None:  # dispatch refused this already
            raise LookupError("a token route without a token")
        uow = unit_of_work(token.principal_id, key, print_)
        ref = Ref.idempotency(uow.scope, uow.key_digest)
        _, got = services.resolver().first_round(token, [ref])
    else:
        # The operator's routes: the key proves who asks, so it is checked before any record is read.
        presented = req.headers.get("x-operator-key")
        require_operator(operator_key() if presented else None, presented)
        uow = unit_of_work("operator", key, print_)
        ref = Ref.idempotency(uow.scope, uow.key_digest)
        got = services.resolver().store.get_many([ref])
    judge(uow, got[ref])
    return uow
