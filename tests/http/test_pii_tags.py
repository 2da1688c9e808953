"""PII tags over HTTP (issue 12): every stored version is scanned at write time and carries the kinds it
holds, sorted, wherever people see the document; nothing is refused, the text is stored as written, and
a PII-tagged version is never promoted into the room's shared memory."""

from __future__ import annotations

import pytest

from ..support import Api, code, conv_base, ws_base
from .runs import Run, create, make_run
from .safe_content import (
    ALL_KINDS,
    CLEAN_NOTES,
    PII_SAMPLES,
    block,
    memory,
    pair_of,
    promote,
    sha,
    version,
    versions,
)
from .world import bucket_objects


@pytest.fixture
def run(api: Api) -> Run:
    return make_run(api)


def row(rows: list[dict[str, object]], path: str) -> dict[str, object]:
    (found,) = [r for r in rows if r["path"] == path]
    return found


# ---- tagging ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_a_write_holding_one_kind_is_tagged_with_it_and_stored_as_written(run: Run, kind: str) -> None:
    text = PII_SAMPLES[kind]
    # When Ada writes a note holding one kind of personal data
    doc = memory(run.api.write(run.ada, run.base, "conversation/note.md", text))
    # Then the write is accepted and its answer names that kind
    assert doc["pii"] == [kind]
    assert doc["content"] == text
    # And the text is stored as written: show answers it verbatim, with its hash
    shown = memory(run.api.show(run.ada, run.base, "conversation/note.md"), 200)
    assert shown["content"] == text
    assert shown["content_sha256"] == sha(text)
    assert shown["bytesize"] == len(text.encode())
    assert shown["pii"] == [kind]
    # and the content object in the bucket holds those very bytes
    assert text in bucket_objects("content/").values()


def test_every_kind_in_one_text_is_tagged_once_each_sorted(run: Run) -> None:
    # Given a note holding all six kinds, in an order that is not the alphabet's, one of them twice
    order = ["us_ssn", "phone", "email", "card", "tr_national_id", "iban"]
    text = "\n".join(PII_SAMPLES[k] for k in order) + "\nCc: ada.lovelace@example.com\n"
    # When it is written
    doc = memory(run.api.write(run.ada, run.base, "workspace/everything.md", text))
    # Then the tags are the six kinds, each once, sorted
    assert doc["pii"] == ["card", "email", "iban", "phone", "tr_national_id", "us_ssn"]
    # And two kinds give just those two
    two = PII_SAMPLES["email"] + " " + PII_SAMPLES["card"]
    assert memory(run.api.write(run.ada, run.base, "workspace/two.md", two))["pii"] == ["card", "email"]


@pytest.mark.parametrize("text", CLEAN_NOTES)
def test_a_clean_note_is_tagged_with_nothing(run: Run, text: str) -> None:
    # When a note with dates, times, order ids and versions but no personal data is written
    doc = memory(run.api.write(run.ada, run.base, "conversation/clean.md", text))
    # Then it carries an empty list, everywhere people look
    assert doc["pii"] == []
    assert memory(run.api.show(run.ada, run.base, "conversation/clean.md"), 200)["pii"] == []
    assert row(run.listing(), "conversation/clean.md")["pii"] == []
    assert versions(run.api, run.ada, run.base, "conversation/clean.md")[0]["pii"] == []
    (entry,) = block(run.api, run.ada, run.ws, run.conv)["included"]
    assert entry["pii"] == []


def test_the_tags_follow_each_version_through_list_show_versions_and_the_block(run: Run) -> None:
    api, ada, bob = run.api, run.ada, run.bob
    path = "conversation/contacts.md"
    # Given a document written with an e-mail address, then rewritten by Bob with a card number instead
    v0 = memory(api.write(ada, run.base, path, PII_SAMPLES["email"]))
    v1 = memory(api.write(bob, run.base, path, PII_SAMPLES["card"], pair_of(v0)))
    assert (v0["pii"], v1["pii"]) == (["email"], ["card"])
    # and a clean workspace note
    memory(api.write(ada, run.ws_base, "workspace/clean.md", CLEAN_NOTES[0]))

    # Then the listing through both doors shows each document's current tags
    for base in (run.base, run.ws_base):
        rows = run.listing(base=base)
        assert row(rows, "workspace/clean.md")["pii"] == []
    assert row(run.listing(), path)["pii"] == ["card"]
    # show too
    assert memory(api.show(bob, run.base, path), 200)["pii"] == ["card"]
    # the versions listing tags each version with what its own text holds
    assert [(v["lock_version"], v["pii"]) for v in versions(api, ada, run.base, path)] == [
        (1, ["card"]),
        (0, ["email"]),
    ]
    # and so does one version's show, with its text as it was written
    old = version(api, ada, run.base, path, 0)
    assert (old["pii"], old["content"]) == (["email"], PII_SAMPLES["email"])
    assert version(api, ada, run.base, path, 1)["pii"] == ["card"]

    # And the block's included entries carry the tags
    b = block(api, ada, run.ws, run.conv)
    assert {e["path"]: e["pii"] for e in b["included"]} == {path: ["card"], "workspace/clean.md": []}
    assert PII_SAMPLES["card"] in b["text"], "the block renders the stored text; only exports mask it"


def test_a_document_the_budget_leaves_out_is_named_with_its_tags(run: Run) -> None:
    api, ada = run.api, run.ada
    # Given an older large document holding an IBAN and a phone number, and a newer small clean one
    big = PII_SAMPLES["iban"] + "\n" + PII_SAMPLES["phone"] + "\n" + "Ledger line.\n" * 200
    memory(api.write(ada, run.base, "conversation/ledger.md", big))
    memory(api.write(ada, run.base, "conversation/today.md", "Standup at ten."))
    # When the block is assembled with room for the small one only
    b = block(api, ada, run.ws, run.conv, budget_bytes=400)
    # Then the included and the omitted entries both carry their tags
    assert [(e["path"], e["pii"]) for e in b["included"]] == [("conversation/today.md", [])]
    assert [(e["path"], e["pii"]) for e in b["omitted"]] == [("conversation/ledger.md", ["iban", "phone"])]


def test_tags_are_kept_per_scope_and_through_the_models_tools(run: Run) -> None:
    # Given a run of the answering agent
    ex = run.execution(speaker_public_id=run.visitor)
    # When its model writes notes holding personal data into its own scopes
    for path, kind in (("agent/prefs.md", "phone"), ("speaker/visitor.md", "email")):
        out = run.ok(ex, "memory_write", **create(path, PII_SAMPLES[kind]))
        # Then each write's result carries the tag, and reading it back does too
        assert out["data"]["pii"] == [kind]
        assert run.ok(ex, "memory_read", path=path)["data"]["pii"] == [kind]
    # And the model's listing shows them
    ls = run.ok(ex, "memory_ls")
    assert {m["path"]: m["pii"] for m in ls["data"]["memory"]} == {
        "agent/prefs.md": ["phone"],
        "speaker/visitor.md": ["email"],
    }
    # And a person's profile door tags user/ rows the same way
    mine = memory(run.api.write(run.ada, "/profile/memory", "user/me.md", PII_SAMPLES["us_ssn"]))
    assert mine["pii"] == ["us_ssn"]


# ---- promote refuses personal data ---------------------------------------------------------------------


def test_a_pii_tagged_version_is_not_promoted_until_it_is_rewritten_without_it(run: Run) -> None:
    api, ada = run.api, run.ada
    path = "conversation/vendor.md"
    # Given a conversation note holding a phone number and an e-mail address
    v0 = memory(api.write(ada, run.base, path, "Vendor contact: " + PII_SAMPLES["phone"] + " " + PII_SAMPLES["email"]))
    source = {"conversation_public_id": run.conv, "path": path, "lock_version": 0}
    before_ws, before_conv, before_rev = run.listing(base=run.ws_base), run.listing(), run.revision()

    # When Ada promotes it into the workspace's shared memory
    r = promote(api, ada, run.ws, source, "workspace/vendor.md")
    # Then it is refused with memory_pii_blocked, naming the kinds, and nothing changed anywhere
    assert code(r) == (422, "memory_pii_blocked")
    assert "email" in r.json()["error"]["message"] and "phone" in r.json()["error"]["message"]
    assert run.listing(base=run.ws_base) == before_ws
    assert run.listing() == before_conv
    assert run.revision() == before_rev
    assert code(api.show(ada, run.ws_base, "workspace/vendor.md")) == (404, "memory_not_found")

    # When she rewrites the note without the personal data
    clean = "Vendor contact: see the procurement portal."
    v1 = memory(api.write(ada, run.base, path, clean, pair_of(v0)))
    assert v1["pii"] == []
    # Then the old version is still refused, and the new one is promoted
    assert code(promote(api, ada, run.ws, source, "workspace/vendor.md")) == (422, "memory_pii_blocked")
    promoted = memory(promote(api, ada, run.ws, {**source, "lock_version": 1}, "workspace/vendor.md"))
    assert (promoted["content"], promoted["pii"]) == (clean, [])
    assert memory(api.show(run.bob, run.ws_base, "workspace/vendor.md"), 200)["content"] == clean


def test_a_pii_tagged_workspace_or_user_version_is_not_promoted_either(run: Run) -> None:
    api, ada = run.api, run.ada
    # Given a workspace note and a personal user/ note, each holding a card number
    memory(api.write(ada, ws_base(run.ws), "workspace/billing.md", PII_SAMPLES["card"]))
    memory(api.write(ada, "/profile/memory", "user/billing.md", PII_SAMPLES["iban"]))
    # When either is promoted, then it is refused and the target is not created
    for source in ({"path": "workspace/billing.md", "lock_version": 0}, {"path": "user/billing.md", "lock_version": 0}):
        assert code(promote(api, ada, run.ws, source, "workspace/shared-billing.md")) == (422, "memory_pii_blocked")
    assert code(api.show(ada, run.ws_base, "workspace/shared-billing.md")) == (404, "memory_not_found")
    # And a clean conversation note still promotes
    memory(api.write(ada, conv_base(run.ws, run.conv), "conversation/ok.md", CLEAN_NOTES[1]))
    source = {"conversation_public_id": run.conv, "path": "conversation/ok.md", "lock_version": 0}
    assert memory(promote(api, ada, run.ws, source, "workspace/ok.md"))["content"] == CLEAN_NOTES[1]
