"""The keyed runner: every entry that serves an Idempotency-Key runs its request through `run`.

The HTTP routes (edges/http/lambda_entry.py) and the in-account tool function (edges/tools/lambda_entry.py)
differ only in how they prove the caller and how they render an answer; what a key does is here, once:

1. open the request's unit of work (the entry's `open_`), which replays or refuses what the key already
   answered;
2. run the request with that unit of work bound, so the service's decisive commit carries the answer
   (core/idempotency.py, store/commit.py);
3. record on its own an answer that changed nothing (a read, a refusal, a tool's refusal told to the
   model), so a retry sees the same; an answer that is not final (5xx, 429, a storage fault told to a
   model) is never recorded, so a retry runs again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from agent_memory.api.errors import ApiError
from agent_memory.core.idempotency import Answer, Replayed, UnitOfWork, bound, final, withheld
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.edges import services

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Replay:
    """The key already answered this request: send that answer again."""

    answer: Answer


@dataclass(frozen=True, slots=True)
class Keyed(Generic[R]):
    """How one entry serves a keyed request."""

    # The request's unit of work, after its key's earlier answer was judged (raises Replayed to replay it).
    open_: Callable[[], UnitOfWork]
    # Runs the request in the unit of work (the entry says, through `UnitOfWork.viewing`, how a result renders).
    attempt: Callable[[UnitOfWork], R]
    # What the entry's answer records as.
    answer_of: Callable[[R], Answer]
    # Whether a refusal (a 4xx ApiError) is recorded too: the HTTP routes answer it as the key's answer,
    # while a tool tells its refusals to the model as results and lets a refused call itself run again.
    refusals: bool = True


def record(uow: UnitOfWork, answer: Answer) -> Answer | None:
    """Record an answer that changed nothing; the key's earlier answer when it already has one."""
    uow.answer = Answer(answer.status, withheld(answer.body))
    found = services.store().record_answer(uow.record())
    if found is None:
        return None
    return found.answer if found.fingerprint == uow.fingerprint else None


def run(keyed: Keyed[R]) -> R | Replay:
    """Serve a keyed request once: its answer, or the answer its key already holds."""
    try:
        uow = keyed.open_()
    except Replayed as done:
        return Replay(done.answer)
    try:
        with bound(uow):
            out = keyed.attempt(uow)
    except Replayed as done:
        # A duplicate committed first: its commit refused this one on the key's record.
        return Replay(done.answer)
    except ApiError as err:
        if keyed.refusals and not uow.stored and not err.retryable:
            # A failure to store the refusal's record raises instead: answering the refusal then would let
            # a retry run again and succeed.
            found = record(uow, Answer(err.status, err.body()))
            if found is not None:
                return Replay(found)
        raise
    answer = keyed.answer_of(out)
    if not uow.stored and final(answer.status, answer.body):
        found = record(uow, answer)
        if found is not None:
            return Replay(found)
    return out
