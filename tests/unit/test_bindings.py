"""memory_context grammar (every validation_failed rule), the defaults, and the profile limit."""

from __future__ import annotations

from typing import Any

import pytest
from agent_memory.api.errors import ApiError
from agent_memory.core.bindings import (
    DEFAULT_BINDINGS,
    MAX_BINDINGS,
    Binding,
    apply_limit,
    configured_bindings,
    parse_bindings,
)
from hypothesis import given, settings
from hypothesis import strategies as st

CONV_ID = "01990000-0000-7000-8000-00000000c1c1"
SPEAKER_ID = "01990000-0000-7000-8000-00000000beef"
HOME = {"name": "conversation", "scope": "conversation", "access": "read_write"}


def b(name: str, scope: str, access: str = "read_write", **ids: str | None) -> dict[str, Any]:
    return {"name": name, "scope": scope, "access": access, **ids}


def refused(value: object, *, limit: bool = False) -> ApiError:
    with pytest.raises(ApiError) as info:
        parse_bindings(value, limit=limit)
    err = info.value
    assert (err.code, err.status) == ("validation_failed", 422)
    return err


# ---- what is accepted ----------------------------------------------------------------------------------


def test_null_configuration_means_the_default_roots() -> None:
    assert configured_bindings(None) == DEFAULT_BINDINGS
    assert [x.name for x in DEFAULT_BINDINGS] == ["conversation", "workspace", "agent", "speaker"]


def test_an_empty_list_is_a_valid_configuration_with_no_roots() -> None:
    assert parse_bindings({"bindings": []}) == ()


def test_a_full_configuration_parses_in_order_with_its_ids() -> None:
    got = parse_bindings(
        {
            "bindings": [
                HOME,
                b("group", "conversation", "read", conversation_public_id=CONV_ID),
                b("person", "speaker", speaker_public_id=SPEAKER_ID),
                b("notes", "workspace", "read"),
                b("user", "user"),
            ]
        }
    )
    assert got == (
        Binding("conversation", "conversation", "read_write"),
        Binding("group", "conversation", "read", conversation_public_id=CONV_ID),
        Binding("person", "speaker", "read_write", speaker_public_id=SPEAKER_ID),
        Binding("notes", "workspace", "read"),
        Binding("user", "user", "read_write"),
    )
    # And it round-trips through its JSON form
    assert parse_bindings({"bindings": [x.as_json() for x in got]}) == got


@pytest.mark.parametrize("name", ["a", "a" * 32, "g-1_x", "group", "z9"])
def test_root_names_inside_the_pattern_are_accepted(name: str) -> None:
    assert parse_bindings({"bindings": [HOME, b(name, "workspace")]})[1].name == name


def test_sixteen_bindings_are_allowed() -> None:
    items = [HOME] + [b(f"w{i}", "workspace", "read") for i in range(MAX_BINDINGS - 1)]
    assert len(parse_bindings({"bindings": items})) == MAX_BINDINGS


# ---- every validation_failed rule ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [None, [], "bindings", {"bindings": None}, {"bindings": {}}, {}, {"bindings": [], "extra": 1}],
)
def test_the_envelope_must_be_an_object_with_only_a_bindings_list(value: object) -> None:
    refused(value)


@pytest.mark.parametrize("item", ["conversation", None, ["conversation", "conversation", "read_write"]])
def test_a_binding_must_be_an_object(item: object) -> None:
    refused({"bindings": [HOME, item]})


def test_unknown_fields_in_a_binding_are_refused() -> None:
    assert "colour" in refused({"bindings": [{**HOME, "colour": "red"}]}).message


@pytest.mark.parametrize(
    "name", ["", "Group", "1group", "_group", "-group", "a" * 33, "gr/oup", "gr oup", "grüppe", "group\n", None, 7]
)
def test_root_names_outside_the_pattern_are_refused(name: object) -> None:
    refused({"bindings": [HOME, {"name": name, "scope": "workspace", "access": "read"}]})


@pytest.mark.parametrize(
    ("name", "scope"),
    [
        ("workspace", "conversation"),
        ("conversation", "workspace"),
        ("agent", "speaker"),
        ("user", "workspace"),
        ("speaker", "agent"),
    ],
)
def test_reserved_names_keep_their_own_scope(name: str, scope: str) -> None:
    assert "reserved" in refused({"bindings": [HOME, b(name, scope)]}).message


@pytest.mark.parametrize("scope", ["team", "Conversation", "", None, "workspaces"])
def test_a_scope_outside_the_list_is_refused(scope: object) -> None:
    refused({"bindings": [HOME, {"name": "notes", "scope": scope, "access": "read"}]})


@pytest.mark.parametrize("access", ["write", "READ", "rw", "", None, True])
def test_an_access_outside_the_list_is_refused(access: object) -> None:
    refused({"bindings": [HOME, {"name": "notes", "scope": "workspace", "access": access}]})


def test_more_than_sixteen_bindings_are_refused() -> None:
    items = [HOME] + [b(f"w{i}", "workspace", "read") for i in range(MAX_BINDINGS)]
    assert str(MAX_BINDINGS) in refused({"bindings": items}).message


@pytest.mark.parametrize(
    "items",
    [
        [b("workspace", "workspace")],
        [b("home", "conversation")],  # the current conversation under another name does not count
        [b("conversation", "conversation", conversation_public_id=CONV_ID)],
    ],
)
def test_a_nonempty_configuration_needs_the_conversation_root(items: list[dict[str, Any]]) -> None:
    refused({"bindings": items})


def test_a_read_only_conversation_root_still_counts_as_present() -> None:
    assert parse_bindings({"bindings": [{**HOME, "access": "read"}]})[0].access == "read"


def test_duplicate_names_are_refused() -> None:
    refused({"bindings": [HOME, b("notes", "workspace"), b("notes", "workspace", "read")]})
    refused({"bindings": [HOME, HOME]})


@pytest.mark.parametrize(
    "item",
    [
        b("notes", "workspace", conversation_public_id=CONV_ID),  # only a conversation binding selects one
        b("person", "speaker", conversation_public_id=CONV_ID),
        b("group", "conversation", conversation_public_id="not-a-uuid"),
        b("group", "conversation", conversation_public_id=CONV_ID.upper()),
        b("group", "conversation", conversation_public_id=CONV_ID + "\n"),
        {"name": "group", "scope": "conversation", "access": "read", "conversation_public_id": 12},
        b("notes", "workspace", speaker_public_id=SPEAKER_ID),  # only a speaker binding selects one
        b("group", "conversation", speaker_public_id=SPEAKER_ID),
        b("person", "speaker", speaker_public_id="someone"),
        b("person", "speaker", speaker_public_id=SPEAKER_ID + "\n"),
    ],
)
def test_uuid_fields_belong_only_on_their_own_scope(item: dict[str, Any]) -> None:
    refused({"bindings": [HOME, item]})


def test_the_conversation_root_cannot_point_elsewhere() -> None:
    refused({"bindings": [{**HOME, "conversation_public_id": CONV_ID}]})


def test_an_explicit_null_id_is_the_same_as_none() -> None:
    items = [{**HOME, "conversation_public_id": None}, b("person", "speaker", speaker_public_id=None)]
    got = parse_bindings({"bindings": items})
    assert got[1].speaker_public_id is None


# ---- memory_context_limit ------------------------------------------------------------------------------


def test_a_limit_needs_no_conversation_root_but_carries_no_ids() -> None:
    assert parse_bindings({"bindings": [b("workspace", "workspace", "read")]}, limit=True)
    refused({"bindings": [b("group", "conversation", conversation_public_id=CONV_ID)]}, limit=True)
    refused({"bindings": [b("person", "speaker", speaker_public_id=SPEAKER_ID)]}, limit=True)
    assert "memory_context_limit" in refused({"bindings": None}, limit=True).message


def limit(*items: dict[str, Any]) -> dict[str, Any]:
    return {"bindings": list(items)}


def test_no_limit_leaves_the_bindings_alone() -> None:
    assert apply_limit(DEFAULT_BINDINGS, None) == DEFAULT_BINDINGS


def test_an_empty_limit_removes_every_root() -> None:
    assert apply_limit(DEFAULT_BINDINGS, limit()) == ()


def test_a_limit_never_adds_a_root() -> None:
    bindings = parse_bindings({"bindings": [HOME]})
    got = apply_limit(
        bindings, limit(b("conversation", "conversation"), b("workspace", "workspace"), b("user", "user"))
    )
    assert [x.name for x in got] == ["conversation"]


@pytest.mark.parametrize(
    ("configured", "ceiling", "effective"),
    [
        ("read_write", "read_write", "read_write"),
        ("read_write", "read", "read"),
        ("read", "read_write", "read"),
        ("read", "read", "read"),
    ],
)
def test_read_only_wins(configured: str, ceiling: str, effective: str) -> None:
    bindings = parse_bindings({"bindings": [HOME, b("notes", "workspace", configured)]})
    got = apply_limit(bindings, limit(HOME, b("notes", "workspace", ceiling)))
    assert got[1].access == effective


def test_a_limit_matches_name_and_scope_together() -> None:
    # Given a binding 'notes' over the workspace, and a limit naming 'notes' over a conversation
    bindings = parse_bindings({"bindings": [HOME, b("notes", "workspace")]})
    got = apply_limit(bindings, limit(HOME, b("notes", "conversation")))
    # Then the same name over another scope grants nothing
    assert [x.name for x in got] == ["conversation"]


def test_a_limit_keeps_the_selected_ids() -> None:
    bindings = parse_bindings(
        {
            "bindings": [
                HOME,
                b("group", "conversation", conversation_public_id=CONV_ID),
                b("person", "speaker", speaker_public_id=SPEAKER_ID),
            ]
        }
    )
    got = apply_limit(bindings, limit(HOME, b("group", "conversation", "read"), b("person", "speaker")))
    assert got[1] == Binding("group", "conversation", "read", conversation_public_id=CONV_ID)
    assert got[2].speaker_public_id == SPEAKER_ID


def test_an_invalid_limit_is_validation_failed() -> None:
    with pytest.raises(ApiError) as info:
        apply_limit(DEFAULT_BINDINGS, {"bindings": [{"name": "Nope", "scope": "workspace", "access": "read"}]})
    assert info.value.code == "validation_failed"


NAMES = ["conversation", "workspace", "agent", "speaker", "user", "notes", "group", "person"]
SCOPE_FOR = {"notes": ["workspace", "conversation"], "group": ["conversation"], "person": ["speaker"]}
ACCESS = st.sampled_from(["read", "read_write"])


@st.composite
def binding_sets(draw: st.DrawFn, *, need_home: bool) -> list[dict[str, Any]]:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=len(NAMES)))
    if need_home and "conversation" not in names:
        names.insert(0, "conversation")
    return [b(n, draw(st.sampled_from(SCOPE_FOR.get(n, [n]))), draw(ACCESS)) for n in names]


@settings(max_examples=300)
@given(binding_sets(need_home=True), binding_sets(need_home=False))
def test_a_limit_only_narrows(configured: list[dict[str, Any]], ceiling: list[dict[str, Any]]) -> None:
    bindings = parse_bindings({"bindings": configured})
    got = apply_limit(bindings, {"bindings": ceiling})
    allowed = {(x["name"], x["scope"]): x["access"] for x in ceiling}
    # Then every surviving root was configured and allowed, in the configured order
    assert [x for x in bindings if (x.name, x.scope) in allowed] == [
        next(c for c in bindings if c.name == g.name) for g in got
    ]
    for g in got:
        before = next(c for c in bindings if c.name == g.name)
        # And it is read_write only when both sides say read_write
        want = "read_write" if before.access == allowed[(g.name, g.scope)] == "read_write" else "read"
        assert (g.scope, g.access) == (before.scope, want)
    # And nothing configured and allowed was dropped
    assert {g.name for g in got} == {x.name for x in bindings if (x.name, x.scope) in allowed}
