"""Paths that only look like others are refused: 422 `memory_path_invalid`, naming the character.

A segment holding a character that passes for a dot or a slash (the fullwidth full stop, the one dot
leader, the small full stop, the fullwidth solidus, the division slash), or any character Unicode
compatibility normalisation (NFKC) would rewrite, is refused on every door that takes a path: the
conversation's documents, a Memory's files, a session's files by mount, the mount paths an execution
configures, and the model's tools. Nothing is stored. One check (`core/paths.lookalike`) serves them all.
"""

from __future__ import annotations

import unicodedata

import pytest
import requests

from ..support import Api, code, conv_base, listed
from .mounted import RUNBOOKS, Mounted, make_mounted
from .orgmem import Files
from .runs import create

pytestmark = pytest.mark.http

# The examples, each with the character its refusal must name.
EXAMPLES = [
    ("\uff0e\uff0e/x.md", "\uff0e"),
    ("a/\u2024\u2024/b.md", "\u2024"),
    ("a\uff0fb.md", "\uff0f"),
    ("a\u2215..\u2215b.md", "\u2215"),
    ("\ufe52\ufe52/x.md", "\ufe52"),
    ("plan\u2044md", "\u2044"),  # fraction slash
    ("\ufb01les/x.md", "\ufb01"),  # the fi ligature: NFKC makes it "fi"
]


def named(r: requests.Response, ch: str) -> None:
    """A memory_path_invalid refusal naming `ch` by code point and name."""
    assert code(r) == (422, "memory_path_invalid"), r.text
    message = r.json()["error"]["message"]
    assert f"U+{ord(ch):04X} {unicodedata.name(ch)}" in message, message


@pytest.mark.parametrize(("rest", "ch"), EXAMPLES)
def test_a_lookalike_document_path_is_refused_on_every_verb(api: Api, rest: str, ch: str) -> None:
    ada, ws, conv = api.room()
    base = conv_base(ws, conv)
    path = f"conversation/{rest}"
    named(api.write(ada, base, path, "x"), ch)
    named(api.show(ada, base, path), ch)
    named(api.grep(ada, base, "x", path=path), ch)
    assert listed(api, ada, base) == []


@pytest.fixture
def m(api: Api) -> Mounted:
    return make_mounted(api)


def test_lookalike_paths_are_refused_on_memory_files_session_files_mounts_and_tools(m: Mounted) -> None:
    api, ada = m.run.api, m.run.ada
    files = Files(api)
    ex = m.session()
    before = m.paths(m.runbooks)
    for rest, ch in EXAMPLES:
        # A Memory's own files door, and a Memory created with such a file
        named(files.write(ada, m.runbooks, rest, "x"), ch)
        named(files.show_file(ada, m.runbooks, rest), ch)
        named(files.create(ada, "lookalike", files=[{"path": rest, "content": "x"}]), ch)
        # The session's files API, in a Memory mount and in a root
        named(
            m.files(
                ex,
                "write",
                path=f"{RUNBOOKS}/{rest}",
                content="x",
                **{"expected_public_id": None, "expected_lock_version": None},
            ),
            ch,
        )
        named(m.files(ex, "show", path=f"/memory/runbooks/{rest}"), ch)
        named(m.files(ex, "show", path=f"conversation/{rest}"), ch)
        # The model's tools, by absolute path and by root
        for path in (f"{RUNBOOKS}/{rest}", f"conversation/{rest}"):
            told = m.run.tool(ex, "memory_write", **create(path, "x"))
            assert told["is_error"] and told["code"] == "memory_path_invalid", told
            assert f"U+{ord(ch):04X} {unicodedata.name(ch)}" in told["content"]
    # Nothing was stored anywhere
    assert m.paths(m.runbooks) == before
    assert sorted(x["name"] for x in files.listing(ada).json()["memories"]) == ["reference", "runbooks"]


@pytest.mark.parametrize(
    ("mount", "ch"), [("/workspace/\uff0e\uff0e/x", "\uff0e"), ("/workspace/run\u2215books", "\u2215")]
)
def test_a_lookalike_mount_path_is_refused_and_starts_no_session(m: Mounted, mount: str, ch: str) -> None:
    r = m.run.start(capabilities=[{"ref": "memory", "config": {"mounts": [{"memory": m.runbooks, "path": mount}]}}])
    named(r, ch)


def test_ordinary_unicode_paths_are_still_accepted(api: Api) -> None:
    ada, ws, conv = api.room()
    base = conv_base(ws, conv)
    for path in ("conversation/café.md", "conversation/日本語/メモ.md", "conversation/a.b.c/d-e_f.md"):
        assert api.write(ada, base, path, "x").status_code == 201, path
