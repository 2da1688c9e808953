"""The route table's own rules: every path parameter has a grammar, and the contract imports nothing."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest
from agent_memory.api import contract
from agent_memory.api.contract import ROUTES, parameter_rule, path_parameters
from agent_memory.api.errors import ApiError
from agent_memory.edges.http.glue import check_path_parameters


def test_every_path_parameter_of_every_route_has_a_grammar() -> None:
    for route in ROUTES:
        for name in path_parameters(route.path):
            rule = parameter_rule(name)
            assert rule.pattern.startswith("^") and rule.pattern.endswith("$"), (route.name, name)
            re.compile(rule.pattern)


def test_the_contract_imports_only_the_standard_library() -> None:
    tree = ast.parse(Path(contract.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or ".")])
    }
    assert imported <= {"__future__", "dataclasses", "typing", "re"}, imported


ROUTE = contract.BY_NAME["conversation_memory_show"]
WS = "01990000-0000-7000-8000-0000000000a5"
CONV = "01990000-0000-7000-8000-0000000000c0"


@pytest.mark.parametrize(
    "params",
    [
        {"workspace_public_id": WS},  # one missing
        {"workspace_public_id": WS, "conversation_public_id": CONV + "\n"},  # `$` would accept this
        {"workspace_public_id": WS.upper(), "conversation_public_id": CONV},
        {"workspace_public_id": "x" * 3000, "conversation_public_id": CONV},
    ],
)
def test_a_parameter_outside_its_grammar_is_not_found(params: dict[str, str]) -> None:
    with pytest.raises(ApiError) as info:
        check_path_parameters(ROUTE, params)
    assert info.value.code == "not_found" and "must be a lowercase UUID" in info.value.message


def test_names_follow_their_own_grammar() -> None:
    tool = contract.BY_NAME["call_tool"]
    check_path_parameters(tool, {"execution_public_id": WS, "tool_name": "memory_read"})
    with pytest.raises(ApiError):
        check_path_parameters(tool, {"execution_public_id": WS, "tool_name": "Memory-Read"})
    definition = contract.BY_NAME["definition_memory_list"]
    check_path_parameters(definition, {"agent_name": "support-bot_2"})
    for bad in ("", "n" * 65, "a/b", "Support", "bot\n"):
        with pytest.raises(ApiError):
            check_path_parameters(definition, {"agent_name": bad})


SNAPSHOT = Path(__file__).with_name("routes_snapshot.json")


def test_the_routes_are_what_they_were_before_the_doors_became_a_table() -> None:
    """Taken from the hand-written table before the doors were generated: those routes keep their order
    and every field (the description came later and is held by the next test). A route added since is
    not in it; one changed on purpose is changed in the snapshot too."""
    before = json.loads(SNAPSHOT.read_text())
    names = {r["name"] for r in before}
    now = [{k: v for k, v in dataclasses.asdict(r).items() if k != "description"} for r in ROUTES if r.name in names]
    assert json.loads(json.dumps(now)) == before


def test_every_route_says_what_it_does() -> None:
    for route in ROUTES:
        assert route.description.strip().endswith((".", ")")), route.name
        assert "{" not in route.description, route.name  # a door's words were filled in
    door_texts = [r.description for r in ROUTES if r.door == "profile"]
    assert all("the caller's own documents" in t for t in door_texts)


def test_the_door_route_names_are_spelled_out_for_searches() -> None:
    generated = tuple(r.name for door in contract.DOORS for r in contract.door_routes(door))
    assert generated == contract.DOOR_ROUTE_NAMES
    assert [r.name for r in ROUTES if r.door] == list(contract.DOOR_ROUTE_NAMES)
