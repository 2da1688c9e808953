"""The memory map as Debian's headless chromium draws it: sizes, places, dashes and colours, not only markup.

Each test writes the page to a file with a probe script appended; the probe measures what was laid out and
leaves its findings as JSON in `<pre id="probe">`, which `--dump-dom` prints. The page's own policy forbids
every script, so the probe's copy allows that one script by its hash and nothing else. A screenshot of the
page as served (no probe) checks the pixels at the nodes.

Without chromium the tests are skipped, except under CI (the CI variable set), where they fail.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import shutil
import struct
import subprocess
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from agent_memory.render.mapview import CONTENT_SECURITY_POLICY, NODE_H, NODE_W, render_map_html

from tests.support import Api
from tests.unit.test_mapview import HOSTILE, agent, big, mem, sample

pytestmark = pytest.mark.browser

WINDOW = (1200, 1000)

PROBE = """
(() => {
  const out = {errors: []};
  try {
    const map = document.querySelector("svg.map");
    const page = (r) => ({x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height});
    const user = (b) => ({x: b.x, y: b.y, w: b.width, h: b.height});
    out.svg = {page: page(map.getBoundingClientRect()), w: map.width.baseVal.value, h: map.height.baseVal.value};
    out.legend = page(document.querySelector("svg.legend").getBoundingClientRect());
    out.nodes = [...document.querySelectorAll(".node")].map((g) => {
      const rect = g.querySelector("rect"), text = g.querySelector("text");
      const style = getComputedStyle(rect);
      return {
        id: g.dataset.id, cls: g.getAttribute("class"), box: user(g.getBBox()), shape: user(rect.getBBox()),
        page: page(rect.getBoundingClientRect()), label: user(text.getBBox()), text: text.textContent,
        title: g.querySelector("title").textContent, fill: style.fill, stroke: style.stroke,
        visible: style.visibility === "visible" && style.display !== "none", orphan: g.closest(".orphans") !== null,
      };
    });
    out.edges = [...document.querySelectorAll(".edge")].map((p) => {
      const style = getComputedStyle(p), len = p.getTotalLength();
      const a = p.getPointAtLength(0), b = p.getPointAtLength(len);
      return {
        from: p.dataset.from, to: p.dataset.to, cls: p.getAttribute("class"), length: len,
        start: {x: a.x, y: a.y}, end: {x: b.x, y: b.y}, dash: style.strokeDasharray, stroke: style.stroke,
        width: parseFloat(style.strokeWidth), markerEnd: style.markerEnd, markerStart: style.markerStart,
      };
    });
    const box = document.querySelector(".orphan-box");
    out.orphanBox = box ? user(box.getBBox()) : null;
    out.scripts = document.scripts.length;
    out.svgs = document.querySelectorAll("svg").length;
    out.images = document.querySelectorAll("img, image, iframe, object, embed, link").length;
    out.handlers = [...document.querySelectorAll("*")].flatMap((el) =>
      [...el.attributes].filter((a) => a.name.startsWith("on")).map((a) => a.name));
    out.pwned = window.__pwned === undefined ? null : String(window.__pwned);
    out.title = document.title;
  } catch (e) {
    out.errors.push(String(e && e.stack || e));
  }
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def run_chromium(chromium: str, tmp_path: Path, page: Path, *args: str) -> str:
    profile = tmp_path / "profile"
    # A profile of its own per run: two runs sharing one would wait on each other's lock.
    shutil.rmtree(profile, ignore_errors=True)
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        f"--user-data-dir={profile}",
        *args,
        page.as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def probe(chromium: str, tmp_path: Path, page_html: str) -> dict[str, Any]:
    """Open the page with the probe and return what it measured."""
    digest = base64.b64encode(hashlib.sha256(PROBE.encode()).digest()).decode()
    assert page_html.count("script-src 'none'") == 1
    probed = page_html.replace("script-src 'none'", f"script-src 'sha256-{digest}'").replace(
        "</body>", f"<script>{PROBE}</script></body>"
    )
    path = tmp_path / "probed.html"
    path.write_text(probed, encoding="utf-8")
    dom = run_chromium(chromium, tmp_path, path, "--dump-dom")
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, f"the probe did not run; dumped DOM starts {dom[:500]!r}"
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    assert result["errors"] == []
    return result


def inside(inner: dict[str, float], outer: dict[str, float], slack: float = 0.5) -> bool:
    return (
        inner["x"] >= outer["x"] - slack
        and inner["y"] >= outer["y"] - slack
        and inner["x"] + inner["w"] <= outer["x"] + outer["w"] + slack
        and inner["y"] + inner["h"] <= outer["y"] + outer["h"] + slack
    )


def on_border(point: dict[str, float], box: dict[str, float], slack: float = 1.5) -> bool:
    """On the rectangle's outline (a stroke's width either way), not in its middle and not away from it."""
    x, y = point["x"], point["y"]
    near_x = box["x"] - slack <= x <= box["x"] + box["w"] + slack
    near_y = box["y"] - slack <= y <= box["y"] + box["h"] + slack
    on_side = min(abs(x - box["x"]), abs(x - box["x"] - box["w"])) <= slack
    on_edge = min(abs(y - box["y"]), abs(y - box["y"] - box["h"])) <= slack
    return near_x and near_y and (on_side or on_edge)


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    apart_x = a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"]
    return not apart_x and not (a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"])


def graph_with_hostile_names() -> dict[str, Any]:
    graph = sample()
    graph["nodes"] += [
        {"id": mem(9), "kind": "memory", "name": HOSTILE},
        {"id": '"><script>window.__pwned=1</script>', "kind": "agent", "name": "<img src=x onerror=window.__pwned=2>"},
    ]
    graph["edges"].append(
        {"from": mem(9), "to": '"><script>window.__pwned=1</script>', "kind": "attachment", "mode": "readonly"}
    )
    return graph


def test_what_is_drawn(chromium: str, tmp_path: Path) -> None:
    graph = graph_with_hostile_names()
    seen = probe(chromium, tmp_path, render_map_html(graph))
    assert seen["title"] == "Memory map"
    svg = {"x": 0.0, "y": 0.0, "w": seen["svg"]["w"], "h": seen["svg"]["h"]}
    assert seen["svg"]["page"]["w"] == svg["w"] and seen["svg"]["page"]["h"] == svg["h"]

    # Each node: there, visible, of the box's size, its label inside its shape, inside the drawing, alone.
    nodes = {n["id"]: n for n in seen["nodes"]}
    assert set(nodes) == {n["id"] for n in graph["nodes"]}
    names = {n["id"]: n["name"] for n in graph["nodes"]}
    for node in nodes.values():
        assert node["visible"]
        assert (node["shape"]["w"], node["shape"]["h"]) == (NODE_W, NODE_H)
        assert node["label"]["w"] > 10 and node["label"]["h"] > 5
        assert inside(node["label"], node["shape"]), node
        assert inside(node["box"], svg)
        assert node["title"].startswith(names[node["id"]])
        assert node["fill"] not in ("none", "rgb(255, 255, 255)", "rgba(0, 0, 0, 0)")
    assert nodes[mem(9)]["text"] == HOSTILE
    ordered = list(nodes.values())
    for i, a in enumerate(ordered):
        assert not any(overlap(a["shape"], b["shape"]) for b in ordered[i + 1 :]), a["id"]
    # Memories left of what they reach.
    memory_right = max(n["shape"]["x"] + NODE_W for n in ordered if "memory" in n["cls"] and not n["orphan"])
    assert all(n["shape"]["x"] > memory_right for n in ordered if "memory" not in n["cls"])

    # Orphans inside their box, and nothing else in it.
    box = seen["orphanBox"]
    assert {n["id"] for n in ordered if n["orphan"]} == set(graph["orphans"])
    for n in ordered:
        assert inside(n["shape"], box) == n["orphan"], n["id"]

    # Each edge: drawn, from its source's outline to its target's; dashed exactly when provenance.
    edges = seen["edges"]
    assert [(e["from"], e["to"]) for e in edges] == [(e["from"], e["to"]) for e in graph["edges"]]
    for edge in edges:
        assert edge["length"] > 10
        assert on_border(edge["start"], nodes[edge["from"]]["shape"]), edge
        assert on_border(edge["end"], nodes[edge["to"]]["shape"]), edge
        assert edge["markerEnd"].startswith("url(")
        if edge["cls"].split()[1] == "provenance":
            assert edge["dash"] != "none" and re.fullmatch(r"[\d.]+px(, [\d.]+px)+", edge["dash"]), edge
        else:
            assert edge["dash"] == "none", edge
    kinds = {e["cls"].split()[1]: e for e in edges}
    assert len({kinds[k]["stroke"] for k in ("attachment", "default", "provenance")}) == 3
    by_mode = {("ro" if " ro" in e["cls"] else "rw"): e for e in edges if e["cls"].split()[1] == "attachment"}
    assert by_mode["ro"]["width"] < by_mode["rw"]["width"]
    assert by_mode["ro"]["markerEnd"] != by_mode["rw"]["markerEnd"]

    # Hostile names stayed text: one script (the probe), no images, no handlers, and the policy is intact.
    assert seen["scripts"] == 1 and seen["images"] == 0 and seen["handlers"] == []
    assert seen["svgs"] == 2 and seen["pwned"] is None
    assert seen["legend"]["h"] > 0 and seen["legend"]["y"] < seen["svg"]["page"]["y"]


def test_a_thousand_memories_and_agents_in_the_browser(chromium: str, tmp_path: Path) -> None:
    graph = big(1000)
    started = time.perf_counter()
    page = render_map_html(graph)
    rendered = time.perf_counter() - started
    seen = probe(chromium, tmp_path, page)
    opened = time.perf_counter() - started - rendered
    svg = {"x": 0.0, "y": 0.0, "w": seen["svg"]["w"], "h": seen["svg"]["h"]}
    assert len(seen["nodes"]) == len(graph["nodes"])
    assert len(seen["edges"]) == len(graph["edges"])
    assert all(inside(n["box"], svg) and n["shape"]["w"] == NODE_W for n in seen["nodes"])
    # The drawing is sized to its content: its bottom is the lowest node plus the margins, no more.
    lowest = max(n["shape"]["y"] + NODE_H for n in seen["nodes"])
    assert lowest < svg["h"] <= lowest + 100
    print(f"1000+1000: rendered {rendered * 1000:.0f} ms, {len(page.encode())} bytes; chromium {opened:.1f} s")


def png_pixels(data: bytes) -> tuple[int, int, int, list[bytearray]]:
    """Width, height, bytes per pixel and unfiltered rows of an 8-bit RGB or RGBA PNG (what chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytearray] = []
    prev = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def test_the_served_page_paints_its_nodes(chromium: str, tmp_path: Path) -> None:
    """The page as served, with its own policy: styles apply (colours at the nodes), markers and all."""
    page = render_map_html(sample())
    assert CONTENT_SECURITY_POLICY in page
    seen = probe(chromium, tmp_path, page)
    served = tmp_path / "served.html"
    served.write_text(page, encoding="utf-8")
    shot = tmp_path / "map.png"
    run_chromium(chromium, tmp_path, served, f"--screenshot={shot}")
    width, height, bpp, rows = png_pixels(shot.read_bytes())
    assert (width, height) == WINDOW

    def colour(x: float, y: float) -> tuple[int, ...]:
        row = rows[int(y)]
        return tuple(row[int(x) * bpp : int(x) * bpp + 3])

    def rgb(css: str) -> tuple[int, ...]:
        found = re.fullmatch(r"rgb\((\d+), (\d+), (\d+)\)", css)
        assert found, css
        return tuple(int(v) for v in found.groups())

    for node in seen["nodes"]:
        box = node["page"]
        assert box["y"] + box["h"] < height, "the sample must fit the window"
        # Just inside the top border, midway along: the node's fill, above where its label's glyphs start.
        got, want = colour(box["x"] + box["w"] / 2, box["y"] + 4), rgb(node["fill"])
        assert all(abs(g - w) <= 6 for g, w in zip(got, want, strict=True)), (node["id"], got, want)
        assert colour(box["x"], box["y"] + box["h"] / 2) != (255, 255, 255), node["id"]
    # Between the columns, above every edge: the page's white background.
    svg = seen["svg"]["page"]
    assert colour(svg["x"] + svg["w"] / 2, svg["y"] + 8) == (255, 255, 255)
    # Each edge starts and ends on a node's outline, so its midpoint is the line's colour, not white.
    for edge in seen["edges"]:
        if edge["cls"].split()[1] in ("attachment", "default", "mount"):
            x = svg["x"] + (edge["start"]["x"] + edge["end"]["x"]) / 2
            y = svg["y"] + (edge["start"]["y"] + edge["end"]["y"]) / 2
            assert any(colour(x, y + d) != (255, 255, 255) for d in (-1, 0, 1)), edge


def test_the_edges_land_on_the_nodes_they_name(chromium: str, tmp_path: Path) -> None:
    """A straight edge between the columns starts at its Memory's right side and ends at its target's left."""
    seen = probe(chromium, tmp_path, render_map_html(sample()))
    nodes = {n["id"]: n["shape"] for n in seen["nodes"]}
    for edge in seen["edges"]:
        if edge["to"] in (agent(1), agent(2), "all_agents", "deployment:prod"):
            source, target = nodes[edge["from"]], nodes[edge["to"]]
            assert abs(edge["start"]["x"] - (source["x"] + source["w"])) < 1
            assert abs(edge["end"]["x"] - target["x"]) < 1
            assert abs(edge["end"]["y"] - (target["y"] + target["h"] / 2)) < 1


def test_the_gateway_serves_the_accounts_map_and_the_browser_draws_it(chromium: str, tmp_path: Path, api: Api) -> None:
    """The page as the service answers it for a real account: a node per Memory and agent, the dashed
    provenance edge, and the orphans in their box."""
    from tests.http.test_memory_map import build  # the same account the map's JSON tests draw

    ada, ids, agents = build(api)
    r = api.get("/memory_map.html", ada)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")
    assert "script-src 'none'" in r.headers["content-security-policy"]
    seen = probe(chromium, tmp_path, r.text)
    drawn = {n["id"]: n for n in seen["nodes"]}
    assert set(ids.values()) | set(agents.values()) | {"all_agents", "deployment:prod"} == set(drawn)
    provenance = [e for e in seen["edges"] if e["cls"].split()[1] == "provenance"]
    assert [(e["from"], e["to"]) for e in provenance] == [(ids["runbooks"], ids["copy"])]
    assert all(e["dash"] not in ("none", "") for e in provenance)
    assert all(e["dash"] == "none" for e in seen["edges"] if e not in provenance)
    orphans = {n["id"] for n in seen["nodes"] if n["orphan"]}
    assert orphans == {ids["orphan"], ids["copy"]}
