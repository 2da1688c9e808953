"""Peer mail's pure rules: the subjects speaker roots take, the intersection of bindings, and of mounts."""

from __future__ import annotations

from agent_memory.core.bindings import Binding
from agent_memory.core.mail import mail_bindings, mail_mounts, mail_subjects, sender_ceilings
from agent_memory.core.model import Anchor, FrozenBinding, Mount
from hypothesis import given
from hypothesis import strategies as st

HOME = "01990000-0000-7000-8000-0000000000a1"
OTHER = "01990000-0000-7000-8000-0000000000a2"
GROUP = "01990000-0000-7000-8000-0000000000a3"
WS = "01990000-0000-7000-8000-0000000000b1"
ALPHA = "01990000-0000-7000-8000-0000000000c1"
BETA = "01990000-0000-7000-8000-0000000000c2"
VISITOR = "01990000-0000-7000-8000-0000000000d1"
FRIEND = "01990000-0000-7000-8000-0000000000d2"


def conv(name: str, anchor: str, access: str = "read_write", alias: str | None = None) -> FrozenBinding:
    return FrozenBinding(name, "conversation", access, anchor, conversation_public_id=alias)  # type: ignore[arg-type]


def ws(access: str = "read_write") -> FrozenBinding:
    return FrozenBinding("workspace", "workspace", access, WS)  # type: ignore[arg-type]


def agent(owner: str = ALPHA, access: str = "read_write") -> FrozenBinding:
    return FrozenBinding("agent", "agent", access, owner, agent_public_id=owner)  # type: ignore[arg-type]


def speaker(name: str, subject: str, owner: str = ALPHA, access: str = "read_write") -> FrozenBinding:
    return FrozenBinding(
        name,
        "speaker",
        access,  # type: ignore[arg-type]
        subject,
        speaker_public_id=subject,
        agent_public_id=owner,
    )


# ---- the intersection ------------------------------------------------------------------------------------


def test_a_root_the_sender_does_not_reach_is_absent_the_receivers_own_conversation_included() -> None:
    receiver = [conv("conversation", OTHER), ws()]
    assert mail_bindings(receiver, [conv("conversation", HOME), ws()]) == [ws()]
    # unless the sender reaches that conversation too, under any name
    assert mail_bindings(receiver, [conv("inbox", OTHER, alias=OTHER)]) == [conv("conversation", OTHER)]


def test_read_only_wins_on_either_side() -> None:
    assert mail_bindings([ws("read_write")], [ws("read")]) == [ws("read")]
    assert mail_bindings([ws("read")], [ws("read_write")]) == [ws("read")]
    assert mail_bindings([ws("read_write")], [ws("read_write")]) == [ws("read_write")]


def test_the_senders_ceiling_is_its_best_access_at_an_anchor() -> None:
    sender = [conv("conversation", GROUP, "read"), conv("team", GROUP, "read_write", alias=GROUP)]
    assert sender_ceilings(sender) == {Anchor("conversation", GROUP): "read_write"}
    assert mail_bindings([conv("group", GROUP, alias=GROUP)], sender) == [conv("group", GROUP, alias=GROUP)]


def test_an_alias_survives_only_where_both_reach_its_conversation() -> None:
    receiver = [conv("group", GROUP, alias=GROUP)]
    assert mail_bindings(receiver, [conv("group", OTHER, alias=OTHER)]) == []
    assert mail_bindings(receiver, [conv("conversation", GROUP)]) == receiver


def test_speaker_and_agent_rows_match_only_the_same_pair() -> None:
    sender = [agent(ALPHA), speaker("speaker", VISITOR, ALPHA)]
    assert mail_bindings([agent(BETA), speaker("speaker", VISITOR, BETA)], sender) == []
    assert mail_bindings([speaker("speaker", FRIEND, ALPHA)], sender) == []
    assert mail_bindings([agent(ALPHA), speaker("speaker", VISITOR, ALPHA)], sender) == sender


ACCESS = st.sampled_from(["read", "read_write"])
ROOTS = st.sampled_from(
    [
        lambda a: conv("conversation", HOME, a),
        lambda a: conv("conversation", OTHER, a),
        lambda a: conv("group", GROUP, a, alias=GROUP),
        lambda a: conv("team", OTHER, a, alias=OTHER),
        ws,
        lambda a: agent(ALPHA, a),
        lambda a: agent(BETA, a),
        lambda a: speaker("speaker", VISITOR, ALPHA, a),
        lambda a: speaker("person", FRIEND, ALPHA, a),
        lambda a: speaker("speaker", VISITOR, BETA, a),
    ]
)
SIDE = st.lists(st.tuples(ROOTS, ACCESS).map(lambda p: p[0](p[1])), max_size=8)


@given(SIDE, SIDE)
def test_mail_never_widens_beyond_either_side(receiver: list[FrozenBinding], sender: list[FrozenBinding]) -> None:
    out = mail_bindings(receiver, sender)
    ceilings = sender_ceilings(sender)
    # Every root is one of the receiver's, in its order, at an anchor the sender reaches, no wider than either
    assert [(f.name, f.anchor) for f in out] == [(r.name, r.anchor) for r in receiver if r.anchor in ceilings]
    for f, r in zip(out, [r for r in receiver if r.anchor in ceilings], strict=True):
        assert f.access == ("read_write" if r.access == ceilings[f.anchor] == "read_write" else "read")
    # And intersecting again changes nothing, whichever side comes first
    assert mail_bindings(out, sender) == out
    assert {f.anchor for f in out} <= {f.anchor for f in mail_bindings(sender, receiver)}


# ---- the subjects speaker roots take ------------------------------------------------------------------------


def test_the_ordinary_speaker_root_drops_its_subject_to_follow_the_captured_one() -> None:
    receiver = (Binding("speaker", "speaker", "read_write", speaker_public_id=FRIEND),)
    assert mail_subjects(receiver, []) == (Binding("speaker", "speaker", "read_write"),)


def test_a_speaker_alias_takes_the_senders_corresponding_subject_or_is_absent() -> None:
    receiver = (
        Binding("conversation", "conversation", "read_write"),
        Binding("person", "speaker", "read_write", speaker_public_id=FRIEND),
        Binding("friend", "speaker", "read_write"),
    )
    out = mail_subjects(receiver, [speaker("person", VISITOR, access="read")])
    assert out == (
        Binding("conversation", "conversation", "read_write"),
        Binding("person", "speaker", "read_write", speaker_public_id=VISITOR),
    )


# ---- mounts ----------------------------------------------------------------------------------------------------


def test_a_memory_is_mounted_only_where_the_sender_mounts_it_read_only_winning() -> None:
    planned = [
        Mount("/memory/agent", "agent", "readwrite"),
        Mount("/memory/handbook", "memory", "readwrite", memory_id="m1", name="handbook"),
        Mount("/memory/secrets", "memory", "readwrite", memory_id="m2", name="secrets"),
        Mount("/workspace/docs", "memory", "readwrite", memory_id="m3", name="docs"),
    ]
    sender = [
        Mount("/memory/handbook", "memory", "readonly", memory_id="m1", name="handbook"),
        Mount("/workspace/d", "memory", "readonly", memory_id="m3", name="docs"),
        Mount("/workspace/e", "memory", "readwrite", memory_id="m3", name="docs"),
    ]
    assert mail_mounts(planned, sender) == [
        Mount("/memory/agent", "agent", "readwrite"),
        Mount("/memory/handbook", "memory", "readonly", memory_id="m1", name="handbook"),
        Mount("/workspace/docs", "memory", "readwrite", memory_id="m3", name="docs"),
    ]
