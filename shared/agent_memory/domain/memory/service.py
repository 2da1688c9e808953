"""The memory verbs: list, show, write, edit, grep, delete. Door-agnostic: they act on a resolved Context,
ask core/access.py whether a change may land, and answer domain values (views.py renders them)."""

from __future__ import annotations

import time
from typing import Any

from agent_memory.api.errors import ApiError, destination_taken, stale
from agent_memory.core import clock
from agent_memory.core.access import DOORS, check_context_revision, may_change, refuse_override
from agent_memory.core.budget import Budgets
from agent_memory.core.context import Context, Source
from agent_memory.core.idempotency import settle
from agent_memory.core.ids import now_iso, sha256_hex, uuid7
from agent_memory.core.model import (
    DEFAULT_VERSIONS_KEPT,
    MAX_DESCRIPTION_BYTES,
    MAX_DOCUMENT_BYTES,
    Anchor,
    ConversationBump,
    Document,
    DocumentChange,
    GrepMatch,
    GrepResult,
    GrepTruncation,
    Located,
    Operation,
    Quarantine,
    Version,
    VersionCheck,
    max_document_bytes,
)
from agent_memory.core.paths import MemoryPath, prefix_matches

GREP_LINE_CAP = 500
# The whole grep (listing, fetching and matching) gets this long, literal patterns included; past it the
# answer is what was found so far, marked truncated. A pattern that compiled within its bounds always gets
# an answer, and the Lambda's 10 s timeout is never what stops a grep.
GREP_DEADLINE_SECONDS = 2.0
# The content one grep may read, counted from the rows' bytesize before anything is fetched: 128 full
# documents. Documents are searched in path order and the walk stops at the first that does not fit.
GREP_BYTE_BUDGET = 8 * 1024 * 1024


def _within_budget(rows: list[Located]) -> list[Located]:
    """The rows grep reads: path order, up to the first whose content would pass the byte budget."""
    spent = 0
    for index, row in enumerate(rows):
        spent += row.document.bytesize
        if spent > GREP_BYTE_BUDGET:
            return rows[:index]
    return rows


def _shown(src: Source, doc: Document) -> str:
    """A document's path as answers name it: an organization Memory's files by their relative path."""
    plain = src.anchor is not None and src.anchor.scope == "memory"
    return doc.rest if plain else f"{src.name}/{doc.rest}"


def check_content(content: object, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    if not isinstance(content, str):
        raise ApiError("memory_content_invalid", "memory.content must be a string of markdown.")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate escape such as "\ud800" in the JSON
        raise ApiError("memory_content_invalid", "memory.content is not valid Unicode text.") from exc
    if len(data) > limit:
        raise ApiError(
            "memory_document_too_large",
            f"The document is {len(data)} bytes; a document here holds at most {limit} bytes ({limit // 1024} KiB).",
        )
    return data


def check_description(mp: MemoryPath, description: object, *, given: bool) -> str | None:
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

    def __init__(self, budgets: Budgets | None = None, versions_kept: int = DEFAULT_VERSIONS_KEPT) -> None:
        self.budgets = budgets or Budgets()
        # A document's history holds at most this many versions, its current one included.
        self.versions_kept = versions_kept

    def change(
        self,
        ctx: Context,
        src: Source,
        mp: MemoryPath,
        expected: tuple[str, int] | None,
        new: Document | None,
        expected_context_revision: int | None,
        operation: Operation = "write",
        *,
        requires: VersionCheck | None = None,
        recorded: Version | None = None,
        also: tuple[Version, ...] = (),
        spent: bool = False,
        **record: Any,
    ) -> DocumentChange:
        """The commit of one change: the pointer row, the new version's record (`recorded`, or one made
        from `new`), and the record that falls out of the retention bound with it. `spent`: the request's
        meters went out with its upload (`new_version(spend=True)`), so the commit spends nothing more."""
        budget = None if spent else self.budgets.of(ctx.principal)
        version = recorded if recorded is not None or new is None else Version.of(new, operation, clock.now(), **record)
        pruned = None if new is None else new.lock_version - self.versions_kept
        size, writer, at = 0, None, None
        if src.anchored.scope == "memory":
            # A Memory counts its bytes; the row the pair names is the one the commit replaces, so its size
            # is the one leaving (a stale pair is refused by the commit whatever this counts).
            previous = ctx.document(src, mp.rest) if expected is not None else None
            left = previous.bytesize if previous is not None else 0
            size, writer = (new.bytesize if new is not None else 0) - left, ctx.author()
            at = new.written_at if new is not None else now_iso()
        return DocumentChange(
            src.anchored,
            mp.rest,
            expected,
            new,
            self._bump(ctx, expected_context_revision),
            budget,
            self._alias_bump(ctx, src),
            version=version,
            prune=pruned if pruned is not None and pruned >= 0 and recorded is None else None,
            requires=requires,
            also=also,
            size_delta=size,
            writer=writer,
            written_at=at,
            running=ctx.stops,
        )

    # ---- reads ----------------------------------------------------------------------------------

    def listing(self, ctx: Context) -> list[Located]:
        refuse_override(ctx, None)
        return self._documents(ctx, ctx.readable())

    def _documents(self, ctx: Context, sources: list[Source]) -> list[Located]:
        listed = ctx.store.list_many([s.anchor for s in sources if s.anchor is not None])
        rows = [Located(_shown(s, d), d) for s in sources if s.anchor is not None for d in listed[s.anchor]]
        rows.sort(key=lambda r: r.path)
        return rows

    def show(self, ctx: Context, mp: MemoryPath) -> Located:
        refuse_override(ctx, mp)
        src = ctx.source(mp)
        doc = ctx.document(src, mp.rest)
        if doc is None:
            raise ApiError("memory_not_found", f"There is no document at {mp.logical!r}.")
        return Located(mp.logical, doc, content_of(ctx, mp.logical, doc))

    def grep(self, ctx: Context, pattern: str, prefix: MemoryPath | None, ignore_case: bool, limit: int) -> GrepResult:
        from agent_memory.domain.memory.matching import LineMatcher  # regex: loaded by grep alone
        from agent_memory.domain.memory.patterns import check_length

        deadline = time.monotonic() + GREP_DEADLINE_SECONDS
        refuse_override(ctx, prefix if prefix is not None and prefix.skill_name is not None else None)
        check_length(pattern)
        matcher = LineMatcher(pattern, ignore_case)  # refuses a pattern out of bounds before anything is read
        sources = [ctx.source(prefix)] if prefix is not None else ctx.readable()
        rows = [
            row
            for row in self._documents(ctx, sources)
            if prefix is None or prefix_matches(prefix.rest, row.document.rest)
        ]
        searched = _within_budget(rows)
        # Fetched in parallel, each once; matching starts on the first document while the rest arrive.
        pending = ctx.store.fetch_contents([row.document.held(row.path) for row in searched])
        matches: list[GrepMatch] = []
        unreadable: list[str] = []
        corrupt: list[str] = []

        def ended(reason: GrepTruncation | None) -> GrepResult:
            return GrepResult(matches, reason, tuple(unreadable), tuple(corrupt))

        try:
            for row in searched:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ended("deadline")
                try:
                    # Not popped: a fork's rows share their parent's content keys, so two rows may name one.
                    text = pending[row.document.content_key].result(timeout=remaining)
                except TimeoutError:
                    return ended("deadline")
                except ApiError as exc:
                    if exc.code != "memory_content_corrupt":
                        raise
                    # Bytes that fail their recorded hash are never searched: skipped and named, as missing.
                    corrupt.append(row.path)
                    continue
                if text is None:
                    # A document whose content object is missing is skipped and named, not a failed search.
                    unreadable.append(row.path)
                    continue
                try:
                    for number, line in matcher.lines(text, deadline):
                        if len(matches) == limit:
                            return ended("limit")
                        matches.append(GrepMatch(row.path, number, line[:GREP_LINE_CAP]))
                except TimeoutError:
                    return ended("deadline")
        finally:
            for future in pending.values():
                future.cancel()  # what the walk never reached need not be fetched
        return ended("byte_budget" if len(searched) < len(rows) else None)

    # ---- writes ---------------------------------------------------------------------------------

    def _bump(self, ctx: Context, expected_context_revision: int | None) -> ConversationBump | None:
        rules = DOORS[ctx.door]
        if not rules.bumps_revision or ctx.conversation is None:
            return None
        return ConversationBump(
            ctx.conversation.public_id,
            expected_context_revision,
            refuse_archived=rules.refuses_archived,
            by_execution=ctx.execution_public_id is not None,
        )

    def _alias_bump(self, ctx: Context, src: Source) -> ConversationBump | None:
        rules = DOORS[ctx.door]
        alias = src.binding.conversation_public_id
        if not rules.bumps_revision or alias is None or ctx.conversation is None:
            return None
        if alias == ctx.conversation.public_id:
            return None  # an alias of the host itself: the host's own bump covers it
        return ConversationBump(alias, None, refuse_archived=rules.refuses_archived)

    def new_version(
        self,
        ctx: Context,
        src: Source,
        mp: MemoryPath,
        data: bytes,
        public_id: str,
        lock_version: int,
        description: str | None,
        *,
        spend: bool = False,
    ) -> Document:
        """The new version, its content stored. `spend`: the caller's meters are spent alongside the upload
        (one step where they took two), refusing `rate_limited` here, before any commit; its change is then
        built with `spent=True`."""
        anchor = src.anchored
        content_key = f"{content_prefix(anchor)}{public_id}/{uuid7()}"
        text = data.decode("utf-8")
        # The immutable version is stored before the pointer commits; a refused commit, or a meter that
        # refused while it uploaded, leaves at most an unreferenced object for the sweeper, never a visible
        # change.
        with ctx.store.spending(self.budgets.of(ctx.principal) if spend else None):
            ctx.store.put_content(content_key, text)
        # A skill's description is read by models too (the skills catalog), so it is scanned with the text.
        pii, quarantine = scan(text if description is None else f"{description}\n{text}")
        return Document(
            anchor=anchor,
            rest=mp.rest,
            public_id=public_id,
            lock_version=lock_version,
            bytesize=len(data),
            sha256=sha256_hex(data),
            description=description,
            written_at=now_iso(),
            content_key=content_key,
            author=ctx.author(),
            pii=pii,
            quarantine=quarantine,
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
        overwrite: bool = False,
    ) -> Located:
        """Create or replace a document. `overwrite` records that the writer replaces a newer version than
        the one it started from on purpose (it still sends the current pair)."""
        refuse_override(ctx, mp)
        src = may_change(ctx, mp)
        # Refused before the content version is stored, so a stale caller leaves no object behind; the
        # commit repeats the condition, which is what holds against a concurrent writer.
        check_context_revision(ctx, expected_context_revision)
        data = check_content(content, max_document_bytes(src.anchored))
        desc = check_description(mp, description, given=description_given)
        _refuse_known_stale(ctx, src, mp, expected)
        pid, number = (uuid7(), 0) if expected is None else (expected[0], expected[1] + 1)
        doc = self.new_version(ctx, src, mp, data, pid, number, desc, spend=True)
        written = Located(mp.logical, doc, content)
        settle(written)
        ctx.store.commit(
            self.change(
                ctx, src, mp, expected, doc, expected_context_revision, spent=True, overwrote_concurrent_edit=overwrite
            )
        )
        return written

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
        src, pair = changing(ctx, mp, expected, expected_context_revision, "edit")
        if old_text == "":
            raise ApiError("parameter_invalid", "memory.old_text must be a nonempty string.")
        current = ctx.document(src, mp.rest)
        # A stale view refuses before any matching: the caller's passage may not be in the new text.
        if current is None or (current.public_id, current.lock_version) != pair:
            raise stale()
        text = content_of(ctx, mp.logical, current)
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
        data = check_content(edited, max_document_bytes(src.anchored))
        doc = self.new_version(ctx, src, mp, data, pair[0], pair[1] + 1, current.description, spend=True)
        result = Located(mp.logical, doc, edited)
        settle(result)
        ctx.store.commit(self.change(ctx, src, mp, pair, doc, expected_context_revision, "edit", spent=True))
        return result

    def delete(
        self,
        ctx: Context,
        mp: MemoryPath,
        expected: tuple[str, int] | None,
        *,
        expected_context_revision: int | None = None,
    ) -> None:
        src, pair = changing(ctx, mp, expected, expected_context_revision, "delete")
        settle(None)
        ctx.store.commit(self.change(ctx, src, mp, pair, None, expected_context_revision))

    def rename(
        self,
        ctx: Context,
        mp: MemoryPath,
        to_ctx: Context,
        to: MemoryPath,
        expected: tuple[str, int] | None,
        *,
        shown: str | None = None,
    ) -> Located:
        """Move a document to a new path in one transaction: the new path is created (it must be absent)
        pointing at the current version's content object, and the old one deleted on its pair. No bytes
        move, whichever roots the two paths lie in; each side's counter, cap, revision and lease are the
        ones its own write or delete would carry. `shown` names the old path in the new version's record
        (the session's spelling; the verbs' by default)."""
        refuse_override(ctx, mp)
        refuse_override(to_ctx, to)
        src = may_change(ctx, mp)
        dst = may_change(to_ctx, to)
        pair = require_pair(expected, "rename")
        if (src.anchored, mp.rest) == (dst.anchored, to.rest):
            raise ApiError("parameter_invalid", "file.new_path names the document's own path: nothing to rename.")
        current = ctx.document(src, mp.rest)
        if current is None or (current.public_id, current.lock_version) != pair:
            raise stale()
        if to_ctx.document(dst, to.rest) is not None:
            raise destination_taken(to.logical)
        limit = max_document_bytes(dst.anchored)
        if current.bytesize > limit:
            raise ApiError(
                "memory_document_too_large",
                f"The document is {current.bytesize} bytes; a document at {to.logical!r} holds at most {limit} bytes.",
            )
        desc = check_description(to, current.description, given=current.description is not None)
        moved = Document(
            anchor=dst.anchored,
            rest=to.rest,
            public_id=uuid7(),
            lock_version=0,
            bytesize=current.bytesize,
            sha256=current.sha256,
            description=desc,
            written_at=now_iso(),
            # The version's immutable object, named by the anchor that wrote it: a redaction under the new
            # path leaves an object another anchor named to the sweeper, as it does a fork's.
            content_key=current.content_key,
            author=to_ctx.author(),
            pii=current.pii,
            quarantine=current.quarantine,
        )
        result = Located(to.logical, moved)
        settle(result)
        removal = self.change(ctx, src, mp, pair, None, None)
        creation = self.change(to_ctx, dst, to, None, moved, None, "rename", renamed_from=shown or mp.logical)
        ctx.store.commit_rename(removal, creation)
        return result


def scan(text: str) -> tuple[tuple[str, ...], Quarantine | None]:
    """What every stored version is checked for: PII kinds, and whether it resembles prompt injection.

    Nothing is refused: the text is stored as written, tagged; a flagged version waits for review."""
    from agent_memory.domain.safety import injection, pii

    found = tuple(pii.kinds(text))
    rules = injection.flags(text)
    return found, Quarantine("pending", tuple(rules), injection.RULESET_VERSION) if rules else None


def content_prefix(anchor: Anchor) -> str:
    """Where an anchor's new content objects live: a key names the anchor that first wrote it, so a
    redaction can tell bytes this document made from bytes a fork inherited."""
    return f"content/{anchor.key.replace('#', '/')}/"


def _refuse_known_stale(ctx: Context, src: Source, mp: MemoryPath, expected: tuple[str, int] | None) -> None:
    """Refuse, before any content version is stored, a write the commit would refuse as the request's own
    batch read already shows: a create of a path that exists, a replace whose pair no longer matches.

    Only a row the request has already loaded is looked at (the resolver reads the document with the
    caller's rows): an extra read here would cost every write a request to spare a refused one an object.
    The commit keeps its conditions, which is what holds against a writer racing in after that read.
    """
    loaded, current = ctx.loaded_document(src, mp.rest)
    if not loaded:
        return
    now = None if current is None else (current.public_id, current.lock_version)
    if now != expected:
        raise stale()


def content_of(ctx: Context, path: str, doc: Document) -> str:
    """A document's text, checked against its recorded hash by the store (memory_content_corrupt names the
    path and version); a missing content object is named with its path (this document only is broken)."""
    path = ctx.shown(path)
    try:
        return ctx.store.read_content(doc.held(path))
    except ApiError as exc:
        if exc.code != "memory_content_missing":
            raise
        raise ApiError(
            "memory_content_missing",
            f"The content of {path!r} is missing from storage, so it cannot be read or edited. Write it "
            "again with its expected_public_id and expected_lock_version to replace it, or delete it.",
            path=path,
        ) from exc


def changing(
    ctx: Context, mp: MemoryPath, expected: tuple[str, int] | None, revision: int | None, verb: str
) -> tuple[Source, tuple[str, int]]:
    """What every change of an existing document checks first: the door may change it, the context revision is
    the caller's, and the caller names the version it read. Returns the source and that (id, version) pair."""
    refuse_override(ctx, mp)
    src = may_change(ctx, mp)
    check_context_revision(ctx, revision)
    return src, require_pair(expected, verb)


def require_pair(expected: tuple[str, int] | None, verb: str) -> tuple[str, int]:
    if expected is None:
        raise ApiError(
            "parameter_invalid",
            f"To {verb} a document send the expected_public_id and expected_lock_version you read; "
            "null/null only creates an absent path.",
        )
    return expected
