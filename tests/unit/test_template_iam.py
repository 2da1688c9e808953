"""Each function's role carries only the actions its route uses (read from the generated template.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_memory.api.contract import ROUTES, UNKNOWN_ROUTE
from agent_memory_sdk.local.template import load_template

ROOT = Path(__file__).resolve().parents[2]
WRITES = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"}


def _actions(role: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for policy in role["Properties"].get("Policies", []):
        for statement in policy["PolicyDocument"]["Statement"]:
            action = statement["Action"]
            out.update([action] if isinstance(action, str) else action)
    return out


def test_every_route_gets_only_the_actions_it_uses() -> None:
    resources = load_template(ROOT / "template.yaml")["Resources"]
    functions = {
        res["Properties"]["CodeUri"].strip("/").split("/")[-1]: res
        for res in resources.values()
        if res["Type"] == "AWS::Serverless::Function"
    }
    for route in ROUTES:
        role_name = functions[route.name]["Properties"]["Role"]["GetAtt"].split(".")[0]
        actions = _actions(resources[role_name])
        s3 = {a for a in actions if a.startswith("s3:")}
        # Then a route that touches no content has no S3 at all, and a reading route writes nothing
        assert (
            s3
            == {
                "none": set(),
                "read": {"s3:GetObject"},
                "write": {"s3:GetObject", "s3:PutObject"},
                "delete": {"s3:DeleteObject"},
            }[route.content]
        )
        if route.access in ("read", "public"):
            assert not actions & WRITES, route.name
        assert ("ssm:GetParameter" in actions) == (route.access == "operator"), route.name


def test_the_sweeper_has_concurrency_of_its_own() -> None:
    resources = load_template(ROOT / "template.yaml")["Resources"]
    assert resources["SweeperFunction"]["Properties"]["ReservedConcurrentExecutions"] >= 1


def test_the_unknown_route_function_is_the_default_route_and_touches_no_data() -> None:
    resources = load_template(ROOT / "template.yaml")["Resources"]
    fn = resources[f"{''.join(p.capitalize() for p in UNKNOWN_ROUTE.name.split('_'))}Function"]["Properties"]
    # Then SAM makes it the $default route (an HttpApi event with no path or method)
    assert [set(e["Properties"]) for e in fn["Events"].values()] == [{"ApiId"}]
    # And its role may log, and nothing else
    assert _actions(resources[fn["Role"]["GetAtt"].split(".")[0]]) == set()
