"""The console: its page and files, and signing in and out (edges/http/console.py holds the session rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.api.errors import ApiError
from agent_memory.core import clock
from agent_memory.edges import services
from agent_memory.edges.http import console
from agent_memory.edges.http.glue import Request, Shown
from agent_memory.edges.http.handlers import parsed

if TYPE_CHECKING:
    from agent_memory.core.model import Human


def console_page(req: Request) -> object:
    page, headers = console.asset("index.html")
    return Shown(page, headers)


def console_asset(req: Request) -> object:
    # The file the route's own path names (console.js, console.css), never one a request spells.
    text, headers = console.asset(req.route.path.rsplit("/", 1)[1])
    return Shown(text, headers)


def _answer(human: Human, session_id: str, expires_at: float) -> dict[str, object]:
    from agent_memory.render import views

    return {
        "human": views.human(human),
        "csrf_token": console.csrf_of(session_id),
        "expires_at": clock.iso_of(expires_at),
    }


def _human_of(token_text: str) -> tuple[Human, str]:
    """The Human a token belongs to and the token's digest; an agent's token is refused."""
    from agent_memory.core import access
    from agent_memory.core.ids import parse_token
    from agent_memory.core.ports import Ref

    presented = parse_token(token_text.strip())
    if presented is None:
        raise ApiError("not_authenticated", "That is not a token; paste a Human's token (it starts with am_h_).")
    principal, got = services.resolver().first_round(presented, [Ref.human(presented.principal_id)])
    if principal.kind != "human":
        raise ApiError("not_authorized", "The console is for people: sign in with a Human's token, not an agent's.")
    access.require_human(principal)
    human: Human = got[Ref.human(principal.public_id)]
    return human, presented.digest


def console_sign_in(req: Request) -> object:
    from agent_memory.core.model import ConsoleSession
    from agent_memory.edges.requests.directory import ConsoleSignIn

    body = parsed(req, ConsoleSignIn)
    human, token_digest = _human_of(body.token)
    session_id = console.new_session_id()
    now = int(clock.now())
    expires_at = now + console.SESSION_SECONDS
    session = ConsoleSession(console.session_digest(session_id), human.public_id, token_digest, now, expires_at)
    services.sessions().open_session(session)
    return Shown(_answer(human, session_id, expires_at), cookies=(console.set_cookie(req, session_id),))


def console_session(req: Request) -> object:
    from agent_memory.core.ports import Ref

    session_id = console.session_id_of(req)
    if session_id is None:
        raise ApiError("not_authenticated", "Sign in to the console with a Human's token.")
    session = services.sessions().console_session(console.session_digest(session_id), clock.now())
    if session is None:
        raise console.ended()
    # The token it stands for is checked as on every request: a revoked or rotated one ends the session.
    from agent_memory.core.ids import PresentedToken

    presented = PresentedToken("human", session.human_id, session.token_digest)
    _, got = services.resolver().first_round(presented, [Ref.human(session.human_id)])
    return _answer(got[Ref.human(session.human_id)], session_id, session.expires_at)


def console_sign_out(req: Request) -> object:
    session_id = console.session_id_of(req)
    if session_id is not None:
        console.check_csrf(req, session_id)
        services.sessions().end_session(console.session_digest(session_id))
    return Shown(None, cookies=(console.clear_cookie(req),))
