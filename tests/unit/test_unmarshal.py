"""The store's fast attribute decoding must read back exactly what the general deserializer reads."""

from __future__ import annotations

from typing import Any

from agent_memory.store.dynamo import _plain, marshal, unmarshal
from boto3.dynamodb.types import TypeDeserializer
from hypothesis import given, settings
from hypothesis import strategies as st

_general = TypeDeserializer()

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
raw_numbers = st.sampled_from(["0", "-0", "7", "-12", "007", "1.5", "-2.50", "1E+3", "1e-2", "123456789012345678"])


@settings(max_examples=300, deadline=None)
@given(item=st.dictionaries(st.text(min_size=1, max_size=8), values, max_size=6))
def test_items_read_back_as_the_general_deserializer_reads_them(item: dict[str, Any]) -> None:
    # Given any item as the store writes it
    wire = marshal(item)
    # Then the fast decoding agrees with TypeDeserializer, value for value and type for type
    expected = {k: _plain(_general.deserialize(v)) for k, v in wire.items()}
    got = unmarshal(wire)
    assert got == expected
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in expected.items()}


@given(n=raw_numbers)
def test_number_spellings_dynamodb_can_return_decode_alike(n: str) -> None:
    # Given a number attribute spelled as DynamoDB may spell it
    got = unmarshal({"x": {"N": n}})["x"]
    # Then it is the same value and type as the general path gives
    expected = _plain(_general.deserialize({"N": n}))
    assert got == expected and type(got) is type(expected)
