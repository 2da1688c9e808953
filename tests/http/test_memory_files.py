"""Organization Memories over HTTP (issue 13): creation and its refusals, and the files door.

A Memory's name is kebab-case, unique in its account and immutable; its files are written, read, edited,
deleted, searched, versioned and rolled back through `/memories/{id}/files...` with the seed-000 condition
pair, each answer naming the file by its path relative to the Memory. Every refusal leaves the Memory as
it was: its detail (file count, bytes, last writer), its listing, its files' texts and histories.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from agent_memory.core import model
from agent_memory.store import CACHE

from ..support import Api, Who, code
from .histories import sha, version_items
from .orgmem import Files, pair
from .world import bucket_objects, scan_table

pytestmark = pytest.mark.http

MIB = 1024 * 1024
FILE_KEYS = {
    "path",
    "public_id",
    "lock_version",
    "bytesize",
    "written_at",
    "written_by",
    "content_sha256",
    "pii",
    "quarantine",
    "content",
}
SUMMARY_KEYS = {"path", "public_id", "lock_version", "bytesize", "written_at", "written_by", "content_sha256"}


@pytest.fixture
def mems(api: Api) -> Files:
    return Files(api)


def human(who: Who, name: str) -> dict[str, Any]:
    return {"kind": "human", "public_id": who.public_id, "name": name}


def one_memory(api: Api, mems: Files, **fields: Any) -> tuple[Who, str]:
    ada = api.account()
    return ada, mems.made(ada, **fields)["memory_id"]


# ---- creation ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "Runbooks",  # uppercase
        "run_books",  # an underscore
        "-runbooks",  # a leading hyphen
        "runbooks-",  # a trailing hyphen
        "run--books",  # a double hyphen
        "run books",
        "rünbooks",
        "",
        "a" * 65,
        42,
        None,
        ["runbooks"],
    ],
)
def test_a_name_outside_the_grammar_is_refused_and_creates_nothing(api: Api, mems: Files, name: Any) -> None:
    ada = api.account()
    r = mems.create(ada, name)
    assert code(r) == (422, "memory_name_invalid")
    assert mems.memory_ids(ada) == []


def test_names_at_the_edges_of_the_grammar_are_accepted(api: Api, mems: Files) -> None:
    ada = api.account()
    for name in ("a", "a" * 64, "team-runbooks-2", "0-9", "v2"):
        assert mems.made(ada, name)["name"] == name
    assert len(mems.memory_ids(ada)) == 5


@pytest.mark.parametrize("name", ["agent", "user", "conversation", "workspace", "speaker"])
def test_the_names_of_the_servers_own_scopes_are_reserved(api: Api, mems: Files, name: str) -> None:
    ada = api.account()
    r = mems.create(ada, name)
    assert code(r) == (422, "memory_name_invalid")
    assert "reserved" in r.json()["error"]["message"]
    assert mems.memory_ids(ada) == []
    # A name that only contains one is an ordinary name
    assert mems.made(ada, f"{name}-notes")["name"] == f"{name}-notes"


def test_a_name_is_unique_in_its_account_only_and_free_again_once_its_memory_is_deleted(api: Api, mems: Files) -> None:
    ada = api.account()
    first = mems.made(ada, "runbooks", files=[{"path": "a.md", "content": "first\n"}])
    before = mems.state(ada, first["memory_id"])
    # When Ada (or Bob, of the same account) creates another Memory with the same name
    bob = api.human(ada, "bob")
    for who in (ada, bob):
        r = mems.create(who, "runbooks", files=[{"path": "a.md", "content": "second\n"}])
        # Then it is refused, and the Memory that holds the name is as it was
        assert code(r) == (409, "memory_name_taken")
    assert mems.memory_ids(ada) == [first["memory_id"]]
    assert mems.state(ada, first["memory_id"]) == before
    # And another account may use the name
    zed = api.account("globex", "zed")
    assert mems.made(zed, "runbooks")["name"] == "runbooks"
    # And once the first Memory is deleted, the name is Ada's account's to use again
    assert mems.delete_memory(ada, first["memory_id"]).status_code == 204
    again = mems.made(ada, "runbooks")
    assert again["memory_id"] != first["memory_id"] and again["file_count"] == 0


def test_a_description_is_at_most_1024_bytes_counted_in_utf8(api: Api, mems: Files) -> None:
    ada = api.account()
    # 513 two-byte characters are 1026 bytes; 1025 ASCII ones 1025
    for description in ("é" * 513, "x" * 1025):
        r = mems.create(ada, "notes", description=description)
        assert code(r) == (422, "memory_description_invalid")
    assert code(mems.create(ada, "notes", description=5)) == (422, "memory_description_invalid")
    assert mems.memory_ids(ada) == []
    # 512 two-byte characters are exactly 1024 bytes
    made = mems.made(ada, "notes", description="é" * 512)
    assert made["description"] == "é" * 512


def test_the_name_is_immutable_and_the_description_editable(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems, name="runbooks", description="old words")
    # When a PATCH sends a new name with a new description
    r = mems.patch(ada, mem, name="renamed", description="new words")
    # Then it is refused, naming the field no PATCH takes, and nothing changes
    assert code(r) == (400, "parameter_invalid"), r.text
    assert "`memory.name`" in r.json()["error"]["message"], r.text
    assert (mems.detail(ada, mem)["name"], mems.detail(ada, mem)["description"]) == ("runbooks", "old words")
    # And the description alone changes
    r = mems.patch(ada, mem, description="new words")
    assert r.status_code == 200, r.text
    assert (r.json()["memory"]["name"], r.json()["memory"]["description"]) == ("runbooks", "new words")
    shown = mems.detail(ada, mem)
    # And the name it holds is still taken, the one it was sent never claimed
    assert code(mems.create(ada, "runbooks")) == (409, "memory_name_taken")
    assert mems.made(ada, "renamed")["name"] == "renamed"
    # And the description is bounded on a PATCH too, refusing without a change
    assert code(mems.patch(ada, mem, description="x" * 1025)) == (422, "memory_description_invalid")
    assert mems.detail(ada, mem) == shown


def test_files_given_at_creation_are_the_memorys_first_versions(api: Api, mems: Files) -> None:
    ada = api.account()
    files = [{"path": "deploy/steps.md", "content": "1. build\n"}, {"path": "oncall.md", "content": "page ops\n"}]
    made = mems.made(ada, "runbooks", files=files)
    assert (made["file_count"], made["bytesize"]) == (2, 9 + 9)
    assert made["written_by"] == human(ada, "ada")
    mem = made["memory_id"]
    rows = mems.file_listing(ada, mem)
    assert [(f["path"], f["lock_version"], f["content_sha256"]) for f in rows] == [
        ("deploy/steps.md", 0, sha("1. build\n")),
        ("oncall.md", 0, sha("page ops\n")),
    ]
    assert [v["operation"] for v in mems.history(ada, mem, "oncall.md")] == ["write"]


@pytest.mark.parametrize("path", ["a//b.md", "../x.md", "./x.md", "a/../b.md", "/lead.md", "a/", "", 7])
def test_a_bad_file_path_at_creation_is_refused_and_creates_nothing(api: Api, mems: Files, path: Any) -> None:
    ada = api.account()
    r = mems.create(ada, "runbooks", files=[{"path": "ok.md", "content": "fine\n"}, {"path": path, "content": "x"}])
    assert code(r) == (422, "memory_path_invalid")
    assert mems.memory_ids(ada) == []


def test_a_repeated_path_or_more_than_32_files_at_creation_is_refused(api: Api, mems: Files) -> None:
    ada = api.account()
    twice = [{"path": "a.md", "content": "one"}, {"path": "a.md", "content": "two"}]
    assert code(mems.create(ada, "runbooks", files=twice)) == (422, "validation_failed")
    many = [{"path": f"f{i:02d}.md", "content": "x"} for i in range(33)]
    assert code(mems.create(ada, "runbooks", files=many)) == (422, "validation_failed")
    assert mems.memory_ids(ada) == []
    # And 32 are one transaction's worth, accepted
    made = mems.made(ada, "runbooks", files=many[:32])
    assert (made["file_count"], made["bytesize"]) == (32, 32)


def test_a_file_over_1_mib_at_creation_is_refused_and_exactly_1_mib_accepted(api: Api, mems: Files) -> None:
    ada = api.account()
    big = [{"path": "small.md", "content": "x"}, {"path": "big.md", "content": "x" * (MIB + 1)}]
    assert code(mems.create(ada, "runbooks", files=big)) == (422, "memory_document_too_large")
    assert mems.memory_ids(ada) == []
    made = mems.made(ada, "runbooks", files=[{"path": "big.md", "content": "x" * MIB}])
    assert (made["file_count"], made["bytesize"]) == (1, MIB)


def test_only_a_human_creates_a_memory(api: Api, mems: Files) -> None:
    ada = api.account()
    helper = api.agent(ada)
    r = mems.create(helper, "runbooks", files=[{"path": "a.md", "content": "x"}])
    assert code(r) == (403, "not_authorized")
    assert mems.memory_ids(ada) == []
    assert code(api.post("/memories", None, {"memory": {"name": "runbooks"}})) == (401, "not_authenticated")
    assert mems.memory_ids(ada) == []


@pytest.mark.parametrize(
    "default",
    [
        {"reach": "galaxy"},
        {"reach": "deployment"},  # names no deployment
        {"reach": "account", "deployment": "eu-prod"},  # names one it does not reach
        {"reach": "deployment", "deployment": 5},
        {"reach": "deployment", "deployment": "EU Prod!"},  # not a deployment label
        {"reach": "account", "mode": "write"},
        {"reach": "account", "read_first": "yes"},
    ],
)
def test_a_default_of_the_wrong_shape_is_refused_and_creates_nothing(
    api: Api, mems: Files, default: dict[str, Any]
) -> None:
    ada = api.account()
    assert code(mems.create(ada, "runbooks", default=default)) == (422, "validation_failed")
    assert mems.memory_ids(ada) == []
    # And a PATCH with it changes nothing either
    mem = mems.made(ada, "runbooks")["memory_id"]
    before = mems.detail(ada, mem)
    assert code(mems.patch(ada, mem, default=default)) == (422, "validation_failed")
    assert mems.detail(ada, mem) == before


def test_a_default_that_is_no_object_is_a_bad_parameter_as_everywhere(api: Api, mems: Files) -> None:
    # The API's rule for a field of the wrong JSON type (docs/decisions.md): 400, not a validation verdict
    ada = api.account()
    assert code(mems.create(ada, "runbooks", default="account")) == (400, "parameter_invalid")
    assert code(mems.create(ada, "runbooks", default={})) == (400, "parameter_missing")
    assert mems.memory_ids(ada) == []


def test_a_default_of_the_right_shape_is_kept_with_its_read_first_rule(api: Api, mems: Files) -> None:
    ada = api.account()
    eu = mems.made(ada, "eu-notes", default={"reach": "deployment", "deployment": "eu-prod"})
    assert eu["default"] == {"reach": "deployment", "deployment": "eu-prod", "mode": "readonly", "read_first": False}
    rw = mems.made(ada, "scratch", default={"reach": "account", "mode": "readwrite"})
    assert rw["default"] == {"reach": "account", "deployment": None, "mode": "readwrite", "read_first": True}


# ---- the files door: writes and the condition pair ----------------------------------------------------------


def test_a_write_creates_with_null_null_and_replaces_with_the_pair_it_read(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems)
    # When Ada creates a file with null/null
    f0 = mems.written(mems.write(ada, mem, "deploy/steps.md", "1. build\n"))
    # Then it is version 0, in the show shape, named by its path in the Memory
    assert set(f0) == FILE_KEYS
    assert (f0["path"], f0["lock_version"], f0["content"], f0["bytesize"]) == ("deploy/steps.md", 0, "1. build\n", 9)
    assert f0["content_sha256"] == sha("1. build\n") and f0["written_by"] == human(ada, "ada")
    # And a replace under its pair is version 1 of the same file
    f1 = mems.written(mems.write(ada, mem, "deploy/steps.md", "1. build\n2. ship\n", pair(f0)))
    assert (f1["public_id"], f1["lock_version"], f1["content"]) == (f0["public_id"], 1, "1. build\n2. ship\n")
    assert mems.file(ada, mem, "deploy/steps.md") == f1


def test_a_write_against_what_is_there_now_is_refused_and_changes_nothing(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems)
    f0 = mems.written(mems.write(ada, mem, "plan.md", "v0\n"))
    f1 = mems.written(mems.write(ada, mem, "plan.md", "v1\n", pair(f0)))
    before = mems.state(ada, mem)
    other_id = "01990000-0000-7000-8000-0000000000ff"
    # A create over an existing file, the pair it had before, a pair from the future or another id
    for expected in (None, pair(f0), (f1["public_id"], 2), (other_id, 1)):
        r = mems.write(ada, mem, "plan.md", "lost\n", expected)
        assert code(r) == (409, "stale_object"), expected
    # Half a pair is no condition at all
    halves: list[tuple[Any, Any]] = [(f1["public_id"], None), (None, 1)]
    for half in halves:
        assert code(mems.write(ada, mem, "plan.md", "lost\n", half)) == (400, "parameter_invalid")
    assert mems.state(ada, mem) == before


def test_show_answers_the_file_or_memory_not_found(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems, files=[{"path": "a/b.md", "content": "text\n"}])
    shown = mems.file(ada, mem, "a/b.md")
    assert set(shown) == FILE_KEYS and (shown["path"], shown["content"]) == ("a/b.md", "text\n")
    for missing in ("a/c.md", "a", "b.md"):
        assert code(mems.show_file(ada, mem, missing)) == (404, "memory_not_found")
    assert code(mems.show_file(ada, mem, "../a/b.md")) == (422, "memory_path_invalid")
    # An unknown Memory, or another account's, is not found as a whole
    assert code(mems.show_file(ada, "mem_" + "0" * 32, "a/b.md")) == (404, "not_found")
    zed = api.account("globex", "zed")
    assert code(mems.show_file(zed, mem, "a/b.md")) == (404, "not_found")


def test_an_edit_replaces_exactly_one_occurrence_or_is_refused(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems)
    f0 = mems.written(mems.write(ada, mem, "notes/todo.md", "- buy milk\n- call bob\n- call bob\n"))
    before = mems.state(ada, mem)
    # Old text that does not occur, or occurs twice
    assert code(mems.edit(ada, mem, "notes/todo.md", "sell milk", "x", pair(f0))) == (422, "memory_edit_not_found")
    assert code(mems.edit(ada, mem, "notes/todo.md", "call bob", "x", pair(f0))) == (422, "memory_edit_ambiguous")
    # A stale pair, null/null, or a file that is not there
    assert code(mems.edit(ada, mem, "notes/todo.md", "buy milk", "x", (f0["public_id"], 1))) == (409, "stale_object")
    assert code(mems.edit(ada, mem, "notes/todo.md", "buy milk", "x", None)) == (400, "parameter_invalid")
    assert code(mems.edit(ada, mem, "notes/other.md", "buy milk", "x", pair(f0))) == (409, "stale_object")
    assert mems.state(ada, mem) == before
    # And an edit that matches once is the next version, answered under its relative path
    r = mems.edit(ada, mem, "notes/todo.md", "buy milk", "buy oat milk", pair(f0))
    f1 = mems.written(r, 200)
    assert (f1["path"], f1["lock_version"]) == ("notes/todo.md", 1)
    assert f1["content"] == "- buy oat milk\n- call bob\n- call bob\n"
    assert f1["bytesize"] == len(f1["content"])


def test_a_delete_is_gone_at_once_and_refused_with_a_stale_pair(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems, files=[{"path": "keep.md", "content": "kept\n"}])
    f0 = mems.written(mems.write(ada, mem, "old/plan.md", "v0\n"))
    f1 = mems.written(mems.write(ada, mem, "old/plan.md", "v1\n", pair(f0)))
    before = mems.state(ada, mem)
    assert code(mems.delete_file(ada, mem, "old/plan.md", pair(f0))) == (409, "stale_object")
    assert code(mems.delete_file(ada, mem, "old/plan.md", None)) == (400, "parameter_invalid")
    assert code(mems.delete_file(ada, mem, "old/none.md", pair(f1))) == (409, "stale_object")
    assert mems.state(ada, mem) == before
    # When the current pair deletes it
    r = mems.delete_file(ada, mem, "old/plan.md", pair(f1))
    # Then 204, and no read finds it any more
    assert (r.status_code, r.text) == (204, "")
    assert code(mems.show_file(ada, mem, "old/plan.md")) == (404, "memory_not_found")
    assert code(mems.versions(ada, mem, "old/plan.md")) == (404, "memory_not_found")
    assert [f["path"] for f in mems.file_listing(ada, mem)] == ["keep.md"]
    assert mems.grep(ada, mem, "v1").json()["matches"] == []
    # And the old pair cannot bring it back; a create with null/null starts a new file at version 0
    assert code(mems.delete_file(ada, mem, "old/plan.md", pair(f1))) == (409, "stale_object")
    again = mems.written(mems.write(ada, mem, "old/plan.md", "new\n"))
    assert again["lock_version"] == 0 and again["public_id"] != f0["public_id"]


# ---- listing and search --------------------------------------------------------------------------------------


def test_the_listing_pages_by_next_cursor_and_filters_by_prefix(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems)
    paths = ["a.md", "deploy/one.md", "deploy/two.md", "deploy-notes.md", "deployment/x.md", "z/deep/er.md"]
    for path in paths:
        mems.written(mems.write(ada, mem, path, f"text of {path}\n"))
    # A page of two answers a cursor; following it walks every file exactly once, in path order
    first = mems.files(ada, mem, limit="2")
    assert first.status_code == 200, first.text
    page = first.json()
    assert [f["path"] for f in page["files"]] == ["a.md", "deploy-notes.md"] and page["next_cursor"]
    assert all(set(f) == SUMMARY_KEYS for f in page["files"])
    walked = mems.file_listing(ada, mem, limit="2")
    assert [f["path"] for f in walked] == sorted(paths)
    assert mems.files(ada, mem, limit="6").json()["next_cursor"] is None
    # A prefix names a folder (with or without its trailing slash) or one file, never a sibling's name start
    for prefix in ("deploy", "deploy/"):
        assert [f["path"] for f in mems.file_listing(ada, mem, prefix=prefix)] == ["deploy/one.md", "deploy/two.md"]
    assert [f["path"] for f in mems.file_listing(ada, mem, prefix="deploy/one.md")] == ["deploy/one.md"]
    assert [f["path"] for f in mems.file_listing(ada, mem, prefix="z")] == ["z/deep/er.md"]
    assert mems.file_listing(ada, mem, prefix="nothing") == []
    assert [f["path"] for f in mems.file_listing(ada, mem, prefix="")] == sorted(paths)
    # Each row is what show answers, less the text
    shown = mems.file(ada, mem, "deploy/one.md")
    row = next(f for f in walked if f["path"] == "deploy/one.md")
    assert row == {k: shown[k] for k in SUMMARY_KEYS}


def test_the_listing_refuses_a_bad_limit_or_prefix(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems, files=[{"path": "a.md", "content": "x"}])
    for limit in ("0", "1001", "-1", "two"):
        assert code(mems.files(ada, mem, limit=limit)) == (400, "parameter_invalid"), limit
    assert mems.files(ada, mem, limit="1000").status_code == 200
    for prefix in ("../a", "/a", "a//b"):
        assert code(mems.files(ada, mem, prefix=prefix)) == (422, "memory_path_invalid"), prefix


def test_grep_answers_matches_by_relative_path_under_a_prefix(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems)
    mems.written(mems.write(ada, mem, "deploy/steps.md", "build the image\nship the image\n"))
    mems.written(mems.write(ada, mem, "oncall.md", "page the image owner\n"))
    r = mems.grep(ada, mem, "image")
    assert r.status_code == 200, r.text
    assert set(r.json()) >= {"matches", "truncated"} and r.json()["truncated"] is False
    assert r.json()["matches"] == [
        {"path": "deploy/steps.md", "line_number": 1, "text": "build the image"},
        {"path": "deploy/steps.md", "line_number": 2, "text": "ship the image"},
        {"path": "oncall.md", "line_number": 1, "text": "page the image owner"},
    ]
    under = mems.grep(ada, mem, "image", path="deploy/")
    assert [(m["path"], m["line_number"]) for m in under.json()["matches"]] == [
        ("deploy/steps.md", 1),
        ("deploy/steps.md", 2),
    ]
    assert mems.grep(ada, mem, "IMAGE").json()["matches"] == []
    assert len(mems.grep(ada, mem, "IMAGE", ignore_case=True).json()["matches"]) == 3
    limited = mems.grep(ada, mem, "image", limit=2).json()
    assert (len(limited["matches"]), limited["truncated"]) == (2, True)
    assert code(mems.grep(ada, mem, "image", path="../x")) == (422, "memory_path_invalid")


# ---- versions and rollback ------------------------------------------------------------------------------------


def test_versions_list_newest_first_with_their_authors_and_show_one_with_its_text(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems)
    bob = api.human(ada, "bob")
    f0 = mems.written(mems.write(ada, mem, "plan.md", "ada's plan\n"))
    f1 = mems.written(mems.write(bob, mem, "plan.md", "bob's plan\n", pair(f0)))
    f2 = mems.written(mems.edit(ada, mem, "plan.md", "bob's", "our", pair(f1)), 200)
    rows = mems.history(ada, mem, "plan.md")
    assert [(v["lock_version"], v["operation"], v["author"]) for v in rows] == [
        (2, "edit", human(ada, "ada")),
        (1, "write", human(bob, "bob")),
        (0, "write", human(ada, "ada")),
    ]
    assert all(v["path"] == "plan.md" and v["public_id"] == f0["public_id"] for v in rows)
    assert [v["content_sha256"] for v in rows] == [sha("our plan\n"), sha("bob's plan\n"), sha("ada's plan\n")]
    # And the file's written_by follows each writer, as the listing shows it
    assert f1["written_by"] == human(bob, "bob") and f2["written_by"] == human(ada, "ada")
    # And a page of one walks them with a cursor
    page = mems.versions(ada, mem, "plan.md", limit=1).json()
    assert [v["lock_version"] for v in page["versions"]] == [2] and page["next_cursor"]
    rest = mems.versions(ada, mem, "plan.md", limit=5, cursor=page["next_cursor"]).json()
    assert [v["lock_version"] for v in rest["versions"]] == [1, 0] and rest["next_cursor"] is None
    # And one old version shows with its text, the record as the listing gave it
    r = mems.version_show(ada, mem, "plan.md", 1)
    assert r.status_code == 200, r.text
    shown = r.json()["version"]
    assert shown == {**rows[1], "content": "bob's plan\n"}


def test_an_unknown_version_is_not_found_and_a_bad_number_refused(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems, files=[{"path": "plan.md", "content": "v0\n"}])
    assert code(mems.version_show(ada, mem, "plan.md", 1)) == (404, "memory_version_not_found")
    assert code(mems.version_show(ada, mem, "plan.md", 10**6)) == (404, "memory_version_not_found")
    assert code(mems.version_show(ada, mem, "other.md", 0)) == (404, "memory_not_found")
    for bad in (-1, "0", 1.5, None):
        assert code(mems.version_show(ada, mem, "plan.md", bad)) == (400, "parameter_invalid"), bad


def test_a_rollback_is_a_new_version_pointing_at_the_old_content(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems)
    bob = api.human(ada, "bob")
    f0 = mems.written(mems.write(ada, mem, "plan.md", "the good plan\n"))
    f1 = mems.written(mems.write(ada, mem, "plan.md", "a worse plan, longer\n", pair(f0)))
    objects_before = bucket_objects("content/")
    # When Bob rolls plan.md back to version 0 under its current pair
    r = mems.rollback(bob, mem, "plan.md", 0, pair(f1))
    # Then the answer is version 2, in the show shape, holding version 0's text, by Bob
    f2 = mems.written(r)
    assert set(f2) == FILE_KEYS
    assert (f2["path"], f2["public_id"], f2["lock_version"]) == ("plan.md", f0["public_id"], 2)
    assert (f2["content"], f2["content_sha256"], f2["bytesize"]) == ("the good plan\n", sha("the good plan\n"), 14)
    assert f2["written_by"] == human(bob, "bob")
    # And its record says where it came from
    top = mems.history(ada, mem, "plan.md")[0]
    assert (top["lock_version"], top["operation"], top["rolled_back_from"]) == (2, "rollback", 0)
    assert top["author"] == human(bob, "bob")
    # And no byte moved: no new object, and the pointer names version 0's object
    assert bucket_objects("content/") == objects_before
    records = {int(v["lock_version"]): v.get("content_key") for v in version_items("plan.md")}
    doc = next(i for i in scan_table() if i.get("sk") == "DOC#plan.md")
    assert doc["content_key"] == records[0] == records[2] != records[1]
    # And the Memory counts the restored bytes, by its latest writer
    detail = mems.detail(ada, mem)
    assert (detail["file_count"], detail["bytesize"], detail["written_by"]) == (1, 14, human(bob, "bob"))


def test_a_refused_rollback_changes_nothing(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems)
    f0 = mems.written(mems.write(ada, mem, "plan.md", "v0\n"))
    f1 = mems.written(mems.write(ada, mem, "plan.md", "v1\n", pair(f0)))
    before = mems.state(ada, mem)
    assert code(mems.rollback(ada, mem, "plan.md", 0, pair(f0))) == (409, "stale_object")
    assert code(mems.rollback(ada, mem, "plan.md", 0, None)) == (400, "parameter_invalid")
    assert code(mems.rollback(ada, mem, "plan.md", 0, (f1["public_id"], None))) == (400, "parameter_invalid")
    assert code(mems.rollback(ada, mem, "plan.md", 5, pair(f1))) == (404, "memory_version_not_found")
    assert code(mems.rollback(ada, mem, "gone.md", 0, pair(f1))) == (404, "memory_not_found")
    assert code(mems.rollback(ada, mem, "plan.md", -1, pair(f1))) == (400, "parameter_invalid")
    assert mems.state(ada, mem) == before


# ---- limits -------------------------------------------------------------------------------------------------------


def test_a_file_holds_exactly_1_mib_and_not_a_byte_more(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems)
    started = time.monotonic()
    # 1 MiB of ASCII, and 1 MiB of two-byte characters (twice the JSON a request carries for it)
    text = "x" * (MIB - 4) + "tail"
    f = mems.written(mems.write(ada, mem, "big.md", text))
    wide = mems.written(mems.write(ada, mem, "wide.md", "é" * (MIB // 2)))
    assert (f["bytesize"], wide["bytesize"]) == (MIB, MIB)
    before = mems.state(ada, mem)
    # One byte more, written, replaced or grown by an edit, is refused
    assert code(mems.write(ada, mem, "over.md", "x" * (MIB + 1))) == (422, "memory_document_too_large")
    assert code(mems.write(ada, mem, "over.md", "é" * (MIB // 2) + "x")) == (422, "memory_document_too_large")
    assert code(mems.write(ada, mem, "big.md", "x" * (MIB + 1), pair(f))) == (422, "memory_document_too_large")
    assert code(mems.edit(ada, mem, "big.md", "tail", "tails", pair(f))) == (422, "memory_document_too_large")
    # And a body past the file routes' 4 MiB bound is refused before it is read
    assert code(mems.write(ada, mem, "huge.md", "x" * (4 * MIB))) == (400, "parameter_invalid")
    assert mems.state(ada, mem) == before
    CACHE.clear()
    assert mems.file(ada, mem, "big.md")["content"] == text
    assert mems.detail(ada, mem)["bytesize"] == 2 * MIB
    assert time.monotonic() - started < 30


def test_the_documented_bound_is_1000_files(api: Api) -> None:
    # The bound the commit's counter condition enforces (documented in the issue and the model)
    assert model.MAX_MEMORY_FILES == 1000
    assert model.max_documents(model.Anchor("memory", "mem_" + "0" * 32)) == 1000
    assert model.MAX_MEMORY_FILE_BYTES == MIB


def test_a_full_memory_refuses_a_new_file_and_accepts_replaces_and_deletes(
    api: Api, mems: Files, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Writing 1,000 files over HTTP takes over two minutes on moto, so the gateway (which runs in this
    # process) is given a bound of 5: the commit's condition on the Memory's counter is the same code.
    monkeypatch.setattr(model, "MAX_MEMORY_FILES", 5)
    ada, mem = one_memory(api, mems, files=[{"path": "f0.md", "content": "0"}, {"path": "f1.md", "content": "1"}])
    written = [mems.written(mems.write(ada, mem, f"f{i}.md", str(i))) for i in range(2, 5)]
    assert mems.detail(ada, mem)["file_count"] == 5
    before = mems.state(ada, mem)
    # When a sixth file is written
    r = mems.write(ada, mem, "f5.md", "5")
    # Then it is refused with memory_full, and nothing changed
    assert code(r) == (422, "memory_full")
    assert "5 files" in r.json()["error"]["message"]
    assert mems.state(ada, mem) == before
    # And a full Memory still takes replaces, edits and rollbacks of the files it holds
    f4 = mems.written(mems.write(ada, mem, "f4.md", "four", pair(written[-1])))
    f4 = mems.written(mems.edit(ada, mem, "f4.md", "four", "FOUR", pair(f4)), 200)
    mems.written(mems.rollback(ada, mem, "f4.md", 0, pair(f4)))
    # And a delete frees the place for a new file
    f2 = written[0]
    assert mems.delete_file(ada, mem, "f2.md", pair(f2)).status_code == 204
    mems.written(mems.write(ada, mem, "f5.md", "5"))
    assert code(mems.write(ada, mem, "f6.md", "6")) == (422, "memory_full")
    assert [f["path"] for f in mems.file_listing(ada, mem)] == ["f0.md", "f1.md", "f3.md", "f4.md", "f5.md"]


def test_the_memorys_counts_and_last_writer_follow_its_files(api: Api, mems: Files) -> None:
    ada, mem = one_memory(api, mems)
    bob = api.human(ada, "bob")

    def counts() -> tuple[int, int, Any]:
        d = mems.detail(ada, mem)
        listed = next(m for m in api.get("/memories", ada).json()["memories"] if m["memory_id"] == mem)
        assert (listed["file_count"], listed["bytesize"], listed["written_by"]) == (
            d["file_count"],
            d["bytesize"],
            d["written_by"],
        )
        return d["file_count"], d["bytesize"], d["written_by"]

    assert counts() == (0, 0, None)
    a = mems.written(mems.write(ada, mem, "a.md", "12345"))
    assert counts() == (1, 5, human(ada, "ada"))
    b = mems.written(mems.write(bob, mem, "b.md", "123"))
    assert counts() == (2, 8, human(bob, "bob"))
    # A replace moves the bytes by the difference; an edit too
    a = mems.written(mems.write(ada, mem, "a.md", "12", pair(a)))
    assert counts() == (2, 5, human(ada, "ada"))
    b = mems.written(mems.edit(bob, mem, "b.md", "123", "1234567", pair(b)), 200)
    assert counts() == (2, 9, human(bob, "bob"))
    # A rollback counts the restored text
    a = mems.written(mems.rollback(ada, mem, "a.md", 0, pair(a)))
    assert counts() == (2, 12, human(ada, "ada"))
    # A refused write moves nothing
    assert code(mems.write(bob, mem, "a.md", "lost", pair(b))) == (409, "stale_object")
    assert counts() == (2, 12, human(ada, "ada"))
    # A delete takes the file's bytes away, and names who deleted
    assert mems.delete_file(bob, mem, "a.md", pair(a)).status_code == 204
    assert counts() == (1, 7, human(bob, "bob"))
    assert mems.delete_file(ada, mem, "b.md", pair(b)).status_code == 204
    assert counts()[:2] == (0, 0)
