"""HTTP glue: API Gateway HTTP API (payload v2) events in, responses out; authentication and error mapping.

The only module that builds HTTP responses. Handlers receive a parsed `Request` and return a `Reply`;
every `ApiError` becomes the seed's error body here, and anything unexpected a 500 with no detail.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_memory.api.contract import RouteSpec, parameter_rule, path_parameters
from agent_memory.api.errors import ApiError
from agent_memory.core import observability
from agent_memory.core.budget import ORIGIN
from agent_memory.core.idempotency import GUARD, Answer, Guard, Replayed, check_key, final
from agent_memory.core.ids import PresentedToken, parse_token

MAX_BODY_BYTES = 512 * 1024
# No request of this API nests deeper than a handful of levels; 64 leaves room for any memory_context
# while keeping json.loads (whose C scanner recurses per level) and every reader after it shallow.
MAX_BODY_DEPTH = 64
# A JSON string (skipped whole, so brackets inside text are not nesting) or one bracket.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


@dataclass(slots=True)
class Request:
    route: RouteSpec
    method: str
    path: str
    params: dict[str, str]
    query: dict[str, str]
    headers: dict[str, str]
    body: dict[str, Any]
    token: PresentedToken | None
    request_id: str = ""
    # Why the body could not be read as a JSON object, kept until the caller is authenticated.
    body_error: ApiError | None = None
    source_ip: str = ""


@dataclass(slots=True)
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Reply]


def _bearer(headers: dict[str, str]) -> PresentedToken | None:
    auth = headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return None
    return parse_token(token.strip())


def _too_large(limit: int = MAX_BODY_BYTES) -> ApiError:
    return ApiError("parameter_invalid", f"The request body is larger than {limit} bytes.")


def _body_text(event: dict[str, Any], limit: int = MAX_BODY_BYTES) -> str:
    """The body as text, refused past `limit` bytes of UTF-8 (what the caller sent, not characters)."""
    raw: str = event["body"]
    if event.get("isBase64Encoded"):
        # Four base64 characters carry three bytes: a text longer than that for the cap is refused
        # before it is decoded at all.
        if len(raw) > (limit + 2) // 3 * 4 + 4:
            raise _too_large(limit)
        try:
            data = base64.b64decode(raw)
        except (binascii.Error, ValueError) as exc:
            raise ApiError("parameter_invalid", "The request body is not valid base64.") from exc
        if len(data) > limit:
            raise _too_large(limit)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ApiError("parameter_invalid", "The request body is not valid UTF-8.") from exc
    # Every character is at least one byte, so a text longer than the cap is over it without encoding.
    # surrogateescape gives back the bytes the local gateway could not decode, one byte each.
    if len(raw) > limit or len(raw.encode("utf-8", "surrogateescape")) > limit:
        raise _too_large(limit)
    return raw


def _nesting_ok(text: str) -> bool:
    """True when no value nests deeper than MAX_BODY_DEPTH, counted without parsing.

    Most bodies have fewer brackets than the bound, which two C-speed counts prove; otherwise one scan of
    the tokens that matter, which stops at the first level too deep (a body 200,000 deep costs 65 steps)."""
    if text.count("[") + text.count("{") <= MAX_BODY_DEPTH:
        return True
    depth = 0
    for m in _JSON_TOKEN.finditer(text):
        token = m.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_BODY_DEPTH:
                return False
        elif token in ("]", "}"):
            depth -= 1
    return True


def _parse_body(event: dict[str, Any], limit: int = MAX_BODY_BYTES) -> dict[str, Any]:
    if event.get("body") is None or event.get("body") == "":
        return {}
    raw = _body_text(event, limit)
    if not _nesting_ok(raw):
        raise ApiError("parameter_invalid", f"The request body nests deeper than {MAX_BODY_DEPTH} levels.")
    try:
        body = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, or an integer past Python's 4300-digit parsing limit
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "a number is too long"
        raise ApiError("parameter_invalid", f"The request body is not valid JSON: {why}.") from exc
    if not isinstance(body, dict):
        raise ApiError("parameter_invalid", "The request body must be a JSON object.")
    return body


@functools.cache
def _parameter_matchers(path: str) -> tuple[tuple[str, re.Pattern[str], str], ...]:
    # \Z, not $: Python's `$` would also accept a value ending in a newline.
    rules = [(name, parameter_rule(name)) for name in path_parameters(path)]
    return tuple((name, re.compile(rule.pattern[:-1] + r"\Z"), rule.description) for name, rule in rules)


def check_path_parameters(route: RouteSpec, params: dict[str, str]) -> None:
    """Refuse, as not_found, a path parameter outside the contract's grammar for it: such an id or name
    can name nothing, so no storage is read (and no oversized key ever reaches DynamoDB)."""
    for name, matcher, rule in _parameter_matchers(route.path):
        value = params.get(name)
        if value is None or matcher.match(value) is None:
            shown = "nothing" if value is None else repr(value[:64])
            raise ApiError("not_found", f"Nothing is found at this URL: {name} is {shown}, and must be {rule}.")


def to_request(route: RouteSpec, event: dict[str, Any]) -> Request:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    ctx = event.get("requestContext") or {}
    # A body that is not JSON is refused only after the caller is known: see handlers.body().
    body: dict[str, Any] = {}
    body_error: ApiError | None = None
    try:
        body = _parse_body(event, route.body_bytes or MAX_BODY_BYTES)
    except ApiError as err:
        body_error = err
    return Request(
        route=route,
        method=(ctx.get("http") or {}).get("method", "GET"),
        path=event.get("rawPath", ""),
        params=dict(event.get("pathParameters") or {}),
        query=dict(event.get("queryStringParameters") or {}),
        headers=headers,
        body=body,
        token=_bearer(headers),
        request_id=ctx.get("requestId", ""),
        body_error=body_error,
        source_ip=(ctx.get("http") or {}).get("sourceIp", ""),
    )


def _response(reply: Reply) -> dict[str, Any]:
    headers = {"content-type": "application/json", "cache-control": "no-store", **reply.headers}
    if reply.status == 204 or reply.body is None:
        return {"statusCode": reply.status, "headers": headers, "body": ""}
    if isinstance(reply.body, str):
        # A body already rendered (an export's NDJSON): its handler set its content-type.
        return {"statusCode": reply.status, "headers": headers, "body": reply.body}
    return {"statusCode": reply.status, "headers": headers, "body": json.dumps(reply.body, ensure_ascii=False)}


def idempotency_key(req: Request) -> str | None:
    """The request's Idempotency-Key, on a route that changes something; checked, or None without one."""
    if req.route.access not in ("write", "operator"):
        return None
    raw = req.headers.get("idempotency-key")
    if raw is None and req.route.name == "call_tool":
        # A tool call may carry it in the body (an agent runtime's tool call has no headers of its own).
        raw = req.body.get("idempotency_key") if isinstance(req.body.get("idempotency_key"), str) else None
    return None if raw is None else check_key(raw)


def _recorded(guard: Guard, reply: Reply) -> Reply:
    """Store `reply` as the key's answer; if another request under the key answered first, that one."""
    from agent_memory.edges.http.idempotent import record_reply

    found = record_reply(guard, reply)
    return reply if found is None else replayed(found)


def error_reply(err: ApiError) -> Reply:
    headers = {}
    wait = err.details.get("retry_after_seconds")
    if isinstance(wait, int | float):
        # HTTP's own way to say when to come back; the body's details carry the same number.
        headers["retry-after"] = str(max(0, int(wait)))
    return Reply(err.status, err.body(), headers)


def replayed(answer: Answer) -> Reply:
    return Reply(answer.status, answer.body, {"idempotency-replayed": "true"})


def dispatch(route: RouteSpec, fn: Handler, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """Run one route's handler on one event; the single place errors become responses."""
    observability.bind_lambda_context(context)
    route_name = route.name
    started = time.perf_counter()
    code = None
    guard: Guard | None = None
    reset = None
    try:
        req = to_request(route, event)
        ORIGIN.set(req.source_ip or None)
        if route.needs_token and req.token is None:
            # No or malformed credentials answer 401 before anything else is looked at.
            raise ApiError("not_authenticated", "Send a valid token as 'Authorization: Bearer <token>'.")
        check_path_parameters(route, req.params)
        key = idempotency_key(req)
        if key is not None:
            from agent_memory.edges.http.idempotent import open_guard

            guard = open_guard(req, key)
            reset = GUARD.set(guard)
        reply = fn(req)
        if guard is not None and not guard.stored and final(reply.status, reply.body):
            # Nothing durable changed (a read, or a tool's refusal told to the model): the answer is
            # recorded on its own, so a retry sees the same. A tool result telling of a storage fault or
            # a rate limit is not final: the retry runs again.
            reply = _recorded(guard, reply)
    except Replayed as done:
        reply = replayed(done.answer)
    except ApiError as err:
        code = err.code
        reply = error_reply(err)
        if guard is not None and not guard.stored and not err.retryable:
            try:
                reply = _recorded(guard, reply)
            except ApiError as lost:
                # The refusal's record was not stored: answering the refusal now would let a retry run
                # again and succeed, so the caller hears that storage did not answer (nothing changed).
                code = lost.code
                reply = error_reply(lost)
            except Exception:
                code = "internal_error"
                observability.logger().exception("unhandled error", extra={"route": route_name})
                reply = error_reply(
                    ApiError("internal_error", "Something went wrong on our side; nothing was changed.")
                )
    except Exception:
        code = "internal_error"
        observability.logger().exception("unhandled error", extra={"route": route_name})
        reply = error_reply(ApiError("internal_error", "Something went wrong on our side; nothing was changed."))
    finally:
        if reset is not None:
            GUARD.reset(reset)
    observability.record_request(
        route_name, status=reply.status, error_code=code, ms=round((time.perf_counter() - started) * 1000, 2)
    )
    return _response(reply)
