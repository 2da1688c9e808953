"""The console's session: a cookie that stands for a Human's token, and the CSRF token its changes carry.

A person signs in once with a Human's token (in a POST body, never a URL); the service answers a random
session id in a cookie (HttpOnly, SameSite=Strict, Secure unless the request came over plain http, an
expiry) and keeps only its digest. On every API request with the cookie and no Authorization header,
`cookie_caller` reads the session and answers the same `PresentedToken` the Bearer header would have
given, so the console reaches the same routes under the same access policy (core/access.py), never a wider
one. A request from the console that is not a GET must carry the CSRF token, derived from the session id
(so only the service, which sees the HttpOnly cookie, can compute it) and sent in X-CSRF-Token.
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path

from agent_memory.api.errors import ApiError
from agent_memory.core import clock
from agent_memory.core.ids import PresentedToken, digests_equal
from agent_memory.edges.http.glue import Request

COOKIE = "am_console"
CSRF_HEADER = "x-csrf-token"
# A working day: long enough for an afternoon's editing, short enough that a forgotten browser signs out.
SESSION_SECONDS = 8 * 3600
# token_urlsafe(32) is 43 characters; anything much longer is not one of ours and is not looked up.
MAX_SESSION_ID = 64
# The session cookie reaches the API's routes too (the console calls them), so its path is the site's root.
COOKIE_PATH = "/"

ASSETS = Path(__file__).resolve().parents[2] / "render" / "console"
# Everything the page loads comes from us; no inline script or style, no frames, no plugins, no base.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
PAGE_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}
MEDIA = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}


def new_session_id() -> str:
    return secrets.token_urlsafe(32)


def session_digest(session_id: str) -> str:
    return hashlib.sha256(f"session:{session_id}".encode()).hexdigest()


def csrf_of(session_id: str) -> str:
    """The session's CSRF token: never stored, computable only from the HttpOnly session id."""
    return hashlib.sha256(f"csrf:{session_id}".encode()).hexdigest()


def is_secure(req: Request) -> bool:
    """Whether the cookie is Secure: always behind API Gateway (HTTPS, X-Forwarded-Proto https); only a
    request the local server says came over plain http (`make run`) gets a cookie a browser sends over http."""
    proto = req.headers.get("x-forwarded-proto", "https").split(",")[0].strip().lower()
    return proto != "http"


def set_cookie(req: Request, session_id: str, max_age: int = SESSION_SECONDS) -> str:
    flags = f"Path={COOKIE_PATH}; Max-Age={max_age}; HttpOnly; SameSite=Strict"
    return f"{COOKIE}={session_id}; {flags}{'; Secure' if is_secure(req) else ''}"


def clear_cookie(req: Request) -> str:
    return set_cookie(req, "", 0)


def session_id_of(req: Request) -> str | None:
    sid = req.cookies.get(COOKIE)
    if not sid:
        return None
    if len(sid) > MAX_SESSION_ID:
        raise ended()
    return sid


def ended() -> ApiError:
    return ApiError("not_authenticated", "Your console session has ended; sign in again at /console.")


def check_csrf(req: Request, session_id: str) -> None:
    if req.method != "GET" and not digests_equal(req.headers.get(CSRF_HEADER, ""), csrf_of(session_id)):
        raise ApiError(
            "not_authorized",
            "A change sent with the console's session cookie must carry its CSRF token in the X-CSRF-Token "
            "header; reload the console and try again.",
        )


def cookie_caller(req: Request) -> PresentedToken | None:
    """The token a console session stands for (None without a session cookie). A session that has ended
    is 401; a request that is not a GET without the session's CSRF token is 403, before anything is read."""
    sid = session_id_of(req)
    if sid is None:
        return None
    check_csrf(req, sid)
    from agent_memory.edges import services

    session = services.sessions().console_session(session_digest(sid), clock.now())
    if session is None:
        raise ended()
    return PresentedToken("human", session.human_id, session.token_digest)


def asset(name: str) -> tuple[str, dict[str, str]]:
    """One of the console's files (each route names its own) and its headers."""
    path = ASSETS / name
    return path.read_text(encoding="utf-8"), {**PAGE_HEADERS, "content-type": MEDIA[path.suffix]}
