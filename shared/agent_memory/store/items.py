"""Rows <-> DynamoDB attributes: the one marshalling path, the generic codec, and the hand-written codecs.

`marshal` / `unmarshal` spell a plain dict in DynamoDB's wire format and back (None values are left out,
so an absent attribute reads back as None or the row's default). `Fields` stores a row dataclass's fields
as attributes of the same names, with an `Attr` override only where the stored spelling differs. The
kinds whose items are no plain row (documents, versions, records, executions, Memories, ...) have their
attribute mappers here by hand. Which codec serves which kind, and under which key, is store/kinds.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import MISSING, fields
from decimal import Clamped, Context, Decimal, Inexact, Overflow, Rounded, Underflow
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from agent_memory.core import clock
from agent_memory.core.idempotency import Answer, Record
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import (
    DEFAULT_EXECUTION_TTL_SECONDS,
    Ancestor,
    Anchor,
    Attachment,
    Author,
    Document,
    EntryPage,
    Execution,
    ForkBase,
    FrozenBinding,
    GitOrigin,
    Lease,
    MemoryAccess,
    MemoryDefault,
    MemoryStats,
    MergedFrom,
    Mount,
    OrgMemory,
    PromotedFrom,
    Quarantine,
    StoreEntry,
    TypedRecord,
    Version,
    stored_mode,
)

if TYPE_CHECKING:
    from agent_memory.store.kinds import Shape

Item = dict[str, Any]
R = TypeVar("R")

# ---- the wire format -------------------------------------------------------------------------------
#
# DynamoDB's attribute values, written and read as boto3's TypeSerializer / TypeDeserializer do
# (tests/unit/test_unmarshal.py holds them to it), but without importing boto3: `boto3.dynamodb.types`
# runs boto3's package and s3transfer on a route's first request, tens of ms the store has no other use
# for (docs/decisions.md, "Issue 27").

# DynamoDB numbers: 38 significant digits, exponents from -128 to +126; anything rounded is refused.
_NUMBERS = Context(Emin=-128, Emax=126, prec=38, traps=[Clamped, Overflow, Inexact, Rounded, Underflow])
# Past 38 digits a whole number is refused, and so must be by the fast path below.
_INT_BOUND = 10**38


def _is_number(value: Any) -> bool:
    if isinstance(value, (int, Decimal)):
        return True
    if isinstance(value, float):
        # boto3 will not guess a float's precision, nor do we.
        raise TypeError("Float types are not supported. Use Decimal types instead.")
    return False


def _number(value: int | Decimal) -> str:
    spelled = str(_NUMBERS.create_decimal(value))
    if spelled in ("Infinity", "NaN"):
        raise TypeError("Infinity and NaN not supported")
    return spelled


def _set(value: AbstractSet[Any]) -> dict[str, Any]:
    # As boto3 decides: a set of numbers (an empty one too), else of strings, else of bytes.
    if False not in map(_is_number, value):
        return {"NS": [_number(v) for v in value]}
    if all(isinstance(v, str) for v in value):
        return {"SS": list(value)}
    if all(isinstance(v, (bytes, bytearray)) for v in value):
        return {"BS": list(value)}
    raise TypeError(f'Unsupported type "{type(value)}" for value "{value}"')


def attribute(value: Any) -> dict[str, Any]:
    """One value in DynamoDB's wire format, exactly as TypeSerializer spells it (None is NULL)."""
    kind = type(value)
    if kind is str:
        return {"S": value}
    if value is None:
        return {"NULL": True}
    if kind is bool:
        return {"BOOL": value}
    if kind is int and -_INT_BOUND < value < _INT_BOUND:
        return {"N": str(value)}
    if kind is dict:
        return {"M": {k: attribute(v) for k, v in value.items()}}
    if kind is list or kind is tuple:
        return {"L": [attribute(v) for v in value]}
    # The general order, for subclasses and the rarer types.
    if isinstance(value, bool):
        return {"BOOL": value}
    if _is_number(value):
        return {"N": _number(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, (bytes, bytearray)):
        return {"B": value}
    if isinstance(value, AbstractSet):
        return _set(value)
    if isinstance(value, Mapping):
        return {"M": {k: attribute(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"L": [attribute(v) for v in value]}
    raise TypeError(f'Unsupported type "{type(value)}" for value "{value}"')


def plain(value: Any) -> Any:
    """A deserialized value with Decimals made int (when whole) or float, as the rows hold them."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def value_of(attr: dict[str, Any]) -> Any:
    """One wire value as the rows hold it: what TypeDeserializer reads, numbers made plain (in maps and
    lists; a number set's members stay Decimals), binary as bytes."""
    if not attr:
        raise TypeError("Value must be a nonempty dictionary whose key is a valid dynamodb type.")
    tag = next(iter(attr))
    raw = attr[tag]
    if tag == "S" or tag == "BOOL" or tag == "B":
        return raw
    if tag == "N":
        return plain(_NUMBERS.create_decimal(raw))
    if tag == "M":
        return {k: value_of(v) for k, v in raw.items()}
    if tag == "L":
        return [value_of(v) for v in raw]
    if tag == "NULL":
        return None
    if tag == "SS" or tag == "BS":
        return set(raw)
    if tag == "NS":
        return {_NUMBERS.create_decimal(n) for n in raw}
    raise TypeError(f"Dynamodb type {tag} is not supported")


def marshal(item: dict[str, Any]) -> Item:
    """A plain dict as a DynamoDB item, spelled exactly as TypeSerializer spells it; None values are left out."""
    # Strings, whole numbers and booleans are nearly every attribute we write: spelling them here skips
    # the general dispatch and Decimal context (~0.7 us an attribute), which a fork's 64 rows would pay
    # ten times each. `type() is`, not isinstance: bool is an int, and subclasses take the general path.
    # The dispatch is inlined because a call per attribute is a quarter of the loop's time.
    out: Item = {}
    for k, v in item.items():
        kind = type(v)
        if kind is str:
            out[k] = {"S": v}
        elif v is None:
            continue
        elif kind is int and -_INT_BOUND < v < _INT_BOUND:
            out[k] = {"N": str(v)}
        elif kind is bool:
            out[k] = {"BOOL": v}
        else:
            out[k] = attribute(v)
    return out


def unmarshal(item: Item) -> dict[str, Any]:
    """A DynamoDB item as a plain dict, read exactly as TypeDeserializer reads it with numbers made plain."""
    # The same fast path, reading: the general dispatch and Decimal cost ~3 us an attribute, half of a
    # listing's own time (tests/bench.py). Only whole numbers in plain digits skip Decimal.
    out: dict[str, Any] = {}
    for k, a in item.items():
        if "S" in a:
            out[k] = a["S"]
        elif "N" in a and (n := a["N"]).isascii() and (n.isdigit() or (n[:1] == "-" and n[1:].isdigit())):
            out[k] = int(n)
        elif "BOOL" in a:
            out[k] = a["BOOL"]
        else:
            out[k] = value_of(a)
    return out


# ---- the generic codec ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Attr:
    """How one row field is stored when not as itself under its own name."""

    # The field's value as the attributes it is stored as (None values are left out).
    write: Callable[[Any], dict[str, Any]] | None = None
    # The field's value from the item's attributes.
    read: Callable[[dict[str, Any]], Any] | None = None
    # The field's value from its key part's text (a field the key holds, not an attribute).
    from_key: Callable[[str], Any] | None = None

    @staticmethod
    def number(name: str, kind: Callable[[Any], Any]) -> Attr:
        """A number that reads back as 0 when absent."""
        return Attr(read=lambda it: kind(it.get(name) or 0))

    @staticmethod
    def number_or_none(name: str) -> Attr:
        """A count stored only when not 0."""
        return Attr(write=lambda v: {name: v or None}, read=lambda it: int(it.get(name) or 0))

    @staticmethod
    def flag(name: str) -> Attr:
        """A flag stored only when set."""
        return Attr(write=lambda v: {name: v or None}, read=lambda it: bool(it.get(name)))


class Fields(Generic[R]):
    """A row dataclass stored field by field: each field is an attribute of its name, except the parts of
    the key (read back from it; `stored_too` names those also kept as attributes), the `unstored` fields
    (given to the read by its caller) and the `Attr` overrides. An absent attribute reads back as the
    field's default, or None."""

    def __init__(
        self,
        *,
        stored_too: tuple[str, ...] = (),
        unstored: tuple[str, ...] = (),
        or_default: tuple[str, ...] = (),
        extra: Callable[[Any], dict[str, Any]] | None = None,
        **overrides: Attr,
    ) -> None:
        self.stored_too = stored_too
        self.unstored = unstored
        # Fields whose empty value (0, "") reads back as the default as well as an absent one.
        self.or_default = or_default
        # Attributes derived from the whole row (none of its fields).
        self.extra = extra
        self.overrides = overrides

    def bind(
        self, row: type[R], shape: Shape
    ) -> tuple[Callable[[R], dict[str, Any]], Callable[[dict[str, Any], dict[str, str]], R]]:
        from_parts = (set(shape.fields) - set(self.stored_too)) | set(self.unstored)
        own = fields(row)  # type: ignore[arg-type]
        unknown = (set(self.overrides) | set(self.or_default)) - {f.name for f in own}
        assert not unknown, f"{row.__name__} has no fields {unknown}"
        bare = {f.name for f in own if f.name in self.or_default and f.default is MISSING}
        assert not bare, f"{row.__name__}.{bare} have no default to read an empty value as"
        # The two mappers are compiled once per kind, as dataclasses compiles __init__: a pointer listing
        # reads 64 rows and a fork writes as many, and a loop over the fields costs twice a straight call.
        names: dict[str, Any] = {"row": row}
        written: list[str] = []
        read: list[str] = []
        for i, f in enumerate(own):
            attr = self.overrides.get(f.name)
            if f.name not in from_parts:
                if attr is not None and attr.write is not None:
                    names[f"w{i}"] = attr.write
                    written.append(f"**w{i}(r.{f.name})")
                else:
                    written.append(f"{f.name!r}: r.{f.name}")
            if attr is not None and attr.read is not None:
                names[f"r{i}"] = attr.read
                read.append(f"r{i}(it)")
            elif f.name in from_parts:
                if attr is not None and attr.from_key is not None:
                    names[f"k{i}"] = attr.from_key
                    read.append(f"k{i}(parts[{f.name!r}])")
                else:
                    read.append(f"parts[{f.name!r}]")
            elif f.default_factory is not MISSING:
                names[f"d{i}"] = f.default_factory
                read.append(f"it[{f.name!r}] if {f.name!r} in it else d{i}()")
            else:
                names[f"d{i}"] = None if f.default is MISSING else f.default
                read.append(
                    f"(it.get({f.name!r}) or d{i})" if f.name in self.or_default else f"it.get({f.name!r}, d{i})"
                )
        if self.extra is not None:
            names["extra"] = self.extra
            written.append("**extra(r)")
        source = (
            f"def encode(r):\n    return {{{', '.join(written)}}}\n"
            f"def decode(it, parts):\n    return row({', '.join(read)})\n"
        )
        exec(source, names)
        encode: Callable[[R], dict[str, Any]] = names["encode"]
        decode: Callable[[dict[str, Any], dict[str, str]], R] = names["decode"]
        return encode, decode


# ---- the hand-written codecs ------------------------------------------------------------------------


def attachments_attribute(attached: tuple[Attachment, ...]) -> dict[str, Any]:
    """An agent's attachments as a map by Memory id (so a Memory's deletion removes its entry by name),
    each with its position in the list the steward gave."""
    return {a.memory_id: {"mode": a.mode, "read_first": a.read_first, "position": i} for i, a in enumerate(attached)}


def attachments(raw: Any) -> tuple[Attachment, ...]:
    if not isinstance(raw, dict):
        return ()
    ordered = sorted(raw.items(), key=lambda kv: int(kv[1].get("position", 0)))
    return tuple(Attachment(mid, stored_mode(v["mode"]), bool(v["read_first"])) for mid, v in ordered)


def frozen_item(b: FrozenBinding) -> dict[str, Any]:
    """An execution's stored root. These keys are the stored schema: rows written before stay readable."""
    out: dict[str, Any] = {"name": b.name, "scope": b.scope, "access": b.access, "anchor_public_id": b.anchor_public_id}
    if b.conversation_public_id:
        out["conversation_public_id"] = b.conversation_public_id
    if b.agent_public_id:
        out["agent_public_id"] = b.agent_public_id
    if b.speaker_public_id:
        out["speaker_public_id"] = b.speaker_public_id
    return out


def frozen_row(it: dict[str, Any]) -> FrozenBinding:
    return FrozenBinding(
        name=it["name"],
        scope=it["scope"],
        access=it["access"],
        anchor_public_id=it["anchor_public_id"],
        conversation_public_id=it.get("conversation_public_id"),
        speaker_public_id=it.get("speaker_public_id") if it["scope"] == "speaker" else None,
        agent_public_id=it.get("agent_public_id"),
    )


def mount_item(m: Mount) -> dict[str, Any]:
    return {
        k: v
        for k, v in {
            "path": m.path,
            "kind": m.kind,
            "mode": m.mode,
            "source": m.source,
            "memory_id": m.memory_id,
            "name": m.name,
            "read_first": m.read_first,
            "description": m.description,
        }.items()
        if v is not None
    }


def mount_row(it: dict[str, Any]) -> Mount:
    return Mount(
        it["path"],
        it["kind"],
        it["mode"],
        it.get("source") or "native",
        it.get("memory_id"),
        it.get("name"),
        it.get("read_first"),
        it.get("description"),
    )


def _expiry(it: dict[str, Any]) -> int:
    # A row from before executions expired lives a default lifetime from its creation.
    return int(it.get("expires_at") or _epoch(it["created_at"]) + DEFAULT_EXECUTION_TTL_SECONDS)


EXECUTION_FIELDS: Fields[Execution] = Fields(
    bindings=Attr(
        write=lambda v: {"bindings": [frozen_item(b) for b in v]},
        read=lambda it: [frozen_row(b) for b in it.get("bindings") or []],
    ),
    tools=Attr(read=lambda it: list(it.get("tools") or [])),
    expires_at=Attr(read=_expiry),
    mounts=Attr(
        write=lambda v: {"mounts": [mount_item(m) for m in v] or None},
        read=lambda it: [mount_row(m) for m in it.get("mounts") or []],
    ),
    ancestors=Attr(
        write=lambda v: {
            "ancestors": [{"execution_id": a.execution_id, "conversation_id": a.conversation_id} for a in v] or None
        },
        read=lambda it: _ancestors(it),
    ),
)


def _ancestors(it: dict[str, Any]) -> list[Ancestor]:
    stored = it.get("ancestors")
    if stored:
        return [Ancestor(a["execution_id"], a["conversation_id"]) for a in stored]
    # A child stored before ancestors were kept names its parent only (its conversation is not known here:
    # the parent's own stop still reaches it).
    parent = it.get("parent_id")
    return [Ancestor(parent, "")] if parent else []


def _epoch(iso: str) -> int:
    return int(clock.epoch_of(iso))


def _quarantine_attributes(q: Quarantine | None) -> dict[str, Any]:
    if q is None:
        return {}
    out: dict[str, Any] = {"quarantine": q.status, "quarantine_rules": ",".join(q.rules), "ruleset": q.ruleset}
    if q.reviewed_by is not None:
        out |= _author_attributes(q.reviewed_by, "reviewed_by")
        out["reviewed_at"] = q.reviewed_at
    return out


def _pii(it: dict[str, Any]) -> tuple[str, ...]:
    raw = it.get("pii")
    return tuple(raw.split(",")) if raw else ()


def _quarantine(it: dict[str, Any]) -> Quarantine | None:
    status = it.get("quarantine")
    if not status:
        return None
    rules = tuple(r for r in str(it.get("quarantine_rules") or "").split(",") if r)
    reviewer = _author(it, "reviewed_by") if it.get("reviewed_by") else None
    return Quarantine(status, rules, str(it.get("ruleset") or ""), reviewer, it.get("reviewed_at"))


def _author_attributes(a: Author, prefix: str = "author") -> dict[str, Any]:
    """An author as flat strings (`author` keeps the "<kind>:<id>" every row has always held), so reading
    a listing of them stays on unmarshal's fast path."""
    return {
        prefix: f"{a.kind}:{a.public_id}",
        f"{prefix}_name": a.name,
        f"{prefix}_execution": a.execution_public_id,
        f"{prefix}_commit": a.commit,
    }


def _author(it: dict[str, Any], prefix: str = "author") -> Author:
    kind, _, public_id = str(it.get(prefix) or "").partition(":")
    return Author(
        kind if kind in ("agent", "sync") else "human",  # type: ignore[arg-type]
        public_id,
        it.get(f"{prefix}_name"),
        it.get(f"{prefix}_execution"),
        it.get(f"{prefix}_commit"),
    )


# The author mappers under the names other store modules use.
author_attributes = _author_attributes
author_of = _author


# How a row's author and the scans' findings are stored, whichever row holds them.
ANCHOR = Attr(from_key=Anchor.from_key)
AUTHOR = Attr(write=lambda a: _author_attributes(a), read=lambda it: _author(it))
PII = Attr(write=lambda v: {"pii": ",".join(v) or None}, read=_pii)
QUARANTINE = Attr(write=_quarantine_attributes, read=_quarantine)


def _merged(raw: Any) -> MergedFrom | None:
    if not isinstance(raw, dict):
        return None
    return MergedFrom(str(raw["conversation_public_id"]), str(raw["public_id"]), int(raw["lock_version"]))


def promoted_attribute(p: PromotedFrom) -> dict[str, Any]:
    out: dict[str, Any] = {
        "anchor_public_id": p.anchor_public_id,
        "path": p.path,
        "public_id": p.public_id,
        "lock_version": p.lock_version,
    }
    if p.memory_id is not None:
        out["memory_id"] = p.memory_id
    if p.promoted_by is not None:
        out |= {k: v for k, v in _author_attributes(p.promoted_by, "promoted_by").items() if v is not None}
        out["promoted_at"] = p.promoted_at
    return out


def _promoted(raw: Any) -> PromotedFrom | None:
    if not isinstance(raw, dict):
        return None
    return PromotedFrom(
        raw["anchor_public_id"],
        raw["path"],
        raw["public_id"],
        int(raw["lock_version"]),
        raw.get("memory_id"),
        _author(raw, "promoted_by") if raw.get("promoted_by") else None,
        raw.get("promoted_at"),
    )


PROMOTED = Attr(
    write=lambda p: {"promoted_from": None if p is None else promoted_attribute(p)},
    read=lambda it: _promoted(it.get("promoted_from")),
)


# A keyed request's record. The answer is kept as JSON text: it is read back whole, never queried.
IDEMPOTENCY_FIELDS: Fields[Record] = Fields(
    answer=Attr(
        write=lambda a: {"status": a.status, "answer": json.dumps(a.body, ensure_ascii=False, separators=(",", ":"))},
        read=lambda it: Answer(int(it["status"]), json.loads(it["answer"])),
    ),
)


# ---- organization Memories ---------------------------------------------------------------------------


def memory_settings(m: OrgMemory) -> dict[str, Any]:
    """The attributes a PATCH may change (description aside), each present as null when unset so an
    update can SET them all."""
    return {"default": _default_attribute(m.default), "access": _access_attribute(m.access)}


def _default_attribute(d: MemoryDefault | None) -> dict[str, Any] | None:
    return (
        None
        if d is None
        else {"reach": d.reach, "deployment": d.deployment, "mode": d.mode, "read_first": d.read_first}
    )


def _access_attribute(a: MemoryAccess | None) -> dict[str, Any] | None:
    return None if a is None else {"humans": list(a.humans), "workspaces": list(a.workspaces)}


def memory_default(raw: Any) -> MemoryDefault | None:
    if not isinstance(raw, dict):
        return None
    return MemoryDefault(raw["reach"], raw.get("deployment"), stored_mode(raw["mode"]), bool(raw["read_first"]))


def _access(raw: Any) -> MemoryAccess | None:
    if not isinstance(raw, dict):
        return None
    return MemoryAccess(tuple(raw.get("humans") or ()), tuple(raw.get("workspaces") or ()))


def _git_attributes(g: GitOrigin | None) -> dict[str, Any]:
    return {} if g is None else {"git_url": g.url, "git_ref": g.ref, "git_path": g.path, "git_commit": g.commit}


def _git(it: dict[str, Any]) -> GitOrigin | None:
    if not it.get("git_url"):
        return None
    return GitOrigin(it["git_url"], it.get("git_ref") or "", it.get("git_path") or "", it.get("git_commit"))


# A Memory as stored, a deletion under way included (what that deletion reads to go on); `deleting` is
# set by the deletion's own update, never written whole.
MEMORY_FIELDS: Fields[OrgMemory] = Fields(
    or_default=("attachment_count", "revision"),
    description=Attr(read=lambda it: it.get("description") or ""),
    source=Attr(read=lambda it: "git" if it.get("source") == "git" else "native"),
    created_by=Attr(write=lambda a: _author_attributes(a, "created_by"), read=lambda it: _author(it, "created_by")),
    archived=Attr(read=lambda it: bool(it.get("archived"))),
    git=Attr(write=_git_attributes, read=_git),
    default=Attr(write=lambda d: {"default": _default_attribute(d)}, read=lambda it: memory_default(it.get("default"))),
    access=Attr(write=lambda a: {"access": _access_attribute(a)}, read=lambda it: _access(it.get("access"))),
    promoted_from=PROMOTED,
    deleting=Attr(write=lambda _: {}, read=lambda it: bool(it.get("deleting"))),
)


def memory_stats_row(it: dict[str, Any], parts: dict[str, str]) -> MemoryStats | None:
    if it.get("deleted_at") is not None:
        return None
    return MemoryStats(
        int(it.get("doc_count") or 0),
        int(it.get("bytes") or 0),
        _author(it, "written_by") if it.get("written_by") else None,
        it.get("written_at"),
    )


def lease_attributes(lease: Lease) -> dict[str, Any]:
    return {
        "path": lease.path,
        **_author_attributes(lease.holder, "holder"),
        "holder_key": f"{lease.holder.kind}:{lease.holder.public_id}",
        # Read by the commit's condition (epoch seconds, fractions kept) and by the table's TTL.
        "lease_until": Decimal(str(round(lease.expires_at, 3))),
        "expires_at": int(lease.expires_at) + 1,
    }


def lease_row(it: dict[str, Any], parts: dict[str, str]) -> Lease:
    return Lease(
        Anchor.from_key(parts["anchor"]).owner_id,
        it.get("path") or "",
        _author(it, "holder"),
        float(it.get("lease_until") or 0),
    )


# ---- typed records ---------------------------------------------------------------------------------


RECORD_FIELDS: Fields[TypedRecord] = Fields(
    stored_too=("workspace_id",),
    or_default=(
        "lock_version",
        "mention_count",
        "evidence_count",
        "source_kind",
        "visibility",
        "content_digest",
        "operation_id",
    ),
    extra=lambda r: {"s": searched_attribute(r)},
    author=AUTHOR,
    pii=PII,
    quarantine=QUARANTINE,
    updated_at=Attr(read=lambda it: it.get("updated_at") or it["created_at"]),
    labels=Attr(write=lambda v: {"labels": list(v) or None}, read=lambda it: tuple(it.get("labels") or ())),
    group=Attr(write=lambda v: {"dedup_group": v}, read=lambda it: it.get("dedup_group") or ""),
)


def searched_attribute(r: TypedRecord) -> str:
    """What a search filters and ranks by, packed in one attribute: botocore parses a response value by
    value, so reading ten thousand records costs a tenth as much as it would field by field. The fields
    that change without the text (superseded_by, quarantine) stay attributes of their own."""
    packed = [r.type, r.layer, r.content, r.facet, list(r.labels), r.run_id, r.visibility]
    packed += [f"{r.author.kind}:{r.author.public_id}", r.user_id, r.valid_to, r.created_at]
    return json.dumps(packed, ensure_ascii=False, separators=(",", ":"))


def record_searched_row(item: Item, workspace_id: str) -> TypedRecord:
    """A record as a search reads it: the packed fields and the two that move on their own."""
    type_, layer, content, facet, labels, run_id, visibility, author, user_id, valid_to, created_at = json.loads(
        item["s"]["S"]
    )
    kind, _, author_id = author.partition(":")
    it = unmarshal({k: v for k, v in item.items() if k != "s"})
    return TypedRecord(
        public_id=it["sk"],
        workspace_id=workspace_id,
        layer=layer,
        type=type_,
        content=content,
        author=Author(kind, author_id),
        created_at=created_at,
        updated_at=created_at,
        facet=facet,
        labels=tuple(labels),
        run_id=run_id,
        visibility=visibility,
        user_id=user_id,
        valid_to=valid_to,
        superseded_by=it.get("superseded_by"),
        quarantine=_quarantine(it),
    )


def record_band_row(item: Item, parts: dict[str, str]) -> tuple[str, ...]:
    """The record ids a band value names, newest first (ids are UUIDv7, so they sort by time)."""
    ids = item.get("ids", {}).get("SS") or []
    return tuple(sorted(ids, reverse=True))


# ---- conversation store entries and fork bases ---------------------------------------------------------

# A store entry is a top-level attribute of its page item, named by this prefix and its key.
ENTRY_ATTRIBUTE = "E:"


def entry_attribute(e: StoreEntry) -> dict[str, Any]:
    """One entry as its page holds it (wire format): the value as compact JSON text, never queried."""
    return {
        "M": {
            "v": {"S": e.value_json},
            "lv": {"N": str(e.lock_version)},
            "b": {"N": str(e.bytesize)},
            "t": {"S": e.updated_at},
        }
    }


def entry_page_row(item: Item, parts: dict[str, str]) -> EntryPage:
    """A page read back from its wire item (its entries are spelled by hand both ways, for speed)."""
    conversation_id, number = parts["conversation_id"], int(parts["number"])
    entries: dict[str, StoreEntry] = {}
    for name, raw in item.items():
        if not name.startswith(ENTRY_ATTRIBUTE):
            continue
        m = raw["M"]
        key = name[len(ENTRY_ATTRIBUTE) :]
        entries[key] = StoreEntry(key, int(m["lv"]["N"]), m["v"]["S"], int(m["b"]["N"]), m["t"]["S"])
    return EntryPage(conversation_id, number, entries)


def entry_page_attributes(page: EntryPage) -> Item:
    """A page's attributes in wire format."""
    item: Item = {"n": {"N": str(len(page.entries))}}
    for key, e in page.entries.items():
        item[f"{ENTRY_ATTRIBUTE}{key}"] = entry_attribute(e)
    return item


def fork_base_attributes(base: ForkBase) -> dict[str, Any]:
    return {
        "parent_public_id": base.parent_public_id,
        "documents": {rest: {"p": pid, "v": lv} for rest, (pid, lv) in base.documents.items()},
    }


def fork_base_row(it: dict[str, Any], parts: dict[str, str]) -> ForkBase:
    conversation_id = parts["conversation_id"]
    docs = {rest: (str(d["p"]), int(d["v"])) for rest, d in (it.get("documents") or {}).items()}
    return ForkBase(conversation_id, str(it.get("parent_public_id") or ""), docs)


# ---- documents and their versions ---------------------------------------------------------------------


DOCUMENT_FIELDS: Fields[Document] = Fields(anchor=ANCHOR, author=AUTHOR, pii=PII, quarantine=QUARANTINE)

# A version's key holds its path only hashed: who reads one gives the path (`rest`).
VERSION_FIELDS: Fields[Version] = Fields(
    stored_too=("lock_version",),
    unstored=("rest",),
    anchor=ANCHOR,
    author=AUTHOR,
    pii=PII,
    quarantine=QUARANTINE,
    recorded_at=Attr(write=lambda v: {"recorded_at": int(v)}, read=lambda it: float(it.get("recorded_at") or 0)),
    overwrote_concurrent_edit=Attr(write=lambda v: {"overwrote": v or None}, read=lambda it: bool(it.get("overwrote"))),
    promoted_from=PROMOTED,
    redacted_by=Attr(
        write=lambda a: {} if a is None else _author_attributes(a, "redacted_by"),
        read=lambda it: _author(it, "redacted_by") if it.get("redacted_by") else None,
    ),
    handed_off=Attr.flag("handed_off"),
    merged_from=Attr(
        write=lambda m: {"merged_from": None if m is None else _merged_attribute(m)},
        read=lambda it: _merged(it.get("merged_from")),
    ),
)


def _merged_attribute(m: MergedFrom) -> dict[str, Any]:
    return {
        "conversation_public_id": m.conversation_public_id,
        "public_id": m.public_id,
        "lock_version": m.lock_version,
    }
