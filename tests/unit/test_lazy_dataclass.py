"""The lazy dataclass decorator behaves as `dataclasses.dataclass` does, class for class, side by side.

Each shape below is written once and made twice, by the stock decorator and by ours; every check asks both the
same thing and compares the answers, so nothing here restates what the stock decorator does.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import sys
import threading
from collections.abc import Callable
from dataclasses import FrozenInstanceError, field
from typing import Any, ClassVar, Generic, TypeVar

import pytest
from agent_memory.core import lazy_dataclass

R = TypeVar("R")
Maker = Callable[[Any], tuple[type[Any], ...]]


def frozen_row(dc: Any) -> tuple[type[Any], ...]:
    @dc(frozen=True, slots=True)
    class Row:
        """A stored row."""

        workspace_id: str
        path: str
        version: int = 1
        tags: tuple[str, ...] = field(default_factory=tuple)
        note: str = field(default="", repr=False, compare=False)
        size: int | None = None
        LIMIT: ClassVar[int] = 7

    return (Row,)


def mutable_row(dc: Any) -> tuple[type[Any], ...]:
    @dc(slots=True)
    class Batch:
        name: str
        items: list[int] = field(default_factory=list)
        seen: dict[str, int] = field(default_factory=dict)

    return (Batch,)


def keyword_row(dc: Any) -> tuple[type[Any], ...]:
    @dc(frozen=True, slots=True, kw_only=True)
    class Route:
        """A route's facts, named at every call."""

        verb: str
        path: str
        auth: bool = True
        scopes: tuple[str, ...] = ()

    return (Route,)


def generic_kind(dc: Any) -> tuple[type[Any], ...]:
    @dc(frozen=True, eq=False)
    class Kind(Generic[R]):
        """A registry entry compared by identity, with fields set after construction."""

        name: str
        row: type[Any] | None = None
        wire: bool = False
        shape: str = field(init=False)
        cache: dict[str, int] = field(init=False, default_factory=dict)

        def __post_init__(self) -> None:
            object.__setattr__(self, "shape", f"{self.name}#{self.wire}")

    return (Kind,)


def checked_settings(dc: Any) -> tuple[type[Any], ...]:
    @dc(frozen=True)
    class Settings:
        """Settings that refuse a bad value when made."""

        table: str
        limit: int = 10

        def __post_init__(self) -> None:
            if self.limit <= 0:
                raise ValueError(f"limit must be positive, not {self.limit}")

    return (Settings,)


def inherited_rows(dc: Any) -> tuple[type[Any], ...]:
    @dc(frozen=True, slots=True)
    class Base:
        """A base row."""

        id: str
        kind: str = "base"

        def label(self) -> str:
            return f"{self.kind}:{self.id}"

    @dc(frozen=True, slots=True)
    class Child(Base):
        """A row that adds fields and overrides a default."""

        kind: str = "child"
        extra: int = 0

    @dc(frozen=True)
    class Loose(Base):
        """A row with a dict beside the base's slots."""

        more: tuple[int, ...] = ()

    return Base, Child, Loose


def own_methods(dc: Any) -> tuple[type[Any], ...]:
    @dc(frozen=True, slots=True)
    class Error:
        """An error with its own repr and equality, which the decorator must keep."""

        code: str
        status: int = 400

        def __repr__(self) -> str:
            return f"<{self.code} {self.status}>"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Error) and other.code == self.code

        def __hash__(self) -> int:
            return hash(self.code)

    @dc(slots=True)
    class Counter:
        count: int = 0

    return Error, Counter


SHAPES: dict[str, Maker] = {
    "frozen_row": frozen_row,
    "mutable_row": mutable_row,
    "keyword_row": keyword_row,
    "generic_kind": generic_kind,
    "checked_settings": checked_settings,
    "inherited_rows": inherited_rows,
    "own_methods": own_methods,
}

# Arguments each class is made with: the calls that succeed and the ones that must fail, the same way.
CALLS: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "Row": [
        (("ws", "a.md"), {}),
        (("ws", "a.md", 3, ("x",)), {"note": "n", "size": 9}),
        (("ws",), {}),
        (("ws", "a.md", 1, (), "", None, "extra"), {}),
        (("ws",), {"path": "p", "nope": 1}),
    ],
    "Batch": [(("b",), {}), (("b", [1, 2]), {"seen": {"a": 1}}), ((), {})],
    "Route": [
        ((), {"verb": "GET", "path": "/x"}),
        (("GET", "/x"), {}),
        ((), {"verb": "GET", "path": "/", "auth": False}),
    ],
    "Kind": [(("doc",), {}), (("doc", int, True), {}), (("doc",), {"shape": "s"})],
    "Settings": [(("t",), {}), (("t", 5), {}), (("t", 0), {}), (("t",), {"limit": -1})],
    "Base": [(("1",), {}), (("1", "k"), {})],
    "Child": [(("1",), {}), (("1", "k", 4), {}), (("1",), {"extra": 2})],
    "Loose": [(("1",), {}), (("1", "k", (1,)), {})],
    "Error": [(("E",), {}), (("E", 404), {})],
    "Counter": [((), {}), ((3,), {})],
}


def both(maker: Maker) -> list[tuple[type[Any], type[Any]]]:
    return list(zip(maker(dataclasses.dataclass), maker(lazy_dataclass.dataclass), strict=True))


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    """What a call gives, as text comparable across the two decorators: its value or its error."""
    try:
        return ("ok", fn())
    except Exception as err:
        return ("error", f"{type(err).__name__}: {err}")


def made(cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Any]:
    return outcome(lambda: repr(cls(*copy.deepcopy(args), **copy.deepcopy(kwargs))))


def pairs() -> list[tuple[str, type[Any], type[Any]]]:
    return [(name, stock, lazy) for name, maker in SHAPES.items() for stock, lazy in both(maker)]


PAIRS = pairs()
IDS = [f"{shape}-{stock.__name__}" for shape, stock, _ in PAIRS]


def field_facts(cls: Any) -> list[tuple[Any, ...]]:
    return [
        (f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.compare, f.hash, f.kw_only, f._field_type)
        for f in cls.__dataclass_fields__.values()
    ]


def class_attribute(cls: type[Any], name: str) -> tuple[str, Any]:
    return outcome(lambda: repr(getattr(cls, name)))


@pytest.mark.parametrize(("shape", "stock", "lazy"), PAIRS, ids=IDS)
def test_the_class_reads_as_the_stock_one_does(shape: str, stock: Any, lazy: Any) -> None:
    assert all(map(dataclasses.is_dataclass, (lazy, stock)))
    assert field_facts(lazy) == field_facts(stock)
    assert repr(lazy.__dataclass_params__) == repr(stock.__dataclass_params__)
    assert lazy.__match_args__ == stock.__match_args__
    assert lazy.__doc__ == stock.__doc__
    assert lazy.__qualname__ == stock.__qualname__
    assert getattr(lazy, "__slots__", None) == getattr(stock, "__slots__", None)
    assert (lazy.__hash__ is None) == (stock.__hash__ is None)
    # Defaults stay class attributes only where the class has a dict to fall back on.
    for name in lazy.__dataclass_fields__:
        assert class_attribute(lazy, name) == class_attribute(stock, name)
    assert sorted(vars(lazy)) == sorted(vars(stock))


@pytest.mark.parametrize(("shape", "stock", "lazy"), PAIRS, ids=IDS)
def test_construction_answers_as_the_stock_one_does(shape: str, stock: type[Any], lazy: type[Any]) -> None:
    for args, kwargs in CALLS[stock.__name__]:
        assert made(lazy, args, kwargs) == made(stock, args, kwargs), (args, kwargs)
    assert str(inspect.signature(lazy)) == str(inspect.signature(stock))
    assert lazy.__init__.__qualname__ == stock.__init__.__qualname__


@pytest.mark.parametrize(("shape", "stock", "lazy"), PAIRS, ids=IDS)
def test_instances_compare_hash_copy_and_convert_as_the_stock_ones_do(
    shape: str, stock: type[Any], lazy: type[Any]
) -> None:
    for args, kwargs in CALLS[stock.__name__]:
        if made(stock, args, kwargs)[0] != "ok":
            continue

        def views(cls: type[Any], a: tuple[Any, ...] = args, k: dict[str, Any] = kwargs) -> dict[str, Any]:
            one, two = cls(*copy.deepcopy(a), **copy.deepcopy(k)), cls(*copy.deepcopy(a), **copy.deepcopy(k))
            first = next(iter(cls.__dataclass_fields__))
            # The stock frozen `__setattr__` of a slotted class names the class as it was before slots were
            # added, so assigning a non-field fails with a TypeError from `super()`: ours fails with
            # FrozenInstanceError. Both refuse; only the error differs.
            frozen_slotted = cls.__dataclass_params__.frozen and "__slots__" in vars(cls)
            return {
                "eq": outcome(lambda: one == two),
                "ne": outcome(lambda: one != two),
                "eq_other_class": outcome(lambda: one.__eq__(object())),
                "eq_copy": outcome(lambda: one == copy.copy(one)),
                "hash_equal": outcome(lambda: hash(one) == hash(two)),
                "fields": outcome(lambda: [f.name for f in dataclasses.fields(one)]),
                "asdict": outcome(lambda: dataclasses.asdict(one)),
                "astuple": outcome(lambda: dataclasses.astuple(one)),
                "replace": outcome(lambda: repr(dataclasses.replace(one))),
                "replace_first": outcome(lambda: repr(dataclasses.replace(one, **{first: getattr(one, first)}))),
                "copy": outcome(lambda: repr(copy.copy(one))),
                "deepcopy": outcome(lambda: repr(copy.deepcopy(one))),
                "set": outcome(lambda: setattr(one, first, getattr(one, first))),
                "set_other": outcome(lambda: setattr(one, "not_a_field", 1))[: 1 if frozen_slotted else 2],
                "delete": outcome(lambda: delattr(two, first)),
                "has_dict": hasattr(one, "__dict__"),
                "match_args": [getattr(one, n) for n in cls.__match_args__],
            }

        assert views(lazy) == views(stock), (args, kwargs)


def test_instances_of_different_classes_with_the_same_fields_are_not_equal() -> None:
    (stock,), (lazy,) = mutable_row(dataclasses.dataclass), mutable_row(lazy_dataclass.dataclass)
    assert (lazy("b") == stock("b")) is False
    assert lazy("b") == lazy("b")
    with pytest.raises(TypeError, match="unhashable"):
        hash(lazy("b"))


def test_default_factories_give_each_instance_its_own_value() -> None:
    (lazy,) = mutable_row(lazy_dataclass.dataclass)
    one, two = lazy("a"), lazy("b")
    one.items.append(1)
    assert two.items == []


def test_frozen_errors_carry_the_stock_type_and_text() -> None:
    (stock,), (lazy,) = frozen_row(dataclasses.dataclass), frozen_row(lazy_dataclass.dataclass)
    for cls in (stock, lazy):
        with pytest.raises(FrozenInstanceError, match="cannot assign to field 'path'"):
            cls("ws", "p").path = "q"
        with pytest.raises(FrozenInstanceError, match="cannot delete field 'version'"):
            del cls("ws", "p").version


def _module_level(name: str, dc: Any) -> type[Any]:
    # Pickle finds a class by its module and qualified name: these two live at this module's top level.
    (cls,) = frozen_row(dc)
    cls.__qualname__ = cls.__name__ = name
    cls.__module__ = __name__
    setattr(sys.modules[__name__], name, cls)
    return cls


def test_a_frozen_slotted_instance_pickles_round_trip_with_the_stock_state() -> None:
    stock = _module_level("StockPickled", dataclasses.dataclass)
    lazy = _module_level("LazyPickled", lazy_dataclass.dataclass)
    args = ("ws", "a.md", 4, ("t",), "note", 12)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(lazy(*args), protocol))
        assert type(back) is lazy and back == lazy(*args) and back.note == "note"
    assert lazy(*args).__getstate__() == stock(*args).__getstate__()


def test_slotted_instances_have_no_dict_and_refuse_unknown_attributes() -> None:
    (lazy,) = mutable_row(lazy_dataclass.dataclass)
    batch = lazy("b")
    assert not hasattr(batch, "__dict__")
    with pytest.raises(AttributeError):
        batch.other = 1


def test_inheritance_keeps_the_base_fields_first_and_the_subclass_defaults() -> None:
    pairs_ = both(inherited_rows)
    for stock, lazy in pairs_:
        assert [f.name for f in dataclasses.fields(lazy)] == [f.name for f in dataclasses.fields(stock)]
    (_, base), (_, child), _ = pairs_
    assert child("1").label() == "child:1" and base("1").label() == "base:1"
    assert base("1") != child("1")


def test_a_non_dataclass_subclass_of_a_frozen_one_may_set_its_own_attributes() -> None:
    for dc in (dataclasses.dataclass, lazy_dataclass.dataclass):
        (settings,) = checked_settings(dc)

        class Extended(settings):  # type: ignore[valid-type, misc]
            pass

        extended = Extended("t")
        extended.note = "kept"
        assert extended.note == "kept"
        with pytest.raises(FrozenInstanceError):
            extended.table = "other"


# Class creation compiles nothing: each method is written by its first call, once.
_EXECS: list[int] = [0]
_COUNTING: list[bool] = [False]


def _count_exec(event: str, _args: Any) -> None:
    if event == "exec" and _COUNTING[0]:
        _EXECS[0] += 1


sys.addaudithook(_count_exec)


def test_making_a_class_compiles_nothing_and_each_method_compiles_once_on_first_call() -> None:
    _COUNTING[0] = True
    try:
        _EXECS[0] = 0
        (row,) = frozen_row(lazy_dataclass.dataclass)
        assert _EXECS[0] == 0
        one = row("ws", "a.md")
        two = row("ws", "a.md")
        assert _EXECS[0] == 1
        assert one == two and hash(one) == hash(two) and repr(one) == repr(two)
        assert _EXECS[0] == 4
        row("ws", "b.md") == one  # noqa: B015 - the comparison runs the installed method
        assert _EXECS[0] == 4
        _EXECS[0] = 0
        frozen_row(dataclasses.dataclass)
        assert _EXECS[0] >= 1  # the stock decorator compiles as the class is made (3.13: all in one exec)
    finally:
        _COUNTING[0] = False


def test_threads_racing_a_first_call_all_get_the_stock_answer() -> None:
    (stock,) = frozen_row(dataclasses.dataclass)
    expected = [repr(stock("ws", f"{i}.md", i)) for i in range(16)]
    for _ in range(5):
        (lazy,) = frozen_row(lazy_dataclass.dataclass)
        start = threading.Barrier(16)
        got: list[str] = [""] * 16

        def run(i: int, cls: type[Any] = lazy, barrier: threading.Barrier = start, got: list[str] = got) -> None:
            barrier.wait()
            row = cls("ws", f"{i}.md", i)
            got[i] = repr(row) if row == cls("ws", f"{i}.md", i) and hash(row) == hash(copy.copy(row)) else "?"

        threads = [threading.Thread(target=run, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got == expected


def _refusal(dc: Any, make: Callable[[Any], Any]) -> tuple[str, Any]:
    return outcome(lambda: make(dc))


def _bad_order(dc: Any) -> Any:
    @dc(frozen=True, slots=True)
    class Bad:
        a: int = 0
        b: int

    return Bad


def _mutable_default(dc: Any) -> Any:
    @dc(slots=True)
    class Bad:
        a: list[int] = []

    return Bad


def _frozen_from_mutable(dc: Any) -> Any:
    @dc(slots=True)
    class Base:
        a: int = 0

    @dc(frozen=True, slots=True)
    class Bad(Base):
        b: int = 0

    return Bad


def _unannotated_field(dc: Any) -> Any:
    @dc(frozen=True)
    class Bad:
        a: int = 0
        b = field(default=1)

    return Bad


def _slots_given(dc: Any) -> Any:
    @dc(slots=True)
    class Bad:
        __slots__ = ("a",)
        a: int

    return Bad


@pytest.mark.parametrize("make", [_bad_order, _mutable_default, _frozen_from_mutable, _unannotated_field, _slots_given])
def test_a_mistake_in_a_class_fails_as_with_the_stock_decorator(make: Callable[[Any], Any]) -> None:
    stock = _refusal(dataclasses.dataclass, make)
    lazy = _refusal(lazy_dataclass.dataclass, make)
    assert stock[0] == lazy[0] == "error"
    # 3.13's message for a default out of order also names the field before it.
    assert stock[1].startswith(lazy[1]), (lazy, stock)


def test_options_the_code_base_does_not_use_are_refused_when_the_class_is_made() -> None:
    dc: Any = lazy_dataclass.dataclass
    for option in ({"order": True}, {"unsafe_hash": True}, {"init": False}, {"weakref_slot": True}):
        with pytest.raises(TypeError):

            @dc(**option)
            class A:
                a: int

    with pytest.raises(TypeError, match="InitVar"):

        @dc(frozen=True)
        class B:
            a: dataclasses.InitVar[int]

    with pytest.raises(TypeError, match="KW_ONLY"):

        @dc(frozen=True)
        class C:
            a: int
            _: dataclasses.KW_ONLY
            b: int


def test_the_layer_makes_its_dataclasses_with_the_lazy_decorator() -> None:
    # Given every module of the layer but the route contract (api/, which imports nothing of the service),
    import ast
    from pathlib import Path

    root = Path(lazy_dataclass.__file__).resolve().parents[1]
    stock: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("api/") or rel == "core/lazy_dataclass.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # Then none imports the stock decorator, or calls it through the module,
            if isinstance(node, ast.ImportFrom) and node.module == "dataclasses":
                stock += [f"{rel}:{node.lineno}" for a in node.names if a.name == "dataclass"]
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "dataclass"
                and isinstance(node.value, ast.Name)
                and node.value.id == "dataclasses"
            ):
                stock.append(f"{rel}:{node.lineno}")
    # so every class a cold start defines compiles its methods only when they are first called.
    assert stock == [], f"use agent_memory.core.lazy_dataclass.dataclass instead: {stock}"
