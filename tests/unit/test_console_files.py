"""The console's files ship with the server: in the wheel's package data and in the layer SAM builds."""

from __future__ import annotations

import tomllib
from pathlib import Path

from agent_memory.edges.http.console import ASSETS, MEDIA

ROOT = Path(__file__).resolve().parents[2]
FILES = ("index.html", "console.js", "console.css")


def test_every_console_file_is_package_data_and_is_served_with_its_type() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = globs["agent_memory.render"]
    for name in FILES:
        assert (ASSETS / name).is_file()
        assert f"console/*{Path(name).suffix}" in shipped
        assert Path(name).suffix in MEDIA


def test_the_layer_carries_the_console_byte_for_byte(layer: Path) -> None:
    for name in FILES:
        shipped = layer / "agent_memory" / "render" / "console" / name
        assert shipped.read_bytes() == (ASSETS / name).read_bytes()


def test_the_page_loads_nothing_but_our_own_files() -> None:
    page = (ASSETS / "index.html").read_text()
    assert '<script src="/console/console.js" defer></script>' in page
    assert page.count("<script") == 1 and "style=" not in page and "<style" not in page
    assert "http://" not in page and "https://" not in page
    script = (ASSETS / "console.js").read_text()
    # Nothing the script shows is parsed as HTML
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, sink
