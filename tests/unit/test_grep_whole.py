"""grep searches whole documents at once: it must find exactly the lines that searching each line alone finds."""

from __future__ import annotations

import time

import pytest
import regex
from agent_memory.api.errors import ApiError
from agent_memory.domain.memory.matching import LineMatcher, plain_search
from agent_memory.domain.memory.patterns import compile_pattern, compile_whole
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

FAR = 3600.0  # a deadline no example reaches


def by_line(pattern: str, ignore_case: bool, text: str) -> list[tuple[int, str]]:
    """The oracle: grep as it was, each line searched alone (the substring test first for a literal)."""
    plain = plain_search(pattern, ignore_case)
    compiled = None
    found = []
    for number, line in enumerate(text.split("\n"), start=1):
        hit = plain(line) if plain is not None else None
        if hit is None:
            compiled = compiled or compile_pattern(pattern, ignore_case)
            hit = compiled.search(line) is not None
        if hit:
            found.append((number, line))
    return found


def whole(pattern: str, ignore_case: bool, text: str) -> list[tuple[int, str]]:
    return list(LineMatcher(pattern, ignore_case).lines(text, time.monotonic() + FAR))


# Pieces chosen for what differs between a line and a document: anchors, newline-matching atoms (narrow
# and wide), lookarounds reaching past a line's end, commitments, back references, empty matches, case.
ATOMS = [
    "a", "a", "a", "b", "b", " ", r"\s", r"\s", r"\s*", r"\n", r"[\t \n]", "^", "^", "$", "$", ".", "(?s:.)",
    r"\S", "[^a]", r"\W", r"\w", r"\d", r"\b", r"\B", r"\A", r"\Z", r"\m", r"\M", "(?m:^)", "(?-m:$)",
    "k", "s", "-", "\u212a", "\u00df", "\u00e9", r"[a-\n]", r"\X", r"\G", r"\K", "(*F)", "",
]  # fmt: skip
# Mostly the few characters the atoms name, newlines among them; now and then one that folds or spaces.
texts = st.text(alphabet=st.sampled_from("aaabb  \n\n\n" + "AKk\t\r-1\u212a\u00df\u00e9"), max_size=30)


@st.composite
def patterns(draw: st.DrawFn) -> str:
    def node(depth: int) -> str:
        atom = draw(st.sampled_from(ATOMS))
        kind = draw(st.integers(0, 16))
        if depth >= 2 or kind <= 6:
            return atom
        inner = node(depth + 1) + (node(depth + 1) if draw(st.booleans()) else "")
        return [
            f"(?:{inner})*",
            f"(?:{inner})+?",
            f"({inner})",
            f"{inner}|{node(depth + 1)}",
            f"(?={inner})",
            f"(?<={inner})",
            f"(?!{inner})",
            f"(?<!{inner})",
            f"(?>{inner})",
            f"(?:{inner})++",
        ][kind - 7]

    body = "".join(node(0) for _ in range(draw(st.integers(1, 4))))
    if "(" in body and draw(st.booleans()):
        body += r"\1"  # a back reference to the first group
    return body


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns(), text=texts, ignore_case=st.booleans())
@example(pattern=r"a\s*$", text="a \n b", ignore_case=False)  # greedy \s runs past the line, then backs off
@example(pattern=r"a\s+b", text="a\nb\na b", ignore_case=False)  # a match across lines, then one within
@example(pattern=r"a(?![\s\S]*b)", text="a\nb", ignore_case=False)  # a lookahead that sees the next line
@example(pattern=r"(?<!\s)a", text="\na", ignore_case=False)  # a lookbehind that sees the newline
@example(pattern=r"a(?>\s*)$", text="a \nb", ignore_case=False)  # a commitment made across the newline
@example(pattern=r"\Aa", text="b\na", ignore_case=False)  # \A is each line's start
@example(pattern="x*", text="a\n\nb\n", ignore_case=False)  # an empty match: every line
@example(pattern=r"\Ga", text="b\nb\na", ignore_case=False)  # \G is where each line's search starts
@example(pattern=r"a\s\Kb", text="a\nb", ignore_case=False)  # \K moves a match's start past a newline
@example(pattern=r"\X$", text="a\r\nb", ignore_case=False)  # a grapheme joins \r to the newline
@example(pattern="(?r)a", text="a\na", ignore_case=False)  # a reverse search finds the last line first
@example(pattern="", text="", ignore_case=True)
@example(pattern="\u212a", text="k\nK\n\u212a", ignore_case=True)
def test_whole_documents_answer_as_lines_alone(pattern: str, text: str, ignore_case: bool) -> None:
    # Given any pattern grep accepts and any document
    try:
        expected = by_line(pattern, ignore_case, text)
    except (ApiError, regex.error):
        return  # refused, or invalid (a reference to a group the pattern lacks)
    # Then the whole-document search finds the same lines, with the same numbers and text, in order
    assert whole(pattern, ignore_case, text) == expected


@settings(max_examples=600, deadline=None)
@given(
    pattern=st.text(alphabet="ab \nKk\u212a", min_size=1, max_size=4),
    text=texts,
    ignore_case=st.booleans(),
)
@example(pattern="a\nb", text="a\nb", ignore_case=False)  # a literal newline is on no line
@example(pattern="k", text="a\n\u212a", ignore_case=True)  # beyond ASCII the engine folds case
def test_literals_answer_as_lines_alone(pattern: str, text: str, ignore_case: bool) -> None:
    # Given a pattern with no special characters (the substring shortcut) and any document
    # Then the whole-document search finds the lines the line-by-line search finds
    assert whole(pattern, ignore_case, text) == by_line(pattern, ignore_case, text)


@pytest.mark.parametrize(
    "pattern",
    [r"detail number 3\d", r"no such \w+ here", r"^\s*- \[ \]", r"foo\s+bar", r"(?i)todo:?\s", r"\bv\d+(?=\.)"],
)
def test_everyday_patterns_search_whole_documents(pattern: str) -> None:
    # Given patterns people grep with: words, classes, anchors, whitespace, lookarounds
    # Then each is searched over the whole document at once, not line by line
    assert compile_whole(pattern, False) is not None


@pytest.mark.parametrize("pattern", [r"a[^x]*b", r"(?s)a.*b", r"\Aa", r"a\Z", r"\Ga", r"a\Kb", r"x{e<=1}", r"(?r)a"])
def test_patterns_a_whole_document_cannot_answer_exactly_go_line_by_line(pattern: str) -> None:
    # Given a wide newline-matching atom (an attempt could run to the document's end), a string anchor,
    # \G or \K, fuzzy or reverse matching
    # Then the pattern is searched line by line, as before
    assert compile_whole(pattern, False) is None


def test_a_catastrophic_pattern_over_a_whole_document_stops_at_the_deadline() -> None:
    # Given a document whose lines make a backtracking pattern explode, searched whole
    text = "\n".join("a" * 30 + "b" for _ in range(200))
    assert compile_whole("(a|a)+$", False) is not None
    started = time.monotonic()
    # When the deadline is a tenth of a second away
    with pytest.raises(TimeoutError):
        list(LineMatcher("(a|a)+$", False).lines(text, started + 0.1))
    # Then the search stops there
    assert time.monotonic() - started < 1.0
