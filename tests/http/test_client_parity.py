"""Every route's options reachable from `MemoryClient`'s helpers, and one return convention for all of them."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
from agent_memory.api import contract
from agent_memory.edges import answers
from agent_memory_sdk import client as sdk
from agent_memory_sdk.local.runtime import LocalService
from pydantic import BaseModel

from ..support import client_room

HELPER_CLASSES = (sdk.MemoryClient, sdk.MemoryDoor, sdk._FileVerbs, sdk.SessionFiles, sdk.MemoryFiles)

#: A body field -> the helper argument that spells it, where the two differ.
SPELLED: dict[str, str] = {
    "expected_public_id": "expected",  # NEW, a pair, or a document
    "conflict_resolution": "overwrite",
    "input": "tool_input",
}
#: The same, for one route.
SPELLED_BY_ROUTE: dict[str, dict[str, str]] = {
    "create_account": {"account": "name", "human": "human_name"},
    "create_memory": {"source": "git"},
    "workspace_memory_promote": {"source": "source_path"},
}


def _request_models() -> dict[str, type[BaseModel]]:
    import importlib
    import pkgutil

    import agent_memory.edges.requests as pkg

    found: dict[str, type[BaseModel]] = {}
    for m in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"agent_memory.edges.requests.{m.name}")
        found |= {k: v for k, v in vars(mod).items() if isinstance(v, type) and issubclass(v, BaseModel)}
    return found


def _inner_fields(model: type[BaseModel]) -> set[str]:
    """The options of a route's body: the fields of the object it wraps (`{"execution": {...}}`), or its own."""
    out: set[str] = set()
    for name, f in model.model_fields.items():
        inner = [a for a in (*getattr(f.annotation, "__args__", ()), f.annotation) if isinstance(a, type)]
        wrapped = [a for a in inner if issubclass(a, BaseModel)]
        if wrapped and len(model.model_fields) == 1:
            out |= set(wrapped[0].model_fields)
        else:
            out.add(name)
    return out


def _reaching(route: contract.RouteSpec) -> list[Any]:
    """The helper methods that send this route."""
    # A door's route is sent by MemoryDoor._call with its verb, read off the handler as the contract does.
    door_verb = route.handler.partition(":")[2].removesuffix("_memory") if route.door is not None else None
    found = []
    for cls in HELPER_CLASSES:
        for name, fn in vars(cls).items():
            if name.startswith("_") or not callable(fn):
                continue
            src = inspect.getsource(fn)
            if (
                f"routes.{route.name}(" in src
                or f'"{route.name}"' in src
                or (cls is sdk.MemoryDoor and door_verb and f'self._call("{door_verb}"' in src)
                or (
                    issubclass(cls, sdk._FileVerbs)
                    and "ROUTE.format(" in src
                    and any(
                        c.ROUTE.format(v) == route.name
                        for c in (sdk.SessionFiles, sdk.MemoryFiles)
                        for v in re.findall(r'ROUTE\.format\("(\w+)"\)', src)
                    )
                )
            ):
                found.append(fn)
    return found


def test_every_option_of_every_route_is_an_argument_of_a_helper() -> None:
    models = _request_models()
    missing: dict[str, set[str]] = {}
    for route in contract.ROUTES:
        if route.handler.startswith("console:"):
            continue  # the console's page, files and cookie session are a browser's, not a client's
        helpers = _reaching(route)
        assert helpers, f"no helper sends {route.name}"
        if not route.request or route.request not in models:
            continue
        params = {p for fn in helpers for p in inspect.signature(fn).parameters}
        # A query parameter, and a field spelled another way, count by their helper spelling.
        spelled = SPELLED | SPELLED_BY_ROUTE.get(route.name, {})
        wanted = {spelled.get(f, f) for f in _inner_fields(models[route.request])} | {
            q.removeprefix("memory[").removeprefix("skill[").rstrip("]") for q in route.query
        }
        if route.name.startswith("execution_file") or route.name == "execution_files_list":
            wanted -= {"content", "old_text", "new_text", "expected_lock_version"}  # one model for five verbs
            wanted &= params | {"path"}
        gaps = wanted - params - {"expected_lock_version"}  # a document's is in `expected`
        if gaps:
            missing[route.name] = gaps
    assert missing == {}, "\n".join(f"{k}: {sorted(v)}" for k, v in sorted(missing.items()))


def test_one_return_convention_single_objects_unwrapped_several_parts_whole(fresh: LocalService) -> None:
    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    conv = owner.create_conversation(ws)["public_id"]
    # An answer of one named object is that object
    assert set(owner.show_conversation(ws, conv)) == set(answers.ConversationView.model_fields)
    # An answer of several parts is whole: the execution beside its secret shown once
    started = owner.create_execution(ws, conv)
    assert {"execution", "secret"} <= set(started) <= set(answers.ExecutionCreated.model_fields)
    assert started["execution"]["conversation_public_id"] == conv and started["secret"]
    # A page beside its cursor
    assert set(owner.list_memories()) == set(answers.OrgMemoryPage.model_fields)
    memory = owner.create_memory("parity", files={"a.md": "alpha\n"})
    files = owner.memory_files(memory["memory_id"])
    assert set(files.ls()) == set(answers.FilePageAnswer.model_fields)
    assert isinstance(files.grep("alpha"), dict) and files.grep("alpha")["matches"][0]["path"] == "a.md"


def test_create_execution_mounts_memories_as_mounts_or_as_capabilities(fresh: LocalService) -> None:
    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    conv = owner.create_conversation(ws)["public_id"]
    runbooks = owner.create_memory("runbooks", files={"deploy.md": "step one\n"})["memory_id"]
    mount = {"memory": runbooks, "path": "/workspace/runbooks", "mode": "readonly"}
    # Given mounts, as `mounts` and as the API's capabilities
    by_mounts = owner.create_execution(ws, conv, mounts=[mount])["execution"]["public_id"]
    caps = [{"ref": "memory", "config": {"mounts": [mount]}}]
    by_caps = owner.create_execution(ws, conv, capabilities=caps)["execution"]["public_id"]
    # Then both sessions see the Memory at that path, read-only
    for ex in (by_mounts, by_caps):
        files = owner.session_files(ex)
        (m,) = [m for m in files.mounts() if m["kind"] == "memory"]
        assert (m["path"], m["mode"]) == ("/workspace/runbooks", "readonly")
        assert files.show("/workspace/runbooks/deploy.md")["content"] == "step one\n"
        with pytest.raises(sdk.MemoryReadOnly):
            files.write("/workspace/runbooks/new.md", "x", sdk.NEW)
    # And giving the mounts twice is refused before anything is sent
    with pytest.raises(ValueError, match="give the mounts once"):
        owner.create_execution(ws, conv, mounts=[mount], capabilities=caps)


def test_update_workspace_reaches_its_settings(fresh: LocalService) -> None:
    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    updated = owner.update_workspace(ws, settings={"dedup": {"enabled": False}})
    assert updated["settings"]["dedup"]["enabled"] is False
    with pytest.raises(sdk.ParameterMissing):
        owner.update_workspace(ws)
