"""`dataclass` that writes a class's methods on their first call instead of when the class is made.

The stock decorator compiles `__init__`, `__repr__`, `__eq__`, `__hash__` and the frozen `__setattr__` /
`__delattr__` of every class with one `exec` each as the module is imported. A function imports some 130 row
and value classes and builds a handful of them in a request, so those compilations were about a third of
what our modules cost a cold start after boto3. Here each of those methods is a stub that compiles the real
one for its class on first call, installs it on the class (later calls never see the stub) and delegates.
Two threads may both compile: each installs an equivalent function, and either serves.

The result is a genuine dataclass: `__dataclass_fields__` holds the same `dataclasses.Field`s, and
`dataclasses.fields/replace/asdict/is_dataclass` work as with the stock decorator. Only the options this
code base uses are taken (`frozen`, `slots`, `eq`, `kw_only`); anything else fails when the class is made
(tests/unit/test_lazy_dataclass.py holds both decorators side by side).
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import sys
import types
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError
from reprlib import recursive_repr
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")

# The stock decorator's own markers and field reader (the same in 3.11 to 3.13): the fields we make must be
# indistinguishable from its ones, which `fields()`, `asdict()` and `replace()` read by these markers.
_FIELD: Any = dataclasses._FIELD  # type: ignore[attr-defined]
_FIELD_CLASSVAR: Any = dataclasses._FIELD_CLASSVAR  # type: ignore[attr-defined]
_HAS_DEFAULT_FACTORY: Any = dataclasses._HAS_DEFAULT_FACTORY  # type: ignore[attr-defined]
_get_field: Callable[[type, str, Any, bool], Field[Any]] = dataclasses._get_field  # type: ignore[attr-defined]
_Params: Any = dataclasses._DataclassParams  # type: ignore[attr-defined]
# 3.12 gave the params record four more slots; it is built by name from whichever this Python has.
_PARAM_NAMES: tuple[str, ...] = _Params.__slots__
# 3.13's `copy.replace()` support; absent before.
_REPLACE: Any = getattr(dataclasses, "_replace", None)

# A string annotation naming none of these is an ordinary field, as the stock regex lookup would find; one
# that does goes through the stock reader, which resolves the name in the class's module.
_SPECIAL_WORDS = ("ClassVar", "InitVar", "KW_ONLY")


class _Plan:
    """What a class's methods are compiled from, held by its stubs until each is first called."""

    __slots__ = ("cls", "eq_fields", "frozen", "hash_fields", "init_fields", "post_init", "repr_fields", "slots")

    def __init__(self, fields: dict[str, Field[Any]], frozen: bool, slots: bool, post_init: bool) -> None:
        real = [f for f in fields.values() if f._field_type is _FIELD]  # type: ignore[attr-defined]
        self.cls: type | None = None
        self.init_fields = real
        self.repr_fields = [f for f in real if f.repr]
        self.eq_fields = [f for f in real if f.compare]
        self.hash_fields = [f for f in real if (f.compare if f.hash is None else f.hash)]
        self.frozen = frozen
        self.slots = slots
        self.post_init = post_init

    def install(self, name: str) -> Callable[..., Any]:
        cls = self.cls
        assert cls is not None, "a dataclass method ran before its class was made"
        fn: Callable[..., Any] = _BUILDERS[name](self, cls)
        fn.__qualname__ = f"{cls.__qualname__}.{name}"
        if name == "__repr__":
            fn = recursive_repr()(fn)
        setattr(cls, name, fn)
        return fn


def _create_fn(cls: type, name: str, args: list[str], body: list[str], env: dict[str, Any], returns: str = "") -> Any:
    # As the stock decorator does: the module's globals (so `typing.get_type_hints` resolves the annotations
    # of `__init__`) and the helpers as closure variables of a wrapper, out of the module's namespace.
    module = sys.modules.get(cls.__module__)
    globs = module.__dict__ if module is not None else {}
    inner = "\n".join(f"  {line}" for line in body)
    text = f"def __create_fn__({', '.join(env)}):\n def {name}({', '.join(args)}){returns}:\n{inner}\n return {name}"
    ns: dict[str, Any] = {}
    # Not under this module's `from __future__ import annotations`: the annotations are the field types.
    exec(compile(text, "<string>", "exec", dont_inherit=True), globs, ns)
    return ns["__create_fn__"](**env)


def _build_init(plan: _Plan, cls: type) -> Any:
    fields = plan.init_fields
    self_name = "__dataclass_self__" if any(f.name == "self" for f in fields) else "self"
    env: dict[str, Any] = {
        "__dataclass_setattr__": object.__setattr__,
        "_HAS_DEFAULT_FACTORY": _HAS_DEFAULT_FACTORY,
        "__dataclass_return__": None,
    }
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in fields:
        name = f.name
        env[f"_type_{name}"] = f.type
        dflt = f"_dflt_{name}"
        value: str | None
        if f.default_factory is not MISSING:
            env[dflt] = f.default_factory
            value = f"{dflt}() if {name} is _HAS_DEFAULT_FACTORY else {name}" if f.init else f"{dflt}()"
        elif f.init:
            if f.default is not MISSING:
                env[dflt] = f.default
            value = name
        elif plan.slots and f.default is not MISSING:
            # A slotted class has no class attribute to fall back on: the default is stored.
            env[dflt] = f.default
            value = dflt
        else:
            value = None
        if value is not None:
            body.append(
                f"__dataclass_setattr__({self_name},{name!r},{value})" if plan.frozen else f"{self_name}.{name}={value}"
            )
        if f.init:
            if f.default is not MISSING:
                param = f"{name}:_type_{name}=_dflt_{name}"
            elif f.default_factory is not MISSING:
                param = f"{name}:_type_{name}=_HAS_DEFAULT_FACTORY"
            else:
                param = f"{name}:_type_{name}"
            (keyword if f.kw_only else positional).append(param)
    if plan.post_init:
        body.append(f"{self_name}.__post_init__()")
    args = [self_name, *positional, *(["*", *keyword] if keyword else [])]
    # Annotated as the stock one is (`inspect.signature` shows the field types and `-> None`).
    return _create_fn(cls, "__init__", args, body or ["pass"], env, "->__dataclass_return__")


def _build_repr(plan: _Plan, cls: type) -> Any:
    inner = ", ".join(f"{f.name}={{self.{f.name}!r}}" for f in plan.repr_fields)
    return _create_fn(cls, "__repr__", ["self"], [f'return self.__class__.__qualname__ + f"({inner})"'], {})


def _tuple(obj: str, fields: list[Field[Any]]) -> str:
    return f"({','.join(f'{obj}.{f.name}' for f in fields)},)" if fields else "()"


def _build_eq(plan: _Plan, cls: type) -> Any:
    body = [
        "if other.__class__ is self.__class__:",
        f" return {_tuple('self', plan.eq_fields)}=={_tuple('other', plan.eq_fields)}",
        "return NotImplemented",
    ]
    return _create_fn(cls, "__eq__", ["self", "other"], body, {})


def _build_hash(plan: _Plan, cls: type) -> Any:
    return _create_fn(cls, "__hash__", ["self"], [f"return hash({_tuple('self', plan.hash_fields)})"], {})


_BUILDERS: dict[str, Callable[[_Plan, type], Any]] = {
    "__init__": _build_init,
    "__repr__": _build_repr,
    "__eq__": _build_eq,
    "__hash__": _build_hash,
}


def _stubs(plan: _Plan) -> dict[str, Callable[..., Any]]:
    # Closures, not compiled text: making one costs a function object, not a compilation.
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        plan.install("__init__")(self, *args, **kwargs)

    def __repr__(self: Any) -> Any:
        return plan.install("__repr__")(self)

    def __eq__(self: Any, other: Any) -> Any:
        return plan.install("__eq__")(self, other)

    def __hash__(self: Any) -> Any:
        return plan.install("__hash__")(self)

    return {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__, "__hash__": __hash__}


def _owner(obj: object) -> type:
    # The nearest dataclass in the instance's type: the class whose frozen methods the stock decorator would
    # have written for this call.
    for klass in type(obj).__mro__:
        if "__dataclass_fields__" in klass.__dict__:
            return klass
    raise TypeError(f"{type(obj).__name__} is no dataclass")  # pragma: no cover - only dataclasses hold these


def _is_field(owner: type, name: str) -> bool:
    f = owner.__dataclass_fields__.get(name)  # type: ignore[attr-defined]
    return f is not None and f._field_type is _FIELD


def _frozen_setattr(self: object, name: str, value: Any) -> None:
    owner = _owner(self)
    if owner is type(self) or _is_field(owner, name):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    super(owner, self).__setattr__(name, value)  # type: ignore[arg-type]


def _frozen_delattr(self: object, name: str) -> None:
    owner = _owner(self)
    if owner is type(self) or _is_field(owner, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")
    super(owner, self).__delattr__(name)  # type: ignore[arg-type]


def _getstate(self: object) -> list[Any]:
    # Pickling a frozen slotted instance, as the stock decorator does it.
    return [getattr(self, f.name) for f in dataclasses.fields(self)]  # type: ignore[arg-type]


def _setstate(self: object, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=False):  # type: ignore[arg-type]
        object.__setattr__(self, f.name, value)


def _field(cls: type, name: str, annotation: Any, kw_only: bool) -> Field[Any]:
    if not isinstance(annotation, str) or any(word in annotation for word in _SPECIAL_WORDS):
        f = _get_field(cls, name, annotation, kw_only)
        if f._field_type is not _FIELD and f._field_type is not _FIELD_CLASSVAR:  # type: ignore[attr-defined]
            raise TypeError(f"{cls.__qualname__}.{name}: InitVar fields are not supported by lazy_dataclass")
        return f
    # The stock reader's work for an ordinary field, without its three regex lookups.
    default: Any = getattr(cls, name, MISSING)
    if isinstance(default, Field):
        f = default
    else:
        if isinstance(default, types.MemberDescriptorType):
            default = MISSING
        f = dataclasses.field(default=default)
    f.name = name
    f.type = annotation
    f._field_type = _FIELD  # type: ignore[attr-defined]
    if f.kw_only is MISSING:
        f.kw_only = kw_only
    if f.default.__class__.__hash__ is None:
        raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
    return f


def _is_kw_only_marker(cls: type, annotation: Any) -> bool:
    if isinstance(annotation, str):
        return "KW_ONLY" in annotation and bool(
            dataclasses._is_type(  # type: ignore[attr-defined]
                annotation,
                cls,
                dataclasses,
                dataclasses.KW_ONLY,
                dataclasses._is_kw_only,  # type: ignore[attr-defined]
            )
        )
    return annotation is dataclasses.KW_ONLY


def _signature_doc(cls: type, fields: list[Field[Any]]) -> str:
    # What the stock decorator derives from `inspect.signature(cls)`, written from the fields: the real
    # `__init__` does not exist yet.
    def param(f: Field[Any]) -> str:
        text = f"{f.name}: {inspect.formatannotation(f.type)}"
        if f.default is not MISSING:
            return f"{text} = {f.default!r}"
        if f.default_factory is not MISSING:
            return f"{text} = <factory>"
        return text

    positional = [param(f) for f in fields if f.init and not f.kw_only]
    keyword = [param(f) for f in fields if f.init and f.kw_only]
    return f"{cls.__name__}({', '.join([*positional, *(['*', *keyword] if keyword else [])])})"


def _process(cls: type, frozen: bool, slots: bool, eq: bool, kw_only: bool) -> type:
    params = {"init": True, "repr": True, "eq": eq, "order": False, "unsafe_hash": False, "frozen": frozen}
    params |= {"match_args": True, "kw_only": kw_only, "slots": slots, "weakref_slot": False}
    cls.__dataclass_params__ = _Params(**{name: params[name] for name in _PARAM_NAMES})  # type: ignore[attr-defined]

    fields: dict[str, Field[Any]] = {}
    any_frozen_base = has_dataclass_bases = False
    for base in cls.__mro__[-1:0:-1]:
        base_fields = base.__dict__.get("__dataclass_fields__")
        if base_fields is not None:
            has_dataclass_bases = True
            fields.update(base_fields)
            any_frozen_base |= base.__dataclass_params__.frozen  # type: ignore[attr-defined]

    # This class's own annotations, read as the stock decorator reads them.
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    for name, annotation in annotations.items():
        if _is_kw_only_marker(cls, annotation):
            raise TypeError(f"{cls.__qualname__}: KW_ONLY is not supported by lazy_dataclass, pass kw_only=True")
        f = _field(cls, name, annotation, kw_only)
        fields[name] = f
        # A `field(...)` class attribute becomes its default (or goes), so the class reads as a plain one.
        if isinstance(getattr(cls, name, None), Field):
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    for name, value in cls.__dict__.items():
        if isinstance(value, Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    if has_dataclass_bases and any_frozen_base != frozen:
        raise TypeError(
            "cannot inherit non-frozen dataclass from a frozen one"
            if any_frozen_base
            else "cannot inherit frozen dataclass from a non-frozen one"
        )
    cls.__dataclass_fields__ = fields  # type: ignore[attr-defined]

    class_hash = cls.__dict__.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in cls.__dict__))
    real = [f for f in fields.values() if f._field_type is _FIELD]  # type: ignore[attr-defined]
    seen_default = False
    for f in real:
        if f.init and not f.kw_only:
            if f.default is not MISSING or f.default_factory is not MISSING:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")

    plan = _Plan(fields, frozen, slots, hasattr(cls, "__post_init__"))
    stubs = _stubs(plan)
    for name in ("__init__", "__repr__", *(("__eq__",) if eq else ())):
        if name not in cls.__dict__:
            stubs[name].__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, stubs[name])
    if frozen:
        for name, fn in (("__setattr__", _frozen_setattr), ("__delattr__", _frozen_delattr)):
            if name in cls.__dict__:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
            setattr(cls, name, fn)
    if eq and not explicit_hash:
        # eq and frozen: hashed by the compared fields; eq and mutable: unhashable (the stock table's rows).
        cls.__hash__ = stubs["__hash__"] if frozen else None  # type: ignore[assignment]
        if frozen:
            stubs["__hash__"].__qualname__ = f"{cls.__qualname__}.__hash__"
    if not cls.__doc__:
        if "__init__" in stubs and cls.__dict__["__init__"] is stubs["__init__"]:
            cls.__doc__ = _signature_doc(cls, real)
        else:
            cls.__doc__ = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
    if "__match_args__" not in cls.__dict__:
        cls.__match_args__ = tuple(f.name for f in real if f.init and not f.kw_only)  # type: ignore[attr-defined, misc]
    if _REPLACE is not None and "__replace__" not in cls.__dict__:
        cls.__replace__ = _REPLACE  # type: ignore[attr-defined]
    if slots:
        cls = _add_slots(cls, [f.name for f in fields.values() if f._field_type is _FIELD], frozen)  # type: ignore[attr-defined]
    abc.update_abstractmethods(cls)
    plan.cls = cls
    return cls


def _add_slots(cls: type, field_names: list[str], frozen: bool) -> type:
    # A class cannot gain `__slots__` once made: it is made again from its namespace, as the stock one is.
    if "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__} already specifies __slots__")
    namespace = dict(cls.__dict__)
    inherited: set[str] = set()
    for base in cls.__mro__[1:-1]:
        declared = base.__dict__.get("__slots__")
        if declared is not None:
            inherited.update((declared,) if isinstance(declared, str) else declared)
    namespace["__slots__"] = tuple(name for name in field_names if name not in inherited)
    for name in field_names:
        namespace.pop(name, None)
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    qualname = cls.__qualname__
    made = type(cls)(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = qualname
    if frozen:
        if "__getstate__" not in namespace:
            made.__getstate__ = _getstate  # type: ignore[method-assign, assignment]
        if "__setstate__" not in namespace:
            made.__setstate__ = _setstate  # type: ignore[attr-defined]
    return made


@overload
def dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def dataclass(
    *, frozen: bool = False, slots: bool = False, eq: bool = True, kw_only: bool = False
) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, Field))
def dataclass(
    cls: type[_T] | None = None, /, *, frozen: bool = False, slots: bool = False, eq: bool = True, kw_only: bool = False
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """`dataclasses.dataclass` for the options used here, with its methods compiled on first call."""

    def wrap(klass: type[_T]) -> type[_T]:
        return _process(klass, frozen, slots, eq, kw_only)

    return wrap if cls is None else wrap(cls)
