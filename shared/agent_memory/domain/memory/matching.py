"""Which lines of a document a grep pattern matches: every line searched as if alone, by searching the whole
document at once where that is provably the same (patterns.compile_whole) and line by line where it is not.

Loaded by grep alone (it imports the `regex` engine, about 10 ms): the other verbs never need it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import regex

from agent_memory.domain.memory.patterns import compile_pattern, compile_whole

# (start, end) of the leftmost match at or after a position, or None; raises TimeoutError past the deadline
Find = Callable[[str, int, float], tuple[int, int] | None]


def plain_search(pattern: str, ignore_case: bool) -> Callable[[str], bool | None] | None:
    """A substring test equal to searching the pattern, when it has no special characters; else None.

    A literal cannot backtrack, so it needs no timeout, and arming regex's timer costs several times more
    than the match itself (measured by tests/bench.py). The test answers None for a line only the regex
    engine can judge: beyond ASCII, case folding has extra pairs (the Kelvin sign folds to k).
    """
    if regex.escape(pattern, special_only=True, literal_spaces=True) != pattern:
        return None
    if not ignore_case:
        return lambda line: pattern in line
    if not pattern.isascii():
        return None
    lowered = pattern.lower()
    return lambda line: (lowered in line.lower()) if line.isascii() else None


def _remaining(deadline: float) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    return remaining


class LineMatcher:
    """One grep pattern, matched against documents; compiled (and refused when out of bounds) on creation.

    `by_line=True` searches each line alone whatever the pattern: how grep searched before, kept for the
    patterns the whole-document search cannot answer exactly, and for the bench to measure against.
    """

    def __init__(self, pattern: str, ignore_case: bool, *, by_line: bool = False) -> None:
        self.pattern, self.ignore_case = pattern, ignore_case
        self.plain = None if by_line else plain_search(pattern, ignore_case)
        self._alone: regex.Pattern[str] | None = None  # the pattern as one line alone is searched with
        self._whole: regex.Pattern[str] | None = None
        if self.plain is None:
            self._whole = None if by_line else compile_whole(pattern, ignore_case)
            if self._whole is None:
                self._alone = compile_pattern(pattern, ignore_case)
        # A literal has no repeats (it is within every compile bound): its engine, needed only for text a
        # substring test cannot judge, is compiled when first needed.

    def lines(self, text: str, deadline: float) -> Iterator[tuple[int, str]]:
        """(number, line) of each matching line of `text`, in order, counted from 1 (split on "\\n" only).
        Raises TimeoutError once the deadline has passed while the engine still had work to do."""
        find = self._finder(text)
        if find is None:
            yield from self._by_line(text, deadline)
            return
        number, pos, end = 1, 0, len(text)
        while pos <= end:
            found = find(text, pos, deadline)
            if found is None:
                return
            start, stop = found
            number += text.count("\n", pos, start)
            newline = text.rfind("\n", pos, start)
            first = newline + 1 if newline >= 0 else pos
            last = text.find("\n", start)
            last = end if last < 0 else last
            line = text[first:last]
            # A match that runs past its line's end (only a newline-matching pattern's can) proves nothing
            # about the line alone: that line is asked alone. Lines before it have no match at all.
            if stop <= last or self._alone_matches(line, deadline):
                yield number, line
            pos, number = last + 1, number + 1

    def _finder(self, text: str) -> Find | None:
        if self.plain is not None:
            if "\n" in self.pattern:
                return lambda text, pos, deadline: None  # no line holds a newline
            if not self.ignore_case:
                return _found(self.pattern, len(self.pattern), text)
            if text.isascii():
                return _found(self.pattern.lower(), len(self.pattern), text.lower())
            # Beyond ASCII only the engine folds case exactly; a literal is always searchable whole.
            self._whole = self._whole or compile_whole(self.pattern, self.ignore_case)
        whole = self._whole
        if whole is None:
            return None

        def find(text: str, pos: int, deadline: float) -> tuple[int, int] | None:
            match = whole.search(text, pos, timeout=_remaining(deadline))
            return None if match is None else match.span()

        return find

    def _alone_matches(self, line: str, deadline: float) -> bool:
        if self.plain is not None:
            hit = self.plain(line)
            if hit is not None:
                return hit
        self._alone = self._alone or compile_pattern(self.pattern, self.ignore_case)
        return self._alone.search(line, timeout=_remaining(deadline)) is not None

    def _by_line(self, text: str, deadline: float) -> Iterator[tuple[int, str]]:
        for number, line in enumerate(text.split("\n"), start=1):
            if self._alone_matches(line, deadline):
                yield number, line


def _found(needle: str, width: int, haystack: str) -> Find:
    """A substring finder over `haystack` (the text, or its lowered copy: ASCII lowering keeps offsets)."""

    def find(text: str, pos: int, deadline: float) -> tuple[int, int] | None:
        start = haystack.find(needle, pos)
        return None if start < 0 else (start, start + width)

    return find
