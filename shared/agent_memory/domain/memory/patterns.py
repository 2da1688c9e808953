"""Grep patterns compiled within bounds, so compiling costs as little as the request that asked for it.

The `regex` engine expands counted repeats when it compiles: `(?:x{1000}){1000}` (17 characters) becomes
a million-character program, half a second and ~250 MiB, and one level more kills a 512 MB Lambda. The
size a pattern compiles to is bounded before the engine compiles it, from the engine's own parse tree:
comments, character classes, verbose mode and fuzzy constraints are then read exactly as the compiler
reads them (a hand-written scanner that took a `[` inside `(?#...)` for a class could be walked past).
Parsing is linear in the pattern and cheap; only compiling expands.

Nested unbounded repeats such as `(x+x+)+y` compile small and stay legal: what they cost is matching
time, which grep's deadline bounds. Compiled patterns are never kept by the module's cache (a process
serving every caller's patterns would otherwise hold up to 500 of them, the bombs included).
"""

from __future__ import annotations

from typing import Any

import regex
from regex import _regex_core

from agent_memory.api.errors import ApiError

PATTERN_MAX_CHARS = 1000
# The largest count one repeat may carry ({n}, {n,}, {n,m}: the upper bound, or n when there is none).
REPEAT_MAX = 1000
# The product of the counts of repeats nested inside one another, along any path of the parse tree.
NESTED_REPEAT_MAX = 10_000
# What the whole pattern expands to: every node of the parse tree counted once per copy the enclosing
# repeats make of it. 20,000 compiles in ~5 ms and ~6 MiB (measured); the bombs are 50x that and more.
EXPANSION_MAX = 20_000
# Groups nested deeper than this are refused before the engine's recursive parser sees them.
NESTING_MAX = 100

_CHILDREN = ("items", "branches", "subpattern", "yes_item", "no_item")


def compile_pattern(pattern: str, ignore_case: bool) -> regex.Pattern[str]:
    """The compiled pattern, or `parameter_invalid` with a sentence saying which bound it passes."""
    check_length(pattern)
    flags = regex.IGNORECASE if ignore_case else 0
    _check_size(_parse(pattern, flags))
    try:
        compiled = regex.compile(pattern, flags, cache_pattern=False)
    except (regex.error, ValueError) as exc:  # ValueError: conflicting inline flags such as (?V0V1)
        raise _invalid(f"memory.pattern is not a valid regular expression: {exc}.") from exc
    finally:
        # Even uncached, the module memoises each pattern's locale sensitivity (a dict keyed by the
        # pattern text that only ever grows); purge clears it. grep is the layer's only user of `regex`.
        regex.purge()
    return compiled


def check_length(pattern: str) -> None:
    """The first bound, and the only one a literal (a pattern with no special characters) can pass."""
    if len(pattern) > PATTERN_MAX_CHARS:
        raise _invalid(f"memory.pattern is longer than {PATTERN_MAX_CHARS} characters.")


def _parse(pattern: str, flags: int) -> Any:
    """The engine's parse tree of the pattern, read the way `regex.compile` reads it (private API of
    `regex`; tests/unit/test_grep_patterns.py pins what it must find)."""
    _check_nesting(pattern)
    global_flags = flags
    try:
        while True:
            source = _regex_core.Source(pattern)
            info = _regex_core.Info(global_flags, source.char_type, {})
            info.guess_encoding = _regex_core.UNICODE
            source.ignore_space = bool(info.flags & _regex_core.VERBOSE)
            try:
                return _regex_core._parse_pattern(source, info)
            except _regex_core._UnscopedFlagSet:
                # A global flag such as (?x) or (?V1) set mid-pattern: the engine parses again with it.
                global_flags = info.global_flags
    except (regex.error, ValueError, RecursionError) as exc:
        raise _invalid(f"memory.pattern is not a valid regular expression: {exc}.") from exc


def _check_nesting(pattern: str) -> None:
    # An upper bound on group depth: an escaped or in-class parenthesis is counted too, which can only
    # refuse earlier, never later, than the parser's own depth.
    depth = deepest = 0
    for char in pattern:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth = max(0, depth - 1)
    if deepest > NESTING_MAX:
        raise _invalid(f"memory.pattern nests groups more than {NESTING_MAX} deep.")


def _check_size(tree: Any) -> None:
    total = 0
    stack: list[tuple[Any, int]] = [(tree, 1)]
    while stack:
        node, copies = stack.pop()
        characters = getattr(node, "characters", None)
        total += copies * (len(characters) if isinstance(characters, (str, tuple, list)) else 1)
        if total > EXPANSION_MAX:
            raise _invalid(
                f"memory.pattern expands to more than {EXPANSION_MAX} elements when compiled; use fewer or "
                "smaller repeat counts."
            )
        inner = copies
        if isinstance(node, _regex_core.GreedyRepeat):  # LazyRepeat and PossessiveRepeat derive from it
            low, high = node.min_count, node.max_count
            count = high if high is not None else low
            if max(low, count) > REPEAT_MAX:
                raise _invalid(
                    f"memory.pattern repeats something {max(low, count)} times; a repeat count may be at most "
                    f"{REPEAT_MAX}."
                )
            inner = copies * max(count, 1)
            if inner > NESTED_REPEAT_MAX:
                raise _invalid(
                    f"memory.pattern nests repeats whose counts multiply to {inner}; nested repeat counts may "
                    f"multiply to at most {NESTED_REPEAT_MAX}."
                )
        for name in _CHILDREN:
            child = getattr(node, name, None)
            if isinstance(child, (list, tuple)):
                stack.extend((c, inner) for c in child)
            elif child is not None:
                stack.append((child, inner))


def _invalid(sentence: str) -> ApiError:
    return ApiError("parameter_invalid", sentence)
