"""The memory map as one self-contained HTML page: an inline SVG drawing of which Memory reaches whom.

`render_map_html` takes the graph `GET /agent_api/v1/memory_map` answers (nodes, edges, orphans) and returns
a page that needs nothing else: inline CSS, inline SVG, no script, no font, image or stylesheet to fetch, so
it opens offline and from a file. Its own Content-Security-Policy forbids scripts and every fetch, which
backs the escaping up: names and ids are whatever callers chose, and each one goes through `html.escape`.

Layout, all in whole pixels and without randomness (the same graph gives the same bytes):

* Memories not listed in `orphans` sit in the left column, sorted by name (then id).
* What Memories reach sits in the right column: `all_agents` first, then deployments, then agents, then
  nodes of any other kind, each group sorted by name (then id).
* Memories listed in `orphans` are set apart below both columns in a box titled "Orphans", three to a
  row, sorted by name (then id). An orphan id naming no memory node is ignored.
* Edges are drawn under the nodes. One between the columns is a straight line from the right side of the
  left node to the left side of the right one. One within a column (provenance) bows out into the margin
  beside it. One to or from an orphan runs along the margin and the gap above the orphan's row, and meets
  the orphan at its top. Provenance is dashed; attachment, default and mount are solid, each in its own
  colour; readwrite is a thick line with a filled arrowhead, readonly a thin one with a hollow arrowhead;
  read_first adds a dot at the Memory's end.

Every node is `<g class="node KIND" data-id=...>` with a shape, a `<text>` label (cut to fit the box, the
full name is in the node's `<title>` and `aria-label`) and every edge `<path class="edge KIND"
data-from=... data-to=...>`. A kind the renderer does not know is drawn as `other`, keeping the real kind
in `data-kind`. Edges naming an unknown node are skipped and counted in the summary. The work is linear
in the graph: each node and edge is written once, and nothing compares pairs.
"""

from __future__ import annotations

import base64
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import replace
from html import escape
from typing import Any

from agent_memory.core.lazy_dataclass import dataclass

__all__ = ["CONTENT_SECURITY_POLICY", "render_map_html"]

NODE_KINDS = ("memory", "all_agents", "deployment", "agent")
EDGE_KINDS = ("attachment", "default", "provenance", "mount", "member")
MODES = {"readwrite": "rw", "readonly": "ro"}

# Geometry, in CSS pixels. The label font is monospace so a label's width follows from its character count.
NODE_W = 248
NODE_H = 28
PITCH = 36
LABEL_COLUMNS = 32
# Room beside each column for the bowed same-column edges; a bow reaches at most 3/4 of BOW_MAX out.
SIDE = 112
BOW_MAX = 96
COL_GAP = 264
TOP = 56
BAND_GAP = 32
BAND_PAD = 16
BAND_TITLE = 28
MARGIN = 24
LEFT_X = SIDE
RIGHT_X = SIDE + NODE_W + COL_GAP
WIDTH = RIGHT_X + NODE_W + SIDE
BAND_COLUMNS = 3
# A title or aria-label past this is cut: the service bounds names, but the page must not grow with them.
FULL_TEXT_MAX = 256

_NODE_COLOURS = {
    "memory": ("#e8f0fe", "#1a56db"),
    "all_agents": ("#fdf2e9", "#b45309"),
    "deployment": ("#ecfdf5", "#047857"),
    "agent": ("#f5f3ff", "#6d28d9"),
    "other": ("#f3f4f6", "#4b5563"),
}
_EDGE_COLOURS = {
    "attachment": "#1a56db",
    "default": "#c2410c",
    "provenance": "#7c3aed",
    "mount": "#047857",
    "member": "#0f766e",
    "other": "#6b7280",
}
_KIND_WORDS = {
    "memory": "Memory",
    "all_agents": "All agents",
    "deployment": "Deployment",
    "agent": "Agent",
    "other": "Node",
}

_STYLE = (
    "body{margin:0;padding:16px 24px;font:14px/1.4 system-ui,sans-serif;color:#111827;background:#fff}"
    "h1{font-size:20px;margin:0 0 4px}"
    "p.summary{margin:0 0 12px;color:#4b5563}"
    "p.empty{margin:24px 0;font-size:16px;color:#4b5563}"
    "svg{display:block}"
    "svg text{font:12px monospace;fill:#111827}"
    "svg text.heading,svg text.band-title{font:600 13px system-ui,sans-serif;fill:#374151}"
    ".legend{margin:0 0 8px}"
    ".legend text{font:12px system-ui,sans-serif}"
    ".node rect{stroke-width:1.5}"
    + "".join(f".node.{k} rect,.key.{k} rect{{fill:{f};stroke:{s}}}" for k, (f, s) in _NODE_COLOURS.items())
    + ".node.all_agents rect,.key.all_agents rect{stroke-width:3}"
    ".orphan-box{fill:#fafafa;stroke:#9ca3af;stroke-width:1;stroke-dasharray:4 3}"
    ".edge,.swatch{fill:none;stroke-width:2}"
    + "".join(f".edge.{k},.swatch.{k}{{stroke:{c}}}" for k, c in _EDGE_COLOURS.items())
    + ".edge.ro,.swatch.ro{stroke-width:1.25}"
    ".edge.provenance,.swatch.provenance{stroke-dasharray:6 4}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
# Sent in the page itself; the route may send the same value as a header.
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; script-src 'none'; base-uri 'none'; form-action 'none'"
)

# Control characters and bidirectional overrides are dropped from what is shown, so a name cannot reorder
# or hide the text around it; ids keep them in data-id (escaped), where they must match the graph.
_HIDDEN = dict.fromkeys((*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)))

_DIGITS = re.compile(r"([0-9]+)")


@dataclass(frozen=True, slots=True)
class _Node:
    id: str
    kind: str  # one of NODE_KINDS or "other"
    raw_kind: str
    name: str
    x: int = 0
    y: int = 0
    place: str = ""  # "left", "right" or "band": which way a same-place edge leaves it


def _text(value: Any) -> str:
    """Any JSON value as text that encodes: a lone surrogate would make the route's UTF-8 encode fail."""
    s = value if isinstance(value, str) else "" if value is None else str(value)
    return s.encode("utf-8", "replace").decode("utf-8")


def _shown(s: str, limit: int) -> str:
    return _cut(s.translate(_HIDDEN), limit)


def _cut(s: str, columns: int) -> str:
    """At most `columns` monospace cells: wide East Asian characters take two, combining marks none."""
    used = 0
    keep = 0  # how much of s fits with room left for the ellipsis
    for i, ch in enumerate(s):
        cells = 0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        used += cells
        # A run of combining marks takes no width but does take bytes: the characters are bounded too.
        if used > columns or i >= 4 * columns:
            return s[:keep] + "…"
        if used <= columns - 1:
            keep = i + 1
    return s


def _attr(s: str) -> str:
    return escape(s, quote=True)


def _sort_key(n: _Node) -> tuple[tuple[Any, ...], str, str]:
    """Names in natural order (agent-2 before agent-10), then exactly, then by id, so ties still sort."""
    parts = _DIGITS.split(n.name.casefold())
    # Digit runs compare by length without leading zeros, then as text: no int() of a hostile huge number.
    natural = tuple((len(p.lstrip("0")), p.lstrip("0")) if i % 2 else p for i, p in enumerate(parts))
    return (natural, n.name, n.id)


def _read_nodes(raw: Any) -> dict[str, _Node]:
    nodes: dict[str, _Node] = {}
    for item in raw if isinstance(raw, list) else ():
        if not isinstance(item, Mapping):
            continue
        node_id = _text(item.get("id"))
        # The first node with an id wins: two drawn nodes with one data-id would make edges ambiguous.
        if not node_id or node_id in nodes:
            continue
        raw_kind = _text(item.get("kind"))
        kind = raw_kind if raw_kind in NODE_KINDS else "other"
        nodes[node_id] = _Node(node_id, kind, raw_kind, _text(item.get("name")) or node_id)
    return nodes


def _place_column(nodes: Iterable[_Node], x: int, place: str) -> list[_Node]:
    return [replace(n, x=x, y=TOP + i * PITCH, place=place) for i, n in enumerate(nodes)]


def _layout(nodes: dict[str, _Node], orphan_ids: set[str]) -> tuple[list[_Node], list[_Node], list[_Node], int]:
    """The left column, right column and orphan grid, each node with its place, and where the band starts."""
    memories = sorted((n for n in nodes.values() if n.kind == "memory" and n.id not in orphan_ids), key=_sort_key)
    orphans = sorted((n for n in nodes.values() if n.kind == "memory" and n.id in orphan_ids), key=_sort_key)
    rank = {k: i for i, k in enumerate(NODE_KINDS)}
    targets = sorted(
        (n for n in nodes.values() if n.kind != "memory"), key=lambda n: (rank.get(n.kind, len(rank)), *_sort_key(n))
    )
    left = _place_column(memories, LEFT_X, "left")
    right = _place_column(targets, RIGHT_X, "right")
    rows = max(len(left), len(right))
    band_y = TOP + rows * PITCH - (PITCH - NODE_H) + BAND_GAP if rows else TOP
    grid_y = band_y + BAND_TITLE + BAND_PAD
    band = [
        replace(n, x=LEFT_X + (i % BAND_COLUMNS) * (NODE_W + 20), y=grid_y + (i // BAND_COLUMNS) * PITCH, place="band")
        for i, n in enumerate(orphans)
    ]
    return left, right, band, band_y


def _node_svg(n: _Node, extra: str = "") -> str:
    full = _shown(n.name, FULL_TEXT_MAX)
    label = _shown(n.name, LABEL_COLUMNS)
    shown_id = _shown(n.id, FULL_TEXT_MAX)
    kind_attr = "" if n.kind == n.raw_kind else f' data-kind="{_attr(_shown(n.raw_kind, 64))}"'
    return (
        f'<g class="node {n.kind}{extra}" data-id="{_attr(n.id)}"{kind_attr} role="img" '
        f'aria-label="{_attr(_KIND_WORDS[n.kind])} {_attr(full)}">'
        f"<title>{escape(full)} ({escape(shown_id)})</title>"
        f'<rect x="{n.x}" y="{n.y}" width="{NODE_W}" height="{NODE_H}" rx="{14 if n.kind == "agent" else 4}"/>'
        f'<text x="{n.x + 9}" y="{n.y + 18}">{escape(label)}</text></g>'
    )


def _side(n: _Node, facing: str) -> tuple[int, int]:
    """The middle of the node's left or right side, or of its top."""
    if facing == "left":
        return n.x, n.y + NODE_H // 2
    if facing == "right":
        return n.x + NODE_W, n.y + NODE_H // 2
    return n.x + NODE_W // 2, n.y


def _edge_path(a: _Node, b: _Node, lane: int) -> str:
    if "band" in (a.place, b.place):
        return _band_path(a, b, lane)
    if a.place != b.place:
        # Between the columns: a straight line between the sides that face each other.
        x1, y1 = _side(a, "right" if a.x < b.x else "left")
        x2, y2 = _side(b, "left" if a.x < b.x else "right")
        return f"M{x1},{y1} L{x2},{y2}"
    # Within a column a straight line would cross the boxes between, so it bows out into the margin.
    out = -1 if a.place == "left" else 1
    x1, y1 = _side(a, a.place)
    x2, y2 = _side(b, b.place)
    bow = out * min(BOW_MAX, 24 + abs(y2 - y1) // 4)
    return f"M{x1},{y1} C{x1 + bow},{y1} {x2 + bow},{y2} {x2},{y2}"


def _band_path(a: _Node, b: _Node, lane: int) -> str:
    """Into or out of the orphan box along channels no node sits in: the column's margin, then the gap above
    the orphan's row, reaching the orphan at its top. Lanes spread edges that share a margin."""
    column = a if a.place != "band" else b if b.place != "band" else None
    out = 1 if column is not None and column.place == "right" else -1
    gutter = (RIGHT_X + NODE_W + 12 if out == 1 else LEFT_X - 12) + out * 6 * (lane % 8)

    def leg(n: _Node) -> list[tuple[int, int]]:
        # From the node to the margin, in order: its side and the turn, or its top, the gap above and the turn.
        if n.place != "band":
            x, y = _side(n, "right" if out == 1 else "left")
            return [(x, y), (gutter, y)]
        x, y = _side(n, "top")
        return [(x, y), (x, y - 4), (gutter, y - 4)]

    points = leg(a) + leg(b)[::-1]
    return "M" + " L".join(f"{x},{y}" for x, y in points)


def _edge_svg(edge: Mapping[str, Any], a: _Node, b: _Node, lane: int) -> str:
    raw_kind = _text(edge.get("kind"))
    kind = raw_kind if raw_kind in EDGE_KINDS else "other"
    mode = _text(edge.get("mode"))
    short = MODES.get(mode, "")
    read_first = edge.get("read_first") is True
    classes = " ".join(c for c in ("edge", kind, short, "read-first" if read_first else "") if c)
    head = f"{kind}-{'open' if short == 'ro' else 'fill'}"
    attrs = [
        f'class="{classes}"',
        f'data-from="{_attr(a.id)}"',
        f'data-to="{_attr(b.id)}"',
    ]
    if kind != raw_kind:
        attrs.append(f'data-kind="{_attr(_shown(raw_kind, 64))}"')
    if short:
        attrs.append(f'data-mode="{mode}"')
    if read_first:
        attrs.append('data-read-first="true"')
    attrs.append(f'd="{_edge_path(a, b, lane)}"')
    attrs.append(f'marker-end="url(#{head})"')
    if read_first:
        attrs.append(f'marker-start="url(#{kind}-dot)"')
    what = ", ".join(w for w in (raw_kind and _shown(raw_kind, 64), mode, "read first" if read_first else "") if w)
    title = f"{_shown(a.name, LABEL_COLUMNS)} → {_shown(b.name, LABEL_COLUMNS)}: {what}"
    return f"<path {' '.join(attrs)}><title>{escape(title)}</title></path>"


def _markers() -> str:
    out = []
    for kind, colour in _EDGE_COLOURS.items():
        tip = 'viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"'
        out.append(f'<marker id="{kind}-fill" {tip}><path d="M0,0 L10,5 L0,10 Z" fill="{colour}"/></marker>')
        out.append(
            f'<marker id="{kind}-open" {tip}>'
            f'<path d="M1,1 L9,5 L1,9 Z" fill="#fff" stroke="{colour}" stroke-width="1.5"/></marker>'
        )
        out.append(
            f'<marker id="{kind}-dot" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="6" markerHeight="6">'
            f'<circle cx="5" cy="5" r="4" fill="{colour}"/></marker>'
        )
    return "<defs>" + "".join(out) + "</defs>"


def _legend() -> str:
    # The legend's shapes use classes of their own (key, swatch): a reader of the map counts .node and .edge.
    # Its arrowheads are the map's markers: an id is the document's, whichever svg defines it.
    parts = []
    x = 0
    for kind in NODE_KINDS:
        word = _KIND_WORDS[kind]
        parts.append(
            f'<g class="key {kind}"><rect x="{x}" y="4" width="18" height="14" rx="{7 if kind == "agent" else 3}"/>'
            f'<text x="{x + 24}" y="16">{word}</text></g>'
        )
        x += 160
    rows = [
        [
            ("attachment", "attachment", "attachment-fill", ""),
            ("default", "default (all agents)", "default-fill", ""),
            ("mount", "mount (deployment)", "mount-fill", ""),
            ("provenance", "provenance: promoted from", "provenance-fill", ""),
        ],
        [
            ("attachment", "readwrite", "attachment-fill", ""),
            ("attachment ro", "readonly", "attachment-open", ""),
            ("attachment", "read first", "attachment-fill", "attachment-dot"),
        ],
    ]
    for r, row in enumerate(rows):
        y = 34 + 22 * r
        for i, (classes, word, head, start) in enumerate(row):
            x = 220 * i
            marker_start = f' marker-start="url(#{start})"' if start else ""
            parts.append(
                f'<path class="swatch {classes}" d="M{x + 4},{y} L{x + 44},{y}" marker-end="url(#{head})"'
                f'{marker_start}/><text x="{x + 52}" y="{y + 4}">{word}</text>'
            )
    return f'<svg class="legend" width="{WIDTH}" height="72" viewBox="0 0 {WIDTH} 72" aria-label="Legend">' + (
        "".join(parts) + "</svg>"
    )


def _page(body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Memory map</title><style>{_STYLE}</style></head>\n"
        f"<body><h1>Memory map</h1>\n{body}\n</body></html>\n"
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def render_map_html(graph: Mapping[str, Any]) -> str:
    """The graph of `GET /agent_api/v1/memory_map` as one self-contained HTML page (see the module docstring)."""
    nodes = _read_nodes(graph.get("nodes"))
    if not nodes:
        return _page('<p class="empty">Nothing to map yet: there are no Memories, agents or deployments to show.</p>')
    raw_orphans = graph.get("orphans")
    orphan_ids = {_text(o) for o in raw_orphans} if isinstance(raw_orphans, list) else set()
    left, right, band, band_y = _layout(nodes, orphan_ids)
    placed = {n.id: n for n in (*left, *right, *band)}

    edges: list[str] = []
    skipped = 0
    raw_edges = graph.get("edges")
    for edge in raw_edges if isinstance(raw_edges, list) else ():
        a = placed.get(_text(edge.get("from"))) if isinstance(edge, Mapping) else None
        b = placed.get(_text(edge.get("to"))) if isinstance(edge, Mapping) else None
        if a is None or b is None:
            skipped += 1
            continue
        edges.append(_edge_svg(edge, a, b, len(edges)))

    rows = max(len(left), len(right))
    parts = [
        f'<text class="heading" x="{LEFT_X}" y="{TOP - 14}">Memories</text>' if left else "",
        f'<text class="heading" x="{RIGHT_X}" y="{TOP - 14}">Reaches</text>' if right else "",
        _markers(),
    ]
    height = band_y - BAND_GAP + MARGIN if rows else TOP + MARGIN
    if band:
        band_rows = -(-len(band) // BAND_COLUMNS)
        band_h = BAND_TITLE + BAND_PAD + band_rows * PITCH - (PITCH - NODE_H) + BAND_PAD
        # The box goes under the edges (an edge may end at an orphan: provenance), its nodes over them.
        parts += [
            f'<rect class="orphan-box" x="{MARGIN}" y="{band_y}" width="{WIDTH - 2 * MARGIN}" height="{band_h}"/>',
            f'<text class="band-title" x="{MARGIN + 12}" y="{band_y + 20}">Orphans: Memories nothing attaches, '
            "defaults or mounts</text>",
        ]
        height = band_y + band_h + MARGIN
    parts += [
        '<g class="edges">',
        *edges,
        "</g>",
        '<g class="nodes">',
        *(_node_svg(n) for n in left),
        *(_node_svg(n) for n in right),
        "</g>",
    ]
    if band:
        parts += ['<g class="orphans" aria-label="Orphans">', *(_node_svg(n, " orphan") for n in band), "</g>"]

    counts = dict.fromkeys((*NODE_KINDS, "other"), 0)
    for n in nodes.values():
        counts[n.kind] += 1
    summary = [
        f"{counts['memory']} {'Memory' if counts['memory'] == 1 else 'Memories'}",
        _plural(counts["agent"], "agent"),
        _plural(counts["deployment"], "deployment"),
        _plural(len(edges), "edge"),
        _plural(len(band), "orphan"),
    ]
    if counts["other"]:
        summary.insert(3, _plural(counts["other"], "other node"))
    if skipped:
        summary.append(f"{skipped} skipped (naming no node)")
    return _page(
        f'<p class="summary">{escape(", ".join(summary))}.</p>\n'
        + _legend()
        + f'\n<svg class="map" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'aria-label="Memory map">{"".join(parts)}</svg>'
    )
