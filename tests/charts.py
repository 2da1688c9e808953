"""SVG charts for docs/performance.md, drawn from docs/performance.json alone (no plotting library).

Every chart is a pure function of the figures it is given: the same JSON draws the same bytes, so
`python -m tests.perfdoc --check` can redraw them and fail on drift, as it does for the page. Numbers are
rounded before they are written, and nothing reads the clock, the machine or a random source.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

BLUE, LIGHT_BLUE, ORANGE, RED, GREY = "#1f77b4", "#aec7e8", "#ff7f0e", "#d62728", "#999999"
FONT = 'font-family="sans-serif" font-size="11"'


@dataclass(frozen=True)
class Series:
    """One set of bars (or one line): a name for the legend, a colour, a value per row (None: no bar)."""

    name: str
    colour: str
    values: Sequence[float | None]


def _n(x: float) -> str:
    """A coordinate: one decimal, no trailing zeros, the same text for the same number on every machine."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _label(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}".rstrip("0").rstrip(".")
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _head(width: int, height: int, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" {FONT}>',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{_n(width / 2)}" y="18" text-anchor="middle" font-size="13">{escape(title)}</text>',
    ]


def _ticks(low: float, high: float, log: bool) -> list[float]:
    if log:
        first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
        return [10.0**k for k in range(first, last + 1)]
    step = 10 ** math.floor(math.log10(high / 4)) if high > 0 else 1
    for m in (1, 2, 5, 10):
        if high / (step * m) <= 6:
            step *= m
            break
    return [step * k for k in range(int(high / step) + 2) if step * k <= high * 1.0001 or k == 0]


def bars(
    title: str,
    rows: Sequence[str],
    series: Sequence[Series],
    unit: str,
    *,
    log: bool = False,
    line: tuple[float, str] | None = None,
    row_height: int = 14,
) -> str:
    """Horizontal bars, one group per row (each series one bar of it), an x axis in `unit` (log or linear),
    and an optional vertical reference line (value, label), e.g. a target."""
    label_w, right, top, bottom = 250, 70, 46, 40
    plot_w = 520
    group = row_height * len(series) + 4
    height = top + bottom + group * len(rows)
    width = label_w + plot_w + right
    values = [v for s in series for v in s.values if v is not None and v > 0]
    extra = [line[0]] if line else []
    high = max([*values, *extra, 1e-9])
    low = min([*values, *extra, high]) if log else 0.0
    ticks = _ticks(low, high, log)
    lo, hi = (math.log10(ticks[0]), math.log10(ticks[-1])) if log else (0.0, max(ticks[-1], high))

    def x(v: float) -> float:
        t = (math.log10(max(v, ticks[0])) - lo) / (hi - lo) if log else v / hi
        return label_w + plot_w * t

    out = _head(width, height, title)
    for k, s in enumerate(series):  # the legend
        lx = label_w + 140 * k
        out.append(f'<rect x="{lx}" y="28" width="10" height="10" fill="{s.colour}"/>')
        out.append(f'<text x="{lx + 14}" y="37">{escape(s.name)}</text>')
    axis_y = top + group * len(rows)
    for t in ticks:
        tx = _n(x(t))
        out.append(f'<line x1="{tx}" y1="{top}" x2="{tx}" y2="{axis_y}" stroke="#eeeeee"/>')
        out.append(f'<text x="{tx}" y="{axis_y + 14}" text-anchor="middle">{_label(t)}</text>')
    out.append(f'<line x1="{label_w}" y1="{axis_y}" x2="{label_w + plot_w}" y2="{axis_y}" stroke="black"/>')
    out.append(
        f'<text x="{_n(label_w + plot_w / 2)}" y="{axis_y + 30}" text-anchor="middle">'
        f"{escape(unit)}{' (log scale)' if log else ''}</text>"
    )
    for i, name in enumerate(rows):
        gy = top + group * i
        out.append(f'<text x="{label_w - 6}" y="{_n(gy + group / 2 + 4)}" text-anchor="end">{escape(name)}</text>')
        for k, s in enumerate(series):
            v = s.values[i]
            if v is None:
                continue
            by = gy + 2 + row_height * k
            w = x(v) - label_w
            out.append(
                f'<rect x="{label_w}" y="{by}" width="{_n(max(w, 0.5))}" height="{row_height - 2}" '
                f'fill="{s.colour}"><title>{escape(name)}, {escape(s.name)}: {_label(v)}</title></rect>'
            )
            out.append(f'<text x="{_n(label_w + max(w, 0.5) + 3)}" y="{by + row_height - 4}">{_label(v)}</text>')
    out.append(f'<line x1="{label_w}" y1="{top}" x2="{label_w}" y2="{axis_y}" stroke="black"/>')
    if line is not None:
        at = _n(x(line[0]))
        out.append(f'<line x1="{at}" y1="{top - 4}" x2="{at}" y2="{axis_y}" stroke="{RED}" stroke-dasharray="5 3"/>')
        out.append(f'<text x="{at}" y="{top - 6}" text-anchor="middle" fill="{RED}">{escape(line[1])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def lines(title: str, xs: Sequence[float], series: Sequence[Series], x_unit: str, y_unit: str) -> str:
    """Lines over a shared x axis (e.g. latency percentiles against concurrent clients), linear scales."""
    width, height, left, right, top, bottom = 640, 320, 60, 30, 46, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    ys = [v for s in series for v in s.values if v is not None]
    y_ticks = _ticks(0, max([*ys, 1.0]), log=False)
    y_hi = max(y_ticks[-1], max([*ys, 1.0]))
    x_lo, x_hi = min(xs), max(xs)
    span = (x_hi - x_lo) or 1

    def at(xv: float, yv: float) -> tuple[str, str]:
        return _n(left + plot_w * (xv - x_lo) / span), _n(top + plot_h * (1 - yv / y_hi))

    out = _head(width, height, title)
    for k, s in enumerate(series):
        lx = left + 110 * k
        out.append(f'<rect x="{lx}" y="28" width="10" height="10" fill="{s.colour}"/>')
        out.append(f'<text x="{lx + 14}" y="37">{escape(s.name)}</text>')
    for t in y_ticks:
        _, ty = at(x_lo, t)
        out.append(f'<line x1="{left}" y1="{ty}" x2="{left + plot_w}" y2="{ty}" stroke="#eeeeee"/>')
        out.append(f'<text x="{left - 6}" y="{ty}" text-anchor="end" dy="4">{_label(t)}</text>')
    for xv in xs:
        tx, _ = at(xv, 0)
        out.append(f'<text x="{tx}" y="{top + plot_h + 16}" text-anchor="middle">{_label(xv)}</text>')
    out.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>')
    out.append(f'<text x="{_n(left + plot_w / 2)}" y="{height - 8}" text-anchor="middle">{escape(x_unit)}</text>')
    out.append(
        f'<text x="14" y="{_n(top + plot_h / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_n(top + plot_h / 2)})">{escape(y_unit)}</text>'
    )
    for s in series:
        points = [at(xv, yv) for xv, yv in zip(xs, s.values, strict=True) if yv is not None]
        out.append(
            f'<polyline fill="none" stroke="{s.colour}" stroke-width="2" '
            f'points="{" ".join(f"{px},{py}" for px, py in points)}"/>'
        )
        for (px, py), yv in zip(points, [v for v in s.values if v is not None], strict=True):
            out.append(f'<circle cx="{px}" cy="{py}" r="3" fill="{s.colour}"><title>{_label(yv)}</title></circle>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
