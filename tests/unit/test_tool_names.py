"""One name per tool everywhere: the tool specs, the MCP server, the TypeScript client, the README, the guide,
the architecture notes and the examples all call each of the model's tools by the same name."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

from agent_memory.api.contract import ROUTES, TOOL_NAMES
from agent_memory.api.errors import CATALOGUE
from agent_memory.edges.tools.dispatch import TOOLS, tool_schemas
from agent_memory_sdk.client import MemoryClient
from agent_memory_sdk.local.mcp_server import MEMORY_TOOL, MemoryRelay

ROOT = Path(__file__).resolve().parents[2]
# The names the record tools were once offered under through MCP: no surface may use them again.
RETIRED = ("add_memory", "search_memory", "addMemory", "searchMemory")
PROSE = [
    "README.md",
    "docs/guide.md",
    "docs/architecture.md",
    *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("examples/*.py")),
]
# A word that reads like a tool's name: memory_x or x_memory.
TOOLISH = re.compile(r"\b(?:memory_[a-z_]*[a-z]|[a-z_]*[a-z]_memory)\b")


def _schema_names(name: str) -> list[str]:
    doc = json.loads((ROOT / "docs" / name).read_text())
    return [t.get("name") or t["function"]["name"] for t in doc["tools"]]


def _mcp_names() -> list[str]:
    relay = MemoryRelay(
        cast(MemoryClient, None), "ws", "conv", {"public_id": "ex", "tools": None}, tool_schemas("anthropic")
    )
    return [t.name for t in relay.tools()]


def _identifiers() -> set[str]:
    """Every name the code defines or calls (functions, attributes, modules) and the API's own words."""
    words: set[str] = set(TOOLS) | {r.name for r in ROUTES} | set(CATALOGUE)
    for path in (ROOT / "shared").rglob("*.py"):
        words.update(path.relative_to(ROOT / "shared").with_suffix("").parts)
        words.update(re.findall(r"(?:def |class |\.)([A-Za-z_]\w*)", path.read_text()))

    def props(node: Any) -> None:
        if isinstance(node, dict):
            words.update(node.get("properties", {}) if isinstance(node.get("properties"), dict) else ())
            for v in node.values():
                props(v)
        elif isinstance(node, list):
            for v in node:
                props(v)

    props(json.loads((ROOT / "docs" / "openapi.json").read_text()))
    return words


def test_the_tool_specs_agree() -> None:
    assert list(TOOLS) == list(TOOL_NAMES)
    assert _schema_names("tools.anthropic.json") == list(TOOLS)
    assert _schema_names("tools.openai.json") == list(TOOLS)


def test_mcp_offers_every_tool_by_its_spec_name() -> None:
    assert _mcp_names() == [*TOOLS, MEMORY_TOOL]


def test_the_readme_names_the_mcp_tools_as_the_specs_do() -> None:
    readme = (ROOT / "README.md").read_text()
    listed = re.search(r"by the names of `GET /tools/schemas`: (.*?)\) and its memory block", readme, re.DOTALL)
    assert listed, "the README's MCP paragraph no longer lists the tools"
    assert re.findall(r"`(\w+)`", listed.group(1)) == [*TOOLS, MEMORY_TOOL]


def test_the_typescript_client_knows_the_same_read_only_tools() -> None:
    routes = (ROOT / "clients" / "typescript" / "src" / "gen" / "routes.ts").read_text()
    listed = re.search(r"READ_ONLY_TOOLS: ReadonlySet<string> = new Set\((\[.*?\])\)", routes)
    assert listed
    assert set(json.loads(listed.group(1))) <= set(TOOLS)


def test_no_surface_uses_another_name_for_a_tool() -> None:
    known = _identifiers()
    surfaces = [*PROSE, "shared/agent_memory_sdk/local/mcp_server.py"]
    surfaces += [str(p.relative_to(ROOT)) for p in (ROOT / "clients" / "typescript" / "src").rglob("*.ts")]
    for name in surfaces:
        text = (ROOT / name).read_text()
        assert not [r for r in RETIRED if re.search(rf"\b{r}\b", text)], f"{name} uses a retired tool name"
    for name in PROSE:
        unknown = set(TOOLISH.findall((ROOT / name).read_text())) - known
        assert not unknown, f"{name} names {sorted(unknown)}, which no tool, route, code or field is called"
    # And the MCP server's instructions to the model name tools it offers
    instructions = (ROOT / "shared/agent_memory_sdk/local/mcp_server.py").read_text().split("instructions=(", 1)[1]
    instructions = instructions.split("),", 1)[0]
    assert set(re.findall(r"\bmemory_[a-z]+\b", instructions)) <= set(TOOLS)
