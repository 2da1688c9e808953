"""The memory map page, read back with the standard library's HTML parser: what is drawn where, escaping of
hostile names and ids, no external reference, determinism, and output that grows linearly with the graph.

What the page looks like in a browser (sizes, dashes, colours) is tests/browser/test_mapview_browser.py.
"""

from __future__ import annotations

import itertools
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest
from agent_memory.render import mapview
from agent_memory.render.mapview import LABEL_COLUMNS, LEFT_X, NODE_H, NODE_W, RIGHT_X, render_map_html
from hypothesis import given, settings
from hypothesis import strategies as st

HOSTILE = "</svg><script>alert(1)</script>"


def mem(i: int) -> str:
    return f"mem_{i:032x}"


def agent(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012x}"


def sample() -> dict[str, Any]:
    """Every kind of node and edge, two orphans, one of them promoted from a reached Memory."""
    return {
        "nodes": [
            {"id": mem(1), "kind": "memory", "name": "runbooks"},
            {"id": mem(2), "kind": "memory", "name": "promoted-runbooks"},
            {"id": mem(3), "kind": "memory", "name": "style-guide"},
            {"id": mem(4), "kind": "memory", "name": "lonely"},
            {"id": mem(5), "kind": "memory", "name": "promoted-lonely"},
            {"id": agent(1), "kind": "agent", "name": "triage-bot"},
            {"id": agent(2), "kind": "agent", "name": "writer"},
            {"id": "all_agents", "kind": "all_agents", "name": "All agents"},
            {"id": "deployment:prod", "kind": "deployment", "name": "prod"},
        ],
        "edges": [
            {"from": mem(1), "to": agent(1), "kind": "attachment", "mode": "readwrite", "read_first": True},
            {"from": mem(2), "to": agent(2), "kind": "attachment", "mode": "readonly", "read_first": False},
            {"from": mem(3), "to": "all_agents", "kind": "default", "mode": "readonly", "read_first": False},
            {"from": mem(3), "to": "deployment:prod", "kind": "mount", "mode": "readonly"},
            {"from": mem(1), "to": mem(2), "kind": "provenance"},
            {"from": mem(1), "to": mem(4), "kind": "provenance"},
            {"from": mem(4), "to": mem(5), "kind": "provenance"},
        ],
        "orphans": [mem(4), mem(5)],
    }


def big(n: int) -> dict[str, Any]:
    """n Memories and n agents: each Memory attached once, every tenth a default, every fifth promoted."""
    nodes = [{"id": mem(i), "kind": "memory", "name": f"memory-{i}"} for i in range(n)]
    nodes += [{"id": agent(i), "kind": "agent", "name": f"agent-{i}"} for i in range(n)]
    nodes += [{"id": "all_agents", "kind": "all_agents", "name": "All agents"}]
    edges = [
        {"from": mem(i), "to": agent(i * 7 % n), "kind": "attachment", "mode": "readwrite", "read_first": i % 3 == 0}
        for i in range(n)
    ]
    edges += [{"from": mem(i), "to": "all_agents", "kind": "default", "mode": "readonly"} for i in range(0, n, 10)]
    edges += [{"from": mem(i), "to": mem(i + 1), "kind": "provenance"} for i in range(0, n - 1, 5)]
    return {"nodes": nodes, "edges": edges, "orphans": [mem(i) for i in range(1, n, 50)]}


@dataclass
class El:
    tag: str
    attrs: dict[str, str]
    parent: El | None = None
    children: list[El] = field(default_factory=list)
    text: str = ""

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def walk(self) -> Iterator[El]:
        yield self
        for c in self.children:
            yield from c.walk()

    def find(self, tag: str) -> El:
        return next(e for e in self.walk() if e.tag == tag and e is not self)

    def within(self, cls: str) -> bool:
        p = self.parent
        while p is not None:
            if cls in p.classes:
                return True
            p = p.parent
        return False


class Tree(HTMLParser):
    """The element tree, as a browser would nest it for this page (the page closes every element it opens)."""

    VOID = {"meta", "link", "br", "img", "input", "hr"}

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = El("#root", {})
        self.at = self.root
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = El(tag, {k: v or "" for k, v in attrs}, self.at)
        self.at.children.append(el)
        if tag not in self.VOID:
            self.at = el

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.at.children.append(El(tag, {k: v or "" for k, v in attrs}, self.at))

    def handle_endtag(self, tag: str) -> None:
        assert self.at.tag == tag, f"</{tag}> closes <{self.at.tag}>"
        assert self.at.parent is not None
        self.at = self.at.parent

    def handle_data(self, data: str) -> None:
        self.at.text += data


def parse(page: str) -> El:
    return Tree(page).root


def nodes(root: El) -> dict[str, El]:
    found = [e for e in root.walk() if "node" in e.classes]
    by_id = {e.attrs["data-id"]: e for e in found}
    assert len(by_id) == len(found), "two nodes share a data-id"
    return by_id


def edges(root: El) -> list[El]:
    return [e for e in root.walk() if "edge" in e.classes]


def css_rules(page: str) -> dict[str, str]:
    """Each selector of the page's stylesheet with the declarations given to it (later rules appended)."""
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert style
    rules: dict[str, str] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", style.group(1)):
        for sel in selectors.split(","):
            rules[sel.strip()] = rules.get(sel.strip(), "") + body + ";"
    return rules


def test_a_node_per_node_with_its_kind_shape_and_name() -> None:
    graph = sample()
    root = parse(render_map_html(graph))
    drawn = nodes(root)
    assert set(drawn) == {n["id"] for n in graph["nodes"]}
    for n in graph["nodes"]:
        el = drawn[n["id"]]
        assert el.tag == "g"
        assert el.classes[:2] == ["node", n["kind"]]
        assert el.find("rect").attrs["width"] == str(NODE_W)
        assert el.find("text").text == n["name"]
        assert n["name"] in el.attrs["aria-label"]
        assert el.find("title").text == f"{n['name']} ({n['id']})"


def test_memories_left_what_they_reach_right_orphans_in_their_box() -> None:
    root = parse(render_map_html(sample()))
    drawn = nodes(root)
    x = {i: int(e.find("rect").attrs["x"]) for i, e in drawn.items()}
    y = {i: int(e.find("rect").attrs["y"]) for i, e in drawn.items()}
    assert {x[mem(i)] for i in (1, 2, 3)} == {LEFT_X}
    assert {x[agent(1)], x[agent(2)], x["all_agents"], x["deployment:prod"]} == {RIGHT_X}
    # Reached Memories by name; all_agents, deployments, agents in that order.
    assert sorted((mem(i) for i in (1, 2, 3)), key=y.__getitem__) == [mem(2), mem(1), mem(3)]
    assert sorted((agent(1), agent(2), "all_agents", "deployment:prod"), key=y.__getitem__) == [
        "all_agents",
        "deployment:prod",
        agent(1),
        agent(2),
    ]
    (group,) = [e for e in root.walk() if "orphans" in e.classes]
    assert {e.attrs["data-id"] for e in group.walk() if "node" in e.classes} == {mem(4), mem(5)}
    assert all(("orphan" in e.classes) == e.within("orphans") for e in drawn.values())
    (box,) = [e for e in root.walk() if "orphan-box" in e.classes]
    bx, by, bw, bh = (int(box.attrs[k]) for k in ("x", "y", "width", "height"))
    for i in (4, 5):
        assert bx < x[mem(i)] and x[mem(i)] + NODE_W < bx + bw
        assert by < y[mem(i)] and y[mem(i)] + NODE_H < by + bh
    assert all(y[i] + NODE_H < by for i in drawn if i not in (mem(4), mem(5)))
    assert any(e.tag == "text" and e.text.startswith("Orphans") for e in root.walk())


def test_names_sort_naturally() -> None:
    names = ["agent-10", "Agent-2", "agent-2", "agent-1", "b", "agent-" + "9" * 5000, "agent-02"]
    page = render_map_html({"nodes": [{"id": f"id{i}", "kind": "agent", "name": n} for i, n in enumerate(names)]})
    shown = [e.find("text").text for e in nodes(parse(page)).values()]
    assert shown[:5] == ["agent-1", "Agent-2", "agent-02", "agent-2", "agent-10"]
    assert shown[5].startswith("agent-999") and shown[6] == "b"


def test_no_two_nodes_overlap_and_all_lie_inside_the_drawing() -> None:
    root = parse(render_map_html(big(60)))
    (svg,) = [e for e in root.walk() if e.tag == "svg" and "map" in e.classes]
    width, height = int(svg.attrs["width"]), int(svg.attrs["height"])
    assert svg.attrs["viewbox"] == f"0 0 {width} {height}"
    rects = sorted((int(r.attrs["x"]), int(r.attrs["y"])) for e in nodes(root).values() for r in [e.find("rect")])
    for x, y in rects:
        assert x >= 0 and x + NODE_W <= width and y >= 0 and y + NODE_H <= height
    # Sorted by (x, y), any overlap shows between neighbours of one column.
    for (x1, y1), (x2, y2) in itertools.pairwise(rects):
        assert x1 != x2 or y1 + NODE_H <= y2


def test_an_edge_per_edge_dashed_only_for_provenance() -> None:
    graph = sample()
    page = render_map_html(graph)
    drawn = edges(parse(page))
    assert [(e.attrs["data-from"], e.attrs["data-to"]) for e in drawn] == [(e["from"], e["to"]) for e in graph["edges"]]
    assert all(e.tag == "path" and e.attrs["d"].startswith("M") for e in drawn)
    assert [e.classes[1] for e in drawn] == [e["kind"] for e in graph["edges"]]
    rules = css_rules(page)
    assert "stroke-dasharray" in rules[".edge.provenance"]
    for sel in (".edge", ".edge.attachment", ".edge.default", ".edge.mount", ".edge.ro", ".edge.rw"):
        assert "stroke-dasharray" not in rules.get(sel, "")
    assert rules[".edge.attachment"] != rules[".edge.default"]


def test_read_only_and_read_write_look_different() -> None:
    by_target = {e.attrs["data-to"]: e for e in edges(parse(render_map_html(sample())))}
    rw, ro = by_target[agent(1)], by_target[agent(2)]
    assert "rw" in rw.classes and rw.attrs["data-mode"] == "readwrite"
    assert "ro" in ro.classes and ro.attrs["data-mode"] == "readonly"
    assert rw.attrs["marker-end"] != ro.attrs["marker-end"]
    assert "stroke-width" in css_rules(render_map_html(sample()))[".edge.ro"]
    # read_first marks the Memory's end; an edge without it has no start marker.
    assert rw.attrs["data-read-first"] == "true" and "marker-start" in rw.attrs
    assert "data-read-first" not in ro.attrs and "marker-start" not in ro.attrs


def test_every_marker_an_edge_names_is_defined() -> None:
    root = parse(render_map_html(sample()))
    defined = {e.attrs["id"] for e in root.walk() if e.tag == "marker"}
    used = {
        m.group(1)
        for e in root.walk()
        for k in ("marker-end", "marker-start")
        if (m := re.fullmatch(r"url\(#([\w-]+)\)", e.attrs.get(k, "")))
    }
    assert used and used <= defined


def test_a_legend_and_the_title() -> None:
    page = render_map_html(sample())
    root = parse(page)
    assert root.find("title").text == "Memory map"
    (legend,) = [e for e in root.walk() if "legend" in e.classes]
    words = " ".join(e.text for e in legend.walk() if e.tag == "text")
    for word in ("Memory", "Agent", "All agents", "Deployment", "attachment", "default", "provenance"):
        assert word in words
    assert "readonly" in words and "readwrite" in words and "read first" in words
    assert not any("node" in e.classes or "edge" in e.classes for e in legend.walk())


HOSTILE_NAMES = [
    HOSTILE,
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(1)' x='",
    "<!-- --><style>@import 'http://evil.example/x.css';</style>",
    "&lt;already escaped&gt; &amp; ]]>",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_and_ids_render_as_text(name: str) -> None:
    graph: dict[str, Any] = {
        "nodes": [
            {"id": name, "kind": "memory", "name": name},
            {"id": "a" + name, "kind": "agent", "name": name},
            {"id": "o" + name, "kind": "memory", "name": name},
        ],
        "edges": [{"from": name, "to": "a" + name, "kind": "attachment", "mode": "readwrite"}],
        "orphans": ["o" + name],
    }
    page = render_map_html(graph)
    root = parse(page)
    tags = [e.tag for e in root.walk()]
    assert "script" not in tags and "img" not in tags and "link" not in tags
    assert tags.count("style") == 1 and tags.count("svg") == 2
    assert not [k for e in root.walk() for k in e.attrs if k.startswith("on")]
    drawn = nodes(root)
    assert set(drawn) == {name, "a" + name, "o" + name}
    for el in drawn.values():
        assert el.find("title").text.startswith(name[:LABEL_COLUMNS])
    (edge,) = edges(root)
    assert (edge.attrs["data-from"], edge.attrs["data-to"]) == (name, "a" + name)
    # The same graph with harmless names has the same element structure: nothing in a name became markup.
    plain = parse(render_map_html({**graph, "nodes": [{**n, "name": "x"} for n in graph["nodes"]]}))
    assert [e.tag for e in plain.walk()] == tags


@settings(max_examples=150, deadline=None)
@given(names=st.lists(st.text(max_size=40), min_size=1, max_size=4), ids=st.lists(st.text(min_size=1), min_size=4))
def test_any_text_is_data_never_markup(names: list[str], ids: list[str]) -> None:
    ids = list(dict.fromkeys(ids))[: len(names)]
    graph = {
        "nodes": [{"id": i, "kind": "memory", "name": n} for i, n in zip(ids, names, strict=False)],
        "edges": [{"from": ids[0], "to": i, "kind": "provenance"} for i in ids],
    }
    root = parse(render_map_html(graph))
    assert set(nodes(root)) == set(ids)
    assert [e.attrs["data-to"] for e in edges(root)] == ids
    plain = parse(render_map_html({**graph, "nodes": [{**n, "name": "x"} for n in graph["nodes"]]}))
    assert [e.tag for e in root.walk()] == [e.tag for e in plain.walk()]


def test_no_external_reference() -> None:
    for page in (render_map_html(sample()), render_map_html(big(30)), render_map_html({})):
        low = page.lower()
        for bad in ("src=", "href=", "@import", "url(http", "<script", "<link", "xlink", "@font-face"):
            assert bad not in low
        assert "http" not in low.replace("http-equiv", "")
        # Markers are the only url() references, and each points into the page itself.
        assert all(u.startswith("#") for u in re.findall(r"url\(([^)]*)\)", page))


def test_the_page_forbids_scripts_and_fetches() -> None:
    page = render_map_html(sample())
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    assert policy and policy.group(1) == mapview.CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in policy.group(1) and "script-src 'none'" in policy.group(1)


def test_same_graph_same_bytes_whatever_the_node_order() -> None:
    graph = big(40)
    first = render_map_html(graph)
    assert render_map_html(graph) == first
    shuffled = dict(graph, nodes=random.Random(7).sample(graph["nodes"], len(graph["nodes"])))
    assert render_map_html(shuffled) == first


@pytest.mark.parametrize("graph", [{}, {"nodes": [], "edges": [], "orphans": []}, {"nodes": None, "edges": 3}])
def test_an_empty_graph_says_there_is_nothing_yet(graph: dict[str, Any]) -> None:
    page = render_map_html(graph)
    root = parse(page)
    assert root.find("title").text == "Memory map"
    assert "Nothing to map yet" in page
    assert "svg" not in [e.tag for e in root.walk()]


def test_dangling_and_malformed_edges_are_skipped() -> None:
    graph = sample()
    good = len(graph["edges"])
    graph["edges"] += [
        {"from": mem(1), "to": "ghost-target", "kind": "attachment", "mode": "readwrite"},
        {"from": "ghost-source", "to": agent(1), "kind": "attachment"},
        {"to": agent(1)},
        "not an edge",
        None,
    ]
    graph["orphans"].append("mem_not_a_node")
    page = render_map_html(graph)
    root = parse(page)
    assert len(edges(root)) == good
    assert "ghost-target" not in page and "ghost-source" not in page and "mem_not_a_node" not in page
    assert "5 skipped" in page


def test_unknown_kinds_duplicates_and_missing_names() -> None:
    graph = {
        "nodes": [
            {"id": mem(1), "kind": "memory", "name": "first"},
            {"id": mem(1), "kind": "memory", "name": "second"},
            {"id": "w", "kind": "weird kind", "name": "a workspace"},
            {"id": mem(2), "kind": "memory"},
            "not a node",
            {"kind": "memory", "name": "no id"},
        ],
        "edges": [{"from": mem(1), "to": "w", "kind": "teleport", "mode": "sideways"}],
    }
    root = parse(render_map_html(graph))
    drawn = nodes(root)
    assert set(drawn) == {mem(1), "w", mem(2)}
    assert drawn[mem(1)].find("text").text == "first"
    assert drawn["w"].classes == ["node", "other"] and drawn["w"].attrs["data-kind"] == "weird kind"
    assert drawn[mem(2)].find("text").text == mem(2)[: LABEL_COLUMNS - 1] + "…"
    (edge,) = edges(root)
    assert edge.classes == ["edge", "other"] and edge.attrs["data-kind"] == "teleport"
    assert "data-mode" not in edge.attrs


def test_a_long_name_is_cut_to_its_box_and_kept_whole_in_the_title() -> None:
    long = "x" * 100
    wide = "漢" * 40
    page = render_map_html(
        {"nodes": [{"id": "a", "kind": "agent", "name": long}, {"id": "b", "kind": "agent", "name": wide}]}
    )
    drawn = nodes(parse(page))
    assert drawn["a"].find("text").text == "x" * (LABEL_COLUMNS - 1) + "…"
    assert drawn["a"].find("title").text == f"{long} (a)"
    # Wide characters take two cells of the monospace label.
    assert drawn["b"].find("text").text == "漢" * ((LABEL_COLUMNS - 1) // 2) + "…"


def test_controls_and_bidi_overrides_are_not_shown() -> None:
    name = "good\u202egnp.exe\x00\x1b[31m"
    drawn = nodes(parse(render_map_html({"nodes": [{"id": "id\u202e", "kind": "agent", "name": name}]})))
    (el,) = drawn.values()
    assert el.find("text").text == "goodgnp.exe[31m"
    assert el.attrs["data-id"] == "id\u202e"


def test_lone_surrogates_do_not_break_encoding() -> None:
    page = render_map_html({"nodes": [{"id": "s\ud800", "kind": "memory", "name": "bad \udfff"}]})
    page.encode("utf-8")


def test_a_thousand_memories_and_agents_grow_the_page_linearly() -> None:
    small, large = big(500), big(1000)
    small_page, large_page = render_map_html(small), render_map_html(large)
    root = parse(large_page)
    assert len(nodes(root)) == len(large["nodes"]) == 2001
    assert len(edges(root)) == len(large["edges"])
    elements = len(large["nodes"]) + len(large["edges"])
    # Linear: twice the graph, about twice the page; and each element costs a bounded number of bytes.
    assert len(large_page) < 2.1 * len(small_page)
    assert len(large_page) < 600 * elements
    # A Lambda answers at most 6 MB: this graph is far below.
    assert len(large_page.encode()) < 2 * 1024 * 1024
    (svg,) = [e for e in root.walk() if e.tag == "svg" and "map" in e.classes]
    assert int(svg.attrs["height"]) < 40 * 1000 + 1000  # sized to its tallest column and the orphan box


def test_the_module_imports_nothing_heavy() -> None:
    """A Lambda route imports it: loading it must not pull in pydantic, boto3 or anything else of weight."""
    heavy = ("pydantic", "boto3", "botocore", "regex", "aws_lambda_powertools", "yaml", "moto")
    code = "import sys, agent_memory.render.mapview; print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    assert "agent_memory" in loaded
    assert not loaded & set(heavy)
