"""The registry of stored item kinds agrees with itself and with the domain's typed `Ref` factories."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest
from agent_memory.core.model import Workspace
from agent_memory.core.ports import Ref
from agent_memory.store import kinds
from agent_memory.store.items import Fields

FACTORIES = {
    name: member
    for name, member in inspect.getmembers(Ref, predicate=inspect.isfunction)
    if isinstance(inspect.getattr_static(Ref, name), staticmethod)
}


def test_every_ref_factory_names_a_registered_kind_and_every_batch_read_kind_has_a_factory() -> None:
    assert set(FACTORIES) == set(kinds.BY_REF)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_refs_row_type_is_the_row_its_kind_reads_back_as(name: str) -> None:
    (row,) = typing.get_args(typing.get_type_hints(FACTORIES[name])["return"])
    kind = kinds.BY_REF[name]
    # A kind without a row dataclass (record_band's ids) says so by its Ref's type alone.
    assert kind.row in (row, None), (name, row, kind.row)
    assert kind.row is not None or typing.get_origin(row) is tuple


@pytest.mark.parametrize(
    "kind", [k for k in vars(kinds).values() if isinstance(k, kinds.Kind)], ids=lambda k: f"{k.pk} {k.sk}"
)
def test_a_key_reads_back_as_the_parts_it_was_built_from(kind: kinds.Kind[Any]) -> None:
    parts: dict[str, Any] = {f: 7 if f in ("lock_version", "number") else f"v-{f}" for f in kind.shape.fields}
    key = kind.key(**parts)
    read = kind.shape.parse(*key)
    assert read is not None
    assert kind.key(**{f: int(v) if isinstance(parts[f], int) else v for f, v in read.items()}) == key


def test_the_layout_lists_each_shape_once() -> None:
    shapes = [shape for shape, _ in kinds.layout()]
    assert len(shapes) == len(set(shapes))
    assert "ANCHOR#<anchor>  VER#<path_hash>#<lock_version>" in shapes


def test_a_ref_reads_its_row_out_of_a_batch_typed() -> None:
    ref = Ref.workspace("ws_1")
    ws = Workspace("ws_1", "acc_1", "room", "2026-01-01T00:00:00.000Z")
    got: Workspace | None = ref.row({ref: ws, Ref.agent("ag_1"): None})
    assert got is ws
    assert ref.row({}) is None


@pytest.mark.parametrize("kind", [k for k in kinds._kinds() if isinstance(k.codec, Fields)], ids=lambda k: k.pk)
def test_every_field_codec_compiles(kind: kinds.Kind[Any]) -> None:
    # Given a kind whose codec is compiled on first use (not at import, for the cold start)
    # When it is compiled
    kind._bind()
    # Then its row's fields and the codec's overrides agree (bind asserts it), and both mappers are real
    assert kind._encode is not None and kind._decode is not None
    assert kind._encode.__name__ == "encode" and kind._decode.__name__ == "decode"
