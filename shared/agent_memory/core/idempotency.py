"""Safe retries: an Idempotency-Key makes a mutation happen once and answer the same way every time.

A request with a key is fingerprinted (method, route, path parameters, body as parsed JSON) and scoped to
its principal. Its answer is recorded in the SAME DynamoDB transaction as the change it guards, so a
function that dies after its commit leaves a record a retry replays, and one that dies before leaves
nothing a retry could trip on. To record the answer in that transaction it must be known before the
commit. One keyed runner (edges/keyed.py) serves every entry (the HTTP routes, the in-account tool
function): it opens the request's `UnitOfWork`, the entry says how a result becomes the answer
(`UnitOfWork.viewing`, with the route's own success status), a layer that reshapes results on the way out
adds an adapter (`adapting`), and the service calls `settle(result)` just before its decisive commit. The
store adds the record to that commit (store/commit.py), and refuses a keyed decisive commit whose answer
was never settled, so no change commits without its record.

Refusals change nothing, so there is nothing to be atomic with: their record is stored after them.
5xx and 429 answers are never recorded, so a retry runs again. Secrets are never stored: a recorded
answer has every `token` and `secret` field set to null and says `"secret_withheld": true`. Nor is
content: a record outlives a redaction or a deletion by up to a day, so a document's, version's or
record's text and a store entry's value are set to null in it and named in `"text_withheld"`; a replay
reads them again through the route's own read (`refill`), so it shows what is still there and nothing
that was removed.

This module knows no boto3 and no HTTP: an answer is a status and a body, whatever the entry renders.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import field
from typing import Any

from agent_memory.api.errors import CATALOGUE, ApiError, retryable_status
from agent_memory.core import clock
from agent_memory.core.lazy_dataclass import dataclass

# A key is 1-128 printable ASCII characters (space to tilde).
KEY_RE = re.compile(r"[\x20-\x7e]{1,128}\Z")
TTL_SECONDS = 24 * 3600
SECRET_FIELDS = frozenset({"token", "secret"})
# The recorded answer's list of the text fields it left out, as dotted paths ("memory.content").
TEXT_WITHHELD = "text_withheld"


@dataclass(frozen=True, slots=True)
class Answer:
    """A recorded final answer: what a replay sends again."""

    status: int
    body: Any


@dataclass(frozen=True, slots=True)
class Record:
    """A stored idempotency record (a row of the store)."""

    scope: str
    key_digest: str
    fingerprint: str
    answer: Answer
    expires_at: int


@dataclass(slots=True)
class UnitOfWork:
    """One keyed request in flight: what its key answers, and whether the commit carrying that answer ran.

    Made by the keyed runner (edges/keyed.py) and handed to the entry that serves the request, which says
    how a result becomes the answer (`viewing`). Services reach it only through `settle`, and the store only
    through `carried`: a decisive commit of a keyed request without its settled answer is refused as the bug
    it is (store/commit.py), so a service that forgets `settle` cannot lose the answer's atomicity silently.
    """

    scope: str
    key_digest: str
    fingerprint: str
    expires_at: int
    # Result -> rendered answer; set by the entry (`viewing`). Adapters reshape a result on the way out,
    # innermost last (a tool turns a document into its result for the model, which the entry then renders).
    view: Callable[[Any], Answer] | None = None
    adapters: list[Callable[[Any], Any]] = field(default_factory=list)
    # The rendered answer, once the service settled its result; `stored` once a commit carried it.
    answer: Answer | None = None
    stored: bool = False

    def record(self) -> Record:
        if self.answer is None:
            raise RuntimeError("no answer settled")
        return Record(self.scope, self.key_digest, self.fingerprint, self.answer, self.expires_at)

    @contextmanager
    def viewing(self, view: Callable[[Any], Answer]) -> Iterator[None]:
        """Within the block, the answer is `view(result)` of what the service settles."""
        saved, self.view = self.view, view
        try:
            yield
        finally:
            self.view = saved

    def settle(self, result: Any) -> None:
        if self.view is None or self.stored:
            return
        value = result
        for adapt in reversed(self.adapters):
            value = adapt(value)
        answer = self.view(value)
        self.answer = Answer(answer.status, withheld(answer.body))

    @property
    def pending(self) -> bool:
        """Whether the next decisive commit is the one that must carry the answer."""
        return self.view is not None and not self.stored


class Replayed(Exception):
    """The request was already answered under its key: send that answer again."""

    def __init__(self, answer: Answer) -> None:
        super().__init__("replayed")
        self.answer = answer


# The unit of work a keyed request runs in. Bound only by the keyed runner (`bound`), for the span of one
# request: the services between the entry and the store need not thread it through every signature, and
# the store never commits a keyed change without it (store/commit.py).
_BOUND: ContextVar[UnitOfWork | None] = ContextVar("agent_memory_unit_of_work", default=None)


# Where a tool call may carry its key besides the header: beside the input (a runtime's call has no
# headers) and inside it (the model's own argument, edges/requests/tools.py).
KEY_FIELD = "idempotency_key"


def one_key(places: list[tuple[str, object]]) -> str | None:
    """The one key a request carries, wherever it carries it: each place that holds one must hold a valid
    key, and all of them the same key (they all mean one key; two different ones are a mistake to name)."""
    found: list[tuple[str, str]] = []
    for where, raw in places:
        if raw is None:
            continue
        if not isinstance(raw, str):
            raise ApiError("parameter_invalid", f"{where} must be a string: the request's Idempotency-Key.")
        found.append((where, check_key(raw)))
    if len({key for _, key in found}) > 1:
        raise ApiError(
            "parameter_invalid",
            f"{' and '.join(where for where, _ in found)} carry different Idempotency-Keys: they all mean the "
            "one key of this call, so send one of them (or the same key in each).",
        )
    return found[0][1] if found else None


def without_key(tool_input: object) -> object:
    """A tool's input without the key it may carry (the key is the call's, not one of the tool's arguments)."""
    if isinstance(tool_input, dict) and KEY_FIELD in tool_input:
        return {k: v for k, v in tool_input.items() if k != KEY_FIELD}
    return tool_input


def check_key(raw: str) -> str:
    if not KEY_RE.match(raw):
        raise ApiError(
            "parameter_invalid",
            "Idempotency-Key must be 1 to 128 printable ASCII characters (space to '~').",
        )
    return raw


def fingerprint(method: str, route: str, params: dict[str, str], body: Any) -> str:
    """The request as the key remembers it: equal JSON (whatever its spacing or key order) is equal."""
    canonical = json.dumps(
        {"method": method, "route": route, "params": params, "body": body},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def unit_of_work(scope: str, key: str, print_: str, now: float | None = None) -> UnitOfWork:
    digest = hashlib.sha256(key.encode("ascii")).hexdigest()
    return UnitOfWork(scope, digest, print_, int(now if now is not None else clock.now()) + TTL_SECONDS)


def current() -> UnitOfWork | None:
    return _BOUND.get()


@contextmanager
def bound(uow: UnitOfWork | None) -> Iterator[None]:
    """Within the block, `uow` is the request's unit of work (the keyed runner's, or None for none)."""
    token = _BOUND.set(uow)
    try:
        yield
    finally:
        _BOUND.reset(token)


def judge(guard: UnitOfWork, record: Record | None, now: float | None = None) -> None:
    """Before running: replay the recorded answer of this same request, or refuse another under its key."""
    if record is None or record.expires_at <= (now if now is not None else clock.now()):
        return
    if record.fingerprint != guard.fingerprint:
        raise conflict()
    raise Replayed(record.answer)


def in_progress(retry_after_seconds: int = 1) -> ApiError:
    return ApiError(
        "idempotency_in_progress",
        "A request with this Idempotency-Key is being applied right now. Send it again in a moment to get its answer.",
        retry_after_seconds=retry_after_seconds,
    )


def conflict() -> ApiError:
    return ApiError(
        "idempotency_conflict",
        "This Idempotency-Key was already used for a different request in the last 24 hours: send a new "
        "key for a new request.",
    )


@contextmanager
def adapting(adapt: Callable[[Any], Any]) -> Iterator[None]:
    """Within the block, a settled result is first reshaped by `adapt` (a tool turns a document into its
    result for the model, which the entry then renders)."""
    uow = _BOUND.get()
    if uow is None:
        yield
        return
    uow.adapters.append(adapt)
    try:
        yield
    finally:
        uow.adapters.remove(adapt)


@contextmanager
def suspended() -> Iterator[None]:
    """Within the block no commit carries the keyed request's record: a write made ahead of the change it
    prepares (a fork marks its parent first), or a request made of many commits (a consolidation's
    appends) whose answer is recorded on its own once it is known (edges/keyed.py). Every other keyed
    commit carries it, or is refused (store/commit.py)."""
    with bound(None):
        yield


def settle(result: Any) -> None:
    """Called by a service just before its decisive commit: the answer the commit will record."""
    uow = _BOUND.get()
    if uow is not None:
        uow.settle(result)


def final(status: int, body: Any) -> bool:
    """Whether an answer is final, and so recorded: 5xx and 429 are not, and neither is a tool's result
    (a 200) that tells the model of one (storage busy or unavailable, rate limited), since its retry must run."""
    if retryable_status(status):
        return False
    if isinstance(body, dict) and body.get("is_error") is True:
        told = CATALOGUE.get(str(body.get("code")))
        return told is None or not told.retryable
    return True


def active() -> bool:
    """Whether a keyed request is running (a service may then finish work before its commit)."""
    uow = _BOUND.get()
    return uow is not None and uow.pending


def text_field(value: dict[str, Any]) -> str | None:
    """The field of an answer's object that holds stored text, if it is one that does: a document's, a
    file's or a version's `content` (they carry `content_sha256`), a typed record's `content`, a store
    entry's `value`. A tool result's own `content` is the sentence written for the model, not stored text."""
    if "content" in value and ("content_sha256" in value or ("layer" in value and "public_id" in value)):
        return "content"
    if "value" in value and "key" in value and "updated_at" in value:
        return "value"
    return None


def withheld(body: Any) -> Any:
    """The body as a record keeps it: every secret field set to null, and the answer saying so; every
    stored text set to null, and the answer naming where (`refill` reads them again on a replay)."""
    found = False
    texts: list[str] = []

    def scrub(value: Any, at: tuple[str, ...]) -> Any:
        nonlocal found
        if isinstance(value, dict):
            text = text_field(value)
            out: dict[str, Any] = {}
            for k, v in value.items():
                if k in SECRET_FIELDS and v is not None:
                    found = True
                    out[k] = None
                elif k == text and v is not None:
                    texts.append(".".join((*at, k)))
                    out[k] = None
                else:
                    out[k] = scrub(v, (*at, k))
            return out
        if isinstance(value, list):
            return [scrub(v, (*at, str(i))) for i, v in enumerate(value)]
        return value

    clean = scrub(body, ())
    if found and isinstance(clean, dict):
        clean["secret_withheld"] = True
    if texts and isinstance(clean, dict):
        clean[TEXT_WITHHELD] = texts
    elif texts:
        return None  # no object to name them in: keep nothing rather than the text
    return clean


def refill(body: Any, reread: Callable[[dict[str, Any], str], Any]) -> Any:
    """A recorded body with the text it withheld read again: `reread(obj, field)` answers what the service
    shows now for that object's field (None when it is gone: deleted, redacted, replaced). What could not be
    read stays null and stays named in `text_withheld`; a body that withheld nothing is answered as it is.

    A retryable refusal of a read (storage busy) raises: the replay is then answered as that refusal, and
    its retry reads again, rather than answering a text as gone that is not."""
    if not isinstance(body, dict) or TEXT_WITHHELD not in body:
        return body
    out = copy.deepcopy(body)
    named = out.pop(TEXT_WITHHELD)
    missing: list[str] = []
    for dotted in named if isinstance(named, list) else []:
        *parents, field_ = str(dotted).split(".")
        obj: Any = out
        for step in parents:
            obj = (
                obj[int(step)]
                if isinstance(obj, list) and step.isdigit() and int(step) < len(obj)
                else (obj.get(step) if isinstance(obj, dict) else None)
            )
        if not isinstance(obj, dict):
            continue
        try:
            text = reread(obj, field_)
        except ApiError as err:
            if err.retryable:
                raise
            text = None
        obj[field_] = text
        if text is None:
            missing.append(str(dotted))
    if missing:
        out[TEXT_WITHHELD] = missing
    return out
