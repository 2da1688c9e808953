"""The console's sign-in: a Human's token (in the body) for a session cookie; the cookie stands for that token
on the API's own routes, every change carries the CSRF token, and signing out ends it."""

from __future__ import annotations

import logging

import pytest
import requests

from ..support import API, Api, Who
from .orgmem import Memories

pytestmark = pytest.mark.http

SESSION = "/console/api/session"


def sign_in(api: Api, token: str, headers: dict[str, str] | None = None) -> requests.Response:
    return requests.post(f"{api.url}{SESSION}", json={"token": token}, headers=headers or {}, timeout=30)


def browser(api: Api, who: Who) -> tuple[requests.Session, str]:
    """A session signed in as `who`, as a browser holds it: the cookie jar, and the CSRF token the page keeps."""
    s = requests.Session()
    r = s.post(f"{api.url}{SESSION}", json={"token": who.token}, timeout=30)
    assert r.status_code == 201, r.text
    return s, r.json()["csrf_token"]


def test_a_humans_token_opens_a_session_cookie_with_its_flags(api: Api) -> None:
    ada = api.account()
    r = sign_in(api, ada.token)
    assert r.status_code == 201, r.text
    assert r.json()["human"]["public_id"] == ada.public_id
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("am_console=")
    flags = [f.strip() for f in cookie.split(";")[1:]]
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(flags)
    assert any(f.startswith("Max-Age=") and int(f.split("=")[1]) > 0 for f in flags)
    # make run is plain http: a Secure cookie would never come back. Behind HTTPS it is Secure.
    assert "Secure" not in flags
    behind = sign_in(api, ada.token, {"X-Forwarded-Proto": "https"})
    assert "Secure" in [f.strip() for f in behind.headers["set-cookie"].split(";")]
    assert ada.token not in cookie and ada.token not in r.text


def test_an_agents_token_and_a_bad_token_are_refused(api: Api) -> None:
    ada = api.account()
    bot = api.agent(ada, "bot")
    r = sign_in(api, bot.token)
    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "not_authorized"
    assert "set-cookie" not in r.headers
    bad = sign_in(api, "am_h_nope")
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "not_authenticated"
    wrong = sign_in(api, ada.token[:-4] + "AAAA")
    assert wrong.status_code == 401, wrong.text
    empty = requests.post(f"{api.url}{SESSION}", json={}, timeout=30)
    assert empty.status_code == 400 and empty.json()["error"]["code"] == "parameter_missing"


def test_the_cookie_calls_the_same_routes_and_changes_need_the_csrf_token(api: Api) -> None:
    ada = api.account()
    bob = api.human(ada, "bob")
    mine = Memories(api).made(ada, "runbooks", files=[{"path": "a.md", "content": "x\n"}])["memory_id"]
    s, csrf = browser(api, ada)
    # A read through the cookie answers what the Bearer token answers.
    listed = s.get(f"{api.url}{API}/memories", timeout=30)
    assert listed.status_code == 200, listed.text
    assert listed.json() == api.get("/memories", ada).json()
    body = {"file": {"path": "b.md", "content": "hello\n", "expected_public_id": None, "expected_lock_version": None}}
    # A change without the CSRF header is refused and changes nothing.
    r = s.post(f"{api.url}{API}/memories/{mine}/files", json=body, timeout=30)
    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "not_authorized" and "X-CSRF-Token" in r.json()["error"]["message"]
    wrong = s.post(f"{api.url}{API}/memories/{mine}/files", json=body, headers={"X-CSRF-Token": "0" * 64}, timeout=30)
    assert wrong.status_code == 403
    files = api.get(f"/memories/{mine}/files", ada).json()
    assert [f["path"] for f in files["files"]] == ["a.md"]
    ok = s.post(f"{api.url}{API}/memories/{mine}/files", json=body, headers={"X-CSRF-Token": csrf}, timeout=30)
    assert ok.status_code == 201, ok.text
    # Another person's session is theirs: bob's cookie reaches only what bob's token does (not a Memory
    # whose Access panel names only Ada).
    private = Memories(api).made(ada, "private", access={"humans": [ada.public_id], "workspaces": []})["memory_id"]
    bs, bob_csrf = browser(api, bob)
    seen = bs.get(f"{api.url}{API}/memories", timeout=30).json()
    assert seen == api.get("/memories", bob).json()
    assert private not in [m["memory_id"] for m in seen["memories"]]
    assert bs.get(f"{api.url}{API}/memories/{private}", timeout=30).status_code == 404
    denied = bs.post(
        f"{api.url}{API}/memories/{private}/files", json=body, headers={"X-CSRF-Token": bob_csrf}, timeout=30
    )
    assert denied.status_code == 404, denied.text
    # One session's CSRF token is no other's
    assert (
        bs.post(f"{api.url}{API}/memories/{mine}/files", json=body, headers={"X-CSRF-Token": csrf}).status_code == 403
    )
    # The cookie never widens an agent: agents cannot sign in, so no cookie stands for one (above).


def test_the_session_answers_who_and_sign_out_ends_it(api: Api) -> None:
    ada = api.account()
    s, csrf = browser(api, ada)
    me = s.get(f"{api.url}{SESSION}", timeout=30)
    assert me.status_code == 200 and me.json()["csrf_token"] == csrf
    assert requests.get(f"{api.url}{SESSION}", timeout=30).status_code == 401
    # Sign out without the CSRF token is refused; with it the session ends and the cookie is cleared.
    assert s.post(f"{api.url}{SESSION}/delete", timeout=30).status_code == 403
    out = s.post(f"{api.url}{SESSION}/delete", headers={"X-CSRF-Token": csrf}, timeout=30)
    assert out.status_code == 204, out.text
    assert "Max-Age=0" in out.headers["set-cookie"]
    # The old cookie, replayed, is dead everywhere.
    old = requests.Session()
    old.cookies.update({"am_console": "x" * 43})
    assert old.get(f"{api.url}{API}/memories", timeout=30).status_code == 401
    assert s.get(f"{api.url}{API}/memories", timeout=30).status_code == 401


def test_rotating_the_token_ends_its_sessions(api: Api) -> None:
    ada = api.account()
    s, _ = browser(api, ada)
    r = api.post(f"/humans/{ada.public_id}/credentials/rotate", ada)
    assert r.status_code == 201, r.text
    assert s.get(f"{api.url}{API}/memories", timeout=30).status_code == 401


def test_a_token_never_reaches_the_logs(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    ada = api.account()
    with caplog.at_level(logging.DEBUG):
        sign_in(api, ada.token)
        sign_in(api, ada.token[:-2] + "zz")
    assert ada.token not in caplog.text
    assert ada.token[-20:] not in caplog.text


def test_the_console_page_is_served_with_a_strict_policy(api: Api) -> None:
    r = requests.get(f"{api.url}/console", timeout=30)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    for part in ("default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"):
        assert part in csp
    assert "unsafe-inline" not in csp and "<script>" not in r.text
    js = requests.get(f"{api.url}/console/console.js", timeout=30)
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert requests.get(f"{api.url}/console/..%2Fconsole.py", timeout=30).status_code == 404
    assert requests.get(f"{api.url}/console/index.py", timeout=30).status_code == 404


def test_the_map_page_tells_a_browser_where_to_open_it_and_opens_with_the_cookie(api: Api) -> None:
    ada = api.account()
    r = requests.get(f"{api.url}{API}/memory_map.html", timeout=30)
    assert r.status_code == 401 and "/console#/map" in r.json()["error"]["message"]
    s, _ = browser(api, ada)
    page = s.get(f"{api.url}{API}/memory_map.html", timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
