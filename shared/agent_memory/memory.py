"""The memory verbs: list, show, write, edit, grep, delete. Door-agnostic: they act on a resolved Context,
ask rules/access.py whether a change may land, and answer domain values (views.py renders them)."""

from __future__ import annotations

import time
from collections.abc import Callable

import regex

from .context import Context, Source
from .errors import ApiError, stale
from .ids import now_iso, sha256_hex, uuid7
from .model import (
    MAX_DESCRIPTION_BYTES,
    MAX_DOCUMENT_BYTES,
    ConversationBump,
    Document,
    DocumentChange,
    GrepMatch,
    GrepResult,
    Located,
    WriteBudget,
)
from .paths import MemoryPath, prefix_matches
from .rules.access import DOORS, check_context_revision, may_change, refuse_override

GREP_LINE_CAP = 500
GREP_PATTERN_MAX = 1000
# A pattern gets this much matching time in all, across every line it searches; past it the request is
# refused rather than holding a function (catastrophic backtracking cannot pin a Lambda).
GREP_BUDGET_SECONDS = 0.25


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


def _check_content(content: object) -> bytes:
    if not isinstance(content, str):
        raise ApiError("memory_content_invalid", "memory.content must be a string of markdown.")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate escape such as "\ud800" in the JSON
        raise ApiError("memory_content_invalid", "memory.content is not valid Unicode text.") from exc
    if len(data) > MAX_DOCUMENT_BYTES:
        raise ApiError(
            "memory_document_too_large",
            f"The document is {len(data)} bytes; a document holds at most {MAX_DOCUMENT_BYTES} bytes (64 KiB).",
        )
    return data


def _check_description(mp: MemoryPath, description: object, *, given: bool) -> str | None:
    if mp.skill_name is None:
        if given and description is not None:
            raise ApiError(
                "memory_description_invalid",
                "description belongs to skills/ documents only; leave it out on other paths.",
            )
        return None
    if description is not None and not isinstance(description, str):
        raise ApiError("memory_description_invalid", "description must be a string.")
    if description is None or not description.strip():
        raise ApiError(
            "skill_description_required",
            "A skill needs a description: the one line a model reads to decide whether to load it.",
        )
    try:
        size = len(description.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ApiError("memory_description_invalid", "description is not valid Unicode text.") from exc
    if size > MAX_DESCRIPTION_BYTES:
        raise ApiError("memory_description_invalid", f"description is longer than {MAX_DESCRIPTION_BYTES} bytes.")
    return description


class MemoryService:
    """The six verbs over a resolved context."""

    def __init__(self, writes_per_minute: int | None = None) -> None:
        self.writes_per_minute = writes_per_minute

    def _change(
        self,
        ctx: Context,
        src: Source,
        mp: MemoryPath,
        expected: tuple[str, int] | None,
        new: Document | None,
        expected_context_revision: int | None,
    ) -> DocumentChange:
        budget = None
        if self.writes_per_minute is not None:
            budget = WriteBudget(ctx.principal.public_id, self.writes_per_minute)
        return DocumentChange(src.anchored, mp.rest, expected, new, self._bump(ctx, expected_context_revision), budget)

    # ---- reads ----------------------------------------------------------------------------------

    def listing(self, ctx: Context) -> list[Located]:
        refuse_override(ctx, None)
        return self._documents(ctx, ctx.readable())

    def _documents(self, ctx: Context, sources: list[Source]) -> list[Located]:
        listed = ctx.store.list_many([s.anchor for s in sources if s.anchor is not None])
        rows = [Located(f"{s.name}/{d.rest}", d) for s in sources if s.anchor is not None for d in listed[s.anchor]]
        rows.sort(key=lambda r: r.path)
        return rows

    def show(self, ctx: Context, mp: MemoryPath) -> Located:
        refuse_override(ctx, mp)
        src = ctx.source(mp)
        doc = ctx.document(src, mp.rest)
        if doc is None:
            raise ApiError("memory_not_found", f"There is no document at {mp.logical!r}.")
        return Located(mp.logical, doc, _content(ctx, mp.logical, doc))

    def grep(self, ctx: Context, pattern: str, prefix: MemoryPath | None, ignore_case: bool, limit: int) -> GrepResult:
        refuse_override(ctx, prefix if prefix is not None and prefix.skill_name is not None else None)
        if len(pattern) > GREP_PATTERN_MAX:
            raise ApiError("parameter_invalid", f"memory.pattern is longer than {GREP_PATTERN_MAX} characters.")
        try:
            compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
        except regex.error as exc:
            raise ApiError("parameter_invalid", f"memory.pattern is not a valid regular expression: {exc}.") from exc
        sources = [ctx.source(prefix)] if prefix is not None else ctx.readable()
        rows = [
            row
            for row in self._documents(ctx, sources)
            if prefix is None or prefix_matches(prefix.rest, row.document.rest)
        ]
        contents = ctx.store.read_contents([row.document.content_key for row in rows])
        # A document whose content object is missing is skipped and named, not a failed search.
        unreadable = tuple(row.path for row in rows if row.document.content_key not in contents)
        matches: list[GrepMatch] = []
        deadline = time.monotonic() + GREP_BUDGET_SECONDS
        plain = plain_search(pattern, ignore_case)
        for row in rows:
            text = contents.get(row.document.content_key)
            if text is None:
                continue
            for number, line in enumerate(text.split("\n"), start=1):
                hit = plain(line) if plain is not None else None
                if hit is None:
                    remaining = deadline - time.monotonic()
                    try:
                        if remaining <= 0:
                            raise TimeoutError
                        hit = compiled.search(line, timeout=remaining) is not None
                    except TimeoutError as exc:
                        raise ApiError(
                            "parameter_invalid",
                            "memory.pattern took too long to match; simplify it (avoid nested repetition).",
                        ) from exc
                if not hit:
                    continue
                if len(matches) == limit:
                    return GrepResult(matches, truncated=True, unreadable=unreadable)
                matches.append(GrepMatch(row.path, number, line[:GREP_LINE_CAP]))
        return GrepResult(matches, truncated=False, unreadable=unreadable)

    # ---- writes ---------------------------------------------------------------------------------

    def _bump(self, ctx: Context, expected_context_revision: int | None) -> ConversationBump | None:
        rules = DOORS[ctx.door]
        if not rules.bumps_revision or ctx.conversation is None:
            return None
        return ConversationBump(
            ctx.conversation.public_id, expected_context_revision, refuse_archived=rules.refuses_archived
        )

    def _new_version(
        self,
        ctx: Context,
        src: Source,
        mp: MemoryPath,
        data: bytes,
        public_id: str,
        lock_version: int,
        description: str | None,
    ) -> Document:
        content_key = f"content/{public_id}/{uuid7()}"
        # The immutable version is stored before the pointer commits; a refused commit leaves at most an
        # unreferenced object for the sweeper, never a visible change.
        ctx.store.put_content(content_key, data.decode("utf-8"))
        return Document(
            anchor=src.anchored,
            rest=mp.rest,
            public_id=public_id,
            lock_version=lock_version,
            bytesize=len(data),
            sha256=sha256_hex(data),
            description=description,
            written_at=now_iso(),
            content_key=content_key,
            author=f"{ctx.principal.kind}:{ctx.principal.public_id}",
        )

    def write(
        self,
        ctx: Context,
        mp: MemoryPath,
        content: str,
        expected: tuple[str, int] | None,
        *,
        description: str | None = None,
        description_given: bool = False,
        expected_context_revision: int | None = None,
    ) -> Located:
        refuse_override(ctx, mp)
        src = may_change(ctx, mp)
        # Refused before the content version is stored, so a stale caller leaves no object behind; the
        # commit repeats the condition, which is what holds against a concurrent writer.
        check_context_revision(ctx, expected_context_revision)
        data = _check_content(content)
        desc = _check_description(mp, description, given=description_given)
        if expected is None:
            doc = self._new_version(ctx, src, mp, data, uuid7(), 0, desc)
        else:
            doc = self._new_version(ctx, src, mp, data, expected[0], expected[1] + 1, desc)
        ctx.store.commit(self._change(ctx, src, mp, expected, doc, expected_context_revision))
        return Located(mp.logical, doc, content)

    def edit(
        self,
        ctx: Context,
        mp: MemoryPath,
        old_text: str,
        new_text: str,
        expected: tuple[str, int] | None,
        *,
        expected_context_revision: int | None = None,
    ) -> Located:
        refuse_override(ctx, mp)
        src = may_change(ctx, mp)
        check_context_revision(ctx, expected_context_revision)
        pair = _require_pair(expected, "edit")
        if old_text == "":
            raise ApiError("parameter_invalid", "memory.old_text must be a nonempty string.")
        current = ctx.document(src, mp.rest)
        # A stale view refuses before any matching: the caller's passage may not be in the new text.
        if current is None or (current.public_id, current.lock_version) != pair:
            raise stale()
        text = _content(ctx, mp.logical, current)
        first = text.find(old_text)
        if first < 0:
            raise ApiError("memory_edit_not_found", f"old_text does not occur in {mp.logical!r}; nothing changed.")
        if text.find(old_text, first + 1) >= 0:
            raise ApiError(
                "memory_edit_ambiguous",
                f"old_text occurs more than once in {mp.logical!r}; include more surrounding text so it "
                "matches exactly once.",
            )
        edited = text[:first] + new_text + text[first + len(old_text) :]
        data = _check_content(edited)
        doc = self._new_version(ctx, src, mp, data, pair[0], pair[1] + 1, current.description)
        ctx.store.commit(self._change(ctx, src, mp, pair, doc, expected_context_revision))
        return Located(mp.logical, doc, edited)

    def delete(
        self,
        ctx: Context,
        mp: MemoryPath,
        expected: tuple[str, int] | None,
        *,
        expected_context_revision: int | None = None,
    ) -> None:
        refuse_override(ctx, mp)
        src = may_change(ctx, mp)
        check_context_revision(ctx, expected_context_revision)
        pair = _require_pair(expected, "delete")
        ctx.store.commit(self._change(ctx, src, mp, pair, None, expected_context_revision))


def _content(ctx: Context, path: str, doc: Document) -> str:
    """A document's text; a missing content object is named with its path (this document only is broken)."""
    try:
        return ctx.store.read_content(doc.content_key)
    except ApiError as exc:
        if exc.code != "memory_content_missing":
            raise
        raise ApiError(
            "memory_content_missing",
            f"The content of {path!r} is missing from storage, so it cannot be read or edited. Write it "
            "again with its expected_public_id and expected_lock_version to replace it, or delete it.",
            path=path,
        ) from exc


def _require_pair(expected: tuple[str, int] | None, verb: str) -> tuple[str, int]:
    if expected is None:
        raise ApiError(
            "parameter_invalid",
            f"To {verb} a document send the expected_public_id and expected_lock_version you read; "
            "null/null only creates an absent path.",
        )
    return expected
