"""Redaction of a Memory's file version over HTTP (issue 26, item 2).

`POST /memories/{id}/files/versions/redact` keeps documents' rules: an earlier version only, under the
file's current pair, the record kept (author, time, hash) and marked `redacted`, the object deleted from
the bucket at once when nothing else holds it. A refusal (an unknown version, the current one, a stale or
half pair, a viewer, a read-only attachment, a caller of another account) changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..support import Api, Who, code
from .histories import sha
from .orgmem import Files, expect, pair, ro
from .world import bucket_objects, scan_table

pytestmark = pytest.mark.http

SECRET = "the vault password is swordfish-26a\n"
CLEAN = "nothing to see here\n"
NOTE = "ops/keys.md"


@pytest.fixture
def mems(api: Api) -> Files:
    return Files(api)


def redact(mems: Files, who: Who, mem: str, lock_version: Any, expected: Any, **extra: Any) -> Any:
    return mems.verb(who, mem, "versions/redact", path=NOTE, lock_version=lock_version, **expect(expected), **extra)


def leaked(api: Api, mems: Files) -> tuple[Who, str, tuple[str, int]]:
    """Ada's Memory whose file held SECRET at version 0 and CLEAN since version 1: (ada, memory, pair)."""
    ada = api.account()
    mem = mems.made(ada, files=[{"path": NOTE, "content": SECRET}])["memory_id"]
    v0 = pair(mems.file(ada, mem, NOTE))
    v1 = pair(mems.written(mems.write(ada, mem, NOTE, CLEAN, v0)))
    return ada, mem, v1


def anywhere(text: str) -> bool:
    """Whether `text` is in any object of the bucket."""
    return any(text in body for body in bucket_objects("").values())


def test_a_redacted_file_version_is_unreadable_and_gone_from_the_bucket(api: Api, mems: Files) -> None:
    ada, mem, v1 = leaked(api, mems)
    assert anywhere(SECRET)
    before = mems.version_show(ada, mem, NOTE, 0).json()["version"]
    assert before["content"] == SECRET
    # When Ada redacts version 0 under the file's current pair
    r = redact(mems, ada, mem, 0, v1)
    assert r.status_code == 200, r.text
    v = r.json()["version"]
    assert (v["redacted"], v["content"]) == (True, None)
    assert v["redacted_by"]["public_id"] == ada.public_id and v["redacted_at"]
    # Then versions/show answers the record without its text, hash and author kept
    shown = mems.version_show(ada, mem, NOTE, 0)
    assert shown.status_code == 200, shown.text
    assert shown.json()["version"] == v
    kept = ("lock_version", "public_id", "content_sha256", "bytesize", "author", "written_at", "operation")
    assert {k: v[k] for k in kept} == {k: before[k] for k in kept}
    assert v["content_sha256"] == sha(SECRET)
    # And the listing marks it
    assert [(x["lock_version"], x["redacted"]) for x in mems.history(ada, mem, NOTE)] == [(1, False), (0, True)]
    # And the bytes are gone from the bucket with no sweep, while the file itself did not move
    assert not anywhere(SECRET)
    now = mems.file(ada, mem, NOTE)
    assert (pair(now), now["content"]) == (v1, CLEAN)
    # And a rollback to it is refused: nothing is left to restore
    assert code(mems.rollback(ada, mem, NOTE, 0, v1)) == (409, "memory_version_redacted")
    # And redacting it again changes nothing and answers the same record
    again = redact(mems, ada, mem, 0, v1)
    assert again.status_code == 200 and again.json()["version"] == v


def test_bad_versions_and_stale_pairs_are_refused_and_change_nothing(api: Api, mems: Files) -> None:
    ada, mem, v1 = leaked(api, mems)
    before = mems.state(ada, mem), scan_table(), bucket_objects("")
    other = "01990000-0000-7000-8000-0000000000ff"
    probes: list[tuple[Any, Any, Any, tuple[int, str]]] = [
        (0, (v1[0], 0), {}, (409, "stale_object")),
        (0, (other, 1), {}, (409, "stale_object")),
        (0, (v1[0], 2), {}, (409, "stale_object")),
        (1, v1, {}, (409, "memory_version_current")),
        (7, v1, {}, (404, "memory_version_not_found")),
        (-1, v1, {}, (400, "parameter_invalid")),
        ("0", v1, {}, (400, "parameter_invalid")),
        (None, v1, {}, (400, "parameter_invalid")),
        (0, (v1[0], None), {}, (400, "parameter_invalid")),
        (0, (None, 1), {}, (400, "parameter_invalid")),
        (0, v1, {"extra": 1}, (400, "parameter_invalid")),
    ]
    for number, expected, extra, want in probes:
        assert code(redact(mems, ada, mem, number, expected, **extra)) == want, (number, expected, extra)
    # A missing pair is a missing condition; a file that does not exist is not found
    r = mems.verb(ada, mem, "versions/redact", path=NOTE, lock_version=0)
    assert code(r) == (400, "parameter_missing"), r.text
    r = mems.verb(ada, mem, "versions/redact", path="ops/none.md", lock_version=0, **expect(v1))
    assert code(r) == (404, "memory_not_found"), r.text
    r = mems.verb(ada, mem, "versions/redact", path="../x.md", lock_version=0, **expect(v1))
    assert code(r)[0] in (400, 422), r.text
    assert (mems.state(ada, mem), scan_table(), bucket_objects("")) == before
    assert anywhere(SECRET)


def test_callers_without_write_standing_are_refused(api: Api, mems: Files) -> None:
    ada, mem, v1 = leaked(api, mems)
    # Erin views through a team workspace named in the Access panel; Carol is outside it; the helper agent
    # has the Memory read-only; Eve is another account's.
    team = api.workspace(ada, "team")
    erin = api.human(ada, "erin")
    carol = api.human(ada, "carol")
    api.member(ada, team, erin, "viewer")
    assert mems.patch(ada, mem, access={"humans": [], "workspaces": [team]}).status_code == 200
    helper = api.agent(ada, "helper")
    assert mems.attach(ada, helper.public_id, [ro(mem)]).status_code == 200
    eve = api.account("globex", "eve")
    before = mems.state(ada, mem), bucket_objects("")
    assert code(redact(mems, erin, mem, 0, v1)) == (403, "not_authorized")
    assert code(redact(mems, helper, mem, 0, v1)) == (403, "memory_read_only")
    assert code(redact(mems, carol, mem, 0, v1)) == (404, "not_found")
    assert code(redact(mems, eve, mem, 0, v1)) == (404, "not_found")
    assert (mems.state(ada, mem), bucket_objects("")) == before
    assert anywhere(SECRET)


def test_the_clients_redact_is_the_route(api: Api, mems: Files) -> None:
    from agent_memory_sdk.client import MemoryClient

    ada, mem, v1 = leaked(api, mems)
    files = MemoryClient(api.url, ada.token, backoff=0.0).memory_files(mem)
    shown = files.redact(NOTE, 0, v1)
    assert (shown["redacted"], shown["content"]) == (True, None)
    assert files.show_version(NOTE, 0)["content"] is None
    assert not anywhere(SECRET)
