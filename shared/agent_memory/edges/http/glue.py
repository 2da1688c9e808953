"""HTTP glue: API Gateway HTTP API (payload v2) events in, responses out; authentication and error mapping.

The only module that builds HTTP responses. Handlers receive a parsed `Request` and answer a body (None
for no content), or a `Shown` when the body needs a header or the route's alternative success status; the
status is the route's (`reply_of`), never the handler's. Every `ApiError` becomes the seed's error body
here. The route functions' entry (lambda_entry.py) runs handlers and maps anything unexpected to a 500.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Callable
from dataclasses import field
from typing import Any

from agent_memory.api.contract import RouteSpec, parameter_rule, path_parameters
from agent_memory.api.errors import ApiError
from agent_memory.core.idempotency import KEY_FIELD, Answer, UnitOfWork, check_key, one_key
from agent_memory.core.ids import PresentedToken, parse_token
from agent_memory.core.lazy_dataclass import dataclass

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
    # The keyed request's unit of work (edges/keyed.py), or None without an Idempotency-Key.
    uow: UnitOfWork | None = None
    # The request's cookies by name (payload v2 carries them apart from the headers): the console's session.
    cookies: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    # Set-Cookie values (payload v2's `cookies`: a header map holds one value per name).
    cookies: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Shown:
    """A handler's answer that a body alone does not say: extra headers, or the route's alternative
    (non-204) success status (`RouteSpec.also`)."""

    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    alternative: bool = False
    cookies: tuple[str, ...] = ()


# A handler answers its body (None: no content), or a Shown.
Handler = Callable[[Request], object]


def reply_of(route: RouteSpec, out: object) -> Reply:
    """A handler's answer with its route's status: the route's own, 204 for no content, or its alternative."""
    shown = out if isinstance(out, Shown) else Shown(out)
    statuses = (route.status, *route.also)
    if shown.alternative:
        status = next((s for s in route.also if s != 204), None)
    elif shown.body is None:
        status = 204 if 204 in statuses else None
    else:
        status = route.status if route.status != 204 else None
    if status is None:
        raise LookupError(f"route {route.name} declares no success status for this answer")
    return Reply(status, shown.body, dict(shown.headers), shown.cookies)


def answer_of(reply: Reply) -> Answer:
    return Answer(reply.status, reply.body)


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


def _cookies(event: dict[str, Any], headers: dict[str, str]) -> dict[str, str]:
    """Payload v2 moves the Cookie header into `cookies` ("name=value" each); the first of a name wins."""
    pairs = list(event.get("cookies") or [])
    if not pairs and headers.get("cookie"):
        pairs = headers["cookie"].split(";")
    out: dict[str, str] = {}
    for pair in pairs:
        name, eq, value = str(pair).strip().partition("=")
        if eq and name and name not in out:
            out[name] = value.strip()
    return out


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
        cookies=_cookies(event, headers),
    )


# On every answer, whatever its route or status: no browser guesses a type other than the one sent (an
# answer echoing stored text is never run as a script or a page), and no cache keeps an answer that an
# authenticated caller was given (the error envelope and the public pages are not worth keeping either).
SAFE_HEADERS: dict[str, str] = {"x-content-type-options": "nosniff", "cache-control": "no-store"}


def response(reply: Reply) -> dict[str, Any]:
    headers = {"content-type": "application/json", **reply.headers, **SAFE_HEADERS}
    extra: dict[str, Any] = {"cookies": list(reply.cookies)} if reply.cookies else {}
    if reply.status == 204 or reply.body is None:
        return {"statusCode": reply.status, "headers": headers, "body": "", **extra}
    if isinstance(reply.body, str):
        # A body already rendered (an export's NDJSON, a console page): its handler set its content-type.
        return {"statusCode": reply.status, "headers": headers, "body": reply.body, **extra}
    body = json.dumps(reply.body, ensure_ascii=False)
    return {"statusCode": reply.status, "headers": headers, "body": body, **extra}


def idempotency_key(req: Request) -> str | None:
    """The request's Idempotency-Key, on a route that changes something; checked, or None without one."""
    if req.route.access not in ("write", "operator"):
        return None
    raw = req.headers.get("idempotency-key")
    if req.route.name != "call_tool":
        return None if raw is None else check_key(raw)
    # A tool call may carry it in the body too (an agent runtime's tool call has no headers of its own), and
    # inside the tool's input (the model's own argument): all three mean the one key.
    tool_input = req.body.get("input")
    return one_key(
        [
            ("The Idempotency-Key header", raw),
            (KEY_FIELD, req.body.get(KEY_FIELD)),
            (f"input.{KEY_FIELD}", tool_input.get(KEY_FIELD) if isinstance(tool_input, dict) else None),
        ]
    )


def error_reply(err: ApiError) -> Reply:
    headers = {}
    wait = err.details.get("retry_after_seconds")
    if isinstance(wait, int | float):
        # HTTP's own way to say when to come back; the body's details carry the same number.
        headers["retry-after"] = str(max(0, int(wait)))
    return Reply(err.status, err.body(), headers)


def replayed(answer: Answer) -> Reply:
    return Reply(answer.status, answer.body, {"idempotency-replayed": "true"})
