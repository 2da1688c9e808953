"""Peer mail: what an execution started as mail from another execution may reach.

Pure functions over plain rows (no I/O); the resolver calls them around the ordinary resolution of the
receiving conversation's bindings, and the execution service around its mount plan.

The rule is an intersection: the mail execution reaches a root only where the receiver conversation's
selected bindings (resolved for the caller, narrowed by the receiving profile's limit) and the sender's
frozen bindings reach the same anchor, and read-only wins. So mail never widens access beyond either side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agent_memory.core.bindings import Access, Binding
from agent_memory.core.model import Anchor, FrozenBinding, Mount

ORDINARY_SPEAKER = "speaker"


def mail_subjects(receiver: Sequence[Binding], sender: Sequence[FrozenBinding]) -> tuple[Binding, ...]:
    """The receiver's bindings with the subjects a mail execution gives its speaker roots.

    The ordinary speaker/ root names no subject of its own, so it follows the sender's captured subject
    (the execution's subject). A speaker alias keeps the sender's corresponding subject: the subject of
    the sender's speaker root of the same name; with none, the alias is absent. Other bindings are unchanged.
    """
    sender_subjects = {f.name: f.speaker_public_id for f in sender if f.scope == "speaker" and f.speaker_public_id}
    out: list[Binding] = []
    for b in receiver:
        if b.scope != "speaker":
            out.append(b)
        elif b.name == ORDINARY_SPEAKER:
            out.append(replace(b, speaker_public_id=None))
        elif b.name in sender_subjects:
            out.append(replace(b, speaker_public_id=sender_subjects[b.name]))
    return tuple(out)


def sender_ceilings(sender: Sequence[FrozenBinding]) -> dict[Anchor, Access]:
    """The most the sender may do at each anchor its frozen bindings reach (read_write if any root there is)."""
    out: dict[Anchor, Access] = {}
    for f in sender:
        if out.get(f.anchor) != "read_write":
            out[f.anchor] = f.access
    return out


def mail_bindings(receiver: Sequence[FrozenBinding], sender: Sequence[FrozenBinding]) -> list[FrozenBinding]:
    """The intersection: each receiver root whose anchor the sender reaches, at the lesser of both accesses.

    `receiver` is the receiving conversation's roots as they resolved for the caller (after
    `mail_subjects` and the receiving profile's limit); `sender` the sending execution's frozen roots. A
    root whose anchor the sender does not reach is absent — the receiver's own conversation/ root
    included, unless the sender reaches that conversation too — and a conversation alias survives only
    where both reach the conversation it names.
    """
    ceilings = sender_ceilings(sender)
    out: list[FrozenBinding] = []
    for r in receiver:
        ceiling = ceilings.get(r.anchor)
        if ceiling is None:
            continue
        access: Access = "read" if "read" in (r.access, ceiling) else "read_write"
        out.append(replace(r, access=access))
    return out


def mail_mounts(planned: Sequence[Mount], sender: Sequence[Mount]) -> list[Mount]:
    """A mail execution's session mounts: a Memory is mounted only where the sender's session mounts it too,
    read-only when either side is; the /memory/agent and /memory/user mounts stand for roots that are
    already intersected, so they stay as planned."""
    modes: dict[str, str] = {}
    for m in sender:
        if m.memory_id is not None and modes.get(m.memory_id) != "readwrite":
            modes[m.memory_id] = m.mode
    out: list[Mount] = []
    for m in planned:
        if m.memory_id is None:
            out.append(m)
            continue
        theirs = modes.get(m.memory_id)
        if theirs is None:
            continue
        out.append(m if theirs == "readwrite" else replace(m, mode="readonly"))
    return out
