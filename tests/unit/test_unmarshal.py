"""The store's one marshalling path must write and read exactly what boto3's general (de)serializer does.

The store spells DynamoDB's wire format itself (store/items.py) so a route never imports boto3; boto3's
TypeSerializer and TypeDeserializer are the reference it is held to here."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from agent_memory.store.items import attribute, marshal, plain, unmarshal, value_of
from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
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
# What may sit inside a map or a list besides: nulls, bytes, tuples and the three kinds of set.
nested = st.one_of(
    scalars,
    st.none(),
    st.binary(max_size=8),
    st.frozensets(st.text(max_size=5), min_size=1, max_size=3),
    st.sets(st.integers(min_value=-(10**20), max_value=10**20), min_size=1, max_size=3),
    st.sets(st.binary(min_size=1, max_size=4), min_size=1, max_size=3),
)
values = st.recursive(
    nested,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=5), inner, max_size=3),
    ),
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
    assert _types(got) == _types(expected)  # binary reads as bytes where boto3 wraps it in its Binary
    # And it is the item written, numbers made plain, nested maps and lists included (tuples read as lists)
    assert got == {k: plain(_lists(v)) for k, v in item.items() if v is not None}


def _lists(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value


def _types(value: Any) -> Any:
    """A value's shape by type, through maps, lists and sets (boto3's Binary and bytes alike)."""
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted({_types(v) for v in value})
    return "bytes" if isinstance(value, (bytes, Binary)) else type(value).__name__


@settings(max_examples=300, deadline=None)
@given(value=values)
def test_one_value_reads_back_as_the_general_deserializer_reads_it_down_to_its_types(value: Any) -> None:
    wire = _ser.serialize(value)
    # Given any value as boto3 writes it, Then the store reads the same value with the same types inside
    expected = plain(_deser.deserialize(wire))
    got = value_of(dict(wire))
    assert got == expected
    assert _types(got) == _types(expected)


@pytest.mark.parametrize(
    "value",
    [
        {"ids": {"a", "b"}},
        {"n": {1, -2, 10**20}},
        {"mixed": {1, "a"}},
        {"f": [1.5]},
        {"deep": {"x": [10**40]}},
        {"nan": Decimal("NaN")},
        {"inf": Decimal("Infinity")},
        {"tiny": Decimal("1E-200")},
        {"obj": object()},
        {"empty_set": set()},
        {"dec": Decimal("3.14159"), "neg": Decimal("-0.0"), "e": Decimal("1E+5")},
        {"b": b"raw", "ba": bytearray(b"x")},
    ],
)
def test_the_rarer_values_are_spelled_or_refused_as_the_serializer_does(value: dict[str, Any]) -> None:
    # Given a value of a rarer kind (or one DynamoDB cannot hold),
    try:
        expected: Any = {k: _ser.serialize(v) for k, v in value.items()}
    except Exception as exc:  # Then it is refused with the same error,
        with pytest.raises(type(exc)):
            marshal(value)
        return
    # or spelled the same (sets compared as sets: their order is the set's own).
    got = marshal(value)
    assert _canonical(got) == _canonical(expected)


def _canonical(wire: Any) -> Any:
    if isinstance(wire, dict):
        return {k: sorted(v) if k in ("SS", "NS", "BS") else _canonical(v) for k, v in wire.items()}
    if isinstance(wire, list):
        return [_canonical(v) for v in wire]
    return wire


@pytest.mark.parametrize("wire", [{}, {"X": "1"}])
def test_a_value_of_no_known_type_is_refused_as_the_deserializer_refuses_it(wire: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        _deser.deserialize(wire)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        value_of(wire)


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
