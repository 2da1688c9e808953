"""Document history: the versions of a document, one version's text, rollback, redaction and promote.

Every accepted change of a document records its version in the commit that makes it (memory.py builds
the record, the store writes it with the pointer row), so this module only reads those records and makes
the changes that start from one. A version is named by the document's public_id and its lock_version;
only the current incarnation's most recent `versions_kept` versions are its history (see
docs/architecture.md, "Versions").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import replace

from agent_memory.api.errors import ApiError, stale, version_not_found, version_redacted
from agent_memory.core import idempotency
from agent_memory.core.access import may_change, may_redact, may_review, refuse_override
from agent_memory.core.context import Context, Source
from agent_memory.core.ids import now_iso, uuid7
from agent_memory.core.model import (
    Document,
    Located,
    PromotedFrom,
    Quarantine,
    ShownVersion,
    Version,
    VersionCheck,
    VersionPage,
)
from agent_memory.core.paths import MemoryPath
from agent_memory.core.ports import Ref
from agent_memory.domain.memory.service import (
    MemoryService,
    changing,
    check_content,
    check_description,
    content_of,
    content_prefix,
    require_pair,
)

# A redaction deletes bytes at once only when no fork of the conversation since they were written can
# hold them; this much slack covers the clocks of two functions disagreeing.
CLOCK_SLACK_SECONDS = 5


class HistoryService:
    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory

    @property
    def kept(self) -> int:
        return self.memory.versions_kept

    # ---- reading ----------------------------------------------------------------------------------

    def _current(self, ctx: Context, src: Source, mp: MemoryPath, *numbers: int) -> Document:
        """The document at `mp` (loaded together with the version records `numbers`), or memory_not_found."""
        anchor = src.anchored
        ctx.fetch([Ref.document(anchor, mp.rest), *(Ref.version(anchor, mp.rest, n) for n in numbers)])
        doc = ctx.document(src, mp.rest)
        if doc is None:
            raise ApiError("memory_not_found", f"There is no document at {mp.logical!r}.")
        return doc

    def _record(self, ctx: Context, src: Source, doc: Document, lock_version: int) -> Version:
        """One version of the document's current history, or memory_version_not_found."""
        if not doc.lock_version - self.kept < lock_version <= doc.lock_version:
            raise version_not_found(lock_version)
        ref = Ref.version(src.anchored, doc.rest, lock_version)
        ctx.fetch([ref])
        found: Version | None = ctx.loaded.get(ref)
        # A record of another public_id at this number belongs to an earlier document at the same path.
        if found is None or found.public_id != doc.public_id:
            raise version_not_found(lock_version)
        return found

    def _version(self, ctx: Context, mp: MemoryPath, lock_version: int) -> Version:
        """One version of the current history of the document at `mp`, redacted or not."""
        refuse_override(ctx, mp)
        src = ctx.source(mp)
        return self._record(ctx, src, self._current(ctx, src, mp, lock_version), lock_version)

    def version_of(self, ctx: Context, mp: MemoryPath, lock_version: int) -> Version:
        """One version of the document at `mp` that still holds its text (a promote's source)."""
        record = self._version(ctx, mp, lock_version)
        if record.content_key is None:
            raise version_redacted(lock_version)
        return record

    def versions(self, ctx: Context, mp: MemoryPath, limit: int, cursor: str | None) -> VersionPage:
        """The document's versions, newest first, `limit` at a time: one Query after the request's batch."""
        refuse_override(ctx, mp)
        src = ctx.source(mp)
        doc = self._current(ctx, src, mp)
        low = max(0, doc.lock_version - self.kept + 1)
        high = doc.lock_version if cursor is None else _read_cursor(cursor, doc.public_id)
        if high < low:
            return VersionPage(mp.logical, [], None)
        # One more than asked for tells whether another page follows without a second Query.
        rows = ctx.store.list_versions(src.anchored, mp.rest, low, min(high, doc.lock_version), limit + 1)
        mine: list[Version] = []
        for row in rows:
            if row.public_id != doc.public_id:
                break  # an earlier document at this path: its records are not this one's history
            mine.append(row)
        following = mine[limit] if len(mine) > limit else None
        return VersionPage(
            mp.logical,
            mine[:limit],
            None if following is None else _cursor(doc.public_id, following.lock_version),
        )

    def show(self, ctx: Context, mp: MemoryPath, lock_version: int) -> ShownVersion:
        """One version with its text (None once redacted): the request's batch read plus one S3 GET."""
        record = self._version(ctx, mp, lock_version)
        if record.content_key is None:
            return ShownVersion(mp.logical, record, None)
        return ShownVersion(mp.logical, record, version_text(ctx, mp.logical, record))

    # ---- changes ----------------------------------------------------------------------------------

    def rollback(
        self,
        ctx: Context,
        mp: MemoryPath,
        lock_version: int,
        expected: tuple[str, int] | None,
        *,
        expected_context_revision: int | None = None,
    ) -> Located:
        """A new version whose content is the chosen one's: the same immutable object, no bytes moved."""
        src, pair = changing(ctx, mp, expected, expected_context_revision, "roll back")
        doc = self._current(ctx, src, mp, lock_version)
        if (doc.public_id, doc.lock_version) != pair:
            raise stale()
        record = self._record(ctx, src, doc, lock_version)
        if record.content_key is None:
            raise version_redacted(lock_version)
        # The answer shows the restored text: fetched while the change is built.
        pending = ctx.store.fetch_contents([_as_document(record).held(mp.logical)])[record.content_key]
        restored = Document(
            doc.anchor,
            doc.rest,
            doc.public_id,
            doc.lock_version + 1,
            record.bytesize,
            record.sha256,
            record.description if mp.skill_name is not None else None,
            now_iso(),
            record.content_key,
            ctx.author(),
            # The restored text carries the findings of its scans; a flagged text not yet released waits
            # for review again as the new version.
            record.pii,
            _requeued(record.quarantine),
        )
        change = self.memory.change(
            ctx,
            src,
            mp,
            pair,
            restored,
            expected_context_revision,
            "rollback",
            # The source must still hold its bytes when the commit lands: a redaction racing this rollback
            # either lands first (and the rollback is refused) or finds the new version holding them.
            requires=VersionCheck(doc.anchor, doc.rest, doc.public_id, lock_version),
            rolled_back_from=lock_version,
        )
        # Awaited before the commit: bytes that fail their recorded hash (memory_content_corrupt, raised
        # here) are never made the current version. A missing object (None) is left to the commit, whose
        # check on the source record refuses a rollback that a redaction beat.
        text = pending.result()
        if idempotency.active():
            # A keyed request records its answer in the commit, so the restored text is needed first.
            answer = self._restored(ctx, mp, restored, text)
            idempotency.settle(answer)
            ctx.store.commit(change)
            return answer
        ctx.store.commit(change)
        return self._restored(ctx, mp, restored, text)

    def _restored(self, ctx: Context, mp: MemoryPath, restored: Document, text: str | None) -> Located:
        return Located(mp.logical, restored, text if text is not None else content_of(ctx, mp.logical, restored))

    def redact(self, ctx: Context, mp: MemoryPath, lock_version: int, expected: tuple[str, int] | None) -> ShownVersion:
        """Scrub one earlier version's text; its record (author, time, hash) stays.

        The bytes are deleted at once when nothing else can hold them, else the record lets go of them and
        the sweeper deletes them once the last holder has (a rollback or a fork sharing the object).
        """
        refuse_override(ctx, mp)
        src = may_redact(ctx, mp)
        pair = require_pair(expected, "redact a version of")
        doc = self._current(ctx, src, mp, lock_version)
        if (doc.public_id, doc.lock_version) != pair:
            raise stale()
        if lock_version == doc.lock_version:
            raise ApiError(
                "memory_version_current",
                f"Version {lock_version} is the document's current version: write the document or roll it back "
                "first, then redact the old version.",
            )
        record = self._record(ctx, src, doc, lock_version)
        if record.content_key is None:
            return ShownVersion(mp.logical, record, None)  # redacted already: nothing left to remove
        key = record.content_key
        by, at = ctx.author(), now_iso()
        scrubbed = replace(record, content_key=None, redacted_at=at, redacted_by=by)
        idempotency.settle(ShownVersion(mp.logical, scrubbed, None))
        ctx.store.redact_version(record, pair, by, at, self.memory.budgets.of(ctx.principal))
        if self._sole_holder(ctx, src, doc, key, lock_version):
            ctx.store.delete_content(key)
        return ShownVersion(mp.logical, scrubbed, None)

    def _sole_holder(self, ctx: Context, src: Source, doc: Document, key: str, number: int) -> bool:
        """Whether no row but the redacted record can point at the object `key` (read after the redaction
        committed, so a rollback that copied the key before it is seen, and one after it was refused)."""
        anchor = src.anchored
        if doc.content_key == key or not key.startswith(content_prefix(anchor)):
            return False  # the current version holds it, or it was inherited from a fork's parent
        if anchor.scope == "conversation":
            ref = Ref.conversation(anchor.owner_id)
            ctx.fetch([ref])
            conv = ctx.loaded.get(ref)
            forked_at = getattr(conv, "forked_at", None)
            if conv is None or (forked_at is not None and forked_at + CLOCK_SLACK_SECONDS >= _written_at(key)):
                # A fork since the bytes were written may point at them. A fork marks the parent before it
                # reads the rows it copies, so one in flight that has not marked it yet reads rows where this
                # version is superseded already (the caller's pair was read after its successor landed).
                return False
        low = max(0, doc.lock_version - self.kept + 1)
        others = ctx.store.list_versions(anchor, doc.rest, low, doc.lock_version, self.kept)
        # Read after the redaction landed: a promote that handed this version's object to a new Memory
        # before it has marked the record, and one after it was refused (the object was gone from it).
        return not any(v.content_key == key or (v.handed_off and v.lock_version == number) for v in others)

    def review(
        self,
        ctx: Context,
        mp: MemoryPath,
        lock_version: int,
        decision: str,
        expected: tuple[str, int] | None,
    ) -> Located | None:
        """Release or reject the current version when it is quarantined.

        Release makes it ordinary (the verdict is kept on the version). Reject restores the version before
        it as a new version, or deletes the document when there is none to restore; answers None then."""
        refuse_override(ctx, mp)
        src = may_change(ctx, mp)
        pair = require_pair(expected, "review")
        doc = self._current(ctx, src, mp, lock_version, lock_version - 1)
        if (doc.public_id, doc.lock_version) != pair or lock_version != doc.lock_version:
            raise stale(
                "Only the document's current version is reviewed, with the pair you read: read it again, then "
                "review the version it holds now."
            )
        q = doc.quarantine
        if q is None or q.status != "pending":
            raise ApiError("validation_failed", f"Version {lock_version} of {mp.logical!r} is not waiting for review.")
        record = self._record(ctx, src, doc, lock_version)
        may_review(ctx, src, record.author)
        verdict = Quarantine(
            "released" if decision == "release" else "rejected", q.rules, q.ruleset, ctx.author(), now_iso()
        )
        if decision == "release":
            released = replace(doc, quarantine=verdict)
            answer = Located(mp.logical, released, content_of(ctx, mp.logical, doc))
            idempotency.settle(answer)
            ctx.store.commit(
                self.memory.change(ctx, src, mp, pair, released, None, recorded=replace(record, quarantine=verdict))
            )
            return answer
        rejected = replace(record, quarantine=verdict)
        previous = self._restorable(ctx, src, doc, lock_version - 1)
        if previous is None:
            # Nothing before it to restore: the flagged document goes, history and all.
            idempotency.settle(None)
            ctx.store.commit(self.memory.change(ctx, src, mp, pair, None, None))
            return None
        restored = Document(
            doc.anchor,
            doc.rest,
            doc.public_id,
            doc.lock_version + 1,
            previous.bytesize,
            previous.sha256,
            previous.description if mp.skill_name is not None else None,
            now_iso(),
            previous.content_key or "",
            ctx.author(),
            previous.pii,
            _requeued(previous.quarantine),
        )
        answer = Located(mp.logical, restored, content_of(ctx, mp.logical, restored))
        idempotency.settle(answer)
        ctx.store.commit(
            self.memory.change(
                ctx,
                src,
                mp,
                pair,
                restored,
                None,
                "rollback",
                requires=VersionCheck(doc.anchor, doc.rest, doc.public_id, previous.lock_version),
                also=(rejected,),
                rolled_back_from=previous.lock_version,
            )
        )
        return answer

    def _restorable(self, ctx: Context, src: Source, doc: Document, lock_version: int) -> Version | None:
        """The version a rejection falls back to: the one before, if the history still holds its text."""
        if lock_version < 0:
            return None
        try:
            found = self._record(ctx, src, doc, lock_version)
        except ApiError:
            return None
        return None if found.content_key is None else found

    def promote(
        self,
        source_ctx: Context,
        source: MemoryPath,
        lock_version: int,
        target_ctx: Context,
        target: MemoryPath,
        expected: tuple[str, int] | None,
        *,
        description: str | None = None,
    ) -> Located:
        """Copy one version of a document the caller reads into a workspace/ document.

        The source is untouched. A skill target is never clobbered: the text is appended to the skill as a
        section naming where it came from, so earlier promotes and hand-written text survive.
        """
        if target.root != "workspace":
            raise ApiError(
                "memory_path_invalid",
                f"A promote writes into workspace/ (the room's shared memory), not {target.root}/.",
            )
        refuse_override(source_ctx, source)
        src = source_ctx.source(source)
        doc = self._current(source_ctx, src, source, lock_version)
        record = self._record(source_ctx, src, doc, lock_version)
        if record.content_key is None:
            raise version_redacted(lock_version)
        if record.pii:
            # Personal data is never made a default others read: redact or rewrite it first.
            raise ApiError(
                "memory_pii_blocked",
                f"Version {lock_version} of {source.logical!r} contains personal data ({', '.join(record.pii)}), "
                "so it cannot be promoted into the workspace's shared memory: rewrite or redact it first.",
            )
        text = version_text(source_ctx, source.logical, record)
        refuse_override(target_ctx, target)
        dst = may_change(target_ctx, target)
        current = target_ctx.document(dst, target.rest)
        now = None if current is None else (current.public_id, current.lock_version)
        if now != expected:
            raise stale()
        origin = PromotedFrom(src.anchor_public_id or "", source.logical, doc.public_id, lock_version)
        author = target_ctx.author()
        if target.skill_name is not None and current is not None:
            merged = _appended(content_of(target_ctx, target.logical, current), text, origin, record, author.name)
            body, desc = check_content(merged), current.description
        else:
            if target.skill_name is not None:
                text = _appended("", text, origin, record, author.name)
            body = check_content(text)
            desc = check_description(target, description, given=description is not None)
        pid, number = (current.public_id, current.lock_version + 1) if current is not None else (uuid7(), 0)
        doc_new = self.memory.new_version(target_ctx, dst, target, body, pid, number, desc, spend=True)
        promoted = Located(target.logical, doc_new, body.decode("utf-8"))
        idempotency.settle(promoted)
        target_ctx.store.commit(
            self.memory.change(
                target_ctx, dst, target, expected, doc_new, None, "promote", spent=True, promoted_from=origin
            )
        )
        return promoted


def _requeued(q: Quarantine | None) -> Quarantine | None:
    if q is None or q.status == "released":
        return q
    return Quarantine("pending", q.rules, q.ruleset)


def _appended(current: str, text: str, origin: PromotedFrom, record: Version, by: str | None) -> str:
    """`current` with `text` added as a section that says where it came from."""
    head = current if current == "" or current.endswith("\n") else current + "\n"
    gap = "" if head == "" else "\n"
    written = record.author.name or record.author.public_id
    provenance = (
        f"## Promoted from {origin.path} (version {origin.lock_version})\n\n"
        f"> Promoted by {by or 'unknown'} on {now_iso()} from document {origin.public_id} of "
        f"{origin.anchor_public_id}, version {origin.lock_version} by {written} ({record.written_at}).\n\n"
    )
    return head + gap + provenance + text + ("" if text.endswith("\n") else "\n")


def version_text(ctx: Context, path: str, v: Version) -> str:
    """An unredacted version's text, checked against the hash it recorded (memory_content_corrupt)."""
    return content_of(ctx, path, _as_document(v))


def _as_document(v: Version) -> Document:
    """A version as the pointer it once was, to read its content the way documents are read."""
    return Document(
        v.anchor,
        v.rest,
        v.public_id,
        v.lock_version,
        v.bytesize,
        v.sha256,
        v.description,
        v.written_at,
        v.content_key or "",
        v.author,
    )


def _written_at(key: str) -> float:
    """When a content object was made, read off the UUIDv7 that ends its key (0 when it is not one)."""
    tail = key.rsplit("/", 1)[-1].replace("-", "")
    try:
        return int(tail[:12], 16) / 1000
    except ValueError:
        return 0.0


# ---- the listing's cursor ---------------------------------------------------------------------------
# Opaque to callers: the public_id it belongs to, the version the next page starts at, and a check that
# refuses a cursor edited by hand or taken from another document's listing.


def _check(public_id: str, lock_version: int) -> str:
    return hashlib.sha256(f"versions:{public_id}:{lock_version}".encode()).hexdigest()[:16]


def _cursor(public_id: str, lock_version: int) -> str:
    raw = f"{public_id}:{lock_version}:{_check(public_id, lock_version)}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _read_cursor(cursor: str, public_id: str) -> int:
    bad = ApiError(
        "parameter_invalid",
        "memory.cursor is not a cursor this document's version listing gave out: send next_cursor exactly "
        "as it came, or leave it out to start from the newest version.",
    )
    if len(cursor) > 200:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        pid, number, check = raw.split(":")
        lock_version = int(number)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise bad from None
    if pid != public_id or lock_version < 0 or check != _check(pid, lock_version):
        raise bad
    # Base64 decoding forgives padding, stray characters and bits past the data: only the very string
    # this listing gave out is its cursor.
    if cursor != _cursor(pid, lock_version):
        raise bad
    return lock_version
