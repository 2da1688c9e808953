"""The model's memory tools over HTTP and through the in-account Lambda: results, refusals, schemas."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support import CONV, WORKSPACE, Api, bindings, code
from .runs import TOOL_NAMES, Run, create, make_run, version

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run(api: Api) -> Run:
    return make_run(api)


def lambda_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The generated functions/tool_invoke/app.py, loaded the way Lambda loads it."""
    spec = importlib.util.spec_from_file_location("_tool_invoke_app", ROOT / "functions/tool_invoke/app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Callable[[dict[str, Any], Any], dict[str, Any]] = module.handler
    return handler


# ---- a model's turn, scripted ----------------------------------------------------------------------------


def test_a_scripted_turn_reads_writes_edits_and_deletes_and_every_write_bumps_the_revision(run: Run) -> None:
    ex = run.execution(speaker_public_id=run.visitor)
    start = run.revision()

    # The model looks first: no documents, and the roots it may write
    ls = run.ok(ex, "memory_ls")
    assert "No documents yet." in ls["content"]
    assert "conversation/ (read_write)" in ls["content"]
    assert ls["data"]["memory"] == []
    assert [r["root"] for r in ls["data"]["roots"]] == ["conversation/", "workspace/", "agent/", "speaker/"]

    # It creates a plan; the answer tells it the version to use next
    wrote = run.ok(ex, "memory_write", **create("conversation/plan.md", "ship friday"))
    assert wrote["content"].startswith("Created conversation/plan.md (11 bytes).")
    assert wrote["data"]["public_id"] in wrote["content"]
    assert run.revision() == start + 1

    # It reads the plan back: a header with the version, then the text
    read = run.ok(ex, "memory_read", path="conversation/plan.md")
    assert read["content"].endswith("\n\nship friday")
    assert "expected_lock_version 0" in read["content"]
    assert read["data"]["content"] == "ship friday"
    assert run.revision() == start + 1

    # It edits, replaces and deletes, each under the version it last saw
    edited = run.ok(
        ex, "memory_edit", path="conversation/plan.md", old_text="friday", new_text="monday", **version(read)
    )
    assert edited["data"]["lock_version"] == 1
    assert run.revision() == start + 2
    replaced = run.ok(ex, "memory_write", path="conversation/plan.md", content="ship tuesday", **version(edited))
    assert replaced["content"].startswith("Replaced conversation/plan.md")
    assert run.revision() == start + 3
    for path in ("workspace/room.md", "agent/self.md", "speaker/person.md"):
        run.ok(ex, "memory_write", **create(path, path))
    assert run.revision() == start + 6
    listing = run.ok(ex, "memory_ls")
    assert "4 documents:" in listing["content"]
    assert [d["path"] for d in run.ok(ex, "memory_ls", path="speaker/")["data"]["memory"]] == ["speaker/person.md"]
    gone = run.ok(ex, "memory_delete", path="conversation/plan.md", **version(replaced))
    assert gone["content"].startswith("Deleted conversation/plan.md")
    assert run.revision() == start + 7

    # And the people see exactly that through the conversation door
    assert code(run.api.show(run.ada, run.base, "conversation/plan.md")) == (404, "memory_not_found")
    shown = run.api.show(run.alpha, run.base, "speaker/person.md", speaker_public_id=run.visitor)
    assert shown.json()["memory"]["content"] == "speaker/person.md"


def test_a_stale_write_is_refused_with_its_code_and_what_to_do_next(run: Run) -> None:
    ex = run.execution()
    first = run.ok(ex, "memory_write", **create("conversation/plan.md", "v1"))
    run.ok(ex, "memory_write", path="conversation/plan.md", content="v2", **version(first))
    revision = run.revision()
    # When the model writes again with the version it saw before its own last change
    out = run.tool(ex, "memory_write", path="conversation/plan.md", content="v3", **version(first))
    # Then the refusal names the code and tells it to re-read and retry with the new pair
    assert out["is_error"] and out["code"] == "stale_object"
    assert out["content"].startswith("stale_object: ")
    assert "memory_read" in out["content"] and "expected_lock_version" in out["content"]
    # And nothing changed: not the document, not the revision
    assert run.revision() == revision
    assert run.ok(ex, "memory_read", path="conversation/plan.md")["data"]["content"] == "v2"
    # A create over an existing path is stale too
    assert run.refused(ex, "memory_write", **create("conversation/plan.md", "again")) == "stale_object"
    assert run.refused(ex, "memory_delete", path="conversation/plan.md", **version(first)) == "stale_object"
    assert (
        run.refused(ex, "memory_edit", path="conversation/plan.md", old_text="v", new_text="w", **version(first))
        == "stale_object"
    )
    assert run.revision() == revision


def test_racing_creates_of_one_path_let_exactly_one_win(run: Run) -> None:
    # Given eight tool calls creating the same document at once
    ex = run.execution()
    start = run.revision()
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def attempt(i: int) -> None:
        r = run.call(ex, "memory_write", **create("conversation/race.md", f"writer {i}"))
        with lock:
            results.append(r.json())

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then one created it, seven were told it is stale, and the revision moved once
    assert sorted(str(r["code"]) for r in results) == ["None"] + ["stale_object"] * 7
    assert run.revision() == start + 1
    winner = next(r for r in results if not r["is_error"])
    assert run.ok(ex, "memory_read", path="conversation/race.md")["data"]["content"] == winner["data"]["content"]


# ---- every refusal a model can meet -------------------------------------------------------------------------


def test_the_model_never_authors_a_skills_row(run: Run) -> None:
    # Given a skill a person wrote
    r = run.api.write(run.ada, run.base, "workspace/skills/pdf-forms", "# Steps", description="Fill PDF forms")
    assert r.status_code == 201, r.text
    ex = run.execution()
    start = run.revision()
    skill = run.ok(ex, "memory_read", path="workspace/skills/pdf-forms")
    # Then the model may read it, but not write, edit or delete it, nor create another, even with a bad name
    assert run.refused(ex, "memory_write", **create("workspace/skills/mine", "x")) == "memory_reserved_prefix"
    assert run.refused(ex, "memory_write", **create("agent/skills/PDF", "x")) == "memory_reserved_prefix"
    assert (
        run.refused(
            ex, "memory_edit", path="workspace/skills/pdf-forms", old_text="Steps", new_text="S", **version(skill)
        )
        == "memory_reserved_prefix"
    )
    assert run.refused(ex, "memory_delete", path="workspace/skills/pdf-forms", **version(skill)) == (
        "memory_reserved_prefix"
    )
    assert run.revision() == start
    # And memory_ls shows it as any document
    assert [d["path"] for d in run.ok(ex, "memory_ls")["data"]["memory"]] == ["workspace/skills/pdf-forms"]


def test_the_skill_tool_loads_a_skill_by_name(run: Run) -> None:
    run.api.write(run.ada, run.base, "workspace/skills/pdf-forms", "# Steps\n1. open", description="Fill PDF forms")
    ex = run.execution()
    out = run.ok(ex, "skill", name="pdf-forms")
    assert out["content"] == "Skill pdf-forms (workspace/skills/pdf-forms): Fill PDF forms\n\n# Steps\n1. open"
    assert out["data"]["content"] == "# Steps\n1. open"
    assert run.refused(ex, "skill", name="PDF") == "skill_name_invalid"
    assert run.refused(ex, "skill", name="nothing-here") == "memory_not_found"
    assert run.refused(ex, "skill", name=7) == "parameter_invalid"
    assert run.refused(ex, "skill") == "parameter_missing"


@pytest.mark.parametrize(
    ("tool", "inp", "expected"),
    [
        ("memory_read", {"path": "plan.md"}, "memory_path_invalid"),
        ("memory_read", {"path": "notes/plan.md"}, "memory_path_invalid"),
        ("memory_read", {"path": 5}, "memory_path_invalid"),
        ("memory_read", {"path": "user/plan.md"}, "memory_scope_unavailable"),
        ("memory_read", {"path": "conversation/none.md"}, "memory_not_found"),
        ("memory_read", {}, "parameter_missing"),
        ("memory_read", {"path": "conversation/a.md", "extra": 1}, "parameter_invalid"),
        ("memory_ls", {"path": "nowhere/"}, "memory_path_invalid"),
        ("memory_write", {"path": "conversation/a.md", "content": "x"}, "parameter_missing"),
        (
            "memory_write",
            {"path": "conversation/a.md", "content": "x", "expected_public_id": None},
            "parameter_missing",
        ),
        (
            "memory_write",
            {"path": "conversation/a.md", "content": 5, "expected_public_id": None, "expected_lock_version": None},
            "memory_content_invalid",
        ),
        (
            "memory_write",
            {
                "path": "conversation/a.md",
                "content": "x" * (64 * 1024 + 1),
                "expected_public_id": None,
                "expected_lock_version": None,
            },
            "memory_document_too_large",
        ),
        (
            "memory_write",
            {"path": "conversation/a.md", "content": "x", "expected_public_id": "nope", "expected_lock_version": 0},
            "parameter_invalid",
        ),
        (
            "memory_write",
            {"path": "conversation/a.md", "content": "x", "expected_public_id": None, "expected_lock_version": 0},
            "parameter_invalid",
        ),
        (
            "memory_write",
            {
                "path": "conversation/a.md",
                "content": "x",
                "expected_public_id": None,
                "expected_lock_version": None,
                "description": "d",
            },
            "parameter_invalid",
        ),
        (
            "memory_write",
            {
                "path": "conversation/a.md",
                "content": "x",
                "expected_public_id": "01990000-0000-7000-8000-000000000001",
                "expected_lock_version": True,
            },
            "parameter_invalid",
        ),
        (
            "memory_write",
            {
                "path": "conversation/a.md",
                "content": "x",
                "expected_public_id": "01990000-0000-7000-8000-000000000001",
                "expected_lock_version": -1,
            },
            "parameter_invalid",
        ),
        (
            "memory_edit",
            {
                "path": "conversation/a.md",
                "old_text": "a",
                "new_text": "b",
                "expected_public_id": None,
                "expected_lock_version": None,
            },
            "parameter_invalid",
        ),
        (
            "memory_edit",
            {
                "path": "conversation/a.md",
                "old_text": "a",
                "new_text": 3,
                "expected_public_id": None,
                "expected_lock_version": None,
            },
            "memory_content_invalid",
        ),
        ("memory_delete", {"path": "conversation/a.md"}, "parameter_missing"),
        (
            "memory_delete",
            {
                "path": "conversation/a.md",
                "expected_public_id": "01990000-0000-7000-8000-000000000001",
                "expected_lock_version": 0,
            },
            "stale_object",
        ),
    ],
)
def test_bad_input_comes_back_as_a_refusal_the_model_reads(
    run: Run, tool: str, inp: dict[str, Any], expected: str
) -> None:
    ex = run.execution()
    start = run.revision()
    assert run.refused(ex, tool, **inp) == expected
    assert run.revision() == start


def test_edit_passages_must_occur_exactly_once(run: Run) -> None:
    ex = run.execution()
    doc = run.ok(ex, "memory_write", **create("conversation/a.md", "one two two"))
    start = run.revision()
    assert (
        run.refused(ex, "memory_edit", path="conversation/a.md", old_text="three", new_text="3", **version(doc))
        == "memory_edit_not_found"
    )
    assert (
        run.refused(ex, "memory_edit", path="conversation/a.md", old_text="two", new_text="2", **version(doc))
        == "memory_edit_ambiguous"
    )
    assert (
        run.refused(ex, "memory_edit", path="conversation/a.md", old_text="", new_text="2", **version(doc))
        == "parameter_invalid"
    )
    assert run.revision() == start


def test_a_read_binding_is_read_only_for_the_model(run: Run) -> None:
    run.configure(bindings(CONV, {**WORKSPACE, "access": "read"}))
    ex = run.execution()
    assert run.refused(ex, "memory_write", **create("workspace/a.md", "x")) == "memory_read_only"
    assert "workspace/ (read)" in run.ok(ex, "memory_ls")["content"]


def test_the_sixty_fifth_document_is_memory_full(run: Run) -> None:
    ex = run.execution()
    for i in range(64):
        assert run.api.write(run.ada, run.base, f"conversation/n{i:02}.md", "x").status_code == 201
    start = run.revision()
    assert run.refused(ex, "memory_write", **create("conversation/one-more.md", "x")) == "memory_full"
    assert run.revision() == start


def test_under_a_provider_override_the_memory_tools_go_to_the_provider_but_skills_load(run: Run) -> None:
    run.api.write(run.ada, run.base, "workspace/skills/pdf-forms", "# Steps", description="Fill PDF forms")
    ex = run.execution()
    r = run.api.call(
        "PATCH",
        f"/workspaces/{run.ws}",
        run.ada,
        {"workspace": {"tool_provider_overrides": {"nexus.memory": "acme-mem"}}},
    )
    assert r.status_code == 200, r.text
    out = run.tool(ex, "memory_ls")
    assert out["code"] == "memory_overridden" and "acme-mem" in out["content"]
    assert run.refused(ex, "memory_read", path="workspace/skills/pdf-forms") == "memory_overridden"
    assert run.refused(ex, "memory_write", **create("conversation/a.md", "x")) == "memory_overridden"
    assert run.ok(ex, "skill", name="pdf-forms")["data"]["content"] == "# Steps"


def test_a_principal_demoted_to_viewer_can_read_but_no_longer_write(run: Run) -> None:
    # Given Bob's execution, and Bob then made a viewer of the room
    ex = run.execution(run.bob)
    run.ok(ex, "memory_write", **create("conversation/a.md", "x"))
    run.api.member(run.ada, run.ws, run.bob, role="viewer")
    # Then authority is read again on every call: his run reads, but may not write
    assert run.ok(ex, "memory_read", path="conversation/a.md")["data"]["content"] == "x"
    assert run.refused(ex, "memory_write", **create("conversation/b.md", "y")) == "not_authorized"


# ---- direct_reply ---------------------------------------------------------------------------------------------


def test_a_profile_without_tools_gets_no_tools_but_still_its_memory_block(run: Run) -> None:
    run.api.write(run.ada, run.base, "conversation/plan.md", "ship friday")
    # When a direct reply starts with no tools
    ex = run.execution(tools=[])
    assert ex["tools"] == []
    # Then every tool call is refused, for what the run was offered, not for what the input says
    for tool in TOOL_NAMES:
        out = run.tool(ex, tool, path="conversation/plan.md")
        assert (out["is_error"], out["code"]) == (True, "not_authorized")
    # While the memory block is still assembled for the conversation
    block = run.api.post(f"{run.conv_url()}/memory_block", run.alpha, {})
    assert block.status_code == 200, block.text
    assert "ship friday" in block.json()["memory_block"]["text"]


def test_a_narrowed_execution_offers_only_its_tools(run: Run) -> None:
    ex = run.execution(tools=["memory_ls", "memory_read"])
    run.ok(ex, "memory_ls")
    assert run.refused(ex, "memory_write", **create("conversation/a.md", "x")) == "not_authorized"


# ---- the HTTP envelope --------------------------------------------------------------------------------------


def test_refusals_of_the_call_itself_are_http_errors(run: Run) -> None:
    ex = run.execution()
    url = f"/executions/{ex['public_id']}/tools"
    # An unknown tool name
    assert code(run.api.post(f"{url}/memory_grep", run.alpha, {"input": {}})) == (404, "not_found")
    # No token, a token that is not the execution's principal, another account's token
    assert code(run.api.post(f"{url}/memory_ls", None, {"input": {}})) == (401, "not_authenticated")
    assert code(run.api.post(f"{url}/memory_ls", run.ada, {"input": {}})) == (404, "not_found")
    assert code(run.api.post(f"{url}/memory_ls", run.api.account("o", "olga"), {"input": {}})) == (404, "not_found")
    # An unknown or malformed execution id
    missing = "/executions/01990000-0000-7000-8000-0000000000ff/tools/memory_ls"
    assert code(run.api.post(missing, run.alpha, {"input": {}})) == (404, "not_found")
    assert code(run.api.post("/executions/nope/tools/memory_ls", run.alpha, {"input": {}})) == (404, "not_found")
    # A body without input, or input that is not an object
    assert code(run.api.post(f"{url}/memory_ls", run.alpha, {})) == (400, "parameter_missing")
    assert code(run.api.post(f"{url}/memory_ls", run.alpha, {"input": []})) == (400, "parameter_invalid")


# ---- the in-account Lambda -------------------------------------------------------------------------------------


def test_the_lambda_runs_a_tool_with_the_executions_secret(run: Run) -> None:
    handler = lambda_handler()
    ex = run.execution(speaker_public_id=run.visitor)
    start = run.revision()
    # When a runtime invokes the function with the direct event and the execution's secret
    out = handler(
        {
            "execution": ex["public_id"],
            "tool": "memory_write",
            "input": create("speaker/prefs.md", "likes tea"),
            "secret": ex["secret"],
        },
        None,
    )
    # Then it gets the same result as over HTTP, and the write bumped the revision
    assert set(out) == {"tool", "is_error", "code", "content", "data"}
    assert (out["tool"], out["is_error"], out["code"]) == ("memory_write", False, None)
    assert run.revision() == start + 1
    read = handler(
        {
            "execution": ex["public_id"],
            "tool": "memory_read",
            "input": {"path": "speaker/prefs.md"},
            "secret": ex["secret"],
        },
        None,
    )
    assert read["data"]["content"] == "likes tea"
    assert read == run.ok(ex, "memory_read", path="speaker/prefs.md")
    # The model's mistakes are results; a stale write bumps nothing
    stale = handler(
        {
            "execution": ex["public_id"],
            "tool": "memory_write",
            "input": create("speaker/prefs.md", "again"),
            "token": run.alpha.token,
        },
        None,
    )
    assert (stale["is_error"], stale["code"]) == (True, "stale_object")
    assert run.revision() == start + 1


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ({"tool": "memory_ls", "input": {}}, "parameter_missing"),
        ({"execution": "01990000-0000-7000-8000-0000000000ff", "tool": "memory_ls"}, "parameter_missing"),
        ({"execution": 5, "tool": "memory_ls", "input": {}}, "parameter_invalid"),
        (
            {"execution": "01990000-0000-7000-8000-0000000000ff", "tool": "memory_ls", "input": [], "secret": "s"},
            "parameter_invalid",
        ),
        ({"execution": "01990000-0000-7000-8000-0000000000ff", "tool": "memory_ls", "input": {}}, "not_authenticated"),
        (
            {"execution": "01990000-0000-7000-8000-0000000000ff", "tool": "memory_ls", "input": {}, "secret": "s"},
            "not_found",
        ),
        (
            {"execution": "01990000-0000-7000-8000-0000000000ff", "tool": "memory_grep", "input": {}, "secret": "s"},
            "not_found",
        ),
    ],
)
def test_the_lambda_refuses_a_malformed_event_with_the_error_body(
    run: Run, event: dict[str, Any], expected: str
) -> None:
    out = lambda_handler()(event, None)
    assert set(out) == {"error"}
    assert out["error"]["code"] == expected


def test_the_lambda_needs_the_executions_own_secret_or_its_principals_token(run: Run) -> None:
    # Given two executions, one of another account
    ex = run.execution()
    other = run.api.account("o", "olga")
    ws = run.api.workspace(other)
    foreign = run.api.post(
        f"/workspaces/{ws}/conversations/{run.api.conversation(other, ws)}/executions", other, {"execution": {}}
    ).json()
    event = {"execution": ex["public_id"], "tool": "memory_ls", "input": {}}
    # When the function is invoked with no proof, a wrong secret, another execution's secret or token
    refused = [
        lambda_handler()({**event, **proof}, None)
        for proof in (
            {},
            {"secret": "not-the-secret"},
            {"secret": foreign["secret"]},
            {"token": other.token},
            {"token": run.ada.token},
        )
    ]
    # Then nothing runs: IAM alone vouches for no tenant
    assert [r["error"]["code"] for r in refused] == [
        "not_authenticated",
        "not_authenticated",
        "not_authenticated",
        "not_found",
        "not_found",
    ]
    # And the execution's own secret, or its principal's token, runs the tool
    assert lambda_handler()({**event, "secret": ex["secret"]}, None)["is_error"] is False
    assert lambda_handler()({**event, "token": run.alpha.token}, None)["is_error"] is False


def test_the_lambda_honours_the_executions_tools(run: Run) -> None:
    ex = run.execution(tools=[])
    out = lambda_handler()(
        {"execution": ex["public_id"], "tool": "memory_ls", "input": {}, "secret": ex["secret"]}, None
    )
    assert (out["is_error"], out["code"]) == (True, "not_authorized")


# ---- schemas ---------------------------------------------------------------------------------------------------


def test_the_schemas_are_served_in_both_formats_and_match_the_committed_docs(run: Run) -> None:
    for fmt in ("anthropic", "openai"):
        r = run.api.get("/tools/schemas", None, params={"format": fmt})
        assert r.status_code == 200, r.text
        served = r.json()
        assert served == json.loads((ROOT / "docs" / f"tools.{fmt}.json").read_text())
        names = [t["name"] if fmt == "anthropic" else t["function"]["name"] for t in served["tools"]]
        assert names == TOOL_NAMES
    # The default format is Anthropic's
    assert run.api.get("/tools/schemas").json() == run.api.get("/tools/schemas", params={"format": "anthropic"}).json()
    assert code(run.api.get("/tools/schemas", params={"format": "xml"})) == (400, "parameter_invalid")


def test_the_committed_schema_files_are_current() -> None:
    from agent_memory.edges.tools.dispatch import schema_document

    for fmt in ("anthropic", "openai"):
        assert (ROOT / "docs" / f"tools.{fmt}.json").read_text() == schema_document(fmt), (
            "docs/ is out of date: run `make template`"
        )


def test_each_schema_is_a_closed_object_with_the_conditional_pair_required() -> None:
    from agent_memory.edges.tools.dispatch import tool_schemas

    by_name = {t["name"]: t["input_schema"] for t in tool_schemas("anthropic")}
    for name, schema in by_name.items():
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        assert "title" not in schema
    for name in ("memory_write", "memory_edit", "memory_delete"):
        assert {"path", "expected_public_id", "expected_lock_version"} <= set(by_name[name]["required"])
        assert by_name[name]["properties"]["expected_lock_version"]["type"] == ["integer", "null"]
    openai = {t["function"]["name"]: t for t in tool_schemas("openai")}
    assert all(t["type"] == "function" for t in openai.values())
    assert {n: t["function"]["parameters"] for n, t in openai.items()} == by_name
