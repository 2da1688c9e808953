"""Promote into a new organization Memory over HTTP (issue 13).

`POST /memories/promote` copies one version the caller reads (a workspace document, a conversation
document or another Memory's file) into a brand-new Memory: no byte moves (the new file points at the same
immutable object), the Memory and the file's first version name where it came from, and the source is
untouched. Refusals create no Memory and leave the source as it was. A later redaction of the source
version leaves the promoted file readable: the object is handed off, not owned by the source alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_memory.store import CACHE

from ..support import Api, Who, code, conv_base, created, ws_base
from .histories import current, history, redact, sha, version_items
from .orgmem import Files, pair
from .safe_content import PII_SAMPLES
from .world import bucket_objects, scan_table

pytestmark = pytest.mark.http


@pytest.fixture
def mems(api: Api) -> Files:
    return Files(api)


def human(who: Who, name: str) -> dict[str, Any]:
    return {"kind": "human", "public_id": who.public_id, "name": name}


def ws_source(ws: str, path: str, lock_version: int) -> dict[str, Any]:
    return {"workspace_public_id": ws, "path": path, "lock_version": lock_version}


def conv_source(ws: str, conv: str, path: str, lock_version: int) -> dict[str, Any]:
    return {"workspace_public_id": ws, "conversation_public_id": conv, "path": path, "lock_version": lock_version}


def promoted(r: Any) -> dict[str, Any]:
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()["memory"]
    return out


def doc_key(pk_suffix: str, rest: str) -> str:
    """The content key of the pointer row at `rest` in the partition whose key ends with `pk_suffix`."""
    (row,) = [i for i in scan_table() if i["sk"] == f"DOC#{rest}" and str(i["pk"]).endswith(pk_suffix)]
    return str(row["content_key"])


def record_key(pk_suffix: str, rest: str, lock_version: int) -> str | None:
    (row,) = [
        i for i in version_items(rest) if str(i["pk"]).endswith(pk_suffix) and int(i["lock_version"]) == lock_version
    ]
    key = row.get("content_key")
    return None if key is None else str(key)


def source_state(api: Api, who: Who, base: str, path: str) -> tuple[Any, ...]:
    """What a promote must leave alone at its source: the history, the current document, the listing."""
    listing = api.ls(who, base)
    assert listing.status_code == 200, listing.text
    return history(api, who, base, path), current(api, who, base, path), listing.json()["memory"]


# ---- the three sources ------------------------------------------------------------------------------------


def test_a_promote_from_a_workspace_document_copies_the_chosen_version_without_moving_a_byte(
    api: Api, mems: Files
) -> None:
    # Given a workspace document whose version 0 is worth keeping and version 1 is not
    ada, ws, _ = api.room()
    d0 = created(api.write(ada, ws_base(ws), "workspace/guides/deploy.md", "deploy with make ship\n"))
    created(api.write(ada, ws_base(ws), "workspace/guides/deploy.md", "scratch, ignore\n", d0))
    before = source_state(api, ada, ws_base(ws), "workspace/guides/deploy.md")
    objects = bucket_objects("content/")

    # When Ada promotes version 0 into a new Memory
    m = promoted(mems.promote(ada, ws_source(ws, "workspace/guides/deploy.md", 0), "deploy-guide"))

    # Then the answer is the new Memory, naming where its file came from, who promoted it and when
    origin = m["promoted_from"]
    assert {k: v for k, v in origin.items() if k != "promoted_at"} == {
        "anchor_public_id": ws,
        "path": "workspace/guides/deploy.md",
        "public_id": d0[0],
        "lock_version": 0,
        "promoted_by": human(ada, "ada"),
    }
    assert origin["promoted_at"]
    assert (m["name"], m["description"], m["source"], m["default"]) == (
        "deploy-guide",
        "promoted notes",
        "native",
        None,
    )
    assert (m["file_count"], m["bytesize"], m["written_by"]) == (1, 22, human(ada, "ada"))
    assert m["created_by"] == human(ada, "ada")
    mem = m["memory_id"]
    assert mems.detail(ada, mem)["promoted_from"] == origin
    # And the file is at the source path's last segment, holding version 0's text
    (row,) = mems.file_listing(ada, mem)
    assert (row["path"], row["lock_version"], row["content_sha256"]) == ("deploy.md", 0, sha("deploy with make ship\n"))
    CACHE.clear()
    assert mems.file(ada, mem, "deploy.md")["content"] == "deploy with make ship\n"
    # And its first version carries the same provenance
    (first,) = mems.history(ada, mem, "deploy.md")
    assert (first["operation"], first["promoted_from"], first["author"]) == ("promote", origin, human(ada, "ada"))
    assert first["content_sha256"] == before[0][-1]["content_sha256"]
    # And no byte moved: the bucket holds the same objects, and the new pointer names the source version's
    assert bucket_objects("content/") == objects
    assert doc_key(f"memory#{mem}", "deploy.md") == record_key(f"workspace#{ws}", "guides/deploy.md", 0)
    # And the source is untouched
    assert source_state(api, ada, ws_base(ws), "workspace/guides/deploy.md") == before


def test_a_promote_from_a_conversation_document_may_name_the_file_and_make_a_tenant_default(
    api: Api, mems: Files
) -> None:
    ada, ws, conv = api.room()
    base = conv_base(ws, conv)
    c0 = created(api.write(ada, base, "conversation/finding.md", "the build needs node 20\n"))
    helper = api.agent(ada)
    before = source_state(api, ada, base, "conversation/finding.md")
    objects = bucket_objects("content/")

    r = mems.promote(
        ada,
        conv_source(ws, conv, "conversation/finding.md", 0),
        "build-facts",
        file_path="ci/node.md",
        default={"reach": "account"},
    )

    m = promoted(r)
    assert m["promoted_from"]["anchor_public_id"] == conv
    assert (m["promoted_from"]["path"], m["promoted_from"]["public_id"]) == ("conversation/finding.md", c0[0])
    # A tenant default: every agent of the account reaches it, read-only unless it says otherwise
    assert m["default"] == {"reach": "account", "deployment": None, "mode": "readonly", "read_first": False}
    mem = m["memory_id"]
    reached = api.get(f"/agents/{helper.public_id}/memories", ada).json()["memories"]
    assert [(e["memory_id"], e["via"], e["mode"]) for e in reached] == [(mem, "default", "readonly")]
    assert mems.file(helper, mem, "ci/node.md")["content"] == "the build needs node 20\n"
    # The file sits at the path asked for, its first version naming the conversation document
    assert [f["path"] for f in mems.file_listing(ada, mem)] == ["ci/node.md"]
    assert mems.history(ada, mem, "ci/node.md")[0]["promoted_from"] == m["promoted_from"]
    assert bucket_objects("content/") == objects
    assert source_state(api, ada, base, "conversation/finding.md") == before


def test_a_promote_from_a_memorys_file_names_the_memory_it_came_from(api: Api, mems: Files) -> None:
    ada = api.account()
    src = mems.made(ada, "team-notes")["memory_id"]
    f0 = mems.written(mems.write(ada, src, "runbooks/restart.md", "restart with systemctl\n"))
    mems.written(mems.write(ada, src, "runbooks/restart.md", "restart: ask ops\n", pair(f0)))
    before = mems.state(ada, src)
    objects = bucket_objects("content/")

    m = promoted(mems.promote(ada, {"memory_id": src, "path": "runbooks/restart.md", "lock_version": 0}, "restart"))

    origin = m["promoted_from"]
    assert "anchor_public_id" not in origin
    assert {k: origin[k] for k in ("memory_id", "path", "public_id", "lock_version")} == {
        "memory_id": src,
        "path": "runbooks/restart.md",
        "public_id": f0["public_id"],
        "lock_version": 0,
    }
    assert origin["promoted_by"] == human(ada, "ada")
    mem = m["memory_id"]
    assert mems.file(ada, mem, "restart.md")["content"] == "restart with systemctl\n"
    assert mems.history(ada, mem, "restart.md")[0]["promoted_from"] == origin
    assert bucket_objects("content/") == objects
    assert doc_key(f"memory#{mem}", "restart.md") == record_key(f"memory#{src}", "runbooks/restart.md", 0)
    assert mems.state(ada, src) == before
    # And the map draws where it came from
    graph = api.get("/memory_map", ada).json()
    assert {"from": src, "to": mem, "kind": "provenance"} in graph["edges"]


# ---- refusals -------------------------------------------------------------------------------------------------


def test_a_source_the_caller_cannot_read_is_not_found_and_nothing_is_created(api: Api, mems: Files) -> None:
    ada, ws, conv = api.room()
    created(api.write(ada, ws_base(ws), "workspace/x.md", "room text\n"))
    created(api.write(ada, conv_base(ws, conv), "conversation/x.md", "conversation text\n"))
    mem = mems.made(ada, "private", access={"humans": [], "workspaces": []})["memory_id"]
    mems.written(mems.write(ada, mem, "x.md", "private text\n"))
    zed = api.account("globex", "zed")
    bob = api.human(ada, "bob")  # of Ada's account, but neither in her workspace nor on the Memory's panel
    objects = bucket_objects("content/")
    sources = [
        ws_source(ws, "workspace/x.md", 0),
        conv_source(ws, conv, "conversation/x.md", 0),
        {"memory_id": mem, "path": "x.md", "lock_version": 0},
    ]
    for who in (zed, bob):
        for source in sources:
            assert code(mems.promote(who, source, "stolen")) == (404, "not_found"), source
        assert mems.memory_ids(who) == []
    assert mems.memory_ids(ada) == [mem]
    assert bucket_objects("content/") == objects


def test_an_unknown_version_or_path_is_not_found_and_a_redacted_one_refused(api: Api, mems: Files) -> None:
    ada, ws, _ = api.room()
    d0 = created(api.write(ada, ws_base(ws), "workspace/x.md", "v0\n"))
    d1 = created(api.write(ada, ws_base(ws), "workspace/x.md", "v1\n", d0))
    src = mems.made(ada, "notes", files=[{"path": "x.md", "content": "file v0\n"}])["memory_id"]
    before = source_state(api, ada, ws_base(ws), "workspace/x.md"), mems.state(ada, src)
    cases = [
        (ws_source(ws, "workspace/x.md", 2), (404, "memory_version_not_found")),
        ({"memory_id": src, "path": "x.md", "lock_version": 1}, (404, "memory_version_not_found")),
        (ws_source(ws, "workspace/none.md", 0), (404, "memory_not_found")),
        ({"memory_id": src, "path": "none.md", "lock_version": 0}, (404, "memory_not_found")),
        ({"memory_id": "mem_" + "0" * 32, "path": "x.md", "lock_version": 0}, (404, "not_found")),
    ]
    for source, expected in cases:
        assert code(mems.promote(ada, source, "copy")) == expected, source
    assert mems.memory_ids(ada) == [src]
    assert (source_state(api, ada, ws_base(ws), "workspace/x.md"), mems.state(ada, src)) == before
    # A version whose text was redacted has nothing left to promote
    assert redact(api, ada, ws_base(ws), "workspace/x.md", 0, d1).status_code == 200
    assert code(mems.promote(ada, ws_source(ws, "workspace/x.md", 0), "copy")) == (409, "memory_version_redacted")
    assert mems.memory_ids(ada) == [src]


def test_a_pii_tagged_version_is_not_promoted_until_it_is_rewritten(api: Api, mems: Files) -> None:
    ada, ws, _ = api.room()
    d0 = created(api.write(ada, ws_base(ws), "workspace/vendor.md", "Vendor: " + PII_SAMPLES["phone"]))
    src = mems.made(ada, "notes", files=[{"path": "card.md", "content": PII_SAMPLES["card"]}])["memory_id"]
    before = source_state(api, ada, ws_base(ws), "workspace/vendor.md"), mems.state(ada, src)
    r = mems.promote(ada, ws_source(ws, "workspace/vendor.md", 0), "vendors")
    assert code(r) == (422, "memory_pii_blocked")
    assert "phone" in r.json()["error"]["message"]
    card = {"memory_id": src, "path": "card.md", "lock_version": 0}
    assert code(mems.promote(ada, card, "vendors")) == (422, "memory_pii_blocked")
    assert mems.memory_ids(ada) == [src]
    assert (source_state(api, ada, ws_base(ws), "workspace/vendor.md"), mems.state(ada, src)) == before
    # Rewritten without it, the new version is promoted (the old one stays refused)
    created(api.write(ada, ws_base(ws), "workspace/vendor.md", "Vendor: see the portal.", d0))
    assert code(mems.promote(ada, ws_source(ws, "workspace/vendor.md", 0), "vendors")) == (422, "memory_pii_blocked")
    m = promoted(mems.promote(ada, ws_source(ws, "workspace/vendor.md", 1), "vendors"))
    assert mems.file(ada, m["memory_id"], "vendor.md")["pii"] == []


def test_the_new_memorys_name_and_the_promoter_are_checked_as_at_creation(api: Api, mems: Files) -> None:
    ada, ws, _ = api.room()
    created(api.write(ada, ws_base(ws), "workspace/x.md", "text\n"))
    taken = mems.made(ada, "taken")["memory_id"]
    helper = api.agent(ada)
    api.member(ada, ws, helper)
    source = ws_source(ws, "workspace/x.md", 0)
    before = source_state(api, ada, ws_base(ws), "workspace/x.md")
    assert code(mems.promote(ada, source, "taken")) == (409, "memory_name_taken")
    for name in ("Not-Kebab", "workspace", "a" * 65):
        assert code(mems.promote(ada, source, name)) == (422, "memory_name_invalid"), name
    assert code(mems.promote(ada, source, "ok", description="x" * 1025)) == (422, "memory_description_invalid")
    assert code(mems.promote(ada, source, "ok", file_path="../x.md")) == (422, "memory_path_invalid")
    assert code(mems.promote(ada, source, "ok", default={"reach": "galaxy"})) == (422, "validation_failed")
    # An agent that reads the workspace still cannot make a Memory
    assert code(mems.promote(helper, source, "ok")) == (403, "not_authorized")
    assert mems.memory_ids(ada) == [taken]
    assert source_state(api, ada, ws_base(ws), "workspace/x.md") == before


# ---- the handed-off object --------------------------------------------------------------------------------------


def test_redacting_the_promoted_source_version_leaves_the_promoted_file_readable(api: Api, mems: Files) -> None:
    # Given a workspace document whose version 0 was promoted into a Memory, and a version 1 written since
    ada, ws, _ = api.room()
    d0 = created(api.write(ada, ws_base(ws), "workspace/howto.md", "the useful text\n"))
    key = record_key(f"workspace#{ws}", "howto.md", 0)
    assert key is not None
    mem = promoted(mems.promote(ada, ws_source(ws, "workspace/howto.md", 0), "howto"))["memory_id"]
    d1 = created(api.write(ada, ws_base(ws), "workspace/howto.md", "rewritten\n", d0))

    # When Ada redacts version 0 in the workspace
    r = redact(api, ada, ws_base(ws), "workspace/howto.md", 0, d1)

    # Then the workspace's record lets go of the text...
    assert r.status_code == 200, r.text
    assert (r.json()["version"]["redacted"], r.json()["version"]["content"]) == (True, None)
    assert record_key(f"workspace#{ws}", "howto.md", 0) is None
    # ...but the object stays, since the Memory's file holds it, which still reads (from S3 itself)
    assert bucket_objects("content/")[key] == "the useful text\n"
    CACHE.clear()
    assert mems.file(ada, mem, "howto.md")["content"] == "the useful text\n"
    assert mems.version_show(ada, mem, "howto.md", 0).json()["version"]["content"] == "the useful text\n"
    assert mems.grep(ada, mem, "useful").json()["matches"] == [
        {"path": "howto.md", "line_number": 1, "text": "the useful text"}
    ]


def test_a_version_never_promoted_is_still_deleted_at_once_by_a_redaction(api: Api, mems: Files) -> None:
    # The control for the test above: the same steps without the promote delete the bytes at once
    ada, ws, _ = api.room()
    d0 = created(api.write(ada, ws_base(ws), "workspace/howto.md", "the useful text\n"))
    key = record_key(f"workspace#{ws}", "howto.md", 0)
    d1 = created(api.write(ada, ws_base(ws), "workspace/howto.md", "rewritten\n", d0))
    assert redact(api, ada, ws_base(ws), "workspace/howto.md", 0, d1).status_code == 200
    assert key not in bucket_objects("content/")
