"""`frozen`: attrs' frozen classes whose equality, hash and repr are shared, not generated.

attrs writes the source of every method it adds to a class and compiles it when the class is
defined. For the frozen classes of the core (wire types, transcript entries, failures, provider
records) `__eq__`, `__hash__` and `__repr__` are most of that work, and it is paid on every start
before `initialize` or the first `session/new` can be answered (bench/README.md has the figure).
This `frozen` lets attrs generate only `__init__` and gives the class one shared implementation
of the other three, which read the class's attrs fields when called. Same semantics as
`attrs.frozen`: equal when the class and every field compared by attrs (`eq=True`) are equal,
hashed by those fields, and a repr that leaves out fields declared with `repr=False` (where
secrets are kept) and applies a field's custom repr. A method the class defines itself is kept.
Type checkers see `attrs.frozen` itself, so the attrs plugin of mypy checks these classes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

__all__ = ["frozen"]

C = TypeVar("C", bound=type)


def _compared(cls: type) -> tuple[str, ...]:
    """The names of the fields that equality and hash read (worked out once per class)."""
    names: tuple[str, ...] | None = cls.__dict__.get("__records_eq__")
    if names is None:
        names = tuple(field.name for field in attrs.fields(cls) if field.eq)
        type.__setattr__(cls, "__records_eq__", names)
    return names


def _eq(self: Any, other: Any) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented  # type: ignore[no-any-return]
    return all(getattr(self, name) == getattr(other, name) for name in _compared(self.__class__))


def _hash(self: Any) -> int:
    return hash((self.__class__, *(getattr(self, name) for name in _compared(self.__class__))))


def _repr(self: Any) -> str:
    parts = []
    for field in attrs.fields(self.__class__):
        if field.repr is False:
            continue
        value = getattr(self, field.name)
        shown = field.repr(value) if callable(field.repr) else repr(value)
        parts.append(f"{field.name}={shown}")
    name = self.__class__.__qualname__.rsplit(">.", 1)[-1]  # as attrs names a class defined in a function
    return f"{name}({', '.join(parts)})"


_SHARED = {"__eq__": _eq, "__hash__": _hash, "__repr__": _repr}  # `!=` is `__eq__` inverted


def _frozen(maybe_cls: C | None = None, **options: Any) -> C | Callable[[C], C]:
    def wrap(cls: C) -> C:
        for name, method in _SHARED.items():
            if name not in cls.__dict__:
                setattr(cls, name, method)
        made: C = attrs.frozen(cls, eq=False, repr=False, **options)
        return made

    return wrap if maybe_cls is None else wrap(maybe_cls)


if TYPE_CHECKING:
    from attrs import frozen
else:
    frozen = _frozen
