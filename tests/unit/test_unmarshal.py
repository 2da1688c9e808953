"""The store's one marshalling path must write and read exactly what boto3's general (de)serializer does."""

from __future__ import annotations

from typing import Any

import pytest
from agent_memory.store.items import attribute, marshal, plain, unmarshal
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from hypothesis import given, settings
from hypothesis import strategies as st

_ser = TypeSerializer()
_deser = TypeDeserializer()

scalars = st.one_of(
    st.text(max_size=20),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-(10**6), max_value=10**6),
    st.booleans(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)
items = st.dictionaries(st.text(min_size=1, max_size=8), st.one_of(values, st.none()), max_size=6)
raw_numbers = st.sampled_from(["0", "-0", "7", "-12", "007", "1.5", "-2.50", "1E+3", "1e-2", "123456789012345678"])


@settings(max_examples=300, deadline=None)
@given(item=items)
def test_items_are_written_as_the_general_serializer_writes_them(item: dict[str, Any]) -> None:
    # Given any item as the store writes it, then every attribute is spelled as TypeSerializer spells it,
    # and None attributes are left out
    assert marshal(item) == {k: _ser.serialize(v) for k, v in item.items() if v is not None}
    assert all(attribute(v) == _ser.serialize(v) for v in item.values())


@settings(max_examples=300, deadline=None)
@given(item=items)
def test_items_read_back_as_written_and_as_the_general_deserializer_reads_them(item: dict[str, Any]) -> None:
    wire = marshal(item)
    got = unmarshal(wire)
    # Then the decoding agrees with TypeDeserializer, value for value and type for type
    expected = {k: plain(_deser.deserialize(v)) for k, v in wire.items()}
    assert got == expected
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in expected.items()}
    # And it is the item written, numbers made plain, nested maps and lists included
    assert got == {k: plain(v) for k, v in item.items() if v is not None}


@given(n=raw_numbers)
def test_number_spellings_dynamodb_can_return_decode_alike(n: str) -> None:
    # Given a number attribute spelled as DynamoDB may spell it
    got = unmarshal({"x": {"N": n}})["x"]
    # Then it is the same value and type as the general path gives
    expected = plain(_deser.deserialize({"N": n}))
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("value", [10**38, -(10**40), 1.5])
def test_a_number_dynamodb_cannot_hold_exactly_is_refused_as_the_serializer_refuses_it(value: Any) -> None:
    # Past 38 significant digits, and floats (which boto3 will not guess a precision for), are refused
    with pytest.raises(Exception) as general:
        _ser.serialize(value)
    with pytest.raises(type(general.value)):
        marshal({"x": value})


def test_booleans_stay_booleans_and_whole_numbers_stay_ints() -> None:
    wire = marshal({"t": True, "f": False, "one": 1, "zero": 0, "nested": {"b": True, "n": [1, 2]}})
    assert wire["t"] == {"BOOL": True} and wire["one"] == {"N": "1"}
    back = unmarshal(wire)
    assert back == {"t": True, "f": False, "one": 1, "zero": 0, "nested": {"b": True, "n": [1, 2]}}
    assert type(back["one"]) is int and type(back["t"]) is bool and type(back["nested"]["n"][0]) is int
