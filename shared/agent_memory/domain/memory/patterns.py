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

grep answers per line, as if each line were searched alone; `compile_whole` reads the same parse tree to
decide whether one search of the whole document finds exactly those lines (see its docstring).
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


def compile_whole(pattern: str, ignore_case: bool) -> regex.Pattern[str] | None:
    """The pattern compiled to search a whole document at once (MULTILINE: `^` and `$` at each line), when
    that finds exactly the lines that searching each line alone finds; else None, and grep goes line by line.

    Searching line by line arms the engine's timer once per line, and that, not matching, is most of its cost.
    One search from a line's start finds the leftmost match; it answers for the line where it starts when:
    - no part of the pattern can match a newline ("contained"): every attempt from a line stays in it, and
      sees the newline at either end fail as the string's end fails, so even lookarounds, atomic groups and
      recursion answer as they would on the line alone; or
    - a newline can be matched only by narrow, whitespace-like atoms (`\\s`, `\\n`, `[ \\t\\n]`) and nothing
      commits to one way of matching (no lookaround, atomic group, possessive repeat or recursion): every way
      a line alone matches is still a way the document matches, so no line is missed; a match that crosses
      a newline is checked on its line alone (grep does that), one inside its line is one the line has.
      Wide atoms such as `[^x]` or `(?s).` are left to the line-by-line search: an attempt could run to the
      document's end from every start, where on a line it stops at the line's end.
    Everything else (`\\A`, `\\Z`, `\\G`, `\\K`, `\\X`, fuzzy matching, backtracking verbs, word mode, reverse
    and POSIX matching, anything not named here) goes line by line, unjudged.
    """
    flags = (regex.IGNORECASE if ignore_case else 0) | regex.MULTILINE
    tree = _parse(pattern, flags)
    _check_size(tree)
    if not _line_bound(tree):
        return None
    try:
        compiled = regex.compile(pattern, flags, cache_pattern=False)
    except (regex.error, ValueError):
        return None  # compile_pattern, line by line, says why
    finally:
        regex.purge()
    if compiled.flags & (regex.REVERSE | regex.POSIX | regex.WORD):
        return None
    return compiled


_R = _regex_core
# Nodes whose answer at a position depends only on the characters within the line around it (the
# newline beyond a line's end is a non-word character, as the string's end is).
_STRUCTURE = (_R.Sequence, _R.Branch, _R.Group, _R.GreedyRepeat, _R.LazyRepeat, _R.Conditional, _R.RefGroup)
_ASSERTIONS = (_R.StartOfLine, _R.EndOfLine, _R.Boundary, _R.StartOfWord, _R.EndOfWord, _R.Failure)
# Nodes that commit to one way of matching, or look beyond it: exact only when nothing crosses a line.
_COMMITTING = (_R.Atomic, _R.PossessiveRepeat, _R.LookAround, _R.LookAroundConditional, _R.CallGroup)
_ATOMS = (_R.Character, _R.Property, _R.Range, _R.SetUnion, _R.SetInter, _R.SetDiff, _R.SetSymDiff)
_NEWLINE = 10
# A newline-matching atom is narrow when it matches none of these: whitespace only, in practice.
_VISIBLE = range(0x21, 0x7F)


def _line_bound(tree: Any) -> bool:
    """Whether searching a whole document finds the lines a line-by-line search finds (compile_whole)."""
    crosses = committing = False
    stack = [tree]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in _ATOMS or kind is _R.Any or kind is _R.AnyAll:
            newline = kind is _R.AnyAll or (kind is not _R.Any and node.matches(_NEWLINE))
            if newline and (kind is _R.AnyAll or any(node.matches(c) for c in _VISIBLE)):
                return False  # wide: see compile_whole
            crosses |= newline
            continue
        if kind in _COMMITTING:
            committing = True
        elif kind not in _STRUCTURE and kind not in _ASSERTIONS:
            return False
        for name in _CHILDREN:
            child = getattr(node, name, None)
            if isinstance(child, (list, tuple)):
                stack.extend(child)
            elif child is not None:
                stack.append(child)
    return not (crosses and committing)


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
