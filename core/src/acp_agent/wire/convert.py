"""The one cattrs converter for ACP wire types: camelCase on the wire, absent distinct from null.

A field typed `X | Unset` with default `UNSET` is omitted when unset and may be sent as `null`
when it is `None`; every other field is always written, so required protocol fields are never
dropped. Unknown keys are ignored and `_meta` objects are kept as they are, but scalar fields are
read strictly: a number is not a string, a string or `true` is not an integer, `"false"` is not a boolean (-32602, not a guess).
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any, Final, TypeVar

import attrs
import cattrs
from cattrs.cols import is_mutable_sequence, list_structure_factory
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.v import format_exception

T = TypeVar("T")

Meta = dict[str, Any]
"""An ACP `_meta` object: free-form JSON that extensions read by key."""

ECHO_LIMIT: Final = 64


class Unset:
    """Marks a field that is absent on the wire (as opposed to present and null)."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = Unset()

NOT_ON_WIRE: Final = {"wire": False}
"""attrs metadata of a neutral field a provider fills for the core, never written or read."""


def camel(name: str) -> str:
    """`session_id` → `sessionId`; `meta` → `_meta` (ACP's reserved extension field)."""
    if name == "meta":
        return "_meta"
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def clip(value: object, limit: int = ECHO_LIMIT) -> str:
    """A client-sent value as it may be echoed in an error: a short prefix, never the whole of it.

    A client chooses ids, paths and names of any length; an error quoting them stays short.
    """
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def _structure_str(value: Any, _: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {_json_type(value)}")
    return value


def _structure_int(value: Any, _: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {_json_type(value)}")
    return value


def _structure_bool(value: Any, _: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected a boolean, got {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    """The JSON type of a value, for messages that must not echo the value itself."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _is_unset_union(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return origin in (typing.Union, types.UnionType) and Unset in typing.get_args(tp)


def _without_unset(tp: Any) -> Any:
    rest = tuple(arg for arg in typing.get_args(tp) if arg is not Unset)
    return rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007 - built at run time


def _field_overrides(cls: type, converter: cattrs.Converter) -> dict[str, Any]:
    overrides = {}
    for a in attrs.fields(cls):
        if a.metadata.get("wire") is False:
            overrides[a.name] = override(omit=True)
            continue
        omit_unset = a.default is UNSET
        overrides[a.name] = override(rename=camel(a.name), omit_if_default=omit_unset)
    return overrides


def _null_means_absent(cls: type) -> frozenset[str]:
    """Wire names of optional fields whose type has no null: a client's `null` there means "absent".

    Clients serialize unset options as `null` (`"terminal": null`); answering -32602 would refuse a
    whole `initialize` for it. Fields whose type admits null keep it (absent and null differ).
    """
    hints = typing.get_type_hints(cls)
    names = []
    for a in attrs.fields(cls):
        if a.default is attrs.NOTHING:
            continue
        tp = hints.get(a.name, a.type)
        if tp is None or type(None) in typing.get_args(tp) or tp is Any:
            continue
        names.append(camel(a.name))
    return frozenset(names)


def make_converter() -> cattrs.Converter:
    """Build the converter; callers keep the one they build (no module-level instance)."""
    converter = cattrs.Converter(forbid_extra_keys=False)

    def structure_unset_union(value: Any, tp: Any) -> Any:
        return converter.structure(value, _without_unset(tp))

    converter.register_structure_hook_func(_is_unset_union, structure_unset_union)
    converter.register_structure_hook(Any, lambda value, _: value)
    converter.register_structure_hook(str, _structure_str)
    converter.register_structure_hook(int, _structure_int)
    converter.register_structure_hook(bool, _structure_bool)

    def strict_list_factory(tp: Any, conv: cattrs.Converter) -> Any:
        structure = list_structure_factory(tp, conv)

        def structure_list(value: Any, target: Any) -> Any:
            if not isinstance(value, list):
                raise TypeError(f"expected an array, got {_json_type(value)}")
            return structure(value, target)

        return structure_list

    converter.register_structure_hook_factory(is_mutable_sequence, strict_list_factory)

    def unstructure_factory(cls: type) -> Any:
        return make_dict_unstructure_fn(cls, converter, **_field_overrides(cls, converter))

    def structure_factory(cls: type) -> Any:
        structure: Any = make_dict_structure_fn(cls, converter, **_field_overrides(cls, converter))
        nullable_defaults = _null_means_absent(cls)
        if nullable_defaults:
            inner = structure

            def structure(value: Any, target: Any) -> Any:
                if isinstance(value, dict) and any(value.get(key, 0) is None for key in nullable_defaults):
                    value = {k: v for k, v in value.items() if not (v is None and k in nullable_defaults)}
                return inner(value, target)

        hook = getattr(cls, "__structure_hook__", None)
        if hook is not None:
            return functools.partial(hook, structure)
        return structure

    converter.register_unstructure_hook_factory(attrs.has, unstructure_factory)
    converter.register_structure_hook_factory(attrs.has, structure_factory)
    return converter


class FieldProblem(ValueError):
    """A value that breaks a rule of the protocol its type cannot say (non-empty, unique, one of).

    `where` is relative to the value being structured (`[0].command`, or "" for the value itself),
    so the error names the exact field wherever that value sits in the request.
    """

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where or 'value'}: {message}")
        self.where = where
        self.message = message


def describe_error(exc: BaseException) -> tuple[str, str]:
    """Turn a structuring error into (field path as spelled on the wire, message) for a -32602 answer.

    The path is the first problem's, e.g. `params.mcpServers[0].command`.
    """
    if not isinstance(exc, cattrs.BaseValidationError | FieldProblem):
        return "params", clip(str(exc) or type(exc).__name__, 200)
    leaf, path, tp = _first_problem(exc, "params", None)
    if isinstance(leaf, FieldProblem):
        return clip(path + leaf.where, 200), clip(leaf.message, 200)
    return clip(path, 200), clip(format_exception(leaf, tp), 200)


def _first_problem(exc: BaseException, path: str, tp: Any) -> tuple[BaseException, str, Any]:
    """The first leaf of a cattrs error tree, in the order `cattrs.transform_error` lists them."""
    if isinstance(exc, cattrs.IterableValidationError):
        in_list, without = exc.group_exceptions()
        for inner, item in in_list:
            return _first_problem(inner, f"{path}[{item.index!r}]", item.type)
        return (without[0], path, None) if without else (exc, path, tp)
    if isinstance(exc, cattrs.ClassValidationError):
        in_class, without = exc.group_exceptions()
        for inner, attribute in in_class:
            return _first_problem(inner, f"{path}.{camel(attribute.name)}", attribute.type)
        return (without[0], path, None) if without else (exc, path, tp)
    return exc, path, tp
