"""`acp_agent.wire.records.frozen` keeps `attrs.frozen`'s semantics while sharing eq, hash and repr."""

from __future__ import annotations

import attrs
import pytest
from attrs import field

from acp_agent.wire import acp
from acp_agent.wire.records import frozen


@frozen
class Point:
    x: int
    y: int = 0
    secret: str = field(default="", repr=False)
    note: str = field(default="", eq=False, repr=lambda value: f"<{len(value)} chars>")


@frozen
class Point3(Point):
    z: int = 0


@frozen
class Shouting:
    word: str

    def __repr__(self) -> str:
        return self.word.upper()


@attrs.frozen
class Reference:
    x: int
    y: int = 0


def test_equality_and_hash_follow_the_compared_fields() -> None:
    assert Point(1, 2) == Point(1, 2)
    assert Point(1, 2) != Point(1, 3)
    assert Point(1, 2).__ne__(Point(1, 2)) is False
    assert Point(1, 2, note="a") == Point(1, 2, note="b")  # eq=False field
    assert hash(Point(1, 2, note="a")) == hash(Point(1, 2, note="b"))
    assert len({Point(1, 2), Point(1, 2), Point(2, 1)}) == 2


def test_instances_of_other_classes_are_never_equal() -> None:
    assert Point(1, 2) != Point3(1, 2)
    assert Point(1, 2) != (1, 2)
    assert Point(1, 2) != Reference(1, 2)
    assert Point(1, 2).__eq__(Reference(1, 2)) is NotImplemented


def test_repr_hides_repr_false_fields_and_applies_custom_reprs() -> None:
    assert repr(Point(1, 2, secret="sk-123", note="abc")) == "Point(x=1, y=2, note=<3 chars>)"
    assert repr(Point3(1, 2, z=3)) == "Point3(x=1, y=2, note=<0 chars>, z=3)"


def test_a_method_the_class_defines_is_kept() -> None:
    assert repr(Shouting("hey")) == "HEY"


def test_the_classes_stay_frozen_and_slotted() -> None:
    point = Point(1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    assert not hasattr(point, "__dict__")
    assert attrs.evolve(point, x=5) == Point(5)


@pytest.mark.parametrize("make", [
    lambda: acp.TextContent("hi"),
    lambda: acp.AgentMessageChunk(acp.TextContent("hi")),
    lambda: acp.ToolCall("call-1", "Read file"),
])
def test_wire_types_behave_as_attrs_frozen_classes(make: object) -> None:
    one, two = make(), make()  # type: ignore[operator]
    assert one == two and hash(one) == hash(two) and one is not two
    assert repr(one) == repr(two) and repr(one).startswith(type(one).__qualname__ + "(")
    assert one != attrs.evolve(one, meta={"changed": True})


def test_a_class_defined_in_a_function_is_named_as_attrs_names_it() -> None:
    @frozen
    class Local:
        x: int

    @attrs.frozen
    class AttrsLocal:
        x: int

    assert repr(Local(1)) == "Local(x=1)" and repr(AttrsLocal(1)) == "AttrsLocal(x=1)"
